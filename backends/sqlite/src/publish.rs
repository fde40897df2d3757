//! Publishing a change in as few round trips as SQLite allows.
//!
//! Every statement sqlx runs is a round trip to the connection's worker thread and back, and
//! on a commit's path those hand-offs cost more than SQLite's own work. So a publish sends its
//! objects, its compare-and-swaps with their ref-log entries and its audit records as one
//! batch of statements, from `BEGIN` to `COMMIT`: one round trip whatever it carries. The
//! checks stay in SQL: a ref-log entry is written only when the swap before it changed its row
//! (`changes() = 1`), and an audit record only when the chain ends where the record says its
//! predecessor is; after each, a guard statement fails when it wrote nothing, which stops the
//! batch before its `COMMIT`. Then the publish is rolled back and done again step by step
//! inside one transaction, which says which ref was elsewhere, or reads the audit chain's
//! head the writer remembered wrongly and appends there.

use pangolin_records::{AuditEvent, AuditRecord};
use pangolin_refs::{Expected, RefLogEntry, RefUpdate, Target, TransactError, Transaction};
use pangolin_store::{BackendError, BackendErrorKind, ObjectId, RawObject, RepoId, Timestamp};
use sqlx::sqlite::SqliteRow;
use sqlx::{QueryBuilder, Row, Sqlite, SqliteConnection};

use crate::objects::{INSERT_CHUNK, push_objects};
use crate::refs::{current, kind_code};
use crate::{AuditHead, Durability, SqliteBackend, Write, audit, classify, to_u64};

const OP: &str = "refs.publish";

/// What a row of the batch's answer is: a written ref-log entry or an inserted audit record.
const REF_LOG: i64 = 0;
const AUDIT: i64 = 1;

/// The name of the check that stops a batch whose guard found nothing written.
const REFUSED: &str = "publish_refused";

/// Creates, on the writer's durable connection, the table the guards insert into: a row is
/// inserted only when a check failed, and the constraint refuses it.
pub(crate) async fn create_guard(conn: &mut SqliteConnection) -> Result<(), BackendError> {
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "CREATE TEMP TABLE IF NOT EXISTS publish_guard \
         (refused INTEGER CONSTRAINT {REFUSED} CHECK (refused = 0))"
    )))
    .execute(conn)
    .await
    .map_err(|e| classify("open", e))?;
    Ok(())
}

/// Fails the batch unless the statement before it changed exactly one row.
pub(crate) fn push_guard(sql: &mut QueryBuilder<Sqlite>) {
    sql.push("INSERT INTO temp.publish_guard (refused) SELECT 1 WHERE changes() <> 1;\n");
}

/// Whether `error` is a guard stopping a batch.
fn is_refusal(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.message().contains(REFUSED))
}

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
        // One request's event, or none: a lone writer (see `checkpoint`).
        if audit.len() > 1 {
            self.checkpointer.writers_queue();
        }
        let mut write = self.lock_writer(Durability::Durable, OP).await?;
        let swaps_only = tx.updates.iter().all(is_swap);
        let audit = if swaps_only {
            match in_one_go(&mut write, repo, objects, tx, audit).await? {
                InOneGo::Committed(entries) => return Ok(entries),
                InOneGo::NotCommitted(audit) => audit,
            }
        } else {
            audit
        };
        write.begin().await?;
        let result = if swaps_only {
            batch(&mut write, repo, objects, tx, audit).await
        } else {
            step_by_step(&mut write, repo, objects, tx, audit).await
        };
        write.finish(result).await
    }
}

/// How a publish sent in one go ended.
enum InOneGo {
    Committed(Vec<RefLogEntry>),
    /// Not sent (the audit chain's head is not known), or a guard stopped it and it was
    /// rolled back: publish step by step, with these events.
    NotCommitted(Vec<AuditEvent>),
}

/// The whole publish as one batch, `BEGIN` to `COMMIT`, when the audit chain's head is known.
async fn in_one_go(
    write: &mut Write<'_>,
    repo: &RepoId,
    objects: &[RawObject],
    tx: &Transaction,
    audit: Vec<AuditEvent>,
) -> Result<InOneGo, TransactError> {
    let head = match (audit.is_empty(), write.audit_head()) {
        (true, _) => None,
        (false, AuditHead::Known(head)) => head,
        (false, AuditHead::Unknown) => return Ok(InOneGo::NotCommitted(audit)),
    };
    let records = AuditRecord::chain(head, audit);
    let mut sql = QueryBuilder::<Sqlite>::new("BEGIN IMMEDIATE;\n");
    push_changes(&mut sql, repo, objects, tx, &records, true);
    sql.push("COMMIT;");
    write.begins_itself();
    let rows = match sql.build().fetch_all(write.conn()?).await {
        Ok(rows) => rows,
        Err(error) => {
            write.roll_back().await;
            if is_refusal(&error) {
                let events = records.into_iter().map(|r| r.event).collect();
                return Ok(InOneGo::NotCommitted(events));
            }
            return Err(classify(OP, error).into());
        }
    };
    if let Some(last) = records.last() {
        write.appended((last.sequence, last.hash));
    }
    write.committed();
    let (logged, audited) = answered(&rows)?;
    if audited != records.len() {
        return Err(unexpected("fewer audit records than it was given").into());
    }
    let mut entries = Vec::with_capacity(tx.updates.len());
    for update in &tx.updates {
        let (sequence, time) =
            logged_for(&logged, update).ok_or_else(|| unexpected("a swap without its entry"))?;
        entries.push(entry(tx, update, sequence, time));
    }
    Ok(InOneGo::Committed(entries))
}

