//! Planning the cells: every selected check expanded over the cluster's pools (node pairs
//! sampled to cover each node, a few nodes per pool for workload checks), each cell with a
//! unique id.

use std::collections::{BTreeMap, BTreeSet};

use mixcheck_reports::cell::{Coordinates, Locality, Pool};
use mixcheck_reports::{Os, Verdict};

use crate::catalogue::suite::{Check, Matrix, Pairs, Placement, Protocol, Suite};
use crate::cluster::facts::ClusterFacts;
use crate::probes::judgement::Pair;
use crate::probes::{NodeChoice, Shape};
use crate::run::coverage::NodeSets;
use crate::run::plan::RunPlan;

/// How many nodes of a pool a workload check (a pod created or exec'd per node) runs on.
const WORKLOAD_NODES_PER_POOL: usize = 3;

/// At most `k` of `members`, evenly spread, starting at a position that depends only on `name`
/// (FNV-1a): a check samples the same nodes on every run of the same cluster, and different
/// checks sample different ones.
fn sample(members: &[usize], name: &str, k: usize) -> Vec<usize> {
    let len = members.len();
    if len <= k {
        return members.to_vec();
    }
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let offset = usize::try_from(hash % len as u64).unwrap_or(0);
    let mut picked: Vec<usize> = (0..k).map(|j| members[(offset + j * len / k) % len]).collect();
    picked.sort_unstable();
    picked
}

/// What a plan probes: the pairs of cells that look at the cluster, and the pairs judged from
/// the facts the run read once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Count {
    pub(super) probes: usize,
    pub(super) facts: usize,
}

/// The probes of `cells` (cells decided without probing count none).
pub(super) fn count(cells: &[CellPlan<'_>]) -> Count {
    let mut out = Count::default();
    for c in cells.iter().filter(|c| c.fixed.is_none()) {
        if matches!(c.check.probe, crate::catalogue::suite::Probe::Fact { .. }) {
            out.facts += c.pairs.len();
        } else {
            out.probes += c.pairs.len();
        }
    }
    out
}

/// A cell before probing.
#[derive(Debug, Clone)]
pub(super) struct CellPlan<'a> {
    pub(super) suite: &'a Suite,
    pub(super) check: &'a Check,
    pub(super) coordinates: Coordinates,
    pub(super) placement: Option<Placement>,
    pub(super) protocol: Option<Protocol>,
    pub(super) variant: Option<String>,
    pub(super) pairs: Vec<Pair>,
    /// Set when the cell is decided without probing.
    pub(super) fixed: Option<(Verdict, String)>,
    /// The node pools its pairs start from and go to (None: not a node, e.g. the outside or
    /// the probe's own target), and whether each pair is one node to itself.
    pub(super) ends: Ends,
}

/// The node pools of a cell's pair ends.
#[derive(Debug, Clone, Default)]
pub(super) struct Ends {
    pub(super) from: Option<String>,
    pub(super) to: Option<String>,
    /// Each pair is a node to itself (same-node placement, or the probe's own target).
    pub(super) same_node: bool,
    /// A node-shaped cell (one pair per node), with how its nodes are chosen.
    pub(super) nodes: Option<NodeChoice>,
}

/// Node pairs covering every node of both pools at least once (about max(|S|, |D|) pairs).
fn sample_pairs(from: &[usize], to: &[usize], same_node: bool) -> Vec<Pair> {
    if same_node {
        return from
            .iter()
            .filter(|n| to.contains(n))
            .map(|n| Pair {
                from: Some(*n),
                to: Some(*n),
            })
            .collect();
    }
    let k = from.len().max(to.len());
    let mut out = Vec::new();
    for i in 0..k {
        let s = from[i % from.len()];
        let d = (0..to.len()).map(|j| to[(i + j) % to.len()]).find(|d| *d != s);
        if let Some(d) = d {
            out.push(Pair {
                from: Some(s),
                to: Some(d),
            });
        }
    }
    out
}

/// A pool of nodes a check's cells run between: its name, its OS and its nodes' indexes.
type PoolNodes = (String, Os, Vec<usize>);

