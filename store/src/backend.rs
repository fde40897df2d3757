//! What a storage backend provides for objects, and how its failures are classified.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::id::{HashPrefix, ObjectId};
use crate::object::RawObject;

/// One repository: the unit of object scoping. Each catalog is one repository, so knowing a hash
/// never grants access to another catalog's objects.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepoId(Arc<str>);

/// Longest repository id, in bytes.
pub const MAX_REPO_ID_BYTES: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepoIdError {
    #[error("a repository id cannot be empty")]
    Empty,
    #[error("a repository id has at most {MAX_REPO_ID_BYTES} bytes, `{0}` has more")]
    TooLong(String),
    #[error("repository id `{id}` contains `{found}`; use letters, digits, `-`, `_` and `.`")]
    InvalidCharacter { id: String, found: char },
}

impl RepoId {
    pub fn new(id: impl Into<String>) -> Result<Self, RepoIdError> {
        let id = id.into();
        if id.is_empty() {
            return Err(RepoIdError::Empty);
        }
        if id.len() > MAX_REPO_ID_BYTES {
            return Err(RepoIdError::TooLong(id));
        }
        if let Some(found) = id
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || "-_.".contains(*c)))
        {
            return Err(RepoIdError::InvalidCharacter { id, found });
        }
        Ok(Self(id.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RepoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RepoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RepoId({})", self.0)
    }
}

/// The class of a backend failure: what a caller can do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendErrorKind {
    /// The store cannot be reached or is overloaded; the same call may succeed later.
    Unavailable,
    /// A concurrent writer won (serialization failure, lock timeout).
    Conflict,
    /// Stored data is not what was written.
    Corrupt,
    /// Anything else: a bug or a misconfiguration.
    Other,
}

/// A failure inside a storage backend, classified so callers can retry or report it.
#[derive(Debug, thiserror::Error)]
#[error("{kind:?} storage error in {operation}: {message}")]
pub struct BackendError {
    pub kind: BackendErrorKind,
    /// The trait method that failed, e.g. `objects.put_many`.
    pub operation: &'static str,
    pub message: String,
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl BackendError {
    pub fn new(
        kind: BackendErrorKind,
        operation: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            operation,
            message: message.into(),
            source: None,
        }
    }

    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// Whether repeating the same call may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            BackendErrorKind::Unavailable | BackendErrorKind::Conflict
        )
    }
}

/// Immutable objects, keyed by repository and id.
///
/// A lookup has three outcomes kept apart: found (`Ok(Some)`), absent (`Ok(None)`), failed
/// (`Err`). Objects are opaque to the backend; ids are checked by the reader.
#[async_trait]
pub trait ObjectStore: Send + Sync + 'static {
    async fn get(&self, repo: &RepoId, id: &ObjectId) -> Result<Option<RawObject>, BackendError>;

    /// One answer per requested id, in request order.
    async fn get_many(
        &self,
        repo: &RepoId,
        ids: &[ObjectId],
    ) -> Result<Vec<Option<RawObject>>, BackendError>;

    /// Stores every object; storing an object that is already there is a no-op, not an error.
    async fn put_many(&self, repo: &RepoId, objects: &[RawObject]) -> Result<(), BackendError>;

    async fn contains(&self, repo: &RepoId, id: &ObjectId) -> Result<bool, BackendError>;

    /// Ids in `repo` that start with `prefix`, at most `limit`, in id order: enough to tell a
    /// unique prefix from an ambiguous one.
    async fn find_by_prefix(
        &self,
        repo: &RepoId,
        prefix: &HashPrefix,
        limit: usize,
    ) -> Result<Vec<ObjectId>, BackendError>;
}
