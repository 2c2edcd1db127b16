//! Building the probe requests: the pod to exec in and what it asks for (a fixture client, the
//! node-side probe, or a client of another DNS set-up created on demand), and the runner's own
//! GET from outside the cluster.

use std::time::Duration;

use kube::api::Api;
use mixcheck_reports::Os;

use crate::cluster::deploy;
use crate::cluster::facts::ClusterNode;
use crate::probes::transport::{self as probe, Request, Runner};
use crate::catalogue::suite::{Destination, NameForm, Origin, Probe, Protocol, ServiceVariant, Verify};
use crate::cluster::workload::NotReady;

use super::cells::CellPlan;
use super::judge::Ctx;

/// The outside address and name the outbound checks use (TCP 53 and ICMP on a public resolver;
/// HTTP on a public web site).
const OUTSIDE_IP: &str = "1.1.1.1";
const OUTSIDE_IP_PORT: u16 = 53;
const OUTSIDE_NAME: &str = "www.microsoft.com";

pub(super) enum Unprobed {
    Indeterminate(String),
    Error(String),
    /// The probe runs in a client of another DNS set-up.
    Variant(crate::catalogue::suite::DnsVariant),
}

type Built = (String, Option<String>, Runner, Request, Verify);

fn usable(p: Option<&deploy::Placed>, what: &str, node: &str) -> Result<String, Unprobed> {
    match p {
        Some(p) if p.problem.is_none() => Ok(p.name.clone()),
        Some(p) => Err(Unprobed::Error(format!(
            "the {what} on {node} is not usable: {}",
            p.problem.clone().unwrap_or_default()
        ))),
        None => Err(Unprobed::Error(format!("no {what} was deployed on {node}"))),
    }
}

