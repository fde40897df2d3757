//! Merges that look inside an Iceberg table changed on both branches: appends on both sides
//! merge into one new snapshot whose manifest list names both sides' manifests, the source's
//! property changes apply, a dry run writes nothing, and changes that do not commute stay
//! conflicts that say which change overlaps.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use apache_avro::types::Value as Avro;
use apache_avro::{Schema as AvroSchema, Writer};
use common::files::manifest_of;
use common::lake::*;
use pangolin_catalog::iceberg::manifest_list::ManifestList;
use pangolin_catalog::{HistoryRequest, MergeReport, TableMergeMode};
use pangolin_merge::{ConflictKind, MergeOptions, MergeOutcome};
use proptest::prelude::*;

const LIST: &str = r#"{"type": "record", "name": "manifest_file", "fields": [
    {"name": "manifest_path", "type": "string", "field-id": 500},
    {"name": "manifest_length", "type": "long", "field-id": 501},
    {"name": "partition_spec_id", "type": "int", "field-id": 502},
    {"name": "content", "type": "int", "field-id": 517},
    {"name": "sequence_number", "type": "long", "field-id": 515},
    {"name": "min_sequence_number", "type": "long", "field-id": 516},
    {"name": "added_snapshot_id", "type": "long", "field-id": 503},
    {"name": "added_files_count", "type": "int", "field-id": 504},
    {"name": "existing_files_count", "type": "int", "field-id": 505},
    {"name": "deleted_files_count", "type": "int", "field-id": 506},
    {"name": "added_rows_count", "type": "long", "field-id": 512},
    {"name": "existing_rows_count", "type": "long", "field-id": 513},
    {"name": "deleted_rows_count", "type": "long", "field-id": 514}
]}"#;

/// One manifest of a list: its path, the snapshot that added it and that snapshot's sequence
/// number.
type Manifest = (String, i64, i64);

fn list_bytes(manifests: &[Manifest]) -> Vec<u8> {
    let schema = AvroSchema::parse_str(LIST).unwrap();
    let mut writer = Writer::new(&schema, Vec::new());
    writer
        .add_user_metadata("format-version".into(), "2")
        .unwrap();
    for (path, added_by, sequence) in manifests {
        writer
            .append(Avro::Record(vec![
                ("manifest_path".into(), Avro::String(path.clone())),
                ("manifest_length".into(), Avro::Long(100)),
                ("partition_spec_id".into(), Avro::Int(0)),
                ("content".into(), Avro::Int(0)),
                ("sequence_number".into(), Avro::Long(*sequence)),
                ("min_sequence_number".into(), Avro::Long(*sequence)),
                ("added_snapshot_id".into(), Avro::Long(*added_by)),
                ("added_files_count".into(), Avro::Int(1)),
                ("existing_files_count".into(), Avro::Int(0)),
                ("deleted_files_count".into(), Avro::Int(0)),
                ("added_rows_count".into(), Avro::Long(10)),
                ("existing_rows_count".into(), Avro::Long(0)),
                ("deleted_rows_count".into(), Avro::Long(0)),
            ]))
            .unwrap();
    }
    writer.into_inner().unwrap()
}

/// Appends snapshot `id` (an `operation` of 10 rows in one file) on top of the table's
/// current snapshot on `at`, its manifest list naming `earlier` manifests and its own.
async fn snapshot(
    lake: &Lake,
    at: &Reference,
    id: i64,
    operation: &str,
    earlier: &[Manifest],
) -> Vec<Manifest> {
    let table = lake
        .catalog
        .load_table(&RefSpec::Named(at.name.clone()), &key("db.orders"))
        .await
        .unwrap();
    let table_meta = &table.metadata;
    let parent = table_meta.current_snapshot_id;
    let sequence = table_meta.last_sequence_number + 1;
    let total: u64 = table_meta
        .current_snapshot()
        .and_then(|s| s.summary.get("total-records"))
        .map_or(0, |t| t.parse().unwrap());
    let mut manifests = earlier.to_vec();
    let manifest = format!("{}/metadata/m-{id}.avro", table_meta.location);
    let data = format!("{}/data/{id}.parquet", table_meta.location);
    std::fs::create_dir_all(local(&manifest).parent().unwrap()).unwrap();
    std::fs::write(local(&manifest), manifest_of(&[data])).unwrap();
    manifests.push((manifest, id, sequence));
    let list = format!("{}/metadata/snap-{id}.avro", table_meta.location);
    std::fs::create_dir_all(local(&list).parent().unwrap()).unwrap();
    std::fs::write(local(&list), list_bytes(&manifests)).unwrap();
    let mut snapshot = json!({
        "snapshot-id": id, "sequence-number": sequence,
        "timestamp-ms": Timestamp::now().as_millis(), "manifest-list": list,
        "summary": {"operation": operation, "added-records": "10", "added-data-files": "1",
                    "total-records": (total + 10).to_string(), "total-data-files": "1"},
        "schema-id": 0
    });
    if let Some(parent) = parent {
        snapshot["parent-snapshot-id"] = json!(parent);
    }
    lake.catalog
        .commit_table(
            at,
            &key("db.orders"),
            vec![],
            vec![
                update(json!({"action": "add-snapshot", "snapshot": snapshot})),
                update(
                    json!({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                    "snapshot-id": id}),
                ),
            ],
            &meta("write"),
        )
        .await
        .unwrap();
    manifests
}

