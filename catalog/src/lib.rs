//! Catalog semantics on the versioned store.
//!
//! A catalog is one repository; every write is a commit on a branch made by the commit
//! protocol ([`Catalog::commit`]); every read names what it reads with a reference expression
//! ([`RefSpec`]: a branch, a tag, a commit in a branch's history, a branch at a time).
//! Namespaces and Iceberg tables and views live here; [`tenancy`] keeps the tenants,
//! warehouses and catalogs of a deployment and [`authz`] decides who may do what.

pub mod address;
pub mod authz;
pub mod branches;
pub mod bundle;
pub mod catalog;
pub mod changes;
pub mod collect;
pub mod commit;
pub mod commit_audit;
mod commit_claims;
pub mod commit_queue;
pub mod events;
pub mod iceberg;
pub mod list;
pub mod log;
pub mod maintenance;
pub mod merge_requests;
pub mod namespace;
pub mod orphans;
pub mod reach;
pub mod ref_cache;
pub mod remotes;
pub mod retention;
pub mod store;
pub mod table;
pub mod table_commit;
pub mod table_merge;
pub mod telemetry;
pub mod tenancy;
pub mod versioning;
pub mod view;
pub mod warehouse;
pub mod webhooks;

pub use address::{RefSpec, RefSpecError, Resolved, rfc3339};
pub use branches::{CreateRefError, ListRefsError, RefInfo, UpdateRefError};
pub use catalog::{Catalog, CreateError, DEFAULT_BRANCH, OpenError, ResolveError};
pub use changes::{ChangePage, CommitDetail, DiffError, EntryChange};
pub use commit::{CommitError, CommitMeta, Committed, Edits, MAX_ATTEMPTS, PlanFuture};
pub use commit_audit::PendingAudit;
pub use commit_queue::CommitQueues;
pub use log::{LogError, LogFilter, LogPage};
pub use namespace::{Namespace, NamespaceError, PropertiesUpdate, ReadAtError};
pub use ref_cache::SoleWriterRefCache;
pub use store::Store;
pub use table::{LoadedTable, TableError, table_commit_meta};
pub use table_commit::TableChange;
pub use tenancy::Tenancy;
pub use versioning::{
    HistoryRequest, MergeRefError, MergeReport, MergedTable, TABLE_MERGE_PROPERTY, TableMergeMode,
};
pub use view::{LoadedView, ViewError, view_commit_meta};
pub use warehouse::{OutsideWarehouse, Warehouse};
