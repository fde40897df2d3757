//! The RocksDB backend passes the shared conformance suite, each test on a fresh database.
#![cfg(feature = "rocksdb")]
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use pangolin_backend_rocksdb::RocksBackend;

fn fresh_path() -> PathBuf {
    std::env::temp_dir().join(format!(
        "pangolin-rocksdb-{}",
        uuid::Uuid::new_v4().simple()
    ))
}

pangolin_testkit::conformance_tests!(async { RocksBackend::open(fresh_path()).unwrap() });

#[tokio::test]
async fn tampering_with_the_audit_log_is_detected() {
    use pangolin_records::{AuditLog, ChainBreak, VerifyError, verify};
    use pangolin_testkit::audit::event;

    let backend = RocksBackend::open(fresh_path()).unwrap();
    for i in 0..8 {
        backend
            .append(event("acme", "ana", "table.commit", "t", i))
            .await
            .unwrap();
    }
    let mut record = backend.range(5, 5).await.unwrap().remove(0);
    record.event.action = "table.drop".into();
    backend.tamper_with_audit_record(&record).unwrap();
    let err = verify(&backend, 1, 8).await.unwrap_err();
    assert!(
        matches!(
            err,
            VerifyError::Broken(ChainBreak::Altered { sequence: 5 })
        ),
        "{err}"
    );
}

#[tokio::test]
async fn data_survives_reopening() {
    use pangolin_refs::{Expected, RefStore, RefUpdate, Target, Transaction};
    use pangolin_store::{ObjectStore, Timestamp};
    use pangolin_testkit::{branch, commit_id, fresh_repo, object};

    let path = fresh_path();
    let repo = fresh_repo();
    {
        let backend = RocksBackend::open(&path).unwrap();
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
    }
    let backend = RocksBackend::open(&path).unwrap();
    assert_eq!(
        backend.get(&repo, &object(1).id).await.unwrap(),
        Some(object(1))
    );
    assert_eq!(
        backend.get_ref(&repo, &branch("main")).await.unwrap(),
        Some(commit_id(1))
    );
}
