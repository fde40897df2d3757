//! Typed, cached access to the objects of one repository.

use std::fmt;
use std::sync::Arc;

use crate::backend::{BackendError, ObjectStore, RepoId};
use crate::cache::ObjectCache;
use crate::commit::Commit;
use crate::id::{HashPrefix, ObjectId, ObjectKind, ResolvePrefixError, resolve_prefix};
use crate::object::{CorruptObject, Object, RawObject};
use crate::tree::Node;

/// Why an object could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{kind} {id} is not in the repository")]
    Missing { id: ObjectId, kind: ObjectKind },
    #[error("object {id} is a {actual}, expected a {expected}")]
    WrongKind {
        id: ObjectId,
        expected: ObjectKind,
        actual: ObjectKind,
    },
    #[error(transparent)]
    Corrupt(#[from] CorruptObject),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Why a typed hash could not be turned into an object id.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Prefix(#[from] ResolvePrefixError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// The objects of one repository: a backend behind a shared read-through cache.
///
/// Cheap to clone; clones share the backend and the cache.
#[derive(Clone)]
pub struct Odb {
    repo: RepoId,
    store: Arc<dyn ObjectStore>,
    cache: Arc<ObjectCache>,
}

impl Odb {
    pub fn new(repo: RepoId, store: Arc<dyn ObjectStore>, cache: Arc<ObjectCache>) -> Self {
        Self { repo, store, cache }
    }

    pub fn repo(&self) -> &RepoId {
        &self.repo
    }

    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// Any object, decoded; `Ok(None)` when absent.
    pub async fn object(&self, id: &ObjectId) -> Result<Option<Object>, ReadError> {
        if let Some(object) = self.cache.get(&self.repo, id) {
            return Ok(Some(object));
        }
        let Some(raw) = self.store.get(&self.repo, id).await? else {
            return Ok(None);
        };
        let object = Object::decode(&raw)?;
        self.cache.insert(&self.repo, *id, object.clone());
        Ok(Some(object))
    }

    pub async fn node(&self, id: &ObjectId) -> Result<Arc<Node>, ReadError> {
        match self.object(id).await? {
            Some(Object::Tree(node)) => Ok(node),
            Some(other) => Err(ReadError::WrongKind {
                id: *id,
                expected: ObjectKind::Tree,
                actual: other.kind(),
            }),
            None => Err(ReadError::Missing {
                id: *id,
                kind: ObjectKind::Tree,
            }),
        }
    }

    pub async fn commit(&self, id: &ObjectId) -> Result<Arc<Commit>, ReadError> {
        match self.object(id).await? {
            Some(Object::Commit(commit)) => Ok(commit),
            Some(other) => Err(ReadError::WrongKind {
                id: *id,
                expected: ObjectKind::Commit,
                actual: other.kind(),
            }),
            None => Err(ReadError::Missing {
                id: *id,
                kind: ObjectKind::Commit,
            }),
        }
    }

    /// Encodes, stores and caches `objects` in one backend call; returns their ids in order.
    pub async fn write(&self, objects: Vec<Object>) -> Result<Vec<ObjectId>, BackendError> {
        let encoded: Vec<(RawObject, Object)> =
            objects.into_iter().map(|o| (o.encode(), o)).collect();
        let ids = encoded.iter().map(|(raw, _)| raw.id).collect();
        self.write_encoded(encoded).await?;
        Ok(ids)
    }

    /// Stores already-encoded objects (their ids computed by the caller) and caches them.
    pub(crate) async fn write_encoded(
        &self,
        encoded: Vec<(RawObject, Object)>,
    ) -> Result<(), BackendError> {
        if encoded.is_empty() {
            return Ok(());
        }
        let raw: Vec<RawObject> = encoded.iter().map(|(r, _)| r.clone()).collect();
        self.store.put_many(&self.repo, &raw).await?;
        for (raw, object) in encoded {
            self.cache.insert(&self.repo, raw.id, object);
        }
        Ok(())
    }

    /// The one object whose id starts with `prefix`.
    pub async fn resolve_prefix(&self, prefix: &HashPrefix) -> Result<ObjectId, ResolveError> {
        if let Some(id) = prefix.as_full() {
            return Ok(id);
        }
        let candidates = self.store.find_by_prefix(&self.repo, prefix, 2).await?;
        Ok(resolve_prefix(prefix, candidates)?)
    }
}

impl fmt::Debug for Odb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Odb")
            .field("repo", &self.repo)
            .field("cache", &self.cache)
            .finish()
    }
}
