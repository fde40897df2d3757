//! The Iceberg REST namespace routes, driven through the router as a client would.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use pangolin_api::directory::CatalogDirectory;
use pangolin_api::security::Security;
use pangolin_api::{AppState, SharedState, router};
use pangolin_backend_memory::MemoryBackend;
use pangolin_catalog::tenancy::{SecretKey, Tenancy};
use pangolin_store::ObjectCache;
use serde_json::{Value, json};
use tower::ServiceExt;

async fn app() -> axum::Router {
    let store = Arc::new(MemoryBackend::new());
    let cache = Arc::new(ObjectCache::new(16 << 20));
    let tenancy = Tenancy::new(store.clone(), cache.clone(), SecretKey::generate());
    // Namespace routes write no files.
    common::add_catalog(&tenancy, "default", "lake", "file:///tmp/pangolin-no-files").await;
    router(AppState::from(SharedState {
        store: store.clone(),
        cache,
        tenant: "default".into(),
        commits: Default::default(),
        events: Default::default(),
        staged: Default::default(),
        security: Arc::new(Security::disabled(store.clone(), store.clone())),
        default_catalog: "lake".into(),
        catalogs: Arc::new(CatalogDirectory::new(tenancy)),
    }))
}

async fn call(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(uri);
    let body = match body {
        Some(value) => {
            request = request.header("content-type", "application/json");
            Body::from(value.to_string())
        }
        None => Body::empty(),
    };
    let response = app
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    (status, value)
}

fn error_type(value: &Value) -> &str {
    value["error"]["type"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn config_names_the_prefix_and_lists_the_served_routes() {
    let app = app().await;
    let (status, body) = call(&app, Method::GET, "/v1/config", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["overrides"]["prefix"], "lake");
    assert!(
        body["endpoints"]
            .as_array()
            .unwrap()
            .contains(&json!("POST /v1/{prefix}/namespaces"))
    );
    let (_, body) = call(&app, Method::GET, "/v1/config?warehouse=lake@main", None).await;
    assert_eq!(body["overrides"]["prefix"], "lake@main");
    let (status, body) = call(&app, Method::GET, "/v1/config?warehouse=missing", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no catalog named `missing`")
    );
}

#[tokio::test]
async fn namespaces_round_trip() {
    let app = app().await;
    let (status, body) = call(
        &app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["sales"], "properties": {"owner": "ana"}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"namespace": ["sales"], "properties": {"owner": "ana"}})
    );
    call(
        &app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["sales", "eu"]})),
    )
    .await;
    call(
        &app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["hr"]})),
    )
    .await;

    let (_, body) = call(&app, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(body, json!({"namespaces": [["hr"], ["sales"]]}));
    let (_, body) = call(&app, Method::GET, "/v1/lake/namespaces?parent=sales", None).await;
    assert_eq!(body, json!({"namespaces": [["sales", "eu"]]}));
    let (_, page) = call(&app, Method::GET, "/v1/lake/namespaces?pageSize=1", None).await;
    assert_eq!(page["namespaces"], json!([["hr"]]));
    let token = page["next-page-token"].as_str().unwrap().to_owned();
    let (_, rest) = call(
        &app,
        Method::GET,
        &format!("/v1/lake/namespaces?pageSize=1&pageToken={token}"),
        None,
    )
    .await;
    assert_eq!(rest, json!({"namespaces": [["sales"]]}));

    let (status, body) = call(&app, Method::GET, "/v1/lake/namespaces/sales%1Feu", None).await;
    assert_eq!(
        (status, body["namespace"].clone()),
        (StatusCode::OK, json!(["sales", "eu"]))
    );
    let (status, _) = call(&app, Method::HEAD, "/v1/lake/namespaces/sales", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = call(&app, Method::HEAD, "/v1/lake/namespaces/nope", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, body) = call(
        &app,
        Method::POST,
        "/v1/lake/namespaces/sales/properties",
        Some(json!({"removals": ["owner", "ghost"], "updates": {"tier": "gold"}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"updated": ["tier"], "removed": ["owner"], "missing": ["ghost"]})
    );
    let (status, body) = call(
        &app,
        Method::POST,
        "/v1/lake/namespaces/sales/properties",
        Some(json!({"removals": ["a"], "updates": {"a": "1"}})),
    )
    .await;
    assert_eq!(
        (status, error_type(&body)),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "UnprocessableEntityException"
        )
    );

    let (status, body) = call(&app, Method::DELETE, "/v1/lake/namespaces/sales", None).await;
    assert_eq!(
        (status, error_type(&body)),
        (StatusCode::CONFLICT, "NamespaceNotEmptyException")
    );
    assert_eq!(
        call(&app, Method::DELETE, "/v1/lake/namespaces/sales%1Feu", None)
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        call(&app, Method::DELETE, "/v1/lake/namespaces/sales", None)
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    let (status, body) = call(&app, Method::GET, "/v1/lake/namespaces/sales", None).await;
    assert_eq!(
        (status, error_type(&body)),
        (StatusCode::NOT_FOUND, "NoSuchNamespaceException")
    );
}

#[tokio::test]
async fn bad_input_is_refused_and_changes_nothing() {
    let app = app().await;
    let cases = [
        (json!({"namespace": ["x"], "bogus": 1}), "unknown field"),
        (json!({"namespace": "x"}), "expected a sequence"),
        (json!({"namespace": []}), "at least one element"),
        (json!({"namespace": ["a\u{0}b"]}), "control character"),
        (json!({"properties": {}}), "missing field `namespace`"),
    ];
    for (body, fragment) in cases {
        let (status, response) = call(
            &app,
            Method::POST,
            "/v1/lake/namespaces",
            Some(body.clone()),
        )
        .await;
        assert_eq!(
            (status, error_type(&response)),
            (StatusCode::BAD_REQUEST, "BadRequestException"),
            "{body}"
        );
        assert!(
            response["error"]["message"]
                .as_str()
                .unwrap()
                .contains(fragment),
            "{body}: {response}"
        );
    }
    let malformed = Request::builder()
        .method(Method::POST)
        .uri("/v1/lake/namespaces")
        .header("content-type", "application/json")
        .body(Body::from("{nope"))
        .unwrap();
    let response = app.clone().oneshot(malformed).await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);

    let huge = json!({"namespace": ["x"], "properties": {"blob": "a".repeat(9 << 20)}});
    let (status, body) = call(&app, Method::POST, "/v1/lake/namespaces", Some(huge)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(error_type(&body), "BadRequestException");

    let (_, listed) = call(&app, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(listed, json!({"namespaces": []}), "nothing was created");
    let (status, body) = call(&app, Method::GET, "/v1/lake/nothing-here", None).await;
    assert_eq!(
        (status, error_type(&body)),
        (StatusCode::NOT_FOUND, "NotFoundException")
    );
}

#[tokio::test]
async fn reads_at_old_commits_work_and_writes_there_are_refused() {
    let app = app().await;
    call(
        &app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["a"]})),
    )
    .await;
    call(
        &app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["b"]})),
    )
    .await;
    let (_, body) = call(&app, Method::GET, "/v1/lake@main~1/namespaces", None).await;
    assert_eq!(body, json!({"namespaces": [["a"]]}));
    let (status, body) = call(
        &app,
        Method::POST,
        "/v1/lake@main~1/namespaces",
        Some(json!({"namespace": ["c"]})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("read-only"),
        "{body}"
    );
    let (status, body) = call(&app, Method::GET, "/v1/lake@nope/namespaces", None).await;
    assert_eq!(
        (status, error_type(&body)),
        (StatusCode::BAD_REQUEST, "BadRequestException")
    );
}