/// The statements of a publish: objects, then each swap and its ref-log entry, then the audit
/// records; with `guarded`, each entry and record followed by its guard.
fn push_changes(
    sql: &mut QueryBuilder<Sqlite>,
    repo: &RepoId,
    objects: &[RawObject],
    tx: &Transaction,
    records: &[AuditRecord],
    guarded: bool,
) {
    for chunk in objects.chunks(INSERT_CHUNK) {
        push_objects(sql, repo, chunk);
        sql.push(";\n");
    }
    for update in &tx.updates {
        push_swap(sql, repo, update);
        push_log(sql, repo, tx, update);
        if guarded {
            push_guard(sql);
        }
    }
    audit::push_guarded(sql, records, AUDIT, guarded);
}

/// A ref-log entry the batch wrote: kind, name, sequence, time.
type Logged = (i64, String, i64, i64);

/// The ref-log entries and the number of audit records the batch's rows say it wrote.
fn answered(rows: &[SqliteRow]) -> Result<(Vec<Logged>, usize), BackendError> {
    let mut logged = Vec::new();
    let mut audited = 0;
    for row in rows {
        let get = |e| classify(OP, e);
        match row.try_get::<i64, _>("what").map_err(get)? {
            REF_LOG => logged.push((
                row.try_get::<i64, _>("kind").map_err(get)?,
                row.try_get::<String, _>("name").map_err(get)?,
                row.try_get::<i64, _>("sequence").map_err(get)?,
                row.try_get::<i64, _>("time").map_err(get)?,
            )),
            AUDIT => audited += 1,
            _ => return Err(unexpected("a row of an unknown kind")),
        }
    }
    Ok((logged, audited))
}

/// The sequence number and time of `update`'s entry, if the batch wrote one.
fn logged_for(logged: &[Logged], update: &RefUpdate) -> Option<(i64, i64)> {
    let kind = kind_code(update.reference.kind);
    logged
        .iter()
        .find(|(k, name, _, _)| *k == kind && name == update.reference.name.as_str())
        .map(|(_, _, sequence, time)| (*sequence, *time))
}

fn entry(tx: &Transaction, update: &RefUpdate, sequence: i64, time: i64) -> RefLogEntry {
    RefLogEntry {
        sequence: to_u64(sequence),
        reference: update.reference.clone(),
        old: match update.expected {
            Expected::Equals(seen) => Some(seen),
            _ => None,
        },
        new: update.target.new_value(),
        principal: tx.principal.clone(),
        message: tx.message.clone(),
        time: Timestamp::from_millis(time),
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
    crate::objects::insert_objects(write.conn()?, repo, objects).await?;
    let entries = crate::refs::apply(write.conn()?, repo, tx).await?;
    audit::append_all(write, audit).await?;
    Ok(entries)
}

/// The publish inside a transaction already begun: the statements without guards, then
/// whatever they did not write explained or done again.
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
        (false, AuditHead::Unknown) => audit::read_head(write.conn()?).await?,
    };
    let records = AuditRecord::chain(head, audit);
    let mut sql = QueryBuilder::<Sqlite>::new("");
    push_changes(&mut sql, repo, objects, tx, &records, false);
    let rows = sql
        .build()
        .fetch_all(write.conn()?)
        .await
        .map_err(|e| classify(OP, e))?;
    let (logged, audited) = answered(&rows)?;

    let mut entries = Vec::with_capacity(tx.updates.len());
    for update in &tx.updates {
        let Some((sequence, time)) = logged_for(&logged, update) else {
            // The swap found the ref in another state: say which, and roll everything back.
            let actual = current(write.conn()?, repo, &update.reference).await?;
            Transaction::check(update, actual)?;
            return Err(TransactError::OutOfDate {
                reference: update.reference.clone(),
                expected: update.expected,
                actual,
            });
        };
        entries.push(entry(tx, update, sequence, time));
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
