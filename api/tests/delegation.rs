//! Delegated storage access through the real, secured router. Vended credentials, with a
//! stand-in token service on loopback that records every `AssumeRole` it is asked for: the
//! settings a warehouse is checked with on creation, the exact session policy per table and
//! per caller's privileges, the cache, the audit trail, and the provider's refusals as clear
//! errors that leak no key. Remote signing: what is signed, for whom, and what is refused.
//! The tables themselves live on the S3 server `scripts/test` starts.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use axum::extract::{Form, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use common::secured::{PASSWORD, ROOT_PASSWORD, secured, send_as, sign_in};
use pangolin_catalog::authz::{Grant, Privilege, Resource, Role};
use pangolin_identity::SystemClock;
use parking_lot::Mutex;
use serde_json::{Value, json};

const WAREHOUSE_KEY_ID: &str = "AKIAWAREHOUSEKEY";
const WAREHOUSE_SECRET: &str = "warehouse-secret-never-shown-0123456789";
const ROLE: &str = "arn:aws:iam::123456789012:role/lake-access";
const DELEGATION: (&str, &str) = ("x-iceberg-access-delegation", "vended-credentials");

/// A token service that answers `AssumeRole` for [`ROLE`] and refuses any other role (or
/// every role while `refuse` is set), remembering each call's form and signing key id.
#[derive(Clone, Default)]
struct Sts {
    calls: Arc<Mutex<Vec<HashMap<String, String>>>>,
    refuse: Arc<AtomicBool>,
}

impl Sts {
    async fn start() -> (Self, String) {
        let sts = Self::default();
        let app = axum::Router::new()
            .route("/", axum::routing::post(assume_role))
            .with_state(sts.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (sts, url)
    }

    fn calls(&self) -> Vec<HashMap<String, String>> {
        self.calls.lock().clone()
    }

    fn policy(&self, call: usize) -> Value {
        serde_json::from_str(&self.calls()[call]["Policy"]).unwrap()
    }
}

async fn assume_role(
    State(sts): State<Sts>,
    headers: HeaderMap,
    Form(mut form): Form<HashMap<String, String>>,
) -> Response {
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let key_id = authorization
        .split("Credential=")
        .nth(1)
        .and_then(|c| c.split('/').next())
        .unwrap_or_default();
    form.insert("signed-by".into(), key_id.into());
    let n = {
        let mut calls = sts.calls.lock();
        calls.push(form.clone());
        calls.len()
    };
    if form.get("RoleArn").map(String::as_str) != Some(ROLE) || sts.refuse.load(Ordering::SeqCst) {
        let body = "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error>\
            <Type>Sender</Type><Code>AccessDenied</Code><Message>User is not authorized to \
            perform: sts:AssumeRole</Message></Error><RequestId>r1</RequestId></ErrorResponse>";
        return (StatusCode::FORBIDDEN, [("content-type", "text/xml")], body).into_response();
    }
    let seconds: u64 = form["DurationSeconds"].parse().unwrap();
    let expires = jiff::Timestamp::try_from(SystemTime::now() + Duration::from_secs(seconds))
        .unwrap()
        .round(jiff::Unit::Second)
        .unwrap();
    let body = format!(
        "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\
         <AssumeRoleResult><Credentials><AccessKeyId>ASIAVENDED{n}</AccessKeyId>\
         <SecretAccessKey>vended-secret-{n}</SecretAccessKey>\
         <SessionToken>vended-token-{n}</SessionToken><Expiration>{expires}</Expiration>\
         </Credentials><AssumedRoleUser><AssumedRoleId>AROA:s</AssumedRoleId>\
         <Arn>arn:aws:sts::123456789012:assumed-role/lake-access/s</Arn></AssumedRoleUser>\
         </AssumeRoleResult><ResponseMetadata><RequestId>r{n}</RequestId></ResponseMetadata>\
         </AssumeRoleResponse>"
    );
    ([("content-type", "text/xml")], body).into_response()
}

/// The S3 server of `scripts/test` (endpoint, bucket), or `None` after saying why.
fn s3() -> Option<(String, String)> {
    match std::env::var("PANGOLIN_TEST_S3_ENDPOINT") {
        Ok(endpoint) if !endpoint.is_empty() => Some((
            endpoint,
            std::env::var("PANGOLIN_TEST_S3_BUCKET").unwrap_or_else(|_| "pangolin-test".into()),
        )),
        _ => {
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "CI needs an S3 server"
            );
            eprintln!("skipped: PANGOLIN_TEST_S3_ENDPOINT is not set (scripts/test starts one)");
            None
        }
    }
}

