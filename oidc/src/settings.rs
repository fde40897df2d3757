//! What an operator says about an issuer, checked before anything is fetched.

use std::time::Duration;

use jsonwebtoken::Algorithm;
use serde::{Deserialize, Serialize};

/// The algorithms an issuer may be allowed: asymmetric ones only.
pub const ALLOWED_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Which claims name the subject, the username, the email and the groups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ClaimNames {
    #[serde(default = "default_subject")]
    pub subject: String,
    #[serde(default = "default_username")]
    pub username: String,
    #[serde(default = "default_email")]
    pub email: String,
    #[serde(default = "default_groups")]
    pub groups: String,
}

fn default_subject() -> String {
    "sub".to_owned()
}
fn default_username() -> String {
    "preferred_username".to_owned()
}
fn default_email() -> String {
    "email".to_owned()
}
fn default_groups() -> String {
    "groups".to_owned()
}

impl Default for ClaimNames {
    fn default() -> Self {
        Self {
            subject: default_subject(),
            username: default_username(),
            email: default_email(),
            groups: default_groups(),
        }
    }
}

/// One issuer as configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct IssuerSettings {
    /// The issuer identifier (`https://login.example.com/realms/acme`): tokens' `iss`, and where
    /// `/.well-known/openid-configuration` is found.
    pub issuer: String,
    /// Tokens must name one of these in `aud`.
    pub audiences: Vec<String>,
    /// Signature algorithms accepted from this issuer; RS256 and ES256 when absent.
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<Algorithm>,
    #[serde(default)]
    pub claims: ClaimNames,
    /// How far the issuer's clock may be from ours, for `exp` and `nbf`.
    #[serde(default = "default_skew")]
    pub clock_skew_seconds: u64,
    /// How long published keys are trusted without asking the issuer again (also while it
    /// cannot be reached).
    #[serde(default = "default_keys_max_age")]
    pub keys_max_age_seconds: u64,
    /// How often, at most, the keys are fetched again for a key id that is not among them.
    #[serde(default = "default_refetch")]
    pub keys_refetch_seconds: u64,
}

fn default_algorithms() -> Vec<Algorithm> {
    vec![Algorithm::RS256, Algorithm::ES256]
}
fn default_skew() -> u64 {
    60
}
fn default_keys_max_age() -> u64 {
    3600
}
fn default_refetch() -> u64 {
    30
}

/// Why settings were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("the issuer `{0}` is not an https:// URL (http:// only on a loopback address)")]
    Issuer(String),
    #[error("an issuer needs at least one audience")]
    NoAudience,
    #[error("{0:?} is not accepted from an external issuer: only asymmetric algorithms are")]
    Algorithm(Algorithm),
    #[error("an issuer needs at least one algorithm")]
    NoAlgorithm,
    #[error("the clock skew is at most 300 seconds, not {0}")]
    Skew(u64),
    #[error("keys are kept 1 to 86400 seconds and fetched again at most every 1 to 3600 seconds")]
    KeyTimes,
}

impl IssuerSettings {
    /// Settings for `issuer` and `audiences` with every default.
    pub fn new(issuer: impl Into<String>, audiences: Vec<String>) -> Self {
        Self {
            issuer: issuer.into(),
            audiences,
            algorithms: default_algorithms(),
            claims: ClaimNames::default(),
            clock_skew_seconds: default_skew(),
            keys_max_age_seconds: default_keys_max_age(),
            keys_refetch_seconds: default_refetch(),
        }
    }

    /// Checks what can be checked without the network.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let url = url::Url::parse(&self.issuer)
            .map_err(|_| SettingsError::Issuer(self.issuer.clone()))?;
        let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
        let fine = (url.scheme() == "https" || (url.scheme() == "http" && loopback))
            && url.username().is_empty()
            && url.password().is_none()
            && url.query().is_none()
            && url.fragment().is_none();
        if !fine {
            return Err(SettingsError::Issuer(self.issuer.clone()));
        }
        if self.audiences.is_empty() || self.audiences.iter().any(String::is_empty) {
            return Err(SettingsError::NoAudience);
        }
        if self.algorithms.is_empty() {
            return Err(SettingsError::NoAlgorithm);
        }
        if let Some(alg) = self
            .algorithms
            .iter()
            .find(|a| !ALLOWED_ALGORITHMS.contains(a))
        {
            return Err(SettingsError::Algorithm(*alg));
        }
        if self.clock_skew_seconds > 300 {
            return Err(SettingsError::Skew(self.clock_skew_seconds));
        }
        if !(1..=86_400).contains(&self.keys_max_age_seconds)
            || !(1..=3600).contains(&self.keys_refetch_seconds)
        {
            return Err(SettingsError::KeyTimes);
        }
        Ok(())
    }

    pub(crate) fn keys_max_age(&self) -> Duration {
        Duration::from_secs(self.keys_max_age_seconds)
    }

    pub(crate) fn keys_refetch(&self) -> Duration {
        Duration::from_secs(self.keys_refetch_seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_issuers_asymmetric_algorithms_and_sane_times_are_taken() {
        let fine = IssuerSettings::new("https://login.example.com/realms/acme", vec!["p".into()]);
        assert_eq!(fine.validate(), Ok(()));
        let local = IssuerSettings::new("http://127.0.0.1:8080", vec!["p".into()]);
        assert_eq!(local.validate(), Ok(()));
        let with = |change: fn(&mut IssuerSettings)| {
            let mut settings = fine.clone();
            change(&mut settings);
            settings.validate()
        };
        assert!(matches!(
            with(|s| s.issuer = "http://login.example.com".into()),
            Err(SettingsError::Issuer(_))
        ));
        assert!(matches!(
            with(|s| s.issuer = "https://user:pw@login.example.com".into()),
            Err(SettingsError::Issuer(_))
        ));
        assert_eq!(
            with(|s| s.audiences.clear()),
            Err(SettingsError::NoAudience)
        );
        for symmetric in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
            let mut settings = fine.clone();
            settings.algorithms.push(symmetric);
            assert_eq!(
                settings.validate(),
                Err(SettingsError::Algorithm(symmetric))
            );
        }
        assert_eq!(
            with(|s| s.algorithms.clear()),
            Err(SettingsError::NoAlgorithm)
        );
        assert_eq!(
            with(|s| s.clock_skew_seconds = 3600),
            Err(SettingsError::Skew(3600))
        );
        assert_eq!(
            with(|s| s.keys_refetch_seconds = 0),
            Err(SettingsError::KeyTimes)
        );
    }

    #[test]
    fn settings_read_as_json_with_defaults_and_no_unknown_field() {
        let settings: IssuerSettings = serde_json::from_value(serde_json::json!({
            "issuer": "https://idp.example.com", "audiences": ["pangolin"],
            "claims": {"groups": "roles"}
        }))
        .unwrap();
        assert_eq!(settings.algorithms, [Algorithm::RS256, Algorithm::ES256]);
        assert_eq!(settings.claims.groups, "roles");
        assert_eq!(settings.claims.subject, "sub");
        let unknown = serde_json::from_value::<IssuerSettings>(serde_json::json!({
            "issuer": "https://idp.example.com", "audiences": ["p"], "audience": "p"
        }));
        assert!(unknown.is_err());
    }
}
