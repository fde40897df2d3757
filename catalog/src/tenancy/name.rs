//! Names of tenants, warehouses and catalogs.

use std::fmt;

/// A validated tenant, warehouse or catalog name: 1 to 63 ASCII letters, digits, `-` and `_`
/// (the rule [`Catalog::open`](crate::Catalog::open) applies). Such a name cannot contain `/`
/// or `.`, so it is one segment of a record key and one part of a repository id.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Name(String);

/// A name that breaks the naming rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` is not a valid {what} name: use 1 to 63 letters, digits, `-` and `_`")]
pub struct NameError {
    /// What the name was for: `tenant`, `warehouse` or `catalog`.
    pub what: &'static str,
    /// The name as given.
    pub name: String,
}

impl Name {
    /// Checks `name` against the rule; `what` says what it names, for the error.
    pub fn new(what: &'static str, name: &str) -> Result<Self, NameError> {
        if crate::catalog::valid_name(name) {
            Ok(Self(name.to_owned()))
        } else {
            Err(NameError {
                what,
                name: name.to_owned(),
            })
        }
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Name {
    type Error = NameError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new("stored", &value)
    }
}

impl From<Name> for String {
    fn from(name: Name) -> Self {
        name.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}
