//! What every handler shares, and how a URL prefix becomes a catalog and a reference.

use std::sync::Arc;

use pangolin_catalog::{Catalog, CommitQueues, RefSpec, Store};
use pangolin_refs::Reference;
use pangolin_store::ObjectCache;

use crate::directory::CatalogDirectory;
use crate::error::ApiError;
use crate::security::{Caller, Security};

/// The server's shared state, cloned for every request by each layer and extractor that
/// takes it: one reference count, however many parts it has.
#[derive(Clone, Debug)]
pub struct AppState(Arc<SharedState>);

/// What [`AppState`] shares.
pub struct SharedState {
    pub store: Arc<dyn Store>,
    pub cache: Arc<ObjectCache>,
    /// Every catalog's commits on one branch are grouped here (see `CommitQueues`).
    pub commits: Arc<CommitQueues>,
    /// Who may do what, and the audit log.
    pub security: Arc<Security>,
    /// The tenant of callers who name none: everyone without authentication, root otherwise.
    pub tenant: String,
    /// The catalog used when a client names no warehouse.
    pub default_catalog: String,
    /// The tenants' catalogs and the warehouses they are bound to.
    pub catalogs: Arc<CatalogDirectory>,
    /// Staged creates not committed yet, whose metrics reports are taken.
    pub staged: Arc<crate::staged::StagedTables>,
    /// Events derived from recent ref-log entries, shared by every reader of the feed.
    pub events: Arc<pangolin_catalog::events::EventCache>,
}

impl From<SharedState> for AppState {
    fn from(shared: SharedState) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = SharedState;

    fn deref(&self) -> &SharedState {
        &self.0
    }
}

impl std::fmt::Debug for SharedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedState")
            .field("tenant", &self.tenant)
            .field("default_catalog", &self.default_catalog)
            .field("catalogs", &self.catalogs)
            .finish()
    }
}

/// A catalog and the reference a request works at, from a prefix `catalog[@ref]`.
#[derive(Debug)]
pub struct Scope {
    pub catalog: Catalog,
    pub at: RefSpec,
}

impl AppState {
    /// The catalog and reference of `prefix`, in the caller's tenant: a catalog the tenant
    /// does not have is `NoSuchCatalogException`, whoever else has one of that name.
    pub async fn scope(&self, prefix: &str) -> Result<Scope, ApiError> {
        let (name, at) = match prefix.split_once('@') {
            Some((name, at)) => (name, at),
            None => (prefix, pangolin_catalog::DEFAULT_BRANCH),
        };
        // Catalog names resolve in the caller's tenant, so another tenant's catalog of the same
        // name is simply not there.
        let tenant = Caller::current_tenant().unwrap_or_else(|| self.tenant.clone());
        let catalog = self.catalog_in(&tenant, name).await?;
        let at = RefSpec::parse(at)
            .map_err(|e| ApiError::bad_request(format!("invalid reference: {e}")))?;
        Ok(Scope { catalog, at })
    }

    /// Catalog `name` of `tenant`, bound to its warehouse and this server's shared parts.
    pub async fn catalog_in(&self, tenant: &str, name: &str) -> Result<Catalog, ApiError> {
        let catalog = Catalog::open(self.store.clone(), self.cache.clone(), tenant, name)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let bound = self.catalogs.resolve(tenant, name).await?;
        Ok(catalog
            .with_warehouse(bound.warehouse)
            .with_retention(bound.retention)
            .with_protection(bound.protection)
            .with_table_merge(bound.table_merge)
            .with_commit_queues(self.commits.clone())
            .with_event_cache(self.events.clone()))
    }
}

impl Scope {
    /// The branch this scope may write to, or why it may not.
    pub async fn writable_branch(&self) -> Result<Reference, ApiError> {
        crate::address::writable(self, &self.at).await
    }
}
