//! Sort orders and the rules that bind one to a schema.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::schema::Schema;
use super::transform::Transform;
use super::types::Type;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SortOrder {
    #[serde(rename = "order-id", default)]
    pub order_id: i32,
    /// Each `{transform, source-id, direction, null-order}`; carried as JSON and checked by
    /// `bind`.
    pub fields: Vec<Value>,
}

impl SortOrder {
    pub fn unsorted() -> Self {
        Self {
            order_id: 0,
            fields: Vec::new(),
        }
    }

    pub fn is_unsorted(&self) -> bool {
        self.fields.is_empty()
    }

    /// Binds an order a client sent to `schema`: ids, directions, null orders and transforms
    /// checked as the reference implementation does, and written in the spec's spelling.
    pub fn bind(&mut self, schema: &Schema) -> Result<(), String> {
        // The order's id is not checked: the table assigns its own (0 for the unsorted order).
        for (position, field) in self.fields.iter_mut().enumerate() {
            let Value::Object(map) = field else {
                return Err(format!(
                    "sort field {position}: must be an object, not {field}"
                ));
            };
            canonical(map, position)?;
        }
        self.check_compatible(schema)
    }

    /// Whether every field's source is in `schema`, of a type its transform takes.
    pub fn check_compatible(&self, schema: &Schema) -> Result<(), String> {
        let index = schema.index();
        for (position, field) in self.fields.iter().enumerate() {
            let Value::Object(map) = field else {
                return Err(format!(
                    "sort field {position}: must be an object, not {field}"
                ));
            };
            let source_id = source_id(map, position)?;
            let transform = transform(map, position)?;
            let Some(source) = index.get(&source_id) else {
                return Err(format!(
                    "sort field {position}: source column {source_id} does not exist in the schema"
                ));
            };
            let source_type = match source.field_type {
                Type::Primitive(p) if p.is_primitive() => p,
                other => {
                    return Err(format!(
                        "sort field {position}: cannot sort by `{}` of type {}",
                        source.path,
                        other.describe()
                    ));
                }
            };
            if !transform.can_transform(source_type) {
                return Err(format!(
                    "sort field {position}: transform {transform} does not apply to `{}` of type {source_type}",
                    source.path
                ));
            }
        }
        Ok(())
    }
}

fn text<'a>(map: &'a Map<String, Value>, key: &str, position: usize) -> Result<&'a str, String> {
    match map.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!(
            "sort field {position}: `{key}` must be a string, not {other}"
        )),
        None => Err(format!("sort field {position}: `{key}` is required")),
    }
}

fn source_id(map: &Map<String, Value>, position: usize) -> Result<i32, String> {
    let value = map
        .get("source-id")
        .ok_or_else(|| format!("sort field {position}: `source-id` is required"))?;
    value
        .as_i64()
        .and_then(|v| i32::try_from(v).ok())
        .ok_or_else(|| {
            format!("sort field {position}: `source-id` must be an integer, not {value}")
        })
}

fn transform(map: &Map<String, Value>, position: usize) -> Result<Transform, String> {
    Transform::parse(text(map, "transform", position)?)
        .map_err(|e| format!("sort field {position}: {e}"))
}

/// Checks a sort field's parts and rewrites them as the spec spells them.
fn canonical(map: &mut Map<String, Value>, position: usize) -> Result<(), String> {
    source_id(map, position)?;
    let transform = transform(map, position)?;
    let direction = match text(map, "direction", position)?
        .to_ascii_lowercase()
        .as_str()
    {
        "asc" => "asc",
        "desc" => "desc",
        other => {
            return Err(format!(
                "sort field {position}: direction `{other}` is neither `asc` nor `desc`"
            ));
        }
    };
    let null_order = match text(map, "null-order", position)?
        .to_ascii_lowercase()
        .as_str()
    {
        "nulls-first" => "nulls-first",
        "nulls-last" => "nulls-last",
        other => {
            return Err(format!(
                "sort field {position}: null order `{other}` is neither `nulls-first` nor `nulls-last`"
            ));
        }
    };
    map.insert("transform".into(), transform.to_string().into());
    map.insert("direction".into(), direction.into());
    map.insert("null-order".into(), null_order.into());
    Ok(())
}
