//! A router that requires sign-in, over tenants `acme` (catalog `lake`) and `globex` (catalogs
//! `lake` and `secret`), with the users and roles a test asks for; and calls made as someone.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use pangolin_api::directory::CatalogDirectory;
use pangolin_api::security::Security;
use pangolin_api::security::external::Providers;
use pangolin_api::{AppState, SharedState, router};
use pangolin_backend_memory::MemoryBackend;
use pangolin_catalog::authz::{Principal, PrincipalKind, Role};
use pangolin_catalog::tenancy::{SecretKey, Tenancy};
use pangolin_identity::{Clock, Identity, IdentityConfig, Password, PrincipalName, Scope};
use pangolin_store::ObjectCache;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::{add_catalog, send};

pub const ROOT_PASSWORD: &str = "root-password-for-tests";
pub const PASSWORD: &str = "a-long-enough-password";

/// The secured router and what stands behind it.
pub struct Secured {
    pub app: axum::Router,
    pub dir: TempDir,
    pub store: Arc<MemoryBackend>,
    pub tenancy: Tenancy,
    pub identity: Identity,
    pub security: Arc<Security>,
}

/// Root, as the role store sees it.
pub fn root_principal() -> Principal {
    Principal {
        id: "user:~/root".into(),
        tenant: None,
        kind: PrincipalKind::User,
        is_admin: true,
        groups: Vec::new(),
    }
}

/// The tenants and catalogs above; `root` with ROOT_PASSWORD; `users` (tenant, name, admin)
/// with PASSWORD; each role created and bound to its member. Time comes from `clock`.
pub async fn secured(
    users: &[(&str, &str, bool)],
    roles: Vec<(Role, &str)>,
    clock: Arc<dyn Clock>,
) -> Secured {
    secured_with(users, roles, clock, Providers::default()).await
}

/// As [`secured`], also taking the tokens of identity `providers`.
pub async fn secured_with(
    users: &[(&str, &str, bool)],
    roles: Vec<(Role, &str)>,
    clock: Arc<dyn Clock>,
    providers: Providers,
) -> Secured {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryBackend::new());
    let cache = Arc::new(ObjectCache::new(16 << 20));
    let tenancy = Tenancy::new(store.clone(), cache.clone(), SecretKey::generate());
    let root = format!("file://{}", dir.path().display());
    for (tenant, catalog) in [
        ("acme", "lake"),
        ("globex", "lake"),
        ("globex", "secret"),
        ("default", "lake"),
    ] {
        add_catalog(&tenancy, tenant, catalog, &root).await;
    }
    let config = IdentityConfig {
        bcrypt_cost: 4,
        ..IdentityConfig::default()
    };
    let identity = Identity::open(store.clone(), config, clock).await.unwrap();
    identity
        .bootstrap_root(Some(&Password::new(ROOT_PASSWORD)))
        .await
        .unwrap();
    for (tenant, name, admin) in users {
        identity
            .create_user(
                &Scope::tenant(*tenant).unwrap(),
                &PrincipalName::new(*name).unwrap(),
                &Password::new(PASSWORD),
                *admin,
            )
            .await
            .unwrap();
    }
    let security = Arc::new(
        Security::required(identity.clone(), store.clone(), store.clone()).with_external(providers),
    );
    for (role, member) in roles {
        let (tenant, name) = (role.tenant.clone(), role.name.clone());
        security
            .authz
            .create_role(&root_principal(), &[], role)
            .await
            .unwrap();
        security
            .authz
            .bind(&root_principal(), &[], &tenant, &name, member)
            .await
            .unwrap();
    }
    let app = router(AppState::from(SharedState {
        store: store.clone(),
        cache,
        commits: Default::default(),
        events: Default::default(),
        staged: Default::default(),
        security: security.clone(),
        tenant: "default".into(),
        default_catalog: "lake".into(),
        catalogs: Arc::new(CatalogDirectory::new(tenancy.clone())),
    }));
    Secured {
        app,
        dir,
        store,
        tenancy,
        identity,
        security,
    }
}

/// `POST /api/v1/login` (root-scope users leave `tenant` out).
pub async fn sign_in(
    app: &axum::Router,
    tenant: Option<&str>,
    user: &str,
    password: &str,
) -> (StatusCode, Value) {
    let mut body = json!({"username": user, "password": password});
    if let Some(t) = tenant {
        body["tenant"] = json!(t);
    }
    let (status, _, value) = send(
        app,
        Method::POST,
        "/api/v1/login",
        Some(body.to_string()),
        &[],
    )
    .await;
    (status, value)
}

/// Sends `body` (raw text) as the holder of `token`, with `headers` besides.
pub async fn send_as(
    app: &axum::Router,
    token: &str,
    method: Method,
    uri: &str,
    body: Option<String>,
    headers: &[(&str, &str)],
) -> (StatusCode, Value) {
    let auth = format!("Bearer {token}");
    let mut all = vec![("authorization", auth.as_str())];
    all.extend_from_slice(headers);
    let (status, _, value) = send(app, method, uri, body, &all).await;
    (status, value)
}
