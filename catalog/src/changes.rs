//! What changed: between any two references, and in one commit against its first parent.
//! Changes to Iceberg tables also say in words what changed in their metadata.

use std::sync::Arc;

use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{BackendError, Commit, Content, ContentKey, Entry, ObjectId, ReadError};

use crate::address::RefSpec;
use crate::catalog::{Catalog, ResolveError};
use crate::iceberg::TableMetadata;
use crate::iceberg::describe::describe;

/// One key's change.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryChange {
    pub key: ContentKey,
    pub before: Option<Entry>,
    pub after: Option<Entry>,
    /// For Iceberg tables: the metadata change in words.
    pub summary: Vec<String>,
}

impl EntryChange {
    pub fn kind(&self) -> &'static str {
        match (&self.before, &self.after) {
            (None, _) => "added",
            (_, None) => "removed",
            _ => "modified",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// One page of changes, in key order.
#[derive(Debug, Clone)]
pub struct ChangePage {
    pub from: ObjectId,
    pub to: ObjectId,
    pub changes: Vec<EntryChange>,
    /// The key to continue after when more changes follow.
    pub next_after: Option<ContentKey>,
}

/// A commit and its changes against its first parent.
#[derive(Debug, Clone)]
pub struct CommitDetail {
    pub id: ObjectId,
    pub commit: Arc<Commit>,
    pub changes: ChangePage,
}

impl Catalog {
    /// Changes from `from` to `to` under `prefix`, after `after`, at most `limit`. Reads only
    /// the parts of the two trees that differ.
    #[tracing::instrument(level = "debug", skip(self), fields(catalog = %self.name()))]
    pub async fn diff(
        &self,
        from: &RefSpec,
        to: &RefSpec,
        prefix: Option<&ContentKey>,
        after: Option<&ContentKey>,
        limit: usize,
    ) -> Result<ChangePage, DiffError> {
        let from = self.resolve(from).await?.commit;
        let to = self.resolve(to).await?.commit;
        self.changes_between(from, to, prefix, after, limit).await
    }

    /// The commit `at` names and its changes against its first parent (against nothing for
    /// the first commit), paged like [`Catalog::diff`].
    #[tracing::instrument(level = "debug", skip(self), fields(catalog = %self.name()))]
    pub async fn commit_detail(
        &self,
        at: &RefSpec,
        after: Option<&ContentKey>,
        limit: usize,
    ) -> Result<CommitDetail, DiffError> {
        let id = self.resolve(at).await?.commit;
        let commit = self.odb().commit(&id).await?;
        let changes = match commit.first_parent() {
            Some(parent) => self.changes_between(parent, id, None, after, limit).await?,
            None => {
                let empty = tree::empty(self.odb()).await?;
                let page = self
                    .tree_changes(&empty, &commit.tree, None, after, limit)
                    .await?;
                ChangePage {
                    from: id,
                    to: id,
                    changes: page.0,
                    next_after: page.1,
                }
            }
        };
        Ok(CommitDetail {
            id,
            commit,
            changes,
        })
    }

    async fn changes_between(
        &self,
        from: ObjectId,
        to: ObjectId,
        prefix: Option<&ContentKey>,
        after: Option<&ContentKey>,
        limit: usize,
    ) -> Result<ChangePage, DiffError> {
        let a = self.odb().commit(&from).await?.tree;
        let b = self.odb().commit(&to).await?.tree;
        let (changes, next_after) = self.tree_changes(&a, &b, prefix, after, limit).await?;
        Ok(ChangePage {
            from,
            to,
            changes,
            next_after,
        })
    }

    async fn tree_changes(
        &self,
        a: &ObjectId,
        b: &ObjectId,
        prefix: Option<&ContentKey>,
        after: Option<&ContentKey>,
        limit: usize,
    ) -> Result<(Vec<EntryChange>, Option<ContentKey>), DiffError> {
        let mut range = match prefix {
            Some(p) => KeyRange::prefix(p.clone()),
            None => KeyRange::all(),
        };
        if let Some(after) = after {
            range = range.after(after);
        }
        let page = tree::diff(self.odb(), a, b, &range, limit).await?;
        let mut changes = Vec::with_capacity(page.changes.len());
        for change in page.changes {
            let summary = self
                .summarize(change.before.as_ref(), change.after.as_ref())
                .await;
            changes.push(EntryChange {
                key: change.key,
                before: change.before,
                after: change.after,
                summary,
            });
        }
        Ok((changes, page.next_after))
    }

    /// The metadata change of a table in words; empty for other content, or when the
    /// catalog has no warehouse to read metadata from.
    pub async fn summarize(&self, before: Option<&Entry>, after: Option<&Entry>) -> Vec<String> {
        let Some(warehouse) = self.warehouse_ref() else {
            return Vec::new();
        };
        let location = |entry: Option<&Entry>| match entry.map(|e| &e.content) {
            Some(Content::IcebergTable {
                metadata_location, ..
            }) => Some(metadata_location.clone()),
            _ => None,
        };
        let (before_location, after_location) = (location(before), location(after));
        if before_location.is_none() && after_location.is_none() {
            return Vec::new();
        }
        let mut read = Vec::<Option<Arc<TableMetadata>>>::with_capacity(2);
        for location in [before_location, after_location] {
            read.push(match location {
                None => None,
                Some(location) => match warehouse.io.read_metadata(&location).await {
                    Ok(metadata) => Some(metadata),
                    Err(e) => return vec![format!("metadata not readable: {e}")],
                },
            });
        }
        describe(read[0].as_deref(), read[1].as_deref())
    }
}
