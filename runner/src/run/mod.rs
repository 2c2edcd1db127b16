//! One `mixcheck run`, from a validated plan to its report: connect (or start the bundled
//! cluster), check permissions, read the facts, expand every selected check over the nodes the
//! cluster has, deploy the fixtures, probe with bounded concurrency, judge each cell, write
//! `results.json` and the summary, clean up — also on Ctrl-C and at the deadline.

pub mod boundary;
pub(crate) mod cells;
pub mod coverage;
mod judge;
pub mod plan;
pub mod preview;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::Utc;
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use mixcheck_reports::{Cell, RunReport};

use crate::cluster::deploy::{self, Deployment};
use crate::cluster::facts::{self, ClusterFacts};
use crate::cluster::fixture::Fixtures;
use crate::errors::Code;
use crate::run::plan::RunPlan;

use crate::probes::judgement::Ctx;
use crate::probes::settle::Settle;
use cells::plan_cells;
use judge::{Judged, judge_cells};

/// What one run ended with.
pub struct Finished {
    pub code: Code,
    pub report: RunReport,
    /// What `--bundle` collected before cleanup.
    pub bundle: Option<crate::triage::bundle::Collected>,
    /// The bundled cluster, still serving, when `--keep` kept the run namespace on it (it
    /// stops when dropped).
    pub kept: Option<simcluster::Cluster>,
}

