//! What the table tests share: a catalog with a local warehouse in a temporary directory, and
//! the requests and checks they make of it.

pub use std::collections::BTreeMap;
pub use std::path::{Path, PathBuf};
pub use std::sync::Arc;

pub use pangolin_backend_memory::MemoryBackend;
pub use pangolin_backend_sqlite::SqliteBackend;
pub use pangolin_catalog::TableChange;
pub use pangolin_catalog::iceberg::io::IoError;
pub use pangolin_catalog::iceberg::metadata::Schema;
pub use pangolin_catalog::iceberg::{FileIo, NewTable, TableRequirement, TableUpdate, UpdateError};
pub use pangolin_catalog::{
    Catalog, CommitError, CommitMeta, Committed, LoadedTable, RefSpec, Store, TableError, Warehouse,
};
pub use pangolin_refs::{Expected, RefName, RefUpdate, Reference, Target, Transaction};
pub use pangolin_store::{ContentKey, ContentKind, ObjectCache, ObjectId, Timestamp};
pub use serde_json::{Value, json};
pub use tempfile::TempDir;

pub fn key(path: &str) -> ContentKey {
    ContentKey::new(path.split('.')).unwrap()
}

pub fn meta(message: &str) -> CommitMeta {
    CommitMeta {
        principal: "ana".into(),
        message: message.into(),
        properties: BTreeMap::new(),
    }
}

pub fn spec(s: &str) -> RefSpec {
    RefSpec::parse(s).unwrap()
}

pub fn branch(name: &str) -> Reference {
    Reference::branch(RefName::new(name).unwrap())
}

pub fn main() -> Reference {
    branch("main")
}

/// A catalog with a warehouse in a temporary directory (kept alive with it).
pub struct Lake {
    pub catalog: Catalog,
    pub dir: TempDir,
}

impl Lake {
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("warehouse")
    }
}

pub async fn lake_over(store: Arc<dyn Store>, dir: TempDir) -> Lake {
    let catalog = Catalog::create(
        store,
        Arc::new(ObjectCache::new(16 << 20)),
        "acme",
        "lake",
        "ana",
    )
    .await
    .unwrap();
    let root = format!("file://{}", dir.path().join("warehouse").display());
    let catalog = catalog.with_warehouse(Warehouse::new(root, Arc::new(FileIo::new(16 << 20))));
    let lake = Lake { catalog, dir };
    lake.catalog
        .create_namespace(&main(), &key("db"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    lake
}

/// Another catalog `name` on the same store, whose warehouse is the lake's.
pub async fn neighbour(lake: &Lake, name: &str) -> Catalog {
    let catalog = Catalog::create(
        lake.catalog.store().clone(),
        Arc::new(ObjectCache::new(16 << 20)),
        "acme",
        name,
        "ana",
    )
    .await
    .unwrap();
    let root = format!("file://{}", lake.root().display());
    let catalog = catalog.with_warehouse(Warehouse::new(root, Arc::new(FileIo::new(16 << 20))));
    catalog
        .create_namespace(&main(), &key("db"), BTreeMap::new(), &meta("ns"))
        .await
        .unwrap();
    catalog
}

pub async fn lake() -> Lake {
    lake_over(Arc::new(MemoryBackend::new()), tempfile::tempdir().unwrap()).await
}

pub async fn sqlite_lake() -> Lake {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteBackend::open(dir.path().join("catalog.db"))
        .await
        .unwrap();
    lake_over(Arc::new(store), dir).await
}

pub fn schema() -> Schema {
    serde_json::from_value(json!({
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": true, "type": "long"},
            {"id": 2, "name": "data", "required": false, "type": "string"}
        ]
    }))
    .unwrap()
}

pub fn new_table() -> NewTable {
    NewTable {
        location: String::new(),
        schema: schema(),
        partition_spec: None,
        sort_order: None,
        properties: BTreeMap::new(),
    }
}

pub async fn create(catalog: &Catalog, at: &Reference, name: &str) -> LoadedTable {
    catalog
        .create_table(at, &key(name), new_table(), &meta("create"))
        .await
        .unwrap()
        .1
}

pub fn update(value: Value) -> TableUpdate {
    serde_json::from_value(value).unwrap()
}

pub fn requirement(value: Value) -> TableRequirement {
    serde_json::from_value(value).unwrap()
}

pub fn requires_main_at(snapshot: Option<i64>) -> TableRequirement {
    requirement(json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": snapshot}))
}

/// An append as PyIceberg commits it: a snapshot, and main moved to it.
pub fn append_updates(snapshot_id: i64, parent: Option<i64>, sequence: i64) -> Vec<TableUpdate> {
    let mut snapshot = json!({
        "snapshot-id": snapshot_id,
        "sequence-number": sequence,
        "timestamp-ms": Timestamp::now().as_millis(),
        "manifest-list": format!("s3://elsewhere/snap-{snapshot_id}.avro"),
        "summary": {"operation": "append", "added-records": "1"},
        "schema-id": 0
    });
    if let Some(parent) = parent {
        snapshot["parent-snapshot-id"] = json!(parent);
    }
    vec![
        update(json!({"action": "add-snapshot", "snapshot": snapshot})),
        update(
            json!({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}),
        ),
    ]
}

/// Appends snapshot `snapshot_id` on top of `parent`, asserting main is at `parent`.
pub async fn append(
    catalog: &Catalog,
    at: &Reference,
    name: &str,
    snapshot_id: i64,
    parent: Option<i64>,
    sequence: i64,
) -> Result<(Committed, LoadedTable), CommitError<TableError>> {
    catalog
        .commit_table(
            at,
            &key(name),
            vec![requires_main_at(parent)],
            append_updates(snapshot_id, parent, sequence),
            &meta("append"),
        )
        .await
}

/// The local path of a `file://` location.
pub fn local(location: &str) -> PathBuf {
    PathBuf::from(location.strip_prefix("file://").unwrap())
}

/// File names in a table's `metadata` directory, sorted.
pub fn metadata_files(table_location: &str) -> Vec<String> {
    let dir = local(table_location).join("metadata");
    let mut names: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

pub fn file_name(location: &str) -> &str {
    location.rsplit('/').next().unwrap()
}

pub async fn head(catalog: &Catalog, at: &str) -> ObjectId {
    catalog.resolve(&spec(at)).await.unwrap().commit
}

/// Moves `reference` to `target` if it is as `expected`, through the store's ref transaction.
pub async fn move_ref(catalog: &Catalog, reference: Reference, expected: Expected, target: Target) {
    let tx = Transaction {
        updates: vec![RefUpdate {
            reference,
            expected,
            target,
        }],
        principal: "ana".into(),
        message: "move".into(),
        time: Timestamp::now(),
    };
    catalog
        .store()
        .transact(catalog.odb().repo(), tx)
        .await
        .unwrap();
}

/// Creates branch `name` at the head of `from`.
pub async fn new_branch(catalog: &Catalog, name: &str, from: &str) {
    let head = head(catalog, from).await;
    move_ref(catalog, branch(name), Expected::Absent, Target::Set(head)).await;
}

pub fn count_files(dir: &Path) -> usize {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    count_files(&e.path())
                } else {
                    1
                }
            })
            .sum(),
        Err(_) => 0,
    }
}
