//! The audit log: appends hold a transaction-scoped advisory lock while they read the chain
//! head and insert the next record, so every server appends to one chain.

use std::collections::BTreeMap;

use async_trait::async_trait;
use pangolin_records::{AuditEvent, AuditLog, AuditQuery, AuditRecord, ChainHash, Outcome};
use pangolin_store::{BackendError, BackendErrorKind, Timestamp, codec};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Postgres, QueryBuilder, Row};

use crate::{PostgresBackend, classify, to_i64, to_u64};

/// The advisory lock key that serializes audit appends ("PANGOLIN" in ASCII).
const AUDIT_LOCK: i64 = 0x5041_4e47_4f4c_494e;

/// Records inserted by one statement at most.
const INSERT_CHUNK: usize = 1000;

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

fn record_from(row: &PgRow, operation: &'static str) -> Result<AuditRecord, BackendError> {
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

/// Appends `events` in order inside the caller's transaction, which holds the chain's lock
/// from here until it ends: one lock, one read of the head and one insert for the lot.
pub(crate) async fn append_all(
    conn: &mut PgConnection,
    events: Vec<AuditEvent>,
) -> Result<Vec<AuditRecord>, BackendError> {
    const OP: &str = "audit.append";
    if events.is_empty() {
        return Ok(Vec::new());
    }
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(AUDIT_LOCK)
        .execute(&mut *conn)
        .await
        .map_err(|e| classify(OP, e))?;
    let head = sqlx::query("SELECT sequence, hash FROM audit ORDER BY sequence DESC LIMIT 1")
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| classify(OP, e))?;
    let previous = match head {
        Some(row) => {
            let sequence: i64 = row.try_get("sequence").map_err(|e| classify(OP, e))?;
            Some((
                to_u64(sequence),
                hash_from(row.try_get("hash").map_err(|e| classify(OP, e))?, OP)?,
            ))
        }
        None => None,
    };
    let records = AuditRecord::chain(previous, events);
    // PostgreSQL takes at most 65,535 parameters per statement: 11 per record.
    for chunk in records.chunks(INSERT_CHUNK) {
        let mut insert = QueryBuilder::<Postgres>::new(format!("INSERT INTO audit ({COLUMNS}) "));
        insert.push_values(chunk, |mut row, record| {
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
        });
        insert
            .build()
            .execute(&mut *conn)
            .await
            .map_err(|e| classify(OP, e))?;
    }
    Ok(records)
}

#[async_trait]
impl AuditLog for PostgresBackend {
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
        const OP: &str = "audit.append";
        let mut tx = self.pool().begin().await.map_err(|e| classify(OP, e))?;
        match append_all(&mut tx, events).await {
            Ok(records) => {
                tx.commit().await.map_err(|e| classify(OP, e))?;
                Ok(records)
            }
            Err(error) => {
                let _ = tx.rollback().await;
                Err(error)
            }
        }
    }

    async fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, BackendError> {
        const OP: &str = "audit.query";
        let mut sql =
            QueryBuilder::<Postgres>::new(format!("SELECT {COLUMNS} FROM audit WHERE TRUE"));
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
        let sql = format!(
            "SELECT {COLUMNS} FROM audit WHERE sequence BETWEEN $1 AND $2 ORDER BY sequence"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(to_i64(from))
            .bind(to_i64(to))
            .fetch_all(self.pool())
            .await
            .map_err(|e| classify(OP, e))?;
        rows.iter().map(|r| record_from(r, OP)).collect()
    }
}
