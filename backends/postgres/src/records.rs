//! Records: compare-and-swap on the version in SQL.

use async_trait::async_trait;
use bytes::Bytes;
use pangolin_records::{ExpectedVersion, Record, RecordError, RecordKey, RecordPage, RecordStore};
use pangolin_store::{BackendError, BackendErrorKind};
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::errors::is_unique_violation;
use crate::{PostgresBackend, classify, to_i64, to_u64};

fn record_from(row: &PgRow, operation: &'static str) -> Result<Record, BackendError> {
    let get = |e| classify(operation, e);
    let key: String = row.try_get("key").map_err(get)?;
    let key = RecordKey::new(key).map_err(|e| {
        BackendError::new(
            BackendErrorKind::Corrupt,
            operation,
            format!("stored record key: {e}"),
        )
    })?;
    let value: Vec<u8> = row.try_get("value").map_err(get)?;
    Ok(Record {
        key,
        version: to_u64(row.try_get("version").map_err(get)?),
        value: Bytes::from(value),
    })
}

impl PostgresBackend {
    async fn record_version(
        &self,
        key: &RecordKey,
        operation: &'static str,
    ) -> Result<Option<u64>, BackendError> {
        let version: Option<i64> = sqlx::query_scalar("SELECT version FROM records WHERE key = $1")
            .bind(key.as_str())
            .fetch_optional(self.pool())
            .await
            .map_err(|e| classify(operation, e))?;
        Ok(version.map(to_u64))
    }
}

#[async_trait]
impl RecordStore for PostgresBackend {
    async fn get_record(&self, key: &RecordKey) -> Result<Option<Record>, BackendError> {
        const OP: &str = "records.get";
        let row = sqlx::query("SELECT key, version, value FROM records WHERE key = $1")
            .bind(key.as_str())
            .fetch_optional(self.pool())
            .await
            .map_err(|e| classify(OP, e))?;
        row.map(|r| record_from(&r, OP)).transpose()
    }

    async fn put_record(
        &self,
        key: &RecordKey,
        expected: ExpectedVersion,
        value: Bytes,
    ) -> Result<u64, RecordError> {
        const OP: &str = "records.put";
        let version = expected.next();
        let result =
            match expected {
                ExpectedVersion::Absent => {
                    sqlx::query("INSERT INTO records (key, version, value) VALUES ($1, $2, $3)")
                        .bind(key.as_str())
                        .bind(to_i64(version))
                        .bind(value.as_ref())
                        .execute(self.pool())
                        .await
                }
                ExpectedVersion::Is(current) => sqlx::query(
                    "UPDATE records SET version = $2, value = $3 WHERE key = $1 AND version = $4",
                )
                .bind(key.as_str())
                .bind(to_i64(version))
                .bind(value.as_ref())
                .bind(to_i64(current))
                .execute(self.pool())
                .await,
            };
        match result {
            Ok(done) if done.rows_affected() == 1 => Ok(version),
            Ok(_) => Err(self.mismatch(key, expected, OP).await),
            Err(e) if is_unique_violation(&e) => Err(self.mismatch(key, expected, OP).await),
            Err(e) => Err(classify(OP, e).into()),
        }
    }

    async fn delete_record(&self, key: &RecordKey, version: u64) -> Result<(), RecordError> {
        const OP: &str = "records.delete";
        let done = sqlx::query("DELETE FROM records WHERE key = $1 AND version = $2")
            .bind(key.as_str())
            .bind(to_i64(version))
            .execute(self.pool())
            .await
            .map_err(|e| classify(OP, e))?;
        if done.rows_affected() == 1 {
            Ok(())
        } else {
            Err(self.mismatch(key, ExpectedVersion::Is(version), OP).await)
        }
    }

    async fn list_records(
        &self,
        prefix: &str,
        after: Option<&RecordKey>,
        limit: usize,
    ) -> Result<RecordPage, BackendError> {
        const OP: &str = "records.list";
        let rows = sqlx::query(
            "SELECT key, version, value FROM records \
             WHERE key >= $1 AND starts_with(key, $1) AND ($2::text IS NULL OR key > $2) \
             ORDER BY key LIMIT $3",
        )
        .bind(prefix)
        .bind(after.map(RecordKey::as_str))
        .bind(to_i64(limit as u64 + 1))
        .fetch_all(self.pool())
        .await
        .map_err(|e| classify(OP, e))?;
        let records = rows
            .iter()
            .map(|r| record_from(r, OP))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RecordPage::from_overfetched(records, limit))
    }
}

impl PostgresBackend {
    /// The error for a compare-and-swap that changed no row, with the version found now.
    async fn mismatch(
        &self,
        key: &RecordKey,
        expected: ExpectedVersion,
        operation: &'static str,
    ) -> RecordError {
        match self.record_version(key, operation).await {
            Ok(actual) => RecordError::VersionMismatch {
                key: key.clone(),
                expected,
                actual,
            },
            Err(e) => e.into(),
        }
    }
}
