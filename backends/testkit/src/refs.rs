//! Conformance cases for the ref store.

use std::sync::Arc;

use pangolin_refs::{
    Expected, InvalidTransaction, LogQuery, RefKind, RefQuery, RefUpdate, Reference, Target,
    TransactError, Transaction,
};
use pangolin_store::{ObjectId, RepoId, Timestamp};

use crate::{Backend, branch, commit_id, fresh_repo, tag};

pub(crate) fn tx(updates: Vec<RefUpdate>, time: i64) -> Transaction {
    Transaction {
        updates,
        principal: "tester".into(),
        message: "test".into(),
        time: Timestamp::from_millis(time),
    }
}

pub(crate) fn update(reference: &Reference, expected: Expected, target: Target) -> RefUpdate {
    RefUpdate {
        reference: reference.clone(),
        expected,
        target,
    }
}

async fn set<B: Backend>(
    backend: &B,
    repo: &RepoId,
    reference: &Reference,
    id: ObjectId,
    time: i64,
) {
    backend
        .transact(
            repo,
            tx(
                vec![update(reference, Expected::Any, Target::Set(id))],
                time,
            ),
        )
        .await
        .expect("unconditional set");
}

pub async fn creating_requires_the_ref_to_be_absent<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let main = branch("main");
    let create = |id| tx(vec![update(&main, Expected::Absent, Target::Set(id))], 1);
    backend
        .transact(&repo, create(commit_id(1)))
        .await
        .expect("first create");
    let err = backend
        .transact(&repo, create(commit_id(2)))
        .await
        .expect_err("second create");
    match err {
        TransactError::OutOfDate {
            reference,
            expected,
            actual,
        } => {
            assert_eq!(reference, main);
            assert_eq!(expected, Expected::Absent);
            assert_eq!(actual, Some(commit_id(1)));
        }
        other => panic!("expected OutOfDate, got {other:?}"),
    }
    assert_eq!(
        backend.get_ref(&repo, &main).await.expect("get"),
        Some(commit_id(1))
    );
}

/// Every (expectation, state, target) combination against the outcome the contract defines.
pub async fn expectation_matrix_matches_the_contract<B: Backend>(backend: Arc<B>) {
    let (current, other, new) = (commit_id(1), commit_id(2), commit_id(3));
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Outcome {
        Applied,
        OutOfDate,
        DeleteMissing,
    }
    use Outcome::*;
    // (ref exists?, expectation, target, outcome)
    let cases = [
        (false, Expected::Absent, Target::Set(new), Applied),
        (false, Expected::Absent, Target::Delete, DeleteMissing),
        (
            false,
            Expected::Equals(current),
            Target::Set(new),
            OutOfDate,
        ),
        (false, Expected::Equals(current), Target::Delete, OutOfDate),
        (false, Expected::Any, Target::Set(new), Applied),
        (false, Expected::Any, Target::Delete, DeleteMissing),
        (true, Expected::Absent, Target::Set(new), OutOfDate),
        (true, Expected::Absent, Target::Delete, OutOfDate),
        (true, Expected::Equals(current), Target::Set(new), Applied),
        (true, Expected::Equals(current), Target::Delete, Applied),
        (true, Expected::Equals(other), Target::Set(new), OutOfDate),
        (true, Expected::Equals(other), Target::Delete, OutOfDate),
        (true, Expected::Any, Target::Set(new), Applied),
        (true, Expected::Any, Target::Delete, Applied),
    ];
    for (exists, expected, target, outcome) in cases {
        let repo = fresh_repo();
        let main = branch("main");
        if exists {
            set(backend.as_ref(), &repo, &main, current, 1).await;
        }
        let before = if exists { Some(current) } else { None };
        let result = backend
            .transact(&repo, tx(vec![update(&main, expected, target)], 2))
            .await;
        let case = format!("exists={exists} expected={expected:?} target={target:?}");
        let after = backend.get_ref(&repo, &main).await.expect("get");
        let log = backend
            .ref_log(
                &repo,
                &main,
                LogQuery {
                    before: None,
                    limit: 10,
                },
            )
            .await
            .expect("log");
        match (outcome, result) {
            (Applied, Ok(entries)) => {
                assert_eq!(after, target.new_value(), "{case}");
                assert_eq!(entries.len(), 1, "{case}");
                assert_eq!(
                    (entries[0].old, entries[0].new),
                    (before, target.new_value()),
                    "{case}"
                );
                assert_eq!(log[0], entries[0], "{case}");
            }
            (OutOfDate, Err(TransactError::OutOfDate { actual, .. })) => {
                assert_eq!(actual, before, "{case}");
                assert_eq!(after, before, "{case}: refused update changed the ref");
                assert_eq!(
                    log.len(),
                    usize::from(exists),
                    "{case}: refused update was logged"
                );
            }
            (DeleteMissing, Err(TransactError::DeleteMissing { reference })) => {
                assert_eq!(reference, main, "{case}");
                assert_eq!(after, None, "{case}");
                assert!(log.is_empty(), "{case}");
            }
            (expected, got) => panic!("{case}: expected {expected:?}, got {got:?}"),
        }
    }
}

