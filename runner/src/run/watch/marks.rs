//! `--mark-nodes`: the watch's view of each node's data plane as a node condition, where the
//! cluster's own tools look — `kubectl describe node`, the node lifecycle's consumers, a
//! node-problem-detector dashboard. A node whose light checks fail for N cycles in a row gets
//! `MixcheckDataplane=False` (reason `LightChecksFailing`, the likely cause in the message);
//! once they work again, `True`. Conditions are patched on the node's status subresource, merged
//! by type, as node-problem-detector sets its own (kubernetes/node-problem-detector,
//! `pkg/exporters/k8sexporter/condition`); a kubelet keeps conditions it does not own.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};

/// The condition's type.
pub const CONDITION: &str = "MixcheckDataplane";

/// What the watch has marked, and how long each node's light checks have failed.
#[derive(Debug, Default)]
pub struct Marks {
    streak: BTreeMap<String, u32>,
    marked: BTreeSet<String>,
    /// The cluster refused a patch (no `nodes/status` permission): marking stopped, said once.
    refused: bool,
}

/// A condition to set on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    pub node: String,
    /// `False`: the data plane fails; `True`: it works again.
    pub failing: bool,
    pub message: String,
}

impl Marks {
    /// After a cycle: each node's light checks (`dataplane`: worked or not, for the nodes the
    /// cycle probed) and the likely causes by (cause, node) give the conditions to set, a node
    /// being marked after `after` failing cycles in a row and cleared at its first good one.
    pub fn after(
        &mut self,
        dataplane: &BTreeMap<String, bool>,
        after: u32,
        causes: &BTreeMap<(String, String), f64>,
    ) -> Vec<Mark> {
        if self.refused {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (node, ok) in dataplane {
            if *ok {
                self.streak.remove(node);
                if self.marked.remove(node) {
                    out.push(Mark {
                        node: node.clone(),
                        failing: false,
                        message: "mixcheck watch: the node's light data-plane checks work again".into(),
                    });
                }
                continue;
            }
            let streak = self.streak.entry(node.clone()).or_default();
            *streak += 1;
            if *streak >= after && !self.marked.contains(node) {
                self.marked.insert(node.clone());
                let likely: Vec<String> = causes
                    .iter()
                    .filter(|((_, n), _)| n == node)
                    .map(|((c, _), conf)| format!("{c} ({:.0} %)", conf * 100.0))
                    .collect();
                let message = match likely.is_empty() {
                    true => {
                        format!("mixcheck watch: the node's light data-plane checks failed {streak} cycles in a row")
                    }
                    false => format!(
                        "mixcheck watch: the node's light data-plane checks failed {streak} cycles in a row; likely: {}",
                        likely.join(", ")
                    ),
                };
                out.push(Mark {
                    node: node.clone(),
                    failing: true,
                    message,
                });
            }
        }
        out
    }

    /// Sets the conditions; a refused patch (no permission) stops marking, said once through `warn`.
    pub async fn apply(&mut self, client: &kube::Client, marks: Vec<Mark>, warn: &dyn Fn(&str)) {
        let nodes: Api<Node> = Api::all(client.clone());
        for m in marks {
            let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let (status, reason) = if m.failing {
                ("False", "LightChecksFailing")
            } else {
                ("True", "LightChecksWork")
            };
            let patch = serde_json::json!({"status": {"conditions": [{
                "type": CONDITION,
                "status": status,
                "reason": reason,
                "message": m.message,
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }]}});
            let (params, patch) = (PatchParams::default(), Patch::Strategic(&patch));
            match tokio::time::timeout(Duration::from_secs(30), nodes.patch_status(&m.node, &params, &patch)).await {
                Ok(Ok(_)) => {}
                Ok(Err(kube::Error::Api(s))) if s.code == 403 => {
                    warn(&format!(
                        "Warning: --mark-nodes: no permission to patch nodes/status ({}); nodes are not marked",
                        s.message
                    ));
                    self.refused = true;
                    return;
                }
                Ok(Err(e)) => warn(&format!("Warning: --mark-nodes: node {}: {e}", m.node)),
                Err(_) => warn(&format!(
                    "Warning: --mark-nodes: node {}: the patch took over 30 s",
                    m.node
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marked after three failing cycles in a row (a good cycle between resets the count),
    /// with the likely cause on that node; cleared at the first good cycle after; a node whose
    /// checks always work is never touched.
    #[test]
    fn a_node_is_marked_after_n_failing_cycles_and_cleared_when_it_recovers() {
        let mut m = Marks::default();
        let causes = BTreeMap::from([(("dns-unreachable".to_string(), "win2022-1".to_string()), 0.85)]);
        let cycle = |w: bool, l: bool| BTreeMap::from([("win2022-1".to_string(), w), ("linux-1".to_string(), l)]);
        assert!(m.after(&cycle(false, true), 3, &causes).is_empty());
        assert!(
            m.after(&cycle(true, true), 3, &causes).is_empty(),
            "a good cycle resets"
        );
        assert!(m.after(&cycle(false, true), 3, &causes).is_empty());
        assert!(m.after(&cycle(false, true), 3, &causes).is_empty());
        let marked = m.after(&cycle(false, true), 3, &causes);
        assert_eq!(marked.len(), 1);
        assert!(marked[0].failing && marked[0].node == "win2022-1");
        assert!(
            marked[0].message.contains("dns-unreachable (85 %)"),
            "{}",
            marked[0].message
        );
        assert!(m.after(&cycle(false, true), 3, &causes).is_empty(), "marked once");
        let cleared = m.after(&cycle(true, true), 3, &causes);
        assert_eq!(cleared.len(), 1);
        assert!(!cleared[0].failing);
        assert!(m.after(&cycle(true, true), 3, &causes).is_empty());
    }
}
