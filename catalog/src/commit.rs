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
use std::time::Instant;

use pangolin_refs::{Reference, TransactError};
use pangolin_store::history::{self, CreateCommitError};
use pangolin_store::tree::{self, EditError};
use pangolin_store::{
    BackendError, CommitDraft, ContentKey, Entry, ObjectId, Odb, ReadError, Staging, Timestamp,
};

use crate::catalog::Catalog;
use crate::commit_audit::PendingAudit;
use crate::commit_queue::{Appended, Outcome, Tip};
use crate::telemetry;

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
    Transact(Arc<TransactError>),
}

impl Catalog {
    /// Commits on `branch` the edits `plan` returns for the tree at the branch head.
    ///
    /// `plan` gets an object database (whose writes are staged with the commit) and the tree
    /// at the head; it may be called again on a newer head after a lost race, or when other
    /// writers of this server appended commits while it planned (see [`crate::commit_queue`]).
    pub async fn commit<E, F>(
        &self,
        branch: &Reference,
        meta: &CommitMeta,
        plan: F,
    ) -> Result<Committed, CommitError<E>>
    where
        F: FnMut(Odb, ObjectId) -> PlanFuture<E>,
    {
        self.commit_claiming(branch, meta, &[], plan).await
    }

    /// [`commit`](Self::commit) for a change to `keys` whose plan writes files (a table's or a
    /// view's next metadata): other writers of those keys on this server plan only once this
    /// one's commit is queued, on top of it (see [`crate::commit_claims`]).
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %self.tenant(), catalog = %self.name(), branch = %branch.name))]
    pub async fn commit_claiming<E, F>(
        &self,
        branch: &Reference,
        meta: &CommitMeta,
        keys: &[ContentKey],
        plan: F,
    ) -> Result<Committed, CommitError<E>>
    where
        F: FnMut(Odb, ObjectId) -> PlanFuture<E>,
    {
        let started = Instant::now();
        let result = self.plan_and_publish(branch, meta, keys, plan).await;
        let (outcome, attempts) = match &result {
            Ok(committed) if committed.attempts == 0 => ("empty", 0),
            Ok(committed) => ("landed", committed.attempts),
            Err(CommitError::Rejected(_)) => ("rejected", 1),
            Err(CommitError::Contention(attempts)) => ("contention", *attempts),
            Err(CommitError::MissingBranch(_)) => ("missing-branch", 1),
            Err(_) => ("failed", 1),
        };
        telemetry::commit_ended(outcome, attempts, started.elapsed());
        result
    }

    async fn plan_and_publish<E, F>(
        &self,
        branch: &Reference,
        meta: &CommitMeta,
        keys: &[ContentKey],
        mut plan: F,
    ) -> Result<Committed, CommitError<E>>
    where
        F: FnMut(Odb, ObjectId) -> PlanFuture<E>,
    {
        let repo = self.odb().repo().clone();
        let queue = self
            .commit_queues()
            .queue(&repo, branch, self.store().clone());
        let reader = Odb::new(repo.clone(), queue.objects(), self.cache());
        let audit = PendingAudit::current();
        for attempt in 1..=MAX_ATTEMPTS {
            // Held from planning until the commit is queued (or refused).
            let claims = queue.claims().claim(keys).await;
            // Plan without holding the queue, so writers of different tables plan in parallel.
            let (base, epoch) = match queue.tip().await {
                (Some(tip), epoch) => (tip, epoch),
                (None, epoch) => (self.head_tip(branch, &reader).await?, epoch),
            };
            let planned = plan(reader.clone(), base.tree).await;
            let appending = queue.lock().await;
            // A plan on a dropped chain is void (its objects may be gone): plan again.
            if base.batch.as_ref().is_some_and(|b| b.failed()) {
                continue;
            }
            // Others appended (or published) while this plan ran: plan again on where the next
            // commit goes now, in the lock. The plan reuses what it prepared when its keys did
            // not change, so this is cheap unless the change collides with one ahead of it.
            let (base, planned) = if appending.moved_since(epoch) {
                let current = match appending.tip() {
                    Some(tip) => tip.clone(),
                    None => self.head_tip(branch, &reader).await?,
                };
                if current.commit == base.commit {
                    (base, planned)
                } else {
                    let planned = plan(reader.clone(), current.tree).await;
                    (current, planned)
                }
            } else {
                (base, planned)
            };
            let edits = match planned {
                Ok(edits) => edits,
                Err(e) => {
                    drop(appending);
                    drop(claims);
                    if settled_rejection(&base).await {
                        return Err(CommitError::Rejected(e));
                    }
                    continue;
                }
            };
            let staging = Arc::new(Staging::new(queue.objects()));
            let odb = Odb::new(repo.clone(), staging.clone(), self.cache());
            let tree = tree::edit(&odb, &base.tree, edits).await?.root;
            let draft = CommitDraft {
                parents: vec![base.commit],
                tree,
                author: meta.principal.clone(),
                committer: meta.principal.clone(),
                message: meta.message.clone(),
                properties: meta.properties.clone(),
            };
            let time = Timestamp::now();
            let (commit, _) = history::create(&odb, draft, time).await?;
            let appended = Appended {
                base: base.commit,
                commit,
                tree,
                time,
                objects: staging.take(),
                principal: &meta.principal,
                message: &meta.message,
                audit: audit.as_ref().map(|a| a.for_commit(commit, time)),
            };
            let batch = appending.append(appended, self.store(), &repo, branch);
            // The next writer of these keys plans on this commit, queued.
            drop(claims);
            match batch.wait().await {
                Outcome::Landed => {
                    if let Some(audit) = &audit {
                        audit.written(commit);
                    }
                    return Ok(Committed {
                        commit,
                        parent: base.commit,
                        attempts: attempt,
                    });
                }
                // Someone else moved the branch: plan again on the new head.
                Outcome::Retry => continue,
                Outcome::MissingBranch => return Err(CommitError::MissingBranch(branch.clone())),
                Outcome::Failed(e) => return Err(CommitError::Transact(e)),
            }
        }
        Err(CommitError::Contention(MAX_ATTEMPTS))
    }

    /// The published head of `branch`, as a place to build on.
    async fn head_tip<E>(&self, branch: &Reference, odb: &Odb) -> Result<Tip, CommitError<E>> {
        let head = self
            .store()
            .get_ref(odb.repo(), branch)
            .await?
            .ok_or_else(|| CommitError::MissingBranch(branch.clone()))?;
        Ok(Tip {
            commit: head,
            tree: odb.commit(&head).await?.tree,
            batch: None,
        })
    }
}

/// Whether a plan's rejection at `base` is final: it is unless `base` is an unpublished commit
/// that then failed to land (the rejection was against a state nobody will ever see).
async fn settled_rejection(base: &Tip) -> bool {
    match &base.batch {
        None => true,
        Some(batch) => matches!(batch.wait().await, Outcome::Landed),
    }
}
