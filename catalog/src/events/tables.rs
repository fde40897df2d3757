//! What a table event's metadata says: the table's uuid and its current snapshot, read from
//! the metadata file the event's entry names (files are cached by location, and several are
//! read at once).

use std::collections::BTreeMap;

use futures::stream::{self, StreamExt};
use pangolin_store::Content;

use super::{Change, Event};
use crate::catalog::Catalog;

/// Metadata files read at once.
const READS: usize = 8;

/// A table's state after an event, from its metadata file.
#[derive(Debug, Clone, PartialEq)]
pub enum TableState {
    Read {
        table_uuid: uuid::Uuid,
        format_version: u8,
        snapshot: Option<SnapshotState>,
    },
    /// The file could not be read (deleted by a purge or a sweep, or the store is down).
    Unreadable(String),
}

/// The snapshot a table's metadata names as current.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotState {
    pub snapshot_id: i64,
    pub parent_snapshot_id: Option<i64>,
    pub sequence_number: i64,
    pub timestamp_ms: i64,
    /// The snapshot summary (`operation`, `added-records`, ...).
    pub summary: BTreeMap<String, String>,
}

impl Catalog {
    /// For each event, the state of the table it leaves (`None` for events not about a
    /// table, a dropped table, or a catalog without a warehouse).
    pub async fn event_tables(&self, events: &[Event]) -> Vec<Option<TableState>> {
        let Some(warehouse) = self.warehouse_ref() else {
            return vec![None; events.len()];
        };
        let location = |event: &Event| match &event.change {
            Change::Entry {
                after:
                    Some(pangolin_store::Entry {
                        content:
                            Content::IcebergTable {
                                metadata_location, ..
                            },
                        ..
                    }),
                ..
            } => Some(metadata_location.clone()),
            _ => None,
        };
        stream::iter(events.iter().map(location))
            .map(|location| async move {
                let location = location?;
                Some(match warehouse.io.read_metadata(&location).await {
                    Ok(metadata) => TableState::Read {
                        table_uuid: metadata.table_uuid,
                        format_version: metadata.format_version,
                        snapshot: metadata.current_snapshot().map(|s| SnapshotState {
                            snapshot_id: s.snapshot_id,
                            parent_snapshot_id: s.parent_snapshot_id,
                            sequence_number: s.sequence_number,
                            timestamp_ms: s.timestamp_ms,
                            summary: s.summary.clone(),
                        }),
                    },
                    Err(e) => TableState::Unreadable(e.to_string()),
                })
            })
            .buffered(READS)
            .collect()
            .await
    }
}
