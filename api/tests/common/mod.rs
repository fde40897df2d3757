//! What the router tests share: a server over a fresh in-memory catalog `lake` with a warehouse
//! in a temporary directory, and one way to call it.
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

pub mod admin;
pub mod delegation;
pub mod management;
pub mod receiver;
pub mod rest;
pub mod secured;
pub mod security;
pub mod tables;
pub mod ui;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use pangolin_api::directory::CatalogDirectory;
use pangolin_api::security::Security;
use pangolin_api::{AppState, SharedState, router};
use pangolin_backend_memory::MemoryBackend;
use pangolin_catalog::tenancy::{
    CatalogKind, CreateTenantError, CreateWarehouseError, NewCatalog, SecretKey, StorageConfig,
    Tenancy, WarehouseSpec,
};
use pangolin_store::ObjectCache;
use serde_json::Value;
use tempfile::TempDir;
use tower::ServiceExt;

/// The URL of a service `scripts/test` starts, from the environment variable `var`, or
/// `None` after saying why; in CI its absence is a failure, never a silent skip.
pub fn started_service(var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "CI needs {what}"
            );
            eprintln!("skipped: {var} is not set (scripts/test starts {what})");
            None
        }
    }
}

/// The router over catalog `lake` (the default), and the warehouse directory it writes to,
/// which lives as long as this value.
pub struct TestApp {
    pub app: axum::Router,
    pub dir: TempDir,
    /// The store and cache behind the router, for tests that look underneath.
    pub store: Arc<MemoryBackend>,
    pub cache: Arc<ObjectCache>,
    /// The state the router serves, for tests that run the server's background work.
    pub state: AppState,
}

impl TestApp {
    pub async fn new() -> Self {
        let store = Arc::new(MemoryBackend::new());
        Self::with_audit(store.clone(), store).await
    }

    /// The same over `store`, with the route layer's audit events written to `audit` (a
    /// commit's event still goes to the store with its publish).
    pub async fn with_audit(
        store: Arc<MemoryBackend>,
        audit: Arc<dyn pangolin_records::AuditLog>,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(ObjectCache::new(16 << 20));
        let tenancy = Tenancy::new(store.clone(), cache.clone(), SecretKey::generate());
        add_catalog(
            &tenancy,
            "default",
            "lake",
            &format!("file://{}", dir.path().display()),
        )
        .await;
        let state = AppState::from(SharedState {
            store: store.clone(),
            cache: cache.clone(),
            tenant: "default".into(),
            commits: Default::default(),
            events: Default::default(),
            staged: Default::default(),
            security: Arc::new(Security::disabled(store.clone(), audit)),
            default_catalog: "lake".into(),
            catalogs: Arc::new(CatalogDirectory::new(tenancy)),
        });
        Self {
            app: router(state.clone()),
            dir,
            store,
            cache,
            state,
        }
    }

    /// The warehouse root, as a `file://` location.
    pub fn root(&self) -> String {
        format!("file://{}", self.dir.path().display())
    }
}

/// Registers `tenant` (when new) with a local warehouse `files` at `root` (when new), and
/// catalog `catalog` bound to it, with its repository.
pub async fn add_catalog(tenancy: &Tenancy, tenant: &str, catalog: &str, root: &str) {
    match tenancy.create_tenant(tenant, None).await {
        Ok(_) | Err(CreateTenantError::Exists(_)) => {}
        Err(e) => panic!("{e}"),
    }
    let spec = WarehouseSpec {
        storage: StorageConfig::Local {
            root: root.to_owned(),
        },
        credentials: None,
    };
    match tenancy.create_warehouse(tenant, "files", spec).await {
        Ok(_) | Err(CreateWarehouseError::Exists { .. }) => {}
        Err(e) => panic!("{e}"),
    }
    let new = NewCatalog {
        warehouse: "files".to_owned(),
        kind: CatalogKind::Local,
        properties: Default::default(),
    };
    tenancy
        .create_catalog(tenant, catalog, new, "test")
        .await
        .unwrap();
}

/// Sends a request (a JSON body when given) and returns the status, headers and body (JSON;
/// `Null` when empty; a string when it is not JSON).
pub async fn send(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Option<String>,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Value) {
    let mut request = Request::builder().method(method).uri(uri);
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = body.map_or_else(Body::empty, Body::from);
    let response = app
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    (status, headers, value)
}

/// Sends a form-encoded body (as a browser posts a form) with `headers` besides.
pub async fn send_form(
    app: &axum::Router,
    method: Method,
    uri: &str,
    form: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/x-www-form-urlencoded");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::from(form.to_owned())).unwrap())
        .await
        .unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, headers, value)
}

/// Creates namespace `name` at the catalog prefix `prefix` (`lake`, `lake%40dev`), which
/// must succeed.
pub async fn create_namespace(app: &axum::Router, prefix: &str, name: &str) {
    let (status, body) = call(
        app,
        axum::http::Method::POST,
        &format!("/v1/{prefix}/namespaces"),
        Some(serde_json::json!({"namespace": [name]})),
    )
    .await;
    assert!(
        status.is_success(),
        "creating namespace {name}: {status} {body}"
    );
}

/// [`send`] with a JSON body and no extra headers, for the status and body.
pub async fn call(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let (status, _, value) = send(app, method, uri, body.map(|b| b.to_string()), &[]).await;
    (status, value)
}
