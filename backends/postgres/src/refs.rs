//! Refs and the ref log, moved by compare-and-swap in SQL.

use async_trait::async_trait;
use pangolin_records::AuditEvent;
use pangolin_refs::{
    LogQuery, RefKind, RefLogEntry, RefName, RefPage, RefQuery, RefStore, Reference, RepoLogQuery,
    Target, TransactError, Transaction,
};
use pangolin_store::{BackendError, BackendErrorKind, ObjectId, RawObject, RepoId, Timestamp};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use crate::errors::{is_retryable_conflict, is_unique_violation};
use crate::{PostgresBackend, classify, to_i64, to_u64};

/// The first key of the advisory lock that orders one repository's ref-log writes (the
/// second is a hash of the repository's name).
const REPO_LOG_LOCK: i32 = 0x5052_4c47;

/// Attempts of a ref transaction that hits deadlocks or serialization failures.
const ATTEMPTS: usize = 3;

fn kind_code(kind: RefKind) -> i16 {
    i16::from(kind.code())
}

fn corrupt(operation: &'static str, what: &str) -> BackendError {
    BackendError::new(
        BackendErrorKind::Corrupt,
        operation,
        format!("stored ref data has {what}"),
    )
}

fn id_from(bytes: Vec<u8>, operation: &'static str) -> Result<ObjectId, BackendError> {
    ObjectId::from_slice(&bytes).ok_or_else(|| corrupt(operation, "an id that is not 32 bytes"))
}

fn reference_from(row: &PgRow, operation: &'static str) -> Result<Reference, BackendError> {
    let get = |e| classify(operation, e);
    let kind = u8::try_from(row.try_get::<i16, _>("kind").map_err(get)?)
        .ok()
        .and_then(RefKind::from_code)
        .ok_or_else(|| corrupt(operation, "an unknown ref kind"))?;
    let name = RefName::new(row.try_get::<String, _>("name").map_err(get)?)
        .map_err(|_| corrupt(operation, "an invalid ref name"))?;
    Ok(Reference { kind, name })
}

fn target_from(row: &PgRow, operation: &'static str) -> Result<ObjectId, BackendError> {
    id_from(
        row.try_get("target").map_err(|e| classify(operation, e))?,
        operation,
    )
}

fn log_entry_from(row: &PgRow, operation: &'static str) -> Result<RefLogEntry, BackendError> {
    let get = |e| classify(operation, e);
    let old: Option<Vec<u8>> = row.try_get("old").map_err(get)?;
    let new: Option<Vec<u8>> = row.try_get("new").map_err(get)?;
    Ok(RefLogEntry {
        sequence: to_u64(row.try_get("sequence").map_err(get)?),
        reference: reference_from(row, operation)?,
        old: old.map(|b| id_from(b, operation)).transpose()?,
        new: new.map(|b| id_from(b, operation)).transpose()?,
        principal: row.try_get("principal").map_err(get)?,
        message: row.try_get("message").map_err(get)?,
        time: Timestamp::from_millis(row.try_get("time").map_err(get)?),
    })
}

/// Why one attempt of a ref transaction failed.
enum Attempt {
    /// The whole transaction may be tried again (deadlock, serialization failure).
    Retry(sqlx::Error),
    Fail(TransactError),
}

impl From<TransactError> for Attempt {
    fn from(error: TransactError) -> Self {
        Self::Fail(error)
    }
}

fn db(error: sqlx::Error) -> Attempt {
    if is_retryable_conflict(&error) {
        Attempt::Retry(error)
    } else {
        Attempt::Fail(classify("refs.transact", error).into())
    }
}

async fn locked_target(
    conn: &mut PgConnection,
    repo: &RepoId,
    reference: &Reference,
) -> Result<Option<ObjectId>, Attempt> {
    let row = sqlx::query(
        "SELECT target FROM refs WHERE repo = $1 AND kind = $2 AND name = $3 FOR UPDATE",
    )
    .bind(repo.as_str())
    .bind(kind_code(reference.kind))
    .bind(reference.name.as_str())
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?;
    row.map(|r| target_from(&r, "refs.transact"))
        .transpose()
        .map_err(|e| Attempt::Fail(e.into()))
}

