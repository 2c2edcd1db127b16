//! Judging the cells: cells and their pairs side by side within the run's probe slots, one
//! connection or resolve pair probed and judged against its expectation, the worst pair standing
//! for the cell.

use std::time::Instant;

use futures::StreamExt as _;
use mixcheck_reports::cell::{Coordinates, Expectation as CellExpectation, NodeRef, NodeRole, Observed};
use mixcheck_reports::evidence::{Evidence, Excerpt};
use mixcheck_reports::verdict::Expected;
use mixcheck_reports::{Cell, CellId, Verdict};

use crate::cluster::facts::{ClusterFacts, ClusterNode};
use crate::probes::judgement::{self, Case, Ctx, Pair, PairJudgement};
use crate::probes::transport;

use super::cells::CellPlan;

/// Pairs of one cell probed at once (inside the run's `--concurrency` cells).
const PAIRS_AT_ONCE: usize = 8;

/// Cells in progress per probe slot (`--concurrency`): most of a cell's time is waiting for
/// pods, which takes no slot.
const CELLS_PER_PROBE_SLOT: usize = 4;

/// Judges cells side by side, unordered (a slow cell does not hold the slots of the fast ones
/// behind it); each result keeps its plan index. Workload cells go first: their pods take the
/// longest to show what they do, and waiting for them holds no probe slot, so the quick
/// network cells fill the time around them.
/// Each judged cell goes into `judged` by its plan index as soon as it is judged, so a run that
/// stops early (its deadline) keeps what it judged.
pub(super) async fn judge_cells<'p>(
    ctx: &Ctx<'_>,
    mut cells: Vec<(usize, &CellPlan<'p>)>,
    concurrency: usize,
    bar: &indicatif::ProgressBar,
    judged: &Judged,
) {
    cells.sort_by_key(|(i, c)| (!c.check.probe.waits_for_pods(), *i));
    futures::stream::iter(cells)
        .for_each_concurrent(concurrency.saturating_mul(CELLS_PER_PROBE_SLOT), |(i, c)| async move {
            let (pairs, took) = judge_pairs(ctx, c, &c.pairs, i).await;
            let cell = assemble(c, &pairs, ctx.facts, ctx.ns, Some(ctx.causes), took);
            ctx.workloads.cell_done(&pod_keys(c, ctx.facts)).await;
            bar.inc(1);
            bar.set_message(cell.id.as_str().to_string());
            judged.record(i, cell, pairs);
        })
        .await;
}

