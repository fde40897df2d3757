//! Iceberg's Avro files, read only for the paths they name: a manifest list names manifests,
//! a manifest names data and delete files.
//!
//! Read by field name, not against a fixed schema, so manifests of every format version and
//! of every writer (v1's extra fields, v3's deletion vectors) read the same way.

use apache_avro::types::Value;

/// The manifests a manifest list names (`manifest_path` of every entry).
pub fn manifest_paths(bytes: &[u8]) -> Result<Vec<String>, String> {
    paths(bytes, &["manifest_path"])
}

/// The data and delete files a manifest names (`data_file.file_path` of every entry). Entries
/// of every status count, deleted ones too: an older snapshot may still read the file.
pub fn content_file_paths(bytes: &[u8]) -> Result<Vec<String>, String> {
    paths(bytes, &["data_file", "file_path"])
}

/// The string at `path` (record fields, outermost first) in every record of an Avro file.
fn paths(bytes: &[u8], path: &[&str]) -> Result<Vec<String>, String> {
    let reader = apache_avro::Reader::new(bytes).map_err(|e| e.to_string())?;
    let mut found = Vec::new();
    for (index, value) in reader.enumerate() {
        let value = value.map_err(|e| format!("record {index}: {e}"))?;
        let mut at = &value;
        for name in path {
            at = field(at, name)
                .ok_or_else(|| format!("record {index} has no `{}`", path.join(".")))?;
        }
        match unwrap_union(at) {
            Value::String(s) => found.push(s.clone()),
            other => {
                return Err(format!(
                    "record {index}: `{}` is not a string but {other:?}",
                    path.join(".")
                ));
            }
        }
    }
    Ok(found)
}

fn unwrap_union(value: &Value) -> &Value {
    match value {
        Value::Union(_, inner) => inner,
        other => other,
    }
}

fn field<'a>(value: &'a Value, name: &str) -> Option<&'a Value> {
    match unwrap_union(value) {
        Value::Record(fields) => fields.iter().find(|(n, _)| n == name).map(|(_, v)| v),
        _ => None,
    }
}
