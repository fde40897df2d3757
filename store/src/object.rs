//! Objects as stored (id, kind, bytes) and as used (decoded commit or tree node).

use std::sync::Arc;

use bytes::Bytes;

use crate::codec::{self, DecodeError};
use crate::commit::Commit;
use crate::id::{ObjectId, ObjectKind};
use crate::tree::Node;

/// An object as a backend stores it: opaque bytes keyed by id. Backends never parse these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawObject {
    pub id: ObjectId,
    pub kind: ObjectKind,
    pub data: Bytes,
}

/// A decoded object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    Commit(Arc<Commit>),
    Tree(Arc<Node>),
}

/// Why a stored object was not accepted when read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorruptObject {
    #[error("object {id} hashes to {actual}: its bytes were altered")]
    HashMismatch { id: ObjectId, actual: ObjectId },
    #[error("object {id} could not be decoded as a {kind}: {source}")]
    Undecodable {
        id: ObjectId,
        kind: ObjectKind,
        #[source]
        source: DecodeError,
    },
}

impl Object {
    pub fn kind(&self) -> ObjectKind {
        match self {
            Self::Commit(_) => ObjectKind::Commit,
            Self::Tree(_) => ObjectKind::Tree,
        }
    }

    /// Canonical bytes and id.
    pub fn encode(&self) -> RawObject {
        let data = match self {
            Self::Commit(commit) => codec::encode(commit.as_ref()),
            Self::Tree(node) => codec::encode(node.as_ref()),
        };
        let kind = self.kind();
        RawObject {
            id: ObjectId::compute(kind, &data),
            kind,
            data: data.into(),
        }
    }

    /// Checks the bytes against the id, then decodes them.
    pub fn decode(raw: &RawObject) -> Result<Self, CorruptObject> {
        let actual = ObjectId::compute(raw.kind, &raw.data);
        if actual != raw.id {
            return Err(CorruptObject::HashMismatch { id: raw.id, actual });
        }
        let undecodable = |source| CorruptObject::Undecodable {
            id: raw.id,
            kind: raw.kind,
            source,
        };
        Ok(match raw.kind {
            ObjectKind::Commit => {
                Self::Commit(Arc::new(codec::decode(&raw.data).map_err(undecodable)?))
            }
            ObjectKind::Tree => {
                Self::Tree(Arc::new(codec::decode(&raw.data).map_err(undecodable)?))
            }
        })
    }
}
