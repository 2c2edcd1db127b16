//! Judging one pair of a cell: the shared prelude every probe kind goes through (expectation →
//! not applicable → node not Ready → sources), the kind's observation, and the verdict it
//! gives against the expectation. Owns [`Ctx`] (what a probe may use of the run), [`Pair`],
//! [`Case`] (what is probed) and [`PairJudgement`].

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use mixcheck_reports::Verdict;
use mixcheck_reports::cell::Expectation as CellExpectation;
use mixcheck_reports::verdict::{Expected, Outcome};

use crate::catalogue::suite::{Check, FailureClass, Placement, Probe, Protocol};
use crate::cluster::deploy::Deployment;
use crate::cluster::facts::{self, ClusterFacts, ClusterNode};
use crate::probes::Shape;
use crate::probes::expectation::{self, CellFacts};
use crate::probes::transport::{self, Observation, Output, TransportError};

/// What a probe may use of the run: the cluster, its facts, the shared fixtures and the pods
/// checks create, and the run's probe slots.
pub struct Ctx<'a> {
    /// At most `--concurrency` probes in flight, whatever cells and pairs they belong to.
    pub permits: &'a tokio::sync::Semaphore,
    pub client: kube::Client,
    pub workloads: &'a crate::cluster::workload::Workloads<'a>,
    pub pods: Api<Pod>,
    pub facts: &'a ClusterFacts,
    pub dep: &'a Deployment,
    pub ns: &'a str,
    /// The cause catalogue: the remedies of cells that fail for a reason of their node.
    pub causes: &'a crate::catalogue::causes::Catalogue,
    /// How long flows may take to start working.
    pub settle: crate::probes::settle::Settle,
    /// The clock waiting checks are judged on (the bundled cluster's, when the run started it).
    pub clock: crate::probes::clock::Clock,
    /// Whether pods reach the internet, once detected from the fixtures (None until then); the
    /// checks that depend on it wait for it.
    pub egress: &'a tokio::sync::watch::Sender<Option<crate::probes::egress::Egress>>,
    /// The targets outside the cluster the outbound checks aim at.
    pub outside: &'a crate::probes::egress::Outside,
    /// Whether this machine reaches each node's address (the outside-client view).
    pub reach: &'a crate::cluster::reach::Reach,
    /// The API's view of the nodes' data planes, shared by the readings of the HNS checks.
    pub api_views: &'a crate::probes::apiview::ApiViews,
}

impl<'a> Ctx<'a> {
    /// The same run, with the shared fixtures deployed.
    pub fn with_fixtures<'b>(&self, dep: &'b Deployment) -> Ctx<'b>
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
            causes: self.causes,
            settle: self.settle,
            clock: self.clock,
            egress: self.egress,
            outside: self.outside,
            reach: self.reach,
            api_views: self.api_views,
        }
    }

    /// Until when a flow of this kind settles: its window after the fixtures were ready (or
    /// from now, for pods created on demand).
    pub fn settle_until(&self, kind: crate::probes::settle::FlowKind) -> tokio::time::Instant {
        let anchor = self.dep.ready_at.unwrap_or_else(std::time::Instant::now);
        tokio::time::Instant::from_std(anchor + self.settle.window(kind))
    }

    /// What `argv` prints in a running Linux client of the run (trimmed, not empty): how a
    /// fact the API would give is read where the run's identity may not read it (a namespace-only
    /// identity and kube-system, default). None without such a pod or an answer.
    pub async fn read_in_linux_client(&self, argv: &[&str]) -> Option<String> {
        let client = self
            .facts
            .nodes
            .iter()
            .filter(|n| n.os == mixcheck_reports::Os::Linux)
            .find_map(|n| self.dep.clients.get(&n.name).filter(|p| p.problem.is_none()))?;
        let argv: Vec<String> = argv.iter().map(|a| (*a).to_string()).collect();
        let (out, _) = self.exec(&client.name, None, &argv).await.ok()?;
        (out.exit_code == Some(0))
            .then(|| out.stdout_text().trim().to_string())
            .filter(|t| !t.is_empty())
    }

    /// Runs a probe command in a pod, within the run's limit of probes in flight (waiting for
    /// pods to start holds no slot: that is the watch's work, not the cluster's).
    pub async fn exec(
        &self,
        pod: &str,
        container: Option<&str>,
        argv: &[String],
    ) -> Result<(Output, bool), TransportError> {
        self.exec_within(pod, container, argv, transport::EXEC_TIMEOUT).await
    }

    /// [`Self::exec`] for a command that may run longer than one probe (several connections).
    pub async fn exec_within(
        &self,
        pod: &str,
        container: Option<&str>,
        argv: &[String],
        timeout: std::time::Duration,
    ) -> Result<(Output, bool), TransportError> {
        let _permit = self.permits.acquire().await;
        let began = std::time::Instant::now();
        let out = transport::exec_retrying_within(&self.pods, pod, container, argv, timeout).await;
        tracing::trace!(target: "mixcheck::exec", "exec {pod} {:?} took {:?}", argv.join(" "), began.elapsed());
        out
    }
}

