//! Manifest lists read whole and written anew, for a merge that re-commits another branch's
//! appended manifests on top of a table: the new list holds every manifest of the target's
//! current snapshot and the source's appended ones, re-stamped as added by the new snapshot.
//!
//! Entries are kept as the Avro values they were read as and written with the target's own
//! list schema (the source's entries resolved to it by field name), so every field a writer
//! put there (partition summaries, key metadata, first row ids) is carried over.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use apache_avro::Schema;
use apache_avro::types::Value;

/// A manifest list: its Avro schema, its file metadata, and its entries.
#[derive(Debug, Clone)]
pub struct ManifestList {
    schema: Schema,
    metadata: HashMap<String, Vec<u8>>,
    entries: Vec<Value>,
}

/// What the re-committed manifests add.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Added {
    pub manifests: u64,
    pub files: u64,
    pub rows: u64,
}

/// A new manifest list: its bytes and what the manifests taken from the source add.
#[derive(Debug, Clone)]
pub struct Recommitted {
    pub bytes: Vec<u8>,
    pub added: Added,
}

fn unwrap_union(value: &Value) -> &Value {
    match value {
        Value::Union(_, inner) => inner,
        other => other,
    }
}

fn field<'a>(record: &'a Value, name: &str) -> Option<&'a Value> {
    match unwrap_union(record) {
        Value::Record(fields) => fields.iter().find(|(n, _)| n == name).map(|(_, v)| v),
        _ => None,
    }
}

fn number(record: &Value, names: &[&str]) -> Option<i64> {
    names
        .iter()
        .find_map(|name| field(record, name))
        .and_then(|v| match unwrap_union(v) {
            Value::Long(n) => Some(*n),
            Value::Int(n) => Some(i64::from(*n)),
            _ => None,
        })
}

/// Sets a long field, keeping a union's branch when the field is optional.
fn set_long(record: &mut Value, name: &str, value: i64) {
    if let Value::Record(fields) = record
        && let Some((_, slot)) = fields.iter_mut().find(|(n, _)| n == name)
    {
        *slot = match slot {
            Value::Union(branch, _) => Value::Union(*branch, Box::new(Value::Long(value))),
            _ => Value::Long(value),
        };
    }
}

/// Sets a count, as the int or long the schema has for it.
fn set_int_or_long(record: &mut Value, name: &str, value: u64) {
    if let Value::Record(fields) = record
        && let Some((_, slot)) = fields.iter_mut().find(|(n, _)| n == name)
    {
        let number = |old: &Value| match old {
            Value::Int(_) => Value::Int(i32::try_from(value).unwrap_or(i32::MAX)),
            _ => Value::Long(i64::try_from(value).unwrap_or(i64::MAX)),
        };
        let replaced = match &*slot {
            Value::Union(branch, inner) => Value::Union(*branch, Box::new(number(inner))),
            other => number(other),
        };
        *slot = replaced;
    }
}

/// A source manifest as the merged snapshot names it: its re-stamped copy and length (`None`
/// when nothing of it is kept), and the files and rows it adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    pub copy: Option<(String, i64)>,
    pub files: u64,
    pub rows: u64,
}

fn set_string(record: &mut Value, name: &str, value: String) {
    if let Value::Record(fields) = record
        && let Some((_, slot)) = fields.iter_mut().find(|(n, _)| n == name)
    {
        *slot = Value::String(value);
    }
}

/// A source manifest re-stamped for the merged snapshot: its bytes (`None` when nothing of it
/// is kept) and what it adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restamped {
    pub bytes: Option<Vec<u8>>,
    pub files: u64,
    pub rows: u64,
}

