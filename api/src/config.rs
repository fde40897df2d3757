//! `GET /v1/config`: which catalog a client talks to, and which routes exist.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;

use crate::error::ApiError;
use crate::extract::QueryParams;
use crate::state::AppState;

/// The routes this server implements, as the spec names them. Clients refuse core calls that
/// are not listed, so list exactly what is served.
pub const ENDPOINTS: &[&str] = &[
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign",
    "POST /v1/{prefix}/tables/rename",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/register-view",
    "POST /v1/{prefix}/views/rename",
    "POST /v1/{prefix}/transactions/commit",
];

#[derive(Debug, Deserialize)]
pub struct ConfigParams {
    warehouse: Option<String>,
}

/// `warehouse` is `<catalog>` or `<catalog>@<ref>` (a session default such as
/// `lake@dev`); it becomes the URL prefix of every other call.
pub async fn config(
    State(state): State<AppState>,
    QueryParams(params): QueryParams<ConfigParams>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let prefix = params
        .warehouse
        .filter(|w| !w.is_empty())
        .unwrap_or_else(|| state.default_catalog.clone());
    // A warehouse the client names that does not exist is a bad configuration (400), as
    // clients expect from this route, rather than a missing resource.
    let scope = state.scope(&prefix).await.map_err(|e| {
        if e.status == axum::http::StatusCode::NOT_FOUND {
            ApiError::bad_request(e.message)
        } else {
            e
        }
    })?;
    // The catalog must exist (every catalog has a main branch), and the reference must resolve.
    if !scope.catalog.exists().await? {
        return Err(ApiError::bad_request(format!(
            "there is no catalog named `{}`",
            scope.catalog.name()
        )));
    }
    scope.catalog.resolve(&scope.at).await?;
    let mut overrides = serde_json::json!({ "prefix": url_safe(&prefix) });
    if let Some(endpoint) = provider_token_endpoint(&state).await {
        overrides["oauth2-server-uri"] = serde_json::Value::String(endpoint);
    }
    Ok(Json(serde_json::json!({
        "defaults": {},
        "overrides": overrides,
        "endpoints": ENDPOINTS,
        "idempotency-key-lifetime": crate::idempotency::LIFETIME_ISO8601,
    })))
}

/// For a caller signed in with an identity provider's token: that provider's token endpoint,
/// so a client that fetches its own tokens goes on fetching them there, not here. Its
/// discovery document was fetched to verify the token; should it be gone, nothing is said.
async fn provider_token_endpoint(state: &AppState) -> Option<String> {
    let caller = crate::security::Caller::current()?;
    let provider = state.security.external.of_principal(caller.name())?;
    let discovery = provider.issuer.discovery().await.ok()?;
    discovery.token_endpoint.clone()
}

/// Clients paste the prefix into URLs as it is, so the characters that would end or split a
/// path segment (`/` in `feature/x`, `#` before a hash or time, `?`) are percent-encoded; the
/// server decodes them again when it reads the prefix from the path.
fn url_safe(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len());
    for c in prefix.chars() {
        match c {
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            '#' => out.push_str("%23"),
            '?' => out.push_str("%3F"),
            ' ' => out.push_str("%20"),
            other => out.push(other),
        }
    }
    out
}
