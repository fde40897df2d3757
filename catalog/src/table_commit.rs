//! Table commits: one table, or several in one catalog commit (all or nothing).
//!
//! Each table's change reads the table at the branch head, checks the client's requirements,
//! applies its updates and writes the next metadata file. When another writer moved the branch
//! meanwhile but left a table alone, that table's prepared file is reused on the new head;
//! when the table did change, its requirements are checked again against the new state.

use std::collections::BTreeSet;
use std::sync::Arc;

use pangolin_refs::Reference;
use pangolin_store::{ContentId, ContentKey, Entry, ObjectId, Odb, tree};
use parking_lot::Mutex;

use crate::address::RefSpec;
use crate::catalog::Catalog;
use crate::commit::{CommitError, CommitMeta, Committed, Edits, PlanFuture};
use crate::iceberg::io::next_table_metadata_location;
use crate::iceberg::update::blank;
use crate::iceberg::{MetadataBuilder, TableMetadata, TableRequirement, TableUpdate, UpdateError};
use crate::table::{
    LoadedTable, TableError, ensure_namespace, metadata_location, now_ms, table_entry,
};
use crate::warehouse::Warehouse;

/// One table's part of a commit, as a client sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct TableChange {
    pub key: ContentKey,
    pub requirements: Vec<TableRequirement>,
    pub updates: Vec<TableUpdate>,
}

impl TableChange {
    /// With `assert-create`, the table may not exist yet (the end of a staged create).
    fn creates(&self) -> bool {
        self.requirements.contains(&TableRequirement::AssertCreate)
    }

    fn changes_nothing(&self) -> bool {
        self.updates.is_empty() && !self.creates()
    }
}

/// What a change wrote on an earlier attempt, reusable while the table is unchanged.
#[derive(Debug, Clone)]
struct Prepared {
    /// The metadata location the change was applied to (`None`: created).
    base: Option<String>,
    location: String,
    metadata: Arc<TableMetadata>,
    entry: Entry,
}

/// Commit properties describing what a table change did, for the catalog log.
fn describe(meta: &CommitMeta, changes: &[TableChange]) -> CommitMeta {
    let mut meta = meta.clone();
    for update in changes.iter().flat_map(|c| &c.updates) {
        if let TableUpdate::AddSnapshot { snapshot } = update {
            meta.properties.insert(
                "iceberg.snapshot-id".to_owned(),
                snapshot.snapshot_id.to_string(),
            );
            for (k, v) in &snapshot.summary {
                meta.properties
                    .insert(format!("iceberg.summary.{k}"), v.clone());
            }
        }
    }
    meta
}

/// Plans one table's change against `tree`: the entry to write, or `None` when the change
/// only checks requirements.
async fn plan_change(
    catalog: &Catalog,
    warehouse: &Warehouse,
    odb: &Odb,
    tree: &ObjectId,
    change: &TableChange,
    prepared: &Mutex<Option<Prepared>>,
) -> Result<Option<Entry>, TableError> {
    let key = &change.key;
    let entry = tree::get(odb, tree, key).await?;
    let creating = change.creates();
    let (base_location, content_id) = match &entry {
        None if creating => {
            ensure_namespace(odb, tree, key).await?;
            (None, ContentId::new_random())
        }
        Some(e) if creating => {
            return Err(TableError::AlreadyExists {
                key: key.clone(),
                kind: e.content.kind(),
            });
        }
        other => (
            Some(metadata_location(key, other.as_ref())?),
            other
                .as_ref()
                .map_or_else(ContentId::new_random, |e| e.content_id),
        ),
    };
    // The table is as it was when this change was prepared: reuse what was written.
    if let Some(p) = prepared.lock().as_ref()
        && p.base == base_location
    {
        return Ok((!change.changes_nothing()).then(|| p.entry.clone()));
    }
    let base = match &base_location {
        Some(location) => Some(warehouse.io.read_metadata(location).await?),
        None => None,
    };
    for requirement in &change.requirements {
        requirement.check(base.as_deref())?;
    }
    if let (true, Some(location), Some(base), Some(entry)) =
        (change.changes_nothing(), &base_location, &base, entry)
    {
        *prepared.lock() = Some(Prepared {
            base: base_location.clone(),
            location: location.clone(),
            metadata: base.clone(),
            entry,
        });
        return Ok(None);
    }
    let now = now_ms();
    let mut builder = MetadataBuilder::new(match &base {
        Some(b) => TableMetadata::clone(b),
        None => blank(String::new(), 1, now),
    });
    builder.apply_all(&change.updates, now)?;
    if let (Some(location), Some(b)) = (&base_location, &base) {
        builder.log_previous(location.clone(), b.last_updated_ms);
    }
    let mut metadata = builder.finish(now)?;
    if metadata.location.is_empty() {
        metadata.location = catalog
            .default_table_location(tree, key, &metadata.table_uuid)
            .await?;
    }
    metadata.validate().map_err(UpdateError::Invalid)?;
    let metadata = Arc::new(metadata);
    let location = next_table_metadata_location(&metadata, base_location.as_deref());
    warehouse.ensure_contains(&[&metadata.location, &location])?;
    warehouse
        .io
        .write_metadata(&location, metadata.clone())
        .await?;
    let entry = table_entry(content_id, location.clone(), &metadata);
    *prepared.lock() = Some(Prepared {
        base: base_location,
        location,
        metadata,
        entry: entry.clone(),
    });
    Ok(Some(entry))
}

