//! Which nodes a run checked how: the full check matrix on a few representatives per distinct
//! set of node facts, a light per-node coverage on the others, and the nodes promoted to the
//! full matrix because their light coverage failed (`--coverage`).

use serde::{Deserialize, Serialize};

/// How the run laid its checks over the nodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The full matrix on representatives of each fact set; light coverage on the rest.
    #[default]
    Sampled,
    /// The full matrix on every node (`--coverage full`).
    Full,
}

impl Mode {
    /// The flag value (`sampled`, `full`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Sampled => "sampled",
            Mode::Full => "full",
        }
    }
}

/// What one node got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// Every selected check (a representative of its fact set, or every node with `--coverage full`).
    Full,
    /// Its light coverage failed, so it got every selected check too.
    Promoted,
    /// The light per-node checks, and the checks that read facts (every node).
    Light,
}

impl Level {
    /// Its name in reports (`full`, `promoted`, `light`).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Full => "full",
            Level::Promoted => "promoted",
            Level::Light => "light",
        }
    }
}

/// One probed node's coverage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeCoverage {
    /// The node's name.
    pub node: String,
    /// Its pool (`linux`, `windows-20348`, …).
    pub pool: String,
    /// What it got.
    pub level: Level,
    /// The facts that made its nodes interchangeable (build and kernel, runtime, kubelet).
    pub fact_set: String,
}

/// The run's coverage of its nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// `--coverage`.
    pub mode: Mode,
    /// The checks every node gets under sampled coverage.
    #[serde(default)]
    pub light_checks: Vec<String>,
    /// Every probed node, in the order of the cluster's nodes.
    #[serde(default)]
    pub nodes: Vec<NodeCoverage>,
}

impl Coverage {
    /// How many nodes got `level`.
    pub fn count(&self, level: Level) -> usize {
        self.nodes.iter().filter(|n| n.level == level).count()
    }

    /// One line for humans: `sampled — full matrix on 6 of 250 nodes (…), light on 244, promoted 0`;
    /// None when every node got the full matrix of a small cluster (nothing to say).
    pub fn line(&self) -> Option<String> {
        let total = self.nodes.len();
        let (full, promoted, light) = (
            self.count(Level::Full),
            self.count(Level::Promoted),
            self.count(Level::Light),
        );
        if self.mode == Mode::Sampled && light == 0 && promoted == 0 {
            return None;
        }
        Some(match self.mode {
            Mode::Full => format!("full — every check on all {total} nodes (--coverage full)"),
            Mode::Sampled => {
                let mut s = format!(
                    "sampled — every check on {full} representative node{} of {total}, light per-node checks ({}) on {light}",
                    if full == 1 { "" } else { "s" },
                    self.light_checks.join(", ")
                );
                if promoted > 0 {
                    let names: Vec<&str> = self
                        .nodes
                        .iter()
                        .filter(|n| n.level == Level::Promoted)
                        .map(|n| n.node.as_str())
                        .collect();
                    s.push_str(&format!(
                        "; {promoted} promoted to every check after a light check failed: {}",
                        names.join(", ")
                    ));
                }
                s.push_str(" (--coverage full checks every node)");
                s
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, level: Level) -> NodeCoverage {
        NodeCoverage {
            node: name.into(),
            pool: "windows-20348".into(),
            level,
            fact_set: "10.0.20348.2762 · containerd 1.7 · kubelet 1.32".into(),
        }
    }

    #[test]
    fn a_small_cluster_checked_whole_says_nothing_and_a_sampled_one_names_its_promotions() {
        let small = Coverage {
            mode: Mode::Sampled,
            light_checks: vec!["pod-ip-cross-node".into()],
            nodes: vec![node("a", Level::Full), node("b", Level::Full)],
        };
        assert_eq!(small.line(), None);
        let big = Coverage {
            nodes: vec![
                node("a", Level::Full),
                node("b", Level::Full),
                node("c", Level::Light),
                node("d", Level::Promoted),
            ],
            ..small.clone()
        };
        let line = big.line().expect("a line");
        assert!(line.contains("every check on 2 representative nodes of 4"), "{line}");
        assert!(
            line.contains("on 1;") && line.contains("promoted") && line.contains(": d"),
            "{line}"
        );
        let full = Coverage {
            mode: Mode::Full,
            ..small
        };
        assert_eq!(
            full.line().as_deref(),
            Some("full — every check on all 2 nodes (--coverage full)")
        );
    }

    /// Every human format says how the run covered its nodes when it sampled: the terminal and
    /// Markdown in a line (Markdown with a table by level and fact set), HTML in the node table.
    #[rstest::rstest]
    #[case::one_promoted(Level::Promoted, "promoted")]
    #[case::all_light(Level::Light, "light")]
    fn the_formats_say_which_nodes_got_which_checks(#[case] second: Level, #[case] shown: &str) {
        let mut report = crate::testdata::sample_report();
        report.coverage = Some(Coverage {
            mode: Mode::Sampled,
            light_checks: vec!["pod-ip-cross-node".into(), "service-fqdn".into()],
            nodes: vec![node("win2022-1", Level::Full), node("linux-1", second)],
        });
        let terminal = crate::terminal::render(&report, false, crate::terminal::Detail::Summary);
        assert!(
            terminal.contains("coverage: sampled — every check on 1 representative node of 2"),
            "{terminal}"
        );
        let md = crate::markdown::render(&report);
        assert!(md.contains("### Coverage"), "{md}");
        assert!(md.contains(&format!("| {shown} | windows-20348 |")), "{md}");
        let html = crate::html::render(&report);
        assert!(html.contains("<th>coverage</th>"), "no coverage column");
        assert!(
            html.contains(&format!("<td>{shown}</td>")),
            "linux-1's level in the node table"
        );
        report.coverage = None;
        assert!(!crate::terminal::render(&report, false, crate::terminal::Detail::Summary).contains("coverage:"));
        assert!(!crate::html::render(&report).contains("<th>coverage</th>"));
    }
}
