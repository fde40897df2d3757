//! Group commit: the writers of one branch in one server chain their commits and publish them
//! together, one compare-and-swap and one durable write for many commits.
//!
//! Each branch a server writes to has a queue. A writer plans against the queue's *tip* (the
//! newest commit built here and not yet published, or the branch head when there is none),
//! appends its commit to the open *batch* and makes it the new tip, then waits for the batch
//! to be published. Batches are published one at a time: whoever waits first publishes the
//! open batch, moving the branch from the batch's base to its last commit, while the next
//! batch fills behind it. So under load one durable write carries every commit that arrived
//! during the previous one, and writers of one server never lose compare-and-swaps to each
//! other; a writer only plans again when the tip moved while it was planning, which is cheap
//! for a change whose keys nobody touched (the plan reuses what it prepared).
//!
//! Each publish also writes the audit events of the requests its commits serve (see
//! [`crate::commit_audit`]), so a commit and its audit record are one durable write.
//!
//! A publish can still lose the swap to another server or to a ref operation (a merge, a
//! branch reset). Then the batch and every commit built on it are dropped and their writers
//! plan again on the new head, exactly as a lone writer would after a lost race.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Instant;

use pangolin_records::AuditEvent;
use pangolin_refs::{Expected, RefUpdate, Reference, Target, TransactError, Transaction};
use pangolin_store::{ObjectId, ObjectStore, RawObject, RepoId, Staging, Timestamp};
use tokio::sync::{Mutex, watch};

use crate::commit_claims::Claims;
use crate::store::Store;

/// The commit queues of one server, shared by every catalog it opens.
#[derive(Default)]
pub struct CommitQueues {
    queues: parking_lot::Mutex<HashMap<(RepoId, Reference), Weak<BranchQueue>>>,
}

impl std::fmt::Debug for CommitQueues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitQueues")
            .field("branches", &self.queues.lock().len())
            .finish()
    }
}

impl CommitQueues {
    pub fn new() -> Self {
        Self::default()
    }

    /// The queue of `branch`, shared with every writer of it that is waiting now. A queue
    /// nobody holds is dropped, so idle branches cost nothing.
    pub(crate) fn queue(
        &self,
        repo: &RepoId,
        branch: &Reference,
        store: Arc<dyn ObjectStore>,
    ) -> Arc<BranchQueue> {
        let mut queues = self.queues.lock();
        let key = (repo.clone(), branch.clone());
        if let Some(queue) = queues.get(&key).and_then(Weak::upgrade) {
            return queue;
        }
        // Sweep dead entries now and then, so the map stays as small as the live queues.
        if queues.len() >= 64 && queues.len().is_power_of_two() {
            queues.retain(|_, queue| queue.strong_count() > 0);
        }
        let queue = Arc::new(BranchQueue::new(store));
        queues.insert(key, Arc::downgrade(&queue));
        queue
    }
}

/// How a published batch ended, for every commit in it.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// The branch moved to the batch's last commit: every commit in it landed.
    Landed,
    /// The branch moved elsewhere first (or the backend asked to retry): plan again.
    Retry,
    /// The branch no longer exists.
    MissingBranch,
    /// The backend refused the publish for good.
    Failed(Arc<TransactError>),
}

/// Commits chained on one base, published with one swap.
pub(crate) struct Batch {
    base: ObjectId,
    contents: parking_lot::Mutex<BatchContents>,
    outcome: watch::Sender<Option<Outcome>>,
}

#[derive(Default)]
struct BatchContents {
    objects: Vec<RawObject>,
    last: Option<ObjectId>,
    /// The last commit's time: the ref log dates the move by it, so a ref's time read back
    /// as `branch#<time>` names the commit it came from.
    time: Option<Timestamp>,
    principals: Vec<String>,
    messages: Vec<String>,
    /// The audit events of the requests the commits serve, written by the same publish.
    audit: Vec<AuditEvent>,
}

impl Batch {
    fn new(base: ObjectId) -> Arc<Self> {
        Arc::new(Self {
            base,
            contents: parking_lot::Mutex::new(BatchContents::default()),
            outcome: watch::Sender::new(None),
        })
    }

    fn push(&self, commit: &mut Appended<'_>, objects: Vec<RawObject>) {
        let (principal, message) = (commit.principal, commit.message);
        let mut contents = self.contents.lock();
        contents.time = Some(commit.time);
        contents.objects.extend(objects);
        contents.audit.extend(commit.audit.take());
        contents.last = Some(commit.commit);
        if !contents.principals.iter().any(|p| p == principal) {
            contents.principals.push(principal.to_owned());
        }
        contents.messages.push(message.to_owned());
    }

