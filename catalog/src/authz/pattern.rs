//! Branch patterns on grants: `*`, an exact branch name, or a prefix glob with one trailing `*`.

use std::fmt;

use pangolin_refs::{RefName, RefNameError};
use serde::{Deserialize, Serialize};

/// The branches a grant applies at.
///
/// `*` is the prefix pattern with an empty prefix, so "every branch" needs no case of its own.
/// A prefix pattern also matches the prefix itself (`dev*` matches `dev`), as a shell glob does.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum BranchPattern {
    /// Exactly this branch.
    Exact(RefName),
    /// Every branch whose name starts with this text (`*` when it is empty).
    Prefix(String),
}

/// Why a branch pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BranchPatternError {
    /// `*` somewhere other than at the end.
    #[error(
        "branch pattern `{0}` has a `*` before its end; only one trailing `*` is allowed \
         (`*`, `main`, `release/*`, `dev*`)"
    )]
    InnerStar(String),
    /// An exact pattern that is not a valid branch name.
    #[error("branch pattern `{pattern}` is not a valid branch name: {source}")]
    InvalidName {
        /// The pattern as given.
        pattern: String,
        /// Why the name is not valid.
        source: RefNameError,
    },
    /// A prefix that no valid branch name starts with, so the pattern could never match.
    #[error("no branch name can start with `{prefix}` (pattern `{prefix}*`): {source}")]
    InvalidPrefix {
        /// The text before the `*`.
        prefix: String,
        /// Why the shortest name with that prefix is not valid.
        source: RefNameError,
    },
}

impl BranchPattern {
    /// `*`: every branch.
    pub fn any() -> Self {
        Self::Prefix(String::new())
    }

    /// Parses `*`, `main`, `release/*` or `dev*`.
    pub fn parse(pattern: &str) -> Result<Self, BranchPatternError> {
        let (body, glob) = match pattern.strip_suffix('*') {
            Some(body) => (body, true),
            None => (pattern, false),
        };
        if body.contains('*') {
            return Err(BranchPatternError::InnerStar(pattern.to_owned()));
        }
        if !glob {
            return RefName::new(body).map(Self::Exact).map_err(|source| {
                BranchPatternError::InvalidName {
                    pattern: pattern.to_owned(),
                    source,
                }
            });
        }
        if body.is_empty() {
            return Ok(Self::any());
        }
        // `release/` is no branch name but `release/x` is: accept a prefix when the prefix
        // itself or the prefix extended by one ordinary character is a valid name.
        match RefName::new(body).or_else(|_| RefName::new(format!("{body}x"))) {
            Ok(_) => Ok(Self::Prefix(body.to_owned())),
            Err(source) => Err(BranchPatternError::InvalidPrefix {
                prefix: body.to_owned(),
                source,
            }),
        }
    }

    /// Whether the pattern matches the branch (or other ref) named `branch`.
    pub fn matches(&self, branch: &str) -> bool {
        match self {
            Self::Exact(name) => name.as_str() == branch,
            Self::Prefix(prefix) => branch.starts_with(prefix.as_str()),
        }
    }

    /// Whether every branch `other` matches is matched by `self`: `*` covers everything,
    /// `p*` covers `q` and `q*` when `q` starts with `p`, an exact name covers only itself.
    pub fn covers(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Prefix(p), Self::Prefix(q)) => q.starts_with(p.as_str()),
            (Self::Prefix(p), Self::Exact(q)) => q.as_str().starts_with(p.as_str()),
            (Self::Exact(p), Self::Exact(q)) => p == q,
            (Self::Exact(_), Self::Prefix(_)) => false,
        }
    }

    /// Whether this is `*`.
    pub fn is_any(&self) -> bool {
        matches!(self, Self::Prefix(p) if p.is_empty())
    }
}

impl Default for BranchPattern {
    fn default() -> Self {
        Self::any()
    }
}

impl TryFrom<String> for BranchPattern {
    type Error = BranchPatternError;

    fn try_from(pattern: String) -> Result<Self, BranchPatternError> {
        Self::parse(&pattern)
    }
}

impl From<BranchPattern> for String {
    fn from(pattern: BranchPattern) -> Self {
        pattern.to_string()
    }
}

impl std::str::FromStr for BranchPattern {
    type Err = BranchPatternError;

    fn from_str(pattern: &str) -> Result<Self, BranchPatternError> {
        Self::parse(pattern)
    }
}

impl fmt::Display for BranchPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exact(name) => f.write_str(name.as_str()),
            Self::Prefix(prefix) => write!(f, "{prefix}*"),
        }
    }
}

impl fmt::Debug for BranchPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BranchPattern({self})")
    }
}
