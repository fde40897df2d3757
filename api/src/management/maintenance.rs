//! Maintenance of a catalog's tables: snapshot expiry on one branch, and the sweep of orphan
//! files as a job.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::iceberg::expire::Retention;
use pangolin_catalog::maintenance::ExpireError;
use pangolin_catalog::orphans::SweepRequest;
use pangolin_refs::{RefName, Reference};
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::jobs::{self, JobView};
use super::{open, page_size};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::security::Caller;
use crate::state::AppState;

/// The grace period of a sweep when the request names none, as the reference
/// implementation's orphan removal: 3 days.
pub const DEFAULT_GRACE_MS: u64 = 3 * 24 * 3600 * 1000;

/// The shortest grace period a sweep accepts: a writer's files are unreferenced until its
/// commit lands, and a shorter grace would race slow writers.
pub const MIN_GRACE_MS: u64 = 3600 * 1000;

/// Orphans a sweep's result names one by one, unless the request says otherwise (all are
/// counted).
pub const DEFAULT_SHOWN: usize = 1000;

/// The most orphans a sweep's result names one by one.
pub const MAX_SHOWN: usize = 10_000;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ExpireRequest {
    /// The branch whose tables to expire; the default branch when absent.
    #[serde(default)]
    pub branch: Option<String>,
    /// Expire snapshots older than this (RFC 3339) instead of each table's
    /// `history.expire.max-snapshot-age-ms` (5 days when unset).
    #[serde(default)]
    pub older_than: Option<String>,
    /// Keep at least this many snapshots per table branch instead of each table's
    /// `history.expire.min-snapshots-to-keep` (1 when unset).
    #[serde(default)]
    pub retain_last: Option<u32>,
    /// Report what would expire; change nothing.
    #[serde(default)]
    pub dry_run: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct TableExpiryView {
    pub key: Vec<String>,
    /// Snapshot ids expired (or, in a dry run, that would be).
    pub expired: Vec<i64>,
    pub kept: usize,
    /// The table's branches and tags removed because they outlived their `max-ref-age-ms`
    /// (or the table's `history.expire.max-ref-age-ms`); never `main`.
    pub expired_refs: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ExpireAnswer {
    pub branch: String,
    /// The commit of the branch the tables were read at.
    pub read_at: String,
    pub dry_run: bool,
    pub tables_read: usize,
    /// Tables with snapshots to expire.
    pub tables: Vec<TableExpiryView>,
    /// The commit that expired them: `null` in a dry run or when nothing expired.
    pub commit: Option<String>,
}

fn expire_error(error: ExpireError) -> ApiError {
    match error {
        ExpireError::Read(e) => e.into(),
        ExpireError::Table { source, .. } => source.into(),
        ExpireError::Commit(e) => e.into(),
    }
}

/// Expires the snapshots of every table on a branch, as the reference implementation's
/// snapshot expiry would, in one commit on that branch. No file is deleted: earlier commits
/// and other branches still read the snapshots they had.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/maintenance/expire-snapshots",
    tag = "maintenance", params(("catalog" = String, Path)), request_body = ExpireRequest,
    responses((status = 200, body = ExpireAnswer),
        (status = 409, description = "a table changed while the expiry was committed: retry")))]
