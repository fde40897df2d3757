//! The tree agrees with a `BTreeMap` model under random edits, and its shape depends only on
//! its entries.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;

use common::{entry, key, model, odb};
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{ContentKey, Entry, ObjectId, Odb};
use proptest::prelude::*;

async fn all_entries(odb: &Odb, root: &ObjectId) -> Vec<(ContentKey, Entry)> {
    tree::list(odb, root, &KeyRange::all(), usize::MAX)
        .await
        .unwrap()
        .entries
}

async fn apply(
    odb: &Odb,
    root: ObjectId,
    model: &mut BTreeMap<ContentKey, Entry>,
    batch: &[(u64, Option<u64>)],
) -> ObjectId {
    let mut edits = BTreeMap::new();
    for (i, version) in batch {
        let edit = version.map(|v| entry(*i, v));
        match &edit {
            Some(e) => model.insert(key(*i), e.clone()),
            None => model.remove(&key(*i)),
        };
        edits.insert(key(*i), edit);
    }
    tree::edit(odb, &root, edits).await.unwrap().root
}

fn batches(
    keys: u64,
    max_batch: usize,
    max_batches: usize,
) -> impl Strategy<Value = Vec<Vec<(u64, Option<u64>)>>> {
    let edit = (0..keys, prop::option::weighted(0.6, 0..4u64));
    prop::collection::vec(prop::collection::vec(edit, 1..max_batch), 1..max_batches)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random edit batches on a small tree: contents match the model, every point lookup
    /// matches, and the root equals a fresh build of the model's entries.
    #[test]
    fn small_trees_match_the_model(batches in batches(400, 60, 8)) {
        runtime().block_on(async {
            let odb = odb();
            let mut root = tree::empty(&odb).await.unwrap();
            let mut model = BTreeMap::new();
            for batch in &batches {
                root = apply(&odb, root, &mut model, batch).await;
                let listed = all_entries(&odb, &root).await;
                prop_assert_eq!(&listed, &model.clone().into_iter().collect::<Vec<_>>());
                for (i, _) in batch {
                    prop_assert_eq!(tree::get(&odb, &root, &key(*i)).await.unwrap(), model.get(&key(*i)).cloned());
                }
                let rebuilt = tree::build(&odb, model.clone()).await.unwrap();
                prop_assert_eq!(root, rebuilt, "history independence");
            }
            Ok(())
        })?;
    }

    /// Edits on a tree with three levels, including deleting whole runs of keys (which merges
    /// nodes and can shrink the tree): the root always equals a fresh build.
    #[test]
    fn deep_trees_stay_canonical(
        batches in batches(12_000, 40, 4),
        cut in (0u64..12_000, 0u64..3_000),
    ) {
        runtime().block_on(async {
            let odb = odb();
            let mut model = model(0..10_000);
            let mut root = tree::build(&odb, model.clone()).await.unwrap();
            for batch in &batches {
                root = apply(&odb, root, &mut model, batch).await;
            }
            let (from, len) = cut;
            let run: Vec<(u64, Option<u64>)> = (from..from + len).map(|i| (i, None)).collect();
            root = apply(&odb, root, &mut model, &run).await;
            let rebuilt = tree::build(&odb, model.clone()).await.unwrap();
            prop_assert_eq!(root, rebuilt);
            prop_assert_eq!(odb.node(&root).await.unwrap().count(), model.len() as u64);
            Ok(())
        })?;
    }

    /// The same final set reached through different edit orders gives the same root.
    #[test]
    fn edit_order_does_not_change_the_root(
        keys in prop::collection::btree_set(0u64..2_000, 1..300),
        split in any::<prop::sample::Index>(),
    ) {
        runtime().block_on(async {
            let odb = odb();
            let keys: Vec<u64> = keys.into_iter().collect();
            let mut one_by_one = tree::empty(&odb).await.unwrap();
            for i in keys.iter().rev() {
                let edits = BTreeMap::from([(key(*i), Some(entry(*i, 0)))]);
                one_by_one = tree::edit(&odb, &one_by_one, edits).await.unwrap().root;
            }
            // Insert everything plus extra keys, then delete the extras, in two batches.
            let at = split.index(keys.len());
            let mut detour = tree::empty(&odb).await.unwrap();
            let extras: Vec<u64> = (5_000..5_000 + 200).collect();
            let mut first: BTreeMap<_, _> = keys[..at].iter().chain(&extras).map(|i| (key(*i), Some(entry(*i, 0)))).collect();
            first.extend(keys[at..].iter().map(|i| (key(*i), Some(entry(*i, 1)))));
            detour = tree::edit(&odb, &detour, first).await.unwrap().root;
            let mut second: BTreeMap<_, _> = extras.iter().map(|i| (key(*i), None)).collect();
            second.extend(keys[at..].iter().map(|i| (key(*i), Some(entry(*i, 0)))));
            detour = tree::edit(&odb, &detour, second).await.unwrap().root;
            prop_assert_eq!(one_by_one, detour);
            Ok(())
        })?;
    }

    /// Diff and paged listing agree with the model.
    #[test]
    fn diff_and_listing_agree_with_the_model(
        batch in prop::collection::vec((0u64..3_000, prop::option::weighted(0.6, 0..4u64)), 1..80),
        page in 1usize..50,
        prefix in 0u64..7,
    ) {
        runtime().block_on(async {
            let odb = odb();
            let before_model = model(0..2_500);
            let before = tree::build(&odb, before_model.clone()).await.unwrap();
            let mut after_model = before_model.clone();
            let after = apply(&odb, before, &mut after_model, &batch).await;

            let mut expected = Vec::new();
            for k in before_model.keys().chain(after_model.keys()).collect::<std::collections::BTreeSet<_>>() {
                let (b, a) = (before_model.get(k), after_model.get(k));
                if b != a {
                    expected.push((k.clone(), b.cloned(), a.cloned()));
                }
            }
            let mut got = Vec::new();
            let mut range = KeyRange::all();
            loop {
                let diff = tree::diff(&odb, &before, &after, &range, page).await.unwrap();
                prop_assert!(diff.changes.len() <= page);
                got.extend(diff.changes.into_iter().map(|c| (c.key, c.before, c.after)));
                match diff.next_after {
                    Some(k) => range = range.after(&k),
                    None => break,
                }
            }
            prop_assert_eq!(got, expected);

            let ns = ContentKey::new([format!("ns{prefix}")]).unwrap();
            let expected: Vec<_> = after_model.iter().filter(|(k, _)| k.starts_with(&ns)).map(|(k, e)| (k.clone(), e.clone())).collect();
            let mut listed = Vec::new();
            let mut range = KeyRange::prefix(ns);
            loop {
                let p = tree::list(&odb, &after, &range, page).await.unwrap();
                listed.extend(p.entries);
                match p.next_after {
                    Some(k) => range = range.after(&k),
                    None => break,
                }
            }
            prop_assert_eq!(listed, expected);
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn deleting_everything_gives_the_empty_tree() {
    let odb = odb();
    let model = model(0..9_000);
    let root = tree::build(&odb, model.clone()).await.unwrap();
    assert!(odb.node(&root).await.unwrap().level() >= 2);
    let edits = model.keys().map(|k| (k.clone(), None)).collect();
    let outcome = tree::edit(&odb, &root, edits).await.unwrap();
    assert_eq!(outcome.root, tree::empty_id());
    assert!(all_entries(&odb, &outcome.root).await.is_empty());
}

#[tokio::test]
async fn an_empty_edit_changes_nothing() {
    let odb = odb();
    let root = tree::build(&odb, model(0..100)).await.unwrap();
    let outcome = tree::edit(&odb, &root, BTreeMap::new()).await.unwrap();
    assert_eq!(outcome.root, root);
    assert_eq!(outcome.nodes_written, 0);
    let noop = BTreeMap::from([(key(50_000), None)]);
    assert_eq!(
        tree::edit(&odb, &root, noop).await.unwrap().root,
        root,
        "deleting an absent key"
    );
}

#[tokio::test]
async fn build_refuses_unsorted_input() {
    let odb = odb();
    let entries = vec![(key(3), entry(3, 0)), (key(3), entry(3, 1))];
    let err = tree::build(&odb, entries).await.unwrap_err();
    assert!(err.to_string().contains("strictly increasing"), "{err}");
    // Out of order across node boundaries too, not only inside one node.
    let mut entries: Vec<_> = model(0..2_000).into_iter().collect();
    entries.swap(100, 1_900);
    assert!(tree::build(&odb, entries).await.is_err());
}
