//! The first metadata of a new table, from a create request.

use std::collections::BTreeMap;

use serde_json::Value;

use super::metadata::{DEFAULT_FORMAT_VERSION, PartitionSpec, Schema, SortOrder, TableMetadata};
use super::update::{MetadataBuilder, TableUpdate, UpdateError, blank};

/// Table property that picks the format version at creation; not kept as a property.
pub const FORMAT_VERSION_PROPERTY: &str = "format-version";

/// Table properties the reference implementation derives from the metadata and never stores.
pub const RESERVED_PROPERTIES: &[&str] = &[
    FORMAT_VERSION_PROPERTY,
    "uuid",
    "snapshot-count",
    "current-snapshot-id",
    "current-snapshot-summary",
    "current-snapshot-timestamp-ms",
    "current-schema",
    "default-partition-spec",
    "default-sort-order",
];

/// What a create request describes.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTable {
    pub location: String,
    pub schema: Schema,
    pub partition_spec: Option<PartitionSpec>,
    pub sort_order: Option<SortOrder>,
    pub properties: BTreeMap<String, String>,
}

/// Metadata for a new table, as the reference implementation makes it: the schema's ids
/// assigned afresh from 1 (a client's ids are not trusted) with the spec, the sort order and
/// the identifier fields following their columns; schema 0, spec 0 with field ids from 1000,
/// sort order 0 (unsorted) or 1; format version 2 unless the `format-version` property asks
/// for another; properties the metadata itself answers for are not stored.
pub fn new_table_metadata(table: NewTable, now_ms: i64) -> Result<TableMetadata, UpdateError> {
    let mut properties = table.properties;
    let format_version = match properties.remove(FORMAT_VERSION_PROPERTY) {
        None => DEFAULT_FORMAT_VERSION,
        Some(v) => v.trim().parse::<u8>().map_err(|_| {
            UpdateError::Invalid(format!(
                "`{FORMAT_VERSION_PROPERTY}` must be 1, 2 or 3, not `{v}`"
            ))
        })?,
    };
    properties.retain(|key, _| !RESERVED_PROPERTIES.contains(&key.as_str()));
    let (schema, spec, sort_order) = fresh_ids(
        table.schema,
        table
            .partition_spec
            .unwrap_or_else(PartitionSpec::unpartitioned),
        table.sort_order.unwrap_or_else(SortOrder::unsorted),
    )?;
    let location = table.location.trim_end_matches('/').to_owned();
    let mut builder = MetadataBuilder::new(blank(location.clone(), 1, now_ms));
    let updates = [
        TableUpdate::UpgradeFormatVersion { format_version },
        TableUpdate::AddSchema {
            schema,
            last_column_id: None,
        },
        TableUpdate::SetCurrentSchema { schema_id: -1 },
        TableUpdate::AddSpec { spec },
        TableUpdate::SetDefaultSpec { spec_id: -1 },
        TableUpdate::AddSortOrder { sort_order },
        TableUpdate::SetDefaultSortOrder { sort_order_id: -1 },
        TableUpdate::SetLocation { location },
        TableUpdate::SetProperties {
            updates: properties,
        },
    ];
    builder.apply_all(&updates, now_ms)?;
    builder.build(now_ms)
}

/// The request's schema with fresh ids, and its spec and sort order pointed at the same
/// columns under their new ids. Ids that name no column of the request's schema are refused
/// here: after renumbering they could name another column.
fn fresh_ids(
    schema: Schema,
    mut spec: PartitionSpec,
    mut order: SortOrder,
) -> Result<(Schema, PartitionSpec, SortOrder), UpdateError> {
    schema.check().map_err(UpdateError::Invalid)?;
    let (fresh, mapping) = schema.with_fresh_ids(0);
    let renumber = |old: i32, what: String| {
        mapping.get(&old).copied().ok_or_else(|| {
            UpdateError::Invalid(format!(
                "{what}: source column {old} does not exist in the schema"
            ))
        })
    };
    spec.spec_id = 0;
    for field in &mut spec.fields {
        let source = field.source_id().map_err(UpdateError::Invalid)?;
        field.set_source_id(renumber(
            source,
            format!("partition field `{}`", field.name),
        )?);
        field.field_id = None;
    }
    order.order_id = if order.is_unsorted() { 0 } else { 1 };
    for (position, field) in order.fields.iter_mut().enumerate() {
        let Some(source) = field.get("source-id").and_then(Value::as_i64) else {
            continue; // binding the order names what is missing
        };
        let old = i32::try_from(source).unwrap_or(i32::MAX);
        let new = renumber(old, format!("sort field {position}"))?;
        if let Value::Object(map) = field {
            map.insert("source-id".into(), new.into());
        }
    }
    Ok((fresh, spec, order))
}
