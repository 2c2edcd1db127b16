//! What the flow kinds (`connect`, `resolve`) share: the pod a flow starts in, the addresses of
//! the destination's fixtures, and the summary of what the request reached.

use mixcheck_reports::Os;

use crate::catalogue::suite::{Origin, Protocol};
use crate::cluster::deploy::{self, Deployment};
use crate::cluster::facts::ClusterNode;
use crate::probes::judgement::{Ctx, Unprobed};
use crate::probes::transport::{Observation, Request, Runner};

/// Where a flow starts: the pod (and container) to exec in, and the tools it has.
pub(super) struct Start {
    pub(super) pod: String,
    pub(super) container: Option<String>,
    pub(super) runner: Runner,
}

/// Why the `what` on `node` cannot serve a probe: `indeterminate` when the cluster's policy
/// refused it or its image could not be pulled (nothing is said about the rule), an error
/// otherwise.
fn unusable(p: &deploy::Placed, what: &str, node: &str) -> Unprobed {
    let why = format!(
        "the {what} on {node} is not usable: {}",
        p.problem.clone().unwrap_or_default()
    );
    if p.indeterminate() {
        Unprobed::Unknown(why)
    } else {
        Unprobed::Error(why)
    }
}

pub(super) fn usable(p: Option<&deploy::Placed>, what: &str, node: &str) -> Result<String, Unprobed> {
    match p {
        Some(p) if p.problem.is_none() => Ok(p.name.clone()),
        Some(p) => Err(unusable(p, what, node)),
        None => Err(Unprobed::Error(format!("no {what} was deployed on {node}"))),
    }
}

/// The pod on `src` a flow from `origin` starts in (`localhost`: the server pod's client
/// container, which shares the server's network namespace).
pub(super) fn start(ctx: &Ctx<'_>, src: &ClusterNode, origin: Origin, localhost: bool) -> Result<Start, Unprobed> {
    let dep = ctx.dep;
    Ok(match (origin, localhost) {
        (_, true) => Start {
            pod: usable(dep.servers.get(&src.name), "netexec server", &src.name)?,
            container: Some("client".to_string()),
            runner: Runner::in_pod(src),
        },
        (Origin::Pod, false) => Start {
            pod: usable(dep.clients.get(&src.name), "client pod", &src.name)?,
            container: None,
            runner: Runner::in_pod(src),
        },
        (Origin::Host, false) => {
            if src.os == Os::Windows && src.host_process() != Some(true) {
                return Err(Unprobed::Unknown(format!(
                    "HostProcess pods are not available on {} (they need Kubernetes 1.23+ and containerd 1.6+): no documented in-cluster way to probe from the Windows host",
                    src.name
                )));
            }
            let runner = if src.os == Os::Windows {
                Runner::WindowsHost
            } else {
                Runner::Agnhost(Os::Linux)
            };
            Start {
                pod: usable(dep.hosts.get(&src.name), "node-side probe", &src.name)?,
                container: None,
                runner,
            }
        }
    })
}

/// The pod IP of the netexec server on `n`.
pub(super) fn server_ip(dep: &Deployment, n: &ClusterNode) -> Result<String, Unprobed> {
    placed_ip(dep.servers.get(&n.name), "netexec server", n)
}

/// The IPv6 address of the netexec server on `n` (None: the pod has none).
pub(super) fn server_ipv6(dep: &Deployment, n: &ClusterNode) -> Result<Option<String>, Unprobed> {
    server_ip(dep, n)?;
    Ok(dep.servers.get(&n.name).and_then(|p| p.ipv6.clone()))
}

/// The pod IP of the client pod on `n`.
pub(super) fn client_ip(dep: &Deployment, n: &ClusterNode) -> Result<String, Unprobed> {
    placed_ip(dep.clients.get(&n.name), "client pod", n)
}

/// The pod IP of the server publishing the hostPort on `n`.
pub(super) fn host_port_ip(dep: &Deployment, n: &ClusterNode) -> Result<String, Unprobed> {
    placed_ip(dep.host_ports.get(&n.name), "hostPort server", n)
}

fn placed_ip(p: Option<&deploy::Placed>, what: &str, n: &ClusterNode) -> Result<String, Unprobed> {
    match p {
        Some(p) if p.problem.is_none() => Ok(p.ip.clone()),
        Some(p) => Err(unusable(p, what, &n.name)),
        None => Err(Unprobed::Error(format!("no {what} on {}", n.name))),
    }
}

