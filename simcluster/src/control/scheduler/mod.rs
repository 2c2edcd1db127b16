//! The scheduler: filters nodes as the default plugins do (unschedulable, taints and
//! tolerations, nodeSelector and required node affinity, host ports, resource fit against
//! allocatable), scores the rest (least allocated), binds, and reports unschedulable pods with
//! the upstream `FailedScheduling` message. Like upstream it ignores `spec.os`.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::control::events::{self, Kind, Source};
use crate::store::api_error::ApiError;
use crate::store::resources;
use crate::store::{EventType, Obj, Part, Store, timestamp};
use crate::vocab::json;
use crate::vocab::quantity::Quantity;

/// A taint as the filter sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

/// What the scheduler knows of a node.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub name: String,
    pub labels: Map<String, Value>,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    pub cpu: Quantity,
    pub memory: Quantity,
    pub pods: i128,
    /// Allocatable of every other resource the node advertises (ephemeral-storage,
    /// `hugepages-<size>`, extended resources such as `example.com/dongle`).
    pub scalar: BTreeMap<String, Quantity>,
}

/// Resources the fit filter counts apart from the scalar ones.
const BASIC_RESOURCES: [&str; 3] = ["cpu", "memory", "pods"];

impl NodeInfo {
    pub fn from_node(node: &Value) -> Self {
        let alloc = |k: &str| {
            node.pointer(&format!("/status/allocatable/{k}"))
                .and_then(Quantity::from_json)
                .unwrap_or_default()
        };
        Self {
            name: node
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            labels: node
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            taints: node
                .pointer("/spec/taints")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|t| Taint {
                    key: json::str(t, "/key").into(),
                    value: json::str(t, "/value").into(),
                    effect: json::str(t, "/effect").into(),
                })
                .collect(),
            unschedulable: node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true),
            cpu: alloc("cpu"),
            memory: alloc("memory"),
            pods: alloc("pods").value(),
            scalar: node
                .pointer("/status/allocatable")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter(|(k, _)| !BASIC_RESOURCES.contains(&k.as_str()))
                .filter_map(|(k, v)| Some((k.clone(), Quantity::from_json(v)?)))
                .collect(),
        }
    }
}

/// A pod toleration, parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toleration {
    pub key: String,
    pub exists: bool,
    pub value: String,
    pub effect: String,
}

impl Toleration {
    pub fn from_json(t: &Value) -> Self {
        Self {
            key: json::str(t, "/key").into(),
            exists: json::str(t, "/operator") == "Exists",
            value: json::str(t, "/value").into(),
            effect: json::str(t, "/effect").into(),
        }
    }

    fn tolerates(&self, taint: &Taint) -> bool {
        if !self.effect.is_empty() && self.effect != taint.effect {
            return false;
        }
        if self.exists {
            self.key.is_empty() || self.key == taint.key
        } else {
            self.key == taint.key && self.value == taint.value
        }
    }
}

/// What a pod asks of a node.
#[derive(Debug, Clone, Default)]
pub struct PodNeeds {
    pub cpu: Quantity,
    pub memory: Quantity,
    /// Requests of every other resource (ephemeral-storage, hugepages-*, extended resources).
    pub scalar: BTreeMap<String, Quantity>,
    pub node_selector: Vec<(String, String)>,
    pub affinity_terms: Vec<Value>,
    pub tolerations: Vec<Toleration>,
    /// (protocol, hostIP, hostPort)
    pub host_ports: Vec<(String, String, i64)>,
}

fn sum_requests(containers: Option<&Value>, key: &str) -> (Quantity, Quantity) {
    let mut total = Quantity::default();
    let mut max = Quantity::default();
    for c in containers.and_then(Value::as_array).into_iter().flatten() {
        // Resource names may hold a `/` (extended resources), so no JSON pointer here.
        let at = |part: &str| c.get("resources").and_then(|r| r.get(part)).and_then(|m| m.get(key));
        let q = at("requests")
            .or_else(|| at("limits"))
            .and_then(Quantity::from_json)
            .unwrap_or_default();
        total = total + q;
        max = max.max(q);
    }
    (total, max)
}

