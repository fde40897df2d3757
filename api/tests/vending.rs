//! Vended credentials through the real, secured router, with a stand-in token service on
//! loopback that records every `AssumeRole` it is asked for: the settings a warehouse is
//! checked with on creation, the exact session policy per table and per caller's privileges,
//! the cache, the audit trail, and the provider's refusals as clear errors that leak no key.
//! The tables themselves live on the S3 server `scripts/test` starts.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use axum::http::{Method, StatusCode};
use common::delegation::{
    DELEGATION, Env, ROLE, Sts, WAREHOUSE_KEY_ID, WAREHOUSE_SECRET, s3, s3_keys,
};
use common::secured::send_as;
use serde_json::{Value, json};

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

    // Changing the storage tries the new settings too, and a refusal changes nothing.
    let root = env.root.clone();
    let version = body["version"].as_u64().unwrap();
    let uri = "/api/v1/warehouses/vending";
    let denied = json!({"version": version,
                        "storage": storage(&url, "arn:aws:iam::123456789012:role/other")});
    let (status, body) = env.call(&root, Method::PUT, uri, Some(denied), false).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.to_string().contains("AccessDenied"), "{body}");
    let (_, body) = env.call(&root, Method::GET, uri, None, false).await;
    assert_eq!(body["storage"]["sts"]["role-arn"], ROLE);
    let calls = sts.calls().len();
    let mut longer = storage(&url, ROLE);
    longer["sts"]["lifetime-seconds"] = json!(3600);
    let (status, body) = env
        .call(
            &root,
            Method::PUT,
            uri,
            Some(json!({"version": version, "storage": longer})),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(sts.calls().len(), calls + 1);
    assert_eq!(sts.calls()[calls]["DurationSeconds"], "3600");
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
    let keys = s3_keys();
    let root = env.root.clone();
    let warehouse = json!({
        "name": "vending",
        "storage": {"type": "s3", "bucket": bucket, "prefix": prefix, "endpoint": endpoint,
                    "sts": {"role-arn": ROLE, "endpoint": url, "lifetime-seconds": 3600}},
        "credentials": {"type": "s3", "access-key-id": keys.0, "secret-access-key": keys.1},
    });
    env.vend_catalog_on(warehouse).await;
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
    // Per prefix, the keys alone: clients lay them over the table's config.
    let given = &created["storage-credentials"][0]["config"];
    for key in [
        "s3.access-key-id",
        "s3.secret-access-key",
        "s3.session-token",
        "s3.session-token-expires-at-ms",
    ] {
        assert_eq!(given[key], config[key], "{key}");
    }
    assert_eq!(given.as_object().unwrap().len(), 4, "{given}");
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

    // A retried create (same idempotency key) replays the answer without the credentials,
    // which are never stored; the credentials route gives fresh ones.
    let mut retried = table.clone();
    retried["name"] = json!("retried");
    let headers = [
        ("x-pangolin-tenant", "acme"),
        DELEGATION,
        ("idempotency-key", "0190e7f2-aaaa-7bbb-8ccc-0000000000aa"),
    ];
    let uri = "/v1/vend/namespaces/db/tables";
    let body = Some(retried.to_string());
    let (status, first) = send_as(&env.app, &root, Method::POST, uri, body.clone(), &headers).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert!(first["config"]["s3.session-token"].is_string());
    let (status, replay) = send_as(&env.app, &root, Method::POST, uri, body, &headers).await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    assert_eq!(replay["metadata-location"], first["metadata-location"]);
    assert!(replay.get("storage-credentials").is_none(), "{replay}");
    assert!(
        replay["config"].get("s3.session-token").is_none(),
        "{replay}"
    );

    // Each credential given to a principal is audited with who, what, which access and which
    // key id, never the secret or the token.
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
    // Each credential once per principal: the reader's second hand-out of the same
    // credential (the credentials route) is not recorded again.
    assert_eq!(vended.len(), 6, "{vended:#?}");
    let readers = vended
        .iter()
        .filter(|e| e["principal"] == "user:acme/reader");
    assert_eq!(readers.count(), 1);
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

    // On a protected branch, changes land through merge requests: a writer reads only.
    let (status, body) = env
        .call(
            &root,
            Method::PUT,
            "/api/v1/catalogs/vend/protection",
            Some(json!({"rules": [{"branch": "main"}]})),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let table = "/v1/vend/namespaces/db/tables/t";
    let (status, body) = env.call(&writer, Method::GET, table, None, true).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["config"]["s3.access-key-id"], read_key);
}

