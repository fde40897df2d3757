//! Where a catalog's table files live.

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_delegation::azure::SasSigner;
use pangolin_delegation::gcs::Downscoper;
use pangolin_delegation::s3::StsVendor;
use pangolin_delegation::s3::sign::Signer;
use pangolin_store::ContentKey;

use crate::iceberg::FileIo;

/// A location a client chose outside the warehouse (see [`Warehouse::contains`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{location}` is outside the warehouse `{root}`")]
pub struct OutsideWarehouse {
    pub location: String,
    pub root: String,
}

/// How a warehouse lets engines reach a table's files without its own keys (see
/// `pangolin_delegation`). Empty for a warehouse that delegates nothing.
#[derive(Debug, Default)]
pub struct Delegation {
    /// Vends short-lived credentials scoped to a table's prefixes.
    pub vendor: Option<Arc<StsVendor>>,
    /// Signs clients' requests for a table's files.
    pub signer: Option<Arc<Signer>>,
    /// Signs SAS tokens for a table's directory (Azure).
    pub sas: Option<Arc<SasSigner>>,
    /// Downscopes OAuth tokens to a table's prefixes (Google Cloud Storage).
    pub gcs: Option<Arc<Downscoper>>,
}

impl Delegation {
    pub fn is_empty(&self) -> bool {
        self.vendor.is_none() && self.signer.is_none() && self.sas.is_none() && self.gcs.is_none()
    }
}

/// A storage location for table data and metadata, and the file access to reach it.
#[derive(Clone)]
pub struct Warehouse {
    /// Base location (`file:///...`, `s3://bucket/prefix`); new tables go below it.
    root: String,
    /// `root` parsed once, since every location a write names is compared with it; `None`
    /// when it does not parse, and then nothing is inside.
    root_url: Option<Arc<url::Url>>,
    pub io: Arc<FileIo>,
    /// Computed once: every table load sends it.
    client_config: Arc<BTreeMap<String, String>>,
    /// `None` when nothing is delegated, so a load checks one pointer.
    delegation: Option<Arc<Delegation>>,
}

/// Leaves out the client config, which may hold credentials.
impl std::fmt::Debug for Warehouse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Warehouse")
            .field("root", &self.root)
            .field("io", &self.io)
            .finish_non_exhaustive()
    }
}

impl Warehouse {
    pub fn new(root: impl Into<String>, io: Arc<FileIo>) -> Self {
        let root = root.into().trim_end_matches('/').to_owned();
        let client_config = Arc::new(io.options().client_config(&root));
        Self {
            root_url: parse_location(&root).map(Arc::new),
            root,
            io,
            client_config,
            delegation: None,
        }
    }

    /// This warehouse, delegating access to its files as `delegation` says.
    pub fn with_delegation(mut self, delegation: Delegation) -> Self {
        self.delegation = (!delegation.is_empty()).then(|| Arc::new(delegation));
        self
    }

    /// Base location (`file:///...`, `s3://bucket/prefix`), without a trailing `/`.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// How access to the files is delegated, if at all.
    pub fn delegation(&self) -> Option<&Delegation> {
        self.delegation.as_deref()
    }

    /// Where a new table or view `key` goes when the client names no location: below its
    /// namespace's `location` property when set, else below the warehouse root by namespace
    /// levels. The asset's uuid is part of the directory name, so assets of the same name on
    /// different branches never share files.
    pub fn default_location(
        &self,
        namespace_location: Option<&str>,
        key: &ContentKey,
        uuid: &uuid::Uuid,
    ) -> String {
        let leaf = format!("{}-{}", key.name(), uuid.simple());
        if let Some(base) = namespace_location {
            return format!("{}/{leaf}", base.trim_end_matches('/'));
        }
        let mut location = self.root.clone();
        for level in key.parent().iter().flat_map(|p| p.elements()) {
            location.push('/');
            location.push_str(level);
        }
        location.push('/');
        location.push_str(&leaf);
        location
    }

