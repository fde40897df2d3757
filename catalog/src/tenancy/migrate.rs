//! Bringing a deployment from before tenancy under it: the server had one implicit tenant,
//! one warehouse from its settings and one default catalog whose repository already exists.

use super::Tenancy;
use super::catalog::{CatalogKind, CreateCatalogError, NewCatalog};
use super::tenant::CreateTenantError;
use super::warehouse::{CreateWarehouseError, WarehouseSpec};
use crate::catalog::{Catalog, CreateError};

/// The default tenant, warehouse and catalog a server starts with.
#[derive(Debug, Clone)]
pub struct DefaultSetup {
    pub tenant: String,
    pub warehouse: String,
    /// Used only when the warehouse record does not exist yet.
    pub warehouse_spec: WarehouseSpec,
    pub catalog: String,
    /// Who creates the catalog's repository when it does not exist yet.
    pub principal: String,
}

/// What [`Tenancy::ensure_default`] had to create.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DefaultOutcome {
    pub created_tenant: bool,
    pub created_warehouse: bool,
    pub created_catalog: bool,
}

/// Why [`Tenancy::ensure_default`] failed.
#[derive(Debug, thiserror::Error)]
pub enum EnsureDefaultError {
    #[error("creating the default tenant: {0}")]
    Tenant(#[from] CreateTenantError),
    #[error("creating the default warehouse: {0}")]
    Warehouse(#[from] CreateWarehouseError),
    #[error("creating the default catalog: {0}")]
    Catalog(#[from] CreateCatalogError),
}

impl Tenancy {
    /// Makes sure the default tenant, warehouse and catalog have records, creating what is
    /// missing and leaving what exists as it is; safe to run on every start. An existing
    /// repository of the default catalog is adopted with its history; without one, an empty
    /// catalog is created.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %setup.tenant, catalog = %setup.catalog))]
    pub async fn ensure_default(
        &self,
        setup: DefaultSetup,
    ) -> Result<DefaultOutcome, EnsureDefaultError> {
        let mut outcome = DefaultOutcome::default();
        match self.create_tenant(&setup.tenant, None).await {
            Ok(_) => outcome.created_tenant = true,
            Err(CreateTenantError::Exists(_)) => {}
            Err(e) => return Err(e.into()),
        }
        match self
            .create_warehouse(&setup.tenant, &setup.warehouse, setup.warehouse_spec)
            .await
        {
            Ok(_) => outcome.created_warehouse = true,
            Err(CreateWarehouseError::Exists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        let new = NewCatalog {
            warehouse: setup.warehouse,
            kind: CatalogKind::Local,
            properties: Default::default(),
        };
        match self
            .create_catalog_with(&setup.tenant, &setup.catalog, new, &setup.principal, true)
            .await
        {
            Ok(_) => outcome.created_catalog = true,
            Err(CreateCatalogError::Exists { tenant, catalog }) => {
                // A create stopped between the record and the repository leaves a record
                // without a repository: finish it. Checked first, so a restart writes nothing.
                let repository = Catalog::open(
                    self.store.clone(),
                    self.cache.clone(),
                    tenant.as_str(),
                    catalog.as_str(),
                )
                .map_err(|source| CreateCatalogError::Repository {
                    catalog: catalog.clone(),
                    source: source.into(),
                })?;
                let exists = repository
                    .exists()
                    .await
                    .map_err(|e| CreateCatalogError::Records(e.into()))?;
                if !exists {
                    let created = Catalog::create(
                        self.store.clone(),
                        self.cache.clone(),
                        tenant.as_str(),
                        catalog.as_str(),
                        &setup.principal,
                    )
                    .await;
                    match created {
                        Ok(_) => outcome.created_catalog = true,
                        Err(CreateError::Exists(_)) => {}
                        Err(source) => {
                            return Err(CreateCatalogError::Repository { catalog, source }.into());
                        }
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
        Ok(outcome)
    }
}