/// The service over the server on `n` (`local`: the `externalTrafficPolicy: Local` one). Every
/// service, name and port of a node fronts its netexec server: with the server not usable
/// (e.g. its sandbox never started) there is nothing to judge behind them.
pub(super) fn service<'d>(
    dep: &'d Deployment,
    n: &ClusterNode,
    local: bool,
) -> Result<&'d deploy::ServiceInfo, Unprobed> {
    server_ip(dep, n)?;
    let map = if local { &dep.local_services } else { &dep.services };
    map.get(&n.name).ok_or_else(|| {
        let name = if local {
            deploy::LOCAL_SERVICE.to_string()
        } else {
            dep.hostnames
                .get(&n.name)
                .map(|h| h.replace("srv-", "svc-"))
                .unwrap_or_default()
        };
        match dep.refused_services.get(&name) {
            Some(r) if r.policy => Unprobed::Unknown(format!(
                "the cluster's admission policy refused service {name}: {}",
                r.message
            )),
            Some(r) => Unprobed::Error(format!("the cluster refused service {name}: {}", r.message)),
            None => Unprobed::Error(format!("no service over the server on {}", n.name)),
        }
    })
}

/// The Service whose NodePort an outside client aims at on `n`: the one over its own server,
/// else — a node on light coverage has no Service of its own — one over a server of its pool: a
/// NodePort answers on every node.
pub(super) fn node_port_service<'d>(ctx: &Ctx<'d>, n: &ClusterNode) -> Option<&'d deploy::ServiceInfo> {
    ctx.dep.services.get(&n.name).or_else(|| {
        ctx.facts
            .nodes
            .iter()
            .filter(|m| m.pool() == n.pool())
            .find_map(|m| ctx.dep.services.get(&m.name))
    })
}

/// The ingress address of the LoadBalancer over `n`'s pool: as deployed, else awaited — a cloud
/// provisions it minutes after the Service exists — polling the Service until the
/// LoadBalancer settle window ends. Where no controller has said anything about the Service
/// (a cloud controller's `EnsuringLoadBalancer`, MetalLB's `IPAllocated`, any event) by the end
/// of the Service window, the cluster has no load-balancer controller: no use waiting longer.
pub(super) async fn lb_ingress(ctx: &Ctx<'_>, n: &ClusterNode) -> Result<String, Unprobed> {
    let lb = ctx
        .dep
        .load_balancers
        .get(&n.pool())
        .ok_or_else(|| Unprobed::Error(format!("no LoadBalancer service in pool {}", n.pool())))?;
    ingress_of_lb(ctx, lb).await
}

/// The ingress address of the run's LoadBalancer service `lb`, waited for while its controller
/// is at work (within the LoadBalancer settle window).
pub(super) async fn ingress_of_lb(ctx: &Ctx<'_>, lb: &deploy::LoadBalancer) -> Result<String, Unprobed> {
    use k8s_openapi::api::core::v1::{Event, Service};
    if let Some(ip) = &lb.ingress {
        return Ok(ip.clone());
    }
    let services: kube::Api<Service> = kube::Api::namespaced(ctx.client.clone(), ctx.ns);
    let events: kube::Api<Event> = kube::Api::namespaced(ctx.client.clone(), ctx.ns);
    let about = kube::api::ListParams::default().fields(&format!("involvedObject.name={}", lb.name));
    let quiet_until = ctx.settle_until(crate::probes::settle::FlowKind::Service);
    let until = ctx.settle_until(crate::probes::settle::FlowKind::LoadBalancer);
    let wait = std::time::Duration::from_secs(10);
    loop {
        if let Ok(Ok(svc)) = tokio::time::timeout(wait, services.get(&lb.name)).await
            && let Some(ip) = deploy::ingress_of(&svc)
        {
            return Ok(ip);
        }
        let now = tokio::time::Instant::now();
        let acted = || async {
            tokio::time::timeout(wait, events.list(&about))
                .await
                .is_ok_and(|r| r.is_ok_and(|l| !l.items.is_empty()))
        };
        if now >= until || (now >= quiet_until && !acted().await) {
            return Err(Unprobed::Unknown(format!(
                "unknown: service {} got no load-balancer address{} (does the cluster have a load-balancer controller?)",
                lb.name,
                if now >= until {
                    " within its settle window"
                } else {
                    ", and no controller said anything about it"
                }
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// An HTTP request (a raw request for UDP and ICMP: the command builder decides).
pub(super) fn http(host: String, port: u16, protocol: Protocol, path: &str) -> Request {
    Request {
        host,
        port,
        protocol,
        path: path.to_string(),
        tls: false,
    }
}

/// `pod → host:port protocol: what happened`.
pub(super) fn summary(pod: &str, req: &Request, result: &Observation, detail: &str) -> String {
    let target = match req.protocol {
        Protocol::Icmp => format!("{} icmp", req.host),
        p => format!("{}:{} {p}", req.host, req.port),
    };
    match result {
        Observation::Reached(_) => format!("{pod} → {target}: reached{detail}"),
        Observation::Failed(c) => format!("{pod} → {target}: {}{detail}", c.name()),
    }
}
