//! Iceberg table metadata as the spec's `metadata.json` lays it out.
//!
//! Parts the catalog reasons about (ids, snapshots, refs, logs) are typed; parts it only carries
//! (schema fields, sort fields, statistics blobs, fields a newer spec adds) are kept as JSON so
//! nothing a client wrote is lost on the way through.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Format versions this server reads and writes.
pub const SUPPORTED_FORMAT_VERSIONS: std::ops::RangeInclusive<u8> = 1..=3;

/// Format version of new tables unless the client asks for another.
pub const DEFAULT_FORMAT_VERSION: u8 = 2;

/// The name of the branch that is the table's current state.
pub const MAIN_BRANCH: &str = "main";

pub use super::partition::{PARTITION_DATA_ID_START, PartitionField, PartitionSpec};
pub use super::schema::Schema;
pub use super::sort::SortOrder;

/// One table's metadata.
///
/// Read through `upgrade_v1` first (the serde derive below is `remote = "Self"`, so the
/// `Deserialize` impl of the type is the one in this file that upgrades), as the reference
/// implementation reads files of format version 1 that predate lists of schemas and specs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", remote = "Self")]
pub struct TableMetadata {
    pub format_version: u8,
    #[serde(default = "uuid::Uuid::nil")]
    pub table_uuid: uuid::Uuid,
    pub location: String,
    #[serde(default)]
    pub last_sequence_number: i64,
    pub last_updated_ms: i64,
    pub last_column_id: i32,
    // The lists and ids below are required from format version 2 on; version 1 files may
    // leave them out (see `upgrade_v1`), so absence is read as empty or `ABSENT` first.
    #[serde(default)]
    pub schemas: Vec<Schema>,
    #[serde(default = "absent")]
    pub current_schema_id: i32,
    #[serde(default)]
    pub partition_specs: Vec<PartitionSpec>,
    #[serde(default = "absent")]
    pub default_spec_id: i32,
    #[serde(default = "absent")]
    pub last_partition_id: i32,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// Written as `-1` when there is none, as the Java implementation does.
    #[serde(
        default,
        serialize_with = "snapshot_id_out",
        deserialize_with = "snapshot_id_in"
    )]
    pub current_snapshot_id: Option<i64>,
    #[serde(default)]
    pub snapshots: Vec<Snapshot>,
    #[serde(default)]
    pub snapshot_log: Vec<SnapshotLogEntry>,
    #[serde(default)]
    pub metadata_log: Vec<MetadataLogEntry>,
    #[serde(default)]
    pub sort_orders: Vec<SortOrder>,
    #[serde(default = "absent")]
    pub default_sort_order_id: i32,
    #[serde(default)]
    pub refs: BTreeMap<String, SnapshotRef>,
    #[serde(default)]
    pub statistics: Vec<StatisticsFile>,
    #[serde(default)]
    pub partition_statistics: Vec<StatisticsFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_row_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub encryption_keys: Vec<EncryptionKey>,
    /// Fields this server does not interpret (v1's `schema` and `partition-spec`, newer ones).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn snapshot_id_out<S: Serializer>(id: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_i64(id.unwrap_or(-1))
}

