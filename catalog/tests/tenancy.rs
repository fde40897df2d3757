//! Tenancy records on every backend: tenants, warehouses with sealed credentials, catalogs.
//!
//! Each case runs on the memory and SQLite backends, and on PostgreSQL (a fresh schema per
//! test) when `PANGOLIN_TEST_POSTGRES_URL` is set and `PANGOLIN_SKIP_POSTGRES` is not `1`.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use pangolin_catalog::iceberg::{Secret, json_io};
use pangolin_catalog::tenancy::records::{catalog_key, warehouse_key};
use pangolin_catalog::tenancy::{
    CatalogKind, CreateCatalogError, CreateTenantError, CreateWarehouseError, Credentials,
    DefaultSetup, DeleteCatalogError, DeleteTenantError, DeleteWarehouseError, DownscopeSettings,
    GetCatalogError, GetTenantError, GetWarehouseError, Name, NewCatalog, OpenError, RuntimeError,
    SasSettings, SecretKey, StorageConfig, Tenancy, UpdateTenantError, UpdateWarehouseError,
    WarehouseSpec, WarehouseUpdate,
};
use pangolin_catalog::{Catalog, CommitMeta, RefSpec, Store};
use pangolin_records::{ExpectedVersion, RecordStore};
use pangolin_refs::{Expected, RefName, RefUpdate, Reference, Target, Transaction};
use pangolin_store::{ContentKey, ObjectCache, Timestamp};

const SECRET_ACCESS_KEY: &str = "wJalrXUtnFEMIexampleSECRET";
const SESSION_TOKEN: &str = "FwoGZXIvYXdzEXAMPLETOKEN";
const ACCESS_KEY_ID: &str = "AKIDEXAMPLE42";

/// A backend and whatever must live as long as it.
struct Fixture {
    store: Arc<dyn Store>,
    cache: Arc<ObjectCache>,
    _dir: Option<tempfile::TempDir>,
}

impl Fixture {
    fn tenancy(&self, key: &SecretKey) -> Tenancy {
        Tenancy::new(self.store.clone(), self.cache.clone(), key.clone())
    }

    fn records(&self) -> &dyn RecordStore {
        self.store.as_ref()
    }
}

fn fixture(store: Arc<dyn Store>, dir: Option<tempfile::TempDir>) -> Fixture {
    Fixture {
        store,
        cache: Arc::new(ObjectCache::new(16 << 20)),
        _dir: dir,
    }
}

async fn memory() -> Option<Fixture> {
    Some(fixture(
        Arc::new(pangolin_backend_memory::MemoryBackend::new()),
        None,
    ))
}

async fn sqlite() -> Option<Fixture> {
    let dir = tempfile::tempdir().unwrap();
    let backend = pangolin_backend_sqlite::SqliteBackend::open(dir.path().join("db.sqlite"))
        .await
        .unwrap();
    Some(fixture(Arc::new(backend), Some(dir)))
}

async fn postgres() -> Option<Fixture> {
    let url = std::env::var("PANGOLIN_TEST_POSTGRES_URL").ok()?;
    if std::env::var("PANGOLIN_SKIP_POSTGRES").is_ok_and(|v| v == "1") {
        return None;
    }
    let settings = pangolin_backend_postgres::PoolSettings {
        schema: Some(format!("t_{}", uuid::Uuid::new_v4().simple())),
        max_connections: 8,
        ..Default::default()
    };
    let backend = pangolin_backend_postgres::PostgresBackend::connect(&url, &settings)
        .await
        .unwrap();
    Some(fixture(Arc::new(backend), None))
}

/// One test per case and backend: `memory::case`, `sqlite::case`, `postgres::case`.
macro_rules! on_every_backend {
    ($($case:ident),* $(,)?) => {
        on_every_backend!(@backend memory, $($case),*);
        on_every_backend!(@backend sqlite, $($case),*);
        on_every_backend!(@backend postgres, $($case),*);
    };
    (@backend $backend:ident, $($case:ident),*) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    if let Some(fixture) = super::$backend().await {
                        super::$case(fixture).await;
                    }
                }
            )*
        }
    };
}

