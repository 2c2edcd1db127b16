//! The network fabric: one pure decision per flow — source (pod, node, outside client) ×
//! destination (pod IP, ClusterIP, NodePort, hostPort, node, outside address) × protocol — that
//! says whether it gets through, to which backend and with which source address, or how it fails
//! and which documented rule (by its id) decided.

use std::fmt;

pub mod attempt;
mod names;
pub mod policy;
mod wiring;

/// A flow's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proto {
    Tcp,
    Udp,
    Icmp,
}

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Proto::Tcp => "TCP",
            Proto::Udp => "UDP",
            Proto::Icmp => "ICMP",
        })
    }
}

/// How a flow fails, as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Nothing answers: packets are dropped on the way (connect timeout; UDP silence).
    Timeout,
    /// The destination host answers with a reset / ICMP port unreachable (nothing listens).
    Refused,
    /// The connection is accepted, then reset.
    Reset,
    /// An ICMP echo gets no reply.
    NoReply,
    /// The client's own host refuses to send it; the message is the OS error text.
    Other(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Timeout => f.write_str("timeout"),
            Failure::Refused => f.write_str("connection refused"),
            Failure::Reset => f.write_str("connection reset"),
            Failure::NoReply => f.write_str("no reply"),
            Failure::Other(m) => f.write_str(m),
        }
    }
}

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::config::faults::Fault;
use crate::config::platform::NetworkMode;
use crate::config::topology::{Topology, parse_version};

/// An IPv4 range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    base: u32,
    prefix: u8,
}

impl Cidr {
    /// Parses `a.b.c.d/n`.
    pub fn parse(text: &str) -> Option<Cidr> {
        let (ip, prefix) = text.split_once('/')?;
        let ip: Ipv4Addr = ip.parse().ok()?;
        let prefix: u8 = prefix.parse().ok().filter(|p| *p <= 32)?;
        Some(Cidr {
            base: u32::from(ip) & Self::mask(prefix),
            prefix,
        })
    }

    fn mask(prefix: u8) -> u32 {
        if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(prefix))
        }
    }

    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & Self::mask(self.prefix) == self.base
    }
}

/// Cluster-wide network settings from the topology.
#[derive(Debug, Clone)]
pub struct NetFacts {
    pub mode: NetworkMode,
    /// Windows kube-proxy runs with DSR (NET-DSR).
    pub dsr: bool,
    /// flannel ≥ 0.12 on overlay: a Windows node reaches its own pods (NET-NODE-POD-OVERLAY).
    pub flannel_local_fix: bool,
    pub cluster_cidr: Cidr,
    pub service_cidr: Cidr,
    /// Whether the cluster has an outbound route (`network.egress`): without one, flows to
    /// outside addresses are dropped, as behind a firewall that denies (AKS outbound type
    /// `userDefinedRouting`).
    pub egress: bool,
    /// The only outside TCP/UDP ports that answer (`network.egressPorts`); None: all.
    pub egress_ports: Option<Vec<u16>>,
    /// Whether LoadBalancer ingress addresses answer clients outside the cluster
    /// (`network.loadBalancersReachable`).
    pub load_balancers_reachable: bool,
}

impl NetFacts {
    pub fn from_topology(topology: &Topology) -> NetFacts {
        let n = &topology.network;
        let flannel_local_fix = n.flannel_version.as_deref().is_none_or(|v| {
            let v = if v.starts_with('v') {
                v.to_string()
            } else {
                format!("v{v}")
            };
            parse_version(&v).is_none_or(|ver| ver >= (0, 12))
        });
        NetFacts {
            mode: n.mode,
            dsr: n.dsr,
            flannel_local_fix,
            cluster_cidr: Cidr::parse(&n.cluster_cidr).unwrap_or(Cidr {
                base: u32::from(Ipv4Addr::new(10, 244, 0, 0)),
                prefix: 16,
            }),
            service_cidr: Cidr::parse(&n.service_cidr).unwrap_or(Cidr {
                base: u32::from(Ipv4Addr::new(10, 96, 0, 0)),
                prefix: 12,
            }),
            egress: n.egress,
            egress_ports: n.egress_ports.clone(),
            load_balancers_reachable: n.load_balancers_reachable,
        }
    }
}

/// What the fabric knows about a node.
#[derive(Debug, Clone)]
pub struct NodeFacts {
    pub name: String,
    pub windows: bool,
    /// Windows build (17763, 20348, …).
    pub build: Option<u32>,
    /// The kubelet / kube-proxy `major.minor`.
    pub kube: (u32, u32),
    pub ip: Ipv4Addr,
    /// The address Windows kube-proxy's load balancers SNAT to on overlay networks without DSR
    /// (`--source-vip`, leased from the node's pod subnet: its .254).
    pub source_vip: Ipv4Addr,
    /// The most backends one Service may have behind this node's HNS load balancer (Windows;
    /// 64, or 1024 with the OS fix: NET-SVC-BACKEND-LIMIT).
    pub backend_limit: usize,
    /// Whether the node's CNI maps hostPorts (NET-HOSTPORT).
    pub port_mappings: bool,
    /// Whether the node's host network (a HostProcess pod) reaches the API server through the
    /// `kubernetes` Service: current Windows nodes with HostProcess on containerd 1.7+
    /// (E2E/host_process). Pod-backed ClusterIPs stay out of its reach (SVC-VIP-FROM-NODE).
    pub vip_from_host: bool,
    pub faults: Vec<Fault>,
    /// The faults that hold for a share of connection attempts only (`@P`), decided per
    /// attempt ([`attempt`]).
    pub shares: Vec<(Fault, f64)>,
    /// The topology's seed (`timing.seed`), which makes those decisions reproducible.
    pub seed: u64,
    /// How long the node's proxy takes to program a new or changed Service
    /// (`timing.programmingDelay`).
    pub programming: std::time::Duration,
}

/// The source VIP of a node with pod CIDR `a.b.c.0/24`.
pub fn source_vip_of(pod_cidr: &str) -> Ipv4Addr {
    let base = pod_cidr.split('/').next().and_then(|ip| ip.parse::<Ipv4Addr>().ok());
    let [a, b, c, _] = base.unwrap_or(Ipv4Addr::UNSPECIFIED).octets();
    Ipv4Addr::new(a, b, c, 254)
}

impl NodeFacts {
    /// Whether the node has `fault` for the connection attempt being decided: always for a
    /// fault that holds, for its share of attempts for an intermittent one.
    fn has(&self, fault: Fault) -> bool {
        if !self.faults.contains(&fault) {
            return false;
        }
        match self.shares.iter().find(|(f, _)| *f == fault) {
            Some((_, share)) => attempt::holds(self.seed, &self.name, fault, *share),
            None => true,
        }
    }
}

