//! `mixcheck run --plan`: what a run would do on this cluster — its coverage, checks and cells,
//! the pods it would create on each node, its probes and API calls, and an estimate of its time
//! from API round trips measured here — read from the cluster's facts; nothing is created.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::catalogue::suite::Probe;
use crate::cluster::deploy;
use crate::cluster::fixture::Fixtures;
use crate::errors::Code;
use crate::run::cells::{self, CellPlan};
use crate::run::coverage::NodeSets;
use crate::run::plan::RunPlan;

/// API round trips measured for the estimate.
const ROUND_TRIPS: usize = 5;

/// The requests one probe makes through the API, on average: an exec and the read of what it
/// needs, a retry within the settle window now and then (measured on the bundled cluster: a run's
/// API calls over its probes, pods and reads).
const CALLS_PER_PROBE: u64 = 2;

/// The requests behind each fixture pod: its create and its share of the watch.
const CALLS_PER_POD: u64 = 1;

/// What the plan found, for the printout and the tests.
#[derive(Debug, Default)]
pub struct Preview {
    pub cells: usize,
    pub decided: usize,
    pub checks: usize,
    pub probes: usize,
    pub fact_readings: usize,
    /// Fixture pods by node name.
    pub fixture_pods: BTreeMap<String, u32>,
    /// Workload pods (created by checks) by node name.
    pub workload_pods: BTreeMap<String, u32>,
    pub services: usize,
    pub api_calls: u64,
    pub round_trip: Duration,
}

