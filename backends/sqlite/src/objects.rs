//! Objects: one row per (repository, id), inserted once.

use async_trait::async_trait;
use bytes::Bytes;
use pangolin_store::{
    BackendError, HashPrefix, ObjectId, ObjectKind, ObjectStore, RawObject, RepoId,
};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::{Durability, SqliteBackend, classify};

/// Ids per `IN (...)` query of `get_many`.
const GET_MANY_CHUNK: usize = 256;

fn object_from_row(row: &SqliteRow, operation: &'static str) -> Result<RawObject, BackendError> {
    let id: Vec<u8> = row.try_get("id").map_err(|e| classify(operation, e))?;
    let kind: i64 = row.try_get("kind").map_err(|e| classify(operation, e))?;
    let data: Vec<u8> = row.try_get("data").map_err(|e| classify(operation, e))?;
    let corrupt = |what: &str| {
        BackendError::new(
            pangolin_store::BackendErrorKind::Corrupt,
            operation,
            format!("stored object has {what}"),
        )
    };
    let id: [u8; 32] = id
        .try_into()
        .map_err(|_| corrupt("an id that is not 32 bytes"))?;
    let kind = u8::try_from(kind)
        .ok()
        .and_then(ObjectKind::from_u8)
        .ok_or_else(|| corrupt("an unknown kind"))?;
    Ok(RawObject {
        id: ObjectId::from_bytes(id),
        kind,
        data: Bytes::from(data),
    })
}

#[async_trait]
impl ObjectStore for SqliteBackend {
    async fn get(&self, repo: &RepoId, id: &ObjectId) -> Result<Option<RawObject>, BackendError> {
        const OP: &str = "objects.get";
        let row = sqlx::query("SELECT id, kind, data FROM objects WHERE repo = ? AND id = ?")
            .bind(repo.as_str())
            .bind(id.as_bytes().as_slice())
            .fetch_optional(self.pool())
            .await
            .map_err(|e| classify(OP, e))?;
        row.map(|r| object_from_row(&r, OP)).transpose()
    }

    async fn get_many(
        &self,
        repo: &RepoId,
        ids: &[ObjectId],
    ) -> Result<Vec<Option<RawObject>>, BackendError> {
        const OP: &str = "objects.get_many";
        let mut found = std::collections::HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(GET_MANY_CHUNK) {
            let placeholders = vec!["?"; chunk.len()].join(", ");
            let sql = format!(
                "SELECT id, kind, data FROM objects WHERE repo = ? AND id IN ({placeholders})"
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(repo.as_str());
            for id in chunk {
                query = query.bind(id.as_bytes().to_vec());
            }
            for row in query
                .fetch_all(self.pool())
                .await
                .map_err(|e| classify(OP, e))?
            {
                let object = object_from_row(&row, OP)?;
                found.insert(object.id, object);
            }
        }
        Ok(ids.iter().map(|id| found.get(id).cloned()).collect())
    }

    async fn put_many(&self, repo: &RepoId, objects: &[RawObject]) -> Result<(), BackendError> {
        const OP: &str = "objects.put_many";
        if objects.is_empty() {
            return Ok(());
        }
        let mut write = self.begin_write(Durability::Objects, OP).await?;
        let result = insert_objects(write.conn()?, repo, objects).await;
        write.finish(result).await
    }

    async fn contains(&self, repo: &RepoId, id: &ObjectId) -> Result<bool, BackendError> {
        const OP: &str = "objects.contains";
        let row = sqlx::query("SELECT 1 FROM objects WHERE repo = ? AND id = ?")
            .bind(repo.as_str())
            .bind(id.as_bytes().as_slice())
            .fetch_optional(self.pool())
            .await
            .map_err(|e| classify(OP, e))?;
        Ok(row.is_some())
    }

    async fn find_by_prefix(
        &self,
        repo: &RepoId,
        prefix: &HashPrefix,
        limit: usize,
    ) -> Result<Vec<ObjectId>, BackendError> {
        const OP: &str = "objects.find_by_prefix";
        let rows =
            sqlx::query("SELECT id FROM objects WHERE repo = ? AND id >= ? ORDER BY id LIMIT ?")
                .bind(repo.as_str())
                .bind(prefix.lower_bound().as_bytes().as_slice())
                .bind(crate::to_i64(limit as u64))
                .fetch_all(self.pool())
                .await
                .map_err(|e| classify(OP, e))?;
        let mut ids = Vec::with_capacity(rows.len());
        for row in rows {
            let raw: Vec<u8> = row.try_get("id").map_err(|e| classify(OP, e))?;
            let Ok(bytes) = <[u8; 32]>::try_from(raw) else {
                continue;
            };
            let id = ObjectId::from_bytes(bytes);
            if !prefix.matches(&id) {
                break;
            }
            ids.push(id);
        }
        Ok(ids)
    }
}

/// Rows per multi-row `INSERT` (four parameters each, far below SQLite's limit).
pub(crate) const INSERT_CHUNK: usize = 200;

pub(crate) async fn insert_objects(
    conn: &mut sqlx::SqliteConnection,
    repo: &RepoId,
    objects: &[RawObject],
) -> Result<(), BackendError> {
    // One statement per chunk: each statement is a round trip to SQLite's worker thread.
    for chunk in objects.chunks(INSERT_CHUNK) {
        let mut sql = sqlx::QueryBuilder::<sqlx::Sqlite>::new("");
        push_objects(&mut sql, repo, chunk);
        sql.build()
            .execute(&mut *conn)
            .await
            .map_err(|e| classify("objects.put_many", e))?;
    }
    Ok(())
}

/// One `INSERT` of `objects` (at most [`INSERT_CHUNK`]), skipping those already stored.
pub(crate) fn push_objects(
    sql: &mut sqlx::QueryBuilder<sqlx::Sqlite>,
    repo: &RepoId,
    objects: &[RawObject],
) {
    sql.push("INSERT OR IGNORE INTO objects (repo, id, kind, data) ");
    sql.push_values(objects, |mut row, object| {
        row.push_bind(repo.as_str())
            .push_bind(object.id.as_bytes().as_slice())
            .push_bind(i64::from(object.kind.as_u8()))
            .push_bind(object.data.as_ref());
    });
}
