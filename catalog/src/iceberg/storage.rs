//! How the server reaches object stores, and what it tells clients so they reach the same ones.
//!
//! `s3://` (and `s3a://`), Azure (`abfss://`) and Google Cloud Storage (`gs://`) locations take
//! settings; `file://` needs none. The settings are
//! the server's own: nothing is read from `AWS_*` environment variables, so what the server
//! uses and what it hands to clients ([`StorageOptions::client_config`]) are the same.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A secret value (a secret access key): never shown by `Debug`, and without `Display`, so it
/// cannot end up in a log line or an error message by accident.
#[derive(Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::new(s))
    }
}

/// The region a bucket is taken to be in when none is configured (as `object_store` does).
pub const DEFAULT_S3_REGION: &str = "us-east-1";

/// Settings for `s3://bucket/prefix` locations, on AWS or an S3-compatible server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct S3Settings {
    /// The endpoint of an S3-compatible server (`http://127.0.0.1:9000`); AWS when absent.
    /// Plain HTTP is allowed only when the endpoint itself is an `http://` URL.
    pub endpoint: Option<String>,
    /// The region of the buckets; [`DEFAULT_S3_REGION`] when absent.
    pub region: Option<String>,
    /// Path-style requests (`<endpoint>/<bucket>/<key>`) rather than virtual-hosted ones
    /// (`<bucket>.<endpoint>/<key>`). When absent: path style with an endpoint, and
    /// `object_store`'s default (path style) on AWS, where clients choose their own.
    pub path_style: Option<bool>,
    /// A static access key; with neither key, `object_store` asks the instance metadata
    /// service (an EC2 role).
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<Secret>,
    /// Put the static keys in what clients are told (a table's `config`), so a client with no
    /// credentials of its own can read and write the table's files. Off unless the operator
    /// opts in: it hands the server's own keys to every client.
    pub hand_out_credentials: bool,
}

impl S3Settings {
    /// Whether anything differs from the defaults.
    pub fn is_configured(&self) -> bool {
        self != &Self::default()
    }

    /// Path style as it applies: the setting, else path style when an endpoint is set.
    pub fn effective_path_style(&self) -> Option<bool> {
        self.path_style.or(self.endpoint.as_ref().map(|_| true))
    }

    /// Checks what can be checked without a network: an endpoint is an `http(s)://` URL, and
    /// the static keys come as a pair.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(endpoint) = &self.endpoint
            && !pangolin_delegation::is_service_url(endpoint)
        {
            return Err(
                "the S3 endpoint must be an http:// or https:// URL without credentials".to_owned(),
            );
        }
        match (&self.access_key_id, &self.secret_access_key) {
            (Some(_), None) => Err("an S3 access key id needs its secret access key".to_owned()),
            (None, Some(_)) => Err("an S3 secret access key needs its access key id".to_owned()),
            _ => Ok(()),
        }
    }

    /// `object_store` configuration keys (`AmazonS3ConfigKey` names) for these settings.
    pub fn object_store_options(&self) -> Vec<(&'static str, String)> {
        let mut options = vec![(
            "aws_region",
            self.region
                .clone()
                .unwrap_or_else(|| DEFAULT_S3_REGION.to_owned()),
        )];
        if let Some(endpoint) = &self.endpoint {
            options.push(("aws_endpoint", endpoint.clone()));
            if endpoint.starts_with("http://") {
                options.push(("aws_allow_http", "true".to_owned()));
            }
        }
        if let Some(path_style) = self.effective_path_style() {
            options.push((
                "aws_virtual_hosted_style_request",
                (!path_style).to_string(),
            ));
        }
        if let (Some(id), Some(secret)) = (&self.access_key_id, &self.secret_access_key) {
            options.push(("aws_access_key_id", id.clone()));
            options.push(("aws_secret_access_key", secret.expose().to_owned()));
        }
        options
    }

    /// Iceberg client properties to reach the same buckets: `s3.endpoint`, `s3.region` (and
    /// `client.region`, which the Java client reads), `s3.path-style-access` (Java) and
    /// `s3.force-virtual-addressing` (PyIceberg), and the static keys only when
    /// [`hand_out_credentials`](Self::hand_out_credentials) is set.
    pub fn client_config(&self) -> BTreeMap<String, String> {
        let mut config = BTreeMap::new();
        let mut set = |key: &str, value: String| config.insert(key.to_owned(), value);
        if let Some(endpoint) = &self.endpoint {
            set("s3.endpoint", endpoint.clone());
        }
        // Always a region: without one PyIceberg asks AWS where the bucket is.
        let region = self.region.as_deref().unwrap_or(DEFAULT_S3_REGION);
        set("s3.region", region.to_owned());
        set("client.region", region.to_owned());
        if let Some(path_style) = self.effective_path_style() {
            set("s3.path-style-access", path_style.to_string());
            set("s3.force-virtual-addressing", (!path_style).to_string());
        }
        if self.hand_out_credentials
            && let (Some(id), Some(secret)) = (&self.access_key_id, &self.secret_access_key)
        {
            set("s3.access-key-id", id.clone());
            set("s3.secret-access-key", secret.expose().to_owned());
        }
        config
    }
}

