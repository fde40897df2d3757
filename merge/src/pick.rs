//! Cherry-pick and revert: replaying one commit's changes (or their inverse) on another head,
//! with the same three-way merge and conflict model as a merge.

use std::collections::{BTreeMap, BTreeSet};

use pangolin_store::history::{self, CreateCommitError};
use pangolin_store::tree;
use pangolin_store::{CommitDraft, ContentKey, ObjectId, Odb, ReadError};

use crate::commits::{CommitMeta, changes_between_trees};
use crate::trees::{
    self, Conflict, KeyChange, Resolution, Strategy, TreeMergeError, TreeMergeOptions, show_keys,
};

#[derive(Debug, Clone, Default)]
pub struct PickOptions {
    pub strategy: Strategy,
    /// Applied to a conflicting key in whichever pick it conflicts; each must be used.
    pub resolutions: BTreeMap<ContentKey, Resolution>,
    /// One commit for all picks instead of one commit per pick.
    pub squash: bool,
    /// Compute and report everything; write no commit.
    pub dry_run: bool,
}

/// What a cherry-pick or revert did, or would do in a dry run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickOutcome {
    /// New commits on top of the target head, oldest first (none in a dry run); the last is
    /// the new head.
    Applied {
        commits: Vec<ObjectId>,
        changes: Vec<KeyChange>,
        /// Conflicts settled by a resolution or the strategy, in every step.
        resolved: Vec<Conflict>,
    },
    /// The pick of `commit` conflicts; no commit was written.
    Conflicted {
        commit: ObjectId,
        conflicts: Vec<Conflict>,
    },
}

