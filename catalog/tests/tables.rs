//! Iceberg tables through `Catalog`: entries on branches pointing at metadata files written to a
//! local warehouse, on the memory backend (and SQLite for the commit races).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pangolin_backend_memory::MemoryBackend;
use pangolin_backend_sqlite::SqliteBackend;
use pangolin_catalog::TableChange;
use pangolin_catalog::iceberg::io::IoError;
use pangolin_catalog::iceberg::metadata::Schema;
use pangolin_catalog::iceberg::{FileIo, NewTable, TableRequirement, TableUpdate, UpdateError};
use pangolin_catalog::{
    Catalog, CommitError, CommitMeta, Committed, LoadedTable, RefSpec, Store, TableError, Warehouse,
};
use pangolin_refs::{Expected, RefName, RefUpdate, Reference, Target, Transaction};
use pangolin_store::{ContentKey, ContentKind, ObjectCache, ObjectId, Timestamp};
use serde_json::{Value, json};
use tempfile::TempDir;

fn key(path: &str) -> ContentKey {
    ContentKey::new(path.split('.')).unwrap()
}

fn meta(message: &str) -> CommitMeta {
    CommitMeta {
        principal: "ana".into(),
        message: message.into(),
        properties: BTreeMap::new(),
    }
}

fn spec(s: &str) -> RefSpec {
    RefSpec::parse(s).unwrap()
}

fn branch(name: &str) -> Reference {
    Reference::branch(RefName::new(name).unwrap())
}

fn main() -> Reference {
    branch("main")
}

/// A catalog with a warehouse in a temporary directory (kept alive with it).
struct Lake {
    catalog: Catalog,
    dir: TempDir,
}

impl Lake {
    fn root(&self) -> PathBuf {
        self.dir.path().join("warehouse")
    }
}

async fn lake_over(store: Arc<dyn Store>, dir: TempDir) -> Lake {
    let catalog = Catalog::create(
        store,
        Arc::new(ObjectCache::new(16 << 20)),
        "acme",
        "lake",
        "ana",
    )
    .await
    .unwrap();
    let root = format!("file://{}", dir.path().join("warehouse").display());
    let catalog = catalog.with_warehouse(Warehouse::new(root, Arc::new(FileIo::new(100))));
    let lake = Lake { catalog, dir };
    lake.catalog
        .create_namespace(&main(), &key("db"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    lake
}

async fn lake() -> Lake {
    lake_over(Arc::new(MemoryBackend::new()), tempfile::tempdir().unwrap()).await
}

async fn sqlite_lake() -> Lake {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteBackend::open(dir.path().join("catalog.db"))
        .await
        .unwrap();
    lake_over(Arc::new(store), dir).await
}

fn schema() -> Schema {
    serde_json::from_value(json!({
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": true, "type": "long"},
            {"id": 2, "name": "data", "required": false, "type": "string"}
        ]
    }))
    .unwrap()
}

fn new_table() -> NewTable {
    NewTable {
        location: String::new(),
        schema: schema(),
        partition_spec: None,
        sort_order: None,
        properties: BTreeMap::new(),
    }
}

async fn create(catalog: &Catalog, at: &Reference, name: &str) -> LoadedTable {
    catalog
        .create_table(at, &key(name), new_table(), &meta("create"))
        .await
        .unwrap()
        .1
}

fn update(value: Value) -> TableUpdate {
    serde_json::from_value(value).unwrap()
}

fn requirement(value: Value) -> TableRequirement {
    serde_json::from_value(value).unwrap()
}

fn requires_main_at(snapshot: Option<i64>) -> TableRequirement {
    requirement(json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": snapshot}))
}

/// An append as PyIceberg commits it: a snapshot, and main moved to it.
fn append_updates(snapshot_id: i64, parent: Option<i64>, sequence: i64) -> Vec<TableUpdate> {
    let mut snapshot = json!({
        "snapshot-id": snapshot_id,
        "sequence-number": sequence,
        "timestamp-ms": Timestamp::now().as_millis(),
        "manifest-list": format!("s3://elsewhere/snap-{snapshot_id}.avro"),
        "summary": {"operation": "append", "added-records": "1"},
        "schema-id": 0
    });
    if let Some(parent) = parent {
        snapshot["parent-snapshot-id"] = json!(parent);
    }
    vec![
        update(json!({"action": "add-snapshot", "snapshot": snapshot})),
        update(
            json!({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}),
        ),
    ]
}

/// Appends snapshot `snapshot_id` on top of `parent`, asserting main is at `parent`.
async fn append(
    catalog: &Catalog,
    at: &Reference,
    name: &str,
    snapshot_id: i64,
    parent: Option<i64>,
    sequence: i64,
) -> Result<(Committed, LoadedTable), CommitError<TableError>> {
    catalog
        .commit_table(
            at,
            &key(name),
            vec![requires_main_at(parent)],
            append_updates(snapshot_id, parent, sequence),
            &meta("append"),
        )
        .await
}

/// The local path of a `file://` location.
fn local(location: &str) -> PathBuf {
    PathBuf::from(location.strip_prefix("file://").unwrap())
}

/// File names in a table's `metadata` directory, sorted.
fn metadata_files(table_location: &str) -> Vec<String> {
    let dir = local(table_location).join("metadata");
    let mut names: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

fn file_name(location: &str) -> &str {
    location.rsplit('/').next().unwrap()
}

async fn head(catalog: &Catalog, at: &str) -> ObjectId {
    catalog.resolve(&spec(at)).await.unwrap().commit
}

/// Creates branch `name` at the head of `from`, through the store's ref transaction.
async fn new_branch(catalog: &Catalog, name: &str, from: &str) {
    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: branch(name),
            expected: Expected::Absent,
            target: Target::Set(head(catalog, from).await),
        }],
        principal: "ana".into(),
        message: "branch".into(),
        time: Timestamp::now(),
    };
    catalog
        .store()
        .transact(catalog.odb().repo(), tx)
        .await
        .unwrap();
}

fn count_files(dir: &Path) -> usize {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    count_files(&e.path())
                } else {
                    1
                }
            })
            .sum(),
        Err(_) => 0,
    }
}

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
/// other is told its requirement failed.
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_asserting_the_same_snapshot_let_exactly_one_win() {
    writers_asserting_the_same_snapshot_let_one_win(lake().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_asserting_the_same_snapshot_let_exactly_one_win_on_sqlite() {
    writers_asserting_the_same_snapshot_let_one_win(sqlite_lake().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_without_requirements_are_applied_on_top_of_each_other() {
    let lake = lake().await;
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
}

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

#[tokio::test]
async fn purge_is_refused_for_a_location_outside_the_warehouse() {
    let lake = lake().await;
    let outside = tempfile::tempdir().unwrap();
    let location = format!("file://{}/t", outside.path().display());
    // Such a table can only come from a catalog whose warehouse used to be wider.
    let wider = lake
        .catalog
        .clone()
        .with_warehouse(Warehouse::new("file:///", Arc::new(FileIo::new(10))));
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