#[tokio::test]
async fn health_and_readiness_answer() {
    let app = app().await;
    assert_eq!(
        call(&app, Method::GET, "/health", None).await.0,
        StatusCode::OK
    );
    assert_eq!(
        call(&app, Method::GET, "/ready", None).await.0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn prefixes_with_branch_paths_hashes_and_times_are_url_safe_and_work() {
    let app = app().await;
    call(
        &app,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["a"]})),
    )
    .await;
    let (_, config) = call(
        &app,
        Method::GET,
        "/v1/config?warehouse=lake%40main%232001-01-01T00%3A00%3A00Z",
        None,
    )
    .await;
    // The ref did not exist in 2001: config refuses it rather than hand out a dead prefix.
    assert_eq!(error_type(&config), "BadRequestException", "{config}");

    let (status, config) = call(
        &app,
        Method::GET,
        "/v1/config?warehouse=lake%40main~1",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{config}");
    let prefix = config["overrides"]["prefix"].as_str().unwrap().to_owned();
    assert_eq!(prefix, "lake@main~1");
    let (_, listed) = call(&app, Method::GET, &format!("/v1/{prefix}/namespaces"), None).await;
    assert_eq!(listed, json!({"namespaces": []}), "one commit before `a`");

    // A time: `#` and `:` come back encoded so a client can paste the prefix into a path.
    let now = "2099-01-01T00:00:00Z";
    let (status, config) = call(
        &app,
        Method::GET,
        &format!(
            "/v1/config?warehouse=lake%40main%23{}",
            now.replace(':', "%3A")
        ),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{config}");
    let prefix = config["overrides"]["prefix"].as_str().unwrap().to_owned();
    assert_eq!(prefix, format!("lake@main%23{now}"));
    let (status, listed) = call(&app, Method::GET, &format!("/v1/{prefix}/namespaces"), None).await;
    assert_eq!(
        (status, listed),
        (StatusCode::OK, json!({"namespaces": [["a"]]}))
    );
}
