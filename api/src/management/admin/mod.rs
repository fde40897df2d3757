//! The administration API (`/api/v1`): tenants, warehouses, catalogs, users, service users and
//! their API keys, roles and their members, token revocation. One module per resource; what
//! each route needs is declared in [`crate::security::routes`], and everything a tenant-scoped
//! route touches is looked up in the caller's tenant only, so another tenant's records are
//! never found (404), never refused by name (403).

pub mod api_keys;
pub mod catalogs;
pub mod errors;
pub mod external;
pub mod roles;
pub mod service_users;
pub mod tenants;
pub mod tokens;
pub mod users;
pub mod warehouses;

use axum::http::StatusCode;
use pangolin_catalog::authz::{Principal, PrincipalKind, Role};
use pangolin_identity::{Identity, PrincipalName, TenantName};
use serde::Deserialize;
use utoipa::IntoParams;

use super::{decode_token, encode_token, page_size};
use crate::error::ApiError;
use crate::security::{Caller, unauthorized};
use crate::state::AppState;

/// Paging of admin listings: `?page-size=&page-token=`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PageParams {
    /// The previous page's `next-page-token`.
    pub page_token: Option<String>,
    /// At most this many items (1 to 1000; 100 when absent).
    pub page_size: Option<usize>,
}

impl PageParams {
    /// The name to continue after, and the page size.
    fn resolve(&self) -> Result<(Option<String>, usize), ApiError> {
        let after = self
            .page_token
            .as_deref()
            .filter(|t| !t.is_empty())
            .map(decode_token)
            .transpose()?;
        Ok((after, page_size(self.page_size)?))
    }
}

/// The page token that continues after `name`.
fn next_token(name: Option<impl AsRef<str>>) -> Option<String> {
    name.map(|n| encode_token(n.as_ref()))
}

/// A JSON body whose fields are all optional, so that no body at all means the defaults.
fn optional_body<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid request body: {e}")))
}

/// The caller of the request being served.
fn caller() -> Result<Caller, ApiError> {
    Caller::current().ok_or_else(|| unauthorized("not signed in"))
}

/// Users, service users and keys exist only on a server that authenticates its callers.
fn identity(state: &AppState) -> Result<&Identity, ApiError> {
    state.security.identity.as_ref().ok_or_else(|| {
        ApiError::bad_request(
            "this server runs without authentication: it has no users, service users or API keys",
        )
    })
}

/// The tenant the caller acts in, as identity names it.
fn acting_tenant(caller: &Caller) -> Result<TenantName, ApiError> {
    TenantName::new(caller.tenant.as_str()).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// A user or service user name from a path or body.
fn principal_name(name: &str) -> Result<PrincipalName, ApiError> {
    PrincipalName::new(name).map_err(|e| ApiError::bad_request(e.to_string()))
}

fn not_found(kind: &'static str, message: String) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, kind, message)
}

/// The roles bound to the caller, as the anti-escalation checks need them (as stored now).
async fn roles_of(state: &AppState, caller: &Caller) -> Result<Vec<Role>, ApiError> {
    state.security.stored_roles(caller).await
}

/// The principal in whose name the server tidies up after a deletion (the bindings of a
/// deleted user, the roles of a deleted tenant): root, since the deletion itself was already
/// authorized and the leftovers would otherwise outlive their owner.
fn housekeeping() -> Principal {
    Principal {
        id: "system".to_owned(),
        tenant: None,
        kind: PrincipalKind::Service,
        is_admin: true,
        groups: Vec::new(),
    }
}