/// Settings for Azure locations (`abfss://container@account.dfs.core.windows.net/path`); the
/// account comes from the location.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AzureSettings {
    /// The storage account's shared key (base64).
    pub account_key: Option<Secret>,
    /// The account's URL when it is not Azure's (`http://127.0.0.1:10000/devstoreaccount1` for
    /// Azurite); plain HTTP only when this URL says `http://`.
    pub endpoint: Option<String>,
}

impl AzureSettings {
    /// `object_store` configuration keys (`AzureConfigKey` and client option names).
    pub fn object_store_options(&self) -> Vec<(&'static str, String)> {
        let mut options = Vec::new();
        if let Some(key) = &self.account_key {
            options.push(("azure_storage_account_key", key.expose().to_owned()));
        }
        if let Some(endpoint) = &self.endpoint {
            options.push(("azure_storage_endpoint", endpoint.clone()));
            if endpoint.starts_with("http://") {
                options.push(("allow_http", "true".to_owned()));
            }
        }
        options
    }
}

/// Settings for Google Cloud Storage locations (`gs://bucket/path`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcsSettings {
    /// A service account's JSON key, as Google issues it. Without one the server uses the
    /// credentials of the machine it runs on (the metadata server), or none at all with an
    /// [`endpoint`](Self::endpoint) (an emulator).
    pub service_account_key: Option<Secret>,
    /// The storage's URL when it is not Google's (an emulator such as fake-gcs-server); plain
    /// HTTP only when this URL says `http://`.
    pub endpoint: Option<String>,
}

impl GcsSettings {
    /// `object_store` configuration keys (`GoogleConfigKey` and client option names).
    pub fn object_store_options(&self) -> Vec<(&'static str, String)> {
        let mut options = Vec::new();
        match &self.service_account_key {
            Some(key) => options.push(("google_service_account_key", key.expose().to_owned())),
            // Nothing to sign with: an emulator takes requests as they come.
            None if self.endpoint.is_some() => {
                options.push(("google_skip_signature", "true".to_owned()));
            }
            None => {}
        }
        if let Some(endpoint) = &self.endpoint {
            options.push(("google_base_url", endpoint.trim_end_matches('/').to_owned()));
            if endpoint.starts_with("http://") {
                options.push(("allow_http", "true".to_owned()));
            }
        }
        options
    }

    /// Iceberg client properties to reach the same storage: `gcs.service.host` for an
    /// emulator (both the Java and the Python clients read it); nothing for Google's own.
    pub fn client_config(&self) -> BTreeMap<String, String> {
        self.endpoint
            .iter()
            .map(|e| {
                (
                    "gcs.service.host".to_owned(),
                    e.trim_end_matches('/').to_owned(),
                )
            })
            .collect()
    }
}

/// Everything the server needs to reach the object stores of its warehouses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StorageOptions {
    pub s3: S3Settings,
    pub azure: AzureSettings,
    pub gcs: GcsSettings,
}

impl StorageOptions {
    /// `object_store` options for a location's URL scheme (`s3`, `file`, ...).
    pub fn object_store_options(&self, scheme: &str) -> Vec<(&'static str, String)> {
        match scheme {
            "s3" | "s3a" => self.s3.object_store_options(),
            "abfs" | "abfss" | "az" => self.azure.object_store_options(),
            "gs" => self.gcs.object_store_options(),
            _ => Vec::new(),
        }
    }

