//! Deleting unreachable objects and whole repositories, under the repository's lock: the one
//! every publish holds while it checks its refs and writes its batch.

use pangolin_refs::{ObjectQuery, Prune, RefMoves};

use super::*;

fn sequence_key(repo: &RepoId) -> Vec<u8> {
    let mut key = REF_SEQUENCE.to_vec();
    key.extend_from_slice(&repo_prefix(repo));
    key
}

impl Inner {
    fn ref_moves(&self, repo: &RepoId, operation: &'static str) -> Result<RefMoves, BackendError> {
        let next = self
            .get(META, &sequence_key(repo), operation)?
            .map(|v| u64_from(&v, operation))
            .transpose()?
            .unwrap_or(0);
        Ok(RefMoves(u128::from(next)))
    }
}

#[async_trait]
impl Prune for RocksBackend {
    async fn ref_moves(&self, repo: &RepoId) -> Result<RefMoves, BackendError> {
        const OP: &str = "prune.ref_moves";
        let repo = repo.clone();
        self.blocking(OP, move |inner| {
            let lock = inner.repo_lock(&repo);
            let _guard = lock.lock();
            inner.ref_moves(&repo, OP)
        })
        .await?
    }

    async fn list_objects(
        &self,
        repo: &RepoId,
        query: ObjectQuery,
    ) -> Result<Vec<(ObjectId, ObjectKind)>, BackendError> {
        const OP: &str = "prune.list_objects";
        let prefix = repo_prefix(repo);
        let mut start = prefix.clone();
        if let Some(after) = query.after {
            start.extend_from_slice(after.as_bytes());
            // The first key after `after`'s own.
            start.push(0);
        }
        let mut listed = Vec::new();
        for item in self.inner.scan(OBJECTS, &prefix, &start, OP)? {
            if listed.len() == query.limit {
                break;
            }
            let (key, value) = item?;
            // Values start with the kind byte.
            let kind = value
                .first()
                .and_then(|kind| ObjectKind::from_u8(*kind))
                .ok_or_else(|| corrupt(OP, "an object of an unknown kind"))?;
            if query.kind.is_none_or(|wanted| wanted == kind) {
                listed.push((id_from(&key[prefix.len()..], OP)?, kind));
            }
        }
        Ok(listed)
    }

    async fn delete_objects(
        &self,
        repo: &RepoId,
        moves: RefMoves,
        ids: &[ObjectId],
    ) -> Result<bool, BackendError> {
        const OP: &str = "prune.delete_objects";
        let repo = repo.clone();
        let prefix = repo_prefix(&repo);
        let keys: Vec<Vec<u8>> = ids
            .iter()
            .map(|id| {
                let mut key = prefix.clone();
                key.extend_from_slice(id.as_bytes());
                key
            })
            .collect();
        self.blocking(OP, move |inner| {
            let lock = inner.repo_lock(&repo);
            let _guard = lock.lock();
            if inner.ref_moves(&repo, OP)? != moves {
                return Ok(false);
            }
            let mut batch = WriteBatch::default();
            let cf = inner.cf(OBJECTS)?;
            for key in &keys {
                batch.delete_cf(cf, key);
            }
            inner.write_durably(batch, OP)?;
            Ok(true)
        })
        .await?
    }

    async fn drop_repo(&self, repo: &RepoId) -> Result<(), BackendError> {
        const OP: &str = "prune.drop_repo";
        let repo = repo.clone();
        self.blocking(OP, move |inner| {
            let lock = inner.repo_lock(&repo);
            let _guard = lock.lock();
            // Every key of the repository starts with `repo \0`; `repo \x01` is the first key
            // past them. The sequence counter stays, so numbers are never reused.
            let start = repo_prefix(&repo);
            let mut end = repo.as_str().as_bytes().to_vec();
            end.push(1);
            let mut batch = WriteBatch::default();
            for family in [OBJECTS, REFS, REF_LOG, REF_LOG_TIME, REF_LOG_SEQUENCE] {
                batch.delete_range_cf(inner.cf(family)?, &start, &end);
            }
            inner.write_durably(batch, OP)
        })
        .await?
    }
}
