//! The table routes as a client meets them: every endpoint the config lists is served, a
//! method a route does not serve and every malformed request get an Iceberg error and move
//! nothing, and metrics reports are checked before they are accepted.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::call;
use common::rest::{error_type, get, message, post, schema};
use common::tables::{assert_error, create_table, env, ref_hash, table_uri};
use serde_json::{Value, json};

async fn call_raw(
    app: &axum::Router,
    method: Method,
    uri: &str,
    body: Option<String>,
) -> (StatusCode, Value) {
    let (status, _, value) = common::send(app, method, uri, body, &[]).await;
    (status, value)
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
            // Where in the body, too: a refused body is parsed again to name the path.
            "updates[0]: invalid type: integer `1`",
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
async fn a_body_is_read_as_json_only_when_its_type_says_so() {
    use tower::ServiceExt;
    let env = env().await;
    let send = |content_type: &'static str, name: &'static str| {
        let request = axum::http::Request::builder()
            .method(Method::POST)
            .uri("/v1/lake/namespaces")
            .header("content-type", content_type)
            .body(axum::body::Body::from(
                json!({"namespace": [name]}).to_string(),
            ))
            .unwrap();
        env.app.clone().oneshot(request)
    };
    let refused = send("text/plain", "plain").await.unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let body = axum::body::to_bytes(refused.into_body(), usize::MAX)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert!(message(&body).contains("Content-Type"), "{body}");
    assert_eq!(
        get(&env.app, "/v1/lake/namespaces/plain").await.0,
        StatusCode::NOT_FOUND
    );

    let taken = send("application/vnd.lake+json; charset=utf-8", "suffixed")
        .await
        .unwrap();
    assert_eq!(taken.status(), StatusCode::OK);
    assert_eq!(
        get(&env.app, "/v1/lake/namespaces/suffixed").await.0,
        StatusCode::OK
    );
}
