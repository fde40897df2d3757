//! A store whose publishes (and object deletes) wait at gates, so a test can hold a commit
//! between planning and landing, or a collection before it deletes, while other work goes on.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use pangolin_backend_memory::MemoryBackend;
use pangolin_records::{
    AuditEvent, AuditLog, AuditQuery, AuditRecord, ExpectedVersion, Record, RecordError, RecordKey,
    RecordPage, RecordStore,
};
use pangolin_refs::{
    LogQuery, ObjectQuery, Prune, Publish, RefLogEntry, RefMoves, RefPage, RefQuery, RefStore,
    Reference, TransactError, Transaction,
};
use pangolin_store::{
    BackendError, HashPrefix, ObjectId, ObjectKind, ObjectStore, RawObject, RepoId, Timestamp,
};
use tokio::sync::Semaphore;

/// A store whose publishes wait for a permit, so a test can hold one while others queue.
pub struct Gated {
    pub inner: Arc<MemoryBackend>,
    pub gate: Semaphore,
    pub publishes: AtomicUsize,
    /// Object deletes wait for a permit of their own.
    pub delete_gate: Semaphore,
    pub deletes: AtomicUsize,
}

impl Gated {
    pub fn new(inner: Arc<MemoryBackend>) -> Self {
        Self {
            inner,
            gate: Semaphore::new(0),
            publishes: AtomicUsize::new(0),
            delete_gate: Semaphore::new(0),
            deletes: AtomicUsize::new(0),
        }
    }
}

#[async_trait]
impl Publish for Gated {
    async fn publish(
        &self,
        repo: &RepoId,
        objects: Vec<RawObject>,
        tx: Transaction,
        audit: Vec<AuditEvent>,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        self.publishes.fetch_add(1, Ordering::SeqCst);
        self.gate.acquire().await.unwrap().forget();
        self.inner.publish(repo, objects, tx, audit).await
    }
}

#[async_trait]
impl RefStore for Gated {
    async fn get_ref(
        &self,
        repo: &RepoId,
        reference: &Reference,
    ) -> Result<Option<ObjectId>, BackendError> {
        self.inner.get_ref(repo, reference).await
    }
    async fn list_refs(&self, repo: &RepoId, query: &RefQuery) -> Result<RefPage, BackendError> {
        self.inner.list_refs(repo, query).await
    }
    async fn transact(
        &self,
        repo: &RepoId,
        tx: Transaction,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        self.inner.transact(repo, tx).await
    }
    async fn ref_log(
        &self,
        repo: &RepoId,
        reference: &Reference,
        query: LogQuery,
    ) -> Result<Vec<RefLogEntry>, BackendError> {
        self.inner.ref_log(repo, reference, query).await
    }
    async fn repository_log(
        &self,
        repo: &RepoId,
        query: pangolin_refs::RepoLogQuery,
    ) -> Result<Vec<RefLogEntry>, BackendError> {
        self.inner.repository_log(repo, query).await
    }

    async fn ref_log_at(
        &self,
        repo: &RepoId,
        reference: &Reference,
        time: Timestamp,
    ) -> Result<Option<RefLogEntry>, BackendError> {
        self.inner.ref_log_at(repo, reference, time).await
    }
}

#[async_trait]
impl Prune for Gated {
    async fn ref_moves(&self, repo: &RepoId) -> Result<RefMoves, BackendError> {
        self.inner.ref_moves(repo).await
    }

    async fn list_objects(
        &self,
        repo: &RepoId,
        query: ObjectQuery,
    ) -> Result<Vec<(ObjectId, ObjectKind)>, BackendError> {
        self.inner.list_objects(repo, query).await
    }

    async fn delete_objects(
        &self,
        repo: &RepoId,
        moves: RefMoves,
        ids: &[ObjectId],
    ) -> Result<bool, BackendError> {
        self.deletes.fetch_add(1, Ordering::SeqCst);
        self.delete_gate.acquire().await.unwrap().forget();
        self.inner.delete_objects(repo, moves, ids).await
    }

    async fn drop_repo(&self, repo: &RepoId) -> Result<(), BackendError> {
        self.inner.drop_repo(repo).await
    }
}

#[async_trait]
impl ObjectStore for Gated {
    async fn get(&self, repo: &RepoId, id: &ObjectId) -> Result<Option<RawObject>, BackendError> {
        self.inner.get(repo, id).await
    }
    async fn get_many(
        &self,
        repo: &RepoId,
        ids: &[ObjectId],
    ) -> Result<Vec<Option<RawObject>>, BackendError> {
        self.inner.get_many(repo, ids).await
    }
    async fn put_many(&self, repo: &RepoId, objects: &[RawObject]) -> Result<(), BackendError> {
        self.inner.put_many(repo, objects).await
    }
    async fn contains(&self, repo: &RepoId, id: &ObjectId) -> Result<bool, BackendError> {
        self.inner.contains(repo, id).await
    }
    async fn find_by_prefix(
        &self,
        repo: &RepoId,
        prefix: &HashPrefix,
        limit: usize,
    ) -> Result<Vec<ObjectId>, BackendError> {
        self.inner.find_by_prefix(repo, prefix, limit).await
    }
}

#[async_trait]
impl RecordStore for Gated {
    async fn get_record(&self, key: &RecordKey) -> Result<Option<Record>, BackendError> {
        self.inner.get_record(key).await
    }
    async fn put_record(
        &self,
        key: &RecordKey,
        expected: ExpectedVersion,
        value: Bytes,
    ) -> Result<u64, RecordError> {
        self.inner.put_record(key, expected, value).await
    }
    async fn delete_record(&self, key: &RecordKey, version: u64) -> Result<(), RecordError> {
        self.inner.delete_record(key, version).await
    }
    async fn list_records(
        &self,
        prefix: &str,
        after: Option<&RecordKey>,
        limit: usize,
    ) -> Result<RecordPage, BackendError> {
        self.inner.list_records(prefix, after, limit).await
    }
}

#[async_trait]
impl AuditLog for Gated {
    async fn append(&self, event: AuditEvent) -> Result<AuditRecord, BackendError> {
        self.inner.append(event).await
    }
    async fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, BackendError> {
        self.inner.query(query).await
    }
    async fn range(&self, from: u64, to: u64) -> Result<Vec<AuditRecord>, BackendError> {
        self.inner.range(from, to).await
    }
}
