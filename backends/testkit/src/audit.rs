//! Conformance cases for the audit log. Each backend is fresh, so its chain starts at 1.

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_records::{AuditEvent, AuditQuery, Outcome, verify};
use pangolin_store::Timestamp;

use crate::Backend;

pub fn event(tenant: &str, principal: &str, action: &str, resource: &str, time: i64) -> AuditEvent {
    AuditEvent {
        time: Timestamp::from_millis(time),
        tenant: tenant.into(),
        principal: principal.into(),
        action: action.into(),
        resource_type: "table".into(),
        resource_id: resource.into(),
        outcome: Outcome::Success,
        details: BTreeMap::from([("branch".to_owned(), "main".to_owned())]),
    }
}

pub async fn appends_form_one_verified_chain<B: Backend>(backend: Arc<B>) {
    let mut previous = None;
    for i in 0..20 {
        let record = backend
            .append(event("acme", "ana", "table.commit", "sales.orders", i))
            .await
            .expect("append");
        assert_eq!(record.sequence, i as u64 + 1);
        if let Some(p) = &previous {
            assert_eq!(
                record.previous,
                pangolin_records::AuditRecord::clone(p).hash
            );
        }
        previous = Some(record);
    }
    assert_eq!(verify(backend.as_ref(), 1, 20).await.expect("intact"), 20);
    assert_eq!(verify(backend.as_ref(), 5, 12).await.expect("intact"), 8);
}

pub async fn batched_appends_continue_one_verified_chain<B: Backend>(backend: Arc<B>) {
    backend
        .append(event("acme", "ana", "table.commit", "a", 1))
        .await
        .expect("append");
    let batch: Vec<_> = (2..=6)
        .map(|i| event("acme", "bob", "table.commit", &format!("t{i}"), i))
        .collect();
    let records = backend.append_many(batch).await.expect("append many");
    let sequences: Vec<u64> = records.iter().map(|r| r.sequence).collect();
    assert_eq!(sequences, [2, 3, 4, 5, 6]);
    for pair in records.windows(2) {
        assert_eq!(pair[1].previous, pair[0].hash);
    }
    assert!(
        backend
            .append_many(Vec::new())
            .await
            .expect("empty")
            .is_empty()
    );
    let last = backend
        .append(event("acme", "ana", "table.commit", "z", 7))
        .await
        .expect("append");
    assert_eq!(last.sequence, 7);
    assert_eq!(last.previous, records[4].hash);
    assert_eq!(verify(backend.as_ref(), 1, 7).await.expect("intact"), 7);
    let stored = backend.range(2, 6).await.expect("range");
    assert_eq!(stored, records, "what was returned is what was stored");
}

