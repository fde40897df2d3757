//! The checks a protected branch asks of a merge request, and the built-in ones evaluated on
//! the changes the merge would make.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use pangolin_store::{Content, ContentKey, Entry};
use serde::{Deserialize, Serialize};

use crate::catalog::Catalog;
use crate::events::{Change, Event, EventKind};
use crate::iceberg::TableMetadata;

/// The most messages one check keeps: enough to act on, bounded for the record.
const MAX_MESSAGES: usize = 50;

/// One check of a protection rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum CheckSpec {
    /// No table the merge changes may lose a column (by field id, nested fields included)
    /// that its current schema on the target has.
    NoDroppedColumns {
        /// Only tables at or under this key (its levels).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<Vec<String>>,
    },
    /// No table may end with fewer rows than it has on the target (the `total-records` of its
    /// current snapshot), nor be dropped while it holds rows.
    NoLostRows {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<Vec<String>>,
    },
    /// No change of these event types (`drop-table`, `drop-namespace`, ...).
    Forbid {
        types: BTreeSet<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<Vec<String>>,
    },
    /// An endpoint decides: the webhook subscription's URL is sent the request and the merge
    /// result, signed with its secret, and answers whether the check passed.
    Webhook { webhook: String },
}

/// What one check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CheckResult {
    pub check: CheckSpec,
    pub passed: bool,
    /// Why it failed (each violation), or what the endpoint said.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<String>,
}

impl CheckResult {
    pub fn new(check: CheckSpec, mut messages: Vec<String>, passed: bool) -> Self {
        if messages.len() > MAX_MESSAGES {
            let more = messages.len() - MAX_MESSAGES;
            messages.truncate(MAX_MESSAGES);
            messages.push(format!("... and {more} more"));
        }
        Self {
            check,
            passed,
            messages,
        }
    }
}

fn parse_prefix(prefix: &Option<Vec<String>>) -> Result<Option<ContentKey>, String> {
    prefix
        .as_ref()
        .map(|levels| {
            ContentKey::new(levels.iter().cloned()).map_err(|e| format!("invalid prefix: {e}"))
        })
        .transpose()
}

impl CheckSpec {
    /// Why the check is not acceptable, if it is not.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Self::NoDroppedColumns { prefix } | Self::NoLostRows { prefix } => {
                parse_prefix(prefix).map(|_| ())
            }
            Self::Forbid { types, prefix } => {
                parse_prefix(prefix)?;
                if types.is_empty() {
                    return Err("a `forbid` check names at least one event type".to_owned());
                }
                for t in types {
                    match EventKind::parse(t) {
                        Some(kind) if kind.is_content() => {}
                        _ => {
                            let known: Vec<_> = EventKind::ALL
                                .iter()
                                .filter(|k| k.is_content())
                                .map(|k| k.as_str())
                                .collect();
                            return Err(format!(
                                "unknown event type `{t}` in a `forbid` check; known types: {}",
                                known.join(", ")
                            ));
                        }
                    }
                }
                Ok(())
            }
            Self::Webhook { webhook } => {
                if webhook.is_empty() || webhook.len() > 64 {
                    return Err("a `webhook` check names a webhook subscription's id".to_owned());
                }
                Ok(())
            }
        }
    }

    /// The check in a few words, for people: `forbid drop-table under sales`.
    pub fn describe(&self) -> String {
        let under = |prefix: &Option<Vec<String>>| {
            prefix
                .as_ref()
                .map_or_else(String::new, |levels| format!(" under {}", levels.join(".")))
        };
        match self {
            Self::NoDroppedColumns { prefix } => format!("no-dropped-columns{}", under(prefix)),
            Self::NoLostRows { prefix } => format!("no-lost-rows{}", under(prefix)),
            Self::Forbid { types, prefix } => {
                let types: Vec<&str> = types.iter().map(String::as_str).collect();
                format!("forbid {}{}", types.join(", "), under(prefix))
            }
            Self::Webhook { webhook } => format!("webhook {webhook}"),
        }
    }

    /// The webhook subscription this check asks, if it is a webhook check.
    pub fn webhook(&self) -> Option<&str> {
        match self {
            Self::Webhook { webhook } => Some(webhook),
            _ => None,
        }
    }
}

/// One key's change as checks see it: the event the merge would yield for it.
struct KeyChange<'a> {
    kind: EventKind,
    key: &'a ContentKey,
    before: Option<&'a Entry>,
    after: Option<&'a Entry>,
}

fn key_changes(events: &[Event]) -> impl Iterator<Item = KeyChange<'_>> {
    events.iter().filter_map(|event| match &event.change {
        Change::Entry {
            key, before, after, ..
        } => Some(KeyChange {
            kind: event.kind,
            key,
            before: before.as_ref(),
            after: after.as_ref(),
        }),
        _ => None,
    })
}

fn metadata_location(entry: Option<&Entry>) -> Option<&str> {
    match entry.map(|e| &e.content) {
        Some(Content::IcebergTable {
            metadata_location, ..
        }) => Some(metadata_location),
        _ => None,
    }
}

