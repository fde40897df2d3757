//! Moving history between branches: merge, cherry-pick, revert. Conflicts answer 409 with every
//! conflicting key and change nothing.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::{Catalog, HistoryRequest, MergeRefError, RefSpec, TableMergeMode};
use pangolin_merge::{
    CommitMode, FastForward, KeyChange, LandError, Landed, MergeError, MergeOptions, MergeOutcome,
    PickError, PickOptions, PickOutcome, Resolution, Strategy,
};
use pangolin_store::ContentKey;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::views::{ChangeView, ConflictView};
use super::{authorize, open, parse_hash, parse_spec};
use crate::error::ApiError;
use crate::extract::PathParams;
use crate::json::JsonBody;
use crate::security::Caller;
use crate::state::AppState;
use pangolin_catalog::authz::Privilege;

/// How to settle one conflicting key.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolutionRequest {
    pub key: Vec<String>,
    /// `ours` (keep the target's) or `theirs` (take the source's).
    pub take: String,
}

fn resolutions(
    requests: &[ResolutionRequest],
) -> Result<BTreeMap<ContentKey, Resolution>, ApiError> {
    let mut out = BTreeMap::new();
    for request in requests {
        let key = ContentKey::new(request.key.iter().map(String::as_str))?;
        let resolution = match request.take.as_str() {
            "ours" => Resolution::Ours,
            "theirs" => Resolution::Theirs,
            other => {
                return Err(ApiError::bad_request(format!(
                    "a resolution takes `ours` or `theirs`, not `{other}`"
                )));
            }
        };
        out.insert(key, resolution);
    }
    Ok(out)
}

fn strategy(value: Option<&str>) -> Result<Strategy, ApiError> {
    match value {
        None | Some("fail") => Ok(Strategy::Fail),
        Some("prefer-ours") => Ok(Strategy::PreferOurs),
        Some("prefer-theirs") => Ok(Strategy::PreferTheirs),
        Some(other) => Err(ApiError::bad_request(format!(
            "strategy must be `fail`, `prefer-ours` or `prefer-theirs`, not `{other}`"
        ))),
    }
}

/// What a merge, cherry-pick or revert did (or would do, in a dry run).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct HistoryResult {
    /// `up-to-date`, `fast-forward`, `merged`, `applied` or `conflicted`.
    pub result: String,
    pub dry_run: bool,
    /// The target head the operation was computed against.
    pub previous_head: String,
    /// Where the target is now (where it would be, in a dry run; `null` when a dry run would
    /// write a commit). Unchanged when conflicts remain.
    pub target_head: Option<String>,
    /// Commits written, oldest first.
    pub commits: Vec<String>,
    pub changes: Vec<ChangeView>,
    /// Conflicts settled by resolutions or the strategy.
    pub resolved: Vec<ConflictView>,
    /// Conflicts left: nothing was changed.
    pub conflicts: Vec<ConflictView>,
    /// Tables changed on both sides whose changes were merged into new metadata (a merge
    /// with `table-merge` on), each with what the merge did to it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub table_merges: Vec<TableMergeView>,
    /// Set with a 409.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<serde_json::Value>,
}

/// A table whose changes on both sides a merge combined.
#[derive(Debug, Serialize, ToSchema)]
pub struct TableMergeView {
    pub key: Vec<String>,
    /// What the merge did to the table, in words.
    pub plan: Vec<String>,
}

fn conflicted(mut result: HistoryResult) -> (StatusCode, Json<HistoryResult>) {
    result.result = "conflicted".to_owned();
    result.target_head = Some(result.previous_head.clone());
    result.error = Some(serde_json::json!({
        "message": format!("{} conflicting keys; nothing was changed", result.conflicts.len()),
        "type": "MergeConflictException",
        "code": 409,
    }));
    (StatusCode::CONFLICT, Json(result))
}

