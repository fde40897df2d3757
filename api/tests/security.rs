//! Authentication, authorization, tenant isolation and audit through the real router: every
//! route needs a declared permission, signed-out callers get 401, tokens that are tampered,
//! unsigned, expired or revoked are refused, sign-in is rate limited, tenants see nothing of
//! each other, roles decide down to branches, and every change, sign-in and refusal is audited.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::secured::{PASSWORD, ROOT_PASSWORD, root_principal, secured, send_as, sign_in};
use common::{send, send_form};
use pangolin_api::security::Security;
use pangolin_api::security::routes::{Need, ROUTES};
use pangolin_backend_memory::MemoryBackend;
use pangolin_catalog::authz::{BranchPattern, Grant, Privilege, Resource, Role};
use pangolin_identity::{Identity, ManualClock, Password, PrincipalName, Scope};
use pangolin_store::Timestamp;
use serde_json::{Value, json};
use tempfile::TempDir;

struct Secure {
    app: axum::Router,
    _dir: TempDir,
    store: Arc<MemoryBackend>,
    identity: Identity,
    clock: Arc<ManualClock>,
}

fn catalog_of(tenant: &str) -> Resource {
    Resource::Catalog {
        tenant: tenant.into(),
        catalog: "lake".into(),
    }
}

/// Tenants `acme` and `globex`, each with catalog `lake`; `globex` also has `secret`. In `acme`:
/// an admin, a reader (read on `lake`), a writer (read everywhere, write and create on `dev*`
/// only); an admin of `globex`.
async fn secure() -> Secure {
    let clock = Arc::new(ManualClock::new(Timestamp::now()));
    let dev = BranchPattern::parse("dev*").unwrap();
    let roles = vec![
        (
            Role::new(
                "acme",
                "readers",
                vec![Grant::new(Privilege::Read, catalog_of("acme"))],
            ),
            "user:acme/reader",
        ),
        (
            Role::new(
                "acme",
                "dev-writers",
                vec![
                    Grant::new(Privilege::Read, catalog_of("acme")),
                    Grant::new(Privilege::Write, catalog_of("acme")).at(dev.clone()),
                    Grant::new(Privilege::Create, catalog_of("acme")).at(dev),
                ],
            ),
            "user:acme/writer",
        ),
    ];
    let users = [
        ("acme", "admin", true),
        ("acme", "reader", false),
        ("acme", "writer", false),
        ("globex", "admin", true),
    ];
    let secured = secured(&users, roles, clock.clone()).await;
    Secure {
        app: secured.app,
        _dir: secured.dir,
        store: secured.store,
        identity: secured.identity,
        clock,
    }
}

async fn as_(
    env: &Secure,
    token: &str,
    method: Method,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    // The UI's forms post their fields form-encoded.
    if let (true, Some(Value::Object(fields))) = (uri.starts_with("/ui/"), &body) {
        let form: String = fields
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join("&");
        let auth = format!("Bearer {token}");
        let (status, _, value) =
            send_form(&env.app, method, uri, &form, &[("authorization", &auth)]).await;
        return (status, value);
    }
    send_as(
        &env.app,
        token,
        method,
        uri,
        body.map(|b| b.to_string()),
        &[],
    )
    .await
}

async fn login(
    env: &Secure,
    tenant: Option<&str>,
    user: &str,
    password: &str,
) -> (StatusCode, Value) {
    sign_in(&env.app, tenant, user, password).await
}

async fn token(env: &Secure, tenant: Option<&str>, user: &str) -> String {
    let password = if tenant.is_none() {
        ROOT_PASSWORD
    } else {
        PASSWORD
    };
    let (status, body) = login(env, tenant, user, password).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["access_token"].as_str().unwrap().to_owned()
}

/// A request path for a routed path pattern, with every parameter filled in.
fn sample(path: &str) -> String {
    path.replace("{prefix}", "lake")
        .replace("{catalog}", "lake")
        .replace("{namespace}", "db")
        .replace("{table}", "t")
        .replace("{view}", "v")
        .replace("{name}", "main")
        .replace("{reference}", "main")
}

#[tokio::test]
async fn every_served_route_declares_what_it_needs() {
    let declared: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    // Every Iceberg endpoint the server advertises and every documented management route.
    let document: Value = serde_json::from_str(include_str!("../../docs/openapi.json")).unwrap();
    let mut served: BTreeSet<(String, String)> = pangolin_api::config::ENDPOINTS
        .iter()
        .map(|e| {
            let (method, path) = e.split_once(' ').unwrap();
            (method.to_owned(), path.to_owned())
        })
        .collect();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            served.insert((method.to_uppercase(), path.clone()));
        }
    }
    let missing: Vec<_> = served.difference(&declared).collect();
    assert!(
        missing.is_empty(),
        "routes without a declared need: {missing:?}"
    );
    // And every declared route is really routed: nothing answers "no route" or 405.
    let env = secure().await;
    for route in ROUTES.iter() {
        let method = Method::from_bytes(route.method.as_bytes()).unwrap();
        let (status, _, body) = send(&env.app, method, &sample(route.path), None, &[]).await;
        assert_ne!(
            status,
            StatusCode::METHOD_NOT_ALLOWED,
            "{} {}",
            route.method,
            route.path
        );
        assert!(
            !(status == StatusCode::NOT_FOUND && body["error"]["type"] == "NotFoundException"),
            "{} {} is declared but not routed",
            route.method,
            route.path
        );
        // Signed out, only public routes do anything; the UI's pages send the browser to the
        // sign-in page instead.
        if route.need != Need::Public && route.path.starts_with("/ui") {
            assert_eq!(
                status,
                StatusCode::SEE_OTHER,
                "{} {}: {body}",
                route.method,
                route.path
            );
        } else if route.need != Need::Public {
            assert_eq!(
                status,
                StatusCode::UNAUTHORIZED,
                "{} {}: {body}",
                route.method,
                route.path
            );
            if route.method != "HEAD" {
                assert_eq!(body["error"]["type"], "NotAuthorizedException");
            }
        }
    }
}

