//! Batched edits: insert, replace and delete many keys in one pass, writing only the nodes on
//! the paths to the edited keys.
//!
//! The tree is edited level by level, bottom up. At each level the nodes holding edited keys
//! are rewritten and re-chunked; when a rewritten run no longer ends on a boundary key (its
//! boundary was deleted) it absorbs the next node, until it does. The nodes replaced and
//! created at one level become the edits of the level above, keyed by their last keys, so the
//! same routine serves every level. Node starts never move (they follow a boundary that was not
//! edited), which is why the result is the tree a fresh build of the same entries would give.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::backend::BackendError;
use crate::entry::Entry;
use crate::id::ObjectId;
use crate::key::ContentKey;
use crate::object::{Object, RawObject};
use crate::odb::{Odb, ReadError};
use crate::tree::node::{LevelItem, is_boundary};
use crate::tree::{Child, Node, NodeView};

/// The result of an edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EditOutcome {
    pub root: ObjectId,
    /// New nodes written (nodes that already existed are not counted).
    pub nodes_written: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("reading the tree: {0}")]
    Read(#[from] ReadError),
    #[error("writing new tree nodes: {0}")]
    Write(#[from] BackendError),
}

/// Applies `edits` (`Some` puts an entry, `None` deletes the key) to the tree at `root`.
#[tracing::instrument(level = "debug", skip_all, fields(repo = %odb.repo(), root = %root.short(12), edits = edits.len()))]
pub async fn edit(
    odb: &Odb,
    root: &ObjectId,
    edits: BTreeMap<ContentKey, Option<Entry>>,
) -> Result<EditOutcome, EditError> {
    if edits.is_empty() {
        return Ok(EditOutcome {
            root: *root,
            nodes_written: 0,
        });
    }
    let mut editor = Editor {
        odb,
        root: *root,
        created: HashMap::new(),
    };
    let root_node = odb.node(root).await?;
    let root_level = root_node.level();

    let leaf_edits: Vec<(ContentKey, Option<(ContentKey, Entry)>)> = edits
        .into_iter()
        .map(|(k, e)| (k.clone(), e.map(|e| (k, e))))
        .collect();
    let mut level_out = editor.edit_level(0, root_level, leaf_edits).await?;
    let mut level = 0;
    let new_root = loop {
        if level == root_level {
            break editor.finish_root(level, level_out.added).await?;
        }
        let parent_edits = level_out.parent_edits();
        if parent_edits.is_empty() {
            // Every node rewritten at this level came out as it was, so every node rewritten
            // below did too: nothing new to write.
            return Ok(EditOutcome {
                root: *root,
                nodes_written: 0,
            });
        }
        level += 1;
        level_out = editor.edit_level(level, root_level, parent_edits).await?;
    };
    editor.write(new_root).await
}

/// What one level's rewrite replaced and created.
struct LevelOutput {
    removed: Vec<Child>,
    added: Vec<Child>,
}

impl LevelOutput {
    /// The edits this level implies for the level above: old nodes out, new nodes in. A node
    /// that came out identical (same last key, same id) is no edit at all.
    fn parent_edits(self) -> Vec<(ContentKey, Option<Child>)> {
        let mut edits: BTreeMap<ContentKey, Option<Child>> = BTreeMap::new();
        let removed: HashMap<ContentKey, ObjectId> = self
            .removed
            .into_iter()
            .map(|c| (c.last_key, c.id))
            .collect();
        for key in removed.keys() {
            edits.insert(key.clone(), None);
        }
        for child in self.added {
            if removed.get(&child.last_key) == Some(&child.id) {
                edits.remove(&child.last_key);
            } else {
                edits.insert(child.last_key.clone(), Some(child));
            }
        }
        edits.into_iter().collect()
    }
}

/// A node found by descending from the root.
struct Located {
    id: ObjectId,
    node: Arc<Node>,
    /// Whether it is the last node of its level.
    rightmost: bool,
}

struct Editor<'a> {
    odb: &'a Odb,
    root: ObjectId,
    /// New nodes by id, written together at the end.
    created: HashMap<ObjectId, (RawObject, Arc<Node>)>,
}

