//! One `mixcheck run`, from a validated plan to its report, as the list of its stages: connect
//! (start the bundled cluster or reach the kubeconfig's), check permissions and read the facts
//! (`connect`); plan the cells, coverage and windows from the facts alone (`prepare`); create
//! the namespace, deploy and probe (`probe`); gather evidence about the failing nodes
//! (`evidence`); clean up (`namespace`) — also on Ctrl-C and at the deadline; assemble, diagnose
//! and gate the report (`finish`).

pub mod boundary;
pub(crate) mod cells;
mod connect;
pub mod coverage;
mod discriminate;
mod evidence;
mod finish;
mod judge;
mod namespace;
pub mod plan;
mod prepare;
pub mod preview;
mod probe;
pub mod watch;

pub(crate) use connect::open;
pub use namespace::{cleanup_all, leftovers, remove_labelled};

use mixcheck_reports::RunReport;

use crate::cluster::facts::ClusterFacts;
use crate::cluster::fixture::Fixtures;
use crate::cluster::progress::Progress;
use crate::cluster::target::Target;
use crate::errors::Code;
use crate::run::plan::RunPlan;
use finish::{Collected, Ended, Start};
use prepare::Prepared;
use probe::Probing;

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

/// What every stage after connecting reads: the plan, the fixtures, the cluster and the facts
/// read from it, the run's id and where progress is said.
pub(crate) struct Run<'a> {
    pub plan: &'a RunPlan,
    pub fixtures: &'a Fixtures,
    pub client: kube::Client,
    pub facts: &'a ClusterFacts,
    pub run_id: &'a str,
    pub progress: &'a Progress,
}

impl Run<'_> {
    /// Says one line of progress.
    pub fn say(&self, line: &str) {
        self.progress.say(line);
    }
}

/// Runs the plan, stage by stage. Errors before any check become an aborted report with their
/// exit code.
pub async fn execute(plan: &RunPlan, fixtures: &Fixtures) -> Finished {
    let mut start = Start::new(plan);
    let progress = Progress::for_stderr(plan.quiet);
    let (target, facts) = match connect::open(plan, &start.run_id, &|m| progress.say(m), &|m| progress.warn(m)).await {
        Ok(opened) => opened,
        Err(refused) => return start.refused(refused),
    };
    start.connected(&target, &facts);
    let run_id = start.run_id.clone();
    let run = Run {
        plan,
        fixtures,
        client: target.client.clone(),
        facts: &facts,
        run_id: &run_id,
        progress: &progress,
    };
    run.say(&prepare::describe_cluster(&facts));
    if let Some(line) = prepare::describe_skipped(&facts) {
        run.say(&line);
    }
    let prepared = Prepared::new(plan, &facts, &run_id, start.began());
    // A pull secret the run cannot use stops it before it creates anything.
    if let Err(e) = crate::cluster::pullsecret::check(&run.client, &prepared.ns, &plan.registry.pull_secrets).await {
        let e = crate::errors::Error::from(e);
        let seen = Some(target.report.clone());
        target.stop().await;
        return start.refused((e.process_exit_code(), e.to_string(), seen));
    }
    if let Some(line) = prepared.coverage_line() {
        run.say(&line);
    }
    let budget = prepared.budget(&run).await;
    let probing = Probing::default();
    let ended = tokio::select! {
        r = work(&run, &start.report, &prepared, budget, &probing) => Ended::Done(r),
        _ = crate::cluster::signal::interrupted() => Ended::Interrupted,
        _ = tokio::time::sleep_until(prepared.deadline.into()) => Ended::Deadline,
    };
    tracing::debug!("stage work done");
    let kept = clean_up(&run, target, &prepared.ns, &ended).await;
    tracing::debug!("stage clean up done");
    start.finish(&run, &prepared, &probing, ended, kept)
}

/// The stages that touch the cluster, in order, until the report's cells and evidence: probe
/// (namespace, fixtures, cells), the support boundary, evidence, the `--bundle`.
async fn work(
    run: &Run<'_>,
    report: &RunReport,
    prepared: &Prepared<'_>,
    budget: crate::cluster::budget::Budget,
    probing: &Probing,
) -> Result<Collected, String> {
    probe::probe(run, prepared, budget, probing).await?;
    tracing::debug!("stage probe done");
    let facts = probing.facts(run.facts);
    let mut cells = probing
        .judged
        .all_or(&prepared.cells, facts, &prepared.ns, "not judged (the run ended first)");
    let outside = boundary::apply(&mut cells);
    if outside > 0 {
        run.say(&format!(
            "{outside} failing cell{} of nodes outside a support boundary left indeterminate (the boundary's own cell fails)",
            if outside == 1 { "" } else { "s" }
        ));
    }
    let evidence = evidence::gather(
        run,
        report,
        facts,
        &prepared.ns,
        &cells,
        probing.readings.get(),
        probing.pods.get(),
    )
    .await;
    let bundle = match &run.plan.bundle {
        Some(_) => Some(crate::triage::bundle::collect(&run.client, &prepared.ns, run.run_id, run.fixtures).await),
        None => None,
    };
    Ok((cells, evidence, bundle))
}

/// Deletes the run namespace and stops the bundled cluster — or, with `--keep`, keeps both
/// (unless interrupted: the user wants out) and says how to inspect them. Counts the API calls.
async fn clean_up(run: &Run<'_>, target: Target, ns: &str, ended: &Ended) -> Option<simcluster::Cluster> {
    let api_calls = target.api_calls.clone();
    let mut kept = None;
    if run.plan.keep {
        run.say(&crate::cluster::deploy::describe_keep(ns));
        kept = target.bundled.filter(|_| !matches!(ended, Ended::Interrupted));
    } else {
        match &run.plan.namespace {
            Some(_) => namespace::remove_run_objects(&run.client, ns, run.run_id, &|m| run.say(m)).await,
            None => namespace::cleanup(&run.client, ns, &|m| run.say(m)).await,
        }
        tracing::debug!("run objects deleted");
        target.stop().await;
    }
    run.say(&format!(
        "{} API calls",
        api_calls.load(std::sync::atomic::Ordering::Relaxed)
    ));
    kept
}

/// The guarded value, also after a panic elsewhere poisoned the lock.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}
