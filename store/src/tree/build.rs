//! Building a tree from entries already in key order, in one pass.

use crate::backend::BackendError;
use crate::entry::Entry;
use crate::id::ObjectId;
use crate::key::ContentKey;
use crate::object::{Object, RawObject};
use crate::odb::Odb;
use crate::tree::node::{LevelItem, is_boundary};
use crate::tree::{Child, Node};

/// Nodes buffered before one backend write.
const WRITE_BATCH: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(
        "entries must be in strictly increasing key order: `{previous}` is followed by `{next}`"
    )]
    Unsorted {
        previous: ContentKey,
        next: ContentKey,
    },
    #[error("writing tree nodes: {0}")]
    Write(#[from] BackendError),
}

/// Builds the tree holding `entries` (strictly increasing keys) and returns its root id.
///
/// Gives exactly the tree that inserting the same entries by [`edit`](super::edit) in any
/// order gives; it is just faster for bulk loads.
#[tracing::instrument(level = "debug", skip_all, fields(repo = %odb.repo()))]
pub async fn build(
    odb: &Odb,
    entries: impl IntoIterator<Item = (ContentKey, Entry)>,
) -> Result<ObjectId, BuildError> {
    let mut builder = Builder {
        odb,
        batch: Vec::new(),
    };
    let mut leaves: Vec<Child> = Vec::new();
    let mut pending: Vec<(ContentKey, Entry)> = Vec::new();
    let mut previous: Option<ContentKey> = None;
    for (key, entry) in entries {
        if let Some(previous) = previous.as_ref().filter(|p| *p >= &key) {
            return Err(BuildError::Unsorted {
                previous: previous.clone(),
                next: key,
            });
        }
        previous = Some(key.clone());
        let ends_chunk = is_boundary(&key, 0);
        pending.push((key, entry));
        if ends_chunk {
            leaves.push(builder.node(0, std::mem::take(&mut pending)).await?);
        }
    }
    if !pending.is_empty() {
        leaves.push(builder.node(0, pending).await?);
    }
    let mut level_items = leaves;
    let mut level = 0;
    while level_items.len() > 1 {
        level += 1;
        let mut next = Vec::new();
        let mut pending = Vec::new();
        for child in level_items {
            let ends_chunk = is_boundary(&child.last_key, level);
            pending.push(child);
            if ends_chunk {
                next.push(builder.node(level, std::mem::take(&mut pending)).await?);
            }
        }
        if !pending.is_empty() {
            next.push(builder.node(level, pending).await?);
        }
        level_items = next;
    }
    let root = match level_items.pop() {
        Some(child) => child.id,
        None => builder.push(Node::empty()),
    };
    builder.flush().await?;
    Ok(root)
}

struct Builder<'a> {
    odb: &'a Odb,
    batch: Vec<(RawObject, Object)>,
}

impl Builder<'_> {
    async fn node<T: LevelItem>(
        &mut self,
        level: u8,
        items: Vec<T>,
    ) -> Result<Child, BackendError> {
        let last_key = items
            .last()
            .map(|i| i.key().clone())
            .expect("chunks are never empty");
        let count = items.iter().map(LevelItem::count).sum();
        let id = self.push(T::into_node(level, items));
        if self.batch.len() >= WRITE_BATCH {
            self.flush().await?;
        }
        Ok(Child {
            last_key,
            id,
            count,
        })
    }

    fn push(&mut self, node: Node) -> ObjectId {
        let object = Object::Tree(node.into());
        let raw = object.encode();
        let id = raw.id;
        self.batch.push((raw, object));
        id
    }

    async fn flush(&mut self) -> Result<(), BackendError> {
        self.odb
            .write_encoded(std::mem::take(&mut self.batch))
            .await
    }
}