/// The pod to exec in and what to ask for, for one pair.
pub(super) fn build_request(
    ctx: &Ctx<'_>,
    plan: &CellPlan<'_>,
    from: Option<&ClusterNode>,
    to: Option<&ClusterNode>,
) -> Result<Built, Unprobed> {
    let dep = ctx.dep;
    let protocol = plan.protocol.unwrap_or(Protocol::Tcp);
    let src = from.ok_or_else(|| Unprobed::Error("the cell has no source node".into()))?;
    let (origin, verify, service) = match &plan.check.probe {
        Probe::Connect {
            from, verify, service, ..
        } => (*from, *verify, *service),
        Probe::Resolve { from, .. } => (*from, Verify::Reachable, ServiceVariant::Cluster),
        _ => return Err(Unprobed::Error("not a connection probe".into())),
    };
    let localhost = matches!(
        plan.check.probe,
        Probe::Connect {
            to: Destination::Localhost,
            ..
        }
    );
    if let Probe::Resolve { dns, .. } = &plan.check.probe
        && *dns != crate::catalogue::suite::DnsVariant::ClusterFirst
    {
        // Resolved by a client pod of that DNS set-up, created on demand (see judge_pair).
        return Err(Unprobed::Variant(*dns));
    }
    let (pod, container, runner) = match (origin, localhost) {
        (_, true) => (
            usable(dep.servers.get(&src.name), "netexec server", &src.name)?,
            Some("client".to_string()),
            Runner::in_pod(src),
        ),
        (Origin::Pod, false) => (
            usable(dep.clients.get(&src.name), "client pod", &src.name)?,
            None,
            Runner::in_pod(src),
        ),
        (Origin::Host, false) => {
            if src.os == Os::Windows && src.host_process() != Some(true) {
                return Err(Unprobed::Indeterminate(format!(
                    "HostProcess pods are not available on {} (they need Kubernetes 1.23+ and containerd 1.6+): no documented in-cluster way to probe from the Windows host",
                    src.name
                )));
            }
            let runner = if src.os == Os::Windows {
                Runner::WindowsHost
            } else {
                Runner::Agnhost(Os::Linux)
            };
            (
                usable(dep.hosts.get(&src.name), "node-side probe", &src.name)?,
                None,
                runner,
            )
        }
    };
    let dst = to.unwrap_or(src);
    let server_ip = |n: &ClusterNode| -> Result<String, Unprobed> {
        match dep.servers.get(&n.name) {
            Some(p) if p.problem.is_none() => Ok(p.ip.clone()),
            Some(p) => Err(Unprobed::Error(format!(
                "the netexec server on {} is not usable: {}",
                n.name,
                p.problem.clone().unwrap_or_default()
            ))),
            None => Err(Unprobed::Error(format!("no netexec server on {}", n.name))),
        }
    };
    // Every service, name and port of a node fronts its netexec server: with the server not
    // usable (e.g. its sandbox never started) there is nothing to judge behind them.
    let svc = |n: &ClusterNode, local: bool| -> Result<&deploy::ServiceInfo, Unprobed> {
        server_ip(n)?;
        let map = if local { &dep.local_services } else { &dep.services };
        map.get(&n.name)
            .ok_or_else(|| Unprobed::Error(format!("no service over the server on {}", n.name)))
    };
    let http = |host: String, port: u16, path: &str| Request {
        host,
        port,
        protocol,
        path: path.to_string(),
        tls: false,
    };
    let path = match verify {
        Verify::ClientIpPreserved => "/clientip",
        _ => "/hostname",
    };
    let req = match &plan.check.probe {
        Probe::Resolve { name, .. } => {
            let host = match name {
                NameForm::PodFqdn => {
                    server_ip(dst)?;
                    let hostname = dep.hostnames.get(&dst.name).cloned().unwrap_or_default();
                    format!("{hostname}.{}.{}.svc.cluster.local", deploy::SUBDOMAIN, ctx.ns)
                }
                NameForm::Fqdn => format!("{}.{}.svc.cluster.local", svc(dst, false)?.name, ctx.ns),
                NameForm::Short => svc(dst, false)?.name.clone(),
                NameForm::Dotted => format!("{}.{}", svc(dst, false)?.name, ctx.ns),
                NameForm::OtherNamespaceDotted => "kubernetes.default".to_string(),
                NameForm::Outside => OUTSIDE_NAME.to_string(),
            };
            let port = match name {
                NameForm::PodFqdn => 8080,
                NameForm::OtherNamespaceDotted => 443,
                _ => 80,
            };
            let mut r = http(host, port, "/hostname");
            r.protocol = Protocol::Tcp;
            r.tls = port == 443;
            if r.tls {
                r.path = "/version".into();
            }
            r
        }
        Probe::Connect { to: dest, .. } => match dest {
            Destination::PodIp => {
                let port = if protocol == Protocol::Udp { 8081 } else { 8080 };
                http(server_ip(dst)?, port, path)
            }
            Destination::ClusterIp => {
                if service == ServiceVariant::ClientIpAffinity {
                    let s = dep
                        .affinity
                        .get(&dst.pool())
                        .ok_or_else(|| Unprobed::Error(format!("no affinity service for pool {}", dst.pool())))?;
                    http(s.cluster_ip.clone(), 80, "/hostname")
                } else {
                    let s = svc(dst, service == ServiceVariant::LocalPolicy)?;
                    let port = if protocol == Protocol::Udp { 90 } else { 80 };
                    http(s.cluster_ip.clone(), port, path)
                }
            }
            Destination::ServiceFqdn => http(
                format!("{}.{}.svc.cluster.local", svc(dst, false)?.name, ctx.ns),
                80,
                path,
            ),
            Destination::ServiceShort => match service {
                ServiceVariant::Headless => {
                    server_ip(dst)?;
                    let name = dep.headless.get(&dst.name).ok_or_else(|| {
                        Unprobed::Error(format!("no headless service over the server on {}", dst.name))
                    })?;
                    http(name.clone(), 8080, path)
                }
                ServiceVariant::ExternalName => {
                    server_ip(dst)?;
                    let name = dep.external_names.get(&dst.name).ok_or_else(|| {
                        Unprobed::Error(format!("no ExternalName service for the server on {}", dst.name))
                    })?;
                    http(name.clone(), 80, path)
                }
                _ => http(svc(dst, false)?.name.clone(), 80, path),
            },
            Destination::NodePort | Destination::LoopbackNodePort => {
                let s = svc(dst, service == ServiceVariant::LocalPolicy)?;
                let port = if protocol == Protocol::Udp {
                    s.node_ports.1
                } else {
                    s.node_ports.0
                }
                .ok_or_else(|| Unprobed::Error(format!("service {} has no node port", s.name)))?;
                let host = if *dest == Destination::LoopbackNodePort {
                    "127.0.0.1".to_string()
                } else {
                    dst.address.clone()
                };
                http(host, port, path)
            }
            Destination::HostPort => {
                server_ip(dst)?;
                http(dst.address.clone(), deploy::HOST_PORT, path)
            }
            Destination::NodeIp => {
                let mut r = http(dst.address.clone(), 10250, "/healthz");
                r.tls = true;
                r
            }
            Destination::OutsideIp => {
                let mut r = http(OUTSIDE_IP.to_string(), OUTSIDE_IP_PORT, "/");
                // A raw TCP connect: the port speaks DNS, not HTTP.
                if r.protocol == Protocol::Tcp {
                    r.protocol = Protocol::Udp;
                    return Ok((pod, container, runner, raw_tcp(r), verify));
                }
                r
            }
            Destination::OutsideName => http(OUTSIDE_NAME.to_string(), 80, "/"),
            Destination::LoadBalancer => {
                let s = dep
                    .load_balancers
                    .get(&dst.pool())
                    .ok_or_else(|| Unprobed::Error(format!("no LoadBalancer service in pool {}", dst.pool())))?;
                let ip = s.ingress.clone().ok_or_else(|| {
                    Unprobed::Indeterminate(format!(
                        "service {} got no load-balancer address (does the cluster have a load-balancer controller?)",
                        s.name
                    ))
                })?;
                http(ip, 80, path)
            }
            Destination::Localhost => http("127.0.0.1".to_string(), 8080, "/hostname"),
        },
        _ => return Err(Unprobed::Error("not a connection probe".into())),
    };
    Ok((pod, container, runner, req, verify))
}

