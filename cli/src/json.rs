//! `--json`: the server's JSON as it came, object keys in the server's order, pretty-printed.
//!
//! `serde_json::Value` sorts object keys (the workspace does not enable `preserve_order`, and
//! enabling it here would change the server's own output in the same build), so answers are
//! printed through [`Ordered`], which keeps them.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::error::{CliError, Result};

/// A JSON value whose objects keep their keys in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ordered {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Ordered>),
    Object(Vec<(String, Ordered)>),
}

impl Ordered {
    /// Parses an answer's body.
    pub(crate) fn parse(text: &str) -> Result<Self> {
        serde_json::from_str(text)
            .map_err(|e| CliError::server(format!("the server answered with invalid JSON: {e}")))
    }

    /// The value of `key` in an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Ordered> {
        match self {
            Self::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Sets `key` in an object, in place when present, else at the end.
    pub(crate) fn set(&mut self, key: &str, value: Ordered) {
        if let Self::Object(fields) = self {
            match fields.iter_mut().find(|(k, _)| k == key) {
                Some((_, slot)) => *slot = value,
                None => fields.push((key.to_owned(), value)),
            }
        }
    }

    /// Removes `key` from an object.
    pub(crate) fn remove(&mut self, key: &str) {
        if let Self::Object(fields) = self {
            fields.retain(|(k, _)| k != key);
        }
    }

    /// The items of an array (none for anything else).
    pub(crate) fn into_items(self) -> Vec<Ordered> {
        match self {
            Self::Array(items) => items,
            _ => Vec::new(),
        }
    }

    /// Pretty text with a final newline.
    pub(crate) fn pretty(&self) -> String {
        // Serializing a tree of strings, numbers and vectors cannot fail.
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Null => serializer.serialize_unit(),
            Self::Bool(b) => serializer.serialize_bool(*b),
            Self::Number(n) => n.serialize(serializer),
            Self::String(s) => serializer.serialize_str(s),
            Self::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Self::Object(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (key, value) in fields {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(OrderedVisitor)
    }
}

struct OrderedVisitor;

impl<'de> Visitor<'de> for OrderedVisitor {
    type Value = Ordered;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Ordered, E> {
        Ok(Ordered::Null)
    }

    fn visit_none<E>(self) -> Result<Ordered, E> {
        Ok(Ordered::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Ordered, D::Error> {
        Ordered::deserialize(d)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Ordered, E> {
        Ok(Ordered::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Ordered, E> {
        Ok(Ordered::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Ordered, E> {
        Ok(Ordered::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Ordered, E> {
        // JSON has no NaN or infinity, so a parsed float always converts.
        Ok(serde_json::Number::from_f64(n).map_or(Ordered::Null, Ordered::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Ordered, E> {
        Ok(Ordered::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Ordered, E> {
        Ok(Ordered::String(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Ordered::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
        let mut fields: Vec<(String, Ordered)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Ordered>()? {
            // A repeated key keeps its last value, as serde_json's own maps do.
            match fields.iter_mut().find(|(k, _)| *k == key) {
                Some((_, slot)) => *slot = value,
                None => fields.push((key, value)),
            }
        }
        Ok(Ordered::Object(fields))
    }
}

/// Pages of one list answer as one answer: the first page's object with `field` holding the
/// items of every page (cut to `limit`) and no `next-page-token`.
pub(crate) fn join_pages(mut pages: Vec<Ordered>, field: &str, limit: Option<usize>) -> Ordered {
    if pages.is_empty() {
        return Ordered::Object(Vec::new());
    }
    let mut first = pages.remove(0);
    let mut items = first
        .get(field)
        .cloned()
        .map(Ordered::into_items)
        .unwrap_or_default();
    for page in pages {
        if let Some(more) = page.get(field) {
            items.extend(more.clone().into_items());
        }
    }
    if let Some(limit) = limit {
        items.truncate(limit);
    }
    first.set(field, Ordered::Array(items));
    first.remove("next-page-token");
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_the_servers_order() {
        let text = r#"{"zeta":1,"alpha":{"y":true,"b":null},"list":[1.5,"x"]}"#;
        let value = Ordered::parse(text).unwrap();
        assert_eq!(serde_json::to_string(&value).unwrap(), text);
        assert!(value.pretty().starts_with("{\n  \"zeta\": 1,"));
    }

    #[test]
    fn pages_join_into_one_answer() {
        let pages = vec![
            Ordered::parse(r#"{"commits":[1,2],"next-page-token":"a"}"#).unwrap(),
            Ordered::parse(r#"{"commits":[3,4]}"#).unwrap(),
        ];
        let joined = join_pages(pages, "commits", Some(3));
        assert_eq!(
            serde_json::to_string(&joined).unwrap(),
            r#"{"commits":[1,2,3]}"#
        );
    }
}
