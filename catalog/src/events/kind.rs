//! What an event says happened: the operation types, spelled as the Iceberg REST events
//! proposal spells those it has (`create-table`, ...), and Pangolin's own for refs and merges.

use std::fmt;

use pangolin_refs::RefKind;
use pangolin_store::Content;

/// An event's operation type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    CreateNamespace,
    UpdateNamespaceProperties,
    DropNamespace,
    CreateTable,
    UpdateTable,
    DropTable,
    RenameTable,
    CreateView,
    UpdateView,
    DropView,
    RenameView,
    CreateAsset,
    UpdateAsset,
    DropAsset,
    RenameAsset,
    CreateBranch,
    MoveBranch,
    DeleteBranch,
    CreateTag,
    MoveTag,
    DeleteTag,
    Merge,
}

/// What happened to one key's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryOp {
    Create,
    Update,
    Drop,
    Rename,
}

/// What happened to a ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RefOp {
    Create,
    Move,
    Delete,
}

impl EventKind {
    pub const ALL: [EventKind; 22] = [
        Self::CreateNamespace,
        Self::UpdateNamespaceProperties,
        Self::DropNamespace,
        Self::CreateTable,
        Self::UpdateTable,
        Self::DropTable,
        Self::RenameTable,
        Self::CreateView,
        Self::UpdateView,
        Self::DropView,
        Self::RenameView,
        Self::CreateAsset,
        Self::UpdateAsset,
        Self::DropAsset,
        Self::RenameAsset,
        Self::CreateBranch,
        Self::MoveBranch,
        Self::DeleteBranch,
        Self::CreateTag,
        Self::MoveTag,
        Self::DeleteTag,
        Self::Merge,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::CreateNamespace => "create-namespace",
            Self::UpdateNamespaceProperties => "update-namespace-properties",
            Self::DropNamespace => "drop-namespace",
            Self::CreateTable => "create-table",
            Self::UpdateTable => "update-table",
            Self::DropTable => "drop-table",
            Self::RenameTable => "rename-table",
            Self::CreateView => "create-view",
            Self::UpdateView => "update-view",
            Self::DropView => "drop-view",
            Self::RenameView => "rename-view",
            Self::CreateAsset => "create-asset",
            Self::UpdateAsset => "update-asset",
            Self::DropAsset => "drop-asset",
            Self::RenameAsset => "rename-asset",
            Self::CreateBranch => "create-branch",
            Self::MoveBranch => "move-branch",
            Self::DeleteBranch => "delete-branch",
            Self::CreateTag => "create-tag",
            Self::MoveTag => "move-tag",
            Self::DeleteTag => "delete-tag",
            Self::Merge => "merge",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// Whether the event is about a key of the catalog (not a ref or a merge).
    pub fn is_content(self) -> bool {
        !matches!(
            self,
            Self::CreateBranch
                | Self::MoveBranch
                | Self::DeleteBranch
                | Self::CreateTag
                | Self::MoveTag
                | Self::DeleteTag
                | Self::Merge
        )
    }

    /// The kind of a change to an entry holding `content`. Namespaces are never renamed:
    /// moving one is dropping it and creating another.
    pub(crate) fn of_entry(content: &Content, op: EntryOp) -> Self {
        use EntryOp::*;
        match (content, op) {
            (Content::Namespace { .. }, Create) => Self::CreateNamespace,
            (Content::Namespace { .. }, Update | Rename) => Self::UpdateNamespaceProperties,
            (Content::Namespace { .. }, Drop) => Self::DropNamespace,
            (Content::IcebergTable { .. }, Create) => Self::CreateTable,
            (Content::IcebergTable { .. }, Update) => Self::UpdateTable,
            (Content::IcebergTable { .. }, Drop) => Self::DropTable,
            (Content::IcebergTable { .. }, Rename) => Self::RenameTable,
            (Content::IcebergView { .. }, Create) => Self::CreateView,
            (Content::IcebergView { .. }, Update) => Self::UpdateView,
            (Content::IcebergView { .. }, Drop) => Self::DropView,
            (Content::IcebergView { .. }, Rename) => Self::RenameView,
            (Content::Generic { .. }, Create) => Self::CreateAsset,
            (Content::Generic { .. }, Update) => Self::UpdateAsset,
            (Content::Generic { .. }, Drop) => Self::DropAsset,
            (Content::Generic { .. }, Rename) => Self::RenameAsset,
        }
    }

    pub(crate) fn of_ref(kind: RefKind, op: RefOp) -> Self {
        match (kind, op) {
            (RefKind::Branch, RefOp::Create) => Self::CreateBranch,
            (RefKind::Branch, RefOp::Move) => Self::MoveBranch,
            (RefKind::Branch, RefOp::Delete) => Self::DeleteBranch,
            (RefKind::Tag, RefOp::Create) => Self::CreateTag,
            (RefKind::Tag, RefOp::Move) => Self::MoveTag,
            (RefKind::Tag, RefOp::Delete) => Self::DeleteTag,
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_from_its_name_and_names_are_distinct() {
        let mut names = std::collections::BTreeSet::new();
        for kind in EventKind::ALL {
            assert_eq!(EventKind::parse(kind.as_str()), Some(kind));
            assert!(names.insert(kind.as_str()));
        }
        assert_eq!(EventKind::parse("Create-Table"), None);
        assert_eq!(EventKind::parse(""), None);
    }
}
