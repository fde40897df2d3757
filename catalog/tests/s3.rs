//! Table files in an S3 bucket through `FileIo`, against the S3 server that
//! `PANGOLIN_TEST_S3_ENDPOINT` names (`scripts/test` starts one, moto, and creates the bucket
//! `PANGOLIN_TEST_S3_BUCKET`). Without it the tests say so and pass, except in CI, where they fail.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_backend_memory::MemoryBackend;
use pangolin_catalog::iceberg::io::IoError;
use pangolin_catalog::iceberg::{
    FileIo, NewTable, S3Settings, Secret, StorageOptions, TableMetadata, new_table_metadata,
};
use pangolin_catalog::{Catalog, CommitMeta, Warehouse};
use pangolin_refs::{RefName, Reference};
use pangolin_store::{ContentKey, ObjectCache};

/// The test server's settings and a fresh prefix in its bucket, or `None` (after saying why)
/// when there is no server.
fn bucket() -> Option<(StorageOptions, String)> {
    let env = |name: &str, default: &str| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.to_owned())
    };
    let endpoint = env("PANGOLIN_TEST_S3_ENDPOINT", "");
    if endpoint.is_empty() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI needs an S3 server: set PANGOLIN_TEST_S3_ENDPOINT (scripts/test starts one)"
        );
        eprintln!(
            "skipped: PANGOLIN_TEST_S3_ENDPOINT is not set (scripts/test starts an S3 server)"
        );
        return None;
    }
    let s3 = S3Settings {
        endpoint: Some(endpoint),
        region: Some(env("PANGOLIN_TEST_S3_REGION", "us-east-1")),
        access_key_id: Some(env("PANGOLIN_TEST_S3_ACCESS_KEY_ID", "pangolin-test-key")),
        secret_access_key: Some(Secret::new(env(
            "PANGOLIN_TEST_S3_SECRET_ACCESS_KEY",
            "pangolin-test-secret-5f3a9c",
        ))),
        ..S3Settings::default()
    };
    let prefix = format!(
        "s3://{}/rust-{}",
        env("PANGOLIN_TEST_S3_BUCKET", "pangolin-test"),
        uuid::Uuid::new_v4().simple()
    );
    Some((
        StorageOptions {
            s3,
            ..StorageOptions::default()
        },
        prefix,
    ))
}

fn new_table(location: &str) -> NewTable {
    NewTable {
        location: location.to_owned(),
        schema: serde_json::from_value(serde_json::json!({
            "type": "struct",
            "schema-id": 0,
            "fields": [{"id": 1, "name": "id", "required": true, "type": "long"}]
        }))
        .unwrap(),
        partition_spec: None,
        sort_order: None,
        properties: BTreeMap::new(),
    }
}

fn metadata(location: &str) -> Arc<TableMetadata> {
    Arc::new(new_table_metadata(new_table(location), 1_700_000_000_000).unwrap())
}

#[tokio::test]
async fn metadata_files_round_trip_through_a_bucket_and_are_never_overwritten() {
    let Some((options, prefix)) = bucket() else {
        return;
    };
    let table = format!("{prefix}/db/events");
    let file = format!("{table}/metadata/00000-a.metadata.json");
    let io = FileIo::with_options(16 << 20, options.clone());
    io.write_metadata(&file, metadata(&table)).await.unwrap();

    // Another server (no cache) reads what this one wrote.
    let other = FileIo::with_options(16 << 20, options.clone());
    let read = other.read_metadata(&file).await.unwrap();
    assert_eq!(read.location, table);

    let again = io
        .write_metadata(&file, metadata(&table))
        .await
        .unwrap_err();
    assert!(matches!(again, IoError::Store { .. }), "{again}");

    assert_eq!(io.delete_under(&table).await.unwrap(), 1);
    let gone = FileIo::with_options(16 << 20, options)
        .read_metadata(&file)
        .await
        .unwrap_err();
    assert!(matches!(gone, IoError::NotFound(_)), "{gone}");
}

#[tokio::test]
async fn a_table_created_in_a_bucket_is_purged_from_it() {
    let Some((options, prefix)) = bucket() else {
        return;
    };
    let io = Arc::new(FileIo::with_options(16 << 20, options.clone()));
    let catalog = Catalog::create(
        Arc::new(MemoryBackend::new()),
        Arc::new(ObjectCache::new(16 << 20)),
        "acme",
        "lake",
        "ana",
    )
    .await
    .unwrap()
    .with_warehouse(Warehouse::new(prefix.clone(), io));
    let main = Reference::branch(RefName::new("main").unwrap());
    let key = |path: &str| ContentKey::new(path.split('.')).unwrap();
    let meta = |message: &str| CommitMeta {
        principal: "ana".into(),
        message: message.into(),
        properties: BTreeMap::new(),
    };
    catalog
        .create_namespace(&main, &key("db"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    let (_, created) = catalog
        .create_table(&main, &key("db.events"), new_table(""), &meta("create"))
        .await
        .unwrap();
    let file = created.metadata_location.unwrap();
    assert!(file.starts_with(&format!("{prefix}/db/events-")), "{file}");
    let fresh = || FileIo::with_options(16 << 20, options.clone());
    fresh().read_metadata(&file).await.unwrap();

    catalog
        .drop_table(&main, &key("db.events"), true, &meta("purge"))
        .await
        .unwrap();
    let gone = fresh().read_metadata(&file).await.unwrap_err();
    assert!(matches!(gone, IoError::NotFound(_)), "{gone}");
}
