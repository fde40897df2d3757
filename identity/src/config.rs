//! The settings an [`crate::Identity`] runs with.

use std::time::Duration;

use crate::password::DEFAULT_BCRYPT_COST;
use crate::signing_key::SigningKey;

/// Settings. `Default` is the production configuration with a generated signing key.
#[derive(Debug, Clone)]
pub struct IdentityConfig {
    /// bcrypt cost for passwords and API key secrets (12; tests use 4).
    pub bcrypt_cost: u32,
    /// Lifetime of access tokens (1 hour).
    pub access_token_ttl: Duration,
    /// Lifetime of refresh tokens (7 days).
    pub refresh_token_ttl: Duration,
    /// Clock skew tolerated when checking a token's expiry (30 seconds).
    pub leeway: Duration,
    /// A configured signing key; when absent, one is generated on first start and stored.
    pub signing_key: Option<SigningKey>,
    /// How long a successful API key verification is trusted without bcrypt (60 seconds).
    pub api_key_cache_ttl: Duration,
    /// How long what a key's record said (revoked, expiry, owner disabled) is trusted before
    /// it is read again (2 seconds): the longest another server's revocation takes to apply
    /// here. Reading it again costs one record read, not a bcrypt verification.
    pub api_key_record_ttl: Duration,
    /// Most entries the API key verification cache holds.
    pub api_key_cache_capacity: usize,
    /// An API key's `last_used` is written at most this often (60 seconds).
    pub last_used_interval: Duration,
}

impl Default for IdentityConfig {
    fn default() -> Self {
        Self {
            bcrypt_cost: DEFAULT_BCRYPT_COST,
            access_token_ttl: Duration::from_secs(60 * 60),
            refresh_token_ttl: Duration::from_secs(7 * 24 * 60 * 60),
            leeway: Duration::from_secs(30),
            signing_key: None,
            api_key_cache_ttl: Duration::from_secs(60),
            api_key_record_ttl: Duration::from_secs(2),
            api_key_cache_capacity: 10_000,
            last_used_interval: Duration::from_secs(60),
        }
    }
}
