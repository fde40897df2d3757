//! Issuing and verifying JWTs (HS256 only): access and refresh tokens for users, access
//! tokens for service users, refresh (once per refresh token), logout and revocation.

use std::fmt;
use std::time::Duration;

use jsonwebtoken::{Algorithm, Header, Validation};
use pangolin_store::Timestamp;

use crate::Identity;
use crate::api_key::ApiKey;
use crate::api_keys::{ApiKeyAuthError, KeyDoc, key_status};
use crate::claims::{Claims, ISSUER, TokenType};
use crate::clock::{millis, plus};
use crate::docs::StoreError;
use crate::layout;
use crate::names::Scope;
use crate::principal::{Principal, PrincipalId, PrincipalKind};

/// A signed token. `Debug` shows its id and expiry, never the token.
#[derive(Clone)]
pub struct IssuedToken {
    /// The compact JWT to hand to the client.
    pub token: String,
    /// Its `jti`.
    pub jti: String,
    /// When it expires.
    pub expires_at: Timestamp,
}

impl fmt::Debug for IssuedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedToken")
            .field("token", &"<redacted>")
            .field("jti", &self.jti)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// An access token with the refresh token that renews it.
#[derive(Debug, Clone)]
pub struct TokenPair {
    /// Sent with requests.
    pub access: IssuedToken,
    /// Exchanged once for a new pair.
    pub refresh: IssuedToken,
}

/// A token that verified, with the principal as its records say now.
#[derive(Debug, Clone)]
pub struct VerifiedToken {
    /// The principal (its admin flag as stored now, not as when the token was issued).
    pub principal: Principal,
    /// The token's claims.
    pub claims: Claims,
}

