//! Verifying one issuer's tokens.

use std::collections::HashSet;

use jsonwebtoken::Validation;
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::discovery::{Discovery, FetchError, discover};
use crate::jwks::{KeyError, KeySet};
use crate::settings::{IssuerSettings, SettingsError};

/// Who a verified token says its bearer is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalIdentity {
    /// The issuer identifier.
    pub issuer: String,
    /// The subject claim: stable, unique at the issuer.
    pub subject: String,
    pub username: Option<String>,
    pub email: Option<String>,
    /// The groups claim (a list of strings, or one string).
    pub groups: Vec<String>,
}

/// Why a token was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The token is not one this issuer signed for us, now: a refusal (401). The message says
    /// which rule it broke and never repeats the token.
    #[error("the token is not valid: {0}")]
    Invalid(String),
    /// The issuer's documents could not be fetched, so the token cannot be checked (503).
    #[error("the identity provider cannot be reached to check the token: {0}")]
    Unavailable(FetchError),
}

/// One identity provider, as configured, with what it published: its discovery document
/// (fetched once, on the first token) and its keys.
pub struct Issuer {
    settings: IssuerSettings,
    http: reqwest::Client,
    discovery: OnceCell<Discovery>,
    keys: KeySet,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer")
            .field("issuer", &self.settings.issuer)
            .finish_non_exhaustive()
    }
}

impl Issuer {
    /// An issuer with valid `settings`. Reaches nothing yet.
    pub fn new(settings: IssuerSettings) -> Result<Self, SettingsError> {
        settings.validate()?;
        // The documents say where to go; a redirect elsewhere is not followed.
        let http =
            crate::http_client().map_err(|_| SettingsError::Issuer(settings.issuer.clone()))?;
        let keys = KeySet::new(settings.keys_max_age(), settings.keys_refetch());
        Ok(Self {
            settings,
            http,
            discovery: OnceCell::new(),
            keys,
        })
    }

    pub fn settings(&self) -> &IssuerSettings {
        &self.settings
    }

    /// The client this issuer's documents are fetched with, for its other endpoints.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The discovery document, fetched on first use (a failure is not kept: the next call
    /// tries again).
    pub async fn discovery(&self) -> Result<&Discovery, FetchError> {
        self.discovery
            .get_or_try_init(|| discover(&self.http, &self.settings.issuer))
            .await
    }

    /// Verifies `token` as described in the crate's documentation.
    #[tracing::instrument(level = "debug", skip_all, fields(issuer = %self.settings.issuer))]
    pub async fn verify(&self, token: &str) -> Result<ExternalIdentity, VerifyError> {
        let invalid = |reason: &str| VerifyError::Invalid(reason.to_owned());
        let header = jsonwebtoken::decode_header(token).map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::Json(_) => {
                invalid("its header names no algorithm this server knows (`none` is never taken)")
            }
            _ => invalid("it is not a signed JWT"),
        })?;
        if !self.settings.algorithms.contains(&header.alg) {
            return Err(VerifyError::Invalid(format!(
                "it is signed with {:?}, which this issuer is not allowed",
                header.alg
            )));
        }
        let kid = header
            .kid
            .as_deref()
            .ok_or_else(|| invalid("its header names no key id"))?;
        let discovery = self.discovery().await.map_err(VerifyError::Unavailable)?;
        let key = self
            .keys
            .key(&self.http, &discovery.jwks_uri, kid)
            .await
            .map_err(|e| match e {
                KeyError::Unknown(_) => VerifyError::Invalid(e.to_string()),
                KeyError::Unavailable(fetch) => VerifyError::Unavailable(fetch),
            })?;
        if key.algorithm.is_some_and(|pinned| pinned != header.alg) {
            return Err(VerifyError::Invalid(format!(
                "key `{kid}` is published for another algorithm than {:?}",
                header.alg
            )));
        }
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&self.settings.audiences);
        validation.leeway = self.settings.clock_skew_seconds;
        validation.validate_nbf = true;
        validation.required_spec_claims =
            HashSet::from(["exp".to_owned(), "iss".to_owned(), "aud".to_owned()]);
        let claims = jsonwebtoken::decode::<Value>(token, &key.decoding, &validation)
            .map_err(|e| VerifyError::Invalid(rule_broken(&e)))?
            .claims;
        self.identity(&claims)
    }

    fn identity(&self, claims: &Value) -> Result<ExternalIdentity, VerifyError> {
        let names = &self.settings.claims;
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let subject = text(&names.subject)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| VerifyError::Invalid(format!("it has no `{}` claim", names.subject)))?;
        let groups = match claims.get(&names.groups) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(group)) => vec![group.clone()],
            Some(Value::Array(groups)) => groups
                .iter()
                .map(|g| g.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    VerifyError::Invalid(format!(
                        "its `{}` claim is not a list of strings",
                        names.groups
                    ))
                })?,
            Some(_) => {
                return Err(VerifyError::Invalid(format!(
                    "its `{}` claim is not a list of strings",
                    names.groups
                )));
            }
        };
        Ok(ExternalIdentity {
            issuer: self.settings.issuer.clone(),
            subject,
            username: text(&names.username),
            email: text(&names.email),
            groups,
        })
    }
}

