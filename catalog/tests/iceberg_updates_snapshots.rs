//! Snapshots and the refs that point at them: adding snapshots (sequence numbers, v3 row
//! lineage), moving, tagging and removing refs, the snapshot log, removing snapshots, and the
//! table and partition statistics kept per snapshot.
#![allow(clippy::unwrap_used)]

mod common;

use common::metadata::*;

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

// ---- statistics ----

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
