//! The real `pangolin serve` binary: starts on the embedded default with nothing configured,
//! serves, stops gracefully on SIGTERM, and keeps its data across restarts.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::{free_port, http, start, terminate};

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
