//! The events one ref-log entry yields.

use std::collections::HashMap;

use pangolin_refs::{RefLogEntry, Reference};
use pangolin_store::history::{self, AncestorError};
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{Content, ContentId, Entry, ObjectId, Odb, ReadError, Timestamp};

use super::kind::{EntryOp, RefOp};
use super::{Change, Cursor, Event, EventKind};

/// The most commits one move is followed through one by one. A longer run of commits is
/// described as one move and the changes it brought (so a reader is never stalled for long).
const MAX_CHAIN: u64 = 10_000;

/// Diff pages read at a time.
const DIFF_PAGE: usize = 1_000;

/// Who and when, for the events of one commit or one move.
struct Origin<'a> {
    reference: &'a Reference,
    commit: ObjectId,
    time: Timestamp,
    principal: &'a str,
    message: &'a str,
}

impl Origin<'_> {
    fn event(&self, kind: EventKind, change: Change) -> Event {
        Event {
            cursor: Cursor::end_of(0),
            kind,
            reference: self.reference.clone(),
            commit: self.commit,
            time: self.time,
            principal: self.principal.to_owned(),
            message: self.message.to_owned(),
            change,
        }
    }
}

/// Every event of `entry`, each with its cursor: a created or deleted ref is one event; a ref
/// moved by commits on top of what it held yields, commit by commit, a merge event for a merge
/// commit and one event per changed key (against the commit's first parent); any other move is
/// one move event followed by the keys it changed.
pub(super) async fn derive(odb: &Odb, entry: &RefLogEntry) -> Result<Vec<Event>, ReadError> {
    let reference = &entry.reference;
    let by_move = Origin {
        reference,
        commit: entry
            .new
            .or(entry.old)
            .unwrap_or(ObjectId::from_bytes([0; 32])),
        time: entry.time,
        principal: &entry.principal,
        message: &entry.message,
    };
    let ref_event = |op, from, to| {
        by_move.event(
            EventKind::of_ref(reference.kind, op),
            Change::Ref { from, to },
        )
    };
    let mut events = Vec::new();
    match (entry.old, entry.new) {
        (None, None) => {}
        (None, Some(new)) => events.push(ref_event(RefOp::Create, None, Some(new))),
        (Some(old), None) => events.push(ref_event(RefOp::Delete, Some(old), None)),
        (Some(old), Some(new)) if old == new => {}
        (Some(old), Some(new)) => match commits_on_top(odb, old, new).await? {
            Some(chain) => {
                for id in chain {
                    let commit = odb.commit(&id).await?;
                    let Some(parent) = commit.first_parent() else {
                        continue;
                    };
                    let origin = Origin {
                        reference,
                        commit: id,
                        time: commit.time,
                        principal: &commit.author,
                        message: &commit.message,
                    };
                    if commit.is_merge() {
                        let parents = commit.parents.clone();
                        events.push(origin.event(EventKind::Merge, Change::Merge { parents }));
                    }
                    let before = odb.commit(&parent).await?.tree;
                    entry_events(odb, &origin, &before, &commit.tree, &mut events).await?;
                }
            }
            None => {
                events.push(ref_event(RefOp::Move, Some(old), Some(new)));
                let before = odb.commit(&old).await?.tree;
                let after = odb.commit(&new).await?.tree;
                entry_events(odb, &by_move, &before, &after, &mut events).await?;
            }
        },
    }
    for (index, event) in events.iter_mut().enumerate() {
        event.cursor = Cursor::event(entry.sequence, u32::try_from(index).unwrap_or(u32::MAX));
    }
    Ok(events)
}

/// The commits from `old` (exclusive) to `new`, oldest first, when `old` is a first-parent
/// ancestor of `new` at most [`MAX_CHAIN`] commits back.
async fn commits_on_top(
    odb: &Odb,
    old: ObjectId,
    new: ObjectId,
) -> Result<Option<Vec<ObjectId>>, ReadError> {
    let (old_depth, new_depth) = (odb.commit(&old).await?.depth, odb.commit(&new).await?.depth);
    let Some(distance) = new_depth
        .checked_sub(old_depth)
        .filter(|d| (1..=MAX_CHAIN).contains(d))
    else {
        return Ok(None);
    };
    match history::nth_ancestor(odb, new, distance).await {
        Ok(ancestor) if ancestor == old => {}
        Ok(_) | Err(AncestorError::TooShallow { .. }) => return Ok(None),
        Err(AncestorError::Read(e)) => return Err(e),
    }
    let mut chain = Vec::with_capacity(distance as usize);
    let mut current = new;
    while current != old {
        chain.push(current);
        match odb.commit(&current).await?.first_parent() {
            Some(parent) => current = parent,
            None => return Ok(None),
        }
    }
    chain.reverse();
    Ok(Some(chain))
}

