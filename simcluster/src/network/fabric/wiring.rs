//! What the fabric's flows run over: the nodes, running pods, Services and outside hosts, with
//! their indexes by address, port and name. Snapshots that differ only in their
//! NetworkPolicies share one wiring (a policy written or deleted, a pod labelled, changes no
//! address, listener or backend).

use std::collections::{BTreeSet, HashMap};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use super::{NetFacts, NodeFacts, OutsideHost, PodFacts, Proto, ServiceFacts, names};

/// What holds an address: a pod, a node, a service or an outside host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Holder {
    Pod(usize),
    Node(usize),
    Service(usize),
    /// A LoadBalancer Service's ingress address.
    LoadBalancer(usize),
    Outside(usize),
}

/// The network's endpoints and how addresses, ports and names reach them.
#[derive(Debug, Clone)]
pub struct Wiring {
    pub net: NetFacts,
    /// The nodes, made once from their profiles and shared by every snapshot.
    pub nodes: Arc<Vec<NodeFacts>>,
    /// The running pods, each shared with the snapshots before it while its object is unchanged.
    pub pods: Vec<Arc<PodFacts>>,
    pub services: Vec<ServiceFacts>,
    pub outside: Vec<OutsideHost>,
    pub(super) addrs: HashMap<Ipv4Addr, Holder>,
    /// (node, port, proto) → host-network pod listening there.
    pub(super) host_listeners: HashMap<(usize, u16, Proto), usize>,
    /// (node, hostPort, proto) → pod.
    pub(super) host_ports: HashMap<(usize, u16, Proto), usize>,
    /// (nodePort, proto) → (service, port index).
    pub(super) node_ports: HashMap<(u16, Proto), (usize, usize)>,
    /// The pods by namespace and name.
    pub(super) names: names::PodNames,
    /// Service index → per port, the backend addresses every node's proxy had programmed before
    /// the Service's latest change: they keep answering while the change is programmed (a
    /// proxy replaces its rules for a Service at its next sync; until then the old ones work).
    pub settled: HashMap<usize, Arc<Vec<BTreeSet<Ipv4Addr>>>>,
    /// The node whose host address the API server listens on: the `kubernetes` Service's
    /// endpoint (None without a control-plane node).
    pub api_server: Option<usize>,
    /// Without a control-plane node (a managed platform), the outside host the `kubernetes`
    /// Service's endpoint is: the provider's API server.
    pub managed_api_server: Option<usize>,
    /// Dual-stack: each IPv6 address of a pod or Service (`status.podIPs`, `spec.clusterIPs`)
    /// to the IPv4 address of the same pod or Service; empty on a single-stack cluster.
    pub ipv6: HashMap<Ipv6Addr, Ipv4Addr>,
}

impl Wiring {
    /// Nothing wired yet.
    pub(super) fn new(net: NetFacts) -> Wiring {
        Wiring {
            settled: HashMap::new(),
            net,
            nodes: Arc::new(Vec::new()),
            pods: Vec::new(),
            services: Vec::new(),
            outside: Vec::new(),
            addrs: HashMap::new(),
            host_listeners: HashMap::new(),
            host_ports: HashMap::new(),
            node_ports: HashMap::new(),
            names: names::PodNames::default(),
            api_server: None,
            managed_api_server: None,
            ipv6: HashMap::new(),
        }
    }

    /// Builds the address maps; call after adding everything.
    pub fn index(&mut self) {
        self.addrs.clear();
        self.host_listeners.clear();
        self.host_ports.clear();
        self.node_ports.clear();
        self.names = names::PodNames::default();
        for (i, h) in self.outside.iter().enumerate() {
            self.addrs.insert(h.ip, Holder::Outside(i));
        }
        for (i, n) in self.nodes.iter().enumerate() {
            self.addrs.insert(n.ip, Holder::Node(i));
        }
        for (i, p) in self.pods.iter().enumerate() {
            if p.host_network {
                for s in &p.serves {
                    self.host_listeners.insert((p.node, s.port, s.proto), i);
                }
            } else if !p.ip.is_unspecified() {
                self.addrs.insert(p.ip, Holder::Pod(i));
            }
            for hp in &p.host_ports {
                self.host_ports.insert((p.node, hp.host_port, hp.proto), i);
            }
        }
        for (i, s) in self.services.iter().enumerate() {
            if let Some(ip) = s.cluster_ip {
                self.addrs.insert(ip, Holder::Service(i));
            }
            for ip in &s.ingress {
                self.addrs.insert(*ip, Holder::LoadBalancer(i));
            }
            for (j, p) in s.ports.iter().enumerate() {
                if let Some(np) = p.node_port {
                    self.node_ports.insert((np, p.proto), (i, j));
                }
            }
        }
    }
}
