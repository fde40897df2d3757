//! The events feed over HTTP: pages, filters, bad input, long polls, the Server-Sent Events
//! stream, and what each caller's grants let it see.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::secured::{PASSWORD, secured, send_as, sign_in};
use common::{TestApp, call, create_namespace, send};
use futures::StreamExt;
use pangolin_catalog::authz::{BranchPattern, Grant, Privilege, Resource, Role};
use pangolin_identity::ManualClock;
use pangolin_store::Timestamp;
use serde_json::{Value, json};
use tower::ServiceExt;

const SCHEMA: &str = r#"{"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": false}]}"#;

async fn create_table(app: &axum::Router, namespace: &str, name: &str) -> Value {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let (status, body) = call(
        app,
        Method::POST,
        &format!("/v1/lake/namespaces/{namespace}/tables"),
        Some(json!({"name": name, "schema": schema})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn events(app: &axum::Router, query: &str) -> (StatusCode, Value) {
    call(
        app,
        Method::GET,
        &format!("/api/v1/catalogs/lake/events{query}"),
        None,
    )
    .await
}

/// The ref-log sequence a cursor is in (`7` of `7.2`): a page that read to the end of an
/// entry continues after the whole entry.
fn entry_of(cursor: &Value) -> String {
    cursor
        .as_str()
        .unwrap()
        .split('.')
        .next()
        .unwrap()
        .to_owned()
}

fn types(page: &Value) -> Vec<String> {
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["operation-type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn pages_of_events_say_what_changed_and_resume_after_a_cursor() {
    let app = TestApp::new().await;
    create_namespace(&app.app, "lake", "db").await;
    let table = create_table(&app.app, "db", "orders").await;
    let (status, page) = events(&app.app, "").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(
        types(&page),
        vec!["create-branch", "create-namespace", "create-table"]
    );
    let created = &page["events"][2];
    assert_eq!(created["identifier"], json!(["db", "orders"]));
    assert_eq!(created["ref"], "main");
    assert_eq!(created["ref-type"], "branch");
    assert_eq!(
        created["table"]["table-uuid"],
        table["metadata"]["table-uuid"]
    );
    assert_eq!(
        created["after"]["metadata-location"],
        table["metadata-location"]
    );
    assert!(created["timestamp-ms"].as_i64().unwrap() > 0);
    assert_eq!(created["commit"].as_str().unwrap().len(), 64);
    assert_eq!(page["next-cursor"], entry_of(&created["cursor"]).as_str());

    // One at a time, each page continuing after the last.
    let mut after = String::new();
    let mut one_by_one = Vec::new();
    loop {
        let (status, page) = events(&app.app, &format!("?pageSize=1{after}")).await;
        assert_eq!(status, StatusCode::OK);
        if page["events"].as_array().unwrap().is_empty() {
            assert_eq!(entry_of(&page["next-cursor"]), entry_of(&created["cursor"]));
            break;
        }
        one_by_one.extend(types(&page));
        after = format!("&after={}", page["next-cursor"].as_str().unwrap());
    }
    assert_eq!(one_by_one, types(&events(&app.app, "").await.1));

    let (_, tables) = events(&app.app, "?types=create-table,drop-table&prefix=db").await;
    assert_eq!(types(&tables), vec!["create-table"]);
    let (_, elsewhere) = events(&app.app, "?prefix=other").await;
    assert_eq!(types(&elsewhere), Vec::<String>::new());
    assert_eq!(
        elsewhere["next-cursor"],
        entry_of(&created["cursor"]).as_str()
    );
    let (_, dev) = events(&app.app, "?ref=dev").await;
    assert!(types(&dev).is_empty());
}

#[tokio::test]
async fn bad_queries_are_refused_with_a_reason() {
    let app = TestApp::new().await;
    for (query, says) in [
        ("?after=abc", "not an events cursor"),
        ("?after=1.2.3", "not an events cursor"),
        (
            "?types=create-table,explode",
            "unknown event type `explode`",
        ),
        ("?wait=5m", "invalid wait"),
        ("?wait=51s", "longer than"),
        ("?wait=-1", "invalid wait"),
        ("?pageSize=0", "pageSize"),
        ("?ref=a..b", "invalid ref"),
        ("?prefix=%1F", "invalid prefix"),
    ] {
        let (status, body) = events(&app.app, query).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{query}: {message}");
    }
    let (status, _) = call(&app.app, Method::GET, "/api/v1/catalogs/nope/events", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = call(
        &app.app,
        Method::GET,
        "/api/v1/catalogs/lake/events/stream?wait=1s",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[tokio::test]
async fn a_long_poll_answers_as_soon_as_a_change_lands() {
    let app = TestApp::new().await;
    let (_, page) = events(&app.app, "").await;
    let cursor = page["next-cursor"].as_str().unwrap().to_owned();
    // Nothing new: an empty page after the wait, at the same place.
    let (status, quiet) = events(&app.app, &format!("?after={cursor}&wait=300ms")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(types(&quiet).is_empty());
    assert_eq!(quiet["next-cursor"], cursor.as_str());

    let waiting = {
        let app = app.app.clone();
        let cursor = cursor.clone();
        tokio::spawn(async move { events(&app, &format!("?after={cursor}&wait=30s")).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "it waits for a change");
    create_namespace(&app.app, "lake", "db").await;
    let (status, page) = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("the change ends the wait")
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(types(&page), vec!["create-namespace"]);
}

/// Reads Server-Sent Events from `body` until `count` have come: (id, event, data).
async fn read_sse(body: Body, count: usize) -> Vec<(String, String, Value)> {
    let mut stream = body.into_data_stream();
    let mut text = String::new();
    let mut events = Vec::new();
    while events.len() < count {
        let chunk = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("an event in time")
            .expect("the stream is open")
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = text.find("\n\n") {
            let frame: String = text.drain(..end + 2).collect();
            let (mut id, mut event, mut data) = (String::new(), String::new(), String::new());
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().to_owned();
                } else if let Some(v) = line.strip_prefix("event:") {
                    event = v.trim().to_owned();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim());
                }
            }
            if !id.is_empty() {
                events.push((id, event, serde_json::from_str(&data).unwrap()));
            }
        }
    }
    events
}

#[tokio::test]
async fn the_stream_sends_events_as_they_land_and_resumes_from_the_last_id() {
    let app = TestApp::new().await;
    create_namespace(&app.app, "lake", "db").await;
    let request = Request::get("/api/v1/catalogs/lake/events/stream")
        .body(Body::empty())
        .unwrap();
    let response = app.app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let reader = tokio::spawn(read_sse(response.into_body(), 3));
    tokio::time::sleep(Duration::from_millis(200)).await;
    create_table(&app.app, "db", "t").await;
    let seen = reader.await.unwrap();
    let kinds: Vec<&str> = seen.iter().map(|(_, e, _)| e.as_str()).collect();
    assert_eq!(
        kinds,
        vec!["create-branch", "create-namespace", "create-table"]
    );
    for (id, event, data) in &seen {
        assert_eq!(data["cursor"], id.as_str());
        assert_eq!(data["operation-type"], event.as_str());
    }

    // Reconnecting with the last id seen continues after it.
    create_namespace(&app.app, "lake", "more").await;
    let request = Request::get("/api/v1/catalogs/lake/events/stream")
        .header("last-event-id", seen[1].0.as_str())
        .body(Body::empty())
        .unwrap();
    let response = app.app.clone().oneshot(request).await.unwrap();
    let again = read_sse(response.into_body(), 2).await;
    let kinds: Vec<&str> = again.iter().map(|(_, e, _)| e.as_str()).collect();
    assert_eq!(kinds, vec!["create-table", "create-namespace"]);
    let (status, _, _) = send(
        &app.app,
        Method::GET,
        "/api/v1/catalogs/lake/events/stream",
        None,
        &[("last-event-id", "nope")],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn callers_see_only_events_about_what_they_may_read() {
    let clock = Arc::new(ManualClock::new(Timestamp::now()));
    let one_table = Grant::new(
        Privilege::Read,
        Resource::table("acme", "lake", ["db"], "shared"),
    )
    .at(BranchPattern::parse("main").unwrap());
    let dev_only = Grant::new(Privilege::Read, Resource::catalog("acme", "lake"))
        .at(BranchPattern::parse("dev").unwrap());
    let roles = vec![
        (
            Role::new("acme", "table-reader", vec![one_table]),
            "user:acme/ted",
        ),
        (
            Role::new("acme", "dev-reader", vec![dev_only]),
            "user:acme/dana",
        ),
    ];
    let users = [
        ("acme", "admin", true),
        ("acme", "ted", false),
        ("acme", "dana", false),
    ];
    let env = secured(&users, roles, clock).await;
    let token = |user: &'static str| {
        let app = env.app.clone();
        async move {
            let (status, body) = sign_in(&app, Some("acme"), user, PASSWORD).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body["access_token"].as_str().unwrap().to_owned()
        }
    };
    let (admin, ted, dana) = (
        token("admin").await,
        token("ted").await,
        token("dana").await,
    );
    let as_admin = |method: Method, uri: &str, body: Value| {
        let (app, admin) = (env.app.clone(), admin.clone());
        let uri = uri.to_owned();
        async move {
            let (status, body) =
                send_as(&app, &admin, method, &uri, Some(body.to_string()), &[]).await;
            assert!(status.is_success(), "{uri}: {body}");
        }
    };
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    as_admin(
        Method::POST,
        "/v1/lake/namespaces",
        json!({"namespace": ["db"]}),
    )
    .await;
    for name in ["shared", "private"] {
        as_admin(
            Method::POST,
            "/v1/lake/namespaces/db/tables",
            json!({"name": name, "schema": schema}),
        )
        .await;
    }
    as_admin(
        Method::POST,
        "/api/v1/catalogs/lake/refs",
        json!({"name": "dev", "type": "branch", "from": "main"}),
    )
    .await;
    as_admin(
        Method::POST,
        "/v1/lake@dev/namespaces",
        json!({"namespace": ["scratch"]}),
    )
    .await;

    let read = |token: String, query: &'static str| {
        let app = env.app.clone();
        async move {
            send_as(
                &app,
                &token,
                Method::GET,
                &format!("/api/v1/catalogs/lake/events{query}"),
                None,
                &[],
            )
            .await
        }
    };
    let (status, all) = read(admin.clone(), "").await;
    assert_eq!(status, StatusCode::OK, "{all}");
    assert_eq!(
        types(&all),
        vec![
            "create-branch",
            "create-namespace",
            "create-table",
            "create-table",
            "create-branch",
            "create-namespace"
        ]
    );
    // Ted may read one table on main: that table's events and that main exists.
    let (status, body) = read(ted.clone(), "").await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "no grant on every branch: {body}"
    );
    let (status, page) = read(ted.clone(), "?ref=main").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(types(&page), vec!["create-branch", "create-table"]);
    assert_eq!(page["events"][1]["identifier"], json!(["db", "shared"]));
    assert_eq!(
        page["next-cursor"], all["next-cursor"],
        "past what it may not see"
    );
    // Dana may read everything on dev and nothing on main.
    let (status, page) = read(dana.clone(), "?ref=dev").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(types(&page), vec!["create-branch", "create-namespace"]);
    assert_eq!(page["events"][1]["identifier"], json!(["scratch"]));
    let (status, _) = read(dana, "?ref=main").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}
