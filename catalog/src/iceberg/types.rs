//! Iceberg's data types, parsed from and written as the spec's JSON.
//!
//! Parsing is strict where the reference implementation is (every field of a struct field, list
//! and map is required and typed; a type name must be one the spec defines) and names the field
//! it refuses, so a bad request is answered with what to fix. Type names are read
//! case-insensitively, as the reference implementation reads them, and written in the spec's
//! spelling. Keys the spec does not define are carried through unchanged.

use std::fmt;

use serde_json::{Map, Value};

/// A primitive type of the spec (and `variant`, `unknown`, which are not nested either).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PrimitiveType {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Decimal {
        precision: u32,
        scale: u32,
    },
    Date,
    Time,
    Timestamp,
    Timestamptz,
    TimestampNs,
    TimestamptzNs,
    String,
    Uuid,
    Fixed(u64),
    Binary,
    /// Format version 3: a column whose type is not known yet (always optional, always null).
    Unknown,
    /// Format version 3: semi-structured values.
    Variant,
    /// Format version 3: geospatial types, with their parameters as written.
    Geometry(Option<String>),
    Geography(Option<String>),
}

/// Highest precision of a decimal, as the spec allows.
pub const MAX_DECIMAL_PRECISION: u32 = 38;

impl PrimitiveType {
    /// Parses a type name as the reference implementation does: case-insensitively, with
    /// blanks allowed inside `decimal(P, S)` and `fixed[L]`.
    pub fn parse(name: &str) -> Result<Self, String> {
        let lower = name.trim().to_ascii_lowercase();
        let simple = match lower.as_str() {
            "boolean" => Some(Self::Boolean),
            "int" => Some(Self::Int),
            "long" => Some(Self::Long),
            "float" => Some(Self::Float),
            "double" => Some(Self::Double),
            "date" => Some(Self::Date),
            "time" => Some(Self::Time),
            "timestamp" => Some(Self::Timestamp),
            "timestamptz" => Some(Self::Timestamptz),
            "timestamp_ns" => Some(Self::TimestampNs),
            "timestamptz_ns" => Some(Self::TimestamptzNs),
            "string" => Some(Self::String),
            "uuid" => Some(Self::Uuid),
            "binary" => Some(Self::Binary),
            "unknown" => Some(Self::Unknown),
            "variant" => Some(Self::Variant),
            "geometry" => Some(Self::Geometry(None)),
            "geography" => Some(Self::Geography(None)),
            _ => None,
        };
        if let Some(simple) = simple {
            return Ok(simple);
        }
        if let Some(args) = bracketed(&lower, "fixed", '[', ']') {
            let length: u64 = args.trim().parse().map_err(|_| {
                format!("`{name}` is not a valid fixed type: the length must be a number")
            })?;
            if length == 0 {
                return Err(format!("`{name}`: a fixed type needs a length above 0"));
            }
            return Ok(Self::Fixed(length));
        }
        if let Some(args) = bracketed(&lower, "decimal", '(', ')') {
            let parts: Vec<&str> = args.split(',').map(str::trim).collect();
            let [precision, scale] = parts.as_slice() else {
                return Err(format!(
                    "`{name}` is not a valid decimal type: write `decimal(P, S)`"
                ));
            };
            let (Ok(precision), Ok(scale)) = (precision.parse::<u32>(), scale.parse::<u32>())
            else {
                return Err(format!(
                    "`{name}` is not a valid decimal type: precision and scale must be numbers"
                ));
            };
            if precision > MAX_DECIMAL_PRECISION {
                return Err(format!(
                    "`{name}`: decimal precision {precision} is above the maximum of {MAX_DECIMAL_PRECISION}"
                ));
            }
            // Stricter than the reference implementation, which builds these but whose files
            // other readers (PyIceberg) refuse.
            if precision == 0 {
                return Err(format!("`{name}`: decimal precision must be at least 1"));
            }
            if scale > precision {
                return Err(format!(
                    "`{name}`: decimal scale {scale} is above its precision {precision}"
                ));
            }
            return Ok(Self::Decimal { precision, scale });
        }
        // Geospatial parameters keep their case (a CRS such as `EPSG:4326`).
        let trimmed = name.trim();
        for (prefix, make) in [
            ("geometry", Self::Geometry as fn(Option<String>) -> Self),
            ("geography", Self::Geography),
        ] {
            if trimmed.len() > prefix.len()
                && trimmed[..prefix.len()].eq_ignore_ascii_case(prefix)
                && let Some(args) = trimmed[prefix.len()..]
                    .trim_start()
                    .strip_prefix('(')
                    .and_then(|rest| rest.strip_suffix(')'))
            {
                let args = args.trim();
                if args.is_empty() {
                    return Err(format!("`{name}`: an empty parameter list is not valid"));
                }
                return Ok(make(Some(args.to_owned())));
            }
        }
        Err(format!("`{name}` is not a type of the Iceberg spec"))
    }

