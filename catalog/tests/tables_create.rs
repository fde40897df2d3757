//! Creating, loading and listing Iceberg tables through `Catalog`, on branches, with metadata
//! files in a local warehouse.
#![allow(clippy::unwrap_used)]

mod common;

use common::lake::*;

// ---- create ----

#[tokio::test]
async fn create_writes_the_first_metadata_file_and_commits_the_entry() {
    let lake = lake().await;
    let before = head(&lake.catalog, "main").await;
    let (committed, table) = lake
        .catalog
        .create_table(&main(), &key("db.events"), new_table(), &meta("create"))
        .await
        .unwrap();
    assert_eq!(committed.parent, before);
    assert_eq!(head(&lake.catalog, "main").await, committed.commit);

    let location = &table.metadata.location;
    let expected_dir = format!("file://{}/db/events-", lake.root().display());
    assert!(location.starts_with(&expected_dir), "{location}");
    assert!(
        location.ends_with(&table.metadata.table_uuid.simple().to_string()),
        "the table's uuid names its directory: {location}"
    );
    let metadata_location = table.metadata_location.clone().unwrap();
    assert!(
        metadata_location.starts_with(&format!("{location}/metadata/00000-")),
        "{metadata_location}"
    );
    assert!(metadata_location.ends_with(".metadata.json"));
    assert_eq!(
        metadata_files(location),
        vec![file_name(&metadata_location).to_owned()]
    );

    // The file on disk is the table's metadata, as a client reading it would see it.
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(local(&metadata_location)).unwrap()).unwrap();
    assert_eq!(on_disk["format-version"], 2);
    assert_eq!(on_disk["current-snapshot-id"], -1);
    assert_eq!(on_disk["location"], location.as_str());

    assert!(
        lake.catalog
            .table_exists(&spec("main"), &key("db.events"))
            .await
            .unwrap()
    );
    let loaded = lake
        .catalog
        .load_table(&spec("main"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(loaded.metadata_location, Some(metadata_location));
    assert_eq!(loaded.content_id, table.content_id);
    assert_eq!(loaded.metadata, table.metadata);
}

#[tokio::test]
async fn create_in_a_missing_namespace_is_refused() {
    let lake = lake().await;
    let err = lake
        .catalog
        .create_table(&main(), &key("nope.events"), new_table(), &meta("create"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::NamespaceNotFound(ref ns)) if *ns == key("nope")),
        "{err}"
    );
    assert_eq!(count_files(&lake.root()), 0, "no file written");
}

