//! Object ids: blake3 over a kind-and-length header and the canonical body.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Version of the object format. Bumped only together with new golden vectors: it is part of
/// every id, so objects of two formats can never share an id.
pub const FORMAT_VERSION: u8 = 1;

/// The shortest hash prefix accepted where a user types a hash.
pub const MIN_PREFIX_LEN: usize = 8;

/// What an object is. Part of the hashed header, so a commit and a tree node with the same body
/// bytes still get different ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[repr(u8)]
pub enum ObjectKind {
    Commit = 1,
    Tree = 2,
}

impl ObjectKind {
    pub fn as_u8(self) -> u8 {
        self as u8
    }

    pub fn from_u8(value: u8) -> Option<Self> {
        match value {
            1 => Some(Self::Commit),
            2 => Some(Self::Tree),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Commit => "commit",
            Self::Tree => "tree",
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A 32-byte blake3 id of an immutable object.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectId([u8; 32]);

impl ObjectId {
    pub const LEN: usize = 32;

    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The id held in `bytes`, when they are exactly 32 (as backends store ids).
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(Self)
    }

    /// The id of an object of `kind` whose canonical body is `body`.
    pub fn compute(kind: ObjectKind, body: &[u8]) -> Self {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&[FORMAT_VERSION, kind.as_u8()]);
        hasher.update(&(body.len() as u64).to_le_bytes());
        hasher.update(body);
        Self(*hasher.finalize().as_bytes())
    }

    /// Lowercase hex, 64 characters.
    pub fn to_hex(&self) -> String {
        let mut out = String::with_capacity(64);
        for byte in self.0 {
            out.push(hex_digit(byte >> 4));
            out.push(hex_digit(byte & 0x0f));
        }
        out
    }

    /// The first `len` hex characters, as shown in logs and the CLI.
    pub fn short(&self, len: usize) -> String {
        let mut hex = self.to_hex();
        hex.truncate(len.min(64));
        hex
    }

    /// Whether this id starts with `prefix`.
    pub fn has_prefix(&self, prefix: &HashPrefix) -> bool {
        prefix.matches(self)
    }
}

fn hex_digit(nibble: u8) -> char {
    char::from_digit(u32::from(nibble), 16).expect("a nibble is below 16")
}

fn parse_nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({})", self.short(12))
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// Why a typed hash was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseIdError {
    #[error("hash `{input}` has {len} characters; a full hash has 64")]
    WrongLength { input: String, len: usize },
    #[error("hash prefix `{input}` is too short: give at least {MIN_PREFIX_LEN} hex characters")]
    TooShort { input: String },
    #[error("`{input}` is not a hash: `{found}` at position {position} is not a hex digit")]
    NotHex {
        input: String,
        found: char,
        position: usize,
    },
}

impl FromStr for ObjectId {
    type Err = ParseIdError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let prefix = HashPrefix::parse(input)?;
        if prefix.len != 64 {
            return Err(ParseIdError::WrongLength {
                input: input.to_owned(),
                len: prefix.len,
            });
        }
        Ok(Self(prefix.bytes))
    }
}

/// A user-typed hash: a full id or a prefix of at least [`MIN_PREFIX_LEN`] hex characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HashPrefix {
    bytes: [u8; 32],
    /// Number of hex characters given.
    len: usize,
}

impl HashPrefix {
    pub fn parse(input: &str) -> Result<Self, ParseIdError> {
        let raw = input.as_bytes();
        if raw.len() > 64 {
            return Err(ParseIdError::WrongLength {
                input: input.to_owned(),
                len: raw.len(),
            });
        }
        let mut bytes = [0u8; 32];
        for (position, &c) in raw.iter().enumerate() {
            let Some(nibble) = parse_nibble(c) else {
                let found = input[position..].chars().next().unwrap_or('?');
                return Err(ParseIdError::NotHex {
                    input: input.to_owned(),
                    found,
                    position,
                });
            };
            let shift = if position % 2 == 0 { 4 } else { 0 };
            bytes[position / 2] |= nibble << shift;
        }
        if raw.len() < MIN_PREFIX_LEN {
            return Err(ParseIdError::TooShort {
                input: input.to_owned(),
            });
        }
        Ok(Self {
            bytes,
            len: raw.len(),
        })
    }

    /// Number of hex characters in the prefix.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The full id, when all 64 characters were given.
    pub fn as_full(&self) -> Option<ObjectId> {
        (self.len == 64).then_some(ObjectId(self.bytes))
    }

    /// The smallest id with this prefix: the start of a range scan over sorted ids.
    pub fn lower_bound(&self) -> ObjectId {
        ObjectId(self.bytes)
    }

    pub fn matches(&self, id: &ObjectId) -> bool {
        let whole = self.len / 2;
        if id.0[..whole] != self.bytes[..whole] {
            return false;
        }
        self.len.is_multiple_of(2) || (id.0[whole] & 0xf0) == self.bytes[whole]
    }
}

impl fmt::Debug for HashPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HashPrefix({self})")
    }
}

impl fmt::Display for HashPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&ObjectId(self.bytes).short(self.len))
    }
}

