//! Multi-table transactions, idempotency keys, load ETags, the credentials route and metrics of
//! staged tables, through the router as Iceberg clients call them.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{HeaderMap, Method, StatusCode};
use common::TestApp;
use serde_json::{Value, json};
use tempfile::TempDir;

async fn app() -> (axum::Router, TempDir) {
    let TestApp { app, dir, .. } = TestApp::new().await;
    call(
        &app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["db"]})),
        &[],
    )
    .await;
    for table in ["a", "b"] {
        let (status, body) = call(
            &app,
            Method::POST,
            "/v1/lake/namespaces/db/tables",
            Some(
                json!({"name": table, "schema": {"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "id", "required": false, "type": "long"}]}}),
            ),
            &[],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    (app, dir)
}

async fn call_with_headers(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Value) {
    common::send(app, method, uri, body.map(|b| b.to_string()), headers).await
}

async fn call(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (StatusCode, Value) {
    let (status, _, value) = call_with_headers(app, method, uri, body, headers).await;
    (status, value)
}

async fn main_head(app: &axum::Router) -> Value {
    call(
        app,
        Method::GET,
        "/api/v1/catalogs/lake/refs/main",
        None,
        &[],
    )
    .await
    .1["hash"]
        .clone()
}

async fn property(app: &axum::Router, table: &str, key: &str) -> Value {
    let (_, body) = call(
        app,
        Method::GET,
        &format!("/v1/lake/namespaces/db/tables/{table}"),
        None,
        &[],
    )
    .await;
    body["metadata"]["properties"][key].clone()
}

fn set(table: &str, value: &str, requirements: Value) -> Value {
    json!({
        "identifier": {"namespace": ["db"], "name": table},
        "requirements": requirements,
        "updates": [{"action": "set-properties", "updates": {"k": value}}]
    })
}

#[tokio::test]
async fn a_transaction_commits_every_table_or_none() {
    let (app, _dir) = app().await;
    let app = &app;
    let before = main_head(app).await;
    let (status, body) = call(
        app,
        Method::POST,
        "/v1/lake/transactions/commit",
        Some(json!({"table-changes": [set("a", "1", json!([])), set("b", "1", json!([]))]})),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(
        (property(app, "a", "k").await, property(app, "b", "k").await),
        (json!("1"), json!("1"))
    );
    let (_, log) = call(
        app,
        Method::GET,
        "/api/v1/catalogs/lake/log?pageSize=1",
        None,
        &[],
    )
    .await;
    assert_eq!(
        log["commits"][0]["parents"][0], before,
        "one commit for both tables"
    );

    // b's requirement fails: a is not changed either.
    let head = main_head(app).await;
    let (status, body) = call(
        app,
        Method::POST,
        "/v1/lake/transactions/commit",
        Some(json!({"table-changes": [
            set("a", "2", json!([])),
            set("b", "2", json!([{"type": "assert-current-schema-id", "current-schema-id": 7}]))
        ]})),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["type"], "CommitFailedException");
    assert_eq!(main_head(app).await, head);
    assert_eq!(property(app, "a", "k").await, json!("1"));

    // Bad input: a missing table, two branches, no changes.
    let (status, _) = call(
        app,
        Method::POST,
        "/v1/lake/transactions/commit",
        Some(json!({"table-changes": [set("a", "3", json!([])), set("nope", "3", json!([]))]})),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = call(
        app,
        Method::POST,
        "/v1/lake/transactions/commit",
        Some(json!({"table-changes": [set("a", "3", json!([])), set("b@dev", "3", json!([]))]})),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = call(
        app,
        Method::POST,
        "/v1/lake/transactions/commit",
        Some(json!({"table-changes": []})),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(main_head(app).await, head);
}

#[tokio::test]
async fn a_replayed_idempotency_key_returns_the_first_answer_without_applying_twice() {
    let (app, _dir) = app().await;
    let app = &app;
    let (_, config) = call(app, Method::GET, "/v1/config", None, &[]).await;
    assert_eq!(config["idempotency-key-lifetime"], "PT30M");

    let key = [("idempotency-key", "0190e7f2-aaaa-7bbb-8ccc-000000000001")];
    let append = json!({"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"n": "1"}}]});
    let uri = "/v1/lake/namespaces/db/tables/a";
    let (status, _, first) =
        call_with_headers(app, Method::POST, uri, Some(append.clone()), &key).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let head = main_head(app).await;
    let (status, headers, again) =
        call_with_headers(app, Method::POST, uri, Some(append.clone()), &key).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again, first, "the same answer");
    assert_eq!(headers["idempotency-replayed"], "true");
    assert_eq!(main_head(app).await, head, "not applied twice");

    // The same key for another request is refused; a fresh key applies.
    let (status, body) = call(
        app,
        Method::POST,
        "/v1/lake/namespaces/db/tables/b",
        Some(append.clone()),
        &key,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, _) = call(
        app,
        Method::POST,
        uri,
        Some(append),
        &[("idempotency-key", "0190e7f2-aaaa-7bbb-8ccc-000000000002")],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_ne!(main_head(app).await, head);

    // Refused requests are replayed too: a second namespace create with the same key answers
    // 200 as the first did, not 409.
    let create = json!({"namespace": ["fresh"]});
    let ns_key = [("idempotency-key", "ns-create-1")];
    let (status, _) = call(
        app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(create.clone()),
        &ns_key,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(
        app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(create.clone()),
        &ns_key,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(app, Method::POST, "/v1/lake/namespaces", Some(create), &[]).await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "without the key it is a new request"
    );

    let (status, body) = call(
        app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["x"]})),
        &[("idempotency-key", "has space")],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[tokio::test]
async fn load_answers_304_while_the_etag_still_matches() {
    let (app, _dir) = app().await;
    let app = &app;
    let uri = "/v1/lake/namespaces/db/tables/a";
    let (status, headers, _) = call_with_headers(app, Method::GET, uri, None, &[]).await;
    assert_eq!(status, StatusCode::OK);
    let etag = headers["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    let (status, _, body) =
        call_with_headers(app, Method::GET, uri, None, &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert_eq!(body, Value::Null);
    let (status, headers, _) = call_with_headers(
        app,
        Method::GET,
        &format!("{uri}?snapshots=refs"),
        None,
        &[("if-none-match", &etag)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "another view has another tag");
    assert_ne!(headers["etag"].to_str().unwrap(), etag);

    call(
        app,
        Method::POST,
        uri,
        Some(json!({"updates": [
        {"action": "set-properties", "updates": {"k": "v"}}]})),
        &[],
    )
    .await;
    let (status, headers, _) =
        call_with_headers(app, Method::GET, uri, None, &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::OK, "changed tables are sent again");
    assert_ne!(headers["etag"].to_str().unwrap(), etag);
}

#[tokio::test]
async fn credentials_are_an_empty_list_when_nothing_is_vended() {
    let (app, _dir) = app().await;
    let (status, body) = call(
        &app,
        Method::GET,
        "/v1/lake/namespaces/db/tables/a/credentials",
        None,
        &[("x-iceberg-access-delegation", "vended-credentials")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"storage-credentials": []}));
    let (status, body) = call(
        &app,
        Method::GET,
        "/v1/lake/namespaces/db/tables/nope/credentials",
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["type"], "NoSuchTableException");
}

#[tokio::test]
async fn metrics_of_a_staged_table_are_taken_before_it_is_committed() {
    let (app, _dir) = app().await;
    let report = json!({"report-type": "commit-report", "table-name": "db.staged",
        "snapshot-id": 1, "sequence-number": 1, "operation": "append", "metrics": {}});
    let uri = "/v1/lake/namespaces/db/tables/staged/metrics";
    let (status, body) = call(&app, Method::POST, uri, Some(report.clone()), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "not staged yet: {body}");
    let (status, body) = call(
        &app,
        Method::POST,
        "/v1/lake/namespaces/db/tables",
        Some(json!({"name": "staged", "stage-create": true,
            "schema": {"type": "struct", "fields": [
                {"id": 1, "name": "id", "required": false, "type": "long"}]}})),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Spark reports a staged table's commit before the table is in the catalog.
    let (status, body) = call(&app, Method::POST, uri, Some(report.clone()), &[]).await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    let other = "/v1/lake/namespaces/db/tables/other/metrics";
    let (status, _) = call(&app, Method::POST, other, Some(report), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "only the staged table");
}

/// The background job deletes keys once they expired, on one server of several, and a key
/// it deleted no longer replays.
#[tokio::test]
async fn expired_idempotency_keys_are_deleted_by_one_server() {
    use pangolin_api::jobs::{Jobs, Round};
    use pangolin_records::RecordStore;
    use std::sync::Arc;
    use std::time::Duration;
    let env = TestApp::new().await;
    let key = [("idempotency-key", "0190e7f2-aaaa-7bbb-8ccc-00000000000e")];
    let create = json!({"namespace": ["db"]});
    let uri = "/v1/lake/namespaces";
    let (status, _, _) =
        call_with_headers(&env.app, Method::POST, uri, Some(create.clone()), &key).await;
    assert_eq!(status, StatusCode::OK);
    let records: Arc<dyn RecordStore> = env.store.clone();
    let listed = |records: Arc<dyn RecordStore>| async move {
        let page = records
            .list_records("idempotency/", None, 10)
            .await
            .unwrap();
        page.records.len()
    };
    assert_eq!(listed(records.clone()).await, 1);
    let period = Duration::from_secs(60);
    let (one, other) = (
        Jobs::new(records.clone(), period),
        Jobs::new(records.clone(), period),
    );
    let now = pangolin_store::Timestamp::now();
    assert_eq!(
        one.expire_idempotency_keys(now).await.unwrap(),
        Round::Ran(0)
    );
    assert_eq!(listed(records.clone()).await, 1, "a live key stays");
    let later = pangolin_store::Timestamp::from_millis(
        now.as_millis() + pangolin_api::idempotency::LIFETIME.as_millis() as i64 + 60_001,
    );
    assert_eq!(
        other.expire_idempotency_keys(later).await.unwrap(),
        Round::Ran(1)
    );
    assert_eq!(
        one.expire_idempotency_keys(later).await.unwrap(),
        Round::Skipped
    );
    assert_eq!(listed(records).await, 0);
    // The key is gone: the request runs again (and finds the namespace it created).
    let (status, headers, _) =
        call_with_headers(&env.app, Method::POST, uri, Some(create), &key).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(headers.get("idempotency-replayed").is_none());
}
