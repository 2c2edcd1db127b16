//! Simulated kubelets: one per node, driven by the node's profile. They renew node leases,
//! admit pods, and run each pod as a state machine (sandbox, image pulls, container create and
//! start, exits and restarts with CrashLoopBackOff back-off, graceful termination), writing pod
//! status and events with upstream reasons. What happens to a pod is decided by
//! [`outcome::plan`]; this module only plays it out over (simulated) time.

pub mod eviction;
pub mod outcome;
pub mod transient;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;

use self::eviction::{ContainerUse, PodUse};
use self::outcome::{ContainerOutcome, ContainerPlan, PodFate};
use crate::config::profile::{NodeProfile, Step};
use crate::control::events::{self, Kind, Source};
use crate::control::scheduler::PodNeeds;
use crate::network::dualstack;
use crate::node::exec::volumes::{self, VolumeStore, WriteTarget, Writer};
use crate::node::images::Catalogue;
use crate::node::logs::LogBook;
use crate::node::runtime::Process;
use crate::store::api_error::ApiError;
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

    /// Records that container `container` of `pod` holds `bytes` of memory on the node.
    fn hold_memory(&self, profile: &NodeProfile, pod: &Obj, container: &str, bytes: u128) {
        let spec = pod.value();
        let request = spec
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| json::str(c, "/name") == container))
            .and_then(|c| {
                let r = c
                    .pointer("/resources/requests/memory")
                    .or_else(|| c.pointer("/resources/limits/memory"))?;
                let text = r.as_str().map(str::to_string).unwrap_or_else(|| r.to_string());
                let bytes = Quantity::parse(&text).and_then(|q| u128::try_from(q.value()).ok())?;
                Some((text, bytes))
            });
        let mut memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        let pods = memory.entry(profile.name.clone()).or_default();
        let at = match pods.iter().position(|p| p.uid == pod.uid()) {
            Some(i) => i,
            None => {
                pods.push(PodUse {
                    uid: pod.uid().to_string(),
                    namespace: pod.namespace().to_string(),
                    name: pod.name().to_string(),
                    priority: spec.pointer("/spec/priority").and_then(Value::as_i64).unwrap_or(0),
                    containers: Vec::new(),
                });
                pods.len() - 1
            }
        };
        let containers = &mut pods[at].containers;
        containers.retain(|c| c.name != container);
        containers.push(ContainerUse {
            name: container.to_string(),
            bytes,
            request,
        });
    }

    /// Forgets the memory a pod's containers held; true if it held any.
    fn release_memory(&self, node: &str, uid: &str) -> bool {
        let mut memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        let Some(pods) = memory.get_mut(node) else {
            return false;
        };
        let before = pods.len();
        pods.retain(|p| p.uid != uid);
        before != pods.len()
    }

    /// The eviction manager's pass over one node: the `memory.available` signal against the
    /// hard threshold sets the MemoryPressure condition and, under pressure, picks one pod to
    /// evict (MEM-EVICTION). Nodes whose kubelet does not evict (Windows before 1.31) do
    /// nothing: there the condition is not implemented.
    fn check_memory(&self, profile: &NodeProfile) {
        if !profile.evicts_on_memory_pressure() {
            return;
        }
        let Some((threshold, bytes)) = eviction::threshold(profile) else {
            return;
        };
        let (under, victim) = {
            let memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
            let pods = memory.get(&profile.name).map(Vec::as_slice).unwrap_or_default();
            let available = eviction::available(profile, pods);
            let under = available < bytes;
            let mut evictions = self.evictions.lock().unwrap_or_else(|p| p.into_inner());
            let victim = if under {
                eviction::victim(pods, &|p| evictions.contains_key(&p.uid))
                    .map(|p| (p.uid.clone(), eviction::message(&threshold, available, p)))
            } else {
                None
            };
            if let Some((uid, message)) = &victim {
                evictions.insert(uid.clone(), message.clone());
            }
            (under, victim.map(|v| v.0))
        };
        let changed = {
            let mut pressure = self.pressure.lock().unwrap_or_else(|p| p.into_inner());
            if under {
                pressure.insert(profile.name.clone())
            } else {
                pressure.remove(&profile.name)
            }
        };
        if changed {
            self.set_memory_pressure(profile, under);
        }
        if let Some(uid) = victim {
            let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(stop) = running.get(&uid) {
                stop.notify_one();
            }
        }
    }

    /// The node's MemoryPressure condition and its `node.kubernetes.io/memory-pressure` taint.
    fn set_memory_pressure(&self, profile: &NodeProfile, under: bool) {
        let nodes = resources::core("nodes");
        let at = now();
        let (status, reason, message) = if under {
            (
                "True",
                "KubeletHasInsufficientMemory",
                "kubelet has insufficient memory available",
            )
        } else {
            (
                "False",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            )
        };
        let _ = self.store.modify(nodes, "", &profile.name, Part::Status, |n| {
            if let Some(conds) = n.pointer_mut("/status/conditions").and_then(Value::as_array_mut) {
                for c in conds.iter_mut().filter(|c| json::str(c, "/type") == "MemoryPressure") {
                    c["status"] = json!(status);
                    c["reason"] = json!(reason);
                    c["message"] = json!(message);
                    c["lastTransitionTime"] = json!(at);
                }
            }
            Ok(())
        });
        let result = self.store.modify(nodes, "", &profile.name, Part::Main, |n| {
            let mut taints: Vec<Value> = n
                .pointer("/spec/taints")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            taints.retain(|t| json::str(t, "/key") != "node.kubernetes.io/memory-pressure");
            if under {
                taints.push(
                    json!({"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule", "timeAdded": at}),
                );
            }
            n["spec"]["taints"] = json!(taints);
            Ok(())
        });
        if under && let Ok(node) = result {
            events::emit(
                &self.store,
                node.value(),
                Kind::Warning,
                "EvictionThresholdMet",
                "Attempting to reclaim memory",
                &Source::kubelet(&profile.name),
            );
        }
    }

    /// The eviction message, if the eviction manager chose this pod.
    fn take_eviction(&self, uid: &str) -> Option<String> {
        self.evictions.lock().unwrap_or_else(|p| p.into_inner()).remove(uid)
    }

    fn profile(&self, node: &str) -> Option<&NodeProfile> {
        self.by_name.get(node).and_then(|i| self.profiles.get(*i))
    }

    /// Runs every node's kubelet until the store closes.
    pub async fn run(self: Arc<Self>) {
        self.mark_stopped_nodes();
        let stuck_flanneld = self.start_node_logs();
        tokio::spawn(self.clone().renew_leases());
        let mut feed = self.store.subscribe();
        self.resync();
        let mut resync = tokio::time::interval(Duration::from_millis(500));
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
                    // Fell behind the history: the periodic resync picks up what was missed.
                    Err(crate::store::RecvError::Lagged(_)) => {}
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
        let node = json::str(pod.value(), "/spec/nodeName");
        if node.is_empty() || kind == EventType::Deleted {
            return;
        }
        let Some(profile) = self.profile(node).cloned() else {
            return;
        };
        let uid = pod.uid().to_string();
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        match running.get(&uid) {
            Some(stop) => {
                if pod.is_terminating() {
                    stop.notify_one();
                }
            }
            None => {
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
        }
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

    fn allocate_ip(&self, profile: &NodeProfile) -> String {
        let mut ips = self.ips.lock().unwrap_or_else(|p| p.into_inner());
        let used = ips.entry(profile.name.clone()).or_default();
        // .1 is the bridge gateway; .254 stays free for kube-proxy's source VIP on overlay networks.
        let host = (2..254).find(|h| !used.contains(h)).unwrap_or(253);
        used.insert(host);
        let prefix = profile.pod_cidr.trim_end_matches("0/24");
        format!("{prefix}{host}")
    }

    fn release_ip(&self, profile: &NodeProfile, ip: &str) {
        if let Some(host) = ip.rsplit('.').next().and_then(|h| h.parse::<u32>().ok()) {
            let mut ips = self.ips.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(used) = ips.get_mut(&profile.name) {
                used.remove(&host);
            }
        }
    }

    /// When `image` is (or will be) on `node`; None if no pull of it started there. Without one,
    /// records that a pull taking `takes` starts now.
    fn claim_pull(&self, node: &str, image: &str, takes: Duration) -> Option<std::time::Instant> {
        let mut pulled = self.pulled.lock().unwrap_or_else(|p| p.into_inner());
        let images = pulled.entry(node.to_string()).or_default();
        match images.get(image) {
            Some(at) => Some(*at),
            None => {
                images.insert(image.to_string(), std::time::Instant::now() + takes);
                None
            }
        }
    }

    /// Whether a pull of `image` started on `node` (the image is there, or on its way).
    fn known_image(&self, node: &str, image: &str) -> bool {
        let pulled = self.pulled.lock().unwrap_or_else(|p| p.into_inner());
        pulled.get(node).is_some_and(|images| images.contains_key(image))
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
    fn status(&self, image_id: &str) -> Value {
        json!({
            "name": self.plan.name,
            "image": self.plan.image,
            "imageID": if self.started || self.restarts > 0 { image_id.to_string() } else { String::new() },
            "containerID": if self.container_id.is_empty() { Value::Null } else { json!(self.container_id) },
            "ready": self.ready,
            "started": self.started,
            "restartCount": self.restarts,
            "state": self.state,
            "lastState": self.last_state,
        })
    }

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

    /// Resource admission (reason `OutOf<resource>`: OutOfcpu, OutOfmemory, OutOfhugepages-2Mi, as
    /// `pkg/kubelet/lifecycle/predicate.go` formats it): the pod must fit in what the node's
    /// admitted pods leave of its allocatable. Admitting it reserves its requests.
    fn admit_resources(&self) -> Option<(String, String)> {
        let needs = PodNeeds::from_pod(self.v());
        let alloc = |k: &str| {
            self.profile
                .allocatable
                .get(k)
                .and_then(|v| Quantity::parse(v))
                .unwrap_or_default()
        };
        let mut admitted = self.k.admitted.lock().unwrap_or_else(|p| p.into_inner());
        let mut slots = self.k.pod_slots.lock().unwrap_or_else(|p| p.into_inner());
        // The pod count first, as upstream's fit check does: every admitted pod that has not
        // terminated counts, DaemonSet and system pods included (maxPods).
        let used_pods = slots.get(&self.profile.name).copied().unwrap_or_default();
        let max_pods = alloc("pods").value();
        if used_pods + 1 > max_pods {
            return Some((
                "OutOfpods".into(),
                format!(
                    "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: {used_pods}, capacity: {max_pods}"
                ),
            ));
        }
        let (used_cpu, used_mem) = admitted.get(&self.profile.name).copied().unwrap_or_default();
        for (res, need, used) in [("cpu", needs.cpu, used_cpu), ("memory", needs.memory, used_mem)] {
            let cap = alloc(res);
            if need.milli() > 0 && used + need > cap {
                let fmt = |q: Quantity| {
                    if res == "cpu" {
                        q.milli().to_string()
                    } else {
                        q.value().to_string()
                    }
                };
                return Some((
                    format!("OutOf{res}"),
                    format!(
                        "Pod was rejected: Node didn't have enough resource: {res}, requested: {}, used: {}, capacity: {}",
                        fmt(need),
                        fmt(used),
                        fmt(cap)
                    ),
                ));
            }
        }
        // Scalar resources (hugepages-*, extended resources) against what the node advertises:
        // pods bound past the scheduler are refused as upstream's predicate does (their use by
        // other pods is the scheduler's to count; it is not tracked here).
        for (res, need) in &needs.scalar {
            let cap = alloc(res);
            if *need > cap {
                return Some((
                    format!("OutOf{res}"),
                    format!(
                        "Pod was rejected: Node didn't have enough resource: {res}, requested: {}, used: 0, capacity: {}",
                        need.value(),
                        cap.value()
                    ),
                ));
            }
        }
        admitted.insert(
            self.profile.name.clone(),
            (used_cpu + needs.cpu, used_mem + needs.memory),
        );
        slots.insert(self.profile.name.clone(), used_pods + 1);
        None
    }

    /// Gives back the pod's place in the node's `pods` count (once it terminated or left).
    fn release_slot(&mut self) {
        if !std::mem::take(&mut self.slot) {
            return;
        }
        let mut slots = self.k.pod_slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = slots.get_mut(&self.profile.name) {
            *n = (*n - 1).max(0);
        }
    }

    /// Gives back what [`Self::admit_resources`] reserved.
    fn release_resources(&self) {
        let needs = PodNeeds::from_pod(self.v());
        let mut admitted = self.k.admitted.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((cpu, mem)) = admitted.get_mut(&self.profile.name) {
            *cpu = *cpu - needs.cpu;
            *mem = *mem - needs.memory;
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

    /// The sandbox cannot be created (or a volume mounted): the containers wait in
    /// `ContainerCreating` (init containers and, behind them, the others in `PodInitializing`)
    /// while the kubelet retries ([`crate::config::profile::NodeProfile::setup_retry`]), logging
    /// the runtime's error and recording the event each time.
    async fn sandbox_fails(&mut self, reason: &str, message: &str) {
        self.containers = waiting_containers(self.v());
        self.write_status();
        let runtime_error = message.strip_prefix("Failed to create pod sandbox: ");
        let mut attempt = 0;
        loop {
            if let Some(err) = runtime_error {
                let line = format!(
                    "\"RunPodSandbox from runtime service failed\" err={err:?} pod=\"{}/{}\"",
                    self.pod.namespace(),
                    self.pod.name()
                );
                self.k.logs.append("", &self.profile.name, "kubelet", &line);
            }
            self.event(Kind::Warning, reason, message);
            let retry = self.profile.setup_retry(reason == "FailedMount", attempt);
            if !self.wait(retry).await {
                return;
            }
            attempt += 1;
        }
    }

    async fn run_containers(&mut self) -> Ended {
        // Init containers, one after another, each to a successful exit.
        let init_count = self.containers.iter().filter(|c| c.init).count();
        for i in 0..init_count {
            loop {
                match self.start(i).await {
                    None => return Ended::Stopped,
                    Some(true) => {}
                    Some(false) => match self.crash_loop(i).await {
                        None => return Ended::Stopped,
                        Some(()) => continue,
                    },
                }
                match self.await_exit(i).await {
                    None => return Ended::Stopped,
                    Some(0) => break,
                    Some(_) if self.restart_policy() == "Never" => {
                        self.phase = "Failed";
                        self.write_status();
                        return Ended::Settled;
                    }
                    Some(_) => {
                        if self.crash_loop(i).await.is_none() {
                            return Ended::Stopped;
                        }
                    }
                }
            }
        }
        // Regular containers: start each, then watch them all.
        for i in init_count..self.containers.len() {
            if self.start(i).await.is_none() {
                return Ended::Stopped;
            }
        }
        self.supervise(init_count).await
    }

    /// Pulls, creates and starts container i. Some(true): running; Some(false): the start
    /// failed (retry with back-off); None: the pod was deleted meanwhile.
    async fn start(&mut self, i: usize) -> Option<bool> {
        let image = self.containers[i].plan.image.clone();
        let name = self.containers[i].plan.name.clone();
        if let ContainerOutcome::PullFails { message, .. } = self.containers[i].plan.outcome.clone() {
            self.pull_forever(i, &image, &message).await;
            return None;
        }
        if !self.pull(i, &image).await {
            return None;
        }
        match self.containers[i].plan.outcome.clone() {
            ContainerOutcome::ConfigError { message, .. } => {
                let mut attempt = 0;
                loop {
                    self.containers[i].state =
                        json!({"waiting": {"reason": "CreateContainerConfigError", "message": message}});
                    self.write_status();
                    self.event(Kind::Warning, "Failed", &format!("Error: {message}"));
                    if !self.wait(self.profile.backoff(attempt)).await {
                        return None;
                    }
                    attempt += 1;
                }
            }
            ContainerOutcome::StartFails { message, .. } => {
                if !self.wait(self.profile.delay(Step::Create, self.pod.uid())).await {
                    return None;
                }
                self.containers[i].container_id = container_id(self.pod.uid(), &name, self.containers[i].restarts);
                self.event(Kind::Normal, "Created", &format!("Created container: {name}"));
                let message = message.replace(
                    "<containerId>",
                    self.containers[i].container_id.trim_start_matches("containerd://"),
                );
                self.event(Kind::Warning, "Failed", &format!("Error: {message}"));
                let at = now();
                self.containers[i].state = json!({"terminated": {"exitCode": 128, "reason": "StartError", "message": message,
                    "startedAt": "1970-01-01T00:00:00Z", "finishedAt": at, "containerID": self.containers[i].container_id}});
                self.write_status();
                Some(false)
            }
            ContainerOutcome::Runs { process } => {
                if !self.wait(self.profile.delay(Step::Create, self.pod.uid())).await {
                    return None;
                }
                self.containers[i].container_id = container_id(self.pod.uid(), &name, self.containers[i].restarts);
                self.event(Kind::Normal, "Created", &format!("Created container: {name}"));
                if !self.wait(self.profile.delay(Step::Start, self.pod.uid())).await {
                    return None;
                }
                self.event(Kind::Normal, "Started", &format!("Started container {name}"));
                let log = match &process {
                    Process::LongRunning { log }
                    | Process::Holding { log, .. }
                    | Process::Exits { log, .. }
                    | Process::AllocationFails { log, .. } => log.clone(),
                    Process::OomKilled { .. } => Vec::new(),
                };
                for line in log {
                    self.k.logs.append(self.pod.namespace(), self.pod.name(), &name, &line);
                }
                self.apply_writes(i);
                let c = &mut self.containers[i];
                c.state = json!({"running": {"startedAt": now()}});
                c.started = true;
                c.ready = !c.init;
                // One write carries both the container state and the pod phase it implies.
                self.phase = self.computed_phase();
                self.write_status();
                if let Process::Holding { bytes, .. } = process {
                    self.k.hold_memory(&self.profile, &self.pod, &name, bytes);
                    self.k.check_memory(&self.profile);
                }
                Some(true)
            }
            ContainerOutcome::PullFails { .. } => None,
        }
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

    /// Puts what container i's main process writes where its mounts say (STO-EMPTYDIR-DISK:
    /// an init container's file in an emptyDir is there for the containers after it).
    fn apply_writes(&self, i: usize) {
        let plan = &self.containers[i].plan;
        if plan.writes.is_empty() {
            return;
        }
        let windows = self.profile.is_windows();
        let spec = self.v().get("spec").cloned().unwrap_or(Value::Null);
        let Some(container) = ["initContainers", "containers"]
            .iter()
            .filter_map(|k| spec.get(*k).and_then(Value::as_array))
            .flatten()
            .find(|c| json::str(c, "/name") == plan.name)
        else {
            return;
        };
        let mounts = volumes::mount_points(&spec, container, windows);
        let writer = Writer {
            pod_uid: self.pod.uid(),
            container: &plan.name,
            node: &self.profile.name,
            windows,
            host_process: self.host_process,
        };
        for w in &plan.writes {
            // A read-only target already failed the process (its shell's error).
            if let WriteTarget::Store { place, path } = volumes::resolve(&mounts, &w.path, writer) {
                self.k.volumes.write(&place, &path, &w.data, w.append, windows);
            }
        }
    }

    /// The image pull policy of container i (`IfNotPresent` when unset).
    fn pull_policy(&self, i: usize) -> String {
        let name = &self.containers[i].plan.name;
        ["/spec/initContainers", "/spec/containers"]
            .iter()
            .flat_map(|p| json::array(self.v(), p))
            .find(|c| json::str(c, "/name") == name)
            .map(|c| json::str(c, "/imagePullPolicy").to_string())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "IfNotPresent".into())
    }

    /// Makes container i's image present on the node. The node's image cache decides: an image
    /// pulled there before is used as is, unless the policy is `Always` — then the kubelet asks
    /// the registry for the digest and finds the layers cached, a short pull
    /// (https://kubernetes.io/docs/concepts/containers/images/#image-pull-policy); an image
    /// another pod is pulling is there when that pull ends; any other is pulled, taking
    /// `timing.windowsPull` when set (Windows images pull for minutes on real nodes). False
    /// when the pod is deleted meanwhile.
    async fn pull(&mut self, i: usize, image: &str) -> bool {
        let node = self.profile.name.clone();
        let always = self.pull_policy(i) == "Always";
        let short = self.profile.delay(Step::Pull, self.pod.uid());
        let full = self.profile.timing.first_pull(self.profile.os).unwrap_or(short);
        // A pull that asks the registry (an image not here yet, or policy Always) may fail once.
        if (always || !self.k.known_image(&node, image)) && !self.failed_pull_attempt(i, image).await {
            return false;
        }
        let started = std::time::Instant::now();
        let d = match self.k.claim_pull(&node, image, full) {
            None => full,
            Some(ready) if ready > started => ready - started,
            Some(_) if always => short,
            Some(_) => {
                self.event(
                    Kind::Normal,
                    "Pulled",
                    &format!("Container image \"{image}\" already present on machine"),
                );
                return true;
            }
        };
        self.event(Kind::Normal, "Pulling", &format!("Pulling image \"{image}\""));
        if !self.wait(d).await {
            return false;
        }
        let secs = d.as_secs_f64().max(0.001);
        self.event(
            Kind::Normal,
            "Pulled",
            &format!("Successfully pulled image \"{image}\" in {secs:.3}s ({secs:.3}s including waiting). Image size: 45321876 bytes."),
        );
        true
    }

    /// With `timing.transientEvents`, the first attempt of a chosen share of pulls fails (the
    /// registry times out), and the kubelet backs off before the attempt that succeeds, as real
    /// kubelets report it (ErrImagePull, then ImagePullBackOff). True unless the pod is deleted.
    async fn failed_pull_attempt(&mut self, i: usize, image: &str) -> bool {
        let t = &self.profile.timing;
        if !t.transient_events
            || !transient::pull_attempt_fails(t.seed, &self.profile.name, self.pod.namespace(), self.pod.name(), image)
        {
            return true;
        }
        self.event(Kind::Normal, "Pulling", &format!("Pulling image \"{image}\""));
        if !self.wait(self.profile.delay(Step::Pull, self.pod.uid())).await {
            return false;
        }
        let failed = transient::pull_timeout_message(image);
        let reason = failed
            .strip_prefix(&format!("Failed to pull image {image:?}: "))
            .unwrap_or(&failed)
            .to_string();
        self.event(Kind::Warning, "Failed", &failed);
        self.event(Kind::Warning, "Failed", "Error: ErrImagePull");
        self.containers[i].state = json!({"waiting": {"reason": "ErrImagePull", "message": reason}});
        self.write_status();
        if !self.wait(self.profile.backoff(0) / 2).await {
            return false;
        }
        self.event(Kind::Normal, "BackOff", &format!("Back-off pulling image \"{image}\""));
        self.event(Kind::Warning, "Failed", "Error: ImagePullBackOff");
        self.containers[i].state = json!({"waiting": {"reason": "ImagePullBackOff", "message": format!("Back-off pulling image \"{image}\": ErrImagePull: {reason}")}});
        self.write_status();
        if !self.wait(self.profile.backoff(0) / 2).await {
            return false;
        }
        let waiting = if self.containers[i].init {
            "PodInitializing"
        } else {
            "ContainerCreating"
        };
        self.containers[i].state = json!({"waiting": {"reason": waiting}});
        self.write_status();
        true
    }

    /// With `timing.transientEvents`: a `FailedMount` of the service-account volume when the
    /// namespace is only moments old, and on a chosen share of Windows pods on the pod network
    /// one `FailedCreatePodSandBox` that the retry gets past. True unless the pod is deleted.
    async fn transient_setup(&mut self, host_network: bool) -> bool {
        if !self.profile.timing.transient_events {
            return true;
        }
        let ns = self.pod.namespace().to_string();
        let window = transient::NEW_NAMESPACE_WINDOW.mul_f64(self.profile.timing.scale);
        let age = self
            .k
            .store
            .get(resources::core("namespaces"), "", &ns)
            .ok()
            .and_then(|n| {
                chrono::DateTime::parse_from_rfc3339(json::str(n.value(), "/metadata/creationTimestamp")).ok()
            })
            .and_then(|at| (chrono::Utc::now() - at.with_timezone(&chrono::Utc)).to_std().ok());
        if age.is_some_and(|a| a < window)
            && let Some(volume) = crate::node::exec::mounts::sa_volume(&self.k.store, self.v())
        {
            let message = transient::failed_mount_message(json::str(&volume, "/name"), &ns);
            self.event(Kind::Warning, "FailedMount", &message);
        }
        let t = &self.profile.timing;
        if self.profile.is_windows()
            && !host_network
            && transient::sandbox_retried(t.seed, &self.profile.name, &ns, self.pod.name())
        {
            let id = outcome::container_id(self.pod.uid(), "POD");
            let message = transient::sandbox_message(&self.profile, id.trim_start_matches("containerd://"));
            self.event(Kind::Warning, "FailedCreatePodSandBox", &message);
            if !self.wait(self.profile.backoff(0) / 2).await {
                return false;
            }
        }
        true
    }

    async fn pull_forever(&mut self, i: usize, image: &str, message: &str) {
        let mut attempt = 0;
        loop {
            self.event(Kind::Normal, "Pulling", &format!("Pulling image \"{image}\""));
            if !self.wait(self.profile.delay(Step::Pull, self.pod.uid())).await {
                return;
            }
            self.event(
                Kind::Warning,
                "Failed",
                &format!("Failed to pull image \"{image}\": {message}"),
            );
            self.event(Kind::Warning, "Failed", "Error: ErrImagePull");
            self.containers[i].state = json!({"waiting": {"reason": "ErrImagePull", "message": message}});
            self.write_status();
            if !self.wait(self.profile.backoff(attempt) / 2).await {
                return;
            }
            self.event(Kind::Normal, "BackOff", &format!("Back-off pulling image \"{image}\""));
            self.event(Kind::Warning, "Failed", "Error: ImagePullBackOff");
            self.containers[i].state = json!({"waiting": {"reason": "ImagePullBackOff", "message": format!("Back-off pulling image \"{image}\": ErrImagePull: {message}")}});
            self.write_status();
            if !self.wait(self.profile.backoff(attempt)).await {
                return;
            }
            attempt += 1;
        }
    }

    /// Waits for container i (running) to exit; Some(code), or None when the pod is deleted.
    async fn await_exit(&mut self, i: usize) -> Option<i64> {
        let (after, code, reason) = match &self.containers[i].plan.outcome {
            ContainerOutcome::Runs {
                process: Process::Exits { code, after_ms, .. },
            } => (
                scaled(*after_ms, &self.profile),
                i64::from(*code),
                if *code == 0 { "Completed" } else { "Error" },
            ),
            ContainerOutcome::Runs {
                process: Process::OomKilled { after_ms },
            } => (scaled(*after_ms, &self.profile), 137, "OOMKilled"),
            ContainerOutcome::Runs {
                process: Process::AllocationFails { after_ms, .. },
            } => (scaled(*after_ms, &self.profile), 1, "Error"),
            _ => {
                // Long-running: only deletion ends it.
                self.stop.notified().await;
                self.stop.notify_one();
                return None;
            }
        };
        if !self.wait(after).await {
            return None;
        }
        let message = self.container_spec(i).and_then(|spec| {
            let layer = self.k.volumes.files(&volumes::Place::Layer {
                pod_uid: self.pod.uid().to_string(),
                container: self.containers[i].plan.name.clone(),
            });
            termination_message(&self.profile, &spec, &layer)
        });
        let c = &mut self.containers[i];
        let started = c.state.pointer("/running/startedAt").cloned().unwrap_or(json!(now()));
        c.state = json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now(), "containerID": c.container_id}});
        if let Some(m) = message {
            c.state["terminated"]["message"] = json!(m);
        }
        c.ready = false;
        self.write_status();
        Some(code)
    }

    /// Back-off before restarting container i: CrashLoopBackOff. None when the pod is deleted.
    async fn crash_loop(&mut self, i: usize) -> Option<()> {
        let name = self.containers[i].plan.name.clone();
        let restarts = self.containers[i].restarts;
        let label = NodeProfile::backoff_label(restarts);
        let full = self.full_name();
        {
            let c = &mut self.containers[i];
            c.last_state = c.state.clone();
            c.restarts += 1;
            c.ready = false;
            c.state = json!({"waiting": {"reason": "CrashLoopBackOff",
                "message": format!("back-off {label} restarting failed container={name} pod={full}")}});
        }
        self.write_status();
        self.event(
            Kind::Warning,
            "BackOff",
            &format!("Back-off restarting failed container {name} in pod {full}"),
        );
        if !self.wait(self.profile.backoff(restarts)).await {
            return None;
        }
        self.k.logs.restart(self.pod.namespace(), self.pod.name(), &name);
        self.k.volumes.reset_layer(self.pod.uid(), &name);
        Some(())
    }

    /// Watches the regular containers: exits, restarts per policy, the pod's final phase.
    async fn supervise(&mut self, first: usize) -> Ended {
        let indices: Vec<usize> = (first..self.containers.len()).collect();
        // Each container that can exit gets its own timeline; long-running ones wait for deletion.
        loop {
            let mut next: Option<(Duration, usize)> = None;
            for &i in &indices {
                let c = &self.containers[i];
                let wake = match (&c.plan.outcome, c.running(), c.terminated_code()) {
                    (ContainerOutcome::StartFails { .. }, _, Some(_)) => Some(Duration::ZERO),
                    (ContainerOutcome::Runs { process }, true, _) => match process {
                        Process::LongRunning { .. } | Process::Holding { .. } => None,
                        Process::Exits { after_ms, .. }
                        | Process::OomKilled { after_ms }
                        | Process::AllocationFails { after_ms, .. } => Some(scaled(*after_ms, &self.profile)),
                    },
                    _ => None,
                };
                if let Some(w) = wake
                    && next.is_none_or(|(d, _)| w < d)
                {
                    next = Some((w, i));
                }
            }
            self.update_phase();
            let Some((_, i)) = next else {
                // Nothing more happens on its own.
                self.stop.notified().await;
                self.stop.notify_one();
                return Ended::Stopped;
            };
            let code = if self.containers[i].running() {
                match self.await_exit(i).await {
                    None => return Ended::Stopped,
                    Some(code) => code,
                }
            } else {
                self.containers[i].terminated_code().unwrap_or(128)
            };
            let restart = match self.restart_policy() {
                "Never" => false,
                "OnFailure" => code != 0,
                _ => true,
            };
            if !restart {
                // Stays terminated; mark the outcome as settled so it is not picked again.
                self.containers[i].plan.outcome = ContainerOutcome::Runs {
                    process: Process::LongRunning { log: Vec::new() },
                };
                self.update_phase();
                if self.containers[first..].iter().all(|c| c.terminated_code().is_some()) {
                    self.write_status();
                    return Ended::Settled;
                }
                continue;
            }
            if self.crash_loop(i).await.is_none() {
                return Ended::Stopped;
            }
            if self.start(i).await.is_none() {
                return Ended::Stopped;
            }
        }
    }

    /// The pod phase the containers' states imply.
    fn computed_phase(&self) -> &'static str {
        let regular: Vec<&Container> = self.containers.iter().filter(|c| !c.init).collect();
        let all_terminated = !regular.is_empty()
            && regular
                .iter()
                .all(|c| c.terminated_code().is_some() && c.state.get("waiting").is_none());
        if all_terminated && self.restart_policy() != "Always" {
            if regular.iter().all(|c| c.terminated_code() == Some(0)) {
                "Succeeded"
            } else {
                "Failed"
            }
        } else if regular.iter().any(|c| c.started || c.restarts > 0) {
            "Running"
        } else {
            "Pending"
        }
    }

    fn update_phase(&mut self) {
        let phase = self.computed_phase();
        if phase != self.phase {
            self.phase = phase;
            self.write_status();
        }
    }

    fn write_status(&mut self) {
        if matches!(self.phase, "Succeeded" | "Failed") {
            self.release_slot();
        }
        let pods = resources::core("pods");
        let at = now();
        let regular: Vec<&Container> = self.containers.iter().filter(|c| !c.init).collect();
        let init: Vec<&Container> = self.containers.iter().filter(|c| c.init).collect();
        let all_ready = !regular.is_empty() && regular.iter().all(|c| c.ready);
        let initialized = init.iter().all(|c| c.terminated_code() == Some(0));
        let image_id = |c: &Container| format!("{}@sha256:{:064x}", c.plan.image.split(':').next().unwrap_or(""), 0u8);
        let container_statuses: Vec<Value> = regular.iter().map(|c| c.status(&image_id(c))).collect();
        let init_statuses: Vec<Value> = init.iter().map(|c| c.status(&image_id(c))).collect();
        let phase = self.phase;
        let reason = self.reason.clone();
        let pod_ip = self.pod_ip.clone();
        let pod_ip_v6 = self.pod_ip_v6.clone();
        let host_ip = self.profile.ip.to_string();
        let sandbox_ready = self.sandbox_ready;
        let evicted = self.evicted;
        let disruption = self.profile.kubelet >= (1, 26);
        let result = self.k.store.modify(pods, self.pod.namespace(), self.pod.name(), Part::Status, |p| {
            let old_conditions = p.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
            let mut status = json!({"phase": phase, "qosClass": p.pointer("/status/qosClass").cloned().unwrap_or(json!("BestEffort"))});
            if let Some((r, m)) = reason.as_ref().filter(|_| !evicted) {
                status["reason"] = json!(r);
                status["message"] = json!(m);
                status["conditions"] = json!(old_conditions);
                p["status"] = status;
                return Ok(());
            }
            status["hostIP"] = json!(host_ip);
            status["hostIPs"] = json!([{"ip": host_ip}]);
            if !pod_ip.is_empty() && sandbox_ready {
                status["podIP"] = json!(pod_ip);
                status["podIPs"] = match &pod_ip_v6 {
                    // The primary (IPv4) family first, as the kubelet lists them.
                    Some(v6) => json!([{"ip": pod_ip}, {"ip": v6}]),
                    None => json!([{"ip": pod_ip}]),
                };
            }
            status["startTime"] = p.pointer("/status/startTime").cloned().unwrap_or(json!(at));
            let cond = |ty: &str, ok: bool, reason: Option<&str>| {
                let status = if ok { "True" } else { "False" };
                let transition = old_conditions
                    .iter()
                    .find(|c| json::str(c, "/type") == ty && json::str(c, "/status") == status)
                    .and_then(|c| c.get("lastTransitionTime").cloned())
                    .unwrap_or(json!(at));
                let mut c = json!({"type": ty, "status": status, "lastProbeTime": null, "lastTransitionTime": transition});
                if let (false, Some(r)) = (ok, reason) {
                    c["reason"] = json!(r);
                }
                c
            };
            let unready = regular.iter().filter(|c| !c.ready).map(|c| c.plan.name.as_str()).collect::<Vec<_>>();
            let mut conditions = vec![
                cond("PodReadyToStartContainers", sandbox_ready, None),
                cond("Initialized", initialized, Some("ContainersNotInitialized")),
                cond("Ready", all_ready, Some("ContainersNotReady")),
                cond("ContainersReady", all_ready, Some("ContainersNotReady")),
                cond("PodScheduled", true, None),
            ];
            if !all_ready {
                let msg = format!("containers with unready status: [{}]", unready.join(" "));
                conditions[2]["message"] = json!(msg);
                conditions[3]["message"] = json!(msg);
            }
            if let (true, Some((r, m))) = (evicted, &reason) {
                status["reason"] = json!(r);
                status["message"] = json!(m);
                if disruption {
                    conditions.push(json!({"type": "DisruptionTarget", "status": "True", "lastProbeTime": null,
                        "lastTransitionTime": at, "reason": "TerminationByKubelet", "message": m}));
                }
            }
            status["conditions"] = json!(conditions);
            status["containerStatuses"] = json!(container_statuses);
            if !init_statuses.is_empty() {
                status["initContainerStatuses"] = json!(init_statuses);
            }
            p["status"] = status;
            Ok(())
        });
        match result {
            // Keep the stored version: the task then holds no copy of its own.
            Ok(latest) => self.pod = latest,
            Err(ApiError::NotFound { .. }) => {}
            Err(e) => tracing::debug!("pod status write failed: {e}"),
        }
    }

    /// Graceful termination once the pod is deleted: stop containers, then remove the pod.
    async fn terminate(&mut self) {
        if !self.pod.is_terminating() {
            // Wait for the deletion (or an eviction, which then waits for the deletion).
            self.stop.notified().await;
            if let Some(message) = self.k.take_eviction(self.pod.uid()) {
                self.evict(&message).await;
                self.stop.notified().await;
            }
        }
        let pods = resources::core("pods");
        let Ok(current) = self.k.store.get(pods, self.pod.namespace(), self.pod.name()) else {
            self.cleanup();
            return;
        };
        self.pod = current;
        let running: Vec<String> = self
            .containers
            .iter()
            .filter(|c| c.running())
            .map(|c| c.plan.name.clone())
            .collect();
        for name in &running {
            self.event(Kind::Normal, "Killing", &format!("Stopping container {name}"));
        }
        if !running.is_empty() && !self.profile.has_fault(crate::config::faults::Fault::KubeletStopped) {
            // A process that delays its shutdown keeps its container (and the pod) until it exits
            // or the runtime stops waiting for it.
            let grace = self
                .v()
                .pointer("/metadata/deletionGracePeriodSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(30);
            let longest = (0..self.containers.len())
                .filter(|i| self.containers[*i].running())
                .filter_map(|i| self.container_spec(i))
                .filter_map(|c| shutdown_delay(&c))
                .max();
            let wait = match longest {
                Some(delay) => stop_wait(&self.profile, delay, grace),
                None => self.profile.delay(Step::Stop, self.pod.uid()),
            };
            tokio::time::sleep(wait).await;
            for c in self.containers.iter_mut().filter(|c| c.running()) {
                let started = c.state.pointer("/running/startedAt").cloned().unwrap_or(json!(now()));
                c.state = json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": now(), "containerID": c.container_id}});
                c.ready = false;
            }
            self.write_status();
        }
        if self.profile.has_fault(crate::config::faults::Fault::KubeletStopped) {
            // No kubelet: the pod stays Terminating, as on a real unreachable node.
            return;
        }
        let _ = self
            .k
            .store
            .remove_terminated(pods, self.pod.namespace(), self.pod.name());
        self.cleanup();
    }

    /// Hard eviction under memory pressure: the containers are killed at once, the pod ends
    /// Failed with reason `Evicted` and the upstream message, and its memory, requests and
    /// address go back to the node; the object stays until it is deleted (MEM-EVICTION).
    async fn evict(&mut self, message: &str) {
        let running: Vec<String> = self
            .containers
            .iter()
            .filter(|c| c.running())
            .map(|c| c.plan.name.clone())
            .collect();
        self.event(Kind::Warning, "Evicted", message);
        for name in &running {
            self.event(Kind::Normal, "Killing", &format!("Stopping container {name}"));
        }
        // Killed without a grace period: SIGKILL on Linux, TerminateProcess on Windows.
        let code = if self.profile.is_windows() { 1 } else { 137 };
        for c in self.containers.iter_mut().filter(|c| c.running()) {
            let started = c.state.pointer("/running/startedAt").cloned().unwrap_or(json!(now()));
            c.state = json!({"terminated": {"exitCode": code, "reason": "Error", "startedAt": started, "finishedAt": now(), "containerID": c.container_id}});
            c.ready = false;
        }
        self.phase = "Failed";
        self.reason = Some(("Evicted".into(), message.to_string()));
        self.evicted = true;
        self.write_status();
        if self.k.release_memory(&self.profile.name, self.pod.uid()) {
            self.k.check_memory(&self.profile);
        }
        if self.admitted {
            self.release_resources();
            self.admitted = false;
        }
    }

    fn cleanup(&mut self) {
        self.release_slot();
        if self.k.release_memory(&self.profile.name, self.pod.uid()) {
            self.k.check_memory(&self.profile);
        }
        if self.admitted {
            self.release_resources();
            self.admitted = false;
        }
        if !self.pod_ip.is_empty() && self.pod_ip != self.profile.ip.to_string() {
            self.k.release_ip(&self.profile, &self.pod_ip);
        }
        self.k.logs.remove_pod(self.pod.namespace(), self.pod.name());
        self.k.volumes.forget_pod(self.pod.uid());
    }
}

/// The containers of a pod whose sandbox does not exist yet, as the kubelet reports them:
/// waiting, `ContainerCreating` (`PodInitializing` for init containers and for containers
/// behind them).
fn waiting_containers(pod: &Value) -> Vec<Container> {
    let list = |key: &str| {
        pod.pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let init = list("initContainers");
    let regular_reason = if init.is_empty() {
        "ContainerCreating"
    } else {
        "PodInitializing"
    };
    let make = |c: &Value, is_init: bool| Container {
        plan: ContainerPlan {
            name: json::str(c, "/name").to_string(),
            image: json::str(c, "/image").to_string(),
            user: None,
            // Never played: the sandbox does not come up.
            outcome: ContainerOutcome::Runs {
                process: Process::LongRunning { log: Vec::new() },
            },
            writes: Vec::new(),
        },
        init: is_init,
        restarts: 0,
        state: json!({"waiting": {"reason": if is_init { "PodInitializing" } else { regular_reason }}}),
        last_state: json!({}),
        ready: false,
        started: false,
        container_id: String::new(),
    };
    init.iter()
        .map(|c| make(c, true))
        .chain(list("containers").iter().map(|c| make(c, false)))
        .collect()
}

/// The seconds a container's main process takes to exit once asked to stop: agnhost's servers
/// started with `--delay-shutdown=N` (netexec, net: "Number of seconds to delay shutdown when
/// receiving SIGTERM", AGN; Go delivers Windows' CTRL_SHUTDOWN_EVENT as SIGTERM since Go 1.14).
/// None for a process that exits at once.
fn shutdown_delay(container: &Value) -> Option<u64> {
    let argv: Vec<&str> = ["/command", "/args"]
        .iter()
        .flat_map(|k| json::array(container, k))
        .filter_map(Value::as_str)
        .collect();
    if !argv.iter().any(|a| matches!(*a, "netexec" | "net")) {
        return None;
    }
    let value = argv.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--delay-shutdown=")
            .or_else(|| (*a == "--delay-shutdown").then(|| argv.get(i + 1).copied()).flatten())
    })?;
    value.parse::<u64>().ok().filter(|n| *n > 0)
}

