//! One epoch of a watch — the cells planned on one membership of the cluster, its fixtures
//! deployed once — and its cycles: heal the fixtures, probe the cycle's cells, record them, and
//! diagnose over the window.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime};

use kube::api::Api;
use mixcheck_reports::{Cell, Expected, Verdict};

use super::history::{CellLine, Cycle, Writer};
use super::rotation::Rotation;
use super::{Watching, lock, names_of, nodes};
use crate::cluster::deploy::Deployment;
use crate::cluster::podwatch::PodWatch;
use crate::probes::judgement::Ctx;
use crate::run::Run;
use crate::run::judge::{Judged, judge_cells};
use crate::run::prepare::Prepared;
use crate::run::probe::{self, Probing};

/// One epoch's state between cycles.
pub(super) struct Epoch;

impl Epoch {
    /// Deploys for `run`'s facts and probes cycle after cycle. Returns the new node names when
    /// the cluster's nodes changed (a new epoch), None when `--cycles` are done.
    pub async fn run(
        w: &Watching<'_>,
        run: &Run<'_>,
        first: bool,
        cycles: &mut u64,
        history: &mut Option<Writer>,
        marks: &mut super::marks::Marks,
    ) -> Result<Option<BTreeSet<String>>, String> {
        let prepared = Prepared::new(w.plan, run.facts, run.run_id, std::time::Instant::now());
        if first {
            probe::open_namespace(run, &prepared).await?;
        } else {
            // Fixture pods are named by node position: the nodes changed, so the previous
            // epoch's pods go before this epoch's are applied (a pod cannot move to another node).
            super::heal::remove_all(&Api::namespaced(run.client.clone(), &prepared.ns), run.run_id).await;
        }
        let budget = prepared.budget(run).await;
        let probing = Probing::default();
        let workloads = probe::workloads(run, &prepared, budget);
        let permits = tokio::sync::Semaphore::new(w.plan.concurrency);
        let full = crate::run::lock(&prepared.sets).full.clone();
        let mut dep = probe::deploy_scope(run, &prepared, &full, None, workloads.pods()).await?;
        let no_fixtures = Deployment::default();
        let base = probe::base_ctx(run, &prepared, (&permits, &workloads, &no_fixtures), &probing);
        let facts = probe::read_nodes(run, &base, &dep, &probing).await;
        if facts.egress.is_none() {
            let ctx = Ctx {
                facts,
                ..base.with_fixtures(&dep)
            };
            let detected = crate::probes::connect::detect_egress(&ctx).await;
            probing.egress.send_replace(Some(detected));
        }
        record_startup(w, facts);
        let (light, rest): (Vec<usize>, Vec<usize>) =
            (0..prepared.cells.len()).partition(|&i| prepared.cells[i].check.every_node);
        let mut rotation = Rotation::new(light, rest, w.opts.interval, w.opts.full_every);
        w.progress.say(&format!(
            "{} cells: the light checks' {} every cycle, {} of the other {} per cycle",
            prepared.cells.len(),
            prepared.cells.iter().filter(|c| c.check.every_node).count(),
            rotation.share(),
            prepared.cells.iter().filter(|c| !c.check.every_node).count()
        ));
        let known = names_of(run.facts);
        record_pools(w, run.facts);
        let light: BTreeSet<usize> = (0..prepared.cells.len())
            .filter(|&i| prepared.cells[i].check.every_node)
            .collect();
        // The fixtures this epoch keeps alive: those usable once deployed (one that fails to
        // come back after a heal stays wanted, and is tried again at the next cycle).
        let wanted = super::heal::usable(&dep);
        // Fixture pods found not Ready at the last check: replaced if still so at the next.
        let mut suspects = BTreeSet::new();
        let mut first_cycle = true;
        loop {
            let began = Instant::now();
            let listed = nodes(&run.client).await;
            if let Ok(listed) = &listed {
                let names: BTreeSet<String> = listed.iter().map(|n| n.name.clone()).collect();
                if names != known {
                    return Ok(Some(names));
                }
            }
            *cycles += 1;
            let mut error = listed.as_ref().err().cloned();
            if let Ok(listed) = &listed {
                let keep = Keep {
                    wanted: &wanted,
                    unavailable: listed
                        .iter()
                        .filter(|n| !n.available())
                        .map(|n| n.name.clone())
                        .collect(),
                };
                let healing = (&full, &keep, workloads.pods());
                if let Err(e) = heal(w, run, &prepared, healing, &mut dep, &mut suspects).await {
                    error = Some(e);
                }
            }
            let judged = match &error {
                Some(_) => Vec::new(),
                None => {
                    // The first cycle settles as a run does; later ones make one connection per
                    // flow, and flows through fixtures replaced since still settle.
                    let settle = if first_cycle {
                        prepared.settle
                    } else {
                        prepared.settle.one_connection()
                    };
                    let ctx = Ctx {
                        facts,
                        settle,
                        ..base.with_fixtures(&dep)
                    };
                    let judged = probe_cycle(&ctx, &prepared, rotation.next_cycle(), w.plan.concurrency).await;
                    discount_lost_fixtures(run, &prepared, &wanted, judged).await
                }
            };
            first_cycle &= error.is_some();
            let seen = Seen {
                prepared: &prepared,
                facts,
                light: &light,
            };
            let (line, dataplane) = record(w, *cycles, began, seen, judged, (listed.ok(), error));
            if let Some(after) = w.opts.mark_after {
                let causes = lock(w.shared).causes.clone();
                let changes = marks.after(&dataplane, after, &causes);
                marks.apply(&run.client, changes, &|m| w.progress.warn(m)).await;
            }
            say_cycle(w, &line);
            if let Some(h) = history.as_mut()
                && let Err(e) = h.append(&line)
            {
                w.progress.warn(&format!("Warning: the history: {e}"));
            }
            if w.opts.cycles.is_some_and(|n| *cycles >= n) {
                return Ok(None);
            }
            tokio::time::sleep_until((began + w.opts.interval).into()).await;
        }
    }
}

