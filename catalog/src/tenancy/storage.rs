//! What a warehouse is stored on, and the credentials to reach it.
//!
//! Credentials arrive in the clear ([`Credentials`]) and are kept only sealed
//! (`SealedCredentials`): every value in one ciphertext bound to the warehouse's record key,
//! with the names of the fields that are set beside it in the clear.

use pangolin_records::RecordKey;
use zeroize::Zeroizing;

use super::secret::{self, SealError, Sealed, SecretKey};
use std::time::Duration;

use pangolin_delegation::Access;
use pangolin_delegation::azure::SasSigner;
use pangolin_delegation::gcs::{Downscoper, GcsPrefix, TokenError};
use pangolin_delegation::s3::sign::{Endpoint, Keys, Signer};
use pangolin_delegation::s3::{S3Prefix, StsConfig, StsVendor, VendError};

use crate::iceberg::{DEFAULT_S3_REGION, S3Settings, Secret};

/// Where a warehouse's files are.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum StorageConfig {
    /// A directory on the server: an absolute path or a `file://` URL.
    Local { root: String },
    /// A bucket on AWS S3 or an S3-compatible server.
    S3 {
        bucket: String,
        /// The folder inside the bucket; the bucket's top when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<String>,
        /// See [`S3Settings::region`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        region: Option<String>,
        /// See [`S3Settings::endpoint`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        endpoint: Option<String>,
        /// See [`S3Settings::path_style`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path_style: Option<bool>,
        /// See [`S3Settings::hand_out_credentials`].
        #[serde(default)]
        hand_out_credentials: bool,
        /// Vend short-lived credentials scoped to each table, from this role.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sts: Option<StsSettings>,
        /// Sign clients' S3 requests for a table's files (the `remote-signing` delegation).
        #[serde(default)]
        remote_signing: bool,
    },
    /// A container of an Azure storage account (ADLS Gen2; `abfss://` locations).
    Azure {
        account: String,
        container: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<String>,
        /// The account's URL when it is not Azure's (an emulator such as Azurite).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        endpoint: Option<String>,
        /// Vend SAS tokens scoped to each table's directory, signed with the account key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sas: Option<SasSettings>,
    },
    /// A bucket of Google Cloud Storage (`gs://` locations).
    Gcs {
        bucket: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<String>,
        /// The storage's URL when it is not Google's (an emulator such as fake-gcs-server).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        endpoint: Option<String>,
        /// Vend OAuth tokens downscoped to each table's prefixes, from the warehouse's
        /// service account.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        downscope: Option<DownscopeSettings>,
    },
}

/// Where a GCS warehouse's tokens are downscoped. None of it is secret.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct DownscopeSettings {
    /// The token exchange (RFC 8693) that applies credential access boundaries; Google's
    /// (`https://sts.googleapis.com/v1/token`) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_exchange: Option<String>,
}

impl DownscopeSettings {
    fn exchange(&self) -> &str {
        self.token_exchange
            .as_deref()
            .unwrap_or(pangolin_delegation::gcs::DEFAULT_TOKEN_EXCHANGE)
    }
}

/// Where vended credentials come from: STS `AssumeRole` on this role, called with the
/// warehouse's own keys. None of it is secret (an external id guards against a confused
/// deputy; it is not a password), so it is stored and shown in the clear.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct StsSettings {
    pub role_arn: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// The STS endpoint; the storage's endpoint when absent, else AWS's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The STS region; the storage's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// How long vended credentials live.
    #[serde(default = "default_lifetime")]
    pub lifetime_seconds: u64,
}

/// How SAS tokens are vended for an Azure warehouse's tables.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SasSettings {
    /// How long a token lives.
    #[serde(default = "default_lifetime")]
    pub lifetime_seconds: u64,
}

/// AWS's shortest role session.
const DEFAULT_LIFETIME_SECONDS: u64 = 900;

fn default_lifetime() -> u64 {
    DEFAULT_LIFETIME_SECONDS
}

