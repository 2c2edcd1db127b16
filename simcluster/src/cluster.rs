//! Starting and stopping a bundled cluster: listener, certificates, token, the objects a fresh
//! cluster holds (namespaces, nodes, leases, the add-ons of [`crate::node::addons`]), the namespace
//! controller, and the kubeconfig.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::api::tls::{Certificates, TlsError};
use crate::api::{self, Shared};
use crate::config::profile::{self, NodeProfile};
use crate::config::topology::Topology;
use crate::node::exec::SimRuntime;
use crate::node::images::Catalogue;
use crate::node::kubelet::Kubelets;
use crate::node::logs::LogBook;
use crate::node::runtime::ContainerRuntime;
use crate::store::api_error::ApiError;
use crate::store::resources;
use crate::store::{EventType, Store, StoreConfig, TryRecvError};
use crate::{api::kubeconfig, node::objects};
use crate::{control::controllers, control::scheduler};

/// Errors starting a cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot listen on {addr}: {cause}")]
    Listen { addr: SocketAddr, cause: std::io::Error },
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("cannot register the topology's objects: {0}")]
    Seed(#[from] ApiError),
    #[error("cannot write the kubeconfig {path}: {cause}")]
    Kubeconfig { path: String, cause: std::io::Error },
    /// A fault added after the topology was loaded cannot occur on its node
    /// ([`Topology::check_fault`]).
    #[error("{0}")]
    Fault(String),
}

/// How to start a cluster.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    pub topology: Topology,
    /// Where the API server listens; port 0 picks a free port.
    pub listen: SocketAddr,
    pub store: StoreConfig,
    /// How often watches that allow bookmarks get one.
    pub bookmark_interval: Duration,
    /// Answers exec'd commands; the minimal runtime when None.
    pub runtime: Option<Arc<dyn ContainerRuntime>>,
    /// Runs the kube-system workloads of the topology's profile (CoreDNS, kube-proxy, the CNI;
    /// see [`crate::node::addons`]). Without them the cluster has no DNS server.
    pub addons: bool,
    /// The most sockets the node listeners take before each NodePort becomes one socket on every
    /// node's address ([`crate::network::listeners`]); from the open-file limit when None.
    pub node_listeners: Option<usize>,
}

impl ClusterConfig {
    pub fn new(topology: Topology) -> Self {
        Self {
            topology,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            store: StoreConfig::default(),
            bookmark_interval: Duration::from_secs(10),
            runtime: None,
            addons: true,
            node_listeners: None,
        }
    }
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self::new(Topology::default_cluster())
    }
}

/// A running bundled cluster. Dropping it stops the server.
#[derive(Debug)]
pub struct Cluster {
    addr: SocketAddr,
    url: String,
    token: String,
    ca_pem: String,
    store: Arc<Store>,
    logs: Arc<LogBook>,
    node_ips: Vec<(String, Ipv4Addr)>,
    handle: axum_server::Handle<SocketAddr>,
    tasks: Vec<JoinHandle<()>>,
    /// The API's routes and TLS settings, to serve again after [`Cluster::restart_api_server`].
    app: axum::Router,
    tls: axum_server::tls_rustls::RustlsConfig,
}

/// Serves the API on `listener` over TLS until `handle` stops it (`simcluster_serve`).
fn serve_api(
    listener: std::net::TcpListener,
    addr: SocketAddr,
    tls: axum_server::tls_rustls::RustlsConfig,
    app: axum::Router,
    handle: axum_server::Handle<SocketAddr>,
) -> Result<JoinHandle<()>, ClusterError> {
    simcluster_serve::spawn(listener, tls, app, handle).map_err(|cause| ClusterError::Listen { addr, cause })
}

/// Picks a /24 inside 127.0.0.0/8 for this instance's node addresses, away from 127.0.0.x.
fn loopback_base() -> [u8; 3] {
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    [127, 1 + bytes[0] % 254, bytes[1]]
}

fn random_token() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

