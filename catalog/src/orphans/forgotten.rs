//! Folders of tables and views that only commits past every retention window name, written
//! down before object collection deletes those commits.
//!
//! The sweep finds such a folder (a table dropped, or held only by a deleted branch, long ago)
//! through the stored commits that still name it, and empties it. Once object collection has
//! deleted those commits, nothing would name the folder any more and its files would stay for
//! ever. So collection first records every such folder in the shared store, the sweep lists
//! the recorded ones too, and a folder leaves the record once a sweep finds it empty.

use std::collections::BTreeMap;

use bytes::Bytes;
use pangolin_records::{ExpectedVersion, RecordError, RecordKey, RecordStore};
use pangolin_store::BackendError;
use serde::{Deserialize, Serialize};

use super::mark::Directory;

/// Times a change of the record is tried against concurrent ones.
const ATTEMPTS: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum ForgottenError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("could not record forgotten folders: {0}")]
    Write(#[from] RecordError),
    #[error("the record of forgotten folders is damaged: {0}")]
    Corrupt(String),
    #[error("the record of forgotten folders kept changing; try again")]
    Contended,
    #[error("`{0}` cannot name a record of forgotten folders")]
    InvalidName(String),
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct Folders {
    folders: Vec<Directory>,
}

/// The forgotten folders of one catalog.
pub struct Forgotten<'a> {
    records: &'a dyn RecordStore,
    key: RecordKey,
}

impl std::fmt::Debug for Forgotten<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forgotten")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl<'a> Forgotten<'a> {
    pub fn new(
        records: &'a dyn RecordStore,
        tenant: &str,
        catalog: &str,
    ) -> Result<Self, ForgottenError> {
        let key = format!("sweep-folders/{tenant}/{catalog}");
        let key = RecordKey::new(key.clone()).map_err(|_| ForgottenError::InvalidName(key))?;
        Ok(Self { records, key })
    }

    /// The folders recorded, by location.
    pub async fn load(&self) -> Result<BTreeMap<String, Directory>, ForgottenError> {
        Ok(self.read().await?.0)
    }

    /// Adds `folders` to the record.
    pub async fn add(
        &self,
        folders: impl IntoIterator<Item = Directory>,
    ) -> Result<(), ForgottenError> {
        let folders: Vec<Directory> = folders.into_iter().collect();
        if folders.is_empty() {
            return Ok(());
        }
        self.change(|recorded| {
            for folder in &folders {
                recorded
                    .entry(folder.location.clone())
                    .or_insert_with(|| Directory {
                        missing: Vec::new(),
                        ..folder.clone()
                    });
            }
        })
        .await
    }

    /// Takes the folders at `locations` off the record.
    pub async fn remove(&self, locations: &[String]) -> Result<(), ForgottenError> {
        if locations.is_empty() {
            return Ok(());
        }
        self.change(|recorded| {
            for location in locations {
                recorded.remove(location);
            }
        })
        .await
    }

    async fn read(&self) -> Result<(BTreeMap<String, Directory>, Option<u64>), ForgottenError> {
        let Some(record) = self.records.get_record(&self.key).await? else {
            return Ok((BTreeMap::new(), None));
        };
        let folders: Folders = serde_json::from_slice(&record.value)
            .map_err(|e| ForgottenError::Corrupt(e.to_string()))?;
        let folders = folders
            .folders
            .into_iter()
            .map(|folder| (folder.location.clone(), folder))
            .collect();
        Ok((folders, Some(record.version)))
    }

    async fn change(
        &self,
        edit: impl Fn(&mut BTreeMap<String, Directory>),
    ) -> Result<(), ForgottenError> {
        for _ in 0..ATTEMPTS {
            let (mut folders, version) = self.read().await?;
            edit(&mut folders);
            let expected = version.map_or(ExpectedVersion::Absent, ExpectedVersion::Is);
            let value = Folders {
                folders: folders.into_values().collect(),
            };
            let value =
                serde_json::to_vec(&value).map_err(|e| ForgottenError::Corrupt(e.to_string()))?;
            match self
                .records
                .put_record(&self.key, expected, Bytes::from(value))
                .await
            {
                Ok(_) => return Ok(()),
                Err(RecordError::VersionMismatch { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ForgottenError::Contended)
    }
}
