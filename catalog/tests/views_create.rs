//! Creating and loading Iceberg views: the metadata a PyIceberg create request makes, view
//! metadata as other writers left it, and views created, loaded and listed through `Catalog`
//! on branches, in the name space they share with tables.
#![allow(clippy::unwrap_used)]

mod common;

use common::lake::*;
use common::views::*;
// `lake` has a `create` too, which makes tables.
use common::views::create;

// ---- the model ----

#[test]
fn a_pyiceberg_create_request_becomes_version_1_on_schema_0() {
    let meta = created(&pyiceberg_create_request());
    assert_eq!(meta.view_uuid.to_string(), UUID);
    assert_eq!(meta.format_version, 1);
    assert_eq!(meta.location, "s3://b/db/daily", "no trailing slash");
    assert_eq!(meta.current_version_id, 1);
    assert_eq!(meta.schemas.len(), 1);
    assert_eq!(meta.schemas[0].schema_id, 0);
    let version = meta.current_version().unwrap();
    assert_eq!((version.version_id, version.schema_id), (1, 0));
    assert_eq!(version.default_namespace, vec!["db".to_owned()]);
    assert_eq!(version.dialects(), ["spark".to_owned()].into());
    assert_eq!(
        meta.version_log,
        vec![ViewHistoryEntry {
            timestamp_ms: 1_767_225_000_000,
            version_id: 1
        }],
        "logged at the version's own time"
    );
    assert_eq!(meta.properties["owner"], "ana");
    meta.validate().unwrap();

    // What a reader gets: every field the spec requires, `summary` and `default-namespace`
    // included, and no `default-catalog` when there is none.
    let out = serde_json::to_value(&meta).unwrap();
    for field in [
        "view-uuid",
        "format-version",
        "location",
        "schemas",
        "current-version-id",
        "versions",
        "version-log",
        "properties",
    ] {
        assert!(out.get(field).is_some(), "{field} missing: {out}");
    }
    let version = &out["versions"][0];
    assert_eq!(version["summary"], json!({}));
    assert_eq!(version["default-namespace"], json!(["db"]));
    assert!(version.get("default-catalog").is_none(), "{version}");
    assert_eq!(out["schemas"][0]["identifier-field-ids"], json!([]));
}

#[test]
fn a_create_ignores_the_ids_the_client_numbered_its_version_and_schema_with() {
    let mut request = pyiceberg_create_request();
    request["schema"]["schema-id"] = json!(7);
    request["view-version"]["schema-id"] = json!(7);
    request["view-version"]["version-id"] = json!(42);
    let meta = created(&request);
    assert_eq!(meta.schemas[0].schema_id, 0);
    assert_eq!(meta.current_version_id, 1);
    assert_eq!(meta.current_version().unwrap().schema_id, 0);
}

#[test]
fn view_metadata_keeps_fields_it_does_not_know() {
    let file = json!({
        "view-uuid": UUID,
        "format-version": 1,
        "location": "s3://bucket/warehouse/default.db/event_agg",
        "current-version-id": 1,
        "properties": {"comment": "Daily event counts"},
        "versions": [{
            "version-id": 1, "timestamp-ms": 1_573_518_431_292_i64, "schema-id": 1,
            "default-catalog": "prod", "default-namespace": ["default"],
            "summary": {"engine-name": "Spark", "engineVersion": "3.3.2"},
            "representations": [
                {"type": "sql", "sql": "SELECT COUNT(1) FROM events", "dialect": "spark"},
                {"type": "substrait", "plan": "AAEC"}
            ],
            "future-version-field": true
        }],
        "schemas": [{"schema-id": 1, "type": "struct", "fields": [
            {"id": 1, "name": "event_count", "required": false, "type": "int", "doc": "Count"}
        ]}],
        "version-log": [{"timestamp-ms": 1_573_518_431_292_i64, "version-id": 1}],
        "future-top-level-field": {"kept": [1, 2]}
    });
    let meta: ViewMetadata = serde_json::from_value(file.clone()).unwrap();
    meta.validate().unwrap();
    assert_eq!(meta.current_schema().unwrap().schema_id, 1);
    assert_eq!(meta.current_version().unwrap().dialects().len(), 1);
    assert_eq!(serde_json::to_value(&meta).unwrap(), file, "nothing lost");
}

#[test]
fn view_metadata_that_is_not_whole_is_invalid() {
    let meta = created(&pyiceberg_create_request());
    let mut no_version = meta.clone();
    no_version.current_version_id = 9;
    assert!(no_version.validate().is_err());
    let mut no_schema = meta.clone();
    no_schema.schemas.clear();
    assert!(no_schema.validate().is_err());
    let mut v2 = meta;
    v2.format_version = 2;
    assert!(v2.validate().is_err());
}

