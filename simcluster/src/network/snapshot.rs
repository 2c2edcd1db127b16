//! The network fabric's facts read from the cluster's state: the nodes (from their profiles),
//! the running pods and what listens in them (agnhost subcommands and their flags, web server
//! images, CoreDNS and kube-dns, declared container ports), hostPorts, services with their ready
//! backends from the Endpoints objects (the cluster DNS service's are the DNS pods: without a
//! ready one, lookups fail), and the simulated outside world with its resolvers.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use serde_json::Value;

use crate::config::profile::NodeProfile;
use crate::network::dns::{OUTSIDE_HOSTS, OUTSIDE_RESOLVERS};
use crate::network::fabric::policy::PodMeta;
use crate::network::fabric::{
    App, Fabric, HostPort, NetFacts, NodeFacts, OutsideHost, PodFacts, Proto, Serve, ServiceFacts, ServicePort,
    source_vip_of,
};
use crate::network::versions::ByVersion;
use crate::store::resources;
use crate::store::{Obj, Store};
use crate::vocab::json;

fn arr<'a>(v: &'a Value, ptr: &str) -> &'a [Value] {
    crate::vocab::json::get(v, ptr)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A port number field (`containerPort`, `hostPort`, `port`, `nodePort`) of `v`.
fn port_at(v: &Value, key: &str) -> Option<u16> {
    v.get(key).and_then(Value::as_u64).and_then(|n| u16::try_from(n).ok())
}

fn proto_of(text: &str) -> Option<Proto> {
    match text {
        "" | "TCP" => Some(Proto::Tcp),
        "UDP" => Some(Proto::Udp),
        _ => None,
    }
}

/// The address of the resolver a node's own network uses (`a.b.c.1` of the node's /24).
pub fn node_resolver(node_ip: Ipv4Addr) -> Ipv4Addr {
    let [a, b, c, _] = node_ip.octets();
    Ipv4Addr::new(a, b, c, 1)
}

/// What a pod object says for the fabric, read once per version of the object: a rebuild reads
/// only the pods that changed since the last one (a big cluster churns a few pods at a time, and
/// reading every pod's JSON on each change made each flow cost as much as the cluster is big).
/// Every write stamps the store's next resourceVersion, so the cache knows a version by its
/// resourceVersion without reading the object at all, and holds no version itself (the store
/// may replace a version by a copy without its decoded value: the same resourceVersion).
#[derive(Debug, Default)]
pub struct PodCache {
    /// Each pod version's facts (None: not running).
    pods: ByVersion<Option<Arc<PodFacts>>>,
    /// Each Endpoints object's subsets (a Service backed by a DaemonSet has an address per
    /// node: read once per version, not per rebuild).
    endpoints: ByVersion<Arc<Vec<Subset>>>,
    /// Each Service version's spec, as the fabric reads it (at 250 nodes under full coverage,
    /// reading every Service's JSON on each rebuild was a tenth of a run's CPU).
    services: ByVersion<Arc<ServiceSpec>>,
    /// The rebuild under way.
    rebuild: u64,
    /// Node index by name, made once.
    node_of: HashMap<String, usize>,
}

/// One subset of an Endpoints object: its ports (name, number) and ready addresses (IP, the
/// name of the pod its `targetRef` names).
#[derive(Debug)]
struct Subset {
    ports: Vec<(String, Option<u16>)>,
    addresses: Vec<(Option<Ipv4Addr>, String)>,
}

impl Subset {
    fn read_all(ep: &Value) -> Vec<Subset> {
        arr(ep, "/subsets")
            .iter()
            .map(|subset| Subset {
                ports: arr(subset, "/ports")
                    .iter()
                    .map(|p| (json::str(p, "/name").to_string(), port_at(p, "port")))
                    .collect(),
                addresses: arr(subset, "/addresses")
                    .iter()
                    .map(|a| {
                        (
                            json::str(a, "/ip").parse::<Ipv4Addr>().ok(),
                            json::str(a, "/targetRef/name").to_string(),
                        )
                    })
                    .collect(),
            })
            .collect()
    }
}

