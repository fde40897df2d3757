//! Tokens of an organisation's identity provider (Okta, Entra ID, Keycloak, Google, Dex): an
//! [`Issuer`] is verified against its OpenID Connect discovery document and its published
//! keys, and a token it signed becomes an [`ExternalIdentity`] (who, by which claims, in which
//! groups). Nothing here decides what that identity may do, and nothing serves HTTP: the
//! issuer's documents are fetched with a client, and the API layer maps requests onto
//! [`Issuer::verify`].
//!
//! What a token must be: a JWS whose header names one of the issuer's allowed asymmetric
//! algorithms (never `none`, never an HMAC: a public key must not be usable as a shared
//! secret) and a key id the issuer publishes for that algorithm; signed by that key; with
//! `iss` the issuer, `aud` one of the audiences, `exp` in the future and `nbf` (if any) in the
//! past, both within the clock skew; with a subject.
//!
//! People get such tokens through the grants in [`flows`]: the code grant with PKCE for a
//! browser, the device grant for a terminal, and refresh for both.

mod discovery;
pub mod flows;
mod jwks;
mod settings;
mod verify;

pub use discovery::{Discovery, FetchError, discover};
pub use flows::{
    AuthorizationRequest, DeviceAuthorization, FlowError, OAuthClient, Pkce, TokenAnswer,
    authorization_url, await_device, exchange_code, http_client, random_token, refresh,
    start_device,
};
pub use settings::{ALLOWED_ALGORITHMS, ClaimNames, IssuerSettings, SettingsError};
pub use verify::{ExternalIdentity, Issuer, VerifyError, unverified_claim, unverified_issuer};
