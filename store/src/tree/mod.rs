//! The catalog tree: a persistent ordered map from [`ContentKey`] to [`Entry`], stored as a
//! Merkle tree of immutable nodes.
//!
//! It is a B-tree whose node boundaries are decided by a hash of each key (a prolly tree), so:
//! the same entries always give the same root id, whatever edits produced them; lookups and
//! edits touch O(log n) nodes; ranges list in order; and a diff skips every subtree whose id is
//! equal on both sides.
//!
//! The algorithms are functions over an [`Odb`] and a root id: [`get`], [`edit`], [`list`],
//! [`diff`] and [`build`]; a [`Walk`] lists a range while stepping over chosen subtrees.

mod build;
mod diff;
mod edit;
mod frontier;
mod get;
mod list;
mod node;
mod range;
mod walk;

pub use build::{BuildError, build};
pub use diff::{Change, DiffPage, diff};
pub use edit::{EditError, EditOutcome, edit};
pub use get::get;
pub use list::{Page, list};
pub use node::{Child, Node, NodeView};
pub use range::{KeyRange, RangeEnd, RangeStart};
pub use walk::Walk;

use crate::backend::BackendError;
use crate::id::ObjectId;
use crate::object::Object;
use crate::odb::Odb;

/// Writes the empty tree and returns its root id (the same id in every repository).
pub async fn empty(odb: &Odb) -> Result<ObjectId, BackendError> {
    let ids = odb.write(vec![Object::Tree(Node::empty().into())]).await?;
    Ok(ids[0])
}

/// The root id of the empty tree, without writing it.
pub fn empty_id() -> ObjectId {
    Object::Tree(Node::empty().into()).encode().id
}