async fn attempt(
    conn: &mut PgConnection,
    repo: &RepoId,
    tx: &Transaction,
) -> Result<Vec<RefLogEntry>, Attempt> {
    // Lock rows in one global order, so two transactions over the same refs cannot deadlock.
    let mut order: Vec<usize> = (0..tx.updates.len()).collect();
    order.sort_by(|a, b| tx.updates[*a].reference.cmp(&tx.updates[*b].reference));
    let mut actual = vec![None; tx.updates.len()];
    for &i in &order {
        let update = &tx.updates[i];
        actual[i] = locked_target(conn, repo, &update.reference).await?;
        Transaction::check(update, actual[i])?;
    }
    // The refs first, then their log: the log's lock (below) is then the last this
    // transaction waits for before the audit chain's, so no two writers wait in a cycle.
    let mut moves = Vec::with_capacity(tx.updates.len());
    for (update, old) in tx.updates.iter().zip(actual) {
        let (kind, name) = (
            kind_code(update.reference.kind),
            update.reference.name.as_str(),
        );
        let new = update.target.new_value();
        let changed = match (update.target, old) {
            (Target::Set(id), Some(seen)) => sqlx::query(
                "UPDATE refs SET target = $4 WHERE repo = $1 AND kind = $2 AND name = $3 AND target = $5",
            )
            .bind(repo.as_str())
            .bind(kind)
            .bind(name)
            .bind(id.as_bytes().as_slice())
            .bind(seen.as_bytes().as_slice())
            .execute(&mut *conn)
            .await,
            (Target::Set(id), None) => sqlx::query("INSERT INTO refs (repo, kind, name, target) VALUES ($1, $2, $3, $4)")
                .bind(repo.as_str())
                .bind(kind)
                .bind(name)
                .bind(id.as_bytes().as_slice())
                .execute(&mut *conn)
                .await,
            (Target::Delete, seen) => sqlx::query("DELETE FROM refs WHERE repo = $1 AND kind = $2 AND name = $3 AND target = $4")
                .bind(repo.as_str())
                .bind(kind)
                .bind(name)
                .bind(seen.map(|s| s.as_bytes().to_vec()))
                .execute(&mut *conn)
                .await,
        };
        match changed {
            Ok(done) if done.rows_affected() == 1 => {}
            // A concurrent transaction created the ref after we saw it absent, or the row no
            // longer holds what we locked: either way the expectation no longer holds.
            Ok(_) => return Err(Attempt::Retry(sqlx::Error::RowNotFound)),
            Err(e) if is_unique_violation(&e) => return Err(Attempt::Retry(e)),
            Err(e) => return Err(db(e)),
        }
        let last_time: Option<i64> = sqlx::query_scalar(
            "SELECT time FROM ref_log WHERE repo = $1 AND kind = $2 AND name = $3 ORDER BY sequence DESC LIMIT 1",
        )
        .bind(repo.as_str())
        .bind(kind)
        .bind(name)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
        let time = Timestamp::from_millis(
            last_time.map_or(tx.time.as_millis(), |t| t.max(tx.time.as_millis())),
        );
        moves.push((update, old, new, time));
    }
    let mut entries = Vec::with_capacity(moves.len());
    for (update, old, new, time) in moves {
        let (kind, name) = (
            kind_code(update.reference.kind),
            update.reference.name.as_str(),
        );
        // A sequence number is taken at insert but visible at commit: without the lock, held
        // until commit, a transaction on another ref of the repository could take a smaller
        // number and commit later, and a reader continuing after the numbers it saw would miss
        // it. Taken in the insert itself (before the row and its number are made), so the
        // repository's writers queue for one statement and the commit, not a round trip more.
        let sequence: i64 = sqlx::query_scalar(
            "WITH ordered AS (SELECT pg_advisory_xact_lock($9, hashtext($1))) \
             INSERT INTO ref_log (repo, kind, name, old, new, principal, message, time) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8 FROM ordered RETURNING sequence",
        )
        .bind(repo.as_str())
        .bind(kind)
        .bind(name)
        .bind(old.map(|id| id.as_bytes().to_vec()))
        .bind(new.map(|id| id.as_bytes().to_vec()))
        .bind(tx.principal.as_str())
        .bind(tx.message.as_str())
        .bind(time.as_millis())
        .bind(REPO_LOG_LOCK)
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
        entries.push(RefLogEntry {
            sequence: to_u64(sequence),
            reference: update.reference.clone(),
            old,
            new,
            principal: tx.principal.clone(),
            message: tx.message.clone(),
            time,
        });
    }
    Ok(entries)
}

