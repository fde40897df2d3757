//! Where identity records live in the record store. Every key is under `identity/`; scopes
//! are written `~` (root) or the tenant name, which cannot contain `~` or `/`, so keys of
//! different scopes and tenants never overlap or share a prefix.
//!
//! | key | document |
//! |---|---|
//! | `identity/signing-key` | the generated JWT signing key |
//! | `identity/users/<scope>/<name>` | a user |
//! | `identity/services/<tenant>/<name>` | a service user |
//! | `identity/api-keys/<key id>` | an API key (hash of its secret, owner, dates) |
//! | `identity/service-keys/<tenant>/<name>/<key id>` | index: the keys of a service user |
//! | `identity/revoked-tokens/<jti>` | a revoked token, kept until it would have expired |
//! | `identity/external/<scope>/<provider>/<blake3 of subject>` | a principal of an identity provider |

use pangolin_records::RecordKey;

use crate::api_key::KeyId;
use crate::docs::{StoreError, key};
use crate::names::{PrincipalName, Scope, TenantName};

pub(crate) fn signing_key() -> Result<RecordKey, StoreError> {
    key("identity/signing-key".to_owned())
}

pub(crate) fn users(scope: &Scope) -> String {
    format!("identity/users/{scope}/")
}

pub(crate) fn user(scope: &Scope, name: &PrincipalName) -> Result<RecordKey, StoreError> {
    key(format!("{}{name}", users(scope)))
}

pub(crate) fn services(tenant: &TenantName) -> String {
    format!("identity/services/{tenant}/")
}

pub(crate) fn service(tenant: &TenantName, name: &PrincipalName) -> Result<RecordKey, StoreError> {
    key(format!("{}{name}", services(tenant)))
}

pub(crate) fn api_key(id: &KeyId) -> Result<RecordKey, StoreError> {
    key(format!("identity/api-keys/{id}"))
}

pub(crate) fn service_keys(tenant: &TenantName, name: &PrincipalName) -> String {
    format!("identity/service-keys/{tenant}/{name}/")
}

pub(crate) fn service_key(
    tenant: &TenantName,
    name: &PrincipalName,
    id: &KeyId,
) -> Result<RecordKey, StoreError> {
    key(format!("{}{id}", service_keys(tenant, name)))
}

pub(crate) fn externals(scope: &Scope) -> String {
    format!("identity/external/{scope}/")
}

/// A subject may hold any character; its hash is always a valid key segment.
pub(crate) fn external(
    scope: &Scope,
    provider: &PrincipalName,
    subject: &str,
) -> Result<RecordKey, StoreError> {
    let hash = blake3::hash(subject.as_bytes()).to_hex();
    key(format!("{}{provider}/{hash}", externals(scope)))
}

pub(crate) fn revoked_tokens() -> &'static str {
    "identity/revoked-tokens/"
}

pub(crate) fn revoked_token(jti: &str) -> Result<RecordKey, StoreError> {
    key(format!("{}{jti}", revoked_tokens()))
}
