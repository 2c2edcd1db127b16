//! What the evidence stage observes when causes tie ([`crate::triage::diagnose::ties`]): from
//! each node where another cause explains the same failing cells as the one it would name, two
//! connections to a cluster DNS server's pod on another node where one runs elsewhere — to a
//! port that is not DNS (its metrics port, else CoreDNS's health port: pod traffic between
//! nodes) and to port 53 (the DNS server straight, bypassing the Service and its load
//! balancer) — and, on a Windows node with the run's
//! host probe, one reading of its HNS load balancers and endpoints against the API. The
//! observations join the node's evidence, where the cause catalogue's `requires`, `supports`
//! and `refutedBy` read them; no cause is special-cased here.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use mixcheck_reports::{Cell, EvidenceItem, Excerpt, NodeEvidence, Os, RunReport};

use crate::catalogue::suite::Protocol;
use crate::cluster::deploy::Deployment;
use crate::cluster::facts::{ClusterFacts, ClusterNode};
use crate::probes::transport::{self, Observation, Request, Runner};
use crate::run::Run;

/// The evidence source of a discriminating observation.
pub const SOURCE: &str = "discriminating probe";
/// At most this many tied nodes are probed.
const MAX_NODES: usize = 8;
/// How long one observation may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The usable pods of the run's shared fixtures, by node name.
#[derive(Debug, Default)]
pub struct Pods {
    clients: BTreeMap<String, String>,
    hosts: BTreeMap<String, String>,
}

impl Pods {
    /// The client pods and host probes of `dep` that became usable.
    pub fn of(dep: &Deployment) -> Self {
        let usable = |placed: &BTreeMap<String, crate::cluster::deploy::Placed>| {
            placed
                .iter()
                .filter(|(_, p)| p.problem.is_none())
                .map(|(node, p)| (node.clone(), p.name.clone()))
                .collect()
        };
        Self {
            clients: usable(&dep.clients),
            hosts: usable(&dep.hosts),
        }
    }
}

/// Probes the tied nodes of the run so far (`cells`, `evidence`) and adds what it saw to their
/// evidence.
pub(super) async fn observe(
    run: &Run<'_>,
    report: &RunReport,
    facts: &ClusterFacts,
    ns: &str,
    cells: &[Cell],
    pods: &Pods,
    evidence: &mut Vec<NodeEvidence>,
) {
    let mut so_far = RunReport::new("", "", report.target.clone(), report.started_at);
    so_far.facts = facts.report.clone();
    so_far.cells = cells.to_vec();
    let tied = crate::triage::diagnose::ties(&so_far, &run.plan.causes, evidence);
    if tied.is_empty() {
        return;
    }
    run.say(&format!(
        "Causes tie on {} node{}: probing what tells them apart…",
        tied.len(),
        if tied.len() == 1 { "" } else { "s" }
    ));
    let api: Api<Pod> = Api::namespaced(run.client.clone(), ns);
    let servers = dns_servers(&run.client).await;
    for node in tied.keys().take(MAX_NODES) {
        let Some(n) = facts.nodes.iter().find(|n| &n.name == node) else {
            continue;
        };
        let mut items = Vec::new();
        if let Some(client) = pods.clients.get(node) {
            let other = servers.as_ref().map(|s| s.other_port).unwrap_or(HEALTH_PORT);
            items.push(item(to_dns_pod(&api, n, client, &servers, other).await));
            items.push(item(to_dns_pod(&api, n, client, &servers, DNS_PORT).await));
        }
        if n.os == Os::Windows
            && let Some(host) = pods.hosts.get(node)
        {
            items.push(item(hns_reading(&api, &run.client, node, host).await));
        }
        match evidence.iter_mut().find(|e| &e.node == node) {
            Some(e) => e.items.extend(items),
            None => evidence.push(NodeEvidence {
                node: node.clone(),
                items,
            }),
        }
    }
}

fn item(text: String) -> EvidenceItem {
    EvidenceItem {
        source: SOURCE.into(),
        text: Excerpt::new(&text),
    }
}

const DNS_PORT: u16 = 53;
/// CoreDNS's `health` plugin's port in the Corefile of kubeadm, AKS and EKS.
const HEALTH_PORT: u16 = 8080;

/// The cluster DNS servers as their EndpointSlices list them.
struct DnsServers {
    /// Ready IPv4 addresses with their nodes.
    at: Vec<(String, String)>,
    /// A TCP port they serve that is not DNS (CoreDNS's `metrics` 9153 where the Service lists
    /// it), else [`HEALTH_PORT`].
    other_port: u16,
}

