//! Warehouses: where a tenant's catalogs keep their files, and the credentials to reach them.
//!
//! Credentials are stored sealed under the server key with the warehouse's record key as
//! associated data (see [`super::secret`]); what a listing or a GET shows is a
//! [`WarehouseView`], which says which credential fields are set and nothing more.

use std::sync::Arc;

use pangolin_records::{ExpectedVersion, RecordKey};
use pangolin_store::Timestamp;

use super::Tenancy;
use super::catalog::CatalogRecord;
use super::name::{Name, NameError};
use super::records::{self, Page, PutError, RecordsError, Versioned};
use super::secret::{self, OpenError, SealError, SecretKey};
use super::storage::{
    Credentials, SealedCredentials, StorageConfig, VerifyError, check_spec, downscoper,
    keys_needed, local_root, sas_signer, signer, sts_vendor, verify_delegation, with_prefix,
};
use super::tenant::ListError;
use crate::iceberg::{AzureSettings, FileIo, GcsSettings, IoError, MetadataCache, StorageOptions};
use crate::warehouse::{Delegation, Warehouse};

/// What a warehouse is made of: its storage and, optionally, credentials for it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WarehouseSpec {
    pub storage: StorageConfig,
    #[serde(default)]
    pub credentials: Option<Credentials>,
}

/// A change to a warehouse: each part replaced when given, kept when `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WarehouseUpdate {
    pub storage: Option<StorageConfig>,
    /// `Some(None)` removes the credentials.
    pub credentials: Option<Option<Credentials>>,
}

/// A warehouse as stored. Its credentials are sealed; see [`view`](Self::view) for what may
/// be shown and [`to_runtime`](Self::to_runtime) for using it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WarehouseRecord {
    pub tenant: Name,
    pub name: Name,
    pub storage: StorageConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    credentials: Option<SealedCredentials>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Which credential fields a warehouse has, without their values.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct CredentialsView {
    /// `s3`.
    pub kind: String,
    /// `access-key-id`, `secret-access-key`, `session-token`.
    pub fields_set: Vec<String>,
}

/// What a GET or a listing of a warehouse shows: no secret values at all.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct WarehouseView {
    pub tenant: Name,
    pub name: Name,
    pub storage: StorageConfig,
    pub credentials: Option<CredentialsView>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Why a warehouse record did not become a runtime [`Warehouse`].
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("warehouse `{warehouse}`: {what} is not supported yet")]
    Unsupported { warehouse: Name, what: &'static str },
    #[error("warehouse `{warehouse}`: its credentials cannot be read: {source}")]
    Credentials {
        warehouse: Name,
        #[source]
        source: OpenError,
    },
    #[error("warehouse `{warehouse}` is not usable: {reason}")]
    Invalid { warehouse: Name, reason: String },
    #[error("warehouse `{warehouse}` is not usable: {source}")]
    Io {
        warehouse: Name,
        #[source]
        source: IoError,
    },
}

impl WarehouseRecord {
    /// The record key this warehouse is stored under (and its credentials bound to).
    pub fn record_key(&self) -> RecordKey {
        records::warehouse_key(&self.tenant, &self.name)
    }

