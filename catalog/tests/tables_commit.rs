//! Commits to Iceberg tables through `Catalog`: updates and requirements, staged creates,
//! concurrent writers (memory and SQLite) and multi-table commits.
#![allow(clippy::unwrap_used)]

mod common;

use common::lake::*;

// ---- commits ----

#[tokio::test]
async fn commits_number_metadata_files_and_grow_the_metadata_log() {
    let lake = lake().await;
    let created = create(&lake.catalog, &main(), "db.events").await;
    let first_file = created.metadata_location.clone().unwrap();
    let (_, one) = append(&lake.catalog, &main(), "db.events", 1, None, 1)
        .await
        .unwrap();
    let second_file = one.metadata_location.clone().unwrap();
    let (_, two) = append(&lake.catalog, &main(), "db.events", 2, Some(1), 2)
        .await
        .unwrap();
    let third_file = two.metadata_location.clone().unwrap();

    let location = &created.metadata.location;
    assert!(
        second_file.starts_with(&format!("{location}/metadata/00001-")),
        "{second_file}"
    );
    assert!(
        third_file.starts_with(&format!("{location}/metadata/00002-")),
        "{third_file}"
    );
    assert_eq!(
        metadata_files(location),
        vec![
            file_name(&first_file).to_owned(),
            file_name(&second_file).to_owned(),
            file_name(&third_file).to_owned()
        ]
    );

    let log: Vec<_> = two
        .metadata
        .metadata_log
        .iter()
        .map(|e| (e.metadata_file.clone(), e.timestamp_ms))
        .collect();
    assert_eq!(
        log,
        vec![
            (first_file, created.metadata.last_updated_ms),
            (second_file, one.metadata.last_updated_ms)
        ]
    );
    assert_eq!(two.metadata.current_snapshot_id, Some(2));
    assert_eq!(two.metadata.snapshots.len(), 2);
    assert_eq!(two.metadata.last_sequence_number, 2);
    assert_eq!(two.content_id, created.content_id, "same table throughout");

    let loaded = lake
        .catalog
        .load_table(&spec("main"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(loaded.metadata, two.metadata);
}

#[tokio::test]
async fn a_commit_records_the_snapshot_in_the_catalog_log() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.events").await;
    let (committed, _) = append(&lake.catalog, &main(), "db.events", 77, None, 1)
        .await
        .unwrap();
    let commit = lake.catalog.odb().commit(&committed.commit).await.unwrap();
    assert_eq!(commit.properties["iceberg.snapshot-id"], "77");
    assert_eq!(commit.properties["iceberg.summary.operation"], "append");
}

#[tokio::test]
async fn a_failing_requirement_changes_nothing() {
    let lake = lake().await;
    let created = create(&lake.catalog, &main(), "db.events").await;
    append(&lake.catalog, &main(), "db.events", 1, None, 1)
        .await
        .unwrap();
    let head_before = head(&lake.catalog, "main").await;
    let files_before = metadata_files(&created.metadata.location);

    // A writer that still thinks the table has no snapshot.
    let err = append(&lake.catalog, &main(), "db.events", 2, None, 2)
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::RequirementFailed(_))),
        "{err}"
    );
    assert_eq!(
        head(&lake.catalog, "main").await,
        head_before,
        "no new commit"
    );
    assert_eq!(
        metadata_files(&created.metadata.location),
        files_before,
        "no new metadata file"
    );
    let loaded = lake
        .catalog
        .load_table(&spec("main"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(loaded.metadata.current_snapshot_id, Some(1));
}

#[tokio::test]
async fn every_requirement_is_checked_on_commit() {
    let lake = lake().await;
    let created = create(&lake.catalog, &main(), "db.events").await;
    let uuid = created.metadata.table_uuid.to_string();
    let set_owner = || {
        vec![update(
            json!({"action": "set-properties", "updates": {"owner": "bo"}}),
        )]
    };
    let err = lake
        .catalog
        .commit_table(
            &main(),
            &key("db.events"),
            vec![
                requirement(json!({"type": "assert-table-uuid", "uuid": uuid})),
                requirement(json!({"type": "assert-current-schema-id", "current-schema-id": 1})),
            ],
            set_owner(),
            &meta("props"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::RequirementFailed(ref e)) if e.to_string().contains("schema")),
        "{err}"
    );
    let (_, table) = lake
        .catalog
        .commit_table(
            &main(),
            &key("db.events"),
            vec![
                requirement(json!({"type": "assert-table-uuid", "uuid": uuid})),
                requirement(json!({"type": "assert-current-schema-id", "current-schema-id": 0})),
            ],
            set_owner(),
            &meta("props"),
        )
        .await
        .unwrap();
    assert_eq!(table.metadata.properties["owner"], "bo");
}

