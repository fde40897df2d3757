//! A table or view schema: its struct of columns, typed, and the rules a valid one keeps.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::default_value::check_default;
use super::types::{NestedField, PrimitiveType, StructType, Type};

/// Format version from which columns may carry default values.
pub const DEFAULT_VALUES_MIN_FORMAT_VERSION: u8 = 3;

/// A schema: an id, the identifier fields and the columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    pub schema_id: i32,
    pub identifier_field_ids: Option<Vec<i32>>,
    pub fields: StructType,
}

/// One field of a schema as the index sees it: columns, nested fields, list elements, map keys
/// and values alike.
#[derive(Debug, Clone)]
pub struct IndexedField<'a> {
    /// Dotted path, with `element`, `key` and `value` for the parts of lists and maps.
    pub path: String,
    pub required: bool,
    pub field_type: &'a Type,
    pub parent: Option<i32>,
}

impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Schema::from_value(Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl Schema {
    /// Parses a schema as the reference implementation does: a struct type, an optional
    /// `schema-id` (0 when absent) and optional `identifier-field-ids`.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        Self::from_value(value.clone())
    }

    /// `from_json`, consuming the JSON (no copies of what it holds).
    pub fn from_value(value: Value) -> Result<Self, String> {
        let Value::Object(mut map) = value else {
            return Err(format!("a schema must be an object, not {value}"));
        };
        match map.remove("type") {
            Some(Value::String(t)) if t == "struct" => {}
            Some(other) => return Err(format!("schema: `type` must be \"struct\", not {other}")),
            None => return Err("schema: `type` is required (\"struct\")".to_owned()),
        }
        let schema_id = match map.remove("schema-id") {
            None | Some(Value::Null) => 0,
            Some(v) => v
                .as_i64()
                .and_then(|v| i32::try_from(v).ok())
                .ok_or_else(|| format!("schema: `schema-id` must be an integer, not {v}"))?,
        };
        let identifier_field_ids =
            match map.remove("identifier-field-ids") {
                None | Some(Value::Null) => None,
                Some(Value::Array(ids)) => Some(
                    ids.iter()
                        .map(|id| {
                            id.as_i64().and_then(|v| i32::try_from(v).ok()).ok_or_else(|| {
                            format!("schema: `identifier-field-ids` must hold field ids, not {id}")
                        })
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                Some(other) => {
                    return Err(format!(
                        "schema: `identifier-field-ids` must be a list, not {other}"
                    ));
                }
            };
        let fields = StructType::from_json(map, "")?;
        Ok(Self {
            schema_id,
            identifier_field_ids,
            fields,
        })
    }

    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("schema-id".into(), self.schema_id.into());
        if let Some(ids) = &self.identifier_field_ids {
            map.insert("identifier-field-ids".into(), ids.clone().into());
        }
        map.extend(self.fields.to_json());
        Value::Object(map)
    }

    /// Every field by id. Ids used twice keep their first field (`check` refuses them).
    pub fn index(&self) -> HashMap<i32, IndexedField<'_>> {
        let mut index = HashMap::new();
        walk(&self.fields, "", None, &mut |id, field| {
            index.entry(id).or_insert(field);
        });
        index
    }

    /// The highest field id anywhere in the schema, nested fields included (0 when empty).
    pub fn highest_field_id(&self) -> i32 {
        let mut max = 0;
        ids(&self.fields, &mut |id| max = max.max(id));
        max
    }

    /// Whether the schema has a field with this top-level or nested id.
    pub fn has_field(&self, id: i32) -> bool {
        let mut found = false;
        ids(&self.fields, &mut |field_id| found |= field_id == id);
        found
    }

    /// The id of the field at a dotted path, as the reference implementation's `findField`.
    pub fn field_id_by_path(&self, path: &str) -> Option<i32> {
        let mut found = None;
        walk(&self.fields, "", None, &mut |id, field| {
            if found.is_none() && field.path == path {
                found = Some(id);
            }
        });
        found
    }

    /// Whether two schemas describe the same columns (ids aside), so one can be reused.
    /// Identifier field ids compare as sets: PyIceberg sends `[]` where Java leaves them out.
    pub fn same_columns(&self, other: &Schema) -> bool {
        fn identifiers(schema: &Schema) -> BTreeSet<i32> {
            schema
                .identifier_field_ids
                .iter()
                .flatten()
                .copied()
                .collect()
        }
        self.fields == other.fields && identifiers(self) == identifiers(other)
    }

    /// Adds `schema` to a table's or view's `schemas` unless one with the same columns is
    /// there, and answers the id it has among them: the equal one's, or one above every id
    /// among them, as the reference implementation assigns them.
    pub(crate) fn add_or_reuse(schemas: &mut Vec<Schema>, schema: &Schema) -> i32 {
        if let Some(existing) = schemas.iter().find(|s| s.same_columns(schema)) {
            return existing.schema_id;
        }
        let id = schemas.iter().map(|s| s.schema_id + 1).max().unwrap_or(0);
        let mut added = schema.clone();
        added.schema_id = id;
        schemas.push(added);
        id
    }

    /// Checks the rules every schema keeps, whatever the format version: ids unique across the
    /// whole schema, names unique within a struct, defaults that fit their types, and
    /// identifier fields that can identify a row.
    pub fn check(&self) -> Result<(), String> {
        let mut seen: HashMap<i32, String> = HashMap::new();
        let mut problem = None;
        walk(&self.fields, "", None, &mut |id, field| {
            if problem.is_some() {
                return;
            }
            if let Some(first) = seen.get(&id) {
                problem = Some(format!(
                    "schema field `{}`: id {id} is already used by `{first}`",
                    field.path
                ));
            } else {
                seen.insert(id, field.path.clone());
            }
        });
        if let Some(problem) = problem {
            return Err(problem);
        }
        check_struct(&self.fields, "")?;
        if let Some(ids) = &self.identifier_field_ids {
            let index = self.index();
            for id in ids {
                check_identifier(*id, &index)?;
            }
        }
        Ok(())
    }

    /// Checks what a table of `format_version` may hold: types and default values that came
    /// with later versions are refused in earlier ones.
    pub fn check_for_format(&self, format_version: u8) -> Result<(), String> {
        let mut problem = None;
        // Every part of the schema, list elements and map keys and values included.
        walk(&self.fields, "", None, &mut |_, field| {
            if let (None, Type::Primitive(p)) = (&problem, field.field_type)
                && format_version < p.min_format_version()
            {
                problem = Some(format!(
                    "schema field `{}`: type {p} needs format version {} (the table has {format_version})",
                    field.path,
                    p.min_format_version()
                ));
            }
        });
        if let Some(problem) = problem {
            return Err(problem);
        }
        visit_fields(&self.fields, "", &mut |path, field| {
            for (key, value) in [
                ("initial-default", &field.initial_default),
                ("write-default", &field.write_default),
            ] {
                if problem.is_none()
                    && value.is_some()
                    && format_version < DEFAULT_VALUES_MIN_FORMAT_VERSION
                {
                    problem = Some(format!(
                        "schema field `{path}`: `{key}` needs format version {DEFAULT_VALUES_MIN_FORMAT_VERSION} (the table has {format_version})"
                    ));
                }
            }
        });
        problem.map_or(Ok(()), Err)
    }

    /// The same schema with ids assigned afresh from 1, in the reference implementation's
    /// order (a struct's fields first, then what nests in each, in order), and the map from
    /// the ids it had to the new ones. Identifier fields follow their fields.
    pub fn with_fresh_ids(&self, schema_id: i32) -> (Schema, BTreeMap<i32, i32>) {
        let mut next = 0;
        let mut mapping = BTreeMap::new();
        let fields = fresh_struct(&self.fields, &mut next, &mut mapping);
        let identifier_field_ids = self.identifier_field_ids.as_ref().map(|ids| {
            ids.iter()
                .map(|id| *mapping.get(id).unwrap_or(id))
                .collect()
        });
        (
            Schema {
                schema_id,
                identifier_field_ids,
                fields,
            },
            mapping,
        )
    }
}

/// Every id of a struct, nested ones included, without the paths `walk` builds: this runs on
/// every commit (`validate` checks `last-column-id` against it).
fn ids(fields: &StructType, visit: &mut dyn FnMut(i32)) {
    for field in &fields.fields {
        visit(field.id);
        type_ids(&field.field_type, visit);
    }
}

fn type_ids(field_type: &Type, visit: &mut dyn FnMut(i32)) {
    match field_type {
        Type::Primitive(_) => {}
        Type::Struct(s) => ids(s, visit),
        Type::List(l) => {
            visit(l.element_id);
            type_ids(&l.element, visit);
        }
        Type::Map(m) => {
            visit(m.key_id);
            visit(m.value_id);
            type_ids(&m.key, visit);
            type_ids(&m.value, visit);
        }
    }
}

fn walk<'a>(
    fields: &'a StructType,
    path: &str,
    parent: Option<i32>,
    visit: &mut dyn FnMut(i32, IndexedField<'a>),
) {
    for field in &fields.fields {
        let field_path = dotted(path, &field.name);
        visit(
            field.id,
            IndexedField {
                path: field_path.clone(),
                required: field.required,
                field_type: &field.field_type,
                parent,
            },
        );
        walk_type(&field.field_type, &field_path, field.id, visit);
    }
}

fn walk_type<'a>(
    field_type: &'a Type,
    path: &str,
    owner: i32,
    visit: &mut dyn FnMut(i32, IndexedField<'a>),
) {
    match field_type {
        Type::Primitive(_) => {}
        Type::Struct(s) => walk(s, path, Some(owner), visit),
        Type::List(l) => {
            let element_path = dotted(path, "element");
            visit(
                l.element_id,
                IndexedField {
                    path: element_path.clone(),
                    required: l.element_required,
                    field_type: &l.element,
                    parent: Some(owner),
                },
            );
            walk_type(&l.element, &element_path, l.element_id, visit);
        }
        Type::Map(m) => {
            let key_path = dotted(path, "key");
            let value_path = dotted(path, "value");
            visit(
                m.key_id,
                IndexedField {
                    path: key_path.clone(),
                    required: true,
                    field_type: &m.key,
                    parent: Some(owner),
                },
            );
            visit(
                m.value_id,
                IndexedField {
                    path: value_path.clone(),
                    required: m.value_required,
                    field_type: &m.value,
                    parent: Some(owner),
                },
            );
            walk_type(&m.key, &key_path, m.key_id, visit);
            walk_type(&m.value, &value_path, m.value_id, visit);
        }
    }
}

/// Every struct field (not list elements or map parts) with its dotted path.
fn visit_fields(fields: &StructType, path: &str, visit: &mut dyn FnMut(&str, &NestedField)) {
    for field in &fields.fields {
        let field_path = dotted(path, &field.name);
        visit(&field_path, field);
        visit_nested(&field.field_type, &field_path, visit);
    }
}

fn visit_nested(field_type: &Type, path: &str, visit: &mut dyn FnMut(&str, &NestedField)) {
    match field_type {
        Type::Primitive(_) => {}
        Type::Struct(s) => visit_fields(s, path, visit),
        Type::List(l) => visit_nested(&l.element, &dotted(path, "element"), visit),
        Type::Map(m) => {
            visit_nested(&m.key, &dotted(path, "key"), visit);
            visit_nested(&m.value, &dotted(path, "value"), visit);
        }
    }
}

fn dotted(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn check_struct(fields: &StructType, path: &str) -> Result<(), String> {
    let mut names = BTreeSet::new();
    for field in &fields.fields {
        let field_path = dotted(path, &field.name);
        if !names.insert(field.name.as_str()) {
            let within = if path.is_empty() {
                "the schema".to_owned()
            } else {
                format!("`{path}`")
            };
            return Err(format!(
                "schema field `{field_path}`: name `{}` is used twice in {within}",
                field.name
            ));
        }
        if field.required && field.field_type == Type::Primitive(PrimitiveType::Unknown) {
            return Err(format!(
                "schema field `{field_path}`: a field of type unknown cannot be required"
            ));
        }
        for (key, value) in [
            ("initial-default", &field.initial_default),
            ("write-default", &field.write_default),
        ] {
            if let Some(value) = value {
                check_default(value, &field.field_type)
                    .map_err(|e| format!("schema field `{field_path}`: `{key}` {e}"))?;
            }
        }
        check_nested(&field.field_type, &field_path)?;
    }
    Ok(())
}

fn check_nested(field_type: &Type, path: &str) -> Result<(), String> {
    match field_type {
        Type::Primitive(_) => Ok(()),
        Type::Struct(s) => check_struct(s, path),
        Type::List(l) => check_nested(&l.element, &dotted(path, "element")),
        Type::Map(m) => {
            check_nested(&m.key, &dotted(path, "key"))?;
            check_nested(&m.value, &dotted(path, "value"))
        }
    }
}

fn check_identifier(id: i32, index: &HashMap<i32, IndexedField<'_>>) -> Result<(), String> {
    let Some(field) = index.get(&id) else {
        return Err(format!(
            "schema: identifier field {id} does not exist in the schema"
        ));
    };
    let refuse = |why: &str| {
        Err(format!(
            "schema: `{}` (id {id}) cannot be an identifier field: {why}",
            field.path
        ))
    };
    match field.field_type {
        Type::Primitive(p) if p.is_primitive() => {
            if matches!(p, PrimitiveType::Float | PrimitiveType::Double) {
                return refuse("it is a float or double");
            }
        }
        _ => return refuse("it is not of a primitive type"),
    }
    if !field.required {
        return refuse("it is optional");
    }
    let mut parent = field.parent;
    while let Some(parent_id) = parent {
        let Some(above) = index.get(&parent_id) else {
            break;
        };
        if !matches!(above.field_type, Type::Struct(_)) {
            return refuse(&format!(
                "it is nested in `{}`, which is not a struct",
                above.path
            ));
        }
        if !above.required {
            return refuse(&format!(
                "it is nested in the optional field `{}`",
                above.path
            ));
        }
        parent = above.parent;
    }
    Ok(())
}

fn fresh_struct(
    fields: &StructType,
    next: &mut i32,
    mapping: &mut BTreeMap<i32, i32>,
) -> StructType {
    // A struct's own fields are numbered before anything nested in them.
    let ids: Vec<i32> = fields
        .fields
        .iter()
        .map(|field| fresh_id(field.id, next, mapping))
        .collect();
    let fields_out = fields
        .fields
        .iter()
        .zip(ids)
        .map(|(field, id)| NestedField {
            id,
            field_type: fresh_type(&field.field_type, next, mapping),
            ..field.clone()
        })
        .collect();
    StructType {
        fields: fields_out,
        extra: fields.extra.clone(),
    }
}

fn fresh_type(field_type: &Type, next: &mut i32, mapping: &mut BTreeMap<i32, i32>) -> Type {
    match field_type {
        Type::Primitive(_) => field_type.clone(),
        Type::Struct(s) => Type::Struct(fresh_struct(s, next, mapping)),
        Type::List(l) => {
            let element_id = fresh_id(l.element_id, next, mapping);
            let mut list = l.clone();
            list.element_id = element_id;
            list.element = Box::new(fresh_type(&l.element, next, mapping));
            Type::List(list)
        }
        Type::Map(m) => {
            let key_id = fresh_id(m.key_id, next, mapping);
            let value_id = fresh_id(m.value_id, next, mapping);
            let mut map = m.clone();
            map.key_id = key_id;
            map.value_id = value_id;
            map.key = Box::new(fresh_type(&m.key, next, mapping));
            map.value = Box::new(fresh_type(&m.value, next, mapping));
            Type::Map(map)
        }
    }
}

fn fresh_id(old: i32, next: &mut i32, mapping: &mut BTreeMap<i32, i32>) -> i32 {
    *next += 1;
    mapping.entry(old).or_insert(*next);
    *next
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: Value) -> Schema {
        Schema::from_json(&value).unwrap()
    }

    #[test]
    fn fresh_ids_number_a_structs_fields_before_what_nests_in_them() {
        let s = schema(
            json!({"type": "struct", "identifier-field-ids": [10], "fields": [
                {"id": 7, "name": "a", "required": false, "type": {"type": "struct", "fields": [
                    {"id": 8, "name": "x", "required": false, "type": "int"}]}},
                {"id": 10, "name": "b", "required": true, "type": "long"},
                {"id": 3, "name": "m", "required": false, "type": {"type": "map",
                    "key-id": 4, "key": "string", "value-id": 5, "value-required": false,
                    "value": {"type": "list", "element-id": 6, "element-required": true, "element": "int"}}}
            ]}),
        );
        let (fresh, mapping) = s.with_fresh_ids(0);
        let ids: Vec<i32> = fresh.fields.fields.iter().map(|f| f.id).collect();
        assert_eq!(ids, vec![1, 2, 3]);
        assert_eq!(mapping[&8], 4, "nested after the top level");
        assert_eq!((mapping[&4], mapping[&5], mapping[&6]), (5, 6, 7));
        assert_eq!(fresh.identifier_field_ids, Some(vec![2]));
        assert_eq!(fresh.highest_field_id(), 7);
        fresh.check().unwrap();
    }

    #[test]
    fn duplicate_ids_and_names_are_refused_with_the_field() {
        let dup_id = schema(json!({"type": "struct", "fields": [
            {"id": 1, "name": "a", "required": true, "type": "int"},
            {"id": 2, "name": "b", "required": false, "type": {"type": "list",
                "element-id": 1, "element-required": true, "element": "int"}}]}));
        let error = dup_id.check().unwrap_err();
        assert!(
            error.contains("`b.element`") && error.contains("id 1"),
            "{error}"
        );
        let dup_name = schema(json!({"type": "struct", "fields": [
            {"id": 1, "name": "a", "required": true, "type": "int"},
            {"id": 2, "name": "a", "required": false, "type": "int"}]}));
        assert!(dup_name.check().unwrap_err().contains("used twice"));
    }

    #[test]
    fn identifier_fields_must_be_required_primitives_under_required_structs() {
        let base = |identifier: i32| {
            schema(
                json!({"type": "struct", "identifier-field-ids": [identifier], "fields": [
                {"id": 1, "name": "f", "required": true, "type": "float"},
                {"id": 2, "name": "o", "required": false, "type": "long"},
                {"id": 3, "name": "s", "required": false, "type": {"type": "struct", "fields": [
                    {"id": 4, "name": "x", "required": true, "type": "long"}]}},
                {"id": 5, "name": "ok", "required": true, "type": "long"}]}),
            )
        };
        for (id, why) in [
            (1, "float"),
            (2, "optional"),
            (3, "primitive"),
            (4, "optional field `s`"),
            (9, "does not exist"),
        ] {
            let error = base(id).check().unwrap_err();
            assert!(error.contains(why), "{id}: {error}");
        }
        base(5).check().unwrap();
    }
}
