//! Which nodes get the full check matrix and which a light per-node coverage (`--coverage`).
//! Within a pool, nodes with the same facts — kernel build and revision, container runtime,
//! kubelet version, instance type — are interchangeable for every documented rule, so the full
//! matrix runs on a few representatives of each such fact set; every other node gets the
//! checks marked `everyNode` in the suites (its pods reach a pod on another node, a ClusterIP
//! and a name; its NodePort answers), and is promoted to the full matrix when one of them
//! fails, so a broken node is still localised and diagnosed.

use std::collections::{BTreeMap, BTreeSet};

use mixcheck_reports::coverage::{Coverage, Level, Mode, NodeCoverage};

use crate::cluster::facts::{ClusterFacts, ClusterNode};

/// Nodes of each fact set that get the full matrix: two, so that a same-pool flow to another
/// node of the same facts has both ends checked.
pub const REPRESENTATIVES: usize = 2;

/// Which probed nodes get what, by index into the facts' nodes.
#[derive(Debug, Clone, Default)]
pub struct NodeSets {
    pub mode: Mode,
    /// Every selected check: the representatives (every probed node with `--coverage full`),
    /// the nodes that are not Ready (their cells say so without probing) and the promoted ones.
    pub full: BTreeSet<usize>,
    /// The light per-node checks only.
    pub light: BTreeSet<usize>,
    /// Light nodes moved to `full` after a light check failed.
    pub promoted: BTreeSet<usize>,
    /// Each probed node's fact set, for the report.
    fact_sets: BTreeMap<usize, String>,
}

/// What makes nodes of one pool interchangeable, shown in the report.
fn fact_set(n: &ClusterNode) -> String {
    let mut parts = vec![if n.kernel.is_empty() {
        "kernel ?".to_string()
    } else {
        n.kernel.clone()
    }];
    parts.push(match &n.runtime {
        Some((name, (major, minor))) => format!("{name} {major}.{minor}"),
        None => "runtime ?".into(),
    });
    parts.push(match n.kubelet {
        Some((major, minor)) => format!("kubelet {major}.{minor}"),
        None => "kubelet ?".into(),
    });
    if let Some(t) = n.labels.get("node.kubernetes.io/instance-type") {
        parts.push(t.clone());
    }
    parts.join(" · ")
}

impl NodeSets {
    /// Splits the probed nodes of `facts` by `mode`.
    pub fn choose(facts: &ClusterFacts, mode: Mode) -> Self {
        let mut sets = NodeSets {
            mode,
            ..NodeSets::default()
        };
        let mut groups: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
        for (i, n) in facts.nodes.iter().enumerate().filter(|(_, n)| n.probed()) {
            let set = fact_set(n);
            sets.fact_sets.insert(i, set.clone());
            if mode == Mode::Full || !n.ready {
                sets.full.insert(i);
            } else {
                groups.entry((n.pool(), set)).or_default().push(i);
            }
        }
        for members in groups.values() {
            // Schedulable nodes first (a cordoned one cannot hold the fixtures).
            let mut ordered: Vec<usize> = members.clone();
            ordered.sort_by_key(|&i| (!facts.nodes[i].schedulable(), i));
            for (k, i) in ordered.into_iter().enumerate() {
                if k < REPRESENTATIVES {
                    sets.full.insert(i);
                } else {
                    sets.light.insert(i);
                }
            }
        }
        sets
    }

    /// Moves `nodes` from light to full.
    pub fn promote(&mut self, nodes: &BTreeSet<usize>) {
        for i in nodes {
            if self.light.remove(i) {
                self.full.insert(*i);
                self.promoted.insert(*i);
            }
        }
    }

    /// The node's fact set.
    pub fn fact_set_of(&self, i: usize) -> Option<&str> {
        self.fact_sets.get(&i).map(String::as_str)
    }