#[tokio::test]
async fn an_update_that_cannot_apply_is_refused_and_changes_nothing() {
    let lake = lake().await;
    let created = create(&lake.catalog, &main(), "db.events").await;
    let head_before = head(&lake.catalog, "main").await;
    let err = lake
        .catalog
        .commit_table(
            &main(),
            &key("db.events"),
            Vec::new(),
            vec![update(
                json!({"action": "set-current-schema", "schema-id": 9}),
            )],
            &meta("schema"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CommitError::Rejected(TableError::Update(UpdateError::Unknown { id: 9, .. }))
        ),
        "{err}"
    );
    assert_eq!(head(&lake.catalog, "main").await, head_before);
    assert_eq!(metadata_files(&created.metadata.location).len(), 1);
}

#[tokio::test]
async fn a_commit_to_a_missing_table_is_refused() {
    let lake = lake().await;
    let err = append(&lake.catalog, &main(), "db.missing", 1, None, 1)
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::NotFound(ref k)) if *k == key("db.missing")),
        "{err}"
    );
}

// ---- staged create ----

/// What PyIceberg and Java send to finish a create transaction, from the staged metadata.
fn staged_create_updates(staged: &pangolin_catalog::iceberg::TableMetadata) -> Vec<TableUpdate> {
    let schema = serde_json::to_value(staged.current_schema().unwrap()).unwrap();
    let spec = serde_json::to_value(staged.spec(staged.default_spec_id).unwrap()).unwrap();
    let order =
        serde_json::to_value(staged.sort_order(staged.default_sort_order_id).unwrap()).unwrap();
    let mut updates: Vec<TableUpdate> = serde_json::from_value(json!([
        {"action": "assign-uuid", "uuid": staged.table_uuid},
        {"action": "upgrade-format-version", "format-version": staged.format_version},
        {"action": "add-schema", "schema": schema},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": spec},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": order},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": staged.location},
        {"action": "set-properties", "updates": {"owner": "ana"}}
    ]))
    .unwrap();
    updates.extend(append_updates(1, None, 1));
    updates
}

