//! Real TCP listeners for NodePorts, hostPorts and load balancers: every node's loopback address
//! listens on each TCP NodePort of the cluster's services and on the hostPorts of its running
//! pods, and each LoadBalancer ingress address on its service's ports, so a client on the
//! machine truly connects. Each connection is an outside client's flow through the
//! fabric: a dropped flow is accepted and left silent (the client times out), a refused one is
//! reset, and each request of a delivered one goes to the backend the node's kube-proxy would
//! pick and is answered as it would answer (`agnhost netexec`'s `/hostname`, `/clientip`, …).
//! A real node answers every NodePort on every address without a socket each (kube-proxy
//! programs the kernel); here each is a socket, so on a machine whose open-file limit cannot hold
//! all of them (nodes × NodePorts) the listeners stay within a budget: load balancers, hostPorts
//! and a service's NodePort on the nodes its endpoints run on first, then the others — and the
//! bundled cluster warns once how many it left out.

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
use crate::network::wire::Wire as _;
use crate::store::Store;
use crate::store::resources;
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
fn listener_budget() -> usize {
    let soft = rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft);
    usize::try_from(soft.saturating_sub(RESERVED_FILES).max(soft / 2)).unwrap_or(usize::MAX)
}

/// The nodes each service's endpoints run on (`namespace/name` → node names).
fn endpoint_nodes(store: &Store) -> HashMap<String, HashSet<String>> {
    let mut out: HashMap<String, HashSet<String>> = HashMap::new();
    for ep in store.list(resources::core("endpoints"), None).0 {
        let nodes = out.entry(format!("{}/{}", ep.namespace(), ep.name())).or_default();
        for subset in crate::vocab::json::get(ep.value(), "/subsets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for a in crate::vocab::json::get(subset, "/addresses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let node = json::str(a, "/nodeName");
                if !node.is_empty() {
                    nodes.insert(node.to_string());
                }
            }
        }
    }
    out
}

/// The bindings that fit in `budget`: load balancers, hostPorts and the kubelet first, then
/// each service's NodePort on the nodes its endpoints run on, then the rest (by port and node,
/// so that the choice is stable). Returns how many were left out too. The NodePorts beyond the
/// first two ranks are made only as far as the budget reaches: at 5,000 nodes a hundred NodePort
/// Services want half a million listeners, of which a few thousand fit.
fn within_budget(want: Wanted, nodes: &[NodeProfile], store: &Store, budget: usize) -> (HashSet<Binding>, usize) {
    let total = want.fixed.len() + want.node_ports.len() * nodes.len();
    if total <= budget {
        let mut all = want.fixed;
        for np in &want.node_ports {
            all.extend(nodes.iter().map(|n| np.on(n)));
        }
        return (all, 0);
    }
    let backends = endpoint_nodes(store);
    let mut first: Vec<(u8, Binding)> = want.fixed.into_iter().map(|b| (0, b)).collect();
    for np in &want.node_ports {
        if let Some(on) = backends.get(&np.service) {
            first.extend(nodes.iter().filter(|n| on.contains(&n.name)).map(|n| (1, np.on(n))));
        }
    }
    first.sort_by_cached_key(|(rank, b)| (*rank, b.port, b.ip));
    let mut out: HashSet<Binding> = first.into_iter().take(budget).map(|(_, b)| b).collect();
    let mut ports: Vec<&NodePort> = want.node_ports.iter().collect();
    ports.sort_by_key(|np| np.port);
    let mut by_ip: Vec<&NodeProfile> = nodes.iter().collect();
    by_ip.sort_by_key(|n| n.ip);
    'fill: for np in ports {
        let on = backends.get(&np.service);
        for n in &by_ip {
            if out.len() >= budget {
                break 'fill;
            }
            if !on.is_some_and(|on| on.contains(&n.name)) {
                out.insert(np.on(n));
            }
        }
    }
    let left_out = total.saturating_sub(out.len());
    (out, left_out)
}

