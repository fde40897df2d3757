//! The commit protocol: every catalog write is a commit on a branch.
//!
//! Read the branch head, let the caller plan its edits against the tree there (checking its
//! preconditions), stage the new tree and commit, and publish them with a compare-and-swap of
//! the branch from the head that was read. When another writer moved the branch first, plan
//! again on the new head: a change whose preconditions still hold is rebased onto it (writes
//! to different tables never fail each other); one whose preconditions no longer hold fails
//! with the caller's error.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use pangolin_refs::{Expected, RefUpdate, Reference, Target, TransactError, Transaction};
use pangolin_store::history::{self, CreateCommitError};
use pangolin_store::tree::{self, EditError};
use pangolin_store::{
    BackendError, CommitDraft, ContentKey, Entry, ObjectId, Odb, ReadError, Staging, Timestamp,
};

use crate::catalog::Catalog;

/// Attempts before a commit that keeps losing races gives up (as a retryable conflict).
pub const MAX_ATTEMPTS: u32 = 16;

/// Who commits and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitMeta {
    pub principal: String,
    pub message: String,
    /// What the commit did (`operation`, Iceberg snapshot summary, ...).
    pub properties: BTreeMap<String, String>,
}

/// A landed commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Committed {
    pub commit: ObjectId,
    /// The head it was built on.
    pub parent: ObjectId,
    /// 1 when no other writer got in the way; 0 when there was nothing to commit and `commit`
    /// is the head as it was.
    pub attempts: u32,
}

/// Edits a plan asks for: `Some` puts an entry, `None` deletes the key.
pub type Edits = BTreeMap<ContentKey, Option<Entry>>;

/// What a plan returns: owned and `Send`, so commits can run on any task of a server.
pub type PlanFuture<E> = Pin<Box<dyn Future<Output = Result<Edits, E>> + Send>>;

#[derive(Debug, thiserror::Error)]
pub enum CommitError<E> {
    /// The change's preconditions do not hold (the caller's own error).
    #[error(transparent)]
    Rejected(E),
    #[error("branch {0} does not exist")]
    MissingBranch(Reference),
    #[error("gave up after {0} attempts: other writers kept moving the branch; retry")]
    Contention(u32),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error(transparent)]
    Commit(#[from] CreateCommitError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("moving the branch: {0}")]
    Transact(TransactError),
}

impl Catalog {
    /// Commits on `branch` the edits `plan` returns for the tree at the branch head.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %self.tenant(), catalog = %self.name(), branch = %branch.name))]
    ///
    /// `plan` gets an object database (whose writes are staged with the commit) and the tree
    /// at the head; it may be called again on a newer head after a lost race.
    pub async fn commit<E, F>(
        &self,
        branch: &Reference,
        meta: &CommitMeta,
        mut plan: F,
    ) -> Result<Committed, CommitError<E>>
    where
        F: FnMut(Odb, ObjectId) -> PlanFuture<E>,
    {
        let repo = self.odb().repo().clone();
        for attempt in 1..=MAX_ATTEMPTS {
            let head = self
                .store()
                .get_ref(&repo, branch)
                .await?
                .ok_or_else(|| CommitError::MissingBranch(branch.clone()))?;
            let base_tree = self.odb().commit(&head).await?.tree;
            let staging = Arc::new(Staging::new(self.store().clone()));
            let odb = Odb::new(repo.clone(), staging.clone(), self.cache());
            let edits = plan(odb.clone(), base_tree)
                .await
                .map_err(CommitError::Rejected)?;
            let tree = tree::edit(&odb, &base_tree, edits).await?.root;
            let now = Timestamp::now();
            let draft = CommitDraft {
                parents: vec![head],
                tree,
                author: meta.principal.clone(),
                committer: meta.principal.clone(),
                message: meta.message.clone(),
                properties: meta.properties.clone(),
            };
            let (commit, _) = history::create(&odb, draft, now).await?;
            let tx = Transaction {
                updates: vec![RefUpdate {
                    reference: branch.clone(),
                    expected: Expected::Equals(head),
                    target: Target::Set(commit),
                }],
                principal: meta.principal.clone(),
                message: meta.message.clone(),
                time: now,
            };
            match self.store().publish(&repo, staging.take(), tx).await {
                Ok(_) => {
                    return Ok(Committed {
                        commit,
                        parent: head,
                        attempts: attempt,
                    });
                }
                // Someone else moved the branch: plan again on the new head.
                Err(TransactError::OutOfDate {
                    actual: Some(_), ..
                }) => continue,
                Err(TransactError::OutOfDate { actual: None, .. }) => {
                    return Err(CommitError::MissingBranch(branch.clone()));
                }
                Err(TransactError::Backend(e)) if e.is_retryable() => continue,
                Err(other) => return Err(CommitError::Transact(other)),
            }
        }
        Err(CommitError::Contention(MAX_ATTEMPTS))
    }
}