fn land_error(error: MergeRefError) -> ApiError {
    let message = error.to_string();
    match error {
        MergeRefError::TargetNotBranch(_) => ApiError::bad_request(message),
        MergeRefError::Protected(e) => e.into(),
        MergeRefError::Table(e) => ApiError::internal(&e),
        MergeRefError::Resolve(e) => e.into(),
        MergeRefError::Land(land) => match land {
            LandError::MissingTarget(_) | LandError::TargetIsTag(_) => {
                ApiError::bad_request(message)
            }
            LandError::TargetMoved { .. } => {
                ApiError::new(StatusCode::CONFLICT, "ReferenceConflictException", message)
            }
            LandError::Merge(MergeError::NotFastForward) => {
                ApiError::new(StatusCode::CONFLICT, "MergeConflictException", message)
            }
            LandError::Merge(MergeError::UnknownResolution(_))
            | LandError::Pick(PickError::UnknownResolution(_) | PickError::Empty) => {
                ApiError::bad_request(message)
            }
            LandError::Merge(MergeError::Read(e)) | LandError::Pick(PickError::Read(e)) => e.into(),
            LandError::Backend(e) => e.into(),
            other => ApiError::internal(&other),
        },
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MergeRequest {
    /// Any reference.
    pub source: String,
    /// A branch; the default branch when absent.
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub expected_target_head: Option<String>,
    #[serde(default)]
    pub dry_run: bool,
    /// `allow` (default), `never` or `only`.
    #[serde(default)]
    pub fast_forward: Option<String>,
    #[serde(default)]
    pub squash: bool,
    /// `fail` (default), `prefer-ours` or `prefer-theirs`.
    #[serde(default)]
    pub strategy: Option<String>,
    #[serde(default)]
    pub resolutions: Vec<ResolutionRequest>,
    #[serde(default)]
    pub message: Option<String>,
    /// `auto`: a table changed on both sides is merged when the changes commute (appends,
    /// properties, added fields); `off`: it is a conflict. The catalog's `table-merge`
    /// property when absent, else `off`.
    #[serde(default)]
    pub table_merge: Option<String>,
}

async fn history_request(
    catalog: &Catalog,
    expected: Option<&str>,
    message: Option<String>,
) -> Result<HistoryRequest, ApiError> {
    Ok(HistoryRequest {
        principal: Caller::current_name(),
        message,
        expected_head: match expected {
            Some(hash) => Some(parse_hash(catalog, "expected-target-head", hash).await?),
            None => None,
        },
    })
}

/// Merges a reference into a branch.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/merge", tag = "merge",
    params(("catalog" = String, Path)), request_body = MergeRequest,
    responses((status = 200, body = HistoryResult),
        (status = 409, body = HistoryResult, description = "conflicts; nothing changed")))]
pub async fn merge(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(request): JsonBody<MergeRequest>,
) -> Result<(StatusCode, Json<HistoryResult>), ApiError> {
    let catalog = open(&state, &catalog).await?;
    let source = parse_spec("source", &request.source)?;
    let target = target_spec("target", request.target.as_deref())?;
    authorize(&state, &catalog, Privilege::Read, &source).await?;
    authorize(&state, &catalog, Privilege::Write, &target).await?;
    let options = MergeOptions {
        fast_forward: match request.fast_forward.as_deref() {
            None | Some("allow") => FastForward::Allow,
            Some("never") => FastForward::Never,
            Some("only") => FastForward::Only,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "fast-forward must be `allow`, `never` or `only`, not `{other}`"
                )));
            }
        },
        mode: if request.squash {
            CommitMode::Squash
        } else {
            CommitMode::MergeCommit
        },
        strategy: strategy(request.strategy.as_deref())?,
        resolutions: resolutions(&request.resolutions)?,
        dry_run: request.dry_run,
    };
    let history = history_request(
        &catalog,
        request.expected_target_head.as_deref(),
        request.message,
    )
    .await?;
    let tables = table_merge_mode(&catalog, request.table_merge.as_deref())?;
    let report = catalog
        .merge_with(&source, &target, &options, tables, &history)
        .await
        .map_err(land_error)?;
    let landed = report.landed;
    // Nothing to merge means nothing in conflict, so every resolution names a key that is not.
    if matches!(landed.outcome, MergeOutcome::UpToDate) && !options.resolutions.is_empty() {
        let keys: Vec<String> = options
            .resolutions
            .keys()
            .map(ToString::to_string)
            .collect();
        return Err(ApiError::bad_request(format!(
            "resolutions name keys that are not in conflict: {} (the source is already merged)",
            keys.join(", ")
        )));
    }
    let (status, Json(mut result)) = merge_result(&catalog, &landed, request.dry_run).await;
    result.table_merges = report
        .tables
        .into_iter()
        .map(|t| TableMergeView {
            key: t.key.elements().map(str::to_owned).collect(),
            plan: t.plan,
        })
        .collect();
    Ok((status, Json(result)))
}

