//! What the management API tests share: catalog `lake` with namespace `db`, calls that must
//! succeed, the shape of Iceberg errors, paging through lists, and history made through the
//! Iceberg routes (`/v1/lake/...`, `/v1/lake@dev/...`) with table files in a temporary warehouse.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use pangolin_backend_memory::MemoryBackend;
use pangolin_store::{ObjectCache, Timestamp};
use serde_json::{Value, json};
use tempfile::TempDir;

use super::rest::{error_type, get, post, schema};
use super::{TestApp, call, send};

/// The management routes of catalog `lake`.
pub const API: &str = "/api/v1/catalogs/lake";

/// The router over a fresh catalog `lake` (created by `test`) with namespace `db`, the store
/// behind it, and the warehouse directory (kept alive as long as the test holds it).
pub struct Env {
    pub app: axum::Router,
    pub store: Arc<MemoryBackend>,
    pub cache: Arc<ObjectCache>,
    pub _dir: TempDir,
}

pub async fn env() -> Env {
    let TestApp {
        app,
        dir,
        store,
        cache,
        ..
    } = TestApp::new().await;
    let (status, body) = post(&app, "/v1/lake/namespaces", json!({"namespace": ["db"]})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    Env {
        app,
        store,
        cache,
        _dir: dir,
    }
}

pub async fn call_raw(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Option<String>,
) -> (StatusCode, Value) {
    let (status, _, value) = send(app, method, uri, body, &[]).await;
    (status, value)
}

pub async fn delete(app: &axum::Router, uri: &str) -> (StatusCode, Value) {
    call(app, Method::DELETE, uri, None).await
}

/// A GET that must succeed.
pub async fn get_ok(app: &axum::Router, uri: &str) -> Value {
    let (status, body) = get(app, uri).await;
    assert_eq!(status, StatusCode::OK, "GET {uri}: {body}");
    body
}

/// A POST that must succeed with 200.
pub async fn post_ok(app: &axum::Router, uri: &str, body: Value) -> Value {
    let (status, answer) = post(app, uri, body.clone()).await;
    assert_eq!(status, StatusCode::OK, "POST {uri} {body}: {answer}");
    answer
}

/// The error object of an Iceberg error: `{"message", "type", "code"}` and nothing else.
pub fn assert_error_object(error: &Value, expected: StatusCode, kind: &str) {
    assert_eq!(error["type"], json!(kind), "{error}");
    assert_eq!(error["code"], json!(expected.as_u16()), "{error}");
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{error}"
    );
    assert_eq!(error.as_object().unwrap().len(), 3, "{error}");
}

/// An Iceberg error body, whole: `{"error": {"message", "type", "code"}}` and nothing else.
pub fn assert_error(status: StatusCode, body: &Value, expected: StatusCode, kind: &str) {
    assert_eq!((status, error_type(body)), (expected, kind), "{body}");
    assert_error_object(&body["error"], expected, kind);
    assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
}

pub fn assert_bad_request(status: StatusCode, body: &Value) {
    assert_error(status, body, StatusCode::BAD_REQUEST, "BadRequestException");
}

/// The head commit of a ref, as the management API reports it.
pub async fn ref_hash(app: &axum::Router, name: &str) -> String {
    get_ok(app, &format!("{API}/refs/{name}")).await["hash"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Creates branch or tag `name` from `from` (the default when `None`); its hash.
pub async fn create_ref(app: &axum::Router, name: &str, kind: &str, from: Option<&str>) -> String {
    let mut request = json!({"name": name, "type": kind});
    if let Some(from) = from {
        request["from"] = json!(from);
    }
    let (status, body) = post(app, &format!("{API}/refs"), request).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["name"], json!(name), "{body}");
    assert_eq!(body["type"], json!(kind), "{body}");
    body["hash"].as_str().unwrap().to_owned()
}

/// Creates table `db.{name}` at `prefix` (`lake`, `lake@dev`); its load-table answer.
pub async fn create_table(app: &axum::Router, prefix: &str, name: &str) -> Value {
    post_ok(
        app,
        &format!("/v1/{prefix}/namespaces/db/tables"),
        json!({"name": name, "schema": schema()}),
    )
    .await
}

pub fn table_uri(prefix: &str, name: &str) -> String {
    format!("/v1/{prefix}/namespaces/db/tables/{name}")
}

/// Sets table property `key` of `db.{table}` at `prefix`: one commit.
pub async fn set_table_property(
    app: &axum::Router,
    prefix: &str,
    table: &str,
    key: &str,
    value: &str,
) {
    post_ok(
        app,
        &table_uri(prefix, table),
        json!({"requirements": [],
               "updates": [{"action": "set-properties", "updates": {key: value}}]}),
    )
    .await;
}

/// The metadata location of `db.{table}` at `prefix`.
pub async fn metadata_location(app: &axum::Router, prefix: &str, table: &str) -> String {
    get_ok(app, &table_uri(prefix, table)).await["metadata-location"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Sets property `key` of namespace `namespace` (levels joined by `%1F`) at `prefix`.
pub async fn set_namespace_property(
    app: &axum::Router,
    prefix: &str,
    namespace: &str,
    key: &str,
    value: &str,
) {
    post_ok(
        app,
        &format!("/v1/{prefix}/namespaces/{namespace}/properties"),
        json!({"updates": {key: value}}),
    )
    .await;
}

/// The hashes of a list of commits or refs.
pub fn hashes(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["hash"].as_str().unwrap().to_owned())
        .collect()
}

/// The keys of a list of changes or entries, as `a.b`.
pub fn keys(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["key"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(".")
        })
        .collect()
}

/// `uri` with `param=value` appended.
pub fn with_param(uri: &str, param: &str, value: &str) -> String {
    let sep = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{sep}{param}={value}")
}

/// Every page of a paged list at `uri` (`field` holds the items), following
/// `next-page-token`; the pages' sizes are checked against `page_size`.
pub async fn all_pages(app: &axum::Router, uri: &str, field: &str, page_size: usize) -> Vec<Value> {
    pages(app, uri, field, page_size, false).await
}

/// [`all_pages`], with an empty last page allowed when `empty_last_page` is set.
pub async fn pages(
    app: &axum::Router,
    uri: &str,
    field: &str,
    page_size: usize,
    empty_last_page: bool,
) -> Vec<Value> {
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..1_000 {
        let mut page_uri = with_param(uri, "pageSize", &page_size.to_string());
        if let Some(token) = &token {
            page_uri = with_param(&page_uri, "pageToken", token);
        }
        let page = get_ok(app, &page_uri).await;
        let got = page[field].as_array().unwrap();
        assert!(got.len() <= page_size, "{page_uri}: {page}");
        // A token is only given when more follow.
        assert!(
            token.is_none() || !got.is_empty() || empty_last_page,
            "{page_uri}: an empty last page"
        );
        items.extend(got.iter().cloned());
        match page.get("next-page-token") {
            None => return items,
            Some(next) => {
                // A token is only given when the page is full.
                assert_eq!(got.len(), page_size, "{page_uri}: {page}");
                token = Some(next.as_str().unwrap().to_owned());
            }
        }
    }
    panic!("{uri} did not stop paging");
}

/// A time strictly after everything done so far and strictly before anything done next
/// (waits for the millisecond clock to tick on both sides).
pub async fn instant_between() -> Timestamp {
    async fn tick_past(t: Timestamp) -> Timestamp {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let now = Timestamp::now();
            if now > t {
                return now;
            }
        }
    }
    let between = tick_past(Timestamp::now()).await;
    tick_past(between).await;
    between
}
