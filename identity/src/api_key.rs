//! The API key format: `pgl_<key id>_<secret>`, the key id 16 lowercase hex characters (8
//! random bytes) that finds the key's record, the secret 64 lowercase hex characters (32 random
//! bytes) that only its bcrypt hash is stored of. Also the OAuth2 client-credentials form of
//! the same key: `client_id` = key id, `client_secret` = secret.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::random::{self, RandomError};

const PREFIX: &str = "pgl_";
/// Length of a key id in hex characters.
pub const KEY_ID_CHARS: usize = 16;
/// Length of a secret in hex characters.
pub const SECRET_CHARS: usize = 64;

/// Why an API key or client credential was refused before any lookup.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiKeyParseError {
    /// It does not start with `pgl_`.
    #[error("an API key starts with `pgl_`")]
    MissingPrefix,
    /// No `_` between key id and secret.
    #[error("an API key has the form `pgl_<key id>_<secret>`")]
    MissingSeparator,
    /// The key id is not 16 lowercase hex characters.
    #[error("an API key's id is {KEY_ID_CHARS} lowercase hex characters")]
    InvalidKeyId,
    /// The secret is not 64 lowercase hex characters.
    #[error("an API key's secret is {SECRET_CHARS} lowercase hex characters")]
    InvalidSecret,
    /// A client credential is not `<client id>:<client secret>`.
    #[error("client credentials have the form `<client id>:<client secret>`")]
    MissingColon,
}

fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The public part of an API key: names its record; safe to log and show.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct KeyId(String);

impl KeyId {
    /// Validates a key id (16 lowercase hex characters).
    pub fn new(id: impl Into<String>) -> Result<Self, ApiKeyParseError> {
        let id = id.into();
        if !is_lower_hex(&id, KEY_ID_CHARS) {
            return Err(ApiKeyParseError::InvalidKeyId);
        }
        Ok(Self(id))
    }

    /// A fresh random key id.
    pub(crate) fn generate() -> Result<Self, RandomError> {
        Ok(Self(random::hex_string::<8>()?))
    }

    /// The id as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for KeyId {
    type Error = ApiKeyParseError;
    fn try_from(id: String) -> Result<Self, ApiKeyParseError> {
        Self::new(id)
    }
}

impl From<KeyId> for String {
    fn from(id: KeyId) -> String {
        id.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({})", self.0)
    }
}

/// A whole API key: its id and its secret. `Debug` shows only the id; [`fmt::Display`] is not
/// implemented so the secret is written only through [`ApiKey::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    id: KeyId,
    secret: String,
}

impl ApiKey {
    /// A fresh key: random id and secret.
    pub(crate) fn generate() -> Result<Self, RandomError> {
        Ok(Self {
            id: KeyId::generate()?,
            secret: random::hex_string::<32>()?,
        })
    }

    /// Parses `pgl_<key id>_<secret>`.
    pub fn parse(key: &str) -> Result<Self, ApiKeyParseError> {
        let rest = key
            .strip_prefix(PREFIX)
            .ok_or(ApiKeyParseError::MissingPrefix)?;
        let (id, secret) = rest
            .split_once('_')
            .ok_or(ApiKeyParseError::MissingSeparator)?;
        Self::from_parts(id, secret)
    }

    /// Parses OAuth2 client credentials given as `<client id>:<client secret>`.
    pub fn parse_client_credential(credential: &str) -> Result<Self, ApiKeyParseError> {
        let (id, secret) = credential
            .split_once(':')
            .ok_or(ApiKeyParseError::MissingColon)?;
        Self::from_parts(id, secret)
    }

    /// The key from an OAuth2 `client_id` and `client_secret`.
    pub fn from_parts(client_id: &str, client_secret: &str) -> Result<Self, ApiKeyParseError> {
        let id = KeyId::new(client_id)?;
        if !is_lower_hex(client_secret, SECRET_CHARS) {
            return Err(ApiKeyParseError::InvalidSecret);
        }
        Ok(Self {
            id,
            secret: client_secret.to_owned(),
        })
    }

    /// The key id.
    pub fn id(&self) -> &KeyId {
        &self.id
    }

    /// The secret (the OAuth2 `client_secret`). Callers must not log it.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The whole key as handed to its owner: `pgl_<key id>_<secret>`.
    pub fn expose(&self) -> String {
        format!("{PREFIX}{}_{}", self.id, self.secret)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish()
    }
}
