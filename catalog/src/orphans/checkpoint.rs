//! Resuming a sweep whose server stopped or whose mark phase failed: what the mark phase has
//! done so far (the Iceberg files it read and the files they name), saved as it goes.
//!
//! The mark phase of a large catalog reads every manifest of its retained history, which can
//! take hours; walking the commits and trees again is cheap beside it. So a checkpoint holds
//! what reading produced, never where the walk was: a resumed sweep walks history again and
//! reads only the metadata files, manifest lists and manifests no checkpoint has. Checkpoints
//! are saved only between runs of table metadata files marked whole (16 at a time), so every
//! file a checkpoint says was read was read whole, with all it names.
//! Each is a record of the shared store (any server can resume), holding what was new since
//! the one before; they are deleted when a sweep of the catalog succeeds.
//!
//! A resumed sweep keeps the first one's start: its retention windows and grace period are
//! measured from the earlier time, so it keeps at least what the first one would have.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use pangolin_records::{ExpectedVersion, RecordError, RecordKey, RecordStore};
use pangolin_store::BackendError;
use serde::{Deserialize, Serialize};

use super::mark::Directory;

/// How often a sweep saves what it marked, unless told otherwise.
pub const EVERY: Duration = Duration::from_secs(30);

/// Records listed at once.
const PAGE: usize = 100;

/// What a mark phase did between two checkpoints (or, loaded, in all of them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Checkpoint {
    /// When the sweep these checkpoints belong to began, in milliseconds.
    pub started_ms: i64,
    /// Metadata files, manifest lists and manifests read whole.
    pub read: Vec<String>,
    /// Files they name, by `FileIo::file_key`.
    pub marked: Vec<String>,
    /// Table and view folders found or changed.
    pub directories: Vec<Directory>,
    /// Metadata files history names that do not exist.
    pub missing_metadata: Vec<String>,
}

impl Checkpoint {
    pub fn is_empty(&self) -> bool {
        self.read.is_empty()
            && self.marked.is_empty()
            && self.directories.is_empty()
            && self.missing_metadata.is_empty()
    }

    /// Adds what `later` saved after this one.
    fn absorb(&mut self, later: Checkpoint) {
        self.started_ms = self.started_ms.min(later.started_ms);
        self.read.extend(later.read);
        self.marked.extend(later.marked);
        self.directories.extend(later.directories);
        self.missing_metadata.extend(later.missing_metadata);
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("could not save the sweep's checkpoint: {0}")]
    Save(#[from] RecordError),
    #[error("checkpoint `{key}` is damaged: {reason}")]
    Corrupt { key: String, reason: String },
    #[error("`{0}` cannot name a sweep's checkpoints")]
    InvalidName(String),
}

/// The checkpoints of one run of a sweep of one catalog: the first job and every job that
/// resumed it share them.
pub struct Checkpoints {
    records: Arc<dyn RecordStore>,
    /// Every checkpoint of the catalog starts with this.
    catalog_prefix: String,
    /// And this run's with this.
    prefix: String,
    every: Duration,
    /// The number of the next checkpoint.
    next: u64,
    last: Instant,
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoints")
            .field("prefix", &self.prefix)
            .field("every", &self.every)
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl Checkpoints {
    /// The checkpoints of run `run` of a sweep of `tenant`'s `catalog`, saved every
    /// [`EVERY`].
    pub fn new(
        records: Arc<dyn RecordStore>,
        tenant: &str,
        catalog: &str,
        run: &str,
    ) -> Result<Self, CheckpointError> {
        if run.is_empty() || run.contains('/') {
            return Err(CheckpointError::InvalidName(run.to_owned()));
        }
        let catalog_prefix = format!("sweep-checkpoints/{tenant}/{catalog}/");
        Ok(Self {
            records,
            prefix: format!("{catalog_prefix}{run}/"),
            catalog_prefix,
            every: EVERY,
            next: 0,
            last: Instant::now(),
        })
    }

    /// Saves at most once per `every` (zero: between every two tables).
    pub fn every(mut self, every: Duration) -> Self {
        self.every = every;
        self
    }

    /// Whether the next save is due.
    pub fn due(&self) -> bool {
        self.last.elapsed() >= self.every
    }

    /// Everything this run saved so far, merged; `None` when it saved nothing.
    pub async fn load(&mut self) -> Result<Option<Checkpoint>, CheckpointError> {
        let mut merged: Option<Checkpoint> = None;
        let mut after = None;
        loop {
            let page = self
                .records
                .list_records(&self.prefix, after.as_ref(), PAGE)
                .await?;
            for record in page.records {
                let corrupt = |reason: String| CheckpointError::Corrupt {
                    key: record.key.to_string(),
                    reason,
                };
                let saved: Checkpoint =
                    serde_json::from_slice(&record.value).map_err(|e| corrupt(e.to_string()))?;
                match &mut merged {
                    Some(merged) => merged.absorb(saved),
                    None => merged = Some(saved),
                }
                self.next += 1;
            }
            match page.next_after {
                Some(next) => after = Some(next),
                None => return Ok(merged),
            }
        }
    }

    /// Saves what was marked since the last save.
    pub async fn save(&mut self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        let key = format!("{}{:010}", self.prefix, self.next);
        let key = RecordKey::new(key.clone()).map_err(|_| CheckpointError::InvalidName(key))?;
        let value = serde_json::to_vec(checkpoint).map_err(|e| CheckpointError::Corrupt {
            key: key.to_string(),
            reason: e.to_string(),
        })?;
        self.records
            .put_record(&key, ExpectedVersion::Absent, Bytes::from(value))
            .await?;
        self.next += 1;
        self.last = Instant::now();
        Ok(())
    }

    /// Deletes the checkpoints of every run of the catalog's sweeps: once one succeeds,
    /// none is worth resuming. Returns how many there were.
    pub async fn clear(&self) -> Result<usize, CheckpointError> {
        let mut deleted = 0;
        let mut after = None;
        loop {
            let page = self
                .records
                .list_records(&self.catalog_prefix, after.as_ref(), PAGE)
                .await?;
            for record in &page.records {
                match self
                    .records
                    .delete_record(&record.key, record.version)
                    .await
                {
                    // Another sweep finishing at the same time deleted it first.
                    Ok(()) | Err(RecordError::VersionMismatch { .. }) => deleted += 1,
                    Err(e) => return Err(e.into()),
                }
            }
            match page.next_after {
                Some(next) => after = Some(next),
                None => return Ok(deleted),
            }
        }
    }
}
