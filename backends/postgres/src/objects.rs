//! Objects: one row per (repository, id), inserted once.

use async_trait::async_trait;
use bytes::Bytes;
use pangolin_store::{
    BackendError, BackendErrorKind, HashPrefix, ObjectId, ObjectKind, ObjectStore, RawObject,
    RepoId,
};
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::{PostgresBackend, classify, to_i64};

fn object_from_row(row: &PgRow, operation: &'static str) -> Result<RawObject, BackendError> {
    let get = |e| classify(operation, e);
    let id: Vec<u8> = row.try_get("id").map_err(get)?;
    let kind: i16 = row.try_get("kind").map_err(get)?;
    let data: Vec<u8> = row.try_get("data").map_err(get)?;
    let corrupt = |what: &str| {
        BackendError::new(
            BackendErrorKind::Corrupt,
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
impl ObjectStore for PostgresBackend {
    async fn get(&self, repo: &RepoId, id: &ObjectId) -> Result<Option<RawObject>, BackendError> {
        const OP: &str = "objects.get";
        let row = sqlx::query("SELECT id, kind, data FROM objects WHERE repo = $1 AND id = $2")
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
        let wanted: Vec<Vec<u8>> = ids.iter().map(|id| id.as_bytes().to_vec()).collect();
        let rows =
            sqlx::query("SELECT id, kind, data FROM objects WHERE repo = $1 AND id = ANY($2)")
                .bind(repo.as_str())
                .bind(wanted)
                .fetch_all(self.pool())
                .await
                .map_err(|e| classify(OP, e))?;
        let mut found = std::collections::HashMap::with_capacity(rows.len());
        for row in rows {
            let object = object_from_row(&row, OP)?;
            found.insert(object.id, object);
        }
        Ok(ids.iter().map(|id| found.get(id).cloned()).collect())
    }

    async fn put_many(&self, repo: &RepoId, objects: &[RawObject]) -> Result<(), BackendError> {
        const OP: &str = "objects.put_many";
        if objects.is_empty() {
            return Ok(());
        }
        insert_objects(self.pool(), repo, objects)
            .await
            .map_err(|e| classify(OP, e))
    }

    async fn contains(&self, repo: &RepoId, id: &ObjectId) -> Result<bool, BackendError> {
        const OP: &str = "objects.contains";
        let row = sqlx::query("SELECT 1 FROM objects WHERE repo = $1 AND id = $2")
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
            sqlx::query("SELECT id FROM objects WHERE repo = $1 AND id >= $2 ORDER BY id LIMIT $3")
                .bind(repo.as_str())
                .bind(prefix.lower_bound().as_bytes().as_slice())
                .bind(to_i64(limit as u64))
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

/// Inserts `objects` in one statement: arrays of ids, kinds and bodies, unnested. An object
/// already stored is not written again but its row is locked until the transaction ends
/// (`DO UPDATE ... WHERE false` locks and changes nothing), so a delete of it waits for the ref
/// move that may depend on it, and then sees that move (see `prune`). Rows new to the table
/// cost nothing more.
pub(crate) async fn insert_objects<'c, E>(
    executor: E,
    repo: &RepoId,
    objects: &[RawObject],
) -> Result<(), sqlx::Error>
where
    E: sqlx::PgExecutor<'c>,
{
    if objects.is_empty() {
        return Ok(());
    }
    // `DO UPDATE` refuses to meet one row twice in a statement: one copy of each object.
    let mut seen = std::collections::HashSet::with_capacity(objects.len());
    let unique: Vec<&RawObject> = objects.iter().filter(|o| seen.insert(o.id)).collect();
    let ids: Vec<Vec<u8>> = unique.iter().map(|o| o.id.as_bytes().to_vec()).collect();
    let kinds: Vec<i16> = unique.iter().map(|o| i16::from(o.kind.as_u8())).collect();
    let data: Vec<Vec<u8>> = unique.iter().map(|o| o.data.to_vec()).collect();
    sqlx::query(
        "INSERT INTO objects AS stored (repo, id, kind, data) \
         SELECT $1, * FROM UNNEST($2::bytea[], $3::smallint[], $4::bytea[]) \
         ON CONFLICT (repo, id) DO UPDATE SET kind = stored.kind WHERE false",
    )
    .bind(repo.as_str())
    .bind(ids)
    .bind(kinds)
    .bind(data)
    .execute(executor)
    .await?;
    Ok(())
}
