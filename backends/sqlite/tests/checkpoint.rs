//! The write-ahead log is copied into the database file and started over while writers queue
//! (publishes carrying several requests' events), and never because of a lone writer.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pangolin_backend_sqlite::SqliteBackend;
use pangolin_records::AuditEvent;
use pangolin_refs::{Expected, Publish, RefUpdate, Target, Transaction};
use pangolin_store::{RepoId, Timestamp};
use pangolin_testkit::audit::event;
use pangolin_testkit::{branch, commit_id, fresh_repo, object};

fn fresh_path() -> PathBuf {
    std::env::temp_dir().join(format!(
        "pangolin-checkpoint-{}.db",
        uuid::Uuid::new_v4().simple()
    ))
}

fn wal(db: &Path) -> PathBuf {
    PathBuf::from(format!("{}-wal", db.display()))
}

/// The page count the database file's own header gives: what checkpoints copied into it.
fn pages_in_file(db: &Path) -> u32 {
    let header = std::fs::read(db).unwrap();
    u32::from_be_bytes(header[28..32].try_into().unwrap())
}

/// The log's checkpoint sequence number, which grows each time the log starts over.
fn log_restarts(db: &Path) -> u32 {
    let header = std::fs::read(wal(db)).unwrap();
    header
        .get(12..16)
        .map_or(0, |seq| u32::from_be_bytes(seq.try_into().unwrap()))
}

fn log_restarts_or_zero(db: &Path) -> u32 {
    if wal(db).exists() {
        log_restarts(db)
    } else {
        0
    }
}

async fn pages_in_database(backend: &SqliteBackend) -> u32 {
    let (pages,): (i64,) = sqlx::query_as("PRAGMA page_count")
        .fetch_one(backend.pool())
        .await
        .unwrap();
    u32::try_from(pages).unwrap()
}

/// Moves `main` of `repo` from commit `n - 1` to `n`, storing a few objects, with `events`.
async fn publish(backend: &SqliteBackend, repo: &RepoId, n: u64, events: Vec<AuditEvent>) {
    let expected = if n == 1 {
        Expected::Absent
    } else {
        Expected::Equals(commit_id(n - 1))
    };
    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: branch("main"),
            expected,
            target: Target::Set(commit_id(n)),
        }],
        principal: "ana".into(),
        message: format!("commit {n}"),
        time: Timestamp::from_millis(i64::try_from(n).unwrap()),
    };
    let objects = (0..8).map(|i| object(n * 100 + i)).collect();
    backend.publish(repo, objects, tx, events).await.unwrap();
}

fn events(n: u64, count: usize) -> Vec<AuditEvent> {
    (0..count)
        .map(|i| event("acme", "ana", "table.commit", &format!("t{i}"), n as i64))
        .collect()
}

#[tokio::test]
async fn queued_writers_have_the_log_copied_and_started_over() {
    let db = fresh_path();
    let backend = SqliteBackend::open(&db).await.unwrap();
    let repo = fresh_repo();
    for n in 1..=50 {
        publish(&backend, &repo, n, events(n, 3)).await;
    }
    let restarts = log_restarts(&db);
    // A lone writer wakes nothing: the log starts over at one of its writes only once the
    // checkpoints the queued writers asked for copied it all. Ten seconds of writes at most
    // (a hang guard, not a timing: the copy is due a fraction of a second after them), far
    // fewer pages than would make SQLite checkpoint on its own.
    let mut n = 50;
    while log_restarts(&db) == restarts {
        n += 1;
        assert!(n <= 150, "the log never started over");
        publish(&backend, &repo, n, events(n, 1)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    backend.close().await;
    let _ = std::fs::remove_file(&db);
}

/// Writers that never pause (one always waiting for the next publish) leave no moment at which
/// the log is wholly copied: the checkpoints copy the last of it holding them off, so the log
/// still starts over before SQLite would checkpoint on its own (10,000 pages).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_log_starts_over_under_writers_that_never_pause() {
    let db = fresh_path();
    let backend = Arc::new(SqliteBackend::open(&db).await.unwrap());
    let restarts = log_restarts_or_zero(&db);
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (backend, stop) = (backend.clone(), stop.clone());
        writers.spawn(async move {
            let repo = fresh_repo();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                publish(&backend, &repo, n, events(n, 2)).await;
            }
        });
    }
    let restarted = loop {
        if log_restarts_or_zero(&db) != restarts {
            break true;
        }
        let log_bytes = std::fs::metadata(wal(&db)).map_or(0, |m| m.len());
        // Just short of where SQLite checkpoints on its own, in a commit: what this is for.
        if log_bytes > 9_500 * (4_096 + 24) {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    stop.store(true, Ordering::Relaxed);
    while let Some(writer) = writers.join_next().await {
        writer.unwrap();
    }
    assert!(
        restarted,
        "the log grew to 9,500 pages without starting over"
    );
    backend.close().await;
    let _ = std::fs::remove_file(&db);
}

#[tokio::test]
async fn a_lone_writer_leaves_the_log_to_sqlite() {
    let db = fresh_path();
    let backend = SqliteBackend::open(&db).await.unwrap();
    let repo = fresh_repo();
    let copied = pages_in_file(&db);
    for n in 1..=50 {
        publish(&backend, &repo, n, events(n, 1)).await;
    }
    // Time for a checkpoint that nothing should have asked for.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        pages_in_file(&db),
        copied,
        "a lone writer woke the checkpoints"
    );
    assert!(pages_in_database(&backend).await > copied);
    backend.close().await;
    let _ = std::fs::remove_file(&db);
}
