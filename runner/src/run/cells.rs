//! Planning the cells: every selected check expanded over the cluster's pools (node pairs
//! sampled to cover each node, a few nodes per pool for workload checks), each cell with a
//! unique id.

use std::collections::{BTreeMap, BTreeSet};

use mixcheck_reports::cell::{Coordinates, Locality, Pool};
use mixcheck_reports::{Os, Verdict};

use crate::catalogue::suite::{Check, Pairs, Placement, Protocol, Suite};
use crate::cluster::facts::{ClusterFacts, ClusterNode};
use crate::probes::judgement::Pair;
use crate::probes::{NodeChoice, Shape};
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

/// A cell before probing.
#[derive(Debug)]
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

/// Expands the selected checks over the cluster's pools.
pub(super) fn plan_cells<'a>(plan: &'a RunPlan, facts: &ClusterFacts) -> Vec<CellPlan<'a>> {
    // Workers that are not Ready stay in their pools: their cells say the node is down (see
    // `not_ready`) instead of vanishing from the report.
    let nodes: Vec<(usize, &ClusterNode)> = facts.nodes.iter().enumerate().filter(|(_, n)| n.probed()).collect();
    let mut pools: BTreeMap<String, (Os, Vec<usize>)> = BTreeMap::new();
    for (i, n) in &nodes {
        pools.entry(n.pool()).or_insert((n.os, Vec::new())).1.push(*i);
    }
    let pools_of = |os: &[Os]| -> Vec<(String, Os, Vec<usize>)> {
        pools
            .iter()
            .filter(|(_, (o, _))| os.contains(o))
            .map(|(p, (o, n))| (p.clone(), *o, n.clone()))
            .collect()
    };
    let mut cells = Vec::new();
    for (suite, check) in plan.checks() {
        let m = &check.matrix;
        let from_os = if m.from.is_empty() {
            vec![Os::Linux, Os::Windows]
        } else {
            m.from.clone()
        };
        let protocols: Vec<Option<Protocol>> = if m.protocol.is_empty() {
            vec![None]
        } else {
            m.protocol.iter().copied().map(Some).collect()
        };
        let placements: Vec<Option<Placement>> = if m.placement.is_empty() {
            vec![None]
        } else {
            m.placement.iter().copied().map(Some).collect()
        };
        let variants: Vec<Option<String>> = if m.variant.is_empty() {
            vec![None]
        } else {
            m.variant.iter().cloned().map(Some).collect()
        };
        if let Shape::Nodes(choice) = check.probe.shape() {
            cells.extend(node_cells(suite, check, choice, facts, &from_os, &protocols, &variants));
            continue;
        }
        let to_pools: Option<Vec<(String, Os, Vec<usize>)>> = (!m.to.is_empty()).then(|| pools_of(&m.to));
        for (fp, fos, fnodes) in pools_of(&from_os) {
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
                for placement in &placements {
                    if *placement == Some(Placement::SameNode) && tp.as_deref().is_some_and(|t| t != fp) {
                        continue;
                    }
                    for protocol in &protocols {
                        for variant in &variants {
                            let same = *placement == Some(Placement::SameNode) || tp.is_none() && placement.is_none();
                            let pairs = sample_pairs(&fnodes, &tnodes, same);
                            // Without a `to` list: the probe's own target, or its own pool's
                            // service or pods.
                            let dest_pool = Some(match (&tp, check.probe.own_destination()) {
                                (Some(t), _) => Pool::named(t.clone()),
                                (None, Some(own)) => Pool::named(own),
                                (None, None) => Pool::named(fp.clone()),
                            });
                            let coordinates = Coordinates {
                                source: Some(Pool::named(fp.clone())),
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
                                        tp.clone().unwrap_or_default()
                                    ),
                                ))
                            } else {
                                None
                            };
                            cells.push(CellPlan {
                                suite,
                                check,
                                coordinates,
                                placement: *placement,
                                protocol: *protocol,
                                variant: variant.clone(),
                                pairs,
                                fixed,
                            });
                        }
                    }
                }
            }
        }
    }
    distinguish_checks_of_one_rule(&mut cells);
    cells
}

/// Cells of checks about nodes: one per pool of `from` (or `to` for probes from outside); the
/// nodes `choice` picks are judged and the worst result stands.
fn node_cells<'a>(
    suite: &'a Suite,
    check: &'a Check,
    choice: NodeChoice,
    facts: &ClusterFacts,
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
    for (i, n) in facts.nodes.iter().enumerate() {
        if n.skipped.is_none() && (all_nodes || !n.control_plane) && oses.contains(&n.os) {
            pools.entry(n.pool()).or_default().push(i);
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
            members = sample(&members, &check.name, WORKLOAD_NODES_PER_POOL);
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
                });
            }
        }
    }
    out
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