/// What the fabric reads of one version of a Service.
#[derive(Debug)]
struct ServiceSpec {
    namespace: String,
    name: String,
    external_name: bool,
    /// How many ports the spec lists (a one-port Service matches a one-port subset by number).
    listed_ports: usize,
    /// The ports with a known protocol and a number: name, port, NodePort (NodePort and
    /// LoadBalancer Services), protocol.
    ports: Vec<(String, u16, Option<u16>, Proto)>,
    cluster_ip: Option<Ipv4Addr>,
    cluster_ipv6: Vec<Ipv6Addr>,
    ingress: Vec<Ipv4Addr>,
    local_only: bool,
    client_ip_affinity: bool,
}

impl ServiceSpec {
    fn read(svc: &Obj) -> ServiceSpec {
        let v = svc.value();
        let ty = json::str(v, "/spec/type");
        let with_node_ports = matches!(ty, "NodePort" | "LoadBalancer");
        let listed = arr(v, "/spec/ports");
        ServiceSpec {
            namespace: svc.namespace().to_string(),
            name: svc.name().to_string(),
            external_name: ty == "ExternalName",
            listed_ports: listed.len(),
            ports: listed
                .iter()
                .filter_map(|p| {
                    let proto = proto_of(json::str(p, "/protocol"))?;
                    let port = port_at(p, "port")?;
                    let node_port = port_at(p, "nodePort").filter(|_| with_node_ports);
                    Some((json::str(p, "/name").to_string(), port, node_port, proto))
                })
                .collect(),
            cluster_ip: json::str(v, "/spec/clusterIP").parse().ok(),
            cluster_ipv6: arr(v, "/spec/clusterIPs")
                .iter()
                .filter_map(|a| a.as_str()?.parse::<Ipv6Addr>().ok())
                .collect(),
            ingress: if ty == "LoadBalancer" {
                arr(v, "/status/loadBalancer/ingress")
                    .iter()
                    .filter_map(|i| json::str(i, "/ip").parse().ok())
                    .collect()
            } else {
                Vec::new()
            },
            local_only: json::str(v, "/spec/externalTrafficPolicy") == "Local",
            client_ip_affinity: json::str(v, "/spec/sessionAffinity") == "ClientIP",
        }
    }
}

impl PodCache {
    /// Starts a rebuild over `profiles`' nodes.
    fn begin(&mut self, profiles: &[NodeProfile]) {
        self.rebuild += 1;
        if self.node_of.len() != profiles.len() {
            self.node_of = profiles.iter().enumerate().map(|(i, p)| (p.name.clone(), i)).collect();
        }
    }

    /// The pod's facts, from the cache when this version was read before.
    fn facts(&mut self, pod: &Obj, profiles: &[NodeProfile]) -> Option<Arc<PodFacts>> {
        let node_of = &self.node_of;
        self.pods
            .get(pod, self.rebuild, |pod| read_pod(pod, profiles, node_of).map(Arc::new))
    }

    /// The subsets of an Endpoints object, from the cache when this version was read before.
    fn subsets(&mut self, ep: &Obj) -> Arc<Vec<Subset>> {
        self.endpoints
            .get(ep, self.rebuild, |ep| Arc::new(Subset::read_all(ep.value())))
    }

    /// The spec of a Service, from the cache when this version was read before.
    fn service(&mut self, svc: &Obj) -> Arc<ServiceSpec> {
        self.services
            .get(svc, self.rebuild, |svc| Arc::new(ServiceSpec::read(svc)))
    }

    /// Forgets the pod versions this rebuild did not see (changed or deleted since); `seen`
    /// pods were.
    fn sweep_pods(&mut self, seen: usize) {
        self.pods.sweep(self.rebuild, Some(seen));
    }