impl PodNeeds {
    pub fn from_pod(pod: &Value) -> Self {
        let spec = pod.get("spec").cloned().unwrap_or(Value::Null);
        let request = |key: &str| {
            let (sum, _) = sum_requests(spec.get("containers"), key);
            let (_, init_max) = sum_requests(spec.get("initContainers"), key);
            let overhead = spec
                .get("overhead")
                .and_then(|o| o.get(key))
                .and_then(Quantity::from_json)
                .unwrap_or_default();
            sum.max(init_max) + overhead
        };
        let host_ports = spec
            .get("containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("ports").and_then(Value::as_array))
            .flatten()
            .filter_map(|p| {
                let port = p.get("hostPort").and_then(Value::as_i64).filter(|p| *p > 0)?;
                let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP").to_string();
                let ip = p.get("hostIP").and_then(Value::as_str).unwrap_or("0.0.0.0").to_string();
                Some((proto, ip, port))
            })
            .collect();
        let mut names: Vec<String> = Vec::new();
        for list in ["containers", "initContainers"] {
            for c in spec.get(list).and_then(Value::as_array).into_iter().flatten() {
                for part in ["requests", "limits"] {
                    for key in c
                        .pointer(&format!("/resources/{part}"))
                        .and_then(Value::as_object)
                        .into_iter()
                        .flat_map(|m| m.keys())
                    {
                        if !BASIC_RESOURCES.contains(&key.as_str()) && !names.contains(key) {
                            names.push(key.clone());
                        }
                    }
                }
            }
        }
        let scalar = names
            .into_iter()
            .map(|k| {
                let q = request(&k);
                (k, q)
            })
            .filter(|(_, q)| q.milli() > 0)
            .collect();
        Self {
            cpu: request("cpu"),
            memory: request("memory"),
            scalar,
            node_selector: spec
                .get("nodeSelector")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect(),
            affinity_terms: spec
                .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            tolerations: spec
                .get("tolerations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(Toleration::from_json)
                .collect(),
            host_ports,
        }
    }
}

/// What is already placed on a node.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub cpu: Quantity,
    pub memory: Quantity,
    pub pods: i128,
    pub host_ports: Vec<(String, String, i64)>,
    pub scalar: BTreeMap<String, Quantity>,
}

impl Usage {
    pub fn add(&mut self, needs: &PodNeeds) {
        self.cpu = self.cpu + needs.cpu;
        self.memory = self.memory + needs.memory;
        for (k, q) in &needs.scalar {
            let used = self.scalar.entry(k.clone()).or_default();
            *used = *used + *q;
        }
        self.pods += 1;
        self.host_ports.extend(needs.host_ports.iter().cloned());
    }
}

/// Why a node does not fit (upstream wording).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Misfit {
    Unschedulable,
    Taint(String, String),
    Affinity,
    Ports,
    /// Not enough of a resource: `cpu`, `memory`, `ephemeral-storage`, `hugepages-2Mi`, an
    /// extended resource (a node that does not advertise a resource has none of it).
    Insufficient(String),
    TooManyPods,
}

impl Misfit {
    pub fn message(&self) -> String {
        match self {
            Self::Unschedulable => "node(s) were unschedulable".into(),
            Self::Taint(k, v) => format!("node(s) had untolerated taint {{{k}: {v}}}"),
            Self::Affinity => "node(s) didn't match Pod's node affinity/selector".into(),
            Self::Ports => "node(s) didn't have free ports for the requested pod ports".into(),
            Self::Insufficient(r) => format!("Insufficient {r}"),
            Self::TooManyPods => "Too many pods".into(),
        }
    }

    /// Whether evicting lower-priority pods could help (only for resources and ports).
    fn preemption_could_help(&self) -> bool {
        matches!(self, Self::Insufficient(_) | Self::TooManyPods | Self::Ports)
    }
}

fn tolerates(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| t.tolerates(taint))
}

fn expression_matches(expr: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = expr
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let number = |s: &str| s.parse::<i64>().ok();
    match json::str(expr, "/operator") {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a > b),
        "Lt" => matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a < b),
        _ => false,
    }
}

