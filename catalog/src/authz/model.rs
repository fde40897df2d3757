//! Grants, roles and principals as authorization sees them.

use serde::{Deserialize, Serialize};

use super::pattern::BranchPattern;
use super::privilege::Privilege;
use super::resource::{Resource, ResourceError};

/// Longest role name, in bytes.
pub const MAX_ROLE_NAME_BYTES: usize = 128;

/// One privilege on one resource, at the branches the pattern matches (ignored for privileges
/// that are not branch scoped).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Grant {
    /// What the grant allows.
    pub privilege: Privilege,
    /// Where: this resource and everything beneath it.
    pub resource: Resource,
    /// At which branches; `*` when absent from a stored role.
    #[serde(default)]
    pub branches: BranchPattern,
}

impl Grant {
    /// A grant at every branch.
    pub fn new(privilege: Privilege, resource: Resource) -> Self {
        Self {
            privilege,
            resource,
            branches: BranchPattern::any(),
        }
    }

    /// The same grant restricted to `branches`.
    pub fn at(self, branches: BranchPattern) -> Self {
        Self { branches, ..self }
    }

    /// Whether the branch pattern matters for this grant.
    pub fn is_branch_scoped(&self) -> bool {
        self.privilege.is_branch_scoped()
    }
}

/// A named set of grants in one tenant. Every grant must be on a resource of the role's
/// tenant; a disabled role allows nothing but keeps its grants and bindings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Role {
    /// The tenant the role belongs to and may grant in.
    pub tenant: String,
    /// Unique within the tenant.
    pub name: String,
    /// What the role allows.
    pub grants: Vec<Grant>,
    /// A disabled role is ignored by every decision.
    #[serde(default)]
    pub disabled: bool,
}

/// Why a role was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleError {
    /// The role's name is not allowed.
    #[error(
        "role name `{0}` is not allowed: use 1 to {MAX_ROLE_NAME_BYTES} ASCII letters, digits, \
         `.`, `_` or `-`"
    )]
    BadName(String),
    /// The role's tenant name is not allowed.
    #[error("role `{role}` names an invalid tenant: {source}")]
    BadTenant {
        /// The role's name.
        role: String,
        /// Why the tenant name is not valid.
        source: ResourceError,
    },
    /// A grant names an invalid resource.
    #[error("role `{role}` has a grant on an invalid resource: {source}")]
    BadResource {
        /// The role's name.
        role: String,
        /// Why the resource is not valid.
        source: ResourceError,
    },
    /// A grant names a resource of another tenant.
    #[error("role `{role}` of tenant `{tenant}` has a grant on `{resource}`, outside its tenant")]
    OtherTenant {
        /// The role's name.
        role: String,
        /// The role's tenant.
        tenant: String,
        /// The resource outside it.
        resource: Box<Resource>,
    },
}

impl Role {
    /// An enabled role.
    pub fn new(tenant: impl Into<String>, name: impl Into<String>, grants: Vec<Grant>) -> Self {
        Self {
            tenant: tenant.into(),
            name: name.into(),
            grants,
            disabled: false,
        }
    }

    /// Checks the name, the tenant, and that every grant is on a valid resource of the tenant.
    pub fn validate(&self) -> Result<(), RoleError> {
        validate_role_name(&self.name)?;
        Resource::tenant(self.tenant.clone())
            .validate()
            .map_err(|source| RoleError::BadTenant {
                role: self.name.clone(),
                source,
            })?;
        for grant in &self.grants {
            grant
                .resource
                .validate()
                .map_err(|source| RoleError::BadResource {
                    role: self.name.clone(),
                    source,
                })?;
            if grant.resource.tenant_name() != self.tenant {
                return Err(RoleError::OtherTenant {
                    role: self.name.clone(),
                    tenant: self.tenant.clone(),
                    resource: Box::new(grant.resource.clone()),
                });
            }
        }
        Ok(())
    }

