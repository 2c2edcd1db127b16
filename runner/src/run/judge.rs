//! Judging the cells: cells and their pairs side by side within the run's probe slots, one
//! connection or resolve pair probed and judged against its expectation, the worst pair standing
//! for the cell.

use std::time::Instant;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use mixcheck_reports::cell::{Coordinates, Expectation as CellExpectation, NodeRef, NodeRole, Observed};
use mixcheck_reports::evidence::{Evidence, Excerpt};
use mixcheck_reports::verdict::{Expected, Outcome};
use mixcheck_reports::{Cell, CellId, Verdict};

use crate::cluster::deploy::Deployment;
use crate::cluster::facts::{self, ClusterFacts, ClusterNode};
use crate::probes::transport as probe;
use crate::catalogue::suite::{Placement, Probe, Protocol, Verify};
use crate::probes::expectation::{self as verdict, CellFacts};
use crate::cluster::workload::NotReady;

use super::cells::{CellPlan, Pair};
use super::node::judge_other;
use super::request::{Unprobed, build_request, dns_client_request, plain_client_runs};

/// Pairs of one cell probed at once (inside the run's `--concurrency` cells).
const PAIRS_AT_ONCE: usize = 8;

/// Cells in progress per probe slot (`--concurrency`): most of a cell's time is waiting for
/// pods, which takes no slot.
const CELLS_PER_PROBE_SLOT: usize = 4;

/// Judges cells side by side, unordered (a slow cell does not hold the slots of the fast ones
/// behind it); each result keeps its plan index. Workload cells go first: their pods take the
/// longest to show what they do, and waiting for them holds no probe slot, so the quick
/// network cells fill the time around them.
pub(super) async fn judge_cells<'p>(
    ctx: &Ctx<'_>,
    mut cells: Vec<(usize, &CellPlan<'p>)>,
    concurrency: usize,
    bar: &indicatif::ProgressBar,
) -> Vec<(usize, Cell)> {
    cells.sort_by_key(|(i, c)| (!matches!(c.check.probe, Probe::Create { .. } | Probe::Exec { .. }), *i));
    futures::stream::iter(cells)
        .map(|(i, c)| async move {
            let cell = judge_cell(ctx, c, i).await;
            bar.inc(1);
            bar.set_message(cell.id.as_str().to_string());
            (i, cell)
        })
        .buffer_unordered(concurrency.saturating_mul(CELLS_PER_PROBE_SLOT))
        .collect()
        .await
}

pub(super) struct Ctx<'a> {
    /// At most `--concurrency` probes in flight, whatever cells and pairs they belong to.
    pub(super) permits: &'a tokio::sync::Semaphore,
    pub(super) client: kube::Client,
    pub(super) workloads: &'a crate::cluster::workload::Workloads<'a>,
    pub(super) pods: Api<Pod>,
    pub(super) facts: &'a ClusterFacts,
    pub(super) dep: &'a Deployment,
    pub(super) ns: &'a str,
}

/// One judged pair.
pub(super) struct PairJudgement {
    pub(super) verdict: Verdict,
    pub(super) expected: Option<CellExpectation>,
    pub(super) reason: Option<String>,
    pub(super) summary: String,
    pub(super) output: Option<probe::Output>,
    pub(super) class: Option<crate::catalogue::suite::FailureClass>,
    pub(super) flaky: bool,
    pub(super) sources: Vec<String>,
    /// A remedy that replaces the check's (the pair was not probed for a reason of its own).
    pub(super) remedy: Option<String>,
}

pub(super) fn judgement(verdict: Verdict, reason: String) -> PairJudgement {
    PairJudgement {
        verdict,
        expected: None,
        reason: Some(reason.clone()),
        summary: reason,
        output: None,
        class: None,
        flaky: false,
        sources: Vec::new(),
        remedy: None,
    }
}

