//! Prints what tree operations cost in nodes (not time) at each catalog size: the tree's
//! height, nodes written by one-key edits, and nodes read by a diff of 10 changes.
//!
//! `cargo run --release -p pangolin-benches --bin tree-costs`

use std::collections::BTreeMap;
use std::time::Instant;

use pangolin_benches::{entry, key, odb, sizes, spread, tree_of};
use pangolin_store::tree::{self, KeyRange};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!(
        "| entries | build (s) | height | nodes | update: nodes written (max) | insert/delete: nodes written (max) | diff of 10 changes: nodes read |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for n in sizes() {
        let odb = odb();
        let started = Instant::now();
        let root = tree_of(&odb, n).await;
        let build = started.elapsed().as_secs_f64();
        let top = odb.node(&root).await.expect("root");
        let height = u32::from(top.level()) + 1;
        let nodes = count_nodes(&odb, root).await;

        let mut update_max = 0;
        for i in spread(n, 200) {
            let edits = BTreeMap::from([(key(i), Some(entry(i, 1)))]);
            let outcome = tree::edit(&odb, &root, edits).await.expect("edit");
            update_max = update_max.max(outcome.nodes_written);
        }
        let mut insert_delete_max = 0;
        for i in spread(n, 200) {
            for edit in [(key(i), None), (key(n + i), Some(entry(n + i, 0)))] {
                let outcome = tree::edit(&odb, &root, BTreeMap::from([edit]))
                    .await
                    .expect("edit");
                insert_delete_max = insert_delete_max.max(outcome.nodes_written);
            }
        }
        let changed: BTreeMap<_, _> = spread(n, 10)
            .into_iter()
            .map(|i| (key(i), Some(entry(i, 99))))
            .collect();
        let other = tree::edit(&odb, &root, changed).await.expect("edit").root;
        let diff = tree::diff(&odb, &root, &other, &KeyRange::all(), usize::MAX)
            .await
            .expect("diff");
        assert_eq!(diff.changes.len(), 10);
        println!(
            "| {n} | {build:.2} | {height} | {nodes} | {update_max} | {insert_delete_max} | {} |",
            diff.nodes_read
        );
    }
}

async fn count_nodes(odb: &pangolin_store::Odb, root: pangolin_store::ObjectId) -> u64 {
    let mut stack = vec![root];
    let mut count = 0;
    while let Some(id) = stack.pop() {
        count += 1;
        if let pangolin_store::tree::NodeView::Inner { children, .. } =
            odb.node(&id).await.expect("node").view()
        {
            stack.extend(children.iter().map(|c| c.id));
        }
    }
    count
}
