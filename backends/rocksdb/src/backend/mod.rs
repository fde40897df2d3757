//! The backend: column families, key layouts, and what every trait's implementation shares.

mod audit;
mod objects;
mod prune;
mod records;
mod refs;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use pangolin_records::{
    AuditEvent, AuditLog, AuditQuery, AuditRecord, ChainHash, ExpectedVersion, Record, RecordError,
    RecordKey, RecordPage, RecordStore,
};
use pangolin_refs::{
    LogQuery, RefKind, RefLogEntry, RefName, RefPage, RefQuery, RefStore, Reference, RepoLogQuery,
    TransactError, Transaction,
};
use pangolin_store::{
    BackendError, BackendErrorKind, HashPrefix, ObjectId, ObjectKind, ObjectStore, RawObject,
    RepoId, Timestamp, codec,
};
use parking_lot::Mutex;
use rocksdb::{
    ColumnFamilyDescriptor, DB, Direction, IteratorMode, Options, WriteBatch, WriteOptions,
};
use serde::{Deserialize, Serialize};

const OBJECTS: &str = "objects";
const REFS: &str = "refs";
/// Ref-log entries by (ref, sequence).
const REF_LOG: &str = "ref_log";
/// The same entries by (ref, time, sequence): "what did the ref hold at T" is one seek.
const REF_LOG_TIME: &str = "ref_log_time";
/// The same entries by (repository, sequence): a repository's whole log in order.
const REF_LOG_SEQUENCE: &str = "ref_log_sequence";
const RECORDS: &str = "records";
const AUDIT: &str = "audit";
/// Counters: the next ref-log sequence number, the audit chain head.
const META: &str = "meta";
const FAMILIES: [&str; 8] = [
    OBJECTS,
    REFS,
    REF_LOG,
    REF_LOG_TIME,
    REF_LOG_SEQUENCE,
    RECORDS,
    AUDIT,
    META,
];

/// Followed by the repository: the next ref-log sequence number of that repository.
const REF_SEQUENCE: &[u8] = b"ref_sequence\0";
const AUDIT_HEAD: &[u8] = b"audit_head";
/// Present once `REF_LOG_SEQUENCE` holds every entry (databases made before it existed are
/// filled from `REF_LOG` when first opened).
const REF_LOG_SEQUENCE_FILLED: &[u8] = b"ref_log_sequence_filled";

/// Objects, refs, records and the audit log in one RocksDB database.
#[derive(Clone)]
pub struct RocksBackend {
    inner: Arc<Inner>,
}

struct Inner {
    db: DB,
    /// Ref transactions of one repository run one at a time; other repositories do not wait.
    repo_locks: Mutex<HashMap<RepoId, Arc<Mutex<()>>>>,
    records_lock: Mutex<()>,
    audit_lock: Mutex<()>,
}

impl std::fmt::Debug for RocksBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksBackend")
            .field("path", &self.inner.db.path())
            .finish()
    }
}

fn classify(operation: &'static str, error: rocksdb::Error) -> BackendError {
    let kind = match error.kind() {
        rocksdb::ErrorKind::Corruption => BackendErrorKind::Corrupt,
        rocksdb::ErrorKind::IOError
        | rocksdb::ErrorKind::TimedOut
        | rocksdb::ErrorKind::Busy
        | rocksdb::ErrorKind::TryAgain
        | rocksdb::ErrorKind::ShutdownInProgress => BackendErrorKind::Unavailable,
        _ => BackendErrorKind::Other,
    };
    BackendError::new(kind, operation, format!("RocksDB: {error}")).with_source(error)
}

fn corrupt(operation: &'static str, what: &str) -> BackendError {
    BackendError::new(
        BackendErrorKind::Corrupt,
        operation,
        format!("stored data has {what}"),
    )
}

fn joined(error: tokio::task::JoinError, operation: &'static str) -> BackendError {
    BackendError::new(
        BackendErrorKind::Other,
        operation,
        format!("storage task failed: {error}"),
    )
}

fn repo_prefix(repo: &RepoId) -> Vec<u8> {
    let mut key = repo.as_str().as_bytes().to_vec();
    key.push(0);
    key
}

fn ref_key(repo: &RepoId, reference: &Reference) -> Vec<u8> {
    let mut key = repo_prefix(repo);
    key.push(reference.kind.code());
    key.extend_from_slice(reference.name.as_str().as_bytes());
    key
}

fn reference_from_key(
    key: &[u8],
    prefix_len: usize,
    operation: &'static str,
) -> Result<Reference, BackendError> {
    let (&kind, name) = key[prefix_len..]
        .split_first()
        .ok_or_else(|| corrupt(operation, "a short ref key"))?;
    let kind = RefKind::from_code(kind).ok_or_else(|| corrupt(operation, "an unknown ref kind"))?;
    let name = std::str::from_utf8(name)
        .map_err(|_| corrupt(operation, "a ref name that is not UTF-8"))?;
    let name = RefName::new(name).map_err(|_| corrupt(operation, "an invalid ref name"))?;
    Ok(Reference { kind, name })
}

