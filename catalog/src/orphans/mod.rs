//! Removing the files of a catalog's tables and views that nothing in its history references:
//! orphan files, left by writers that failed or were refused, and by expired snapshots once no
//! retained commit reads them.
//!
//! Mark ([`mark`]) then sweep. The sweep lists only the folders the catalog gave its tables
//! and views itself (`<name>-<uuid>`, see [`Warehouse::default_location`]), never the
//! warehouse root or a location a client chose: catalogs share warehouses, and a chosen
//! location may hold other tables' files. A file goes only when nothing marked it and it was
//! last modified before the mark began minus a grace period, so a file written since, or by a
//! writer whose commit has not landed yet, stays. Just before deleting, history is walked again
//! for whatever landed meanwhile. A folder whose metadata names files that do not exist is
//! left alone: deleting more of a damaged table would only make it harder to recover.
//!
//! Other catalogs may share the warehouse, and one of them may hold a table in a folder this
//! catalog named (registered from its metadata file, say), writing files this catalog never
//! sees. So the retained history of every other catalog whose warehouse overlaps is walked too
//! (trees only: no file is read), and a folder holding a metadata file another catalog names
//! is left alone.
//!
//! [`Warehouse::default_location`]: crate::warehouse::Warehouse::default_location

pub mod checkpoint;
pub mod forgotten;
pub mod mark;
pub mod named;
pub mod progress;

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_store::Timestamp;

use crate::catalog::Catalog;
use crate::iceberg::io::StoredFile;
use crate::iceberg::{FileIo, IoError};
pub use checkpoint::{Checkpoint, CheckpointError, Checkpoints};
pub use forgotten::{Forgotten, ForgottenError};
pub use mark::{Directory, MarkError, Marks};
pub use progress::{Phase, SweepProgress};

/// Files deleted in one request to the store.
const DELETE_BATCH: usize = 1000;

/// What a sweep is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct SweepRequest {
    /// Only files last modified this long before the mark began may go.
    pub grace_ms: i64,
    /// Report what would go; delete nothing.
    pub dry_run: bool,
    /// How many orphans the report names one by one (all are counted).
    pub shown: usize,
}

/// What a sweep works with besides its request.
#[derive(Debug, Default)]
pub struct SweepContext {
    /// Every other catalog whose warehouse overlaps this one's (see the module
    /// documentation).
    pub others: Vec<Catalog>,
    /// Counts what the sweep does, for another task to read while it runs.
    pub progress: Arc<SweepProgress>,
    /// Where the mark phase saves what it did as it goes, and what an earlier run of the same
    /// sweep saved: the sweep resumes from it (see [`checkpoint`]).
    pub checkpoints: Option<Checkpoints>,
}

/// A folder the sweep did not list, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub location: String,
    pub reason: String,
}

