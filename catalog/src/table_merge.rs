//! Merging the changes two branches made to the same Iceberg table, when they commute (see
//! [`crate::iceberg::table_merge`]): the target's metadata with the source's appended files
//! re-committed as one new snapshot (a new manifest list naming the target's manifests and
//! the source's appended ones), and the source's properties and added fields applied, written
//! as the table's next metadata file.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use pangolin_store::{Content, ContentKey, Entry};
use serde_json::{Value, json};

use crate::catalog::Catalog;
use crate::iceberg::io::{WRITE_METADATA_PATH, next_table_metadata_location};
use crate::iceberg::manifest_list::{ManifestList, Rewritten, recommit, restamp_manifest};
use crate::iceberg::metadata::TableMetadata;
use crate::iceberg::table_merge::{self, TableMergePlan};
use crate::iceberg::update::{MetadataBuilder, TableUpdate, canonical_location};
use crate::table::{now_ms, table_entry};

/// What became of one table's changes on both sides.
#[derive(Debug, Clone, PartialEq)]
pub enum TableMerge {
    /// They commute: the merged entry (none in a dry run) and what the merge does, in words.
    Merged {
        entry: Option<Entry>,
        plan: Vec<String>,
    },
    /// They do not: which change overlaps.
    Overlap(String),
}

/// A failure to read or write the table's files (not a verdict on the changes).
#[derive(Debug, thiserror::Error)]
#[error("merging table `{key}`: {reason}")]
pub struct TableMergeError {
    pub key: ContentKey,
    pub reason: String,
}

fn location(entry: &Entry) -> Option<&str> {
    match &entry.content {
        Content::IcebergTable {
            metadata_location, ..
        } => Some(metadata_location),
        _ => None,
    }
}

/// Whether a conflict over `key` is one a table merge may settle: the same table (by content
/// identity) changed on both sides.
pub fn is_same_table_changed(
    base: Option<&Entry>,
    ours: Option<&Entry>,
    theirs: Option<&Entry>,
) -> bool {
    match (base, ours, theirs) {
        (Some(b), Some(o), Some(t)) => {
            location(b).is_some()
                && location(o).is_some()
                && location(t).is_some()
                && b.content_id == o.content_id
                && b.content_id == t.content_id
        }
        _ => false,
    }
}

/// A snapshot id no snapshot of `metadata` has: positive, random.
fn fresh_snapshot_id(metadata: &TableMetadata) -> i64 {
    loop {
        let id = i64::from_le_bytes(
            uuid::Uuid::new_v4().as_bytes()[..8]
                .try_into()
                .unwrap_or([1; 8]),
        ) & i64::MAX;
        if id != 0 && metadata.snapshot(id).is_none() {
            return id;
        }
    }
}