#[tokio::test]
async fn a_route_nobody_declared_is_refused_to_everyone() {
    // The layer guards by route; a route missing from the table is not served even to root.
    let route = pangolin_api::security::routes::lookup(&Method::PATCH, "/v1/{prefix}/namespaces");
    assert!(route.is_none());
}

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

#[tokio::test]
async fn tenants_see_nothing_of_each_other() {
    let env = secure().await;
    let acme = token(&env, Some("acme"), "admin").await;
    let globex = token(&env, Some("globex"), "admin").await;
    let (status, _) = as_(
        &env,
        &globex,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["hidden"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = as_(
        &env,
        &globex,
        Method::POST,
        "/v1/secret/namespaces",
        Some(json!({"namespace": ["plans"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // Same catalog name, another tenant's catalog: its namespace is not there.
    let (status, body) = as_(&env, &acme, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["namespaces"], json!([]));
    let (status, _) = as_(&env, &acme, Method::GET, "/v1/lake/namespaces/hidden", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A catalog only the other tenant has does not exist for this one.
    for uri in [
        "/api/v1/catalogs/secret/log",
        "/api/v1/catalogs/secret/refs",
    ] {
        let (status, body) = as_(&env, &acme, Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}: {body}");
    }
    let (_, body) = as_(&env, &acme, Method::GET, "/v1/secret/namespaces", None).await;
    assert!(!body.to_string().contains("plans"), "{body}");
    // Nor can it read the other tenant's commit by hash.
    let (_, log) = as_(
        &env,
        &globex,
        Method::GET,
        "/api/v1/catalogs/secret/log",
        None,
    )
    .await;
    let hash = log["commits"][0]["hash"].as_str().unwrap().to_owned();
    let (status, body) = as_(
        &env,
        &acme,
        Method::GET,
        &format!("/api/v1/catalogs/lake/commits/main%23{hash}"),
        None,
    )
    .await;
    assert!(status.is_client_error(), "{body}");
    assert!(!body.to_string().contains("plans"), "{body}");
    // A tenant admin cannot act in another tenant by asking to.
    let auth = format!("Bearer {acme}");
    let (_, _, body) = send(
        &env.app,
        Method::GET,
        "/v1/lake/namespaces",
        None,
        &[("authorization", &auth), ("x-pangolin-tenant", "globex")],
    )
    .await;
    assert_eq!(
        body["namespaces"],
        json!([]),
        "the header only works for root"
    );
    // Root chooses the tenant explicitly.
    let root = token(&env, None, "root").await;
    let auth = format!("Bearer {root}");
    let (_, _, body) = send(
        &env.app,
        Method::GET,
        "/v1/lake/namespaces",
        None,
        &[("authorization", &auth), ("x-pangolin-tenant", "globex")],
    )
    .await;
    assert_eq!(body["namespaces"], json!([["hidden"]]));
}

#[tokio::test]
async fn roles_decide_down_to_branches() {
    let env = secure().await;
    let admin = token(&env, Some("acme"), "admin").await;
    let reader = token(&env, Some("acme"), "reader").await;
    let writer = token(&env, Some("acme"), "writer").await;
    let (status, _) = as_(
        &env,
        &admin,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["db"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let schema = json!({"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": false}]});
    let create = json!({"name": "t", "schema": schema});
    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/v1/lake/namespaces/db/tables",
        Some(create.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for branch in ["dev", "dev2"] {
        let (status, _) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/catalogs/lake/refs",
            Some(json!({"name": branch, "from": "main"})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
    }

    // The reader reads and nothing more.
    let (status, _) = as_(
        &env,
        &reader,
        Method::GET,
        "/v1/lake/namespaces/db/tables/t",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let commit = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
    let (status, body) = as_(
        &env,
        &reader,
        Method::POST,
        "/v1/lake/namespaces/db/tables/t",
        Some(commit.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["type"], "ForbiddenException");
    let (status, _) = as_(
        &env,
        &reader,
        Method::DELETE,
        "/v1/lake/namespaces/db/tables/t",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The writer writes `dev*` branches but not `main`, through any route that names them.
    let (status, body) = as_(
        &env,
        &writer,
        Method::POST,
        "/v1/lake/namespaces/db/tables/t%40dev",
        Some(commit.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = as_(
        &env,
        &writer,
        Method::POST,
        "/v1/lake%40dev2/namespaces/db/tables/t",
        Some(commit.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = as_(
        &env,
        &writer,
        Method::POST,
        "/v1/lake/namespaces/db/tables/t",
        Some(commit.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_(
        &env,
        &writer,
        Method::POST,
        "/api/v1/catalogs/lake/merge",
        Some(json!({"source": "dev", "target": "main"})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "merging into main needs write on main"
    );
    let transaction = json!({"table-changes": [{"identifier": {"namespace": ["db"], "name": "t"}, "requirements": [], "updates": [{"action": "set-properties", "updates": {"x": "y"}}]}]});
    let (status, _) = as_(
        &env,
        &writer,
        Method::POST,
        "/v1/lake/transactions/commit",
        Some(transaction.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_(
        &env,
        &writer,
        Method::POST,
        "/v1/lake%40dev/transactions/commit",
        Some(transaction),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // Nothing the refusals touched changed: main's table has no `k`.
    let (_, body) = as_(
        &env,
        &admin,
        Method::GET,
        "/v1/lake/namespaces/db/tables/t",
        None,
    )
    .await;
    assert!(body["metadata"]["properties"].get("k").is_none(), "{body}");
    // Managing refs is not granted to the writer either.
    let (status, _) = as_(
        &env,
        &writer,
        Method::POST,
        "/api/v1/catalogs/lake/refs",
        Some(json!({"name": "dev3"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn service_users_sign_in_with_api_keys_and_client_credentials() {
    let env = secure().await;
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
    let key = created.key.expose();
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
async fn changes_sign_ins_and_refusals_are_audited_and_the_chain_verifies() {
    let env = secure().await;
    let _ = login(&env, Some("acme"), "reader", "wrong-password-123").await;
    let reader = token(&env, Some("acme"), "reader").await;
    let admin = token(&env, Some("acme"), "admin").await;
    let globex = token(&env, Some("globex"), "admin").await;
    let (status, _) = as_(
        &env,
        &reader,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["nope"]})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_(
        &env,
        &admin,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["db"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = as_(
        &env,
        &globex,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["g"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let (status, page) = as_(
        &env,
        &admin,
        Method::GET,
        "/api/v1/audit?page-size=1000",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let events = page["events"].as_array().unwrap();
    assert!(
        events.iter().all(|e| e["tenant"] == "acme"),
        "a tenant admin sees only its tenant"
    );
    let has = |action: &str, outcome: &str, principal: &str| {
        events.iter().any(|e| {
            e["action"] == action && e["outcome"] == outcome && e["principal"] == principal
        })
    };
    assert!(has("auth.login", "denied", "acme/reader"));
    assert!(has("auth.login", "success", "acme/reader"));
    assert!(has("Create", "denied", "user:acme/reader"), "{events:?}");
    assert!(has("namespace.create", "success", "user:acme/admin"));
    // The reader may not read the audit log; root reads every tenant's and verifies the chain.
    let (status, _) = as_(&env, &reader, Method::GET, "/api/v1/audit", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_(&env, &admin, Method::GET, "/api/v1/audit/verify", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let root = token(&env, None, "root").await;
    let (_, all) = as_(
        &env,
        &root,
        Method::GET,
        "/api/v1/audit?page-size=1000",
        None,
    )
    .await;
    let tenants: BTreeSet<&str> = all["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["tenant"].as_str())
        .collect();
    assert!(
        tenants.contains("acme") && tenants.contains("globex"),
        "{tenants:?}"
    );
    let (status, report) = as_(&env, &root, Method::GET, "/api/v1/audit/verify", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(report["intact"], true, "{report}");
    assert!(report["checked"].as_u64().unwrap() >= 6);
    // Paging: one event per page, in order, to the end.
    let (_, first) = as_(&env, &root, Method::GET, "/api/v1/audit?page-size=1", None).await;
    let next = first["next-page-token"].as_str().unwrap();
    let (_, second) = as_(
        &env,
        &root,
        Method::GET,
        &format!("/api/v1/audit?page-size=1&page-token={next}"),
        None,
    )
    .await;
    assert!(second["events"][0]["sequence"].as_u64() > first["events"][0]["sequence"].as_u64());
    let _ = &env.store;
}

#[tokio::test]
async fn no_secret_reaches_a_response_body() {
    let env = secure().await;
    let tenant = pangolin_identity::TenantName::new("acme").unwrap();
    let etl = PrincipalName::new("etl").unwrap();
    env.identity
        .create_service_user(&tenant, &etl)
        .await
        .unwrap();
    let key = env
        .identity
        .create_api_key(&tenant, &etl, None)
        .await
        .unwrap()
        .key
        .expose();
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

/// Roles of the authorization matrix: root, acme's admin, a reader of `lake`, a writer of
/// `dev*` branches, and a signed-in user with no role.
const ROLES: [&str; 5] = ["root", "admin", "reader", "writer", "nobody"];

/// One row of the matrix: a request and the roles allowed to make it.
struct Case {
    method: &'static str,
    /// The route as declared (checked against `ROUTES`).
    route: &'static str,
    uri: &'static str,
    body: Option<Value>,
    allowed: &'static [&'static str],
}

fn case(
    method: &'static str,
    route: &'static str,
    uri: &'static str,
    body: Option<Value>,
    allowed: &'static [&'static str],
) -> Case {
    Case {
        method,
        route,
        uri,
        body,
        allowed,
    }
}

fn view_body(name: &str) -> Value {
    json!({"name": name, "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": false}]},
        "view-version": {"version-id": 1, "schema-id": 0, "timestamp-ms": 1_767_225_000_000_i64,
            "summary": {"engine-name": "test"}, "default-namespace": ["db"],
            "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}})
}

fn matrix(table_location: &str, view_location: &str) -> Vec<Case> {
    const ALL: &[&str] = &["root", "admin", "reader", "writer", "nobody"];
    const READERS: &[&str] = &["root", "admin", "reader", "writer"];
    const ADMINS: &[&str] = &["root", "admin"];
    const DEV: &[&str] = &["root", "admin", "writer"];
    const ROOT: &[&str] = &["root"];
    let props = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
    let ns = "/v1/{prefix}/namespaces/{namespace}";
    let table = "/v1/{prefix}/namespaces/{namespace}/tables/{table}";
    let view = "/v1/{prefix}/namespaces/{namespace}/views/{view}";
    let leak: &'static str = Box::leak(format!("{table}/metrics").into_boxed_str());
    let creds: &'static str = Box::leak(format!("{table}/credentials").into_boxed_str());
    let sign: &'static str = Box::leak(format!("{table}/sign").into_boxed_str());
    let props_route: &'static str = Box::leak(format!("{ns}/properties").into_boxed_str());
    let tables: &'static str = Box::leak(format!("{ns}/tables").into_boxed_str());
    let views: &'static str = Box::leak(format!("{ns}/views").into_boxed_str());
    let register: &'static str = Box::leak(format!("{ns}/register").into_boxed_str());
    let register_view: &'static str = Box::leak(format!("{ns}/register-view").into_boxed_str());
    let schema = json!({"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": false}]});
    let transaction = json!({"table-changes": [{"identifier": {"namespace": ["db"], "name": "t"},
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"tx": "1"}}]}]});
    vec![
        case("GET", "/v1/config", "/v1/config", None, ALL),
        case(
            "GET",
            "/v1/{prefix}/namespaces",
            "/v1/lake/namespaces",
            None,
            READERS,
        ),
        case(
            "POST",
            "/v1/{prefix}/namespaces",
            "/v1/lake/namespaces",
            Some(json!({"namespace": ["made"]})),
            ADMINS,
        ),
        case(
            "POST",
            "/v1/{prefix}/namespaces",
            "/v1/lake%40dev/namespaces",
            Some(json!({"namespace": ["made_dev"]})),
            DEV,
        ),
        case("GET", ns, "/v1/lake/namespaces/db", None, READERS),
        case("HEAD", ns, "/v1/lake/namespaces/db", None, READERS),
        case("DELETE", ns, "/v1/lake/namespaces/empty", None, ADMINS),
        case(
            "POST",
            props_route,
            "/v1/lake/namespaces/db/properties",
            Some(json!({"updates": {"a": "b"}})),
            ADMINS,
        ),
        case(
            "GET",
            tables,
            "/v1/lake/namespaces/db/tables",
            None,
            READERS,
        ),
        case(
            "POST",
            tables,
            "/v1/lake/namespaces/db/tables",
            Some(json!({"name": "made", "schema": schema})),
            ADMINS,
        ),
        case(
            "GET",
            table,
            "/v1/lake/namespaces/db/tables/t",
            None,
            READERS,
        ),
        case(
            "HEAD",
            table,
            "/v1/lake/namespaces/db/tables/t",
            None,
            READERS,
        ),
        case(
            "POST",
            table,
            "/v1/lake/namespaces/db/tables/t",
            Some(props.clone()),
            ADMINS,
        ),
        case(
            "POST",
            table,
            "/v1/lake/namespaces/db/tables/t%40dev",
            Some(props.clone()),
            DEV,
        ),
        case(
            "DELETE",
            table,
            "/v1/lake/namespaces/db/tables/doomed",
            None,
            ADMINS,
        ),
        case(
            "POST",
            leak,
            "/v1/lake/namespaces/db/tables/t/metrics",
            Some(json!({"report-type": "scan-report"})),
            READERS,
        ),
        case(
            "GET",
            creds,
            "/v1/lake/namespaces/db/tables/t/credentials",
            None,
            READERS,
        ),
        // Allowed means the handler's own answer: `lake` signs nothing (501).
        case(
            "POST",
            sign,
            "/v1/lake/namespaces/db/tables/t/sign",
            Some(
                json!({"region": "us-east-1", "method": "GET", "uri": "http://x/y",
                        "headers": {}}),
            ),
            READERS,
        ),
        case(
            "POST",
            register,
            "/v1/lake/namespaces/db/register",
            Some(json!({"name": "again", "metadata-location": table_location})),
            ADMINS,
        ),
        case("GET", views, "/v1/lake/namespaces/db/views", None, READERS),
        case(
            "POST",
            views,
            "/v1/lake/namespaces/db/views",
            Some(view_body("made_view")),
            ADMINS,
        ),
        case("GET", view, "/v1/lake/namespaces/db/views/v", None, READERS),
        case(
            "HEAD",
            view,
            "/v1/lake/namespaces/db/views/v",
            None,
            READERS,
        ),
        case(
            "POST",
            view,
            "/v1/lake/namespaces/db/views/v",
            Some(
                json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}),
            ),
            ADMINS,
        ),
        case(
            "DELETE",
            view,
            "/v1/lake/namespaces/db/views/doomed_view",
            None,
            ADMINS,
        ),
        case(
            "POST",
            register_view,
            "/v1/lake/namespaces/db/register-view",
            Some(json!({"name": "again_view", "metadata-location": view_location})),
            ADMINS,
        ),
        case(
            "POST",
            "/v1/{prefix}/tables/rename",
            "/v1/lake/tables/rename",
            Some(
                json!({"source": {"namespace": ["db"], "name": "movable"}, "destination": {"namespace": ["db"], "name": "moved"}}),
            ),
            ADMINS,
        ),
        case(
            "POST",
            "/v1/{prefix}/views/rename",
            "/v1/lake/views/rename",
            Some(
                json!({"source": {"namespace": ["db"], "name": "movable_view"}, "destination": {"namespace": ["db"], "name": "moved_view"}}),
            ),
            ADMINS,
        ),
        case(
            "POST",
            "/v1/{prefix}/transactions/commit",
            "/v1/lake/transactions/commit",
            Some(transaction.clone()),
            ADMINS,
        ),
        case(
            "POST",
            "/v1/{prefix}/transactions/commit",
            "/v1/lake%40dev/transactions/commit",
            Some(transaction),
            DEV,
        ),
        case("GET", "/api/v1/whoami", "/api/v1/whoami", None, ALL),
        case("GET", "/api/v1/catalogs", "/api/v1/catalogs", None, ALL),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/refs",
            "/api/v1/catalogs/lake/refs",
            None,
            READERS,
        ),
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/refs",
            "/api/v1/catalogs/lake/refs",
            Some(json!({"name": "made", "from": "main"})),
            ADMINS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/refs/{name}",
            "/api/v1/catalogs/lake/refs/main",
            None,
            READERS,
        ),
        case(
            "PUT",
            "/api/v1/catalogs/{catalog}/refs/{name}",
            "/api/v1/catalogs/lake/refs/scratch",
            Some(json!({"to": "main"})),
            ADMINS,
        ),
        case(
            "DELETE",
            "/api/v1/catalogs/{catalog}/refs/{name}",
            "/api/v1/catalogs/lake/refs/scratch2",
            None,
            ADMINS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/refs/{name}/log",
            "/api/v1/catalogs/lake/refs/main/log",
            None,
            READERS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/log",
            "/api/v1/catalogs/lake/log",
            None,
            READERS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/commits/{reference}",
            "/api/v1/catalogs/lake/commits/main",
            None,
            READERS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/diff",
            "/api/v1/catalogs/lake/diff?from=main&to=dev",
            None,
            READERS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/entries",
            "/api/v1/catalogs/lake/entries",
            None,
            READERS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/events",
            "/api/v1/catalogs/lake/events",
            None,
            READERS,
        ),
        // (A stream with `wait` is refused as bad input once authorized: the matrix reads
        // whole answers, and a stream would not end.)
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/events/stream",
            "/api/v1/catalogs/lake/events/stream?wait=1s",
            None,
            READERS,
        ),
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/merge",
            "/api/v1/catalogs/lake/merge",
            Some(json!({"source": "dev", "target": "main", "dry-run": true})),
            ADMINS,
        ),
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/cherry-pick",
            "/api/v1/catalogs/lake/cherry-pick",
            Some(json!({"commits": ["dev"], "onto": "main", "dry-run": true})),
            ADMINS,
        ),
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/revert",
            "/api/v1/catalogs/lake/revert",
            Some(json!({"commit": "main", "on": "main", "dry-run": true})),
            ADMINS,
        ),
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/export",
            "/api/v1/catalogs/lake/export",
            Some(json!({})),
            ADMINS,
        ),
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/maintenance/expire-snapshots",
            "/api/v1/catalogs/lake/maintenance/expire-snapshots",
            Some(json!({"branch": "scratch3", "dry-run": true})),
            ADMINS,
        ),
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/maintenance/remove-orphan-files",
            "/api/v1/catalogs/lake/maintenance/remove-orphan-files",
            Some(json!({"dry-run": true})),
            ADMINS,
        ),
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/maintenance/collect-objects",
            "/api/v1/catalogs/lake/maintenance/collect-objects",
            Some(json!({"dry-run": true})),
            ADMINS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/retention",
            "/api/v1/catalogs/lake/retention",
            None,
            ADMINS,
        ),
        // Allowed, it is refused as too short (400), after authorization.
        case(
            "PUT",
            "/api/v1/catalogs/{catalog}/retention",
            "/api/v1/catalogs/lake/retention",
            Some(json!({"history-ms": 1})),
            ADMINS,
        ),
        case(
            "DELETE",
            "/api/v1/catalogs/{catalog}/retention",
            "/api/v1/catalogs/lake/retention",
            None,
            ADMINS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/webhooks",
            "/api/v1/catalogs/lake/webhooks",
            None,
            ADMINS,
        ),
        // Allowed, it is refused as a bad URL (400), after authorization.
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/webhooks",
            "/api/v1/catalogs/lake/webhooks",
            Some(json!({"url": "ftp://x/"})),
            ADMINS,
        ),
        // Allowed, these are answered as no such webhook (404), after authorization.
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/webhooks/{webhook}",
            "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef",
            None,
            ADMINS,
        ),
        case(
            "PATCH",
            "/api/v1/catalogs/{catalog}/webhooks/{webhook}",
            "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef",
            Some(json!({"enabled": false})),
            ADMINS,
        ),
        case(
            "DELETE",
            "/api/v1/catalogs/{catalog}/webhooks/{webhook}",
            "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef",
            None,
            ADMINS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/webhooks/{webhook}/attempts",
            "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef/attempts",
            None,
            ADMINS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters",
            "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef/dead-letters",
            None,
            ADMINS,
        ),
        case(
            "DELETE",
            "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters/{event}",
            "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef/dead-letters/3.0",
            None,
            ADMINS,
        ),
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/webhooks/{webhook}/dead-letters/{event}/redeliver",
            "/api/v1/catalogs/lake/webhooks/0123456789abcdef0123456789abcdef/dead-letters/3.0/redeliver",
            None,
            ADMINS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/protection",
            "/api/v1/catalogs/lake/protection",
            None,
            READERS,
        ),
        // Allowed, it is refused as a bad pattern (400), after authorization.
        case(
            "PUT",
            "/api/v1/catalogs/{catalog}/protection",
            "/api/v1/catalogs/lake/protection",
            Some(json!({"rules": [{"branch": "ma*n"}]})),
            ADMINS,
        ),
        case(
            "DELETE",
            "/api/v1/catalogs/{catalog}/protection",
            "/api/v1/catalogs/lake/protection",
            None,
            ADMINS,
        ),
        // Needs read on both branches.
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/merge-requests",
            "/api/v1/catalogs/lake/merge-requests",
            Some(json!({"source": "dev", "target": "main", "title": "t"})),
            READERS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/merge-requests",
            "/api/v1/catalogs/lake/merge-requests",
            None,
            READERS,
        ),
        // Allowed, these are answered as no such request (404), after authorization.
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/merge-requests/{number}",
            "/api/v1/catalogs/lake/merge-requests/999",
            None,
            READERS,
        ),
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/merge-requests/{number}/checks",
            "/api/v1/catalogs/lake/merge-requests/999/checks",
            None,
            READERS,
        ),
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/merge-requests/{number}/merge",
            "/api/v1/catalogs/lake/merge-requests/999/merge",
            None,
            READERS,
        ),
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/merge-requests/{number}/close",
            "/api/v1/catalogs/lake/merge-requests/999/close",
            None,
            READERS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/maintenance/jobs",
            "/api/v1/catalogs/lake/maintenance/jobs",
            None,
            ADMINS,
        ),
        // Allowed, it is answered as no such job (404), after authorization.
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/maintenance/jobs/{job}",
            "/api/v1/catalogs/lake/maintenance/jobs/1700000000000-abcdef12",
            None,
            ADMINS,
        ),
        // Allowed, it is refused as no bundle (400), after authorization.
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/import",
            "/api/v1/catalogs/lake/import",
            Some(json!({})),
            ADMINS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/remotes",
            "/api/v1/catalogs/lake/remotes",
            None,
            READERS,
        ),
        // The first admin of each role's turn adds it, the next is told it exists (409).
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/remotes",
            "/api/v1/catalogs/lake/remotes",
            Some(json!({"name": "origin", "url": "http://origin.example:8080"})),
            ADMINS,
        ),
        case(
            "GET",
            "/api/v1/catalogs/{catalog}/remotes/{remote}",
            "/api/v1/catalogs/lake/remotes/origin",
            None,
            READERS,
        ),
        // Allowed, it is refused as no pack (400), after authorization.
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/remotes/{remote}/fetched",
            "/api/v1/catalogs/lake/remotes/origin/fetched",
            Some(json!({})),
            ADMINS,
        ),
        case(
            "DELETE",
            "/api/v1/catalogs/{catalog}/remotes/{remote}",
            "/api/v1/catalogs/lake/remotes/origin",
            None,
            ADMINS,
        ),
        // Read on every ref sent.
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/pack",
            "/api/v1/catalogs/lake/pack",
            Some(json!({"want": ["main"]})),
            READERS,
        ),
        // Refused before the ref is looked up: no one learns which refs exist without read.
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/pack",
            "/api/v1/catalogs/lake/pack",
            Some(json!({"want": ["no-such-branch"]})),
            READERS,
        ),
        // Write on the branch moved (a `dev*` writer's); allowed, it is refused as no pack
        // (400), after authorization.
        case(
            "POST",
            "/api/v1/catalogs/{catalog}/push",
            "/api/v1/catalogs/lake/push?branch=dev&expected-head=0000000000000000000000000000000000000000000000000000000000000000",
            Some(json!({})),
            &["root", "admin", "writer"],
        ),
        case("GET", "/api/v1/audit", "/api/v1/audit", None, ADMINS),
        case(
            "GET",
            "/api/v1/audit/verify",
            "/api/v1/audit/verify",
            None,
            ROOT,
        ),
        case("POST", "/api/v1/logout", "/api/v1/logout", None, ALL),
        // The web UI: each page as its API route.
        case("GET", "/ui", "/ui", None, ALL),
        case("GET", "/ui/audit", "/ui/audit", None, ADMINS),
        case("GET", "/ui/admin/users", "/ui/admin/users", None, ADMINS),
        case(
            "POST",
            "/ui/admin/users",
            "/ui/admin/users",
            Some(json!({"username": "made_in_ui", "password": "a-long-enough-password"})),
            ADMINS,
        ),
        case(
            "POST",
            "/ui/admin/users/{user}/disabled",
            "/ui/admin/users/made_in_ui/disabled",
            Some(json!({"disabled": "false"})),
            ADMINS,
        ),
        case(
            "GET",
            "/ui/admin/service-users",
            "/ui/admin/service-users",
            None,
            ADMINS,
        ),
        case(
            "POST",
            "/ui/admin/service-users",
            "/ui/admin/service-users",
            Some(json!({"name": "svc_in_ui"})),
            ADMINS,
        ),
        case(
            "GET",
            "/ui/admin/service-users/{name}/keys",
            "/ui/admin/service-users/svc_in_ui/keys",
            None,
            ADMINS,
        ),
        case(
            "POST",
            "/ui/admin/service-users/{name}/keys",
            "/ui/admin/service-users/svc_in_ui/keys",
            Some(json!({})),
            ADMINS,
        ),
        case("GET", "/ui/admin/roles", "/ui/admin/roles", None, ADMINS),
        case(
            "POST",
            "/ui/admin/roles",
            "/ui/admin/roles",
            Some(json!({"name": "made_in_ui", "grants": "[]"})),
            ADMINS,
        ),
        case(
            "GET",
            "/ui/admin/roles/{role}",
            "/ui/admin/roles/readers",
            None,
            ADMINS,
        ),
        case(
            "POST",
            "/ui/admin/roles/{role}/members",
            "/ui/admin/roles/readers/members",
            Some(json!({"principal": "user:acme/reader", "bind": "true"})),
            ADMINS,
        ),
        case(
            "POST",
            "/ui/admin/service-users/{name}/keys/{key}/revoke",
            "/ui/admin/service-users/svc_in_ui/keys/0000000000000000/revoke",
            Some(json!({})),
            ADMINS,
        ),
        case("GET", "/ui/admin/tenants", "/ui/admin/tenants", None, ROOT),
        case(
            "POST",
            "/ui/admin/tenants",
            "/ui/admin/tenants",
            Some(json!({"name": "made_in_ui"})),
            ROOT,
        ),
        case(
            "POST",
            "/ui/admin/warehouses",
            "/ui/admin/warehouses",
            Some(json!({"name": "wh_ui", "storage": "x"})),
            ADMINS,
        ),
        case(
            "POST",
            "/ui/admin/catalogs",
            "/ui/admin/catalogs",
            Some(json!({"name": "cat_ui", "warehouse": "files"})),
            ADMINS,
        ),
        case(
            "GET",
            "/ui/admin/warehouses",
            "/ui/admin/warehouses",
            None,
            ADMINS,
        ),
        case("GET", "/ui/audit/verify", "/ui/audit/verify", None, ROOT),
        case(
            "POST",
            "/ui/logout",
            "/ui/logout",
            Some(json!({"csrf": ""})),
            ALL,
        ),
        case(
            "GET",
            "/ui/catalogs/{catalog}/merge-requests",
            "/ui/catalogs/lake/merge-requests",
            None,
            READERS,
        ),
        case(
            "GET",
            "/ui/catalogs/{catalog}/remotes",
            "/ui/catalogs/lake/remotes",
            None,
            READERS,
        ),
        case(
            "POST",
            "/ui/catalogs/{catalog}/merge-requests",
            "/ui/catalogs/lake/merge-requests",
            Some(json!({"source": "dev", "target": "main", "title": "t"})),
            READERS,
        ),
        // Allowed, these are answered as no such request (404), after authorization.
        case(
            "GET",
            "/ui/catalogs/{catalog}/merge-requests/{number}",
            "/ui/catalogs/lake/merge-requests/999",
            None,
            READERS,
        ),
        case(
            "POST",
            "/ui/catalogs/{catalog}/merge-requests/{number}/checks",
            "/ui/catalogs/lake/merge-requests/999/checks",
            Some(json!({"csrf": ""})),
            READERS,
        ),
        case(
            "POST",
            "/ui/catalogs/{catalog}/merge-requests/{number}/merge",
            "/ui/catalogs/lake/merge-requests/999/merge",
            Some(json!({"csrf": ""})),
            READERS,
        ),
        case(
            "POST",
            "/ui/catalogs/{catalog}/merge-requests/{number}/close",
            "/ui/catalogs/lake/merge-requests/999/close",
            Some(json!({"csrf": ""})),
            READERS,
        ),
        case(
            "POST",
            "/ui/catalogs/{catalog}/refs",
            "/ui/catalogs/lake/refs",
            Some(json!({"name": "from_ui", "from": "main"})),
            ADMINS,
        ),
        case(
            "POST",
            "/ui/catalogs/{catalog}/refs/{name}/delete",
            "/ui/catalogs/lake/refs/scratch3/delete",
            Some(json!({})),
            ADMINS,
        ),
        case(
            "GET",
            "/ui/catalogs/{catalog}",
            "/ui/catalogs/lake",
            None,
            READERS,
        ),
        case(
            "GET",
            "/ui/catalogs/{catalog}/log",
            "/ui/catalogs/lake/log",
            None,
            READERS,
        ),
        case(
            "GET",
            "/ui/catalogs/{catalog}/commits/{reference}",
            "/ui/catalogs/lake/commits/main",
            None,
            READERS,
        ),
        case(
            "GET",
            "/ui/catalogs/{catalog}/entries",
            "/ui/catalogs/lake/entries",
            None,
            READERS,
        ),
        case(
            "GET",
            "/ui/catalogs/{catalog}/compare",
            "/ui/catalogs/lake/compare?source=dev&target=main",
            None,
            READERS,
        ),
        case(
            "POST",
            "/ui/catalogs/{catalog}/pick",
            "/ui/catalogs/lake/pick",
            Some(json!({"action": "revert", "commit": "main", "branch": "main"})),
            ADMINS,
        ),
        case(
            "POST",
            "/ui/catalogs/{catalog}/merge",
            "/ui/catalogs/lake/merge",
            Some(json!({"source": "scratch", "target": "main"})),
            ADMINS,
        ),
        case(
            "GET",
            "/ui/catalogs/{catalog}/table",
            "/ui/catalogs/lake/table?ref=main&key=db%1Ft",
            None,
            READERS,
        ),
    ]
}

#[tokio::test]
async fn every_role_against_every_route() {
    let env = secure().await;
    let identity = &env.identity;
    identity
        .create_user(
            &Scope::tenant("acme").unwrap(),
            &PrincipalName::new("nobody").unwrap(),
            &Password::new(PASSWORD),
            false,
        )
        .await
        .unwrap();
    let admin = token(&env, Some("acme"), "admin").await;
    // What the requests act on.
    let schema = json!({"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": false}]});
    for namespace in ["db", "empty"] {
        let (status, _) = as_(
            &env,
            &admin,
            Method::POST,
            "/v1/lake/namespaces",
            Some(json!({"namespace": [namespace]})),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    }
    let mut table_location = String::new();
    // What only acme has: its tables' and views' files and its commits.
    let mut markers: Vec<String> = Vec::new();
    for name in ["t", "doomed", "movable"] {
        let (status, body) = as_(
            &env,
            &admin,
            Method::POST,
            "/v1/lake/namespaces/db/tables",
            Some(json!({"name": name, "schema": schema})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        table_location = body["metadata-location"].as_str().unwrap().to_owned();
        markers.push(table_location.clone());
        markers.push(body["metadata"]["table-uuid"].as_str().unwrap().to_owned());
    }
    let mut view_location = String::new();
    for name in ["v", "doomed_view", "movable_view"] {
        let (status, body) = as_(
            &env,
            &admin,
            Method::POST,
            "/v1/lake/namespaces/db/views",
            Some(view_body(name)),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        view_location = body["metadata-location"].as_str().unwrap().to_owned();
        markers.push(view_location.clone());
    }
    for branch in ["dev", "scratch", "scratch2", "scratch3"] {
        let (status, _) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/catalogs/lake/refs",
            Some(json!({"name": branch, "from": "main"})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let cases = matrix(&table_location, &view_location);
    // Every route that is not public is in this matrix or in the administration API's
    // (`api/tests/admin.rs`, which checks its own routes the same way).
    let covered: BTreeSet<(&str, &str)> = cases.iter().map(|c| (c.method, c.route)).collect();
    let administration = |path: &str| {
        [
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
        .any(|p| path.starts_with(&format!("/api/v1/{p}")))
            || path == "/api/v1/catalogs"
            || path == "/api/v1/catalogs/{catalog}"
    };
    for route in ROUTES
        .iter()
        .filter(|r| r.need != Need::Public && !administration(r.path))
    {
        assert!(
            covered.contains(&(route.method, route.path)),
            "{} {} is missing from the authorization matrix",
            route.method,
            route.path
        );
    }
    let (_, log) = as_(&env, &admin, Method::GET, "/api/v1/catalogs/lake/log", None).await;
    // (The catalogs' first commits are alike in every tenant, content addressing gives them one
    // hash: only the commits acme made are acme's.)
    for commit in log["commits"].as_array().unwrap() {
        if commit["author"] == "user:acme/admin" {
            markers.push(commit["hash"].as_str().unwrap().to_owned());
        }
    }
    // Tenant isolation on every route: globex's admin makes every request of the matrix (in its
    // own tenant, where `lake` exists too) and no answer carries anything of acme's.
    let globex = token(&env, Some("globex"), "admin").await;
    for case in &cases {
        let method = Method::from_bytes(case.method.as_bytes()).unwrap();
        let (_, body) = as_(&env, &globex, method, case.uri, case.body.clone()).await;
        let text = body.to_string();
        for marker in &markers {
            assert!(
                !text.contains(marker.as_str()),
                "{} {} shows globex something of acme's ({marker}): {text}",
                case.method,
                case.uri
            );
        }
    }
    let mut failures = Vec::new();
    for role in ROLES {
        for case in &cases {
            // A fresh token per request: `logout` revokes the one it is sent with.
            let token = match role {
                "root" => token(&env, None, "root").await,
                other => token(&env, Some("acme"), other).await,
            };
            let method = Method::from_bytes(case.method.as_bytes()).unwrap();
            let (status, body) = as_(&env, &token, method, case.uri, case.body.clone()).await;
            let allowed = case.allowed.contains(&role);
            let refused = matches!(status, StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED);
            if allowed == refused {
                failures.push(format!(
                    "{role} {} {}: expected {}, got {status} {body}",
                    case.method,
                    case.uri,
                    if allowed { "allowed" } else { "403" }
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn listings_show_only_what_the_caller_may_read() {
    let env = secure().await;
    let admin = token(&env, Some("acme"), "admin").await;
    let schema = json!({"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": false}]});
    for namespace in ["hr", "sales"] {
        let (status, _) = as_(
            &env,
            &admin,
            Method::POST,
            "/v1/lake/namespaces",
            Some(json!({"namespace": [namespace]})),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        for table in ["a", "b"] {
            let uri = format!("/v1/lake/namespaces/{namespace}/tables");
            let (status, _) = as_(
                &env,
                &admin,
                Method::POST,
                &uri,
                Some(json!({"name": table, "schema": schema})),
            )
            .await;
            assert_eq!(status, StatusCode::OK);
        }
    }
    env.identity
        .create_user(
            &Scope::tenant("acme").unwrap(),
            &PrincipalName::new("analyst").unwrap(),
            &Password::new(PASSWORD),
            false,
        )
        .await
        .unwrap();
    let grants = vec![Grant::new(
        Privilege::Read,
        Resource::Table {
            tenant: "acme".into(),
            catalog: "lake".into(),
            namespace: vec!["sales".into()],
            name: "a".into(),
        },
    )];
    let security = Security::required(env.identity.clone(), env.store.clone(), env.store.clone());
    security
        .authz
        .create_role(
            &root_principal(),
            &[],
            Role::new("acme", "one-table", grants),
        )
        .await
        .unwrap();
    security
        .authz
        .bind(
            &root_principal(),
            &[],
            "acme",
            "one-table",
            "user:acme/analyst",
        )
        .await
        .unwrap();
    let analyst = token(&env, Some("acme"), "analyst").await;
    let (status, body) = as_(&env, &analyst, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["namespaces"], json!([["sales"]]), "hr is not shown");
    let (status, body) = as_(
        &env,
        &analyst,
        Method::GET,
        "/v1/lake/namespaces/sales/tables",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["identifiers"],
        json!([{"namespace": ["sales"], "name": "a"}])
    );
    let (status, _) = as_(
        &env,
        &analyst,
        Method::GET,
        "/v1/lake/namespaces/hr/tables",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // The admin still sees everything.
    let (_, body) = as_(&env, &admin, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(body["namespaces"], json!([["hr"], ["sales"]]));
}