pub async fn multi_ref_transactions_are_all_or_nothing<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let (main, dev, v1) = (branch("main"), branch("dev"), tag("v1"));
    set(backend.as_ref(), &repo, &main, commit_id(1), 1).await;
    set(backend.as_ref(), &repo, &dev, commit_id(2), 1).await;

    // The last update's expectation fails: nothing of the first two may be applied.
    let failing = tx(
        vec![
            update(
                &main,
                Expected::Equals(commit_id(1)),
                Target::Set(commit_id(10)),
            ),
            update(&v1, Expected::Absent, Target::Set(commit_id(10))),
            update(
                &dev,
                Expected::Equals(commit_id(99)),
                Target::Set(commit_id(11)),
            ),
        ],
        2,
    );
    let err = backend
        .transact(&repo, failing)
        .await
        .expect_err("stale expectation on dev");
    assert!(
        matches!(&err, TransactError::OutOfDate { reference, actual: Some(a), .. } if *reference == dev && *a == commit_id(2)),
        "{err:?}"
    );
    assert_eq!(
        backend.get_ref(&repo, &main).await.expect("get"),
        Some(commit_id(1))
    );
    assert_eq!(backend.get_ref(&repo, &v1).await.expect("get"), None);
    assert_eq!(
        backend.get_ref(&repo, &dev).await.expect("get"),
        Some(commit_id(2))
    );
    let main_log = backend
        .ref_log(
            &repo,
            &main,
            LogQuery {
                before: None,
                limit: 10,
            },
        )
        .await
        .expect("log");
    assert_eq!(main_log.len(), 1, "a failed transaction wrote a log entry");

    let ok = tx(
        vec![
            update(
                &main,
                Expected::Equals(commit_id(1)),
                Target::Set(commit_id(10)),
            ),
            update(&v1, Expected::Absent, Target::Set(commit_id(10))),
            update(&dev, Expected::Equals(commit_id(2)), Target::Delete),
        ],
        3,
    );
    let entries = backend
        .transact(&repo, ok)
        .await
        .expect("all expectations hold");
    let refs: Vec<_> = entries.iter().map(|e| e.reference.clone()).collect();
    assert_eq!(
        refs,
        vec![main.clone(), v1.clone(), dev.clone()],
        "entries in update order"
    );
    assert_eq!(
        backend.get_ref(&repo, &main).await.expect("get"),
        Some(commit_id(10))
    );
    assert_eq!(
        backend.get_ref(&repo, &v1).await.expect("get"),
        Some(commit_id(10))
    );
    assert_eq!(backend.get_ref(&repo, &dev).await.expect("get"), None);
}

