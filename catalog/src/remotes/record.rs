//! Remote records: add, read, list, remove, and the tracking refs a fetch leaves.

use pangolin_records::{ExpectedVersion, RecordKey, RecordStore};
use pangolin_store::{ObjectId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::address::rfc3339;
use crate::bundle::BundleRef;
use crate::catalog::Catalog;
use crate::tenancy::Name;
use crate::tenancy::records::{self, CAS_ATTEMPTS, PutError, RecordsError, Versioned};

/// The most remotes one catalog has.
pub const MAX_REMOTES: usize = 32;
const MAX_URL_BYTES: usize = 2048;

/// A remote as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Remote {
    pub name: Name,
    /// The other server, `http(s)://host[:port][/path]`.
    pub url: String,
    /// The catalog on that server.
    pub catalog: String,
    pub added_by: String,
    pub added_at: String,
    /// The remote catalog's branches and tags as of the last fetch; empty before one.
    #[serde(default)]
    pub refs: Vec<BundleRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetched_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetched_by: Option<String>,
}

impl Remote {
    /// The commit the remote's branch or tag `name` was at when last fetched.
    pub fn head(&self, name: &str) -> Option<ObjectId> {
        self.refs
            .iter()
            .find(|r| r.name.as_str() == name)
            .map(|r| r.hash)
    }
}

/// A remote to add.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct NewRemote {
    pub name: String,
    pub url: String,
    /// The catalog on the remote server; the same name as this one when absent.
    #[serde(default)]
    pub catalog: Option<String>,
}