    /// Forgets the Service and Endpoints versions this rebuild did not see.
    fn sweep_services(&mut self) {
        self.endpoints.sweep(self.rebuild, None);
        self.services.sweep(self.rebuild, None);
    }
}

/// The running pods' facts in the store's order, read through `cache` (which starts a rebuild).
pub fn running_pods(store: &Store, profiles: &[NodeProfile], cache: &mut PodCache) -> Vec<Arc<PodFacts>> {
    let listed = store.list(resources::core("pods"), None).0;
    cache.begin(profiles);
    let running: Vec<Arc<PodFacts>> = listed.iter().filter_map(|pod| cache.facts(pod, profiles)).collect();
    cache.sweep_pods(listed.len());
    running
}

/// Whether two lists of running pods are the same pods in the same order with the same network
/// facts (their labels and port names aside: only NetworkPolicies read those).
pub fn same_network(a: &[Arc<PodFacts>], b: &[Arc<PodFacts>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| Arc::ptr_eq(a, b) || a.same_network(b))
}

/// Whether the running `pods` have the labels and port names policies read, pod by pod.
pub fn same_meta(read: &[Arc<PodMeta>], pods: &[Arc<PodFacts>]) -> bool {
    read.len() == pods.len()
        && read
            .iter()
            .zip(pods)
            .all(|(a, b)| Arc::ptr_eq(a, &b.meta) || **a == *b.meta)
}

/// The fabric for the cluster's current state: `nodes` (made once from the profiles), the
/// `running` pods (from [`running_pods`]), Services and Endpoints read through `cache`.
pub fn fabric(
    store: &Store,
    profiles: &[NodeProfile],
    (nodes, net): (&Arc<Vec<NodeFacts>>, &NetFacts),
    running: Vec<Arc<PodFacts>>,
    cache: &mut PodCache,
) -> Fabric {
    let mut f = Fabric::new(net.clone());
    f.nodes = nodes.clone();
    f.api_server = api_server_node(store, profiles);
    if f.api_server.is_none() {
        f.managed_api_server = managed_api_server(&mut f, store);
    }
    add_outside(&mut f);
    let mut by_ip: HashMap<Ipv4Addr, usize> = HashMap::with_capacity(running.len());
    for (index, facts) in running.iter().enumerate() {
        if !facts.host_network {
            by_ip.insert(facts.ip, index);
            if let Some(v6) = facts.ipv6 {
                f.ipv6.insert(v6, facts.ip);
            }
        }
    }
    add_services(&mut f, store, &by_ip, &running, cache);
    cache.sweep_services();
    f.pods = running;
    f.index();
    f
}

/// Each node's facts for the fabric, from its profile (made once: profiles do not change).
pub fn node_facts(profiles: &[NodeProfile]) -> Vec<NodeFacts> {
    profiles
        .iter()
        .map(|p| NodeFacts {
            name: p.name.clone(),
            windows: p.is_windows(),
            build: p.build,
            kube: p.kubelet,
            ip: p.ip,
            source_vip: source_vip_of(&p.pod_cidr),
            backend_limit: p.service_backend_limit,
            port_mappings: p.port_mappings,
            vip_from_host: p.host_reaches_remote_cluster_ips(),
            faults: p.faults.iter().copied().collect(),
            shares: p.fault_shares.iter().map(|(f, share)| (*f, *share)).collect(),
            seed: p.timing.seed,
            programming: p.timing.programming(p.os),
        })
        .collect()
}

