//! A table's metadata as it is first made: from a create request by `new_table_metadata`, or
//! from blank by the updates of a staged create. Also the two updates that say what a table is
//! rather than what it holds, its uuid and its format version.
#![allow(clippy::unwrap_used)]

mod common;

use common::metadata::*;

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

// ---- a staged create, from blank ----

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