fn term_matches(term: &Value, node: &NodeInfo) -> bool {
    let exprs = term.get("matchExpressions").and_then(Value::as_array);
    let fields = term.get("matchFields").and_then(Value::as_array);
    if exprs.is_none_or(Vec::is_empty) && fields.is_none_or(Vec::is_empty) {
        return false;
    }
    exprs.into_iter().flatten().all(|e| {
        let key = json::str(e, "/key");
        expression_matches(e, node.labels.get(key).and_then(Value::as_str))
    }) && fields.into_iter().flatten().all(|e| {
        let value = (json::str(e, "/key") == "metadata.name").then_some(node.name.as_str());
        expression_matches(e, value)
    })
}

/// The first reasons a node does not fit the pod (empty: it fits), in plugin order.
pub fn misfits(needs: &PodNeeds, node: &NodeInfo, usage: &Usage) -> Vec<Misfit> {
    if node.unschedulable
        && !needs
            .tolerations
            .iter()
            .any(|t| t.key == "node.kubernetes.io/unschedulable")
    {
        return vec![Misfit::Unschedulable];
    }
    if let Some(t) = node
        .taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| !tolerates(&needs.tolerations, t))
    {
        return vec![Misfit::Taint(t.key.clone(), t.value.clone())];
    }
    let selector_ok = needs
        .node_selector
        .iter()
        .all(|(k, v)| node.labels.get(k).and_then(Value::as_str) == Some(v.as_str()));
    let affinity_ok = needs.affinity_terms.is_empty() || needs.affinity_terms.iter().any(|t| term_matches(t, node));
    if !selector_ok || !affinity_ok {
        return vec![Misfit::Affinity];
    }
    let port_clash = needs.host_ports.iter().any(|(proto, ip, port)| {
        usage
            .host_ports
            .iter()
            .any(|(p2, ip2, port2)| p2 == proto && port2 == port && (ip == ip2 || ip == "0.0.0.0" || ip2 == "0.0.0.0"))
    });
    if port_clash {
        return vec![Misfit::Ports];
    }
    let mut out = Vec::new();
    if usage.pods + 1 > node.pods {
        out.push(Misfit::TooManyPods);
    }
    if needs.cpu.milli() > 0 && usage.cpu + needs.cpu > node.cpu {
        out.push(Misfit::Insufficient("cpu".into()));
    }
    if needs.memory.milli() > 0 && usage.memory + needs.memory > node.memory {
        out.push(Misfit::Insufficient("memory".into()));
    }
    // noderesources Fit: ephemeral storage and scalar resources (hugepages-*, extended
    // resources) against the node's allocatable, which is zero where the node lists none
    // (MEM-HUGEPAGES: Windows nodes advertise no huge pages).
    for (name, need) in &needs.scalar {
        let used = usage.scalar.get(name).copied().unwrap_or_default();
        let cap = node.scalar.get(name).copied().unwrap_or_default();
        if used + *need > cap {
            out.push(Misfit::Insufficient(name.clone()));
        }
    }
    out
}

/// The `FailedScheduling` message for a pod no node fits.
pub fn failure_message(total: usize, reasons: &[Vec<Misfit>]) -> String {
    let mut histogram: BTreeMap<String, usize> = BTreeMap::new();
    let (mut helpful, mut unhelpful) = (0usize, 0usize);
    for node_reasons in reasons {
        for r in node_reasons {
            *histogram.entry(r.message()).or_default() += 1;
        }
        if node_reasons.iter().any(Misfit::preemption_could_help) {
            helpful += 1;
        } else {
            unhelpful += 1;
        }
    }
    let mut parts: Vec<String> = histogram.iter().map(|(m, n)| format!("{n} {m}")).collect();
    parts.sort();
    let mut preemption = Vec::new();
    if helpful > 0 {
        preemption.push(format!("{helpful} No preemption victims found for incoming pod"));
    }
    if unhelpful > 0 {
        preemption.push(format!("{unhelpful} Preemption is not helpful for scheduling"));
    }
    format!(
        "0/{total} nodes are available: {}. preemption: 0/{total} nodes are available: {}.",
        parts.join(", "),
        preemption.join(", ")
    )
}