/// What answers on a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum App {
    /// agnhost netexec: `/hostname`, `/clientip`, `/echo`, `/dial`, … and its UDP server.
    Netexec,
    /// agnhost serve-hostname: the hostname on any path.
    ServeHostname,
    /// A web server (test-webserver, nginx, IIS, a declared container port).
    Web,
    /// A UDP echo server: a PowerShell script looping on a `System.Net.Sockets.UdpClient`
    /// bound to a port (`Receive`, then `Send` back), the .NET idiom of Windows images that
    /// have no netcat.
    UdpEcho,
    /// A DNS server.
    Dns,
    /// CoreDNS's HTTP endpoints: `/health` (8080), `/ready` (8181), `/metrics` (9153).
    DnsHealth,
    /// A managed control plane's API server (AKS, EKS, GKE run it off the cluster's nodes): its
    /// health endpoints.
    ApiServer,
}

/// A listening port in a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Serve {
    pub port: u16,
    pub proto: Proto,
    pub app: App,
    /// Index of the container that listens.
    pub container: usize,
}

/// A `hostPort` mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPort {
    pub host_port: u16,
    pub container_port: u16,
    pub proto: Proto,
}

/// What the fabric knows about a running pod.
#[derive(Debug, Clone)]
pub struct PodFacts {
    pub namespace: String,
    pub name: String,
    /// What `/hostname` answers (the node's name for host-network pods).
    pub hostname: String,
    pub ip: Ipv4Addr,
    /// Dual-stack: the pod's IPv6 address (`status.podIPs`), where its CNI gave it one.
    pub ipv6: Option<Ipv6Addr>,
    pub node: usize,
    /// Shares the node's network (Linux hostNetwork, Windows HostProcess).
    pub host_network: bool,
    pub serves: Vec<Serve>,
    pub host_ports: Vec<HostPort>,
    /// What NetworkPolicy selectors read of the pod (labels, named ports), read once per version
    /// of the pod object with the rest.
    pub meta: std::sync::Arc<policy::PodMeta>,
}

impl PodFacts {
    /// Whether `other` is the same pod with the same addresses, node and listeners (its labels
    /// and port names aside).
    pub fn same_network(&self, other: &PodFacts) -> bool {
        self.network() == other.network()
    }

    /// Everything but the labels and port names, as one value (a destructuring that names every
    /// field, so that a field added is compared or left out on purpose).
    #[allow(clippy::type_complexity)]
    fn network(
        &self,
    ) -> (
        &str,
        &str,
        &str,
        Ipv4Addr,
        Option<Ipv6Addr>,
        usize,
        bool,
        &[Serve],
        &[HostPort],
    ) {
        let PodFacts {
            namespace,
            name,
            hostname,
            ip,
            ipv6,
            node,
            host_network,
            serves,
            host_ports,
            meta: _,
        } = self;
        (
            namespace,
            name,
            hostname,
            *ip,
            *ipv6,
            *node,
            *host_network,
            serves,
            host_ports,
        )
    }

    /// What listens on `port`/`proto` (for loopback flows, only in `container` when given).
    pub fn serving(&self, port: u16, proto: Proto, container: Option<usize>) -> Option<&Serve> {
        self.serves
            .iter()
            .find(|s| s.port == port && s.proto == proto && container.is_none_or(|c| c == s.container))
    }
}

/// A service port with its resolved backends.
#[derive(Debug, Clone)]
pub struct ServicePort {
    pub name: String,
    pub port: u16,
    pub node_port: Option<u16>,
    pub proto: Proto,
    /// Ready backends: pod index and target port.
    pub targets: Vec<(usize, u16)>,
}

/// What the fabric knows about a service.
#[derive(Debug, Clone)]
pub struct ServiceFacts {
    pub namespace: String,
    pub name: String,
    pub cluster_ip: Option<Ipv4Addr>,
    /// The ingress addresses a load-balancer controller gave a `type: LoadBalancer` Service.
    pub ingress: Vec<Ipv4Addr>,
    pub ports: Vec<ServicePort>,
    /// `externalTrafficPolicy: Local`.
    pub local_only: bool,
    /// `sessionAffinity: ClientIP`.
    pub client_ip_affinity: bool,
    /// The cluster DNS service (`kube-system/kube-dns`).
    pub cluster_dns: bool,
    /// When the Service or its endpoints last changed: a node's proxy forwards it only once its
    /// programming delay has passed since (None: programmed everywhere).
    pub changed_at: Option<std::time::Instant>,
}

/// The name of the outside host that is a node subnet's resolver.
pub const NODE_RESOLVER: &str = "node-resolver";

/// A host of the simulated outside world.
#[derive(Debug, Clone)]
pub struct OutsideHost {
    pub ip: Ipv4Addr,
    pub name: String,
    pub serves: Vec<(u16, Proto, App)>,
}

/// Where a flow starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Src {
    /// A container on the pod network (`container` indexes the pod's containers).
    Pod { pod: usize, container: usize },
    /// A node's host network (Linux hostNetwork pod, Windows HostProcess pod).
    Node(usize),
    /// A client outside the cluster.
    Outside(Ipv4Addr),
}

/// One flow to decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    pub src: Src,
    pub dst: Ipv4Addr,
    /// Destination port (ignored for ICMP).
    pub port: u16,
    pub proto: Proto,
    /// Round-robin position, for load-balanced flows.
    pub pick: u64,
}

/// Where a delivered flow ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// A pod (the backend of a service, or the pod addressed), and the port it receives on.
    Pod { pod: usize, port: u16 },
    /// A node's own stack (ping, the kubelet port).
    Node { node: usize, port: u16 },
    /// An outside host.
    Outside { host: usize, port: u16 },
}

/// A delivered flow: where it ended and the source address the receiver sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reached {
    pub at: Endpoint,
    pub seen_from: Ipv4Addr,
}

/// The fabric's decision, with the rule that decided it and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub result: Result<Reached, Failure>,
    pub rule: &'static str,
    pub why: &'static str,
}

impl Decision {
    fn ok(at: Endpoint, seen_from: Ipv4Addr, rule: &'static str, why: &'static str) -> Decision {
        Decision {
            result: Ok(Reached { at, seen_from }),
            rule,
            why,
        }
    }

    fn fail(failure: Failure, rule: &'static str, why: &'static str) -> Decision {
        Decision {
            result: Err(failure),
            rule,
            why,
        }
    }

    fn fault(fault: Fault, failure: Failure, why: &'static str) -> Decision {
        Decision::fail(failure, fault.rule(), why)
    }

    pub fn delivered(&self) -> bool {
        self.result.is_ok()
    }

    fn with_rule(mut self, rule: &'static str, why: &'static str) -> Decision {
        if self.result.is_ok() {
            self.rule = rule;
            self.why = why;
        }
        self
    }
}

/// The Windows error text of a socket call when the ephemeral ports are exhausted.
pub const WSAENOBUFS: &str = "An operation on a socket could not be performed because the system lacked sufficient buffer space or because a queue was full.";
/// The Linux error text of a connect when no ephemeral port is free.
pub const EADDRNOTAVAIL: &str = "cannot assign requested address";