fn snapshot_id_in<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(Option::<i64>::deserialize(d)?.filter(|id| *id != -1))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Snapshot {
    pub snapshot_id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_snapshot_id: Option<i64>,
    #[serde(default)]
    pub sequence_number: i64,
    pub timestamp_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_list: Option<String>,
    #[serde(default)]
    pub summary: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_id: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_row_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_rows: Option<i64>,
    /// v1's `manifests`, `key-id` and anything newer.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Snapshot {
    /// `append`, `overwrite`, `delete`, `replace` (from the summary).
    pub fn operation(&self) -> Option<&str> {
        self.summary.get("operation").map(String::as_str)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefType {
    Branch,
    Tag,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SnapshotRef {
    pub snapshot_id: i64,
    #[serde(rename = "type")]
    pub kind: RefType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_snapshots_to_keep: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_snapshot_age_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ref_age_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SnapshotLogEntry {
    pub snapshot_id: i64,
    pub timestamp_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MetadataLogEntry {
    pub metadata_file: String,
    pub timestamp_ms: i64,
}

/// A table or partition statistics file; only the snapshot it belongs to is interpreted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatisticsFile {
    #[serde(rename = "snapshot-id")]
    pub snapshot_id: i64,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncryptionKey {
    #[serde(rename = "key-id")]
    pub key_id: String,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl TableMetadata {
    pub fn current_schema(&self) -> Option<&Schema> {
        self.schema(self.current_schema_id)
    }

    pub fn schema(&self, id: i32) -> Option<&Schema> {
        self.schemas.iter().find(|s| s.schema_id == id)
    }

    pub fn spec(&self, id: i32) -> Option<&PartitionSpec> {
        self.partition_specs.iter().find(|s| s.spec_id == id)
    }

    pub fn sort_order(&self, id: i32) -> Option<&SortOrder> {
        self.sort_orders.iter().find(|s| s.order_id == id)
    }

    pub fn snapshot(&self, id: i64) -> Option<&Snapshot> {
        self.snapshots.iter().find(|s| s.snapshot_id == id)
    }

    pub fn current_snapshot(&self) -> Option<&Snapshot> {
        self.current_snapshot_id.and_then(|id| self.snapshot(id))
    }

    /// Puts `main` at the current snapshot when no ref says where `main` is, as in files written
    /// before refs existed: the spec has a `main` branch at the current snapshot even then.
    pub fn ensure_main_ref(&mut self) {
        if let Some(snapshot_id) = self.current_snapshot_id
            && !self.refs.contains_key(MAIN_BRANCH)
        {
            self.refs.insert(
                MAIN_BRANCH.to_owned(),
                SnapshotRef {
                    snapshot_id,
                    kind: RefType::Branch,
                    min_snapshots_to_keep: None,
                    max_snapshot_age_ms: None,
                    max_ref_age_ms: None,
                },
            );
        }
    }

    /// Format version 1 readers need the current schema as `schema` and the default spec's
    /// fields as `partition-spec`; later versions drop them.
    pub fn fill_v1_fields(&mut self) {
        if self.format_version != 1 {
            self.extra.remove("schema");
            self.extra.remove("partition-spec");
            return;
        }
        if let Some(schema) = self
            .current_schema()
            .and_then(|s| serde_json::to_value(s).ok())
        {
            self.extra.insert("schema".to_owned(), schema);
        }
        if let Some(fields) = self
            .spec(self.default_spec_id)
            .and_then(|s| serde_json::to_value(&s.fields).ok())
        {
            self.extra.insert("partition-spec".to_owned(), fields);
        }
    }

    /// The same metadata with only the snapshots some branch or tag points at (the
    /// `snapshots=refs` view of a load).
    pub fn with_referenced_snapshots_only(&self) -> TableMetadata {
        let mut out = self.clone();
        out.snapshots
            .retain(|s| self.refs.values().any(|r| r.snapshot_id == s.snapshot_id));
        out
    }

    /// Checks that the metadata is whole and consistent, as the reference implementation
    /// checks metadata it builds or reads: every id it points at exists, ids are unique, the
    /// counters are at least what they count, the logs are in order. Cheap: it does not look
    /// inside schemas (`validate_deep` does).
    pub fn validate(&self) -> Result<(), String> {
        if !SUPPORTED_FORMAT_VERSIONS.contains(&self.format_version) {
            return Err(format!(
                "format version {} is not supported (supported: 1 to 3)",
                self.format_version
            ));
        }
        if self.location.is_empty() {
            return Err("the table has no location".to_owned());
        }
        unique(
            "schema",
            self.schemas.iter().map(|s| i64::from(s.schema_id)),
        )?;
        unique(
            "partition spec",
            self.partition_specs.iter().map(|s| i64::from(s.spec_id)),
        )?;
        unique(
            "sort order",
            self.sort_orders.iter().map(|s| i64::from(s.order_id)),
        )?;
        unique("snapshot", self.snapshots.iter().map(|s| s.snapshot_id))?;
        if self.current_schema().is_none() {
            return Err(format!(
                "current schema {} is not among the table's schemas",
                self.current_schema_id
            ));
        }
        if self.spec(self.default_spec_id).is_none() {
            return Err(format!(
                "default partition spec {} is not among the table's specs",
                self.default_spec_id
            ));
        }
        if self.sort_order(self.default_sort_order_id).is_none() {
            return Err(format!(
                "default sort order {} is not among the table's sort orders",
                self.default_sort_order_id
            ));
        }
        let highest_column = self
            .schemas
            .iter()
            .map(Schema::highest_field_id)
            .max()
            .unwrap_or(0);
        if self.last_column_id < highest_column {
            return Err(format!(
                "last-column-id {} is below the highest field id {highest_column}",
                self.last_column_id
            ));
        }
        let highest_partition = self
            .partition_specs
            .iter()
            .filter_map(PartitionSpec::highest_field_id)
            .max()
            .unwrap_or(PARTITION_DATA_ID_START - 1);
        if self.last_partition_id < highest_partition {
            return Err(format!(
                "last-partition-id {} is below the highest partition field id {highest_partition}",
                self.last_partition_id
            ));
        }
        if self.format_version == 1 && self.last_sequence_number != 0 {
            return Err(format!(
                "last-sequence-number must be 0 in format version 1, not {}",
                self.last_sequence_number
            ));
        }
        for snapshot in &self.snapshots {
            if snapshot.sequence_number > self.last_sequence_number {
                return Err(format!(
                    "snapshot {} has sequence number {}, above the table's last-sequence-number {}",
                    snapshot.snapshot_id, snapshot.sequence_number, self.last_sequence_number
                ));
            }
        }
        if let Some(id) = self.current_snapshot_id
            && self.snapshot(id).is_none()
        {
            return Err(format!("current snapshot {id} does not exist"));
        }
        for (name, r) in &self.refs {
            if self.snapshot(r.snapshot_id).is_none() {
                return Err(format!(
                    "ref `{name}` points at snapshot {} which does not exist",
                    r.snapshot_id
                ));
            }
        }
        match (self.current_snapshot_id, self.refs.get(MAIN_BRANCH)) {
            (_, Some(main)) if main.kind != RefType::Branch => {
                return Err(format!("`{MAIN_BRANCH}` must be a branch, not a tag"));
            }
            (Some(current), Some(main)) if main.snapshot_id != current => {
                return Err(format!(
                    "current-snapshot-id {current} is not where `{MAIN_BRANCH}` points ({})",
                    main.snapshot_id
                ));
            }
            (None, Some(main)) => {
                return Err(format!(
                    "there is no current snapshot, but `{MAIN_BRANCH}` points at {}",
                    main.snapshot_id
                ));
            }
            _ => {}
        }
        ordered(
            "snapshot-log",
            self.snapshot_log.iter().map(|e| e.timestamp_ms),
            self.last_updated_ms,
        )?;
        ordered(
            "metadata-log",
            self.metadata_log.iter().map(|e| e.timestamp_ms),
            self.last_updated_ms,
        )
    }

    /// `validate`, and every schema, spec and order checked as when they were added; for files
    /// the catalog did not write itself (register).
    pub fn validate_deep(&self) -> Result<(), String> {
        self.validate()?;
        for schema in &self.schemas {
            schema.check()?;
        }
        let current = self
            .current_schema()
            .ok_or("the table has no current schema")?;
        current.check_for_format(self.format_version)?;
        if let Some(spec) = self.spec(self.default_spec_id) {
            spec.check_compatible(current)?;
        }
        if let Some(order) = self.sort_order(self.default_sort_order_id) {
            order.check_compatible(current)?;
        }
        Ok(())
    }
}

/// How far back in time one log entry may be from the one before it: commits from several
/// machines may disagree on the time by this much, as the reference implementation allows.
const CLOCK_SKEW_MS: i64 = 60_000;

fn unique(kind: &str, ids: impl Iterator<Item = i64>) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for id in ids {
        if !seen.insert(id) {
            return Err(format!("{kind} id {id} is used twice"));
        }
    }
    Ok(())
}

fn ordered(
    log: &str,
    times: impl Iterator<Item = i64>,
    last_updated_ms: i64,
) -> Result<(), String> {
    let mut previous: Option<i64> = None;
    for time in times {
        if let Some(before) = previous
            && time - before < -CLOCK_SKEW_MS
        {
            return Err(format!(
                "{log} is out of order: an entry at {time} follows one at {before}"
            ));
        }
        previous = Some(time);
    }
    match previous {
        Some(last) if last_updated_ms - last < -CLOCK_SKEW_MS => Err(format!(
            "last-updated-ms {last_updated_ms} is before the latest {log} entry at {last}"
        )),
        _ => Ok(()),
    }
}

impl Serialize for TableMetadata {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        TableMetadata::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for TableMetadata {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut meta = TableMetadata::deserialize(d)?;
        meta.upgrade_v1().map_err(serde::de::Error::custom)?;
        Ok(meta)
    }
}

/// What an id field that the file left out is read as, until `upgrade_v1` fills it or
/// refuses the file.
const ABSENT: i32 = i32::MIN;

fn absent() -> i32 {
    ABSENT
}

impl TableMetadata {
    /// Fills what a format version 1 file may leave out, as the reference implementation reads
    /// it: the list of schemas from `schema`, the specs from `partition-spec`, the unsorted
    /// order, `last-partition-id` from the specs, a table uuid. Later versions must have them
    /// all. Specs written before field ids existed number their fields from 1000 on.
    fn upgrade_v1(&mut self) -> Result<(), String> {
        let v1 = self.format_version == 1;
        let required = |field: &str| {
            if v1 {
                format!("`{field}` is required (or the version 1 form of it)")
            } else {
                format!("`{field}` is required")
            }
        };
        if self.schemas.is_empty() {
            let schema = match self.extra.get("schema") {
                Some(schema) if v1 => Schema::from_json(schema)?,
                _ => return Err(required("schemas")),
            };
            self.current_schema_id = schema.schema_id;
            self.schemas.push(schema);
        }
        if self.current_schema_id == ABSENT {
            return Err(required("current-schema-id"));
        }
        if self.partition_specs.is_empty() {
            let fields = match self.extra.get("partition-spec") {
                Some(fields) if v1 => serde_json::from_value(fields.clone())
                    .map_err(|e| format!("`partition-spec`: {e}"))?,
                _ => return Err(required("partition-specs")),
            };
            self.partition_specs
                .push(PartitionSpec { spec_id: 0, fields });
            self.default_spec_id = 0;
        }
        if self.default_spec_id == ABSENT {
            return Err(required("default-spec-id"));
        }
        for spec in &mut self.partition_specs {
            if spec.fields.iter().all(|f| f.field_id.is_none()) {
                for (i, field) in spec.fields.iter_mut().enumerate() {
                    field.field_id = Some(PARTITION_DATA_ID_START + i as i32);
                }
            }
        }
        if self.last_partition_id == ABSENT {
            if !v1 {
                return Err(required("last-partition-id"));
            }
            self.last_partition_id = self
                .partition_specs
                .iter()
                .filter_map(PartitionSpec::highest_field_id)
                .max()
                .unwrap_or(PARTITION_DATA_ID_START - 1);
        }
        if self.sort_orders.is_empty() {
            if !v1 {
                return Err(required("sort-orders"));
            }
            self.sort_orders.push(SortOrder::unsorted());
            self.default_sort_order_id = 0;
        }
        if self.default_sort_order_id == ABSENT {
            return Err(required("default-sort-order-id"));
        }
        if self.table_uuid.is_nil() {
            if !v1 {
                return Err(required("table-uuid"));
            }
            // The reference implementation leaves it unset until the next commit assigns one.
            self.table_uuid = uuid::Uuid::new_v4();
        }
        if v1 {
            // Version 1 has no sequence numbers; the reference implementation reads them as 0.
            self.last_sequence_number = 0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(fields: Value) -> Schema {
        serde_json::from_value(serde_json::json!({
            "type": "struct", "schema-id": 0, "fields": fields
        }))
        .unwrap()
    }

    #[test]
    fn highest_field_id_looks_into_nested_types() {
        let s = schema(serde_json::json!([
            {"id": 1, "name": "a", "required": true, "type": "long"},
            {"id": 2, "name": "b", "required": false, "type": {
                "type": "list", "element-id": 7, "element-required": false,
                "element": {"type": "struct", "fields": [
                    {"id": 9, "name": "c", "required": false, "type": "string"}
                ]}
            }},
            {"id": 3, "name": "m", "required": false, "type": {
                "type": "map", "key-id": 4, "key": "string", "value-id": 5, "value": "int",
                "value-required": false
            }}
        ]));
        assert_eq!(s.highest_field_id(), 9);
        assert!(s.has_field(9));
        assert!(s.has_field(1));
        assert!(!s.has_field(8));
    }

    #[test]
    fn missing_current_snapshot_is_minus_one_both_ways() {
        let json = serde_json::json!({
            "format-version": 2,
            "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "file:///tmp/t",
            "last-sequence-number": 0,
            "last-updated-ms": 1,
            "last-column-id": 1,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "a", "required": true, "type": "long"}]}],
            "current-schema-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": []}],
            "default-spec-id": 0,
            "last-partition-id": 999,
            "current-snapshot-id": -1,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "default-sort-order-id": 0,
            "some-future-field": {"kept": true}
        });
        let meta: TableMetadata = serde_json::from_value(json).unwrap();
        assert_eq!(meta.current_snapshot_id, None);
        meta.validate().unwrap();
        let back = serde_json::to_value(&meta).unwrap();
        assert_eq!(back["current-snapshot-id"], -1);
        assert_eq!(back["some-future-field"]["kept"], true);
        assert_eq!(back["refs"], serde_json::json!({}));
    }
}
