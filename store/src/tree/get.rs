//! Point lookups.

use std::sync::Arc;

use crate::entry::Entry;
use crate::id::ObjectId;
use crate::key::ContentKey;
use crate::odb::{Odb, ReadError};
use crate::tree::{Node, NodeView};

/// The entry at `key` in the tree rooted at `root`, or `None`.
pub async fn get(odb: &Odb, root: &ObjectId, key: &ContentKey) -> Result<Option<Entry>, ReadError> {
    let mut node: Arc<Node> = odb.node(root).await?;
    loop {
        let position = node.search(key);
        let next = match node.view() {
            NodeView::Leaf { entries } => {
                return Ok(position.ok().map(|i| entries[i].1.clone()));
            }
            NodeView::Inner { children, .. } => {
                // The child holding `key` is the first whose last key is not less than it.
                let i = position.unwrap_or_else(|i| i);
                match children.get(i) {
                    Some(child) => child.id,
                    None => return Ok(None),
                }
            }
        };
        node = odb.node(&next).await?;
    }
}
