//! The catalogs a caller can see: those of its tenant in which it may read something.

use axum::Json;
use axum::extract::State;
use pangolin_catalog::authz::{self, Privilege, Request, Resource};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::security::{Caller, unauthorized};
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogView {
    pub name: String,
    #[serde(rename = "default-branch")]
    pub default_branch: String,
    /// The tenant's warehouse the catalog keeps its files in.
    pub warehouse: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogList {
    pub catalogs: Vec<CatalogView>,
}

/// The catalogs of the caller's tenant in which the caller may read something: a catalog it
/// may not read at all is not named. As for every request at no branch, a read grant counts
/// when it is on every branch (`*`).
#[utoipa::path(get, path = "/api/v1/catalogs", tag = "catalogs",
    responses((status = 200, body = CatalogList)))]
pub async fn list(State(state): State<AppState>) -> Result<Json<CatalogList>, ApiError> {
    let caller = Caller::current().ok_or_else(|| unauthorized("not signed in"))?;
    let roles = if caller.unrestricted {
        Vec::new()
    } else {
        state.security.authz.roles_of(&caller.principal).await?
    };
    let tenancy = state.catalogs.tenancy();
    let mut catalogs = Vec::new();
    let mut after = None;
    loop {
        let page = tenancy
            .list_catalogs(&caller.tenant, after.as_deref(), super::MAX_PAGE)
            .await?;
        for stored in page.items {
            let record = stored.value;
            let request = Request::new(
                Privilege::Read,
                Resource::catalog(caller.tenant.as_str(), record.name.as_str()),
            );
            if caller.unrestricted
                || authz::decide_any(&caller.principal, &roles, &request).is_allowed()
            {
                catalogs.push(CatalogView {
                    name: record.name.to_string(),
                    default_branch: pangolin_catalog::DEFAULT_BRANCH.to_owned(),
                    warehouse: record.warehouse.to_string(),
                });
            }
        }
        match page.next_after {
            Some(next) => after = Some(next.to_string()),
            None => return Ok(Json(CatalogList { catalogs })),
        }
    }
}