/// One probed pair of a cell: source and destination node indexes (a cell about nodes has one
/// end: the node, or the destination of an outside probe).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    pub from: Option<usize>,
    pub to: Option<usize>,
}

/// What one pair probes: the check, the cell's coordinates that matter to the probe, and the
/// pair's nodes.
pub struct Case<'a> {
    pub check: &'a Check,
    pub placement: Option<Placement>,
    pub protocol: Option<Protocol>,
    pub variant: Option<&'a str>,
    pub pair: Pair,
    /// The cell's index in the plan (names the pods a check creates).
    pub index: usize,
}

impl Case<'_> {
    pub fn from<'f>(&self, facts: &'f ClusterFacts) -> Option<&'f ClusterNode> {
        self.pair.from.and_then(|i| facts.nodes.get(i))
    }

    pub fn to<'f>(&self, facts: &'f ClusterFacts) -> Option<&'f ClusterNode> {
        self.pair.to.and_then(|i| facts.nodes.get(i))
    }

    /// The node a cell about nodes judges, with its index.
    pub fn node<'f>(&self, facts: &'f ClusterFacts) -> Result<(usize, &'f ClusterNode), Unprobed> {
        let i = self.pair.from.or(self.pair.to).unwrap_or(0);
        facts
            .nodes
            .get(i)
            .map(|n| (i, n))
            .ok_or_else(|| Unprobed::Error("the cell has no node".into()))
    }
}

/// What a probe kind made of one pair.
#[derive(Debug)]
pub enum Probed {
    /// It observed something, to be judged against the expectation.
    Seen {
        observation: Observation,
        summary: String,
        output: Option<Output>,
        /// It passed only after a transport retry.
        flaky: bool,
        /// Nodes a failed request may have been lost on beyond the pair's own (the other
        /// backends of a Service with several).
        backends: Vec<String>,
    },
    /// A fact it needs is unknown (the whole text says which).
    Unknown(String),
    /// The harness could not probe.
    Error(String),
}

/// Why a pair was not probed.
#[derive(Debug)]
pub enum Unprobed {
    /// A fact the probe needs is unknown (the whole text says which).
    Unknown(String),
    /// The harness could not probe.
    Error(String),
}

impl From<Unprobed> for Probed {
    fn from(u: Unprobed) -> Self {
        match u {
            Unprobed::Unknown(why) => Probed::Unknown(why),
            Unprobed::Error(why) => Probed::Error(why),
        }
    }
}

impl Probed {
    /// An observation without command output.
    pub fn seen(observation: Observation, summary: String) -> Self {
        Probed::Seen {
            observation,
            summary,
            output: None,
            flaky: false,
            backends: Vec::new(),
        }
    }
}

/// One judged pair.
pub struct PairJudgement {
    pub verdict: Verdict,
    pub expected: Option<CellExpectation>,
    pub reason: Option<String>,
    pub summary: String,
    pub output: Option<Output>,
    pub class: Option<FailureClass>,
    pub flaky: bool,
    pub sources: Vec<String>,
    /// A remedy that replaces the check's (the pair was not probed for a reason of its own).
    pub remedy: Option<String>,
    /// Nodes the observation also points at beyond the pair's (a Service's other backends).
    pub backends: Vec<String>,
}

pub fn judgement(verdict: Verdict, reason: String) -> PairJudgement {
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
        backends: Vec::new(),
    }
}

