//! Users through the administration API: created, listed, reset, changing their own password,
//! disabled and deleted, with the tokens and roles of the old account gone with it.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::admin::{as_, env, error_type, login, names, token, token_with};
use common::secured::PASSWORD;
use serde_json::json;

#[tokio::test]
async fn users_are_created_reset_disabled_and_deleted() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "carol", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["id"], "user:acme/carol");
    assert_eq!(body["admin"], false);
    assert!(!body.to_string().contains(PASSWORD));
    for (body, expected) in [
        (
            json!({"username": "carol", "password": PASSWORD}),
            StatusCode::CONFLICT,
        ),
        (
            json!({"username": "dave", "password": "short"}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"username": "dave", "password": "x".repeat(73)}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"username": "d/e", "password": PASSWORD}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"username": "dave", "password": PASSWORD, "root": true}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (status, answer) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/users",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    let (_, body) = as_(&env, &admin, Method::GET, "/api/v1/users?page-size=2", None).await;
    assert_eq!(names(&body, "users", "username"), ["admin", "carol"]);
    assert!(body["next-page-token"].is_string());
    let (status, body) = as_(&env, &admin, Method::GET, "/api/v1/users/carol", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["disabled"], false);
    let text = body.to_string();
    assert!(!text.contains("$2") && !text.contains("hash"), "{text}");

    // A reset: the old password and the tokens issued before stop working.
    let carol = token_with(&env, Some("acme"), "carol", PASSWORD).await;
    let (status, _) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/users/carol/password",
        Some(json!({"password": "short"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/users/carol/password",
        Some(json!({"password": "another-long-password"})),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        login(&env, Some("acme"), "carol", PASSWORD).await,
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = as_(&env, &carol, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Carol changes her own password: the current one must be right.
    let carol = token_with(&env, Some("acme"), "carol", "another-long-password").await;
    let (status, body) = as_(
        &env,
        &carol,
        Method::POST,
        "/api/v1/me/password",
        Some(json!({"current": "not-the-password", "new": "a-third-long-password"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = as_(
        &env,
        &carol,
        Method::POST,
        "/api/v1/me/password",
        Some(json!({"current": "another-long-password", "new": "short"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = as_(
        &env,
        &carol,
        Method::POST,
        "/api/v1/me/password",
        Some(json!({"current": "another-long-password", "new": "a-third-long-password"})),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        login(&env, Some("acme"), "carol", "a-third-long-password").await,
        StatusCode::OK
    );

    // Disabled, she cannot sign in; enabled again, she can.
    let (status, body) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/users/carol/disabled",
        Some(json!({"disabled": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["disabled"], true);
    assert_eq!(
        login(&env, Some("acme"), "carol", "a-third-long-password").await,
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/users/carol/disabled",
        Some(json!({"disabled": "no"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/users/carol/disabled",
        Some(json!({"disabled": false})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        login(&env, Some("acme"), "carol", "a-third-long-password").await,
        StatusCode::OK
    );

    let (status, _) = as_(&env, &admin, Method::DELETE, "/api/v1/users/carol", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = as_(&env, &admin, Method::GET, "/api/v1/users/carol", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_type(&body), "NoSuchUserException");
    let (status, _) = as_(&env, &admin, Method::DELETE, "/api/v1/users/carol", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_deleted_user_created_again_has_no_roles() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    let (status, _) = as_(&env, &admin, Method::DELETE, "/api/v1/users/reader", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, body) = as_(
        &env,
        &admin,
        Method::GET,
        "/api/v1/roles/readers/members",
        None,
    )
    .await;
    assert_eq!(body["members"], json!([]));
    let (status, _) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "reader", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let reader = token(&env, "reader").await;
    let (status, _) = as_(&env, &reader, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}
