#![allow(clippy::unwrap_used)]
//! A catalog's retention policy through the API: set, shown, refused when too short or
//! malformed, removed; and a read at a time before its window is refused with a message that
//! names it, on the management and the Iceberg routes alike.

mod common;

use axum::http::{Method, StatusCode};
use common::{TestApp, call};
use serde_json::json;

const RETENTION: &str = "/api/v1/catalogs/lake/retention";
const DAY: u64 = 24 * 3600 * 1000;

#[tokio::test]
async fn a_policy_is_set_shown_and_removed() {
    let test = TestApp::new().await;
    let app = &test.app;
    let (status, body) = call(app, Method::GET, RETENTION, None).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"retention": null})));

    let policy = json!({"history-ms": 30 * DAY,
        "branches": [{"pattern": "feature/*", "history-ms": 7 * DAY}]});
    let (status, body) = call(app, Method::PUT, RETENTION, Some(policy.clone())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["retention"], policy);
    let (_, body) = call(app, Method::GET, RETENTION, None).await;
    assert_eq!(body["retention"], policy);

    for (bad, says) in [
        (json!({"history-ms": 1000}), "at least"),
        (
            json!({"history-ms": DAY, "branches": [{"pattern": "", "history-ms": DAY}]}),
            "pattern",
        ),
        (json!({"history-ms": DAY, "keep": true}), "keep"),
        (json!({"history-ms": "a day"}), "history-ms"),
        (json!({}), "history-ms"),
    ] {
        let (status, error) = call(app, Method::PUT, RETENTION, Some(bad.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{bad}: {message}");
    }
    let (_, body) = call(app, Method::GET, RETENTION, None).await;
    assert_eq!(
        body["retention"], policy,
        "a refused change changes nothing"
    );

    let (status, body) = call(app, Method::DELETE, RETENTION, None).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"retention": null})));
    let (status, _) = call(app, Method::GET, "/api/v1/catalogs/nope/retention", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn reads_before_the_window_are_refused_at_once() {
    let test = TestApp::new().await;
    let app = &test.app;
    let long_ago = "main%232020-01-01T00:00:00Z";
    let log = format!("/api/v1/catalogs/lake/log?ref={long_ago}");
    let namespaces = format!("/v1/lake@{long_ago}/namespaces");
    // Without a policy, the catalog simply did not exist then.
    let (status, error) = call(app, Method::GET, &log, None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not exist"),
        "{error}"
    );

    let policy = json!({"history-ms": DAY});
    let (status, _) = call(app, Method::PUT, RETENTION, Some(policy)).await;
    assert_eq!(status, StatusCode::OK);
    for uri in [&log, &namespaces] {
        let (status, error) = call(app, Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("older than this catalog keeps its history"),
            "{message}"
        );
    }
    let (status, _) = call(app, Method::GET, "/v1/lake@main/namespaces", None).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the branch itself is always readable"
    );
}
