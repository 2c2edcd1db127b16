//! The evidence stage of a run: while the fixtures still run, what the API says about the nodes
//! failing cells were seen on, the Windows nodes' own readings of them, and with
//! `--node-diagnostics` the confirmation commands of what each is suspected of.

use std::time::Instant;

use mixcheck_reports::{Cell, NodeEvidence, RunReport};

use crate::cluster::deploy;
use crate::cluster::facts::{ClusterFacts, ClusterNode};
use crate::probes::hostfacts::{self, Reading};
use crate::run::Run;
use crate::triage::diagnose;

/// Evidence about every node a failing cell names; none when no cell fails.
pub(super) async fn gather(
    run: &Run<'_>,
    report: &RunReport,
    facts: &ClusterFacts,
    ns: &str,
    cells: &[Cell],
    readings: Option<&Vec<Reading>>,
    pods: Option<&crate::run::discriminate::Pods>,
) -> Vec<NodeEvidence> {
    let implicated = diagnose::implicated_nodes(cells);
    if implicated.is_empty() {
        return Vec::new();
    }
    let nodes: Vec<&ClusterNode> = facts.nodes.iter().filter(|n| implicated.contains(&n.name)).collect();
    run.say(&format!(
        "Gathering evidence about {} node{} with failing cells…",
        nodes.len(),
        if nodes.len() == 1 { "" } else { "s" }
    ));
    let gathering = Instant::now();
    let mut evidence = crate::triage::evidence::gather(&run.client, ns, &nodes).await;
    if let Some(read) = readings {
        for e in &mut evidence {
            let proxy = facts.report.service_proxy.as_ref().map(|p| p.value.as_str());
            e.items.extend(hostfacts::evidence(read, &e.node, proxy));
        }
    }
    // Before ranking: where another cause explains the same cells as well, what tells them apart.
    if let Some(pods) = pods {
        crate::run::discriminate::observe(run, report, facts, ns, cells, pods, &mut evidence).await;
    }
    if run.plan.node_diagnostics {
        diagnose_nodes(run, report, facts, ns, cells, &mut evidence).await;
    }
    run.say(&format!(
        "Evidence gathered in {:.1}s",
        gathering.elapsed().as_secs_f64()
    ));
    evidence
}

/// `--node-diagnostics`: what each implicated node is suspected of, from the cells and the
/// evidence so far; only the nodes a likely cause is localised to (or that are not Ready) get a
/// privileged pod — not every other end of a failing flow — with the commands of their suspects.
async fn diagnose_nodes(
    run: &Run<'_>,
    report: &RunReport,
    facts: &ClusterFacts,
    ns: &str,
    cells: &[Cell],
    evidence: &mut Vec<NodeEvidence>,
) {
    let implicated = diagnose::implicated_nodes(cells);
    let mut so_far = RunReport::new("", "", report.target.clone(), report.started_at);
    so_far.facts = facts.report.clone();
    so_far.cells = cells.to_vec();
    let suspects = diagnose::suspects(&so_far, &run.plan.causes, evidence);
    let on: Vec<_> = facts
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            let suspected = suspects.get(&n.name).cloned().unwrap_or_default();
            (implicated.contains(&n.name) && (!suspected.is_empty() || !n.ready))
                .then(|| (i, n, diagnose::node_vars(&facts.report, &n.name), suspected))
        })
        .collect();
    crate::triage::diagnostics::run(
        &run.client,
        ns,
        &deploy::run_labels(run.run_id),
        run.fixtures,
        &run.plan.registry,
        &run.plan.causes,
        &on,
        evidence,
        &|m| run.say(m),
    )
    .await;
}
