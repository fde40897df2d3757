//! Objects: `repo \0 id` → kind byte and body.

use super::*;

#[async_trait]
impl ObjectStore for RocksBackend {
    async fn get(&self, repo: &RepoId, id: &ObjectId) -> Result<Option<RawObject>, BackendError> {
        const OP: &str = "objects.get";
        let mut key = repo_prefix(repo);
        key.extend_from_slice(id.as_bytes());
        let Some(value) = self.inner.get(OBJECTS, &key, OP)? else {
            return Ok(None);
        };
        let (&kind, data) = value
            .split_first()
            .ok_or_else(|| corrupt(OP, "an empty object"))?;
        let kind =
            ObjectKind::from_u8(kind).ok_or_else(|| corrupt(OP, "an unknown object kind"))?;
        Ok(Some(RawObject {
            id: *id,
            kind,
            data: Bytes::copy_from_slice(data),
        }))
    }

    async fn get_many(
        &self,
        repo: &RepoId,
        ids: &[ObjectId],
    ) -> Result<Vec<Option<RawObject>>, BackendError> {
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            found.push(ObjectStore::get(self, repo, id).await?);
        }
        Ok(found)
    }

    async fn put_many(&self, repo: &RepoId, objects: &[RawObject]) -> Result<(), BackendError> {
        const OP: &str = "objects.put_many";
        if objects.is_empty() {
            return Ok(());
        }
        let rows = object_rows(repo, objects);
        // Objects are immutable: writing one again writes the same bytes, so no read first.
        self.blocking(OP, move |inner| {
            let mut batch = WriteBatch::default();
            let cf = inner.cf(OBJECTS)?;
            for (key, value) in &rows {
                batch.put_cf(cf, key, value);
            }
            inner.write_durably(batch, OP)
        })
        .await?
    }

    async fn contains(&self, repo: &RepoId, id: &ObjectId) -> Result<bool, BackendError> {
        let mut key = repo_prefix(repo);
        key.extend_from_slice(id.as_bytes());
        Ok(self.inner.get(OBJECTS, &key, "objects.contains")?.is_some())
    }

    async fn find_by_prefix(
        &self,
        repo: &RepoId,
        prefix: &HashPrefix,
        limit: usize,
    ) -> Result<Vec<ObjectId>, BackendError> {
        const OP: &str = "objects.find_by_prefix";
        let repo_key = repo_prefix(repo);
        let mut start = repo_key.clone();
        start.extend_from_slice(prefix.lower_bound().as_bytes());
        let mut ids = Vec::new();
        for item in self.inner.scan(OBJECTS, &repo_key, &start, OP)? {
            let (key, _) = item?;
            let id = id_from(&key[repo_key.len()..], OP)?;
            if !prefix.matches(&id) || ids.len() == limit {
                break;
            }
            ids.push(id);
        }
        Ok(ids)
    }
}

pub(super) fn object_rows(repo: &RepoId, objects: &[RawObject]) -> Vec<ObjectRow> {
    let prefix = repo_prefix(repo);
    objects
        .iter()
        .map(|o| {
            let mut key = prefix.clone();
            key.extend_from_slice(o.id.as_bytes());
            let mut value = Vec::with_capacity(o.data.len() + 1);
            value.push(o.kind.as_u8());
            value.extend_from_slice(&o.data);
            (key, value)
        })
        .collect()
}
