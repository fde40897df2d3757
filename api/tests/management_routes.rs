//! What every management route (`/api/v1`) shares: the catalogs are listed, a catalog that
//! does not exist is 404 on every route, the OpenAPI document describes each route, and a body
//! with unknown fields or bad JSON is refused.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::call;
use common::management::{
    API, assert_bad_request, assert_error, call_raw, create_ref, create_table, env, get_ok, hashes,
    ref_hash,
};
use common::rest::message;
use serde_json::json;

// ---------------------------------------------------------------------------------------------
// Catalogs

#[tokio::test]
async fn catalogs_are_listed_and_an_unknown_catalog_is_404_everywhere() {
    let env = env().await;
    let app = &env.app;
    let body = get_ok(app, "/api/v1/catalogs").await;
    assert_eq!(
        body,
        json!({"catalogs": [{"name": "lake", "default-branch": "main", "warehouse": "files"}]})
    );

    let head = ref_hash(app, "main").await;
    // Every route family, with input that would be fine in `lake`.
    for catalog in ["nope", "lake@main"] {
        let base = format!("/api/v1/catalogs/{catalog}");
        let requests = [
            (Method::GET, format!("{base}/refs"), None),
            (
                Method::POST,
                format!("{base}/refs"),
                Some(json!({"name": "x", "type": "branch"})),
            ),
            (Method::GET, format!("{base}/refs/main"), None),
            (
                Method::PUT,
                format!("{base}/refs/main"),
                Some(json!({"to": "main", "expected-hash": head})),
            ),
            (Method::DELETE, format!("{base}/refs/x"), None),
            (Method::GET, format!("{base}/refs/main/log"), None),
            (Method::GET, format!("{base}/log"), None),
            (Method::GET, format!("{base}/commits/main"), None),
            (Method::GET, format!("{base}/diff?from=main&to=main"), None),
            (Method::GET, format!("{base}/entries"), None),
            (
                Method::POST,
                format!("{base}/merge"),
                Some(json!({"source": "main"})),
            ),
            (
                Method::POST,
                format!("{base}/cherry-pick"),
                Some(json!({"commits": ["main"]})),
            ),
            (
                Method::POST,
                format!("{base}/revert"),
                Some(json!({"commit": "main"})),
            ),
        ];
        for (method, uri, body) in requests {
            let label = format!("{method} {uri}");
            let (status, answer) = call(app, method, &uri, body).await;
            assert_error(
                status,
                &answer,
                StatusCode::NOT_FOUND,
                "NoSuchCatalogException",
            );
            assert!(message(&answer).contains(catalog), "{label}: {answer}");
        }
    }
    // Nothing was created or moved in `lake`.
    assert_eq!(ref_hash(app, "main").await, head);
    let refs = get_ok(app, &format!("{API}/refs")).await;
    assert_eq!(hashes(&refs["refs"]), [head]);
}

#[tokio::test]
async fn the_openapi_document_describes_every_management_route() {
    let env = env().await;
    let body = get_ok(&env.app, "/api/v1/openapi.json").await;
    assert!(
        body["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        body["openapi"]
    );
    let paths = &body["paths"];
    for (path, methods) in [
        ("/api/v1/catalogs", &["get"][..]),
        ("/api/v1/catalogs/{catalog}/refs", &["get", "post"]),
        (
            "/api/v1/catalogs/{catalog}/refs/{name}",
            &["get", "put", "delete"],
        ),
        ("/api/v1/catalogs/{catalog}/refs/{name}/log", &["get"]),
        ("/api/v1/catalogs/{catalog}/log", &["get"]),
        ("/api/v1/catalogs/{catalog}/commits/{reference}", &["get"]),
        ("/api/v1/catalogs/{catalog}/diff", &["get"]),
        ("/api/v1/catalogs/{catalog}/entries", &["get"]),
        ("/api/v1/catalogs/{catalog}/merge", &["post"]),
        ("/api/v1/catalogs/{catalog}/cherry-pick", &["post"]),
        ("/api/v1/catalogs/{catalog}/revert", &["post"]),
    ] {
        for method in methods {
            assert!(
                paths[path][method].is_object(),
                "{method} {path} is not described"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Bodies

#[tokio::test]
async fn bodies_with_unknown_fields_or_bad_json_are_refused() {
    let env = env().await;
    let app = &env.app;
    create_ref(app, "dev", "branch", None).await;
    create_table(app, "lake@dev", "t").await;
    let (main, dev) = (ref_hash(app, "main").await, ref_hash(app, "dev").await);
    let routes = [
        (Method::POST, format!("{API}/refs"), json!({"name": "x"})),
        (
            Method::PUT,
            format!("{API}/refs/dev"),
            json!({"to": "main", "expected-hash": dev}),
        ),
        (
            Method::POST,
            format!("{API}/merge"),
            json!({"source": "dev"}),
        ),
        (
            Method::POST,
            format!("{API}/cherry-pick"),
            json!({"commits": ["dev"]}),
        ),
        (
            Method::POST,
            format!("{API}/revert"),
            json!({"commit": "main"}),
        ),
    ];
    for (method, uri, good) in &routes {
        let mut unknown = good.clone();
        unknown["surprise"] = json!(1);
        let mut wrong_type = good.clone();
        let first = good.as_object().unwrap().keys().next().unwrap().clone();
        wrong_type[&first] = json!(42);
        let bodies = [
            unknown.to_string(),
            wrong_type.to_string(),
            "{".to_owned(),
            "not json".to_owned(),
            "[]".to_owned(),
            "null".to_owned(),
            String::new(),
        ];
        for body in bodies {
            let (status, answer) = call_raw(app, method.clone(), uri, Some(body.clone())).await;
            assert_eq!(
                status,
                StatusCode::BAD_REQUEST,
                "{method} {uri} {body:?}: {answer}"
            );
            assert_bad_request(status, &answer);
        }
        // No body at all (no content type): still a bad request.
        let (status, answer) = call_raw(app, method.clone(), uri, None).await;
        assert_bad_request(status, &answer);
    }
    assert_eq!(ref_hash(app, "main").await, main);
    assert_eq!(ref_hash(app, "dev").await, dev);
    let refs = get_ok(app, &format!("{API}/refs")).await;
    assert_eq!(refs["refs"].as_array().unwrap().len(), 2);
}