/// What the listeners should serve: the bindings of load balancers, hostPorts and the kubelet,
/// and the NodePorts, each to be bound on every node.
struct Wanted {
    fixed: HashSet<Binding>,
    node_ports: Vec<NodePort>,
}

/// A TCP NodePort of a Service, wanted on every node.
struct NodePort {
    port: u16,
    /// `namespace/name` of the Service.
    service: String,
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
}

/// The TCP NodePorts of the cluster's services (on every node) and the TCP hostPorts of its
/// running pods (on their node); with `firewalled` addresses, the kubelet's port too.
fn desired(store: &Store, nodes: &[NodeProfile], firewalled: bool) -> Wanted {
    let mut out = HashSet::new();
    let mut node_ports = Vec::new();
    if firewalled {
        for node in nodes {
            out.insert(Binding {
                node: node.name.clone(),
                ip: node.ip,
                port: KUBELET_PORT,
                owner: "the kubelet".into(),
                public: false,
            });
        }
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
                service: format!("{}/{}", svc.namespace(), svc.name()),
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
    for pod in store.list(resources::core("pods"), None).0 {
        let v = pod.value();
        if json::str(v, "/status/phase") != "Running" {
            continue;
        }
        let ports = host_ports(v);
        if ports.is_empty() {
            continue;
        }
        let Some(node) = by_name.get(json::str(v, "/spec/nodeName")) else {
            continue;
        };
        for port in ports {
            out.insert(Binding {
                node: node.name.clone(),
                ip: node.ip,
                port,
                owner: format!("pod {}/{}", pod.namespace(), pod.name()),
                public: false,
            });
        }
    }
    Wanted { fixed: out, node_ports }
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

/// Keeps the listeners in step with the services until the store closes. With `reachable`
/// false (`network.nodeAddressesReachable`), every connection is held silent: a firewall between
/// this machine and private node addresses drops it, whatever the fabric would do.
pub async fn run(
    store: Arc<Store>,
    nodes: Arc<Vec<NodeProfile>>,
    net: Arc<SimNet>,
    reachable: bool,
    first: tokio::sync::oneshot::Sender<()>,
) {
    // Told once the first alignment is done: the firewall in front of private node addresses
    // (the kubelet's port held silent) stands before the cluster is handed over, as on a real one.
    let mut first = Some(first);
    let mut feed = store.subscribe();
    let mut listening = Listening::default();
    let running = &mut listening.0;
    let budget = listener_budget();
    let mut warned = 0;
    // The state the listeners were last aligned with, and whether every bind then succeeded.
    let mut aligned: Option<u64> = None;
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
        let (want, left_out) = within_budget(desired(&store, &nodes, !reachable), &nodes, &store, budget);
        if left_out > warned {
            tracing::warn!(
                "the open-file limit holds {budget} of the {} NodePort, hostPort and load-balancer listeners: {left_out} NodePorts on nodes without the service's endpoints refuse connections from this machine (raise `ulimit -n` to serve them all)",
                budget + left_out
            );
            warned = left_out;
        }
        running.retain(|b, task| {
            let keep = want.contains(b) && !task.is_finished();
            if !keep {
                task.abort();
            }
            keep
        });
        let mut all_bound = true;
        for b in want {
            if running.contains_key(&b) {
                continue;
            }
            match tokio::net::TcpListener::bind(SocketAddr::from((b.ip, b.port))).await {
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
                        firewalled: !reachable && !b.public,
                    };
                    let task = tokio::spawn(async move {
                        let _ = axum::serve(listener, app.into_make_service_with_connect_info::<Peer>()).await;
                    });
                    running.insert(b, task);
                }
                Err(e) => {
                    all_bound = false;
                    tracing::warn!("cannot listen on {}:{} for {}: {e}", b.ip, b.port, b.owner);
                }
            }
        }
        // A failed bind is retried at the next turn even when nothing changed.
        aligned = all_bound.then_some(state);
        if let Some(told) = first.take() {
            let _ = told.send(());
        }
        wait_for_change(&mut feed).await;
    }
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
    ip: Ipv4Addr,
    port: u16,
    /// Nothing reaches the node's address from this machine: every flow is dropped.
    firewalled: bool,
}

