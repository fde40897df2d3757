//! What the identity tests share: the backends they run on, a hand-moved clock, and a fast
//! configuration (bcrypt cost 4).
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;

use pangolin_backend_memory::MemoryBackend;
use pangolin_backend_postgres::{PoolSettings, PostgresBackend};
use pangolin_backend_sqlite::SqliteBackend;
use pangolin_identity::{
    Identity, IdentityConfig, ManualClock, Password, PrincipalName, Scope, TenantName,
};
use pangolin_records::RecordStore;
use pangolin_store::Timestamp;
use tempfile::TempDir;

/// 2026-01-01T00:00:00Z, a start far from the epoch so subtraction never goes negative.
pub(crate) const START: Timestamp = Timestamp::from_millis(1_767_225_600_000);

#[derive(Debug, Clone, Copy)]
pub(crate) enum Backend {
    Memory,
    Sqlite,
    Postgres,
}

/// One test's store and clock. Open as many `Identity`s over them as a test needs servers.
pub(crate) struct Env {
    pub(crate) store: Arc<dyn RecordStore>,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) identity: Identity,
    _dir: Option<TempDir>,
}

fn postgres_skipped() -> bool {
    std::env::var_os("PANGOLIN_SKIP_POSTGRES").is_some()
}

fn postgres_url() -> String {
    std::env::var("PANGOLIN_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

pub(crate) fn config() -> IdentityConfig {
    IdentityConfig {
        bcrypt_cost: 4,
        ..IdentityConfig::default()
    }
}

impl Env {
    /// A fresh store on `backend`, or `None` when PostgreSQL is skipped.
    pub(crate) async fn new(backend: Backend) -> Option<Self> {
        Self::with_config(backend, config()).await
    }

    pub(crate) async fn with_config(backend: Backend, config: IdentityConfig) -> Option<Self> {
        let (store, dir) = bare_store(backend).await?;
        let clock = Arc::new(ManualClock::new(START));
        let identity = Identity::open(store.clone(), config, clock.clone())
            .await
            .unwrap();
        Some(Self {
            store,
            clock,
            identity,
            _dir: dir,
        })
    }

    /// Another server over the same store and clock.
    pub(crate) async fn server(&self, config: IdentityConfig) -> Identity {
        Identity::open(self.store.clone(), config, self.clock.clone())
            .await
            .unwrap()
    }
}

/// A fresh, empty store on `backend` (and the directory that must outlive it), or `None`
/// when PostgreSQL is skipped.
pub(crate) async fn bare_store(
    backend: Backend,
) -> Option<(Arc<dyn RecordStore>, Option<TempDir>)> {
    Some(match backend {
        Backend::Memory => (Arc::new(MemoryBackend::new()), None),
        Backend::Sqlite => {
            let dir = tempfile::tempdir().unwrap();
            let store = SqliteBackend::open(dir.path().join("identity.db"))
                .await
                .unwrap();
            (Arc::new(store), Some(dir))
        }
        Backend::Postgres => {
            if postgres_skipped() {
                eprintln!("skipped on PostgreSQL: PANGOLIN_SKIP_POSTGRES is set");
                return None;
            }
            let settings = PoolSettings {
                schema: Some(format!("t_{}", uuid::Uuid::new_v4().simple())),
                max_connections: 4,
                ..PoolSettings::default()
            };
            let store = PostgresBackend::connect(&postgres_url(), &settings)
                .await
                .unwrap();
            (Arc::new(store), None)
        }
    })
}

pub(crate) fn tenant(name: &str) -> TenantName {
    TenantName::new(name).unwrap()
}

pub(crate) fn scope(name: &str) -> Scope {
    Scope::tenant(name).unwrap()
}

pub(crate) fn name(name: &str) -> PrincipalName {
    PrincipalName::new(name).unwrap()
}

pub(crate) fn password(p: &str) -> Password {
    Password::new(p)
}

/// One `#[tokio::test]` per case and backend: `memory::case`, `sqlite::case`, `postgres::case`.
/// Each case is `async fn case(env: Env)`.
#[macro_export]
macro_rules! on_every_backend {
    ($($case:ident),* $(,)?) => {
        $crate::on_every_backend!(@backend memory, Memory; $($case),*);
        $crate::on_every_backend!(@backend sqlite, Sqlite; $($case),*);
        $crate::on_every_backend!(@backend postgres, Postgres; $($case),*);
    };
    (@backend $module:ident, $variant:ident; $($case:ident),*) => {
        mod $module {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let backend = $crate::common::Backend::$variant;
                    if let Some(env) = $crate::common::Env::new(backend).await {
                        super::$case(env).await;
                    }
                }
            )*
        }
    };
}