pub async fn invalid_transactions_are_refused<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let main = branch("main");
    let err = backend
        .transact(&repo, tx(vec![], 1))
        .await
        .expect_err("empty");
    assert!(
        matches!(err, TransactError::Invalid(InvalidTransaction::Empty)),
        "{err:?}"
    );
    let twice = tx(
        vec![
            update(&main, Expected::Any, Target::Set(commit_id(1))),
            update(&main, Expected::Any, Target::Set(commit_id(2))),
        ],
        1,
    );
    let err = backend.transact(&repo, twice).await.expect_err("duplicate");
    assert!(
        matches!(err, TransactError::Invalid(InvalidTransaction::DuplicateRef(r)) if r == main)
    );
    assert_eq!(backend.get_ref(&repo, &main).await.expect("get"), None);
}

pub async fn the_log_records_every_move_newest_first<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let main = branch("main");
    for i in 0..25u64 {
        set(backend.as_ref(), &repo, &main, commit_id(i), 100 + i as i64).await;
    }
    let delete = tx(
        vec![update(
            &main,
            Expected::Equals(commit_id(24)),
            Target::Delete,
        )],
        200,
    );
    backend.transact(&repo, delete).await.expect("delete");

    let mut all = Vec::new();
    let mut before = None;
    loop {
        let page = backend
            .ref_log(&repo, &main, LogQuery { before, limit: 7 })
            .await
            .expect("log");
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 7);
        before = page.last().map(|e| e.sequence);
        all.extend(page);
    }
    assert_eq!(all.len(), 26);
    assert!(
        all.windows(2).all(|w| w[0].sequence > w[1].sequence),
        "newest first"
    );
    assert_eq!(
        (all[0].old, all[0].new),
        (Some(commit_id(24)), None),
        "the delete is newest"
    );
    let oldest = all.last().expect("entries");
    assert_eq!((oldest.old, oldest.new), (None, Some(commit_id(0))));
    for pair in all.windows(2) {
        assert_eq!(
            pair[0].old, pair[1].new,
            "each entry starts where the previous ended"
        );
    }
    assert!(
        all.iter()
            .all(|e| e.principal == "tester" && e.message == "test")
    );
}

pub async fn log_times_never_go_backwards_for_a_ref<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let main = branch("main");
    set(backend.as_ref(), &repo, &main, commit_id(1), 1_000).await;
    // A writer whose clock is behind.
    set(backend.as_ref(), &repo, &main, commit_id(2), 500).await;
    let log = backend
        .ref_log(
            &repo,
            &main,
            LogQuery {
                before: None,
                limit: 10,
            },
        )
        .await
        .expect("log");
    assert_eq!(log[0].time, Timestamp::from_millis(1_000));
    assert_eq!(log[1].time, Timestamp::from_millis(1_000));
    assert!(log[0].sequence > log[1].sequence);
}

pub async fn log_at_finds_what_a_reader_saw_then<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let main = branch("main");
    let other = branch("other");
    set(backend.as_ref(), &repo, &main, commit_id(1), 1_000).await;
    set(backend.as_ref(), &repo, &other, commit_id(7), 1_500).await;
    set(backend.as_ref(), &repo, &main, commit_id(2), 2_000).await;
    set(backend.as_ref(), &repo, &main, commit_id(3), 3_000).await;
    let delete = tx(vec![update(&main, Expected::Any, Target::Delete)], 4_000);
    backend.transact(&repo, delete).await.expect("delete");

    let at = |t: i64| {
        let backend = backend.clone();
        let (repo, main) = (repo.clone(), main.clone());
        async move {
            backend
                .ref_log_at(&repo, &main, Timestamp::from_millis(t))
                .await
                .expect("log_at")
                .map(|e| e.new)
        }
    };
    assert_eq!(at(999).await, None, "before the ref existed");
    assert_eq!(
        at(1_000).await,
        Some(Some(commit_id(1))),
        "at the exact time"
    );
    assert_eq!(at(1_999).await, Some(Some(commit_id(1))));
    assert_eq!(
        at(2_500).await,
        Some(Some(commit_id(2))),
        "other refs do not interfere"
    );
    assert_eq!(at(3_999).await, Some(Some(commit_id(3))));
    assert_eq!(at(4_000).await, Some(None), "deleted by then");
    assert_eq!(at(i64::MAX).await, Some(None));
}

