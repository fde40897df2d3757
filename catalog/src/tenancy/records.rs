//! The record layout of tenancy and typed access to it.
//!
//! ```text
//! tenancy/tenants/<tenant>                  a tenant
//! tenancy/warehouses/<tenant>/<warehouse>   a warehouse of a tenant
//! tenancy/catalogs/<tenant>/<catalog>       a catalog of a tenant
//! ```
//!
//! Names cannot contain `/`, so a tenant's collection is exactly the records under
//! `<kind>/<tenant>/`. Values are JSON documents.

use bytes::Bytes;
use pangolin_records::{ExpectedVersion, RecordError, RecordKey, RecordStore};
use pangolin_store::BackendError;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::name::Name;

/// Largest page a listing returns, whatever the caller asks for.
pub const MAX_PAGE: usize = 1_000;

/// A document and the version of the record that holds it: pass the version back to change
/// or delete it by compare-and-swap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned<T> {
    pub value: T,
    pub version: u64,
}

/// One page of a listing, in name order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Set when more follow: list again with `after` set to it.
    pub next_after: Option<Name>,
}

/// A record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("record `{key}` is not a valid document: {reason}")]
    Corrupt { key: String, reason: String },
    #[error("encoding record `{key}`: {reason}")]
    Encode { key: String, reason: String },
    #[error("record `{key}` kept changing under concurrent writers; try again")]
    Contended { key: String },
}

/// A write lost its compare-and-swap, or failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PutError {
    #[error("version mismatch: found {actual:?}")]
    Mismatch { actual: Option<u64> },
    #[error(transparent)]
    Records(#[from] RecordsError),
}

impl From<RecordError> for PutError {
    fn from(error: RecordError) -> Self {
        match error {
            RecordError::VersionMismatch { actual, .. } => Self::Mismatch { actual },
            RecordError::Backend(e) => Self::Records(e.into()),
        }
    }
}

fn key(path: String) -> RecordKey {
    RecordKey::new(path).expect("names are short and have no control characters")
}

/// The record of tenant `tenant`.
pub fn tenant_key(tenant: &Name) -> RecordKey {
    key(format!("tenancy/tenants/{tenant}"))
}

/// The record of warehouse `warehouse` of `tenant`.
pub fn warehouse_key(tenant: &Name, warehouse: &Name) -> RecordKey {
    key(format!("tenancy/warehouses/{tenant}/{warehouse}"))
}

/// The record of catalog `catalog` of `tenant`.
pub fn catalog_key(tenant: &Name, catalog: &Name) -> RecordKey {
    key(format!("tenancy/catalogs/{tenant}/{catalog}"))
}

pub(crate) const TENANTS: &str = "tenancy/tenants/";

pub(crate) fn warehouses_of(tenant: &Name) -> String {
    format!("tenancy/warehouses/{tenant}/")
}

pub(crate) fn catalogs_of(tenant: &Name) -> String {
    format!("tenancy/catalogs/{tenant}/")
}

pub(crate) async fn get<T: DeserializeOwned>(
    records: &dyn RecordStore,
    key: &RecordKey,
) -> Result<Option<Versioned<T>>, RecordsError> {
    let Some(record) = records.get_record(key).await? else {
        return Ok(None);
    };
    Ok(Some(Versioned {
        value: decode(key, &record.value)?,
        version: record.version,
    }))
}

pub(crate) async fn put<T: Serialize>(
    records: &dyn RecordStore,
    key: &RecordKey,
    expected: ExpectedVersion,
    value: &T,
) -> Result<u64, PutError> {
    let bytes = serde_json::to_vec(value).map_err(|e| RecordsError::Encode {
        key: key.to_string(),
        reason: e.to_string(),
    })?;
    Ok(records
        .put_record(key, expected, Bytes::from(bytes))
        .await?)
}

/// Deletes a record this call wrote when a later step failed. A failure here is logged, not
/// returned: the caller's error says what went wrong first.
pub(crate) async fn undo(records: &dyn RecordStore, key: &RecordKey, version: u64) {
    if let Err(error) = records.delete_record(key, version).await {
        tracing::warn!(%key, %error, "could not take back a record after a failed create");
    }
}

