//! Commits: a tree, its parents, who and when, and skip pointers along first parents.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::id::ObjectId;
use crate::time::Timestamp;

/// One version of a catalog.
///
/// Field order is part of the canonical encoding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// First parent is the branch the commit was made on; a merge commit has a second.
    pub parents: Vec<ObjectId>,
    /// Root of the catalog tree at this commit.
    pub tree: ObjectId,
    /// `1 + max(parent generations)`; 1 for a root commit. Lets ancestry searches stop early.
    pub generation: u64,
    /// Number of first-parent ancestors: 0 for a root commit.
    pub depth: u64,
    /// Server-assigned; strictly increasing along first parents.
    pub time: Timestamp,
    pub author: String,
    pub committer: String,
    pub message: String,
    /// What the commit did, for the log (operation, Iceberg snapshot summary, ...).
    pub properties: BTreeMap<String, String>,
    /// `skips[k]` is the first-parent ancestor at distance `2^(k+1)`; distance 1 is
    /// `parents[0]`. Gives "n commits back" and "newest commit at or before t" in O(log n) reads.
    pub skips: Vec<ObjectId>,
}

impl Commit {
    pub fn first_parent(&self) -> Option<ObjectId> {
        self.parents.first().copied()
    }

    /// The first-parent ancestor at distance `2^k`, if the history is that deep.
    pub fn skip(&self, k: usize) -> Option<ObjectId> {
        match k {
            0 => self.first_parent(),
            _ => self.skips.get(k - 1).copied(),
        }
    }

    pub fn is_merge(&self) -> bool {
        self.parents.len() > 1
    }
}

/// What a caller says about a new commit; [`history::create`](crate::history::create) derives
/// generation, depth, time and skip pointers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitDraft {
    pub parents: Vec<ObjectId>,
    pub tree: ObjectId,
    pub author: String,
    pub committer: String,
    pub message: String,
    pub properties: BTreeMap<String, String>,
}
