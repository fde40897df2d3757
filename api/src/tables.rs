//! Iceberg REST table routes.
//!
//! A table name may carry a reference: `sales@dev`, `sales@v1` (a tag),
//! `sales@main#3fa9c1e2` (a commit of `main`), `sales@main#2026-11-30T12:00:00Z` (what `main`
//! was then), `sales@main~2`. It overrides the reference of the URL prefix for that call.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pangolin_catalog::iceberg::io::to_json;
use pangolin_catalog::iceberg::metadata::{PartitionSpec, Schema, SortOrder};
use pangolin_catalog::iceberg::{
    MetadataJson, NewTable, TableMetadata, TableRequirement, TableUpdate,
};
use pangolin_catalog::{CommitMeta, RefSpec, table_commit_meta};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

// Name parsing lives in `address.rs`, shared with views; the re-export keeps
// `crate::tables::{Identifier, writable}` working for `transactions.rs`.
use crate::address::{Identifier, RenameRequest, address, ensure_body_matches_path, writable};
use crate::delegation::{self, Delegated, Grant, Requested, StorageCredential};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::namespaces::{MAX_PAGE, decode_token, encode_token, levels, namespace_key};
use crate::security::{self, Caller, resource};
use crate::state::{AppState, Scope};
use pangolin_catalog::authz::Privilege;
use pangolin_store::ContentKey;

/// A table as clients load it, with the settings they need to reach its files. The metadata
/// is embedded as JSON serialized once per file (see [`metadata_json`]): loads are the
/// hottest route.
#[derive(Debug, Serialize)]
struct LoadResult<'a> {
    #[serde(rename = "metadata-location")]
    metadata_location: Option<&'a str>,
    metadata: &'a RawValue,
    config: Cow<'a, BTreeMap<String, String>>,
    #[serde(
        rename = "storage-credentials",
        skip_serializing_if = "<[_]>::is_empty"
    )]
    storage_credentials: Vec<StorageCredential>,
}

impl<'a> LoadResult<'a> {
    /// The answer for `metadata`, with the warehouse's config and whatever access
    /// `delegated` carries.
    fn new(
        scope: &'a Scope,
        metadata_location: Option<&'a str>,
        metadata: &'a RawValue,
        delegated: Option<Delegated>,
    ) -> Self {
        let (config, storage_credentials) = match delegated {
            None => (Cow::Borrowed(client_config(scope)), Vec::new()),
            Some(delegated) => (Cow::Owned(delegated.config), delegated.storage_credentials),
        };
        Self {
            metadata_location,
            metadata,
            config,
            storage_credentials,
        }
    }
}

/// The metadata of the file at `location` as JSON, kept with the cached file so that it is
/// serialized once however often the table is loaded; metadata of no file (a staged create)
/// is serialized now.
fn metadata_json(
    scope: &Scope,
    location: Option<&str>,
    metadata: &Arc<TableMetadata>,
) -> Result<MetadataJson, ApiError> {
    match scope.catalog.warehouse() {
        Ok(warehouse) => warehouse.io.metadata_json(location, metadata),
        Err(_) => to_json(metadata),
    }
    .map_err(|e| ApiError::internal(&e))
}

/// What clients need to reach the catalog's files (empty without a warehouse).
fn client_config(scope: &Scope) -> &BTreeMap<String, String> {
    static NONE: std::sync::OnceLock<BTreeMap<String, String>> = std::sync::OnceLock::new();
    scope
        .catalog
        .warehouse()
        .map_or_else(|_| NONE.get_or_init(BTreeMap::new), |w| w.client_config())
}