/// How long the runtime lets a process that needs `delay` seconds to stop run after the pod's
/// deletion with a `grace` period: until it exits or the grace period ends (the kubelet then
/// kills it) — except Docker on Windows, where the ENTRYPOINT process gets CTRL_SHUTDOWN_EVENT
/// and Windows waits 5 s by default before shutting every process down, whatever the grace
/// period (W14, WI26: "terminationGracePeriodSeconds - this is not fully implemented in Docker
/// on Windows", moby#25982; "TerminationGracePeriod: requires containerD") (POD-TERMINATION-GRACE).
/// Every one of those seconds is a second of the cluster's clock: `timing.scale` real seconds.
fn stop_wait(profile: &NodeProfile, delay: u64, grace: i64) -> Duration {
    let allowed = if profile.is_windows() && profile.runtime == crate::config::profile::RuntimeKind::Docker {
        5
    } else {
        grace.max(0).unsigned_abs()
    };
    scaled(delay.min(allowed).saturating_mul(1000), profile)
}

/// The most of a termination message the kubelet reads (`kubecontainer.MaxContainerTerminationMessageLength`).
const MAX_TERMINATION_MESSAGE: usize = 4 * 1024;

/// The termination message the kubelet reports for a container that exited, from what the
/// container wrote (`layer`: its own files). The kubelet mounts one host file of its own onto
/// the container's `terminationMessagePath` (`makeMounts` in
/// pkg/kubelet/kuberuntime/kuberuntime_container.go, through `MakeAbsolutePath`, so
/// `/dev/termination-log` is `C:\dev\termination-log` on Windows) and reads at most 4 KiB of that
/// host file at exit (`getTerminationMessage`). That is a single-file mapping: Linux runtimes and
/// containerd on Windows make it; Docker on Windows maps directories only (WSTO, W20: "With
/// Docker, volume mounts can only target a directory … This limitation does not exist with
/// CRI-containerD"; W14, WI31: `terminationMessagePath` "has some limitations in that Windows
/// doesn't support mapping single files"), so there what the container writes stays in its own
/// layer and no message is reported (POD-TERMINATION-MESSAGE).
fn termination_message(profile: &NodeProfile, spec: &Value, layer: &[(String, Vec<u8>)]) -> Option<String> {
    let path = json::opt_str(spec, "/terminationMessagePath").filter(|p| !p.is_empty())?;
    let windows = profile.is_windows();
    if windows && profile.runtime == crate::config::profile::RuntimeKind::Docker {
        return None;
    }
    let target = volumes::absolute(path, windows);
    let same = |p: &str| {
        if windows {
            p.eq_ignore_ascii_case(&target)
        } else {
            p == target
        }
    };
    let (_, data) = layer.iter().find(|(p, _)| same(p))?;
    let start = data.len().saturating_sub(MAX_TERMINATION_MESSAGE);
    let message = String::from_utf8_lossy(&data[start..]).into_owned();
    (!message.is_empty()).then_some(message)
}

