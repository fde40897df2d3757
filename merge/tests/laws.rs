//! Merge laws over random trees, and agreement with a naive per-key model.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{namespace, table};
use pangolin_backend_memory::MemoryBackend;
use pangolin_merge::{
    ConflictKind, Decision, Strategy as MergeStrategy, TreeMergeOptions, decide, trees,
};
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{Content, ContentKey, Entry, ObjectCache, ObjectId, Odb, RepoId};
use proptest::prelude::*;

type Model = BTreeMap<ContentKey, Entry>;

fn odb() -> Odb {
    Odb::new(
        RepoId::new("laws").unwrap(),
        Arc::new(MemoryBackend::new()),
        Arc::new(ObjectCache::new(64 << 20)),
    )
}

/// Keys in a few namespaces; namespaces themselves are keys too.
fn key_of(i: u8) -> ContentKey {
    match i % 10 {
        0 => ContentKey::new([format!("ns{}", i % 3)]).unwrap(),
        _ => ContentKey::new([format!("ns{}", i % 3), format!("t{i}")]).unwrap(),
    }
}

fn entry_of(key: &ContentKey, seed: u8) -> Entry {
    // Identity mostly follows the key; seed 7 simulates a drop and re-create.
    let identity = u128::from(key.name().bytes().map(u32::from).sum::<u32>())
        + if seed == 7 { 1_000 } else { 0 };
    if key.len() == 1 {
        namespace(identity)
    } else {
        table(identity, u64::from(seed))
    }
}

/// An edit: key index and `None` to delete or `Some(seed)` to put.
fn edits() -> impl Strategy<Value = Vec<(u8, Option<u8>)>> {
    prop::collection::vec((0u8..60, prop::option::weighted(0.7, 0u8..8)), 0..25)
}

fn apply(model: &Model, edits: &[(u8, Option<u8>)]) -> Model {
    let mut out = model.clone();
    for (i, seed) in edits {
        let key = key_of(*i);
        match seed {
            Some(seed) => out.insert(key.clone(), entry_of(&key, *seed)),
            None => out.remove(&key),
        };
    }
    out
}

async fn store(odb: &Odb, model: &Model) -> ObjectId {
    tree::build(odb, model.clone()).await.unwrap()
}

async fn load(odb: &Odb, root: &ObjectId) -> Model {
    tree::list(odb, root, &KeyRange::all(), usize::MAX)
        .await
        .unwrap()
        .entries
        .into_iter()
        .collect()
}