    /// The lowest table format version that may hold this type.
    pub fn min_format_version(&self) -> u8 {
        match self {
            Self::TimestampNs
            | Self::TimestamptzNs
            | Self::Unknown
            | Self::Variant
            | Self::Geometry(_)
            | Self::Geography(_) => 3,
            _ => 1,
        }
    }

    /// Whether the reference implementation treats the type as primitive (`variant` is not).
    pub fn is_primitive(&self) -> bool {
        !matches!(self, Self::Variant)
    }
}

fn bracketed<'a>(text: &'a str, name: &str, open: char, close: char) -> Option<&'a str> {
    text.strip_prefix(name)?
        .trim_start()
        .strip_prefix(open)?
        .strip_suffix(close)
}

impl fmt::Display for PrimitiveType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Boolean => f.write_str("boolean"),
            Self::Int => f.write_str("int"),
            Self::Long => f.write_str("long"),
            Self::Float => f.write_str("float"),
            Self::Double => f.write_str("double"),
            Self::Decimal { precision, scale } => write!(f, "decimal({precision}, {scale})"),
            Self::Date => f.write_str("date"),
            Self::Time => f.write_str("time"),
            Self::Timestamp => f.write_str("timestamp"),
            Self::Timestamptz => f.write_str("timestamptz"),
            Self::TimestampNs => f.write_str("timestamp_ns"),
            Self::TimestamptzNs => f.write_str("timestamptz_ns"),
            Self::String => f.write_str("string"),
            Self::Uuid => f.write_str("uuid"),
            Self::Fixed(length) => write!(f, "fixed[{length}]"),
            Self::Binary => f.write_str("binary"),
            Self::Unknown => f.write_str("unknown"),
            Self::Variant => f.write_str("variant"),
            Self::Geometry(None) => f.write_str("geometry"),
            Self::Geometry(Some(crs)) => write!(f, "geometry({crs})"),
            Self::Geography(None) => f.write_str("geography"),
            Self::Geography(Some(args)) => write!(f, "geography({args})"),
        }
    }
}

/// Any type: a primitive or a nested one.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Primitive(PrimitiveType),
    Struct(StructType),
    List(ListType),
    Map(MapType),
}

impl Type {
    pub fn as_primitive(&self) -> Option<&PrimitiveType> {
        match self {
            Self::Primitive(p) => Some(p),
            _ => None,
        }
    }

    pub fn is_nested(&self) -> bool {
        !matches!(self, Self::Primitive(_))
    }

    /// The type as the spec writes it, for messages.
    pub fn describe(&self) -> String {
        match self {
            Self::Primitive(p) => p.to_string(),
            Self::Struct(_) => "struct".to_owned(),
            Self::List(l) => format!("list<{}>", l.element.describe()),
            Self::Map(m) => format!("map<{}, {}>", m.key.describe(), m.value.describe()),
        }
    }
}

