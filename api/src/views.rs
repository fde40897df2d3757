//! Iceberg REST view routes.
//!
//! Views are addressed like tables ([`crate::address`]): `daily@dev` reads and writes the view
//! on branch `dev`, `daily@v1` reads it at a tag. Tables and views share one name space.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::iceberg::metadata::Schema;
use pangolin_catalog::iceberg::{NewView, ViewRequirement, ViewUpdate, ViewVersion};
use pangolin_catalog::{CommitMeta, LoadedView, view_commit_meta};
use pangolin_store::ContentKey;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::address::{Identifier, RenameRequest, address, ensure_body_matches_path, writable};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::namespaces::{MAX_PAGE, decode_token, encode_token, levels, namespace_key};
use crate::security::{self, Caller, resource};
use crate::state::AppState;
use pangolin_catalog::authz::Privilege;

/// The spec's `LoadViewResult`.
fn load_result(view: &LoadedView) -> Json<Value> {
    Json(json!({
        "metadata-location": view.metadata_location,
        "metadata": view.metadata.as_ref(),
        "config": {},
    }))
}

#[derive(Debug, Deserialize)]
pub struct ListParams {
    #[serde(rename = "pageToken")]
    page_token: Option<String>,
    #[serde(rename = "pageSize")]
    page_size: Option<usize>,
}

impl ListParams {
    /// The key to continue after, and how many to return (no page size: everything).
    fn page(&self) -> Result<(Option<ContentKey>, usize), ApiError> {
        let after = self
            .page_token
            .as_deref()
            .filter(|t| !t.is_empty())
            .map(decode_token)
            .transpose()?;
        let limit = match self.page_size {
            Some(0) => return Err(ApiError::bad_request("pageSize must be at least 1")),
            Some(size) => size.min(MAX_PAGE),
            None => usize::MAX,
        };
        Ok((after, limit))
    }
}

pub async fn list(
    State(state): State<AppState>,
    PathParams((prefix, namespace)): PathParams<(String, String)>,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<Value>, ApiError> {
    let scope = state.scope(&prefix).await?;
    let namespace = namespace_key(&namespace)?;
    let (after, limit) = params.page()?;
    let (keys, next) = scope
        .catalog
        .list_views(&scope.at, &namespace, after.as_ref(), limit)
        .await?;
    let keys = security::visible(&state, scope.at.ref_name().as_str(), keys, |key| {
        resource::table(&scope.catalog, key)
    })
    .await?;
    let identifiers: Vec<Value> = keys
        .iter()
        .map(|k| json!({ "namespace": levels(&namespace), "name": k.name() }))
        .collect();
    let mut body = json!({ "identifiers": identifiers });
    if let Some(next) = next {
        body["next-page-token"] = Value::String(encode_token(&next));
    }
    Ok(Json(body))
}

/// The spec's `CreateViewRequest`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CreateRequest {
    name: String,
    #[serde(default)]
    location: Option<String>,
    schema: Schema,
    view_version: ViewVersion,
    #[serde(default)]
    properties: BTreeMap<String, String>,
}

pub async fn create(
    State(state): State<AppState>,
    PathParams((prefix, namespace)): PathParams<(String, String)>,
    JsonBody(request): JsonBody<CreateRequest>,
) -> Result<Json<Value>, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &body_name(&request.name)?)?;
    let branch = writable(&scope, &at).await?;
    let view = NewView {
        location: request.location.unwrap_or_default(),
        schema: request.schema,
        version: request.view_version,
        properties: request.properties,
    };
    let (_, created) = scope
        .catalog
        .create_view(
            &branch,
            &key,
            view,
            &view_commit_meta(&Caller::current_name(), "create", &key),
        )
        .await?;
    Ok(load_result(&created))
}