on_every_backend!(
    tenants_are_created_listed_in_pages_updated_and_deleted,
    invalid_names_are_refused_everywhere,
    warehouses_are_created_listed_in_pages_updated_and_deleted,
    catalogs_are_created_with_their_repository_listed_and_deleted,
    a_tenant_with_catalogs_or_warehouses_cannot_be_deleted,
    a_warehouse_with_a_bound_catalog_cannot_be_deleted,
    a_catalog_cannot_bind_a_warehouse_of_another_tenant,
    another_tenants_catalog_is_not_found,
    federated_catalogs_are_refused_and_each_storage_kind_is_checked,
    credentials_round_trip_through_encryption,
    stored_records_do_not_contain_the_secrets,
    a_ciphertext_copied_into_another_record_does_not_decrypt,
    a_wrong_server_key_fails_clearly,
    debug_output_and_the_public_view_show_no_secret,
    concurrent_updates_of_one_warehouse_have_exactly_one_winner,
    a_local_warehouse_reads_and_writes_through_file_io,
    a_non_empty_catalog_cannot_be_deleted,
    ensure_default_adopts_the_existing_catalog_and_is_idempotent,
    no_warehouse_outlives_a_tenant_deleted_while_it_is_created,
);

fn local(dir: &std::path::Path) -> WarehouseSpec {
    WarehouseSpec {
        storage: StorageConfig::Local {
            root: dir.to_str().unwrap().to_owned(),
        },
        credentials: None,
    }
}

fn s3(session_token: bool) -> WarehouseSpec {
    WarehouseSpec {
        storage: StorageConfig::S3 {
            bucket: "lake".into(),
            prefix: Some("warehouse".into()),
            region: Some("eu-west-1".into()),
            endpoint: Some("http://127.0.0.1:9000".into()),
            path_style: None,
            hand_out_credentials: false,
            sts: None,
            remote_signing: false,
        },
        credentials: Some(Credentials::S3 {
            access_key_id: ACCESS_KEY_ID.into(),
            secret_access_key: Secret::new(SECRET_ACCESS_KEY),
            session_token: session_token.then(|| Secret::new(SESSION_TOKEN)),
        }),
    }
}

fn new_catalog(warehouse: &str) -> NewCatalog {
    NewCatalog {
        warehouse: warehouse.into(),
        kind: CatalogKind::Local,
        properties: BTreeMap::from([("owner".into(), "data-team".into())]),
    }
}

/// A tenant `acme` with an S3 warehouse `lake` (credentials with a session token).
async fn acme(tenancy: &Tenancy) {
    tenancy.create_tenant("acme", None).await.unwrap();
    tenancy
        .create_warehouse("acme", "lake", s3(true))
        .await
        .unwrap();
}

/// A tenant `acme` with a local warehouse `files` in a temporary directory.
async fn acme_local(tenancy: &Tenancy) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    tenancy.create_tenant("acme", None).await.unwrap();
    tenancy
        .create_warehouse("acme", "files", local(dir.path()))
        .await
        .unwrap();
    dir
}

fn names<T>(
    items: &[pangolin_catalog::tenancy::Versioned<T>],
    name: impl Fn(&T) -> &Name,
) -> Vec<String> {
    items.iter().map(|i| name(&i.value).to_string()).collect()
}

