//! Vended credentials kept per (prefixes, access) until shortly before they expire.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use quick_cache::sync::Cache;

use super::{S3Prefix, Vended};
use crate::Access;

/// How many distinct (prefixes, access) pairs are kept.
const CAPACITY: usize = 10_000;

pub(super) type Key = (Vec<S3Prefix>, Access);

pub(super) struct CredentialCache {
    entries: Cache<Key, Arc<Vended>>,
    /// Entries with less time than this left are fetched again.
    margin: Duration,
}

impl CredentialCache {
    pub(super) fn new(margin: Duration) -> Self {
        Self {
            entries: Cache::new(CAPACITY),
            margin,
        }
    }

    fn fresh(&self, vended: &Vended) -> bool {
        vended
            .expires_at
            .duration_since(SystemTime::now())
            .is_ok_and(|left| left > self.margin)
    }

    /// The cached value for `key` while it is fresh; else `fetch`'s, stored on success.
    /// Concurrent callers for one key wait for a single fetch rather than each making one.
    pub(super) async fn get_or_fetch<F, Fut, E>(&self, key: Key, fetch: F) -> Result<Arc<Vended>, E>
    where
        F: FnOnce(Key) -> Fut,
        Fut: Future<Output = Result<Arc<Vended>, E>>,
    {
        loop {
            match self.entries.get_value_or_guard_async(&key).await {
                Ok(vended) if self.fresh(&vended) => return Ok(vended),
                Ok(_) => {
                    // Stale: drop it and take the guard on the next turn.
                    self.entries.remove(&key);
                }
                Err(guard) => {
                    let vended = fetch(key).await?;
                    let _ = guard.insert(vended.clone());
                    return Ok(vended);
                }
            }
        }
    }
}