/// The probed nodes of the full matrix by pool, each pool with its OS and node indexes.
/// Workers that are not Ready stay in their pools: their cells say the node is down (see
/// `not_ready`) instead of vanishing from the report.
fn full_pools(facts: &ClusterFacts, sets: &NodeSets) -> BTreeMap<String, (Os, Vec<usize>)> {
    let mut pools: BTreeMap<String, (Os, Vec<usize>)> = BTreeMap::new();
    for (i, n) in facts
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| n.probed() && sets.full.contains(i))
    {
        pools.entry(n.pool()).or_insert((n.os, Vec::new())).1.push(i);
    }
    pools
}

/// The pools of the given OSes, in name order.
fn pools_of(pools: &BTreeMap<String, (Os, Vec<usize>)>, os: &[Os]) -> Vec<PoolNodes> {
    pools
        .iter()
        .filter(|(_, (o, _))| os.contains(o))
        .map(|(p, (o, n))| (p.clone(), *o, n.clone()))
        .collect()
}

/// A check's matrix axes, an empty one standing for its default: every source OS, and one
/// unset protocol, placement or variant.
struct Axes {
    from_os: Vec<Os>,
    protocols: Vec<Option<Protocol>>,
    placements: Vec<Option<Placement>>,
    variants: Vec<Option<String>>,
}

impl Axes {
    /// The axes of `m`, defaults filled in.
    fn of(m: &Matrix) -> Self {
        /// Each value of `axis`, or one unset value where it lists none.
        fn or_unset<T: Clone>(axis: &[T]) -> Vec<Option<T>> {
            if axis.is_empty() {
                vec![None]
            } else {
                axis.iter().cloned().map(Some).collect()
            }
        }
        Self {
            from_os: if m.from.is_empty() {
                vec![Os::Linux, Os::Windows]
            } else {
                m.from.clone()
            },
            protocols: or_unset(&m.protocol),
            placements: or_unset(&m.placement),
            variants: or_unset(&m.variant),
        }
    }
}

/// Expands the selected checks over the cluster's pools: flows between the nodes `sets` gives
/// the full matrix, plus the light pairs of the others.
pub(super) fn plan_cells<'a>(plan: &'a RunPlan, facts: &ClusterFacts, sets: &NodeSets) -> Vec<CellPlan<'a>> {
    let pools = full_pools(facts, sets);
    let mut cells = Vec::new();
    for (suite, check) in plan.checks() {
        let axes = Axes::of(&check.matrix);
        if let Shape::Nodes(choice) = check.probe.shape() {
            cells.extend(node_cells(
                suite,
                check,
                choice,
                facts,
                sets,
                &axes.from_os,
                &axes.protocols,
                &axes.variants,
            ));
            continue;
        }
        cells.extend(flow_cells(suite, check, &axes, &pools));
    }
    distinguish_checks_of_one_rule(&mut cells);
    add_light_pairs(&mut cells, facts, sets);
    cells
}

/// One source pool and one destination of a flow check: where its cells' pairs start and end.
struct Route<'r> {
    from: &'r str,
    from_nodes: &'r [usize],
    /// The destination pool; None for the probe's own target (same pool, the outside world,
    /// the same pod).
    to: Option<&'r str>,
    to_nodes: &'r [usize],
}

/// The cells of a check about flows: from each source pool to each destination pool the
/// matrix keeps (or to the probe's own target), over its placements, protocols and variants.
fn flow_cells<'a>(
    suite: &'a Suite,
    check: &'a Check,
    axes: &Axes,
    pools: &BTreeMap<String, (Os, Vec<usize>)>,
) -> Vec<CellPlan<'a>> {
    let m = &check.matrix;
    let to_pools: Option<Vec<PoolNodes>> = (!m.to.is_empty()).then(|| pools_of(pools, &m.to));
    let mut cells = Vec::new();
    for (fp, fos, fnodes) in pools_of(pools, &axes.from_os) {
        let destinations: Vec<(Option<String>, Option<Os>, Vec<usize>)> = match &to_pools {
            Some(tp) => tp
                .iter()
                .map(|(p, o, n)| (Some(p.clone()), Some(*o), n.clone()))
                .collect(),
            // Without a `to` list: the destination is the probe's own target (same pool,
            // the outside world, the same pod).
            None => vec![(None, None, fnodes.clone())],
        };
        for (tp, tos, tnodes) in destinations {
            if let Some(tos) = tos {
                let keep = match m.pairs {
                    Pairs::All => true,
                    Pairs::SameOs => tos == fos,
                    Pairs::CrossOs => tos != fos,
                };
                if !keep {
                    continue;
                }
            }
            let route = Route {
                from: &fp,
                from_nodes: &fnodes,
                to: tp.as_deref(),
                to_nodes: &tnodes,
            };
            cells.extend(route_cells(suite, check, axes, &route));
        }
    }
    cells
}

