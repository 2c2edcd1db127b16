//! The fixture workloads of `create` and `exec` probes, deployed on demand on a node of the
//! cell's pool: a `create` probe watches what the API server, scheduler and kubelet do with its
//! pod (accepted and running, refused by the API, failed by the kubelet/runtime, unschedulable);
//! an `exec` probe's pod is created once per node and awaited before its command runs.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::Value;
use tokio::sync::{Mutex, OnceCell, OwnedSemaphorePermit};

use crate::catalogue::suite::CreateOutcome;
use crate::cluster::budget::Budget;
use crate::cluster::deploy::{Refusal, SANDBOX_FAILURES};
use crate::cluster::facts::ClusterNode;
use crate::cluster::fixture::{self, Fixtures};
use crate::cluster::podwatch::{PodView, PodWatch};
use crate::cluster::pulls;

/// A fixture pod for exec probes, created once: its name, or why it never ran.
type Ready = Arc<OnceCell<Result<String, NotReady>>>;

/// Waiting reasons that say the fixture's image could not be had.
const IMAGE_PROBLEMS: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
];

/// Why a fixture pod that did not run is not ready: the node failed it, unless its image could
/// not be pulled (the fixture's problem, not the node's answer; one its registry will not give
/// says which flag gets it) or it never settled.
fn not_ready(name: &str, seen: &Observed) -> NotReady {
    if let Some(problem) = &seen.unpullable {
        return NotReady::Unpullable(format!("the fixture pod {name} did not start: {problem}"));
    }
    let why = format!("the fixture pod {name} did not start: {}", seen.message);
    match seen.outcome {
        CreateOutcome::Fails if !IMAGE_PROBLEMS.iter().any(|r| seen.message.contains(r)) => NotReady::Failed(why),
        _ => NotReady::Other(why),
    }
}

/// Why a fixture pod for exec probes is not running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    /// The kubelet or the runtime failed it (a `fails` outcome): its status and events.
    Failed(String),
    /// The cluster's admission policy refused it: the check cannot run here.
    Refused(String),
    /// Its image cannot be pulled from its registry (refused, unreachable, missing): the check
    /// cannot run until the run is given the credentials or the mirror the message names.
    Unpullable(String),
    /// Anything else: an API error, unschedulable, not settled in time.
    Other(String),
}

impl NotReady {
    /// The error of creating pod `name`: a policy refusal, or anything else.
    fn of_create(name: &str, e: &kube::Error) -> Self {
        match Refusal::of(e) {
            Some(r) if r.policy => Self::Refused(format!("pod {name}: {}", r.problem())),
            _ => Self::Other(format!("pod {name}: {e}")),
        }
    }
}

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Failed(why) | Self::Refused(why) | Self::Unpullable(why) | Self::Other(why) => f.write_str(why),
        }
    }
}

/// How often a pod the kubelet refused for want of a pod slot (`OutOfpods`) is created again:
/// a kubelet still counts a pod it is tearing down after the API has let it go.
const ADMISSION_RETRIES: u32 = 20;

/// The pause before the `attempt`th creation: 250 ms doubling to 5 s.
fn retry_pause(attempt: u32) -> Duration {
    Duration::from_millis(250)
        .saturating_mul(1 << attempt.min(5))
        .min(Duration::from_secs(5))
}

/// The name of the `attempt`th creation of pod `first` (a refused pod keeps its name while it
/// is deleted).
fn retry_name(first: &str, attempt: u32) -> String {
    if attempt == 0 {
        return first.to_string();
    }
    let suffix = format!("-r{attempt}");
    let keep = 63usize.saturating_sub(suffix.len());
    format!("{}{suffix}", first.chars().take(keep).collect::<String>())
}

/// One creation of a workload pod.
enum Attempt {
    Seen(Observed),
    OutOfPods,
}

/// How long a created Linux pod may take to show what it does.
const SETTLE: Duration = Duration::from_secs(120);
/// How long a created Windows pod may take: its image may be a first pull of several GB
/// (Server Core `ltsc2025`), the e2e framework's wait for a pod "pulling a large image"
/// (kubernetes `test/e2e/framework/timeouts.go`, `podStartSlowTimeout`, 15 minutes).
const SETTLE_WINDOWS: Duration = Duration::from_secs(15 * 60);

/// What happened to a created pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub outcome: CreateOutcome,
    /// The API error, or the pod's status reason/message and its warning events.
    pub message: String,
    /// The termination messages the kubelet reported for the pod's terminated containers
    /// (`state.terminated.message`), one a line; empty when none did.
    pub termination: String,
    /// The image the pod could not get from its registry, when that stopped it
    /// ([`pulls::Unpullable::problem`]): the fixture's problem, not the node's answer.
    pub unpullable: Option<String>,
}

/// A running pod [`Workloads::start`] created: its name, its address and its pod slot.
#[derive(Debug)]
pub struct Started {
    pub name: String,
    pub ip: String,
    slot: Option<OwnedSemaphorePermit>,
}

/// A pod a cell starts for itself: a pod of `fixture` on `node`, named after the cell's
/// `index` and `suffix`, changed by `mutate`.
pub struct CellPod<'x> {
    pub fixture: &'x str,
    pub node: &'x ClusterNode,
    pub index: usize,
    pub suffix: &'x str,
    pub mutate: &'x (dyn Fn(&mut Value) + Sync),
}