/// The delegated access the client asked for in `headers`, if the warehouse offers it.
async fn delegate(
    state: &AppState,
    scope: &Scope,
    (key, at): (&ContentKey, &RefSpec),
    metadata: &TableMetadata,
    grant: Grant,
    headers: &HeaderMap,
) -> Result<Option<Delegated>, ApiError> {
    let requested = Requested::from_headers(headers);
    if !requested.any() {
        return Ok(None);
    }
    delegation::for_table(state, &scope.catalog, key, at, metadata, grant, requested).await
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
    let scope = state.scope(&prefix).await?;
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
    headers: HeaderMap,
    JsonBody(request): JsonBody<CreateRequest>,
) -> Result<Response, ApiError> {
    let scope = state.scope(&prefix).await?;
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
        state.staged.remember(
            scope.catalog.tenant(),
            scope.catalog.name(),
            &key.to_string(),
            delegation::file_locations(&metadata),
        );
        let delegated = delegate(
            &state,
            &scope,
            (&key, &at),
            &metadata,
            Grant::Creator,
            &headers,
        )
        .await?;
        let json = to_json(&metadata).map_err(|e| ApiError::internal(&e))?;
        return Ok(Json(LoadResult::new(&scope, None, &json, delegated)).into_response());
    }
    // Credentials are vended before the table exists, so a token service that refuses leaves
    // nothing behind; the table is then created where they are valid.
    let mut table = table;
    let mut delegated = None;
    if delegation::vends(&scope.catalog, Requested::from_headers(&headers)) {
        let prepared = scope
            .catalog
            .prepare_table(&branch, &key, table.clone())
            .await?;
        let grant = Grant::Creator;
        delegated = delegate(&state, &scope, (&key, &at), &prepared, grant, &headers).await?;
        table.location = prepared.location;
    }
    let (_, created) = scope
        .catalog
        .create_table(
            &branch,
            &key,
            table,
            &table_commit_meta(&Caller::current_name(), "create", &key),
        )
        .await?;
    if delegated.is_none() {
        // Remote signing: nothing to ask anyone before the table exists.
        let grant = Grant::Creator;
        let metadata = &created.metadata;
        delegated = delegate(&state, &scope, (&key, &at), metadata, grant, &headers).await?;
    }
    let location = created.metadata_location.as_deref();
    let json = metadata_json(&scope, location, &created.metadata)?;
    Ok(Json(LoadResult::new(&scope, location, &json, delegated)).into_response())
}

#[derive(Debug, Deserialize)]
pub struct LoadParams {
    snapshots: Option<String>,
}

/// Loads a table. The answer carries an `ETag` naming the metadata file and view; a client
/// that sends it back in `If-None-Match` gets `304 Not Modified` while the table is unchanged.
pub async fn load(
    State(state): State<AppState>,
    PathParams((prefix, namespace, table)): PathParams<(String, String, String)>,
    QueryParams(params): QueryParams<LoadParams>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &table)?;
    let mode = params
        .snapshots
        .as_deref()
        .map(str::to_ascii_lowercase)
        .unwrap_or_else(|| "all".to_owned());
    if mode != "all" && mode != "refs" {
        return Err(ApiError::bad_request(format!(
            "snapshots must be `all` or `refs`, not `{mode}`"
        )));
    }
    let loaded = scope.catalog.load_table(&at, &key).await?;
    let location = loaded.metadata_location.as_deref().unwrap_or_default();
    let etag = format!(
        "\"{}\"",
        blake3::hash(format!("{location}\n{mode}").as_bytes()).to_hex()
    );
    let unchanged = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag.trim_start_matches("W/") == etag
        });
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let grant = Grant::Privileges;
        let delegated = delegate(
            &state,
            &scope,
            (&key, &at),
            &loaded.metadata,
            grant,
            &headers,
        )
        .await?;
        let location = loaded.metadata_location.as_deref();
        let json = if mode == "refs" {
            to_json(&loaded.metadata.with_referenced_snapshots_only())
                .map_err(|e| ApiError::internal(&e))?
        } else {
            metadata_json(&scope, location, &loaded.metadata)?
        };
        Json(LoadResult::new(&scope, location, &json, delegated)).into_response()
    };
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    Ok(response)
}

/// Storage credentials for a table: those the client asks for in
/// `X-Iceberg-Access-Delegation` and the warehouse vends, else an empty list (never an error:
/// clients ask whether or not anything is vended).
pub async fn credentials(
    State(state): State<AppState>,
    PathParams((prefix, namespace, table)): PathParams<(String, String, String)>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &table)?;
    let mut requested = Requested::from_headers(&headers);
    // Asking this route is asking for credentials, whatever the header says.
    requested.vended_credentials = true;
    let loaded = scope.catalog.load_table(&at, &key).await?;
    let delegated = delegation::for_table(
        &state,
        &scope.catalog,
        &key,
        &at,
        &loaded.metadata,
        Grant::Privileges,
        requested,
    )
    .await?;
    let credentials = delegated.map(|d| d.storage_credentials).unwrap_or_default();
    Ok(Json(json!({ "storage-credentials": credentials })))
}