impl Catalog {
    /// Applies a client's commit to table `key` on `branch`. A commit without updates checks
    /// its requirements and answers with the table as it is, committing nothing.
    #[tracing::instrument(level = "debug", skip(self, requirements, updates, meta), fields(catalog = %self.name()))]
    pub async fn commit_table(
        &self,
        branch: &Reference,
        key: &ContentKey,
        requirements: Vec<TableRequirement>,
        updates: Vec<TableUpdate>,
        meta: &CommitMeta,
    ) -> Result<(Committed, LoadedTable), CommitError<TableError>> {
        let change = TableChange {
            key: key.clone(),
            requirements,
            updates,
        };
        let (committed, mut tables) = self.commit_tables(branch, vec![change], meta).await?;
        let table = tables
            .pop()
            .ok_or_else(|| CommitError::Rejected(TableError::NotFound(key.clone())))?;
        Ok((committed, table))
    }

    /// Applies the changes of several tables as one commit on `branch`: every requirement of
    /// every table holds and all land, or nothing does. Returns the tables in the order given.
    #[tracing::instrument(level = "debug", skip(self, changes, meta), fields(catalog = %self.name(), tables = changes.len()))]
    pub async fn commit_tables(
        &self,
        branch: &Reference,
        changes: Vec<TableChange>,
        meta: &CommitMeta,
    ) -> Result<(Committed, Vec<LoadedTable>), CommitError<TableError>> {
        let warehouse = self.warehouse().map_err(CommitError::Rejected)?.clone();
        let mut seen = BTreeSet::new();
        for change in &changes {
            if !seen.insert(change.key.clone()) {
                return Err(CommitError::Rejected(TableError::Update(
                    UpdateError::Invalid(format!(
                        "table `{}` appears more than once in one commit",
                        change.key
                    )),
                )));
            }
        }
        if changes.iter().all(TableChange::changes_nothing) {
            return self
                .check_only(branch, &changes)
                .await
                .map_err(CommitError::Rejected);
        }
        let prepared: Arc<Vec<Mutex<Option<Prepared>>>> =
            Arc::new(changes.iter().map(|_| Mutex::new(None)).collect());
        let meta = describe(meta, &changes);
        let keys: Vec<ContentKey> = changes.iter().map(|c| c.key.clone()).collect();
        let changes = Arc::new(changes);
        let catalog = self.clone();
        let committed = self
            .commit_claiming(
                branch,
                &meta,
                &keys,
                |odb: Odb, tree: ObjectId| -> PlanFuture<TableError> {
                    let (catalog, warehouse) = (catalog.clone(), warehouse.clone());
                    let (changes, prepared) = (changes.clone(), prepared.clone());
                    Box::pin(async move {
                        let mut edits = Edits::new();
                        for (change, memo) in changes.iter().zip(prepared.iter()) {
                            let planned =
                                plan_change(&catalog, &warehouse, &odb, &tree, change, memo)
                                    .await?;
                            if let Some(entry) = planned {
                                edits.insert(change.key.clone(), Some(entry));
                            }
                        }
                        Ok(edits)
                    })
                },
            )
            .await?;
        let mut tables = Vec::with_capacity(changes.len());
        for (change, memo) in changes.iter().zip(prepared.iter()) {
            let Some(p) = memo.lock().take() else {
                return Err(CommitError::Rejected(TableError::NotFound(
                    change.key.clone(),
                )));
            };
            tables.push(LoadedTable {
                key: change.key.clone(),
                content_id: p.entry.content_id,
                metadata_location: Some(p.location),
                metadata: p.metadata,
            });
        }
        Ok((committed, tables))
    }

    /// Checks requirements of changes that change nothing, at the branch head.
    async fn check_only(
        &self,
        branch: &Reference,
        changes: &[TableChange],
    ) -> Result<(Committed, Vec<LoadedTable>), TableError> {
        let resolved = self.resolve(&RefSpec::Named(branch.name.clone())).await?;
        let tree = self.odb().commit(&resolved.commit).await?.tree;
        let mut tables = Vec::with_capacity(changes.len());
        for change in changes {
            let table = self.read_table(&tree, &change.key).await?;
            for requirement in &change.requirements {
                requirement.check(Some(&table.metadata))?;
            }
            tables.push(table);
        }
        let committed = Committed {
            commit: resolved.commit,
            parent: resolved.commit,
            attempts: 0,
        };
        Ok((committed, tables))
    }
}
