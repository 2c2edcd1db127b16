//! Deployment of a run's fixtures: one labelled run namespace; per schedulable node a netexec
//! server and a node-side probe, per pool two session-affinity backends; the services in front
//! of them — all in one wave by server-side apply, awaited in parallel with per-OS timeouts;
//! then where each pod really landed is verified before any probe.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use k8s_openapi::api::core::v1::{Event, Namespace, Pod, Service};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use mixcheck_reports::Os;
use serde_json::json;

use crate::cluster::facts::{ClusterFacts, ClusterNode};
use crate::cluster::fixture::{self, Fixture, Fixtures, MANAGED_BY, RUN_LABEL};
use crate::cluster::podwatch::{PodWatch, Warning};
use crate::cluster::progress::{Phase, Progress};
use crate::cluster::pulls;
use crate::cluster::registry::Registry;

/// The field manager of the run's server-side applies.
pub const MANAGER: &str = "mixcheck";
/// The subdomain (headless service) of the server pods: `srv-N.mixcheck-pods.NS.svc.cluster.local`.
pub const SUBDOMAIN: &str = "mixcheck-pods";
/// The hostPort a server of its own maps (NET-HOSTPORT): not on the core server, so that a
/// cluster refusing hostPorts (a policy engine, a port in use) only loses the hostPort cells.
pub const HOST_PORT: u16 = 48080;
/// The `externalTrafficPolicy: Local` NodePort service over every server.
pub const LOCAL_SERVICE: &str = "local";
/// The label only the shared servers `srv-N` carry, which the services over every server select:
/// a check's own netexec pod (a NetworkPolicy cell's denied server, a start-up probe) is never
/// one of their backends.
const SHARED_SERVER: (&str, &str) = ("mixcheck.io/shared", "server");

/// A fixture pod of the run, once awaited.
#[derive(Debug, Clone)]
pub struct Placed {
    pub name: String,
    pub ip: String,
    /// Its IPv6 address on a dual-stack cluster (`status.podIPs`), where the CNI gave it one.
    pub ipv6: Option<String>,
    /// Why it is not usable (never ready, landed elsewhere, refused), with its status and events.
    pub problem: Option<String>,
    /// The problem is the cluster's deliberate policy (an admission webhook or Pod Security
    /// refused the pod): the checks that need it cannot run here, which says nothing about the
    /// rule (`indeterminate`, not `error`).
    pub policy: bool,
    /// The problem is an image the nodes cannot pull from its registry (refused, unreachable,
    /// missing; [`crate::cluster::pulls`]): the checks that need the pod cannot run until the run
    /// is given the credentials or mirror the problem names (`indeterminate`, not `error`).
    pub unpullable: Option<pulls::Unpullable>,
}

impl Placed {
    /// Whether the pod's problem says nothing about the rules (the cluster's policy, or an
    /// image the run could not have): the cells that need it are `indeterminate`.
    pub fn indeterminate(&self) -> bool {
        self.policy || self.unpullable.is_some()
    }
}

pub use crate::cluster::admission::Refusal;

/// A service of the run.
#[derive(Debug, Clone, Default)]
pub struct ServiceInfo {
    pub name: String,
    pub cluster_ip: String,
    /// Its IPv6 ClusterIP (`spec.clusterIPs`) on a dual-stack cluster.
    pub cluster_ipv6: Option<String>,
    /// (TCP node port, UDP node port)
    pub node_ports: (Option<u16>, Option<u16>),
    /// The nodes of its backend pods, where they are on more than one node it is known for
    /// (the session-affinity service of a pool); empty otherwise.
    pub backends: Vec<String>,
}

/// A LoadBalancer service and the ingress address it got (None: none was provisioned).
#[derive(Debug, Clone, Default)]
pub struct LoadBalancer {
    pub name: String,
    pub ingress: Option<String>,
}

/// What the run deployed, by node name.
#[derive(Debug, Clone, Default)]
pub struct Deployment {
    pub servers: BTreeMap<String, Placed>,
    pub clients: BTreeMap<String, Placed>,
    /// The node-side probe; None where it cannot exist (Windows without HostProcess).
    pub hosts: BTreeMap<String, Placed>,
    /// The server publishing [`HOST_PORT`] (only when a selected check needs it).
    pub host_ports: BTreeMap<String, Placed>,
    /// Services the cluster refused, by name.
    pub refused_services: BTreeMap<String, Refusal>,
    /// ClusterIP+NodePort service over each node's server.
    pub services: BTreeMap<String, ServiceInfo>,
    /// `externalTrafficPolicy: Local` service over each node's server.
    pub local_services: BTreeMap<String, ServiceInfo>,
    /// Headless service over each node's server (name).
    pub headless: BTreeMap<String, String>,
    /// ExternalName service aiming at each node's `svc-N` (name).
    pub external_names: BTreeMap<String, String>,
    /// LoadBalancer service over the first server of each pool, by pool.
    pub load_balancers: BTreeMap<String, LoadBalancer>,
    /// `sessionAffinity: ClientIP` service per pool.
    pub affinity: BTreeMap<String, ServiceInfo>,
    /// The server pods' hostnames, for the pod FQDN (`srv-N`).
    pub hostnames: BTreeMap<String, String>,
    /// When the fixtures were ready: flows through them settle from here.
    pub ready_at: Option<std::time::Instant>,
    /// The Services made to read the Windows nodes' load balancers against.
    pub hns: subjects::HnsSubjects,
}

impl Deployment {
    /// Takes in the fixtures a later call deployed for nodes promoted to every check; flows
    /// settle from when those were ready.
    pub fn absorb(&mut self, more: Deployment) {
        self.servers.extend(more.servers);
        self.clients.extend(more.clients);
        self.hosts.extend(more.hosts);
        self.host_ports.extend(more.host_ports);
        self.refused_services.extend(more.refused_services);
        self.services.extend(more.services);
        self.local_services.extend(more.local_services);
        self.headless.extend(more.headless);
        self.external_names.extend(more.external_names);
        self.hostnames.extend(more.hostnames);
        if more.ready_at.is_some() {
            self.ready_at = more.ready_at;
        }
    }
}

/// Why deployment could not proceed at all.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error("fixture {0:?} is missing (it is embedded; was it overridden by --fixtures?)")]
    MissingFixture(String),
    #[error("creating {what}: {cause}")]
    Api { what: String, cause: kube::Error },
}

fn api_err(what: impl Into<String>) -> impl FnOnce(kube::Error) -> DeployError {
    let what = what.into();
    move |cause| DeployError::Api { what, cause }
}

/// The labels of everything a run creates.
pub fn run_labels(run_id: &str) -> BTreeMap<String, String> {
    let mut l = BTreeMap::new();
    l.insert(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string());
    l.insert(RUN_LABEL.to_string(), run_id.to_string());
    l
}

