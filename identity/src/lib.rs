//! Authentication for Pangolin: users with bcrypt-hashed passwords in a tenant or at the
//! root, service users with API keys (also as OAuth2 client credentials), and HS256 JWTs with
//! revocation. Everything is stored through a [`pangolin_records::RecordStore`] under
//! `identity/` (`layout.rs` lists the keys) and changed only by
//! compare-and-swap, so several servers can share one store. No HTTP here: the API layer maps
//! requests onto [`Identity`].
//!
//! bcrypt is deliberately slow (about 250 ms at cost 12) and runs on the calling thread; an
//! async server should call the password and uncached API key paths where blocking for that
//! long is acceptable.

mod api_key;
mod api_keys;
mod bootstrap;
mod claims;
mod clock;
mod config;
mod docs;
mod external;
mod identity;
mod key_cache;
mod layout;
mod names;
mod password;
mod password_change;
mod principal;
mod random;
mod revocation;
mod service_users;
mod signing_key;
mod tokens;
mod users;

pub use api_key::{ApiKey, ApiKeyParseError, KEY_ID_CHARS, KeyId, SECRET_CHARS};
pub use api_keys::{
    ApiKeyAuthError, ApiKeyInfo, CreateApiKeyError, CreatedApiKey, RevokeApiKeyError,
};
pub use bootstrap::{BootstrapError, ROOT_USER};
pub use claims::{Claims, ISSUER, TokenType};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::IdentityConfig;
pub use docs::StoreError;
pub use external::{
    ExternalPage, ExternalPrincipal, ExternalSignIn, ExternalSignInError, UpdateExternalError,
    external_group_id, external_principal_id,
};
pub use identity::{Identity, OpenError};
pub use names::{MAX_NAME_CHARS, NameError, PrincipalName, Scope, TenantName};
pub use password::{
    DEFAULT_BCRYPT_COST, HashError, Hasher, MAX_PASSWORD_BYTES, MIN_PASSWORD_CHARS, Password,
    PasswordHash, PasswordPolicyError,
};
pub use password_change::ChangePasswordError;
pub use principal::{Principal, PrincipalId, PrincipalIdError, PrincipalKind};
pub use random::RandomError;
pub use service_users::{
    CreateServiceUserError, ServiceUser, ServiceUserPage, UpdateServiceUserError,
};
pub use signing_key::{MAX_SIGNING_KEY_BYTES, MIN_SIGNING_KEY_BYTES, SigningKey, SigningKeyError};
pub use tokens::{
    ClientCredentialsError, IssueTokenError, IssuedToken, RefreshError, RevokeTokenError,
    TokenPair, VerifiedToken, VerifyTokenError,
};
pub use users::{AuthenticateError, CreateUserError, UpdateUserError, User, UserPage};
