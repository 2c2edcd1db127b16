//! One judged point of the check matrix ([`Cell`]) and its stable identity ([`CellId`]), built
//! from the suite, the rule and the matrix coordinates ([`Coordinates`], [`Pool`]) — never from
//! node names, so a baseline survives node replacement.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{
    evidence::Evidence,
    facts::Os,
    verdict::{Expected, Verdict},
};

/// A node pool as the matrix sees it: the OS and, on Windows, the build — `linux`,
/// `windows-20348` — or a named endpoint outside the node pools (`external`).
///
/// Nodes of one pool are interchangeable for a check, which is what makes a [`CellId`] stable
/// when a node is replaced by another of the same OS and build.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Pool(String);

impl Pool {
    /// The pool of nodes with this OS and Windows build: `linux`, `windows-20348`, or `windows`
    /// when the build is unknown. A Linux node's build is ignored.
    pub fn of(os: Os, windows_build: Option<u32>) -> Self {
        match (os, windows_build) {
            (Os::Linux, _) => Pool("linux".into()),
            (Os::Windows, Some(build)) => Pool(format!("windows-{build}")),
            (Os::Windows, None) => Pool("windows".into()),
        }
    }

    /// The pool of a node.
    pub fn of_node(node: &NodeRef) -> Self {
        Pool::of(node.os, node.build)
    }

    /// A named endpoint that is not a node pool (`external`, `api-server`); checked by
    /// [`CellId::new`] like any other part.
    pub fn named(name: impl Into<String>) -> Self {
        Pool(name.into())
    }

    /// The pool's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether the two ends of a flow ran on the same node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Locality {
    /// `same-node`
    SameNode,
    /// `other-node`
    OtherNode,
}

impl Locality {
    /// The serialised name (`same-node`).
    pub fn as_str(self) -> &'static str {
        match self {
            Locality::SameNode => "same-node",
            Locality::OtherNode => "other-node",
        }
    }
}

/// Where a cell sits in its check's matrix. Every part is optional: a version check has none, a
/// flow has a source and a destination, a per-pool check only a source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Coordinates {
    /// The pool the flow starts from, or the pool a per-pool check is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Pool>,
    /// The pool the flow goes to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<Pool>,
    /// Same node or another node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locality: Option<Locality>,
    /// `tcp`, `udp`, `icmp`, `http`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The check's own variant (`pod-ip`, `cluster-ip`, `dns-name`, `nodeport-remote`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// A part of a [`CellId`] that cannot be written into one unambiguously.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cell id part {part} {value:?} {problem}")]
pub struct CellIdError {
    /// Which part (`suite`, `rule id`, `source`, `destination`, `protocol`, `variant`).
    pub part: &'static str,
    /// Its value.
    pub value: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

/// The stable identity of a cell: `suite/RULE-ID[source→destination,locality,protocol,variant]`,
/// e.g. `net/NET-POD-POD-IP-CROSS[windows-20348→linux,other-node,tcp,pod-ip]`.
///
/// Absent coordinates are left out (`versions/VER-KUBELET-SKEW` has no brackets). A flow is
/// always written with its arrow — `linux→` with a source only, `→linux` with a destination
/// only — so a pool never reads as a protocol or variant. Node names are not a part: a baseline
/// `results.json` keeps matching after nodes are replaced. Two cells of a run must not share an
/// id; a check that needs more than one cell per coordinate distinguishes them by variant.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CellId(String);

impl CellId {
    /// The id of a cell of `suite` checking `rule_id` at `coordinates`.
    ///
    /// # Errors
    ///
    /// When a part is empty or contains whitespace, a control character or one of the
    /// separators `/ [ ] , →` (the suite and rule id must not contain them either).
    pub fn new(suite: &str, rule_id: &str, coordinates: &Coordinates) -> Result<CellId, CellIdError> {
        check_part("suite", suite)?;
        check_part("rule id", rule_id)?;
        let mut parts = Vec::new();
        let Coordinates {
            source,
            destination,
            locality,
            protocol,
            variant,
        } = coordinates;
        if source.is_some() || destination.is_some() {
            let src = source.as_ref().map(Pool::as_str).unwrap_or_default();
            let dst = destination.as_ref().map(Pool::as_str).unwrap_or_default();
            if source.is_some() {
                check_part("source", src)?;
            }
            if destination.is_some() {
                check_part("destination", dst)?;
            }
            parts.push(format!("{src}→{dst}"));
        }
        if let Some(locality) = locality {
            parts.push(locality.as_str().to_owned());
        }
        if let Some(protocol) = protocol {
            check_part("protocol", protocol)?;
            parts.push(protocol.clone());
        }
        if let Some(variant) = variant {
            check_part("variant", variant)?;
            parts.push(variant.clone());
        }
        let mut id = format!("{suite}/{rule_id}");
        if !parts.is_empty() {
            id.push('[');
            id.push_str(&parts.join(","));
            id.push(']');
        }
        Ok(CellId(id))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CellId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn check_part(part: &'static str, value: &str) -> Result<(), CellIdError> {
    let problem = if value.is_empty() {
        Some("is empty")
    } else if value.chars().any(|c| matches!(c, '/' | '[' | ']' | ',' | '→')) {
        Some("contains one of the id separators / [ ] , →")
    } else if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("contains whitespace or a control character")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(CellIdError {
            part,
            value: value.to_owned(),
            problem,
        }),
        None => Ok(()),
    }
}

/// The part a node played in a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeRole {
    /// Where the flow started.
    Source,
    /// Where the flow went.
    Destination,
    /// The node a per-node check is about.
    Subject,
}

/// A node involved in a cell, as verified after deploying (where the fixture really landed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRef {
    /// The node's name.
    pub name: String,
    /// Its OS.
    pub os: Os,
    /// Its Windows build (20348); absent on Linux.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<u32>,
    /// What it was in the cell.
    pub role: NodeRole,
}