/// The events a move of `reference` from tree `before` to tree `after` by `commit` would
/// yield for the keys it changes: what checks of a merge that has not landed judge.
pub(crate) async fn tree_events(
    odb: &Odb,
    reference: &Reference,
    commit: ObjectId,
    before: &ObjectId,
    after: &ObjectId,
) -> Result<Vec<Event>, ReadError> {
    let origin = Origin {
        reference,
        commit,
        time: Timestamp::now(),
        principal: "",
        message: "",
    };
    let mut events = Vec::new();
    entry_events(odb, &origin, before, after, &mut events).await?;
    Ok(events)
}

/// One event per key changed from tree `before` to tree `after`, in key order. A key removed
/// and another added with the same content identity (and kind) is one rename, at the new key;
/// an entry replaced by different content is a drop and a create.
async fn entry_events(
    odb: &Odb,
    origin: &Origin<'_>,
    before: &ObjectId,
    after: &ObjectId,
    events: &mut Vec<Event>,
) -> Result<(), ReadError> {
    let mut changes = Vec::new();
    let mut range = KeyRange::all();
    loop {
        let page = tree::diff(odb, before, after, &range, DIFF_PAGE).await?;
        changes.extend(page.changes);
        match page.next_after {
            Some(key) => range = KeyRange::all().after(&key),
            None => break,
        }
    }
    let renamable = |entry: &Entry| !matches!(entry.content, Content::Namespace { .. });
    let mut removed: HashMap<ContentId, usize> = HashMap::new();
    let mut added: HashMap<ContentId, usize> = HashMap::new();
    for (i, change) in changes.iter().enumerate() {
        match (&change.before, &change.after) {
            (Some(b), None) if renamable(b) => {
                removed.insert(b.content_id, i);
            }
            (None, Some(a)) if renamable(a) => {
                added.insert(a.content_id, i);
            }
            _ => {}
        }
    }
    // Index of a removal that is half of a rename -> the index of its other half.
    let mut renamed_from: HashMap<usize, usize> = HashMap::new();
    let mut folded = vec![false; changes.len()];
    for (id, &to) in &added {
        if let Some(&from) = removed.get(id) {
            let same_kind = match (&changes[from].before, &changes[to].after) {
                (Some(b), Some(a)) => b.content.kind() == a.content.kind(),
                _ => false,
            };
            if same_kind {
                renamed_from.insert(to, from);
                folded[from] = true;
            }
        }
    }
    for (i, change) in changes.iter().enumerate() {
        if folded[i] {
            continue;
        }
        let entry_change =
            |previous_key, before: Option<&Entry>, after: Option<&Entry>| Change::Entry {
                key: change.key.clone(),
                previous_key,
                before: before.cloned(),
                after: after.cloned(),
            };
        match (&change.before, &change.after) {
            (None, Some(after)) => match renamed_from.get(&i) {
                Some(&from) => {
                    let old = &changes[from];
                    events.push(origin.event(
                        EventKind::of_entry(&after.content, EntryOp::Rename),
                        entry_change(Some(old.key.clone()), old.before.as_ref(), Some(after)),
                    ));
                }
                None => events.push(origin.event(
                    EventKind::of_entry(&after.content, EntryOp::Create),
                    entry_change(None, None, Some(after)),
                )),
            },
            (Some(before), None) => events.push(origin.event(
                EventKind::of_entry(&before.content, EntryOp::Drop),
                entry_change(None, Some(before), None),
            )),
            (Some(before), Some(after))
                if before.content_id == after.content_id
                    && before.content.kind() == after.content.kind() =>
            {
                events.push(origin.event(
                    EventKind::of_entry(&after.content, EntryOp::Update),
                    entry_change(None, Some(before), Some(after)),
                ));
            }
            (Some(before), Some(after)) => {
                events.push(origin.event(
                    EventKind::of_entry(&before.content, EntryOp::Drop),
                    entry_change(None, Some(before), None),
                ));
                events.push(origin.event(
                    EventKind::of_entry(&after.content, EntryOp::Create),
                    entry_change(None, None, Some(after)),
                ));
            }
            (None, None) => {}
        }
    }
    Ok(())
}
