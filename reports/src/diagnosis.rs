//! The diagnosis of a run ([`Diagnosis`]): the likely causes of its failing cells, ranked, each
//! localised to nodes with the cells it explains, its evidence, the documented remedy and the
//! commands that confirm it; the failing cells no cause explains; and the evidence gathered per
//! node, kept so that `mixcheck diagnose --from` can rerun the inference offline.

use serde::{Deserialize, Serialize};

use crate::cell::CellId;
use crate::evidence::Excerpt;

/// One likely cause of failing cells, as the runner's cause catalogue names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// The catalogue id (`mac-spoofing-disabled`).
    pub id: String,
    /// One line: what is wrong.
    pub title: String,
    /// The rule of windows-rules.md the cause breaks, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<String>,
    /// How well the cause explains what was observed, 0–100: the share of the cells it predicts
    /// to fail that did fail (and of those it predicts to work that did work), raised by
    /// confirming node diagnostics and lowered by refuting ones.
    pub confidence: u8,
    /// The nodes it is localised to.
    pub nodes: Vec<String>,
    /// The failing cells it explains (each failing cell is explained by at most one cause).
    pub explains: Vec<CellId>,
    /// Cells it predicts to fail that worked, or predicts to work that failed: what speaks
    /// against it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contradicted_by: Vec<CellId>,
    /// What points at it: the matching lines of the cells' observations and of the gathered
    /// evidence, each prefixed with where it was found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// The documented fix.
    pub remedy: String,
    /// Commands that confirm the cause on the node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirm: Vec<String>,
    /// Source ids (windows-rules.md §0.2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

/// One piece of evidence gathered about a node after the probes, through the Kubernetes API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceItem {
    /// Where it was read: `condition Ready`, `event NS/POD`, `log kube-system/POD`,
    /// `node-log kubelet.log`, `status NS/POD`, `diagnostics Get-HnsNetwork`.
    pub source: String,
    /// What it says (cleaned, bounded).
    pub text: Excerpt,
}

/// The evidence gathered about one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeEvidence {
    /// The node's name.
    pub node: String,
    /// What was read, in the order it was read.
    pub items: Vec<EvidenceItem>,
}

/// The diagnosis of a run: empty when no cell failed or errored (documented limitations are
/// never causes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The likely causes, most likely first.
    #[serde(default)]
    pub causes: Vec<Cause>,
    /// Failing cells no cause explains.
    #[serde(default)]
    pub unexplained: Vec<CellId>,
    /// Whether confirmation commands ran on the implicated nodes (`--node-diagnostics`).
    #[serde(default)]
    pub node_diagnostics: bool,
    /// The evidence gathered per implicated node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<NodeEvidence>,
}

impl Diagnosis {
    /// Whether it names no cause and leaves no failing cell unexplained.
    pub fn is_empty(&self) -> bool {
        self.causes.is_empty() && self.unexplained.is_empty()
    }

    /// The evidence gathered about `node`, if any.
    pub fn evidence_of(&self, node: &str) -> &[EvidenceItem] {
        self.evidence
            .iter()
            .find(|e| e.node == node)
            .map_or(&[], |e| e.items.as_slice())
    }

    /// Lines for a human report: per cause its rank, confidence, nodes, the number of cells it
    /// explains, the remedy and how to confirm it; then the unexplained cells.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (rank, c) in self.causes.iter().enumerate() {
            out.push(format!(
                "{}. {} [{}] on {} — confidence {}%, explains {} failing cell{}",
                rank + 1,
                c.title,
                c.id,
                if c.nodes.is_empty() {
                    "the cluster".to_string()
                } else {
                    c.nodes.join(", ")
                },
                c.confidence,
                c.explains.len(),
                if c.explains.len() == 1 { "" } else { "s" }
            ));
        }
        if !self.unexplained.is_empty() {
            out.push(format!(
                "{} failing cell{} no known cause explains",
                self.unexplained.len(),
                if self.unexplained.len() == 1 { "" } else { "s" }
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause(id: &str, cells: usize) -> Cause {
        Cause {
            id: id.into(),
            title: format!("{id} title"),
            rule_id: Some("NET-MAC-SPOOFING".into()),
            confidence: 90,
            nodes: vec!["win2022-1".into()],
            explains: (0..cells)
                .map(|i| {
                    CellId::new(
                        "net",
                        "NET-X",
                        &crate::Coordinates {
                            variant: Some(format!("v{i}")),
                            ..Default::default()
                        },
                    )
                })
                .collect::<Result<_, _>>()
                .expect("ids"),
            contradicted_by: Vec::new(),
            evidence: Vec::new(),
            remedy: "fix it".into(),
            confirm: Vec::new(),
            sources: Vec::new(),
        }
    }

    #[test]
    fn lines_rank_causes_and_count_unexplained() {
        let d = Diagnosis {
            causes: vec![cause("mac-spoofing-disabled", 3), cause("dns-unreachable", 1)],
            unexplained: cause("x", 2).explains,
            ..Default::default()
        };
        let lines = d.lines();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("1. mac-spoofing-disabled title [mac-spoofing-disabled] on win2022-1"));
        assert!(lines[0].ends_with("explains 3 failing cells"), "{}", lines[0]);
        assert!(lines[1].ends_with("explains 1 failing cell"), "{}", lines[1]);
        assert_eq!(lines[2], "2 failing cells no known cause explains");
        assert!(!d.is_empty());
        assert!(Diagnosis::default().is_empty());
    }

    #[test]
    fn evidence_is_found_by_node() {
        let d = Diagnosis {
            evidence: vec![NodeEvidence {
                node: "win2022-1".into(),
                items: vec![EvidenceItem {
                    source: "condition Ready".into(),
                    text: Excerpt::new("Unknown"),
                }],
            }],
            ..Default::default()
        };
        assert_eq!(d.evidence_of("win2022-1").len(), 1);
        assert!(d.evidence_of("linux-1").is_empty());
    }
}
