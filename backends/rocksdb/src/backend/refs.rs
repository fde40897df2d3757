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

    async fn repository_log(
        &self,
        repo: &RepoId,
        query: RepoLogQuery,
    ) -> Result<Vec<RefLogEntry>, BackendError> {
        // Sequence numbers are taken and written under the repository's lock: they become
        // visible in order.
        const OP: &str = "refs.repository_log";
        let prefix = repo_prefix(repo);
        let start = sequence_key(repo, query.after.map_or(0, |a| a.saturating_add(1)));
        let mut entries = Vec::new();
        for item in self.inner.scan(REF_LOG_SEQUENCE, &prefix, &start, OP)? {
            if entries.len() == query.limit {
                break;
            }
            let (_, value) = item?;
            let entry: StoredLogEntry =
                codec::decode(&value).map_err(|_| corrupt(OP, "an undecodable ref-log entry"))?;
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use pangolin_refs::{Expected, RefUpdate, RepoLogQuery, Target};

    use super::*;

    fn set(name: &str, expected: Expected, byte: u8) -> Transaction {
        Transaction {
            updates: vec![RefUpdate {
                reference: Reference::branch(RefName::new(name).unwrap()),
                expected,
                target: Target::Set(ObjectId::from_bytes([byte; 32])),
            }],
            principal: "tester".into(),
            message: "test".into(),
            time: Timestamp::from_millis(1),
        }
    }

    /// A database written before entries were indexed by sequence gets its index when opened.
    #[tokio::test]
    async fn a_database_without_the_sequence_index_is_indexed_when_opened() {
        let path = std::env::temp_dir().join(format!(
            "pangolin-rocksdb-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let repo = RepoId::new("acme.lake").unwrap();
        let written = {
            let backend = RocksBackend::open(&path).unwrap();
            let mut written = Vec::new();
            written.extend(
                backend
                    .transact(&repo, set("main", Expected::Absent, 1))
                    .await
                    .unwrap(),
            );
            written.extend(
                backend
                    .transact(&repo, set("dev", Expected::Absent, 1))
                    .await
                    .unwrap(),
            );
            let main = Expected::Equals(ObjectId::from_bytes([1; 32]));
            written.extend(backend.transact(&repo, set("main", main, 2)).await.unwrap());
            // Back to how an older version left the database: no index, no marker.
            let inner = &backend.inner;
            let family = inner.cf(REF_LOG_SEQUENCE).unwrap();
            inner
                .db
                .delete_range_cf(family, [0u8].as_slice(), [0xffu8; 64].as_slice())
                .unwrap();
            inner
                .db
                .delete_cf(inner.cf(META).unwrap(), REF_LOG_SEQUENCE_FILLED)
                .unwrap();
            let query = RepoLogQuery {
                after: None,
                limit: 10,
            };
            assert!(
                backend
                    .repository_log(&repo, query)
                    .await
                    .unwrap()
                    .is_empty()
            );
            written
        };
        let backend = RocksBackend::open(&path).unwrap();
        let query = RepoLogQuery {
            after: None,
            limit: 10,
        };
        assert_eq!(backend.repository_log(&repo, query).await.unwrap(), written);
        drop(backend);
        std::fs::remove_dir_all(&path).unwrap();
    }
}