impl StorageConfig {
    /// The STS configuration of an S3 storage that vends credentials, with the storage's
    /// endpoint and region filled in where the STS settings name none.
    pub fn sts_config(&self) -> Option<StsConfig> {
        let Self::S3 {
            region,
            endpoint,
            sts: Some(sts),
            ..
        } = self
        else {
            return None;
        };
        Some(StsConfig {
            role_arn: sts.role_arn.clone(),
            external_id: sts.external_id.clone(),
            endpoint: sts.endpoint.clone().or_else(|| endpoint.clone()),
            region: sts
                .region
                .clone()
                .or_else(|| region.clone())
                .unwrap_or_else(|| DEFAULT_S3_REGION.to_owned()),
            lifetime: Duration::from_secs(sts.lifetime_seconds),
        })
    }

    pub(super) fn kind(&self) -> &'static str {
        match self {
            Self::Local { .. } => "local",
            Self::S3 { .. } => "s3",
            Self::Azure { .. } => "azure",
            Self::Gcs { .. } => "gcs",
        }
    }

    /// Checks what can be checked without reaching the storage.
    pub(super) fn validate(&self) -> Result<(), String> {
        match self {
            Self::Local { root } => local_root(root).map(|_| ()),
            Self::S3 { bucket, .. } => {
                valid_bucket(bucket)?;
                if let Some(sts) = self.sts_config() {
                    sts.validate()?;
                }
                self.s3_settings(None).validate()
            }
            Self::Azure {
                account,
                container,
                endpoint,
                sas,
                ..
            } => {
                valid_azure_name(account)?;
                valid_azure_name(container)?;
                if let Some(endpoint) = endpoint
                    && !pangolin_delegation::is_service_url(endpoint)
                {
                    return Err("the Azure endpoint must be an http:// or https:// URL \
                                    without credentials"
                        .to_owned());
                }
                match sas {
                    Some(sas) if !(60..=7 * 24 * 3600).contains(&sas.lifetime_seconds) => {
                        Err(format!(
                            "a SAS lifetime is 60 to 604800 seconds, not {}",
                            sas.lifetime_seconds
                        ))
                    }
                    _ => Ok(()),
                }
            }
            Self::Gcs {
                bucket,
                endpoint,
                downscope,
                ..
            } => {
                valid_gcs_bucket(bucket)?;
                let exchange = downscope.as_ref().map(DownscopeSettings::exchange);
                for url in endpoint.iter().map(String::as_str).chain(exchange) {
                    if !pangolin_delegation::is_service_url(url) {
                        return Err(format!(
                            "`{url}` is not an http:// or https:// URL without credentials"
                        ));
                    }
                }
                Ok(())
            }
        }
    }

    /// Whether creating or changing this storage tries its delegation settings once (an STS
    /// role to assume, a token to downscope).
    pub(super) fn is_verified(&self) -> bool {
        matches!(
            self,
            Self::S3 { sts: Some(_), .. }
                | Self::Gcs {
                    downscope: Some(_),
                    ..
                }
        )
    }

    /// The S3 settings of an `S3` storage with `credentials`; defaults for other kinds.
    pub(super) fn s3_settings(&self, credentials: Option<&Credentials>) -> S3Settings {
        let Self::S3 {
            region,
            endpoint,
            path_style,
            hand_out_credentials,
            ..
        } = self
        else {
            return S3Settings::default();
        };
        let (access_key_id, secret_access_key) = match credentials {
            Some(Credentials::S3 {
                access_key_id,
                secret_access_key,
                ..
            }) => (Some(access_key_id.clone()), Some(secret_access_key.clone())),
            // check_spec refuses these on an S3 storage.
            Some(Credentials::Azure { .. } | Credentials::Gcs { .. }) | None => (None, None),
        };
        S3Settings {
            endpoint: endpoint.clone(),
            region: region.clone(),
            path_style: *path_style,
            access_key_id,
            secret_access_key,
            hand_out_credentials: *hand_out_credentials,
        }
    }
}

