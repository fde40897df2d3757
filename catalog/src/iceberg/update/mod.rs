//! Table metadata updates (the `updates` of a commit) and how each changes the metadata.
//!
//! The rules follow the Iceberg spec and the reference implementation: `-1` means "the one added
//! earlier in this commit", an added schema, spec or sort order equal to an existing one reuses
//! its id, ids only grow, and what is current or default cannot be removed.

mod snapshots;
mod structure;

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::create::{FORMAT_VERSION_PROPERTY, RESERVED_PROPERTIES};
use super::metadata::{
    EncryptionKey, MAIN_BRANCH, MetadataLogEntry, PARTITION_DATA_ID_START, PartitionSpec, RefType,
    SUPPORTED_FORMAT_VERSIONS, Schema, Snapshot, SnapshotRef, SortOrder, StatisticsFile,
    TableMetadata,
};

/// One update of a table commit. An action this server does not know fails to parse, so it can
/// never be ignored silently.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TableUpdate {
    AssignUuid {
        uuid: uuid::Uuid,
    },
    UpgradeFormatVersion {
        #[serde(rename = "format-version")]
        format_version: u8,
    },
    AddSchema {
        schema: Schema,
        /// Deprecated by the spec; the server computes it.
        #[serde(rename = "last-column-id", default)]
        last_column_id: Option<i32>,
    },
    SetCurrentSchema {
        #[serde(rename = "schema-id")]
        schema_id: i32,
    },
    AddSpec {
        spec: PartitionSpec,
    },
    SetDefaultSpec {
        #[serde(rename = "spec-id")]
        spec_id: i32,
    },
    AddSortOrder {
        #[serde(rename = "sort-order")]
        sort_order: SortOrder,
    },
    SetDefaultSortOrder {
        #[serde(rename = "sort-order-id")]
        sort_order_id: i32,
    },
    AddSnapshot {
        snapshot: Snapshot,
    },
    SetSnapshotRef {
        #[serde(rename = "ref-name")]
        ref_name: String,
        #[serde(rename = "type")]
        kind: RefType,
        #[serde(rename = "snapshot-id")]
        snapshot_id: i64,
        #[serde(rename = "min-snapshots-to-keep", default)]
        min_snapshots_to_keep: Option<i32>,
        #[serde(rename = "max-snapshot-age-ms", default)]
        max_snapshot_age_ms: Option<i64>,
        #[serde(rename = "max-ref-age-ms", default)]
        max_ref_age_ms: Option<i64>,
    },
    RemoveSnapshots {
        #[serde(rename = "snapshot-ids")]
        snapshot_ids: Vec<i64>,
    },
    RemoveSnapshotRef {
        #[serde(rename = "ref-name")]
        ref_name: String,
    },
    SetLocation {
        location: String,
    },
    SetProperties {
        updates: BTreeMap<String, String>,
    },
    RemoveProperties {
        removals: Vec<String>,
    },
    SetStatistics {
        /// Deprecated duplicate of `statistics.snapshot-id`.
        #[serde(rename = "snapshot-id", default)]
        snapshot_id: Option<i64>,
        statistics: StatisticsFile,
    },
    RemoveStatistics {
        #[serde(rename = "snapshot-id")]
        snapshot_id: i64,
    },
    SetPartitionStatistics {
        #[serde(rename = "partition-statistics")]
        partition_statistics: StatisticsFile,
    },
    RemovePartitionStatistics {
        #[serde(rename = "snapshot-id")]
        snapshot_id: i64,
    },
    RemovePartitionSpecs {
        #[serde(rename = "spec-ids")]
        spec_ids: Vec<i32>,
    },
    RemoveSchemas {
        #[serde(rename = "schema-ids")]
        schema_ids: Vec<i32>,
    },
    AddEncryptionKey {
        #[serde(rename = "encryption-key")]
        encryption_key: EncryptionKey,
    },
    RemoveEncryptionKey {
        #[serde(rename = "key-id")]
        key_id: String,
    },
}

