//! A Windows node's data plane compared with the API: the HNS load balancers and endpoints the
//! node lists (`crate::probes::hnslb`) against the Services and ready EndpointSlice addresses
//! the API holds — a Service's load balancer missing, a backend the API no longer has (stale)
//! or one it has that the load balancer lacks, a load balancer for no Service (leaked), a
//! remote endpoint for an address no pod has or on another node than its provider address
//! says, one address both local and remote (operator-needs.md: kubernetes#110849, #112836,
//! #113524; microsoft/Windows-Containers#631). Pure: the readings come in, the differences go
//! out.

use std::collections::{BTreeMap, BTreeSet};

/// One Service as kube-proxy programs it on a node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiService {
    /// `namespace/name`.
    pub name: String,
    /// Its cluster IPs and load-balancer ingress addresses.
    pub vips: Vec<String>,
    /// Its ready backends: (address, node name).
    pub backends: Vec<(String, String)>,
    /// `internalTrafficPolicy: Local`: the node programs its own backends only.
    pub local_only: bool,
}

/// One HNS endpoint as the node lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeEndpoint {
    pub id: String,
    pub ip: String,
    pub remote: bool,
    /// A remote endpoint's provider address (overlay).
    pub provider: Option<String>,
}

/// One HNS load balancer as the node lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeLoadBalancer {
    pub id: String,
    pub vips: Vec<String>,
    /// Its backends' endpoint ids.
    pub endpoints: Vec<String>,
}

/// What the API says beyond the Services: the pods' addresses with their nodes, and the
/// nodes' addresses (for provider addresses).
#[derive(Debug, Clone, Default)]
pub struct ApiView {
    pub services: Vec<ApiService>,
    /// Pod address → its node.
    pub pods: BTreeMap<String, String>,
    /// Node name → its InternalIP.
    pub nodes: BTreeMap<String, String>,
    /// Addresses that are no pod's but that the API lists as backends (selectorless Services'
    /// hand-written EndpointSlices): a remote endpoint for one is not stale.
    pub listed: BTreeSet<String>,
    /// Addresses a load balancer may serve besides the compared Services' cluster IPs (ingress
    /// and external IPs, the nodes' own, Services left out of the comparison).
    pub other_vips: BTreeSet<String>,
}

/// One way the node's data plane differs from the API.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Drift {
    /// A Service with ready backends has no load balancer for its address.
    Missing { service: String, vip: String },
    /// A load balancer's backend whose address no ready EndpointSlice of its Service lists.
    Stale { service: String, vip: String, ip: String },
    /// A ready backend the load balancer lacks.
    Lacking { service: String, vip: String, ip: String },
    /// A load balancer whose addresses belong to no Service.
    Leaked { id: String, vips: Vec<String> },
    /// A remote endpoint whose address no pod has.
    OrphanRemote { ip: String },
    /// A remote endpoint whose provider address is not its pod's node's.
    WrongProvider { ip: String, provider: String, node: String },
    /// One address both a local and a remote endpoint.
    LocalAndRemote { ip: String },
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Drift::Missing { service, vip } => write!(f, "no load balancer for Service {service} ({vip})"),
            Drift::Stale { service, vip, ip } => write!(
                f,
                "the load balancer of {service} ({vip}) keeps backend {ip}, which no ready EndpointSlice lists"
            ),
            Drift::Lacking { service, vip, ip } => {
                write!(f, "the load balancer of {service} ({vip}) lacks ready backend {ip}")
            }
            Drift::Leaked { id, vips } => write!(f, "load balancer {id} ({}) belongs to no Service", vips.join(", ")),
            Drift::OrphanRemote { ip } => write!(f, "remote endpoint {ip}: no pod has that address"),
            Drift::WrongProvider { ip, provider, node } => write!(
                f,
                "remote endpoint {ip} points at {provider}, but its pod runs on {node}"
            ),
            Drift::LocalAndRemote { ip } => write!(f, "{ip} is both a local and a remote endpoint"),
        }
    }
}

