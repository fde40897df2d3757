//! Ordered listing of a key range, one page at a time.

use crate::entry::Entry;
use crate::id::ObjectId;
use crate::key::ContentKey;
use crate::odb::{Odb, ReadError};
use crate::tree::KeyRange;
use crate::tree::frontier::Frontier;

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub entries: Vec<(ContentKey, Entry)>,
    /// Set when more entries follow: list again with `range.after(&next_after)`.
    pub next_after: Option<ContentKey>,
}

/// Up to `limit` entries of `range` in key order. Reads O(log n + limit / 64) nodes.
pub async fn list(
    odb: &Odb,
    root: &ObjectId,
    range: &KeyRange,
    limit: usize,
) -> Result<Page, ReadError> {
    let root_level = odb.node(root).await?.level();
    let mut frontier = Frontier::new(*root, root_level, range.clone());
    let mut entries = Vec::new();
    while entries.len() < limit {
        match frontier.next_entry(odb).await? {
            Some(item) => entries.push(item),
            None => {
                return Ok(Page {
                    entries,
                    next_after: None,
                });
            }
        }
    }
    let more = frontier.next_entry(odb).await?.is_some();
    let next_after = if more {
        entries.last().map(|(k, _)| k.clone())
    } else {
        None
    };
    Ok(Page {
        entries,
        next_after,
    })
}