/// A TCP connect without HTTP (agnhost connect), expressed as a request the command builder
/// turns into `agnhost connect HOST:PORT` (no `--protocol`).
fn raw_tcp(mut r: Request) -> Request {
    r.protocol = Protocol::Tcp;
    r.path = probe::RAW_TCP.to_string();
    r
}

/// A change to a stamped pod.
type PodEdit = Box<dyn Fn(&mut serde_json::Value) + Sync>;

/// The node's plain netexec client is deployed and usable.
pub(super) fn plain_client_runs(ctx: &Ctx<'_>, node: &ClusterNode) -> bool {
    ctx.dep.clients.get(&node.name).is_some_and(|p| p.problem.is_none())
}

/// A resolve probe from a client pod with another DNS set-up (hostNetwork with
/// `ClusterFirstWithHostNet`, or `dnsPolicy: None` with a `dnsConfig` naming the cluster DNS),
/// created on demand from the netexec-client fixture.
pub(super) async fn dns_client_request(
    ctx: &Ctx<'_>,
    plan: &CellPlan<'_>,
    from: Option<&ClusterNode>,
    to: Option<&ClusterNode>,
    dns: crate::catalogue::suite::DnsVariant,
) -> Result<Built, NotReady> {
    use crate::catalogue::suite::DnsVariant;
    let src = from.ok_or_else(|| NotReady::Other("the cell has no source node".into()))?;
    let index = ctx.facts.nodes.iter().position(|n| n.name == src.name).unwrap_or(0);
    let ns = ctx.ns.to_string();
    let dns_ip = match dns {
        DnsVariant::Custom => {
            let api: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(ctx.client.clone(), "kube-system");
            api.get("kube-dns")
                .await
                .ok()
                .and_then(|s| s.spec.and_then(|s| s.cluster_ip))
                .ok_or_else(|| {
                    NotReady::Other("the cluster DNS service kube-system/kube-dns has no ClusterIP".into())
                })?
        }
        _ => String::new(),
    };
    let (variant, mutate): (&str, PodEdit) = match dns {
        DnsVariant::ClusterFirstWithHostNet => (
            "-hostnet-dns",
            Box::new(|p: &mut serde_json::Value| {
                p["spec"]["hostNetwork"] = serde_json::json!(true);
                p["spec"]["dnsPolicy"] = serde_json::json!("ClusterFirstWithHostNet");
            }),
        ),
        DnsVariant::Custom => (
            "-custom-dns",
            Box::new(move |p: &mut serde_json::Value| {
                p["spec"]["dnsPolicy"] = serde_json::json!("None");
                p["spec"]["dnsConfig"] = serde_json::json!({
                    "nameservers": [dns_ip],
                    "searches": [format!("{ns}.svc.cluster.local"), "svc.cluster.local", "cluster.local"],
                    "options": [{"name": "ndots", "value": "5"}]
                });
            }),
        ),
        DnsVariant::ClusterFirst => ("", Box::new(|_: &mut serde_json::Value| {})),
    };
    let pod = ctx
        .workloads
        .ready_variant("netexec-client", variant, src, index, mutate.as_ref())
        .await?;
    // The same request a ClusterFirst client would make.
    let plain = CellPlan {
        suite: plan.suite,
        check: plan.check,
        coordinates: plan.coordinates.clone(),
        placement: plan.placement,
        protocol: plan.protocol,
        variant: plan.variant.clone(),
        pairs: Vec::new(),
        fixed: None,
    };
    let mut cf = plan.check.clone();
    if let Probe::Resolve { dns, .. } = &mut cf.probe {
        *dns = DnsVariant::ClusterFirst;
    }
    let plain = CellPlan { check: &cf, ..plain };
    match build_request(ctx, &plain, from, to) {
        Ok((_, _, runner, req, verify)) => Ok((pod, None, runner, req, verify)),
        Err(Unprobed::Indeterminate(w) | Unprobed::Error(w)) => Err(NotReady::Other(w)),
        Err(Unprobed::Variant(_)) => Err(NotReady::Other("unexpected DNS variant".into())),
    }
}

/// The runner's own HTTP GET (the outside client's view of a NodePort), with a timeout.
pub(super) async fn outside_get(url: &str) -> (probe::Observation, String) {
    use crate::catalogue::suite::FailureClass as C;
    let client = match reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(probe::CONNECT_SECS.into()))
        .timeout(Duration::from_secs((probe::CONNECT_SECS * 2).into()))
        .no_proxy()
        .build()
    {
        Ok(c) => c,
        Err(e) => return (probe::Observation::Failed(C::Other), e.to_string()),
    };
    match client.get(url).send().await {
        Ok(r) => {
            let status = r.status();
            let body = r.text().await.unwrap_or_default();
            (
                probe::Observation::Reached(body.clone()),
                format!("HTTP {status}: {}", body.trim()),
            )
        }
        Err(e) if e.is_timeout() => (probe::Observation::Failed(C::Timeout), "timeout".into()),
        Err(e) if e.is_connect() => {
            let text = format!("{e:?}");
            let class = if text.contains("refused") || text.contains("Refused") {
                C::Refused
            } else {
                C::Timeout
            };
            (probe::Observation::Failed(class), class.name().to_string())
        }
        Err(e) => (probe::Observation::Failed(C::Other), e.to_string()),
    }
}