/// How many feasible nodes to find before scoring, as upstream's adaptive
/// percentageOfNodesToScore does (50 % − nodes/125, at least 5 %, at least 100 nodes).
pub fn feasible_nodes_to_find(total: usize) -> usize {
    if total <= 100 {
        return total;
    }
    let percent = (50i64 - (total as i64) / 125).max(5) as usize;
    (total * percent / 100).max(100)
}

/// The node a pod's required affinity pins it to by name (DaemonSet pods), if any.
fn pinned_node(needs: &PodNeeds) -> Option<&str> {
    match needs.affinity_terms.as_slice() {
        [term] => {
            let fields = term.get("matchFields").and_then(Value::as_array)?;
            match fields.as_slice() {
                [f] if json::str(f, "/key") == "metadata.name" && json::str(f, "/operator") == "In" => {
                    match f.get("values").and_then(Value::as_array).map(Vec::as_slice) {
                        Some([v]) => v.as_str(),
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)] // used by the tests only
/// Picks the best node: least allocated (memory and cpu shares), then fewest pods, then name.
/// Nodes are visited from `start` round-robin and the search stops after
/// [`feasible_nodes_to_find`] feasible ones; the failure message covers every node.
pub fn choose<'a>(
    needs: &PodNeeds,
    nodes: &'a [NodeInfo],
    usage: &HashMap<String, Usage>,
) -> Result<&'a NodeInfo, String> {
    let mut labels = LabelIndex::default();
    choose_from(needs, nodes, usage, 0, &mut labels)
}

/// The nodes (by index) with each value of a label, made per label as pods ask for it: a pod
/// whose `nodeSelector` names a node (`kubernetes.io/hostname`, as every fixture of a run) fits
/// only the nodes with that label's value, and a search over all 5,000 nodes for each of
/// 10,000 such pods was most of a run's deploy time. Good for one pass (one list of nodes).
#[derive(Default)]
pub struct LabelIndex(HashMap<String, HashMap<String, Vec<usize>>>);

impl LabelIndex {
    /// The indexes, ascending, of the nodes whose labels have the first of `selector`'s pairs
    /// (every other node misfits it); None for an empty selector.
    fn candidates<N: Borrow<NodeInfo>>(&mut self, selector: &[(String, String)], nodes: &[N]) -> Option<&[usize]> {
        let (key, value) = selector.first()?;
        let by_value = self.0.entry(key.clone()).or_insert_with(|| {
            let mut by_value: HashMap<String, Vec<usize>> = HashMap::new();
            for (i, n) in nodes.iter().enumerate() {
                if let Some(v) = n.borrow().labels.get(key).and_then(Value::as_str) {
                    by_value.entry(v.to_string()).or_default().push(i);
                }
            }
            by_value
        });
        Some(by_value.get(value).map_or(&[], Vec::as_slice))
    }
}

/// Picks the best node for `needs` among `nodes` (`labels` indexes them), visiting them
/// round-robin from `start` (see [`choose`]).
pub fn choose_from<'a, N: Borrow<NodeInfo>>(
    needs: &PodNeeds,
    nodes: &'a [N],
    usage: &HashMap<String, Usage>,
    start: usize,
    labels: &mut LabelIndex,
) -> Result<&'a NodeInfo, String> {
    let empty = Usage::default();
    if let Some(target) = pinned_node(needs)
        && let Some(node) = nodes.iter().map(Borrow::borrow).find(|n| n.name == target)
        && misfits(needs, node, usage.get(&node.name).unwrap_or(&empty)).is_empty()
    {
        return Ok(node);
    }
    let wanted = feasible_nodes_to_find(nodes.len());
    let mut best: Option<(f64, i128, &NodeInfo)> = None;
    let mut feasible = 0usize;
    let n = nodes.len();
    // The same visit as over every node from `start`, skipping only nodes the selector rules out.
    let visit: Box<dyn Iterator<Item = usize>> = match labels.candidates(&needs.node_selector, nodes) {
        Some(fit) => {
            let split = fit.partition_point(|&i| i < start);
            Box::new(fit[split..].iter().chain(&fit[..split]).copied())
        }
        None => Box::new((0..n).map(|offset| (start + offset) % n)),
    };
    for at in visit {
        let node: &NodeInfo = nodes[at].borrow();
        let used = usage.get(&node.name).unwrap_or(&empty);
        if !misfits(needs, node, used).is_empty() {
            continue;
        }
        feasible += 1;
        let share = |used: Quantity, add: Quantity, cap: Quantity| {
            if cap.milli() <= 0 {
                1.0
            } else {
                (used + add).milli() as f64 / cap.milli() as f64
            }
        };
        let score = share(used.cpu, needs.cpu, node.cpu) + share(used.memory, needs.memory, node.memory);
        let better = match &best {
            None => true,
            Some((s, pods, b)) => (score, used.pods, node.name.as_str()) < (*s, *pods, b.name.as_str()),
        };
        if better {
            best = Some((score, used.pods, node));
        }
        if feasible >= wanted {
            break;
        }
    }
    if let Some((_, _, node)) = best {
        return Ok(node);
    }
    let reasons: Vec<Vec<Misfit>> = nodes
        .iter()
        .map(Borrow::borrow)
        .map(|node| misfits(needs, node, usage.get(&node.name).unwrap_or(&empty)))
        .collect();
    Err(failure_message(nodes.len(), &reasons))
}

