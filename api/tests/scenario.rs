//! The versioning workflow end to end through the HTTP API: two branches change different
//! tables and the same table; one merges cleanly, the other conflicts, is resolved, and the log
//! and diff tell the story afterwards.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::TestApp;
use serde_json::{Value, json};

async fn call(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    common::call(app, method, uri, body).await
}

async fn ok(app: &axum::Router, method: Method, uri: &str, body: Option<Value>) -> Value {
    let (status, value) = call(app, method.clone(), uri, body).await;
    assert!(status.is_success(), "{method} {uri}: {status} {value}");
    value
}

/// Sets a property on table `db.<table>` at `prefix` (`lake` or `lake@<branch>`).
async fn set_property(app: &axum::Router, prefix: &str, table: &str, key: &str, value: &str) {
    ok(
        app,
        Method::POST,
        &format!("/v1/{prefix}/namespaces/db/tables/{table}"),
        Some(json!({
            "requirements": [],
            "updates": [{"action": "set-properties", "updates": {key: value}}]
        })),
    )
    .await;
}

async fn property(app: &axum::Router, prefix: &str, table: &str, key: &str) -> Value {
    let table = ok(
        app,
        Method::GET,
        &format!("/v1/{prefix}/namespaces/db/tables/{table}"),
        None,
    )
    .await;
    table["metadata"]["properties"][key].clone()
}

fn keys(changes: &Value) -> Vec<String> {
    changes
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

#[tokio::test]
async fn two_branches_one_clean_merge_one_conflict_resolved_then_log_and_diff() {
    let TestApp { app, dir: _dir, .. } = TestApp::new().await;
    let app = &app;
    ok(
        app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["db"]})),
    )
    .await;
    let schema = json!({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": false, "type": "long"}]});
    for table in ["orders", "customers", "items"] {
        ok(
            app,
            Method::POST,
            "/v1/lake/namespaces/db/tables",
            Some(json!({"name": table, "schema": schema})),
        )
        .await;
    }
    for branch in ["etl", "cleanup"] {
        let (status, body) = call(
            app,
            Method::POST,
            "/api/v1/catalogs/lake/refs",
            Some(json!({"name": branch})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let start = ok(app, Method::GET, "/api/v1/catalogs/lake/refs/main", None).await["hash"].clone();

    // etl changes orders; cleanup changes customers, and orders differently.
    set_property(app, "lake@etl", "orders", "owner", "etl").await;
    set_property(app, "lake@cleanup", "customers", "retention", "30d").await;
    set_property(app, "lake@cleanup", "orders", "owner", "cleanup").await;

    let refs = ok(
        app,
        Method::GET,
        "/api/v1/catalogs/lake/refs?type=branch",
        None,
    )
    .await;
    let cleanup = refs["refs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "cleanup")
        .unwrap()
        .clone();
    assert_eq!(
        (cleanup["ahead"].clone(), cleanup["behind"].clone()),
        (json!(2), json!(0))
    );

    // etl merges cleanly (a fast-forward: main has not moved).
    let merged = ok(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/merge",
        Some(json!({"source": "etl", "target": "main"})),
    )
    .await;
    assert_eq!(merged["result"], "fast-forward");
    assert_eq!(keys(&merged["changes"]), ["db.orders"]);
    assert_eq!(
        merged["changes"][0]["summary"],
        json!(["properties set: owner"])
    );
    assert_eq!(property(app, "lake", "orders", "owner").await, json!("etl"));
    let after_etl =
        ok(app, Method::GET, "/api/v1/catalogs/lake/refs/main", None).await["hash"].clone();

    // cleanup conflicts on orders; nothing moves.
    let (status, conflict) = call(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/merge",
        Some(json!({"source": "cleanup", "target": "main"})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{conflict}");
    assert_eq!(keys(&conflict["conflicts"]), ["db.orders"]);
    assert_eq!(conflict["conflicts"][0]["kind"], "both-modified");
    assert!(conflict["conflicts"][0]["base"]["metadata-location"].is_string());
    assert_ne!(
        conflict["conflicts"][0]["ours"]["metadata-location"],
        conflict["conflicts"][0]["theirs"]["metadata-location"]
    );
    assert_eq!(
        ok(app, Method::GET, "/api/v1/catalogs/lake/refs/main", None).await["hash"],
        after_etl
    );

    // Resolved: keep main's orders, take cleanup's customers.
    let resolved = ok(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/merge",
        Some(json!({
            "source": "cleanup", "target": "main", "expected-target-head": after_etl,
            "resolutions": [{"key": ["db", "orders"], "take": "ours"}],
            "message": "merge cleanup, keeping etl's orders"
        })),
    )
    .await;
    assert_eq!(resolved["result"], "merged");
    assert_eq!(keys(&resolved["resolved"]), ["db.orders"]);
    assert_eq!(property(app, "lake", "orders", "owner").await, json!("etl"));
    assert_eq!(
        property(app, "lake", "customers", "retention").await,
        json!("30d")
    );

    // The log: the merge commit on top, with both parents; customers' history names cleanup's
    // commit and the merge, orders' history names etl's commit.
    let log = ok(
        app,
        Method::GET,
        "/api/v1/catalogs/lake/refs/main/log",
        None,
    )
    .await;
    let top = &log["commits"][0];
    assert_eq!(top["message"], "merge cleanup, keeping etl's orders");
    assert_eq!(top["parents"].as_array().unwrap().len(), 2);
    assert_eq!(top["parents"][0], after_etl);
    let customers = ok(
        app,
        Method::GET,
        "/api/v1/catalogs/lake/log?ref=main&key=db%1Fcustomers",
        None,
    )
    .await;
    let messages: Vec<&str> = customers["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        [
            "merge cleanup, keeping etl's orders",
            "create table db.customers"
        ]
    );
    let orders = ok(
        app,
        Method::GET,
        "/api/v1/catalogs/lake/log?ref=main&key=db%1Forders",
        None,
    )
    .await;
    assert_eq!(orders["commits"].as_array().unwrap().len(), 2, "{orders}");
    assert_eq!(orders["commits"][0]["message"], "commit table db.orders");

    // The diff from before the branches to now: orders (etl's) and customers (cleanup's).
    let diff = ok(
        app,
        Method::GET,
        &format!(
            "/api/v1/catalogs/lake/diff?from={}&to=main",
            start.as_str().unwrap()
        ),
        None,
    )
    .await;
    assert_eq!(keys(&diff["changes"]), ["db.customers", "db.orders"]);
    assert!(
        diff["changes"][0]["summary"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "properties set: retention"),
        "{diff}"
    );
    let show = ok(app, Method::GET, "/api/v1/catalogs/lake/commits/main", None).await;
    assert_eq!(keys(&show["changes"]), ["db.customers"]);
}