/// The naive model: decide every key of the union, then the namespace rule.
fn model_merge(base: &Model, ours: &Model, theirs: &Model) -> (Model, Vec<ContentKey>) {
    let mut result = ours.clone();
    let mut conflicts = Vec::new();
    let keys: std::collections::BTreeSet<&ContentKey> = base
        .keys()
        .chain(ours.keys())
        .chain(theirs.keys())
        .collect();
    for key in &keys {
        match decide(base.get(*key), ours.get(*key), theirs.get(*key)) {
            Decision::Ours => {}
            Decision::Theirs => {
                match theirs.get(*key) {
                    Some(e) => result.insert((*key).clone(), e.clone()),
                    None => result.remove(*key),
                };
            }
            Decision::Conflict(_) => conflicts.push((*key).clone()),
        }
    }
    for key in &keys {
        let was_namespace = matches!(
            base.get(*key),
            Some(Entry {
                content: Content::Namespace { .. },
                ..
            })
        );
        if !was_namespace {
            continue;
        }
        for (deleter, other) in [(ours, theirs), (theirs, ours)] {
            let changed_under = keys.iter().any(|k| {
                k.starts_with(key)
                    && *k != *key
                    && other.get(*k).is_some()
                    && other.get(*k) != base.get(*k)
                    && deleter.get(*k) != other.get(*k)
            });
            if deleter.get(*key).is_none() && changed_under && !conflicts.contains(key) {
                conflicts.push((*key).clone());
            }
        }
    }
    conflicts.sort();
    (result, conflicts)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

async fn merged(
    odb: &Odb,
    base: &Model,
    ours: &Model,
    theirs: &Model,
) -> (Option<Model>, Vec<ContentKey>, Vec<ConflictKind>) {
    let (b, o, t) = (
        store(odb, base).await,
        store(odb, ours).await,
        store(odb, theirs).await,
    );
    let result = trees(odb, &b, &o, &t, &TreeMergeOptions::default())
        .await
        .unwrap();
    let conflicts = result.conflicts.iter().map(|c| c.key.clone()).collect();
    let kinds = result.conflicts.iter().map(|c| c.kind).collect();
    let tree = match result.tree {
        Some(root) => Some(load(odb, &root).await),
        None => None,
    };
    (tree, conflicts, kinds)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn merging_an_unchanged_source_keeps_ours(base in edits(), x in edits()) {
        runtime().block_on(async {
            let odb = odb();
            let b = apply(&Model::new(), &base);
            let ours = apply(&b, &x);
            let (tree, conflicts, _) = merged(&odb, &b, &ours, &b).await;
            prop_assert!(conflicts.is_empty());
            prop_assert_eq!(tree, Some(ours));
            Ok(())
        })?;
    }

    #[test]
    fn merging_into_an_unchanged_target_takes_theirs(base in edits(), y in edits()) {
        runtime().block_on(async {
            let odb = odb();
            let b = apply(&Model::new(), &base);
            let theirs = apply(&b, &y);
            let (tree, conflicts, _) = merged(&odb, &b, &b, &theirs).await;
            prop_assert!(conflicts.is_empty());
            prop_assert_eq!(tree, Some(theirs));
            Ok(())
        })?;
    }

    #[test]
    fn merging_the_same_change_is_that_change(base in edits(), x in edits()) {
        runtime().block_on(async {
            let odb = odb();
            let b = apply(&Model::new(), &base);
            let x = apply(&b, &x);
            let (tree, conflicts, _) = merged(&odb, &b, &x, &x).await;
            prop_assert!(conflicts.is_empty());
            prop_assert_eq!(tree, Some(x));
            Ok(())
        })?;
    }

    /// Edits to disjoint tables never conflict, and the result does not depend on which side
    /// is "ours".
    #[test]
    fn disjoint_edits_never_conflict_and_commute(base in edits(), x in edits(), y in edits()) {
        runtime().block_on(async {
            let odb = odb();
            let b = apply(&Model::new(), &base);
            // Ours edits even-numbered tables, theirs odd ones; namespaces are left alone.
            let pick = |edits: &[(u8, Option<u8>)], parity: u8| -> Vec<(u8, Option<u8>)> {
                edits.iter().copied().filter(|(i, _)| i % 10 != 0 && i % 2 == parity).collect()
            };
            let ours = apply(&b, &pick(&x, 0));
            let theirs = apply(&b, &pick(&y, 1));
            let (one, conflicts_one, _) = merged(&odb, &b, &ours, &theirs).await;
            let (other, conflicts_other, _) = merged(&odb, &b, &theirs, &ours).await;
            prop_assert!(conflicts_one.is_empty() && conflicts_other.is_empty());
            prop_assert_eq!(one, other);
            Ok(())
        })?;
    }

    /// Any three trees: the merge agrees with the naive per-key model, including which keys
    /// conflict; a conflicting merge writes no tree.
    #[test]
    fn merges_agree_with_the_model(base in edits(), x in edits(), y in edits()) {
        runtime().block_on(async {
            let odb = odb();
            let b = apply(&Model::new(), &base);
            let ours = apply(&b, &x);
            let theirs = apply(&b, &y);
            let (expected, expected_conflicts) = model_merge(&b, &ours, &theirs);
            let (tree, conflicts, _) = merged(&odb, &b, &ours, &theirs).await;
            prop_assert_eq!(&conflicts, &expected_conflicts);
            if expected_conflicts.is_empty() {
                prop_assert_eq!(tree, Some(expected));
            } else {
                prop_assert_eq!(tree, None);
            }
            Ok(())
        })?;
    }

    /// With a whole-merge strategy every conflict is settled: preferring ours keeps our value
    /// on each conflicting key, preferring theirs takes theirs.
    #[test]
    fn strategies_settle_every_conflict(base in edits(), x in edits(), y in edits()) {
        runtime().block_on(async {
            let odb = odb();
            let b = apply(&Model::new(), &base);
            let ours = apply(&b, &x);
            let theirs = apply(&b, &y);
            let (clean, conflict_keys) = model_merge(&b, &ours, &theirs);
            let roots = (store(&odb, &b).await, store(&odb, &ours).await, store(&odb, &theirs).await);
            for (strategy, winner) in [(MergeStrategy::PreferOurs, &ours), (MergeStrategy::PreferTheirs, &theirs)] {
                let options = TreeMergeOptions { strategy, ..TreeMergeOptions::default() };
                let result = trees(&odb, &roots.0, &roots.1, &roots.2, &options).await.unwrap();
                prop_assert!(result.conflicts.is_empty());
                let got = load(&odb, &result.tree.unwrap()).await;
                let mut expected = clean.clone();
                for key in &conflict_keys {
                    match winner.get(key) {
                        Some(e) => expected.insert(key.clone(), e.clone()),
                        None => expected.remove(key),
                    };
                }
                prop_assert_eq!(got, expected);
            }
            Ok(())
        })?;
    }
}
