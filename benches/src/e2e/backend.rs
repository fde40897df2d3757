//! The databases a server runs on. Each server gets a fresh instance: a temporary data
//! directory (the warehouse, and the SQLite file or RocksDB directory in it) and, for
//! PostgreSQL, a fresh schema that is dropped afterwards. The bulk loader opens the same
//! database through the catalog layer while no server runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, bail};
use pangolin_backend_postgres::{PoolSettings, PostgresBackend};
use pangolin_backend_sqlite::SqliteBackend;
use pangolin_catalog::Store;
use serde::Serialize;
use tempfile::TempDir;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// The embedded default: `<data-dir>/pangolin.db`.
    Sqlite,
    /// `--database-url` with a fresh `--database-schema`.
    Postgres,
    /// `--database-url rocksdb://<data-dir>/rocksdb`; needs both this binary and the server
    /// built with the `rocksdb` feature.
    Rocksdb,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
            Self::Rocksdb => "rocksdb",
        }
    }
}

/// One server's database and data directory.
#[derive(Debug)]
pub struct Instance {
    pub kind: BackendKind,
    dir: TempDir,
    postgres: Option<(String, String)>,
    /// Whether [`dispose`](Self::dispose) leaves the data directory in place.
    keep: bool,
}

/// A database opened by the loader; closed before a server opens it.
#[derive(Debug)]
pub enum Opened {
    Sqlite(Arc<SqliteBackend>),
    Postgres(Arc<PostgresBackend>),
    #[cfg(feature = "rocksdb")]
    Rocksdb(Arc<pangolin_backend_rocksdb::RocksBackend>),
}

impl Opened {
    pub fn store(&self) -> Arc<dyn Store> {
        match self {
            Self::Sqlite(s) => s.clone(),
            Self::Postgres(s) => s.clone(),
            #[cfg(feature = "rocksdb")]
            Self::Rocksdb(s) => s.clone(),
        }
    }

    /// Closes the connections (SQLite, PostgreSQL) or the database (RocksDB, whose lock the
    /// server needs). Every other handle on the store must be gone.
    pub async fn close(self) {
        match self {
            Self::Sqlite(s) => s.close().await,
            Self::Postgres(s) => s.pool().close().await,
            #[cfg(feature = "rocksdb")]
            Self::Rocksdb(s) => drop(s),
        }
    }
}

static SCHEMAS: AtomicU64 = AtomicU64::new(0);

impl Instance {
    /// Why `kind` cannot be measured by this build, if it cannot.
    pub fn unavailable(kind: BackendKind) -> Option<&'static str> {
        match kind {
            BackendKind::Rocksdb if !cfg!(feature = "rocksdb") => Some(
                "this binary was built without the `rocksdb` feature \
                 (cargo run --release -p pangolin-benches --features rocksdb --bin e2e)",
            ),
            _ => None,
        }
    }

    /// A fresh database of `kind`; with `keep`, its data directory outlives it.
    pub fn create(kind: BackendKind, postgres_url: &str, keep: bool) -> anyhow::Result<Self> {
        if let Some(why) = Self::unavailable(kind) {
            bail!("{why}");
        }
        let dir = tempfile::Builder::new()
            .prefix("pangolin-e2e-")
            .tempdir()
            .context("creating a data directory")?;
        let postgres = (kind == BackendKind::Postgres).then(|| {
            let n = SCHEMAS.fetch_add(1, Ordering::Relaxed);
            let schema = format!("bench_e2e_{}_{n}", std::process::id());
            (postgres_url.to_owned(), schema)
        });
        Ok(Self {
            kind,
            dir,
            postgres,
            keep,
        })
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    fn rocksdb_dir(&self) -> PathBuf {
        self.dir.path().join("rocksdb")
    }

    /// The flags that point `pangolin serve` at this database (besides `--data-dir`).
    pub fn server_args(&self) -> Vec<String> {
        match (self.kind, &self.postgres) {
            (BackendKind::Postgres, Some((url, schema))) => vec![
                "--database-url".to_owned(),
                url.clone(),
                "--database-schema".to_owned(),
                schema.clone(),
            ],
            (BackendKind::Rocksdb, _) => vec![
                "--database-url".to_owned(),
                format!("rocksdb://{}", self.rocksdb_dir().display()),
            ],
            _ => Vec::new(),
        }
    }

    /// Opens the database as the server will (creating it the first time).
    pub async fn open(&self) -> anyhow::Result<Opened> {
        Ok(match (self.kind, &self.postgres) {
            (BackendKind::Sqlite, _) => {
                let path = self.dir.path().join("pangolin.db");
                Opened::Sqlite(Arc::new(
                    SqliteBackend::open(&path)
                        .await
                        .with_context(|| format!("opening {}", path.display()))?,
                ))
            }
            (BackendKind::Postgres, Some((url, schema))) => {
                let settings = PoolSettings {
                    schema: Some(schema.clone()),
                    ..PoolSettings::default()
                };
                Opened::Postgres(Arc::new(
                    PostgresBackend::connect(url, &settings)
                        .await
                        .with_context(|| format!("connecting to PostgreSQL at {url}"))?,
                ))
            }
            #[cfg(feature = "rocksdb")]
            (BackendKind::Rocksdb, _) => Opened::Rocksdb(Arc::new(
                pangolin_backend_rocksdb::RocksBackend::open(self.rocksdb_dir())
                    .context("opening RocksDB")?,
            )),
            (kind, _) => bail!("{} is not available in this build", kind.name()),
        })
    }

    /// Drops the PostgreSQL schema; the data directory goes with `self` unless kept.
    pub async fn dispose(self) {
        if self.keep {
            eprintln!("   kept the data directory {}", self.dir.keep().display());
        }
        if let Some((url, schema)) = &self.postgres {
            let settings = PoolSettings {
                schema: Some(schema.clone()),
                max_connections: 1,
                ..PoolSettings::default()
            };
            match PostgresBackend::connect(url, &settings).await {
                Ok(db) => {
                    let drop = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
                    if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(drop))
                        .execute(db.pool())
                        .await
                    {
                        eprintln!("could not drop the schema {schema}: {e}");
                    }
                    db.pool().close().await;
                }
                Err(e) => eprintln!("could not drop the schema {schema}: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_kept_data_directory_outlives_its_instance_and_others_do_not() {
        let kept = Instance::create(BackendKind::Sqlite, "", true).unwrap();
        let kept_dir = kept.data_dir().to_owned();
        std::fs::write(kept_dir.join("file"), b"x").unwrap();
        kept.dispose().await;
        assert!(kept_dir.join("file").exists());
        std::fs::remove_dir_all(&kept_dir).unwrap();

        let gone = Instance::create(BackendKind::Sqlite, "", false).unwrap();
        let gone_dir = gone.data_dir().to_owned();
        gone.dispose().await;
        assert!(!gone_dir.exists());
    }
}
