//! The events of recent ref-log entries, derived once and shared by every reader of a server:
//! consumers following a catalog read the same new entries, and paging through an entry that
//! moved a ref over many commits would otherwise derive it again for every page.

use std::sync::Arc;

use pangolin_refs::RefLogEntry;
use pangolin_store::{ObjectId, RepoId};
use quick_cache::Weighter;
use quick_cache::sync::Cache;

use super::Event;

/// Default budget, in events (a few hundred bytes each).
pub const DEFAULT_CACHE_EVENTS: u64 = 100_000;

/// An entry is named by everything its events derive from, so a repository dropped and made
/// again, whose numbers may start over in some stores, can never be answered from the old one.
type Key = (RepoId, u64, Option<ObjectId>, Option<ObjectId>, i64);

#[derive(Clone)]
struct Count;

impl Weighter<Key, Arc<Vec<Event>>> for Count {
    fn weight(&self, _key: &Key, events: &Arc<Vec<Event>>) -> u64 {
        events.len() as u64 + 1
    }
}

/// Derived events by ref-log entry, bounded by their number.
pub struct EventCache {
    inner: Cache<Key, Arc<Vec<Event>>, Count>,
}

impl EventCache {
    pub fn new(events: u64) -> Self {
        // The estimate of items only sizes the cache's tables.
        let items = usize::try_from(events / 8).unwrap_or(usize::MAX).max(16);
        Self {
            inner: Cache::with_weighter(items, events.max(1), Count),
        }
    }

    fn key(repo: &RepoId, entry: &RefLogEntry) -> Key {
        (
            repo.clone(),
            entry.sequence,
            entry.old,
            entry.new,
            entry.time.as_millis(),
        )
    }

    pub(super) fn get(&self, repo: &RepoId, entry: &RefLogEntry) -> Option<Arc<Vec<Event>>> {
        self.inner.get(&Self::key(repo, entry))
    }

    pub(super) fn insert(&self, repo: &RepoId, entry: &RefLogEntry, events: Arc<Vec<Event>>) {
        self.inner.insert(Self::key(repo, entry), events);
    }
}

impl Default for EventCache {
    fn default() -> Self {
        Self::new(DEFAULT_CACHE_EVENTS)
    }
}

impl std::fmt::Debug for EventCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventCache")
            .field("entries", &self.inner.len())
            .field("events", &self.inner.weight())
            .finish()
    }
}
