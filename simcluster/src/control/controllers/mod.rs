//! The controllers a user relies on: Deployment → ReplicaSet → Pods, DaemonSet (one pod per
//! eligible node), Job (in `job`), the default ServiceAccount of each namespace, and garbage
//! collection of objects whose owner was deleted. Event-driven with a periodic resync; each reconcile reads
//! the store and converges one object.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::control::events::{self, Kind, Source};
use crate::control::scheduler::{Misfit, NodeCache, PodNeeds, Toleration, Usage, misfits};
use crate::store::admission;
use crate::store::api_error::ApiError;
use crate::store::per_version::PerVersion;
use crate::store::resources::{self, ResourceType};
use crate::store::{DeleteOptions, EventType, Obj, Part, Store};
use crate::vocab::json;

mod cronjob;
mod job;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    ServiceAccount(String),
    Deployment(String, String),
    ReplicaSet(String, String),
    DaemonSet(String, String),
    Job(String, String),
    CronJob(String, String),
    Service(String, String),
}

fn rt(group: &str, plural: &str) -> &'static ResourceType {
    resources::named(group, plural)
}

fn owner_of(v: &Value, kind: &str) -> Option<(String, String)> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|o| {
            o.get("kind").and_then(Value::as_str) == Some(kind)
                && o.get("controller").and_then(Value::as_bool) == Some(true)
        })
        .map(|o| (json::str(o, "/name").to_string(), json::str(o, "/uid").to_string()))
}

fn owner_uids(v: &Value) -> Vec<String> {
    crate::vocab::json::get(v, "/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| o.get("uid").and_then(Value::as_str).map(str::to_string))
        .collect()
}

fn owned_by(v: &Value, uid: &str) -> bool {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|o| o.get("uid").and_then(Value::as_str) == Some(uid)))
}

fn owner_ref(owner: &Obj, kind: &str, api_version: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": owner.name(), "uid": owner.uid(),
           "controller": true, "blockOwnerDeletion": true})
}

fn is_active(pod: &Obj) -> bool {
    !pod.is_terminating() && !matches!(json::str(pod.value(), "/status/phase"), "Succeeded" | "Failed")
}

fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| json::str(c, "/type") == "Ready" && json::str(c, "/status") == "True")
        })
}

/// What a DaemonSet's sync reads of each pod it owns (the node it runs on or is aimed at,
/// whether it finished, whether it is ready), kept per version: a system DaemonSet owns a pod
/// per node, and reading 5,000 pods' JSON at each sync kept them all decoded in memory.
#[derive(Clone)]
struct DaemonPod {
    node: String,
    finished: bool,
    ready: bool,
}

impl DaemonPod {
    /// `pod`'s state (`node` reads the node it is for).
    fn read(pod: &Obj, node: impl Fn(&Obj) -> String) -> DaemonPod {
        let v = pod.value();
        DaemonPod {
            node: node(pod),
            finished: matches!(json::str(v, "/status/phase"), "Succeeded" | "Failed"),
            ready: is_ready(v),
        }
    }
}

/// What the endpoints controller reads of each pod (labels, address, readiness, a terminal
/// phase), kept per version: a Service's endpoints are worked out over every pod of its
/// namespace (10,000 in a 5,000-node run's), and reading their JSON each time kept them all
/// decoded in memory.
struct EndpointPod {
    labels: Option<serde_json::Map<String, Value>>,
    ip: String,
    ready: bool,
    terminal: bool,
}

impl EndpointPod {
    fn read(pod: &Obj) -> Arc<EndpointPod> {
        let v = pod.value();
        Arc::new(EndpointPod {
            labels: v.pointer("/metadata/labels").and_then(Value::as_object).cloned(),
            ip: json::str(v, "/status/podIP").to_string(),
            ready: is_ready(v),
            terminal: matches!(json::str(v, "/status/phase"), "Succeeded" | "Failed"),
        })
    }
}

/// What of a pod the endpoints of the Services selecting it are made of: upstream's
/// `podEndpointsChanged` (`staging/src/k8s.io/endpointslice/util/controller_utils.go`: labels,
/// hostname and subdomain, deletion timestamp, readiness, pod IPs) and what [`Controllers::endpoints`]
/// reads besides (the node's name, a terminal phase). Two versions alike in these give the same
/// endpoints, so a pod change alike in them queues no Service.
#[derive(PartialEq)]
struct EndpointFacts<'a> {
    labels: Option<&'a Value>,
    hostname: &'a str,
    subdomain: &'a str,
    terminating: bool,
    ready: bool,
    ip: &'a str,
    ips: Option<&'a Value>,
    node: &'a str,
    terminal: bool,
}

impl<'a> EndpointFacts<'a> {
    fn of(pod: &'a Obj) -> EndpointFacts<'a> {
        let v = pod.value();
        EndpointFacts {
            labels: v.pointer("/metadata/labels"),
            hostname: json::str(v, "/spec/hostname"),
            subdomain: json::str(v, "/spec/subdomain"),
            terminating: pod.is_terminating(),
            ready: is_ready(v),
            ip: json::str(v, "/status/podIP"),
            ips: v.pointer("/status/podIPs"),
            node: json::str(v, "/spec/nodeName"),
            terminal: matches!(json::str(v, "/status/phase"), "Succeeded" | "Failed"),
        }
    }
}

/// `v` with every object's keys sorted and null and zero fields (`false`, `0`, `""`) left out,
/// so that equal templates hash equally however they were encoded: a rollback writes back a
/// template kubectl re-encoded as JSON (Go's `creationTimestamp: null`, zero non-pointer
/// fields omitted), while a protobuf create carried every zero non-pointer field
/// (`stdin: false`, `hostPort: 0`).
fn canonical(v: &Value) -> Value {
    let zero = |v: &Value| v.is_null() || *v == json!(false) || *v == json!(0) || *v == json!("");
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.iter().filter(|(_, v)| !zero(v)).map(|(k, _)| k).collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), canonical(&m[k]))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// A short, stable hash of a pod template (the `pod-template-hash` label).
fn template_hash(template: &Value) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let h = crate::vocab::hash::fnv1a(canonical(template).to_string().as_bytes());
    (0..10)
        .map(|i| ALPHABET[((h >> (i * 6)) % ALPHABET.len() as u64) as usize] as char)
        .collect()
}

