//! The SQLite backend passes the shared conformance suite, each test on a fresh database file.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use pangolin_backend_sqlite::SqliteBackend;

fn fresh_path() -> PathBuf {
    std::env::temp_dir().join(format!(
        "pangolin-sqlite-{}.db",
        uuid::Uuid::new_v4().simple()
    ))
}

pangolin_testkit::conformance_tests!(async { SqliteBackend::open(fresh_path()).await.unwrap() });

/// Altering a stored audit event with plain SQL, as someone with access to the file could,
/// is caught by verification.
#[tokio::test]
async fn tampering_with_the_audit_log_is_detected() {
    use pangolin_records::{AuditLog, ChainBreak, VerifyError, verify};
    use pangolin_testkit::audit::event;

    let backend = SqliteBackend::open(fresh_path()).await.unwrap();
    for i in 0..10 {
        backend
            .append(event("acme", "ana", "table.commit", "t", i))
            .await
            .unwrap();
    }
    assert_eq!(verify(&backend, 1, 10).await.unwrap(), 10);
    sqlx::query("UPDATE audit SET principal = 'mallory' WHERE sequence = 6")
        .execute(backend.pool())
        .await
        .unwrap();
    let err = verify(&backend, 1, 10).await.unwrap_err();
    assert!(
        matches!(
            err,
            VerifyError::Broken(ChainBreak::Altered { sequence: 6 })
        ),
        "{err}"
    );
    sqlx::query("DELETE FROM audit WHERE sequence = 3")
        .execute(backend.pool())
        .await
        .unwrap();
    let err = verify(&backend, 1, 10).await.unwrap_err();
    assert!(
        matches!(
            err,
            VerifyError::Broken(ChainBreak::Missing { sequence: 3 })
        ),
        "{err}"
    );
}

/// Data survives closing and reopening the file.
#[tokio::test]
async fn data_survives_reopening() {
    use pangolin_refs::{Expected, RefStore, RefUpdate, Target, Transaction};
    use pangolin_store::{ObjectStore, Timestamp};
    use pangolin_testkit::{branch, commit_id, fresh_repo, object};

    let path = fresh_path();
    let repo = fresh_repo();
    {
        let backend = SqliteBackend::open(&path).await.unwrap();
        backend.put_many(&repo, &[object(1)]).await.unwrap();
        let tx = Transaction {
            updates: vec![RefUpdate {
                reference: branch("main"),
                expected: Expected::Absent,
                target: Target::Set(commit_id(1)),
            }],
            principal: "p".into(),
            message: "m".into(),
            time: Timestamp::from_millis(1),
        };
        backend.transact(&repo, tx).await.unwrap();
        backend.close().await;
    }
    let backend = SqliteBackend::open(&path).await.unwrap();
    assert_eq!(
        backend.get(&repo, &object(1).id).await.unwrap(),
        Some(object(1))
    );
    assert_eq!(
        backend.get_ref(&repo, &branch("main")).await.unwrap(),
        Some(commit_id(1))
    );
}

/// A file that is not a database gives a classified error, not a panic.
#[tokio::test]
async fn a_file_that_is_not_a_database_is_reported() {
    let path = fresh_path();
    std::fs::write(&path, vec![0x42u8; 8192]).unwrap();
    let err = SqliteBackend::open(&path).await.unwrap_err();
    assert_eq!(err.kind, pangolin_store::BackendErrorKind::Corrupt, "{err}");
}

/// `sqlite:` URLs open the same way as paths.
#[tokio::test]
async fn databases_open_from_urls() {
    let path = fresh_path();
    let backend = SqliteBackend::open_url(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(backend.pool())
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    let sync: i64 = sqlx::query_scalar("PRAGMA synchronous")
        .fetch_one(backend.pool())
        .await
        .unwrap();
    assert_eq!(sync, 2, "FULL");
}

/// A publish chains its audit records on the head this process remembers, checked in the
/// statement that inserts them: when another process appended to the file meanwhile, the
/// records are chained on the real head instead, and when a publish is refused, what is
/// remembered stays right.
#[tokio::test]
async fn publishes_chain_on_the_real_audit_head_when_another_process_appended() {
    use pangolin_records::{AuditLog, verify};
    use pangolin_refs::{
        Expected, Publish, RefStore, RefUpdate, Target, TransactError, Transaction,
    };
    use pangolin_store::Timestamp;
    use pangolin_testkit::audit::event;
    use pangolin_testkit::{branch, commit_id, fresh_repo, object};

    let path = fresh_path();
    let server = SqliteBackend::open(&path).await.unwrap();
    let other = SqliteBackend::open(&path).await.unwrap();
    let (repo, main) = (fresh_repo(), branch("main"));
    let swap = |expected, to: u64| Transaction {
        updates: vec![RefUpdate {
            reference: main.clone(),
            expected,
            target: Target::Set(commit_id(to)),
        }],
        principal: "ana".into(),
        message: "commit".into(),
        time: Timestamp::from_millis(to as i64),
    };
    let commit = |n: i64| vec![event("acme", "ana", "table.commit", "db.t", n)];

    server
        .publish(&repo, vec![object(1)], swap(Expected::Absent, 1), commit(1))
        .await
        .unwrap();
    // Another process appends: the head the server remembers is no longer the chain's.
    other
        .append(event("acme", "bob", "user.login", "bob", 2))
        .await
        .unwrap();
    server
        .publish(
            &repo,
            vec![object(2)],
            swap(Expected::Equals(commit_id(1)), 2),
            commit(3),
        )
        .await
        .unwrap();
    // A refused publish leaves neither its ref move nor its events.
    let refused = server
        .publish(
            &repo,
            vec![object(3)],
            swap(Expected::Equals(commit_id(9)), 3),
            commit(4),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, TransactError::OutOfDate { actual: Some(a), .. } if a == commit_id(2))
    );
    server
        .publish(
            &repo,
            vec![object(4)],
            swap(Expected::Equals(commit_id(2)), 4),
            commit(5),
        )
        .await
        .unwrap();
    // And a plain ref change through the same batch path writes its log entry.
    let entries = server
        .transact(&repo, swap(Expected::Equals(commit_id(4)), 5))
        .await
        .unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].old, Some(commit_id(4)));

    let records = server.range(1, 100).await.unwrap();
    let actions: Vec<(u64, &str)> = records
        .iter()
        .map(|r| (r.sequence, r.event.action.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            (1, "table.commit"),
            (2, "user.login"),
            (3, "table.commit"),
            (4, "table.commit"),
        ]
    );
    assert_eq!(verify(&server, 1, 4).await.unwrap(), 4);
    assert_eq!(
        server.get_ref(&repo, &main).await.unwrap(),
        Some(commit_id(5))
    );
    let log = server
        .ref_log(
            &repo,
            &main,
            pangolin_refs::LogQuery {
                before: None,
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        log.len(),
        4,
        "create, two moves and the plain change: {log:?}"
    );
}