/// Why a remote cannot be added.
#[derive(Debug, thiserror::Error)]
pub enum AddRemoteError {
    #[error("invalid remote: {0}")]
    Invalid(String),
    #[error("remote `{0}` already exists; remove it first to point it elsewhere")]
    Exists(String),
    #[error("a catalog has at most {MAX_REMOTES} remotes")]
    TooMany,
    #[error(transparent)]
    Records(#[from] RecordsError),
}

/// Why a remote cannot be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("there is no remote named `{0}`")]
    NotFound(String),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

fn prefix(tenant: &str, catalog: &str) -> String {
    format!("remotes/{tenant}/{catalog}/")
}

fn key(tenant: &str, catalog: &str, name: &str) -> RecordKey {
    RecordKey::new(format!("{}{name}", prefix(tenant, catalog)))
        .expect("names are short and have no control characters")
}

/// Checks a remote's server URL: http or https, a host, no credentials, query or fragment
/// (credentials belong to the client, never to a record others can read).
fn check_url(text: &str) -> Result<String, String> {
    if text.len() > MAX_URL_BYTES {
        return Err(format!("the url is longer than {MAX_URL_BYTES} bytes"));
    }
    let url = url::Url::parse(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(format!("`{text}` is not an http:// or https:// server URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "the url holds credentials; give them to the client that fetches and pushes instead"
                .to_owned(),
        );
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "`{text}` has a query or fragment; name only the server"
        ));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

impl Catalog {
    fn records(&self) -> &dyn RecordStore {
        self.store().as_ref()
    }

    /// Adds a remote.
    #[tracing::instrument(level = "debug", skip(self, new), fields(catalog = %self.name(), remote = %new.name))]
    pub async fn add_remote(
        &self,
        new: NewRemote,
        principal: &str,
    ) -> Result<Remote, AddRemoteError> {
        let name =
            Name::new("remote", &new.name).map_err(|e| AddRemoteError::Invalid(e.to_string()))?;
        let url = check_url(&new.url).map_err(AddRemoteError::Invalid)?;
        let catalog = match new.catalog {
            Some(catalog) => Name::new("catalog", &catalog)
                .map_err(|e| AddRemoteError::Invalid(e.to_string()))?
                .to_string(),
            None => self.name().to_owned(),
        };
        if self.remotes().await?.len() >= MAX_REMOTES {
            return Err(AddRemoteError::TooMany);
        }
        let remote = Remote {
            name,
            url,
            catalog,
            added_by: principal.to_owned(),
            added_at: rfc3339(Timestamp::now()),
            refs: Vec::new(),
            fetched_at: None,
            fetched_by: None,
        };
        let at = key(self.tenant(), self.name(), remote.name.as_ref());
        match records::put(self.records(), &at, ExpectedVersion::Absent, &remote).await {
            Ok(_) => Ok(remote),
            Err(PutError::Mismatch { .. }) => Err(AddRemoteError::Exists(new.name)),
            Err(PutError::Records(e)) => Err(e.into()),
        }
    }

    /// The catalog's remotes, in name order.
    pub async fn remotes(&self) -> Result<Vec<Remote>, RecordsError> {
        let page = records::list::<Remote>(
            self.records(),
            &prefix(self.tenant(), self.name()),
            None,
            records::MAX_PAGE,
        )
        .await?;
        Ok(page.items.into_iter().map(|v| v.value).collect())
    }

    /// The remote `name`.
    pub async fn remote(&self, name: &str) -> Result<Versioned<Remote>, RemoteError> {
        if Name::new("remote", name).is_err() {
            return Err(RemoteError::NotFound(name.to_owned()));
        }
        records::get(self.records(), &key(self.tenant(), self.name(), name))
            .await?
            .ok_or_else(|| RemoteError::NotFound(name.to_owned()))
    }

    /// Removes remote `name` with its tracking refs; the objects they reached stay until a
    /// collection finds nothing else keeps them.
    #[tracing::instrument(level = "debug", skip(self), fields(catalog = %self.name()))]
    pub async fn remove_remote(&self, name: &str) -> Result<(), RemoteError> {
        if Name::new("remote", name).is_err()
            || !records::delete_if_there(self.records(), &key(self.tenant(), self.name(), name))
                .await?
        {
            return Err(RemoteError::NotFound(name.to_owned()));
        }
        Ok(())
    }

    /// Records `refs` as remote `name`'s branches and tags, fetched by `principal` now.
    pub(crate) async fn set_tracking(
        &self,
        name: &str,
        refs: Vec<BundleRef>,
        principal: &str,
    ) -> Result<Remote, RemoteError> {
        let at = key(self.tenant(), self.name(), name);
        for _ in 0..CAS_ATTEMPTS {
            let Some(current) = records::get::<Remote>(self.records(), &at).await? else {
                return Err(RemoteError::NotFound(name.to_owned()));
            };
            let mut remote = current.value;
            remote.refs = refs.clone();
            remote.fetched_at = Some(rfc3339(Timestamp::now()));
            remote.fetched_by = Some(principal.to_owned());
            match records::put(
                self.records(),
                &at,
                ExpectedVersion::Is(current.version),
                &remote,
            )
            .await
            {
                Ok(_) => return Ok(remote),
                Err(PutError::Mismatch { .. }) => continue,
                Err(PutError::Records(e)) => return Err(e.into()),
            }
        }
        Err(RecordsError::Contended {
            key: at.to_string(),
        }
        .into())
    }
}

/// Every commit that transfers keep: those of transfers still arriving (see
/// [`crate::bundle::hold`]), then those the tracking refs of `catalog`'s remotes point at, so
/// what a fetch brought stays until it is fetched past. In that order: a fetch records its
/// refs before it releases its hold.
pub(crate) async fn kept_heads(catalog: &Catalog) -> Result<Vec<ObjectId>, RecordsError> {
    let mut heads = crate::bundle::hold::held_heads(catalog).await?;
    heads.extend(tracking_heads(catalog).await?);
    Ok(heads)
}

/// Every commit the tracking refs of `catalog`'s remotes point at, each whole (a fetch
/// records refs only once everything they reach is stored).
pub(crate) async fn tracking_heads(catalog: &Catalog) -> Result<Vec<ObjectId>, RecordsError> {
    Ok(catalog
        .remotes()
        .await?
        .iter()
        .flat_map(|remote| remote.refs.iter().map(|r| r.hash))
        .collect())
}

/// Deletes every remote of catalog `catalog` of `tenant`, when the catalog goes.
pub(crate) async fn delete_all(
    records: &dyn RecordStore,
    tenant: &Name,
    catalog: &Name,
) -> Result<(), RecordsError> {
    records::delete_all_under(records, &prefix(tenant.as_ref(), catalog.as_ref())).await
}

#[cfg(test)]
mod tests {
    use super::check_url;

    #[test]
    fn urls_name_a_server_and_nothing_secret() {
        assert_eq!(
            check_url("http://lake.example:8080/").unwrap(),
            "http://lake.example:8080"
        );
        assert_eq!(
            check_url("https://lake.example/pangolin").unwrap(),
            "https://lake.example/pangolin"
        );
        for bad in [
            "lake.example",
            "ftp://lake.example",
            "http://ana:secret@lake.example",
            "http://lake.example/?token=1",
            "file:///etc/passwd",
        ] {
            assert!(check_url(bad).is_err(), "{bad} passed");
        }
    }
}
