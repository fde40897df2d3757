//! Snapshot expiry on one branch of a catalog, as one catalog commit.
//!
//! Every table the branch holds is read at one commit of the branch, its expired snapshots
//! found by the reference implementation's rules ([`crate::iceberg::expire`]), and all the
//! removals land together as one commit on that branch: visible in its log, undone by a
//! revert, and invisible to every other branch and to every earlier commit, which keep
//! reading the snapshots they had. No file is deleted.

use std::collections::BTreeMap;

use pangolin_refs::Reference;
use pangolin_store::tree::{self, KeyRange};
use pangolin_store::{Content, ContentKey, ObjectId, Timestamp};

use crate::address::RefSpec;
use crate::catalog::Catalog;
use crate::commit::{CommitError, CommitMeta};
use crate::iceberg::expire::{Retention, expired, expired_refs};
use crate::iceberg::{TableRequirement, TableUpdate};
use crate::namespace::ReadAtError;
use crate::table::TableError;
use crate::table_commit::TableChange;

/// Entries read per page of the branch's tree.
const PAGE: usize = 1000;

/// What a snapshot expiry found in one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableExpiry {
    pub key: ContentKey,
    /// The snapshots expired (or, in a dry run, that would be), in id order.
    pub expired: Vec<i64>,
    /// The snapshots the table keeps.
    pub kept: usize,
    /// The table's refs removed because they outlived their maximum age, in name order.
    pub expired_refs: Vec<String>,
}

/// What a snapshot expiry did.
#[derive(Debug, Clone)]
pub struct ExpireReport {
    /// The commit of the branch the tables were read at.
    pub read_at: ObjectId,
    pub tables_read: usize,
    /// The tables with snapshots to expire, in key order.
    pub tables: Vec<TableExpiry>,
    /// The commit that removed them; `None` in a dry run or when nothing expired.
    pub commit: Option<ObjectId>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExpireError {
    #[error(transparent)]
    Read(#[from] ReadAtError),
    #[error("reading `{key}`: {source}")]
    Table {
        key: ContentKey,
        #[source]
        source: TableError,
    },
    #[error(transparent)]
    Commit(#[from] CommitError<TableError>),
}

impl Catalog {
    /// Expires the snapshots of every table on `branch` that `retention` and the tables' own
    /// settings let go, at `now`; with `dry_run`, only reports them.
    #[tracing::instrument(level = "info", skip(self, retention), fields(tenant = %self.tenant(), catalog = %self.name()))]
    pub async fn expire_snapshots(
        &self,
        branch: &Reference,
        retention: &Retention,
        now: Timestamp,
        dry_run: bool,
        principal: &str,
    ) -> Result<ExpireReport, ExpireError> {
        let at = RefSpec::Named(branch.name.clone());
        let read_at = self.resolve(&at).await.map_err(ReadAtError::from)?.commit;
        let tree = self
            .odb()
            .commit(&read_at)
            .await
            .map_err(ReadAtError::from)?
            .tree;
        let now_ms = now.as_millis();
        let mut tables = Vec::new();
        let mut changes = Vec::new();
        let mut tables_read = 0;
        let mut after: Option<ContentKey> = None;
        loop {
            let mut range = KeyRange::all();
            if let Some(after) = &after {
                range = range.after(after);
            }
            let page = tree::list(self.odb(), &tree, &range, PAGE)
                .await
                .map_err(ReadAtError::from)?;
            for (key, entry) in page.entries {
                if !matches!(entry.content, Content::IcebergTable { .. }) {
                    continue;
                }
                let table =
                    self.read_table(&tree, &key)
                        .await
                        .map_err(|source| ExpireError::Table {
                            key: key.clone(),
                            source,
                        })?;
                tables_read += 1;
                let meta = &table.metadata;
                let gone = expired(meta, now_ms, retention);
                let gone_refs = expired_refs(meta, now_ms);
                if gone.is_empty() && gone_refs.is_empty() {
                    continue;
                }
                // A concurrent change to any of the table's refs (a rollback to a snapshot
                // about to go, say) fails the commit rather than be undone by it.
                let mut requirements = vec![TableRequirement::AssertTableUuid {
                    uuid: meta.table_uuid,
                }];
                requirements.extend(meta.refs.iter().map(|(name, r)| {
                    TableRequirement::AssertRefSnapshotId {
                        reference: name.clone(),
                        snapshot_id: Some(r.snapshot_id),
                    }
                }));
                tables.push(TableExpiry {
                    key: key.clone(),
                    kept: meta.snapshots.len() - gone.len(),
                    expired: gone.clone(),
                    expired_refs: gone_refs.clone(),
                });
                let mut updates: Vec<TableUpdate> = gone_refs
                    .into_iter()
                    .map(|ref_name| TableUpdate::RemoveSnapshotRef { ref_name })
                    .collect();
                if !gone.is_empty() {
                    updates.push(TableUpdate::RemoveSnapshots { snapshot_ids: gone });
                }
                changes.push(TableChange {
                    key,
                    requirements,
                    updates,
                });
            }
            match page.next_after {
                Some(key) => after = Some(key),
                None => break,
            }
        }
        tracing::info!(
            tables_read,
            tables = tables.len(),
            snapshots = tables.iter().map(|t| t.expired.len()).sum::<usize>(),
            dry_run,
            "snapshot expiry planned"
        );
        let commit = if dry_run || changes.is_empty() {
            None
        } else {
            let expired: usize = tables.iter().map(|t| t.expired.len()).sum();
            let refs: usize = tables.iter().map(|t| t.expired_refs.len()).sum();
            let message = if refs == 0 {
                format!(
                    "expire {expired} snapshots of {} tables on {}",
                    tables.len(),
                    branch.name
                )
            } else {
                format!(
                    "expire {expired} snapshots and {refs} refs of {} tables on {}",
                    tables.len(),
                    branch.name
                )
            };
            let meta = CommitMeta {
                principal: principal.to_owned(),
                message,
                properties: BTreeMap::from([
                    ("operation".to_owned(), "expire-snapshots".to_owned()),
                    ("expired-snapshots".to_owned(), expired.to_string()),
                    ("expired-refs".to_owned(), refs.to_string()),
                ]),
            };
            let (committed, _) = self.commit_tables(branch, changes, &meta).await?;
            Some(committed.commit)
        };
        Ok(ExpireReport {
            read_at,
            tables_read,
            tables,
            commit,
        })
    }
}