#[async_trait]
impl RefStore for PostgresBackend {
    async fn get_ref(
        &self,
        repo: &RepoId,
        reference: &Reference,
    ) -> Result<Option<ObjectId>, BackendError> {
        const OP: &str = "refs.get";
        let row =
            sqlx::query("SELECT target FROM refs WHERE repo = $1 AND kind = $2 AND name = $3")
                .bind(repo.as_str())
                .bind(kind_code(reference.kind))
                .bind(reference.name.as_str())
                .fetch_optional(self.pool())
                .await
                .map_err(|e| classify(OP, e))?;
        row.map(|r| target_from(&r, OP)).transpose()
    }

    async fn list_refs(&self, repo: &RepoId, query: &RefQuery) -> Result<RefPage, BackendError> {
        const OP: &str = "refs.list";
        let (after_kind, after_name) = match &query.after {
            Some(r) => (kind_code(r.kind), r.name.as_str().to_owned()),
            None => (-1, String::new()),
        };
        let rows = sqlx::query(
            "SELECT kind, name, target FROM refs \
             WHERE repo = $1 AND (kind, name) > ($2, $3) AND ($4::smallint IS NULL OR kind = $4) \
             AND name >= $5 AND starts_with(name, $5) \
             ORDER BY kind, name LIMIT $6",
        )
        .bind(repo.as_str())
        .bind(after_kind)
        .bind(after_name)
        .bind(query.kind.map(kind_code))
        .bind(query.prefix.as_str())
        .bind(to_i64(query.limit as u64 + 1))
        .fetch_all(self.pool())
        .await
        .map_err(|e| classify(OP, e))?;
        let mut refs = Vec::with_capacity(rows.len());
        for row in &rows {
            refs.push((reference_from(row, OP)?, target_from(row, OP)?));
        }
        Ok(RefPage::from_overfetched(refs, query.limit))
    }

    async fn transact(
        &self,
        repo: &RepoId,
        tx: Transaction,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        self.run_transaction(repo, &tx, &[], &[]).await
    }

    async fn ref_log(
        &self,
        repo: &RepoId,
        reference: &Reference,
        query: LogQuery,
    ) -> Result<Vec<RefLogEntry>, BackendError> {
        const OP: &str = "refs.log";
        let rows = sqlx::query(
            "SELECT sequence, kind, name, old, new, principal, message, time FROM ref_log \
             WHERE repo = $1 AND kind = $2 AND name = $3 AND ($4::bigint IS NULL OR sequence < $4) \
             ORDER BY sequence DESC LIMIT $5",
        )
        .bind(repo.as_str())
        .bind(kind_code(reference.kind))
        .bind(reference.name.as_str())
        .bind(query.before.map(to_i64))
        .bind(to_i64(query.limit as u64))
        .fetch_all(self.pool())
        .await
        .map_err(|e| classify(OP, e))?;
        rows.iter().map(|r| log_entry_from(r, OP)).collect()
    }