/// A pair on a worker that is not Ready cannot be probed (its fixtures never start): an error
/// naming the node, with the documented remedy (once the cell's expectation says it applies).
/// Facts and audits are still read from the API.
pub(super) fn not_ready(facts: &ClusterFacts, pair: Pair, probe: &Probe) -> Option<PairJudgement> {
    if matches!(probe, Probe::Fact { .. } | Probe::Audit { .. }) {
        return None;
    }
    let node = [pair.from, pair.to]
        .into_iter()
        .flatten()
        .filter_map(|i| facts.nodes.get(i))
        .find(|n| !n.ready)?;
    let state = node.conditions.get("Ready").map_or("missing", String::as_str);
    let mut j = judgement(
        Verdict::Error,
        format!(
            "node {} is not Ready (Ready={state}): nothing runs there, so the cell was not probed",
            node.name
        ),
    );
    j.remedy = Some(crate::catalogue::remedies::NOT_READY.to_string());
    Some(j)
}

fn node_ref(n: &ClusterNode, role: NodeRole) -> NodeRef {
    NodeRef {
        name: n.name.clone(),
        os: n.os,
        build: n.build,
        role,
    }
}

impl<'a> Ctx<'a> {
    /// The same run, with the shared fixtures deployed.
    pub(super) fn with_fixtures<'b>(&self, dep: &'b Deployment) -> Ctx<'b>
    where
        'a: 'b,
    {
        Ctx {
            permits: self.permits,
            client: self.client.clone(),
            workloads: self.workloads,
            pods: self.pods.clone(),
            facts: self.facts,
            dep,
            ns: self.ns,
        }
    }

    pub(super) fn pods_client(&self) -> &kube::Client {
        &self.client
    }

    /// Runs a probe command in a pod, within the run's limit of probes in flight (waiting for
    /// pods to start holds no slot: that is the watch's work, not the cluster's).
    pub(super) async fn exec(
        &self,
        pod: &str,
        container: Option<&str>,
        argv: &[String],
    ) -> Result<(probe::Output, bool), probe::TransportError> {
        let _permit = self.permits.acquire().await;
        probe::exec_retrying(&self.pods, pod, container, argv).await
    }
}