/// What a sweep found, and did.
#[derive(Debug, Clone, Default)]
pub struct SweepReport {
    /// When the mark began.
    pub started_ms: i64,
    /// Files last modified at or after this were kept whatever marked them.
    pub cutoff_ms: i64,
    pub objects_read: u64,
    pub metadata_files_read: u64,
    pub manifest_lists_read: u64,
    pub manifests_read: u64,
    /// Distinct files referenced by the metadata read.
    pub referenced: usize,
    pub directories_swept: usize,
    /// Of those, folders only commits past every retention window name (a table dropped, or
    /// held only by a deleted branch, that long ago).
    pub forgotten_directories: usize,
    /// Other catalogs whose warehouse overlaps this one's, whose histories were walked.
    pub other_catalogs: usize,
    /// Metadata files, manifest lists and manifests an earlier run of this sweep read, so
    /// not read again.
    pub reads_resumed: usize,
    pub skipped: Vec<Skipped>,
    pub files_listed: usize,
    /// Unreferenced files kept because they are newer than the cutoff.
    pub too_recent: usize,
    /// The first orphans, in location order.
    pub orphans: Vec<StoredFile>,
    pub orphan_files: usize,
    pub orphan_bytes: u64,
    /// Files deleted: `orphan_files`, or 0 in a dry run.
    pub deleted: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("catalog `{0}` has no warehouse: it has no files to sweep")]
    NoWarehouse(String),
    #[error(transparent)]
    Mark(#[from] MarkError),
    #[error(transparent)]
    Sharing(#[from] crate::tenancy::SharingError),
    #[error(transparent)]
    Forgotten(#[from] ForgottenError),
    #[error(transparent)]
    Io(#[from] IoError),
}

/// A sweep whose files are marked and whose folders are listed, ready to
/// [`finish`](Self::finish).
#[derive(Debug)]
pub struct SweepPlan<'a> {
    catalog: &'a Catalog,
    marks: Marks,
    /// Unmarked files older than the cutoff, by folder.
    candidates: Vec<(String, Vec<StoredFile>)>,
    others: Vec<Catalog>,
    foreign: Foreign,
    checkpoints: Option<Checkpoints>,
    /// Recorded folders no retained table or view holds (see [`forgotten`]).
    recorded: Vec<String>,
    report: SweepReport,
    shown: usize,
    progress: Arc<SweepProgress>,
}

impl Catalog {
    /// Finds, and unless `request.dry_run` deletes, the orphan files of the catalog's tables
    /// and views. `others`: every other catalog whose warehouse overlaps this one's (see the
    /// module documentation).
    pub async fn sweep_orphan_files(
        &self,
        request: SweepRequest,
        others: Vec<Catalog>,
    ) -> Result<SweepReport, SweepError> {
        let context = SweepContext {
            others,
            ..SweepContext::default()
        };
        self.plan_sweep(&request, context)
            .await?
            .finish(request.dry_run)
            .await
    }

    /// Marks every file the catalog's history references and lists its folders (see
    /// [`SweepContext`]). `request.dry_run` is for [`SweepPlan::finish`].
    #[tracing::instrument(level = "info", skip_all, fields(tenant = %self.tenant(), catalog = %self.name(), others = context.others.len()))]
    pub async fn plan_sweep(
        &self,
        request: &SweepRequest,
        context: SweepContext,
    ) -> Result<SweepPlan<'_>, SweepError> {
        let SweepContext {
            others,
            progress,
            mut checkpoints,
        } = context;
        let warehouse = self
            .warehouse_ref()
            .ok_or_else(|| SweepError::NoWarehouse(self.name().to_owned()))?;
        let io = warehouse.io.as_ref();
        let saved = match &mut checkpoints {
            Some(checkpoints) => checkpoints.load().await.map_err(MarkError::from)?,
            None => None,
        };
        // A resumed sweep measures from when it first began: it keeps at least as much.
        let started_ms = saved
            .as_ref()
            .map_or_else(|| Timestamp::now().as_millis(), |saved| saved.started_ms);
        let cutoff_ms = started_ms.saturating_sub(request.grace_ms.max(0));
        let mut marks = Marks::new(Timestamp::from_millis(started_ms));
        if let Some(saved) = saved {
            tracing::info!(reads = saved.read.len(), "resuming from checkpoints");
            marks.restore(saved);
        }
        if checkpoints.is_some() {
            marks.keep_checkpoints();
        }
        progress.enter(Phase::Marking);
        marks
            .extend(self, io, &progress, checkpoints.as_mut())
            .await?;
        let recorded = Forgotten::new(self.store().as_ref(), self.tenant(), self.name())?
            .load()
            .await?;
        let recorded = marks.add_recorded(recorded.into_values());
        let mut foreign = Foreign::new(&others, marks.now());
        foreign.walk(&others, io, &progress).await?;

        let mut report = SweepReport {
            started_ms,
            cutoff_ms,
            other_catalogs: others.len(),
            reads_resumed: marks.reads_resumed,
            ..SweepReport::default()
        };
        let mut swept: Vec<&Directory> = Vec::new();
        for directory in marks.directories.values() {
            match skip_reason(directory, &marks.missing_metadata, &foreign, io, |l| {
                warehouse.contains(l)
            }) {
                Some(reason) => report.skipped.push(Skipped {
                    location: directory.location.clone(),
                    reason,
                }),
                // Folders are in location order, so one inside another comes right after it.
                None if swept
                    .last()
                    .is_some_and(|outer| is_inside(&directory.location, &outer.location)) => {}
                None => swept.push(directory),
            }
        }
        progress.enter(Phase::Listing);
        let mut candidates: Vec<(String, Vec<StoredFile>)> = Vec::new();
        for directory in &swept {
            let files = io.list_files(&directory.location).await?;
            report.files_listed += files.len();
            progress.add(&progress.files_listed, files.len());
            let mut orphans = Vec::new();
            for file in files {
                if marks.is_marked(&file.location) {
                    continue;
                }
                if file.modified_ms >= cutoff_ms {
                    report.too_recent += 1;
                    continue;
                }
                orphans.push(file);
            }
            candidates.push((directory.location.clone(), orphans));
        }
        report.directories_swept = swept.len();
        report.forgotten_directories = marks.forgotten;
        tracing::info!(
            directories = swept.len(),
            files = report.files_listed,
            candidates = candidates.iter().map(|(_, f)| f.len()).sum::<usize>(),
            "listed"
        );
        Ok(SweepPlan {
            catalog: self,
            marks,
            candidates,
            others,
            foreign,
            checkpoints,
            recorded,
            report,
            shown: request.shown,
            progress,
        })
    }
}

impl SweepPlan<'_> {
    /// Marks whatever landed since the plan was made, then deletes the orphans left (only
    /// reports them when `dry_run`).
    #[tracing::instrument(level = "info", skip_all, fields(tenant = %self.catalog.tenant(), catalog = %self.catalog.name(), dry_run))]
    pub async fn finish(self, dry_run: bool) -> Result<SweepReport, SweepError> {
        let Self {
            catalog,
            mut marks,
            mut candidates,
            others,
            mut foreign,
            checkpoints,
            recorded,
            mut report,
            shown,
            progress,
        } = self;
        let io = catalog
            .warehouse_ref()
            .ok_or_else(|| SweepError::NoWarehouse(catalog.name().to_owned()))?
            .io
            .as_ref();
        progress.enter(Phase::Remarking);
        marks.extend(catalog, io, &progress, None).await?;
        foreign.walk(&others, io, &progress).await?;
        for (location, orphans) in &mut candidates {
            let damaged = marks
                .directories
                .get(location.as_str())
                .is_some_and(|d| !d.missing.is_empty());
            if damaged {
                orphans.clear();
            }
            if let Some(reason) = foreign.reason(location, io) {
                orphans.clear();
                report.skipped.push(Skipped {
                    location: location.clone(),
                    reason,
                });
            }
            orphans.retain(|file| !marks.is_marked(&file.location));
        }
        report.objects_read = marks.objects_read;
        report.metadata_files_read = marks.metadata_files_read;
        report.manifest_lists_read = marks.manifest_lists_read;
        report.manifests_read = marks.manifests_read;
        report.referenced = marks.marked();

        let mut all: Vec<&StoredFile> = candidates.iter().flat_map(|(_, f)| f).collect();
        all.sort_by(|a, b| a.location.cmp(&b.location));
        report.orphan_files = all.len();
        report.orphan_bytes = all.iter().map(|f| f.size).sum();
        report.orphans = all.into_iter().take(shown).cloned().collect();
        progress.add(&progress.orphans, report.orphan_files);
        if !dry_run {
            progress.enter(Phase::Deleting);
            for (_, orphans) in &candidates {
                for batch in orphans.chunks(DELETE_BATCH) {
                    let locations: Vec<String> = batch.iter().map(|f| f.location.clone()).collect();
                    io.delete_files(&locations).await?;
                    report.deleted += locations.len();
                    progress.add(&progress.deleted, locations.len());
                    tracing::info!(
                        deleted = report.deleted,
                        of = report.orphan_files,
                        "sweeping"
                    );
                }
            }
        }
        tracing::info!(
            orphans = report.orphan_files,
            bytes = report.orphan_bytes,
            deleted = report.deleted,
            skipped = report.skipped.len(),
            "orphan files swept"
        );
        if !dry_run {
            // A recorded folder leaves the record once nothing is left in it.
            let mut empty = Vec::new();
            for location in recorded {
                if io.list_files(&location).await?.is_empty() {
                    empty.push(location);
                }
            }
            Forgotten::new(catalog.store().as_ref(), catalog.tenant(), catalog.name())?
                .remove(&empty)
                .await?;
        }
        if let Some(checkpoints) = &checkpoints {
            let cleared = checkpoints.clear().await.map_err(MarkError::from)?;
            tracing::debug!(cleared, "checkpoints deleted");
        }
        progress.enter(Phase::Done);
        Ok(report)
    }
}