/// The differences between `node`'s data plane and the API, sorted.
pub fn compare(node: &str, lbs: &[NodeLoadBalancer], endpoints: &[NodeEndpoint], api: &ApiView) -> Vec<Drift> {
    let mut drift = BTreeSet::new();
    let by_id: BTreeMap<&str, &NodeEndpoint> = endpoints.iter().map(|e| (e.id.as_str(), e)).collect();
    let mut claimed: BTreeSet<&str> = api.other_vips.iter().map(String::as_str).collect();
    for svc in &api.services {
        for vip in &svc.vips {
            claimed.insert(vip.as_str());
            // One load balancer per IP family: a cluster IP's backends are its family's.
            let wanted: BTreeSet<&str> = svc
                .backends
                .iter()
                .filter(|(ip, n)| (!svc.local_only || n == node) && ip.contains(':') == vip.contains(':'))
                .map(|(ip, _)| ip.as_str())
                .collect();
            let Some(lb) = lbs.iter().find(|lb| lb.vips.iter().any(|v| v == vip)) else {
                if !wanted.is_empty() {
                    drift.insert(Drift::Missing {
                        service: svc.name.clone(),
                        vip: vip.to_string(),
                    });
                }
                continue;
            };
            let has: BTreeSet<&str> = lb
                .endpoints
                .iter()
                .filter_map(|id| by_id.get(id.as_str()).map(|e| e.ip.as_str()))
                .collect();
            for ip in has.difference(&wanted) {
                drift.insert(Drift::Stale {
                    service: svc.name.clone(),
                    vip: vip.to_string(),
                    ip: (*ip).to_string(),
                });
            }
            for ip in wanted.difference(&has) {
                drift.insert(Drift::Lacking {
                    service: svc.name.clone(),
                    vip: vip.to_string(),
                    ip: (*ip).to_string(),
                });
            }
        }
    }
    for lb in lbs {
        if !lb.vips.is_empty() && lb.vips.iter().all(|v| !claimed.contains(v.as_str())) {
            drift.insert(Drift::Leaked {
                id: lb.id.clone(),
                vips: lb.vips.clone(),
            });
        }
    }
    let local: BTreeSet<&str> = endpoints.iter().filter(|e| !e.remote).map(|e| e.ip.as_str()).collect();
    // A stale backend's remote endpoint is the same drift as the backend: named once.
    let stale: BTreeSet<&str> = drift
        .iter()
        .filter_map(|d| match d {
            Drift::Stale { ip, .. } => Some(ip.as_str()),
            _ => None,
        })
        .collect();
    let mut found = Vec::new();
    for e in endpoints.iter().filter(|e| e.remote) {
        if local.contains(e.ip.as_str()) {
            found.push(Drift::LocalAndRemote { ip: e.ip.clone() });
        }
        match api.pods.get(&e.ip) {
            None if api.listed.contains(&e.ip) || stale.contains(e.ip.as_str()) => {}
            None => {
                found.push(Drift::OrphanRemote { ip: e.ip.clone() });
            }
            Some(pod_node) => {
                if let Some(provider) = &e.provider
                    && api.nodes.get(pod_node).is_some_and(|addr| addr != provider)
                {
                    found.push(Drift::WrongProvider {
                        ip: e.ip.clone(),
                        provider: provider.clone(),
                        node: pod_node.clone(),
                    });
                }
            }
        }
    }
    drift.extend(found);
    drift.into_iter().collect()
}

