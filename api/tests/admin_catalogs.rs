//! Warehouses and the catalogs bound to them through the administration API: their life
//! cycle and bad input, storage credentials that never reach a response or the audit log,
//! catalogs served as soon as they are created, and the catalog list filtered by what the
//! caller may read.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::admin::{as_, env, error_type, names, token};
use serde_json::json;

const S3_SECRET: &str = "s3-secret-access-key-value-0123456789";

#[tokio::test]
async fn warehouses_are_managed_and_their_credentials_never_shown() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    let mut answers = Vec::new();
    let s3 = json!({
        "name": "cold",
        "storage": {"type": "s3", "bucket": "cold-bucket", "region": "eu-west-1"},
        "credentials": {"type": "s3", "access-key-id": "AKIAEXAMPLE",
                        "secret-access-key": S3_SECRET},
    });
    let (status, body) = as_(&env, &admin, Method::POST, "/api/v1/warehouses", Some(s3)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["storage"]["bucket"], "cold-bucket");
    assert_eq!(
        body["credentials"]["fields-set"],
        json!(["access-key-id", "secret-access-key"])
    );
    answers.push(body);

    let (status, body) = as_(&env, &admin, Method::GET, "/api/v1/warehouses", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(names(&body, "warehouses", "name"), ["cold", "files"]);
    answers.push(body);
    let (status, body) = as_(&env, &admin, Method::GET, "/api/v1/warehouses/cold", None).await;
    assert_eq!(status, StatusCode::OK);
    let version = body["version"].as_u64().unwrap();
    answers.push(body);

    // Replacing the storage keeps the credentials when they are left out.
    let (status, body) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/warehouses/cold",
        Some(
            json!({"storage": {"type": "s3", "bucket": "cold-bucket", "region": "us-east-1"},
                    "version": version}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["storage"]["region"], "us-east-1");
    assert!(body["credentials"].is_object());
    answers.push(body);
    // A stale version is a conflict.
    let (status, _) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/warehouses/cold",
        Some(json!({"storage": {"type": "s3", "bucket": "b"}, "version": version})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    // `null` removes them.
    let (status, body) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/warehouses/cold",
        Some(json!({"storage": {"type": "s3", "bucket": "cold-bucket"}, "credentials": null})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["credentials"].is_null());
    answers.push(body);

    for (body, expected) in [
        (
            json!({"name": "rel", "storage": {"type": "local", "root": "relative/path"}}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "odd", "storage": {"type": "tape"}}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "storage": {"type": "local", "root": "/tmp/x"}, "owner": "me"}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "bad name", "storage": {"type": "local", "root": "/tmp/x"}}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "files", "storage": {"type": "local", "root": "/tmp/x"}}),
            StatusCode::CONFLICT,
        ),
        (
            // Credentials for S3 do not fit a local warehouse.
            json!({"name": "mixed", "storage": {"type": "local", "root": "/tmp/x"},
                   "credentials": {"type": "s3", "access-key-id": "a",
                                   "secret-access-key": S3_SECRET}}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (status, answer) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/warehouses",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, expected, "{body}: {answer}");
        answers.push(answer);
    }
    // A warehouse a catalog is bound to stays.
    let (status, body) = as_(
        &env,
        &admin,
        Method::DELETE,
        "/api/v1/warehouses/files",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, _) = as_(
        &env,
        &admin,
        Method::DELETE,
        "/api/v1/warehouses/cold",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = as_(&env, &admin, Method::GET, "/api/v1/warehouses/cold", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_type(&body), "NoSuchWarehouseException");
    let root = token(&env, "root").await;
    let (_, audit) = as_(
        &env,
        &root,
        Method::GET,
        "/api/v1/audit?page-size=1000",
        None,
    )
    .await;
    answers.push(audit);
    for answer in &answers {
        assert!(!answer.to_string().contains(S3_SECRET), "{answer}");
    }
}

#[tokio::test]
async fn catalogs_are_created_served_at_once_and_deleted() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    // Asked for before it exists: the directory's "no such catalog" must not outlive creation.
    let (status, _) = as_(&env, &admin, Method::GET, "/v1/sea/namespaces", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/catalogs",
        Some(json!({"name": "sea", "warehouse": "files", "properties": {"owner": "ops"}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["warehouse"], "files");
    assert_eq!(body["properties"]["owner"], "ops");
    let (status, body) = as_(&env, &admin, Method::GET, "/v1/sea/namespaces", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = as_(&env, &admin, Method::GET, "/api/v1/catalogs/sea", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["default-branch"], "main");
    let (_, body) = as_(&env, &admin, Method::GET, "/api/v1/catalogs", None).await;
    assert_eq!(names(&body, "catalogs", "name"), ["lake", "sea"]);
    assert_eq!(body["catalogs"][1]["warehouse"], "files");

    for (body, expected) in [
        (
            json!({"name": "sea", "warehouse": "files"}),
            StatusCode::CONFLICT,
        ),
        (
            json!({"name": "x", "warehouse": "nowhere"}),
            StatusCode::NOT_FOUND,
        ),
        // Another tenant's warehouse is not this tenant's.
        (
            json!({"name": "x", "warehouse": "vault"}),
            StatusCode::NOT_FOUND,
        ),
        (
            json!({"name": "a.b", "warehouse": "files"}),
            StatusCode::BAD_REQUEST,
        ),
        (json!({"name": "x"}), StatusCode::BAD_REQUEST),
        (
            json!({"name": "x", "warehouse": "files", "kind": "federated"}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (status, answer) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/catalogs",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    // A catalog with content is not deleted.
    let (status, _) = as_(
        &env,
        &admin,
        Method::POST,
        "/v1/sea/namespaces",
        Some(json!({"namespace": ["db"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = as_(&env, &admin, Method::DELETE, "/api/v1/catalogs/sea", None).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = as_(&env, &admin, Method::DELETE, "/v1/sea/namespaces/db", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = as_(&env, &admin, Method::DELETE, "/api/v1/catalogs/sea", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    // Gone at once, from the directory too.
    let (status, _) = as_(&env, &admin, Method::GET, "/v1/sea/namespaces", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = as_(&env, &admin, Method::GET, "/api/v1/catalogs/sea", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_type(&body), "NoSuchCatalogException");
    let _ = &env.dir;
}

#[tokio::test]
async fn the_catalog_list_shows_what_the_caller_may_read_something_in() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    let (status, _) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/catalogs",
        Some(json!({"name": "hidden", "warehouse": "files"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    for (user, expected) in [
        ("admin", &["hidden", "lake"][..]),
        ("reader", &["lake"]),
        ("nsgranter", &["lake"]),
        ("nobody", &[]),
    ] {
        let token = token(&env, user).await;
        let (status, body) = as_(&env, &token, Method::GET, "/api/v1/catalogs", None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(names(&body, "catalogs", "name"), expected, "{user}");
    }
}
