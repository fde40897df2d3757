//! Listing the children of a namespace in catalogs of 10^3 and 10^4 tables: the scan of every
//! key under the parent that listing used to be, against the walk that steps over each child
//! namespace's subtree. The walk's cost should follow the children, not the catalog size.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pangolin_benches::{entry, key, odb, sizes, warm};
use pangolin_catalog::list::children;
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{Content, ContentId, ContentKey, ContentKind, Entry, ObjectId, Odb};
use uuid::Uuid;

/// Every namespace (100 schemas) fits in one page.
const LIMIT: usize = 1_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

/// `n` tables spread over 100 schemas (the shared fixture's keys), and the schemas themselves.
async fn catalog_of(odb: &Odb, n: u64) -> ObjectId {
    let mut entries: BTreeMap<ContentKey, Entry> = (0..n).map(|i| (key(i), entry(i, 0))).collect();
    for i in 0..100u64 {
        let schema = key(i).parent().expect("tables sit in a schema");
        let namespace = Entry {
            content_id: ContentId::from_uuid(Uuid::from_u128(u128::from(n + i) + 1)),
            content: Content::Namespace {
                properties: BTreeMap::new(),
            },
        };
        entries.insert(schema, namespace);
    }
    tree::build(odb, entries)
        .await
        .expect("memory backend does not fail")
}

/// The listing as it was: every key under the parent, in pages of 1,000, deeper keys and other
/// kinds dropped.
async fn scan(
    odb: &Odb,
    root: &ObjectId,
    parent: Option<&ContentKey>,
    kind: ContentKind,
    limit: usize,
) -> (Vec<(ContentKey, Entry)>, Option<ContentKey>) {
    let depth = parent.map_or(1, |p| p.len() + 1);
    let mut range = match parent {
        Some(p) => KeyRange::prefix(p.clone()),
        None => KeyRange::all(),
    };
    let mut found: Vec<(ContentKey, Entry)> = Vec::new();
    loop {
        let page = tree::list(odb, root, &range, 1_000).await.expect("list");
        for (key, entry) in page.entries {
            if key.len() == depth && entry.content.kind() == kind {
                if found.len() == limit {
                    let next = found.last().map(|(k, _)| k.clone());
                    return (found, next);
                }
                found.push((key, entry));
            }
        }
        match page.next_after {
            Some(next) => range = range.after(&next),
            None => return (found, None),
        }
    }
}

fn benches(c: &mut Criterion) {
    let rt = runtime();
    for n in sizes().into_iter().filter(|n| *n <= 10_000) {
        let odb = odb();
        let root = rt.block_on(async {
            let root = catalog_of(&odb, n).await;
            warm(&odb, &root).await;
            root
        });
        let walked = rt
            .block_on(children(
                &odb,
                &root,
                None,
                ContentKind::Namespace,
                None,
                LIMIT,
            ))
            .expect("list");
        assert_eq!(
            walked,
            rt.block_on(scan(&odb, &root, None, ContentKind::Namespace, LIMIT))
        );
        assert_eq!(walked.0.len(), 100);

        let mut group = c.benchmark_group("list_namespaces");
        group
            .sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3))
            .throughput(Throughput::Elements(1));
        group.bench_with_input(BenchmarkId::new("scan", n), &n, |b, _| {
            b.iter(|| {
                black_box(rt.block_on(scan(&odb, &root, None, ContentKind::Namespace, LIMIT)))
            });
        });
        group.bench_with_input(BenchmarkId::new("walk", n), &n, |b, _| {
            b.iter(|| {
                black_box(
                    rt.block_on(children(
                        &odb,
                        &root,
                        None,
                        ContentKind::Namespace,
                        None,
                        LIMIT,
                    ))
                    .expect("list"),
                )
            });
        });
        group.finish();

        // Listing the tables of one schema: every child is read either way.
        let schema = key(0).parent().expect("tables sit in a schema");
        let mut group = c.benchmark_group("list_tables");
        group
            .sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3))
            .throughput(Throughput::Elements(1));
        group.bench_with_input(BenchmarkId::new("scan", n), &n, |b, _| {
            b.iter(|| {
                black_box(rt.block_on(scan(
                    &odb,
                    &root,
                    Some(&schema),
                    ContentKind::IcebergTable,
                    LIMIT,
                )))
            });
        });
        group.bench_with_input(BenchmarkId::new("walk", n), &n, |b, _| {
            b.iter(|| {
                black_box(
                    rt.block_on(children(
                        &odb,
                        &root,
                        Some(&schema),
                        ContentKind::IcebergTable,
                        None,
                        LIMIT,
                    ))
                    .expect("list"),
                )
            });
        });
        group.finish();
    }
}

criterion_group!(listing_benches, benches);
criterion_main!(listing_benches);
