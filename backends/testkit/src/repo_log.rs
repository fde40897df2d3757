//! Conformance cases for a repository's whole ref log, read in sequence order.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pangolin_refs::{Expected, RefLogEntry, RepoLogQuery, Target};
use pangolin_store::RepoId;

use crate::refs::{tx, update};
use crate::{Backend, branch, commit_id, fresh_repo, tag};

async fn read_all<B: Backend>(backend: &B, repo: &RepoId, after: Option<u64>) -> Vec<RefLogEntry> {
    let mut all = Vec::new();
    let mut after = after;
    loop {
        let page = backend
            .repository_log(repo, RepoLogQuery { after, limit: 4 })
            .await
            .expect("repository log");
        assert!(page.len() <= 4, "a page holds at most its limit");
        let Some(last) = page.last() else {
            return all;
        };
        after = Some(last.sequence);
        all.extend(page);
    }
}

/// Every move of every ref of one repository, oldest first, paged after a sequence number,
/// and nothing of another repository.
pub async fn the_repository_log_lists_every_move_in_order<B: Backend>(backend: Arc<B>) {
    let (repo, other) = (fresh_repo(), fresh_repo());
    let (main, dev, v1) = (branch("main"), branch("dev"), tag("v1"));
    let steps = [
        update(&main, Expected::Absent, Target::Set(commit_id(1))),
        update(&dev, Expected::Absent, Target::Set(commit_id(1))),
        update(
            &main,
            Expected::Equals(commit_id(1)),
            Target::Set(commit_id(2)),
        ),
        update(&v1, Expected::Absent, Target::Set(commit_id(2))),
        update(
            &dev,
            Expected::Equals(commit_id(1)),
            Target::Set(commit_id(3)),
        ),
        update(&dev, Expected::Equals(commit_id(3)), Target::Delete),
    ];
    for (i, step) in steps.iter().enumerate() {
        backend
            .transact(&repo, tx(vec![step.clone()], 10 + i as i64))
            .await
            .expect("move");
    }
    let unrelated = update(&main, Expected::Absent, Target::Set(commit_id(9)));
    backend
        .transact(&other, tx(vec![unrelated], 1))
        .await
        .expect("other repository");
    // Two refs in one transaction: two entries, in update order.
    let both = vec![
        update(
            &main,
            Expected::Equals(commit_id(2)),
            Target::Set(commit_id(4)),
        ),
        update(&dev, Expected::Absent, Target::Set(commit_id(4))),
    ];
    backend
        .transact(&repo, tx(both, 20))
        .await
        .expect("two refs");

    let all = read_all(backend.as_ref(), &repo, None).await;
    let moves: Vec<_> = all
        .iter()
        .map(|e| (e.reference.clone(), e.old, e.new))
        .collect();
    assert_eq!(
        moves,
        vec![
            (main.clone(), None, Some(commit_id(1))),
            (dev.clone(), None, Some(commit_id(1))),
            (main.clone(), Some(commit_id(1)), Some(commit_id(2))),
            (v1.clone(), None, Some(commit_id(2))),
            (dev.clone(), Some(commit_id(1)), Some(commit_id(3))),
            (dev.clone(), Some(commit_id(3)), None),
            (main.clone(), Some(commit_id(2)), Some(commit_id(4))),
            (dev.clone(), None, Some(commit_id(4))),
        ]
    );
    assert!(all.windows(2).all(|w| w[0].sequence < w[1].sequence));

    let from_middle = read_all(backend.as_ref(), &repo, Some(all[3].sequence)).await;
    assert_eq!(from_middle, all[4..].to_vec(), "continues after a sequence");
    let past_end = read_all(backend.as_ref(), &repo, all.last().map(|e| e.sequence)).await;
    assert!(past_end.is_empty());
    assert!(
        read_all(backend.as_ref(), &fresh_repo(), None)
            .await
            .is_empty()
    );
}

/// Writers on different refs of one repository race a reader that keeps continuing after the
/// last sequence number it saw: the reader must end up with exactly the whole log. A store
/// whose numbers could become visible out of order would make it skip an entry.
pub async fn a_reader_following_the_repository_log_misses_nothing<B: Backend>(backend: Arc<B>) {
    const WRITERS: u64 = 6;
    const ROUNDS: u64 = 30;
    let repo = fresh_repo();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (backend, repo, done) = (backend.clone(), repo.clone(), done.clone());
        tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut after = None;
            loop {
                // Read the flag before the page: a page read after the writers finished
                // holds everything they wrote.
                let finished = done.load(Ordering::SeqCst);
                let page = backend
                    .repository_log(&repo, RepoLogQuery { after, limit: 7 })
                    .await
                    .expect("repository log");
                if let Some(last) = page.last() {
                    after = Some(last.sequence);
                }
                let empty = page.is_empty();
                seen.extend(page);
                if finished && empty {
                    return seen;
                }
                tokio::task::yield_now().await;
            }
        })
    };
    let mut writers = tokio::task::JoinSet::new();
    for writer in 0..WRITERS {
        let (backend, repo) = (backend.clone(), repo.clone());
        writers.spawn(async move {
            let reference = branch(&format!("writer-{writer}"));
            let mut current = None;
            for round in 0..ROUNDS {
                let next = commit_id(writer * 1_000 + round);
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
    while let Some(result) = writers.join_next().await {
        result.expect("writer task");
    }
    done.store(true, Ordering::SeqCst);
    let seen = reader.await.expect("reader task");
    let whole = read_all(backend.as_ref(), &repo, None).await;
    assert_eq!(whole.len() as u64, WRITERS * ROUNDS);
    assert_eq!(seen, whole, "the follower saw every entry once, in order");
    let sequences: BTreeSet<u64> = seen.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences.len(), seen.len());
}
