//! The mark phase: every file that table and view metadata in the catalog's history names.
//!
//! History is every commit reachable from a branch or tag head or from any commit their ref
//! logs record (what `ref#<time>` can resolve to), within the ref's retention window, and every
//! other commit the catalog stores within its own window (what a bare hash can resolve to, even
//! once no ref reaches it: a deleted branch's, say). So the sweep keeps the files of every
//! commit a read may still name, and object collection keeps those commits. Each tree node is
//! read once however many commits share it, and each metadata file, manifest list and manifest
//! once however many tables and snapshots name it: they are immutable, so their paths are memo
//! keys.
//!
//! The stored commits past every window are walked too, but only to find the folders of tables
//! and views that no retained commit holds any more (dropped, or only ever on a deleted branch):
//! nothing they name is marked, so once such a folder's files are past the grace period they go.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use futures::StreamExt;
use pangolin_refs::Reference;
use pangolin_store::tree::NodeView;
use pangolin_store::{Content, Object, ObjectId, ObjectKind, Timestamp};

use crate::catalog::Catalog;
use crate::iceberg::io::IoError;
use crate::iceberg::json_io::read_json;
use crate::iceberg::manifest;
use crate::iceberg::{FileIo, ViewMetadata};
use crate::orphans::SweepProgress;
use crate::orphans::checkpoint::{Checkpoint, CheckpointError, Checkpoints};
use crate::orphans::named::TableFiles;
use crate::reach::{self, Reach, ReachError};

