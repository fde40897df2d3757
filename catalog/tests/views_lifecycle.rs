//! Renaming, dropping and registering Iceberg views through `Catalog`.
#![allow(clippy::unwrap_used)]

mod common;

use common::lake::*;
use common::views::*;
// `lake` has a `create` too, which makes tables.
use common::views::create;

#[tokio::test]
async fn rename_moves_the_view_and_keeps_its_identity() {
    let lake = lake().await;
    lake.catalog
        .create_namespace(&main(), &key("archive"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    let view = create(&lake.catalog, &main(), "db.daily").await;
    lake.catalog
        .rename_view(&main(), &key("db.daily"), &key("archive.old"), &meta("mv"))
        .await
        .unwrap();
    assert!(
        !lake
            .catalog
            .view_exists(&spec("main"), &key("db.daily"))
            .await
            .unwrap()
    );
    let moved = lake
        .catalog
        .load_view(&spec("main"), &key("archive.old"))
        .await
        .unwrap();
    assert_eq!(moved.content_id, view.content_id);
    assert_eq!(moved.metadata_location, view.metadata_location);
    let err = lake
        .catalog
        .rename_view(&main(), &key("db.nope"), &key("db.x"), &meta("mv"))
        .await
        .unwrap_err();
    assert!(matches!(rejected(err), ViewError::NotFound(_)));
    let err = lake
        .catalog
        .rename_view(&main(), &key("archive.old"), &key("gone.x"), &meta("mv"))
        .await
        .unwrap_err();
    assert!(matches!(rejected(err), ViewError::NamespaceNotFound(_)));
}

#[tokio::test]
async fn drop_removes_the_entry_and_keeps_the_files() {
    let lake = lake().await;
    let view = create(&lake.catalog, &main(), "db.daily").await;
    lake.catalog
        .drop_view(&main(), &key("db.daily"), &meta("drop"))
        .await
        .unwrap();
    assert!(
        !lake
            .catalog
            .view_exists(&spec("main"), &key("db.daily"))
            .await
            .unwrap()
    );
    assert_eq!(metadata_files(&view.metadata.location).len(), 1);
    let err = lake
        .catalog
        .drop_view(&main(), &key("db.daily"), &meta("drop"))
        .await
        .unwrap_err();
    assert!(matches!(rejected(err), ViewError::NotFound(_)));
}

#[tokio::test]
async fn register_adds_a_view_for_an_existing_metadata_file() {
    let lake = lake().await;
    let view = create(&lake.catalog, &main(), "db.daily").await;
    let (_, registered) = lake
        .catalog
        .register_view(
            &main(),
            &key("db.copy"),
            &view.metadata_location,
            &meta("register"),
        )
        .await
        .unwrap();
    assert_ne!(registered.content_id, view.content_id, "a view of its own");
    let loaded = lake
        .catalog
        .load_view(&spec("main"), &key("db.copy"))
        .await
        .unwrap();
    assert_eq!(loaded.metadata, view.metadata);
    assert_eq!(metadata_files(&view.metadata.location).len(), 1);

    let err = lake
        .catalog
        .register_view(
            &main(),
            &key("db.daily"),
            &view.metadata_location,
            &meta("r"),
        )
        .await
        .unwrap_err();
    assert!(matches!(rejected(err), ViewError::AlreadyExists { .. }));
    let missing = format!("file://{}/nothing.metadata.json", lake.root().display());
    let err = lake
        .catalog
        .register_view(&main(), &key("db.x"), &missing, &meta("r"))
        .await
        .unwrap_err();
    assert!(
        matches!(rejected(err), ViewError::Io(IoError::NotFound(_))),
        "a missing file"
    );
    // Table metadata is no view metadata.
    let table = lake
        .catalog
        .create_table(
            &main(),
            &key("db.events"),
            NewTable {
                location: String::new(),
                schema: serde_json::from_value(pyiceberg_schema()).unwrap(),
                partition_spec: None,
                sort_order: None,
                properties: BTreeMap::new(),
            },
            &meta("t"),
        )
        .await
        .unwrap()
        .1;
    let err = lake
        .catalog
        .register_view(
            &main(),
            &key("db.x"),
            table.metadata_location.as_deref().unwrap(),
            &meta("r"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(rejected(err), ViewError::InvalidMetadata { .. }),
        "a table's file"
    );
}
