//! Signing in to the web UI: the session cookie, the CSRF token every form needs, the same
//! authorization as the API, and the audit pages.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use axum::http::{Method, StatusCode, header};
use common::secured::{PASSWORD, secured};
use common::ui::{fetch, page, sign_in};
use pangolin_catalog::authz::{Grant, Privilege, Resource, Role};
use pangolin_identity::SystemClock;

#[tokio::test]
async fn sign_in_sets_a_session_cookie_and_forms_need_its_csrf_token() {
    let readers = Role::new(
        "acme",
        "readers",
        vec![Grant::new(
            Privilege::Read,
            Resource::Catalog {
                tenant: "acme".into(),
                catalog: "lake".into(),
            },
        )],
    );
    let env = secured(
        &[("acme", "reader", false), ("acme", "nobody", false)],
        vec![(readers, "user:acme/reader")],
        Arc::new(SystemClock),
    )
    .await;
    let app = &env.app;
    // Not signed in: the UI sends the browser to the sign-in page, and back afterwards.
    let (status, headers, _) = fetch(app, Method::GET, "/ui/catalogs/lake", None, None).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        headers[header::LOCATION],
        "/ui/login?next=%2Fui%2Fcatalogs%2Flake"
    );
    let form = page(app, "/ui/login?next=/ui/catalogs/lake").await;
    assert!(form.contains(r#"<label for="password">"#), "{form}");

    // A sign-in posted from anywhere but the form this server served is refused.
    let forged = format!("tenant=acme&username=reader&password={PASSWORD}&login=guess");
    let (status, _, text) = fetch(app, Method::POST, "/ui/login", Some(&forged), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    assert!(text.contains("did not come from this server"), "{text}");
    let (status, _, text) = sign_in(
        app,
        "tenant=acme&username=reader&password=wrong-password&next=/ui",
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(text.contains(r#"role="alert""#), "{text}");

    let body =
        format!("tenant=acme&username=reader&password={PASSWORD}&next=%2Fui%2Fcatalogs%2Flake");
    let (status, headers, _) = sign_in(app, &body).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers[header::LOCATION], "/ui/catalogs/lake");
    let set = headers[header::SET_COOKIE].to_str().unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/ui"),
        "{set}"
    );
    let cookie = set.split(';').next().unwrap().to_owned();
    assert!(cookie.starts_with("pangolin_session="), "{cookie}");
    // A refresh cookie an identity provider's session left would renew that session instead.
    assert!(
        headers
            .get_all(header::SET_COOKIE)
            .iter()
            .any(|c| c.to_str().unwrap().starts_with("pangolin_refresh=;")),
        "{headers:?}"
    );

    let (status, _, refs) = fetch(app, Method::GET, "/ui/catalogs/lake", None, Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK, "{refs}");
    assert!(refs.contains("Signed in as user:acme/reader"), "{refs}");
    // The cookie is the UI's: the API does not take it.
    let (status, _, _) = fetch(
        app,
        Method::GET,
        "/api/v1/catalogs/lake/refs",
        None,
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // A catalog of another tenant is not the reader's: the page says what is missing.
    let (status, _, text) =
        fetch(app, Method::GET, "/ui/catalogs/secret", None, Some(&cookie)).await;
    assert!(
        matches!(status, StatusCode::FORBIDDEN | StatusCode::NOT_FOUND),
        "{text}"
    );

    // Forms need this session's CSRF token: a form from elsewhere changes nothing.
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/refs",
        Some("csrf=forged&name=sneaky&from=main"),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    assert!(text.contains("CSRF"), "{text}");
    // A reader compares but is not offered a merge, and a posted merge is refused anyway.
    let (status, _, compare) = fetch(
        app,
        Method::GET,
        "/ui/catalogs/lake/compare?source=main&target=main",
        None,
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{compare}");
    assert!(
        !compare.contains("Merge into"),
        "no merge button: {compare}"
    );
    assert!(compare.contains("You may not merge"), "{compare}");
    // With the token, a reader still may not make branches: the API's own refusal.
    let csrf = refs
        .split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/refs",
        Some(&format!("csrf={csrf}&name=sneaky&from=main")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/catalogs/lake/merge",
        Some(&format!("csrf={csrf}&source=main&target=main")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    let (status, _, refs_now) =
        fetch(app, Method::GET, "/ui/catalogs/lake", None, Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!refs_now.contains("sneaky"), "no branch was made");

    // Sign-out is a form: without this session's CSRF token it is refused.
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/logout",
        Some("csrf=forged"),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    let (status, headers, _) = fetch(
        app,
        Method::POST,
        "/ui/logout",
        Some(&format!("csrf={csrf}")),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(
        headers[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    // The token behind the cookie is revoked: the old cookie signs in no more.
    let (status, _, _) = fetch(app, Method::GET, "/ui/catalogs/lake", None, Some(&cookie)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);

    // A user without a role signs in but may not read the catalog.
    let body = format!("tenant=acme&username=nobody&password={PASSWORD}");
    let (_, headers, _) = sign_in(app, &body).await;
    let cookie = headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (status, _, text) = fetch(
        app,
        Method::GET,
        "/ui/catalogs/lake/log",
        None,
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        text.contains("read"),
        "the page names the missing privilege: {text}"
    );
}

#[tokio::test]
async fn root_reads_the_audit_log_and_verifies_its_chain() {
    let env = secured(&[("acme", "reader", false)], vec![], Arc::new(SystemClock)).await;
    let app = &env.app;
    let body = format!("username=root&password={}", common::secured::ROOT_PASSWORD);
    let (status, headers, _) = sign_in(app, &body).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let cookie = headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (status, _, log) = fetch(
        app,
        Method::GET,
        "/ui/audit?action=auth.login",
        None,
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{log}");
    assert!(
        log.contains("auth.login") && log.contains("user:~/root"),
        "{log}"
    );
    assert!(
        log.contains(r#"value="auth.login""#),
        "the filter stays in the form"
    );
    let (status, _, verified) =
        fetch(app, Method::GET, "/ui/audit/verify", None, Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK, "{verified}");
    assert!(verified.contains("The chain is intact"), "{verified}");
    let (status, _, tenants) =
        fetch(app, Method::GET, "/ui/admin/tenants", None, Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK, "{tenants}");
    assert!(
        tenants.contains("acme") && tenants.contains("globex"),
        "{tenants}"
    );
    let csrf = tenants
        .split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let form = format!("csrf={csrf}&name=initech&admin=peter&password={PASSWORD}");
    let (status, _, text) = fetch(
        app,
        Method::POST,
        "/ui/admin/tenants",
        Some(&form),
        Some(&cookie),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    // Its first administrator signs in to it.
    let (status, _, _) = sign_in(
        app,
        &format!("tenant=initech&username=peter&password={PASSWORD}"),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    // A tenant's user without ReadAudit is refused the page.
    let body = format!("tenant=acme&username=reader&password={PASSWORD}");
    let (_, headers, _) = sign_in(app, &body).await;
    let cookie = headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (status, _, _) = fetch(app, Method::GET, "/ui/audit", None, Some(&cookie)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}
