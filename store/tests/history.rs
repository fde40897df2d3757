//! Commits: derived fields, and skip-pointer walks agreeing with naive walks.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, HashSet};

use common::odb;
use pangolin_store::history::{self, AncestorError, CreateCommitError};
use pangolin_store::{CommitDraft, ObjectId, Odb, Timestamp, tree};
use proptest::prelude::*;

fn draft(parents: Vec<ObjectId>, tree: ObjectId, n: usize) -> CommitDraft {
    CommitDraft {
        parents,
        tree,
        author: "ana".into(),
        committer: "pangolin".into(),
        message: format!("commit {n}"),
        properties: BTreeMap::new(),
    }
}

async fn naive_first_parent_chain(odb: &Odb, id: ObjectId) -> Vec<ObjectId> {
    let mut chain = vec![id];
    while let Some(parent) = odb
        .commit(chain.last().unwrap())
        .await
        .unwrap()
        .first_parent()
    {
        chain.push(parent);
    }
    chain
}

async fn naive_reachable(odb: &Odb, id: ObjectId) -> HashSet<ObjectId> {
    let mut seen = HashSet::from([id]);
    let mut stack = vec![id];
    while let Some(c) = stack.pop() {
        for p in &odb.commit(&c).await.unwrap().parents {
            if seen.insert(*p) {
                stack.push(*p);
            }
        }
    }
    seen
}

/// A history of `len` commits on a first-parent chain, with a side branch merged in every
/// `merge_every` commits, and clock readings from `clock`.
async fn history_with(
    odb: &Odb,
    len: usize,
    merge_every: usize,
    clock: impl Fn(usize) -> i64,
) -> Vec<ObjectId> {
    let tree = tree::empty(odb).await.unwrap();
    let mut chain: Vec<ObjectId> = Vec::new();
    let mut side: Option<ObjectId> = None;
    for n in 0..len {
        let mut parents: Vec<ObjectId> = chain.last().copied().into_iter().collect();
        if merge_every > 0
            && n % merge_every == 0
            && n > 0
            && let Some(s) = side.take()
        {
            parents.push(s);
        }
        let now = Timestamp::from_millis(clock(n));
        let (id, _) = history::create(odb, draft(parents, tree, n), now)
            .await
            .unwrap();
        if merge_every > 0 && n % 3 == 1 {
            let side_parent = vec![chain.get(n.saturating_sub(2)).copied().unwrap_or(id)];
            let (s, _) = history::create(odb, draft(side_parent, tree, 10_000 + n), now)
                .await
                .unwrap();
            side = Some(s);
        }
        chain.push(id);
    }
    chain
}

#[tokio::test]
async fn derived_fields_follow_the_parents() {
    let odb = odb();
    let tree = tree::empty(&odb).await.unwrap();
    let (root, c0) = history::create(&odb, draft(vec![], tree, 0), Timestamp::from_millis(5_000))
        .await
        .unwrap();
    assert_eq!(
        (c0.generation, c0.depth, c0.time),
        (1, 0, Timestamp::from_millis(5_000))
    );
    assert!(c0.skips.is_empty());

    // A clock that stepped back still gives a time after the parent.
    let (a, c1) = history::create(
        &odb,
        draft(vec![root], tree, 1),
        Timestamp::from_millis(1_000),
    )
    .await
    .unwrap();
    assert_eq!(
        (c1.generation, c1.depth, c1.time),
        (2, 1, Timestamp::from_millis(5_001))
    );

    let (b, _) = history::create(&odb, draft(vec![a], tree, 2), Timestamp::from_millis(9_000))
        .await
        .unwrap();
    let (side, _) = history::create(
        &odb,
        draft(vec![root], tree, 3),
        Timestamp::from_millis(9_500),
    )
    .await
    .unwrap();
    let (_, merge) = history::create(
        &odb,
        draft(vec![side, b], tree, 4),
        Timestamp::from_millis(9_600),
    )
    .await
    .unwrap();
    assert_eq!(merge.generation, 4, "1 + the deeper parent's generation");
    assert_eq!(merge.depth, 2, "depth counts first parents only");
    assert_eq!(
        merge.skips,
        vec![root],
        "2 first-parent steps back is the root"
    );
}