/// A pair on a worker that is not Ready cannot be probed (its fixtures never start): an error
/// naming the node, with the documented remedy (once the cell's expectation says it applies).
/// Kinds that read the API only are still judged.
pub fn not_ready(
    facts: &ClusterFacts,
    causes: &crate::catalogue::causes::Catalogue,
    pair: Pair,
    probe: &Probe,
) -> Option<PairJudgement> {
    if probe.reads_the_api_only() {
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
    j.remedy = causes.not_ready_remedy(facts.report.platform.as_ref().map(|p| p.value.as_str()));
    Some(j)
}

/// What the expectations of a pair's cell are judged on: the cluster's facts and the pair's nodes.
pub fn cell_facts<'a>(facts: &'a ClusterFacts, case: &'a Case<'_>) -> CellFacts<'a> {
    CellFacts {
        kubernetes: facts.version,
        from: case.from(facts),
        to: case.to(facts),
        placement: case.placement,
        protocol: case.protocol,
        variant: case.variant,
        network_mode: facts.network_mode.as_ref().map(|f| f.value.as_str()),
        dsr: facts.dsr.as_ref().map(|f| f.value),
        flannel: facts
            .flannel_version
            .as_ref()
            .and_then(|f| facts::major_minor(&f.value)),
        flannel_present: facts.flannel_version.is_some()
            || facts.report.pod_network.as_ref().is_some_and(|f| f.value == "flannel"),
        egress: facts.egress.as_ref().is_none_or(|f| f.value),
        dual_stack: facts.dual_stack.as_ref().map(|f| f.value),
        calico: facts.calico.as_ref().is_some_and(|f| f.value),
        gmsa: facts.gmsa.as_ref().map(|f| f.value),
        policy_engine: facts.policy_engine.as_ref().map(|f| f.value.as_str()),
        cni_delegate: {
            let windows = |n: &&ClusterNode| n.os == mixcheck_reports::Os::Windows;
            case.to(facts)
                .filter(windows)
                .or(case.from(facts).filter(windows))
                .map_or_else(
                    || Err("no Windows node at either end".to_string()),
                    |n| crate::probes::hostfacts::delegate_of(facts, &n.name),
                )
        },
        feature_gates: facts.feature_gates.as_ref(),
    }
}

/// Whether pods reach the internet: as the user said (`--egress`), or as detected once the
/// fixtures run; assumed where no fixture could try.
async fn egress(ctx: &Ctx<'_>) -> crate::probes::egress::Egress {
    if let Some(stated) = &ctx.facts.egress {
        return crate::probes::egress::Egress::stated(stated.value);
    }
    let assumed = || crate::probes::egress::Egress {
        fact: mixcheck_reports::Fact::new(true, "assumed: no pod of the run could try an outside address"),
        determined: true,
        address_port: crate::probes::egress::ADDRESS_PORTS[0],
    };
    if ctx.dep.ready_at.is_none() {
        return assumed();
    }
    let mut detected = ctx.egress.subscribe();
    match detected.wait_for(Option::is_some).await {
        Ok(fact) => fact.clone().unwrap_or_else(assumed),
        Err(_) => assumed(),
    }
}

/// An informational cell: what the probe read, after what the documentation says, as
/// not-applicable (third documentation review, §2: a fact that changes nothing never fails).
async fn informational(
    ctx: &Ctx<'_>,
    case: &Case<'_>,
    e: &crate::catalogue::suite::Expectation,
    sources: Vec<String>,
) -> PairJudgement {
    let read = match case.check.probe.observe(ctx, case, e).await {
        Probed::Seen { summary, .. } => format!("read: {summary}"),
        Probed::Unknown(why) | Probed::Error(why) => {
            format!("not read: {}", why.strip_prefix("unknown: ").unwrap_or(&why))
        }
    };
    let mut j = judgement(
        Verdict::NotApplicable,
        format!("informational only — {}; {read}", e.says),
    );
    j.sources = sources;
    j
}

/// What a cell left out by its expectation says: the expectation's words, with where the
/// fact that left it out was read (the cluster's egress, IP families, CNI, gMSA CRD, policy
/// engine).
fn left_out_because(
    ctx: &Ctx<'_>,
    e: &crate::catalogue::suite::Expectation,
    egress: Option<&crate::probes::egress::Egress>,
) -> String {
    match (&egress, e.when.egress, &ctx.facts.dual_stack, &ctx.facts.calico) {
        (Some(f), Some(_), _, _) => format!("{} ({})", e.says, f.fact.source),
        // Left out for the cluster's IP families or its CNI: the fact's source says how.
        (_, _, Some(f), _) if e.when.dual_stack.is_some() => format!("{} ({})", e.says, f.source),
        (_, _, _, Some(f)) if e.when.calico.is_some() => format!("{} ({})", e.says, f.source),
        _ if e.when.gmsa.is_some() => match &ctx.facts.gmsa {
            Some(f) => format!("{} ({})", e.says, f.source),
            None => e.says.clone(),
        },
        // Left out for the cluster's NetworkPolicy engine: where the engine was read.
        _ if !e.when.policy_engine.is_empty() => match &ctx.facts.policy_engine {
            Some(f) => format!("{} (policy engine {}: {})", e.says, f.value, f.source),
            None => e.says.clone(),
        },
        _ => e.says.clone(),
    }
}