/// A publish dropped while its statements run (its request cancelled) leaves the writer
/// clean: the next write goes ahead, and the dropped publish landed whole (ref move, log entry
/// and audit record) or not at all.
#[tokio::test]
async fn a_publish_dropped_midway_lands_whole_or_not_at_all() {
    use std::time::Duration;

    use pangolin_records::{AuditLog, verify};
    use pangolin_refs::{
        Expected, Publish, RefStore, RefUpdate, RepoLogQuery, Target, Transaction,
    };
    use pangolin_store::{ObjectStore, Timestamp};
    use pangolin_testkit::audit::event;
    use pangolin_testkit::{branch, commit_id, fresh_repo, object};

    let backend = SqliteBackend::open(fresh_path()).await.unwrap();
    let (repo, main) = (fresh_repo(), branch("main"));
    let publish = |from: Option<u64>, to: u64| {
        let tx = Transaction {
            updates: vec![RefUpdate {
                reference: main.clone(),
                expected: from.map_or(Expected::Absent, |f| Expected::Equals(commit_id(f))),
                target: Target::Set(commit_id(to)),
            }],
            principal: "ana".into(),
            message: format!("commit {to}"),
            time: Timestamp::from_millis(to as i64),
        };
        let audit = vec![event(
            "acme",
            "ana",
            "table.commit",
            &format!("t{to}"),
            to as i64,
        )];
        backend.publish(&repo, vec![object(to)], tx, audit)
    };
    publish(None, 1).await.unwrap();
    let (mut head, mut next, mut dropped_landed) = (1, 2, 0);
    for _ in 0..20 {
        // Polled once: the statements are on their way to the connection's thread.
        let dropped = next;
        let _ = tokio::time::timeout(Duration::ZERO, publish(Some(head), dropped)).await;
        next += 1;
        // A write behind it: it must not find a transaction left open.
        backend
            .append(event("acme", "bob", "user.login", "bob", 0))
            .await
            .unwrap();
        let landed = backend.get_ref(&repo, &main).await.unwrap() == Some(commit_id(dropped));
        assert_eq!(
            backend
                .get(&repo, &object(dropped).id)
                .await
                .unwrap()
                .is_some(),
            landed,
            "the dropped publish's object is stored exactly when its ref move is"
        );
        if landed {
            head = dropped;
            dropped_landed += 1;
        }
        publish(Some(head), next).await.unwrap();
        head = next;
        next += 1;
    }
    assert_eq!(
        backend.get_ref(&repo, &main).await.unwrap(),
        Some(commit_id(head))
    );
    let log = backend
        .repository_log(
            &repo,
            RepoLogQuery {
                after: None,
                limit: 1_000,
            },
        )
        .await
        .unwrap();
    let records = backend.range(1, 1_000).await.unwrap();
    let commits: Vec<&str> = records
        .iter()
        .filter(|r| r.event.action == "table.commit")
        .map(|r| r.event.resource_id.as_str())
        .collect();
    // Every ref move has its audit record, in the same order, and nothing else does.
    let moved: Vec<String> = log
        .iter()
        .map(|e| format!("t{}", e.message.trim_start_matches("commit ")))
        .collect();
    assert_eq!(commits, moved);
    assert_eq!(log.len(), 1 + 20 + dropped_landed);
    assert_eq!(
        verify(&backend, 1, records.len() as u64).await.unwrap(),
        records.len() as u64
    );
}

/// After `close`, writes fail with a clear error instead of reopening anything.
#[tokio::test]
async fn writes_after_close_are_refused() {
    use pangolin_records::AuditLog;
    use pangolin_store::BackendErrorKind;
    use pangolin_testkit::audit::event;

    let backend = SqliteBackend::open(fresh_path()).await.unwrap();
    backend.close().await;
    let err = backend
        .append(event("acme", "ana", "user.login", "ana", 1))
        .await
        .unwrap_err();
    assert_eq!(err.kind, BackendErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("closed"), "{err}");
}
