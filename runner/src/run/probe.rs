//! The probe stage of a run: the run namespace created, the cells that create their own pods
//! judged at once while the shared fixtures are deployed, the Windows nodes' own readings taken,
//! every other cell judged within the probe slots, and light nodes whose light checks failed
//! promoted to every check.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use kube::api::Api;

use crate::cluster::budget::Budget;
use crate::cluster::deploy::{self, Deployment};
use crate::cluster::facts::ClusterFacts;
use crate::cluster::podwatch::PodWatch;
use crate::cluster::progress::Phase;
use crate::cluster::reach::Reach;
use crate::cluster::workload::Workloads;
use crate::probes::hostfacts::{self, Reading};
use crate::probes::judgement::Ctx;
use crate::run::Run;
use crate::run::cells;
use crate::run::judge::{self, Judged, judge_cells};
use crate::run::prepare::Prepared;

/// What probing leaves for the stages after it, also when the deadline or Ctrl-C cut it short.
#[derive(Default)]
pub(super) struct Probing {
    /// Each cell's verdict as it was judged.
    pub judged: Judged,
    /// Whether pods reach the internet, once detected from the fixtures.
    pub egress: tokio::sync::watch::Sender<Option<crate::probes::egress::Egress>>,
    /// Whether this machine reaches each node's address.
    pub reach: Reach,
    /// The facts once the Windows nodes' own readings refined them.
    pub refined: OnceLock<ClusterFacts>,
    /// What the Windows nodes' host probe read.
    pub readings: OnceLock<Vec<Reading>>,
    /// The usable pods of the shared fixtures once deployed, by node: what the evidence stage
    /// probes from when causes tie.
    pub pods: OnceLock<crate::run::discriminate::Pods>,
    /// The API's view of the nodes' data planes, shared by the HNS checks' readings.
    pub api_views: crate::probes::apiview::ApiViews,
}

impl Probing {
    /// The facts as refined by the nodes' readings, or `read` until they were taken.
    pub fn facts<'a>(&'a self, read: &'a ClusterFacts) -> &'a ClusterFacts {
        self.refined.get().unwrap_or(read)
    }
}

/// Warns about leftovers in the way, creates the run namespace and judges every cell.
pub(super) async fn probe(
    run: &Run<'_>,
    prepared: &Prepared<'_>,
    budget: Budget,
    probing: &Probing,
) -> Result<(), String> {
    open_namespace(run, prepared).await?;
    let permits = tokio::sync::Semaphore::new(run.plan.concurrency);
    let workloads = workloads(run, prepared, budget);
    let no_fixtures = Deployment::default();
    let early_ctx = base_ctx(run, prepared, (&permits, &workloads, &no_fixtures), probing);
    // Cells that create their own pods need none of the shared fixtures: they start at once,
    // while the fixtures are awaited (Windows pods start slowly on a real cluster).
    let (early, later): (Vec<_>, Vec<_>) = prepared
        .cells
        .iter()
        .enumerate()
        .partition(|(_, c)| !c.check.probe.needs_fixtures());
    let bar = run.progress.bar(Phase::Probe);
    bar.set_length(u64::try_from(prepared.cells.len()).unwrap_or(u64::MAX));
    let early = judge_cells(&early_ctx, early, run.plan.concurrency, &bar, &probing.judged);
    // The pods that later cells create for themselves start once the shared fixtures are
    // created, while they are awaited (a parked pod a cell did not take is stopped once the
    // cells are judged).
    let (applied, mut created) = tokio::sync::watch::channel(None);
    let starting_ahead = later.clone();
    let ahead = async {
        // Read and let go at once: the value's read lock, held across the pods' start, would
        // block the deployment's next send.
        let applied = created
            .wait_for(Option::is_some)
            .await
            .is_ok_and(|told| *told == Some(true));
        if applied {
            judge::prestart_cells(&early_ctx, &starting_ahead, run.plan.concurrency).await;
        }
    };
    let later = async {
        let full = super::lock(&prepared.sets).full.clone();
        let scope = deploy::Scope {
            full: &full,
            before: None,
            applied: Some(&applied),
            pods: workloads.pods(),
        };
        let deployed = deploy_until(run, prepared, scope, prepared.deadline).await;
        applied.send_replace(Some(deployed.is_ok()));
        let mut dep = deployed?;
        tracing::debug!("fixtures ready");
        let facts = read_nodes(run, &early_ctx, &dep, probing).await;
        tracing::debug!("nodes read");
        let count = cells::count(&prepared.cells);
        run.say(&format!(
            "Probing {} cells of {} checks ({} probes; {} fact readings)…",
            prepared.cells.len(),
            run.plan.selected.len(),
            count.probes,
            count.facts
        ));
        let ctx = Ctx {
            facts,
            ..early_ctx.with_fixtures(&dep)
        };
        // Egress is detected from the fixtures while the cells that do not depend on it run.
        let detect = async {
            if facts.egress.is_none() {
                probing
                    .egress
                    .send_replace(Some(crate::probes::connect::detect_egress(&ctx).await));
            }
        };
        futures::future::join(
            detect,
            judge_cells(&ctx, later, run.plan.concurrency, &bar, &probing.judged),
        )
        .await;
        drop(ctx);
        tracing::debug!("cells judged");
        workloads.stop_parked().await;
        let promoted = promote(run, prepared, probing, &early_ctx, facts, &mut dep).await;
        let _ = probing.pods.set(crate::run::discriminate::Pods::of(&dep));
        promoted
    };
    let early = async {
        early.await;
        tracing::debug!("early cells judged");
    };
    let ((), ((), later)) = futures::future::join(early, futures::future::join(ahead, later)).await;
    run.progress.finish();
    later
}

