//! Changes, entries and conflicts as people read them (shared by `show`, `diff`, `merge`,
//! `cherry-pick` and `revert`).

use serde_json::Value;

use crate::key;
use crate::output::{Cell, Paint, Style, Table};

/// How long an entry's inline description may get in a conflict table.
const MAX_DESCRIPTION: usize = 48;

fn text<'a>(value: &'a Value, field: &str) -> Option<&'a str> {
    value.get(field).and_then(Value::as_str)
}

/// The kind of an entry (`namespace`, `iceberg-table`, ...).
pub(crate) fn entry_type(entry: &Value) -> &str {
    text(entry, "type").unwrap_or("entry")
}

/// What distinguishes one version of an entry from another: a table's snapshot, a
/// namespace's properties, a view's metadata file, a generic asset's location.
pub(crate) fn entry_detail(entry: &Value) -> Option<String> {
    match entry_type(entry) {
        "namespace" => entry
            .get("properties")
            .and_then(Value::as_object)
            .filter(|p| !p.is_empty())
            .map(|properties| {
                let pairs: Vec<String> = properties
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(&v.to_string())))
                    .collect();
                format!("{{{}}}", pairs.join(", "))
            }),
        "iceberg-table" => Some(match entry.get("snapshot-id") {
            Some(Value::Number(n)) if n.as_i64() != Some(-1) => format!("snapshot {n}"),
            _ => "no snapshot".to_owned(),
        }),
        "iceberg-view" => text(entry, "metadata-location").map(str::to_owned),
        "generic" => text(entry, "location").map(str::to_owned),
        _ => None,
    }
}

/// One entry in a few words: its kind and what distinguishes versions of it.
pub(crate) fn describe_entry(entry: &Value, with_identity: bool) -> String {
    if entry.is_null() {
        return "(absent)".to_owned();
    }
    let mut out = entry_type(entry).to_owned();
    if let Some(detail) = entry_detail(entry) {
        out.push(' ');
        out.push_str(&detail);
    }
    if with_identity && let Some(id) = text(entry, "content-id") {
        out.push_str(&format!(" id {}", id.get(..8).unwrap_or(id)));
    }
    if out.chars().count() > MAX_DESCRIPTION {
        out = out.chars().take(MAX_DESCRIPTION - 1).collect::<String>() + "…";
    }
    out
}

fn kind_paint(kind: &str) -> Paint {
    match kind {
        "added" => Paint::Green,
        "removed" => Paint::Red,
        _ => Paint::Cyan,
    }
}

/// A list of `CHANGE`s: kind, key and entry type, with the Iceberg summary lines under each.
pub(crate) fn render_changes(changes: &[Value], style: Style) -> String {
    let mut table = Table::without_header();
    for change in changes {
        let kind = text(change, "kind").unwrap_or_else(|| {
            match (change.get("before"), change.get("after")) {
                (Some(Value::Null) | None, Some(after)) if !after.is_null() => "added",
                (Some(before), Some(Value::Null) | None) if !before.is_null() => "removed",
                _ => "modified",
            }
        });
        let entry = change
            .get("after")
            .filter(|e| !e.is_null())
            .or_else(|| change.get("before"))
            .unwrap_or(&Value::Null);
        let notes = change
            .get("summary")
            .and_then(Value::as_array)
            .map(|lines| {
                lines
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|line| style.paint(Paint::Dim, line))
                    .collect()
            })
            .unwrap_or_default();
        table.row_with_notes(
            vec![
                Cell::painted(kind, kind_paint(kind)),
                Cell::new(key::display(change.get("key").unwrap_or(&Value::Null))),
                Cell::new(if entry.is_null() {
                    ""
                } else {
                    entry_type(entry)
                }),
            ],
            notes,
        );
    }
    table.render(style, 2)
}

/// `CONFLICT`s: key, kind, and the entry at the base, on our side (the target) and on
/// theirs (what is merged, picked or reverted).
pub(crate) fn render_conflicts(conflicts: &[Value], style: Style) -> String {
    let mut table = Table::with_header(&["KEY", "KIND", "BASE", "OURS", "THEIRS"]);
    for conflict in conflicts {
        let kind = text(conflict, "kind").unwrap_or("conflict");
        let identity = kind == "identity-changed";
        let side =
            |name: &str| describe_entry(conflict.get(name).unwrap_or(&Value::Null), identity);
        let cells = vec![
            Cell::new(key::display(conflict.get("key").unwrap_or(&Value::Null))),
            Cell::painted(kind, Paint::Red),
            Cell::new(side("base")),
            Cell::new(side("ours")),
            Cell::new(side("theirs")),
        ];
        // A table merge that could not combine the two sides says which change overlaps.
        match text(conflict, "reason") {
            Some(reason) => table.row_with_notes(cells, vec![reason.to_owned()]),
            None => table.row(cells),
        }
    }
    table.render(style, 2)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn entries_read_in_a_few_words() {
        let table = json!({"type": "iceberg-table", "content-id": "0123456789", "snapshot-id": 42});
        assert_eq!(describe_entry(&table, false), "iceberg-table snapshot 42");
        assert_eq!(
            describe_entry(&table, true),
            "iceberg-table snapshot 42 id 01234567"
        );
        let empty = json!({"type": "iceberg-table", "snapshot-id": null});
        assert_eq!(describe_entry(&empty, false), "iceberg-table no snapshot");
        let ns = json!({"type": "namespace", "properties": {"k": "v"}});
        assert_eq!(describe_entry(&ns, false), "namespace {k=v}");
        assert_eq!(describe_entry(&Value::Null, false), "(absent)");
    }

    #[test]
    fn changes_list_kind_key_type_and_summaries() {
        let changes = [json!({
            "key": ["sales", "orders"], "kind": "modified",
            "before": {"type": "iceberg-table"}, "after": {"type": "iceberg-table"},
            "summary": ["snapshot 1 added: append, 10 records"]
        })];
        assert_eq!(
            render_changes(&changes, Style::plain()),
            "  modified  sales.orders  iceberg-table\n      snapshot 1 added: append, 10 records\n"
        );
    }

    #[test]
    fn conflicts_show_every_side() {
        let conflicts = [json!({
            "key": ["db"], "kind": "both-modified",
            "base": {"type": "namespace"},
            "ours": {"type": "namespace", "properties": {"k": "a"}},
            "theirs": {"type": "namespace", "properties": {"k": "b"}}
        })];
        let text = render_conflicts(&conflicts, Style::plain());
        assert!(
            text.contains("db   both-modified  namespace  namespace {k=a}  namespace {k=b}"),
            "{text}"
        );
    }
}
