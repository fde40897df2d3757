//! Iceberg views: the view metadata model with the JSON PyIceberg and the Java client send, and
//! views through `Catalog` on branches, with metadata files in a local warehouse.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use pangolin_backend_memory::MemoryBackend;
use pangolin_backend_sqlite::SqliteBackend;
use pangolin_catalog::iceberg::metadata::Schema;
use pangolin_catalog::iceberg::view::{ViewHistoryEntry, ViewRepresentation};
use pangolin_catalog::iceberg::{
    FileIo, IoError, NewTable, NewView, ViewMetadata, ViewMetadataBuilder, ViewRequirement,
    ViewUpdate, ViewUpdateError, ViewVersion, new_view_metadata,
};
use pangolin_catalog::{
    Catalog, CommitError, CommitMeta, LoadedView, RefSpec, Store, TableError, ViewError, Warehouse,
};
use pangolin_refs::{Expected, RefName, RefUpdate, Reference, Target, Transaction};
use pangolin_store::{ContentKey, ContentKind, ObjectCache, ObjectId, Timestamp};
use serde_json::{Value, json};
use tempfile::TempDir;

const NOW: i64 = 1_767_225_600_000;
const UUID: &str = "fa6506c3-7681-40c8-86dc-e36561f83385";

// ---- JSON as clients send it ----

/// The schema of a view as PyIceberg sends it (`identifier-field-ids: []`, fields in its order).
fn pyiceberg_schema() -> Value {
    json!({"type": "struct", "fields": [
        {"id": 1, "name": "id", "type": "long", "required": true},
        {"id": 2, "name": "name", "type": "string", "required": false}
    ], "schema-id": 0, "identifier-field-ids": []})
}

/// PyIceberg 0.12's `CreateViewRequest` body, as `create_view` sends it (no location).
fn pyiceberg_create_request() -> Value {
    json!({
        "name": "daily",
        "schema": pyiceberg_schema(),
        "view-version": {
            "version-id": 1, "schema-id": 0, "timestamp-ms": 1_767_225_000_000_i64,
            "summary": {},
            "representations": [{"type": "sql", "sql": "SELECT id, name FROM db.t", "dialect": "spark"}],
            "default-namespace": ["db"]
        },
        "properties": {"owner": "ana"}
    })
}

/// The Java client's view version (Spark `CREATE VIEW`): engine summary, a default catalog.
fn java_version(version_id: i32, schema_id: i32, sql: &str, timestamp_ms: i64) -> Value {
    json!({
        "version-id": version_id,
        "timestamp-ms": timestamp_ms,
        "schema-id": schema_id,
        "summary": {"engine-name": "Spark", "engine-version": "3.5.4",
                    "iceberg-version": "Apache Iceberg 1.10.0", "app-id": "local-1"},
        "default-catalog": "pangolin",
        "default-namespace": ["default"],
        "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}]
    })
}

fn java_schema(schema_id: i32, columns: &[&str]) -> Value {
    let fields: Vec<Value> = columns
        .iter()
        .enumerate()
        .map(|(i, name)| json!({"id": i + 1, "name": name, "required": false, "type": "long"}))
        .collect();
    json!({"type": "struct", "schema-id": schema_id, "fields": fields})
}

/// The updates the Java client sends for `CREATE OR REPLACE VIEW` with a new schema.
fn java_replace_updates(columns: &[&str], sql: &str, timestamp_ms: i64) -> Vec<ViewUpdate> {
    updates(json!([
        {"action": "set-properties", "updates": {"engine_version": "Spark 3.5.4"}},
        {"action": "add-schema", "schema": java_schema(1, columns), "last-column-id": columns.len()},
        {"action": "add-view-version", "view-version": java_version(2, -1, sql, timestamp_ms)},
        {"action": "set-current-view-version", "view-version-id": -1}
    ]))
}

fn updates(value: Value) -> Vec<ViewUpdate> {
    serde_json::from_value(value).unwrap()
}

fn new_view(request: &Value, location: &str) -> NewView {
    NewView {
        location: location.to_owned(),
        schema: serde_json::from_value(request["schema"].clone()).unwrap(),
        version: serde_json::from_value(request["view-version"].clone()).unwrap(),
        properties: serde_json::from_value(request["properties"].clone()).unwrap(),
    }
}

