//! Objects: one ordered map per repository (ordered so hash prefixes are range scans).

use std::collections::BTreeMap;

use async_trait::async_trait;
use pangolin_store::{BackendError, HashPrefix, ObjectId, ObjectStore, RawObject, RepoId};

use crate::MemoryBackend;

pub type ObjectMap = BTreeMap<ObjectId, RawObject>;

#[async_trait]
impl ObjectStore for MemoryBackend {
    async fn get(&self, repo: &RepoId, id: &ObjectId) -> Result<Option<RawObject>, BackendError> {
        Ok(self
            .objects
            .read()
            .get(repo)
            .and_then(|m| m.get(id))
            .cloned())
    }

    async fn get_many(
        &self,
        repo: &RepoId,
        ids: &[ObjectId],
    ) -> Result<Vec<Option<RawObject>>, BackendError> {
        let objects = self.objects.read();
        let map = objects.get(repo);
        Ok(ids
            .iter()
            .map(|id| map.and_then(|m| m.get(id)).cloned())
            .collect())
    }

    async fn put_many(&self, repo: &RepoId, objects: &[RawObject]) -> Result<(), BackendError> {
        if objects.is_empty() {
            return Ok(());
        }
        let mut all = self.objects.write();
        let map = all.entry(repo.clone()).or_default();
        for object in objects {
            map.entry(object.id).or_insert_with(|| object.clone());
        }
        Ok(())
    }

    async fn contains(&self, repo: &RepoId, id: &ObjectId) -> Result<bool, BackendError> {
        Ok(self
            .objects
            .read()
            .get(repo)
            .is_some_and(|m| m.contains_key(id)))
    }

    async fn find_by_prefix(
        &self,
        repo: &RepoId,
        prefix: &HashPrefix,
        limit: usize,
    ) -> Result<Vec<ObjectId>, BackendError> {
        let objects = self.objects.read();
        let Some(map) = objects.get(repo) else {
            return Ok(Vec::new());
        };
        Ok(map
            .range(prefix.lower_bound()..)
            .map(|(id, _)| *id)
            .take_while(|id| prefix.matches(id))
            .take(limit)
            .collect())
    }
}
