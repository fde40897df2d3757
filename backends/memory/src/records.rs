//! Records: one ordered map behind a mutex.

use async_trait::async_trait;
use bytes::Bytes;
use pangolin_records::{ExpectedVersion, Record, RecordError, RecordKey, RecordPage, RecordStore};
use pangolin_store::BackendError;

use crate::MemoryBackend;

#[async_trait]
impl RecordStore for MemoryBackend {
    async fn get_record(&self, key: &RecordKey) -> Result<Option<Record>, BackendError> {
        Ok(self.records.lock().get(key).cloned())
    }

    async fn put_record(
        &self,
        key: &RecordKey,
        expected: ExpectedVersion,
        value: Bytes,
    ) -> Result<u64, RecordError> {
        let mut records = self.records.lock();
        let actual = records.get(key).map(|r| r.version);
        if !expected.matches(actual) {
            return Err(RecordError::VersionMismatch {
                key: key.clone(),
                expected,
                actual,
            });
        }
        let version = expected.next();
        records.insert(
            key.clone(),
            Record {
                key: key.clone(),
                version,
                value,
            },
        );
        Ok(version)
    }

    async fn delete_record(&self, key: &RecordKey, version: u64) -> Result<(), RecordError> {
        let mut records = self.records.lock();
        let actual = records.get(key).map(|r| r.version);
        if actual != Some(version) {
            let expected = ExpectedVersion::Is(version);
            return Err(RecordError::VersionMismatch {
                key: key.clone(),
                expected,
                actual,
            });
        }
        records.remove(key);
        Ok(())
    }

    async fn list_records(
        &self,
        prefix: &str,
        after: Option<&RecordKey>,
        limit: usize,
    ) -> Result<RecordPage, BackendError> {
        let records = self.records.lock();
        let mut matching = records
            .values()
            .filter(|r| after.is_none_or(|a| r.key > *a))
            .filter(|r| r.key.as_str().starts_with(prefix));
        let page: Vec<Record> = matching.by_ref().take(limit).cloned().collect();
        let next_after = match matching.next() {
            Some(_) => page.last().map(|r| r.key.clone()),
            None => None,
        };
        Ok(RecordPage {
            records: page,
            next_after,
        })
    }
}
