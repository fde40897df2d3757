//! The memory backend passes the shared conformance suite.
#![allow(clippy::unwrap_used)]

use pangolin_backend_memory::MemoryBackend;

pangolin_testkit::conformance_tests!(async { MemoryBackend::new() });

/// Altering a stored event (here through the backend's own hook, as someone with access to the
/// storage would) is caught by verification, at the altered record.
#[tokio::test]
async fn tampering_with_the_audit_log_is_detected() {
    use pangolin_records::{AuditLog, ChainBreak, VerifyError, verify};
    use pangolin_testkit::audit::event;

    let backend = MemoryBackend::new();
    for i in 0..10 {
        backend
            .append(event("acme", "ana", "table.commit", "t", i))
            .await
            .unwrap();
    }
    assert_eq!(verify(&backend, 1, 10).await.unwrap(), 10);

    backend.tamper_with_audit_record(4, |r| r.event.principal = "mallory".into());
    let err = verify(&backend, 1, 10).await.unwrap_err();
    assert!(
        matches!(
            err,
            VerifyError::Broken(ChainBreak::Altered { sequence: 4 })
        ),
        "{err}"
    );

    // Re-hashing the altered record does not help: the next record no longer links to it.
    backend.tamper_with_audit_record(4, |r| {
        r.hash = pangolin_records::chain_hash(&r.previous, r.sequence, &r.event);
    });
    let err = verify(&backend, 1, 10).await.unwrap_err();
    assert!(
        matches!(
            err,
            VerifyError::Broken(ChainBreak::Unlinked { sequence: 5 })
        ),
        "{err}"
    );
    // A range before the damage still verifies.
    assert_eq!(verify(&backend, 1, 3).await.unwrap(), 3);
}
