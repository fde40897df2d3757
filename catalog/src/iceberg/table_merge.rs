//! Whether two branches' changes to the same Iceberg table commute, and if so what merging
//! them means: a pure function of the table's metadata at the merge base, on the target
//! (ours) and on the source (theirs).
//!
//! The changes commute when the source only appended data on `main` (each new snapshot an
//! `append`) while the target only appended too or appended nothing, and when the source's
//! other changes touch nothing the target changed: properties the target left alone, a schema
//! that only gained fields while the target kept its own. The merge is then the target's
//! metadata with the source's appended files re-committed as one new snapshot on top and the
//! source's properties and schema applied. Anything else (overwrites, deletes, replaced or
//! rolled-back tables, new partitioning or sort orders, changed table refs, a property or the
//! schema changed on both sides) overlaps, and the reason says which change.

use std::collections::BTreeMap;

use super::metadata::{Snapshot, TableMetadata};
use super::schema::Schema;

/// Why two sides' changes to a table do not commute.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Overlap(pub String);

/// What merging the source's changes into the target's table does.
#[derive(Debug, Clone, PartialEq)]
pub struct TableMergePlan {
    /// The source's snapshots on `main` since the base, oldest first (all appends): their
    /// data files are re-committed on top of the target's as one new snapshot.
    pub appended: Vec<i64>,
    /// Properties the source set to a new value.
    pub set_properties: BTreeMap<String, String>,
    /// Properties the source removed.
    pub removed_properties: Vec<String>,
    /// The source's current schema, when only the source changed it (by adding fields).
    pub schema: Option<Schema>,
}

impl TableMergePlan {
    /// What the merge does to the table, in words.
    pub fn describe(&self) -> Vec<String> {
        let mut words = Vec::new();
        if !self.appended.is_empty() {
            words.push(format!(
                "the source's {} appended snapshot{} re-committed as one new snapshot on top of \
                 the target's",
                self.appended.len(),
                if self.appended.len() == 1 { "" } else { "s" }
            ));
        }
        if !self.set_properties.is_empty() {
            let keys: Vec<&str> = self.set_properties.keys().map(String::as_str).collect();
            words.push(format!("properties set: {}", keys.join(", ")));
        }
        if !self.removed_properties.is_empty() {
            words.push(format!(
                "properties removed: {}",
                self.removed_properties.join(", ")
            ));
        }
        if let Some(schema) = &self.schema {
            words.push(format!(
                "the source's schema (fields added), as schema {}",
                schema.schema_id
            ));
        }
        words
    }

    /// Whether the merge changes anything of the target's table.
    pub fn is_empty(&self) -> bool {
        self.appended.is_empty()
            && self.set_properties.is_empty()
            && self.removed_properties.is_empty()
            && self.schema.is_none()
    }
}

/// Which side a reason speaks of.
#[derive(Debug, Clone, Copy)]
enum Side {
    Target,
    Source,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Self::Target => "the target",
            Self::Source => "the source",
        }
    }
}

fn overlap(reason: String) -> Overlap {
    Overlap(reason)
}

/// The side's snapshots on `main` after the base's current snapshot, oldest first; an overlap
/// when its `main` does not descend from the base's (rolled back, or the table replaced).
fn new_on_main<'a>(
    base: &TableMetadata,
    side: &'a TableMetadata,
    which: Side,
) -> Result<Vec<&'a Snapshot>, Overlap> {
    let stop = base.current_snapshot_id;
    let mut chain = Vec::new();
    let mut at = side.current_snapshot_id;
    while at != stop {
        let Some(id) = at else {
            return Err(overlap(format!(
                "{}'s `main` does not descend from the base's snapshot (rolled back or replaced)",
                which.name()
            )));
        };
        let snapshot = side.snapshot(id).ok_or_else(|| {
            overlap(format!(
                "{}'s snapshot {id} is missing from its metadata",
                which.name()
            ))
        })?;
        chain.push(snapshot);
        at = snapshot.parent_snapshot_id;
    }
    chain.reverse();
    Ok(chain)
}