struct Env {
    app: axum::Router,
    root: String,
}

impl Env {
    /// `acme` with `reader` (read on catalog `vend`) and `writer` (read, write and create).
    async fn new() -> Self {
        let vend = || Resource::catalog("acme", "vend");
        let roles = vec![
            (
                Role::new("acme", "readers", vec![Grant::new(Privilege::Read, vend())]),
                "user:acme/reader",
            ),
            (
                Role::new(
                    "acme",
                    "writers",
                    vec![
                        Grant::new(Privilege::Read, vend()),
                        Grant::new(Privilege::Write, vend()),
                        Grant::new(Privilege::Create, vend()),
                    ],
                ),
                "user:acme/writer",
            ),
        ];
        let users = [("acme", "reader", false), ("acme", "writer", false)];
        let secured = secured(&users, roles, Arc::new(SystemClock)).await;
        let (_, body) = sign_in(&secured.app, None, "root", ROOT_PASSWORD).await;
        let root = body["access_token"].as_str().unwrap().to_owned();
        Self {
            app: secured.app,
            root,
        }
    }

    async fn token(&self, user: &str) -> String {
        let (_, body) = sign_in(&self.app, Some("acme"), user, PASSWORD).await;
        body["access_token"].as_str().unwrap().to_owned()
    }

    async fn call(
        &self,
        token: &str,
        method: Method,
        uri: &str,
        body: Option<Value>,
        delegate: bool,
    ) -> (StatusCode, Value) {
        let mut headers = vec![("x-pangolin-tenant", "acme")];
        if delegate {
            headers.push(DELEGATION);
        }
        send_as(
            &self.app,
            token,
            method,
            uri,
            body.map(|b| b.to_string()),
            &headers,
        )
        .await
    }

    async fn create_warehouse(&self, storage: Value, with_keys: bool) -> (StatusCode, Value) {
        let mut body = json!({"name": "vending", "storage": storage});
        if with_keys {
            body["credentials"] = json!({"type": "s3", "access-key-id": WAREHOUSE_KEY_ID,
                                         "secret-access-key": WAREHOUSE_SECRET});
        }
        let root = self.root.clone();
        self.call(&root, Method::POST, "/api/v1/warehouses", Some(body), false)
            .await
    }
}

fn storage(sts_endpoint: &str, role: &str) -> Value {
    json!({"type": "s3", "bucket": "lake-bucket", "prefix": "wh", "endpoint": "http://127.0.0.1:9",
           "sts": {"role-arn": role, "external-id": "acme-lake", "endpoint": sts_endpoint}})
}

