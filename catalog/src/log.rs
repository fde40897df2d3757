//! The log: the commits of a reference, newest first along first parents, filtered and paged.

use std::sync::Arc;

use pangolin_store::history::{AncestorError, first_parent_at_or_before, nth_ancestor};
use pangolin_store::{Commit, ContentKey, ObjectId, ReadError, Timestamp, tree};

use crate::address::RefSpec;
use crate::catalog::{Catalog, ResolveError};

/// Which commits of a log to keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogFilter {
    pub author: Option<String>,
    /// Commits at or after this time.
    pub since: Option<Timestamp>,
    /// Commits at or before this time.
    pub until: Option<Timestamp>,
    /// Only commits that changed this key (the history of one table).
    pub key: Option<ContentKey>,
}

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error("page token {0} is not in the history of this reference")]
    ForeignToken(ObjectId),
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// One page of a log.
#[derive(Debug, Clone)]
pub struct LogPage {
    pub commits: Vec<(ObjectId, Arc<Commit>)>,
    /// The commit the next page starts at, when more may follow.
    pub next: Option<ObjectId>,
}

impl Catalog {
    /// Up to `limit` commits of `at` that pass `filter`, newest first along first parents,
    /// starting at `from` (a previous page's `next`) or at the head. `until` is found in
    /// O(log n) reads through skip pointers; the walk stops at `since`.
    #[tracing::instrument(level = "debug", skip(self), fields(catalog = %self.name()))]
    pub async fn log(
        &self,
        at: &RefSpec,
        filter: &LogFilter,
        from: Option<ObjectId>,
        limit: usize,
    ) -> Result<LogPage, LogError> {
        let head = self.resolve(at).await?.commit;
        let odb = self.odb();
        let start = match from {
            Some(token) if self.on_first_parent_chain(token, head).await? => token,
            Some(token) => return Err(LogError::ForeignToken(token)),
            None => head,
        };
        let mut current = match filter.until {
            Some(until) => first_parent_at_or_before(odb, start, until).await?,
            None => Some(start),
        };
        let mut commits = Vec::new();
        while let Some(id) = current {
            let commit = odb.commit(&id).await?;
            if filter.since.is_some_and(|since| commit.time < since) {
                break;
            }
            if self.keep(&commit, filter).await? {
                // A full page ends at the next commit that passes, so a page token always
                // leads to a page with something on it.
                if commits.len() == limit {
                    return Ok(LogPage {
                        commits,
                        next: Some(id),
                    });
                }
                commits.push((id, commit.clone()));
            }
            current = commit.first_parent();
        }
        Ok(LogPage {
            commits,
            next: None,
        })
    }

    /// Whether `id` is `head` or one of its first-parent ancestors (the commits its log
    /// walks): O(log n) reads through skip pointers.
    async fn on_first_parent_chain(&self, id: ObjectId, head: ObjectId) -> Result<bool, LogError> {
        let odb = self.odb();
        let commit = match odb.commit(&id).await {
            Ok(commit) => commit,
            Err(ReadError::Missing { .. } | ReadError::WrongKind { .. }) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        let top = odb.commit(&head).await?;
        if commit.depth > top.depth {
            return Ok(false);
        }
        match nth_ancestor(odb, head, top.depth - commit.depth).await {
            Ok(found) => Ok(found == id),
            Err(AncestorError::Read(e)) => Err(e.into()),
            Err(_) => Ok(false),
        }
    }

    async fn keep(&self, commit: &Commit, filter: &LogFilter) -> Result<bool, ReadError> {
        if let Some(author) = &filter.author
            && commit.author != *author
        {
            return Ok(false);
        }
        let Some(key) = &filter.key else {
            return Ok(true);
        };
        let after = tree::get(self.odb(), &commit.tree, key).await?;
        let before = match commit.first_parent() {
            Some(parent) => {
                let parent = self.odb().commit(&parent).await?;
                tree::get(self.odb(), &parent.tree, key).await?
            }
            None => None,
        };
        Ok(before != after)
    }
}
