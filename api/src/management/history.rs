//! Reading history: the log, one commit, the diff of two references, the tree at one.

use axum::Json;
use axum::extract::State;
use pangolin_catalog::{DiffError, LogError, LogFilter, RefSpec};
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::views::{ChangeView, CommitView, EntryView, levels};
use super::{
    authorize, decode_token, encode_token, key_from_token, key_token, open, page_size, parse_hash,
    parse_key, parse_spec,
};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::state::AppState;
use pangolin_catalog::authz::Privilege;

fn diff_error(error: DiffError) -> ApiError {
    match error {
        DiffError::Resolve(e) => e.into(),
        DiffError::Read(e) => e.into(),
        DiffError::Backend(e) => e.into(),
    }
}

fn parse_time(field: &str, value: &str) -> Result<Timestamp, ApiError> {
    let time: jiff::Timestamp = value.parse().map_err(|e| {
        ApiError::bad_request(format!("invalid {field} `{value}`: {e} (use RFC 3339)"))
    })?;
    Ok(Timestamp::from_millis(time.as_millisecond()))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogParams {
    /// The reference whose log to read (for `/log`; the default branch when absent).
    #[serde(rename = "ref")]
    reference: Option<String>,
    /// Only commits by this author.
    author: Option<String>,
    /// Only commits at or after this time (RFC 3339).
    since: Option<String>,
    /// Only commits at or before this time (RFC 3339).
    until: Option<String>,
    /// Only commits that changed this key (levels joined by `%1F`).
    key: Option<String>,
    #[serde(rename = "pageToken")]
    page_token: Option<String>,
    #[serde(rename = "pageSize")]
    page_size: Option<usize>,
}

impl LogParams {
    /// The reference asked for, if any.
    pub fn reference(&self) -> Option<&str> {
        self.reference.as_deref().filter(|r| !r.is_empty())
    }

    /// The filters asked for, as typed: author, since, until, and the key's levels.
    pub fn filters(&self) -> (&str, &str, &str, Option<&str>) {
        (
            self.author.as_deref().unwrap_or(""),
            self.since.as_deref().unwrap_or(""),
            self.until.as_deref().unwrap_or(""),
            self.key.as_deref().filter(|k| !k.is_empty()),
        )
    }

    /// The same log, of one key (levels joined by `%1F`).
    pub fn with_key(mut self, key: String) -> Self {
        self.key = Some(key);
        self
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LogView {
    pub commits: Vec<CommitView>,
    #[serde(rename = "next-page-token", skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// The log of a reference, newest first along first parents.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/refs/{name}/log", tag = "history",
    params(("catalog" = String, Path), ("name" = String, Path), LogParams),
    responses((status = 200, body = LogView)))]
pub async fn ref_log(
    State(state): State<AppState>,
    PathParams((catalog, name)): PathParams<(String, String)>,
    QueryParams(params): QueryParams<LogParams>,
) -> Result<Json<LogView>, ApiError> {
    read_log(&state, &catalog, &name, params).await
}

/// The log of `?ref=` (the default branch when absent).
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/log", tag = "history",
    params(("catalog" = String, Path), LogParams),
    responses((status = 200, body = LogView)))]
pub async fn log(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<LogParams>,
) -> Result<Json<LogView>, ApiError> {
    let reference = params
        .reference
        .clone()
        .unwrap_or_else(|| pangolin_catalog::DEFAULT_BRANCH.to_owned());
    read_log(&state, &catalog, &reference, params).await
}