/// The context the cells of `run` are judged in, with the fixtures of `dep` (none yet, at
/// first: [`Ctx::with_fixtures`] adds them), the prepared settle windows and clock.
pub(super) fn base_ctx<'a>(
    run: &'a Run<'_>,
    prepared: &'a Prepared<'_>,
    (permits, workloads, dep): (&'a tokio::sync::Semaphore, &'a Workloads<'a>, &'a Deployment),
    probing: &'a Probing,
) -> Ctx<'a> {
    Ctx {
        permits,
        client: run.client.clone(),
        workloads,
        pods: Api::namespaced(run.client.clone(), &prepared.ns),
        facts: run.facts,
        dep,
        ns: &prepared.ns,
        causes: &run.plan.causes,
        settle: prepared.settle,
        clock: prepared.clock,
        egress: &probing.egress,
        outside: &run.plan.outside,
        reach: &probing.reach,
        api_views: &probing.api_views,
    }
}

/// The run's shared workloads (the pods that cells create for themselves), every cell's use
/// of them announced.
pub(super) fn workloads<'a>(run: &Run<'a>, prepared: &Prepared<'_>, budget: Budget) -> Workloads<'a> {
    let workloads = Workloads::new(
        run.client.clone(),
        &prepared.ns,
        run.fixtures,
        deploy::run_labels(run.run_id),
        run.plan.registry.clone(),
        budget,
    );
    for c in &prepared.cells {
        workloads.plan_uses(&judge::pod_keys(c, run.facts));
    }
    workloads
}

/// Warns about leftovers in the way, creates the run namespace (unless the run is given one)
/// and copies the pull secrets into it.
pub(super) async fn open_namespace(run: &Run<'_>, prepared: &Prepared<'_>) -> Result<(), String> {
    let client = &run.client;
    let ns = prepared.ns.as_str();
    let host_port = prepared.needs.host_port.then_some(deploy::HOST_PORT);
    for line in crate::cluster::leftovers::in_the_way(client, ns, host_port).await {
        run.say(&format!("Warning: {line}"));
    }
    if run.plan.namespace.is_none() {
        let created = deploy::create_namespace(client, ns, run.run_id)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(r) = &created.refused {
            run.progress.warn(&format!(
                "Warning: {} refused a privileged run namespace ({}); created it at Pod Security level {}: the checks that need hostNetwork, hostPort or HostProcess pods are indeterminate where those pods are refused",
                r.by.as_ref().map_or_else(|| "the cluster".to_string(), ToString::to_string),
                r.message,
                created.level.unwrap_or("the cluster's default")
            ));
        }
    }
    // Before any pod: the pods name the pull secrets.
    crate::cluster::pullsecret::copy(
        client,
        ns,
        &deploy::run_labels(run.run_id),
        &run.plan.registry.pull_secrets,
    )
    .await
}

