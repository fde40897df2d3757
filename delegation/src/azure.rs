//! Azure Data Lake Storage Gen2: SAS tokens for one table's directory, signed with the storage
//! account's key (a service SAS with `sr=d`, which needs a hierarchical namespace).

use std::time::{Duration, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::{Access, Secret};

/// The service version the tokens are signed for (any version from 2020-12-06 signs the same
/// sixteen fields).
const SIGNED_VERSION: &str = "2022-11-02";
/// How far back a token's start is set, for clocks that run behind the server's.
const CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);

/// A directory of an ADLS Gen2 container: `abfss://container@account.dfs.core.windows.net/path`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AdlsDirectory {
    pub account: String,
    pub container: String,
    /// No leading or trailing slash; never empty (a token for the whole container would be
    /// wider than a table).
    pub path: String,
}

impl AdlsDirectory {
    /// The directory of `abfs[s]://container@account.dfs.core.windows.net/path` (or
    /// `blob.core.windows.net`); `None` for any other location, a container's top, or a path
    /// with empty, `.` or `..` segments.
    pub fn parse(location: &str) -> Option<Self> {
        // Read literally, not as a URL: a URL parser would resolve `..` before it is seen.
        let rest = location
            .strip_prefix("abfss://")
            .or_else(|| location.strip_prefix("abfs://"))?;
        let (authority, path) = rest.split_once('/')?;
        let (container, host) = authority.split_once('@')?;
        let (account, service) = host.split_once('.')?;
        if !matches!(service, "dfs.core.windows.net" | "blob.core.windows.net") {
            return None;
        }
        let name = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        };
        let path = path.trim_end_matches('/');
        let fine = !path.is_empty()
            && path
                .split('/')
                .all(|s| !s.is_empty() && s != "." && s != ".." && !s.contains(['%', '?', '#']));
        (fine && name(container) && name(account)).then(|| Self {
            account: account.to_owned(),
            container: container.to_owned(),
            path: path.to_owned(),
        })
    }

    /// `account.dfs.core.windows.net`: how clients key per-account settings.
    pub fn host(&self) -> String {
        format!("{}.dfs.core.windows.net", self.account)
    }

    /// `abfss://container@account.dfs.core.windows.net/path`.
    pub fn url(&self) -> String {
        format!("abfss://{}@{}/{}", self.container, self.host(), self.path)
    }
}

/// A SAS token and when it stops working.
#[derive(Debug)]
pub struct Sas {
    /// The query string (`sv=...&sig=...`), without a leading `?`.
    pub token: Secret,
    pub expires_at: SystemTime,
    pub access: Access,
}

/// Signs directory SAS tokens for one storage account.
pub struct SasSigner {
    account: String,
    key: Zeroizing<Vec<u8>>,
    lifetime: Duration,
    https_only: bool,
}

impl std::fmt::Debug for SasSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SasSigner")
            .field("account", &self.account)
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

impl SasSigner {
    /// A signer with `account`'s key (base64, as Azure shows it). Tokens are valid over HTTPS
    /// only unless `https_only` is false (an emulator on plain HTTP).
    pub fn new(
        account: &str,
        key: &Secret,
        lifetime: Duration,
        https_only: bool,
    ) -> Result<Self, String> {
        let key = STANDARD
            .decode(key.expose())
            .map_err(|_| "an Azure account key is base64".to_owned())?;
        Ok(Self {
            account: account.to_owned(),
            key: Zeroizing::new(key),
            lifetime,
            https_only,
        })
    }

    /// How long tokens live.
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// A token for `directory` and everything below it: read and list, or also add, create,
    /// write and delete. Valid from a few minutes before the start of the window `now` falls
    /// in, for the signer's lifetime.
    pub fn directory_sas(
        &self,
        directory: &AdlsDirectory,
        access: Access,
        now: SystemTime,
    ) -> Result<Sas, String> {
        if directory.account != self.account {
            return Err(format!(
                "`{}` is not in storage account `{}`",
                directory.url(),
                self.account
            ));
        }
        // Signed from the start of the current window, so every hand-out within it is the
        // same token (one audit record per principal, not one per load), with at least three
        // quarters of the lifetime left.
        let window = (self.lifetime / 4).clamp(Duration::from_secs(1), Duration::from_secs(300));
        let since_epoch = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_err(|_| "the clock is before 1970".to_owned())?;
        let window_start = SystemTime::UNIX_EPOCH
            + Duration::from_secs(since_epoch.as_secs() - since_epoch.as_secs() % window.as_secs());
        let expires_at = window_start + self.lifetime;
        let start = format_time(window_start - CLOCK_SKEW)?;
        let expiry = format_time(expires_at)?;
        let permissions = match access {
            Access::Read => "rl",
            Access::ReadWrite => "racwdl",
        };
        let protocol = if self.https_only { "https" } else { "" };
        let signature = self.sign(&[
            permissions,
            &start,
            &expiry,
            &format!(
                "/blob/{}/{}/{}",
                self.account, directory.container, directory.path
            ),
            "",
            "",
            protocol,
            SIGNED_VERSION,
            "d",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
        ])?;
        let depth = directory.path.split('/').count().to_string();
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        query.append_pair("st", &start);
        query.append_pair("se", &expiry);
        query.append_pair("sp", permissions);
        if !protocol.is_empty() {
            query.append_pair("spr", protocol);
        }
        query.append_pair("sv", SIGNED_VERSION);
        query.append_pair("sr", "d");
        query.append_pair("sdd", &depth);
        query.append_pair("sig", &signature);
        Ok(Sas {
            token: Secret::new(query.finish()),
            expires_at,
            access,
        })
    }

