//! Typed JSON documents over the record store: read, create, compare-and-swap updates that
//! retry on lost races, deletes and paged listings.

use std::sync::Arc;

use bytes::Bytes;
use pangolin_records::{ExpectedVersion, RecordError, RecordKey, RecordStore};
use pangolin_store::BackendError;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// How often an update re-reads and retries after losing a compare-and-swap.
const UPDATE_ATTEMPTS: usize = 16;

/// Reading or writing identity records failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A stored record does not parse as the document it should hold.
    #[error("record `{key}` is corrupt: {source}")]
    Corrupt {
        /// The record's key.
        key: String,
        /// What did not parse.
        source: serde_json::Error,
    },
    /// A document could not be serialized.
    #[error("record `{key}` could not be encoded: {source}")]
    Encode {
        /// The record's key.
        key: String,
        /// What failed.
        source: serde_json::Error,
    },
    /// Other writers kept changing the record.
    #[error("record `{key}` kept changing under concurrent writers; try again")]
    Contended {
        /// The record's key.
        key: String,
    },
    /// A key built from validated names was refused by the store (cannot happen for names that
    /// passed validation; kept as an error rather than a panic).
    #[error("invalid record key: {0}")]
    Key(#[from] pangolin_records::RecordKeyError),
}

/// A document with the version it was read at.
#[derive(Debug, Clone)]
pub(crate) struct Versioned<T> {
    pub(crate) value: T,
    pub(crate) version: u64,
}

/// What an update closure decided.
pub(crate) enum Change<T, E> {
    /// Write this document.
    Write(T),
    /// Leave the record as it is and return this.
    Keep(T),
    /// Stop with this error.
    Fail(E),
}

#[derive(Clone)]
pub(crate) struct Docs {
    store: Arc<dyn RecordStore>,
}

impl std::fmt::Debug for Docs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Docs")
    }
}

pub(crate) fn key(path: String) -> Result<RecordKey, StoreError> {
    Ok(RecordKey::new(path)?)
}

fn encode<T: Serialize>(key: &RecordKey, value: &T) -> Result<Bytes, StoreError> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(|source| StoreError::Encode {
            key: key.to_string(),
            source,
        })
}

fn decode<T: DeserializeOwned>(key: &RecordKey, bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|source| StoreError::Corrupt {
        key: key.to_string(),
        source,
    })
}

impl Docs {
    pub(crate) fn new(store: Arc<dyn RecordStore>) -> Self {
        Self { store }
    }

    pub(crate) async fn get<T: DeserializeOwned>(
        &self,
        key: &RecordKey,
    ) -> Result<Option<Versioned<T>>, StoreError> {
        let Some(record) = self.store.get_record(key).await? else {
            return Ok(None);
        };
        Ok(Some(Versioned {
            value: decode(key, &record.value)?,
            version: record.version,
        }))
    }

    /// Creates the record; `false` when it already exists.
    pub(crate) async fn create<T: Serialize>(
        &self,
        key: &RecordKey,
        value: &T,
    ) -> Result<bool, StoreError> {
        match self
            .store
            .put_record(key, ExpectedVersion::Absent, encode(key, value)?)
            .await
        {
            Ok(_) => Ok(true),
            Err(RecordError::VersionMismatch { .. }) => Ok(false),
            Err(RecordError::Backend(e)) => Err(e.into()),
        }
    }

    /// Writes the record if it is still at `version`; `false` when it changed meanwhile.
    pub(crate) async fn replace<T: Serialize>(
        &self,
        key: &RecordKey,
        version: u64,
        value: &T,
    ) -> Result<bool, StoreError> {
        match self
            .store
            .put_record(key, ExpectedVersion::Is(version), encode(key, value)?)
            .await
        {
            Ok(_) => Ok(true),
            Err(RecordError::VersionMismatch { .. }) => Ok(false),
            Err(RecordError::Backend(e)) => Err(e.into()),
        }
    }

    /// Reads, lets `change` decide, writes by compare-and-swap, and starts over when another
    /// writer got there first. `Ok(None)` when the record does not exist.
    pub(crate) async fn update<T, E>(
        &self,
        key: &RecordKey,
        mut change: impl FnMut(T) -> Change<T, E>,
    ) -> Result<Option<Result<T, E>>, StoreError>
    where
        T: Serialize + DeserializeOwned,
    {
        for _ in 0..UPDATE_ATTEMPTS {
            let Some(current) = self.get::<T>(key).await? else {
                return Ok(None);
            };
            match change(current.value) {
                Change::Keep(value) => return Ok(Some(Ok(value))),
                Change::Fail(e) => return Ok(Some(Err(e))),
                Change::Write(value) => {
                    if self.replace(key, current.version, &value).await? {
                        return Ok(Some(Ok(value)));
                    }
                }
            }
        }
        Err(StoreError::Contended {
            key: key.to_string(),
        })
    }

    /// Deletes the record whatever its version; `false` when it did not exist.
    pub(crate) async fn delete(&self, key: &RecordKey) -> Result<bool, StoreError> {
        for _ in 0..UPDATE_ATTEMPTS {
            let Some(record) = self.store.get_record(key).await? else {
                return Ok(false);
            };
            match self.store.delete_record(key, record.version).await {
                Ok(()) => return Ok(true),
                Err(RecordError::VersionMismatch { .. }) => continue,
                Err(RecordError::Backend(e)) => return Err(e.into()),
            }
        }
        Err(StoreError::Contended {
            key: key.to_string(),
        })
    }

    /// Deletes the record only if it is still at `version`; `false` when it changed or is gone.
    pub(crate) async fn delete_at(
        &self,
        key: &RecordKey,
        version: u64,
    ) -> Result<bool, StoreError> {
        match self.store.delete_record(key, version).await {
            Ok(()) => Ok(true),
            Err(RecordError::VersionMismatch { .. }) => Ok(false),
            Err(RecordError::Backend(e)) => Err(e.into()),
        }
    }

    /// Up to `limit` documents under `prefix` after `after`, and the key to continue after.
    pub(crate) async fn list<T: DeserializeOwned>(
        &self,
        prefix: &str,
        after: Option<&RecordKey>,
        limit: usize,
    ) -> Result<(Vec<(RecordKey, Versioned<T>)>, Option<RecordKey>), StoreError> {
        let page = self.store.list_records(prefix, after, limit).await?;
        let mut docs = Vec::with_capacity(page.records.len());
        for record in page.records {
            let value = decode(&record.key, &record.value)?;
            docs.push((
                record.key,
                Versioned {
                    value,
                    version: record.version,
                },
            ));
        }
        Ok((docs, page.next_after))
    }
}
