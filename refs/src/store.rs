//! The ref-store trait every backend implements.

use async_trait::async_trait;
use pangolin_records::{AuditEvent, AuditLog};
use pangolin_store::{BackendError, ObjectId, ObjectStore, RawObject, RepoId, Timestamp};

use crate::name::{RefKind, Reference};
use crate::transaction::{RefLogEntry, TransactError, Transaction};

/// Which refs to list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RefQuery {
    /// Only branches or only tags; both when `None`.
    pub kind: Option<RefKind>,
    /// Only names starting with this (plain string prefix: `feature/`).
    pub prefix: String,
    /// Continue strictly after this ref (the previous page's `next_after`).
    pub after: Option<Reference>,
    pub limit: usize,
}

/// One page of refs, in [`Reference`] order (branches, then tags; by name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefPage {
    pub refs: Vec<(Reference, ObjectId)>,
    /// Set when more refs follow.
    pub next_after: Option<Reference>,
}

impl RefPage {
    /// The page from up to `limit + 1` refs read in order: the extra one only says that more
    /// follow.
    pub fn from_overfetched(mut refs: Vec<(Reference, ObjectId)>, limit: usize) -> Self {
        let next_after = if refs.len() > limit {
            refs.truncate(limit);
            refs.last().map(|(r, _)| r.clone())
        } else {
            None
        };
        Self { refs, next_after }
    }
}

/// Which ref-log entries of one ref to read, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogQuery {
    /// Only entries with a sequence number below this (the previous page's last sequence).
    pub before: Option<u64>,
    pub limit: usize,
}

/// Which ref-log entries of a whole repository to read, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepoLogQuery {
    /// Only entries with a sequence number above this (the previous page's last sequence).
    pub after: Option<u64>,
    pub limit: usize,
}

/// Named, mutable pointers to commits: the only mutable versioned state.
///
/// Every change goes through [`transact`](RefStore::transact). There is no global lock: stores
/// serialize only transactions that touch the same refs.
#[async_trait]
pub trait RefStore: Send + Sync + 'static {
    async fn get_ref(
        &self,
        repo: &RepoId,
        reference: &Reference,
    ) -> Result<Option<ObjectId>, BackendError>;

    async fn list_refs(&self, repo: &RepoId, query: &RefQuery) -> Result<RefPage, BackendError>;

    /// Applies every update of `tx` or none; returns the ref-log entries written, in update
    /// order. Fails with [`TransactError::OutOfDate`] naming the first update whose expectation
    /// does not hold, with the value the ref actually has.
    async fn transact(
        &self,
        repo: &RepoId,
        tx: Transaction,
    ) -> Result<Vec<RefLogEntry>, TransactError>;

    /// Ref-log entries of one ref, newest first.
    async fn ref_log(
        &self,
        repo: &RepoId,
        reference: &Reference,
        query: LogQuery,
    ) -> Result<Vec<RefLogEntry>, BackendError>;

    /// Ref-log entries of every ref of `repo`, oldest first.
    ///
    /// Sequence numbers become visible in order: once a reader has seen an entry, no entry
    /// with a smaller sequence number can appear later, so a reader that continues after the
    /// last sequence it saw misses nothing. Stores whose writers allocate sequence numbers
    /// before they commit must serialize a repository's ref-log writes until commit for this.
    async fn repository_log(
        &self,
        repo: &RepoId,
        query: RepoLogQuery,
    ) -> Result<Vec<RefLogEntry>, BackendError>;

    /// The last ref-log entry of `reference` at or before `time`: what a reader of the ref saw
    /// then (its `new` is `None` if the ref was deleted). One indexed lookup in every store.
    async fn ref_log_at(
        &self,
        repo: &RepoId,
        reference: &Reference,
        time: Timestamp,
    ) -> Result<Option<RefLogEntry>, BackendError>;
}

/// Storing the objects a ref move publishes, together with the move and the audit events
/// that record it.
///
/// The default stores the objects, then applies the transaction, then appends the events:
/// objects are immutable, so one that is stored without its ref move is only unreferenced,
/// never wrong. Backends that can do all three in one database transaction override it: one
/// round of locking and one sync to disk instead of three, and no moved ref whose audit event
/// a crash lost.
#[async_trait]
pub trait Publish: ObjectStore + RefStore + AuditLog {
    async fn publish(
        &self,
        repo: &RepoId,
        objects: Vec<RawObject>,
        tx: Transaction,
        audit: Vec<AuditEvent>,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        self.put_many(repo, &objects).await?;
        let entries = self.transact(repo, tx).await?;
        if !audit.is_empty() {
            // The ref moved: failing now would make the writer commit its change twice. An
            // audit log that cannot be written is an emergency for operators, not for it.
            if let Err(error) = self.append_many(audit).await {
                tracing::error!(%error, "the ref moved but its audit events were not written");
            }
        }
        Ok(entries)
    }
}
