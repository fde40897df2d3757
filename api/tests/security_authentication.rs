//! Signing in: tokens for the right password and answers alike for every wrong one, failed
//! sign-ins limited with a retry delay, tokens that are tampered, unsigned, expired or
//! revoked refused, service users signed in by API key and by the OAuth2 client-credentials
//! flow, and no password, key secret or token shown in a response body.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::secured::{PASSWORD, ROOT_PASSWORD};
use common::security::{Secure, as_, login, secure, token};
use common::send;
use pangolin_identity::PrincipalName;
use serde_json::{Value, json};

#[tokio::test]
async fn sign_in_gives_tokens_and_wrong_passwords_look_alike() {
    let env = secure().await;
    let (status, body) = login(&env, Some("acme"), "reader", "wrong-password-123").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status2, body2) = login(&env, Some("acme"), "nobody", "wrong-password-123").await;
    assert_eq!(
        (status, &body["error"]["message"]),
        (status2, &body2["error"]["message"])
    );
    // The same user name in the wrong tenant does not sign in.
    let (status, _) = login(&env, Some("globex"), "reader", PASSWORD).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let token = token(&env, Some("acme"), "reader").await;
    let (status, body) = as_(&env, &token, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["principal"], "user:acme/reader");
    assert_eq!(body["tenant"], "acme");
    assert_eq!(body["root"], false);
}

