//! Catalogs: a tenant's repositories, each bound to one of the tenant's warehouses.

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_records::ExpectedVersion;
use pangolin_refs::{Expected, RefQuery, RefUpdate, Target, TransactError, Transaction};
use pangolin_store::odb::ReadError;
use pangolin_store::{BackendError, Timestamp, tree};

use super::Tenancy;
use super::name::{Name, NameError};
use super::records::{self, Page, PutError, RecordsError, Versioned};
use super::tenant::ListError;
use super::warehouse::{RuntimeError, WarehouseRecord};
use crate::catalog::{Catalog, CreateError};
use crate::merge_requests::BranchProtection;
use crate::retention::RetentionPolicy;

/// What serves a catalog.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum CatalogKind {
    /// A repository of this server.
    Local,
    /// Another Iceberg REST catalog this server would front. Modelled; creating one is
    /// refused until federation exists.
    Federated {
        uri: String,
        #[serde(default)]
        properties: BTreeMap<String, String>,
    },
}

/// A catalog as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CatalogRecord {
    pub tenant: Name,
    pub name: Name,
    /// A warehouse of the same tenant.
    pub warehouse: Name,
    pub kind: CatalogKind,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    pub created_at: Timestamp,
    /// How long its history stays readable; for ever when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<RetentionPolicy>,
    /// Which branches change only through merge requests; none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protection: Option<BranchProtection>,
}

/// What a new catalog is made of.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct NewCatalog {
    /// The name of a warehouse of the same tenant.
    pub warehouse: String,
    pub kind: CatalogKind,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
}