/// The Pod Security levels the run asks for its namespace, most permissive first: HostProcess,
/// hostNetwork and hostPort pods need `privileged`; where a policy refuses privileged namespaces
/// (Kyverno, Gatekeeper, a ValidatingAdmissionPolicy), `baseline`; else the cluster's default.
const NAMESPACE_LEVELS: [Option<&str>; 3] = [Some("privileged"), Some("baseline"), None];

/// The run namespace as created: its Pod Security level (None: the cluster's default) and,
/// when the cluster refused a more permissive one, the refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedNamespace {
    pub level: Option<&'static str>,
    pub refused: Option<Refusal>,
}

/// Creates the run namespace at the most permissive Pod Security level the cluster accepts
/// (`privileged`: HostProcess pods need it).
pub async fn create_namespace(client: &kube::Client, ns: &str, run_id: &str) -> Result<CreatedNamespace, DeployError> {
    let api = Api::<Namespace>::all(client.clone());
    let mut refused: Option<Refusal> = None;
    let mut levels = NAMESPACE_LEVELS.into_iter().peekable();
    while let Some(level) = levels.next() {
        let mut labels = run_labels(run_id);
        if let Some(level) = level {
            labels.insert("pod-security.kubernetes.io/enforce".into(), level.into());
        }
        let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns, "labels": labels}}))
            .map_err(|e| DeployError::Api {
                what: format!("namespace {ns}"),
                cause: kube::Error::SerdeError(e),
            })?;
        let e = match api.create(&PostParams::default(), &namespace).await {
            Ok(_) => return Ok(CreatedNamespace { level, refused }),
            Err(e) => e,
        };
        match Refusal::of(&e).filter(|r| r.policy) {
            Some(r) if levels.peek().is_some() => {
                refused.get_or_insert(r);
            }
            _ => return Err(api_err(format!("namespace {ns}"))(e)),
        }
    }
    Ok(CreatedNamespace { level: None, refused })
}

/// How long a pod of this OS may take to become ready (Windows images pull slowly).
fn ready_timeout(os: Os) -> Duration {
    match os {
        Os::Linux => Duration::from_secs(180),
        // A first pull of a Windows image may take many minutes (Server Core `ltsc2025` is
        // several GB): the e2e framework's wait for a pod "pulling a large image" (kubernetes
        // `test/e2e/framework/timeouts.go`, `podStartSlowTimeout`).
        Os::Windows => Duration::from_secs(15 * 60),
    }
}

/// How often the kubelet must have failed to create a pod's sandbox (the warning's count: the
/// first attempt and its back-off retries) before the pod counts as never starting. Pods stuck
/// in ContainerCreating with FailedCreatePodSandBox are the documented symptom of a pause image
/// of the wrong build (VER-PAUSE-IMAGE), a missing flannel subnet.env (NET-FLANNEL-SUBNET-ENV) or
/// a missing HNS network (NET-HNS-NETWORK-PRESENT); they do not resolve by waiting.
pub const SANDBOX_FAILURES: i32 = 3;

/// A pod's sandbox failure once the kubelet has retried it [`SANDBOX_FAILURES`] times: its
/// most repeated FailedCreatePodSandBox warning (of the pod's `warnings`), with the count.
fn sandbox_failure(warnings: &[Warning]) -> Option<String> {
    warnings
        .iter()
        .filter(|w| w.reason == "FailedCreatePodSandBox")
        .max_by_key(|w| w.count)
        .filter(|w| w.count >= SANDBOX_FAILURES)
        .map(|w| format!("FailedCreatePodSandBox ({} times): {}", w.count, w.message))
}

/// How many awaited pods the progress line names.
const WAITING_SHOWN: usize = 5;

/// How long a fixture pod may stay unschedulable for a lasting reason before it is settled as
/// never starting: long enough for the scheduler's retry after a conflicting pod is deleted.
const UNSCHEDULABLE_GRACE: Duration = Duration::from_secs(10);

/// Why the scheduler cannot place the pod, when it says so: the PodScheduled condition's
/// message (reason Unschedulable), else its latest FailedScheduling warning. None while it is
/// scheduled or nothing was said yet.
fn scheduling_failure(p: &Pod, warnings: &[Warning]) -> Option<String> {
    if p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
    {
        return None;
    }
    let condition = p
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| {
            cs.iter().find(|c| {
                c.type_ == "PodScheduled" && c.status == "False" && c.reason.as_deref() == Some("Unschedulable")
            })
        })
        .and_then(|c| c.message.clone());
    condition.or_else(|| {
        warnings
            .iter()
            .filter(|w| w.reason == "FailedScheduling")
            .max_by_key(|w| w.count)
            .map(|w| w.message.clone())
    })
}

/// Whether a scheduler message names only what clears up by itself
/// ([`crate::cluster::scheduling::TRANSIENT_UNSCHEDULABLE`]).
fn transient_unschedulable(message: &str) -> bool {
    // `0/4 nodes are available: 1 Too many pods, 3 node(s) didn't match …`: the node the pod
    // is meant for is one of the listed reasons; decide by the reasons that are not about
    // other nodes' selectors.
    let first = message.split(" preemption:").next().unwrap_or(message);
    let listed = first.split_once(':').map_or(first, |(_, r)| r).replace(". ", ", ");
    let reasons: Vec<&str> = listed
        .split(", ")
        .map(|r| r.trim().trim_end_matches('.'))
        .filter(|r| !r.is_empty())
        .filter(|r| !r.contains("didn't match Pod's node affinity/selector"))
        .collect();
    !reasons.is_empty()
        && reasons.iter().all(|r| {
            crate::cluster::scheduling::TRANSIENT_UNSCHEDULABLE
                .iter()
                .any(|t| r.contains(t))
        })
}

/// One line about a pod still awaited: where it should run and what holds it up (`events`: the
/// namespace's events, or the pod's own).
fn waiting_on(p: Option<&Pod>, node: &str, events: &[Event]) -> String {
    let Some(p) = p else {
        return format!("on {node}: not created yet");
    };
    let name = p.metadata.name.as_deref().unwrap_or_default();
    if let Some(why) = scheduling_failure(p, &Warning::about(events, name)) {
        return format!("for {node}: unschedulable: {why}");
    }
    let status = p.status.clone().unwrap_or_default();
    let waiting = status.container_statuses.unwrap_or_default().into_iter().find_map(|c| {
        let w = c.state.and_then(|s| s.waiting)?;
        Some(format!(
            "{} {}",
            w.reason.unwrap_or_default(),
            w.message.unwrap_or_default()
        ))
    });
    // A pull in progress says what and for how long ("win-1: pulling servercore:ltsc2025,
    // 2 m 10 s"): on a Windows pool the first pulls take minutes.
    if let Some((image, since_ms)) = crate::cluster::startup::pulling(events, name) {
        let now_ms = k8s_openapi::jiff::Timestamp::now().as_millisecond();
        return format!(
            "on {node}: pulling {}, {}",
            crate::cluster::startup::short_image(&image),
            crate::cluster::duration::elapsed(std::time::Duration::from_millis(
                u64::try_from(now_ms - since_ms).unwrap_or(0)
            ))
        );
    }
    let warning = events
        .iter()
        .rfind(|e| e.involved_object.name.as_deref() == Some(name) && e.type_.as_deref() == Some("Warning"))
        .map(|e| {
            format!(
                "{}: {}",
                e.reason.clone().unwrap_or_default(),
                e.message.clone().unwrap_or_default()
            )
        });
    let phase = status.phase.unwrap_or_else(|| "Pending".into());
    let why = warning
        .or(waiting.map(|w| w.trim().to_string()).filter(|w| !w.is_empty()))
        .unwrap_or_else(|| format!("{phase}, not ready"));
    format!("on {node}: {}", crate::cluster::progress::shorten(&why, 160))
}

