//! Tenant names, principal names and the scope a principal lives in.
//!
//! Names are `[A-Za-z0-9_-]{1,63}`. The root (deployment-wide) scope is written `~` in keys
//! and principal ids; no tenant name can contain `~`, so a root principal can never be taken
//! for a tenant's.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Longest tenant or principal name, in characters.
pub const MAX_NAME_CHARS: usize = 63;

/// How the root scope is written in record keys and principal ids.
pub(crate) const ROOT_SEGMENT: &str = "~";

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name is empty.
    #[error("a {what} name cannot be empty")]
    Empty {
        /// What was being named (`tenant`, `user`, ...).
        what: &'static str,
    },
    /// The name is longer than [`MAX_NAME_CHARS`].
    #[error("{what} name is {len} characters long; the limit is {MAX_NAME_CHARS}")]
    TooLong {
        /// What was being named.
        what: &'static str,
        /// Its length in characters.
        len: usize,
    },
    /// The name holds a character outside `[A-Za-z0-9_-]`.
    #[error("{what} name `{name}` may only contain letters, digits, `_` and `-`")]
    InvalidCharacter {
        /// What was being named.
        what: &'static str,
        /// The refused name.
        name: String,
    },
}

fn validate(what: &'static str, name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty { what });
    }
    let len = name.chars().count();
    if len > MAX_NAME_CHARS {
        return Err(NameError::TooLong { what, len });
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !name.chars().all(allowed) {
        return Err(NameError::InvalidCharacter {
            what,
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// A tenant's name.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TenantName(String);

impl TenantName {
    /// Validates `name`.
    pub fn new(name: impl Into<String>) -> Result<Self, NameError> {
        let name = name.into();
        validate("tenant", &name)?;
        Ok(Self(name))
    }

    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A user's or service user's name, unique within its scope.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PrincipalName(String);

impl PrincipalName {
    /// Validates `name`.
    pub fn new(name: impl Into<String>) -> Result<Self, NameError> {
        let name = name.into();
        validate("principal", &name)?;
        Ok(Self(name))
    }

    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! string_newtype_impls {
    ($ty:ident) => {
        impl TryFrom<String> for $ty {
            type Error = NameError;
            fn try_from(name: String) -> Result<Self, NameError> {
                Self::new(name)
            }
        }

        impl From<$ty> for String {
            fn from(name: $ty) -> String {
                name.0
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($ty), self.0)
            }
        }
    };
}

string_newtype_impls!(TenantName);
string_newtype_impls!(PrincipalName);

/// Where a principal lives: in one tenant, or at the root of the deployment.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Scope {
    /// Deployment-wide principals (an admin here is a root administrator).
    Root,
    /// A tenant's principals (an admin here administers that tenant only).
    Tenant(TenantName),
}

impl Scope {
    /// The scope of tenant `name`.
    pub fn tenant(name: impl Into<String>) -> Result<Self, NameError> {
        TenantName::new(name).map(Self::Tenant)
    }

    /// The tenant, or `None` at the root.
    pub fn tenant_name(&self) -> Option<&TenantName> {
        match self {
            Self::Root => None,
            Self::Tenant(name) => Some(name),
        }
    }

    /// How the scope is written in keys and ids: `~` or the tenant name.
    pub fn segment(&self) -> &str {
        match self {
            Self::Root => ROOT_SEGMENT,
            Self::Tenant(name) => name.as_str(),
        }
    }

    /// The scope written as by [`Scope::segment`].
    pub fn from_segment(segment: &str) -> Result<Self, NameError> {
        if segment == ROOT_SEGMENT {
            Ok(Self::Root)
        } else {
            Self::tenant(segment)
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.segment())
    }
}

impl TryFrom<String> for Scope {
    type Error = NameError;
    fn try_from(segment: String) -> Result<Self, NameError> {
        Self::from_segment(&segment)
    }
}

impl From<Scope> for String {
    fn from(scope: Scope) -> String {
        scope.segment().to_owned()
    }
}
