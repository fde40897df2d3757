//! What the tests of the file sweep share: Iceberg's Avro files written as its writers write
//! them, snapshots appended with real files, and files aged past a grace period.

use std::time::{Duration, SystemTime};

use apache_avro::types::Value as Avro;
use apache_avro::{Codec, DeflateSettings, Schema as AvroSchema, Writer};
use pangolin_catalog::orphans::{SweepReport, SweepRequest};
use pangolin_catalog::retention::RetentionPolicy;

use super::lake::*;

const MANIFEST_LIST: &str = r#"{"type": "record", "name": "manifest_file", "fields": [
    {"name": "manifest_path", "type": "string", "field-id": 500},
    {"name": "manifest_length", "type": "long", "field-id": 501},
    {"name": "partition_spec_id", "type": "int", "field-id": 502},
    {"name": "added_snapshot_id", "type": ["null", "long"], "default": null}
]}"#;

const MANIFEST: &str = r#"{"type": "record", "name": "manifest_entry", "fields": [
    {"name": "status", "type": "int", "field-id": 0},
    {"name": "snapshot_id", "type": ["null", "long"], "default": null, "field-id": 1},
    {"name": "data_file", "field-id": 2, "type": {"type": "record", "name": "r2", "fields": [
        {"name": "content", "type": "int", "field-id": 134},
        {"name": "file_path", "type": "string", "field-id": 100},
        {"name": "file_format", "type": "string", "field-id": 101},
        {"name": "record_count", "type": "long", "field-id": 103},
        {"name": "referenced_data_file", "type": ["null", "string"], "default": null}
    ]}}
]}"#;

/// A manifest list naming `manifests`, deflated as Iceberg's writers do.
pub fn manifest_list(manifests: &[String]) -> Vec<u8> {
    let schema = AvroSchema::parse_str(MANIFEST_LIST).unwrap();
    let mut writer = Writer::with_codec(
        &schema,
        Vec::new(),
        Codec::Deflate(DeflateSettings::default()),
    );
    for path in manifests {
        writer
            .append(Avro::Record(vec![
                ("manifest_path".into(), Avro::String(path.clone())),
                ("manifest_length".into(), Avro::Long(1234)),
                ("partition_spec_id".into(), Avro::Int(0)),
                (
                    "added_snapshot_id".into(),
                    Avro::Union(1, Box::new(Avro::Long(7))),
                ),
            ]))
            .unwrap();
    }
    writer.into_inner().unwrap()
}

/// A manifest naming `files`, the second of them as a deleted entry.
pub fn manifest_of(files: &[String]) -> Vec<u8> {
    let schema = AvroSchema::parse_str(MANIFEST).unwrap();
    let mut writer = Writer::new(&schema, Vec::new());
    for (i, path) in files.iter().enumerate() {
        writer
            .append(Avro::Record(vec![
                ("status".into(), Avro::Int(if i == 1 { 2 } else { 1 })),
                ("snapshot_id".into(), Avro::Union(0, Box::new(Avro::Null))),
                (
                    "data_file".into(),
                    Avro::Record(vec![
                        ("content".into(), Avro::Int(0)),
                        ("file_path".into(), Avro::String(path.clone())),
                        ("file_format".into(), Avro::String("PARQUET".into())),
                        ("record_count".into(), Avro::Long(10)),
                        (
                            "referenced_data_file".into(),
                            Avro::Union(0, Box::new(Avro::Null)),
                        ),
                    ]),
                ),
            ]))
            .unwrap();
    }
    writer.into_inner().unwrap()
}

/// Writes `bytes` at the local `location`, creating its folders.
pub fn put(location: &str, bytes: &[u8]) {
    let path = local(location);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Sets the modification time of every file under `dir` (if any) an hour back, but `except`.
pub fn backdate(dir: &Path, except: &[PathBuf]) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            backdate(&path, except);
        } else if !except.contains(&path) {
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(SystemTime::now() - Duration::from_secs(3600))
                .unwrap();
        }
    }
}

/// The files of one snapshot: a data file, a manifest naming it, and a manifest list naming
/// that manifest and every manifest before it (a fast append). Returns all three.
pub fn snapshot_files(table_location: &str, id: i64, manifests: &mut Vec<String>) -> Vec<String> {
    let data = format!("{table_location}/data/{id}.parquet");
    put(&data, format!("rows of {id}").as_bytes());
    let manifest = format!("{table_location}/metadata/{id}-m0.avro");
    put(&manifest, &manifest_of(std::slice::from_ref(&data)));
    manifests.push(manifest.clone());
    let list = format!("{table_location}/metadata/snap-{id}.avro");
    put(&list, &manifest_list(manifests));
    vec![data, manifest, list]
}

/// Appends snapshot `id` with real files to table `name` on `at`.
pub async fn append_with_files(
    catalog: &Catalog,
    at: &Reference,
    name: &str,
    id: i64,
    manifests: &mut Vec<String>,
) -> Vec<String> {
    let table = catalog
        .load_table(&RefSpec::Named(at.name.clone()), &key(name))
        .await
        .unwrap();
    let parent = table.metadata.current_snapshot_id;
    let sequence = table.metadata.last_sequence_number + 1;
    let files = snapshot_files(&table.metadata.location, id, manifests);
    let mut updates = append_updates(id, parent, sequence);
    if let TableUpdate::AddSnapshot { snapshot } = &mut updates[0] {
        snapshot.manifest_list = Some(files[2].clone());
    }
    catalog
        .commit_table(
            at,
            &key(name),
            vec![requires_main_at(parent)],
            updates,
            &meta("append"),
        )
        .await
        .unwrap();
    files
}

/// A retention policy keeping `ms` of history (far below what the API accepts, so tests need
/// not wait an hour).
pub fn window(ms: u64) -> Option<Arc<RetentionPolicy>> {
    Some(Arc::new(RetentionPolicy {
        history_ms: ms,
        branches: Vec::new(),
    }))
}

pub fn sweep_request(dry_run: bool) -> SweepRequest {
    SweepRequest {
        grace_ms: 10 * 60 * 1000,
        dry_run,
        shown: 100,
    }
}

pub fn orphan_names(report: &SweepReport) -> Vec<&str> {
    report
        .orphans
        .iter()
        .map(|f| file_name(&f.location))
        .collect()
}

pub fn exists(location: &str) -> bool {
    local(location).exists()
}

/// Moves branch `name` to `to` whatever it points at, as a reset does.
pub async fn reset(catalog: &Catalog, name: &str, to: ObjectId) {
    move_ref(catalog, branch(name), Expected::Any, Target::Set(to)).await;
}