async fn set_property(lake: &Lake, at: &Reference, key_: &str, value: &str) {
    lake.catalog
        .commit_table(
            at,
            &key("db.orders"),
            vec![],
            vec![update(
                json!({"action": "set-properties", "updates": {key_: value}}),
            )],
            &meta("props"),
        )
        .await
        .unwrap();
}

/// main and dev both appended to `db.orders` after snapshot 1; dev also set a property.
async fn diverged() -> (Lake, Vec<Manifest>, Vec<Manifest>) {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.orders").await;
    let base = snapshot(&lake, &main(), 1, "append", &[]).await;
    new_branch(&lake.catalog, "dev", "main").await;
    let ours = snapshot(&lake, &main(), 2, "append", &base).await;
    let theirs = snapshot(&lake, &branch("dev"), 3, "append", &base).await;
    set_property(&lake, &branch("dev"), "owner", "etl").await;
    (lake, ours, theirs)
}

async fn merge(lake: &Lake, mode: TableMergeMode, dry_run: bool) -> MergeReport {
    lake.catalog
        .merge_with(
            &spec("dev"),
            &spec("main"),
            &MergeOptions {
                dry_run,
                ..MergeOptions::default()
            },
            mode,
            &HistoryRequest {
                principal: "ana".into(),
                message: None,
                expected_head: None,
            },
        )
        .await
        .unwrap()
}