/// Why an update cannot be applied: the request is wrong, whatever the table's state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    #[error("format version {0} is not supported (supported: 1 to 3)")]
    UnsupportedFormatVersion(u8),
    #[error("cannot downgrade the format version from {from} to {to}")]
    Downgrade { from: u8, to: u8 },
    #[error("`-1` names the {0} added earlier in this commit, but none was added")]
    NothingAdded(&'static str),
    #[error("there is no {kind} with id {id}")]
    Unknown { kind: &'static str, id: i64 },
    #[error("snapshot {0} already exists")]
    SnapshotExists(i64),
    #[error(
        "snapshot {snapshot} has sequence number {sequence}, which is not above the table's last sequence number {last}"
    )]
    StaleSequenceNumber {
        snapshot: i64,
        sequence: i64,
        last: i64,
    },
    #[error("snapshot {0} has no first-row-id, which format version 3 requires")]
    MissingRowId(i64),
    #[error("snapshot {snapshot} starts at row id {first}, below the table's next row id {next}")]
    StaleRowId {
        snapshot: i64,
        first: i64,
        next: i64,
    },
    #[error("cannot remove the {kind} {id}: it is the current one")]
    RemoveCurrent { kind: &'static str, id: i64 },
    #[error("the table's location cannot be empty")]
    EmptyLocation,
    #[error("property `{0}` is both set and removed")]
    PropertyConflict(String),
    #[error("cannot reassign the table uuid {current} to {requested}")]
    ReassignUuid {
        current: uuid::Uuid,
        requested: uuid::Uuid,
    },
    /// What the updates ask for breaks a rule of the spec; the message names the field.
    #[error("{0}")]
    Invalid(String),
}

/// Applies updates to a table's metadata, remembering what this commit added so `-1` can name
/// it.
#[derive(Debug)]
pub struct MetadataBuilder {
    meta: TableMetadata,
    last_added_schema: Option<i32>,
    last_added_spec: Option<i32>,
    last_added_order: Option<i32>,
    added_snapshots: BTreeSet<i64>,
    /// Snapshots this commit pointed `main` at, in order (for the snapshot log).
    main_moves: Vec<i64>,
    removed_snapshots: bool,
    /// A schema, spec or order was added or made current: check they still fit together.
    structure_changed: bool,
}

impl MetadataBuilder {
    pub fn new(meta: TableMetadata) -> Self {
        Self {
            meta,
            last_added_schema: None,
            last_added_spec: None,
            last_added_order: None,
            added_snapshots: BTreeSet::new(),
            main_moves: Vec::new(),
            removed_snapshots: false,
            structure_changed: false,
        }
    }

    /// The current schema's id as the updates so far left it.
    pub fn current_schema_id(&self) -> i32 {
        self.meta.current_schema_id
    }

    pub fn apply_all(&mut self, updates: &[TableUpdate], now_ms: i64) -> Result<(), UpdateError> {
        for update in updates {
            self.apply(update, now_ms)?;
        }
        Ok(())
    }

    /// The finished metadata, checked whole, stamped with the time of the change.
    pub fn build(self, now_ms: i64) -> Result<TableMetadata, UpdateError> {
        let meta = self.finish(now_ms)?;
        meta.validate().map_err(UpdateError::Invalid)?;
        Ok(meta)
    }

    /// The metadata as the updates left it, with the snapshot log brought up to date and the
    /// default spec and sort order checked against the current schema, for a caller that
    /// completes it (a location) before `validate`.
    pub fn finish(mut self, now_ms: i64) -> Result<TableMetadata, UpdateError> {
        self.meta.last_updated_ms = now_ms.max(self.meta.last_updated_ms);
        if self.structure_changed
            && let Some(schema) = self.meta.current_schema()
        {
            if let Some(spec) = self.meta.spec(self.meta.default_spec_id) {
                spec.check_compatible(schema)
                    .map_err(UpdateError::Invalid)?;
            }
            if let Some(order) = self.meta.sort_order(self.meta.default_sort_order_id) {
                order
                    .check_compatible(schema)
                    .map_err(UpdateError::Invalid)?;
            }
        }
        self.update_snapshot_log()?;
        self.meta.fill_v1_fields();
        Ok(self.meta)
    }
    /// Records the file the new metadata replaces in the metadata log, keeping at most the
    /// table's `write.metadata.previous-versions-max` (default 100) entries.
    pub fn log_previous(&mut self, file: String, timestamp_ms: i64) {
        let max = self
            .meta
            .properties
            .get("write.metadata.previous-versions-max")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(100)
            .max(1);
        let log = &mut self.meta.metadata_log;
        log.push(MetadataLogEntry {
            metadata_file: file,
            timestamp_ms,
        });
        if log.len() > max {
            log.drain(..log.len() - max);
        }
    }