/// Runs the plan. Errors before any check become an aborted report with their exit code.
pub async fn execute(plan: &RunPlan, fixtures: &Fixtures) -> Finished {
    let started = Utc::now();
    let clock = Instant::now();
    let progress = crate::cluster::progress::Progress::for_stderr(plan.quiet);
    let say = |m: &str| progress.say(m);
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let placeholder = match &plan.target {
        crate::cluster::target::TargetSpec::Bundled { profile, .. } => mixcheck_reports::Target::Bundled {
            profile: profile.clone(),
        },
        crate::cluster::target::TargetSpec::Kubeconfig { context, .. } => mixcheck_reports::Target::Kubeconfig {
            context: context.clone().unwrap_or_else(|| "current-context".into()),
            server: String::new(),
        },
        crate::cluster::target::TargetSpec::InCluster { .. } => mixcheck_reports::Target::Kubeconfig {
            context: "in-cluster".into(),
            server: String::new(),
        },
    };
    let mut report = RunReport::new(env!("CARGO_PKG_VERSION"), run_id.clone(), placeholder, started);
    report.strict = plan.strict;
    report.selection = plan.selection.clone();
    let abort = |mut report: RunReport, code: Code, reason: String| {
        report.aborted = Some(mixcheck_reports::Aborted {
            reason,
            exit_code: code as u8,
        });
        report.finished_at = Utc::now();
        report.duration_ms = u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
        Finished {
            code,
            report,
            bundle: None,
            kept: None,
        }
    };
    let (target, facts) = match open(plan, &run_id, &say).await {
        Ok(opened) => opened,
        Err((code, why, seen)) => {
            if let Some(t) = seen {
                report.target = t;
            }
            return abort(report, code, why);
        }
    };
    report.target = target.report.clone();
    let client = target.client.clone();
    let api_calls = target.api_calls.clone();
    report.facts = facts.report.clone();
    say(&format!(
        "Cluster: {} · {} nodes ({}) · network mode {}",
        facts
            .report
            .server_version
            .as_ref()
            .map(|f| f.value.as_str())
            .unwrap_or("?"),
        facts.nodes.len(),
        pools_line(&facts),
        facts.network_mode.as_ref().map_or("unknown", |m| m.value.as_str())
    ));
    let skipped: Vec<String> = facts
        .nodes
        .iter()
        .filter_map(|n| n.skipped.as_ref().map(|why| format!("{} ({why})", n.name)))
        .collect();
    if !skipped.is_empty() {
        say(&format!(
            "Leaving out {} node{}: {}",
            skipped.len(),
            if skipped.len() == 1 { "" } else { "s" },
            skipped.join("; ")
        ));
    }
    let ns = format!("mixcheck-{run_id}");
    let deadline = clock + plan.deadline;
    let settle = match (&plan.target, plan.settle) {
        (_, Some(base)) => Settle::real(base),
        (crate::cluster::target::TargetSpec::Bundled { topology, .. }, None) => bundled_settle(topology),
        (_, None) => Settle::real(crate::probes::settle::REAL_CLUSTER_BASE),
    };
    let sets = coverage::NodeSets::choose(&facts, plan.coverage);
    let cells = plan_cells(plan, &facts, &sets);
    let light_checks = light_checks(&cells);
    let needs = deploy::Needs {
        host_port: cells
            .iter()
            .any(|c| c.fixed.is_none() && c.check.probe.fixture_needs().host_port),
    };
    if !sets.light.is_empty() {
        say(&format!(
            "Coverage: every check on {} representative nodes (two per set of node facts in each pool), the light per-node checks on the other {} (--coverage full checks every node)",
            sets.full.len(),
            sets.light.len()
        ));
    }
    let sets = std::sync::Mutex::new(sets);
    // Each node's pod slots: workload pods wait for one, and give it back once judged.
    let per_node = deploy::pods_per_node(&facts, fixtures, needs, &lock(&sets).full);
    let budget = match crate::cluster::budget::Budget::read(&client, &per_node).await {
        Ok(b) => b,
        Err(e) => {
            say(&format!(
                "Cannot read the nodes' pod capacity ({e}); pods are not budgeted"
            ));
            crate::cluster::budget::Budget::default()
        }
    };
    let tight = budget.tight(plan.concurrency);
    if !tight.is_empty() {
        say(&format!(
            "Few pod slots on {}: the run's pods there take turns",
            tight.join(", ")
        ));
    }
    let judged = Judged::default();
    let egress = tokio::sync::watch::Sender::new(None);
    let reach = crate::cluster::reach::Reach::default();
    // The facts once the Windows nodes' own were read (after the fixtures are deployed), and
    // what the nodes showed.
    let refined: std::sync::OnceLock<ClusterFacts> = std::sync::OnceLock::new();
    let readings: std::sync::OnceLock<Vec<crate::probes::hostfacts::Reading>> = std::sync::OnceLock::new();
    let work = async {
        for line in
            crate::cluster::leftovers::in_the_way(&client, &ns, needs.host_port.then_some(deploy::HOST_PORT)).await
        {
            say(&format!("Warning: {line}"));
        }
        deploy::create_namespace(&client, &ns, &run_id)
            .await
            .map_err(|e| e.to_string())?;
        let permits = tokio::sync::Semaphore::new(plan.concurrency);
        let workloads = crate::cluster::workload::Workloads::new(
            client.clone(),
            &ns,
            fixtures,
            deploy::run_labels(&run_id),
            plan.image_registry.clone(),
            budget,
        );
        for c in &cells {
            workloads.plan_uses(&judge::pod_keys(c, &facts));
        }
        let no_fixtures = Deployment::default();
        let early_ctx = Ctx {
            permits: &permits,
            client: client.clone(),
            workloads: &workloads,
            pods: Api::namespaced(client.clone(), &ns),
            facts: &facts,
            dep: &no_fixtures,
            ns: &ns,
            causes: &plan.causes,
            settle,
            egress: &egress,
            reach: &reach,
        };
        // Cells that create their own pods need none of the shared fixtures: they start at once,
        // while the fixtures are awaited (Windows pods start slowly on a real cluster).
        let (early, later): (Vec<_>, Vec<_>) = cells
            .iter()
            .enumerate()
            .partition(|(_, c)| !c.check.probe.needs_fixtures());
        let bar = progress.bar(crate::cluster::progress::Phase::Probe);
        bar.set_length(u64::try_from(cells.len()).unwrap_or(u64::MAX));
        let early = judge_cells(&early_ctx, early, plan.concurrency, &bar, &judged);
        // The fixtures of `scope`: every node's at first, then those of promoted nodes.
        let deploy_scope = async |scope: deploy::Scope<'_>| {
            deploy::deploy(
                &client,
                &ns,
                &run_id,
                &facts,
                fixtures,
                plan.image_registry.as_deref(),
                needs,
                scope,
                deadline,
                &progress,
            )
            .await
            .map_err(|e| e.to_string())
        };
        let later = async {
            let full = lock(&sets).full.clone();
            let mut dep = deploy_scope(deploy::Scope {
                full: &full,
                before: None,
            })
            .await?;
            // What only the Windows nodes themselves show (managed platforms), before the cells
            // that depend on it are judged.
            let read_now = crate::probes::hostfacts::read(&early_ctx.pods, &dep, &facts).await;
            let mut read = facts.clone();
            crate::probes::hostfacts::refine(&mut read, &read_now);
            let _ = readings.set(read_now);
            if let Some(line) = crate::probes::hostfacts::describe(&facts, &read) {
                say(&line);
            }
            let facts = refined.get_or_init(|| read);
            let count = cells::count(&cells);
            say(&format!(
                "Probing {} cells of {} checks ({} probes; {} fact readings)…",
                cells.len(),
                plan.selected.len(),
                count.probes,
                count.facts
            ));
            {
                let ctx = Ctx {
                    facts,
                    ..early_ctx.with_fixtures(&dep)
                };
                // Egress is detected from the fixtures while the cells that do not depend on it run.
                let detect = async {
                    if facts.egress.is_none() {
                        egress.send_replace(Some(crate::probes::connect::detect_egress(&ctx).await));
                    }
                };
                futures::future::join(detect, judge_cells(&ctx, later, plan.concurrency, &bar, &judged)).await;
            }
            // A light node whose light check failed gets every check, so that it is localised
            // and diagnosed like a representative.
            let light = lock(&sets).light.clone();
            let failing = judged.failing_nodes(|i| cells.get(i).is_some_and(|c| c.check.every_node), &light);
            if !failing.is_empty() {
                let names: Vec<&str> = failing
                    .iter()
                    .filter_map(|&i| facts.nodes.get(i))
                    .map(|n| n.name.as_str())
                    .collect();
                say(&format!(
                    "A light check failed on {} node{} ({}): checking {} with every check…",
                    names.len(),
                    if names.len() == 1 { "" } else { "s" },
                    names.join(", "),
                    if names.len() == 1 { "it" } else { "them" }
                ));
                let more = {
                    let mut s = lock(&sets);
                    s.promote(&failing);
                    cells::promotion_pairs(&cells, facts, &s, &failing)
                };
                let added = deploy_scope(deploy::Scope {
                    full: &failing,
                    before: Some(&dep),
                })
                .await?;
                dep.absorb(added);
                let ctx = Ctx {
                    facts,
                    ..early_ctx.with_fixtures(&dep)
                };
                judge::judge_more(&ctx, &cells, more, plan.concurrency, &judged).await;
            }
            Ok::<_, String>(())
        };
        let ((), later) = futures::future::join(early, later).await;
        progress.finish();
        later?;
        let facts = refined.get().unwrap_or(&facts);
        let mut cells: Vec<Cell> = judged.all_or(&cells, facts, &ns, "not judged (the run ended first)");
        let outside = boundary::apply(&mut cells);
        if outside > 0 {
            say(&format!(
                "{outside} failing cell{} of nodes outside a support boundary left indeterminate (the boundary's own cell fails)",
                if outside == 1 { "" } else { "s" }
            ));
        }
        // Evidence about the nodes failing cells were observed on, while the fixtures still run.
        let implicated = crate::triage::diagnose::implicated_nodes(&cells);
        let mut evidence = Vec::new();
        if !implicated.is_empty() {
            let nodes: Vec<&crate::cluster::facts::ClusterNode> =
                facts.nodes.iter().filter(|n| implicated.contains(&n.name)).collect();
            say(&format!(
                "Gathering evidence about {} node{} with failing cells…",
                nodes.len(),
                if nodes.len() == 1 { "" } else { "s" }
            ));
            let gathering = Instant::now();
            evidence = crate::triage::evidence::gather(&client, &ns, &nodes).await;
            if let Some(read) = readings.get() {
                for e in &mut evidence {
                    e.items.extend(crate::probes::hostfacts::evidence(read, &e.node));
                }
            }
            if plan.node_diagnostics {
                // What each node is suspected of, from the cells and the evidence so far.
                let mut so_far = mixcheck_reports::RunReport::new("", "", report.target.clone(), report.started_at);
                so_far.facts = facts.report.clone();
                so_far.cells = cells.clone();
                // Only the nodes a likely cause is localised to get a privileged pod (not every
                // other end of a failing flow), with the commands of what they are suspected of.
                let suspects = crate::triage::diagnose::suspects(&so_far, &plan.causes, &evidence);
                let on: Vec<_> = facts
                    .nodes
                    .iter()
                    .enumerate()
                    .filter_map(|(i, n)| {
                        let suspected = suspects.get(&n.name).cloned().unwrap_or_default();
                        (implicated.contains(&n.name) && (!suspected.is_empty() || !n.ready)).then(|| {
                            (
                                i,
                                n,
                                crate::triage::diagnose::node_vars(&facts.report, &n.name),
                                suspected,
                            )
                        })
                    })
                    .collect();
                crate::triage::diagnostics::run(
                    &client,
                    &ns,
                    &deploy::run_labels(&run_id),
                    fixtures,
                    plan.image_registry.as_deref(),
                    &plan.causes,
                    &on,
                    &mut evidence,
                    &say,
                )
                .await;
            }
            say(&format!(
                "Evidence gathered in {:.1}s",
                gathering.elapsed().as_secs_f64()
            ));
        }
        let bundle = match &plan.bundle {
            Some(_) => Some(crate::triage::bundle::collect(&client, &ns, &run_id, fixtures).await),
            None => None,
        };
        Ok::<_, String>((cells, evidence, bundle))
    };
    let outcome = tokio::select! {
        r = work => Ended::Done(r),
        _ = interrupted() => Ended::Interrupted,
        _ = tokio::time::sleep_until(deadline.into()) => Ended::Deadline,
    };
    let bundled = target.bundled.is_some();
    let mut kept = None;
    if plan.keep {
        say(&deploy::describe_keep(&ns));
        // Interrupted, the user wants out: the cluster stops as it is dropped.
        kept = target.bundled.filter(|_| !matches!(outcome, Ended::Interrupted));
    } else {
        cleanup(&client, &ns, &say).await;
        target.stop().await;
    }
    say(&format!(
        "{} API calls",
        api_calls.load(std::sync::atomic::Ordering::Relaxed)
    ));
    let (code, (cells, evidence, bundle), aborted) = match outcome {
        Ended::Done(Ok(done)) => (None, done, None),
        Ended::Done(Err(e)) => (
            Some(Code::Failed),
            (Vec::new(), Vec::new(), None),
            Some(format!("the run could not deploy its fixtures: {e}")),
        ),
        Ended::Interrupted => (
            Some(Code::Interrupted),
            (Vec::new(), Vec::new(), None),
            Some("interrupted (Ctrl-C); the run namespace was deleted".into()),
        ),
        // What was judged before the deadline stays; the rest is an error that says why.
        Ended::Deadline => (
            Some(Code::Failed),
            (
                judged.all_or(
                    &cells,
                    &facts,
                    &ns,
                    &format!(
                        "not judged before the run's deadline ({}s, --timeout)",
                        plan.deadline.as_secs()
                    ),
                ),
                Vec::new(),
                None,
            ),
            Some(format!(
                "the run's deadline ({}s, --timeout) passed before every check ran",
                plan.deadline.as_secs()
            )),
        ),
    };
    report.cells = cells;
    if let Some(read) = refined.get() {
        report.facts = read.report.clone();
    }
    report.coverage = Some(lock(&sets).report(&facts, light_checks));
    if !plan.keep {
        // The commands need what the run deleted; say so where they are printed.
        let note = if bundled {
            "  # the bundled cluster stopped with the run: rerun with --keep to keep it serving"
        } else {
            "  # the run deleted its namespace: rerun with --keep to keep it"
        };
        for cell in &mut report.cells {
            if let Some(r) = &mut cell.reproduce {
                r.push_str(note);
            }
        }
    }
    if let Some(detected) = egress.borrow().clone() {
        report.facts.egress = Some(detected);
    }
    if let (Some(code), Some(reason)) = (code, aborted) {
        return Finished {
            kept,
            ..abort(report, code, reason)
        };
    }
    if let Some(baseline) = &plan.baseline {
        report.baseline = Some(report.against(baseline, plan.strict));
    }
    let inferring = Instant::now();
    let diagnosis = crate::triage::diagnose::diagnose(&report, &plan.causes, evidence, plan.node_diagnostics);
    if !diagnosis.is_empty() {
        say(&format!(
            "Diagnosis: {} likely cause{}, {} failing cell{} unexplained ({} ms)",
            diagnosis.causes.len(),
            if diagnosis.causes.len() == 1 { "" } else { "s" },
            diagnosis.unexplained.len(),
            if diagnosis.unexplained.len() == 1 { "" } else { "s" },
            inferring.elapsed().as_millis()
        ));
    }
    report.diagnosis = Some(diagnosis);
    report.finished_at = Utc::now();
    report.duration_ms = u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
    let code = if report.gate_passed(plan.strict) {
        Code::Passed
    } else {
        Code::Failed
    };
    Finished {
        code,
        report,
        bundle,
        kept,
    }
}