/// Refs other than `main` must be as they were at the base on the side.
fn refs_unchanged(base: &TableMetadata, side: &TableMetadata, which: Side) -> Result<(), Overlap> {
    let others = |m: &TableMetadata| {
        m.refs
            .iter()
            .filter(|(name, _)| name.as_str() != "main")
            .map(|(name, r)| (name.clone(), r.snapshot_id))
            .collect::<BTreeMap<_, _>>()
    };
    let (before, after) = (others(base), others(side));
    if before != after {
        let changed: Vec<&str> = before
            .keys()
            .chain(after.keys())
            .filter(|name| before.get(*name) != after.get(*name))
            .map(String::as_str)
            .collect();
        return Err(overlap(format!(
            "{} changed the table's branches or tags ({})",
            which.name(),
            changed.join(", ")
        )));
    }
    Ok(())
}

fn only_appends(snapshots: &[&Snapshot], which: Side) -> Result<(), Overlap> {
    for snapshot in snapshots {
        let operation = snapshot.operation().unwrap_or("unknown");
        if operation != "append" {
            return Err(overlap(format!(
                "{}'s snapshot {} is an `{operation}`, not an append",
                which.name(),
                snapshot.snapshot_id
            )));
        }
    }
    Ok(())
}

fn same_schema(a: Option<&Schema>, b: Option<&Schema>) -> bool {
    a.map(|s| &s.fields) == b.map(|s| &s.fields)
        && a.map(|s| &s.identifier_field_ids) == b.map(|s| &s.identifier_field_ids)
}

/// `after` keeps every field of `before` (same id, name path, type and requiredness) and only
/// adds optional fields.
fn only_adds_fields(before: Option<&Schema>, after: &Schema) -> Result<(), String> {
    let Some(before) = before else {
        return Ok(());
    };
    let old = before.index();
    let new = after.index();
    for (id, field) in &old {
        match new.get(id) {
            None => return Err(format!("dropped `{}`", field.path)),
            Some(kept) if kept.path != field.path => {
                return Err(format!("renamed `{}` to `{}`", field.path, kept.path));
            }
            Some(kept) if kept.field_type != field.field_type => {
                return Err(format!("changed the type of `{}`", field.path));
            }
            Some(kept) if kept.required != field.required => {
                return Err(format!("changed whether `{}` is required", field.path));
            }
            Some(_) => {}
        }
    }
    for (id, field) in &new {
        if !old.contains_key(id) && field.required {
            return Err(format!("added `{}` as a required field", field.path));
        }
    }
    Ok(())
}