/// The cluster's network at one moment, and the decision function over it: its [`Wiring`]
/// (shared by the snapshots that differ only in their NetworkPolicies, reached through
/// `Deref`) and the policies.
#[derive(Debug, Clone)]
pub struct Fabric {
    wiring: std::sync::Arc<Wiring>,
    /// The NetworkPolicies and the engine that enforces them (None: the cluster has none).
    pub policies: Option<std::sync::Arc<policy::Policies>>,
}

impl std::ops::Deref for Fabric {
    type Target = Wiring;

    fn deref(&self) -> &Wiring {
        &self.wiring
    }
}

impl std::ops::DerefMut for Fabric {
    /// The wiring to change: this fabric's own (a copy when another snapshot shares it).
    fn deref_mut(&mut self) -> &mut Wiring {
        std::sync::Arc::make_mut(&mut self.wiring)
    }
}

/// The kubelet's read-only port, always open on every node.
pub const KUBELET_PORT: u16 = 10250;

impl Fabric {
    /// An empty fabric (add nodes, pods, services, outside hosts, then [`Wiring::index`]).
    pub fn new(net: NetFacts) -> Fabric {
        Fabric {
            wiring: std::sync::Arc::new(Wiring::new(net)),
            policies: None,
        }
    }

    /// The same wiring with other policies.
    pub fn with_policies(&self, policies: Option<std::sync::Arc<policy::Policies>>) -> Fabric {
        Fabric {
            wiring: self.wiring.clone(),
            policies,
        }
    }

    /// Whether the NetworkPolicies let `src` reach pod `pod` (a Decision naming the policy rule
    /// when they do not).
    fn policy_denies(&self, src: Src, pod: usize, port: u16, proto: Proto) -> Option<Decision> {
        let policies = self.policies.as_ref()?;
        let end = |pod: Option<usize>, ip: Ipv4Addr, node: Option<usize>| policy::End {
            pod: pod.and_then(|p| policies.pods.get(p)).map(|m| &**m),
            ip,
            node,
        };
        let from = match src {
            Src::Pod { pod: p, .. } => end(Some(p), self.source_ip(src), self.src_node(src)),
            Src::Node(n) => end(None, self.source_ip(src), Some(n)),
            Src::Outside(ip) => end(None, ip, None),
        };
        let dst = &self.pods[pod];
        let to = end((!dst.host_network).then_some(pod), dst.ip, Some(dst.node));
        self.policy_verdict(from, to, port, proto)
    }

    /// The policies' decision between two ends.
    fn policy_verdict(&self, from: policy::End<'_>, to: policy::End<'_>, port: u16, proto: Proto) -> Option<Decision> {
        let policies = self.policies.as_ref()?;
        policies
            .decide(&self.nodes, from, to, port, proto)
            .err()
            .map(|(rule, why)| Decision::fail(Failure::Timeout, rule, why))
    }

    /// The node a name belongs to.
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// The pod with this namespace and name.
    pub fn pod_index(&self, namespace: &str, name: &str) -> Option<usize> {
        self.names.find(&self.pods, namespace, name)
    }

    /// The source of a flow started in `container` of pod `pod`.
    pub fn source_of(&self, pod: usize, container: usize) -> Src {
        match self.pods.get(pod) {
            Some(p) if p.host_network => Src::Node(p.node),
            _ => Src::Pod { pod, container },
        }
    }

    /// The address a source sends from.
    pub fn source_ip(&self, src: Src) -> Ipv4Addr {
        match src {
            Src::Pod { pod, .. } => self.pods.get(pod).map_or(Ipv4Addr::UNSPECIFIED, |p| p.ip),
            Src::Node(n) => self.nodes.get(n).map_or(Ipv4Addr::UNSPECIFIED, |n| n.ip),
            Src::Outside(ip) => ip,
        }
    }

    fn src_node(&self, src: Src) -> Option<usize> {
        match src {
            Src::Pod { pod, .. } => self.pods.get(pod).map(|p| p.node),
            Src::Node(n) => Some(n),
            Src::Outside(_) => None,
        }
    }

    fn src_windows(&self, src: Src) -> bool {
        self.src_node(src).is_some_and(|n| self.nodes[n].windows)
    }

    /// Whether the node's kube-proxy load-balances with DSR: asked for in the topology, and
    /// available on Windows Server 2019 and later from Kubernetes 1.15 — W14 lists "Local Traffic
    /// Policy and DSR mode" as unsupported in 1.14 and its examples pass `--enable-dsr=false`
    /// (NET-DSR).
    fn dsr(&self, node: &NodeFacts) -> bool {
        self.net.dsr && (!node.windows || (Self::dsr_capable(node) && node.kube >= (1, 15)))
    }

    /// The Windows build supports DSR (kube-proxy's `hcn.DSRSupported()`: Windows Server 2019+).
    fn dsr_capable(node: &NodeFacts) -> bool {
        node.build.is_some_and(|b| b >= 17763)
    }

    /// Whether this Windows node's kube-proxy serves `externalTrafficPolicy: Local`
    /// (NET-LOCAL-POLICY-NON-DSR, NET-DSR) the documented way: only with DSR enabled in kube-proxy
    /// (WNET: "Local Traffic Policy in non-DSR mode" is a limitation; client IP preservation needs
    /// Local "and enable DSR in kube-proxy"), which needs 1.15 and Windows Server 2019.
    fn local_policy_served(&self, node: &NodeFacts) -> bool {
        self.dsr(node)
    }

    /// The address a load balancer on `node` leaves as the source of balanced traffic, when it
    /// SNATs: the source VIP on overlay networks without DSR (Windows), else None.
    fn balanced_source(&self, node: &NodeFacts) -> Option<Ipv4Addr> {
        (node.windows && self.net.mode == NetworkMode::Overlay && !self.dsr(node)).then_some(node.source_vip)
    }

    /// Where an IPv6 flow from `src` to `dst` goes: the IPv4 address of the same pod or Service,
    /// whose flow then decides it, or how it fails. A source without an IPv6 address (every
    /// source on a single-stack cluster, host-network pods, Windows pods whose CNI gives none)
    /// has no IPv6 route: the OS answers "Network is unreachable". On overlay networks IPv6
    /// traffic between Windows pods is dropped: WNET lists "IPv6 communication between Windows
    /// pods connected to overlay networks" as unsupported (W14, W20: IPv6 on overlay networks is
    /// not supported); HNS overlay networks carry no IPv6, so a Windows pod's IPv6 traffic over
    /// them goes nowhere whatever the other end (NET-IPV6-OVERLAY).
    pub fn ipv6_route(&self, src: Src, dst: Ipv6Addr) -> Result<Ipv4Addr, Decision> {
        let unreachable = |why| {
            Decision::fail(
                Failure::Other("Network is unreachable".into()),
                "NET-IPV6-DUALSTACK",
                why,
            )
        };
        let from = match src {
            Src::Pod { pod, .. } => self.pods.get(pod).filter(|p| !p.host_network && p.ipv6.is_some()),
            Src::Node(_) | Src::Outside(_) => None,
        };
        let Some(from) = from else {
            return Err(unreachable("the source has no IPv6 address"));
        };
        if dst.is_loopback() {
            return Ok(Ipv4Addr::LOCALHOST);
        }
        let Some(v4) = self.ipv6.get(&dst).copied() else {
            return Err(Decision::fail(
                Failure::Timeout,
                "NET-IPV6-DUALSTACK",
                "no pod or Service has this IPv6 address",
            ));
        };
        let to_windows_pod = self
            .addrs
            .get(&v4)
            .and_then(|h| match h {
                Holder::Pod(p) => self.pods.get(*p),
                _ => None,
            })
            .is_some_and(|p| self.nodes[p.node].windows);
        let windows_end = self.nodes[from.node].windows || to_windows_pod;
        if self.net.mode == NetworkMode::Overlay && windows_end {
            return Err(Decision::fail(
                Failure::Timeout,
                "NET-IPV6-OVERLAY",
                "IPv6 communication of Windows pods over an overlay network is not supported",
            ));
        }
        Ok(v4)
    }