/// A pod started ahead of its cell: locked while it starts, then how that went (taken once).
type Parked = Arc<Mutex<Option<Result<Started, NotReady>>>>;

/// How a deleted pod went ([`Workloads::stop_timed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub name: String,
    /// From the delete call until the API no longer had the pod; None when it was still there
    /// a minute past its grace period.
    pub took: Option<Duration>,
    /// The grace period of the deletion, in seconds.
    pub grace: i64,
}

/// How often a deletion asks the API whether the pod is gone, besides the pod watch's events.
const DELETE_POLL: Duration = Duration::from_secs(1);

/// Deploys fixture pods for probes; each (fixture, node) once.
pub struct Workloads<'a> {
    pub client: kube::Client,
    pub ns: String,
    pub fixtures: &'a Fixtures,
    pub labels: std::collections::BTreeMap<String, String>,
    /// The run's mirrors and pull secrets.
    pub registry: crate::cluster::registry::Registry,
    ready: Mutex<HashMap<String, Ready>>,
    watch: PodWatch,
    /// The node's pod slots (allocatable pods less what is there).
    budget: Budget,
    /// Exec fixture pods in use: their name and the slot they hold, by key.
    held: std::sync::Mutex<HashMap<String, (String, Option<OwnedSemaphorePermit>)>>,
    /// Cells still to be judged that may use each exec fixture pod, by key.
    uses: std::sync::Mutex<HashMap<String, usize>>,
    /// Pods started ahead of their cells ([`Self::prestart`]) and how that went, by pod name:
    /// the cell's [`Self::start`] takes its own, waiting for it while it still starts.
    parked: std::sync::Mutex<HashMap<String, Parked>>,
    /// Set once the parked pods are stopped: no pod is started ahead any more.
    closed: std::sync::atomic::AtomicBool,
}

impl<'a> Workloads<'a> {
    /// The run namespace's pods and warnings, as the run's pod watch sees them.
    pub fn pods(&self) -> &PodWatch {
        &self.watch
    }

