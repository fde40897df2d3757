//! Management API for versioning (`/api/v1`): branches and tags, and merges.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::{Catalog, CreateRefError, MergeRefError, RefSpec};
use pangolin_merge::{
    CommitMode, Conflict, FastForward, KeyChange, LandError, MergeError, MergeOptions,
    MergeOutcome, Strategy,
};
use pangolin_refs::{RefKind, RefName, Reference};
use pangolin_store::{Content, Entry, HashPrefix};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::extract::PathParams;
use crate::json::JsonBody;
use crate::state::AppState;

/// Until authentication comes, changes are made by the anonymous principal.
const PRINCIPAL: &str = "anonymous";

async fn open(state: &AppState, name: &str) -> Result<Catalog, ApiError> {
    let scope = state.scope(name)?;
    if name.contains('@') || !scope.catalog.exists().await? {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NoSuchCatalogException",
            format!("there is no catalog named `{name}`"),
        ));
    }
    Ok(scope.catalog)
}

fn ref_kind_name(kind: RefKind) -> &'static str {
    match kind {
        RefKind::Branch => "branch",
        RefKind::Tag => "tag",
    }
}

fn parse_spec(field: &str, value: &str) -> Result<RefSpec, ApiError> {
    RefSpec::parse(value).map_err(|e| ApiError::bad_request(format!("invalid {field}: {e}")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRefRequest {
    name: String,
    #[serde(rename = "type", default = "default_kind")]
    kind: String,
    /// A reference expression; the default branch when absent.
    #[serde(default)]
    from: Option<String>,
}

fn default_kind() -> String {
    "branch".to_owned()
}

pub async fn create_ref(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(request): JsonBody<CreateRefRequest>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let catalog = open(&state, &catalog).await?;
    let kind = match request.kind.as_str() {
        "branch" => RefKind::Branch,
        "tag" => RefKind::Tag,
        other => {
            return Err(ApiError::bad_request(format!(
                "type must be `branch` or `tag`, not `{other}`"
            )));
        }
    };
    let name = RefName::new(&request.name)
        .map_err(|e| ApiError::bad_request(format!("invalid ref name: {e}")))?;
    let from = parse_spec(
        "from",
        request
            .from
            .as_deref()
            .unwrap_or(pangolin_catalog::DEFAULT_BRANCH),
    )?;
    let (reference, head) = catalog
        .create_ref(kind, name, &from, PRINCIPAL)
        .await
        .map_err(|e| match e {
            CreateRefError::Exists(_) => ApiError::new(
                StatusCode::CONFLICT,
                "AlreadyExistsException",
                e.to_string(),
            ),
            CreateRefError::Resolve(e) => e.into(),
            CreateRefError::Backend(e) => e.into(),
            CreateRefError::Transact(e) => ApiError::bad_request(e.to_string()),
        })?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "name": reference.name.as_str(),
            "type": ref_kind_name(reference.kind),
            "hash": head.to_hex(),
        })),
    ))
}