/// An owner's pods: pod uid to (namespace, name).
type OwnedPods = HashMap<String, (String, String)>;

struct Controllers {
    store: Arc<Store>,
    /// The names of pods by owner uid, then pod uid; kept current from the change feed.
    pods_by_owner: Option<HashMap<String, OwnedPods>>,
    /// Per ReplicaSet: when it may next replace failed pods (so rejected pods do not pile up at full speed).
    replace_after: HashMap<(String, String), (Instant, u32)>,
    /// Per Job: the failures seen and when it may next create pods.
    job_backoff: HashMap<(String, String), (i64, Instant)>,
    /// The cluster's `major.minor` (which Job conditions exist).
    version: (u32, u32),
    /// The topology's `timing.scale` (the Job back-off).
    scale: f64,
    /// Each node's parsed object, reparsed only where it changed: every DaemonSet checks every
    /// node at each resync (five system DaemonSets at 5,000 nodes parsed 25,000 nodes a turn).
    node_infos: NodeCache,
    /// Pods changed since the last batch (namespace, labels): the Services selecting them get
    /// their endpoints recomputed, matched once per batch against one list of each namespace's
    /// Services.
    changed_pods: HashMap<String, (String, Value)>,
    /// What the DaemonSet controller read of each pod it owns, per version.
    daemon_pods: PerVersion<DaemonPod>,
    /// What the endpoints controller read of each pod, per version.
    endpoint_pods: PerVersion<Arc<EndpointPod>>,
    /// Each DaemonSet's eligible nodes: its resourceVersion and the nodes' latest change when
    /// they were worked out, and the nodes' names.
    eligible: HashMap<String, (u64, u64, Arc<Vec<String>>)>,
    /// Each namespace's Service selectors, kept between batches while no Service changed (the
    /// store's resourceVersion of the latest Service change, and the selectors).
    selectors: (u64, HashMap<String, Selectors>),
}

/// Runs the controllers of a cluster at `version` until the store closes; `scale` multiplies
/// their delays like the topology's `timing.scale`.
pub async fn run(store: Arc<Store>, version: (u32, u32), scale: f64) {
    let mut feed = store.subscribe();
    let mut ctl = Controllers::new(store.clone(), version, scale);
    let mut queue: BTreeSet<Key> = BTreeSet::new();
    ctl.enqueue_all(&mut queue, true);
    let mut resync = tokio::time::interval(Duration::from_secs(2));
    // Endpoints follow pod and Service events; their resync (every Service against every pod of
    // its namespace) is a safety net, so it runs every fifteenth tick, not every tick.
    let mut ticks: u32 = 0;
    loop {
        ctl.drain(&mut queue);
        tokio::select! {
            event = feed.recv() => match event {
                Ok(e) => ctl.on_event(&e, &mut queue),
                Err(crate::store::RecvError::Lagged(_)) => {
                    ctl.pods_by_owner = None;
                    ctl.daemon_pods = PerVersion::default();
                    ctl.endpoint_pods = PerVersion::default();
                    ctl.enqueue_all(&mut queue, true);
                }
            },
            _ = resync.tick() => {
                ticks = ticks.wrapping_add(1);
                ctl.enqueue_all(&mut queue, ticks.is_multiple_of(15));
            }
        }
        // Batch what arrived meanwhile.
        loop {
            match feed.try_recv() {
                Ok(e) => ctl.on_event(&e, &mut queue),
                Err(crate::store::TryRecvError::Lagged(_)) => {
                    ctl.pods_by_owner = None;
                    ctl.daemon_pods = PerVersion::default();
                    ctl.endpoint_pods = PerVersion::default();
                    ctl.enqueue_all(&mut queue, true);
                }
                Err(_) => break,
            }
        }
    }
}

impl Controllers {
    fn new(store: Arc<Store>, version: (u32, u32), scale: f64) -> Controllers {
        Controllers {
            store,
            pods_by_owner: None,
            replace_after: HashMap::new(),
            job_backoff: HashMap::new(),
            version,
            scale,
            changed_pods: HashMap::new(),
            selectors: (0, HashMap::new()),
            node_infos: NodeCache::default(),
            daemon_pods: PerVersion::default(),
            endpoint_pods: PerVersion::default(),
            eligible: HashMap::new(),
        }
    }

    /// Queues every object the controllers own; Services (their endpoints) with `services`.
    fn enqueue_all(&self, queue: &mut BTreeSet<Key>, services: bool) {
        for ns in self.store.list(resources::core("namespaces"), None).0 {
            queue.insert(Key::ServiceAccount(ns.name().to_string()));
        }
        for (plural, make) in [
            ("deployments", Key::Deployment as fn(String, String) -> Key),
            ("replicasets", Key::ReplicaSet),
            ("daemonsets", Key::DaemonSet),
        ] {
            for o in self.store.list(rt("apps", plural), None).0 {
                queue.insert(make(o.namespace().to_string(), o.name().to_string()));
            }
        }
        if services {
            for o in self.store.list(resources::core("services"), None).0 {
                queue.insert(Key::Service(o.namespace().to_string(), o.name().to_string()));
            }
        }
        for o in self.store.list(rt("batch", "jobs"), None).0 {
            queue.insert(Key::Job(o.namespace().to_string(), o.name().to_string()));
        }
        for o in self.store.list(rt("batch", "cronjobs"), None).0 {
            queue.insert(Key::CronJob(o.namespace().to_string(), o.name().to_string()));
        }
    }