/// Starts, for the first pairs of `cells` whose probe creates its own pods (as many as the
/// cells judged at once), those pods ahead of the cells' turn
/// ([`crate::probes::Probe::prestart`]): they start while the shared fixtures are awaited, and
/// each pair takes its own when it is judged. Every one is parked in the first poll, before any
/// cell can ask for it; the other pairs start their pods in their turn.
pub(super) async fn prestart_cells<'p>(ctx: &Ctx<'_>, cells: &[(usize, &CellPlan<'p>)], concurrency: usize) {
    let cases = cells
        .iter()
        .filter(|(_, c)| c.fixed.is_none() && c.check.probe.starts_ahead())
        .flat_map(|(i, c)| {
            c.pairs.iter().map(move |pair| Case {
                check: c.check,
                placement: c.placement,
                protocol: c.protocol,
                variant: c.variant.as_deref(),
                pair: *pair,
                index: *i,
            })
        });
    let cases: Vec<Case<'_>> = cases.take(concurrency.saturating_mul(CELLS_PER_PROBE_SLOT)).collect();
    futures::future::join_all(cases.iter().map(|case| case.check.probe.prestart(ctx, case))).await;
}

/// Judges `more` pairs of cells already judged (nodes promoted to every check) and the cells
/// again over all their pairs.
pub(super) async fn judge_more<'p>(
    ctx: &Ctx<'_>,
    plans: &[CellPlan<'p>],
    more: Vec<(usize, Vec<Pair>)>,
    concurrency: usize,
    judged: &Judged,
) {
    let planned: Vec<(usize, CellPlan<'p>)> = more
        .into_iter()
        .filter_map(|(i, pairs)| {
            let mut plan = plans.get(i)?.clone();
            plan.pairs = pairs;
            Some((i, plan))
        })
        .collect();
    for (_, plan) in &planned {
        ctx.workloads.plan_uses(&pod_keys(plan, ctx.facts));
    }
    futures::stream::iter(planned.iter())
        .for_each_concurrent(
            concurrency.saturating_mul(CELLS_PER_PROBE_SLOT),
            |(i, plan)| async move {
                let (fresh, took) = judge_pairs(ctx, plan, &plan.pairs, *i).await;
                ctx.workloads.cell_done(&pod_keys(plan, ctx.facts)).await;
                let mut all = judged.take_pairs(*i);
                all.extend(fresh);
                let cell = assemble(plan, &all, ctx.facts, ctx.ns, Some(ctx.causes), took);
                judged.record(*i, cell, all);
            },
        )
        .await;
}

/// The exec fixture pods a cell may use, over its pairs' nodes.
pub(super) fn pod_keys(c: &CellPlan<'_>, facts: &ClusterFacts) -> Vec<String> {
    if c.fixed.is_some() {
        return Vec::new();
    }
    let mut keys: Vec<String> = c
        .pairs
        .iter()
        .flat_map(|p| [p.from, p.to])
        .flatten()
        .filter_map(|i| facts.nodes.get(i))
        .flat_map(|n| c.check.probe.pod_keys(&n.name))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// A cell taken out of [`Judged`]: its plan index, the cell, and each pair's ends and verdict.
pub(super) type Taken = (usize, Cell, Vec<(Pair, Verdict)>);

/// A judged cell and the judgements of its pairs.
type Entry = (Cell, Vec<(Pair, PairJudgement)>);

/// The cells judged so far, by plan index, with their pairs' judgements.
#[derive(Default)]
pub(super) struct Judged(std::sync::Mutex<std::collections::BTreeMap<usize, Entry>>);

impl Judged {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<usize, Entry>> {
        match self.0.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn record(&self, index: usize, cell: Cell, pairs: Vec<(Pair, PairJudgement)>) {
        self.lock().insert(index, (cell, pairs));
    }

    fn take_pairs(&self, index: usize) -> Vec<(Pair, PairJudgement)> {
        self.lock()
            .get_mut(&index)
            .map(|(_, pairs)| std::mem::take(pairs))
            .unwrap_or_default()
    }

    /// The nodes of `candidates` at either end of a pair judged `fail` or `error` in the cells
    /// `of` selects.
    pub(super) fn failing_nodes(
        &self,
        of: impl Fn(usize) -> bool,
        candidates: &std::collections::BTreeSet<usize>,
    ) -> std::collections::BTreeSet<usize> {
        self.lock()
            .iter()
            .filter(|(i, _)| of(**i))
            .flat_map(|(_, (_, pairs))| pairs.iter())
            .filter(|(_, j)| matches!(j.verdict, Verdict::Fail | Verdict::Error))
            .flat_map(|(p, _)| [p.from, p.to])
            .flatten()
            .filter(|n| candidates.contains(n))
            .collect()
    }

    /// The cells judged so far, by plan index, with each pair's ends and verdict, taken out (a
    /// watch cycle's cells).
    pub(super) fn take(&self) -> Vec<Taken> {
        std::mem::take(&mut *self.lock())
            .into_iter()
            .map(|(i, (cell, pairs))| (i, cell, pairs.into_iter().map(|(p, j)| (p, j.verdict)).collect()))
            .collect()
    }

    /// Every planned cell: the judged ones, and an `error` saying `why` for each of the others.
    pub(super) fn all_or(&self, plans: &[CellPlan<'_>], facts: &ClusterFacts, ns: &str, why: &str) -> Vec<Cell> {
        let map = std::mem::take(&mut *self.lock());
        plans
            .iter()
            .enumerate()
            .map(|(i, plan)| match map.get(&i) {
                Some((cell, _)) => cell.clone(),
                None => {
                    let pairs = if plan.pairs.is_empty() {
                        vec![Pair { from: None, to: None }]
                    } else {
                        plan.pairs.clone()
                    };
                    let judged: Vec<(Pair, PairJudgement)> = pairs
                        .into_iter()
                        .map(|p| (p, judgement::judgement(Verdict::Error, why.to_string())))
                        .collect();
                    assemble(plan, &judged, facts, ns, None, std::time::Duration::ZERO)
                }
            })
            .collect()
    }
}

fn node_ref(n: &ClusterNode, role: NodeRole) -> NodeRef {
    NodeRef {
        name: n.name.clone(),
        os: n.os,
        build: n.build,
        role,
    }
}

/// Judges `pairs` of a cell (side by side: a pool of many nodes is many probes), in order.
async fn judge_pairs(
    ctx: &Ctx<'_>,
    plan: &CellPlan<'_>,
    pairs: &[Pair],
    index: usize,
) -> (Vec<(Pair, PairJudgement)>, std::time::Duration) {
    let clock = Instant::now();
    let mut judged: Vec<(Pair, PairJudgement)> = Vec::new();
    if let Some((verdict, why)) = &plan.fixed {
        judged.push((
            Pair { from: None, to: None },
            judgement::judgement(*verdict, why.clone()),
        ));
    } else {
        let mut done: Vec<(usize, Pair, PairJudgement)> = futures::stream::iter(pairs.iter().enumerate())
            .map(|(k, pair)| async move {
                let case = Case {
                    check: plan.check,
                    placement: plan.placement,
                    protocol: plan.protocol,
                    variant: plan.variant.as_deref(),
                    pair: *pair,
                    index,
                };
                let j = judgement::judge(ctx, &case).await;
                (k, *pair, j)
            })
            .buffer_unordered(PAIRS_AT_ONCE)
            .collect()
            .await;
        done.sort_by_key(|(k, ..)| *k);
        judged.extend(done.into_iter().map(|(_, p, j)| (p, j)));
    }
    (judged, clock.elapsed())
}

/// For a cell of a node-scoped rule (a `fact` probe: every node of the pool judged on its own)
/// whose worst verdict breaks the rule (`fail`, `warn`, `error`): the nodes with that verdict and
/// an observation naming them, "2 of 40 nodes: win-a: …; win-b: …" (each node's own value).
/// The cell's id stays pool-based, so a baseline survives node replacement.
type Breakers = (Vec<(Option<usize>, Option<usize>)>, String);

fn breaking_nodes(
    plan: &CellPlan<'_>,
    judged: &[(Pair, PairJudgement)],
    worst: Option<Verdict>,
    facts: &ClusterFacts,
) -> Option<Breakers> {
    let worst = worst?;
    let scoped = matches!(plan.check.probe, crate::catalogue::suite::Probe::Fact { .. }) && plan.fixed.is_none();
    if !scoped || !matches!(worst, Verdict::Fail | Verdict::Warn | Verdict::Error) {
        return None;
    }
    let judged_nodes = judged
        .iter()
        .filter(|(p, _)| p.from.or(p.to).and_then(|i| facts.nodes.get(i)).is_some())
        .count();
    let broken: Vec<&(Pair, PairJudgement)> = judged.iter().filter(|(_, j)| j.verdict == worst).collect();
    let keep = broken.iter().map(|(p, _)| (p.from, p.to)).collect();
    let seen: Vec<&str> = broken.iter().map(|(_, j)| j.summary.as_str()).collect();
    let noun = if judged_nodes == 1 { "node" } else { "nodes" };
    Some((
        keep,
        format!("{} of {judged_nodes} {noun}: {}", broken.len(), seen.join("; ")),
    ))
}

/// The nodes one judged pair was observed on: its source and destination, then the other
/// backends its failed request may have been lost on (destinations too), each once.
fn pair_nodes(pair: &Pair, j: &PairJudgement, facts: &ClusterFacts) -> Vec<NodeRef> {
    let ends = [(pair.from, NodeRole::Source), (pair.to, NodeRole::Destination)]
        .into_iter()
        .filter_map(|(idx, role)| idx.and_then(|i| facts.nodes.get(i)).map(|n| node_ref(n, role)));
    let backends = j
        .backends
        .iter()
        .filter_map(|name| facts.nodes.iter().find(|n| &n.name == name))
        .map(|n| node_ref(n, NodeRole::Destination));
    let mut refs: Vec<NodeRef> = Vec::new();
    for r in ends.chain(backends) {
        if !refs.contains(&r) {
            refs.push(r);
        }
    }
    refs
}

/// The cell of judged pairs: the worst pair stands for it; its remedy is the check's for the
/// failure class, or the node's cause's where a pod never got a sandbox.
fn assemble(
    plan: &CellPlan<'_>,
    judged: &[(Pair, PairJudgement)],
    facts: &ClusterFacts,
    ns: &str,
    causes: Option<&crate::catalogue::causes::Catalogue>,
    took: std::time::Duration,
) -> Cell {
    let check = plan.check;
    // The cell takes the worst of its pairs.
    let worst = judged.iter().min_by_key(|(_, j)| j.verdict.rank()).map(|(p, _)| *p);
    let worst_verdict = judged.iter().map(|(_, j)| j.verdict).min_by_key(|v| v.rank());
    // A node-scoped rule (a fact about each node) names exactly the nodes that break it.
    let breakers = breaking_nodes(plan, judged, worst_verdict, facts);
    let mut nodes = Vec::new();
    for (pair, pj) in judged
        .iter()
        .filter(|(p, _)| breakers.as_ref().is_none_or(|(keep, _)| keep.contains(&(p.from, p.to))))
    {
        for r in pair_nodes(pair, pj, facts) {
            if !nodes.contains(&r) {
                nodes.push(r);
            }
        }
    }
    let fallback;
    let (worst_pair, j) = match judged
        .iter()
        .find(|(p, _)| Some((p.from, p.to)) == worst.map(|w| (w.from, w.to)))
    {
        Some((p, j)) => (*p, j),
        None => {
            fallback = judgement::judgement(Verdict::Error, "no pair was judged".into());
            (Pair { from: None, to: None }, &fallback)
        }
    };
    let summary = match breakers {
        Some((_, summary)) => summary,
        None => j.summary.clone(),
    };
    let id = CellId::new(&plan.suite.name, &check.rule, &plan.coordinates).unwrap_or_else(|_| {
        CellId::new(&plan.suite.name, &check.rule, &Coordinates::default()).unwrap_or_else(|_| {
            // Suite and rule names are validated kebab-case and catalogue ids; this cannot fail.
            CellId::new("invalid", "INVALID", &Coordinates::default()).unwrap_or_else(|e| panic!("cell id: {e}"))
        })
    });
    let remedy = match (j.verdict, j.class) {
        _ if j.remedy.is_some() => j.remedy.clone(),
        (Verdict::Fail | Verdict::Error | Verdict::KnownLimitation | Verdict::Warn, class) => {
            let own = class
                .and_then(|c| check.remedy.get(&c))
                .or_else(|| check.remedy.get(&crate::catalogue::suite::FailureClass::Any))
                .map(crate::catalogue::remedies::Remedy::text);
            // A pod that never got a sandbox says nothing about the check: the node's remedy.
            let node = match j.verdict {
                Verdict::Fail | Verdict::Error => causes.and_then(|c| {
                    c.sandbox_remedy(
                        &j.summary,
                        own,
                        facts.report.platform.as_ref().map(|p| p.value.as_str()),
                    )
                }),
                _ => None,
            };
            node.or(own.map(str::to_string))
        }
        _ => None,
    };
    let evidence = j.output.as_ref().map(|o| Evidence {
        pod: Some(format!("{ns}/{}", o.pod)),
        command: o.argv.clone(),
        exit_code: o.exit_code,
        stdout: Excerpt::new(&o.stdout),
        stderr: Excerpt::new(&o.stderr),
        events: Vec::new(),
    });
    Cell {
        id,
        suite: plan.suite.name.clone(),
        check: check.name.clone(),
        rule_id: check.rule.clone(),
        title: check.title.clone(),
        category: plan.suite.category.clone(),
        verdict: j.verdict,
        expected: j.expected.clone().unwrap_or(CellExpectation {
            kind: Expected::Works,
            text: j.reason.clone().unwrap_or_default(),
        }),
        coordinates: plan.coordinates.clone(),
        nodes,
        observed: Observed {
            summary,
            evidence,
            on: pair_nodes(&worst_pair, j, facts),
        },
        remedy,
        sources: if j.sources.is_empty() {
            check.sources.clone()
        } else {
            j.sources.clone()
        },
        reproduce: j.output.as_ref().map(|o| transport::reproduce(ns, o)),
        reason: j.reason.clone(),
        flaky: j.flaky,
        duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use mixcheck_reports::Os;
    use rstest::rstest;

    use super::*;

    fn facts() -> ClusterFacts {
        ClusterFacts::of_nodes(vec![
            ClusterNode::sample("linux-1", Os::Linux, "10.0.0.4"),
            ClusterNode::sample("win-a", Os::Windows, "10.0.0.5"),
            ClusterNode::sample("win-b", Os::Windows, "10.0.0.6"),
        ])
    }

    /// A failed request to a Service with backends on several nodes is observed on every one
    /// of them (as destinations), after the pair's own ends and each node once.
    #[rstest]
    #[case::no_backends(Some(0), Some(1), &[], &[("linux-1", NodeRole::Source), ("win-a", NodeRole::Destination)])]
    #[case::backends_beside_the_destination(Some(0), Some(1), &["win-a", "win-b"], &[("linux-1", NodeRole::Source), ("win-a", NodeRole::Destination), ("win-b", NodeRole::Destination)])]
    #[case::client_in_the_backends_pool(Some(2), Some(2), &["win-a", "win-b"], &[("win-b", NodeRole::Source), ("win-b", NodeRole::Destination), ("win-a", NodeRole::Destination)])]
    #[case::unknown_backend_left_out(Some(1), Some(1), &["gone"], &[("win-a", NodeRole::Source), ("win-a", NodeRole::Destination)])]
    fn a_pair_is_observed_on_its_ends_and_its_other_backends(
        #[case] from: Option<usize>,
        #[case] to: Option<usize>,
        #[case] backends: &[&str],
        #[case] want: &[(&str, NodeRole)],
    ) {
        let mut j = judgement::judgement(Verdict::Fail, "timeout".into());
        j.backends = backends.iter().map(|b| (*b).to_string()).collect();
        let on: Vec<(String, NodeRole)> = pair_nodes(&Pair { from, to }, &j, &facts())
            .into_iter()
            .map(|r| (r.name, r.role))
            .collect();
        let want: Vec<(String, NodeRole)> = want.iter().map(|(n, r)| ((*n).to_string(), *r)).collect();
        assert_eq!(on, want);
    }
}
