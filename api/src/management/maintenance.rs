//! Maintenance of a catalog's tables: snapshot expiry on one branch.

use axum::Json;
use axum::extract::State;
use pangolin_catalog::iceberg::expire::Retention;
use pangolin_catalog::maintenance::ExpireError;
use pangolin_refs::{RefName, Reference};
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::open;
use crate::error::ApiError;
use crate::extract::PathParams;
use crate::json::JsonBody;
use crate::security::Caller;
use crate::state::AppState;

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
            })
            .collect(),
        commit: report.commit.map(|c| c.to_hex()),
    }))
}
