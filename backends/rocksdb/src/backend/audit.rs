//! The audit log: `sequence` → the stored record; the chain head in the counters.

use super::*;

fn audit_from(value: &[u8], operation: &'static str) -> Result<AuditRecord, BackendError> {
    let stored: StoredAudit =
        codec::decode(value).map_err(|_| corrupt(operation, "an undecodable audit record"))?;
    Ok(AuditRecord {
        sequence: stored.sequence,
        event: stored.event,
        previous: stored.previous,
        hash: stored.hash,
    })
}

#[async_trait]
impl AuditLog for RocksBackend {
    async fn append(&self, event: AuditEvent) -> Result<AuditRecord, BackendError> {
        let mut records = self.append_many(vec![event]).await?;
        records
            .pop()
            .ok_or_else(|| corrupt("audit.append", "an append that wrote no record"))
    }

    async fn append_many(&self, events: Vec<AuditEvent>) -> Result<Vec<AuditRecord>, BackendError> {
        const OP: &str = "audit.append";
        self.blocking(OP, move |inner| {
            let _guard = inner.audit_lock.lock();
            let mut batch = WriteBatch::default();
            let records = inner.chain_audit(&mut batch, events, OP)?;
            inner.write_durably(batch, OP)?;
            Ok(records)
        })
        .await?
    }

    async fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, BackendError> {
        const OP: &str = "audit.query";
        // No secondary indexes: a scan from the requested position, filtered.
        let start = query.after.map_or(1, |a| a.saturating_add(1)).to_be_bytes();
        let mut found = Vec::new();
        for item in self.inner.scan(AUDIT, &[], &start, OP)? {
            let (_, value) = item?;
            let record = audit_from(&value, OP)?;
            if query.matches(&record) {
                if found.len() == query.limit {
                    break;
                }
                found.push(record);
            }
        }
        Ok(found)
    }

    async fn range(&self, from: u64, to: u64) -> Result<Vec<AuditRecord>, BackendError> {
        const OP: &str = "audit.range";
        let mut found = Vec::new();
        for item in self.inner.scan(AUDIT, &[], &from.to_be_bytes(), OP)? {
            let (key, value) = item?;
            if u64_from(&key, OP)? > to {
                break;
            }
            found.push(audit_from(&value, OP)?);
        }
        Ok(found)
    }
}

impl Inner {
    /// Chains `events` after the stored head and adds them and the new head to `batch`. The
    /// caller holds `audit_lock` until the batch is written, so the chain has one head.
    pub(super) fn chain_audit(
        &self,
        batch: &mut WriteBatch,
        events: Vec<AuditEvent>,
        operation: &'static str,
    ) -> Result<Vec<AuditRecord>, BackendError> {
        let mut head: Option<(u64, ChainHash)> = self
            .get(META, AUDIT_HEAD, operation)?
            .map(|v| codec::decode(&v).map_err(|_| corrupt(operation, "an undecodable audit head")))
            .transpose()?;
        let mut records = Vec::with_capacity(events.len());
        for event in events {
            let record = AuditRecord::next(head, event);
            let stored = StoredAudit {
                sequence: record.sequence,
                event: record.event.clone(),
                previous: record.previous,
                hash: record.hash,
            };
            batch.put_cf(
                self.cf(AUDIT)?,
                record.sequence.to_be_bytes(),
                codec::encode(&stored),
            );
            head = Some((record.sequence, record.hash));
            records.push(record);
        }
        if let Some(head) = head {
            batch.put_cf(self.cf(META)?, AUDIT_HEAD, codec::encode(&head));
        }
        Ok(records)
    }
}

impl RocksBackend {
    /// Rewrites a stored audit record in place, as someone with access to the files could:
    /// for tests that show verification catches it.
    pub fn tamper_with_audit_record(&self, record: &AuditRecord) -> Result<(), BackendError> {
        let stored = StoredAudit {
            sequence: record.sequence,
            event: record.event.clone(),
            previous: record.previous,
            hash: record.hash,
        };
        let mut batch = WriteBatch::default();
        batch.put_cf(
            self.inner.cf(AUDIT)?,
            record.sequence.to_be_bytes(),
            codec::encode(&stored),
        );
        self.inner.write_durably(batch, "audit.tamper")
    }
}