fn version_doc(topology: &Topology) -> Value {
    let (major, minor) = topology.version();
    json!({
        "major": major.to_string(),
        "minor": minor.to_string(),
        "gitVersion": topology.kubernetes_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.6",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

impl Cluster {
    /// Starts the API server and registers the topology's nodes.
    pub async fn start(config: ClusterConfig) -> Result<Self, ClusterError> {
        // Faults may have been added after loading (`--fault NODE:FAULT`): each must be one that
        // can occur on its node of this platform, else it would silently change nothing.
        config.topology.check_faults().map_err(ClusterError::Fault)?;
        let listener = std::net::TcpListener::bind(config.listen).map_err(|cause| ClusterError::Listen {
            addr: config.listen,
            cause,
        })?;
        listener.set_nonblocking(true).map_err(|cause| ClusterError::Listen {
            addr: config.listen,
            cause,
        })?;
        let addr = listener.local_addr().map_err(|cause| ClusterError::Listen {
            addr: config.listen,
            cause,
        })?;
        let certs = Certificates::generate(&[addr.ip()], &[])?;
        let tls = axum_server::tls_rustls::RustlsConfig::from_config(certs.server_config()?);
        let token = random_token();
        let store = Arc::new(Store::new(config.store.clone()));
        store.set_admission_policy(config.topology.admission.clone());
        let logs = Arc::new(LogBook::default());
        let profiles = Arc::new(seed(&store, &config.topology)?);
        let network = &config.topology.network;
        let listener_budget = config
            .node_listeners
            .unwrap_or_else(crate::network::listeners::listener_budget);
        // Private node addresses: the firewall stands on each NodePort before its Service is
        // stored, so that this machine is never refused there.
        let firewall = (!network.node_addresses_reachable).then(|| {
            Arc::new(crate::network::firewall::Firewall::new(
                profiles.iter().map(|p| p.ip).collect(),
                listener_budget,
            ))
        });
        let guard = firewall
            .clone()
            .map(|f| f as Arc<dyn crate::store::allocation::NodePortGuard>);
        let allocator = Arc::new(
            crate::store::allocation::Allocator::new(&network.service_cidr)
                .with_ipv6(network.dual_stack().then_some(network.service_cidr_v6.as_str()))
                .with_guard(guard),
        );
        crate::store::allocation::seed(&store, &allocator)?;
        let custom = if config.addons {
            crate::node::addons::install(&store, &config.topology, &profiles)?.custom_resources()
        } else {
            crate::api::custom::CustomResources::default()
        };
        let node_ips = profiles.iter().map(|p| (p.name.clone(), p.ip)).collect();
        let simnet = Arc::new(
            crate::network::apps::SimNet::new(
                store.clone(),
                profiles.clone(),
                crate::network::fabric::NetFacts::from_topology(&config.topology),
            )
            .with_policy_engine(config.topology.policy_engine()),
        );

        let catalogue = Arc::new(Catalogue::with_extra(&config.topology.images));
        let volumes = Arc::new(crate::node::exec::volumes::VolumeStore::new());
        let runtime: Arc<dyn ContainerRuntime> = match config.runtime.clone() {
            Some(r) => r,
            None => Arc::new(
                SimRuntime::new(store.clone(), profiles.clone())
                    .with_network(Arc::new(crate::node::exec::network::SimNetwork::new(simnet.clone())))
                    .with_volumes(volumes.clone())
                    .with_logs(logs.clone()),
            ),
        };
        let admin = crate::api::authorization::UserInfo::kubeadm_admin(config.topology.version());
        // The bootstrap ClusterRoles and ClusterRoleBindings, as objects.
        crate::api::rbac::bootstrap(&store, config.topology.version())?;
        let kubelets = Kubelets::new(store.clone(), logs.clone(), catalogue, profiles.clone(), volumes);
        let shared = Arc::new(Shared {
            store: store.clone(),
            logs: logs.clone(),
            runtime,
            profiles: profiles.clone(),
            cluster_version: config.topology.version(),
            allocator,
            version: version_doc(&config.topology),
            token: token.clone(),
            openapi_hash: format!("{:016X}", uuid::Uuid::new_v4().as_u64_pair().0),
            bookmark_interval: config.bookmark_interval,
            admin: admin.clone(),
            // RBAC over the stored roles and bindings; the admin stays cluster-admin.
            authorizer: Arc::new(crate::api::rbac::Rbac::new(store.clone(), admin)),
            kubelets: kubelets.clone(),
            forwarder: Arc::new(crate::node::forward::Forwarder::new(simnet.clone())),
            custom: Arc::new(custom),
            pages: Default::default(),
        });
        let handle = axum_server::Handle::new();
        let app = api::router(shared);
        let serve = serve_api(listener, addr, tls.clone(), app.clone(), handle.clone())?;
        let namespaces = tokio::spawn(namespace_controller(store.clone()));
        let reaper = tokio::spawn(pod_reaper(store.clone()));
        let cooling = tokio::spawn(crate::store::keep_cool(store.clone()));
        let scheduler = tokio::spawn(scheduler::run(store.clone()));
        let controllers = tokio::spawn(controllers::run(
            store.clone(),
            config.topology.version(),
            config.topology.timing.scale,
        ));
        let kubelets = tokio::spawn(kubelets.run());
        // Node addresses the machine cannot reach still get listeners, which answer no one.
        let (aligned, first_alignment) = tokio::sync::oneshot::channel();
        let listeners = tokio::spawn(crate::network::listeners::run(
            store.clone(),
            profiles.clone(),
            simnet.clone(),
            firewall,
            listener_budget,
            aligned,
        ));
        // Handed over with its listeners (and the firewall of private node addresses) in place.
        if tokio::time::timeout(Duration::from_secs(10), first_alignment)
            .await
            .is_err()
        {
            tracing::warn!("the node listeners were not in place after 10 s");
        }
        if config.addons && crate::node::addons::dns_can_run(&profiles) {
            // A real cluster is handed over with its DNS up.
            let scale = config.topology.timing.scale.clamp(1.0, 6.0);
            let timeout = Duration::from_secs_f64(10.0 * scale);
            if !crate::node::addons::wait_for_cluster_dns(&store, timeout).await {
                tracing::warn!("the cluster DNS has no ready endpoint after {timeout:?}");
            }
        }
        // Handed over in a steady state: what runs now is programmed on every node.
        simnet.settle_all();
        let stamping = tokio::spawn(crate::network::apps::keep_stamped(store.clone(), simnet.clone()));
        let mut tasks = vec![
            serve,
            namespaces,
            reaper,
            cooling,
            scheduler,
            controllers,
            kubelets,
            listeners,
            stamping,
        ];
        if config.topology.network.load_balancers
            && let Some(first) = profiles.first()
        {
            let pool = crate::control::loadbalancer::Pool::beside(first.ip, 250);
            tasks.push(tokio::spawn(crate::control::loadbalancer::run(store.clone(), pool)));
        }
        let host = match addr.ip() {
            IpAddr::V6(ip) => format!("[{ip}]"),
            IpAddr::V4(ip) if ip.is_unspecified() => "127.0.0.1".into(),
            IpAddr::V4(ip) => ip.to_string(),
        };
        Ok(Self {
            addr,
            url: format!("https://{host}:{}", addr.port()),
            token,
            ca_pem: certs.ca_pem,
            store,
            logs,
            node_ips,
            handle,
            tasks,
            app,
            tls,
        })
    }

    /// Restarts the API server as a control-plane upgrade or a crash does: every open
    /// connection — requests and watches — is cut, nothing listens for `down`, then the server
    /// listens again on the same address, with the same objects, certificate and token (the
    /// objects live in etcd, which a restart of kube-apiserver keeps). The nodes keep running.
    pub async fn restart_api_server(&mut self, down: Duration) -> Result<(), ClusterError> {
        self.handle.shutdown();
        if let Some(serve) = self.tasks.first_mut()
            && tokio::time::timeout(Duration::from_secs(5), &mut *serve).await.is_err()
        {
            serve.abort();
            let _ = serve.await;
        }
        tokio::time::sleep(down).await;
        let addr = self.addr;
        let listener = std::net::TcpListener::bind(addr).map_err(|cause| ClusterError::Listen { addr, cause })?;
        listener
            .set_nonblocking(true)
            .map_err(|cause| ClusterError::Listen { addr, cause })?;
        let handle = axum_server::Handle::new();
        let serve = serve_api(listener, addr, self.tls.clone(), self.app.clone(), handle.clone())?;
        self.handle = handle;
        match self.tasks.first_mut() {
            Some(first) => *first = serve,
            None => self.tasks.push(serve),
        }
        Ok(())
    }

    /// The address the API server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// The PEM of the CA that signed the serving certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    pub fn logs(&self) -> &Arc<LogBook> {
        &self.logs
    }

    /// Each node's InternalIP.
    pub fn node_ips(&self) -> &[(String, Ipv4Addr)] {
        &self.node_ips
    }

    /// The kubeconfig text for this cluster.
    pub fn kubeconfig(&self) -> String {
        kubeconfig::render(&self.url, &self.ca_pem, &self.token)
    }

    /// Writes the kubeconfig (mode 0600).
    pub fn write_kubeconfig(&self, path: &std::path::Path) -> Result<(), ClusterError> {
        kubeconfig::write(path, &self.kubeconfig()).map_err(|cause| ClusterError::Kubeconfig {
            path: path.display().to_string(),
            cause,
        })
    }

    /// Stops the server, letting open requests finish for up to a second.
    pub async fn shutdown(mut self) {
        self.handle.graceful_shutdown(Some(Duration::from_secs(1)));
        for task in self.tasks.drain(..) {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.handle.shutdown();
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// The objects a fresh cluster holds: system namespaces, the topology's nodes and their
/// leases. Returns the nodes' profiles.
fn seed(store: &Store, topology: &Topology) -> Result<Vec<NodeProfile>, ApiError> {
    let ns = resources::core("namespaces");
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        store.create(ns, "", json!({"metadata": {"name": name}}))?;
    }
    let ips = loopback_addresses(topology.nodes.len());
    let profiles = profile::profiles(topology, &ips);
    for (spec, p) in topology.nodes.iter().zip(&profiles) {
        store.create(resources::core("nodes"), "", objects::node_object(spec, p))?;
        if let Some(csinode) = objects::csinode_object(spec, p) {
            store.create(resources::named("storage.k8s.io", "csinodes"), "", csinode)?;
        }
        store.create(
            resources::named("coordination.k8s.io", "leases"),
            "kube-node-lease",
            objects::lease_object(&spec.name, p.has_fault(crate::config::faults::Fault::KubeletStopped)),
        )?;
    }
    Ok(profiles)
}

/// Node addresses on this machine's loopback: real listeners there answer its clients.
fn loopback_addresses(count: usize) -> Vec<Ipv4Addr> {
    let base = loopback_base();
    (0..count)
        .map(|i| {
            // 10.. upwards within this instance's /16 of 127.0.0.0/8.
            let n = 10 + i;
            Ipv4Addr::new(
                base[0],
                base[1],
                base[2].wrapping_add((n / 250) as u8),
                (n % 250) as u8 + 2,
            )
        })
        .collect()
}

/// How long the namespace controller leaves a terminating namespace alone before it sweeps
/// its contents (the upstream controller works through a rate-limited queue: clients that
/// delete a namespace and its objects in one go, as `kubectl delete -f` does, see them go
/// away one by one rather than all at once).
const NAMESPACE_SWEEP_DELAY: Duration = Duration::from_millis(1500);

/// Empties terminating namespaces and removes them (retrying while pods terminate).
async fn namespace_controller(store: Arc<Store>) {
    let ns_rt = resources::core("namespaces");
    let mut feed = store.subscribe();
    let mut pending: Vec<(String, tokio::time::Instant)> = Vec::new();
    let mut retry = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            event = feed.recv() => match event {
                Ok(e) if e.resource.plural == ns_rt.plural && e.resource.group.is_empty()
                    && e.kind == EventType::Modified && e.object.is_terminating() => {
                    let name = e.object.name().to_string();
                    if !pending.iter().any(|(n, _)| *n == name) {
                        pending.push((name, tokio::time::Instant::now() + NAMESPACE_SWEEP_DELAY));
                    }
                    continue;
                }
                Ok(_) => continue,
                Err(crate::store::RecvError::Lagged(_)) => {
                    let (all, _) = store.list(ns_rt, None);
                    for n in all.iter().filter(|n| n.is_terminating()) {
                        if !pending.iter().any(|(p, _)| p == n.name()) {
                            pending.push((n.name().to_string(), tokio::time::Instant::now()));
                        }
                    }
                }
            },
            _ = retry.tick() => {}
        }
        let now = tokio::time::Instant::now();
        let mut still = Vec::new();
        for (name, due) in pending.drain(..) {
            if due > now {
                still.push((name, due));
                continue;
            }
            match store.finalize_namespace(&name) {
                Ok(true) => {}
                Ok(false) => still.push((name, due)),
                Err(e) => {
                    tracing::warn!("namespace {name}: {e}");
                    still.push((name, due));
                }
            }
        }
        pending = still;
    }
}

/// The pod garbage collector's orphan rule: a terminating pod bound to a node that does not
/// exist has no kubelet to finish it, so it is removed once its grace period is over. It
/// follows the terminating pods from the store's changes (a look at every pod each half second
/// read 20,000 at 5,000 nodes), and looks at them all again when it fell behind the changes.
async fn pod_reaper(store: Arc<Store>) {
    let mut feed = store.subscribe();
    let mut terminating = all_terminating(&store);
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tick.tick().await;
        loop {
            match feed.try_recv() {
                Ok(e) if e.resource.group.is_empty() && e.resource.plural == "pods" => {
                    let key = (e.object.namespace().to_string(), e.object.name().to_string());
                    if e.kind == EventType::Deleted {
                        terminating.remove(&key);
                    } else if e.object.is_terminating() {
                        terminating.insert(key);
                    }
                }
                Ok(_) => {}
                Err(TryRecvError::Lagged(_)) => terminating = all_terminating(&store),
                Err(TryRecvError::Empty) => break,
            }
        }
        if !terminating.is_empty() {
            reap_orphans(&store, &mut terminating);
        }
    }
}

/// The terminating pods of the store, by namespace and name.
fn all_terminating(store: &Store) -> BTreeSet<(String, String)> {
    let (all, _) = store.list(resources::core("pods"), None);
    all.iter()
        .filter(|p| p.is_terminating())
        .map(|p| (p.namespace().to_string(), p.name().to_string()))
        .collect()
}

/// Removes each of the `terminating` pods that is bound to no existing node and whose grace
/// period is over; forgets those that are gone.
fn reap_orphans(store: &Store, terminating: &mut BTreeSet<(String, String)>) {
    let (pods, nodes) = (resources::core("pods"), resources::core("nodes"));
    let now = chrono::Utc::now();
    terminating.retain(|(ns, name)| {
        let Ok(pod) = store.get(pods, ns, name) else {
            return false;
        };
        let node = pod
            .value()
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if store.get(nodes, "", node).is_ok() {
            return true;
        }
        let due = pod
            .value()
            .pointer("/metadata/deletionTimestamp")
            .and_then(Value::as_str)
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .is_none_or(|t| t <= now);
        if due && let Err(e) = store.remove_terminated(pods, ns, name) {
            tracing::debug!("removing orphaned pod {ns}/{name}: {e}");
        }
        true
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::DeleteOptions;
    use rstest::rstest;

    /// A pod bound to `node`, terminating with a grace period of `grace` seconds.
    fn terminating_pod(store: &Store, name: &str, node: &str, grace: i64) {
        let pod = json!({"metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox:1.36"}]}});
        store.create(resources::core("pods"), "w", pod).expect("pod");
        let opts = DeleteOptions {
            grace_period_seconds: Some(grace),
            ..DeleteOptions::default()
        };
        let deleted = store.delete(resources::core("pods"), "w", name, &opts).expect("delete");
        assert!(
            matches!(deleted, crate::store::Deleted::Terminating(_)),
            "{name} is terminating"
        );
    }

    /// The orphan rule (pod garbage collection): a terminating pod on a node that does not exist
    /// is removed once its grace period is over, whether it was terminating before the reaper
    /// started or became so after; one on an existing node is its kubelet's to finish.
    #[rstest]
    #[case::terminating_before_the_reaper_starts(true)]
    #[case::terminating_after(false)]
    #[tokio::test]
    async fn an_orphan_goes_after_its_grace_period(#[case] before: bool) {
        let store = Arc::new(Store::default());
        for (rt, value) in [
            ("namespaces", json!({"metadata": {"name": "w"}})),
            ("nodes", json!({"metadata": {"name": "real-node"}})),
        ] {
            store.create(resources::core(rt), "", value).expect("object");
        }
        let start = |store: &Arc<Store>| tokio::spawn(pod_reaper(store.clone()));
        let reaper = if before { None } else { Some(start(&store)) };
        // The reaper has taken its first look before the pods terminate.
        tokio::time::sleep(Duration::from_millis(50)).await;
        terminating_pod(&store, "ghost", "ghost-node", 1);
        terminating_pod(&store, "kept", "real-node", 1);
        let reaper = reaper.unwrap_or_else(|| start(&store));
        let started = std::time::Instant::now();
        let gone = |name: &str| store.get(resources::core("pods"), "w", name).is_err();
        while !gone("ghost") && started.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let took = started.elapsed();
        assert!(gone("ghost"), "the orphan is still there after {took:?}");
        assert!(
            took >= Duration::from_millis(400),
            "removed after {took:?}, inside its grace period"
        );
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(!gone("kept"), "a pod on an existing node is its kubelet's to finish");
        reaper.abort();
    }
}
