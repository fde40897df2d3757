//! What a commit does to a table's snapshots: adding them (sequence numbers and row ids
//! checked), pointing refs at them, removing them, and the snapshot log that records which
//! was current when.

use std::collections::BTreeSet;

use super::{MetadataBuilder, UpdateError};
use crate::iceberg::metadata::{MAIN_BRANCH, RefType, Snapshot, SnapshotLogEntry, SnapshotRef};

impl MetadataBuilder {
    pub(super) fn add_snapshot(&mut self, snapshot: &Snapshot) -> Result<(), UpdateError> {
        let meta = &mut self.meta;
        let id = snapshot.snapshot_id;
        if meta.schemas.is_empty() || meta.partition_specs.is_empty() || meta.sort_orders.is_empty()
        {
            return Err(UpdateError::Invalid(format!(
                "snapshot {id}: a snapshot cannot be added before the table has a schema, a partition spec and a sort order"
            )));
        }
        if meta.snapshot(id).is_some() {
            return Err(UpdateError::SnapshotExists(id));
        }
        if let Some(parent) = snapshot.parent_snapshot_id
            && meta.snapshot(parent).is_none()
        {
            return Err(UpdateError::Invalid(format!(
                "snapshot {id}: parent snapshot {parent} does not exist"
            )));
        }
        if meta.format_version == 1 && snapshot.sequence_number != 0 {
            return Err(UpdateError::Invalid(format!(
                "snapshot {id}: format version 1 has no sequence numbers (got {})",
                snapshot.sequence_number
            )));
        }
        if meta.format_version >= 2
            && snapshot.sequence_number <= meta.last_sequence_number
            && snapshot.parent_snapshot_id.is_some()
        {
            return Err(UpdateError::StaleSequenceNumber {
                snapshot: snapshot.snapshot_id,
                sequence: snapshot.sequence_number,
                last: meta.last_sequence_number,
            });
        }
        if meta.format_version >= 3 {
            // Row lineage: each snapshot's rows take ids from the table's next row id on.
            let next = meta.next_row_id.unwrap_or(0);
            let Some(first) = snapshot.first_row_id else {
                return Err(UpdateError::MissingRowId(snapshot.snapshot_id));
            };
            if first < next {
                return Err(UpdateError::StaleRowId {
                    snapshot: snapshot.snapshot_id,
                    first,
                    next,
                });
            }
            meta.next_row_id = Some(next + snapshot.added_rows.unwrap_or(0));
        }
        // As the reference implementation: the new snapshot's number becomes the last one, so
        // a parentless snapshot numbered below the others leaves metadata `validate` refuses.
        meta.last_sequence_number = snapshot.sequence_number;
        meta.snapshots.push(snapshot.clone());
        self.added_snapshots.insert(snapshot.snapshot_id);
        Ok(())
    }

    /// Points `name` at a snapshot of the table; moving `main` makes the snapshot current and
    /// logs it.
    pub(super) fn set_snapshot_ref(
        &mut self,
        name: &str,
        new_ref: SnapshotRef,
        now_ms: i64,
    ) -> Result<(), UpdateError> {
        let meta = &mut self.meta;
        let id = new_ref.snapshot_id;
        let Some(snapshot) = meta.snapshot(id) else {
            return Err(UpdateError::Unknown {
                kind: "snapshot",
                id,
            });
        };
        check_ref(name, &new_ref)?;
        let logged_at = if self.added_snapshots.contains(&id) {
            snapshot.timestamp_ms
        } else {
            now_ms
        };
        if meta.refs.get(name) == Some(&new_ref) {
            return Ok(());
        }
        meta.refs.insert(name.to_owned(), new_ref);
        if name == MAIN_BRANCH {
            self.main_moves.push(id);
            meta.current_snapshot_id = Some(id);
            meta.snapshot_log.push(SnapshotLogEntry {
                snapshot_id: id,
                timestamp_ms: logged_at,
            });
        }
        Ok(())
    }

