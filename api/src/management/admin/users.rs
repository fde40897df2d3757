//! The users (people) of the caller's tenant, and a signed-in user's own password.
//!
//! `ManageUsers` lets a principal create, disable, reset and delete ordinary users. Being an
//! administrator is not a grant: only the tenant's administrators and root may create an
//! administrator or touch one (reset its password, disable or delete it), so holding
//! `ManageUsers` never leads to holding the tenant.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pangolin_catalog::rfc3339;
use pangolin_identity::{Password, PrincipalId, PrincipalKind, Scope, User};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{PageParams, acting_tenant, caller, identity, next_token, not_found, principal_name};
use crate::error::ApiError;
use crate::extract::{PathParams, QueryParams};
use crate::json::JsonBody;
use crate::security::{Caller, audit, forbidden};
use crate::state::AppState;

/// `POST /api/v1/users`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUser {
    /// 1 to 63 letters, digits, `-` and `_`.
    pub username: String,
    /// At least 12 characters, at most 72 bytes.
    pub password: String,
    /// A tenant administrator; only administrators and root may create one.
    #[serde(default)]
    pub admin: bool,
}

impl std::fmt::Debug for CreateUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateUser")
            .field("username", &self.username)
            .field("admin", &self.admin)
            .finish_non_exhaustive()
    }
}

/// `PUT /api/v1/users/{user}/password`: an administrator's reset.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetPassword {
    pub password: String,
}

impl std::fmt::Debug for ResetPassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResetPassword")
    }
}

/// `POST /api/v1/me/password`: the caller's own change, with its current password.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeOwnPassword {
    pub current: String,
    pub new: String,
}

impl std::fmt::Debug for ChangeOwnPassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChangeOwnPassword")
    }
}

/// `PUT /api/v1/users/{user}/disabled`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetDisabled {
    pub disabled: bool,
}

/// A user: never its password or hash.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct UserView {
    /// The principal id roles are bound to: `user:<tenant>/<name>`.
    pub id: String,
    pub username: String,
    pub admin: bool,
    pub disabled: bool,
    pub created_at: String,
}

impl UserView {
    fn of(user: &User) -> Self {
        Self {
            id: user.id().to_string(),
            username: user.name.to_string(),
            admin: user.is_admin,
            disabled: user.disabled,
            created_at: rfc3339(user.created),
        }
    }
}

/// A page of users.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct UserList {
    pub users: Vec<UserView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

fn may_handle_admins(caller: &Caller) -> bool {
    caller.unrestricted || caller.is_root() || caller.principal.is_admin_of(&caller.tenant)
}

/// Refuses (and audits) a caller that is not an administrator acting on administrators.
async fn require_admin(state: &AppState, caller: &Caller, what: &str) -> Result<(), ApiError> {
    if may_handle_admins(caller) {
        return Ok(());
    }
    audit::denied(
        &state.security,
        caller,
        "ManageUsers",
        &caller.tenant,
        &format!("not an administrator: {what}"),
    )
    .await;
    Err(forbidden(format!(
        "{} may not {what}: only the tenant's administrators and root may",
        caller.name()
    )))
}

fn scope_of(caller: &Caller) -> Result<Scope, ApiError> {
    acting_tenant(caller).map(Scope::Tenant)
}

/// The user `name` of the caller's tenant, or 404.
async fn existing(state: &AppState, scope: &Scope, name: &str) -> Result<User, ApiError> {
    let identity = identity(state)?;
    let name = principal_name(name)?;
    identity.user(scope, &name).await?.ok_or_else(|| {
        not_found(
            "NoSuchUserException",
            format!("there is no user `{name}` in tenant `{scope}`"),
        )
    })
}

/// Creates a user in the caller's tenant.
#[utoipa::path(post, path = "/api/v1/users", tag = "users", request_body = CreateUser,
    responses((status = 201, body = UserView), (status = 400), (status = 403), (status = 409)))]
pub async fn create(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<CreateUser>,
) -> Result<(StatusCode, Json<UserView>), ApiError> {
    let caller = caller()?;
    let identity = identity(&state)?;
    if body.admin {
        require_admin(&state, &caller, "create an administrator").await?;
    }
    let scope = scope_of(&caller)?;
    let name = principal_name(&body.username)?;
    let password = Password::new(body.password);
    let admin = body.admin;
    let user = identity
        .create_user(&scope, &name, &password, admin)
        .await?;
    Ok((StatusCode::CREATED, Json(UserView::of(&user))))
}

