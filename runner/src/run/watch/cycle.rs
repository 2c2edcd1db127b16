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
use crate::probes::judgement::Ctx;
use crate::probes::settle::Settle;
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
    ) -> Result<Option<BTreeSet<String>>, String> {
        let prepared = Prepared::new(w.plan, run.facts, run.run_id, std::time::Instant::now());
        if first {
            probe::open_namespace(run, &prepared).await?;
        }
        let budget = prepared.budget(run).await;
        let probing = Probing::default();
        let workloads = probe::workloads(run, &prepared, budget);
        let permits = tokio::sync::Semaphore::new(w.plan.concurrency);
        let full = crate::run::lock(&prepared.sets).full.clone();
        let mut dep = probe::deploy_scope(run, &prepared, &full, None).await?;
        let no_fixtures = Deployment::default();
        let base = Ctx {
            permits: &permits,
            client: run.client.clone(),
            workloads: &workloads,
            pods: Api::namespaced(run.client.clone(), &prepared.ns),
            facts: run.facts,
            dep: &no_fixtures,
            ns: &prepared.ns,
            causes: &w.plan.causes,
            settle: prepared.settle,
            clock: prepared.clock,
            egress: &probing.egress,
            outside: &w.plan.outside,
            reach: &probing.reach,
        };
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
        // The first cycle settles, as a run does, from when the fixtures were ready; later ones
        // judge one attempt each.
        let mut settle = prepared.settle;
        loop {
            let began = Instant::now();
            let listed = nodes(&run.client).await;
            if let Ok(listed) = &listed {
                let names: BTreeSet<String> = listed.iter().map(|(n, _)| n.clone()).collect();
                if names != known {
                    return Ok(Some(names));
                }
            }
            *cycles += 1;
            let mut error = listed.as_ref().err().cloned();
            if error.is_none()
                && let Err(e) = heal(w, run, &prepared, &full, &mut dep).await
            {
                error = Some(e);
            }
            let judged = match &error {
                Some(_) => Vec::new(),
                None => {
                    let ctx = Ctx {
                        facts,
                        settle,
                        ..base.with_fixtures(&dep)
                    };
                    let judged = probe_cycle(&ctx, &prepared, rotation.next_cycle(), w.plan.concurrency).await;
                    discount_lost_fixtures(run, &prepared, &dep, judged).await
                }
            };
            if error.is_none() {
                settle = Settle::ONE_ATTEMPT;
            }
            let line = record(w, *cycles, began, (judged, &light), listed.ok(), error);
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

/// Replaces the fixture pods that are gone or broken; whether it did. An error when the API
/// server cannot be asked.
async fn heal(
    w: &Watching<'_>,
    run: &Run<'_>,
    prepared: &Prepared<'_>,
    full: &BTreeSet<usize>,
    dep: &mut Deployment,
) -> Result<bool, String> {
    let pods = Api::namespaced(run.client.clone(), &prepared.ns);
    let wanted = super::heal::usable(dep);
    let broken = super::heal::broken(&pods, run.run_id, &wanted).await?;
    if broken.is_empty() {
        return Ok(false);
    }
    w.progress.say(&format!(
        "Healing the fixtures: {}",
        broken
            .iter()
            .map(|(n, why)| format!("{n} ({why})"))
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
    *dep = probe::deploy_until(&again, prepared, full, None, deadline).await?;
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
    dep: &Deployment,
    mut judged: Vec<(usize, Cell)>,
) -> Vec<(usize, Cell)> {
    let pods = Api::namespaced(run.client.clone(), &prepared.ns);
    let lost = match super::heal::broken(&pods, run.run_id, &super::heal::usable(dep)).await {
        Ok(lost) if !lost.is_empty() => lost,
        _ => return judged,
    };
    let names: Vec<&str> = lost.iter().map(|(n, _)| n.as_str()).collect();
    for (_, cell) in &mut judged {
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

/// Judges the cycle's cells, by plan index.
async fn probe_cycle(
    ctx: &Ctx<'_>,
    prepared: &Prepared<'_>,
    cells: Vec<usize>,
    concurrency: usize,
) -> Vec<(usize, Cell)> {
    let judged = Judged::default();
    let list = cells
        .into_iter()
        .filter_map(|i| prepared.cells.get(i).map(|c| (i, c)))
        .collect();
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
/// and gives the cycle's history line.
fn record(
    w: &Watching<'_>,
    n: u64,
    began: Instant,
    (judged, light): (Vec<(usize, Cell)>, &BTreeSet<usize>),
    listed: Option<Vec<(String, bool)>>,
    error: Option<String>,
) -> Cycle {
    let now = SystemTime::now();
    let mut b = lock(w.shared);
    let mut lines = Vec::new();
    // Per node: whether its light data-plane cells all worked this cycle.
    let mut dataplane: BTreeMap<String, bool> = BTreeMap::new();
    for (i, cell) in judged {
        let labels = super::ledger::CellLabels::of(&cell);
        b.observe_probe(
            &cell.category,
            &labels.from_pool,
            &labels.to_pool,
            cell.duration_ms as f64 / 1000.0,
        );
        b.documented
            .insert(labels.cell.clone(), cell.expected.kind == Expected::Works);
        if light.contains(&i) {
            for node in labels.from_node.split(',').filter(|n| !n.is_empty()) {
                let ok = dataplane.entry(node.to_string()).or_insert(true);
                *ok &= cell.verdict != Verdict::Fail;
            }
        }
        lines.push(CellLine {
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
        });
        b.ledger.record(cell, now, w.opts.flake_window);
    }
    b.ledger.forget_before(now, w.opts.flake_window);
    if let Some(listed) = listed {
        for (name, ready) in listed {
            let pool = b.nodes.get(&name).map(|s| s.pool.clone()).unwrap_or_default();
            let state = b.nodes.entry(name.clone()).or_default();
            state.ready = ready;
            state.pool = pool;
            if let Some(ok) = dataplane.get(&name) {
                state.dataplane_ok = Some(*ok);
            }
        }
    }
    let causes = diagnose(w, &mut b);
    b.cycles += 1;
    if error.is_some() {
        b.cycle_errors += 1;
    } else {
        b.ready = true;
    }
    let took = began.elapsed();
    b.cycle_duration.observe(took.as_secs_f64());
    b.last_cycle = now.duration_since(SystemTime::UNIX_EPOCH).ok().map(|d| d.as_secs_f64());
    Cycle {
        cycle: n,
        at: chrono::DateTime::<chrono::Utc>::from(now).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        cells: lines,
        causes,
        error,
    }
}

/// The diagnosis over the window: the causes on the board, and as `cause@node N %` lines.
fn diagnose(w: &Watching<'_>, b: &mut super::board::Board) -> Vec<String> {
    let mut report = w.template.clone();
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
