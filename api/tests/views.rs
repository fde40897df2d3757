#![allow(clippy::unwrap_used)]
//! The Iceberg REST view routes, driven through the router as PyIceberg and the Java client
//! drive them, with view metadata files in a real (temporary) warehouse.

mod common;

use std::path::PathBuf;

use axum::http::{Method, StatusCode};
use common::TestApp;
use serde_json::{Value, json};
use tempfile::TempDir;

/// The router over a fresh catalog `lake` with namespace `db`, and the warehouse directory.
struct Env {
    app: axum::Router,
    dir: TempDir,
}

async fn env() -> Env {
    let TestApp { app, dir, .. } = TestApp::new().await;
    let (status, body) = post(&app, "/v1/lake/namespaces", json!({"namespace": ["db"]})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    Env { app, dir }
}

async fn call_raw(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Option<String>,
) -> (StatusCode, Value) {
    let (status, _, value) = common::send(app, method, uri, body, &[]).await;
    (status, value)
}

async fn call(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    call_raw(app, method, uri, body.map(|b| b.to_string())).await
}

async fn get(app: &axum::Router, uri: &str) -> (StatusCode, Value) {
    call(app, Method::GET, uri, None).await
}

async fn head(app: &axum::Router, uri: &str) -> (StatusCode, Value) {
    call(app, Method::HEAD, uri, None).await
}

async fn delete(app: &axum::Router, uri: &str) -> (StatusCode, Value) {
    call(app, Method::DELETE, uri, None).await
}

async fn post(app: &axum::Router, uri: &str, body: Value) -> (StatusCode, Value) {
    call(app, Method::POST, uri, Some(body)).await
}

fn error_type(value: &Value) -> &str {
    value["error"]["type"].as_str().unwrap_or_default()
}

fn message(value: &Value) -> &str {
    value["error"]["message"].as_str().unwrap_or_default()
}

/// An Iceberg error body, whole: `{"error": {"message", "type", "code"}}` and nothing else.
fn assert_error(status: StatusCode, body: &Value, expected: StatusCode, kind: &str) {
    assert_eq!((status, error_type(body)), (expected, kind), "{body}");
    assert_eq!(body["error"]["code"], json!(expected.as_u16()), "{body}");
    assert!(!message(body).is_empty(), "{body}");
    assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
}

async fn ref_hash(app: &axum::Router, name: &str) -> String {
    let (status, body) = get(app, &format!("/api/v1/catalogs/lake/refs/{name}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["hash"].as_str().unwrap().to_owned()
}

async fn create_branch(app: &axum::Router, name: &str) {
    let (status, body) = post(
        app,
        "/api/v1/catalogs/lake/refs",
        json!({"name": name, "type": "branch"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

fn local(location: &str) -> PathBuf {
    PathBuf::from(location.strip_prefix("file://").unwrap())
}

fn schema() -> Value {
    json!({"type": "struct", "fields": [
        {"id": 1, "name": "id", "type": "long", "required": true},
        {"id": 2, "name": "name", "type": "string", "required": false}
    ], "schema-id": 0, "identifier-field-ids": []})
}

fn version(sql: &str) -> Value {
    json!({
        "version-id": 1, "schema-id": 0, "timestamp-ms": 1_767_225_000_000_i64,
        "summary": {"engine-name": "pyiceberg"},
        "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
        "default-namespace": ["db"]
    })
}

/// A create request as PyIceberg 0.12 sends it.
fn create_request(name: &str) -> Value {
    json!({"name": name, "schema": schema(), "view-version": version("SELECT * FROM db.t"),
           "properties": {"comment": "daily"}})
}

async fn create_view(app: &axum::Router, prefix: &str, name: &str) -> Value {
    let (status, body) = post(
        app,
        &format!("/v1/{prefix}/namespaces/db/views"),
        create_request(name),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn view_uri(name: &str) -> String {
    format!("/v1/lake/namespaces/db/views/{name}")
}

/// The Java client's `CREATE OR REPLACE VIEW`: the view's uuid asserted, a schema and a
/// version added and made current.
fn replace_request(uuid: &Value, sql: &str) -> Value {
    json!({
        "identifier": {"namespace": ["db"], "name": "daily"},
        "requirements": [{"type": "assert-view-uuid", "uuid": uuid}],
        "updates": [
            {"action": "set-properties", "updates": {"engine_version": "Spark 3.5.4"}},
            {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
                {"id": 1, "name": "n", "required": false, "type": "long"}]}, "last-column-id": 1},
            {"action": "add-view-version", "view-version": {
                "version-id": 2, "timestamp-ms": 1_767_225_100_000_i64, "schema-id": -1,
                "summary": {"engine-name": "Spark", "engine-version": "3.5.4"},
                "default-catalog": "lake", "default-namespace": ["db"],
                "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}]}},
            {"action": "set-current-view-version", "view-version-id": -1}
        ]
    })
}

fn names(listed: &Value) -> Vec<&str> {
    listed["identifiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect()
}

const VIEW_ENDPOINTS: &[&str] = &[
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/register-view",
    "POST /v1/{prefix}/views/rename",
];

#[tokio::test]
async fn config_lists_every_view_endpoint_and_each_is_routed() {
    let env = env().await;
    let (status, body) = get(&env.app, "/v1/config").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let endpoints = body["endpoints"].as_array().unwrap();
    for endpoint in VIEW_ENDPOINTS {
        assert!(
            endpoints.contains(&json!(endpoint)),
            "{endpoint} not listed"
        );
        let (method, path) = endpoint.split_once(' ').unwrap();
        let uri = path
            .replace("{prefix}", "lake")
            .replace("{namespace}", "db")
            .replace("{view}", "nope");
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let (status, body) = call(&env.app, method, &uri, Some(json!({}))).await;
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{endpoint}");
        assert_ne!(error_type(&body), "NotFoundException", "{endpoint}: {body}");
    }
}

#[tokio::test]
async fn create_load_list_and_head_follow_the_spec() {
    let env = env().await;
    let app = &env.app;
    let root = format!("file://{}", env.dir.path().display());
    let created = create_view(app, "lake", "daily").await;
    let location = created["metadata-location"].as_str().unwrap();
    assert!(
        location.starts_with(&format!("{root}/db/daily-")),
        "{location}"
    );
    assert!(location.contains("/metadata/00000-"), "{location}");
    assert!(location.ends_with(".metadata.json"), "{location}");
    assert_eq!(created["config"], json!({}));
    let meta = &created["metadata"];
    assert_eq!(meta["format-version"], 1);
    assert_eq!(meta["current-version-id"], 1);
    assert_eq!(meta["versions"][0]["version-id"], 1);
    assert_eq!(meta["versions"][0]["schema-id"], 0);
    assert_eq!(
        meta["versions"][0]["representations"],
        json!([{"type": "sql", "sql": "SELECT * FROM db.t", "dialect": "spark"}])
    );
    assert_eq!(meta["schemas"][0]["fields"], schema()["fields"]);
    assert_eq!(
        meta["version-log"],
        json!([{"timestamp-ms": 1_767_225_000_000_i64, "version-id": 1}])
    );
    assert_eq!(meta["properties"], json!({"comment": "daily"}));
    assert!(meta["view-uuid"].is_string());
    let written: Value = serde_json::from_slice(&std::fs::read(local(location)).unwrap()).unwrap();
    assert_eq!(&written, meta, "the file is what the client was told");

    let (status, loaded) = get(app, &view_uri("daily")).await;
    assert_eq!(status, StatusCode::OK, "{loaded}");
    assert_eq!(loaded, created);
    let (status, body) = head(app, &view_uri("daily")).await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    let (status, body) = head(app, &view_uri("nope")).await;
    assert_eq!((status, body), (StatusCode::NOT_FOUND, Value::Null));
    let (status, body) = get(app, &view_uri("nope")).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchViewException");

    // A location the client names.
    let place = format!("{root}/custom/v");
    let mut request = create_request("placed");
    request["location"] = json!(format!("{place}/"));
    let (status, placed) = post(app, "/v1/lake/namespaces/db/views", request).await;
    assert_eq!(status, StatusCode::OK, "{placed}");
    assert_eq!(placed["metadata"]["location"], json!(place));

    // Listing: paged, only views.
    create_view(app, "lake", "alpha").await;
    let (status, listed) = get(app, "/v1/lake/namespaces/db/views").await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(names(&listed), ["alpha", "daily", "placed"]);
    assert_eq!(
        listed["identifiers"][0],
        json!({"namespace": ["db"], "name": "alpha"})
    );
    assert!(listed.get("next-page-token").is_none());
    let (_, page) = get(app, "/v1/lake/namespaces/db/views?pageSize=2").await;
    assert_eq!(names(&page), ["alpha", "daily"]);
    let token = page["next-page-token"].as_str().unwrap();
    let (_, rest) = get(
        app,
        &format!("/v1/lake/namespaces/db/views?pageSize=2&pageToken={token}"),
    )
    .await;
    assert_eq!(names(&rest), ["placed"]);
    let (status, body) = get(app, "/v1/lake/namespaces/nope/views").await;
    assert_error(
        status,
        &body,
        StatusCode::NOT_FOUND,
        "NoSuchNamespaceException",
    );
}

#[tokio::test]
async fn replace_adds_a_version_and_chains_metadata_files() {
    let env = env().await;
    let app = &env.app;
    let created = create_view(app, "lake", "daily").await;
    let uuid = created["metadata"]["view-uuid"].clone();
    let before = ref_hash(app, "main").await;
    let (status, replaced) = post(
        app,
        &view_uri("daily"),
        replace_request(&uuid, "SELECT count(*) AS n FROM db.t"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{replaced}");
    let meta = &replaced["metadata"];
    assert_eq!(meta["current-version-id"], 2);
    assert_eq!(meta["versions"].as_array().unwrap().len(), 2);
    assert_eq!(meta["versions"][1]["schema-id"], 1);
    assert_eq!(meta["versions"][1]["default-catalog"], "lake");
    assert_eq!(meta["schemas"].as_array().unwrap().len(), 2);
    assert_eq!(meta["view-uuid"], uuid);
    assert_eq!(
        meta["properties"],
        json!({"comment": "daily", "engine_version": "Spark 3.5.4"})
    );
    assert_eq!(
        meta["version-log"][1],
        json!({"timestamp-ms": 1_767_225_100_000_i64, "version-id": 2})
    );
    let location = replaced["metadata-location"].as_str().unwrap();
    assert!(location.contains("/metadata/00001-"), "{location}");
    assert!(local(location).is_file());
    assert_ne!(ref_hash(app, "main").await, before);
    let (_, loaded) = get(app, &view_uri("daily")).await;
    assert_eq!(loaded["metadata"], *meta);

    // The same replace again reuses version 2: a new file, no new version.
    let (status, again) = post(
        app,
        &view_uri("daily"),
        replace_request(&uuid, "SELECT count(*) AS n FROM db.t"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["metadata"]["versions"], meta["versions"]);
    assert_eq!(again["metadata"]["version-log"], meta["version-log"]);

    // The catalog log says what happened.
    let (status, log) = get(app, "/api/v1/catalogs/lake/log?ref=main&pageSize=1").await;
    assert_eq!(status, StatusCode::OK, "{log}");
    assert_eq!(log["commits"][0]["message"], "replace view db.daily");
}

#[tokio::test]
async fn bad_commits_are_iceberg_errors_and_move_nothing() {
    let env = env().await;
    let app = &env.app;
    let created = create_view(app, "lake", "daily").await;
    let uuid = created["metadata"]["view-uuid"].clone();
    let head = ref_hash(app, "main").await;
    let file_count = || {
        std::fs::read_dir(local(created["metadata"]["location"].as_str().unwrap()).join("metadata"))
            .unwrap()
            .count()
    };

    // A failed assert-view-uuid is a commit failure.
    let (status, body) = post(
        app,
        &view_uri("daily"),
        replace_request(&json!("00000000-0000-0000-0000-000000000001"), "SELECT 1"),
    )
    .await;
    assert_error(status, &body, StatusCode::CONFLICT, "CommitFailedException");
    assert!(message(&body).contains("uuid"), "{body}");

    let mut last_schema = version("SELECT 2");
    last_schema["schema-id"] = json!(-1);
    for (body, needle) in [
        // An unknown action, never ignored.
        (
            json!({"updates": [{"action": "add-snapshot", "snapshot": {}}]}),
            "add-snapshot",
        ),
        // An unknown requirement.
        (
            json!({"requirements": [{"type": "assert-table-uuid", "uuid": uuid}], "updates": []}),
            "assert-table-uuid",
        ),
        // An unknown field.
        (
            json!({"updates": [{"action": "set-location", "location": "/x", "extra": 1}]}),
            "extra",
        ),
        // A version that is not there.
        (
            json!({"updates": [{"action": "set-current-view-version", "view-version-id": 9}]}),
            "9",
        ),
        // A schema that was not added.
        (
            json!({"updates": [{"action": "add-view-version", "view-version": last_schema}]}),
            "schema",
        ),
        // The body names another view than the path.
        (
            json!({"identifier": {"namespace": ["db"], "name": "other"}, "updates": []}),
            "other",
        ),
    ] {
        let (status, answer) = post(app, &view_uri("daily"), body.clone()).await;
        assert_error(
            status,
            &answer,
            StatusCode::BAD_REQUEST,
            "BadRequestException",
        );
        assert!(message(&answer).contains(needle), "{body}: {answer}");
    }

    // A replace of a view that does not exist, or of a table.
    let mut request = replace_request(&uuid, "SELECT 1");
    request.as_object_mut().unwrap().remove("identifier");
    let (status, body) = post(app, &view_uri("nope"), request).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchViewException");
    // Unparseable bodies and create requests with unknown fields.
    let (status, body) = call_raw(
        app,
        Method::POST,
        "/v1/lake/namespaces/db/views",
        Some("{".into()),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    let mut request = create_request("x");
    request["stage-create"] = json!(true);
    let (status, body) = post(app, "/v1/lake/namespaces/db/views", request).await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    let (status, body) = post(app, "/v1/lake/namespaces/nope/views", create_request("x")).await;
    assert_error(
        status,
        &body,
        StatusCode::NOT_FOUND,
        "NoSuchNamespaceException",
    );

    assert_eq!(ref_hash(app, "main").await, head, "nothing moved");
    assert_eq!(file_count(), 1, "no file written");
    let (_, loaded) = get(app, &view_uri("daily")).await;
    assert_eq!(loaded, created);
}

#[tokio::test]
async fn tables_and_views_share_one_name_space() {
    let env = env().await;
    let app = &env.app;
    create_view(app, "lake", "daily").await;
    let (status, body) = post(
        app,
        "/v1/lake/namespaces/db/tables",
        json!({"name": "daily", "schema": schema()}),
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
        "/v1/lake/namespaces/db/tables",
        json!({"name": "events", "schema": schema()}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = post(
        app,
        "/v1/lake/namespaces/db/views",
        create_request("events"),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "AlreadyExistsException",
    );
    let (status, body) = post(app, "/v1/lake/namespaces/db/views", create_request("daily")).await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "AlreadyExistsException",
    );

    // Each route sees only its own kind.
    let (status, body) = get(app, "/v1/lake/namespaces/db/tables/daily").await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchTableException");
    let (status, body) = get(app, &view_uri("events")).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchViewException");
    let (status, _) = head(app, "/v1/lake/namespaces/db/tables/daily").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = head(app, &view_uri("events")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, views) = get(app, "/v1/lake/namespaces/db/views").await;
    assert_eq!(names(&views), ["daily"]);
    let (_, tables) = get(app, "/v1/lake/namespaces/db/tables").await;
    assert_eq!(names(&tables), ["events"]);
    let (status, body) = delete(app, "/v1/lake/namespaces/db/tables/daily").await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchTableException");
    let (status, body) = delete(app, &view_uri("events")).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchViewException");
    let rename = |kind: &str, from: &str, to: &str| {
        (
            format!("/v1/lake/{kind}/rename"),
            json!({"source": {"namespace": ["db"], "name": from},
                   "destination": {"namespace": ["db"], "name": to}}),
        )
    };
    let (uri, body) = rename("views", "daily", "events");
    let (status, answer) = post(app, &uri, body).await;
    assert_error(
        status,
        &answer,
        StatusCode::CONFLICT,
        "AlreadyExistsException",
    );
    let (uri, body) = rename("tables", "events", "daily");
    let (status, answer) = post(app, &uri, body).await;
    assert_error(
        status,
        &answer,
        StatusCode::CONFLICT,
        "AlreadyExistsException",
    );
    let (uri, body) = rename("views", "events", "other");
    let (status, answer) = post(app, &uri, body).await;
    assert_error(
        status,
        &answer,
        StatusCode::NOT_FOUND,
        "NoSuchViewException",
    );

    // A namespace holding a view is not empty.
    let (status, body) = delete(app, "/v1/lake/namespaces/db").await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "NamespaceNotEmptyException",
    );
}

#[tokio::test]
async fn views_are_addressed_at_branches_and_tags() {
    let env = env().await;
    let app = &env.app;
    create_branch(app, "dev").await;
    let created = create_view(app, "lake", "daily@dev").await;
    let (status, body) = get(app, &view_uri("daily@dev")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, created);
    let (status, _) = get(app, "/v1/lake@dev/namespaces/db/views/daily").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = get(app, &view_uri("daily")).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchViewException");
    let (status, _) = head(app, &view_uri("daily")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, listed) = get(app, "/v1/lake/namespaces/db/views").await;
    assert_eq!(listed, json!({"identifiers": []}));
    let (_, listed) = get(app, "/v1/lake@dev/namespaces/db/views").await;
    assert_eq!(names(&listed), ["daily"]);

    // A replace on dev leaves main alone; a merge brings the view over.
    let uuid = created["metadata"]["view-uuid"].clone();
    let (status, body) = post(
        app,
        &view_uri("daily@dev"),
        replace_request(&uuid, "SELECT 2 AS n"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let main = ref_hash(app, "main").await;
    let (status, merged) = post(app, "/api/v1/catalogs/lake/merge", json!({"source": "dev"})).await;
    assert_eq!(status, StatusCode::OK, "{merged}");
    assert_ne!(ref_hash(app, "main").await, main);
    let (status, body) = get(app, &view_uri("daily")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["metadata"]["current-version-id"], 2);

    // A tag reads and never moves.
    let (status, body) = post(
        app,
        "/api/v1/catalogs/lake/refs",
        json!({"name": "v1", "type": "tag"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, _) = get(app, &view_uri("daily@v1")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = delete(app, &view_uri("daily@v1")).await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    let (status, body) = post(
        app,
        "/v1/lake@v1/namespaces/db/views",
        create_request("other"),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    // The view as it was before the replace, at a commit of main.
    let (status, body) = get(app, &view_uri("daily@main~1")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn rename_register_and_drop() {
    let env = env().await;
    let app = &env.app;
    let created = create_view(app, "lake", "daily").await;
    let (status, body) = post(
        app,
        "/v1/lake/namespaces",
        json!({"namespace": ["archive"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let (status, body) = post(
        app,
        "/v1/lake/views/rename",
        json!({"source": {"namespace": ["db"], "name": "daily"},
               "destination": {"namespace": ["archive"], "name": "old"}}),
    )
    .await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    let (status, _) = head(app, &view_uri("daily")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, moved) = get(app, "/v1/lake/namespaces/archive/views/old").await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    assert_eq!(moved["metadata-location"], created["metadata-location"]);
    let (status, body) = post(
        app,
        "/v1/lake/views/rename",
        json!({"source": {"namespace": ["archive"], "name": "old"},
               "destination": {"namespace": ["gone"], "name": "x"}}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::NOT_FOUND,
        "NoSuchNamespaceException",
    );
    let (status, body) = post(
        app,
        "/v1/lake/views/rename",
        json!({"source": {"namespace": ["archive"], "name": "old@main"},
               "destination": {"namespace": ["db"], "name": "x@dev"}}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );

    // Register the same file under another name: a view of its own.
    let file = created["metadata-location"].clone();
    let (status, registered) = post(
        app,
        "/v1/lake/namespaces/db/register-view",
        json!({"name": "copy", "metadata-location": file}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{registered}");
    assert_eq!(registered["metadata-location"], file);
    assert_eq!(registered["metadata"], created["metadata"]);
    let (status, body) = post(
        app,
        "/v1/lake/namespaces/db/register-view",
        json!({"name": "copy", "metadata-location": file}),
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
        "/v1/lake/namespaces/db/register-view",
        json!({"name": "ghost", "metadata-location": format!("file://{}/none.metadata.json", env.dir.path().display())}),
    )
    .await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchViewException");

    // Drop: the entry goes, the file stays (other names and older commits use it).
    let (status, body) = delete(app, "/v1/lake/namespaces/archive/views/old").await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    let (status, body) = delete(app, "/v1/lake/namespaces/archive/views/old").await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchViewException");
    assert!(local(file.as_str().unwrap()).is_file());
    let (status, _) = get(app, &view_uri("copy")).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn percent_encoded_names_in_bodies_are_decoded_as_pyiceberg_means_them() {
    let env = env().await;
    create_branch(&env.app, "dev").await;
    // PyIceberg 0.12 sends `daily@dev` as `daily%40dev` in create_view's body.
    let created = create_view(&env.app, "lake", "daily%40dev").await;
    let (status, _) = head(&env.app, &view_uri("daily@dev")).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "created on dev");
    let (status, _) = head(&env.app, &view_uri("daily")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "not on main");
    let (status, body) = post(
        &env.app,
        "/v1/lake/namespaces/db/register-view",
        json!({"name": "copy%40dev", "metadata-location": created["metadata-location"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = head(&env.app, &view_uri("copy@dev")).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "registered on dev");
    let (status, body) = post(
        &env.app,
        "/v1/lake/namespaces/db/views",
        create_request("bad%FF"),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
}
