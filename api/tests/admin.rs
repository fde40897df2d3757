//! The administration API through the real, secured router: each resource's life cycle and
//! bad input, secrets that never reach a response, tenant isolation of every admin route,
//! escalation attempts, and who may call which admin route.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use common::secured::{PASSWORD, ROOT_PASSWORD, secured, send_as, sign_in};
use common::send;
use pangolin_catalog::authz::{BranchPattern, Grant, Privilege, Resource, Role};
use pangolin_catalog::tenancy::{StorageConfig, WarehouseSpec};
use pangolin_identity::{PrincipalName, SystemClock, TenantName};
use serde_json::{Value, json};
use tempfile::TempDir;

const S3_SECRET: &str = "s3-secret-access-key-value-0123456789";

struct Env {
    app: axum::Router,
    dir: TempDir,
    /// The secret part of globex's service user `etl`'s key.
    globex_key_id: String,
}

fn lake(tenant: &str) -> Resource {
    Resource::catalog(tenant, "lake")
}

/// Tenants `acme` (catalog `lake`) and `globex` (catalogs `lake` and `secret`, an extra
/// warehouse `vault`, a user `bob`, a service user `etl` with a key, a role `partner-readers`).
/// In `acme`: `admin` (tenant admin), `reader` (read on `lake`), `writer` (read on `lake`,
/// write and create on `dev*`), `nobody` (no role), `usermgr` (manage-users on the tenant),
/// `nsgranter` (manage-grants and read on namespace `a` of `lake`), `devlead` (manage-grants
/// on `lake`, write on `dev*`).
async fn env() -> Env {
    let dev = BranchPattern::parse("dev*").unwrap();
    let namespace_a = Resource::namespace("acme", "lake", ["a"]);
    let roles = [
        (
            Role::new(
                "acme",
                "readers",
                vec![Grant::new(Privilege::Read, lake("acme"))],
            ),
            "user:acme/reader",
        ),
        (
            Role::new(
                "acme",
                "dev-writers",
                vec![
                    Grant::new(Privilege::Read, lake("acme")),
                    Grant::new(Privilege::Write, lake("acme")).at(dev.clone()),
                    Grant::new(Privilege::Create, lake("acme")).at(dev.clone()),
                ],
            ),
            "user:acme/writer",
        ),
        (
            Role::new(
                "acme",
                "user-managers",
                vec![Grant::new(Privilege::ManageUsers, Resource::tenant("acme"))],
            ),
            "user:acme/usermgr",
        ),
        (
            Role::new(
                "acme",
                "a-granters",
                vec![
                    Grant::new(Privilege::ManageGrants, namespace_a.clone()),
                    Grant::new(Privilege::Read, namespace_a),
                ],
            ),
            "user:acme/nsgranter",
        ),
        (
            Role::new(
                "acme",
                "dev-leads",
                vec![
                    Grant::new(Privilege::ManageGrants, lake("acme")),
                    Grant::new(Privilege::Write, lake("acme")).at(dev),
                ],
            ),
            "user:acme/devlead",
        ),
        (
            Role::new(
                "globex",
                "partner-readers",
                vec![Grant::new(Privilege::Read, lake("globex"))],
            ),
            "user:globex/bob",
        ),
    ];
    let users = [
        ("acme", "admin", true),
        ("acme", "reader", false),
        ("acme", "writer", false),
        ("acme", "nobody", false),
        ("acme", "usermgr", false),
        ("acme", "nsgranter", false),
        ("acme", "devlead", false),
        ("globex", "admin", true),
        ("globex", "bob", false),
    ];
    let secured = secured(&users, roles.into(), Arc::new(SystemClock)).await;
    let vault = WarehouseSpec {
        storage: StorageConfig::Local {
            root: format!("file://{}/vault", secured.dir.path().display()),
        },
        credentials: None,
    };
    secured
        .tenancy
        .create_warehouse("globex", "vault", vault)
        .await
        .unwrap();
    let globex = TenantName::new("globex").unwrap();
    let etl = PrincipalName::new("etl").unwrap();
    secured
        .identity
        .create_service_user(&globex, &etl)
        .await
        .unwrap();
    let globex_key_id = secured
        .identity
        .create_api_key(&globex, &etl, None)
        .await
        .unwrap()
        .info
        .id
        .to_string();
    Env {
        app: secured.app,
        dir: secured.dir,
        globex_key_id,
    }
}

async fn login(env: &Env, tenant: Option<&str>, user: &str, password: &str) -> StatusCode {
    sign_in(&env.app, tenant, user, password).await.0
}

async fn token_with(env: &Env, tenant: Option<&str>, user: &str, password: &str) -> String {
    let (status, value) = sign_in(&env.app, tenant, user, password).await;
    assert_eq!(status, StatusCode::OK, "{value}");
    value["access_token"].as_str().unwrap().to_owned()
}

