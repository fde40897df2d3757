//! Three-way merge of catalog trees.
//!
//! Driven by the two diffs from the base (`base → ours`, `base → theirs`), which skip every
//! subtree the trees share: the cost follows the number of changed keys, not the catalog
//! size. The result is `ours` with the source's changes applied as one batched edit.

use std::collections::BTreeMap;

use pangolin_store::tree::{self, Change, EditError, KeyRange};
use pangolin_store::{Content, ContentKey, Entry, ObjectId, Odb, ReadError};

use crate::decision::{ConflictKind, Decision, decide};

/// How to settle one conflicting key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Keep the target's value.
    Ours,
    /// Take the source's value.
    Theirs,
    /// Put this entry there (`None` deletes the key).
    Entry(Option<Entry>),
}

/// What to do with conflicts that have no resolution of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Report them; nothing is written.
    #[default]
    Fail,
    /// Keep the target's value for every conflicting key.
    PreferOurs,
    /// Take the source's value for every conflicting key.
    PreferTheirs,
}

/// A key both sides changed in different ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub key: ContentKey,
    pub kind: ConflictKind,
    pub base: Option<Entry>,
    pub ours: Option<Entry>,
    pub theirs: Option<Entry>,
    /// For [`ConflictKind::NamespaceDeleted`]: the keys the other side changed under the
    /// deleted namespace.
    pub changed_under: Vec<ContentKey>,
    /// Why the conflict stands, when a caller looked closer (for
    /// [`ConflictKind::TableChangesOverlap`]: which change of the table overlaps).
    pub detail: Option<String>,
}

/// Where a change to the target came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeSource {
    /// Only the source changed the key.
    Theirs,
    /// A conflict, settled by a per-key resolution.
    Resolution,
    /// A conflict, settled by the whole-merge strategy.
    Strategy,
}

/// One key the merge changes on the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyChange {
    pub key: ContentKey,
    /// The target's entry before the merge.
    pub before: Option<Entry>,
    /// The target's entry after the merge.
    pub after: Option<Entry>,
    pub source: ChangeSource,
}

/// How a key changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Removed,
}

impl KeyChange {
    pub fn kind(&self) -> ChangeKind {
        match (&self.before, &self.after) {
            (None, _) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Removed,
            (Some(_), Some(_)) => ChangeKind::Modified,
        }
    }
}

/// What a tree merge found and, unless it was a dry run or had unresolved conflicts, wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeMerge {
    /// The merged tree; `None` for a dry run or when conflicts remain.
    pub tree: Option<ObjectId>,
    /// Every key the merge changes (or would change) on the target, in key order.
    pub changes: Vec<KeyChange>,
    /// Conflicts left unresolved, in key order. Non-empty means nothing was written.
    pub conflicts: Vec<Conflict>,
    /// Conflicts settled by a resolution or the strategy, in key order.
    pub resolved: Vec<Conflict>,
}

