//! Iceberg tables: entries of the catalog tree pointing at metadata files in the warehouse.
//!
//! A table commit reads the table's metadata at the branch head, checks the client's
//! requirements, applies its updates, writes a new metadata file and commits the new entry.
//! When another writer moved the branch meanwhile but did not touch this table, the same new
//! metadata is committed on top of it (no new file); when the table did change, requirements
//! are checked again against its new state.

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_refs::{RefQuery, Reference};
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{
    BackendError, Content, ContentId, ContentKey, ContentKind, Entry, ObjectId, Odb, ReadError,
    Timestamp,
};
use parking_lot::Mutex;

use crate::address::RefSpec;
use crate::catalog::{Catalog, ResolveError};
use crate::commit::{CommitError, CommitMeta, Committed, Edits, PlanFuture};
use crate::iceberg::io::next_table_metadata_location;
use crate::iceberg::{
    IoError, NewTable, RequirementFailed, TableMetadata, UpdateError, new_table_metadata,
};
use crate::namespace::{NamespaceError, ReadAtError, namespace_at, parent_location};
use crate::warehouse::{OutsideWarehouse, Warehouse};

/// Why a table operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("Table does not exist: {0}")]
    NotFound(ContentKey),
    #[error("namespace `{0}` does not exist")]
    NamespaceNotFound(ContentKey),
    #[error("`{key}` already exists (as {kind})")]
    AlreadyExists { key: ContentKey, kind: ContentKind },
    #[error(transparent)]
    RequirementFailed(#[from] RequirementFailed),
    #[error(transparent)]
    Update(#[from] UpdateError),
    #[error("catalog `{0}` has no warehouse to write table files to")]
    NoWarehouse(String),
    #[error(
        "cannot purge `{key}`: `{holder}` on {reference} keeps files under its location; drop that first, or drop without purge"
    )]
    LiveElsewhere {
        key: ContentKey,
        holder: ContentKey,
        reference: String,
    },
    #[error(
        "cannot purge `{key}`: its location `{location}` is not inside the warehouse, so its files are not the catalog's to delete; drop without purge"
    )]
    OutsideWarehouse { key: ContentKey, location: String },
    #[error("`{location}` is outside the catalog's warehouse `{root}`: tables live below it")]
    LocationOutsideWarehouse { location: String, root: String },
    #[error(transparent)]
    Namespace(NamespaceError),
    #[error(transparent)]
    Io(#[from] IoError),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

impl From<ReadAtError> for TableError {
    fn from(error: ReadAtError) -> Self {
        match error {
            ReadAtError::Resolve(e) => e.into(),
            ReadAtError::Namespace(e) => e.into(),
        }
    }
}

impl From<NamespaceError> for TableError {
    fn from(error: NamespaceError) -> Self {
        match error {
            NamespaceError::NotFound(key) | NamespaceError::NotANamespace(key) => {
                Self::NamespaceNotFound(key)
            }
            NamespaceError::Read(e) => Self::Read(e),
            other => Self::Namespace(other),
        }
    }
}

/// A table as read (or as created, for a staged create that is not committed yet).
#[derive(Debug, Clone)]
pub struct LoadedTable {
    pub key: ContentKey,
    pub content_id: ContentId,
    /// `None` for a staged table, which has no metadata file yet.
    pub metadata_location: Option<String>,
    pub metadata: Arc<TableMetadata>,
}

pub(crate) fn table_entry(content_id: ContentId, location: String, meta: &TableMetadata) -> Entry {
    Entry {
        content_id,
        content: Content::IcebergTable {
            metadata_location: location,
            snapshot_id: meta.current_snapshot_id,
            schema_id: meta.current_schema_id,
            spec_id: meta.default_spec_id,
            sort_order_id: meta.default_sort_order_id,
        },
    }
}

/// The table's metadata location in `entry`, or why the entry is no table.
pub(crate) fn metadata_location(
    key: &ContentKey,
    entry: Option<&Entry>,
) -> Result<String, TableError> {
    match entry.map(|e| &e.content) {
        Some(Content::IcebergTable {
            metadata_location, ..
        }) => Ok(metadata_location.clone()),
        _ => Err(TableError::NotFound(key.clone())),
    }
}

/// Fails when anything (table, view, namespace) already has this key.
fn ensure_free(key: &ContentKey, entry: Option<&Entry>) -> Result<(), TableError> {
    match entry {
        None => Ok(()),
        Some(e) => Err(TableError::AlreadyExists {
            key: key.clone(),
            kind: e.content.kind(),
        }),
    }
}

pub(crate) async fn ensure_namespace(
    odb: &Odb,
    tree: &ObjectId,
    key: &ContentKey,
) -> Result<(), TableError> {
    if let Some(namespace) = key.parent() {
        namespace_at(odb, tree, &namespace).await?;
    }
    Ok(())
}

pub(crate) fn now_ms() -> i64 {
    Timestamp::now().as_millis()
}

impl Catalog {
    /// The warehouse table files go to.
    pub fn warehouse(&self) -> Result<&Warehouse, TableError> {
        self.warehouse_ref()
            .ok_or_else(|| TableError::NoWarehouse(self.name().to_owned()))
    }

    /// Where a new table goes when the client names no location
    /// ([`Warehouse::default_location`]).
    pub async fn default_table_location(
        &self,
        tree: &ObjectId,
        key: &ContentKey,
        table_uuid: &uuid::Uuid,
    ) -> Result<String, TableError> {
        let base = parent_location(self.odb(), tree, key).await?;
        Ok(self
            .warehouse()?
            .default_location(base.as_deref(), key, table_uuid))
    }

    pub(crate) async fn read_table(
        &self,
        tree: &ObjectId,
        key: &ContentKey,
    ) -> Result<LoadedTable, TableError> {
        let entry = tree::get(self.odb(), tree, key).await?;
        let location = metadata_location(key, entry.as_ref())?;
        let metadata = self.warehouse()?.io.read_metadata(&location).await?;
        Ok(LoadedTable {
            key: key.clone(),
            content_id: entry.map_or_else(ContentId::new_random, |e| e.content_id),
            metadata_location: Some(location),
            metadata,
        })
    }

    /// The table `key` at a reference expression.
    #[tracing::instrument(level = "debug", skip(self), fields(catalog = %self.name()))]
    pub async fn load_table(
        &self,
        at: &RefSpec,
        key: &ContentKey,
    ) -> Result<LoadedTable, TableError> {
        let tree = self.tree_at(at).await?;
        self.read_table(&tree, key).await
    }

    /// Whether the table exists at a reference expression (without reading its metadata).
    pub async fn table_exists(&self, at: &RefSpec, key: &ContentKey) -> Result<bool, TableError> {
        let tree = self.tree_at(at).await?;
        let entry = tree::get(self.odb(), &tree, key).await?;
        Ok(matches!(
            entry.map(|e| e.content),
            Some(Content::IcebergTable { .. })
        ))
    }

    /// Tables directly in `namespace`, paged by key.
    pub async fn list_tables(
        &self,
        at: &RefSpec,
        namespace: &ContentKey,
        after: Option<&ContentKey>,
        limit: usize,
    ) -> Result<(Vec<ContentKey>, Option<ContentKey>), TableError> {
        let (found, next) = self
            .list_children(at, Some(namespace), ContentKind::IcebergTable, after, limit)
            .await?;
        Ok((found.into_iter().map(|(k, _)| k).collect(), next))
    }

    /// Metadata for a new table at `key` on `branch`, without committing it (a staged create,
    /// or the first step of a create). The namespace must exist and the name be free.
    pub async fn prepare_table(
        &self,
        branch: &Reference,
        key: &ContentKey,
        mut table: NewTable,
    ) -> Result<TableMetadata, TableError> {
        let head = self
            .store()
            .get_ref(self.odb().repo(), branch)
            .await?
            .ok_or_else(|| ResolveError::UnknownRef(branch.name.clone()))?;
        let tree = self.odb().commit(&head).await?.tree;
        ensure_namespace(self.odb(), &tree, key).await?;
        ensure_free(key, tree::get(self.odb(), &tree, key).await?.as_ref())?;
        let now = now_ms();
        let uuid = uuid::Uuid::new_v4();
        if table.location.is_empty() {
            table.location = self.default_table_location(&tree, key, &uuid).await?;
        }
        let mut metadata = new_table_metadata(table, now)?;
        metadata.table_uuid = uuid;
        Ok(metadata)
    }

    /// Creates a table: writes its first metadata file and commits its entry.
    #[tracing::instrument(level = "debug", skip(self, table, meta), fields(catalog = %self.name()))]
    pub async fn create_table(
        &self,
        branch: &Reference,
        key: &ContentKey,
        table: NewTable,
        meta: &CommitMeta,
    ) -> Result<(Committed, LoadedTable), CommitError<TableError>> {
        let metadata = Arc::new(
            self.prepare_table(branch, key, table)
                .await
                .map_err(CommitError::Rejected)?,
        );
        let location = next_table_metadata_location(&metadata, None);
        let warehouse = self.warehouse().map_err(CommitError::Rejected)?;
        warehouse
            .ensure_contains(&[&metadata.location, &location])
            .map_err(|e| CommitError::Rejected(e.into()))?;
        warehouse
            .io
            .write_metadata(&location, metadata.clone())
            .await
            .map_err(|e| CommitError::Rejected(e.into()))?;
        let entry = table_entry(ContentId::new_random(), location.clone(), &metadata);
        let committed = self
            .commit(
                branch,
                meta,
                |odb: Odb, tree: ObjectId| -> PlanFuture<TableError> {
                    let (key, entry) = (key.clone(), entry.clone());
                    Box::pin(async move {
                        ensure_namespace(&odb, &tree, &key).await?;
                        ensure_free(&key, tree::get(&odb, &tree, &key).await?.as_ref())?;
                        Ok(Edits::from([(key, Some(entry))]))
                    })
                },
            )
            .await?;
        Ok((
            committed,
            LoadedTable {
                key: key.clone(),
                content_id: entry.content_id,
                metadata_location: Some(location),
                metadata,
            },
        ))
    }

    /// Adds a table whose metadata file already exists (`register`), or points an existing
    /// table at it when `overwrite` is set.
    pub async fn register_table(
        &self,
        branch: &Reference,
        key: &ContentKey,
        metadata_location: &str,
        overwrite: bool,
        meta: &CommitMeta,
    ) -> Result<(Committed, LoadedTable), CommitError<TableError>> {
        let warehouse = self.warehouse().map_err(CommitError::Rejected)?;
        warehouse
            .ensure_contains(&[metadata_location])
            .map_err(|e| CommitError::Rejected(e.into()))?;
        let metadata = warehouse
            .io
            .read_metadata(metadata_location)
            .await
            .map_err(|e| CommitError::Rejected(e.into()))?;
        // A file the catalog did not write: every schema, spec and order is checked too.
        metadata.validate_deep().map_err(|reason| {
            CommitError::Rejected(TableError::Io(IoError::Parse {
                location: metadata_location.to_owned(),
                reason,
            }))
        })?;
        let location = metadata_location.to_owned();
        let content_id = Arc::new(Mutex::new(ContentId::new_random()));
        let metadata_for_plan = metadata.clone();
        let committed = self
            .commit(
                branch,
                meta,
                |odb: Odb, tree: ObjectId| -> PlanFuture<TableError> {
                    let (key, location, metadata) =
                        (key.clone(), location.clone(), metadata_for_plan.clone());
                    let content_id = content_id.clone();
                    Box::pin(async move {
                        ensure_namespace(&odb, &tree, &key).await?;
                        let existing = tree::get(&odb, &tree, &key).await?;
                        let id = match existing {
                            Some(Entry {
                                content_id,
                                content: Content::IcebergTable { .. },
                            }) if overwrite => content_id,
                            other => {
                                ensure_free(&key, other.as_ref())?;
                                ContentId::new_random()
                            }
                        };
                        *content_id.lock() = id;
                        let entry = table_entry(id, location, &metadata);
                        Ok(Edits::from([(key, Some(entry))]))
                    })
                },
            )
            .await?;
        let content_id = *content_id.lock();
        Ok((
            committed,
            LoadedTable {
                key: key.clone(),
                content_id,
                metadata_location: Some(metadata_location.to_owned()),
                metadata,
            },
        ))
    }

    /// Moves a table to another name (and namespace); its identity and files stay.
    pub async fn rename_table(
        &self,
        branch: &Reference,
        from: &ContentKey,
        to: &ContentKey,
        meta: &CommitMeta,
    ) -> Result<Committed, CommitError<TableError>> {
        self.commit(
            branch,
            meta,
            |odb: Odb, tree: ObjectId| -> PlanFuture<TableError> {
                let (from, to) = (from.clone(), to.clone());
                Box::pin(async move {
                    let entry = tree::get(&odb, &tree, &from).await?;
                    metadata_location(&from, entry.as_ref())?;
                    ensure_namespace(&odb, &tree, &to).await?;
                    ensure_free(&to, tree::get(&odb, &tree, &to).await?.as_ref())?;
                    Ok(Edits::from([(from, None), (to, entry)]))
                })
            },
        )
        .await
    }

    /// Drops table `key` from `branch`. With `purge`, also deletes its files, unless another
    /// branch or tag still holds the same table (its files are that ref's data too).
    #[tracing::instrument(level = "debug", skip(self, meta), fields(catalog = %self.name()))]
    pub async fn drop_table(
        &self,
        branch: &Reference,
        key: &ContentKey,
        purge: bool,
        meta: &CommitMeta,
    ) -> Result<Committed, CommitError<TableError>> {
        let dropped: Arc<Mutex<Option<Entry>>> = Arc::default();
        if purge {
            let check = async {
                let tree = self.tree_at(&RefSpec::Named(branch.name.clone())).await?;
                let table = self.read_table(&tree, key).await?;
                self.ensure_purgeable(branch, &tree, key, &table.metadata.location)
                    .await
            };
            check.await.map_err(CommitError::Rejected)?;
        }
        let committed = self
            .commit(
                branch,
                meta,
                |odb: Odb, tree: ObjectId| -> PlanFuture<TableError> {
                    let (key, dropped) = (key.clone(), dropped.clone());
                    Box::pin(async move {
                        let entry = tree::get(&odb, &tree, &key).await?;
                        metadata_location(&key, entry.as_ref())?;
                        *dropped.lock() = entry;
                        Ok(Edits::from([(key, None)]))
                    })
                },
            )
            .await?;
        let dropped = dropped.lock().take();
        if purge && let Some(entry) = dropped {
            self.purge_dropped(branch, key, &entry, &committed).await?;
        }
        Ok(committed)
    }

    /// Deletes the files of a table that the drop commit `committed` removed from `branch`,
    /// after checking again that nothing holds them: a branch or tag created from the old head
    /// between the first check and the drop still has the table, and its files are its data.
    /// The drop itself stands either way; files that are still held are kept.
    async fn purge_dropped(
        &self,
        branch: &Reference,
        key: &ContentKey,
        entry: &Entry,
        committed: &Committed,
    ) -> Result<(), CommitError<TableError>> {
        let location = metadata_location(key, Some(entry)).map_err(CommitError::Rejected)?;
        let warehouse = self.warehouse().map_err(CommitError::Rejected)?;
        let metadata = match warehouse.io.read_metadata(&location).await {
            Ok(metadata) => metadata,
            Err(e) => {
                tracing::warn!(table = %key, error = %e, "purge: cannot read metadata");
                return Ok(());
            }
        };
        let after = self
            .odb()
            .commit(&committed.commit)
            .await
            .map_err(|e| CommitError::Rejected(e.into()))?
            .tree;
        if let Err(e) = self
            .ensure_purgeable(branch, &after, key, &metadata.location)
            .await
        {
            tracing::warn!(table = %key, reason = %e, "purge: files kept, the table is still held");
            return Ok(());
        }
        let deleted = warehouse
            .io
            .delete_under(&metadata.location)
            .await
            .map_err(|e| CommitError::Rejected(e.into()))?;
        tracing::info!(table = %key, files = deleted, "purged table files");
        Ok(())
    }

    /// Fails unless deleting everything under `location` (table `key` on `branch`, whose tree
    /// is `ours`) loses nothing another table needs: the location must be inside the warehouse,
    /// and no table on any branch or tag (the same table elsewhere, a registered copy, a table
    /// nested below) may keep its metadata under it. Reads `ours` whole once, and of every
    /// other ref only what differs from it.
    async fn ensure_purgeable(
        &self,
        branch: &Reference,
        ours: &ObjectId,
        key: &ContentKey,
        location: &str,
    ) -> Result<(), TableError> {
        let root = format!("{}/", self.warehouse()?.root());
        let location = location.trim_end_matches('/');
        if !location.starts_with(&root) || location.len() <= root.len() {
            return Err(TableError::OutsideWarehouse {
                key: key.clone(),
                location: location.to_owned(),
            });
        }
        let under = format!("{location}/");
        let keeps_files = |entry: &Entry| match &entry.content {
            Content::IcebergTable {
                metadata_location, ..
            } => metadata_location.starts_with(&under),
            _ => false,
        };
        let holder = |holder: ContentKey, reference: &Reference| TableError::LiveElsewhere {
            key: key.clone(),
            holder,
            reference: reference.to_string(),
        };
        let mut range = KeyRange::all();
        loop {
            let page = tree::list(self.odb(), ours, &range, 1_000).await?;
            for (other, entry) in &page.entries {
                if other != key && keeps_files(entry) {
                    return Err(holder(other.clone(), branch));
                }
            }
            match page.next_after {
                Some(next) => range = range.after(&next),
                None => break,
            }
        }
        let mut query = RefQuery {
            limit: 100,
            ..RefQuery::default()
        };
        loop {
            let refs = self.store().list_refs(self.odb().repo(), &query).await?;
            for (reference, head) in &refs.refs {
                if reference == branch {
                    continue;
                }
                let theirs = self.odb().commit(head).await?.tree;
                // What both trees share was checked above, except the table itself.
                if let Some(entry) = tree::get(self.odb(), &theirs, key).await?
                    && keeps_files(&entry)
                {
                    return Err(holder(key.clone(), reference));
                }
                let mut range = KeyRange::all();
                loop {
                    let page = tree::diff(self.odb(), ours, &theirs, &range, 1_000).await?;
                    for change in &page.changes {
                        if change.after.as_ref().is_some_and(keeps_files) {
                            return Err(holder(change.key.clone(), reference));
                        }
                    }
                    match page.next_after {
                        Some(next) => range = range.after(&next),
                        None => break,
                    }
                }
            }
            match refs.next_after {
                Some(after) => query.after = Some(after),
                None => return Ok(()),
            }
        }
    }
}

/// Message and properties for a table operation's commit.
pub fn table_commit_meta(principal: &str, action: &str, key: &ContentKey) -> CommitMeta {
    CommitMeta {
        principal: principal.to_owned(),
        message: format!("{action} table {key}"),
        properties: BTreeMap::from([
            ("operation".to_owned(), format!("{action}-table")),
            ("table".to_owned(), key.to_string()),
        ]),
    }
}

impl From<OutsideWarehouse> for TableError {
    fn from(error: OutsideWarehouse) -> Self {
        Self::LocationOutsideWarehouse {
            location: error.location,
            root: error.root,
        }
    }
}
