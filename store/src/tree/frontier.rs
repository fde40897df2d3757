//! An ordered walk over the entries of a tree that can skip whole subtrees.
//!
//! The frontier holds what is left to visit, smallest keys first: unexpanded subtrees and
//! entries. Listing pops entries; diff compares two frontiers and drops equal subtrees unread.

use std::sync::Arc;

use crate::entry::Entry;
use crate::id::ObjectId;
use crate::key::ContentKey;
use crate::odb::{Odb, ReadError};
use crate::tree::{KeyRange, Node};

#[derive(Debug, Clone)]
pub(crate) enum Item {
    Subtree {
        id: ObjectId,
        level: u8,
        /// Every key in the subtree is greater than this one.
        after: Option<ContentKey>,
        /// The greatest key in the subtree, when known (unknown for a root).
        last_key: Option<ContentKey>,
    },
    Entry(ContentKey, Entry),
}

#[derive(Debug)]
pub(crate) struct Frontier {
    /// Reversed: the next item is at the end.
    stack: Vec<Item>,
    range: KeyRange,
    pub(crate) nodes_read: u64,
}

impl Frontier {
    pub(crate) fn new(root: ObjectId, root_level: u8, range: KeyRange) -> Self {
        let root = Item::Subtree {
            id: root,
            level: root_level,
            after: None,
            last_key: None,
        };
        Self {
            stack: vec![root],
            range,
            nodes_read: 0,
        }
    }

    /// The next item in the range, dropping items entirely before it. `None` once the rest lies
    /// past the end of the range.
    pub(crate) fn peek(&mut self) -> Option<&Item> {
        while let Some(item) = self.stack.last() {
            let (before, past) = match item {
                Item::Entry(key, _) => (self.range.is_before(key), self.range.is_past(key)),
                Item::Subtree {
                    after, last_key, ..
                } => (
                    last_key.as_ref().is_some_and(|k| self.range.is_before(k)),
                    after.as_ref().is_some_and(|k| self.range.is_past(k)),
                ),
            };
            if past {
                self.stack.clear();
            } else if before {
                self.stack.pop();
            } else {
                break;
            }
        }
        self.stack.last()
    }

    pub(crate) fn pop(&mut self) -> Option<Item> {
        self.peek()?;
        self.stack.pop()
    }

    /// Replaces the subtree at the front with its items.
    pub(crate) async fn expand(&mut self, odb: &Odb) -> Result<(), ReadError> {
        let Some(Item::Subtree { id, after, .. }) = self.pop() else {
            return Ok(());
        };
        let node: Arc<Node> = odb.node(&id).await?;
        self.nodes_read += 1;
        match node.as_ref() {
            Node::Leaf { entries } => {
                self.stack.extend(
                    entries
                        .iter()
                        .rev()
                        .map(|(k, e)| Item::Entry(k.clone(), e.clone())),
                );
            }
            Node::Inner { level, children } => {
                let child_level = level - 1;
                for (i, child) in children.iter().enumerate().rev() {
                    let after = match i {
                        0 => after.clone(),
                        _ => Some(children[i - 1].last_key.clone()),
                    };
                    self.stack.push(Item::Subtree {
                        id: child.id,
                        level: child_level,
                        after,
                        last_key: Some(child.last_key.clone()),
                    });
                }
            }
        }
        Ok(())
    }

    /// Expands subtrees until the front is an entry; `None` at the end of the range.
    pub(crate) async fn next_entry(
        &mut self,
        odb: &Odb,
    ) -> Result<Option<(ContentKey, Entry)>, ReadError> {
        loop {
            match self.peek() {
                None => return Ok(None),
                Some(Item::Subtree { .. }) => self.expand(odb).await?,
                Some(Item::Entry(..)) => {
                    let Some(Item::Entry(key, entry)) = self.stack.pop() else {
                        unreachable!("peeked an entry")
                    };
                    return Ok(Some((key, entry)));
                }
            }
        }
    }
}
