//! `hns-load-balancer`: the Windows node's HNS load balancers, listed on its host through the
//! run's host probe (`Get-HnsPolicyList | ConvertTo-Json`, as microsoft/SDN's `collectlogs.ps1`
//! saves them), in either shape the node's module gives — HNS v1 policy lists (the in-box
//! `HostNetworkingService` module, microsoft/SDN `hns.psm1`: `Policies` of type `ELB` with
//! `VIPs`, `References` to the backends' endpoints) or HNS v2 load balancers (`hns.v2.psm1`, which
//! AKS imports; hcsshim `HostComputeLoadBalancer`: `FrontendVIPs`, `HostComputeEndpoints`,
//! `PortMappings` with their `Flags`) — judged for the Services the run made for them
//! (`crate::cluster::deploy::subjects`): NET-SVC-BACKEND-LIMIT and NET-PRESERVE-DEST.

use serde_json::Value;

use crate::catalogue::suite::{FailureClass, HnsSubject};
use crate::cluster::deploy::subjects::{CONTROL, OVER_LIMIT, OVER_LIMIT_BACKENDS, PRESERVE};
use crate::cluster::facts::ClusterNode;
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::settle::FlowKind;
use crate::probes::transport::Observation;

/// The node's load balancers as JSON (`-Depth 5` reaches the port mappings' flags).
const LIST: &str = "Get-HnsPolicyList -ErrorAction Stop | ConvertTo-Json -Depth 5 -Compress";
/// `LoadBalancerPortMappingFlagsPreserveDIP` (hcsshim `hcn/hcnloadbalancer.go`).
const PRESERVE_DIP: u64 = 8;
/// How long between two readings while kube-proxy catches up.
const POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// One load balancer as the node lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HnsLb {
    pub id: String,
    pub vips: Vec<String>,
    /// How many backends (endpoints) it balances over.
    pub backends: usize,
    /// Their HNS endpoint ids.
    pub endpoints: Vec<String>,
    /// The v2 shape's flags (`Flags`, and the port mappings' `Flags` or-ed); None in the v1
    /// shape, which does not show them.
    pub flags: Option<(u64, u64)>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The load balancers in `text` (one object or an array; nothing printed: none). Err names
/// what did not parse.
pub fn parse(text: &str) -> Result<Vec<HnsLb>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("Get-HnsPolicyList | ConvertTo-Json gave no JSON ({e})"))?;
    let items = match value {
        Value::Array(items) => items,
        one => vec![one],
    };
    Ok(items.iter().map(one_lb).collect())
}

fn one_lb(v: &Value) -> HnsLb {
    let id = v.get("ID").and_then(Value::as_str).unwrap_or_default().to_string();
    if v.get("FrontendVIPs").is_some() || v.get("PortMappings").is_some() {
        let port_flags = v
            .get("PortMappings")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| m.get("Flags").and_then(Value::as_u64))
            .fold(0, |a, f| a | f);
        let flags = v.get("Flags").and_then(Value::as_u64).unwrap_or(0);
        let endpoints = strings(v.get("HostComputeEndpoints"));
        return HnsLb {
            id,
            vips: strings(v.get("FrontendVIPs")),
            backends: endpoints.len(),
            endpoints,
            flags: Some((flags, port_flags)),
        };
    }
    let vips = v
        .get("Policies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("Type").and_then(Value::as_str) == Some("ELB"))
        .flat_map(|p| strings(p.get("VIPs")))
        .collect();
    // References are `/endpoints/<id>` (microsoft/SDN hns.psm1 `get-endpointReferences`).
    let endpoints: Vec<String> = strings(v.get("References"))
        .into_iter()
        .map(|r| r.rsplit('/').next().unwrap_or_default().to_string())
        .collect();
    HnsLb {
        id,
        vips,
        backends: endpoints.len(),
        endpoints,
        flags: None,
    }
}

/// The first load balancer with `vip` among its addresses.
fn with_vip<'a>(lbs: &'a [HnsLb], vip: &str) -> Option<&'a HnsLb> {
    lbs.iter().find(|lb| lb.vips.iter().any(|v| v == vip))
}