/// The rows a table holds, as its current snapshot's summary counts them.
fn rows(metadata: &TableMetadata) -> Result<u64, String> {
    let Some(snapshot) = metadata.current_snapshot() else {
        return Ok(0);
    };
    snapshot
        .summary
        .get("total-records")
        .ok_or_else(|| {
            format!(
                "snapshot {} has no `total-records` in its summary",
                snapshot.snapshot_id
            )
        })?
        .parse()
        .map_err(|_| {
            format!(
                "snapshot {} has a `total-records` that is not a count",
                snapshot.snapshot_id
            )
        })
}

/// Every field id of the current schema, with its dotted path.
fn columns(metadata: &TableMetadata) -> Vec<(i32, String)> {
    metadata.current_schema().map_or_else(Vec::new, |schema| {
        schema
            .index()
            .into_iter()
            .map(|(id, field)| (id, field.path))
            .collect()
    })
}

/// Evaluates a built-in check on `events`, the changes from the target's head to the merge
/// result. `None` for a webhook check, which the caller asks.
pub(crate) async fn evaluate(
    catalog: &Catalog,
    check: &CheckSpec,
    events: &[Event],
) -> Option<CheckResult> {
    let under = |prefix: &Option<Vec<String>>, key: &ContentKey| match parse_prefix(prefix) {
        Ok(Some(p)) => key.starts_with(&p),
        Ok(None) => true,
        Err(_) => false,
    };
    let mut messages = Vec::new();
    let mut unreadable = false;
    match check {
        CheckSpec::Webhook { .. } => return None,
        CheckSpec::Forbid { types, prefix } => {
            for change in key_changes(events) {
                if types.contains(change.kind.as_str()) && under(prefix, change.key) {
                    messages.push(format!("{} {}", change.kind.as_str(), change.key));
                }
            }
        }
        CheckSpec::NoDroppedColumns { prefix } => {
            for change in key_changes(events) {
                if !matches!(change.kind, EventKind::UpdateTable | EventKind::RenameTable)
                    || !under(prefix, change.key)
                {
                    continue;
                }
                match read_pair(catalog, change.before, change.after).await {
                    Ok((before, after)) => {
                        let kept: HashSet<i32> =
                            columns(&after).into_iter().map(|(id, _)| id).collect();
                        let mut dropped: Vec<String> = columns(&before)
                            .into_iter()
                            .filter(|(id, _)| !kept.contains(id))
                            .map(|(id, path)| format!("`{path}` (id {id})"))
                            .collect();
                        dropped.sort();
                        if !dropped.is_empty() {
                            messages.push(format!("{} drops {}", change.key, dropped.join(", ")));
                        }
                    }
                    Err(e) => {
                        unreadable = true;
                        messages.push(format!("{}: {e}", change.key));
                    }
                }
            }
        }
        CheckSpec::NoLostRows { prefix } => {
            for change in key_changes(events) {
                if !under(prefix, change.key) {
                    continue;
                }
                let counted = match change.kind {
                    EventKind::UpdateTable | EventKind::RenameTable => {
                        match read_pair(catalog, change.before, change.after).await {
                            Ok((before, after)) => {
                                rows(&before).and_then(|b| rows(&after).map(|a| (b, Some(a))))
                            }
                            Err(e) => Err(e),
                        }
                    }
                    EventKind::DropTable => read_one(catalog, change.before)
                        .await
                        .and_then(|before| rows(&before))
                        .map(|b| (b, None)),
                    _ => continue,
                };
                match counted {
                    Ok((before, Some(after))) if after < before => {
                        messages.push(format!("{} goes from {before} to {after} rows", change.key))
                    }
                    Ok((before, None)) if before > 0 => {
                        messages.push(format!("{} is dropped with {before} rows", change.key))
                    }
                    Ok(_) => {}
                    Err(e) => {
                        unreadable = true;
                        messages.push(format!("{}: {e}", change.key));
                    }
                }
            }
        }
    }
    // A check that could not read what it judges fails: passing it would let through what it
    // exists to stop.
    let passed = messages.is_empty() && !unreadable;
    Some(CheckResult::new(check.clone(), messages, passed))
}

async fn read_one(catalog: &Catalog, entry: Option<&Entry>) -> Result<Arc<TableMetadata>, String> {
    let location = metadata_location(entry).ok_or("not an Iceberg table")?;
    let warehouse = catalog
        .warehouse_ref()
        .ok_or("the catalog has no warehouse to read table metadata from")?;
    warehouse
        .io
        .read_metadata(location)
        .await
        .map_err(|e| format!("metadata not readable: {e}"))
}

async fn read_pair(
    catalog: &Catalog,
    before: Option<&Entry>,
    after: Option<&Entry>,
) -> Result<(Arc<TableMetadata>, Arc<TableMetadata>), String> {
    Ok((
        read_one(catalog, before).await?,
        read_one(catalog, after).await?,
    ))
}
