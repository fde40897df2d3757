//! Deleting unreachable objects and whole repositories, under the repository's refs lock,
//! which publishes hold while they store their objects and move their refs.

use async_trait::async_trait;
use std::ops::Bound;

use pangolin_refs::{ObjectQuery, Prune, RefMoves};
use pangolin_store::{BackendError, ObjectId, ObjectKind, RepoId};

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
        query: ObjectQuery,
    ) -> Result<Vec<(ObjectId, ObjectKind)>, BackendError> {
        let objects = self.objects.read();
        let Some(map) = objects.get(repo) else {
            return Ok(Vec::new());
        };
        let start = query.after.map_or(Bound::Unbounded, Bound::Excluded);
        Ok(map
            .range((start, Bound::Unbounded))
            .map(|(id, object)| (*id, object.kind))
            .filter(|(_, kind)| query.kind.is_none_or(|wanted| wanted == *kind))
            .take(query.limit)
            .collect())
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
