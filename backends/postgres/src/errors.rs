//! The one place where PostgreSQL and sqlx failures become classified backend errors.

use pangolin_store::{BackendError, BackendErrorKind};

/// Whether `error` is a transaction-level conflict worth retrying as a whole: a deadlock or a
/// serialization failure.
pub(crate) fn is_retryable_conflict(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if matches!(db.code().as_deref(), Some("40001" | "40P01")))
}

pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.code().as_deref() == Some("23505"))
}

pub(crate) fn classify(operation: &'static str, error: sqlx::Error) -> BackendError {
    let (kind, message) = match &error {
        sqlx::Error::Database(db) => {
            let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
            let kind = match code.get(..2) {
                // Serialization failure, deadlock.
                Some("40") => BackendErrorKind::Conflict,
                // Connection exceptions, insufficient resources, operator intervention
                // (shutdown), system errors.
                Some("08" | "53" | "57" | "58") => BackendErrorKind::Unavailable,
                // Data corruption.
                Some("XX") => BackendErrorKind::Corrupt,
                _ => BackendErrorKind::Other,
            };
            (kind, format!("PostgreSQL error {code}: {}", db.message()))
        }
        sqlx::Error::Io(e) => (BackendErrorKind::Unavailable, format!("cannot reach PostgreSQL: {e}")),
        sqlx::Error::Tls(e) => (BackendErrorKind::Unavailable, format!("TLS to PostgreSQL failed: {e}")),
        sqlx::Error::PoolTimedOut => (
            BackendErrorKind::Unavailable,
            "no database connection became free in time (is PostgreSQL up and the pool large enough?)".to_owned(),
        ),
        sqlx::Error::PoolClosed => (BackendErrorKind::Unavailable, "the connection pool is closed".to_owned()),
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) | sqlx::Error::ColumnNotFound(_) => {
            (BackendErrorKind::Corrupt, format!("stored data does not match the schema: {error}"))
        }
        other => (BackendErrorKind::Other, other.to_string()),
    };
    BackendError::new(kind, operation, message).with_source(error)
}
