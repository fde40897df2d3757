//! A table's life after creation: renamed within and across namespaces, its metadata file
//! registered under another name, dropped with its files kept, and purged with its files
//! deleted unless another branch still holds them.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use axum::http::{Method, StatusCode};
use common::call;
use common::rest::{get, message, post};
use common::tables::{
    append, assert_error, create_ref, create_table, env, files_under, local, ref_hash, table_uri,
};
use serde_json::{Value, json};

#[tokio::test]
async fn rename_register_drop_and_purge() {
    let env = env().await;
    let app = &env.app;
    let created = create_table(app, "lake", "t").await;
    append(app, &table_uri("t"), 1, None).await;
    let (_, t) = get(app, &table_uri("t")).await;
    let uuid = t["metadata"]["table-uuid"].clone();
    assert_eq!(uuid, created["metadata"]["table-uuid"]);
    let location = t["metadata-location"].clone();
    let id = |namespace: &[&str], name: &str| json!({"namespace": namespace, "name": name});

    // Rename: the same table (identity, uuid, files) under the new name; the old name is gone.
    create_ref(app, "before-rename", "branch").await;
    let (status, body) = post(
        app,
        "/v1/lake/tables/rename",
        json!({"source": id(&["db"], "t"), "destination": id(&["db"], "t2")}),
    )
    .await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    let (status, renamed) = get(app, &table_uri("t2")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(renamed["metadata"]["table-uuid"], uuid);
    assert_eq!(renamed["metadata-location"], location);
    let (status, _) = get(app, &table_uri("t")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // What main would bring to the branch from before: the same content moved to a new key.
    let (status, diff) = post(
        app,
        "/api/v1/catalogs/lake/merge",
        json!({"source": "main", "target": "before-rename", "dry-run": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{diff}");
    let changes = diff["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "{diff}");
    let (gone, added) = (&changes[0], &changes[1]);
    assert_eq!(
        (
            &gone["key"],
            &gone["after"],
            &added["key"],
            &added["before"]
        ),
        (
            &json!(["db", "t"]),
            &Value::Null,
            &json!(["db", "t2"]),
            &Value::Null
        ),
        "{diff}"
    );
    assert!(gone["before"]["content-id"].is_string(), "{diff}");
    assert_eq!(
        gone["before"]["content-id"], added["after"]["content-id"],
        "{diff}"
    );
    assert_eq!(added["after"]["metadata-location"], location);
    // Into another namespace, and back.
    post(app, "/v1/lake/namespaces", json!({"namespace": ["other"]})).await;
    let (status, body) = post(
        app,
        "/v1/lake/tables/rename",
        json!({"source": id(&["db"], "t2"), "destination": id(&["other"], "t3")}),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (_, moved) = get(app, "/v1/lake/namespaces/other/tables/t3").await;
    assert_eq!(moved["metadata"]["table-uuid"], uuid);
    post(
        app,
        "/v1/lake/tables/rename",
        json!({"source": id(&["other"], "t3"), "destination": id(&["db"], "t2")}),
    )
    .await;

    create_table(app, "lake", "u").await;
    let head = ref_hash(app, "main").await;
    for (destination, status, kind) in [
        (
            id(&["missing"], "t9"),
            StatusCode::NOT_FOUND,
            "NoSuchNamespaceException",
        ),
        (
            id(&["db"], "u"),
            StatusCode::CONFLICT,
            "AlreadyExistsException",
        ),
        (
            id(&["db"], "t2"),
            StatusCode::CONFLICT,
            "AlreadyExistsException",
        ),
        (
            id(&["db"], "x\u{1}"),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
        ),
    ] {
        let (got, body) = post(
            app,
            "/v1/lake/tables/rename",
            json!({"source": id(&["db"], "t2"), "destination": destination}),
        )
        .await;
        assert_error(got, &body, status, kind);
        assert_eq!(ref_hash(app, "main").await, head, "{destination}");
    }
    let (status, body) = post(
        app,
        "/v1/lake/tables/rename",
        json!({"source": id(&["db"], "ghost"), "destination": id(&["db"], "g2")}),
    )
    .await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchTableException");
    let (status, _) = get(app, &table_uri("t2")).await;
    assert_eq!(status, StatusCode::OK);

    // Register an existing metadata file under another name; again only with overwrite.
    let (status, registered) = post(
        app,
        "/v1/lake/namespaces/db/register",
        json!({"name": "copy", "metadata-location": location}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{registered}");
    assert_eq!(registered["metadata-location"], location);
    let (_, copy) = get(app, &table_uri("copy")).await;
    assert_eq!(copy["metadata-location"], location);
    assert_eq!(copy["metadata"]["current-snapshot-id"], 1);
    let head = ref_hash(app, "main").await;
    let (status, body) = post(
        app,
        "/v1/lake/namespaces/db/register",
        json!({"name": "u", "metadata-location": location}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "AlreadyExistsException",
    );
    let (status, body) = post(
        app,
        "/v1/lake/namespaces/db/register",
        json!({"name": "x", "metadata-location": format!("{}/nothing.metadata.json", env.root())}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = post(
        app,
        "/v1/lake/namespaces/missing/register",
        json!({"name": "x", "metadata-location": location}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::NOT_FOUND,
        "NoSuchNamespaceException",
    );
    assert_eq!(ref_hash(app, "main").await, head);
    let (status, body) = post(
        app,
        "/v1/lake/namespaces/db/register",
        json!({"name": "u", "metadata-location": location, "overwrite": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, u) = get(app, &table_uri("u")).await;
    assert_eq!(u["metadata-location"], location);

    // Drop without purge: the entry goes, the files stay.
    let (status, body) = call(app, Method::DELETE, &table_uri("copy"), None).await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    let (status, body) = get(app, &table_uri("copy")).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchTableException");
    let (status, body) = call(app, Method::DELETE, &table_uri("copy"), None).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchTableException");
    assert!(local(location.as_str().unwrap()).is_file());

    // Purge deletes the table's files.
    let purged = create_table(app, "lake", "p").await;
    append(app, &table_uri("p"), 7, None).await;
    let dir = local(purged["metadata"]["location"].as_str().unwrap());
    assert_eq!(files_under(&dir).len(), 2);
    let (status, body) = call(
        app,
        Method::DELETE,
        &format!("{}?purgeRequested=maybe", table_uri("p")),
        None,
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    let (status, body) = call(
        app,
        Method::DELETE,
        &format!("{}?purgeRequested=True", table_uri("p")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(files_under(&dir), Vec::<PathBuf>::new());
    let (status, _) = get(app, &table_uri("p")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Other tables' files are untouched.
    assert!(local(location.as_str().unwrap()).is_file());

    // Not while another branch holds the same table: its files are that branch's data too.
    let held = create_table(app, "lake", "q").await;
    let dir = local(held["metadata"]["location"].as_str().unwrap());
    create_ref(app, "dev", "branch").await;
    let head = ref_hash(app, "main").await;
    let (status, body) = call(
        app,
        Method::DELETE,
        &format!("{}?purgeRequested=true", table_uri("q")),
        None,
    )
    .await;
    assert_error(status, &body, StatusCode::CONFLICT, "ConflictException");
    assert!(message(&body).contains("dev"), "{body}");
    assert_eq!(ref_hash(app, "main").await, head);
    assert_eq!(files_under(&dir).len(), 1);
    let (status, _) = get(app, &table_uri("q")).await;
    assert_eq!(status, StatusCode::OK);
    // Once dev drops it, main may purge it.
    let (status, body) = call(app, Method::DELETE, &table_uri("q@dev"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, body) = call(
        app,
        Method::DELETE,
        &format!("{}?purgeRequested=true", table_uri("q")),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(files_under(&dir), Vec::<PathBuf>::new());
}