    /// Removes the snapshots, their statistics and the refs to them.
    pub(super) fn remove_snapshots(&mut self, snapshot_ids: &[i64]) {
        let meta = &mut self.meta;
        let gone: BTreeSet<i64> = snapshot_ids.iter().copied().collect();
        self.removed_snapshots |= meta.snapshots.iter().any(|s| gone.contains(&s.snapshot_id));
        meta.snapshots.retain(|s| !gone.contains(&s.snapshot_id));
        meta.statistics.retain(|s| !gone.contains(&s.snapshot_id));
        meta.partition_statistics
            .retain(|s| !gone.contains(&s.snapshot_id));
        // A ref to a removed snapshot goes with it, as in the reference implementation.
        meta.refs.retain(|_, r| !gone.contains(&r.snapshot_id));
        if meta
            .current_snapshot_id
            .is_some_and(|id| gone.contains(&id))
        {
            meta.current_snapshot_id = None;
        }
    }

    /// The snapshot log as the reference implementation keeps it: a snapshot this commit
    /// added and made current, then replaced by a later one of the same commit, was never
    /// current for anyone and leaves the log; removing snapshots drops the history up to the
    /// last removed one, so the log never skips a snapshot that was current.
    pub(super) fn update_snapshot_log(&mut self) -> Result<(), UpdateError> {
        let meta = &mut self.meta;
        let intermediate: BTreeSet<i64> = self
            .main_moves
            .iter()
            .copied()
            .filter(|id| self.added_snapshots.contains(id) && Some(*id) != meta.current_snapshot_id)
            .collect();
        if intermediate.is_empty() && !self.removed_snapshots {
            return Ok(());
        }
        let mut log = Vec::with_capacity(meta.snapshot_log.len());
        for entry in meta.snapshot_log.drain(..) {
            if meta
                .snapshots
                .iter()
                .any(|s| s.snapshot_id == entry.snapshot_id)
            {
                if !intermediate.contains(&entry.snapshot_id) {
                    log.push(entry);
                }
            } else if self.removed_snapshots {
                log.clear();
            }
        }
        meta.snapshot_log = log;
        if let Some(current) = meta.current_snapshot_id
            && meta.snapshot(current).is_some()
            && meta
                .snapshot_log
                .last()
                .is_some_and(|e| e.snapshot_id != current)
        {
            return Err(UpdateError::Invalid(format!(
                "the snapshot log would not end at the current snapshot {current}"
            )));
        }
        Ok(())
    }
}

/// The retention settings a ref may carry, as the reference implementation's `SnapshotRef`.
fn check_ref(name: &str, new_ref: &SnapshotRef) -> Result<(), UpdateError> {
    let invalid = |why: String| Err(UpdateError::Invalid(format!("ref `{name}`: {why}")));
    if name.is_empty() {
        return Err(UpdateError::Invalid("a ref needs a name".to_owned()));
    }
    if name == MAIN_BRANCH && new_ref.kind != RefType::Branch {
        return invalid(format!("`{MAIN_BRANCH}` must be a branch, not a tag"));
    }
    if new_ref.kind == RefType::Tag
        && (new_ref.min_snapshots_to_keep.is_some() || new_ref.max_snapshot_age_ms.is_some())
    {
        return invalid(
            "a tag keeps one snapshot: `min-snapshots-to-keep` and `max-snapshot-age-ms` are for branches"
                .to_owned(),
        );
    }
    if let Some(n) = new_ref.min_snapshots_to_keep.filter(|n| *n <= 0) {
        return invalid(format!("`min-snapshots-to-keep` must be above 0, not {n}"));
    }
    if let Some(ms) = new_ref.max_snapshot_age_ms.filter(|ms| *ms <= 0) {
        return invalid(format!("`max-snapshot-age-ms` must be above 0, not {ms}"));
    }
    if let Some(ms) = new_ref.max_ref_age_ms.filter(|ms| *ms <= 0) {
        return invalid(format!("`max-ref-age-ms` must be above 0, not {ms}"));
    }
    Ok(())
}