fn created(request: &Value) -> ViewMetadata {
    new_view_metadata(
        new_view(request, "s3://b/db/daily/"),
        UUID.parse().unwrap(),
        NOW,
    )
    .unwrap()
}

fn apply(base: &ViewMetadata, updates: &[ViewUpdate]) -> Result<ViewMetadata, ViewUpdateError> {
    let mut builder = ViewMetadataBuilder::new(base.clone());
    builder.apply_all(updates, NOW + 1_000)?;
    builder.build()
}

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

#[test]
fn a_java_replace_adds_a_schema_and_a_version_and_logs_it() {
    let base = created(&pyiceberg_create_request());
    let replaced = apply(
        &base,
        &java_replace_updates(&["a", "b", "c"], "SELECT 1, 2, 3", NOW + 500),
    )
    .unwrap();
    assert_eq!(replaced.schemas.len(), 2);
    assert_eq!(replaced.current_version_id, 2);
    let version = replaced.current_version().unwrap();
    assert_eq!(version.schema_id, 1, "`-1` is the schema added before");
    assert_eq!(version.default_catalog.as_deref(), Some("pangolin"));
    assert_eq!(version.summary["engine-name"], "Spark");
    assert_eq!(replaced.properties["engine_version"], "Spark 3.5.4");
    assert_eq!(replaced.properties["owner"], "ana", "kept");
    assert_eq!(
        replaced.version_log.last(),
        Some(&ViewHistoryEntry {
            timestamp_ms: NOW + 500,
            version_id: 2
        })
    );
    assert_eq!(replaced.view_uuid, base.view_uuid);
}

#[test]
fn an_identical_version_reuses_the_known_one() {
    let base = created(&pyiceberg_create_request());
    let replaced = apply(&base, &java_replace_updates(&["a"], "SELECT 1", NOW + 500)).unwrap();
    // Back to the first definition: the same version, made current again now.
    let mut first = base.current_version().unwrap().clone();
    first.version_id = -1;
    first.timestamp_ms = NOW + 900;
    let back = apply(
        &replaced,
        &[
            ViewUpdate::AddViewVersion {
                view_version: first,
            },
            ViewUpdate::SetCurrentViewVersion {
                view_version_id: -1,
            },
        ],
    )
    .unwrap();
    assert_eq!(back.versions.len(), 2, "no third version");
    assert_eq!(back.current_version_id, 1);
    assert_eq!(
        back.version_log.last(),
        Some(&ViewHistoryEntry {
            timestamp_ms: NOW + 1_000,
            version_id: 1
        }),
        "an older version made current is logged at the time of the change"
    );
    // Adding the current definition again changes nothing.
    let same = apply(
        &back,
        &updates(json!([
            {"action": "add-schema", "schema": pyiceberg_schema()},
            {"action": "add-view-version", "view-version": serde_json::to_value(back.current_version().unwrap()).unwrap()},
            {"action": "set-current-view-version", "view-version-id": -1}
        ])),
    )
    .unwrap();
    assert_eq!(same.versions, back.versions);
    assert_eq!(same.schemas, back.schemas);
    assert_eq!(same.version_log, back.version_log);
}

#[test]
fn a_version_id_the_client_picks_is_kept_unless_taken() {
    let base = created(&pyiceberg_create_request());
    let mut version: ViewVersion =
        serde_json::from_value(java_version(5, 0, "SELECT 5", NOW)).unwrap();
    let meta = apply(
        &base,
        &[
            ViewUpdate::AddViewVersion {
                view_version: version.clone(),
            },
            ViewUpdate::SetCurrentViewVersion { view_version_id: 5 },
        ],
    )
    .unwrap();
    assert_eq!(meta.current_version_id, 5);
    version.version_id = 1;
    version.representations = vec![ViewRepresentation::sql("SELECT 6", "spark")];
    let meta = apply(
        &meta,
        &[ViewUpdate::AddViewVersion {
            view_version: version,
        }],
    )
    .unwrap();
    let ids: Vec<i32> = meta.versions.iter().map(|v| v.version_id).collect();
    assert_eq!(ids, vec![1, 5, 6], "1 is taken: one above the highest");
    assert_eq!(meta.current_version_id, 5, "adding does not make current");
}