fn client_ip(addr: &SocketAddr) -> Ipv4Addr {
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
            let (net, ip, port, client) = (self.net.clone(), self.ip, self.port, client_ip(&addr));
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

/// The client's address, for handlers.
#[derive(Debug, Clone, Copy)]
struct Peer(SocketAddr);

impl Connected<IncomingStream<'_, FabricListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, FabricListener>) -> Self {
        Peer(*stream.remote_addr())
    }
}

async fn serve(State(b): State<Arc<Backend>>, ConnectInfo(Peer(client)): ConnectInfo<Peer>, uri: Uri) -> Response {
    let client_ip = client_ip(&client);
    let target = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let net = b.net.clone();
    let (ip, port) = (b.binding.ip, b.binding.port);
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

    /// Where the listeners do not all fit, the ones a client is likeliest to need stay: a pod's
    /// hostPort, then a service's NodePort where its endpoints run, then the rest by port and
    /// node address; what is left out is counted. The NodePorts are made only as far as the
    /// budget reaches, and the choice is the one a sort of every binding would make.
    #[rstest::rstest]
    fn listeners_beyond_the_budget_leave_out_nodes_without_endpoints_first(
        #[values(0, 1, 2, 3, 4, 6, 9, 10)] budget: usize,
    ) {
        let store = Store::new(StoreConfig { history: 4 });
        store
            .create(
                resources::core("namespaces"),
                "",
                serde_json::json!({"metadata": {"name": "ns"}}),
            )
            .expect("namespace");
        store
            .create(
                resources::core("endpoints"),
                "ns",
                serde_json::json!({"metadata": {"name": "web", "namespace": "ns"},
                    "subsets": [{"addresses": [{"ip": "10.244.1.5", "nodeName": "node-3"}]}]}),
            )
            .expect("endpoints");
        // Nodes out of address order, so that the fill's order is the addresses', not the list's.
        let nodes: Vec<NodeProfile> = [4, 1, 3, 2].into_iter().map(node).collect();
        let host_port = binding(2, 48080, "pod ns/hp-2");
        let want = || Wanted {
            fixed: HashSet::from([host_port.clone()]),
            node_ports: [(30090, "other"), (30080, "web")]
                .into_iter()
                .map(|(port, name)| NodePort {
                    port,
                    service: format!("ns/{name}"),
                    owner: format!("service ns/{name}"),
                })
                .collect(),
        };
        // Every binding ranked and sorted: what the budget keeps of them.
        let mut every: Vec<(u8, Binding)> = vec![(0, host_port.clone())];
        for (port, name) in [(30090, "other"), (30080, "web")] {
            for n in 1..=4 {
                let rank = if name == "web" && n == 3 { 1 } else { 2 };
                every.push((rank, binding(n, port, &format!("service ns/{name}"))));
            }
        }
        every.sort_by_key(|(rank, b)| (*rank, b.port, b.ip));
        let expected: HashSet<Binding> = every.iter().take(budget).map(|(_, b)| b.clone()).collect();
        let (kept, out) = within_budget(want(), &nodes, &store, budget);
        assert_eq!(kept, expected, "budget {budget}");
        assert_eq!(out, every.len().saturating_sub(budget));
        if budget >= 1 {
            assert!(kept.contains(&host_port), "the hostPort stays");
        }
        if budget >= 2 {
            assert!(
                kept.contains(&binding(3, 30080, "service ns/web")),
                "the NodePort where its endpoint runs stays"
            );
        }
    }
}
