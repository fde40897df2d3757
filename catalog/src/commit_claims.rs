//! Claims on the keys a commit changes, so that writers of one table take turns from planning
//! to queueing instead of planning side by side.
//!
//! Two writers of the same table that plan at once both read the table, both write a metadata
//! file, and only then does the queue find that the second one's table moved: it plans again,
//! writing a second file while it holds the queue, or is refused (an Iceberg client names the
//! snapshot it built on) after writing a file nothing will ever name. A writer that claims its
//! keys first plans on the commit queued before it: a change that cannot land is refused
//! without writing anything, one that can writes its file once. Writers of different keys never
//! wait for each other. The claims are one server's: writers on other servers are still
//! ordered by the branch's compare-and-swap, at the price of planning again.

use std::collections::HashMap;
use std::sync::Arc;

use pangolin_store::ContentKey;
use tokio::sync::{Mutex, OwnedMutexGuard};

/// The claimable keys of one branch; an entry lives while somebody holds or awaits it.
#[derive(Default)]
pub(crate) struct Claims {
    keys: parking_lot::Mutex<HashMap<ContentKey, Arc<Mutex<()>>>>,
}

impl std::fmt::Debug for Claims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claims")
            .field("keys", &self.keys.lock().len())
            .finish()
    }
}

impl Claims {
    /// Claims every key of `keys`, waiting for writers holding any of them. Keys are taken in
    /// order, so writers of overlapping sets cannot wait for each other in a circle.
    pub(crate) async fn claim(&self, keys: &[ContentKey]) -> Vec<Claim<'_>> {
        let mut sorted: Vec<&ContentKey> = keys.iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut claims = Vec::with_capacity(sorted.len());
        for key in sorted {
            let lock = {
                let mut keys = self.keys.lock();
                // A writer dropped while it waited can leave its key behind: sweep now and
                // then, so the map stays as small as the keys in use.
                if keys.len() >= 64 && keys.len().is_power_of_two() {
                    keys.retain(|_, lock| Arc::strong_count(lock) > 1);
                }
                keys.entry(key.clone()).or_default().clone()
            };
            // Made before waiting: a writer dropped while it waits still lets go of the entry.
            let mut claim = Claim {
                claims: self,
                key: key.clone(),
                lock: lock.clone(),
                held: None,
            };
            claim.held = Some(lock.lock_owned().await);
            claims.push(claim);
        }
        claims
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.lock().len()
    }
}

/// One held key; let go when dropped.
pub(crate) struct Claim<'a> {
    claims: &'a Claims,
    key: ContentKey,
    lock: Arc<Mutex<()>>,
    held: Option<OwnedMutexGuard<()>>,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        // The guard refers to the lock too: let go of it first.
        self.held = None;
        let mut keys = self.claims.keys.lock();
        // Only the map and this claim refer to it: nobody holds or awaits the key.
        if Arc::strong_count(&self.lock) == 2 {
            keys.remove(&self.key);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn key(name: &str) -> ContentKey {
        ContentKey::new([name]).unwrap()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_key_is_held_by_one_writer_at_a_time_and_forgotten_when_free() {
        let claims = Claims::default();
        let first = claims.claim(&[key("a"), key("b")]).await;
        assert_eq!(claims.len(), 2);
        // Another key is free; a held one is not.
        let other = claims.claim(&[key("c")]).await;
        drop(other);
        assert_eq!(claims.len(), 2, "a released key is forgotten");
        let b = [key("b")];
        let mut waiting = Box::pin(claims.claim(&b));
        assert!(
            tokio::time::timeout(Duration::from_millis(20), &mut waiting)
                .await
                .is_err(),
            "b is held"
        );
        drop(first);
        let second = waiting.await;
        assert_eq!(second.len(), 1);
        drop(second);
        assert_eq!(claims.len(), 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_writer_dropped_while_waiting_leaves_nothing_behind() {
        let claims = Claims::default();
        let a = [key("a")];
        let held = claims.claim(&a).await;
        let waiting = claims.claim(&a);
        assert!(
            tokio::time::timeout(Duration::from_millis(20), waiting)
                .await
                .is_err()
        );
        drop(held);
        assert_eq!(claims.len(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn overlapping_sets_in_opposite_orders_do_not_deadlock() {
        let claims = Arc::new(Claims::default());
        let mut tasks = tokio::task::JoinSet::new();
        for keys in [[key("a"), key("b")], [key("b"), key("a")]] {
            let claims = claims.clone();
            tasks.spawn(async move {
                for _ in 0..2_000 {
                    let held = claims.claim(&keys).await;
                    tokio::task::yield_now().await;
                    drop(held);
                }
            });
        }
        // A hang guard, not a timing: two thousand turns take milliseconds.
        tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(done) = tasks.join_next().await {
                done.unwrap();
            }
        })
        .await
        .expect("writers of overlapping keys waited for each other forever");
        assert_eq!(claims.len(), 0);
    }
}