fn conflict_of(report: &MergeReport) -> &pangolin_merge::Conflict {
    match &report.landed.outcome {
        MergeOutcome::Conflicted { conflicts, .. } => &conflicts[0],
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[tokio::test]
async fn appends_on_both_branches_merge_into_one_snapshot_naming_both_sides_manifests() {
    let (lake, ours, theirs) = diverged().await;
    let report = merge(&lake, TableMergeMode::Auto, false).await;
    assert!(
        matches!(
            report.landed.outcome,
            MergeOutcome::Merged {
                commit: Some(_),
                ..
            }
        ),
        "{:?}",
        report.landed.outcome
    );
    assert_eq!(report.tables.len(), 1);
    assert!(
        report.tables[0].plan[0].contains("1 appended snapshot"),
        "{:?}",
        report.tables
    );

    let merged = lake
        .catalog
        .load_table(&spec("main"), &key("db.orders"))
        .await
        .unwrap()
        .metadata;
    let ids: Vec<i64> = merged.snapshots.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(ids[..2], [1, 2], "the target's snapshots, then the new one");
    assert_eq!(ids.len(), 3);
    let new = merged.current_snapshot().unwrap();
    assert_eq!(new.parent_snapshot_id, Some(2));
    assert_eq!(new.sequence_number, 3);
    assert_eq!(merged.last_sequence_number, 3);
    assert_eq!(new.summary["operation"], "append");
    assert_eq!(new.summary["added-records"], "10");
    assert_eq!(new.summary["total-records"], "30");
    assert_eq!(new.summary["pangolin.merged-snapshots"], "3");
    assert_eq!(merged.properties["owner"], "etl");
    assert_eq!(
        merged.snapshot_log.last().unwrap().snapshot_id,
        new.snapshot_id
    );

    let list =
        ManifestList::read(&std::fs::read(local(new.manifest_list.as_deref().unwrap())).unwrap())
            .unwrap();
    assert_eq!(list.len(), 3);
    let bytes = std::fs::read(local(new.manifest_list.as_deref().unwrap())).unwrap();
    let read = apache_avro::Reader::new(bytes.as_slice()).unwrap();
    let entries: Vec<(String, i64, i64)> = read
        .map(|v| {
            let Avro::Record(fields) = v.unwrap() else {
                panic!()
            };
            let get = |name: &str| fields.iter().find(|(n, _)| n == name).unwrap().1.clone();
            let (Avro::String(path), Avro::Long(by), Avro::Long(seq)) = (
                get("manifest_path"),
                get("added_snapshot_id"),
                get("sequence_number"),
            ) else {
                panic!()
            };
            (path, by, seq)
        })
        .collect();
    assert_eq!(entries[..2], ours[..], "ours as they were");
    let (copy, added_by, sequence) = &entries[2];
    assert_eq!(
        (*added_by, *sequence),
        (new.snapshot_id, 3),
        "theirs re-stamped"
    );
    assert_ne!(copy, &theirs[1].0, "a copy of the source's manifest");
    // The copy names the new snapshot in its entries; the source's own is untouched.
    let snapshot_ids = |path: &str| -> Vec<Option<i64>> {
        let bytes = std::fs::read(local(path)).unwrap();
        apache_avro::Reader::new(bytes.as_slice())
            .unwrap()
            .map(|v| {
                let Avro::Record(fields) = v.unwrap() else {
                    panic!()
                };
                match &fields.iter().find(|(n, _)| n == "snapshot_id").unwrap().1 {
                    Avro::Union(_, inner) => match inner.as_ref() {
                        Avro::Long(id) => Some(*id),
                        _ => None,
                    },
                    _ => None,
                }
            })
            .collect()
    };
    assert!(
        snapshot_ids(copy)
            .iter()
            .all(|id| *id == Some(new.snapshot_id))
    );
    assert!(snapshot_ids(&theirs[1].0).iter().all(Option::is_none));
}

#[tokio::test]
async fn without_auto_or_in_a_dry_run_nothing_is_written() {
    let (lake, _, _) = diverged().await;
    let main_before = head(&lake.catalog, "main").await;
    let off = merge(&lake, TableMergeMode::Off, false).await;
    assert_eq!(conflict_of(&off).kind, ConflictKind::BothModified);
    let location = lake
        .catalog
        .load_table(&spec("main"), &key("db.orders"))
        .await
        .unwrap()
        .metadata
        .location
        .clone();
    let files_before: BTreeSet<String> = metadata_files(&location).into_iter().collect();
    let dry = merge(&lake, TableMergeMode::Auto, true).await;
    assert!(matches!(
        dry.landed.outcome,
        MergeOutcome::Merged { commit: None, .. }
    ));
    assert_eq!(dry.tables.len(), 1);
    assert!(
        dry.tables[0].plan.iter().any(|p| p.contains("owner")),
        "{:?}",
        dry.tables
    );
    assert_eq!(head(&lake.catalog, "main").await, main_before);
    let files_after: BTreeSet<String> = metadata_files(&location).into_iter().collect();
    assert_eq!(files_before, files_after, "a dry run writes no file");
}

#[tokio::test]
async fn changes_that_do_not_commute_stay_conflicts_saying_which() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.orders").await;
    let base = snapshot(&lake, &main(), 1, "append", &[]).await;
    new_branch(&lake.catalog, "dev", "main").await;
    snapshot(&lake, &main(), 2, "append", &base).await;
    snapshot(&lake, &branch("dev"), 3, "overwrite", &base).await;
    let main_before = head(&lake.catalog, "main").await;
    let report = merge(&lake, TableMergeMode::Auto, false).await;
    let conflict = conflict_of(&report);
    assert_eq!(conflict.kind, ConflictKind::TableChangesOverlap);
    assert_eq!(
        conflict.detail.as_deref(),
        Some("the source's snapshot 3 is an `overwrite`, not an append")
    );
    assert_eq!(head(&lake.catalog, "main").await, main_before);

    // A property both sides set differently overlaps too.
    set_property(&lake, &main(), "owner", "a").await;
    set_property(&lake, &branch("dev"), "owner", "b").await;
    let lake_report = merge(&lake, TableMergeMode::Auto, false).await;
    assert_eq!(
        conflict_of(&lake_report).kind,
        ConflictKind::TableChangesOverlap
    );
}

#[tokio::test]
async fn a_merge_request_in_a_catalog_that_merges_tables_lands_the_merged_table() {
    use pangolin_catalog::merge_requests::{
        MergeRequests, NewMergeRequest, NoExternalChecks, RequestState, Verdict,
    };
    use pangolin_catalog::tenancy::Name;

    let (lake, _, _) = diverged().await;
    let catalog = lake.catalog.clone().with_table_merge(TableMergeMode::Auto);
    let requests = MergeRequests::new(catalog.store().clone());
    let names = (
        Name::new("tenant", "acme").unwrap(),
        Name::new("catalog", "lake").unwrap(),
    );
    let opened = requests
        .create(
            &names.0,
            &names.1,
            NewMergeRequest {
                title: "more orders".into(),
                description: None,
                source: RefName::new("dev").unwrap(),
                target: RefName::new("main").unwrap(),
            },
            "ana",
            Timestamp::now(),
        )
        .await
        .unwrap();
    let checked = requests
        .run_checks(
            &catalog,
            (&names.0, &names.1),
            opened.value.number,
            "ana",
            &NoExternalChecks,
        )
        .await
        .unwrap();
    assert_eq!(checked.value.checks.unwrap().verdict, Verdict::Passed);
    let merged = requests
        .merge(
            &catalog,
            (&names.0, &names.1),
            opened.value.number,
            "ana",
            None,
            &NoExternalChecks,
        )
        .await
        .unwrap();
    assert_eq!(merged.value.state, RequestState::Merged);
    let table = catalog
        .load_table(&spec("main"), &key("db.orders"))
        .await
        .unwrap()
        .metadata;
    assert_eq!(table.snapshots.len(), 3);
    assert_eq!(
        table.current_snapshot().unwrap().summary["total-records"],
        "30"
    );
    // A catalog merges tables by default when its `table-merge` property says so.
    assert_eq!(
        TableMergeMode::of_catalog(&BTreeMap::from([("table-merge".into(), "auto".into())])),
        TableMergeMode::Auto
    );
    assert_eq!(
        TableMergeMode::of_catalog(&BTreeMap::new()),
        TableMergeMode::Off
    );
}

/// One branch's writes to the table after the fork: appends (each of 10 rows), then maybe a
/// property.
#[derive(Debug, Clone)]
struct Side {
    appends: usize,
    property: Option<(&'static str, &'static str)>,
}

fn side() -> impl Strategy<Value = Side> {
    (
        0..3usize,
        prop::option::of(prop::sample::select(vec![
            ("owner", "a"),
            ("owner", "b"),
            ("tier", "gold"),
        ])),
    )
        .prop_map(|(appends, property)| Side { appends, property })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever each branch appended, the merged table holds every row of both sides once
    /// (its summary counts them, its manifest list names each side's manifests once) and
    /// keeps the target's snapshots; a property both set differently is the only overlap.
    #[test]
    fn appends_on_two_branches_always_merge_into_every_row(ours in side(), theirs in side()) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let lake = lake().await;
                create(&lake.catalog, &main(), "db.orders").await;
                let base = snapshot(&lake, &main(), 1, "append", &[]).await;
                new_branch(&lake.catalog, "dev", "main").await;
                let mut ours_manifests = base.clone();
                for i in 0..ours.appends {
                    ours_manifests = snapshot(&lake, &main(), 10 + i as i64, "append", &ours_manifests).await;
                }
                let mut theirs_manifests = base.clone();
                for i in 0..theirs.appends {
                    theirs_manifests =
                        snapshot(&lake, &branch("dev"), 20 + i as i64, "append", &theirs_manifests).await;
                }
                if let Some((k, v)) = ours.property {
                    set_property(&lake, &main(), k, v).await;
                }
                if let Some((k, v)) = theirs.property {
                    set_property(&lake, &branch("dev"), k, v).await;
                }
                let overlap = matches!((ours.property, theirs.property),
                    (Some((a, x)), Some((b, y))) if a == b && x != y);
                let report = merge(&lake, TableMergeMode::Auto, false).await;
                if overlap {
                    prop_assert_eq!(conflict_of(&report).kind, ConflictKind::TableChangesOverlap);
                    return Ok(());
                }
                prop_assert!(
                    !matches!(report.landed.outcome, MergeOutcome::Conflicted { .. }),
                    "{:?}", report.landed.outcome
                );
                let merged = lake
                    .catalog
                    .load_table(&spec("main"), &key("db.orders"))
                    .await
                    .unwrap()
                    .metadata;
                let rows = 10 * (1 + ours.appends + theirs.appends);
                let current = merged.current_snapshot().unwrap();
                prop_assert_eq!(&current.summary["total-records"], &rows.to_string());
                // Without a commit of its own on main, the merge fast-forwards to dev's table.
                let fast_forward = ours.appends == 0 && ours.property.is_none();
                let expected_snapshots = if fast_forward {
                    1 + theirs.appends
                } else {
                    1 + ours.appends + usize::from(theirs.appends > 0)
                };
                prop_assert_eq!(merged.snapshots.len(), expected_snapshots);
                let bytes = std::fs::read(local(current.manifest_list.as_deref().unwrap())).unwrap();
                let list = ManifestList::read(&bytes).unwrap();
                prop_assert_eq!(list.len(), 1 + ours.appends + theirs.appends);
                if let Some((k, v)) = theirs.property {
                    prop_assert_eq!(merged.properties.get(k).map(String::as_str), Some(v));
                }
                Ok(())
            })?;
    }
}