    /// HMAC-SHA256 with the account key over the fields, one per line.
    fn sign(&self, fields: &[&str]) -> Result<String, String> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key)
            .map_err(|_| "the account key cannot sign".to_owned())?;
        mac.update(fields.join("\n").as_bytes());
        Ok(STANDARD.encode(mac.finalize().into_bytes()))
    }
}

fn format_time(time: SystemTime) -> Result<String, String> {
    jiff::Timestamp::try_from(time)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .map_err(|e| format!("a time out of range: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Azurite's well-known development key.
    const KEY: &str =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

    #[test]
    fn directories_are_parsed_from_abfs_locations() {
        let dir =
            AdlsDirectory::parse("abfss://lake@acct.dfs.core.windows.net/wh/db/t-1/").unwrap();
        assert_eq!(
            (
                dir.account.as_str(),
                dir.container.as_str(),
                dir.path.as_str()
            ),
            ("acct", "lake", "wh/db/t-1")
        );
        assert_eq!(
            dir.url(),
            "abfss://lake@acct.dfs.core.windows.net/wh/db/t-1"
        );
        assert!(AdlsDirectory::parse("abfs://lake@acct.blob.core.windows.net/t").is_some());
        for bad in [
            "abfss://lake@acct.dfs.core.windows.net/",
            "abfss://acct.dfs.core.windows.net/t",
            "abfss://lake@acct.evil.net/t",
            "abfss://lake@acct.dfs.core.windows.net/a/../b",
            "abfss://lake@acct.dfs.core.windows.net/a//b",
            "abfss://lake@acct.dfs.core.windows.net/a%2F..%2Fb",
            "s3://lake/t",
        ] {
            assert_eq!(AdlsDirectory::parse(bad), None, "{bad}");
        }
    }

    /// The signatures Azure's own SDK computes for the same inputs (`azure-storage-file-datalake`'s
    /// `generate_directory_sas`, whose string-to-sign this reproduces byte for byte).
    #[test]
    fn tokens_match_the_sdk() {
        let signer = SasSigner::new(
            "devstoreaccount1",
            &Secret::new(KEY),
            Duration::from_secs(1500),
            true,
        )
        .unwrap();
        let dir = AdlsDirectory::parse(
            "abfss://lake@devstoreaccount1.dfs.core.windows.net/wh/db/orders-1",
        )
        .unwrap();
        // 2026-12-01T22:00:00Z: the start is five minutes earlier, the expiry 25 later.
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_162_400);
        let read = signer.directory_sas(&dir, Access::Read, now).unwrap();
        assert_eq!(
            read.token.expose(),
            "st=2026-12-01T21%3A55%3A00Z&se=2026-12-01T22%3A25%3A00Z&sp=rl&spr=https\
             &sv=2022-11-02&sr=d&sdd=3&sig=UQOOY36ij1yKaZzTafBwLAseDjdvntkUFsDMpivIQZE%3D"
        );
        let write = signer.directory_sas(&dir, Access::ReadWrite, now).unwrap();
        assert!(
            write.token.expose().ends_with(
                "&sp=racwdl&spr=https&sv=2022-11-02&sr=d&sdd=3\
                            &sig=65RjbbD%2Bc9MxgWB2rsHQTKul5tvyPGumDFKvzPOc17M%3D"
            ),
            "{}",
            write.token.expose()
        );
        assert_eq!(read.expires_at, now + Duration::from_secs(1500));
        // Within the same window (a quarter of the lifetime, at most five minutes), the same
        // token; in the next, a new one.
        let soon = signer
            .directory_sas(&dir, Access::Read, now + Duration::from_secs(299))
            .unwrap();
        assert_eq!(soon.token, read.token);
        let next = signer
            .directory_sas(&dir, Access::Read, now + Duration::from_secs(300))
            .unwrap();
        assert_ne!(next.token, read.token);
        let elsewhere =
            AdlsDirectory::parse("abfss://lake@other.dfs.core.windows.net/wh/t").unwrap();
        assert!(signer.directory_sas(&elsewhere, Access::Read, now).is_err());
        assert!(SasSigner::new("a", &Secret::new("not base64!"), Duration::ZERO, true).is_err());
    }
}