/// The vendor of an S3 storage with STS settings, calling STS with `credentials`' keys.
/// `None` for a storage that vends nothing; an error when it should but has no keys.
pub(super) fn sts_vendor(
    storage: &StorageConfig,
    credentials: Option<&Credentials>,
) -> Result<Option<StsVendor>, String> {
    let Some(config) = storage.sts_config() else {
        return Ok(None);
    };
    match credentials {
        Some(Credentials::S3 {
            access_key_id,
            secret_access_key,
            ..
        }) => Ok(Some(StsVendor::new(
            config,
            access_key_id,
            &pangolin_delegation::Secret::new(secret_access_key.expose()),
        ))),
        Some(Credentials::Azure { .. } | Credentials::Gcs { .. }) | None => {
            keys_needed(storage).map(|()| None)
        }
    }
}

/// The downscoper of a GCS storage with `downscope` settings, for `credentials`' service
/// account; `None` when it vends nothing.
pub(super) fn downscoper(
    storage: &StorageConfig,
    credentials: Option<&Credentials>,
) -> Result<Option<Downscoper>, String> {
    let StorageConfig::Gcs {
        downscope: Some(downscope),
        ..
    } = storage
    else {
        return Ok(None);
    };
    let Some(Credentials::Gcs {
        service_account_key,
    }) = credentials
    else {
        return keys_needed(storage).map(|()| None);
    };
    let key = pangolin_delegation::Secret::new(service_account_key.expose());
    Downscoper::new(&key, downscope.exchange()).map(Some)
}

/// The request signer of an S3 storage with `remote-signing` set, signing with
/// `credentials`' keys; `None` when it does not sign.
pub(super) fn signer(
    storage: &StorageConfig,
    credentials: Option<&Credentials>,
) -> Result<Option<Signer>, String> {
    let StorageConfig::S3 {
        remote_signing: true,
        region,
        endpoint,
        ..
    } = storage
    else {
        return Ok(None);
    };
    let Some(Credentials::S3 {
        access_key_id,
        secret_access_key,
        session_token,
    }) = credentials
    else {
        return keys_needed(storage).map(|()| None);
    };
    let region = region.as_deref().unwrap_or(DEFAULT_S3_REGION);
    let endpoint = Endpoint::new(endpoint.as_deref(), region)?;
    let keys = Keys {
        access_key_id: access_key_id.clone(),
        secret_access_key: pangolin_delegation::Secret::new(secret_access_key.expose()),
        session_token: session_token
            .as_ref()
            .map(|t| pangolin_delegation::Secret::new(t.expose())),
    };
    Ok(Some(Signer::new(endpoint, keys)))
}

/// The SAS signer of an Azure storage with `sas` settings, signing with `credentials`' key;
/// `None` when it vends nothing.
pub(super) fn sas_signer(
    storage: &StorageConfig,
    credentials: Option<&Credentials>,
) -> Result<Option<SasSigner>, String> {
    let StorageConfig::Azure {
        account,
        endpoint,
        sas: Some(sas),
        ..
    } = storage
    else {
        return Ok(None);
    };
    let Some(Credentials::Azure { account_key }) = credentials else {
        return keys_needed(storage).map(|()| None);
    };
    // Tokens for an emulator on plain HTTP must allow it; Azure's own are HTTPS only.
    let https_only = endpoint
        .as_deref()
        .is_none_or(|e| e.starts_with("https://"));
    SasSigner::new(
        account,
        &pangolin_delegation::Secret::new(account_key.expose()),
        Duration::from_secs(sas.lifetime_seconds),
        https_only,
    )
    .map(Some)
}