async fn tenants_are_created_listed_in_pages_updated_and_deleted(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    for name in ["delta", "alpha", "echo", "charlie", "bravo"] {
        tenancy.create_tenant(name, None).await.unwrap();
    }
    let err = tenancy.create_tenant("alpha", None).await.unwrap_err();
    assert!(matches!(err, CreateTenantError::Exists(_)), "{err}");
    assert!(err.to_string().contains("already exists"), "{err}");

    let mut seen = Vec::new();
    let mut after: Option<Name> = None;
    loop {
        let page = tenancy
            .list_tenants(after.as_ref().map(Name::as_str), 2)
            .await
            .unwrap();
        assert!(page.items.len() <= 2);
        seen.extend(names(&page.items, |t| &t.name));
        match page.next_after {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ["alpha", "bravo", "charlie", "delta", "echo"]);

    let alpha = tenancy.tenant("alpha").await.unwrap();
    let updated = tenancy
        .update_tenant_description("alpha", alpha.version, Some("the first".into()))
        .await
        .unwrap();
    assert_eq!(updated.version, alpha.version + 1);
    assert_eq!(
        tenancy
            .tenant("alpha")
            .await
            .unwrap()
            .value
            .description
            .as_deref(),
        Some("the first")
    );
    let stale = tenancy
        .update_tenant_description("alpha", alpha.version, None)
        .await
        .unwrap_err();
    assert!(
        matches!(stale, UpdateTenantError::Conflict { .. }),
        "{stale}"
    );

    tenancy.delete_tenant("alpha").await.unwrap();
    let gone = tenancy.tenant("alpha").await.unwrap_err();
    assert!(matches!(gone, GetTenantError::NotFound(_)), "{gone}");
    let gone = tenancy.delete_tenant("alpha").await.unwrap_err();
    assert!(matches!(gone, DeleteTenantError::NotFound(_)), "{gone}");
}

async fn invalid_names_are_refused_everywhere(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let too_long = "a".repeat(64);
    for bad in ["", "a/b", "a.b", "sp ace", "ü", too_long.as_str()] {
        let err = tenancy.create_tenant(bad, None).await.unwrap_err();
        assert!(
            matches!(err, CreateTenantError::InvalidName(_)),
            "{bad}: {err}"
        );
        assert!(err.to_string().contains("not a valid tenant name"), "{err}");
    }
    tenancy.create_tenant(&"a".repeat(63), None).await.unwrap();
    let dir = acme_local(&tenancy).await;
    let err = tenancy
        .create_warehouse("acme", "no/slash", local(dir.path()))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("not a valid warehouse name"),
        "{err}"
    );
    let err = tenancy
        .create_catalog("acme", "no.dot", new_catalog("files"), "ana")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("not a valid catalog name"),
        "{err}"
    );
    assert!(
        tenancy
            .list_catalogs("acme", Some("x/y"), 10)
            .await
            .is_err()
    );
}

async fn warehouses_are_created_listed_in_pages_updated_and_deleted(f: Fixture) {
    let key = SecretKey::generate();
    let tenancy = f.tenancy(&key);
    let err = tenancy
        .create_warehouse("nobody", "lake", s3(false))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CreateWarehouseError::TenantNotFound(_)),
        "{err}"
    );
    acme(&tenancy).await;
    for name in ["w3", "w1", "w2"] {
        tenancy
            .create_warehouse("acme", name, s3(false))
            .await
            .unwrap();
    }
    let err = tenancy
        .create_warehouse("acme", "lake", s3(false))
        .await
        .unwrap_err();
    assert!(matches!(err, CreateWarehouseError::Exists { .. }), "{err}");

    let first = tenancy.list_warehouses("acme", None, 3).await.unwrap();
    assert_eq!(names(&first.items, |w| &w.name), ["lake", "w1", "w2"]);
    let next = first.next_after.unwrap();
    let second = tenancy
        .list_warehouses("acme", Some(next.as_str()), 3)
        .await
        .unwrap();
    assert_eq!(names(&second.items, |w| &w.name), ["w3"]);
    assert_eq!(second.next_after, None);

    let w1 = tenancy.warehouse("acme", "w1").await.unwrap();
    let update = WarehouseUpdate {
        credentials: Some(None),
        ..WarehouseUpdate::default()
    };
    let updated = tenancy
        .update_warehouse("acme", "w1", w1.version, update.clone())
        .await
        .unwrap();
    assert_eq!(updated.value.view().credentials, None);
    assert_eq!(updated.value.credentials(&key).unwrap(), None);
    let stale = tenancy
        .update_warehouse("acme", "w1", w1.version, update)
        .await
        .unwrap_err();
    assert!(
        matches!(stale, UpdateWarehouseError::Conflict { .. }),
        "{stale}"
    );

    // Credentials must fit the storage they are for.
    let dir = tempfile::tempdir().unwrap();
    let mismatch = WarehouseSpec {
        credentials: s3(false).credentials,
        ..local(dir.path())
    };
    let err = tenancy
        .create_warehouse("acme", "bad", mismatch)
        .await
        .unwrap_err();
    assert!(matches!(err, CreateWarehouseError::Invalid { .. }), "{err}");
    let relative = WarehouseSpec {
        storage: StorageConfig::Local {
            root: "relative/dir".into(),
        },
        credentials: None,
    };
    let err = tenancy
        .create_warehouse("acme", "bad", relative)
        .await
        .unwrap_err();
    assert!(matches!(err, CreateWarehouseError::Invalid { .. }), "{err}");

    tenancy.delete_warehouse("acme", "w1").await.unwrap();
    let gone = tenancy.warehouse("acme", "w1").await.unwrap_err();
    assert!(matches!(gone, GetWarehouseError::NotFound { .. }), "{gone}");
}

