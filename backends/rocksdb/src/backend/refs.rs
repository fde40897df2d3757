//! Refs and the ref log, and publishing objects with a ref move in one batch.

use super::objects::object_rows;
use super::*;

#[async_trait]
impl RefStore for RocksBackend {
    async fn get_ref(
        &self,
        repo: &RepoId,
        reference: &Reference,
    ) -> Result<Option<ObjectId>, BackendError> {
        const OP: &str = "refs.get";
        self.inner
            .get(REFS, &ref_key(repo, reference), OP)?
            .map(|v| id_from(&v, OP))
            .transpose()
    }

    async fn list_refs(&self, repo: &RepoId, query: &RefQuery) -> Result<RefPage, BackendError> {
        const OP: &str = "refs.list";
        let prefix = repo_prefix(repo);
        let mut refs = Vec::new();
        for item in self.inner.scan(REFS, &prefix, &prefix, OP)? {
            let (key, value) = item?;
            let reference = reference_from_key(&key, prefix.len(), OP)?;
            let wanted = query.after.as_ref().is_none_or(|after| reference > *after)
                && query.kind.is_none_or(|k| k == reference.kind)
                && reference.name.as_str().starts_with(&query.prefix);
            if wanted {
                if refs.len() == query.limit {
                    let next_after = refs.last().map(|(r, _): &(Reference, ObjectId)| r.clone());
                    return Ok(RefPage { refs, next_after });
                }
                refs.push((reference, id_from(&value, OP)?));
            }
        }
        Ok(RefPage {
            refs,
            next_after: None,
        })
    }

    async fn transact(
        &self,
        repo: &RepoId,
        tx: Transaction,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        tx.validate()?;
        let repo = repo.clone();
        self.blocking("refs.transact", move |inner| {
            inner.transact(&repo, tx, &[], Vec::new())
        })
        .await?
    }

    async fn ref_log(
        &self,
        repo: &RepoId,
        reference: &Reference,
        query: LogQuery,
    ) -> Result<Vec<RefLogEntry>, BackendError> {
        const OP: &str = "refs.log";
        let prefix = log_key(repo, reference, &[]);
        let start = log_key(
            repo,
            reference,
            &[query.before.map_or(u64::MAX, |b| b.saturating_sub(1))],
        );
        let iter = self.inner.db.iterator_cf(
            self.inner.cf(REF_LOG)?,
            IteratorMode::From(&start, Direction::Reverse),
        );
        let mut entries = Vec::new();
        for item in iter {
            let (key, value) = item.map_err(|e| classify(OP, e))?;
            if !key.starts_with(&prefix) || entries.len() == query.limit {
                break;
            }
            let entry: StoredLogEntry =
                codec::decode(&value).map_err(|_| corrupt(OP, "an undecodable ref-log entry"))?;
            if query.before.is_some_and(|b| entry.sequence >= b) {
                continue;
            }
            entries.push(entry.into());
        }
        Ok(entries)
    }

    async fn ref_log_at(
        &self,
        repo: &RepoId,
        reference: &Reference,
        time: Timestamp,
    ) -> Result<Option<RefLogEntry>, BackendError> {
        const OP: &str = "refs.log_at";
        let prefix = log_key(repo, reference, &[]);
        let start = log_key(repo, reference, &[time_order(time), u64::MAX]);
        let mut iter = self.inner.db.iterator_cf(
            self.inner.cf(REF_LOG_TIME)?,
            IteratorMode::From(&start, Direction::Reverse),
        );
        match iter.next() {
            Some(Ok((key, value))) if key.starts_with(&prefix) => {
                let entry: StoredLogEntry = codec::decode(&value)
                    .map_err(|_| corrupt(OP, "an undecodable ref-log entry"))?;
                Ok(Some(entry.into()))
            }
            Some(Err(e)) => Err(classify(OP, e)),
            _ => Ok(None),
        }
    }
}

/// Objects, the ref move and its audit events in one synced write batch.
#[async_trait]
impl pangolin_refs::Publish for RocksBackend {
    async fn publish(
        &self,
        repo: &RepoId,
        objects: Vec<RawObject>,
        tx: Transaction,
        audit: Vec<AuditEvent>,
    ) -> Result<Vec<RefLogEntry>, TransactError> {
        tx.validate()?;
        let repo = repo.clone();
        let rows = object_rows(&repo, &objects);
        self.blocking("refs.publish", move |inner| {
            inner.transact(&repo, tx, &rows, audit)
        })
        .await?
    }
}