/// Workload pods the cells create, by node: one per pair of a `create` cell, and the exec
/// fixture pods the `exec` cells share.
fn workload_pods(cells: &[CellPlan<'_>], facts: &crate::cluster::facts::ClusterFacts) -> BTreeMap<String, u32> {
    let mut out: BTreeMap<String, u32> = BTreeMap::new();
    let mut shared: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for c in cells.iter().filter(|c| c.fixed.is_none()) {
        for p in &c.pairs {
            let Some(n) = p.from.or(p.to).and_then(|i| facts.nodes.get(i)) else {
                continue;
            };
            match &c.check.probe {
                Probe::Create { .. } | Probe::TerminationGrace { .. } => *out.entry(n.name.clone()).or_default() += 1,
                _ => {
                    for key in c.check.probe.pod_keys(&n.name) {
                        shared.entry(n.name.clone()).or_default().insert(key);
                    }
                }
            }
        }
    }
    for (node, keys) in shared {
        *out.entry(node).or_default() += u32::try_from(keys.len()).unwrap_or(u32::MAX);
    }
    out
}

/// The median time of a cheap API request (`GET /version`).
async fn round_trip(client: &kube::Client) -> Duration {
    let mut times = Vec::new();
    for _ in 0..ROUND_TRIPS {
        let started = Instant::now();
        if tokio::time::timeout(Duration::from_secs(10), client.apiserver_version())
            .await
            .is_ok_and(|r| r.is_ok())
        {
            times.push(started.elapsed());
        }
    }
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or(Duration::from_secs(1))
}

/// Plans the run on the cluster and renders the plan; nothing is created. What stops it comes
/// with its exit code.
pub async fn show(plan: &RunPlan, fixtures: &Fixtures) -> Result<String, (Code, String)> {
    let progress = crate::cluster::progress::Progress::for_stderr(plan.quiet);
    let say = |m: &str| progress.say(m);
    let (target, facts) = super::open(plan, "plan", &say, &say)
        .await
        .map_err(|(code, why, _)| (code, why))?;
    let sets = NodeSets::choose(&facts, plan.coverage);
    let planned = cells::plan_cells(plan, &facts, &sets);
    let preview = measure(&target.client, &facts, &sets, &planned, fixtures, plan.selected.len()).await;
    let text = render(plan, &facts, &sets, &planned, &preview);
    target.stop().await;
    Ok(text)
}

/// Counts what the planned run would do and measures the API.
async fn measure(
    client: &kube::Client,
    facts: &crate::cluster::facts::ClusterFacts,
    sets: &NodeSets,
    planned: &[CellPlan<'_>],
    fixtures: &Fixtures,
    checks: usize,
) -> Preview {
    let count = cells::count(planned);
    let needs = planned
        .iter()
        .filter(|c| c.fixed.is_none())
        .map(|c| c.check.probe.fixture_needs())
        .fold(deploy::Needs::default(), deploy::Needs::or);
    let fixture_pods = deploy::pods_per_node(facts, fixtures, needs, &sets.full);
    let workload_pods = workload_pods(planned, facts);
    let pools = facts
        .nodes
        .iter()
        .filter(|n| n.schedulable())
        .map(|n| n.pool())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    // Per full node: a NodePort, a headless and an ExternalName Service; per pool a
    // LoadBalancer and an affinity Service; two shared ones.
    let services = sets.full.len() * 3 + pools * 2 + 2;
    let pods: u64 = fixture_pods
        .values()
        .chain(workload_pods.values())
        .map(|&n| u64::from(n))
        .sum();
    // Reading the facts: the nodes, a configz per node, the kube-system objects and the
    // permission reviews (about twenty).
    let reads = facts.nodes.len() as u64 + 20;
    let api_calls = reads + pods * CALLS_PER_POD + services as u64 + count.probes as u64 * CALLS_PER_PROBE;
    Preview {
        cells: planned.len(),
        decided: planned.iter().filter(|c| c.fixed.is_some()).count(),
        checks,
        probes: count.probes,
        fact_readings: count.facts,
        fixture_pods,
        workload_pods,
        services,
        api_calls,
        round_trip: round_trip(client).await,
    }
}

/// Nodes grouped by how many pods they would get: `4 pods on 6 nodes, 2 pods on 244 nodes`.
fn pods_line(per_node: &BTreeMap<String, u32>) -> String {
    let mut by_count: BTreeMap<u32, usize> = BTreeMap::new();
    for &n in per_node.values() {
        *by_count.entry(n).or_default() += 1;
    }
    by_count
        .iter()
        .rev()
        .map(|(pods, nodes)| {
            format!(
                "{pods} pod{} on {nodes} node{}",
                if *pods == 1 { "" } else { "s" },
                if *nodes == 1 { "" } else { "s" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn render(
    plan: &RunPlan,
    facts: &crate::cluster::facts::ClusterFacts,
    sets: &NodeSets,
    planned: &[CellPlan<'_>],
    p: &Preview,
) -> String {
    let light_checks: Vec<String> = super::prepare::light_checks(planned);
    let coverage = sets.report(facts, light_checks);
    let mut lines = vec!["Plan (nothing was created on the cluster)".to_string()];
    lines.push(format!(
        "  Coverage:   {}",
        coverage
            .line()
            .unwrap_or_else(|| format!("every check on all {} probed nodes", coverage.nodes.len()))
    ));
    lines.push(format!(
        "  Checks:     {} selected · {} cells ({} decided without probing)",
        p.checks, p.cells, p.decided
    ));
    lines.push(format!(
        "  Probes:     {} (and {} judgements from the facts read once)",
        p.probes, p.fact_readings
    ));
    let fixtures: u32 = p.fixture_pods.values().sum();
    lines.push(format!(
        "  Pods:       {fixtures} fixture pods ({}) and {} pods the checks create, each deleted once judged",
        pods_line(&p.fixture_pods),
        p.workload_pods.values().sum::<u32>()
    ));
    lines.push(format!("  Services:   about {}", p.services));
    if let Some(line) = images_line(&plan.registry) {
        lines.push(line);
    }
    lines.push(format!("  API calls:  about {}", p.api_calls));
    let rtt = p.round_trip;
    // A probe is an exec: about three round trips (upgrade, command, close) plus the command.
    let per_probe = rtt * 3 + Duration::from_millis(50);
    let at_once = u32::try_from(plan.concurrency.max(1)).unwrap_or(u32::MAX);
    let probing = per_probe * u32::try_from(p.probes).unwrap_or(u32::MAX) / at_once;
    lines.push(format!(
        "  Estimate:   about {} of probing ({} probes × ~{} ms, {} at once; API round trip {:.1} ms, median of {ROUND_TRIPS}),",
        human(probing),
        p.probes,
        per_probe.as_millis(),
        plan.concurrency,
        rtt.as_secs_f64() * 1000.0
    ));
    lines.push(
        "              plus the fixtures' start-up (Windows images pull for minutes on a fresh node) and the settle windows"
            .to_string(),
    );
    lines.join("\n") + "\n"
}

/// Where the pods' images come from, when the run was given mirrors or pull secrets.
fn images_line(registry: &crate::cluster::registry::Registry) -> Option<String> {
    let images = registry.report()?;
    let mut parts: Vec<String> = images
        .registry_map
        .iter()
        .map(|(from, to)| format!("{from} → {to}"))
        .collect();
    if let Some(prefix) = &images.registry {
        parts.push(format!("other images → {prefix}"));
    }
    if !images.pull_secrets.is_empty() {
        parts.push(format!("pull secrets {}", images.pull_secrets.join(", ")));
    }
    Some(format!("  Images:     {}", parts.join("; ")))
}

fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 120 {
        format!("{} min", s.div_ceil(60))
    } else {
        format!("{:.0} s", d.as_secs_f64().max(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_grouped_by_their_pod_count() {
        let per_node: BTreeMap<String, u32> = [("a", 4), ("b", 2), ("c", 2), ("d", 1)]
            .into_iter()
            .map(|(n, c)| (n.to_string(), c))
            .collect();
        assert_eq!(
            pods_line(&per_node),
            "4 pods on 1 node, 2 pods on 2 nodes, 1 pod on 1 node"
        );
        assert_eq!(human(Duration::from_secs(300)), "5 min");
        assert_eq!(images_line(&crate::cluster::registry::Registry::default()), None);
        let registry = crate::cluster::registry::Registry::parse(
            Some("mirror.local/all"),
            &["registry.k8s.io=harbor.corp/k8s".into()],
            &["default/regcred".into()],
        )
        .expect("registry");
        assert_eq!(
            images_line(&registry).as_deref(),
            Some(
                "  Images:     registry.k8s.io → harbor.corp/k8s; other images → mirror.local/all; pull secrets default/regcred"
            )
        );
        assert_eq!(human(Duration::from_millis(200)), "1 s");
    }
}
