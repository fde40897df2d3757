//! Passwords: the policy new passwords must meet, and bcrypt hashing and verification.

use std::fmt;

/// Shortest accepted new password, in characters.
pub const MIN_PASSWORD_CHARS: usize = 12;
/// Longest accepted password, in bytes: bcrypt ignores everything past 72 bytes, so a longer
/// password would silently be only partly checked.
pub const MAX_PASSWORD_BYTES: usize = 72;
/// The bcrypt cost used unless configured otherwise.
pub const DEFAULT_BCRYPT_COST: u32 = 12;

/// A plaintext password. Its `Debug` output never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    /// Wraps a password as typed.
    pub fn new(password: impl Into<String>) -> Self {
        Self(password.into())
    }

    /// The plaintext. Callers must not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Checks the policy for new passwords.
    pub fn check_policy(&self) -> Result<(), PasswordPolicyError> {
        let chars = self.0.chars().count();
        if chars < MIN_PASSWORD_CHARS {
            return Err(PasswordPolicyError::TooShort { chars });
        }
        if self.0.len() > MAX_PASSWORD_BYTES {
            return Err(PasswordPolicyError::TooLong {
                bytes: self.0.len(),
            });
        }
        Ok(())
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

/// Why a new password was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasswordPolicyError {
    /// Fewer than [`MIN_PASSWORD_CHARS`] characters.
    #[error("password has {chars} characters; at least {MIN_PASSWORD_CHARS} are required")]
    TooShort {
        /// The password's length in characters.
        chars: usize,
    },
    /// More than [`MAX_PASSWORD_BYTES`] bytes.
    #[error("password is {bytes} bytes long; at most {MAX_PASSWORD_BYTES} bytes are accepted")]
    TooLong {
        /// The password's length in bytes.
        bytes: usize,
    },
}

/// A bcrypt hash as stored. Its `Debug` output never shows it.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct PasswordHash(String);

impl fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PasswordHash(<redacted>)")
    }
}

/// Hashing or verifying a secret failed.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    /// bcrypt failed (a bad cost or a corrupt stored hash).
    #[error("bcrypt failed: {0}")]
    Bcrypt(#[from] bcrypt::BcryptError),
    /// The blocking thread that runs bcrypt was lost (the runtime is shutting down).
    #[error("the hashing thread stopped: {0}")]
    Stopped(String),
}

/// Hashes and verifies secrets (passwords and API key secrets) with bcrypt at one cost.
#[derive(Debug, Clone, Copy)]
pub struct Hasher {
    cost: u32,
}

impl Hasher {
    /// A hasher at `cost` (4..=31; 12 in production, 4 keeps tests fast).
    pub fn new(cost: u32) -> Self {
        Self { cost }
    }

    /// The configured cost.
    pub fn cost(&self) -> u32 {
        self.cost
    }

    /// A fresh salted hash of `secret`. A secret longer than [`MAX_PASSWORD_BYTES`] is
    /// refused rather than truncated. (bcrypt's own non-truncating variant also refuses exactly
    /// 72 bytes, which bcrypt does read in full.)
    pub async fn hash(&self, secret: &str) -> Result<PasswordHash, HashError> {
        if secret.len() > MAX_PASSWORD_BYTES {
            return Err(bcrypt::BcryptError::Truncation(secret.len()).into());
        }
        let (secret, cost) = (secret.to_owned(), self.cost);
        off_thread(move || bcrypt::hash(secret, cost))
            .await
            .map(PasswordHash)
    }

    /// Whether `secret` matches `hash`. A secret longer than bcrypt reads never matches, so
    /// two passwords sharing their first 72 bytes are never taken for each other.
    pub async fn verify(&self, secret: &str, hash: &PasswordHash) -> Result<bool, HashError> {
        if secret.len() > MAX_PASSWORD_BYTES {
            return Ok(false);
        }
        let (secret, hash) = (secret.to_owned(), hash.0.clone());
        off_thread(move || bcrypt::verify(secret, &hash)).await
    }
}

/// Runs bcrypt (a good fraction of a second at the production cost) on a blocking thread, so
/// that it holds no async worker. Only bcrypt runs there: a blocking thread that waited for
/// other work queued on the same pool (a database read, a file) would wait forever once the
/// pool was full of such threads.
async fn off_thread<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, bcrypt::BcryptError> + Send + 'static,
) -> Result<T, HashError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => Ok(done?),
        Err(lost) => Err(HashError::Stopped(lost.to_string())),
    }
}

impl Default for Hasher {
    fn default() -> Self {
        Self::new(DEFAULT_BCRYPT_COST)
    }
}
