//! Content keys: the path of a namespace or asset inside a catalog.

use std::fmt;

use std::sync::Arc;

use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Most elements a key may have (namespace levels plus the name).
pub const MAX_ELEMENTS: usize = 16;
/// Longest single element, in bytes of UTF-8.
pub const MAX_ELEMENT_BYTES: usize = 255;
/// Longest key, in bytes of UTF-8 over all elements.
pub const MAX_KEY_BYTES: usize = 1024;

/// A validated list of elements: namespace levels, then the name.
///
/// Keys order element by element (`a` < `a.b` < `a.b.c` < `a.c` < `ab`), so everything under a
/// namespace is one contiguous range of the tree.
///
/// Held as one shared string with the elements joined by NUL, which elements cannot contain:
/// NUL sorts below every other byte, so byte order of the joined string is element order, and
/// a key is one allocation that clones without copying. Tree lookups compare many keys per
/// node, which is why this matters.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentKey(Arc<str>);

const SEPARATOR: char = '\0';

/// Why a key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("a key needs at least one element")]
    Empty,
    #[error("a key has at most {MAX_ELEMENTS} elements, this one has {0}")]
    TooManyElements(usize),
    #[error("element {index} of the key is empty")]
    EmptyElement { index: usize },
    #[error("element {index} of the key is {len} bytes long; the limit is {MAX_ELEMENT_BYTES}")]
    ElementTooLong { index: usize, len: usize },
    #[error("element {index} of the key contains the control character U+{code:04X}")]
    ControlCharacter { index: usize, code: u32 },
    #[error("the key is {0} bytes long; the limit is {MAX_KEY_BYTES}")]
    TooLong(usize),
}

impl ContentKey {
    pub fn new<I, S>(elements: I) -> Result<Self, KeyError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut joined = String::new();
        let mut count = 0;
        let mut total = 0;
        for (index, element) in elements.into_iter().enumerate() {
            let element = element.as_ref();
            if element.is_empty() {
                return Err(KeyError::EmptyElement { index });
            }
            if element.len() > MAX_ELEMENT_BYTES {
                return Err(KeyError::ElementTooLong {
                    index,
                    len: element.len(),
                });
            }
            if let Some(c) = element.chars().find(|c| c.is_control()) {
                return Err(KeyError::ControlCharacter {
                    index,
                    code: u32::from(c),
                });
            }
            if index > 0 {
                joined.push(SEPARATOR);
            }
            joined.push_str(element);
            count += 1;
            total += element.len();
        }
        if count == 0 {
            return Err(KeyError::Empty);
        }
        if count > MAX_ELEMENTS {
            return Err(KeyError::TooManyElements(count));
        }
        if total > MAX_KEY_BYTES {
            return Err(KeyError::TooLong(total));
        }
        Ok(Self(joined.into()))
    }

    /// The elements, outermost namespace first.
    pub fn elements(&self) -> impl DoubleEndedIterator<Item = &str> + '_ {
        self.0.split(SEPARATOR)
    }

    /// Number of elements (at least 1).
    pub fn len(&self) -> usize {
        // Bytes, not chars: the separator is ASCII, and a byte count vectorizes.
        self.0.bytes().filter(|b| *b == 0).count() + 1
    }

    /// Always false: a key has at least one element. Present for API symmetry with `len`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The last element: a table's or namespace's own name.
    pub fn name(&self) -> &str {
        self.0.rsplit(SEPARATOR).next().unwrap_or_default()
    }

    /// The enclosing namespace, or `None` for a top-level key.
    pub fn parent(&self) -> Option<ContentKey> {
        self.0
            .rfind(SEPARATOR)
            .map(|at| ContentKey(self.0[..at].into()))
    }

    /// A key one level deeper, validated like any other.
    pub fn child(&self, name: &str) -> Result<ContentKey, KeyError> {
        Self::new(self.elements().chain([name]))
    }

    /// The first `len` elements: the enclosing namespace at that depth, or the key itself when
    /// `len` is its length; `None` when `len` is 0 or greater than the key's length.
    pub fn truncated(&self, len: usize) -> Option<ContentKey> {
        if len == 0 {
            return None;
        }
        // The end of the `len`-th element is the `len`-th separator, or the end of the key.
        match self.0.match_indices(SEPARATOR).nth(len - 1) {
            Some((at, _)) => Some(ContentKey(self.0[..at].into())),
            None if self.len() == len => Some(self.clone()),
            None => None,
        }
    }

    /// Whether `self` equals `prefix` or lies under it.
    pub fn starts_with(&self, prefix: &ContentKey) -> bool {
        match self.0.strip_prefix(&*prefix.0) {
            Some(rest) => rest.is_empty() || rest.starts_with(SEPARATOR),
            None => false,
        }
    }

    /// Bytes hashed to decide tree chunk boundaries: the joined form, which is unambiguous
    /// (`["a.b"]` and `["a", "b"]` differ).
    pub(crate) fn hash_input(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl TryFrom<Vec<String>> for ContentKey {
    type Error = KeyError;

    fn try_from(elements: Vec<String>) -> Result<Self, KeyError> {
        Self::new(elements)
    }
}

/// Encoded as the sequence of its elements.
impl Serialize for ContentKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for element in self.elements() {
            seq.serialize_element(element)?;
        }
        seq.end()
    }
}