/// Tries the delegation settings of `storage` once, for read access to the warehouse's root:
/// an STS `AssumeRole` (S3) or a downscoped token (GCS). Nothing to try without them.
pub(super) async fn verify_delegation(
    storage: &StorageConfig,
    credentials: Option<&Credentials>,
) -> Result<(), VerifyError> {
    // A warehouse at a bucket's top is tried on a folder of it: a prefix is never empty.
    let root_key = |prefix: &Option<String>| {
        prefix
            .as_deref()
            .map(|p| p.trim_matches('/'))
            .filter(|p| !p.is_empty())
            .unwrap_or("pangolin-check")
            .to_owned()
    };
    match storage {
        StorageConfig::S3 { bucket, prefix, .. } => {
            let Some(vendor) = sts_vendor(storage, credentials).map_err(VerifyError::Invalid)?
            else {
                return Ok(());
            };
            let root = S3Prefix {
                bucket: bucket.clone(),
                key: root_key(prefix),
            };
            vendor
                .assume(&[root], Access::Read)
                .await
                .map(|_| ())
                .map_err(VerifyError::Sts)
        }
        StorageConfig::Gcs { bucket, prefix, .. } => {
            let Some(downscoper) =
                downscoper(storage, credentials).map_err(VerifyError::Invalid)?
            else {
                return Ok(());
            };
            let root = GcsPrefix {
                bucket: bucket.clone(),
                key: root_key(prefix),
            };
            downscoper
                .token(&[root], Access::Read)
                .await
                .map(|_| ())
                .map_err(VerifyError::Downscope)
        }
        StorageConfig::Local { .. } | StorageConfig::Azure { .. } => Ok(()),
    }
}

/// Why a storage's delegation settings did not work when tried.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{0}")]
    Invalid(String),
    #[error("the STS settings do not work: {0}")]
    Sts(#[source] VendError),
    #[error("the service account's tokens cannot be downscoped: {0}")]
    Downscope(#[source] TokenError),
}

/// A local root as a `file://` URL.
pub(super) fn local_root(root: &str) -> Result<String, String> {
    let url = crate::iceberg::io::location_url(root).map_err(|e| e.to_string())?;
    if url.scheme() != "file" {
        return Err(format!(
            "a local warehouse root is an absolute path or a file:// URL, not `{root}`"
        ));
    }
    Ok(url.to_string())
}

/// Azure account and container names: lowercase letters, digits and (containers) hyphens.
fn valid_azure_name(name: &str) -> Result<(), String> {
    let fine = (3..=63).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if fine {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a valid Azure account or container name (3 to 63 lowercase \
             letters, digits and hyphens)"
        ))
    }
}

/// GCS bucket names: 3 to 222 lowercase letters, digits, `-`, `_` and `.` (Google's rules; the
/// downscoped tokens' conditions quote them as they are).
fn valid_gcs_bucket(name: &str) -> Result<(), String> {
    let fine = (3..=222).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c));
    if fine {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a valid GCS bucket name (3 to 222 lowercase letters, digits, \
             `-`, `_` and `.`)"
        ))
    }
}

fn valid_bucket(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fine {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a valid bucket, account or container name"
        ))
    }
}

pub(super) fn with_prefix(base: String, prefix: Option<&str>) -> String {
    match prefix
        .map(|p| p.trim_matches('/'))
        .filter(|p| !p.is_empty())
    {
        Some(prefix) => format!("{base}/{prefix}"),
        None => base,
    }
}

/// Credentials for a warehouse's storage, as given by an operator. `Debug` shows only which
/// fields are set, as the public view does.
#[derive(Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum Credentials {
    /// A static S3 key, with a session token for temporary keys.
    S3 {
        access_key_id: String,
        secret_access_key: Secret,
        #[serde(default)]
        session_token: Option<Secret>,
    },
    /// An Azure storage account's shared key (base64).
    Azure { account_key: Secret },
    /// A Google service account's JSON key, as Google issues it.
    Gcs { service_account_key: Secret },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("kind", &self.kind())
            .field("fields_set", &self.fields_set())
            .finish()
    }
}

/// The plaintext that is sealed: borrowed, so no copy of a secret outlives the sealing.
#[derive(serde::Serialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
enum PlainCredentials<'a> {
    S3 {
        access_key_id: &'a str,
        secret_access_key: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        session_token: Option<&'a str>,
    },
    Azure {
        account_key: &'a str,
    },
    Gcs {
        service_account_key: &'a str,
    },
}

