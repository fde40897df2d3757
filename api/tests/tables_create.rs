//! Creating tables: the whole metadata written to the warehouse at the default or a given
//! location, partition specs, sort orders and format versions, and staged creates that write
//! nothing until the client commits them.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use axum::http::{Method, StatusCode};
use common::call;
use common::rest::{get, message, post, schema};
use common::tables::{assert_error, create_table, env, files_under, local, ref_hash, table_uri};
use serde_json::{Value, json};

fn partition_spec() -> Value {
    json!({"spec-id": 0, "fields": [
        {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1}
    ]})
}

fn write_order() -> Value {
    json!({"order-id": 1, "fields": [
        {"source-id": 2, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}
    ]})
}

#[tokio::test]
async fn created_tables_have_whole_metadata_written_to_the_warehouse() {
    let env = env().await;
    let app = &env.app;
    let root = env.root();

    // Unpartitioned, at the default location.
    let plain = create_table(app, "lake", "plain").await;
    let location = plain["metadata-location"].as_str().unwrap();
    assert!(
        location.starts_with(&format!("{root}/db/plain-")),
        "{location}"
    );
    assert!(location.contains("/metadata/00000-"), "{location}");
    assert!(location.ends_with(".metadata.json"), "{location}");
    let meta = &plain["metadata"];
    assert_eq!(plain["config"], json!({}));
    assert_eq!(meta["format-version"], 2);
    assert_eq!(meta["current-schema-id"], 0);
    assert_eq!(meta["last-column-id"], 2);
    assert_eq!(meta["schemas"][0]["fields"], schema()["fields"]);
    assert_eq!(
        meta["partition-specs"],
        json!([{"spec-id": 0, "fields": []}])
    );
    assert_eq!(meta["default-spec-id"], 0);
    assert_eq!(meta["sort-orders"], json!([{"order-id": 0, "fields": []}]));
    assert_eq!(meta["default-sort-order-id"], 0);
    assert_eq!(meta["current-snapshot-id"], -1);
    assert_eq!(meta["snapshots"], json!([]));
    assert_eq!(meta["metadata-log"], json!([]));
    assert!(
        location.starts_with(&format!("{}/metadata/", meta["location"].as_str().unwrap())),
        "{plain}"
    );
    // The file on disk is what the client was told.
    let written: Value = serde_json::from_slice(&std::fs::read(local(location)).unwrap()).unwrap();
    assert_eq!(&written, meta);

    // Partitioned and sorted: partition field ids assigned from 1000, sort order 1 default.
    let (status, sorted) = post(
        app,
        "/v1/lake/namespaces/db/tables",
        json!({"name": "sorted", "schema": schema(), "partition-spec": partition_spec(),
               "write-order": write_order()}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{sorted}");
    let meta = &sorted["metadata"];
    assert_eq!(meta["partition-specs"][0]["fields"][0]["field-id"], 1000);
    assert_eq!(meta["partition-specs"][0]["fields"][0]["source-id"], 1);
    assert_eq!(meta["last-partition-id"], 1000);
    assert_eq!(meta["default-spec-id"], 0);
    assert_eq!(meta["default-sort-order-id"], 1);
    let orders = meta["sort-orders"].as_array().unwrap();
    let default_order = orders.iter().find(|o| o["order-id"] == 1).unwrap();
    assert_eq!(default_order["fields"], write_order()["fields"]);
    assert!(local(sorted["metadata-location"].as_str().unwrap()).is_file());

    // An explicit location (the trailing slash dropped), files below it.
    let custom = format!("{root}/custom/place");
    let (status, placed) = post(
        app,
        "/v1/lake/namespaces/db/tables",
        json!({"name": "placed", "schema": schema(), "location": format!("{custom}/")}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{placed}");
    assert_eq!(placed["metadata"]["location"], json!(custom));
    let placed_location = placed["metadata-location"].as_str().unwrap();
    assert!(
        placed_location.starts_with(&format!("{custom}/metadata/00000-")),
        "{placed_location}"
    );
    assert!(local(placed_location).is_file());

    // Format version 3 through the `format-version` property, which is not kept.
    let (status, v3) = post(
        app,
        "/v1/lake/namespaces/db/tables",
        json!({"name": "v3", "schema": schema(),
               "properties": {"format-version": "3", "owner": "ana"}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v3}");
    assert_eq!(v3["metadata"]["format-version"], 3);
    assert_eq!(v3["metadata"]["properties"], json!({"owner": "ana"}));
    assert_eq!(v3["metadata"]["next-row-id"], 0);
    let (_, loaded) = get(app, &table_uri("v3")).await;
    assert_eq!(loaded["metadata"]["format-version"], 3);

    // An unsupported format version is refused and creates nothing.
    let head = ref_hash(app, "main").await;
    let (status, body) = post(
        app,
        "/v1/lake/namespaces/db/tables",
        json!({"name": "v9", "schema": schema(), "properties": {"format-version": "9"}}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    assert!(message(&body).contains('9'), "{body}");
    assert_eq!(ref_hash(app, "main").await, head);

    let (_, listed) = get(app, "/v1/lake/namespaces/db/tables").await;
    let names: Vec<&str> = listed["identifiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["placed", "plain", "sorted", "v3"]);
}

#[tokio::test]
async fn a_staged_create_writes_nothing_until_its_commit() {
    let env = env().await;
    let app = &env.app;
    let head = ref_hash(app, "main").await;
    let (status, staged) = post(
        app,
        "/v1/lake/namespaces/db/tables",
        json!({"name": "staged", "schema": schema(), "partition-spec": partition_spec(),
               "write-order": write_order(), "stage-create": true,
               "properties": {"format-version": "3", "k": "v"}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{staged}");
    assert_eq!(staged["metadata-location"], Value::Null);
    let meta = staged["metadata"].clone();
    assert_eq!(meta["format-version"], 3);
    assert_eq!(meta["properties"], json!({"k": "v"}));
    let location = meta["location"].as_str().unwrap().to_owned();
    assert!(location.starts_with(&format!("{}/db/staged-", env.root())));

    // Nothing exists yet: no entry, no commit, no file.
    let (status, _) = call(app, Method::HEAD, &table_uri("staged"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(ref_hash(app, "main").await, head);
    assert_eq!(files_under(env.dir.path()), Vec::<PathBuf>::new());

    // What a client sends to finish the staged create.
    let updates = json!([
        {"action": "assign-uuid", "uuid": meta["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": 3},
        {"action": "add-schema", "schema": meta["schemas"][0], "last-column-id": 2},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": meta["partition-specs"][0]},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": meta["sort-orders"][0]},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": location},
        {"action": "set-properties", "updates": {"k": "v"}}
    ]);
    let (status, created) = post(
        app,
        &table_uri("staged"),
        json!({
            "identifier": {"namespace": ["db"], "name": "staged"},
            "requirements": [{"type": "assert-create"}],
            "updates": updates,
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let created_location = created["metadata-location"].as_str().unwrap();
    assert!(
        created_location.starts_with(&format!("{location}/metadata/00000-")),
        "{created_location}"
    );
    let created_meta = &created["metadata"];
    for field in [
        "table-uuid",
        "location",
        "format-version",
        "schemas",
        "current-schema-id",
        "partition-specs",
        "default-spec-id",
        "last-partition-id",
        "sort-orders",
        "default-sort-order-id",
        "properties",
        "next-row-id",
    ] {
        assert_eq!(created_meta[field], meta[field], "{field}");
    }
    assert!(local(created_location).is_file());
    assert_ne!(ref_hash(app, "main").await, head);
    let (status, loaded) = get(app, &table_uri("staged")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(loaded["metadata-location"], json!(created_location));

    // A second `assert-create` finds the table: refused, nothing moves.
    let head = ref_hash(app, "main").await;
    let (status, body) = post(
        app,
        &table_uri("staged"),
        json!({"requirements": [{"type": "assert-create"}], "updates": updates}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(ref_hash(app, "main").await, head);
}