async fn catalogs_are_created_with_their_repository_listed_and_deleted(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let _dir = acme_local(&tenancy).await;
    for name in ["sales", "hr", "ops"] {
        let created = tenancy
            .create_catalog("acme", name, new_catalog("files"), "ana")
            .await
            .unwrap();
        assert_eq!(created.value.warehouse.as_str(), "files");
        let repo = Catalog::open(f.store.clone(), f.cache.clone(), "acme", name).unwrap();
        assert!(repo.exists().await.unwrap(), "{name} has its repository");
    }
    let err = tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap_err();
    assert!(matches!(err, CreateCatalogError::Exists { .. }), "{err}");
    assert!(err.to_string().contains("already exists"), "{err}");

    let page = tenancy.list_catalogs("acme", None, 2).await.unwrap();
    assert_eq!(names(&page.items, |c| &c.name), ["hr", "ops"]);
    let rest = tenancy
        .list_catalogs("acme", page.next_after.as_ref().map(Name::as_str), 2)
        .await
        .unwrap();
    assert_eq!(names(&rest.items, |c| &c.name), ["sales"]);
    assert_eq!(rest.next_after, None);

    let sales = tenancy.resolve("acme", "sales").await.unwrap();
    assert_eq!(sales.value.properties["owner"], "data-team");
    let opened = tenancy.open_catalog("acme", "sales").await.unwrap();
    assert_eq!(opened.name(), "sales");

    tenancy
        .delete_catalog("acme", "sales", "ana")
        .await
        .unwrap();
    let gone = tenancy.resolve("acme", "sales").await.unwrap_err();
    assert!(matches!(gone, GetCatalogError::NotFound { .. }), "{gone}");
    let repo = Catalog::open(f.store.clone(), f.cache.clone(), "acme", "sales").unwrap();
    assert!(
        !repo.exists().await.unwrap(),
        "the repository's main is gone"
    );
    // The name can be used again.
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
}

async fn a_tenant_with_catalogs_or_warehouses_cannot_be_deleted(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let _dir = acme_local(&tenancy).await;
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
    let err = tenancy.delete_tenant("acme").await.unwrap_err();
    assert!(matches!(err, DeleteTenantError::HasCatalogs(_)), "{err}");
    assert!(err.to_string().contains("still has catalogs"), "{err}");

    tenancy
        .delete_catalog("acme", "sales", "ana")
        .await
        .unwrap();
    let err = tenancy.delete_tenant("acme").await.unwrap_err();
    assert!(matches!(err, DeleteTenantError::HasWarehouses(_)), "{err}");

    tenancy.delete_warehouse("acme", "files").await.unwrap();
    tenancy.delete_tenant("acme").await.unwrap();
}

