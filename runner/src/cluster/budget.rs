//! The pod budget per node: how many of the run's own workload pods a node can hold at once —
//! its allocatable `pods` (and provider pod resources such as EKS's
//! `vpc.amazonaws.com/PrivateIPv4Address`), less the pods already there and the run's shared
//! fixtures. Workload pods take a slot before they are created and give it back once deleted.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use tokio::sync::Semaphore;

/// Node resources that bound the pods a node runs besides `pods`: EKS Windows nodes advertise
/// one private IPv4 address per pod their one ENI can hold ("the number of IP addresses
/// available per [ENI] ... minus one"; real-clusters reference §2).
pub const PROVIDER_POD_RESOURCES: &[&str] = &["vpc.amazonaws.com/PrivateIPv4Address"];

/// One node's budget, as the progress line and the tests see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeBudget {
    /// The pods the node can run (allocatable `pods`, or fewer provider resources).
    pub capacity: u32,
    /// Pods of other namespaces running there when the run started.
    pub used: u32,
    /// The run's shared fixture pods there.
    pub fixtures: u32,
}

impl NodeBudget {
    /// Workload pods the node can hold at once: what is left, and at least one (a node with no
    /// room left still gets its pods one at a time; the scheduler keeps them Pending until a
    /// slot frees, and the run waits for that).
    pub fn free(self) -> usize {
        let left = self.capacity.saturating_sub(self.used).saturating_sub(self.fixtures);
        usize::try_from(left.max(1)).unwrap_or(usize::MAX)
    }
}

/// The capacity a node's status allows: allocatable `pods`, bounded by provider pod resources.
pub fn capacity(node: &Node) -> Option<u32> {
    let alloc = node.status.as_ref()?.allocatable.as_ref()?;
    let count = |key: &str| alloc.get(key).and_then(|q| q.0.parse::<u32>().ok());
    let pods = count("pods")?;
    Some(
        PROVIDER_POD_RESOURCES
            .iter()
            .filter_map(|r| count(r))
            .fold(pods, u32::min),
    )
}

/// The workload slots of every node the run uses.
#[derive(Debug, Default)]
pub struct Budget {
    pub nodes: BTreeMap<String, NodeBudget>,
    slots: HashMap<String, Arc<Semaphore>>,
}

impl Budget {
    /// Reads the nodes' capacity and the pods on them; `fixtures` is the run's shared fixture
    /// pods per node. A node whose capacity cannot be read gets no limit.
    pub async fn read(client: &kube::Client, fixtures: &BTreeMap<String, u32>) -> Result<Self, kube::Error> {
        // Both lists in chunks, keeping only the counts: at 5,000 nodes the pods running are
        // tens of thousands.
        let mut capacities: Vec<(String, u32)> = Vec::new();
        crate::cluster::chunks::each(&Api::<Node>::all(client.clone()), &ListParams::default(), |n| {
            if let Some(capacity) = capacity(&n) {
                capacities.push((n.metadata.name.unwrap_or_default(), capacity));
            }
        })
        .await?;
        let running = ListParams::default().fields("status.phase!=Succeeded,status.phase!=Failed");
        let mut used: HashMap<String, u32> = HashMap::new();
        crate::cluster::chunks::each(&Api::<Pod>::all(client.clone()), &running, |p| {
            if let Some(node) = p.spec.and_then(|s| s.node_name) {
                *used.entry(node).or_default() += 1;
            }
        })
        .await?;
        let mut budget = Self::default();
        for (name, capacity) in capacities {
            budget.insert(
                &name,
                NodeBudget {
                    capacity,
                    used: used.get(&name).copied().unwrap_or(0),
                    fixtures: fixtures.get(&name).copied().unwrap_or(0),
                },
            );
        }
        Ok(budget)
    }

    fn insert(&mut self, node: &str, b: NodeBudget) {
        self.slots.insert(node.to_string(), Arc::new(Semaphore::new(b.free())));
        self.nodes.insert(node.to_string(), b);
    }

    /// The slots of `node`; None: no limit known.
    pub fn slots(&self, node: &str) -> Option<Arc<Semaphore>> {
        self.slots.get(node).cloned()
    }

    /// The nodes where fewer than `wanted` workload pods fit at once, for the progress line.
    pub fn tight(&self, wanted: usize) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, b)| b.free() < wanted)
            .map(|(n, b)| format!("{n} ({} of {} pod slots free)", b.free(), b.capacity))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    /// Allocatable `pods` bounds a node, and so does a provider's per-pod resource when fewer
    /// (EKS Windows: the ENI's private IPv4 addresses).
    #[rstest]
    #[case::pods_only(json!({"pods": "110"}), Some(110))]
    #[case::eks_windows(json!({"pods": "110", "vpc.amazonaws.com/PrivateIPv4Address": "9"}), Some(9))]
    #[case::unknown(json!({"cpu": "4"}), None)]
    fn a_nodes_capacity_is_its_tightest_pod_resource(
        #[case] allocatable: serde_json::Value,
        #[case] want: Option<u32>,
    ) {
        let node: Node =
            serde_json::from_value(json!({"metadata": {"name": "n"}, "status": {"allocatable": allocatable}}))
                .expect("a node");
        assert_eq!(capacity(&node), want);
    }

    /// What is left after other pods and the run's fixtures; never less than one slot.
    #[rstest]
    #[case::roomy(110, 12, 5, 93)]
    #[case::eks_one_node_pool(8, 2, 5, 1)]
    #[case::full(8, 2, 6, 1)]
    #[case::overfull(8, 7, 6, 1)]
    fn free_slots_are_what_is_left_and_at_least_one(
        #[case] capacity: u32,
        #[case] used: u32,
        #[case] fixtures: u32,
        #[case] free: usize,
    ) {
        let b = NodeBudget {
            capacity,
            used,
            fixtures,
        };
        assert_eq!(b.free(), free);
        let mut budget = Budget::default();
        budget.insert("n", b);
        assert_eq!(budget.slots("n").map(|s| s.available_permits()), Some(free));
        assert_eq!(budget.slots("other").map(|s| s.available_permits()), None);
    }
}
