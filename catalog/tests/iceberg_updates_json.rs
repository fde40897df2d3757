//! The JSON of the metadata model: updates and requirements as clients send them, parsed
//! strictly, and `metadata.json` as this server writes it and as other writers (the Java client,
//! v1 files without refs) left it, read back without losing anything.
#![allow(clippy::unwrap_used)]

mod common;

use common::metadata::*;

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
