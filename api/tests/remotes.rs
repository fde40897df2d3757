//! The remote routes over HTTP: remotes added, listed and removed with clear errors for bad
//! input; packs streamed; a fetch recorded only from a whole pack; pushes that create, move
//! or refuse to move a branch; and the UI's remotes page.
#![allow(clippy::unwrap_used)]

mod common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::ui::page;
use common::{TestApp, call, create_namespace};
use serde_json::{Value, json};
use tower::ServiceExt;

/// A request with a raw body; the status and the body's bytes.
async fn raw(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Vec<u8>,
) -> (StatusCode, Vec<u8>) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/vnd.pangolin.bundle")
        .body(Body::from(body))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, bytes.to_vec())
}

async fn pack(app: &axum::Router, body: Value) -> Vec<u8> {
    let request = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/catalogs/lake/pack")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "application/vnd.pangolin.bundle"
    );
    assert!(response.headers().contains_key("pangolin-warehouse"));
    axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec()
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

async fn head(app: &axum::Router, name: &str) -> Option<String> {
    let (status, body) = call(
        app,
        Method::GET,
        &format!("/api/v1/catalogs/lake/refs/{name}"),
        None,
    )
    .await;
    (status == StatusCode::OK).then(|| body["hash"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn remotes_are_added_listed_and_removed_with_clear_errors() {
    let env = TestApp::new().await;
    let app = &env.app;
    let add = |body: Value| async move {
        call(
            app,
            Method::POST,
            "/api/v1/catalogs/lake/remotes",
            Some(body),
        )
        .await
    };
    let (status, body) = add(json!({"name": "origin", "url": "http://lake.example:8080/"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["url"], "http://lake.example:8080");
    assert_eq!(body["catalog"], "lake", "this catalog's name by default");
    assert_eq!(body["refs"], json!([]));

    for (bad, status) in [
        (
            json!({"name": "origin", "url": "http://other.example"}),
            StatusCode::CONFLICT,
        ),
        (
            json!({"name": "x", "url": "http://ana:pw@lake.example"}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "url": "lake.example"}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "a/b", "url": "http://lake.example"}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "url": "http://lake.example", "token": "t"}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": 7, "url": "http://lake.example"}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (got, body) = add(bad.clone()).await;
        assert_eq!(got, status, "{bad}: {body}");
        assert!(body["error"]["message"].as_str().is_some(), "{body}");
    }
    let (status, body) = call(app, Method::GET, "/api/v1/catalogs/lake/remotes", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["remotes"].as_array().unwrap().len(), 1, "{body}");

    let (status, body) = call(
        app,
        Method::GET,
        "/api/v1/catalogs/lake/remotes/nowhere",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["type"], "NoSuchRemoteException");
    let (status, _) = call(
        app,
        Method::DELETE,
        "/api/v1/catalogs/lake/remotes/origin",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = call(
        app,
        Method::DELETE,
        "/api/v1/catalogs/lake/remotes/origin",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn packs_fetches_and_pushes_over_http() {
    let env = TestApp::new().await;
    let app = &env.app;
    create_namespace(app, "lake", "sales").await;
    let (status, body) = call(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/refs",
        Some(json!({"name": "dev", "type": "branch", "from": "main"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    create_namespace(app, "lake%40dev", "marketing").await;

    // Bad pack requests.
    for (body, status) in [
        (json!({"have": ["abc"]}), StatusCode::BAD_REQUEST),
        (json!({"want": ["no-such-ref"]}), StatusCode::NOT_FOUND),
        (json!({"want": ["bad name!"]}), StatusCode::BAD_REQUEST),
        (json!({"wants": []}), StatusCode::BAD_REQUEST),
    ] {
        let (got, answer) = call(
            app,
            Method::POST,
            "/api/v1/catalogs/lake/pack",
            Some(body.clone()),
        )
        .await;
        assert_eq!(got, status, "{body}: {answer}");
    }

    // A fetch of this catalog's own refs into a remote of it: nothing new to store, the refs
    // recorded; a body that is not a pack records nothing.
    let (status, _) = call(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/remotes",
        Some(json!({"name": "self", "url": "http://127.0.0.1:1"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let full = pack(app, json!({})).await;
    let (status, body) = raw(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/remotes/self/fetched",
        b"PAR1".to_vec(),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (status, body) = raw(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/remotes/self/fetched",
        full[..full.len() - 1].to_vec(),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a cut pack: {}",
        String::from_utf8_lossy(&body)
    );
    let (_, remote) = call(app, Method::GET, "/api/v1/catalogs/lake/remotes/self", None).await;
    assert_eq!(remote["refs"], json!([]), "nothing recorded");
    let (status, body) = raw(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/remotes/nowhere/fetched",
        full.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json_of(&body)["error"]["type"], "NoSuchRemoteException");
    let (status, body) = raw(
        app,
        Method::POST,
        "/api/v1/catalogs/lake/remotes/self/fetched",
        full.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let report = json_of(&body);
    assert_eq!(report["changes"].as_array().unwrap().len(), 2, "{report}");
    assert_eq!(report["remote"]["refs"].as_array().unwrap().len(), 2);

    // The UI shows the remote with its tracking refs, linked to their commits.
    let dev = head(app, "dev").await.unwrap();
    let html = page(app, "/ui/catalogs/lake/remotes").await;
    assert!(
        html.contains("self/dev") && html.contains("http://127.0.0.1:1"),
        "{html}"
    );
    assert!(
        html.contains(&format!("/ui/catalogs/lake/commits/{dev}")),
        "{html}"
    );
    assert!(
        page(app, "/ui/catalogs/lake")
            .await
            .contains(r#"href="/ui/catalogs/lake/remotes""#)
    );

    // Pushes: a stale or missing expectation, a pack of another branch or bad parameters
    // move nothing; the head the branch is at is up to date.
    let dev_pack = pack(app, json!({"want": ["dev"]})).await;
    let push = |query: &str, body: Vec<u8>| {
        let uri = format!("/api/v1/catalogs/lake/push?{query}");
        async move { raw(app, Method::POST, &uri, body).await }
    };
    let (status, body) = push("branch=dev", dev_pack.clone()).await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "dev exists: {}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(
        json_of(&body)["error"]["type"],
        "ReferenceConflictException"
    );
    let (status, _) = push("branch=copy", dev_pack.clone()).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a pack of dev is not one of copy"
    );
    for query in [
        "",
        "branch=copy&expected-head=xyz",
        "branch=copy&force=maybe",
        "branch=copy&unknown=1",
    ] {
        let (status, _) = push(query, dev_pack.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}");
    }
    assert_eq!(head(app, "copy").await, None);
    let main = head(app, "main").await.unwrap();
    let (status, body) = push(
        &format!("branch=dev&expected-head={main}"),
        dev_pack.clone(),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (status, body) = push(&format!("branch=dev&expected-head={dev}"), dev_pack.clone()).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(json_of(&body)["result"], "up-to-date");

    // A protected branch refuses a push before reading it.
    let (status, _) = call(
        app,
        Method::PUT,
        "/api/v1/catalogs/lake/protection",
        Some(json!({"rules": [{"branch": "dev"}]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = push(&format!("branch=dev&expected-head={dev}"), Vec::new()).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "{}",
        String::from_utf8_lossy(&body)
    );
}