/// A running pod's facts; None for a pod that is not running on a known node with an address.
fn read_pod(pod: &Obj, profiles: &[NodeProfile], node_of: &HashMap<String, usize>) -> Option<PodFacts> {
    let v = pod.value();
    if json::str(v, "/status/phase") != "Running" {
        return None;
    }
    let (Some(&node), Ok(ip)) = (
        node_of.get(json::str(v, "/spec/nodeName")),
        json::str(v, "/status/podIP").parse::<Ipv4Addr>(),
    ) else {
        return None;
    };
    let host_network = ip == profiles[node].ip;
    let running: Vec<&str> = arr(v, "/status/containerStatuses")
        .iter()
        .filter(|c| crate::vocab::json::get(c, "/state/running").is_some())
        .map(|c| json::str(c, "/name"))
        .collect();
    let mut serves = Vec::new();
    let mut host_ports = Vec::new();
    for (i, c) in arr(v, "/spec/containers").iter().enumerate() {
        if !running.contains(&json::str(c, "/name")) {
            continue;
        }
        serves.extend(container_serves(c, i));
        for p in arr(c, "/ports") {
            let (Some(hp), Some(cp), Some(proto)) = (
                port_at(p, "hostPort").filter(|p| *p > 0),
                port_at(p, "containerPort"),
                proto_of(json::str(p, "/protocol")),
            ) else {
                continue;
            };
            if hp > 0 && !host_network {
                host_ports.push(HostPort {
                    host_port: hp,
                    container_port: cp,
                    proto,
                });
            }
        }
    }
    let hostname = if host_network {
        profiles[node].name.clone()
    } else {
        let h = match json::str(v, "/spec/hostname") {
            "" => pod.name(),
            h => h,
        };
        h.chars().take(63).collect()
    };
    let ipv6 = arr(v, "/status/podIPs")
        .iter()
        .find_map(|a| json::str(a, "/ip").parse::<Ipv6Addr>().ok());
    Some(PodFacts {
        namespace: pod.namespace().to_string(),
        name: pod.name().to_string(),
        hostname,
        ip,
        ipv6,
        node,
        host_network,
        serves,
        host_ports,
        meta: std::sync::Arc::new(crate::network::fabric::policy::PodMeta::read(v)),
    })
}

fn add_outside(f: &mut Fabric) {
    let mut hosts: BTreeMap<[u8; 4], Vec<&str>> = BTreeMap::new();
    for (name, ip) in OUTSIDE_HOSTS {
        hosts.entry(*ip).or_default().push(name);
    }
    for (ip, names) in hosts {
        // The public resolvers answer DNS on 53 and DNS-over-HTTPS on 443 (Cloudflare's
        // "DNS over HTTPS" docs: `https://1.1.1.1/dns-query`; Google Public DNS "DNS-over-HTTPS":
        // `https://dns.google/dns-query`, served on 8.8.8.8).
        let serves = if OUTSIDE_RESOLVERS.contains(&ip) {
            vec![
                (53, Proto::Udp, App::Dns),
                (53, Proto::Tcp, App::Dns),
                (443, Proto::Tcp, App::Web),
            ]
        } else {
            vec![(80, Proto::Tcp, App::Web), (443, Proto::Tcp, App::Web)]
        };
        f.outside.push(OutsideHost {
            ip: Ipv4Addr::from(ip),
            name: names.first().copied().unwrap_or_default().to_string(),
            serves,
        });
    }
    let node_ips: HashSet<Ipv4Addr> = f.nodes.iter().map(|n| n.ip).collect();
    let mut resolvers: Vec<Ipv4Addr> = f.nodes.iter().map(|n| node_resolver(n.ip)).collect();
    resolvers.dedup();
    for resolver in resolvers {
        if !node_ips.contains(&resolver) && !f.outside.iter().any(|h| h.ip == resolver) {
            f.outside.push(OutsideHost {
                ip: resolver,
                name: crate::network::fabric::NODE_RESOLVER.into(),
                serves: vec![(53, Proto::Udp, App::Dns), (53, Proto::Tcp, App::Dns)],
            });
        }
    }
}