#[tokio::test]
async fn repeated_failed_sign_ins_are_limited_with_retry_after() {
    let env = secure().await;
    for _ in 0..5 {
        let (status, _) = login(&env, Some("acme"), "reader", "wrong-password-123").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let body = json!({"tenant": "acme", "username": "reader", "password": PASSWORD});
    let (status, headers, value) = send(
        &env.app,
        Method::POST,
        "/api/v1/login",
        Some(body.to_string()),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{value}");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry > 0);
    // Another account is not limited by it.
    let (status, _) = login(&env, Some("acme"), "writer", PASSWORD).await;
    assert_eq!(status, StatusCode::OK);
}

fn b64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[tokio::test]
async fn tampered_unsigned_expired_and_revoked_tokens_are_refused() {
    let env = secure().await;
    let token = token(&env, Some("acme"), "admin").await;
    let whoami = |t: String| {
        let env = &env;
        async move {
            as_(env, &t, Method::GET, "/v1/lake/namespaces", None)
                .await
                .0
        }
    };
    assert_eq!(whoami(token.clone()).await, StatusCode::OK);
    let parts: Vec<&str> = token.split('.').collect();
    // A payload claiming another tenant, with the original signature.
    let forged_payload = b64(br#"{"iss":"pangolin","sub":"user:globex/admin","tenant":"globex","kind":"user","admin":true,"jti":"00000000-0000-4000-8000-000000000000","iat":1,"exp":99999999999,"typ":"access"}"#);
    let tampered = format!("{}.{}.{}", parts[0], forged_payload, parts[2]);
    assert_eq!(whoami(tampered).await, StatusCode::UNAUTHORIZED);
    // The same claims, unsigned.
    let none = format!("{}.{}.", b64(br#"{"alg":"none","typ":"JWT"}"#), parts[1]);
    assert_eq!(whoami(none).await, StatusCode::UNAUTHORIZED);
    // A flipped signature character.
    let mut signature = parts[2].to_owned();
    let last = signature.pop().unwrap();
    signature.push(if last == 'A' { 'B' } else { 'A' });
    assert_eq!(
        whoami(format!("{}.{}.{signature}", parts[0], parts[1])).await,
        StatusCode::UNAUTHORIZED
    );
    // Revoked by logout.
    let second = self::token(&env, Some("acme"), "admin").await;
    let (status, _) = as_(&env, &second, Method::POST, "/api/v1/logout", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(whoami(second).await, StatusCode::UNAUTHORIZED);
    // Expired: two hours later.
    env.clock.advance(Duration::from_secs(2 * 60 * 60));
    assert_eq!(whoami(token).await, StatusCode::UNAUTHORIZED);
}

/// Service user `acme/etl` and the text of a new API key of its.
async fn etl_key(env: &Secure) -> String {
    let tenant = pangolin_identity::TenantName::new("acme").unwrap();
    let etl = PrincipalName::new("etl").unwrap();
    env.identity
        .create_service_user(&tenant, &etl)
        .await
        .unwrap();
    let created = env
        .identity
        .create_api_key(&tenant, &etl, None)
        .await
        .unwrap();
    created.key.expose()
}

#[tokio::test]
async fn service_users_sign_in_with_api_keys_and_client_credentials() {
    let env = secure().await;
    let key = etl_key(&env).await;
    // The key itself as a bearer credential: signed in, but granted nothing yet.
    let (status, body) = as_(&env, &key, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["principal"], "service:acme/etl");
    let (status, _) = as_(&env, &key, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // The OAuth2 client-credentials flow of the Iceberg spec.
    let (_, id, secret) = {
        let mut parts = key.splitn(3, '_');
        (
            parts.next().unwrap().to_owned(),
            parts.next().unwrap().to_owned(),
            parts.next().unwrap().to_owned(),
        )
    };
    let form = format!(
        "grant_type=client_credentials&client_id={id}&client_secret={secret}&scope=catalog"
    );
    let request = axum::http::Request::builder()
        .method(Method::POST)
        .uri("/v1/oauth/tokens")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(axum::body::Body::from(form))
        .unwrap();
    let response = tower::ServiceExt::oneshot(env.app.clone(), request)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["token_type"], "bearer");
    let access = body["access_token"].as_str().unwrap();
    let (status, body) = as_(&env, access, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(
        (status, &body["principal"]),
        (StatusCode::OK, &json!("service:acme/etl"))
    );
    // A wrong secret is an OAuth error.
    let form = format!(
        "grant_type=client_credentials&client_id={id}&client_secret={}",
        "0".repeat(64)
    );
    let request = axum::http::Request::builder()
        .method(Method::POST)
        .uri("/v1/oauth/tokens")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(axum::body::Body::from(form))
        .unwrap();
    let response = tower::ServiceExt::oneshot(env.app.clone(), request)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn no_secret_reaches_a_response_body() {
    let env = secure().await;
    let key = etl_key(&env).await;
    let secret = key.rsplit('_').next().unwrap().to_owned();
    let root = token(&env, None, "root").await;
    for uri in [
        "/api/v1/audit?page-size=1000",
        "/api/v1/whoami",
        "/api/v1/catalogs",
    ] {
        let (_, body) = as_(&env, &root, Method::GET, uri, None).await;
        let text = body.to_string();
        for secret in [ROOT_PASSWORD, PASSWORD, secret.as_str(), root.as_str()] {
            assert!(!text.contains(secret), "{uri} shows a secret");
        }
    }
}

/// bcrypt runs on the blocking pool and nothing there waits for other work on the pool: on a
/// runtime with one blocking thread, sign-ins by password and by API key, several at once, all
/// finish. (A sign-in that waited on the pool for its identity work, while that work queued
/// its hashing behind it, would never finish.)
#[test]
fn sign_ins_need_no_more_than_one_blocking_thread() {
    let (done, finished) = std::sync::mpsc::channel();
    // On a thread of its own: a deadlocked pool also hangs its runtime's shutdown.
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let statuses = runtime.block_on(async {
            let env = secure().await;
            let key = etl_key(&env).await;
            let by_key = (0..3).map(|_| as_(&env, &key, Method::GET, "/api/v1/whoami", None));
            let by_password = (0..3).map(|_| login(&env, Some("acme"), "reader", PASSWORD));
            let (by_key, by_password) = futures::join!(
                futures::future::join_all(by_key),
                futures::future::join_all(by_password)
            );
            by_key
                .into_iter()
                .chain(by_password)
                .map(|(status, _)| status)
                .collect::<Vec<_>>()
        });
        let _ = done.send(statuses);
    });
    // Not a timing check: without it a deadlock would hang the suite instead of failing.
    let statuses = finished
        .recv_timeout(Duration::from_secs(120))
        .expect("the sign-ins finished");
    assert!(
        statuses.iter().all(|s| *s == StatusCode::OK),
        "{statuses:?}"
    );
}