/// Azurite's account and its well-known development key.
const AZURITE_ACCOUNT: &str = "devstoreaccount1";
const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

fn azurite() -> Option<String> {
    common::started_service("PANGOLIN_TEST_AZURITE_ENDPOINT", "Azurite")
}

/// The query parameters of a SAS token.
fn sas_fields(token: &Value) -> std::collections::BTreeMap<String, String> {
    url::form_urlencoded::parse(token.as_str().unwrap().as_bytes())
        .into_owned()
        .collect()
}

#[tokio::test]
async fn an_azure_warehouse_vends_sas_tokens_for_a_tables_directory() {
    let Some(endpoint) = azurite() else { return };
    let env = Env::new().await;
    let root = env.root.clone();
    let prefix = format!("vend-{}", uuid::Uuid::new_v4().simple());
    let warehouse = json!({
        "name": "azure",
        "storage": {"type": "azure", "account": AZURITE_ACCOUNT, "container": "pangolin-test",
                    "prefix": prefix, "endpoint": endpoint, "sas": {"lifetime-seconds": 1800}},
        "credentials": {"type": "azure", "account-key": AZURITE_KEY},
    });
    let body = env.vend_catalog_on(warehouse).await;
    assert_eq!(body["credentials"]["fields-set"], json!(["account-key"]));
    assert!(!body.to_string().contains(AZURITE_KEY));

    // The server writes the table's metadata into the container, and the creator gets a
    // read-write token for the table's directory and nothing wider.
    let table = json!({"name": "t", "schema": {"type": "struct", "fields": [
        {"id": 1, "name": "id", "type": "long", "required": true}]}});
    let (status, created) = env
        .call(
            &root,
            Method::POST,
            "/v1/vend/namespaces/db/tables",
            Some(table),
            true,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let host = format!("{AZURITE_ACCOUNT}.dfs.core.windows.net");
    let location = created["metadata"]["location"].as_str().unwrap().to_owned();
    assert!(
        location.starts_with(&format!("abfss://pangolin-test@{host}/{prefix}/db/t-")),
        "{location}"
    );
    assert!(
        created["metadata-location"]
            .as_str()
            .unwrap()
            .starts_with(&location)
    );
    let token_key = format!("adls.sas-token.{host}");
    let fields = sas_fields(&created["config"][&token_key]);
    assert_eq!(fields["sr"], "d");
    assert_eq!(fields["sdd"], "3", "{fields:?}");
    assert_eq!(fields["sp"], "racwdl");
    assert_eq!(fields["sv"], "2022-11-02");
    assert!(
        !fields.contains_key("spr"),
        "an http:// emulator needs http"
    );
    let parse = |t: &str| t.parse::<jiff::Timestamp>().unwrap();
    let lifetime = parse(&fields["se"]).duration_since(parse(&fields["st"]));
    assert_eq!(lifetime.as_secs(), 1800 + 300);
    assert_eq!(created["storage-credentials"][0]["prefix"], location);
    assert_eq!(
        created["storage-credentials"][0]["config"][&token_key],
        created["config"][&token_key]
    );
    let expires: i64 = created["config"][format!("adls.sas-token-expires-at-ms.{host}")]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(expires / 1000, parse(&fields["se"]).as_second());
    assert!(!created.to_string().contains(AZURITE_KEY));

    // Reading it back goes through the container too; a reader's token reads and lists only.
    let reader = env.token("reader").await;
    let uri = "/v1/vend/namespaces/db/tables/t";
    let (status, body) = env.call(&reader, Method::GET, uri, None, true).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(sas_fields(&body["config"][&token_key])["sp"], "rl");
    let (_, body) = env.call(&reader, Method::GET, uri, None, false).await;
    assert!(body["config"].get(&token_key).is_none(), "{body}");

    let (_, audit) = env
        .call(
            &root,
            Method::GET,
            "/api/v1/audit?page-size=1000",
            None,
            false,
        )
        .await;
    let by_reader = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "table.vend-credentials" && e["principal"] == "user:acme/reader")
        .unwrap();
    assert_eq!(by_reader["details"]["access"], "read");
    assert_eq!(by_reader["details"]["prefixes"], location);
    assert!(!audit.to_string().contains("sig="));
}
