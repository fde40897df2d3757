//! Tables this server answered a staged create for and that are not committed yet, so the
//! metrics a client reports for one (Spark reports a staged table's commit before the table
//! exists in the catalog) are taken, not refused as a missing table.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a staged create is remembered: a client commits it well within this.
pub const STAGED_LIFETIME: Duration = Duration::from_secs(60 * 60);

/// At most this many staged creates are remembered; the oldest are forgotten first.
const CAPACITY: usize = 10_000;

/// Staged creates by `tenant/catalog/key`, with when they were staged.
#[derive(Debug, Default)]
pub struct StagedTables {
    staged: Mutex<HashMap<String, Instant>>,
}

impl StagedTables {
    pub fn remember(&self, tenant: &str, catalog: &str, key: &str) {
        let now = Instant::now();
        let mut staged = self.staged.lock();
        if staged.len() >= CAPACITY {
            staged.retain(|_, at| now.duration_since(*at) < STAGED_LIFETIME);
        }
        if staged.len() >= CAPACITY
            && let Some(oldest) = staged
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(k, _)| k.clone())
        {
            staged.remove(&oldest);
        }
        staged.insert(format!("{tenant}/{catalog}/{key}"), now);
    }

    /// Whether a create of this table was staged here within the lifetime.
    pub fn contains(&self, tenant: &str, catalog: &str, key: &str) -> bool {
        self.staged
            .lock()
            .get(&format!("{tenant}/{catalog}/{key}"))
            .is_some_and(|at| at.elapsed() < STAGED_LIFETIME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_per_tenant_catalog_and_table() {
        let staged = StagedTables::default();
        staged.remember("acme", "lake", "db.t");
        assert!(staged.contains("acme", "lake", "db.t"));
        assert!(!staged.contains("acme", "lake", "db.u"));
        assert!(!staged.contains("globex", "lake", "db.t"));
    }

    #[test]
    fn forgets_the_oldest_beyond_its_capacity() {
        let staged = StagedTables::default();
        for i in 0..=CAPACITY {
            staged.remember("acme", "lake", &format!("db.t{i}"));
        }
        assert!(staged.contains("acme", "lake", &format!("db.t{CAPACITY}")));
        assert_eq!(staged.staged.lock().len(), CAPACITY);
    }
}
