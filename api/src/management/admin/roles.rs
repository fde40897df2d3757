//! Roles of the caller's tenant and their members.
//!
//! Reading roles needs `ManageGrants` somewhere in the tenant (declared on the routes).
//! Changes are authorized by the [`AuthzStore`](pangolin_catalog::authz::AuthzStore) methods
//! themselves, given the caller and its roles: nobody grants, takes away or binds more than
//! it holds, nobody but root acts in another tenant, and a role binds only to principals of
//! its tenant. A grant's resource is always in the caller's tenant: bodies name only the
//! catalog, namespace and table.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::authz::{BranchPattern, Grant, Privilege, Resource, Role, StoredRole};
use pangolin_identity::{PrincipalId, PrincipalKind, Scope};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{PageParams, caller, housekeeping, next_token, not_found, roles_of};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::security::Caller;
use crate::state::AppState;

/// What a grant is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ResourceType {
    Tenant,
    Catalog,
    Namespace,
    Table,
}

/// A resource of the caller's tenant: `{"type": "tenant"}`, `{"type": "catalog", "catalog"}`,
/// `{"type": "namespace", "catalog", "namespace": ["a", "b"]}` or
/// `{"type": "table", "catalog", "namespace", "name"}` (tables and views alike).
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceBody {
    #[serde(rename = "type")]
    pub kind: ResourceType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One grant.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GrantBody {
    /// `read`, `write`, `create`, `drop`, `manage-refs`, `manage-grants`, `manage-catalogs`,
    /// `manage-users` or `read-audit`.
    #[schema(value_type = String)]
    pub privilege: Privilege,
    pub resource: ResourceBody,
    /// For `read`, `write`, `create`, `drop` and `manage-refs`: the branches, `*` (the
    /// default), `main`, `release/*`, `dev*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branches: Option<String>,
}

/// `POST /api/v1/roles`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRole {
    /// 1 to 128 ASCII letters, digits, `.`, `_` and `-`.
    pub name: String,
    pub grants: Vec<GrantBody>,
    /// A disabled role allows nothing but keeps its grants and members.
    #[serde(default)]
    pub disabled: bool,
}

/// `PUT /api/v1/roles/{role}`: the whole new role, at the version it was read at.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceRole {
    pub grants: Vec<GrantBody>,
    #[serde(default)]
    pub disabled: bool,
    /// The `version` of the role as read; 409 when it changed since.
    pub version: u64,
}

/// A role.
#[derive(Debug, Serialize, ToSchema)]
pub struct RoleView {
    pub name: String,
    pub grants: Vec<GrantBody>,
    pub disabled: bool,
    /// Send it back with a change.
    pub version: u64,
}

impl RoleView {
    fn of(stored: &StoredRole) -> Self {
        Self {
            name: stored.role.name.clone(),
            grants: stored.role.grants.iter().map(grant_body).collect(),
            disabled: stored.role.disabled,
            version: stored.version,
        }
    }
}

/// A page of roles.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct RoleList {
    pub roles: Vec<RoleView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// A page of a role's members.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct MemberList {
    /// Principal ids: `user:<tenant>/<name>`, `service:<tenant>/<name>`.
    pub members: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// `DELETE /api/v1/roles/{role}?version=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeleteParams {
    /// The version read; the role as stored now when absent.
    pub version: Option<u64>,
}

fn resource(tenant: &str, body: &ResourceBody) -> Result<Resource, ApiError> {
    let needs =
        |field: &str| ApiError::bad_request(format!("a {:?} resource needs `{field}`", body.kind));
    let unexpected = |field: &str| {
        ApiError::bad_request(format!("a {:?} resource takes no `{field}`", body.kind))
    };
    let catalog = || body.catalog.clone().ok_or_else(|| needs("catalog"));
    let namespace = || body.namespace.clone().ok_or_else(|| needs("namespace"));
    let resource = match body.kind {
        ResourceType::Tenant => {
            if body.catalog.is_some() {
                return Err(unexpected("catalog"));
            }
            if body.namespace.is_some() {
                return Err(unexpected("namespace"));
            }
            if body.name.is_some() {
                return Err(unexpected("name"));
            }
            Resource::tenant(tenant)
        }
        ResourceType::Catalog => {
            if body.namespace.is_some() {
                return Err(unexpected("namespace"));
            }
            if body.name.is_some() {
                return Err(unexpected("name"));
            }
            Resource::catalog(tenant, catalog()?)
        }
        ResourceType::Namespace => {
            if body.name.is_some() {
                return Err(unexpected("name"));
            }
            Resource::namespace(tenant, catalog()?, namespace()?)
        }
        ResourceType::Table => {
            let name = body.name.clone().ok_or_else(|| needs("name"))?;
            Resource::table(tenant, catalog()?, namespace()?, name)
        }
    };
    resource
        .validate()
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(resource)
}