/// Why [`Tenancy::create_catalog`] failed.
#[derive(Debug, thiserror::Error)]
pub enum CreateCatalogError {
    #[error(transparent)]
    InvalidName(#[from] NameError),
    #[error("{0} catalogs are not supported yet")]
    Unsupported(&'static str),
    #[error("tenant `{0}` does not exist")]
    TenantNotFound(Name),
    /// Also when the warehouse belongs to another tenant: this tenant has none of that name.
    #[error("warehouse `{warehouse}` does not exist in tenant `{tenant}`")]
    WarehouseNotFound { tenant: Name, warehouse: Name },
    #[error("catalog `{catalog}` cannot use its warehouse: {source}")]
    Warehouse {
        catalog: Name,
        #[source]
        source: RuntimeError,
    },
    #[error("catalog `{catalog}` already exists in tenant `{tenant}`")]
    Exists { tenant: Name, catalog: Name },
    /// The repository is there without a record: a deployment from before tenancy, which
    /// [`Tenancy::ensure_default`] adopts.
    #[error(
        "catalog `{catalog}` of tenant `{tenant}` has a repository but no record; adopt it \
         rather than creating it"
    )]
    RepositoryExists { tenant: Name, catalog: Name },
    #[error("creating the repository of catalog `{catalog}`: {source}")]
    Repository {
        catalog: Name,
        #[source]
        source: CreateError,
    },
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// Why [`Tenancy::resolve`] failed.
#[derive(Debug, thiserror::Error)]
pub enum GetCatalogError {
    #[error(transparent)]
    InvalidName(#[from] NameError),
    /// Also for a catalog of another tenant: nothing says that it exists elsewhere.
    #[error("catalog `{catalog}` does not exist in tenant `{tenant}`")]
    NotFound { tenant: String, catalog: String },
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// Why [`Tenancy::set_catalog_retention`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SetRetentionError {
    #[error(transparent)]
    Get(#[from] GetCatalogError),
    #[error("invalid retention policy: {0}")]
    Invalid(String),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// Why [`Tenancy::set_catalog_protection`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SetProtectionError {
    #[error(transparent)]
    Get(#[from] GetCatalogError),
    #[error("invalid branch protection: {0}")]
    Invalid(String),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// Why a change of a catalog's record failed.
#[derive(Debug, thiserror::Error)]
enum ChangeCatalogError {
    #[error(transparent)]
    Get(#[from] GetCatalogError),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

impl From<ChangeCatalogError> for SetRetentionError {
    fn from(error: ChangeCatalogError) -> Self {
        match error {
            ChangeCatalogError::Get(e) => Self::Get(e),
            ChangeCatalogError::Records(e) => Self::Records(e),
        }
    }
}

impl From<ChangeCatalogError> for SetProtectionError {
    fn from(error: ChangeCatalogError) -> Self {
        match error {
            ChangeCatalogError::Get(e) => Self::Get(e),
            ChangeCatalogError::Records(e) => Self::Records(e),
        }
    }
}

/// Why [`Tenancy::open_catalog`] failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenCatalogError {
    #[error(transparent)]
    Get(#[from] GetCatalogError),
    #[error("catalog `{catalog}` is bound to warehouse `{warehouse}`, which does not exist")]
    WarehouseMissing { catalog: Name, warehouse: Name },
    #[error(transparent)]
    Warehouse(#[from] RuntimeError),
    #[error(transparent)]
    Open(#[from] crate::catalog::OpenError),
}

/// Why [`Tenancy::delete_catalog`] failed.
#[derive(Debug, thiserror::Error)]
pub enum DeleteCatalogError {
    #[error(transparent)]
    InvalidName(#[from] NameError),
    #[error("catalog `{catalog}` does not exist in tenant `{tenant}`")]
    NotFound { tenant: String, catalog: String },
    #[error("catalog `{0}` is not empty: drop its namespaces, tables and views on `main` first")]
    NotEmpty(Name),
    #[error("catalog `{catalog}` still has {reference}: delete its other branches and tags first")]
    HasOtherRefs { catalog: Name, reference: String },
    #[error("catalog `{0}` changed while it was being deleted; try again")]
    Conflict(Name),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("deleting the branches of catalog `{catalog}`: {source}")]
    Refs {
        catalog: Name,
        #[source]
        source: TransactError,
    },
    #[error(transparent)]
    Records(#[from] RecordsError),
}

impl Tenancy {
    /// Creates catalog `name` in `tenant`: its record, bound to a warehouse of the same
    /// tenant, then its repository (an empty first commit on `main`, by `principal`).
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, catalog = %name))]
    pub async fn create_catalog(
        &self,
        tenant: &str,
        name: &str,
        new: NewCatalog,
        principal: &str,
    ) -> Result<Versioned<CatalogRecord>, CreateCatalogError> {
        self.create_catalog_with(tenant, name, new, principal, false)
            .await
    }

    /// As [`create_catalog`](Self::create_catalog); with `adopt`, a repository that is
    /// already there (a deployment from before tenancy) is taken as the catalog's.
    pub(super) async fn create_catalog_with(
        &self,
        tenant: &str,
        name: &str,
        new: NewCatalog,
        principal: &str,
        adopt: bool,
    ) -> Result<Versioned<CatalogRecord>, CreateCatalogError> {
        let tenant = Name::new("tenant", tenant)?;
        let name = Name::new("catalog", name)?;
        let warehouse_name = Name::new("warehouse", &new.warehouse)?;
        if let CatalogKind::Federated { .. } = new.kind {
            return Err(CreateCatalogError::Unsupported("federated"));
        }
        let tenant_key = records::tenant_key(&tenant);
        if self
            .records()
            .get_record(&tenant_key)
            .await
            .map_err(RecordsError::from)?
            .is_none()
        {
            return Err(CreateCatalogError::TenantNotFound(tenant));
        }
        let warehouse_key = records::warehouse_key(&tenant, &warehouse_name);
        let warehouse_missing = || CreateCatalogError::WarehouseNotFound {
            tenant: tenant.clone(),
            warehouse: warehouse_name.clone(),
        };
        let Some(warehouse) =
            records::get::<WarehouseRecord>(self.records(), &warehouse_key).await?
        else {
            return Err(warehouse_missing());
        };
        // A catalog whose files could not be reached would be a false success.
        warehouse
            .value
            .to_runtime(&self.key, &self.metadata)
            .map_err(|source| CreateCatalogError::Warehouse {
                catalog: name.clone(),
                source,
            })?;

        let key = records::catalog_key(&tenant, &name);
        let record = CatalogRecord {
            tenant: tenant.clone(),
            name: name.clone(),
            warehouse: warehouse_name.clone(),
            kind: new.kind,
            properties: new.properties,
            created_at: Timestamp::now(),
            retention: None,
            protection: None,
        };
        let version =
            match records::put(self.records(), &key, ExpectedVersion::Absent, &record).await {
                Ok(version) => version,
                Err(PutError::Mismatch { .. }) => {
                    return Err(CreateCatalogError::Exists {
                        tenant,
                        catalog: name,
                    });
                }
                Err(PutError::Records(e)) => return Err(e.into()),
            };
        let undo = || records::undo(self.records(), &key, version);
        if !records::touch(self.records(), &tenant_key).await? {
            undo().await;
            return Err(CreateCatalogError::TenantNotFound(tenant));
        }
        if !records::touch(self.records(), &warehouse_key).await? {
            undo().await;
            return Err(warehouse_missing());
        }
        let created = Catalog::create(
            self.store.clone(),
            self.cache.clone(),
            tenant.as_str(),
            name.as_str(),
            principal,
        )
        .await;
        match created {
            Ok(_) => Ok(Versioned {
                value: record,
                version,
            }),
            Err(CreateError::Exists(_)) if adopt => Ok(Versioned {
                value: record,
                version,
            }),
            Err(CreateError::Exists(_)) => {
                undo().await;
                Err(CreateCatalogError::RepositoryExists {
                    tenant,
                    catalog: name,
                })
            }
            Err(source) => {
                undo().await;
                Err(CreateCatalogError::Repository {
                    catalog: name,
                    source,
                })
            }
        }
    }

    /// The catalog `name` of `tenant`, or `NotFound`: a catalog of another tenant is never
    /// found this way.
    pub async fn resolve(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Versioned<CatalogRecord>, GetCatalogError> {
        let tenant = Name::new("tenant", tenant)?;
        let name = Name::new("catalog", name)?;
        records::get(self.records(), &records::catalog_key(&tenant, &name))
            .await?
            .ok_or_else(|| GetCatalogError::NotFound {
                tenant: tenant.to_string(),
                catalog: name.to_string(),
            })
    }

    /// Sets (or, with `None`, removes) the retention policy of catalog `name` of `tenant`;
    /// returns the record as written.
    #[tracing::instrument(level = "debug", skip(self, policy))]
    pub async fn set_catalog_retention(
        &self,
        tenant: &str,
        name: &str,
        policy: Option<RetentionPolicy>,
    ) -> Result<CatalogRecord, SetRetentionError> {
        if let Some(policy) = &policy {
            policy.validate().map_err(SetRetentionError::Invalid)?;
        }
        Ok(self
            .change_catalog(tenant, name, |record| record.retention = policy.clone())
            .await?)
    }

    /// Sets (or, with `None`, removes) which branches of catalog `name` of `tenant` change
    /// only through merge requests; returns the record as written.
    #[tracing::instrument(level = "debug", skip(self, protection))]
    pub async fn set_catalog_protection(
        &self,
        tenant: &str,
        name: &str,
        protection: Option<BranchProtection>,
    ) -> Result<CatalogRecord, SetProtectionError> {
        if let Some(protection) = &protection {
            protection.validate().map_err(SetProtectionError::Invalid)?;
        }
        Ok(self
            .change_catalog(tenant, name, |record| {
                record.protection = protection.clone()
            })
            .await?)
    }

    /// Changes a catalog's record by `change` on its latest version.
    async fn change_catalog(
        &self,
        tenant: &str,
        name: &str,
        change: impl Fn(&mut CatalogRecord),
    ) -> Result<CatalogRecord, ChangeCatalogError> {
        let mut key = None;
        for _ in 0..records::CAS_ATTEMPTS {
            let current = self.resolve(tenant, name).await?;
            let at = key.get_or_insert_with(|| {
                records::catalog_key(&current.value.tenant, &current.value.name)
            });
            let mut record = current.value;
            change(&mut record);
            match records::put(
                self.records(),
                at,
                ExpectedVersion::Is(current.version),
                &record,
            )
            .await
            {
                Ok(_) => return Ok(record),
                Err(PutError::Mismatch { .. }) => continue,
                Err(PutError::Records(e)) => return Err(e.into()),
            }
        }
        Err(RecordsError::Contended {
            key: key.map(|k| k.to_string()).unwrap_or_default(),
        }
        .into())
    }

    /// The catalogs of `tenant` in name order, after `after`, at most `limit`.
    pub async fn list_catalogs(
        &self,
        tenant: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<Versioned<CatalogRecord>>, ListError> {
        let tenant = Name::new("tenant", tenant)?;
        let after = after.map(|a| Name::new("catalog", a)).transpose()?;
        let prefix = records::catalogs_of(&tenant);
        Ok(records::list(self.records(), &prefix, after.as_ref(), limit).await?)
    }

    /// The catalog `name` of `tenant`, ready to serve: opened on its repository and writing
    /// files to its warehouse.
    pub async fn open_catalog(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Catalog, OpenCatalogError> {
        let record = self.resolve(tenant, name).await?.value;
        let warehouse_key = records::warehouse_key(&record.tenant, &record.warehouse);
        let warehouse = records::get::<WarehouseRecord>(self.records(), &warehouse_key)
            .await
            .map_err(GetCatalogError::from)?
            .ok_or_else(|| OpenCatalogError::WarehouseMissing {
                catalog: record.name.clone(),
                warehouse: record.warehouse.clone(),
            })?;
        let runtime = warehouse.value.to_runtime(&self.key, &self.metadata)?;
        Ok(Catalog::open(
            self.store.clone(),
            self.cache.clone(),
            record.tenant.as_str(),
            record.name.as_str(),
        )?
        .with_warehouse(runtime)
        .with_retention(record.retention.map(Arc::new))
        .with_protection(record.protection.map(Arc::new))
        .with_table_merge(crate::versioning::TableMergeMode::of_catalog(
            &record.properties,
        )))
    }

    /// Deletes an empty catalog: its record and its `main` branch. Refused while `main` holds
    /// any namespace, table or view, and while the catalog has any other branch or tag, so no
    /// content is ever dropped by this call (there is no `force`: empty the catalog first).
    /// Its ref log and objects are deleted with it.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, catalog = %name))]
    pub async fn delete_catalog(
        &self,
        tenant: &str,
        name: &str,
        principal: &str,
    ) -> Result<(), DeleteCatalogError> {
        let record = self.resolve(tenant, name).await.map_err(|e| match e {
            GetCatalogError::InvalidName(e) => DeleteCatalogError::InvalidName(e),
            GetCatalogError::NotFound { tenant, catalog } => {
                DeleteCatalogError::NotFound { tenant, catalog }
            }
            GetCatalogError::Records(e) => DeleteCatalogError::Records(e),
        })?;
        let name = record.value.name.clone();
        let catalog = Catalog::open(
            self.store.clone(),
            self.cache.clone(),
            record.value.tenant.as_str(),
            name.as_str(),
        )
        .map_err(|_| DeleteCatalogError::NotFound {
            tenant: tenant.to_owned(),
            catalog: name.to_string(),
        })?;
        let main = catalog.default_branch();
        let repo = catalog.odb().repo().clone();
        let refs = self
            .store
            .list_refs(
                &repo,
                &RefQuery {
                    kind: None,
                    prefix: String::new(),
                    after: None,
                    limit: 2,
                },
            )
            .await?;
        if let Some((other, _)) = refs.refs.iter().find(|(r, _)| r != &main) {
            return Err(DeleteCatalogError::HasOtherRefs {
                catalog: name,
                reference: other.to_string(),
            });
        }
        let head = refs
            .refs
            .iter()
            .find(|(r, _)| r == &main)
            .map(|(_, id)| *id);
        if let Some(head) = head {
            if catalog.odb().commit(&head).await?.tree != tree::empty_id() {
                return Err(DeleteCatalogError::NotEmpty(name));
            }
            self.move_main(&catalog, Expected::Equals(head), Target::Delete, principal)
                .await
                .map_err(|source| match source {
                    TransactError::OutOfDate { .. } | TransactError::DeleteMissing { .. } => {
                        DeleteCatalogError::Conflict(name.clone())
                    }
                    source => DeleteCatalogError::Refs {
                        catalog: name.clone(),
                        source,
                    },
                })?;
        }
        // The ref log and every object go too, so a catalog created later under the same
        // name starts empty: no old hash resolves in it. Done before the record goes, so a
        // failure here leaves a catalog to delete again rather than unreachable leftovers.
        self.store.drop_repo(&repo).await?;
        self.cache.forget_repo(&repo);
        self.webhooks()
            .delete_all(&record.value.tenant, &name)
            .await?;
        self.merge_requests()
            .delete_all(&record.value.tenant, &name)
            .await?;
        crate::remotes::delete_all(self.records(), &record.value.tenant, &name).await?;
        crate::bundle::hold::delete_all(self.records(), &record.value.tenant, &name).await?;
        let key = records::catalog_key(&record.value.tenant, &name);
        match records::delete(self.records(), &key, record.version).await {
            Ok(()) => Ok(()),
            Err(error) => {
                // Put `main` back so the record and its repository stay together.
                if let Some(head) = head
                    && let Err(error) = self
                        .move_main(&catalog, Expected::Absent, Target::Set(head), principal)
                        .await
                {
                    tracing::warn!(catalog = %name, %error, "could not restore `main`");
                }
                match error {
                    PutError::Mismatch { .. } => Err(DeleteCatalogError::Conflict(name)),
                    PutError::Records(e) => Err(e.into()),
                }
            }
        }
    }

    async fn move_main(
        &self,
        catalog: &Catalog,
        expected: Expected,
        target: Target,
        principal: &str,
    ) -> Result<(), TransactError> {
        let tx = Transaction {
            updates: vec![RefUpdate {
                reference: catalog.default_branch(),
                expected,
                target,
            }],
            principal: principal.to_owned(),
            message: "delete catalog".to_owned(),
            time: Timestamp::now(),
        };
        self.store
            .transact(catalog.odb().repo(), tx)
            .await
            .map(|_| ())
    }
}