/// Picks the one id among `candidates` that starts with `prefix`.
///
/// Stores answer "which ids start with this prefix" (bounded); this turns that answer into
/// the user-facing outcome with a clear error for "none" and "several".
pub fn resolve_prefix(
    prefix: &HashPrefix,
    candidates: impl IntoIterator<Item = ObjectId>,
) -> Result<ObjectId, ResolvePrefixError> {
    let mut matching: Vec<ObjectId> = candidates
        .into_iter()
        .filter(|id| prefix.matches(id))
        .collect();
    matching.sort();
    matching.dedup();
    match matching.len() {
        0 => Err(ResolvePrefixError::NotFound { prefix: *prefix }),
        1 => Ok(matching[0]),
        _ => Err(ResolvePrefixError::Ambiguous {
            prefix: *prefix,
            candidates: matching,
        }),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolvePrefixError {
    #[error("no object has a hash starting with `{prefix}`")]
    NotFound { prefix: HashPrefix },
    #[error("hash prefix `{prefix}` is ambiguous: {} objects match; give more characters", candidates.len())]
    Ambiguous {
        prefix: HashPrefix,
        candidates: Vec<ObjectId>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(byte: u8) -> ObjectId {
        ObjectId::from_bytes([byte; 32])
    }

    #[test]
    fn hex_round_trips() {
        let original = ObjectId::compute(ObjectKind::Tree, b"hello");
        let parsed: ObjectId = original.to_hex().parse().unwrap();
        assert_eq!(parsed, original);
        assert_eq!(original.to_hex().len(), 64);
        assert_eq!(original.to_hex(), original.to_hex().to_lowercase());
    }

    #[test]
    fn ids_come_from_exactly_32_bytes() {
        let original = id(7);
        assert_eq!(ObjectId::from_slice(original.as_bytes()), Some(original));
        assert_eq!(ObjectId::from_slice(&[7; 31]), None);
        assert_eq!(ObjectId::from_slice(&[7; 33]), None);
    }

    #[test]
    fn upper_case_hex_is_accepted() {
        let original = id(0xab);
        let parsed: ObjectId = original.to_hex().to_uppercase().parse().unwrap();
        assert_eq!(parsed, original);
    }

    #[test]
    fn kind_is_part_of_the_id() {
        assert_ne!(
            ObjectId::compute(ObjectKind::Commit, b"same body"),
            ObjectId::compute(ObjectKind::Tree, b"same body")
        );
    }

    #[test]
    fn short_prefixes_are_refused_with_the_minimum() {
        let err = HashPrefix::parse("abc1234").unwrap_err();
        assert_eq!(
            err,
            ParseIdError::TooShort {
                input: "abc1234".into()
            }
        );
        assert!(err.to_string().contains("at least 8"));
    }

    #[test]
    fn non_hex_characters_are_named_with_their_position() {
        let err = HashPrefix::parse("abcdefgh").unwrap_err();
        assert_eq!(
            err,
            ParseIdError::NotHex {
                input: "abcdefgh".into(),
                found: 'g',
                position: 6
            }
        );
    }

    #[test]
    fn too_long_and_partial_full_hashes_are_refused() {
        let long = "a".repeat(65);
        assert!(matches!(
            HashPrefix::parse(&long),
            Err(ParseIdError::WrongLength { len: 65, .. })
        ));
        assert!(matches!(
            "abcdef0123".parse::<ObjectId>(),
            Err(ParseIdError::WrongLength { len: 10, .. })
        ));
    }

    #[test]
    fn odd_length_prefixes_match_on_the_high_nibble() {
        let target = ObjectId::compute(ObjectKind::Commit, b"x");
        let hex = target.to_hex();
        for len in 8..=64 {
            let prefix = HashPrefix::parse(&hex[..len]).unwrap();
            assert!(prefix.matches(&target), "prefix of {len} characters");
        }
        let mut other = *target.as_bytes();
        other[4] ^= 0x01; // differs in hex character 9 (index 9)
        let other = ObjectId::from_bytes(other);
        assert!(HashPrefix::parse(&hex[..9]).unwrap().matches(&other));
        assert!(!HashPrefix::parse(&hex[..10]).unwrap().matches(&other));
    }

    #[test]
    fn resolving_a_prefix_reports_none_one_or_ambiguous() {
        let a = ObjectId::compute(ObjectKind::Commit, b"a");
        let b = ObjectId::compute(ObjectKind::Commit, b"b");
        let prefix_a = HashPrefix::parse(&a.short(10)).unwrap();
        assert_eq!(resolve_prefix(&prefix_a, [a, b]), Ok(a));
        assert!(matches!(
            resolve_prefix(&prefix_a, [b]),
            Err(ResolvePrefixError::NotFound { .. })
        ));
        let mut twin = *a.as_bytes();
        twin[31] ^= 1;
        let twin = ObjectId::from_bytes(twin);
        let err = resolve_prefix(&prefix_a, [a, twin, b]).unwrap_err();
        assert!(
            matches!(err, ResolvePrefixError::Ambiguous { ref candidates, .. } if candidates.len() == 2)
        );
        assert!(err.to_string().contains("ambiguous"));
    }
}