pub async fn exists(
    State(state): State<AppState>,
    PathParams((prefix, namespace, table)): PathParams<(String, String, String)>,
) -> Result<StatusCode, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &table)?;
    match scope.catalog.table_exists(&at, &key).await? {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NoSuchTableException",
            format!("Table does not exist: {key}"),
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

/// A commit's answer, with the metadata as JSON like a load's (the JSON just written to the
/// new file).
#[derive(Debug, Serialize)]
struct CommitResult<'a> {
    #[serde(rename = "metadata-location")]
    metadata_location: Option<&'a str>,
    metadata: &'a RawValue,
}

pub async fn commit(
    State(state): State<AppState>,
    PathParams((prefix, namespace, table)): PathParams<(String, String, String)>,
    JsonBody(request): JsonBody<CommitRequest>,
) -> Result<Response, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &table)?;
    ensure_body_matches_path(request.identifier.as_ref(), &key, &at, "table", &table)?;
    let branch = writable(&scope, &at).await?;
    let (_, committed) = scope
        .catalog
        .commit_table(
            &branch,
            &key,
            request.requirements,
            request.updates,
            &table_commit_meta(&Caller::current_name(), "commit", &key),
        )
        .await?;
    let location = committed.metadata_location.as_deref();
    let json = metadata_json(&scope, location, &committed.metadata)?;
    Ok(Json(CommitResult {
        metadata_location: location,
        metadata: &json,
    })
    .into_response())
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
    let scope = state.scope(&prefix).await?;
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
            &table_commit_meta(&Caller::current_name(), action, &key),
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
        message: format!("rename table {from} to {to}"),
        ..table_commit_meta(&Caller::current_name(), "rename", &from)
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
    headers: HeaderMap,
    JsonBody(request): JsonBody<RegisterRequest>,
) -> Result<Response, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &request.name)?;
    let branch = writable(&scope, &at).await?;
    let (_, registered) = scope
        .catalog
        .register_table(
            &branch,
            &key,
            // Spark names local files `file:/path`; the server reads `file:///path`.
            &pangolin_catalog::iceberg::update::canonical_location(&request.metadata_location),
            request.overwrite,
            &table_commit_meta(&Caller::current_name(), "register", &key),
        )
        .await?;
    let delegated = delegate(
        &state,
        &scope,
        (&key, &at),
        &registered.metadata,
        Grant::Creator,
        &headers,
    )
    .await?;
    let location = registered.metadata_location.as_deref();
    let json = metadata_json(&scope, location, &registered.metadata)?;
    Ok(Json(LoadResult::new(&scope, location, &json, delegated)).into_response())
}

/// Scan and commit reports from engines: logged, not stored.
pub async fn metrics(
    State(state): State<AppState>,
    PathParams((prefix, namespace, table)): PathParams<(String, String, String)>,
    JsonBody(report): JsonBody<serde_json::Map<String, Value>>,
) -> Result<StatusCode, ApiError> {
    let scope = state.scope(&prefix).await?;
    let (key, at) = address(&scope, &namespace, &table)?;
    let Some(kind) = report.get("report-type").and_then(Value::as_str) else {
        return Err(ApiError::bad_request(
            "a metrics report needs a `report-type` (scan-report or commit-report)",
        ));
    };
    let staged = !scope.catalog.table_exists(&at, &key).await?;
    if staged
        && !state.staged.contains(
            scope.catalog.tenant(),
            scope.catalog.name(),
            &key.to_string(),
        )
    {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NoSuchTableException",
            format!("Table does not exist: {key}"),
        ));
    }
    let body = Value::Object(report.clone());
    tracing::info!(table = %key, staged, report_type = kind, report = %body, "metrics report");
    Ok(StatusCode::NO_CONTENT)
}
