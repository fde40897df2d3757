//! Administering a tenant from the web UI: users, service users and their keys, roles and
//! warehouses.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use axum::http::{Method, StatusCode, header};
use common::secured::{PASSWORD, secured};
use common::ui::{csrf_of, fetch, sign_in, ui_session};
use pangolin_identity::SystemClock;

#[tokio::test]
async fn a_tenant_admin_manages_users_service_users_and_keys() {
    let env = secured(
        &[("acme", "boss", true), ("acme", "reader", false)],
        vec![],
        Arc::new(SystemClock),
    )
    .await;
    let app = &env.app;
    let cookie = ui_session(
        app,
        &format!("tenant=acme&username=boss&password={PASSWORD}"),
    )
    .await;
    let get = |uri: &'static str| {
        let cookie = cookie.clone();
        async move { fetch(app, Method::GET, uri, None, Some(&cookie)).await }
    };
    let (status, _, users) = get("/ui/admin/users").await;
    assert_eq!(status, StatusCode::OK, "{users}");
    assert!(users.contains("user:acme/reader"), "{users}");
    let csrf = csrf_of(&users);
    let form = format!("csrf={csrf}&username=ana&password={PASSWORD}");
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/admin/users",
        Some(&form),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    let form = format!("csrf={csrf}&disabled=true");
    let (status, _, _) = fetch(
        app,
        Method::POST,
        "/ui/admin/users/ana/disabled",
        Some(&form),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, _, users) = get("/ui/admin/users").await;
    assert!(
        users.contains("user:acme/ana") && users.contains(">disabled<"),
        "{users}"
    );
    // A disabled user cannot sign in.
    let (status, _, _) = sign_in(
        app,
        &format!("tenant=acme&username=ana&password={PASSWORD}"),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // A service user and a key, whose secret is shown once.
    let (status, _, _) = fetch(
        app,
        Method::POST,
        "/ui/admin/service-users",
        Some(&format!("csrf={csrf}&name=etl")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, headers, created) = fetch(
        app,
        Method::POST,
        "/ui/admin/service-users/etl/keys",
        Some(&format!("csrf={csrf}")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    let key = created
        .split("<code>pgl_")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .map(|rest| format!("pgl_{rest}"))
        .expect("the new key is shown");
    let (_, _, keys) = get("/ui/admin/service-users/etl/keys").await;
    assert!(!keys.contains(&key), "the secret is never shown again");
    // The key signs the service user in to the UI.
    let service = ui_session(app, &format!("api_key={key}")).await;
    let (status, _, index) = fetch(app, Method::GET, "/ui", None, Some(&service)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(index.contains("service:acme/etl"), "{index}");

    let (status, _, warehouses) = get("/ui/admin/warehouses").await;
    assert_eq!(status, StatusCode::OK, "{warehouses}");
    assert!(warehouses.contains("files"), "{warehouses}");
    // A warehouse (its secret never shown) and a catalog on it.
    let root = format!("file://{}/ui-lake", env.dir.path().display());
    let storage = format!(r#"{{"type": "local", "root": "{root}"}}"#);
    let form = format!("csrf={csrf}&name=ui_wh&storage={}", url_encode(&storage));
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/admin/warehouses",
        Some(&form),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    let s3 = r#"{"type": "s3", "bucket": "lake", "region": "eu-west-1"}"#;
    let credentials = r#"{"type": "s3", "access-key-id": "AKIAEXAMPLE", "secret-access-key": "very-secret-value"}"#;
    let form = format!(
        "csrf={csrf}&name=s3_wh&storage={}&credentials={}",
        url_encode(s3),
        url_encode(credentials)
    );
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/admin/warehouses",
        Some(&form),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    let (_, _, listed) = get("/ui/admin/warehouses").await;
    assert!(
        listed.contains("ui_wh") && listed.contains("s3_wh"),
        "{listed}"
    );
    assert!(
        !listed.contains("very-secret-value"),
        "secrets are never shown"
    );
    let (status, headers, text) = fetch(
        app,
        Method::POST,
        "/ui/admin/catalogs",
        Some(&format!("csrf={csrf}&name=ui_cat&warehouse=ui_wh")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    assert_eq!(headers[header::LOCATION], "/ui/catalogs/ui_cat");
    let (status, _, refs) =
        fetch(app, Method::GET, "/ui/catalogs/ui_cat", None, Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK, "{refs}");
    let (status, _, roles) = get("/ui/admin/roles").await;
    assert_eq!(status, StatusCode::OK, "{roles}");

    // A role made and bound from the pages lets the reader read the catalog; unbound, no more.
    let grants = r#"[{"privilege":"read","resource":{"type":"catalog","catalog":"lake"}}]"#;
    let form = format!("csrf={csrf}&name=viewers&grants={}", url_encode(grants));
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/admin/roles",
        Some(&form),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    let (_, _, roles) = get("/ui/admin/roles").await;
    assert!(roles.contains("viewers"), "{roles}");
    let bind = |flag: &str| format!("csrf={csrf}&principal=user%3Aacme%2Freader&bind={flag}");
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/admin/roles/viewers/members",
        Some(&bind("true")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    let (_, _, members) = get("/ui/admin/roles/viewers").await;
    assert!(members.contains("user:acme/reader"), "{members}");
    let reader = ui_session(
        app,
        &format!("tenant=acme&username=reader&password={PASSWORD}"),
    )
    .await;
    let (status, _, _) = fetch(app, Method::GET, "/ui/catalogs/lake", None, Some(&reader)).await;
    assert_eq!(status, StatusCode::OK, "bound: the reader reads");
    let (status, _, _) = fetch(
        app,
        Method::POST,
        "/ui/admin/roles/viewers/members",
        Some(&bind("false")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, _, _) = fetch(app, Method::GET, "/ui/catalogs/lake", None, Some(&reader)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "unbound: no more");
    // A role granting more than its maker holds is refused (the API's anti-escalation check).
    let too_much = r#"[{"privilege":"read-audit","resource":{"type":"tenant"}}]"#;
    let reader_csrf = {
        let (_, _, page) = fetch(app, Method::GET, "/ui", None, Some(&reader)).await;
        csrf_of(&page)
    };
    let (status, _, _) = fetch(
        app,
        Method::POST,
        "/ui/admin/roles",
        Some(&format!(
            "csrf={reader_csrf}&name=sneaky&grants={}",
            url_encode(too_much)
        )),
        Some(&reader),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // A revoked key signs in no more.
    let (_, _, keys) = get("/ui/admin/service-users/etl/keys").await;
    let revoke = keys
        .split(r#"action="/ui/admin/service-users/etl/keys/"#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(|rest| format!("/ui/admin/service-users/etl/keys/{rest}"))
        .expect("a revoke form");
    let (status, _, _) = fetch(
        app,
        Method::POST,
        &revoke,
        Some(&format!("csrf={csrf}")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, _, _) = fetch(app, Method::GET, "/ui", None, Some(&service)).await;
    assert_eq!(
        status,
        StatusCode::SEE_OTHER,
        "the revoked key's session is over"
    );

    // Forms need the CSRF token, and a reader may not administer.
    let (status, _, _) = fetch(
        app,
        Method::POST,
        "/ui/admin/users",
        Some(&format!("csrf=forged&username=eve&password={PASSWORD}")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let reader = ui_session(
        app,
        &format!("tenant=acme&username=reader&password={PASSWORD}"),
    )
    .await;
    let (status, _, _) = fetch(app, Method::GET, "/ui/admin/users", None, Some(&reader)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

/// A form value, percent-encoded.
fn url_encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
