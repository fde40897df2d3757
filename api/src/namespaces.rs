//! Iceberg REST namespace routes.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pangolin_catalog::CommitMeta;
use pangolin_store::ContentKey;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::security::{self, Caller, resource};
use crate::state::AppState;
use pangolin_catalog::authz::Privilege;

/// Namespace levels in a path are joined by the unit separator (`%1F`).
const SEPARATOR: char = '\u{1f}';

pub(crate) fn namespace_key(path: &str) -> Result<ContentKey, ApiError> {
    Ok(ContentKey::new(path.split(SEPARATOR))?)
}

pub(crate) fn levels(key: &ContentKey) -> Vec<String> {
    key.elements().map(str::to_owned).collect()
}

fn meta(action: &str, key: &ContentKey) -> CommitMeta {
    CommitMeta {
        principal: Caller::current_name(),
        message: format!("{action} namespace {key}"),
        properties: BTreeMap::from([("operation".to_owned(), format!("{action}-namespace"))]),
    }
}

#[derive(Debug, Deserialize)]
pub struct ListParams {
    parent: Option<String>,
    #[serde(rename = "pageToken")]
    page_token: Option<String>,
    #[serde(rename = "pageSize")]
    page_size: Option<usize>,
}

/// Page tokens are the last key returned, its levels hex-encoded: opaque and URL-safe.
pub(crate) fn encode_token(key: &ContentKey) -> String {
    levels(key)
        .join("\u{1f}")
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(crate) fn decode_token(token: &str) -> Result<ContentKey, ApiError> {
    let invalid = || ApiError::bad_request(format!("invalid page token `{token}`"));
    if !token.len().is_multiple_of(2) {
        return Err(invalid());
    }
    let bytes = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(token.get(i..i + 2).unwrap_or("zz"), 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| invalid())?;
    let joined = String::from_utf8(bytes).map_err(|_| invalid())?;
    namespace_key(&joined).map_err(|_| invalid())
}

/// Largest page a client may ask for.
pub(crate) const MAX_PAGE: usize = 1_000;

pub async fn list(
    State(state): State<AppState>,
    PathParams(prefix): PathParams<String>,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let scope = state.scope(&prefix).await?;
    let parent = match params.parent.as_deref() {
        Some("") | None => None,
        Some(parent) => Some(namespace_key(parent)?),
    };
    let after = params
        .page_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(decode_token)
        .transpose()?;
    // No page size means everything (the spec's contract for clients that do not page).
    let limit = match params.page_size {
        Some(0) => return Err(ApiError::bad_request("pageSize must be at least 1")),
        Some(size) => size.min(MAX_PAGE),
        None => usize::MAX,
    };
    let (keys, next) = scope
        .catalog
        .list_namespaces(&scope.at, parent.as_ref(), after.as_ref(), limit)
        .await?;
    // Only what the caller may read something in; the page token still follows the full list.
    let keys = security::visible(&state, scope.at.ref_name().as_str(), keys, |key| {
        resource::namespace(&scope.catalog, Some(key))
    })
    .await?;
    let mut body = serde_json::json!({ "namespaces": keys.iter().map(levels).collect::<Vec<_>>() });
    if let Some(next) = next {
        body["next-page-token"] = serde_json::Value::String(encode_token(&next));
    }
    Ok(Json(body))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    namespace: Vec<String>,
    #[serde(default)]
    properties: BTreeMap<String, String>,
}

#[derive(Debug, Serialize)]
pub struct NamespaceResponse {
    namespace: Vec<String>,
    properties: BTreeMap<String, String>,
}

pub async fn create(
    State(state): State<AppState>,
    PathParams(prefix): PathParams<String>,
    JsonBody(request): JsonBody<CreateRequest>,
) -> Result<Json<NamespaceResponse>, ApiError> {
    let scope = state.scope(&prefix).await?;
    let key = ContentKey::new(request.namespace)?;
    security::check(
        &state,
        Privilege::Create,
        resource::namespace(&scope.catalog, key.parent().as_ref()),
        scope.at.ref_name().as_str(),
    )
    .await?;
    let branch = scope.writable_branch().await?;
    scope
        .catalog
        .create_namespace(
            &branch,
            &key,
            request.properties.clone(),
            &meta("create", &key),
        )
        .await?;
    Ok(Json(NamespaceResponse {
        namespace: levels(&key),
        properties: request.properties,
    }))
}

pub async fn load(
    State(state): State<AppState>,
    PathParams((prefix, namespace)): PathParams<(String, String)>,
) -> Result<Json<NamespaceResponse>, ApiError> {
    let scope = state.scope(&prefix).await?;
    let key = namespace_key(&namespace)?;
    let loaded = scope.catalog.load_namespace(&scope.at, &key).await?;
    Ok(Json(NamespaceResponse {
        namespace: levels(&key),
        properties: loaded.properties,
    }))
}

pub async fn exists(
    State(state): State<AppState>,
    PathParams((prefix, namespace)): PathParams<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let scope = state.scope(&prefix).await?;
    let key = namespace_key(&namespace)?;
    scope.catalog.load_namespace(&scope.at, &key).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn drop(
    State(state): State<AppState>,
    PathParams((prefix, namespace)): PathParams<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let scope = state.scope(&prefix).await?;
    let key = namespace_key(&namespace)?;
    let branch = scope.writable_branch().await?;
    scope
        .catalog
        .drop_namespace(&branch, &key, &meta("drop", &key))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PropertiesRequest {
    #[serde(default)]
    removals: Vec<String>,
    #[serde(default)]
    updates: BTreeMap<String, String>,
}

pub async fn update_properties(
    State(state): State<AppState>,
    PathParams((prefix, namespace)): PathParams<(String, String)>,
    JsonBody(request): JsonBody<PropertiesRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let scope = state.scope(&prefix).await?;
    let key = namespace_key(&namespace)?;
    let branch = scope.writable_branch().await?;
    let (_, report) = scope
        .catalog
        .update_namespace_properties(
            &branch,
            &key,
            &request.removals,
            &request.updates,
            &meta("update", &key),
        )
        .await?;
    Ok(Json(serde_json::json!({
        "updated": report.updated,
        "removed": report.removed,
        "missing": report.missing,
    })))
}
