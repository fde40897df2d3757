//! Binding roles to principals, and the roles a decision uses.

use pangolin_records::{ExpectedVersion, RecordError, RecordKey};
use serde::{Deserialize, Serialize};

use super::{AuthzStore, AuthzStoreError, GrantRefusal, Role, decode, encode, keys};
use crate::authz::escalation::{check_principal_in_tenant, may_bind, may_manage_role};
use crate::authz::model::Principal;

/// How many binding records one scan for a role's principals reads at a time.
const SCAN_PAGE: usize = 256;

/// One page of the roles bound to a principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingPage {
    /// Role names, in order. A name may be of a role deleted since it was bound.
    pub roles: Vec<String>,
    /// Set when more follow: list again with `after` set to it.
    pub next_after: Option<String>,
}

/// One page of the principals bound to a role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrincipalPage {
    /// Principal ids, in the order of their binding records.
    pub principals: Vec<String>,
    /// Set when more follow: list again with `after` set to it.
    pub next_after: Option<String>,
}

/// Why binding a role failed.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// There is no such role.
    #[error("role `{role}` does not exist in tenant `{tenant}`")]
    RoleNotFound {
        /// The tenant.
        tenant: String,
        /// The role's name.
        role: String,
    },
    /// The actor may not bind it, or not to that principal.
    #[error(transparent)]
    Refused(#[from] GrantRefusal),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] AuthzStoreError),
}

/// Why unbinding a role failed.
#[derive(Debug, thiserror::Error)]
pub enum UnbindError {
    /// The role is not bound to the principal.
    #[error("role `{role}` of tenant `{tenant}` is not bound to `{principal}`")]
    NotBound {
        /// The tenant.
        tenant: String,
        /// The role's name.
        role: String,
        /// The principal's id.
        principal: String,
    },
    /// The actor may not unbind it.
    #[error(transparent)]
    Refused(#[from] GrantRefusal),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] AuthzStoreError),
}

/// A binding record's value. The ids are repeated here so that scans need not unescape keys.
#[derive(Debug, Serialize, Deserialize)]
struct Binding {
    principal: String,
    role: String,
}

impl AuthzStore {
    /// Binds the role `role` of `tenant` to `principal_id`; `false` when it was bound already.
    pub async fn bind(
        &self,
        actor: &Principal,
        actor_roles: &[Role],
        tenant: &str,
        role: &str,
        principal_id: &str,
    ) -> Result<bool, BindError> {
        let Some(stored) = self.get_role(tenant, role).await? else {
            return Err(BindError::RoleNotFound {
                tenant: tenant.to_owned(),
                role: role.to_owned(),
            });
        };
        may_bind(actor, actor_roles, &stored.role, principal_id)?;
        let key = keys::binding_key(tenant, principal_id, role).map_err(AuthzStoreError::from)?;
        let binding = Binding {
            principal: principal_id.to_owned(),
            role: role.to_owned(),
        };
        let value = encode(key.as_str(), &binding)?;
        match self
            .records
            .put_record(&key, ExpectedVersion::Absent, value)
            .await
        {
            Ok(_) => Ok(true),
            Err(RecordError::VersionMismatch { .. }) => Ok(false),
            Err(RecordError::Backend(e)) => Err(AuthzStoreError::from(e).into()),
        }
    }

