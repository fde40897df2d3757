#![allow(clippy::unwrap_used)]
//! An export that fails after its answer began: the answer is cut short, and since its `200`
//! was audited when it began, the failure is audited too.

mod common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::{TestApp, call};
use pangolin_catalog::Catalog;
use pangolin_refs::{ObjectQuery, Prune};
use pangolin_store::ObjectKind;
use serde_json::json;
use tower::ServiceExt;

#[tokio::test]
async fn an_export_that_fails_half_way_is_cut_short_and_audited_as_failed() {
    let test = TestApp::new().await;
    let app = &test.app;
    let (status, body) = call(
        app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["db"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // A tree node the refs reach goes missing from the store.
    let catalog = Catalog::open(test.store.clone(), test.cache.clone(), "default", "lake").unwrap();
    let repo = catalog.odb().repo();
    let trees = test
        .store
        .list_objects(repo, ObjectQuery::of(ObjectKind::Tree, 100))
        .await
        .unwrap();
    let ids: Vec<_> = trees.into_iter().map(|(id, _)| id).collect();
    let moves = test.store.ref_moves(repo).await.unwrap();
    assert!(test.store.delete_objects(repo, moves, &ids).await.unwrap());
    test.cache.forget_repo(repo);

    let request = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/catalogs/lake/export")
        .header("content-type", "application/json")
        .body(Body::from("{}"))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "the answer began");
    let read = axum::body::to_bytes(response.into_body(), usize::MAX).await;
    assert!(read.is_err(), "the answer is cut short");

    let (_, audit) = call(app, Method::GET, "/api/v1/audit?page-size=1000", None).await;
    let failed: Vec<_> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "catalog.export.failed")
        .collect();
    assert_eq!(failed.len(), 1, "{audit}");
    assert_eq!(failed[0]["outcome"], "failed");
    assert_eq!(failed[0]["resource-id"], "lake", "{}", failed[0]);
    let error = failed[0]["details"]["error"].as_str().unwrap();
    assert!(error.contains("not stored"), "{error}");
}
