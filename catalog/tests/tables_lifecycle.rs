//! Renaming, registering, dropping and purging Iceberg tables through `Catalog`, and where
//! their files may live.
#![allow(clippy::unwrap_used)]

mod common;

use common::lake::*;

// ---- rename ----

#[tokio::test]
async fn rename_moves_the_table_and_keeps_its_identity_and_files() {
    let lake = lake().await;
    lake.catalog
        .create_namespace(&main(), &key("archive"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    let table = create(&lake.catalog, &main(), "db.events").await;
    lake.catalog
        .rename_table(
            &main(),
            &key("db.events"),
            &key("archive.old_events"),
            &meta("mv"),
        )
        .await
        .unwrap();
    let moved = lake
        .catalog
        .load_table(&spec("main"), &key("archive.old_events"))
        .await
        .unwrap();
    assert_eq!(moved.content_id, table.content_id);
    assert_eq!(moved.metadata_location, table.metadata_location);
    assert_eq!(moved.metadata, table.metadata);
    assert!(
        !lake
            .catalog
            .table_exists(&spec("main"), &key("db.events"))
            .await
            .unwrap()
    );
    // The old name is as it was on the commit before.
    assert!(
        lake.catalog
            .table_exists(&spec("main~1"), &key("db.events"))
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn rename_needs_an_existing_target_namespace() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.events").await;
    let err = lake
        .catalog
        .rename_table(&main(), &key("db.events"), &key("nope.events"), &meta("mv"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::NamespaceNotFound(ref k)) if *k == key("nope")),
        "{err}"
    );
    assert!(
        lake.catalog
            .table_exists(&spec("main"), &key("db.events"))
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn rename_onto_a_taken_name_or_of_a_missing_table_is_refused() {
    let lake = lake().await;
    let a = create(&lake.catalog, &main(), "db.a").await;
    let b = create(&lake.catalog, &main(), "db.b").await;
    let err = lake
        .catalog
        .rename_table(&main(), &key("db.a"), &key("db.b"), &meta("mv"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::AlreadyExists { .. })),
        "{err}"
    );
    let err = lake
        .catalog
        .rename_table(&main(), &key("db.missing"), &key("db.c"), &meta("mv"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::NotFound(_))),
        "{err}"
    );
    for (name, table) in [("db.a", &a), ("db.b", &b)] {
        let loaded = lake
            .catalog
            .load_table(&spec("main"), &key(name))
            .await
            .unwrap();
        assert_eq!(loaded.content_id, table.content_id, "{name} untouched");
    }
}

// ---- register ----

#[tokio::test]
async fn register_adds_a_table_for_an_existing_metadata_file() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.events").await;
    let (_, source) = append(&lake.catalog, &main(), "db.events", 1, None, 1)
        .await
        .unwrap();
    let file = source.metadata_location.clone().unwrap();
    let (_, registered) = lake
        .catalog
        .register_table(&main(), &key("db.copy"), &file, false, &meta("register"))
        .await
        .unwrap();
    assert_eq!(registered.metadata_location.as_deref(), Some(file.as_str()));
    assert_ne!(
        registered.content_id, source.content_id,
        "a table of its own"
    );
    let loaded = lake
        .catalog
        .load_table(&spec("main"), &key("db.copy"))
        .await
        .unwrap();
    assert_eq!(loaded.metadata, source.metadata);
    assert_eq!(loaded.content_id, registered.content_id);
    assert_eq!(
        metadata_files(&source.metadata.location).len(),
        2,
        "registering writes no file"
    );
}

#[tokio::test]
async fn register_onto_an_existing_table_needs_overwrite() {
    let lake = lake().await;
    let old = create(&lake.catalog, &main(), "db.old").await;
    let (_, other) = lake
        .catalog
        .create_table(
            &main(),
            &key("db.other"),
            NewTable {
                properties: BTreeMap::from([("marker".to_owned(), "other".to_owned())]),
                ..new_table()
            },
            &meta("create"),
        )
        .await
        .unwrap();
    let file = other.metadata_location.clone().unwrap();

    let err = lake
        .catalog
        .register_table(&main(), &key("db.old"), &file, false, &meta("register"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::AlreadyExists { .. })),
        "{err}"
    );
    let (_, replaced) = lake
        .catalog
        .register_table(&main(), &key("db.old"), &file, true, &meta("register"))
        .await
        .unwrap();
    assert_eq!(
        replaced.content_id, old.content_id,
        "overwrite keeps the identity"
    );
    let loaded = lake
        .catalog
        .load_table(&spec("main"), &key("db.old"))
        .await
        .unwrap();
    assert_eq!(loaded.metadata_location.as_deref(), Some(file.as_str()));
    assert_eq!(loaded.metadata.properties["marker"], "other");
}

