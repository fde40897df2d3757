//! A catalog's retention policy: how long its history stays readable and keeps its files.

use axum::Json;
use axum::extract::State;
use pangolin_catalog::retention::{BranchRetention, RetentionPolicy};
use pangolin_catalog::tenancy::{GetCatalogError, SetRetentionError};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::open;
use crate::error::ApiError;
use crate::extract::PathParams;
use crate::json::JsonBody;
use crate::state::AppState;

/// A retention policy as the API shows and takes it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RetentionView {
    /// How long, in milliseconds, commits stay readable (time travel, hashes, ancestors) and
    /// keep their files from the sweep; at least an hour. Heads of branches and tags are
    /// always kept.
    pub history_ms: u64,
    /// Other windows for the branches whose names match a pattern (`*` matches any run of
    /// characters); the first match wins.
    #[serde(default)]
    pub branches: Vec<BranchRetentionView>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BranchRetentionView {
    pub pattern: String,
    pub history_ms: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RetentionAnswer {
    /// `null`: the catalog keeps its whole history.
    pub retention: Option<RetentionView>,
}

impl From<RetentionPolicy> for RetentionView {
    fn from(policy: RetentionPolicy) -> Self {
        Self {
            history_ms: policy.history_ms,
            branches: policy
                .branches
                .into_iter()
                .map(|b| BranchRetentionView {
                    pattern: b.pattern,
                    history_ms: b.history_ms,
                })
                .collect(),
        }
    }
}

impl From<RetentionView> for RetentionPolicy {
    fn from(view: RetentionView) -> Self {
        Self {
            history_ms: view.history_ms,
            branches: view
                .branches
                .into_iter()
                .map(|b| BranchRetention {
                    pattern: b.pattern,
                    history_ms: b.history_ms,
                })
                .collect(),
        }
    }
}

/// The catalog's retention policy.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}/retention", tag = "maintenance",
    params(("catalog" = String, Path)), responses((status = 200, body = RetentionAnswer)))]
pub async fn get(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
) -> Result<Json<RetentionAnswer>, ApiError> {
    let catalog = open(&state, &catalog).await?;
    let record = state
        .catalogs
        .tenancy()
        .resolve(catalog.tenant(), catalog.name())
        .await
        .map_err(get_error)?;
    Ok(Json(RetentionAnswer {
        retention: record.value.retention.map(Into::into),
    }))
}

/// Sets the catalog's retention policy. Every server applies it within the shared-state TTL
/// (this one at once); the next sweep frees what only commits past the window referenced.
#[utoipa::path(put, path = "/api/v1/catalogs/{catalog}/retention", tag = "maintenance",
    params(("catalog" = String, Path)), request_body = RetentionView,
    responses((status = 200, body = RetentionAnswer),
        (status = 400, description = "a window under an hour, or a bad pattern")))]
pub async fn put(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
    JsonBody(policy): JsonBody<RetentionView>,
) -> Result<Json<RetentionAnswer>, ApiError> {
    set(&state, &catalog, Some(policy.into())).await
}

/// Removes the catalog's retention policy: its whole history is readable again, as far as the
/// files that sweeps left allow.
#[utoipa::path(delete, path = "/api/v1/catalogs/{catalog}/retention", tag = "maintenance",
    params(("catalog" = String, Path)), responses((status = 200, body = RetentionAnswer)))]
pub async fn delete(
    State(state): State<AppState>,
    PathParams(catalog): PathParams<String>,
) -> Result<Json<RetentionAnswer>, ApiError> {
    set(&state, &catalog, None).await
}

async fn set(
    state: &AppState,
    catalog: &str,
    policy: Option<RetentionPolicy>,
) -> Result<Json<RetentionAnswer>, ApiError> {
    let catalog = open(state, catalog).await?;
    let record = state
        .catalogs
        .tenancy()
        .set_catalog_retention(catalog.tenant(), catalog.name(), policy)
        .await
        .map_err(|e| match e {
            SetRetentionError::Invalid(_) => ApiError::bad_request(e.to_string()),
            SetRetentionError::Get(e) => get_error(e),
            SetRetentionError::Records(e) => ApiError::internal(&e),
        })?;
    state.catalogs.forget(catalog.tenant(), catalog.name());
    Ok(Json(RetentionAnswer {
        retention: record.retention.map(Into::into),
    }))
}

/// A catalog record that could not be read, as an answer.
pub(super) fn get_error(error: GetCatalogError) -> ApiError {
    match error {
        GetCatalogError::NotFound { catalog, .. } => ApiError::new(
            axum::http::StatusCode::NOT_FOUND,
            "NoSuchCatalogException",
            format!("there is no catalog named `{catalog}`"),
        ),
        other => ApiError::internal(&other),
    }
}