pub async fn concurrent_appends_keep_the_chain_whole<B: Backend>(backend: Arc<B>) {
    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..8 {
        let backend = backend.clone();
        tasks.spawn(async move {
            for i in 0..10 {
                let principal = format!("writer-{writer}");
                backend
                    .append(event("acme", &principal, "table.commit", "t", i))
                    .await
                    .expect("append");
            }
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.expect("writer");
    }
    assert_eq!(
        verify(backend.as_ref(), 1, 80)
            .await
            .expect("one unbroken chain"),
        80
    );
    let all = backend.range(1, 1_000).await.expect("range");
    let sequences: Vec<u64> = all.iter().map(|r| r.sequence).collect();
    assert_eq!(sequences, (1..=80).collect::<Vec<_>>());
}

pub async fn queries_filter_and_page<B: Backend>(backend: Arc<B>) {
    let events = [
        event("acme", "ana", "table.commit", "sales.orders", 100),
        event("acme", "bo", "table.drop", "sales.tmp", 200),
        event("globex", "ana", "table.commit", "hr.people", 300),
        event("acme", "ana", "user.login", "ana", 400),
        event("acme", "ana", "table.commit", "sales.orders", 500),
    ];
    for e in &events {
        backend.append(e.clone()).await.expect("append");
    }
    let q = |f: fn(&mut AuditQuery)| {
        let mut query = AuditQuery {
            limit: 100,
            ..AuditQuery::default()
        };
        f(&mut query);
        query
    };
    let seqs = |records: Vec<pangolin_records::AuditRecord>| {
        records.iter().map(|r| r.sequence).collect::<Vec<_>>()
    };
    assert_eq!(
        seqs(
            backend
                .query(&q(|q| q.tenant = Some("acme".into())))
                .await
                .expect("q")
        ),
        [1, 2, 4, 5]
    );
    assert_eq!(
        seqs(
            backend
                .query(&q(|q| q.principal = Some("ana".into())))
                .await
                .expect("q")
        ),
        [1, 3, 4, 5]
    );
    assert_eq!(
        seqs(
            backend
                .query(&q(|q| q.action = Some("table.commit".into())))
                .await
                .expect("q")
        ),
        [1, 3, 5]
    );
    let by_resource = q(|q| {
        q.resource_type = Some("table".into());
        q.resource_id = Some("sales.orders".into());
    });
    assert_eq!(seqs(backend.query(&by_resource).await.expect("q")), [1, 5]);
    let window = q(|q| {
        q.from = Some(Timestamp::from_millis(200));
        q.until = Some(Timestamp::from_millis(400));
    });
    assert_eq!(
        seqs(backend.query(&window).await.expect("q")),
        [2, 3],
        "from inclusive, until exclusive"
    );
    let mut page = q(|q| q.tenant = Some("acme".into()));
    page.limit = 2;
    assert_eq!(seqs(backend.query(&page).await.expect("q")), [1, 2]);
    page.after = Some(2);
    assert_eq!(seqs(backend.query(&page).await.expect("q")), [4, 5]);
    page.after = Some(5);
    assert!(backend.query(&page).await.expect("q").is_empty());
}

pub async fn events_round_trip_exactly<B: Backend>(backend: Arc<B>) {
    let mut e = event(
        "acme",
        "ana",
        "table.commit",
        "sales.orders",
        1_795_000_000_123,
    );
    e.outcome = Outcome::Denied;
    e.details.insert(
        "reason".into(),
        "missing privilege \"write\" on main".into(),
    );
    e.details.insert("ünïcödé".into(), "✓".into());
    let appended = backend.append(e.clone()).await.expect("append");
    let read = backend
        .range(appended.sequence, appended.sequence)
        .await
        .expect("range");
    assert_eq!(read, vec![appended.clone()]);
    assert_eq!(read[0].event, e);
}

/// A publish appends its events in the same write as the ref move: they follow the chain,
/// and a publish that is refused leaves no event behind.
pub async fn publishes_append_their_events_with_the_ref_move<B: Backend>(backend: Arc<B>) {
    use pangolin_refs::{Expected, RefUpdate, Target, TransactError, Transaction};
    let repo = crate::fresh_repo();
    let main = crate::branch("main");
    let move_main = |expected, target, time| Transaction {
        updates: vec![RefUpdate {
            reference: main.clone(),
            expected,
            target: Target::Set(target),
        }],
        principal: "ana".into(),
        message: "commit".into(),
        time: Timestamp::from_millis(time),
    };
    backend
        .append(event("acme", "ana", "user.login", "ana", 1))
        .await
        .expect("append");
    let events = vec![
        event("acme", "ana", "table.commit", "sales.orders", 2),
        event("acme", "bob", "table.commit", "sales.items", 2),
    ];
    backend
        .publish(
            &repo,
            vec![crate::object(1)],
            move_main(Expected::Absent, crate::commit_id(1), 2),
            events.clone(),
        )
        .await
        .expect("publish");
    let stale = backend
        .publish(
            &repo,
            vec![crate::object(2)],
            move_main(
                Expected::Equals(crate::commit_id(7)),
                crate::commit_id(2),
                3,
            ),
            vec![event("acme", "eve", "table.commit", "sales.orders", 3)],
        )
        .await
        .expect_err("a stale expectation");
    assert!(
        matches!(stale, TransactError::OutOfDate { .. }),
        "{stale:?}"
    );
    let stored = backend.range(1, 100).await.expect("range");
    let stored: Vec<_> = stored.into_iter().map(|r| r.event).collect();
    assert_eq!(stored.len(), 3, "the refused publish wrote no event");
    assert_eq!(stored[1..], events[..]);
    assert_eq!(verify(backend.as_ref(), 1, 3).await.expect("intact"), 3);
}

/// Publishes on many repositories racing plain appends keep one whole chain holding every
/// event once.
pub async fn publishes_and_appends_racing_keep_the_chain_whole<B: Backend>(backend: Arc<B>) {
    use pangolin_refs::{Expected, RefUpdate, Target, Transaction};
    let mut tasks = Vec::new();
    for writer in 0..6u64 {
        let backend = backend.clone();
        tasks.push(tokio::spawn(async move {
            let repo = crate::fresh_repo();
            let main = crate::branch("main");
            let mut head = None;
            for i in 0..10u64 {
                let target = crate::commit_id(writer * 100 + i);
                let tx = Transaction {
                    updates: vec![RefUpdate {
                        reference: main.clone(),
                        expected: head.map_or(Expected::Absent, Expected::Equals),
                        target: Target::Set(target),
                    }],
                    principal: format!("w{writer}"),
                    message: "commit".into(),
                    time: Timestamp::from_millis(i as i64),
                };
                let resource = format!("w{writer}.c{i}");
                let commit = event("acme", "w", "table.commit", &resource, i as i64);
                backend
                    .publish(
                        &repo,
                        vec![crate::object(writer * 100 + i)],
                        tx,
                        vec![commit],
                    )
                    .await
                    .expect("publish");
                head = Some(target);
                let login = event("acme", "w", "user.login", &resource, i as i64);
                backend.append(login).await.expect("append");
            }
        }));
    }
    for task in tasks {
        task.await.expect("writer");
    }
    let records = backend.range(1, 1000).await.expect("range");
    assert_eq!(records.len(), 120);
    let distinct: std::collections::BTreeSet<_> = records
        .iter()
        .map(|r| (r.event.action.clone(), r.event.resource_id.clone()))
        .collect();
    assert_eq!(distinct.len(), 120, "every event once");
    assert_eq!(verify(backend.as_ref(), 1, 120).await.expect("intact"), 120);
}
