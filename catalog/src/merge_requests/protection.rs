//! Protected branches: branches that change only through merge requests whose checks passed.

use pangolin_refs::{RefKind, Reference};
use serde::{Deserialize, Serialize};

use super::checks::CheckSpec;
use crate::authz::BranchPattern;

/// The most rules one catalog's protection holds.
pub const MAX_RULES: usize = 50;
/// The most checks one rule holds.
pub const MAX_CHECKS: usize = 20;

/// A catalog's protected branches: the first rule whose pattern matches a branch protects it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BranchProtection {
    pub rules: Vec<ProtectionRule>,
}

/// Branches matching `branch` (`main`, `release/*`, `*`) accept no commit, merge, cherry-pick,
/// revert, reset or deletion; a merge request lands on them once `checks` passed on exactly
/// the commit the branch would move to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ProtectionRule {
    pub branch: BranchPattern,
    #[serde(default)]
    pub checks: Vec<CheckSpec>,
}

/// A change refused because its branch is protected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "branch `{branch}` is protected (rule `{pattern}`): it changes only through merge requests \
     whose checks passed"
)]
pub struct Protected {
    pub branch: String,
    pub pattern: String,
}

impl BranchProtection {
    /// Why the protection is not acceptable, if it is not.
    pub fn validate(&self) -> Result<(), String> {
        if self.rules.len() > MAX_RULES {
            return Err(format!("at most {MAX_RULES} rules"));
        }
        for rule in &self.rules {
            if rule.checks.len() > MAX_CHECKS {
                return Err(format!(
                    "rule `{}` has {} checks; at most {MAX_CHECKS}",
                    rule.branch,
                    rule.checks.len()
                ));
            }
            for check in &rule.checks {
                check
                    .validate()
                    .map_err(|e| format!("rule `{}`: {e}", rule.branch))?;
            }
        }
        Ok(())
    }

    /// The rule protecting `reference`, if it is a protected branch.
    pub fn rule_for(&self, reference: &Reference) -> Option<&ProtectionRule> {
        if reference.kind != RefKind::Branch {
            return None;
        }
        self.rules
            .iter()
            .find(|rule| rule.branch.matches(reference.name.as_str()))
    }

    /// `Err` when `reference` is a protected branch.
    pub fn check(&self, reference: &Reference) -> Result<(), Protected> {
        match self.rule_for(reference) {
            Some(rule) => Err(Protected {
                branch: reference.name.to_string(),
                pattern: rule.branch.to_string(),
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use pangolin_refs::RefName;

    use super::*;

    fn branch(name: &str) -> Reference {
        Reference::branch(RefName::new(name).unwrap())
    }

    fn protection(json: serde_json::Value) -> Result<BranchProtection, String> {
        let parsed: BranchProtection = serde_json::from_value(json).map_err(|e| e.to_string())?;
        parsed.validate()?;
        Ok(parsed)
    }

    #[test]
    fn the_first_matching_rule_protects_a_branch_and_tags_are_never_protected() {
        let p = protection(serde_json::json!({"rules": [
            {"branch": "main", "checks": [{"kind": "no-lost-rows"}]},
            {"branch": "release/*"},
        ]}))
        .unwrap();
        assert_eq!(p.rule_for(&branch("main")).unwrap().checks.len(), 1);
        assert!(
            p.rule_for(&branch("release/1.0"))
                .unwrap()
                .checks
                .is_empty()
        );
        assert!(p.rule_for(&branch("dev")).is_none());
        assert!(p.check(&branch("dev")).is_ok());
        let refused = p.check(&branch("release/2")).unwrap_err();
        assert_eq!(refused.pattern, "release/*");
        let tag = Reference::tag(RefName::new("main").unwrap());
        assert!(p.rule_for(&tag).is_none());
    }

    #[test]
    fn bad_rules_are_refused_with_a_reason() {
        for (json, expected) in [
            (
                serde_json::json!({"rules": [{"branch": "ma*n"}]}),
                "trailing",
            ),
            (
                serde_json::json!({"rules": [{"branch": "main", "x": 1}]}),
                "unknown field",
            ),
            (
                serde_json::json!({"rules": [{"branch": "main", "checks": [{"kind": "nope"}]}]}),
                "unknown variant",
            ),
            (
                serde_json::json!({"rules": [{"branch": "main", "checks": [
                    {"kind": "forbid", "types": ["drop-tables"]}]}]}),
                "unknown event type",
            ),
        ] {
            let error = protection(json).unwrap_err();
            assert!(error.contains(expected), "{error}");
        }
    }
}