    pub fn new(
        client: kube::Client,
        ns: &str,
        fixtures: &'a Fixtures,
        labels: std::collections::BTreeMap<String, String>,
        registry: crate::cluster::registry::Registry,
        budget: Budget,
    ) -> Self {
        Self {
            watch: PodWatch::start(&client, ns),
            client,
            ns: ns.to_string(),
            fixtures,
            labels,
            registry,
            ready: Mutex::new(HashMap::new()),
            budget,
            held: std::sync::Mutex::default(),
            uses: std::sync::Mutex::default(),
            parked: std::sync::Mutex::default(),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The key of the exec fixture pod of `fixture` (`variant`) on `node`.
    pub fn key(fixture: &str, variant: &str, node: &str) -> String {
        format!("{fixture}{variant}@{node}")
    }

    /// Counts the cells that may use each of `keys` (called for every cell before any runs).
    pub fn plan_uses(&self, keys: &[String]) {
        if let Ok(mut uses) = self.uses.lock() {
            for k in keys {
                *uses.entry(k.clone()).or_default() += 1;
            }
        }
    }

    /// A cell that may have used `keys` is judged: a pod no cell still needs is deleted and
    /// its slot given back.
    pub async fn cell_done(&self, keys: &[String]) {
        let done: Vec<(String, Option<OwnedSemaphorePermit>)> = {
            let (Ok(mut uses), Ok(mut held)) = (self.uses.lock(), self.held.lock()) else {
                return;
            };
            keys.iter()
                .filter(|k| {
                    let left = uses.entry((*k).clone()).or_default();
                    *left = left.saturating_sub(1);
                    *left == 0
                })
                .filter_map(|k| held.remove(k))
                .collect()
        };
        for (name, slot) in done {
            self.delete(&name).await;
            drop(slot);
        }
    }

    /// A slot on `node` (waits for one), or None where the node's budget is unknown.
    async fn slot(&self, node: &str) -> Option<OwnedSemaphorePermit> {
        self.budget.slots(node)?.acquire_owned().await.ok()
    }

    /// Deletes a pod of the run at once and waits until the API no longer has it (its slot is
    /// free for the scheduler then), within a minute.
    async fn delete(&self, name: &str) {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        // Whether the pod watch has the pod: then its deletion event ends the wait.
        let watched = self.watch.has(name);
        // A short grace: the API lets the pod go once its kubelet has stopped it, so the slot
        // is free for the kubelet too (a forced deletion would free it for the API only).
        let now = kube::api::DeleteParams {
            grace_period_seconds: Some(1),
            ..Default::default()
        };
        let mut changes = self.watch.subscribe();
        if pods.delete(name, &now).await.is_err() {
            return;
        }
        let until = Instant::now() + Duration::from_secs(60);
        let mut ask = if watched {
            Instant::now() + DELETE_POLL
        } else {
            Instant::now()
        };
        while Instant::now() < until {
            changes.mark_unchanged();
            if watched && !self.watch.has(name) {
                return;
            }
            // The API itself now and then: a watch that broke and re-listed may have missed the
            // deletion, and a pod it never had has no event to wait for.
            if Instant::now() >= ask {
                match tokio::time::timeout(Duration::from_secs(10), pods.get_opt(name)).await {
                    Ok(Ok(None)) | Ok(Err(_)) => return,
                    _ => ask = Instant::now() + DELETE_POLL,
                }
            }
            let wait = ask.min(until).saturating_duration_since(Instant::now());
            if let Ok(Err(_)) = tokio::time::timeout(wait, changes.changed()).await {
                // The watch has stopped: the API alone decides.
                tokio::time::sleep(wait).await;
            }
        }
    }

    fn pod_for(
        &self,
        fixture: &str,
        node: &ClusterNode,
        index: usize,
        suffix: &str,
    ) -> Result<(String, Value), String> {
        let fx = self
            .fixtures
            .get(fixture)
            .ok_or_else(|| format!("fixture {fixture:?} does not exist (fixtures/{fixture}.yaml)"))?;
        let pod = fx
            .pod_for(node)
            .ok_or_else(|| format!("fixture {fixture:?} has no {} pod", node.os))?;
        let name = format!("{fixture}-{index}{suffix}");
        let name: String = name.chars().take(63).collect();
        let mut p = fixture::stamp(pod, &name, node, &self.labels, &self.registry);
        p["apiVersion"] = Value::from("v1");
        p["kind"] = Value::from("Pod");
        Ok((name, p))
    }

    /// Applies the fixture's other objects (Secrets, ConfigMaps) once.
    async fn others(&self, fixture: &str) -> Result<(), String> {
        let Some(fx) = self.fixtures.get(fixture) else {
            return Ok(());
        };
        for doc in &fx.others {
            let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
            let name = doc
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("v1");
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
            let (ar, _) = kube::discovery::pinned_kind(&self.client, &gvk)
                .await
                .map_err(|e| format!("{kind}: {e}"))?;
            let api: Api<kube::api::DynamicObject> = Api::namespaced_with(self.client.clone(), &self.ns, &ar);
            let mut obj = doc.clone();
            if let Some(run_id) = self.labels.get(fixture::RUN_LABEL) {
                fixture::fill_run_id(&mut obj, run_id);
            }
            if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                let labels = meta
                    .entry("labels")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(l) = labels.as_object_mut() {
                    for (k, v) in &self.labels {
                        l.insert(k.clone(), Value::from(v.clone()));
                    }
                }
            }
            let params = kube::api::PatchParams::apply("mixcheck").force();
            api.patch(name, &params, &kube::api::Patch::Apply(&obj))
                .await
                .map_err(|e| format!("{kind} {name}: {e}"))?;
        }
        Ok(())
    }

    /// A running pod of `fixture` on `node` for exec probes (created and awaited once).
    pub async fn ready_pod(&self, fixture: &str, node: &ClusterNode, index: usize) -> Result<String, NotReady> {
        self.ready_variant(fixture, "", node, index, &|_| {}).await
    }

    /// Like [`Self::ready_pod`], with the stamped pod changed by `mutate` (a variant named
    /// `variant`, e.g. another DNS policy).
    pub async fn ready_variant(
        &self,
        fixture: &str,
        variant: &str,
        node: &ClusterNode,
        index: usize,
        mutate: &(dyn Fn(&mut Value) + Sync),
    ) -> Result<String, NotReady> {
        let key = Self::key(fixture, variant, &node.name);
        let cell = {
            let mut map = self.ready.lock().await;
            map.entry(key.clone())
                .or_insert_with(|| Arc::new(OnceCell::new()))
                .clone()
        };
        cell.get_or_init(|| async {
            self.others(fixture).await.map_err(NotReady::Other)?;
            let (first, mut pod) = self.pod_for(fixture, node, index, variant).map_err(NotReady::Other)?;
            mutate(&mut pod);
            let slot = self.slot(&node.name).await;
            let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
            let params = kube::api::PatchParams::apply("mixcheck").force();
            let mut attempt = 0;
            let (name, seen) = loop {
                let name = retry_name(&first, attempt);
                pod["metadata"]["name"] = Value::from(name.clone());
                pods.patch(&name, &params, &kube::api::Patch::Apply(&pod))
                    .await
                    .map_err(|e| NotReady::of_create(&name, &e))?;
                let seen = self.settle(&name, node.os).await;
                if self.out_of_pods(&name) && attempt < ADMISSION_RETRIES {
                    self.delete(&name).await;
                    attempt += 1;
                    tokio::time::sleep(retry_pause(attempt)).await;
                    continue;
                }
                break (name, seen);
            };
            // Held until no cell needs the pod any more (see `cell_done`).
            if let Ok(mut held) = self.held.lock() {
                held.insert(key.clone(), (name.clone(), slot));
            }
            let seen = seen.map_err(|why| NotReady::Other(format!("the fixture pod {name} did not start: {why}")))?;
            match seen.outcome {
                CreateOutcome::Runs => Ok(name),
                _ => Err(not_ready(&name, &seen)),
            }
        })
        .await
        .clone()
    }

    /// Creates `pod` and waits until it runs: its name and address, holding a pod slot until
    /// [`Self::stop`].
    pub async fn start(&self, pod: &CellPod<'_>) -> Result<Started, NotReady> {
        let (name, typed) = self.prepared(pod).await?;
        if let Some(parked) = self.unpark(&name).await {
            return parked;
        }
        let slot = self.slot(&pod.node.name).await;
        self.launch(&name, typed, pod.node, slot).await
    }

    /// Starts, ahead of its cell, the pod [`Self::start`] would start with these arguments, and
    /// parks it (or why it did not start) for that call: a cell's own pod starts while the
    /// shared fixtures are awaited. Only where a pod slot is free at once, so that a parked pod
    /// never keeps a waiting cell's slot; elsewhere the cell starts it in its turn.
    pub async fn prestart(&self, pod: &CellPod<'_>) {
        let slot = match self.budget.slots(&pod.node.name) {
            Some(slots) => match slots.try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) => return,
            },
            None => None,
        };
        let Ok((name, _)) = self.pod_for(pod.fixture, pod.node, pod.index, pod.suffix) else {
            return;
        };
        // Parked (locked) before the first await, so that its cell, should it come first, waits
        // for this pod instead of creating it a second time.
        let parked: Parked = Arc::new(Mutex::new(None));
        let Ok(mut outcome) = parked.clone().try_lock_owned() else {
            return;
        };
        match self.parked.lock() {
            Ok(mut all) if !self.closed.load(std::sync::atomic::Ordering::Relaxed) => {
                all.insert(name.clone(), parked);
            }
            _ => return,
        }
        *outcome = Some(match self.prepared(pod).await {
            Ok((_, typed)) => self.launch(&name, typed, pod.node, slot).await,
            Err(e) => Err(e),
        });
    }

    /// Stops the pod parked for `pod`, if any: its cell will not use it.
    pub async fn discard(&self, pod: &CellPod<'_>) {
        let Ok((name, _)) = self.pod_for(pod.fixture, pod.node, pod.index, pod.suffix) else {
            return;
        };
        if let Some(Ok(started)) = self.unpark(&name).await {
            self.stop(started).await;
        }
    }

    /// Stops every parked pod no cell took (a cell that was not probed after all), once it has
    /// started; no pod is started ahead after this.
    pub async fn stop_parked(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::Relaxed);
        let left: Vec<Parked> = match self.parked.lock() {
            Ok(mut parked) => parked.drain().map(|(_, p)| p).collect(),
            Err(_) => Vec::new(),
        };
        for parked in left {
            if let Some(Ok(started)) = parked.lock().await.take() {
                self.stop(started).await;
            }
        }
    }

    /// The pod parked under `name` once it has started (or failed to), taking it.
    async fn unpark(&self, name: &str) -> Option<Result<Started, NotReady>> {
        let parked = self.parked.lock().ok()?.remove(name)?;
        parked.lock().await.take()
    }

    /// The pod of `pod`'s fixture for its node with its change applied, its name, and the
    /// objects it needs created.
    async fn prepared(&self, pod: &CellPod<'_>) -> Result<(String, Pod), NotReady> {
        self.others(pod.fixture).await.map_err(NotReady::Other)?;
        let (name, mut value) = self
            .pod_for(pod.fixture, pod.node, pod.index, pod.suffix)
            .map_err(NotReady::Other)?;
        (pod.mutate)(&mut value);
        let typed: Pod = serde_json::from_value(value)
            .map_err(|e| NotReady::Other(format!("fixture {:?} is not a Pod: {e}", pod.fixture)))?;
        Ok((name, typed))
    }

    /// Creates `pod` on `node` holding `slot` and waits until it runs (deleted again if it
    /// does not).
    async fn launch(
        &self,
        name: &str,
        pod: Pod,
        node: &ClusterNode,
        slot: Option<OwnedSemaphorePermit>,
    ) -> Result<Started, NotReady> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        pods.create(&PostParams::default(), &pod)
            .await
            .map_err(|e| NotReady::of_create(name, &e))?;
        let seen = self.settle(name, node.os).await;
        let ip = self
            .watch
            .view(name)
            .pod
            .and_then(|p| p.status.as_ref()?.pod_ip.clone())
            .unwrap_or_default();
        let name = name.to_string();
        match seen {
            Ok(seen) if seen.outcome == CreateOutcome::Runs && !ip.is_empty() => Ok(Started { name, ip, slot }),
            Ok(seen) => {
                self.delete(&name).await;
                Err(not_ready(&name, &seen))
            }
            Err(why) => {
                self.delete(&name).await;
                Err(NotReady::Other(format!("pod {name}: {why}")))
            }
        }
    }

    /// Deletes a pod [`Self::start`] created and gives its slot back.
    pub async fn stop(&self, started: Started) {
        self.delete(&started.name).await;
        drop(started.slot);
    }

    /// Creates a pod of `fixture` on `node` and reports what happens to it.
    pub async fn create(
        &self,
        fixture: &str,
        node: &ClusterNode,
        index: usize,
        cell: usize,
    ) -> Result<(String, Observed), NotReady> {
        self.others(fixture).await.map_err(NotReady::Other)?;
        let (first, pod) = self
            .pod_for(fixture, node, index, &format!("-c{cell}"))
            .map_err(NotReady::Other)?;
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let mut typed: Pod = match serde_json::from_value(pod) {
            Ok(p) => p,
            Err(e) => return Err(NotReady::Other(format!("fixture {fixture:?} is not a Pod: {e}"))),
        };
        let slot = self.slot(&node.name).await;
        let mut attempt = 0;
        loop {
            let name = retry_name(&first, attempt);
            typed.metadata.name = Some(name.clone());
            match self.create_once(&pods, &typed, &name, node).await? {
                // The kubelet had no pod slot yet (a deleted pod it still counted): again.
                Attempt::OutOfPods if attempt < ADMISSION_RETRIES => {
                    attempt += 1;
                    tokio::time::sleep(retry_pause(attempt)).await;
                }
                Attempt::OutOfPods => {
                    drop(slot);
                    return Err(NotReady::Other(format!(
                        "pod {name}: the kubelet of {} kept refusing it for want of a pod slot (OutOfpods)",
                        node.name
                    )));
                }
                Attempt::Seen(seen) => {
                    drop(slot);
                    return Ok((name, seen));
                }
            }
        }
    }

    /// Creates a pod of `fixture` on `node`, waits until it runs, deletes it with the grace
    /// period of its own spec (as `kubectl delete` does) and times how long the API still has
    /// it: the kubelet removes it once its containers stopped (POD-TERMINATION-GRACE).
    pub async fn stop_timed(
        &self,
        fixture: &str,
        node: &ClusterNode,
        index: usize,
        cell: usize,
        poll: Duration,
    ) -> Result<Stopped, NotReady> {
        self.others(fixture).await.map_err(NotReady::Other)?;
        let (name, pod) = self
            .pod_for(fixture, node, index, &format!("-g{cell}"))
            .map_err(NotReady::Other)?;
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let mut typed: Pod = serde_json::from_value(pod)
            .map_err(|e| NotReady::Other(format!("fixture {fixture:?} is not a Pod: {e}")))?;
        typed.metadata.name = Some(name.clone());
        let _slot = self.slot(&node.name).await;
        pods.create(&PostParams::default(), &typed)
            .await
            .map_err(|e| NotReady::of_create(&name, &e))?;
        match self.settle(&name, node.os).await {
            Ok(seen) if seen.outcome == CreateOutcome::Runs => {}
            Ok(seen) => {
                self.delete(&name).await;
                return Err(not_ready(&name, &seen));
            }
            Err(why) => {
                self.delete(&name).await;
                return Err(NotReady::Other(format!("pod {name}: {why}")));
            }
        }
        let grace = typed
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(30);
        let started = Instant::now();
        let deleted = match pods.delete(&name, &kube::api::DeleteParams::default()).await {
            Ok(d) => d,
            // Credentials that may not delete pods (deploy/rbac.yaml grants it): the fact the
            // check needs is out of reach; the pod goes with the run namespace.
            Err(kube::Error::Api(s)) if s.code == 403 => {
                return Err(NotReady::Refused(format!(
                    "deleting pod {name} (delete pods: forbidden): how long it takes to stop cannot be timed"
                )));
            }
            Err(e) => return Err(NotReady::Other(format!("deleting pod {name}: {e}"))),
        };
        let granted = deleted
            .left()
            .and_then(|p| p.metadata.deletion_grace_period_seconds)
            .unwrap_or(grace);
        // The kubelet kills what is left at the end of the grace period; beyond it by this much
        // the pod is stuck, not stopping.
        let until = started + Duration::from_secs(granted.max(0).unsigned_abs() + 60);
        while Instant::now() < until {
            match tokio::time::timeout(Duration::from_secs(10), pods.get_opt(&name)).await {
                Ok(Ok(None)) => {
                    return Ok(Stopped {
                        name,
                        took: Some(started.elapsed()),
                        grace: granted,
                    });
                }
                _ => tokio::time::sleep(poll).await,
            }
        }
        Ok(Stopped {
            name,
            took: None,
            grace: granted,
        })
    }

    /// Whether the kubelet refused pod `name` for want of a pod slot (`OutOfpods`).
    fn out_of_pods(&self, name: &str) -> bool {
        self.watch
            .view(name)
            .pod
            .is_some_and(|p| p.status.as_ref().and_then(|s| s.reason.as_deref()) == Some("OutOfpods"))
    }

    /// Creates `pod` once, judges it and deletes it.
    async fn create_once(
        &self,
        pods: &Api<Pod>,
        typed: &Pod,
        name: &str,
        node: &ClusterNode,
    ) -> Result<Attempt, NotReady> {
        let name = name.to_string();
        match pods.create(&PostParams::default(), typed).await {
            Ok(_) => {}
            // The gMSA webhook refusing a credential spec is the documented answer to the
            // pod's gMSA fields (its 404 included), not a policy (SEC-GMSA).
            Err(kube::Error::Api(s)) if crate::cluster::gmsa::webhook_denial(&s.message) => {
                return Ok(Attempt::Seen(Observed {
                    outcome: CreateOutcome::RejectedByApi,
                    message: s.message.clone(),
                    termination: String::new(),
                    unpullable: None,
                }));
            }
            // An admission webhook or Pod Security refusing the pod is the cluster's policy, not
            // the API's documented answer to the pod's fields.
            Err(e) if Refusal::of(&e).is_some_and(|r| r.policy) => return Err(NotReady::of_create(&name, &e)),
            Err(kube::Error::Api(s)) if s.code == 422 || s.code == 403 || s.code == 400 => {
                return Ok(Attempt::Seen(Observed {
                    outcome: CreateOutcome::RejectedByApi,
                    message: s.message.clone(),
                    termination: String::new(),
                    unpullable: None,
                }));
            }
            Err(e) => return Err(NotReady::Other(format!("creating pod {name}: {e}"))),
        }
        let seen = self.settle(&name, node.os).await;
        let out_of_pods = self.out_of_pods(&name);
        // Judged: the pod gives its slot back (a node may have few: EKS Windows nodes).
        self.delete(&name).await;
        if out_of_pods {
            return Ok(Attempt::OutOfPods);
        }
        let seen = seen.map_err(|why| NotReady::Other(format!("pod {name}: {why}")))?;
        if let Some(problem) = seen.unpullable {
            return Err(NotReady::Unpullable(format!("pod {name}: {problem}")));
        }
        Ok(Attempt::Seen(seen))
    }

    /// Watches a pod until it runs, fails, or stays unschedulable; `Err` when it did none of
    /// these in time (what it was still doing).
    async fn settle(&self, name: &str, os: mixcheck_reports::Os) -> Result<Observed, String> {
        let limit = if os == mixcheck_reports::Os::Windows {
            SETTLE_WINDOWS
        } else {
            SETTLE
        };
        let started = Instant::now();
        let mut changes = self.watch.subscribe();
        loop {
            changes.mark_unchanged();
            let view = self.watch.view(name);
            if let Some(seen) = judge_pod(&view, started.elapsed(), limit) {
                return seen;
            }
            // Time-based decisions (a run-to-completion pod still running) need a tick too.
            let _ = tokio::time::timeout(Duration::from_millis(100), changes.changed()).await;
        }
    }
}