fn is_active(pod: &Value) -> bool {
    !matches!(json::str(pod, "/status/phase"), "Succeeded" | "Failed")
}

/// Whether a pod's change can let a pending pod be placed: a pod waiting to be scheduled (new or
/// changed), one deleted, or a bound one that finished (its requests are free again). A bound pod
/// that is added (a DaemonSet's, placed by its controller), bound by a pass or changes its status
/// only takes room: the pass that bound it knew, and it places no pending pod. At 1,000 nodes
/// those are most of the pod changes, and each pass reads every pod.
fn may_unblock(kind: EventType, pod: &Value, previous: Option<&Value>) -> bool {
    if kind == EventType::Deleted || json::str(pod, "/spec/nodeName").is_empty() {
        return true;
    }
    kind == EventType::Modified && !is_active(pod) && previous.is_some_and(is_active)
}

/// Runs the scheduler until the store closes.
pub async fn run(store: Arc<Store>) {
    let mut feed = store.subscribe();
    let mut last_failure: HashMap<String, (Instant, String)> = HashMap::new();
    let mut needs_cache: HashMap<String, PodNeeds> = HashMap::new();
    let mut nodes_cache = NodeCache::default();
    let mut summaries: HashMap<String, PodSummary> = HashMap::new();
    let mut retry = tokio::time::interval(Duration::from_secs(1));
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Whether the last pass left pods pending: only then is a pass retried without a change (a
    // pass reads every pod, 20,000 at 5,000 nodes; an idle cluster needs none).
    let mut waiting = true;
    let mut pause = BATCH;
    loop {
        // Wake on any pod or node change (or a periodic retry), then batch briefly.
        tokio::select! {
            event = feed.recv() => match event {
                Ok(e) if e.resource.group.is_empty() && e.resource.plural == "nodes" => {}
                Ok(e) if e.resource.group.is_empty() && e.resource.plural == "pods" => {
                    if !may_unblock(e.kind, e.object.value(), e.previous.as_ref().map(|p| p.value())) {
                        continue;
                    }
                }
                Ok(_) => continue,
                Err(crate::store::RecvError::Lagged(_)) => {}
            },
            _ = retry.tick(), if waiting => {}
        }
        tokio::time::sleep(pause).await;
        while feed.try_recv().is_ok() {}
        let started = Instant::now();
        waiting = schedule_pending(
            &store,
            &mut last_failure,
            &mut needs_cache,
            &mut nodes_cache,
            &mut summaries,
        );
        pause = batch_after(started.elapsed());
    }
}

/// How long the scheduler batches changes before its next pass, after a pass that took `pass`:
/// 5 ms, or three times the pass, up to 100 ms. A pass reads every pod (20,000 at 5,000 nodes:
/// milliseconds); a run deploying thousands of pods would otherwise start one after each
/// batch of creations and keep a core busy, while three pass-lengths let each pass place a
/// larger batch, at most a quarter of the time spent passing. A small cluster keeps its 5 ms.
fn batch_after(pass: Duration) -> Duration {
    pass.saturating_mul(3).clamp(BATCH, MAX_BATCH)
}

/// The shortest wait for changes to batch before a pass.
const BATCH: Duration = Duration::from_millis(5);
/// The longest: on a large cluster a new pod waits at most this long for its pass.
const MAX_BATCH: Duration = Duration::from_millis(100);

/// What the scheduler knows of each node, kept between passes and rebuilt only for a node whose
/// object changed (its resourceVersion): a pass at 5,000 nodes reads the nodes, it does not
/// reparse them.
#[derive(Default)]
pub struct NodeCache(HashMap<String, (u64, NodeInfo)>);

impl NodeCache {
    /// The nodes of `objects`, in their order, parsed where they changed since the last pass.
    fn infos<'a>(&'a mut self, objects: &'a [Obj]) -> Vec<&'a NodeInfo> {
        self.refreshed(objects).collect()
    }

    /// The nodes of `objects`, in their order, as the cache holds them once brought up to date
    /// (parsed where they changed; forgotten where they are gone).
    pub(crate) fn refreshed<'a>(&'a mut self, objects: &'a [Obj]) -> impl Iterator<Item = &'a NodeInfo> + 'a {
        let mut seen = HashSet::with_capacity(objects.len());
        for n in objects {
            let version = n.resource_version();
            match self.0.get_mut(n.uid()) {
                Some(entry) if entry.0 == version => {}
                Some(entry) => *entry = (version, NodeInfo::from_node(n.value())),
                None => {
                    self.0
                        .insert(n.uid().to_string(), (version, NodeInfo::from_node(n.value())));
                }
            }
            seen.insert(n.uid());
        }
        if seen.len() != self.0.len() {
            self.0.retain(|uid, _| seen.contains(uid.as_str()));
        }
        let cache = &self.0;
        objects
            .iter()
            .filter_map(move |n| cache.get(n.uid()).map(|(_, info)| info))
    }
}

