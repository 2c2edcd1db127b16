//! The diagnosis of a run ([`Diagnosis`]): the likely causes of its failing cells, ranked, each
//! localised to nodes with the cells it explains, its evidence, the documented remedy and the
//! commands that confirm it; the failing cells no cause explains; and the evidence gathered per
//! node, kept so that `mixcheck diagnose --from` can rerun the inference offline.
//!
//! The renderers word it alike through [`Cause::headline`], [`Cause::likely_cause_line`] (the
//! line a JUnit failure gets), [`Diagnosis::unexplained_line`] and [`Diagnosis::cause_of`] (the
//! cause of a failing cell, with its rank).

use serde::{Deserialize, Serialize};

use crate::cell::CellId;
use crate::evidence::Excerpt;
use crate::evidence::one_line;

/// One likely cause of failing cells, as the runner's cause catalogue names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// The catalogue id (`mac-spoofing-disabled`).
    pub id: String,
    /// One line: what is wrong.
    pub title: String,
    /// The rule (an id of `suites/rules.yaml`) the cause breaks, where there is one.
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
    /// Source ids (`docs/sources.md`).
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

    /// The cause that explains the failing cell `id`, with its rank (1 for the most likely).
    pub fn cause_of(&self, id: &CellId) -> Option<(usize, &Cause)> {
        self.causes
            .iter()
            .enumerate()
            .find(|(_, c)| c.explains.contains(id))
            .map(|(i, c)| (i + 1, c))
    }

    /// Lines for a human report: per cause its rank, title, id, nodes, confidence and the
    /// number of cells it explains ([`Cause::headline`]); then how many failing cells no cause
    /// explains ([`Diagnosis::unexplained_line`]).
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .causes
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{}. {}", i + 1, c.headline()))
            .collect();
        out.extend(self.unexplained_line());
        out
    }

    /// `2 failing cells no known cause explains`; None when every failing cell is explained.
    pub fn unexplained_line(&self) -> Option<String> {
        (!self.unexplained.is_empty())
            .then(|| format!("{} no known cause explains", failing_cells(self.unexplained.len())))
    }

    /// Whether the confirm commands ran, for a note under the causes; None when no cause has
    /// a confirm command.
    pub fn confirm_note(&self) -> Option<&'static str> {
        if self.node_diagnostics {
            Some("the confirm commands ran on the implicated nodes; their output is part of the evidence")
        } else if self.causes.iter().any(|c| !c.confirm.is_empty()) {
            Some("the confirm commands did not run; --node-diagnostics runs them on the implicated nodes")
        } else {
            None
        }
    }
}

impl Cause {
    /// Where the cause is: its nodes, comma-separated, or `the cluster` when it names none.
    pub fn location(&self) -> String {
        if self.nodes.is_empty() {
            "the cluster".to_string()
        } else {
            self.nodes.join(", ")
        }
    }

    /// `TITLE [id] on NODES — confidence N%, explains K failing cells` (one line).
    pub fn headline(&self) -> String {
        format!(
            "{} [{}] on {} — confidence {}%, explains {}",
            self.title,
            self.id,
            self.location(),
            self.confidence,
            failing_cells(self.explains.len())
        )
    }

    /// `1 cell speaks against it`, `3 cells speak against it`; None when none does.
    pub fn contradiction(&self) -> Option<String> {
        match self.contradicted_by.len() {
            0 => None,
            1 => Some("1 cell speaks against it".to_string()),
            n => Some(format!("{n} cells speak against it")),
        }
    }

    /// The line a failing cell's JUnit description gets:
    /// `Likely cause: TITLE [id] on NODES (confidence N%): REMEDY`.
    pub fn likely_cause_line(&self) -> String {
        format!(
            "Likely cause: {} [{}] on {} (confidence {}%): {}",
            one_line(&self.title),
            self.id,
            self.location(),
            self.confidence,
            one_line(&self.remedy)
        )
    }
}

/// `1 failing cell`, `3 failing cells`.
pub(crate) fn failing_cells(n: usize) -> String {
    format!("{n} failing cell{}", if n == 1 { "" } else { "s" })
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
    fn a_cell_is_found_with_the_rank_of_its_cause() {
        let d = Diagnosis {
            causes: vec![cause("a", 1), cause("b", 3)],
            ..Default::default()
        };
        let explained = d.causes[1].explains[2].clone();
        let (rank, c) = d.cause_of(&explained).expect("explained");
        // "a" explains v0 only; v2 is explained by "b", the second cause.
        assert_eq!((rank, c.id.as_str()), (2, "b"));
        let unknown = CellId::new("net", "NET-Y", &crate::Coordinates::default()).expect("id");
        assert!(d.cause_of(&unknown).is_none());
    }

    #[test]
    fn the_likely_cause_line_is_one_line() {
        let mut c = cause("mac-spoofing-disabled", 2);
        c.title = "MAC address spoofing is off".into();
        c.remedy = "Allow it:\n  Set-VMNetworkAdapter -MacAddressSpoofing On\n".into();
        c.confidence = 85;
        c.nodes.push("win2022-2".into());
        assert_eq!(
            c.likely_cause_line(),
            "Likely cause: MAC address spoofing is off [mac-spoofing-disabled] on win2022-1, win2022-2 (confidence 85%): Allow it: Set-VMNetworkAdapter -MacAddressSpoofing On"
        );
        c.nodes.clear();
        assert!(
            c.headline()
                .contains(" on the cluster — confidence 85%, explains 2 failing cells")
        );
    }

    #[test]
    fn the_confirm_note_says_whether_the_commands_ran() {
        let mut d = Diagnosis {
            causes: vec![cause("a", 1)],
            ..Default::default()
        };
        assert_eq!(d.confirm_note(), None, "nothing to confirm with");
        d.causes[0].confirm.push("Get-NetAdapter".into());
        assert!(d.confirm_note().is_some_and(|n| n.contains("did not run")));
        d.node_diagnostics = true;
        assert!(
            d.confirm_note()
                .is_some_and(|n| n.contains(" ran on the implicated nodes"))
        );
        assert_eq!(Diagnosis::default().unexplained_line(), None);
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