/// What the work of a run hands back: the cells, the evidence about implicated nodes and, with
/// `--bundle`, what the bundle holds of the cluster.
type Collected = (
    Vec<Cell>,
    Vec<mixcheck_reports::NodeEvidence>,
    Option<crate::triage::bundle::Collected>,
);

enum Ended {
    Done(Result<Collected, String>),
    Interrupted,
    Deadline,
}

/// The settle window on the bundled cluster: its topology's longest programming delay and a
/// margin of 200 ms, for every kind of flow (its proxies program all of them within that delay
/// of the last change, which comes before the fixtures are ready); none on an instant topology
/// (one attempt decides).
fn bundled_settle(topology: &simcluster::Topology) -> Settle {
    let delay = topology.programming_delay();
    let base = if delay.is_zero() {
        Duration::ZERO
    } else {
        delay + Duration::from_millis(200)
    };
    Settle { base, multiples: false }
}

/// Resolves on Ctrl-C or SIGTERM.
async fn interrupted() {
    #[cfg(unix)]
    {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Connects to the plan's target (starting the bundled cluster), checks the run's permissions
/// and reads the facts, within the run's deadline; what stops it comes with its exit code.
pub(crate) async fn open(
    plan: &RunPlan,
    run_id: &str,
    say: &dyn Fn(&str),
) -> Result<(crate::cluster::target::Target, ClusterFacts), Refused> {
    let target = match tokio::time::timeout(plan.deadline, crate::cluster::target::connect(&plan.target, say)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            let e = crate::errors::Error::from(e);
            return Err((e.process_exit_code(), e.to_string(), None));
        }
        Err(_) => {
            return Err((
                Code::Unreachable,
                "the cluster did not answer before the run's deadline".into(),
                None,
            ));
        }
    };
    let seen = Some(target.report.clone());
    if let Err(missing) = preflight(&target.client, &format!("mixcheck-{run_id}")).await {
        target.stop().await;
        return Err((Code::Unreachable, missing, seen));
    }
    match facts::collect(&target.client, plan.network_mode.as_deref(), plan.egress).await {
        Ok(f) => Ok((target, f)),
        Err(e) => {
            target.stop().await;
            Err((Code::Unreachable, format!("cannot read the cluster's facts: {e}"), seen))
        }
    }
}

/// Why a run could not start: its exit code, the reason, and the target when it answered.
type Refused = (Code, String, Option<mixcheck_reports::Target>);

/// The guarded value, also after a panic elsewhere poisoned the lock.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The `everyNode` checks among the planned cells, once each.
fn light_checks(cells: &[cells::CellPlan<'_>]) -> Vec<String> {
    let mut names: Vec<String> = cells
        .iter()
        .filter(|c| c.check.every_node)
        .map(|c| c.check.name.clone())
        .collect();
    names.dedup();
    names
}

fn pools_line(facts: &ClusterFacts) -> String {
    let mut pools: BTreeMap<String, usize> = BTreeMap::new();
    for n in &facts.nodes {
        *pools.entry(n.pool()).or_default() += 1;
    }
    pools
        .iter()
        .map(|(p, n)| format!("{n}× {p}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Deletes the run namespace (everything the run created is in it).
pub async fn cleanup(client: &kube::Client, ns: &str, say: &dyn Fn(&str)) {
    let api: Api<Namespace> = Api::all(client.clone());
    match tokio::time::timeout(Duration::from_secs(30), api.delete(ns, &DeleteParams::background())).await {
        Ok(Ok(_)) => say(&format!("Deleted the run namespace {ns}")),
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => {}
        Ok(Err(e)) => {
            eprintln!("mixcheck: could not delete the run namespace {ns}: {e} (delete it with `mixcheck cleanup`)")
        }
        Err(_) => eprintln!("mixcheck: deleting the run namespace {ns} timed out (delete it with `mixcheck cleanup`)"),
    }
}

/// The run namespaces on a cluster with their phase.
pub async fn leftovers(client: &kube::Client) -> Result<Vec<(String, String)>, kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default().labels(&format!(
            "{}={}",
            crate::cluster::fixture::MANAGED_BY.0,
            crate::cluster::fixture::MANAGED_BY.1
        )))
        .await?;
    Ok(list
        .items
        .into_iter()
        .map(|n| {
            let phase = n.status.and_then(|s| s.phase).unwrap_or_default();
            (n.metadata.name.unwrap_or_default(), phase)
        })
        .collect())
}

/// `mixcheck cleanup`: deletes every namespace a run left (label app.kubernetes.io/managed-by=mixcheck).
pub async fn cleanup_all(client: &kube::Client, say: &dyn Fn(&str)) -> Result<usize, kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default().labels(&format!(
            "{}={}",
            crate::cluster::fixture::MANAGED_BY.0,
            crate::cluster::fixture::MANAGED_BY.1
        )))
        .await?;
    let mut n = 0;
    for ns in list.items {
        if ns.metadata.deletion_timestamp.is_some() {
            // Already going (a run that ended deletes its namespace in the background).
            continue;
        }
        if let Some(name) = ns.metadata.name {
            api.delete(&name, &DeleteParams::background()).await?;
            say(&format!("deleted namespace {name}"));
            n += 1;
        }
    }
    Ok(n)
}

/// Checks with SelfSubjectAccessReview that the credentials allow what the run does; lists
/// every missing permission.
async fn preflight(client: &kube::Client, ns: &str) -> Result<(), String> {
    let needs: &[(&str, &str, &str, &str, bool)] = &[
        // verb, group, resource, subresource, namespaced
        ("create", "", "namespaces", "", false),
        ("delete", "", "namespaces", "", false),
        ("list", "", "nodes", "", false),
        ("get", "", "nodes", "proxy", false),
        ("create", "", "pods", "", true),
        ("patch", "", "pods", "", true),
        ("list", "", "pods", "", true),
        ("create", "", "pods", "exec", true),
        ("create", "", "services", "", true),
        ("patch", "", "services", "", true),
        ("list", "", "events", "", true),
        ("list", "", "pods", "", false),
        ("get", "", "pods", "log", false),
        ("list", "apps", "daemonsets", "", false),
        ("list", "", "configmaps", "", false),
    ];
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let mut missing = Vec::new();
    for (verb, group, resource, sub, namespaced) in needs {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(verb.to_string()),
                    group: Some(group.to_string()),
                    resource: Some(resource.to_string()),
                    subresource: (!sub.is_empty()).then(|| sub.to_string()),
                    namespace: namespaced.then(|| ns.to_string()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let what = format!(
            "{verb} {}{resource}{}",
            if group.is_empty() {
                String::new()
            } else {
                format!("{group}/")
            },
            if sub.is_empty() {
                String::new()
            } else {
                format!("/{sub}")
            }
        );
        match api.create(&PostParams::default(), &review).await {
            Ok(r) if r.status.as_ref().is_some_and(|s| s.allowed) => {}
            Ok(_) => missing.push(what),
            Err(e) => return Err(format!("the access review for \"{what}\" failed: {e}")),
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the credentials lack permissions the run needs:\n  - {}\n  check: the RBAC bindings of the kubeconfig's user (`kubectl auth can-i --list`)",
            missing.join("\n  - ")
        ))
    }
}
