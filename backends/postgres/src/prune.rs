//! Deleting unreachable objects and whole repositories.
//!
//! A delete runs in one transaction: the `DELETE`, then a reading of the repository's ref log
//! (how many entries, and the newest entry's number), committed only if it is what was read
//! before history was walked. A publish that found an object stored holds that row locked (see
//! `objects::insert_objects`) until it commits with its ref-log entries, so the `DELETE` waits
//! for it and the reading, a later statement, sees its move; a publish that comes after the
//! `DELETE` waits for it to end and stores the object again. The count, not only the newest
//! number, because numbers are taken before commit: a smaller one can commit after a larger
//! one was read.

use async_trait::async_trait;
use pangolin_refs::{ObjectQuery, Prune, RefMoves};
use pangolin_store::{BackendError, BackendErrorKind, ObjectId, ObjectKind, RepoId};
use sqlx::{PgConnection, Row};

use crate::{PostgresBackend, classify};

async fn ref_moves(conn: &mut PgConnection, repo: &RepoId) -> Result<RefMoves, sqlx::Error> {
    let row = sqlx::query(
        "SELECT count(*) AS entries, coalesce(max(sequence), 0) AS newest \
         FROM ref_log WHERE repo = $1",
    )
    .bind(repo.as_str())
    .fetch_one(conn)
    .await?;
    let entries = crate::to_u64(row.try_get("entries")?);
    let newest = crate::to_u64(row.try_get("newest")?);
    // The count sees every committed move; the newest number, never reused, tells a dropped
    // and recreated repository from the one read before.
    Ok(RefMoves((u128::from(entries) << 64) | u128::from(newest)))
}

#[async_trait]
impl Prune for PostgresBackend {
    async fn ref_moves(&self, repo: &RepoId) -> Result<RefMoves, BackendError> {
        const OP: &str = "prune.ref_moves";
        let mut conn = self.pool().acquire().await.map_err(|e| classify(OP, e))?;
        ref_moves(&mut conn, repo)
            .await
            .map_err(|e| classify(OP, e))
    }

    async fn list_objects(
        &self,
        repo: &RepoId,
        query: ObjectQuery,
    ) -> Result<Vec<(ObjectId, ObjectKind)>, BackendError> {
        const OP: &str = "prune.list_objects";
        let after = query.after.map(|id| id.as_bytes().to_vec());
        let kind = query.kind.map(|kind| i16::from(kind.as_u8()));
        let rows = sqlx::query(
            "SELECT id, kind FROM objects WHERE repo = $1 AND ($2::bytea IS NULL OR id > $2) \
             AND ($3::smallint IS NULL OR kind = $3) ORDER BY id LIMIT $4",
        )
        .bind(repo.as_str())
        .bind(after)
        .bind(kind)
        .bind(crate::to_i64(query.limit as u64))
        .fetch_all(self.pool())
        .await
        .map_err(|e| classify(OP, e))?;
        let corrupt = |what: &str| BackendError::new(BackendErrorKind::Corrupt, OP, what);
        rows.iter()
            .map(|row| {
                let id: Vec<u8> = row.try_get("id").map_err(|e| classify(OP, e))?;
                let kind: i16 = row.try_get("kind").map_err(|e| classify(OP, e))?;
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
        let mut tx = self.pool().begin().await.map_err(|e| classify(OP, e))?;
        let ids: Vec<Vec<u8>> = ids.iter().map(|id| id.as_bytes().to_vec()).collect();
        sqlx::query("DELETE FROM objects WHERE repo = $1 AND id = ANY($2)")
            .bind(repo.as_str())
            .bind(ids)
            .execute(&mut *tx)
            .await
            .map_err(|e| classify(OP, e))?;
        // After the delete: it waited for every publish holding one of these rows.
        if ref_moves(&mut tx, repo)
            .await
            .map_err(|e| classify(OP, e))?
            != moves
        {
            tx.rollback().await.map_err(|e| classify(OP, e))?;
            return Ok(false);
        }
        tx.commit().await.map_err(|e| classify(OP, e))?;
        Ok(true)
    }

    async fn drop_repo(&self, repo: &RepoId) -> Result<(), BackendError> {
        const OP: &str = "prune.drop_repo";
        let mut tx = self.pool().begin().await.map_err(|e| classify(OP, e))?;
        for sql in [
            "DELETE FROM refs WHERE repo = $1",
            "DELETE FROM ref_log WHERE repo = $1",
            "DELETE FROM objects WHERE repo = $1",
        ] {
            sqlx::query(sql)
                .bind(repo.as_str())
                .execute(&mut *tx)
                .await
                .map_err(|e| classify(OP, e))?;
        }
        tx.commit().await.map_err(|e| classify(OP, e))?;
        Ok(())
    }
}
