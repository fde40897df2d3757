//! The JSON shapes of the management API, shared by its routes and described in its OpenAPI.

use std::collections::BTreeMap;

use pangolin_catalog::EntryChange;
use pangolin_merge::{Conflict, KeyChange};
use pangolin_store::{Commit, Content, ContentKey, Entry, ObjectId};
use serde::Serialize;
use utoipa::ToSchema;

/// A key as its levels: `["sales", "orders"]`.
pub(crate) fn levels(key: &ContentKey) -> Vec<String> {
    key.elements().map(str::to_owned).collect()
}

/// One entry of the catalog tree.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct EntryView {
    /// `namespace`, `iceberg-table`, `iceberg-view` or `generic`.
    #[serde(rename = "type")]
    pub kind: String,
    pub content_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_location: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

impl From<&Entry> for EntryView {
    fn from(entry: &Entry) -> Self {
        let mut view = Self {
            kind: entry.content.kind().to_string(),
            content_id: entry.content_id.to_string(),
            properties: None,
            metadata_location: None,
            snapshot_id: None,
            location: None,
        };
        match &entry.content {
            Content::Namespace { properties } => view.properties = Some(properties.clone()),
            Content::IcebergTable {
                metadata_location,
                snapshot_id,
                ..
            } => {
                view.metadata_location = Some(metadata_location.clone());
                view.snapshot_id = *snapshot_id;
            }
            Content::IcebergView {
                metadata_location, ..
            } => view.metadata_location = Some(metadata_location.clone()),
            Content::Generic { location, .. } => view.location = Some(location.clone()),
        }
        view
    }
}

fn entry(entry: Option<&Entry>) -> Option<EntryView> {
    entry.map(EntryView::from)
}

/// A key's change.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChangeView {
    pub key: Vec<String>,
    /// `added`, `modified` or `removed`.
    pub kind: String,
    pub before: Option<EntryView>,
    pub after: Option<EntryView>,
    /// For Iceberg tables, what changed in the metadata, in words.
    pub summary: Vec<String>,
}

impl From<&EntryChange> for ChangeView {
    fn from(change: &EntryChange) -> Self {
        Self {
            key: levels(&change.key),
            kind: change.kind().to_owned(),
            before: entry(change.before.as_ref()),
            after: entry(change.after.as_ref()),
            summary: change.summary.clone(),
        }
    }
}

impl From<&KeyChange> for ChangeView {
    fn from(change: &KeyChange) -> Self {
        Self {
            key: levels(&change.key),
            kind: match (&change.before, &change.after) {
                (None, _) => "added",
                (_, None) => "removed",
                _ => "modified",
            }
            .to_owned(),
            before: entry(change.before.as_ref()),
            after: entry(change.after.as_ref()),
            summary: Vec::new(),
        }
    }
}

/// A key both sides changed differently.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConflictView {
    pub key: Vec<String>,
    /// `both-modified`, `modified-deleted`, `deleted-modified`, `both-added`,
    /// `identity-changed`, `namespace-deleted` or `table-changes-overlap` (a table changed
    /// on both sides in ways a table merge cannot combine; `reason` says which change).
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub base: Option<EntryView>,
    pub ours: Option<EntryView>,
    pub theirs: Option<EntryView>,
}

impl From<&Conflict> for ConflictView {
    fn from(conflict: &Conflict) -> Self {
        Self {
            key: levels(&conflict.key),
            kind: conflict.kind.as_str().to_owned(),
            reason: conflict.detail.clone(),
            base: entry(conflict.base.as_ref()),
            ours: entry(conflict.ours.as_ref()),
            theirs: entry(conflict.theirs.as_ref()),
        }
    }
}

/// A commit.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommitView {
    pub hash: String,
    pub parents: Vec<String>,
    pub author: String,
    pub committer: String,
    /// RFC 3339, UTC.
    pub time: String,
    pub message: String,
    pub properties: BTreeMap<String, String>,
}

impl CommitView {
    pub fn new(id: &ObjectId, commit: &Commit) -> Self {
        Self {
            hash: id.to_hex(),
            parents: commit.parents.iter().map(ObjectId::to_hex).collect(),
            author: commit.author.clone(),
            committer: commit.committer.clone(),
            time: pangolin_catalog::rfc3339(commit.time),
            message: commit.message.clone(),
            properties: commit.properties.clone(),
        }
    }
}