pub(crate) async fn delete(
    records: &dyn RecordStore,
    key: &RecordKey,
    version: u64,
) -> Result<(), PutError> {
    Ok(records.delete_record(key, version).await?)
}

/// How often a compare-and-swap of one record is tried before giving up on a record that keeps
/// changing.
pub(crate) const CAS_ATTEMPTS: usize = 32;

/// Writes a record's value again, only to raise its version: a delete of the record that
/// read the old version then fails its compare-and-swap. Returns `false` when the record is
/// gone. Retries while other writers move the version.
pub(crate) async fn touch(
    records: &dyn RecordStore,
    key: &RecordKey,
) -> Result<bool, RecordsError> {
    for _ in 0..CAS_ATTEMPTS {
        let Some(record) = records.get_record(key).await? else {
            return Ok(false);
        };
        match records
            .put_record(key, ExpectedVersion::Is(record.version), record.value)
            .await
        {
            Ok(_) => return Ok(true),
            Err(RecordError::VersionMismatch { .. }) => continue,
            Err(RecordError::Backend(e)) => return Err(e.into()),
        }
    }
    Err(RecordsError::Contended {
        key: key.to_string(),
    })
}

/// Deletes the record at `key` whatever its version, retrying while other writers change
/// it; `false` when there was none.
pub(crate) async fn delete_if_there(
    records: &dyn RecordStore,
    key: &RecordKey,
) -> Result<bool, RecordsError> {
    for _ in 0..CAS_ATTEMPTS {
        let Some(record) = records.get_record(key).await? else {
            return Ok(false);
        };
        match records.delete_record(key, record.version).await {
            Ok(()) => return Ok(true),
            Err(RecordError::VersionMismatch { .. }) => continue,
            Err(RecordError::Backend(e)) => return Err(e.into()),
        }
    }
    Err(RecordsError::Contended {
        key: key.to_string(),
    })
}

/// Deletes every record whose key starts with `prefix`, a page at a time.
pub(crate) async fn delete_all_under(
    records: &dyn RecordStore,
    prefix: &str,
) -> Result<(), RecordsError> {
    loop {
        let page = records.list_records(prefix, None, MAX_PAGE).await?;
        if page.records.is_empty() {
            return Ok(());
        }
        for record in page.records {
            delete_if_there(records, &record.key).await?;
        }
    }
}

/// Whether any record starts with `prefix`.
pub(crate) async fn any_under(
    records: &dyn RecordStore,
    prefix: &str,
) -> Result<bool, RecordsError> {
    Ok(!records
        .list_records(prefix, None, 1)
        .await?
        .records
        .is_empty())
}

/// A page of the documents under `prefix`, after the one named `after`.
pub(crate) async fn list<T: DeserializeOwned>(
    records: &dyn RecordStore,
    prefix: &str,
    after: Option<&Name>,
    limit: usize,
) -> Result<Page<Versioned<T>>, RecordsError> {
    let after = after.map(|name| key(format!("{prefix}{name}")));
    let page = records
        .list_records(prefix, after.as_ref(), limit.clamp(1, MAX_PAGE))
        .await?;
    let next_after = page
        .next_after
        .as_ref()
        .map(|key| last_segment(key, prefix))
        .transpose()?;
    let items = page
        .records
        .iter()
        .map(|record| {
            Ok(Versioned {
                value: decode(&record.key, &record.value)?,
                version: record.version,
            })
        })
        .collect::<Result<_, RecordsError>>()?;
    Ok(Page { items, next_after })
}

fn last_segment(key: &RecordKey, prefix: &str) -> Result<Name, RecordsError> {
    let corrupt = || RecordsError::Corrupt {
        key: key.to_string(),
        reason: "the key is not `<prefix><name>`".to_owned(),
    };
    let rest = key.as_str().strip_prefix(prefix).ok_or_else(corrupt)?;
    Name::new("record", rest).map_err(|_| corrupt())
}

pub(crate) fn decode<T: DeserializeOwned>(
    key: &RecordKey,
    bytes: &[u8],
) -> Result<T, RecordsError> {
    serde_json::from_slice(bytes).map_err(|e| RecordsError::Corrupt {
        key: key.to_string(),
        reason: e.to_string(),
    })
}