/// A cell of a check that reads kube-proxy on a cluster where something else programs Services:
/// not applicable, naming it.
fn without_kube_proxy(ctx: &Ctx<'_>, check: &crate::catalogue::suite::Check) -> Option<PairJudgement> {
    let proxy = ctx
        .facts
        .report
        .service_proxy
        .as_ref()
        .filter(|p| check.probe.reads_kube_proxy() && p.value != "kube-proxy")?;
    let mut j = judgement(
        Verdict::NotApplicable,
        format!(
            "kube-proxy is not used: {} programs Services ({})",
            proxy.value, proxy.source
        ),
    );
    j.sources = check.sources.clone();
    Some(j)
}

/// What [`judge`] does with a pair before probing it.
enum Gate<'c> {
    /// Judged without a probe: the expectation is unknown, undocumented or left out, or a node
    /// of the pair is down.
    Judged(Box<PairJudgement>),
    /// An informational cell: read, never judged.
    Informational(&'c crate::catalogue::suite::Expectation, Vec<String>),
    /// Probed against this expectation.
    Probe {
        e: &'c crate::catalogue::suite::Expectation,
        expected: CellExpectation,
        sources: Vec<String>,
    },
}

/// The gates of [`judge`] before the probe: kube-proxy in use where the check reads it, the
/// expectation for the pair's facts known, documented and applicable, the pair's nodes Ready.
fn gate<'c>(
    ctx: &Ctx<'_>,
    check: &'c Check,
    cell_facts: &CellFacts<'_>,
    pair: Pair,
    egress: Option<&crate::probes::egress::Egress>,
) -> Gate<'c> {
    // GKE Dataplane V2 "is implemented without kube-proxy": there is none to read (before the
    // expectation, whose conditions may name kube-proxy's own settings).
    if let Some(j) = without_kube_proxy(ctx, check) {
        return Gate::Judged(Box::new(j));
    }
    let e = match expectation::expectation(check, cell_facts) {
        Ok(e) => e,
        Err(fact) => return Gate::Judged(Box::new(judgement(Verdict::Indeterminate, format!("unknown: {fact}")))),
    };
    let sources = if e.sources.is_empty() {
        check.sources.clone()
    } else {
        e.sources.clone()
    };
    if e.result == crate::catalogue::suite::Documented::Undocumented {
        let mut j = judgement(Verdict::Indeterminate, format!("undocumented: {}", e.says));
        j.sources = sources;
        return Gate::Judged(Box::new(j));
    }
    if e.result == crate::catalogue::suite::Documented::Informational {
        return Gate::Informational(e, sources);
    }
    let Some(kind) = expectation::expected(e.result) else {
        let mut j = judgement(Verdict::NotApplicable, left_out_because(ctx, e, egress));
        j.sources = sources;
        return Gate::Judged(Box::new(j));
    };
    let expected = CellExpectation {
        kind,
        text: e.says.clone(),
    };
    if let Some(mut down) = not_ready(ctx.facts, ctx.causes, pair, &check.probe) {
        down.expected = Some(expected);
        down.sources = sources;
        return Gate::Judged(Box::new(down));
    }
    Gate::Probe { e, expected, sources }
}

/// Whether [`judge`] would probe `case` on the facts known now (its expectation applies and its
/// nodes are Ready), without probing or waiting: a cell whose pods start ahead of its turn
/// starts them only then. A check whose expectation depends on egress is not known yet.
pub fn will_probe(ctx: &Ctx<'_>, case: &Case<'_>) -> bool {
    if case.check.expect.iter().any(|e| e.when.egress.is_some()) {
        return false;
    }
    let cell_facts = cell_facts(ctx.facts, case);
    matches!(gate(ctx, case.check, &cell_facts, case.pair, None), Gate::Probe { .. })
}

