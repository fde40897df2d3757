//! The real `pangolin serve` binary: starts on the embedded default with nothing configured,
//! serves, stops gracefully on SIGTERM, and keeps its data across restarts.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.1 request with `Connection: close`; returns the status and the body.
fn http(port: u16, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let mut stream = connect(port);
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split(' ').nth(1).unwrap().parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Connects, retrying briefly: on a loaded machine a fresh listener can refuse a connection
/// for a moment while its accept loop starts.
fn connect(port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(stream) => return stream,
            Err(e) if Instant::now() < deadline => {
                eprintln!("connect to {port}: {e}; retrying");
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("cannot connect to the server on port {port}: {e}"),
        }
    }
}

/// A running server, killed if the test fails before stopping it.
struct Server(Option<Child>);

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start(data_dir: &Path, port: u16) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_pangolin"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(data_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut server = Server(Some(child));
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        let exited = server.0.as_mut().and_then(|c| c.try_wait().ok().flatten());
        assert!(
            exited.is_none(),
            "the server exited before listening: {exited:?}"
        );
        assert!(
            Instant::now() < deadline,
            "the server did not start listening"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

fn terminate(mut server: Server) {
    let mut child = server.0.take().expect("running");
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "graceful shutdown exits cleanly: {status}"
            );
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

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
        .args(["serve", "--listen", "0.0.0.0:0", "--data-dir"])
        .arg(std::env::temp_dir().join("pangolin-never-created"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("only listens on loopback"), "{stderr}");
}
