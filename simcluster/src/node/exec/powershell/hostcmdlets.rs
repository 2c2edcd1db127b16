//! The host's networking cmdlets, answered from the node's host model ([`crate::node::host`]):
//! `Get-HnsNetwork` and `Get-HnsPolicyList` (the HostNetworkingService module, which only the
//! host's Windows PowerShell has — a HostProcess container), `Get-NetAdapter` and
//! `Get-NetTCPConnection` (the host's, or the container's own), and `Measure-Object`.
//!
//! Shapes: HNS objects are PSCustomObjects in list format, their nested objects shown as
//! `@{Name=value; …}` and arrays as `{a, b}` — so a load balancer's `VIPs` show inside its
//! `Policies` (real PowerShell shows a nested array as `System.Object[]`). An overlay network
//! keeps its VNI where flannel puts it, in its subnet's policies (`Subnets[].Policies[]` with
//! `Type: VSID`, flannel's `hcn.VsidPolicySetting`; real-clusters.md §4) — there is no top-level
//! `VNI` property; its `VxlanPort` stays top-level. A host may lack the HNS module
//! (`hnsCmdlets: false`, projectcalico/calico#6843): the cmdlets are not recognized there. `Get-NetAdapter` and
//! `Get-NetTCPConnection` print tables; `Measure-Object` prints its GenericMeasureInfo list.

use super::invocation::{Errors, Invocation, texts};
use super::patterns::glob;
use super::{Kind, V, obj, s};
use crate::node::exec::ps_errors::{ps_error, ps_not_recognized};
use crate::node::exec::session::Session;
use crate::node::{hnslb, host};

fn int(n: impl Into<i64>) -> V {
    V::Int(n.into())
}

/// The node of a HostProcess container (the host these cmdlets look at), else None.
fn host_node(session: &Session) -> Option<&crate::config::profile::NodeProfile> {
    session.ctx.node.as_ref().filter(|_| session.ctx.host_process)
}

/// The HostNetworkingService cmdlets exist only on the host, and only where its module is
/// installed (projectcalico/calico#6843): elsewhere they are unknown.
fn hns_host<'a>(
    session: &'a Session,
    name: &str,
    statement: &str,
    errors: &mut Errors,
) -> Option<&'a crate::config::profile::NodeProfile> {
    let node = host_node(session).filter(|n| n.hns_cmdlets);
    if node.is_none() {
        errors.add(ps_not_recognized(statement, name));
    }
    node
}

/// `Get-HnsNetwork`: the pod network's HNS network, when it exists.
pub(super) fn get_hns_network(session: &Session, statement: &str, errors: &mut Errors) -> Vec<V> {
    let Some(node) = hns_host(session, "Get-HnsNetwork", statement, errors) else {
        return Vec::new();
    };
    host::pod_network(node)
        .into_iter()
        .map(|n| {
            let mut subnet = vec![("AddressPrefix", s(n.address_prefix)), ("GatewayAddress", s(n.gateway))];
            if let Some((vni, _)) = n.vxlan {
                let vsid = obj(Kind::Custom, vec![("Type", s("VSID")), ("VSID", int(vni))]);
                subnet.push(("Policies", V::Arr(vec![vsid])));
            }
            let subnet = obj(Kind::Custom, subnet);
            let mut props = vec![
                ("Flags", int(0)),
                ("ID", s(n.id)),
                ("IPv6", V::Bool(false)),
                ("ManagementIP", s(n.management_ip.to_string())),
                ("Name", s(n.name)),
                ("NetworkAdapterName", s(n.adapter)),
                ("State", int(1)),
                ("Subnets", V::Arr(vec![subnet])),
                ("Type", s(n.kind)),
            ];
            if let Some((_, port)) = n.vxlan {
                props.push(("VxlanPort", int(port)));
            }
            obj(Kind::Custom, props)
        })
        .collect()
}