async fn judge_cell(ctx: &Ctx<'_>, plan: &CellPlan<'_>, index: usize) -> Cell {
    let clock = Instant::now();
    let check = plan.check;
    let mut judged: Vec<(Pair, PairJudgement)> = Vec::new();
    if let Some((verdict, why)) = &plan.fixed {
        judged.push((Pair { from: None, to: None }, judgement(*verdict, why.clone())));
    } else {
        // The pairs of one cell run side by side too (a pool of many nodes is many probes).
        let mut done: Vec<(usize, Pair, PairJudgement)> = futures::stream::iter(plan.pairs.iter().enumerate())
            .map(|(k, pair)| async move {
                let j = match &plan.check.probe {
                    Probe::Connect { .. } | Probe::Resolve { .. } => judge_pair(ctx, plan, *pair).await,
                    _ => judge_other(ctx, plan, *pair, index).await,
                };
                (k, *pair, j)
            })
            .buffer_unordered(PAIRS_AT_ONCE)
            .collect()
            .await;
        done.sort_by_key(|(k, ..)| *k);
        judged.extend(done.into_iter().map(|(_, p, j)| (p, j)));
    }
    // The cell takes the worst of its pairs.
    let worst = judged.iter().min_by_key(|(_, j)| j.verdict.rank()).map(|(p, _)| *p);
    let mut nodes = Vec::new();
    for (pair, _) in &judged {
        for (idx, role) in [(pair.from, NodeRole::Source), (pair.to, NodeRole::Destination)] {
            if let Some(n) = idx.and_then(|i| ctx.facts.nodes.get(i)) {
                let r = node_ref(n, role);
                if !nodes.contains(&r) {
                    nodes.push(r);
                }
            }
        }
    }
    let (worst_pair, j) = judged
        .into_iter()
        .find(|(p, _)| Some((p.from, p.to)) == worst.map(|w| (w.from, w.to)))
        .unwrap_or((
            Pair { from: None, to: None },
            judgement(Verdict::Error, "no pair was judged".into()),
        ));
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
                .or_else(|| check.remedy.get(&crate::catalogue::suite::FailureClass::Any));
            // A pod that never got a sandbox says nothing about the check: the node's remedy.
            let node = match j.verdict {
                Verdict::Fail | Verdict::Error => crate::catalogue::remedies::sandbox(&j.summary, own.map(String::as_str)),
                _ => None,
            };
            node.map(str::to_string).or_else(|| own.cloned())
        }
        _ => None,
    };
    let evidence = j.output.as_ref().map(|o| Evidence {
        pod: Some(format!("{}/{}", ctx.ns, o.pod)),
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
        expected: j.expected.unwrap_or(CellExpectation {
            kind: Expected::Works,
            text: j.reason.clone().unwrap_or_default(),
        }),
        coordinates: plan.coordinates.clone(),
        nodes,
        observed: Observed {
            summary: j.summary,
            evidence,
            on: [
                (worst_pair.from, NodeRole::Source),
                (worst_pair.to, NodeRole::Destination),
            ]
            .into_iter()
            .filter_map(|(idx, role)| idx.and_then(|i| ctx.facts.nodes.get(i)).map(|n| node_ref(n, role)))
            .collect(),
        },
        remedy,
        sources: if j.sources.is_empty() {
            check.sources.clone()
        } else {
            j.sources
        },
        reproduce: j.output.as_ref().map(|o| probe::reproduce(ctx.ns, o)),
        reason: j.reason,
        flaky: j.flaky,
        duration_ms: u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

/// What the expectations of a pair's cell are judged on: the cluster's facts and the pair's nodes.
pub(super) fn cell_facts<'a>(
    facts: &'a ClusterFacts,
    plan: &'a CellPlan<'_>,
    pair: Pair,
    placement: Option<Placement>,
) -> CellFacts<'a> {
    CellFacts {
        kubernetes: facts.version,
        from: pair.from.and_then(|i| facts.nodes.get(i)),
        to: pair.to.and_then(|i| facts.nodes.get(i)),
        placement,
        protocol: plan.protocol,
        variant: plan.variant.as_deref(),
        network_mode: facts.network_mode.as_ref().map(|f| f.value.as_str()),
        dsr: facts.dsr.as_ref().map(|f| f.value),
        flannel: facts
            .flannel_version
            .as_ref()
            .and_then(|f| facts::major_minor(&f.value)),
        egress: facts.egress.value,
        feature_gates: facts.feature_gates.as_ref(),
    }
}

