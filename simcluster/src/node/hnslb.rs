//! The HNS load balancers the Windows kube-proxy programs on its node (the `kernelspace`
//! proxier, kubernetes `pkg/proxy/winkernel/proxier.go`): one per Service cluster IP and one
//! per LoadBalancer ingress address, each with its backends, its flags and its port mappings'
//! flags (microsoft/hcsshim `hcn/hcnloadbalancer.go`), which the host's `Get-HnsPolicyList`
//! lists.
//!
//! Modelled from the sources: backends come from the Service's EndpointSlices where the
//! Windows kube-proxy reads them (1.21 on, the `WindowsEndpointSliceProxying` gate on by
//! default; KFG), else from its Endpoints, ready addresses only; a Service with more backends
//! than the node's HNS load balancer takes gets none (NET-SVC-BACKEND-LIMIT: 64, 1,024 with
//! the OS fix; W20, W22, WNETo, WNET — kube-proxy logs "Policy creation failed" and the Service
//! is not served through the node); an ingress address of a Service annotated
//! `preserve-destination: "true"` gets a DSR load balancer over the node's local backends only,
//! with the `PreserveDIP` and `UseMux` port-mapping flags, where the node's Windows supports
//! it (NET-PRESERVE-DEST: version 1903 or later; W20, WNET), as does one with
//! `externalTrafficPolicy: Local` (without the flags); a node without a local backend for such
//! an address skips it, as kube-proxy does.
//!
//! The data-plane faults change what the node lists, never the API: [`Fault::HnsLbPolicyMissing`]
//! leaves out the cluster DNS Service's load balancer, [`Fault::HnsStaleBackend`] keeps a
//! deleted replica's address among its backends (with that address's remote endpoint),
//! [`Fault::HnsStaleRemoteEndpoint`] keeps a remote endpoint for the address one of the node's
//! own pods now has (pointing at another node on overlay), and [`Fault::HnsLeakedPolicies`]
//! keeps a load balancer for a Service address that no Service has.

use std::collections::HashMap;

use serde_json::Value;

use crate::config::faults::Fault;
use crate::config::platform::NetworkMode;
use crate::config::profile::NodeProfile;
use crate::node::host::{guid, kube_proxy_programs, pod_address};
use crate::store::{Obj, Store, resources};
use crate::vocab::json as j;

/// `LoadBalancerFlagsDSR` (hcsshim `hcn/hcnloadbalancer.go`).
pub(crate) const DSR: u32 = 1;
/// `LoadBalancerPortMappingFlagsUseMux`.
pub(crate) const USE_MUX: u32 = 4;
/// `LoadBalancerPortMappingFlagsPreserveDIP`: packets reach the backend with the VIP as their
/// destination.
pub(crate) const PRESERVE_DIP: u32 = 8;
/// The first Windows build the documentation names for preserve-destination: Windows Server,
/// version 1903 (W20, WNET).
const PRESERVE_DIP_BUILD: u32 = 18362;
/// The Windows kube-proxy reads EndpointSlices from 1.21 (KFG `WindowsEndpointSliceProxying`).
const SLICES_FROM: (u32, u32) = (1, 21);

/// One port of a load balancer: (IP protocol number, backend port, service port).
pub(crate) type LbPort = (u8, u16, u16);

/// One load balancer kube-proxy programmed for a Service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadBalancer {
    pub id: String,
    /// `namespace/name` of the Service.
    pub service: String,
    pub vip: String,
    pub ports: Vec<LbPort>,
    /// The HNS endpoint ids of its backends.
    pub endpoints: Vec<String>,
    /// The load balancer's flags ([`DSR`]).
    pub flags: u32,
    /// Its port mappings' flags ([`USE_MUX`], [`PRESERVE_DIP`]).
    pub port_flags: u32,
    /// The source VIP it SNATs to (overlay networks).
    pub source_vip: Option<String>,
}

/// The cluster DNS Service, as the fabric knows it (`kube-system/kube-dns`).
pub(crate) const CLUSTER_DNS: &str = "kube-system/kube-dns";

/// An IPv4 address in `near`'s /24 that no address in `taken` is, counting down from .250:
/// where a deleted pod's address would have been.
fn free_address(near: &str, taken: &std::collections::HashSet<&str>) -> Option<String> {
    let base: std::net::Ipv4Addr = near.parse().ok()?;
    let [a, b, c, _] = base.octets();
    (2..=250u8)
        .rev()
        .map(|d| std::net::Ipv4Addr::new(a, b, c, d).to_string())
        .find(|ip| !taken.contains(ip.as_str()))
}

