//! Committing to a table: requirements checked against the current metadata, each commit a
//! new metadata file chained to the ones before, and refused commits that move nothing.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::StatusCode;
use common::rest::{get, message, post};
use common::tables::{
    append, assert_error, commit, create_ref, create_table, env, local, ref_hash, snapshot,
    table_uri,
};
use serde_json::{Value, json};

#[tokio::test]
async fn commits_check_requirements_and_chain_metadata_files() {
    let env = env().await;
    let app = &env.app;
    let created = create_table(app, "lake", "t").await;
    let uuid = created["metadata"]["table-uuid"].clone();
    let first = created["metadata-location"].as_str().unwrap().to_owned();
    let uri = table_uri("t");
    let before = ref_hash(app, "main").await;

    let (status, body) = commit(
        app,
        &uri,
        json!([
            {"type": "assert-table-uuid", "uuid": uuid},
            {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": null}
        ]),
        json!([
            {"action": "add-snapshot", "snapshot": snapshot(1, None, 1)},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 1}
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let second = body["metadata-location"].as_str().unwrap().to_owned();
    assert!(second.contains("/metadata/00001-"), "{second}");
    assert!(first.contains("/metadata/00000-"), "{first}");
    assert!(local(&first).is_file() && local(&second).is_file());
    let meta = &body["metadata"];
    assert_eq!(meta["current-snapshot-id"], 1);
    assert_eq!(
        meta["refs"]["main"],
        json!({"snapshot-id": 1, "type": "branch"})
    );
    assert_eq!(meta["last-sequence-number"], 1);
    let log = meta["metadata-log"].as_array().unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["metadata-file"], json!(first));
    let moved = ref_hash(app, "main").await;
    assert_ne!(moved, before);
    // The catalog commit says which table it changed.
    let (_, described) = get(app, "/api/v1/catalogs/lake/refs/main").await;
    assert_eq!(described["message"], "commit table db.t", "{described}");

    // The same commit again: the client's view is stale now.
    let (status, body) = commit(
        app,
        &uri,
        json!([{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": null}]),
        json!([
            {"action": "add-snapshot", "snapshot": snapshot(5, None, 5)},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 5}
        ]),
    )
    .await;
    assert_error(status, &body, StatusCode::CONFLICT, "CommitFailedException");
    assert!(message(&body).contains("main"), "{body}");
    assert_eq!(
        ref_hash(app, "main").await,
        moved,
        "a refused commit moved main"
    );
    let (_, loaded) = get(app, &uri).await;
    assert_eq!(loaded["metadata-location"], json!(second));
    assert_eq!(loaded["metadata"]["current-snapshot-id"], 1);

    let body = append(app, &uri, 2, Some(1)).await;
    let third = body["metadata-location"].as_str().unwrap().to_owned();
    assert!(third.contains("/metadata/00002-"), "{third}");
    let log: Vec<&Value> = body["metadata"]["metadata-log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["metadata-file"])
        .collect();
    assert_eq!(log, [&json!(first), &json!(second)]);
    assert_eq!(
        body["metadata"]["snapshot-log"].as_array().unwrap().len(),
        2
    );

    // Stale again, this time on a snapshot id; and a wrong table uuid.
    let moved = ref_hash(app, "main").await;
    for requirement in [
        json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}),
        json!({"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}),
        json!({"type": "assert-current-schema-id", "current-schema-id": 7}),
    ] {
        let (status, body) = commit(
            app,
            &uri,
            json!([requirement]),
            json!([{"action": "set-properties", "updates": {"x": "y"}}]),
        )
        .await;
        assert_error(status, &body, StatusCode::CONFLICT, "CommitFailedException");
        assert_eq!(ref_hash(app, "main").await, moved, "{requirement}");
    }
    let (_, loaded) = get(app, &uri).await;
    assert_eq!(loaded["metadata-location"], json!(third));
    assert_eq!(loaded["metadata"]["properties"], json!({}));

    // An update that breaks the table's rules is a bad request.
    let (status, body) = commit(
        app,
        &uri,
        json!([]),
        json!([{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                "snapshot-id": 99}]),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    assert_eq!(ref_hash(app, "main").await, moved);

    // The body's identifier must name the table of the path.
    let (status, body) = post(
        app,
        &uri,
        json!({"identifier": {"namespace": ["db"], "name": "other"}, "requirements": [],
               "updates": []}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    assert_eq!(ref_hash(app, "main").await, moved);
}

#[tokio::test]
async fn a_commit_whose_body_names_another_branch_than_its_path_is_refused() {
    let env = env().await;
    let app = &env.app;
    create_table(app, "lake", "t").await;
    create_ref(app, "dev", "branch").await;
    let head = ref_hash(app, "main").await;
    let (status, body) = post(
        app,
        &table_uri("t"),
        json!({
            "identifier": {"namespace": ["db"], "name": "t@dev"},
            "requirements": [],
            "updates": [{"action": "set-properties", "updates": {"k": "v"}}]
        }),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    assert_eq!(ref_hash(app, "main").await, head);
}
