//! Real TCP listeners for NodePorts, hostPorts and load balancers: every node's loopback address
//! listens on each TCP NodePort of the cluster's services and on the hostPorts of its running
//! pods, and each LoadBalancer ingress address on its service's ports, so a client on the
//! machine truly connects. Each connection is an outside client's flow through the
//! fabric: a dropped flow is accepted and left silent (the client times out), a refused one is
//! reset, and each request of a delivered one goes to the backend the node's kube-proxy would
//! pick and is answered as it would answer (`agnhost netexec`'s `/hostname`, `/clientip`, …).
//! A real node answers every NodePort on every address without a socket each: kube-proxy
//! programs one rule per NodePort that matches any local address (iptables' `KUBE-NODEPORTS`
//! chain, the HNS load balancer's `LocalRoutedVip`). Here a small cluster gets one socket per node
//! and port; where that would not fit in the open-file limit (a few thousand nodes), each NodePort
//! is one socket on every loopback address of the machine (`0.0.0.0` bound to `lo`), which tells
//! the node by the address the client dialled, as kube-proxy's rule does.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::config::profile::NodeProfile;
use crate::network::apps::SimNet;
use crate::network::fabric::{Failure, Proto};
use crate::network::firewall::Firewall;
use crate::network::wire::Wire as _;
use crate::store::per_version::PerVersion;
use crate::store::resources;
use crate::store::{Obj, Store};
use crate::vocab::json;

/// One listening socket: a node's address and a NodePort or hostPort on it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Binding {
    node: String,
    ip: Ipv4Addr,
    port: u16,
    /// The service or pod the port belongs to (`namespace/name`), for messages.
    owner: String,
    /// A load balancer's address: reachable from this machine even where node addresses are
    /// not (the point of a LoadBalancer on a private cluster).
    public: bool,
}

#[derive(Debug)]
struct Backend {
    net: Arc<SimNet>,
    binding: Binding,
}

/// How long a connection whose flow the fabric drops stays silent.
const DROPPED_FLOW_HOLD: Duration = Duration::from_secs(120);

/// The kubelet's port on every node: bound only where node addresses are firewalled, so that a
/// client gets no answer there either (where they are reachable, nothing listening refuses).
const KUBELET_PORT: u16 = 10250;

/// Listening sockets kept free for the API server, its clients and the connections.
const RESERVED_FILES: u64 = 4096;

/// How many listeners fit: the open-file limit less what the API server and its clients need.
pub(crate) fn listener_budget() -> usize {
    let soft = rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft);
    usize::try_from(soft.saturating_sub(RESERVED_FILES).max(soft / 2)).unwrap_or(usize::MAX)
}

/// The sockets for what is wanted: one per node and port where they all fit in `budget`, else
/// one per port on every node's address at once (a 5,000-node cluster with ten NodePort
/// Services wants 50,000 sockets per node and port, ten this way). The fixed bindings (load
/// balancers, hostPorts) are on their own address either way.
fn laid_out(want: Wanted, nodes: &[NodeProfile], budget: usize) -> HashSet<Binding> {
    let per_node = want.fixed.len() + want.node_ports.len() * nodes.len() <= budget;
    let mut out = want.fixed;
    for np in &want.node_ports {
        if per_node {
            out.extend(nodes.iter().map(|n| np.on(n)));
        } else {
            out.insert(np.everywhere());
        }
    }
    out
}

/// What the listeners should serve: the bindings of load balancers and hostPorts, and the
/// ports every node answers (NodePorts, and the kubelet's behind a firewall).
struct Wanted {
    fixed: HashSet<Binding>,
    node_ports: Vec<NodePort>,
}

/// A port every node listens on: a TCP NodePort of a Service, or the kubelet's.
struct NodePort {
    port: u16,
    /// How messages name it.
    owner: String,
}

impl NodePort {
    /// Its binding on `node`.
    fn on(&self, node: &NodeProfile) -> Binding {
        Binding {
            node: node.name.clone(),
            ip: node.ip,
            port: self.port,
            owner: self.owner.clone(),
            public: false,
        }
    }

    /// Its binding on every node's address at once.
    fn everywhere(&self) -> Binding {
        Binding {
            node: "every node".into(),
            ip: Ipv4Addr::UNSPECIFIED,
            port: self.port,
            owner: self.owner.clone(),
            public: false,
        }
    }
}

