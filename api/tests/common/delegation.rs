//! What the tests of delegated storage access share: a stand-in token service, the S3 server
//! of `scripts/test`, and a secured router with a reader and a writer.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use axum::extract::{Form, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use pangolin_catalog::authz::{Grant, Privilege, Resource, Role};
use pangolin_identity::SystemClock;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::secured::{PASSWORD, ROOT_PASSWORD, secured, send_as, sign_in};

pub const WAREHOUSE_KEY_ID: &str = "AKIAWAREHOUSEKEY";
pub const WAREHOUSE_SECRET: &str = "warehouse-secret-never-shown-0123456789";
pub const ROLE: &str = "arn:aws:iam::123456789012:role/lake-access";
pub const DELEGATION: (&str, &str) = ("x-iceberg-access-delegation", "vended-credentials");

/// A token service that answers `AssumeRole` for [`ROLE`] and refuses any other role (or
/// every role while `refuse` is set), remembering each call's form and signing key id.
#[derive(Clone, Default)]
pub struct Sts {
    pub calls: Arc<Mutex<Vec<HashMap<String, String>>>>,
    pub refuse: Arc<AtomicBool>,
}

impl Sts {
    pub async fn start() -> (Self, String) {
        let sts = Self::default();
        let app = axum::Router::new()
            .route("/", axum::routing::post(assume_role))
            .with_state(sts.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (sts, url)
    }

    pub fn calls(&self) -> Vec<HashMap<String, String>> {
        self.calls.lock().clone()
    }

    pub fn policy(&self, call: usize) -> Value {
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
pub fn s3() -> Option<(String, String)> {
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

pub struct Env {
    pub app: axum::Router,
    pub root: String,
}

impl Env {
    /// `acme` with `reader` (read on catalog `vend`) and `writer` (read, write and create).
    pub async fn new() -> Self {
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

    pub async fn token(&self, user: &str) -> String {
        let (_, body) = sign_in(&self.app, Some("acme"), user, PASSWORD).await;
        body["access_token"].as_str().unwrap().to_owned()
    }

    pub async fn call(
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

    pub async fn create_warehouse(&self, storage: Value, with_keys: bool) -> (StatusCode, Value) {
        let mut body = json!({"name": "vending", "storage": storage});
        if with_keys {
            body["credentials"] = json!({"type": "s3", "access-key-id": WAREHOUSE_KEY_ID,
                                         "secret-access-key": WAREHOUSE_SECRET});
        }
        let root = self.root.clone();
        self.call(&root, Method::POST, "/api/v1/warehouses", Some(body), false)
            .await
    }

    /// As root: warehouse `warehouse` (the admin API's body), catalog `vend` bound to it, and
    /// namespace `db` in it. The warehouse's answer.
    pub async fn vend_catalog_on(&self, warehouse: Value) -> Value {
        let root = self.root.clone();
        let name = warehouse["name"].clone();
        let uri = "/api/v1/warehouses";
        let (status, body) = self
            .call(&root, Method::POST, uri, Some(warehouse), false)
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let catalog = json!({"name": "vend", "warehouse": name});
        let uri = "/api/v1/catalogs";
        let (status, answer) = self
            .call(&root, Method::POST, uri, Some(catalog), false)
            .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        let namespace = json!({"namespace": ["db"]});
        let uri = "/v1/vend/namespaces";
        let (status, answer) = self
            .call(&root, Method::POST, uri, Some(namespace), false)
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        body
    }
}

/// `(access key id, secret)` of the S3 server `scripts/test` starts.
pub fn s3_keys() -> (String, String) {
    (
        std::env::var("PANGOLIN_TEST_S3_ACCESS_KEY_ID")
            .unwrap_or_else(|_| "pangolin-test-key".into()),
        std::env::var("PANGOLIN_TEST_S3_SECRET_ACCESS_KEY")
            .unwrap_or_else(|_| "pangolin-test-secret-5f3a9c".into()),
    )
}
