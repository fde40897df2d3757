//! Delegated credentials kept per (prefixes, access) until shortly before they expire.

use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use quick_cache::sync::Cache;

use crate::Access;

/// How many distinct (prefixes, access) pairs are kept.
const CAPACITY: usize = 10_000;

/// Credentials that stop working at some time.
pub(crate) trait Expiring {
    fn expires_at(&self) -> SystemTime;
}

/// Credentials of type `V` for prefixes of type `P`.
pub(crate) struct CredentialCache<P: Eq + Hash + Clone, V> {
    entries: Cache<(Vec<P>, Access), Arc<V>>,
    /// Entries with less time than this left are fetched again.
    margin: Duration,
}

impl<P: Eq + Hash + Clone, V: Expiring> CredentialCache<P, V> {
    pub(crate) fn new(margin: Duration) -> Self {
        Self {
            entries: Cache::new(CAPACITY),
            margin,
        }
    }

    fn fresh(&self, value: &V) -> bool {
        value
            .expires_at()
            .duration_since(SystemTime::now())
            .is_ok_and(|left| left > self.margin)
    }

    /// The cached value for `key` while it is fresh; else `fetch`'s, stored on success.
    /// Concurrent callers for one key wait for a single fetch rather than each making one.
    pub(crate) async fn get_or_fetch<F, Fut, E>(
        &self,
        key: (Vec<P>, Access),
        fetch: F,
    ) -> Result<Arc<V>, E>
    where
        F: FnOnce((Vec<P>, Access)) -> Fut,
        Fut: Future<Output = Result<Arc<V>, E>>,
    {
        loop {
            match self.entries.get_value_or_guard_async(&key).await {
                Ok(value) if self.fresh(&value) => return Ok(value),
                Ok(_) => {
                    // Stale: drop it and take the guard on the next turn.
                    self.entries.remove(&key);
                }
                Err(guard) => {
                    let value = fetch(key).await?;
                    let _ = guard.insert(value.clone());
                    return Ok(value);
                }
            }
        }
    }
}

/// How long before expiry cached credentials stop being handed out: a quarter of their
/// lifetime, at least 30 seconds, so whoever gets them has most of their life left.
pub(crate) fn refresh_margin(lifetime: Duration) -> Duration {
    (lifetime / 4).max(Duration::from_secs(30))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_credentials_keep_most_of_their_life() {
        assert_eq!(
            refresh_margin(Duration::from_secs(900)),
            Duration::from_secs(225)
        );
        assert_eq!(
            refresh_margin(Duration::from_secs(60)),
            Duration::from_secs(30)
        );
    }
}
