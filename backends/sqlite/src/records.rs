//! Records: compare-and-swap on the version inside one write transaction.

use async_trait::async_trait;
use bytes::Bytes;
use pangolin_records::{ExpectedVersion, Record, RecordError, RecordKey, RecordPage, RecordStore};
use pangolin_store::{BackendError, BackendErrorKind};
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use crate::{Durability, SqliteBackend, classify, to_i64, to_u64};

fn record_from(row: &SqliteRow, operation: &'static str) -> Result<Record, BackendError> {
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

async fn version_of(
    conn: &mut SqliteConnection,
    key: &RecordKey,
    operation: &'static str,
) -> Result<Option<u64>, BackendError> {
    let version: Option<i64> = sqlx::query_scalar("SELECT version FROM records WHERE key = ?")
        .bind(key.as_str())
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| classify(operation, e))?;
    Ok(version.map(to_u64))
}

async fn put(
    conn: &mut SqliteConnection,
    key: &RecordKey,
    expected: ExpectedVersion,
    value: &[u8],
) -> Result<u64, RecordError> {
    const OP: &str = "records.put";
    let actual = version_of(conn, key, OP).await?;
    if !expected.matches(actual) {
        return Err(RecordError::VersionMismatch {
            key: key.clone(),
            expected,
            actual,
        });
    }
    let version = expected.next();
    sqlx::query("INSERT OR REPLACE INTO records (key, version, value) VALUES (?, ?, ?)")
        .bind(key.as_str())
        .bind(to_i64(version))
        .bind(value)
        .execute(&mut *conn)
        .await
        .map_err(|e| classify(OP, e))?;
    Ok(version)
}

async fn delete(
    conn: &mut SqliteConnection,
    key: &RecordKey,
    version: u64,
) -> Result<(), RecordError> {
    const OP: &str = "records.delete";
    let actual = version_of(conn, key, OP).await?;
    if actual != Some(version) {
        return Err(RecordError::VersionMismatch {
            key: key.clone(),
            expected: ExpectedVersion::Is(version),
            actual,
        });
    }
    sqlx::query("DELETE FROM records WHERE key = ?")
        .bind(key.as_str())
        .execute(&mut *conn)
        .await
        .map_err(|e| classify(OP, e))?;
    Ok(())
}

#[async_trait]
impl RecordStore for SqliteBackend {
    async fn get_record(&self, key: &RecordKey) -> Result<Option<Record>, BackendError> {
        const OP: &str = "records.get";
        let row = sqlx::query("SELECT key, version, value FROM records WHERE key = ?")
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
        let mut write = self.begin_write(Durability::Durable, "records.put").await?;
        let result = put(write.conn()?, key, expected, &value).await;
        write.finish(result).await
    }

    async fn delete_record(&self, key: &RecordKey, version: u64) -> Result<(), RecordError> {
        let mut write = self
            .begin_write(Durability::Durable, "records.delete")
            .await?;
        let result = delete(write.conn()?, key, version).await;
        write.finish(result).await
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
             WHERE key >= ? AND substr(key, 1, ?) = ? AND (? IS NULL OR key > ?) \
             ORDER BY key LIMIT ?",
        )
        .bind(prefix)
        .bind(to_i64(prefix.chars().count() as u64))
        .bind(prefix)
        .bind(after.map(RecordKey::as_str))
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
