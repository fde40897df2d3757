//! Tenants (root only): create (optionally with a first admin user), list, read, describe,
//! delete. Deleting a tenant also removes its users, service users, API keys, roles and
//! bindings, so that a tenant created again under that name inherits nobody's access.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::rfc3339;
use pangolin_catalog::tenancy::{Tenant, UpdateTenantError, Versioned};
use pangolin_identity::{Password, Scope, TenantName};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{PageParams, housekeeping, next_token, principal_name};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::state::AppState;

/// How often a description change is retried when a warehouse or catalog of the tenant was
/// created meanwhile (which raises the tenant's version).
const UPDATE_ATTEMPTS: usize = 3;

/// The first administrator of a new tenant.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FirstAdmin {
    pub username: String,
    /// At least 12 characters, at most 72 bytes.
    pub password: String,
}

impl std::fmt::Debug for FirstAdmin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FirstAdmin")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// `POST /api/v1/tenants`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTenant {
    /// 1 to 63 letters, digits, `-` and `_`.
    pub name: String,
    pub description: Option<String>,
    /// Creates this user as the tenant's administrator.
    pub admin: Option<FirstAdmin>,
}

/// `PATCH /api/v1/tenants/{tenant}`: `null` clears the description.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTenant {
    pub description: Option<String>,
}

/// A tenant.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct TenantView {
    pub name: String,
    pub description: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// The principal id of the administrator created with the tenant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin: Option<String>,
}

impl TenantView {
    fn of(tenant: &Tenant) -> Self {
        Self {
            name: tenant.name.to_string(),
            description: tenant.description.clone(),
            created_at: rfc3339(tenant.created_at),
            updated_at: rfc3339(tenant.updated_at),
            admin: None,
        }
    }
}

/// A page of tenants.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct TenantList {
    pub tenants: Vec<TenantView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// Creates a tenant, and with `admin` its first administrator.
#[utoipa::path(post, path = "/api/v1/tenants", tag = "tenants", request_body = CreateTenant,
    responses((status = 201, body = TenantView), (status = 400), (status = 403), (status = 409)))]
pub async fn create(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<CreateTenant>,
) -> Result<(StatusCode, Json<TenantView>), ApiError> {
    // Everything about the first admin is checked before the tenant exists, so a refused
    // password does not leave a tenant behind.
    let admin = match &body.admin {
        Some(admin) => {
            let identity = super::identity(&state)?.clone();
            let name = principal_name(&admin.username)?;
            let password = Password::new(admin.password.as_str());
            password
                .check_policy()
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            Some((identity, name, password))
        }
        None => None,
    };
    let tenancy = state.catalogs.tenancy();
    let created = tenancy
        .create_tenant(&body.name, body.description.clone())
        .await?;
    let mut view = TenantView::of(&created.value);
    if let Some((identity, name, password)) = admin {
        let scope = Scope::tenant(created.value.name.as_str())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        // Once the tenant exists its administrator is made to the end, even if the caller goes
        // away meanwhile (the request's future dropped while bcrypt runs).
        let made =
            tokio::spawn(async move { identity.create_user(&scope, &name, &password, true).await })
                .await
                .map_err(|e| ApiError::internal(&e))?;
        match made {
            Ok(user) => view.admin = Some(user.id().to_string()),
            Err(error) => {
                // Take the tenant back: the request failed as a whole.
                if let Err(undo) = tenancy.delete_tenant(created.value.name.as_str()).await {
                    tracing::warn!(error = %undo, "could not remove a half-created tenant");
                }
                return Err(error.into());
            }
        }
    }
    Ok((StatusCode::CREATED, Json(view)))
}

/// Lists tenants by name.
#[utoipa::path(get, path = "/api/v1/tenants", tag = "tenants", params(PageParams),
    responses((status = 200, body = TenantList), (status = 403)))]
pub async fn list(
    State(state): State<AppState>,
    QueryParams(params): QueryParams<PageParams>,
) -> Result<Json<TenantList>, ApiError> {
    let (after, limit) = params.resolve()?;
    let page = state
        .catalogs
        .tenancy()
        .list_tenants(after.as_deref(), limit)
        .await?;
    Ok(Json(TenantList {
        tenants: page
            .items
            .iter()
            .map(|t| TenantView::of(&t.value))
            .collect(),
        next_page_token: next_token(page.next_after),
    }))
}

/// One tenant.
#[utoipa::path(get, path = "/api/v1/tenants/{tenant}", tag = "tenants",
    params(("tenant" = String, Path)),
    responses((status = 200, body = TenantView), (status = 403), (status = 404)))]
pub async fn get(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
) -> Result<Json<TenantView>, ApiError> {
    let tenant = state.catalogs.tenancy().tenant(&name).await?;
    Ok(Json(TenantView::of(&tenant.value)))
}

/// Changes a tenant's description.
#[utoipa::path(patch, path = "/api/v1/tenants/{tenant}", tag = "tenants",
    params(("tenant" = String, Path)), request_body = UpdateTenant,
    responses((status = 200, body = TenantView), (status = 400), (status = 403), (status = 404)))]
pub async fn update(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
    JsonBody(body): JsonBody<UpdateTenant>,
) -> Result<Json<TenantView>, ApiError> {
    let tenancy = state.catalogs.tenancy();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let current = tenancy.tenant(&name).await?;
        match tenancy
            .update_tenant_description(&name, current.version, body.description.clone())
            .await
        {
            Ok(Versioned { value, .. }) => return Ok(Json(TenantView::of(&value))),
            Err(UpdateTenantError::Conflict { .. }) if attempt < UPDATE_ATTEMPTS => {}
            Err(error) => return Err(error.into()),
        }
    }
}

/// Deletes a tenant that has no catalogs and no warehouses, with its principals and roles.
#[utoipa::path(delete, path = "/api/v1/tenants/{tenant}", tag = "tenants",
    params(("tenant" = String, Path)),
    responses((status = 204), (status = 403), (status = 404), (status = 409)))]
pub async fn delete(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
) -> Result<StatusCode, ApiError> {
    state.catalogs.tenancy().delete_tenant(&name).await?;
    state.catalogs.forget_tenant(&name);
    remove_members(&state, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes the users, service users (with their keys), roles and bindings of a deleted
/// tenant.
async fn remove_members(state: &AppState, tenant: &str) -> Result<(), ApiError> {
    let authz = &state.security.authz;
    let system = housekeeping();
    loop {
        let page = authz
            .list_roles(tenant, None, super::super::MAX_PAGE)
            .await?;
        for stored in &page.roles {
            super::roles::unbind_all(state, tenant, &stored.role.name).await?;
            authz
                .delete_role(&system, &[], tenant, &stored.role.name, stored.version)
                .await?;
        }
        if page.next_after.is_none() {
            break;
        }
    }
    let Some(identity) = &state.security.identity else {
        return Ok(());
    };
    let tenant_name = TenantName::new(tenant).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let scope = Scope::Tenant(tenant_name.clone());
    loop {
        let page = identity
            .list_users(&scope, None, super::super::MAX_PAGE)
            .await?;
        for user in &page.users {
            identity.delete_user(&scope, &user.name).await?;
        }
        if page.next_after.is_none() {
            break;
        }
    }
    loop {
        let page = identity
            .list_service_users(&tenant_name, None, super::super::MAX_PAGE)
            .await?;
        for service in &page.service_users {
            identity
                .delete_service_user(&tenant_name, &service.name)
                .await?;
        }
        if page.next_after.is_none() {
            break;
        }
    }
    Ok(())
}