/// Value of `--flag=V` or `--flag V` among `tokens`.
fn flag<'a>(tokens: &[&'a str], name: &str) -> Option<&'a str> {
    tokens.iter().enumerate().find_map(|(i, t)| match t.strip_prefix(name) {
        Some(rest) if rest.starts_with('=') => Some(&rest[1..]),
        Some("") => tokens.get(i + 1).copied(),
        _ => None,
    })
}

fn port_flag(tokens: &[&str], name: &str, default: i64) -> Option<u16> {
    let value = flag(tokens, name).map_or(Some(default), |v| v.parse::<i64>().ok())?;
    u16::try_from(value).ok().filter(|p| *p > 0)
}

/// What listens in a running container: agnhost servers by subcommand and flags, web server
/// images on port 80, and otherwise the declared container ports.
fn container_serves(c: &Value, container: usize) -> Vec<Serve> {
    let image = json::str(c, "/image").to_ascii_lowercase();
    let (_, name) = crate::vocab::image::repository(&image);
    let name = name.as_str();
    let tokens: Vec<&str> = arr(c, "/command")
        .iter()
        .chain(arr(c, "/args"))
        .filter_map(Value::as_str)
        .collect();
    let serve = |port, proto, app| Serve {
        port,
        proto,
        app,
        container,
    };
    let mut out = Vec::new();
    if name == "agnhost" {
        let lower: Vec<String> = tokens.iter().map(|t| t.to_ascii_lowercase()).collect();
        let sub = lower
            .iter()
            .find(|t| !t.starts_with('-') && !t.trim_end_matches(".exe").ends_with("agnhost"))
            .map(String::as_str);
        match sub {
            Some("netexec") => {
                if let Some(p) = port_flag(&tokens, "--http-port", 8080) {
                    out.push(serve(p, Proto::Tcp, App::Netexec));
                }
                if let Some(p) = port_flag(&tokens, "--udp-port", 8081) {
                    out.push(serve(p, Proto::Udp, App::Netexec));
                }
            }
            Some("test-webserver") => {
                if let Some(p) = port_flag(&tokens, "--port", 80) {
                    out.push(serve(p, Proto::Tcp, App::Web));
                }
            }
            Some("serve-hostname") => {
                if let Some(p) = port_flag(&tokens, "--port", 9376) {
                    let proto = if tokens.contains(&"--udp") {
                        Proto::Udp
                    } else {
                        Proto::Tcp
                    };
                    out.push(serve(p, proto, App::ServeHostname));
                }
            }
            Some("porter") => {
                for e in arr(c, "/env") {
                    if json::str(e, "/name").starts_with("SERVE_PORT_")
                        && let Ok(p) = json::str(e, "/value").parse::<u16>()
                    {
                        out.push(serve(p, Proto::Tcp, App::Web));
                    }
                }
            }
            _ => {}
        }
        return out;
    }
    if name.starts_with("coredns") {
        // CoreDNS: DNS, and its health (8080), ready (8181) and prometheus (9153) plugins.
        out.push(serve(53, Proto::Udp, App::Dns));
        out.push(serve(53, Proto::Tcp, App::Dns));
        for port in [8080, 8181, 9153] {
            out.push(serve(port, Proto::Tcp, App::DnsHealth));
        }
    }
    if name.starts_with("k8s-dns-dnsmasq") || name.starts_with("kube-dnsmasq") {
        // kube-dns: dnsmasq answers port 53 and forwards cluster names to kubedns.
        out.push(serve(53, Proto::Udp, App::Dns));
        out.push(serve(53, Proto::Tcp, App::Dns));
    }
    if matches!(name, "nginx" | "httpd") || image.contains("/iis") {
        out.push(serve(80, Proto::Tcp, App::Web));
    }
    // A script serving HTTP itself (the seed guide's PowerShell HttpListener on `http://*:80/`).
    for port in listener_prefixes(&tokens) {
        if !out.iter().any(|x| x.port == port && x.proto == Proto::Tcp) {
            out.push(serve(port, Proto::Tcp, App::Web));
        }
    }
    // A script answering UDP itself on a bound `System.Net.Sockets.UdpClient` (an echo loop).
    for port in udp_client_ports(&tokens) {
        if !out.iter().any(|x| x.port == port && x.proto == Proto::Udp) {
            out.push(serve(port, Proto::Udp, App::UdpEcho));
        }
    }
    for p in arr(c, "/ports") {
        let (Some(port), Some(proto)) = (port_at(p, "containerPort"), proto_of(json::str(p, "/protocol"))) else {
            continue;
        };
        if !out.iter().any(|x| x.port == port && x.proto == proto) {
            out.push(serve(port, proto, App::Web));
        }
    }
    out
}