    /// Removes the binding of `role` to `principal_id`. The actor must be allowed to bind the
    /// role; once the role is deleted, to manage grants somewhere in the tenant.
    pub async fn unbind(
        &self,
        actor: &Principal,
        actor_roles: &[Role],
        tenant: &str,
        role: &str,
        principal_id: &str,
    ) -> Result<(), UnbindError> {
        match self.get_role(tenant, role).await? {
            Some(stored) => may_bind(actor, actor_roles, &stored.role, principal_id)?,
            None => {
                check_principal_in_tenant(tenant, role, principal_id)?;
                may_manage_role(actor, actor_roles, tenant, [])?;
            }
        }
        let not_bound = || UnbindError::NotBound {
            tenant: tenant.to_owned(),
            role: role.to_owned(),
            principal: principal_id.to_owned(),
        };
        let key = keys::binding_key(tenant, principal_id, role).map_err(AuthzStoreError::from)?;
        let record = self
            .records
            .get_record(&key)
            .await
            .map_err(AuthzStoreError::from)?
            .ok_or_else(not_bound)?;
        match self.records.delete_record(&key, record.version).await {
            Ok(()) => Ok(()),
            // Bindings are never rewritten, so a mismatch means someone else removed it.
            Err(RecordError::VersionMismatch { .. }) => Err(not_bound()),
            Err(RecordError::Backend(e)) => Err(AuthzStoreError::from(e).into()),
        }
    }

    /// Up to `limit` names of roles bound to `principal_id` in `tenant`, after the role named
    /// `after`.
    pub async fn bindings_of(
        &self,
        tenant: &str,
        principal_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<BindingPage, AuthzStoreError> {
        let after = after
            .map(|role| keys::binding_key(tenant, principal_id, role))
            .transpose()?;
        let prefix = keys::principal_prefix(tenant, principal_id);
        let page = self
            .records
            .list_records(&prefix, after.as_ref(), limit)
            .await?;
        let roles = page
            .records
            .iter()
            .map(|record| decode::<Binding>(record).map(|b| b.role))
            .collect::<Result<Vec<String>, AuthzStoreError>>()?;
        let next_after = page.next_after.and_then(|_| roles.last().cloned());
        Ok(BindingPage { roles, next_after })
    }

    /// Up to `limit` ids of principals bound to the role `role` of `tenant`, after the
    /// principal `after` (a limit of 0 counts as 1). Scans the tenant's bindings.
    pub async fn principals_of(
        &self,
        tenant: &str,
        role: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<PrincipalPage, AuthzStoreError> {
        let limit = limit.max(1);
        let prefix = keys::bindings_prefix(tenant);
        let mut cursor: Option<RecordKey> = after
            .map(|principal| keys::binding_key(tenant, principal, role))
            .transpose()?;
        let mut principals = Vec::new();
        // One more than asked for, only to learn whether more follow.
        loop {
            let page = self
                .records
                .list_records(&prefix, cursor.as_ref(), SCAN_PAGE)
                .await?;
            for record in &page.records {
                let binding: Binding = decode(record)?;
                if binding.role == role {
                    if principals.len() == limit {
                        let next_after = principals.last().cloned();
                        return Ok(PrincipalPage {
                            principals,
                            next_after,
                        });
                    }
                    principals.push(binding.principal);
                }
            }
            match page.next_after {
                Some(next) => cursor = Some(next),
                None => {
                    return Ok(PrincipalPage {
                        principals,
                        next_after: None,
                    });
                }
            }
        }
    }

    /// The roles bound to `principal` in its tenant, or to one of its groups, as a decision
    /// uses them: roles deleted since they were bound are left out, each role once. None for a
    /// principal of the root scope.
    pub async fn roles_of(&self, principal: &Principal) -> Result<Vec<Role>, AuthzStoreError> {
        let Some(tenant) = principal.tenant.as_deref() else {
            return Ok(Vec::new());
        };
        let mut names = std::collections::BTreeSet::new();
        for id in std::iter::once(&principal.id).chain(&principal.groups) {
            let mut after: Option<String> = None;
            loop {
                let page = self
                    .bindings_of(tenant, id, after.as_deref(), SCAN_PAGE)
                    .await?;
                names.extend(page.roles);
                match page.next_after {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
        }
        let mut roles = Vec::new();
        for name in &names {
            if let Some(stored) = self.get_role(tenant, name).await? {
                roles.push(stored.role);
            }
        }
        Ok(roles)
    }
}
