//! Iceberg REST table routes.
//!
//! A table name may carry a reference: `sales@dev`, `sales@v1` (a tag),
//! `sales@main#3fa9c1e2` (a commit of `main`), `sales@main#2026-11-30T12:00:00Z` (what `main`
//! was then), `sales@main~2`. It overrides the reference of the URL prefix for that call.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::iceberg::metadata::{PartitionSpec, Schema, SortOrder};
use pangolin_catalog::iceberg::{NewTable, TableMetadata, TableRequirement, TableUpdate};
use pangolin_catalog::{CommitMeta, LoadedTable, RefSpec, table_commit_meta};
use pangolin_refs::Reference;
use pangolin_store::ContentKey;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::namespaces::{MAX_PAGE, decode_token, encode_token, levels, namespace_key};
use crate::state::{AppState, Scope};

/// Until authentication comes, writes are made by the anonymous principal.
const PRINCIPAL: &str = "anonymous";

/// A table name as a client sent it: the name, and the reference it may carry.
#[derive(Debug)]
struct TableName {
    name: String,
    at: Option<RefSpec>,
}

fn parse_name(raw: &str) -> Result<TableName, ApiError> {
    match raw.split_once('@') {
        None => Ok(TableName {
            name: raw.to_owned(),
            at: None,
        }),
        Some((name, reference)) => Ok(TableName {
            name: name.to_owned(),
            at: Some(RefSpec::parse(reference).map_err(|e| {
                ApiError::bad_request(format!("invalid reference in `{raw}`: {e}"))
            })?),
        }),
    }
}

/// The table's key, and the reference the call works at.
fn address(scope: &Scope, namespace: &str, table: &str) -> Result<(ContentKey, RefSpec), ApiError> {
    let parsed = parse_name(table)?;
    let key = namespace_key(namespace)?.child(&parsed.name)?;
    Ok((key, parsed.at.unwrap_or_else(|| scope.at.clone())))
}

/// The branch a write at `at` goes to, or why it cannot.
async fn writable(scope: &Scope, at: &RefSpec) -> Result<Reference, ApiError> {
    let resolved = scope.catalog.resolve(at).await?;
    resolved.writable_branch.ok_or_else(|| {
        ApiError::bad_request(format!(
            "`{at}` is read-only (a tag, a commit or a point in time); write to a branch"
        ))
    })
}