/// Applies an object of the run (`what` names its kind in errors); a refusal is kept in
/// `refused` (the cells that need the object say why), any other error ends the deployment.
async fn apply<K>(
    api: &Api<K>,
    what: &str,
    name: &str,
    object: &serde_json::Value,
    refused: &mut BTreeMap<String, Refusal>,
) -> Result<(), DeployError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api
        .patch(name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(object))
        .await
    {
        Ok(_) => Ok(()),
        Err(e) => match Refusal::of(&e) {
            Some(r) => {
                refused.insert(name.to_string(), r);
                Ok(())
            }
            None => Err(api_err(format!("{what} {name}"))(e)),
        },
    }
}

/// Applies a service of the run (see [`apply`]).
async fn apply_service(
    services: &Api<Service>,
    name: &str,
    svc: &serde_json::Value,
    refused: &mut BTreeMap<String, Refusal>,
) -> Result<(), DeployError> {
    apply(services, "service", name, svc, refused).await
}

/// The hostPort server: the core server's `netexec` container alone, publishing [`HOST_PORT`]
/// for its HTTP port, labelled apart so that no service of the run selects it.
fn host_port_pod(server: &serde_json::Value) -> serde_json::Value {
    let mut p = server.clone();
    p["metadata"]["labels"]["app.kubernetes.io/component"] = json!("host-port");
    if let Some(containers) = p
        .pointer_mut("/spec/containers")
        .and_then(serde_json::Value::as_array_mut)
    {
        containers.truncate(1);
        for port in containers
            .iter_mut()
            .filter_map(|c| c.get_mut("ports").and_then(serde_json::Value::as_array_mut))
            .flatten()
        {
            if port
                .get("protocol")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("TCP")
                == "TCP"
            {
                port["hostPort"] = json!(HOST_PORT);
            }
        }
    }
    p
}

/// What the selected checks need of the shared fixtures beyond the core ones.
#[derive(Debug, Clone, Copy, Default)]
pub struct Needs {
    /// A server publishing [`HOST_PORT`] on each node.
    pub host_port: bool,
    /// The backend-limit Services ([`subjects`]).
    pub backend_limit: bool,
    /// The preserve-destination LoadBalancer ([`subjects`]).
    pub preserve_destination: bool,
}

impl Needs {
    /// What either needs.
    pub fn or(self, other: Needs) -> Needs {
        Needs {
            host_port: self.host_port || other.host_port,
            backend_limit: self.backend_limit || other.backend_limit,
            preserve_destination: self.preserve_destination || other.preserve_destination,
        }
    }
}

/// Which nodes [`deploy`] gives which fixtures.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// Nodes (indexes into the facts) that get every fixture: the node-side probe, the
    /// hostPort server and the per-node Services besides the server and client every node gets.
    pub full: &'a std::collections::BTreeSet<usize>,
    /// What was deployed before, when this call adds the fixtures of nodes promoted to every
    /// check: only their missing fixtures are created.
    pub before: Option<&'a Deployment>,
    /// Told `true` once every fixture object is created (the pods not yet awaited), `false`
    /// when the deployment ends before that.
    pub applied: Option<&'a tokio::sync::watch::Sender<Option<bool>>>,
    /// The run namespace's pods and their warnings as the run's pod watch sees them: the wait
    /// for the fixtures reads them there.
    pub pods: &'a PodWatch,
}

/// How many shared fixture pods [`deploy`] puts on each node (server, client, node-side probe,
/// hostPort server, and the second affinity backend of a one-node pool).
pub fn pods_per_node(
    facts: &ClusterFacts,
    fixtures: &Fixtures,
    needs: Needs,
    full: &std::collections::BTreeSet<usize>,
) -> BTreeMap<String, u32> {
    let has = |name: &str, n: &ClusterNode| fixtures.get(name).is_some_and(|f| f.pod_for(n).is_some());
    let nodes: Vec<(usize, &ClusterNode)> = facts
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.schedulable())
        .collect();
    let mut pools: BTreeMap<String, usize> = BTreeMap::new();
    for (_, n) in &nodes {
        *pools.entry(n.pool()).or_default() += 1;
    }
    nodes
        .iter()
        .map(|&(i, n)| {
            let whole = full.contains(&i);
            let server = has("netexec-server", n);
            let host = whole && has("host-probe", n) && (n.os == Os::Linux || n.host_process() == Some(true));
            let alone = pools.get(&n.pool()) == Some(&1) && has("affinity-backend", n);
            let count = [
                server,
                has("netexec-client", n),
                host,
                whole && server && needs.host_port,
                alone,
            ]
            .into_iter()
            .filter(|b| *b)
            .count();
            (n.name.clone(), u32::try_from(count).unwrap_or(u32::MAX))
        })
        .collect()
}

/// A fixture pod to await: its name, the node it is meant for, and that node's OS.
type Wanted = (String, String, Os);

/// The fixtures a deployment stamps its pods from, by role.
struct Kit<'a> {
    server: &'a Fixture,
    client: &'a Fixture,
    host: &'a Fixture,
    affinity: &'a Fixture,
}

impl<'a> Kit<'a> {
    /// The run's fixtures by role, or the one that is missing.
    fn of(fixtures: &'a Fixtures) -> Result<Self, DeployError> {
        let fixture = |name: &str| {
            fixtures
                .get(name)
                .ok_or_else(|| DeployError::MissingFixture(name.into()))
        };
        Ok(Self {
            server: fixture("netexec-server")?,
            client: fixture("netexec-client")?,
            host: fixture("host-probe")?,
            affinity: fixture("affinity-backend")?,
        })
    }
}

/// What one [`deploy`] call stamps, for which nodes and under which names: the stamping's
/// input, read by every later phase.
struct Plan<'a> {
    ns: &'a str,
    run_id: &'a str,
    facts: &'a ClusterFacts,
    kit: Kit<'a>,
    registry: &'a Registry,
    needs: Needs,
    scope: Scope<'a>,
    /// The labels of everything the run creates.
    labels: BTreeMap<String, String>,
    /// The first call, which deploys the shared fixtures (not one adding promoted nodes').
    base: bool,
    /// The schedulable nodes this call deploys to, with their indexes into the facts.
    nodes: Vec<(usize, &'a ClusterNode)>,
    /// The pools of those nodes, by name (index: the pool's affinity service).
    pools: BTreeMap<String, Vec<&'a ClusterNode>>,
}

