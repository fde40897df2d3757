//! Iceberg views: entries of the catalog tree pointing at view metadata files in the warehouse.
//!
//! Views work like tables: creating one writes its first metadata file and commits an entry
//! naming it; replacing one (a commit of requirements and updates) reads the view at the branch
//! head, checks the requirements, applies the updates, writes the next metadata file and commits
//! the new entry. When another writer moved the branch meanwhile but did not touch this view,
//! the same file is committed on top of it; when the view did change, the requirements are
//! checked again against its new state. Tables and views share one name space.

use std::collections::BTreeMap;
use std::sync::Arc;

use pangolin_refs::Reference;
use pangolin_store::tree;
use pangolin_store::{
    BackendError, Content, ContentId, ContentKey, ContentKind, Entry, ObjectId, Odb, ReadError,
    Timestamp,
};
use parking_lot::Mutex;

use crate::address::RefSpec;
use crate::catalog::{Catalog, ResolveError};
use crate::commit::{CommitError, CommitMeta, Committed, Edits, PlanFuture};
use crate::iceberg::io::next_metadata_location;
use crate::iceberg::json_io::{read_json, write_json};
use crate::iceberg::{
    IoError, NewView, RequirementFailed, ViewMetadata, ViewMetadataBuilder, ViewRequirement,
    ViewUpdate, ViewUpdateError, new_view_metadata,
};
use crate::namespace::{NamespaceError, ReadAtError, namespace_at, parent_location};
use crate::warehouse::{OutsideWarehouse, Warehouse};

