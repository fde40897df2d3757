//! The audit log: appends read the chain head and insert the next record in one write
//! transaction, so the chain has one head at a time.

use std::collections::BTreeMap;

use async_trait::async_trait;
use pangolin_records::{AuditEvent, AuditLog, AuditQuery, AuditRecord, ChainHash, Outcome};
use pangolin_store::{BackendError, BackendErrorKind, Timestamp, codec};
use sqlx::query_builder::Separated;
use sqlx::sqlite::SqliteRow;
use sqlx::{QueryBuilder, Row, Sqlite, SqliteConnection};

use crate::{Durability, SqliteBackend, Write, classify, to_i64, to_u64};

const COLUMNS: &str = "sequence, time, tenant, principal, action, resource_type, resource_id, outcome, details, previous, hash";

fn corrupt(operation: &'static str, what: &str) -> BackendError {
    BackendError::new(
        BackendErrorKind::Corrupt,
        operation,
        format!("stored audit record has {what}"),
    )
}

fn hash_from(bytes: Vec<u8>, operation: &'static str) -> Result<ChainHash, BackendError> {
    Ok(ChainHash(bytes.try_into().map_err(|_| {
        corrupt(operation, "a hash that is not 32 bytes")
    })?))
}

fn record_from(row: &SqliteRow, operation: &'static str) -> Result<AuditRecord, BackendError> {
    let get = |e| classify(operation, e);
    let outcome: String = row.try_get("outcome").map_err(get)?;
    let details: Vec<u8> = row.try_get("details").map_err(get)?;
    let details: BTreeMap<String, String> =
        codec::decode(&details).map_err(|_| corrupt(operation, "undecodable details"))?;
    Ok(AuditRecord {
        sequence: to_u64(row.try_get("sequence").map_err(get)?),
        event: AuditEvent {
            time: Timestamp::from_millis(row.try_get("time").map_err(get)?),
            tenant: row.try_get("tenant").map_err(get)?,
            principal: row.try_get("principal").map_err(get)?,
            action: row.try_get("action").map_err(get)?,
            resource_type: row.try_get("resource_type").map_err(get)?,
            resource_id: row.try_get("resource_id").map_err(get)?,
            outcome: Outcome::parse(&outcome)
                .ok_or_else(|| corrupt(operation, "an unknown outcome"))?,
            details,
        },
        previous: hash_from(row.try_get("previous").map_err(get)?, operation)?,
        hash: hash_from(row.try_get("hash").map_err(get)?, operation)?,
    })
}

/// The audit chain's last record, read inside the caller's transaction.
pub(crate) async fn read_head(
    conn: &mut SqliteConnection,
) -> Result<Option<(u64, ChainHash)>, BackendError> {
    const OP: &str = "audit.append";
    let head = sqlx::query("SELECT sequence, hash FROM audit ORDER BY sequence DESC LIMIT 1")
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| classify(OP, e))?;
    head.map(|row| {
        let sequence: i64 = row.try_get("sequence").map_err(|e| classify(OP, e))?;
        Ok((
            to_u64(sequence),
            hash_from(row.try_get("hash").map_err(|e| classify(OP, e))?, OP)?,
        ))
    })
    .transpose()
}

/// Binds one record's columns, in the order of [`COLUMNS`].
fn push_record(mut row: Separated<'_, Sqlite, &'static str>, record: &AuditRecord) {
    let e = &record.event;
    row.push_bind(to_i64(record.sequence))
        .push_bind(e.time.as_millis())
        .push_bind(e.tenant.as_str())
        .push_bind(e.principal.as_str())
        .push_bind(e.action.as_str())
        .push_bind(e.resource_type.as_str())
        .push_bind(e.resource_id.as_str())
        .push_bind(e.outcome.as_str())
        .push_bind(codec::encode(&e.details))
        .push_bind(record.previous.0.to_vec())
        .push_bind(record.hash.0.to_vec());
}

