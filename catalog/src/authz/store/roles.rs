//! Creating, reading, listing, changing and deleting roles.

use pangolin_records::{ExpectedVersion, RecordError};

use super::{AuthzStore, AuthzStoreError, GrantRefusal, Role, RoleError, decode, encode, keys};
use crate::authz::escalation::may_manage_role;
use crate::authz::model::{Grant, Principal};

/// A role as stored, with the version to expect when changing or deleting it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRole {
    /// The role.
    pub role: Role,
    /// Its record's version: 1 when created, one more with every change.
    pub version: u64,
}

/// One page of a tenant's roles, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolePage {
    /// The roles, in name order.
    pub roles: Vec<StoredRole>,
    /// Set when more follow: list again with `after` set to it.
    pub next_after: Option<String>,
}

/// Why creating a role failed.
#[derive(Debug, thiserror::Error)]
pub enum CreateRoleError {
    /// The role is malformed or grants outside its tenant.
    #[error(transparent)]
    Invalid(#[from] RoleError),
    /// The actor may not give these grants.
    #[error(transparent)]
    Refused(#[from] GrantRefusal),
    /// A role of that name exists.
    #[error("role `{role}` already exists in tenant `{tenant}`")]
    AlreadyExists {
        /// The tenant.
        tenant: String,
        /// The role's name.
        role: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] AuthzStoreError),
}

/// Why changing a role failed.
#[derive(Debug, thiserror::Error)]
pub enum UpdateRoleError {
    /// The new role is malformed or grants outside its tenant.
    #[error(transparent)]
    Invalid(#[from] RoleError),
    /// The actor may not make this change.
    #[error(transparent)]
    Refused(#[from] GrantRefusal),
    /// There is no such role.
    #[error("role `{role}` does not exist in tenant `{tenant}`")]
    NotFound {
        /// The tenant.
        tenant: String,
        /// The role's name.
        role: String,
    },
    /// The role changed since the version the caller read.
    #[error(
        "role `{role}` of tenant `{tenant}` is at version {}, expected {expected}",
        actual.map_or_else(|| "none (deleted)".to_owned(), |v| v.to_string())
    )]
    Conflict {
        /// The tenant.
        tenant: String,
        /// The role's name.
        role: String,
        /// The version the caller expected.
        expected: u64,
        /// The version stored, `None` once deleted.
        actual: Option<u64>,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] AuthzStoreError),
}

/// Why deleting a role failed.
#[derive(Debug, thiserror::Error)]
pub enum DeleteRoleError {
    /// The actor may not remove these grants.
    #[error(transparent)]
    Refused(#[from] GrantRefusal),
    /// There is no such role.
    #[error("role `{role}` does not exist in tenant `{tenant}`")]
    NotFound {
        /// The tenant.
        tenant: String,
        /// The role's name.
        role: String,
    },
    /// The role changed since the version the caller read.
    #[error("role `{role}` of tenant `{tenant}` is at version {actual}, expected {expected}")]
    Conflict {
        /// The tenant.
        tenant: String,
        /// The role's name.
        role: String,
        /// The version the caller expected.
        expected: u64,
        /// The version stored.
        actual: u64,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] AuthzStoreError),
}

impl AuthzStore {
    /// Creates `role` if the actor may give every grant in it.
    pub async fn create_role(
        &self,
        actor: &Principal,
        actor_roles: &[Role],
        role: Role,
    ) -> Result<StoredRole, CreateRoleError> {
        role.validate()?;
        may_manage_role(actor, actor_roles, &role.tenant, &role.grants)?;
        let key = keys::role_key(&role.tenant, &role.name).map_err(AuthzStoreError::from)?;
        let value = encode(key.as_str(), &role)?;
        match self
            .records
            .put_record(&key, ExpectedVersion::Absent, value)
            .await
        {
            Ok(version) => Ok(StoredRole { role, version }),
            Err(RecordError::VersionMismatch { .. }) => Err(CreateRoleError::AlreadyExists {
                tenant: role.tenant,
                role: role.name,
            }),
            Err(RecordError::Backend(e)) => Err(AuthzStoreError::from(e).into()),
        }
    }

