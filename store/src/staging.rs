//! Staging: objects written by a pending change, kept in memory until the change is
//! published (stored together with the ref move that makes them reachable).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;

use crate::backend::{BackendError, ObjectStore, RepoId};
use crate::id::{HashPrefix, ObjectId};
use crate::object::RawObject;

/// An object store that keeps writes in memory and reads through to `inner`.
///
/// Build an [`Odb`](crate::Odb) on it, run the tree edits and commit creation of one change,
/// then [`take`](Staging::take) the objects and publish them with the ref move.
pub struct Staging {
    inner: Arc<dyn ObjectStore>,
    staged: Mutex<HashMap<ObjectId, RawObject>>,
}

impl Staging {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self {
            inner,
            staged: Mutex::new(HashMap::new()),
        }
    }

    /// The staged objects, emptying the stage.
    pub fn take(&self) -> Vec<RawObject> {
        self.staged
            .lock()
            .drain()
            .map(|(_, object)| object)
            .collect()
    }

    /// Stages `objects` now (what [`ObjectStore::put_many`] does, without a future).
    pub fn stage(&self, objects: &[RawObject]) {
        let mut staged = self.staged.lock();
        for object in objects {
            staged.entry(object.id).or_insert_with(|| object.clone());
        }
    }

    /// Drops the staged objects `ids` (once they are stored elsewhere, or abandoned).
    pub fn forget(&self, ids: &[ObjectId]) {
        let mut staged = self.staged.lock();
        for id in ids {
            staged.remove(id);
        }
    }

    pub fn len(&self) -> usize {
        self.staged.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staging")
            .field("staged", &self.len())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl ObjectStore for Staging {
    async fn get(&self, repo: &RepoId, id: &ObjectId) -> Result<Option<RawObject>, BackendError> {
        if let Some(object) = self.staged.lock().get(id) {
            return Ok(Some(object.clone()));
        }
        self.inner.get(repo, id).await
    }

    async fn get_many(
        &self,
        repo: &RepoId,
        ids: &[ObjectId],
    ) -> Result<Vec<Option<RawObject>>, BackendError> {
        let mut found = self.inner.get_many(repo, ids).await?;
        let staged = self.staged.lock();
        for (slot, id) in found.iter_mut().zip(ids) {
            if slot.is_none() {
                *slot = staged.get(id).cloned();
            }
        }
        Ok(found)
    }

    async fn put_many(&self, _repo: &RepoId, objects: &[RawObject]) -> Result<(), BackendError> {
        self.stage(objects);
        Ok(())
    }

    async fn contains(&self, repo: &RepoId, id: &ObjectId) -> Result<bool, BackendError> {
        if self.staged.lock().contains_key(id) {
            return Ok(true);
        }
        self.inner.contains(repo, id).await
    }

    async fn find_by_prefix(
        &self,
        repo: &RepoId,
        prefix: &HashPrefix,
        limit: usize,
    ) -> Result<Vec<ObjectId>, BackendError> {
        let mut ids = self.inner.find_by_prefix(repo, prefix, limit).await?;
        ids.extend(
            self.staged
                .lock()
                .keys()
                .filter(|id| prefix.matches(id))
                .copied(),
        );
        ids.sort();
        ids.dedup();
        ids.truncate(limit);
        Ok(ids)
    }
}