    /// The public view: storage, and which credential fields are set.
    pub fn view(&self) -> WarehouseView {
        WarehouseView {
            tenant: self.tenant.clone(),
            name: self.name.clone(),
            storage: self.storage.clone(),
            credentials: self.credentials.as_ref().map(|c| CredentialsView {
                kind: c.kind.clone(),
                fields_set: c.fields_set.clone(),
            }),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }

    /// The decrypted credentials. Fails, never returns garbage, with another key or a sealed
    /// value that was altered or copied from another record.
    pub fn credentials(&self, key: &SecretKey) -> Result<Option<Credentials>, OpenError> {
        let Some(stored) = &self.credentials else {
            return Ok(None);
        };
        let plaintext = secret::open(key, self.record_key().as_str().as_bytes(), &stored.sealed)?;
        serde_json::from_slice(&plaintext)
            .map(Some)
            .map_err(|_| OpenError::Malformed("the decrypted credentials are not valid"))
    }

    /// The runtime warehouse: its root location and file access with its credentials, its
    /// parsed metadata kept in `metadata` (the server's, shared by every warehouse). Reaches
    /// no server and touches no file: a missing local directory is created by the first write
    /// below it.
    pub fn to_runtime(
        &self,
        key: &SecretKey,
        metadata: &Arc<MetadataCache>,
    ) -> Result<Warehouse, RuntimeError> {
        let credentials = self
            .credentials(key)
            .map_err(|source| RuntimeError::Credentials {
                warehouse: self.name.clone(),
                source,
            })?;
        let invalid = |reason: String| RuntimeError::Invalid {
            warehouse: self.name.clone(),
            reason,
        };
        let unsupported = |what| RuntimeError::Unsupported {
            warehouse: self.name.clone(),
            what,
        };
        let mut delegation = Delegation::default();
        let (root, options) = match &self.storage {
            StorageConfig::Local { root } => {
                if credentials.is_some() {
                    return Err(invalid("a local warehouse takes no credentials".to_owned()));
                }
                (
                    local_root(root).map_err(invalid)?,
                    StorageOptions::default(),
                )
            }
            StorageConfig::S3 { bucket, prefix, .. } => {
                if let Some(Credentials::S3 {
                    session_token: Some(_),
                    ..
                }) = &credentials
                {
                    return Err(unsupported("an S3 session token"));
                }
                let s3 = self.storage.s3_settings(credentials.as_ref());
                s3.validate().map_err(invalid)?;
                delegation.vendor = sts_vendor(&self.storage, credentials.as_ref())
                    .map_err(invalid)?
                    .map(Arc::new);
                delegation.signer = signer(&self.storage, credentials.as_ref())
                    .map_err(invalid)?
                    .map(Arc::new);
                let root = with_prefix(format!("s3://{bucket}"), prefix.as_deref());
                (
                    root,
                    StorageOptions {
                        s3,
                        ..StorageOptions::default()
                    },
                )
            }
            StorageConfig::Azure {
                account,
                container,
                prefix,
                endpoint,
                ..
            } => {
                let account_key = match &credentials {
                    Some(Credentials::Azure { account_key }) => Some(account_key.clone()),
                    _ => None,
                };
                delegation.sas = sas_signer(&self.storage, credentials.as_ref())
                    .map_err(invalid)?
                    .map(Arc::new);
                let root = with_prefix(
                    format!("abfss://{container}@{account}.dfs.core.windows.net"),
                    prefix.as_deref(),
                );
                let azure = AzureSettings {
                    account_key,
                    endpoint: endpoint.clone(),
                };
                (
                    root,
                    StorageOptions {
                        azure,
                        ..StorageOptions::default()
                    },
                )
            }
            StorageConfig::Gcs {
                bucket,
                prefix,
                endpoint,
                ..
            } => {
                let service_account_key = match &credentials {
                    Some(Credentials::Gcs {
                        service_account_key,
                    }) => Some(service_account_key.clone()),
                    _ => None,
                };
                delegation.gcs = downscoper(&self.storage, credentials.as_ref())
                    .map_err(invalid)?
                    .map(Arc::new);
                let root = with_prefix(format!("gs://{bucket}"), prefix.as_deref());
                let gcs = GcsSettings {
                    service_account_key,
                    endpoint: endpoint.clone(),
                };
                (
                    root,
                    StorageOptions {
                        gcs,
                        ..StorageOptions::default()
                    },
                )
            }
        };
        let io = FileIo::sharing(metadata.clone(), options);
        io.check_location(&root)
            .map_err(|source| RuntimeError::Io {
                warehouse: self.name.clone(),
                source,
            })?;
        Ok(Warehouse::new(root, Arc::new(io)).with_delegation(delegation))
    }
}

/// Why [`Tenancy::create_warehouse`] failed.
#[derive(Debug, thiserror::Error)]
pub enum CreateWarehouseError {
    #[error(transparent)]
    InvalidName(#[from] NameError),
    #[error("tenant `{0}` does not exist")]
    TenantNotFound(Name),
    #[error("warehouse `{warehouse}` already exists in tenant `{tenant}`")]
    Exists { tenant: Name, warehouse: Name },
    #[error("invalid warehouse `{warehouse}`: {reason}")]
    Invalid { warehouse: Name, reason: String },
    #[error("warehouse `{warehouse}`: {source}")]
    Unverified {
        warehouse: Name,
        #[source]
        source: VerifyError,
    },
    #[error(transparent)]
    Seal(#[from] SealError),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// Why [`Tenancy::warehouse`] failed.
#[derive(Debug, thiserror::Error)]
pub enum GetWarehouseError {
    #[error(transparent)]
    InvalidName(#[from] NameError),
    #[error("warehouse `{warehouse}` does not exist in tenant `{tenant}`")]
    NotFound { tenant: String, warehouse: String },
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// Why [`Tenancy::update_warehouse`] failed.
#[derive(Debug, thiserror::Error)]
pub enum UpdateWarehouseError {
    #[error(transparent)]
    InvalidName(#[from] NameError),
    #[error("warehouse `{warehouse}` does not exist in tenant `{tenant}`")]
    NotFound { tenant: String, warehouse: String },
    #[error(
        "warehouse `{warehouse}` changed: it is at version {actual}, not {expected}; read it again"
    )]
    Conflict {
        warehouse: Name,
        expected: u64,
        actual: u64,
    },
    #[error("invalid warehouse `{warehouse}`: {reason}")]
    Invalid { warehouse: Name, reason: String },
    #[error("warehouse `{warehouse}`: {source}")]
    Unverified {
        warehouse: Name,
        #[source]
        source: VerifyError,
    },
    #[error(transparent)]
    Seal(#[from] SealError),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// Why [`Tenancy::delete_warehouse`] failed.
#[derive(Debug, thiserror::Error)]
pub enum DeleteWarehouseError {
    #[error(transparent)]
    InvalidName(#[from] NameError),
    #[error("warehouse `{warehouse}` does not exist in tenant `{tenant}`")]
    NotFound { tenant: String, warehouse: String },
    #[error(
        "warehouse `{warehouse}` is still used by catalog `{catalog}`: delete the catalog first"
    )]
    Bound { warehouse: Name, catalog: Name },
    #[error("warehouse `{0}` changed while it was being deleted; try again")]
    Conflict(Name),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

impl Tenancy {
    /// Creates warehouse `name` in `tenant`, sealing its credentials under the server key.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, warehouse = %name))]
    pub async fn create_warehouse(
        &self,
        tenant: &str,
        name: &str,
        spec: WarehouseSpec,
    ) -> Result<Versioned<WarehouseRecord>, CreateWarehouseError> {
        let tenant = Name::new("tenant", tenant)?;
        let name = Name::new("warehouse", name)?;
        check_spec(&spec.storage, spec.credentials.as_ref()).map_err(|reason| {
            CreateWarehouseError::Invalid {
                warehouse: name.clone(),
                reason,
            }
        })?;
        verify_delegation(&spec.storage, spec.credentials.as_ref())
            .await
            .map_err(|source| CreateWarehouseError::Unverified {
                warehouse: name.clone(),
                source,
            })?;
        let tenant_key = records::tenant_key(&tenant);
        if self
            .records()
            .get_record(&tenant_key)
            .await
            .map_err(RecordsError::from)?
            .is_none()
        {
            return Err(CreateWarehouseError::TenantNotFound(tenant));
        }
        let key = records::warehouse_key(&tenant, &name);
        let now = Timestamp::now();
        let warehouse = WarehouseRecord {
            credentials: spec
                .credentials
                .as_ref()
                .map(|c| c.seal(&self.key, &key))
                .transpose()?,
            tenant: tenant.clone(),
            name: name.clone(),
            storage: spec.storage,
            created_at: now,
            updated_at: now,
        };
        let version =
            match records::put(self.records(), &key, ExpectedVersion::Absent, &warehouse).await {
                Ok(version) => version,
                Err(PutError::Mismatch { .. }) => {
                    return Err(CreateWarehouseError::Exists {
                        tenant,
                        warehouse: name,
                    });
                }
                Err(PutError::Records(e)) => return Err(e.into()),
            };
        if !records::touch(self.records(), &tenant_key).await? {
            // The tenant was deleted meanwhile: take the warehouse back.
            records::undo(self.records(), &key, version).await;
            return Err(CreateWarehouseError::TenantNotFound(tenant));
        }
        Ok(Versioned {
            value: warehouse,
            version,
        })
    }

    /// Warehouse `name` of `tenant`.
    pub async fn warehouse(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Versioned<WarehouseRecord>, GetWarehouseError> {
        let tenant = Name::new("tenant", tenant)?;
        let name = Name::new("warehouse", name)?;
        records::get(self.records(), &records::warehouse_key(&tenant, &name))
            .await?
            .ok_or_else(|| GetWarehouseError::NotFound {
                tenant: tenant.to_string(),
                warehouse: name.to_string(),
            })
    }

    /// The warehouses of `tenant` in name order, after `after`, at most `limit`.
    pub async fn list_warehouses(
        &self,
        tenant: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<Versioned<WarehouseRecord>>, ListError> {
        let tenant = Name::new("tenant", tenant)?;
        let after = after.map(|a| Name::new("warehouse", a)).transpose()?;
        let prefix = records::warehouses_of(&tenant);
        Ok(records::list(self.records(), &prefix, after.as_ref(), limit).await?)
    }

    /// Changes a warehouse at `expected_version` (compare-and-swap). New credentials are
    /// sealed with a new nonce. Binding a catalog to the warehouse also raises its version,
    /// so an update read before that has to read again.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, warehouse = %name))]
    pub async fn update_warehouse(
        &self,
        tenant: &str,
        name: &str,
        expected_version: u64,
        update: WarehouseUpdate,
    ) -> Result<Versioned<WarehouseRecord>, UpdateWarehouseError> {
        let current = self.warehouse(tenant, name).await.map_err(|e| match e {
            GetWarehouseError::InvalidName(e) => UpdateWarehouseError::InvalidName(e),
            GetWarehouseError::NotFound { tenant, warehouse } => {
                UpdateWarehouseError::NotFound { tenant, warehouse }
            }
            GetWarehouseError::Records(e) => UpdateWarehouseError::Records(e),
        })?;
        let key = current.value.record_key();
        let name = current.value.name.clone();
        let conflict = |actual| UpdateWarehouseError::Conflict {
            warehouse: name.clone(),
            expected: expected_version,
            actual,
        };
        if current.version != expected_version {
            return Err(conflict(current.version));
        }
        let invalid = |reason| UpdateWarehouseError::Invalid {
            warehouse: name.clone(),
            reason,
        };
        let mut warehouse = current.value;
        let changed = update.storage.is_some() || update.credentials.is_some();
        let given = update.credentials.clone().flatten();
        if let Some(storage) = update.storage {
            warehouse.storage = storage;
        }
        match update.credentials {
            Some(Some(credentials)) => {
                check_spec(&warehouse.storage, Some(&credentials)).map_err(invalid)?;
                warehouse.credentials = Some(credentials.seal(&self.key, &key)?);
            }
            Some(None) => {
                keys_needed(&warehouse.storage).map_err(invalid)?;
                warehouse.credentials = None;
            }
            None => {
                if warehouse.credentials.is_none() {
                    keys_needed(&warehouse.storage).map_err(invalid)?;
                }
                warehouse.storage.validate().map_err(invalid)?;
                let kind = warehouse.credentials.as_ref().map(|c| c.kind.as_str());
                if kind.is_some_and(|kind| kind != warehouse.storage.kind()) {
                    return Err(invalid(
                        "the stored credentials do not fit the new storage: replace them too"
                            .to_owned(),
                    ));
                }
            }
        }
        if changed && warehouse.storage.is_verified() {
            let credentials = match given {
                Some(given) => Some(given),
                None => warehouse
                    .credentials(&self.key)
                    .map_err(|e| invalid(format!("its credentials cannot be read: {e}")))?,
            };
            verify_delegation(&warehouse.storage, credentials.as_ref())
                .await
                .map_err(|source| UpdateWarehouseError::Unverified {
                    warehouse: name.clone(),
                    source,
                })?;
        }
        warehouse.updated_at = Timestamp::now();
        let expected = ExpectedVersion::Is(expected_version);
        match records::put(self.records(), &key, expected, &warehouse).await {
            Ok(version) => Ok(Versioned {
                value: warehouse,
                version,
            }),
            Err(PutError::Mismatch { actual: Some(v) }) => Err(conflict(v)),
            Err(PutError::Mismatch { actual: None }) => Err(UpdateWarehouseError::NotFound {
                tenant: warehouse.tenant.to_string(),
                warehouse: name.to_string(),
            }),
            Err(PutError::Records(e)) => Err(e.into()),
        }
    }

    /// Deletes a warehouse that no catalog is bound to.
    ///
    /// Creating a catalog raises its warehouse's version after writing the catalog record, and
    /// this deletes the version it read before checking, so no catalog is left bound to a
    /// deleted warehouse.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, warehouse = %name))]
    pub async fn delete_warehouse(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<(), DeleteWarehouseError> {
        let tenant = Name::new("tenant", tenant)?;
        let name = Name::new("warehouse", name)?;
        let key = records::warehouse_key(&tenant, &name);
        let Some(current) = self
            .records()
            .get_record(&key)
            .await
            .map_err(RecordsError::from)?
        else {
            return Err(DeleteWarehouseError::NotFound {
                tenant: tenant.to_string(),
                warehouse: name.to_string(),
            });
        };
        if let Some(catalog) = self.first_catalog_bound_to(&tenant, &name).await? {
            return Err(DeleteWarehouseError::Bound {
                warehouse: name,
                catalog,
            });
        }
        match records::delete(self.records(), &key, current.version).await {
            Ok(()) => Ok(()),
            Err(PutError::Mismatch { actual: None }) => Err(DeleteWarehouseError::NotFound {
                tenant: tenant.to_string(),
                warehouse: name.to_string(),
            }),
            Err(PutError::Mismatch { .. }) => Err(DeleteWarehouseError::Conflict(name)),
            Err(PutError::Records(e)) => Err(e.into()),
        }
    }

    /// A catalog of `tenant` bound to `warehouse`, if any: a scan of the tenant's catalogs,
    /// which are few.
    async fn first_catalog_bound_to(
        &self,
        tenant: &Name,
        warehouse: &Name,
    ) -> Result<Option<Name>, RecordsError> {
        let prefix = records::catalogs_of(tenant);
        let mut after = None;
        loop {
            let page: Page<Versioned<CatalogRecord>> =
                records::list(self.records(), &prefix, after.as_ref(), records::MAX_PAGE).await?;
            if let Some(found) = page.items.iter().find(|c| &c.value.warehouse == warehouse) {
                return Ok(Some(found.value.name.clone()));
            }
            match page.next_after {
                Some(next) => after = Some(next),
                None => return Ok(None),
            }
        }
    }
}
