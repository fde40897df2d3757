//! An in-memory backend: objects and refs in maps behind locks. For tests and ephemeral servers;
//! everything is lost when the process ends.

mod audit;
mod objects;
mod prune;
mod records;
mod refs;

use std::collections::HashMap;
use std::fmt;

use pangolin_store::RepoId;
use parking_lot::{Mutex, RwLock};

pub use objects::ObjectMap;
pub use refs::RepoRefs;

/// Objects and refs of every repository, in memory.
#[derive(Default)]
pub struct MemoryBackend {
    objects: RwLock<HashMap<RepoId, ObjectMap>>,
    /// One lock per repository's refs: transactions on different repositories never wait for
    /// each other.
    refs: RwLock<HashMap<RepoId, std::sync::Arc<Mutex<RepoRefs>>>>,
    records:
        Mutex<std::collections::BTreeMap<pangolin_records::RecordKey, pangolin_records::Record>>,
    audit: Mutex<Vec<pangolin_records::AuditRecord>>,
}

impl MemoryBackend {
    pub fn new() -> Self {
        Self::default()
    }

    /// Changes a stored audit record in place, as an attacker with access to the storage
    /// would: for tests that show verification catches it.
    pub fn tamper_with_audit_record(
        &self,
        sequence: u64,
        change: impl FnOnce(&mut pangolin_records::AuditRecord),
    ) {
        if let Some(record) = self
            .audit
            .lock()
            .iter_mut()
            .find(|r| r.sequence == sequence)
        {
            change(record);
        }
    }
}

impl fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryBackend")
            .field("repositories", &self.objects.read().len())
            .finish_non_exhaustive()
    }
}

/// Objects and the ref move under the repository's refs lock, which the object collector takes
/// too: an object this publish found stored cannot be collected before its ref moves.
#[async_trait::async_trait]
impl pangolin_refs::Publish for MemoryBackend {
    async fn publish(
        &self,
        repo: &RepoId,
        objects: Vec<pangolin_store::RawObject>,
        tx: pangolin_refs::Transaction,
        audit: Vec<pangolin_records::AuditEvent>,
    ) -> Result<Vec<pangolin_refs::RefLogEntry>, pangolin_refs::TransactError> {
        use pangolin_records::AuditLog;

        tx.validate()?;
        let entries = {
            let refs = self.repo_refs(repo);
            let mut refs = refs.lock();
            for update in &tx.updates {
                pangolin_refs::Transaction::check(
                    update,
                    refs.heads.get(&update.reference).copied(),
                )?;
            }
            {
                let mut all = self.objects.write();
                let map = all.entry(repo.clone()).or_default();
                for object in objects {
                    map.entry(object.id).or_insert(object);
                }
            }
            refs.apply(tx)?
        };
        if !audit.is_empty() {
            self.append_many(audit).await?;
        }
        Ok(entries)
    }
}