/// What a pod shows after `elapsed`: a terminal signal — phase Failed, a container that exited
/// with an error, a terminal waiting reason, a pull error saying the image or its platform does
/// not exist, a sandbox or volume the kubelet failed to set up [`SANDBOX_FAILURES`] times — or
/// running (a run-to-completion pod: completed, or still running after a few seconds).
/// Transient Warning events never decide (a `FailedMount` of `kube-root-ca.crt` "not registered"
/// right after the namespace appeared, one failed pull attempt, one retried sandbox). None while
/// undecided; at `limit`, `Err` says what the pod was still doing — a harness error, never the
/// rule's failure.
fn judge_pod(view: &PodView, elapsed: Duration, limit: Duration) -> Option<Result<Observed, String>> {
    let pull_warnings: Vec<pulls::Warning<'_>> = view
        .warnings
        .iter()
        .map(crate::cluster::podwatch::Warning::as_pull)
        .collect();
    // An image its registry will not give: the fixture cannot run here, whatever the rule says.
    if let Some(u) = view.pod.as_ref().and_then(|p| pulls::unpullable(p, &pull_warnings)) {
        return Some(Ok(Observed {
            outcome: CreateOutcome::Fails,
            message: u.problem(),
            termination: String::new(),
            unpullable: Some(u.problem()),
        }));
    }
    judge_state(view, elapsed, limit, pulls::failures(&pull_warnings, None))
}