/// Why a view operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("view `{0}` does not exist")]
    NotFound(ContentKey),
    #[error("namespace `{0}` does not exist")]
    NamespaceNotFound(ContentKey),
    #[error("`{key}` already exists (as {kind})")]
    AlreadyExists { key: ContentKey, kind: ContentKind },
    #[error(transparent)]
    RequirementFailed(#[from] RequirementFailed),
    #[error(transparent)]
    Update(#[from] ViewUpdateError),
    #[error("`{location}` is not valid view metadata: {reason}")]
    InvalidMetadata { location: String, reason: String },
    #[error("catalog `{0}` has no warehouse to write view files to")]
    NoWarehouse(String),
    #[error("`{location}` is outside the catalog's warehouse `{root}`: views live below it")]
    OutsideWarehouse { location: String, root: String },
    #[error(transparent)]
    Namespace(NamespaceError),
    #[error(transparent)]
    Io(IoError),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

impl From<OutsideWarehouse> for ViewError {
    fn from(error: OutsideWarehouse) -> Self {
        Self::OutsideWarehouse {
            location: error.location,
            root: error.root,
        }
    }
}

impl From<ReadAtError> for ViewError {
    fn from(error: ReadAtError) -> Self {
        match error {
            ReadAtError::Resolve(e) => e.into(),
            ReadAtError::Namespace(e) => e.into(),
        }
    }
}

impl From<NamespaceError> for ViewError {
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

impl From<IoError> for ViewError {
    fn from(error: IoError) -> Self {
        match error {
            IoError::Parse { location, reason } => Self::InvalidMetadata { location, reason },
            other => Self::Io(other),
        }
    }
}

/// A view as read or written.
#[derive(Debug, Clone)]
pub struct LoadedView {
    pub key: ContentKey,
    pub content_id: ContentId,
    pub metadata_location: String,
    pub metadata: Arc<ViewMetadata>,
}

fn view_entry(content_id: ContentId, location: String, meta: &ViewMetadata) -> Entry {
    Entry {
        content_id,
        content: Content::IcebergView {
            metadata_location: location,
            version_id: meta.current_version_id,
        },
    }
}

/// The view's metadata location in `entry`, or why the entry is no view.
fn metadata_location(key: &ContentKey, entry: Option<&Entry>) -> Result<String, ViewError> {
    match entry.map(|e| &e.content) {
        Some(Content::IcebergView {
            metadata_location, ..
        }) => Ok(metadata_location.clone()),
        _ => Err(ViewError::NotFound(key.clone())),
    }
}

/// Fails when anything (view, table, namespace) already has this key.
fn ensure_free(key: &ContentKey, entry: Option<&Entry>) -> Result<(), ViewError> {
    match entry {
        None => Ok(()),
        Some(e) => Err(ViewError::AlreadyExists {
            key: key.clone(),
            kind: e.content.kind(),
        }),
    }
}

async fn ensure_namespace(odb: &Odb, tree: &ObjectId, key: &ContentKey) -> Result<(), ViewError> {
    if let Some(namespace) = key.parent() {
        namespace_at(odb, tree, &namespace).await?;
    }
    Ok(())
}

/// The view metadata at `location`, checked whole.
async fn read_view_file(warehouse: &Warehouse, location: &str) -> Result<ViewMetadata, ViewError> {
    warehouse.ensure_contains(&[location])?;
    let metadata: ViewMetadata = read_json(&warehouse.io, location).await?;
    metadata
        .validate()
        .map_err(|reason| ViewError::InvalidMetadata {
            location: location.to_owned(),
            reason,
        })?;
    Ok(metadata)
}

/// What a replace wrote on an earlier attempt, reusable while the view is unchanged.
#[derive(Debug, Clone)]
struct Prepared {
    base: String,
    location: String,
    metadata: Arc<ViewMetadata>,
    entry: Entry,
}

impl Catalog {
    fn view_warehouse(&self) -> Result<&Warehouse, ViewError> {
        self.warehouse_ref()
            .ok_or_else(|| ViewError::NoWarehouse(self.name().to_owned()))
    }

    /// Where a new view goes when the client names no location, as for tables: below its
    /// namespace's `location` property if set, else below the warehouse root, in a directory
    /// named after the view and its uuid.
    async fn default_view_location(
        &self,
        tree: &ObjectId,
        key: &ContentKey,
        view_uuid: &uuid::Uuid,
    ) -> Result<String, ViewError> {
        let base = parent_location(self.odb(), tree, key).await?;
        Ok(self
            .view_warehouse()?
            .default_location(base.as_deref(), key, view_uuid))
    }

    async fn read_view(&self, tree: &ObjectId, key: &ContentKey) -> Result<LoadedView, ViewError> {
        let entry = tree::get(self.odb(), tree, key).await?;
        let location = metadata_location(key, entry.as_ref())?;
        let metadata = read_view_file(self.view_warehouse()?, &location).await?;
        Ok(LoadedView {
            key: key.clone(),
            content_id: entry.map_or_else(ContentId::new_random, |e| e.content_id),
            metadata_location: location,
            metadata: Arc::new(metadata),
        })
    }

    /// The view `key` at a reference expression.
    #[tracing::instrument(level = "debug", skip(self), fields(catalog = %self.name()))]
    pub async fn load_view(&self, at: &RefSpec, key: &ContentKey) -> Result<LoadedView, ViewError> {
        let tree = self.tree_at(at).await?;
        self.read_view(&tree, key).await
    }

    /// Whether the view exists at a reference expression (without reading its metadata).
    pub async fn view_exists(&self, at: &RefSpec, key: &ContentKey) -> Result<bool, ViewError> {
        let tree = self.tree_at(at).await?;
        let entry = tree::get(self.odb(), &tree, key).await?;
        Ok(matches!(
            entry.map(|e| e.content),
            Some(Content::IcebergView { .. })
        ))
    }

    /// Views directly in `namespace`, paged by key.
    pub async fn list_views(
        &self,
        at: &RefSpec,
        namespace: &ContentKey,
        after: Option<&ContentKey>,
        limit: usize,
    ) -> Result<(Vec<ContentKey>, Option<ContentKey>), ViewError> {
        let (found, next) = self
            .list_children(at, Some(namespace), ContentKind::IcebergView, after, limit)
            .await?;
        Ok((found.into_iter().map(|(k, _)| k).collect(), next))
    }

    /// Creates a view: writes its first metadata file and commits its entry. The namespace
    /// must exist and the name be free of tables and views alike.
    #[tracing::instrument(level = "debug", skip(self, view, meta), fields(catalog = %self.name()))]
    pub async fn create_view(
        &self,
        branch: &Reference,
        key: &ContentKey,
        mut view: NewView,
        meta: &CommitMeta,
    ) -> Result<(Committed, LoadedView), CommitError<ViewError>> {
        let prepare = async {
            let warehouse = self.view_warehouse()?;
            let head = self
                .store()
                .get_ref(self.odb().repo(), branch)
                .await?
                .ok_or_else(|| ResolveError::UnknownRef(branch.name.clone()))?;
            let tree = self.odb().commit(&head).await?.tree;
            ensure_namespace(self.odb(), &tree, key).await?;
            ensure_free(key, tree::get(self.odb(), &tree, key).await?.as_ref())?;
            let uuid = uuid::Uuid::new_v4();
            if view.location.is_empty() {
                view.location = self.default_view_location(&tree, key, &uuid).await?;
            }
            let metadata = Arc::new(new_view_metadata(view, uuid, now_ms())?);
            let location = next_metadata_location(&metadata.location, None);
            warehouse.ensure_contains(&[&metadata.location, &location])?;
            write_json(&warehouse.io, &location, metadata.as_ref()).await?;
            Ok::<_, ViewError>((location, metadata))
        };
        let (location, metadata) = prepare.await.map_err(CommitError::Rejected)?;
        let entry = view_entry(ContentId::new_random(), location.clone(), &metadata);
        let committed = self
            .commit(
                branch,
                meta,
                |odb: Odb, tree: ObjectId| -> PlanFuture<ViewError> {
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
            LoadedView {
                key: key.clone(),
                content_id: entry.content_id,
                metadata_location: location,
                metadata,
            },
        ))
    }

    /// Applies a client's commit to view `key` on `branch` (a replace, or any other change):
    /// requirements checked against the view at the head, updates applied, the next metadata
    /// file written. A commit without updates checks the requirements and changes nothing.
    #[tracing::instrument(level = "debug", skip(self, requirements, updates, meta), fields(catalog = %self.name()))]
    pub async fn replace_view(
        &self,
        branch: &Reference,
        key: &ContentKey,
        requirements: Vec<ViewRequirement>,
        updates: Vec<ViewUpdate>,
        meta: &CommitMeta,
    ) -> Result<(Committed, LoadedView), CommitError<ViewError>> {
        let warehouse = self
            .view_warehouse()
            .map_err(CommitError::Rejected)?
            .clone();
        if updates.is_empty() {
            let check = async {
                let resolved = self.resolve(&RefSpec::Named(branch.name.clone())).await?;
                let tree = self.odb().commit(&resolved.commit).await?.tree;
                let view = self.read_view(&tree, key).await?;
                for requirement in &requirements {
                    requirement.check(&view.metadata)?;
                }
                Ok::<_, ViewError>((resolved.commit, view))
            };
            let (head, view) = check.await.map_err(CommitError::Rejected)?;
            let unchanged = Committed {
                commit: head,
                parent: head,
                attempts: 0,
            };
            return Ok((unchanged, view));
        }
        let prepared: Arc<Mutex<Option<Prepared>>> = Arc::default();
        let (requirements, updates) = (Arc::new(requirements), Arc::new(updates));
        let committed = self
            .commit_claiming(
                branch,
                meta,
                std::slice::from_ref(key),
                |odb: Odb, tree: ObjectId| -> PlanFuture<ViewError> {
                    let (key, warehouse, prepared) =
                        (key.clone(), warehouse.clone(), prepared.clone());
                    let (requirements, updates) = (requirements.clone(), updates.clone());
                    Box::pin(async move {
                        let entry = tree::get(&odb, &tree, &key).await?;
                        let base_location = metadata_location(&key, entry.as_ref())?;
                        // The view is as it was when this change was prepared: reuse the file.
                        if let Some(p) = prepared.lock().as_ref()
                            && p.base == base_location
                        {
                            return Ok(Edits::from([(key, Some(p.entry.clone()))]));
                        }
                        let base = read_view_file(&warehouse, &base_location).await?;
                        for requirement in requirements.iter() {
                            requirement.check(&base)?;
                        }
                        let mut builder = ViewMetadataBuilder::new(base);
                        builder.apply_all(&updates, now_ms())?;
                        let metadata = Arc::new(builder.build()?);
                        let location =
                            next_metadata_location(&metadata.location, Some(&base_location));
                        warehouse.ensure_contains(&[&metadata.location, &location])?;
                        write_json(&warehouse.io, &location, metadata.as_ref()).await?;
                        let content_id = entry.map_or_else(ContentId::new_random, |e| e.content_id);
                        let entry = view_entry(content_id, location.clone(), &metadata);
                        *prepared.lock() = Some(Prepared {
                            base: base_location,
                            location,
                            metadata,
                            entry: entry.clone(),
                        });
                        Ok(Edits::from([(key, Some(entry))]))
                    })
                },
            )
            .await?;
        let Some(p) = prepared.lock().take() else {
            return Err(CommitError::Rejected(ViewError::NotFound(key.clone())));
        };
        Ok((
            committed,
            LoadedView {
                key: key.clone(),
                content_id: p.entry.content_id,
                metadata_location: p.location,
                metadata: p.metadata,
            },
        ))
    }

    /// Adds a view whose metadata file already exists.
    pub async fn register_view(
        &self,
        branch: &Reference,
        key: &ContentKey,
        metadata_location: &str,
        meta: &CommitMeta,
    ) -> Result<(Committed, LoadedView), CommitError<ViewError>> {
        let read = async { read_view_file(self.view_warehouse()?, metadata_location).await };
        let metadata = Arc::new(read.await.map_err(CommitError::Rejected)?);
        let entry = view_entry(
            ContentId::new_random(),
            metadata_location.to_owned(),
            &metadata,
        );
        let committed = self
            .commit(
                branch,
                meta,
                |odb: Odb, tree: ObjectId| -> PlanFuture<ViewError> {
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
            LoadedView {
                key: key.clone(),
                content_id: entry.content_id,
                metadata_location: metadata_location.to_owned(),
                metadata,
            },
        ))
    }

    /// Moves a view to another name (and namespace); its identity and files stay.
    pub async fn rename_view(
        &self,
        branch: &Reference,
        from: &ContentKey,
        to: &ContentKey,
        meta: &CommitMeta,
    ) -> Result<Committed, CommitError<ViewError>> {
        self.commit(
            branch,
            meta,
            |odb: Odb, tree: ObjectId| -> PlanFuture<ViewError> {
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

    /// Drops view `key` from `branch`. Its files stay: older commits, other branches and tags
    /// may still name them.
    #[tracing::instrument(level = "debug", skip(self, meta), fields(catalog = %self.name()))]
    pub async fn drop_view(
        &self,
        branch: &Reference,
        key: &ContentKey,
        meta: &CommitMeta,
    ) -> Result<Committed, CommitError<ViewError>> {
        self.commit(
            branch,
            meta,
            |odb: Odb, tree: ObjectId| -> PlanFuture<ViewError> {
                let key = key.clone();
                Box::pin(async move {
                    let entry = tree::get(&odb, &tree, &key).await?;
                    metadata_location(&key, entry.as_ref())?;
                    Ok(Edits::from([(key, None)]))
                })
            },
        )
        .await
    }
}

fn now_ms() -> i64 {
    Timestamp::now().as_millis()
}

/// Message and properties for a view operation's commit.
pub fn view_commit_meta(principal: &str, action: &str, key: &ContentKey) -> CommitMeta {
    CommitMeta {
        principal: principal.to_owned(),
        message: format!("{action} view {key}"),
        properties: BTreeMap::from([
            ("operation".to_owned(), format!("{action}-view")),
            ("view".to_owned(), key.to_string()),
        ]),
    }
}