/// Plans the merge of the source's (`theirs`) changes since `base` into the target's
/// (`ours`) table, or says why they overlap.
pub fn plan(
    base: &TableMetadata,
    ours: &TableMetadata,
    theirs: &TableMetadata,
) -> Result<TableMergePlan, Overlap> {
    if ours.table_uuid != base.table_uuid || theirs.table_uuid != base.table_uuid {
        return Err(overlap(
            "the table was replaced on one side (its uuid changed)".to_owned(),
        ));
    }
    for (side, which) in [(ours, Side::Target), (theirs, Side::Source)] {
        if side.format_version != base.format_version {
            return Err(overlap(format!(
                "{} upgraded the table's format version",
                which.name()
            )));
        }
        if side.location != base.location {
            return Err(overlap(format!(
                "{} moved the table's location",
                which.name()
            )));
        }
        refs_unchanged(base, side, which)?;
    }
    let ours_new = new_on_main(base, ours, Side::Target)?;
    let theirs_new = new_on_main(base, theirs, Side::Source)?;
    only_appends(&theirs_new, Side::Source)?;
    if !theirs_new.is_empty() {
        only_appends(&ours_new, Side::Target)?;
    }
    if theirs.partition_specs != base.partition_specs
        || theirs.default_spec_id != base.default_spec_id
    {
        return Err(overlap(
            "the source changed the table's partitioning".to_owned(),
        ));
    }
    if theirs.sort_orders != base.sort_orders
        || theirs.default_sort_order_id != base.default_sort_order_id
    {
        return Err(overlap(
            "the source changed the table's sort order".to_owned(),
        ));
    }

    let schema = if same_schema(base.current_schema(), theirs.current_schema())
        || same_schema(ours.current_schema(), theirs.current_schema())
    {
        None
    } else {
        if !same_schema(base.current_schema(), ours.current_schema()) {
            return Err(overlap("both sides changed the schema".to_owned()));
        }
        let theirs_schema = theirs
            .current_schema()
            .ok_or_else(|| overlap("the source's table has no current schema".to_owned()))?;
        only_adds_fields(base.current_schema(), theirs_schema).map_err(|change| {
            overlap(format!(
                "the source changed the schema other than by adding optional fields: {change}"
            ))
        })?;
        Some(theirs_schema.clone())
    };

    let mut set_properties = BTreeMap::new();
    let mut removed_properties = Vec::new();
    let keys: std::collections::BTreeSet<&String> = base
        .properties
        .keys()
        .chain(theirs.properties.keys())
        .collect();
    for key in keys {
        let (was, now) = (base.properties.get(key), theirs.properties.get(key));
        if was == now {
            continue;
        }
        let mine = ours.properties.get(key);
        if mine != was && mine != now {
            return Err(overlap(format!("both sides changed property `{key}`")));
        }
        if mine == now {
            continue;
        }
        match now {
            Some(value) => {
                set_properties.insert(key.clone(), value.clone());
            }
            None => removed_properties.push(key.clone()),
        }
    }

    Ok(TableMergePlan {
        appended: theirs_new.iter().map(|s| s.snapshot_id).collect(),
        set_properties,
        removed_properties,
        schema,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn snapshot(id: i64, parent: Option<i64>, operation: &str) -> Value {
        let mut s = json!({
            "snapshot-id": id, "sequence-number": id, "timestamp-ms": 1_700_000_000_000_i64 + id,
            "manifest-list": format!("file:///t/metadata/snap-{id}.avro"),
            "summary": {"operation": operation}, "schema-id": 0
        });
        if let Some(parent) = parent {
            s["parent-snapshot-id"] = json!(parent);
        }
        s
    }

    /// A v2 table whose `main` is the last of `snapshots` (each on the one before).
    fn table(snapshots: &[(i64, &str)], properties: Value, fields: Value) -> TableMetadata {
        let mut list = Vec::new();
        let mut parent = None;
        for (id, op) in snapshots {
            list.push(snapshot(*id, parent, op));
            parent = Some(*id);
        }
        let mut value = json!({
            "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": "file:///t", "last-sequence-number": parent.unwrap_or(0),
            "last-updated-ms": 1_700_000_000_000_i64, "last-column-id": 3,
            "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": fields}],
            "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999, "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "properties": properties, "current-snapshot-id": parent.unwrap_or(-1),
            "snapshots": list, "refs": {}
        });
        if let Some(id) = parent {
            value["refs"] = json!({"main": {"snapshot-id": id, "type": "branch"}});
        }
        serde_json::from_value(value).unwrap()
    }

    fn fields() -> Value {
        json!([{"id": 1, "name": "id", "required": false, "type": "long"}])
    }

    #[test]
    fn appends_on_both_sides_commute_and_the_sources_are_recommitted() {
        let base = table(&[(1, "append")], json!({}), fields());
        let ours = table(&[(1, "append"), (2, "append")], json!({}), fields());
        let theirs = table(
            &[(1, "append"), (3, "append"), (4, "append")],
            json!({}),
            fields(),
        );
        let plan = plan(&base, &ours, &theirs).unwrap();
        assert_eq!(plan.appended, [3, 4]);
        assert!(plan.schema.is_none() && plan.set_properties.is_empty());
        assert!(plan.describe()[0].contains("2 appended snapshots"));
    }

    #[test]
    fn an_overwrite_or_delete_on_either_side_overlaps_with_appends() {
        let base = table(&[(1, "append")], json!({}), fields());
        let appended = table(&[(1, "append"), (3, "append")], json!({}), fields());
        let overwritten = table(&[(1, "append"), (2, "overwrite")], json!({}), fields());
        let reason = plan(&base, &overwritten, &appended).unwrap_err().0;
        assert_eq!(
            reason,
            "the target's snapshot 2 is an `overwrite`, not an append"
        );
        let reason = plan(&base, &appended, &overwritten).unwrap_err().0;
        assert_eq!(
            reason,
            "the source's snapshot 2 is an `overwrite`, not an append"
        );
        // The target's overwrite does not overlap a source that only set a property.
        let tagged = table(&[(1, "append")], json!({"owner": "etl"}), fields());
        let merged = plan(&base, &overwritten, &tagged).unwrap();
        assert!(merged.appended.is_empty());
        assert_eq!(merged.set_properties["owner"], "etl");
    }

    #[test]
    fn properties_commute_unless_both_sides_changed_the_same_one() {
        let base = table(&[], json!({"a": "1", "b": "1", "c": "1"}), fields());
        let ours = table(&[], json!({"a": "2", "b": "1", "c": "1"}), fields());
        let theirs = table(&[], json!({"a": "1", "b": "3"}), fields());
        let merged = plan(&base, &ours, &theirs).unwrap();
        assert_eq!(
            merged.set_properties,
            BTreeMap::from([("b".into(), "3".into())])
        );
        assert_eq!(merged.removed_properties, ["c"]);
        let clash = table(&[], json!({"a": "3", "b": "1", "c": "1"}), fields());
        assert_eq!(
            plan(&base, &ours, &clash).unwrap_err().0,
            "both sides changed property `a`"
        );
        // The same change on both sides is no conflict, and nothing to apply.
        assert!(plan(&base, &ours, &ours).unwrap().is_empty());
    }

    #[test]
    fn an_added_field_is_taken_but_other_schema_changes_overlap() {
        let base = table(&[(1, "append")], json!({}), fields());
        let wider = table(
            &[(1, "append")],
            json!({}),
            json!([{"id": 1, "name": "id", "required": false, "type": "long"},
                   {"id": 2, "name": "note", "required": false, "type": "string"}]),
        );
        let merged = plan(&base, &base, &wider).unwrap();
        assert_eq!(merged.schema.unwrap().fields.fields.len(), 2);
        let retyped = table(
            &[(1, "append")],
            json!({}),
            json!([{"id": 1, "name": "id", "required": false, "type": "int"}]),
        );
        assert!(
            plan(&base, &base, &retyped)
                .unwrap_err()
                .0
                .contains("changed the type of `id`")
        );
        // The same change on both sides is nothing to apply; different ones overlap.
        assert!(plan(&base, &wider, &wider).unwrap().schema.is_none());
        let other = table(
            &[(1, "append")],
            json!({}),
            json!([{"id": 1, "name": "id", "required": false, "type": "long"},
                   {"id": 2, "name": "region", "required": false, "type": "string"}]),
        );
        assert_eq!(
            plan(&base, &wider, &other).unwrap_err().0,
            "both sides changed the schema"
        );
    }

    #[test]
    fn a_rolled_back_or_replaced_table_overlaps() {
        let base = table(&[(1, "append"), (2, "append")], json!({}), fields());
        let rolled_back = table(&[(1, "append")], json!({}), fields());
        let appended = table(
            &[(1, "append"), (2, "append"), (3, "append")],
            json!({}),
            fields(),
        );
        assert!(
            plan(&base, &rolled_back, &appended)
                .unwrap_err()
                .0
                .contains("does not descend")
        );
        let mut replaced = appended.clone();
        replaced.table_uuid = uuid::Uuid::new_v4();
        assert!(
            plan(&base, &base, &replaced)
                .unwrap_err()
                .0
                .contains("replaced")
        );
    }
}