/// `ref key \0` then the big-endian fields: entries of one ref sort by them.
fn log_key(repo: &RepoId, reference: &Reference, fields: &[u64]) -> Vec<u8> {
    let mut key = ref_key(repo, reference);
    key.push(0);
    for field in fields {
        key.extend_from_slice(&field.to_be_bytes());
    }
    key
}

/// `repo \0` then the big-endian sequence: a repository's entries sort by sequence.
fn sequence_key(repo: &RepoId, sequence: u64) -> Vec<u8> {
    let mut key = repo_prefix(repo);
    key.extend_from_slice(&sequence.to_be_bytes());
    key
}

/// Times as unsigned big-endian that sort like the signed values.
fn time_order(time: Timestamp) -> u64 {
    (time.as_millis() as u64) ^ (1 << 63)
}

fn id_from(bytes: &[u8], operation: &'static str) -> Result<ObjectId, BackendError> {
    ObjectId::from_slice(bytes).ok_or_else(|| corrupt(operation, "an id that is not 32 bytes"))
}

fn u64_from(bytes: &[u8], operation: &'static str) -> Result<u64, BackendError> {
    let bytes: [u8; 8] = bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| corrupt(operation, "a short counter"))?;
    Ok(u64::from_be_bytes(bytes))
}

/// A row of the objects family: `repo \0 id` → kind byte and body.
pub(crate) type ObjectRow = (Vec<u8>, Vec<u8>);

/// A key and its value, as RocksDB iterators yield them.
type KeyValue = (Box<[u8]>, Box<[u8]>);

/// A ref-log entry as stored (the ref and sequence are in the key).
#[derive(Serialize, Deserialize)]
struct StoredLogEntry {
    sequence: u64,
    reference: Reference,
    old: Option<ObjectId>,
    new: Option<ObjectId>,
    principal: String,
    message: String,
    time: Timestamp,
}

impl From<StoredLogEntry> for RefLogEntry {
    fn from(e: StoredLogEntry) -> Self {
        Self {
            sequence: e.sequence,
            reference: e.reference,
            old: e.old,
            new: e.new,
            principal: e.principal,
            message: e.message,
            time: e.time,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct StoredAudit {
    sequence: u64,
    event: AuditEvent,
    previous: ChainHash,
    hash: ChainHash,
}

impl RocksBackend {
    /// Opens (creating if needed) the database directory at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, BackendError> {
        let mut options = Options::default();
        options.create_if_missing(true);
        options.create_missing_column_families(true);
        let families = FAMILIES
            .iter()
            .map(|name| ColumnFamilyDescriptor::new(*name, Options::default()));
        let db =
            DB::open_cf_descriptors(&options, path, families).map_err(|e| classify("open", e))?;
        let inner = Inner {
            db,
            repo_locks: Mutex::new(HashMap::new()),
            records_lock: Mutex::new(()),
            audit_lock: Mutex::new(()),
        };
        inner.fill_sequence_index()?;
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Runs blocking RocksDB work off the async threads.
    async fn blocking<T: Send + 'static>(
        &self,
        operation: &'static str,
        work: impl FnOnce(&Inner) -> T + Send + 'static,
    ) -> Result<T, BackendError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || work(&inner))
            .await
            .map_err(|e| joined(e, operation))
    }
}

impl Inner {
    fn cf(&self, name: &'static str) -> Result<&rocksdb::ColumnFamily, BackendError> {
        self.db
            .cf_handle(name)
            .ok_or_else(|| corrupt("open", "a missing column family"))
    }

    fn get(
        &self,
        family: &'static str,
        key: &[u8],
        operation: &'static str,
    ) -> Result<Option<Vec<u8>>, BackendError> {
        self.db
            .get_cf(self.cf(family)?, key)
            .map_err(|e| classify(operation, e))
    }

    /// Writes `batch` and waits for the write-ahead log to reach the disk.
    fn write_durably(
        &self,
        batch: WriteBatch,
        operation: &'static str,
    ) -> Result<(), BackendError> {
        let mut options = WriteOptions::default();
        options.set_sync(true);
        self.db
            .write_opt(batch, &options)
            .map_err(|e| classify(operation, e))
    }

