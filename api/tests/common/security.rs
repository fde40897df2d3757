//! What the security tests share: a secured router over tenants `acme` and `globex` with the
//! users and roles described at [`secure`], a clock they control, tokens signed in as those
//! users, and calls made as their holder.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use pangolin_backend_memory::MemoryBackend;
use pangolin_catalog::authz::{BranchPattern, Grant, Privilege, Resource, Role};
use pangolin_identity::{Identity, ManualClock};
use pangolin_store::Timestamp;
use serde_json::Value;
use tempfile::TempDir;

use super::secured::{PASSWORD, ROOT_PASSWORD, secured, send_as, sign_in};
use super::send_form;

pub struct Secure {
    pub app: axum::Router,
    pub dir: TempDir,
    pub store: Arc<MemoryBackend>,
    pub identity: Identity,
    pub clock: Arc<ManualClock>,
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
pub async fn secure() -> Secure {
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
        dir: secured.dir,
        store: secured.store,
        identity: secured.identity,
        clock,
    }
}

pub async fn as_(
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

pub async fn login(
    env: &Secure,
    tenant: Option<&str>,
    user: &str,
    password: &str,
) -> (StatusCode, Value) {
    sign_in(&env.app, tenant, user, password).await
}

pub async fn token(env: &Secure, tenant: Option<&str>, user: &str) -> String {
    let password = if tenant.is_none() {
        ROOT_PASSWORD
    } else {
        PASSWORD
    };
    let (status, body) = login(env, tenant, user, password).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["access_token"].as_str().unwrap().to_owned()
}
