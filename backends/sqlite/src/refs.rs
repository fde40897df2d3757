//! Refs and the ref log: every update of a transaction is a compare-and-swap in SQL with its
//! log entry, all inside one database transaction.

use async_trait::async_trait;
use pangolin_records::AuditEvent;
use pangolin_refs::{
    Expected, LogQuery, Publish, RefKind, RefLogEntry, RefName, RefPage, RefQuery, RefStore,
    RefUpdate, Reference, RepoLogQuery, Target, TransactError, Transaction,
};
use pangolin_store::{BackendError, BackendErrorKind, ObjectId, RawObject, RepoId, Timestamp};
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use crate::{SqliteBackend, classify, to_i64, to_u64};

pub(crate) fn kind_code(kind: RefKind) -> i64 {
    i64::from(kind.code())
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

fn reference_from(
    kind: i64,
    name: String,
    operation: &'static str,
) -> Result<Reference, BackendError> {
    let kind = u8::try_from(kind)
        .ok()
        .and_then(RefKind::from_code)
        .ok_or_else(|| corrupt(operation, "an unknown ref kind"))?;
    let name = RefName::new(name).map_err(|_| corrupt(operation, "an invalid ref name"))?;
    Ok(Reference { kind, name })
}

fn log_entry_from(row: &SqliteRow, operation: &'static str) -> Result<RefLogEntry, BackendError> {
    let get = |e| classify(operation, e);
    let old: Option<Vec<u8>> = row.try_get("old").map_err(get)?;
    let new: Option<Vec<u8>> = row.try_get("new").map_err(get)?;
    Ok(RefLogEntry {
        sequence: to_u64(row.try_get("sequence").map_err(get)?),
        reference: reference_from(
            row.try_get("kind").map_err(get)?,
            row.try_get("name").map_err(get)?,
            operation,
        )?,
        old: old.map(|b| id_from(b, operation)).transpose()?,
        new: new.map(|b| id_from(b, operation)).transpose()?,
        principal: row.try_get("principal").map_err(get)?,
        message: row.try_get("message").map_err(get)?,
        time: Timestamp::from_millis(row.try_get("time").map_err(get)?),
    })
}

pub(crate) async fn current(
    conn: &mut SqliteConnection,
    repo: &RepoId,
    reference: &Reference,
) -> Result<Option<ObjectId>, BackendError> {
    const OP: &str = "refs.transact";
    let row = sqlx::query("SELECT target FROM refs WHERE repo = ? AND kind = ? AND name = ?")
        .bind(repo.as_str())
        .bind(kind_code(reference.kind))
        .bind(reference.name.as_str())
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| classify(OP, e))?;
    row.map(|r| target_from(&r, OP)).transpose()
}

fn target_from(row: &SqliteRow, operation: &'static str) -> Result<ObjectId, BackendError> {
    id_from(
        row.try_get("target").map_err(|e| classify(operation, e))?,
        operation,
    )
}

/// Applies every update of `tx` in order, each a compare-and-swap in SQL, with its ref-log
/// entry. Runs inside one write transaction: the first update that fails aborts all of them.
pub(crate) async fn apply(
    conn: &mut SqliteConnection,
    repo: &RepoId,
    tx: &Transaction,
) -> Result<Vec<RefLogEntry>, TransactError> {
    let mut entries = Vec::with_capacity(tx.updates.len());
    for update in &tx.updates {
        let old = swap(conn, repo, update).await?;
        entries.push(log(conn, repo, tx, update, old).await?);
    }
    Ok(entries)
}

/// Moves one ref as `update` asks; returns what it held before.
async fn swap(
    conn: &mut SqliteConnection,
    repo: &RepoId,
    update: &RefUpdate,
) -> Result<Option<ObjectId>, TransactError> {
    const OP: &str = "refs.transact";
    let (kind, name) = (
        kind_code(update.reference.kind),
        update.reference.name.as_str(),
    );
    let changed = match (update.expected, update.target) {
        (Expected::Equals(seen), Target::Set(id)) => sqlx::query(
            "UPDATE refs SET target = ? WHERE repo = ? AND kind = ? AND name = ? AND target = ?",
        )
        .bind(id.as_bytes().as_slice())
        .bind(repo.as_str())
        .bind(kind)
        .bind(name)
        .bind(seen.as_bytes().as_slice())
        .execute(&mut *conn)
        .await,
        (Expected::Equals(seen), Target::Delete) => {
            sqlx::query("DELETE FROM refs WHERE repo = ? AND kind = ? AND name = ? AND target = ?")
                .bind(repo.as_str())
                .bind(kind)
                .bind(name)
                .bind(seen.as_bytes().as_slice())
                .execute(&mut *conn)
                .await
        }
        (Expected::Absent, Target::Set(id)) => {
            sqlx::query("INSERT OR IGNORE INTO refs (repo, kind, name, target) VALUES (?, ?, ?, ?)")
                .bind(repo.as_str())
                .bind(kind)
                .bind(name)
                .bind(id.as_bytes().as_slice())
                .execute(&mut *conn)
                .await
        }
        // Anything else depends on what the ref holds: read it, check, then write.
        _ => {
            let actual = current(conn, repo, &update.reference).await?;
            Transaction::check(update, actual)?;
            let write = match update.target {
                Target::Set(id) => sqlx::query(
                    "INSERT OR REPLACE INTO refs (repo, kind, name, target) VALUES (?, ?, ?, ?)",
                )
                .bind(repo.as_str())
                .bind(kind)
                .bind(name)
                .bind(id.as_bytes().to_vec()),
                Target::Delete => {
                    sqlx::query("DELETE FROM refs WHERE repo = ? AND kind = ? AND name = ?")
                        .bind(repo.as_str())
                        .bind(kind)
                        .bind(name)
                }
            };
            write
                .execute(&mut *conn)
                .await
                .map_err(|e| classify(OP, e))?;
            return Ok(actual);
        }
    };
    let changed = changed.map_err(|e| classify(OP, e))?;
    if changed.rows_affected() == 1 {
        return Ok(match update.expected {
            Expected::Equals(seen) => Some(seen),
            _ => None,
        });
    }
    // The swap found the ref in another state: report which.
    let actual = current(conn, repo, &update.reference).await?;
    Transaction::check(update, actual)?;
    Err(TransactError::OutOfDate {
        reference: update.reference.clone(),
        expected: update.expected,
        actual,
    })
}

