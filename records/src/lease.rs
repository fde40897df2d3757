//! Leases: the right to do a named piece of work, held by one server at a time until it runs
//! out, kept in the record store so that every server sharing the database sees the same one.
//!
//! Taking a lease is one compare-and-swap of its record, so two servers racing for a free
//! lease cannot both win. Expiry is judged by the wall clock of the server that asks: servers
//! whose clocks disagree by more than a lease's length may overlap, so leases guard work that
//! is safe to repeat (sweeps), not work that must never run twice.

use std::time::Duration;

use pangolin_store::{BackendError, Timestamp, codec};
use serde::{Deserialize, Serialize};

use crate::record::{ExpectedVersion, RecordError, RecordKey, RecordKeyError, RecordStore};

/// A lease's record.
#[derive(Debug, Serialize, Deserialize)]
struct Held {
    holder: String,
    until: Timestamp,
}

/// One server's handle on a named lease.
#[derive(Debug, Clone)]
pub struct Lease {
    key: RecordKey,
    holder: String,
}

impl Lease {
    /// The lease `name` (kept at `leases/<name>`), as `holder` (unique per server) asks for it.
    pub fn new(name: &str, holder: impl Into<String>) -> Result<Self, RecordKeyError> {
        Ok(Self {
            key: Self::record_key(name)?,
            holder: holder.into(),
        })
    }

    /// The record that keeps lease `name`, for deleting it with the work it guarded.
    pub fn record_key(name: &str) -> Result<RecordKey, RecordKeyError> {
        RecordKey::new(format!("leases/{name}"))
    }

    /// Takes or renews the lease until `now + length`, unless another holder has it beyond
    /// `now`. False when another holds it, or took it between our read and our write.
    pub async fn try_take<S: RecordStore + ?Sized>(
        &self,
        store: &S,
        now: Timestamp,
        length: Duration,
    ) -> Result<bool, BackendError> {
        let expected = match store.get_record(&self.key).await? {
            None => ExpectedVersion::Absent,
            Some(record) => match codec::decode::<Held>(&record.value) {
                Ok(held) if held.holder != self.holder && held.until > now => return Ok(false),
                // Free, ours, or unreadable (then it is taken over).
                _ => ExpectedVersion::Is(record.version),
            },
        };
        let length = i64::try_from(length.as_millis()).unwrap_or(i64::MAX);
        let held = Held {
            holder: self.holder.clone(),
            until: Timestamp::from_millis(now.as_millis().saturating_add(length)),
        };
        match store
            .put_record(&self.key, expected, codec::encode(&held).into())
            .await
        {
            Ok(_) => Ok(true),
            Err(RecordError::VersionMismatch { .. }) => Ok(false),
            Err(RecordError::Backend(e)) => Err(e),
        }
    }
}
