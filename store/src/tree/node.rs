//! Tree nodes and the rule that decides where one node ends and the next begins.

use serde::{Deserialize, Serialize};

use crate::entry::Entry;
use crate::id::ObjectId;
use crate::key::ContentKey;

/// Bits of a key's hash tested for leaves: a key ends a leaf with probability 1/2^5, so leaves
/// hold about 32 entries (about 5 KiB of Iceberg table entries): every edit rewrites its leaf,
/// so leaf size is what an edit costs.
const LEAF_BITS: u32 = 5;

/// Further bits tested per inner level: about 64 children (60 bytes each) per inner node.
const INNER_BITS: u32 = 6;

/// One node of the catalog tree: its items, plus an index of their keys laid out in one buffer
/// so that a lookup's binary search reads a few cache lines instead of chasing one pointer per
/// key. The index is derived, never encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    body: Body,
    index: KeyIndex,
}

/// What is encoded. Variant and field order are part of the canonical encoding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Body {
    /// Level 0: entries in key order.
    Leaf { entries: Vec<(ContentKey, Entry)> },
    /// Level 1 and up: children in key order, each named by the last key it holds.
    Inner { level: u8, children: Vec<Child> },
}

/// A node's items, borrowed, for matching on.
#[derive(Debug, Clone, Copy)]
pub enum NodeView<'a> {
    Leaf { entries: &'a [(ContentKey, Entry)] },
    Inner { level: u8, children: &'a [Child] },
}

/// The keys of a node's items, concatenated, with the end offset of each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct KeyIndex {
    bytes: Box<[u8]>,
    ends: Box<[u32]>,
}

impl KeyIndex {
    fn new<'a>(keys: impl Iterator<Item = &'a ContentKey>) -> Self {
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for key in keys {
            bytes.extend_from_slice(key.hash_input());
            ends.push(
                u32::try_from(bytes.len()).expect("a node holds far less than 4 GiB of keys"),
            );
        }
        Self {
            bytes: bytes.into(),
            ends: ends.into(),
        }
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = match i {
            0 => 0,
            _ => self.ends[i - 1] as usize,
        };
        &self.bytes[start..self.ends[i] as usize]
    }

    /// Index of the first key not less than `key` (the partition point of `< key`), and
    /// whether it is equal.
    fn lower_bound(&self, key: &[u8]) -> (usize, bool) {
        let (mut low, mut high) = (0, self.ends.len());
        while low < high {
            let mid = low + (high - low) / 2;
            if self.key(mid) < key {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        (low, low < self.ends.len() && self.key(low) == key)
    }
}

impl Serialize for Node {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.body.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::from_body(Body::deserialize(deserializer)?))
    }
}

impl Node {
    pub fn leaf(entries: Vec<(ContentKey, Entry)>) -> Self {
        Self::from_body(Body::Leaf { entries })
    }

    pub fn inner(level: u8, children: Vec<Child>) -> Self {
        Self::from_body(Body::Inner { level, children })
    }

    /// The root of the empty tree.
    pub fn empty() -> Self {
        Self::leaf(Vec::new())
    }

    fn from_body(body: Body) -> Self {
        let index = match &body {
            Body::Leaf { entries } => KeyIndex::new(entries.iter().map(|(k, _)| k)),
            Body::Inner { children, .. } => KeyIndex::new(children.iter().map(|c| &c.last_key)),
        };
        Self { body, index }
    }