    /// Entries of `family` whose keys start with `prefix`, from `start` on (or the prefix).
    fn scan(
        &self,
        family: &'static str,
        prefix: &[u8],
        start: &[u8],
        operation: &'static str,
    ) -> Result<impl Iterator<Item = Result<KeyValue, BackendError>> + '_, BackendError> {
        let prefix = prefix.to_vec();
        let iter = self.db.iterator_cf(
            self.cf(family)?,
            IteratorMode::From(start, Direction::Forward),
        );
        Ok(iter
            .map(move |item| item.map_err(|e| classify(operation, e)))
            .take_while(move |item| item.as_ref().map_or(true, |(k, _)| k.starts_with(&prefix))))
    }

    /// Indexes every ref-log entry by repository and sequence, once, for databases written
    /// before that index existed. Runs before the database is shared, so nothing writes
    /// meanwhile.
    fn fill_sequence_index(&self) -> Result<(), BackendError> {
        const OP: &str = "open";
        if self.get(META, REF_LOG_SEQUENCE_FILLED, OP)?.is_some() {
            return Ok(());
        }
        let mut batch = WriteBatch::default();
        for item in self.db.iterator_cf(self.cf(REF_LOG)?, IteratorMode::Start) {
            let (key, value) = item.map_err(|e| classify(OP, e))?;
            let entry: StoredLogEntry =
                codec::decode(&value).map_err(|_| corrupt(OP, "an undecodable ref-log entry"))?;
            let repo = key
                .iter()
                .position(|b| *b == 0)
                .and_then(|end| std::str::from_utf8(&key[..end]).ok())
                .and_then(|name| RepoId::new(name).ok())
                .ok_or_else(|| corrupt(OP, "a ref-log key without a repository"))?;
            batch.put_cf(
                self.cf(REF_LOG_SEQUENCE)?,
                sequence_key(&repo, entry.sequence),
                &value,
            );
        }
        batch.put_cf(self.cf(META)?, REF_LOG_SEQUENCE_FILLED, []);
        self.write_durably(batch, OP)
    }

    fn repo_lock(&self, repo: &RepoId) -> Arc<Mutex<()>> {
        self.repo_locks
            .lock()
            .entry(repo.clone())
            .or_default()
            .clone()
    }

    /// Applies `tx`, writing `objects` (rows of the objects family) in the same batch.
    fn transact(
        &self,
        repo: &RepoId,
        tx: Transaction,
        objects: &[ObjectRow],
        audit: Vec<AuditEvent>,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        const OP: &str = "refs.transact";
        let lock = self.repo_lock(repo);
        let _guard = lock.lock();
        let mut olds = Vec::with_capacity(tx.updates.len());
        for update in &tx.updates {
            let actual = self
                .get(REFS, &ref_key(repo, &update.reference), OP)?
                .map(|v| id_from(&v, OP))
                .transpose()?;
            Transaction::check(update, actual)?;
            olds.push(actual);
        }
        // Sequence numbers count per repository, under the repository's lock.
        let mut counter = REF_SEQUENCE.to_vec();
        counter.extend_from_slice(&repo_prefix(repo));
        let mut sequence = self
            .get(META, &counter, OP)?
            .map(|v| u64_from(&v, OP))
            .transpose()?
            .unwrap_or(1);
        let mut batch = WriteBatch::default();
        let objects_cf = self.cf(OBJECTS)?;
        for (key, value) in objects {
            batch.put_cf(objects_cf, key, value);
        }
        let mut entries = Vec::with_capacity(tx.updates.len());
        for (update, old) in tx.updates.iter().zip(olds) {
            let key = ref_key(repo, &update.reference);
            let new = update.target.new_value();
            match new {
                Some(id) => batch.put_cf(self.cf(REFS)?, &key, id.as_bytes()),
                None => batch.delete_cf(self.cf(REFS)?, &key),
            }
            let time = match self.last_log_entry(repo, &update.reference)? {
                Some(last) => tx.time.max(last.time),
                None => tx.time,
            };
            let entry = StoredLogEntry {
                sequence,
                reference: update.reference.clone(),
                old,
                new,
                principal: tx.principal.clone(),
                message: tx.message.clone(),
                time,
            };
            let value = codec::encode(&entry);
            batch.put_cf(
                self.cf(REF_LOG)?,
                log_key(repo, &update.reference, &[sequence]),
                &value,
            );
            batch.put_cf(
                self.cf(REF_LOG_TIME)?,
                log_key(repo, &update.reference, &[time_order(time), sequence]),
                &value,
            );
            batch.put_cf(
                self.cf(REF_LOG_SEQUENCE)?,
                sequence_key(repo, sequence),
                &value,
            );
            entries.push(RefLogEntry::from(entry));
            sequence += 1;
        }
        batch.put_cf(self.cf(META)?, &counter, sequence.to_be_bytes());
        // Lock order: the repository, then the audit chain (appends alone take only the
        // chain), so no two writers wait for each other in a cycle.
        let _audit = (!audit.is_empty()).then(|| self.audit_lock.lock());
        self.chain_audit(&mut batch, audit, OP)?;
        self.write_durably(batch, OP)?;
        Ok(entries)
    }

    fn last_log_entry(
        &self,
        repo: &RepoId,
        reference: &Reference,
    ) -> Result<Option<StoredLogEntry>, BackendError> {
        const OP: &str = "refs.log";
        let prefix = log_key(repo, reference, &[]);
        let start = log_key(repo, reference, &[u64::MAX]);
        let mut iter = self.db.iterator_cf(
            self.cf(REF_LOG)?,
            IteratorMode::From(&start, Direction::Reverse),
        );
        match iter.next() {
            Some(Ok((key, value))) if key.starts_with(&prefix) => {
                Ok(Some(codec::decode(&value).map_err(|_| {
                    corrupt(OP, "an undecodable ref-log entry")
                })?))
            }
            Some(Err(e)) => Err(classify(OP, e)),
            _ => Ok(None),
        }
    }
}