// ---- views in a catalog ----

#[tokio::test]
async fn create_writes_the_first_metadata_file_and_commits_the_entry() {
    let lake = lake().await;
    let before = head(&lake.catalog, "main").await;
    let (committed, view) = lake
        .catalog
        .create_view(
            &main(),
            &key("db.daily"),
            new_view(&pyiceberg_create_request(), ""),
            &meta("create"),
        )
        .await
        .unwrap();
    assert_eq!(committed.parent, before);
    let location = &view.metadata.location;
    let expected_dir = format!("file://{}/db/daily-", lake.root().display());
    assert!(location.starts_with(&expected_dir), "{location}");
    assert!(location.ends_with(&view.metadata.view_uuid.simple().to_string()));
    assert!(
        view.metadata_location
            .starts_with(&format!("{location}/metadata/00000-")),
        "{}",
        view.metadata_location
    );
    assert!(view.metadata_location.ends_with(".metadata.json"));
    assert_eq!(metadata_files(location).len(), 1);
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(local(&view.metadata_location)).unwrap()).unwrap();
    assert_eq!(
        on_disk,
        serde_json::to_value(view.metadata.as_ref()).unwrap()
    );

    assert!(
        lake.catalog
            .view_exists(&spec("main"), &key("db.daily"))
            .await
            .unwrap()
    );
    let loaded = lake
        .catalog
        .load_view(&spec("main"), &key("db.daily"))
        .await
        .unwrap();
    assert_eq!(loaded.metadata_location, view.metadata_location);
    assert_eq!(loaded.content_id, view.content_id);
    assert_eq!(loaded.metadata, view.metadata);
    let (entries, _) = lake
        .catalog
        .list_children(
            &spec("main"),
            Some(&key("db")),
            ContentKind::IcebergView,
            None,
            10,
        )
        .await
        .unwrap();
    assert!(matches!(
        &entries[0].1.content,
        pangolin_store::Content::IcebergView { version_id: 1, metadata_location }
            if *metadata_location == view.metadata_location
    ));
}

#[tokio::test]
async fn a_view_goes_where_the_client_or_the_namespace_says() {
    let lake = lake().await;
    let chosen = format!("file://{}/warehouse/elsewhere/v", lake.dir.path().display());
    let (_, view) = lake
        .catalog
        .create_view(
            &main(),
            &key("db.chosen"),
            new_view(&pyiceberg_create_request(), &format!("{chosen}/")),
            &meta("create"),
        )
        .await
        .unwrap();
    assert_eq!(view.metadata.location, chosen);
    assert_eq!(metadata_files(&chosen).len(), 1);

    let base = format!("file://{}/warehouse/ns-place", lake.dir.path().display());
    lake.catalog
        .create_namespace(
            &main(),
            &key("placed"),
            BTreeMap::from([("location".into(), base.clone())]),
            &meta("ns"),
        )
        .await
        .unwrap();
    let view = create(&lake.catalog, &main(), "placed.v").await;
    assert!(
        view.metadata.location.starts_with(&format!("{base}/v-")),
        "{}",
        view.metadata.location
    );
}

