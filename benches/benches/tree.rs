//! Tree hot paths at 10^3..10^6 entries: warm point lookups, one-key and 100-key edits, and the
//! diff of two trees that differ in 10 keys.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pangolin_benches::{entry, key, odb, sizes, spread, tree_of, warm};
use pangolin_store::tree::{self, KeyRange};

/// Lookups per measured iteration; amortizes the runtime's `block_on`.
const GETS_PER_ITER: usize = 64;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

fn benches(c: &mut Criterion) {
    let rt = runtime();
    for n in sizes() {
        let odb = odb();
        let root = rt.block_on(async {
            let root = tree_of(&odb, n).await;
            warm(&odb, &root).await;
            root
        });

        let mut group = c.benchmark_group("tree");
        group
            .sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));

        let probes: Vec<_> = spread(n, 4_096).into_iter().map(key).collect();
        group.throughput(Throughput::Elements(GETS_PER_ITER as u64));
        // Baseline, same run: an in-process BTreeMap holding the same entries, no hashing,
        // no cache, no persistence.
        let map: BTreeMap<_, _> = (0..n).map(|i| (key(i), entry(i, 0))).collect();
        group.bench_with_input(BenchmarkId::new("baseline_btreemap_get", n), &n, |b, _| {
            let mut at = 0;
            b.iter(|| {
                for _ in 0..GETS_PER_ITER {
                    at = (at + 1) % probes.len();
                    black_box(map.get(&probes[at]).cloned());
                }
            });
        });
        drop(map);
        group.bench_with_input(BenchmarkId::new("get_warm", n), &n, |b, _| {
            let mut at = 0;
            b.iter(|| {
                rt.block_on(async {
                    for _ in 0..GETS_PER_ITER {
                        at = (at + 1) % probes.len();
                        black_box(tree::get(&odb, &root, &probes[at]).await.expect("get"));
                    }
                })
            });
        });

        // Edits cycle through a fixed set, so repeated iterations write nodes that already
        // exist and memory stays bounded.
        group.throughput(Throughput::Elements(1));
        let single: Vec<BTreeMap<_, _>> = spread(n, 256)
            .into_iter()
            .map(|i| BTreeMap::from([(key(i), Some(entry(i, 1)))]))
            .collect();
        group.bench_with_input(BenchmarkId::new("edit_1_key", n), &n, |b, _| {
            let mut at = 0;
            b.iter(|| {
                at = (at + 1) % single.len();
                rt.block_on(tree::edit(&odb, &root, single[at].clone()))
                    .expect("edit")
            });
        });

        let batches: Vec<BTreeMap<_, _>> = (0..16u64)
            .map(|s| {
                spread(n + s, 100)
                    .into_iter()
                    .map(|i| (key(i), Some(entry(i, 2 + s))))
                    .collect()
            })
            .collect();
        group.throughput(Throughput::Elements(100));
        group.bench_with_input(BenchmarkId::new("edit_100_keys", n), &n, |b, _| {
            let mut at = 0;
            b.iter(|| {
                at = (at + 1) % batches.len();
                rt.block_on(tree::edit(&odb, &root, batches[at].clone()))
                    .expect("edit")
            });
        });

        let changed: BTreeMap<_, _> = spread(n, 10)
            .into_iter()
            .map(|i| (key(i), Some(entry(i, 99))))
            .collect();
        let other = rt
            .block_on(tree::edit(&odb, &root, changed))
            .expect("edit")
            .root;
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(BenchmarkId::new("diff_10_changes", n), &n, |b, _| {
            b.iter(|| {
                rt.block_on(tree::diff(
                    &odb,
                    &root,
                    &other,
                    &KeyRange::all(),
                    usize::MAX,
                ))
                .expect("diff")
            });
        });
        group.finish();
    }
}

criterion_group!(tree_benches, benches);
criterion_main!(tree_benches);
