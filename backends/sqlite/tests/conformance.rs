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
