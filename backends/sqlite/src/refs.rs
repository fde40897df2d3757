//! Refs and the ref log: each transaction checks every expectation, then applies every update
//! and writes its log entry, inside one database transaction.

use async_trait::async_trait;
use pangolin_refs::{
    LogQuery, RefKind, RefLogEntry, RefName, RefPage, RefQuery, RefStore, Reference, TransactError,
    Transaction,
};
use pangolin_store::{BackendError, BackendErrorKind, ObjectId, RepoId, Timestamp};
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use crate::{SqliteBackend, classify, to_i64, to_u64};

fn kind_code(kind: RefKind) -> i64 {
    match kind {
        RefKind::Branch => 0,
        RefKind::Tag => 1,
    }
}

fn corrupt(operation: &'static str, what: &str) -> BackendError {
    BackendError::new(
        BackendErrorKind::Corrupt,
        operation,
        format!("stored ref data has {what}"),
    )
}

fn id_from(bytes: Vec<u8>, operation: &'static str) -> Result<ObjectId, BackendError> {
    let bytes: [u8; 32] = bytes
        .try_into()
        .map_err(|_| corrupt(operation, "an id that is not 32 bytes"))?;
    Ok(ObjectId::from_bytes(bytes))
}

fn reference_from(
    kind: i64,
    name: String,
    operation: &'static str,
) -> Result<Reference, BackendError> {
    let kind = match kind {
        0 => RefKind::Branch,
        1 => RefKind::Tag,
        _ => return Err(corrupt(operation, "an unknown ref kind")),
    };
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

async fn current(
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

async fn apply(
    conn: &mut SqliteConnection,
    repo: &RepoId,
    tx: &Transaction,
) -> Result<Vec<RefLogEntry>, TransactError> {
    const OP: &str = "refs.transact";
    let mut olds = Vec::with_capacity(tx.updates.len());
    for update in &tx.updates {
        let actual = current(conn, repo, &update.reference).await?;
        Transaction::check(update, actual)?;
        olds.push(actual);
    }
    let mut entries = Vec::with_capacity(tx.updates.len());
    for (update, old) in tx.updates.iter().zip(olds) {
        let (kind, name) = (
            kind_code(update.reference.kind),
            update.reference.name.as_str(),
        );
        let new = update.target.new_value();
        let change = match new {
            Some(id) => sqlx::query(
                "INSERT OR REPLACE INTO refs (repo, kind, name, target) VALUES (?, ?, ?, ?)",
            )
            .bind(repo.as_str())
            .bind(kind)
            .bind(name)
            .bind(id.as_bytes().to_vec()),
            None => sqlx::query("DELETE FROM refs WHERE repo = ? AND kind = ? AND name = ?")
                .bind(repo.as_str())
                .bind(kind)
                .bind(name),
        };
        change
            .execute(&mut *conn)
            .await
            .map_err(|e| classify(OP, e))?;
        let last_time: Option<i64> = sqlx::query_scalar(
            "SELECT time FROM ref_log WHERE repo = ? AND kind = ? AND name = ? ORDER BY sequence DESC LIMIT 1",
        )
        .bind(repo.as_str())
        .bind(kind)
        .bind(name)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| classify(OP, e))?;
        let time = Timestamp::from_millis(
            last_time.map_or(tx.time.as_millis(), |t| t.max(tx.time.as_millis())),
        );
        let sequence: i64 = sqlx::query_scalar(
            "INSERT INTO ref_log (repo, kind, name, old, new, principal, message, time) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING sequence",
        )
        .bind(repo.as_str())
        .bind(kind)
        .bind(name)
        .bind(old.map(|id| id.as_bytes().to_vec()))
        .bind(new.map(|id| id.as_bytes().to_vec()))
        .bind(tx.principal.as_str())
        .bind(tx.message.as_str())
        .bind(time.as_millis())
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| classify(OP, e))?;
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
        let next_after = if refs.len() > query.limit {
            refs.truncate(query.limit);
            refs.last().map(|(r, _)| r.clone())
        } else {
            None
        };
        Ok(RefPage { refs, next_after })
    }

    async fn transact(
        &self,
        repo: &RepoId,
        tx: Transaction,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        tx.validate()?;
        let mut write = self.begin_write("refs.transact").await?;
        let result = apply(&mut write.tx, repo, &tx).await;
        write.finish(result).await
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