    /// The grants a decision may use: none for a disabled role, and never one on a resource
    /// outside the role's tenant (refused when stored, ignored here should one be stored
    /// anyway).
    pub fn effective_grants(&self) -> impl Iterator<Item = &Grant> {
        self.grants
            .iter()
            .filter(|g| !self.disabled && g.resource.tenant_name() == self.tenant)
    }
}

/// Role names: short, ASCII, and safe in record keys and URLs.
pub fn validate_role_name(name: &str) -> Result<(), RoleError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.len() > MAX_ROLE_NAME_BYTES || !name.chars().all(allowed) {
        return Err(RoleError::BadName(name.to_owned()));
    }
    Ok(())
}

/// Whether a principal is a person or a machine. Authorization treats both alike; the kind is
/// carried for the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrincipalKind {
    /// A person who logs in.
    User,
    /// A machine that authenticates with an API key or client credentials.
    Service,
}

/// The authenticated caller, as authorization sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The id bindings name: `user:acme/ana`, `service:acme/etl`.
    pub id: String,
    /// The principal's tenant; `None` is the root scope, above every tenant.
    pub tenant: Option<String>,
    /// Person or machine.
    pub kind: PrincipalKind,
    /// An admin may do everything in its scope: root (root scope and admin) everywhere, a
    /// tenant admin inside its tenant. Set on the user, never through a role.
    pub is_admin: bool,
    /// The ids of the groups the principal is in (`group:<tenant>/<provider>/<name>`, as an
    /// identity provider said): roles bound to a group apply to its members.
    pub groups: Vec<String>,
}

impl Principal {
    /// Root: the root scope's admin.
    pub fn is_root(&self) -> bool {
        self.tenant.is_none() && self.is_admin
    }

    /// Whether this is the admin of `tenant`.
    pub fn is_admin_of(&self, tenant: &str) -> bool {
        self.is_admin && self.tenant.as_deref() == Some(tenant)
    }
}

/// Why a principal id was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrincipalIdError {
    /// Not `<kind>:<tenant>/<name>` or `<kind>:<name>`.
    #[error(
        "principal id `{0}` is not `user:<tenant>/<name>`, `service:<tenant>/<name>`, \
         `oidc:<tenant>/<provider>/<subject>`, `group:<tenant>/<provider>/<group>` or, in the \
         root scope, `user:<name>`, `oidc:~/<provider>/<subject>` or `group:~/<provider>/<group>`"
    )]
    Malformed(String),
}

/// How the root scope is written in the ids of identity providers' principals.
const ROOT_SEGMENT: &str = "~";

/// The tenant a principal id names: `user:acme/ana` and `service:acme/etl` are in `acme`,
/// `user:admin` (no `/`) is in the root scope (`None`). A person of an identity provider
/// (`oidc:acme/okta/<subject>`) and a group of one (`group:acme/okta/<name>`) are in the
/// provider's tenant, or in the root scope for a root-scope provider (`oidc:~/corp/<subject>`).
pub fn principal_id_tenant(id: &str) -> Result<Option<&str>, PrincipalIdError> {
    let malformed = || PrincipalIdError::Malformed(id.to_owned());
    let (kind, rest) = id.split_once(':').ok_or_else(malformed)?;
    if rest.is_empty() || id.chars().any(char::is_control) {
        return Err(malformed());
    }
    if matches!(kind, "oidc" | "group") {
        let mut parts = rest.splitn(3, '/');
        return match (parts.next(), parts.next(), parts.next()) {
            (Some(tenant), Some(provider), Some(name))
                if !tenant.is_empty() && !provider.is_empty() && !name.is_empty() =>
            {
                Ok((tenant != ROOT_SEGMENT).then_some(tenant))
            }
            _ => Err(malformed()),
        };
    }
    if !matches!(kind, "user" | "service") {
        return Err(malformed());
    }
    match rest.split_once('/') {
        None => Ok(None),
        Some((tenant, name)) if !tenant.is_empty() && !name.is_empty() => Ok(Some(tenant)),
        Some(_) => Err(malformed()),
    }
}
