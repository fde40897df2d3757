//! Which catalogs a tenant has and where each one's files go, answered from memory.
//!
//! Every request names a catalog, so looking its record and its warehouse's record up in the
//! database each time would put two queries on the hot path of every table load. Answers are
//! kept for a short time instead (the TTL, [`crate::SHARED_STATE_TTL`] unless configured);
//! this server's own changes drop them at once ([`CatalogDirectory::forget`]), and other
//! replicas' changes are seen within the TTL.
//! Runtime warehouses (with their open file access and metadata cache) are kept per record
//! version, so a changed warehouse gets fresh ones and an unchanged one keeps its cache.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use pangolin_catalog::TableMergeMode;
use pangolin_catalog::Warehouse;
use pangolin_catalog::merge_requests::BranchProtection;
use pangolin_catalog::retention::RetentionPolicy;
use pangolin_catalog::tenancy::{GetCatalogError, GetWarehouseError, Tenancy};
use parking_lot::Mutex;

use crate::error::ApiError;

type Key = (String, String);

/// A catalog's binding, as a request needs it.
#[derive(Clone, Debug)]
pub struct Bound {
    pub warehouse: Warehouse,
    /// The catalog's retention policy, if it has one.
    pub retention: Option<Arc<RetentionPolicy>>,
    /// Which of its branches change only through merge requests.
    pub protection: Option<Arc<BranchProtection>>,
    /// How its merges treat a table changed on both sides by default.
    pub table_merge: TableMergeMode,
}

/// The catalogs of every tenant, cached. See the module docs.
pub struct CatalogDirectory {
    tenancy: Tenancy,
    ttl: Duration,
    catalogs: Mutex<HashMap<Key, (Instant, Option<Bound>)>>,
    /// Runtime warehouses by (tenant, warehouse) with the record version they were built from.
    warehouses: Mutex<HashMap<Key, (u64, Warehouse)>>,
}

impl std::fmt::Debug for CatalogDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogDirectory")
            .field("catalogs", &self.catalogs.lock().len())
            .finish_non_exhaustive()
    }
}

fn no_such_catalog(name: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "NoSuchCatalogException",
        format!("there is no catalog named `{name}`"),
    )
}

impl CatalogDirectory {
    pub fn new(tenancy: Tenancy) -> Self {
        Self {
            tenancy,
            ttl: crate::SHARED_STATE_TTL,
            catalogs: Mutex::new(HashMap::new()),
            warehouses: Mutex::new(HashMap::new()),
        }
    }

    /// This directory, trusting answers for `ttl` (zero: reads the records on every request).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The tenancy records behind the directory (for the admin routes).
    pub fn tenancy(&self) -> &Tenancy {
        &self.tenancy
    }

    /// Catalog `name` of `tenant` and its warehouse; `NoSuchCatalogException` when the tenant
    /// has no such catalog (whatever other tenants have).
    pub async fn resolve(&self, tenant: &str, name: &str) -> Result<Bound, ApiError> {
        let key = (tenant.to_owned(), name.to_owned());
        if let Some((at, answer)) = self.catalogs.lock().get(&key)
            && at.elapsed() < self.ttl
        {
            return answer.clone().ok_or_else(|| no_such_catalog(name));
        }
        let answer = self.lookup(tenant, name).await?;
        self.catalogs
            .lock()
            .insert(key, (Instant::now(), answer.clone()));
        answer.ok_or_else(|| no_such_catalog(name))
    }

    /// Drops what is known of `tenant`'s catalog `name` (after this server changed it).
    pub fn forget(&self, tenant: &str, name: &str) {
        self.catalogs
            .lock()
            .remove(&(tenant.to_owned(), name.to_owned()));
    }

    /// Drops everything known of `tenant`'s catalogs (after a warehouse changed).
    pub fn forget_tenant(&self, tenant: &str) {
        self.catalogs.lock().retain(|(t, _), _| t != tenant);
    }

    async fn lookup(&self, tenant: &str, name: &str) -> Result<Option<Bound>, ApiError> {
        let record = match self.tenancy.resolve(tenant, name).await {
            Ok(record) => record.value,
            Err(GetCatalogError::NotFound { .. } | GetCatalogError::InvalidName(_)) => {
                return Ok(None);
            }
            Err(other) => return Err(ApiError::internal(&other)),
        };
        let warehouse_name = record.warehouse.to_string();
        let retention = record.retention.map(Arc::new);
        let protection = record.protection.map(Arc::new);
        let table_merge = TableMergeMode::of_catalog(&record.properties);
        let stored = match self.tenancy.warehouse(tenant, &warehouse_name).await {
            Ok(stored) => stored,
            // A catalog whose warehouse vanished cannot be served; say so rather than 500.
            Err(GetWarehouseError::NotFound { .. }) => {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailableException",
                    format!(
                        "catalog `{name}` is bound to warehouse `{warehouse_name}`, which is gone"
                    ),
                ));
            }
            Err(other) => return Err(ApiError::internal(&other)),
        };
        let key = (tenant.to_owned(), warehouse_name);
        if let Some((version, warehouse)) = self.warehouses.lock().get(&key)
            && *version == stored.version
        {
            return Ok(Some(Bound {
                warehouse: warehouse.clone(),
                retention,
                protection,
                table_merge,
            }));
        }
        let warehouse = stored
            .value
            .to_runtime(self.tenancy.key(), self.tenancy.metadata_cache())
            .map_err(|e| ApiError::internal(&e))?;
        self.warehouses
            .lock()
            .insert(key, (stored.version, warehouse.clone()));
        Ok(Some(Bound {
            warehouse,
            retention,
            protection,
            table_merge,
        }))
    }
}
