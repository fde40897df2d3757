//! Namespaces: nested, with properties, each a commit on a branch.

use std::collections::BTreeMap;

use pangolin_refs::Reference;
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{Content, ContentKey, ContentKind, Entry, ObjectId, Odb, ReadError};

use crate::address::RefSpec;
use crate::catalog::{Catalog, ResolveError};
use crate::commit::{CommitError, CommitMeta, Committed, PlanFuture};

/// Why a namespace operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    #[error("namespace `{0}` does not exist")]
    NotFound(ContentKey),
    #[error("namespace `{0}` already exists")]
    AlreadyExists(ContentKey),
    #[error("cannot create `{child}`: its parent namespace `{parent}` does not exist")]
    ParentNotFound {
        parent: ContentKey,
        child: ContentKey,
    },
    #[error("`{0}` exists but is not a namespace")]
    NotANamespace(ContentKey),
    #[error("Namespace {namespace} is not empty: it holds `{first}`")]
    NotEmpty {
        namespace: ContentKey,
        first: ContentKey,
    },
    #[error("properties to remove and to set overlap: {0:?}")]
    OverlappingProperties(Vec<String>),
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// A namespace as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    pub key: ContentKey,
    pub properties: BTreeMap<String, String>,
}

/// What a properties update did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PropertiesUpdate {
    pub updated: Vec<String>,
    pub removed: Vec<String>,
    /// Keys asked to be removed that were not there.
    pub missing: Vec<String>,
}

pub(crate) async fn namespace_at(
    odb: &Odb,
    tree: &ObjectId,
    key: &ContentKey,
) -> Result<Namespace, NamespaceError> {
    match tree::get(odb, tree, key).await? {
        Some(Entry {
            content: Content::Namespace { properties },
            ..
        }) => Ok(Namespace {
            key: key.clone(),
            properties,
        }),
        Some(_) => Err(NamespaceError::NotANamespace(key.clone())),
        None => Err(NamespaceError::NotFound(key.clone())),
    }
}

/// The `location` property of the namespace holding `key`, if it has one (`None` at the top).
pub(crate) async fn parent_location(
    odb: &Odb,
    tree: &ObjectId,
    key: &ContentKey,
) -> Result<Option<String>, NamespaceError> {
    match key.parent() {
        Some(parent) => Ok(namespace_at(odb, tree, &parent)
            .await?
            .properties
            .remove("location")),
        None => Ok(None),
    }
}

/// Errors of reads at a reference expression.
#[derive(Debug, thiserror::Error)]
pub enum ReadAtError {
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Namespace(#[from] NamespaceError),
}

impl From<ReadError> for ReadAtError {
    fn from(error: ReadError) -> Self {
        Self::Namespace(error.into())
    }
}

impl Catalog {
    pub(crate) async fn tree_at(&self, at: &RefSpec) -> Result<ObjectId, ReadAtError> {
        let resolved = self.resolve(at).await?;
        Ok(self.odb().commit(&resolved.commit).await?.tree)
    }

    /// Creates `key` (its parent must exist) on `branch`.
    pub async fn create_namespace(
        &self,
        branch: &Reference,
        key: &ContentKey,
        properties: BTreeMap<String, String>,
        meta: &CommitMeta,
    ) -> Result<Committed, CommitError<NamespaceError>> {
        self.commit(
            branch,
            meta,
            |odb: Odb, tree: ObjectId| -> PlanFuture<NamespaceError> {
                let (key, properties) = (key.clone(), properties.clone());
                Box::pin(async move {
                    if tree::get(&odb, &tree, &key).await?.is_some() {
                        return Err(NamespaceError::AlreadyExists(key));
                    }
                    if let Some(parent) = key.parent() {
                        match namespace_at(&odb, &tree, &parent).await {
                            Err(NamespaceError::NotFound(_)) => {
                                return Err(NamespaceError::ParentNotFound { parent, child: key });
                            }
                            other => other?,
                        };
                    }
                    let entry = Entry::new(Content::Namespace { properties });
                    Ok(BTreeMap::from([(key, Some(entry))]))
                })
            },
        )
        .await
    }