#[test]
fn set_and_remove_properties_and_set_location() {
    let base = created(&pyiceberg_create_request());
    let meta = apply(
        &base,
        &updates(json!([
            {"action": "set-properties", "updates": {"a": "1", "b": "2"}},
            {"action": "remove-properties", "removals": ["a", "owner", "absent"]},
            {"action": "set-location", "location": "s3://other/place/"},
            {"action": "assign-uuid", "uuid": UUID},
            {"action": "upgrade-format-version", "format-version": 1}
        ])),
    )
    .unwrap();
    assert_eq!(meta.properties, BTreeMap::from([("b".into(), "2".into())]));
    assert_eq!(meta.location, "s3://other/place");
    assert_eq!(meta.versions, base.versions);
    assert_eq!(meta.version_log, base.version_log, "no new current version");
}

#[test]
fn updates_that_cannot_apply_are_refused() {
    let base = created(&pyiceberg_create_request());
    let refused = |value: Value| apply(&base, &updates(value)).unwrap_err();
    assert_eq!(
        refused(json!([{"action": "set-current-view-version", "view-version-id": 9}])),
        ViewUpdateError::Unknown {
            kind: "view version",
            id: 9
        }
    );
    assert_eq!(
        refused(json!([{"action": "set-current-view-version", "view-version-id": -1}])),
        ViewUpdateError::NothingAdded("view version")
    );
    assert_eq!(
        refused(
            json!([{"action": "add-view-version", "view-version": java_version(2, -1, "SELECT 2", NOW)}])
        ),
        ViewUpdateError::NothingAdded("schema")
    );
    assert_eq!(
        refused(
            json!([{"action": "add-view-version", "view-version": java_version(2, 4, "SELECT 2", NOW)}])
        ),
        ViewUpdateError::Unknown {
            kind: "schema",
            id: 4
        }
    );
    let mut two_sparks = java_version(2, 0, "SELECT 2", NOW);
    two_sparks["representations"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "sql", "sql": "SELECT 3", "dialect": "Spark"}));
    assert_eq!(
        refused(json!([{"action": "add-view-version", "view-version": two_sparks}])),
        ViewUpdateError::DuplicateDialect("spark".into())
    );
    let mut no_dialect = java_version(2, 0, "SELECT 2", NOW);
    no_dialect["representations"] = json!([{"type": "sql", "sql": "SELECT 2"}]);
    assert_eq!(
        refused(json!([{"action": "add-view-version", "view-version": no_dialect}])),
        ViewUpdateError::IncompleteSql
    );
    assert!(matches!(
        refused(json!([{"action": "assign-uuid", "uuid": "00000000-0000-0000-0000-000000000001"}])),
        ViewUpdateError::ReassignUuid { .. }
    ));
    assert_eq!(
        refused(json!([{"action": "upgrade-format-version", "format-version": 2}])),
        ViewUpdateError::UnsupportedFormatVersion(2)
    );
    assert_eq!(
        refused(json!([{"action": "upgrade-format-version", "format-version": 0}])),
        ViewUpdateError::Downgrade { from: 1, to: 0 }
    );
    assert_eq!(
        refused(json!([{"action": "set-location", "location": "/"}])),
        ViewUpdateError::EmptyLocation
    );
    assert_eq!(
        refused(
            json!([{"action": "set-properties", "updates": {"version.history.num-entries": "0"}}])
        ),
        ViewUpdateError::HistorySize("0".into())
    );
}

#[test]
fn a_replace_may_not_drop_a_dialect_unless_allowed() {
    let mut request = pyiceberg_create_request();
    request["view-version"]["representations"] = json!([
        {"type": "sql", "sql": "SELECT 1", "dialect": "spark"},
        {"type": "sql", "sql": "SELECT 1", "dialect": "trino"}
    ]);
    let base = created(&request);
    let spark_only = java_replace_updates(&["a"], "SELECT 2", NOW);
    assert_eq!(
        apply(&base, &spark_only).unwrap_err(),
        ViewUpdateError::DialectDropped {
            missing: vec!["trino".into()]
        }
    );
    let mut allowed = updates(json!([
        {"action": "set-properties", "updates": {"replace.drop-dialect.allowed": "true"}}
    ]));
    allowed.extend(spark_only);
    let meta = apply(&base, &allowed).unwrap();
    assert_eq!(meta.current_version().unwrap().dialects().len(), 1);
}

