//! Sign-in with tokens of an identity provider, through the real, secured router: tokens of
//! node-oidc-provider (started by `scripts/test`, `PANGOLIN_TEST_OIDC_ISSUER`), obtained with
//! the client credentials grant as an engine obtains them. Groups in the token grant roles,
//! principals act in their provider's tenant only, refusals are 401 and an unreachable
//! provider is a 503, never an acceptance.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use common::secured::{ROOT_PASSWORD, secured_with, send_as, sign_in};
use common::send;
use pangolin_api::security::external::{ProviderConfig, Providers, PublicClient};
use pangolin_catalog::authz::{Grant, Privilege, Resource, Role};
use pangolin_identity::SystemClock;
use pangolin_oidc::IssuerSettings;
use serde_json::Value;

/// The provider's keys and JWKS are shared state: one test at a time.
static PROVIDER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn provider() -> Option<String> {
    common::started_service("PANGOLIN_TEST_OIDC_ISSUER", "the OpenID Connect provider")
}

async fn token(issuer: &str, client: &str) -> String {
    let body =
        format!("grant_type=client_credentials&client_id={client}&client_secret={client}-secret");
    let answer: Value = reqwest::Client::new()
        .post(format!("{issuer}/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["access_token"].as_str().unwrap().to_owned()
}

async fn control(issuer: &str, path: &str) {
    reqwest::Client::new()
        .post(format!("{issuer}/_test/{path}"))
        .send()
        .await
        .unwrap();
}

/// Tenant `acme` takes the provider's tokens for audience `pangolin`; `globex` takes the same
/// provider's tokens only for its own audience. In `acme`, the group `data-engineers` may read
/// catalog `lake`, and the analyst (by subject) may too.
async fn env(issuer: &str) -> common::secured::Secured {
    let settings = |audience: &str| {
        let mut settings = IssuerSettings::new(issuer, vec![audience.to_owned()]);
        settings.keys_refetch_seconds = 1;
        settings
    };
    let providers = Providers::new(vec![
        ProviderConfig {
            tenant: "acme".into(),
            name: "idp".into(),
            settings: settings("pangolin"),
            cli: Some(PublicClient {
                client_id: "pangolin-cli".into(),
                scopes: vec!["openid".into(), "offline_access".into()],
            }),
            browser: None,
            admin_groups: Vec::new(),
        },
        ProviderConfig {
            tenant: "globex".into(),
            name: "idp".into(),
            settings: settings("pangolin-globex"),
            cli: None,
            browser: None,
            admin_groups: Vec::new(),
        },
    ])
    .unwrap();
    let lake = || Resource::catalog("acme", "lake");
    let roles = vec![
        (
            Role::new(
                "acme",
                "engineers",
                vec![Grant::new(Privilege::Read, lake())],
            ),
            "group:acme/idp/data-engineers",
        ),
        (
            Role::new("acme", "analyst", vec![Grant::new(Privilege::Read, lake())]),
            "oidc:acme/idp/analyst",
        ),
        (
            Role::new(
                "globex",
                "everyone",
                vec![Grant::new(
                    Privilege::Read,
                    Resource::catalog("globex", "secret"),
                )],
            ),
            "group:globex/idp/data-engineers",
        ),
    ];
    secured_with(&[], roles, Arc::new(SystemClock), providers).await
}

#[tokio::test]
async fn a_tenants_providers_are_listed_before_sign_in_and_config_points_at_their_token_endpoint() {
    let Some(issuer) = provider() else { return };
    let _one = PROVIDER.lock().await;
    let env = env(&issuer).await;
    let list = |tenant: &str| format!("/api/v1/auth/providers?tenant={tenant}");
    let app = &env.app;
    let anonymous = |uri: String| async move {
        let (status, _, body) = send(app, Method::GET, &uri, None, &[]).await;
        (status, body)
    };
    let (status, body) = anonymous(list("acme")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["providers"].as_array().unwrap().len(), 1, "{body}");
    assert_eq!(body["providers"][0]["name"], "idp");
    assert_eq!(body["providers"][0]["issuer"], issuer.as_str());
    assert_eq!(body["providers"][0]["cli"]["client-id"], "pangolin-cli");
    // Another tenant's providers stay its own; an unknown tenant has none; a bad name is 400.
    let (_, body) = anonymous(list("globex")).await;
    assert_eq!(body["providers"][0]["cli"], Value::Null, "{body}");
    let (status, body) = anonymous(list("nowhere")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["providers"], serde_json::json!([]));
    // No tenant: the root scope's, of which this server has none.
    let (status, body) = anonymous("/api/v1/auth/providers".to_owned()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["tenant"], Value::Null, "{body}");
    assert_eq!(body["providers"], serde_json::json!([]));
    let (status, _) = anonymous(list("no%20such")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // A caller of the provider is sent to the provider for tokens; others are not.
    let engine = token(&issuer, "engine").await;
    let config = "/v1/config?warehouse=lake";
    let (status, body) = send_as(&env.app, &engine, Method::GET, config, None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["overrides"]["oauth2-server-uri"],
        format!("{issuer}/token"),
        "{body}"
    );
    let (_, root) = sign_in(&env.app, None, "root", ROOT_PASSWORD).await;
    let root = root["access_token"].as_str().unwrap().to_owned();
    let tenant = [("x-pangolin-tenant", "acme")];
    let (status, body) = send_as(&env.app, &root, Method::GET, config, None, &tenant).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["overrides"].get("oauth2-server-uri"), None, "{body}");
}

#[tokio::test]
async fn a_providers_token_signs_in_and_its_groups_grant_roles() {
    let Some(issuer) = provider() else { return };
    let _one = PROVIDER.lock().await;
    let env = env(&issuer).await;
    let engine = token(&issuer, "engine").await;

    let (status, me) = send_as(&env.app, &engine, Method::GET, "/api/v1/whoami", None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["principal"], "oidc:acme/idp/engine");
    assert_eq!(me["acting-tenant"], "acme");
    assert_eq!(me["groups"][0], "group:acme/idp/data-engineers");
    assert_eq!(me["admin"], false);

    // Read through the group's role; no more than that.
    let namespaces = "/v1/lake/namespaces";
    let (status, body) = send_as(&env.app, &engine, Method::GET, namespaces, None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let create = Some(r#"{"namespace": ["sales"]}"#.to_owned());
    let (status, _) = send_as(&env.app, &engine, Method::POST, namespaces, create, &[]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // A role bound to the person, by subject; a token whose groups are bound to nothing.
    let analyst = token(&issuer, "analyst").await;
    let (status, _) = send_as(&env.app, &analyst, Method::GET, namespaces, None, &[]).await;
    assert_eq!(status, StatusCode::OK);
    let nobody = token(&issuer, "nobody").await;
    let (status, body) = send_as(&env.app, &nobody, Method::GET, namespaces, None, &[]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["type"], "ForbiddenException");

    // The first use of each token is audited with issuer and subject, never the token.
    let (_, root) = sign_in(&env.app, None, "root", ROOT_PASSWORD).await;
    let root = root["access_token"].as_str().unwrap().to_owned();
    let tenant = [("x-pangolin-tenant", "acme")];
    let uri = "/api/v1/audit?page-size=1000";
    let (status, audit) = send_as(&env.app, &root, Method::GET, uri, None, &tenant).await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    let sign_ins: Vec<&Value> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "auth.external")
        .collect();
    assert_eq!(sign_ins.len(), 3, "{sign_ins:#?}");
    let by_engine = sign_ins
        .iter()
        .find(|e| e["principal"] == "oidc:acme/idp/engine")
        .unwrap();
    assert_eq!(by_engine["details"]["issuer"], issuer);
    assert_eq!(by_engine["details"]["subject"], "engine");
    assert_eq!(by_engine["details"]["groups"], "data-engineers");
    assert!(!audit.to_string().contains(&engine));

    // Each principal was recorded on its first sign-in, and an administrator can see and
    // disable it: its tokens are then refused, however valid.
    let uri = "/api/v1/external-principals";
    let (status, list) = send_as(&env.app, &root, Method::GET, uri, None, &tenant).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let ids: Vec<&str> = list["principals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "{list}");
    let recorded = list["principals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "oidc:acme/idp/engine")
        .unwrap();
    assert_eq!(recorded["username"], "engine");
    assert_eq!(recorded["email"], "engine@example.test");
    assert_eq!(recorded["groups"][0], "data-engineers");
    assert_eq!(recorded["disabled"], false);
    let engine_uri = "/api/v1/external-principals/oidc%3Aacme%2Fidp%2Fengine";
    let disable = Some(r#"{"disabled": true}"#.to_owned());
    let disabled_uri = format!("{engine_uri}/disabled");
    let (status, body) = send_as(
        &env.app,
        &root,
        Method::PUT,
        &disabled_uri,
        disable,
        &tenant,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = send_as(&env.app, &engine, Method::GET, namespaces, None, &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(body.to_string().contains("disabled"), "{body}");
    let enable = Some(r#"{"disabled": false}"#.to_owned());
    send_as(&env.app, &root, Method::PUT, &disabled_uri, enable, &tenant).await;
    let (status, _) = send_as(&env.app, &engine, Method::GET, namespaces, None, &[]).await;
    assert_eq!(status, StatusCode::OK);
    // Another tenant sees none of them.
    let globex = [("x-pangolin-tenant", "globex")];
    let (status, _) = send_as(&env.app, &root, Method::GET, engine_uri, None, &globex).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, list) = send_as(&env.app, &root, Method::GET, uri, None, &globex).await;
    assert_eq!(list["principals"], serde_json::json!([]), "{list}");
}

#[tokio::test]
async fn principals_of_a_provider_act_only_in_its_tenant_and_bad_tokens_are_refused() {
    let Some(issuer) = provider() else { return };
    let _one = PROVIDER.lock().await;
    let env = env(&issuer).await;
    let engine = token(&issuer, "engine").await;

    // The same group name in another tenant grants nothing to acme's principal, and no
    // header moves it into that tenant.
    let globex = [("x-pangolin-tenant", "globex")];
    let secret = "/v1/secret/namespaces";
    let (status, body) = send_as(&env.app, &engine, Method::GET, secret, None, &globex).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.to_string().contains("acme/secret"), "{body}");
    let (_, me) = send_as(
        &env.app,
        &engine,
        Method::GET,
        "/api/v1/whoami",
        None,
        &globex,
    )
    .await;
    assert_eq!(me["acting-tenant"], "acme");

    // Pangolin cannot revoke the provider's tokens, and says so.
    let (status, body) =
        send_as(&env.app, &engine, Method::POST, "/api/v1/logout", None, &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.to_string().contains("revoked at that provider"),
        "{body}"
    );

    // A tampered token is refused as any bad credential is: 401.
    // (A character well inside the signature: the last one may carry padding bits.)
    let mut tampered = engine.clone().into_bytes();
    let at = tampered.len() - 10;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let (status, body) = send_as(
        &env.app,
        &tampered,
        Method::GET,
        "/api/v1/whoami",
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["error"]["type"], "NotAuthorizedException");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("signature"),
        "{body}"
    );

    // The provider rotates its keys while its JWKS is down: a token under the new key cannot
    // be checked, which is a 503; once the JWKS is back it is taken.
    control(&issuer, "jwks/down").await;
    control(&issuer, "rotate").await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let rotated = token(&issuer, "engine").await;
    let (status, body) =
        send_as(&env.app, &rotated, Method::GET, "/api/v1/whoami", None, &[]).await;
    control(&issuer, "jwks/up").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (status, body) =
        send_as(&env.app, &rotated, Method::GET, "/api/v1/whoami", None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[test]
fn one_issuer_and_audience_serve_one_tenant() {
    let config = |tenant: &str| ProviderConfig {
        tenant: tenant.into(),
        name: "idp".into(),
        settings: IssuerSettings::new("https://idp.example.com", vec!["pangolin".into()]),
        cli: None,
        browser: None,
        admin_groups: Vec::new(),
    };
    let err = Providers::new(vec![config("acme"), config("globex")]).unwrap_err();
    assert!(err.contains("configured for tenants"), "{err}");
    let err = Providers::new(vec![config("acme"), config("~")]).unwrap_err();
    assert!(err.contains("configured for tenants"), "{err}");
    // A root-scope provider signs in administrators; without admin groups no one could act.
    let err = Providers::new(vec![config("~")]).unwrap_err();
    assert!(err.contains("needs `admin-groups`"), "{err}");
    let mut root = config("~");
    root.admin_groups = vec!["ops".into()];
    let providers = Providers::new(vec![root]).unwrap();
    assert_eq!(providers.of_scope("~").count(), 1);
    assert!(providers.of_principal("oidc:~/idp/ana").is_some());
    let mut empty = config("acme");
    empty.admin_groups = vec![String::new()];
    let err = Providers::new(vec![empty]).unwrap_err();
    assert!(err.contains("an admin group needs a name"), "{err}");
    let err = Providers::new(vec![config("acme"), config("acme")]).unwrap_err();
    assert!(err.contains("two identity providers"), "{err}");
    let mut no_client = config("acme");
    no_client.browser = Some(
        serde_json::from_value(serde_json::json!({"client-id": "", "client-secret": "s"})).unwrap(),
    );
    let err = Providers::new(vec![no_client]).unwrap_err();
    assert!(
        err.contains("its browser client needs a client id"),
        "{err}"
    );
    let mut spaced = config("acme");
    spaced.cli = Some(PublicClient {
        client_id: "cli".into(),
        scopes: vec!["openid offline_access".into()],
    });
    let err = Providers::new(vec![spaced]).unwrap_err();
    assert!(err.contains("its cli client needs"), "{err}");
    let mut bad = config("acme");
    bad.name = "bad name".into();
    assert!(Providers::new(vec![bad]).is_err());
}

/// A provider of the root scope whose group `data-engineers` is root, and in which nobody
/// else may do anything; tenant `acme` has its own administrator, `boss`.
async fn root_env(issuer: &str) -> common::secured::Secured {
    let providers = Providers::new(vec![ProviderConfig {
        tenant: "~".into(),
        name: "corp".into(),
        settings: IssuerSettings::new(issuer, vec!["pangolin".to_owned()]),
        cli: None,
        browser: None,
        admin_groups: vec!["data-engineers".into()],
    }])
    .unwrap();
    secured_with(
        &[("acme", "boss", true)],
        Vec::new(),
        Arc::new(SystemClock),
        providers,
    )
    .await
}

#[tokio::test]
async fn a_root_scope_providers_admin_groups_are_root_and_its_other_principals_may_do_nothing() {
    let Some(issuer) = provider() else { return };
    let _one = PROVIDER.lock().await;
    let env = root_env(&issuer).await;
    let app = &env.app;
    let (status, _, body) = send(app, Method::GET, "/api/v1/auth/providers", None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["providers"][0]["name"], "corp", "{body}");

    // A member of the admin group is root: of no tenant, acting in the one it names.
    let engine = token(&issuer, "engine").await;
    let acme = [("x-pangolin-tenant", "acme")];
    let (status, me) = send_as(app, &engine, Method::GET, "/api/v1/whoami", None, &acme).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["principal"], "oidc:~/corp/engine");
    assert_eq!(me["admin"], true, "{me}");
    assert_eq!(me["acting-tenant"], "acme");
    let (status, body) = send_as(app, &engine, Method::GET, "/api/v1/tenants", None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let create = Some(r#"{"namespace": ["ops"]}"#.to_owned());
    let namespaces = "/v1/lake/namespaces";
    let (status, body) = send_as(app, &engine, Method::POST, namespaces, create, &acme).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Anyone else the provider signs in may do nothing, anywhere.
    let nobody = token(&issuer, "nobody").await;
    let (status, me) = send_as(app, &nobody, Method::GET, "/api/v1/whoami", None, &acme).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["admin"], false, "{me}");
    for uri in ["/api/v1/tenants", namespaces] {
        let (status, body) = send_as(app, &nobody, Method::GET, uri, None, &acme).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{uri}: {body}");
    }

    // Root sees the root scope's principals; a tenant's admin sees none of them.
    let (_, root) = sign_in(app, None, "root", ROOT_PASSWORD).await;
    let root = root["access_token"].as_str().unwrap().to_owned();
    let roots = "/api/v1/external-principals?scope=root";
    let (status, list) = send_as(app, &root, Method::GET, roots, None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let mut ids: Vec<&str> = list["principals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["oidc:~/corp/engine", "oidc:~/corp/nobody"], "{list}");
    let (status, list) = send_as(
        app,
        &root,
        Method::GET,
        "/api/v1/external-principals",
        None,
        &acme,
    )
    .await;
    assert_eq!(list["principals"], serde_json::json!([]), "{status} {list}");
    let (status, _) = send_as(
        app,
        &root,
        Method::GET,
        "/api/v1/external-principals?scope=elsewhere",
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, boss) = sign_in(app, Some("acme"), "boss", common::secured::PASSWORD).await;
    let boss = boss["access_token"].as_str().unwrap().to_owned();
    let (status, body) = send_as(app, &boss, Method::GET, roots, None, &[]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let engine_uri = "/api/v1/external-principals/oidc%3A~%2Fcorp%2Fengine";
    let (status, _) = send_as(app, &boss, Method::GET, engine_uri, None, &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = send_as(app, &root, Method::GET, engine_uri, None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["groups"][0], "data-engineers");

    // Root disables it: its tokens are refused however valid, until it is enabled again.
    let disabled = format!("{engine_uri}/disabled");
    let off = Some(r#"{"disabled": true}"#.to_owned());
    let (status, _) = send_as(app, &boss, Method::PUT, &disabled, off.clone(), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = send_as(app, &root, Method::PUT, &disabled, off, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = send_as(app, &engine, Method::GET, "/api/v1/tenants", None, &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");

    // Sign-ins are audited in the root scope, saying who came in as an administrator.
    let (status, audit) = send_as(
        app,
        &root,
        Method::GET,
        "/api/v1/audit?page-size=1000",
        None,
        &[("x-pangolin-tenant", "~")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    let admin_of = |who: &str| {
        audit["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["action"] == "auth.external" && e["principal"] == who)
            .map(|e| e["details"]["admin"].clone())
    };
    assert_eq!(
        admin_of("oidc:~/corp/engine"),
        Some(Value::from("true")),
        "{audit}"
    );
    assert_eq!(admin_of("oidc:~/corp/nobody"), Some(Value::from("false")));
}

#[tokio::test]
async fn a_tenant_providers_admin_groups_make_admins_of_that_tenant_only() {
    let Some(issuer) = provider() else { return };
    let _one = PROVIDER.lock().await;
    let providers = Providers::new(vec![ProviderConfig {
        tenant: "acme".into(),
        name: "idp".into(),
        settings: IssuerSettings::new(&issuer, vec!["pangolin".to_owned()]),
        cli: None,
        browser: None,
        admin_groups: vec!["analysts".into()],
    }])
    .unwrap();
    let env = secured_with(&[], Vec::new(), Arc::new(SystemClock), providers).await;
    let app = &env.app;
    let analyst = token(&issuer, "analyst").await;
    let (_, me) = send_as(app, &analyst, Method::GET, "/api/v1/whoami", None, &[]).await;
    assert_eq!(me["admin"], true, "{me}");
    assert_eq!(me["acting-tenant"], "acme");
    let create = Some(r#"{"namespace": ["finance"]}"#.to_owned());
    let namespaces = "/v1/lake/namespaces";
    let (status, body) = send_as(app, &analyst, Method::POST, namespaces, create, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = send_as(
        app,
        &analyst,
        Method::GET,
        "/api/v1/external-principals",
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // An admin of its tenant, not root: no header moves it into another tenant (globex's
    // catalog `secret` is sought in acme, which has none), and root's listings stay closed.
    let globex = [("x-pangolin-tenant", "globex")];
    let (status, body) = send_as(
        app,
        &analyst,
        Method::GET,
        "/v1/secret/namespaces",
        None,
        &globex,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    for uri in ["/api/v1/tenants", "/api/v1/external-principals?scope=root"] {
        let (status, body) = send_as(app, &analyst, Method::GET, uri, None, &[]).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{uri}: {body}");
    }
    let engine = token(&issuer, "engine").await;
    let (_, me) = send_as(app, &engine, Method::GET, "/api/v1/whoami", None, &[]).await;
    assert_eq!(me["admin"], false, "{me}");

    // A refused token is audited in the tenant of the provider it claims to come from, with
    // the issuer and subject it claims, never the token.
    let mut tampered = analyst.clone().into_bytes();
    let at = tampered.len() - 10;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let (status, _) = send_as(app, &tampered, Method::GET, "/api/v1/whoami", None, &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let uri = "/api/v1/audit?page-size=1000";
    let (status, audit) = send_as(app, &analyst, Method::GET, uri, None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    let refused = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["outcome"] == "denied" && e["resource-type"] == "authentication")
        .unwrap_or_else(|| panic!("no refusal in {audit}"));
    assert_eq!(refused["details"]["claimed-issuer"], issuer.as_str());
    assert_eq!(refused["details"]["claimed-subject"], "analyst");
    assert!(
        refused["details"]["reason"]
            .as_str()
            .unwrap()
            .contains("signature")
    );
    assert!(!audit.to_string().contains(&tampered));
}