    /// Decides one flow.
    pub fn decide(&self, flow: &Flow) -> Decision {
        match flow.src {
            Src::Pod { pod, .. } if pod >= self.pods.len() => {
                return Decision::fail(Failure::Timeout, "NET-POD-POD-IP-SAME", "the source pod has no network");
            }
            Src::Node(n) if n >= self.nodes.len() => {
                return Decision::fail(Failure::Timeout, "NET-NODE-POD", "the source node does not exist");
            }
            Src::Node(n) if flow.proto != Proto::Icmp && self.nodes[n].has(Fault::PortExhaustion) => {
                let text = if self.nodes[n].windows {
                    WSAENOBUFS
                } else {
                    EADDRNOTAVAIL
                };
                return Decision::fault(
                    Fault::PortExhaustion,
                    Failure::Other(text.into()),
                    "the node's ephemeral ports are exhausted: the host cannot open new connections",
                );
            }
            _ => {}
        }
        if flow.dst.is_loopback() && !self.addrs.contains_key(&flow.dst) {
            return self.loopback(flow);
        }
        match self.addrs.get(&flow.dst).copied() {
            Some(Holder::Pod(p)) => self.to_pod(flow.src, p, flow.port, flow.proto),
            Some(Holder::Service(s)) => self.to_cluster_ip(flow, s),
            Some(Holder::LoadBalancer(s)) => self.to_load_balancer(flow, s),
            Some(Holder::Node(n)) => self.to_node_address(flow, n),
            Some(Holder::Outside(h)) => self.to_outside(flow, Some(h)),
            None if self.net.cluster_cidr.contains(flow.dst) => Decision::fail(
                Failure::Timeout,
                "NET-POD-POD-IP-CROSS",
                "no running pod has this address",
            ),
            None if self.net.service_cidr.contains(flow.dst) => {
                Decision::fail(Failure::Timeout, "SVC-TYPES", "no service has this ClusterIP")
            }
            None => self.to_outside(flow, None),
        }
    }

    /// Checks for traffic leaving a pod: the node's faults and the old profiles' limits.
    fn pod_out(&self, src: Src, leaves_node: bool, proto: Proto) -> Option<Decision> {
        let Src::Pod { pod, .. } = src else {
            return None;
        };
        let node = &self.nodes[self.pods[pod].node];
        if node.has(Fault::KubeProxyNoHostnameOverride) {
            return Some(Decision::fault(
                Fault::KubeProxyNoHostnameOverride,
                Failure::Timeout,
                "kube-proxy without --hostname-override deleted this node's HNS endpoints",
            ));
        }
        if node.windows && node.kube < (1, 6) && proto == Proto::Udp {
            return Some(Decision::fail(
                Failure::Timeout,
                "HIST-1.5-UDP",
                "UDP is not supported inside Windows containers on Kubernetes 1.5",
            ));
        }
        if leaves_node && node.has(Fault::MacSpoofingDisabled) {
            return Some(Decision::fault(
                Fault::MacSpoofingDisabled,
                Failure::Timeout,
                "MAC spoofing is off on this node's VM NIC: pod frames never leave the node",
            ));
        }
        if leaves_node && node.has(Fault::VxlanParamsMismatch) {
            return Some(Decision::fault(
                Fault::VxlanParamsMismatch,
                Failure::Timeout,
                "this node's VXLAN VNI/port differ from the other nodes': its encapsulated packets are dropped",
            ));
        }
        None
    }

    /// Checks for traffic arriving at a pod from `from_node` (None: from outside the cluster).
    fn pod_in(&self, pod: usize, from_node: Option<usize>, proto: Proto) -> Option<Decision> {
        let p = &self.pods[pod];
        if p.host_network {
            return None;
        }
        let node = &self.nodes[p.node];
        if node.has(Fault::KubeProxyNoHostnameOverride) {
            return Some(Decision::fault(
                Fault::KubeProxyNoHostnameOverride,
                Failure::Timeout,
                "kube-proxy without --hostname-override deleted the destination node's HNS endpoints",
            ));
        }
        if node.windows && node.kube < (1, 6) && proto == Proto::Udp {
            return Some(Decision::fail(
                Failure::Timeout,
                "HIST-1.5-UDP",
                "UDP is not supported inside Windows containers on Kubernetes 1.5",
            ));
        }
        if from_node != Some(p.node) && node.has(Fault::MacSpoofingDisabled) {
            return Some(Decision::fault(
                Fault::MacSpoofingDisabled,
                Failure::Timeout,
                "MAC spoofing is off on the destination node's VM NIC: frames for its pods are dropped",
            ));
        }
        if from_node != Some(p.node) && node.has(Fault::VxlanParamsMismatch) {
            return Some(Decision::fault(
                Fault::VxlanParamsMismatch,
                Failure::Timeout,
                "the destination node's VXLAN VNI/port differ from the other nodes': packets for its pods are dropped",
            ));
        }
        None
    }

    /// A DNS server pod is out of reach from a node with the `dns-unreachable` fault.
    fn dns_blocked(&self, pod: usize, port: u16, proto: Proto, from_node: usize) -> Option<Decision> {
        let dns = self.pods[pod]
            .serving(port, proto, None)
            .is_some_and(|s| s.app == App::Dns);
        (dns && self.nodes[from_node].has(Fault::DnsUnreachable)).then(|| {
            Decision::fault(
                Fault::DnsUnreachable,
                Failure::Timeout,
                "the cluster DNS is unreachable from this node",
            )
        })
    }

