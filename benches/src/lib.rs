//! Fixtures shared by the benchmarks: catalogs of a given size with realistic keys and entries.

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_backend_memory::MemoryBackend;
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{Content, ContentId, ContentKey, Entry, ObjectCache, ObjectId, Odb, RepoId};
use uuid::Uuid;

pub mod e2e;

/// Catalog sizes benchmarked, capped by `PANGOLIN_BENCH_MAX_ENTRIES` (the test suite runs the
/// benchmarks once at small sizes).
pub fn sizes() -> Vec<u64> {
    let max = std::env::var("PANGOLIN_BENCH_MAX_ENTRIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000u64);
    [1_000, 10_000, 100_000, 1_000_000]
        .into_iter()
        .filter(|n| *n <= max)
        .collect()
}

/// A table key: 100 namespaces of tables, like a warehouse with many schemas.
pub fn key(i: u64) -> ContentKey {
    ContentKey::new([format!("schema_{:03}", i % 100), format!("table_{i:08}")])
        .expect("generated keys are valid")
}

/// An Iceberg table entry; `version` changes its metadata location and snapshot.
pub fn entry(i: u64, version: u64) -> Entry {
    Entry {
        content_id: ContentId::from_uuid(Uuid::from_u128(u128::from(i) + 1)),
        content: Content::IcebergTable {
            metadata_location: format!(
                "s3://warehouse/schema_{:03}/table_{i:08}/metadata/{version:05}-{:032x}.metadata.json",
                i % 100,
                u128::from(i) * 7919 + u128::from(version)
            ),
            snapshot_id: Some(i64::try_from(version).unwrap_or(i64::MAX)),
            schema_id: 0,
            spec_id: 0,
            sort_order_id: 0,
        },
    }
}

/// An object database on the memory backend with a cache large enough for a warm 10^6 tree.
pub fn odb() -> Odb {
    Odb::new(
        RepoId::new("bench").expect("valid id"),
        Arc::new(MemoryBackend::new()),
        Arc::new(ObjectCache::new(2 << 30)),
    )
}

/// `count` tables of namespace `schema_000`, which sit together in key order.
pub fn clustered(n: u64, count: usize) -> Vec<u64> {
    (0..n).step_by(100).take(count).collect()
}

/// A tree of `n` entries (keys `0..n`), bulk built.
pub async fn tree_of(odb: &Odb, n: u64) -> ObjectId {
    let entries: BTreeMap<ContentKey, Entry> = (0..n).map(|i| (key(i), entry(i, 0))).collect();
    tree::build(odb, entries)
        .await
        .expect("memory backend does not fail")
}

/// Reads every node of the tree once, so that benchmarks start warm.
pub async fn warm(odb: &Odb, root: &ObjectId) {
    tree::list(odb, root, &KeyRange::all(), usize::MAX)
        .await
        .expect("readable");
}

/// A cheap deterministic sequence of indexes in `0..n` (no need for a random-number crate).
pub fn spread(n: u64, count: usize) -> Vec<u64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        })
        .collect()
}
