//! Simulated kubelets: one per node, driven by the node's profile. They renew node leases,
//! admit pods, and run each pod as a state machine (sandbox, image pulls, container create and
//! start, exits and restarts with CrashLoopBackOff back-off, graceful termination), writing pod
//! status and events with upstream reasons. What happens to a pod is decided by
//! [`outcome::plan`]; this module only plays it out over (simulated) time.

mod admission;
mod containers;
mod credentials;
pub mod eviction;
mod memory;
pub mod outcome;
mod pulls;
mod sandbox;
mod status;
mod termination;
pub mod transient;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;

use self::eviction::PodUse;
use self::outcome::{ContainerPlan, PodFate};
use crate::config::profile::{NodeProfile, Step};
use crate::control::events::{self, Kind, Source};
use crate::network::dualstack;
use crate::node::exec::volumes::VolumeStore;
use crate::node::images::Catalogue;
use crate::node::logs::LogBook;
use crate::store::resources;
use crate::store::{EventType, Obj, Part, Store, timestamp};
use crate::vocab::json;
use crate::vocab::quantity::Quantity;

/// What every kubelet shares.
#[derive(Debug)]
pub struct Kubelets {
    pub store: Arc<Store>,
    pub logs: Arc<LogBook>,
    pub catalogue: Arc<Catalogue>,
    pub profiles: Arc<Vec<NodeProfile>>,
    /// Profile index by node name.
    by_name: HashMap<String, usize>,
    /// Pods being run, by uid: the signal that asks them to terminate.
    running: Mutex<HashMap<String, Arc<Notify>>>,
    /// Pod IPs in use per node.
    ips: Mutex<HashMap<String, BTreeSet<u32>>>,
    /// The kubelet's image cache per node: each image pulled (or being pulled) there, with when
    /// its pull completes.
    pulled: Mutex<HashMap<String, HashMap<String, std::time::Instant>>>,
    /// CPU and memory requested by the pods each node has admitted (kubelet admission).
    admitted: Mutex<HashMap<String, (Quantity, Quantity)>>,
    /// How many admitted pods each node runs that have not terminated (kubelet admission's
    /// `pods` count against allocatable, `maxPods`).
    pod_slots: Mutex<HashMap<String, i128>>,
    /// Memory the running containers hold, per node (the eviction signal, MEM-EVICTION).
    memory: Mutex<HashMap<String, Vec<PodUse>>>,
    /// Pods chosen for eviction, by uid, with the eviction message.
    evictions: Mutex<HashMap<String, String>>,
    /// Nodes whose MemoryPressure condition is True.
    pressure: Mutex<BTreeSet<String>>,
    /// What containers write to their volumes, their layers and the nodes' disks.
    pub volumes: Arc<VolumeStore>,
}

fn now() -> String {
    timestamp(chrono::Utc::now())
}

fn scaled(ms: u64, profile: &NodeProfile) -> Duration {
    Duration::from_secs_f64(ms as f64 * profile.timing.scale / 1000.0)
}

impl Kubelets {
    pub fn new(
        store: Arc<Store>,
        logs: Arc<LogBook>,
        catalogue: Arc<Catalogue>,
        profiles: Arc<Vec<NodeProfile>>,
        volumes: Arc<VolumeStore>,
    ) -> Arc<Self> {
        let by_name = profiles.iter().enumerate().map(|(i, p)| (p.name.clone(), i)).collect();
        Arc::new(Self {
            store,
            logs,
            catalogue,
            profiles,
            by_name,
            running: Mutex::new(HashMap::new()),
            ips: Mutex::new(HashMap::new()),
            pulled: Mutex::new(HashMap::new()),
            admitted: Mutex::new(HashMap::new()),
            pod_slots: Mutex::new(HashMap::new()),
            memory: Mutex::new(HashMap::new()),
            evictions: Mutex::new(HashMap::new()),
            pressure: Mutex::new(BTreeSet::new()),
            volumes,
        })
    }

    /// The memory the containers of `node`'s pods hold now (for its stats).
    pub fn held(&self, node: &str) -> Vec<PodUse> {
        let memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        memory.get(node).cloned().unwrap_or_default()
    }

    fn profile(&self, node: &str) -> Option<&NodeProfile> {
        self.by_name.get(node).and_then(|i| self.profiles.get(*i))
    }

