//! How long a catalog keeps its history readable: the retention policy.
//!
//! Within the window, every commit of a ref's history and every commit its log records can be
//! read (`main#<time>`, `main#<hash>`, `main~3`) and keeps its tables' files from the sweep.
//! Older commits are refused with a message naming the policy, and their files may be swept
//! once no retained commit references them. Heads of branches and tags are always kept,
//! whatever their age; tags therefore keep their commit until they are deleted.

use pangolin_refs::{RefKind, Reference};
use pangolin_store::Timestamp;
use serde::{Deserialize, Serialize};

/// The shortest window a policy accepts: shorter would refuse reads of commits made moments
/// ago and race every writer.
pub const MIN_HISTORY_MS: u64 = 3600 * 1000;

/// The most branch patterns one policy holds.
pub const MAX_OVERRIDES: usize = 100;

/// A catalog's retention policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RetentionPolicy {
    /// How long, in milliseconds, commits stay readable and keep their files.
    pub history_ms: u64,
    /// Other windows for branches whose names match a pattern; the first match wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub branches: Vec<BranchRetention>,
}

/// The window of the branches a pattern matches (`*` matches any run of characters,
/// `/` included: `feature/*`, `*-scratch`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BranchRetention {
    pub pattern: String,
    pub history_ms: u64,
}

impl RetentionPolicy {
    /// Why the policy is not acceptable, if it is not.
    pub fn validate(&self) -> Result<(), String> {
        let too_short = |ms: u64| ms < MIN_HISTORY_MS;
        if too_short(self.history_ms) {
            return Err(format!(
                "`history-ms` must be at least {MIN_HISTORY_MS} (an hour)"
            ));
        }
        if self.branches.len() > MAX_OVERRIDES {
            return Err(format!("at most {MAX_OVERRIDES} branch patterns"));
        }
        for branch in &self.branches {
            if branch.pattern.is_empty()
                || branch.pattern.len() > 256
                || branch.pattern.chars().any(char::is_control)
            {
                return Err(format!(
                    "`{}` is not a branch pattern: 1 to 256 characters, no control characters",
                    branch.pattern.escape_debug()
                ));
            }
            if too_short(branch.history_ms) {
                return Err(format!(
                    "the window of `{}` must be at least {MIN_HISTORY_MS} ms (an hour)",
                    branch.pattern
                ));
            }
        }
        Ok(())
    }

    /// The window of `reference`, in milliseconds.
    pub fn history_ms(&self, reference: &Reference) -> u64 {
        if reference.kind == RefKind::Branch {
            let name = reference.name.as_str();
            if let Some(branch) = self.branches.iter().find(|b| glob(&b.pattern, name)) {
                return branch.history_ms;
            }
        }
        self.history_ms
    }

    /// The oldest time of `reference`'s history still retained at `now`.
    pub fn cutoff(&self, reference: &Reference, now: Timestamp) -> Timestamp {
        before(now, self.history_ms(reference))
    }

    /// The oldest commit time the catalog's own window retains at `now`: for commits read by
    /// a bare hash, which no ref's window covers.
    pub fn catalog_cutoff(&self, now: Timestamp) -> Timestamp {
        before(now, self.history_ms)
    }
}

fn before(now: Timestamp, window_ms: u64) -> Timestamp {
    let window = i64::try_from(window_ms).unwrap_or(i64::MAX);
    Timestamp::from_millis(now.as_millis().saturating_sub(window))
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters.
fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return pattern == name;
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use pangolin_refs::RefName;

    use super::*;

    #[test]
    fn patterns_match_with_stars() {
        assert!(glob("main", "main"));
        assert!(!glob("main", "main2"));
        assert!(glob("feature/*", "feature/x"));
        assert!(glob("feature/*", "feature/a/b"));
        assert!(!glob("feature/*", "features"));
        assert!(glob("*-scratch", "ana-scratch"));
        assert!(!glob("*-scratch", "ana-scratch2"));
        assert!(glob("a*b*c", "a-b-b-c"));
        assert!(!glob("a*b*c", "a-c"));
        assert!(glob("*", "anything/at/all"));
        assert!(
            !glob("ab*ba", "aba"),
            "the prefix and suffix may not overlap"
        );
    }

    #[test]
    fn the_first_matching_pattern_sets_a_branch_window() {
        let hour = MIN_HISTORY_MS;
        let policy = RetentionPolicy {
            history_ms: 30 * 24 * hour,
            branches: vec![
                BranchRetention {
                    pattern: "feature/keep*".into(),
                    history_ms: 90 * 24 * hour,
                },
                BranchRetention {
                    pattern: "feature/*".into(),
                    history_ms: 2 * hour,
                },
            ],
        };
        assert_eq!(policy.validate(), Ok(()));
        let branch = |n: &str| Reference::branch(RefName::new(n).unwrap());
        assert_eq!(policy.history_ms(&branch("main")), 30 * 24 * hour);
        assert_eq!(policy.history_ms(&branch("feature/x")), 2 * hour);
        assert_eq!(
            policy.history_ms(&branch("feature/keep-me")),
            90 * 24 * hour
        );
        let tag = Reference::tag(RefName::new("feature/x").unwrap());
        assert_eq!(
            policy.history_ms(&tag),
            30 * 24 * hour,
            "patterns are for branches"
        );
        let now = Timestamp::from_millis(1_800_000_000_000);
        assert_eq!(
            policy.cutoff(&branch("feature/x"), now).as_millis(),
            now.as_millis() - 2 * hour as i64
        );
    }

    #[test]
    fn policies_too_short_or_odd_are_refused() {
        let mut policy = RetentionPolicy {
            history_ms: 1000,
            branches: Vec::new(),
        };
        assert!(policy.validate().unwrap_err().contains("at least"));
        policy.history_ms = MIN_HISTORY_MS;
        policy.branches.push(BranchRetention {
            pattern: "a\nb".into(),
            history_ms: MIN_HISTORY_MS,
        });
        assert!(
            policy
                .validate()
                .unwrap_err()
                .contains("not a branch pattern")
        );
        policy.branches[0].pattern = "dev".into();
        policy.branches[0].history_ms = 5;
        assert!(policy.validate().unwrap_err().contains("`dev`"));
        let json = r#"{"history-ms": 3600000, "keep": true}"#;
        assert!(serde_json::from_str::<RetentionPolicy>(json).is_err());
    }
}