#[tokio::test]
async fn register_overwrite_does_not_replace_a_namespace() {
    let lake = lake().await;
    let table = create(&lake.catalog, &main(), "db.t").await;
    let err = lake
        .catalog
        .register_table(
            &main(),
            &key("db"),
            table.metadata_location.as_deref().unwrap(),
            true,
            &meta("register"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CommitError::Rejected(TableError::AlreadyExists {
                kind: ContentKind::Namespace,
                ..
            })
        ),
        "{err}"
    );
}

#[tokio::test]
async fn register_of_a_missing_file_is_refused() {
    let lake = lake().await;
    let missing = format!(
        "file://{}/nowhere/metadata/00000-x.metadata.json",
        lake.root().display()
    );
    let err = lake
        .catalog
        .register_table(&main(), &key("db.t"), &missing, false, &meta("register"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CommitError::Rejected(TableError::Io(IoError::NotFound(_)))
        ),
        "{err}"
    );
    assert!(
        !lake
            .catalog
            .table_exists(&spec("main"), &key("db.t"))
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn a_registered_file_without_refs_has_main_at_its_current_snapshot() {
    let lake = lake().await;
    let location = format!("file://{}/legacy", lake.root().display());
    let file = format!("{location}/metadata/v3.metadata.json");
    let legacy = json!({
        "format-version": 1,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": location,
        "last-updated-ms": 1_700_000_000_000_i64,
        "last-column-id": 2,
        "schema": serde_json::to_value(schema()).unwrap(),
        "schemas": [serde_json::to_value(schema()).unwrap()],
        "current-schema-id": 0,
        "partition-spec": [],
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "default-spec-id": 0,
        "last-partition-id": 999,
        "current-snapshot-id": 3,
        "snapshots": [{"snapshot-id": 3, "timestamp-ms": 1_700_000_000_000_i64,
                       "summary": {"operation": "append"}}],
        "sort-orders": [{"order-id": 0, "fields": []}],
        "default-sort-order-id": 0
    });
    std::fs::create_dir_all(local(&file).parent().unwrap()).unwrap();
    std::fs::write(local(&file), legacy.to_string()).unwrap();

    let (_, registered) = lake
        .catalog
        .register_table(&main(), &key("db.legacy"), &file, false, &meta("register"))
        .await
        .unwrap();
    assert_eq!(registered.metadata.refs["main"].snapshot_id, 3);
    let (_, table) = lake
        .catalog
        .commit_table(
            &main(),
            &key("db.legacy"),
            vec![requires_main_at(Some(3))],
            append_updates(4, Some(3), 0),
            &meta("append"),
        )
        .await
        .unwrap();
    assert_eq!(table.metadata.current_snapshot_id, Some(4));
    assert_eq!(table.metadata.metadata_log[0].metadata_file, file);
    assert!(
        file_name(table.metadata_location.as_deref().unwrap()).starts_with("00000-"),
        "a file name without a number starts the numbering"
    );
}

// ---- drop ----

#[tokio::test]
async fn drop_removes_the_entry_and_keeps_the_files() {
    let lake = lake().await;
    let table = create(&lake.catalog, &main(), "db.events").await;
    lake.catalog
        .drop_table(&main(), &key("db.events"), false, &meta("drop"))
        .await
        .unwrap();
    assert!(
        !lake
            .catalog
            .table_exists(&spec("main"), &key("db.events"))
            .await
            .unwrap()
    );
    assert_eq!(metadata_files(&table.metadata.location).len(), 1);
    // Time travel still reads it.
    let then = lake
        .catalog
        .load_table(&spec("main~1"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(then.content_id, table.content_id);

    let err = lake
        .catalog
        .drop_table(&main(), &key("db.events"), false, &meta("drop"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::NotFound(_))),
        "{err}"
    );
}

#[tokio::test]
async fn drop_with_purge_deletes_the_files_under_the_table_location() {
    let lake = lake().await;
    let table = create(&lake.catalog, &main(), "db.events").await;
    let kept = create(&lake.catalog, &main(), "db.kept").await;
    append(&lake.catalog, &main(), "db.events", 1, None, 1)
        .await
        .unwrap();
    // A data file a client wrote next to the metadata.
    let data = local(&table.metadata.location).join("data/part-0.parquet");
    std::fs::create_dir_all(data.parent().unwrap()).unwrap();
    std::fs::write(&data, b"PAR1").unwrap();
    assert_eq!(count_files(&local(&table.metadata.location)), 3);

    lake.catalog
        .drop_table(&main(), &key("db.events"), true, &meta("purge"))
        .await
        .unwrap();
    assert!(
        !lake
            .catalog
            .table_exists(&spec("main"), &key("db.events"))
            .await
            .unwrap()
    );
    assert_eq!(count_files(&local(&table.metadata.location)), 0);
    assert_eq!(
        metadata_files(&kept.metadata.location).len(),
        1,
        "another table's files stay"
    );
}

#[tokio::test]
async fn purge_is_refused_while_another_branch_holds_the_table() {
    let lake = lake().await;
    let table = create(&lake.catalog, &main(), "db.events").await;
    new_branch(&lake.catalog, "dev", "main").await;
    let head_before = head(&lake.catalog, "main").await;

    let err = lake
        .catalog
        .drop_table(&main(), &key("db.events"), true, &meta("purge"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::LiveElsewhere { ref reference, .. }) if reference.contains("dev")),
        "{err}"
    );
    assert_eq!(
        head(&lake.catalog, "main").await,
        head_before,
        "not dropped"
    );
    assert_eq!(
        metadata_files(&table.metadata.location).len(),
        1,
        "not purged"
    );

    // Once dev lets go of it, main may purge.
    lake.catalog
        .drop_table(&branch("dev"), &key("db.events"), false, &meta("drop"))
        .await
        .unwrap();
    lake.catalog
        .drop_table(&main(), &key("db.events"), true, &meta("purge"))
        .await
        .unwrap();
    assert!(metadata_files(&table.metadata.location).is_empty());
}

#[tokio::test]
async fn purge_is_allowed_when_another_branch_has_a_different_table_of_that_name() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.events").await;
    new_branch(&lake.catalog, "dev", "main").await;
    lake.catalog
        .drop_table(&branch("dev"), &key("db.events"), false, &meta("drop"))
        .await
        .unwrap();
    let dev_table = create(&lake.catalog, &branch("dev"), "db.events").await;

    lake.catalog
        .drop_table(&main(), &key("db.events"), true, &meta("purge"))
        .await
        .unwrap();
    let still = lake
        .catalog
        .load_table(&spec("dev"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(still.content_id, dev_table.content_id);
    assert_eq!(metadata_files(&dev_table.metadata.location).len(), 1);
}

// ---- locations ----

#[tokio::test]
async fn names_with_url_syntax_are_literal_directory_names() {
    let lake = lake().await;
    for name in ["db.we#ird", "db.q?x", "db.pct%41", "db.sp ace"] {
        let table = create(&lake.catalog, &main(), name).await;
        let (_, appended) = append(&lake.catalog, &main(), name, 1, None, 1)
            .await
            .unwrap();
        let location = &table.metadata.location;
        assert!(
            local(location).to_str().unwrap().contains(&name[3..]),
            "{location}"
        );
        let files = metadata_files(location);
        assert_eq!(files.len(), 2, "{name}: {files:?}");
        assert_eq!(
            files[1],
            file_name(appended.metadata_location.as_deref().unwrap()),
            "{name}"
        );
    }
}

#[tokio::test]
async fn purging_a_table_with_url_syntax_in_its_name_keeps_its_neighbours_files() {
    let lake = lake().await;
    lake.catalog
        .create_namespace(&main(), &key("db.we"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    // `db/we#ird-…` must not be read as `db/we` (the namespace's directory) with a fragment.
    let weird = create(&lake.catalog, &main(), "db.we#ird").await;
    let neighbour = create(&lake.catalog, &main(), "db.we.t").await;
    lake.catalog
        .drop_table(&main(), &key("db.we#ird"), true, &meta("purge"))
        .await
        .unwrap();
    assert!(metadata_files(&weird.metadata.location).is_empty());
    assert_eq!(metadata_files(&neighbour.metadata.location).len(), 1);
    lake.catalog
        .load_table(&spec("main"), &key("db.we.t"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_namespace_named_dot_dot_does_not_lead_out_of_the_warehouse() {
    let lake = lake().await;
    let up = ContentKey::new([".."]).unwrap();
    lake.catalog
        .create_namespace(&main(), &up, BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    let err = lake
        .catalog
        .create_table(
            &main(),
            &ContentKey::new(["..", "t"]).unwrap(),
            new_table(),
            &meta("create"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CommitError::Rejected(
                TableError::Io(IoError::InvalidLocation { .. })
                    | TableError::LocationOutsideWarehouse { .. }
            )
        ),
        "{err}"
    );
    assert_eq!(count_files(lake.dir.path()), 0, "nothing written anywhere");
}

#[tokio::test]
async fn purge_is_refused_for_a_location_outside_the_warehouse() {
    let lake = lake().await;
    let outside = tempfile::tempdir().unwrap();
    let location = format!("file://{}/t", outside.path().display());
    // Such a table can only come from a catalog whose warehouse used to be wider.
    let wider = lake
        .catalog
        .clone()
        .with_warehouse(Warehouse::new("file:///", Arc::new(FileIo::new(16 << 20))));
    wider
        .create_table(
            &main(),
            &key("db.t"),
            NewTable {
                location: location.clone(),
                ..new_table()
            },
            &meta("create"),
        )
        .await
        .unwrap();
    let err = lake
        .catalog
        .drop_table(&main(), &key("db.t"), true, &meta("purge"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CommitError::Rejected(TableError::OutsideWarehouse { .. })
        ),
        "{err:?}"
    );
    assert!(!metadata_files(&location).is_empty(), "nothing deleted");
    assert!(
        lake.catalog
            .table_exists(&spec("main"), &key("db.t"))
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn purge_is_refused_while_another_table_keeps_files_under_the_location() {
    let lake = lake().await;
    // A table whose location is the namespace directory holds every other table's directory.
    let wide = format!("file://{}/db", lake.root().display());
    lake.catalog
        .create_table(
            &main(),
            &key("db.wide"),
            NewTable {
                location: wide,
                ..new_table()
            },
            &meta("create"),
        )
        .await
        .unwrap();
    let inner = create(&lake.catalog, &main(), "db.inner").await;
    let err = lake
        .catalog
        .drop_table(&main(), &key("db.wide"), true, &meta("purge"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CommitError::Rejected(TableError::LiveElsewhere { holder, .. }) if *holder == key("db.inner")),
        "{err:?}"
    );
    assert_eq!(
        metadata_files(&inner.metadata.location).len(),
        1,
        "inner kept"
    );

    // A registered copy shares the original's files: purging either is refused.
    lake.catalog
        .register_table(
            &main(),
            &key("db.copy"),
            inner.metadata_location.as_deref().unwrap(),
            false,
            &meta("register"),
        )
        .await
        .unwrap();
    let err = lake
        .catalog
        .drop_table(&main(), &key("db.copy"), true, &meta("purge"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CommitError::Rejected(TableError::LiveElsewhere { holder, .. }) if *holder == key("db.inner")),
        "{err:?}"
    );
    assert_eq!(
        metadata_files(&inner.metadata.location).len(),
        1,
        "inner kept"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_branch_made_while_a_purge_commits_keeps_the_files() {
    use std::sync::atomic::Ordering;

    use common::gated::Gated;

    let inner = Arc::new(MemoryBackend::new());
    let lake = lake_over(inner.clone(), tempfile::tempdir().unwrap()).await;
    let table = create(&lake.catalog, &main(), "db.events").await;
    let files = count_files(&local(&table.metadata.location));
    assert!(files > 0);
    // The purge runs through a store that holds its drop commit at the gate.
    let gated = Arc::new(Gated::new(inner.clone()));
    let root = format!("file://{}", lake.root().display());
    let purging = Catalog::open(
        gated.clone(),
        Arc::new(ObjectCache::new(16 << 20)),
        "acme",
        "lake",
    )
    .unwrap()
    .with_warehouse(Warehouse::new(root, Arc::new(FileIo::new(16 << 20))));
    let purge = tokio::spawn(async move {
        purging
            .drop_table(&main(), &key("db.events"), true, &meta("purge"))
            .await
    });
    while gated.publishes.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    // The purge checked that nothing else holds the table and is about to commit; meanwhile a
    // branch is made from main, which still has it.
    new_branch(&lake.catalog, "dev", "main").await;
    gated.gate.add_permits(1);
    purge.await.unwrap().unwrap();

    let on_main = lake
        .catalog
        .table_exists(&spec("main"), &key("db.events"))
        .await
        .unwrap();
    assert!(!on_main, "the drop landed");
    let on_dev = lake
        .catalog
        .load_table(&spec("dev"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(
        count_files(&local(&on_dev.metadata.location)),
        files,
        "dev's table keeps its files"
    );
}