#[tokio::test]
async fn tables_and_views_share_one_name_space() {
    let lake = lake().await;
    create(&lake.catalog, &main(), "db.daily").await;
    let table = NewTable {
        location: String::new(),
        schema: serde_json::from_value::<Schema>(pyiceberg_schema()).unwrap(),
        partition_spec: None,
        sort_order: None,
        properties: BTreeMap::new(),
    };
    let err = lake
        .catalog
        .create_table(&main(), &key("db.daily"), table.clone(), &meta("t"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CommitError::Rejected(TableError::AlreadyExists {
                kind: ContentKind::IcebergView,
                ..
            })
        ),
        "{err}"
    );
    lake.catalog
        .create_table(&main(), &key("db.events"), table, &meta("t"))
        .await
        .unwrap();
    let err = lake
        .catalog
        .create_view(
            &main(),
            &key("db.events"),
            new_view(&pyiceberg_create_request(), ""),
            &meta("v"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            rejected(err),
            ViewError::AlreadyExists {
                kind: ContentKind::IcebergTable,
                ..
            }
        ),
        "a view cannot take a table's name"
    );
    let err = lake
        .catalog
        .create_view(
            &main(),
            &key("db.daily"),
            new_view(&pyiceberg_create_request(), ""),
            &meta("v"),
        )
        .await
        .unwrap_err();
    assert!(matches!(rejected(err), ViewError::AlreadyExists { .. }));

    // Each kind is seen only as itself.
    assert!(
        !lake
            .catalog
            .view_exists(&spec("main"), &key("db.events"))
            .await
            .unwrap()
    );
    assert!(
        !lake
            .catalog
            .table_exists(&spec("main"), &key("db.daily"))
            .await
            .unwrap()
    );
    let err = lake
        .catalog
        .load_view(&spec("main"), &key("db.events"))
        .await
        .unwrap_err();
    assert!(matches!(err, ViewError::NotFound(_)), "{err}");
    let (views, _) = lake
        .catalog
        .list_views(&spec("main"), &key("db"), None, 10)
        .await
        .unwrap();
    assert_eq!(views, vec![key("db.daily")]);
    let (tables, _) = lake
        .catalog
        .list_tables(&spec("main"), &key("db"), None, 10)
        .await
        .unwrap();
    assert_eq!(tables, vec![key("db.events")]);
    // A view cannot be dropped or renamed as a table, nor a table as a view.
    let err = lake
        .catalog
        .drop_table(&main(), &key("db.daily"), false, &meta("d"))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        CommitError::Rejected(TableError::NotFound(_))
    ));
    let err = lake
        .catalog
        .drop_view(&main(), &key("db.events"), &meta("d"))
        .await
        .unwrap_err();
    assert!(matches!(rejected(err), ViewError::NotFound(_)));
    let err = lake
        .catalog
        .rename_view(&main(), &key("db.daily"), &key("db.events"), &meta("r"))
        .await
        .unwrap_err();
    assert!(matches!(rejected(err), ViewError::AlreadyExists { .. }));
}

#[tokio::test]
async fn create_in_a_missing_namespace_is_refused() {
    let lake = lake().await;
    let err = lake
        .catalog
        .create_view(
            &main(),
            &key("nope.v"),
            new_view(&pyiceberg_create_request(), ""),
            &meta("v"),
        )
        .await
        .unwrap_err();
    assert!(matches!(rejected(err), ViewError::NamespaceNotFound(ref ns) if *ns == key("nope")));
    let err = lake
        .catalog
        .list_views(&spec("main"), &key("nope"), None, 10)
        .await
        .unwrap_err();
    assert!(matches!(err, ViewError::NamespaceNotFound(_)), "{err}");
}

#[tokio::test]
async fn list_views_pages_through_the_views_directly_in_a_namespace() {
    let lake = lake().await;
    lake.catalog
        .create_namespace(&main(), &key("db.inner"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    for name in ["db.c", "db.a", "db.b", "db.inner.deep"] {
        create(&lake.catalog, &main(), name).await;
    }
    let (first, next) = lake
        .catalog
        .list_views(&spec("main"), &key("db"), None, 2)
        .await
        .unwrap();
    assert_eq!(first, vec![key("db.a"), key("db.b")]);
    let (rest, next) = lake
        .catalog
        .list_views(&spec("main"), &key("db"), next.as_ref(), 2)
        .await
        .unwrap();
    assert_eq!(rest, vec![key("db.c")]);
    assert_eq!(next, None);
}

#[tokio::test]
async fn a_view_on_a_branch_is_invisible_on_main() {
    let lake = lake().await;
    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: branch("dev"),
            expected: Expected::Absent,
            target: Target::Set(head(&lake.catalog, "main").await),
        }],
        principal: "ana".into(),
        message: "branch".into(),
        time: Timestamp::now(),
    };
    lake.catalog
        .store()
        .transact(lake.catalog.odb().repo(), tx)
        .await
        .unwrap();
    create(&lake.catalog, &branch("dev"), "db.daily").await;
    assert!(
        lake.catalog
            .view_exists(&spec("dev"), &key("db.daily"))
            .await
            .unwrap()
    );
    assert!(
        !lake
            .catalog
            .view_exists(&spec("main"), &key("db.daily"))
            .await
            .unwrap()
    );
    let err = lake
        .catalog
        .load_view(&spec("main"), &key("db.daily"))
        .await
        .unwrap_err();
    assert!(matches!(err, ViewError::NotFound(_)));
    // The same name on main is another view, in another directory.
    let on_main = create(&lake.catalog, &main(), "db.daily").await;
    let on_dev = lake
        .catalog
        .load_view(&spec("dev"), &key("db.daily"))
        .await
        .unwrap();
    assert_ne!(on_main.metadata.location, on_dev.metadata.location);
}