    /// Runs every node's kubelet until the store closes.
    pub async fn run(self: Arc<Self>) {
        self.mark_stopped_nodes();
        self.preload_system_images();
        let stuck_flanneld = self.start_node_logs();
        tokio::spawn(self.clone().renew_leases());
        let mut feed = self.store.subscribe();
        self.resync();
        // The change feed brings every pod change; the resync is a safety net, run at once
        // when the feed fell behind its history (a pass reads every pod: 20,000 at 5,000 nodes).
        let mut resync = tokio::time::interval(Duration::from_secs(5));
        // A stuck flanneld's start script polls for the HNS network once a second upstream; a
        // tenth of that here at scale 1.
        let scale = self.profiles.first().map_or(1.0, |p| p.timing.scale);
        let mut poll = tokio::time::interval(Duration::from_secs_f64(0.1 * scale).max(Duration::from_millis(10)));
        loop {
            tokio::select! {
                _ = poll.tick(), if !stuck_flanneld.is_empty() => {
                    for node in &stuck_flanneld {
                        self.logs.append("", node, crate::node::nodelogs::FLANNELD, crate::node::nodelogs::FLANNELD_WAITING);
                    }
                }
                event = feed.recv() => match event {
                    Ok(e) if e.resource.group.is_empty() && e.resource.plural == "pods" => self.on_pod(&e.object, e.kind),
                    Ok(_) => {}
                    // Fell behind the history: a resync picks up what was missed.
                    Err(crate::store::RecvError::Lagged(_)) => self.resync(),
                },
                _ = resync.tick() => self.resync(),
            }
        }
    }

    fn resync(self: &Arc<Self>) {
        for pod in self.store.list(resources::core("pods"), None).0 {
            self.on_pod(&pod, EventType::Modified);
        }
    }

    fn on_pod(self: &Arc<Self>, pod: &Obj, kind: EventType) {
        if kind == EventType::Deleted {
            return;
        }
        // A pod already running needs only its deletion mark, which is metadata: the resync
        // looks at every pod without decoding the ones it runs.
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(stop) = running.get(pod.uid()) {
            if pod.is_terminating() {
                stop.notify_one();
            }
            return;
        }
        let node = json::str(pod.value(), "/spec/nodeName");
        let Some(profile) = self.profile(node).filter(|_| !node.is_empty()) else {
            return;
        };
        // A pod that already finished before we saw it (resync) has nothing to run.
        let phase = json::str(pod.value(), "/status/phase");
        if matches!(phase, "Succeeded" | "Failed") && !pod.is_terminating() {
            return;
        }
        let stop = Arc::new(Notify::new());
        if pod.is_terminating() {
            stop.notify_one();
        }
        running.insert(pod.uid().to_string(), stop.clone());
        let profile = profile.clone();
        let this = self.clone();
        let pod = pod.clone();
        tokio::spawn(async move {
            this.run_pod(profile, pod, stop).await;
        });
    }

    /// Nodes whose kubelet is stopped: NotReady (Unknown) with the unreachable taints.
    fn mark_stopped_nodes(&self) {
        let nodes = resources::core("nodes");
        for p in self
            .profiles
            .iter()
            .filter(|p| p.has_fault(crate::config::faults::Fault::KubeletStopped))
        {
            let at = now();
            let _ = self.store.modify(nodes, "", &p.name, Part::Main, |n| {
                let mut taints = n
                    .pointer("/spec/taints")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for effect in ["NoSchedule", "NoExecute"] {
                    taints.push(json!({"key": "node.kubernetes.io/unreachable", "effect": effect, "timeAdded": at}));
                }
                n["spec"]["taints"] = json!(taints);
                Ok(())
            });
            let _ = self.store.modify(nodes, "", &p.name, Part::Status, |n| {
                if let Some(conds) = n.pointer_mut("/status/conditions").and_then(Value::as_array_mut) {
                    for c in conds.iter_mut() {
                        c["status"] = json!("Unknown");
                        c["reason"] = json!("NodeStatusUnknown");
                        c["message"] = json!("Kubelet stopped posting node status.");
                        c["lastTransitionTime"] = json!(at);
                    }
                }
                Ok(())
            });
        }
    }