async fn a_warehouse_with_a_bound_catalog_cannot_be_deleted(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let dir = acme_local(&tenancy).await;
    tenancy
        .create_warehouse("acme", "spare", local(dir.path()))
        .await
        .unwrap();
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
    let err = tenancy.delete_warehouse("acme", "files").await.unwrap_err();
    match &err {
        DeleteWarehouseError::Bound { catalog, .. } => assert_eq!(catalog.as_str(), "sales"),
        other => panic!("expected Bound, got {other}"),
    }
    assert!(err.to_string().contains("catalog `sales`"), "{err}");
    tenancy.delete_warehouse("acme", "spare").await.unwrap();
}

async fn a_catalog_cannot_bind_a_warehouse_of_another_tenant(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let _dir = acme_local(&tenancy).await;
    tenancy.create_tenant("globex", None).await.unwrap();
    let err = tenancy
        .create_catalog("globex", "sales", new_catalog("files"), "ana")
        .await
        .unwrap_err();
    assert!(
        matches!(err, CreateCatalogError::WarehouseNotFound { .. }),
        "{err}"
    );
    assert!(
        tenancy.resolve("globex", "sales").await.is_err(),
        "no record left"
    );
    let repo = Catalog::open(f.store.clone(), f.cache.clone(), "globex", "sales").unwrap();
    assert!(!repo.exists().await.unwrap(), "no repository either");
    let err = tenancy
        .create_catalog("nobody", "sales", new_catalog("files"), "ana")
        .await
        .unwrap_err();
    assert!(
        matches!(err, CreateCatalogError::TenantNotFound(_)),
        "{err}"
    );
}