impl Plan<'_> {
    /// `pod` stamped for `node` under `name` with `labels`, the run's mirrors and pull secrets.
    fn stamp(
        &self,
        pod: &serde_json::Value,
        name: &str,
        node: &ClusterNode,
        labels: &BTreeMap<String, String>,
    ) -> serde_json::Value {
        fixture::stamp(pod, name, node, labels, self.registry)
    }

    /// A Service of the run named `name` with `spec`.
    fn service(&self, name: &str, spec: serde_json::Value) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": self.labels}, "spec": spec})
    }

    /// The selector of node `i`'s server pod.
    fn server_selector(&self, i: usize) -> serde_json::Value {
        json!({"mixcheck.io/server": i.to_string(), RUN_LABEL: self.run_id})
    }

    /// The index of the pool whose affinity backends include `node`'s server (one of the
    /// pool's first two nodes).
    fn affinity_pool_of(&self, node: &ClusterNode) -> Option<usize> {
        self.pools
            .iter()
            .enumerate()
            .find(|(_, (_, members))| members.iter().take(2).any(|m| m.name == node.name))
            .map(|(pi, _)| pi)
    }
}

/// The schedulable nodes a call deploys to: all of them on the first call, else those `scope`
/// gives every fixture.
fn deployed_nodes<'a>(facts: &'a ClusterFacts, scope: Scope<'_>) -> Vec<(usize, &'a ClusterNode)> {
    let base = scope.before.is_none();
    facts
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| n.schedulable() && (base || scope.full.contains(i)))
        .collect()
}

/// The pools of `nodes`, by name, each with its members in order.
fn pools_of<'a>(nodes: &[(usize, &'a ClusterNode)]) -> BTreeMap<String, Vec<&'a ClusterNode>> {
    let mut pools: BTreeMap<String, Vec<&ClusterNode>> = BTreeMap::new();
    for (_, n) in nodes {
        pools.entry(n.pool()).or_default().push(n);
    }
    pools
}

/// What the applying phase hands to the waiting: the pods to await by role, the pods the
/// cluster refused, and the names the deployment has so far.
#[derive(Default)]
struct Applied {
    servers: Vec<Wanted>,
    clients: Vec<Wanted>,
    hosts: Vec<Wanted>,
    host_ports: Vec<Wanted>,
    affinity: Vec<Wanted>,
    /// Fixture pods the cluster refused, by name.
    refused: BTreeMap<String, Refusal>,
    /// Pool → the name of its LoadBalancer service.
    lb_pools: BTreeMap<String, String>,
    /// The hostnames, the headless, ExternalName and affinity services, the refused services.
    dep: Deployment,
}

impl Applied {
    /// How many fixture pods were applied, refused or not.
    fn total(&self) -> usize {
        self.servers.len() + self.clients.len() + self.hosts.len() + self.affinity.len() + self.host_ports.len()
    }

    /// The pods to await, every role's in turn, less those the cluster refused.
    fn awaited(&self) -> Vec<Wanted> {
        self.servers
            .iter()
            .chain(&self.clients)
            .chain(&self.hosts)
            .chain(&self.affinity)
            .chain(&self.host_ports)
            .filter(|(name, _, _)| !self.refused.contains_key(name))
            .cloned()
            .collect()
    }
}

/// How many fixture pods are applied at once: one after the other, a 5,000-node cluster's ten
/// thousand cost a round trip each (13 s on the bundled cluster; minutes at tens of
/// milliseconds each through a real API server); a few at a time stay well within an API
/// server's fair share for one client (API Priority and Fairness).
const PODS_AT_ONCE: usize = 16;

/// How many stamped pods wait to be applied before they are applied together.
const PODS_QUEUED: usize = 256;

/// The applying phase: stamps the plan's objects and applies them (pods [`PODS_AT_ONCE`] at a
/// time, in the order stamped), counting them on the deploy line and keeping what the cluster
/// refused.
struct Applying<'p, 'a> {
    plan: &'p Plan<'a>,
    pods: Api<Pod>,
    services: Api<Service>,
    bar: &'p ProgressBar,
    out: Applied,
    /// Pods stamped and not yet applied: (name, object).
    queued: Vec<(String, serde_json::Value)>,
}

impl<'p, 'a> Applying<'p, 'a> {
    fn new(plan: &'p Plan<'a>, pods: Api<Pod>, services: Api<Service>, bar: &'p ProgressBar) -> Self {
        Self {
            plan,
            pods,
            services,
            bar,
            out: Applied::default(),
            queued: Vec::new(),
        }
    }

    /// Queues a fixture pod to apply (see [`apply`]), applying the queue once it is long.
    async fn pod(&mut self, name: &str, pod: serde_json::Value) -> Result<(), DeployError> {
        self.queued.push((name.to_string(), pod));
        if self.queued.len() >= PODS_QUEUED {
            self.flush().await?;
        }
        Ok(())
    }

