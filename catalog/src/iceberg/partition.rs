//! Partition specs and the rules that bind one to a schema.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::schema::{IndexedField, Schema};
use super::transform::Transform;
use super::types::Type;

/// Partition field ids start above this (the spec reserves lower ids for data columns).
pub const PARTITION_DATA_ID_START: i32 = 1000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionSpec {
    #[serde(rename = "spec-id", default)]
    pub spec_id: i32,
    pub fields: Vec<PartitionField>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionField {
    #[serde(rename = "field-id", default, skip_serializing_if = "Option::is_none")]
    pub field_id: Option<i32>,
    pub name: String,
    pub transform: String,
    /// `source-id` (v1, v2) or `source-ids` (v3 multi-argument transforms), kept as sent.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl PartitionField {
    /// The column the field is derived from: `source-id`, or the one id of `source-ids`.
    pub fn source_id(&self) -> Result<i32, String> {
        let as_id = |v: &Value| v.as_i64().and_then(|v| i32::try_from(v).ok());
        match (self.rest.get("source-id"), self.rest.get("source-ids")) {
            (Some(v), _) => as_id(v).ok_or_else(|| {
                format!(
                    "partition field `{}`: `source-id` must be an integer, not {v}",
                    self.name
                )
            }),
            (None, Some(Value::Array(ids))) if ids.len() == 1 => as_id(&ids[0]).ok_or_else(|| {
                format!(
                    "partition field `{}`: `source-ids` must hold column ids",
                    self.name
                )
            }),
            (None, Some(_)) => Err(format!(
                "partition field `{}`: transforms of several columns are not supported",
                self.name
            )),
            (None, None) => Err(format!(
                "partition field `{}`: `source-id` is required",
                self.name
            )),
        }
    }

    pub fn set_source_id(&mut self, id: i32) {
        self.rest.remove("source-ids");
        self.rest.insert("source-id".into(), id.into());
    }
}

impl PartitionSpec {
    pub fn unpartitioned() -> Self {
        Self {
            spec_id: 0,
            fields: Vec::new(),
        }
    }

    pub fn highest_field_id(&self) -> Option<i32> {
        self.fields.iter().filter_map(|f| f.field_id).max()
    }

    /// Same partitioning (names, sources and transforms), whatever the spec id and the field
    /// ids, as the reference implementation's `compatibleWith`: a client may send a spec it
    /// already has without field ids.
    pub fn same_fields(&self, other: &PartitionSpec) -> bool {
        self.fields.len() == other.fields.len()
            && self
                .fields
                .iter()
                .zip(&other.fields)
                .all(|(a, b)| a.name == b.name && a.transform == b.transform && a.rest == b.rest)
    }

    /// Binds a spec a client sent to `schema`: checks every field as the reference
    /// implementation does when it binds a spec, and writes transforms in the spec's spelling.
    /// Field ids are left to the caller, except that a version 1 table needs them in sequence.
    pub fn bind(&mut self, schema: &Schema, format_version: u8) -> Result<(), String> {
        let with_ids = self.fields.iter().filter(|f| f.field_id.is_some()).count();
        if with_ids != 0 && with_ids != self.fields.len() {
            return Err(format!(
                "partition spec: {} of {} fields have no `field-id`; give every field one or none",
                self.fields.len() - with_ids,
                self.fields.len()
            ));
        }
        let index = schema.index();
        let mut names = BTreeSet::new();
        let mut ids = BTreeSet::new();
        for (position, field) in self.fields.iter_mut().enumerate() {
            let transform = Transform::parse(&field.transform)
                .map_err(|e| format!("partition field `{}`: {e}", field.name))?;
            field.transform = transform.to_string();
            let source_id = field.source_id()?;
            if field.name.is_empty() {
                return Err("partition spec: a partition field needs a name".to_owned());
            }
            if !names.insert(field.name.clone()) {
                return Err(format!(
                    "partition field `{}`: the name is used twice in the spec",
                    field.name
                ));
            }
            if let Some(column) = schema.field_id_by_path(&field.name)
                && index.contains_key(&source_id)
                && column != source_id
            {
                return Err(format!(
                    "partition field `{}`: the name is a column of the schema that is not the field's source",
                    field.name
                ));
            }
            if let Some(id) = field.field_id {
                if !ids.insert(id) {
                    return Err(format!(
                        "partition field `{}`: field id {id} is used twice in the spec",
                        field.name
                    ));
                }
                let expected = PARTITION_DATA_ID_START + position as i32;
                if format_version == 1 && id != expected {
                    return Err(format!(
                        "partition field `{}`: format version 1 needs field ids in sequence from {PARTITION_DATA_ID_START} ({expected}, not {id})",
                        field.name
                    ));
                }
            }
            check_source(&field.name, transform, source_id, &index)?;
        }
        Ok(())
    }

    /// Whether the spec still fits `schema` (every source there, of a type its transform takes),
    /// as the reference implementation checks the default spec against the current schema.
    pub fn check_compatible(&self, schema: &Schema) -> Result<(), String> {
        let index = schema.index();
        for field in &self.fields {
            let transform = Transform::parse(&field.transform)
                .map_err(|e| format!("partition field `{}`: {e}", field.name))?;
            check_source(&field.name, transform, field.source_id()?, &index)?;
        }
        Ok(())
    }
}

fn check_source(
    name: &str,
    transform: Transform,
    source_id: i32,
    index: &HashMap<i32, IndexedField<'_>>,
) -> Result<(), String> {
    // A version 1 table keeps a removed column's field as `void`: nothing to check.
    if transform == Transform::Void {
        return Ok(());
    }
    let Some(source) = index.get(&source_id) else {
        return Err(format!(
            "partition field `{name}`: source column {source_id} does not exist in the schema"
        ));
    };
    let source_type = match source.field_type {
        Type::Primitive(p) if p.is_primitive() => p,
        other => {
            return Err(format!(
                "partition field `{name}`: cannot partition by `{}` of type {}",
                source.path,
                other.describe()
            ));
        }
    };
    if !transform.can_transform(source_type) {
        return Err(format!(
            "partition field `{name}`: transform {transform} does not apply to `{}` of type {source_type}",
            source.path
        ));
    }
    let mut parent = source.parent;
    while let Some(parent_id) = parent {
        let Some(above) = index.get(&parent_id) else {
            break;
        };
        if !matches!(above.field_type, Type::Struct(_)) {
            return Err(format!(
                "partition field `{name}`: source `{}` is inside `{}`, which is not a struct",
                source.path, above.path
            ));
        }
        parent = above.parent;
    }
    Ok(())
}