/// `Get-HnsPolicyList`: kube-proxy's load balancers on the node. The in-box
/// `HostNetworkingService` module lists them as HNS v1 policy lists (`ID`, `Policies` of type
/// `ELB` with `VIPs` and ports, `References` to `/endpoints/<id>`; microsoft/SDN
/// `Kubernetes/windows/hns.psm1` and its `LoadBalancerPolicyStrategy.psm1`, which reads
/// `$_.Policies.VIPs`); after `Import-Module hns.v2.psm1` (AKS) the same name lists HNS v2 load
/// balancers (`Get-HnsGeneric` over `HcnEnumerateLoadBalancers`): hcsshim's
/// `HostComputeLoadBalancer` — `HostComputeEndpoints`, `SourceVIP`, `FrontendVIPs`,
/// `PortMappings` with their `Flags`, and `Flags`.
pub(super) fn get_hns_policy_list(session: &Session, v2: bool, statement: &str, errors: &mut Errors) -> Vec<V> {
    let Some(node) = hns_host(session, "Get-HnsPolicyList", statement, errors) else {
        return Vec::new();
    };
    let lbs = hnslb::load_balancers(node, &session.ctx.store);
    if v2 {
        return lbs.into_iter().map(v2_load_balancer).collect();
    }
    lbs.into_iter()
        .map(|lb| {
            let policies = lb
                .ports
                .iter()
                .map(|(protocol, internal, external)| {
                    obj(
                        Kind::Custom,
                        vec![
                            ("ExternalPort", int(*external)),
                            ("InternalPort", int(*internal)),
                            ("Protocol", int(*protocol)),
                            ("Type", s("ELB")),
                            ("VIPs", V::Arr(vec![s(lb.vip.clone())])),
                        ],
                    )
                })
                .collect();
            let references = lb.endpoints.iter().map(|e| s(format!("/endpoints/{e}"))).collect();
            obj(
                Kind::Custom,
                vec![
                    ("ID", s(lb.id)),
                    ("Policies", V::Arr(policies)),
                    ("References", V::Arr(references)),
                ],
            )
        })
        .collect()
}

/// `Get-HnsEndpoint`: the node's HNS endpoints ([`hnslb::endpoints`]). The in-box module lists
/// them in the v1 shape (microsoft/SDN `hns.psm1` `New-HnsRemoteEndpoint`: `ID`,
/// `VirtualNetwork`, `IPAddress`, `MacAddress`, `IsRemoteEndpoint`; a remote endpoint's provider
/// address as a `PA` policy); after `hns.v2.psm1` the v2 shape (hcsshim `hcn/hcnendpoint.go`
/// `HostComputeEndpoint`: `ID`, `Name`, `HostComputeNetwork`, `Policies` of type
/// `ProviderAddress`, `IpConfigurations`, `MacAddress`, `Flags` 1 for a remote endpoint).
pub(super) fn get_hns_endpoint(session: &Session, v2: bool, statement: &str, errors: &mut Errors) -> Vec<V> {
    let Some(node) = hns_host(session, "Get-HnsEndpoint", statement, errors) else {
        return Vec::new();
    };
    let Some(network) = host::pod_network(node) else {
        return Vec::new();
    };
    hnslb::endpoints(node, &session.ctx.store)
        .into_iter()
        .map(|e| {
            let name = if e.remote {
                format!("remote_{}", e.ip)
            } else {
                format!("{}_{}", network.name, e.ip)
            };
            if v2 {
                let mut props = vec![
                    ("ID", s(e.id)),
                    ("Name", s(name)),
                    ("HostComputeNetwork", s(network.id.clone())),
                ];
                let policies = e
                    .provider
                    .iter()
                    .map(|pa| {
                        let settings = obj(Kind::Custom, vec![("ProviderAddress", s(pa.clone()))]);
                        obj(
                            Kind::Custom,
                            vec![("Type", s("ProviderAddress")), ("Settings", settings)],
                        )
                    })
                    .collect();
                props.push(("Policies", V::Arr(policies)));
                let config = obj(Kind::Custom, vec![("IpAddress", s(e.ip)), ("PrefixLength", int(24))]);
                props.push(("IpConfigurations", V::Arr(vec![config])));
                props.push(("MacAddress", s(e.mac)));
                if e.remote {
                    props.push(("Flags", int(1)));
                }
                return obj(Kind::Custom, props);
            }
            let policies = e
                .provider
                .iter()
                .map(|pa| obj(Kind::Custom, vec![("PA", s(pa.clone())), ("Type", s("PA"))]))
                .collect();
            let mut props = vec![("ID", s(e.id)), ("IPAddress", s(e.ip))];
            if e.remote {
                props.push(("IsRemoteEndpoint", V::Bool(true)));
            }
            props.extend([
                ("MacAddress", s(e.mac)),
                ("Name", s(name)),
                ("Policies", V::Arr(policies)),
                ("PrefixLength", int(24)),
                ("VirtualNetwork", s(network.id.clone())),
                ("VirtualNetworkName", s(network.name.clone())),
            ]);
            obj(Kind::Custom, props)
        })
        .collect()
}