/// The table and view metadata files the retained histories of other catalogs name, by
/// [`FileIo::file_key`], with the catalog that names each.
#[derive(Debug)]
struct Foreign {
    histories: Vec<(String, Marks)>,
    locations: BTreeMap<String, String>,
}

impl Foreign {
    fn new(others: &[Catalog], now: Timestamp) -> Self {
        Self {
            histories: others
                .iter()
                .map(|c| (format!("{}/{}", c.tenant(), c.name()), Marks::new(now)))
                .collect(),
            locations: BTreeMap::new(),
        }
    }

    /// Walks what the other catalogs' histories gained since the last walk.
    async fn walk(
        &mut self,
        others: &[Catalog],
        io: &FileIo,
        progress: &SweepProgress,
    ) -> Result<(), MarkError> {
        for ((name, marks), catalog) in self.histories.iter_mut().zip(others) {
            marks.walk_history(catalog, progress).await?;
            for location in marks.named() {
                let key = io.file_key(location).unwrap_or_else(|_| location.clone());
                self.locations.entry(key).or_insert_with(|| name.clone());
            }
        }
        Ok(())
    }

    /// Why `folder` must be left alone, if another catalog holds a table or view there.
    fn reason(&self, folder: &str, io: &FileIo) -> Option<String> {
        let folder = io.file_key(folder).unwrap_or_else(|_| folder.to_owned());
        let prefix = format!("{}/", folder.trim_end_matches('/'));
        let (_, catalog) = self
            .locations
            .range(prefix.clone()..)
            .next()
            .filter(|(location, _)| location.starts_with(&prefix))?;
        Some(format!(
            "catalog `{catalog}`, which shares the warehouse, keeps a table or view here"
        ))
    }
}

