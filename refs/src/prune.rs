//! Deleting objects that no ref reaches any more, without racing the writers that could make
//! them reachable again.
//!
//! Objects are content-addressed, so a writer may publish a tree node that is byte for byte
//! one the collector found unreachable: the backend keeps the stored copy and the writer's
//! commit then depends on it. The collector therefore deletes only while no ref of the
//! repository has moved since it read [`Prune::ref_moves`] (and walked history from the refs it
//! saw), checked and done atomically with respect to [`Publish`](crate::Publish), which stores
//! objects and moves refs in one step.

use async_trait::async_trait;
use pangolin_store::{BackendError, ObjectId, ObjectKind, ObjectStore, RepoId};

use crate::store::RefStore;

/// What [`Prune::ref_moves`] read: two readings are equal only if no ref of the repository
/// moved in between (nor was the repository dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefMoves(pub u128);

/// Which of a repository's objects [`Prune::list_objects`] returns: those after `after` in id
/// order, only of `kind` when it is given, at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectQuery {
    pub kind: Option<ObjectKind>,
    pub after: Option<ObjectId>,
    pub limit: usize,
}

impl ObjectQuery {
    /// The first `limit` objects of any kind.
    pub fn all(limit: usize) -> Self {
        Self {
            kind: None,
            after: None,
            limit,
        }
    }

    /// The first `limit` objects of `kind`.
    pub fn of(kind: ObjectKind, limit: usize) -> Self {
        Self {
            kind: Some(kind),
            ..Self::all(limit)
        }
    }
}

/// What a backend offers the object collector and catalog deletion.
#[async_trait]
pub trait Prune: ObjectStore + RefStore {
    /// Where `repo`'s ref log stands: it changes whenever a ref of `repo` moves, and never
    /// comes back to an earlier value, even across [`drop_repo`](Self::drop_repo).
    async fn ref_moves(&self, repo: &RepoId) -> Result<RefMoves, BackendError>;

    /// The ids and kinds of `repo`'s objects that `query` asks for, in id order. The next page
    /// starts after the last id of this one.
    async fn list_objects(
        &self,
        repo: &RepoId,
        query: ObjectQuery,
    ) -> Result<Vec<(ObjectId, ObjectKind)>, BackendError>;

    /// Deletes `ids` from `repo` if [`ref_moves`](Self::ref_moves) still reads `moves`, in one
    /// step no publish interleaves with. `Ok(false)`: a ref moved, nothing was deleted.
    async fn delete_objects(
        &self,
        repo: &RepoId,
        moves: RefMoves,
        ids: &[ObjectId],
    ) -> Result<bool, BackendError>;

    /// Deletes every ref, ref-log entry and object of `repo`.
    async fn drop_repo(&self, repo: &RepoId) -> Result<(), BackendError>;
}
