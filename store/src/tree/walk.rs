//! A walk over a key range that the caller can steer past subtrees.

use crate::entry::Entry;
use crate::id::ObjectId;
use crate::key::ContentKey;
use crate::odb::{Odb, ReadError};
use crate::tree::KeyRange;
use crate::tree::frontier::Frontier;

/// The entries of a range in key order, one at a time, with [`Walk::skip_prefix`] to step over
/// every key under one key without reading them.
///
/// Where [`list`](crate::tree::list) returns a page of every entry, a walk lets a caller that
/// only wants some levels of the key hierarchy skip the rest: each skip costs at most one
/// descent (the tree's height in node reads), whatever the number of keys skipped.
#[derive(Debug)]
pub struct Walk {
    frontier: Frontier,
}

impl Walk {
    /// A walk over `range` of the tree at `root`; reads the root.
    pub async fn new(odb: &Odb, root: &ObjectId, range: KeyRange) -> Result<Self, ReadError> {
        let root_level = odb.node(root).await?.level();
        Ok(Self {
            frontier: Frontier::new(*root, root_level, range),
        })
    }

    /// The next entry in key order, or `None` at the end of the range.
    pub async fn next_entry(
        &mut self,
        odb: &Odb,
    ) -> Result<Option<(ContentKey, Entry)>, ReadError> {
        self.frontier.next_entry(odb).await
    }

    /// Continues after every key that starts with `prefix` (`prefix` itself and every key under
    /// it); keys before the walk's position stay behind it.
    pub fn skip_prefix(&mut self, prefix: &ContentKey) {
        self.frontier.skip_prefix(prefix);
    }

    /// Nodes the walk has opened so far, the root included: what its cost is counted in.
    pub fn nodes_read(&self) -> u64 {
        self.frontier.nodes_read
    }
}