/// A column or a nested field of a struct.
#[derive(Debug, Clone, PartialEq)]
pub struct NestedField {
    pub id: i32,
    pub name: String,
    pub required: bool,
    pub field_type: Type,
    pub doc: Option<String>,
    pub initial_default: Option<Value>,
    pub write_default: Option<Value>,
    /// Keys the spec does not define, carried through.
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct StructType {
    pub fields: Vec<NestedField>,
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListType {
    pub element_id: i32,
    pub element_required: bool,
    pub element: Box<Type>,
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MapType {
    pub key_id: i32,
    pub key: Box<Type>,
    pub value_id: i32,
    pub value_required: bool,
    pub value: Box<Type>,
    pub extra: Map<String, Value>,
}

/// Where a parse is in a schema, for messages: `` schema field `a.b` ``.
fn at(path: &str) -> String {
    if path.is_empty() {
        "schema".to_owned()
    } else {
        format!("schema field `{path}`")
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// Takes a required key out of a field's map (parsing consumes the JSON it reads, so what is
/// left is exactly the keys the spec does not define, carried through without copies).
fn take(map: &mut Map<String, Value>, key: &str, path: &str) -> Result<Value, String> {
    map.remove(key)
        .filter(|v| !v.is_null())
        .ok_or_else(|| format!("{}: `{key}` is required", at(path)))
}

fn take_id(map: &mut Map<String, Value>, key: &str, path: &str) -> Result<i32, String> {
    let value = take(map, key, path)?;
    value
        .as_i64()
        .and_then(|v| i32::try_from(v).ok())
        .ok_or_else(|| format!("{}: `{key}` must be an integer id, not {value}", at(path)))
}

fn take_bool(map: &mut Map<String, Value>, key: &str, path: &str) -> Result<bool, String> {
    let value = take(map, key, path)?;
    value
        .as_bool()
        .ok_or_else(|| format!("{}: `{key}` must be true or false, not {value}", at(path)))
}

impl Type {
    /// Parses a type at `path` (dotted names of the fields above it).
    pub fn from_json(value: Value, path: &str) -> Result<Self, String> {
        match value {
            Value::String(name) => PrimitiveType::parse(&name)
                .map(Self::Primitive)
                .map_err(|e| format!("{}: {e}", at(path))),
            Value::Object(mut map) => {
                let kind = match map.remove("type") {
                    Some(Value::String(kind)) => kind,
                    Some(other) => {
                        return Err(format!(
                            "{}: `type` of a nested type must be a string, not {other}",
                            at(path)
                        ));
                    }
                    None => return Err(format!("{}: a nested type needs `type`", at(path))),
                };
                match kind.as_str() {
                    "struct" => StructType::from_json(map, path).map(Self::Struct),
                    "list" => ListType::from_json(map, path).map(Self::List),
                    "map" => MapType::from_json(map, path).map(Self::Map),
                    other => Err(format!(
                        "{}: `{other}` is not a nested type (struct, list or map)",
                        at(path)
                    )),
                }
            }
            other => Err(format!(
                "{}: a type is a name or an object, not {other}",
                at(path)
            )),
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Self::Primitive(p) => Value::String(p.to_string()),
            Self::Struct(s) => Value::Object(s.to_json()),
            Self::List(l) => {
                let mut map = Map::new();
                map.insert("type".into(), "list".into());
                map.insert("element-id".into(), l.element_id.into());
                map.insert("element".into(), l.element.to_json());
                map.insert("element-required".into(), l.element_required.into());
                map.extend(l.extra.clone());
                Value::Object(map)
            }
            Self::Map(m) => {
                let mut map = Map::new();
                map.insert("type".into(), "map".into());
                map.insert("key-id".into(), m.key_id.into());
                map.insert("key".into(), m.key.to_json());
                map.insert("value-id".into(), m.value_id.into());
                map.insert("value".into(), m.value.to_json());
                map.insert("value-required".into(), m.value_required.into());
                map.extend(m.extra.clone());
                Value::Object(map)
            }
        }
    }
}

impl StructType {
    /// Parses a struct from its map, `type` already taken out.
    pub fn from_json(mut map: Map<String, Value>, path: &str) -> Result<Self, String> {
        let Value::Array(items) = take(&mut map, "fields", path)? else {
            return Err(format!("{}: `fields` must be a list", at(path)));
        };
        let fields = items
            .into_iter()
            .enumerate()
            .map(|(i, item)| NestedField::from_json(item, path, i))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { fields, extra: map })
    }

    pub fn to_json(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("type".into(), "struct".into());
        map.insert(
            "fields".into(),
            Value::Array(self.fields.iter().map(NestedField::to_json).collect()),
        );
        map.extend(self.extra.clone());
        map
    }
}

impl NestedField {
    fn from_json(value: Value, parent: &str, index: usize) -> Result<Self, String> {
        let Value::Object(mut map) = value else {
            return Err(format!(
                "{}: field {index} must be an object, not {value}",
                at(parent)
            ));
        };
        let name = match map.remove("name") {
            Some(Value::String(name)) => name,
            Some(other) => {
                return Err(format!(
                    "{}: field {index} has a `name` that is not a string: {other}",
                    at(parent)
                ));
            }
            None => return Err(format!("{}: field {index} has no `name`", at(parent))),
        };
        let path = join(parent, &name);
        let id = take_id(&mut map, "id", &path)?;
        let required = take_bool(&mut map, "required", &path)?;
        let field_type = Type::from_json(take(&mut map, "type", &path)?, &path)?;
        let doc = match map.remove("doc") {
            None | Some(Value::Null) => None,
            Some(Value::String(doc)) => Some(doc),
            Some(other) => {
                return Err(format!(
                    "{}: `doc` must be a string, not {other}",
                    at(&path)
                ));
            }
        };
        let initial_default = map.remove("initial-default").filter(|v| !v.is_null());
        let write_default = map.remove("write-default").filter(|v| !v.is_null());
        Ok(Self {
            id,
            name,
            required,
            field_type,
            doc,
            initial_default,
            write_default,
            extra: map,
        })
    }

    fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("id".into(), self.id.into());
        map.insert("name".into(), self.name.clone().into());
        map.insert("required".into(), self.required.into());
        map.insert("type".into(), self.field_type.to_json());
        if let Some(doc) = &self.doc {
            map.insert("doc".into(), doc.clone().into());
        }
        if let Some(v) = &self.initial_default {
            map.insert("initial-default".into(), v.clone());
        }
        if let Some(v) = &self.write_default {
            map.insert("write-default".into(), v.clone());
        }
        map.extend(self.extra.clone());
        Value::Object(map)
    }
}

impl ListType {
    fn from_json(mut map: Map<String, Value>, path: &str) -> Result<Self, String> {
        let element_id = take_id(&mut map, "element-id", path)?;
        let element_required = take_bool(&mut map, "element-required", path)?;
        let element = Type::from_json(take(&mut map, "element", path)?, &join(path, "element"))?;
        Ok(Self {
            element_id,
            element_required,
            element: Box::new(element),
            extra: map,
        })
    }
}

impl MapType {
    fn from_json(mut map: Map<String, Value>, path: &str) -> Result<Self, String> {
        // Keys are required whatever a file says; `key-required` is not carried.
        if let Some(Value::Bool(false)) = map.remove("key-required") {
            return Err(format!("{}: map keys are always required", at(path)));
        }
        let key_id = take_id(&mut map, "key-id", path)?;
        let key = Type::from_json(take(&mut map, "key", path)?, &join(path, "key"))?;
        let value_id = take_id(&mut map, "value-id", path)?;
        let value_required = take_bool(&mut map, "value-required", path)?;
        let value = Type::from_json(take(&mut map, "value", path)?, &join(path, "value"))?;
        Ok(Self {
            key_id,
            key: Box::new(key),
            value_id,
            value_required,
            value: Box::new(value),
            extra: map,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitive_names_parse_as_the_reference_reads_them() {
        for (name, written) in [
            ("LONG", "long"),
            ("decimal(9,2)", "decimal(9, 2)"),
            ("Decimal( 38 , 0 )", "decimal(38, 0)"),
            ("fixed[ 16 ]", "fixed[16]"),
            ("timestamptz_ns", "timestamptz_ns"),
            ("geometry(EPSG:4326)", "geometry(EPSG:4326)"),
        ] {
            assert_eq!(PrimitiveType::parse(name).unwrap().to_string(), written);
        }
        for bad in [
            "foo",
            "decimal(39, 2)",
            "fixed[0]",
            "fixed[x]",
            "decimal(1)",
            "struct",
        ] {
            assert!(PrimitiveType::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn nested_types_round_trip_with_unknown_keys() {
        let json = serde_json::json!({
            "type": "map", "key-id": 4, "key": "string", "value-id": 5,
            "value": {"type": "list", "element-id": 6, "element": "int", "element-required": true},
            "value-required": false, "x-vendor": 1
        });
        let parsed = Type::from_json(json.clone(), "m").unwrap();
        assert_eq!(parsed.to_json(), json);
    }

    #[test]
    fn errors_name_the_field() {
        let json = serde_json::json!({"type": "struct", "fields": [
            {"id": 1, "name": "a", "required": true, "type": {"type": "struct", "fields": [
                {"id": 2, "name": "b", "required": true, "type": "foo"}]}}]});
        let error = Type::from_json(json, "").unwrap_err();
        assert!(
            error.contains("`a.b`") && error.contains("`foo`"),
            "{error}"
        );
    }
}