    pub fn view(&self) -> NodeView<'_> {
        match &self.body {
            Body::Leaf { entries } => NodeView::Leaf { entries },
            Body::Inner { level, children } => NodeView::Inner {
                level: *level,
                children,
            },
        }
    }

    /// Where `key` is, or would go, among the node's item keys: `Ok(i)` when item `i` has
    /// exactly this key, `Err(i)` for the first item with a greater key.
    pub fn search(&self, key: &ContentKey) -> Result<usize, usize> {
        match self.index.lower_bound(key.hash_input()) {
            (i, true) => Ok(i),
            (i, false) => Err(i),
        }
    }

    pub fn level(&self) -> u8 {
        match &self.body {
            Body::Leaf { .. } => 0,
            Body::Inner { level, .. } => *level,
        }
    }

    /// Number of items in this node (entries or children).
    pub fn len(&self) -> usize {
        self.index.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of entries in the subtree.
    pub fn count(&self) -> u64 {
        match &self.body {
            Body::Leaf { entries } => entries.len() as u64,
            Body::Inner { children, .. } => children.iter().map(|c| c.count).sum(),
        }
    }

    /// The greatest key in the subtree; `None` only for the empty tree.
    pub fn last_key(&self) -> Option<&ContentKey> {
        match &self.body {
            Body::Leaf { entries } => entries.last().map(|(k, _)| k),
            Body::Inner { children, .. } => children.last().map(|c| &c.last_key),
        }
    }
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

/// Whether `key` ends a node at `level`.
///
/// Depends on the key alone, never on edit history or neighbours, so the same key set always
/// chunks the same way (history independence) and an edit only reshapes the nodes it touches.
/// The tested bits nest: a key that ends a node at level `l` ends one at every lower level too,
/// which keeps every inner item's key a boundary of the level below.
pub(crate) fn is_boundary(key: &ContentKey, level: u8) -> bool {
    let bits = LEAF_BITS + INNER_BITS * u32::from(level);
    if bits >= 64 {
        return false;
    }
    let hash = blake3::hash(key.hash_input());
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
        match node.view() {
            NodeView::Leaf { entries } => entries,
            NodeView::Inner { .. } => &[],
        }
    }

    fn into_node(_level: u8, items: Vec<Self>) -> Node {
        Node::leaf(items)
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
        match node.view() {
            NodeView::Inner { children, .. } => children,
            NodeView::Leaf { .. } => &[],
        }
    }

    fn into_node(level: u8, items: Vec<Self>) -> Node {
        Node::inner(level, items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Content;

    #[test]
    fn search_agrees_with_binary_search_over_keys() {
        let mut keys: Vec<ContentKey> = ["a", "a\u{1}", "ab", "b"]
            .iter()
            .flat_map(|first| {
                ["", "x", "y.z"].iter().map(move |second| {
                    let mut elements = vec![first.replace('\u{1}', "!")];
                    if !second.is_empty() {
                        elements.push((*second).to_owned());
                    }
                    ContentKey::new(elements).unwrap()
                })
            })
            .collect();
        keys.sort();
        let namespace = Content::Namespace {
            properties: Default::default(),
        };
        let entries: Vec<_> = keys
            .iter()
            .map(|k| (k.clone(), Entry::new(namespace.clone())))
            .collect();
        let node = Node::leaf(entries);
        let probes = keys
            .iter()
            .cloned()
            .chain(["0", "a!", "aa", "zz"].map(|p| ContentKey::new([p]).unwrap()));
        for probe in probes {
            assert_eq!(node.search(&probe), keys.binary_search(&probe), "{probe}");
        }
        assert_eq!(Node::empty().search(&keys[0]), Err(0));
    }

    #[test]
    fn boundaries_nest_across_levels() {
        let mut seen = [0usize; 3];
        for i in 0..200_000 {
            let key = ContentKey::new([format!("k{i}")]).unwrap();
            for level in 0..3u8 {
                if is_boundary(&key, level) {
                    seen[usize::from(level)] += 1;
                    if level > 0 {
                        assert!(is_boundary(&key, level - 1));
                    }
                }
            }
        }
        // Expected 200_000/32 = 6250 and /2048 ≈ 98 boundaries.
        assert!((5_500..7_000).contains(&seen[0]), "{seen:?}");
        assert!((60..140).contains(&seen[1]), "{seen:?}");
    }
}
