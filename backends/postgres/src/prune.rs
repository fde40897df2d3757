//! Deleting unreachable objects and whole repositories.
//!
//! Publishes that store objects hold a shared, transaction-scoped advisory lock on their
//! repository from their first statement; a delete holds it exclusively. So a delete that finds
//! the newest ref-log entry unchanged cannot interleave with a publish: no publish can have
//! found an object present (and skipped storing it) and then move a ref after the delete.

use async_trait::async_trait;
use pangolin_refs::Prune;
use pangolin_store::{BackendError, ObjectId, RepoId};
use sqlx::{PgConnection, Row};

use crate::{PostgresBackend, classify};

/// The first key of the two-key advisory locks on repositories ("PGLN"); the audit chain's
/// lock uses the one-key space, which never overlaps this one.
const REPO_LOCK_CLASS: i32 = 0x5047_4c4e;

/// Waits for (shared) or takes (exclusive) the lock on `repo` until the transaction ends.
pub(crate) async fn lock_repo(
    conn: &mut PgConnection,
    repo: &RepoId,
    exclusive: bool,
) -> Result<(), sqlx::Error> {
    let sql = if exclusive {
        "SELECT pg_advisory_xact_lock($1, hashtext($2))"
    } else {
        "SELECT pg_advisory_xact_lock_shared($1, hashtext($2))"
    };
    sqlx::query(sql)
        .bind(REPO_LOCK_CLASS)
        .bind(repo.as_str())
        .execute(conn)
        .await
        .map(|_| ())
}

async fn ref_moves(conn: &mut PgConnection, repo: &RepoId) -> Result<u64, sqlx::Error> {
    let row =
        sqlx::query("SELECT coalesce(max(sequence), 0) AS moves FROM ref_log WHERE repo = $1")
            .bind(repo.as_str())
            .fetch_one(conn)
            .await?;
    Ok(crate::to_u64(row.try_get("moves")?))
}

#[async_trait]
impl Prune for PostgresBackend {
    async fn ref_moves(&self, repo: &RepoId) -> Result<u64, BackendError> {
        const OP: &str = "prune.ref_moves";
        // Under the exclusive lock: sequence numbers are taken before commit, so a publish in
        // flight could otherwise commit a smaller number than one already read.
        let mut tx = self.pool().begin().await.map_err(|e| classify(OP, e))?;
        lock_repo(&mut tx, repo, true)
            .await
            .map_err(|e| classify(OP, e))?;
        let moves = ref_moves(&mut tx, repo)
            .await
            .map_err(|e| classify(OP, e))?;
        tx.commit().await.map_err(|e| classify(OP, e))?;
        Ok(moves)
    }

    async fn list_objects(
        &self,
        repo: &RepoId,
        after: Option<ObjectId>,
        limit: usize,
    ) -> Result<Vec<ObjectId>, BackendError> {
        const OP: &str = "prune.list_objects";
        let rows = sqlx::query(
            "SELECT id FROM objects WHERE repo = $1 AND ($2::bytea IS NULL OR id > $2) \
             ORDER BY id LIMIT $3",
        )
        .bind(repo.as_str())
        .bind(after.map(|id| id.as_bytes().to_vec()))
        .bind(crate::to_i64(limit as u64))
        .fetch_all(self.pool())
        .await
        .map_err(|e| classify(OP, e))?;
        rows.iter()
            .map(|row| {
                let raw: Vec<u8> = row.try_get("id").map_err(|e| classify(OP, e))?;
                <[u8; 32]>::try_from(raw)
                    .map(ObjectId::from_bytes)
                    .map_err(|_| {
                        BackendError::new(
                            pangolin_store::BackendErrorKind::Corrupt,
                            OP,
                            "stored object has an id that is not 32 bytes",
                        )
                    })
            })
            .collect()
    }

    async fn delete_objects(
        &self,
        repo: &RepoId,
        moves: u64,
        ids: &[ObjectId],
    ) -> Result<bool, BackendError> {
        const OP: &str = "prune.delete_objects";
        let mut tx = self.pool().begin().await.map_err(|e| classify(OP, e))?;
        lock_repo(&mut tx, repo, true)
            .await
            .map_err(|e| classify(OP, e))?;
        if ref_moves(&mut tx, repo)
            .await
            .map_err(|e| classify(OP, e))?
            != moves
        {
            tx.rollback().await.map_err(|e| classify(OP, e))?;
            return Ok(false);
        }
        let ids: Vec<Vec<u8>> = ids.iter().map(|id| id.as_bytes().to_vec()).collect();
        sqlx::query("DELETE FROM objects WHERE repo = $1 AND id = ANY($2)")
            .bind(repo.as_str())
            .bind(ids)
            .execute(&mut *tx)
            .await
            .map_err(|e| classify(OP, e))?;
        tx.commit().await.map_err(|e| classify(OP, e))?;
        Ok(true)
    }

    async fn drop_repo(&self, repo: &RepoId) -> Result<(), BackendError> {
        const OP: &str = "prune.drop_repo";
        let mut tx = self.pool().begin().await.map_err(|e| classify(OP, e))?;
        lock_repo(&mut tx, repo, true)
            .await
            .map_err(|e| classify(OP, e))?;
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
