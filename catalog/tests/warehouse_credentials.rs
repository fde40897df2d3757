//! Warehouse storage and credentials on every backend: what each kind of storage takes, and
//! credentials that are sealed, never stored or shown in the clear, and bound to their record.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;
use pangolin_catalog::iceberg::Secret;
use pangolin_catalog::tenancy::records::warehouse_key;
use pangolin_catalog::tenancy::{
    CatalogKind, CreateCatalogError, Credentials, DownscopeSettings, Name, NewCatalog, OpenError,
    RuntimeError, SasSettings, SecretKey, StorageConfig, WarehouseSpec,
};
use pangolin_records::ExpectedVersion;

use common::tenancy::*;

on_every_backend!(
    federated_catalogs_are_refused_and_each_storage_kind_is_checked,
    credentials_round_trip_through_encryption,
    stored_records_do_not_contain_the_secrets,
    a_ciphertext_copied_into_another_record_does_not_decrypt,
    a_wrong_server_key_fails_clearly,
    debug_output_and_the_public_view_show_no_secret,
);

async fn federated_catalogs_are_refused_and_each_storage_kind_is_checked(f: Fixture) {
    let key = SecretKey::generate();
    let tenancy = f.tenancy(&key);
    let _dir = acme_local(&tenancy).await;
    let federated = NewCatalog {
        kind: CatalogKind::Federated {
            uri: "https://other.example/iceberg".into(),
            properties: BTreeMap::new(),
        },
        ..new_catalog("files")
    };
    let err = tenancy
        .create_catalog("acme", "remote", federated, "ana")
        .await
        .unwrap_err();
    assert!(matches!(err, CreateCatalogError::Unsupported(_)), "{err}");
    assert!(err.to_string().contains("not supported yet"), "{err}");

    // GCS: served on `gs://` locations; downscoping needs the service account's key, and a
    // key must be one Google issues.
    let gcs = |downscope: Option<DownscopeSettings>, credentials| WarehouseSpec {
        storage: StorageConfig::Gcs {
            bucket: "lake".into(),
            prefix: Some("wh".into()),
            endpoint: None,
            downscope,
        },
        credentials,
    };
    let record = tenancy
        .create_warehouse("acme", "gcs", gcs(None, None))
        .await
        .unwrap();
    let runtime = record.value.to_runtime(&key, &Default::default()).unwrap();
    assert_eq!(runtime.root(), "gs://lake/wh");
    assert!(runtime.delegation().is_none());
    let downscope = || {
        Some(DownscopeSettings {
            token_exchange: None,
        })
    };
    let err = tenancy
        .create_warehouse("acme", "gcs-vend", gcs(downscope(), None))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("service account's key"), "{err}");
    let not_a_key = Some(Credentials::Gcs {
        service_account_key: Secret::new(r#"{"client_email": "a", "private_key": "hidden"}"#),
    });
    let err = tenancy
        .create_warehouse("acme", "gcs-bad-key", gcs(None, not_a_key))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("JSON file Google issues"), "{err}");
    assert!(!err.to_string().contains("hidden"), "{err}");
    let bucket = WarehouseSpec {
        storage: StorageConfig::Gcs {
            bucket: "Lake".into(),
            prefix: None,
            endpoint: None,
            downscope: None,
        },
        credentials: None,
    };
    let err = tenancy
        .create_warehouse("acme", "gcs-upper", bucket)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("GCS bucket name"), "{err}");
    tenancy
        .create_catalog("acme", "gcs", new_catalog("gcs"), "ana")
        .await
        .unwrap();

    // Azure: served on `abfss://` locations; SAS vending needs the account key.
    let azure = |sas: Option<SasSettings>, credentials| WarehouseSpec {
        storage: StorageConfig::Azure {
            account: "acct".into(),
            container: "lake".into(),
            prefix: Some("wh".into()),
            endpoint: None,
            sas,
        },
        credentials,
    };
    let record = tenancy
        .create_warehouse("acme", "azure", azure(None, None))
        .await
        .unwrap();
    let runtime = record.value.to_runtime(&key, &Default::default()).unwrap();
    assert_eq!(runtime.root(), "abfss://lake@acct.dfs.core.windows.net/wh");
    assert!(runtime.delegation().is_none());
    let sas = || {
        Some(SasSettings {
            lifetime_seconds: 900,
        })
    };
    let err = tenancy
        .create_warehouse("acme", "azure-sas", azure(sas(), None))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("needs the account key"), "{err}");
    let key_b64 =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
    let credentials = Some(Credentials::Azure {
        account_key: Secret::new(key_b64),
    });
    let record = tenancy
        .create_warehouse("acme", "azure-sas", azure(sas(), credentials))
        .await
        .unwrap();
    assert_eq!(
        record.value.view().credentials.unwrap().fields_set,
        ["account-key"]
    );
    let runtime = record.value.to_runtime(&key, &Default::default()).unwrap();
    assert!(runtime.delegation().is_some_and(|d| d.sas.is_some()));
    let err = tenancy
        .create_warehouse(
            "acme",
            "azure-s3-keys",
            azure(None, Some(s3(false).credentials.unwrap())),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("do not fit"), "{err}");

    // The S3 client takes no session token yet: refused rather than silently dropped.
    let err = tenancy.warehouse("acme", "files").await.unwrap();
    assert!(err.value.to_runtime(&key, &Default::default()).is_ok());
    tenancy
        .create_warehouse("acme", "temp", s3(true))
        .await
        .unwrap();
    let record = tenancy.warehouse("acme", "temp").await.unwrap().value;
    let err = record.to_runtime(&key, &Default::default()).unwrap_err();
    assert!(err.to_string().contains("session token"), "{err}");
    assert!(!err.to_string().contains(SESSION_TOKEN), "{err}");
}

