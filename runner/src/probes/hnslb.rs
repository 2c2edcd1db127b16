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
use crate::cluster::dataplane::{NodeEndpoint, NodeLoadBalancer, compare};
use crate::cluster::deploy::subjects::{CONTROL, OVER_LIMIT, OVER_LIMIT_BACKENDS, PRESERVE};
use crate::cluster::facts::ClusterNode;
use crate::probes::apiview::ApiViews;
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::settle::FlowKind;
use crate::probes::transport::Observation;

/// The node's load balancers as JSON (`-Depth 5` reaches the port mappings' flags).
const LIST: &str = "Get-HnsPolicyList -ErrorAction Stop | ConvertTo-Json -Depth 5 -Compress";
/// The node's endpoints as JSON.
const ENDPOINTS: &str = "Get-HnsEndpoint -ErrorAction Stop | ConvertTo-Json -Depth 5 -Compress";
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
    Ok(json_items(text, "Get-HnsPolicyList")?.iter().map(one_lb).collect())
}

/// The objects `ConvertTo-Json` printed for `cmdlet`'s output: one object, or an array of
/// several; none when it printed nothing. Err names the cmdlet whose output did not parse.
fn json_items(text: &str, cmdlet: &str) -> Result<Vec<Value>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("{cmdlet} | ConvertTo-Json gave no JSON ({e})"))?;
    Ok(match value {
        Value::Array(items) => items,
        one => vec![one],
    })
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
        HnsSubject::MatchesApi => matches_api(ctx, node, &host.name).await,
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

/// The endpoints in `text` (one object or an array; nothing printed: none), in either shape:
/// v1 (`IPAddress`, `IsRemoteEndpoint`, a `PA` policy) or v2 (`IpConfigurations`, `Flags` 1 for
/// a remote endpoint, a `ProviderAddress` policy).
pub fn parse_endpoints(text: &str) -> Result<Vec<NodeEndpoint>, String> {
    Ok(json_items(text, "Get-HnsEndpoint")?.iter().map(one_endpoint).collect())
}

fn one_endpoint(v: &Value) -> NodeEndpoint {
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
    let policies = v.get("Policies").and_then(Value::as_array).cloned().unwrap_or_default();
    if v.get("IpConfigurations").is_some() {
        let provider = policies
            .iter()
            .filter(|p| p.get("Type").and_then(Value::as_str) == Some("ProviderAddress"))
            .find_map(|p| p.pointer("/Settings/ProviderAddress").and_then(Value::as_str))
            .map(str::to_string);
        return NodeEndpoint {
            id: s("/ID").unwrap_or_default(),
            ip: s("/IpConfigurations/0/IpAddress").unwrap_or_default(),
            remote: v.get("Flags").and_then(Value::as_u64).is_some_and(|f| f & 1 != 0),
            provider,
        };
    }
    let provider = policies
        .iter()
        .filter(|p| p.get("Type").and_then(Value::as_str) == Some("PA"))
        .find_map(|p| p.get("PA").and_then(Value::as_str))
        .map(str::to_string);
    NodeEndpoint {
        id: s("/ID").unwrap_or_default(),
        ip: s("/IPAddress").unwrap_or_default(),
        remote: v.get("IsRemoteEndpoint").and_then(Value::as_bool) == Some(true),
        provider,
    }
}

/// NET-HNS-MATCHES-API: the node's load balancers and endpoints against the API, read again
/// until they agree or the Service settle window ends.
/// One reading of `node`'s data plane through its host probe `pod`, compared with the API: the
/// node's load balancers and endpoints, the API's Services, and the differences.
pub struct Reading {
    pub load_balancers: usize,
    pub endpoints: usize,
    pub services: usize,
    pub drift: Vec<crate::cluster::dataplane::Drift>,
}

/// Reads `node`'s HNS load balancers and endpoints through the host probe `pod` and compares
/// them with what the API holds now.
pub async fn read(
    pods: &kube::Api<k8s_openapi::api::core::v1::Pod>,
    (client, views): (&kube::Client, &ApiViews),
    node: &str,
    pod: &str,
) -> Result<Reading, String> {
    let (lbs, endpoints, api) = futures::join!(
        crate::probes::hostfacts::run(pods, pod, LIST),
        crate::probes::hostfacts::run(pods, pod, ENDPOINTS),
        views.get(client),
    );
    let lbs: Vec<NodeLoadBalancer> = parse(&lbs?)?
        .into_iter()
        .map(|lb| NodeLoadBalancer {
            id: lb.id,
            vips: lb.vips,
            endpoints: lb.endpoints,
        })
        .collect();
    let endpoints = parse_endpoints(&endpoints?)?;
    let api = api?;
    Ok(Reading {
        drift: compare(node, &lbs, &endpoints, &api),
        load_balancers: lbs.len(),
        endpoints: endpoints.len(),
        services: api.services.len(),
    })
}