/// [`judge_pod`] for a pod whose images its registries give, or not yet: `pull_failures` is how
/// often the kubelet failed its pulls.
fn judge_state(
    view: &PodView,
    elapsed: Duration,
    limit: Duration,
    pull_failures: i32,
) -> Option<Result<Observed, String>> {
    let warnings = &view.warnings;
    let events_text = warnings
        .iter()
        .map(|w| format!("{}: {}", w.reason, w.message))
        .collect::<Vec<_>>()
        .join("; ");
    let Some(p) = view.pod.as_ref() else {
        return (elapsed > limit).then(|| Err(format!("the pod was not seen within {}s", limit.as_secs())));
    };
    // A pod that runs to completion is judged by how it ends.
    let runs_to_end = p
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .is_some_and(|r| r == "Never" || r == "OnFailure");
    let status = p.status.clone().unwrap_or_default();
    let phase = status.phase.clone().unwrap_or_default();
    let reason = format!(
        "{} {}",
        status.reason.clone().unwrap_or_default(),
        status.message.clone().unwrap_or_default()
    );
    let mut terminal = Vec::new();
    let mut waiting = Vec::new();
    // What the kubelet read from each terminated container's terminationMessagePath.
    let termination = status
        .container_statuses
        .iter()
        .flatten()
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.message.clone())
        .filter(|m| !m.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    for c in status.container_statuses.clone().unwrap_or_default() {
        let Some(s) = c.state else { continue };
        if let Some(w) = s.waiting {
            let r = w.reason.unwrap_or_default();
            let m = w.message.unwrap_or_default();
            let text = format!("{r}: {m}");
            if crate::cluster::podwatch::terminal_waiting(&r, &m, pull_failures) {
                terminal.push(text);
            } else if r != "ContainerCreating" && r != "PodInitializing" {
                waiting.push(text);
            }
        } else if let Some(t) = s.terminated.filter(|t| t.exit_code != 0) {
            terminal.push(format!(
                "{}: {}",
                t.reason.unwrap_or_default(),
                t.message.unwrap_or_default()
            ));
        }
    }
    let sandbox = warnings.iter().any(|w| {
        matches!(w.reason.as_str(), "FailedCreatePodSandBox" | "FailedMount")
            && w.count >= SANDBOX_FAILURES
            && !w.message.contains("not registered")
    });
    let message = [reason.trim().to_string(), terminal.join("; "), events_text.clone()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" | ");
    if phase == "Failed" || !terminal.is_empty() || sandbox {
        return Some(Ok(Observed {
            outcome: CreateOutcome::Fails,
            message,
            termination,
            unpullable: None,
        }));
    }
    let ready = crate::cluster::podwatch::is_ready(&status);
    // A run-to-completion pod is judged when it ends (upstream waits for the end too:
    // E2E/host_process WaitForFinish, then PodSucceeded); a server when it is Running and Ready.
    if phase == "Succeeded" || (phase == "Running" && ready && !runs_to_end) {
        return Some(Ok(Observed {
            outcome: CreateOutcome::Runs,
            message,
            termination,
            unpullable: None,
        }));
    }
    // A node out of pod slots frees one when a judged pod is deleted: wait for it.
    let unschedulable = warnings
        .iter()
        .any(|w| w.reason == "FailedScheduling" && !crate::cluster::scheduling::room_frees_up(&w.message));
    if unschedulable && elapsed > Duration::from_millis(500) {
        return Some(Ok(Observed {
            outcome: CreateOutcome::Unschedulable,
            message,
            termination,
            unpullable: None,
        }));
    }
    if elapsed > limit {
        let doing = if phase == "Running" {
            "still running (a run-to-completion pod that has not completed)".to_string()
        } else if waiting.is_empty() {
            "still being created (its image may still be pulling; Windows images take minutes)".to_string()
        } else {
            format!("still waiting: {}", waiting.join("; "))
        };
        let events = if events_text.is_empty() {
            String::new()
        } else {
            format!(" | {events_text}")
        };
        return Some(Err(format!("not decided after {}s: {doing}{events}", limit.as_secs())));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::sandbox(CreateOutcome::Fails, "FailedCreatePodSandBox: network host not found", true)]
    #[case::start(CreateOutcome::Fails, "StartError: The user name or password is incorrect.", true)]
    #[case::image(
        CreateOutcome::Fails,
        "ErrImagePull: no matching manifest for windows/amd64 10.0.16299",
        false
    )]
    #[case::backoff(CreateOutcome::Fails, "ImagePullBackOff: Back-off pulling image", false)]
    #[case::unschedulable(CreateOutcome::Unschedulable, "FailedScheduling: 0/3 nodes are available", false)]
    fn the_node_failing_a_fixture_is_told_from_the_fixtures_own_problems(
        #[case] outcome: CreateOutcome,
        #[case] message: &str,
        #[case] node_failed: bool,
    ) {
        let seen = Observed {
            outcome,
            message: message.into(),
            termination: String::new(),
            unpullable: None,
        };
        let got = not_ready("p", &seen);
        assert_eq!(matches!(got, NotReady::Failed(_)), node_failed, "{got:?}");
        assert!(got.to_string().contains(message));
    }

    /// A pod in `phase` whose one container is in `state`, with `restart` policy and Ready as said.
    fn view(
        phase: &str,
        state: serde_json::Value,
        restart: &str,
        ready: bool,
        warnings: &[(&str, &str, i32)],
    ) -> PodView {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "i"}]},
            "status": {
                "phase": phase,
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
                "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": ready, "restartCount": 0, "state": state}]
            }
        }))
        .expect("a pod");
        PodView {
            pod: Some(std::sync::Arc::new(pod)),
            warnings: warnings
                .iter()
                .map(|(r, m, n)| crate::cluster::podwatch::Warning {
                    reason: r.to_string(),
                    message: m.to_string(),
                    count: *n,
                })
                .collect(),
        }
    }

    fn creating() -> serde_json::Value {
        serde_json::json!({"waiting": {"reason": "ContainerCreating"}})
    }

    fn running() -> serde_json::Value {
        serde_json::json!({"running": {"startedAt": "2026-11-27T00:00:00Z"}})
    }

    fn waiting(reason: &str, message: &str) -> serde_json::Value {
        serde_json::json!({"waiting": {"reason": reason, "message": message}})
    }

    const LIMIT: Duration = Duration::from_secs(120);
    const SOON: Duration = Duration::from_secs(5);

    /// Transient Warning events real clusters emit on the way to Running never decide a pod
    /// (kubernetes/kubernetes#105204; a per-attempt pull failure; one retried sandbox).
    #[rstest]
    #[case::root_ca_not_registered(
        "FailedMount",
        "MountVolume.SetUp failed for volume \"kube-api-access-x\" : object \"ns\"/\"kube-root-ca.crt\" not registered",
        1
    )]
    #[case::one_pull_attempt(
        "Failed",
        "Failed to pull image \"i\": rpc error: code = Unknown desc = context deadline exceeded",
        1
    )]
    #[case::one_sandbox_retry("FailedCreatePodSandBox", "Failed to create pod sandbox: rpc error", 2)]
    fn transient_warnings_never_decide(#[case] reason: &str, #[case] message: &str, #[case] count: i32) {
        let pending = view("Pending", creating(), "Always", false, &[(reason, message, count)]);
        assert!(judge_pod(&pending, SOON, LIMIT).is_none());
        let up = view("Running", running(), "Always", true, &[(reason, message, count)]);
        let seen = judge_pod(&up, SOON, LIMIT).expect("decided").expect("observed");
        assert_eq!(seen.outcome, CreateOutcome::Runs);
    }

    /// Terminal signals decide at once.
    #[rstest]
    #[case::config_error("Pending", waiting("CreateContainerConfigError", "container has runAsNonRoot and image will run as root"), &[])]
    #[case::image_missing("Pending", waiting("ErrImagePull", "failed to pull and unpack image: no match for platform in manifest: not found"), &[])]
    #[case::crash_loop("Running", waiting("CrashLoopBackOff", "back-off 10s restarting failed container"), &[])]
    #[case::exited_with_error("Failed", serde_json::json!({"terminated": {"exitCode": 1, "reason": "Error"}}), &[])]
    #[case::sandbox_failed_three_times("Pending", creating(), &[("FailedCreatePodSandBox", "hcs::CreateComputeSystem: (0xc0370101)", 3)])]
    #[case::mount_failed_three_times("Pending", creating(), &[("FailedMount", "emptyDir medium \"Memory\" (tmpfs) is not supported on Windows", 3)])]
    fn terminal_signals_fail_a_pod(
        #[case] phase: &str,
        #[case] state: serde_json::Value,
        #[case] warnings: &[(&str, &str, i32)],
    ) {
        let v = view(phase, state, "Always", false, warnings);
        let seen = judge_pod(&v, SOON, LIMIT).expect("decided").expect("observed");
        assert_eq!(seen.outcome, CreateOutcome::Fails, "{}", seen.message);
    }

    /// A run-to-completion pod is judged by how it ends (E2E/host_process waits for the end):
    /// Running and Ready for a while decides nothing.
    #[rstest]
    fn run_to_completion_pods_are_judged_by_their_end(#[values("Never", "OnFailure")] restart: &str) {
        let still = view("Running", running(), restart, true, &[]);
        assert!(judge_pod(&still, Duration::from_secs(1), LIMIT).is_none());
        assert!(judge_pod(&still, Duration::from_secs(60), LIMIT).is_none());
        let why = judge_pod(&still, LIMIT + SOON, LIMIT)
            .expect("decided")
            .expect_err("undecided");
        assert!(why.contains("has not completed"), "{why}");
        let server = view("Running", running(), "Always", true, &[]);
        let seen = judge_pod(&server, SOON, LIMIT).expect("decided").expect("observed");
        assert_eq!(seen.outcome, CreateOutcome::Runs);
        let done = view(
            "Succeeded",
            serde_json::json!({"terminated": {"exitCode": 0, "reason": "Completed"}}),
            "Never",
            false,
            &[],
        );
        let seen = judge_pod(&done, SOON, LIMIT).expect("decided").expect("observed");
        assert_eq!(seen.outcome, CreateOutcome::Runs);
        let failed = view(
            "Failed",
            serde_json::json!({"terminated": {"exitCode": 2, "reason": "Error"}}),
            "Never",
            false,
            &[],
        );
        let seen = judge_pod(&failed, SOON, LIMIT).expect("decided").expect("observed");
        assert_eq!(seen.outcome, CreateOutcome::Fails);
    }

    /// A node out of pod slots is awaited (a judged pod's deletion frees one); any other reason
    /// the scheduler gives decides the pod is unschedulable.
    #[rstest]
    #[case::no_pod_slot(
        "0/4 nodes are available: 1 Too many pods, 3 node(s) didn't match Pod's node affinity/selector.",
        false
    )]
    #[case::no_matching_node(
        "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.",
        true
    )]
    fn a_full_node_is_awaited_but_a_mismatch_is_unschedulable(#[case] message: &str, #[case] decided: bool) {
        let v = view(
            "Pending",
            serde_json::json!({}),
            "Always",
            false,
            &[("FailedScheduling", message, 1)],
        );
        let got = judge_pod(&v, SOON, LIMIT);
        assert_eq!(got.is_some(), decided, "{got:?}");
        if let Some(seen) = got {
            assert_eq!(seen.expect("observed").outcome, CreateOutcome::Unschedulable);
        }
    }

    /// A pod still pulling (or retrying a pull the registry refused for now) when its time is up
    /// is the harness's error that says so, never the rule's failure.
    #[rstest]
    #[case::pulling(creating(), "still being created (its image may still be pulling")]
    #[case::pull_retrying(
        waiting("ImagePullBackOff", "Back-off pulling image \"i\": 429 Too Many Requests"),
        "still waiting: ImagePullBackOff"
    )]
    fn a_pod_undecided_at_its_limit_is_an_error_not_a_failure(#[case] state: serde_json::Value, #[case] says: &str) {
        let v = view("Pending", state, "Always", false, &[]);
        assert!(judge_pod(&v, SOON, LIMIT).is_none());
        let why = judge_pod(&v, LIMIT + SOON, LIMIT)
            .expect("decided")
            .expect_err("undecided");
        assert!(why.contains(says), "{why}");
    }
}