/// Ports of `http://*:PORT/` or `http://+:PORT/` listener prefixes in a container's command line.
fn listener_prefixes(tokens: &[&str]) -> Vec<u16> {
    let mut ports = Vec::new();
    for t in tokens {
        for marker in ["http://*:", "http://+:"] {
            let mut rest = *t;
            while let Some(i) = rest.find(marker) {
                rest = &rest[i + marker.len()..];
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if let Ok(p) = digits.parse::<u16>()
                    && !ports.contains(&p)
                {
                    ports.push(p);
                }
            }
        }
    }
    ports
}

/// Ports a script binds `System.Net.Sockets.UdpClient`s to: `New-Object
/// System.Net.Sockets.UdpClient(8081)`, `… UdpClient 8081`, `… UdpClient -ArgumentList 8081`,
/// `[System.Net.Sockets.UdpClient]::new(8081)`. A client without a port (`UdpClient`,
/// `UdpClient()`) binds an ephemeral one and serves nothing.
fn udp_client_ports(tokens: &[&str]) -> Vec<u16> {
    let text = tokens.join(" ").to_ascii_lowercase();
    let mut ports = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("sockets.udpclient") {
        rest = &rest[i + "sockets.udpclient".len()..];
        let mut arg = rest.trim_start_matches(']').trim_start_matches("::new");
        arg = arg.trim_start();
        arg = arg.strip_prefix("-argumentlist").unwrap_or(arg).trim_start();
        arg = arg.strip_prefix('(').unwrap_or(arg).trim_start();
        let digits: String = arg.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(p) = digits.parse::<u16>()
            && p > 0
            && !ports.contains(&p)
        {
            ports.push(p);
        }
    }
    ports
}

/// The control-plane node (labelled `node-role.kubernetes.io/control-plane`) whose host address
/// the API server listens on.
/// Where a managed platform's API server answers when the cluster's objects name no address: a
/// documentation address (RFC 5737 TEST-NET-2) outside every cluster range.
const MANAGED_API_SERVER_IP: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);

/// The outside host behind `default/kubernetes` where no node runs the API server (AKS, EKS and
/// GKE host it off the cluster's nodes): its Endpoints' address, else a documentation address.
fn managed_api_server(f: &mut Fabric, store: &Store) -> Option<usize> {
    let listed: Option<Ipv4Addr> = store
        .get(resources::core("endpoints"), "default", "kubernetes")
        .ok()
        .and_then(|ep| {
            arr(ep.value(), "/subsets")
                .iter()
                .flat_map(|s| arr(s, "/addresses"))
                .find_map(|a| json::str(a, "/ip").parse().ok())
        });
    let ip = listed.unwrap_or(MANAGED_API_SERVER_IP);
    if let Some(i) = f.outside.iter().position(|h| h.ip == ip) {
        return Some(i);
    }
    f.outside.push(OutsideHost {
        ip,
        name: "api-server".into(),
        serves: vec![
            (
                crate::network::fabric::MANAGED_API_SERVER_PORT,
                Proto::Tcp,
                App::ApiServer,
            ),
            (crate::network::fabric::API_SERVER_PORT, Proto::Tcp, App::ApiServer),
        ],
    });
    Some(f.outside.len() - 1)
}

