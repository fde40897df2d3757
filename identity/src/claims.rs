//! What a Pangolin token says.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::api_key::KeyId;
use crate::principal::PrincipalKind;

/// The issuer every Pangolin token names.
pub const ISSUER: &str = "pangolin";

/// Whether a token grants access or buys new tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenType {
    /// Sent with requests.
    Access,
    /// Exchanged once for a new access and refresh token.
    Refresh,
}

impl fmt::Display for TokenType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Access => "access",
            Self::Refresh => "refresh",
        })
    }
}

/// The claims of a Pangolin JWT.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Always [`ISSUER`].
    pub iss: String,
    /// The principal id (`user:acme/ana`, `service:acme/etl`, `user:~/root`).
    pub sub: String,
    /// The principal's tenant; absent for root principals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Person or program.
    pub kind: PrincipalKind,
    /// Whether the principal was an administrator of its scope when the token was issued.
    pub admin: bool,
    /// The token's unique id (a UUID v4), the handle for revoking it.
    pub jti: String,
    /// Issued at, seconds since the epoch.
    pub iat: i64,
    /// Issued at, milliseconds since the epoch: compared with the principal's
    /// `tokens_valid_after`, so a password change refuses the tokens of the same second that
    /// came before it but not those that came after.
    pub iat_ms: i64,
    /// Expires at, seconds since the epoch.
    pub exp: i64,
    /// Access or refresh.
    pub typ: TokenType,
    /// For a service user's token: the API key it was issued for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<KeyId>,
}