fn container_id(pod_uid: &str, name: &str, restarts: u32) -> String {
    let h = crate::vocab::hash::Fnv::default()
        .write(pod_uid.as_bytes())
        .write(name.as_bytes())
        .write(&restarts.to_le_bytes())
        .finish();
    format!(
        "containerd://{h:016x}{:016x}{:016x}{:016x}",
        h.rotate_left(13),
        h.rotate_left(29),
        h.rotate_left(47)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// A node of a one-node topology: `os`, Kubernetes 1.14 or 1.32 by runtime era.
    fn node(os: &str, runtime: &str) -> NodeProfile {
        let kernel = if os == "windows" {
            "    kernelVersion: \"10.0.17763.1\"\n"
        } else {
            ""
        };
        let k8s = if runtime.starts_with("docker") { "1.14" } else { "1.32" };
        let yaml = format!(
            "name: t\nkubernetesVersion: v{k8s}.0\nnodes:\n  - name: node-1\n    os: {os}\n{kernel}    containerRuntime: \"{runtime}\"\n"
        );
        let topo = crate::config::topology::Topology::parse(&yaml, "test").expect("topology");
        NodeProfile::new(&topo.nodes[0], &topo, 0, std::net::Ipv4Addr::LOCALHOST)
    }

    /// POD-TERMINATION-MESSAGE: the kubelet reports what the container wrote at its
    /// terminationMessagePath where the runtime maps that single file (Linux, containerd on
    /// Windows: kuberuntime `makeMounts`/`getTerminationMessage`), and nothing on Docker on
    /// Windows, which maps directories only (WSTO, W20; W14, WI31 "Windows doesn't support
    /// mapping single files").
    #[rstest]
    #[case::linux("linux", "containerd://1.7.22", "/dev/termination-log", Some("done\n"))]
    #[case::windows_containerd("windows", "containerd://1.7.20", "C:\\dev\\termination-log", Some("done\r\n"))]
    #[case::windows_containerd_case("windows", "containerd://1.7.20", "c:\\DEV\\termination-log", Some("done\r\n"))]
    #[case::windows_docker("windows", "docker://18.9.1", "C:\\dev\\termination-log", None)]
    #[case::elsewhere("linux", "containerd://1.7.22", "/tmp/other", None)]
    fn the_termination_message_is_read_where_the_runtime_maps_the_file(
        #[case] os: &str,
        #[case] runtime: &str,
        #[case] written_at: &str,
        #[case] expected: Option<&str>,
    ) {
        let data = if os == "windows" { "done\r\n" } else { "done\n" };
        let layer = vec![(written_at.to_string(), data.as_bytes().to_vec())];
        let spec = json!({"name": "c", "terminationMessagePath": "/dev/termination-log"});
        assert_eq!(
            termination_message(&node(os, runtime), &spec, &layer).as_deref(),
            expected
        );
    }

    /// POD-TERMINATION-GRACE: a process delaying its shutdown by 12 s gets them within a 30 s
    /// grace period on Linux and on containerd on Windows (WI26 "requires containerD"), 5 s on
    /// Docker on Windows (W14), and never more than the grace period — seconds of the cluster's
    /// clock, `timing.scale` real seconds each.
    #[rstest]
    #[case::linux("linux", "containerd://1.7.22", 12, 30, 12)]
    #[case::windows_containerd("windows", "containerd://1.7.20", 12, 30, 12)]
    #[case::windows_docker("windows", "docker://18.9.1", 12, 30, 5)]
    #[case::cut_by_grace("linux", "containerd://1.7.22", 12, 3, 3)]
    #[case::short("windows", "docker://18.9.1", 2, 30, 2)]
    fn a_delayed_shutdown_lasts_as_long_as_the_runtime_waits(
        #[case] os: &str,
        #[case] runtime: &str,
        #[case] delay: u64,
        #[case] grace: i64,
        #[case] expected: u64,
        #[values(1.0, 0.1)] scale: f64,
    ) {
        let mut profile = node(os, runtime);
        profile.timing.scale = scale;
        assert_eq!(
            stop_wait(&profile, delay, grace),
            Duration::from_secs(expected).mul_f64(scale)
        );
    }

    #[rstest]
    #[case::netexec(json!({"args": ["netexec", "--http-port=8080", "--delay-shutdown=12"]}), Some(12))]
    #[case::separate(json!({"command": ["/agnhost"], "args": ["net", "--delay-shutdown", "7"]}), Some(7))]
    #[case::none(json!({"args": ["netexec", "--http-port=8080"]}), None)]
    #[case::not_agnhost(json!({"command": ["sleep", "--delay-shutdown=12"]}), None)]
    fn agnhost_servers_delay_their_shutdown(#[case] container: Value, #[case] expected: Option<u64>) {
        assert_eq!(shutdown_delay(&container), expected);
    }

    /// Only the last 4 KiB of a longer message are reported.
    #[test]
    fn a_long_termination_message_is_cut_to_its_last_4_kib() {
        let data = format!("{}end", "x".repeat(5000));
        let layer = vec![("/dev/termination-log".to_string(), data.into_bytes())];
        let spec = json!({"name": "c", "terminationMessagePath": "/dev/termination-log"});
        let got = termination_message(&node("linux", "containerd://1.7.22"), &spec, &layer).expect("a message");
        assert_eq!(got.len(), MAX_TERMINATION_MESSAGE);
        assert!(got.ends_with("end"));
    }

    #[rstest]
    #[case::plain(json!({"containers": [{"name": "app", "image": "a"}]}), &[("app", false, "ContainerCreating")])]
    #[case::two(
        json!({"containers": [{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]}),
        &[("a", false, "ContainerCreating"), ("b", false, "ContainerCreating")]
    )]
    #[case::behind_init(
        json!({"initContainers": [{"name": "setup", "image": "s"}], "containers": [{"name": "app", "image": "a"}]}),
        &[("setup", true, "PodInitializing"), ("app", false, "PodInitializing")]
    )]
    #[case::no_spec(json!(null), &[])]
    fn containers_wait_for_a_sandbox(#[case] spec: Value, #[case] expected: &[(&str, bool, &str)]) {
        let pod = json!({"metadata": {"name": "p"}, "spec": spec});
        let got: Vec<(String, bool, String)> = waiting_containers(&pod)
            .iter()
            .map(|c| {
                (
                    c.plan.name.clone(),
                    c.init,
                    json::str(&c.state, "/waiting/reason").to_string(),
                )
            })
            .collect();
        let expected: Vec<(String, bool, String)> = expected
            .iter()
            .map(|(n, i, r)| (n.to_string(), *i, r.to_string()))
            .collect();
        assert_eq!(got, expected);
        assert!(
            waiting_containers(&pod)
                .iter()
                .all(|c| !c.ready && !c.started && c.container_id.is_empty())
        );
    }
}
