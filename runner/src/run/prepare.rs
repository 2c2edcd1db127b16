//! The plan stage of a run: from the facts alone, before anything is created — the run
//! namespace's name and deadline, the settle windows and the clock flows are judged on, the
//! cells every selected check expands to over the chosen nodes, the fixtures they need and each
//! node's pod slots.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::cluster::budget::Budget;
use crate::cluster::deploy;
use crate::cluster::facts::ClusterFacts;
use crate::cluster::target::TargetSpec;
use crate::probes::clock::Clock;
use crate::probes::settle::{self, Settle};
use crate::run::Run;
use crate::run::cells::{self, CellPlan};
use crate::run::coverage::NodeSets;
use crate::run::plan::RunPlan;

/// What the plan stage hands to the others.
pub(super) struct Prepared<'p> {
    /// The run namespace.
    pub ns: String,
    /// When the run gives up on what is left.
    pub deadline: Instant,
    pub settle: Settle,
    pub clock: Clock,
    /// Every selected check expanded over the nodes the cluster has.
    pub cells: Vec<CellPlan<'p>>,
    /// The representatives and the light nodes; promotion moves nodes between them.
    pub sets: Mutex<NodeSets>,
    pub needs: deploy::Needs,
    /// The `everyNode` checks, once each (the coverage report names them).
    pub light_checks: Vec<String>,
}

impl<'p> Prepared<'p> {
    /// Plans the run's cells on `facts`; `started` is when the run began (its deadline counts
    /// from then).
    pub fn new(plan: &'p RunPlan, facts: &ClusterFacts, run_id: &str, started: Instant) -> Self {
        let sets = NodeSets::choose(facts, plan.coverage);
        let cells = cells::plan_cells(plan, facts, &sets);
        let light_checks = light_checks(&cells);
        let needs = cells
            .iter()
            .filter(|c| c.fixed.is_none())
            .map(|c| c.check.probe.fixture_needs())
            .fold(deploy::Needs::default(), deploy::Needs::or);
        let (settle, clock) = windows(plan);
        Prepared {
            ns: plan.namespace.clone().unwrap_or_else(|| format!("mixcheck-{run_id}")),
            deadline: started + plan.deadline,
            settle,
            clock,
            cells,
            sets: Mutex::new(sets),
            needs,
            light_checks,
        }
    }

    /// What the coverage is, in one line, when some nodes get only the light checks.
    pub fn coverage_line(&self) -> Option<String> {
        let sets = super::lock(&self.sets);
        (!sets.light.is_empty()).then(|| format!(
            "Coverage: every check on {} representative nodes (two per set of node facts in each pool), the light per-node checks on the other {} (--coverage full checks every node)",
            sets.full.len(),
            sets.light.len()
        ))
    }

    /// Each node's pod slots, read from the cluster: workload pods wait for one and give it
    /// back once judged. Unreadable, the pods are not budgeted (said so).
    pub async fn budget(&self, run: &Run<'_>) -> Budget {
        let full = super::lock(&self.sets).full.clone();
        let per_node = deploy::pods_per_node(run.facts, run.fixtures, self.needs, &full);
        let budget = match Budget::read(&run.client, &per_node).await {
            Ok(b) => b,
            Err(e) => {
                run.say(&format!(
                    "Cannot read the nodes' pod capacity ({e}); pods are not budgeted"
                ));
                Budget::default()
            }
        };
        let tight = budget.tight(run.plan.concurrency);
        if !tight.is_empty() {
            run.say(&format!(
                "Few pod slots on {}: the run's pods there take turns",
                tight.join(", ")
            ));
        }
        budget
    }
}

/// The settle windows and the clock of the plan's target: a stated `--settle`, the bundled
/// cluster's own programming delay and clock, or a real cluster's defaults.
fn windows(plan: &RunPlan) -> (Settle, Clock) {
    match &plan.target {
        TargetSpec::Bundled { topology, .. } => (
            plan.settle
                .map_or_else(|| bundled_settle(topology), Settle::real)
                .on_clock(topology.timing.scale),
            Clock::simulated(topology.timing.scale),
        ),
        _ => (
            Settle::real(plan.settle.unwrap_or(settle::REAL_CLUSTER_BASE)),
            Clock::WALL,
        ),
    }
}

/// The settle window on the bundled cluster: its topology's longest programming delay twice
/// and a margin of 200 ms, for every kind of flow. Its proxies program each change within that
/// delay, but the last endpoint change can land after the run saw the fixtures ready when the
/// machine is busy (a loaded CI runner starts the simulated kube-proxy's clock late): the second
/// delay absorbs that. None on an instant topology (one attempt decides).
fn bundled_settle(topology: &simcluster::Topology) -> Settle {
    let delay = topology.programming_delay();
    let base = if delay.is_zero() {
        Duration::ZERO
    } else {
        delay.saturating_mul(2) + Duration::from_millis(200)
    };
    Settle { base, ..Settle::NONE }
}

/// The `everyNode` checks among the planned cells, once each.
pub(super) fn light_checks(cells: &[CellPlan<'_>]) -> Vec<String> {
    let mut names: Vec<String> = cells
        .iter()
        .filter(|c| c.check.every_node)
        .map(|c| c.check.name.clone())
        .collect();
    names.dedup();
    names
}

/// The cluster in one line: its version, nodes per pool and network mode.
pub(super) fn describe_cluster(facts: &ClusterFacts) -> String {
    let mut pools: BTreeMap<String, usize> = BTreeMap::new();
    for n in &facts.nodes {
        *pools.entry(n.pool()).or_default() += 1;
    }
    let pools = pools
        .iter()
        .map(|(p, n)| format!("{n}× {p}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "Cluster: {} · {} nodes ({pools}) · network mode {}",
        facts
            .report
            .server_version
            .as_ref()
            .map(|f| f.value.as_str())
            .unwrap_or("?"),
        facts.nodes.len(),
        facts.network_mode.as_ref().map_or("unknown", |m| m.value.as_str())
    )
}

/// The nodes the facts leave out, with why, in one line; None when every node is in.
pub(super) fn describe_skipped(facts: &ClusterFacts) -> Option<String> {
    let skipped: Vec<String> = facts
        .nodes
        .iter()
        .filter_map(|n| n.skipped.as_ref().map(|why| format!("{} ({why})", n.name)))
        .collect();
    (!skipped.is_empty()).then(|| {
        format!(
            "Leaving out {} node{}: {}",
            skipped.len(),
            if skipped.len() == 1 { "" } else { "s" },
            skipped.join("; ")
        )
    })
}
