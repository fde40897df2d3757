//! The issuer's published keys, kept for a while and fetched again when a token names a key
//! that is not among them (the issuer rotated), at most every so often, so a flood of tokens
//! with made-up key ids cannot make the server flood the issuer.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};

use crate::discovery::{FetchError, fetch};

/// One signing key of the issuer.
pub(crate) struct Key {
    pub(crate) decoding: DecodingKey,
    /// The algorithm the issuer pins the key to, if it does.
    pub(crate) algorithm: Option<Algorithm>,
}

struct Fetched {
    keys: HashMap<String, Arc<Key>>,
    at: Instant,
}

/// Why no key was found for a key id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum KeyError {
    /// The issuer (asked again, or recently enough) does not publish it.
    #[error("the issuer publishes no signing key `{0}`")]
    Unknown(String),
    /// The keys could not be fetched and those kept are too old or lack it.
    #[error("the issuer's keys could not be fetched: {0}")]
    Unavailable(FetchError),
}

/// The keys of one JWKS.
pub(crate) struct KeySet {
    max_age: Duration,
    refetch: Duration,
    fetched: parking_lot::RwLock<Option<Arc<Fetched>>>,
    /// One fetch at a time; holds when the last one started.
    fetching: tokio::sync::Mutex<Option<Instant>>,
}

impl KeySet {
    pub(crate) fn new(max_age: Duration, refetch: Duration) -> Self {
        Self {
            max_age,
            refetch,
            fetched: parking_lot::RwLock::new(None),
            fetching: tokio::sync::Mutex::new(None),
        }
    }

    /// The key `kid` of the JWKS at `url`.
    pub(crate) async fn key(
        &self,
        http: &reqwest::Client,
        url: &str,
        kid: &str,
    ) -> Result<Arc<Key>, KeyError> {
        if let Some(key) = self.kept(kid) {
            return Ok(key);
        }
        let mut last = self.fetching.lock().await;
        // Another caller may have fetched while this one waited.
        if let Some(key) = self.kept(kid) {
            return Ok(key);
        }
        let stale = self
            .fetched
            .read()
            .as_ref()
            .is_none_or(|f| f.at.elapsed() >= self.max_age);
        let recently = last.is_some_and(|at| at.elapsed() < self.refetch);
        if recently && !stale {
            return Err(KeyError::Unknown(kid.to_owned()));
        }
        *last = Some(Instant::now());
        match fetch::<JwkSet>(http, url).await {
            Ok(set) => {
                let keys = signing_keys(&set);
                tracing::debug!(url, keys = keys.len(), "fetched the issuer's keys");
                let found = keys.get(kid).cloned();
                *self.fetched.write() = Some(Arc::new(Fetched {
                    keys,
                    at: Instant::now(),
                }));
                found.ok_or_else(|| KeyError::Unknown(kid.to_owned()))
            }
            Err(error) => {
                tracing::warn!(%error, "the issuer's keys could not be fetched");
                Err(KeyError::Unavailable(error))
            }
        }
    }

    /// A kept key for `kid` that is not too old.
    fn kept(&self, kid: &str) -> Option<Arc<Key>> {
        let fetched = self.fetched.read();
        let fetched = fetched.as_ref()?;
        if fetched.at.elapsed() >= self.max_age {
            return None;
        }
        fetched.keys.get(kid).cloned()
    }
}

/// The set's signing keys by key id: keys for encryption, symmetric keys (a published secret
/// is no secret) and keys without an id are left out.
fn signing_keys(set: &JwkSet) -> HashMap<String, Arc<Key>> {
    set.keys
        .iter()
        .filter(|jwk| !matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)))
        .filter(|jwk| !matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)))
        .filter_map(|jwk| {
            let kid = jwk.common.key_id.clone()?;
            let decoding = DecodingKey::from_jwk(jwk).ok()?;
            // A key pinned to an algorithm that signs nothing (`RSA-OAEP`) is not a signing key.
            let algorithm = match jwk.common.key_algorithm {
                None => None,
                Some(pinned) => Some(Algorithm::try_from(pinned).ok()?),
            };
            Some((
                kid,
                Arc::new(Key {
                    decoding,
                    algorithm,
                }),
            ))
        })
        .collect()
}