/// What a scheduling pass reads of a pod, kept per pod while its resourceVersion stays: a pass
/// looks at every pod (20,000 at 5,000 nodes), and reading each one's JSON kept every pod of the
/// cluster decoded in memory while any pod waited.
pub struct PodSummary {
    version: u64,
    /// The node it is bound to (empty: not bound).
    node: String,
    /// Not Succeeded or Failed: it takes room on its node, or waits for one.
    active: bool,
    /// This scheduler's to place (`schedulerName` empty or `default-scheduler`).
    ours: bool,
    /// `metadata.creationTimestamp`: pending pods are placed oldest first.
    created: String,
}

impl PodSummary {
    fn of(pod: &Obj) -> PodSummary {
        let v = pod.value();
        PodSummary {
            version: pod.resource_version(),
            node: json::str(v, "/spec/nodeName").to_string(),
            active: is_active(v),
            ours: matches!(json::str(v, "/spec/schedulerName"), "" | "default-scheduler"),
            created: json::str(v, "/metadata/creationTimestamp").to_string(),
        }
    }
}

/// One scheduling pass over every pending pod. `needs_cache` keeps each bound pod's parsed
/// requests between passes (a pod's resources do not change once it is bound), `nodes_cache`
/// each node's parsed object. Returns whether pods are left pending.
pub fn schedule_pending(
    store: &Store,
    last_failure: &mut HashMap<String, (Instant, String)>,
    needs_cache: &mut HashMap<String, PodNeeds>,
    nodes_cache: &mut NodeCache,
    summaries: &mut HashMap<String, PodSummary>,
) -> bool {
    let pods_rt = resources::core("pods");
    let (pods, _) = store.list(pods_rt, None);
    let mut usage: HashMap<String, Usage> = HashMap::new();
    let mut pending: Vec<(&str, &Obj)> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::with_capacity(pods.len());
    let mut usage_by: HashMap<&str, Usage> = HashMap::new();
    for pod in &pods {
        if summaries
            .get(pod.uid())
            .is_none_or(|s| s.version != pod.resource_version())
        {
            summaries.insert(pod.uid().to_string(), PodSummary::of(pod));
        }
        seen.insert(pod.uid());
    }
    if summaries.len() > seen.len() {
        summaries.retain(|uid, _| seen.contains(uid.as_str()));
    }
    for pod in &pods {
        let Some(summary) = summaries.get(pod.uid()) else {
            continue;
        };
        if !summary.active {
            continue;
        }
        if !summary.node.is_empty() {
            // Looked up before inserting: a pass over 20,000 bound pods allocates nothing.
            if !needs_cache.contains_key(pod.uid()) {
                needs_cache.insert(pod.uid().to_string(), PodNeeds::from_pod(pod.value()));
            }
            if let Some(needs) = needs_cache.get(pod.uid()) {
                usage_by.entry(summary.node.as_str()).or_default().add(needs);
            }
        } else if !pod.is_terminating() && summary.ours {
            pending.push((summary.created.as_str(), pod));
        }
    }
    pending.sort_by_key(|(created, _)| *created);
    if needs_cache.len() > seen.len() {
        needs_cache.retain(|uid, _| seen.contains(uid.as_str()));
    }
    if pending.is_empty() {
        last_failure.clear();
        return false;
    }
    let keep: HashSet<&str> = pending.iter().map(|(_, p)| p.uid()).collect();
    last_failure.retain(|uid, _| keep.contains(uid.as_str()));
    usage.extend(usage_by.into_iter().map(|(node, u)| (node.to_string(), u)));
    let (nodes, _) = store.list(resources::core("nodes"), None);
    let nodes = nodes_cache.infos(&nodes);
    let mut start = 0usize;
    let mut left = false;
    let mut labels = LabelIndex::default();
    for (_, pod) in pending {
        let needs = PodNeeds::from_pod(pod.value());
        start = start.wrapping_add(1);
        match choose_from(&needs, &nodes, &usage, start % nodes.len().max(1), &mut labels) {
            Ok(node) => {
                if bind(store, pod, &node.name).is_ok() {
                    usage.entry(node.name.clone()).or_default().add(&needs);
                    last_failure.remove(pod.uid());
                } else {
                    left = true;
                }
            }
            Err(message) => {
                left = true;
                let due = last_failure
                    .get(pod.uid())
                    .is_none_or(|(at, m)| *m != message || at.elapsed() >= Duration::from_secs(5));
                if due {
                    report_unschedulable(store, pod, &message);
                    last_failure.insert(pod.uid().to_string(), (Instant::now(), message));
                }
            }
        }
    }
    left
}