    pub fn apply(&mut self, update: &TableUpdate, now_ms: i64) -> Result<(), UpdateError> {
        let meta = &mut self.meta;
        match update {
            TableUpdate::AssignUuid { uuid } => {
                // A new table takes the uuid its creator chose; an existing one keeps its own,
                // or `assert-table-uuid` would stop meaning anything.
                if !meta.schemas.is_empty() && *uuid != meta.table_uuid {
                    return Err(UpdateError::ReassignUuid {
                        current: meta.table_uuid,
                        requested: *uuid,
                    });
                }
                meta.table_uuid = *uuid;
            }
            TableUpdate::UpgradeFormatVersion { format_version } => {
                let to = *format_version;
                if !SUPPORTED_FORMAT_VERSIONS.contains(&to) {
                    return Err(UpdateError::UnsupportedFormatVersion(to));
                }
                if to < meta.format_version {
                    return Err(UpdateError::Downgrade {
                        from: meta.format_version,
                        to,
                    });
                }
                if to >= 3 && meta.next_row_id.is_none() {
                    meta.next_row_id = Some(0);
                }
                meta.format_version = to;
            }
            TableUpdate::AddSchema { schema, .. } => self.add_schema(schema)?,
            TableUpdate::SetCurrentSchema { schema_id } => {
                self.structure_changed = true;
                let id = resolve_last(*schema_id, self.last_added_schema, "schema")?;
                let meta = &mut self.meta;
                if meta.schema(id).is_none() {
                    return Err(unknown("schema", id));
                }
                meta.current_schema_id = id;
            }
            TableUpdate::AddSpec { spec } => self.add_spec(spec)?,
            TableUpdate::SetDefaultSpec { spec_id } => {
                self.structure_changed = true;
                let id = resolve_last(*spec_id, self.last_added_spec, "partition spec")?;
                let meta = &mut self.meta;
                if meta.spec(id).is_none() {
                    return Err(unknown("partition spec", id));
                }
                meta.default_spec_id = id;
            }
            TableUpdate::AddSortOrder { sort_order } => self.add_sort_order(sort_order)?,
            TableUpdate::SetDefaultSortOrder { sort_order_id } => {
                self.structure_changed = true;
                let id = resolve_last(*sort_order_id, self.last_added_order, "sort order")?;
                let meta = &mut self.meta;
                if meta.sort_order(id).is_none() {
                    return Err(unknown("sort order", id));
                }
                meta.default_sort_order_id = id;
            }
            TableUpdate::AddSnapshot { snapshot } => self.add_snapshot(snapshot)?,
            TableUpdate::SetSnapshotRef {
                ref_name,
                kind,
                snapshot_id,
                min_snapshots_to_keep,
                max_snapshot_age_ms,
                max_ref_age_ms,
            } => {
                let new_ref = SnapshotRef {
                    snapshot_id: *snapshot_id,
                    kind: *kind,
                    min_snapshots_to_keep: *min_snapshots_to_keep,
                    max_snapshot_age_ms: *max_snapshot_age_ms,
                    max_ref_age_ms: *max_ref_age_ms,
                };
                self.set_snapshot_ref(ref_name, new_ref, now_ms)?;
            }
            TableUpdate::RemoveSnapshots { snapshot_ids } => self.remove_snapshots(snapshot_ids),
            TableUpdate::RemoveSnapshotRef { ref_name } => {
                if meta.refs.remove(ref_name).is_some() && ref_name == MAIN_BRANCH {
                    meta.current_snapshot_id = None;
                }
            }
            TableUpdate::SetLocation { location } => {
                let location = canonical_location(location);
                if location.is_empty() {
                    return Err(UpdateError::EmptyLocation);
                }
                meta.location = location;
            }
            TableUpdate::SetProperties { updates } => {
                for (key, value) in updates {
                    match key.as_str() {
                        // Asked for as a property, as the reference implementation's property
                        // updates do: an upgrade, never a stored property.
                        FORMAT_VERSION_PROPERTY => {
                            let to = value.trim().parse::<u8>().map_err(|_| {
                                UpdateError::Invalid(format!(
                                    "property `{FORMAT_VERSION_PROPERTY}` must be 1, 2 or 3, not `{value}`"
                                ))
                            })?;
                            self.apply(
                                &TableUpdate::UpgradeFormatVersion { format_version: to },
                                now_ms,
                            )?;
                        }
                        // Derived from the metadata itself; the reference implementation never
                        // stores them as properties.
                        key if RESERVED_PROPERTIES.contains(&key) => {}
                        _ => {
                            self.meta.properties.insert(key.clone(), value.clone());
                        }
                    }
                }
            }
            TableUpdate::RemoveProperties { removals } => {
                for key in removals {
                    meta.properties.remove(key);
                }
            }
            TableUpdate::SetStatistics {
                statistics,
                snapshot_id,
            } => {
                if snapshot_id.is_some_and(|id| id != statistics.snapshot_id) {
                    return Err(UpdateError::Invalid(format!(
                        "set-statistics: `snapshot-id` {} differs from the statistics file's {}",
                        snapshot_id.unwrap_or_default(),
                        statistics.snapshot_id
                    )));
                }
                if meta.snapshot(statistics.snapshot_id).is_none() {
                    return Err(UpdateError::Unknown {
                        kind: "snapshot",
                        id: statistics.snapshot_id,
                    });
                }
                meta.statistics
                    .retain(|s| s.snapshot_id != statistics.snapshot_id);
                meta.statistics.push(statistics.clone());
            }
            TableUpdate::RemoveStatistics { snapshot_id } => {
                meta.statistics.retain(|s| s.snapshot_id != *snapshot_id);
            }
            TableUpdate::SetPartitionStatistics {
                partition_statistics,
            } => {
                if meta.snapshot(partition_statistics.snapshot_id).is_none() {
                    return Err(UpdateError::Unknown {
                        kind: "snapshot",
                        id: partition_statistics.snapshot_id,
                    });
                }
                meta.partition_statistics
                    .retain(|s| s.snapshot_id != partition_statistics.snapshot_id);
                meta.partition_statistics.push(partition_statistics.clone());
            }
            TableUpdate::RemovePartitionStatistics { snapshot_id } => {
                meta.partition_statistics
                    .retain(|s| s.snapshot_id != *snapshot_id);
            }
            TableUpdate::RemovePartitionSpecs { spec_ids } => {
                if spec_ids.contains(&meta.default_spec_id) {
                    return Err(UpdateError::RemoveCurrent {
                        kind: "default partition spec",
                        id: i64::from(meta.default_spec_id),
                    });
                }
                meta.partition_specs
                    .retain(|s| !spec_ids.contains(&s.spec_id));
            }
            TableUpdate::RemoveSchemas { schema_ids } => {
                if schema_ids.contains(&meta.current_schema_id) {
                    return Err(UpdateError::RemoveCurrent {
                        kind: "current schema",
                        id: i64::from(meta.current_schema_id),
                    });
                }
                meta.schemas.retain(|s| !schema_ids.contains(&s.schema_id));
            }
            TableUpdate::AddEncryptionKey { encryption_key } => {
                meta.encryption_keys
                    .retain(|k| k.key_id != encryption_key.key_id);
                meta.encryption_keys.push(encryption_key.clone());
            }
            TableUpdate::RemoveEncryptionKey { key_id } => {
                meta.encryption_keys.retain(|k| &k.key_id != key_id);
            }
        }
        Ok(())
    }
}

