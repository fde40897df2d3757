//! Delegated storage access: what an engine gets so that it can read (or write) one table's
//! files and nothing else, without ever holding the server's own keys.
//!
//! Two mechanisms, as the Iceberg REST protocol names them:
//! - vended credentials: short-lived keys from STS `AssumeRole`, narrowed by an inline session
//!   policy to the table's prefixes ([`s3::StsVendor`], [`s3::session_policy`]);
//! - remote signing: the engine sends each S3 request to the catalog, which checks that it
//!   stays inside the table's prefixes and signs it ([`s3::sign`]).
//!
//! This crate decides nothing about who may do what: callers pass the [`Access`] the
//! principal is entitled to, and get credentials or signatures for exactly that.

pub mod azure;
mod cache;
pub mod gcs;
pub mod s3;
mod secret;

pub use secret::Secret;

/// Whether `endpoint` can name a storage or token service: an `http://` or `https://` URL
/// with a host and no credentials in it.
pub fn is_service_url(endpoint: &str) -> bool {
    url::Url::parse(endpoint).is_ok_and(|url| {
        matches!(url.scheme(), "http" | "https")
            && url.has_host()
            && url.username().is_empty()
            && url.password().is_none()
    })
}

/// Milliseconds since the epoch at `time`, as clients are told when a credential expires.
pub fn epoch_ms(time: std::time::SystemTime) -> u128 {
    time.duration_since(std::time::SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
}

/// What a delegated credential allows on a table's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    /// Read objects and list below the prefixes.
    Read,
    /// Also write and delete objects below them (and multipart uploads).
    ReadWrite,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::ReadWrite => "read-write",
        }
    }
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