/// A source manifest re-stamped as added by snapshot `snapshot_id`: its added entries, and
/// the existing entries of files one of the source's `appended` snapshots added (a merging
/// append rewrote them into this manifest), all as added by the new snapshot with sequence
/// numbers left to inheritance; existing entries of earlier files (which the target holds)
/// are left out. A deleted entry is refused. Schema and file metadata are kept.
pub fn restamp_manifest(
    bytes: &[u8],
    snapshot_id: i64,
    appended: &BTreeSet<i64>,
) -> Result<Restamped, String> {
    const EXISTING: i64 = 0;
    const ADDED: i64 = 1;
    let reader = apache_avro::Reader::new(bytes).map_err(|e| e.to_string())?;
    let schema = reader.writer_schema().clone();
    let metadata = reader.user_metadata().clone();
    let mut entries = Vec::new();
    let mut rows = 0u64;
    for (i, entry) in reader.enumerate() {
        let mut entry = entry.map_err(|e| format!("entry {i}: {e}"))?;
        match number(&entry, &["status"]) {
            Some(ADDED) => {}
            Some(EXISTING)
                if number(&entry, &["snapshot_id"]).is_some_and(|id| appended.contains(&id)) =>
            {
                set_int_or_long(&mut entry, "status", ADDED.unsigned_abs());
            }
            Some(EXISTING) => continue,
            _ => return Err(format!("entry {i} of an appended manifest deletes a file")),
        }
        set_optional_long(&mut entry, "snapshot_id", snapshot_id);
        for name in ["sequence_number", "file_sequence_number"] {
            set_null(&mut entry, name);
        }
        rows += field(&entry, "data_file")
            .and_then(|file| number(file, &["record_count"]))
            .unwrap_or(0)
            .max(0) as u64;
        entries.push(entry);
    }
    if entries.is_empty() {
        return Ok(Restamped {
            bytes: None,
            files: 0,
            rows: 0,
        });
    }
    let files = entries.len() as u64;
    let mut writer = apache_avro::Writer::new(&schema, Vec::new());
    for (key, value) in metadata {
        writer
            .add_user_metadata(key, value)
            .map_err(|e| e.to_string())?;
    }
    for entry in entries {
        writer.append(entry).map_err(|e| e.to_string())?;
    }
    Ok(Restamped {
        bytes: Some(writer.into_inner().map_err(|e| e.to_string())?),
        files,
        rows,
    })
}

/// Sets a long field that may be optional: a union's `long` branch, which Iceberg writes after
/// `null`, whichever branch it held.
fn set_optional_long(record: &mut Value, name: &str, value: i64) {
    if let Value::Record(fields) = record
        && let Some((_, slot)) = fields.iter_mut().find(|(n, _)| n == name)
    {
        *slot = match slot {
            Value::Union(..) => Value::Union(1, Box::new(Value::Long(value))),
            _ => Value::Long(value),
        };
    }
}

/// Sets an optional field to null (a union's `null` branch, which Iceberg writes first).
fn set_null(record: &mut Value, name: &str) {
    if let Value::Record(fields) = record
        && let Some((_, slot)) = fields.iter_mut().find(|(n, _)| n == name)
        && matches!(slot, Value::Union(..))
    {
        *slot = Value::Union(0, Box::new(Value::Null));
    }
}

