//! What changed between two versions of a table's metadata, in words, for logs and diffs.

use super::metadata::{RefType, TableMetadata};

/// Sentences describing the change from `before` to `after` (`None`: no table).
pub fn describe(before: Option<&TableMetadata>, after: Option<&TableMetadata>) -> Vec<String> {
    let (before, after) = match (before, after) {
        (None, None) => return Vec::new(),
        (None, Some(after)) => {
            return vec![format!(
                "table created (format version {}, {} columns)",
                after.format_version,
                after.current_schema().map_or(0, |s| s.fields.fields.len())
            )];
        }
        (Some(_), None) => return vec!["table dropped".to_owned()],
        (Some(before), Some(after)) => (before, after),
    };
    let mut out = Vec::new();
    for snapshot in &after.snapshots {
        if before.snapshot(snapshot.snapshot_id).is_none() {
            let mut line = format!(
                "snapshot {} added: {}",
                snapshot.snapshot_id,
                snapshot.operation().unwrap_or("unknown operation")
            );
            for (key, label) in [
                ("added-records", "records added"),
                ("deleted-records", "records deleted"),
                ("added-data-files", "data files added"),
            ] {
                if let Some(n) = snapshot.summary.get(key) {
                    line.push_str(&format!(", {n} {label}"));
                }
            }
            out.push(line);
        }
    }
    let removed: Vec<String> = before
        .snapshots
        .iter()
        .filter(|s| after.snapshot(s.snapshot_id).is_none())
        .map(|s| s.snapshot_id.to_string())
        .collect();
    if !removed.is_empty() {
        out.push(format!("snapshots removed: {}", removed.join(", ")));
    }
    if before.current_snapshot_id != after.current_snapshot_id
        && after
            .current_snapshot_id
            .is_some_and(|id| before.snapshot(id).is_some())
    {
        out.push(format!(
            "current snapshot set back to {}",
            after.current_snapshot_id.unwrap_or_default()
        ));
    }
    for (name, r) in &after.refs {
        if name != super::metadata::MAIN_BRANCH && before.refs.get(name) != Some(r) {
            let kind = match r.kind {
                RefType::Branch => "branch",
                RefType::Tag => "tag",
            };
            out.push(format!("{kind} `{name}` set to snapshot {}", r.snapshot_id));
        }
    }
    for name in before.refs.keys() {
        if !after.refs.contains_key(name) {
            out.push(format!("ref `{name}` removed"));
        }
    }
    if before.current_schema_id != after.current_schema_id {
        out.push(format!("schema changed to {}", after.current_schema_id));
    }
    if before.default_spec_id != after.default_spec_id {
        out.push(format!(
            "partition spec changed to {}",
            after.default_spec_id
        ));
    }
    if before.default_sort_order_id != after.default_sort_order_id {
        out.push(format!(
            "sort order changed to {}",
            after.default_sort_order_id
        ));
    }
    if before.format_version != after.format_version {
        out.push(format!(
            "format version upgraded to {}",
            after.format_version
        ));
    }
    if before.location != after.location {
        out.push(format!("location changed to {}", after.location));
    }
    let set: Vec<&str> = after
        .properties
        .iter()
        .filter(|(k, v)| before.properties.get(*k) != Some(*v))
        .map(|(k, _)| k.as_str())
        .collect();
    if !set.is_empty() {
        out.push(format!("properties set: {}", set.join(", ")));
    }
    let unset: Vec<&str> = before
        .properties
        .keys()
        .filter(|k| !after.properties.contains_key(*k))
        .map(String::as_str)
        .collect();
    if !unset.is_empty() {
        out.push(format!("properties removed: {}", unset.join(", ")));
    }
    out
}
