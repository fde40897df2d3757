//! Remote signing through the real, secured router: what is signed, for whom, at which
//! reference, and what is refused. The tables live on the S3 server `scripts/test` starts.
#![allow(clippy::unwrap_used)]

mod common;

use axum::http::{Method, StatusCode};
use common::delegation::{Env, s3, s3_keys};
use common::secured::send_as;
use serde_json::json;

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
    let body = env.vend_catalog_on(warehouse).await;
    assert_eq!(body["storage"]["remote-signing"], true);
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

    // A table staged and not committed yet has its files written before the commit: they
    // are signed where the staged create put them.
    let staged = json!({"name": "staged", "schema": schema, "stage-create": true}).to_string();
    let uri = "/v1/vend/namespaces/db/tables";
    let (status, body) =
        send_as(&env.app, &writer, Method::POST, uri, Some(staged), &signing).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let staged_uri = format!(
        "/{}",
        body["config"]["s3.signer.endpoint"].as_str().unwrap()
    );
    let location = body["metadata"]["location"].as_str().unwrap();
    let put = json!({"region": "us-east-1", "method": "PUT", "headers": {},
                     "uri": format!("{endpoint}/{}/data/0.parquet", location.strip_prefix("s3://").unwrap())});
    let (status, body) = env
        .call(&writer, Method::POST, &staged_uri, Some(put.clone()), false)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = env
        .call(&reader, Method::POST, &staged_uri, Some(put), false)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let ghost = json!({"region": "us-east-1", "method": "GET", "headers": {},
                       "uri": format!("{endpoint}/{inside}")});
    let (status, _) = env
        .call(
            &writer,
            Method::POST,
            "/v1/vend/namespaces/db/tables/ghost/sign",
            Some(ghost),
            false,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

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
