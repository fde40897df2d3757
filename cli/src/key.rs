//! Content keys on the command line: dotted (`sales.orders`), sent as arrays of levels.

use serde_json::Value;

use crate::error::{CliError, Result};

/// The levels of a dotted key; empty levels (`a..b`, `.a`) are refused.
pub(crate) fn parse(text: &str) -> Result<Vec<String>> {
    let levels: Vec<String> = text.split('.').map(str::to_owned).collect();
    if levels.iter().any(String::is_empty) {
        return Err(CliError::usage(format!(
            "`{text}` is not a key: write its levels separated by dots, as in `sales.orders`"
        )));
    }
    Ok(levels)
}

/// A key as a query parameter: levels joined by the unit separator (`%1F` once encoded).
pub(crate) fn query_value(levels: &[String]) -> String {
    levels.join("\u{1f}")
}

/// A key from the server (an array of levels) as a person reads it.
pub(crate) fn display(key: &Value) -> String {
    match key {
        Value::Array(levels) => levels
            .iter()
            .map(|level| {
                level
                    .as_str()
                    .map_or_else(|| level.to_string(), str::to_owned)
            })
            .collect::<Vec<_>>()
            .join("."),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn dotted_keys_become_levels_and_back() {
        assert_eq!(parse("sales.orders").unwrap(), ["sales", "orders"]);
        assert_eq!(parse("db").unwrap(), ["db"]);
        assert_eq!(query_value(&parse("a.b.c").unwrap()), "a\u{1f}b\u{1f}c");
        assert_eq!(display(&json!(["sales", "orders"])), "sales.orders");
    }

    #[test]
    fn empty_levels_are_refused() {
        for bad in ["", ".", "a..b", ".a", "a."] {
            let error = parse(bad).unwrap_err();
            assert!(error.message.contains("is not a key"), "{bad}: {error}");
        }
    }
}
