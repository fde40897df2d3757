//! Change events, derived from the ref log and the commits it names.
//!
//! Nothing is written on the side of a commit: a catalog's events are read off its ref log
//! (one entry per ref move, numbered in the order moves became visible) and the commits each
//! move brought. So an event exists exactly when its change landed, and a reader continuing
//! after a [`Cursor`] sees every later event once, in order, whichever server it asks.

mod cache;
mod cursor;
mod derive;
mod feed;
mod kind;
mod tables;

pub use cache::{DEFAULT_CACHE_EVENTS, EventCache};
pub use cursor::{Cursor, CursorError};
pub(crate) use derive::tree_events;
pub use feed::{EventPage, EventQuery, EventsError};
pub use kind::EventKind;
pub use tables::{SnapshotState, TableState};

use pangolin_refs::Reference;
use pangolin_store::{ContentKey, Entry, ObjectId, Timestamp};

/// One change, as readers of one ref see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub cursor: Cursor,
    pub kind: EventKind,
    pub reference: Reference,
    /// The commit that made the change; for a deleted ref, the commit it last named.
    pub commit: ObjectId,
    pub time: Timestamp,
    /// The commit's author, or who moved the ref.
    pub principal: String,
    pub message: String,
    pub change: Change,
}

/// What an event changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// One key's entry: created (`before` is `None`), dropped (`after` is `None`), updated,
    /// or renamed from `previous_key`.
    Entry {
        key: ContentKey,
        previous_key: Option<ContentKey>,
        before: Option<Entry>,
        after: Option<Entry>,
    },
    /// A ref created (`from` is `None`), deleted (`to` is `None`), or moved other than by
    /// commits on top of what it held (a reset, or a fast-forward along a merged branch); the
    /// entry changes such a move brought follow it as events of their own.
    Ref {
        from: Option<ObjectId>,
        to: Option<ObjectId>,
    },
    /// A merge commit, with its parents (the first is the branch merged into).
    Merge { parents: Vec<ObjectId> },
}

impl Event {
    /// The keys the event is about: the entry's, and before a rename its old one.
    pub fn keys(&self) -> impl Iterator<Item = &ContentKey> {
        let (key, previous) = match &self.change {
            Change::Entry {
                key, previous_key, ..
            } => (Some(key), previous_key.as_ref()),
            _ => (None, None),
        };
        key.into_iter().chain(previous)
    }
}