/// Which fixture pods a heal keeps alive: those wanted, less those on nodes that are not Ready
/// or are cordoned (their pods cannot start there; the node's own cells show why).
struct Keep<'a> {
    wanted: &'a BTreeSet<String>,
    unavailable: BTreeSet<String>,
}

/// What a cycle's cells are read against: the plan, the facts, the light cells.
struct Seen<'a, 'p> {
    prepared: &'a Prepared<'p>,
    facts: &'a crate::cluster::facts::ClusterFacts,
    light: &'a BTreeSet<usize>,
}

/// Replaces the fixture pods that are gone or broken; whether it did. An error when the API
/// server cannot be asked.
async fn heal(
    w: &Watching<'_>,
    run: &Run<'_>,
    prepared: &Prepared<'_>,
    (full, keep, watch): (&BTreeSet<usize>, &Keep<'_>, &PodWatch),
    dep: &mut Deployment,
    suspects: &mut BTreeSet<String>,
) -> Result<bool, String> {
    let pods = Api::namespaced(run.client.clone(), &prepared.ns);
    let found = super::heal::broken(&pods, run.run_id, keep.wanted).await?;
    let found = found
        .into_iter()
        .filter(|b| b.node.as_ref().is_none_or(|n| !keep.unavailable.contains(n)))
        .collect();
    let broken = super::heal::to_replace(found, suspects);
    if broken.is_empty() {
        return Ok(false);
    }
    w.progress.say(&format!(
        "Healing the fixtures: {}",
        broken
            .iter()
            .map(|b| format!("{} ({})", b.name, b.why))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    super::heal::remove(&pods, &broken).await;
    let quiet = crate::cluster::progress::Progress::for_stderr(true);
    let again = Run {
        progress: &quiet,
        client: run.client.clone(),
        ..*run
    };
    let deadline = Instant::now() + w.plan.deadline;
    let scope = crate::cluster::deploy::Scope {
        full,
        before: None,
        applied: None,
        pods: watch,
    };
    *dep = probe::deploy_until(&again, prepared, scope, deadline).await?;
    lock(w.shared).healed += broken.len() as u64;
    Ok(true)
}

/// A fixture pod that went away while the cycle probed through it (deleted, evicted, its node
/// drained) fails the flows through it for a reason that is the watch's own, not the cluster's
/// data plane: the cycle's failures are then not counted (`error`, naming the pods), and the
/// next cycle heals the fixtures first.
async fn discount_lost_fixtures(
    run: &Run<'_>,
    prepared: &Prepared<'_>,
    wanted: &BTreeSet<String>,
    mut judged: Vec<Judgement>,
) -> Vec<Judgement> {
    let pods = Api::namespaced(run.client.clone(), &prepared.ns);
    let lost = match super::heal::broken(&pods, run.run_id, wanted).await {
        Ok(lost) if !lost.is_empty() => lost,
        _ => return judged,
    };
    let names: Vec<&str> = lost.iter().map(|b| b.name.as_str()).collect();
    for (_, cell, _) in &mut judged {
        if cell.verdict == Verdict::Fail {
            cell.verdict = Verdict::Error;
            cell.reason = Some(format!(
                "not counted: fixture pods went away during the cycle ({}); the next cycle replaces them",
                names.join(", ")
            ));
        }
    }
    judged
}

/// One cell's judgement in a cycle: its plan index, the cell, and each pair's ends and verdict.
type Judgement = crate::run::judge::Taken;

/// Judges the cycle's cells, by plan index. Each cell's workload pods are announced as used
/// again first: a watch keeps them for the next cycle (a run deletes them after their last
/// cell).
async fn probe_cycle(ctx: &Ctx<'_>, prepared: &Prepared<'_>, cells: Vec<usize>, concurrency: usize) -> Vec<Judgement> {
    let judged = Judged::default();
    let list: Vec<_> = cells
        .into_iter()
        .filter_map(|i| prepared.cells.get(i).map(|c| (i, c)))
        .collect();
    for (_, c) in &list {
        ctx.workloads.plan_uses(&crate::run::judge::pod_keys(c, ctx.facts));
    }
    judge_cells(ctx, list, concurrency, &indicatif::ProgressBar::hidden(), &judged).await;
    judged.take()
}

/// Each node's pool, from the facts.
fn record_pools(w: &Watching<'_>, facts: &crate::cluster::facts::ClusterFacts) {
    let mut b = lock(w.shared);
    for n in &facts.nodes {
        b.nodes.entry(n.name.clone()).or_default().pool = mixcheck_reports::Pool::of(n.os, n.build).to_string();
    }
}

/// The fixtures' start-up per node and image, from the nodes' facts.
fn record_startup(w: &Watching<'_>, facts: &crate::cluster::facts::ClusterFacts) {
    let mut b = lock(w.shared);
    for (node, n) in &facts.report.nodes {
        for pod in &n.startup {
            for pull in &pod.pulls {
                let s = b.startup.entry((node.clone(), pull.image.clone())).or_default();
                let secs = |ms: Option<u64>| ms.map(|m| m as f64 / 1000.0);
                s.pull = Some(s.pull.unwrap_or(0.0).max(secs(pull.pull_ms).unwrap_or(0.0)));
                if let Some(v) = secs(pod.sandbox_ms) {
                    s.sandbox = Some(s.sandbox.unwrap_or(0.0).max(v));
                }
                if let Some(v) = secs(pod.ready_ms) {
                    s.total = Some(s.total.unwrap_or(0.0).max(v));
                }
            }
        }
    }
}

/// Records a cycle's cells on the board (ledger, latencies, nodes), diagnoses over the window,
/// and gives the cycle's history line and whether each node's light cells all worked.
fn record(
    w: &Watching<'_>,
    n: u64,
    began: Instant,
    seen: Seen<'_, '_>,
    judged: Vec<Judgement>,
    (listed, error): (Option<Vec<super::NodeSeen>>, Option<String>),
) -> (Cycle, BTreeMap<String, bool>) {
    let now = SystemTime::now();
    let mut b = lock(w.shared);
    let dataplane = dataplane(&judged, seen.light, seen.facts);
    let mut cells: Vec<(usize, Cell)> = judged.into_iter().map(|(i, c, _)| (i, c)).collect();
    within_boundaries(&mut cells, &b.ledger);
    let mut lines = Vec::new();
    for (i, cell) in cells {
        let labels = match seen.prepared.cells.get(i) {
            Some(plan) => super::ledger::CellLabels::of(&cell).with_nodes(planned_nodes(plan, seen.facts)),
            None => super::ledger::CellLabels::of(&cell),
        };
        b.observe_probe(
            &cell.category,
            &labels.from_pool,
            &labels.to_pool,
            cell.duration_ms as f64 / 1000.0,
        );
        b.documented
            .insert(labels.cell.clone(), cell.expected.kind == Expected::Works);
        lines.push(history_line(&cell, &labels));
        b.ledger.record(cell, labels, (now, w.opts.flake_window));
    }
    b.ledger.forget_before(now, w.opts.flake_window);
    for node in listed.into_iter().flatten() {
        let state = b.nodes.entry(node.name.clone()).or_default();
        state.ready = node.ready;
        if let Some(ok) = dataplane.get(&node.name) {
            state.dataplane_ok = Some(*ok);
        }
    }
    let causes = diagnose(w, &mut b, seen.facts);
    b.cycles += 1;
    if error.is_some() {
        b.cycle_errors += 1;
    }
    b.ready = error.is_none();
    let took = began.elapsed();
    b.cycle_duration.observe(took.as_secs_f64());
    b.last_cycle = now.duration_since(SystemTime::UNIX_EPOCH).ok().map(|d| d.as_secs_f64());
    let cycle = Cycle {
        cycle: n,
        at: chrono::DateTime::<chrono::Utc>::from(now).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        cells: lines,
        causes,
        error,
    };
    (cycle, dataplane)
}

/// A cell's line in the history.
fn history_line(cell: &Cell, labels: &super::ledger::CellLabels) -> CellLine {
    CellLine {
        cell: labels.cell.clone(),
        check: format!("{}/{}", cell.suite, cell.check),
        variant: [&cell.coordinates.protocol, &cell.coordinates.variant]
            .into_iter()
            .flatten()
            .filter(|v| **v != cell.check)
            .cloned()
            .collect::<Vec<_>>()
            .join(" "),
        from_node: labels.from_node.clone(),
        to_node: labels.to_node.clone(),
        verdict: cell.verdict.as_str().to_string(),
        ms: cell.duration_ms,
    }
}

/// The nodes a cell's plan pairs start from and go to, by name: the cell's series keep them
/// whatever one cycle's observation lists.
fn planned_nodes(
    plan: &crate::run::cells::CellPlan<'_>,
    facts: &crate::cluster::facts::ClusterFacts,
) -> (Vec<String>, Vec<String>) {
    let name = |i: Option<usize>| i.and_then(|i| facts.nodes.get(i)).map(|n| n.name.clone());
    let from = plan.pairs.iter().filter_map(|p| name(p.from)).collect();
    let to = plan.pairs.iter().filter_map(|p| name(p.to)).collect();
    (from, to)
}

/// Per node, whether its light cells' pairs all worked this cycle: a failing pair counts
/// against the node it starts from (or goes to, for a flow from outside).
fn dataplane(
    judged: &[Judgement],
    light: &BTreeSet<usize>,
    facts: &crate::cluster::facts::ClusterFacts,
) -> BTreeMap<String, bool> {
    let mut out: BTreeMap<String, bool> = BTreeMap::new();
    for (_, _, pairs) in judged.iter().filter(|(i, _, _)| light.contains(i)) {
        for (pair, verdict) in pairs {
            let Some(node) = pair.from.or(pair.to).and_then(|i| facts.nodes.get(i)) else {
                continue;
            };
            let ok = out.entry(node.name.clone()).or_insert(true);
            *ok &= *verdict != Verdict::Fail;
        }
    }
    out
}

/// Support boundaries (`run/boundary.rs`) over the cycle's cells, with the latest boundary cells
/// of earlier cycles: a failing cell of a node outside a boundary is `indeterminate`, as in a run.
fn within_boundaries(cells: &mut [(usize, Cell)], ledger: &super::ledger::Ledger) {
    let mut all: Vec<Cell> = ledger
        .cells
        .values()
        .map(|r| r.last.clone())
        .filter(|c| crate::run::boundary::BOUNDARY_RULES.contains(&c.rule_id.as_str()))
        .filter(|c| !cells.iter().any(|(_, x)| x.id == c.id))
        .collect();
    let earlier = all.len();
    all.extend(cells.iter().map(|(_, c)| c.clone()));
    crate::run::boundary::apply(&mut all);
    for ((_, cell), judged) in cells.iter_mut().zip(all.into_iter().skip(earlier)) {
        *cell = judged;
    }
}

/// The diagnosis over the window: the causes on the board, and as `cause@node N %` lines.
fn diagnose(w: &Watching<'_>, b: &mut super::board::Board, facts: &crate::cluster::facts::ClusterFacts) -> Vec<String> {
    let mut report = w.template.clone();
    report.facts = facts.report.clone();
    report.cells = b.ledger.for_diagnosis();
    let diagnosis = crate::triage::diagnose::diagnose(&report, &w.plan.causes, Vec::new(), false);
    b.causes.clear();
    let mut lines = Vec::new();
    for c in &diagnosis.causes {
        let nodes: Vec<String> = if c.nodes.is_empty() {
            vec![String::new()]
        } else {
            c.nodes.clone()
        };
        for node in nodes {
            b.causes
                .insert((c.id.clone(), node.clone()), f64::from(c.confidence) / 100.0);
            lines.push(if node.is_empty() {
                format!("{} {} %", c.id, c.confidence)
            } else {
                format!("{}@{node} {} %", c.id, c.confidence)
            });
        }
    }
    lines
}

/// One progress line per cycle.
fn say_cycle(w: &Watching<'_>, c: &Cycle) {
    if let Some(e) = &c.error {
        w.progress.warn(&format!("cycle {}: could not probe: {e}", c.cycle));
        return;
    }
    let failing = c.cells.iter().filter(|l| l.verdict == "fail").count();
    let flaky = lock(w.shared)
        .ledger
        .cells
        .values()
        .filter(|r| r.state() == "flaky")
        .count();
    let mut line = format!(
        "cycle {}: {} cells in {}; {failing} failing, {flaky} flaky",
        c.cycle,
        c.cells.len(),
        crate::cluster::duration::human(Duration::from_millis(c.duration_ms))
    );
    if !c.causes.is_empty() {
        line.push_str(&format!("; likely: {}", c.causes.join(", ")));
    }
    w.progress.say(&line);
}