pub async fn listing_filters_by_kind_and_prefix_and_pages<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let branches = ["main", "dev", "feature/a", "feature/b", "feature/c", "fix"];
    for (i, name) in branches.iter().enumerate() {
        set(
            backend.as_ref(),
            &repo,
            &branch(name),
            commit_id(i as u64),
            1,
        )
        .await;
    }
    for name in ["v1", "v2", "feature/tagged"] {
        set(backend.as_ref(), &repo, &tag(name), commit_id(100), 1).await;
    }
    let query = |kind, prefix: &str, limit| RefQuery {
        kind,
        prefix: prefix.into(),
        after: None,
        limit,
    };

    let all = backend
        .list_refs(&repo, &query(None, "", 100))
        .await
        .expect("list");
    let names: Vec<String> = all
        .refs
        .iter()
        .map(|(r, _)| format!("{}:{}", r.kind, r.name))
        .collect();
    assert_eq!(
        names,
        [
            "branch:dev",
            "branch:feature/a",
            "branch:feature/b",
            "branch:feature/c",
            "branch:fix",
            "branch:main",
            "tag:feature/tagged",
            "tag:v1",
            "tag:v2"
        ]
    );
    assert_eq!(all.next_after, None);
    let main = all
        .refs
        .iter()
        .find(|(r, _)| *r == branch("main"))
        .expect("main listed");
    assert_eq!(main.1, commit_id(0));

    let tags = backend
        .list_refs(&repo, &query(Some(RefKind::Tag), "", 100))
        .await
        .expect("list");
    assert_eq!(tags.refs.len(), 3);
    let features = backend
        .list_refs(&repo, &query(Some(RefKind::Branch), "feature/", 100))
        .await
        .expect("list");
    assert_eq!(features.refs.len(), 3);

    let mut paged = Vec::new();
    let mut q = query(None, "f", 2);
    loop {
        let page = backend.list_refs(&repo, &q).await.expect("list");
        assert!(page.refs.len() <= 2);
        paged.extend(page.refs.iter().map(|(r, _)| r.clone()));
        match page.next_after {
            Some(after) => q.after = Some(after),
            None => break,
        }
    }
    let expected: Vec<Reference> = vec![
        branch("feature/a"),
        branch("feature/b"),
        branch("feature/c"),
        branch("fix"),
        tag("feature/tagged"),
    ];
    assert_eq!(paged, expected);
}

pub async fn refs_are_scoped_per_repository<B: Backend>(backend: Arc<B>) {
    let (a, b) = (fresh_repo(), fresh_repo());
    let main = branch("main");
    set(backend.as_ref(), &a, &main, commit_id(1), 1).await;
    assert_eq!(backend.get_ref(&b, &main).await.expect("get"), None);
    let listed = backend
        .list_refs(
            &b,
            &RefQuery {
                limit: 10,
                ..RefQuery::default()
            },
        )
        .await
        .expect("list");
    assert!(listed.refs.is_empty());
    let log = backend
        .ref_log(
            &b,
            &main,
            LogQuery {
                before: None,
                limit: 10,
            },
        )
        .await
        .expect("log");
    assert!(log.is_empty());
    // Creating the same name in b is independent of a.
    let create = tx(
        vec![update(&main, Expected::Absent, Target::Set(commit_id(2)))],
        1,
    );
    backend.transact(&b, create).await.expect("create in b");
    assert_eq!(
        backend.get_ref(&a, &main).await.expect("get"),
        Some(commit_id(1))
    );
}

