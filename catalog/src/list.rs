//! Listing what sits directly under a namespace.

use pangolin_store::tree::{self, KeyRange, Walk};
use pangolin_store::{Content, ContentKey, ContentKind, Entry, ObjectId, Odb, ReadError};

use crate::address::RefSpec;
use crate::catalog::Catalog;
use crate::namespace::{ReadAtError, namespace_at};

impl Catalog {
    /// The entries of `kind` directly under `parent` (at the top level when `None`), in key
    /// order, at most `limit`, after `after`; and the key to continue after when more follow.
    /// The parent must be a namespace.
    pub async fn list_children(
        &self,
        at: &RefSpec,
        parent: Option<&ContentKey>,
        kind: ContentKind,
        after: Option<&ContentKey>,
        limit: usize,
    ) -> Result<(Vec<(ContentKey, Entry)>, Option<ContentKey>), ReadAtError> {
        let tree = self.tree_at(at).await?;
        if let Some(parent) = parent {
            namespace_at(self.odb(), &tree, parent).await?;
        }
        Ok(children(self.odb(), &tree, parent, kind, after, limit).await?)
    }

    /// Everything in the catalog tree at `at` under `prefix` (all when `None`), namespaces and
    /// assets alike, in key order after `after`, at most `limit`; with the commit read and the
    /// key to continue after when more follow.
    pub async fn list_entries(
        &self,
        at: &RefSpec,
        prefix: Option<&ContentKey>,
        after: Option<&ContentKey>,
        limit: usize,
    ) -> Result<(ObjectId, Vec<(ContentKey, Entry)>, Option<ContentKey>), ReadAtError> {
        let commit = self.resolve(at).await?.commit;
        let tree = self.odb().commit(&commit).await?.tree;
        let mut range = match prefix {
            Some(p) => KeyRange::prefix(p.clone()),
            None => KeyRange::all(),
        };
        if let Some(after) = after {
            range = range.after(after);
        }
        let page = tree::list(self.odb(), &tree, &range, limit).await?;
        Ok((commit, page.entries, page.next_after))
    }
}

/// The entries of `kind` directly under `parent` (at the top level when `None`) in the tree at
/// `root`, in key order, at most `limit`, after `after`; and the key to continue after when
/// more follow. Does not check that `parent` exists.
///
/// Costs O(children × tree height) node reads, not O(entries under `parent`): the walk steps
/// over the subtree of every child namespace, and of whatever lies under a child, with one
/// descent each instead of reading the entries below.
pub async fn children(
    odb: &Odb,
    root: &ObjectId,
    parent: Option<&ContentKey>,
    kind: ContentKind,
    after: Option<&ContentKey>,
    limit: usize,
) -> Result<(Vec<(ContentKey, Entry)>, Option<ContentKey>), ReadError> {
    let depth = parent.map_or(1, |p| p.len() + 1);
    let mut range = match parent {
        Some(p) => KeyRange::prefix(p.clone()),
        None => KeyRange::all(),
    };
    if let Some(after) = after {
        range = range.after(after);
    }
    let mut walk = Walk::new(odb, root, range).await?;
    let mut found: Vec<(ContentKey, Entry)> = Vec::new();
    while let Some((key, entry)) = walk.next_entry(odb).await? {
        if key.len() > depth {
            // Under a child (after a token inside it, or below an entry that is not a
            // namespace): nothing further inside that child is listed here.
            if let Some(child) = key.truncated(depth) {
                walk.skip_prefix(&child);
            }
            continue;
        }
        if key.len() < depth {
            // The parent itself.
            continue;
        }
        let wanted = entry.content.kind() == kind;
        if wanted && found.len() == limit {
            let next = found.last().map(|(k, _)| k.clone());
            return Ok((found, next));
        }
        if matches!(entry.content, Content::Namespace { .. }) {
            walk.skip_prefix(&key);
        }
        if wanted {
            found.push((key, entry));
        }
    }
    Ok((found, None))
}
