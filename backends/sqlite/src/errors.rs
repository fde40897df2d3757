//! The one place where SQLite and sqlx failures become classified backend errors.

use pangolin_store::{BackendError, BackendErrorKind};

/// SQLite result codes (primary codes, the low byte of extended codes) that matter here.
const SQLITE_BUSY: i64 = 5;
const SQLITE_LOCKED: i64 = 6;
const SQLITE_IOERR: i64 = 10;
const SQLITE_CORRUPT: i64 = 11;
const SQLITE_FULL: i64 = 13;
const SQLITE_CANTOPEN: i64 = 14;
const SQLITE_NOTADB: i64 = 26;

pub(crate) fn classify(operation: &'static str, error: sqlx::Error) -> BackendError {
    let (kind, message) = match &error {
        sqlx::Error::Database(db) => {
            let code = db.code().and_then(|c| c.parse::<i64>().ok()).unwrap_or(-1) & 0xff;
            let kind = match code {
                SQLITE_BUSY | SQLITE_LOCKED => BackendErrorKind::Conflict,
                SQLITE_IOERR | SQLITE_FULL | SQLITE_CANTOPEN => BackendErrorKind::Unavailable,
                SQLITE_CORRUPT | SQLITE_NOTADB => BackendErrorKind::Corrupt,
                _ => BackendErrorKind::Other,
            };
            (kind, format!("SQLite error {code}: {}", db.message()))
        }
        sqlx::Error::Io(e) => (BackendErrorKind::Unavailable, format!("I/O error: {e}")),
        sqlx::Error::PoolTimedOut => (
            BackendErrorKind::Unavailable,
            "no database connection became free in time".to_owned(),
        ),
        sqlx::Error::PoolClosed => (
            BackendErrorKind::Unavailable,
            "the connection pool is closed".to_owned(),
        ),
        sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnNotFound(_) => (
            BackendErrorKind::Corrupt,
            format!("stored data does not match the schema: {error}"),
        ),
        other => (BackendErrorKind::Other, other.to_string()),
    };
    BackendError::new(kind, operation, message).with_source(error)
}
