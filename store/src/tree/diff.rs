//! Differences between two trees, skipping every subtree the two share.

use crate::entry::Entry;
use crate::id::ObjectId;
use crate::key::ContentKey;
use crate::odb::{Odb, ReadError};
use crate::tree::KeyRange;
use crate::tree::frontier::{Frontier, Item};

/// One key whose entry differs between the two trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub key: ContentKey,
    /// The entry in the first tree (`None`: the key was added).
    pub before: Option<Entry>,
    /// The entry in the second tree (`None`: the key was removed).
    pub after: Option<Entry>,
}

/// One page of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffPage {
    pub changes: Vec<Change>,
    /// Set when more changes follow: diff again with `range.after(&next_after)`.
    pub next_after: Option<ContentKey>,
    /// Tree nodes read to produce this page (both sides), for cost accounting.
    pub nodes_read: u64,
}

/// Up to `limit` changes from tree `a` to tree `b` within `range`, in key order.
///
/// Because equal key sets chunk into equal nodes, unchanged regions of the two trees are equal
/// subtrees, and those are dropped by id without being read: the cost follows the number of
/// differences (O(d log n) nodes), not the size of the trees.
pub async fn diff(
    odb: &Odb,
    a: &ObjectId,
    b: &ObjectId,
    range: &KeyRange,
    limit: usize,
) -> Result<DiffPage, ReadError> {
    if a == b {
        return Ok(DiffPage {
            changes: Vec::new(),
            next_after: None,
            nodes_read: 0,
        });
    }
    let level_a = odb.node(a).await?.level();
    let level_b = odb.node(b).await?.level();
    let mut left = Frontier::new(*a, level_a, range.clone());
    let mut right = Frontier::new(*b, level_b, range.clone());
    let mut changes = Vec::new();
    let mut more = false;
    while let Some(change) = next_change(odb, &mut left, &mut right).await? {
        if changes.len() == limit {
            more = true;
            break;
        }
        changes.push(change);
    }
    let next_after = if more {
        changes.last().map(|c| c.key.clone())
    } else {
        None
    };
    Ok(DiffPage {
        changes,
        next_after,
        nodes_read: left.nodes_read + right.nodes_read,
    })
}

/// Which frontier to expand, or what to do with two entries at the front.
enum Step {
    SkipShared,
    ExpandLeft,
    ExpandRight,
    ExpandBoth,
    Compare,
    Done,
}

async fn next_change(
    odb: &Odb,
    left: &mut Frontier,
    right: &mut Frontier,
) -> Result<Option<Change>, ReadError> {
    loop {
        let step = match (left.peek(), right.peek()) {
            (None, None) => Step::Done,
            (Some(Item::Subtree { .. }), None) => Step::ExpandLeft,
            (None, Some(Item::Subtree { .. })) => Step::ExpandRight,
            (
                Some(Item::Subtree {
                    id: x, level: lx, ..
                }),
                Some(Item::Subtree {
                    id: y, level: ly, ..
                }),
            ) => {
                if x == y {
                    Step::SkipShared
                } else if lx > ly {
                    Step::ExpandLeft
                } else if ly > lx {
                    Step::ExpandRight
                } else {
                    Step::ExpandBoth
                }
            }
            (Some(Item::Subtree { .. }), Some(Item::Entry(..))) => Step::ExpandLeft,
            (Some(Item::Entry(..)), Some(Item::Subtree { .. })) => Step::ExpandRight,
            (Some(Item::Entry(..)) | None, Some(Item::Entry(..)) | None) => Step::Compare,
        };
        match step {
            Step::Done => return Ok(None),
            Step::SkipShared => {
                left.pop();
                right.pop();
            }
            Step::ExpandLeft => left.expand(odb).await?,
            Step::ExpandRight => right.expand(odb).await?,
            Step::ExpandBoth => {
                left.expand(odb).await?;
                right.expand(odb).await?;
            }
            Step::Compare => {
                if let Some(change) = compare_fronts(left, right) {
                    return Ok(Some(change));
                }
            }
        }
    }
}

/// Both fronts are entries (or one side is exhausted): consume the smaller key.
fn compare_fronts(left: &mut Frontier, right: &mut Frontier) -> Option<Change> {
    let order = match (left.peek(), right.peek()) {
        (Some(Item::Entry(l, _)), Some(Item::Entry(r, _))) => l.cmp(r),
        (Some(_), None) => std::cmp::Ordering::Less,
        _ => std::cmp::Ordering::Greater,
    };
    let take = |f: &mut Frontier| match f.pop() {
        Some(Item::Entry(key, entry)) => Some((key, entry)),
        _ => None,
    };
    match order {
        std::cmp::Ordering::Less => {
            let (key, before) = take(left)?;
            Some(Change {
                key,
                before: Some(before),
                after: None,
            })
        }
        std::cmp::Ordering::Greater => {
            let (key, after) = take(right)?;
            Some(Change {
                key,
                before: None,
                after: Some(after),
            })
        }
        std::cmp::Ordering::Equal => {
            let (key, before) = take(left)?;
            let (_, after) = take(right)?;
            (before != after).then_some(Change {
                key,
                before: Some(before),
                after: Some(after),
            })
        }
    }
}