/// Every pod address the store holds.
fn pod_addresses(store: &Store) -> Vec<String> {
    let (pods, _) = store.list(resources::core("pods"), None);
    pods.iter()
        .map(|p| j::str(p.value(), "/status/podIP").to_string())
        .filter(|ip| !ip.is_empty())
        .collect()
}

/// The address of the deleted cluster DNS backend that [`Fault::HnsStaleBackend`] keeps in the
/// node's load balancer: in the first ready backend's /24, an address no pod and no backend has.
pub(crate) fn stale_backend(backends: &Backends, store: &Store) -> Option<String> {
    let first = backends
        .iter()
        .map(|(ip, _)| ip.as_str())
        .find(|ip| !ip.contains(':'))?;
    let pods = pod_addresses(store);
    let taken: std::collections::HashSet<&str> = pods
        .iter()
        .map(String::as_str)
        .chain(backends.iter().map(|(ip, _)| ip.as_str()))
        .collect();
    free_address(first, &taken)
}

/// The Service address [`Fault::HnsLeakedPolicies`] leaves a load balancer on: the highest
/// usable address of the Service range that no Service has.
fn leaked_vip(profile: &NodeProfile, services: &[Obj]) -> Option<String> {
    let cidr = profile.service_cidr.split(',').find(|c| !c.contains(':'))?;
    let (base, bits) = cidr.trim().split_once('/')?;
    let base: std::net::Ipv4Addr = base.parse().ok()?;
    let bits: u32 = bits.parse().ok()?;
    let size = 1u32.checked_shl(32u32.checked_sub(bits)?)?;
    let taken: std::collections::HashSet<&str> =
        services.iter().map(|s| j::str(s.value(), "/spec/clusterIP")).collect();
    let first = u32::from(base);
    (1..size.saturating_sub(1))
        .rev()
        .take(256)
        .map(|i| std::net::Ipv4Addr::from(first.wrapping_add(i)).to_string())
        .find(|ip| !taken.contains(ip.as_str()))
}

fn protocol_number(name: &str) -> u8 {
    match name {
        "UDP" => 17,
        "SCTP" => 132,
        _ => 6,
    }
}

/// A Service's ready backends: (address, node name).
type Backends = Vec<(String, String)>;

/// Every Service's ready backends from its EndpointSlices, by `namespace/name`.
fn slice_backends(store: &Store) -> HashMap<String, Backends> {
    let (slices, _) = store.list(resources::named("discovery.k8s.io", "endpointslices"), None);
    let mut by_service: HashMap<String, Backends> = HashMap::new();
    for slice in &slices {
        let v = slice.value();
        let service = j::str(v, "/metadata/labels/kubernetes.io~1service-name");
        if service.is_empty() {
            continue;
        }
        let list = by_service
            .entry(format!("{}/{service}", slice.namespace()))
            .or_default();
        for e in j::array(v, "/endpoints") {
            if e.pointer("/conditions/ready").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            let node = j::str(e, "/nodeName").to_string();
            for a in j::array(e, "/addresses") {
                if let Some(ip) = a.as_str() {
                    list.push((ip.to_string(), node.clone()));
                }
            }
        }
    }
    by_service
}