    /// The role `name` of `tenant`, if there is one.
    pub async fn get_role(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Option<StoredRole>, AuthzStoreError> {
        let key = keys::role_key(tenant, name)?;
        let Some(record) = self.records.get_record(&key).await? else {
            return Ok(None);
        };
        Ok(Some(StoredRole {
            role: decode(&record)?,
            version: record.version,
        }))
    }

    /// Up to `limit` roles of `tenant` in name order, after the role named `after`.
    pub async fn list_roles(
        &self,
        tenant: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<RolePage, AuthzStoreError> {
        let after = after.map(|name| keys::role_key(tenant, name)).transpose()?;
        let page = self
            .records
            .list_records(&keys::roles_prefix(tenant), after.as_ref(), limit)
            .await?;
        let roles = page
            .records
            .iter()
            .map(|record| {
                Ok(StoredRole {
                    role: decode(record)?,
                    version: record.version,
                })
            })
            .collect::<Result<Vec<StoredRole>, AuthzStoreError>>()?;
        let next_after = match page.next_after {
            Some(_) => roles.last().map(|r| r.role.name.clone()),
            None => None,
        };
        Ok(RolePage { roles, next_after })
    }

    /// Replaces the role named `role.name` at version `expected` with `role`.
    ///
    /// The actor must pass [`may_grant`](crate::authz::may_grant) for every grant added and
    /// every grant removed (taking away only what one could give), and for every grant when
    /// the role is enabled or disabled.
    pub async fn update_role(
        &self,
        actor: &Principal,
        actor_roles: &[Role],
        role: Role,
        expected: u64,
    ) -> Result<StoredRole, UpdateRoleError> {
        role.validate()?;
        let Some(current) = self.get_role(&role.tenant, &role.name).await? else {
            return Err(UpdateRoleError::NotFound {
                tenant: role.tenant,
                role: role.name,
            });
        };
        if current.version != expected {
            return Err(UpdateRoleError::Conflict {
                tenant: role.tenant,
                role: role.name,
                expected,
                actual: Some(current.version),
            });
        }
        may_manage_role(
            actor,
            actor_roles,
            &role.tenant,
            changed(&current.role, &role),
        )?;
        let key = keys::role_key(&role.tenant, &role.name).map_err(AuthzStoreError::from)?;
        let value = encode(key.as_str(), &role)?;
        match self
            .records
            .put_record(&key, ExpectedVersion::Is(expected), value)
            .await
        {
            Ok(version) => Ok(StoredRole { role, version }),
            Err(RecordError::VersionMismatch { actual, .. }) => Err(UpdateRoleError::Conflict {
                tenant: role.tenant,
                role: role.name,
                expected,
                actual,
            }),
            Err(RecordError::Backend(e)) => Err(AuthzStoreError::from(e).into()),
        }
    }

    /// Deletes the role at version `expected`, if the actor could give every grant in it.
    /// Its bindings stay and are ignored while no role of that name exists.
    pub async fn delete_role(
        &self,
        actor: &Principal,
        actor_roles: &[Role],
        tenant: &str,
        name: &str,
        expected: u64,
    ) -> Result<(), DeleteRoleError> {
        let not_found = || DeleteRoleError::NotFound {
            tenant: tenant.to_owned(),
            role: name.to_owned(),
        };
        let current = self.get_role(tenant, name).await?.ok_or_else(not_found)?;
        let conflict = |actual| DeleteRoleError::Conflict {
            tenant: tenant.to_owned(),
            role: name.to_owned(),
            expected,
            actual,
        };
        if current.version != expected {
            return Err(conflict(current.version));
        }
        may_manage_role(actor, actor_roles, tenant, &current.role.grants)?;
        let key = keys::role_key(tenant, name).map_err(AuthzStoreError::from)?;
        match self.records.delete_record(&key, expected).await {
            Ok(()) => Ok(()),
            Err(RecordError::VersionMismatch {
                actual: Some(actual),
                ..
            }) => Err(conflict(actual)),
            Err(RecordError::VersionMismatch { actual: None, .. }) => Err(not_found()),
            Err(RecordError::Backend(e)) => Err(AuthzStoreError::from(e).into()),
        }
    }
}

/// The grants an update must be allowed to give or take: those added and those removed, or
/// all of both sides when the role is enabled or disabled.
fn changed<'a>(old: &'a Role, new: &'a Role) -> Vec<&'a Grant> {
    if old.disabled != new.disabled {
        return old.grants.iter().chain(&new.grants).collect();
    }
    let added = new.grants.iter().filter(|g| !old.grants.contains(g));
    let removed = old.grants.iter().filter(|g| !new.grants.contains(g));
    added.chain(removed).collect()
}