/// The TCP NodePorts of the cluster's services (on every node) and the TCP hostPorts of its
/// running pods (on their node); with `firewalled` addresses, the kubelet's port too.
fn desired(store: &Store, nodes: &[NodeProfile], firewalled: bool, pods: &mut PodPorts) -> Wanted {
    let mut out = HashSet::new();
    let mut node_ports = Vec::new();
    if firewalled {
        node_ports.push(NodePort {
            port: KUBELET_PORT,
            owner: "the kubelet".into(),
        });
    }
    for svc in store.list(resources::core("services"), None).0 {
        let v = svc.value();
        if !matches!(json::str(v, "/spec/type"), "NodePort" | "LoadBalancer") {
            continue;
        }
        for p in crate::vocab::json::get(v, "/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let is_tcp = matches!(json::str(p, "/protocol"), "" | "TCP");
            let Some(port) = p
                .get("nodePort")
                .and_then(Value::as_u64)
                .and_then(|n| u16::try_from(n).ok())
            else {
                continue;
            };
            if !is_tcp {
                continue;
            }
            node_ports.push(NodePort {
                port,
                owner: format!("service {}/{}", svc.namespace(), svc.name()),
            });
        }
    }
    // A load balancer listens on its ingress address at the service's ports.
    for svc in store.list(resources::core("services"), None).0 {
        let v = svc.value();
        if json::str(v, "/spec/type") != "LoadBalancer" {
            continue;
        }
        let ingress: Vec<Ipv4Addr> = crate::vocab::json::get(v, "/status/loadBalancer/ingress")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|i| json::str(i, "/ip").parse().ok())
            .collect();
        for p in crate::vocab::json::get(v, "/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(port) = p
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|n| u16::try_from(n).ok())
            else {
                continue;
            };
            if !matches!(json::str(p, "/protocol"), "" | "TCP") {
                continue;
            }
            for ip in &ingress {
                out.insert(Binding {
                    node: "load-balancer".into(),
                    ip: *ip,
                    port,
                    owner: format!("load balancer of service {}/{}", svc.namespace(), svc.name()),
                    public: true,
                });
            }
        }
    }
    // Nodes by name, looked up once per pod with a hostPort (not scanned per pod).
    let by_name: HashMap<&str, &NodeProfile> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let listed = store.list(resources::core("pods"), None).0;
    for pod in &listed {
        let Some(on) = pods.of(pod, ports_on) else {
            continue;
        };
        let (node, ports) = &*on;
        let Some(node) = by_name.get(node.as_str()) else {
            continue;
        };
        for &port in ports {
            out.insert(Binding {
                node: node.name.clone(),
                ip: node.ip,
                port,
                owner: format!("pod {}/{}", pod.namespace(), pod.name()),
                public: false,
            });
        }
    }
    pods.keep_only(&listed);
    Wanted { fixed: out, node_ports }
}

/// Each running pod's node and TCP hostPorts, read once per version of the pod: the listeners
/// are aligned at every pod change, and reading all 20,000 pods' JSON each time (at 5,000
/// nodes) cost a core and kept every pod decoded in memory.
type PodPorts = PerVersion<Option<PortsOn>>;

/// A running pod's node and the hostPorts it publishes (None: not running or none).
type PortsOn = Arc<(String, Vec<u16>)>;

fn ports_on(pod: &Obj) -> Option<PortsOn> {
    let v = pod.value();
    Some(host_ports(v))
        .filter(|p| !p.is_empty() && json::str(v, "/status/phase") == "Running")
        .map(|p| Arc::new((json::str(v, "/spec/nodeName").to_string(), p)))
}

