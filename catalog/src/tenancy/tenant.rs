//! Tenants: the top of the hierarchy. A tenant owns warehouses and catalogs.

use pangolin_records::ExpectedVersion;
use pangolin_store::Timestamp;

use super::Tenancy;
use super::name::{Name, NameError};
use super::records::{self, Page, PutError, RecordsError, Versioned};

/// A tenant as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tenant {
    pub name: Name,
    /// Free text for operators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Why [`Tenancy::create_tenant`] failed.
#[derive(Debug, thiserror::Error)]
pub enum CreateTenantError {
    #[error(transparent)]
    InvalidName(#[from] NameError),
    #[error("tenant `{0}` already exists")]
    Exists(Name),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// Why [`Tenancy::tenant`] failed.
#[derive(Debug, thiserror::Error)]
pub enum GetTenantError {
    #[error(transparent)]
    InvalidName(#[from] NameError),
    #[error("tenant `{0}` does not exist")]
    NotFound(String),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// A listing failed.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// The tenant or the `after` name breaks the naming rule.
    #[error(transparent)]
    InvalidName(#[from] NameError),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// Why [`Tenancy::update_tenant_description`] failed.
#[derive(Debug, thiserror::Error)]
pub enum UpdateTenantError {
    #[error(transparent)]
    InvalidName(#[from] NameError),
    #[error("tenant `{0}` does not exist")]
    NotFound(String),
    #[error("tenant `{name}` changed: it is at version {actual}, not {expected}; read it again")]
    Conflict {
        name: Name,
        expected: u64,
        actual: u64,
    },
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// Why [`Tenancy::delete_tenant`] failed.
#[derive(Debug, thiserror::Error)]
pub enum DeleteTenantError {
    #[error(transparent)]
    InvalidName(#[from] NameError),
    #[error("tenant `{0}` does not exist")]
    NotFound(String),
    #[error("tenant `{0}` still has catalogs: delete them first")]
    HasCatalogs(Name),
    #[error("tenant `{0}` still has warehouses: delete them first")]
    HasWarehouses(Name),
    /// A warehouse or catalog was added while the delete was checking: try again.
    #[error("tenant `{0}` changed while it was being deleted; try again")]
    Conflict(Name),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

impl Tenancy {
    /// Creates a tenant; fails if one of that name exists.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %name))]
    pub async fn create_tenant(
        &self,
        name: &str,
        description: Option<String>,
    ) -> Result<Versioned<Tenant>, CreateTenantError> {
        let name = Name::new("tenant", name)?;
        let now = Timestamp::now();
        let tenant = Tenant {
            name: name.clone(),
            description,
            created_at: now,
            updated_at: now,
        };
        let key = records::tenant_key(&name);
        match records::put(self.records(), &key, ExpectedVersion::Absent, &tenant).await {
            Ok(version) => Ok(Versioned {
                value: tenant,
                version,
            }),
            Err(PutError::Mismatch { .. }) => Err(CreateTenantError::Exists(name)),
            Err(PutError::Records(e)) => Err(e.into()),
        }
    }

    /// The tenant `name`.
    pub async fn tenant(&self, name: &str) -> Result<Versioned<Tenant>, GetTenantError> {
        let name = Name::new("tenant", name)?;
        records::get(self.records(), &records::tenant_key(&name))
            .await?
            .ok_or_else(|| GetTenantError::NotFound(name.to_string()))
    }

    /// Tenants in name order, after `after`, at most `limit` (capped at
    /// [`MAX_PAGE`](super::MAX_PAGE)).
    pub async fn list_tenants(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<Versioned<Tenant>>, ListError> {
        let after = after.map(|a| Name::new("tenant", a)).transpose()?;
        Ok(records::list(self.records(), records::TENANTS, after.as_ref(), limit).await?)
    }

    /// Sets the description of a tenant at `expected_version` (compare-and-swap). Creating a
    /// warehouse or catalog in the tenant also raises its version.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %name))]
    pub async fn update_tenant_description(
        &self,
        name: &str,
        expected_version: u64,
        description: Option<String>,
    ) -> Result<Versioned<Tenant>, UpdateTenantError> {
        let name = Name::new("tenant", name)?;
        let key = records::tenant_key(&name);
        let Some(current) = records::get::<Tenant>(self.records(), &key).await? else {
            return Err(UpdateTenantError::NotFound(name.to_string()));
        };
        let conflict = |actual| UpdateTenantError::Conflict {
            name: name.clone(),
            expected: expected_version,
            actual,
        };
        if current.version != expected_version {
            return Err(conflict(current.version));
        }
        let tenant = Tenant {
            description,
            updated_at: Timestamp::now(),
            ..current.value
        };
        let expected = ExpectedVersion::Is(expected_version);
        match records::put(self.records(), &key, expected, &tenant).await {
            Ok(version) => Ok(Versioned {
                value: tenant,
                version,
            }),
            Err(PutError::Mismatch { actual: Some(v) }) => Err(conflict(v)),
            Err(PutError::Mismatch { actual: None }) => {
                Err(UpdateTenantError::NotFound(name.to_string()))
            }
            Err(PutError::Records(e)) => Err(e.into()),
        }
    }

    /// Deletes a tenant that has no catalogs and no warehouses left.
    ///
    /// Creating a warehouse or catalog raises the tenant's version after writing its record,
    /// and this deletes the version it read before checking, so a tenant is never deleted
    /// with a child that its check missed.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %name))]
    pub async fn delete_tenant(&self, name: &str) -> Result<(), DeleteTenantError> {
        let name = Name::new("tenant", name)?;
        let key = records::tenant_key(&name);
        let Some(current) = self
            .records()
            .get_record(&key)
            .await
            .map_err(RecordsError::from)?
        else {
            return Err(DeleteTenantError::NotFound(name.to_string()));
        };
        if records::any_under(self.records(), &records::catalogs_of(&name)).await? {
            return Err(DeleteTenantError::HasCatalogs(name));
        }
        if records::any_under(self.records(), &records::warehouses_of(&name)).await? {
            return Err(DeleteTenantError::HasWarehouses(name));
        }
        match records::delete(self.records(), &key, current.version).await {
            Ok(()) => Ok(()),
            Err(PutError::Mismatch { actual: None }) => {
                Err(DeleteTenantError::NotFound(name.to_string()))
            }
            Err(PutError::Mismatch { .. }) => Err(DeleteTenantError::Conflict(name)),
            Err(PutError::Records(e)) => Err(e.into()),
        }
    }
}
