//! The tenancy tests' backends and records: every case runs on the memory and SQLite
//! backends, and on PostgreSQL (a fresh schema per test) when `PANGOLIN_TEST_POSTGRES_URL` is set
//! and `PANGOLIN_SKIP_POSTGRES` is not `1`.

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_catalog::Store;
use pangolin_catalog::iceberg::Secret;
use pangolin_catalog::tenancy::{
    CatalogKind, Credentials, Name, NewCatalog, SecretKey, StorageConfig, Tenancy, WarehouseSpec,
};
use pangolin_records::RecordStore;
use pangolin_store::ObjectCache;

pub const SECRET_ACCESS_KEY: &str = "wJalrXUtnFEMIexampleSECRET";
pub const SESSION_TOKEN: &str = "FwoGZXIvYXdzEXAMPLETOKEN";
pub const ACCESS_KEY_ID: &str = "AKIDEXAMPLE42";

/// A backend and whatever must live as long as it.
pub struct Fixture {
    pub store: Arc<dyn Store>,
    pub cache: Arc<ObjectCache>,
    _dir: Option<tempfile::TempDir>,
}

impl Fixture {
    pub fn tenancy(&self, key: &SecretKey) -> Tenancy {
        Tenancy::new(self.store.clone(), self.cache.clone(), key.clone())
    }

    pub fn records(&self) -> &dyn RecordStore {
        self.store.as_ref()
    }
}

pub fn fixture(store: Arc<dyn Store>, dir: Option<tempfile::TempDir>) -> Fixture {
    Fixture {
        store,
        cache: Arc::new(ObjectCache::new(16 << 20)),
        _dir: dir,
    }
}

pub async fn memory() -> Option<Fixture> {
    Some(fixture(
        Arc::new(pangolin_backend_memory::MemoryBackend::new()),
        None,
    ))
}

pub async fn sqlite() -> Option<Fixture> {
    let dir = tempfile::tempdir().unwrap();
    let backend = pangolin_backend_sqlite::SqliteBackend::open(dir.path().join("db.sqlite"))
        .await
        .unwrap();
    Some(fixture(Arc::new(backend), Some(dir)))
}

pub async fn postgres() -> Option<Fixture> {
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
pub(crate) use on_every_backend;

pub fn local(dir: &std::path::Path) -> WarehouseSpec {
    WarehouseSpec {
        storage: StorageConfig::Local {
            root: dir.to_str().unwrap().to_owned(),
        },
        credentials: None,
    }
}

pub fn s3(session_token: bool) -> WarehouseSpec {
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

pub fn new_catalog(warehouse: &str) -> NewCatalog {
    NewCatalog {
        warehouse: warehouse.into(),
        kind: CatalogKind::Local,
        properties: BTreeMap::from([("owner".into(), "data-team".into())]),
    }
}

/// A tenant `acme` with an S3 warehouse `lake` (credentials with a session token).
pub async fn acme(tenancy: &Tenancy) {
    tenancy.create_tenant("acme", None).await.unwrap();
    tenancy
        .create_warehouse("acme", "lake", s3(true))
        .await
        .unwrap();
}

/// A tenant `acme` with a local warehouse `files` in a temporary directory.
pub async fn acme_local(tenancy: &Tenancy) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    tenancy.create_tenant("acme", None).await.unwrap();
    tenancy
        .create_warehouse("acme", "files", local(dir.path()))
        .await
        .unwrap();
    dir
}

pub fn names<T>(
    items: &[pangolin_catalog::tenancy::Versioned<T>],
    name: impl Fn(&T) -> &Name,
) -> Vec<String> {
    items.iter().map(|i| name(&i.value).to_string()).collect()
}