/// The table merge mode a merge asked for, else the catalog's default.
fn table_merge_mode(catalog: &Catalog, asked: Option<&str>) -> Result<TableMergeMode, ApiError> {
    match asked {
        None => Ok(catalog.table_merge_mode()),
        Some(text) => TableMergeMode::parse(text).ok_or_else(|| {
            ApiError::bad_request(format!("table-merge must be `auto` or `off`, not `{text}`"))
        }),
    }
}

/// Changes with what each did to a table's metadata, in words.
async fn change_views(catalog: &Catalog, changes: &[KeyChange]) -> Vec<ChangeView> {
    let mut views = Vec::with_capacity(changes.len());
    for change in changes {
        let mut view = ChangeView::from(change);
        view.summary = catalog
            .summarize(change.before.as_ref(), change.after.as_ref())
            .await;
        views.push(view);
    }
    views
}

async fn merge_result(
    catalog: &Catalog,
    landed: &Landed<MergeOutcome>,
    dry_run: bool,
) -> (StatusCode, Json<HistoryResult>) {
    let previous = landed.previous_head.to_hex();
    let mut result = HistoryResult {
        result: String::new(),
        dry_run,
        previous_head: previous.clone(),
        target_head: None,
        commits: Vec::new(),
        changes: Vec::new(),
        resolved: Vec::new(),
        conflicts: Vec::new(),
        table_merges: Vec::new(),
        error: None,
    };
    match &landed.outcome {
        MergeOutcome::UpToDate => {
            result.result = "up-to-date".to_owned();
            result.target_head = Some(previous);
        }
        MergeOutcome::FastForward { to, changes } => {
            result.result = "fast-forward".to_owned();
            result.target_head = Some(to.to_hex());
            result.changes = change_views(catalog, changes).await;
        }
        MergeOutcome::Merged {
            commit,
            changes,
            resolved,
            ..
        } => {
            result.result = "merged".to_owned();
            result.target_head = commit.map(|c| c.to_hex());
            result.commits = commit.iter().map(|c| c.to_hex()).collect();
            result.changes = change_views(catalog, changes).await;
            result.resolved = resolved.iter().map(ConflictView::from).collect();
        }
        MergeOutcome::Conflicted {
            conflicts, changes, ..
        } => {
            result.changes = change_views(catalog, changes).await;
            result.conflicts = conflicts.iter().map(ConflictView::from).collect();
            return conflicted(result);
        }
    }
    (StatusCode::OK, Json(result))
}

fn target_spec(field: &str, value: Option<&str>) -> Result<RefSpec, ApiError> {
    parse_spec(field, value.unwrap_or(pangolin_catalog::DEFAULT_BRANCH))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CherryPickRequest {
    /// Hashes or references, applied oldest first.
    pub commits: Vec<String>,
    /// A branch; the default branch when absent.
    #[serde(default)]
    pub onto: Option<String>,
    #[serde(default)]
    pub expected_target_head: Option<String>,
    #[serde(default)]
    pub dry_run: bool,
    /// One commit for all picks instead of one per pick.
    #[serde(default)]
    pub squash: bool,
    #[serde(default)]
    pub strategy: Option<String>,
    #[serde(default)]
    pub resolutions: Vec<ResolutionRequest>,
    #[serde(default)]
    pub message: Option<String>,
}

/// Replays commits' changes on a branch.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/cherry-pick", tag = "merge",
    params(("catalog" = String, Path)), request_body = CherryPickRequest,
    responses((status = 200, body = HistoryResult),
        (status = 409, body = HistoryResult, description = "conflicts; nothing changed")))]
