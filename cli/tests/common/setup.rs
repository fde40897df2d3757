//! A server with a fresh data directory and a client configuration of its own, and the
//! Iceberg calls tests make through plain HTTP (not the client under test).

use serde_json::{Value, json};
use tempfile::TempDir;

use super::{Run, Server, http, pangolin, start_anywhere};

/// A server with a fresh data directory, and a fresh configuration directory for the client.
pub(crate) struct Setup {
    pub(crate) port: u16,
    pub(crate) config: TempDir,
    _data: TempDir,
    _server: Server,
}

pub(crate) fn setup() -> Setup {
    let data = tempfile::tempdir().unwrap();
    let (server, port) = start_anywhere(data.path());
    Setup {
        port,
        config: tempfile::tempdir().unwrap(),
        _data: data,
        _server: server,
    }
}

impl Setup {
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The client, told the server through `PANGOLIN_SERVER`.
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        pangolin(self.config.path(), Some(&self.url()), args)
    }

    /// An Iceberg REST call that must succeed.
    pub(crate) fn iceberg(&self, method: &str, path: &str, body: Value) {
        let (status, answer) = http(self.port, method, path, Some(&body.to_string()));
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {answer}"
        );
    }

    pub(crate) fn create_namespace(&self, prefix: &str, name: &str) {
        self.iceberg(
            "POST",
            &format!("/v1/{prefix}/namespaces"),
            json!({"namespace": [name]}),
        );
    }

    /// One commit on the branch of `prefix` (`default` is main, `default@dev` is dev).
    pub(crate) fn set_property(&self, prefix: &str, namespace: &str, key: &str, value: &str) {
        self.iceberg(
            "POST",
            &format!("/v1/{prefix}/namespaces/{namespace}/properties"),
            json!({"updates": {key: value}}),
        );
    }

    /// Where a reference points, through the API (not the client under test).
    pub(crate) fn head(&self, reference: &str) -> String {
        let (status, body) = http(
            self.port,
            "GET",
            &format!("/api/v1/catalogs/default/refs/{reference}"),
            None,
        );
        assert_eq!(status, 200, "{body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        body["hash"].as_str().unwrap().to_owned()
    }
}