impl Credentials {
    fn kind(&self) -> &'static str {
        match self {
            Self::S3 { .. } => "s3",
            Self::Azure { .. } => "azure",
            Self::Gcs { .. } => "gcs",
        }
    }

    /// The names of the fields that are set, for the public view.
    fn fields_set(&self) -> Vec<String> {
        match self {
            Self::S3 { session_token, .. } => {
                let mut fields = vec!["access-key-id".to_owned(), "secret-access-key".to_owned()];
                if session_token.is_some() {
                    fields.push("session-token".to_owned());
                }
                fields
            }
            Self::Azure { .. } => vec!["account-key".to_owned()],
            Self::Gcs { .. } => vec!["service-account-key".to_owned()],
        }
    }

    fn plain(&self) -> PlainCredentials<'_> {
        match self {
            Self::S3 {
                access_key_id,
                secret_access_key,
                session_token,
            } => PlainCredentials::S3 {
                access_key_id,
                secret_access_key: secret_access_key.expose(),
                session_token: session_token.as_ref().map(Secret::expose),
            },
            Self::Azure { account_key } => PlainCredentials::Azure {
                account_key: account_key.expose(),
            },
            Self::Gcs {
                service_account_key,
            } => PlainCredentials::Gcs {
                service_account_key: service_account_key.expose(),
            },
        }
    }

    pub(super) fn seal(
        &self,
        key: &SecretKey,
        record: &RecordKey,
    ) -> Result<SealedCredentials, SealError> {
        let plaintext = Zeroizing::new(serde_json::to_vec(&self.plain()).map_err(|_| SealError)?);
        Ok(SealedCredentials {
            kind: self.kind().to_owned(),
            fields_set: self.fields_set(),
            sealed: secret::seal(key, record.as_str().as_bytes(), &plaintext)?,
        })
    }
}

/// Credentials as stored: which fields are set, in the clear, and all values sealed together.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) struct SealedCredentials {
    pub(super) kind: String,
    pub(super) fields_set: Vec<String>,
    pub(super) sealed: Sealed,
}

/// Refuses a storage that delegates access (vending or signing) when it has no keys: the
/// server calls STS, or signs, with the warehouse's own.
pub(super) fn keys_needed(storage: &StorageConfig) -> Result<(), String> {
    match storage {
        StorageConfig::S3 { sts: Some(_), .. } => Err(
            "vending credentials needs the warehouse's S3 keys: the server calls STS with them"
                .to_owned(),
        ),
        StorageConfig::S3 {
            remote_signing: true,
            ..
        } => Err(
            "remote signing needs the warehouse's S3 keys: the server signs requests with them"
                .to_owned(),
        ),
        StorageConfig::Azure { sas: Some(_), .. } => Err(
            "vending SAS tokens needs the account key: the server signs them with it".to_owned(),
        ),
        StorageConfig::Gcs {
            downscope: Some(_), ..
        } => Err(
            "downscoping tokens needs the service account's key: the server asks for \
                  tokens with it"
                .to_owned(),
        ),
        _ => Ok(()),
    }
}

/// Checks a spec's storage and that its credentials fit that storage.
pub(super) fn check_spec(
    storage: &StorageConfig,
    credentials: Option<&Credentials>,
) -> Result<(), String> {
    storage.validate()?;
    if credentials.is_none() {
        keys_needed(storage)?;
    }
    if let Some(Credentials::Gcs {
        service_account_key,
    }) = credentials
    {
        let key = pangolin_delegation::Secret::new(service_account_key.expose());
        pangolin_delegation::gcs::check_key_file(&key)?;
    }
    match (storage, credentials) {
        (_, None)
        | (StorageConfig::S3 { .. }, Some(Credentials::S3 { .. }))
        | (StorageConfig::Azure { .. }, Some(Credentials::Azure { .. }))
        | (StorageConfig::Gcs { .. }, Some(Credentials::Gcs { .. })) => Ok(()),
        (storage, Some(credentials)) => Err(format!(
            "{} credentials do not fit {} storage",
            credentials.kind(),
            storage.kind()
        )),
    }
}