fn grant(tenant: &str, body: &GrantBody) -> Result<Grant, ApiError> {
    let mut grant = Grant::new(body.privilege, resource(tenant, &body.resource)?);
    if let Some(pattern) = &body.branches {
        if !body.privilege.is_branch_scoped() {
            return Err(ApiError::bad_request(format!(
                "`{}` is not exercised at a branch: leave `branches` out",
                body.privilege
            )));
        }
        let pattern =
            BranchPattern::parse(pattern).map_err(|e| ApiError::bad_request(e.to_string()))?;
        grant = grant.at(pattern);
    }
    Ok(grant)
}

fn grants(tenant: &str, bodies: &[GrantBody]) -> Result<Vec<Grant>, ApiError> {
    bodies.iter().map(|b| grant(tenant, b)).collect()
}

fn grant_body(grant: &Grant) -> GrantBody {
    let body = match &grant.resource {
        Resource::Tenant { .. } => ResourceBody {
            kind: ResourceType::Tenant,
            catalog: None,
            namespace: None,
            name: None,
        },
        Resource::Catalog { catalog, .. } => ResourceBody {
            kind: ResourceType::Catalog,
            catalog: Some(catalog.clone()),
            namespace: None,
            name: None,
        },
        Resource::Namespace {
            catalog, namespace, ..
        } => ResourceBody {
            kind: ResourceType::Namespace,
            catalog: Some(catalog.clone()),
            namespace: Some(namespace.clone()),
            name: None,
        },
        Resource::Table {
            catalog,
            namespace,
            name,
            ..
        } => ResourceBody {
            kind: ResourceType::Table,
            catalog: Some(catalog.clone()),
            namespace: Some(namespace.clone()),
            name: Some(name.clone()),
        },
    };
    GrantBody {
        privilege: grant.privilege,
        resource: body,
        branches: grant.is_branch_scoped().then(|| grant.branches.to_string()),
    }
}

fn no_role(tenant: &str, role: &str) -> ApiError {
    not_found(
        "NoSuchRoleException",
        format!("role `{role}` does not exist in tenant `{tenant}`"),
    )
}

/// The role `name` of `tenant`, or 404.
async fn existing(state: &AppState, tenant: &str, name: &str) -> Result<StoredRole, ApiError> {
    state
        .security
        .authz
        .get_role(tenant, name)
        .await?
        .ok_or_else(|| no_role(tenant, name))
}

/// Refuses, before anything is looked up, a caller that may manage grants nowhere in its
/// tenant: such a caller learns nothing of the tenant's roles, not even whether one exists.
/// What it may grant exactly is the store's check.
async fn may_manage_some_grants(state: &AppState, caller: &Caller) -> Result<(), ApiError> {
    state
        .security
        .authorize(
            caller,
            Privilege::ManageGrants,
            Resource::tenant(caller.tenant.as_str()),
            None,
            true,
        )
        .await
}

/// Creates a role in the caller's tenant.
#[utoipa::path(post, path = "/api/v1/roles", tag = "roles", request_body = CreateRole,
    responses((status = 201, body = RoleView), (status = 400), (status = 403), (status = 409)))]
pub async fn create(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<CreateRole>,
) -> Result<(StatusCode, Json<RoleView>), ApiError> {
    let caller = caller()?;
    may_manage_some_grants(&state, &caller).await?;
    let mut role = Role::new(
        caller.tenant.as_str(),
        body.name.as_str(),
        grants(&caller.tenant, &body.grants)?,
    );
    role.disabled = body.disabled;
    let held = roles_of(&state, &caller).await?;
    let stored = state
        .security
        .authz
        .create_role(&caller.principal, &held, role)
        .await?;
    Ok((StatusCode::CREATED, Json(RoleView::of(&stored))))
}

