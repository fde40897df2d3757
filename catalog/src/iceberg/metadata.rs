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

/// Partition field ids start above this (the spec reserves lower ids for data columns).
pub const PARTITION_DATA_ID_START: i32 = 1000;

/// One table's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TableMetadata {
    pub format_version: u8,
    pub table_uuid: uuid::Uuid,
    pub location: String,
    #[serde(default)]
    pub last_sequence_number: i64,
    pub last_updated_ms: i64,
    pub last_column_id: i32,
    pub schemas: Vec<Schema>,
    pub current_schema_id: i32,
    pub partition_specs: Vec<PartitionSpec>,
    pub default_spec_id: i32,
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
    pub sort_orders: Vec<SortOrder>,
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

/// A schema: its id and identifier fields are typed, its struct type is carried as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    #[serde(rename = "schema-id", default)]
    pub schema_id: i32,
    #[serde(
        rename = "identifier-field-ids",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub identifier_field_ids: Option<Vec<i32>>,
    /// `type` (always `struct`) and `fields`.
    #[serde(flatten)]
    pub body: Map<String, Value>,
}

impl Schema {
    /// The highest field id anywhere in the schema, nested fields included (0 when empty).
    pub fn highest_field_id(&self) -> i32 {
        fn walk(value: &Value, max: &mut i32) {
            match value {
                Value::Object(map) => {
                    for id_key in ["id", "element-id", "key-id", "value-id"] {
                        if let Some(id) = map.get(id_key).and_then(Value::as_i64) {
                            *max = (*max).max(i32::try_from(id).unwrap_or(i32::MAX));
                        }
                    }
                    for nested in ["fields", "type", "element", "key", "value"] {
                        if let Some(v) = map.get(nested) {
                            walk(v, max);
                        }
                    }
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, max)),
                _ => {}
            }
        }
        let mut max = 0;
        if let Some(fields) = self.body.get("fields") {
            walk(fields, &mut max);
        }
        max
    }

    /// Whether two schemas describe the same columns (ids aside), so one can be reused.
    /// Identifier field ids compare as sets: PyIceberg sends `[]` where Java leaves them out.
    pub fn same_columns(&self, other: &Schema) -> bool {
        fn identifiers(schema: &Schema) -> BTreeSet<i32> {
            schema
                .identifier_field_ids
                .iter()
                .flatten()
                .copied()
                .collect()
        }
        self.body == other.body && identifiers(self) == identifiers(other)
    }

    /// Whether the schema has a field with this top-level or nested id.
    pub fn has_field(&self, id: i32) -> bool {
        fn walk(value: &Value, id: i64) -> bool {
            match value {
                Value::Object(map) => {
                    map.get("id").and_then(Value::as_i64) == Some(id)
                        || ["fields", "type", "element", "key", "value"]
                            .iter()
                            .filter_map(|k| map.get(*k))
                            .any(|v| walk(v, id))
                }
                Value::Array(items) => items.iter().any(|v| walk(v, id)),
                _ => false,
            }
        }
        self.body
            .get("fields")
            .is_some_and(|f| walk(f, i64::from(id)))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionSpec {
    #[serde(rename = "spec-id", default)]
    pub spec_id: i32,
    pub fields: Vec<PartitionField>,
}

impl PartitionSpec {
    pub fn unpartitioned() -> Self {
        Self {
            spec_id: 0,
            fields: Vec::new(),
        }
    }

    pub fn highest_field_id(&self) -> Option<i32> {
        self.fields.iter().filter_map(|f| f.field_id).max()
    }

    /// Same partitioning (names, sources and transforms), whatever the spec id and the field
    /// ids, as the reference implementation's `compatibleWith`: a client may send a spec it
    /// already has without field ids.
    pub fn same_fields(&self, other: &PartitionSpec) -> bool {
        self.fields.len() == other.fields.len()
            && self
                .fields
                .iter()
                .zip(&other.fields)
                .all(|(a, b)| a.name == b.name && a.transform == b.transform && a.rest == b.rest)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionField {
    #[serde(rename = "field-id", default, skip_serializing_if = "Option::is_none")]
    pub field_id: Option<i32>,
    pub name: String,
    pub transform: String,
    /// `source-id` (v1, v2) or `source-ids` (v3 multi-argument transforms), kept as sent.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SortOrder {
    #[serde(rename = "order-id", default)]
    pub order_id: i32,
    pub fields: Vec<Value>,
}

impl SortOrder {
    pub fn unsorted() -> Self {
        Self {
            order_id: 0,
            fields: Vec::new(),
        }
    }

    pub fn is_unsorted(&self) -> bool {
        self.fields.is_empty()
    }
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

    /// Checks that the metadata is whole: every id it points at exists.
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