    /// Whether `location` is strictly below the warehouse root. Every location a client
    /// chooses (a table's or view's `location`, `write.metadata.path`, a namespace's
    /// `location`, a file to register) must be: the server reads and writes there with the
    /// warehouse's own credentials, so a location elsewhere would let one tenant reach files
    /// (or buckets) that are not its catalog's. Compared as parsed URLs, so `file:/x` and
    /// `file:///x` agree and `..` segments cannot climb out.
    pub fn contains(&self, location: &str) -> bool {
        let (Some(root), Some(location)) = (self.root_url.as_deref(), parse_location(location))
        else {
            return false;
        };
        let root_path = root.path().trim_end_matches('/');
        // The user part names an Azure container (`abfss://container@account...`).
        root.scheme() == location.scheme()
            && root.username() == location.username()
            && root.password() == location.password()
            && root.host_str() == location.host_str()
            && root.port() == location.port()
            && location
                .path()
                .strip_prefix(root_path)
                .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1)
    }

    /// Fails on the first of `locations` that [`contains`](Self::contains) refuses.
    pub fn ensure_contains(&self, locations: &[&str]) -> Result<(), OutsideWarehouse> {
        match locations.iter().find(|l| !self.contains(l)) {
            None => Ok(()),
            Some(location) => Err(OutsideWarehouse {
                location: (*location).to_owned(),
                root: self.root.clone(),
            }),
        }
    }

    /// What a client needs to reach this warehouse's files as the server does: for S3,
    /// `s3.endpoint`, `s3.region`, `s3.path-style-access` and, only when the operator opted in,
    /// the static keys (see [`S3Settings`](crate::iceberg::S3Settings)). Empty for a local
    /// warehouse. Meant for the `config` of a table load or create answer, which clients merge
    /// into their file access properties.
    ///
    /// May hold credentials: send it to the client and nowhere else; never log it.
    pub fn client_config(&self) -> &BTreeMap<String, String> {
        &self.client_config
    }
}

/// `location` as a URL; a bare absolute path is a local file.
fn parse_location(location: &str) -> Option<url::Url> {
    if location.starts_with('/') {
        url::Url::from_file_path(location).ok()
    } else {
        url::Url::parse(location).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_locations_below_the_root_are_inside() {
        let local = Warehouse::new("file:///data/wh", Arc::new(FileIo::new(16 << 20)));
        assert!(local.contains("file:///data/wh/db/t-1"));
        assert!(local.contains("file:/data/wh/db/t-1/metadata/00001.metadata.json"));
        assert!(!local.contains("file:///data/wh"));
        assert!(!local.contains("file:///data/wh2/db"));
        assert!(!local.contains("file:///data/wh/../other/t"));
        assert!(!local.contains("file:///etc/passwd"));
        assert!(!local.contains("s3://bucket/data/wh/t"));
        assert!(!local.contains("not a location"));
        let s3 = Warehouse::new("s3://bucket/tenant-a", Arc::new(FileIo::new(16 << 20)));
        assert!(s3.contains("s3://bucket/tenant-a/db/t"));
        assert!(!s3.contains("s3://bucket/tenant-b/db/t"));
        assert!(!s3.contains("s3://other-bucket/tenant-a/db/t"));
        assert!(!s3.contains("s3://bucket/tenant-a-evil/db/t"));
        assert!(!s3.contains("s3://bucket/tenant-a/../tenant-b/db/t"));
        assert!(!s3.contains("s3://bucket/tenant-a/%2E%2E/tenant-b/db/t"));
        let adls = Warehouse::new(
            "abfss://lake@account.dfs.core.windows.net/wh",
            Arc::new(FileIo::new(16 << 20)),
        );
        assert!(adls.contains("abfss://lake@account.dfs.core.windows.net/wh/db/t"));
        assert!(!adls.contains("abfss://other@account.dfs.core.windows.net/wh/db/t"));
        assert!(!adls.contains("abfss://account.dfs.core.windows.net/wh/db/t"));
        assert!(!adls.contains("abfss://lake@other.dfs.core.windows.net/wh/db/t"));
        // A root that is no location holds nothing, not even what begins with it.
        let broken = Warehouse::new("no scheme", Arc::new(FileIo::new(16 << 20)));
        assert!(!broken.contains("no scheme/db/t"));
        assert!(!broken.contains("file:///no scheme/db/t"));
    }
    use crate::iceberg::{S3Settings, Secret, StorageOptions};

    fn warehouse(root: &str, s3: S3Settings) -> Warehouse {
        let io = FileIo::with_options(
            16 << 20,
            StorageOptions {
                s3,
                ..StorageOptions::default()
            },
        );
        Warehouse::new(root, Arc::new(io))
    }

    #[test]
    fn clients_of_a_bucket_are_told_how_to_reach_it() {
        let s3 = S3Settings {
            endpoint: Some("http://127.0.0.1:9000".to_owned()),
            access_key_id: Some("id".to_owned()),
            secret_access_key: Some(Secret::new("secret")),
            ..S3Settings::default()
        };
        let config = warehouse("s3://lake/wh", s3.clone())
            .client_config()
            .clone();
        assert_eq!(config["s3.endpoint"], "http://127.0.0.1:9000");
        assert_eq!(config["s3.path-style-access"], "true");
        assert!(!config.contains_key("s3.secret-access-key"), "not opted in");

        let s3 = S3Settings {
            hand_out_credentials: true,
            ..s3
        };
        let config = warehouse("s3://lake/wh", s3).client_config().clone();
        assert_eq!(config["s3.access-key-id"], "id");
        assert_eq!(config["s3.secret-access-key"], "secret");
    }

    #[test]
    fn clients_of_a_local_warehouse_are_told_nothing() {
        let config = warehouse("file:///srv/lake", S3Settings::default())
            .client_config()
            .clone();
        assert!(config.is_empty(), "{config:?}");
    }
}