/// Decoded keys are validated like typed ones.
impl<'de> Deserialize<'de> for ContentKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let elements = Vec::<String>::deserialize(deserializer)?;
        Self::new(elements).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for ContentKey {
    /// Elements joined by `.`; an element that itself holds a `.` or `"` is quoted, so the
    /// display is unambiguous.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, element) in self.elements().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            if element.contains(['.', '"']) {
                write!(f, "\"{}\"", element.replace('"', "\"\""))?;
            } else {
                f.write_str(element)?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for ContentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentKey({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(elements: &[&str]) -> ContentKey {
        ContentKey::new(elements.iter().copied()).unwrap()
    }

    #[test]
    fn keys_order_element_by_element() {
        let mut keys = [
            key(&["ab"]),
            key(&["a", "c"]),
            key(&["a", "b", "c"]),
            key(&["a"]),
            key(&["a", "b"]),
        ];
        keys.sort();
        let shown: Vec<String> = keys.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["a", "a.b", "a.b.c", "a.c", "ab"]);
    }

    #[test]
    fn everything_under_a_namespace_is_contiguous() {
        let ns = key(&["a"]);
        let mut keys = [
            key(&["a", "zzz"]),
            key(&["ab"]),
            key(&["a"]),
            key(&["a!"]),
            key(&["a", "b"]),
        ];
        keys.sort();
        let under: Vec<bool> = keys.iter().map(|k| k.starts_with(&ns)).collect();
        assert_eq!(under, [true, true, true, false, false]);
    }

    #[test]
    fn invalid_keys_are_refused_with_a_reason() {
        let long = "x".repeat(MAX_ELEMENT_BYTES + 1);
        let cases: Vec<(Vec<String>, KeyError)> = vec![
            (vec![], KeyError::Empty),
            (
                vec!["a".into(); MAX_ELEMENTS + 1],
                KeyError::TooManyElements(MAX_ELEMENTS + 1),
            ),
            (
                vec!["a".into(), String::new()],
                KeyError::EmptyElement { index: 1 },
            ),
            (
                vec![long.clone()],
                KeyError::ElementTooLong {
                    index: 0,
                    len: long.len(),
                },
            ),
            (
                vec!["a\u{0}b".into()],
                KeyError::ControlCharacter { index: 0, code: 0 },
            ),
            (
                vec!["tab\there".into()],
                KeyError::ControlCharacter { index: 0, code: 9 },
            ),
            (vec!["x".repeat(250); 5], KeyError::TooLong(1250)),
        ];
        for (elements, expected) in cases {
            assert_eq!(
                ContentKey::try_from(elements.clone()),
                Err(expected),
                "{elements:?}"
            );
        }
    }

    #[test]
    fn unicode_names_and_dots_are_allowed() {
        let k = key(&["ventes", "données.2026", "表"]);
        assert_eq!(k.to_string(), "ventes.\"données.2026\".表");
        assert_eq!(k.name(), "表");
        assert_eq!(k.parent(), Some(key(&["ventes", "données.2026"])));
        assert_eq!(key(&["top"]).parent(), None);
    }

    #[test]
    fn hash_input_separates_elements() {
        assert_ne!(key(&["a.b"]).hash_input(), key(&["a", "b"]).hash_input());
    }

    #[test]
    fn elements_parent_child_and_prefixes() {
        let k = key(&["a", "b", "c"]);
        assert_eq!(k.elements().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(k.len(), 3);
        assert_eq!(k.parent().unwrap().child("c").unwrap(), k);
        assert!(k.starts_with(&key(&["a", "b"])));
        assert!(k.starts_with(&k));
        assert!(!key(&["ab"]).starts_with(&key(&["a"])));
        assert!(!key(&["a", "bc"]).starts_with(&key(&["a", "b"])));
        assert_eq!(k.truncated(1), Some(key(&["a"])));
        assert_eq!(k.truncated(2), Some(key(&["a", "b"])));
        assert_eq!(k.truncated(3), Some(k.clone()));
        assert_eq!(k.truncated(0), None);
        assert_eq!(k.truncated(4), None);
        assert_eq!(
            key(&["a"]).child(""),
            Err(KeyError::EmptyElement { index: 1 })
        );
    }
}
