//! Branches and tags: list, create, read, move, delete.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::{CreateRefError, ListRefsError, RefSpec, UpdateRefError};
use pangolin_refs::{RefKind, RefName, Reference};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{authorize, decode_token, encode_token, open, page_size, parse_hash, parse_spec};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::security::Caller;
use crate::state::AppState;
use pangolin_catalog::authz::Privilege;

fn kind_name(kind: RefKind) -> &'static str {
    match kind {
        RefKind::Branch => "branch",
        RefKind::Tag => "tag",
    }
}

fn parse_kind(value: &str) -> Result<RefKind, ApiError> {
    match value {
        "branch" => Ok(RefKind::Branch),
        "tag" => Ok(RefKind::Tag),
        other => Err(ApiError::bad_request(format!(
            "type must be `branch` or `tag`, not `{other}`"
        ))),
    }
}

fn parse_name(value: &str) -> Result<RefName, ApiError> {
    RefName::new(value).map_err(|e| ApiError::bad_request(format!("invalid ref name: {e}")))
}

fn update_error(error: UpdateRefError) -> ApiError {
    let message = error.to_string();
    match error {
        UpdateRefError::Missing(_) => {
            ApiError::new(StatusCode::NOT_FOUND, "NoSuchReferenceException", message)
        }
        UpdateRefError::TagImmutable(_) | UpdateRefError::DefaultBranch(_) => {
            ApiError::bad_request(message)
        }
        UpdateRefError::Stale { .. } => {
            ApiError::new(StatusCode::CONFLICT, "ReferenceConflictException", message)
        }
        UpdateRefError::Protected(e) => e.into(),
        UpdateRefError::Resolve(e) => e.into(),
        UpdateRefError::Backend(e) => e.into(),
        UpdateRefError::Transact(e) => ApiError::internal(&e),
    }
}

/// A branch or tag.
#[derive(Debug, Serialize, ToSchema)]
pub struct RefView {
    pub name: String,
    /// `branch` or `tag`.
    #[serde(rename = "type")]
    pub kind: String,
    pub hash: String,
    /// First-parent commits of this branch not in the default branch (`null` for tags).
    pub ahead: Option<u64>,
    /// First-parent commits of the default branch not in this branch (`null` for tags).
    pub behind: Option<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RefList {
    pub refs: Vec<RefView>,
    #[serde(rename = "next-page-token", skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// `branch` or `tag`; both when absent.
    #[serde(rename = "type")]
    kind: Option<String>,
    /// Only names starting with this.
    prefix: Option<String>,
    #[serde(rename = "pageToken")]
    page_token: Option<String>,
    #[serde(rename = "pageSize")]
    page_size: Option<usize>,
}

/// Lists branches and tags, with how far each branch is from the default branch.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/refs", tag = "refs",
    params(("catalog" = String, Path), ListParams),
    responses((status = 200, body = RefList)))]
pub async fn list(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<RefList>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let kind = params.kind.as_deref().map(parse_kind).transpose()?;
    let after = match params.page_token.as_deref().filter(|t| !t.is_empty()) {
        None => None,
        Some(token) => {
            let raw = decode_token(token)?;
            let invalid = || ApiError::bad_request(format!("invalid page token `{token}`"));
            let (code, name) = raw.split_once(':').ok_or_else(invalid)?;
            let kind = match code {
                "b" => RefKind::Branch,
                "t" => RefKind::Tag,
                _ => return Err(invalid()),
            };
            Some(Reference {
                kind,
                name: RefName::new(name).map_err(|_| invalid())?,
            })
        }
    };
    let limit = page_size(params.page_size)?;
    let (refs, next) = catalog
        .list_refs(kind, params.prefix.as_deref().unwrap_or(""), after, limit)
        .await
        .map_err(|e| match e {
            ListRefsError::Backend(e) => ApiError::from(e),
            ListRefsError::Read(e) => e.into(),
        })?;
    Ok(Json(RefList {
        refs: refs
            .into_iter()
            .map(|info| RefView {
                name: info.reference.name.as_str().to_owned(),
                kind: kind_name(info.reference.kind).to_owned(),
                hash: info.head.to_hex(),
                ahead: info.ahead,
                behind: info.behind,
            })
            .collect(),
        next_page_token: next.map(|r| {
            let code = if r.kind == RefKind::Branch { "b" } else { "t" };
            encode_token(&format!("{code}:{}", r.name.as_str()))
        }),
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRefRequest {
    pub name: String,
    /// `branch` (default) or `tag`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Any reference; the default branch when absent.
    #[serde(default)]
    pub from: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedRef {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub hash: String,
}

/// Creates a branch or a tag at any reference.
#[utoipa::path(post, path = "/api/v1/catalogs/{catalog}/refs", tag = "refs",
    params(("catalog" = String, Path)), request_body = CreateRefRequest,
    responses((status = 201, body = CreatedRef), (status = 409, description = "the name is taken")))]
pub async fn create(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(request): JsonBody<CreateRefRequest>,
) -> Result<(StatusCode, Json<CreatedRef>), ApiError> {
    let catalog = open(&state, &catalog).await?;
    let kind = parse_kind(request.kind.as_deref().unwrap_or("branch"))?;
    let name = parse_name(&request.name)?;
    let from = parse_spec(
        "from",
        request
            .from
            .as_deref()
            .unwrap_or(pangolin_catalog::DEFAULT_BRANCH),
    )?;
    authorize(&state, &catalog, Privilege::Read, &from).await?;
    authorize(
        &state,
        &catalog,
        Privilege::ManageRefs,
        &RefSpec::Named(name.clone()),
    )
    .await?;
    let (reference, head) = catalog
        .create_ref(kind, name, &from, &Caller::current_name())
        .await
        .map_err(|e| match e {
            CreateRefError::Exists(_) => ApiError::new(
                StatusCode::CONFLICT,
                "AlreadyExistsException",
                e.to_string(),
            ),
            CreateRefError::Resolve(e) => e.into(),
            CreateRefError::Backend(e) => e.into(),
            CreateRefError::Transact(e) => ApiError::internal(&e),
        })?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedRef {
            name: reference.name.as_str().to_owned(),
            kind: kind_name(reference.kind).to_owned(),
            hash: head.to_hex(),
        }),
    ))
}

