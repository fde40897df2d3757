//! The decision function: a pure function of the principal, its roles and the request.

use super::model::{Grant, Principal, Role};
use super::privilege::Privilege;
use super::resource::Resource;

/// What a caller wants to do: a privilege on a resource, at a branch for the privileges that
/// are branch scoped (for a read at a tag or at a commit in a ref's history, the ref's name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The privilege the operation needs.
    pub privilege: Privilege,
    /// What it touches.
    pub resource: Resource,
    /// The branch (or ref) it works at. `None` for operations at no branch, which a
    /// branch-scoped privilege allows only through a grant on every branch (`*`).
    pub branch: Option<String>,
}

impl Request {
    /// A request at no branch.
    pub fn new(privilege: Privilege, resource: Resource) -> Self {
        Self {
            privilege,
            resource,
            branch: None,
        }
    }

    /// The same request at `branch`.
    pub fn at(self, branch: impl Into<String>) -> Self {
        Self {
            branch: Some(branch.into()),
            ..self
        }
    }
}

/// The outcome of a decision. The reason of a denial is for the log and the audit record,
/// not for the client, which learns only that it was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The request may proceed.
    Allow,
    /// The request is refused.
    Deny(DenyReason),
}

impl Decision {
    /// Whether the request may proceed.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Self::Allow)
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DenyReason {
    /// A principal of the root scope that is not root: it belongs to no tenant, so no grant
    /// can apply to it.
    #[error("`{principal}` is in the root scope but is not an admin")]
    RootScopeNotAdmin {
        /// The principal's id.
        principal: String,
    },
    /// The resource is in another tenant than the principal's.
    #[error(
        "`{principal}` of tenant `{principal_tenant}` asked for `{resource}` of another tenant"
    )]
    OtherTenant {
        /// The principal's id.
        principal: String,
        /// The principal's tenant.
        principal_tenant: String,
        /// What it asked for.
        resource: Resource,
    },
    /// No grant of an enabled role bound to the principal covers the request.
    #[error(
        "no role of `{principal}` grants {privilege} on `{resource}`{}",
        branch.as_ref().map(|b| format!(" at `{b}`")).unwrap_or_default()
    )]
    NoGrant {
        /// The principal's id.
        principal: String,
        /// The privilege asked for.
        privilege: Privilege,
        /// On what.
        resource: Resource,
        /// At which branch.
        branch: Option<String>,
    },
}

/// Whether `principal`, bound to `roles`, may do `request`. Deny by default.
///
/// Root may do everything; a tenant admin everything inside its tenant; anyone else what a
/// grant of one of its enabled roles covers, and never anything outside its own tenant, nor
/// through a role or grant of another tenant.
pub fn decide(principal: &Principal, roles: &[Role], request: &Request) -> Decision {
    decide_with(principal, roles, request, |grant| {
        grant.resource.covers(&request.resource)
    })
}

/// Whether `principal` may do `request.privilege` on the resource of the request or on
/// anything beneath it: for listings, to show a namespace when it or something under it is
/// readable, and to hide it otherwise.
pub fn decide_any(principal: &Principal, roles: &[Role], request: &Request) -> Decision {
    decide_with(principal, roles, request, |grant| {
        grant.resource.covers(&request.resource) || request.resource.covers(&grant.resource)
    })
}

/// The items whose resource `decide_any` allows for `privilege` at `branch`: what a listing
/// may show.
pub fn filter_visible<T>(
    principal: &Principal,
    roles: &[Role],
    privilege: Privilege,
    branch: Option<&str>,
    items: impl IntoIterator<Item = T>,
    resource_of: impl Fn(&T) -> Resource,
) -> Vec<T> {
    items
        .into_iter()
        .filter(|item| {
            let request = Request {
                privilege,
                resource: resource_of(item),
                branch: branch.map(str::to_owned),
            };
            decide_any(principal, roles, &request).is_allowed()
        })
        .collect()
}

/// The grants `decide` may use for a principal of `tenant`: those of its enabled roles of the
/// same tenant, on resources of that tenant.
pub(crate) fn grants_in<'a>(tenant: &'a str, roles: &'a [Role]) -> impl Iterator<Item = &'a Grant> {
    roles
        .iter()
        .filter(move |role| role.tenant == tenant)
        .flat_map(Role::effective_grants)
}

fn decide_with(
    principal: &Principal,
    roles: &[Role],
    request: &Request,
    resource_matches: impl Fn(&Grant) -> bool,
) -> Decision {
    if principal.is_root() {
        return Decision::Allow;
    }
    let Some(tenant) = principal.tenant.as_deref() else {
        return Decision::Deny(DenyReason::RootScopeNotAdmin {
            principal: principal.id.clone(),
        });
    };
    if request.resource.tenant_name() != tenant {
        return Decision::Deny(DenyReason::OtherTenant {
            principal: principal.id.clone(),
            principal_tenant: tenant.to_owned(),
            resource: request.resource.clone(),
        });
    }
    if principal.is_admin {
        return Decision::Allow;
    }
    let allowed = grants_in(tenant, roles).any(|grant| {
        grant.privilege == request.privilege
            && at_branch(grant, request.branch.as_deref())
            && resource_matches(grant)
    });
    if allowed {
        Decision::Allow
    } else {
        Decision::Deny(DenyReason::NoGrant {
            principal: principal.id.clone(),
            privilege: request.privilege,
            resource: request.resource.clone(),
            branch: request.branch.clone(),
        })
    }
}

/// Whether the grant applies at `branch`: always for privileges that are not branch scoped;
/// for the others, a request at no branch needs a grant on every branch.
fn at_branch(grant: &Grant, branch: Option<&str>) -> bool {
    if !grant.is_branch_scoped() {
        return true;
    }
    match branch {
        Some(branch) => grant.branches.matches(branch),
        None => grant.branches.is_any(),
    }
}