    fn on_event(&mut self, e: &crate::store::Event, queue: &mut BTreeSet<Key>) {
        if e.resource.group.is_empty() && e.resource.plural == "pods" {
            self.index_pod(e);
            if e.kind == EventType::Deleted {
                self.daemon_pods.forget(e.object.uid());
                self.endpoint_pods.forget(e.object.uid());
            }
        }
        let v = e.object.value();
        let ns = e.object.namespace().to_string();
        let name = e.object.name().to_string();
        match (e.resource.group, e.resource.plural) {
            ("", "namespaces") if e.kind == EventType::Added => {
                queue.insert(Key::ServiceAccount(name));
            }
            ("", "serviceaccounts") if e.kind == EventType::Deleted => {
                queue.insert(Key::ServiceAccount(ns));
            }
            ("apps", "deployments") => {
                if e.kind == EventType::Deleted {
                    self.collect_garbage(&ns, e.object.uid(), &["replicasets"]);
                } else {
                    queue.insert(Key::Deployment(ns, name));
                }
            }
            ("apps", "replicasets") => {
                if e.kind == EventType::Deleted {
                    self.collect_garbage(&ns, e.object.uid(), &["pods"]);
                } else {
                    queue.insert(Key::ReplicaSet(ns.clone(), name));
                }
                if let Some((owner, _)) = owner_of(v, "Deployment") {
                    queue.insert(Key::Deployment(ns, owner));
                }
            }
            ("apps", "daemonsets") => {
                if e.kind == EventType::Deleted {
                    self.eligible.remove(e.object.uid());
                    self.collect_garbage(&ns, e.object.uid(), &["pods"]);
                } else {
                    queue.insert(Key::DaemonSet(ns, name));
                }
            }
            ("batch", "jobs") => {
                if let Some((owner, _)) = owner_of(v, "CronJob") {
                    queue.insert(Key::CronJob(ns.clone(), owner));
                }
                if e.kind == EventType::Deleted {
                    self.collect_garbage(&ns, e.object.uid(), &["pods"]);
                } else {
                    queue.insert(Key::Job(ns, name));
                }
            }
            ("batch", "cronjobs") => {
                if e.kind == EventType::Deleted {
                    self.collect_garbage(&ns, e.object.uid(), &["jobs"]);
                } else {
                    queue.insert(Key::CronJob(ns, name));
                }
            }
            ("", "services") => {
                queue.insert(Key::Service(ns, name));
            }
            ("", "pods") => {
                // A pod's readiness or address changes the endpoints of the services selecting it
                // (matched in `drain`, once per batch); a change to nothing its endpoints are made
                // of (a container's restart count, a condition's probe time) changes none.
                let previous = e.previous.as_ref().filter(|_| e.kind == EventType::Modified);
                if previous.is_none_or(|p| EndpointFacts::of(p) != EndpointFacts::of(&e.object)) {
                    let labels = |v: &Value| v.pointer("/metadata/labels").cloned().unwrap_or(Value::Null);
                    self.changed_pods
                        .insert(e.object.uid().to_string(), (ns.clone(), labels(v)));
                    // Relabelled: the Services its old labels matched lose it.
                    if let Some(p) = previous
                        && p.value().pointer("/metadata/labels") != v.pointer("/metadata/labels")
                    {
                        self.changed_pods
                            .insert(format!("{}/previous", e.object.uid()), (ns.clone(), labels(p.value())));
                    }
                }
                let pod = e
                    .previous
                    .as_ref()
                    .map_or(v, |p| if e.kind == EventType::Deleted { p.value() } else { v });
                if let Some((owner, _)) = owner_of(pod, "ReplicaSet") {
                    queue.insert(Key::ReplicaSet(ns, owner));
                } else if let Some((owner, _)) = owner_of(pod, "DaemonSet") {
                    queue.insert(Key::DaemonSet(ns, owner));
                } else if let Some((owner, _)) = owner_of(pod, "Job") {
                    queue.insert(Key::Job(ns, owner));
                }
            }
            ("", "nodes")
                if e.kind != EventType::Modified
                    || e.previous.as_ref().is_some_and(|p| {
                        p.value().pointer("/spec") != v.pointer("/spec")
                            || p.value().pointer("/metadata/labels") != v.pointer("/metadata/labels")
                    }) =>
            {
                for o in self.store.list(rt("apps", "daemonsets"), None).0 {
                    queue.insert(Key::DaemonSet(o.namespace().to_string(), o.name().to_string()));
                }
            }
            _ => {}
        }
    }

    /// The pods a controller owns, as the store holds them now. The index keeps their names
    /// only, so that it holds no version (and no decoded value) the store has let go of.
    fn owned_pods(&mut self, owner_uid: &str) -> Vec<Obj> {
        let store = self.store.clone();
        let index = self.pods_by_owner.get_or_insert_with(|| {
            let mut index: HashMap<String, OwnedPods> = HashMap::new();
            for pod in store.list(resources::core("pods"), None).0 {
                for uid in owner_uids(pod.value()) {
                    index.entry(uid).or_default().insert(
                        pod.uid().to_string(),
                        (pod.namespace().to_string(), pod.name().to_string()),
                    );
                }
            }
            index
        });
        let Some(pods) = index.get(owner_uid) else {
            return Vec::new();
        };
        let mut owned = store.get_each(resources::core("pods"), pods.values());
        owned.retain(|p| pods.contains_key(p.uid()));
        owned
    }

    /// Keeps the owner index in step with one pod change.
    fn index_pod(&mut self, e: &crate::store::Event) {
        let Some(index) = self.pods_by_owner.as_mut() else {
            return;
        };
        let uid = e.object.uid().to_string();
        for owner in owner_uids(e.object.value()) {
            let pods = index.entry(owner).or_default();
            if e.kind == EventType::Deleted {
                pods.remove(&uid);
            } else {
                pods.insert(
                    uid.clone(),
                    (e.object.namespace().to_string(), e.object.name().to_string()),
                );
            }
        }
    }

    fn drain(&mut self, queue: &mut BTreeSet<Key>) {
        // Each namespace's pods, listed once per batch: every Service of a namespace selects
        // among the same pods (a namespace of a thousand Services listed its pods a thousand times).
        let mut pods: HashMap<String, Vec<Obj>> = HashMap::new();
        let services_at = self.store.changed_at(&[resources::core("services")]);
        if self.selectors.0 != services_at {
            self.selectors = (services_at, HashMap::new());
        }
        let services = &mut self.selectors.1;
        for (ns, labels) in std::mem::take(&mut self.changed_pods).into_values() {
            let selectors = services
                .entry(ns.clone())
                .or_insert_with(|| Selectors::of(&self.store.list(resources::core("services"), Some(&ns)).0));
            if let Some(labels) = labels.as_object() {
                for name in selectors.selecting(labels) {
                    queue.insert(Key::Service(ns.clone(), name.to_string()));
                }
            }
        }
        while let Some(key) = queue.pop_first() {
            let result = match &key {
                Key::ServiceAccount(ns) => self.service_account(ns),
                Key::Deployment(ns, name) => self.deployment(ns, name),
                Key::ReplicaSet(ns, name) => self.replica_set(ns, name),
                Key::DaemonSet(ns, name) => self.daemon_set(ns, name),
                Key::Job(ns, name) => self.job(ns, name),
                Key::CronJob(ns, name) => self.cron_job(ns, name),
                Key::Service(ns, name) => {
                    let listed = pods
                        .entry(ns.clone())
                        .or_insert_with(|| self.store.list(resources::core("pods"), Some(ns)).0);
                    self.endpoints(ns, name, listed)
                }
            };
            match result {
                Ok(())
                | Err(ApiError::NotFound { .. })
                | Err(ApiError::Conflict { .. })
                | Err(ApiError::Forbidden { .. }) => {}
                Err(e) => tracing::warn!("controller {key:?}: {e}"),
            }
        }
    }

