//! HTTP: the Iceberg REST catalog API (namespaces, tables and views), branch and merge management,
//! health and readiness.
//!
//! Handlers are thin: they parse, call the catalog, and map every error explicitly to the
//! Iceberg error model ([`error`]). The web UI ([`ui`]) renders the same handlers' answers as
//! pages. Only this crate knows HTTP.

pub mod address;
pub mod config;
pub mod delegation;
pub mod directory;
pub mod error;
pub mod extract;
pub mod idempotency;
pub mod jobs;
pub mod json;
pub mod management;
pub mod namespaces;
pub mod observe;
pub mod security;
pub mod staged;
pub mod state;
pub mod tables;
pub mod transactions;
pub mod ui;
pub mod views;
pub mod webhooks;

use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use tower_http::timeout::TimeoutLayer;

pub use error::ApiError;
pub use state::{AppState, SharedState};

/// Largest request body accepted: table metadata updates are the biggest real requests and
/// stay far below this.
pub const MAX_BODY_BYTES: usize = 8 << 20;

/// How long a server trusts what it read of records other servers may change (catalogs,
/// callers, roles), unless configured: the longest such a change takes to apply here.
pub const SHARED_STATE_TTL: Duration = Duration::from_secs(2);

/// How long one request may take before it is answered with 408.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The whole HTTP surface.
pub fn router(state: AppState) -> Router {
    let iceberg = Router::new()
        .route("/v1/config", get(config::config))
        .route(
            "/v1/{prefix}/namespaces",
            get(namespaces::list).post(namespaces::create),
        )
        .route(
            "/v1/{prefix}/namespaces/{namespace}",
            get(namespaces::load)
                .head(namespaces::exists)
                .delete(namespaces::drop),
        )
        .route(
            "/v1/{prefix}/namespaces/{namespace}/properties",
            post(namespaces::update_properties),
        )
        .route(
            "/v1/{prefix}/namespaces/{namespace}/tables",
            get(tables::list).post(tables::create),
        )
        .route(
            "/v1/{prefix}/namespaces/{namespace}/tables/{table}",
            get(tables::load)
                .head(tables::exists)
                .post(tables::commit)
                .delete(tables::drop),
        )
        .route(
            "/v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
            post(tables::metrics),
        )
        .route(
            "/v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
            get(tables::credentials),
        )
        .route(
            "/v1/{prefix}/namespaces/{namespace}/tables/{table}/sign",
            post(delegation::sign),
        )
        .route(
            "/v1/{prefix}/namespaces/{namespace}/register",
            post(tables::register),
        )
        .route(
            "/v1/{prefix}/namespaces/{namespace}/views",
            get(views::list).post(views::create),
        )
        .route(
            "/v1/{prefix}/namespaces/{namespace}/views/{view}",
            get(views::load)
                .head(views::exists)
                .post(views::replace)
                .delete(views::drop),
        )
        .route(
            "/v1/{prefix}/namespaces/{namespace}/register-view",
            post(views::register),
        )
        .route("/v1/{prefix}/views/rename", post(views::rename))
        .route("/v1/{prefix}/tables/rename", post(tables::rename))
        .route(
            "/v1/{prefix}/transactions/commit",
            post(transactions::commit),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            idempotency::layer,
        ));
    let authn = axum::middleware::from_fn_with_state(state.clone(), security::authn::layer);
    // An import, a fetch and a push read a bundle of any size as it arrives: they are not
    // bound by the body limit or the request timeout that the rest of the surface keeps.
    let bulk = Router::new()
        .route(
            "/api/v1/catalogs/{catalog}/import",
            post(management::bundle::import),
        )
        .route(
            "/api/v1/catalogs/{catalog}/remotes/{remote}/fetched",
            post(management::remotes::fetched),
        )
        .route(
            "/api/v1/catalogs/{catalog}/push",
            post(management::remotes::push),
        )
        .route_layer(authn.clone())
        .with_state(state.clone());
    Router::new()
        .merge(iceberg)
        .merge(management::routes())
        .merge(ui::routes())
        .route("/v1/oauth/tokens", post(security::login::oauth_token))
        .route("/api/v1/login", post(security::login::login))
        .route("/api/v1/token/refresh", post(security::login::refresh))
        .route("/api/v1/logout", post(security::login::logout))
        .route("/api/v1/whoami", get(security::login::whoami))
        .route("/api/v1/auth/providers", get(security::external::list))
        .route("/health", get(|| async { StatusCode::OK }))
        .route("/ready", get(ready))
        .route("/metrics", get(observe::metrics))
        // Runs after routing, so it knows which route it guards; see `security`.
        .route_layer(authn)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        // Enforced by the body extractors, so an oversized body is an Iceberg error (413).
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .merge(bulk)
        // The request's id on the request, its span and its answer; one line per request at
        // the default log level: method, path, id, status, latency.
        .layer(observe::RequestIds)
}

/// How long `/ready` waits for storage: a load balancer must hear "not ready" quickly, not
/// after a connection pool's own wait.
const READY_WITHIN: Duration = Duration::from_secs(2);

/// Ready when the default catalog's main branch can be read from storage within
/// [`READY_WITHIN`]; otherwise 503, whatever the failure.
async fn ready(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> Result<StatusCode, ApiError> {
    let read = async {
        let scope = state.scope(&state.default_catalog).await?;
        scope.catalog.resolve(&scope.at).await?;
        Ok::<_, ApiError>(())
    };
    let unavailable = |why: String| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableException",
            format!("not ready: {why}"),
        )
    };
    match tokio::time::timeout(READY_WITHIN, read).await {
        Ok(Ok(())) => Ok(StatusCode::OK),
        Ok(Err(error)) => Err(unavailable(error.message)),
        Err(_) => Err(unavailable(format!(
            "storage did not answer within {} s",
            READY_WITHIN.as_secs()
        ))),
    }
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    observe::unmatched(&method, StatusCode::METHOD_NOT_ALLOWED);
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowedException",
        format!("{method} is not served on {}", uri.path()),
    )
}

async fn not_found(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    observe::unmatched(&method, StatusCode::NOT_FOUND);
    ApiError::new(
        StatusCode::NOT_FOUND,
        "NotFoundException",
        format!("no route for {}", uri.path()),
    )
}
