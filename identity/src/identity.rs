//! The handle every identity operation goes through: the record store, the clock, the hasher,
//! the token keys and the API key cache, opened once per server.

use std::fmt;
use std::sync::{Arc, OnceLock};

use pangolin_records::RecordStore;

use crate::clock::Clock;
use crate::config::IdentityConfig;
use crate::docs::Docs;
use crate::key_cache::KeyCache;
use crate::password::{HashError, Hasher, PasswordHash};
use crate::signing_key::{self, SigningKeyError, TokenKeys};

/// Authentication over one record store. Cheap to clone; clones share the API key cache.
#[derive(Clone)]
pub struct Identity {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) docs: Docs,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) hasher: Hasher,
    pub(crate) config: IdentityConfig,
    pub(crate) keys: TokenKeys,
    pub(crate) cache: KeyCache,
    dummy_hash: OnceLock<PasswordHash>,
}

/// Opening failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The signing key could not be loaded or created.
    #[error(transparent)]
    SigningKey(#[from] SigningKeyError),
}

impl Identity {
    /// Opens identity over `store`: uses the configured signing key, or loads the stored one,
    /// or generates and stores one (when several servers start at once, all end up with the
    /// key the first one stored).
    pub async fn open(
        store: Arc<dyn RecordStore>,
        config: IdentityConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, OpenError> {
        let docs = Docs::new(store);
        let key =
            signing_key::load_or_create(&docs, config.signing_key.clone(), clock.now()).await?;
        let inner = Inner {
            keys: TokenKeys::new(&key)?,
            hasher: Hasher::new(config.bcrypt_cost),
            cache: KeyCache::new(config.api_key_cache_ttl, config.api_key_cache_capacity),
            docs,
            clock,
            config,
            dummy_hash: OnceLock::new(),
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &IdentityConfig {
        &self.inner.config
    }

    pub(crate) fn docs(&self) -> &Docs {
        &self.inner.docs
    }

    pub(crate) fn now(&self) -> pangolin_store::Timestamp {
        self.inner.clock.now()
    }

    /// Spends one bcrypt verification on a hash nobody knows the password of, so that a
    /// refusal for a missing user or key takes as long as one for a wrong secret.
    pub(crate) async fn burn_verification(&self, secret: &str) -> Result<(), HashError> {
        let hash = match self.inner.dummy_hash.get() {
            Some(hash) => hash,
            None => {
                let hash = self.inner.hasher.hash("not a password of anyone").await?;
                self.inner.dummy_hash.get_or_init(|| hash)
            }
        };
        self.inner.hasher.verify(secret, hash).await?;
        Ok(())
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("config", &self.inner.config)
            .field("clock", &self.inner.clock)
            .finish_non_exhaustive()
    }
}