/// Issuing a token failed.
#[derive(Debug, thiserror::Error)]
pub enum IssueTokenError {
    /// Signing failed.
    #[error("could not sign the token: {0}")]
    Sign(#[source] jsonwebtoken::errors::Error),
    /// A service principal without the key it authenticated with.
    #[error("a service user's token needs the API key it authenticated with")]
    MissingKeyId,
}

/// A token was refused.
#[derive(Debug, thiserror::Error)]
pub enum VerifyTokenError {
    /// Not a valid HS256 token of this server: bad format, algorithm, signature or issuer.
    #[error("invalid token: {0}")]
    Invalid(#[source] jsonwebtoken::errors::Error),
    /// The claims do not describe a principal consistently.
    #[error("invalid token: {0}")]
    Malformed(String),
    /// The token has expired.
    #[error("the token has expired")]
    Expired,
    /// An access token where a refresh token was expected, or the reverse.
    #[error("expected an {expected} token, got a {found} token")]
    WrongType {
        /// What the caller needed.
        expected: TokenType,
        /// What the token is.
        found: TokenType,
    },
    /// The token was revoked (logged out, refreshed already, or by an administrator).
    #[error("the token has been revoked")]
    Revoked,
    /// The principal no longer exists or is disabled.
    #[error("{0} does not exist or is disabled")]
    PrincipalInactive(PrincipalId),
    /// The token predates the principal's last password change (or its re-creation).
    #[error("the token was issued before {0}'s credentials last changed")]
    Superseded(PrincipalId),
    /// A service token whose API key has been revoked or has expired.
    #[error("the token's API key is no longer valid: {0}")]
    KeyInvalid(#[source] ApiKeyAuthError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Refreshing failed.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The refresh token was refused.
    #[error(transparent)]
    Verify(#[from] VerifyTokenError),
    /// The new tokens could not be issued.
    #[error(transparent)]
    Issue(#[from] IssueTokenError),
}

/// Revoking by token id failed.
#[derive(Debug, thiserror::Error)]
pub enum RevokeTokenError {
    /// Not a token id (a UUID).
    #[error("`{0}` is not a token id")]
    InvalidId(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn seconds(at: Timestamp) -> i64 {
    at.as_millis().div_euclid(1000)
}

impl Identity {
    /// An access and a refresh token for a user.
    pub fn issue_tokens(&self, principal: &Principal) -> Result<TokenPair, IssueTokenError> {
        let config = &self.inner.config;
        Ok(TokenPair {
            access: self.issue(principal, TokenType::Access, config.access_token_ttl)?,
            refresh: self.issue(principal, TokenType::Refresh, config.refresh_token_ttl)?,
        })
    }

    /// An access token for a service user (client credentials get no refresh token: the
    /// client holds its key and asks again).
    pub fn issue_service_token(
        &self,
        principal: &Principal,
    ) -> Result<IssuedToken, IssueTokenError> {
        if principal.key_id.is_none() {
            return Err(IssueTokenError::MissingKeyId);
        }
        self.issue(
            principal,
            TokenType::Access,
            self.inner.config.access_token_ttl,
        )
    }

    /// The OAuth2 client-credentials grant: a service token for a valid key.
    pub async fn client_credentials_token(
        &self,
        key: &ApiKey,
    ) -> Result<IssuedToken, ClientCredentialsError> {
        let principal = self.authenticate_api_key(key).await?;
        Ok(self.issue_service_token(&principal)?)
    }

    fn issue(
        &self,
        principal: &Principal,
        typ: TokenType,
        ttl: Duration,
    ) -> Result<IssuedToken, IssueTokenError> {
        let now = self.now();
        let expires_at = plus(now, ttl);
        let claims = Claims {
            iss: ISSUER.to_owned(),
            sub: principal.id.to_string(),
            tenant: principal.id.scope.tenant_name().map(|t| t.to_string()),
            kind: principal.id.kind,
            admin: principal.is_admin,
            jti: uuid::Uuid::new_v4().to_string(),
            iat: seconds(now),
            iat_ms: now.as_millis(),
            exp: seconds(expires_at),
            typ,
            key_id: principal.key_id.clone(),
        };
        let token = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &self.inner.keys.encoding,
        )
        .map_err(IssueTokenError::Sign)?;
        Ok(IssuedToken {
            token,
            jti: claims.jti,
            expires_at,
        })
    }

    /// Checks signature, algorithm, issuer and expiry, without the stored state.
    fn decode(&self, token: &str) -> Result<Claims, VerifyTokenError> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        // Expiry is checked below against the injected clock, not the library's wall clock.
        validation.validate_exp = false;
        let data = jsonwebtoken::decode::<Claims>(token, &self.inner.keys.decoding, &validation)
            .map_err(VerifyTokenError::Invalid)?;
        let claims = data.claims;
        let leeway = i64::try_from(self.inner.config.leeway.as_secs()).unwrap_or(i64::MAX);
        if seconds(self.now()) > claims.exp.saturating_add(leeway) {
            return Err(VerifyTokenError::Expired);
        }
        Ok(claims)
    }

    /// Verifies an access token: the token itself, then revocation, then the principal (and
    /// for a service, its key) as stored now.
    pub async fn verify_access_token(
        &self,
        token: &str,
    ) -> Result<VerifiedToken, VerifyTokenError> {
        self.verify(token, TokenType::Access).await
    }

    async fn verify(
        &self,
        token: &str,
        expected: TokenType,
    ) -> Result<VerifiedToken, VerifyTokenError> {
        let claims = self.decode(token)?;
        if claims.typ != expected {
            return Err(VerifyTokenError::WrongType {
                expected,
                found: claims.typ,
            });
        }
        let id = principal_of(&claims)?;
        if self.is_revoked(&claims.jti).await? {
            return Err(VerifyTokenError::Revoked);
        }
        let principal = self.current_principal(&id, &claims).await?;
        Ok(VerifiedToken { principal, claims })
    }

    /// The principal as stored now, if the token may still speak for it.
    async fn current_principal(
        &self,
        id: &PrincipalId,
        claims: &Claims,
    ) -> Result<Principal, VerifyTokenError> {
        let inactive = || VerifyTokenError::PrincipalInactive(id.clone());
        let (is_admin, valid_after) = match (&id.kind, &id.scope) {
            (PrincipalKind::User, scope) => {
                let doc = self.user_doc(scope, &id.name).await?;
                let doc = doc.filter(|d| !d.disabled).ok_or_else(inactive)?;
                (doc.is_admin, doc.tokens_valid_after)
            }
            (PrincipalKind::Service, Scope::Tenant(tenant)) => {
                let doc = self.service_doc(tenant, &id.name).await?;
                let doc = doc.filter(|d| !d.disabled).ok_or_else(inactive)?;
                self.check_token_key(id, claims).await?;
                (false, doc.tokens_valid_after)
            }
            (PrincipalKind::Service, Scope::Root) => return Err(inactive()),
        };
        if claims.iat_ms < valid_after.as_millis() {
            return Err(VerifyTokenError::Superseded(id.clone()));
        }
        Ok(Principal {
            id: id.clone(),
            is_admin,
            key_id: claims.key_id.clone(),
        })
    }

    async fn check_token_key(
        &self,
        id: &PrincipalId,
        claims: &Claims,
    ) -> Result<(), VerifyTokenError> {
        let malformed = || VerifyTokenError::Malformed("a service token names no API key".into());
        let key_id = claims.key_id.as_ref().ok_or_else(malformed)?;
        let doc = self.docs().get::<KeyDoc>(&layout::api_key(key_id)?).await?;
        let owned = doc.filter(|d| {
            Some(&d.value.tenant) == id.scope.tenant_name() && d.value.service == id.name
        });
        let Some(doc) = owned else {
            return Err(VerifyTokenError::KeyInvalid(ApiKeyAuthError::Revoked(
                key_id.clone(),
            )));
        };
        key_status(key_id, doc.value.expires, doc.value.revoked_at, self.now())
            .map_err(VerifyTokenError::KeyInvalid)
    }

    /// Exchanges a refresh token for a new pair. The refresh token is revoked in the same
    /// step, so it works once.
    pub async fn refresh(&self, refresh_token: &str) -> Result<TokenPair, RefreshError> {
        let verified = self.verify(refresh_token, TokenType::Refresh).await?;
        let expires = Timestamp::from_millis(verified.claims.exp.saturating_mul(1000));
        if !self
            .revoke_jti(&verified.claims.jti, expires)
            .await
            .map_err(VerifyTokenError::from)?
        {
            return Err(VerifyTokenError::Revoked.into());
        }
        Ok(self.issue_tokens(&verified.principal)?)
    }

    /// Revokes the given tokens (say an access and a refresh token). Tokens that are not this
    /// server's or have expired are skipped: there is nothing to revoke.
    pub async fn logout(&self, tokens: &[&str]) -> Result<(), StoreError> {
        for token in tokens {
            if let Ok(claims) = self.decode(token) {
                let expires = Timestamp::from_millis(claims.exp.saturating_mul(1000));
                self.revoke_jti(&claims.jti, expires).await?;
            }
        }
        Ok(())
    }

    /// Revokes a token by its id, for administrators who know only the `jti`. The record is
    /// kept for the longest token lifetime, since the token's own expiry is not known here.
    pub async fn revoke_token_id(&self, jti: &str) -> Result<(), RevokeTokenError> {
        let id =
            uuid::Uuid::parse_str(jti).map_err(|_| RevokeTokenError::InvalidId(jti.to_owned()))?;
        let config = &self.inner.config;
        let longest = config.access_token_ttl.max(config.refresh_token_ttl);
        let expires = Timestamp::from_millis(
            self.now()
                .as_millis()
                .saturating_add(millis(longest) + millis(config.leeway)),
        );
        self.revoke_jti(&id.hyphenated().to_string(), expires)
            .await?;
        Ok(())
    }
}

/// The client-credentials grant failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientCredentialsError {
    /// The key was refused.
    #[error(transparent)]
    Key(#[from] ApiKeyAuthError),
    /// The token could not be issued.
    #[error(transparent)]
    Issue(#[from] IssueTokenError),
}

/// The principal a token's claims name, checked for consistency.
fn principal_of(claims: &Claims) -> Result<PrincipalId, VerifyTokenError> {
    let id =
        PrincipalId::parse(&claims.sub).map_err(|e| VerifyTokenError::Malformed(e.to_string()))?;
    let tenant = id.scope.tenant_name().map(|t| t.as_str());
    if id.kind != claims.kind || tenant != claims.tenant.as_deref() {
        return Err(VerifyTokenError::Malformed(
            "the subject disagrees with the kind or tenant claims".into(),
        ));
    }
    Ok(id)
}