impl PickOutcome {
    pub fn new_head(&self) -> Option<ObjectId> {
        match self {
            Self::Applied { commits, .. } => commits.last().copied(),
            Self::Conflicted { .. } => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PickError {
    #[error("nothing to apply: no commits given")]
    Empty,
    #[error("commit {from} is not a first-parent ancestor of {to}")]
    NotInRange { from: ObjectId, to: ObjectId },
    #[error("resolutions name keys that are not in conflict: {}", show_keys(.0))]
    UnknownResolution(Vec<ContentKey>),
    #[error("reading history: {0}")]
    Read(#[from] ReadError),
    #[error(transparent)]
    Tree(#[from] TreeMergeError),
    #[error("writing commits: {0}")]
    Commit(#[from] CreateCommitError),
}

/// One change set to replay: the trees before and after it, and the commit it comes from.
struct Step {
    source: ObjectId,
    before: ObjectId,
    after: ObjectId,
    draft: CommitDraft,
}

/// Applies the changes of each commit in `picks` (oldest first), each relative to its first
/// parent, on top of `onto`.
#[tracing::instrument(level = "debug", skip_all, fields(repo = %odb.repo(), onto = %onto.short(12), picks = picks.len()))]
pub async fn cherry_pick(
    odb: &Odb,
    onto: ObjectId,
    picks: &[ObjectId],
    options: &PickOptions,
    meta: &CommitMeta,
) -> Result<PickOutcome, PickError> {
    let mut steps = Vec::with_capacity(picks.len());
    for id in picks {
        let commit = odb.commit(id).await?;
        let before = parent_tree(odb, commit.first_parent()).await?;
        let mut properties = commit.properties.clone();
        properties.insert("operation".into(), "cherry-pick".into());
        properties.insert("cherry-picked-from".into(), id.to_hex());
        let draft = CommitDraft {
            parents: Vec::new(),
            tree: commit.tree,
            author: commit.author.clone(),
            committer: meta.committer.clone(),
            message: commit.message.clone(),
            properties,
        };
        steps.push(Step {
            source: *id,
            before,
            after: commit.tree,
            draft,
        });
    }
    replay(odb, onto, steps, options, meta).await
}

/// Undoes the changes of `commit` (relative to its first parent) on top of `onto`.
#[tracing::instrument(level = "debug", skip_all, fields(repo = %odb.repo(), onto = %onto.short(12), commit = %commit.short(12)))]
pub async fn revert(
    odb: &Odb,
    onto: ObjectId,
    commit: ObjectId,
    options: &PickOptions,
    meta: &CommitMeta,
) -> Result<PickOutcome, PickError> {
    let reverted = odb.commit(&commit).await?;
    let parent = parent_tree(odb, reverted.first_parent()).await?;
    let mut properties = meta.properties.clone();
    properties.insert("operation".into(), "revert".into());
    properties.insert("reverts".into(), commit.to_hex());
    let draft = CommitDraft {
        parents: Vec::new(),
        tree: parent,
        author: meta.author.clone(),
        committer: meta.committer.clone(),
        message: meta.message.clone(),
        properties,
    };
    let step = Step {
        source: commit,
        before: reverted.tree,
        after: parent,
        draft,
    };
    replay(odb, onto, vec![step], options, meta).await
}

/// The first-parent commits after `from` up to and including `to`, oldest first: the commits
/// of `from..to`.
pub async fn first_parent_range(
    odb: &Odb,
    from: ObjectId,
    to: ObjectId,
) -> Result<Vec<ObjectId>, PickError> {
    let mut range = Vec::new();
    let mut current = to;
    while current != from {
        let commit = odb.commit(&current).await?;
        range.push(current);
        match commit.first_parent() {
            Some(parent) => current = parent,
            None => return Err(PickError::NotInRange { from, to }),
        }
    }
    range.reverse();
    Ok(range)
}

async fn parent_tree(odb: &Odb, parent: Option<ObjectId>) -> Result<ObjectId, ReadError> {
    match parent {
        Some(id) => Ok(odb.commit(&id).await?.tree),
        None => Ok(tree::empty_id()),
    }
}

/// Merges every step's changes into the running tree, then writes the commits only once all
/// steps merged cleanly, so a conflict in any step writes no commit at all.
async fn replay(
    odb: &Odb,
    onto: ObjectId,
    steps: Vec<Step>,
    options: &PickOptions,
    meta: &CommitMeta,
) -> Result<PickOutcome, PickError> {
    if steps.is_empty() {
        return Err(PickError::Empty);
    }
    let start = odb.commit(&onto).await?.tree;
    let tree_options = TreeMergeOptions {
        resolutions: options.resolutions.clone(),
        strategy: options.strategy,
        // Later steps merge into the trees of earlier ones, so trees are written even in a
        // dry run; nothing refers to them unless commits are written too.
        dry_run: false,
        partial_resolutions: true,
    };
    let mut current = start;
    let mut used = BTreeSet::new();
    let mut resolved = Vec::new();
    let mut trees_after = Vec::with_capacity(steps.len());
    for step in &steps {
        let merged = trees::trees(odb, &step.before, &current, &step.after, &tree_options).await?;
        if !merged.conflicts.is_empty() {
            return Ok(PickOutcome::Conflicted {
                commit: step.source,
                conflicts: merged.conflicts,
            });
        }
        used.extend(
            merged
                .resolved
                .iter()
                .map(|c| c.key.clone())
                .filter(|k| options.resolutions.contains_key(k)),
        );
        resolved.extend(merged.resolved);
        current = merged
            .tree
            .expect("a clean merge that is not a dry run writes its tree");
        trees_after.push(current);
    }
    let unused: Vec<ContentKey> = options
        .resolutions
        .keys()
        .filter(|k| !used.contains(*k))
        .cloned()
        .collect();
    if !unused.is_empty() {
        return Err(PickError::UnknownResolution(unused));
    }
    let changes = changes_between_trees(odb, start, current).await?;
    if options.dry_run {
        return Ok(PickOutcome::Applied {
            commits: Vec::new(),
            changes,
            resolved,
        });
    }

    let mut commits = Vec::new();
    let mut head = onto;
    if options.squash {
        let mut properties = meta.properties.clone();
        properties.insert("operation".into(), "squash-pick".into());
        let sources: Vec<String> = steps.iter().map(|s| s.source.to_hex()).collect();
        properties.insert("picked".into(), sources.join(","));
        let draft = CommitDraft {
            parents: vec![head],
            tree: current,
            author: meta.author.clone(),
            committer: meta.committer.clone(),
            message: meta.message.clone(),
            properties,
        };
        commits.push(history::create(odb, draft, meta.time).await?.0);
    } else {
        for (step, tree) in steps.into_iter().zip(trees_after) {
            let draft = CommitDraft {
                parents: vec![head],
                tree,
                ..step.draft
            };
            head = history::create(odb, draft, meta.time).await?.0;
            commits.push(head);
        }
    }
    Ok(PickOutcome::Applied {
        commits,
        changes,
        resolved,
    })
}