/// The cluster DNS servers (`kube-system/kube-dns`'s EndpointSlices), or why they are unknown.
async fn dns_servers(client: &kube::Client) -> Result<DnsServers, String> {
    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), "kube-system");
    let params = kube::api::ListParams::default().labels("kubernetes.io/service-name=kube-dns");
    let list = match tokio::time::timeout(TIMEOUT, api.list(&params)).await {
        Ok(Ok(list)) => list.items,
        Ok(Err(e)) => return Err(format!("listing kube-system/kube-dns's EndpointSlices: {e}")),
        Err(_) => return Err("listing kube-system/kube-dns's EndpointSlices: no answer".into()),
    };
    let other_port = list
        .iter()
        .flat_map(|s| s.ports.iter().flatten())
        .filter(|p| p.protocol.as_deref().unwrap_or("TCP") == "TCP")
        .filter_map(|p| p.port.and_then(|n| u16::try_from(n).ok()))
        .find(|p| *p != DNS_PORT)
        .unwrap_or(HEALTH_PORT);
    let at: Vec<(String, String)> = list
        .iter()
        .filter(|s| s.address_type == "IPv4")
        .flat_map(|s| &s.endpoints)
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) != Some(false))
        .flat_map(|e| {
            let node = e.node_name.clone().unwrap_or_default();
            e.addresses.iter().map(move |a| (a.clone(), node.clone()))
        })
        .collect::<Vec<_>>();
    // The same server on every run: the lowest address.
    let mut at = at;
    at.sort_by_key(|(ip, _)| ip.parse::<std::net::Ipv4Addr>().ok());
    Ok(DnsServers { at, other_port })
}

/// A TCP connection from the node's client pod to a DNS server's pod on `port`, another node's
/// where one runs elsewhere: on port 53 whether the DNS server answers without the Service, on
/// another port whether pod traffic from the node reaches that node at all.
async fn to_dns_pod(
    api: &Api<Pod>,
    n: &ClusterNode,
    client: &str,
    servers: &Result<DnsServers, String>,
    port: u16,
) -> String {
    let servers = match servers {
        Ok(s) => &s.at,
        Err(why) => {
            return format!(
                "from {client} on {}: no connection to a cluster DNS server's pod: {why}",
                n.name
            );
        }
    };
    let Some((ip, on)) = servers.iter().find(|(_, on)| *on != n.name).or_else(|| servers.first()) else {
        return format!(
            "from {client} on {}: no connection to a cluster DNS server's pod: kube-system/kube-dns lists no ready address",
            n.name
        );
    };
    let req = Request {
        host: ip.clone(),
        port,
        protocol: Protocol::Tcp,
        path: transport::RAW_TCP.to_string(),
        tls: false,
    };
    let argv = transport::command(Runner::in_pod(n), &req);
    let whose = if *on == n.name {
        format!("{on}, this node")
    } else {
        format!("{on}, another node")
    };
    let seen = match tokio::time::timeout(TIMEOUT, transport::exec_retrying(api, client, None, &argv)).await {
        Ok(Ok((out, _))) => match transport::classify(&req, &out) {
            Observation::Reached(_) => "answered".to_string(),
            Observation::Failed(c) => format!("failed: {}", c.name()),
        },
        Ok(Err(e)) => format!("could not run: {e}"),
        Err(_) => "could not run: no answer".to_string(),
    };
    let what = if port == DNS_PORT {
        "DNS without the Service: a TCP connection straight to"
    } else {
        "pod traffic, not DNS: a TCP connection to"
    };
    format!(
        "from {client} on {}: {what} the cluster DNS server's pod {ip}:{port} (on {whose}) {seen}",
        n.name
    )
}

/// One reading of the node's HNS data plane against the API.
async fn hns_reading(api: &Api<Pod>, client: &kube::Client, node: &str, host: &str) -> String {
    match tokio::time::timeout(
        TIMEOUT,
        crate::probes::hnslb::read(api, (client, &crate::probes::apiview::ApiViews::fresh()), node, host),
    )
    .await
    {
        Ok(Ok(r)) if r.drift.is_empty() => format!(
            "{node}: the node's {} HNS load balancers and {} endpoints match the API's {} Services",
            r.load_balancers, r.endpoints, r.services
        ),
        Ok(Ok(r)) => format!("{node}: {}", r.differences()),
        Ok(Err(why)) => format!("{node}: the node's HNS state could not be read: {why}"),
        Err(_) => format!("{node}: the node's HNS state could not be read: no answer"),
    }
}
