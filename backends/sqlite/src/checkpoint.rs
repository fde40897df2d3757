//! Checkpoints of the write-ahead log while writers queue, so that no commit has to.
//!
//! SQLite copies its log into the database file (a checkpoint) in the commit that takes the log
//! past `wal_autocheckpoint` pages: that commit, and every writer queued behind it, waits for
//! the copy. And it starts the log over only when a write begins with every page of it copied,
//! which a stream of commits seldom leaves, so the log keeps growing back to that size. While
//! writers queue (a publish carries more than one request), a task of the backend copies the
//! log on a connection of its own beside them, then takes the writer for the moment it takes
//! to copy what was written meanwhile: the next write finds the log wholly copied and starts
//! it over, and the log never grows to the size at which a commit checkpoints. A lone writer
//! never wakes the task: beside it the copy would share the disk with every commit.

use std::sync::Arc;
use std::time::Duration;

use sqlx::SqliteConnection;
use tokio::sync::{Mutex, Notify};
use tokio::task::JoinHandle;

use crate::Writer;

/// At most one round of checkpoints this often while writers queue.
const INTERVAL: Duration = Duration::from_millis(200);

#[derive(Debug)]
pub(crate) struct Checkpointer {
    wake: Arc<Notify>,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Checkpointer {
    /// Starts the task on `conn`, a connection of its own to the database `writer` writes.
    pub(crate) fn start(conn: SqliteConnection, writer: Arc<Mutex<Writer>>) -> Self {
        let wake = Arc::new(Notify::new());
        let task = tokio::spawn(run(conn, writer, wake.clone()));
        Self {
            wake,
            task: std::sync::Mutex::new(Some(task)),
        }
    }

    /// Writers are queueing: checkpoint soon.
    pub(crate) fn writers_queue(&self) {
        self.wake.notify_one();
    }

    /// Stops the task and closes its connection.
    pub(crate) async fn stop(&self) {
        if let Some(task) = self.abort() {
            let _ = task.await;
        }
    }

    /// Aborts the task, if it still runs; its handle, to await the end.
    fn abort(&self) -> Option<JoinHandle<()>> {
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        task.abort();
        Some(task)
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.abort();
    }
}

async fn run(mut conn: SqliteConnection, writer: Arc<Mutex<Writer>>, wake: Arc<Notify>) {
    loop {
        wake.notified().await;
        tokio::time::sleep(INTERVAL).await;
        // The bulk of the log, beside the writers.
        if let Err(error) = checkpoint(&mut conn).await {
            tracing::warn!(%error, "checkpointing the write-ahead log failed");
            continue;
        }
        // What they wrote meanwhile, with them held off for that long only.
        let held = writer.lock().await;
        if held.connections.is_none() {
            return;
        }
        if let Err(error) = checkpoint(&mut conn).await {
            tracing::warn!(%error, "checkpointing the write-ahead log failed");
        }
        drop(held);
    }
}

async fn checkpoint(conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
    sqlx::raw_sql("PRAGMA wal_checkpoint(PASSIVE)")
        .execute(conn)
        .await
        .map(drop)
}
