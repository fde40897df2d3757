//! The PostgreSQL backend: the production store, shared by several stateless Pangolin servers.
//!
//! Ref moves are compare-and-swaps in SQL: rows are locked in a fixed order, checked, then
//! changed with `UPDATE ... WHERE target = <seen>` and the rows affected checked, all in one
//! database transaction with the ref-log entries. Deadlocks and serialization failures are
//! retried a few times and otherwise reported as retryable conflicts; a lost race on a ref is
//! an out-of-date error carrying the value that won. Audit appends take a transaction-scoped
//! advisory lock, so the chain has one head across all servers.

mod audit;
mod errors;
mod objects;
mod prune;
mod records;
mod refs;

use std::str::FromStr;
use std::time::Duration;

use pangolin_store::{BackendError, BackendErrorKind};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

pub(crate) use errors::classify;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Pool settings; the defaults suit one server process on a small machine.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    pub max_connections: u32,
    pub min_connections: u32,
    /// How long a request waits for a free connection before failing as unavailable.
    pub acquire_timeout: Duration,
    /// Connections idle this long are closed.
    pub idle_timeout: Duration,
    /// A PostgreSQL schema to use instead of `public` (created if missing): lets tests and
    /// several deployments share one database.
    pub schema: Option<String>,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            max_connections: 16,
            min_connections: 0,
            acquire_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(600),
            schema: None,
        }
    }
}

/// Objects, refs, records and the audit log in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresBackend {
    pool: PgPool,
}

impl PostgresBackend {
    /// Connects to `url` (`postgres://user@host:port/database`) and brings the schema up to
    /// date.
    pub async fn connect(url: &str, settings: &PoolSettings) -> Result<Self, BackendError> {
        let mut options = PgConnectOptions::from_str(url).map_err(|e| classify("connect", e))?;
        if let Some(schema) = &settings.schema {
            validate_schema_name(schema)?;
            create_schema(options.clone(), schema).await?;
            options = options.options([("search_path", schema.as_str())]);
        }
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections)
            .min_connections(settings.min_connections)
            .acquire_timeout(settings.acquire_timeout)
            .idle_timeout(settings.idle_timeout)
            .connect_with(options)
            .await
            .map_err(|e| classify("connect", e))?;
        MIGRATOR.run(&pool).await.map_err(|e| {
            BackendError::new(
                BackendErrorKind::Other,
                "migrate",
                "applying the schema migrations failed",
            )
            .with_source(e)
        })?;
        Ok(Self { pool })
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

fn validate_schema_name(schema: &str) -> Result<(), BackendError> {
    let valid = !schema.is_empty()
        && schema.len() <= 63
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !schema.starts_with(|c: char| c.is_ascii_digit());
    if valid {
        Ok(())
    } else {
        Err(BackendError::new(
            BackendErrorKind::Other,
            "connect",
            format!(
                "schema name `{schema}` must be 1 to 63 lowercase letters, digits or `_`, not starting with a digit"
            ),
        ))
    }
}

async fn create_schema(options: PgConnectOptions, schema: &str) -> Result<(), BackendError> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect_with(&options)
        .await
        .map_err(|e| classify("connect", e))?;
    // The name was validated above: only lowercase letters, digits and underscores.
    let sql = format!("CREATE SCHEMA IF NOT EXISTS {schema}");
    let result = sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(&mut conn)
        .await;
    // Two servers creating the same schema at once race on the catalog; the loser's schema
    // exists all the same.
    if let Err(e) = result {
        let duplicate =
            matches!(&e, sqlx::Error::Database(db) if db.code().as_deref() == Some("23505"));
        if !duplicate {
            return Err(classify("connect", e));
        }
    }
    let _ = conn.close().await;
    Ok(())
}

pub(crate) fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(crate) fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}
