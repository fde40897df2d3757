//! Shared fixtures for the store's tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_backend_memory::MemoryBackend;
use pangolin_store::{Content, ContentId, ContentKey, Entry, ObjectCache, Odb, RepoId};
use uuid::Uuid;

pub fn odb() -> Odb {
    odb_on(Arc::new(MemoryBackend::new()))
}

pub fn odb_on(backend: Arc<MemoryBackend>) -> Odb {
    Odb::new(
        RepoId::new("test").unwrap(),
        backend,
        Arc::new(ObjectCache::new(64 << 20)),
    )
}

/// Keys of several shapes: top-level, one and two namespace levels deep, sharing prefixes.
pub fn key(i: u64) -> ContentKey {
    match i % 3 {
        0 => ContentKey::new([format!("t{i:06}")]).unwrap(),
        1 => ContentKey::new([format!("ns{}", i % 7), format!("t{i:06}")]).unwrap(),
        _ => {
            ContentKey::new([format!("ns{}", i % 7), "sub".to_owned(), format!("t{i:06}")]).unwrap()
        }
    }
}

/// A table entry whose content depends on `version`, with a fixed identity per key.
pub fn entry(i: u64, version: u64) -> Entry {
    Entry {
        content_id: ContentId::from_uuid(Uuid::from_u128(u128::from(i) + 1)),
        content: Content::IcebergTable {
            metadata_location: format!("s3://bucket/t{i}/metadata/{version:05}.metadata.json"),
            snapshot_id: Some(version as i64),
            schema_id: 0,
            spec_id: 0,
            sort_order_id: 0,
        },
    }
}

pub fn model(range: impl Iterator<Item = u64>) -> BTreeMap<ContentKey, Entry> {
    range.map(|i| (key(i), entry(i, 0))).collect()
}