fn set_condition(pod: &mut Value, condition: Value) {
    let ty = condition.get("type").cloned();
    let mut conditions: Vec<Value> = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.get("type") != ty.as_ref())
        .collect();
    conditions.push(condition);
    if !pod.get("status").is_some_and(Value::is_object) {
        pod["status"] = json!({});
    }
    pod["status"]["conditions"] = json!(conditions);
}

fn bind(store: &Store, pod: &Obj, node: &str) -> Result<(), ApiError> {
    let pods = resources::core("pods");
    store.modify(pods, pod.namespace(), pod.name(), Part::Main, |p| {
        if !json::str(p, "/spec/nodeName").is_empty() || p.pointer("/metadata/deletionTimestamp").is_some() {
            return Err(ApiError::Conflict {
                group: String::new(),
                resource: "pods".into(),
                name: pod.name().into(),
            });
        }
        p["spec"]["nodeName"] = json!(node);
        Ok(())
    })?;
    let now = timestamp(chrono::Utc::now());
    let bound = store.modify(pods, pod.namespace(), pod.name(), Part::Status, |p| {
        set_condition(
            p,
            json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}),
        );
        Ok(())
    })?;
    events::emit(
        store,
        bound.value(),
        Kind::Normal,
        "Scheduled",
        &format!("Successfully assigned {}/{} to {node}", pod.namespace(), pod.name()),
        &Source::scheduler(),
    );
    Ok(())
}

fn report_unschedulable(store: &Store, pod: &Obj, message: &str) {
    let pods = resources::core("pods");
    let now = timestamp(chrono::Utc::now());
    let updated = store.modify(pods, pod.namespace(), pod.name(), Part::Status, |p| {
        set_condition(
            p,
            json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                   "lastProbeTime": null, "lastTransitionTime": now}),
        );
        Ok(())
    });
    if let Ok(p) = updated {
        events::emit(
            store,
            p.value(),
            Kind::Warning,
            "FailedScheduling",
            message,
            &Source::scheduler(),
        );
    }
}

#[cfg(test)]
mod tests;