    /// The report's account, naming the light checks.
    pub fn report(&self, facts: &ClusterFacts, light_checks: Vec<String>) -> Coverage {
        let nodes = self
            .fact_sets
            .iter()
            .filter_map(|(&i, set)| {
                let n = facts.nodes.get(i)?;
                let level = if self.promoted.contains(&i) {
                    Level::Promoted
                } else if self.light.contains(&i) {
                    Level::Light
                } else {
                    Level::Full
                };
                Some(NodeCoverage {
                    node: n.name.clone(),
                    pool: n.pool(),
                    level,
                    fact_set: set.clone(),
                })
            })
            .collect();
        Coverage {
            mode: self.mode,
            light_checks,
            nodes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixcheck_reports::Os;
    use rstest::rstest;

    fn facts(nodes: Vec<ClusterNode>) -> ClusterFacts {
        ClusterFacts::of_nodes(nodes)
    }

    fn windows(name: &str, kernel: &str) -> ClusterNode {
        ClusterNode {
            kernel: kernel.into(),
            ..ClusterNode::sample(name, Os::Windows, "10.0.0.9")
        }
    }

    /// Pools of `n` nodes each, one fact set per pool, except that the last node of the
    /// Windows pool runs another kernel revision (a node patched later).
    fn cluster(n: usize) -> ClusterFacts {
        let mut nodes = Vec::new();
        for k in 0..n {
            nodes.push(ClusterNode::sample(&format!("linux-{k}"), Os::Linux, "10.0.1.1"));
        }
        for k in 0..n {
            let kernel = if k + 1 == n && n > 3 {
                "10.0.20348.3000"
            } else {
                "10.0.20348.2762"
            };
            nodes.push(windows(&format!("win-{k}"), kernel));
        }
        facts(nodes)
    }

    #[rstest]
    #[case::tiny(1, 2, 0)]
    #[case::exactly_two(2, 4, 0)]
    #[case::ten_per_pool(10, 2 + 2 + 1, 20 - 5)]
    #[case::hundred_per_pool(100, 5, 200 - 5)]
    fn each_fact_set_of_each_pool_gets_its_representatives(
        #[case] per_pool: usize,
        #[case] full: usize,
        #[case] light: usize,
    ) {
        let facts = cluster(per_pool);
        let sets = NodeSets::choose(&facts, Mode::Sampled);
        assert_eq!((sets.full.len(), sets.light.len()), (full, light));
        // The node with its own kernel revision is a fact set of its own: always full.
        if per_pool > 3 {
            let odd = facts.nodes.iter().position(|n| n.kernel == "10.0.20348.3000");
            assert!(odd.is_some_and(|i| sets.full.contains(&i)));
        }
        let everyone = NodeSets::choose(&facts, Mode::Full);
        assert_eq!((everyone.full.len(), everyone.light.len()), (2 * per_pool, 0));
    }

    #[test]
    fn a_node_that_is_not_ready_is_checked_whole_beside_two_representatives() {
        let mut facts = cluster(6);
        // The first Windows node would be a representative.
        facts.nodes[6].ready = false;
        let sets = NodeSets::choose(&facts, Mode::Sampled);
        let windows_full: Vec<usize> = sets.full.iter().copied().filter(|&i| i >= 6).collect();
        // Not Ready, two representatives of the common kernel, the node of the other kernel.
        assert_eq!(windows_full, vec![6, 7, 8, 11]);
    }

    #[test]
    fn promotion_moves_light_nodes_only_and_the_report_says_so() {
        let facts = cluster(10);
        let mut sets = NodeSets::choose(&facts, Mode::Sampled);
        let light = *sets.light.iter().next().expect("a light node");
        let representative = *sets.full.iter().next().expect("a full node");
        sets.promote(&[light, representative].into());
        assert_eq!(sets.promoted, [light].into());
        let report = sets.report(&facts, vec!["pod-ip-cross-node".into()]);
        let row = report
            .nodes
            .iter()
            .find(|n| n.node == facts.nodes[light].name)
            .expect("the node");
        assert_eq!(row.level, Level::Promoted);
        assert_eq!(report.nodes.len(), 20);
        assert!(row.fact_set.contains("containerd 1.7") && row.fact_set.contains("kubelet 1.32"));
    }
}