impl ManifestList {
    pub fn read(bytes: &[u8]) -> Result<Self, String> {
        let reader = apache_avro::Reader::new(bytes).map_err(|e| e.to_string())?;
        let schema = reader.writer_schema().clone();
        let metadata = reader.user_metadata().clone();
        let entries = reader
            .enumerate()
            .map(|(i, v)| v.map_err(|e| format!("entry {i}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            schema,
            metadata,
            entries,
        })
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The paths of the manifests `snapshots` added (checked as [`recommit`] checks them).
    pub fn appended_manifests(&self, snapshots: &BTreeSet<i64>) -> Result<Vec<String>, String> {
        Ok(self
            .added_by(snapshots)?
            .iter()
            .filter_map(
                |entry| match field(entry, "manifest_path").map(unwrap_union) {
                    Some(Value::String(path)) => Some(path.clone()),
                    _ => None,
                },
            )
            .collect())
    }

    /// The manifests `snapshots` added, each checked to delete nothing: a delete manifest, or
    /// one recording deleted files, cannot be re-committed on another branch's table. (One
    /// that also carries earlier files, as a merging append writes, is re-stamped without
    /// them: see [`restamp_manifest`].)
    fn added_by(&self, snapshots: &BTreeSet<i64>) -> Result<Vec<Value>, String> {
        let mut taken = Vec::new();
        for entry in &self.entries {
            let Some(added_by) = number(entry, &["added_snapshot_id"]) else {
                return Err("a manifest list entry has no `added_snapshot_id`".to_owned());
            };
            if !snapshots.contains(&added_by) {
                continue;
            }
            let path = field(entry, "manifest_path")
                .map(|v| format!("{:?}", unwrap_union(v)))
                .unwrap_or_default();
            if number(entry, &["content"]).unwrap_or(0) != 0 {
                return Err(format!(
                    "snapshot {added_by} added a delete manifest ({path})"
                ));
            }
            let deleted = number(entry, &["deleted_files_count", "deleted_data_files_count"]);
            if deleted.unwrap_or(0) != 0 {
                return Err(format!(
                    "snapshot {added_by} deleted files in a manifest of its own ({path})"
                ));
            }
            taken.push(entry.clone());
        }
        Ok(taken)
    }
}

/// The file metadata a manifest list of snapshot `snapshot_id` carries.
fn list_metadata(
    template: &HashMap<String, Vec<u8>>,
    snapshot_id: i64,
    parent_id: Option<i64>,
    sequence_number: i64,
    format_version: u8,
) -> HashMap<String, Vec<u8>> {
    let mut metadata = template.clone();
    metadata.insert("snapshot-id".into(), snapshot_id.to_string().into_bytes());
    match parent_id {
        Some(parent) => {
            metadata.insert("parent-snapshot-id".into(), parent.to_string().into_bytes());
        }
        None => {
            metadata.insert("parent-snapshot-id".into(), b"null".to_vec());
        }
    }
    metadata.insert(
        "format-version".into(),
        format_version.to_string().into_bytes(),
    );
    if format_version >= 2 {
        metadata.insert(
            "sequence-number".into(),
            sequence_number.to_string().into_bytes(),
        );
    } else {
        metadata.remove("sequence-number");
    }
    metadata
}

/// The manifest list of a new snapshot `snapshot_id` (sequence number `sequence_number`) on
/// top of the target's current snapshot (`ours`, absent when the table had none): every
/// manifest of `ours`, then the manifests the source's snapshots `appended` added (found in
/// the source's current list, `theirs`), stamped as added by the new snapshot so the files in
/// them that inherit inherit it.
pub fn recommit(
    ours: Option<&ManifestList>,
    theirs: &ManifestList,
    appended: &BTreeSet<i64>,
    (snapshot_id, parent_id, sequence_number): (i64, Option<i64>, i64),
    format_version: u8,
    rewritten: &BTreeMap<String, Rewritten>,
) -> Result<Recommitted, String> {
    let taken = theirs.added_by(appended)?;
    let base = ours.unwrap_or(theirs);
    let record_schema = &base.schema;
    let mut writer = apache_avro::Writer::new(record_schema, Vec::new());
    for (key, value) in list_metadata(
        &base.metadata,
        snapshot_id,
        parent_id,
        sequence_number,
        format_version,
    ) {
        writer
            .add_user_metadata(key, value)
            .map_err(|e| e.to_string())?;
    }
    for entry in ours.map(|l| l.entries.as_slice()).unwrap_or_default() {
        writer.append(entry.clone()).map_err(|e| e.to_string())?;
    }
    let mut added = Added::default();
    for entry in taken {
        let path = match field(&entry, "manifest_path").map(unwrap_union) {
            Some(Value::String(path)) => path.clone(),
            _ => return Err("a manifest list entry has no `manifest_path`".to_owned()),
        };
        let mut entry = entry
            .resolve(record_schema)
            .map_err(|e| format!("a manifest of the source does not fit the target's list: {e}"))?;
        set_long(&mut entry, "added_snapshot_id", snapshot_id);
        match rewritten.get(&path) {
            // Only files the target holds already: nothing of it is re-committed.
            Some(Rewritten { copy: None, .. }) => continue,
            Some(Rewritten {
                copy: Some((copy, length)),
                files,
                rows,
            }) => {
                set_string(&mut entry, "manifest_path", copy.clone());
                set_long(&mut entry, "manifest_length", *length);
                let counts = [
                    (["added_files_count", "added_data_files_count"], *files),
                    (["existing_files_count", "existing_data_files_count"], 0),
                    (["deleted_files_count", "deleted_data_files_count"], 0),
                ];
                for (names, value) in counts {
                    for name in names {
                        set_int_or_long(&mut entry, name, value);
                    }
                }
                for (name, value) in [
                    ("added_rows_count", *rows),
                    ("existing_rows_count", 0),
                    ("deleted_rows_count", 0),
                ] {
                    set_int_or_long(&mut entry, name, value);
                }
            }
            None => {}
        }
        added.manifests += 1;
        added.files += number(&entry, &["added_files_count", "added_data_files_count"])
            .unwrap_or(0)
            .max(0) as u64;
        added.rows += number(&entry, &["added_rows_count"]).unwrap_or(0).max(0) as u64;
        if format_version >= 2 {
            set_long(&mut entry, "sequence_number", sequence_number);
            set_long(&mut entry, "min_sequence_number", sequence_number);
        }
        writer.append(entry).map_err(|e| e.to_string())?;
    }
    let bytes = writer.into_inner().map_err(|e| e.to_string())?;
    Ok(Recommitted { bytes, added })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manifest list schema of format version 2, as the spec gives it (a subset of the
    /// optional fields).
    const V2: &str = r#"{"type": "record", "name": "manifest_file", "fields": [
        {"name": "manifest_path", "type": "string", "field-id": 500},
        {"name": "manifest_length", "type": "long", "field-id": 501},
        {"name": "partition_spec_id", "type": "int", "field-id": 502},
        {"name": "content", "type": "int", "field-id": 517},
        {"name": "sequence_number", "type": "long", "field-id": 515},
        {"name": "min_sequence_number", "type": "long", "field-id": 516},
        {"name": "added_snapshot_id", "type": "long", "field-id": 503},
        {"name": "added_files_count", "type": "int", "field-id": 504},
        {"name": "existing_files_count", "type": "int", "field-id": 505},
        {"name": "deleted_files_count", "type": "int", "field-id": 506},
        {"name": "added_rows_count", "type": "long", "field-id": 512},
        {"name": "existing_rows_count", "type": "long", "field-id": 513},
        {"name": "deleted_rows_count", "type": "long", "field-id": 514},
        {"name": "key_metadata", "type": ["null", "bytes"], "default": null, "field-id": 519}
    ]}"#;

    fn entry(path: &str, snapshot: i64, sequence: i64, existing: i32) -> Value {
        Value::Record(vec![
            ("manifest_path".into(), Value::String(path.into())),
            ("manifest_length".into(), Value::Long(100)),
            ("partition_spec_id".into(), Value::Int(0)),
            ("content".into(), Value::Int(0)),
            ("sequence_number".into(), Value::Long(sequence)),
            ("min_sequence_number".into(), Value::Long(sequence)),
            ("added_snapshot_id".into(), Value::Long(snapshot)),
            ("added_files_count".into(), Value::Int(2)),
            ("existing_files_count".into(), Value::Int(existing)),
            ("deleted_files_count".into(), Value::Int(0)),
            ("added_rows_count".into(), Value::Long(10)),
            ("existing_rows_count".into(), Value::Long(0)),
            ("deleted_rows_count".into(), Value::Long(0)),
            (
                "key_metadata".into(),
                Value::Union(0, Box::new(Value::Null)),
            ),
        ])
    }

    fn list(entries: Vec<Value>) -> Vec<u8> {
        let schema = Schema::parse_str(V2).unwrap();
        let mut writer = apache_avro::Writer::new(&schema, Vec::new());
        writer
            .add_user_metadata("format-version".into(), "2")
            .unwrap();
        for e in entries {
            writer.append(e).unwrap();
        }
        writer.into_inner().unwrap()
    }

    #[test]
    fn the_sources_appended_manifests_follow_the_targets_restamped() {
        let ours = ManifestList::read(&list(vec![
            entry("m-base", 1, 1, 0),
            entry("m-ours", 2, 2, 0),
        ]))
        .unwrap();
        let theirs = ManifestList::read(&list(vec![
            entry("m-base", 1, 1, 0),
            entry("m-theirs-a", 3, 2, 0),
            entry("m-theirs-b", 4, 3, 0),
        ]))
        .unwrap();
        let made = recommit(
            Some(&ours),
            &theirs,
            &BTreeSet::from([3, 4]),
            (9, Some(2), 5),
            2,
            &BTreeMap::from([(
                "m-theirs-b".to_owned(),
                Rewritten {
                    copy: Some(("m-new".to_owned(), 7)),
                    files: 2,
                    rows: 20,
                },
            )]),
        )
        .unwrap();
        assert_eq!(
            made.added,
            Added {
                manifests: 2,
                files: 4,
                rows: 30
            }
        );
        let read = apache_avro::Reader::new(made.bytes.as_slice()).unwrap();
        assert_eq!(read.user_metadata()["snapshot-id"], b"9");
        assert_eq!(read.user_metadata()["parent-snapshot-id"], b"2");
        assert_eq!(read.user_metadata()["sequence-number"], b"5");
        let entries: Vec<Value> = read.map(Result::unwrap).collect();
        let paths: Vec<String> = entries
            .iter()
            .map(|e| match field(e, "manifest_path") {
                Some(Value::String(s)) => s.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(paths, ["m-base", "m-ours", "m-theirs-a", "m-new"]);
        assert_eq!(number(&entries[3], &["manifest_length"]), Some(7));
        assert_eq!(number(&entries[3], &["added_rows_count"]), Some(20));
        assert_eq!(
            number(&entries[1], &["added_snapshot_id"]),
            Some(2),
            "ours as they were"
        );
        for taken in &entries[2..] {
            assert_eq!(number(taken, &["added_snapshot_id"]), Some(9));
            assert_eq!(number(taken, &["sequence_number"]), Some(5));
            assert_eq!(number(taken, &["min_sequence_number"]), Some(5));
        }
    }

    #[test]
    fn a_merged_manifest_goes_in_as_its_copy_and_one_holding_nothing_new_is_left_out() {
        let theirs = ManifestList::read(&list(vec![
            entry("m-merged", 3, 2, 5),
            entry("m-old-only", 4, 3, 5),
        ]))
        .unwrap();
        let rewritten = BTreeMap::from([
            (
                "m-merged".to_owned(),
                Rewritten {
                    copy: Some(("m-copy".to_owned(), 11)),
                    files: 1,
                    rows: 4,
                },
            ),
            (
                "m-old-only".to_owned(),
                Rewritten {
                    copy: None,
                    files: 0,
                    rows: 0,
                },
            ),
        ]);
        let made = recommit(
            None,
            &theirs,
            &BTreeSet::from([3, 4]),
            (9, None, 1),
            2,
            &rewritten,
        )
        .unwrap();
        assert_eq!(
            made.added,
            Added {
                manifests: 1,
                files: 1,
                rows: 4
            }
        );
        let entries: Vec<Value> = apache_avro::Reader::new(made.bytes.as_slice())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(entries.len(), 1);
        assert_eq!(number(&entries[0], &["existing_files_count"]), Some(0));
        assert_eq!(number(&entries[0], &["added_files_count"]), Some(1));
    }

    #[test]
    fn a_manifest_recording_deletes_is_refused() {
        let mut deleting = entry("m-deleting", 3, 2, 0);
        set_int_or_long(&mut deleting, "deleted_files_count", 1);
        let theirs = ManifestList::read(&list(vec![deleting])).unwrap();
        let error = recommit(
            None,
            &theirs,
            &BTreeSet::from([3]),
            (9, None, 1),
            2,
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert!(error.contains("deleted files"), "{error}");
    }

    /// A manifest's entries, with the fields a re-stamp reads.
    const MANIFEST: &str = r#"{"type": "record", "name": "manifest_entry", "fields": [
        {"name": "status", "type": "int", "field-id": 0},
        {"name": "snapshot_id", "type": ["null", "long"], "field-id": 1},
        {"name": "sequence_number", "type": ["null", "long"], "field-id": 3},
        {"name": "file_sequence_number", "type": ["null", "long"], "field-id": 4},
        {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": [
            {"name": "file_path", "type": "string", "field-id": 100},
            {"name": "record_count", "type": "long", "field-id": 103}]}, "field-id": 2}
    ]}"#;

