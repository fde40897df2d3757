//! Records: small versioned documents (tenants, users, roles, grants, warehouses, catalogs,
//! service users, API keys, idempotency keys), changed only by compare-and-swap on a version.

use std::fmt;

use async_trait::async_trait;
use bytes::Bytes;
use pangolin_store::BackendError;

/// Longest record key, in bytes.
pub const MAX_RECORD_KEY_BYTES: usize = 512;

/// A record's key: a path such as `tenants/acme` or `users/acme/ana`. Listing by prefix
/// (`users/acme/`) gives a collection.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordKey(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordKeyError {
    #[error("a record key cannot be empty")]
    Empty,
    #[error("record key is {0} bytes long; the limit is {MAX_RECORD_KEY_BYTES}")]
    TooLong(usize),
    #[error("record key `{0}` contains a control character")]
    ControlCharacter(String),
}

impl RecordKey {
    pub fn new(key: impl Into<String>) -> Result<Self, RecordKeyError> {
        let key = key.into();
        if key.is_empty() {
            return Err(RecordKeyError::Empty);
        }
        if key.len() > MAX_RECORD_KEY_BYTES {
            return Err(RecordKeyError::TooLong(key.len()));
        }
        if key.chars().any(char::is_control) {
            return Err(RecordKeyError::ControlCharacter(key));
        }
        Ok(Self(key))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RecordKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecordKey({})", self.0)
    }
}

/// A stored record. Versions start at 1 and grow by one with every put.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub key: RecordKey,
    pub version: u64,
    /// Opaque to the store; callers serialize their documents.
    pub value: Bytes,
}

/// What a record must be for a change to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpectedVersion {
    /// The record must not exist (create).
    Absent,
    /// The record must have exactly this version (compare-and-swap).
    Is(u64),
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("record `{key}` is at version {}, expected {expected:?}", .actual.map_or_else(|| "none (absent)".to_owned(), |v| v.to_string()))]
    VersionMismatch {
        key: RecordKey,
        expected: ExpectedVersion,
        actual: Option<u64>,
    },
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// One page of records in key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordPage {
    pub records: Vec<Record>,
    /// Set when more records follow: list again with `after` set to it.
    pub next_after: Option<RecordKey>,
}

impl RecordPage {
    /// The page from up to `limit + 1` records read in key order: the extra one only says that
    /// more follow.
    pub fn from_overfetched(mut records: Vec<Record>, limit: usize) -> Self {
        let next_after = if records.len() > limit {
            records.truncate(limit);
            records.last().map(|r| r.key.clone())
        } else {
            None
        };
        Self {
            records,
            next_after,
        }
    }
}

impl ExpectedVersion {
    /// Whether a record currently at `actual` satisfies this expectation.
    pub fn matches(&self, actual: Option<u64>) -> bool {
        match self {
            Self::Absent => actual.is_none(),
            Self::Is(version) => actual == Some(*version),
        }
    }

    /// The version a successful put writes.
    pub fn next(&self) -> u64 {
        match self {
            Self::Absent => 1,
            Self::Is(version) => version + 1,
        }
    }
}

#[async_trait]
pub trait RecordStore: Send + Sync + 'static {
    async fn get_record(&self, key: &RecordKey) -> Result<Option<Record>, BackendError>;

    /// Writes `value` if the record is as `expected`; returns the new version.
    async fn put_record(
        &self,
        key: &RecordKey,
        expected: ExpectedVersion,
        value: Bytes,
    ) -> Result<u64, RecordError>;

    /// Deletes the record if it is at `version`.
    async fn delete_record(&self, key: &RecordKey, version: u64) -> Result<(), RecordError>;

    /// Records whose keys start with `prefix`, after `after`, in key order.
    async fn list_records(
        &self,
        prefix: &str,
        after: Option<&RecordKey>,
        limit: usize,
    ) -> Result<RecordPage, BackendError>;
}
