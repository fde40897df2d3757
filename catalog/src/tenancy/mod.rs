//! Tenancy: the deployment's tenants, their warehouses (where files go, with encrypted
//! credentials) and their catalogs (one repository each, bound to one warehouse), kept as
//! records in the [`RecordStore`] and changed only by compare-and-swap.
//!
//! The record layout is in [`records`]. Names follow one rule ([`Name`]). A catalog belongs
//! to exactly one tenant: [`Tenancy::resolve`] looks it up by tenant and name only, so a
//! catalog of another tenant is "not found", never "forbidden".
//!
//! Children are created before their parents are touched: creating a warehouse or catalog
//! writes its record, then raises the version of its tenant (and a catalog, of its
//! warehouse); a delete checks for children and then deletes the version it read. One of the
//! two always sees the other, so no warehouse or catalog outlives its tenant and no catalog
//! outlives its warehouse.

pub mod catalog;
pub mod migrate;
pub mod name;
pub mod records;
pub mod secret;
pub mod sharing;
pub mod storage;
pub mod tenant;
pub mod warehouse;

use std::fmt;
use std::sync::Arc;

use pangolin_records::RecordStore;
use pangolin_store::ObjectCache;

use crate::iceberg::MetadataCache;
use crate::store::Store;

pub use catalog::{
    CatalogKind, CatalogRecord, CreateCatalogError, DeleteCatalogError, GetCatalogError,
    NewCatalog, OpenCatalogError, SetProtectionError, SetRetentionError,
};
pub use migrate::{DefaultOutcome, DefaultSetup, EnsureDefaultError};
pub use name::{Name, NameError};
pub use records::{MAX_PAGE, Page, RecordsError, Versioned};
pub use secret::{OpenError, SealError, Sealed, SecretKey, SecretKeyError};
pub use sharing::SharingError;
pub use storage::{
    Credentials, DownscopeSettings, SasSettings, StorageConfig, StsSettings, VerifyError,
};
pub use tenant::{
    CreateTenantError, DeleteTenantError, GetTenantError, ListError, Tenant, UpdateTenantError,
};
pub use warehouse::{
    CreateWarehouseError, CredentialsView, DeleteWarehouseError, GetWarehouseError, RuntimeError,
    UpdateWarehouseError, WarehouseRecord, WarehouseSpec, WarehouseUpdate, WarehouseView,
};

/// Tenants, warehouses and catalogs of one deployment, over its store and server key.
#[derive(Clone)]
pub struct Tenancy {
    store: Arc<dyn Store>,
    cache: Arc<ObjectCache>,
    key: Arc<SecretKey>,
    metadata: Arc<MetadataCache>,
}

impl fmt::Debug for Tenancy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tenancy").finish_non_exhaustive()
    }
}

impl Tenancy {
    /// Tenancy over `store` (records, and the repositories of catalogs it creates), with
    /// `key` encrypting warehouse credentials.
    ///
    /// Warehouses keep parsed metadata in a cache of the default size; see
    /// [`with_metadata_cache`](Self::with_metadata_cache).
    pub fn new(store: Arc<dyn Store>, cache: Arc<ObjectCache>, key: SecretKey) -> Self {
        Self {
            store,
            cache,
            key: Arc::new(key),
            metadata: Arc::default(),
        }
    }

    /// Every warehouse keeping its parsed metadata files in `metadata`.
    pub fn with_metadata_cache(mut self, metadata: Arc<MetadataCache>) -> Self {
        self.metadata = metadata;
        self
    }

    /// The cache every warehouse keeps its parsed metadata files in.
    pub fn metadata_cache(&self) -> &Arc<MetadataCache> {
        &self.metadata
    }

    /// The webhook subscriptions of every tenant, sealed under the same key.
    pub fn webhooks(&self) -> crate::webhooks::Webhooks {
        crate::webhooks::Webhooks::new(self.store.clone(), self.key.clone())
    }

    /// The merge requests of every tenant's catalogs.
    pub fn merge_requests(&self) -> crate::merge_requests::MergeRequests {
        crate::merge_requests::MergeRequests::new(self.store.clone())
    }

    fn records(&self) -> &dyn RecordStore {
        self.store.as_ref()
    }

    /// The server key, for [`WarehouseRecord::to_runtime`] and
    /// [`WarehouseRecord::credentials`].
    pub fn key(&self) -> &SecretKey {
        &self.key
    }
}