#[tokio::test]
async fn create_of_an_existing_name_is_refused() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.events").await;
    let head_before = head(&lake.catalog, "main").await;
    let err = lake
        .catalog
        .create_table(&main(), &key("db.events"), new_table(), &meta("create"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CommitError::Rejected(TableError::AlreadyExists {
                kind: ContentKind::IcebergTable,
                ..
            })
        ),
        "{err}"
    );
    // A namespace holds the name too.
    lake.catalog
        .create_namespace(&main(), &key("db.sub"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    let err = lake
        .catalog
        .create_table(&main(), &key("db.sub"), new_table(), &meta("create"))
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
    assert_ne!(
        head(&lake.catalog, "main").await,
        head_before,
        "only the namespace landed"
    );
}

#[tokio::test]
async fn create_goes_below_the_namespace_location_property() {
    let lake = lake().await;
    let base = format!(
        "file://{}/warehouse/custom/place/",
        lake.dir.path().display()
    );
    lake.catalog
        .create_namespace(
            &main(),
            &key("placed"),
            BTreeMap::from([("location".to_owned(), base.clone())]),
            &meta("ns"),
        )
        .await
        .unwrap();
    let table = create(&lake.catalog, &main(), "placed.t").await;
    assert!(
        table
            .metadata
            .location
            .starts_with(&format!("{}/t-", base.trim_end_matches('/'))),
        "{}",
        table.metadata.location
    );
    assert_eq!(metadata_files(&table.metadata.location).len(), 1);
}

#[tokio::test]
async fn create_keeps_a_location_the_client_names() {
    let lake = lake().await;
    let location = format!("file://{}/warehouse/mine/events", lake.dir.path().display());
    let (_, table) = lake
        .catalog
        .create_table(
            &main(),
            &key("db.events"),
            NewTable {
                location: format!("{location}/"),
                ..new_table()
            },
            &meta("create"),
        )
        .await
        .unwrap();
    assert_eq!(table.metadata.location, location);
    assert_eq!(metadata_files(&location).len(), 1);
}

/// `write.metadata.path` puts the metadata files elsewhere than `<location>/metadata`, as the
/// reference implementation does (PyIceberg's `test_table_writes_metadata_to_custom_location`).
#[tokio::test]
async fn metadata_files_go_where_write_metadata_path_says() {
    let lake = lake().await;
    let custom = format!("file://{}/warehouse/custom/path", lake.dir.path().display());
    let (_, created) = lake
        .catalog
        .create_table(
            &main(),
            &key("db.events"),
            NewTable {
                properties: BTreeMap::from([(
                    "write.metadata.path".to_owned(),
                    format!("{custom}/"),
                )]),
                ..new_table()
            },
            &meta("create"),
        )
        .await
        .unwrap();
    let first = created.metadata_location.clone().unwrap();
    assert!(first.starts_with(&format!("{custom}/00000-")), "{first}");
    assert!(local(&first).exists());
    assert!(metadata_files(&created.metadata.location).is_empty());

    let (_, appended) = append(&lake.catalog, &main(), "db.events", 1, None, 1)
        .await
        .unwrap();
    let second = appended.metadata_location.clone().unwrap();
    assert!(second.starts_with(&format!("{custom}/00001-")), "{second}");
    assert_eq!(appended.metadata.location, created.metadata.location);
    assert_eq!(appended.metadata.metadata_log[0].metadata_file, first);

    // Changing the property moves the next file; removing it goes back to the default.
    let moved = format!("file://{}/warehouse/moved", lake.dir.path().display());
    let (_, third) = lake
        .catalog
        .commit_table(
            &main(),
            &key("db.events"),
            vec![],
            vec![update(json!({
                "action": "set-properties",
                "updates": {"write.metadata.path": moved}
            }))],
            &meta("move"),
        )
        .await
        .unwrap();
    let third = third.metadata_location.unwrap();
    assert!(third.starts_with(&format!("{moved}/00002-")), "{third}");
    let (_, fourth) = lake
        .catalog
        .commit_table(
            &main(),
            &key("db.events"),
            vec![],
            vec![update(json!({
                "action": "remove-properties",
                "removals": ["write.metadata.path"]
            }))],
            &meta("back"),
        )
        .await
        .unwrap();
    let fourth = fourth.metadata_location.unwrap();
    let default = format!("{}/metadata/00003-", created.metadata.location);
    assert!(fourth.starts_with(&default), "{fourth}");
    let loaded = lake
        .catalog
        .load_table(&spec("main"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(loaded.metadata_location, Some(fourth));
}

#[tokio::test]
async fn tables_need_a_warehouse() {
    let catalog = Catalog::create(
        Arc::new(MemoryBackend::new()),
        Arc::new(ObjectCache::new(1 << 20)),
        "acme",
        "dry",
        "ana",
    )
    .await
    .unwrap();
    catalog
        .create_namespace(&main(), &key("db"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    let err = catalog
        .create_table(&main(), &key("db.t"), new_table(), &meta("create"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::NoWarehouse(ref name)) if name == "dry"),
        "{err}"
    );
}

// ---- load, exists, list ----

#[tokio::test]
async fn load_at_a_ref_spec_reads_the_table_as_it_was_then() {
    let lake = lake().await;
    let created = create(&lake.catalog, &main(), "db.events").await;
    let at_create = head(&lake.catalog, "main").await;
    let (_, appended) = append(&lake.catalog, &main(), "db.events", 1, None, 1)
        .await
        .unwrap();

    let now = lake
        .catalog
        .load_table(&spec("main"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(now.metadata.current_snapshot_id, Some(1));
    assert_eq!(now.metadata_location, appended.metadata_location);

    for at in ["main~1".to_owned(), format!("main#{}", at_create.short(12))] {
        let then = lake
            .catalog
            .load_table(&spec(&at), &key("db.events"))
            .await
            .unwrap();
        assert_eq!(then.metadata_location, created.metadata_location, "{at}");
        assert_eq!(then.metadata.current_snapshot_id, None, "{at}");
    }
    // Before the create, there was no table.
    let err = lake
        .catalog
        .load_table(&spec("main~2"), &key("db.events"))
        .await
        .unwrap_err();
    assert!(matches!(err, TableError::NotFound(_)), "{err}");
    assert!(
        !lake
            .catalog
            .table_exists(&spec("main~2"), &key("db.events"))
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn load_and_exists_tell_tables_from_other_entries() {
    let lake = lake().await;
    let err = lake
        .catalog
        .load_table(&spec("main"), &key("db.missing"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, TableError::NotFound(ref k) if *k == key("db.missing")),
        "{err}"
    );
    assert!(
        !lake
            .catalog
            .table_exists(&spec("main"), &key("db"))
            .await
            .unwrap(),
        "a namespace is no table"
    );
    let err = lake
        .catalog
        .load_table(&spec("nope"), &key("db.missing"))
        .await
        .unwrap_err();
    assert!(matches!(err, TableError::Resolve(_)), "{err}");
}

#[tokio::test]
async fn list_tables_pages_through_the_tables_directly_in_a_namespace() {
    let lake = lake().await;
    lake.catalog
        .create_namespace(&main(), &key("db.inner"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    for name in ["db.e", "db.a", "db.c", "db.b", "db.d", "db.inner.x"] {
        create(&lake.catalog, &main(), name).await;
    }
    let at = spec("main");
    let (page, next) = lake
        .catalog
        .list_tables(&at, &key("db"), None, 2)
        .await
        .unwrap();
    assert_eq!(
        (page, next.clone()),
        (vec![key("db.a"), key("db.b")], Some(key("db.b")))
    );
    let (page, next) = lake
        .catalog
        .list_tables(&at, &key("db"), next.as_ref(), 2)
        .await
        .unwrap();
    assert_eq!(
        (page, next.clone()),
        (vec![key("db.c"), key("db.d")], Some(key("db.d")))
    );
    let (page, next) = lake
        .catalog
        .list_tables(&at, &key("db"), next.as_ref(), 2)
        .await
        .unwrap();
    assert_eq!((page, next), (vec![key("db.e")], None));

    let (all, next) = lake
        .catalog
        .list_tables(&at, &key("db"), None, 100)
        .await
        .unwrap();
    assert_eq!(all.len(), 5, "neither db.inner nor db.inner.x: {all:?}");
    assert_eq!(next, None);
    let (inner, _) = lake
        .catalog
        .list_tables(&at, &key("db.inner"), None, 100)
        .await
        .unwrap();
    assert_eq!(inner, vec![key("db.inner.x")]);
}

#[tokio::test]
async fn list_tables_of_a_missing_namespace_is_refused() {
    let lake = lake().await;
    let err = lake
        .catalog
        .list_tables(&spec("main"), &key("nope"), None, 10)
        .await
        .unwrap_err();
    assert!(
        matches!(err, TableError::NamespaceNotFound(ref k) if *k == key("nope")),
        "{err}"
    );
}

// ---- branches ----

#[tokio::test]
async fn a_table_created_on_a_branch_is_not_visible_on_main() {
    let lake = lake().await;
    new_branch(&lake.catalog, "dev", "main").await;
    let dev = branch("dev");
    let table = create(&lake.catalog, &dev, "db.events").await;
    append(&lake.catalog, &dev, "db.events", 1, None, 1)
        .await
        .unwrap();

    assert!(
        lake.catalog
            .table_exists(&spec("dev"), &key("db.events"))
            .await
            .unwrap()
    );
    assert!(
        !lake
            .catalog
            .table_exists(&spec("main"), &key("db.events"))
            .await
            .unwrap()
    );
    let err = lake
        .catalog
        .load_table(&spec("main"), &key("db.events"))
        .await
        .unwrap_err();
    assert!(matches!(err, TableError::NotFound(_)), "{err}");
    let (on_main, _) = lake
        .catalog
        .list_tables(&spec("main"), &key("db"), None, 10)
        .await
        .unwrap();
    assert!(on_main.is_empty());
    let (on_dev, _) = lake
        .catalog
        .list_tables(&spec("dev"), &key("db"), None, 10)
        .await
        .unwrap();
    assert_eq!(on_dev, vec![key("db.events")]);
    let err = append(&lake.catalog, &main(), "db.events", 2, None, 1)
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::NotFound(_))),
        "{err}"
    );
    let loaded = lake
        .catalog
        .load_table(&spec("dev"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(loaded.content_id, table.content_id);
    assert_eq!(loaded.metadata.current_snapshot_id, Some(1));
}

#[tokio::test]
async fn a_branch_sees_the_table_as_it_was_when_branched() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.events").await;
    append(&lake.catalog, &main(), "db.events", 1, None, 1)
        .await
        .unwrap();
    new_branch(&lake.catalog, "dev", "main").await;
    append(&lake.catalog, &branch("dev"), "db.events", 2, Some(1), 2)
        .await
        .unwrap();
    append(&lake.catalog, &main(), "db.events", 3, Some(1), 2)
        .await
        .unwrap();

    let on_main = lake
        .catalog
        .load_table(&spec("main"), &key("db.events"))
        .await
        .unwrap();
    let on_dev = lake
        .catalog
        .load_table(&spec("dev"), &key("db.events"))
        .await
        .unwrap();
    assert_eq!(on_main.metadata.current_snapshot_id, Some(3));
    assert_eq!(on_dev.metadata.current_snapshot_id, Some(2));
    assert_eq!(
        on_main.content_id, on_dev.content_id,
        "one table, two histories"
    );
    assert_ne!(on_main.metadata_location, on_dev.metadata_location);
    assert!(on_main.metadata.snapshot(2).is_none());
}

#[tokio::test]
async fn purge_is_refused_while_another_branch_holds_the_table_under_another_name() {
    let lake = lake().await;
    let table = create(&lake.catalog, &main(), "db.events").await;
    new_branch(&lake.catalog, "dev", "main").await;
    lake.catalog
        .rename_table(
            &branch("dev"),
            &key("db.events"),
            &key("db.renamed"),
            &meta("mv"),
        )
        .await
        .unwrap();

    let err = lake
        .catalog
        .drop_table(&main(), &key("db.events"), true, &meta("purge"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Rejected(TableError::LiveElsewhere { ref reference, .. }) if reference.contains("dev")),
        "{err}"
    );
    let on_dev = lake
        .catalog
        .load_table(&spec("dev"), &key("db.renamed"))
        .await
        .unwrap();
    assert_eq!(on_dev.content_id, table.content_id);
    assert_eq!(metadata_files(&table.metadata.location).len(), 1);
}
