//! Partition specs and sort orders: adding them (ids, partition field ids, reuse of an identical
//! one), choosing the default, and removing partition specs no longer in use.
#![allow(clippy::unwrap_used)]

mod common;

use common::metadata::*;

// ---- partition specs ----

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

// ---- sort orders ----

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