    /// The last hop: whether something in pod `pod` answers on `port`.
    fn at_pod(
        &self,
        pod: usize,
        port: u16,
        proto: Proto,
        seen_from: Ipv4Addr,
        rule: &'static str,
        why: &'static str,
    ) -> Decision {
        let p = &self.pods[pod];
        if proto == Proto::Icmp {
            let rule = if p.host_network { rule } else { "NET-ICMP-INTRA" };
            return Decision::ok(
                Endpoint::Pod { pod, port: 0 },
                seen_from,
                rule,
                "ICMP inside the cluster network works",
            );
        }
        match p.serving(port, proto, None) {
            Some(_) => Decision::ok(Endpoint::Pod { pod, port }, seen_from, rule, why),
            None => Decision::fail(Failure::Refused, rule, "nothing listens on that port in the pod"),
        }
    }

    fn to_pod(&self, src: Src, pod: usize, port: u16, proto: Proto) -> Decision {
        let dst = &self.pods[pod];
        let dn = dst.node;
        let seen = self.source_ip(src);
        match src {
            Src::Outside(_) => Decision::fail(
                Failure::Timeout,
                "SVC-TYPES",
                "pod IPs are not routed outside the cluster; expose the pod with a NodePort or LoadBalancer service",
            ),
            Src::Pod { pod: from, .. } => {
                let sn = self.pods[from].node;
                let same = sn == dn;
                if let Some(v) = self.pod_out(src, !same, proto) {
                    return v;
                }
                let snat = !same && self.nodes[sn].has(Fault::ExceptionListMissingCluster);
                if snat && self.net.mode == NetworkMode::Overlay {
                    return Decision::fault(
                        Fault::ExceptionListMissingCluster,
                        Failure::Timeout,
                        "the cluster CIDR is missing from the OutboundNAT ExceptionList: traffic to other nodes' pods is SNATed and lost in the overlay",
                    );
                }
                if let Some(v) = self.pod_in(pod, Some(sn), proto) {
                    return v;
                }
                if let Some(v) = self.dns_blocked(pod, port, proto, sn) {
                    return v;
                }
                if let Some(v) = self.policy_denies(src, pod, port, proto) {
                    return v;
                }
                let (rule, why) = if snat {
                    (
                        Fault::ExceptionListMissingCluster.rule(),
                        "delivered, but SNATed to the node's address: the cluster CIDR is missing from the OutboundNAT ExceptionList",
                    )
                } else if same {
                    ("NET-POD-POD-IP-SAME", "pod to pod on one node works")
                } else if self.nodes[sn].windows != self.nodes[dn].windows {
                    (
                        "NET-HYBRID-LINUX-WIN",
                        "pod to pod between Linux and Windows nodes works",
                    )
                } else {
                    ("NET-POD-POD-IP-CROSS", "pod to pod across nodes works")
                };
                let seen = if snat { self.nodes[sn].ip } else { seen };
                self.at_pod(pod, port, proto, seen, rule, why)
            }
            Src::Node(n) => {
                let overlay_windows = self.net.mode == NetworkMode::Overlay && self.nodes[n].windows;
                if overlay_windows && n != dn {
                    return Decision::fail(
                        Failure::Timeout,
                        "NET-NODE-POD-OVERLAY",
                        "a Windows node cannot reach pods on other nodes over flannel VXLAN (overlay)",
                    );
                }
                if overlay_windows && !self.net.flannel_local_fix {
                    return Decision::fail(
                        Failure::Timeout,
                        "NET-NODE-POD-OVERLAY",
                        "a Windows node reaches its own pods over overlay only with flannel 0.12 or later",
                    );
                }
                if let Some(v) = self.pod_in(pod, Some(n), proto) {
                    return v;
                }
                if let Some(v) = self.dns_blocked(pod, port, proto, n) {
                    return v;
                }
                if let Some(v) = self.policy_denies(src, pod, port, proto) {
                    return v;
                }
                let (rule, why) = if overlay_windows {
                    (
                        "NET-NODE-POD-OVERLAY",
                        "a Windows node reaches its own pods over overlay (flannel 0.12 or later)",
                    )
                } else {
                    ("NET-NODE-POD", "node to pod works")
                };
                self.at_pod(pod, port, proto, seen, rule, why)
            }
        }
    }

    /// The backend a load balancer on node `lb` picks for service port `sp` of `svc`.
    fn balance(
        &self,
        svc: usize,
        sp: usize,
        lb: usize,
        local_only: bool,
        client: Ipv4Addr,
        pick: u64,
    ) -> Result<(usize, u16, bool), Decision> {
        let s = &self.services[svc];
        let node = &self.nodes[lb];
        // While this node's proxy programs the latest change, only the backends it had before
        // answer; a new Service (or port) answers nowhere yet.
        let programming = s.changed_at.is_some_and(|at| at.elapsed() < node.programming);
        let before = self.settled.get(&svc).and_then(|ports| ports.get(sp));
        if programming && before.is_none_or(|b| b.is_empty()) {
            return Err(Decision::fail(
                Failure::Timeout,
                "NET-POD-SVC-CLUSTERIP",
                "kube-proxy on this node has not programmed the service's new state yet (it lags behind every change)",
            ));
        }
        let targets: Vec<(usize, u16)> = s.ports[sp]
            .targets
            .iter()
            .copied()
            .filter(|(p, _)| !local_only || self.pods[*p].node == lb)
            .filter(|(p, _)| !programming || before.is_some_and(|b| b.contains(&self.pods[*p].ip)))
            .collect();
        if targets.is_empty() {
            return Err(if local_only {
                Decision::fail(
                    Failure::Timeout,
                    "SVC-TYPES",
                    "externalTrafficPolicy: Local and no ready endpoint on this node: kube-proxy drops the traffic",
                )
            } else if node.windows {
                Decision::fail(
                    Failure::Timeout,
                    "NET-POD-SVC-CLUSTERIP",
                    "the service has no ready endpoints (no HNS load balancer is programmed)",
                )
            } else {
                Decision::fail(
                    Failure::Refused,
                    "NET-POD-SVC-CLUSTERIP",
                    "the service has no ready endpoints (kube-proxy rejects the connection)",
                )
            });
        }
        if node.windows && targets.len() > node.backend_limit {
            return Err(Decision::fail(
                Failure::Timeout,
                "NET-SVC-BACKEND-LIMIT",
                "the service has more backends than a Windows HNS load balancer supports",
            ));
        }
        let affinity = s.client_ip_affinity && (!node.windows || node.build.is_some_and(|b| b >= 20348));
        let slot = if affinity {
            crate::vocab::hash::fnv1a(&client.octets())
        } else {
            pick
        };
        // A client's affinity outlives a change of the backends: kube-proxy keeps the client on
        // the backend it had while that backend stays (the affinity entries time out after
        // sessionAffinityConfig's 3 h, not at a resync;
        // https://kubernetes.io/docs/reference/networking/virtual-ips/#session-affinity). The
        // fabric keeps no per-client state, so it picks among the backends that were there
        // before the latest change, as long as one still is.
        let kept: Vec<(usize, u16)> = match before {
            Some(b) if affinity => targets
                .iter()
                .copied()
                .filter(|(p, _)| b.contains(&self.pods[*p].ip))
                .collect(),
            _ => Vec::new(),
        };
        let targets = if kept.is_empty() { targets } else { kept };
        let len = targets.len() as u64;
        let (pod, port) = targets[usize::try_from(slot % len).unwrap_or(0)];
        Ok((pod, port, s.client_ip_affinity && !affinity))
    }