/// Deploys the shared fixtures of `full` (every node's at first, then those of promoted nodes,
/// `before` being what is deployed already).
pub(super) async fn deploy_scope(
    run: &Run<'_>,
    prepared: &Prepared<'_>,
    full: &BTreeSet<usize>,
    before: Option<&Deployment>,
    pods: &PodWatch,
) -> Result<Deployment, String> {
    let scope = deploy::Scope {
        full,
        before,
        applied: None,
        pods,
    };
    deploy_until(run, prepared, scope, prepared.deadline).await
}

/// [`deploy_scope`] with its own deadline (a watch healing its fixtures long after it began).
pub(super) async fn deploy_until(
    run: &Run<'_>,
    prepared: &Prepared<'_>,
    scope: deploy::Scope<'_>,
    deadline: std::time::Instant,
) -> Result<Deployment, String> {
    deploy::deploy(
        &run.client,
        &prepared.ns,
        run.run_id,
        run.facts,
        run.fixtures,
        &run.plan.registry,
        prepared.needs,
        scope,
        deadline,
        run.progress,
    )
    .await
    .map_err(|e| e.to_string())
}

/// What only the Windows nodes themselves show (managed platforms), read before the cells that
/// depend on it are judged: the facts refined by it, kept in `probing`.
pub(super) async fn read_nodes<'a>(
    run: &Run<'_>,
    ctx: &Ctx<'_>,
    dep: &Deployment,
    probing: &'a Probing,
) -> &'a ClusterFacts {
    let (read_now, startups) = futures::future::join(
        hostfacts::read(&ctx.pods, dep, run.facts),
        crate::cluster::startup::of_fixtures(
            ctx.workloads.pods(),
            &ctx.client,
            ctx.ns,
            [&dep.servers, &dep.clients, &dep.hosts]
                .into_iter()
                .flatten()
                .map(|(node, p)| (node, p.name.as_str())),
        ),
    )
    .await;
    let mut read = run.facts.clone();
    hostfacts::refine(&mut read, &read_now);
    for (node, list) in startups {
        if let Some(n) = read.report.nodes.get_mut(&node) {
            n.startup = list;
        }
    }
    let _ = probing.readings.set(read_now);
    if let Some(line) = hostfacts::describe(run.facts, &read) {
        run.say(&line);
    }
    probing.refined.get_or_init(|| read)
}

/// A light node whose light check failed gets every check, so that it is localised and
/// diagnosed like a representative: its missing fixtures deployed, every cell given the pairs it
/// would have had in the full matrix.
async fn promote(
    run: &Run<'_>,
    prepared: &Prepared<'_>,
    probing: &Probing,
    early_ctx: &Ctx<'_>,
    facts: &ClusterFacts,
    dep: &mut Deployment,
) -> Result<(), String> {
    let cells = &prepared.cells;
    let light = super::lock(&prepared.sets).light.clone();
    let failing = probing
        .judged
        .failing_nodes(|i| cells.get(i).is_some_and(|c| c.check.every_node), &light);
    if failing.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = failing
        .iter()
        .filter_map(|&i| facts.nodes.get(i))
        .map(|n| n.name.as_str())
        .collect();
    run.say(&format!(
        "A light check failed on {} node{} ({}): checking {} with every check…",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        names.join(", "),
        if names.len() == 1 { "it" } else { "them" }
    ));
    let more = {
        let mut s = super::lock(&prepared.sets);
        s.promote(&failing);
        cells::promotion_pairs(cells, facts, &s, &failing)
    };
    let added = deploy_scope(run, prepared, &failing, Some(dep), early_ctx.workloads.pods()).await?;
    dep.absorb(added);
    let ctx = Ctx {
        facts,
        ..early_ctx.with_fixtures(dep)
    };
    judge::judge_more(&ctx, cells, more, run.plan.concurrency, &probing.judged).await;
    Ok(())
}
