//! The tree's costs have the right shape: a one-key edit writes one node per level, a diff
//! reads nodes in proportion to the differences, and a walk steps over a subtree with one
//! descent, none in proportion to the tree size. Counts, not timings.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;

use common::{entry, key, model, odb};
use pangolin_store::ContentKey;
use pangolin_store::tree::{self, KeyRange};

#[tokio::test]
async fn a_one_key_edit_writes_one_node_per_level() {
    let odb = odb();
    let root = tree::build(&odb, model(0..50_000)).await.unwrap();
    let height = u64::from(odb.node(&root).await.unwrap().level()) + 1;
    let mut worst = 0;
    for i in (0..50_000).step_by(997) {
        let edits = BTreeMap::from([(key(i), Some(entry(i, 9)))]);
        let outcome = tree::edit(&odb, &root, edits).await.unwrap();
        worst = worst.max(outcome.nodes_written as u64);
    }
    // An update never moves a boundary, so exactly the path from leaf to root is rewritten.
    assert_eq!(worst, height, "height {height}");

    // Inserting or deleting a key may split or merge a node: a few more nodes at most.
    let mut worst = 0;
    for i in (0..50_000).step_by(991) {
        let delete = BTreeMap::from([(key(i), None)]);
        worst = worst.max(tree::edit(&odb, &root, delete).await.unwrap().nodes_written as u64);
        let insert = BTreeMap::from([(key(100_000 + i), Some(entry(i, 0)))]);
        worst = worst.max(tree::edit(&odb, &root, insert).await.unwrap().nodes_written as u64);
    }
    assert!(worst <= 2 * height + 1, "worst {worst} for height {height}");
}

#[tokio::test]
async fn diff_reads_nodes_in_proportion_to_the_changes() {
    let odb = odb();
    let base = model(0..50_000);
    let a = tree::build(&odb, base).await.unwrap();
    let height = u64::from(odb.node(&a).await.unwrap().level()) + 1;
    let changed: Vec<u64> = (0..10).map(|i| i * 4_999 + 17).collect();
    let edits = changed
        .iter()
        .map(|i| (key(*i), Some(entry(*i, 5))))
        .collect();
    let b = tree::edit(&odb, &a, edits).await.unwrap().root;

    let diff = tree::diff(&odb, &a, &b, &KeyRange::all(), usize::MAX)
        .await
        .unwrap();
    assert_eq!(diff.changes.len(), 10);
    // Each change costs at most one path on each side; a full read would be ~1,600 nodes.
    assert!(
        diff.nodes_read <= 2 * 10 * height,
        "read {} nodes for height {height}",
        diff.nodes_read
    );
}

#[tokio::test]
async fn a_walk_skips_a_subtree_with_one_descent() {
    let odb = odb();
    // Only the namespaced keys: seven top-level groups of about 4,800 entries each.
    let model: BTreeMap<_, _> = (0..50_000u64)
        .filter(|i| i % 3 != 0)
        .map(|i| (key(i), entry(i, 0)))
        .collect();
    let root = tree::build(&odb, model.clone()).await.unwrap();
    let height = u64::from(odb.node(&root).await.unwrap().level()) + 1;

    let mut walk = tree::Walk::new(&odb, &root, KeyRange::all()).await.unwrap();
    let mut firsts = Vec::new();
    while let Some((key, _)) = walk.next_entry(&odb).await.unwrap() {
        let group = key.truncated(1).unwrap();
        walk.skip_prefix(&group);
        firsts.push(key);
    }
    let mut expected: Vec<_> = Vec::new();
    for key in model.keys() {
        let group = key.truncated(1).unwrap();
        if expected
            .last()
            .is_none_or(|k: &ContentKey| !k.starts_with(&group))
        {
            expected.push(key.clone());
        }
    }
    assert_eq!(firsts, expected);
    assert_eq!(firsts.len(), 7);
    // The root, then at most one path below it per group; a full read would be ~1,000 nodes.
    assert!(
        walk.nodes_read() <= 1 + 7 * (height - 1),
        "read {} nodes for height {height}",
        walk.nodes_read()
    );
}