/// A Service's ready backends from its Endpoints object.
fn endpoints_backends(store: &Store, svc: &Obj) -> Backends {
    store
        .get(resources::core("endpoints"), svc.namespace(), svc.name())
        .map(|ep| {
            j::array(ep.value(), "/subsets")
                .iter()
                .flat_map(|s| j::array(s, "/addresses").iter())
                .map(|a| (j::str(a, "/ip").to_string(), j::str(a, "/nodeName").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// The load balancers on the node, by Service: one per cluster IP and one per LoadBalancer
/// ingress address, when kube-proxy programs the node ([`kube_proxy_programs`]).
pub(crate) fn load_balancers(profile: &NodeProfile, store: &Store) -> Vec<LoadBalancer> {
    if !kube_proxy_programs(profile) {
        return Vec::new();
    }
    let (services, _) = store.list(resources::core("services"), None);
    let slices = crate::config::topology::parse_version(&profile.kube_proxy_version)
        .is_some_and(|v| v >= SLICES_FROM)
        .then(|| slice_backends(store));
    let source_vip = (profile.network_mode == NetworkMode::Overlay).then(|| pod_address(profile, 254));
    let mut found = Vec::new();
    for svc in &services {
        let v = svc.value();
        let vip = j::str(v, "/spec/clusterIP");
        if vip.is_empty() || vip == "None" {
            continue;
        }
        let service = format!("{}/{}", svc.namespace(), svc.name());
        if service == CLUSTER_DNS && profile.has_fault(Fault::HnsLbPolicyMissing) {
            continue;
        }
        let backends = match &slices {
            Some(all) => all.get(&service).cloned().unwrap_or_default(),
            None => endpoints_backends(store, svc),
        };
        if backends.len() > profile.service_backend_limit {
            continue;
        }
        let ports: Vec<LbPort> = j::array(v, "/spec/ports")
            .iter()
            .map(|p| {
                let port = p.get("port").and_then(Value::as_u64).unwrap_or(0);
                let target = p.get("targetPort").and_then(Value::as_u64).unwrap_or(port);
                let protocol = protocol_number(p.get("protocol").and_then(Value::as_str).unwrap_or("TCP"));
                (
                    protocol,
                    u16::try_from(target).unwrap_or(0),
                    u16::try_from(port).unwrap_or(0),
                )
            })
            .collect();
        let endpoint = |ip: &str| guid(&[&profile.name, "hns-endpoint", ip]);
        let mut listed: Vec<String> = backends.iter().map(|(ip, _)| endpoint(ip)).collect();
        if service == CLUSTER_DNS && profile.has_fault(Fault::HnsStaleBackend) {
            listed.extend(stale_backend(&backends, store).map(|ip| endpoint(&ip)));
        }
        found.push(LoadBalancer {
            id: guid(&[&profile.name, "hns-policylist", &service]),
            service: service.clone(),
            vip: vip.to_string(),
            ports: ports.clone(),
            endpoints: listed,
            flags: if profile.dsr { DSR } else { 0 },
            port_flags: 0,
            source_vip: source_vip.clone(),
        });
        let dsr_capable = profile.build.is_some_and(|b| b >= PRESERVE_DIP_BUILD);
        let preserve = dsr_capable && j::str(v, "/metadata/annotations/preserve-destination") == "true";
        let local_dsr = profile.dsr && j::str(v, "/spec/externalTrafficPolicy") == "Local";
        for ingress in j::array(v, "/status/loadBalancer/ingress") {
            let ip = j::str(ingress, "/ip");
            if ip.is_empty() {
                continue;
            }
            let local = preserve || local_dsr;
            let endpoints: Vec<String> = backends
                .iter()
                .filter(|(_, node)| !local || *node == profile.name)
                .map(|(ip, _)| endpoint(ip))
                .collect();
            if local && endpoints.is_empty() {
                continue;
            }
            found.push(LoadBalancer {
                id: guid(&[&profile.name, "hns-policylist", &service, ip]),
                service: service.clone(),
                vip: ip.to_string(),
                ports: ports.clone(),
                endpoints,
                flags: if local { DSR } else { 0 },
                port_flags: if preserve { USE_MUX | PRESERVE_DIP } else { 0 },
                source_vip: source_vip.clone(),
            });
        }
    }
    if profile.has_fault(Fault::HnsLeakedPolicies)
        && let Some(vip) = leaked_vip(profile, &services)
    {
        found.push(LoadBalancer {
            id: guid(&[&profile.name, "hns-policylist", "leaked", &vip]),
            service: String::new(),
            endpoints: vec![guid(&[&profile.name, "hns-endpoint", "leaked", &vip])],
            vip,
            ports: vec![(6, 8080, 80)],
            flags: if profile.dsr { DSR } else { 0 },
            port_flags: 0,
            source_vip: source_vip.clone(),
        });
    }
    found.sort_by(|a, b| a.service.cmp(&b.service).then_with(|| a.vip.cmp(&b.vip)));
    found
}

/// One HNS endpoint on the node: a local pod's (the CNI made it), or a remote backend's that
/// kube-proxy made for a load balancer (`IsRemoteEndpoint`; on overlay with a provider-address
/// policy naming the backend's node, kubernetes `pkg/proxy/winkernel/proxier.go`
/// `newSourceVIP`/remote endpoints; its MAC conjured from the address, `conjureMac("02-11", ip)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HnsEndpoint {
    pub id: String,
    pub ip: String,
    pub mac: String,
    pub remote: bool,
    /// The provider address (the backend's node) of a remote endpoint on overlay.
    pub provider: Option<String>,
}

/// The address [`Fault::HnsStaleRemoteEndpoint`] finds reused: the lowest of the node's own
/// pod endpoints' (the fabric's [`crate::network::fabric`] picks the same pod).
fn reused_address(endpoints: &[HnsEndpoint]) -> Option<String> {
    endpoints
        .iter()
        .filter(|e| !e.remote)
        .filter_map(|e| e.ip.parse::<std::net::Ipv4Addr>().ok())
        .min()
        .map(|ip| ip.to_string())
}

/// kube-proxy's MAC for a remote endpoint: `02-11` then the address's four bytes.
fn conjured_mac(ip: &str) -> String {
    let bytes: Vec<String> = ip
        .split('.')
        .map(|b| format!("{:02x}", b.parse::<u8>().unwrap_or(0)))
        .collect();
    format!("02-11-{}", bytes.join("-"))
}

/// A node's InternalIP, by node name, from the store.
fn node_addresses(store: &Store) -> HashMap<String, String> {
    let (nodes, _) = store.list(resources::core("nodes"), None);
    nodes
        .iter()
        .filter_map(|n| {
            let ip = j::array(n.value(), "/status/addresses")
                .iter()
                .find(|a| j::str(a, "/type") == "InternalIP")
                .map(|a| j::str(a, "/address").to_string())?;
            Some((n.name().to_string(), ip))
        })
        .collect()
}

/// The endpoints on the node: one per running pod of its own with a pod address, while the pod
/// network's HNS network exists, and one remote endpoint per Service backend that is not the
/// node's own (on another node, or a hand-written address of no node), as kube-proxy makes them.
pub(crate) fn endpoints(profile: &NodeProfile, store: &Store) -> Vec<HnsEndpoint> {
    if crate::node::host::pod_network(profile).is_none() {
        return Vec::new();
    }
    let endpoint_id = |ip: &str| guid(&[&profile.name, "hns-endpoint", ip]);
    let (pods, _) = store.list(resources::core("pods"), None);
    let mut found: Vec<HnsEndpoint> = pods
        .iter()
        .filter(|p| p.node_name() == profile.name)
        .map(|p| p.value())
        .filter(|v| j::bool(v, "/spec/hostNetwork") != Some(true))
        .filter(|v| j::str(v, "/status/phase") == "Running")
        .filter_map(|v| {
            let ip = j::str(v, "/status/podIP");
            (!ip.is_empty()).then(|| HnsEndpoint {
                id: endpoint_id(ip),
                ip: ip.to_string(),
                mac: crate::node::host::mac(profile, ip),
                remote: false,
                provider: None,
            })
        })
        .collect();
    if !kube_proxy_programs(profile) {
        return found;
    }
    let local: std::collections::HashSet<String> = found.iter().map(|e| e.ip.clone()).collect();
    let nodes = node_addresses(store);
    let overlay = profile.network_mode == NetworkMode::Overlay;
    let slices = slice_backends(store);
    let mut remote: Vec<(String, String)> = slices
        .values()
        .flatten()
        .filter(|(ip, node)| !local.contains(ip) && *node != profile.name)
        .cloned()
        .collect();
    if profile.has_fault(Fault::HnsStaleBackend)
        && let Some(ip) = slices.get(CLUSTER_DNS).and_then(|b| stale_backend(b, store))
    {
        remote.push((ip, String::new()));
    }
    if profile.has_fault(Fault::HnsStaleRemoteEndpoint)
        && let Some(ip) = reused_address(&found)
    {
        // The pod that had the address before ran on another node: the first other node by name.
        let old = nodes
            .keys()
            .filter(|n| **n != profile.name)
            .min()
            .cloned()
            .unwrap_or_default();
        remote.push((ip, old));
    }
    remote.sort();
    remote.dedup();
    found.extend(remote.into_iter().map(|(ip, node)| HnsEndpoint {
        id: endpoint_id(&ip),
        mac: conjured_mac(&ip),
        provider: overlay.then(|| nodes.get(&node).cloned()).flatten(),
        ip,
        remote: true,
    }));
    found
}