/// Writes the ref-log entry of one applied update. Its time never goes back for one ref.
async fn log(
    conn: &mut SqliteConnection,
    repo: &RepoId,
    tx: &Transaction,
    update: &RefUpdate,
    old: Option<ObjectId>,
) -> Result<RefLogEntry, TransactError> {
    const OP: &str = "refs.transact";
    let new = update.target.new_value();
    let row = sqlx::query(
        "INSERT INTO ref_log (repo, kind, name, old, new, principal, message, time) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, max(?8, coalesce((SELECT time FROM ref_log \
         WHERE repo = ?1 AND kind = ?2 AND name = ?3 ORDER BY sequence DESC LIMIT 1), ?8))) \
         RETURNING sequence, time",
    )
    .bind(repo.as_str())
    .bind(kind_code(update.reference.kind))
    .bind(update.reference.name.as_str())
    .bind(old.map(|id| id.as_bytes().to_vec()))
    .bind(new.map(|id| id.as_bytes().to_vec()))
    .bind(tx.principal.as_str())
    .bind(tx.message.as_str())
    .bind(tx.time.as_millis())
    .fetch_one(&mut *conn)
    .await
    .map_err(|e| classify(OP, e))?;
    let sequence: i64 = row.try_get("sequence").map_err(|e| classify(OP, e))?;
    let time: i64 = row.try_get("time").map_err(|e| classify(OP, e))?;
    Ok(RefLogEntry {
        sequence: to_u64(sequence),
        reference: update.reference.clone(),
        old,
        new,
        principal: tx.principal.clone(),
        message: tx.message.clone(),
        time: Timestamp::from_millis(time),
    })
}

#[async_trait]
impl RefStore for SqliteBackend {
    async fn get_ref(
        &self,
        repo: &RepoId,
        reference: &Reference,
    ) -> Result<Option<ObjectId>, BackendError> {
        const OP: &str = "refs.get";
        let row = sqlx::query("SELECT target FROM refs WHERE repo = ? AND kind = ? AND name = ?")
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
             WHERE repo = ? AND (kind, name) > (?, ?) AND (? IS NULL OR kind = ?) \
             AND name >= ? AND substr(name, 1, ?) = ? \
             ORDER BY kind, name LIMIT ?",
        )
        .bind(repo.as_str())
        .bind(after_kind)
        .bind(after_name)
        .bind(query.kind.map(kind_code))
        .bind(query.kind.map(kind_code))
        .bind(query.prefix.as_str())
        .bind(to_i64(query.prefix.chars().count() as u64))
        .bind(query.prefix.as_str())
        .bind(to_i64(query.limit as u64 + 1))
        .fetch_all(self.pool())
        .await
        .map_err(|e| classify(OP, e))?;
        let mut refs = Vec::with_capacity(rows.len());
        for row in &rows {
            let get = |e| classify(OP, e);
            let reference = reference_from(
                row.try_get("kind").map_err(get)?,
                row.try_get("name").map_err(get)?,
                OP,
            )?;
            refs.push((reference, target_from(row, OP)?));
        }
        Ok(RefPage::from_overfetched(refs, query.limit))
    }

    async fn transact(
        &self,
        repo: &RepoId,
        tx: Transaction,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        self.publish_batch(repo, &[], &tx, Vec::new()).await
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
             WHERE repo = ? AND kind = ? AND name = ? AND (? IS NULL OR sequence < ?) \
             ORDER BY sequence DESC LIMIT ?",
        )
        .bind(repo.as_str())
        .bind(kind_code(reference.kind))
        .bind(reference.name.as_str())
        .bind(query.before.map(to_i64))
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
        // One writer at a time, and sequence numbers are taken inside its transaction: they
        // become visible in order.
        const OP: &str = "refs.repository_log";
        let rows = sqlx::query(
            "SELECT sequence, kind, name, old, new, principal, message, time FROM ref_log \
             WHERE repo = ? AND sequence > ? ORDER BY sequence LIMIT ?",
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
             WHERE repo = ? AND kind = ? AND name = ? AND time <= ? \
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

/// Objects, the ref move and its audit events in one write transaction: one lock, one sync
/// to disk, three round trips to SQLite's thread (see `publish.rs`).
#[async_trait]
impl Publish for SqliteBackend {
    async fn publish(
        &self,
        repo: &RepoId,
        objects: Vec<RawObject>,
        tx: Transaction,
        audit: Vec<AuditEvent>,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        self.publish_batch(repo, &objects, &tx, audit).await
    }
}