/// Why the sweep must not list `directory`, if it must not.
fn skip_reason(
    directory: &Directory,
    missing_metadata: &[String],
    foreign: &Foreign,
    io: &FileIo,
    in_warehouse: impl Fn(&str) -> bool,
) -> Option<String> {
    if !in_warehouse(&directory.location) {
        return Some("outside the catalog's warehouse".to_owned());
    }
    let leaf = directory.location.rsplit('/').next().unwrap_or_default();
    if !leaf.ends_with(&format!("-{}", directory.uuid.simple())) {
        return Some(
            "a location chosen by a client, which may hold other tables' files".to_owned(),
        );
    }
    if let Some(reason) = foreign.reason(&directory.location, io) {
        return Some(reason);
    }
    let missing: Vec<&str> = directory
        .missing
        .iter()
        .map(String::as_str)
        .chain(
            missing_metadata
                .iter()
                .map(String::as_str)
                .filter(|m| is_inside(m, &directory.location)),
        )
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "its metadata names files that do not exist ({}): left as it is for recovery",
            missing.join(", ")
        )
    })
}

/// Whether `location` is strictly below the folder `folder`.
fn is_inside(location: &str, folder: &str) -> bool {
    location
        .strip_prefix(folder)
        .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> Foreign {
        Foreign::new(&[], Timestamp::now())
    }

    fn io() -> FileIo {
        FileIo::new(16 << 20)
    }

    fn directory(location: &str, uuid: uuid::Uuid) -> Directory {
        Directory {
            location: location.to_owned(),
            uuid,
            missing: Vec::new(),
        }
    }

    #[test]
    fn only_folders_the_catalog_named_are_swept() {
        let uuid = uuid::Uuid::new_v4();
        let anywhere = |_: &str| true;
        let own = format!("file:///w/ns/t-{}", uuid.simple());
        assert_eq!(
            skip_reason(&directory(&own, uuid), &[], &none(), &io(), anywhere),
            None
        );
        let chosen = skip_reason(
            &directory("file:///w/ns", uuid),
            &[],
            &none(),
            &io(),
            anywhere,
        )
        .unwrap();
        assert!(chosen.contains("chosen by a client"), "{chosen}");
        // Another table's folder is not this table's.
        let other = format!("file:///w/ns/t-{}", uuid::Uuid::new_v4().simple());
        assert!(skip_reason(&directory(&other, uuid), &[], &none(), &io(), anywhere).is_some());
        let outside = skip_reason(&directory(&own, uuid), &[], &none(), &io(), |_| false).unwrap();
        assert!(outside.contains("outside"), "{outside}");
    }

    #[test]
    fn folders_with_missing_files_are_left_alone() {
        let uuid = uuid::Uuid::new_v4();
        let own = format!("file:///w/t-{}", uuid.simple());
        let mut damaged = directory(&own, uuid);
        damaged.missing.push(format!("{own}/metadata/snap-1.avro"));
        let reason = skip_reason(&damaged, &[], &none(), &io(), |_| true).unwrap();
        assert!(reason.contains("snap-1.avro"), "{reason}");
        let lost = format!("{own}/metadata/00001-x.metadata.json");
        let reason =
            skip_reason(&directory(&own, uuid), &[lost], &none(), &io(), |_| true).unwrap();
        assert!(reason.contains("00001-x"), "{reason}");
        // A missing file of a folder that only starts with the same name is another's.
        let elsewhere = format!("{own}0/metadata/00001-x.metadata.json");
        assert_eq!(
            skip_reason(&directory(&own, uuid), &[elsewhere], &none(), &io(), |_| {
                true
            }),
            None
        );
    }

    #[test]
    fn folders_another_catalog_keeps_a_table_in_are_left_alone() {
        let uuid = uuid::Uuid::new_v4();
        let own = format!("file:///w/ns/t-{}", uuid.simple());
        let mut foreign = none();
        foreign.locations.insert(
            format!("{own}/metadata/00003-x.metadata.json"),
            "acme/other".to_owned(),
        );
        let reason = skip_reason(&directory(&own, uuid), &[], &foreign, &io(), |_| true).unwrap();
        assert!(reason.contains("acme/other"), "{reason}");
        // The same folder spelled as a path is the same folder.
        let path = own.strip_prefix("file://").unwrap();
        assert!(foreign.reason(path, &io()).is_some());
        // A folder whose name only starts the same is another.
        let sibling = format!("{own}0");
        assert_eq!(foreign.reason(&sibling, &io()), None);
        assert_eq!(foreign.reason("file:///w/ns/u", &io()), None);
    }
}
