//! Google Cloud Storage warehouses through the real, secured router, on the GCS emulator of
//! `scripts/test` (fake-gcs-server behind a proxy that also stands in for Google's token
//! endpoint and token exchange, and enforces the tokens: see tests/pyiceberg/gcs_server.py).
//! The server writes, reads and purges a table's files there with the service account's key,
//! and hands engines tokens downscoped to the table's prefixes; what those tokens may do is
//! asked of the storage itself.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::delegation::Env;
use serde_json::{Value, json};

const BUCKET: &str = "pangolin-gcs";

fn emulator() -> Option<String> {
    common::started_service("PANGOLIN_TEST_GCS_ENDPOINT", "the GCS emulator")
}

/// The tests' service account key, asking for its tokens at `token_uri`.
fn key_file(token_uri: &str) -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/pyiceberg/gcs/service-account.json"
    );
    let mut key: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    key["token_uri"] = json!(token_uri);
    key
}

fn private_key() -> String {
    key_file("")["private_key"].as_str().unwrap().to_owned()
}

fn warehouse(name: &str, endpoint: &str, prefix: &str, exchange: &str, key: &Value) -> Value {
    json!({
        "name": name,
        "storage": {"type": "gcs", "bucket": BUCKET, "prefix": prefix, "endpoint": endpoint,
                    "downscope": {"token-exchange": exchange}},
        "credentials": {"type": "gcs", "service-account-key": key.to_string()},
    })
}

fn unique(what: &str) -> String {
    format!("{what}-{}", uuid::Uuid::new_v4().simple())
}