/// Which rule a token broke, in words.
fn rule_broken(error: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::InvalidSignature => "its signature does not verify".to_owned(),
        ErrorKind::ExpiredSignature => "it has expired".to_owned(),
        ErrorKind::ImmatureSignature => "it is not valid yet (nbf)".to_owned(),
        ErrorKind::InvalidIssuer => "it is from another issuer".to_owned(),
        ErrorKind::InvalidAudience => "it is meant for another audience".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => format!("it has no `{claim}` claim"),
        ErrorKind::InvalidAlgorithm => "its algorithm does not fit its key".to_owned(),
        _ => "it cannot be read".to_owned(),
    }
}

/// The `iss` a token claims, unverified: which configured issuer to verify it with. `None`
/// for anything that is not a JWT.
pub fn unverified_issuer(token: &str) -> Option<String> {
    unverified_claim(token, "iss")
}

/// The string claim `name` of `token`, unverified: for telling which provider a token claims
/// to come from and, in the audit record of a refusal, whom it claims to be.
pub fn unverified_claim(token: &str, name: &str) -> Option<String> {
    let claims: Value = jsonwebtoken::dangerous::insecure_decode(token).ok()?.claims;
    claims.get(name)?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claimed_issuer_is_read_without_trusting_it() {
        // {"alg":"RS256"}.{"iss":"https://idp.example.com"}.<no signature>
        let token = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlLmNvbSJ9.c2ln";
        assert_eq!(
            unverified_issuer(token).as_deref(),
            Some("https://idp.example.com")
        );
        assert_eq!(unverified_issuer("pgl_abc_def"), None);
        assert_eq!(unverified_issuer("a.b.c"), None);
    }

    #[test]
    fn groups_are_a_list_or_one_string() {
        let issuer = Issuer::new(IssuerSettings::new(
            "https://idp.example.com",
            vec!["p".into()],
        ))
        .unwrap();
        let identity = issuer
            .identity(&serde_json::json!({"sub": "u1", "groups": ["a", "b"], "email": "e@x"}))
            .unwrap();
        assert_eq!(identity.groups, ["a", "b"]);
        assert_eq!(identity.email.as_deref(), Some("e@x"));
        let one = issuer
            .identity(&serde_json::json!({"sub": "u1", "groups": "a"}))
            .unwrap();
        assert_eq!(one.groups, ["a"]);
        assert!(
            issuer
                .identity(&serde_json::json!({"sub": "u1", "groups": [1]}))
                .is_err()
        );
        assert!(issuer.identity(&serde_json::json!({"sub": ""})).is_err());
    }
}
