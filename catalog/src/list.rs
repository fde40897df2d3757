//! Listing what sits directly under a namespace.

use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{ContentKey, ContentKind, Entry};

use pangolin_store::ObjectId;

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
        let depth = parent.map_or(1, |p| p.len() + 1);
        let mut range = match parent {
            Some(p) => KeyRange::prefix(p.clone()),
            None => KeyRange::all(),
        };
        if let Some(after) = after {
            range = range.after(after);
        }
        // Scans the subtree in pages; deeper keys and other kinds are skipped.
        let mut found = Vec::new();
        loop {
            let page = tree::list(self.odb(), &tree, &range, 1_000).await?;
            for (key, entry) in page.entries {
                if key.len() == depth && entry.content.kind() == kind {
                    if found.len() == limit {
                        let next = found.last().map(|(k, _): &(ContentKey, Entry)| k.clone());
                        return Ok((found, next));
                    }
                    found.push((key, entry));
                }
            }
            match page.next_after {
                Some(next) => range = range.after(&next),
                None => return Ok((found, None)),
            }
        }
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
