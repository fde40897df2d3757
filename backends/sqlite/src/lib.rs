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
mod checkpoint;
mod errors;
mod objects;
mod prune;
mod publish;
mod records;
mod refs;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use pangolin_records::ChainHash;
use pangolin_store::{BackendError, BackendErrorKind};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::{ConnectOptions, Connection};
use tokio::sync::Mutex;

pub(crate) use errors::classify;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Objects, refs, records and the audit log in one SQLite database file.
#[derive(Debug)]
pub struct SqliteBackend {
    /// Reads.
    pool: SqlitePool,
    /// The writer's connections, held for the whole of every write transaction, with what the
    /// writer remembers between them.
    write_lock: Arc<Mutex<Writer>>,
    /// Copies the write-ahead log into the database file while writers queue.
    checkpointer: checkpoint::Checkpointer,
}

/// The one writer of the file: its connections and what it remembers between transactions.
///
/// Writes go through connections of their own rather than the pool: a pooled connection is
/// pinged on every return (one more round trip to its thread per write), and one that did not
/// write last has lost its page cache to the writer that did.
#[derive(Debug)]
pub(crate) struct Writer {
    /// `None` once the backend is closed.
    connections: Option<Connections>,
    /// A write transaction may still be open: a write was dropped before it finished (its
    /// task cancelled). The next write rolls it back before it begins.
    unfinished: bool,
    /// The audit chain's last record after the last write that committed, so an append need
    /// not read it first. Only a hint: appends check it in the statement that inserts.
    pub(crate) audit_head: AuditHead,
}

#[derive(Debug)]
struct Connections {
    /// Ref moves, records and audit appends: `synchronous = FULL`.
    durable: SqliteConnection,
    /// Object writes: `synchronous = NORMAL`, made durable by the next durable write.
    objects: SqliteConnection,
}

/// Which of the writer's connections a write uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    Durable,
    Objects,
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
        // round trip to the connection's thread on every read.
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
        let mut durable = options.connect().await.map_err(|e| classify("open", e))?;
        publish::create_guard(&mut durable).await?;
        let checkpoints = options.connect().await.map_err(|e| classify("open", e))?;
        let objects = options
            .synchronous(SqliteSynchronous::Normal)
            .connect()
            .await
            .map_err(|e| classify("open", e))?;
        let write_lock = Arc::new(Mutex::new(Writer {
            connections: Some(Connections { durable, objects }),
            unfinished: false,
            audit_head: AuditHead::Unknown,
        }));
        let checkpointer = checkpoint::Checkpointer::start(checkpoints, write_lock.clone());
        Ok(Self {
            pool,
            write_lock,
            checkpointer,
        })
    }

    /// The connection pool, for operators' tools and tests.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Closes the writer's connections and the pool; later writes fail.
    pub async fn close(&self) {
        self.checkpointer.stop().await;
        let connections = self.write_lock.lock().await.connections.take();
        if let Some(Connections { durable, objects }) = connections {
            // Closing rolls back whatever a dropped write left open.
            let _ = objects.close().await;
            let _ = durable.close().await;
        }
        self.pool.close().await;
    }

    /// Starts a write transaction (`BEGIN IMMEDIATE`) on the connection for `durability`
    /// (object writes are made durable by the next durable write), serialized with every
    /// other write of this backend for as long as the returned guard lives.
    pub(crate) async fn begin_write(
        &self,
        durability: Durability,
        operation: &'static str,
    ) -> Result<Write<'_>, BackendError> {
        let mut write = self.lock_writer(durability, operation).await?;
        write.begin().await?;
        Ok(write)
    }

    /// Takes the writer, not yet in a transaction, after rolling back what a dropped write
    /// left open.
    pub(crate) async fn lock_writer(
        &self,
        durability: Durability,
        operation: &'static str,
    ) -> Result<Write<'_>, BackendError> {
        let mut writer = self.write_lock.lock().await;
        let Writer {
            connections,
            unfinished,
            audit_head,
        } = &mut *writer;
        let Some(connections) = connections.as_mut() else {
            return Err(BackendError::new(
                BackendErrorKind::Unavailable,
                operation,
                "the database is closed",
            ));
        };
        if *unfinished {
            // "No transaction is active" is the answer when the dropped write had committed
            // or never begun: either way the connection is clean after this.
            for conn in [&mut connections.durable, &mut connections.objects] {
                let _ = sqlx::raw_sql("ROLLBACK").execute(conn).await;
            }
            *unfinished = false;
            // Whether the dropped write appended to the chain is unknown.
            *audit_head = AuditHead::Unknown;
        }
        Ok(Write {
            writer,
            durability,
            audit_head: None,
            operation,
        })
    }
}