    /// Applies the queued pods, several at once, each counted as it is done; the first error
    /// that is not a refusal ends the deployment once those under way are answered.
    async fn flush(&mut self) -> Result<(), DeployError> {
        use futures::StreamExt as _;
        let queued = std::mem::take(&mut self.queued);
        let pods = &self.pods;
        let bar = self.bar;
        let mut answers = futures::stream::iter(queued.iter().map(|(name, pod)| async move {
            let mut refused = BTreeMap::new();
            let applied = apply(pods, "pod", name, pod, &mut refused).await;
            bar.inc(1);
            applied.map(|()| refused)
        }))
        .buffer_unordered(PODS_AT_ONCE);
        let mut failed = None;
        while let Some(answer) = answers.next().await {
            match answer {
                Ok(refused) => self.out.refused.extend(refused),
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Applies a service of the run (see [`apply`]) and counts it.
    async fn service(&mut self, name: &str, svc: &serde_json::Value) -> Result<(), DeployError> {
        apply_service(&self.services, name, svc, &mut self.out.dep.refused_services).await?;
        self.bar.inc(1);
        Ok(())
    }

    /// Every object of the plan: each node's fixtures, then (first call only) the run's shared
    /// services and the pools' affinity backends.
    async fn all(mut self) -> Result<Applied, DeployError> {
        let plan = self.plan;
        for &(i, node) in &plan.nodes {
            self.node(i, node).await?;
        }
        if plan.base {
            self.shared_services().await?;
            self.affinity_pools().await?;
            self.hns_subjects().await?;
        }
        self.flush().await?;
        Ok(self.out)
    }

    /// One node's fixtures: its server (on full coverage also its hostPort server and
    /// services), its client and (on full coverage) its node-side probe.
    async fn node(&mut self, i: usize, node: &'a ClusterNode) -> Result<(), DeployError> {
        let plan = self.plan;
        let whole = plan.scope.full.contains(&i);
        if let Some(pod) = plan.kit.server.pod_for(node) {
            if plan.base {
                self.server(i, node, pod).await?;
            }
            // A node on light coverage gets its server and client only.
            if whole {
                if plan.needs.host_port {
                    self.host_port(i, node, pod).await?;
                }
                self.node_services(i, node).await?;
            }
        }
        if plan.base
            && let Some(pod) = plan.kit.client.pod_for(node)
        {
            let name = format!("cli-{i}");
            let p = plan.stamp(pod, &name, node, &plan.labels);
            self.pod(&name, p).await?;
            self.out.clients.push((name, node.name.clone(), node.os));
        }
        let host_ok = match node.os {
            Os::Linux => true,
            Os::Windows => node.host_process() == Some(true),
        };
        if whole
            && host_ok
            && let Some(pod) = plan.kit.host.pod_for(node)
        {
            let name = format!("host-{i}");
            let p = plan.stamp(pod, &name, node, &plan.labels);
            self.pod(&name, p).await?;
            self.out.hosts.push((name, node.name.clone(), node.os));
        }
        Ok(())
    }

    /// Node `i`'s server `srv-i`: labelled with its index (and its pool's, where it is an
    /// affinity backend), with the hostname and subdomain of its FQDN.
    async fn server(&mut self, i: usize, node: &ClusterNode, pod: &serde_json::Value) -> Result<(), DeployError> {
        let plan = self.plan;
        let name = format!("srv-{i}");
        let mut l = plan.labels.clone();
        l.insert("mixcheck.io/server".into(), i.to_string());
        l.insert(SHARED_SERVER.0.into(), SHARED_SERVER.1.into());
        if let Some(pi) = plan.affinity_pool_of(node) {
            l.insert("mixcheck.io/affinity-pool".into(), pi.to_string());
        }
        let mut p = plan.stamp(pod, &name, node, &l);
        p["spec"]["hostname"] = json!(name);
        p["spec"]["subdomain"] = json!(SUBDOMAIN);
        self.pod(&name, p).await?;
        self.out.dep.hostnames.insert(node.name.clone(), name.clone());
        self.out.servers.push((name, node.name.clone(), node.os));
        Ok(())
    }

    /// Node `i`'s hostPort server `hp-i` (see [`host_port_pod`]).
    async fn host_port(&mut self, i: usize, node: &ClusterNode, pod: &serde_json::Value) -> Result<(), DeployError> {
        let plan = self.plan;
        let name = format!("hp-{i}");
        let p = host_port_pod(&plan.stamp(pod, &name, node, &plan.labels));
        self.pod(&name, p).await?;
        self.out.host_ports.push((name, node.name.clone(), node.os));
        Ok(())
    }

    /// The services over node `i`'s server: its NodePort `svc-i`, headless `hl-i` and
    /// ExternalName `xn-i`, and its pool's LoadBalancer where the pool has none yet.
    async fn node_services(&mut self, i: usize, node: &ClusterNode) -> Result<(), DeployError> {
        let plan = self.plan;
        let svc_name = format!("svc-{i}");
        // PreferDualStack: an IPv6 ClusterIP too where the cluster is dual-stack
        // (NET-IPV6-DUALSTACK); a single-stack cluster gives it its one family (K8SDS).
        let s = plan.service(
            &svc_name,
            json!({
                "type": "NodePort",
                "ipFamilyPolicy": "PreferDualStack",
                "selector": plan.server_selector(i),
                "ports": [
                    {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                    {"name": "udp", "port": 90, "targetPort": 8081, "protocol": "UDP"}
                ]
            }),
        );
        self.service(&svc_name, &s).await?;
        // SVC-TYPES: headless and ExternalName services over the same server; a
        // LoadBalancer over the first server of each pool (one per pool, not per node: a
        // cloud load balancer is slow to provision and is billed).
        let selector = plan.server_selector(i);
        let mut extra = vec![
            (
                format!("hl-{i}"),
                json!({"clusterIP": "None", "selector": selector, "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}),
            ),
            (
                format!("xn-{i}"),
                json!({"type": "ExternalName", "externalName": format!("svc-{i}.{}.svc.{}", plan.ns, plan.facts.cluster_domain())}),
            ),
        ];
        if plan.base
            && let std::collections::btree_map::Entry::Vacant(slot) = self.out.lb_pools.entry(node.pool())
        {
            let name = format!("lb-{}", node.pool());
            slot.insert(name.clone());
            extra.push((
                name,
                json!({"type": "LoadBalancer", "selector": selector, "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
            ));
        }
        for (svc_name, spec) in extra {
            let s = plan.service(&svc_name, spec);
            self.service(&svc_name, &s).await?;
        }
        self.out.dep.headless.insert(node.name.clone(), format!("hl-{i}"));
        self.out.dep.external_names.insert(node.name.clone(), format!("xn-{i}"));
        Ok(())
    }

    /// The services over every server: the headless one that gives server pods their FQDN and
    /// the `externalTrafficPolicy: Local` NodePort.
    async fn shared_services(&mut self) -> Result<(), DeployError> {
        let plan = self.plan;
        let headless = plan.service(
            SUBDOMAIN,
            json!({"clusterIP": "None", "selector": {SHARED_SERVER.0: SHARED_SERVER.1, RUN_LABEL: plan.run_id},
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}),
        );
        self.service(SUBDOMAIN, &headless).await?;
        // NET-LOCAL-POLICY-NON-DSR: one `externalTrafficPolicy: Local` NodePort over every server;
        // a node's NodePort then answers from that node's own server only.
        let local = plan.service(
            LOCAL_SERVICE,
            json!({"type": "NodePort", "externalTrafficPolicy": "Local",
                "selector": {SHARED_SERVER.0: SHARED_SERVER.1, RUN_LABEL: plan.run_id},
                "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
        );
        self.service(LOCAL_SERVICE, &local).await
    }

    /// Two affinity backends per pool: the servers of its first two nodes, and where the pool
    /// has one node, one backend pod beside its server (each pod takes one of the node's pod
    /// slots: EKS Windows nodes have few); and the pool's `sessionAffinity: ClientIP` service.
    async fn affinity_pools(&mut self) -> Result<(), DeployError> {
        let plan = self.plan;
        for (pi, (pool, members)) in plan.pools.iter().enumerate() {
            if members.first().and_then(|n| plan.kit.affinity.pod_for(n)).is_none() {
                continue;
            }
            let backends = self.affinity_backends(pi, members).await?;
            let svc_name = format!("aff-{pi}");
            let s = plan.service(
                &svc_name,
                json!({"selector": {"mixcheck.io/affinity-pool": pi.to_string(), RUN_LABEL: plan.run_id}, "sessionAffinity": "ClientIP",
                    "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
            );
            self.service(&svc_name, &s).await?;
            self.out.dep.affinity.insert(
                pool.clone(),
                ServiceInfo {
                    name: svc_name,
                    backends,
                    ..ServiceInfo::default()
                },
            );
        }
        Ok(())
    }

    /// The nodes of pool `pi`'s two backends: the servers that run, then the extra backend
    /// pods it applies to make up two.
    async fn affinity_backends(&mut self, pi: usize, members: &[&ClusterNode]) -> Result<Vec<String>, DeployError> {
        let plan = self.plan;
        let mut backends: Vec<String> = members
            .iter()
            .take(2)
            .filter(|n| {
                self.out
                    .dep
                    .hostnames
                    .get(&n.name)
                    .is_some_and(|h| !self.out.refused.contains_key(h))
            })
            .map(|n| n.name.clone())
            .collect();
        for k in backends.len()..2 {
            let node = members[k % members.len()];
            let Some(pod) = plan.kit.affinity.pod_for(node) else {
                continue;
            };
            let name = format!("aff-{pi}-{k}");
            let mut l = plan.labels.clone();
            l.insert("mixcheck.io/affinity-pool".into(), pi.to_string());
            let p = plan.stamp(pod, &name, node, &l);
            self.pod(&name, p).await?;
            self.out.affinity.push((name, node.name.clone(), node.os));
            if !backends.contains(&node.name) {
                backends.push(node.name.clone());
            }
        }
        Ok(backends)
    }
}

/// Says how many fixture pods were deployed and which objects the cluster refused.
fn say_deployed(applied: &Applied, ns: &str, progress: &Progress) {
    progress.say(&format!(
        "Deployed {} fixture pods in namespace {ns}; waiting for them (Windows images pull slowly)…",
        applied.total()
    ));
    let refused = &applied.refused;
    if !refused.is_empty() {
        progress.say(&format!(
            "The cluster refused {} of the run's objects ({}); only the checks that need them are affected: {}",
            refused.len(),
            refused.keys().cloned().collect::<Vec<_>>().join(", "),
            refused.values().next().map(|r| r.message.as_str()).unwrap_or_default()
        ));
    }
}

/// Says which awaited pods will not start and why (the first [`WAITING_SHOWN`]), with a hint
/// where a host port or the pod slots are taken.
fn say_unstarted(awaited: &[Wanted], placed: &BTreeMap<String, Placed>, progress: &Progress) {
    let unpullable: Vec<&pulls::Unpullable> = awaited
        .iter()
        .filter_map(|(name, _, _)| placed.get(name)?.unpullable.as_ref())
        .collect();
    if !unpullable.is_empty() {
        let mut lines = vec![format!(
            "{} fixture pod{} cannot have {} images; the checks that need {} are indeterminate:",
            unpullable.len(),
            if unpullable.len() == 1 { "" } else { "s" },
            if unpullable.len() == 1 { "its" } else { "their" },
            if unpullable.len() == 1 { "it" } else { "them" }
        )];
        lines.extend(pulls::summary(&unpullable));
        progress.say(&lines.join("\n"));
    }
    let broken: Vec<String> = awaited
        .iter()
        .filter_map(|(name, node, _)| {
            let p = placed.get(name).filter(|p| p.unpullable.is_none())?;
            let why = p.problem.as_deref()?;
            Some(format!(
                "    {name} for {node}: {}",
                crate::cluster::progress::shorten(why, 200)
            ))
        })
        .collect();
    if broken.is_empty() {
        return;
    }
    let mut lines = vec![format!(
        "{} fixture pod{} will not start; the checks that need {} are error:",
        broken.len(),
        if broken.len() == 1 { "" } else { "s" },
        if broken.len() == 1 { "it" } else { "them" }
    )];
    lines.extend(broken.iter().take(WAITING_SHOWN).cloned());
    if broken.len() > WAITING_SHOWN {
        lines.push(format!(
            "    … and {} more (report.md lists them)",
            broken.len() - WAITING_SHOWN
        ));
    }
    if broken
        .iter()
        .any(|l| l.contains("didn't have free ports") || crate::cluster::scheduling::room_frees_up(l))
    {
        lines.push(
            "  a host port or the node's pod slots are taken — by a kept or killed mixcheck run? `mixcheck cleanup` deletes its namespaces"
                .to_string(),
        );
    }
    progress.say(&lines.join("\n"));
}

/// What verifying placement hands to the addressing: the deployment with every awaited pod
/// placed by role, and the pools' LoadBalancer services.
struct Placement {
    dep: Deployment,
    /// Pool → the name of its LoadBalancer service.
    lb_pools: BTreeMap<String, String>,
}

/// Files each applied pod's placement under its role and node; a refused pod is placed with
/// the refusal as its problem.
fn place(applied: Applied, mut placed: BTreeMap<String, Placed>) -> Placement {
    for (name, r) in &applied.refused {
        placed.insert(
            name.clone(),
            Placed {
                name: name.clone(),
                ip: String::new(),
                ipv6: None,
                problem: Some(r.problem()),
                policy: r.policy,
                unpullable: None,
            },
        );
    }
    let by_node = |wanted: &[Wanted]| -> BTreeMap<String, Placed> {
        wanted
            .iter()
            .filter_map(|(name, node, _)| Some((node.clone(), placed.get(name)?.clone())))
            .collect()
    };
    let mut dep = applied.dep;
    dep.servers.extend(by_node(&applied.servers));
    dep.clients.extend(by_node(&applied.clients));
    dep.hosts.extend(by_node(&applied.hosts));
    dep.host_ports.extend(by_node(&applied.host_ports));
    Placement {
        dep,
        lb_pools: applied.lb_pools,
    }
}

/// A service's addresses as the cluster gave them (no backends).
fn service_info(s: &Service) -> ServiceInfo {
    let spec = s.spec.clone().unwrap_or_default();
    let ports = spec.ports.unwrap_or_default();
    let np = |proto: &str| {
        ports
            .iter()
            .find(|p| p.protocol.as_deref() == Some(proto))
            .and_then(|p| p.node_port)
            .and_then(|p| u16::try_from(p).ok())
    };
    ServiceInfo {
        name: s.metadata.name.clone().unwrap_or_default(),
        cluster_ip: spec.cluster_ip.unwrap_or_default(),
        cluster_ipv6: spec
            .cluster_ips
            .unwrap_or_default()
            .into_iter()
            .find(|ip| ip.contains(':')),
        node_ports: (np("TCP"), np("UDP")),
        backends: Vec::new(),
    }
}

/// Reads the run's services back and files their addresses: each node's NodePort and Local
/// service, the pools' LoadBalancers with their ingress, the affinity services (keeping their
/// backends).
async fn address_services(
    services: &Api<Service>,
    plan: &Plan<'_>,
    placement: Placement,
) -> Result<Deployment, DeployError> {
    let Placement { mut dep, lb_pools } = placement;
    let list = services
        .list(&ListParams::default())
        .await
        .map_err(api_err("service list"))?;
    let by_name: BTreeMap<String, ServiceInfo> = list
        .items
        .iter()
        .map(|s| (s.metadata.name.clone().unwrap_or_default(), service_info(s)))
        .collect();
    for (i, node) in &plan.nodes {
        if let Some(s) = by_name.get(&format!("svc-{i}")) {
            dep.services.insert(node.name.clone(), s.clone());
        }
        if dep.hostnames.contains_key(&node.name)
            && let Some(s) = by_name.get(LOCAL_SERVICE)
        {
            dep.local_services.insert(node.name.clone(), s.clone());
        }
    }
    for (pool, lb) in &lb_pools {
        if let Some(s) = list.items.iter().find(|s| s.metadata.name.as_deref() == Some(lb)) {
            let ingress = ingress_of(s);
            dep.load_balancers.insert(
                pool.clone(),
                LoadBalancer {
                    name: lb.clone(),
                    ingress,
                },
            );
        }
    }
    if plan.base {
        subjects::address(&mut dep.hns, &by_name, |name| {
            let s = list.items.iter().find(|s| s.metadata.name.as_deref() == Some(name))?;
            Some(ingress_of(s))
        });
    }
    for s in dep.affinity.values_mut() {
        if let Some(found) = by_name.get(&s.name) {
            let backends = std::mem::take(&mut s.backends);
            *s = ServiceInfo {
                backends,
                ..found.clone()
            };
        }
    }
    Ok(dep)
}

/// The per-node services (name, server IP) whose Endpoints must list their server before flows
/// through them settle: each fully covered node's, where its server (this call's, else the one
/// deployed before) is usable.
fn listed_servers(plan: &Plan<'_>, dep: &Deployment) -> Vec<(String, String)> {
    let servers = plan.scope.before.map_or(&dep.servers, |b| &b.servers);
    plan.nodes
        .iter()
        .filter(|(i, _)| plan.scope.full.contains(i))
        .filter_map(|(i, n)| {
            let server = servers.get(&n.name).filter(|p| p.problem.is_none())?;
            Some((format!("svc-{i}"), server.ip.clone()))
        })
        .collect()
}

/// Deploys the network fixtures on every schedulable node (the full set on the nodes `scope`
/// names, a server and a client on the others) and awaits them (within `deadline`): stamps and
/// applies them, awaits the pods, verifies where they landed, reads the services' addresses
/// and waits for the services to list their servers.
#[allow(clippy::too_many_arguments)] // the run's identity, its cluster and its limits, each distinct
pub async fn deploy(
    client: &kube::Client,
    ns: &str,
    run_id: &str,
    facts: &ClusterFacts,
    fixtures: &Fixtures,
    registry: &Registry,
    needs: Needs,
    scope: Scope<'_>,
    deadline: Instant,
    progress: &Progress,
) -> Result<Deployment, DeployError> {
    let bar = progress.bar(Phase::Deploy);
    let nodes = deployed_nodes(facts, scope);
    let plan = Plan {
        ns,
        run_id,
        facts,
        kit: Kit::of(fixtures)?,
        registry,
        needs,
        scope,
        labels: run_labels(run_id),
        base: scope.before.is_none(),
        pools: pools_of(&nodes),
        nodes,
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let applied = Applying::new(&plan, pods.clone(), services.clone(), &bar).all().await?;
    bar.abandon_with_message("done"); // `finish` would set the position to the (unknown) length
    say_deployed(&applied, ns, progress);
    if let Some(told) = scope.applied {
        told.send_replace(Some(true));
    }
    let awaited = applied.awaited();
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let placed = await_pods(scope.pods, &events, &awaited, deadline, progress).await;
    tracing::debug!("fixture pods settled");
    say_unstarted(&awaited, &placed, progress);
    let mut dep = address_services(&services, &plan, place(applied, placed)).await?;
    // Flows through a Service settle from when it lists its backend, not from when the pod is
    // Ready: the endpoints controller lags behind (upstream's KubeProxyEndpointLagTimeout).
    await_endpoints(client, ns, &listed_servers(&plan, &dep), deadline).await;
    dep.ready_at = Some(std::time::Instant::now());
    Ok(dep)
}

/// How long the endpoints controller may take to list a Ready server in its service.
const ENDPOINTS_LAG: Duration = Duration::from_secs(30);

/// Waits until each service of `listed` (name, backend IP) lists its backend in its Endpoints,
/// within [`ENDPOINTS_LAG`] and the run's deadline; a cluster that serves no Endpoints (or an
/// error reading them) is not waited for.
async fn await_endpoints(client: &kube::Client, ns: &str, listed: &[(String, String)], deadline: Instant) {
    use k8s_openapi::api::core::v1::Endpoints;
    let api: Api<Endpoints> = Api::namespaced(client.clone(), ns);
    let until = (Instant::now() + ENDPOINTS_LAG).min(deadline);
    while Instant::now() < until {
        let Ok(Ok(all)) = tokio::time::timeout(Duration::from_secs(10), api.list(&ListParams::default())).await else {
            return;
        };
        let has = |name: &str, ip: &str| {
            all.items.iter().any(|e| {
                e.metadata.name.as_deref() == Some(name)
                    && e.subsets
                        .iter()
                        .flatten()
                        .flat_map(|s| s.addresses.iter().flatten())
                        .any(|a| a.ip == ip)
            })
        };
        if listed.iter().all(|(name, ip)| has(name, ip)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The first ingress address (IP, else hostname) a LoadBalancer service got.
pub fn ingress_of(s: &Service) -> Option<String> {
    s.status
        .as_ref()
        .and_then(|st| st.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .and_then(|i| i.first())
        .and_then(|i| i.ip.clone().or_else(|| i.hostname.clone()))
}

/// A pod's state with its Warnings: settled or not, its problem, and the image its registry
/// will not give (settled at once, naming the flag that gets it).
fn pull_state(p: &Pod, warned: &[Warning]) -> (bool, Option<String>, Option<pulls::Unpullable>) {
    let warnings: Vec<pulls::Warning<'_>> = warned.iter().map(Warning::as_pull).collect();
    match pulls::unpullable(p, &warnings) {
        Some(u) => (true, Some(u.problem()), Some(u)),
        None => {
            let (settled, problem) = pod_state(p, pulls::failures(&warnings, None));
            (settled, problem, None)
        }
    }
}

/// Why a pod is not (yet) usable, or None when it is running and ready; `pull_failures` is how
/// often the kubelet failed its image pulls.
fn pod_state(p: &Pod, pull_failures: i32) -> (bool, Option<String>) {
    let status = p.status.clone().unwrap_or_default();
    let phase = status.phase.clone().unwrap_or_default();
    let ready = crate::cluster::podwatch::is_ready(&status);
    if phase == "Running" && ready {
        return (true, None);
    }
    if phase == "Failed" || phase == "Succeeded" {
        let why = format!(
            "pod {phase}: {} {}",
            status.reason.unwrap_or_default(),
            status.message.unwrap_or_default()
        );
        return (true, Some(why.trim().to_string()));
    }
    for c in status.container_statuses.unwrap_or_default() {
        if let Some(w) = c.state.and_then(|s| s.waiting)
            && let Some(reason) = w.reason
            && crate::cluster::podwatch::terminal_waiting(
                &reason,
                w.message.as_deref().unwrap_or_default(),
                pull_failures,
            )
        {
            return (
                true,
                Some(format!(
                    "container {}: {reason}: {}",
                    c.name,
                    w.message.unwrap_or_default()
                )),
            );
        }
    }
    (false, Some(format!("pod {phase}, not ready")))
}

/// Awaits the `wanted` pods until each is settled (ready, failed, never starting) or its OS's
/// timeout or `deadline` has passed, saying what holds them up: each one's placement, with the
/// problem that keeps it from use. The pods and their warnings are read from the run's pod
/// watch (`watch`), never by listing the namespace: at 5,000 nodes a list of its pods is ten
/// thousand objects, and its events several times that; the events of the few pods a progress
/// report names are asked for by pod.
async fn await_pods(
    watch: &PodWatch,
    events: &Api<Event>,
    wanted: &[Wanted],
    deadline: Instant,
    progress: &Progress,
) -> BTreeMap<String, Placed> {
    let settled = progress.bar(Phase::Wait);
    settled.set_length(u64::try_from(wanted.len()).unwrap_or(u64::MAX));
    let started = Instant::now();
    let mut done: BTreeMap<String, Placed> = BTreeMap::new();
    let mut last_report = started;
    let mut unschedulable_since: BTreeMap<String, Instant> = BTreeMap::new();
    let mut changes = watch.subscribe();
    loop {
        changes.mark_unchanged();
        let mut pending = 0;
        for (name, node, os) in wanted {
            if done.contains_key(name) {
                continue;
            }
            let timed_out = started.elapsed() > ready_timeout(*os) || Instant::now() >= deadline;
            let view = watch.view(name);
            let Some(p) = view.pod.as_deref() else {
                if timed_out {
                    done.insert(name.clone(), placed(name, "", Some("the pod does not exist".into())));
                } else {
                    pending += 1;
                }
                continue;
            };
            let (mut settled, mut problem, unpullable) = pull_state(p, &view.warnings);
            if !settled && let Some(why) = sandbox_failure(&view.warnings) {
                settled = true;
                problem = Some(why);
            }
            if !settled && let Some(why) = scheduling_failure(p, &view.warnings) {
                // A lasting reason (a host port taken, a selector no node matches) is settled
                // after a short grace; pod slots and a node's transient taints are waited out.
                let since = *unschedulable_since.entry(name.clone()).or_insert_with(Instant::now);
                if !transient_unschedulable(&why) && since.elapsed() >= UNSCHEDULABLE_GRACE {
                    settled = true;
                    problem = Some(format!("unschedulable: {why}"));
                }
            }
            if settled || timed_out {
                let problem = match problem {
                    Some(why) if timed_out && !settled => {
                        Some(format!("not ready within {}s: {why}", ready_timeout(*os).as_secs()))
                    }
                    other => other,
                };
                done.insert(name.clone(), placement(p, node, problem, unpullable));
            } else {
                pending += 1;
            }
        }
        settled.set_position(u64::try_from(done.len()).unwrap_or(u64::MAX));
        if pending == 0 {
            settled.finish_with_message("done");
            break;
        }
        settled.set_message(format!("({pending} pending, {}s)", started.elapsed().as_secs()));
        // The first word after 5 s (a pod that will not schedule says why by then), then every 10 s.
        let first = started.elapsed() >= Duration::from_secs(5) && last_report <= started;
        if first || last_report.elapsed() > Duration::from_secs(10) {
            let awaited: Vec<&Wanted> = wanted.iter().filter(|(name, _, _)| !done.contains_key(name)).collect();
            progress.say(&report_waiting(watch, events, &awaited, pending, started.elapsed()).await);
            last_report = Instant::now();
        }
        // The next look once the watch saw something (a moment later, so that the changes of
        // pods starting together are read together), or after a while for the timeouts.
        if tokio::time::timeout(Duration::from_millis(250), changes.changed())
            .await
            .is_ok_and(|r| r.is_ok())
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    done
}

/// A settled pod's placement: where it landed and its addresses, with its problem.
fn placement(p: &Pod, node: &str, problem: Option<String>, unpullable: Option<pulls::Unpullable>) -> Placed {
    let name = p.metadata.name.as_deref().unwrap_or_default();
    let landed = p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
    let ip = p.status.as_ref().and_then(|s| s.pod_ip.clone()).unwrap_or_default();
    let ipv6 = p
        .status
        .as_ref()
        .and_then(|s| s.pod_ips.as_ref())
        .into_iter()
        .flatten()
        .map(|a| a.ip.clone())
        .find(|a| a.contains(':'));
    let problem = problem.or_else(|| (landed != node).then(|| format!("landed on node {landed}, not on {node}")));
    let mut placed = placed(name, &ip, problem);
    placed.ipv6 = ipv6;
    placed.unpullable = unpullable;
    placed
}

/// The progress report of [`await_pods`]: how many pods, for how long, and what holds up the
/// first [`WAITING_SHOWN`] of the `awaited` (their pods as the watch sees them, their events
/// asked for one pod at a time).
async fn report_waiting(
    watch: &PodWatch,
    events: &Api<Event>,
    awaited: &[&Wanted],
    pending: usize,
    elapsed: Duration,
) -> String {
    let mut lines = vec![format!(
        "  still waiting for {pending} fixture pod{} ({}s):",
        if pending == 1 { "" } else { "s" },
        elapsed.as_secs()
    )];
    let shown = &awaited[..awaited.len().min(WAITING_SHOWN)];
    // Their events asked for together, each within 5 s: a slow API server holds the wait up for
    // seconds at most.
    let own = futures::future::join_all(shown.iter().map(|(name, _, _)| async move {
        let about = ListParams::default().fields(&format!("involvedObject.name={name}"));
        match tokio::time::timeout(Duration::from_secs(5), events.list(&about)).await {
            Ok(Ok(list)) => list.items,
            _ => Vec::new(),
        }
    }))
    .await;
    for ((name, node, _), own) in shown.iter().zip(own) {
        lines.push(format!(
            "    {name} {}",
            waiting_on(watch.view(name).pod.as_deref(), node, &own)
        ));
    }
    if awaited.len() > WAITING_SHOWN {
        lines.push(format!("    … and {} more", awaited.len() - WAITING_SHOWN));
    }
    lines.join("\n")
}

fn placed(name: &str, ip: &str, problem: Option<String>) -> Placed {
    Placed {
        name: name.to_string(),
        ip: ip.to_string(),
        ipv6: None,
        problem,
        policy: false,
        unpullable: None,
    }
}

/// The run namespace's object as JSON (for `--keep` messages).
pub fn describe_keep(ns: &str) -> String {
    format!(
        "kept namespace {ns}: inspect with `kubectl get pods,svc -n {ns} -o wide`; delete with `kubectl delete namespace {ns}` or `mixcheck cleanup`"
    )
}

pub mod subjects;
#[cfg(test)]
mod tests;