async fn credentials_round_trip_through_encryption(f: Fixture) {
    let key = SecretKey::generate();
    let tenancy = f.tenancy(&key);
    acme(&tenancy).await;
    let record = tenancy.warehouse("acme", "lake").await.unwrap().value;
    let Some(Credentials::S3 {
        access_key_id,
        secret_access_key,
        session_token,
    }) = record.credentials(&key).unwrap()
    else {
        panic!("the credentials come back");
    };
    assert_eq!(access_key_id, ACCESS_KEY_ID);
    assert_eq!(secret_access_key.expose(), SECRET_ACCESS_KEY);
    assert_eq!(session_token.unwrap().expose(), SESSION_TOKEN);

    // Without a session token, the runtime warehouse reaches the bucket with the keys.
    tenancy
        .create_warehouse("acme", "keys", s3(false))
        .await
        .unwrap();
    let record = tenancy.warehouse("acme", "keys").await.unwrap().value;
    let runtime = record.to_runtime(&key, &Default::default()).unwrap();
    assert_eq!(runtime.root(), "s3://lake/warehouse");
    let s3 = &runtime.io.options().s3;
    assert_eq!(s3.access_key_id.as_deref(), Some(ACCESS_KEY_ID));
    assert_eq!(
        s3.secret_access_key.as_ref().map(Secret::expose),
        Some(SECRET_ACCESS_KEY)
    );
    assert_eq!(
        runtime.client_config()["s3.endpoint"],
        "http://127.0.0.1:9000"
    );
    assert!(!runtime.client_config().contains_key("s3.secret-access-key"));
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

async fn stored_records_do_not_contain_the_secrets(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    acme(&tenancy).await;
    let key = warehouse_key(
        &Name::new("tenant", "acme").unwrap(),
        &Name::new("warehouse", "lake").unwrap(),
    );
    let raw = f.records().get_record(&key).await.unwrap().unwrap();
    for secret in [SECRET_ACCESS_KEY, SESSION_TOKEN, ACCESS_KEY_ID] {
        assert!(
            !contains(&raw.value, secret),
            "{secret} is stored in the clear"
        );
    }
    let text = String::from_utf8(raw.value.to_vec()).unwrap();
    assert!(text.contains("chacha20poly1305"), "{text}");
    assert!(
        text.contains("secret-access-key"),
        "which fields are set: {text}"
    );
}

async fn a_ciphertext_copied_into_another_record_does_not_decrypt(f: Fixture) {
    let key = SecretKey::generate();
    let tenancy = f.tenancy(&key);
    acme(&tenancy).await;
    tenancy
        .create_warehouse("acme", "other", s3(false))
        .await
        .unwrap();
    let acme = Name::new("tenant", "acme").unwrap();
    let from = warehouse_key(&acme, &Name::new("warehouse", "lake").unwrap());
    let to = warehouse_key(&acme, &Name::new("warehouse", "other").unwrap());
    let source = f.records().get_record(&from).await.unwrap().unwrap();
    let target = f.records().get_record(&to).await.unwrap().unwrap();
    let source: serde_json::Value = serde_json::from_slice(&source.value).unwrap();
    let mut moved: serde_json::Value = serde_json::from_slice(&target.value).unwrap();
    moved["credentials"] = source["credentials"].clone();
    f.records()
        .put_record(
            &to,
            ExpectedVersion::Is(target.version),
            Bytes::from(serde_json::to_vec(&moved).unwrap()),
        )
        .await
        .unwrap();

    let record = tenancy.warehouse("acme", "other").await.unwrap().value;
    assert_eq!(
        record.credentials(&key).unwrap_err(),
        OpenError::WrongKeyOrTampered
    );
    let err = record.to_runtime(&key, &Default::default()).unwrap_err();
    assert!(matches!(err, RuntimeError::Credentials { .. }), "{err}");
    // The original still decrypts where it belongs.
    let original = tenancy.warehouse("acme", "lake").await.unwrap().value;
    assert!(original.credentials(&key).unwrap().is_some());
}

async fn a_wrong_server_key_fails_clearly(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    acme(&tenancy).await;
    let wrong = SecretKey::generate();
    let record = f
        .tenancy(&wrong)
        .warehouse("acme", "lake")
        .await
        .unwrap()
        .value;
    let err = record.credentials(&wrong).unwrap_err();
    assert_eq!(err, OpenError::WrongKeyOrTampered);
    assert!(err.to_string().contains("server key"), "{err}");
    let err = record.to_runtime(&wrong, &Default::default()).unwrap_err();
    assert!(err.to_string().contains("server key"), "{err}");
    for secret in [SECRET_ACCESS_KEY, SESSION_TOKEN, ACCESS_KEY_ID] {
        assert!(!err.to_string().contains(secret), "{err}");
    }
}

async fn debug_output_and_the_public_view_show_no_secret(f: Fixture) {
    let key = SecretKey::generate();
    let tenancy = f.tenancy(&key);
    acme(&tenancy).await;
    let record = tenancy.warehouse("acme", "lake").await.unwrap();
    let view = record.value.view();
    let credentials = record.value.credentials(&key).unwrap();
    let shown = [
        format!("{record:?}"),
        format!("{view:?}"),
        serde_json::to_string(&view).unwrap(),
        format!("{credentials:?}"),
        format!("{:?}", s3(true)),
        format!("{tenancy:?}"),
        format!("{key:?}"),
    ];
    for text in &shown {
        let key_hex = key.reveal_hex();
        for secret in [
            SECRET_ACCESS_KEY,
            SESSION_TOKEN,
            ACCESS_KEY_ID,
            key_hex.as_str(),
        ] {
            assert!(!text.contains(secret), "{text}");
        }
    }
    let json = serde_json::to_value(&view).unwrap();
    assert!(!json.to_string().contains(ACCESS_KEY_ID), "{json}");
    assert_eq!(
        json["credentials"]["fields-set"],
        serde_json::json!(["access-key-id", "secret-access-key", "session-token"])
    );
    assert!(json["credentials"].get("sealed").is_none(), "{json}");
}
