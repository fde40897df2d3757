//! Loading, checking and listing tables as the Iceberg REST spec has it: which snapshots a
//! load returns, HEAD for existence, listings in pages, and the errors of bad parameters.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::call;
use common::rest::{get, message, post, schema};
use common::tables::{append, assert_error, create_table, env, table_uri};
use serde_json::{Value, json};

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