/// The summary of the new snapshot: an append of what the source's manifests add, with the
/// target's totals carried forward where it has them.
fn summary(
    ours: &TableMetadata,
    theirs: &TableMetadata,
    plan: &TableMergePlan,
    added: crate::iceberg::manifest_list::Added,
) -> serde_json::Map<String, Value> {
    let mut summary = serde_json::Map::new();
    summary.insert("operation".into(), json!("append"));
    summary.insert("added-data-files".into(), json!(added.files.to_string()));
    summary.insert("added-records".into(), json!(added.rows.to_string()));
    let sizes: Option<u64> = plan
        .appended
        .iter()
        .map(|id| {
            theirs
                .snapshot(*id)
                .and_then(|s| s.summary.get("added-files-size"))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .sum();
    if let Some(size) = sizes {
        summary.insert("added-files-size".into(), json!(size.to_string()));
    }
    let previous = ours.current_snapshot().map(|s| &s.summary);
    let total = |name: &str, plus: Option<u64>| -> Option<String> {
        let before = match previous {
            Some(p) => p.get(name)?.parse::<u64>().ok()?,
            None => 0,
        };
        Some((before + plus?).to_string())
    };
    for (name, plus) in [
        ("total-data-files", Some(added.files)),
        ("total-records", Some(added.rows)),
        ("total-files-size", sizes),
        ("total-delete-files", Some(0)),
        ("total-position-deletes", Some(0)),
        ("total-equality-deletes", Some(0)),
    ] {
        if let Some(value) = total(name, plus) {
            summary.insert(name.into(), json!(value));
        }
    }
    let merged: Vec<String> = plan.appended.iter().map(i64::to_string).collect();
    summary.insert("pangolin.merged-snapshots".into(), json!(merged.join(",")));
    summary
}

/// The manifest list of the table's current snapshot.
async fn read_list(
    warehouse: &crate::Warehouse,
    metadata: &TableMetadata,
) -> Result<ManifestList, String> {
    let location = metadata
        .current_snapshot()
        .and_then(|s| s.manifest_list.clone())
        .ok_or("the table's current snapshot has no manifest list")?;
    // Hadoop-based writers name local files `file:/path`.
    let bytes = warehouse
        .io
        .read_bytes(&canonical_location(&location))
        .await
        .map_err(|e| e.to_string())?;
    ManifestList::read(&bytes).map_err(|e| format!("manifest list {location}: {e}"))
}

fn update(value: Value) -> Result<TableUpdate, String> {
    serde_json::from_value(value).map_err(|e| e.to_string())
}

impl Catalog {
    /// Merges the source's (`theirs`) changes since `base` to table `key` into the target's
    /// (`ours`): writes the new files and returns the merged entry, or, with `write` false,
    /// only says what it would do.
    pub(crate) async fn merge_table(
        &self,
        key: &ContentKey,
        (base, ours, theirs): (&Entry, &Entry, &Entry),
        write: bool,
    ) -> Result<TableMerge, TableMergeError> {
        let fail = |reason: String| TableMergeError {
            key: key.clone(),
            reason,
        };
        let warehouse = self.warehouse().map_err(|e| fail(e.to_string()))?.clone();
        let mut read = Vec::with_capacity(3);
        for entry in [base, ours, theirs] {
            let at = location(entry).ok_or_else(|| fail("not an Iceberg table".to_owned()))?;
            read.push(
                warehouse
                    .io
                    .read_metadata(at)
                    .await
                    .map_err(|e| fail(e.to_string()))?,
            );
        }
        let (base_meta, ours_meta, theirs_meta) = (&read[0], &read[1], &read[2]);
        let plan = match table_merge::plan(base_meta, ours_meta, theirs_meta) {
            Ok(plan) => plan,
            Err(overlap) => return Ok(TableMerge::Overlap(overlap.0)),
        };
        let words = plan.describe();
        // Whether the source's appends can be re-committed shows in its manifest list: look
        // before writing anything, and in a dry run too.
        if !plan.appended.is_empty() {
            let theirs_list = read_list(&warehouse, theirs_meta).await.map_err(&fail)?;
            let appended: BTreeSet<i64> = plan.appended.iter().copied().collect();
            if let Err(reason) = theirs_list.appended_manifests(&appended) {
                return Ok(TableMerge::Overlap(reason));
            }
        }
        if !write {
            return Ok(TableMerge::Merged {
                entry: None,
                plan: words,
            });
        }
        let mut updates = Vec::new();
        if let Some(schema) = &plan.schema {
            let schema = serde_json::to_value(schema).map_err(|e| fail(e.to_string()))?;
            updates.push(
                update(json!({"action": "add-schema", "schema": schema,
                "last-column-id": ours_meta.last_column_id.max(theirs_meta.last_column_id)}))
                .map_err(&fail)?,
            );
            updates.push(
                update(json!({"action": "set-current-schema", "schema-id": -1})).map_err(&fail)?,
            );
        }
        if !plan.set_properties.is_empty() {
            updates.push(
                update(json!({"action": "set-properties", "updates": plan.set_properties}))
                    .map_err(&fail)?,
            );
        }
        if !plan.removed_properties.is_empty() {
            updates.push(
                update(json!({"action": "remove-properties", "removals": plan.removed_properties}))
                    .map_err(&fail)?,
            );
        }
        let now = now_ms();
        let ours_location = location(ours).unwrap_or_default().to_owned();
        let mut builder = MetadataBuilder::new(TableMetadata::clone(ours_meta));
        builder
            .apply_all(&updates, now)
            .map_err(|e| fail(e.to_string()))?;
        if !plan.appended.is_empty() {
            let snapshot = self
                .recommit_snapshot(&warehouse, (ours_meta, theirs_meta), &plan, &builder, now)
                .await
                .map_err(&fail)?;
            let snapshot = match snapshot {
                Ok(snapshot) => snapshot,
                Err(overlap) => return Ok(TableMerge::Overlap(overlap)),
            };
            let id = snapshot["snapshot-id"].clone();
            let moves = [
                update(json!({"action": "add-snapshot", "snapshot": snapshot})).map_err(&fail)?,
                update(
                    json!({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                    "snapshot-id": id}),
                )
                .map_err(&fail)?,
            ];
            builder
                .apply_all(&moves, now)
                .map_err(|e| fail(e.to_string()))?;
        }
        builder.log_previous(ours_location.clone(), ours_meta.last_updated_ms);
        let metadata = builder.build(now).map_err(|e| fail(e.to_string()))?;
        let metadata = Arc::new(metadata);
        let next = next_table_metadata_location(&metadata, Some(&ours_location));
        warehouse
            .ensure_contains(&[&next])
            .map_err(|e| fail(e.to_string()))?;
        warehouse
            .io
            .write_metadata(&next, metadata.clone())
            .await
            .map_err(|e| fail(e.to_string()))?;
        Ok(TableMerge::Merged {
            entry: Some(table_entry(ours.content_id, next, &metadata)),
            plan: words,
        })
    }

    /// Writes the manifest list of the snapshot that re-commits the source's appends and
    /// returns the snapshot (as the `add-snapshot` update takes it), or why the source's
    /// manifests cannot be re-committed.
    async fn recommit_snapshot(
        &self,
        warehouse: &crate::Warehouse,
        (ours, theirs): (&TableMetadata, &TableMetadata),
        plan: &TableMergePlan,
        builder: &MetadataBuilder,
        now: i64,
    ) -> Result<Result<Value, String>, String> {
        let theirs_list = read_list(warehouse, theirs).await?;
        let ours_list = match ours.current_snapshot() {
            Some(_) => Some(read_list(warehouse, ours).await?),
            None => None,
        };
        let snapshot_id = fresh_snapshot_id(ours);
        let sequence = ours.last_sequence_number + 1;
        let appended: BTreeSet<i64> = plan.appended.iter().copied().collect();
        let manifests = match theirs_list.appended_manifests(&appended) {
            Ok(paths) => paths,
            Err(reason) => return Ok(Err(reason)),
        };
        // Where the table's own writers put manifests and lists: its metadata folder.
        let folder = match ours
            .properties
            .get(WRITE_METADATA_PATH)
            .map(|f| f.trim_end_matches('/'))
            .filter(|f| !f.is_empty())
        {
            Some(folder) => canonical_location(folder),
            None => format!("{}/metadata", canonical_location(&ours.location)),
        };
        // The source's manifests name the source's snapshots in their entries: copies that
        // name the new one, so the files are the new snapshot's as readers see them.
        let mut rewritten = BTreeMap::new();
        for (i, path) in manifests.iter().enumerate() {
            let bytes = warehouse
                .io
                .read_bytes(&canonical_location(path))
                .await
                .map_err(|e| e.to_string())?;
            let restamped = match restamp_manifest(&bytes, snapshot_id, &appended) {
                Ok(restamped) => restamped,
                Err(reason) => return Ok(Err(format!("manifest {path}: {reason}"))),
            };
            let copy = match restamped.bytes {
                Some(bytes) => {
                    let copy = format!("{folder}/{}-m{i}.avro", uuid::Uuid::new_v4());
                    warehouse
                        .ensure_contains(&[&copy])
                        .map_err(|e| e.to_string())?;
                    let length = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
                    crate::iceberg::json_io::write_new(&warehouse.io, &copy, bytes)
                        .await
                        .map_err(|e| e.to_string())?;
                    Some((copy, length))
                }
                None => None,
            };
            rewritten.insert(
                path.clone(),
                Rewritten {
                    copy,
                    files: restamped.files,
                    rows: restamped.rows,
                },
            );
        }
        let made = match recommit(
            ours_list.as_ref(),
            &theirs_list,
            &appended,
            (snapshot_id, ours.current_snapshot_id, sequence),
            ours.format_version,
            &rewritten,
        ) {
            Ok(made) => made,
            Err(reason) => return Ok(Err(reason)),
        };
        let list_location = format!(
            "{folder}/snap-{snapshot_id}-1-{}.avro",
            uuid::Uuid::new_v4()
        );
        warehouse
            .ensure_contains(&[&list_location])
            .map_err(|e| e.to_string())?;
        crate::iceberg::json_io::write_new(&warehouse.io, &list_location, made.bytes)
            .await
            .map_err(|e| e.to_string())?;
        let mut snapshot = json!({
            "snapshot-id": snapshot_id,
            "timestamp-ms": now,
            "manifest-list": list_location,
            "summary": summary(ours, theirs, plan, made.added),
            "schema-id": builder.current_schema_id(),
        });
        if let Some(parent) = ours.current_snapshot_id {
            snapshot["parent-snapshot-id"] = json!(parent);
        }
        if ours.format_version >= 2 {
            snapshot["sequence-number"] = json!(sequence);
        }
        Ok(Ok(snapshot))
    }
}