/// The TCP hostPorts a pod's containers publish.
fn host_ports(pod: &Value) -> Vec<u16> {
    let containers = crate::vocab::json::get(pod, "/spec/containers").and_then(Value::as_array);
    containers
        .into_iter()
        .flatten()
        .flat_map(|c| {
            crate::vocab::json::get(c, "/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter(|p| matches!(json::str(p, "/protocol"), "" | "TCP"))
        .filter_map(|p| {
            p.get("hostPort")
                .and_then(Value::as_u64)
                .and_then(|n| u16::try_from(n).ok())
        })
        .filter(|port| *port > 0)
        .collect()
}

/// The serving tasks; dropping it (the cluster stopping) closes every listener.
#[derive(Default)]
struct Listening(HashMap<Binding, JoinHandle<()>>);

impl Drop for Listening {
    fn drop(&mut self) {
        for task in self.0.values() {
            task.abort();
        }
    }
}

/// Keeps the listeners in step with the services until the store closes. With a `firewall`
/// (`network.nodeAddressesReachable: false`), every connection is held silent: a firewall
/// between this machine and private node addresses drops it, whatever the fabric would do; the
/// sockets it bound as each NodePort was allocated are served from then on.
pub async fn run(
    store: Arc<Store>,
    nodes: Arc<Vec<NodeProfile>>,
    net: Arc<SimNet>,
    firewall: Option<Arc<Firewall>>,
    budget: usize,
    first: tokio::sync::oneshot::Sender<()>,
) {
    let reachable = firewall.is_none();
    // Told once the first alignment is done: the firewall in front of private node addresses
    // (the kubelet's port held silent) stands before the cluster is handed over, as on a real one.
    let mut first = Some(first);
    let mut feed = store.subscribe();
    let mut listening = Listening::default();
    let running = &mut listening.0;
    let node_ips: Arc<HashSet<Ipv4Addr>> = Arc::new(nodes.iter().map(|n| n.ip).collect());
    // The state the listeners were last aligned with, and whether every bind then succeeded.
    let mut aligned: Option<u64> = None;
    let mut pod_ports = PodPorts::default();
    loop {
        let state = store.changed_at(&[
            resources::core("pods"),
            resources::core("services"),
            resources::core("endpoints"),
        ]);
        if aligned == Some(state) && running.values().all(|t| !t.is_finished()) {
            wait_for_change(&mut feed).await;
            continue;
        }
        let want = laid_out(desired(&store, &nodes, !reachable, &mut pod_ports), &nodes, budget);
        stop_unwanted(running, &want).await;
        let mut all_bound = true;
        for b in want {
            if running.contains_key(&b) {
                continue;
            }
            let held = firewall.as_ref().and_then(|f| f.take(b.ip, b.port));
            let bound = if b.ip.is_unspecified() {
                if let Some(f) = &firewall {
                    f.release(Some(b.port));
                }
                every_node_listener(b.port)
            } else if let Some(socket) = held {
                // Held silent since the Service's NodePort was allocated: served from now on.
                tokio::net::TcpListener::from_std(socket)
            } else {
                tokio::net::TcpListener::bind(SocketAddr::from((b.ip, b.port))).await
            };
            match bound {
                Ok(listener) => {
                    let backend = Arc::new(Backend {
                        net: net.clone(),
                        binding: b.clone(),
                    });
                    let app = Router::new().fallback(serve).with_state(backend);
                    let listener = FabricListener {
                        inner: listener,
                        net: net.clone(),
                        ip: b.ip,
                        port: b.port,
                        nodes: node_ips.clone(),
                        firewalled: !reachable && !b.public,
                    };
                    let task = tokio::spawn(async move {
                        let _ = axum::serve(listener, app.into_make_service_with_connect_info::<Peer>()).await;
                    });
                    running.insert(b, task);
                }
                Err(e) => {
                    all_bound = false;
                    tracing::warn!("cannot listen on {}:{} for {} ({}): {e}", b.ip, b.port, b.owner, b.node);
                }
            }
        }
        // A failed bind is retried at the next turn even when nothing changed.
        aligned = all_bound.then_some(state);
        if let Some(f) = &firewall {
            f.release(None);
        }
        if let Some(told) = first.take() {
            let _ = told.send(());
        }
        wait_for_change(&mut feed).await;
    }
}

/// Stops the serving tasks of bindings no longer wanted (and those that ended), and waits until
/// each has dropped its socket: a NodePort that moves from a socket per node to one on every
/// address (more NodePorts than the budget holds per node) binds its port again at once, which
/// fails with "address in use" while a per-node socket of that port is still open.
async fn stop_unwanted(running: &mut HashMap<Binding, JoinHandle<()>>, want: &HashSet<Binding>) {
    let stopped: Vec<JoinHandle<()>> = running
        .extract_if(|b, task| !want.contains(b) || task.is_finished())
        .map(|(_, task)| task)
        .collect();
    for task in &stopped {
        task.abort();
    }
    for task in stopped {
        let _ = task.await;
    }
}

/// A listener on `port` of every loopback address: `0.0.0.0` bound to the loopback device, so
/// that nothing beyond this machine reaches it (each node's address is a loopback one).
#[cfg(target_os = "linux")]
fn every_node_listener(port: u16) -> std::io::Result<tokio::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind_device(Some(b"lo"))?;
    socket.bind(&SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)).into())?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    tokio::net::TcpListener::from_std(socket.into())
}