async fn read_log(
    state: &AppState,
    catalog: &str,
    reference: &str,
    params: LogParams,
) -> Result<Json<LogView>, ApiError> {
    let catalog = open(state, catalog).await?;
    let at = parse_spec("reference", reference)?;
    let filter = LogFilter {
        author: params.author.filter(|a| !a.is_empty()),
        since: params
            .since
            .as_deref()
            .map(|t| parse_time("since", t))
            .transpose()?,
        until: params
            .until
            .as_deref()
            .map(|t| parse_time("until", t))
            .transpose()?,
        key: params
            .key
            .as_deref()
            .map(|k| parse_key("key", k))
            .transpose()?,
    };
    let from = match params.page_token.as_deref().filter(|t| !t.is_empty()) {
        Some(token) => {
            let id = parse_hash(&catalog, "page token", &decode_token(token)?).await?;
            Some(id)
        }
        None => None,
    };
    let page = catalog
        .log(&at, &filter, from, page_size(params.page_size)?)
        .await
        .map_err(|e| match e {
            LogError::Resolve(e) => e.into(),
            LogError::ForeignToken(_) => ApiError::bad_request(e.to_string()),
            LogError::Read(e) => e.into(),
        })?;
    Ok(Json(LogView {
        commits: page
            .commits
            .iter()
            .map(|(id, commit)| CommitView::new(id, commit))
            .collect(),
        next_page_token: page.next.map(|id| encode_token(&id.to_hex())),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChangeParams {
    #[serde(rename = "pageToken")]
    page_token: Option<String>,
    #[serde(rename = "pageSize")]
    page_size: Option<usize>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CommitDetailView {
    #[serde(flatten)]
    pub commit: CommitView,
    /// Changes against the first parent.
    pub changes: Vec<ChangeView>,
    #[serde(rename = "next-page-token", skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// One commit (by hash or any reference) and what it changed.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/commits/{reference}", tag = "history",
    params(("catalog" = String, Path), ("reference" = String, Path), ChangeParams),
    responses((status = 200, body = CommitDetailView)))]
pub async fn commit(
    State(state): State<AppState>,
    PathParams((catalog, reference)): PathParams<(String, String)>,
    QueryParams(params): QueryParams<ChangeParams>,
) -> Result<Json<CommitDetailView>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let at = parse_spec("reference", &reference)?;
    let after = params
        .page_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(key_from_token)
        .transpose()?;
    let detail = catalog
        .commit_detail(&at, after.as_ref(), page_size(params.page_size)?)
        .await
        .map_err(diff_error)?;
    Ok(Json(CommitDetailView {
        commit: CommitView::new(&detail.id, &detail.commit),
        changes: detail
            .changes
            .changes
            .iter()
            .map(ChangeView::from)
            .collect(),
        next_page_token: detail.changes.next_after.as_ref().map(key_token),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DiffParams {
    /// Any reference.
    from: String,
    /// Any reference.
    to: String,
    /// Only keys under this one (levels joined by `%1F`).
    prefix: Option<String>,
    #[serde(rename = "pageToken")]
    page_token: Option<String>,
    #[serde(rename = "pageSize")]
    page_size: Option<usize>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DiffView {
    pub from: String,
    pub to: String,
    pub changes: Vec<ChangeView>,
    #[serde(rename = "next-page-token", skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// What changed from one reference to another, by key.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/diff", tag = "history",
    params(("catalog" = String, Path), DiffParams),
    responses((status = 200, body = DiffView)))]
pub async fn diff(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<DiffParams>,
) -> Result<Json<DiffView>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let from = parse_spec("from", &params.from)?;
    let to = parse_spec("to", &params.to)?;
    authorize(&state, &catalog, Privilege::Read, &from).await?;
    authorize(&state, &catalog, Privilege::Read, &to).await?;
    let prefix = params
        .prefix
        .as_deref()
        .filter(|p| !p.is_empty())
        .map(|p| parse_key("prefix", p))
        .transpose()?;
    let after = params
        .page_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(key_from_token)
        .transpose()?;
    let page = catalog
        .diff(
            &from,
            &to,
            prefix.as_ref(),
            after.as_ref(),
            page_size(params.page_size)?,
        )
        .await
        .map_err(diff_error)?;
    Ok(Json(DiffView {
        from: page.from.to_hex(),
        to: page.to.to_hex(),
        changes: page.changes.iter().map(ChangeView::from).collect(),
        next_page_token: page.next_after.as_ref().map(key_token),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EntriesParams {
    /// Any reference; the default branch when absent.
    #[serde(rename = "ref")]
    reference: Option<String>,
    /// Only keys under this one (levels joined by `%1F`).
    prefix: Option<String>,
    #[serde(rename = "pageToken")]
    page_token: Option<String>,
    #[serde(rename = "pageSize")]
    page_size: Option<usize>,
}

impl EntriesParams {
    /// The reference asked for, if any.
    pub fn reference(&self) -> Option<&str> {
        self.reference.as_deref().filter(|r| !r.is_empty())
    }

    /// The key whose entries are asked for (levels joined by `%1F`), if any.
    pub fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref().filter(|p| !p.is_empty())
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyedEntry {
    pub key: Vec<String>,
    pub entry: EntryView,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EntriesView {
    /// The commit read.
    pub hash: String,
    pub entries: Vec<KeyedEntry>,
    #[serde(rename = "next-page-token", skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// The catalog tree at any reference: namespaces and assets, by key.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/entries", tag = "history",
    params(("catalog" = String, Path), EntriesParams),
    responses((status = 200, body = EntriesView)))]
pub async fn entries(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<EntriesParams>,
) -> Result<Json<EntriesView>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let at: RefSpec = parse_spec(
        "ref",
        params
            .reference
            .as_deref()
            .unwrap_or(pangolin_catalog::DEFAULT_BRANCH),
    )?;
    let prefix = params
        .prefix
        .as_deref()
        .filter(|p| !p.is_empty())
        .map(|p| parse_key("prefix", p))
        .transpose()?;
    let after = params
        .page_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(key_from_token)
        .transpose()?;
    let (hash, entries, next) = catalog
        .list_entries(
            &at,
            prefix.as_ref(),
            after.as_ref(),
            page_size(params.page_size)?,
        )
        .await?;
    Ok(Json(EntriesView {
        hash: hash.to_hex(),
        entries: entries
            .iter()
            .map(|(key, entry)| KeyedEntry {
                key: levels(key),
                entry: EntryView::from(entry),
            })
            .collect(),
        next_page_token: next.as_ref().map(key_token),
    }))
}
