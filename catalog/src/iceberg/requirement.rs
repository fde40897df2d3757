//! Commit requirements: what a client assumed about the table when it made its change.

use serde::Deserialize;

use super::metadata::TableMetadata;

/// One requirement of a table commit. An unknown type fails to parse: never ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TableRequirement {
    AssertCreate,
    AssertTableUuid {
        uuid: uuid::Uuid,
    },
    AssertRefSnapshotId {
        #[serde(rename = "ref")]
        reference: String,
        /// `null` asserts that the ref does not exist.
        #[serde(rename = "snapshot-id")]
        snapshot_id: Option<i64>,
    },
    AssertLastAssignedFieldId {
        #[serde(rename = "last-assigned-field-id")]
        last_assigned_field_id: i32,
    },
    AssertCurrentSchemaId {
        #[serde(rename = "current-schema-id")]
        current_schema_id: i32,
    },
    AssertLastAssignedPartitionId {
        #[serde(rename = "last-assigned-partition-id")]
        last_assigned_partition_id: i32,
    },
    AssertDefaultSpecId {
        #[serde(rename = "default-spec-id")]
        default_spec_id: i32,
    },
    AssertDefaultSortOrderId {
        #[serde(rename = "default-sort-order-id")]
        default_sort_order_id: i32,
    },
}

/// A requirement that does not hold: the client's view of the table is out of date.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("requirement failed: {0}")]
pub struct RequirementFailed(pub String);

impl TableRequirement {
    /// Checks the requirement against the table's current metadata (`None`: no table).
    pub fn check(&self, current: Option<&TableMetadata>) -> Result<(), RequirementFailed> {
        let fail = |message: String| Err(RequirementFailed(message));
        let Some(meta) = current else {
            return match self {
                Self::AssertCreate => Ok(()),
                _ => fail("the table does not exist".to_owned()),
            };
        };
        match self {
            Self::AssertCreate => fail("the table already exists".to_owned()),
            Self::AssertTableUuid { uuid } if *uuid != meta.table_uuid => {
                fail(format!("table uuid is {}, not {uuid}", meta.table_uuid))
            }
            Self::AssertRefSnapshotId {
                reference,
                snapshot_id,
            } => match (meta.refs.get(reference), snapshot_id) {
                (None, None) => Ok(()),
                (Some(r), Some(id)) if r.snapshot_id == *id => Ok(()),
                (Some(r), _) => fail(format!(
                    "branch or tag `{reference}` is at snapshot {}, not {}",
                    r.snapshot_id,
                    snapshot_id.map_or("absent".to_owned(), |id| id.to_string())
                )),
                (None, Some(id)) => fail(format!(
                    "branch or tag `{reference}` does not exist (expected at snapshot {id})"
                )),
            },
            Self::AssertLastAssignedFieldId {
                last_assigned_field_id: id,
            } if *id != meta.last_column_id => fail(format!(
                "last assigned field id is {}, not {id}",
                meta.last_column_id
            )),
            Self::AssertCurrentSchemaId {
                current_schema_id: id,
            } if *id != meta.current_schema_id => fail(format!(
                "current schema id is {}, not {id}",
                meta.current_schema_id
            )),
            Self::AssertLastAssignedPartitionId {
                last_assigned_partition_id: id,
            } if *id != meta.last_partition_id => fail(format!(
                "last assigned partition id is {}, not {id}",
                meta.last_partition_id
            )),
            Self::AssertDefaultSpecId {
                default_spec_id: id,
            } if *id != meta.default_spec_id => fail(format!(
                "default partition spec id is {}, not {id}",
                meta.default_spec_id
            )),
            Self::AssertDefaultSortOrderId {
                default_sort_order_id: id,
            } if *id != meta.default_sort_order_id => fail(format!(
                "default sort order id is {}, not {id}",
                meta.default_sort_order_id
            )),
            _ => Ok(()),
        }
    }
}