/// A storage request with `token`: the status it gets.
async fn storage(method: reqwest::Method, url: &str, token: &str, body: &str) -> u16 {
    reqwest::Client::new()
        .request(method, url)
        .bearer_auth(token)
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// What the stand-in issued `token` with.
async fn grant(endpoint: &str, token: &Value) -> Value {
    let url = format!("{endpoint}/_test/tokens/{}", token.as_str().unwrap());
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn a_gcs_warehouse_is_created_only_once_a_token_was_downscoped() {
    let Some(endpoint) = emulator() else { return };
    let env = Env::new().await;
    let root = env.root.clone();
    let exchange = format!("{endpoint}/v1/token");
    let key = key_file(&format!("{endpoint}/token"));
    let create = |body: Value| {
        let (env, root) = (&env, root.clone());
        async move {
            env.call(&root, Method::POST, "/api/v1/warehouses", Some(body), false)
                .await
        }
    };

    // Settings that cannot work are refused before anything is asked.
    let mut keyless = warehouse("gcs", &endpoint, "wh", &exchange, &key);
    keyless.as_object_mut().unwrap().remove("credentials");
    let mut not_a_key = warehouse("gcs", &endpoint, "wh", &exchange, &key);
    not_a_key["credentials"]["service-account-key"] = json!("{\"private_key\": \"x\"}");
    let mut bad_exchange = warehouse("gcs", &endpoint, "wh", "sts.example", &key);
    bad_exchange["storage"]["downscope"]["token-exchange"] = json!("sts.example");
    let mut unknown = warehouse("gcs", &endpoint, "wh", &exchange, &key);
    unknown["storage"]["downscope"]["lifetime"] = json!(60);
    for (body, expected) in [
        (keyless, "service account's key"),
        (not_a_key, "JSON file Google issues"),
        (bad_exchange, "is not an http:// or https:// URL"),
        (unknown, "unknown field"),
    ] {
        let (status, answer) = create(body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert!(
            answer.to_string().contains(expected),
            "{expected}: {answer}"
        );
    }

    // Google refuses the service account (here: one it does not know): its words, a 400.
    let mut stranger = key.clone();
    stranger["client_email"] = json!("someone@else.iam.gserviceaccount.com");
    let (status, answer) = create(warehouse("gcs", &endpoint, "wh", &exchange, &stranger)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(answer.to_string().contains("invalid_grant"), "{answer}");
    assert!(!answer.to_string().contains(&private_key()));

    // A token exchange nobody answers: 503.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let nowhere = format!("http://{closed}/v1/token");
    let (status, answer) = create(warehouse("gcs", &endpoint, "wh", &nowhere, &key)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    assert!(
        answer.to_string().contains("could not be reached"),
        "{answer}"
    );

    // Settings that work; the key is never shown back.
    let (status, answer) = create(warehouse("gcs", &endpoint, "wh", &exchange, &key)).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(
        answer["credentials"]["fields-set"],
        json!(["service-account-key"])
    );
    assert_eq!(answer["storage"]["downscope"]["token-exchange"], exchange);
    assert!(!answer.to_string().contains(&private_key()));
}

#[tokio::test]
async fn a_gcs_warehouse_vends_tokens_downscoped_to_a_tables_prefixes() {
    let Some(endpoint) = emulator() else { return };
    let env = Env::new().await;
    let root = env.root.clone();
    let prefix = unique("vend");
    let key = key_file(&format!("{endpoint}/token"));
    let exchange = format!("{endpoint}/v1/token");
    env.vend_catalog_on(warehouse("gcs", &endpoint, &prefix, &exchange, &key))
        .await;

    // The server writes the metadata into the bucket; the creator gets a token that may
    // read and write below the table's location and nowhere else.
    let table = |name: &str| {
        json!({"name": name, "schema": {"type": "struct", "fields": [
            {"id": 1, "name": "id", "type": "long", "required": true}]}})
    };
    let tables = "/v1/vend/namespaces/db/tables";
    let (status, created) = env
        .call(&root, Method::POST, tables, Some(table("t")), true)
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let location = created["metadata"]["location"].as_str().unwrap().to_owned();
    let folder = location
        .strip_prefix(&format!("gs://{BUCKET}/"))
        .unwrap()
        .to_owned();
    assert!(folder.starts_with(&format!("{prefix}/db/t-")), "{location}");
    let config = &created["config"];
    assert_eq!(config["gcs.service.host"], endpoint);
    let expires: u64 = config["gcs.oauth2.token-expires-at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let now_ms = pangolin_delegation::epoch_ms(std::time::SystemTime::now()) as u64;
    assert!(
        expires > now_ms + 3_500_000 && expires <= now_ms + 3_600_000,
        "{expires}"
    );
    assert_eq!(
        created["storage-credentials"],
        json!([{"prefix": location, "config": {
            "gcs.oauth2.token": config["gcs.oauth2.token"],
            "gcs.oauth2.token-expires-at": config["gcs.oauth2.token-expires-at"]}}])
    );
    let writer_token = config["gcs.oauth2.token"].clone();
    let issued = grant(&endpoint, &writer_token).await;
    assert_eq!(issued["access"], "objectAdmin");
    assert_eq!(
        issued["rules"],
        json!([[
            BUCKET,
            format!("projects/_/buckets/{BUCKET}/objects/{folder}/"),
            format!("{folder}/")
        ]])
    );

    // A reader's token may only read; loading without the header hands out nothing.
    let reader = env.token("reader").await;
    let uri = format!("{tables}/t");
    let (status, loaded) = env.call(&reader, Method::GET, &uri, None, true).await;
    assert_eq!(status, StatusCode::OK, "{loaded}");
    let reader_token = loaded["config"]["gcs.oauth2.token"].clone();
    assert_eq!(
        grant(&endpoint, &reader_token).await["access"],
        "objectViewer"
    );
    let (_, plain) = env.call(&reader, Method::GET, &uri, None, false).await;
    assert!(plain["config"].get("gcs.oauth2.token").is_none(), "{plain}");

    // The storage holds them to it.
    let metadata = created["metadata-location"].as_str().unwrap();
    let object = metadata.strip_prefix(&format!("gs://{BUCKET}/")).unwrap();
    let object_url = |name: &str| {
        format!(
            "{endpoint}/storage/v1/b/{BUCKET}/o/{}?alt=media",
            urlencode(name)
        )
    };
    let upload = |name: &str| {
        format!(
            "{endpoint}/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={}",
            urlencode(name)
        )
    };
    let reader_token = reader_token.as_str().unwrap();
    let writer_token = writer_token.as_str().unwrap();
    use reqwest::Method as M;
    assert_eq!(
        storage(M::GET, &object_url(object), reader_token, "").await,
        200
    );
    let data = format!("{folder}/data/part-0.parquet");
    assert_eq!(
        storage(M::POST, &upload(&data), reader_token, "x").await,
        403
    );
    assert_eq!(
        storage(M::POST, &upload(&data), writer_token, "x").await,
        200
    );
    let (status, other) = env
        .call(&root, Method::POST, tables, Some(table("u")), true)
        .await;
    assert_eq!(status, StatusCode::OK, "{other}");
    let other_metadata = other["metadata-location"].as_str().unwrap();
    let other_object = other_metadata
        .strip_prefix(&format!("gs://{BUCKET}/"))
        .unwrap();
    assert_eq!(
        storage(M::GET, &object_url(other_object), writer_token, "").await,
        403
    );
    let beside = format!("{folder}-evil/x");
    assert_eq!(
        storage(M::POST, &upload(&beside), writer_token, "x").await,
        403
    );

    // Each hand-out is audited once per principal, never with the token.
    let (_, audit) = env
        .call(
            &root,
            Method::GET,
            "/api/v1/audit?page-size=1000",
            None,
            false,
        )
        .await;
    let vended: Vec<&Value> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "table.vend-credentials")
        .collect();
    let by_reader = vended
        .iter()
        .find(|e| e["principal"] == "user:acme/reader")
        .unwrap();
    assert_eq!(by_reader["details"]["access"], "read");
    assert_eq!(by_reader["details"]["prefixes"], location);
    assert!(!audit.to_string().contains("downscoped-"), "{audit}");

    // Purging lists and deletes the table's files through the same storage.
    let purge = format!("{uri}?purgeRequested=true");
    let (status, body) = env.call(&root, Method::DELETE, &purge, None, false).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let listing: Value = reqwest::Client::new()
        .get(format!(
            "{endpoint}/storage/v1/b/{BUCKET}/o?prefix={}",
            urlencode(&format!("{folder}/"))
        ))
        .bearer_auth(writer_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(listing.get("items").is_none(), "{listing}");
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
