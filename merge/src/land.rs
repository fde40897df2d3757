//! Landing a merge, cherry-pick or revert on a branch.
//!
//! The only place in this crate that moves a ref, and only by compare-and-swap from the head
//! the operation was computed against: a merge never lands on a head it did not see, and
//! nothing lands when there are conflicts or in a dry run.

use pangolin_refs::{
    Expected, RefKind, RefLogEntry, RefStore, RefUpdate, Reference, Target, TransactError,
    Transaction,
};
use pangolin_store::{BackendError, ObjectId, Odb, RepoId};

use crate::commits::{self, CommitMeta, MergeError, MergeOptions, MergeOutcome};
use crate::pick::{self, PickError, PickOptions, PickOutcome};

/// Why an operation on a branch did not land.
#[derive(Debug, thiserror::Error)]
pub enum LandError {
    #[error("{0} does not exist")]
    MissingTarget(Reference),
    #[error("{0} is a tag; only branches can be merged into")]
    TargetIsTag(Reference),
    #[error("{reference} moved: expected head {expected}, found {}", .actual.map_or_else(|| "no ref".to_owned(), |a| a.to_hex()))]
    TargetMoved {
        reference: Reference,
        expected: ObjectId,
        actual: Option<ObjectId>,
    },
    #[error(transparent)]
    Merge(#[from] MergeError),
    #[error(transparent)]
    Pick(#[from] PickError),
    #[error("updating the branch: {0}")]
    Transact(TransactError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// A branch operation's outcome, and the ref-log entry when the branch moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landed<T> {
    pub outcome: T,
    /// The branch head the operation was computed against.
    pub previous_head: ObjectId,
    pub ref_log: Option<RefLogEntry>,
}

/// Where and how to land: the repository's refs, the target branch, and the head the caller
/// expects it to have (checked before and, by compare-and-swap, when landing).
#[derive(Debug, Clone)]
pub struct BranchTarget<'a> {
    pub repo: &'a RepoId,
    pub branch: &'a Reference,
    pub expected_head: Option<ObjectId>,
}

/// Merges commit `source` into the target branch.
pub async fn merge_into_branch<R: RefStore + ?Sized>(
    odb: &Odb,
    refs: &R,
    target: BranchTarget<'_>,
    source: ObjectId,
    options: &MergeOptions,
    meta: &CommitMeta,
) -> Result<Landed<MergeOutcome>, LandError> {
    let head = current_head(refs, &target).await?;
    let outcome = commits::merge(odb, head, source, options, meta).await?;
    let ref_log = match (options.dry_run, outcome.new_head()) {
        (false, Some(new)) => Some(land(refs, &target, head, new, meta).await?),
        _ => None,
    };
    Ok(Landed {
        outcome,
        previous_head: head,
        ref_log,
    })
}

/// Cherry-picks `picks` (oldest first) onto the target branch.
pub async fn cherry_pick_onto_branch<R: RefStore + ?Sized>(
    odb: &Odb,
    refs: &R,
    target: BranchTarget<'_>,
    picks: &[ObjectId],
    options: &PickOptions,
    meta: &CommitMeta,
) -> Result<Landed<PickOutcome>, LandError> {
    let head = current_head(refs, &target).await?;
    let outcome = pick::cherry_pick(odb, head, picks, options, meta).await?;
    land_pick(refs, &target, head, outcome, meta).await
}

/// Reverts `commit` on the target branch.
pub async fn revert_on_branch<R: RefStore + ?Sized>(
    odb: &Odb,
    refs: &R,
    target: BranchTarget<'_>,
    commit: ObjectId,
    options: &PickOptions,
    meta: &CommitMeta,
) -> Result<Landed<PickOutcome>, LandError> {
    let head = current_head(refs, &target).await?;
    let outcome = pick::revert(odb, head, commit, options, meta).await?;
    land_pick(refs, &target, head, outcome, meta).await
}

async fn land_pick<R: RefStore + ?Sized>(
    refs: &R,
    target: &BranchTarget<'_>,
    head: ObjectId,
    outcome: PickOutcome,
    meta: &CommitMeta,
) -> Result<Landed<PickOutcome>, LandError> {
    let ref_log = match outcome.new_head() {
        Some(new) => Some(land(refs, target, head, new, meta).await?),
        None => None,
    };
    Ok(Landed {
        outcome,
        previous_head: head,
        ref_log,
    })
}

/// The target branch's head, checked against the caller's expectation.
async fn current_head<R: RefStore + ?Sized>(
    refs: &R,
    target: &BranchTarget<'_>,
) -> Result<ObjectId, LandError> {
    if target.branch.kind == RefKind::Tag {
        return Err(LandError::TargetIsTag(target.branch.clone()));
    }
    let actual = refs.get_ref(target.repo, target.branch).await?;
    let Some(head) = actual else {
        return Err(LandError::MissingTarget(target.branch.clone()));
    };
    match target.expected_head {
        Some(expected) if expected != head => Err(LandError::TargetMoved {
            reference: target.branch.clone(),
            expected,
            actual,
        }),
        _ => Ok(head),
    }
}

/// Moves the branch from `seen` to `new`, failing if anyone moved it in between.
async fn land<R: RefStore + ?Sized>(
    refs: &R,
    target: &BranchTarget<'_>,
    seen: ObjectId,
    new: ObjectId,
    meta: &CommitMeta,
) -> Result<RefLogEntry, LandError> {
    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: target.branch.clone(),
            expected: Expected::Equals(seen),
            target: Target::Set(new),
        }],
        principal: meta.committer.clone(),
        message: meta.message.clone(),
        time: meta.time,
    };
    match refs.transact(target.repo, tx).await {
        Ok(mut entries) => Ok(entries.remove(0)),
        Err(TransactError::OutOfDate {
            reference, actual, ..
        }) => Err(LandError::TargetMoved {
            reference,
            expected: seen,
            actual,
        }),
        Err(other) => Err(LandError::Transact(other)),
    }
}
