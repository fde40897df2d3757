//! The web UI's sessions through an identity provider: the provider's refresh token waits in a
//! sealed cookie and renews the session once its access token is refused. Here, through the
//! real router and node-oidc-provider (`PANGOLIN_TEST_OIDC_ISSUER`), the ways a renewal ends:
//! refused by the provider (audited, cookie cleared), a cookie this server cannot open (cleared,
//! the provider never asked), a provider that cannot be reached (503, cookie kept). The renewal
//! that works needs a person's refresh token and is tested with a real browser in
//! `tests/pyiceberg/test_oidc.py`.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use axum::http::{HeaderMap, Method, StatusCode, header};
use common::secured::{ROOT_PASSWORD, Secured, secured_with, send_as, sign_in};
use common::send;
use pangolin_api::security::external::{BrowserClient, ProviderConfig, Providers};
use pangolin_api::ui::provider_session::{REFRESH_COOKIE, sealed_refresh};
use pangolin_catalog::tenancy::SecretKey;
use pangolin_identity::SystemClock;
use pangolin_oidc::IssuerSettings;
use serde_json::Value;

fn provider() -> Option<String> {
    common::started_service("PANGOLIN_TEST_OIDC_ISSUER", "the OpenID Connect provider")
}

fn browser() -> Option<BrowserClient> {
    Some(BrowserClient {
        client_id: "pangolin-ui".into(),
        client_secret: Some("pangolin-ui-secret".into()),
        scopes: vec!["openid".into(), "offline_access".into()],
    })
}

/// Tenant `acme` signs people in to the UI through the test provider; tenant `globex` through
/// a provider nothing listens for.
async fn env(issuer: &str) -> Secured {
    let providers = Providers::new(vec![
        ProviderConfig {
            tenant: "acme".into(),
            name: "idp".into(),
            settings: IssuerSettings::new(issuer, vec!["pangolin".into()]),
            cli: None,
            browser: browser(),
            admin_groups: Vec::new(),
        },
        ProviderConfig {
            tenant: "globex".into(),
            name: "down".into(),
            settings: IssuerSettings::new("http://127.0.0.1:9", vec!["pangolin".into()]),
            cli: None,
            browser: browser(),
            admin_groups: Vec::new(),
        },
    ])
    .unwrap();
    secured_with(&[], Vec::new(), Arc::new(SystemClock), providers).await
}

/// A refresh cookie of `scope`'s provider holding `refresh_token`, sealed under `key`.
fn refresh_cookie(env: &Secured, key: &SecretKey, scope: &str, refresh_token: &str) -> String {
    let provider = env.security.external.of_scope(scope).next().unwrap();
    let value = sealed_refresh(key, provider, refresh_token).unwrap();
    format!("{REFRESH_COOKIE}={value}")
}

/// A UI page asked for with only `cookie`: the status, where it sends the browser, and the
/// cookies it sets.
async fn page_with(env: &Secured, cookie: &str) -> (StatusCode, String, Vec<String>) {
    let (status, headers, _) = send(
        &env.app,
        Method::GET,
        "/ui/catalogs/lake",
        None,
        &[("cookie", cookie)],
    )
    .await;
    (status, location(&headers), set_cookies(&headers))
}

fn location(headers: &HeaderMap) -> String {
    headers
        .get(header::LOCATION)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

fn set_cookies(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

fn clears_refresh(cookies: &[String]) -> bool {
    cookies
        .iter()
        .any(|c| c.starts_with(&format!("{REFRESH_COOKIE}=;")) && c.contains("Max-Age=0"))
}

async fn renewals_audited(env: &Secured, tenant: &str) -> Vec<Value> {
    let (_, root) = sign_in(&env.app, None, "root", ROOT_PASSWORD).await;
    let root = root["access_token"].as_str().unwrap().to_owned();
    let (status, audit) = send_as(
        &env.app,
        &root,
        Method::GET,
        "/api/v1/audit?page-size=1000",
        None,
        &[("x-pangolin-tenant", tenant)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "ui.renew-oidc")
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_refresh_token_the_provider_refuses_ends_the_session_and_is_audited() {
    let Some(issuer) = provider() else { return };
    let env = env(&issuer).await;
    let cookie = refresh_cookie(&env, env.tenancy.key(), "acme", "not-a-refresh-token");
    let (status, to, cookies) = page_with(&env, &cookie).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(to.starts_with("/ui/login?next="), "{to}");
    assert!(clears_refresh(&cookies), "{cookies:?}");
    assert!(
        !cookies.iter().any(|c| c.starts_with("pangolin_session=")),
        "{cookies:?}"
    );
    let audited = renewals_audited(&env, "acme").await;
    assert_eq!(audited.len(), 1, "{audited:#?}");
    assert_eq!(audited[0]["outcome"], "denied", "{audited:#?}");
    assert_eq!(audited[0]["details"]["provider"], "idp");
    let reason = audited[0]["details"]["reason"].as_str().unwrap();
    assert!(reason.contains("invalid_grant"), "{reason}");
    assert!(!audited[0].to_string().contains("not-a-refresh-token"));
}

#[tokio::test]
async fn a_refresh_cookie_this_server_cannot_open_ends_the_session_without_asking_the_provider() {
    let Some(issuer) = provider() else { return };
    let env = env(&issuer).await;
    let sealed = refresh_cookie(&env, env.tenancy.key(), "acme", "rt");
    let (name, value) = sealed.split_once('=').unwrap();
    let mut flipped = value.as_bytes().to_vec();
    let last = flipped.len() - 1;
    flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
    let cookies = [
        format!("{name}={}", String::from_utf8(flipped).unwrap()),
        refresh_cookie(&env, &SecretKey::generate(), "acme", "rt"),
        format!("{REFRESH_COOKIE}=not-base64!"),
        format!("{REFRESH_COOKIE}=AAAA"),
    ];
    for cookie in cookies {
        let (status, to, set) = page_with(&env, &cookie).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{cookie}");
        assert!(to.starts_with("/ui/login?next="), "{to}");
        assert!(clears_refresh(&set), "{cookie}: {set:?}");
    }
    assert!(renewals_audited(&env, "acme").await.is_empty());
}

#[tokio::test]
async fn an_unreachable_provider_keeps_the_session_for_a_later_try() {
    let Some(issuer) = provider() else { return };
    let env = env(&issuer).await;
    let cookie = refresh_cookie(&env, env.tenancy.key(), "globex", "rt");
    let (status, _, set) = page_with(&env, &cookie).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(!clears_refresh(&set), "{set:?}");
}

#[tokio::test]
async fn the_api_takes_no_session_from_cookies() {
    let Some(issuer) = provider() else { return };
    let env = env(&issuer).await;
    let cookie = refresh_cookie(&env, env.tenancy.key(), "acme", "rt");
    let (status, headers, _) = send(
        &env.app,
        Method::GET,
        "/api/v1/whoami",
        None,
        &[("cookie", &cookie)],
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(set_cookies(&headers).is_empty());
    assert!(renewals_audited(&env, "acme").await.is_empty());
}