    /// A LoadBalancer's ingress address. Inside the cluster kube-proxy programs it like the
    /// ClusterIP, so the flow never leaves (`ipMode: VIP`, the default; KEP-1860,
    /// <https://kubernetes.io/docs/concepts/services-networking/service/#load-balancers-with-mixed-protocol-types>
    /// and kube-proxy's handling of `status.loadBalancer.ingress`). From outside, the cloud's
    /// load balancer sends it to a node's NodePort: with `externalTrafficPolicy: Local` only to
    /// nodes with a local endpoint (its health check fails on the others); otherwise to one of
    /// the nodes running a backend, picked round-robin — a subset of the nodes a cloud may use
    /// (<https://kubernetes.io/docs/concepts/services-networking/service/#loadbalancer>) — or,
    /// when none of those passes the health check, to any node that does.
    fn to_load_balancer(&self, flow: &Flow, svc: usize) -> Decision {
        if !matches!(flow.src, Src::Outside(_)) {
            return self.to_cluster_ip(flow, svc);
        }
        if !self.net.load_balancers_reachable {
            // An internal load balancer, or a client whose route to it is blocked: nothing
            // answers, not even a refusal (AKS "Use an internal load balancer": reachable only
            // from the VNet).
            return Decision::fail(
                Failure::Timeout,
                "SVC-TYPES",
                "the load balancer's address does not answer clients outside the cluster",
            );
        }
        let s = &self.services[svc];
        let Some(sp) = s
            .ports
            .iter()
            .position(|p| p.port == flow.port && p.proto == flow.proto)
        else {
            return Decision::fail(Failure::Timeout, "SVC-TYPES", "the load balancer has no such port");
        };
        let Some(node_port) = s.ports[sp].node_port else {
            return Decision::fail(
                Failure::Timeout,
                "SVC-TYPES",
                "the load balancer has no NodePort to send to",
            );
        };
        // The cloud health-checks kube-proxy on each node (its healthz, or the service's
        // healthCheckNodePort with the Local policy) and leaves out nodes where it does not
        // answer (KEP-3836, https://github.com/kubernetes/enhancements/tree/master/keps/sig-network/3836-kube-proxy-improved-ingress-connectivity-reliability).
        let healthy = |n: &usize| !self.nodes[*n].has(Fault::KubeProxyStopped);
        let mut nodes: Vec<usize> = s.ports[sp]
            .targets
            .iter()
            .map(|(pod, _)| self.pods[*pod].node)
            .filter(healthy)
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        if nodes.is_empty() && !s.local_only && !s.ports[sp].targets.is_empty() {
            // No backend's node passes: any node whose kube-proxy answers forwards the flow.
            nodes = (0..self.nodes.len()).filter(healthy).collect();
        }
        if nodes.is_empty() {
            return Decision::fail(
                Failure::Timeout,
                "SVC-TYPES",
                "the load balancer has no healthy node: no node with a ready endpoint passes its health check",
            );
        }
        let n = nodes[usize::try_from(flow.pick).unwrap_or(0) % nodes.len()];
        let via = Flow {
            dst: self.nodes[n].ip,
            port: node_port,
            ..*flow
        };
        self.to_node_port(&via, n, svc, sp)
    }

    fn to_cluster_ip(&self, flow: &Flow, svc: usize) -> Decision {
        let s = &self.services[svc];
        if flow.proto == Proto::Icmp {
            return Decision::fail(
                Failure::NoReply,
                "SVC-TYPES",
                "a ClusterIP is virtual: it answers its service ports, never ping",
            );
        }
        let Some(lb) = self.src_node(flow.src) else {
            return Decision::fail(
                Failure::Timeout,
                "SVC-TYPES",
                "ClusterIPs are reachable only inside the cluster",
            );
        };
        let Some(sp) = s
            .ports
            .iter()
            .position(|p| p.port == flow.port && p.proto == flow.proto)
        else {
            return Decision::fail(Failure::Timeout, "SVC-TYPES", "the service has no such port");
        };
        let node = &self.nodes[lb];
        let windows_host = matches!(flow.src, Src::Node(_)) && node.windows;
        if windows_host && node.kube <= (1, 9) {
            return Decision::fail(
                Failure::Timeout,
                "HIST-1.9-SVC-VIP-NODE",
                "Windows nodes cannot reach Service IPs (platform limitation of Kubernetes 1.9)",
            );
        }
        // WDBG: "My Windows node cannot access my services using the service IP … a known
        // limitation"; WUG: "Only Windows pods are able to access service IPs". Every current
        // document keeps it, whatever the runtime (SVC-VIP-FROM-NODE).
        if windows_host && !self.windows_host_reaches_api(flow, svc) {
            return Decision::fail(
                Failure::Timeout,
                "SVC-VIP-FROM-NODE",
                "a Windows host cannot reach Service ClusterIPs; only its pods can",
            );
        }
        if let Some(v) = self.pod_out(flow.src, false, flow.proto) {
            return v;
        }
        if node.windows && node.has(Fault::KubeProxyStopped) {
            return Decision::fault(
                Fault::KubeProxyStopped,
                Failure::Timeout,
                "kube-proxy is not running on this node: no load balancer for the ClusterIP",
            );
        }
        if node.has(Fault::FlannelRejoinStaleSourceVip) {
            return Decision::fault(
                Fault::FlannelRejoinStaleSourceVip,
                Failure::Timeout,
                "kube-proxy has no source VIP endpoint on this re-joined node (stale SourceVip.json): no load balancing",
            );
        }
        if s.cluster_dns && node.has(Fault::DnsUnreachable) {
            return Decision::fault(
                Fault::DnsUnreachable,
                Failure::Timeout,
                "the cluster DNS service is unreachable from this node",
            );
        }
        if let Some(v) = self.drifted(flow, lb, svc, sp) {
            return v;
        }
        if self.is_api_service(svc) {
            return self.to_api_server(flow);
        }
        let client = self.source_ip(flow.src);
        let (backend, port, affinity_ignored) = match self.balance(svc, sp, lb, false, client, flow.pick) {
            Ok(b) => b,
            Err(v) => return v,
        };
        let mut leg = self.to_pod(flow.src, backend, port, flow.proto);
        if leg.rule == Fault::ExceptionListMissingCluster.rule() {
            return leg;
        }
        if let (Ok(reached), Some(vip)) = (&mut leg.result, self.balanced_source(node)) {
            reached.seen_from = vip;
        }
        if affinity_ignored {
            return leg.with_rule(
                "NET-SESSION-AFFINITY",
                "ClientIP session affinity is ignored before Windows Server 2022: round robin",
            );
        }
        if self.src_windows(flow.src) {
            leg.with_rule("SVC-VIP-FROM-WINPOD", "a Windows pod reaches Service ClusterIPs")
        } else {
            leg.with_rule("NET-POD-SVC-CLUSTERIP", "pod to ClusterIP works")
        }
    }

