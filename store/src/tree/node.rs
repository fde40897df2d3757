//! Tree nodes and the rule that decides where one node ends and the next begins.

use serde::{Deserialize, Serialize};

use crate::entry::Entry;
use crate::id::ObjectId;
use crate::key::ContentKey;

/// Bits of a key's hash tested per level: a key ends a node with probability 1/2^6, so nodes hold
/// about 64 items.
const BITS_PER_LEVEL: u32 = 6;

/// One node of the catalog tree.
///
/// Variant and field order are part of the canonical encoding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Node {
    /// Level 0: entries in key order.
    Leaf { entries: Vec<(ContentKey, Entry)> },
    /// Level 1 and up: children in key order, each named by the last key it holds.
    Inner { level: u8, children: Vec<Child> },
}

/// A reference from an inner node to the node one level down.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Child {
    /// The greatest key in the child's subtree: the child covers keys after the previous sibling's
    /// `last_key`, up to and including this one.
    pub last_key: ContentKey,
    pub id: ObjectId,
    /// Entries in the child's subtree.
    pub count: u64,
}

impl Node {
    pub const EMPTY: Node = Node::Leaf {
        entries: Vec::new(),
    };

    pub fn level(&self) -> u8 {
        match self {
            Self::Leaf { .. } => 0,
            Self::Inner { level, .. } => *level,
        }
    }

    /// Number of items in this node (entries or children).
    pub fn len(&self) -> usize {
        match self {
            Self::Leaf { entries } => entries.len(),
            Self::Inner { children, .. } => children.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of entries in the subtree.
    pub fn count(&self) -> u64 {
        match self {
            Self::Leaf { entries } => entries.len() as u64,
            Self::Inner { children, .. } => children.iter().map(|c| c.count).sum(),
        }
    }

    /// The greatest key in the subtree; `None` only for the empty tree.
    pub fn last_key(&self) -> Option<&ContentKey> {
        match self {
            Self::Leaf { entries } => entries.last().map(|(k, _)| k),
            Self::Inner { children, .. } => children.last().map(|c| &c.last_key),
        }
    }
}

/// Whether `key` ends a node at `level`.
///
/// Depends on the key alone, never on edit history or neighbours, so the same key set always
/// chunks the same way (history independence) and an edit only reshapes the nodes it touches.
/// The tested bits nest: a key that ends a node at level `l` ends one at every lower level too,
/// which keeps every inner item's key a boundary of the level below.
pub(crate) fn is_boundary(key: &ContentKey, level: u8, scratch: &mut Vec<u8>) -> bool {
    let bits = BITS_PER_LEVEL * (u32::from(level) + 1);
    if bits >= 64 {
        return false;
    }
    key.hash_input(scratch);
    let hash = blake3::hash(scratch);
    let low = u64::from_le_bytes(hash.as_bytes()[..8].try_into().expect("8 of 32 bytes"));
    let mask = (1u64 << bits) - 1;
    low & mask == mask
}

/// The items of one level, abstracted so that leaf and inner levels are edited by one algorithm.
pub(crate) trait LevelItem: Clone + Send + Sync + 'static {
    fn key(&self) -> &ContentKey;
    fn count(&self) -> u64;
    fn items(node: &Node) -> &[Self];
    fn into_node(level: u8, items: Vec<Self>) -> Node;
}

impl LevelItem for (ContentKey, Entry) {
    fn key(&self) -> &ContentKey {
        &self.0
    }

    fn count(&self) -> u64 {
        1
    }

    fn items(node: &Node) -> &[Self] {
        match node {
            Node::Leaf { entries } => entries,
            Node::Inner { .. } => &[],
        }
    }

    fn into_node(_level: u8, items: Vec<Self>) -> Node {
        Node::Leaf { entries: items }
    }
}

impl LevelItem for Child {
    fn key(&self) -> &ContentKey {
        &self.last_key
    }

    fn count(&self) -> u64 {
        self.count
    }

    fn items(node: &Node) -> &[Self] {
        match node {
            Node::Inner { children, .. } => children,
            Node::Leaf { .. } => &[],
        }
    }

    fn into_node(level: u8, items: Vec<Self>) -> Node {
        Node::Inner {
            level,
            children: items,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_nest_across_levels() {
        let mut scratch = Vec::new();
        let mut seen = [0usize; 3];
        for i in 0..200_000 {
            let key = ContentKey::new([format!("k{i}")]).unwrap();
            for level in 0..3u8 {
                if is_boundary(&key, level, &mut scratch) {
                    seen[usize::from(level)] += 1;
                    if level > 0 {
                        assert!(is_boundary(&key, level - 1, &mut scratch));
                    }
                }
            }
        }
        // Expected 200_000/64 ≈ 3125 and /4096 ≈ 49 boundaries.
        assert!((2_500..3_800).contains(&seen[0]), "{seen:?}");
        assert!((20..100).contains(&seen[1]), "{seen:?}");
    }
}
