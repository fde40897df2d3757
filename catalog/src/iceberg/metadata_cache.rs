//! Parsed table metadata in memory, shared by a server's warehouses and bounded by the memory
//! it takes rather than by a count of files.
//!
//! A count bounded nothing: one table with thousands of snapshots has a metadata file of
//! megabytes, and each warehouse kept its own ten thousand. An entry is now weighed from its
//! file's size: measured on files of 11 KB to 357 KB (thirty columns, ten to five hundred
//! snapshots with an engine's summaries; `benches/src/bin/metadata-memory.rs`), the parsed
//! metadata held 4.1 to 6.0 times the file's size in memory, and its JSON (kept once
//! answered) once more.
//!
//! Metadata files never change once written, so an entry is right until it is evicted. Each
//! [`FileIo`](super::FileIo) keys its files apart: two warehouses may name the same path on
//! different endpoints.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use quick_cache::sync::Cache;
use quick_cache::{Equivalent, OptionsBuilder, Weighter};

use super::io::MetadataJson;
use super::metadata::TableMetadata;

/// Memory an entry is taken to hold per byte of its file, parsed and as JSON: the most
/// measured (small files, whose fixed parts weigh the most).
const HELD_PER_FILE_BYTE: u64 = 7;

/// A server's budget unless it is given one: 512 MiB.
pub const DEFAULT_CAPACITY_BYTES: u64 = 512 << 20;

/// A cached metadata file: parsed, and its JSON once something asked for it.
#[derive(Clone)]
pub(crate) struct Cached {
    pub(crate) metadata: Arc<TableMetadata>,
    pub(crate) json: Arc<OnceLock<MetadataJson>>,
    /// The file's size in bytes.
    pub(crate) file_bytes: u64,
}

#[derive(PartialEq, Eq, Hash)]
struct Key {
    io: u64,
    location: String,
}

/// A lookup without allocating a key: hashes as [`Key`] does.
#[derive(Hash)]
struct Probe<'a> {
    io: u64,
    location: &'a str,
}

impl Equivalent<Key> for Probe<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        self.io == key.io && self.location == key.location
    }
}

#[derive(Clone)]
struct Held;

impl Weighter<Key, Cached> for Held {
    fn weight(&self, key: &Key, cached: &Cached) -> u64 {
        (key.location.len() as u64 + cached.file_bytes) * HELD_PER_FILE_BYTE
    }
}

/// Parsed metadata files of a server, up to a budget of memory.
pub struct MetadataCache {
    entries: Cache<Key, Cached, Held>,
    next_io: AtomicU64,
}

impl std::fmt::Debug for MetadataCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataCache")
            .field("entries", &self.entries.len())
            .field("weight", &self.entries.weight())
            .field("capacity", &self.entries.capacity())
            .finish()
    }
}

impl Default for MetadataCache {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY_BYTES)
    }
}

impl MetadataCache {
    /// A cache holding metadata taking about `capacity_bytes` of memory. A file is cached when
    /// its weight (seven times its size) fits in the budget.
    pub fn new(capacity_bytes: u64) -> Self {
        let capacity_bytes = capacity_bytes.max(1);
        // One shard: quick_cache admits an entry only if it fits in its shard's part of the
        // budget, and the largest files are the ones most worth keeping parsed.
        let options = OptionsBuilder::new()
            .shards(1)
            .estimated_items_capacity((capacity_bytes / (64 << 10)).clamp(16, 1 << 20) as usize)
            .weight_capacity(capacity_bytes)
            .build()
            .unwrap_or_else(|_| unreachable!("both capacities are set"));
        Self {
            entries: Cache::with_options(options, Held, Default::default(), Default::default()),
            next_io: AtomicU64::new(0),
        }
    }

    /// A key space of its own, for one [`FileIo`](super::FileIo)'s files.
    pub(crate) fn new_io(&self) -> u64 {
        self.next_io.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn get(&self, io: u64, location: &str) -> Option<Cached> {
        self.entries.get(&Probe { io, location })
    }

    pub(crate) fn insert(&self, io: u64, location: &str, cached: Cached) {
        let key = Key {
            io,
            location: location.to_owned(),
        };
        self.entries.insert(key, cached);
    }

    pub(crate) fn remove(&self, io: u64, location: &str) {
        self.entries.remove(&Probe { io, location });
    }

    /// Files held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The memory the held files are taken to use, in bytes.
    pub fn weight(&self) -> u64 {
        self.entries.weight()
    }

    pub fn hits(&self) -> u64 {
        self.entries.hits()
    }

    pub fn misses(&self) -> u64 {
        self.entries.misses()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn entry(file_bytes: u64) -> Cached {
        let metadata: TableMetadata = serde_json::from_value(serde_json::json!({
            "format-version": 2,
            "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "file:///w/t",
            "last-sequence-number": 0,
            "last-updated-ms": 1_700_000_000_000_i64,
            "last-column-id": 1,
            "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "id", "required": true, "type": "long"}]}],
            "default-spec-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999,
            "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
        }))
        .unwrap();
        Cached {
            metadata: Arc::new(metadata),
            json: Arc::default(),
            file_bytes,
        }
    }

    #[test]
    fn the_budget_bounds_the_memory_not_the_count() {
        let cache = MetadataCache::new(6 * 1_000_000);
        let io = cache.new_io();
        for i in 0..100 {
            cache.insert(io, &format!("f{i}"), entry(100_000));
        }
        // Each weighs 700,000 and more: at most eight fit, not a hundred.
        assert!(cache.len() <= 8, "{} held", cache.len());
        assert!(cache.weight() <= 6 * 1_000_000);
        assert!(cache.get(io, "f99").is_some(), "the newest is held");
    }

    #[test]
    fn a_file_as_large_as_the_budget_allows_is_held() {
        let cache = MetadataCache::new(64 << 20);
        let io = cache.new_io();
        // Eight MB: fifty-six of the sixty-four MiB.
        cache.insert(io, "big", entry(8_000_000));
        assert!(cache.get(io, "big").is_some());
        // Too large for the whole budget: not held, and nothing else is pushed out.
        cache.insert(io, "small", entry(1_000));
        cache.insert(io, "huge", entry(20_000_000));
        assert!(cache.get(io, "huge").is_none());
        assert!(cache.get(io, "small").is_some());
    }

    #[test]
    fn stores_sharing_a_cache_do_not_see_each_others_files() {
        let cache = MetadataCache::new(16 << 20);
        let (a, b) = (cache.new_io(), cache.new_io());
        cache.insert(a, "s3://bucket/t/metadata/1.json", entry(1_000));
        assert!(cache.get(a, "s3://bucket/t/metadata/1.json").is_some());
        assert!(cache.get(b, "s3://bucket/t/metadata/1.json").is_none());
        cache.remove(a, "s3://bucket/t/metadata/1.json");
        assert!(cache.is_empty());
    }
}