/// Adds to `sql` one statement per record inserting it only while the chain ends at the
/// record's predecessor, each returning a row (`what` = `tag`) when it inserted. A head
/// remembered by this process is only a hint (another process may have appended to the
/// file): if it was wrong, nothing is inserted and the caller appends again from the head it
/// reads. With `then_guard`, each is followed by a guard that stops the batch when it did
/// not insert.
pub(crate) fn push_guarded(
    sql: &mut QueryBuilder<Sqlite>,
    records: &[AuditRecord],
    tag: i64,
    then_guard: bool,
) {
    for record in records {
        sql.push(format!("INSERT INTO audit ({COLUMNS}) SELECT "));
        push_record(sql.separated(", "), record);
        match record.sequence.checked_sub(1).filter(|p| *p > 0) {
            Some(previous) => {
                sql.push(" WHERE EXISTS (SELECT 1 FROM audit WHERE sequence = ")
                    .push_bind(to_i64(previous))
                    .push(" AND hash = ")
                    .push_bind(record.previous.0.to_vec())
                    .push(") AND NOT EXISTS (SELECT 1 FROM audit WHERE sequence > ")
                    .push_bind(to_i64(previous))
                    .push(")");
            }
            None => {
                sql.push(" WHERE NOT EXISTS (SELECT 1 FROM audit)");
            }
        }
        sql.push(format!(" RETURNING {tag} AS what, sequence;\n"));
        if then_guard {
            crate::publish::push_guard(sql);
        }
    }
}

/// Appends `events` in order inside `write`: the chain's head is read, then every record,
/// chained on the one before, is inserted.
pub(crate) async fn append_all(
    write: &mut Write<'_>,
    events: Vec<AuditEvent>,
) -> Result<Vec<AuditRecord>, BackendError> {
    const OP: &str = "audit.append";
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let records = AuditRecord::chain(read_head(write.conn()?).await?, events);
    // Eleven parameters a row, far below SQLite's limit of 32,766 per statement.
    for part in records.chunks(1_000) {
        let mut sql = QueryBuilder::<Sqlite>::new(format!("INSERT INTO audit ({COLUMNS}) "));
        sql.push_values(part, push_record);
        sql.build()
            .execute(write.conn()?)
            .await
            .map_err(|e| classify(OP, e))?;
    }
    if let Some(last) = records.last() {
        write.appended((last.sequence, last.hash));
    }
    Ok(records)
}

#[async_trait]
impl AuditLog for SqliteBackend {
    async fn append(&self, event: AuditEvent) -> Result<AuditRecord, BackendError> {
        let mut records = self.append_many(vec![event]).await?;
        records.pop().ok_or_else(|| {
            BackendError::new(
                BackendErrorKind::Corrupt,
                "audit.append",
                "an append wrote no record",
            )
        })
    }

    async fn append_many(&self, events: Vec<AuditEvent>) -> Result<Vec<AuditRecord>, BackendError> {
        let mut write = self
            .begin_write(Durability::Durable, "audit.append")
            .await?;
        let result = append_all(&mut write, events).await;
        write.finish(result).await
    }

    async fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, BackendError> {
        const OP: &str = "audit.query";
        let mut sql =
            QueryBuilder::<Sqlite>::new(format!("SELECT {COLUMNS} FROM audit WHERE 1 = 1"));
        let filters = [
            ("tenant", &query.tenant),
            ("principal", &query.principal),
            ("action", &query.action),
            ("resource_type", &query.resource_type),
            ("resource_id", &query.resource_id),
        ];
        for (column, value) in filters {
            if let Some(value) = value {
                sql.push(format!(" AND {column} = "))
                    .push_bind(value.clone());
            }
        }
        if let Some(from) = query.from {
            sql.push(" AND time >= ").push_bind(from.as_millis());
        }
        if let Some(until) = query.until {
            sql.push(" AND time < ").push_bind(until.as_millis());
        }
        if let Some(after) = query.after {
            sql.push(" AND sequence > ").push_bind(to_i64(after));
        }
        sql.push(" ORDER BY sequence LIMIT ")
            .push_bind(to_i64(query.limit as u64));
        let rows = sql
            .build()
            .fetch_all(self.pool())
            .await
            .map_err(|e| classify(OP, e))?;
        rows.iter().map(|r| record_from(r, OP)).collect()
    }

    async fn range(&self, from: u64, to: u64) -> Result<Vec<AuditRecord>, BackendError> {
        const OP: &str = "audit.range";
        let sql =
            format!("SELECT {COLUMNS} FROM audit WHERE sequence BETWEEN ? AND ? ORDER BY sequence");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(to_i64(from))
            .bind(to_i64(to))
            .fetch_all(self.pool())
            .await
            .map_err(|e| classify(OP, e))?;
        rows.iter().map(|r| record_from(r, OP)).collect()
    }
}