/// The documented expectation of a cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expectation {
    /// Its kind, which [`crate::verdict::decide`] judges the outcome against.
    pub kind: Expected,
    /// One line: what the documentation says for these facts ("ICMP to external addresses gets
    /// no reply on win-overlay; TCP works").
    pub text: String,
}

/// What the probe saw.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    /// One line, written by the harness ("ping: no reply; TCP 443: connected").
    pub summary: String,
    /// The command, output and events behind it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    /// The nodes of the pair whose result the cell took (the worst of its pairs), with their
    /// roles: where the observation was made, when the cell spans a pool of several nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on: Vec<NodeRef>,
}

/// One judged point of the matrix: a rule, at some coordinates, on some nodes — one JUnit test
/// case, one row of the human reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// Stable identity, from [`CellId::new`] over `suite`, `rule_id` and `coordinates`.
    pub id: CellId,
    /// The suite (`net`).
    pub suite: String,
    /// The check's name in the suite (`pod-to-pod-ip`).
    pub check: String,
    /// The documented rule (`NET-POD-POD-IP-CROSS`).
    pub rule_id: String,
    /// The check's title.
    pub title: String,
    /// The rule's category (`net`, `dns`, `mem`, …).
    pub category: String,
    /// The judgement.
    pub verdict: Verdict,
    /// What the documentation expects here.
    pub expected: Expectation,
    /// Where in the matrix.
    #[serde(default)]
    pub coordinates: Coordinates,
    /// The nodes involved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeRef>,
    /// What was observed.
    pub observed: Observed,
    /// The documented fix, for verdicts a user acts on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
    /// Source ids of the documentation (`W14`, `WDBG`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// A command line that reproduces the probe (`kubectl exec …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<String>,
    /// Why the cell was not judged: the not-applicable reason, the missing fact (indeterminate),
    /// or the harness error — [`crate::verdict::Outcome::reason`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Passed only after a transport-level retry.
    #[serde(default)]
    pub flaky: bool,
    /// How long the cell's probe took.
    #[serde(default)]
    pub duration_ms: u64,
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn flow(src: Pool, dst: Pool) -> Coordinates {
        Coordinates {
            source: Some(src),
            destination: Some(dst),
            locality: Some(Locality::OtherNode),
            protocol: Some("tcp".into()),
            variant: Some("pod-ip".into()),
        }
    }

    fn node(name: &str, os: Os, build: Option<u32>, role: NodeRole) -> NodeRef {
        NodeRef {
            name: name.into(),
            os,
            build,
            role,
        }
    }

    fn id(suite: &str, rule: &str, c: &Coordinates) -> String {
        CellId::new(suite, rule, c).expect("valid parts").to_string()
    }

    #[test]
    fn id_format() {
        let c = flow(Pool::of(Os::Windows, Some(20348)), Pool::of(Os::Linux, None));
        assert_eq!(
            id("net", "NET-POD-POD-IP-CROSS", &c),
            "net/NET-POD-POD-IP-CROSS[windows-20348→linux,other-node,tcp,pod-ip]"
        );
    }

    #[rstest]
    #[case::none(Coordinates::default(), "versions/VER-X")]
    #[case::source_only(Coordinates { source: Some(Pool::of(Os::Windows, Some(17763))), ..Default::default() }, "versions/VER-X[windows-17763→]")]
    #[case::destination_only(Coordinates { destination: Some(Pool::named("external")), ..Default::default() }, "versions/VER-X[→external]")]
    #[case::variant_only(Coordinates { variant: Some("linux".into()), ..Default::default() }, "versions/VER-X[linux]")]
    #[case::locality_and_protocol(Coordinates { locality: Some(Locality::SameNode), protocol: Some("udp".into()), ..Default::default() }, "versions/VER-X[same-node,udp]")]
    fn absent_coordinates_are_left_out(#[case] c: Coordinates, #[case] expected: &str) {
        assert_eq!(id("versions", "VER-X", &c), expected);
    }

    #[test]
    fn same_parts_same_id_whatever_the_nodes() {
        // A run on win2022-1 → linux-1, and a later one after both nodes were replaced.
        let before = [
            node("win2022-1", Os::Windows, Some(20348), NodeRole::Source),
            node("linux-1", Os::Linux, None, NodeRole::Destination),
        ];
        let after = [
            node("akswin000007", Os::Windows, Some(20348), NodeRole::Source),
            node("aks-linux-vmss-3", Os::Linux, None, NodeRole::Destination),
        ];
        let coords = |nodes: &[NodeRef; 2]| flow(Pool::of_node(&nodes[0]), Pool::of_node(&nodes[1]));
        let a = id("net", "NET-POD-POD-IP-CROSS", &coords(&before));
        let b = id("net", "NET-POD-POD-IP-CROSS", &coords(&after));
        assert_eq!(a, b);
        for n in before.iter().chain(&after) {
            assert!(!a.contains(&n.name), "{a} names node {}", n.name);
        }
    }

    #[test]
    fn every_part_distinguishes() {
        let base = flow(Pool::of(Os::Windows, Some(20348)), Pool::of(Os::Linux, None));
        let variants = [
            Coordinates {
                source: Some(Pool::of(Os::Windows, Some(17763))),
                ..base.clone()
            },
            Coordinates {
                destination: Some(Pool::of(Os::Windows, Some(20348))),
                ..base.clone()
            },
            Coordinates {
                source: base.destination.clone(),
                destination: base.source.clone(),
                ..base.clone()
            },
            Coordinates {
                locality: Some(Locality::SameNode),
                ..base.clone()
            },
            Coordinates {
                locality: None,
                ..base.clone()
            },
            Coordinates {
                protocol: Some("udp".into()),
                ..base.clone()
            },
            Coordinates {
                variant: Some("cluster-ip".into()),
                ..base.clone()
            },
        ];
        let mut ids: Vec<String> = variants.iter().map(|c| id("net", "NET-X", c)).collect();
        ids.push(id("net", "NET-X", &base));
        ids.push(id("net", "NET-Y", &base));
        ids.push(id("dns", "NET-X", &base));
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "{ids:#?}");
    }

    #[rstest]
    #[case::empty_suite("", "NET-X", Coordinates::default(), "suite")]
    #[case::slash_in_rule("net", "NET/X", Coordinates::default(), "rule id")]
    #[case::space_in_variant("net", "NET-X", Coordinates { variant: Some("pod ip".into()), ..Default::default() }, "variant")]
    #[case::comma_in_protocol("net", "NET-X", Coordinates { protocol: Some("tcp,udp".into()), ..Default::default() }, "protocol")]
    #[case::arrow_in_pool("net", "NET-X", Coordinates { source: Some(Pool::named("a→b")), ..Default::default() }, "source")]
    #[case::bracket_in_pool("net", "NET-X", Coordinates { destination: Some(Pool::named("x]")), ..Default::default() }, "destination")]
    #[case::empty_variant("net", "NET-X", Coordinates { variant: Some(String::new()), ..Default::default() }, "variant")]
    fn bad_parts_are_refused(#[case] suite: &str, #[case] rule: &str, #[case] c: Coordinates, #[case] part: &str) {
        let err = CellId::new(suite, rule, &c).expect_err("refused");
        assert_eq!(err.part, part);
    }

    #[rstest]
    #[case(Os::Linux, None, "linux")]
    #[case(Os::Linux, Some(20348), "linux")]
    #[case(Os::Windows, Some(17763), "windows-17763")]
    #[case(Os::Windows, None, "windows")]
    fn pool_names(#[case] os: Os, #[case] build: Option<u32>, #[case] name: &str) {
        assert_eq!(Pool::of(os, build).as_str(), name);
    }
}
