//! Publishing a change in as few round trips as SQLite allows.
//!
//! Every statement sqlx runs is a round trip to the connection's worker thread and back, and
//! on a commit's path those hand-offs cost more than SQLite's own work. So a publish sends its
//! objects, its compare-and-swaps with their ref-log entries and its audit records as one
//! batch of statements between `BEGIN` and `COMMIT`: three round trips whatever it carries.
//! The checks stay in SQL: a ref-log entry is written only when the swap before it changed
//! its row (`changes() = 1`), and an audit record only when the chain ends where the record
//! says its predecessor is. A swap that found its ref elsewhere is answered as before; an
//! audit head remembered wrongly is read and the records appended again, in the same
//! transaction.

use pangolin_records::{AuditEvent, AuditRecord};
use pangolin_refs::{Expected, RefLogEntry, RefUpdate, Target, TransactError, Transaction};
use pangolin_store::{BackendError, BackendErrorKind, ObjectId, RawObject, RepoId, Timestamp};
use sqlx::{QueryBuilder, Row, Sqlite};

use crate::objects::{INSERT_CHUNK, push_objects};
use crate::refs::{current, kind_code};
use crate::{AuditHead, SqliteBackend, Write, audit, classify, to_u64};

const OP: &str = "refs.publish";

/// What a row of the batch's answer is: a written ref-log entry or an inserted audit record.
const REF_LOG: i64 = 0;
const AUDIT: i64 = 1;

impl SqliteBackend {
    /// Stores `objects`, applies `tx` and appends `audit`, all or nothing, in one durable
    /// write transaction.
    pub(crate) async fn publish_batch(
        &self,
        repo: &RepoId,
        objects: &[RawObject],
        tx: &Transaction,
        audit: Vec<AuditEvent>,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        tx.validate()?;
        let mut write = self.begin_write(OP).await?;
        let result = if tx.updates.iter().all(is_swap) {
            batch(&mut write, repo, objects, tx, audit).await
        } else {
            step_by_step(&mut write, repo, objects, tx, audit).await
        };
        write.finish(result).await
    }
}

/// Whether `update` is one statement that changes its row exactly when it applies.
fn is_swap(update: &RefUpdate) -> bool {
    matches!(
        (update.expected, update.target),
        (Expected::Equals(_), _) | (Expected::Absent, Target::Set(_))
    )
}

/// Updates whose outcome depends on what the ref holds: read, check, write, one at a time.
async fn step_by_step(
    write: &mut Write<'_>,
    repo: &RepoId,
    objects: &[RawObject],
    tx: &Transaction,
    audit: Vec<AuditEvent>,
) -> Result<Vec<RefLogEntry>, TransactError> {
    crate::objects::insert_objects(&mut write.tx, repo, objects).await?;
    let entries = crate::refs::apply(&mut write.tx, repo, tx).await?;
    audit::append_all(write, audit).await?;
    Ok(entries)
}

async fn batch(
    write: &mut Write<'_>,
    repo: &RepoId,
    objects: &[RawObject],
    tx: &Transaction,
    audit: Vec<AuditEvent>,
) -> Result<Vec<RefLogEntry>, TransactError> {
    let head = match (audit.is_empty(), write.audit_head()) {
        (true, _) => None,
        (false, AuditHead::Known(head)) => head,
        (false, AuditHead::Unknown) => audit::read_head(&mut write.tx).await?,
    };
    let records = AuditRecord::chain(head, audit);
    let mut sql = QueryBuilder::<Sqlite>::new("");
    for chunk in objects.chunks(INSERT_CHUNK) {
        push_objects(&mut sql, repo, chunk);
        sql.push(";\n");
    }
    for update in &tx.updates {
        push_swap(&mut sql, repo, update);
        push_log(&mut sql, repo, tx, update);
    }
    audit::push_guarded(&mut sql, &records, AUDIT);
    let rows = sql
        .build()
        .fetch_all(&mut *write.tx)
        .await
        .map_err(|e| classify(OP, e))?;

    let mut logged = Vec::with_capacity(tx.updates.len());
    let mut audited = 0;
    for row in &rows {
        let get = |e| classify(OP, e);
        match row.try_get::<i64, _>("what").map_err(get)? {
            REF_LOG => logged.push((
                row.try_get::<i64, _>("kind").map_err(get)?,
                row.try_get::<String, _>("name").map_err(get)?,
                row.try_get::<i64, _>("sequence").map_err(get)?,
                row.try_get::<i64, _>("time").map_err(get)?,
            )),
            AUDIT => audited += 1,
            _ => return Err(unexpected("a row of an unknown kind").into()),
        }
    }

    let mut entries = Vec::with_capacity(tx.updates.len());
    for update in &tx.updates {
        let kind = kind_code(update.reference.kind);
        let written = logged
            .iter()
            .find(|(k, name, _, _)| *k == kind && name == update.reference.name.as_str());
        let Some((_, _, sequence, time)) = written else {
            // The swap found the ref in another state: say which, and roll everything back.
            let actual = current(&mut write.tx, repo, &update.reference).await?;
            Transaction::check(update, actual)?;
            return Err(TransactError::OutOfDate {
                reference: update.reference.clone(),
                expected: update.expected,
                actual,
            });
        };
        entries.push(RefLogEntry {
            sequence: to_u64(*sequence),
            reference: update.reference.clone(),
            old: match update.expected {
                Expected::Equals(seen) => Some(seen),
                _ => None,
            },
            new: update.target.new_value(),
            principal: tx.principal.clone(),
            message: tx.message.clone(),
            time: Timestamp::from_millis(*time),
        });
    }

    match (audited, records.last()) {
        (_, None) => {}
        (n, Some(last)) if n == records.len() => write.appended((last.sequence, last.hash)),
        // The head this process remembered was not the chain's: nothing was inserted.
        (0, Some(_)) => {
            let events = records.into_iter().map(|r: AuditRecord| r.event).collect();
            audit::append_all(write, events).await?;
        }
        (_, Some(_)) => return Err(unexpected("part of a guarded audit append").into()),
    }
    Ok(entries)
}