#[tokio::test]
async fn a_staged_create_lands_when_committed_with_assert_create() {
    let lake = lake().await;
    let staged = lake
        .catalog
        .prepare_table(&main(), &key("db.events"), new_table())
        .await
        .unwrap();
    assert!(
        !lake
            .catalog
            .table_exists(&spec("main"), &key("db.events"))
            .await
            .unwrap(),
        "staging commits nothing"
    );
    assert!(
        metadata_files(&staged.location).is_empty(),
        "and writes nothing"
    );

    let (_, table) = lake
        .catalog
        .commit_table(
            &main(),
            &key("db.events"),
            vec![TableRequirement::AssertCreate],
            staged_create_updates(&staged),
            &meta("create"),
        )
        .await
        .unwrap();
    assert_eq!(table.metadata.table_uuid, staged.table_uuid);
    assert_eq!(table.metadata.location, staged.location);
    assert_eq!(table.metadata.current_snapshot_id, Some(1));
    assert_eq!(table.metadata.properties["owner"], "ana");
    assert!(table.metadata.metadata_log.is_empty());
    let file = table.metadata_location.clone().unwrap();
    assert!(
        file.starts_with(&format!("{}/metadata/00000-", staged.location)),
        "{file}"
    );
    let loaded = lake
        .catalog
        .load_table(&spec("main"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(loaded.metadata, table.metadata);
    assert_eq!(loaded.content_id, table.content_id);
}

#[tokio::test]
async fn a_staged_create_without_a_location_gets_the_default_one() {
    let lake = lake().await;
    let staged = lake
        .catalog
        .prepare_table(&main(), &key("db.events"), new_table())
        .await
        .unwrap();
    let updates: Vec<TableUpdate> = staged_create_updates(&staged)
        .into_iter()
        .filter(|u| !matches!(u, TableUpdate::SetLocation { .. }))
        .collect();
    let (_, table) = lake
        .catalog
        .commit_table(
            &main(),
            &key("db.events"),
            vec![TableRequirement::AssertCreate],
            updates,
            &meta("create"),
        )
        .await
        .unwrap();
    let expected = format!(
        "file://{}/db/events-{}",
        lake.root().display(),
        staged.table_uuid.simple()
    );
    assert_eq!(table.metadata.location, expected);
    assert_eq!(metadata_files(&expected).len(), 1);
}

#[tokio::test]
async fn a_staged_create_of_a_name_taken_meanwhile_is_refused() {
    let lake = lake().await;
    let staged = lake
        .catalog
        .prepare_table(&main(), &key("db.events"), new_table())
        .await
        .unwrap();
    create(&lake.catalog, &main(), "db.events").await;
    let head_before = head(&lake.catalog, "main").await;
    let err = lake
        .catalog
        .commit_table(
            &main(),
            &key("db.events"),
            vec![TableRequirement::AssertCreate],
            staged_create_updates(&staged),
            &meta("create"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CommitError::Rejected(
                TableError::AlreadyExists { .. } | TableError::RequirementFailed(_)
            )
        ),
        "{err}"
    );
    assert_eq!(head(&lake.catalog, "main").await, head_before);
}

#[tokio::test]
async fn staging_in_a_missing_namespace_or_on_a_taken_name_is_refused() {
    let lake = lake().await;
    let err = lake
        .catalog
        .prepare_table(&main(), &key("nope.t"), new_table())
        .await
        .unwrap_err();
    assert!(matches!(err, TableError::NamespaceNotFound(_)), "{err}");
    create(&lake.catalog, &main(), "db.t").await;
    let err = lake
        .catalog
        .prepare_table(&main(), &key("db.t"), new_table())
        .await
        .unwrap_err();
    assert!(matches!(err, TableError::AlreadyExists { .. }), "{err}");
}

// ---- concurrent commits ----

/// Two writers appending to two tables of one branch: every commit lands, none is refused, and
/// a commit rebased past the other table's change writes no second metadata file.
async fn writers_to_different_tables_all_land(lake: Lake) {
    create(&lake.catalog, &main(), "db.a").await;
    create(&lake.catalog, &main(), "db.b").await;
    let start = head(&lake.catalog, "main").await;
    const APPENDS: i64 = 4;
    let mut tasks = tokio::task::JoinSet::new();
    for name in ["db.a", "db.b"] {
        let catalog = lake.catalog.clone();
        tasks.spawn(async move {
            for n in 1..=APPENDS {
                let parent = (n > 1).then_some(n - 1);
                append(&catalog, &main(), name, n, parent, n).await.unwrap();
            }
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap();
    }
    for name in ["db.a", "db.b"] {
        let table = lake
            .catalog
            .load_table(&spec("main"), &key(name))
            .await
            .unwrap();
        assert_eq!(table.metadata.current_snapshot_id, Some(APPENDS), "{name}");
        assert_eq!(table.metadata.snapshots.len(), 4, "{name}");
        assert_eq!(table.metadata.metadata_log.len(), 4, "{name}");
        let files = metadata_files(&table.metadata.location);
        let numbers: Vec<&str> = files.iter().map(|f| &f[..5]).collect();
        assert_eq!(
            numbers,
            vec!["00000", "00001", "00002", "00003", "00004"],
            "{name}: one file per landed commit"
        );
    }
    // Eight commits on top of the two creates.
    let back = lake
        .catalog
        .resolve(&spec(&format!("main~{}", 2 * APPENDS)))
        .await
        .unwrap();
    assert_eq!(back.commit, start);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_to_different_tables_all_land() {
    writers_to_different_tables_all_land(lake().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_to_different_tables_all_land_on_sqlite() {
    writers_to_different_tables_all_land(sqlite_lake().await).await;
}

/// Writers that all saw the table at snapshot 1 append to it at once: exactly one lands, every
/// other is told its requirement failed, and only the one that landed wrote a metadata file.
async fn writers_asserting_the_same_snapshot_let_one_win(lake: Lake) {
    create(&lake.catalog, &main(), "db.events").await;
    let (_, base) = append(&lake.catalog, &main(), "db.events", 1, None, 1)
        .await
        .unwrap();
    let start = head(&lake.catalog, "main").await;
    const WRITERS: i64 = 6;
    let mut tasks = tokio::task::JoinSet::new();
    for id in 10..10 + WRITERS {
        let catalog = lake.catalog.clone();
        tasks.spawn(async move {
            (
                id,
                append(&catalog, &main(), "db.events", id, Some(1), 2).await,
            )
        });
    }
    let (mut winners, mut refused) = (Vec::new(), 0);
    while let Some(result) = tasks.join_next().await {
        match result.unwrap() {
            (id, Ok(_)) => winners.push(id),
            (_, Err(CommitError::Rejected(TableError::RequirementFailed(_)))) => refused += 1,
            (_, Err(other)) => panic!("unexpected: {other}"),
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    assert_eq!(refused, WRITERS - 1);
    let table = lake
        .catalog
        .load_table(&spec("main"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(table.metadata.current_snapshot_id, Some(winners[0]));
    assert_eq!(table.metadata.snapshots.len(), 2);
    assert_eq!(
        table.metadata.metadata_log.last().unwrap().metadata_file,
        base.metadata_location.unwrap(),
        "built on the table at snapshot 1"
    );
    assert_eq!(
        lake.catalog.resolve(&spec("main~1")).await.unwrap().commit,
        start,
        "one commit landed"
    );
    let numbers: Vec<String> = metadata_files(&table.metadata.location)
        .iter()
        .map(|f| f[..5].to_owned())
        .collect();
    assert_eq!(
        numbers,
        ["00000", "00001", "00002"],
        "a refused writer leaves no file behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_asserting_the_same_snapshot_let_exactly_one_win() {
    writers_asserting_the_same_snapshot_let_one_win(lake().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_asserting_the_same_snapshot_let_exactly_one_win_on_sqlite() {
    writers_asserting_the_same_snapshot_let_one_win(sqlite_lake().await).await;
}

/// Writers of one table without requirements: each lands on top of the others, writing its
/// metadata file once (on the commit queued before it, not beside it and then again).
async fn writers_without_requirements_land_on_top_of_each_other(lake: Lake) {
    create(&lake.catalog, &main(), "db.events").await;
    const WRITERS: usize = 6;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..WRITERS {
        let catalog = lake.catalog.clone();
        tasks.spawn(async move {
            catalog
                .commit_table(
                    &main(),
                    &key("db.events"),
                    Vec::new(),
                    vec![update(
                        json!({"action": "set-properties", "updates": {format!("k{i}"): "v"}}),
                    )],
                    &meta("props"),
                )
                .await
                .unwrap()
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap();
    }
    let table = lake
        .catalog
        .load_table(&spec("main"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(table.metadata.properties.len(), WRITERS, "no update lost");
    assert_eq!(table.metadata.metadata_log.len(), WRITERS);
    assert_eq!(
        metadata_files(&table.metadata.location).len(),
        WRITERS + 1,
        "one file per commit, and the create's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_without_requirements_are_applied_on_top_of_each_other() {
    writers_without_requirements_land_on_top_of_each_other(lake().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_without_requirements_are_applied_on_top_of_each_other_on_sqlite() {
    writers_without_requirements_land_on_top_of_each_other(sqlite_lake().await).await;
}

#[tokio::test]
async fn a_commit_without_updates_writes_nothing_and_still_checks_requirements() {
    let lake = lake().await;
    let table = create(&lake.catalog, &main(), "db.t").await;
    let before = head(&lake.catalog, "main").await;

    let (committed, same) = lake
        .catalog
        .commit_table(
            &main(),
            &key("db.t"),
            vec![requires_main_at(None)],
            vec![],
            &meta("nothing"),
        )
        .await
        .unwrap();
    assert_eq!(committed.attempts, 0);
    assert_eq!(committed.commit, before);
    assert_eq!(same.metadata_location, table.metadata_location);
    assert_eq!(head(&lake.catalog, "main").await, before, "no commit");
    assert_eq!(
        metadata_files(&table.metadata.location).len(),
        1,
        "no new file"
    );

    let err = lake
        .catalog
        .commit_table(
            &main(),
            &key("db.t"),
            vec![requires_main_at(Some(42))],
            vec![],
            &meta("stale"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::RequirementFailed(_))),
        "{err:?}"
    );
}

fn change(
    name: &str,
    requirements: Vec<TableRequirement>,
    updates: Vec<TableUpdate>,
) -> TableChange {
    TableChange {
        key: key(name),
        requirements,
        updates,
    }
}

#[tokio::test]
async fn a_multi_table_commit_lands_all_tables_in_one_commit() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.a").await;
    create(&lake.catalog, &main(), "db.b").await;
    let before = head(&lake.catalog, "main").await;
    let (committed, tables) = lake
        .catalog
        .commit_tables(
            &main(),
            vec![
                change(
                    "db.a",
                    vec![requires_main_at(None)],
                    append_updates(1, None, 1),
                ),
                change(
                    "db.b",
                    vec![requires_main_at(None)],
                    append_updates(2, None, 1),
                ),
            ],
            &meta("both"),
        )
        .await
        .unwrap();
    assert_eq!(committed.parent, before, "one commit on top of the head");
    assert_eq!(head(&lake.catalog, "main").await, committed.commit);
    assert_eq!(tables.len(), 2);
    assert_eq!(tables[0].metadata.current_snapshot_id, Some(1));
    assert_eq!(tables[1].metadata.current_snapshot_id, Some(2));
    let a = lake
        .catalog
        .load_table(&spec("main"), &key("db.a"))
        .await
        .unwrap();
    assert_eq!(a.metadata.current_snapshot_id, Some(1));
}

#[tokio::test]
async fn a_failing_requirement_on_one_table_leaves_every_table_unchanged() {
    let lake = lake().await;
    let a = create(&lake.catalog, &main(), "db.a").await;
    create(&lake.catalog, &main(), "db.b").await;
    let before = head(&lake.catalog, "main").await;
    let err = lake
        .catalog
        .commit_tables(
            &main(),
            vec![
                change(
                    "db.a",
                    vec![requires_main_at(None)],
                    append_updates(1, None, 1),
                ),
                change(
                    "db.b",
                    vec![requires_main_at(Some(99))],
                    append_updates(2, None, 1),
                ),
            ],
            &meta("both"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::RequirementFailed(_))),
        "{err:?}"
    );
    assert_eq!(head(&lake.catalog, "main").await, before);
    let still = lake
        .catalog
        .load_table(&spec("main"), &key("db.a"))
        .await
        .unwrap();
    assert_eq!(still.metadata_location, a.metadata_location);

    let err = lake
        .catalog
        .commit_tables(
            &main(),
            vec![
                change("db.a", vec![], append_updates(1, None, 1)),
                change("db.a", vec![], append_updates(2, None, 1)),
            ],
            &meta("twice"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::Update(_))),
        "{err:?}"
    );
    assert_eq!(head(&lake.catalog, "main").await, before);
}

/// Every location a client chooses must be below the warehouse root: the server reads and
/// writes there with the warehouse's credentials, so anywhere else would reach files that are
/// not the catalog's (another tenant's warehouse, another bucket, the server's own files).
#[tokio::test]
async fn locations_outside_the_warehouse_are_refused() {
    let lake = lake().await;
    let outside = format!("file://{}/elsewhere", lake.dir.path().display());
    let refused = |result: Result<_, CommitError<TableError>>| match result {
        Err(CommitError::Rejected(TableError::LocationOutsideWarehouse { location, .. })) => {
            location
        }
        other => panic!("not refused as outside the warehouse: {other:?}"),
    };
    let by_location = lake
        .catalog
        .create_table(
            &main(),
            &key("db.a"),
            NewTable {
                location: outside.clone(),
                ..new_table()
            },
            &meta("create"),
        )
        .await;
    assert!(refused(by_location).starts_with(&outside));
    let climbing = format!(
        "file://{}/warehouse/../elsewhere",
        lake.dir.path().display()
    );
    let by_dots = lake
        .catalog
        .create_table(
            &main(),
            &key("db.b"),
            NewTable {
                location: climbing,
                ..new_table()
            },
            &meta("create"),
        )
        .await;
    refused(by_dots);
    let by_metadata_path = lake
        .catalog
        .create_table(
            &main(),
            &key("db.c"),
            NewTable {
                properties: BTreeMap::from([("write.metadata.path".to_owned(), outside.clone())]),
                ..new_table()
            },
            &meta("create"),
        )
        .await;
    refused(by_metadata_path);
    // A table that exists cannot be moved out by an update either.
    create(&lake.catalog, &main(), "db.t").await;
    let moved = lake
        .catalog
        .commit_table(
            &main(),
            &key("db.t"),
            vec![],
            vec![update(
                json!({"action": "set-location", "location": outside}),
            )],
            &meta("move"),
        )
        .await;
    refused(moved);
    // Nor can a file elsewhere be registered (the server would read it).
    let registered = lake
        .catalog
        .register_table(
            &main(),
            &key("db.r"),
            "file:///etc/passwd",
            false,
            &meta("register"),
        )
        .await;
    assert_eq!(refused(registered), "file:///etc/passwd");
    // Nothing was written or committed.
    assert!(!std::path::Path::new(&format!("{}/elsewhere", lake.dir.path().display())).exists());
    let tables = lake
        .catalog
        .list_children(
            &spec("main"),
            Some(&key("db")),
            ContentKind::IcebergTable,
            None,
            100,
        )
        .await
        .unwrap()
        .0;
    assert_eq!(tables.len(), 1);
}
