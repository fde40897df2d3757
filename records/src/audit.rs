//! The audit log: append-only events, each chained to the one before by a blake3 hash, so
//! that altering, removing or reordering a stored event breaks the chain from there on.

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use pangolin_store::{BackendError, Timestamp, codec};
use serde::{Deserialize, Serialize};

/// How the audited action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Outcome {
    Success,
    /// Refused by authentication or authorization.
    Denied,
    /// Attempted and failed.
    Failed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Denied => "denied",
            Self::Failed => "failed",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "success" => Some(Self::Success),
            "denied" => Some(Self::Denied),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// One audited action. Field order is part of the hashed encoding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    pub time: Timestamp,
    pub tenant: String,
    pub principal: String,
    /// What was done: `table.commit`, `user.login`, `branch.merge`, ...
    pub action: String,
    pub resource_type: String,
    pub resource_id: String,
    pub outcome: Outcome,
    pub details: BTreeMap<String, String>,
}

/// A 32-byte chain hash.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct ChainHash(pub [u8; 32]);

impl fmt::Debug for ChainHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex: String = self.0[..6].iter().map(|b| format!("{b:02x}")).collect();
        write!(f, "ChainHash({hex})")
    }
}

/// A stored event with its place in the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// 1 for the first event, then one more for each.
    pub sequence: u64,
    pub event: AuditEvent,
    /// The previous record's hash; all zeros for the first.
    pub previous: ChainHash,
    /// blake3 over the previous hash, the sequence number and the event's canonical bytes.
    pub hash: ChainHash,
}

impl AuditRecord {
    /// The record that follows the record with `previous` = (sequence, hash), or starts the
    /// chain. Every backend builds records with this, inside the step that makes the append
    /// atomic.
    pub fn next(previous: Option<(u64, ChainHash)>, event: AuditEvent) -> Self {
        let (sequence, previous) = match previous {
            Some((sequence, hash)) => (sequence + 1, hash),
            None => (1, ChainHash::default()),
        };
        let hash = chain_hash(&previous, sequence, &event);
        Self {
            sequence,
            event,
            previous,
            hash,
        }
    }
}

impl AuditRecord {
    /// The records of `events`, in order, each chained on the one before and the first on
    /// `previous` (the chain's last record: its sequence number and hash).
    pub fn chain(mut previous: Option<(u64, ChainHash)>, events: Vec<AuditEvent>) -> Vec<Self> {
        events
            .into_iter()
            .map(|event| {
                let record = Self::next(previous, event);
                previous = Some((record.sequence, record.hash));
                record
            })
            .collect()
    }
}

/// The hash a record with these contents must carry.
pub fn chain_hash(previous: &ChainHash, sequence: u64, event: &AuditEvent) -> ChainHash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&previous.0);
    hasher.update(&sequence.to_le_bytes());
    hasher.update(&codec::encode(event));
    ChainHash(*hasher.finalize().as_bytes())
}

/// Which events to read. Every filter is optional; results are in sequence order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    pub tenant: Option<String>,
    pub principal: Option<String>,
    pub action: Option<String>,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    /// Events at or after this time.
    pub from: Option<Timestamp>,
    /// Events before this time.
    pub until: Option<Timestamp>,
    /// Events after this sequence number (the previous page's last).
    pub after: Option<u64>,
    pub limit: usize,
}

impl AuditQuery {
    /// Whether `record` passes the filters (not the paging).
    pub fn matches(&self, record: &AuditRecord) -> bool {
        let e = &record.event;
        let eq =
            |filter: &Option<String>, value: &str| filter.as_deref().is_none_or(|f| f == value);
        eq(&self.tenant, &e.tenant)
            && eq(&self.principal, &e.principal)
            && eq(&self.action, &e.action)
            && eq(&self.resource_type, &e.resource_type)
            && eq(&self.resource_id, &e.resource_id)
            && self.from.is_none_or(|from| e.time >= from)
            && self.until.is_none_or(|until| e.time < until)
            && self.after.is_none_or(|after| record.sequence > after)
    }
}

#[async_trait]
pub trait AuditLog: Send + Sync + 'static {
    /// Appends `event` at the end of the chain. Appends are serialized: no two records share
    /// a sequence number or a previous hash.
    async fn append(&self, event: AuditEvent) -> Result<AuditRecord, BackendError>;

    /// Appends `events` in order, all or none, as one durable write where the backend can
    /// (one sync to disk for a whole group of events, as group commit does for commits).
    async fn append_many(&self, events: Vec<AuditEvent>) -> Result<Vec<AuditRecord>, BackendError> {
        let mut records = Vec::with_capacity(events.len());
        for event in events {
            records.push(self.append(event).await?);
        }
        Ok(records)
    }

    async fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, BackendError>;

    /// Records with sequence numbers in `from..=to`, in order, as stored (for verification).
    async fn range(&self, from: u64, to: u64) -> Result<Vec<AuditRecord>, BackendError>;
}

/// What a verification found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainBreak {
    #[error("audit record {sequence} is missing")]
    Missing { sequence: u64 },
    #[error("audit record {sequence} does not carry the hash its contents give: it was altered")]
    Altered { sequence: u64 },
    #[error("audit record {sequence} does not follow record {}: the chain was cut or reordered", .sequence - 1)]
    Unlinked { sequence: u64 },
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Broken(#[from] ChainBreak),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Checks the chain over sequence numbers `from..=to` (reading the record before `from` to
/// check the first link); returns how many records were checked.
pub async fn verify<L: AuditLog + ?Sized>(log: &L, from: u64, to: u64) -> Result<u64, VerifyError> {
    let start = from.max(1);
    if to < start {
        return Ok(0);
    }
    let mut previous = match start {
        1 => None,
        _ => log.range(start - 1, start - 1).await?.into_iter().next(),
    };
    let records = log.range(start, to).await?;
    for (expected, record) in (start..).zip(records.iter()) {
        if record.sequence != expected {
            return Err(ChainBreak::Missing { sequence: expected }.into());
        }
        let linked = match &previous {
            Some(p) => record.previous == p.hash,
            None => record.previous == ChainHash::default(),
        };
        if !linked {
            return Err(ChainBreak::Unlinked {
                sequence: record.sequence,
            }
            .into());
        }
        if chain_hash(&record.previous, record.sequence, &record.event) != record.hash {
            return Err(ChainBreak::Altered {
                sequence: record.sequence,
            }
            .into());
        }
        previous = Some(record.clone());
    }
    Ok(records.len() as u64)
}