    pub async fn load_namespace(
        &self,
        at: &RefSpec,
        key: &ContentKey,
    ) -> Result<Namespace, ReadAtError> {
        let tree = self.tree_at(at).await?;
        Ok(namespace_at(self.odb(), &tree, key).await?)
    }

    /// The namespaces directly under `parent` (top-level ones when `None`), in order, at most
    /// `limit`, after `after`; and the key to continue after when more follow.
    pub async fn list_namespaces(
        &self,
        at: &RefSpec,
        parent: Option<&ContentKey>,
        after: Option<&ContentKey>,
        limit: usize,
    ) -> Result<(Vec<ContentKey>, Option<ContentKey>), ReadAtError> {
        let (found, next) = self
            .list_children(at, parent, ContentKind::Namespace, after, limit)
            .await?;
        Ok((found.into_iter().map(|(key, _)| key).collect(), next))
    }

    /// Removes `removals` and sets `updates` in the properties of `key`.
    pub async fn update_namespace_properties(
        &self,
        branch: &Reference,
        key: &ContentKey,
        removals: &[String],
        updates: &BTreeMap<String, String>,
        meta: &CommitMeta,
    ) -> Result<(Committed, PropertiesUpdate), CommitError<NamespaceError>> {
        let overlap: Vec<String> = removals
            .iter()
            .filter(|r| updates.contains_key(*r))
            .cloned()
            .collect();
        if !overlap.is_empty() {
            return Err(CommitError::Rejected(
                NamespaceError::OverlappingProperties(overlap),
            ));
        }
        let committed = self
            .commit(
                branch,
                meta,
                |odb: Odb, tree: ObjectId| -> PlanFuture<NamespaceError> {
                    let (key, removals, updates) =
                        (key.clone(), removals.to_vec(), updates.clone());
                    Box::pin(async move {
                        let mut namespace = namespace_at(&odb, &tree, &key).await?;
                        for removal in &removals {
                            namespace.properties.remove(removal);
                        }
                        namespace.properties.extend(updates);
                        let Some(mut entry) = tree::get(&odb, &tree, &key).await? else {
                            return Err(NamespaceError::NotFound(key));
                        };
                        entry.content = Content::Namespace {
                            properties: namespace.properties,
                        };
                        Ok(BTreeMap::from([(key, Some(entry))]))
                    })
                },
            )
            .await?;
        // Report against the state the change was applied to.
        let before = self
            .load_at_commit(&committed.parent, key)
            .await
            .map_err(CommitError::Rejected)?;
        let mut report = PropertiesUpdate {
            updated: updates.keys().cloned().collect(),
            ..PropertiesUpdate::default()
        };
        for removal in removals {
            match before.properties.contains_key(removal) {
                true => report.removed.push(removal.clone()),
                false => report.missing.push(removal.clone()),
            }
        }
        Ok((committed, report))
    }

    async fn load_at_commit(
        &self,
        commit: &ObjectId,
        key: &ContentKey,
    ) -> Result<Namespace, NamespaceError> {
        let tree = self.odb().commit(commit).await?.tree;
        namespace_at(self.odb(), &tree, key).await
    }

    /// Drops `key`, which must hold nothing.
    pub async fn drop_namespace(
        &self,
        branch: &Reference,
        key: &ContentKey,
        meta: &CommitMeta,
    ) -> Result<Committed, CommitError<NamespaceError>> {
        self.commit(
            branch,
            meta,
            |odb: Odb, tree: ObjectId| -> PlanFuture<NamespaceError> {
                let key = key.clone();
                Box::pin(async move {
                    namespace_at(&odb, &tree, &key).await?;
                    let under =
                        tree::list(&odb, &tree, &KeyRange::prefix(key.clone()).after(&key), 1)
                            .await?;
                    if let Some((first, _)) = under.entries.into_iter().next() {
                        return Err(NamespaceError::NotEmpty {
                            namespace: key,
                            first,
                        });
                    }
                    Ok(BTreeMap::from([(key, None)]))
                })
            },
        )
        .await
    }
}
