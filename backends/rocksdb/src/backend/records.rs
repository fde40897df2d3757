//! Records: `key` → big-endian version and value.

use super::*;

fn record_value(version: u64, value: &[u8]) -> Vec<u8> {
    let mut stored = version.to_be_bytes().to_vec();
    stored.extend_from_slice(value);
    stored
}

#[async_trait]
impl RecordStore for RocksBackend {
    async fn get_record(&self, key: &RecordKey) -> Result<Option<Record>, BackendError> {
        const OP: &str = "records.get";
        let Some(stored) = self.inner.get(RECORDS, key.as_str().as_bytes(), OP)? else {
            return Ok(None);
        };
        let version = u64_from(&stored, OP)?;
        Ok(Some(Record {
            key: key.clone(),
            version,
            value: Bytes::copy_from_slice(&stored[8..]),
        }))
    }

    async fn put_record(
        &self,
        key: &RecordKey,
        expected: ExpectedVersion,
        value: Bytes,
    ) -> Result<u64, RecordError> {
        const OP: &str = "records.put";
        let key = key.clone();
        self.blocking(OP, move |inner| {
            let _guard = inner.records_lock.lock();
            let actual = inner
                .get(RECORDS, key.as_str().as_bytes(), OP)?
                .map(|v| u64_from(&v, OP))
                .transpose()?;
            if !expected.matches(actual) {
                return Err(RecordError::VersionMismatch {
                    key,
                    expected,
                    actual,
                });
            }
            let version = expected.next();
            let mut batch = WriteBatch::default();
            batch.put_cf(
                inner.cf(RECORDS)?,
                key.as_str().as_bytes(),
                record_value(version, &value),
            );
            inner.write_durably(batch, OP)?;
            Ok(version)
        })
        .await?
    }

    async fn delete_record(&self, key: &RecordKey, version: u64) -> Result<(), RecordError> {
        const OP: &str = "records.delete";
        let key = key.clone();
        self.blocking(OP, move |inner| {
            let _guard = inner.records_lock.lock();
            let actual = inner
                .get(RECORDS, key.as_str().as_bytes(), OP)?
                .map(|v| u64_from(&v, OP))
                .transpose()?;
            if actual != Some(version) {
                return Err(RecordError::VersionMismatch {
                    key,
                    expected: ExpectedVersion::Is(version),
                    actual,
                });
            }
            let mut batch = WriteBatch::default();
            batch.delete_cf(inner.cf(RECORDS)?, key.as_str().as_bytes());
            inner.write_durably(batch, OP)?;
            Ok(())
        })
        .await?
    }

    async fn list_records(
        &self,
        prefix: &str,
        after: Option<&RecordKey>,
        limit: usize,
    ) -> Result<RecordPage, BackendError> {
        const OP: &str = "records.list";
        let mut records = Vec::new();
        for item in self
            .inner
            .scan(RECORDS, prefix.as_bytes(), prefix.as_bytes(), OP)?
        {
            let (key, stored) = item?;
            let key = std::str::from_utf8(&key)
                .map_err(|_| corrupt(OP, "a record key that is not UTF-8"))?;
            let key = RecordKey::new(key).map_err(|_| corrupt(OP, "an invalid record key"))?;
            if after.is_some_and(|a| key <= *a) {
                continue;
            }
            if records.len() == limit {
                let next_after = records.last().map(|r: &Record| r.key.clone());
                return Ok(RecordPage {
                    records,
                    next_after,
                });
            }
            let version = u64_from(&stored, OP)?;
            records.push(Record {
                key,
                version,
                value: Bytes::copy_from_slice(&stored[8..]),
            });
        }
        Ok(RecordPage {
            records,
            next_after: None,
        })
    }
}