#[tokio::test]
async fn bad_drafts_are_refused() {
    let odb = odb();
    let tree = tree::empty(&odb).await.unwrap();
    let (root, _) = history::create(&odb, draft(vec![], tree, 0), Timestamp::from_millis(1))
        .await
        .unwrap();
    let err = history::create(
        &odb,
        draft(vec![root, root], tree, 1),
        Timestamp::from_millis(2),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CreateCommitError::DuplicateParent(p) if p == root));
    let missing = ObjectId::from_bytes([9; 32]);
    let err = history::create(&odb, draft(vec![], missing, 1), Timestamp::from_millis(2))
        .await
        .unwrap_err();
    assert!(matches!(err, CreateCommitError::MissingTree(t) if t == missing));
    let err = history::create(
        &odb,
        draft(vec![missing], tree, 1),
        Timestamp::from_millis(2),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CreateCommitError::Read(_)), "{err}");
    assert!(err.to_string().contains("not in the repository"));
}

#[tokio::test]
async fn skip_pointers_point_at_powers_of_two() {
    let odb = odb();
    let chain = history_with(&odb, 300, 7, |n| n as i64 * 10).await;
    let head = *chain.last().unwrap();
    let naive = naive_first_parent_chain(&odb, head).await;
    let commit = odb.commit(&head).await.unwrap();
    assert_eq!(commit.depth as usize, naive.len() - 1);
    for k in 0..10 {
        assert_eq!(commit.skip(k), naive.get(1 << k).copied(), "distance 2^{k}");
    }
}

#[tokio::test]
async fn nth_ancestor_agrees_with_a_naive_walk() {
    let odb = odb();
    let chain = history_with(&odb, 260, 5, |n| n as i64).await;
    for &start in [chain[259], chain[200], chain[64], chain[1]].iter() {
        let naive = naive_first_parent_chain(&odb, start).await;
        for (n, expected) in naive.iter().enumerate() {
            assert_eq!(
                history::nth_ancestor(&odb, start, n as u64).await.unwrap(),
                *expected,
                "~{n}"
            );
        }
        let too_far = naive.len() as u64;
        let err = history::nth_ancestor(&odb, start, too_far)
            .await
            .unwrap_err();
        assert!(matches!(err, AncestorError::TooShallow { requested, .. } if requested == too_far));
    }
}

#[tokio::test]
async fn time_lookups_agree_with_a_naive_walk() {
    let odb = odb();
    // Irregular clock with steps backwards; stored times are still increasing.
    let chain = history_with(&odb, 200, 6, |n| {
        1_000 + ((n * 37) % 50) as i64 * 20 + n as i64 * 5
    })
    .await;
    let head = *chain.last().unwrap();
    let naive = naive_first_parent_chain(&odb, head).await;
    let mut times = Vec::new();
    for id in &naive {
        times.push(odb.commit(id).await.unwrap().time.as_millis());
    }
    assert!(
        times.windows(2).all(|w| w[0] > w[1]),
        "strictly increasing along first parents"
    );
    let (oldest, newest) = (*times.last().unwrap(), times[0]);
    for t in (oldest - 5)..=(newest + 5) {
        let expected = naive
            .iter()
            .zip(&times)
            .find(|(_, time)| **time <= t)
            .map(|(id, _)| *id);
        let got = history::first_parent_at_or_before(&odb, head, Timestamp::from_millis(t))
            .await
            .unwrap();
        assert_eq!(got, expected, "t={t}");
    }
}

#[tokio::test]
async fn ancestry_agrees_with_a_naive_search() {
    let odb = odb();
    let chain = history_with(&odb, 120, 4, |n| n as i64).await;
    let mut all: Vec<ObjectId> = naive_reachable(&odb, *chain.last().unwrap())
        .await
        .into_iter()
        .collect();
    all.sort();
    for (i, &d) in all.iter().enumerate().step_by(3) {
        let reachable = naive_reachable(&odb, d).await;
        for &a in all.iter().skip(i % 5).step_by(4) {
            assert_eq!(
                history::is_ancestor(&odb, a, d).await.unwrap(),
                reachable.contains(&a),
                "{a:?} <- {d:?}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random first-parent lengths and clocks: every walk agrees with the naive one.
    #[test]
    fn walks_agree_on_random_histories(
        clock in prop::collection::vec(0i64..100, 1..150),
        n in 0u64..200,
        t in 0i64..200,
    ) {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
            let odb = odb();
            let chain = history_with(&odb, clock.len(), 0, |i| clock[i]).await;
            let head = *chain.last().unwrap();
            let naive = naive_first_parent_chain(&odb, head).await;
            let got = history::nth_ancestor(&odb, head, n).await.ok();
            prop_assert_eq!(got, naive.get(n as usize).copied());
            let mut expected = None;
            for id in &naive {
                if odb.commit(id).await.unwrap().time.as_millis() <= t {
                    expected = Some(*id);
                    break;
                }
            }
            let got = history::first_parent_at_or_before(&odb, head, Timestamp::from_millis(t)).await.unwrap();
            prop_assert_eq!(got, expected);
            Ok(())
        })?;
    }
}
