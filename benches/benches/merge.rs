//! Merging a branch with k changed tables into a diverged target, in catalogs of 10^4 and 10^6
//! tables: the cost should follow the changes, not the catalog size.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pangolin_benches::{clustered, entry, key, odb, sizes, spread, tree_of};
use pangolin_merge::{CommitMeta, MergeOptions, MergeOutcome, merge};
use pangolin_store::history;
use pangolin_store::tree;
use pangolin_store::{CommitDraft, ObjectId, Odb, Timestamp};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

async fn commit(odb: &Odb, parents: Vec<ObjectId>, tree: ObjectId, at: i64) -> ObjectId {
    let draft = CommitDraft {
        parents,
        tree,
        author: "bench".into(),
        committer: "bench".into(),
        message: "bench".into(),
        properties: BTreeMap::new(),
    };
    history::create(odb, draft, Timestamp::from_millis(at))
        .await
        .expect("commit")
        .0
}

/// A base commit with `n` tables; ours changes 10 tables of `schema_099` spread over the
/// catalog, theirs changes the tables `theirs` (none of them in `schema_099`, so the merge is
/// clean).
async fn branches(odb: &Odb, n: u64, theirs: &[u64]) -> (ObjectId, ObjectId) {
    let base_tree = tree_of(odb, n).await;
    let base = commit(odb, vec![], base_tree, 1).await;
    let step = (n / 10).max(100);
    let ours_edits = (99..n)
        .step_by(step as usize)
        .take(10)
        .map(|i| (key(i), Some(entry(i, 1))))
        .collect();
    let theirs_edits = theirs
        .iter()
        .map(|i| (key(*i), Some(entry(*i, 2))))
        .collect();
    let ours_tree = tree::edit(odb, &base_tree, ours_edits)
        .await
        .expect("edit")
        .root;
    let theirs_tree = tree::edit(odb, &base_tree, theirs_edits)
        .await
        .expect("edit")
        .root;
    let ours = commit(odb, vec![base], ours_tree, 2).await;
    let theirs = commit(odb, vec![base], theirs_tree, 3).await;
    (ours, theirs)
}

fn outside_schema_099(tables: Vec<u64>) -> Vec<u64> {
    tables.into_iter().filter(|i| i % 100 != 99).collect()
}

fn benches(c: &mut Criterion) {
    let rt = runtime();
    let meta = CommitMeta {
        author: "bench".into(),
        committer: "bench".into(),
        message: "merge".into(),
        properties: BTreeMap::new(),
        time: Timestamp::from_millis(10),
    };
    let mut group = c.benchmark_group("merge");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for n in sizes()
        .into_iter()
        .filter(|n| [10_000, 1_000_000].contains(n))
    {
        let cases = [
            ("10_changes", outside_schema_099(spread(n, 10))),
            ("100_changes", outside_schema_099(spread(n, 100))),
            ("1000_changes", outside_schema_099(spread(n, 1_000))),
            ("100_changes_one_namespace", clustered(n, 100)),
        ];
        // Baseline, same run: a catalog without structural sharing copies its whole map to
        // make the merged version, then applies the same changes.
        let map: BTreeMap<_, _> = (0..n).map(|i| (key(i), entry(i, 0))).collect();
        for (name, changed) in cases {
            let odb = odb();
            let (ours, theirs) = rt.block_on(branches(&odb, n, &changed));
            let label = format!("{n}_entries");
            group.bench_with_input(BenchmarkId::new(name, &label), &name, |b, _| {
                b.iter(|| {
                    let outcome = rt
                        .block_on(merge(&odb, ours, theirs, &MergeOptions::default(), &meta))
                        .expect("merge");
                    assert!(matches!(
                        outcome,
                        MergeOutcome::Merged {
                            commit: Some(_),
                            ..
                        }
                    ));
                    black_box(outcome)
                });
            });
            let changes: Vec<_> = changed.iter().map(|i| (key(*i), entry(*i, 2))).collect();
            let baseline = format!("{name}_baseline_copy");
            group.bench_with_input(BenchmarkId::new(baseline, &label), &name, |b, _| {
                b.iter(|| {
                    let mut merged = map.clone();
                    for (key, entry) in &changes {
                        merged.insert(key.clone(), entry.clone());
                    }
                    black_box(merged.len())
                });
            });
        }
    }
    group.finish();
}

criterion_group!(merge_benches, benches);
criterion_main!(merge_benches);
