//! Who reaches what through the administration API: a tenant admin learns nothing of another
//! tenant's records, and every admin route lets through exactly the roles it should.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::admin::{as_, env, login, token};
use common::secured::PASSWORD;
use common::send;
use serde_json::{Value, json};

#[tokio::test]
async fn a_tenant_admin_learns_nothing_of_another_tenants_records() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    let key = env.globex_key_id.clone();
    // Every route naming something globex has and acme does not: 404, never 403.
    let probes: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, "/api/v1/users/bob".into(), None),
        (Method::DELETE, "/api/v1/users/bob".into(), None),
        (
            Method::PUT,
            "/api/v1/users/bob/password".into(),
            Some(json!({"password": "taken-over-password"})),
        ),
        (
            Method::PUT,
            "/api/v1/users/bob/disabled".into(),
            Some(json!({"disabled": true})),
        ),
        (Method::GET, "/api/v1/service-users/etl".into(), None),
        (Method::DELETE, "/api/v1/service-users/etl".into(), None),
        (Method::GET, "/api/v1/service-users/etl/keys".into(), None),
        (
            Method::POST,
            "/api/v1/service-users/etl/keys".into(),
            Some(json!({})),
        ),
        (
            Method::DELETE,
            format!("/api/v1/service-users/etl/keys/{key}"),
            None,
        ),
        (
            Method::POST,
            format!("/api/v1/service-users/etl/keys/{key}/rotate"),
            Some(json!({})),
        ),
        (Method::GET, "/api/v1/roles/partner-readers".into(), None),
        (
            Method::PUT,
            "/api/v1/roles/partner-readers".into(),
            Some(json!({"grants": [], "version": 1})),
        ),
        (Method::DELETE, "/api/v1/roles/partner-readers".into(), None),
        (
            Method::GET,
            "/api/v1/roles/partner-readers/members".into(),
            None,
        ),
        (
            Method::DELETE,
            "/api/v1/roles/partner-readers/members/user%3Aglobex%2Fbob".into(),
            None,
        ),
        (Method::GET, "/api/v1/warehouses/vault".into(), None),
        (
            Method::PUT,
            "/api/v1/warehouses/vault".into(),
            Some(json!({"storage": {"type": "local", "root": "/tmp/stolen"}})),
        ),
        (Method::DELETE, "/api/v1/warehouses/vault".into(), None),
        (Method::GET, "/api/v1/catalogs/secret".into(), None),
        (Method::DELETE, "/api/v1/catalogs/secret".into(), None),
    ];
    for (method, uri, body) in probes {
        let (status, answer) = as_(&env, &admin, method.clone(), &uri, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}: {answer}");
        // Nothing of globex's but what the request itself named.
        let text = answer.to_string().replace("user:globex/bob", "");
        assert!(!text.contains("globex"), "{method} {uri}: {answer}");
    }
    // A key id of another tenant under one of acme's own service users is not found either.
    let (status, _) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/service-users",
        Some(json!({"name": "etl"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    for (method, uri) in [
        (
            Method::DELETE,
            format!("/api/v1/service-users/etl/keys/{key}"),
        ),
        (
            Method::POST,
            format!("/api/v1/service-users/etl/keys/{key}/rotate"),
        ),
    ] {
        let (status, answer) = as_(&env, &admin, method.clone(), &uri, Some(json!({}))).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}: {answer}");
    }
    // Listings show only acme's records.
    for (uri, field) in [
        ("/api/v1/users", "users"),
        ("/api/v1/service-users", "service-users"),
        ("/api/v1/service-users/etl/keys", "keys"),
        ("/api/v1/roles", "roles"),
        ("/api/v1/warehouses", "warehouses"),
        ("/api/v1/catalogs", "catalogs"),
    ] {
        let (status, answer) = as_(&env, &admin, Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        let text = answer.to_string();
        for foreign in ["globex", "bob", "vault", "secret", &key] {
            assert!(!text.contains(foreign), "{uri} shows {foreign}: {text}");
        }
        assert!(answer[field].is_array(), "{uri}: {answer}");
    }
    // globex's records are all still there: root sees them in globex.
    let root = token(&env, "root").await;
    let auth = format!("Bearer {root}");
    for uri in [
        "/api/v1/users/bob",
        "/api/v1/service-users/etl",
        "/api/v1/roles/partner-readers",
        "/api/v1/warehouses/vault",
        "/api/v1/catalogs/secret",
    ] {
        let (status, _, answer) = send(
            &env.app,
            Method::GET,
            uri,
            None,
            &[("authorization", &auth), ("x-pangolin-tenant", "globex")],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{uri}: {answer}");
    }
    let (status, _, answer) = send(
        &env.app,
        Method::GET,
        "/api/v1/roles/partner-readers/members",
        None,
        &[("authorization", &auth), ("x-pangolin-tenant", "globex")],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["members"], json!(["user:globex/bob"]));
    assert_eq!(
        login(&env, Some("globex"), "bob", PASSWORD).await,
        StatusCode::OK
    );
}

const WHO: [&str; 5] = ["root", "admin", "reader", "writer", "nobody"];

/// Every admin route, with a request that changes nothing that matters (absent targets or
/// bodies that are refused after authorization), and who is let through (`1`) for root, the
/// tenant admin, a reader, a writer and a user without roles. Being let through means any
/// answer but 401 and 403.
fn matrix() -> Vec<(Method, &'static str, Option<Value>, [u8; 5])> {
    let only_root = [1, 0, 0, 0, 0];
    let admins = [1, 1, 0, 0, 0];
    let everyone = [1, 1, 1, 1, 1];
    let weak = json!({"password": "short"});
    vec![
        (
            Method::POST,
            "/api/v1/tenants",
            Some(json!({"name": "bad name"})),
            only_root,
        ),
        (Method::GET, "/api/v1/tenants", None, only_root),
        (Method::GET, "/api/v1/tenants/ghost", None, only_root),
        (
            Method::PATCH,
            "/api/v1/tenants/ghost",
            Some(json!({"description": "x"})),
            only_root,
        ),
        (Method::DELETE, "/api/v1/tenants/ghost", None, only_root),
        (Method::POST, "/api/v1/warehouses", Some(json!({})), admins),
        (Method::GET, "/api/v1/warehouses", None, admins),
        (Method::GET, "/api/v1/warehouses/ghost", None, admins),
        (
            Method::PUT,
            "/api/v1/warehouses/ghost",
            Some(json!({})),
            admins,
        ),
        (Method::DELETE, "/api/v1/warehouses/ghost", None, admins),
        (Method::POST, "/api/v1/catalogs", Some(json!({})), admins),
        (Method::GET, "/api/v1/catalogs", None, everyone),
        (Method::GET, "/api/v1/catalogs/lake", None, [1, 1, 1, 1, 0]),
        (Method::DELETE, "/api/v1/catalogs/ghost", None, admins),
        (Method::POST, "/api/v1/users", Some(json!({})), admins),
        (Method::GET, "/api/v1/users", None, admins),
        (Method::GET, "/api/v1/users/ghost", None, admins),
        (Method::DELETE, "/api/v1/users/ghost", None, admins),
        (
            Method::PUT,
            "/api/v1/users/ghost/password",
            Some(weak),
            admins,
        ),
        (
            Method::PUT,
            "/api/v1/users/ghost/disabled",
            Some(json!({"disabled": true})),
            admins,
        ),
        (Method::GET, "/api/v1/external-principals", None, admins),
        (
            Method::GET,
            "/api/v1/external-principals/oidc%3Aacme%2Fidp%2Fghost",
            None,
            admins,
        ),
        (
            Method::PUT,
            "/api/v1/external-principals/oidc%3Aacme%2Fidp%2Fghost/disabled",
            Some(json!({"disabled": true})),
            admins,
        ),
        (
            Method::POST,
            "/api/v1/me/password",
            Some(json!({"current": "whatever-it-is", "new": "short"})),
            everyone,
        ),
        (
            Method::POST,
            "/api/v1/service-users",
            Some(json!({})),
            admins,
        ),
        (Method::GET, "/api/v1/service-users", None, admins),
        (Method::GET, "/api/v1/service-users/ghost", None, admins),
        (Method::DELETE, "/api/v1/service-users/ghost", None, admins),
        (
            Method::POST,
            "/api/v1/service-users/ghost/keys",
            None,
            admins,
        ),
        (
            Method::GET,
            "/api/v1/service-users/ghost/keys",
            None,
            admins,
        ),
        (
            Method::DELETE,
            "/api/v1/service-users/ghost/keys/0123456789abcdef",
            None,
            admins,
        ),
        (
            Method::POST,
            "/api/v1/service-users/ghost/keys/0123456789abcdef/rotate",
            None,
            admins,
        ),
        (
            Method::POST,
            "/api/v1/roles",
            Some(json!({"name": "bad name", "grants": []})),
            admins,
        ),
        (Method::GET, "/api/v1/roles", None, admins),
        (Method::GET, "/api/v1/roles/ghost", None, admins),
        (
            Method::PUT,
            "/api/v1/roles/ghost",
            Some(json!({"grants": [], "version": 1})),
            admins,
        ),
        (Method::DELETE, "/api/v1/roles/ghost", None, admins),
        (Method::GET, "/api/v1/roles/ghost/members", None, admins),
        (
            Method::PUT,
            "/api/v1/roles/ghost/members/user%3Aacme%2Freader",
            None,
            admins,
        ),
        (
            Method::DELETE,
            "/api/v1/roles/ghost/members/user%3Aacme%2Freader",
            None,
            admins,
        ),
        (
            Method::POST,
            "/api/v1/tokens/revoke",
            Some(json!({"token-id": "not-a-uuid"})),
            only_root,
        ),
    ]
}

#[tokio::test]
async fn every_admin_route_lets_through_exactly_who_it_should() {
    let env = env().await;
    let mut tokens = Vec::new();
    for who in WHO {
        tokens.push(token(&env, who).await);
    }
    let rows = matrix();
    // Every admin route of the route table is in the matrix.
    for route in pangolin_api::security::routes::ROUTES.iter() {
        let admin_route = [
            "tenants",
            "warehouses",
            "users",
            "external-principals",
            "service-users",
            "roles",
            "me/",
            "tokens/",
        ]
        .iter()
        .any(|p| route.path.starts_with(&format!("/api/v1/{p}")))
            || route.path == "/api/v1/catalogs"
            || route.path == "/api/v1/catalogs/{catalog}";
        if admin_route {
            assert!(
                rows.iter().any(|(m, p, _, _)| {
                    m.as_str() == route.method && {
                        let pattern = route.path.split('/').collect::<Vec<_>>();
                        let concrete = p.split('/').collect::<Vec<_>>();
                        pattern.len() == concrete.len()
                            && pattern
                                .iter()
                                .zip(&concrete)
                                .all(|(a, b)| a.starts_with('{') || a == b)
                    }
                }),
                "{} {} is missing from the matrix",
                route.method,
                route.path
            );
        }
    }
    for (method, uri, body, expected) in rows {
        for (i, who) in WHO.iter().enumerate() {
            let (status, answer) = as_(&env, &tokens[i], method.clone(), uri, body.clone()).await;
            assert_ne!(status, StatusCode::UNAUTHORIZED, "{who} {method} {uri}");
            let let_through = status != StatusCode::FORBIDDEN;
            assert_eq!(
                let_through,
                expected[i] == 1,
                "{who} {method} {uri}: {status} {answer}"
            );
        }
    }
}