/// The cells of one route: one per placement (same-node only within one pool), protocol and
/// variant.
fn route_cells<'a>(suite: &'a Suite, check: &'a Check, axes: &Axes, route: &Route<'_>) -> Vec<CellPlan<'a>> {
    let mut cells = Vec::new();
    for placement in &axes.placements {
        if *placement == Some(Placement::SameNode) && route.to.is_some_and(|t| t != route.from) {
            continue;
        }
        for protocol in &axes.protocols {
            for variant in &axes.variants {
                cells.push(flow_cell(suite, check, route, *placement, *protocol, variant));
            }
        }
    }
    cells
}

/// One cell of a route: its coordinates and sampled node pairs, not applicable where the
/// cluster has no pair for it.
fn flow_cell<'a>(
    suite: &'a Suite,
    check: &'a Check,
    route: &Route<'_>,
    placement: Option<Placement>,
    protocol: Option<Protocol>,
    variant: &Option<String>,
) -> CellPlan<'a> {
    let (fp, tp) = (route.from, route.to);
    let same = placement == Some(Placement::SameNode) || tp.is_none() && placement.is_none();
    let ends = Ends {
        from: Some(fp.to_string()),
        to: Some(tp.unwrap_or(fp).to_string()),
        same_node: same,
        nodes: None,
    };
    let pairs = sample_pairs(route.from_nodes, route.to_nodes, same);
    // Without a `to` list: the probe's own target, or its own pool's service or pods.
    let dest_pool = Some(match (tp, check.probe.own_destination()) {
        (Some(t), _) => Pool::named(t),
        (None, Some(own)) => Pool::named(own),
        (None, None) => Pool::named(fp),
    });
    let coordinates = Coordinates {
        source: Some(Pool::named(fp)),
        destination: dest_pool,
        locality: placement.map(|p| match p {
            Placement::SameNode => Locality::SameNode,
            Placement::OtherNode => Locality::OtherNode,
        }),
        protocol: protocol.map(|p| p.to_string()),
        variant: variant.clone(),
    };
    let fixed = if pairs.is_empty() {
        Some((
            Verdict::NotApplicable,
            format!(
                "the cluster has no second schedulable node for {fp} → {}",
                tp.unwrap_or_default()
            ),
        ))
    } else {
        None
    };
    CellPlan {
        suite,
        check,
        coordinates,
        placement,
        protocol,
        variant: variant.clone(),
        pairs,
        fixed,
        ends,
    }
}

/// The full-matrix nodes of each pool, schedulable ones first (they hold the fixtures).
fn full_by_pool(facts: &ClusterFacts, sets: &NodeSets) -> BTreeMap<String, Vec<usize>> {
    let mut out: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for &i in &sets.full {
        if let Some(n) = facts.nodes.get(i) {
            out.entry(n.pool()).or_default().push(i);
        }
    }
    for members in out.values_mut() {
        members.sort_by_key(|&i| (!facts.nodes[i].schedulable(), i));
    }
    out
}

/// A full-matrix node of `pool` other than `not`, spread by `spread` (so that the light nodes
/// of a pool do not all aim at one representative).
fn partner(full: &BTreeMap<String, Vec<usize>>, pool: &str, not: usize, spread: usize) -> Option<usize> {
    let members: Vec<usize> = full.get(pool)?.iter().copied().filter(|&i| i != not).collect();
    (!members.is_empty()).then(|| members[spread % members.len()])
}