/// The compare-and-swap of one update; changes its row exactly when the ref held what the
/// update expects.
fn push_swap(sql: &mut QueryBuilder<Sqlite>, repo: &RepoId, update: &RefUpdate) {
    let (kind, name) = (
        kind_code(update.reference.kind),
        update.reference.name.as_str(),
    );
    match (update.expected, update.target) {
        (Expected::Equals(seen), Target::Set(id)) => {
            sql.push("UPDATE refs SET target = ")
                .push_bind(id.as_bytes().to_vec());
            push_where_seen(sql, repo, kind, name, &seen);
        }
        (Expected::Equals(seen), Target::Delete) => {
            sql.push("DELETE FROM refs");
            push_where_seen(sql, repo, kind, name, &seen);
        }
        (_, target) => {
            // `is_swap` admits only `Absent` here, which creates.
            sql.push("INSERT OR IGNORE INTO refs (repo, kind, name, target) VALUES (")
                .push_bind(repo.as_str())
                .push(", ")
                .push_bind(kind)
                .push(", ")
                .push_bind(name)
                .push(", ")
                .push_bind(target.new_value().map(|id| id.as_bytes().to_vec()))
                .push(")");
        }
    }
    sql.push(";\n");
}

/// Matches the ref's row only while it points at `seen`.
fn push_where_seen(
    sql: &mut QueryBuilder<Sqlite>,
    repo: &RepoId,
    kind: i64,
    name: &str,
    seen: &ObjectId,
) {
    sql.push(" WHERE repo = ")
        .push_bind(repo.as_str())
        .push(" AND kind = ")
        .push_bind(kind)
        .push(" AND name = ")
        .push_bind(name)
        .push(" AND target = ")
        .push_bind(seen.as_bytes().to_vec());
}

/// The ref-log entry of the swap just before it, written only if that swap changed its row.
/// Its time never goes back for one ref.
fn push_log(sql: &mut QueryBuilder<Sqlite>, repo: &RepoId, tx: &Transaction, update: &RefUpdate) {
    let kind = kind_code(update.reference.kind);
    let name = update.reference.name.as_str();
    let old = match update.expected {
        Expected::Equals(seen) => Some(seen.as_bytes().to_vec()),
        _ => None,
    };
    let time = tx.time.as_millis();
    sql.push("INSERT INTO ref_log (repo, kind, name, old, new, principal, message, time) SELECT ")
        .push_bind(repo.as_str())
        .push(", ")
        .push_bind(kind)
        .push(", ")
        .push_bind(name)
        .push(", ")
        .push_bind(old)
        .push(", ")
        .push_bind(update.target.new_value().map(|id| id.as_bytes().to_vec()))
        .push(", ")
        .push_bind(tx.principal.as_str())
        .push(", ")
        .push_bind(tx.message.as_str())
        .push(", max(")
        .push_bind(time)
        .push(", coalesce((SELECT time FROM ref_log WHERE repo = ")
        .push_bind(repo.as_str())
        .push(" AND kind = ")
        .push_bind(kind)
        .push(" AND name = ")
        .push_bind(name)
        .push(" ORDER BY sequence DESC LIMIT 1), ")
        .push_bind(time)
        .push(")) WHERE changes() = 1 RETURNING ")
        .push(REF_LOG)
        .push(" AS what, sequence, time, kind, name;\n");
}

fn unexpected(what: &str) -> BackendError {
    BackendError::new(
        BackendErrorKind::Corrupt,
        OP,
        format!("the publish's statements answered {what}"),
    )
}
