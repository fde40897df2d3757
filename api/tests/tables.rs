#![allow(clippy::unwrap_used)]
//! The Iceberg REST table routes and the management API, driven through the router as a
//! client and an operator would, with table files in a real (temporary) warehouse.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::TestApp;
use pangolin_store::Timestamp;
use serde_json::{Value, json};
use tempfile::TempDir;

/// The router over a fresh catalog `lake` with namespace `db`, and the warehouse directory
/// (kept alive as long as the test holds it).
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

impl Env {
    fn root(&self) -> String {
        format!("file://{}", self.dir.path().display())
    }
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
    assert_eq!(body["error"].as_object().unwrap().len(), 3, "{body}");
}

/// The head commit of a ref, as the management API reports it.
async fn ref_hash(app: &axum::Router, name: &str) -> String {
    let (status, body) = get(app, &format!("/api/v1/catalogs/lake/refs/{name}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["hash"].as_str().unwrap().to_owned()
}

async fn create_ref(app: &axum::Router, name: &str, kind: &str) -> String {
    let (status, body) = post(
        app,
        "/api/v1/catalogs/lake/refs",
        json!({"name": name, "type": kind}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["type"], kind);
    body["hash"].as_str().unwrap().to_owned()
}

fn schema() -> Value {
    json!({
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": true, "type": "long"},
            {"id": 2, "name": "name", "required": false, "type": "string"}
        ]
    })
}

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

async fn create_table(app: &axum::Router, prefix: &str, name: &str) -> Value {
    let (status, body) = post(
        app,
        &format!("/v1/{prefix}/namespaces/db/tables"),
        json!({"name": name, "schema": schema()}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn table_uri(name: &str) -> String {
    format!("/v1/lake/namespaces/db/tables/{name}")
}

async fn commit(
    app: &axum::Router,
    uri: &str,
    requirements: Value,
    updates: Value,
) -> (StatusCode, Value) {
    post(
        app,
        uri,
        json!({"requirements": requirements, "updates": updates}),
    )
    .await
}

fn snapshot(id: i64, parent: Option<i64>, sequence: i64) -> Value {
    let mut snapshot = json!({
        "snapshot-id": id,
        "sequence-number": sequence,
        "timestamp-ms": 1_700_000_000_000_i64 + id,
        "manifest-list": format!("file:///nowhere/snap-{id}.avro"),
        "summary": {"operation": "append", "added-records": "10"},
        "schema-id": 0
    });
    if let Some(parent) = parent {
        snapshot["parent-snapshot-id"] = json!(parent);
    }
    snapshot
}

/// Adds snapshot `id` and points `main` at it, asserting `main` was at `parent`.
async fn append(app: &axum::Router, uri: &str, id: i64, parent: Option<i64>) -> Value {
    let (status, body) = commit(
        app,
        uri,
        json!([{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}]),
        json!([
            {"action": "add-snapshot", "snapshot": snapshot(id, parent, id)},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": id}
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// The local path of a `file://` location.
fn local(location: &str) -> PathBuf {
    PathBuf::from(location.strip_prefix("file://").unwrap())
}

/// Every file below `dir`, recursively (none when it does not exist).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Milliseconds since the epoch as RFC 3339 (UTC).
fn rfc3339(millis: i64) -> String {
    let (secs, milli) = (millis.div_euclid(1000), millis.rem_euclid(1000));
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to civil date (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A time strictly after everything done so far and strictly before anything done next
/// (waits for the millisecond clock to tick on both sides).
async fn instant_between() -> Timestamp {
    async fn tick_past(t: Timestamp) -> Timestamp {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let now = Timestamp::now();
            if now > t {
                return now;
            }
        }
    }
    let between = tick_past(Timestamp::now()).await;
    tick_past(between).await;
    between
}

/// The table endpoints of the Iceberg REST spec this server routes.
const TABLE_ENDPOINTS: &[&str] = &[
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/tables/rename",
];

#[tokio::test]
async fn config_lists_every_table_endpoint_and_each_is_routed() {
    let env = env().await;
    let (status, body) = get(&env.app, "/v1/config").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let endpoints = body["endpoints"].as_array().unwrap();
    for endpoint in TABLE_ENDPOINTS {
        assert!(
            endpoints.contains(&json!(endpoint)),
            "{endpoint} not listed"
        );
        // Listed means served: no route-level 404 / 405 for the path.
        let (method, path) = endpoint.split_once(' ').unwrap();
        let uri = path
            .replace("{prefix}", "lake")
            .replace("{namespace}", "db")
            .replace("{table}", "nope");
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let (status, body) = call(&env.app, method, &uri, Some(json!({}))).await;
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{endpoint}");
        assert_ne!(error_type(&body), "NotFoundException", "{endpoint}: {body}");
    }
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

#[tokio::test]
async fn load_exists_and_list_follow_the_spec() {
    let env = env().await;
    let app = &env.app;
    for name in ["c", "a", "b"] {
        create_table(app, "lake", name).await;
    }
    let uri = table_uri("a");
    append(app, &uri, 1, None).await;
    append(app, &uri, 2, Some(1)).await;

    // `snapshots`: all (default) or only those a ref points at; case does not matter.
    for (query, expected) in [
        ("", vec![1, 2]),
        ("?snapshots=all", vec![1, 2]),
        ("?snapshots=ALL", vec![1, 2]),
        ("?snapshots=refs", vec![2]),
        ("?snapshots=Refs", vec![2]),
    ] {
        let (status, body) = get(app, &format!("{uri}{query}")).await;
        assert_eq!(status, StatusCode::OK, "{query}: {body}");
        let ids: Vec<i64> = body["metadata"]["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["snapshot-id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, expected, "{query}");
        assert_eq!(body["metadata"]["current-snapshot-id"], 2, "{query}");
    }
    let (status, body) = get(app, &format!("{uri}?snapshots=some")).await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    assert!(message(&body).contains("snapshots"), "{body}");

    // HEAD: 204 for a table, 404 for anything else.
    let (status, _) = call(app, Method::HEAD, &uri, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for missing in [
        table_uri("zzz"),
        "/v1/lake/namespaces/nope/tables/a".to_owned(),
    ] {
        let (status, _) = call(app, Method::HEAD, &missing, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    }
    // A namespace is not a table.
    post(
        app,
        "/v1/lake/namespaces",
        json!({"namespace": ["db", "sub"]}),
    )
    .await;
    let (status, _) = call(app, Method::HEAD, &table_uri("sub"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = get(app, &table_uri("sub")).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchTableException");
    // A table in a child namespace is not listed in the parent.
    create_table(app, "lake", "ignored").await;
    let (status, body) = post(
        app,
        "/v1/lake/namespaces/db%1Fsub/tables",
        json!({"name": "deep", "schema": schema()}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = call(app, Method::DELETE, &table_uri("ignored"), None).await;
    assert_eq!(body, Value::Null);

    // Listing: everything, or in pages that chain through the token.
    let identifier = |name: &str| json!({"namespace": ["db"], "name": name});
    let (status, all) = get(app, "/v1/lake/namespaces/db/tables").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        all,
        json!({"identifiers": [identifier("a"), identifier("b"), identifier("c")]})
    );
    let (_, page) = get(app, "/v1/lake/namespaces/db/tables?pageSize=2").await;
    assert_eq!(
        page["identifiers"],
        json!([identifier("a"), identifier("b")])
    );
    let token = page["next-page-token"].as_str().unwrap();
    let (status, rest) = get(
        app,
        &format!("/v1/lake/namespaces/db/tables?pageSize=2&pageToken={token}"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    assert_eq!(rest, json!({"identifiers": [identifier("c")]}));
    let (_, nested) = get(app, "/v1/lake/namespaces/db%1Fsub/tables").await;
    assert_eq!(
        nested,
        json!({"identifiers": [{"namespace": ["db", "sub"], "name": "deep"}]})
    );

    // An empty namespace lists an empty array, never null.
    post(app, "/v1/lake/namespaces", json!({"namespace": ["empty"]})).await;
    let (status, empty) = get(app, "/v1/lake/namespaces/empty/tables").await;
    assert_eq!(
        (status, empty),
        (StatusCode::OK, json!({"identifiers": []}))
    );
    let (status, empty) = get(app, "/v1/lake/namespaces/empty/tables?pageSize=5").await;
    assert_eq!(
        (status, empty),
        (StatusCode::OK, json!({"identifiers": []}))
    );

    for bad in ["pageSize=0", "pageToken=xyz", "pageSize=-1", "pageSize=ten"] {
        let (status, body) = get(app, &format!("/v1/lake/namespaces/db/tables?{bad}")).await;
        assert_error(
            status,
            &body,
            StatusCode::BAD_REQUEST,
            "BadRequestException",
        );
        assert!(message(&body).contains("page"), "{bad}: {body}");
    }
    let (status, body) = get(app, &format!("{uri}?snapshots=all&snapshots=refs")).await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    assert!(message(&body).contains("snapshots"), "{body}");
    // A path that is not UTF-8 once decoded.
    let (status, body) = get(app, &table_uri("a%FFb")).await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    let (status, body) = get(app, "/v1/lake/namespaces/nope/tables").await;
    assert_error(
        status,
        &body,
        StatusCode::NOT_FOUND,
        "NoSuchNamespaceException",
    );
}

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

/// A request and the error it must get: method, path, body, status, error type, and a part
/// of the message.
type BadRequest = (
    Method,
    String,
    Option<String>,
    StatusCode,
    &'static str,
    &'static str,
);

#[tokio::test]
async fn bad_requests_are_iceberg_errors_and_move_nothing() {
    let env = env().await;
    let app = &env.app;
    let created = create_table(app, "lake", "t").await;
    let location = created["metadata-location"].clone();
    // A namespace takes a name as a table does.
    let (status, body) = post(
        app,
        "/v1/lake/namespaces",
        json!({"namespace": ["db", "sub"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let head = ref_hash(app, "main").await;
    let tables = "/v1/lake/namespaces/db/tables";
    let t = table_uri("t");
    let create = |name: &str| json!({"name": name, "schema": schema()}).to_string();
    let commit_with = |requirements: Value, updates: Value| {
        json!({"requirements": requirements, "updates": updates}).to_string()
    };

    let cases: Vec<BadRequest> = vec![
        (
            Method::POST,
            "/v1/lake/namespaces/nope/tables".into(),
            Some(create("x")),
            StatusCode::NOT_FOUND,
            "NoSuchNamespaceException",
            "nope",
        ),
        (
            Method::GET,
            "/v1/lake/namespaces/nope/tables".into(),
            None,
            StatusCode::NOT_FOUND,
            "NoSuchNamespaceException",
            "nope",
        ),
        (
            Method::GET,
            table_uri("nope"),
            None,
            StatusCode::NOT_FOUND,
            "NoSuchTableException",
            "nope",
        ),
        (
            Method::POST,
            table_uri("nope"),
            Some(commit_with(json!([]), json!([]))),
            StatusCode::NOT_FOUND,
            "NoSuchTableException",
            "nope",
        ),
        (
            Method::DELETE,
            table_uri("nope"),
            None,
            StatusCode::NOT_FOUND,
            "NoSuchTableException",
            "nope",
        ),
        (
            Method::POST,
            tables.into(),
            Some(create("t")),
            StatusCode::CONFLICT,
            "AlreadyExistsException",
            "already exists",
        ),
        (
            Method::POST,
            tables.into(),
            Some(create("sub")),
            StatusCode::CONFLICT,
            "AlreadyExistsException",
            "namespace",
        ),
        (
            Method::POST,
            tables.into(),
            Some(r#"{"name": "x", "schema": "#.into()),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "EOF",
        ),
        (
            Method::POST,
            t.clone(),
            Some("{nope".into()),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "key must be a string",
        ),
        (
            Method::POST,
            tables.into(),
            Some(json!({"name": 5, "schema": schema()}).to_string()),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "invalid type: integer `5`, expected a string",
        ),
        (
            Method::POST,
            tables.into(),
            Some(json!({"name": "x", "schema": schema(), "stage-create": "yes"}).to_string()),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "expected a boolean",
        ),
        (
            Method::POST,
            tables.into(),
            Some(json!({"schema": schema()}).to_string()),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "missing field `name`",
        ),
        (
            Method::POST,
            tables.into(),
            Some(json!({"name": "x", "schema": schema(), "bogus": 1}).to_string()),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "unknown field `bogus`",
        ),
        (
            Method::POST,
            t.clone(),
            Some(json!({"updates": [], "bogus": 1}).to_string()),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "unknown field `bogus`",
        ),
        (
            Method::POST,
            t.clone(),
            Some(commit_with(json!([]), json!([{"action": "frobnicate"}]))),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "unknown variant `frobnicate`",
        ),
        (
            Method::POST,
            t.clone(),
            Some(commit_with(
                json!([]),
                json!([{"action": "set-properties", "updates": {"a": "b"}, "extra": true}]),
            )),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "unknown field `extra`",
        ),
        (
            Method::POST,
            t.clone(),
            Some(commit_with(
                json!([]),
                json!([{"action": "set-properties", "updates": {"a": 1}}]),
            )),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "invalid type: integer `1`",
        ),
        (
            Method::POST,
            t.clone(),
            Some(commit_with(
                json!([{"type": "assert-frobnicated"}]),
                json!([{"action": "set-properties", "updates": {"a": "b"}}]),
            )),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "unknown variant `assert-frobnicated`",
        ),
        (
            Method::POST,
            t.clone(),
            Some(commit_with(
                json!([{"ref": "main"}]),
                json!([{"action": "set-properties", "updates": {"a": "b"}}]),
            )),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "missing field `type`",
        ),
        (
            Method::POST,
            tables.into(),
            Some(create("a\u{0}b")),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "control character U+0000",
        ),
        (
            Method::POST,
            tables.into(),
            Some(create("a\u{1b}b")),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "control character U+001B",
        ),
        (
            Method::POST,
            tables.into(),
            Some(create("")),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "empty",
        ),
        (
            Method::GET,
            table_uri("a%01b"),
            None,
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "control character U+0001",
        ),
        (
            Method::POST,
            table_uri("a%07b"),
            Some(commit_with(json!([]), json!([]))),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "control character U+0007",
        ),
        (
            Method::POST,
            tables.into(),
            Some(create("x@")),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "invalid reference",
        ),
        (
            Method::POST,
            tables.into(),
            Some(create("x@nope")),
            StatusCode::BAD_REQUEST,
            "BadRequestException",
            "nope",
        ),
    ];
    for (method, uri, body, status, kind, fragment) in cases {
        let label = format!("{method} {uri} {body:?}");
        let (got, response) = call_raw(app, method, &uri, body).await;
        assert_error(got, &response, status, kind);
        assert!(
            message(&response).contains(fragment),
            "{label}: `{fragment}` not in {response}"
        );
        assert_eq!(ref_hash(app, "main").await, head, "{label} moved main");
    }
    let (_, loaded) = get(app, &t).await;
    assert_eq!(loaded["metadata-location"], location);
    assert_eq!(loaded["metadata"]["properties"], json!({}));
}

#[tokio::test]
async fn tables_are_addressed_at_branches_tags_commits_and_times() {
    let env = env().await;
    let app = &env.app;
    assert_eq!(rfc3339(1_796_040_000_250), "2026-11-30T12:00:00.250Z");
    assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");

    create_ref(app, "dev", "branch").await;
    let (status, created) = post(
        app,
        "/v1/lake/namespaces/db/tables",
        json!({"name": "t@dev", "schema": schema()}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let (status, _) = get(app, &table_uri("t@dev")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get(app, "/v1/lake@dev/namespaces/db/tables/t").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = get(app, &table_uri("t")).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchTableException");
    let (_, body) = get(app, "/v1/lake/namespaces/db/tables").await;
    assert_eq!(body, json!({"identifiers": []}));
    let (_, body) = get(app, "/v1/lake@dev/namespaces/db/tables").await;
    assert_eq!(
        body,
        json!({"identifiers": [{"namespace": ["db"], "name": "t"}]})
    );

    let before_merge = ref_hash(app, "main").await;
    let time_before_merge = rfc3339(instant_between().await.as_millis());
    let (status, merged) = post(app, "/api/v1/catalogs/lake/merge", json!({"source": "dev"})).await;
    assert_eq!(status, StatusCode::OK, "{merged}");
    let after_merge = ref_hash(app, "main").await;
    assert_ne!(after_merge, before_merge);
    assert_eq!(merged["target-head"], json!(after_merge));
    assert_eq!(merged["previous-head"], json!(before_merge));

    for visible in ["t", "t@main", "t@dev"] {
        let (status, body) = get(app, &table_uri(visible)).await;
        assert_eq!(status, StatusCode::OK, "{visible}: {body}");
        assert_eq!(body["metadata-location"], created["metadata-location"]);
    }
    // The `#` of a commit or a time is percent-encoded in the path, as clients send it.
    for (name, expected) in [
        (format!("t@main%23{before_merge}"), StatusCode::NOT_FOUND),
        (
            format!("t@main%23{}", &before_merge[..12]),
            StatusCode::NOT_FOUND,
        ),
        (format!("t@main%23{after_merge}"), StatusCode::OK),
        (
            format!("t@main%23{time_before_merge}"),
            StatusCode::NOT_FOUND,
        ),
        ("t@main%232099-01-01T00:00:00Z".to_owned(), StatusCode::OK),
        ("t@main~1".to_owned(), StatusCode::NOT_FOUND),
    ] {
        let (status, body) = get(app, &table_uri(&name)).await;
        assert_eq!(status, expected, "{name}: {body}");
        if status == StatusCode::NOT_FOUND {
            assert_eq!(error_type(&body), "NoSuchTableException", "{name}");
        }
        let (status, _) = call(app, Method::HEAD, &table_uri(&name), None).await;
        assert_eq!(
            status,
            if expected == StatusCode::OK {
                StatusCode::NO_CONTENT
            } else {
                expected
            },
            "HEAD {name}"
        );
    }
    // A time before the branch existed, a ref that does not exist, a hash not in main.
    for name in [
        "t@main%232001-01-01T00:00:00Z".to_owned(),
        "t@nope".to_owned(),
        "t@main%23deadbeefdeadbeef".to_owned(),
    ] {
        let (status, body) = get(app, &table_uri(&name)).await;
        assert_error(
            status,
            &body,
            StatusCode::BAD_REQUEST,
            "BadRequestException",
        );
    }

    // Writes through a commit, a time, an ancestor or a tag are refused as read-only.
    create_ref(app, "v1", "tag").await;
    let (status, _) = get(app, &table_uri("t@v1")).await;
    assert_eq!(status, StatusCode::OK);
    let tag_head = ref_hash(app, "v1").await;
    let read_only = [
        format!("main#{after_merge}"),
        "main#2099-01-01T00:00:00Z".to_owned(),
        "main~0".to_owned(),
        "v1".to_owned(),
    ];
    for reference in &read_only {
        let uri = table_uri(&format!("t@{}", reference.replace('#', "%23")));
        let attempts = [
            (
                Method::POST,
                uri.clone(),
                Some(json!({"requirements": [],
                            "updates": [{"action": "set-properties", "updates": {"a": "b"}}]})),
            ),
            (Method::DELETE, uri.clone(), None),
            (
                Method::POST,
                "/v1/lake/namespaces/db/tables".to_owned(),
                Some(json!({"name": format!("u@{reference}"), "schema": schema()})),
            ),
            (
                Method::POST,
                "/v1/lake/namespaces/db/tables".to_owned(),
                Some(json!({"name": format!("u@{reference}"), "schema": schema(),
                            "stage-create": true})),
            ),
            (
                Method::POST,
                "/v1/lake/tables/rename".to_owned(),
                Some(
                    json!({"source": {"namespace": ["db"], "name": format!("t@{reference}")},
                            "destination": {"namespace": ["db"], "name": "t9"}}),
                ),
            ),
            (
                Method::POST,
                "/v1/lake/namespaces/db/register".to_owned(),
                Some(json!({"name": format!("u@{reference}"),
                            "metadata-location": created["metadata-location"]})),
            ),
        ];
        for (method, uri, body) in attempts {
            let label = format!("{method} {uri} {body:?}");
            let (status, response) = call(app, method, &uri, body).await;
            assert_error(
                status,
                &response,
                StatusCode::BAD_REQUEST,
                "BadRequestException",
            );
            assert!(
                message(&response).contains("read-only"),
                "{label}: {response}"
            );
        }
    }
    assert_eq!(ref_hash(app, "main").await, after_merge);
    assert_eq!(ref_hash(app, "v1").await, tag_head);
    let (_, body) = get(app, &table_uri("t")).await;
    assert_eq!(body["metadata"]["properties"], json!({}));

    // `~n` counts first-parent commits back from the branch head.
    create_table(app, "lake", "u").await;
    for (name, expected) in [
        ("t@main~1", StatusCode::OK),
        ("u@main~1", StatusCode::NOT_FOUND),
        ("u@main~0", StatusCode::OK),
        ("u@main", StatusCode::OK),
        ("t@main~2", StatusCode::NOT_FOUND),
    ] {
        let (status, body) = get(app, &table_uri(name)).await;
        assert_eq!(status, expected, "{name}: {body}");
    }
}

#[tokio::test]
async fn the_management_api_names_what_a_reference_is() {
    let env = env().await;
    let app = &env.app;
    create_ref(app, "v1", "tag").await;
    let head = ref_hash(app, "main").await;
    let (_, body) = get(app, "/api/v1/catalogs/lake/refs/main").await;
    assert_eq!(body["type"], "branch");
    let (_, body) = get(app, "/api/v1/catalogs/lake/refs/v1").await;
    assert_eq!(body["type"], "tag");
    let (_, body) = get(app, &format!("/api/v1/catalogs/lake/refs/main%23{head}")).await;
    assert_eq!(
        (body["type"].clone(), body["hash"].clone()),
        (json!("commit"), json!(head))
    );
    // A bare hash names a commit, not a tag.
    let (status, body) = get(app, &format!("/api/v1/catalogs/lake/refs/{head}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["type"].clone(), body["hash"].clone()),
        (json!("commit"), json!(head))
    );

    let (status, body) = post(
        app,
        "/api/v1/catalogs/lake/refs",
        json!({"name": "main", "type": "branch"}),
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
        "/api/v1/catalogs/lake/refs",
        json!({"name": "v1", "type": "branch"}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "AlreadyExistsException",
    );
    let (status, body) = get(app, "/api/v1/catalogs/lake/refs/nope").await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    let (status, body) = get(app, "/api/v1/catalogs/nope/refs/main").await;
    assert_error(
        status,
        &body,
        StatusCode::NOT_FOUND,
        "NoSuchCatalogException",
    );
    assert_eq!(ref_hash(app, "main").await, head);

    // The time of a ref is RFC 3339, and pasted back into `main#<time>` it names the same commit.
    let (_, body) = get(app, "/api/v1/catalogs/lake/refs/main").await;
    let time = body["time"].as_str().unwrap().to_owned();
    assert!(time.ends_with('Z') && time.contains('T'), "{time}");
    let (status, body) = get(app, &format!("/api/v1/catalogs/lake/refs/main%23{time}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["hash"], json!(head));
}

#[tokio::test]
async fn a_method_a_route_does_not_serve_is_an_iceberg_error() {
    let env = env().await;
    let (status, body) = call(&env.app, Method::PUT, "/v1/lake/namespaces/db", None).await;
    assert_error(
        status,
        &body,
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowedException",
    );
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

#[tokio::test]
async fn metrics_reports_need_a_type_and_a_table() {
    let env = env().await;
    let app = &env.app;
    create_table(app, "lake", "t").await;
    let head = ref_hash(app, "main").await;
    let report = json!({
        "report-type": "scan-report",
        "table-name": "db.t",
        "snapshot-id": 1,
        "filter": true,
        "schema-id": 0,
        "projected-field-ids": [1],
        "projected-field-names": ["id"],
        "metrics": {}
    });
    let (status, body) = post(
        app,
        "/v1/lake/namespaces/db/tables/t/metrics",
        report.clone(),
    )
    .await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    let (status, body) = post(
        app,
        "/v1/lake/namespaces/db/tables/t/metrics",
        json!({"table-name": "db.t", "snapshot-id": 1}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::BAD_REQUEST,
        "BadRequestException",
    );
    assert!(message(&body).contains("report-type"), "{body}");
    let (status, body) = post(app, "/v1/lake/namespaces/db/tables/nope/metrics", report).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "NoSuchTableException");
    let (status, body) = call_raw(
        app,
        Method::POST,
        "/v1/lake/namespaces/db/tables/t/metrics",
        Some("[1, 2]".into()),
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

#[tokio::test]
async fn merges_report_conflicts_and_dry_runs_without_moving() {
    let env = env().await;
    let app = &env.app;
    create_table(app, "lake", "t").await;
    create_ref(app, "dev", "branch").await;
    let set = |value: &str| json!([{"action": "set-properties", "updates": {"owner": value}}]);
    let (status, body) = commit(app, &table_uri("t"), json!([]), set("main")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = commit(app, &table_uri("t@dev"), json!([]), set("dev")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (main, dev) = (ref_hash(app, "main").await, ref_hash(app, "dev").await);

    for dry_run in [true, false] {
        let (status, body) = post(
            app,
            "/api/v1/catalogs/lake/merge",
            json!({"source": "dev", "dry-run": dry_run}),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(body["result"], "conflicted");
        assert_eq!(body["error"]["type"], "MergeConflictException");
        let conflicts = body["conflicts"].as_array().unwrap();
        assert_eq!(conflicts.len(), 1, "{body}");
        assert_eq!(conflicts[0]["key"], json!(["db", "t"]));
        assert_eq!(conflicts[0]["kind"], "both-modified");
        assert_eq!(body["target-head"], json!(main));
        assert_eq!(ref_hash(app, "main").await, main, "dry-run {dry_run}");
        assert_eq!(ref_hash(app, "dev").await, dev, "dry-run {dry_run}");
        let (_, t) = get(app, &table_uri("t")).await;
        assert_eq!(t["metadata"]["properties"], json!({"owner": "main"}));
    }

    // A clean merge as a dry run reports the change and moves nothing; then for real.
    create_ref(app, "feature", "branch").await;
    create_table(app, "lake", "x@feature").await;
    let (status, body) = post(
        app,
        "/api/v1/catalogs/lake/merge",
        json!({"source": "feature", "dry-run": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["dry-run"], true);
    let keys: Vec<&Value> = body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["key"])
        .collect();
    assert_eq!(keys, [&json!(["db", "x"])], "{body}");
    assert_eq!(body["changes"][0]["before"], Value::Null);
    assert!(
        body["changes"][0]["after"]["metadata-location"].is_string(),
        "{body}"
    );
    assert_eq!(ref_hash(app, "main").await, main);
    let (status, _) = get(app, &table_uri("x")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, body) = post(
        app,
        "/api/v1/catalogs/lake/merge",
        json!({"source": "feature"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["dry-run"], false);
    let moved = ref_hash(app, "main").await;
    assert_ne!(moved, main);
    assert_eq!(body["target-head"], json!(moved));
    let (status, _) = get(app, &table_uri("x")).await;
    assert_eq!(status, StatusCode::OK);
    let (_, t) = get(app, &table_uri("t")).await;
    assert_eq!(t["metadata"]["properties"], json!({"owner": "main"}));
}
