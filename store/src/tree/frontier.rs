//! An ordered walk over the entries of a tree that can skip whole subtrees.
//!
//! The frontier is a stack of positions in nodes, from the root down: what is left to visit,
//! smallest keys first. Listing takes entries from it; diff walks two frontiers side by side
//! and drops subtrees whose ids are equal without reading them. Items are borrowed from the
//! cached nodes, so nothing is cloned until a caller keeps it.

use std::sync::Arc;

use crate::entry::Entry;
use crate::id::ObjectId;
use crate::key::ContentKey;
use crate::odb::{Odb, ReadError};
use crate::tree::{KeyRange, Node, NodeView};

/// The item at the front of a frontier, borrowed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Front<'a> {
    Subtree { id: &'a ObjectId, level: u8 },
    Entry(&'a ContentKey, &'a Entry),
}

/// A position inside one node.
#[derive(Debug)]
struct Cursor {
    node: Arc<Node>,
    index: usize,
    /// Every key of this node is greater than this one (the key before the node).
    after: Option<ContentKey>,
}

#[derive(Debug)]
pub(crate) struct Frontier {
    /// The root, until it is expanded.
    root: Option<(ObjectId, u8)>,
    stack: Vec<Cursor>,
    range: KeyRange,
    pub(crate) nodes_read: u64,
}

impl Frontier {
    pub(crate) fn new(root: ObjectId, root_level: u8, range: KeyRange) -> Self {
        Self {
            root: Some((root, root_level)),
            stack: Vec::new(),
            range,
            nodes_read: 0,
        }
    }

    /// The next item in the range, dropping items entirely before it; `None` once the rest lies
    /// past the end of the range.
    pub(crate) fn peek(&mut self) -> Option<Front<'_>> {
        if let Some((id, level)) = &self.root {
            return Some(Front::Subtree { id, level: *level });
        }
        loop {
            let cursor = self.stack.last_mut()?;
            let (before, past) = match cursor.node.view() {
                NodeView::Leaf { entries } => match entries.get(cursor.index) {
                    None => (None, false),
                    Some((key, _)) => (Some(self.range.is_before(key)), self.range.is_past(key)),
                },
                NodeView::Inner { children, .. } => match children.get(cursor.index) {
                    None => (None, false),
                    Some(child) => {
                        let after = match cursor.index {
                            0 => cursor.after.as_ref(),
                            i => Some(&children[i - 1].last_key),
                        };
                        (
                            Some(self.range.is_before(&child.last_key)),
                            after.is_some_and(|k| self.range.is_past(k)),
                        )
                    }
                },
            };
            match before {
                None => {
                    self.stack.pop();
                }
                Some(_) if past => {
                    self.stack.clear();
                    return None;
                }
                Some(true) => cursor.index += 1,
                Some(false) => break,
            }
        }
        let cursor = self.stack.last()?;
        Some(match cursor.node.view() {
            NodeView::Leaf { entries } => {
                let (key, entry) = &entries[cursor.index];
                Front::Entry(key, entry)
            }
            NodeView::Inner { level, children } => Front::Subtree {
                id: &children[cursor.index].id,
                level: level - 1,
            },
        })
    }

    /// Moves the start of the range past every key that starts with `prefix`. Nothing is read
    /// here: the next `peek` drops the items now before the range, skipping whole subtrees by
    /// their last keys, so the next entry costs one descent from where the walk stands.
    pub(crate) fn skip_prefix(&mut self, prefix: &ContentKey) {
        self.range = self.range.after_prefix(prefix);
    }

    /// Drops the item at the front.
    pub(crate) fn advance(&mut self) {
        if self.root.take().is_some() {
            return;
        }
        if let Some(cursor) = self.stack.last_mut() {
            cursor.index += 1;
        }
    }

    /// Replaces the subtree at the front with its items.
    pub(crate) async fn expand(&mut self, odb: &Odb) -> Result<(), ReadError> {
        let (id, after) = match self.root.take() {
            Some((id, _)) => (id, None),
            None => {
                if !matches!(self.peek(), Some(Front::Subtree { .. })) {
                    return Ok(());
                }
                let cursor = self.stack.last_mut().expect("peek saw a subtree");
                let NodeView::Inner { children, .. } = cursor.node.view() else {
                    unreachable!("subtrees live in inner nodes")
                };
                let after = match cursor.index {
                    0 => cursor.after.clone(),
                    i => Some(children[i - 1].last_key.clone()),
                };
                let id = children[cursor.index].id;
                cursor.index += 1;
                (id, after)
            }
        };
        let node = odb.node(&id).await?;
        self.nodes_read += 1;
        self.stack.push(Cursor {
            node,
            index: 0,
            after,
        });
        Ok(())
    }

    /// Expands subtrees until the front is an entry, and takes it; `None` at the end of the
    /// range.
    pub(crate) async fn next_entry(
        &mut self,
        odb: &Odb,
    ) -> Result<Option<(ContentKey, Entry)>, ReadError> {
        loop {
            let entry = match self.peek() {
                None => return Ok(None),
                Some(Front::Subtree { .. }) => None,
                Some(Front::Entry(key, entry)) => Some((key.clone(), entry.clone())),
            };
            match entry {
                Some(entry) => {
                    self.advance();
                    return Ok(Some(entry));
                }
                None => self.expand(odb).await?,
            }
        }
    }
}