    /// What a Windows node's data plane that drifted from the API does to a flow through its
    /// load balancer for port `sp` of `svc` (`node::hnslb` lists the same drift): no load
    /// balancer for the cluster DNS Service; a deleted backend kept in it, which the attempts
    /// that pick it reach; a reused pod address whose stale remote endpoint takes the replies
    /// to that pod (kubernetes#138000: "DNS timeouts caused by traffic being routed to the
    /// wrong node").
    fn drifted(&self, flow: &Flow, lb: usize, svc: usize, sp: usize) -> Option<Decision> {
        let node = &self.nodes[lb];
        if !node.windows {
            return None;
        }
        let s = &self.services[svc];
        if s.cluster_dns && node.has(Fault::HnsLbPolicyMissing) {
            return Some(Decision::fault(
                Fault::HnsLbPolicyMissing,
                Failure::Timeout,
                "kube-proxy has no HNS load balancer for the cluster DNS service on this node",
            ));
        }
        if s.cluster_dns && node.has(Fault::HnsStaleBackend) {
            let slots = s.ports[sp].targets.len() as u64 + 1;
            if flow.pick % slots == slots - 1 {
                return Some(Decision::fault(
                    Fault::HnsStaleBackend,
                    Failure::Timeout,
                    "the node's load balancer sent the connection to a deleted backend's address",
                ));
            }
        }
        if let Src::Pod { pod, .. } = flow.src
            && node.has(Fault::HnsStaleRemoteEndpoint)
            && self.reused_pod(lb) == Some(pod)
        {
            return Some(Decision::fault(
                Fault::HnsStaleRemoteEndpoint,
                Failure::Timeout,
                "this pod's address is also a stale remote endpoint on its node: the replies go to the pod that had it before",
            ));
        }
        None
    }

    /// The pod on node `n` whose address [`Fault::HnsStaleRemoteEndpoint`] finds reused: the
    /// lowest address among the node's pod-network pods (`node::hnslb` picks the same).
    fn reused_pod(&self, n: usize) -> Option<usize> {
        self.pods
            .iter()
            .enumerate()
            .filter(|(_, p)| p.node == n && !p.host_network)
            .min_by_key(|(_, p)| p.ip)
            .map(|(i, _)| i)
    }

    /// A flow to a node's address: its NodePorts, hostPorts, host-network listeners, or the node.
    fn to_node_address(&self, flow: &Flow, n: usize) -> Decision {
        if flow.proto != Proto::Icmp {
            if let Some(&(svc, sp)) = self.node_ports.get(&(flow.port, flow.proto)) {
                return self.to_node_port(flow, n, svc, sp);
            }
            if let Some(&pod) = self.host_ports.get(&(n, flow.port, flow.proto)) {
                return self.to_host_port(flow, n, pod);
            }
        }
        self.to_node(flow, n)
    }

    fn to_node_port(&self, flow: &Flow, n: usize, svc: usize, sp: usize) -> Decision {
        let node = &self.nodes[n];
        let s = &self.services[svc];
        let from = self.src_node(flow.src);
        if matches!(flow.src, Src::Node(_)) && from == Some(n) && node.windows {
            return Decision::fail(
                Failure::Timeout,
                "NP-LOCAL-NODE",
                "a Windows node cannot reach its own NodePorts (other nodes and outside clients can)",
            );
        }
        if let Some(v) = self.pod_out(flow.src, from != Some(n), flow.proto) {
            return v;
        }
        if node.windows && node.has(Fault::KubeProxyStopped) {
            return Decision::fault(
                Fault::KubeProxyStopped,
                Failure::Timeout,
                "kube-proxy is not running on the node: nothing forwards its NodePorts",
            );
        }
        if node.windows && node.has(Fault::FlannelRejoinStaleSourceVip) {
            return Decision::fault(
                Fault::FlannelRejoinStaleSourceVip,
                Failure::Timeout,
                "kube-proxy has no source VIP endpoint on this re-joined node (stale SourceVip.json): its NodePorts forward nothing",
            );
        }
        if s.local_only && node.windows && !self.local_policy_served(node) {
            return Decision::fail(
                Failure::Timeout,
                "NET-LOCAL-POLICY-NON-DSR",
                "externalTrafficPolicy: Local is not supported by this Windows kube-proxy without DSR",
            );
        }
        if self.is_api_service(svc) {
            return self.to_api_server(flow);
        }
        let client = self.source_ip(flow.src);
        let (backend, port, affinity_ignored) = match self.balance(svc, sp, n, s.local_only, client, flow.pick) {
            Ok(b) => b,
            Err(v) => return v,
        };
        // Cluster policy SNATs to the node's address (its source VIP on overlay without DSR);
        // Local keeps the client's.
        let seen = if s.local_only {
            client
        } else {
            self.balanced_source(node).unwrap_or(node.ip)
        };
        if let Some(v) = self.pod_in(backend, Some(n), flow.proto) {
            return v;
        }
        let (rule, why) = match flow.src {
            _ if affinity_ignored => (
                "NET-SESSION-AFFINITY",
                "ClientIP session affinity is ignored before Windows Server 2022: round robin",
            ),
            _ if s.local_only && node.windows => (
                "NET-DSR",
                "externalTrafficPolicy: Local works with DSR and keeps the client's address",
            ),
            Src::Pod { .. } if self.src_windows(flow.src) => ("NP-FROM-WINPOD", "a Windows pod reaches a NodePort"),
            Src::Outside(_) => ("NP-REMOTE", "an outside client reaches the NodePort"),
            Src::Node(m) if m != n => ("NP-REMOTE", "another node reaches the NodePort"),
            _ => ("SVC-TYPES", "the NodePort forwards to a backend"),
        };
        self.at_pod(backend, port, flow.proto, seen, rule, why)
    }

    fn to_host_port(&self, flow: &Flow, n: usize, pod: usize) -> Decision {
        let from = self.src_node(flow.src);
        if let Some(v) = self.pod_out(flow.src, from != Some(n), flow.proto) {
            return v;
        }
        let node = &self.nodes[n];
        if node.windows && !node.port_mappings {
            return Decision::fail(
                Failure::Timeout,
                "NET-HOSTPORT",
                "this Windows CNI has no portMappings: nothing maps the hostPort to the pod",
            );
        }
        // containernetworking/plugins#475: "Requires Windows >=1903 for containers to reach their
        // own node through NodeIP + HostPort" — containers, not the host.
        let from_pod = matches!(flow.src, Src::Pod { .. });
        if node.windows && from_pod && from == Some(n) && node.build.is_some_and(|b| b < 18362) {
            return Decision::fail(
                Failure::Timeout,
                "NET-HOSTPORT",
                "a container reaches its own node's hostPorts only from Windows 1903 on",
            );
        }
        if let Some(v) = self.pod_in(pod, from, flow.proto) {
            return v;
        }
        let Some(hp) = self.pods[pod]
            .host_ports
            .iter()
            .find(|h| h.host_port == flow.port && h.proto == flow.proto)
        else {
            return Decision::fail(Failure::Refused, "NET-HOSTPORT", "no hostPort mapping");
        };
        self.at_pod(
            pod,
            hp.container_port,
            flow.proto,
            self.source_ip(flow.src),
            "NET-HOSTPORT",
            "the node's hostPort maps to the pod",
        )
    }

