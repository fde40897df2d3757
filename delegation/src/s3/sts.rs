//! Vended S3 credentials: STS `AssumeRole` with an inline session policy.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_sdk_sts::config::retry::RetryConfig;
use aws_sdk_sts::config::timeout::TimeoutConfig;
use aws_sdk_sts::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sts::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use super::{S3Prefix, session_policy};
use crate::cache::{CredentialCache, Expiring, refresh_margin};
use crate::{Access, Secret};

/// The shortest lifetime accepted. AWS itself refuses less than 15 minutes; S3-compatible
/// servers may allow less, which tests of expiry use.
const MIN_LIFETIME: Duration = Duration::from_secs(60);
/// The longest: AWS's ceiling for a role session (the role's own maximum may be lower).
const MAX_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// How long one call to the token service may take, connecting included.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How to obtain credentials for a warehouse's tables: which role to assume, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StsConfig {
    /// `arn:<partition>:iam::<account>:role/<name>`.
    pub role_arn: String,
    /// Passed as `ExternalId`, when the role's trust policy asks for one.
    pub external_id: Option<String>,
    /// The STS endpoint (an S3-compatible server's); AWS's regional endpoint when absent.
    pub endpoint: Option<String>,
    pub region: String,
    /// How long vended credentials live.
    pub lifetime: Duration,
}

impl StsConfig {
    /// Checks what can be checked without a network.
    pub fn validate(&self) -> Result<(), String> {
        let parts: Vec<&str> = self.role_arn.splitn(6, ':').collect();
        let arn_like = parts.len() == 6
            && parts[0] == "arn"
            && !parts[1].is_empty()
            && parts[2] == "iam"
            && parts[5]
                .strip_prefix("role/")
                .is_some_and(|n| !n.is_empty());
        if !arn_like {
            return Err(format!(
                "`{}` is not a role ARN (arn:aws:iam::<account>:role/<name>)",
                self.role_arn
            ));
        }
        if let Some(id) = &self.external_id {
            let fine = (2..=1224).contains(&id.len())
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+=,.@:/-_".contains(c));
            if !fine {
                return Err(
                    "an external id has 2 to 1224 characters: letters, digits and +=,.@:/-_"
                        .to_owned(),
                );
            }
        }
        if let Some(endpoint) = &self.endpoint
            && !crate::is_service_url(endpoint)
        {
            return Err(
                "the STS endpoint must be an http:// or https:// URL without credentials"
                    .to_owned(),
            );
        }
        if !(MIN_LIFETIME..=MAX_LIFETIME).contains(&self.lifetime) {
            return Err(format!(
                "a credential lifetime is {} to {} seconds, not {}",
                MIN_LIFETIME.as_secs(),
                MAX_LIFETIME.as_secs(),
                self.lifetime.as_secs()
            ));
        }
        Ok(())
    }

    /// The ARN partition of the role (`aws`, `aws-cn`, ...), which the policy's ARNs share.
    pub fn partition(&self) -> &str {
        self.role_arn.split(':').nth(1).unwrap_or("aws")
    }
}

/// Temporary credentials for one set of prefixes and one access level.
#[derive(Debug)]
pub struct Vended {
    pub access_key_id: String,
    pub secret_access_key: Secret,
    pub session_token: Secret,
    pub expires_at: SystemTime,
    pub access: Access,
}

impl Expiring for Vended {
    fn expires_at(&self) -> SystemTime {
        self.expires_at
    }
}

/// Why no credentials were vended. Messages carry the provider's words and never a key.
#[derive(Debug, thiserror::Error)]
pub enum VendError {
    #[error("the token service refused to assume role `{role}`: {code}: {message}")]
    Refused {
        role: String,
        code: String,
        message: String,
    },
    #[error("the token service at {endpoint} could not be reached: {reason}")]
    Unreachable { endpoint: String, reason: String },
    #[error("the token service at {endpoint} answered without usable credentials: {reason}")]
    Malformed { endpoint: String, reason: String },
}

/// Assumes a warehouse's role for tables' prefixes, with the warehouse's own keys as the
/// caller, and keeps what it got until shortly before it expires.
pub struct StsVendor {
    client: aws_sdk_sts::Client,
    config: StsConfig,
    cache: CredentialCache<S3Prefix, Vended>,
}