    /// The node-level logs as the nodes come up: flanneld's on Windows nodes of a flannel
    /// network and the kubelet's own start lines. Returns the nodes whose flanneld is stuck
    /// waiting for its network (their log keeps growing).
    fn start_node_logs(&self) -> Vec<String> {
        let at = chrono::Utc::now();
        let mut stuck = Vec::new();
        for p in self.profiles.iter() {
            if !p.has_fault(crate::config::faults::Fault::KubeletStopped) {
                for line in crate::node::nodelogs::kubelet_start(p) {
                    self.logs.append("", &p.name, "kubelet", &line);
                }
            }
            for line in crate::node::nodelogs::kube_proxy_start(p, at).unwrap_or_default() {
                self.logs.append("", &p.name, crate::node::nodelogs::KUBE_PROXY, &line);
            }
            let Some(lines) = crate::node::nodelogs::flanneld_start(p, at) else {
                continue;
            };
            for line in &lines {
                self.logs.append("", &p.name, crate::node::nodelogs::FLANNELD, line);
            }
            if p.has_fault(crate::config::faults::Fault::FlanneldWaiting) {
                stuck.push(p.name.clone());
            }
        }
        stuck
    }

    /// Renews each running kubelet's node Lease every 10 s.
    async fn renew_leases(self: Arc<Self>) {
        let leases = resources::named("coordination.k8s.io", "leases");
        let mut tick = tokio::time::interval(Duration::from_secs(10));
        loop {
            tick.tick().await;
            let renew = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
            for p in self
                .profiles
                .iter()
                .filter(|p| !p.has_fault(crate::config::faults::Fault::KubeletStopped))
            {
                let _ = self.store.modify(leases, "kube-node-lease", &p.name, Part::Main, |l| {
                    l["spec"]["renewTime"] = json!(renew);
                    Ok(())
                });
            }
        }
    }

    async fn run_pod(self: Arc<Self>, profile: NodeProfile, pod: Obj, stop: Arc<Notify>) {
        let mut run = PodRun::new(self.clone(), profile, pod, stop);
        run.play().await;
        run.terminate().await;
        let uid = run.pod.uid().to_string();
        self.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&uid);
    }
}

/// One container's live state.
#[derive(Debug, Clone)]
struct Container {
    plan: ContainerPlan,
    init: bool,
    restarts: u32,
    state: Value,
    last_state: Value,
    ready: bool,
    started: bool,
    container_id: String,
}

impl Container {
    fn running(&self) -> bool {
        self.state.get("running").is_some()
    }

    fn terminated_code(&self) -> Option<i64> {
        self.state.pointer("/terminated/exitCode").and_then(Value::as_i64)
    }
}

enum Ended {
    /// The pod is being deleted.
    Stopped,
    /// Nothing more will happen until deletion.
    Settled,
}

struct PodRun {
    k: Arc<Kubelets>,
    profile: NodeProfile,
    pod: Obj,
    stop: Arc<Notify>,
    source: Source,
    containers: Vec<Container>,
    pod_ip: String,
    /// Dual-stack: the pod's IPv6 address (`status.podIPs[1]`).
    pod_ip_v6: Option<String>,
    phase: &'static str,
    reason: Option<(String, String)>,
    sandbox_ready: bool,
    /// Whether this pod holds an admission reservation.
    admitted: bool,
    /// Whether this pod counts against the node's `pods` (admitted, not terminated yet).
    slot: bool,
    /// Evicted by the kubelet (phase Failed, reason Evicted, container states kept).
    evicted: bool,
    /// The pod runs as HostProcess containers (their writes outside volumes reach the host).
    host_process: bool,
}

impl PodRun {
    fn new(k: Arc<Kubelets>, profile: NodeProfile, pod: Obj, stop: Arc<Notify>) -> Self {
        let source = Source::kubelet(&profile.name);
        Self {
            k,
            profile,
            pod,
            stop,
            source,
            containers: Vec::new(),
            pod_ip: String::new(),
            pod_ip_v6: None,
            phase: "Pending",
            reason: None,
            sandbox_ready: false,
            admitted: false,
            slot: false,
            evicted: false,
            host_process: false,
        }
    }

    fn v(&self) -> &Value {
        self.pod.value()
    }

    /// Before a wait that may last the pod's life: the task keeps its pod's version without
    /// the decoded value, which the store lets go of once nothing reads it (20,000 pods at
    /// 5,000 nodes held 600 MB of values no one read).
    fn idle(&mut self) {
        if self.pod.is_decoded() {
            self.pod = self.pod.without_value();
        }
    }

    fn full_name(&self) -> String {
        format!("{}_{}({})", self.pod.name(), self.pod.namespace(), self.pod.uid())
    }

