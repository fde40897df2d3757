//! Commit history: creating commits, and O(log n) walks along first parents.

use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;

use crate::backend::BackendError;
use crate::commit::{Commit, CommitDraft};
use crate::id::ObjectId;
use crate::object::Object;
use crate::odb::{Odb, ReadError};
use crate::time::Timestamp;

#[derive(Debug, thiserror::Error)]
pub enum CreateCommitError {
    #[error("commit lists parent {0} twice")]
    DuplicateParent(ObjectId),
    #[error("commit tree {0} is not in the repository")]
    MissingTree(ObjectId),
    #[error("reading parents: {0}")]
    Read(#[from] ReadError),
    #[error("writing the commit: {0}")]
    Write(#[from] BackendError),
}

/// Writes a commit for `draft` made at `now`, filling in what the store derives: generation,
/// first-parent depth, a time strictly after the first parent's, and skip pointers.
#[tracing::instrument(level = "debug", skip_all, fields(repo = %odb.repo(), parents = draft.parents.len()))]
pub async fn create(
    odb: &Odb,
    draft: CommitDraft,
    now: Timestamp,
) -> Result<(ObjectId, Arc<Commit>), CreateCommitError> {
    let mut seen = HashSet::new();
    if let Some(dup) = draft.parents.iter().find(|p| !seen.insert(**p)) {
        return Err(CreateCommitError::DuplicateParent(*dup));
    }
    if !odb.store().contains(odb.repo(), &draft.tree).await? {
        return Err(CreateCommitError::MissingTree(draft.tree));
    }
    let mut parents = Vec::with_capacity(draft.parents.len());
    for id in &draft.parents {
        parents.push(odb.commit(id).await?);
    }
    let generation = 1 + parents.iter().map(|p| p.generation).max().unwrap_or(0);
    let (depth, time, skips) = match parents.first() {
        None => (0, now, Vec::new()),
        Some(first) => (
            first.depth + 1,
            Timestamp::after(first.time, now),
            skip_pointers(odb, first.clone()).await?,
        ),
    };
    let commit = Arc::new(Commit {
        parents: draft.parents,
        tree: draft.tree,
        generation,
        depth,
        time,
        author: draft.author,
        committer: draft.committer,
        message: draft.message,
        properties: draft.properties,
        skips,
    });
    let ids = odb.write(vec![Object::Commit(commit.clone())]).await?;
    Ok((ids[0], commit))
}

/// Skip pointers of a new commit whose first parent is `parent`: the ancestor at distance
/// `2^k` is the ancestor at `2^(k-1)` of the ancestor at `2^(k-1)`.
async fn skip_pointers(odb: &Odb, parent: Arc<Commit>) -> Result<Vec<ObjectId>, ReadError> {
    let depth = parent.depth + 1;
    let mut skips = Vec::new();
    // `hop` is the ancestor at distance 2^(k-1) while computing the one at 2^k.
    let mut hop = parent;
    for k in 1..64u32 {
        if 1u64 << k > depth {
            break;
        }
        let next = hop
            .skip(k as usize - 1)
            .expect("an ancestor deep enough has this skip");
        skips.push(next);
        if k < 63 && 1u64 << (k + 1) <= depth {
            hop = odb.commit(&next).await?;
        }
    }
    Ok(skips)
}

#[derive(Debug, thiserror::Error)]
pub enum AncestorError {
    #[error("commit {id} has only {depth} first-parent ancestors, {requested} were asked for")]
    TooShallow {
        id: ObjectId,
        depth: u64,
        requested: u64,
    },
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// The first-parent ancestor `n` commits back (`main~n`), in O(log n) reads.
pub async fn nth_ancestor(odb: &Odb, id: ObjectId, n: u64) -> Result<ObjectId, AncestorError> {
    let start = odb.commit(&id).await?;
    if n > start.depth {
        return Err(AncestorError::TooShallow {
            id,
            depth: start.depth,
            requested: n,
        });
    }
    let (mut current_id, mut current, mut left) = (id, start, n);
    while left > 0 {
        let k = 63 - left.leading_zeros() as usize;
        current_id = current.skip(k).expect("depth covers every hop");
        left -= 1 << k;
        if left > 0 {
            current = odb.commit(&current_id).await?;
        }
    }
    Ok(current_id)
}

/// The newest commit at or before `time` on the first-parent chain of `id` (including `id`),
/// in O(log n) reads; `None` when the whole chain is newer.
pub async fn first_parent_at_or_before(
    odb: &Odb,
    id: ObjectId,
    time: Timestamp,
) -> Result<Option<ObjectId>, ReadError> {
    let mut current = odb.commit(&id).await?;
    if current.time <= time {
        return Ok(Some(id));
    }
    // Invariant: `current` is newer than `time`. Times increase along first parents, so
    // binary lifting from the longest hop down finds the oldest such commit.
    let top = current.skips.len();
    for k in (0..=top).rev() {
        let Some(candidate) = current.skip(k) else {
            continue;
        };
        let commit = odb.commit(&candidate).await?;
        if commit.time > time {
            current = commit;
        }
    }
    Ok(current.first_parent())
}

/// Whether `ancestor` is reachable from `descendant` (a commit is its own ancestor).
///
/// Tries the first-parent chain first (O(log n) via skip pointers), then searches all parents
/// newest generation first, never below the ancestor's generation.
pub async fn is_ancestor(
    odb: &Odb,
    ancestor: ObjectId,
    descendant: ObjectId,
) -> Result<bool, ReadError> {
    if ancestor == descendant {
        return Ok(true);
    }
    let target = odb.commit(&ancestor).await?;
    let start = odb.commit(&descendant).await?;
    if target.generation >= start.generation {
        return Ok(false);
    }
    if target.depth < start.depth {
        match nth_ancestor(odb, descendant, start.depth - target.depth).await {
            Ok(found) if found == ancestor => return Ok(true),
            Ok(_) => {}
            Err(AncestorError::Read(e)) => return Err(e),
            Err(AncestorError::TooShallow { .. }) => unreachable!("depth was checked"),
        }
    }
    let mut queue = BinaryHeap::from([(start.generation, descendant)]);
    let mut seen = HashSet::from([descendant]);
    while let Some((_, id)) = queue.pop() {
        if id == ancestor {
            return Ok(true);
        }
        let commit = odb.commit(&id).await?;
        for parent in &commit.parents {
            if !seen.insert(*parent) {
                continue;
            }
            let generation = odb.commit(parent).await?.generation;
            if generation >= target.generation {
                queue.push((generation, *parent));
            }
        }
    }
    Ok(false)
}
