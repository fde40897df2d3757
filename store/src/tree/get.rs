//! Point lookups.

use std::sync::Arc;

use crate::entry::Entry;
use crate::id::ObjectId;
use crate::key::ContentKey;
use crate::odb::{Odb, ReadError};
use crate::tree::Node;

/// The entry at `key` in the tree rooted at `root`, or `None`.
pub async fn get(odb: &Odb, root: &ObjectId, key: &ContentKey) -> Result<Option<Entry>, ReadError> {
    let mut node: Arc<Node> = odb.node(root).await?;
    loop {
        let next = match node.as_ref() {
            Node::Leaf { entries } => {
                return Ok(entries
                    .binary_search_by(|(k, _)| k.cmp(key))
                    .ok()
                    .map(|i| entries[i].1.clone()));
            }
            Node::Inner { children, .. } => {
                let i = children.partition_point(|c| &c.last_key < key);
                match children.get(i) {
                    Some(child) => child.id,
                    None => return Ok(None),
                }
            }
        };
        node = odb.node(&next).await?;
    }
}
