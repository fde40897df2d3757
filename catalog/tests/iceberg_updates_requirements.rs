//! Commit requirements checked against the table they describe, against a table that moved
//! since, and when there is no table; and a whole append commit as PyIceberg sends it, whose
//! requirements hold before it applies and fail after.
#![allow(clippy::unwrap_used)]

mod common;

use common::metadata::*;

// ---- requirements ----

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