/// Reads the node's load balancers until `ready` holds for them or the Service settle window
/// ends (kube-proxy programs a new Service on its next sync); the last reading either way.
async fn read_until(ctx: &Ctx<'_>, pod: &str, ready: impl Fn(&[HnsLb]) -> bool) -> Result<(Vec<HnsLb>, bool), String> {
    let until = ctx.settle_until(FlowKind::Service);
    loop {
        let lbs = parse(&crate::probes::hostfacts::run(&ctx.pods, pod, LIST).await?)?;
        if ready(&lbs) {
            return Ok((lbs, true));
        }
        if tokio::time::Instant::now() >= until {
            return Ok((lbs, false));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Reads the node's load balancers for `subject`'s Service and judges them.
pub async fn observe(ctx: &Ctx<'_>, case: &Case<'_>, subject: HnsSubject) -> Probed {
    let (_, node) = match case.node(ctx.facts) {
        Ok(n) => n,
        Err(p) => return p.into(),
    };
    if node.host_process() == Some(false) {
        return Probed::Unknown(format!(
            "unknown: the HNS load balancers of {}: HostProcess pods are not available there (they need Kubernetes 1.23+ and containerd 1.6+), no documented in-cluster way to read them",
            node.name
        ));
    }
    let Some(host) = ctx.dep.hosts.get(&node.name) else {
        return Probed::Unknown(format!(
            "unknown: the HNS load balancers of {}: read through the run's host probe, which runs on HostProcess-capable nodes given every check",
            node.name
        ));
    };
    if let Some(problem) = &host.problem {
        return Probed::Unknown(format!(
            "unknown: the HNS load balancers of {}: the node-side probe is not usable: {problem}",
            node.name
        ));
    }
    let result = match subject {
        HnsSubject::BackendLimit => backend_limit(ctx, node, &host.name).await,
        HnsSubject::PreserveDestination => preserve_destination(ctx, node, &host.name).await,
    };
    result.unwrap_or_else(|why| Probed::Unknown(format!("unknown: the HNS load balancers of {}: {why}", node.name)))
}

/// Why the run has no subject Service `name`: the cluster refused it, or no selected check
/// asked for it.
fn missing(ctx: &Ctx<'_>, name: &str) -> String {
    match ctx.dep.refused_services.get(name) {
        Some(r) => format!("the cluster refused Service {name}: {}", r.problem()),
        None => format!("the run made no Service {name}"),
    }
}

/// NET-SVC-BACKEND-LIMIT: with the one-backend control programmed, the over-limit Service's
/// load balancer is missing (the documented limitation) or there with every backend.
async fn backend_limit(ctx: &Ctx<'_>, node: &ClusterNode, pod: &str) -> Result<Probed, String> {
    let hns = &ctx.dep.hns;
    if let Some(refused) = &hns.refused {
        return Err(format!("the hand-written backends could not be made: {refused}"));
    }
    let over = hns.over.as_ref().ok_or_else(|| missing(ctx, OVER_LIMIT))?;
    let control = hns.control.as_ref().ok_or_else(|| missing(ctx, CONTROL))?;
    let (lbs, synced) = read_until(ctx, pod, |lbs| with_vip(lbs, &control.cluster_ip).is_some()).await?;
    if !synced {
        return Err(format!(
            "kube-proxy programmed no load balancer for the one-backend control Service {CONTROL} ({}) within the Service settle window ({} load balancers listed): has it synced since the run began?",
            control.cluster_ip,
            lbs.len()
        ));
    }
    let (observation, summary) = match with_vip(&lbs, &over.cluster_ip) {
        Some(lb) if lb.backends >= OVER_LIMIT_BACKENDS as usize => (
            true,
            format!(
                "{}: HNS load balancer {} serves {OVER_LIMIT} ({}) with all {} backends",
                node.name, lb.id, over.cluster_ip, lb.backends
            ),
        ),
        Some(lb) => (
            false,
            format!(
                "{}: HNS load balancer {} serves {OVER_LIMIT} ({}) with {} of its {OVER_LIMIT_BACKENDS} backends",
                node.name, lb.id, over.cluster_ip, lb.backends
            ),
        ),
        None => (
            false,
            format!(
                "{}: no HNS load balancer for {OVER_LIMIT} ({}, {OVER_LIMIT_BACKENDS} backends) while its one-backend control {CONTROL} ({}) has one",
                node.name, over.cluster_ip, control.cluster_ip
            ),
        ),
    };
    Ok(seen(observation, summary))
}

fn seen(works: bool, summary: String) -> Probed {
    let observation = if works {
        Observation::Reached(summary.clone())
    } else {
        Observation::Failed(FailureClass::Mismatch)
    };
    Probed::seen(observation, summary)
}

/// NET-PRESERVE-DEST: the load balancer of the annotated Service's ingress address on a node
/// with a backend of it carries the PreserveDIP port-mapping flag.
async fn preserve_destination(ctx: &Ctx<'_>, node: &ClusterNode, pod: &str) -> Result<Probed, String> {
    let hns = &ctx.dep.hns;
    let lb = hns.preserve.as_ref().ok_or_else(|| missing(ctx, PRESERVE))?;
    let service = hns.preserve_service.as_ref().ok_or_else(|| missing(ctx, PRESERVE))?;
    // kube-proxy programs such an address over the node's own backends only.
    match ctx.dep.servers.get(&node.name) {
        Some(server) if server.problem.is_none() => {}
        _ => {
            return Err(format!(
                "no usable server of the run on {}: kube-proxy programs a preserve-destination address over local backends only",
                node.name
            ));
        }
    }
    let ingress = crate::probes::flow::ingress_of_lb(ctx, lb).await.map_err(|u| match u {
        crate::probes::judgement::Unprobed::Unknown(why) | crate::probes::judgement::Unprobed::Error(why) => {
            why.trim_start_matches("unknown: ").to_string()
        }
    })?;
    let (lbs, found) = read_until(ctx, pod, |lbs| with_vip(lbs, &ingress).is_some()).await?;
    let Some(found) = with_vip(&lbs, &ingress).filter(|_| found) else {
        if with_vip(&lbs, &service.cluster_ip).is_none() {
            return Err(format!(
                "kube-proxy programmed neither {PRESERVE}'s cluster IP {} nor its ingress address {ingress} within the Service settle window",
                service.cluster_ip
            ));
        }
        return Ok(seen(
            false,
            format!(
                "{}: no HNS load balancer for {PRESERVE}'s ingress address {ingress} (its cluster IP {} has one) though the node runs a backend of it",
                node.name, service.cluster_ip
            ),
        ));
    };
    let Some((flags, port_flags)) = found.flags else {
        return local_only(ctx, node, found, &ingress);
    };
    let preserved = port_flags & PRESERVE_DIP != 0;
    Ok(seen(
        preserved,
        format!(
            "{}: HNS load balancer {} of {PRESERVE}'s ingress address {ingress} has port-mapping flags {port_flags} ({}PreserveDIP) and flags {flags}",
            node.name,
            found.id,
            if preserved { "" } else { "no " }
        ),
    ))
}

/// The v1 policy list does not show port-mapping flags, but what the flag does shows: the
/// ingress address's load balancer serves the node's own backend only, where the Service has
/// backends on other nodes too ("also disables node-node forwarding", W20, WNET; kube-proxy gives
/// it the node's local endpoints only, KPWIN). Every node's server is a backend of it; the node
/// has one.
fn local_only(ctx: &Ctx<'_>, node: &ClusterNode, found: &HnsLb, ingress: &str) -> Result<Probed, String> {
    let total = ctx.dep.servers.values().filter(|s| s.problem.is_none()).count();
    if total < 2 {
        return Err(format!(
            "whether the load balancer of {ingress} preserves the destination: the node's Get-HnsPolicyList lists HNS v1 policy lists, which do not show port-mapping flags, and with one server in the run node-to-node forwarding cannot show"
        ));
    }
    let only_own = found.backends == 1;
    Ok(seen(
        only_own,
        format!(
            "{}: HNS load balancer {} of {PRESERVE}'s ingress address {ingress} serves {} of the Service's {total} backends ({}; the v1 policy list shows no port-mapping flags)",
            node.name,
            found.id,
            found.backends,
            if only_own {
                "the node's own only: node-to-node forwarding is off, as preserve-destination does"
            } else {
                "node-to-node forwarding is on: the annotation was not applied"
            }
        ),
    ))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    /// A load balancer as the test reads it: id, first VIP, backends, flags.
    type Seen<'a> = (&'a str, &'a str, usize, Option<(u64, u64)>);

    const V1: &str = r#"[{"ID":"A","Policies":[{"ExternalPort":80,"InternalPort":8080,"Protocol":6,"Type":"ELB","VIPs":["10.96.0.20"]}],"References":["/endpoints/x","/endpoints/y"]},{"ID":"B","Policies":[{"Type":"ROUTE","DestinationPrefix":"10.0.0.0/8"}],"References":[]}]"#;
    const V2: &str = r#"{"ID":"C","HostComputeEndpoints":["e1"],"SourceVIP":"10.244.3.254","FrontendVIPs":["203.0.113.10"],"PortMappings":[{"Protocol":6,"InternalPort":8080,"ExternalPort":80,"Flags":12}],"SchemaVersion":{"Major":2,"Minor":0},"Flags":1}"#;

    /// Both shapes (microsoft/SDN hns.psm1's v1 policy lists; hcsshim's v2 load balancers, as
    /// hns.v2.psm1 lists them), one object or several, and nothing at all.
    #[rstest]
    #[case::v1(V1, &[("A", "10.96.0.20", 2, None)])]
    #[case::v2_single_object(V2, &[("C", "203.0.113.10", 1, Some((1, 12)))])]
    #[case::none("", &[])]
    fn load_balancers_parse_in_either_shape(#[case] text: &str, #[case] want: &[Seen<'_>]) {
        let lbs = parse(text).expect("parses");
        let elb: Vec<Seen<'_>> = lbs
            .iter()
            .filter(|lb| !lb.vips.is_empty())
            .map(|lb| (lb.id.as_str(), lb.vips[0].as_str(), lb.backends, lb.flags))
            .collect();
        assert_eq!(elb, want);
    }

    #[test]
    fn output_that_is_not_json_is_named() {
        let e = parse("Get-HnsPolicyList : The term is not recognized").expect_err("not JSON");
        assert!(e.contains("gave no JSON"), "{e}");
    }
}