#[test]
fn old_versions_expire_and_the_log_forgets_them() {
    let mut meta = created(&pyiceberg_create_request());
    meta = apply(
        &meta,
        &updates(json!([
            {"action": "set-properties", "updates": {"version.history.num-entries": "2"}}
        ])),
    )
    .unwrap();
    for n in 2..=4 {
        let version = java_version(-1, 0, &format!("SELECT {n}"), NOW + i64::from(n));
        meta = apply(
            &meta,
            &updates(json!([
                {"action": "add-view-version", "view-version": version},
                {"action": "set-current-view-version", "view-version-id": -1}
            ])),
        )
        .unwrap();
    }
    let ids: Vec<i32> = meta.versions.iter().map(|v| v.version_id).collect();
    assert_eq!(ids, vec![3, 4]);
    let logged: Vec<i32> = meta.version_log.iter().map(|e| e.version_id).collect();
    assert_eq!(logged, vec![3, 4], "nothing before an expired version");
    meta.validate().unwrap();
}

#[test]
fn unknown_actions_fields_and_requirements_do_not_parse() {
    for bad in [
        json!({"action": "add-snapshot", "snapshot": {}}),
        json!({"action": "set-current-view-version", "view-version-id": 1, "extra": 1}),
        json!({"action": "set-properties"}),
    ] {
        assert!(
            serde_json::from_value::<ViewUpdate>(bad.clone()).is_err(),
            "{bad}"
        );
    }
    assert!(
        serde_json::from_value::<ViewRequirement>(
            json!({"type": "assert-table-uuid", "uuid": UUID})
        )
        .is_err()
    );
}

#[test]
fn assert_view_uuid_holds_only_for_the_view_itself() {
    let meta = created(&pyiceberg_create_request());
    let holds: ViewRequirement =
        serde_json::from_value(json!({"type": "assert-view-uuid", "uuid": UUID})).unwrap();
    holds.check(&meta).unwrap();
    let other = ViewRequirement::AssertViewUuid {
        uuid: uuid::Uuid::new_v4(),
    };
    assert!(other.check(&meta).is_err());
}

// ---- views in a catalog ----

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

async fn create(catalog: &Catalog, at: &Reference, name: &str) -> LoadedView {
    catalog
        .create_view(
            at,
            &key(name),
            new_view(&pyiceberg_create_request(), ""),
            &meta("create view"),
        )
        .await
        .unwrap()
        .1
}

async fn head(catalog: &Catalog, at: &str) -> ObjectId {
    catalog.resolve(&spec(at)).await.unwrap().commit
}

fn local(location: &str) -> PathBuf {
    PathBuf::from(location.strip_prefix("file://").unwrap())
}

