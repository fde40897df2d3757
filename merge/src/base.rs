//! Merge bases: the best common ancestors of two commits.
//!
//! Commits are visited newest generation first from both sides, painting each with the side(s)
//! it is reachable from (commit-graph style). A commit reachable from both is a common
//! ancestor; its own ancestors are then only "stale" and the walk stops once nothing but stale
//! commits is left, so it visits the commits since the fork, not the whole history. Common
//! ancestors that are ancestors of other common ancestors are dropped: what remains are the
//! best ones.
//!
//! Criss-cross histories have several best bases. [`merge_base`] picks one deterministically:
//! the highest generation, then the latest time, then the smallest id. It does not merge the
//! bases into a virtual one; a change that the two bases disagree on shows up as a conflict,
//! never as a silent choice.

use std::collections::{BinaryHeap, HashMap};

use pangolin_store::history;
use pangolin_store::{ObjectId, Odb, ReadError};

const FROM_A: u8 = 1;
const FROM_B: u8 = 2;
const STALE: u8 = 4;

/// All best common ancestors of `a` and `b`, in no particular order. Empty when the histories
/// share nothing.
pub async fn merge_bases(odb: &Odb, a: ObjectId, b: ObjectId) -> Result<Vec<ObjectId>, ReadError> {
    if a == b {
        return Ok(vec![a]);
    }
    let mut flags: HashMap<ObjectId, u8> = HashMap::new();
    let mut queue = BinaryHeap::new();
    for (id, side) in [(a, FROM_A), (b, FROM_B)] {
        let generation = odb.commit(&id).await?.generation;
        flags.insert(id, side);
        queue.push((generation, id));
    }
    let mut common = Vec::new();
    // The queue holds the frontier of the walk, a few commits wide; stop once every commit in
    // it is below a common ancestor already found.
    while queue.iter().any(|(_, id)| flags[id] & STALE == 0) {
        let Some((_, id)) = queue.pop() else { break };
        let mut paint = flags[&id];
        if paint & (FROM_A | FROM_B) == FROM_A | FROM_B && paint & STALE == 0 {
            common.push(id);
            paint |= STALE;
            flags.insert(id, paint);
        }
        let commit = odb.commit(&id).await?;
        for parent in &commit.parents {
            let before = flags.get(parent).copied().unwrap_or(0);
            let after = before | paint;
            if after != before {
                flags.insert(*parent, after);
                let generation = odb.commit(parent).await?.generation;
                queue.push((generation, *parent));
            }
        }
    }
    remove_redundant(odb, common).await
}

/// Drops every candidate that is an ancestor of another candidate.
async fn remove_redundant(
    odb: &Odb,
    candidates: Vec<ObjectId>,
) -> Result<Vec<ObjectId>, ReadError> {
    let mut best = Vec::new();
    for (i, candidate) in candidates.iter().enumerate() {
        let mut redundant = false;
        for (j, other) in candidates.iter().enumerate() {
            if i != j && history::is_ancestor(odb, *candidate, *other).await? {
                redundant = true;
                break;
            }
        }
        if !redundant {
            best.push(*candidate);
        }
    }
    Ok(best)
}

/// The one merge base used for a merge: see the module documentation for how it is chosen
/// among several. `None` when the histories are unrelated.
pub async fn merge_base(
    odb: &Odb,
    a: ObjectId,
    b: ObjectId,
) -> Result<Option<ObjectId>, ReadError> {
    let bases = merge_bases(odb, a, b).await?;
    let mut best: Option<(u64, i64, ObjectId)> = None;
    for id in bases {
        let commit = odb.commit(&id).await?;
        let rank = (commit.generation, commit.time.as_millis(), id);
        best = match best {
            Some(current) if (current.0, current.1) > (rank.0, rank.1) => Some(current),
            Some(current) if (current.0, current.1) == (rank.0, rank.1) && current.2 < rank.2 => {
                Some(current)
            }
            _ => Some(rank),
        };
    }
    Ok(best.map(|(_, _, id)| id))
}