/// What a reference expression names.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResolvedRef {
    pub name: String,
    /// `branch`, `tag`, or `commit` (a hash, a time or an ancestor).
    #[serde(rename = "type")]
    pub kind: String,
    pub hash: String,
    /// The commit's time, RFC 3339.
    pub time: String,
    pub message: String,
}

/// Reads a branch, a tag, or any reference expression (`main~3`, `main%23<time>`, a hash).
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/refs/{name}", tag = "refs",
    params(("catalog" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = ResolvedRef)))]
pub async fn get(
    State(state): State<AppState>,
    PathParams((catalog, name)): PathParams<(String, String)>,
) -> Result<Json<ResolvedRef>, ApiError> {
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
    Ok(Json(ResolvedRef {
        name,
        kind: kind.to_owned(),
        hash: resolved.commit.to_hex(),
        time: pangolin_catalog::rfc3339(commit.time),
        message: commit.message.clone(),
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignRequest {
    /// Any reference.
    pub to: String,
    /// The hash the branch is at now, as the caller last saw it.
    #[serde(rename = "expected-hash")]
    pub expected_hash: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AssignedRef {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub hash: String,
    #[serde(rename = "previous-hash")]
    pub previous_hash: String,
}

/// Moves a branch to any reference, if it is still where the caller saw it. Tags do not move.
#[utoipa::path(put, path = "/api/v1/catalogs/{catalog}/refs/{name}", tag = "refs",
    params(("catalog" = String, Path), ("name" = String, Path)), request_body = AssignRequest,
    responses((status = 200, body = AssignedRef), (status = 409, description = "the branch moved")))]
pub async fn assign(
    State(state): State<AppState>,
    PathParams((catalog, name)): PathParams<(String, String)>,
    JsonBody(request): JsonBody<AssignRequest>,
) -> Result<Json<AssignedRef>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let name = parse_name(&name)?;
    let to = parse_spec("to", &request.to)?;
    let expected = parse_hash(&catalog, "expected-hash", &request.expected_hash).await?;
    let (reference, hash) = catalog
        .assign_branch(&name, &to, expected, &Caller::current_name())
        .await
        .map_err(update_error)?;
    Ok(Json(AssignedRef {
        name: reference.name.as_str().to_owned(),
        kind: kind_name(reference.kind).to_owned(),
        hash: hash.to_hex(),
        previous_hash: expected.to_hex(),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeleteParams {
    /// The hash the ref is at now; any when absent.
    #[serde(rename = "expected-hash")]
    expected_hash: Option<String>,
}

impl DeleteParams {
    /// A delete that expects the ref at `hash` (any hash when `None`).
    pub fn expecting(hash: Option<String>) -> Self {
        Self {
            expected_hash: hash,
        }
    }
}

/// Deletes a branch or tag. The default branch cannot be deleted.
#[utoipa::path(delete, path = "/api/v1/catalogs/{catalog}/refs/{name}", tag = "refs",
    params(("catalog" = String, Path), ("name" = String, Path), DeleteParams),
    responses((status = 204), (status = 409, description = "the ref moved")))]
pub async fn delete(
    State(state): State<AppState>,
    PathParams((catalog, name)): PathParams<(String, String)>,
    QueryParams(params): QueryParams<DeleteParams>,
) -> Result<StatusCode, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let name = parse_name(&name)?;
    let expected = match params.expected_hash.as_deref() {
        Some(hash) => Some(parse_hash(&catalog, "expected-hash", hash).await?),
        None => None,
    };
    catalog
        .delete_ref(&name, expected, &Caller::current_name())
        .await
        .map_err(update_error)?;
    Ok(StatusCode::NO_CONTENT)
}