/// One load balancer in the HNS v2 shape (hcsshim `hcn/hcnloadbalancer.go`; fields that are
/// empty are left out, as its `omitempty` tags do).
fn v2_load_balancer(lb: hnslb::LoadBalancer) -> V {
    let mappings = lb
        .ports
        .iter()
        .map(|(protocol, internal, external)| {
            let mut m = vec![
                ("Protocol", int(*protocol)),
                ("InternalPort", int(*internal)),
                ("ExternalPort", int(*external)),
            ];
            if lb.port_flags != 0 {
                m.push(("Flags", int(lb.port_flags)));
            }
            obj(Kind::Custom, m)
        })
        .collect();
    let mut props = vec![
        ("ID", s(lb.id)),
        (
            "HostComputeEndpoints",
            V::Arr(lb.endpoints.into_iter().map(s).collect()),
        ),
    ];
    if let Some(vip) = lb.source_vip {
        props.push(("SourceVIP", s(vip)));
    }
    props.push(("FrontendVIPs", V::Arr(vec![s(lb.vip)])));
    props.push(("PortMappings", V::Arr(mappings)));
    let version = obj(Kind::Custom, vec![("Major", int(2)), ("Minor", int(0))]);
    props.push(("SchemaVersion", version));
    if lb.flags != 0 {
        props.push(("Flags", int(lb.flags)));
    }
    obj(Kind::Custom, props)
}

/// `Get-NetAdapter [-Name pattern…]`: the host's adapters in a HostProcess container, the
/// container's own vNIC elsewhere (named as `ipconfig` names it).
pub(super) fn get_net_adapter(session: &Session, call: &Invocation, statement: &str, errors: &mut Errors) -> Vec<V> {
    let adapters = match host_node(session) {
        Some(node) => host::adapters(node),
        None => {
            let id = session.ctx.container_id();
            let short = id.get(..12).unwrap_or("");
            vec![host::Adapter {
                name: format!("vEthernet ({short}_cbr0)"),
                description: "Hyper-V Virtual Ethernet Container Adapter",
                if_index: 23,
                mac: format!(
                    "00-15-5D-{}-{}-{}",
                    id.get(..2).unwrap_or("00").to_uppercase(),
                    id.get(2..4).unwrap_or("00").to_uppercase(),
                    id.get(4..6).unwrap_or("00").to_uppercase()
                ),
                link_speed: "10 Gbps",
            }]
        }
    };
    let row = |a: &host::Adapter| {
        obj(
            Kind::Row("MSFT_NetAdapter"),
            vec![
                ("Name", s(a.name.clone())),
                ("InterfaceDescription", s(a.description)),
                ("ifIndex", int(a.if_index)),
                ("Status", s("Up")),
                ("MacAddress", s(a.mac.clone())),
                ("LinkSpeed", s(a.link_speed)),
            ],
        )
    };
    let names = texts(call.value(&["name"], 0));
    if names.is_empty() {
        return adapters.iter().map(row).collect();
    }
    let mut found = Vec::new();
    for name in names {
        let hits: Vec<&host::Adapter> = adapters.iter().filter(|a| glob(&name, &a.name, false)).collect();
        if hits.is_empty() && !name.contains(['*', '?', '[']) {
            errors.add(ps_error(
                statement,
                "Get-NetAdapter",
                &format!(
                    "No MSFT_NetAdapter objects found with property 'Name' equal to '{name}'.  Verify the value of \
                     the property and retry."
                ),
                &format!("ObjectNotFound: ({name}:String) [Get-NetAdapter], CimJobException"),
                "CmdletizationQuery_NotFound_Name,Get-NetAdapter",
            ));
        }
        for a in hits {
            if !found.iter().any(|f: &&host::Adapter| f.name == a.name) {
                found.push(a);
            }
        }
    }
    found.into_iter().map(row).collect()
}

/// The CIM number of a TCP state (what the query in the not-found error shows).
fn state_number(state: &str) -> u32 {
    match state.to_ascii_lowercase().as_str() {
        "closed" => 1,
        "listen" => 2,
        "synsent" => 3,
        "synreceived" => 4,
        "established" => 5,
        "finwait1" => 6,
        "finwait2" => 7,
        "closewait" => 8,
        "closing" => 9,
        "lastack" => 10,
        "timewait" => 11,
        "deletetcb" => 12,
        _ => 100,
    }
}