    fn collect_garbage(&self, ns: &str, owner_uid: &str, plurals: &[&str]) {
        for plural in plurals {
            let kind = if *plural == "pods" {
                resources::core("pods")
            } else if *plural == "jobs" {
                rt("batch", "jobs")
            } else {
                rt("apps", plural)
            };
            for o in self.store.list(kind, Some(ns)).0 {
                if owned_by(o.value(), owner_uid) {
                    let _ = self.store.delete(kind, ns, o.name(), &DeleteOptions::default());
                }
            }
        }
    }

    fn service_account(&self, ns: &str) -> Result<(), ApiError> {
        let namespace = self.store.get(resources::core("namespaces"), "", ns)?;
        if namespace.is_terminating() {
            return Ok(());
        }
        let sa = resources::core("serviceaccounts");
        match self.store.get(sa, ns, "default") {
            Ok(_) => Ok(()),
            Err(ApiError::NotFound { .. }) => match self.store.create(sa, ns, json!({"metadata": {"name": "default"}}))
            {
                Ok(_) | Err(ApiError::AlreadyExists { .. }) => Ok(()),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    fn deployment(&self, ns: &str, name: &str) -> Result<(), ApiError> {
        let deploy = self.store.get(rt("apps", "deployments"), ns, name)?;
        if deploy.is_terminating() {
            return Ok(());
        }
        let d = deploy.value();
        let replicas = d.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
        let template = d.pointer("/spec/template").cloned().unwrap_or(Value::Null);
        let hash = template_hash(&template);
        let rs_rt = rt("apps", "replicasets");
        let owned: Vec<Obj> = self
            .store
            .list(rs_rt, Some(ns))
            .0
            .into_iter()
            .filter(|r| owned_by(r.value(), deploy.uid()))
            .collect();
        let current_name = format!("{name}-{hash}");
        let revision = owned
            .iter()
            .filter_map(|r| {
                json::str(r.value(), "/metadata/annotations/deployment.kubernetes.io~1revision")
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .unwrap_or(0);
        let current = owned.iter().find(|r| r.name() == current_name).cloned();
        let current = match current {
            Some(r) => {
                let own_revision = json::str(r.value(), "/metadata/annotations/deployment.kubernetes.io~1revision")
                    .parse::<u64>()
                    .unwrap_or(0);
                // A template that returns to an older ReplicaSet (a rollback) makes it the
                // newest revision again (upstream `getNewReplicaSet`, SetNewReplicaSetAnnotations).
                let bump = own_revision < revision;
                if bump || r.value().pointer("/spec/replicas").and_then(Value::as_i64) != Some(replicas) {
                    self.store.modify(rs_rt, ns, &current_name, Part::Main, |v| {
                        v["spec"]["replicas"] = json!(replicas);
                        if bump {
                            v["metadata"]["annotations"]["deployment.kubernetes.io/revision"] =
                                json!((revision + 1).to_string());
                        }
                        Ok(())
                    })?
                } else {
                    r
                }
            }
            None => {
                let mut tpl = template.clone();
                tpl["metadata"]["labels"]["pod-template-hash"] = json!(hash);
                let mut selector = d.pointer("/spec/selector").cloned().unwrap_or_else(|| json!({}));
                selector["matchLabels"]["pod-template-hash"] = json!(hash);
                let labels = tpl.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({}));
                let rs = json!({
                    "metadata": {
                        "name": current_name,
                        "labels": labels,
                        "annotations": {"deployment.kubernetes.io/revision": (revision + 1).to_string(),
                                        "deployment.kubernetes.io/desired-replicas": replicas.to_string()},
                        "ownerReferences": [owner_ref(&deploy, "Deployment", "apps/v1")],
                    },
                    "spec": {"replicas": replicas, "selector": selector, "template": tpl},
                });
                let created = match self.store.create(rs_rt, ns, rs) {
                    Ok(c) => c,
                    Err(ApiError::AlreadyExists { .. }) => self.store.get(rs_rt, ns, &current_name)?,
                    Err(e) => return Err(e),
                };
                events::emit(
                    &self.store,
                    d,
                    Kind::Normal,
                    "ScalingReplicaSet",
                    &format!("Scaled up replica set {current_name} from 0 to {replicas}"),
                    &Source::controller("deployment-controller"),
                );
                created
            }
        };
        // The Deployment carries its newest revision (upstream `SetDeploymentRevision`), which
        // `kubectl rollout undo` patches along with the template.
        let current_revision = json::str(
            current.value(),
            "/metadata/annotations/deployment.kubernetes.io~1revision",
        )
        .to_string();
        if json::str(d, "/metadata/annotations/deployment.kubernetes.io~1revision") != current_revision {
            self.store
                .modify(rt("apps", "deployments"), ns, name, Part::Main, |v| {
                    v["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!(current_revision);
                    Ok(())
                })?;
        }
        // Older ReplicaSets scale to zero once the new one exists (a simple rollout).
        for old in owned.iter().filter(|r| r.name() != current_name) {
            if old
                .value()
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                != 0
            {
                self.store.modify(rs_rt, ns, old.name(), Part::Main, |v| {
                    v["spec"]["replicas"] = json!(0);
                    Ok(())
                })?;
            }
        }
        let all: Vec<&Obj> = owned
            .iter()
            .filter(|r| r.name() != current_name)
            .chain([&current])
            .collect();
        let sum = |field: &str| {
            all.iter()
                .map(|r| {
                    r.value()
                        .pointer(&format!("/status/{field}"))
                        .and_then(Value::as_i64)
                        .unwrap_or(0)
                })
                .sum::<i64>()
        };
        let updated = current
            .value()
            .pointer("/status/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let available = sum("availableReplicas");
        let generation = d.pointer("/metadata/generation").cloned().unwrap_or(json!(1));
        let (avail_status, avail_reason, avail_msg) = if available >= replicas {
            (
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            )
        } else {
            (
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        };
        let progressing_reason = if updated == replicas && available >= replicas {
            "NewReplicaSetAvailable"
        } else {
            "ReplicaSetUpdated"
        };
        let status = json!({
            "observedGeneration": generation,
            "replicas": sum("replicas"),
            "updatedReplicas": updated,
            "readyReplicas": sum("readyReplicas"),
            "availableReplicas": available,
            "unavailableReplicas": (replicas - available).max(0),
            "conditions": [
                {"type": "Available", "status": avail_status, "reason": avail_reason, "message": avail_msg},
                {"type": "Progressing", "status": "True", "reason": progressing_reason,
                 "message": format!("ReplicaSet \"{current_name}\" is progressing.")},
            ],
        });
        self.write_status(rt("apps", "deployments"), ns, name, d, status)
    }

    fn write_status(
        &self,
        kind: &'static ResourceType,
        ns: &str,
        name: &str,
        current: &Value,
        mut status: Value,
    ) -> Result<(), ApiError> {
        // Keep condition timestamps when nothing about the condition changed.
        let now = crate::store::timestamp(chrono::Utc::now());
        if let Some(conds) = status.get_mut("conditions").and_then(Value::as_array_mut) {
            for c in conds.iter_mut() {
                let old = current
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|o| o.iter().find(|o| o.get("type") == c.get("type")));
                let (ts, tt) = match old {
                    Some(o) if o.get("status") == c.get("status") && o.get("reason") == c.get("reason") => {
                        (o.get("lastUpdateTime").cloned(), o.get("lastTransitionTime").cloned())
                    }
                    _ => (None, None),
                };
                c["lastUpdateTime"] = ts.unwrap_or_else(|| json!(now));
                c["lastTransitionTime"] = tt.unwrap_or_else(|| json!(now));
            }
        }
        if current.get("status") == Some(&status) {
            return Ok(());
        }
        self.store.modify(kind, ns, name, Part::Status, |v| {
            v["status"] = status;
            Ok(())
        })?;
        Ok(())
    }

    fn replica_set(&mut self, ns: &str, name: &str) -> Result<(), ApiError> {
        let rs_rt = rt("apps", "replicasets");
        let rs = self.store.get(rs_rt, ns, name)?;
        if rs.is_terminating() {
            return Ok(());
        }
        let r = rs.value();
        let replicas = r.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1).max(0);
        let pods_rt = resources::core("pods");
        let owned: Vec<Obj> = self.owned_pods(rs.uid());
        let mut active: Vec<&Obj> = owned.iter().filter(|p| is_active(p)).collect();
        let failed = owned
            .iter()
            .filter(|p| json::str(p.value(), "/status/phase") == "Failed")
            .count();
        let missing = replicas - active.len() as i64;
        let key = (ns.to_string(), name.to_string());
        if missing > 0 {
            // Replacing failed pods backs off, so a rejected template does not flood the cluster.
            let allowed = self.replace_after.get(&key).is_none_or(|(at, _)| Instant::now() >= *at);
            if failed == 0 || allowed {
                if failed > 0 {
                    let tries = self.replace_after.get(&key).map_or(0, |(_, n)| *n) + 1;
                    let wait = Duration::from_millis(500u64.saturating_mul(1 << tries.min(6)));
                    self.replace_after.insert(key.clone(), (Instant::now() + wait, tries));
                }
                for _ in 0..missing {
                    self.create_pod(&rs, "ReplicaSet", None)?;
                }
            }
        } else if missing < 0 {
            // Delete the least useful first: unscheduled, then not ready, then the newest.
            active.sort_by_key(|p| {
                let v = p.value();
                (
                    !json::str(v, "/spec/nodeName").is_empty(),
                    is_ready(v),
                    std::cmp::Reverse(json::str(v, "/metadata/creationTimestamp").to_string()),
                )
            });
            for pod in active.iter().take((-missing) as usize) {
                let _ = self.store.delete(pods_rt, ns, pod.name(), &DeleteOptions::default());
            }
        }
        let live: Vec<&Obj> = owned.iter().filter(|p| is_active(p)).collect();
        let ready = live.iter().filter(|p| is_ready(p.value())).count();
        let count = live.len() as i64 + missing.max(0);
        let status = json!({
            "replicas": count.min(replicas.max(live.len() as i64)),
            "fullyLabeledReplicas": live.len(),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": r.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
        });
        self.write_status(rs_rt, ns, name, r, status)
    }

    /// Creates one pod from a controller's template (through pod admission).
    fn create_pod(&self, owner: &Obj, kind: &str, node: Option<&str>) -> Result<Obj, ApiError> {
        let o = owner.value();
        let mut template = o.pointer("/spec/template").cloned().unwrap_or_else(|| json!({}));
        let mut metadata = template.get("metadata").cloned().unwrap_or_else(|| json!({}));
        metadata["generateName"] = json!(format!("{}-", owner.name()));
        metadata["ownerReferences"] = json!([owner_ref(owner, kind, json::str(o, "/apiVersion"))]);
        if let Some(m) = metadata.as_object_mut() {
            m.remove("name");
        }
        if let Some(node) = node {
            let spec = &mut template["spec"];
            spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!({
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
            });
            let mut tolerations = spec
                .get("tolerations")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            tolerations.extend(daemonset_tolerations());
            spec["tolerations"] = json!(tolerations);
        }
        let mut pod = json!({"metadata": metadata, "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))});
        let source = Source::controller(match kind {
            "DaemonSet" => "daemonset-controller",
            "Job" => "job-controller",
            _ => "replicaset-controller",
        });
        let created = admission::admit_pod(&self.store, owner.namespace(), &mut pod)
            .and_then(|()| self.store.create(resources::core("pods"), owner.namespace(), pod));
        let created = match created {
            Ok(c) => c,
            Err(e) => {
                // As upstream's pod control reports a refused create on the controller
                // (`pkg/controller/controller_utils.go`: FailedCreate, "Error creating: %v").
                events::emit(
                    &self.store,
                    o,
                    Kind::Warning,
                    "FailedCreate",
                    &format!("Error creating: {e}"),
                    &source,
                );
                return Err(e);
            }
        };
        events::emit(
            &self.store,
            o,
            Kind::Normal,
            "SuccessfulCreate",
            &format!("Created pod: {}", created.name()),
            &source,
        );
        Ok(created)
    }

    fn daemon_set(&mut self, ns: &str, name: &str) -> Result<(), ApiError> {
        let ds_rt = rt("apps", "daemonsets");
        let ds = self.store.get(ds_rt, ns, name)?;
        if ds.is_terminating() {
            return Ok(());
        }
        let eligible = self.eligible_nodes(&ds);
        let pods_rt = resources::core("pods");
        let owned: Vec<Obj> = self.owned_pods(ds.uid());
        let target_node = |p: &Obj| -> String {
            let node = json::str(p.value(), "/spec/nodeName");
            if !node.is_empty() {
                return node.to_string();
            }
            p.value()
                .pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let mut by_node: HashMap<String, Vec<(&Obj, bool)>> = HashMap::new();
        for p in owned.iter().filter(|p| !p.is_terminating()) {
            let state = self.daemon_pods.of(p, |p| DaemonPod::read(p, target_node));
            if !state.finished {
                by_node.entry(state.node.clone()).or_default().push((p, state.ready));
            }
        }
        for node in eligible.iter() {
            match by_node.get(node) {
                None => {
                    self.create_pod(&ds, "DaemonSet", Some(node))?;
                }
                Some(pods) if pods.len() > 1 => {
                    for (extra, _) in &pods[1..] {
                        let _ = self.store.delete(pods_rt, ns, extra.name(), &DeleteOptions::default());
                    }
                }
                Some(_) => {}
            }
        }
        let eligible_names: BTreeSet<&str> = eligible.iter().map(String::as_str).collect();
        for (node, pods) in &by_node {
            if !eligible_names.contains(node.as_str()) {
                for (p, _) in pods {
                    let _ = self.store.delete(pods_rt, ns, p.name(), &DeleteOptions::default());
                }
            }
        }
        let scheduled = eligible.iter().filter(|n| by_node.contains_key(*n)).count();
        let ready = eligible
            .iter()
            .filter(|n| by_node.get(*n).is_some_and(|ps| ps.iter().any(|(_, ready)| *ready)))
            .count();
        let status = json!({
            "desiredNumberScheduled": eligible.len(),
            "currentNumberScheduled": scheduled,
            "numberMisscheduled": 0,
            "numberReady": ready,
            "updatedNumberScheduled": scheduled,
            "numberAvailable": ready,
            "numberUnavailable": eligible.len() - ready,
            "observedGeneration": ds.value().pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
        });
        self.write_status(ds_rt, ns, name, ds.value(), status)
    }
}

impl Controllers {
    /// The nodes a DaemonSet's pods should run on: those whose taints, selector and affinity its
    /// template fits (resources, pod count and ports aside, as upstream's `nodeShouldRunDaemonPod`),
    /// worked out again only when the DaemonSet or a node changed: a DaemonSet syncs at each
    /// change of one of its pods, and at 5,000 nodes fitting every node each time was most of a
    /// cluster's start.
    fn eligible_nodes(&mut self, ds: &Obj) -> Arc<Vec<String>> {
        let nodes_at = self.store.changed_at(&[resources::core("nodes")]);
        if let Some((version, at, eligible)) = self.eligible.get(ds.uid())
            && *version == ds.resource_version()
            && *at == nodes_at
        {
            return eligible.clone();
        }
        let template_pod = json!({"spec": ds.value().pointer("/spec/template/spec").cloned().unwrap_or(Value::Null)});
        let mut needs = PodNeeds::from_pod(&template_pod);
        needs
            .tolerations
            .extend(daemonset_tolerations().iter().map(Toleration::from_json));
        needs.host_ports.clear();
        let listed = self.store.list(resources::core("nodes"), None).0;
        let eligible: Arc<Vec<String>> = Arc::new(
            self.node_infos
                .refreshed(&listed)
                .filter(|n| {
                    misfits(&needs, n, &Usage::default())
                        .iter()
                        .all(|m| matches!(m, Misfit::Insufficient(_) | Misfit::TooManyPods | Misfit::Ports))
                })
                .map(|n| n.name.clone())
                .collect(),
        );
        self.eligible.insert(
            ds.uid().to_string(),
            (ds.resource_version(), nodes_at, eligible.clone()),
        );
        eligible
    }

    /// Endpoints and the EndpointSlice of a Service with a selector, from the pods it selects.
    fn endpoints(&mut self, ns: &str, name: &str, pods: &[Obj]) -> Result<(), ApiError> {
        let svc = match self.store.get(resources::core("services"), ns, name) {
            Ok(s) => s,
            Err(ApiError::NotFound { .. }) => {
                let _ = self
                    .store
                    .delete(resources::core("endpoints"), ns, name, &DeleteOptions::default());
                let _ = self.store.delete(
                    rt("discovery.k8s.io", "endpointslices"),
                    ns,
                    &format!("{name}-sim"),
                    &DeleteOptions::default(),
                );
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let v = svc.value();
        let Some(selector) = v
            .pointer("/spec/selector")
            .and_then(Value::as_object)
            .filter(|s| !s.is_empty())
        else {
            return Ok(());
        };
        let mut ready = Vec::new();
        let mut not_ready = Vec::new();
        let mut slice_endpoints = Vec::new();
        let mut first_pod: Option<Obj> = None;
        for pod in pods {
            let p = self.endpoint_pods.of(pod, EndpointPod::read);
            if !selector
                .iter()
                .all(|(k, want)| p.labels.as_ref().and_then(|l| l.get(k)) == Some(want))
            {
                continue;
            }
            let ip = p.ip.as_str();
            if ip.is_empty() || p.terminal {
                continue;
            }
            let is_ready = p.ready && !pod.is_terminating();
            let address = json!({"ip": ip, "nodeName": pod.node_name(),
                "targetRef": {"kind": "Pod", "namespace": ns, "name": pod.name(), "uid": pod.uid()}});
            slice_endpoints.push(json!({"addresses": [ip], "nodeName": pod.node_name(),
                "conditions": {"ready": is_ready, "serving": is_ready, "terminating": pod.is_terminating()},
                "targetRef": {"kind": "Pod", "namespace": ns, "name": pod.name(), "uid": pod.uid()}}));
            if is_ready {
                ready.push(address)
            } else {
                not_ready.push(address)
            }
            first_pod.get_or_insert_with(|| pod.clone());
        }
        let ports: Vec<Value> = v
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|sp| {
                let target = match sp.get("targetPort") {
                    Some(Value::Number(n)) => n.as_i64(),
                    Some(Value::String(port_name)) => first_pod.as_ref().and_then(|p| named_port(p.value(), port_name)),
                    _ => sp.get("port").and_then(Value::as_i64),
                };
                let mut port = json!({"port": target.unwrap_or(0), "protocol": json::str(sp, "/protocol")});
                if !json::str(sp, "/name").is_empty() {
                    port["name"] = json!(json::str(sp, "/name"));
                }
                port
            })
            .collect();
        let mut subset = json!({"ports": ports});
        if !ready.is_empty() {
            subset["addresses"] = json!(ready);
        }
        if !not_ready.is_empty() {
            subset["notReadyAddresses"] = json!(not_ready);
        }
        let subsets = if ready.is_empty() && not_ready.is_empty() {
            json!([])
        } else {
            json!([subset])
        };
        let owner = json!([{"apiVersion": "v1", "kind": "Service", "name": name, "uid": svc.uid(), "controller": true, "blockOwnerDeletion": true}]);
        let endpoints = json!({"metadata": {"name": name, "labels": v.pointer("/metadata/labels").cloned().unwrap_or(json!({}))},
            "subsets": subsets});
        self.put(resources::core("endpoints"), ns, name, endpoints, "subsets")?;
        let slice = json!({"metadata": {"name": format!("{name}-sim"), "ownerReferences": owner,
                "labels": {"kubernetes.io/service-name": name, "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4", "endpoints": slice_endpoints, "ports": ports});
        self.put(
            rt("discovery.k8s.io", "endpointslices"),
            ns,
            &format!("{name}-sim"),
            slice,
            "endpoints",
        )
    }

    /// Creates or replaces a controller-owned object when `field` (or ports) changed.
    fn put(&self, kind: &'static ResourceType, ns: &str, name: &str, obj: Value, field: &str) -> Result<(), ApiError> {
        match self.store.get(kind, ns, name) {
            Ok(current) => {
                let cur = current.value();
                if cur.get(field) == obj.get(field) && cur.get("ports") == obj.get("ports") {
                    return Ok(());
                }
                self.store.modify(kind, ns, name, Part::Main, |c| {
                    c[field] = obj.get(field).cloned().unwrap_or(Value::Null);
                    if let Some(ports) = obj.get("ports") {
                        c["ports"] = ports.clone();
                    }
                    Ok(())
                })?;
                Ok(())
            }
            Err(ApiError::NotFound { .. }) => match self.store.create(kind, ns, obj) {
                Ok(_) | Err(ApiError::AlreadyExists { .. }) => Ok(()),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        }
    }
}

/// The number of a container port by name.
fn named_port(pod: &Value, name: &str) -> Option<i64> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(|c| c.get("ports").and_then(Value::as_array))
        .flatten()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|p| p.get("containerPort").and_then(Value::as_i64))
}

/// The tolerations the DaemonSet controller adds to its pods (never `os=windows`).
fn daemonset_tolerations() -> Vec<Value> {
    let t = |key: &str, effect: &str| json!({"key": key, "operator": "Exists", "effect": effect});
    vec![
        t("node.kubernetes.io/not-ready", "NoExecute"),
        t("node.kubernetes.io/unreachable", "NoExecute"),
        t("node.kubernetes.io/disk-pressure", "NoSchedule"),
        t("node.kubernetes.io/memory-pressure", "NoSchedule"),
        t("node.kubernetes.io/pid-pressure", "NoSchedule"),
        t("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
}

/// A namespace's Services that select pods (a non-empty selector of string values), indexed
/// by their selector's first label and value: a changed pod looks only at the Services one
/// of its labels could match, not at every Service of the namespace (1,000 Services per
/// namespace under full coverage at 250 nodes).
#[derive(Default)]
struct Selectors(HashMap<String, HashMap<String, Vec<Selecting>>>);

/// A Service's name and its selector's label-value pairs.
type Selecting = (String, Vec<(String, String)>);

impl Selectors {
    fn of(services: &[Obj]) -> Selectors {
        let mut index = Selectors::default();
        for svc in services {
            let Some(selector) = svc.value().pointer("/spec/selector").and_then(Value::as_object) else {
                continue;
            };
            // A label value is a string: a selector asking for anything else selects nothing.
            let pairs: Option<Vec<(String, String)>> = selector
                .iter()
                .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect();
            let Some(pairs) = pairs.filter(|p| !p.is_empty()) else {
                continue;
            };
            let (key, value) = pairs[0].clone();
            index
                .0
                .entry(key)
                .or_default()
                .entry(value)
                .or_default()
                .push((svc.name().to_string(), pairs));
        }
        index
    }

    /// The Services whose selector `labels` match.
    fn selecting<'a>(&'a self, labels: &'a serde_json::Map<String, Value>) -> impl Iterator<Item = &'a str> + 'a {
        labels
            .iter()
            .filter_map(|(k, v)| self.0.get(k)?.get(v.as_str()?))
            .flatten()
            .filter(|(_, pairs)| {
                pairs
                    .iter()
                    .all(|(k, want)| labels.get(k).and_then(Value::as_str) == Some(want.as_str()))
            })
            .map(|(name, _)| name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A changed pod queues the Services whose whole selector its labels match: not those
    /// matching one label of several, not those without a selector (their Endpoints are the
    /// user's), not those asking for a value no label can have.
    #[rstest::rstest]
    #[case::one_label(json!({"app": "web"}), vec!["web"])]
    #[case::both_labels(json!({"app": "web", "tier": "front"}), vec!["front", "web"])]
    #[case::the_other_label_only(json!({"tier": "front"}), vec![])]
    #[case::another_value(json!({"app": "db", "tier": "front"}), vec![])]
    #[case::no_labels(json!({}), vec![])]
    fn a_pod_queues_the_services_selecting_it(#[case] labels: Value, #[case] expect: Vec<&str>) {
        let store = Store::default();
        store
            .create(resources::core("namespaces"), "", json!({"metadata": {"name": "w"}}))
            .expect("ns");
        for (name, selector) in [
            ("web", json!({"app": "web"})),
            ("front", json!({"tier": "front", "app": "web"})),
            ("empty", json!({})),
            ("number", json!({"app": 1})),
            ("none", Value::Null),
        ] {
            let mut svc = json!({"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}});
            if !selector.is_null() {
                svc["spec"]["selector"] = selector;
            }
            store.create(resources::core("services"), "w", svc).expect("service");
        }
        let selectors = Selectors::of(&store.list(resources::core("services"), Some("w")).0);
        let labels = labels.as_object().cloned().unwrap_or_default();
        let mut picked: Vec<&str> = selectors.selecting(&labels).collect();
        picked.sort_unstable();
        assert_eq!(picked, expect);
    }

    /// Feeds the controllers every change since `feed`'s last and works their queue off: whether
    /// a pod change was to be matched against the Services.
    fn settle(ctl: &mut Controllers, feed: &mut crate::store::Subscription) -> bool {
        let mut queue = BTreeSet::new();
        while let Ok(e) = feed.try_recv() {
            ctl.on_event(&e, &mut queue);
        }
        let matched = !ctl.changed_pods.is_empty();
        ctl.drain(&mut queue);
        matched
    }

    /// The ready and not-ready addresses of a Service's Endpoints, and its resourceVersion.
    fn endpoints_of(store: &Store, name: &str) -> (Vec<String>, Vec<String>, u64) {
        let ep = store.get(resources::core("endpoints"), "w", name).expect("endpoints");
        let ips = |key: &str| -> Vec<String> {
            ep.value()
                .pointer("/subsets/0")
                .and_then(|s| s.get(key))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|a| json::str(a, "/ip").to_string())
                .collect()
        };
        (ips("addresses"), ips("notReadyAddresses"), ep.resource_version())
    }

    /// A pod change queues the Services selecting it only where it changes what their endpoints
    /// are made of (upstream's `podEndpointsChanged`): a status write touching none of it (a
    /// restart count, a probe time) leaves the Endpoints as written; readiness, deletion and
    /// labels move the address, and a relabelled pod leaves the Services its old labels matched.
    #[rstest::rstest]
    #[case::restart_count(json!({"status": {"containerStatuses": [{"name": "c", "restartCount": 1}]}}), (vec!["10.1.0.5"], vec![]), false)]
    #[case::probe_time(json!({"status": {"conditions": [{"type": "Ready", "status": "True", "lastProbeTime": "2026-12-06T00:00:00Z"}]}}), (vec!["10.1.0.5"], vec![]), false)]
    #[case::not_ready(json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}), (vec![], vec!["10.1.0.5"]), true)]
    #[case::new_address(json!({"status": {"podIP": "10.1.0.6", "podIPs": [{"ip": "10.1.0.6"}]}}), (vec!["10.1.0.6"], vec![]), true)]
    #[case::relabelled(json!({"metadata": {"labels": {"app": "db"}}}), (vec![], vec![]), true)]
    fn only_what_endpoints_are_made_of_moves_them(
        #[case] patch: Value,
        #[case] expect: (Vec<&str>, Vec<&str>),
        #[case] rewritten: bool,
    ) {
        let store = Arc::new(Store::default());
        store
            .create(resources::core("namespaces"), "w", json!({"metadata": {"name": "w"}}))
            .expect("ns");
        for (name, app) in [("web", "web"), ("db", "db")] {
            let svc = json!({"metadata": {"name": name}, "spec": {"selector": {"app": app}, "ports": [{"port": 80}]}});
            store.create(resources::core("services"), "w", svc).expect("service");
        }
        let mut feed = store.subscribe();
        let mut ctl = Controllers::new(store.clone(), (1, 32), 1.0);
        let mut all = BTreeSet::new();
        ctl.enqueue_all(&mut all, true);
        ctl.drain(&mut all);
        store
            .create(
                resources::core("pods"),
                "w",
                json!({"metadata": {"name": "p", "labels": {"app": "web"}},
                    "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}}),
            )
            .expect("pod");
        store
            .modify(resources::core("pods"), "w", "p", Part::Status, |p| {
                p["status"] = json!({"phase": "Running", "podIP": "10.1.0.5", "podIPs": [{"ip": "10.1.0.5"}],
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "containerStatuses": [{"name": "c", "restartCount": 0}]});
                Ok(())
            })
            .expect("pod status");
        settle(&mut ctl, &mut feed);
        let (ready, _, before) = endpoints_of(&store, "web");
        assert_eq!(ready, ["10.1.0.5"]);
        let part = if patch.get("status").is_some() {
            Part::Status
        } else {
            Part::Main
        };
        store
            .modify(resources::core("pods"), "w", "p", part, |p| {
                merge(p, &patch);
                Ok(())
            })
            .expect("pod change");
        assert_eq!(
            settle(&mut ctl, &mut feed),
            rewritten,
            "the pod matched against the Services"
        );
        let (ready, not_ready, after) = endpoints_of(&store, "web");
        assert_eq!(
            (ready, not_ready),
            (
                expect.0.iter().map(|s| s.to_string()).collect(),
                expect.1.iter().map(|s| s.to_string()).collect()
            )
        );
        assert_eq!(after != before, rewritten, "the web Service's Endpoints rewritten");
        let (db, _, _) = endpoints_of(&store, "db");
        let relabelled = patch.pointer("/metadata/labels").is_some();
        assert_eq!(
            db.len(),
            usize::from(relabelled),
            "the db Service selects the pod once relabelled"
        );
    }

    /// `patch` merged into `v` (objects key by key, anything else replaced).
    fn merge(v: &mut Value, patch: &Value) {
        match (v, patch) {
            (Value::Object(v), Value::Object(p)) => {
                for (k, x) in p {
                    merge(v.entry(k.clone()).or_insert(Value::Null), x);
                }
            }
            (v, p) => *v = p.clone(),
        }
    }

    #[test]
    fn template_hash_is_stable_and_sensitive() {
        let a = json!({"spec": {"containers": [{"name": "c", "image": "i:1"}]}});
        let b = json!({"spec": {"containers": [{"name": "c", "image": "i:2"}]}});
        assert_eq!(template_hash(&a), template_hash(&a));
        assert_ne!(template_hash(&a), template_hash(&b));
        assert_eq!(template_hash(&a).len(), 10);
    }
}
