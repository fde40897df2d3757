//! The catalogs this server serves.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogView {
    pub name: String,
    #[serde(rename = "default-branch")]
    pub default_branch: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogList {
    pub catalogs: Vec<CatalogView>,
}

/// The catalogs of the caller's tenant (the default catalog until catalogs can be created).
#[utoipa::path(get, path = "/api/v1/catalogs", tag = "catalogs",
    responses((status = 200, body = CatalogList)))]
pub async fn list(State(state): State<AppState>) -> Result<Json<CatalogList>, ApiError> {
    let catalog = super::open(&state, &state.default_catalog).await?;
    Ok(Json(CatalogList {
        catalogs: vec![CatalogView {
            name: catalog.name().to_owned(),
            default_branch: pangolin_catalog::DEFAULT_BRANCH.to_owned(),
        }],
    }))
}
