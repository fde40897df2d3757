//! The per-key rule of a three-way merge.

use pangolin_store::Entry;

/// What a three-way merge does with one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Keep what the target ("ours") has: it changed alone, both made the same change, or
    /// neither changed.
    Ours,
    /// Take the source's ("theirs") value: only the source changed the key.
    Theirs,
    /// Both changed the key in different ways.
    Conflict(ConflictKind),
}

/// How the two sides' changes to one key disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConflictKind {
    /// Both sides changed the same content differently.
    BothModified,
    /// Ours changed it, theirs deleted it.
    ModifiedDeleted,
    /// Ours deleted it, theirs changed it.
    DeletedModified,
    /// Both sides created the key with different entries.
    BothAdded,
    /// The two sides hold different content under the name: at least one side dropped it and
    /// created something new there (its content id changed), so the changes are not to the
    /// same thing even though the names match.
    IdentityChanged,
    /// One side deleted a namespace while the other changed entries under it.
    NamespaceDeleted,
    /// Both sides changed the same Iceberg table in ways that do not commute (found by a
    /// caller that reads the tables' metadata; the conflict's detail says which change).
    TableChangesOverlap,
}

impl ConflictKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BothModified => "both-modified",
            Self::ModifiedDeleted => "modified-deleted",
            Self::DeletedModified => "deleted-modified",
            Self::BothAdded => "both-added",
            Self::IdentityChanged => "identity-changed",
            Self::NamespaceDeleted => "namespace-deleted",
            Self::TableChangesOverlap => "table-changes-overlap",
        }
    }
}

/// Decides one key from its entry in the merge base, ours and theirs. Entries compare whole,
/// content id included.
pub fn decide(base: Option<&Entry>, ours: Option<&Entry>, theirs: Option<&Entry>) -> Decision {
    if ours == theirs || theirs == base {
        return Decision::Ours;
    }
    if ours == base {
        return Decision::Theirs;
    }
    Decision::Conflict(match (base, ours, theirs) {
        (None, _, _) => ConflictKind::BothAdded,
        (Some(_), Some(_), None) => ConflictKind::ModifiedDeleted,
        (Some(_), None, Some(_)) => ConflictKind::DeletedModified,
        (Some(_), Some(o), Some(t)) if o.content_id != t.content_id => {
            ConflictKind::IdentityChanged
        }
        (Some(_), Some(_), Some(_)) => ConflictKind::BothModified,
        (Some(_), None, None) => unreachable!("ours == theirs was handled first"),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use pangolin_store::{Content, ContentId, Entry};
    use uuid::Uuid;

    use super::*;

    /// `a1`, `a2`, `a3`: one table (content id 1) in three versions; `b1`: content id 2 with
    /// the same data as `a1`, i.e. `a1` dropped and recreated; `-`: absent.
    fn value(name: &str) -> Option<Entry> {
        let (id, version) = match name {
            "-" => return None,
            "a1" => (1, 1),
            "a2" => (1, 2),
            "a3" => (1, 3),
            "b1" => (2, 1),
            other => panic!("unknown value {other}"),
        };
        Some(Entry {
            content_id: ContentId::from_uuid(Uuid::from_u128(id)),
            content: Content::Generic {
                kind: "table".into(),
                location: format!("s3://w/t/v{version}"),
                properties: BTreeMap::new(),
            },
        })
    }

    /// Every (base, ours, theirs) combination over the values above: 2 × 5 × 5 rows.
    const TABLE: &[(&str, &str, &str, &str)] = &[
        // base absent
        ("-", "-", "-", "ours"),
        ("-", "-", "a1", "theirs"),
        ("-", "-", "a2", "theirs"),
        ("-", "-", "a3", "theirs"),
        ("-", "-", "b1", "theirs"),
        ("-", "a1", "-", "ours"),
        ("-", "a1", "a1", "ours"),
        ("-", "a1", "a2", "both-added"),
        ("-", "a1", "a3", "both-added"),
        ("-", "a1", "b1", "both-added"),
        ("-", "a2", "-", "ours"),
        ("-", "a2", "a1", "both-added"),
        ("-", "a2", "a2", "ours"),
        ("-", "a2", "a3", "both-added"),
        ("-", "a2", "b1", "both-added"),
        ("-", "a3", "-", "ours"),
        ("-", "a3", "a1", "both-added"),
        ("-", "a3", "a2", "both-added"),
        ("-", "a3", "a3", "ours"),
        ("-", "a3", "b1", "both-added"),
        ("-", "b1", "-", "ours"),
        ("-", "b1", "a1", "both-added"),
        ("-", "b1", "a2", "both-added"),
        ("-", "b1", "a3", "both-added"),
        ("-", "b1", "b1", "ours"),
        // base a1
        ("a1", "-", "-", "ours"),
        ("a1", "-", "a1", "ours"),
        ("a1", "-", "a2", "deleted-modified"),
        ("a1", "-", "a3", "deleted-modified"),
        ("a1", "-", "b1", "deleted-modified"),
        ("a1", "a1", "-", "theirs"),
        ("a1", "a1", "a1", "ours"),
        ("a1", "a1", "a2", "theirs"),
        ("a1", "a1", "a3", "theirs"),
        ("a1", "a1", "b1", "theirs"),
        ("a1", "a2", "-", "modified-deleted"),
        ("a1", "a2", "a1", "ours"),
        ("a1", "a2", "a2", "ours"),
        ("a1", "a2", "a3", "both-modified"),
        ("a1", "a2", "b1", "identity-changed"),
        ("a1", "a3", "-", "modified-deleted"),
        ("a1", "a3", "a1", "ours"),
        ("a1", "a3", "a2", "both-modified"),
        ("a1", "a3", "a3", "ours"),
        ("a1", "a3", "b1", "identity-changed"),
        ("a1", "b1", "-", "modified-deleted"),
        ("a1", "b1", "a1", "ours"),
        ("a1", "b1", "a2", "identity-changed"),
        ("a1", "b1", "a3", "identity-changed"),
        ("a1", "b1", "b1", "ours"),
    ];

    #[test]
    fn truth_table() {
        assert_eq!(TABLE.len(), 50);
        for (base, ours, theirs, expected) in TABLE {
            let got = decide(
                value(base).as_ref(),
                value(ours).as_ref(),
                value(theirs).as_ref(),
            );
            let got = match got {
                Decision::Ours => "ours",
                Decision::Theirs => "theirs",
                Decision::Conflict(kind) => kind.as_str(),
            };
            assert_eq!(got, *expected, "base={base} ours={ours} theirs={theirs}");
        }
    }
}
