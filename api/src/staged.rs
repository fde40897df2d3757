//! Tables this server answered a staged create for and that are not committed yet, so the
//! metrics a client reports for one (Spark reports a staged table's commit before the table
//! exists in the catalog) are taken, not refused as a missing table, and the requests a
//! client has signed for its files before the commit know where those files are.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a staged create is remembered: a client commits it well within this.
pub const STAGED_LIFETIME: Duration = Duration::from_secs(60 * 60);

/// At most this many staged creates are remembered; the oldest are forgotten first.
const CAPACITY: usize = 10_000;

/// Staged creates by `tenant/catalog/key`, with when they were staged and the locations their
/// files go to (the table's location and the data and metadata paths of its properties).
#[derive(Debug, Default)]
pub struct StagedTables {
    staged: Mutex<HashMap<String, (Instant, Vec<String>)>>,
}

impl StagedTables {
    pub fn remember(&self, tenant: &str, catalog: &str, key: &str, locations: Vec<String>) {
        let now = Instant::now();
        let mut staged = self.staged.lock();
        if staged.len() >= CAPACITY {
            staged.retain(|_, (at, _)| now.duration_since(*at) < STAGED_LIFETIME);
        }
        if staged.len() >= CAPACITY
            && let Some(oldest) = staged
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone())
        {
            staged.remove(&oldest);
        }
        staged.insert(format!("{tenant}/{catalog}/{key}"), (now, locations));
    }

    /// Whether a create of this table was staged here within the lifetime.
    pub fn contains(&self, tenant: &str, catalog: &str, key: &str) -> bool {
        self.locations(tenant, catalog, key).is_some()
    }

    /// Where the files of a table staged here within the lifetime go.
    pub fn locations(&self, tenant: &str, catalog: &str, key: &str) -> Option<Vec<String>> {
        self.staged
            .lock()
            .get(&format!("{tenant}/{catalog}/{key}"))
            .filter(|(at, _)| at.elapsed() < STAGED_LIFETIME)
            .map(|(_, locations)| locations.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_per_tenant_catalog_and_table() {
        let staged = StagedTables::default();
        staged.remember("acme", "lake", "db.t", vec!["s3://b/t".into()]);
        assert!(staged.contains("acme", "lake", "db.t"));
        assert_eq!(
            staged.locations("acme", "lake", "db.t"),
            Some(vec!["s3://b/t".into()])
        );
        assert!(!staged.contains("acme", "lake", "db.u"));
        assert!(!staged.contains("globex", "lake", "db.t"));
    }

    #[test]
    fn forgets_the_oldest_beyond_its_capacity() {
        let staged = StagedTables::default();
        for i in 0..=CAPACITY {
            staged.remember("acme", "lake", &format!("db.t{i}"), Vec::new());
        }
        assert!(staged.contains("acme", "lake", &format!("db.t{CAPACITY}")));
        assert_eq!(staged.staged.lock().len(), CAPACITY);
    }
}
