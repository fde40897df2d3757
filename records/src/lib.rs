//! The two stores beside objects and refs: versioned records changed by compare-and-swap (and
//! leases kept in them), and the hash-chained audit log.

pub mod audit;
pub mod lease;
pub mod record;

pub use audit::{
    AuditEvent, AuditLog, AuditQuery, AuditRecord, ChainBreak, ChainHash, Outcome, VerifyError,
    chain_hash, verify,
};
pub use lease::Lease;
pub use record::{
    ExpectedVersion, Record, RecordError, RecordKey, RecordKeyError, RecordPage, RecordStore,
};
