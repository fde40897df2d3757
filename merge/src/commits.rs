//! Merging one commit into another: up to date, fast-forward, merge commit or squash.

use std::collections::BTreeMap;

use pangolin_store::history::{self, CreateCommitError};
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{CommitDraft, ObjectId, Odb, ReadError, Timestamp};

use crate::base::merge_base;
use crate::trees::{
    self, ChangeSource, Conflict, KeyChange, Resolution, Strategy, TreeMergeError,
    TreeMergeOptions, show_keys,
};

/// Whether a merge may, must or must not fast-forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FastForward {
    /// Fast-forward when the target is an ancestor of the source; merge otherwise.
    #[default]
    Allow,
    /// Always write a merge commit (`--no-ff`).
    Never,
    /// Fast-forward or fail (`--ff-only`).
    Only,
}

/// What a merge writes when it cannot (or may not) fast-forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommitMode {
    /// A commit with two parents: the target head and the source.
    #[default]
    MergeCommit,
    /// A commit with the target head as its only parent, holding the merged tree.
    Squash,
}

#[derive(Debug, Clone, Default)]
pub struct MergeOptions {
    pub fast_forward: FastForward,
    pub mode: CommitMode,
    pub strategy: Strategy,
    pub resolutions: BTreeMap<pangolin_store::ContentKey, Resolution>,
    /// Compute and report everything; write nothing.
    pub dry_run: bool,
}

/// Who makes a new commit, when, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitMeta {
    pub author: String,
    pub committer: String,
    pub message: String,
    pub properties: BTreeMap<String, String>,
    pub time: Timestamp,
}

/// What a merge did, or would do in a dry run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// The source is already part of the target: nothing to do.
    UpToDate,
    /// The target moves to the source commit; no commit is written.
    FastForward {
        to: ObjectId,
        changes: Vec<KeyChange>,
    },
    /// A new commit (`None` in a dry run) holding the merged tree.
    Merged {
        commit: Option<ObjectId>,
        base: Option<ObjectId>,
        changes: Vec<KeyChange>,
        resolved: Vec<Conflict>,
    },
    /// Conflicts without resolution: nothing was written.
    Conflicted {
        base: Option<ObjectId>,
        conflicts: Vec<Conflict>,
        changes: Vec<KeyChange>,
    },
}

impl MergeOutcome {
    /// The commit the target should point to after this merge, if it moves.
    pub fn new_head(&self) -> Option<ObjectId> {
        match self {
            Self::FastForward { to, .. } => Some(*to),
            Self::Merged { commit, .. } => *commit,
            Self::UpToDate | Self::Conflicted { .. } => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("the merge cannot fast-forward and a fast-forward only merge was asked for")]
    NotFastForward,
    #[error("resolutions name keys that are not in conflict: {}", show_keys(.0))]
    UnknownResolution(Vec<pangolin_store::ContentKey>),
    #[error("reading history: {0}")]
    Read(#[from] ReadError),
    #[error(transparent)]
    Tree(TreeMergeError),
    #[error("writing the merge commit: {0}")]
    Commit(#[from] CreateCommitError),
}

impl From<TreeMergeError> for MergeError {
    fn from(error: TreeMergeError) -> Self {
        match error {
            TreeMergeError::UnknownResolution(keys) => Self::UnknownResolution(keys),
            other => Self::Tree(other),
        }
    }
}

/// Merges commit `theirs` (the source) into commit `ours` (the target head).
#[tracing::instrument(level = "debug", skip_all, fields(repo = %odb.repo(), ours = %ours.short(12), theirs = %theirs.short(12)))]
pub async fn merge(
    odb: &Odb,
    ours: ObjectId,
    theirs: ObjectId,
    options: &MergeOptions,
    meta: &CommitMeta,
) -> Result<MergeOutcome, MergeError> {
    if history::is_ancestor(odb, theirs, ours).await? {
        return Ok(MergeOutcome::UpToDate);
    }
    let can_fast_forward = history::is_ancestor(odb, ours, theirs).await?;
    if can_fast_forward && options.fast_forward != FastForward::Never {
        if !options.resolutions.is_empty() {
            return Err(MergeError::UnknownResolution(
                options.resolutions.keys().cloned().collect(),
            ));
        }
        let changes = changes_between(odb, ours, theirs).await?;
        return Ok(MergeOutcome::FastForward {
            to: theirs,
            changes,
        });
    }
    if options.fast_forward == FastForward::Only {
        return Err(MergeError::NotFastForward);
    }

    let base = merge_base(odb, ours, theirs).await?;
    let base_tree = match base {
        Some(id) => odb.commit(&id).await?.tree,
        None => tree::empty_id(),
    };
    let ours_tree = odb.commit(&ours).await?.tree;
    let theirs_tree = odb.commit(&theirs).await?.tree;
    let tree_options = TreeMergeOptions {
        resolutions: options.resolutions.clone(),
        strategy: options.strategy,
        dry_run: options.dry_run,
        partial_resolutions: false,
    };
    let merged = trees::trees(odb, &base_tree, &ours_tree, &theirs_tree, &tree_options).await?;
    if !merged.conflicts.is_empty() {
        return Ok(MergeOutcome::Conflicted {
            base,
            conflicts: merged.conflicts,
            changes: merged.changes,
        });
    }
    let Some(tree) = merged.tree else {
        return Ok(MergeOutcome::Merged {
            commit: None,
            base,
            changes: merged.changes,
            resolved: merged.resolved,
        });
    };
    let (parents, operation) = match options.mode {
        CommitMode::MergeCommit => (vec![ours, theirs], "merge"),
        CommitMode::Squash => (vec![ours], "squash-merge"),
    };
    let mut properties = meta.properties.clone();
    properties.insert("operation".into(), operation.into());
    properties.insert("merge.source".into(), theirs.to_hex());
    if let Some(base) = base {
        properties.insert("merge.base".into(), base.to_hex());
    }
    let draft = CommitDraft {
        parents,
        tree,
        author: meta.author.clone(),
        committer: meta.committer.clone(),
        message: meta.message.clone(),
        properties,
    };
    let (commit, _) = history::create(odb, draft, meta.time).await?;
    Ok(MergeOutcome::Merged {
        commit: Some(commit),
        base,
        changes: merged.changes,
        resolved: merged.resolved,
    })
}

/// The changes that moving a ref from commit `from` to commit `to` makes, as key changes.
async fn changes_between(
    odb: &Odb,
    from: ObjectId,
    to: ObjectId,
) -> Result<Vec<KeyChange>, ReadError> {
    let from_tree = odb.commit(&from).await?.tree;
    let to_tree = odb.commit(&to).await?.tree;
    changes_between_trees(odb, from_tree, to_tree).await
}

/// The changes from tree `from` to tree `to`, as key changes.
pub(crate) async fn changes_between_trees(
    odb: &Odb,
    from_tree: ObjectId,
    to_tree: ObjectId,
) -> Result<Vec<KeyChange>, ReadError> {
    let diff = tree::diff(odb, &from_tree, &to_tree, &KeyRange::all(), usize::MAX).await?;
    Ok(diff
        .changes
        .into_iter()
        .map(|c| KeyChange {
            key: c.key,
            before: c.before,
            after: c.after,
            source: ChangeSource::Theirs,
        })
        .collect())
}