async fn judge_pair(ctx: &Ctx<'_>, plan: &CellPlan<'_>, pair: Pair) -> PairJudgement {
    let facts = ctx.facts;
    let from = pair.from.and_then(|i| facts.nodes.get(i));
    let to = pair.to.and_then(|i| facts.nodes.get(i));
    let cell_facts = cell_facts(facts, plan, pair, plan.placement);
    let e = match verdict::expectation(plan.check, &cell_facts) {
        Ok(e) => e,
        Err(fact) => return judgement(Verdict::Indeterminate, format!("unknown: {fact}")),
    };
    let sources = if e.sources.is_empty() {
        plan.check.sources.clone()
    } else {
        e.sources.clone()
    };
    let Some(kind) = verdict::expected(e.result) else {
        let mut j = judgement(Verdict::NotApplicable, e.says.clone());
        j.sources = sources;
        return j;
    };
    let expected = Some(CellExpectation {
        kind,
        text: e.says.clone(),
    });
    let with = |mut j: PairJudgement| {
        j.expected = expected.clone();
        j.sources = sources.clone();
        j
    };
    if let Some(down) = not_ready(facts, pair, &plan.check.probe) {
        return with(down);
    }
    let request = match build_request(ctx, plan, from, to) {
        Ok(r) => r,
        Err(Unprobed::Indeterminate(why)) => return with(judgement(Verdict::Indeterminate, why)),
        Err(Unprobed::Error(why)) => return with(judgement(Verdict::Error, why)),
        Err(Unprobed::Variant(dns)) => match dns_client_request(ctx, plan, from, to, dns).await {
            Ok(r) => r,
            // The node failed the variant client while its plain client runs: the variant's
            // own change (hostNetwork, a dnsConfig) is what it refused — a probe result.
            Err(NotReady::Failed(why)) if from.is_some_and(|n| plain_client_runs(ctx, n)) => {
                let class = crate::catalogue::suite::FailureClass::PodFailed;
                let outcome = verdict::outcome(e, &probe::Observation::Failed(class));
                let verdict = verdict::decide(e, &outcome);
                let mut j = judgement(verdict, why);
                j.reason = (outcome == Outcome::FailedOtherwise && kind != Expected::Works)
                    .then(|| format!("failed ({}), not in the documented way", class.name()));
                j.class = Some(class);
                return with(j);
            }
            Err(why) => return with(judgement(Verdict::Error, why.to_string())),
        },
    };
    let (pod, container, runner, req, verify) = request;
    let argv = probe::command(runner, &req);
    let (out, flaky) = match ctx.exec(&pod, container.as_deref(), &argv).await {
        Ok(x) => x,
        Err(e) => return with(judgement(Verdict::Error, format!("the probe could not run: {e}"))),
    };
    let mut result = probe::classify(&req, &out);
    // A resolve probe asks whether the name resolves: any answer but a DNS failure (a refused
    // or reset connection included) means it did.
    if matches!(plan.check.probe, Probe::Resolve { .. })
        && matches!(
            result,
            probe::Observation::Failed(
                crate::catalogue::suite::FailureClass::Refused
                    | crate::catalogue::suite::FailureClass::Reset
                    | crate::catalogue::suite::FailureClass::Other
            )
        )
    {
        result = probe::Observation::Reached(String::new());
    }
    let mut flaky = flaky;
    let mut detail = String::new();
    if let probe::Observation::Reached(body) = &result {
        match verify {
            Verify::Reachable => {}
            Verify::ClientIpPreserved => {
                let seen = body
                    .trim()
                    .rsplit_once(':')
                    .map_or(body.trim(), |(ip, _)| ip)
                    .to_string();
                let own = from.map(|n| n.address.clone()).unwrap_or_default();
                if seen != own {
                    detail = format!(" (backend saw {seen}, the client is {own})");
                    result = probe::Observation::Failed(crate::catalogue::suite::FailureClass::Mismatch);
                }
            }
            Verify::OneBackend => {
                let mut answers = vec![result.clone()];
                for _ in 0..9 {
                    match ctx.exec(&pod, container.as_deref(), &argv).await {
                        Ok((o, f)) => {
                            flaky |= f;
                            answers.push(probe::classify(&req, &o));
                        }
                        Err(e) => return with(judgement(Verdict::Error, format!("the probe could not run: {e}"))),
                    }
                }
                if let Some((observation, why)) = one_backend(&answers) {
                    result = observation;
                    detail = why;
                }
            }
        }
    }
    let outcome = verdict::outcome(e, &result);
    let verdict = verdict::decide(e, &outcome);
    let target = match req.protocol {
        Protocol::Icmp => format!("{} icmp", req.host),
        p => format!("{}:{} {p}", req.host, req.port),
    };
    let summary = match &result {
        probe::Observation::Reached(_) => format!("{pod} → {target}: reached{detail}"),
        probe::Observation::Failed(c) => format!("{pod} → {target}: {}{detail}", c.name()),
    };
    let class = match &result {
        probe::Observation::Failed(c) => Some(*c),
        probe::Observation::Reached(_) => None,
    };
    let reason = match &outcome {
        Outcome::FailedOtherwise if kind != Expected::Works => Some(format!(
            "failed ({}), not in the documented way",
            class.map_or("?", |c| c.name())
        )),
        _ => None,
    };
    with(PairJudgement {
        verdict,
        expected: None,
        reason,
        summary,
        output: Some(out),
        class,
        flaky: flaky && verdict == Verdict::Pass,
        sources: Vec::new(),
        remedy: None,
    })
}