/// Lists the roles of the caller's tenant by name.
#[utoipa::path(get, path = "/api/v1/roles", tag = "roles", params(PageParams),
    responses((status = 200, body = RoleList), (status = 403)))]
pub async fn list(
    State(state): State<AppState>,
    QueryParams(params): QueryParams<PageParams>,
) -> Result<Json<RoleList>, ApiError> {
    let caller = caller()?;
    let (after, limit) = params.resolve()?;
    let page = state
        .security
        .authz
        .list_roles(&caller.tenant, after.as_deref(), limit)
        .await?;
    Ok(Json(RoleList {
        roles: page.roles.iter().map(RoleView::of).collect(),
        next_page_token: next_token(page.next_after),
    }))
}

/// One role of the caller's tenant.
#[utoipa::path(get, path = "/api/v1/roles/{role}", tag = "roles",
    params(("role" = String, Path)),
    responses((status = 200, body = RoleView), (status = 403), (status = 404)))]
pub async fn get(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
) -> Result<Json<RoleView>, ApiError> {
    let caller = caller()?;
    Ok(Json(RoleView::of(
        &existing(&state, &caller.tenant, &name).await?,
    )))
}

/// Replaces a role's grants and state, if it is still at `version`.
#[utoipa::path(put, path = "/api/v1/roles/{role}", tag = "roles",
    params(("role" = String, Path)), request_body = ReplaceRole,
    responses((status = 200, body = RoleView), (status = 400), (status = 403), (status = 404),
        (status = 409)))]
pub async fn replace(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
    JsonBody(body): JsonBody<ReplaceRole>,
) -> Result<Json<RoleView>, ApiError> {
    let caller = caller()?;
    may_manage_some_grants(&state, &caller).await?;
    let mut role = Role::new(
        caller.tenant.as_str(),
        name.as_str(),
        grants(&caller.tenant, &body.grants)?,
    );
    role.disabled = body.disabled;
    let held = roles_of(&state, &caller).await?;
    let stored = state
        .security
        .authz
        .update_role(&caller.principal, &held, role, body.version)
        .await?;
    Ok(Json(RoleView::of(&stored)))
}

/// Deletes a role; its bindings go with it.
#[utoipa::path(delete, path = "/api/v1/roles/{role}", tag = "roles",
    params(("role" = String, Path), DeleteParams),
    responses((status = 204), (status = 403), (status = 404), (status = 409)))]
pub async fn delete(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
    QueryParams(params): QueryParams<DeleteParams>,
) -> Result<StatusCode, ApiError> {
    let caller = caller()?;
    may_manage_some_grants(&state, &caller).await?;
    let version = match params.version {
        Some(version) => version,
        None => existing(&state, &caller.tenant, &name).await?.version,
    };
    let held = roles_of(&state, &caller).await?;
    state
        .security
        .authz
        .delete_role(&caller.principal, &held, &caller.tenant, &name, version)
        .await?;
    // A role created again under this name must not apply to the old members.
    unbind_all(&state, &caller.tenant, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Lists the principals a role is bound to.
#[utoipa::path(get, path = "/api/v1/roles/{role}/members", tag = "roles",
    params(("role" = String, Path), PageParams),
    responses((status = 200, body = MemberList), (status = 403), (status = 404)))]
pub async fn members(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
    QueryParams(params): QueryParams<PageParams>,
) -> Result<Json<MemberList>, ApiError> {
    let caller = caller()?;
    existing(&state, &caller.tenant, &name).await?;
    let (after, limit) = params.resolve()?;
    let page = state
        .security
        .authz
        .principals_of(&caller.tenant, &name, after.as_deref(), limit)
        .await?;
    Ok(Json(MemberList {
        members: page.principals,
        next_page_token: next_token(page.next_after),
    }))
}

