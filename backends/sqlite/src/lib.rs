//! The SQLite backend: the embedded default. One database file in WAL mode, the schema managed
//! by migrations, every multi-row change in one transaction.
//!
//! Durability: ref moves, records and audit appends commit with `synchronous = FULL`, so one
//! that returned has reached the disk. Object writes commit with `NORMAL` on connections of
//! their own: they may sit in the write-ahead log unsynced, but the log is one file written in
//! order, so the fsync of any later durable commit (the ref move that publishes the objects)
//! makes them durable too, and a crash can never keep a ref move while losing the objects it
//! points to. That saves two of the three fsyncs of a catalog commit. Writes are serialized
//! inside the process by one lock, so writers queue instead of spinning on SQLite's busy
//! handler; reads run concurrently on the pool.

mod audit;
mod errors;
mod objects;
mod prune;
mod publish;
mod records;
mod refs;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use pangolin_records::ChainHash;
use pangolin_store::{BackendError, BackendErrorKind};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use tokio::sync::Mutex;

pub(crate) use errors::classify;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Objects, refs, records and the audit log in one SQLite database file.
#[derive(Debug)]
pub struct SqliteBackend {
    /// Reads, and writes that must be durable when they return.
    pool: SqlitePool,
    /// Object writes: synced by the next durable write (see the module documentation).
    object_pool: SqlitePool,
    /// Held for the whole of every write transaction, with what writers remember between
    /// them.
    write_lock: Mutex<Writer>,
}

/// What the one writer of the file remembers between its transactions.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    /// The audit chain's last record after the last write that committed, so an append need
    /// not read it first. Only a hint: appends check it in the statement that inserts.
    pub(crate) audit_head: AuditHead,
}

/// The audit chain's last record, as far as this process knows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum AuditHead {
    /// Not known (at start, or after a write that did not commit): read it.
    #[default]
    Unknown,
    /// `None`: the log is empty.
    Known(Option<(u64, ChainHash)>),
}

impl SqliteBackend {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, BackendError> {
        Self::connect(SqliteConnectOptions::new().filename(path.as_ref())).await
    }

    /// Opens a database from a `sqlite:` URL (`sqlite://path/to/file.db`).
    pub async fn open_url(url: &str) -> Result<Self, BackendError> {
        Self::connect(SqliteConnectOptions::from_str(url).map_err(|e| classify("open", e))?).await
    }

    async fn connect(options: SqliteConnectOptions) -> Result<Self, BackendError> {
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(10))
            // Checkpoint the write-ahead log every ~40 MiB instead of every ~4 MiB: fewer,
            // larger checkpoints stall fewer commits.
            .pragma("wal_autocheckpoint", "10000")
            .foreign_keys(true);
        // No ping before each acquire: a file does not hang up, and every ping is one more
        // round trip to the connection's thread on every read and write.
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options.clone())
            .await
            .map_err(|e| classify("open", e))?;
        MIGRATOR.run(&pool).await.map_err(|e| {
            BackendError::new(
                BackendErrorKind::Other,
                "migrate",
                "applying the schema migrations failed",
            )
            .with_source(e)
        })?;
        let object_pool = SqlitePoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options.synchronous(SqliteSynchronous::Normal))
            .await
            .map_err(|e| classify("open", e))?;
        Ok(Self {
            pool,
            object_pool,
            write_lock: Mutex::new(Writer::default()),
        })
    }

    /// The connection pool, for operators' tools and tests.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Closes both connection pools.
    pub async fn close(&self) {
        self.object_pool.close().await;
        self.pool.close().await;
    }

    /// Starts a durable write transaction (`BEGIN IMMEDIATE`), serialized with every other
    /// write of this backend for as long as the returned guard lives.
    pub(crate) async fn begin_write(
        &self,
        operation: &'static str,
    ) -> Result<Write<'_>, BackendError> {
        self.begin_on(&self.pool, operation).await
    }

    /// The same for object writes, which the next durable write makes durable.
    pub(crate) async fn begin_object_write(
        &self,
        operation: &'static str,
    ) -> Result<Write<'_>, BackendError> {
        self.begin_on(&self.object_pool, operation).await
    }

    async fn begin_on(
        &self,
        pool: &SqlitePool,
        operation: &'static str,
    ) -> Result<Write<'_>, BackendError> {
        let guard = self.write_lock.lock().await;
        let tx = pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| classify(operation, e))?;
        Ok(Write {
            tx,
            writer: guard,
            audit_head: None,
            operation,
        })
    }
}

/// An open write transaction and the lock that serializes it.
pub(crate) struct Write<'a> {
    pub(crate) tx: sqlx::Transaction<'static, sqlx::Sqlite>,
    writer: tokio::sync::MutexGuard<'a, Writer>,
    /// The audit chain's head once this transaction commits, when it appended to it.
    audit_head: Option<AuditHead>,
    operation: &'static str,
}

impl Write<'_> {
    /// The audit chain's head as the last committed write left it.
    pub(crate) fn audit_head(&self) -> AuditHead {
        self.writer.audit_head
    }

    /// Records that this transaction's appends end the audit chain at `head`.
    pub(crate) fn appended(&mut self, head: (u64, ChainHash)) {
        self.audit_head = Some(AuditHead::Known(Some(head)));
    }

    /// Commits when `result` is a success, rolls back otherwise; the lock is released after.
    pub(crate) async fn finish<T, E: From<BackendError>>(
        mut self,
        result: Result<T, E>,
    ) -> Result<T, E> {
        let operation = self.operation;
        match result {
            Ok(value) => match self.tx.commit().await {
                Ok(()) => {
                    if let Some(head) = self.audit_head {
                        self.writer.audit_head = head;
                    }
                    Ok(value)
                }
                Err(e) => {
                    self.writer.audit_head = AuditHead::Unknown;
                    Err(E::from(classify(operation, e)))
                }
            },
            Err(error) => {
                // Roll back now, while the lock is held, so the next writer does not wait on a
                // transaction that is only rolled back lazily.
                // Rolled back, the chain ends where the last commit left it; if the rollback
                // failed, nobody knows where.
                if self.tx.rollback().await.is_err() {
                    self.writer.audit_head = AuditHead::Unknown;
                }
                Err(error)
            }
        }
    }
}

/// Converts between the store's unsigned counters and SQLite's signed integers.
pub(crate) fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(crate) fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}
