//! Creating, reading and deleting the catalogs of the caller's tenant (listing is
//! [`crate::management::catalogs::list`]). Each change drops the directory's answer for the
//! catalog, so this server serves the change at once.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::rfc3339;
use pangolin_catalog::tenancy::{CatalogKind, CatalogRecord, NewCatalog};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::caller;
use crate::error::ApiError;
use crate::extract::PathParams;
use crate::json::JsonBody;
use crate::state::AppState;

/// `POST /api/v1/catalogs`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateCatalog {
    /// 1 to 63 letters, digits, `-` and `_`.
    pub name: String,
    /// A warehouse of the caller's tenant.
    pub warehouse: String,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
}

/// A catalog and its settings.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct CatalogDetail {
    pub name: String,
    pub default_branch: String,
    pub warehouse: String,
    pub properties: BTreeMap<String, String>,
    pub created_at: String,
}

impl CatalogDetail {
    fn of(record: &CatalogRecord) -> Self {
        Self {
            name: record.name.to_string(),
            default_branch: pangolin_catalog::DEFAULT_BRANCH.to_owned(),
            warehouse: record.warehouse.to_string(),
            properties: record.properties.clone(),
            created_at: rfc3339(record.created_at),
        }
    }
}

/// Creates a catalog in the caller's tenant, bound to one of its warehouses, with an empty
/// `main` branch.
#[utoipa::path(post, path = "/api/v1/catalogs", tag = "catalogs", request_body = CreateCatalog,
    responses((status = 201, body = CatalogDetail), (status = 400), (status = 403),
        (status = 404), (status = 409)))]
pub async fn create(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<CreateCatalog>,
) -> Result<(StatusCode, Json<CatalogDetail>), ApiError> {
    let caller = caller()?;
    let new = NewCatalog {
        warehouse: body.warehouse,
        kind: CatalogKind::Local,
        properties: body.properties,
    };
    let created = state
        .catalogs
        .tenancy()
        .create_catalog(&caller.tenant, &body.name, new, caller.name())
        .await;
    // Also after a failure: a lookup of the name may have been answered "no such catalog".
    state.catalogs.forget(&caller.tenant, &body.name);
    Ok((
        StatusCode::CREATED,
        Json(CatalogDetail::of(&created?.value)),
    ))
}

/// One catalog of the caller's tenant.
#[utoipa::path(get, path = "/api/v1/catalogs/{catalog}", tag = "catalogs",
    params(("catalog" = String, Path)),
    responses((status = 200, body = CatalogDetail), (status = 403), (status = 404)))]
pub async fn get(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
) -> Result<Json<CatalogDetail>, ApiError> {
    let tenant = caller()?.tenant;
    let stored = state.catalogs.tenancy().resolve(&tenant, &name).await?;
    Ok(Json(CatalogDetail::of(&stored.value)))
}

/// Deletes an empty catalog: no namespace on `main`, no other branch or tag.
#[utoipa::path(delete, path = "/api/v1/catalogs/{catalog}", tag = "catalogs",
    params(("catalog" = String, Path)),
    responses((status = 204), (status = 403), (status = 404), (status = 409)))]
pub async fn delete(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
) -> Result<StatusCode, ApiError> {
    let caller = caller()?;
    let deleted = state
        .catalogs
        .tenancy()
        .delete_catalog(&caller.tenant, &name, caller.name())
        .await;
    state.catalogs.forget(&caller.tenant, &name);
    deleted?;
    Ok(StatusCode::NO_CONTENT)
}