#[derive(Debug, thiserror::Error)]
pub enum TreeMergeError {
    #[error("resolutions name keys that are not in conflict: {}", show_keys(.0))]
    UnknownResolution(Vec<ContentKey>),
    #[error("reading trees: {0}")]
    Read(#[from] ReadError),
    #[error("writing the merged tree: {0}")]
    Edit(#[from] EditError),
}

pub(crate) fn show_keys(keys: &[ContentKey]) -> String {
    keys.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Options of a tree merge.
#[derive(Debug, Clone, Default)]
pub struct TreeMergeOptions {
    pub resolutions: BTreeMap<ContentKey, Resolution>,
    pub strategy: Strategy,
    /// Compute everything, write nothing.
    pub dry_run: bool,
    /// Accept resolutions for keys that are not in conflict here (a sequence of picks passes
    /// one set of resolutions to every step and checks afterwards that each was used).
    pub partial_resolutions: bool,
}

/// Merges the changes from `base` to `theirs` into `ours` (all tree roots).
#[tracing::instrument(level = "debug", skip_all, fields(repo = %odb.repo()))]
pub async fn trees(
    odb: &Odb,
    base: &ObjectId,
    ours: &ObjectId,
    theirs: &ObjectId,
    options: &TreeMergeOptions,
) -> Result<TreeMerge, TreeMergeError> {
    let all = KeyRange::all();
    let ours_changes = tree::diff(odb, base, ours, &all, usize::MAX).await?.changes;
    let theirs_changes = tree::diff(odb, base, theirs, &all, usize::MAX)
        .await?
        .changes;

    let mut found = join(&ours_changes, &theirs_changes);
    namespace_conflicts(&ours_changes, &theirs_changes, &mut found);

    let mut unknown: Vec<ContentKey> = options
        .resolutions
        .keys()
        .filter(|k| !matches!(found.get(*k), Some(Pending::Conflict(_))))
        .cloned()
        .collect();
    if !unknown.is_empty() && !options.partial_resolutions {
        unknown.sort();
        return Err(TreeMergeError::UnknownResolution(unknown));
    }

    let mut merge = TreeMerge {
        tree: None,
        changes: Vec::new(),
        conflicts: Vec::new(),
        resolved: Vec::new(),
    };
    for (key, pending) in found {
        match pending {
            Pending::Take { before, after } => {
                merge.changes.push(KeyChange {
                    key,
                    before,
                    after,
                    source: ChangeSource::Theirs,
                });
            }
            Pending::Conflict(conflict) => {
                let (settled, source) = match options.resolutions.get(&key) {
                    Some(resolution) => (Some(resolution.clone()), ChangeSource::Resolution),
                    None => match options.strategy {
                        Strategy::Fail => (None, ChangeSource::Strategy),
                        Strategy::PreferOurs => (Some(Resolution::Ours), ChangeSource::Strategy),
                        Strategy::PreferTheirs => {
                            (Some(Resolution::Theirs), ChangeSource::Strategy)
                        }
                    },
                };
                let Some(resolution) = settled else {
                    merge.conflicts.push(conflict);
                    continue;
                };
                let after = match resolution {
                    Resolution::Ours => conflict.ours.clone(),
                    Resolution::Theirs => conflict.theirs.clone(),
                    Resolution::Entry(entry) => entry,
                };
                if after != conflict.ours {
                    merge.changes.push(KeyChange {
                        key,
                        before: conflict.ours.clone(),
                        after,
                        source,
                    });
                }
                merge.resolved.push(conflict);
            }
        }
    }
    if merge.conflicts.is_empty() && !options.dry_run {
        let edits = merge
            .changes
            .iter()
            .map(|c| (c.key.clone(), c.after.clone()))
            .collect();
        merge.tree = Some(tree::edit(odb, ours, edits).await?.root);
    }
    Ok(merge)
}

/// A key's outcome before resolutions.
enum Pending {
    /// Apply the source's change: the target's `before` becomes `after`.
    Take {
        before: Option<Entry>,
        after: Option<Entry>,
    },
    Conflict(Conflict),
}

/// Merge-joins the two sorted change lists and decides every key either side changed.
fn join(ours: &[Change], theirs: &[Change]) -> BTreeMap<ContentKey, Pending> {
    let mut found = BTreeMap::new();
    let (mut o, mut t) = (0, 0);
    while t < theirs.len() {
        let their = &theirs[t];
        match ours.get(o).map(|our| our.key.cmp(&their.key)) {
            Some(std::cmp::Ordering::Less) => o += 1,
            Some(std::cmp::Ordering::Equal) => {
                let our = &ours[o];
                let decision = decide(
                    our.before.as_ref(),
                    our.after.as_ref(),
                    their.after.as_ref(),
                );
                match decision {
                    Decision::Ours => {}
                    Decision::Theirs => {
                        found.insert(their.key.clone(), take(our.after.clone(), their));
                    }
                    Decision::Conflict(kind) => {
                        let conflict = Conflict {
                            key: their.key.clone(),
                            kind,
                            base: their.before.clone(),
                            ours: our.after.clone(),
                            theirs: their.after.clone(),
                            changed_under: Vec::new(),
                            detail: None,
                        };
                        found.insert(their.key.clone(), Pending::Conflict(conflict));
                    }
                }
                o += 1;
                t += 1;
            }
            Some(std::cmp::Ordering::Greater) | None => {
                // Only the source changed this key: the target still has the base value.
                found.insert(their.key.clone(), take(their.before.clone(), their));
                t += 1;
            }
        }
    }
    found
}

fn take(before: Option<Entry>, their: &Change) -> Pending {
    Pending::Take {
        before,
        after: their.after.clone(),
    }
}

/// A namespace one side deleted while the other side changed something under it is a
/// conflict on the namespace, whatever the per-key rule said about the namespace key itself.
fn namespace_conflicts(
    ours: &[Change],
    theirs: &[Change],
    found: &mut BTreeMap<ContentKey, Pending>,
) {
    for (deleting, other, ours_deleted) in [(ours, theirs, true), (theirs, ours, false)] {
        for change in deleting.iter().filter(|c| is_namespace_deletion(c)) {
            let start = other.partition_point(|c| c.key <= change.key);
            let changed_under: Vec<ContentKey> = other[start..]
                .iter()
                .take_while(|c| c.key.starts_with(&change.key))
                // Deleting under it agrees with deleting it, and so does a change the deleting
                // side made too; adding or changing something else does not.
                .filter(|c| c.after.is_some() && value_on(deleting, c) != c.after.as_ref())
                .map(|c| c.key.clone())
                .collect();
            if changed_under.is_empty() {
                continue;
            }
            let other_value = other
                .binary_search_by(|c| c.key.cmp(&change.key))
                .map_or_else(|_| change.before.clone(), |i| other[i].after.clone());
            let (ours_value, theirs_value) = match ours_deleted {
                true => (None, other_value),
                false => (other_value, None),
            };
            let conflict = Conflict {
                key: change.key.clone(),
                kind: ConflictKind::NamespaceDeleted,
                base: change.before.clone(),
                ours: ours_value,
                theirs: theirs_value,
                changed_under,
                detail: None,
            };
            found.insert(change.key.clone(), Pending::Conflict(conflict));
        }
    }
}

/// The value `side` has for the key of `change` (a change of the other side from the same
/// base): its own change's result if it changed the key, the base value otherwise.
fn value_on<'a>(side: &'a [Change], change: &'a Change) -> Option<&'a Entry> {
    match side.binary_search_by(|c| c.key.cmp(&change.key)) {
        Ok(i) => side[i].after.as_ref(),
        Err(_) => change.before.as_ref(),
    }
}

fn is_namespace_deletion(change: &Change) -> bool {
    change.after.is_none()
        && matches!(
            change.before,
            Some(Entry {
                content: Content::Namespace { .. },
                ..
            })
        )
}
