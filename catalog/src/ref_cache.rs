//! Branch and tag heads answered from memory, for a server that is the only writer of its
//! database (the embedded SQLite file, RocksDB): every ref change goes through this store.
//!
//! A read that misses asks the database and keeps the answer only if no ref change finished
//! while it was asking (a global generation number tells). A change that landed leaves the
//! heads it set, so the next commit on a branch needs no read at all; changes landing at once
//! on one ref are told apart by their ref-log sequence numbers (the backend's commit order),
//! so an older one finishing last cannot leave its head. A change that failed drops the heads
//! it names, and so does a landed one that raced such a failure, since the failure may have
//! moved the ref. So a cached head is always one the database held after the last change this
//! process made, and a change is visible to the very next read. With several servers on one
//! database (PostgreSQL) this cache must not be used: another server's changes would not
//! drop the heads.

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
    heads: Mutex<HashMap<Key, Slot>>,
    generation: AtomicU64,
}

/// What is known of one ref.
#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    /// Its head (`Some(None)`: it does not exist); `None` when it must be read.
    head: Option<Option<ObjectId>>,
    /// The ref-log sequence number of the newest change seen landing on it.
    landed: Option<u64>,
    /// The generation at which a change of it last failed.
    failed: u64,
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

    /// Drops the heads of `refs`, named by a change that failed: it may have moved them.
    fn forget(&self, repo: &RepoId, refs: &[Reference]) {
        let mut heads = self.heads.lock();
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        for reference in refs {
            // Kept even for a ref never read: a change racing this one must see the failure.
            let slot = heads.entry((repo.clone(), reference.clone())).or_default();
            slot.head = None;
            slot.failed = generation;
        }
    }

    /// Keeps the heads a change that began at generation `started` left on `refs`, as its
    /// ref-log `entries` say; heads it may not have the last word on are dropped instead.
    fn landed(&self, repo: &RepoId, refs: &[Reference], started: u64, entries: &[RefLogEntry]) {
        let mut heads = self.heads.lock();
        self.generation.fetch_add(1, Ordering::SeqCst);
        for reference in refs {
            if let Some(slot) = heads.get_mut(&(repo.clone(), reference.clone())) {
                slot.head = None;
            }
        }
        for entry in entries {
            let slot = heads
                .entry((repo.clone(), entry.reference.clone()))
                .or_default();
            // A newer change landed first, or one failed while this one ran: read it.
            if slot.landed.is_none_or(|l| entry.sequence > l) && slot.failed <= started {
                slot.head = Some(entry.new);
                slot.landed = Some(entry.sequence);
            }
        }
    }

    /// Runs a ref change and records its outcome.
    async fn change<F>(&self, repo: &RepoId, tx_refs: Vec<Reference>, change: F) -> ChangeResult
    where
        F: Future<Output = ChangeResult>,
    {
        let started = self.generation.load(Ordering::SeqCst);
        let result = change.await;
        match &result {
            Ok(entries) => self.landed(repo, &tx_refs, started, entries),
            Err(_) => self.forget(repo, &tx_refs),
        }
        result
    }
}

type ChangeResult = Result<Vec<RefLogEntry>, TransactError>;

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
        if let Some(head) = self.heads.lock().get(&key).and_then(|slot| slot.head) {
            return Ok(head);
        }
        let seen = self.generation.load(Ordering::SeqCst);
        let head = self.inner.get_ref(repo, reference).await?;
        let mut heads = self.heads.lock();
        // A change finished while the database was asked: its answer may be older than it.
        if self.generation.load(Ordering::SeqCst) == seen {
            heads.entry(key).or_default().head = Some(head);
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
        self.change(repo, refs_of(&tx), self.inner.transact(repo, tx))
            .await
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
        self.change(repo, refs, self.inner.publish(repo, objects, tx, audit))
            .await
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

#[cfg(test)]
mod tests {
    use pangolin_backend_memory::MemoryBackend;
    use pangolin_refs::{Expected, RefName, RefUpdate, Target};

    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId::from_bytes([n; 32])
    }

    fn entry(main: &Reference, sequence: u64, new: u8) -> RefLogEntry {
        RefLogEntry {
            sequence,
            reference: main.clone(),
            old: None,
            new: Some(id(new)),
            principal: "ana".into(),
            message: "m".into(),
            time: Timestamp::from_millis(0),
        }
    }

    fn setup() -> (Arc<dyn Store>, SoleWriterRefCache, RepoId, Reference) {
        let inner: Arc<dyn Store> = Arc::new(MemoryBackend::new());
        let cache = SoleWriterRefCache::new(inner.clone());
        let main = Reference::branch(RefName::new("main").unwrap());
        (inner, cache, RepoId::new("acme.lake").unwrap(), main)
    }

    #[tokio::test]
    async fn a_landed_change_is_answered_from_memory() {
        let (inner, cache, repo, main) = setup();
        let create = |target, expected| Transaction {
            updates: vec![RefUpdate {
                reference: main.clone(),
                expected,
                target: Target::Set(target),
            }],
            principal: "ana".into(),
            message: "m".into(),
            time: Timestamp::from_millis(1),
        };
        cache
            .transact(&repo, create(id(1), Expected::Absent))
            .await
            .unwrap();
        // Moved behind the cache's back: the cache still answers what its change left, which
        // shows it did not read the database.
        inner
            .transact(&repo, create(id(2), Expected::Equals(id(1))))
            .await
            .unwrap();
        assert_eq!(cache.get_ref(&repo, &main).await.unwrap(), Some(id(1)));
        // A failed change drops the head: the next read asks the database.
        cache
            .transact(&repo, create(id(3), Expected::Equals(id(1))))
            .await
            .unwrap_err();
        assert_eq!(cache.get_ref(&repo, &main).await.unwrap(), Some(id(2)));
    }

    #[tokio::test]
    async fn an_older_change_finishing_last_does_not_leave_its_head() {
        let (_, cache, repo, main) = setup();
        let refs = [main.clone()];
        let started = cache.generation.load(Ordering::SeqCst);
        cache.landed(&repo, &refs, started, &[entry(&main, 8, 8)]);
        cache.landed(&repo, &refs, started, &[entry(&main, 7, 7)]);
        let slot = cache.heads.lock()[&(repo.clone(), main.clone())];
        assert_eq!(slot.head, None, "the older change may not leave its head");
        assert_eq!(slot.landed, Some(8));
        cache.landed(&repo, &refs, started, &[entry(&main, 9, 9)]);
        assert_eq!(cache.get_ref(&repo, &main).await.unwrap(), Some(id(9)));
    }

    #[tokio::test]
    async fn a_change_that_raced_a_failure_leaves_no_head() {
        let (_, cache, repo, main) = setup();
        let refs = [main.clone()];
        // Nothing is known of the ref yet: the failure is remembered all the same.
        let started = cache.generation.load(Ordering::SeqCst);
        // A change fails (it may have moved the ref) while another one runs and lands.
        cache.forget(&repo, &refs);
        cache.landed(&repo, &refs, started, &[entry(&main, 5, 5)]);
        let slot = cache.heads.lock()[&(repo.clone(), main.clone())];
        assert_eq!(slot.head, None, "the failure may have the last word");
        // A change that began after the failure leaves its head.
        let later = cache.generation.load(Ordering::SeqCst);
        cache.landed(&repo, &refs, later, &[entry(&main, 6, 6)]);
        assert_eq!(cache.get_ref(&repo, &main).await.unwrap(), Some(id(6)));
    }
}
