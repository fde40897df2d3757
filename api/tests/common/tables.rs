//! What the table route tests share: catalog `lake` with namespace `db` over a real (temporary)
//! warehouse, calls through the router, the shape of Iceberg errors, refs, and tables made and
//! appended to the way a client does it.

use std::path::{Path, PathBuf};

use axum::http::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::TestApp;
use super::rest::{error_type, get, message, post, schema};

/// The router over a fresh catalog `lake` with namespace `db`, and the warehouse directory
/// (kept alive as long as the test holds it).
pub struct Env {
    pub app: axum::Router,
    pub dir: TempDir,
}

pub async fn env() -> Env {
    let TestApp { app, dir, .. } = TestApp::new().await;
    let (status, body) = post(&app, "/v1/lake/namespaces", json!({"namespace": ["db"]})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    Env { app, dir }
}

impl Env {
    pub fn root(&self) -> String {
        format!("file://{}", self.dir.path().display())
    }
}

/// An Iceberg error body, whole: `{"error": {"message", "type", "code"}}` and nothing else.
pub fn assert_error(status: StatusCode, body: &Value, expected: StatusCode, kind: &str) {
    assert_eq!((status, error_type(body)), (expected, kind), "{body}");
    assert_eq!(body["error"]["code"], json!(expected.as_u16()), "{body}");
    assert!(!message(body).is_empty(), "{body}");
    assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
    assert_eq!(body["error"].as_object().unwrap().len(), 3, "{body}");
}

/// The head commit of a ref, as the management API reports it.
pub async fn ref_hash(app: &axum::Router, name: &str) -> String {
    let (status, body) = get(app, &format!("/api/v1/catalogs/lake/refs/{name}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["hash"].as_str().unwrap().to_owned()
}

pub async fn create_ref(app: &axum::Router, name: &str, kind: &str) -> String {
    let (status, body) = post(
        app,
        "/api/v1/catalogs/lake/refs",
        json!({"name": name, "type": kind}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["type"], kind);
    body["hash"].as_str().unwrap().to_owned()
}

pub async fn create_table(app: &axum::Router, prefix: &str, name: &str) -> Value {
    let (status, body) = post(
        app,
        &format!("/v1/{prefix}/namespaces/db/tables"),
        json!({"name": name, "schema": schema()}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

pub fn table_uri(name: &str) -> String {
    format!("/v1/lake/namespaces/db/tables/{name}")
}

pub async fn commit(
    app: &axum::Router,
    uri: &str,
    requirements: Value,
    updates: Value,
) -> (StatusCode, Value) {
    post(
        app,
        uri,
        json!({"requirements": requirements, "updates": updates}),
    )
    .await
}

pub fn snapshot(id: i64, parent: Option<i64>, sequence: i64) -> Value {
    let mut snapshot = json!({
        "snapshot-id": id,
        "sequence-number": sequence,
        "timestamp-ms": 1_700_000_000_000_i64 + id,
        "manifest-list": format!("file:///nowhere/snap-{id}.avro"),
        "summary": {"operation": "append", "added-records": "10"},
        "schema-id": 0
    });
    if let Some(parent) = parent {
        snapshot["parent-snapshot-id"] = json!(parent);
    }
    snapshot
}

/// Adds snapshot `id` and points `main` at it, asserting `main` was at `parent`.
pub async fn append(app: &axum::Router, uri: &str, id: i64, parent: Option<i64>) -> Value {
    let (status, body) = commit(
        app,
        uri,
        json!([{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}]),
        json!([
            {"action": "add-snapshot", "snapshot": snapshot(id, parent, id)},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": id}
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// The local path of a `file://` location.
pub fn local(location: &str) -> PathBuf {
    PathBuf::from(location.strip_prefix("file://").unwrap())
}

/// Every file below `dir`, recursively (none when it does not exist).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}