pub async fn cherry_pick(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(request): JsonBody<CherryPickRequest>,
) -> Result<(StatusCode, Json<HistoryResult>), ApiError> {
    let catalog = open(&state, &catalog).await?;
    if request.commits.is_empty() {
        return Err(ApiError::bad_request(
            "name at least one commit to cherry-pick",
        ));
    }
    let picks = request
        .commits
        .iter()
        .map(|c| parse_spec("commit", c))
        .collect::<Result<Vec<_>, _>>()?;
    let onto = target_spec("onto", request.onto.as_deref())?;
    for pick in &picks {
        authorize(&state, &catalog, Privilege::Read, pick).await?;
    }
    authorize(&state, &catalog, Privilege::Write, &onto).await?;
    let options = PickOptions {
        strategy: strategy(request.strategy.as_deref())?,
        resolutions: resolutions(&request.resolutions)?,
        squash: request.squash,
        dry_run: request.dry_run,
    };
    let history = history_request(
        &catalog,
        request.expected_target_head.as_deref(),
        request.message,
    )
    .await?;
    let landed = catalog
        .cherry_pick(&picks, &onto, &options, &history)
        .await
        .map_err(land_error)?;
    Ok(pick_result(&catalog, &landed, request.dry_run).await)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RevertRequest {
    /// A hash or reference.
    pub commit: String,
    /// A branch; the default branch when absent.
    #[serde(default)]
    pub on: Option<String>,
    #[serde(default)]
    pub expected_target_head: Option<String>,
    #[serde(default)]
    pub dry_run: bool,
    #[serde(default)]
    pub strategy: Option<String>,
    #[serde(default)]
    pub resolutions: Vec<ResolutionRequest>,
    #[serde(default)]
    pub message: Option<String>,
}

/// Undoes a commit's changes with a new commit on a branch.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/revert", tag = "merge",
    params(("catalog" = String, Path)), request_body = RevertRequest,
    responses((status = 200, body = HistoryResult),
        (status = 409, body = HistoryResult, description = "conflicts; nothing changed")))]
pub async fn revert(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(request): JsonBody<RevertRequest>,
) -> Result<(StatusCode, Json<HistoryResult>), ApiError> {
    let catalog = open(&state, &catalog).await?;
    let commit = parse_spec("commit", &request.commit)?;
    let on = target_spec("on", request.on.as_deref())?;
    authorize(&state, &catalog, Privilege::Read, &commit).await?;
    authorize(&state, &catalog, Privilege::Write, &on).await?;
    let options = PickOptions {
        strategy: strategy(request.strategy.as_deref())?,
        resolutions: resolutions(&request.resolutions)?,
        squash: false,
        dry_run: request.dry_run,
    };
    let history = history_request(
        &catalog,
        request.expected_target_head.as_deref(),
        request.message,
    )
    .await?;
    let landed = catalog
        .revert(&commit, &on, &options, &history)
        .await
        .map_err(land_error)?;
    Ok(pick_result(&catalog, &landed, request.dry_run).await)
}

async fn pick_result(
    catalog: &Catalog,
    landed: &Landed<PickOutcome>,
    dry_run: bool,
) -> (StatusCode, Json<HistoryResult>) {
    let previous = landed.previous_head.to_hex();
    let mut result = HistoryResult {
        result: "applied".to_owned(),
        dry_run,
        previous_head: previous.clone(),
        target_head: None,
        commits: Vec::new(),
        changes: Vec::new(),
        resolved: Vec::new(),
        conflicts: Vec::new(),
        table_merges: Vec::new(),
        error: None,
    };
    match &landed.outcome {
        PickOutcome::Applied {
            commits,
            changes,
            resolved,
        } => {
            result.commits = commits.iter().map(|c| c.to_hex()).collect();
            result.target_head = match commits.last() {
                Some(last) => Some(last.to_hex()),
                None if dry_run => None,
                None => Some(previous),
            };
            result.changes = change_views(catalog, changes).await;
            result.resolved = resolved.iter().map(ConflictView::from).collect();
            (StatusCode::OK, Json(result))
        }
        PickOutcome::Conflicted { conflicts, .. } => {
            result.conflicts = conflicts.iter().map(ConflictView::from).collect();
            conflicted(result)
        }
    }
}
