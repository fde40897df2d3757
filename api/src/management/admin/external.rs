//! The principals of identity providers that signed in to the caller's tenant (recorded on
//! their first sign-in), and disabling them: a disabled principal's tokens are refused however
//! valid its provider says they are. `ManageUsers` on the tenant, as for users. Principals of
//! the root scope's providers (`oidc:~/...`) are root's alone to see and disable.

use axum::Json;
use axum::extract::State;
use pangolin_catalog::rfc3339;
use pangolin_identity::{ExternalPrincipal, Scope};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::users::SetDisabled;
use super::{PageParams, acting_tenant, caller, identity, next_token};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::state::AppState;

/// A principal of an identity provider.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ExternalPrincipalView {
    /// The principal id roles are bound to: `oidc:<tenant>/<provider>/<subject>` (`~` for the
    /// tenant of a root-scope provider's principal).
    pub id: String,
    pub provider: String,
    pub subject: String,
    pub username: Option<String>,
    pub email: Option<String>,
    /// The groups of its last token, as `group:<tenant>/<provider>/<group>` ids are named.
    pub groups: Vec<String>,
    pub first_seen: String,
    pub last_seen: String,
    pub disabled: bool,
}

impl ExternalPrincipalView {
    fn of(principal: ExternalPrincipal) -> Self {
        Self {
            id: principal.id,
            provider: principal.provider.to_string(),
            subject: principal.subject,
            username: principal.username,
            email: principal.email,
            groups: principal.groups,
            first_seen: rfc3339(principal.first_seen),
            last_seen: rfc3339(principal.last_seen),
            disabled: principal.disabled,
        }
    }
}

/// A page of external principals.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ExternalPrincipalList {
    pub principals: Vec<ExternalPrincipalView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// Paging of the listing, and whose principals it lists.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ListParams {
    /// The previous page's `next-page-token`.
    pub page_token: Option<String>,
    /// At most this many items (1 to 1000; 100 when absent).
    pub page_size: Option<usize>,
    /// `root` for the principals of the root scope's providers (root only); the caller's
    /// tenant when absent.
    pub scope: Option<String>,
}

/// The external principals of the caller's tenant (or of the root scope), in pages.
#[utoipa::path(get, path = "/api/v1/external-principals", tag = "users",
    params(ListParams),
    responses((status = 200, body = ExternalPrincipalList), (status = 400), (status = 403)))]
pub async fn list(
    State(state): State<AppState>,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<ExternalPrincipalList>, ApiError> {
    let caller = caller()?;
    let scope = match params.scope.as_deref() {
        None => Scope::Tenant(acting_tenant(&caller)?),
        Some("root") if caller.is_root() => Scope::Root,
        Some("root") => return Err(root_only()),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "`scope` is `root` or absent (the tenant you act in), not `{other}`"
            )));
        }
    };
    let paging = PageParams {
        page_token: params.page_token,
        page_size: params.page_size,
    };
    let (after, limit) = paging.resolve()?;
    let page = identity(&state)?
        .list_external_principals(&scope, after.as_deref(), limit)
        .await?;
    Ok(Json(ExternalPrincipalList {
        principals: page
            .principals
            .into_iter()
            .map(ExternalPrincipalView::of)
            .collect(),
        next_page_token: next_token(page.next_after),
    }))
}

/// One external principal of the caller's tenant, by id.
#[utoipa::path(get, path = "/api/v1/external-principals/{principal}", tag = "users",
    params(("principal" = String, Path, description = "`oidc:<tenant>/<provider>/<subject>`, percent-encoded")),
    responses((status = 200, body = ExternalPrincipalView), (status = 403), (status = 404)))]
pub async fn get(
    State(state): State<AppState>,
    PathParams(id): PathParams<String>,
) -> Result<Json<ExternalPrincipalView>, ApiError> {
    in_tenant(&id)?;
    let principal = identity(&state)?.external_principal(&id).await?;
    Ok(Json(ExternalPrincipalView::of(principal)))
}

/// Disables or enables an external principal; a disabled one's tokens are refused.
#[utoipa::path(put, path = "/api/v1/external-principals/{principal}/disabled", tag = "users",
    params(("principal" = String, Path)), request_body = SetDisabled,
    responses((status = 200, body = ExternalPrincipalView), (status = 400), (status = 403),
              (status = 404)))]
pub async fn set_disabled(
    State(state): State<AppState>,
    PathParams(id): PathParams<String>,
    JsonBody(body): JsonBody<SetDisabled>,
) -> Result<Json<ExternalPrincipalView>, ApiError> {
    in_tenant(&id)?;
    let principal = identity(&state)?
        .set_external_disabled(&id, body.disabled)
        .await?;
    Ok(Json(ExternalPrincipalView::of(principal)))
}

fn root_only() -> ApiError {
    crate::security::forbidden(
        "only root sees the principals of the root scope's identity providers".to_owned(),
    )
}

/// Refuses an id of another tenant's principal as not found: tenants see only their own; the
/// root scope's are root's.
fn in_tenant(id: &str) -> Result<(), ApiError> {
    let caller = caller()?;
    let scope = id
        .strip_prefix("oidc:")
        .and_then(|rest| rest.split_once('/'))
        .map(|(scope, _)| scope);
    if scope == Some(Scope::Root.segment()) && caller.is_root() {
        return Ok(());
    }
    let tenant = acting_tenant(&caller)?;
    if scope == Some(tenant.as_str()) {
        Ok(())
    } else {
        Err(pangolin_identity::UpdateExternalError::NotFound(id.to_owned()).into())
    }
}
