//! Roles and role bindings in the record store.
//!
//! Layout (see `keys.rs`): one record per role at `authz/<tenant>/roles/<role>` holding the
//! role as JSON, and one record per binding at `authz/<tenant>/bindings/<principal>/<role>`.
//! A binding per record means binding two roles to one principal never contend, and a
//! principal's roles are one prefix listing. The principals of a role are found by scanning
//! the tenant's bindings: one source of truth rather than a second index that a crash between
//! two record writes could leave disagreeing.
//!
//! Writes check the actor with [`may_manage_role`](super::may_manage_role) or
//! [`may_bind`](super::may_bind) before writing, and write by compare-and-swap on the record's
//! version. Reads are not checked here: the caller decides (with `ManageGrants`) who may list.

mod bindings;
mod keys;
mod roles;

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use pangolin_records::{Record, RecordKeyError, RecordStore};
use pangolin_store::BackendError;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::escalation::GrantRefusal;
use super::model::{Role, RoleError};

pub use bindings::{BindError, BindingPage, PrincipalPage, UnbindError};
pub use roles::{CreateRoleError, DeleteRoleError, RolePage, StoredRole, UpdateRoleError};

/// Roles and bindings over a record store.
#[derive(Clone)]
pub struct AuthzStore {
    records: Arc<dyn RecordStore>,
}

impl fmt::Debug for AuthzStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthzStore").finish_non_exhaustive()
    }
}

impl AuthzStore {
    /// Roles and bindings in `records`.
    pub fn new(records: Arc<dyn RecordStore>) -> Self {
        Self { records }
    }
}

/// A failure of the record store beneath, or a record it could not read.
#[derive(Debug, thiserror::Error)]
pub enum AuthzStoreError {
    /// A name made a record key that is too long.
    #[error("record key for an authorization record is invalid: {0}")]
    Key(#[from] RecordKeyError),
    /// The record store failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A stored record is not what this code writes.
    #[error("authorization record `{key}` cannot be read: {source}")]
    Corrupt {
        /// The record's key.
        key: String,
        /// Why it could not be decoded.
        source: serde_json::Error,
    },
    /// A record could not be encoded.
    #[error("authorization record `{key}` cannot be encoded: {source}")]
    Encode {
        /// The record's key.
        key: String,
        /// Why it could not be encoded.
        source: serde_json::Error,
    },
}

fn decode<T: DeserializeOwned>(record: &Record) -> Result<T, AuthzStoreError> {
    serde_json::from_slice(&record.value).map_err(|source| AuthzStoreError::Corrupt {
        key: record.key.to_string(),
        source,
    })
}

fn encode<T: Serialize>(key: &str, value: &T) -> Result<Bytes, AuthzStoreError> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(|source| AuthzStoreError::Encode {
            key: key.to_owned(),
            source,
        })
}
