//! What changed between two versions of a table's metadata, in words, for logs and diffs.

use super::metadata::{RefType, Schema, TableMetadata};

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
        let columns = match (before.current_schema(), after.current_schema()) {
            (Some(b), Some(a)) => column_changes(b, a),
            _ => Vec::new(),
        };
        if columns.is_empty() {
            out.push(format!("schema changed to {}", after.current_schema_id));
        }
        out.extend(columns);
    }
    if before.default_spec_id != after.default_spec_id {
        out.push(match after.spec(after.default_spec_id) {
            Some(spec) if spec.fields.is_empty() => "partitioning removed".to_owned(),
            Some(spec) => format!(
                "partitioned by {}",
                spec.fields
                    .iter()
                    .map(|f| format!("{} ({})", f.name, f.transform))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => format!("partition spec changed to {}", after.default_spec_id),
        });
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

/// A schema change as a column diff: columns added, dropped, renamed, retyped, or made
/// optional or required, by field id, in id order.
fn column_changes(before: &Schema, after: &Schema) -> Vec<String> {
    let (old, new) = (before.index(), after.index());
    let mut ids: Vec<i32> = old.keys().chain(new.keys()).copied().collect();
    ids.sort_unstable();
    ids.dedup();
    let mut lines = Vec::new();
    for id in ids {
        match (old.get(&id), new.get(&id)) {
            (None, Some(added)) => lines.push(format!(
                "column `{}` added ({})",
                added.path,
                added.field_type.describe()
            )),
            (Some(dropped), None) => lines.push(format!("column `{}` dropped", dropped.path)),
            (Some(was), Some(now)) => {
                if was.path != now.path {
                    lines.push(format!("column `{}` renamed to `{}`", was.path, now.path));
                }
                if was.field_type.as_primitive().is_some()
                    && was.field_type.describe() != now.field_type.describe()
                {
                    lines.push(format!(
                        "column `{}` changed from {} to {}",
                        now.path,
                        was.field_type.describe(),
                        now.field_type.describe()
                    ));
                }
                if was.required != now.required {
                    let made = if now.required { "required" } else { "optional" };
                    lines.push(format!("column `{}` made {made}", now.path));
                }
            }
            (None, None) => {}
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::{MetadataBuilder, TableUpdate};

    fn meta() -> TableMetadata {
        serde_json::from_value(serde_json::json!({
            "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "file:///t", "last-sequence-number": 0, "last-updated-ms": 1,
            "last-column-id": 3, "current-schema-id": 0, "schemas": [{"type": "struct",
                "schema-id": 0, "fields": [
                    {"id": 1, "name": "id", "required": true, "type": "int"},
                    {"id": 2, "name": "name", "required": true, "type": "string"},
                    {"id": 3, "name": "gone", "required": false, "type": "string"}]}],
            "partition-specs": [{"spec-id": 0, "fields": []}], "default-spec-id": 0,
            "last-partition-id": 999, "sort-orders": [{"order-id": 0, "fields": []}],
            "default-sort-order-id": 0
        }))
        .unwrap()
    }

    #[test]
    fn a_schema_change_reads_as_a_column_diff() {
        let before = meta();
        let updates: Vec<TableUpdate> = serde_json::from_value(serde_json::json!([
            {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
                {"id": 1, "name": "id", "required": true, "type": "long"},
                {"id": 2, "name": "full_name", "required": false, "type": "string"},
                {"id": 4, "name": "email", "required": false, "type": "string"}]}},
            {"action": "set-current-schema", "schema-id": -1},
            {"action": "add-spec", "spec": {"fields": [
                {"name": "id_bucket", "transform": "bucket[8]", "source-id": 1}]}},
            {"action": "set-default-spec", "spec-id": -1}
        ]))
        .unwrap();
        let mut builder = MetadataBuilder::new(before.clone());
        builder.apply_all(&updates, 2).unwrap();
        let after = builder.build(2).unwrap();
        let lines = describe(Some(&before), Some(&after));
        for expected in [
            "column `id` changed from int to long",
            "column `name` renamed to `full_name`",
            "column `full_name` made optional",
            "column `gone` dropped",
            "column `email` added (string)",
            "partitioned by id_bucket (bucket[8])",
        ] {
            assert!(lines.iter().any(|l| l == expected), "{expected}: {lines:?}");
        }
    }
}