/// Refuses to bind a principal of the caller's tenant that does not exist. Principals of
/// other tenants are left to the binding itself, which refuses them without looking.
async fn check_principal(state: &AppState, tenant: &str, id: &str) -> Result<(), ApiError> {
    let Some(identity) = &state.security.identity else {
        return Ok(());
    };
    let Ok(parsed) = PrincipalId::parse(id) else {
        return Ok(());
    };
    let Scope::Tenant(own) = &parsed.scope else {
        return Ok(());
    };
    if own.as_str() != tenant {
        return Ok(());
    }
    let exists = match parsed.kind {
        PrincipalKind::User => identity.user(&parsed.scope, &parsed.name).await?.is_some(),
        PrincipalKind::Service => identity.service_user(own, &parsed.name).await?.is_some(),
    };
    if exists {
        Ok(())
    } else {
        Err(not_found(
            "NoSuchPrincipalException",
            format!("there is no principal `{id}` in tenant `{tenant}`"),
        ))
    }
}

/// Binds a role to a principal of the caller's tenant (`user%3Aacme%2Fana` in the path).
#[utoipa::path(put, path = "/api/v1/roles/{role}/members/{principal}", tag = "roles",
    params(("role" = String, Path), ("principal" = String, Path)),
    responses((status = 204), (status = 400), (status = 403), (status = 404)))]
pub async fn bind(
    State(state): State<AppState>,
    PathParams((name, principal)): PathParams<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let caller = caller()?;
    may_manage_some_grants(&state, &caller).await?;
    existing(&state, &caller.tenant, &name).await?;
    check_principal(&state, &caller.tenant, &principal).await?;
    let held = roles_of(&state, &caller).await?;
    state
        .security
        .authz
        .bind(&caller.principal, &held, &caller.tenant, &name, &principal)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a role from a principal.
#[utoipa::path(delete, path = "/api/v1/roles/{role}/members/{principal}", tag = "roles",
    params(("role" = String, Path), ("principal" = String, Path)),
    responses((status = 204), (status = 403), (status = 404)))]
pub async fn unbind(
    State(state): State<AppState>,
    PathParams((name, principal)): PathParams<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let caller = caller()?;
    may_manage_some_grants(&state, &caller).await?;
    // What is not bound is 404 before any other check, so that naming a principal of
    // another tenant reveals nothing (no such binding can exist).
    if !is_bound(&state, &caller.tenant, &name, &principal).await? {
        return Err(not_found(
            "NoSuchBindingException",
            format!("role `{name}` is not bound to `{principal}`"),
        ));
    }
    let held = roles_of(&state, &caller).await?;
    state
        .security
        .authz
        .unbind(&caller.principal, &held, &caller.tenant, &name, &principal)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Whether `role` of `tenant` is bound to `principal`.
async fn is_bound(
    state: &AppState,
    tenant: &str,
    role: &str,
    principal: &str,
) -> Result<bool, ApiError> {
    let mut after: Option<String> = None;
    loop {
        let page = state
            .security
            .authz
            .bindings_of(tenant, principal, after.as_deref(), super::super::MAX_PAGE)
            .await?;
        if page.roles.iter().any(|r| r == role) {
            return Ok(true);
        }
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(false),
        }
    }
}

/// Removes every binding of `role` in `tenant` (after the role is deleted).
pub(super) async fn unbind_all(state: &AppState, tenant: &str, role: &str) -> Result<(), ApiError> {
    let authz = &state.security.authz;
    let system = housekeeping();
    loop {
        let page = authz
            .principals_of(tenant, role, None, super::super::MAX_PAGE)
            .await?;
        for principal in &page.principals {
            match authz.unbind(&system, &[], tenant, role, principal).await {
                Ok(()) | Err(pangolin_catalog::authz::UnbindError::NotBound { .. }) => {}
                Err(error) => return Err(error.into()),
            }
        }
        if page.next_after.is_none() {
            return Ok(());
        }
    }
}

/// Removes every binding of `principal` in `tenant` (after the principal is deleted), so a
/// principal created again under that name starts with no roles.
pub(super) async fn unbind_principal(
    state: &AppState,
    tenant: &str,
    principal: &str,
) -> Result<(), ApiError> {
    let authz = &state.security.authz;
    let system = housekeeping();
    loop {
        let page = authz
            .bindings_of(tenant, principal, None, super::super::MAX_PAGE)
            .await?;
        for role in &page.roles {
            match authz.unbind(&system, &[], tenant, role, principal).await {
                Ok(()) | Err(pangolin_catalog::authz::UnbindError::NotBound { .. }) => {}
                Err(error) => return Err(error.into()),
            }
        }
        if page.next_after.is_none() {
            return Ok(());
        }
    }
}