impl Reading {
    /// `N differences between the node's HNS state and the API: …` (the first ten).
    pub fn differences(&self) -> String {
        let shown: Vec<String> = self.drift.iter().take(10).map(ToString::to_string).collect();
        let more = self.drift.len().saturating_sub(shown.len());
        format!(
            "{} difference{} between the node's HNS state and the API: {}{}",
            self.drift.len(),
            if self.drift.len() == 1 { "" } else { "s" },
            shown.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        )
    }
}

async fn matches_api(ctx: &Ctx<'_>, node: &ClusterNode, pod: &str) -> Result<Probed, String> {
    let until = ctx.settle_until(FlowKind::Service);
    // The first reading with the run's shared view of the API; a difference from it is read
    // again at once with a view of its own (the API may have changed within the view's second),
    // and only differences from such a view count.
    let own = ApiViews::fresh();
    let mut shared = true;
    loop {
        let views = if shared { ctx.api_views } else { &own };
        let Reading {
            load_balancers,
            endpoints,
            services,
            drift,
        } = read(&ctx.pods, (&ctx.client, views), &node.name, pod).await?;
        if drift.is_empty() {
            return Ok(seen(
                true,
                format!(
                    "{}: {load_balancers} HNS load balancers and {endpoints} endpoints match the API's {services} Services",
                    node.name,
                ),
            ));
        }
        if std::mem::take(&mut shared) {
            continue;
        }
        if tokio::time::Instant::now() >= until {
            let reading = Reading {
                load_balancers,
                endpoints,
                services,
                drift,
            };
            let text = reading.differences().replacen(
                " between the node's HNS state and the API",
                " between the node's HNS state and the API after the Service settle window",
                1,
            );
            return Ok(seen(false, format!("{}: {text}", node.name)));
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rstest::rstest;

    use super::*;
    use crate::cluster::dataplane::{ApiService, ApiView};

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

    /// Endpoints in both shapes: v1 (`IsRemoteEndpoint`, a `PA` policy) and v2 (`Flags` 1, a
    /// `ProviderAddress` policy).
    #[rstest]
    #[case::v1_local(r#"{"ID":"L","IPAddress":"10.244.3.7","MacAddress":"00-15-5D-00-00-01","Policies":[]}"#, ("L", "10.244.3.7", false, None))]
    #[case::v1_remote(r#"[{"ID":"R","IPAddress":"10.244.1.9","IsRemoteEndpoint":true,"Policies":[{"PA":"10.1.0.12","Type":"PA"}]}]"#, ("R", "10.244.1.9", true, Some("10.1.0.12")))]
    #[case::v2_remote(r#"{"ID":"R","IpConfigurations":[{"IpAddress":"10.244.1.9","PrefixLength":24}],"Policies":[{"Type":"ProviderAddress","Settings":{"ProviderAddress":"10.1.0.12"}}],"Flags":1}"#, ("R", "10.244.1.9", true, Some("10.1.0.12")))]
    #[case::v2_local(r#"{"ID":"L","IpConfigurations":[{"IpAddress":"10.244.3.7"}],"Policies":[]}"#, ("L", "10.244.3.7", false, None))]
    fn endpoints_parse_in_either_shape(#[case] text: &str, #[case] want: (&str, &str, bool, Option<&str>)) {
        let e = parse_endpoints(text).expect("parses");
        assert_eq!(e.len(), 1);
        assert_eq!(
            (
                e[0].id.as_str(),
                e[0].ip.as_str(),
                e[0].remote,
                e[0].provider.as_deref()
            ),
            want
        );
    }

    #[test]
    fn output_that_is_not_json_is_named() {
        let e = parse("Get-HnsPolicyList : The term is not recognized").expect_err("not JSON");
        assert!(e.contains("gave no JSON"), "{e}");
    }

    /// A load balancer read from `lbs` (parsed) for the comparison.
    fn node_lbs(text: &str) -> Vec<NodeLoadBalancer> {
        parse(text)
            .expect("parses")
            .into_iter()
            .map(|lb| NodeLoadBalancer {
                id: lb.id,
                vips: lb.vips,
                endpoints: lb.endpoints,
            })
            .collect()
    }

    /// The API: one Service `ns/svc` at `vip` with `backends` ((address, node)), and `pods`.
    fn api(vip: Option<&str>, backends: &[(&str, &str)], pods: &[(&str, &str)]) -> ApiView {
        let pair = |(a, b): &(&str, &str)| ((*a).to_string(), (*b).to_string());
        ApiView {
            services: vip
                .map(|v| ApiService {
                    name: "ns/svc".into(),
                    vips: vec![v.into()],
                    backends: backends.iter().map(pair).collect(),
                    local_only: false,
                })
                .into_iter()
                .collect(),
            pods: pods.iter().map(pair).collect(),
            nodes: BTreeMap::from([
                ("win-1".into(), "10.1.0.11".into()),
                ("win-2".into(), "10.1.0.12".into()),
            ]),
            ..ApiView::default()
        }
    }

    // calico#7305 (kube-proxy's log on a Windows node): a NodePort's load balancer, no
    // frontend address.
    const NODEPORT_LB: &str = r#"{"ID":"0be07c06-353c-4fbf-8ebc-5531f877e68a","HostComputeEndpoints":["fd6bec0f-7b88-4b61-b5af-70897ab0960b"],"SourceVIP":"10.10.253.194","PortMappings":[{"Protocol":6,"InternalPort":80,"ExternalPort":31416,"Flags":2}],"SchemaVersion":{"Major":2,"Minor":0}}"#;
    // calico#5762: a DSR load balancer of ClusterIP 10.98.164.216.
    const CLUSTER_IP_LB: &str = r#"{"ID":"37aa41cf-ff54-4626-9dd6-eb6eb236aaa1","HostComputeEndpoints":["90726009-0478-4888-b521-b0a259dbc268"],"FrontendVIPs":["10.98.164.216"],"PortMappings":[{"Protocol":6,"InternalPort":443,"ExternalPort":443}],"SchemaVersion":{"Major":2,"Minor":0},"Flags":1}"#;
    // microsoft/SDN#227: a remote endpoint as the v1 API returns it (l2bridge: no PA policy).
    const REMOTE_ENDPOINT: &str = r#"{"ID":"b799ce1e-da48-480d-b2eb-c13436cf5653","Name":"Ethernet","VirtualNetwork":"8e68213e-9443-4395-a50c-3977cb7bdba7","VirtualNetworkName":"l2bridge","Policies":[{"Type":"L2Driver"}],"MacAddress":"00:11:22:33:44:55","IPAddress":"10.190.178.37","IsRemoteEndpoint":true}"#;
    // microsoft/Windows-Containers#631 (EKS, `Get-HnsEndpoint | Format-Table Id, Name,
    // IPAddress, IsRemoteEndpoint`; the reporter's stale remote endpoints after pod churn), the
    // table's first three rows as ConvertTo-Json writes the same fields.
    const STALE_REMOTES: &str = r#"[{"ID":"b10f186a-ee1d-40a1-bb8a-f532cab4d131","Name":"Ethernet","IPAddress":"192.168.7.110","IsRemoteEndpoint":true},{"ID":"ba5b0702-d05a-4fec-869f-4352d33f1891","Name":"Ethernet","IPAddress":"172.0.32.0","IsRemoteEndpoint":true},{"ID":"ddec4b0f-0cf6-4276-bd42-5edd075fd179","Name":"Ethernet","IPAddress":"192.168.7.84","IsRemoteEndpoint":true}]"#;

    /// Readings quoted from public issues, compared with an API that matches them or not: the
    /// comparison names the reporters' drift, and no drift where the node and the API agree.
    #[rstest]
    // A NodePort's load balancer has no address of its own: never leaked, whatever the API.
    #[case::nodeport_lb(NODEPORT_LB, "", api(None, &[], &[]), &[])]
    // The ClusterIP's load balancer refers to an endpoint the node does not list: it lacks the
    // Service's ready backend.
    #[case::lb_without_its_endpoint(CLUSTER_IP_LB, "", api(Some("10.98.164.216"), &[("10.244.1.5", "win-2")], &[("10.244.1.5", "win-2")]),
        &["the load balancer of ns/svc (10.98.164.216) lacks ready backend 10.244.1.5"])]
    // The same load balancer with the Service gone: leaked.
    #[case::lb_of_no_service(CLUSTER_IP_LB, "", api(None, &[], &[]), &["(10.98.164.216) belongs to no Service"])]
    // The remote endpoint of a pod that still runs on another node: in step.
    #[case::remote_of_a_live_pod("", REMOTE_ENDPOINT, api(None, &[], &[("10.190.178.37", "win-2")]), &[])]
    // The same endpoint once its pod is gone: stale.
    #[case::remote_of_no_pod("", REMOTE_ENDPOINT, api(None, &[], &[]), &["remote endpoint 10.190.178.37: no pod has that address"])]
    // Windows-Containers#631: one of the three addresses is a pod's again, two are no pod's.
    #[case::churned_remotes("", STALE_REMOTES, api(None, &[], &[("192.168.7.84", "win-2")]),
        &["remote endpoint 192.168.7.110: no pod has that address", "remote endpoint 172.0.32.0: no pod has that address"])]
    fn readings_quoted_from_public_issues_are_compared(
        #[case] lbs: &str,
        #[case] endpoints: &str,
        #[case] api: ApiView,
        #[case] want: &[&str],
    ) {
        let found = compare(
            "win-1",
            &node_lbs(lbs),
            &parse_endpoints(endpoints).expect("parses"),
            &api,
        );
        crate::cluster::dataplane::assert_named(&found, want);
    }
}
