//! The management API (`/api/v1`), route by route: branches and tags, the log, commits, diffs,
//! the catalog tree, merges, cherry-picks and reverts, with good and bad input. Catalog history
//! is made through the Iceberg routes (`/v1/lake/...`, `/v1/lake@dev/...`) over the memory
//! backend, with table files in a temporary warehouse.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::TestApp;
use pangolin_backend_memory::MemoryBackend;
use pangolin_catalog::Catalog;
use pangolin_store::{
    ObjectCache, ObjectId, ObjectKind, ObjectStore, RawObject, RepoId, Timestamp,
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// The management routes of catalog `lake`.
const API: &str = "/api/v1/catalogs/lake";

/// The router over a fresh catalog `lake` (created by `test`) with namespace `db`, the store
/// behind it, and the warehouse directory (kept alive as long as the test holds it).
struct Env {
    app: axum::Router,
    store: Arc<MemoryBackend>,
    cache: Arc<ObjectCache>,
    _dir: TempDir,
}

async fn env() -> Env {
    let TestApp {
        app,
        dir,
        store,
        cache,
        ..
    } = TestApp::new().await;
    let (status, body) = post(&app, "/v1/lake/namespaces", json!({"namespace": ["db"]})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    Env {
        app,
        store,
        cache,
        _dir: dir,
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

async fn put(app: &axum::Router, uri: &str, body: Value) -> (StatusCode, Value) {
    call(app, Method::PUT, uri, Some(body)).await
}

async fn delete(app: &axum::Router, uri: &str) -> (StatusCode, Value) {
    call(app, Method::DELETE, uri, None).await
}

/// A GET that must succeed.
async fn get_ok(app: &axum::Router, uri: &str) -> Value {
    let (status, body) = get(app, uri).await;
    assert_eq!(status, StatusCode::OK, "GET {uri}: {body}");
    body
}

/// A POST that must succeed with 200.
async fn post_ok(app: &axum::Router, uri: &str, body: Value) -> Value {
    let (status, answer) = post(app, uri, body.clone()).await;
    assert_eq!(status, StatusCode::OK, "POST {uri} {body}: {answer}");
    answer
}

fn error_type(value: &Value) -> &str {
    value["error"]["type"].as_str().unwrap_or_default()
}

fn message(value: &Value) -> &str {
    value["error"]["message"].as_str().unwrap_or_default()
}

/// The error object of an Iceberg error: `{"message", "type", "code"}` and nothing else.
fn assert_error_object(error: &Value, expected: StatusCode, kind: &str) {
    assert_eq!(error["type"], json!(kind), "{error}");
    assert_eq!(error["code"], json!(expected.as_u16()), "{error}");
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{error}"
    );
    assert_eq!(error.as_object().unwrap().len(), 3, "{error}");
}

/// An Iceberg error body, whole: `{"error": {"message", "type", "code"}}` and nothing else.
fn assert_error(status: StatusCode, body: &Value, expected: StatusCode, kind: &str) {
    assert_eq!((status, error_type(body)), (expected, kind), "{body}");
    assert_error_object(&body["error"], expected, kind);
    assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
}

fn assert_bad_request(status: StatusCode, body: &Value) {
    assert_error(status, body, StatusCode::BAD_REQUEST, "BadRequestException");
}

/// The head commit of a ref, as the management API reports it.
async fn ref_hash(app: &axum::Router, name: &str) -> String {
    get_ok(app, &format!("{API}/refs/{name}")).await["hash"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Creates branch or tag `name` from `from` (the default when `None`); its hash.
async fn create_ref(app: &axum::Router, name: &str, kind: &str, from: Option<&str>) -> String {
    let mut request = json!({"name": name, "type": kind});
    if let Some(from) = from {
        request["from"] = json!(from);
    }
    let (status, body) = post(app, &format!("{API}/refs"), request).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["name"], json!(name), "{body}");
    assert_eq!(body["type"], json!(kind), "{body}");
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

/// Creates table `db.{name}` at `prefix` (`lake`, `lake@dev`); its load-table answer.
async fn create_table(app: &axum::Router, prefix: &str, name: &str) -> Value {
    post_ok(
        app,
        &format!("/v1/{prefix}/namespaces/db/tables"),
        json!({"name": name, "schema": schema()}),
    )
    .await
}

fn table_uri(prefix: &str, name: &str) -> String {
    format!("/v1/{prefix}/namespaces/db/tables/{name}")
}

/// Sets table property `key` of `db.{table}` at `prefix`: one commit.
async fn set_table_property(app: &axum::Router, prefix: &str, table: &str, key: &str, value: &str) {
    post_ok(
        app,
        &table_uri(prefix, table),
        json!({"requirements": [],
               "updates": [{"action": "set-properties", "updates": {key: value}}]}),
    )
    .await;
}

/// Adds snapshot `id` to `db.{table}` at `prefix` and points the table's `main` at it.
async fn append(app: &axum::Router, prefix: &str, table: &str, id: i64) {
    post_ok(
        app,
        &table_uri(prefix, table),
        json!({"requirements": [], "updates": [
            {"action": "add-snapshot", "snapshot": {
                "snapshot-id": id,
                "sequence-number": 1,
                "timestamp-ms": 1_700_000_000_000_i64 + id,
                "manifest-list": format!("file:///nowhere/snap-{id}.avro"),
                "summary": {"operation": "append", "added-records": "10"},
                "schema-id": 0
            }},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": id}
        ]}),
    )
    .await;
}

/// The metadata location of `db.{table}` at `prefix`.
async fn metadata_location(app: &axum::Router, prefix: &str, table: &str) -> String {
    get_ok(app, &table_uri(prefix, table)).await["metadata-location"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Sets property `key` of namespace `namespace` (levels joined by `%1F`) at `prefix`.
async fn set_namespace_property(
    app: &axum::Router,
    prefix: &str,
    namespace: &str,
    key: &str,
    value: &str,
) {
    post_ok(
        app,
        &format!("/v1/{prefix}/namespaces/{namespace}/properties"),
        json!({"updates": {key: value}}),
    )
    .await;
}

async fn namespace_properties(app: &axum::Router, prefix: &str, namespace: &str) -> Value {
    get_ok(app, &format!("/v1/{prefix}/namespaces/{namespace}")).await["properties"].clone()
}

/// The hashes of a list of commits or refs.
fn hashes(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["hash"].as_str().unwrap().to_owned())
        .collect()
}

/// The keys of a list of changes or entries, as `a.b`.
fn keys(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["key"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(".")
        })
        .collect()
}

/// `uri` with `param=value` appended.
fn with_param(uri: &str, param: &str, value: &str) -> String {
    let sep = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{sep}{param}={value}")
}

/// Every page of a paged list at `uri` (`field` holds the items), following
/// `next-page-token`; the pages' sizes are checked against `page_size`.
async fn all_pages(app: &axum::Router, uri: &str, field: &str, page_size: usize) -> Vec<Value> {
    pages(app, uri, field, page_size, false).await
}

/// [`all_pages`] for a filtered log, whose last page may be empty (see
/// `a_filtered_log_gives_no_token_when_nothing_follows`).
async fn all_filtered_log_pages(app: &axum::Router, uri: &str, page_size: usize) -> Vec<Value> {
    pages(app, uri, "commits", page_size, true).await
}

async fn pages(
    app: &axum::Router,
    uri: &str,
    field: &str,
    page_size: usize,
    empty_last_page: bool,
) -> Vec<Value> {
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..1_000 {
        let mut page_uri = with_param(uri, "pageSize", &page_size.to_string());
        if let Some(token) = &token {
            page_uri = with_param(&page_uri, "pageToken", token);
        }
        let page = get_ok(app, &page_uri).await;
        let got = page[field].as_array().unwrap();
        assert!(got.len() <= page_size, "{page_uri}: {page}");
        // A token is only given when more follow.
        assert!(
            token.is_none() || !got.is_empty() || empty_last_page,
            "{page_uri}: an empty last page"
        );
        items.extend(got.iter().cloned());
        match page.get("next-page-token") {
            None => return items,
            Some(next) => {
                // A token is only given when the page is full.
                assert_eq!(got.len(), page_size, "{page_uri}: {page}");
                token = Some(next.as_str().unwrap().to_owned());
            }
        }
    }
    panic!("{uri} did not stop paging");
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

/// The `time` of a commit, parsed.
fn time_of(commit: &Value) -> jiff::Timestamp {
    commit["time"].as_str().unwrap().parse().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Catalogs

#[tokio::test]
async fn catalogs_are_listed_and_an_unknown_catalog_is_404_everywhere() {
    let env = env().await;
    let app = &env.app;
    let body = get_ok(app, "/api/v1/catalogs").await;
    assert_eq!(
        body,
        json!({"catalogs": [{"name": "lake", "default-branch": "main", "warehouse": "files"}]})
    );

    let head = ref_hash(app, "main").await;
    // Every route family, with input that would be fine in `lake`.
    for catalog in ["nope", "lake@main"] {
        let base = format!("/api/v1/catalogs/{catalog}");
        let requests = [
            (Method::GET, format!("{base}/refs"), None),
            (
                Method::POST,
                format!("{base}/refs"),
                Some(json!({"name": "x", "type": "branch"})),
            ),
            (Method::GET, format!("{base}/refs/main"), None),
            (
                Method::PUT,
                format!("{base}/refs/main"),
                Some(json!({"to": "main", "expected-hash": head})),
            ),
            (Method::DELETE, format!("{base}/refs/x"), None),
            (Method::GET, format!("{base}/refs/main/log"), None),
            (Method::GET, format!("{base}/log"), None),
            (Method::GET, format!("{base}/commits/main"), None),
            (Method::GET, format!("{base}/diff?from=main&to=main"), None),
            (Method::GET, format!("{base}/entries"), None),
            (
                Method::POST,
                format!("{base}/merge"),
                Some(json!({"source": "main"})),
            ),
            (
                Method::POST,
                format!("{base}/cherry-pick"),
                Some(json!({"commits": ["main"]})),
            ),
            (
                Method::POST,
                format!("{base}/revert"),
                Some(json!({"commit": "main"})),
            ),
        ];
        for (method, uri, body) in requests {
            let label = format!("{method} {uri}");
            let (status, answer) = call(app, method, &uri, body).await;
            assert_error(
                status,
                &answer,
                StatusCode::NOT_FOUND,
                "NoSuchCatalogException",
            );
            assert!(message(&answer).contains(catalog), "{label}: {answer}");
        }
    }
    // Nothing was created or moved in `lake`.
    assert_eq!(ref_hash(app, "main").await, head);
    let refs = get_ok(app, &format!("{API}/refs")).await;
    assert_eq!(hashes(&refs["refs"]), [head]);
}

#[tokio::test]
async fn the_openapi_document_describes_every_management_route() {
    let env = env().await;
    let body = get_ok(&env.app, "/api/v1/openapi.json").await;
    assert!(
        body["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        body["openapi"]
    );
    let paths = &body["paths"];
    for (path, methods) in [
        ("/api/v1/catalogs", &["get"][..]),
        ("/api/v1/catalogs/{catalog}/refs", &["get", "post"]),
        (
            "/api/v1/catalogs/{catalog}/refs/{name}",
            &["get", "put", "delete"],
        ),
        ("/api/v1/catalogs/{catalog}/refs/{name}/log", &["get"]),
        ("/api/v1/catalogs/{catalog}/log", &["get"]),
        ("/api/v1/catalogs/{catalog}/commits/{reference}", &["get"]),
        ("/api/v1/catalogs/{catalog}/diff", &["get"]),
        ("/api/v1/catalogs/{catalog}/entries", &["get"]),
        ("/api/v1/catalogs/{catalog}/merge", &["post"]),
        ("/api/v1/catalogs/{catalog}/cherry-pick", &["post"]),
        ("/api/v1/catalogs/{catalog}/revert", &["post"]),
    ] {
        for method in methods {
            assert!(
                paths[path][method].is_object(),
                "{method} {path} is not described"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Refs: list

#[tokio::test]
async fn refs_are_listed_by_type_and_prefix_and_paged() {
    let env = env().await;
    let app = &env.app;
    let main = ref_hash(app, "main").await;
    for name in [
        "feature/e",
        "feature/a",
        "feature/c",
        "feature/b",
        "feature/d",
    ] {
        create_ref(app, name, "branch", None).await;
    }
    create_ref(app, "zeta", "branch", None).await;
    create_ref(app, "v2", "tag", None).await;
    create_ref(app, "v1", "tag", None).await;
    let names = |refs: &[Value]| -> Vec<String> {
        refs.iter()
            .map(|r| {
                format!(
                    "{}:{}",
                    r["type"].as_str().unwrap(),
                    r["name"].as_str().unwrap()
                )
            })
            .collect()
    };

    // Branches first, then tags, each by name.
    let all = get_ok(app, &format!("{API}/refs")).await;
    assert!(all.get("next-page-token").is_none(), "{all}");
    let listed = all["refs"].as_array().unwrap();
    assert_eq!(
        names(listed),
        [
            "branch:feature/a",
            "branch:feature/b",
            "branch:feature/c",
            "branch:feature/d",
            "branch:feature/e",
            "branch:main",
            "branch:zeta",
            "tag:v1",
            "tag:v2"
        ]
    );
    for r in listed {
        assert_eq!(r["hash"], json!(main), "{r}");
        assert_eq!(r.as_object().unwrap().len(), 5, "{r}");
    }

    // Paged: every page size gives the same refs, each once, no gaps.
    for size in [1, 2, 4, 9, 10] {
        let paged = all_pages(app, &format!("{API}/refs"), "refs", size).await;
        assert_eq!(&paged, listed, "pageSize {size}");
    }
    // The five feature branches, two at a time: 2 + 2 + 1.
    let uri = format!("{API}/refs?type=branch&prefix=feature/&pageSize=2");
    let first = get_ok(app, &uri).await;
    assert_eq!(
        names(first["refs"].as_array().unwrap()),
        ["branch:feature/a", "branch:feature/b"]
    );
    let token = first["next-page-token"].as_str().unwrap();
    let second = get_ok(app, &format!("{uri}&pageToken={token}")).await;
    assert_eq!(
        names(second["refs"].as_array().unwrap()),
        ["branch:feature/c", "branch:feature/d"]
    );
    let token = second["next-page-token"].as_str().unwrap();
    let third = get_ok(app, &format!("{uri}&pageToken={token}")).await;
    assert_eq!(
        names(third["refs"].as_array().unwrap()),
        ["branch:feature/e"]
    );
    assert!(third.get("next-page-token").is_none(), "{third}");

    // Filters.
    let branches = get_ok(app, &format!("{API}/refs?type=branch")).await;
    assert_eq!(branches["refs"].as_array().unwrap().len(), 7);
    assert!(
        branches["refs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["type"] == "branch"),
        "{branches}"
    );
    let tags = get_ok(app, &format!("{API}/refs?type=tag")).await;
    assert_eq!(
        names(tags["refs"].as_array().unwrap()),
        ["tag:v1", "tag:v2"]
    );
    let prefixed = get_ok(app, &format!("{API}/refs?prefix=v")).await;
    assert_eq!(
        names(prefixed["refs"].as_array().unwrap()),
        ["tag:v1", "tag:v2"]
    );
    let prefixed = get_ok(app, &format!("{API}/refs?prefix=feature%2Fd")).await;
    assert_eq!(
        names(prefixed["refs"].as_array().unwrap()),
        ["branch:feature/d"]
    );
    let none = get_ok(app, &format!("{API}/refs?prefix=nothing")).await;
    assert_eq!(none, json!({"refs": []}));
    let none = get_ok(app, &format!("{API}/refs?type=tag&prefix=feature")).await;
    assert_eq!(none, json!({"refs": []}));

    // Bad input.
    for query in [
        "type=commit",
        "type=",
        "pageSize=0",
        "pageSize=ten",
        "pageSize=-1",
        "pageToken=zz",
        "pageToken=abc",
        // Hex, but not of `b:<name>` or `t:<name>`.
        "pageToken=6d61696e",
        "pageToken=783a6d61696e",
        // `b:a..b`: not a ref name.
        "pageToken=623a612e2e62",
    ] {
        let (status, body) = get(app, &format!("{API}/refs?{query}")).await;
        assert_bad_request(status, &body);
    }
    // A page size above the limit is capped, not refused.
    let big = get_ok(app, &format!("{API}/refs?pageSize=100000")).await;
    assert_eq!(big["refs"].as_array().unwrap().len(), 9);
}

#[tokio::test]
async fn refs_say_how_far_each_branch_is_from_main() {
    let env = env().await;
    let app = &env.app;
    create_ref(app, "dev", "branch", None).await;
    create_ref(app, "idle", "branch", None).await;
    create_ref(app, "v1", "tag", None).await;
    create_table(app, "lake@dev", "t").await;
    set_table_property(app, "lake@dev", "t", "owner", "dev").await;
    for value in ["a", "b", "c"] {
        set_namespace_property(app, "lake", "db", "k", value).await;
    }
    // A branch that only has main's older history: behind, not ahead.
    create_ref(app, "old", "branch", Some("main~2")).await;
    // A tag on dev: no divergence for tags.
    create_ref(app, "dev-tag", "tag", Some("dev")).await;

    let refs = get_ok(app, &format!("{API}/refs")).await;
    let divergence: Vec<(String, Value, Value)> = refs["refs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            // Both keys are always there, null for tags.
            let r = r.as_object().unwrap();
            (
                r["name"].as_str().unwrap().to_owned(),
                r["ahead"].clone(),
                r["behind"].clone(),
            )
        })
        .collect();
    let expected = [
        ("dev", json!(2), json!(3)),
        ("idle", json!(0), json!(3)),
        ("main", json!(0), json!(0)),
        ("old", json!(0), json!(2)),
        ("dev-tag", Value::Null, Value::Null),
        ("v1", Value::Null, Value::Null),
    ];
    let expected: Vec<(String, Value, Value)> = expected
        .into_iter()
        .map(|(n, a, b)| (n.to_owned(), a, b))
        .collect();
    assert_eq!(divergence, expected, "{refs}");

    // With main merged into dev, dev is not behind any more.
    post_ok(
        app,
        &format!("{API}/merge"),
        json!({"source": "main", "target": "dev"}),
    )
    .await;
    let dev = get_ok(app, &format!("{API}/refs?prefix=dev&type=branch")).await;
    assert_eq!(dev["refs"][0]["behind"], json!(0), "{dev}");
}

/// `ahead` and `behind` count first-parent commits since the merge base by subtracting
/// first-parent depths, which is only right when the merge base is on both first-parent chains.
/// After main is merged into dev (a merge commit on dev), the merge base of dev and main is
/// main's head, which is not on dev's first-parent chain.
#[tokio::test]
async fn ahead_and_behind_after_merging_main_into_a_branch() {
    let env = env().await;
    let app = &env.app;
    create_ref(app, "dev", "branch", None).await;
    create_table(app, "lake@dev", "t").await;
    set_table_property(app, "lake@dev", "t", "owner", "dev").await;
    for value in ["a", "b", "c"] {
        set_namespace_property(app, "lake", "db", "k", value).await;
    }
    post_ok(
        app,
        &format!("{API}/merge"),
        json!({"source": "main", "target": "dev"}),
    )
    .await;
    // dev has three first-parent commits main does not (two of its own and the merge); main
    // has none that dev does not.
    let dev = get_ok(app, &format!("{API}/refs?prefix=dev")).await;
    assert_eq!(
        (
            dev["refs"][0]["ahead"].clone(),
            dev["refs"][0]["behind"].clone()
        ),
        (json!(3), json!(0)),
        "{dev}"
    );
}

// ---------------------------------------------------------------------------------------------
// Refs: create

#[tokio::test]
async fn refs_are_created_from_any_reference() {
    let env = env().await;
    let app = &env.app;
    let first = ref_hash(app, "main").await;
    let time_at_first = pangolin_catalog::rfc3339(instant_between().await);
    set_namespace_property(app, "lake", "db", "k", "1").await;
    let second = ref_hash(app, "main").await;
    assert_ne!(first, second);

    // `from` defaults to main; `type` to branch.
    let (status, body) = post(app, &format!("{API}/refs"), json!({"name": "plain"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        body,
        json!({"name": "plain", "type": "branch", "hash": second})
    );

    for (name, kind, from, expected) in [
        ("from-ref", "branch", "main".to_owned(), &second),
        ("from-tag-source", "tag", "plain".to_owned(), &second),
        ("from-hash", "branch", first.clone(), &first),
        ("from-short-hash", "tag", first[..10].to_owned(), &first),
        ("from-ancestor", "branch", "main~1".to_owned(), &first),
        (
            "from-at-hash",
            "branch",
            format!("main#{}", &first[..12]),
            &first,
        ),
        ("from-time", "tag", format!("main#{time_at_first}"), &first),
        (
            "from-a-tag",
            "branch",
            "from-tag-source".to_owned(),
            &second,
        ),
        ("nested/name.x", "branch", "from-hash".to_owned(), &first),
    ] {
        let hash = create_ref(app, name, kind, Some(&from)).await;
        assert_eq!(&hash, expected, "{name} from {from}");
        let body = get_ok(app, &format!("{API}/refs/{}", name.replace('/', "%2F"))).await;
        assert_eq!(
            (body["type"].as_str().unwrap(), &body["hash"]),
            (kind, &json!(expected))
        );
    }

    // Bad names, sources and types are 400 and create nothing.
    let before = get_ok(app, &format!("{API}/refs")).await;
    for request in [
        json!({"name": "a..b"}),
        json!({"name": "has space"}),
        json!({"name": ""}),
        json!({"name": "x@y"}),
        json!({"name": "x#y"}),
        json!({"name": "x~1"}),
        json!({"name": "/lead"}),
        json!({"name": "end.lock"}),
        json!({"name": "ok", "type": "commit"}),
        json!({"name": "ok", "from": "nope"}),
        json!({"name": "ok", "from": "main~99"}),
        json!({"name": "ok", "from": "main#abc"}),
        json!({"name": "ok", "from": "main#2001-01-01T00:00:00Z"}),
        json!({"name": "ok", "from": "deadbeefdeadbeef"}),
        json!({"name": "ok", "from": "a..b"}),
    ] {
        let (status, body) = post(app, &format!("{API}/refs"), request.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{request}: {body}");
        assert_bad_request(status, &body);
    }
    assert_eq!(get_ok(app, &format!("{API}/refs")).await, before);

    // A name taken by a branch or a tag, whatever the new ref's type: 409, nothing changes.
    for (name, kind) in [
        ("main", "branch"),
        ("main", "tag"),
        ("from-tag-source", "tag"),
        ("from-tag-source", "branch"),
        ("plain", "tag"),
    ] {
        let (status, body) = post(
            app,
            &format!("{API}/refs"),
            json!({"name": name, "type": kind, "from": first}),
        )
        .await;
        assert_error(
            status,
            &body,
            StatusCode::CONFLICT,
            "AlreadyExistsException",
        );
    }
    assert_eq!(get_ok(app, &format!("{API}/refs")).await, before);
    assert_eq!(ref_hash(app, "main").await, second);
    assert_eq!(ref_hash(app, "plain").await, second);
}

// ---------------------------------------------------------------------------------------------
// Refs: read

#[tokio::test]
async fn refs_are_read_by_any_expression() {
    let env = env().await;
    let app = &env.app;
    let first = ref_hash(app, "main").await;
    let time_at_first = pangolin_catalog::rfc3339(instant_between().await);
    set_namespace_property(app, "lake", "db", "k", "1").await;
    let second = ref_hash(app, "main").await;
    create_ref(app, "v1", "tag", Some(&first)).await;
    create_ref(app, "feature/x", "branch", None).await;
    create_ref(app, "dev", "branch", None).await;
    set_namespace_property(app, "lake@dev", "db", "k", "dev").await;
    let dev = ref_hash(app, "dev").await;

    let main = get_ok(app, &format!("{API}/refs/main")).await;
    let object = main.as_object().unwrap();
    assert_eq!(
        object.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        BTreeSet::from(["name", "type", "hash", "time", "message"]),
        "{main}"
    );
    assert_eq!(
        (&main["name"], &main["type"], &main["hash"]),
        (&json!("main"), &json!("branch"), &json!(second))
    );
    assert!(main["message"].as_str().unwrap().contains("db"), "{main}");
    let time = main["time"].as_str().unwrap();
    assert!(time.ends_with('Z') && time.contains('T'), "{time}");
    let root = format!(
        "{API}/refs/{}",
        get_ok(app, &format!("{API}/log")).await["commits"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["hash"]
            .as_str()
            .unwrap()
    );
    assert_eq!(get_ok(app, &root).await["message"], "create catalog lake");

    for (reference, name, kind, hash) in [
        ("v1".to_owned(), "v1", "tag", &first),
        ("feature%2Fx".to_owned(), "feature/x", "branch", &second),
        (second.clone(), second.as_str(), "commit", &second),
        (first[..8].to_owned(), &first[..8], "commit", &first),
        (dev[..16].to_owned(), &dev[..16], "commit", &dev),
        ("main~1".to_owned(), "main~1", "commit", &first),
        ("main~".to_owned(), "main~", "commit", &first),
        ("main~0".to_owned(), "main~0", "commit", &second),
        ("dev~1".to_owned(), "dev~1", "commit", &second),
        ("v1~0".to_owned(), "v1~0", "commit", &first),
        (format!("main%23{first}"), "", "commit", &first),
        (format!("main%23{}", &second[..8]), "", "commit", &second),
        (format!("main%23{time_at_first}"), "", "commit", &first),
        (
            "main%232099-01-01T00:00:00Z".to_owned(),
            "",
            "commit",
            &second,
        ),
    ] {
        let body = get_ok(app, &format!("{API}/refs/{reference}")).await;
        if !name.is_empty() {
            assert_eq!(body["name"], json!(name), "{reference}: {body}");
        }
        assert_eq!(
            (&body["type"], &body["hash"]),
            (&json!(kind), &json!(hash)),
            "{reference}: {body}"
        );
    }

    // Unknown refs, bad expressions, hashes not in the ref's history, times before it.
    for reference in [
        "nope".to_owned(),
        "a..b".to_owned(),
        "main~99".to_owned(),
        "main~x".to_owned(),
        // Too short to be a hash: a name, and no ref has it.
        first[..7].to_owned(),
        format!("main%23{}", &first[..7]),
        "main%23zzzzzzzz".to_owned(),
        format!("main%23{dev}"),
        format!("v1%23{second}"),
        "main%232001-01-01T00:00:00Z".to_owned(),
        "main%232026-13-40T00:00:00Z".to_owned(),
        "deadbeefdeadbeef".to_owned(),
    ] {
        let (status, body) = get(app, &format!("{API}/refs/{reference}")).await;
        assert_bad_request(status, &body);
    }

    // A prefix two objects share is ambiguous: plant an object whose id is the head's with its
    // 21st hex digit changed.
    let flipped = if second.as_bytes()[20] == b'0' {
        "1"
    } else {
        "0"
    };
    let twin = format!("{}{flipped}{}", &second[..20], &second[21..]);
    let raw = RawObject {
        id: twin.parse::<ObjectId>().unwrap(),
        kind: ObjectKind::Commit,
        data: Vec::<u8>::new().into(),
    };
    env.store
        .put_many(&RepoId::new("default.lake").unwrap(), &[raw])
        .await
        .unwrap();
    for reference in [second[..20].to_owned(), format!("main%23{}", &second[..20])] {
        let (status, body) = get(app, &format!("{API}/refs/{reference}")).await;
        assert_bad_request(status, &body);
        assert!(message(&body).contains("ambiguous"), "{reference}: {body}");
    }
    // A longer prefix tells them apart again.
    let body = get_ok(app, &format!("{API}/refs/main%23{}", &second[..21])).await;
    assert_eq!(body["hash"], json!(second));
    let body = get_ok(app, &format!("{API}/refs/{}", &second[..21])).await;
    assert_eq!(body["hash"], json!(second));
}

/// A well-formed hash that names no commit (a full hash of nothing, or a tree's hash) resolves
/// without a check and fails when the commit is read: 500 instead of 400.
#[tokio::test]
async fn hashes_that_are_not_commits_are_bad_requests() {
    let env = env().await;
    let app = &env.app;
    let head = ref_hash(app, "main").await;
    let catalog = Catalog::open(env.store.clone(), env.cache.clone(), "default", "lake").unwrap();
    let tree = catalog
        .odb()
        .commit(&head.parse().unwrap())
        .await
        .unwrap()
        .tree
        .to_hex();
    let nothing = "0".repeat(64);
    for reference in [nothing.clone(), tree.clone(), format!("main%23{nothing}")] {
        for uri in [
            format!("{API}/refs/{reference}"),
            format!("{API}/commits/{reference}"),
            format!("{API}/entries?ref={reference}"),
            format!("{API}/diff?from=main&to={reference}"),
            format!("{API}/refs/{reference}/log"),
        ] {
            let (status, body) = get(app, &uri).await;
            assert_bad_request(status, &body);
        }
        let reference = reference.replace("%23", "#");
        for (uri, body) in [
            (format!("{API}/merge"), json!({"source": reference})),
            (
                format!("{API}/cherry-pick"),
                json!({"commits": [reference]}),
            ),
            (format!("{API}/revert"), json!({"commit": reference})),
        ] {
            let (status, answer) = post(app, &uri, body).await;
            assert_bad_request(status, &answer);
        }
    }
}

/// A well-formed hash is not looked up when it resolves, so without a check of its own a ref
/// could be created at, or moved to, something that is not a commit (nothing at all, or a
/// tree), which breaks every later read of it; and a log could be asked to start there.
#[tokio::test]
async fn refs_are_never_pointed_at_what_is_not_a_commit() {
    let env = env().await;
    let app = &env.app;
    let head = ref_hash(app, "main").await;
    let catalog = Catalog::open(env.store.clone(), env.cache.clone(), "default", "lake").unwrap();
    let tree = catalog
        .odb()
        .commit(&head.parse().unwrap())
        .await
        .unwrap()
        .tree
        .to_hex();
    let nothing = "0".repeat(64);
    let refs = get_ok(app, &format!("{API}/refs")).await;
    for target in [nothing.clone(), tree.clone(), tree[..12].to_owned()] {
        for kind in ["branch", "tag"] {
            let (status, body) = post(
                app,
                &format!("{API}/refs"),
                json!({"name": "x", "type": kind, "from": target}),
            )
            .await;
            assert_bad_request(status, &body);
            assert!(message(&body).contains("not a commit"), "{body}");
        }
        let (status, body) = put(
            app,
            &format!("{API}/refs/main"),
            json!({"to": target, "expected-hash": head}),
        )
        .await;
        assert_bad_request(status, &body);
        let token: String = target.bytes().map(|b| format!("{b:02x}")).collect();
        let (status, body) = get(app, &format!("{API}/log?pageToken={token}")).await;
        assert_bad_request(status, &body);
    }
    assert_eq!(get_ok(app, &format!("{API}/refs")).await, refs);
    get_ok(app, &format!("{API}/entries")).await;
    get_ok(app, "/v1/lake/namespaces/db").await;
}

// ---------------------------------------------------------------------------------------------
// Refs: move

#[tokio::test]
async fn branches_move_only_from_the_expected_hash() {
    let env = env().await;
    let app = &env.app;
    let main = ref_hash(app, "main").await;
    create_ref(app, "b", "branch", None).await;
    create_ref(app, "dev", "branch", None).await;
    create_ref(app, "v1", "tag", None).await;
    create_table(app, "lake@dev", "t").await;
    let dev = ref_hash(app, "dev").await;

    let (status, body) = put(
        app,
        &format!("{API}/refs/b"),
        json!({"to": "dev", "expected-hash": main}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"name": "b", "type": "branch", "hash": dev, "previous-hash": main})
    );
    assert_eq!(ref_hash(app, "b").await, dev);
    let (status, _) = get(app, &table_uri("lake@b", "t")).await;
    assert_eq!(status, StatusCode::OK);

    // Stale: b is at dev now.
    let (status, body) = put(
        app,
        &format!("{API}/refs/b"),
        json!({"to": "main", "expected-hash": main}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "ReferenceConflictException",
    );
    assert_eq!(ref_hash(app, "b").await, dev);

    // A hash prefix works as the expected hash; `to` is any expression.
    let body = {
        let (status, body) = put(
            app,
            &format!("{API}/refs/b"),
            json!({"to": "dev~1", "expected-hash": &dev[..12]}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    };
    assert_eq!(
        (&body["hash"], &body["previous-hash"]),
        (&json!(main), &json!(dev))
    );
    assert_eq!(ref_hash(app, "b").await, main);

    // Tags do not move; unknown branches are 404; bad input is 400. Nothing moves.
    let (status, body) = put(
        app,
        &format!("{API}/refs/v1"),
        json!({"to": "dev", "expected-hash": main}),
    )
    .await;
    assert_bad_request(status, &body);
    assert!(message(&body).contains("tag"), "{body}");
    assert_eq!(ref_hash(app, "v1").await, main);
    let (status, body) = put(
        app,
        &format!("{API}/refs/nope"),
        json!({"to": "dev", "expected-hash": main}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::NOT_FOUND,
        "NoSuchReferenceException",
    );
    let (status, _) = get(app, &format!("{API}/refs/nope")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    for (name, request) in [
        ("b", json!({"to": "nope", "expected-hash": main})),
        ("b", json!({"to": "main~99", "expected-hash": main})),
        ("b", json!({"to": "dev", "expected-hash": "xyz"})),
        ("b", json!({"to": "dev", "expected-hash": &main[..6]})),
        (
            "b",
            json!({"to": "dev", "expected-hash": "deadbeefdeadbeef"}),
        ),
        ("b", json!({"to": "dev"})),
        ("b", json!({"expected-hash": main})),
        (
            "b",
            json!({"to": "dev", "expected-hash": main, "force": true}),
        ),
        ("a..b", json!({"to": "dev", "expected-hash": main})),
    ] {
        let (status, body) = put(app, &format!("{API}/refs/{name}"), request).await;
        assert_bad_request(status, &body);
    }
    let (status, body) = call_raw(
        app,
        Method::PUT,
        &format!("{API}/refs/b"),
        Some("{\"to\": ".to_owned()),
    )
    .await;
    assert_bad_request(status, &body);
    assert_eq!(ref_hash(app, "b").await, main);
    assert_eq!(ref_hash(app, "dev").await, dev);
}

// ---------------------------------------------------------------------------------------------
// Refs: delete

#[tokio::test]
async fn refs_are_deleted_only_from_the_expected_hash() {
    let env = env().await;
    let app = &env.app;
    let main = ref_hash(app, "main").await;
    create_ref(app, "dev", "branch", None).await;
    create_ref(app, "gone", "branch", None).await;
    create_ref(app, "v1", "tag", None).await;
    set_namespace_property(app, "lake@dev", "db", "k", "v").await;
    let dev = ref_hash(app, "dev").await;

    // Stale: dev moved since `main` was read.
    let (status, body) = delete(app, &format!("{API}/refs/dev?expected-hash={main}")).await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "ReferenceConflictException",
    );
    assert_eq!(ref_hash(app, "dev").await, dev);
    // Right: gone.
    let (status, body) = delete(app, &format!("{API}/refs/dev?expected-hash={dev}")).await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    let (status, body) = get(app, &format!("{API}/refs/dev")).await;
    assert_bad_request(status, &body);
    // Without an expected hash, and a prefix as the expected hash.
    let (status, _) = delete(app, &format!("{API}/refs/gone")).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = delete(app, &format!("{API}/refs/v1?expected-hash={}", &main[..8])).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let refs = get_ok(app, &format!("{API}/refs")).await;
    assert_eq!(
        refs["refs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["name"])
            .collect::<Vec<_>>(),
        [&json!("main")]
    );

    // The default branch stays, with or without an expected hash.
    for uri in [
        format!("{API}/refs/main"),
        format!("{API}/refs/main?expected-hash={main}"),
    ] {
        let (status, body) = delete(app, &uri).await;
        assert_bad_request(status, &body);
        assert!(message(&body).contains("main"), "{body}");
    }
    assert_eq!(ref_hash(app, "main").await, main);

    // Unknown refs (also one just deleted) are 404; bad input is 400.
    for name in ["nope", "dev", "v1"] {
        let (status, body) = delete(app, &format!("{API}/refs/{name}")).await;
        assert_error(
            status,
            &body,
            StatusCode::NOT_FOUND,
            "NoSuchReferenceException",
        );
    }
    create_ref(app, "keep", "branch", None).await;
    for uri in [
        format!("{API}/refs/keep?expected-hash=xyz"),
        format!("{API}/refs/keep?expected-hash=abc"),
        format!("{API}/refs/a..b"),
    ] {
        let (status, body) = delete(app, &uri).await;
        assert_bad_request(status, &body);
    }
    assert_eq!(ref_hash(app, "keep").await, main);
}

// ---------------------------------------------------------------------------------------------
// Log

/// Seven commits on main after the two of `env()`; the hashes of main's history, newest first.
async fn history(app: &axum::Router) -> Vec<String> {
    create_table(app, "lake", "t").await;
    set_namespace_property(app, "lake", "db", "k", "1").await;
    create_table(app, "lake", "u").await;
    set_table_property(app, "lake", "t", "owner", "a").await;
    set_namespace_property(app, "lake", "db", "k", "2").await;
    set_table_property(app, "lake", "u", "owner", "b").await;
    set_table_property(app, "lake", "t", "owner", "c").await;
    let log = get_ok(app, &format!("{API}/refs/main/log")).await;
    assert!(log.get("next-page-token").is_none(), "{log}");
    hashes(&log["commits"])
}

#[tokio::test]
async fn the_log_is_newest_first_and_pages_without_gaps_or_duplicates() {
    let env = env().await;
    let app = &env.app;
    let log = history(app).await;
    assert_eq!(log.len(), 9);
    assert_eq!(log[0], ref_hash(app, "main").await);

    // A first-parent chain from the head down to the catalog's first commit.
    let full = get_ok(app, &format!("{API}/refs/main/log")).await;
    let commits = full["commits"].as_array().unwrap();
    for pair in commits.windows(2) {
        assert_eq!(pair[0]["parents"], json!([pair[1]["hash"]]), "{pair:?}");
        assert!(time_of(&pair[0]) > time_of(&pair[1]), "{pair:?}");
    }
    let root = commits.last().unwrap();
    assert_eq!(root["parents"], json!([]));
    assert_eq!(root["author"], "test");
    assert_eq!(root["message"], "create catalog lake");
    assert_eq!(root["properties"], json!({"operation": "create-catalog"}));
    let object = commits[0].as_object().unwrap();
    assert_eq!(
        object.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        BTreeSet::from([
            "hash",
            "parents",
            "author",
            "committer",
            "time",
            "message",
            "properties"
        ])
    );
    assert_eq!(
        (&commits[0]["author"], &commits[0]["committer"]),
        (&json!("anonymous"), &json!("anonymous"))
    );

    // The same log through `/log`, with and without `ref`.
    assert_eq!(get_ok(app, &format!("{API}/log")).await, full);
    assert_eq!(get_ok(app, &format!("{API}/log?ref=main")).await, full);
    // Any expression: the log starts there.
    let older = get_ok(app, &format!("{API}/log?ref=main~3")).await;
    assert_eq!(hashes(&older["commits"]), log[3..]);
    let older = get_ok(app, &format!("{API}/refs/main~3/log")).await;
    assert_eq!(hashes(&older["commits"]), log[3..]);
    let older = get_ok(app, &format!("{API}/refs/main%23{}/log", &log[5][..10])).await;
    assert_eq!(hashes(&older["commits"]), log[5..]);

    // Every page size pages through the whole log once.
    for size in 1..=10 {
        for uri in [
            format!("{API}/refs/main/log"),
            format!("{API}/log?ref=main"),
        ] {
            let paged = all_pages(app, &uri, "commits", size).await;
            assert_eq!(hashes(&Value::Array(paged)), log, "{uri} pageSize {size}");
        }
    }
    // Tokens are the commit the next page starts at, and work on either route.
    let page = get_ok(app, &format!("{API}/refs/main/log?pageSize=4")).await;
    let token = page["next-page-token"].as_str().unwrap();
    let next = get_ok(app, &format!("{API}/log?pageSize=4&pageToken={token}")).await;
    assert_eq!(hashes(&next["commits"]), log[4..8]);

    // A branch has its own log, which shares main's older history.
    create_ref(app, "dev", "branch", Some("main~2")).await;
    set_namespace_property(app, "lake@dev", "db", "k", "dev").await;
    let dev = hashes(&get_ok(app, &format!("{API}/refs/dev/log")).await["commits"]);
    assert_eq!(dev.len(), 8);
    assert_eq!(dev[1..], log[2..]);
    // A page token of dev's own history is refused on main, and one of main's newer history on
    // dev; shared history is fine.
    let dev_page = get_ok(app, &format!("{API}/refs/dev/log?pageSize=1")).await;
    let dev_token = dev_page["next-page-token"].as_str().unwrap().to_owned();
    let shared = get_ok(app, &format!("{API}/refs/main/log?pageToken={dev_token}")).await;
    assert_eq!(hashes(&shared["commits"]), log[2..]);
    let main_page = get_ok(app, &format!("{API}/refs/main/log?pageSize=1")).await;
    let main_token = main_page["next-page-token"].as_str().unwrap().to_owned();
    let (status, body) = get(app, &format!("{API}/refs/dev/log?pageToken={main_token}")).await;
    assert_bad_request(status, &body);
    let dev_only: String = dev[0].bytes().map(|b| format!("{b:02x}")).collect();
    let (status, body) = get(app, &format!("{API}/refs/main/log?pageToken={dev_only}")).await;
    assert_bad_request(status, &body);
    let (status, body) = get(app, &format!("{API}/log?ref=main&pageToken={dev_only}")).await;
    assert_bad_request(status, &body);

    // Bad references, sizes and tokens.
    for uri in [
        format!("{API}/refs/nope/log"),
        format!("{API}/log?ref=nope"),
        format!("{API}/log?ref=main~99"),
        format!("{API}/log?pageSize=0"),
        format!("{API}/log?pageSize=x"),
        format!("{API}/log?pageToken=xyz"),
        format!("{API}/log?pageToken=abc"),
        // Hex of `zzzzzzzz`: not a hash.
        format!("{API}/log?pageToken=7a7a7a7a7a7a7a7a"),
        // Hex of `abc`: too short for a hash.
        format!("{API}/log?pageToken=616263"),
    ] {
        let (status, body) = get(app, &uri).await;
        assert_bad_request(status, &body);
    }
}

/// The log checks `commits.len() == limit` before it reads the next commit, so when a filter
/// (`since`, `author`, `key`) leaves nothing after a full page, that page still carries a
/// `next-page-token`, and the page it names is empty.
#[tokio::test]
async fn a_filtered_log_gives_no_token_when_nothing_follows() {
    let env = env().await;
    let app = &env.app;
    let log = history(app).await;
    let full = get_ok(app, &format!("{API}/log")).await;
    let since = full["commits"][3]["time"].as_str().unwrap().to_owned();
    let paged = all_pages(app, &format!("{API}/log?since={since}"), "commits", 2).await;
    assert_eq!(hashes(&Value::Array(paged)), log[..4]);
    let paged = all_pages(app, &format!("{API}/log?author=anonymous"), "commits", 4).await;
    assert_eq!(hashes(&Value::Array(paged)), log[..8]);
    let paged = all_pages(app, &format!("{API}/log?key=db%1Fu"), "commits", 1).await;
    assert_eq!(hashes(&Value::Array(paged)), [log[1].as_str(), &log[4]]);
}

#[tokio::test]
async fn the_log_filters_by_author_time_and_key() {
    let env = env().await;
    let app = &env.app;
    let log = history(app).await;
    let full = get_ok(app, &format!("{API}/log")).await;
    let commits = full["commits"].as_array().unwrap().clone();
    let time = |i: usize| commits[i]["time"].as_str().unwrap().to_owned();

    // Author.
    let by = |author: &str| format!("{API}/refs/main/log?author={author}");
    assert_eq!(hashes(&get_ok(app, &by("test")).await["commits"]), log[8..]);
    assert_eq!(
        hashes(&get_ok(app, &by("anonymous")).await["commits"]),
        log[..8]
    );
    assert_eq!(get_ok(app, &by("nobody")).await, json!({"commits": []}));
    assert_eq!(
        hashes(
            &get_ok(
                app,
                &format!(
                    "{API}/log?author=anonymous&pageSize=3&pageToken={}",
                    log[6]
                        .bytes()
                        .map(|b| format!("{b:02x}"))
                        .collect::<String>()
                )
            )
            .await["commits"]
        ),
        log[6..8]
    );
    let paged = all_filtered_log_pages(app, &by("anonymous"), 3).await;
    assert_eq!(hashes(&Value::Array(paged)), log[..8]);

    // Time: `since` and `until` are inclusive; commit times are strictly increasing along first
    // parents, so each names exactly one commit.
    let until = get_ok(app, &format!("{API}/log?until={}", time(3))).await;
    assert_eq!(hashes(&until["commits"]), log[3..]);
    let since = get_ok(app, &format!("{API}/refs/main/log?since={}", time(5))).await;
    assert_eq!(hashes(&since["commits"]), log[..=5]);
    let both = get_ok(
        app,
        &format!("{API}/log?since={}&until={}", time(6), time(2)),
    )
    .await;
    assert_eq!(hashes(&both["commits"]), log[2..=6]);
    let empty = get_ok(
        app,
        &format!("{API}/log?since={}&until={}", time(2), time(6)),
    )
    .await;
    assert_eq!(empty, json!({"commits": []}));
    let paged = all_filtered_log_pages(
        app,
        &format!("{API}/log?since={}&until={}", time(7), time(1)),
        2,
    )
    .await;
    assert_eq!(hashes(&Value::Array(paged)), log[1..=7]);
    // Offsets are accepted (RFC 3339), and a time before everything lists nothing.
    let none = get_ok(app, &format!("{API}/log?until=2001-01-01T01:00:00%2B01:00")).await;
    assert_eq!(none, json!({"commits": []}));
    let all = get_ok(app, &format!("{API}/log?since=2001-01-01T00:00:00Z")).await;
    assert_eq!(hashes(&all["commits"]), log);
    for uri in [
        format!("{API}/log?since=yesterday"),
        format!("{API}/log?until=2026-13-40T00:00:00Z"),
        format!("{API}/refs/main/log?since=1700000000000"),
        format!("{API}/refs/main/log?until=2026-01-01"),
    ] {
        let (status, body) = get(app, &uri).await;
        assert_bad_request(status, &body);
        assert!(message(&body).contains("RFC 3339"), "{uri}: {body}");
    }

    // Key: only the commits that changed that key.
    // History (newest first): 0 t.owner=c, 1 u.owner=b, 2 db.k=2, 3 t.owner=a, 4 create u,
    // 5 db.k=1, 6 create t, 7 create db, 8 create catalog.
    let key = |k: &str| format!("{API}/refs/main/log?key={k}");
    let t = get_ok(app, &key("db%1Ft")).await;
    assert_eq!(hashes(&t["commits"]), [log[0].as_str(), &log[3], &log[6]]);
    let u = get_ok(app, &format!("{API}/log?ref=main&key=db%1Fu")).await;
    assert_eq!(hashes(&u["commits"]), [log[1].as_str(), &log[4]]);
    let db = get_ok(app, &key("db")).await;
    assert_eq!(hashes(&db["commits"]), [log[2].as_str(), &log[5], &log[7]]);
    assert_eq!(get_ok(app, &key("db%1Fnope")).await, json!({"commits": []}));
    let paged = all_filtered_log_pages(app, &key("db%1Ft"), 1).await;
    assert_eq!(
        hashes(&Value::Array(paged)),
        [log[0].as_str(), &log[3], &log[6]]
    );
    // Filters combine.
    let combined = get_ok(
        app,
        &format!("{API}/log?key=db%1Ft&author=anonymous&until={}", time(1)),
    )
    .await;
    assert_eq!(hashes(&combined["commits"]), [log[3].as_str(), &log[6]]);
    for uri in [key("db%1F"), key("%1Fdb"), key("")] {
        let (status, body) = get(app, &uri).await;
        assert_bad_request(status, &body);
    }
}

// ---------------------------------------------------------------------------------------------
// Commits

#[tokio::test]
async fn a_commit_shows_its_changes_against_its_first_parent() {
    let env = env().await;
    let app = &env.app;
    let commit = |reference: &str| format!("{API}/commits/{reference}");

    // The first commit of the catalog: no parents, no changes.
    let log = hashes(&get_ok(app, &format!("{API}/log")).await["commits"]);
    let root = get_ok(app, &commit(&log[1])).await;
    assert_eq!(root["hash"], json!(log[1]));
    assert_eq!(root["parents"], json!([]));
    assert_eq!(root["message"], "create catalog lake");
    assert_eq!(root["author"], "test");
    assert_eq!(root["changes"], json!([]));
    assert!(root.get("next-page-token").is_none(), "{root}");

    // The namespace: added, no summary.
    let created = get_ok(app, &commit("main")).await;
    assert_eq!(created["hash"], json!(log[0]));
    assert_eq!(created["parents"], json!([log[1]]));
    assert_eq!(created["changes"].as_array().unwrap().len(), 1, "{created}");
    let change = &created["changes"][0];
    assert_eq!(change["key"], json!(["db"]));
    assert_eq!(change["kind"], "added");
    assert_eq!(change["before"], Value::Null);
    assert_eq!(change["after"]["type"], "namespace");
    assert_eq!(change["after"]["properties"], json!({}));
    assert!(change["after"]["content-id"].is_string(), "{change}");
    assert_eq!(change["summary"], json!([]));

    // A table: created, a snapshot appended, properties set.
    let table = create_table(app, "lake", "t").await;
    let body = get_ok(app, &commit("main")).await;
    let change = &body["changes"][0];
    assert_eq!(
        (&change["key"], &change["kind"]),
        (&json!(["db", "t"]), &json!("added"))
    );
    assert_eq!(change["after"]["type"], "iceberg-table");
    assert_eq!(
        change["after"]["metadata-location"],
        table["metadata-location"]
    );
    assert_eq!(
        change["summary"],
        json!(["table created (format version 2, 2 columns)"])
    );
    assert!(
        body["properties"]["operation"]
            .as_str()
            .unwrap()
            .contains("table"),
        "{body}"
    );

    append(app, "lake", "t", 7).await;
    let body = get_ok(app, &commit("main")).await;
    assert_eq!(body["changes"].as_array().unwrap().len(), 1, "{body}");
    let change = &body["changes"][0];
    assert_eq!(change["kind"], "modified");
    assert_eq!(
        change["before"]["metadata-location"],
        table["metadata-location"]
    );
    assert_eq!(change["after"]["snapshot-id"], 7);
    assert_eq!(
        change["after"]["content-id"], change["before"]["content-id"],
        "{change}"
    );
    let summary = change["summary"].as_array().unwrap();
    assert!(
        summary.contains(&json!("snapshot 7 added: append, 10 records added")),
        "{change}"
    );

    set_table_property(app, "lake", "t", "owner", "ana").await;
    let body = get_ok(app, &commit("main")).await;
    assert_eq!(
        body["changes"][0]["summary"],
        json!(["properties set: owner"])
    );
    assert_eq!(body["changes"][0]["after"]["snapshot-id"], 7);
    // Reached through other expressions, and the earlier commit is still the append.
    let head = ref_hash(app, "main").await;
    assert_eq!(get_ok(app, &commit(&head)).await, body);
    assert_eq!(get_ok(app, &commit(&head[..12])).await, body);
    assert_eq!(
        get_ok(app, &commit(&format!("main%23{}", &head[..12]))).await,
        body
    );
    let previous = get_ok(app, &commit("main~1")).await;
    assert_eq!(body["parents"], json!([previous["hash"]]));
    assert_eq!(previous["changes"][0]["after"]["snapshot-id"], 7);
    assert_eq!(previous["changes"][0]["before"].get("snapshot-id"), None);

    // Namespace properties: modified, properties before and after.
    set_namespace_property(app, "lake", "db", "k", "v").await;
    let body = get_ok(app, &commit("main")).await;
    let change = &body["changes"][0];
    assert_eq!(
        (&change["key"], &change["kind"]),
        (&json!(["db"]), &json!("modified"))
    );
    assert_eq!(
        (
            &change["before"]["properties"],
            &change["after"]["properties"]
        ),
        (&json!({}), &json!({"k": "v"}))
    );
    assert_eq!(change["summary"], json!([]));

    // A dropped table: removed.
    let (status, body) = delete(app, &table_uri("lake", "t")).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let body = get_ok(app, &commit("main")).await;
    let change = &body["changes"][0];
    assert_eq!(
        (&change["key"], &change["kind"]),
        (&json!(["db", "t"]), &json!("removed"))
    );
    assert_eq!(change["after"], Value::Null);
    assert_eq!(change["summary"], json!(["table dropped"]));

    // Many changes in one commit (a squash merge) are paged by key.
    create_ref(app, "dev", "branch", None).await;
    for name in ["d", "a", "c", "b"] {
        create_table(app, "lake@dev", name).await;
    }
    let merged = post_ok(
        app,
        &format!("{API}/merge"),
        json!({"source": "dev", "squash": true, "fast-forward": "never"}),
    )
    .await;
    let squash = merged["target-head"].as_str().unwrap().to_owned();
    let whole = get_ok(app, &commit(&squash)).await;
    assert_eq!(keys(&whole["changes"]), ["db.a", "db.b", "db.c", "db.d"]);
    assert_eq!(whole["parents"].as_array().unwrap().len(), 1);
    for size in 1..=5 {
        let paged = all_pages(app, &commit(&squash), "changes", size).await;
        assert_eq!(Value::Array(paged), whole["changes"], "pageSize {size}");
    }

    // Bad references.
    for reference in [
        "zzzzzzzz".to_owned(),
        "deadbeef00".to_owned(),
        "nope".to_owned(),
        "main~99".to_owned(),
        head[..7].to_owned(),
        "main%23abc".to_owned(),
    ] {
        let (status, body) = get(app, &commit(&reference)).await;
        assert_bad_request(status, &body);
    }
    for query in ["pageSize=0", "pageToken=xyz", "pageToken=00"] {
        let (status, body) = get(app, &format!("{}?{query}", commit("main"))).await;
        assert_bad_request(status, &body);
    }
}

// ---------------------------------------------------------------------------------------------
// Diff

#[tokio::test]
async fn diffs_compare_any_two_references_paged_by_key() {
    let env = env().await;
    let app = &env.app;
    create_table(app, "lake", "t").await;
    let base = ref_hash(app, "main").await;
    create_ref(app, "dev", "branch", None).await;
    for name in ["c", "a", "b"] {
        create_table(app, "lake@dev", name).await;
    }
    set_table_property(app, "lake@dev", "t", "owner", "dev").await;
    set_namespace_property(app, "lake", "db", "k", "main").await;
    let (main, dev) = (ref_hash(app, "main").await, ref_hash(app, "dev").await);
    let diff = |query: &str| format!("{API}/diff?{query}");

    let body = get_ok(app, &diff("from=main&to=dev")).await;
    assert_eq!((&body["from"], &body["to"]), (&json!(main), &json!(dev)));
    assert!(body.get("next-page-token").is_none(), "{body}");
    assert_eq!(
        keys(&body["changes"]),
        ["db", "db.a", "db.b", "db.c", "db.t"]
    );
    let changes = body["changes"].as_array().unwrap();
    assert_eq!(
        changes
            .iter()
            .map(|c| c["kind"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["modified", "added", "added", "added", "modified"]
    );
    assert_eq!(changes[0]["before"]["properties"], json!({"k": "main"}));
    assert_eq!(changes[0]["after"]["properties"], json!({}));
    assert_eq!(
        changes[1]["summary"],
        json!(["table created (format version 2, 2 columns)"])
    );
    assert_eq!(changes[4]["summary"], json!(["properties set: owner"]));

    // The other way round: the inverse changes.
    let back = get_ok(app, &diff("from=dev&to=main")).await;
    assert_eq!(
        keys(&back["changes"]),
        ["db", "db.a", "db.b", "db.c", "db.t"]
    );
    let kinds: Vec<&str> = back["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["modified", "removed", "removed", "removed", "modified"]
    );
    assert_eq!(back["changes"][1]["summary"], json!(["table dropped"]));

    // Hashes and ancestors: dev~4 is where dev started (main's `base`).
    let body = get_ok(app, &diff(&format!("from={base}&to=dev~1"))).await;
    assert_eq!(body["from"], json!(base));
    assert_eq!(keys(&body["changes"]), ["db.a", "db.b", "db.c"]);
    let body = get_ok(app, &diff(&format!("from=dev~4&to={}", &dev[..10]))).await;
    assert_eq!(body["from"], json!(base));
    assert_eq!(keys(&body["changes"]), ["db.a", "db.b", "db.c", "db.t"]);
    let body = get_ok(app, &diff(&format!("from=main~1&to=main%23{}", &main[..9]))).await;
    assert_eq!(keys(&body["changes"]), ["db"]);
    let same = get_ok(app, &diff("from=dev&to=dev")).await;
    assert_eq!(same["changes"], json!([]));

    // Prefix: the key itself and everything under it.
    let body = get_ok(app, &diff("from=main&to=dev&prefix=db%1Fb")).await;
    assert_eq!(keys(&body["changes"]), ["db.b"]);
    let body = get_ok(app, &diff("from=main&to=dev&prefix=db")).await;
    assert_eq!(
        keys(&body["changes"]),
        ["db", "db.a", "db.b", "db.c", "db.t"]
    );
    let body = get_ok(app, &diff("from=main&to=dev&prefix=other")).await;
    assert_eq!(body["changes"], json!([]));

    // Paging, with and without a prefix.
    let whole = get_ok(app, &diff("from=main&to=dev")).await;
    for size in 1..=6 {
        let paged = all_pages(app, &diff("from=main&to=dev"), "changes", size).await;
        assert_eq!(Value::Array(paged), whole["changes"], "pageSize {size}");
    }
    let paged = all_pages(app, &diff("from=dev&to=main&prefix=db"), "changes", 2).await;
    assert_eq!(Value::Array(paged), back["changes"]);

    // Bad input.
    for query in [
        "from=nope&to=dev",
        "from=main&to=nope",
        "from=main~99&to=dev",
        "from=main&to=main%23zzzzzzzz",
        "to=dev",
        "from=main",
        "",
        "from=main&to=dev&prefix=db%1F",
        "from=main&to=dev&pageSize=0",
        "from=main&to=dev&pageToken=q",
    ] {
        let (status, body) = get(app, &diff(query)).await;
        assert_bad_request(status, &body);
    }
}

// ---------------------------------------------------------------------------------------------
// Entries

#[tokio::test]
async fn entries_list_the_tree_at_any_reference() {
    let env = env().await;
    let app = &env.app;
    let root = ref_hash(app, "main~1").await;
    set_namespace_property(app, "lake", "db", "owner", "ana").await;
    post_ok(
        app,
        "/v1/lake/namespaces",
        json!({"namespace": ["db", "sub"], "properties": {"tier": "gold"}}),
    )
    .await;
    post_ok(
        app,
        "/v1/lake/namespaces/db%1Fsub/tables",
        json!({"name": "deep", "schema": schema()}),
    )
    .await;
    let t = create_table(app, "lake", "t").await;
    append(app, "lake", "t", 3).await;
    let old = ref_hash(app, "main").await;
    create_ref(app, "dev", "branch", None).await;
    create_table(app, "lake@dev", "devonly").await;
    create_table(app, "lake", "u").await;
    post_ok(app, "/v1/lake/namespaces", json!({"namespace": ["zz"]})).await;
    let main = ref_hash(app, "main").await;

    let body = get_ok(app, &format!("{API}/entries")).await;
    assert_eq!(body["hash"], json!(main));
    assert!(body.get("next-page-token").is_none(), "{body}");
    assert_eq!(
        keys(&body["entries"]),
        ["db", "db.sub", "db.sub.deep", "db.t", "db.u", "zz"]
    );
    let entries = body["entries"].as_array().unwrap();
    assert_eq!(
        entries[0]["entry"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<BTreeSet<_>>(),
        BTreeSet::from([
            &"type".to_owned(),
            &"content-id".to_owned(),
            &"properties".to_owned()
        ])
    );
    assert_eq!(entries[0]["entry"]["type"], "namespace");
    assert_eq!(entries[0]["entry"]["properties"], json!({"owner": "ana"}));
    assert_eq!(entries[1]["entry"]["properties"], json!({"tier": "gold"}));
    let table = &entries[3]["entry"];
    assert_eq!(table["type"], "iceberg-table");
    assert_eq!(table["snapshot-id"], 3);
    assert_eq!(
        table["metadata-location"],
        json!(metadata_location(app, "lake", "t").await)
    );
    assert_ne!(table["metadata-location"], t["metadata-location"]);
    assert_eq!(
        entries[4]["entry"].get("snapshot-id"),
        None,
        "{}",
        entries[4]
    );
    assert_eq!(get_ok(app, &format!("{API}/entries?ref=main")).await, body);

    // At a branch, an old hash, an ancestor, a time; and the empty first commit.
    let dev = get_ok(app, &format!("{API}/entries?ref=dev")).await;
    assert_eq!(dev["hash"], json!(ref_hash(app, "dev").await));
    assert_eq!(
        keys(&dev["entries"]),
        ["db", "db.devonly", "db.sub", "db.sub.deep", "db.t"]
    );
    let at_old = get_ok(app, &format!("{API}/entries?ref={old}")).await;
    assert_eq!(at_old["hash"], json!(old));
    assert_eq!(
        keys(&at_old["entries"]),
        ["db", "db.sub", "db.sub.deep", "db.t"]
    );
    assert_eq!(
        get_ok(app, &format!("{API}/entries?ref=main~2")).await,
        at_old
    );
    assert_eq!(
        get_ok(app, &format!("{API}/entries?ref=main%23{}", &old[..8])).await,
        at_old
    );
    let first = get_ok(app, &format!("{API}/entries?ref={root}")).await;
    assert_eq!(first, json!({"hash": root, "entries": []}));

    // Prefix: the key itself and everything under it, not its siblings by name.
    let sub = get_ok(app, &format!("{API}/entries?prefix=db%1Fsub")).await;
    assert_eq!(keys(&sub["entries"]), ["db.sub", "db.sub.deep"]);
    let t_only = get_ok(app, &format!("{API}/entries?ref=dev&prefix=db%1Ft")).await;
    assert_eq!(keys(&t_only["entries"]), ["db.t"]);
    let none = get_ok(app, &format!("{API}/entries?prefix=d")).await;
    assert_eq!(none["entries"], json!([]));

    // Paging.
    for size in 1..=7 {
        let paged = all_pages(app, &format!("{API}/entries"), "entries", size).await;
        assert_eq!(Value::Array(paged), body["entries"], "pageSize {size}");
    }
    let paged = all_pages(
        app,
        &format!("{API}/entries?ref=dev&prefix=db"),
        "entries",
        2,
    )
    .await;
    assert_eq!(Value::Array(paged), dev["entries"]);

    for query in [
        "ref=nope",
        "ref=main~99",
        "ref=a..b",
        "prefix=db%1F",
        "pageSize=0",
        "pageToken=nothex",
    ] {
        let (status, body) = get(app, &format!("{API}/entries?{query}")).await;
        assert_bad_request(status, &body);
    }
}

// ---------------------------------------------------------------------------------------------
// Merge

#[tokio::test]
async fn merges_fast_forward_or_write_merge_commits() {
    let env = env().await;
    let app = &env.app;
    let merge = format!("{API}/merge");
    let start = ref_hash(app, "main").await;
    create_ref(app, "dev", "branch", None).await;
    create_table(app, "lake@dev", "a").await;
    let dev = ref_hash(app, "dev").await;

    // A dry run reports the fast-forward and moves nothing.
    let body = post_ok(app, &merge, json!({"source": "dev", "dry-run": true})).await;
    assert_eq!(body["result"], "fast-forward");
    assert_eq!(body["dry-run"], true);
    assert_eq!(
        (&body["previous-head"], &body["target-head"]),
        (&json!(start), &json!(dev))
    );
    assert_eq!(ref_hash(app, "main").await, start);

    // Fast-forward: main is dev now; no commit written.
    let body = post_ok(app, &merge, json!({"source": "dev", "target": "main"})).await;
    assert_eq!(
        body,
        json!({
            "result": "fast-forward", "dry-run": false, "previous-head": start,
            "target-head": dev, "commits": [], "changes": body["changes"].clone(),
            "resolved": [], "conflicts": []
        })
    );
    assert_eq!(keys(&body["changes"]), ["db.a"]);
    assert_eq!(body["changes"][0]["kind"], "added");
    assert_eq!(ref_hash(app, "main").await, dev);

    // Merging again: up to date, so a resolution names a key that is not in conflict.
    let body = post_ok(app, &merge, json!({"source": "dev"})).await;
    assert_eq!(body["result"], "up-to-date");
    assert_eq!(
        (&body["previous-head"], &body["target-head"]),
        (&json!(dev), &json!(dev))
    );
    let (status, body) = post(
        app,
        &merge,
        json!({"source": "dev", "resolutions": [{"key": ["db", "a"], "take": "theirs"}]}),
    )
    .await;
    assert_bad_request(status, &body);
    assert!(message(&body).contains("db.a"), "{body}");
    // So does one on a fast-forward.
    create_ref(app, "ahead", "branch", Some("main")).await;
    create_table(app, "lake@ahead", "z").await;
    let (status, body) = post(
        app,
        &merge,
        json!({"source": "ahead", "target": "dev",
               "resolutions": [{"key": ["db", "z"], "take": "theirs"}]}),
    )
    .await;
    assert_bad_request(status, &body);
    assert_eq!(ref_hash(app, "dev").await, dev);

    // `only` fast-forwards when it can; `never` writes a merge commit with both parents even
    // when it could fast-forward.
    create_table(app, "lake@dev", "b").await;
    let dev = ref_hash(app, "dev").await;
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "fast-forward": "only"}),
    )
    .await;
    assert_eq!(
        (&body["result"], &body["target-head"]),
        (&json!("fast-forward"), &json!(dev))
    );
    assert_eq!(ref_hash(app, "main").await, dev);
    create_table(app, "lake@dev", "c").await;
    let dev = ref_hash(app, "dev").await;
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "fast-forward": "never", "message": "bring c"}),
    )
    .await;
    assert_eq!(body["result"], "merged");
    let merged = body["target-head"].as_str().unwrap().to_owned();
    assert_eq!(body["commits"], json!([merged]));
    assert_eq!(keys(&body["changes"]), ["db.c"]);
    assert_eq!(ref_hash(app, "main").await, merged);
    let commit = get_ok(app, &format!("{API}/commits/{merged}")).await;
    assert_eq!(commit["parents"], json!([body["previous-head"], dev]));
    assert_eq!(commit["message"], "bring c");
    assert_eq!(commit["properties"]["operation"], "merge");
    assert_eq!(commit["properties"]["merge.source"], json!(dev));
    assert_eq!(keys(&commit["changes"]), ["db.c"]);

    // Diverged: `only` is refused and nothing moves.
    create_table(app, "lake", "m").await;
    create_table(app, "lake@dev", "d").await;
    let (main, dev) = (ref_hash(app, "main").await, ref_hash(app, "dev").await);
    let (status, body) = post(
        app,
        &merge,
        json!({"source": "dev", "fast-forward": "only"}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "MergeConflictException",
    );
    assert_eq!(ref_hash(app, "main").await, main);

    // A dry-run merge commit: no commit, no target head, nothing moved.
    let body = post_ok(app, &merge, json!({"source": "dev", "dry-run": true})).await;
    assert_eq!(body["result"], "merged");
    assert_eq!(
        (&body["target-head"], &body["commits"]),
        (&Value::Null, &json!([]))
    );
    assert_eq!(keys(&body["changes"]), ["db.d"]);
    assert_eq!(ref_hash(app, "main").await, main);

    // A stale expected head is refused; the right one (or a prefix of it) lands.
    let (status, body) = post(
        app,
        &merge,
        json!({"source": "dev", "expected-target-head": dev}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "ReferenceConflictException",
    );
    assert_eq!(ref_hash(app, "main").await, main);

    // Squash: one parent, dev's changes.
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "squash": true, "expected-target-head": &main[..12]}),
    )
    .await;
    assert_eq!(body["result"], "merged");
    let squashed = body["target-head"].as_str().unwrap().to_owned();
    let commit = get_ok(app, &format!("{API}/commits/{squashed}")).await;
    assert_eq!(commit["parents"], json!([main]));
    assert_eq!(commit["properties"]["operation"], "squash-merge");
    assert_eq!(keys(&commit["changes"]), ["db.d"]);
    let (status, _) = get(app, &table_uri("lake", "d")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ref_hash(app, "dev").await, dev);

    // Any reference is a source: a tag, a hash, an ancestor.
    create_ref(app, "side", "branch", None).await;
    create_table(app, "lake@side", "s1").await;
    create_table(app, "lake@side", "s2").await;
    let side = ref_hash(app, "side").await;
    create_ref(app, "side-tag", "tag", Some("side~1")).await;
    let body = post_ok(app, &merge, json!({"source": "side-tag"})).await;
    assert_eq!(
        (&body["result"], keys(&body["changes"])),
        (&json!("fast-forward"), vec!["db.s1".to_owned()])
    );
    let body = post_ok(app, &merge, json!({"source": &side[..10]})).await;
    assert_eq!(
        (&body["result"], &body["target-head"]),
        (&json!("fast-forward"), &json!(side))
    );

    // Targets must be branches; references must resolve; options must be known.
    let head = ref_hash(app, "main").await;
    for request in [
        json!({"source": "dev", "target": "side-tag"}),
        json!({"source": "dev", "target": head}),
        json!({"source": "dev", "target": "main~1"}),
        json!({"source": "dev", "target": format!("main#{head}")}),
        json!({"source": "dev", "target": "nope"}),
        json!({"source": "nope"}),
        json!({"source": "main~99"}),
        json!({"source": "dev", "fast-forward": "sometimes"}),
        json!({"source": "dev", "strategy": "coin-toss"}),
        json!({"source": "dev", "expected-target-head": "xyz"}),
        json!({"source": "dev", "dry-run": "yes"}),
        json!({"target": "main"}),
        json!({"source": "dev", "force": true}),
    ] {
        let (status, body) = post(app, &merge, request.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{request}: {body}");
        assert_bad_request(status, &body);
    }
    assert_eq!(ref_hash(app, "main").await, head);
    assert_eq!(
        ref_hash(app, "side-tag").await,
        ref_hash(app, "side~1").await
    );
}

#[tokio::test]
async fn merge_conflicts_are_reported_and_resolved() {
    let env = env().await;
    let app = &env.app;
    let merge = format!("{API}/merge");
    create_table(app, "lake", "t").await;
    create_table(app, "lake", "u").await;
    create_ref(app, "dev", "branch", None).await;
    set_table_property(app, "lake", "t", "owner", "main").await;
    set_table_property(app, "lake@dev", "t", "owner", "dev").await;
    set_table_property(app, "lake", "u", "owner", "main").await;
    set_table_property(app, "lake@dev", "u", "owner", "dev").await;
    create_table(app, "lake@dev", "clean").await;
    let (main, dev) = (ref_hash(app, "main").await, ref_hash(app, "dev").await);
    let main_t = metadata_location(app, "lake", "t").await;
    let dev_t = metadata_location(app, "lake@dev", "t").await;
    let main_u = metadata_location(app, "lake", "u").await;
    let dev_u = metadata_location(app, "lake@dev", "u").await;

    for dry_run in [false, true] {
        let (status, body) = post(app, &merge, json!({"source": "dev", "dry-run": dry_run})).await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(body["result"], "conflicted");
        assert_eq!(body["dry-run"], dry_run);
        assert_eq!(
            (&body["previous-head"], &body["target-head"]),
            (&json!(main), &json!(main))
        );
        assert_eq!(body["commits"], json!([]));
        assert_error_object(
            &body["error"],
            StatusCode::CONFLICT,
            "MergeConflictException",
        );
        assert_eq!(keys(&body["conflicts"]), ["db.t", "db.u"]);
        let conflict = &body["conflicts"][0];
        assert_eq!(conflict["kind"], "both-modified");
        assert_eq!(conflict["ours"]["metadata-location"], json!(main_t));
        assert_eq!(conflict["theirs"]["metadata-location"], json!(dev_t));
        assert_ne!(
            conflict["base"]["metadata-location"],
            conflict["ours"]["metadata-location"]
        );
        assert_eq!(ref_hash(app, "main").await, main);
        assert_eq!(ref_hash(app, "dev").await, dev);
    }

    // A resolution for a key that is not in conflict is refused, alone or with good ones.
    for resolutions in [
        json!([{"key": ["db", "clean"], "take": "theirs"}]),
        json!([{"key": ["db", "t"], "take": "theirs"}, {"key": ["db", "u"], "take": "ours"},
               {"key": ["db"], "take": "ours"}]),
        json!([{"key": ["db", "nope"], "take": "ours"}]),
    ] {
        let (status, body) = post(
            app,
            &merge,
            json!({"source": "dev", "resolutions": resolutions}),
        )
        .await;
        assert_bad_request(status, &body);
    }
    // Bad resolutions.
    for resolutions in [
        json!([{"key": ["db", "t"], "take": "both"}]),
        json!([{"key": [], "take": "ours"}]),
        json!([{"key": ["db", ""], "take": "ours"}]),
        json!([{"key": ["db", "t"]}]),
        json!([{"key": ["db", "t"], "take": "ours", "why": "x"}]),
        json!([{"key": "db.t", "take": "ours"}]),
    ] {
        let (status, body) = post(
            app,
            &merge,
            json!({"source": "dev", "resolutions": resolutions}),
        )
        .await;
        assert_bad_request(status, &body);
    }
    // Resolving only some keys leaves the others in conflict.
    let (status, body) = post(
        app,
        &merge,
        json!({"source": "dev", "resolutions": [{"key": ["db", "t"], "take": "theirs"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(keys(&body["conflicts"]), ["db.u"]);
    assert_eq!(ref_hash(app, "main").await, main);

    // A dry run with every key resolved reports the merge and moves nothing.
    let resolutions = json!([{"key": ["db", "t"], "take": "theirs"},
                             {"key": ["db", "u"], "take": "ours"}]);
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "resolutions": resolutions, "dry-run": true}),
    )
    .await;
    assert_eq!(
        (&body["result"], &body["target-head"]),
        (&json!("merged"), &Value::Null)
    );
    assert_eq!(ref_hash(app, "main").await, main);

    // For real: t takes dev's metadata, u keeps main's, the clean table comes along.
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "resolutions": resolutions}),
    )
    .await;
    assert_eq!(body["result"], "merged");
    assert_eq!(keys(&body["resolved"]), ["db.t", "db.u"]);
    assert_eq!(body["conflicts"], json!([]));
    assert_eq!(keys(&body["changes"]), ["db.clean", "db.t"]);
    let t_change = &body["changes"][1];
    assert_eq!(
        (
            &t_change["before"]["metadata-location"],
            &t_change["after"]["metadata-location"]
        ),
        (&json!(main_t), &json!(dev_t))
    );
    assert_eq!(metadata_location(app, "lake", "t").await, dev_t);
    assert_eq!(metadata_location(app, "lake", "u").await, main_u);
    let (_, t) = get(app, &table_uri("lake", "t")).await;
    assert_eq!(t["metadata"]["properties"]["owner"], "dev");
    let merged = ref_hash(app, "main").await;
    assert_eq!(body["target-head"], json!(merged));
    let commit = get_ok(app, &format!("{API}/commits/{merged}")).await;
    assert_eq!(commit["parents"], json!([main, dev]));

    // Strategies settle every conflict: prefer-ours keeps main's, prefer-theirs takes dev's.
    set_table_property(app, "lake", "u", "owner", "main2").await;
    set_table_property(app, "lake@dev", "u", "owner", "dev2").await;
    let main_u = metadata_location(app, "lake", "u").await;
    let dev_u2 = metadata_location(app, "lake@dev", "u").await;
    assert_ne!(dev_u2, dev_u);
    let before = ref_hash(app, "main").await;
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "strategy": "prefer-ours"}),
    )
    .await;
    assert_eq!(body["result"], "merged");
    assert_eq!(keys(&body["resolved"]), ["db.u"]);
    assert_eq!(body["changes"], json!([]));
    assert_eq!(metadata_location(app, "lake", "u").await, main_u);
    assert_ne!(ref_hash(app, "main").await, before);

    set_table_property(app, "lake", "u", "owner", "main3").await;
    set_table_property(app, "lake@dev", "u", "owner", "dev3").await;
    let dev_u3 = metadata_location(app, "lake@dev", "u").await;
    let body = post_ok(
        app,
        &merge,
        json!({"source": "dev", "strategy": "prefer-theirs"}),
    )
    .await;
    assert_eq!(keys(&body["resolved"]), ["db.u"]);
    assert_eq!(keys(&body["changes"]), ["db.u"]);
    assert_eq!(metadata_location(app, "lake", "u").await, dev_u3);

    // A resolution beats the strategy.
    set_table_property(app, "lake", "u", "owner", "main4").await;
    set_table_property(app, "lake@dev", "u", "owner", "dev4").await;
    let main_u4 = metadata_location(app, "lake", "u").await;
    post_ok(
        app,
        &merge,
        json!({"source": "dev", "strategy": "prefer-theirs",
               "resolutions": [{"key": ["db", "u"], "take": "ours"}]}),
    )
    .await;
    assert_eq!(metadata_location(app, "lake", "u").await, main_u4);
}

// ---------------------------------------------------------------------------------------------
// Cherry-pick

#[tokio::test]
async fn cherry_picks_replay_commits_on_a_branch() {
    let env = env().await;
    let app = &env.app;
    let pick = format!("{API}/cherry-pick");
    create_table(app, "lake", "t").await;
    create_ref(app, "dev", "branch", None).await;
    create_table(app, "lake@dev", "a").await;
    let c1 = ref_hash(app, "dev").await;
    create_table(app, "lake@dev", "b").await;
    let c2 = ref_hash(app, "dev").await;
    set_table_property(app, "lake@dev", "a", "owner", "dev").await;
    let c3 = ref_hash(app, "dev").await;
    set_table_property(app, "lake@dev", "t", "owner", "dev").await;
    let c4 = ref_hash(app, "dev").await;
    set_namespace_property(app, "lake", "db", "k", "main").await;
    let main = ref_hash(app, "main").await;

    // One commit: its change, and only its change, lands on main in a new commit.
    let body = post_ok(app, &pick, json!({"commits": [c2]})).await;
    assert_eq!(body["result"], "applied");
    assert_eq!(body["previous-head"], json!(main));
    let picked = body["target-head"].as_str().unwrap().to_owned();
    assert_eq!(body["commits"], json!([picked]));
    assert_eq!(keys(&body["changes"]), ["db.b"]);
    assert_eq!(ref_hash(app, "main").await, picked);
    let commit = get_ok(app, &format!("{API}/commits/{picked}")).await;
    assert_eq!(commit["parents"], json!([main]));
    assert_eq!(keys(&commit["changes"]), ["db.b"]);
    assert_eq!(commit["changes"][0]["kind"], "added");
    assert_eq!(commit["properties"]["cherry-picked-from"], json!(c2));
    let (status, _) = get(app, &table_uri("lake", "b")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get(app, &table_uri("lake", "a")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        namespace_properties(app, "lake", "db").await,
        json!({"k": "main"})
    );

    // A dry run of two picks writes nothing.
    let body = post_ok(app, &pick, json!({"commits": [c1, c3], "dry-run": true})).await;
    assert_eq!(
        (&body["target-head"], &body["commits"]),
        (&Value::Null, &json!([]))
    );
    assert_eq!(keys(&body["changes"]), ["db.a"]);
    assert_eq!(ref_hash(app, "main").await, picked);

    // Squash of two: one commit with both changes, onto a branch named in the request.
    create_ref(app, "rel", "branch", Some(&main)).await;
    let body = post_ok(
        app,
        &pick,
        json!({"commits": [&c1[..12], "dev~1"], "onto": "rel", "squash": true,
               "message": "a, owned", "expected-target-head": main}),
    )
    .await;
    assert_eq!(body["commits"].as_array().unwrap().len(), 1, "{body}");
    let squashed = body["target-head"].as_str().unwrap().to_owned();
    assert_eq!(ref_hash(app, "rel").await, squashed);
    let commit = get_ok(app, &format!("{API}/commits/{squashed}")).await;
    assert_eq!(commit["parents"], json!([main]));
    assert_eq!(commit["message"], "a, owned");
    assert_eq!(keys(&commit["changes"]), ["db.a"]);
    let (_, a) = get(app, &table_uri("lake@rel", "a")).await;
    assert_eq!(a["metadata"]["properties"]["owner"], "dev");
    assert_eq!(
        metadata_location(app, "lake@rel", "a").await,
        metadata_location(app, "lake@dev", "a").await
    );

    // Two picks without squash: two commits, chained.
    create_ref(app, "rel2", "branch", Some(&main)).await;
    let body = post_ok(app, &pick, json!({"commits": [c1, c3], "onto": "rel2"})).await;
    let commits = body["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 2, "{body}");
    let second = get_ok(
        app,
        &format!("{API}/commits/{}", commits[1].as_str().unwrap()),
    )
    .await;
    assert_eq!(second["parents"], json!([commits[0]]));
    let first = get_ok(
        app,
        &format!("{API}/commits/{}", commits[0].as_str().unwrap()),
    )
    .await;
    assert_eq!(first["parents"], json!([main]));

    // A pick that conflicts: 409, nothing moved.
    set_table_property(app, "lake", "t", "owner", "main").await;
    let head = ref_hash(app, "main").await;
    let (status, body) = post(app, &pick, json!({"commits": [c4]})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["result"], "conflicted");
    assert_eq!(keys(&body["conflicts"]), ["db.t"]);
    assert_eq!(body["conflicts"][0]["kind"], "both-modified");
    assert_eq!(body["target-head"], json!(head));
    assert_error_object(
        &body["error"],
        StatusCode::CONFLICT,
        "MergeConflictException",
    );
    assert_eq!(ref_hash(app, "main").await, head);
    // A conflict in a later pick writes none of the earlier ones either.
    let (status, _) = post(app, &pick, json!({"commits": [c1, c4]})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(ref_hash(app, "main").await, head);
    // Resolved, it lands.
    let body = post_ok(
        app,
        &pick,
        json!({"commits": [c4], "resolutions": [{"key": ["db", "t"], "take": "theirs"}]}),
    )
    .await;
    assert_eq!(body["result"], "applied");
    assert_eq!(body["target-head"], json!(ref_hash(app, "main").await));
    assert_eq!(
        metadata_location(app, "lake", "t").await,
        metadata_location(app, "lake@dev", "t").await
    );
    let head = ref_hash(app, "main").await;

    // Bad requests move nothing.
    for request in [
        json!({"commits": []}),
        json!({"commits": ["nope"]}),
        json!({"commits": [c1], "onto": "nope"}),
        json!({"commits": [c1], "onto": c1}),
        json!({"commits": [c1], "onto": "main~1"}),
        json!({"commits": [c2], "resolutions": [{"key": ["db", "b"], "take": "ours"}]}),
        json!({"commits": [c1], "expected-target-head": "nothex"}),
        json!({"commits": [c1], "strategy": "maybe"}),
        json!({"commits": c1}),
        json!({"commit": [c1]}),
        json!({}),
    ] {
        let (status, body) = post(app, &pick, request.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{request}: {body}");
        assert_bad_request(status, &body);
    }
    let (status, body) = post(
        app,
        &pick,
        json!({"commits": [c1], "expected-target-head": main}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "ReferenceConflictException",
    );
    assert_eq!(ref_hash(app, "main").await, head);
}

// ---------------------------------------------------------------------------------------------
// Revert

#[tokio::test]
async fn reverts_undo_a_commit_with_a_new_one() {
    let env = env().await;
    let app = &env.app;
    let revert = format!("{API}/revert");
    set_namespace_property(app, "lake", "db", "owner", "ana").await;
    let set = ref_hash(app, "main").await;
    create_table(app, "lake", "t").await;
    assert_eq!(
        namespace_properties(app, "lake", "db").await,
        json!({"owner": "ana"})
    );

    // Revert the property set: a new commit on top, the property gone, the table kept.
    let body = post_ok(app, &revert, json!({"commit": set})).await;
    assert_eq!(body["result"], "applied");
    let reverted = body["target-head"].as_str().unwrap().to_owned();
    assert_eq!(body["commits"], json!([reverted]));
    assert_eq!(keys(&body["changes"]), ["db"]);
    assert_eq!(namespace_properties(app, "lake", "db").await, json!({}));
    let (status, _) = get(app, &table_uri("lake", "t")).await;
    assert_eq!(status, StatusCode::OK);
    let commit = get_ok(app, &format!("{API}/commits/{reverted}")).await;
    assert_eq!(commit["parents"], json!([body["previous-head"]]));
    assert_eq!(commit["properties"]["operation"], "revert");
    assert_eq!(commit["properties"]["reverts"], json!(set));
    let change = &commit["changes"][0];
    assert_eq!(
        (
            &change["before"]["properties"],
            &change["after"]["properties"]
        ),
        (&json!({"owner": "ana"}), &json!({}))
    );

    // Reverting the revert brings it back, by any reference; a dry run moves nothing.
    let body = post_ok(app, &revert, json!({"commit": "main", "dry-run": true})).await;
    assert_eq!(
        (&body["target-head"], keys(&body["changes"])),
        (&Value::Null, vec!["db".to_owned()])
    );
    assert_eq!(ref_hash(app, "main").await, reverted);
    post_ok(app, &revert, json!({"commit": "main", "message": "again"})).await;
    assert_eq!(
        namespace_properties(app, "lake", "db").await,
        json!({"owner": "ana"})
    );
    assert_eq!(
        get_ok(app, &format!("{API}/commits/main")).await["message"],
        "again"
    );

    // A revert on another branch.
    create_ref(app, "dev", "branch", None).await;
    post_ok(app, &revert, json!({"commit": "main", "on": "dev"})).await;
    assert_eq!(namespace_properties(app, "lake@dev", "db").await, json!({}));
    assert_eq!(
        namespace_properties(app, "lake", "db").await,
        json!({"owner": "ana"})
    );

    // A revert whose key changed since: 409, nothing moved; a strategy settles it.
    set_table_property(app, "lake", "t", "owner", "a").await;
    let owner_a = ref_hash(app, "main").await;
    set_table_property(app, "lake", "t", "owner", "b").await;
    let head = ref_hash(app, "main").await;
    let location_b = metadata_location(app, "lake", "t").await;
    let (status, body) = post(app, &revert, json!({"commit": owner_a})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["result"], "conflicted");
    assert_eq!(keys(&body["conflicts"]), ["db.t"]);
    assert_error_object(
        &body["error"],
        StatusCode::CONFLICT,
        "MergeConflictException",
    );
    assert_eq!(ref_hash(app, "main").await, head);
    let body = post_ok(
        app,
        &revert,
        json!({"commit": owner_a, "strategy": "prefer-ours"}),
    )
    .await;
    assert_eq!(body["result"], "applied");
    assert_ne!(ref_hash(app, "main").await, head);
    assert_eq!(metadata_location(app, "lake", "t").await, location_b);
    let head = ref_hash(app, "main").await;

    // Bad requests move nothing.
    create_ref(app, "v1", "tag", None).await;
    for request in [
        json!({"commit": "nope"}),
        json!({"commit": set, "on": "v1"}),
        json!({"commit": set, "on": set}),
        json!({"commit": set, "on": "nope"}),
        json!({"commit": set, "strategy": "x"}),
        json!({"commit": set, "squash": true}),
        json!({"commit": set, "resolutions": [{"key": ["db", "t"], "take": "ours"}]}),
        json!({"commits": [set]}),
        json!({}),
    ] {
        let (status, body) = post(app, &revert, request.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{request}: {body}");
        assert_bad_request(status, &body);
    }
    let (status, body) = post(
        app,
        &revert,
        json!({"commit": set, "expected-target-head": reverted}),
    )
    .await;
    assert_error(
        status,
        &body,
        StatusCode::CONFLICT,
        "ReferenceConflictException",
    );
    assert_eq!(ref_hash(app, "main").await, head);
}

// ---------------------------------------------------------------------------------------------
// Bodies

#[tokio::test]
async fn bodies_with_unknown_fields_or_bad_json_are_refused() {
    let env = env().await;
    let app = &env.app;
    create_ref(app, "dev", "branch", None).await;
    create_table(app, "lake@dev", "t").await;
    let (main, dev) = (ref_hash(app, "main").await, ref_hash(app, "dev").await);
    let routes = [
        (Method::POST, format!("{API}/refs"), json!({"name": "x"})),
        (
            Method::PUT,
            format!("{API}/refs/dev"),
            json!({"to": "main", "expected-hash": dev}),
        ),
        (
            Method::POST,
            format!("{API}/merge"),
            json!({"source": "dev"}),
        ),
        (
            Method::POST,
            format!("{API}/cherry-pick"),
            json!({"commits": ["dev"]}),
        ),
        (
            Method::POST,
            format!("{API}/revert"),
            json!({"commit": "main"}),
        ),
    ];
    for (method, uri, good) in &routes {
        let mut unknown = good.clone();
        unknown["surprise"] = json!(1);
        let mut wrong_type = good.clone();
        let first = good.as_object().unwrap().keys().next().unwrap().clone();
        wrong_type[&first] = json!(42);
        let bodies = [
            unknown.to_string(),
            wrong_type.to_string(),
            "{".to_owned(),
            "not json".to_owned(),
            "[]".to_owned(),
            "null".to_owned(),
            String::new(),
        ];
        for body in bodies {
            let (status, answer) = call_raw(app, method.clone(), uri, Some(body.clone())).await;
            assert_eq!(
                status,
                StatusCode::BAD_REQUEST,
                "{method} {uri} {body:?}: {answer}"
            );
            assert_bad_request(status, &answer);
        }
        // No body at all (no content type): still a bad request.
        let (status, answer) = call_raw(app, method.clone(), uri, None).await;
        assert_bad_request(status, &answer);
    }
    assert_eq!(ref_hash(app, "main").await, main);
    assert_eq!(ref_hash(app, "dev").await, dev);
    let refs = get_ok(app, &format!("{API}/refs")).await;
    assert_eq!(refs["refs"].as_array().unwrap().len(), 2);
}

/// Cherry-picks and reverts list the conflicts a resolution or the strategy settled in
/// `resolved`, as merges do.
#[tokio::test]
async fn picks_and_reverts_report_what_they_settled() {
    let env = env().await;
    let app = &env.app;
    create_table(app, "lake", "t").await;
    create_ref(app, "dev", "branch", None).await;
    set_table_property(app, "lake@dev", "t", "owner", "dev").await;
    let dev = ref_hash(app, "dev").await;
    set_table_property(app, "lake", "t", "owner", "main").await;
    let main_change = ref_hash(app, "main").await;
    set_table_property(app, "lake", "t", "owner", "main2").await;
    let body = post_ok(
        app,
        &format!("{API}/cherry-pick"),
        json!({"commits": [dev], "strategy": "prefer-ours"}),
    )
    .await;
    assert_eq!(keys(&body["resolved"]), ["db.t"], "{body}");
    let body = post_ok(
        app,
        &format!("{API}/revert"),
        json!({"commit": main_change, "resolutions": [{"key": ["db", "t"], "take": "ours"}]}),
    )
    .await;
    assert_eq!(keys(&body["resolved"]), ["db.t"], "{body}");
}