    fn to_node(&self, flow: &Flow, n: usize) -> Decision {
        let from = self.src_node(flow.src);
        if let Some(v) = self.pod_out(flow.src, from != Some(n), flow.proto) {
            return v;
        }
        let (rule, why) = match flow.src {
            Src::Pod { .. } => ("NET-POD-NODE", "pod to node works"),
            _ => (
                "HIST-1.9-VALIDATION",
                "nodes reach each other (the documented node-to-node check)",
            ),
        };
        let seen = self.source_ip(flow.src);
        if flow.proto == Proto::Icmp {
            return Decision::ok(Endpoint::Node { node: n, port: 0 }, seen, rule, why);
        }
        if let Some(&pod) = self.host_listeners.get(&(n, flow.port, flow.proto)) {
            return Decision::ok(Endpoint::Pod { pod, port: flow.port }, seen, rule, why);
        }
        if flow.proto == Proto::Tcp && flow.port == KUBELET_PORT {
            return Decision::ok(
                Endpoint::Node {
                    node: n,
                    port: flow.port,
                },
                seen,
                rule,
                why,
            );
        }
        Decision::fail(Failure::Refused, rule, "nothing listens on that port on the node")
    }

    fn loopback(&self, flow: &Flow) -> Decision {
        match flow.src {
            Src::Pod { pod, container } => {
                let p = &self.pods[pod];
                let node = &self.nodes[p.node];
                let isolated = node.windows && node.build.is_some_and(|b| b < 16299);
                let (rule, why) = if isolated {
                    (
                        "HIST-1.5-LOCALHOST",
                        "on Windows Server 2016 each container has its own localhost",
                    )
                } else {
                    ("POD-MULTI-CONTAINER", "containers of a pod share localhost")
                };
                if flow.proto == Proto::Icmp {
                    return Decision::ok(Endpoint::Pod { pod, port: 0 }, flow.dst, rule, why);
                }
                if let Some(v) = self.pod_out(flow.src, false, flow.proto) {
                    return v;
                }
                let only = if isolated { Some(container) } else { None };
                match p.serving(flow.port, flow.proto, only) {
                    Some(_) => Decision::ok(Endpoint::Pod { pod, port: flow.port }, flow.dst, rule, why),
                    None => Decision::fail(Failure::Refused, rule, "nothing in the pod listens on that port"),
                }
            }
            Src::Node(n) => {
                if flow.proto != Proto::Icmp
                    && let Some(&(svc, sp)) = self.node_ports.get(&(flow.port, flow.proto))
                {
                    return self.to_node_port(flow, n, svc, sp);
                }
                self.to_node(flow, n)
            }
            Src::Outside(_) => Decision::fail(Failure::Refused, "SVC-TYPES", "the outside client's own localhost"),
        }
    }

    fn to_outside(&self, flow: &Flow, host: Option<usize>) -> Decision {
        let Some(n) = self.src_node(flow.src) else {
            return Decision::fail(Failure::Timeout, "NET-POD-EXT-IP", "not a cluster address");
        };
        let node = &self.nodes[n];
        if let Some(v) = self.pod_out(flow.src, true, flow.proto) {
            return v;
        }
        // The node subnet's resolver (the VNet/VPC DNS: Azure's 168.63.129.16, the Route 53
        // Resolver) answers nodes without egress too.
        let resolver = host.is_some_and(|h| self.outside[h].name == NODE_RESOLVER);
        if !self.net.egress && !resolver {
            // A private cluster whose outbound route ends at a firewall that denies: nothing
            // answers, not even a refusal (https://learn.microsoft.com/azure/aks/egress-outboundtype).
            return Decision::fail(
                Failure::Timeout,
                "NET-POD-EXT-IP",
                "the cluster has no egress: its outbound route drops traffic to outside addresses",
            );
        }
        if let Some(ports) = &self.net.egress_ports
            && !resolver
            && flow.proto != Proto::Icmp
            && !ports.contains(&flow.port)
        {
            // A firewall that allows only these ports drops the rest silently (Azure Firewall
            // application rules, a corporate egress proxy; real-clusters.md §7).
            return Decision::fail(
                Failure::Timeout,
                "NET-POD-EXT-IP",
                "the cluster's egress allows only network.egressPorts: the outbound firewall drops traffic to other ports",
            );
        }
        let is_pod = matches!(flow.src, Src::Pod { .. });
        if is_pod && flow.proto != Proto::Icmp && node.has(Fault::ExceptionListCoversOutside) {
            return Decision::fault(
                Fault::ExceptionListCoversOutside,
                Failure::Timeout,
                "the outside range is in the OutboundNAT ExceptionList: the traffic is not SNATed and replies never come back",
            );
        }
        if is_pod && flow.proto == Proto::Icmp && node.windows && self.net.mode != NetworkMode::Transparent {
            return Decision::fail(
                Failure::NoReply,
                "NET-ICMP-EXTERNAL",
                "ICMP from Windows pods to outside destinations gets no reply (win-bridge, win-overlay, Azure CNI); use TCP/UDP",
            );
        }
        if is_pod && flow.proto != Proto::Icmp && node.has(Fault::PortExhaustion) {
            return Decision::fault(
                Fault::PortExhaustion,
                Failure::Timeout,
                "the node's ephemeral ports are exhausted: outbound NAT has no port for the pod's connection",
            );
        }
        let Some(h) = host else {
            return Decision::fail(
                Failure::Timeout,
                "NET-POD-EXT-IP",
                "no host of the simulated outside world has this address",
            );
        };
        // Pod traffic leaves through the node's outbound NAT.
        let seen = node.ip;
        let (rule, why) = ("NET-POD-EXT-IP", "traffic to outside addresses works");
        if flow.proto == Proto::Icmp {
            return Decision::ok(Endpoint::Outside { host: h, port: 0 }, seen, rule, why);
        }
        if self.outside[h]
            .serves
            .iter()
            .any(|(port, proto, _)| *port == flow.port && *proto == flow.proto)
        {
            Decision::ok(
                Endpoint::Outside {
                    host: h,
                    port: flow.port,
                },
                seen,
                rule,
                why,
            )
        } else {
            Decision::fail(Failure::Refused, rule, "the outside host does not serve that port")
        }
    }
}

mod apiserver;
#[cfg(test)]
mod tests;

pub use apiserver::{API_SERVER_PORT, MANAGED_API_SERVER_PORT};
use wiring::Holder;
pub use wiring::Wiring;
