//! Schema updates: `add-schema` (ids, reuse of an identical schema, the last column id),
//! `set-current-schema` and `remove-schemas`.
#![allow(clippy::unwrap_used)]

mod common;

use common::metadata::*;

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
