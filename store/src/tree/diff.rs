//! Differences between two trees, skipping every subtree the two share.

use std::cmp::Ordering;

use crate::entry::Entry;
use crate::id::ObjectId;
use crate::key::ContentKey;
use crate::odb::{Odb, ReadError};
use crate::tree::KeyRange;
use crate::tree::frontier::{Front, Frontier};

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
#[tracing::instrument(level = "debug", skip_all, fields(repo = %odb.repo(), a = %a.short(12), b = %b.short(12)))]
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

/// What to do with the items at the two fronts.
enum Step {
    SkipShared,
    ExpandLeft,
    ExpandRight,
    ExpandBoth,
    /// Consume the front entry of the left side, the right side, or both; report the change
    /// if there is one.
    Take {
        left: bool,
        right: bool,
        change: Option<Change>,
    },
    Done,
}

async fn next_change(
    odb: &Odb,
    left: &mut Frontier,
    right: &mut Frontier,
) -> Result<Option<Change>, ReadError> {
    loop {
        match decide(left.peek(), right.peek()) {
            Step::Done => return Ok(None),
            Step::SkipShared => {
                left.advance();
                right.advance();
            }
            Step::ExpandLeft => left.expand(odb).await?,
            Step::ExpandRight => right.expand(odb).await?,
            Step::ExpandBoth => {
                left.expand(odb).await?;
                right.expand(odb).await?;
            }
            Step::Take {
                left: l,
                right: r,
                change,
            } => {
                if l {
                    left.advance();
                }
                if r {
                    right.advance();
                }
                if change.is_some() {
                    return Ok(change);
                }
            }
        }
    }
}

/// Subtrees are expanded until both fronts are entries, except that equal subtrees are
/// skipped whole; of two entries the smaller key is consumed first.
fn decide(left: Option<Front<'_>>, right: Option<Front<'_>>) -> Step {
    use Front::{Entry as E, Subtree as S};
    match (left, right) {
        (None, None) => Step::Done,
        (Some(S { id: x, level: lx }), Some(S { id: y, level: ly })) => {
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
        (Some(S { .. }), _) => Step::ExpandLeft,
        (_, Some(S { .. })) => Step::ExpandRight,
        (Some(E(key, before)), None) => removed(key, before),
        (None, Some(E(key, after))) => added(key, after),
        (Some(E(lk, before)), Some(E(rk, after))) => match lk.cmp(rk) {
            Ordering::Less => removed(lk, before),
            Ordering::Greater => added(rk, after),
            Ordering::Equal => Step::Take {
                left: true,
                right: true,
                change: (before != after).then(|| Change {
                    key: lk.clone(),
                    before: Some(before.clone()),
                    after: Some(after.clone()),
                }),
            },
        },
    }
}

fn removed(key: &ContentKey, before: &Entry) -> Step {
    let change = Change {
        key: key.clone(),
        before: Some(before.clone()),
        after: None,
    };
    Step::Take {
        left: true,
        right: false,
        change: Some(change),
    }
}

fn added(key: &ContentKey, after: &Entry) -> Step {
    let change = Change {
        key: key.clone(),
        before: None,
        after: Some(after.clone()),
    };
    Step::Take {
        left: false,
        right: true,
        change: Some(change),
    }
}
