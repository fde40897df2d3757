//! Branch and tag heads answered from memory, for a server that is the only writer of its
//! database (the embedded SQLite file, RocksDB): every ref change goes through this store.
//!
//! A read that misses asks the database and keeps the answer only if no ref change finished
//! while it was asking (a global generation number tells); every ref change, landed or not,
//! drops the heads it names and bumps the generation. So a cached head is always one the
//! database held after the last change this process made, and a change is visible to the very
//! next read. With several servers on one database (PostgreSQL) this cache must not be used:
//! another server's changes would not drop the heads.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
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
use parking_lot::Mutex;

use crate::store::Store;

type Key = (RepoId, Reference);

/// A [`Store`] with cached ref heads over one that only this process writes.
pub struct SoleWriterRefCache {
    inner: Arc<dyn Store>,
    heads: Mutex<HashMap<Key, Option<ObjectId>>>,
    generation: AtomicU64,
}

impl std::fmt::Debug for SoleWriterRefCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SoleWriterRefCache")
            .field("cached", &self.heads.lock().len())
            .finish()
    }
}

impl SoleWriterRefCache {
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Self {
            inner,
            heads: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(0),
        }
    }

    /// Forgets the heads `tx` names; called after the change, whatever its outcome.
    fn forget(&self, repo: &RepoId, tx_refs: &[Reference]) {
        let mut heads = self.heads.lock();
        self.generation.fetch_add(1, Ordering::SeqCst);
        for reference in tx_refs {
            heads.remove(&(repo.clone(), reference.clone()));
        }
    }
}

fn refs_of(tx: &Transaction) -> Vec<Reference> {
    tx.updates.iter().map(|u| u.reference.clone()).collect()
}

#[async_trait]
impl RefStore for SoleWriterRefCache {
    async fn get_ref(
        &self,
        repo: &RepoId,
        reference: &Reference,
    ) -> Result<Option<ObjectId>, BackendError> {
        let key = (repo.clone(), reference.clone());
        if let Some(head) = self.heads.lock().get(&key) {
            return Ok(*head);
        }
        let seen = self.generation.load(Ordering::SeqCst);
        let head = self.inner.get_ref(repo, reference).await?;
        let mut heads = self.heads.lock();
        // A change finished while the database was asked: its answer may be older than it.
        if self.generation.load(Ordering::SeqCst) == seen {
            heads.insert(key, head);
        }
        Ok(head)
    }

    async fn list_refs(&self, repo: &RepoId, query: &RefQuery) -> Result<RefPage, BackendError> {
        self.inner.list_refs(repo, query).await
    }

    async fn transact(
        &self,
        repo: &RepoId,
        tx: Transaction,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        let refs = refs_of(&tx);
        let result = self.inner.transact(repo, tx).await;
        self.forget(repo, &refs);
        result
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
impl Publish for SoleWriterRefCache {
    async fn publish(
        &self,
        repo: &RepoId,
        objects: Vec<RawObject>,
        tx: Transaction,
        audit: Vec<AuditEvent>,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        let refs = refs_of(&tx);
        let result = self.inner.publish(repo, objects, tx, audit).await;
        self.forget(repo, &refs);
        result
    }
}

#[async_trait]
impl Prune for SoleWriterRefCache {
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
        self.inner.delete_objects(repo, moves, ids).await
    }

    async fn drop_repo(&self, repo: &RepoId) -> Result<(), BackendError> {
        let result = self.inner.drop_repo(repo).await;
        let mut heads = self.heads.lock();
        self.generation.fetch_add(1, Ordering::SeqCst);
        heads.retain(|(r, _), _| r != repo);
        result
    }
}

#[async_trait]
impl ObjectStore for SoleWriterRefCache {
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
impl RecordStore for SoleWriterRefCache {
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
impl AuditLog for SoleWriterRefCache {
    async fn append(&self, event: AuditEvent) -> Result<AuditRecord, BackendError> {
        self.inner.append(event).await
    }

    async fn append_many(&self, events: Vec<AuditEvent>) -> Result<Vec<AuditRecord>, BackendError> {
        self.inner.append_many(events).await
    }

    async fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, BackendError> {
        self.inner.query(query).await
    }

    async fn range(&self, from: u64, to: u64) -> Result<Vec<AuditRecord>, BackendError> {
        self.inner.range(from, to).await
    }
}
