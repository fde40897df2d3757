//! Default values of columns (`initial-default`, `write-default`) in the spec's JSON
//! single-value form, checked against the column's type.

use serde_json::Value;

use super::types::{PrimitiveType, Type};

/// Whether `value` is a valid JSON single value of `field_type`; the error says why not.
pub fn check_default(value: &Value, field_type: &Type) -> Result<(), String> {
    let Type::Primitive(primitive) = field_type else {
        return Err(format!(
            "must be null for a {} (nested types have no default value)",
            field_type.describe()
        ));
    };
    let fits = match primitive {
        PrimitiveType::Boolean => value.is_boolean(),
        PrimitiveType::Int => value.as_i64().is_some_and(|v| i32::try_from(v).is_ok()),
        PrimitiveType::Long => value.is_i64(),
        PrimitiveType::Float | PrimitiveType::Double => value.is_number(),
        PrimitiveType::Decimal { precision, scale } => value
            .as_str()
            .is_some_and(|text| decimal_fits(text, *precision, *scale)),
        PrimitiveType::Date => parses::<jiff::civil::Date>(value),
        PrimitiveType::Time => parses::<jiff::civil::Time>(value),
        PrimitiveType::Timestamp | PrimitiveType::TimestampNs => {
            parses::<jiff::civil::DateTime>(value)
        }
        PrimitiveType::Timestamptz | PrimitiveType::TimestamptzNs => {
            parses::<jiff::Timestamp>(value)
        }
        PrimitiveType::String => value.is_string(),
        PrimitiveType::Uuid => value
            .as_str()
            .is_some_and(|text| uuid::Uuid::parse_str(text).is_ok()),
        PrimitiveType::Fixed(length) => value
            .as_str()
            .is_some_and(|text| hex::decode(text).is_ok_and(|bytes| bytes.len() as u64 == *length)),
        PrimitiveType::Binary => value.as_str().is_some_and(|text| hex::decode(text).is_ok()),
        PrimitiveType::Unknown
        | PrimitiveType::Variant
        | PrimitiveType::Geometry(_)
        | PrimitiveType::Geography(_) => {
            return Err(format!("must be null for a column of type {primitive}"));
        }
    };
    if fits {
        Ok(())
    } else {
        Err(format!("{value} is not a valid {primitive} value"))
    }
}

fn parses<T: std::str::FromStr>(value: &Value) -> bool {
    value.as_str().is_some_and(|text| text.parse::<T>().is_ok())
}

/// A decimal default is written as a string with exactly `scale` digits after the point.
fn decimal_fits(text: &str, precision: u32, scale: u32) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    !whole.is_empty()
        && all_digits(whole)
        && all_digits(fraction)
        && fraction.len() == scale as usize
        && (whole.trim_start_matches('0').len() + fraction.len()) <= precision as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn primitive(name: &str) -> Type {
        Type::Primitive(PrimitiveType::parse(name).unwrap())
    }

    #[test]
    fn defaults_fit_their_types() {
        for (value, type_name) in [
            (json!(true), "boolean"),
            (json!(34), "int"),
            (json!(1.5), "double"),
            (json!("14.20"), "decimal(9, 2)"),
            (json!("2026-12-01"), "date"),
            (json!("10:00:00.000001"), "time"),
            (json!("2026-12-01T10:00:00"), "timestamp"),
            (json!("2026-12-01T10:00:00+00:00"), "timestamptz"),
            (json!("f79c3e09-677c-4bbd-a479-3f349cb785e7"), "uuid"),
            (json!("00ff"), "fixed[2]"),
            (json!("00ff11"), "binary"),
        ] {
            check_default(&value, &primitive(type_name)).unwrap();
        }
        for (value, type_name) in [
            (json!("x"), "int"),
            (json!(3_000_000_000_i64), "int"),
            (json!("14.2"), "decimal(9, 2)"),
            (json!("2026-13-01"), "date"),
            (json!("2026-12-01T10:00:00"), "timestamptz"),
            (json!("00"), "fixed[2]"),
            (json!(1), "unknown"),
        ] {
            assert!(
                check_default(&value, &primitive(type_name)).is_err(),
                "{value} {type_name}"
            );
        }
    }
}