pub async fn expire_snapshots(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(request): JsonBody<ExpireRequest>,
) -> Result<Json<ExpireAnswer>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let name = request
        .branch
        .as_deref()
        .unwrap_or(pangolin_catalog::DEFAULT_BRANCH);
    let name = RefName::new(name)
        .map_err(|e| ApiError::bad_request(format!("invalid branch name: {e}")))?;
    let older_than_ms = request
        .older_than
        .as_deref()
        .map(|t| {
            t.parse::<jiff::Timestamp>()
                .map(|t| t.as_millisecond())
                .map_err(|e| {
                    ApiError::bad_request(format!("`older-than` is not an RFC 3339 time: {e}"))
                })
        })
        .transpose()?;
    let retention = Retention {
        older_than_ms,
        retain_last: request.retain_last,
    };
    let branch = Reference::branch(name);
    let report = catalog
        .expire_snapshots(
            &branch,
            &retention,
            Timestamp::now(),
            request.dry_run,
            &Caller::current_name(),
        )
        .await
        .map_err(expire_error)?;
    Ok(Json(ExpireAnswer {
        branch: branch.name.as_str().to_owned(),
        read_at: report.read_at.to_hex(),
        dry_run: request.dry_run,
        tables_read: report.tables_read,
        tables: report
            .tables
            .into_iter()
            .map(|t| TableExpiryView {
                key: t.key.elements().map(str::to_owned).collect(),
                expired: t.expired,
                kept: t.kept,
                expired_refs: t.expired_refs,
            })
            .collect(),
        commit: report.commit.map(|c| c.to_hex()),
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct OrphansRequest {
    /// Only files last modified at least this long before the sweep began may go (3 days
    /// when absent; at least an hour).
    #[serde(default)]
    pub grace_period_ms: Option<u64>,
    /// Report what would go; delete nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// How many orphans the result names one by one (1000 when absent, at most 10000); all
    /// are counted.
    #[serde(default)]
    pub limit: Option<usize>,
    /// A sweep that failed or was abandoned: this one resumes from what it marked, reading
    /// again only what it had not read, and keeps its start.
    #[serde(default)]
    pub resume: Option<String>,
}

/// Starts a sweep of the files no table or view in the catalog's history references: every
/// commit a branch, tag or ref log reaches keeps its files. Only the folders the catalog
/// named after its tables and views are listed, and only files older than the grace period
/// go. Answers at once with the job; follow it at `maintenance/jobs/{job}`.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/maintenance/remove-orphan-files",
    tag = "maintenance", params(("catalog" = String, Path)), request_body = OrphansRequest,
    responses((status = 202, body = JobView),
        (status = 400, description = "a grace period under an hour, a limit over 10000, a catalog without a warehouse, or a job to resume that is not a sweep"),
        (status = 404, description = "no job to resume of that id"),
        (status = 409, description = "the job to resume is running or succeeded")))]
pub async fn remove_orphan_files(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(request): JsonBody<OrphansRequest>,
) -> Result<(StatusCode, Json<JobView>), ApiError> {
    let catalog = open(&state, &catalog).await?;
    let grace_ms = request.grace_period_ms.unwrap_or(DEFAULT_GRACE_MS);
    if grace_ms < MIN_GRACE_MS {
        return Err(ApiError::bad_request(format!(
            "`grace-period-ms` must be at least {MIN_GRACE_MS} (an hour): files of writers \
             whose commits have not landed yet are unreferenced until then"
        )));
    }
    let shown = request.limit.unwrap_or(DEFAULT_SHOWN);
    if shown > MAX_SHOWN {
        return Err(ApiError::bad_request(format!(
            "`limit` must be at most {MAX_SHOWN}"
        )));
    }
    if catalog.warehouse().is_err() {
        return Err(ApiError::bad_request(format!(
            "catalog `{}` has no warehouse: it has no files to sweep",
            catalog.name()
        )));
    }
    let resumes = match &request.resume {
        Some(id) => {
            Some(jobs::resumable(state.store.as_ref(), catalog.tenant(), catalog.name(), id).await?)
        }
        None => None,
    };
    let job = jobs::start_sweep(
        state.security.clone(),
        state.store.clone(),
        state.catalogs.tenancy().clone(),
        catalog,
        Caller::current_name(),
        SweepRequest {
            grace_ms: i64::try_from(grace_ms).unwrap_or(i64::MAX),
            dry_run: request.dry_run,
            shown,
        },
        resumes,
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(job)))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct CollectRequest {
    /// Report what would go; delete nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Starts a collection of the catalog's store objects that nothing retained reaches: every
/// branch and tag keeps its whole history, ref logs keep what they record within the
/// retention window, and any other commit made within the window stays readable by its hash.
/// Without a retention policy every commit is kept. Answers at once with the job; follow it
/// at `maintenance/jobs/{job}`.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/maintenance/collect-objects",
    tag = "maintenance", params(("catalog" = String, Path)), request_body = CollectRequest,
    responses((status = 202, body = JobView)))]
pub async fn collect_objects(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(request): JsonBody<CollectRequest>,
) -> Result<(StatusCode, Json<JobView>), ApiError> {
    let catalog = open(&state, &catalog).await?;
    let job = jobs::start_collect(
        state.security.clone(),
        state.store.clone(),
        catalog,
        Caller::current_name(),
        request.dry_run,
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(job)))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct JobList {
    pub jobs: Vec<JobView>,
    #[serde(rename = "next-page-token", skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobListParams {
    #[serde(rename = "pageToken")]
    page_token: Option<String>,
    #[serde(rename = "pageSize")]
    page_size: Option<usize>,
}

/// The catalog's maintenance jobs, oldest first.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/maintenance/jobs", tag = "maintenance",
    params(("catalog" = String, Path), JobListParams),
    responses((status = 200, body = JobList)))]
pub async fn list_jobs(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<JobListParams>,
) -> Result<Json<JobList>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let limit = page_size(params.page_size)?.min(jobs::MAX_PAGE);
    let after = params.page_token.as_deref().filter(|t| !t.is_empty());
    let (jobs, next) = jobs::list(
        state.store.as_ref(),
        catalog.tenant(),
        catalog.name(),
        after,
        limit,
    )
    .await?;
    Ok(Json(JobList {
        jobs,
        next_page_token: next,
    }))
}

/// One maintenance job: its progress while it runs, its result or error once it ended.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/maintenance/jobs/{job}", tag = "maintenance",
    params(("catalog" = String, Path), ("job" = String, Path)),
    responses((status = 200, body = JobView), (status = 404, description = "no such job")))]
pub async fn get_job(
    State(state): State<AppState>,
    PathParams((catalog, job)): PathParams<(String, String)>,
) -> Result<Json<JobView>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    Ok(Json(
        jobs::get(state.store.as_ref(), catalog.tenant(), catalog.name(), &job).await?,
    ))
}