/// An item waiting to be chunked, with whether it ends a node if that is already known.
type Pending<T> = (T, Option<bool>);

impl Editor<'_> {
    async fn edit_level<T: LevelItem>(
        &mut self,
        level: u8,
        root_level: u8,
        edits: Vec<(ContentKey, Option<T>)>,
    ) -> Result<LevelOutput, ReadError> {
        let mut out = LevelOutput {
            removed: Vec::new(),
            added: Vec::new(),
        };
        let mut pending: Vec<Pending<T>> = Vec::new();
        let mut next = 0;
        // Set while a rewritten run must absorb the node after the one with this last key.
        let mut absorb_after: Option<ContentKey> = None;
        loop {
            let located = match absorb_after.take() {
                Some(after) => self.locate(level, root_level, &after, true).await?,
                None => match edits.get(next) {
                    Some((key, _)) => self.locate(level, root_level, key, false).await?,
                    None => break,
                },
            };
            let Some(located) = located else { break };
            let end = match (located.rightmost, located.node.last_key()) {
                (false, Some(last)) => next + edits[next..].partition_point(|(k, _)| k <= last),
                _ => edits.len(),
            };
            let items = T::items(&located.node);
            pending.extend(apply(items, &edits[next..end], !located.rightmost));
            next = end;
            if let Some(last_key) = located.node.last_key() {
                out.removed.push(Child {
                    last_key: last_key.clone(),
                    id: located.id,
                    count: located.node.count(),
                });
            }
            self.chunk(level, &mut pending, &mut out.added);
            if !pending.is_empty() {
                if located.rightmost {
                    let rest = pending.drain(..).map(|(item, _)| item).collect();
                    out.added.push(self.create(level, rest));
                } else {
                    absorb_after = located.node.last_key().cloned();
                }
            }
        }
        if !pending.is_empty() {
            // Only reachable if a non-rightmost node had no successor, which the tree's shape
            // rules out; closing the run keeps every entry either way.
            let rest = pending.into_iter().map(|(item, _)| item).collect();
            out.added.push(self.create(level, rest));
        }
        Ok(out)
    }

    /// Turns every complete chunk at the front of `pending` into a node.
    /// Only items whose status is unknown (new keys) are hashed.
    fn chunk<T: LevelItem>(
        &mut self,
        level: u8,
        pending: &mut Vec<Pending<T>>,
        added: &mut Vec<Child>,
    ) {
        let ends: Vec<usize> = pending
            .iter()
            .enumerate()
            .filter(|(_, (item, known))| known.unwrap_or_else(|| is_boundary(item.key(), level)))
            .map(|(i, _)| i)
            .collect();
        let mut rest = std::mem::take(pending).into_iter();
        let mut taken = 0;
        for end in ends {
            let items = rest
                .by_ref()
                .take(end + 1 - taken)
                .map(|(item, _)| item)
                .collect();
            taken = end + 1;
            added.push(self.create(level, items));
        }
        *pending = rest.collect();
    }

    fn create<T: LevelItem>(&mut self, level: u8, items: Vec<T>) -> Child {
        let last_key = items
            .last()
            .map(|i| i.key().clone())
            .expect("chunks are never empty");
        let count = items.iter().map(LevelItem::count).sum();
        let node = Arc::new(T::into_node(level, items));
        let object = Object::Tree(node.clone());
        let raw = object.encode();
        let id = raw.id;
        self.created.insert(id, (raw, node));
        Child {
            last_key,
            id,
            count,
        }
    }

    /// The node at `level` that holds `key` (or, with `strictly_after`, the first node holding
    /// a key greater than `key`), by descending from the old root.
    async fn locate(
        &self,
        level: u8,
        root_level: u8,
        key: &ContentKey,
        strictly_after: bool,
    ) -> Result<Option<Located>, ReadError> {
        let mut id = self.root;
        let mut node = self.odb.node(&id).await?;
        let mut rightmost = true;
        for _ in level..root_level {
            let NodeView::Inner { children, .. } = node.view() else {
                unreachable!("levels above 0 are inner nodes")
            };
            let i = match (node.search(key), strictly_after) {
                (Ok(i), true) => i + 1,
                (Err(i), true) => i,
                (Ok(i) | Err(i), false) => i.min(children.len() - 1),
            };
            let Some(child) = children.get(i) else {
                return Ok(None);
            };
            rightmost &= i + 1 == children.len();
            id = child.id;
            node = self.odb.node(&id).await?;
        }
        Ok(Some(Located {
            id,
            node,
            rightmost,
        }))
    }

    /// Builds the new root from the complete new top level: collapses a root with one child,
    /// or adds levels until one node remains.
    async fn finish_root(&mut self, level: u8, mut top: Vec<Child>) -> Result<ObjectId, ReadError> {
        let mut level = level;
        while top.len() > 1 {
            level += 1;
            let mut pending: Vec<Pending<Child>> = top.drain(..).map(|c| (c, None)).collect();
            self.chunk(level, &mut pending, &mut top);
            if !pending.is_empty() {
                let rest = pending.into_iter().map(|(item, _)| item).collect();
                top.push(self.create(level, rest));
            }
        }
        let Some(mut root) = top.pop().map(|c| c.id) else {
            let empty = self.create_empty();
            return Ok(empty);
        };
        loop {
            let node = match self.created.get(&root) {
                Some((_, node)) => node.clone(),
                None => self.odb.node(&root).await?,
            };
            match node.view() {
                NodeView::Inner { children, .. } if children.len() == 1 => {
                    // A root with one child is not canonical: the child is the root.
                    self.created.remove(&root);
                    root = children[0].id;
                }
                _ => return Ok(root),
            }
        }
    }

    fn create_empty(&mut self) -> ObjectId {
        let node = Arc::new(Node::empty());
        let raw = Object::Tree(node.clone()).encode();
        let id = raw.id;
        self.created.insert(id, (raw, node));
        id
    }

    /// Writes the new nodes. Every node created is referenced by the new tree: each one
    /// becomes an edit of the level above, and the roots dropped by collapsing were removed.
    async fn write(self, root: ObjectId) -> Result<EditOutcome, EditError> {
        let nodes_written = self.created.len();
        let encoded = self
            .created
            .into_values()
            .map(|(raw, node)| (raw, Object::Tree(node)))
            .collect();
        self.odb.write_encoded(encoded).await?;
        Ok(EditOutcome {
            root,
            nodes_written,
        })
    }
}

/// Merges sorted `edits` into the sorted `items` of one node. Kept items carry their known
/// boundary status (only a node's last item ends it, and it surely does when `ends_on_boundary`),
/// a replaced item keeps the status of the key it replaces, and new keys are left to be hashed.
fn apply<T: LevelItem>(
    items: &[T],
    edits: &[(ContentKey, Option<T>)],
    ends_on_boundary: bool,
) -> Vec<Pending<T>> {
    let last = items.len().saturating_sub(1);
    let status = |i: usize| match (i == last, ends_on_boundary) {
        (false, _) => Some(false),
        (true, true) => Some(true),
        (true, false) => None,
    };
    let mut out = Vec::with_capacity(items.len() + edits.len());
    let mut items = items.iter().enumerate().peekable();
    for (key, edit) in edits {
        while let Some((i, item)) = items.next_if(|(_, item)| item.key() < key) {
            out.push((item.clone(), status(i)));
        }
        let replaced = items
            .next_if(|(_, item)| item.key() == key)
            .map(|(i, _)| status(i));
        if let Some(new) = edit {
            out.push((new.clone(), replaced.flatten()));
        }
    }
    out.extend(items.map(|(i, item)| (item.clone(), status(i))));
    out
}
