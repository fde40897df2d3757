//! Deleting unreachable objects and whole repositories, under the repository's refs lock,
//! which publishes hold while they store their objects and move their refs.

use async_trait::async_trait;
use pangolin_refs::{Prune, RefMoves};
use pangolin_store::{BackendError, ObjectId, RepoId};

use crate::MemoryBackend;

#[async_trait]
impl Prune for MemoryBackend {
    async fn ref_moves(&self, repo: &RepoId) -> Result<RefMoves, BackendError> {
        Ok(RefMoves(u128::from(
            self.repo_refs(repo).lock().next_sequence,
        )))
    }

    async fn list_objects(
        &self,
        repo: &RepoId,
        after: Option<ObjectId>,
        limit: usize,
    ) -> Result<Vec<ObjectId>, BackendError> {
        let objects = self.objects.read();
        let Some(map) = objects.get(repo) else {
            return Ok(Vec::new());
        };
        let ids = match after {
            Some(after) => map
                .range((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded))
                .map(|(id, _)| *id)
                .take(limit)
                .collect(),
            None => map.keys().copied().take(limit).collect(),
        };
        Ok(ids)
    }

    async fn delete_objects(
        &self,
        repo: &RepoId,
        moves: RefMoves,
        ids: &[ObjectId],
    ) -> Result<bool, BackendError> {
        let refs = self.repo_refs(repo);
        let refs = refs.lock();
        if RefMoves(u128::from(refs.next_sequence)) != moves {
            return Ok(false);
        }
        if let Some(map) = self.objects.write().get_mut(repo) {
            for id in ids {
                map.remove(id);
            }
        }
        Ok(true)
    }

    async fn drop_repo(&self, repo: &RepoId) -> Result<(), BackendError> {
        let refs = self.repo_refs(repo);
        let mut refs = refs.lock();
        // The sequence stays, so a number read before the drop never matches after it.
        refs.heads.clear();
        refs.log.clear();
        self.objects.write().remove(repo);
        Ok(())
    }
}