/// Lists the users of the caller's tenant by name.
#[utoipa::path(get, path = "/api/v1/users", tag = "users", params(PageParams),
    responses((status = 200, body = UserList), (status = 403)))]
pub async fn list(
    State(state): State<AppState>,
    QueryParams(params): QueryParams<PageParams>,
) -> Result<Json<UserList>, ApiError> {
    let caller = caller()?;
    let identity = identity(&state)?;
    let (after, limit) = params.resolve()?;
    let after = after
        .map(|a| principal_name(&a))
        .transpose()
        .map_err(|_| ApiError::bad_request("invalid page token"))?;
    let page = identity
        .list_users(&scope_of(&caller)?, after.as_ref(), limit)
        .await?;
    Ok(Json(UserList {
        users: page.users.iter().map(UserView::of).collect(),
        next_page_token: next_token(page.next_after.map(|n| n.to_string())),
    }))
}

/// One user of the caller's tenant.
#[utoipa::path(get, path = "/api/v1/users/{user}", tag = "users",
    params(("user" = String, Path)),
    responses((status = 200, body = UserView), (status = 403), (status = 404)))]
pub async fn get(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
) -> Result<Json<UserView>, ApiError> {
    let caller = caller()?;
    let user = existing(&state, &scope_of(&caller)?, &name).await?;
    Ok(Json(UserView::of(&user)))
}

/// Deletes a user; its tokens stop working and its role bindings go with it.
#[utoipa::path(delete, path = "/api/v1/users/{user}", tag = "users",
    params(("user" = String, Path)),
    responses((status = 204), (status = 403), (status = 404)))]
pub async fn delete(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
) -> Result<StatusCode, ApiError> {
    let caller = caller()?;
    let scope = scope_of(&caller)?;
    let user = existing(&state, &scope, &name).await?;
    if user.is_admin {
        require_admin(&state, &caller, "delete an administrator").await?;
    }
    identity(&state)?.delete_user(&scope, &user.name).await?;
    super::roles::unbind_principal(&state, &caller.tenant, &user.id().to_string()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sets a user's password without the old one; the user's tokens stop working.
#[utoipa::path(put, path = "/api/v1/users/{user}/password", tag = "users",
    params(("user" = String, Path)), request_body = ResetPassword,
    responses((status = 204), (status = 400), (status = 403), (status = 404)))]
pub async fn reset_password(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
    JsonBody(body): JsonBody<ResetPassword>,
) -> Result<StatusCode, ApiError> {
    let caller = caller()?;
    let scope = scope_of(&caller)?;
    let user = existing(&state, &scope, &name).await?;
    if user.is_admin {
        require_admin(&state, &caller, "reset an administrator's password").await?;
    }
    let password = Password::new(body.password);
    identity(&state)?
        .reset_password(&scope, &user.name, &password)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Disables or enables a user. A disabled user cannot sign in and its tokens are refused.
#[utoipa::path(put, path = "/api/v1/users/{user}/disabled", tag = "users",
    params(("user" = String, Path)), request_body = SetDisabled,
    responses((status = 200, body = UserView), (status = 400), (status = 403), (status = 404)))]
pub async fn set_disabled(
    State(state): State<AppState>,
    PathParams(name): PathParams<String>,
    JsonBody(body): JsonBody<SetDisabled>,
) -> Result<Json<UserView>, ApiError> {
    let caller = caller()?;
    let scope = scope_of(&caller)?;
    let user = existing(&state, &scope, &name).await?;
    if user.is_admin {
        require_admin(&state, &caller, "disable or enable an administrator").await?;
    }
    let user = identity(&state)?
        .set_user_disabled(&scope, &user.name, body.disabled)
        .await?;
    Ok(Json(UserView::of(&user)))
}

/// Changes the signed-in user's own password; its tokens (this one too) stop working.
#[utoipa::path(post, path = "/api/v1/me/password", tag = "users",
    request_body = ChangeOwnPassword,
    responses((status = 204), (status = 400), (status = 403)))]
pub async fn change_own_password(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<ChangeOwnPassword>,
) -> Result<StatusCode, ApiError> {
    let caller = caller()?;
    let identity = identity(&state)?;
    let id = PrincipalId::parse(&caller.principal.id)
        .ok()
        .filter(|id| id.kind == PrincipalKind::User)
        .ok_or_else(|| {
            ApiError::bad_request("only users have passwords; service users use API keys")
        })?;
    let (current, new) = (Password::new(body.current), Password::new(body.new));
    identity
        .change_password(&id.scope, &id.name, &current, &new)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
