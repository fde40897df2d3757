//! Tenants through the administration API: root creates them with a first admin, lists them
//! in pages, describes, changes and deletes them, and bad requests leave nothing behind.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::admin::{as_, env, error_type, login, names, raw, token, token_with};
use common::secured::PASSWORD;
use serde_json::json;

#[tokio::test]
async fn root_creates_lists_describes_and_deletes_tenants() {
    let env = env().await;
    let root = token(&env, "root").await;
    let (status, body) = as_(
        &env,
        &root,
        Method::POST,
        "/api/v1/tenants",
        Some(json!({"name": "initech", "description": "printers",
                    "admin": {"username": "peter", "password": PASSWORD}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["name"], "initech");
    assert_eq!(body["admin"], "user:initech/peter");
    assert!(!body.to_string().contains(PASSWORD));
    // The first admin signs in and administers the new tenant.
    let peter = token_with(&env, Some("initech"), "peter", PASSWORD).await;
    let (status, body) = as_(&env, &peter, Method::GET, "/api/v1/users", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(names(&body, "users", "username"), ["peter"]);
    assert_eq!(body["users"][0]["admin"], true);

    // Paged listing: acme, default, globex, initech.
    let (status, first) = as_(
        &env,
        &root,
        Method::GET,
        "/api/v1/tenants?page-size=3",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(
        names(&first, "tenants", "name"),
        ["acme", "default", "globex"]
    );
    let next = first["next-page-token"].as_str().unwrap();
    let (_, second) = as_(
        &env,
        &root,
        Method::GET,
        &format!("/api/v1/tenants?page-size=3&page-token={next}"),
        None,
    )
    .await;
    assert_eq!(names(&second, "tenants", "name"), ["initech"]);
    assert!(second.get("next-page-token").is_none());

    let (status, body) = as_(
        &env,
        &root,
        Method::PATCH,
        "/api/v1/tenants/initech",
        Some(json!({"description": "fax machines"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = as_(&env, &root, Method::GET, "/api/v1/tenants/initech", None).await;
    assert_eq!(body["description"], "fax machines");

    // A tenant with warehouses or catalogs is not deleted.
    let (status, body) = as_(&env, &root, Method::DELETE, "/api/v1/tenants/globex", None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, _) = as_(&env, &root, Method::DELETE, "/api/v1/tenants/initech", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = as_(&env, &root, Method::GET, "/api/v1/tenants/initech", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_type(&body), "NoSuchTenantException");
    // Its users went with it: a tenant created again under the name inherits nobody.
    assert_eq!(
        login(&env, Some("initech"), "peter", PASSWORD).await,
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = as_(&env, &peter, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn bad_tenant_requests_are_refused_and_leave_nothing_behind() {
    let env = env().await;
    let root = token(&env, "root").await;
    for (body, expected) in [
        (json!({"name": "no spaces"}), StatusCode::BAD_REQUEST),
        (json!({"name": ""}), StatusCode::BAD_REQUEST),
        (
            json!({"name": "x", "colour": "red"}),
            StatusCode::BAD_REQUEST,
        ),
        (json!({"description": "nameless"}), StatusCode::BAD_REQUEST),
        (
            json!({"name": "weak", "admin": {"username": "w", "password": "short"}}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "badadmin", "admin": {"username": "no/slash", "password": PASSWORD}}),
            StatusCode::BAD_REQUEST,
        ),
        (json!({"name": "acme"}), StatusCode::CONFLICT),
    ] {
        let (status, answer) = as_(
            &env,
            &root,
            Method::POST,
            "/api/v1/tenants",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    for name in ["weak", "badadmin"] {
        let (status, _) = as_(
            &env,
            &root,
            Method::GET,
            &format!("/api/v1/tenants/{name}"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name} was left behind");
    }
    let (status, _) = raw(&env, &root, Method::POST, "/api/v1/tenants", "{not json").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = as_(
        &env,
        &root,
        Method::PATCH,
        "/api/v1/tenants/acme",
        Some(json!({"description": "x", "name": "renamed"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = as_(
        &env,
        &root,
        Method::PATCH,
        "/api/v1/tenants/nowhere",
        Some(json!({"description": "x"})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = as_(
        &env,
        &root,
        Method::GET,
        "/api/v1/tenants?page-size=0",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = as_(
        &env,
        &root,
        Method::GET,
        "/api/v1/tenants?page-token=zz",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}