fn load_result(table: &LoadedTable, metadata: &TableMetadata) -> Json<Value> {
    Json(json!({
        "metadata-location": table.metadata_location,
        "metadata": metadata,
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

pub async fn list(
    State(state): State<AppState>,
    PathParams((prefix, namespace)): PathParams<(String, String)>,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<Value>, ApiError> {
    let scope = state.scope(&prefix)?;
    let namespace = namespace_key(&namespace)?;
    let after = params
        .page_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(decode_token)
        .transpose()?;
    let limit = match params.page_size {
        Some(0) => return Err(ApiError::bad_request("pageSize must be at least 1")),
        Some(size) => size.min(MAX_PAGE),
        None => usize::MAX,
    };
    let (keys, next) = scope
        .catalog
        .list_tables(&scope.at, &namespace, after.as_ref(), limit)
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CreateRequest {
    name: String,
    #[serde(default)]
    location: Option<String>,
    schema: Schema,
    #[serde(default)]
    partition_spec: Option<PartitionSpec>,
    #[serde(default)]
    write_order: Option<SortOrder>,
    #[serde(default)]
    stage_create: bool,
    #[serde(default)]
    properties: BTreeMap<String, String>,
}

pub async fn create(
    State(state): State<AppState>,
    PathParams((prefix, namespace)): PathParams<(String, String)>,
    JsonBody(request): JsonBody<CreateRequest>,
) -> Result<Json<Value>, ApiError> {
    let scope = state.scope(&prefix)?;
    let (key, at) = address(&scope, &namespace, &request.name)?;
    let branch = writable(&scope, &at).await?;
    let table = NewTable {
        location: request.location.unwrap_or_default(),
        schema: request.schema,
        partition_spec: request.partition_spec,
        sort_order: request.write_order,
        properties: request.properties,
    };
    if request.stage_create {
        // Nothing is written: the client commits the table later with `assert-create`.
        let metadata = scope.catalog.prepare_table(&branch, &key, table).await?;
        return Ok(Json(json!({
            "metadata-location": null,
            "metadata": metadata,
            "config": {},
        })));
    }
    let (_, created) = scope
        .catalog
        .create_table(
            &branch,
            &key,
            table,
            &table_commit_meta(PRINCIPAL, "create", &key),
        )
        .await?;
    Ok(load_result(&created, &created.metadata))
}

#[derive(Debug, Deserialize)]
pub struct LoadParams {
    snapshots: Option<String>,
}

pub async fn load(
    State(state): State<AppState>,
    PathParams((prefix, namespace, table)): PathParams<(String, String, String)>,
    QueryParams(params): QueryParams<LoadParams>,
) -> Result<Json<Value>, ApiError> {
    let scope = state.scope(&prefix)?;
    let (key, at) = address(&scope, &namespace, &table)?;
    let loaded = scope.catalog.load_table(&at, &key).await?;
    match params
        .snapshots
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("all") => Ok(load_result(&loaded, &loaded.metadata)),
        Some("refs") => Ok(load_result(
            &loaded,
            &loaded.metadata.with_referenced_snapshots_only(),
        )),
        Some(other) => Err(ApiError::bad_request(format!(
            "snapshots must be `all` or `refs`, not `{other}`"
        ))),
    }
}

pub async fn exists(
    State(state): State<AppState>,
    PathParams((prefix, namespace, table)): PathParams<(String, String, String)>,
) -> Result<StatusCode, ApiError> {
    let scope = state.scope(&prefix)?;
    let (key, at) = address(&scope, &namespace, &table)?;
    match scope.catalog.table_exists(&at, &key).await? {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NoSuchTableException",
            format!("table `{key}` does not exist"),
        )),
    }
}

/// The body of a table commit; `identifier` repeats the path and is checked against it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitRequest {
    #[serde(default)]
    identifier: Option<Identifier>,
    #[serde(default)]
    requirements: Vec<TableRequirement>,
    #[serde(default)]
    updates: Vec<TableUpdate>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identifier {
    namespace: Vec<String>,
    name: String,
}

impl Identifier {
    fn key_and_ref(&self) -> Result<(ContentKey, Option<RefSpec>), ApiError> {
        let parsed = parse_name(&self.name)?;
        let key =
            ContentKey::new(self.namespace.iter().map(String::as_str))?.child(&parsed.name)?;
        Ok((key, parsed.at))
    }
}

pub async fn commit(
    State(state): State<AppState>,
    PathParams((prefix, namespace, table)): PathParams<(String, String, String)>,
    JsonBody(request): JsonBody<CommitRequest>,
) -> Result<Json<Value>, ApiError> {
    let scope = state.scope(&prefix)?;
    let (key, at) = address(&scope, &namespace, &table)?;
    if let Some(identifier) = &request.identifier {
        let (named, named_at) = identifier.key_and_ref()?;
        if named != key || named_at.as_ref().is_some_and(|named_at| *named_at != at) {
            return Err(ApiError::bad_request(format!(
                "the body names table `{}` but the path names `{table}` in `{}`",
                identifier.name,
                levels(&key).join(".")
            )));
        }
    }
    let branch = writable(&scope, &at).await?;
    let (_, committed) = scope
        .catalog
        .commit_table(
            &branch,
            &key,
            request.requirements,
            request.updates,
            &table_commit_meta(PRINCIPAL, "commit", &key),
        )
        .await?;
    Ok(Json(json!({
        "metadata-location": committed.metadata_location,
        "metadata": committed.metadata.as_ref(),
    })))
}

#[derive(Debug, Deserialize)]
pub struct DropParams {
    #[serde(rename = "purgeRequested")]
    purge_requested: Option<String>,
}

/// Python clients send `True`/`False`.
fn parse_bool(name: &str, value: Option<&str>) -> Result<bool, ApiError> {
    match value.map(str::to_ascii_lowercase).as_deref() {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "{name} must be true or false, not `{other}`"
        ))),
    }
}