/// The pairs node `n` adds to `cell`: from it (to a full-matrix partner where the flow goes to
/// another node), and — with `inbound` — to it; node-shaped cells of its pool get the node
/// itself. Pairs the cell has are left out.
fn pairs_for(
    cell: &CellPlan<'_>,
    facts: &ClusterFacts,
    full: &BTreeMap<String, Vec<usize>>,
    n: usize,
    inbound: bool,
) -> Vec<Pair> {
    let Some(node) = facts.nodes.get(n) else {
        return Vec::new();
    };
    let pool = node.pool();
    let mut out = Vec::new();
    match cell.ends.nodes {
        Some(NodeChoice::Every | NodeChoice::OnePerPool) => {}
        Some(NodeChoice::Workers | NodeChoice::Sample) => {
            let outside = cell.check.probe.looks_from_outside();
            let mine = if outside { &cell.ends.to } else { &cell.ends.from };
            if mine.as_deref() == Some(pool.as_str()) {
                out.push(if outside {
                    Pair {
                        from: None,
                        to: Some(n),
                    }
                } else {
                    Pair {
                        from: Some(n),
                        to: None,
                    }
                });
            }
        }
        None => {
            if cell.ends.from.as_deref() == Some(pool.as_str()) {
                if cell.placement == Some(Placement::SameNode) {
                    out.push(Pair {
                        from: Some(n),
                        to: Some(n),
                    });
                } else if let Some(d) = cell.ends.to.as_deref().and_then(|to| partner(full, to, n, n)) {
                    out.push(Pair {
                        from: Some(n),
                        to: Some(d),
                    });
                }
            }
            if inbound
                && !cell.ends.same_node
                && cell.ends.to.as_deref() == Some(pool.as_str())
                && let Some(s) = cell.ends.from.as_deref().and_then(|from| partner(full, from, n, n))
            {
                out.push(Pair {
                    from: Some(s),
                    to: Some(n),
                });
            }
        }
    }
    out.retain(|p| !cell.pairs.contains(p));
    out
}

