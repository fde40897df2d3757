//! The service users (programs) of the caller's tenant. Their API keys are in
//! [`super::api_keys`].

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::rfc3339;
use pangolin_identity::{ServiceUser, TenantName};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{PageParams, acting_tenant, caller, identity, next_token, not_found, principal_name};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::state::AppState;

/// `POST /api/v1/service-users`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateServiceUser {
    /// 1 to 63 letters, digits, `-` and `_`.
    pub name: String,
}

/// A service user.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ServiceUserView {
    /// The principal id roles are bound to: `service:<tenant>/<name>`.
    pub id: String,
    pub name: String,
    pub disabled: bool,
    pub created_at: String,
}

impl ServiceUserView {
    fn of(service: &ServiceUser) -> Self {
        Self {
            id: format!("service:{}/{}", service.tenant, service.name),
            name: service.name.to_string(),
            disabled: service.disabled,
            created_at: rfc3339(service.created),
        }
    }
}

/// A page of service users.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ServiceUserList {
    pub service_users: Vec<ServiceUserView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// The service user `name` of `tenant`, or 404.
pub(super) async fn existing(
    state: &AppState,
    tenant: &TenantName,
    name: &str,
) -> Result<ServiceUser, ApiError> {
    let name = principal_name(name)?;
    identity(state)?
        .service_user(tenant, &name)
        .await?
        .ok_or_else(|| {
            not_found(
                "NoSuchServiceUserException",
                format!("there is no service user `{name}` in tenant `{tenant}`"),
            )
        })
}

/// Creates a service user in the caller's tenant.
#[utoipa::path(post, path = "/api/v1/service-users", tag = "service-users",
    request_body = CreateServiceUser,
    responses((status = 201, body = ServiceUserView), (status = 400), (status = 403),
        (status = 409)))]
pub async fn create(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<CreateServiceUser>,
) -> Result<(StatusCode, Json<ServiceUserView>), ApiError> {
    let tenant = acting_tenant(&caller()?)?;
    let name = principal_name(&body.name)?;
    let created = identity(&state)?
        .create_service_user(&tenant, &name)
        .await?;
    Ok((StatusCode::CREATED, Json(ServiceUserView::of(&created))))
}

/// Lists the service users of the caller's tenant by name.
#[utoipa::path(get, path = "/api/v1/service-users", tag = "service-users", params(PageParams),
    responses((status = 200, body = ServiceUserList), (status = 403)))]
pub async fn list(
    State(state): State<AppState>,
    QueryParams(params): QueryParams<PageParams>,
) -> Result<Json<ServiceUserList>, ApiError> {
    let tenant = acting_tenant(&caller()?)?;
    let (after, limit) = params.resolve()?;
    let after = after
        .map(|a| principal_name(&a))
        .transpose()
        .map_err(|_| ApiError::bad_request("invalid page token"))?;
    let page = identity(&state)?
        .list_service_users(&tenant, after.as_ref(), limit)
        .await?;
    Ok(Json(ServiceUserList {
        service_users: page.service_users.iter().map(ServiceUserView::of).collect(),
        next_page_token: next_token(page.next_after.map(|n| n.to_string())),
    }))
}

/// One service user of the caller's tenant.
#[utoipa::path(get, path = "/api/v1/service-users/{name}", tag = "service-users",
    params(("name" = String, Path)),
    responses((status = 200, body = ServiceUserView), (status = 403), (status = 404)))]
pub async fn get(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
) -> Result<Json<ServiceUserView>, ApiError> {
    let tenant = acting_tenant(&caller()?)?;
    let service = existing(&state, &tenant, &name).await?;
    Ok(Json(ServiceUserView::of(&service)))
}

/// Deletes a service user with all its API keys and role bindings.
#[utoipa::path(delete, path = "/api/v1/service-users/{name}", tag = "service-users",
    params(("name" = String, Path)),
    responses((status = 204), (status = 403), (status = 404)))]
pub async fn delete(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
) -> Result<StatusCode, ApiError> {
    let caller = caller()?;
    let tenant = acting_tenant(&caller)?;
    let service = existing(&state, &tenant, &name).await?;
    identity(&state)?
        .delete_service_user(&tenant, &service.name)
        .await?;
    let id = ServiceUserView::of(&service).id;
    super::roles::unbind_principal(&state, &caller.tenant, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
