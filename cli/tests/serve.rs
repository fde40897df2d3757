//! The real `pangolin serve` binary: starts on the embedded default with nothing configured,
//! serves, stops gracefully on SIGTERM, and keeps its data across restarts.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::{free_port, http, http_as, start, terminate};

#[test]
fn serves_on_the_embedded_default_and_keeps_data_across_restarts() {
    let data_dir = std::env::temp_dir().join(format!("pangolin-serve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    let port = free_port();
    let server = start(&data_dir, port);
    assert_eq!(http(port, "GET", "/health", None).0, 200);
    assert_eq!(http(port, "GET", "/ready", None).0, 200);
    let (status, body) = http(port, "GET", "/v1/config", None);
    assert_eq!(status, 200);
    assert!(body.contains(r#""prefix":"default""#), "{body}");
    let (status, body) = http(
        port,
        "POST",
        "/v1/default/namespaces",
        Some(r#"{"namespace":["sales"]}"#),
    );
    assert_eq!(status, 200, "{body}");
    terminate(server);

    assert!(
        data_dir.join("pangolin.db").exists(),
        "one SQLite file under the data directory"
    );
    let server = start(&data_dir, port);
    let (status, body) = http(port, "GET", "/v1/default/namespaces", None);
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"namespaces":[["sales"]]}"#)
    );
    terminate(server);
    let _ = std::fs::remove_dir_all(&data_dir);
}

#[test]
fn refuses_to_listen_beyond_loopback_without_authentication() {
    let output = Command::new(env!("CARGO_BIN_EXE_pangolin"))
        .args(["serve", "--no-auth", "--listen", "0.0.0.0:0", "--data-dir"])
        .arg(std::env::temp_dir().join("pangolin-never-created"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("only listens on loopback"), "{stderr}");
}

/// Reads a child's output to its end in the background (so it never blocks on a full pipe).
fn collect(
    mut from: impl std::io::Read + Send + 'static,
) -> std::sync::Arc<std::sync::Mutex<String>> {
    let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = text.clone();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(n) = from.read(&mut buffer) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    });
    text
}

fn start_with_auth(
    data_dir: &std::path::Path,
    port: u16,
) -> (
    common::Server,
    std::sync::Arc<std::sync::Mutex<String>>,
    std::sync::Arc<std::sync::Mutex<String>>,
) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pangolin"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(data_dir)
        .env_remove("PANGOLIN_CONFIG")
        .env_remove("PANGOLIN_ROOT_PASSWORD")
        .env("RUST_LOG", "debug,sqlx=warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let logs = collect(child.stdout.take().unwrap());
    let stderr = collect(child.stderr.take().unwrap());
    let server = common::Server(Some(child));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not start: {}",
            stderr.lock().unwrap()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (server, logs, stderr)
}

#[test]
fn signs_callers_in_and_shows_roots_generated_password_once() {
    let data_dir = std::env::temp_dir().join(format!("pangolin-serve-auth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    let port = free_port();
    let (server, logs, stderr) = start_with_auth(&data_dir, port);
    assert_eq!(http(port, "GET", "/health", None).0, 200);
    let (status, body) = http(port, "GET", "/v1/config", None);
    assert_eq!(status, 401, "{body}");
    let printed = stderr.lock().unwrap().clone();
    let password = printed
        .split_whitespace()
        .find(|w| w.len() == 32 && w.chars().all(|c| c.is_ascii_hexdigit()))
        .unwrap_or_else(|| panic!("no generated password in: {printed}"))
        .to_owned();
    let login = format!(r#"{{"username":"root","password":"{password}"}}"#);
    let (status, body) = http(port, "POST", "/api/v1/login", Some(&login));
    assert_eq!(status, 200, "{body}");
    let token = body
        .split('"')
        .skip_while(|s| *s != "access_token")
        .nth(2)
        .unwrap()
        .to_owned();
    let (status, body) = http_as(port, Some(&token), "GET", "/v1/config", None);
    assert_eq!(status, 200, "{body}");
    let (status, _) = http_as(
        port,
        Some(&token),
        "POST",
        "/v1/default/namespaces",
        Some(r#"{"namespace":["sales"]}"#),
    );
    assert_eq!(status, 200);
    terminate(server);
    let logged = logs.lock().unwrap().clone();
    assert!(logged.contains("pangolin is serving"), "{logged}");
    for secret in [&password, &token] {
        assert!(
            !logged.contains(secret.as_str()),
            "a secret reached the log"
        );
    }

    // The password is shown once: not again on the next start, and it still works.
    let (server, _, stderr) = start_with_auth(&data_dir, port);
    let (status, _) = http(port, "POST", "/api/v1/login", Some(&login));
    assert_eq!(status, 200);
    assert!(!stderr.lock().unwrap().contains(&password));
    terminate(server);
    let _ = std::fs::remove_dir_all(&data_dir);
}