fn metadata_files(view_location: &str) -> Vec<String> {
    let dir = local(view_location).join("metadata");
    let mut names: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

fn rejected(err: CommitError<ViewError>) -> ViewError {
    match err {
        CommitError::Rejected(e) => e,
        other => panic!("not a refusal: {other}"),
    }
}

fn requires_uuid(view: &LoadedView) -> Vec<ViewRequirement> {
    vec![ViewRequirement::AssertViewUuid {
        uuid: view.metadata.view_uuid,
    }]
}

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
async fn replace_writes_the_next_file_and_keeps_the_identity() {
    let lake = lake().await;
    let view = create(&lake.catalog, &main(), "db.daily").await;
    let before = head(&lake.catalog, "main").await;
    let (committed, replaced) = lake
        .catalog
        .replace_view(
            &main(),
            &key("db.daily"),
            requires_uuid(&view),
            java_replace_updates(&["a", "b"], "SELECT 1, 2", NOW),
            &meta("replace"),
        )
        .await
        .unwrap();
    assert_eq!(committed.parent, before);
    assert_eq!(replaced.content_id, view.content_id);
    assert_eq!(replaced.metadata.current_version_id, 2);
    assert_eq!(replaced.metadata.version_log.len(), 2);
    assert!(
        replaced.metadata_location.contains("/metadata/00001-"),
        "{}",
        replaced.metadata_location
    );
    assert_eq!(metadata_files(&view.metadata.location).len(), 2);
    let loaded = lake
        .catalog
        .load_view(&spec("main"), &key("db.daily"))
        .await
        .unwrap();
    assert_eq!(loaded.metadata, replaced.metadata);
    // The view as it was is still there at the commit before.
    let old = lake
        .catalog
        .load_view(&spec("main~1"), &key("db.daily"))
        .await
        .unwrap();
    assert_eq!(old.metadata, view.metadata);
}

#[tokio::test]
async fn a_failing_requirement_or_update_changes_nothing() {
    let lake = lake().await;
    let view = create(&lake.catalog, &main(), "db.daily").await;
    let before = head(&lake.catalog, "main").await;
    let err = lake
        .catalog
        .replace_view(
            &main(),
            &key("db.daily"),
            vec![ViewRequirement::AssertViewUuid {
                uuid: uuid::Uuid::new_v4(),
            }],
            java_replace_updates(&["a"], "SELECT 1", NOW),
            &meta("replace"),
        )
        .await
        .unwrap_err();
    assert!(matches!(rejected(err), ViewError::RequirementFailed(_)));
    let err = lake
        .catalog
        .replace_view(
            &main(),
            &key("db.daily"),
            requires_uuid(&view),
            updates(json!([{"action": "set-current-view-version", "view-version-id": 7}])),
            &meta("replace"),
        )
        .await
        .unwrap_err();
    assert!(matches!(rejected(err), ViewError::Update(_)));
    let err = lake
        .catalog
        .replace_view(
            &main(),
            &key("db.nope"),
            Vec::new(),
            java_replace_updates(&["a"], "SELECT 1", NOW),
            &meta("replace"),
        )
        .await
        .unwrap_err();
    assert!(matches!(rejected(err), ViewError::NotFound(_)));
    assert_eq!(head(&lake.catalog, "main").await, before);
    assert_eq!(metadata_files(&view.metadata.location).len(), 1);

    // Requirements alone are checked and commit nothing.
    let (committed, same) = lake
        .catalog
        .replace_view(
            &main(),
            &key("db.daily"),
            requires_uuid(&view),
            Vec::new(),
            &meta("check"),
        )
        .await
        .unwrap();
    assert_eq!((committed.commit, committed.attempts), (before, 0));
    assert_eq!(same.metadata, view.metadata);
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

/// Writers replacing two views of one branch at once: every replace lands, and one rebased past
/// the other view's change writes no second file.
async fn replaces_of_different_views_all_land(lake: Lake) {
    create(&lake.catalog, &main(), "db.a").await;
    create(&lake.catalog, &main(), "db.b").await;
    const REPLACES: usize = 4;
    let mut tasks = tokio::task::JoinSet::new();
    for name in ["db.a", "db.b"] {
        let catalog = lake.catalog.clone();
        tasks.spawn(async move {
            for n in 0..REPLACES {
                catalog
                    .replace_view(
                        &main(),
                        &key(name),
                        Vec::new(),
                        updates(json!([
                            {"action": "set-properties", "updates": {format!("k{n}"): "v"}}
                        ])),
                        &meta("props"),
                    )
                    .await
                    .unwrap();
            }
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap();
    }
    for name in ["db.a", "db.b"] {
        let view = lake
            .catalog
            .load_view(&spec("main"), &key(name))
            .await
            .unwrap();
        assert_eq!(view.metadata.properties.len(), REPLACES + 1, "{name}");
        assert_eq!(
            metadata_files(&view.metadata.location).len(),
            REPLACES + 1,
            "{name}: one file per landed commit"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_replaces_of_different_views_all_land() {
    replaces_of_different_views_all_land(lake().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_replaces_of_different_views_all_land_on_sqlite() {
    replaces_of_different_views_all_land(sqlite_lake().await).await;
}