/// The light per-node coverage: each light node, in one cell of each `everyNode` check (its own
/// pool to its own pool where the check has that cell), starts a flow to a full-matrix node —
/// and receives one, where the flow goes to a pod. Node-shaped `everyNode` checks list the light
/// nodes already.
fn add_light_pairs(cells: &mut [CellPlan<'_>], facts: &ClusterFacts, sets: &NodeSets) {
    if sets.light.is_empty() {
        return;
    }
    let full = full_by_pool(facts, sets);
    let mut by_check: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (i, c) in cells.iter().enumerate() {
        if c.check.every_node && c.fixed.is_none() && c.ends.nodes.is_none() {
            by_check
                .entry((c.suite.name.clone(), c.check.name.clone()))
                .or_default()
                .push(i);
        }
    }
    for indices in by_check.values() {
        for &n in &sets.light {
            let pool = facts.nodes[n].pool();
            let own = |c: &CellPlan<'_>| c.ends.from.as_deref() == Some(&pool) && c.ends.to.as_deref() == Some(&pool);
            // Outbound: its own pool's cell first, else the first cell it starts in.
            let out_cell = indices
                .iter()
                .copied()
                .find(|&i| own(&cells[i]) && cells[i].placement != Some(Placement::SameNode))
                .or_else(|| {
                    indices.iter().copied().find(|&i| {
                        cells[i].ends.from.as_deref() == Some(&pool) && cells[i].placement != Some(Placement::SameNode)
                    })
                });
            if let Some(i) = out_cell {
                let add: Vec<Pair> = pairs_for(&cells[i], facts, &full, n, false)
                    .into_iter()
                    .filter(|p| p.from == Some(n))
                    .collect();
                cells[i].pairs.extend(add);
            }
            if !cells
                .get(indices[0])
                .is_some_and(|c| c.check.probe.reaches_the_server_pod())
            {
                continue;
            }
            let in_cell = indices
                .iter()
                .copied()
                .find(|&i| own(&cells[i]) && !cells[i].ends.same_node)
                .or_else(|| {
                    indices
                        .iter()
                        .copied()
                        .find(|&i| cells[i].ends.to.as_deref() == Some(&pool) && !cells[i].ends.same_node)
                });
            if let Some(i) = in_cell {
                let add: Vec<Pair> = pairs_for(&cells[i], facts, &full, n, true)
                    .into_iter()
                    .filter(|p| p.to == Some(n))
                    .collect();
                cells[i].pairs.extend(add);
            }
        }
    }
}

/// The pairs that give `promoted` nodes every check, by cell index (cells they already are in
/// get only the pairs they lack). `sets` already counts them as full.
pub(super) fn promotion_pairs(
    cells: &[CellPlan<'_>],
    facts: &ClusterFacts,
    sets: &NodeSets,
    promoted: &BTreeSet<usize>,
) -> Vec<(usize, Vec<Pair>)> {
    let full = full_by_pool(facts, sets);
    cells
        .iter()
        .enumerate()
        .filter(|(_, c)| c.fixed.is_none())
        .filter_map(|(i, c)| {
            let mut pairs: Vec<Pair> = Vec::new();
            for &n in promoted {
                for p in pairs_for(c, facts, &full, n, true) {
                    if !pairs.contains(&p) {
                        pairs.push(p);
                    }
                }
            }
            (!pairs.is_empty()).then_some((i, pairs))
        })
        .collect()
}

/// Cells of checks about nodes: one per pool of `from` (or `to` for probes from outside); the
/// nodes `choice` picks are judged and the worst result stands.
#[allow(clippy::too_many_arguments)] // the check, its matrix axes and the nodes, each distinct
fn node_cells<'a>(
    suite: &'a Suite,
    check: &'a Check,
    choice: NodeChoice,
    facts: &ClusterFacts,
    sets: &NodeSets,
    from_os: &[Os],
    protocols: &[Option<Protocol>],
    variants: &[Option<String>],
) -> Vec<CellPlan<'a>> {
    let m = &check.matrix;
    // Facts cover every node (control planes too); workloads only workers (those not Ready are
    // judged by `not_ready`).
    let all_nodes = choice == NodeChoice::Every;
    let outside = check.probe.looks_from_outside();
    let oses: Vec<Os> = if outside && !m.to.is_empty() {
        m.to.clone()
    } else {
        from_os.to_vec()
    };
    let mut pools: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    // Light nodes: only in the first cell of an `everyNode` check's pool (their light pair).
    let mut light: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, n) in facts.nodes.iter().enumerate() {
        if n.skipped.is_none() && (all_nodes || !n.control_plane) && oses.contains(&n.os) {
            if all_nodes || sets.full.contains(&i) {
                pools.entry(n.pool()).or_default().push(i);
            } else if sets.light.contains(&i) && check.every_node {
                light.entry(n.pool()).or_default().push(i);
            }
        }
    }
    let mut groups: Vec<(String, Option<String>, Vec<usize>)> = Vec::new();
    // One cell per pool (ids never carry node names, so a baseline survives node
    // replacement); every node of the pool is judged and the worst result stands.
    // A LoadBalancer exists once per pool, over the pool's first schedulable server (deploy).
    let one_per_pool = choice == NodeChoice::OnePerPool;
    // A workload check's outcome follows the pool's build and versions, and each of its pods is
    // a real pod to schedule and start (a Windows one takes long): it runs on a few nodes per
    // pool, a different few per check, spread over the pool (the network checks visit every
    // node).
    let workload = choice == NodeChoice::Sample;
    for (pool, mut members) in pools {
        if workload {
            members = if sets.light.is_empty() {
                sample(&members, &check.name, WORKLOAD_NODES_PER_POOL)
            } else {
                workload_nodes(&members, sets, &check.name)
            };
        }
        if one_per_pool {
            let first = members.iter().copied().find(|&i| facts.nodes[i].schedulable());
            members.truncate(1);
            if let Some(i) = first {
                members = vec![i];
            }
        }
        groups.push((pool, None, members));
    }
    let mut out = Vec::new();
    for (pool, node, members) in groups {
        let mut light = light.remove(&pool).unwrap_or_default();
        for protocol in protocols {
            for variant in variants {
                let variant = match (&node, variant) {
                    (Some(n), Some(v)) => Some(format!("{v}@{n}")),
                    (Some(n), None) => Some(n.clone()),
                    (None, v) => v.clone(),
                };
                let coordinates = Coordinates {
                    source: Some(Pool::named(if outside { "external".to_string() } else { pool.clone() })),
                    destination: outside.then(|| Pool::named(pool.clone())),
                    locality: None,
                    protocol: protocol.map(|p| p.to_string()),
                    variant: variant.clone(),
                };
                let pairs = members
                    .iter()
                    .chain(std::mem::take(&mut light).iter())
                    .map(|&i| {
                        if outside {
                            Pair {
                                from: None,
                                to: Some(i),
                            }
                        } else {
                            Pair {
                                from: Some(i),
                                to: None,
                            }
                        }
                    })
                    .collect();
                out.push(CellPlan {
                    suite,
                    check,
                    coordinates,
                    placement: None,
                    protocol: *protocol,
                    variant: variant.clone(),
                    pairs,
                    fixed: None,
                    ends: Ends {
                        from: (!outside).then(|| pool.clone()),
                        to: outside.then(|| pool.clone()),
                        same_node: false,
                        nodes: Some(choice),
                    },
                });
            }
        }
    }
    out
}

