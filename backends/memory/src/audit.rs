//! The audit log: a vector behind a mutex; the mutex serializes appends.

use async_trait::async_trait;
use pangolin_records::{AuditEvent, AuditLog, AuditQuery, AuditRecord};
use pangolin_store::BackendError;

use crate::MemoryBackend;

#[async_trait]
impl AuditLog for MemoryBackend {
    async fn append(&self, event: AuditEvent) -> Result<AuditRecord, BackendError> {
        let mut log = self.audit.lock();
        let record = AuditRecord::next(log.last().map(|r| (r.sequence, r.hash)), event);
        log.push(record.clone());
        Ok(record)
    }

    async fn append_many(&self, events: Vec<AuditEvent>) -> Result<Vec<AuditRecord>, BackendError> {
        let mut log = self.audit.lock();
        let mut records = Vec::with_capacity(events.len());
        for event in events {
            let record = AuditRecord::next(log.last().map(|r| (r.sequence, r.hash)), event);
            log.push(record.clone());
            records.push(record);
        }
        Ok(records)
    }

    async fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, BackendError> {
        let log = self.audit.lock();
        Ok(log
            .iter()
            .filter(|r| query.matches(r))
            .take(query.limit)
            .cloned()
            .collect())
    }

    async fn range(&self, from: u64, to: u64) -> Result<Vec<AuditRecord>, BackendError> {
        let log = self.audit.lock();
        Ok(log
            .iter()
            .filter(|r| (from..=to).contains(&r.sequence))
            .cloned()
            .collect())
    }
}
