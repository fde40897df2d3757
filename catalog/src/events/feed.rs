//! Reading a catalog's events in pages, after a cursor.

use std::collections::BTreeSet;
use std::sync::Arc;

use pangolin_refs::{RefLogEntry, RefName, RepoLogQuery};
use pangolin_store::{BackendError, ContentKey, ReadError};

use super::derive::derive;
use super::{Cursor, Event, EventKind};
use crate::catalog::Catalog;

/// Ref-log entries read from the store at a time.
const LOG_BATCH: usize = 100;

/// Which events to read.
#[derive(Debug, Clone)]
pub struct EventQuery {
    /// Only events after this position (from the oldest entry kept when `None`).
    pub after: Option<Cursor>,
    /// The most events one page holds.
    pub limit: usize,
    /// The most ref-log entries one page reads, so a filter that matches little still
    /// answers soon; the page's cursor then says how far the read got.
    pub scan: usize,
    /// Only these kinds (all when `None`).
    pub kinds: Option<BTreeSet<EventKind>>,
    /// Only events about keys at or under this one (no ref or merge events).
    pub prefix: Option<ContentKey>,
    /// Only events of the branch or tag of this name.
    pub reference: Option<RefName>,
}

impl EventQuery {
    fn wants(&self, event: &Event) -> bool {
        self.kinds.as_ref().is_none_or(|k| k.contains(&event.kind))
            && self
                .reference
                .as_ref()
                .is_none_or(|r| *r == event.reference.name)
            && self
                .prefix
                .as_ref()
                .is_none_or(|p| event.keys().any(|k| k.starts_with(p)))
    }
}

/// One page of events.
#[derive(Debug, Clone)]
pub struct EventPage {
    pub events: Vec<Event>,
    /// Where to continue: after the last event returned, or after the last ref-log entry
    /// read when the filters skipped everything after it. `None` only when nothing was read
    /// and no cursor was given.
    pub cursor: Option<Cursor>,
}

#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    /// The objects an old entry names were collected (past the catalog's retention window).
    #[error(
        "the events of ref-log entry {sequence} are no longer available: the commits they come \
         from were collected; continue after cursor {sequence}"
    )]
    Gone { sequence: u64 },
    #[error(transparent)]
    Read(ReadError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

impl Catalog {
    /// The events of one ref-log entry, from the server's cache when it has them.
    async fn entry_events(&self, entry: &RefLogEntry) -> Result<Arc<Vec<Event>>, ReadError> {
        let repo = self.odb().repo();
        if let Some(hit) = self.event_cache().and_then(|c| c.get(repo, entry)) {
            return Ok(hit);
        }
        let derived = Arc::new(derive(self.odb(), entry).await?);
        if let Some(cache) = self.event_cache() {
            cache.insert(repo, entry, derived.clone());
        }
        Ok(derived)
    }

    /// The events after `query.after` that `query` and `visible` both keep, oldest first.
    #[tracing::instrument(level = "debug", skip(self, visible), fields(catalog = %self.name()))]
    pub async fn events(
        &self,
        query: &EventQuery,
        visible: &(dyn Fn(&Event) -> bool + Sync),
    ) -> Result<EventPage, EventsError> {
        let mut events = Vec::new();
        let mut cursor = query.after;
        // A cursor inside an entry reads that entry again, from its next event.
        let mut after = match query.after {
            Some(c) if c.index().is_some() => c.sequence.checked_sub(1),
            Some(c) => Some(c.sequence),
            None => None,
        };
        let mut scanned = 0;
        while scanned < query.scan.max(1) {
            let limit = LOG_BATCH.min(query.scan.max(1) - scanned);
            let entries = self
                .store()
                .repository_log(self.odb().repo(), RepoLogQuery { after, limit })
                .await?;
            if entries.is_empty() {
                break;
            }
            for entry in entries {
                scanned += 1;
                after = Some(entry.sequence);
                let skip_all = query
                    .reference
                    .as_ref()
                    .is_some_and(|r| *r != entry.reference.name);
                if !skip_all {
                    let derived = match self.entry_events(&entry).await {
                        Ok(derived) => derived,
                        // The events before it are answered first; the next read starts here.
                        Err(ReadError::Missing { .. }) if !events.is_empty() => {
                            return Ok(EventPage { events, cursor });
                        }
                        Err(ReadError::Missing { .. }) => {
                            return Err(EventsError::Gone {
                                sequence: entry.sequence,
                            });
                        }
                        Err(other) => return Err(EventsError::Read(other)),
                    };
                    for event in derived.iter() {
                        if query.after.is_some_and(|a| event.cursor <= a) {
                            continue;
                        }
                        cursor = Some(event.cursor);
                        if query.wants(event) && visible(event) {
                            events.push(event.clone());
                            if events.len() >= query.limit.max(1) {
                                return Ok(EventPage { events, cursor });
                            }
                        }
                    }
                }
                cursor = Some(Cursor::end_of(entry.sequence));
                if scanned >= query.scan.max(1) {
                    break;
                }
            }
        }
        Ok(EventPage { events, cursor })
    }
    /// Where the feed ends now: continuing after it reads only changes made from here on.
    /// `None` for a catalog whose ref log is empty.
    ///
    /// The stores list the log only oldest first, so the last sequence number is searched
    /// for: doubling steps past the newest number seen, then halving the gap, each probe one
    /// indexed read of at most one entry (about 2 log2 n reads for n entries).
    pub async fn events_end(&self) -> Result<Option<Cursor>, BackendError> {
        let repo = self.odb().repo();
        let next = |after: Option<u64>| async move {
            let entries = self
                .store()
                .repository_log(repo, RepoLogQuery { after, limit: 1 })
                .await?;
            Ok::<_, BackendError>(entries.first().map(|e| e.sequence))
        };
        // `low` is always a sequence number that exists; nothing exists after `high`.
        let Some(mut low) = next(None).await? else {
            return Ok(None);
        };
        let mut step = 1_u64;
        let mut high = loop {
            let probe = low.saturating_add(step);
            match next(Some(probe)).await? {
                Some(sequence) => {
                    low = sequence;
                    step = step.saturating_mul(2);
                }
                None => break probe,
            }
        };
        while low < high {
            let middle = low + (high - low) / 2;
            match next(Some(middle)).await? {
                Some(sequence) => low = sequence,
                None => high = middle,
            }
        }
        Ok(Some(Cursor::end_of(low)))
    }
}