pub async fn load(
    State(state): State<AppState>,
    PathParams((prefix, namespace, view)): PathParams<(String, String, String)>,
) -> Result<Json<Value>, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &view)?;
    let loaded = scope.catalog.load_view(&at, &key).await?;
    Ok(load_result(&loaded))
}

pub async fn exists(
    State(state): State<AppState>,
    PathParams((prefix, namespace, view)): PathParams<(String, String, String)>,
) -> Result<StatusCode, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &view)?;
    match scope.catalog.view_exists(&at, &key).await? {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NoSuchViewException",
            format!("view `{key}` does not exist"),
        )),
    }
}

/// The body of a view commit (the spec's `CommitViewRequest`); `identifier` repeats the path
/// and is checked against it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitRequest {
    #[serde(default)]
    identifier: Option<Identifier>,
    #[serde(default)]
    requirements: Vec<ViewRequirement>,
    #[serde(default)]
    updates: Vec<ViewUpdate>,
}

pub async fn replace(
    State(state): State<AppState>,
    PathParams((prefix, namespace, view)): PathParams<(String, String, String)>,
    JsonBody(request): JsonBody<CommitRequest>,
) -> Result<Json<Value>, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &view)?;
    ensure_body_matches_path(request.identifier.as_ref(), &key, &at, "view", &view)?;
    let branch = writable(&scope, &at).await?;
    let (_, replaced) = scope
        .catalog
        .replace_view(
            &branch,
            &key,
            request.requirements,
            request.updates,
            &view_commit_meta(&Caller::current_name(), "replace", &key),
        )
        .await?;
    Ok(load_result(&replaced))
}

pub async fn drop(
    State(state): State<AppState>,
    PathParams((prefix, namespace, view)): PathParams<(String, String, String)>,
) -> Result<StatusCode, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &view)?;
    let branch = writable(&scope, &at).await?;
    scope
        .catalog
        .drop_view(
            &branch,
            &key,
            &view_commit_meta(&Caller::current_name(), "drop", &key),
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn rename(
    State(state): State<AppState>,
    PathParams(prefix): PathParams<String>,
    JsonBody(request): JsonBody<RenameRequest>,
) -> Result<StatusCode, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (from, to, branch) = request.resolve(&scope).await?;
    // A rename drops the old name and creates the new one.
    security::check(
        &state,
        Privilege::Drop,
        resource::table(&scope.catalog, &from),
        branch.name.as_str(),
    )
    .await?;
    security::check(
        &state,
        Privilege::Create,
        resource::namespace(&scope.catalog, to.parent().as_ref()),
        branch.name.as_str(),
    )
    .await?;
    let meta = CommitMeta {
        message: format!("rename view {from} to {to}"),
        ..view_commit_meta(&Caller::current_name(), "rename", &from)
    };
    scope
        .catalog
        .rename_view(&branch, &from, &to, &meta)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The spec's `RegisterViewRequest`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RegisterRequest {
    name: String,
    metadata_location: String,
}

/// A view name from a request body. PyIceberg percent-encodes the names it puts in the
/// bodies of `create_view` and `register_view` (`daily%40dev` for `daily@dev`), so they are
/// decoded as it means them; a name that is not encoded decodes to itself.
fn body_name(raw: &str) -> Result<String, ApiError> {
    percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map(|name| name.into_owned())
        .map_err(|_| {
            ApiError::bad_request(format!("view name `{raw}` is not valid UTF-8 once decoded"))
        })
}

pub async fn register(
    State(state): State<AppState>,
    PathParams((prefix, namespace)): PathParams<(String, String)>,
    JsonBody(request): JsonBody<RegisterRequest>,
) -> Result<Json<Value>, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &body_name(&request.name)?)?;
    let branch = writable(&scope, &at).await?;
    let (_, registered) = scope
        .catalog
        .register_view(
            &branch,
            &key,
            &request.metadata_location,
            &view_commit_meta(&Caller::current_name(), "register", &key),
        )
        .await?;
    Ok(load_result(&registered))
}
