//! The PostgreSQL backend against a real server: the shared conformance suite, each test in a
//! fresh schema, plus races between independent pools (as several servers would be).
//!
//! The server comes from `PANGOLIN_TEST_POSTGRES_URL` (default: the local test database).
//! `scripts/test` starts PostgreSQL when it can; when it cannot, and only outside CI, it sets
//! `PANGOLIN_SKIP_POSTGRES=1` and says loudly that these tests did not run.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use pangolin_backend_postgres::{PoolSettings, PostgresBackend};

fn url() -> String {
    std::env::var("PANGOLIN_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

fn skipped() -> bool {
    std::env::var_os("PANGOLIN_SKIP_POSTGRES").is_some()
}

fn fresh_schema() -> String {
    format!("t_{}", uuid::Uuid::new_v4().simple())
}

async fn backend_in(schema: &str) -> PostgresBackend {
    let settings = PoolSettings {
        schema: Some(schema.to_owned()),
        max_connections: 8,
        ..PoolSettings::default()
    };
    PostgresBackend::connect(&url(), &settings).await.unwrap()
}

pangolin_testkit::conformance_tests!(backend_in(&fresh_schema()), skip_if: skipped());

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_pools_racing_on_the_same_refs_lose_no_update() {
    use pangolin_refs::{
        Expected, LogQuery, RefStore, RefUpdate, Target, TransactError, Transaction,
    };
    use pangolin_store::Timestamp;
    use pangolin_testkit::{branch, commit_id, fresh_repo};

    if skipped() {
        return;
    }
    let schema = fresh_schema();
    let pools = [
        Arc::new(backend_in(&schema).await),
        Arc::new(backend_in(&schema).await),
    ];
    let repo = fresh_repo();
    let (main, other) = (branch("main"), branch("other"));
    let create = Transaction {
        updates: vec![
            RefUpdate {
                reference: main.clone(),
                expected: Expected::Absent,
                target: Target::Set(commit_id(0)),
            },
            RefUpdate {
                reference: other.clone(),
                expected: Expected::Absent,
                target: Target::Set(commit_id(0)),
            },
        ],
        principal: "p".into(),
        message: "create".into(),
        time: Timestamp::from_millis(1),
    };
    pools[0].transact(&repo, create).await.unwrap();

    // Writers on both pools move both refs in one transaction, listing them in opposite
    // orders, so a careless lock order would deadlock.
    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..8u64 {
        let backend = pools[(writer % 2) as usize].clone();
        let (repo, main, other) = (repo.clone(), main.clone(), other.clone());
        tasks.spawn(async move {
            for round in 0..15u64 {
                let next = commit_id(1_000 * (writer + 1) + round);
                loop {
                    let m = backend.get_ref(&repo, &main).await.unwrap().unwrap();
                    let o = backend.get_ref(&repo, &other).await.unwrap().unwrap();
                    let mut updates = vec![
                        RefUpdate {
                            reference: main.clone(),
                            expected: Expected::Equals(m),
                            target: Target::Set(next),
                        },
                        RefUpdate {
                            reference: other.clone(),
                            expected: Expected::Equals(o),
                            target: Target::Set(next),
                        },
                    ];
                    if writer % 2 == 1 {
                        updates.reverse();
                    }
                    let tx = Transaction {
                        updates,
                        principal: "p".into(),
                        message: "race".into(),
                        time: Timestamp::from_millis(2),
                    };
                    match backend.transact(&repo, tx).await {
                        Ok(_) => break,
                        Err(TransactError::OutOfDate { .. }) => continue,
                        Err(TransactError::Backend(e)) if e.is_retryable() => continue,
                        Err(e) => panic!("unexpected error: {e}"),
                    }
                }
            }
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap();
    }
    for reference in [&main, &other] {
        let log = pools[1]
            .ref_log(
                &repo,
                reference,
                LogQuery {
                    before: None,
                    limit: 1_000,
                },
            )
            .await
            .unwrap();
        assert_eq!(
            log.len(),
            8 * 15 + 1,
            "{reference}: one entry per successful swap"
        );
        for pair in log.windows(2) {
            assert_eq!(
                pair[0].old, pair[1].new,
                "{reference}: no swap was based on a replaced value"
            );
        }
    }
    assert_eq!(
        pools[0].get_ref(&repo, &main).await.unwrap(),
        pools[1].get_ref(&repo, &other).await.unwrap(),
        "both refs moved together every time"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn audit_appends_from_two_pools_form_one_chain() {
    use pangolin_records::{AuditLog, verify};
    use pangolin_testkit::audit::event;

    if skipped() {
        return;
    }
    let schema = fresh_schema();
    let pools = [
        Arc::new(backend_in(&schema).await),
        Arc::new(backend_in(&schema).await),
    ];
    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..6 {
        let backend = pools[writer % 2].clone();
        tasks.spawn(async move {
            for i in 0..10 {
                backend
                    .append(event("acme", &format!("w{writer}"), "a", "r", i))
                    .await
                    .unwrap();
            }
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap();
    }
    assert_eq!(verify(pools[0].as_ref(), 1, 60).await.unwrap(), 60);
}

#[tokio::test]
async fn tampering_with_the_audit_log_is_detected() {
    use pangolin_records::{AuditLog, ChainBreak, VerifyError, verify};
    use pangolin_testkit::audit::event;

    if skipped() {
        return;
    }
    let backend = backend_in(&fresh_schema()).await;
    for i in 0..5 {
        backend
            .append(event("acme", "ana", "table.commit", "t", i))
            .await
            .unwrap();
    }
    sqlx::query("UPDATE audit SET resource_id = 'other' WHERE sequence = 2")
        .execute(backend.pool())
        .await
        .unwrap();
    let err = verify(&backend, 1, 5).await.unwrap_err();
    assert!(
        matches!(
            err,
            VerifyError::Broken(ChainBreak::Altered { sequence: 2 })
        ),
        "{err}"
    );
}

/// A server that is not there is a classified, retryable error, not a panic or a hang.
#[tokio::test]
async fn an_unreachable_server_is_reported_as_unavailable() {
    let settings = PoolSettings {
        acquire_timeout: std::time::Duration::from_secs(2),
        ..PoolSettings::default()
    };
    // Port 9 (discard) on loopback: nothing listens there.
    let err = PostgresBackend::connect("postgres://postgres@127.0.0.1:9/test", &settings)
        .await
        .unwrap_err();
    assert_eq!(
        err.kind,
        pangolin_store::BackendErrorKind::Unavailable,
        "{err}"
    );
    assert!(err.is_retryable());
}

#[tokio::test]
async fn invalid_schema_names_are_refused() {
    let settings = PoolSettings {
        schema: Some("x; DROP TABLE refs".into()),
        ..PoolSettings::default()
    };
    let err = PostgresBackend::connect(&url(), &settings)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("schema name"), "{err}");
}