#[tokio::test]
async fn a_warehouse_is_created_only_once_its_role_was_assumed() {
    let env = Env::new().await;
    let (sts, url) = Sts::start().await;

    // Wrong settings are refused before anything is called.
    for (storage, with_keys, expected) in [
        (storage(&url, "lake-access"), true, "not a role ARN"),
        (storage(&url, ROLE), false, "needs the warehouse's S3 keys"),
        (
            json!({"type": "s3", "bucket": "b", "sts": {"role-arn": ROLE, "lifetime-seconds": 30}}),
            true,
            "lifetime",
        ),
        (
            json!({"type": "s3", "bucket": "b", "sts": {"role-arn": ROLE, "duration": 900}}),
            true,
            "unknown field",
        ),
    ] {
        let (status, body) = env.create_warehouse(storage, with_keys).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body.to_string().contains(expected), "{expected}: {body}");
    }
    assert!(sts.calls().is_empty());

    // A role the token service will not let the warehouse assume: its words, not a 500.
    let denied = "arn:aws:iam::123456789012:role/someone-else";
    let (status, body) = env.create_warehouse(storage(&url, denied), true).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("AccessDenied"), "{message}");
    assert!(
        message.contains("not authorized to perform: sts:AssumeRole"),
        "{message}"
    );
    assert!(!body.to_string().contains(WAREHOUSE_SECRET));

    // A token service that cannot be reached: 503.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let (status, body) = env.create_warehouse(storage(&closed, ROLE), true).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.to_string().contains("could not be reached"), "{body}");
    assert!(!body.to_string().contains(WAREHOUSE_SECRET));

    // Settings that work: one AssumeRole, read-only on the warehouse's root, signed with the
    // warehouse's key, with the external id and the default lifetime.
    let before = sts.calls().len();
    let (status, body) = env.create_warehouse(storage(&url, ROLE), true).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["storage"]["sts"]["role-arn"], ROLE);
    assert_eq!(body["storage"]["sts"]["lifetime-seconds"], 900);
    let calls = sts.calls();
    assert_eq!(calls.len(), before + 1);
    let call = &calls[before];
    assert_eq!(call["Action"], "AssumeRole");
    assert_eq!(call["RoleArn"], ROLE);
    assert_eq!(call["ExternalId"], "acme-lake");
    assert_eq!(call["DurationSeconds"], "900");
    assert_eq!(call["signed-by"], WAREHOUSE_KEY_ID);
    assert_eq!(
        sts.policy(before)["Statement"][0],
        json!({"Effect": "Allow", "Action": ["s3:GetObject", "s3:GetObjectVersion"],
               "Resource": ["arn:aws:s3:::lake-bucket/wh/*"]})
    );
}