pub async fn drop(
    State(state): State<AppState>,
    PathParams((prefix, namespace, table)): PathParams<(String, String, String)>,
    QueryParams(params): QueryParams<DropParams>,
) -> Result<StatusCode, ApiError> {
    let scope = state.scope(&prefix)?;
    let purge = parse_bool("purgeRequested", params.purge_requested.as_deref())?;
    let (key, at) = address(&scope, &namespace, &table)?;
    let branch = writable(&scope, &at).await?;
    let action = if purge { "purge" } else { "drop" };
    scope
        .catalog
        .drop_table(
            &branch,
            &key,
            purge,
            &table_commit_meta(PRINCIPAL, action, &key),
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenameRequest {
    source: Identifier,
    destination: Identifier,
}

pub async fn rename(
    State(state): State<AppState>,
    PathParams(prefix): PathParams<String>,
    JsonBody(request): JsonBody<RenameRequest>,
) -> Result<StatusCode, ApiError> {
    let scope = state.scope(&prefix)?;
    let (from, from_at) = request.source.key_and_ref()?;
    let (to, to_at) = request.destination.key_and_ref()?;
    let at = match (from_at, to_at) {
        (None, None) => scope.at.clone(),
        (Some(a), None) | (None, Some(a)) => a,
        (Some(a), Some(b)) if a == b => a,
        (Some(a), Some(b)) => {
            return Err(ApiError::bad_request(format!(
                "a rename happens on one branch, but the source names `{a}` and the destination `{b}`"
            )));
        }
    };
    let branch = writable(&scope, &at).await?;
    let meta = CommitMeta {
        message: format!("rename table {from} to {to}"),
        ..table_commit_meta(PRINCIPAL, "rename", &from)
    };
    scope
        .catalog
        .rename_table(&branch, &from, &to, &meta)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RegisterRequest {
    name: String,
    metadata_location: String,
    #[serde(default)]
    overwrite: bool,
}

pub async fn register(
    State(state): State<AppState>,
    PathParams((prefix, namespace)): PathParams<(String, String)>,
    JsonBody(request): JsonBody<RegisterRequest>,
) -> Result<Json<Value>, ApiError> {
    let scope = state.scope(&prefix)?;
    let (key, at) = address(&scope, &namespace, &request.name)?;
    let branch = writable(&scope, &at).await?;
    let (_, registered) = scope
        .catalog
        .register_table(
            &branch,
            &key,
            &request.metadata_location,
            request.overwrite,
            &table_commit_meta(PRINCIPAL, "register", &key),
        )
        .await?;
    Ok(load_result(&registered, &registered.metadata))
}

/// Scan and commit reports from engines: logged, not stored.
pub async fn metrics(
    State(state): State<AppState>,
    PathParams((prefix, namespace, table)): PathParams<(String, String, String)>,
    JsonBody(report): JsonBody<serde_json::Map<String, Value>>,
) -> Result<StatusCode, ApiError> {
    let scope = state.scope(&prefix)?;
    let (key, at) = address(&scope, &namespace, &table)?;
    let Some(kind) = report.get("report-type").and_then(Value::as_str) else {
        return Err(ApiError::bad_request(
            "a metrics report needs a `report-type` (scan-report or commit-report)",
        ));
    };
    if !scope.catalog.table_exists(&at, &key).await? {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NoSuchTableException",
            format!("table `{key}` does not exist"),
        ));
    }
    let body = Value::Object(report.clone());
    tracing::info!(table = %key, report_type = kind, report = %body, "metrics report");
    Ok(StatusCode::NO_CONTENT)
}