pub async fn get_ref(
    State(state): State<AppState>,
    PathParams((catalog, name)): PathParams<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let spec = parse_spec("reference", &name)?;
    let resolved = catalog.resolve(&spec).await?;
    let commit = catalog.odb().commit(&resolved.commit).await?;
    // A bare name that is not a branch is a tag, or else a commit hash.
    let kind = match (&spec, &resolved.writable_branch) {
        (_, Some(_)) => "branch",
        (RefSpec::Named(name), None) => {
            let tag = Reference {
                kind: RefKind::Tag,
                name: name.clone(),
            };
            match catalog.store().get_ref(catalog.odb().repo(), &tag).await? {
                Some(_) => "tag",
                None => "commit",
            }
        }
        _ => "commit",
    };
    Ok(Json(json!({
        "name": name,
        "type": kind,
        "hash": resolved.commit.to_hex(),
        "time": pangolin_catalog::rfc3339(commit.time),
        "message": commit.message,
    })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MergeRequest {
    source: String,
    /// A branch; the default branch when absent.
    #[serde(default)]
    target: Option<String>,
    /// The target head the caller saw: the merge fails if the branch moved since.
    #[serde(default)]
    expected_target_head: Option<String>,
    #[serde(default)]
    dry_run: bool,
    /// `allow` (default), `never` or `only`.
    #[serde(default)]
    fast_forward: Option<String>,
    #[serde(default)]
    squash: bool,
    /// `fail` (default), `prefer-ours` or `prefer-theirs`.
    #[serde(default)]
    strategy: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

fn entry_json(entry: Option<&Entry>) -> Value {
    let Some(entry) = entry else {
        return Value::Null;
    };
    let mut out = json!({
        "content-id": entry.content_id.to_string(),
        "type": entry.content.kind().to_string(),
    });
    match &entry.content {
        Content::IcebergTable {
            metadata_location,
            snapshot_id,
            ..
        } => {
            out["metadata-location"] = json!(metadata_location);
            out["snapshot-id"] = json!(snapshot_id);
        }
        Content::IcebergView {
            metadata_location, ..
        } => out["metadata-location"] = json!(metadata_location),
        Content::Namespace { properties } => out["properties"] = json!(properties),
        Content::Generic { location, .. } => out["location"] = json!(location),
    }
    out
}

fn change_json(change: &KeyChange) -> Value {
    json!({
        "key": change.key.elements().collect::<Vec<_>>(),
        "before": entry_json(change.before.as_ref()),
        "after": entry_json(change.after.as_ref()),
    })
}

fn conflict_json(conflict: &Conflict) -> Value {
    json!({
        "key": conflict.key.elements().collect::<Vec<_>>(),
        "kind": format!("{:?}", conflict.kind),
        "base": entry_json(conflict.base.as_ref()),
        "ours": entry_json(conflict.ours.as_ref()),
        "theirs": entry_json(conflict.theirs.as_ref()),
    })
}

pub async fn merge(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(request): JsonBody<MergeRequest>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let catalog = open(&state, &catalog).await?;
    let source = parse_spec("source", &request.source)?;
    let target = parse_spec(
        "target",
        request
            .target
            .as_deref()
            .unwrap_or(pangolin_catalog::DEFAULT_BRANCH),
    )?;
    let expected_head = match request.expected_target_head.as_deref() {
        None => None,
        Some(hex) => {
            let prefix = HashPrefix::parse(hex)
                .map_err(|e| ApiError::bad_request(format!("invalid expected-target-head: {e}")))?;
            Some(
                catalog
                    .odb()
                    .resolve_prefix(&prefix)
                    .await
                    .map_err(|e| ApiError::bad_request(e.to_string()))?,
            )
        }
    };
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
        strategy: match request.strategy.as_deref() {
            None | Some("fail") => Strategy::Fail,
            Some("prefer-ours") => Strategy::PreferOurs,
            Some("prefer-theirs") => Strategy::PreferTheirs,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "strategy must be `fail`, `prefer-ours` or `prefer-theirs`, not `{other}`"
                )));
            }
        },
        resolutions: Default::default(),
        dry_run: request.dry_run,
    };
    let landed = catalog
        .merge(
            &source,
            &target,
            expected_head,
            &options,
            PRINCIPAL,
            request.message,
        )
        .await
        .map_err(merge_error)?;
    let previous = landed.previous_head.to_hex();
    let (status, body) = match &landed.outcome {
        MergeOutcome::UpToDate => (
            StatusCode::OK,
            json!({
                "result": "up-to-date",
                "dry-run": request.dry_run,
                "previous-head": previous,
                "target-head": previous,
                "changes": [],
                "conflicts": [],
            }),
        ),
        MergeOutcome::FastForward { to, changes } => (
            StatusCode::OK,
            json!({
                "result": "fast-forward",
                "dry-run": request.dry_run,
                "previous-head": previous,
                "target-head": to.to_hex(),
                "changes": changes.iter().map(change_json).collect::<Vec<_>>(),
                "conflicts": [],
            }),
        ),
        MergeOutcome::Merged {
            commit,
            changes,
            resolved,
            ..
        } => (
            StatusCode::OK,
            json!({
                "result": "merged",
                "dry-run": request.dry_run,
                "previous-head": previous,
                "target-head": commit.map(|c| c.to_hex()),
                "changes": changes.iter().map(change_json).collect::<Vec<_>>(),
                "resolved": resolved.iter().map(conflict_json).collect::<Vec<_>>(),
                "conflicts": [],
            }),
        ),
        MergeOutcome::Conflicted {
            conflicts, changes, ..
        } => (
            StatusCode::CONFLICT,
            json!({
                "result": "conflicted",
                "target-head": previous,
                "changes": changes.iter().map(change_json).collect::<Vec<_>>(),
                "conflicts": conflicts.iter().map(conflict_json).collect::<Vec<_>>(),
                "error": {
                    "message": format!("{} conflicting keys; nothing was changed", conflicts.len()),
                    "type": "MergeConflictException",
                    "code": 409,
                },
            }),
        ),
    };
    Ok((status, Json(body)))
}

fn merge_error(error: MergeRefError) -> ApiError {
    let message = error.to_string();
    match error {
        MergeRefError::TargetNotBranch(_) => ApiError::bad_request(message),
        MergeRefError::Resolve(e) => e.into(),
        MergeRefError::Land(land) => match land {
            LandError::MissingTarget(_) | LandError::TargetIsTag(_) => {
                ApiError::bad_request(message)
            }
            LandError::TargetMoved { .. } => {
                ApiError::new(StatusCode::CONFLICT, "CommitFailedException", message)
            }
            LandError::Merge(MergeError::NotFastForward | MergeError::UnknownResolution(_)) => {
                ApiError::new(StatusCode::CONFLICT, "MergeConflictException", message)
            }
            LandError::Merge(MergeError::Read(e)) => e.into(),
            LandError::Backend(e) => e.into(),
            other => ApiError::internal(&other),
        },
    }
}