/// The writer, held: an open write transaction once begun, and the lock that serializes it.
pub(crate) struct Write<'a> {
    writer: tokio::sync::MutexGuard<'a, Writer>,
    durability: Durability,
    /// The audit chain's head once this transaction commits, when it appended to it.
    audit_head: Option<AuditHead>,
    operation: &'static str,
}

impl Write<'_> {
    /// The connection this write runs on.
    pub(crate) fn conn(&mut self) -> Result<&mut SqliteConnection, BackendError> {
        let durability = self.durability;
        let connections = self.writer.connections.as_mut().ok_or_else(|| {
            BackendError::new(
                BackendErrorKind::Unavailable,
                self.operation,
                "the database is closed",
            )
        })?;
        Ok(match durability {
            Durability::Durable => &mut connections.durable,
            Durability::Objects => &mut connections.objects,
        })
    }

    /// Runs `BEGIN IMMEDIATE`.
    pub(crate) async fn begin(&mut self) -> Result<(), BackendError> {
        let operation = self.operation;
        self.begins_itself();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(self.conn()?)
            .await
            .map_err(|e| classify(operation, e))?;
        Ok(())
    }

    /// The audit chain's head as the last committed write left it.
    pub(crate) fn audit_head(&self) -> AuditHead {
        self.writer.audit_head
    }

    /// Records that this transaction's appends end the audit chain at `head`.
    pub(crate) fn appended(&mut self, head: (u64, ChainHash)) {
        self.audit_head = Some(AuditHead::Known(Some(head)));
    }

    /// Marks a transaction as about to begin (by [`begin`](Self::begin), or by a batch that
    /// runs its own `BEGIN` and `COMMIT`): until [`committed`](Self::committed) or
    /// [`roll_back`](Self::roll_back), a drop leaves it to the next write to roll back.
    pub(crate) fn begins_itself(&mut self) {
        self.writer.unfinished = true;
    }

    /// The transaction committed.
    pub(crate) fn committed(&mut self) {
        self.writer.unfinished = false;
        if let Some(head) = self.audit_head {
            self.writer.audit_head = head;
        }
    }

    /// Rolls back whatever is open now, while the lock is held, so the next writer does not
    /// find it open. Rolled back, the chain ends where the last commit left it; if the
    /// rollback failed, nobody knows where.
    pub(crate) async fn roll_back(&mut self) {
        let rolled_back = match self.conn() {
            Ok(conn) => sqlx::raw_sql("ROLLBACK").execute(conn).await.is_ok(),
            Err(_) => false,
        };
        if rolled_back {
            self.writer.unfinished = false;
        } else {
            self.writer.audit_head = AuditHead::Unknown;
        }
    }

    async fn commit(&mut self) -> Result<(), BackendError> {
        let operation = self.operation;
        sqlx::query("COMMIT")
            .execute(self.conn()?)
            .await
            .map_err(|e| classify(operation, e))?;
        Ok(())
    }

    /// Commits when `result` is a success, rolls back otherwise; the lock is released after.
    pub(crate) async fn finish<T, E: From<BackendError>>(
        mut self,
        result: Result<T, E>,
    ) -> Result<T, E> {
        match result {
            Ok(value) => match self.commit().await {
                Ok(()) => {
                    self.committed();
                    Ok(value)
                }
                Err(e) => {
                    self.roll_back().await;
                    self.writer.audit_head = AuditHead::Unknown;
                    Err(E::from(e))
                }
            },
            Err(error) => {
                self.roll_back().await;
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
