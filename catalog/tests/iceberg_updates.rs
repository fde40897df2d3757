//! The Iceberg metadata model on its own: commit updates and requirements as PyIceberg and the
//! Java client send them, applied to metadata from `new_table_metadata`, against the rules of the
//! Iceberg spec and its reference implementation.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use pangolin_catalog::iceberg::metadata::{RefType, Schema, SortOrder, TableMetadata};
use pangolin_catalog::iceberg::{
    MetadataBuilder, NewTable, TableRequirement, TableUpdate, UpdateError, new_table_metadata,
};
use serde_json::{Value, json};

const NOW: i64 = 1_700_000_000_000;
const LOCATION: &str = "s3://bucket/wh/db/events";
const UUID: &str = "9c12d441-03fe-4693-9a96-a0705ddf69c1";

fn schema_json() -> Value {
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

fn schema(value: Value) -> Schema {
    serde_json::from_value(value).unwrap()
}

fn table_with(format_version: u8, sort_order: Option<SortOrder>) -> TableMetadata {
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
fn table() -> TableMetadata {
    table_with(2, None)
}

fn update(value: Value) -> TableUpdate {
    serde_json::from_value(value).unwrap()
}

fn requirement(value: Value) -> TableRequirement {
    serde_json::from_value(value).unwrap()
}

/// Applies the updates in one commit, one millisecond after the table was made.
fn try_apply(meta: &TableMetadata, updates: &[Value]) -> Result<TableMetadata, UpdateError> {
    let mut builder = MetadataBuilder::new(meta.clone());
    for u in updates {
        builder.apply(&update(u.clone()), NOW + 1)?;
    }
    builder.build(NOW + 1)
}

fn apply(meta: &TableMetadata, updates: &[Value]) -> TableMetadata {
    try_apply(meta, updates).unwrap()
}

fn apply_err(meta: &TableMetadata, updates: &[Value]) -> UpdateError {
    try_apply(meta, updates).unwrap_err()
}

/// A snapshot as PyIceberg sends it (no `parent-snapshot-id` key for the first one).
fn snapshot(id: i64, parent: Option<i64>, sequence: i64, timestamp_ms: i64) -> Value {
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

fn add_snapshot(id: i64, parent: Option<i64>, sequence: i64) -> Value {
    json!({"action": "add-snapshot", "snapshot": snapshot(id, parent, sequence, NOW - 500 + id)})
}

fn set_ref(name: &str, kind: &str, snapshot_id: i64) -> Value {
    json!({"action": "set-snapshot-ref", "ref-name": name, "type": kind, "snapshot-id": snapshot_id})
}

/// The table with snapshot 1 on main, and snapshot 2 (child of 1) on branch `audit`.
fn table_with_snapshots() -> TableMetadata {
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

fn statistics(snapshot_id: i64, file: &str) -> Value {
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

fn partition_statistics(snapshot_id: i64, file: &str) -> Value {
    json!({
        "snapshot-id": snapshot_id,
        "statistics-path": format!("{LOCATION}/metadata/{file}.parquet"),
        "file-size-in-bytes": 43
    })
}

// ---- new tables ----

#[test]
fn a_new_table_starts_with_schema_spec_and_order_zero() {
    let meta = table();
    assert_eq!(meta.format_version, 2);
    assert_eq!(meta.location, LOCATION, "the trailing slash is trimmed");
    assert_eq!(meta.current_schema_id, 0);
    assert_eq!(meta.schemas.len(), 1);
    assert_eq!(meta.last_column_id, 3);
    assert_eq!(meta.default_spec_id, 0);
    assert!(meta.partition_specs[0].fields.is_empty());
    assert_eq!(meta.last_partition_id, 999);
    assert_eq!(meta.default_sort_order_id, 0);
    assert!(meta.sort_orders[0].is_unsorted());
    assert_eq!(meta.current_snapshot_id, None);
    assert_eq!(meta.last_sequence_number, 0);
    assert_eq!(meta.last_updated_ms, NOW);
    assert_eq!(meta.next_row_id, None, "no row lineage before v3");
    assert_eq!(
        meta.properties,
        BTreeMap::from([("owner".to_owned(), "ana".to_owned())]),
        "`format-version` picks the version and is not kept as a property"
    );
    meta.validate().unwrap();
}

#[test]
fn a_new_sorted_table_gets_sort_order_one() {
    let order: SortOrder = serde_json::from_value(json!({
        "order-id": 7,
        "fields": [{"transform": "identity", "source-id": 3, "direction": "desc", "null-order": "nulls-last"}]
    }))
    .unwrap();
    let meta = table_with(2, Some(order.clone()));
    assert_eq!(meta.default_sort_order_id, 1);
    assert_eq!(meta.sort_order(1).unwrap().fields, order.fields);
}

#[test]
fn a_new_table_takes_its_format_version_from_the_property() {
    assert_eq!(table_with(1, None).format_version, 1);
    let v3 = table_with(3, None);
    assert_eq!(v3.format_version, 3);
    assert_eq!(v3.next_row_id, Some(0));
    for bad in ["4", "0", "two"] {
        let err = new_table_metadata(
            NewTable {
                location: LOCATION.to_owned(),
                schema: schema(schema_json()),
                partition_spec: None,
                sort_order: None,
                properties: BTreeMap::from([("format-version".to_owned(), bad.to_owned())]),
            },
            NOW,
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                UpdateError::UnsupportedFormatVersion(_) | UpdateError::Invalid(_)
            ),
            "{bad}: {err}"
        );
    }
}

// ---- assign-uuid, upgrade-format-version ----

#[test]
fn assign_uuid_keeps_an_existing_tables_uuid() {
    let table = table();
    let same = json!({"action": "assign-uuid", "uuid": table.table_uuid.to_string()});
    assert_eq!(apply(&table, &[same]).table_uuid, table.table_uuid);
    let error = apply_err(&table, &[json!({"action": "assign-uuid", "uuid": UUID})]);
    assert!(
        matches!(error, UpdateError::ReassignUuid { .. }),
        "{error:?}"
    );
}

#[test]
fn upgrade_format_version_moves_forward_and_keeps_the_same_version() {
    let v1 = table_with(1, None);
    let up = apply(
        &v1,
        &[json!({"action": "upgrade-format-version", "format-version": 2})],
    );
    assert_eq!(up.format_version, 2);
    let same = apply(
        &up,
        &[json!({"action": "upgrade-format-version", "format-version": 2})],
    );
    assert_eq!(same.format_version, 2);
}

#[test]
fn upgrade_format_version_refuses_a_downgrade() {
    let err = apply_err(
        &table(),
        &[json!({"action": "upgrade-format-version", "format-version": 1})],
    );
    assert_eq!(err, UpdateError::Downgrade { from: 2, to: 1 });
}

#[test]
fn upgrade_format_version_refuses_an_unknown_version() {
    let err = apply_err(
        &table(),
        &[json!({"action": "upgrade-format-version", "format-version": 4})],
    );
    assert_eq!(err, UpdateError::UnsupportedFormatVersion(4));
}

#[test]
fn upgrading_to_v3_starts_row_lineage_at_zero() {
    let meta = apply(
        &table(),
        &[json!({"action": "upgrade-format-version", "format-version": 3})],
    );
    assert_eq!((meta.format_version, meta.next_row_id), (3, Some(0)));
    let json = serde_json::to_value(&meta).unwrap();
    assert_eq!(json["next-row-id"], 0);
}

// ---- schemas ----

fn schema_with_extra_column() -> Value {
    let mut s = schema_json();
    s["schema-id"] = json!(17);
    s["fields"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": 4, "name": "kind", "required": false, "type": "string"}));
    s
}

#[test]
fn add_schema_takes_the_next_id_and_raises_last_column_id() {
    let meta = apply(
        &table(),
        &[
            json!({"action": "add-schema", "schema": schema_with_extra_column(), "last-column-id": 4}),
        ],
    );
    assert_eq!(meta.schemas.len(), 2);
    let added = meta.schema(1).expect("the client's id 17 is replaced by 1");
    assert!(added.has_field(4));
    assert_eq!(meta.last_column_id, 4);
    assert_eq!(meta.current_schema_id, 0, "adding does not make it current");
}

#[test]
fn add_schema_without_last_column_id_computes_it_from_nested_fields() {
    let mut s = schema_json();
    s["fields"].as_array_mut().unwrap().push(json!({
        "id": 4, "name": "tags", "required": false,
        "type": {"type": "list", "element-id": 5, "element": "string", "element-required": false}
    }));
    let meta = apply(&table(), &[json!({"action": "add-schema", "schema": s})]);
    assert_eq!(meta.last_column_id, 5);
}

#[test]
fn adding_an_identical_schema_reuses_its_id() {
    let meta = apply(
        &table(),
        &[
            json!({"action": "add-schema", "schema": schema_json()}),
            json!({"action": "set-current-schema", "schema-id": -1}),
        ],
    );
    assert_eq!(meta.schemas.len(), 1);
    assert_eq!(meta.current_schema_id, 0);
    assert_eq!(meta.last_column_id, 3);
}

#[test]
fn identical_schemas_match_whether_empty_identifier_ids_are_sent_or_not() {
    // PyIceberg sends `"identifier-field-ids": []`, Java leaves the key out when empty.
    let mut pyiceberg = schema_json();
    pyiceberg["identifier-field-ids"] = json!([]);
    let mut java = schema_json();
    java.as_object_mut().unwrap().remove("identifier-field-ids");
    let meta = apply(
        &table(),
        &[
            json!({"action": "add-schema", "schema": pyiceberg}),
            json!({"action": "set-current-schema", "schema-id": -1}),
        ],
    );
    assert_eq!(meta.current_schema_id, 1);
    let again = apply(
        &meta,
        &[
            json!({"action": "add-schema", "schema": java}),
            json!({"action": "set-current-schema", "schema-id": -1}),
        ],
    );
    assert_eq!(
        again.schemas.len(),
        2,
        "no third schema for the same columns"
    );
    assert_eq!(again.current_schema_id, 1);
}

#[test]
fn a_schema_of_older_columns_keeps_last_column_id() {
    let meta = apply(
        &table(),
        &[json!({"action": "add-schema", "schema": schema_with_extra_column()})],
    );
    let narrower = json!({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": true, "type": "long"}
    ]});
    let meta = apply(
        &meta,
        &[json!({"action": "add-schema", "schema": narrower})],
    );
    assert_eq!(meta.schemas.len(), 3);
    assert_eq!(meta.last_column_id, 4, "ids only grow");
}

#[test]
fn set_current_schema_minus_one_names_the_schema_added_in_this_commit() {
    let meta = apply(
        &table(),
        &[
            json!({"action": "add-schema", "schema": schema_with_extra_column()}),
            json!({"action": "set-current-schema", "schema-id": -1}),
        ],
    );
    assert_eq!(meta.current_schema_id, 1);
    assert_eq!(meta.current_schema().unwrap().highest_field_id(), 4);
}

#[test]
fn set_current_schema_minus_one_fails_when_no_schema_was_added() {
    let err = apply_err(
        &table(),
        &[json!({"action": "set-current-schema", "schema-id": -1})],
    );
    assert_eq!(err, UpdateError::NothingAdded("schema"));
}

#[test]
fn set_current_schema_to_an_unknown_id_fails() {
    let err = apply_err(
        &table(),
        &[json!({"action": "set-current-schema", "schema-id": 5})],
    );
    assert_eq!(
        err,
        UpdateError::Unknown {
            kind: "schema",
            id: 5
        }
    );
}

#[test]
fn set_current_schema_to_an_older_schema_by_id() {
    let meta = apply(
        &table(),
        &[
            json!({"action": "add-schema", "schema": schema_with_extra_column()}),
            json!({"action": "set-current-schema", "schema-id": -1}),
        ],
    );
    let back = apply(
        &meta,
        &[json!({"action": "set-current-schema", "schema-id": 0})],
    );
    assert_eq!(back.current_schema_id, 0);
}

// ---- partition specs ----

fn day_and_bucket_spec(with_ids: bool) -> Value {
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

#[test]
fn add_spec_assigns_partition_field_ids_from_1000() {
    let meta = apply(
        &table(),
        &[json!({"action": "add-spec", "spec": day_and_bucket_spec(false)})],
    );
    let spec = meta
        .spec(1)
        .expect("the next spec id after the unpartitioned 0");
    let ids: Vec<_> = spec.fields.iter().map(|f| f.field_id).collect();
    assert_eq!(ids, vec![Some(1000), Some(1001)]);
    assert_eq!(meta.last_partition_id, 1001);
    assert_eq!(spec.fields[0].rest["source-id"], 3, "source id carried");

    // A later spec's new fields get ids above every one assigned so far.
    let more = json!({"fields": [{"name": "data", "transform": "identity", "source-id": 2}]});
    let meta = apply(&meta, &[json!({"action": "add-spec", "spec": more})]);
    assert_eq!(meta.spec(2).unwrap().fields[0].field_id, Some(1002));
    assert_eq!(meta.last_partition_id, 1002);
}

#[test]
fn add_spec_keeps_field_ids_the_client_assigned() {
    let spec = json!({"spec-id": 0, "fields": [
        {"name": "ts_day", "transform": "day", "source-id": 3, "field-id": 1005}
    ]});
    let meta = apply(&table(), &[json!({"action": "add-spec", "spec": spec})]);
    assert_eq!(meta.spec(1).unwrap().fields[0].field_id, Some(1005));
    assert_eq!(meta.last_partition_id, 1005);
}

#[test]
fn adding_an_identical_spec_reuses_its_id() {
    let meta = apply(
        &table(),
        &[json!({"action": "add-spec", "spec": day_and_bucket_spec(true)})],
    );
    let again = apply(
        &meta,
        &[
            json!({"action": "add-spec", "spec": day_and_bucket_spec(true)}),
            json!({"action": "set-default-spec", "spec-id": -1}),
        ],
    );
    assert_eq!(again.partition_specs.len(), 2);
    assert_eq!(again.default_spec_id, 1);
    assert_eq!(again.last_partition_id, 1001);

    let unpartitioned = apply(
        &again,
        &[
            json!({"action": "add-spec", "spec": {"fields": []}}),
            json!({"action": "set-default-spec", "spec-id": -1}),
        ],
    );
    assert_eq!(unpartitioned.partition_specs.len(), 2);
    assert_eq!(unpartitioned.default_spec_id, 0);
}

#[test]
fn an_identical_spec_sent_without_field_ids_reuses_the_existing_spec() {
    let meta = apply(
        &table(),
        &[json!({"action": "add-spec", "spec": day_and_bucket_spec(false)})],
    );
    let again = apply(
        &meta,
        &[
            json!({"action": "add-spec", "spec": day_and_bucket_spec(false)}),
            json!({"action": "set-default-spec", "spec-id": -1}),
        ],
    );
    assert_eq!(again.partition_specs.len(), 2, "no third spec");
    assert_eq!(again.default_spec_id, 1);
    assert_eq!(
        again.last_partition_id, 1001,
        "no ids spent on a reused spec"
    );
}

#[test]
fn set_default_spec_by_id_and_minus_one() {
    let meta = apply(
        &table(),
        &[
            json!({"action": "add-spec", "spec": day_and_bucket_spec(false)}),
            json!({"action": "set-default-spec", "spec-id": -1}),
        ],
    );
    assert_eq!(meta.default_spec_id, 1);
    let back = apply(
        &meta,
        &[json!({"action": "set-default-spec", "spec-id": 0})],
    );
    assert_eq!(back.default_spec_id, 0);
}

#[test]
fn set_default_spec_fails_for_unknown_or_unadded_specs() {
    let err = apply_err(
        &table(),
        &[json!({"action": "set-default-spec", "spec-id": -1})],
    );
    assert_eq!(err, UpdateError::NothingAdded("partition spec"));
    let err = apply_err(
        &table(),
        &[json!({"action": "set-default-spec", "spec-id": 3})],
    );
    assert_eq!(
        err,
        UpdateError::Unknown {
            kind: "partition spec",
            id: 3
        }
    );
}

// ---- sort orders ----

fn sort_order(source_id: i32) -> Value {
    json!({"order-id": 0, "fields": [
        {"transform": "identity", "source-id": source_id, "direction": "asc", "null-order": "nulls-first"}
    ]})
}

#[test]
fn add_sort_order_gives_new_orders_ids_from_one() {
    let meta = apply(
        &table(),
        &[
            json!({"action": "add-sort-order", "sort-order": sort_order(3)}),
            json!({"action": "set-default-sort-order", "sort-order-id": -1}),
        ],
    );
    assert_eq!(
        meta.default_sort_order_id, 1,
        "the client's id 0 is not used"
    );
    let meta = apply(
        &meta,
        &[json!({"action": "add-sort-order", "sort-order": sort_order(1)})],
    );
    let ids: Vec<_> = meta.sort_orders.iter().map(|o| o.order_id).collect();
    assert_eq!(ids, vec![0, 1, 2]);
}

#[test]
fn adding_an_identical_sort_order_reuses_its_id() {
    let meta = apply(
        &table(),
        &[json!({"action": "add-sort-order", "sort-order": sort_order(3)})],
    );
    let again = apply(
        &meta,
        &[
            json!({"action": "add-sort-order", "sort-order": sort_order(3)}),
            json!({"action": "set-default-sort-order", "sort-order-id": -1}),
        ],
    );
    assert_eq!(again.sort_orders.len(), 2);
    assert_eq!(again.default_sort_order_id, 1);
}

#[test]
fn the_unsorted_order_is_always_id_zero() {
    let sorted: SortOrder = serde_json::from_value(sort_order(3)).unwrap();
    let meta = table_with(2, Some(sorted));
    assert!(
        meta.sort_order(0).is_none(),
        "a sorted table starts with order 1 only"
    );
    let meta = apply(
        &meta,
        &[
            json!({"action": "add-sort-order", "sort-order": {"order-id": 5, "fields": []}}),
            json!({"action": "set-default-sort-order", "sort-order-id": -1}),
        ],
    );
    assert_eq!(meta.default_sort_order_id, 0);
    assert!(meta.sort_order(0).unwrap().is_unsorted());
}

#[test]
fn set_default_sort_order_fails_for_unknown_or_unadded_orders() {
    let err = apply_err(
        &table(),
        &[json!({"action": "set-default-sort-order", "sort-order-id": -1})],
    );
    assert_eq!(err, UpdateError::NothingAdded("sort order"));
    let err = apply_err(
        &table(),
        &[json!({"action": "set-default-sort-order", "sort-order-id": 4})],
    );
    assert_eq!(
        err,
        UpdateError::Unknown {
            kind: "sort order",
            id: 4
        }
    );
}

// ---- snapshots and refs ----

#[test]
fn add_snapshot_records_it_and_its_sequence_number() {
    let meta = apply(&table(), &[add_snapshot(1, None, 1)]);
    assert_eq!(meta.snapshots.len(), 1);
    assert_eq!(meta.last_sequence_number, 1);
    assert_eq!(meta.snapshot(1).unwrap().operation(), Some("append"));
    assert_eq!(
        meta.current_snapshot_id, None,
        "adding a snapshot does not make it current"
    );
    assert!(meta.snapshot_log.is_empty());
}

#[test]
fn add_snapshot_refuses_an_existing_id() {
    let err = apply_err(&table_with_snapshots(), &[add_snapshot(2, Some(1), 3)]);
    assert_eq!(err, UpdateError::SnapshotExists(2));
}

#[test]
fn add_snapshot_refuses_a_stale_sequence_number() {
    let meta = table_with_snapshots();
    assert_eq!(meta.last_sequence_number, 2);
    let err = apply_err(&meta, &[add_snapshot(3, Some(1), 2)]);
    assert_eq!(
        err,
        UpdateError::StaleSequenceNumber {
            snapshot: 3,
            sequence: 2,
            last: 2
        }
    );
    let ok = apply(&meta, &[add_snapshot(3, Some(2), 3)]);
    assert_eq!(ok.last_sequence_number, 3);
}

#[test]
fn v1_snapshots_have_no_sequence_numbers_to_check() {
    let v1 = table_with(1, None);
    let meta = apply(
        &v1,
        &[add_snapshot(1, None, 0), add_snapshot(2, Some(1), 0)],
    );
    assert_eq!(meta.snapshots.len(), 2);
}

#[test]
fn v3_snapshots_advance_next_row_id_and_may_not_reuse_row_ids() {
    let v3 = table_with(3, None);
    let mut first = snapshot(1, None, 1, NOW);
    first["first-row-id"] = json!(0);
    first["added-rows"] = json!(10);
    let meta = apply(&v3, &[json!({"action": "add-snapshot", "snapshot": first})]);
    assert_eq!(meta.next_row_id, Some(10));

    let mut overlapping = snapshot(2, Some(1), 2, NOW);
    overlapping["first-row-id"] = json!(5);
    overlapping["added-rows"] = json!(1);
    let err = apply_err(
        &meta,
        &[json!({"action": "add-snapshot", "snapshot": overlapping})],
    );
    assert_eq!(
        err,
        UpdateError::StaleRowId {
            snapshot: 2,
            first: 5,
            next: 10
        }
    );
}

#[test]
fn v3_snapshots_need_a_first_row_id() {
    let v3 = table_with(3, None);
    let err = apply_err(&v3, &[add_snapshot(1, None, 1)]);
    assert_eq!(err, UpdateError::MissingRowId(1));
}

#[test]
fn set_snapshot_ref_main_makes_the_snapshot_current_and_logs_it() {
    let meta = apply(
        &table(),
        &[add_snapshot(1, None, 1), set_ref("main", "branch", 1)],
    );
    assert_eq!(meta.current_snapshot_id, Some(1));
    assert_eq!(meta.current_snapshot().unwrap().snapshot_id, 1);
    let main = &meta.refs["main"];
    assert_eq!((main.snapshot_id, main.kind), (1, RefType::Branch));
    assert_eq!(meta.snapshot_log.len(), 1);
    assert_eq!(meta.snapshot_log[0].snapshot_id, 1);
    assert_eq!(
        meta.snapshot_log[0].timestamp_ms,
        NOW - 500 + 1,
        "a snapshot added in this commit is logged at its own time"
    );
}

#[test]
fn moving_main_to_an_older_snapshot_logs_the_commit_time() {
    let meta = table_with_snapshots();
    let rolled = apply(
        &apply(&meta, &[set_ref("main", "branch", 2)]),
        &[set_ref("main", "branch", 1)],
    );
    assert_eq!(rolled.current_snapshot_id, Some(1));
    let log: Vec<_> = rolled
        .snapshot_log
        .iter()
        .map(|e| (e.snapshot_id, e.timestamp_ms))
        .collect();
    assert_eq!(log, vec![(1, NOW - 499), (2, NOW + 1), (1, NOW + 1)]);
}

#[test]
fn setting_a_ref_to_where_it_already_is_changes_nothing() {
    let meta = table_with_snapshots();
    let same = apply(&meta, &[set_ref("main", "branch", 1)]);
    assert_eq!(same.snapshot_log, meta.snapshot_log);
    assert_eq!(same.refs, meta.refs);
}

#[test]
fn set_snapshot_ref_keeps_retention_settings() {
    let meta = apply(
        &table_with_snapshots(),
        &[json!({
            "action": "set-snapshot-ref", "ref-name": "audit", "type": "branch", "snapshot-id": 2,
            "min-snapshots-to-keep": 3, "max-snapshot-age-ms": 86_400_000, "max-ref-age-ms": null
        })],
    );
    let audit = &meta.refs["audit"];
    assert_eq!(audit.min_snapshots_to_keep, Some(3));
    assert_eq!(audit.max_snapshot_age_ms, Some(86_400_000));
    assert_eq!(audit.max_ref_age_ms, None);
}

#[test]
fn a_tag_ref_does_not_move_the_current_snapshot() {
    let meta = table_with_snapshots();
    let tagged = apply(&meta, &[set_ref("v1", "tag", 2)]);
    assert_eq!(tagged.refs["v1"].kind, RefType::Tag);
    assert_eq!(tagged.refs["v1"].snapshot_id, 2);
    assert_eq!(tagged.current_snapshot_id, Some(1));
    assert_eq!(tagged.snapshot_log, meta.snapshot_log);
}

#[test]
fn set_snapshot_ref_to_an_unknown_snapshot_fails() {
    let err = apply_err(&table(), &[set_ref("main", "branch", 42)]);
    assert_eq!(
        err,
        UpdateError::Unknown {
            kind: "snapshot",
            id: 42
        }
    );
}

#[test]
fn remove_snapshots_drops_their_refs_statistics_and_log_entries() {
    let meta = apply(
        &table_with_snapshots(),
        &[
            set_ref("v2", "tag", 2),
            json!({"action": "set-statistics", "snapshot-id": 2, "statistics": statistics(2, "s2")}),
            json!({"action": "set-statistics", "statistics": statistics(1, "s1")}),
            json!({"action": "set-partition-statistics", "partition-statistics": partition_statistics(2, "p2")}),
        ],
    );
    let pruned = apply(
        &meta,
        &[json!({"action": "remove-snapshots", "snapshot-ids": [2]})],
    );
    assert_eq!(pruned.snapshots.len(), 1);
    assert_eq!(
        pruned.refs.keys().collect::<Vec<_>>(),
        vec!["main"],
        "`audit` and `v2` pointed at snapshot 2"
    );
    assert_eq!(pruned.current_snapshot_id, Some(1));
    let stats: Vec<_> = pruned.statistics.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(stats, vec![1]);
    assert!(pruned.partition_statistics.is_empty());
    pruned.validate().unwrap();
}

#[test]
fn removing_the_current_snapshot_clears_it() {
    let pruned = apply(
        &table_with_snapshots(),
        &[json!({"action": "remove-snapshots", "snapshot-ids": [1]})],
    );
    assert_eq!(pruned.current_snapshot_id, None);
    assert!(!pruned.refs.contains_key("main"));
    assert!(pruned.snapshot_log.is_empty());
    assert_eq!(pruned.refs["audit"].snapshot_id, 2);
}

#[test]
fn remove_snapshot_ref_main_clears_the_current_snapshot() {
    let meta = apply(
        &table_with_snapshots(),
        &[json!({"action": "remove-snapshot-ref", "ref-name": "main"})],
    );
    assert_eq!(meta.current_snapshot_id, None);
    assert!(!meta.refs.contains_key("main"));
    assert_eq!(meta.snapshots.len(), 2, "the snapshots stay");
    assert_eq!(
        serde_json::to_value(&meta).unwrap()["current-snapshot-id"],
        -1
    );
}

#[test]
fn remove_snapshot_ref_of_another_branch_keeps_the_current_snapshot() {
    let meta = apply(
        &table_with_snapshots(),
        &[json!({"action": "remove-snapshot-ref", "ref-name": "audit"})],
    );
    assert_eq!(meta.current_snapshot_id, Some(1));
    assert_eq!(meta.refs.keys().collect::<Vec<_>>(), vec!["main"]);
}

// ---- properties, statistics, removals, keys, location ----

#[test]
fn set_and_remove_properties() {
    let meta = apply(
        &table(),
        &[
            json!({"action": "set-properties", "updates": {"owner": "bo", "write.format.default": "parquet"}}),
            json!({"action": "remove-properties", "removals": ["write.format.default", "never-set"]}),
        ],
    );
    assert_eq!(
        meta.properties,
        BTreeMap::from([("owner".to_owned(), "bo".to_owned())])
    );
}

#[test]
fn set_statistics_replaces_the_file_of_the_same_snapshot() {
    let meta = apply(
        &table_with_snapshots(),
        &[
            json!({"action": "set-statistics", "snapshot-id": 1, "statistics": statistics(1, "old")}),
            json!({"action": "set-statistics", "statistics": statistics(2, "two")}),
            json!({"action": "set-statistics", "snapshot-id": 1, "statistics": statistics(1, "new")}),
        ],
    );
    assert_eq!(meta.statistics.len(), 2);
    let one = meta.statistics.iter().find(|s| s.snapshot_id == 1).unwrap();
    assert_eq!(
        one.rest["statistics-path"],
        format!("{LOCATION}/metadata/new.stats")
    );
    assert_eq!(one.rest["blob-metadata"][0]["properties"]["ndv"], "3");

    let removed = apply(
        &meta,
        &[json!({"action": "remove-statistics", "snapshot-id": 1})],
    );
    let left: Vec<_> = removed.statistics.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(left, vec![2]);
}

#[test]
fn set_and_remove_partition_statistics() {
    let meta = apply(
        &table_with_snapshots(),
        &[
            json!({"action": "set-partition-statistics", "partition-statistics": partition_statistics(1, "a")}),
            json!({"action": "set-partition-statistics", "partition-statistics": partition_statistics(1, "b")}),
            json!({"action": "set-partition-statistics", "partition-statistics": partition_statistics(2, "c")}),
        ],
    );
    assert_eq!(meta.partition_statistics.len(), 2);
    let one = meta
        .partition_statistics
        .iter()
        .find(|s| s.snapshot_id == 1)
        .unwrap();
    assert_eq!(
        one.rest["statistics-path"],
        format!("{LOCATION}/metadata/b.parquet")
    );
    let removed = apply(
        &meta,
        &[json!({"action": "remove-partition-statistics", "snapshot-id": 2})],
    );
    let left: Vec<_> = removed
        .partition_statistics
        .iter()
        .map(|s| s.snapshot_id)
        .collect();
    assert_eq!(left, vec![1]);
}

#[test]
fn remove_partition_specs_removes_unused_specs() {
    let meta = apply(
        &table(),
        &[json!({"action": "add-spec", "spec": day_and_bucket_spec(false)})],
    );
    let removed = apply(
        &meta,
        &[json!({"action": "remove-partition-specs", "spec-ids": [1]})],
    );
    assert_eq!(removed.partition_specs.len(), 1);
    assert_eq!(removed.last_partition_id, 1001, "ids are never reused");
}

#[test]
fn remove_partition_specs_refuses_the_default_spec() {
    let meta = apply(
        &table(),
        &[
            json!({"action": "add-spec", "spec": day_and_bucket_spec(false)}),
            json!({"action": "set-default-spec", "spec-id": -1}),
        ],
    );
    let err = apply_err(
        &meta,
        &[json!({"action": "remove-partition-specs", "spec-ids": [0, 1]})],
    );
    assert_eq!(
        err,
        UpdateError::RemoveCurrent {
            kind: "default partition spec",
            id: 1
        }
    );
}

#[test]
fn remove_schemas_removes_old_schemas() {
    let meta = apply(
        &table(),
        &[
            json!({"action": "add-schema", "schema": schema_with_extra_column()}),
            json!({"action": "set-current-schema", "schema-id": -1}),
        ],
    );
    let removed = apply(
        &meta,
        &[json!({"action": "remove-schemas", "schema-ids": [0]})],
    );
    assert_eq!(removed.schemas.len(), 1);
    assert_eq!(removed.schemas[0].schema_id, 1);
    assert_eq!(removed.last_column_id, 4);
}

#[test]
fn remove_schemas_refuses_the_current_schema() {
    let err = apply_err(
        &table(),
        &[json!({"action": "remove-schemas", "schema-ids": [0]})],
    );
    assert_eq!(
        err,
        UpdateError::RemoveCurrent {
            kind: "current schema",
            id: 0
        }
    );
}

#[test]
fn add_and_remove_encryption_keys() {
    let key = |id: &str, metadata: &str| {
        json!({"action": "add-encryption-key", "encryption-key": {
            "key-id": id, "encrypted-key-metadata": metadata, "encrypted-by-id": "kms-1",
            "properties": {"algo": "AES_GCM"}
        }})
    };
    let meta = apply(
        &table_with(3, None),
        &[key("k1", "AAAA"), key("k2", "BBBB"), key("k1", "CCCC")],
    );
    assert_eq!(meta.encryption_keys.len(), 2, "a key id is kept once");
    let k1 = meta
        .encryption_keys
        .iter()
        .find(|k| k.key_id == "k1")
        .unwrap();
    assert_eq!(k1.rest["encrypted-key-metadata"], "CCCC");
    let removed = apply(
        &meta,
        &[json!({"action": "remove-encryption-key", "key-id": "k1"})],
    );
    let left: Vec<_> = removed.encryption_keys.iter().map(|k| &k.key_id).collect();
    assert_eq!(left, vec!["k2"]);
}

#[test]
fn set_location_trims_the_trailing_slash_and_refuses_empty() {
    let meta = apply(
        &table(),
        &[json!({"action": "set-location", "location": "s3://other/place/"})],
    );
    assert_eq!(meta.location, "s3://other/place");
    let err = apply_err(
        &table(),
        &[json!({"action": "set-location", "location": "/"})],
    );
    assert_eq!(err, UpdateError::EmptyLocation);
}

#[test]
fn set_location_writes_hadoop_style_file_paths_with_an_empty_authority() {
    // Spark qualifies `LOCATION '/tmp/x'` as `file:/tmp/x`; metadata files go under
    // `file:///tmp/x`, the same place.
    for (given, stored) in [
        ("file:/tmp/wh/t/", "file:///tmp/wh/t"),
        ("file:///tmp/wh/t", "file:///tmp/wh/t"),
        ("file://host/wh/t", "file://host/wh/t"),
        ("/tmp/wh/t", "/tmp/wh/t"),
    ] {
        let meta = apply(
            &table(),
            &[json!({"action": "set-location", "location": given})],
        );
        assert_eq!(meta.location, stored, "{given}");
    }
}

#[test]
fn build_stamps_the_change_time_and_never_goes_back() {
    let mut builder = MetadataBuilder::new(table());
    builder
        .apply(
            &update(json!({"action": "set-properties", "updates": {"a": "b"}})),
            NOW - 10,
        )
        .unwrap();
    assert_eq!(builder.build(NOW - 10).unwrap().last_updated_ms, NOW);
    let builder = MetadataBuilder::new(table());
    assert_eq!(builder.build(NOW + 99).unwrap().last_updated_ms, NOW + 99);
}

#[test]
fn the_metadata_log_keeps_at_most_previous_versions_max_entries() {
    let meta = apply(
        &table(),
        &[
            json!({"action": "set-properties", "updates": {"write.metadata.previous-versions-max": "2"}}),
        ],
    );
    let mut builder = MetadataBuilder::new(meta);
    for n in 0..4 {
        builder.log_previous(format!("{LOCATION}/metadata/0000{n}-x.metadata.json"), n);
    }
    let meta = builder.build(NOW).unwrap();
    let log: Vec<_> = meta.metadata_log.iter().map(|e| e.timestamp_ms).collect();
    assert_eq!(log, vec![2, 3], "the oldest entries go first");
}

// ---- a whole commit as PyIceberg sends it ----

#[test]
fn a_pyiceberg_append_commit_parses_and_applies() {
    let body = json!({
        "requirements": [
            {"type": "assert-table-uuid", "uuid": UUID},
            {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": null}
        ],
        "updates": [
            {"action": "add-snapshot", "snapshot": snapshot(3_051_729_675_574_597_004, None, 1, NOW + 1)},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
             "snapshot-id": 3_051_729_675_574_597_004_i64}
        ]
    });
    let requirements: Vec<TableRequirement> =
        serde_json::from_value(body["requirements"].clone()).unwrap();
    let updates: Vec<TableUpdate> = serde_json::from_value(body["updates"].clone()).unwrap();
    let mut meta = table();
    meta.table_uuid = UUID.parse().unwrap();
    for r in &requirements {
        r.check(Some(&meta)).unwrap();
    }
    let mut builder = MetadataBuilder::new(meta);
    builder.apply_all(&updates, NOW + 2).unwrap();
    let meta = builder.build(NOW + 2).unwrap();
    assert_eq!(meta.current_snapshot_id, Some(3_051_729_675_574_597_004));
    assert_eq!(meta.last_sequence_number, 1);
    // The commit is not the same any more: the same requirements now fail.
    assert!(requirements[1].check(Some(&meta)).is_err());
}

#[test]
fn a_staged_create_commit_builds_a_whole_table_from_blank() {
    // What the Java client and PyIceberg send to finish a create transaction.
    let updates: Vec<TableUpdate> = serde_json::from_value(json!([
        {"action": "assign-uuid", "uuid": UUID},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": schema_json(), "last-column-id": 3},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": day_and_bucket_spec(true)},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": sort_order(1)},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": LOCATION},
        {"action": "set-properties", "updates": {"owner": "ana"}},
        {"action": "add-snapshot", "snapshot": snapshot(1, None, 1, NOW)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 1}
    ]))
    .unwrap();
    TableRequirement::AssertCreate.check(None).unwrap();
    let mut builder = MetadataBuilder::new(pangolin_catalog::iceberg::update::blank(
        String::new(),
        1,
        NOW,
    ));
    builder.apply_all(&updates, NOW).unwrap();
    let meta = builder.build(NOW).unwrap();
    assert_eq!(meta.table_uuid.to_string(), UUID);
    assert_eq!(meta.format_version, 2);
    assert_eq!(
        (
            meta.current_schema_id,
            meta.default_spec_id,
            meta.default_sort_order_id
        ),
        (0, 0, 1)
    );
    assert_eq!(meta.last_partition_id, 1001);
    assert_eq!(meta.current_snapshot_id, Some(1));
}

#[test]
fn a_blank_table_without_schema_is_not_valid() {
    let builder = MetadataBuilder::new(pangolin_catalog::iceberg::update::blank(
        LOCATION.to_owned(),
        2,
        NOW,
    ));
    let err = builder.build(NOW).unwrap_err();
    assert!(
        matches!(err, UpdateError::Invalid(ref m) if m.contains("schema")),
        "{err}"
    );
}

// ---- parsing ----

#[test]
fn every_update_action_parses() {
    let actions = [
        json!({"action": "assign-uuid", "uuid": UUID}),
        json!({"action": "upgrade-format-version", "format-version": 3}),
        json!({"action": "add-schema", "schema": schema_json()}),
        json!({"action": "set-current-schema", "schema-id": 0}),
        json!({"action": "add-spec", "spec": day_and_bucket_spec(true)}),
        json!({"action": "set-default-spec", "spec-id": 0}),
        json!({"action": "add-sort-order", "sort-order": sort_order(1)}),
        json!({"action": "set-default-sort-order", "sort-order-id": 0}),
        add_snapshot(1, None, 1),
        set_ref("main", "branch", 1),
        json!({"action": "remove-snapshots", "snapshot-ids": [1]}),
        json!({"action": "remove-snapshot-ref", "ref-name": "main"}),
        json!({"action": "set-location", "location": LOCATION}),
        json!({"action": "set-properties", "updates": {}}),
        json!({"action": "remove-properties", "removals": []}),
        json!({"action": "set-statistics", "statistics": statistics(1, "s")}),
        json!({"action": "remove-statistics", "snapshot-id": 1}),
        json!({"action": "set-partition-statistics", "partition-statistics": partition_statistics(1, "p")}),
        json!({"action": "remove-partition-statistics", "snapshot-id": 1}),
        json!({"action": "remove-partition-specs", "spec-ids": [1]}),
        json!({"action": "remove-schemas", "schema-ids": [1]}),
        json!({"action": "add-encryption-key", "encryption-key": {"key-id": "k", "encrypted-key-metadata": "AA"}}),
        json!({"action": "remove-encryption-key", "key-id": "k"}),
    ];
    for action in actions {
        let parsed: Result<TableUpdate, _> = serde_json::from_value(action.clone());
        assert!(parsed.is_ok(), "{action}: {}", parsed.unwrap_err());
    }
}

#[test]
fn an_unknown_update_action_fails_to_parse() {
    let err =
        serde_json::from_value::<TableUpdate>(json!({"action": "set-owner", "owner": "mallory"}))
            .unwrap_err();
    assert!(err.to_string().contains("set-owner"), "{err}");
    assert!(serde_json::from_value::<TableUpdate>(json!({"location": LOCATION})).is_err());
}

#[test]
fn an_unknown_field_in_an_update_fails_to_parse() {
    let err = serde_json::from_value::<TableUpdate>(
        json!({"action": "set-location", "location": LOCATION, "overwrite": true}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("overwrite"), "{err}");
}

#[test]
fn a_missing_field_in_an_update_fails_to_parse() {
    assert!(
        serde_json::from_value::<TableUpdate>(json!({"action": "set-current-schema"})).is_err()
    );
    assert!(
        serde_json::from_value::<TableUpdate>(
            json!({"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": 1})
        )
        .is_err(),
        "the ref type is required"
    );
}

#[test]
fn an_unknown_requirement_type_fails_to_parse() {
    let err =
        serde_json::from_value::<TableRequirement>(json!({"type": "assert-owner", "owner": "ana"}))
            .unwrap_err();
    assert!(err.to_string().contains("assert-owner"), "{err}");
}

#[test]
fn an_unknown_field_in_a_requirement_fails_to_parse() {
    let err = serde_json::from_value::<TableRequirement>(
        json!({"type": "assert-current-schema-id", "current-schema-id": 0, "strict": true}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("strict"), "{err}");
}

// ---- requirements ----

/// The table with snapshots, sorted by order 1, partitioned by spec 1, and uuid `UUID`.
fn asserted_table() -> TableMetadata {
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

#[test]
fn every_requirement_holds_on_the_table_it_describes() {
    let meta = asserted_table();
    let holding = [
        json!({"type": "assert-table-uuid", "uuid": UUID}),
        json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}),
        json!({"type": "assert-ref-snapshot-id", "ref": "audit", "snapshot-id": 2}),
        json!({"type": "assert-ref-snapshot-id", "ref": "nightly", "snapshot-id": null}),
        json!({"type": "assert-last-assigned-field-id", "last-assigned-field-id": 4}),
        json!({"type": "assert-current-schema-id", "current-schema-id": 1}),
        json!({"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1001}),
        json!({"type": "assert-default-spec-id", "default-spec-id": 1}),
        json!({"type": "assert-default-sort-order-id", "default-sort-order-id": 1}),
    ];
    for r in holding {
        let check = requirement(r.clone()).check(Some(&meta));
        assert!(check.is_ok(), "{r}: {}", check.unwrap_err());
    }
}

#[test]
fn every_requirement_fails_on_a_table_that_moved() {
    let meta = asserted_table();
    let failing = [
        json!({"type": "assert-create"}),
        json!({"type": "assert-table-uuid", "uuid": "00000000-0000-4000-8000-000000000000"}),
        json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 2}),
        json!({"type": "assert-ref-snapshot-id", "ref": "nightly", "snapshot-id": 1}),
        json!({"type": "assert-last-assigned-field-id", "last-assigned-field-id": 3}),
        json!({"type": "assert-current-schema-id", "current-schema-id": 0}),
        json!({"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 999}),
        json!({"type": "assert-default-spec-id", "default-spec-id": 0}),
        json!({"type": "assert-default-sort-order-id", "default-sort-order-id": 0}),
    ];
    for r in failing {
        assert!(
            requirement(r.clone()).check(Some(&meta)).is_err(),
            "{r} should fail"
        );
    }
}

#[test]
fn assert_ref_snapshot_id_null_fails_when_the_ref_exists() {
    let meta = asserted_table();
    let err =
        requirement(json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": null}))
            .check(Some(&meta))
            .unwrap_err();
    assert!(err.to_string().contains("main"), "{err}");
    // PyIceberg leaves the key out rather than sending null: the same requirement.
    let absent = requirement(json!({"type": "assert-ref-snapshot-id", "ref": "main"}));
    assert_eq!(
        absent,
        TableRequirement::AssertRefSnapshotId {
            reference: "main".to_owned(),
            snapshot_id: None
        }
    );
    assert!(
        absent.check(Some(&table())).is_ok(),
        "a new table has no main"
    );
}

#[test]
fn assert_create_holds_only_when_there_is_no_table() {
    let create = requirement(json!({"type": "assert-create"}));
    assert!(create.check(None).is_ok());
    let err = create.check(Some(&table())).unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
}

#[test]
fn other_requirements_fail_when_there_is_no_table() {
    for r in [
        json!({"type": "assert-table-uuid", "uuid": UUID}),
        json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": null}),
        json!({"type": "assert-current-schema-id", "current-schema-id": 0}),
    ] {
        assert!(requirement(r.clone()).check(None).is_err(), "{r}");
    }
}

// ---- metadata.json ----

#[test]
fn metadata_round_trips_through_json() {
    let mut builder = MetadataBuilder::new(asserted_table());
    builder
        .apply_all(
            &[
                update(set_ref("v1", "tag", 2)),
                update(json!({"action": "set-statistics", "statistics": statistics(1, "s1")})),
                update(json!({"action": "set-partition-statistics", "partition-statistics": partition_statistics(2, "p2")})),
                update(json!({"action": "upgrade-format-version", "format-version": 3})),
                update(json!({"action": "add-encryption-key", "encryption-key": {"key-id": "k", "encrypted-key-metadata": "AA"}})),
            ],
            NOW + 5,
        )
        .unwrap();
    builder.log_previous(format!("{LOCATION}/metadata/00000-a.metadata.json"), NOW);
    let meta = builder.build(NOW + 5).unwrap();

    let text = serde_json::to_string_pretty(&meta).unwrap();
    let back: TableMetadata = serde_json::from_str(&text).unwrap();
    assert_eq!(back, meta);
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["current-snapshot-id"], 1);
    assert_eq!(json["table-uuid"], UUID);
    assert_eq!(json["refs"]["v1"], json!({"snapshot-id": 2, "type": "tag"}));
    assert_eq!(json["metadata-log"][0]["timestamp-ms"], NOW);
}

#[test]
fn a_table_without_snapshots_writes_current_snapshot_id_minus_one() {
    let meta = table();
    let json = serde_json::to_value(&meta).unwrap();
    assert_eq!(json["current-snapshot-id"], -1);
    assert_eq!(json["snapshots"], json!([]));
    assert!(json.get("next-row-id").is_none(), "v2 has no row lineage");
    assert!(json.get("encryption-keys").is_none());
    let back: TableMetadata = serde_json::from_value(json).unwrap();
    assert_eq!(back, meta);
    assert_eq!(back.current_snapshot_id, None);
}

#[test]
fn a_java_written_v1_file_keeps_the_fields_this_server_does_not_interpret() {
    let text = json!({
        "format-version": 1,
        "table-uuid": UUID,
        "location": "s3://bucket/wh/db/legacy",
        "last-updated-ms": NOW,
        "last-column-id": 3,
        "schema": schema_json(),
        "schemas": [schema_json()],
        "current-schema-id": 0,
        "partition-spec": [],
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "default-spec-id": 0,
        "last-partition-id": 999,
        "properties": {"owner": "ana"},
        "current-snapshot-id": 5,
        "snapshots": [{
            "snapshot-id": 5, "timestamp-ms": NOW,
            "summary": {"operation": "append"},
            "manifests": ["s3://bucket/wh/db/legacy/metadata/m0.avro"]
        }],
        "snapshot-log": [{"snapshot-id": 5, "timestamp-ms": NOW}],
        "metadata-log": [],
        "sort-orders": [{"order-id": 0, "fields": []}],
        "default-sort-order-id": 0
    })
    .to_string();
    let meta: TableMetadata = serde_json::from_str(&text).unwrap();
    meta.validate().unwrap();
    assert_eq!(meta.last_sequence_number, 0, "v1 has none");
    assert_eq!(meta.current_snapshot_id, Some(5));
    assert!(meta.refs.is_empty());
    let out = serde_json::to_value(&meta).unwrap();
    assert_eq!(out["schema"], schema_json());
    assert_eq!(out["partition-spec"], json!([]));
    assert_eq!(
        out["snapshots"][0]["manifests"][0],
        "s3://bucket/wh/db/legacy/metadata/m0.avro"
    );
    let back: TableMetadata = serde_json::from_value(out).unwrap();
    assert_eq!(back, meta);
}

#[test]
fn a_file_without_refs_has_main_at_its_current_snapshot() {
    let mut meta: TableMetadata = serde_json::from_value(json!({
        "format-version": 1, "table-uuid": UUID, "location": LOCATION,
        "last-updated-ms": NOW, "last-column-id": 3,
        "schemas": [schema_json()], "current-schema-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}], "default-spec-id": 0,
        "last-partition-id": 999,
        "current-snapshot-id": 5,
        "snapshots": [{"snapshot-id": 5, "timestamp-ms": NOW, "summary": {"operation": "append"}}],
        "sort-orders": [{"order-id": 0, "fields": []}], "default-sort-order-id": 0
    }))
    .unwrap();
    meta.ensure_main_ref();
    let main = &meta.refs["main"];
    assert_eq!((main.snapshot_id, main.kind), (5, RefType::Branch));
    requirement(json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 5}))
        .check(Some(&meta))
        .unwrap();
    assert_eq!(meta.with_referenced_snapshots_only().snapshots.len(), 1);
}

#[test]
fn ensure_main_ref_leaves_an_existing_main_and_a_table_without_snapshots_alone() {
    let mut meta = apply(
        &table_with_snapshots(),
        &[set_ref("main", "branch", 2), set_ref("main", "branch", 1)],
    );
    meta.refs.get_mut("main").unwrap().min_snapshots_to_keep = Some(4);
    let before = meta.clone();
    meta.ensure_main_ref();
    assert_eq!(meta, before);
    let mut empty = table();
    empty.ensure_main_ref();
    assert!(empty.refs.is_empty());
}

#[test]
fn metadata_pointing_at_missing_ids_is_not_valid() {
    let mut meta = table_with_snapshots();
    meta.refs.get_mut("audit").unwrap().snapshot_id = 9;
    assert!(meta.validate().unwrap_err().contains("audit"));
    let mut meta = table();
    meta.default_spec_id = 4;
    assert!(meta.validate().is_err());
    let mut meta = table();
    meta.current_snapshot_id = Some(1);
    assert!(meta.validate().is_err());
}

#[test]
fn version_one_metadata_carries_the_single_schema_and_spec_fields() {
    let v1 = serde_json::to_value(table_with(1, None)).unwrap();
    assert_eq!(v1["schema"]["schema-id"], 0);
    assert_eq!(v1["schema"]["fields"][0]["name"], "id");
    assert_eq!(v1["partition-spec"], json!([]));

    let upgraded = apply(
        &table_with(1, None),
        &[json!({"action": "upgrade-format-version", "format-version": 2})],
    );
    let v2 = serde_json::to_value(upgraded).unwrap();
    assert!(v2.get("schema").is_none(), "{v2}");
    assert!(v2.get("partition-spec").is_none(), "{v2}");
}