    /// The outcome, once the batch was published or dropped.
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        self.outcome.borrow().clone()
    }

    /// Whether the batch was dropped or refused (so nothing built on it can land).
    pub(crate) fn failed(&self) -> bool {
        matches!(self.outcome(), Some(o) if !matches!(o, Outcome::Landed))
    }

    /// Waits for the outcome.
    pub(crate) async fn wait(&self) -> Outcome {
        let mut receiver = self.outcome.subscribe();
        match receiver.wait_for(Option::is_some).await {
            Ok(outcome) => outcome.clone().unwrap_or(Outcome::Retry),
            // The sender lives in `self`, so it cannot be gone while we borrow it.
            Err(_) => Outcome::Retry,
        }
    }

    fn finish(&self, outcome: Outcome) {
        self.outcome.send_replace(Some(outcome));
    }
}

/// Where the next commit of a branch builds.
#[derive(Clone)]
pub(crate) struct Tip {
    pub(crate) commit: ObjectId,
    pub(crate) tree: ObjectId,
    /// The unpublished batch holding `commit`; `None` for a published head.
    pub(crate) batch: Option<Arc<Batch>>,
}

struct QueueState {
    /// The newest unpublished commit; `None` when everything built here was published (then
    /// the branch head is read from the store, since others may have moved it since).
    tip: Option<Tip>,
    /// The batch new commits join. Invariant: when set, `tip` is its last commit.
    open: Option<Arc<Batch>>,
    /// Bumped whenever `tip` changes, so a writer can tell whether what it planned on is
    /// still where the next commit goes.
    epoch: u64,
}

/// The queue of one branch.
pub(crate) struct BranchQueue {
    state: Mutex<QueueState>,
    /// Held while a batch is published: one publish at a time, in order.
    publishing: Mutex<()>,
    /// Objects of unpublished commits, readable by writers building on them; reads through
    /// to the store.
    pending: Arc<Staging>,
    /// The keys writers are planning changes to (see [`crate::commit_claims`]).
    claims: Claims,
}

/// The queue's state, locked by a writer that appends.
pub(crate) struct Appending<'a> {
    queue: &'a Arc<BranchQueue>,
    state: tokio::sync::MutexGuard<'a, QueueState>,
}

impl BranchQueue {
    fn new(store: Arc<dyn ObjectStore>) -> Self {
        Self {
            state: Mutex::new(QueueState {
                tip: None,
                open: None,
                epoch: 0,
            }),
            publishing: Mutex::new(()),
            pending: Arc::new(Staging::new(store)),
            claims: Claims::default(),
        }
    }

    /// The claims on this branch's keys.
    pub(crate) fn claims(&self) -> &Claims {
        &self.claims
    }

    /// The object store writers read through: unpublished objects first, then the backend.
    pub(crate) fn objects(&self) -> Arc<dyn ObjectStore> {
        self.pending.clone()
    }

    /// The unpublished tip, if any, and the epoch it belongs to.
    pub(crate) async fn tip(&self) -> (Option<Tip>, u64) {
        let state = self.state.lock().await;
        (state.tip.clone(), state.epoch)
    }

