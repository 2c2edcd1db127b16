//! The rules catalogue: every documented Windows-node rule (current and historic) with its
//! documented summary and sources, embedded from `suites/rules.yaml`. Suites may cite only
//! these ids; `mixcheck list --uncovered` lists the ones no check covers.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The embedded catalogue text.
pub const EMBEDDED: &str = include_str!("../../../suites/rules.yaml");

/// One rule of the catalogue.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Rule {
    pub id: String,
    pub category: String,
    pub applies_when: String,
    pub documented: String,
    /// A requirement (outside it the cluster fails) or a recommendation (not followed: warn).
    pub level: Level,
    pub sources: Vec<String>,
    /// Why no check judges the rule (no API observation can, or the run cannot set it up).
    #[serde(default)]
    pub uncovered: Option<String>,
}

/// What a rule is to a cluster: docs/design.md, "Verdicts and the gate".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// Documented behaviour or a support boundary: outside it the cluster fails the gate.
    Requirement,
    /// Documented advice: not following it warns.
    Recommendation,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    rules: Vec<Rule>,
}

/// The embedded catalogue does not parse (a build of mixcheck that is broken, not bad input).
#[derive(Debug, thiserror::Error)]
#[error("suites/rules.yaml (embedded):{line}:{column}: {message}")]
pub struct RulesError {
    line: u64,
    column: u64,
    message: String,
}

/// The rules by id.
#[derive(Debug, Clone)]
pub struct Catalogue {
    rules: BTreeMap<String, Rule>,
}

impl Catalogue {
    /// The catalogue built into the binary.
    pub fn embedded() -> Result<Self, RulesError> {
        let file: File = serde_saphyr::from_str(EMBEDDED).map_err(|e| {
            let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
            RulesError {
                line,
                column,
                message: e.to_string().lines().next().unwrap_or_default().to_string(),
            }
        })?;
        Ok(Self {
            rules: file.rules.into_iter().map(|r| (r.id.clone(), r)).collect(),
        })
    }

    pub fn contains(&self, id: &str) -> bool {
        self.rules.contains_key(id)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Rule> {
        self.rules.values()
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_holds_every_rule_of_windows_rules_md() {
        let c = Catalogue::embedded().expect("catalogue parses");
        // Every current and historic rule, with "A / B" rows split, and the four NetworkPolicy
        // rules of the network-policy suite (issue #38).
        assert_eq!(c.len(), 123);
        for id in [
            "NET-POD-POD-IP-CROSS",
            "SVC-VIP-FROM-NODE",
            "MEM-EVICTION",
            "VER-KUBEPROXY-SKEW",
            "HIST-1.9-SVC-VIP-NODE",
        ] {
            assert!(c.contains(id), "{id}");
        }
        assert!(!c.contains("NET-TELEPORT"));
        let r = c.iter().find(|r| r.id == "NP-LOCAL-NODE").expect("rule");
        assert_eq!(r.documented, "LIMITATION");
        assert!(r.sources.iter().any(|s| s == "W14"));
    }

    /// The policy of issue #22: reserved memory and kubelet priority are advice; the skew policy,
    /// the supported builds and runtimes are support boundaries.
    #[rstest::rstest]
    #[case("MEM-SYS-RESERVED", Level::Recommendation)]
    #[case("CPU-KUBELET-PRIORITY", Level::Recommendation)]
    #[case("VER-KUBELET-SKEW", Level::Requirement)]
    #[case("VER-KUBEPROXY-SKEW", Level::Requirement)]
    #[case("VER-OS-SUPPORTED", Level::Requirement)]
    #[case("VER-RUNTIME", Level::Requirement)]
    fn each_rule_is_a_requirement_or_a_recommendation(#[case] id: &str, #[case] level: Level) {
        let c = Catalogue::embedded().expect("catalogue parses");
        assert_eq!(c.iter().find(|r| r.id == id).map(|r| r.level), Some(level), "{id}");
    }
}