    async fn repository_log(
        &self,
        repo: &RepoId,
        query: RepoLogQuery,
    ) -> Result<Vec<RefLogEntry>, BackendError> {
        const OP: &str = "refs.repository_log";
        let rows = sqlx::query(
            "SELECT sequence, kind, name, old, new, principal, message, time FROM ref_log \
             WHERE repo = $1 AND sequence > $2 ORDER BY sequence LIMIT $3",
        )
        .bind(repo.as_str())
        .bind(query.after.map_or(0, to_i64))
        .bind(to_i64(query.limit as u64))
        .fetch_all(self.pool())
        .await
        .map_err(|e| classify(OP, e))?;
        rows.iter().map(|r| log_entry_from(r, OP)).collect()
    }

    async fn ref_log_at(
        &self,
        repo: &RepoId,
        reference: &Reference,
        time: Timestamp,
    ) -> Result<Option<RefLogEntry>, BackendError> {
        const OP: &str = "refs.log_at";
        let row = sqlx::query(
            "SELECT sequence, kind, name, old, new, principal, message, time FROM ref_log \
             WHERE repo = $1 AND kind = $2 AND name = $3 AND time <= $4 \
             ORDER BY time DESC, sequence DESC LIMIT 1",
        )
        .bind(repo.as_str())
        .bind(kind_code(reference.kind))
        .bind(reference.name.as_str())
        .bind(time.as_millis())
        .fetch_optional(self.pool())
        .await
        .map_err(|e| classify(OP, e))?;
        row.map(|r| log_entry_from(&r, OP)).transpose()
    }
}

/// Objects, the ref move and its audit events in one database transaction.
#[async_trait]
impl pangolin_refs::Publish for PostgresBackend {
    async fn publish(
        &self,
        repo: &RepoId,
        objects: Vec<RawObject>,
        tx: Transaction,
        audit: Vec<AuditEvent>,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        self.run_transaction(repo, &tx, &objects, &audit).await
    }
}

impl PostgresBackend {
    /// Stores `objects`, applies `tx` and appends `audit` in one database transaction,
    /// retrying the whole of it on deadlocks, serialization failures and lost creation races.
    /// The audit chain's lock is taken last, so it is held only for the commit itself.
    async fn run_transaction(
        &self,
        repo: &RepoId,
        tx: &Transaction,
        objects: &[RawObject],
        audit: &[AuditEvent],
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        const OP: &str = "refs.transact";
        tx.validate()?;
        let mut last_conflict = None;
        for _ in 0..ATTEMPTS {
            let mut db_tx = self.pool().begin().await.map_err(|e| classify(OP, e))?;
            let attempted = match crate::objects::insert_objects(&mut *db_tx, repo, objects).await {
                Ok(()) => match attempt(&mut db_tx, repo, tx).await {
                    Ok(entries) => crate::audit::append_all(&mut db_tx, audit.to_vec())
                        .await
                        .map(|_| entries)
                        .map_err(|e| Attempt::Fail(e.into())),
                    Err(e) => Err(e),
                },
                Err(e) => Err(db(e)),
            };
            match attempted {
                Ok(entries) => match db_tx.commit().await {
                    Ok(()) => return Ok(entries),
                    Err(e) if is_retryable_conflict(&e) => last_conflict = Some(e),
                    Err(e) => return Err(classify(OP, e).into()),
                },
                Err(Attempt::Fail(error)) => {
                    let _ = db_tx.rollback().await;
                    return Err(error);
                }
                Err(Attempt::Retry(e)) => {
                    let _ = db_tx.rollback().await;
                    last_conflict = Some(e);
                }
            }
        }
        // Still losing after retries: report what the refs hold now, as an out-of-date error
        // when an expectation fails, or as a retryable conflict.
        for update in &tx.updates {
            let actual = self.get_ref(repo, &update.reference).await?;
            Transaction::check(update, actual)?;
        }
        let error = last_conflict.unwrap_or(sqlx::Error::RowNotFound);
        Err(BackendError::new(
            BackendErrorKind::Conflict,
            OP,
            "concurrent transactions kept conflicting; retry",
        )
        .with_source(error)
        .into())
    }
}