    /// Locks the queue to append a commit.
    pub(crate) async fn lock(self: &Arc<Self>) -> Appending<'_> {
        Appending {
            queue: self,
            state: self.state.lock().await,
        }
    }

    /// Publishes the open batch when this task's turn comes. Every opened batch spawns one
    /// such task, so each is published (or dropped) even when all of its writers went away:
    /// a writer that stops waiting (its client disconnected) can never leave a batch half
    /// published or others waiting for it forever.
    async fn publish_open(self: Arc<Self>, store: Arc<dyn Store>, repo: RepoId, branch: Reference) {
        let _turn = self.publishing.lock().await;
        // Usually the batch that spawned this task; a batch dropped after a failed publish
        // leaves its task to publish whichever batch opened after it, or nothing.
        let Some(sealed) = self.state.lock().await.open.take() else {
            return;
        };
        let (objects, ids, tx, audit, commits) = {
            let mut contents = sealed.contents.lock();
            let (Some(last), Some(time)) = (contents.last, contents.time) else {
                drop(contents);
                sealed.finish(Outcome::Retry);
                return;
            };
            let tx = Transaction {
                updates: vec![RefUpdate {
                    reference: branch.clone(),
                    expected: Expected::Equals(sealed.base),
                    target: Target::Set(last),
                }],
                principal: contents.principals.join(", "),
                message: match contents.messages.as_slice() {
                    [one] => one.clone(),
                    many => format!("{} commits", many.len()),
                },
                time,
            };
            let objects = std::mem::take(&mut contents.objects);
            let ids: Vec<ObjectId> = objects.iter().map(|o| o.id).collect();
            let audit = std::mem::take(&mut contents.audit);
            (objects, ids, tx, audit, contents.messages.len())
        };
        let started = Instant::now();
        let audited = audit.len();
        let outcome = match store.publish(&repo, objects, tx, audit).await {
            Ok(_) => Outcome::Landed,
            Err(TransactError::OutOfDate {
                actual: Some(_), ..
            }) => Outcome::Retry,
            Err(TransactError::OutOfDate { actual: None, .. }) => Outcome::MissingBranch,
            Err(TransactError::Backend(e)) if e.is_retryable() => Outcome::Retry,
            Err(other) => Outcome::Failed(Arc::new(other)),
        };
        let name = match &outcome {
            Outcome::Landed => "landed",
            Outcome::Retry => "retry",
            Outcome::MissingBranch => "missing-branch",
            Outcome::Failed(_) => "failed",
        };
        crate::telemetry::published(name, commits, audited, started.elapsed());
        let mut state = self.state.lock().await;
        // Published objects are read from the store from now on; others are abandoned.
        self.pending.forget(&ids);
        if matches!(outcome, Outcome::Landed) {
            if state.open.is_none() {
                // Nothing builds on it: the next writer reads the head, which others may move.
                state.tip = None;
                state.epoch += 1;
            }
        } else {
            // Everything built on a batch that did not land is dropped with it, under the
            // lock, so no writer appends to or reads from the dropped chain afterwards.
            if let Some(open) = state.open.take() {
                let ids: Vec<ObjectId> = std::mem::take(&mut open.contents.lock().objects)
                    .iter()
                    .map(|o| o.id)
                    .collect();
                self.pending.forget(&ids);
                open.finish(match &outcome {
                    Outcome::MissingBranch => Outcome::MissingBranch,
                    _ => Outcome::Retry,
                });
            }
            state.tip = None;
            state.epoch += 1;
        }
        sealed.finish(outcome);
    }
}

impl Appending<'_> {
    /// The unpublished tip, if any.
    pub(crate) fn tip(&self) -> Option<&Tip> {
        self.state.tip.as_ref()
    }

    /// Whether the tip changed since `epoch`.
    pub(crate) fn moved_since(&self, epoch: u64) -> bool {
        self.state.epoch != epoch
    }

    /// Appends `commit` (built on `base` with `objects`) to the open batch, opening one on
    /// `base` when there is none, and makes it the tip. Returns the batch to wait for.
    pub(crate) fn append(
        mut self,
        mut commit: Appended<'_>,
        store: &Arc<dyn Store>,
        repo: &RepoId,
        branch: &Reference,
    ) -> Arc<Batch> {
        self.queue.pending.stage(&commit.objects);
        let objects = std::mem::take(&mut commit.objects);
        let batch = match &self.state.open {
            Some(batch) => batch.clone(),
            None => {
                let batch = Batch::new(commit.base);
                self.state.open = Some(batch.clone());
                tokio::spawn(self.queue.clone().publish_open(
                    store.clone(),
                    repo.clone(),
                    branch.clone(),
                ));
                batch
            }
        };
        batch.push(&mut commit, objects);
        self.state.tip = Some(Tip {
            commit: commit.commit,
            tree: commit.tree,
            batch: Some(batch.clone()),
        });
        self.state.epoch += 1;
        batch
    }
}

/// A commit ready to join a batch.
pub(crate) struct Appended<'a> {
    /// The commit it builds on.
    pub(crate) base: ObjectId,
    pub(crate) commit: ObjectId,
    pub(crate) tree: ObjectId,
    /// The commit's own time.
    pub(crate) time: Timestamp,
    /// Its new objects (trees and the commit).
    pub(crate) objects: Vec<RawObject>,
    pub(crate) principal: &'a str,
    pub(crate) message: &'a str,
    /// The audit event of the request it serves, if it is the request's first commit.
    pub(crate) audit: Option<AuditEvent>,
}
