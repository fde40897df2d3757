//! Roles through the administration API: grants checked on the way in, versioned changes,
//! members bound and unbound, and every attempt to grant or bind more than the caller holds
//! refused.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::admin::{as_, env, error_type, login, names, token};
use common::secured::PASSWORD;
use common::send;
use serde_json::{Value, json};

#[tokio::test]
async fn roles_are_created_changed_bound_and_deleted() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    let role = json!({
        "name": "analysts",
        "grants": [
            {"privilege": "read", "resource": {"type": "catalog", "catalog": "lake"}},
            {"privilege": "write", "branches": "dev*",
             "resource": {"type": "namespace", "catalog": "lake", "namespace": ["a", "b"]}},
            {"privilege": "read-audit", "resource": {"type": "tenant"}},
            {"privilege": "drop",
             "resource": {"type": "table", "catalog": "lake", "namespace": ["a"], "name": "t"}},
        ],
    });
    let (status, body) = as_(&env, &admin, Method::POST, "/api/v1/roles", Some(role)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["version"], 1);
    assert_eq!(body["grants"][1]["branches"], "dev*");
    assert_eq!(body["grants"][0]["branches"], "*");
    assert!(body["grants"][2].get("branches").is_none());
    for (body, expected) in [
        (
            json!({"name": "analysts", "grants": []}),
            StatusCode::CONFLICT,
        ),
        (
            json!({"name": "bad name", "grants": []}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "grants": [{"privilege": "fly", "resource": {"type": "tenant"}}]}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "grants": [{"privilege": "read", "resource": {"type": "catalog"}}]}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "grants": [{"privilege": "read",
                   "resource": {"type": "namespace", "catalog": "lake", "namespace": []}}]}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "grants": [{"privilege": "read",
                   "resource": {"type": "catalog", "catalog": "lake", "tenant": "globex"}}]}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "grants": [{"privilege": "read", "branches": "a*b",
                   "resource": {"type": "catalog", "catalog": "lake"}}]}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "grants": [{"privilege": "manage-users", "branches": "main",
                   "resource": {"type": "tenant"}}]}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (status, answer) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/roles",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    let (_, body) = as_(&env, &admin, Method::GET, "/api/v1/roles?page-size=2", None).await;
    assert_eq!(names(&body, "roles", "name"), ["a-granters", "analysts"]);
    assert!(body["next-page-token"].is_string());

    // Changing needs the version read.
    let change = |version: u64| {
        json!({"grants": [{"privilege": "read", "resource": {"type": "catalog", "catalog": "lake"}}],
               "version": version})
    };
    let (status, body) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/roles/analysts",
        Some(change(1)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["version"], 2);
    let (status, body) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/roles/analysts",
        Some(change(1)),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, _) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/roles/ghost",
        Some(change(1)),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Members: bound by percent-encoded principal id.
    let (status, body) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/roles/analysts/members/user%3Aacme%2Fnobody",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let nobody = token(&env, "nobody").await;
    let (status, _) = as_(&env, &nobody, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = as_(
        &env,
        &admin,
        Method::GET,
        "/api/v1/roles/analysts/members",
        None,
    )
    .await;
    assert_eq!(body["members"], json!(["user:acme/nobody"]));
    for (uri, expected) in [
        (
            "/api/v1/roles/analysts/members/user%3Aacme%2Fghost",
            StatusCode::NOT_FOUND,
        ),
        (
            "/api/v1/roles/ghost/members/user%3Aacme%2Fnobody",
            StatusCode::NOT_FOUND,
        ),
        (
            "/api/v1/roles/analysts/members/nonsense",
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (status, body) = as_(&env, &admin, Method::PUT, uri, None).await;
        assert_eq!(status, expected, "{uri}: {body}");
    }
    let (status, _) = as_(
        &env,
        &admin,
        Method::DELETE,
        "/api/v1/roles/analysts/members/user%3Aacme%2Fnobody",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = as_(&env, &nobody, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_(
        &env,
        &admin,
        Method::DELETE,
        "/api/v1/roles/analysts/members/user%3Aacme%2Fnobody",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Deleting a role drops its bindings: the same name created again applies to nobody.
    let (status, _) = as_(
        &env,
        &admin,
        Method::DELETE,
        "/api/v1/roles/readers?version=9",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = as_(&env, &admin, Method::DELETE, "/api/v1/roles/readers", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/roles",
        Some(json!({"name": "readers", "grants": [
            {"privilege": "read", "resource": {"type": "catalog", "catalog": "lake"}}]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let reader = token(&env, "reader").await;
    let (status, _) = as_(&env, &reader, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_(&env, &admin, Method::GET, "/api/v1/roles/ghost", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn escalation_attempts_are_refused() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    // A tenant admin creates no tenant.
    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/tenants",
        Some(json!({"name": "mine"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error_type(&body), "ForbiddenException");
    // Nor a root user: an admin it creates administers its own tenant only, whatever tenant
    // header it sends.
    let auth = format!("Bearer {admin}");
    let (status, _, body) = send(
        &env.app,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "boss", "password": PASSWORD, "admin": true}).to_string()),
        &[("authorization", &auth), ("x-pangolin-tenant", "~")],
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["id"], "user:acme/boss");
    assert_eq!(
        login(&env, None, "boss", PASSWORD).await,
        StatusCode::UNAUTHORIZED
    );
    let boss = token(&env, "boss").await;
    let (_, body) = as_(&env, &boss, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(body["root"], false);
    let (status, _) = as_(&env, &boss, Method::GET, "/api/v1/tenants", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // ManageUsers is not admin: no admin created, and no admin touched.
    let usermgr = token(&env, "usermgr").await;
    let (status, body) = as_(
        &env,
        &usermgr,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "sneaky", "password": PASSWORD, "admin": true})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = as_(&env, &usermgr, Method::GET, "/api/v1/users/sneaky", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for (method, uri, body) in [
        (
            Method::PUT,
            "/api/v1/users/admin/password",
            Some(json!({"password": "taken-over-password"})),
        ),
        (
            Method::PUT,
            "/api/v1/users/admin/disabled",
            Some(json!({"disabled": true})),
        ),
        (Method::DELETE, "/api/v1/users/admin", None),
    ] {
        let (status, answer) = as_(&env, &usermgr, method.clone(), uri, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {uri}: {answer}");
    }
    assert_eq!(
        login(&env, Some("acme"), "admin", PASSWORD).await,
        StatusCode::OK
    );
    // Ordinary users are its business.
    let (status, _) = as_(
        &env,
        &usermgr,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "plain", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    // Nor does it reach roles.
    let (status, _) = as_(
        &env,
        &usermgr,
        Method::PUT,
        "/api/v1/roles/user-managers/members/user%3Aacme%2Fplain",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // ManageGrants on namespace `a` grants on `a` and below, never on the catalog.
    let nsgranter = token(&env, "nsgranter").await;
    let on = |resource: Value, name: &str| json!({"name": name, "grants": [{"privilege": "read", "resource": resource}]});
    let (status, body) = as_(
        &env,
        &nsgranter,
        Method::POST,
        "/api/v1/roles",
        Some(on(json!({"type": "catalog", "catalog": "lake"}), "wide")),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(error_type(&body), "ForbiddenException");
    let (status, body) = as_(
        &env,
        &nsgranter,
        Method::POST,
        "/api/v1/roles",
        Some(on(
            json!({"type": "namespace", "catalog": "lake", "namespace": ["a", "b"]}),
            "narrow",
        )),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // Nor may it widen a role it can see into the catalog.
    let (status, _) = as_(
        &env,
        &nsgranter,
        Method::PUT,
        "/api/v1/roles/narrow",
        Some(json!({"grants": [{"privilege": "read",
                   "resource": {"type": "catalog", "catalog": "lake"}}], "version": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Roles bind to principals of their own tenant only, even for the tenant admin.
    let (status, body) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/roles/readers/members/user%3Aglobex%2Fbob",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // Holding Write on `dev*` only, Write on `*` cannot be granted; on `dev-x*` it can.
    let devlead = token(&env, "devlead").await;
    let write_at = |branches: &str, name: &str| {
        json!({"name": name, "grants": [{"privilege": "write", "branches": branches,
               "resource": {"type": "catalog", "catalog": "lake"}}]})
    };
    let (status, body) = as_(
        &env,
        &devlead,
        Method::POST,
        "/api/v1/roles",
        Some(write_at("*", "all-writers")),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = as_(
        &env,
        &devlead,
        Method::POST,
        "/api/v1/roles",
        Some(write_at("main", "main-writers")),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = as_(
        &env,
        &devlead,
        Method::POST,
        "/api/v1/roles",
        Some(write_at("dev-x*", "x-writers")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // And it may bind what it could grant, but not a role holding more than it does.
    let (status, _) = as_(
        &env,
        &devlead,
        Method::PUT,
        "/api/v1/roles/x-writers/members/user%3Aacme%2Fnobody",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = as_(
        &env,
        &devlead,
        Method::PUT,
        "/api/v1/roles/readers/members/user%3Aacme%2Fnobody",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}
