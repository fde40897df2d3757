//! Replacing Iceberg views: the view updates and requirements the Java client and PyIceberg
//! send, new versions and schemas, the version log and its expiry, and replaces through
//! `Catalog`, one at a time and by concurrent writers (memory and SQLite).
#![allow(clippy::unwrap_used)]

mod common;

use common::lake::*;
use common::views::*;
// `lake` has a `create` too, which makes tables.
use common::views::create;

// ---- updates as the Java client sends them, applied to the model ----

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

fn apply(base: &ViewMetadata, updates: &[ViewUpdate]) -> Result<ViewMetadata, ViewUpdateError> {
    let mut builder = ViewMetadataBuilder::new(base.clone());
    builder.apply_all(updates, NOW + 1_000)?;
    builder.build()
}

// ---- the model ----

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

fn requires_uuid(view: &LoadedView) -> Vec<ViewRequirement> {
    vec![ViewRequirement::AssertViewUuid {
        uuid: view.metadata.view_uuid,
    }]
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

/// Writers replacing one view at once: each lands on top of the others, and each writes its
/// metadata file once (on the replace queued before it, not beside it and then again).
async fn replaces_of_one_view_write_one_file_each(lake: Lake) {
    let view = create(&lake.catalog, &main(), "db.daily").await;
    const WRITERS: usize = 6;
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..WRITERS {
        let catalog = lake.catalog.clone();
        tasks.spawn(async move {
            catalog
                .replace_view(
                    &main(),
                    &key("db.daily"),
                    Vec::new(),
                    updates(json!([
                        {"action": "set-properties", "updates": {format!("w{n}"): "v"}}
                    ])),
                    &meta("props"),
                )
                .await
                .unwrap();
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap();
    }
    let loaded = lake
        .catalog
        .load_view(&spec("main"), &key("db.daily"))
        .await
        .unwrap();
    let written = (0..WRITERS)
        .filter(|n| loaded.metadata.properties.contains_key(&format!("w{n}")))
        .count();
    assert_eq!(written, WRITERS, "no replace lost");
    assert_eq!(
        metadata_files(&view.metadata.location).len(),
        WRITERS + 1,
        "one file per replace, and the create's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_replaces_of_one_view_write_one_file_each() {
    replaces_of_one_view_write_one_file_each(lake().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_replaces_of_one_view_write_one_file_each_on_sqlite() {
    replaces_of_one_view_write_one_file_each(sqlite_lake().await).await;
}