/// `Get-NetTCPConnection [-LocalAddress a] [-LocalPort p] [-RemoteAddress a] [-RemotePort p]
/// [-State s] [-OwningProcess n]`: the host's connection table in a HostProcess container
/// (none in other containers); a filter that matches nothing is an error.
pub(super) fn get_net_tcp_connection(
    session: &Session,
    call: &Invocation,
    statement: &str,
    errors: &mut Errors,
) -> Vec<V> {
    let table = match host_node(session) {
        Some(node) => host::tcp_connections(node, &session.ctx.store),
        None => Vec::new(),
    };
    let list = |name: &str, n: usize| texts(call.value(&[name], n));
    let filters: Vec<(&str, Vec<String>)> = [
        ("LocalAddress", list("localaddress", 0)),
        ("LocalPort", list("localport", 1)),
        ("RemoteAddress", list("remoteaddress", usize::MAX)),
        ("RemotePort", list("remoteport", usize::MAX)),
        ("State", list("state", usize::MAX)),
        ("OwningProcess", list("owningprocess", usize::MAX)),
    ]
    .into_iter()
    .filter(|(_, values)| !values.is_empty())
    .collect();
    let keep = |c: &host::TcpConnection| {
        filters.iter().all(|(prop, values)| {
            let got = match *prop {
                "LocalAddress" => c.local.clone(),
                "LocalPort" => c.local_port.to_string(),
                "RemoteAddress" => c.remote.clone(),
                "RemotePort" => c.remote_port.to_string(),
                "State" => c.state.name().to_string(),
                _ => c.owner.to_string(),
            };
            values.iter().any(|v| v.eq_ignore_ascii_case(&got))
        })
    };
    let rows: Vec<V> = table
        .iter()
        .filter(|c| keep(c))
        .map(|c| {
            obj(
                Kind::Row("MSFT_NetTCPConnection"),
                vec![
                    ("LocalAddress", s(c.local.clone())),
                    ("LocalPort", int(c.local_port)),
                    ("RemoteAddress", s(c.remote.clone())),
                    ("RemotePort", int(c.remote_port)),
                    ("State", s(c.state.name())),
                    (
                        "AppliedSetting",
                        if c.state == host::TcpState::Established {
                            s("Internet")
                        } else {
                            V::Null
                        },
                    ),
                    ("OwningProcess", int(c.owner)),
                ],
            )
        })
        .collect();
    if rows.is_empty() && !filters.is_empty() {
        let clause = |(prop, values): &(&str, Vec<String>)| {
            let one = |v: &String| match *prop {
                "State" => format!("({prop} = {})", state_number(v)),
                "LocalAddress" | "RemoteAddress" => format!("({prop} = '{v}')"),
                _ => format!("({prop} = {v})"),
            };
            let all: Vec<String> = values.iter().map(one).collect();
            if all.len() == 1 {
                all.join("")
            } else {
                format!("({})", all.join(" OR "))
            }
        };
        let query: Vec<String> = filters.iter().map(clause).collect();
        errors.add(ps_error(
            statement,
            "Get-NetTCPConnection",
            &format!(
                "No matching MSFT_NetTCPConnection objects found by CIM query for instances of the \
                 ROOT/StandardCimv2/MSFT_NetTCPConnection class on the  CIM server: SELECT * FROM \
                 MSFT_NetTCPConnection  WHERE ({}). Verify query parameters and retry.",
                query.join(" AND ")
            ),
            "ObjectNotFound: (MSFT_NetTCPConnection:String) [Get-NetTCPConnection], CimJobException",
            "CmdletizationQuery_NotFound,Get-NetTCPConnection",
        ));
    }
    rows
}

/// `Measure-Object [-Property p] [-Sum] [-Average] [-Maximum] [-Minimum]`: how many items came
/// down the pipeline (those with the property, when one is named) and the asked statistics.
pub(super) fn measure_object(call: &Invocation, input: Vec<V>, core: bool) -> Vec<V> {
    let property = call.value(&["property"], 0).map(|v| v.text());
    let values: Vec<V> = match &property {
        Some(p) => input
            .iter()
            .map(|i| i.member(p))
            .filter(|v| !matches!(v, V::Null))
            .collect(),
        None => input,
    };
    let numbers: Vec<f64> = values.iter().filter_map(V::number).collect();
    let count = i64::try_from(values.len()).unwrap_or(i64::MAX);
    let sum: f64 = numbers.iter().sum();
    let asked = |names: &[&str], value: Option<f64>| match value {
        Some(v) if names.iter().any(|n| call.switch(n)) => V::Num(v),
        _ => V::Null,
    };
    let any = !numbers.is_empty();
    let average = any.then(|| sum / numbers.len() as f64);
    let mut props = vec![
        ("Count", V::Int(count)),
        ("Average", asked(&["average"], average)),
        ("Sum", asked(&["sum"], any.then_some(sum))),
        ("Maximum", asked(&["maximum"], numbers.iter().copied().reduce(f64::max))),
        ("Minimum", asked(&["minimum"], numbers.iter().copied().reduce(f64::min))),
    ];
    if core {
        let deviation = average.filter(|_| numbers.len() > 1).map(|avg| {
            let squares: f64 = numbers.iter().map(|n| (n - avg).powi(2)).sum();
            (squares / (numbers.len() - 1) as f64).sqrt()
        });
        props.push(("StandardDeviation", asked(&["standarddeviation"], deviation)));
    }
    props.push(("Property", property.map_or(V::Null, s)));
    vec![obj(Kind::Custom, props)]
}