/// Asserts that `found` is one difference per entry of `want`, each named by a part of its text.
#[cfg(test)]
pub fn assert_named(found: &[Drift], want: &[&str]) {
    let found: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert_eq!(found.len(), want.len(), "{found:#?}");
    for w in want {
        assert!(found.iter().any(|f| f.contains(w)), "{w} not in {found:#?}");
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const NODE: &str = "win-1";

    fn view() -> ApiView {
        ApiView {
            services: vec![ApiService {
                name: "ns/web".into(),
                vips: vec!["10.96.0.20".into()],
                backends: vec![
                    ("10.244.1.5".into(), NODE.into()),
                    ("10.244.2.5".into(), "win-2".into()),
                ],
                local_only: false,
            }],
            pods: BTreeMap::from([
                ("10.244.1.5".to_string(), NODE.to_string()),
                ("10.244.2.5".to_string(), "win-2".to_string()),
            ]),
            nodes: BTreeMap::from([
                (NODE.to_string(), "10.1.0.11".to_string()),
                ("win-2".to_string(), "10.1.0.12".to_string()),
            ]),
            listed: BTreeSet::from(["198.18.0.1".to_string()]),
            other_vips: BTreeSet::from(["203.0.113.10".to_string()]),
        }
    }

    fn endpoints() -> Vec<NodeEndpoint> {
        vec![
            NodeEndpoint {
                id: "L".into(),
                ip: "10.244.1.5".into(),
                remote: false,
                provider: None,
            },
            NodeEndpoint {
                id: "R".into(),
                ip: "10.244.2.5".into(),
                remote: true,
                provider: Some("10.1.0.12".into()),
            },
        ]
    }

    fn lb(id: &str, vip: &str, endpoints: &[&str]) -> NodeLoadBalancer {
        NodeLoadBalancer {
            id: id.into(),
            vips: vec![vip.into()],
            endpoints: endpoints.iter().map(|e| (*e).to_string()).collect(),
        }
    }

    /// Each kind of drift, from one change to a node that matches the API.
    #[rstest]
    #[case::in_step(vec![lb("A", "10.96.0.20", &["L", "R"])], endpoints(), &[])]
    #[case::missing(vec![], endpoints(), &["no load balancer for Service ns/web (10.96.0.20)"])]
    #[case::lacking(vec![lb("A", "10.96.0.20", &["L"])], endpoints(), &["lacks ready backend 10.244.2.5"])]
    #[case::leaked(vec![lb("A", "10.96.0.20", &["L", "R"]), lb("B", "10.96.0.99", &[])], endpoints(),
        &["load balancer B (10.96.0.99) belongs to no Service"])]
    #[case::stale(vec![lb("A", "10.96.0.20", &["L", "R", "S"])],
        { let mut e = endpoints(); e.push(NodeEndpoint { id: "S".into(), ip: "10.244.2.9".into(), remote: true, provider: Some("10.1.0.12".into()) }); e },
        &["keeps backend 10.244.2.9"])]
    // A remote endpoint no load balancer uses and no pod has: the endpoint alone is stale.
    #[case::orphan(vec![lb("A", "10.96.0.20", &["L", "R"])],
        { let mut e = endpoints(); e.push(NodeEndpoint { id: "S".into(), ip: "10.244.2.9".into(), remote: true, provider: None }); e },
        &["remote endpoint 10.244.2.9: no pod has that address"])]
    #[case::wrong_provider(vec![lb("A", "10.96.0.20", &["L", "R"])],
        { let mut e = endpoints(); e[1].provider = Some("10.1.0.13".into()); e },
        &["remote endpoint 10.244.2.5 points at 10.1.0.13, but its pod runs on win-2"])]
    #[case::local_and_remote(vec![lb("A", "10.96.0.20", &["L", "R"])],
        { let mut e = endpoints(); e.push(NodeEndpoint { id: "X".into(), ip: "10.244.1.5".into(), remote: true, provider: None }); e },
        &["10.244.1.5 is both a local and a remote endpoint"])]
    fn drift_is_named(#[case] lbs: Vec<NodeLoadBalancer>, #[case] eps: Vec<NodeEndpoint>, #[case] want: &[&str]) {
        assert_named(&compare(NODE, &lbs, &eps, &view()), want);
    }

    /// A remote endpoint for a hand-written backend and a load balancer of an ingress address
    /// are the API's too.
    #[test]
    fn listed_backends_and_other_addresses_are_not_drift() {
        let mut eps = endpoints();
        eps.push(NodeEndpoint {
            id: "H".into(),
            ip: "198.18.0.1".into(),
            remote: true,
            provider: None,
        });
        let lbs = vec![lb("A", "10.96.0.20", &["L", "R"]), lb("I", "203.0.113.10", &["L"])];
        assert_eq!(compare(NODE, &lbs, &eps, &view()), Vec::new());
    }

    /// A dual-stack Service has a load balancer per family, each over that family's backends;
    /// a family without backends needs none.
    #[test]
    fn each_family_has_its_own_backends() {
        let mut api = view();
        api.services[0].vips.push("fd00:10:96::20".into());
        let found = compare(NODE, &[lb("A", "10.96.0.20", &["L", "R"])], &endpoints(), &api);
        assert_eq!(found, Vec::new());
        api.services[0].backends.push(("fd00:10:244:1::5".into(), NODE.into()));
        let found = compare(NODE, &[lb("A", "10.96.0.20", &["L", "R"])], &endpoints(), &api);
        assert_eq!(
            found,
            vec![Drift::Missing {
                service: "ns/web".into(),
                vip: "fd00:10:96::20".into()
            }]
        );
    }

    /// `internalTrafficPolicy: Local`: the node programs its own backends only; a Service with
    /// no ready backend needs no load balancer.
    #[test]
    fn local_only_services_and_empty_ones_are_not_drift() {
        let mut api = view();
        api.services[0].local_only = true;
        api.services.push(ApiService {
            name: "ns/empty".into(),
            vips: vec!["10.96.0.30".into()],
            backends: Vec::new(),
            local_only: false,
        });
        let found = compare(NODE, &[lb("A", "10.96.0.20", &["L"])], &endpoints(), &api);
        assert_eq!(found, Vec::new());
    }
}