async fn another_tenants_catalog_is_not_found(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let _dir = acme_local(&tenancy).await;
    tenancy.create_tenant("globex", None).await.unwrap();
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
    let err = tenancy.resolve("globex", "sales").await.unwrap_err();
    assert!(matches!(err, GetCatalogError::NotFound { .. }), "{err}");
    assert!(
        !err.to_string().contains("acme"),
        "names no other tenant: {err}"
    );
    assert!(
        tenancy
            .list_catalogs("globex", None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

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
    let runtime = record.value.to_runtime(&key).unwrap();
    assert_eq!(runtime.root, "gs://lake/wh");
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
    let runtime = record.value.to_runtime(&key).unwrap();
    assert_eq!(runtime.root, "abfss://lake@acct.dfs.core.windows.net/wh");
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
    let runtime = record.value.to_runtime(&key).unwrap();
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
    assert!(err.value.to_runtime(&key).is_ok());
    tenancy
        .create_warehouse("acme", "temp", s3(true))
        .await
        .unwrap();
    let record = tenancy.warehouse("acme", "temp").await.unwrap().value;
    let err = record.to_runtime(&key).unwrap_err();
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
    let runtime = record.to_runtime(&key).unwrap();
    assert_eq!(runtime.root, "s3://lake/warehouse");
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
    let err = record.to_runtime(&key).unwrap_err();
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
    let err = record.to_runtime(&wrong).unwrap_err();
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

async fn concurrent_updates_of_one_warehouse_have_exactly_one_winner(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    acme(&tenancy).await;
    let version = tenancy.warehouse("acme", "lake").await.unwrap().version;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8 {
        let tenancy = tenancy.clone();
        tasks.spawn(async move {
            let update = WarehouseUpdate {
                storage: Some(StorageConfig::S3 {
                    bucket: format!("lake-{i}"),
                    prefix: None,
                    region: None,
                    endpoint: Some("http://127.0.0.1:9000".into()),
                    path_style: None,
                    hand_out_credentials: false,
                    sts: None,
                    remote_signing: false,
                }),
                credentials: None,
            };
            tenancy
                .update_warehouse("acme", "lake", version, update)
                .await
        });
    }
    let (mut won, mut lost) = (0, 0);
    while let Some(result) = tasks.join_next().await {
        match result.unwrap() {
            Ok(updated) => {
                won += 1;
                assert_eq!(updated.version, version + 1);
            }
            Err(UpdateWarehouseError::Conflict { expected, .. }) => {
                lost += 1;
                assert_eq!(expected, version);
            }
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
    assert_eq!((won, lost), (1, 7));
    assert_eq!(
        tenancy.warehouse("acme", "lake").await.unwrap().version,
        version + 1
    );
}

async fn a_local_warehouse_reads_and_writes_through_file_io(f: Fixture) {
    let key = SecretKey::generate();
    let tenancy = f.tenancy(&key);
    let dir = acme_local(&tenancy).await;
    let record = tenancy.warehouse("acme", "files").await.unwrap().value;
    let runtime = record.to_runtime(&key).unwrap();
    assert!(runtime.root.starts_with("file://"), "{}", runtime.root);
    assert!(runtime.client_config().is_empty());

    let location = format!("{}/sales/probe.json", runtime.root);
    let value = serde_json::json!({"written": "through the warehouse"});
    json_io::write_json(&runtime.io, &location, &value)
        .await
        .unwrap();
    let read: serde_json::Value = json_io::read_json(&runtime.io, &location).await.unwrap();
    assert_eq!(read, value);
    let on_disk = std::fs::read(dir.path().join("sales/probe.json")).unwrap();
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&on_disk).unwrap(),
        value
    );
}

fn key(path: &str) -> ContentKey {
    ContentKey::new(path.split('.')).unwrap()
}

async fn a_non_empty_catalog_cannot_be_deleted(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    let _dir = acme_local(&tenancy).await;
    tenancy
        .create_catalog("acme", "sales", new_catalog("files"), "ana")
        .await
        .unwrap();
    let catalog = tenancy.open_catalog("acme", "sales").await.unwrap();
    let meta = CommitMeta {
        principal: "ana".into(),
        message: "ns".into(),
        properties: BTreeMap::new(),
    };
    let main = catalog.default_branch();
    catalog
        .create_namespace(&main, &key("eu"), BTreeMap::new(), &meta)
        .await
        .unwrap();
    let err = tenancy
        .delete_catalog("acme", "sales", "ana")
        .await
        .unwrap_err();
    assert!(matches!(err, DeleteCatalogError::NotEmpty(_)), "{err}");
    assert!(err.to_string().contains("not empty"), "{err}");
    assert!(tenancy.resolve("acme", "sales").await.is_ok());

    catalog
        .drop_namespace(&main, &key("eu"), &meta)
        .await
        .unwrap();
    // Another branch may hold content of its own: refused too.
    let head = catalog
        .resolve(&RefSpec::parse("main").unwrap())
        .await
        .unwrap()
        .commit;
    let dev = Reference::branch(RefName::new("dev").unwrap());
    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: dev.clone(),
            expected: Expected::Absent,
            target: Target::Set(head),
        }],
        principal: "ana".into(),
        message: "branch".into(),
        time: Timestamp::now(),
    };
    f.store.transact(catalog.odb().repo(), tx).await.unwrap();
    let err = tenancy
        .delete_catalog("acme", "sales", "ana")
        .await
        .unwrap_err();
    assert!(
        matches!(err, DeleteCatalogError::HasOtherRefs { .. }),
        "{err}"
    );

    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: dev,
            expected: Expected::Equals(head),
            target: Target::Delete,
        }],
        principal: "ana".into(),
        message: "drop branch".into(),
        time: Timestamp::now(),
    };
    f.store.transact(catalog.odb().repo(), tx).await.unwrap();
    tenancy
        .delete_catalog("acme", "sales", "ana")
        .await
        .unwrap();
    let key = catalog_key(
        &Name::new("tenant", "acme").unwrap(),
        &Name::new("catalog", "sales").unwrap(),
    );
    assert!(f.records().get_record(&key).await.unwrap().is_none());
}

