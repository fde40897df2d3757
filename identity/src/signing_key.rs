//! The HS256 signing key: configured, or generated on first start and stored so that every
//! server and every restart signs and verifies with the same key.

use std::fmt;

use jsonwebtoken::{DecodingKey, EncodingKey};
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};

use crate::docs::{Docs, StoreError};
use crate::layout;
use crate::random::{self, RandomError};

/// Shortest accepted signing key, in bytes (HS256 wants at least the hash's 256 bits).
pub const MIN_SIGNING_KEY_BYTES: usize = 32;
/// Longest accepted signing key, in bytes.
pub const MAX_SIGNING_KEY_BYTES: usize = 128;
/// Length of a generated key, in bytes.
const GENERATED_KEY_BYTES: usize = 64;

/// Key material for signing tokens. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey(Vec<u8>);

/// Why a signing key could not be used, loaded or created.
#[derive(Debug, thiserror::Error)]
pub enum SigningKeyError {
    /// The key has the wrong length.
    #[error(
        "a signing key must be {MIN_SIGNING_KEY_BYTES} to {MAX_SIGNING_KEY_BYTES} bytes long, \
         not {0}"
    )]
    Length(usize),
    /// The stored key has the wrong length.
    #[error("the stored signing key is {0} bytes long, outside the accepted range")]
    StoredLength(usize),
    /// No random bytes for a new key.
    #[error(transparent)]
    Random(#[from] RandomError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The token library refused the key.
    #[error("the signing key cannot be used: {0}")]
    Unusable(#[source] jsonwebtoken::errors::Error),
    /// The key was neither created nor found: it was deleted between two reads.
    #[error("the stored signing key disappeared while starting; start again")]
    Vanished,
}

impl SigningKey {
    /// A key from configured bytes (32..=128 bytes).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Self, SigningKeyError> {
        let bytes = bytes.into();
        if !(MIN_SIGNING_KEY_BYTES..=MAX_SIGNING_KEY_BYTES).contains(&bytes.len()) {
            return Err(SigningKeyError::Length(bytes.len()));
        }
        Ok(Self(bytes))
    }

    fn generate() -> Result<Self, SigningKeyError> {
        Ok(Self(random::bytes::<GENERATED_KEY_BYTES>()?.to_vec()))
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey(<{} bytes redacted>)", self.0.len())
    }
}

#[derive(Serialize, Deserialize)]
struct StoredKey {
    key: Vec<u8>,
    created: Timestamp,
}

/// The configured key, or the stored one, or a new one stored by `create`: when two servers
/// start at once, one create wins and the other reads the winner's key.
pub(crate) async fn load_or_create(
    docs: &Docs,
    configured: Option<SigningKey>,
    now: Timestamp,
) -> Result<SigningKey, SigningKeyError> {
    if let Some(key) = configured {
        return Ok(key);
    }
    let record = layout::signing_key()?;
    if let Some(stored) = read(docs).await? {
        return Ok(stored);
    }
    let fresh = SigningKey::generate()?;
    let doc = StoredKey {
        key: fresh.0.clone(),
        created: now,
    };
    if docs.create(&record, &doc).await? {
        return Ok(fresh);
    }
    read(docs).await?.ok_or(SigningKeyError::Vanished)
}

async fn read(docs: &Docs) -> Result<Option<SigningKey>, SigningKeyError> {
    let Some(stored) = docs.get::<StoredKey>(&layout::signing_key()?).await? else {
        return Ok(None);
    };
    let len = stored.value.key.len();
    SigningKey::new(stored.value.key)
        .map(Some)
        .map_err(|_| SigningKeyError::StoredLength(len))
}

/// The key in the forms `jsonwebtoken` signs and verifies with.
pub(crate) struct TokenKeys {
    pub(crate) encoding: EncodingKey,
    pub(crate) decoding: DecodingKey,
}

impl TokenKeys {
    pub(crate) fn new(key: &SigningKey) -> Result<Self, SigningKeyError> {
        Ok(Self {
            encoding: EncodingKey::from_secret(&key.0).map_err(SigningKeyError::Unusable)?,
            decoding: DecodingKey::from_secret(&key.0).map_err(SigningKeyError::Unusable)?,
        })
    }
}
