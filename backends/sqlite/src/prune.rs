//! Deleting unreachable objects and whole repositories. Writes are serialized, so a delete
//! that finds the newest ref-log entry unchanged cannot interleave with a publish.

use async_trait::async_trait;
use pangolin_refs::{ObjectQuery, Prune, RefMoves};
use pangolin_store::{BackendError, BackendErrorKind, ObjectId, ObjectKind, RepoId};
use sqlx::Row;

use crate::{Durability, SqliteBackend, classify};

/// Ids per `DELETE ... IN (...)`.
const DELETE_CHUNK: usize = 500;

async fn ref_moves(
    conn: &mut sqlx::SqliteConnection,
    repo: &RepoId,
) -> Result<RefMoves, BackendError> {
    const OP: &str = "prune.ref_moves";
    let row = sqlx::query("SELECT coalesce(max(sequence), 0) AS moves FROM ref_log WHERE repo = ?")
        .bind(repo.as_str())
        .fetch_one(conn)
        .await
        .map_err(|e| classify(OP, e))?;
    let moves: i64 = row.try_get("moves").map_err(|e| classify(OP, e))?;
    // Sequence numbers are never reused, and writes are serialized: the newest one is enough.
    Ok(RefMoves(u128::from(crate::to_u64(moves))))
}

#[async_trait]
impl Prune for SqliteBackend {
    async fn ref_moves(&self, repo: &RepoId) -> Result<RefMoves, BackendError> {
        let mut conn = self
            .pool()
            .acquire()
            .await
            .map_err(|e| classify("prune.ref_moves", e))?;
        ref_moves(&mut conn, repo).await
    }

    async fn list_objects(
        &self,
        repo: &RepoId,
        query: ObjectQuery,
    ) -> Result<Vec<(ObjectId, ObjectKind)>, BackendError> {
        const OP: &str = "prune.list_objects";
        let after = query.after.map(|id| id.as_bytes().to_vec());
        let kind = query.kind.map(|kind| i64::from(kind.as_u8()));
        let rows = sqlx::query(
            "SELECT id, kind FROM objects WHERE repo = ? AND (? IS NULL OR id > ?) \
             AND (? IS NULL OR kind = ?) ORDER BY id LIMIT ?",
        )
        .bind(repo.as_str())
        .bind(after.clone())
        .bind(after)
        .bind(kind)
        .bind(kind)
        .bind(crate::to_i64(query.limit as u64))
        .fetch_all(self.pool())
        .await
        .map_err(|e| classify(OP, e))?;
        let corrupt = |what: &str| BackendError::new(BackendErrorKind::Corrupt, OP, what);
        rows.iter()
            .map(|row| {
                let id: Vec<u8> = row.try_get("id").map_err(|e| classify(OP, e))?;
                let kind: i64 = row.try_get("kind").map_err(|e| classify(OP, e))?;
                let id = <[u8; 32]>::try_from(id)
                    .map(ObjectId::from_bytes)
                    .map_err(|_| corrupt("stored object has an id that is not 32 bytes"))?;
                let kind = u8::try_from(kind)
                    .ok()
                    .and_then(ObjectKind::from_u8)
                    .ok_or_else(|| corrupt("stored object has an unknown kind"))?;
                Ok((id, kind))
            })
            .collect()
    }

    async fn delete_objects(
        &self,
        repo: &RepoId,
        moves: RefMoves,
        ids: &[ObjectId],
    ) -> Result<bool, BackendError> {
        const OP: &str = "prune.delete_objects";
        let mut write = self.begin_write(Durability::Durable, OP).await?;
        let result = async {
            if ref_moves(write.conn()?, repo).await? != moves {
                return Ok(false);
            }
            for chunk in ids.chunks(DELETE_CHUNK) {
                let mut sql =
                    sqlx::QueryBuilder::<sqlx::Sqlite>::new("DELETE FROM objects WHERE repo = ");
                sql.push_bind(repo.as_str()).push(" AND id IN (");
                let mut list = sql.separated(", ");
                for id in chunk {
                    list.push_bind(id.as_bytes().as_slice());
                }
                sql.push(")");
                sql.build()
                    .execute(write.conn()?)
                    .await
                    .map_err(|e| classify(OP, e))?;
            }
            Ok(true)
        }
        .await;
        write.finish(result).await
    }

    async fn drop_repo(&self, repo: &RepoId) -> Result<(), BackendError> {
        const OP: &str = "prune.drop_repo";
        let mut write = self.begin_write(Durability::Durable, OP).await?;
        let result = async {
            for table in ["refs", "ref_log", "objects"] {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DELETE FROM {table} WHERE repo = ?"
                )))
                .bind(repo.as_str())
                .execute(write.conn()?)
                .await
                .map_err(|e| classify(OP, e))?;
            }
            Ok(())
        }
        .await;
        write.finish(result).await
    }
}