async fn ensure_default_adopts_the_existing_catalog_and_is_idempotent(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    // A server from before tenancy: the default catalog's repository, with history.
    let existing = Catalog::create(f.store.clone(), f.cache.clone(), "default", "main", "p")
        .await
        .unwrap();
    let meta = CommitMeta {
        principal: "ana".into(),
        message: "ns".into(),
        properties: BTreeMap::new(),
    };
    existing
        .create_namespace(
            &existing.default_branch(),
            &key("kept"),
            BTreeMap::new(),
            &meta,
        )
        .await
        .unwrap();
    let head = existing
        .resolve(&RefSpec::parse("main").unwrap())
        .await
        .unwrap()
        .commit;

    let dir = tempfile::tempdir().unwrap();
    let setup = DefaultSetup {
        tenant: "default".into(),
        warehouse: "default".into(),
        warehouse_spec: local(dir.path()),
        catalog: "main".into(),
        principal: "pangolin".into(),
    };
    let first = tenancy.ensure_default(setup.clone()).await.unwrap();
    assert!(first.created_tenant && first.created_warehouse && first.created_catalog);
    let again = tenancy.ensure_default(setup).await.unwrap();
    assert_eq!(again, Default::default(), "nothing to do the second time");

    let record = tenancy.resolve("default", "main").await.unwrap().value;
    assert_eq!(record.warehouse.as_str(), "default");
    let opened = tenancy.open_catalog("default", "main").await.unwrap();
    let now = opened
        .resolve(&RefSpec::parse("main").unwrap())
        .await
        .unwrap()
        .commit;
    assert_eq!(now, head, "the history was adopted, not replaced");

    // A record whose repository is missing (a create that stopped half way) is finished.
    let tx = Transaction {
        updates: vec![RefUpdate {
            reference: opened.default_branch(),
            expected: Expected::Equals(head),
            target: Target::Delete,
        }],
        principal: "ana".into(),
        message: "lose the repository".into(),
        time: Timestamp::now(),
    };
    f.store.transact(opened.odb().repo(), tx).await.unwrap();
    let setup = DefaultSetup {
        tenant: "default".into(),
        warehouse: "default".into(),
        warehouse_spec: local(dir.path()),
        catalog: "main".into(),
        principal: "pangolin".into(),
    };
    let repaired = tenancy.ensure_default(setup).await.unwrap();
    assert!(repaired.created_catalog && !repaired.created_tenant);
    assert!(opened.exists().await.unwrap());

    // Without a repository, ensure_default creates an empty catalog.
    let fresh = DefaultSetup {
        tenant: "other".into(),
        warehouse: "files".into(),
        warehouse_spec: local(dir.path()),
        catalog: "lake".into(),
        principal: "pangolin".into(),
    };
    tenancy.ensure_default(fresh).await.unwrap();
    let catalog = Catalog::open(f.store.clone(), f.cache.clone(), "other", "lake").unwrap();
    assert!(catalog.exists().await.unwrap());
}

async fn no_warehouse_outlives_a_tenant_deleted_while_it_is_created(f: Fixture) {
    let tenancy = f.tenancy(&SecretKey::generate());
    for round in 0..20 {
        let tenant = format!("t{round}");
        tenancy.create_tenant(&tenant, None).await.unwrap();
        let create = {
            let (tenancy, tenant) = (tenancy.clone(), tenant.clone());
            tokio::spawn(async move { tenancy.create_warehouse(&tenant, "w", s3(false)).await })
        };
        let delete = {
            let (tenancy, tenant) = (tenancy.clone(), tenant.clone());
            tokio::spawn(async move { tenancy.delete_tenant(&tenant).await })
        };
        let created = create.await.unwrap();
        let deleted = delete.await.unwrap();
        let tenant_left = tenancy.tenant(&tenant).await.is_ok();
        let warehouse_left = tenancy.warehouse(&tenant, "w").await.is_ok();
        assert!(
            tenant_left || !warehouse_left,
            "round {round}: a warehouse outlived its tenant ({created:?}, {deleted:?})"
        );
        assert_eq!(
            created.is_ok(),
            warehouse_left,
            "round {round}: {created:?}"
        );
        assert_eq!(deleted.is_ok(), !tenant_left, "round {round}: {deleted:?}");
    }
}