    fn event(&self, kind: Kind, reason: &str, message: &str) {
        events::emit(&self.k.store, self.pod.value(), kind, reason, message, &self.source);
    }

    /// Waits, unless the pod is deleted meanwhile (then false).
    async fn wait(&self, d: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(d) => true,
            _ = self.stop.notified() => {
                // Keep the permit for terminate().
                self.stop.notify_one();
                false
            }
        }
    }

    fn restart_policy(&self) -> &str {
        match json::str(self.v(), "/spec/restartPolicy") {
            "" => "Always",
            p => p,
        }
    }

    async fn play(&mut self) {
        if self.profile.has_fault(crate::config::faults::Fault::KubeletStopped) || self.pod.is_terminating() {
            return;
        }
        if let Some((reason, message)) = self.admit_resources() {
            self.reject(&reason, &message);
            return;
        }
        self.admitted = true;
        self.slot = true;
        let handler = match json::str(self.v(), "/spec/runtimeClassName") {
            "" => None,
            name => self
                .k
                .store
                .get(resources::named("node.k8s.io", "runtimeclasses"), "", name)
                .ok()
                .map(|rc| json::str(rc.value(), "/handler").to_string()),
        };
        let verdict = outcome::plan(&self.profile, self.v(), &self.k.catalogue, handler.as_deref());
        let event_reason = verdict.event_reason().unwrap_or("FailedCreatePodSandBox").to_string();
        match verdict {
            PodFate::Rejected { reason, message, .. } => self.reject(&reason, &message),
            PodFate::SandboxFails { message, .. } => self.sandbox_fails(&event_reason, &message).await,
            PodFate::Proceed(plan) => {
                for line in &plan.kubelet_log {
                    self.k.logs.append("", &self.profile.name, "kubelet", line);
                }
                for (reason, message) in &plan.warning_events {
                    self.event(Kind::Warning, reason, message);
                }
                self.host_process = plan.host_process;
                self.pod_ip = if plan.host_network || plan.host_process {
                    self.profile.ip.to_string()
                } else {
                    self.k.allocate_ip(&self.profile)
                };
                // Dual-stack: the CNI's IPAM gives a pod-network pod an IPv6 address from the
                // node's IPv6 pod CIDR too, where the node's CNI runs dual-stack
                // (dualstack::gives_ipv6); host-network pods share the node's (IPv4) address.
                self.pod_ip_v6 = if plan.host_network || plan.host_process || !dualstack::gives_ipv6(&self.profile) {
                    None
                } else {
                    let v4 = self.pod_ip.parse().ok();
                    self.profile
                        .pod_cidr_v6
                        .as_deref()
                        .zip(v4)
                        .and_then(|(cidr, v4)| dualstack::pod_address(cidr, v4))
                        .map(|ip| ip.to_string())
                };
                let make = |c: &ContainerPlan, init: bool| Container {
                    plan: c.clone(),
                    init,
                    restarts: 0,
                    state: json!({"waiting": {"reason": if init { "PodInitializing" } else { "ContainerCreating" }}}),
                    last_state: json!({}),
                    ready: false,
                    started: false,
                    container_id: String::new(),
                };
                self.containers = plan
                    .init_containers
                    .iter()
                    .map(|c| make(c, true))
                    .chain(plan.containers.iter().map(|c| make(c, false)))
                    .collect();
                self.write_status();
                if !self.transient_setup(plan.host_network || plan.host_process).await {
                    return;
                }
                if !self.wait(self.profile.delay(Step::Sandbox, self.pod.uid())).await {
                    return;
                }
                self.sandbox_ready = true;
                let _ = self.run_containers().await;
            }
        }
    }

    fn reject(&mut self, reason: &str, message: &str) {
        self.phase = "Failed";
        self.reason = Some((reason.to_string(), message.to_string()));
        self.write_status();
        let short = message.strip_prefix("Pod was rejected: ").unwrap_or(message);
        self.event(Kind::Warning, reason, short);
    }

    /// The spec of container i (init or regular), by name.
    fn container_spec(&self, i: usize) -> Option<Value> {
        let name = &self.containers[i].plan.name;
        ["initContainers", "containers"]
            .iter()
            .filter_map(|k| self.v().pointer(&format!("/spec/{k}")).and_then(Value::as_array))
            .flatten()
            .find(|c| json::str(c, "/name") == *name)
            .cloned()
    }
}