#[derive(Debug, thiserror::Error)]
pub enum MarkError {
    #[error(transparent)]
    History(#[from] ReachError),
    #[error(transparent)]
    Io(#[from] IoError),
    #[error("`{location}` is not a readable Iceberg file: {reason}")]
    Unreadable { location: String, reason: String },
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Records(#[from] crate::tenancy::records::RecordsError),
}

/// A folder that holds one table's or view's files.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Directory {
    pub location: String,
    /// The uuid of the table or view it belongs to.
    pub uuid: uuid::Uuid,
    /// Files its metadata names that do not exist (the first few), so the sweep leaves it be.
    pub missing: Vec<String>,
}

/// What the mark phase found so far; [`Marks::extend`] adds what history gained since.
#[derive(Debug)]
pub struct Marks {
    /// When the sweep began: retention windows end here.
    now: Timestamp,
    /// Retained commits walked, with the cutoff they were walked with.
    commits: HashMap<ObjectId, i64>,
    /// Stored commits read and found past every window: stale.
    outside: HashSet<ObjectId>,
    /// The tree nodes of retained commits.
    reach: Reach,
    /// The trees of stored commits no ref reaches that the window keeps: walked after those
    /// refs reach, and only as far as they are stored, since a commit a transfer left half
    /// stored (cut short, then given up) lacks some, and was never readable.
    loose: Vec<ObjectId>,
    /// The tree nodes of stored commits past every window, beyond those of retained ones.
    stale: Reach,
    /// Table and view metadata files met in history, not read yet.
    pending_tables: BTreeSet<String>,
    pending_views: BTreeSet<String>,
    /// Metadata files only stale commits name, not looked at yet.
    stale_tables: BTreeSet<String>,
    stale_views: BTreeSet<String>,
    /// Folders looked for among stale tables and views, as their metadata files' locations
    /// suggest: one metadata file read per folder is enough to learn its table.
    stale_folders: HashSet<String>,
    /// Every Iceberg file read, by location as written: the memo.
    read: HashSet<String>,
    /// Every file referenced, by [`FileIo::file_key`].
    marked: HashSet<String>,
    /// Table and view folders by location.
    pub directories: BTreeMap<String, Directory>,
    /// Metadata files history names that do not exist (a purged table's, say): which
    /// directory they were in is known only from their location.
    pub missing_metadata: Vec<String>,
    /// Folders found only through stale commits.
    pub forgotten: usize,
    /// What was marked since the last checkpoint, when checkpoints are kept.
    journal: Option<Checkpoint>,
    /// Folders found or changed since the last checkpoint.
    touched: BTreeSet<String>,
    /// Iceberg files a checkpoint says were read, so not read again.
    pub reads_resumed: usize,
    pub objects_read: u64,
    pub metadata_files_read: u64,
    pub manifest_lists_read: u64,
    pub manifests_read: u64,
}

/// How many missing files a directory keeps as examples.
const MISSING_SHOWN: usize = 3;

/// Commits read from the store at once.
const BATCH: usize = 256;

impl Marks {
    /// Marks of a sweep that began at `now`.
    pub fn new(now: Timestamp) -> Self {
        Self {
            now,
            commits: HashMap::new(),
            outside: HashSet::new(),
            reach: Reach::default(),
            loose: Vec::new(),
            stale: {
                // Stale commits are on their way out, and one a transfer left half stored
                // (cut short, then given up) lacks some of its trees: walk what is there.
                let mut stale = Reach::default();
                stale.set_lenient(true);
                stale
            },
            pending_tables: BTreeSet::new(),
            pending_views: BTreeSet::new(),
            stale_tables: BTreeSet::new(),
            stale_views: BTreeSet::new(),
            stale_folders: HashSet::new(),
            read: HashSet::new(),
            marked: HashSet::new(),
            directories: BTreeMap::new(),
            missing_metadata: Vec::new(),
            forgotten: 0,
            journal: None,
            touched: BTreeSet::new(),
            reads_resumed: 0,
            objects_read: 0,
            metadata_files_read: 0,
            manifest_lists_read: 0,
            manifests_read: 0,
        }
    }

    /// The folders of the tables and views that the stored commits past every window name,
    /// found without marking anything: what object collection records before it deletes
    /// those commits (see [`forgotten`](super::forgotten)). Some may be held by retained
    /// commits too.
    pub async fn stale_folders(
        catalog: &Catalog,
        io: &FileIo,
        progress: &SweepProgress,
    ) -> Result<Vec<Directory>, MarkError> {
        let mut marks = Self::new(Timestamp::now());
        marks.walk_history(catalog, progress).await?;
        marks.find_forgotten(catalog, io, progress).await?;
        Ok(marks.directories.into_values().collect())
    }

    /// Adds folders recorded before the commits naming them were collected; returns the
    /// locations of those no retained table or view holds.
    pub fn add_recorded(&mut self, recorded: impl IntoIterator<Item = Directory>) -> Vec<String> {
        let mut added = Vec::new();
        for folder in recorded {
            if !self.directories.contains_key(&folder.location) {
                added.push(folder.location.clone());
                self.directories.insert(folder.location.clone(), folder);
                self.forgotten += 1;
            }
        }
        added
    }

    /// When the sweep began.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Takes in what earlier runs of the sweep saved (see [`checkpoint`](super::checkpoint)).
    pub fn restore(&mut self, saved: Checkpoint) {
        self.reads_resumed += saved.read.len();
        self.read.extend(saved.read);
        self.marked.extend(saved.marked);
        for directory in saved.directories {
            self.directories
                .insert(directory.location.clone(), directory);
        }
        self.missing_metadata.extend(saved.missing_metadata);
    }

    /// From now on, notes what is marked, for [`take_checkpoint`](Self::take_checkpoint).
    pub fn keep_checkpoints(&mut self) {
        self.journal = Some(Checkpoint {
            started_ms: self.now.as_millis(),
            ..Checkpoint::default()
        });
    }

    /// What was marked since the last call, if anything was and checkpoints are kept.
    pub fn take_checkpoint(&mut self) -> Option<Checkpoint> {
        let journal = self.journal.as_mut()?;
        let mut taken = std::mem::replace(
            journal,
            Checkpoint {
                started_ms: journal.started_ms,
                ..Checkpoint::default()
            },
        );
        taken.directories = std::mem::take(&mut self.touched)
            .into_iter()
            .filter_map(|location| self.directories.get(&location).cloned())
            .collect();
        (!taken.is_empty()).then_some(taken)
    }

    /// Saves a checkpoint when one is due.
    async fn save_if_due(
        &mut self,
        checkpoints: &mut Option<&mut Checkpoints>,
    ) -> Result<(), MarkError> {
        let Some(checkpoints) = checkpoints else {
            return Ok(());
        };
        if !checkpoints.due() {
            return Ok(());
        }
        if let Some(checkpoint) = self.take_checkpoint() {
            checkpoints.save(&checkpoint).await?;
        }
        Ok(())
    }

    /// Notes `location` as read; whether it was not before.
    fn note_read(&mut self, location: &str) -> bool {
        let new = self.read.insert(location.to_owned());
        if let Some(journal) = self.journal.as_mut().filter(|_| new) {
            journal.read.push(location.to_owned());
        }
        new
    }

    fn note_missing_metadata(&mut self, location: &str) {
        self.missing_metadata.push(location.to_owned());
        if let Some(journal) = &mut self.journal {
            journal.missing_metadata.push(location.to_owned());
        }
    }

    /// How many retained commits were walked.
    pub fn commits(&self) -> usize {
        self.commits.len()
    }

    pub fn is_marked(&self, file_key: &str) -> bool {
        self.marked.contains(file_key)
    }

    pub fn marked(&self) -> usize {
        self.marked.len()
    }

    /// Walks what history holds now, beyond what was walked before, marks the files of every
    /// table and view metadata file met for the first time, and finds the folders of tables
    /// and views only stale commits hold.
    /// `checkpoints`: where to save what was marked, between tables, when a save is due.
    pub async fn extend(
        &mut self,
        catalog: &Catalog,
        io: &FileIo,
        progress: &SweepProgress,
        mut checkpoints: Option<&mut Checkpoints>,
    ) -> Result<(), MarkError> {
        self.walk_history(catalog, progress).await?;
        let tables: Vec<String> = std::mem::take(&mut self.pending_tables)
            .into_iter()
            .collect();
        for chunk in tables.chunks(CHUNK) {
            let before = (self.metadata_files_read, self.manifests_read);
            self.mark_tables(io, chunk).await?;
            progress.add(
                &progress.metadata_files_read,
                (self.metadata_files_read - before.0) as usize,
            );
            progress.add(
                &progress.manifests_read,
                (self.manifests_read - before.1) as usize,
            );
            progress.set(&progress.referenced, self.marked.len());
            self.save_if_due(&mut checkpoints).await?;
        }
        for location in std::mem::take(&mut self.pending_views) {
            let before = self.metadata_files_read;
            self.mark_view(io, &location).await?;
            progress.add(
                &progress.metadata_files_read,
                (self.metadata_files_read - before) as usize,
            );
        }
        progress.set(&progress.referenced, self.marked.len());
        self.find_forgotten(catalog, io, progress).await?;
        self.save_if_due(&mut checkpoints).await
    }

    /// Walks the retained commits and their trees beyond what was walked before, noting every
    /// table and view metadata file met (see [`named`](Self::named)) without reading any.
    pub async fn walk_history(
        &mut self,
        catalog: &Catalog,
        progress: &SweepProgress,
    ) -> Result<(), MarkError> {
        self.walk_commits(catalog, progress).await?;
        let mut met = drain(
            catalog,
            &mut self.reach,
            None,
            &mut self.objects_read,
            progress,
        )
        .await?;
        self.reach.set_lenient(true);
        for tree in std::mem::take(&mut self.loose) {
            self.reach.push(tree);
        }
        let loose = drain(
            catalog,
            &mut self.reach,
            None,
            &mut self.objects_read,
            progress,
        )
        .await;
        self.reach.set_lenient(false);
        met.extend(loose?);
        for (location, view) in met {
            if !self.read.contains(&location) {
                let pending = if view {
                    &mut self.pending_views
                } else {
                    &mut self.pending_tables
                };
                pending.insert(location);
            }
        }
        tracing::info!(
            commits = self.commits.len(),
            objects = self.objects_read,
            tables = self.pending_tables.len(),
            views = self.pending_views.len(),
            "history walked"
        );
        Ok(())
    }

    /// The table and view metadata files retained history names that were not read: after
    /// [`walk_history`](Self::walk_history) alone, every one it met.
    pub fn named(&self) -> impl Iterator<Item = &String> {
        self.pending_tables.iter().chain(&self.pending_views)
    }

    /// Reads one metadata file of each folder only stale commits name, to register the folder
    /// (marking nothing) unless a retained table or view has it already.
    async fn find_forgotten(
        &mut self,
        catalog: &Catalog,
        io: &FileIo,
        progress: &SweepProgress,
    ) -> Result<(), MarkError> {
        let met = drain(
            catalog,
            &mut self.stale,
            Some(&self.reach),
            &mut self.objects_read,
            progress,
        )
        .await?;
        for (location, view) in met {
            let stale = if view {
                &mut self.stale_views
            } else {
                &mut self.stale_tables
            };
            stale.insert(location);
        }
        let tables = std::mem::take(&mut self.stale_tables);
        let views = std::mem::take(&mut self.stale_views);
        let stale = tables
            .into_iter()
            .map(|location| (location, false))
            .chain(views.into_iter().map(|location| (location, true)));
        for (location, view) in stale {
            if self.read.contains(&location) {
                continue;
            }
            let folder = location
                .rsplit_once("/metadata/")
                .map_or(location.as_str(), |(folder, _)| folder);
            if self.directories.contains_key(folder)
                || !self.stale_folders.insert(folder.to_owned())
            {
                continue;
            }
            let found = if view {
                read_json::<ViewMetadata>(io, &location)
                    .await
                    .map(|v| (v.location, v.view_uuid))
            } else {
                read_json::<TableFiles>(io, &location)
                    .await
                    .map(|t| (t.location, t.table_uuid))
            };
            match found {
                Ok((folder, uuid)) => {
                    self.metadata_files_read += 1;
                    progress.add(&progress.metadata_files_read, 1);
                    let known = self.directories.len();
                    self.directory(&folder, uuid);
                    self.forgotten += self.directories.len() - known;
                }
                // Gone (purged) or not a table any more: no folder to learn from it.
                Err(IoError::NotFound(_) | IoError::Parse { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Finds the retained commits not walked yet and queues their trees: every head of a
    /// branch or tag, every commit a ref's log records within its window, and their ancestors
    /// within the window (all of them without a policy); then every other stored commit within
    /// the catalog's window. Ancestors are never newer than their descendants, so a walk stops
    /// at the first commit past the window.
    async fn walk_commits(
        &mut self,
        catalog: &Catalog,
        progress: &SweepProgress,
    ) -> Result<(), MarkError> {
        let store = catalog.store().as_ref();
        let repo = catalog.odb().repo();
        let mut roots = Vec::new();
        for (reference, head) in reach::all_refs(store, repo)
            .await
            .map_err(ReachError::from)?
        {
            let cutoff = self.cutoff(catalog, &reference);
            let mut ids = vec![head];
            for (logged, time) in reach::logged_heads(store, repo, &reference)
                .await
                .map_err(ReachError::from)?
            {
                if time.as_millis() >= cutoff {
                    ids.push(logged);
                }
            }
            roots.push((cutoff, ids));
        }
        // What a fetch brought may name files of a warehouse this catalog shares with its
        // remote; until it is fetched past, all of its history counts.
        let tracking = crate::remotes::tracking_heads(catalog).await?;
        if !tracking.is_empty() {
            roots.push((i64::MIN, tracking));
        }
        // The longest window first, so a commit walked once needs no second walk.
        roots.sort_by_key(|(cutoff, _)| *cutoff);
        for (cutoff, ids) in roots {
            let mut frontier: Vec<(ObjectId, bool)> =
                ids.into_iter().map(|id| (id, true)).collect();
            while !frontier.is_empty() {
                let at = frontier.len().saturating_sub(BATCH);
                let batch: Vec<(ObjectId, bool)> = frontier
                    .split_off(at)
                    .into_iter()
                    .filter(|(id, _)| self.commits.get(id).is_none_or(|walked| *walked > cutoff))
                    .collect();
                if batch.is_empty() {
                    continue;
                }
                let ids: Vec<ObjectId> = batch.iter().map(|(id, _)| *id).collect();
                let found = store.get_many(repo, &ids).await.map_err(ReachError::from)?;
                self.objects_read += ids.len() as u64;
                progress.add(&progress.objects_read, ids.len());
                for ((id, root), raw) in batch.into_iter().zip(found) {
                    let raw = raw.ok_or(ReachError::Missing(id))?;
                    let corrupt = |reason: String| ReachError::Corrupt { id, reason };
                    let Object::Commit(commit) =
                        Object::decode(&raw).map_err(|e| corrupt(e.to_string()))?
                    else {
                        return Err(
                            corrupt("a ref or a parent names a tree node".to_owned()).into()
                        );
                    };
                    if !root && commit.time.as_millis() < cutoff {
                        continue;
                    }
                    self.commits.insert(id, cutoff);
                    self.reach.push(commit.tree);
                    frontier.extend(commit.parents.iter().map(|p| (*p, false)));
                }
            }
        }

        // Every other commit stored within the catalog's window. Each is listed itself, so
        // none needs its ancestors walked. The rest are stale.
        let since = catalog
            .retention()
            .map(|policy| policy.catalog_cutoff(self.now).as_millis());
        let unread: Vec<ObjectId> =
            reach::stored_objects(store, repo, Some(ObjectKind::Commit), |_| {})
                .await
                .map_err(ReachError::from)?
                .into_iter()
                .map(|(id, _)| id)
                .filter(|id| !self.commits.contains_key(id) && !self.outside.contains(id))
                .collect();
        self.objects_read += unread.len() as u64;
        progress.add(&progress.objects_read, unread.len());
        for (id, commit) in reach::read_commits(store, repo, &unread).await? {
            if since.is_none_or(|since| commit.time.as_millis() >= since) {
                self.commits.insert(id, since.unwrap_or(i64::MIN));
                self.loose.push(commit.tree);
            } else {
                self.outside.insert(id);
                self.stale.push(commit.tree);
            }
        }
        Ok(())
    }

    /// The oldest commit time `reference`'s history keeps (`i64::MIN`: all of it).
    fn cutoff(&self, catalog: &Catalog, reference: &Reference) -> i64 {
        catalog.retention().map_or(i64::MIN, |policy| {
            policy.cutoff(reference, self.now).as_millis()
        })
    }

    fn mark(&mut self, io: &FileIo, location: &str) -> Result<(), MarkError> {
        let key = io.file_key(location)?;
        if let Some(journal) = &mut self.journal
            && !self.marked.contains(&key)
        {
            journal.marked.push(key.clone());
        }
        self.marked.insert(key);
        Ok(())
    }

    /// Marks a metadata file and everything it names.
    /// Marks the table metadata files at `locations` and everything they name, each read once
    /// across the whole mark: the metadata files, then their new manifest lists, then the new
    /// manifests, [`READS`] reads at a time (on an object store each is a round trip).
    async fn mark_tables(&mut self, io: &FileIo, locations: &[String]) -> Result<(), MarkError> {
        let mut fresh = Vec::new();
        for location in locations {
            if self.note_read(location) {
                self.mark(io, location)?;
                fresh.push((location.clone(), ()));
            }
        }
        // Lists and manifests not read yet, with the folder of the table naming them.
        let mut lists = Vec::new();
        let mut manifests = Vec::new();
        let mut fetched = fetch(io, fresh);
        while let Some((location, (), bytes)) = fetched.next().await {
            let bytes = match bytes {
                Ok(bytes) => bytes,
                Err(IoError::NotFound(_)) => {
                    self.note_missing_metadata(&location);
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let metadata: TableFiles =
                serde_json::from_slice(&bytes).map_err(|e| IoError::Parse {
                    location: location.clone(),
                    reason: e.to_string(),
                })?;
            self.metadata_files_read += 1;
            let directory = self.directory(&metadata.location, metadata.table_uuid);
            for file in metadata.referenced() {
                self.mark(io, file)?;
            }
            for snapshot in &metadata.snapshots {
                let Some(list) = &snapshot.manifest_list else {
                    // v1's inline list of manifests.
                    for path in &snapshot.manifests {
                        self.mark(io, path)?;
                        if self.note_read(path) {
                            manifests.push((path.clone(), directory.clone()));
                        }
                    }
                    continue;
                };
                self.mark(io, list)?;
                if self.note_read(list) {
                    lists.push((list.clone(), directory.clone()));
                }
            }
        }
        drop(fetched);
        let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut fetched = fetch(io, lists);
        while let Some((list, directory, bytes)) = fetched.next().await {
            let Some(bytes) = found(bytes, &list, &directory, &mut missing)? else {
                continue;
            };
            self.manifest_lists_read += 1;
            let paths =
                manifest::manifest_paths(&bytes).map_err(|reason| MarkError::Unreadable {
                    location: list.clone(),
                    reason,
                })?;
            for path in paths {
                self.mark(io, &path)?;
                if self.note_read(&path) {
                    manifests.push((path, directory.clone()));
                }
            }
        }
        drop(fetched);
        let mut fetched = fetch(io, manifests);
        while let Some((path, directory, bytes)) = fetched.next().await {
            let Some(bytes) = found(bytes, &path, &directory, &mut missing)? else {
                continue;
            };
            self.manifests_read += 1;
            let files =
                manifest::content_file_paths(&bytes).map_err(|reason| MarkError::Unreadable {
                    location: path.clone(),
                    reason,
                })?;
            for file in files {
                self.mark(io, &file)?;
            }
        }
        drop(fetched);
        for (directory, files) in missing {
            if let Some(folder) = self.directories.get_mut(&directory) {
                folder.missing.extend(files);
                folder.missing.truncate(MISSING_SHOWN);
                if self.journal.is_some() {
                    self.touched.insert(directory);
                }
            }
        }
        Ok(())
    }

    async fn mark_view(&mut self, io: &FileIo, location: &str) -> Result<(), MarkError> {
        if !self.note_read(location) {
            return Ok(());
        }
        self.mark(io, location)?;
        match read_json::<ViewMetadata>(io, location).await {
            Ok(view) => {
                self.metadata_files_read += 1;
                self.directory(&view.location, view.view_uuid);
                Ok(())
            }
            Err(IoError::NotFound(_)) => {
                self.note_missing_metadata(location);
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The key of the directory at `location`, added if new.
    fn directory(&mut self, location: &str, uuid: uuid::Uuid) -> String {
        let location = location.trim_end_matches('/').to_owned();
        if !self.directories.contains_key(&location) {
            self.directories.insert(
                location.clone(),
                Directory {
                    location: location.clone(),
                    uuid,
                    missing: Vec::new(),
                },
            );
            if self.journal.is_some() {
                self.touched.insert(location.clone());
            }
        }
        location
    }
}

/// Iceberg files read at once.
const READS: usize = 16;

/// Table metadata files marked between two chances to save a checkpoint (so at most this
/// many are read again when a sweep resumes).
const CHUNK: usize = 16;

/// The files at the locations of `items`, read [`READS`] at a time, in order, each with what
/// came with it.
fn fetch<T: Send + 'static>(
    io: &FileIo,
    items: Vec<(String, T)>,
) -> impl futures::Stream<Item = (String, T, Result<bytes::Bytes, IoError>)> + '_ {
    futures::stream::iter(items)
        .map(move |(location, with)| async move {
            let bytes = io.read_bytes(&location).await;
            (location, with, bytes)
        })
        .buffered(READS)
}

/// The bytes read, or `None` for a file that does not exist (noted in `missing` under the
/// folder `directory`).
fn found(
    bytes: Result<bytes::Bytes, IoError>,
    location: &str,
    directory: &str,
    missing: &mut BTreeMap<String, Vec<String>>,
) -> Result<Option<bytes::Bytes>, MarkError> {
    match bytes {
        Ok(bytes) => Ok(Some(bytes)),
        Err(IoError::NotFound(_)) => {
            missing
                .entry(directory.to_owned())
                .or_default()
                .push(location.to_owned());
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// Walks `reach` to its end, never into what `known` holds, counting the objects read; the
/// table and view metadata files the tree leaves met name (`true`: a view's).
async fn drain(
    catalog: &Catalog,
    reach: &mut Reach,
    known: Option<&Reach>,
    objects_read: &mut u64,
    progress: &SweepProgress,
) -> Result<Vec<(String, bool)>, MarkError> {
    let store = catalog.store().as_ref();
    let repo = catalog.odb().repo();
    let mut met = Vec::new();
    loop {
        let batch = reach.next_beyond(store, repo, known).await?;
        if batch.is_empty() {
            return Ok(met);
        }
        *objects_read += batch.len() as u64;
        progress.add(&progress.objects_read, batch.len());
        for (_, object) in &batch {
            met.extend(
                metadata_files(object)
                    .into_iter()
                    .map(|(location, view)| (location.to_owned(), view)),
            );
        }
    }
}

/// The table and view metadata files a tree leaf names (`true`: a view's).
fn metadata_files(object: &Object) -> Vec<(&str, bool)> {
    let Object::Tree(node) = object else {
        return Vec::new();
    };
    let NodeView::Leaf { entries } = node.view() else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|(_, entry)| match &entry.content {
            Content::IcebergTable {
                metadata_location, ..
            } => Some((metadata_location.as_str(), false)),
            Content::IcebergView {
                metadata_location, ..
            } => Some((metadata_location.as_str(), true)),
            _ => None,
        })
        .collect()
}