#[cfg(not(target_os = "linux"))]
fn every_node_listener(_port: u16) -> std::io::Result<tokio::net::TcpListener> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "one listener on every node's address needs Linux (SO_BINDTODEVICE); raise the open-file limit to listen per node",
    ))
}

/// Waits until services or pods change (a batch of changes, 200 ms), or at most two seconds.
async fn wait_for_change(feed: &mut crate::store::Subscription) {
    tokio::time::sleep(Duration::from_millis(200)).await;
    let deadline = tokio::time::sleep(Duration::from_secs(2));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            event = feed.recv() => match event {
                Ok(e) if e.resource.group.is_empty() && matches!(e.resource.plural, "services" | "pods" | "endpoints") => break,
                Ok(_) => continue,
                Err(_) => break,
            },
            _ = &mut deadline => break,
        }
    }
}

/// Answers a request as whatever the fabric delivers the outside client's flow to.
/// A node's listening socket that lets the fabric decide each connection: a flow it drops is
/// accepted but never answered (the client times out), a refused or reset one gets a TCP reset,
/// and only delivered flows reach the HTTP server.
struct FabricListener {
    inner: tokio::net::TcpListener,
    net: Arc<SimNet>,
    /// The address listened on; unspecified for every node's address at once.
    ip: Ipv4Addr,
    port: u16,
    /// The nodes' addresses: a connection to any other loopback address is refused.
    nodes: Arc<HashSet<Ipv4Addr>>,
    /// Nothing reaches the node's address from this machine: every flow is dropped.
    firewalled: bool,
}

impl FabricListener {
    /// The node address `stream` was dialled on, for a listener on every address; None when it
    /// is no node's.
    fn dialled(&self, stream: &tokio::net::TcpStream) -> Option<Ipv4Addr> {
        if !self.ip.is_unspecified() {
            return Some(self.ip);
        }
        let local = stream.local_addr().ok().map(|a| ipv4_of(&a))?;
        self.nodes.contains(&local).then_some(local)
    }
}

fn ipv4_of(addr: &SocketAddr) -> Ipv4Addr {
    match addr.ip() {
        IpAddr::V4(ip) => ip,
        IpAddr::V6(ip) => ip.to_ipv4_mapped().unwrap_or(Ipv4Addr::LOCALHOST),
    }
}

