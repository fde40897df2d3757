//! Ref names: validated names of branches and tags.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Longest ref name, in bytes.
pub const MAX_REF_NAME_BYTES: usize = 255;

/// Characters that have a meaning in Pangolin's reference syntax (`table@ref#hash`, `main~3`,
/// `main^`) or in URLs and shells, and so cannot appear in a name.
const RESERVED: &[char] = &['@', '#', '~', '^', ':', ' ', '\\', '?', '*', '[', '%'];

/// The name of a branch or tag: `main`, `dev`, `feature/x`, `release-2026.11`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RefName(String);

/// Why a ref name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefNameError {
    #[error("a ref name cannot be empty")]
    Empty,
    #[error("ref name is {0} bytes long; the limit is {MAX_REF_NAME_BYTES}")]
    TooLong(usize),
    #[error("ref name `{name}` contains `{found}`, which is reserved in reference syntax")]
    Reserved { name: String, found: char },
    #[error("ref name `{name}` contains a control character")]
    ControlCharacter { name: String },
    #[error("ref name `{name}` contains `..`")]
    DoubleDot { name: String },
    #[error("ref name `{name}` has an empty path component (leading, trailing or doubled `/`)")]
    EmptyComponent { name: String },
    #[error("ref name `{name}` has a path component starting with `.`")]
    HiddenComponent { name: String },
    #[error("ref name `{name}` ends with `.` or `.lock`")]
    BadEnding { name: String },
}

impl RefName {
    pub fn new(name: impl Into<String>) -> Result<Self, RefNameError> {
        Self::try_from(name.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for RefName {
    type Error = RefNameError;

    fn try_from(name: String) -> Result<Self, RefNameError> {
        if name.is_empty() {
            return Err(RefNameError::Empty);
        }
        if name.len() > MAX_REF_NAME_BYTES {
            return Err(RefNameError::TooLong(name.len()));
        }
        if name.chars().any(char::is_control) {
            return Err(RefNameError::ControlCharacter { name });
        }
        if let Some(found) = name.chars().find(|c| RESERVED.contains(c)) {
            return Err(RefNameError::Reserved { name, found });
        }
        if name.contains("..") {
            return Err(RefNameError::DoubleDot { name });
        }
        if name.split('/').any(str::is_empty) {
            return Err(RefNameError::EmptyComponent { name });
        }
        if name.split('/').any(|c| c.starts_with('.')) {
            return Err(RefNameError::HiddenComponent { name });
        }
        if name.ends_with('.') || name.ends_with(".lock") {
            return Err(RefNameError::BadEnding { name });
        }
        Ok(Self(name))
    }
}

impl From<RefName> for String {
    fn from(name: RefName) -> Self {
        name.0
    }
}

impl fmt::Display for RefName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RefName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RefName({})", self.0)
    }
}

/// Branches move; tags stay where they were created until deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RefKind {
    Branch,
    Tag,
}

impl RefKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Branch => "branch",
            Self::Tag => "tag",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "branch" => Some(Self::Branch),
            "tag" => Some(Self::Tag),
            _ => None,
        }
    }

    /// The number backends store for this kind; branches sort before tags.
    pub fn code(self) -> u8 {
        match self {
            Self::Branch => 0,
            Self::Tag => 1,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::Branch),
            1 => Some(Self::Tag),
            _ => None,
        }
    }
}

impl fmt::Display for RefKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A branch or a tag of one repository. Orders branches before tags, then by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Reference {
    pub kind: RefKind,
    pub name: RefName,
}

impl Reference {
    pub fn branch(name: RefName) -> Self {
        Self {
            kind: RefKind::Branch,
            name,
        }
    }

    pub fn tag(name: RefName) -> Self {
        Self {
            kind: RefKind::Tag,
            name,
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}`", self.kind, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_are_accepted() {
        for name in [
            "main",
            "dev",
            "feature/x",
            "release-2026.11",
            "a_b",
            "user/alice/exp-1",
            "分支",
        ] {
            assert_eq!(
                RefName::new(name).map(|n| n.to_string()),
                Ok(name.to_owned()),
                "{name}"
            );
        }
    }

    #[test]
    fn invalid_names_are_refused_with_the_reason() {
        let n = |s: &str| s.to_owned();
        let cases = [
            ("", RefNameError::Empty),
            ("a..b", RefNameError::DoubleDot { name: n("a..b") }),
            (
                "a@b",
                RefNameError::Reserved {
                    name: n("a@b"),
                    found: '@',
                },
            ),
            (
                "a#b",
                RefNameError::Reserved {
                    name: n("a#b"),
                    found: '#',
                },
            ),
            (
                "main~3",
                RefNameError::Reserved {
                    name: n("main~3"),
                    found: '~',
                },
            ),
            (
                "main^",
                RefNameError::Reserved {
                    name: n("main^"),
                    found: '^',
                },
            ),
            (
                "a:b",
                RefNameError::Reserved {
                    name: n("a:b"),
                    found: ':',
                },
            ),
            (
                "a b",
                RefNameError::Reserved {
                    name: n("a b"),
                    found: ' ',
                },
            ),
            (
                "a%2F",
                RefNameError::Reserved {
                    name: n("a%2F"),
                    found: '%',
                },
            ),
            (
                "tab\there",
                RefNameError::ControlCharacter {
                    name: n("tab\there"),
                },
            ),
            ("nul\0", RefNameError::ControlCharacter { name: n("nul\0") }),
            ("/lead", RefNameError::EmptyComponent { name: n("/lead") }),
            ("trail/", RefNameError::EmptyComponent { name: n("trail/") }),
            ("a//b", RefNameError::EmptyComponent { name: n("a//b") }),
            (
                ".hidden",
                RefNameError::HiddenComponent { name: n(".hidden") },
            ),
            ("a/.b", RefNameError::HiddenComponent { name: n("a/.b") }),
            ("dot.", RefNameError::BadEnding { name: n("dot.") }),
            ("x.lock", RefNameError::BadEnding { name: n("x.lock") }),
        ];
        for (name, expected) in cases {
            assert_eq!(RefName::new(name), Err(expected), "{name:?}");
        }
        assert_eq!(
            RefName::new("x".repeat(256)),
            Err(RefNameError::TooLong(256))
        );
        assert!(RefName::new("x".repeat(255)).is_ok());
    }

    #[test]
    fn kind_codes_round_trip_and_keep_branches_first() {
        for kind in [RefKind::Branch, RefKind::Tag] {
            assert_eq!(RefKind::from_code(kind.code()), Some(kind));
        }
        assert!(RefKind::Branch.code() < RefKind::Tag.code());
        assert_eq!(RefKind::from_code(7), None);
    }
}
