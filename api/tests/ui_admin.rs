//! Administering a tenant from the web UI: users, service users and their keys, roles and
//! warehouses.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use axum::http::{Method, StatusCode, header};
use common::secured::{PASSWORD, secured};
use common::ui::{csrf_of, fetch, ui_session};
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
    let (status, _, _) = fetch(
        app,
        Method::POST,
        "/ui/login",
        Some(&format!("tenant=acme&username=ana&password={PASSWORD}")),
        None,
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
    let (status, _, roles) = get("/ui/admin/roles").await;
    assert_eq!(status, StatusCode::OK, "{roles}");

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
