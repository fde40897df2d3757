//! Who a request acts as, and the stable id tokens name it by.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::names::{NameError, PrincipalName, Scope};

/// Whether a principal is a person or a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrincipalKind {
    /// A person who signs in with a password.
    User,
    /// A program that signs in with an API key.
    Service,
}

impl PrincipalKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Service => "service",
        }
    }
}

/// A principal's stable id: kind, scope and name, written `user:acme/ana`, `service:acme/etl`
/// or `user:~/root`. Used as a token's `sub`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PrincipalId {
    /// Person or program.
    pub kind: PrincipalKind,
    /// The tenant, or the root.
    pub scope: Scope,
    /// The name, unique in the scope.
    pub name: PrincipalName,
}

/// Why a principal id did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrincipalIdError {
    /// Not `<kind>:<scope>/<name>`.
    #[error("principal id `{0}` is not of the form `<user|service>:<scope>/<name>`")]
    Malformed(String),
    /// The scope or name is invalid.
    #[error("principal id has an invalid part: {0}")]
    Name(#[from] NameError),
}

impl PrincipalId {
    /// Parses the form [`fmt::Display`] writes.
    pub fn parse(id: &str) -> Result<Self, PrincipalIdError> {
        let malformed = || PrincipalIdError::Malformed(id.to_owned());
        let (kind, rest) = id.split_once(':').ok_or_else(malformed)?;
        let kind = match kind {
            "user" => PrincipalKind::User,
            "service" => PrincipalKind::Service,
            _ => return Err(malformed()),
        };
        let (scope, name) = rest.split_once('/').ok_or_else(malformed)?;
        Ok(Self {
            kind,
            scope: Scope::from_segment(scope)?,
            name: PrincipalName::new(name)?,
        })
    }
}

impl fmt::Display for PrincipalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}/{}", self.kind.as_str(), self.scope, self.name)
    }
}

/// An authenticated principal, as its records say now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Who it is.
    pub id: PrincipalId,
    /// Root administrator (root scope) or tenant administrator (tenant scope). Always false
    /// for service users.
    pub is_admin: bool,
    /// For a service user: the API key it authenticated with (directly or for its token).
    pub key_id: Option<crate::api_key::KeyId>,
}