impl axum::serve::Listener for FabricListener {
    type Io = tokio::net::TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = match self.inner.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::debug!("accept on {}:{}: {e}", self.ip, self.port);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let Some(ip) = self.dialled(&stream) else {
                let _ = stream.set_zero_linger();
                continue;
            };
            let (net, port, client) = (self.net.clone(), self.port, ipv4_of(&addr));
            let firewalled = self.firewalled;
            let verdict = tokio::task::spawn_blocking(move || {
                if firewalled {
                    return Err(Failure::Timeout);
                }
                net.outside_client(client).send(ip, port, Proto::Tcp)
            })
            .await;
            match verdict {
                Ok(Ok(_)) => return (stream, addr),
                Ok(Err(Failure::Timeout | Failure::NoReply)) | Err(_) => {
                    tokio::spawn(async move {
                        let _silent = stream;
                        tokio::time::sleep(DROPPED_FLOW_HOLD).await;
                    });
                }
                Ok(Err(_)) => {
                    let _ = stream.set_zero_linger();
                    drop(stream);
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// The client's address and the address it dialled, for handlers.
#[derive(Debug, Clone, Copy)]
struct Peer {
    client: SocketAddr,
    dialled: Option<SocketAddr>,
}

impl Connected<IncomingStream<'_, FabricListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, FabricListener>) -> Self {
        Peer {
            client: *stream.remote_addr(),
            dialled: stream.io().local_addr().ok(),
        }
    }
}

async fn serve(State(b): State<Arc<Backend>>, ConnectInfo(peer): ConnectInfo<Peer>, uri: Uri) -> Response {
    let client_ip = ipv4_of(&peer.client);
    let target = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    // A listener on every node's address answers as the node that was dialled.
    let ip = match peer.dialled {
        Some(local) if b.binding.ip.is_unspecified() => ipv4_of(&local),
        _ => b.binding.ip,
    };
    let port = b.binding.port;
    let net = b.net.clone();
    let answer = tokio::task::spawn_blocking(move || net.outside_client(client_ip).http_get(ip, port, &target)).await;
    match answer {
        Ok(Ok(reply)) => (StatusCode::from_u16(reply.status).unwrap_or(StatusCode::OK), reply.body).into_response(),
        Ok(Err(Failure::Timeout | Failure::NoReply)) => {
            // The packets are dropped: the client waits until it gives up.
            tokio::time::sleep(DROPPED_FLOW_HOLD).await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
        Ok(Err(failure)) => (StatusCode::BAD_GATEWAY, format!("{failure}\n")).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreConfig;

    fn binding(node: u8, port: u16, owner: &str) -> Binding {
        Binding {
            node: format!("node-{node}"),
            ip: Ipv4Addr::new(127, 0, 9, node),
            port,
            owner: owner.into(),
            public: false,
        }
    }

    fn node(n: u8) -> NodeProfile {
        let mut p = crate::config::profile::default_node("linux-1", Ipv4Addr::new(127, 0, 9, n)).1;
        p.name = format!("node-{n}");
        p
    }

    /// A pod's hostPorts are read once per version: a copy of the same version without its
    /// decoded value gives the same answer and stays undecoded; the next version (no longer
    /// Running, or another port) is read again; a deleted pod is forgotten.
    #[rstest::rstest]
    #[case::running("Running", 8080, Some(("node-2", vec![8080])))]
    #[case::another_port("Running", 9090, Some(("node-2", vec![9090])))]
    #[case::pending("Pending", 8080, None)]
    fn hostports_are_read_once_per_version(
        #[case] phase: &str,
        #[case] port: u16,
        #[case] expect: Option<(&str, Vec<u16>)>,
    ) {
        let store = Store::default();
        let pods = resources::core("pods");
        store
            .create(
                resources::core("namespaces"),
                "",
                serde_json::json!({"metadata": {"name": "ns"}}),
            )
            .expect("ns");
        store
            .create(
                pods,
                "ns",
                serde_json::json!({"metadata": {"name": "hp"}, "spec": {"nodeName": "node-2",
                    "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}}),
            )
            .expect("pod");
        let running = store
            .modify(pods, "ns", "hp", crate::store::Part::Status, |p| {
                p["status"] = serde_json::json!({"phase": "Running"});
                Ok(())
            })
            .expect("running");
        let mut cache = PodPorts::default();
        let first = cache.of(&running, ports_on).map(|on| (*on).clone());
        assert_eq!(first, Some(("node-2".to_string(), vec![8080])));
        let cold = running.without_value();
        assert_eq!(cache.of(&cold, ports_on).map(|on| (*on).clone()), first);
        assert!(!cold.is_decoded(), "the same version is not read again");
        let next = store
            .modify(pods, "ns", "hp", crate::store::Part::Status, |p| {
                p["status"]["phase"] = serde_json::json!(phase);
                Ok(())
            })
            .expect("next");
        let next = if port == 8080 {
            next
        } else {
            store
                .modify(pods, "ns", "hp", crate::store::Part::Main, |p| {
                    p["spec"]["containers"][0]["ports"][0]["hostPort"] = serde_json::json!(port);
                    Ok(())
                })
                .expect("port")
        };
        let expect = expect.map(|(node, ports)| (node.to_string(), ports));
        assert_eq!(cache.of(&next, ports_on).map(|on| (*on).clone()), expect);
        cache.keep_only(&[]);
        assert!(cache.is_empty());
    }

    fn wanted() -> Wanted {
        Wanted {
            fixed: HashSet::from([binding(2, 48080, "pod ns/hp-2")]),
            node_ports: [30090, 30080]
                .into_iter()
                .map(|port| NodePort {
                    port,
                    owner: format!("service ns/{port}"),
                })
                .collect(),
        }
    }

    /// A socket per node and NodePort where they all fit in the budget, else one per NodePort
    /// on every node's address; the hostPort keeps its own either way.
    #[rstest::rstest]
    #[case::all_fit(9, true)]
    #[case::roomy(100, true)]
    #[case::one_short(8, false)]
    #[case::none(0, false)]
    fn node_ports_are_per_node_where_they_fit_else_one_socket_each(#[case] budget: usize, #[case] per_node: bool) {
        let nodes: Vec<NodeProfile> = [4, 1, 3, 2].into_iter().map(node).collect();
        let laid = laid_out(wanted(), &nodes, budget);
        assert!(laid.contains(&binding(2, 48080, "pod ns/hp-2")), "the hostPort stays");
        for port in [30090, 30080] {
            let owner = format!("service ns/{port}");
            let everywhere = laid.iter().any(|b| b.port == port && b.ip.is_unspecified());
            let on_each = (1..=4).all(|n| laid.contains(&binding(n, port, &owner)));
            assert_eq!(
                (on_each, everywhere),
                (per_node, !per_node),
                "port {port}, budget {budget}"
            );
        }
        assert_eq!(laid.len(), if per_node { 9 } else { 3 });
    }

    /// A NodePort that moves from a socket per node to one on every address binds at once: the
    /// per-node sockets are closed before (not after) the new one binds.
    #[tokio::test]
    async fn a_node_port_moving_to_every_address_binds_once_its_node_sockets_closed() {
        let mut running = HashMap::new();
        let mut port = None;
        for n in [1, 2] {
            let at = (Ipv4Addr::new(127, 0, 9, n), port.unwrap_or(0));
            let listener = tokio::net::TcpListener::bind(at).await.expect("bind a node's address");
            let bound = listener.local_addr().expect("addr").port();
            port = Some(bound);
            let task = tokio::spawn(async move {
                loop {
                    let _ = listener.accept().await;
                }
            });
            running.insert(binding(n, bound, "service ns/np"), task);
        }
        let port = port.expect("a port");
        let everywhere = NodePort {
            port,
            owner: "service ns/np".into(),
        }
        .everywhere();
        stop_unwanted(&mut running, &HashSet::from([everywhere])).await;
        assert!(running.is_empty(), "the per-node bindings are stopped");
        every_node_listener(port).expect("the port is free for every node's address");
    }

    /// One socket answers a NodePort on every node's address, as the node dialled (the fabric
    /// tells them apart), and refuses an address that is no node's.
    #[tokio::test]
    async fn a_listener_on_every_address_tells_the_node_by_the_address_dialled() {
        let listener = every_node_listener(0).expect("bind 0.0.0.0 on lo");
        let port = listener.local_addr().expect("addr").port();
        let nodes: HashSet<Ipv4Addr> = [Ipv4Addr::new(127, 0, 9, 1), Ipv4Addr::new(127, 0, 9, 2)].into();
        let store = Arc::new(Store::new(StoreConfig { history: 4 }));
        let fabric = FabricListener {
            inner: listener,
            net: Arc::new(SimNet::new(
                store,
                Arc::new(vec![node(1), node(2)]),
                crate::network::fabric::NetFacts::from_topology(&crate::config::topology::Topology::default_cluster()),
            )),
            ip: Ipv4Addr::UNSPECIFIED,
            port,
            nodes: Arc::new(nodes.clone()),
            firewalled: false,
        };
        for ip in nodes {
            let _client = tokio::net::TcpStream::connect((ip, port)).await.expect("connect");
            let (stream, _) = fabric.inner.accept().await.expect("accept");
            assert_eq!(fabric.dialled(&stream), Some(ip));
        }
        let _client = tokio::net::TcpStream::connect((Ipv4Addr::new(127, 0, 9, 7), port))
            .await
            .expect("connect");
        let (stream, _) = fabric.inner.accept().await.expect("accept");
        assert_eq!(fabric.dialled(&stream), None, "no node has 127.0.9.7");
    }
}
