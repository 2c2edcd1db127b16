//! Support boundaries: a node outside one — a Windows build its Kubernetes version does not
//! support (VER-OS-SUPPORTED), a kubelet or kube-proxy beyond the version-skew policy
//! (VER-KUBELET-SKEW, VER-KUBEPROXY-SKEW), a container runtime below its documented minimum
//! (VER-RUNTIME) — fails the gate on that boundary's cell, which names the node. Its other
//! failing cells become `indeterminate`: the documentation promises nothing outside its support
//! boundaries (a Windows Server 2016 node on 1.32 has no supported runtime at all), so a failure
//! there says nothing about the documented rule. Their observations stay as they were.

use std::collections::BTreeMap;

use mixcheck_reports::{Cell, Verdict};

/// The rules whose failing cells mark their nodes as outside a support boundary.
pub const BOUNDARY_RULES: &[&str] = &[
    "VER-OS-SUPPORTED",
    "VER-KUBELET-SKEW",
    "VER-KUBEPROXY-SKEW",
    "VER-RUNTIME",
];

fn failing(v: Verdict) -> bool {
    matches!(v, Verdict::Fail | Verdict::Error)
}

/// The nodes a cell was observed on: the nodes of the pair it took its result from, else all
/// its nodes (a node-scoped cell lists exactly the nodes that break it).
fn observed_on(cell: &Cell) -> impl Iterator<Item = &str> {
    let refs = if cell.observed.on.is_empty() {
        &cell.nodes
    } else {
        &cell.observed.on
    };
    refs.iter().map(|r| r.name.as_str())
}

/// Turns the failing cells of nodes outside a support boundary (other than the boundary cells
/// themselves) into `indeterminate`, saying which boundary. Returns how many it turned.
pub fn apply(cells: &mut [Cell]) -> usize {
    let mut outside: BTreeMap<String, String> = BTreeMap::new();
    for c in cells
        .iter()
        .filter(|c| failing(c.verdict) && BOUNDARY_RULES.contains(&c.rule_id.as_str()))
    {
        for node in observed_on(c) {
            outside.entry(node.to_string()).or_insert_with(|| {
                format!(
                    "{} ({})",
                    c.rule_id,
                    c.observed.summary.lines().next().unwrap_or("").trim()
                )
            });
        }
    }
    let mut turned = 0;
    for c in cells
        .iter_mut()
        .filter(|c| failing(c.verdict) && !BOUNDARY_RULES.contains(&c.rule_id.as_str()))
    {
        let Some((node, why)) = observed_on(c).find_map(|n| outside.get(n).map(|w| (n.to_string(), w.clone()))) else {
            continue;
        };
        c.verdict = Verdict::Indeterminate;
        c.reason = Some(format!(
            "not judged against the documentation: {node} is outside a support boundary — {why}; the documentation promises nothing there"
        ));
        c.remedy = None;
        turned += 1;
    }
    turned
}

#[cfg(test)]
mod tests {
    use mixcheck_reports::{CellId, Coordinates, Expectation, Expected, NodeRef, NodeRole, Observed, Os};
    use rstest::rstest;

    use super::*;

    fn cell(rule: &str, verdict: Verdict, nodes: &[&str]) -> Cell {
        let coordinates = Coordinates {
            variant: Some(format!("{rule}-{}", nodes.join("-"))),
            ..Coordinates::default()
        };
        Cell {
            id: CellId::new("s", rule, &coordinates).expect("id"),
            suite: "s".into(),
            check: rule.to_ascii_lowercase(),
            rule_id: rule.into(),
            title: String::new(),
            category: "ver".into(),
            verdict,
            expected: Expectation {
                kind: Expected::Works,
                text: String::new(),
            },
            coordinates,
            nodes: nodes
                .iter()
                .map(|n| NodeRef {
                    name: (*n).into(),
                    os: Os::Windows,
                    build: Some(14393),
                    role: NodeRole::Subject,
                })
                .collect(),
            observed: Observed {
                summary: format!("{} of 2 nodes", nodes.len()),
                ..Observed::default()
            },
            remedy: Some("fix it".into()),
            sources: Vec::new(),
            reproduce: None,
            reason: None,
            flaky: false,
            duration_ms: 0,
        }
    }

    /// Only failing cells of an unsupported node turn; the boundary cells, passing cells and
    /// cells of supported nodes keep their verdicts.
    #[rstest]
    #[case::os("VER-OS-SUPPORTED")]
    #[case::skew("VER-KUBELET-SKEW")]
    #[case::runtime("VER-RUNTIME")]
    fn failures_outside_a_boundary_are_indeterminate(#[case] boundary: &str) {
        let mut cells = vec![
            cell(boundary, Verdict::Fail, &["win2016-1"]),
            cell("NET-POD-POD-IP-SAME", Verdict::Fail, &["win2016-1"]),
            cell("DNS-FQDN", Verdict::Error, &["win2016-1", "linux-1"]),
            cell("NET-POD-POD-IP-CROSS", Verdict::Fail, &["win2022-1"]),
            cell("VER-BUILD-MATCH", Verdict::Pass, &["win2016-1"]),
        ];
        assert_eq!(apply(&mut cells), 2);
        let verdicts: Vec<Verdict> = cells.iter().map(|c| c.verdict).collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Fail,
                Verdict::Indeterminate,
                Verdict::Indeterminate,
                Verdict::Fail,
                Verdict::Pass
            ]
        );
        let reason = cells[1].reason.as_deref().unwrap_or_default();
        assert!(reason.contains("win2016-1 is outside a support boundary"), "{reason}");
        assert!(reason.contains(boundary), "{reason}");
        assert!(cells[1].remedy.is_none());
    }

    #[test]
    fn without_a_failing_boundary_nothing_turns() {
        let mut cells = vec![
            cell("VER-OS-SUPPORTED", Verdict::Pass, &["win2022-1"]),
            cell("NET-POD-POD-IP-SAME", Verdict::Fail, &["win2022-1"]),
        ];
        assert_eq!(apply(&mut cells), 0);
        assert_eq!(cells[1].verdict, Verdict::Fail);
    }
}