/// Object actions a policy allows on its first statement.
fn actions(policy: &Value) -> Vec<String> {
    policy["Statement"][0]["Action"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn engines_get_credentials_for_their_table_at_their_privileges() {
    let Some((endpoint, bucket)) = s3() else {
        return;
    };
    let env = Env::new().await;
    let (sts, url) = Sts::start().await;
    let prefix = format!("vend-{}", uuid::Uuid::new_v4().simple());
    let keys = (
        std::env::var("PANGOLIN_TEST_S3_ACCESS_KEY_ID")
            .unwrap_or_else(|_| "pangolin-test-key".into()),
        std::env::var("PANGOLIN_TEST_S3_SECRET_ACCESS_KEY")
            .unwrap_or_else(|_| "pangolin-test-secret-5f3a9c".into()),
    );
    let root = env.root.clone();
    let warehouse = json!({
        "name": "vending",
        "storage": {"type": "s3", "bucket": bucket, "prefix": prefix, "endpoint": endpoint,
                    "sts": {"role-arn": ROLE, "endpoint": url, "lifetime-seconds": 3600}},
        "credentials": {"type": "s3", "access-key-id": keys.0, "secret-access-key": keys.1},
    });
    let (status, body) = env
        .call(
            &root,
            Method::POST,
            "/api/v1/warehouses",
            Some(warehouse),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let catalog = json!({"name": "vend", "warehouse": "vending"});
    let (status, body) = env
        .call(
            &root,
            Method::POST,
            "/api/v1/catalogs",
            Some(catalog),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, _) = env
        .call(
            &root,
            Method::POST,
            "/v1/vend/namespaces",
            Some(json!({"namespace": ["db"]})),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let checked = sts.calls().len();

    // The creator gets read-write credentials for the new table's location, in
    // `storage-credentials` and in `config`; the server's own keys appear nowhere.
    let table = json!({"name": "t", "schema": {"type": "struct", "fields": [
        {"id": 1, "name": "id", "type": "long", "required": true}]}});
    let (status, created) = env
        .call(
            &root,
            Method::POST,
            "/v1/vend/namespaces/db/tables",
            Some(table.clone()),
            true,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let location = created["metadata"]["location"].as_str().unwrap().to_owned();
    assert!(
        location.starts_with(&format!("s3://{bucket}/{prefix}/db/t-")),
        "{location}"
    );
    assert_eq!(created["storage-credentials"][0]["prefix"], location);
    let config = &created["config"];
    assert_eq!(
        config["s3.access-key-id"],
        format!("ASIAVENDED{}", checked + 1)
    );
    assert_eq!(
        config["s3.secret-access-key"],
        format!("vended-secret-{}", checked + 1)
    );
    assert_eq!(
        config["s3.session-token"],
        format!("vended-token-{}", checked + 1)
    );
    assert_eq!(config["s3.endpoint"], endpoint);
    assert_eq!(created["storage-credentials"][0]["config"], *config);
    let expires: u128 = config["s3.session-token-expires-at-ms"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    assert!(
        expires > now + 3_000_000 && expires <= now + 3_601_000,
        "{expires} vs {now}"
    );
    assert!(!created.to_string().contains(&keys.1));
    let key_in_bucket = location.strip_prefix(&format!("s3://{bucket}/")).unwrap();
    assert_eq!(
        sts.policy(checked),
        json!({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow",
             "Action": ["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject",
                        "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
             "Resource": [format!("arn:aws:s3:::{bucket}/{key_in_bucket}/*")]},
            {"Effect": "Allow", "Action": ["s3:ListBucket"],
             "Resource": [format!("arn:aws:s3:::{bucket}")],
             "Condition": {"StringLike": {"s3:prefix": [format!("{key_in_bucket}/*")]}}},
            {"Effect": "Allow", "Action": ["s3:GetBucketLocation"],
             "Resource": [format!("arn:aws:s3:::{bucket}")]},
        ]})
    );

    // Without the header nothing is vended, and no key is in the config.
    let uri = "/v1/vend/namespaces/db/tables/t";
    let (status, plain) = env.call(&root, Method::GET, uri, None, false).await;
    assert_eq!(status, StatusCode::OK);
    assert!(plain.get("storage-credentials").is_none(), "{plain}");
    assert!(plain["config"].get("s3.access-key-id").is_none(), "{plain}");
    assert!(
        plain["config"].get("s3.secret-access-key").is_none(),
        "{plain}"
    );

    // A writer gets the same read-write credentials, from the cache; a reader gets read-only
    // ones, from a new call; loading at a tag is reading, whoever loads.
    let calls = sts.calls().len();
    let writer = env.token("writer").await;
    let (status, body) = env.call(&writer, Method::GET, uri, None, true).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["config"]["s3.access-key-id"],
        config["s3.access-key-id"]
    );
    assert_eq!(sts.calls().len(), calls);
    let reader = env.token("reader").await;
    let (status, body) = env.call(&reader, Method::GET, uri, None, true).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_ne!(
        body["config"]["s3.access-key-id"],
        config["s3.access-key-id"]
    );
    assert_eq!(sts.calls().len(), calls + 1);
    assert_eq!(
        actions(&sts.policy(calls)),
        ["s3:GetObject", "s3:GetObjectVersion"]
    );
    let read_key = body["config"]["s3.access-key-id"].clone();
    let (status, body) = env
        .call(
            &root,
            Method::POST,
            "/api/v1/catalogs/vend/refs",
            Some(json!({"name": "v1", "type": "tag"})),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = env
        .call(
            &writer,
            Method::GET,
            "/v1/vend/namespaces/db/tables/t@v1",
            None,
            true,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["config"]["s3.access-key-id"], read_key);

    // The credentials route answers with the same, header or not.
    let (status, body) = env
        .call(
            &reader,
            Method::GET,
            &format!("{uri}/credentials"),
            None,
            false,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["storage-credentials"][0]["prefix"], location);
    assert_eq!(
        body["storage-credentials"][0]["config"]["s3.access-key-id"],
        read_key
    );

    // A staged create carries them in `config`, where PyIceberg looks for them.
    let mut staged = table.clone();
    staged["name"] = json!("staged");
    staged["stage-create"] = json!(true);
    let (status, body) = env
        .call(
            &writer,
            Method::POST,
            "/v1/vend/namespaces/db/tables",
            Some(staged),
            true,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body["config"]["s3.session-token"]
            .as_str()
            .unwrap()
            .starts_with("vended-token-")
    );

    // A token service that refuses: the load fails with its words, and a create leaves no
    // table behind.
    sts.refuse.store(true, Ordering::SeqCst);
    let mut other = table.clone();
    other["name"] = json!("refused");
    let (status, body) = env
        .call(
            &root,
            Method::POST,
            "/v1/vend/namespaces/db/tables",
            Some(other),
            true,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("AccessDenied"),
        "{body}"
    );
    let (status, _) = env
        .call(
            &root,
            Method::GET,
            "/v1/vend/namespaces/db/tables/refused",
            None,
            false,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    sts.refuse.store(false, Ordering::SeqCst);

    // Every hand-out is audited with who, what, which access and which key id, never the
    // secret or the token.
    let (status, audit) = env
        .call(
            &root,
            Method::GET,
            "/api/v1/audit?page-size=1000",
            None,
            false,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let vended: Vec<&Value> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "table.vend-credentials")
        .collect();
    assert_eq!(vended.len(), 6, "{vended:#?}");
    let by_reader = vended
        .iter()
        .find(|e| e["principal"] == "user:acme/reader")
        .unwrap();
    assert_eq!(by_reader["details"]["access"], "read");
    assert_eq!(by_reader["details"]["access-key-id"], read_key);
    assert_eq!(by_reader["details"]["prefixes"], location);
    assert!(
        by_reader["resource-id"]
            .as_str()
            .unwrap()
            .starts_with("vend/db"),
        "{by_reader}"
    );
    let text = audit.to_string();
    assert!(!text.contains("vended-secret") && !text.contains("vended-token"));
    assert!(!text.contains(&keys.1));
}

/// `(access key id, secret)` of the S3 server `scripts/test` starts.
fn s3_keys() -> (String, String) {
    (
        std::env::var("PANGOLIN_TEST_S3_ACCESS_KEY_ID")
            .unwrap_or_else(|_| "pangolin-test-key".into()),
        std::env::var("PANGOLIN_TEST_S3_SECRET_ACCESS_KEY")
            .unwrap_or_else(|_| "pangolin-test-secret-5f3a9c".into()),
    )
}

#[tokio::test]
async fn requests_for_a_tables_files_are_signed_within_its_location_and_access() {
    let Some((endpoint, bucket)) = s3() else {
        return;
    };
    let env = Env::new().await;
    let root = env.root.clone();
    let keys = s3_keys();
    let prefix = format!("sign-{}", uuid::Uuid::new_v4().simple());
    let warehouse = json!({
        "name": "signing",
        "storage": {"type": "s3", "bucket": bucket, "prefix": prefix, "endpoint": endpoint,
                    "remote-signing": true},
        "credentials": {"type": "s3", "access-key-id": keys.0, "secret-access-key": keys.1},
    });
    let (status, body) = env
        .call(
            &root,
            Method::POST,
            "/api/v1/warehouses",
            Some(warehouse),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["storage"]["remote-signing"], true);
    let catalog = json!({"name": "vend", "warehouse": "signing"});
    let (status, _) = env
        .call(
            &root,
            Method::POST,
            "/api/v1/catalogs",
            Some(catalog),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let namespace = json!({"namespace": ["db"]});
    env.call(
        &root,
        Method::POST,
        "/v1/vend/namespaces",
        Some(namespace),
        false,
    )
    .await;
    let schema = json!({"type": "struct", "fields": [
        {"id": 1, "name": "id", "type": "long", "required": true}]});
    let mut locations = Vec::new();
    let signing = [
        ("x-pangolin-tenant", "acme"),
        ("x-iceberg-access-delegation", "remote-signing"),
    ];
    for name in ["t", "u"] {
        let table = json!({"name": name, "schema": schema}).to_string();
        let uri = "/v1/vend/namespaces/db/tables";
        let (status, body) =
            send_as(&env.app, &root, Method::POST, uri, Some(table), &signing).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let endpoint = format!("v1/vend%40main/namespaces/db/tables/{name}/sign");
        assert_eq!(body["config"]["s3.signer.endpoint"], endpoint, "{body}");
        let location = body["metadata"]["location"].as_str().unwrap();
        locations.push(location.strip_prefix("s3://").unwrap().to_owned());
    }

    // Asked for remote signing, a load says where to sign and hands out no key.
    let reader = env.token("reader").await;
    let uri = "/v1/vend/namespaces/db/tables/t";
    let (status, body) = send_as(&env.app, &reader, Method::GET, uri, None, &signing).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let config = &body["config"];
    assert_eq!(config["s3.remote-signing-enabled"], "true");
    assert_eq!(config["s3.signer"], "S3V4RestSigner");
    assert_eq!(
        config["s3.signer.endpoint"],
        "v1/vend%40main/namespaces/db/tables/t/sign"
    );
    assert_eq!(config["s3.endpoint"], endpoint);
    assert!(
        config.get("s3.access-key-id").is_none() && config.get("s3.secret-access-key").is_none()
    );
    assert!(body.get("storage-credentials").is_none());
    // Asked only for vended credentials, a warehouse that only signs gives neither.
    let (_, body) = env.call(&reader, Method::GET, uri, None, true).await;
    assert!(body["config"].get("s3.signer.endpoint").is_none(), "{body}");

    let sign_uri = format!("/{}", config["s3.signer.endpoint"].as_str().unwrap());
    let sign = |token: String, method: &str, object: String| {
        let env = &env;
        let sign_uri = sign_uri.clone();
        let body = json!({"region": "us-east-1", "method": method,
                          "uri": format!("{endpoint}/{object}"),
                          "headers": {"content-type": ["application/octet-stream"]}});
        async move {
            env.call(&token, Method::POST, &sign_uri, Some(body), false)
                .await
        }
    };
    let inside = format!("{}/data/00000-0.parquet", locations[0]);
    let (status, body) = sign(reader.clone(), "GET", inside.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let authorization = body["headers"]["authorization"][0].as_str().unwrap();
    assert!(
        authorization.starts_with(&format!("AWS4-HMAC-SHA256 Credential={}/", keys.0)),
        "{authorization}"
    );
    assert_eq!(
        body["headers"]["x-amz-content-sha256"][0],
        "UNSIGNED-PAYLOAD"
    );
    assert_eq!(body["uri"], format!("{endpoint}/{inside}"));
    assert!(!body.to_string().contains(&keys.1));

    // A reader may not write; a writer may; nobody gets another table's files signed.
    let (status, body) = sign(reader.clone(), "PUT", inside.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("read-only"),
        "{body}"
    );
    let writer = env.token("writer").await;
    let (status, body) = sign(writer.clone(), "PUT", inside.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let other = format!("{}/data/00000-0.parquet", locations[1]);
    let (status, body) = sign(writer.clone(), "GET", other).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("outside"),
        "{body}"
    );
    let (status, body) = sign(writer.clone(), "GET", format!("{}?acl", inside)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // Malformed requests are 400s; signing for a table at a tag is reading.
    let (status, body) = env
        .call(
            &writer,
            Method::POST,
            &sign_uri,
            Some(json!({"uri": "x"})),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = env
        .call(
            &root,
            Method::POST,
            "/api/v1/catalogs/vend/refs",
            Some(json!({"name": "v1", "type": "tag"})),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let body = json!({"region": "us-east-1", "method": "PUT", "uri": format!("{endpoint}/{inside}"),
                      "headers": {}});
    let (status, body) = env
        .call(
            &writer,
            Method::POST,
            "/v1/vend%40v1/namespaces/db/tables/t/sign",
            Some(body),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // A catalog whose warehouse does not sign says so.
    env.call(
        &root,
        Method::POST,
        "/v1/lake/namespaces",
        Some(json!({"namespace": ["db"]})),
        false,
    )
    .await;
    let table = json!({"name": "t", "schema": schema});
    let (status, _) = env
        .call(
            &root,
            Method::POST,
            "/v1/lake/namespaces/db/tables",
            Some(table),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let body = json!({"region": "us-east-1", "method": "GET", "uri": "http://x/y", "headers": {}});
    let (status, body) = env
        .call(
            &root,
            Method::POST,
            "/v1/lake/namespaces/db/tables/t/sign",
            Some(body),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not sign"),
        "{body}"
    );
}