/// A token of `user` of `acme`, or of root for `root`.
async fn token(env: &Env, user: &str) -> String {
    match user {
        "root" => token_with(env, None, "root", ROOT_PASSWORD).await,
        other => token_with(env, Some("acme"), other, PASSWORD).await,
    }
}

/// Sends `body` as the holder of `token`; root acts in `acme`.
async fn as_(
    env: &Env,
    token: &str,
    method: Method,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let body = body.map(|b| b.to_string());
    send_as(
        &env.app,
        token,
        method,
        uri,
        body,
        &[("x-pangolin-tenant", "acme")],
    )
    .await
}

/// Sends a raw body text (for malformed bodies).
async fn raw(env: &Env, token: &str, method: Method, uri: &str, body: &str) -> (StatusCode, Value) {
    send_as(&env.app, token, method, uri, Some(body.to_owned()), &[]).await
}

fn names(list: &Value, field: &str, key: &str) -> Vec<String> {
    list[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item[key].as_str().unwrap().to_owned())
        .collect()
}

fn error_type(body: &Value) -> &str {
    body["error"]["type"].as_str().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Tenants

#[tokio::test]
async fn root_creates_lists_describes_and_deletes_tenants() {
    let env = env().await;
    let root = token(&env, "root").await;
    let (status, body) = as_(
        &env,
        &root,
        Method::POST,
        "/api/v1/tenants",
        Some(json!({"name": "initech", "description": "printers",
                    "admin": {"username": "peter", "password": PASSWORD}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["name"], "initech");
    assert_eq!(body["admin"], "user:initech/peter");
    assert!(!body.to_string().contains(PASSWORD));
    // The first admin signs in and administers the new tenant.
    let peter = token_with(&env, Some("initech"), "peter", PASSWORD).await;
    let (status, body) = as_(&env, &peter, Method::GET, "/api/v1/users", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(names(&body, "users", "username"), ["peter"]);
    assert_eq!(body["users"][0]["admin"], true);

    // Paged listing: acme, default, globex, initech.
    let (status, first) = as_(
        &env,
        &root,
        Method::GET,
        "/api/v1/tenants?page-size=3",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(
        names(&first, "tenants", "name"),
        ["acme", "default", "globex"]
    );
    let next = first["next-page-token"].as_str().unwrap();
    let (_, second) = as_(
        &env,
        &root,
        Method::GET,
        &format!("/api/v1/tenants?page-size=3&page-token={next}"),
        None,
    )
    .await;
    assert_eq!(names(&second, "tenants", "name"), ["initech"]);
    assert!(second.get("next-page-token").is_none());

    let (status, body) = as_(
        &env,
        &root,
        Method::PATCH,
        "/api/v1/tenants/initech",
        Some(json!({"description": "fax machines"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = as_(&env, &root, Method::GET, "/api/v1/tenants/initech", None).await;
    assert_eq!(body["description"], "fax machines");

    // A tenant with warehouses or catalogs is not deleted.
    let (status, body) = as_(&env, &root, Method::DELETE, "/api/v1/tenants/globex", None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, _) = as_(&env, &root, Method::DELETE, "/api/v1/tenants/initech", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = as_(&env, &root, Method::GET, "/api/v1/tenants/initech", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_type(&body), "NoSuchTenantException");
    // Its users went with it: a tenant created again under the name inherits nobody.
    assert_eq!(
        login(&env, Some("initech"), "peter", PASSWORD).await,
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = as_(&env, &peter, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn bad_tenant_requests_are_refused_and_leave_nothing_behind() {
    let env = env().await;
    let root = token(&env, "root").await;
    for (body, expected) in [
        (json!({"name": "no spaces"}), StatusCode::BAD_REQUEST),
        (json!({"name": ""}), StatusCode::BAD_REQUEST),
        (
            json!({"name": "x", "colour": "red"}),
            StatusCode::BAD_REQUEST,
        ),
        (json!({"description": "nameless"}), StatusCode::BAD_REQUEST),
        (
            json!({"name": "weak", "admin": {"username": "w", "password": "short"}}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "badadmin", "admin": {"username": "no/slash", "password": PASSWORD}}),
            StatusCode::BAD_REQUEST,
        ),
        (json!({"name": "acme"}), StatusCode::CONFLICT),
    ] {
        let (status, answer) = as_(
            &env,
            &root,
            Method::POST,
            "/api/v1/tenants",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    for name in ["weak", "badadmin"] {
        let (status, _) = as_(
            &env,
            &root,
            Method::GET,
            &format!("/api/v1/tenants/{name}"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name} was left behind");
    }
    let (status, _) = raw(&env, &root, Method::POST, "/api/v1/tenants", "{not json").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = as_(
        &env,
        &root,
        Method::PATCH,
        "/api/v1/tenants/acme",
        Some(json!({"description": "x", "name": "renamed"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = as_(
        &env,
        &root,
        Method::PATCH,
        "/api/v1/tenants/nowhere",
        Some(json!({"description": "x"})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = as_(
        &env,
        &root,
        Method::GET,
        "/api/v1/tenants?page-size=0",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = as_(
        &env,
        &root,
        Method::GET,
        "/api/v1/tenants?page-token=zz",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

// ---------------------------------------------------------------------------------------------
// Warehouses

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

// ---------------------------------------------------------------------------------------------
// Catalogs

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

// ---------------------------------------------------------------------------------------------
// Users

#[tokio::test]
async fn users_are_created_reset_disabled_and_deleted() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "carol", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["id"], "user:acme/carol");
    assert_eq!(body["admin"], false);
    assert!(!body.to_string().contains(PASSWORD));
    for (body, expected) in [
        (
            json!({"username": "carol", "password": PASSWORD}),
            StatusCode::CONFLICT,
        ),
        (
            json!({"username": "dave", "password": "short"}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"username": "dave", "password": "x".repeat(73)}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"username": "d/e", "password": PASSWORD}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"username": "dave", "password": PASSWORD, "root": true}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (status, answer) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/users",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    let (_, body) = as_(&env, &admin, Method::GET, "/api/v1/users?page-size=2", None).await;
    assert_eq!(names(&body, "users", "username"), ["admin", "carol"]);
    assert!(body["next-page-token"].is_string());
    let (status, body) = as_(&env, &admin, Method::GET, "/api/v1/users/carol", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["disabled"], false);
    let text = body.to_string();
    assert!(!text.contains("$2") && !text.contains("hash"), "{text}");

    // A reset: the old password and the tokens issued before stop working.
    let carol = token_with(&env, Some("acme"), "carol", PASSWORD).await;
    let (status, _) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/users/carol/password",
        Some(json!({"password": "short"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/users/carol/password",
        Some(json!({"password": "another-long-password"})),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        login(&env, Some("acme"), "carol", PASSWORD).await,
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = as_(&env, &carol, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Carol changes her own password: the current one must be right.
    let carol = token_with(&env, Some("acme"), "carol", "another-long-password").await;
    let (status, body) = as_(
        &env,
        &carol,
        Method::POST,
        "/api/v1/me/password",
        Some(json!({"current": "not-the-password", "new": "a-third-long-password"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = as_(
        &env,
        &carol,
        Method::POST,
        "/api/v1/me/password",
        Some(json!({"current": "another-long-password", "new": "short"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = as_(
        &env,
        &carol,
        Method::POST,
        "/api/v1/me/password",
        Some(json!({"current": "another-long-password", "new": "a-third-long-password"})),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        login(&env, Some("acme"), "carol", "a-third-long-password").await,
        StatusCode::OK
    );

    // Disabled, she cannot sign in; enabled again, she can.
    let (status, body) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/users/carol/disabled",
        Some(json!({"disabled": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["disabled"], true);
    assert_eq!(
        login(&env, Some("acme"), "carol", "a-third-long-password").await,
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/users/carol/disabled",
        Some(json!({"disabled": "no"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/users/carol/disabled",
        Some(json!({"disabled": false})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        login(&env, Some("acme"), "carol", "a-third-long-password").await,
        StatusCode::OK
    );

    let (status, _) = as_(&env, &admin, Method::DELETE, "/api/v1/users/carol", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = as_(&env, &admin, Method::GET, "/api/v1/users/carol", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_type(&body), "NoSuchUserException");
    let (status, _) = as_(&env, &admin, Method::DELETE, "/api/v1/users/carol", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_deleted_user_created_again_has_no_roles() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    let (status, _) = as_(&env, &admin, Method::DELETE, "/api/v1/users/reader", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, body) = as_(
        &env,
        &admin,
        Method::GET,
        "/api/v1/roles/readers/members",
        None,
    )
    .await;
    assert_eq!(body["members"], json!([]));
    let (status, _) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "reader", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let reader = token(&env, "reader").await;
    let (status, _) = as_(&env, &reader, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

// ---------------------------------------------------------------------------------------------
// Service users and API keys

fn secret_of(key: &str) -> String {
    key.rsplit('_').next().unwrap().to_owned()
}

#[tokio::test]
async fn api_keys_are_shown_once_rotated_and_revoked() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/service-users",
        Some(json!({"name": "loader"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["id"], "service:acme/loader");
    for (body, expected) in [
        (json!({"name": "loader"}), StatusCode::CONFLICT),
        (json!({"name": "a b"}), StatusCode::BAD_REQUEST),
        (json!({"name": "x", "admin": true}), StatusCode::BAD_REQUEST),
    ] {
        let (status, answer) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/service-users",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    let mut answers = Vec::new();
    // No body at all is a key that never expires.
    let (status, created) = raw(
        &env,
        &admin,
        Method::POST,
        "/api/v1/service-users/loader/keys",
        "",
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(created["expires-at"].is_null());
    let key = created["key"].as_str().unwrap().to_owned();
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["client-id"], id.as_str());
    // The key signs in.
    let (status, body) = as_(&env, &key, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["principal"], "service:acme/loader");

    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/service-users/loader/keys",
        Some(json!({"expires-in-seconds": 3600})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(body["expires-at"].is_string());
    let second = body["key"].as_str().unwrap().to_owned();
    for (body, expected) in [
        (json!({"expires-in-seconds": 0}), StatusCode::BAD_REQUEST),
        (json!({"expires-in-seconds": -5}), StatusCode::BAD_REQUEST),
        (
            json!({"expires-in-seconds": "soon"}),
            StatusCode::BAD_REQUEST,
        ),
        (json!({"lifetime": 5}), StatusCode::BAD_REQUEST),
    ] {
        let (status, answer) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/service-users/loader/keys",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/service-users/ghost/keys",
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_type(&body), "NoSuchServiceUserException");

    let (status, listed) = as_(
        &env,
        &admin,
        Method::GET,
        "/api/v1/service-users/loader/keys",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["keys"].as_array().unwrap().len(), 2);
    answers.push(listed);
    let (_, body) = as_(&env, &admin, Method::GET, "/api/v1/service-users", None).await;
    assert_eq!(names(&body, "service-users", "name"), ["loader"]);
    answers.push(body);
    let (_, body) = as_(
        &env,
        &admin,
        Method::GET,
        "/api/v1/service-users/loader",
        None,
    )
    .await;
    answers.push(body);

    // Rotating: the new key is shown once; the old one stops at once without a grace period.
    let (status, rotated) = as_(
        &env,
        &admin,
        Method::POST,
        &format!("/api/v1/service-users/loader/keys/{id}/rotate"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{rotated}");
    let new_key = rotated["key"].as_str().unwrap().to_owned();
    assert_ne!(new_key, key);
    let (status, _) = as_(&env, &key, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = as_(&env, &new_key, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::OK);
    // With a grace period the old one keeps working.
    let new_id = rotated["id"].as_str().unwrap().to_owned();
    let (status, graced) = as_(
        &env,
        &admin,
        Method::POST,
        &format!("/api/v1/service-users/loader/keys/{new_id}/rotate"),
        Some(json!({"grace-seconds": 600})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = as_(&env, &new_key, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::OK);

    // Revoking the second key.
    let second_id = second.split('_').nth(1).unwrap();
    let (status, body) = as_(
        &env,
        &admin,
        Method::DELETE,
        &format!("/api/v1/service-users/loader/keys/{second_id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["revoked-at"].is_string());
    answers.push(body);
    let (status, _) = as_(&env, &second, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = as_(
        &env,
        &admin,
        Method::DELETE,
        "/api/v1/service-users/loader/keys/0123456789abcdef",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The secrets appear in their creation answers and nowhere else.
    for key in [
        &key,
        &second,
        &new_key,
        &graced["key"].as_str().unwrap().to_owned(),
    ] {
        for answer in &answers {
            assert!(!answer.to_string().contains(&secret_of(key)), "{answer}");
        }
    }

    // Nor in the audit log, which records every one of these changes.
    let root = token(&env, "root").await;
    let (status, audit) = as_(
        &env,
        &root,
        Method::GET,
        "/api/v1/audit?page-size=1000",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let text = audit.to_string();
    for action in [
        "service-user.create",
        "api-key.create",
        "api-key.rotate",
        "api-key.revoke",
    ] {
        assert!(text.contains(action), "{action} is not audited");
    }
    for key in [&key, &second, &new_key] {
        assert!(!text.contains(&secret_of(key)));
    }

    // Deleting the service user takes its keys.
    let graced_key = graced["key"].as_str().unwrap();
    let (status, _) = as_(
        &env,
        &admin,
        Method::DELETE,
        "/api/v1/service-users/loader",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = as_(&env, graced_key, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = as_(
        &env,
        &admin,
        Method::GET,
        "/api/v1/service-users/loader",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

// ---------------------------------------------------------------------------------------------
// Roles

#[tokio::test]
async fn roles_are_created_changed_bound_and_deleted() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    let role = json!({
        "name": "analysts",
        "grants": [
            {"privilege": "read", "resource": {"type": "catalog", "catalog": "lake"}},
            {"privilege": "write", "branches": "dev*",
             "resource": {"type": "namespace", "catalog": "lake", "namespace": ["a", "b"]}},
            {"privilege": "read-audit", "resource": {"type": "tenant"}},
            {"privilege": "drop",
             "resource": {"type": "table", "catalog": "lake", "namespace": ["a"], "name": "t"}},
        ],
    });
    let (status, body) = as_(&env, &admin, Method::POST, "/api/v1/roles", Some(role)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["version"], 1);
    assert_eq!(body["grants"][1]["branches"], "dev*");
    assert_eq!(body["grants"][0]["branches"], "*");
    assert!(body["grants"][2].get("branches").is_none());
    for (body, expected) in [
        (
            json!({"name": "analysts", "grants": []}),
            StatusCode::CONFLICT,
        ),
        (
            json!({"name": "bad name", "grants": []}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "grants": [{"privilege": "fly", "resource": {"type": "tenant"}}]}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "grants": [{"privilege": "read", "resource": {"type": "catalog"}}]}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "grants": [{"privilege": "read",
                   "resource": {"type": "namespace", "catalog": "lake", "namespace": []}}]}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "grants": [{"privilege": "read",
                   "resource": {"type": "catalog", "catalog": "lake", "tenant": "globex"}}]}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "grants": [{"privilege": "read", "branches": "a*b",
                   "resource": {"type": "catalog", "catalog": "lake"}}]}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "x", "grants": [{"privilege": "manage-users", "branches": "main",
                   "resource": {"type": "tenant"}}]}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (status, answer) = as_(
            &env,
            &admin,
            Method::POST,
            "/api/v1/roles",
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, expected, "{body}: {answer}");
    }
    let (_, body) = as_(&env, &admin, Method::GET, "/api/v1/roles?page-size=2", None).await;
    assert_eq!(names(&body, "roles", "name"), ["a-granters", "analysts"]);
    assert!(body["next-page-token"].is_string());

    // Changing needs the version read.
    let change = |version: u64| {
        json!({"grants": [{"privilege": "read", "resource": {"type": "catalog", "catalog": "lake"}}],
               "version": version})
    };
    let (status, body) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/roles/analysts",
        Some(change(1)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["version"], 2);
    let (status, body) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/roles/analysts",
        Some(change(1)),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, _) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/roles/ghost",
        Some(change(1)),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Members: bound by percent-encoded principal id.
    let (status, body) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/roles/analysts/members/user%3Aacme%2Fnobody",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let nobody = token(&env, "nobody").await;
    let (status, _) = as_(&env, &nobody, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = as_(
        &env,
        &admin,
        Method::GET,
        "/api/v1/roles/analysts/members",
        None,
    )
    .await;
    assert_eq!(body["members"], json!(["user:acme/nobody"]));
    for (uri, expected) in [
        (
            "/api/v1/roles/analysts/members/user%3Aacme%2Fghost",
            StatusCode::NOT_FOUND,
        ),
        (
            "/api/v1/roles/ghost/members/user%3Aacme%2Fnobody",
            StatusCode::NOT_FOUND,
        ),
        (
            "/api/v1/roles/analysts/members/nonsense",
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (status, body) = as_(&env, &admin, Method::PUT, uri, None).await;
        assert_eq!(status, expected, "{uri}: {body}");
    }
    let (status, _) = as_(
        &env,
        &admin,
        Method::DELETE,
        "/api/v1/roles/analysts/members/user%3Aacme%2Fnobody",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = as_(&env, &nobody, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_(
        &env,
        &admin,
        Method::DELETE,
        "/api/v1/roles/analysts/members/user%3Aacme%2Fnobody",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Deleting a role drops its bindings: the same name created again applies to nobody.
    let (status, _) = as_(
        &env,
        &admin,
        Method::DELETE,
        "/api/v1/roles/readers?version=9",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = as_(&env, &admin, Method::DELETE, "/api/v1/roles/readers", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/roles",
        Some(json!({"name": "readers", "grants": [
            {"privilege": "read", "resource": {"type": "catalog", "catalog": "lake"}}]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let reader = token(&env, "reader").await;
    let (status, _) = as_(&env, &reader, Method::GET, "/v1/lake/namespaces", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_(&env, &admin, Method::GET, "/api/v1/roles/ghost", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

// ---------------------------------------------------------------------------------------------
// Escalation

#[tokio::test]
async fn escalation_attempts_are_refused() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    // A tenant admin creates no tenant.
    let (status, body) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/tenants",
        Some(json!({"name": "mine"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error_type(&body), "ForbiddenException");
    // Nor a root user: an admin it creates administers its own tenant only, whatever tenant
    // header it sends.
    let auth = format!("Bearer {admin}");
    let (status, _, body) = send(
        &env.app,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "boss", "password": PASSWORD, "admin": true}).to_string()),
        &[("authorization", &auth), ("x-pangolin-tenant", "~")],
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["id"], "user:acme/boss");
    assert_eq!(
        login(&env, None, "boss", PASSWORD).await,
        StatusCode::UNAUTHORIZED
    );
    let boss = token(&env, "boss").await;
    let (_, body) = as_(&env, &boss, Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(body["root"], false);
    let (status, _) = as_(&env, &boss, Method::GET, "/api/v1/tenants", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // ManageUsers is not admin: no admin created, and no admin touched.
    let usermgr = token(&env, "usermgr").await;
    let (status, body) = as_(
        &env,
        &usermgr,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "sneaky", "password": PASSWORD, "admin": true})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = as_(&env, &usermgr, Method::GET, "/api/v1/users/sneaky", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for (method, uri, body) in [
        (
            Method::PUT,
            "/api/v1/users/admin/password",
            Some(json!({"password": "taken-over-password"})),
        ),
        (
            Method::PUT,
            "/api/v1/users/admin/disabled",
            Some(json!({"disabled": true})),
        ),
        (Method::DELETE, "/api/v1/users/admin", None),
    ] {
        let (status, answer) = as_(&env, &usermgr, method.clone(), uri, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {uri}: {answer}");
    }
    assert_eq!(
        login(&env, Some("acme"), "admin", PASSWORD).await,
        StatusCode::OK
    );
    // Ordinary users are its business.
    let (status, _) = as_(
        &env,
        &usermgr,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "plain", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    // Nor does it reach roles.
    let (status, _) = as_(
        &env,
        &usermgr,
        Method::PUT,
        "/api/v1/roles/user-managers/members/user%3Aacme%2Fplain",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // ManageGrants on namespace `a` grants on `a` and below, never on the catalog.
    let nsgranter = token(&env, "nsgranter").await;
    let on = |resource: Value, name: &str| json!({"name": name, "grants": [{"privilege": "read", "resource": resource}]});
    let (status, body) = as_(
        &env,
        &nsgranter,
        Method::POST,
        "/api/v1/roles",
        Some(on(json!({"type": "catalog", "catalog": "lake"}), "wide")),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(error_type(&body), "ForbiddenException");
    let (status, body) = as_(
        &env,
        &nsgranter,
        Method::POST,
        "/api/v1/roles",
        Some(on(
            json!({"type": "namespace", "catalog": "lake", "namespace": ["a", "b"]}),
            "narrow",
        )),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // Nor may it widen a role it can see into the catalog.
    let (status, _) = as_(
        &env,
        &nsgranter,
        Method::PUT,
        "/api/v1/roles/narrow",
        Some(json!({"grants": [{"privilege": "read",
                   "resource": {"type": "catalog", "catalog": "lake"}}], "version": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Roles bind to principals of their own tenant only, even for the tenant admin.
    let (status, body) = as_(
        &env,
        &admin,
        Method::PUT,
        "/api/v1/roles/readers/members/user%3Aglobex%2Fbob",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // Holding Write on `dev*` only, Write on `*` cannot be granted; on `dev-x*` it can.
    let devlead = token(&env, "devlead").await;
    let write_at = |branches: &str, name: &str| {
        json!({"name": name, "grants": [{"privilege": "write", "branches": branches,
               "resource": {"type": "catalog", "catalog": "lake"}}]})
    };
    let (status, body) = as_(
        &env,
        &devlead,
        Method::POST,
        "/api/v1/roles",
        Some(write_at("*", "all-writers")),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = as_(
        &env,
        &devlead,
        Method::POST,
        "/api/v1/roles",
        Some(write_at("main", "main-writers")),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = as_(
        &env,
        &devlead,
        Method::POST,
        "/api/v1/roles",
        Some(write_at("dev-x*", "x-writers")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // And it may bind what it could grant, but not a role holding more than it does.
    let (status, _) = as_(
        &env,
        &devlead,
        Method::PUT,
        "/api/v1/roles/x-writers/members/user%3Aacme%2Fnobody",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = as_(
        &env,
        &devlead,
        Method::PUT,
        "/api/v1/roles/readers/members/user%3Aacme%2Fnobody",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

// ---------------------------------------------------------------------------------------------
// Tenant isolation

#[tokio::test]
async fn a_tenant_admin_learns_nothing_of_another_tenants_records() {
    let env = env().await;
    let admin = token(&env, "admin").await;
    let key = env.globex_key_id.clone();
    // Every route naming something globex has and acme does not: 404, never 403.
    let probes: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, "/api/v1/users/bob".into(), None),
        (Method::DELETE, "/api/v1/users/bob".into(), None),
        (
            Method::PUT,
            "/api/v1/users/bob/password".into(),
            Some(json!({"password": "taken-over-password"})),
        ),
        (
            Method::PUT,
            "/api/v1/users/bob/disabled".into(),
            Some(json!({"disabled": true})),
        ),
        (Method::GET, "/api/v1/service-users/etl".into(), None),
        (Method::DELETE, "/api/v1/service-users/etl".into(), None),
        (Method::GET, "/api/v1/service-users/etl/keys".into(), None),
        (
            Method::POST,
            "/api/v1/service-users/etl/keys".into(),
            Some(json!({})),
        ),
        (
            Method::DELETE,
            format!("/api/v1/service-users/etl/keys/{key}"),
            None,
        ),
        (
            Method::POST,
            format!("/api/v1/service-users/etl/keys/{key}/rotate"),
            Some(json!({})),
        ),
        (Method::GET, "/api/v1/roles/partner-readers".into(), None),
        (
            Method::PUT,
            "/api/v1/roles/partner-readers".into(),
            Some(json!({"grants": [], "version": 1})),
        ),
        (Method::DELETE, "/api/v1/roles/partner-readers".into(), None),
        (
            Method::GET,
            "/api/v1/roles/partner-readers/members".into(),
            None,
        ),
        (
            Method::DELETE,
            "/api/v1/roles/partner-readers/members/user%3Aglobex%2Fbob".into(),
            None,
        ),
        (Method::GET, "/api/v1/warehouses/vault".into(), None),
        (
            Method::PUT,
            "/api/v1/warehouses/vault".into(),
            Some(json!({"storage": {"type": "local", "root": "/tmp/stolen"}})),
        ),
        (Method::DELETE, "/api/v1/warehouses/vault".into(), None),
        (Method::GET, "/api/v1/catalogs/secret".into(), None),
        (Method::DELETE, "/api/v1/catalogs/secret".into(), None),
    ];
    for (method, uri, body) in probes {
        let (status, answer) = as_(&env, &admin, method.clone(), &uri, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}: {answer}");
        // Nothing of globex's but what the request itself named.
        let text = answer.to_string().replace("user:globex/bob", "");
        assert!(!text.contains("globex"), "{method} {uri}: {answer}");
    }
    // A key id of another tenant under one of acme's own service users is not found either.
    let (status, _) = as_(
        &env,
        &admin,
        Method::POST,
        "/api/v1/service-users",
        Some(json!({"name": "etl"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    for (method, uri) in [
        (
            Method::DELETE,
            format!("/api/v1/service-users/etl/keys/{key}"),
        ),
        (
            Method::POST,
            format!("/api/v1/service-users/etl/keys/{key}/rotate"),
        ),
    ] {
        let (status, answer) = as_(&env, &admin, method.clone(), &uri, Some(json!({}))).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}: {answer}");
    }
    // Listings show only acme's records.
    for (uri, field) in [
        ("/api/v1/users", "users"),
        ("/api/v1/service-users", "service-users"),
        ("/api/v1/service-users/etl/keys", "keys"),
        ("/api/v1/roles", "roles"),
        ("/api/v1/warehouses", "warehouses"),
        ("/api/v1/catalogs", "catalogs"),
    ] {
        let (status, answer) = as_(&env, &admin, Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        let text = answer.to_string();
        for foreign in ["globex", "bob", "vault", "secret", &key] {
            assert!(!text.contains(foreign), "{uri} shows {foreign}: {text}");
        }
        assert!(answer[field].is_array(), "{uri}: {answer}");
    }
    // globex's records are all still there: root sees them in globex.
    let root = token(&env, "root").await;
    let auth = format!("Bearer {root}");
    for uri in [
        "/api/v1/users/bob",
        "/api/v1/service-users/etl",
        "/api/v1/roles/partner-readers",
        "/api/v1/warehouses/vault",
        "/api/v1/catalogs/secret",
    ] {
        let (status, _, answer) = send(
            &env.app,
            Method::GET,
            uri,
            None,
            &[("authorization", &auth), ("x-pangolin-tenant", "globex")],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{uri}: {answer}");
    }
    let (status, _, answer) = send(
        &env.app,
        Method::GET,
        "/api/v1/roles/partner-readers/members",
        None,
        &[("authorization", &auth), ("x-pangolin-tenant", "globex")],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["members"], json!(["user:globex/bob"]));
    assert_eq!(
        login(&env, Some("globex"), "bob", PASSWORD).await,
        StatusCode::OK
    );
}

// ---------------------------------------------------------------------------------------------
// Who may call what

const WHO: [&str; 5] = ["root", "admin", "reader", "writer", "nobody"];

/// Every admin route, with a request that changes nothing that matters (absent targets or
/// bodies that are refused after authorization), and who is let through (`1`) for root, the
/// tenant admin, a reader, a writer and a user without roles. Being let through means any
/// answer but 401 and 403.
fn matrix() -> Vec<(Method, &'static str, Option<Value>, [u8; 5])> {
    let only_root = [1, 0, 0, 0, 0];
    let admins = [1, 1, 0, 0, 0];
    let everyone = [1, 1, 1, 1, 1];
    let weak = json!({"password": "short"});
    vec![
        (
            Method::POST,
            "/api/v1/tenants",
            Some(json!({"name": "bad name"})),
            only_root,
        ),
        (Method::GET, "/api/v1/tenants", None, only_root),
        (Method::GET, "/api/v1/tenants/ghost", None, only_root),
        (
            Method::PATCH,
            "/api/v1/tenants/ghost",
            Some(json!({"description": "x"})),
            only_root,
        ),
        (Method::DELETE, "/api/v1/tenants/ghost", None, only_root),
        (Method::POST, "/api/v1/warehouses", Some(json!({})), admins),
        (Method::GET, "/api/v1/warehouses", None, admins),
        (Method::GET, "/api/v1/warehouses/ghost", None, admins),
        (
            Method::PUT,
            "/api/v1/warehouses/ghost",
            Some(json!({})),
            admins,
        ),
        (Method::DELETE, "/api/v1/warehouses/ghost", None, admins),
        (Method::POST, "/api/v1/catalogs", Some(json!({})), admins),
        (Method::GET, "/api/v1/catalogs", None, everyone),
        (Method::GET, "/api/v1/catalogs/lake", None, [1, 1, 1, 1, 0]),
        (Method::DELETE, "/api/v1/catalogs/ghost", None, admins),
        (Method::POST, "/api/v1/users", Some(json!({})), admins),
        (Method::GET, "/api/v1/users", None, admins),
        (Method::GET, "/api/v1/users/ghost", None, admins),
        (Method::DELETE, "/api/v1/users/ghost", None, admins),
        (
            Method::PUT,
            "/api/v1/users/ghost/password",
            Some(weak),
            admins,
        ),
        (
            Method::PUT,
            "/api/v1/users/ghost/disabled",
            Some(json!({"disabled": true})),
            admins,
        ),
        (Method::GET, "/api/v1/external-principals", None, admins),
        (
            Method::GET,
            "/api/v1/external-principals/oidc%3Aacme%2Fidp%2Fghost",
            None,
            admins,
        ),
        (
            Method::PUT,
            "/api/v1/external-principals/oidc%3Aacme%2Fidp%2Fghost/disabled",
            Some(json!({"disabled": true})),
            admins,
        ),
        (
            Method::POST,
            "/api/v1/me/password",
            Some(json!({"current": "whatever-it-is", "new": "short"})),
            everyone,
        ),
        (
            Method::POST,
            "/api/v1/service-users",
            Some(json!({})),
            admins,
        ),
        (Method::GET, "/api/v1/service-users", None, admins),
        (Method::GET, "/api/v1/service-users/ghost", None, admins),
        (Method::DELETE, "/api/v1/service-users/ghost", None, admins),
        (
            Method::POST,
            "/api/v1/service-users/ghost/keys",
            None,
            admins,
        ),
        (
            Method::GET,
            "/api/v1/service-users/ghost/keys",
            None,
            admins,
        ),
        (
            Method::DELETE,
            "/api/v1/service-users/ghost/keys/0123456789abcdef",
            None,
            admins,
        ),
        (
            Method::POST,
            "/api/v1/service-users/ghost/keys/0123456789abcdef/rotate",
            None,
            admins,
        ),
        (
            Method::POST,
            "/api/v1/roles",
            Some(json!({"name": "bad name", "grants": []})),
            admins,
        ),
        (Method::GET, "/api/v1/roles", None, admins),
        (Method::GET, "/api/v1/roles/ghost", None, admins),
        (
            Method::PUT,
            "/api/v1/roles/ghost",
            Some(json!({"grants": [], "version": 1})),
            admins,
        ),
        (Method::DELETE, "/api/v1/roles/ghost", None, admins),
        (Method::GET, "/api/v1/roles/ghost/members", None, admins),
        (
            Method::PUT,
            "/api/v1/roles/ghost/members/user%3Aacme%2Freader",
            None,
            admins,
        ),
        (
            Method::DELETE,
            "/api/v1/roles/ghost/members/user%3Aacme%2Freader",
            None,
            admins,
        ),
        (
            Method::POST,
            "/api/v1/tokens/revoke",
            Some(json!({"token-id": "not-a-uuid"})),
            only_root,
        ),
    ]
}

#[tokio::test]
async fn every_admin_route_lets_through_exactly_who_it_should() {
    let env = env().await;
    let mut tokens = Vec::new();
    for who in WHO {
        tokens.push(token(&env, who).await);
    }
    let rows = matrix();
    // Every admin route of the route table is in the matrix.
    for route in pangolin_api::security::routes::ROUTES.iter() {
        let admin_route = [
            "tenants",
            "warehouses",
            "users",
            "external-principals",
            "service-users",
            "roles",
            "me/",
            "tokens/",
        ]
        .iter()
        .any(|p| route.path.starts_with(&format!("/api/v1/{p}")))
            || route.path == "/api/v1/catalogs"
            || route.path == "/api/v1/catalogs/{catalog}";
        if admin_route {
            assert!(
                rows.iter().any(|(m, p, _, _)| {
                    m.as_str() == route.method && {
                        let pattern = route.path.split('/').collect::<Vec<_>>();
                        let concrete = p.split('/').collect::<Vec<_>>();
                        pattern.len() == concrete.len()
                            && pattern
                                .iter()
                                .zip(&concrete)
                                .all(|(a, b)| a.starts_with('{') || a == b)
                    }
                }),
                "{} {} is missing from the matrix",
                route.method,
                route.path
            );
        }
    }
    for (method, uri, body, expected) in rows {
        for (i, who) in WHO.iter().enumerate() {
            let (status, answer) = as_(&env, &tokens[i], method.clone(), uri, body.clone()).await;
            assert_ne!(status, StatusCode::UNAUTHORIZED, "{who} {method} {uri}");
            let let_through = status != StatusCode::FORBIDDEN;
            assert_eq!(
                let_through,
                expected[i] == 1,
                "{who} {method} {uri}: {status} {answer}"
            );
        }
    }
}