impl std::fmt::Debug for StsVendor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StsVendor")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl StsVendor {
    /// A vendor calling STS as `access_key_id`. Builds a client, reaches nothing yet.
    pub fn new(config: StsConfig, access_key_id: &str, secret_access_key: &Secret) -> Self {
        let caller = Credentials::new(
            access_key_id,
            secret_access_key.expose(),
            None,
            None,
            "pangolin-warehouse",
        );
        let mut builder = aws_sdk_sts::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(config.region.clone()))
            .credentials_provider(caller)
            .retry_config(RetryConfig::standard().with_max_attempts(2))
            .timeout_config(
                TimeoutConfig::builder()
                    .operation_timeout(CALL_TIMEOUT)
                    .connect_timeout(CALL_TIMEOUT / 3)
                    .build(),
            );
        if let Some(endpoint) = &config.endpoint {
            builder = builder.endpoint_url(endpoint);
        }
        Self {
            client: aws_sdk_sts::Client::from_conf(builder.build()),
            cache: CredentialCache::new(refresh_margin(config.lifetime)),
            config,
        }
    }

    /// Credentials for `prefixes` at `access`: from the cache while they have time left,
    /// else from one `AssumeRole` (concurrent requests for the same key share that call).
    #[tracing::instrument(level = "debug", skip_all, fields(access = %access, prefixes = prefixes.len()))]
    pub async fn vend(
        &self,
        prefixes: &[S3Prefix],
        access: Access,
    ) -> Result<Arc<Vended>, VendError> {
        let mut key: Vec<S3Prefix> = prefixes.to_vec();
        key.sort();
        key.dedup();
        self.cache
            .get_or_fetch((key, access), |(prefixes, access)| async move {
                self.assume(&prefixes, access).await.map(Arc::new)
            })
            .await
    }

    /// One `AssumeRole` for `prefixes` at `access`, bypassing the cache: what a warehouse's
    /// settings are checked with.
    pub async fn assume(&self, prefixes: &[S3Prefix], access: Access) -> Result<Vended, VendError> {
        let policy = session_policy(self.config.partition(), prefixes, access).to_string();
        let seconds = i32::try_from(self.config.lifetime.as_secs()).unwrap_or(i32::MAX);
        let answer = self
            .client
            .assume_role()
            .role_arn(&self.config.role_arn)
            .role_session_name(format!("pangolin-{}", access.as_str()))
            .set_external_id(self.config.external_id.clone())
            .policy(policy)
            .duration_seconds(seconds)
            .send()
            .await
            .map_err(|e| self.error(e))?;
        let malformed = |reason: &str| VendError::Malformed {
            endpoint: self.endpoint(),
            reason: reason.to_owned(),
        };
        let credentials = answer
            .credentials()
            .ok_or_else(|| malformed("no credentials in the answer"))?;
        let expires_at = SystemTime::try_from(*credentials.expiration())
            .map_err(|_| malformed("the expiration is not a valid time"))?;
        if expires_at <= SystemTime::now() {
            return Err(malformed("the credentials have already expired"));
        }
        tracing::info!(access = %access, role = %self.config.role_arn, "assumed the warehouse's role");
        Ok(Vended {
            access_key_id: credentials.access_key_id().to_owned(),
            secret_access_key: Secret::new(credentials.secret_access_key()),
            session_token: Secret::new(credentials.session_token()),
            expires_at,
            access,
        })
    }

    fn endpoint(&self) -> String {
        self.config
            .endpoint
            .clone()
            .unwrap_or_else(|| format!("https://sts.{}.amazonaws.com", self.config.region))
    }

    fn error<E, R>(&self, error: SdkError<E, R>) -> VendError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug,
    {
        match error {
            SdkError::ServiceError(service) => {
                let error = service.err();
                VendError::Refused {
                    role: self.config.role_arn.clone(),
                    code: error.code().unwrap_or("Unknown").to_owned(),
                    message: error.message().unwrap_or("no message").to_owned(),
                }
            }
            SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) => VendError::Unreachable {
                endpoint: self.endpoint(),
                reason: DisplayErrorContext(&error).to_string(),
            },
            other => VendError::Malformed {
                endpoint: self.endpoint(),
                reason: DisplayErrorContext(&other).to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> StsConfig {
        StsConfig {
            role_arn: "arn:aws:iam::123456789012:role/lake-access".to_owned(),
            external_id: Some("tenant-a".to_owned()),
            endpoint: Some("http://127.0.0.1:9000".to_owned()),
            region: "us-east-1".to_owned(),
            lifetime: Duration::from_secs(900),
        }
    }

    #[test]
    fn settings_are_checked_before_any_call() {
        assert_eq!(config().validate(), Ok(()));
        assert_eq!(config().partition(), "aws");
        let bad = |change: fn(&mut StsConfig)| {
            let mut config = config();
            change(&mut config);
            config.validate().unwrap_err()
        };
        assert!(bad(|c| c.role_arn = "lake-access".into()).contains("not a role ARN"));
        assert!(bad(|c| c.role_arn = "arn:aws:iam::1:user/x".into()).contains("not a role ARN"));
        assert!(bad(|c| c.external_id = Some("x".into())).contains("external id"));
        assert!(bad(|c| c.external_id = Some("a b".into())).contains("external id"));
        assert!(bad(|c| c.endpoint = Some("ftp://x".into())).contains("STS endpoint"));
        assert!(bad(|c| c.endpoint = Some("http://k:s@x".into())).contains("STS endpoint"));
        assert!(bad(|c| c.lifetime = Duration::from_secs(59)).contains("lifetime"));
        assert!(bad(|c| c.lifetime = Duration::from_secs(43_201)).contains("lifetime"));
    }

    #[test]
    fn cached_credentials_keep_most_of_their_life() {
        assert_eq!(
            refresh_margin(Duration::from_secs(900)),
            Duration::from_secs(225)
        );
        assert_eq!(
            refresh_margin(Duration::from_secs(60)),
            Duration::from_secs(30)
        );
    }
}
