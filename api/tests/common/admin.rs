//! What the administration API tests share: a secured router over tenants `acme` and `globex`
//! with the users, roles, warehouse and service user described at [`env`], tokens signed in
//! as them, and calls made as their holder.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use pangolin_catalog::authz::{BranchPattern, Grant, Privilege, Resource, Role};
use pangolin_catalog::tenancy::{StorageConfig, WarehouseSpec};
use pangolin_identity::{PrincipalName, SystemClock, TenantName};
use serde_json::Value;
use tempfile::TempDir;

use super::secured::{PASSWORD, ROOT_PASSWORD, secured, send_as, sign_in};

pub struct Env {
    pub app: axum::Router,
    pub dir: TempDir,
    /// The id of globex's service user `etl`'s key.
    pub globex_key_id: String,
}

fn lake(tenant: &str) -> Resource {
    Resource::catalog(tenant, "lake")
}

/// Tenants `acme` (catalog `lake`) and `globex` (catalogs `lake` and `secret`, an extra
/// warehouse `vault`, a user `bob`, a service user `etl` with a key, a role `partner-readers`).
/// In `acme`: `admin` (tenant admin), `reader` (read on `lake`), `writer` (read on `lake`,
/// write and create on `dev*`), `nobody` (no role), `usermgr` (manage-users on the tenant),
/// `nsgranter` (manage-grants and read on namespace `a` of `lake`), `devlead` (manage-grants
/// on `lake`, write on `dev*`).
pub async fn env() -> Env {
    let dev = BranchPattern::parse("dev*").unwrap();
    let namespace_a = Resource::namespace("acme", "lake", ["a"]);
    let roles = [
        (
            Role::new(
                "acme",
                "readers",
                vec![Grant::new(Privilege::Read, lake("acme"))],
            ),
            "user:acme/reader",
        ),
        (
            Role::new(
                "acme",
                "dev-writers",
                vec![
                    Grant::new(Privilege::Read, lake("acme")),
                    Grant::new(Privilege::Write, lake("acme")).at(dev.clone()),
                    Grant::new(Privilege::Create, lake("acme")).at(dev.clone()),
                ],
            ),
            "user:acme/writer",
        ),
        (
            Role::new(
                "acme",
                "user-managers",
                vec![Grant::new(Privilege::ManageUsers, Resource::tenant("acme"))],
            ),
            "user:acme/usermgr",
        ),
        (
            Role::new(
                "acme",
                "a-granters",
                vec![
                    Grant::new(Privilege::ManageGrants, namespace_a.clone()),
                    Grant::new(Privilege::Read, namespace_a),
                ],
            ),
            "user:acme/nsgranter",
        ),
        (
            Role::new(
                "acme",
                "dev-leads",
                vec![
                    Grant::new(Privilege::ManageGrants, lake("acme")),
                    Grant::new(Privilege::Write, lake("acme")).at(dev),
                ],
            ),
            "user:acme/devlead",
        ),
        (
            Role::new(
                "globex",
                "partner-readers",
                vec![Grant::new(Privilege::Read, lake("globex"))],
            ),
            "user:globex/bob",
        ),
    ];
    let users = [
        ("acme", "admin", true),
        ("acme", "reader", false),
        ("acme", "writer", false),
        ("acme", "nobody", false),
        ("acme", "usermgr", false),
        ("acme", "nsgranter", false),
        ("acme", "devlead", false),
        ("globex", "admin", true),
        ("globex", "bob", false),
    ];
    let secured = secured(&users, roles.into(), Arc::new(SystemClock)).await;
    let vault = WarehouseSpec {
        storage: StorageConfig::Local {
            root: format!("file://{}/vault", secured.dir.path().display()),
        },
        credentials: None,
    };
    secured
        .tenancy
        .create_warehouse("globex", "vault", vault)
        .await
        .unwrap();
    let globex = TenantName::new("globex").unwrap();
    let etl = PrincipalName::new("etl").unwrap();
    secured
        .identity
        .create_service_user(&globex, &etl)
        .await
        .unwrap();
    let globex_key_id = secured
        .identity
        .create_api_key(&globex, &etl, None)
        .await
        .unwrap()
        .info
        .id
        .to_string();
    Env {
        app: secured.app,
        dir: secured.dir,
        globex_key_id,
    }
}

pub async fn login(env: &Env, tenant: Option<&str>, user: &str, password: &str) -> StatusCode {
    sign_in(&env.app, tenant, user, password).await.0
}

pub async fn token_with(env: &Env, tenant: Option<&str>, user: &str, password: &str) -> String {
    let (status, value) = sign_in(&env.app, tenant, user, password).await;
    assert_eq!(status, StatusCode::OK, "{value}");
    value["access_token"].as_str().unwrap().to_owned()
}

/// A token of `user` of `acme`, or of root for `root`.
pub async fn token(env: &Env, user: &str) -> String {
    match user {
        "root" => token_with(env, None, "root", ROOT_PASSWORD).await,
        other => token_with(env, Some("acme"), other, PASSWORD).await,
    }
}

/// Sends `body` as the holder of `token`; root acts in `acme`.
pub async fn as_(
    env: &Env,
    token: &str,
    method: Method,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let body = body.map(|b| b.to_string());
    send_as(
        &env.app,
        token,
        method,
        uri,
        body,
        &[("x-pangolin-tenant", "acme")],
    )
    .await
}

/// Sends a raw body text (for malformed bodies).
pub async fn raw(
    env: &Env,
    token: &str,
    method: Method,
    uri: &str,
    body: &str,
) -> (StatusCode, Value) {
    send_as(&env.app, token, method, uri, Some(body.to_owned()), &[]).await
}

pub fn names(list: &Value, field: &str, key: &str) -> Vec<String> {
    list[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item[key].as_str().unwrap().to_owned())
        .collect()
}

pub fn error_type(body: &Value) -> &str {
    body["error"]["type"].as_str().unwrap_or_default()
}