/// A table location as stored: no trailing `/`, and `file:/abs/path` (how Hadoop-based
/// clients such as Spark qualify local paths: no authority) written `file:///abs/path`, the
/// same place in the form the metadata files are written under.
pub fn canonical_location(location: &str) -> String {
    let location = location.trim_end_matches('/');
    match location.strip_prefix("file:/") {
        Some(path) if !path.starts_with('/') => format!("file:///{path}"),
        _ => location.to_owned(),
    }
}
fn unknown(kind: &'static str, id: i32) -> UpdateError {
    UpdateError::Unknown {
        kind,
        id: i64::from(id),
    }
}

fn resolve_last(id: i32, last: Option<i32>, kind: &'static str) -> Result<i32, UpdateError> {
    match id {
        -1 => last.ok_or(UpdateError::NothingAdded(kind)),
        id => Ok(id),
    }
}

/// The first metadata of a table, before the updates of its creating commit: empty lists and
/// ids that say "nothing yet".
pub fn blank(location: String, format_version: u8, now_ms: i64) -> TableMetadata {
    TableMetadata {
        format_version,
        table_uuid: uuid::Uuid::new_v4(),
        location,
        last_sequence_number: 0,
        last_updated_ms: now_ms,
        last_column_id: 0,
        schemas: Vec::new(),
        current_schema_id: -1,
        partition_specs: Vec::new(),
        default_spec_id: -1,
        last_partition_id: PARTITION_DATA_ID_START - 1,
        properties: BTreeMap::new(),
        current_snapshot_id: None,
        snapshots: Vec::new(),
        snapshot_log: Vec::new(),
        metadata_log: Vec::new(),
        sort_orders: Vec::new(),
        default_sort_order_id: -1,
        refs: BTreeMap::new(),
        statistics: Vec::new(),
        partition_statistics: Vec::new(),
        next_row_id: (format_version >= 3).then_some(0),
        encryption_keys: Vec::new(),
        extra: serde_json::Map::new(),
    }
}