/// The nodes of a pool a workload check runs on under sampled coverage: one per fact set (its
/// outcome follows the facts), then more up to [`WORKLOAD_NODES_PER_POOL`], spread.
fn workload_nodes(members: &[usize], sets: &NodeSets, name: &str) -> Vec<usize> {
    let mut by_set: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for &i in members {
        by_set
            .entry(sets.fact_set_of(i).unwrap_or_default())
            .or_default()
            .push(i);
    }
    let mut picked: Vec<usize> = by_set.values().flat_map(|group| sample(group, name, 1)).collect();
    for i in sample(members, name, WORKLOAD_NODES_PER_POOL) {
        if picked.len() >= WORKLOAD_NODES_PER_POOL.max(by_set.len()) {
            break;
        }
        if !picked.contains(&i) {
            picked.push(i);
        }
    }
    picked.sort_unstable();
    picked
}

/// Cell ids are `suite/RULE[coordinates]`; where a suite has several checks of one rule (for
/// example SVC-TYPES over headless, ExternalName and LoadBalancer services), the check's name
/// goes into the variant so that every id stays unique (JUnit names, baselines).
fn distinguish_checks_of_one_rule(cells: &mut [CellPlan<'_>]) {
    let mut checks: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    for c in cells.iter() {
        checks
            .entry((c.suite.name.as_str(), c.check.rule.as_str()))
            .or_default()
            .insert(c.check.name.as_str());
    }
    let shared: BTreeSet<(String, String)> = checks
        .into_iter()
        .filter(|(_, names)| names.len() > 1)
        .map(|((suite, rule), _)| (suite.to_string(), rule.to_string()))
        .collect();
    for c in cells.iter_mut() {
        if shared.contains(&(c.suite.name.clone(), c.check.rule.clone())) {
            let name = c.check.name.clone();
            c.coordinates.variant = Some(match c.coordinates.variant.take() {
                Some(v) => format!("{name}:{v}"),
                None => name,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rstest::rstest]
    #[case::small_pool_whole(2, 3)]
    #[case::exact(3, 3)]
    #[case::large_pool_sampled(33, 3)]
    fn workload_checks_sample_a_few_spread_nodes_per_pool(#[case] len: usize, #[case] k: usize) {
        let members: Vec<usize> = (100..100 + len).collect();
        let a = sample(&members, "secret-at-rest", k);
        assert_eq!(a.len(), len.min(k));
        assert_eq!(
            a,
            sample(&members, "secret-at-rest", k),
            "the same check samples the same nodes"
        );
        let mut distinct = a.clone();
        distinct.dedup();
        assert_eq!(distinct, a, "no node twice");
        assert!(a.iter().all(|m| members.contains(m)));
        if len > k {
            // Spread over the pool: sorted picks are about len/k apart.
            assert!(a.windows(2).all(|w| w[1] - w[0] >= len / k - 1), "{a:?}");
            let names = [
                "hostprocess",
                "run-as-username",
                "emptydir-memory",
                "build-match",
                "privileged",
            ];
            let picks: std::collections::BTreeSet<Vec<usize>> = names.iter().map(|n| sample(&members, n, k)).collect();
            assert!(picks.len() > 1, "different checks sample different nodes");
        }
    }
}
