//! `mixcheck watch`: a continuous canary. It connects and deploys the fixtures once, as a run
//! does, keeps them (healing what goes), and every `--interval` probes a cycle — the light
//! per-node checks on every node and a rotating share of the other cells — judging each cell as
//! `run` does. What it saw goes to the metrics on `--listen` (flake ratios and the diagnosis over
//! `--flake-window`), and one JSON line per cycle to `--history`. A node that joins or leaves
//! starts a new epoch: the facts are read again, the cells planned again, the new node's
//! fixtures deployed and the series of a node that left dropped. Ctrl-C or SIGTERM deletes what
//! it created.

mod board;
mod cycle;
mod exposition;
mod heal;
pub mod history;
mod ledger;
mod marks;
mod rotation;
mod server;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};

use crate::cluster::facts::{self, ClusterFacts};
use crate::cluster::fixture::Fixtures;
use crate::cluster::progress::Progress;
use crate::errors::Code;
use crate::run::finish::Start;
use crate::run::plan::RunPlan;
use crate::run::{Run, connect, namespace};
use board::Board;
use server::Shared;

/// What `mixcheck watch` adds to a run's plan.
#[derive(Debug, Clone)]
pub struct Options {
    /// Time between the starts of two cycles.
    pub interval: Duration,
    /// Every cell is probed at least once this often.
    pub full_every: Duration,
    /// The window of flake ratios and of the diagnosis.
    pub flake_window: Duration,
    pub listen: std::net::SocketAddr,
    /// Where each cycle's JSON line goes.
    pub history: Option<PathBuf>,
    /// How many cycles the history keeps.
    pub retain: usize,
    /// Stop after this many cycles (scripts and tests); None: until interrupted.
    pub cycles: Option<u64>,
    /// `--mark-nodes`: mark a node after this many failing cycles in a row (None: never).
    pub mark_after: Option<u32>,
}

/// Watches until interrupted (or `--cycles`), then cleans up; the exit code says why it
/// stopped early (an unreachable cluster: 3; a taken `--listen` address: 2).
pub async fn watch(plan: &RunPlan, fixtures: &Fixtures, opts: &Options) -> Code {
    let progress = Progress::for_stderr(plan.quiet);
    let shared: Shared = Arc::new(Mutex::new(Board::default()));
    let server = match server::bind(opts.listen, shared.clone()).await {
        Ok(s) => s,
        Err(why) => {
            eprintln!("mixcheck: {why}");
            return Code::Usage;
        }
    };
    let mut start = Start::new(plan);
    let (target, read) = match connect::open(plan, &start.run_id, &|m| progress.say(m), &|m| progress.warn(m)).await {
        Ok(opened) => opened,
        Err((code, why, _)) => {
            eprintln!("mixcheck: {why}");
            server.abort();
            return code;
        }
    };
    start.connected(&target, &read);
    let history = match &opts.history {
        Some(dir) => match history::Writer::new(dir, opts.retain, &start.run_id) {
            Ok(w) => Some(w),
            Err(e) => {
                eprintln!("mixcheck: --history: {e}");
                target.stop().await;
                server.abort();
                return Code::Usage;
            }
        },
        None => None,
    };
    progress.say(&format!(
        "Watching every {} (every cell at least every {}); metrics on http://{}/metrics",
        crate::cluster::duration::human(opts.interval),
        crate::cluster::duration::human(opts.full_every),
        opts.listen
    ));
    let run_id = start.run_id.clone();
    let ns = plan.namespace.clone().unwrap_or_else(|| format!("mixcheck-{run_id}"));
    let watching = Watching {
        plan,
        fixtures,
        opts,
        client: target.client.clone(),
        run_id: &run_id,
        progress: &progress,
        shared: &shared,
        template: &start.report,
    };
    let ended = tokio::select! {
        r = watching.epochs(read, history) => r,
        _ = crate::cluster::signal::interrupted() => {
            progress.say("Interrupted: deleting what the watch created…");
            Ok(())
        }
    };
    let code = match ended {
        Ok(()) => Code::Passed,
        Err(why) => {
            eprintln!("mixcheck: the watch stopped: {why}");
            Code::Unreachable
        }
    };
    match &plan.namespace {
        Some(_) => namespace::remove_run_objects(&target.client, &ns, &run_id, &|m| progress.say(m)).await,
        None => namespace::cleanup(&target.client, &ns, &|m| progress.say(m)).await,
    }
    target.stop().await;
    server.abort();
    code
}

