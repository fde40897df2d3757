//! Anti-escalation: nobody gives away more than it holds. Every operation that creates,
//! changes, removes or binds grants goes through [`may_grant`].

use super::decide::{Request, decide, decide_any, grants_in};
use super::model::{Grant, Principal, PrincipalIdError, Role, principal_id_tenant};
use super::privilege::Privilege;
use super::resource::Resource;

/// Why a grant, role or binding change was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantRefusal {
    /// A principal of the root scope that is not root can grant nothing.
    #[error("`{granter}` is in the root scope but is not an admin")]
    RootScopeNotAdmin {
        /// The granter's id.
        granter: String,
    },
    /// Only root acts in a tenant other than its own.
    #[error("`{granter}` cannot grant in tenant `{tenant}`, which is not its own")]
    OtherTenant {
        /// The granter's id.
        granter: String,
        /// The tenant it tried to act in.
        tenant: String,
    },
    /// The granter may not manage grants on the resource.
    #[error("`{granter}` may not manage grants on `{resource}`")]
    NoManageGrants {
        /// The granter's id.
        granter: String,
        /// Where it tried to grant.
        resource: Box<Resource>,
    },
    /// The granter does not itself hold what it tried to grant.
    #[error(
        "`{granter}` does not hold {} on `{}` at `{}` itself, so it cannot grant it",
        grant.privilege, grant.resource, grant.branches
    )]
    NotHeld {
        /// The granter's id.
        granter: String,
        /// The grant it tried to give.
        grant: Box<Grant>,
    },
    /// Roles bind only to principals of their own tenant.
    #[error("role `{role}` of tenant `{tenant}` cannot be bound to `{principal}`, outside it")]
    PrincipalOutsideTenant {
        /// The role's name.
        role: String,
        /// The role's tenant.
        tenant: String,
        /// The principal it was to be bound to.
        principal: String,
    },
    /// The principal id to bind is malformed.
    #[error(transparent)]
    BadPrincipal(#[from] PrincipalIdError),
}

/// Whether `granter`, bound to `granter_roles`, may give `grant` to someone.
///
/// Root may grant anything; a tenant admin anything inside its tenant. Anyone else needs
/// `ManageGrants` on the grant's resource (or a container of it) and must hold the granted
/// privilege itself, through one grant on the resource or a container of it whose branch
/// pattern covers the grant's. So whatever the grant allows, the granter was already allowed.
pub fn may_grant(
    granter: &Principal,
    granter_roles: &[Role],
    grant: &Grant,
) -> Result<(), GrantRefusal> {
    let Some(tenant) = acting_tenant(granter, grant.resource.tenant_name())? else {
        return Ok(());
    };
    if granter.is_admin {
        return Ok(());
    }
    let manage = Request::new(Privilege::ManageGrants, grant.resource.clone());
    if !decide(granter, granter_roles, &manage).is_allowed() {
        return Err(GrantRefusal::NoManageGrants {
            granter: granter.id.clone(),
            resource: Box::new(grant.resource.clone()),
        });
    }
    let held = grants_in(tenant, granter_roles).any(|own| {
        own.privilege == grant.privilege
            && own.resource.covers(&grant.resource)
            && (!grant.is_branch_scoped() || own.branches.covers(&grant.branches))
    });
    if held {
        Ok(())
    } else {
        Err(GrantRefusal::NotHeld {
            granter: granter.id.clone(),
            grant: Box::new(grant.clone()),
        })
    }
}

/// Whether `granter` may create or remove a role of `tenant` with `grants`, or change these
/// grants of one: it must act in its own tenant, manage grants somewhere in it (so that even a
/// role with no grants needs that), and pass [`may_grant`] for every grant.
pub fn may_manage_role<'a>(
    granter: &Principal,
    granter_roles: &[Role],
    tenant: &str,
    grants: impl IntoIterator<Item = &'a Grant>,
) -> Result<(), GrantRefusal> {
    if acting_tenant(granter, tenant)?.is_none() {
        return Ok(());
    }
    let anywhere = Request::new(Privilege::ManageGrants, Resource::tenant(tenant));
    if !decide_any(granter, granter_roles, &anywhere).is_allowed() {
        return Err(GrantRefusal::NoManageGrants {
            granter: granter.id.clone(),
            resource: Box::new(Resource::tenant(tenant)),
        });
    }
    grants
        .into_iter()
        .try_for_each(|grant| may_grant(granter, granter_roles, grant))
}

/// Whether `granter` may bind `role` to (or unbind it from) the principal `principal_id`:
/// the principal must be of the role's tenant (for root too: a role outside the principal's
/// tenant would never apply), and [`may_manage_role`] must allow every grant of the role.
pub fn may_bind(
    granter: &Principal,
    granter_roles: &[Role],
    role: &Role,
    principal_id: &str,
) -> Result<(), GrantRefusal> {
    check_principal_in_tenant(&role.tenant, &role.name, principal_id)?;
    may_manage_role(granter, granter_roles, &role.tenant, &role.grants)
}

/// Refuses a principal id that is malformed or not of `tenant`.
pub(crate) fn check_principal_in_tenant(
    tenant: &str,
    role: &str,
    principal_id: &str,
) -> Result<(), GrantRefusal> {
    if principal_id_tenant(principal_id)? == Some(tenant) {
        Ok(())
    } else {
        Err(GrantRefusal::PrincipalOutsideTenant {
            role: role.to_owned(),
            tenant: tenant.to_owned(),
            principal: principal_id.to_owned(),
        })
    }
}

/// The tenant a non-root granter acts in (`None` for root, who may act anywhere), refusing a
/// granter of the root scope that is not root and any act outside the granter's tenant.
fn acting_tenant<'p>(
    granter: &'p Principal,
    target_tenant: &str,
) -> Result<Option<&'p str>, GrantRefusal> {
    if granter.is_root() {
        return Ok(None);
    }
    let Some(tenant) = granter.tenant.as_deref() else {
        return Err(GrantRefusal::RootScopeNotAdmin {
            granter: granter.id.clone(),
        });
    };
    if tenant != target_tenant {
        return Err(GrantRefusal::OtherTenant {
            granter: granter.id.clone(),
            tenant: target_tenant.to_owned(),
        });
    }
    Ok(Some(tenant))
}
