//! The first metadata of a new table, from a create request.

use std::collections::BTreeMap;

use super::metadata::{DEFAULT_FORMAT_VERSION, PartitionSpec, Schema, SortOrder, TableMetadata};
use super::update::{MetadataBuilder, TableUpdate, UpdateError, blank};

/// Table property that picks the format version at creation; not kept as a property.
pub const FORMAT_VERSION_PROPERTY: &str = "format-version";

/// What a create request describes.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTable {
    pub location: String,
    pub schema: Schema,
    pub partition_spec: Option<PartitionSpec>,
    pub sort_order: Option<SortOrder>,
    pub properties: BTreeMap<String, String>,
}

/// Metadata for a new table: schema 0, spec 0, sort order 0 (unsorted) or 1, format version 2
/// unless the `format-version` property asks for another.
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
    let location = table.location.trim_end_matches('/').to_owned();
    let mut builder = MetadataBuilder::new(blank(location.clone(), 1, now_ms));
    let updates = [
        TableUpdate::UpgradeFormatVersion { format_version },
        TableUpdate::AddSchema {
            schema: table.schema,
            last_column_id: None,
        },
        TableUpdate::SetCurrentSchema { schema_id: -1 },
        TableUpdate::AddSpec {
            spec: table
                .partition_spec
                .unwrap_or_else(PartitionSpec::unpartitioned),
        },
        TableUpdate::SetDefaultSpec { spec_id: -1 },
        TableUpdate::AddSortOrder {
            sort_order: table.sort_order.unwrap_or_else(SortOrder::unsorted),
        },
        TableUpdate::SetDefaultSortOrder { sort_order_id: -1 },
        TableUpdate::SetLocation { location },
        TableUpdate::SetProperties {
            updates: properties,
        },
    ];
    builder.apply_all(&updates, now_ms)?;
    builder.build(now_ms)
}
