//! Reference syntax: what `main`, `main#3fa9c1e2`, `main#2026-11-30T12:00:00Z`, `main~3`, `v1`
//! and a bare hash mean, and which commit they name.

use std::fmt;

use pangolin_refs::{RefName, Reference};
use pangolin_store::{HashPrefix, Timestamp};

/// A parsed reference expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefSpec {
    /// A branch or tag by name (a branch wins when both exist).
    Named(RefName),
    /// A commit reachable from a named ref, by hash prefix.
    AtHash(RefName, HashPrefix),
    /// What a named ref pointed to at a time.
    AtTime(RefName, Timestamp),
    /// `n` first-parent steps back from a named ref.
    Back(RefName, u64),
}

/// Why a reference expression was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefSpecError {
    #[error("`{input}`: {reason}")]
    Invalid { input: String, reason: String },
}

fn invalid(input: &str, reason: impl Into<String>) -> RefSpecError {
    RefSpecError::Invalid {
        input: input.to_owned(),
        reason: reason.into(),
    }
}

impl RefSpec {
    pub fn parse(input: &str) -> Result<Self, RefSpecError> {
        if let Some((name, at)) = input.split_once('#') {
            let name = RefName::new(name).map_err(|e| invalid(input, e.to_string()))?;
            if at.contains(['-', ':', 'T']) && at.len() > 10 {
                let time: jiff::Timestamp = at
                    .parse()
                    .map_err(|e| invalid(input, format!("`{at}` is not an RFC 3339 time: {e}")))?;
                return Ok(Self::AtTime(
                    name,
                    Timestamp::from_millis(time.as_millisecond()),
                ));
            }
            let prefix = HashPrefix::parse(at).map_err(|e| invalid(input, e.to_string()))?;
            return Ok(Self::AtHash(name, prefix));
        }
        if let Some((name, back)) = input.split_once('~') {
            let name = RefName::new(name).map_err(|e| invalid(input, e.to_string()))?;
            let n = match back {
                "" => 1,
                digits => digits.parse().map_err(|_| {
                    invalid(input, format!("`~{digits}` needs a number of commits"))
                })?,
            };
            return Ok(Self::Back(name, n));
        }
        // A bare hash parses as a name too: it reads as a hash only when no ref has that name,
        // which the catalog decides.
        let name = RefName::new(input).map_err(|e| invalid(input, e.to_string()))?;
        Ok(Self::Named(name))
    }

    /// The ref the expression starts from.
    pub fn ref_name(&self) -> &RefName {
        match self {
            Self::Named(n) | Self::AtHash(n, _) | Self::AtTime(n, _) | Self::Back(n, _) => n,
        }
    }
}

/// A stored time as RFC 3339 in UTC (`2026-11-30T12:00:00.250Z`), the form `main#<time>`
/// accepts back.
pub fn rfc3339(time: Timestamp) -> String {
    jiff::Timestamp::from_millisecond(time.as_millis())
        .map_or_else(|_| format!("{}ms", time.as_millis()), |t| t.to_string())
}

impl fmt::Display for RefSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Named(n) => write!(f, "{n}"),
            Self::AtHash(n, h) => write!(f, "{n}#{h}"),
            Self::AtTime(n, t) => write!(f, "{n}#{}", rfc3339(*t)),
            Self::Back(n, k) => write!(f, "{n}~{k}"),
        }
    }
}

/// What a reference expression resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub commit: pangolin_store::ObjectId,
    /// The branch a write may go to: set only when the expression names a branch head.
    pub writable_branch: Option<Reference>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> RefName {
        RefName::new(n).unwrap()
    }

    #[test]
    fn expressions_parse() {
        assert_eq!(
            RefSpec::parse("main").unwrap(),
            RefSpec::Named(name("main"))
        );
        assert_eq!(
            RefSpec::parse("feature/x~3").unwrap(),
            RefSpec::Back(name("feature/x"), 3)
        );
        assert_eq!(
            RefSpec::parse("main~").unwrap(),
            RefSpec::Back(name("main"), 1)
        );
        assert_eq!(
            RefSpec::parse("main#3fa9c1e2").unwrap(),
            RefSpec::AtHash(name("main"), HashPrefix::parse("3fa9c1e2").unwrap())
        );
        assert_eq!(
            RefSpec::parse("main#2026-11-30T12:00:00Z").unwrap(),
            RefSpec::AtTime(name("main"), Timestamp::from_millis(1_796_040_000_000))
        );
        assert_eq!(
            RefSpec::parse("dev#2026-11-30T13:00:00.250+01:00").unwrap(),
            RefSpec::AtTime(name("dev"), Timestamp::from_millis(1_796_040_000_250))
        );
    }

    #[test]
    fn bad_expressions_say_why() {
        for (input, fragment) in [
            ("main#abc", "at least 8"),
            ("main#2026-13-40T00:00:00Z", "RFC 3339"),
            ("main~x", "number of commits"),
            ("a..b", ".."),
            ("main#zzzzzzzz", "hex"),
        ] {
            let err = RefSpec::parse(input).unwrap_err();
            assert!(err.to_string().contains(fragment), "{input}: {err}");
        }
    }
}
