//! A read-through cache of decoded immutable objects.
//!
//! An id never changes its bytes, so entries never need invalidating: the cache only has to
//! bound its memory. One cache is shared by every repository of a server.

use std::fmt;

use quick_cache::Weighter;
use quick_cache::sync::Cache;

use crate::backend::RepoId;
use crate::id::ObjectId;
use crate::object::Object;

/// Default memory budget, in approximate bytes of decoded objects.
pub const DEFAULT_CACHE_BYTES: u64 = 256 << 20;

type Key = (RepoId, ObjectId);

#[derive(Clone)]
struct ApproximateSize;

impl Weighter<Key, Object> for ApproximateSize {
    /// A cheap estimate of the decoded size; exactness does not matter, proportionality does.
    fn weight(&self, _key: &Key, object: &Object) -> u64 {
        let items = match object {
            Object::Commit(commit) => return 256 + 32 * commit.skips.len() as u64,
            Object::Tree(node) => node.len() as u64,
        };
        let per_item = match object {
            Object::Tree(node) if node.level() == 0 => 160,
            _ => 96,
        };
        64 + items * per_item
    }
}

pub struct ObjectCache {
    inner: Cache<Key, Object, ApproximateSize>,
}

impl ObjectCache {
    /// A cache holding about `capacity_bytes` of decoded objects.
    pub fn new(capacity_bytes: u64) -> Self {
        // quick_cache sizes its tables from an item estimate; assume small tree nodes.
        let estimated_items = (capacity_bytes / 4096).max(64) as usize;
        Self {
            inner: Cache::with_weighter(estimated_items, capacity_bytes, ApproximateSize),
        }
    }

    pub fn get(&self, repo: &RepoId, id: &ObjectId) -> Option<Object> {
        self.inner.get(&(repo.clone(), *id))
    }

    pub fn insert(&self, repo: &RepoId, id: ObjectId, object: Object) {
        self.inner.insert((repo.clone(), id), object);
    }

    /// Drops `ids` of `repo`: objects deleted from the store are not served from here either.
    pub fn forget(&self, repo: &RepoId, ids: &[ObjectId]) {
        for id in ids {
            self.inner.remove(&(repo.clone(), *id));
        }
    }

    /// Drops every object of `repo` (a deleted catalog's): one pass over the whole cache.
    pub fn forget_repo(&self, repo: &RepoId) {
        self.inner.retain(|(r, _), _| r != repo);
    }

    pub fn len(&self) -> usize {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    pub fn weight(&self) -> u64 {
        self.inner.weight()
    }

    /// Lookups that found their object, since the cache was made.
    pub fn hits(&self) -> u64 {
        self.inner.hits()
    }

    /// Lookups that did not (the object was read from the backend, or did not exist).
    pub fn misses(&self) -> u64 {
        self.inner.misses()
    }
}

impl Default for ObjectCache {
    fn default() -> Self {
        Self::new(DEFAULT_CACHE_BYTES)
    }
}

impl fmt::Debug for ObjectCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectCache")
            .field("len", &self.len())
            .field("weight", &self.weight())
            .finish()
    }
}