/// Writers advance one ref by compare-and-swap, retrying when they lose: every successful
/// swap must be in the log, chained, and the final value must reflect all of them.
pub async fn racing_writers_lose_no_update<B: Backend>(backend: Arc<B>) {
    const WRITERS: u64 = 8;
    const ROUNDS: u64 = 25;
    let repo = fresh_repo();
    let main = branch("main");
    let start = commit_id(0);
    let create = tx(vec![update(&main, Expected::Absent, Target::Set(start))], 1);
    backend.transact(&repo, create).await.expect("create");

    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..WRITERS {
        let (backend, repo, main) = (backend.clone(), repo.clone(), main.clone());
        tasks.spawn(async move {
            let mut retries = 0u64;
            for round in 0..ROUNDS {
                let next = commit_id(1_000 * (writer + 1) + round);
                loop {
                    let current = backend
                        .get_ref(&repo, &main)
                        .await
                        .expect("get")
                        .expect("exists");
                    let swap = tx(
                        vec![update(&main, Expected::Equals(current), Target::Set(next))],
                        2,
                    );
                    match backend.transact(&repo, swap).await {
                        Ok(_) => break,
                        Err(TransactError::OutOfDate { .. }) => retries += 1,
                        Err(other) => panic!("unexpected error: {other}"),
                    }
                }
            }
            retries
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.expect("writer task");
    }
    let log = backend
        .ref_log(
            &repo,
            &main,
            LogQuery {
                before: None,
                limit: 10_000,
            },
        )
        .await
        .expect("log");
    assert_eq!(
        log.len() as u64,
        WRITERS * ROUNDS + 1,
        "one entry per successful swap"
    );
    for pair in log.windows(2) {
        assert_eq!(
            pair[0].old, pair[1].new,
            "no swap was based on a value another swap replaced"
        );
    }
    let head = backend.get_ref(&repo, &main).await.expect("get");
    assert_eq!(head, log[0].new);
    let mut applied: Vec<_> = log.iter().filter_map(|e| e.new).collect();
    applied.sort();
    applied.dedup();
    assert_eq!(
        applied.len() as u64,
        WRITERS * ROUNDS + 1,
        "every writer's every value landed"
    );
}

/// Transactions on different refs of one repository both succeed, however they interleave.
pub async fn transactions_on_different_refs_do_not_conflict<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..8u64 {
        let (backend, repo) = (backend.clone(), repo.clone());
        tasks.spawn(async move {
            let reference = branch(&format!("writer-{writer}"));
            let mut current = None;
            for round in 0..20u64 {
                let next = commit_id(writer * 100 + round);
                let expected = current.map_or(Expected::Absent, Expected::Equals);
                let swap = tx(vec![update(&reference, expected, Target::Set(next))], 1);
                backend
                    .transact(&repo, swap)
                    .await
                    .expect("no other writer touches this ref");
                current = Some(next);
            }
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.expect("writer task");
    }
    let listed = backend
        .list_refs(
            &repo,
            &RefQuery {
                limit: 100,
                ..RefQuery::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(listed.refs.len(), 8);
}

/// `publish` stores the objects and moves the ref; when the move is refused, the ref stays
/// and nothing refers to the objects.
pub async fn publishing_stores_the_objects_with_the_ref_move<B: Backend>(backend: Arc<B>) {
    let repo = fresh_repo();
    let main = branch("main");
    let objects = vec![crate::object(1), crate::object(2)];
    let create = tx(
        vec![update(&main, Expected::Absent, Target::Set(commit_id(1)))],
        1,
    );
    let entries = backend
        .publish(&repo, objects.clone(), create, Vec::new())
        .await
        .expect("publish");
    assert_eq!(entries.len(), 1);
    assert_eq!(
        backend.get_ref(&repo, &main).await.expect("get"),
        Some(commit_id(1))
    );
    for object in &objects {
        assert_eq!(
            backend.get(&repo, &object.id).await.expect("get").as_ref(),
            Some(object)
        );
    }
    let stale = tx(
        vec![update(
            &main,
            Expected::Equals(commit_id(9)),
            Target::Set(commit_id(2)),
        )],
        2,
    );
    let err = backend
        .publish(&repo, vec![crate::object(3)], stale, Vec::new())
        .await
        .expect_err("stale");
    assert!(
        matches!(err, TransactError::OutOfDate { actual: Some(a), .. } if a == commit_id(1)),
        "{err:?}"
    );
    assert_eq!(
        backend.get_ref(&repo, &main).await.expect("get"),
        Some(commit_id(1))
    );
}
