//! Service users and their API keys through the administration API: a key's secret is shown
//! once, keys expire, rotate with or without a grace period and are revoked, and no secret
//! reaches another answer or the audit log.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::admin::{as_, env, error_type, names, raw, token};
use serde_json::json;

fn secret_of(key: &str) -> String {
    key.rsplit('_').next().unwrap().to_owned()
}

#[tokio::test]
async fn api_keys_are_shown_once_rotated_and_revoked() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/service-users",
        Some(json!({"name": "loader"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["id"], "service:acme/loader");
    for (body, expected) in [
        (json!({"name": "loader"}), StatusCode::CONFLICT),
        (json!({"name": "a b"}), StatusCode::BAD_REQUEST),
        (json!({"name": "x", "admin": true}), StatusCode::BAD_REQUEST),
    ] {
        let (status, answer) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/service-users",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    let mut answers = Vec::new();
    // No body at all is a key that never expires.
    let (status, created) = raw(
        &env,
        &admin,
        Method::POST,
        "/api/v1/service-users/loader/keys",
        "",
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(created["expires-at"].is_null());
    let key = created["key"].as_str().unwrap().to_owned();
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["client-id"], id.as_str());
    // The key signs in.
    let (status, body) = as_(&env, &key, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["principal"], "service:acme/loader");

    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/service-users/loader/keys",
        Some(json!({"expires-in-seconds": 3600})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(body["expires-at"].is_string());
    let second = body["key"].as_str().unwrap().to_owned();
    for (body, expected) in [
        (json!({"expires-in-seconds": 0}), StatusCode::BAD_REQUEST),
        (json!({"expires-in-seconds": -5}), StatusCode::BAD_REQUEST),
        (
            json!({"expires-in-seconds": "soon"}),
            StatusCode::BAD_REQUEST,
        ),
        (json!({"lifetime": 5}), StatusCode::BAD_REQUEST),
    ] {
        let (status, answer) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/service-users/loader/keys",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/service-users/ghost/keys",
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_type(&body), "NoSuchServiceUserException");

    let (status, listed) = as_(
        &env,
        &admin,
        Method::GET,
        "/api/v1/service-users/loader/keys",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["keys"].as_array().unwrap().len(), 2);
    answers.push(listed);
    let (_, body) = as_(&env, &admin, Method::GET, "/api/v1/service-users", None).await;
    assert_eq!(names(&body, "service-users", "name"), ["loader"]);
    answers.push(body);
    let (_, body) = as_(
        &env,
        &admin,
        Method::GET,
        "/api/v1/service-users/loader",
        None,
    )
    .await;
    answers.push(body);

    // Rotating: the new key is shown once; the old one stops at once without a grace period.
    let (status, rotated) = as_(
        &env,
        &admin,
        Method::POST,
        &format!("/api/v1/service-users/loader/keys/{id}/rotate"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{rotated}");
    let new_key = rotated["key"].as_str().unwrap().to_owned();
    assert_ne!(new_key, key);
    let (status, _) = as_(&env, &key, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = as_(&env, &new_key, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::OK);
    // With a grace period the old one keeps working.
    let new_id = rotated["id"].as_str().unwrap().to_owned();
    let (status, graced) = as_(
        &env,
        &admin,
        Method::POST,
        &format!("/api/v1/service-users/loader/keys/{new_id}/rotate"),
        Some(json!({"grace-seconds": 600})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = as_(&env, &new_key, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::OK);

    // Revoking the second key.
    let second_id = second.split('_').nth(1).unwrap();
    let (status, body) = as_(
        &env,
        &admin,
        Method::DELETE,
        &format!("/api/v1/service-users/loader/keys/{second_id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["revoked-at"].is_string());
    answers.push(body);
    let (status, _) = as_(&env, &second, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = as_(
        &env,
        &admin,
        Method::DELETE,
        "/api/v1/service-users/loader/keys/0123456789abcdef",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The secrets appear in their creation answers and nowhere else.
    for key in [
        &key,
        &second,
        &new_key,
        &graced["key"].as_str().unwrap().to_owned(),
    ] {
        for answer in &answers {
            assert!(!answer.to_string().contains(&secret_of(key)), "{answer}");
        }
    }

    // Nor in the audit log, which records every one of these changes.
    let root = token(&env, "root").await;
    let (status, audit) = as_(
        &env,
        &root,
        Method::GET,
        "/api/v1/audit?page-size=1000",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let text = audit.to_string();
    for action in [
        "service-user.create",
        "api-key.create",
        "api-key.rotate",
        "api-key.revoke",
    ] {
        assert!(text.contains(action), "{action} is not audited");
    }
    for key in [&key, &second, &new_key] {
        assert!(!text.contains(&secret_of(key)));
    }

    // Deleting the service user takes its keys.
    let graced_key = graced["key"].as_str().unwrap();
    let (status, _) = as_(
        &env,
        &admin,
        Method::DELETE,
        "/api/v1/service-users/loader",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = as_(&env, graced_key, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = as_(
        &env,
        &admin,
        Method::GET,
        "/api/v1/service-users/loader",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