/// Judges one pair: the check's expectation for the pair's facts, then (where it applies and
/// the pair's nodes are up) the probe kind's observation against it.
pub async fn judge(ctx: &Ctx<'_>, case: &Case<'_>) -> PairJudgement {
    let check = case.check;
    let flow = matches!(check.probe.shape(), Shape::Flow);
    let mut cell_facts = cell_facts(ctx.facts, case);
    let egress = match check.expect.iter().any(|e| e.when.egress.is_some()) {
        true => Some(egress(ctx).await),
        false => None,
    };
    if let Some(e) = &egress {
        if let Some(why) = e.unknown_because() {
            let mut j = judgement(Verdict::Indeterminate, format!("unknown: {why}"));
            j.sources = check.sources.clone();
            return j;
        }
        cell_facts.egress = e.fact.value;
    }
    let (e, expected, sources) = match gate(ctx, check, &cell_facts, case.pair, egress.as_ref()) {
        Gate::Judged(j) => return *j,
        Gate::Informational(e, sources) => return informational(ctx, case, e, sources).await,
        Gate::Probe { e, expected, sources } => (e, expected, sources),
    };
    let kind = expected.kind;
    let with = |mut j: PairJudgement, expected: Option<CellExpectation>| {
        j.expected = expected;
        j.sources = sources.clone();
        j
    };
    match check.probe.observe(ctx, case, e).await {
        // A permission the run goes without decides nothing about the cluster.
        Probed::Error(why) => match crate::cluster::access::denied(&why) {
            Some(denial) => with(
                judgement(
                    Verdict::Indeterminate,
                    format!("{}\n{why}", crate::cluster::access::unknown_because(&denial)),
                ),
                Some(expected),
            ),
            None => with(judgement(Verdict::Error, why), Some(expected)),
        },
        // Flows keep the expectation an unknown fact kept them from testing.
        Probed::Unknown(why) => with(judgement(Verdict::Indeterminate, why), flow.then_some(expected)),
        Probed::Seen {
            observation,
            summary,
            output,
            flaky,
            backends,
        } => {
            let outcome = expectation::outcome(e, &observation);
            let verdict = expectation::decide(e, &outcome);
            let class = match &observation {
                Observation::Failed(c) => Some(*c),
                Observation::Reached(_) => None,
            };
            // A flow that failed otherwise than documented says how.
            let reason = match &outcome {
                Outcome::FailedOtherwise if flow && kind != Expected::Works => Some(format!(
                    "failed ({}), not in the documented way",
                    class.map_or("?", |c| c.name())
                )),
                _ => None,
            };
            with(
                PairJudgement {
                    verdict,
                    expected: None,
                    reason,
                    summary,
                    output,
                    class,
                    flaky: flaky && verdict == Verdict::Pass,
                    sources: Vec::new(),
                    remedy: None,
                    backends,
                },
                Some(expected),
            )
        }
    }
}

#[cfg(test)]
mod tests {

    use mixcheck_reports::Os;

    use super::*;
    use crate::catalogue::suite::{Destination, Origin, ServiceVariant, Verify};

    fn node(name: &str, ready: bool) -> ClusterNode {
        ClusterNode {
            ready,
            kernel: "10.0.20348.2762".into(),
            conditions: [("Ready".to_string(), if ready { "True" } else { "Unknown" }.to_string())].into(),
            ..ClusterNode::sample(name, Os::Windows, "10.0.0.5")
        }
    }

    #[test]
    fn pairs_on_a_node_that_is_not_ready_are_not_probed_and_say_why() {
        let facts = ClusterFacts::of_nodes(vec![node("win2019-1", true), node("win2022-1", false)]);
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
        let rules = crate::catalogue::rules::Catalogue::embedded().expect("rules");
        let suites = crate::catalogue::suite::Suites::load(None, &rules).expect("suites");
        let causes = crate::catalogue::causes::Catalogue::load(None, &rules, &suites).expect("causes");
        let j = not_ready(&facts, &causes, both, &connect).expect("the destination is down");
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
        assert!(not_ready(&facts, &causes, healthy, &connect).is_none());
        // Facts about the node are still read from the API.
        let fact = Probe::Fact {
            fact: crate::catalogue::suite::FactCheck::OsLabels,
        };
        assert!(not_ready(&facts, &causes, both, &fact).is_none());
    }
}