    fn file(status: i32, snapshot: i64, path: &str, rows: i64) -> Value {
        let sequence = |n: i64| Value::Union(1, Box::new(Value::Long(n)));
        Value::Record(vec![
            ("status".into(), Value::Int(status)),
            ("snapshot_id".into(), sequence(snapshot)),
            ("sequence_number".into(), sequence(snapshot)),
            ("file_sequence_number".into(), sequence(snapshot)),
            (
                "data_file".into(),
                Value::Record(vec![
                    ("file_path".into(), Value::String(path.into())),
                    ("record_count".into(), Value::Long(rows)),
                ]),
            ),
        ])
    }

    fn manifest(entries: Vec<Value>) -> Vec<u8> {
        let schema = Schema::parse_str(MANIFEST).unwrap();
        let mut writer = apache_avro::Writer::new(&schema, Vec::new());
        for e in entries {
            writer.append(e).unwrap();
        }
        writer.into_inner().unwrap()
    }

    #[test]
    fn a_restamped_manifest_keeps_the_sources_files_and_drops_the_earlier_ones() {
        // Snapshot 4 merged: its own file, one snapshot 3 of the source added, one of the base.
        let merged = manifest(vec![
            file(1, 4, "new.parquet", 3),
            file(0, 3, "earlier-on-the-source.parquet", 5),
            file(0, 1, "base.parquet", 7),
        ]);
        let restamped = restamp_manifest(&merged, 9, &BTreeSet::from([3, 4])).unwrap();
        assert_eq!((restamped.files, restamped.rows), (2, 8));
        let entries: Vec<Value> = apache_avro::Reader::new(restamped.bytes.unwrap().as_slice())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let paths: Vec<String> = entries
            .iter()
            .map(
                |e| match field(field(e, "data_file").unwrap(), "file_path") {
                    Some(Value::String(s)) => s.clone(),
                    other => panic!("{other:?}"),
                },
            )
            .collect();
        assert_eq!(paths, ["new.parquet", "earlier-on-the-source.parquet"]);
        for entry in &entries {
            assert_eq!(number(entry, &["status"]), Some(1), "added");
            assert_eq!(number(entry, &["snapshot_id"]), Some(9));
            assert_eq!(number(entry, &["sequence_number"]), None, "inherited");
        }

        let only_old = manifest(vec![file(0, 1, "base.parquet", 7)]);
        let restamped = restamp_manifest(&only_old, 9, &BTreeSet::from([3])).unwrap();
        assert_eq!(restamped.bytes, None);
        let deleting = manifest(vec![file(2, 3, "gone.parquet", 1)]);
        assert!(restamp_manifest(&deleting, 9, &BTreeSet::from([3])).is_err());
    }
}
