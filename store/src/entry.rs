//! Entries: what the tree maps each content key to.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Identity of one piece of content. Survives renames; a table that is dropped and created again
/// under the same name gets a new one, which is how a merge tells "changed" from "replaced".
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ContentId(Uuid);

impl ContentId {
    pub fn new_random() -> Self {
        Self(Uuid::new_v4())
    }

    pub const fn from_uuid(uuid: Uuid) -> Self {
        Self(uuid)
    }

    pub fn as_uuid(&self) -> &Uuid {
        &self.0
    }
}

impl fmt::Debug for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentId({})", self.0)
    }
}

impl fmt::Display for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// One value in the catalog tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub content_id: ContentId,
    pub content: Content,
}

impl Entry {
    pub fn new(content: Content) -> Self {
        Self {
            content_id: ContentId::new_random(),
            content,
        }
    }
}

/// The kinds of content a catalog holds.
///
/// The variant order is part of the canonical encoding: add new kinds at the end only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Content {
    Namespace {
        properties: BTreeMap<String, String>,
    },
    IcebergTable {
        metadata_location: String,
        /// Current snapshot; `None` for a table without data.
        snapshot_id: Option<i64>,
        schema_id: i32,
        spec_id: i32,
        sort_order_id: i32,
    },
    IcebergView {
        metadata_location: String,
        version_id: i32,
    },
    /// Any other asset: Delta or Hudi tables, file sets, ML models.
    Generic {
        kind: String,
        location: String,
        properties: BTreeMap<String, String>,
    },
}

impl Content {
    pub fn kind(&self) -> ContentKind {
        match self {
            Self::Namespace { .. } => ContentKind::Namespace,
            Self::IcebergTable { .. } => ContentKind::IcebergTable,
            Self::IcebergView { .. } => ContentKind::IcebergView,
            Self::Generic { .. } => ContentKind::Generic,
        }
    }
}

/// The kind of a [`Content`], without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ContentKind {
    Namespace,
    IcebergTable,
    IcebergView,
    Generic,
}

impl fmt::Display for ContentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Namespace => "namespace",
            Self::IcebergTable => "iceberg-table",
            Self::IcebergView => "iceberg-view",
            Self::Generic => "generic",
        })
    }
}