/// `verify: one-backend` over the answers to successive requests: a request that failed is the
/// flow's failure (the others must not hide it); otherwise more than one backend answering is a
/// mismatch. None when every request reached the same backend.
fn one_backend(answers: &[probe::Observation]) -> Option<(probe::Observation, String)> {
    let mut seen = std::collections::BTreeSet::new();
    for (n, answer) in answers.iter().enumerate() {
        match answer {
            probe::Observation::Reached(body) => {
                seen.insert(body.trim().to_string());
            }
            probe::Observation::Failed(class) => {
                let why = format!(" (request {} of {}: {})", n + 1, answers.len(), class.name());
                return Some((answer.clone(), why));
            }
        }
    }
    (seen.len() > 1).then(|| {
        let why = format!(
            " ({} requests reached {} backends: {})",
            answers.len(),
            seen.len(),
            seen.into_iter().collect::<Vec<_>>().join(", ")
        );
        (probe::Observation::Failed(crate::catalogue::suite::FailureClass::Mismatch), why)
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use mixcheck_reports::Os;

    use super::*;
    use crate::catalogue::suite::{Destination, Origin, ServiceVariant};

    fn node(name: &str, ready: bool) -> ClusterNode {
        ClusterNode {
            name: name.into(),
            os: Os::Windows,
            build: Some(20348),
            address: "10.0.0.5".into(),
            kubelet: Some((1, 32)),
            runtime: Some(("containerd".into(), (1, 7))),
            taints: Vec::new(),
            control_plane: false,
            ready,
            labels: BTreeMap::new(),
            kernel: "10.0.20348.2762".into(),
            memory: (None, None),
            conditions: [("Ready".to_string(), if ready { "True" } else { "Unknown" }.to_string())].into(),
            configz: None,
        }
    }

    #[test]
    fn one_backend_is_a_mismatch_only_when_every_request_got_through() {
        use crate::catalogue::suite::FailureClass as C;
        use probe::Observation::{Failed, Reached};
        let to = |b: &str| Reached(b.to_string());
        assert_eq!(one_backend(&[to("a"), to("a\n"), to("a")]), None);
        assert_eq!(
            one_backend(&[to("a"), to("b"), to("a")]),
            Some((
                Failed(C::Mismatch),
                " (3 requests reached 2 backends: a, b)".to_string()
            ))
        );
        // Half the requests timing out is the flow failing, not one backend answering.
        assert_eq!(
            one_backend(&[to("a"), Failed(C::Timeout), to("a")]),
            Some((Failed(C::Timeout), " (request 2 of 3: timeout)".to_string()))
        );
    }

    #[test]
    fn pairs_on_a_node_that_is_not_ready_are_not_probed_and_say_why() {
        let facts = ClusterFacts {
            version: (1, 32),
            nodes: vec![node("win2019-1", true), node("win2022-1", false)],
            network_mode: None,
            dsr: None,
            win_dsr_gate: None,
            flannel_version: None,
            egress: mixcheck_reports::Fact::new(true, "default"),
            feature_gates: None,
            report: Default::default(),
        };
        let connect = Probe::Connect {
            from: Origin::Pod,
            to: Destination::PodIp,
            service: ServiceVariant::Cluster,
            verify: Verify::Reachable,
        };
        let both = Pair {
            from: Some(0),
            to: Some(1),
        };
        let j = not_ready(&facts, both, &connect).expect("the destination is down");
        assert_eq!(j.verdict, Verdict::Error);
        assert!(
            j.summary.contains("node win2022-1 is not Ready (Ready=Unknown)"),
            "{}",
            j.summary
        );
        assert!(j.remedy.as_deref().is_some_and(|r| r.contains("kubelet")));
        let healthy = Pair {
            from: Some(0),
            to: Some(0),
        };
        assert!(not_ready(&facts, healthy, &connect).is_none());
        // Facts about the node are still read from the API.
        let fact = Probe::Fact {
            fact: crate::catalogue::suite::FactCheck::OsLabels,
        };
        assert!(not_ready(&facts, both, &fact).is_none());
    }
}