    /// Properties a client needs to reach files at `location` (a warehouse root or a table
    /// location) as the server does: the S3 settings for `s3://` locations, or whenever S3 is
    /// configured (a table may live in a bucket while the warehouse is elsewhere).
    ///
    /// May hold credentials (see [`S3Settings::hand_out_credentials`]): send it to the client
    /// and nowhere else; never log it.
    pub fn client_config(&self, location: &str) -> BTreeMap<String, String> {
        let scheme = location.split_once("://").map(|(scheme, _)| scheme);
        if scheme == Some("gs") {
            return self.gcs.client_config();
        }
        if matches!(scheme, Some("s3" | "s3a")) || self.s3.is_configured() {
            self.s3.client_config()
        } else {
            BTreeMap::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use object_store::aws::AmazonS3ConfigKey;
    use object_store::gcp::GoogleConfigKey;

    use super::*;

    fn local() -> S3Settings {
        S3Settings {
            endpoint: Some("http://127.0.0.1:9000".to_owned()),
            region: Some("eu-west-1".to_owned()),
            path_style: None,
            access_key_id: Some("AKIDEXAMPLE".to_owned()),
            secret_access_key: Some(Secret::new("wJalrXUtnFEMI")),
            hand_out_credentials: false,
        }
    }

    #[test]
    fn every_option_is_a_key_object_store_knows() {
        // `parse_url_opts` silently drops keys it does not know: a typo would be lost.
        for (key, _) in local().object_store_options() {
            assert!(key.parse::<AmazonS3ConfigKey>().is_ok(), "{key}");
        }
    }

    #[test]
    fn every_gcs_option_is_a_key_object_store_knows() {
        let emulator = GcsSettings {
            service_account_key: None,
            endpoint: Some("http://127.0.0.1:4443/".to_owned()),
        };
        let keyed = GcsSettings {
            service_account_key: Some(Secret::new("{}")),
            ..emulator.clone()
        };
        for settings in [emulator.clone(), keyed] {
            for (key, _) in settings.object_store_options() {
                let known = key.parse::<GoogleConfigKey>().is_ok();
                assert!(known, "{key}");
            }
        }
        let options: BTreeMap<_, _> = emulator.object_store_options().into_iter().collect();
        assert_eq!(options["google_base_url"], "http://127.0.0.1:4443");
        assert_eq!(options["google_skip_signature"], "true");
        assert_eq!(options["allow_http"], "true");
        // On Google: no endpoint, and the machine's own credentials.
        assert!(GcsSettings::default().object_store_options().is_empty());
    }

    #[test]
    fn gcs_clients_are_told_only_an_emulators_host() {
        let options = StorageOptions {
            gcs: GcsSettings {
                service_account_key: Some(Secret::new("{\"private_key\": \"hidden\"}")),
                endpoint: Some("http://127.0.0.1:4443".to_owned()),
            },
            ..StorageOptions::default()
        };
        let config = options.client_config("gs://lake/wh");
        assert_eq!(
            config,
            BTreeMap::from([(
                "gcs.service.host".to_owned(),
                "http://127.0.0.1:4443".to_owned()
            )])
        );
        assert!(
            StorageOptions::default()
                .client_config("gs://lake/wh")
                .is_empty()
        );
        assert!(!format!("{options:?}").contains("hidden"));
    }

    #[test]
    fn a_local_endpoint_gets_path_style_and_plain_http() {
        let options: BTreeMap<_, _> = local().object_store_options().into_iter().collect();
        assert_eq!(options["aws_endpoint"], "http://127.0.0.1:9000");
        assert_eq!(options["aws_allow_http"], "true");
        assert_eq!(options["aws_virtual_hosted_style_request"], "false");
        assert_eq!(options["aws_region"], "eu-west-1");
        assert_eq!(options["aws_secret_access_key"], "wJalrXUtnFEMI");
    }

    #[test]
    fn aws_gets_https_and_the_default_region() {
        let options: BTreeMap<_, _> = S3Settings::default()
            .object_store_options()
            .into_iter()
            .collect();
        assert_eq!(options.len(), 1, "{options:?}");
        assert_eq!(options["aws_region"], DEFAULT_S3_REGION);
    }

    #[test]
    fn secrets_are_never_shown() {
        let settings = local();
        let shown = format!(
            "{:?}",
            StorageOptions {
                s3: settings,
                ..StorageOptions::default()
            }
        );
        assert!(!shown.contains("wJalrXUtnFEMI"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn clients_get_credentials_only_when_the_operator_opts_in() {
        let mut settings = local();
        let config = settings.client_config();
        assert_eq!(config["s3.endpoint"], "http://127.0.0.1:9000");
        assert_eq!(config["s3.region"], "eu-west-1");
        assert_eq!(config["client.region"], "eu-west-1");
        assert_eq!(config["s3.path-style-access"], "true");
        assert_eq!(config["s3.force-virtual-addressing"], "false");
        assert!(!config.contains_key("s3.access-key-id"));
        assert!(!config.contains_key("s3.secret-access-key"));

        settings.hand_out_credentials = true;
        let config = settings.client_config();
        assert_eq!(config["s3.access-key-id"], "AKIDEXAMPLE");
        assert_eq!(config["s3.secret-access-key"], "wJalrXUtnFEMI");
    }

    #[test]
    fn local_warehouses_tell_clients_nothing() {
        let options = StorageOptions::default();
        assert!(options.client_config("file:///srv/lake").is_empty());
        let config = options.client_config("s3://bucket/lake");
        assert_eq!(config["s3.region"], DEFAULT_S3_REGION);
        assert!(!config.contains_key("s3.path-style-access"), "{config:?}");
    }

    #[test]
    fn endpoints_and_keys_are_checked() {
        assert!(local().validate().is_ok());
        let bad = |change: fn(&mut S3Settings)| {
            let mut settings = local();
            change(&mut settings);
            settings.validate().unwrap_err()
        };
        assert!(bad(|s| s.endpoint = Some("127.0.0.1:9000".to_owned())).contains("http"));
        assert!(bad(|s| s.endpoint = Some("ftp://host".to_owned())).contains("http"));
        let leaky = bad(|s| s.endpoint = Some("http://id:hidden@host".to_owned()));
        assert!(!leaky.contains("hidden"), "{leaky}");
        assert!(bad(|s| s.secret_access_key = None).contains("secret"));
        assert!(bad(|s| s.access_key_id = None).contains("access key id"));
    }
}