fn api_server_node(store: &Store, profiles: &[NodeProfile]) -> Option<usize> {
    let (nodes, _) = store.list(resources::core("nodes"), None);
    let name = nodes
        .iter()
        .find(|n| {
            crate::vocab::json::get(n.value(), "/metadata/labels/node-role.kubernetes.io~1control-plane").is_some()
        })
        .map(|n| n.name().to_string())?;
    profiles.iter().position(|p| p.name == name)
}

/// Adds each Service with its backends: the running pods its Endpoints' ready addresses are
/// (by address, else by the pod a `targetRef` names).
fn add_services(
    f: &mut Fabric,
    store: &Store,
    by_ip: &HashMap<Ipv4Addr, usize>,
    running: &[Arc<PodFacts>],
    cache: &mut PodCache,
) {
    // By namespace and name, made at the first address that is no pod's IP (rare: endpoints
    // list pod IPs).
    let by_name: std::cell::OnceCell<HashMap<(&str, &str), usize>> = std::cell::OnceCell::new();
    let named = |ns: &str, name: &str| {
        by_name
            .get_or_init(|| {
                running
                    .iter()
                    .enumerate()
                    .map(|(i, p)| ((p.namespace.as_str(), p.name.as_str()), i))
                    .collect()
            })
            .get(&(ns, name))
            .copied()
    };
    // One list of the Endpoints rather than a lookup per Service.
    let endpoints = store.list(resources::core("endpoints"), None).0;
    let endpoints: HashMap<(&str, &str), &Obj> = endpoints.iter().map(|ep| ((ep.namespace(), ep.name()), ep)).collect();
    for svc in store.list(resources::core("services"), None).0 {
        let spec = cache.service(&svc);
        if spec.external_name {
            continue;
        }
        let (ns, name) = (spec.namespace.as_str(), spec.name.as_str());
        let cluster_dns = ns == "kube-system" && name == "kube-dns";
        let subsets = endpoints
            .get(&(ns, name))
            .map(|ep| cache.subsets(ep))
            .unwrap_or_default();
        let mut ports = Vec::with_capacity(spec.ports.len());
        for (name, port, node_port, proto) in &spec.ports {
            let mut targets = Vec::new();
            for subset in subsets.iter() {
                let matched = subset
                    .ports
                    .iter()
                    .find(|(n, _)| n == name || (spec.listed_ports == 1 && subset.ports.len() == 1));
                let Some(target) = matched.and_then(|(_, p)| *p) else {
                    continue;
                };
                for (ip, pod_name) in &subset.addresses {
                    let pod = ip
                        .and_then(|ip| by_ip.get(&ip).copied())
                        .or_else(|| named(ns, pod_name));
                    if let Some(pod) = pod {
                        targets.push((pod, target));
                    }
                }
            }
            ports.push(ServicePort {
                name: name.clone(),
                port: *port,
                node_port: *node_port,
                proto: *proto,
                targets,
            });
        }
        if let Some(v4) = spec.cluster_ip {
            for v6 in &spec.cluster_ipv6 {
                f.ipv6.insert(*v6, v4);
            }
        }
        f.services.push(ServiceFacts {
            namespace: ns.to_string(),
            name: name.to_string(),
            cluster_ip: spec.cluster_ip,
            ingress: spec.ingress.clone(),
            ports,
            local_only: spec.local_only,
            client_ip_affinity: spec.client_ip_affinity,
            cluster_dns,
            changed_at: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.52";

    fn ports(c: Value) -> Vec<(u16, Proto, App)> {
        container_serves(&c, 0)
            .into_iter()
            .map(|s| (s.port, s.proto, s.app))
            .collect()
    }

    #[rstest]
    #[case::netexec_defaults(json!({"image": AGNHOST, "args": ["netexec"]}),
        vec![(8080, Proto::Tcp, App::Netexec), (8081, Proto::Udp, App::Netexec)])]
    #[case::netexec_flags(json!({"image": AGNHOST, "args": ["netexec", "--http-port=80", "--udp-port", "90"]}),
        vec![(80, Proto::Tcp, App::Netexec), (90, Proto::Udp, App::Netexec)])]
    #[case::netexec_no_udp(json!({"image": AGNHOST, "command": ["/agnhost", "netexec", "--udp-port=-1"]}),
        vec![(8080, Proto::Tcp, App::Netexec)])]
    #[case::netexec_windows_path(json!({"image": AGNHOST, "command": ["c:\\hpc\\agnhost.exe", "netexec", "--http-port=8083"]}),
        vec![(8083, Proto::Tcp, App::Netexec), (8081, Proto::Udp, App::Netexec)])]
    #[case::declared_port_is_not_agnhost_listening(json!({"image": AGNHOST, "args": ["pause"], "ports": [{"containerPort": 80}]}), vec![])]
    #[case::test_webserver(json!({"image": AGNHOST, "args": ["test-webserver"]}), vec![(80, Proto::Tcp, App::Web)])]
    #[case::serve_hostname_udp(json!({"image": AGNHOST, "args": ["serve-hostname", "--udp", "--port=9000"]}),
        vec![(9000, Proto::Udp, App::ServeHostname)])]
    #[case::porter(json!({"image": AGNHOST, "args": ["porter"], "env": [{"name": "SERVE_PORT_8000", "value": "8000"}]}),
        vec![(8000, Proto::Tcp, App::Web)])]
    #[case::nginx(json!({"image": "registry.k8s.io/e2e-test-images/nginx:1.14-4"}), vec![(80, Proto::Tcp, App::Web)])]
    #[case::iis(json!({"image": "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022"}), vec![(80, Proto::Tcp, App::Web)])]
    #[case::declared_ports(json!({"image": "example/app:1", "ports": [{"containerPort": 5000}, {"containerPort": 5001, "protocol": "UDP"}, {"containerPort": 5002, "protocol": "SCTP"}]}),
        vec![(5000, Proto::Tcp, App::Web), (5001, Proto::Udp, App::Web)])]
    #[case::powershell_http_listener(json!({"image": "mcr.microsoft.com/windows/servercore:ltsc2019",
        "command": ["powershell.exe", "-command", "$l = New-Object System.Net.HttpListener\n$l.Prefixes.Add('http://*:80/')\n$l.Start()"]}),
        vec![(80, Proto::Tcp, App::Web)])]
    #[case::powershell_udp_echo(json!({"image": "mcr.microsoft.com/windows/servercore:1709",
        "command": ["powershell.exe", "-Command", "$u = New-Object System.Net.Sockets.UdpClient(8081); while ($true) { $e = $null; $b = $u.Receive([ref]$e); [void]$u.Send($b, $b.Length, $e) }"]}),
        vec![(8081, Proto::Udp, App::UdpEcho)])]
    #[case::powershell_udp_new(json!({"image": "mcr.microsoft.com/windows/servercore:ltsc2016",
        "command": ["powershell", "-c", "$u = [System.Net.Sockets.UdpClient]::new(9000)"]}),
        vec![(9000, Proto::Udp, App::UdpEcho)])]
    #[case::powershell_udp_client_only(json!({"image": "mcr.microsoft.com/windows/servercore:1709",
        "command": ["powershell", "-c", "$u = New-Object System.Net.Sockets.UdpClient; $u.Connect('10.0.0.1', 53)"]}),
        vec![])]
    #[case::pause(json!({"image": "registry.k8s.io/pause:3.10"}), vec![])]
    fn what_listens(#[case] container: Value, #[case] expect: Vec<(u16, Proto, App)>) {
        assert_eq!(ports(container), expect);
    }
}
