//! What the tests of the Iceberg metadata model share: a table's metadata made in memory by
//! `new_table_metadata`, commits applied to it with `MetadataBuilder`, and the JSON of the
//! snapshots, specs, orders and statistics that PyIceberg and the Java client send.

pub use std::collections::BTreeMap;

pub use pangolin_catalog::iceberg::metadata::{RefType, Schema, SortOrder, TableMetadata};
pub use pangolin_catalog::iceberg::{
    MetadataBuilder, NewTable, TableRequirement, TableUpdate, UpdateError, new_table_metadata,
};
pub use serde_json::{Value, json};

pub use super::lake::{requirement, update};

pub const NOW: i64 = 1_700_000_000_000;
pub const LOCATION: &str = "s3://bucket/wh/db/events";
pub const UUID: &str = "9c12d441-03fe-4693-9a96-a0705ddf69c1";

pub fn schema_json() -> Value {
    json!({
        "type": "struct",
        "schema-id": 0,
        "identifier-field-ids": [1],
        "fields": [
            {"id": 1, "name": "id", "required": true, "type": "long"},
            {"id": 2, "name": "data", "required": false, "type": "string"},
            {"id": 3, "name": "ts", "required": false, "type": "timestamptz"}
        ]
    })
}

pub fn schema(value: Value) -> Schema {
    serde_json::from_value(value).unwrap()
}

pub fn table_with(format_version: u8, sort_order: Option<SortOrder>) -> TableMetadata {
    new_table_metadata(
        NewTable {
            location: format!("{LOCATION}/"),
            schema: schema(schema_json()),
            partition_spec: None,
            sort_order,
            properties: BTreeMap::from([
                ("format-version".to_owned(), format_version.to_string()),
                ("owner".to_owned(), "ana".to_owned()),
            ]),
        },
        NOW,
    )
    .unwrap()
}

/// A v2 table: schema 0 (columns 1 to 3), unpartitioned, unsorted, no snapshots.
pub fn table() -> TableMetadata {
    table_with(2, None)
}

/// Applies the updates in one commit, one millisecond after the table was made.
pub fn try_apply(meta: &TableMetadata, updates: &[Value]) -> Result<TableMetadata, UpdateError> {
    let mut builder = MetadataBuilder::new(meta.clone());
    for u in updates {
        builder.apply(&update(u.clone()), NOW + 1)?;
    }
    builder.build(NOW + 1)
}

pub fn apply(meta: &TableMetadata, updates: &[Value]) -> TableMetadata {
    try_apply(meta, updates).unwrap()
}

pub fn apply_err(meta: &TableMetadata, updates: &[Value]) -> UpdateError {
    try_apply(meta, updates).unwrap_err()
}

/// A snapshot as PyIceberg sends it (no `parent-snapshot-id` key for the first one).
pub fn snapshot(id: i64, parent: Option<i64>, sequence: i64, timestamp_ms: i64) -> Value {
    let mut s = json!({
        "snapshot-id": id,
        "sequence-number": sequence,
        "timestamp-ms": timestamp_ms,
        "manifest-list": format!("{LOCATION}/metadata/snap-{id}-1-7e6760f0.avro"),
        "summary": {
            "operation": "append",
            "added-data-files": "1",
            "added-records": "3",
            "total-records": "3"
        },
        "schema-id": 0
    });
    if let Some(parent) = parent {
        s["parent-snapshot-id"] = json!(parent);
    }
    s
}

pub fn add_snapshot(id: i64, parent: Option<i64>, sequence: i64) -> Value {
    json!({"action": "add-snapshot", "snapshot": snapshot(id, parent, sequence, NOW - 500 + id)})
}

pub fn set_ref(name: &str, kind: &str, snapshot_id: i64) -> Value {
    json!({"action": "set-snapshot-ref", "ref-name": name, "type": kind, "snapshot-id": snapshot_id})
}

/// The table with snapshot 1 on main, and snapshot 2 (child of 1) on branch `audit`.
pub fn table_with_snapshots() -> TableMetadata {
    apply(
        &table(),
        &[
            add_snapshot(1, None, 1),
            set_ref("main", "branch", 1),
            add_snapshot(2, Some(1), 2),
            set_ref("audit", "branch", 2),
        ],
    )
}

pub fn statistics(snapshot_id: i64, file: &str) -> Value {
    json!({
        "snapshot-id": snapshot_id,
        "statistics-path": format!("{LOCATION}/metadata/{file}.stats"),
        "file-size-in-bytes": 413,
        "file-footer-size-in-bytes": 42,
        "blob-metadata": [{
            "type": "apache-datasketches-theta-v1",
            "snapshot-id": snapshot_id,
            "sequence-number": 1,
            "fields": [1],
            "properties": {"ndv": "3"}
        }]
    })
}

pub fn partition_statistics(snapshot_id: i64, file: &str) -> Value {
    json!({
        "snapshot-id": snapshot_id,
        "statistics-path": format!("{LOCATION}/metadata/{file}.parquet"),
        "file-size-in-bytes": 43
    })
}

pub fn schema_with_extra_column() -> Value {
    let mut s = schema_json();
    s["schema-id"] = json!(17);
    s["fields"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": 4, "name": "kind", "required": false, "type": "string"}));
    s
}

pub fn day_and_bucket_spec(with_ids: bool) -> Value {
    let mut spec = json!({"spec-id": 0, "fields": [
        {"name": "ts_day", "transform": "day", "source-id": 3},
        {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1}
    ]});
    if with_ids {
        spec["fields"][0]["field-id"] = json!(1000);
        spec["fields"][1]["field-id"] = json!(1001);
    }
    spec
}

pub fn sort_order(source_id: i32) -> Value {
    json!({"order-id": 0, "fields": [
        {"transform": "identity", "source-id": source_id, "direction": "asc", "null-order": "nulls-first"}
    ]})
}

/// The table with snapshots, sorted by order 1, partitioned by spec 1, and uuid `UUID`.
pub fn asserted_table() -> TableMetadata {
    let mut meta = apply(
        &table_with_snapshots(),
        &[
            json!({"action": "add-spec", "spec": day_and_bucket_spec(false)}),
            json!({"action": "set-default-spec", "spec-id": -1}),
            json!({"action": "add-sort-order", "sort-order": sort_order(3)}),
            json!({"action": "set-default-sort-order", "sort-order-id": -1}),
            json!({"action": "add-schema", "schema": schema_with_extra_column()}),
            json!({"action": "set-current-schema", "schema-id": -1}),
        ],
    );
    meta.table_uuid = UUID.parse().unwrap();
    meta
}