/// What every epoch of a watch reads.
struct Watching<'a> {
    plan: &'a RunPlan,
    fixtures: &'a Fixtures,
    opts: &'a Options,
    client: kube::Client,
    run_id: &'a str,
    progress: &'a Progress,
    shared: &'a Shared,
    /// The report every diagnosis starts from (target and facts).
    template: &'a mixcheck_reports::RunReport,
}

impl Watching<'_> {
    /// Epoch after epoch, each with the facts of one membership of the cluster, until
    /// `--cycles` are done.
    async fn epochs(&self, mut read: ClusterFacts, mut history: Option<history::Writer>) -> Result<(), String> {
        let mut cycles = 0u64;
        let mut first = true;
        let mut marks = marks::Marks::default();
        loop {
            let run = Run {
                plan: self.plan,
                fixtures: self.fixtures,
                client: self.client.clone(),
                facts: &read,
                run_id: self.run_id,
                progress: self.progress,
            };
            let joined = match cycle::Epoch::run(self, &run, first, &mut cycles, &mut history, &mut marks).await {
                Ok(joined) => joined,
                // The first deploy failing stops the watch (exit 3, as a run); a later one is a
                // cycle error, tried again after an interval with the facts read again.
                Err(e) if first => return Err(e),
                Err(e) => {
                    self.progress.warn(&format!(
                        "Warning: deploying for the nodes now there failed ({e}); trying again"
                    ));
                    lock(self.shared).cycle_errors += 1;
                    tokio::time::sleep(self.opts.interval).await;
                    Some(names_of(&read))
                }
            };
            first = false;
            let Some(names) = joined else {
                return Ok(());
            };
            if names != names_of(&read) {
                self.progress
                    .say("The cluster's nodes changed: reading its facts again and deploying for new nodes…");
            }
            lock(self.shared).keep_nodes(&names);
            read = self.reread().await?;
        }
    }

    /// The cluster's facts read again (a node joined or left), retried until the API server
    /// answers.
    async fn reread(&self) -> Result<ClusterFacts, String> {
        let mut waited = Duration::ZERO;
        loop {
            match facts::collect(&self.client, self.plan.network_mode.as_deref(), self.plan.egress).await {
                Ok(f) => return Ok(f),
                Err(e) if waited < self.plan.deadline => {
                    self.progress
                        .warn(&format!("Cannot read the cluster's facts ({e}); trying again"));
                    tokio::time::sleep(self.opts.interval).await;
                    waited += self.opts.interval;
                }
                Err(e) => return Err(format!("cannot read the cluster's facts: {e}")),
            }
        }
    }
}

/// A node as the API lists it now.
#[derive(Debug, Clone)]
pub(super) struct NodeSeen {
    pub name: String,
    pub ready: bool,
    pub cordoned: bool,
}

impl NodeSeen {
    /// Whether pods can start there: Ready and not cordoned.
    pub fn available(&self) -> bool {
        self.ready && !self.cordoned
    }
}

/// The nodes as the API lists them now.
async fn nodes(client: &kube::Client) -> Result<Vec<NodeSeen>, String> {
    let api: Api<Node> = Api::all(client.clone());
    let listed = match tokio::time::timeout(Duration::from_secs(30), api.list(&ListParams::default())).await {
        Ok(Ok(l)) => l.items,
        Ok(Err(e)) => return Err(format!("cannot list the nodes: {e}")),
        Err(_) => return Err("listing the nodes took over 30 s".into()),
    };
    Ok(listed
        .into_iter()
        .map(|n| {
            let ready = n
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            let cordoned = n.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false);
            NodeSeen {
                name: n.metadata.name.unwrap_or_default(),
                ready,
                cordoned,
            }
        })
        .collect())
}

/// The set of node names of `facts`.
fn names_of(facts: &ClusterFacts) -> BTreeSet<String> {
    facts.nodes.iter().map(|n| n.name.clone()).collect()
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Board> {
    crate::run::lock(shared)
}
