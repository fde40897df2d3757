//! The management API's OpenAPI document: the committed copy matches the code, and every
//! documented route is served.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::TestApp;
use pangolin_api::management::openapi::ManagementApi;
use tower::ServiceExt;
use utoipa::OpenApi;

fn committed_copy() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi.json")
}

#[test]
fn the_committed_document_matches_the_code() {
    let generated = format!("{}\n", ManagementApi::openapi().to_pretty_json().unwrap());
    if std::env::var_os("PANGOLIN_UPDATE_OPENAPI").is_some() {
        std::fs::write(committed_copy(), &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(committed_copy()).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/openapi.json is out of date with the code; regenerate it with \
         PANGOLIN_UPDATE_OPENAPI=1 cargo test -p pangolin-api --test openapi"
    );
}

#[tokio::test]
async fn every_documented_route_is_served() {
    let TestApp { app, dir: _dir, .. } = TestApp::new().await;
    let document = ManagementApi::openapi();
    let mut checked = 0;
    for (path, item) in &document.paths.paths {
        let uri = path
            .replace("{catalog}", "lake")
            .replace("{name}", "main")
            .replace("{reference}", "main");
        let methods = [
            (item.get.is_some(), Method::GET),
            (item.post.is_some(), Method::POST),
            (item.put.is_some(), Method::PUT),
            (item.delete.is_some(), Method::DELETE),
        ];
        for (documented, method) in methods {
            if !documented {
                continue;
            }
            let request = Request::builder()
                .method(method.clone())
                .uri(&uri)
                .header("content-type", "application/json")
                .body(Body::from("{}"))
                .unwrap();
            let response = app.clone().oneshot(request).await.unwrap();
            let status = response.status();
            let body = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .unwrap();
            let text = String::from_utf8_lossy(&body);
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {uri}");
            assert!(
                !text.contains("no route for"),
                "{method} {uri} is documented but not routed: {text}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 14, "only {checked} routes documented");

    let request = Request::builder()
        .uri("/api/v1/openapi.json")
        .body(Body::empty())
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = axum::body::to_bytes(response.into_body(), 1 << 22)
        .await
        .unwrap();
    let served: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        served,
        serde_json::to_value(ManagementApi::openapi()).unwrap()
    );
}
