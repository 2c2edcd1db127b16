//! `connect`: a connection from a pod (or the host) on the source node to a destination — a pod
//! IP, a Service by IP or name, a NodePort, a hostPort, a LoadBalancer, the node, localhost or
//! the outside world — and what a successful connection must also show (`verify`).

use mixcheck_reports::Os;

use crate::catalogue::suite::{Destination, FailureClass, Origin, Protocol, ServiceVariant, Verify};
use crate::cluster::deploy;
use crate::cluster::facts::ClusterNode;
use crate::probes::chain::{self, Chain};
use crate::probes::flow::{self, http, server_ip, service};
use crate::probes::judgement::{Case, Ctx, Probed, Unprobed};
use crate::probes::settle::{self, FlowKind};
use crate::probes::transport::{self, Observation, Request};

/// The destination pool of a flow to the `kubernetes` Service.
pub const API_SERVER: &str = "api-server";

/// Requests `verify: one-backend` makes.
const ONE_BACKEND_REQUESTS: usize = 10;

/// What a connection to `to` waits for to be programmed.
fn flow_kind(to: Destination) -> FlowKind {
    match to {
        Destination::PodIp | Destination::PodIpv6 | Destination::Localhost | Destination::NodeIp => FlowKind::Pod,
        Destination::ClusterIp
        | Destination::ClusterIpv6
        | Destination::ServiceFqdn
        | Destination::ServiceShort
        | Destination::KubernetesService => FlowKind::Service,
        Destination::NodePort | Destination::LoopbackNodePort | Destination::HostPort => FlowKind::NodePort,
        Destination::LoadBalancer => FlowKind::LoadBalancer,
        Destination::OutsideIp | Destination::OutsideName => FlowKind::Outside,
    }
}

/// The destination pool of a connection without a `to` list, when it is not the source's pool.
pub fn own_destination(to: Destination) -> Option<&'static str> {
    match to {
        Destination::OutsideIp | Destination::OutsideName => Some("external"),
        Destination::Localhost => Some("same-pod"),
        Destination::KubernetesService => Some(API_SERVER),
        _ => None,
    }
}

/// A TCP connect without HTTP (agnhost connect), expressed as a request the command builder
/// turns into `agnhost connect HOST:PORT` (no `--protocol`).
fn raw_tcp(mut r: Request) -> Request {
    r.protocol = Protocol::Tcp;
    r.path = transport::RAW_TCP.to_string();
    r
}

/// What to ask for to reach `to` on `dst`.
async fn request(
    ctx: &Ctx<'_>,
    dst: &ClusterNode,
    to: Destination,
    service_variant: ServiceVariant,
    verify: Verify,
    protocol: Protocol,
) -> Result<Request, Unprobed> {
    let dep = ctx.dep;
    let path = match verify {
        Verify::ClientIpPreserved => "/clientip",
        _ => "/hostname",
    };
    let get = |host: String, port: u16, path: &str| http(host, port, protocol, path);
    Ok(match to {
        Destination::PodIp => {
            let port = if protocol == Protocol::Udp { 8081 } else { 8080 };
            get(server_ip(dep, dst)?, port, path)
        }
        Destination::PodIpv6 => {
            let port = if protocol == Protocol::Udp { 8081 } else { 8080 };
            let ip = flow::server_ipv6(dep, dst)?
                .ok_or_else(|| Unprobed::Error(format!("the netexec server on {} has no IPv6 address", dst.name)))?;
            get(format!("[{ip}]"), port, path)
        }
        Destination::ClusterIpv6 => {
            let s = service(dep, dst, false)?;
            let ip = s
                .cluster_ipv6
                .clone()
                .ok_or_else(|| Unprobed::Error(format!("service {} has no IPv6 ClusterIP", s.name)))?;
            let port = if protocol == Protocol::Udp { 90 } else { 80 };
            get(format!("[{ip}]"), port, path)
        }
        Destination::ClusterIp => {
            if service_variant == ServiceVariant::ClientIpAffinity {
                let s = dep
                    .affinity
                    .get(&dst.pool())
                    .ok_or_else(|| Unprobed::Error(format!("no affinity service for pool {}", dst.pool())))?;
                get(s.cluster_ip.clone(), 80, "/hostname")
            } else {
                let s = service(dep, dst, service_variant == ServiceVariant::LocalPolicy)?;
                let port = if protocol == Protocol::Udp { 90 } else { 80 };
                get(s.cluster_ip.clone(), port, path)
            }
        }
        Destination::ServiceFqdn => get(
            format!(
                "{}.{}.svc.{}",
                service(dep, dst, false)?.name,
                ctx.ns,
                ctx.facts.cluster_domain()
            ),
            80,
            path,
        ),
        Destination::ServiceShort => match service_variant {
            ServiceVariant::Headless => {
                server_ip(dep, dst)?;
                let name = dep
                    .headless
                    .get(&dst.name)
                    .ok_or_else(|| Unprobed::Error(format!("no headless service over the server on {}", dst.name)))?;
                get(name.clone(), 8080, path)
            }
            ServiceVariant::ExternalName => {
                server_ip(dep, dst)?;
                let name = dep.external_names.get(&dst.name).ok_or_else(|| {
                    Unprobed::Error(format!("no ExternalName service for the server on {}", dst.name))
                })?;
                get(name.clone(), 80, path)
            }
            _ => get(service(dep, dst, false)?.name.clone(), 80, path),
        },
        Destination::NodePort | Destination::LoopbackNodePort => {
            let s = service(dep, dst, service_variant == ServiceVariant::LocalPolicy)?;
            let port = if protocol == Protocol::Udp {
                s.node_ports.1
            } else {
                s.node_ports.0
            }
            .ok_or_else(|| Unprobed::Error(format!("service {} has no node port", s.name)))?;
            let host = if to == Destination::LoopbackNodePort {
                "127.0.0.1".to_string()
            } else {
                dst.address.clone()
            };
            get(host, port, path)
        }
        Destination::HostPort => {
            flow::host_port_ip(dep, dst)?;
            get(dst.address.clone(), deploy::HOST_PORT, path)
        }
        Destination::NodeIp => {
            let mut r = get(dst.address.clone(), 10250, "/healthz");
            r.tls = true;
            r
        }
        // The outside address on the port egress was found on (TCP 443, else 53), the name on
        // 443: raw TCP connects, since neither port need speak plain HTTP.
        Destination::OutsideIp => {
            let port = ctx
                .egress
                .borrow()
                .as_ref()
                .map_or(crate::probes::egress::ADDRESS_PORTS[0], |e| e.address_port);
            let r = get(ctx.outside.address.clone(), port, "/");
            if r.protocol == Protocol::Tcp { raw_tcp(r) } else { r }
        }
        Destination::OutsideName => raw_tcp(get(ctx.outside.name.clone(), crate::probes::egress::NAME_PORT, "/")),
        Destination::LoadBalancer => get(flow::lb_ingress(ctx, dst).await?, 80, path),
        Destination::Localhost => get("127.0.0.1".to_string(), 8080, "/hostname"),
        Destination::KubernetesService => {
            let mut r = get(kubernetes_cluster_ip(ctx).await?, 443, "/healthz");
            r.tls = true;
            r
        }
    })
}

/// The ClusterIP of `default/kubernetes`, the Service in front of the API server (what a pod's
/// in-cluster configuration names in KUBERNETES_SERVICE_HOST). Where the run's identity may not
/// read it, that variable of a running Linux client of the run says it: the kubelet sets it in
/// every container (kubernetes `pkg/kubelet/kubelet_pods.go`, `getServiceEnvVarMap`, which
/// always includes the master service).
async fn kubernetes_cluster_ip(ctx: &Ctx<'_>) -> Result<String, Unprobed> {
    let api: kube::Api<k8s_openapi::api::core::v1::Service> = kube::Api::namespaced(ctx.client.clone(), "default");
    let svc = match api.get("kubernetes").await {
        Ok(svc) => svc,
        Err(e) => {
            let text = e.to_string();
            if let Some(ip) = ctx.read_in_linux_client(&["printenv", "KUBERNETES_SERVICE_HOST"]).await {
                return Ok(ip);
            }
            return Err(match crate::cluster::access::denied(&text) {
                Some(denial) => Unprobed::Unknown(format!(
                    "service default/kubernetes: {}",
                    crate::cluster::access::unknown_because(&denial)
                )),
                None => Unprobed::Error(format!("reading service default/kubernetes: {text}")),
            });
        }
    };
    svc.spec
        .and_then(|s| s.cluster_ip)
        .filter(|ip| !ip.is_empty() && ip != "None")
        .ok_or_else(|| Unprobed::Unknown("service default/kubernetes has no ClusterIP".into()))
}

/// Whether pods reach outside the cluster: every outside target tried from the client pod of one
/// node per OS, each retried through the outside-flow settle window (upstream retries its
/// internet checks too: E2E/hybrid_network `externalMaxTries`), all at once; what they found is
/// [`crate::probes::egress::conclude`]'s.
pub async fn detect_egress(ctx: &Ctx<'_>) -> crate::probes::egress::Egress {
    use crate::probes::egress;
    let starts: Vec<_> = [Os::Linux, Os::Windows]
        .into_iter()
        .filter_map(|os| {
            ctx.facts
                .nodes
                .iter()
                .filter(|n| n.probed() && n.os == os)
                .find_map(|n| flow::start(ctx, n, Origin::Pod, false).ok().map(|s| (n, s)))
        })
        .collect();
    let list = egress::targets(ctx.outside);
    let tries = starts.iter().flat_map(|(node, start)| {
        list.iter().map(move |target| {
            let req = raw_tcp(http(target.host.clone(), target.port, Protocol::Tcp, "/"));
            async move {
                let argv = transport::command(start.runner, &req);
                let settled = settle::until_works(ctx.settle_until(FlowKind::Outside), ctx.settle.pause, || async {
                    ctx.exec(&start.pod, start.container.as_deref(), &argv)
                        .await
                        .map(|(out, _)| (transport::classify(&req, &out), ()))
                })
                .await;
                let reached = settled
                    .as_ref()
                    .is_ok_and(|s| matches!(s.observation, Observation::Reached(_)));
                (node.name.clone(), node.os, start.pod.clone(), target.clone(), reached)
            }
        })
    });
    let attempts = futures::future::join_all(tries).await;
    egress::conclude(&attempts, ctx.outside)
}

/// A connection ready to be tried: the pod it starts in and the command that makes it.
struct Attempt<'c, 'a> {
    ctx: &'c Ctx<'a>,
    start: &'c flow::Start,
    argv: &'c [String],
}

impl Attempt<'_, '_> {
    /// Runs the command once: its output and whether the exec needed retrying.
    async fn run(&self) -> Result<(transport::Output, bool), transport::TransportError> {
        self.ctx
            .exec(&self.start.pod, self.start.container.as_deref(), self.argv)
            .await
    }

    /// A first attempt that makes all `connections` of `req` in one exec where the client's
    /// shell can ([`chain::first_command`]: the others only if the first worked): what each
    /// saw, with its own output (as if exec'd alone) and whether the exec needed retrying;
    /// None where it cannot.
    async fn run_first(&self, req: &Request, connections: usize) -> EachAlone {
        let chained = self.chain(connections, Chain::First).await?;
        Ok(chained.map(|(runs, (_, flaky))| {
            runs.into_iter()
                .map(|run| (transport::classify(req, &run), (run, flaky)))
                .collect()
        }))
    }

    /// Makes `connections` more connections of `req` in one exec where the client's tool can
    /// ([`transport::repeated_command`]: curl's URLs, each on a connection of its own) or its
    /// shell can run the tool once per connection ([`chain::command`]: agnhost `connect` for UDP
    /// and bare TCP): what each saw, and the command's output and whether the exec needed
    /// retrying; None where neither can, or the output does not account for every connection.
    async fn run_together(&self, req: &Request, connections: usize) -> Together {
        let runner = self.start.runner;
        if let Some(argv) = transport::repeated_command(runner, req, connections) {
            let timeout = transport::repeated_timeout(connections);
            let at = (self.start.pod.as_str(), self.start.container.as_deref());
            let out = self.ctx.exec_within(at.0, at.1, &argv, timeout).await?;
            return Ok(transport::classify_repeated(&out.0, connections).map(|seen| (seen, out)));
        }
        let chained = self.chain(connections, Chain::Rest).await?;
        Ok(chained.map(|(runs, out)| (runs.iter().map(|r| transport::classify(req, r)).collect(), out)))
    }

    /// This attempt's command run `connections` times in one exec ([`chain::exec`]).
    async fn chain(
        &self,
        connections: usize,
        chain: Chain,
    ) -> Result<Option<chain::Chained>, transport::TransportError> {
        let at = (self.start.pod.as_str(), self.start.container.as_deref());
        chain::exec(self.ctx, at, self.start.runner, self.argv, (connections, chain)).await
    }
}

/// What [`Attempt::run_first`] gives.
type EachAlone = Result<Option<Vec<(Observation, (transport::Output, bool))>>, transport::TransportError>;

/// What [`Attempt::run_together`] gives.
type Together = Result<Option<(Vec<Observation>, (transport::Output, bool))>, transport::TransportError>;

/// What `verify` changes of a connection that got through: the observation that replaces it
/// and the detail that says why (None: it stands); Err where the verification cannot be made.
type Verified = Result<Option<(Observation, String)>, Unprobed>;

/// Connects from the pair's source to its destination and checks what `verify` asks for.
pub async fn observe(
    ctx: &Ctx<'_>,
    case: &Case<'_>,
    origin: Origin,
    to: Destination,
    service_variant: ServiceVariant,
    verify: Verify,
) -> Probed {
    let Some(src) = case.from(ctx.facts) else {
        return Probed::Error("the cell has no source node".into());
    };
    let start = match flow::start(ctx, src, origin, to == Destination::Localhost) {
        Ok(s) => s,
        Err(p) => return p.into(),
    };
    let dst = case.to(ctx.facts).unwrap_or(src);
    let protocol = case.protocol.unwrap_or(Protocol::Tcp);
    if matches!(to, Destination::PodIpv6 | Destination::ClusterIpv6)
        && let Some(missing) = without_ipv6(ctx, src, dst, to)
    {
        // A pod the CNI gave no IPv6 address cannot take part in IPv6 traffic: the flow fails
        // before any packet (Calico for Windows is IPv4 only, CAL; win-overlay, WNET).
        return Probed::seen(Observation::Failed(FailureClass::Other), missing);
    }
    let req = match request(ctx, dst, to, service_variant, verify, protocol).await {
        Ok(r) => r,
        Err(p) => return p.into(),
    };
    let argv = transport::command(start.runner, &req);
    let attempt = Attempt {
        ctx,
        start: &start,
        argv: &argv,
    };
    let mut once = || async {
        attempt
            .run()
            .await
            .map(|(out, flaky)| (transport::classify(&req, &out), (out, flaky)))
    };
    let until = ctx.settle_until(flow_kind(to));
    // A flow to a Service's cluster IP or name goes through the client node's load balancer:
    // judged on several connections, so that a stale backend one in N picks shows (a
    // session-affinity check asks its own), all made in one exec where the client's shell or
    // tool can. NodePorts keep one: the connections would double the run's probes for the same
    // load balancers.
    let settled = if flow_kind(to) == FlowKind::Service && verify != Verify::OneBackend {
        let first = |n| attempt.run_first(&req, n);
        let together = |n| attempt.run_together(&req, n);
        let how = (first, together, &once);
        settle::until_works_together(until, ctx.settle.pause, ctx.settle.connections, how).await
    } else {
        settle::until_works(until, ctx.settle.pause, &mut once).await
    };
    let settled = match settled {
        Ok(s) => s,
        Err(e) => return Probed::Error(format!("the probe could not run: {e}")),
    };
    let settling = settled.note();
    let (out, mut flaky) = settled.value;
    let mut result = settled.observation;
    let mut detail = String::new();
    if let Observation::Reached(body) = &result {
        let verified = match verify {
            Verify::Reachable => Ok(None),
            Verify::ClientIpPreserved => client_ip_preserved(ctx, src, origin, body, &req),
            Verify::OneBackend => {
                let until = ctx.settle_until(flow_kind(to));
                answers_one_backend(&attempt, &req, until, result.clone(), &mut flaky).await
            }
        };
        match verified {
            Ok(Some((observation, why))) => {
                result = observation;
                detail = why;
            }
            Ok(None) => {}
            Err(p) => return p.into(),
        }
    }
    let backends = backends_of_lost_request(ctx, &result, to, service_variant, dst);
    if backends.len() > 1 {
        detail.push_str(&format!(" (backends on {})", backends.join(", ")));
    }
    Probed::Seen {
        summary: flow::summary(&start.pod, &req, &result, &format!("{detail}{settling}")),
        observation: result,
        output: Some(out),
        flaky,
        backends,
    }
}

/// `verify: client-ip-preserved`: the backend saw the client's own address (`body`, its
/// /clientip answer); a mismatch otherwise, unknown where the server does not tell.
fn client_ip_preserved(ctx: &Ctx<'_>, src: &ClusterNode, origin: Origin, body: &str, req: &Request) -> Verified {
    let seen = body
        .trim()
        .rsplit_once(':')
        .map_or(body.trim(), |(ip, _)| ip)
        .to_string();
    // Only agnhost netexec answers /clientip; the web servers the fixtures run where
    // no netexec image exists (early Windows builds) answer their page instead.
    if seen.parse::<std::net::IpAddr>().is_err() {
        return Err(Unprobed::Unknown(format!(
            "the server at {}:{} does not tell the client's address (no agnhost netexec /clientip there)",
            req.host, req.port
        )));
    }
    let own = client_address(ctx, src, origin)?;
    if seen != own {
        return Ok(Some((
            Observation::Failed(FailureClass::Mismatch),
            format!(" (backend saw {seen}, the client is {own})"),
        )));
    }
    Ok(None)
}

/// `verify: one-backend`: asks [`ONE_BACKEND_REQUESTS`] times in all (`first` is the first
/// answer) and judges the answers by [`one_backend`]; a batch answered by one backend before
/// `until` is asked again once the settle window is over. Records flaky execs in `flaky`.
async fn answers_one_backend(
    attempt: &Attempt<'_, '_>,
    req: &Request,
    until: tokio::time::Instant,
    first: Observation,
    flaky: &mut bool,
) -> Verified {
    let mut answers = vec![first];
    loop {
        while answers.len() < ONE_BACKEND_REQUESTS {
            match attempt.run().await {
                Ok((o, f)) => {
                    *flaky |= f;
                    answers.push(transport::classify(req, &o));
                }
                Err(e) => return Err(Unprobed::Error(format!("the probe could not run: {e}"))),
            }
        }
        // One backend answering while the Service may still be converging says
        // nothing yet: a backend that joined last may not be programmed on the
        // client's node. The batch is asked again once the settle window is over.
        let one = one_backend(&answers).is_none();
        let now = tokio::time::Instant::now();
        if !one || now >= until {
            break;
        }
        tokio::time::sleep_until(until).await;
        answers.clear();
    }
    Ok(one_backend(&answers))
}

/// The nodes a request may have been lost on: a request to a pool's ClientIP-affinity Service
/// that got no answer may have been lost on any of its backends' nodes; none otherwise.
fn backends_of_lost_request(
    ctx: &Ctx<'_>,
    result: &Observation,
    to: Destination,
    service_variant: ServiceVariant,
    dst: &ClusterNode,
) -> Vec<String> {
    match (result, to, service_variant) {
        (Observation::Failed(c), Destination::ClusterIp, ServiceVariant::ClientIpAffinity)
            if *c != FailureClass::Mismatch =>
        {
            ctx.dep
                .affinity
                .get(&dst.pool())
                .map(|s| s.backends.clone())
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// Which end of an IPv6 flow has no IPv6 address, in words: the client or server pod
/// (`status.podIPs`), or for a flow to the Service its IPv6 ClusterIP (`spec.clusterIPs`); None
/// when all have one (or an end is not usable, which the request reports).
fn without_ipv6(ctx: &Ctx<'_>, src: &ClusterNode, dst: &ClusterNode, to: Destination) -> Option<String> {
    let dep = ctx.dep;
    let client = dep.clients.get(&src.name).filter(|p| p.problem.is_none())?;
    let server = dep.servers.get(&dst.name).filter(|p| p.problem.is_none())?;
    let mut missing: Vec<String> = [(client, &src.name), (server, &dst.name)]
        .into_iter()
        .filter(|(p, _)| p.ipv6.is_none())
        .map(|(p, node)| format!("pod {} on {node} (podIPs: {})", p.name, p.ip))
        .collect();
    if to == Destination::ClusterIpv6
        && let Some(s) = dep.services.get(&dst.name).filter(|s| s.cluster_ipv6.is_none())
    {
        missing.push(format!("service {} (clusterIPs: {})", s.name, s.cluster_ip));
    }
    (!missing.is_empty()).then(|| format!("no IPv6 address: {}", missing.join("; ")))
}

/// The address a backend must see when nothing NATs the client: the client pod's own IP for a
/// flow from a pod (the Kubernetes network model: pods reach pods on any node without NAT), the
/// node's address for a flow from the host network.
fn client_address(ctx: &Ctx<'_>, src: &ClusterNode, origin: Origin) -> Result<String, Unprobed> {
    match origin {
        Origin::Host => Ok(src.address.clone()),
        Origin::Pod => flow::client_ip(ctx.dep, src),
    }
}

/// `verify: one-backend` over the answers to successive requests: a request that failed is the
/// flow's failure (the others must not hide it); otherwise more than one backend answering is a
/// mismatch. None when every request reached the same backend.
fn one_backend(answers: &[Observation]) -> Option<(Observation, String)> {
    let mut seen = std::collections::BTreeSet::new();
    for (n, answer) in answers.iter().enumerate() {
        match answer {
            Observation::Reached(body) => {
                seen.insert(body.trim().to_string());
            }
            Observation::Failed(class) => {
                let why = format!(" (request {} of {}: {})", n + 1, answers.len(), class.name());
                return Some((answer.clone(), why));
            }
        }
    }
    (seen.len() > 1).then(|| {
        let why = format!(
            " ({} requests reached {} backends: {})",
            answers.len(),
            seen.len(),
            seen.into_iter().collect::<Vec<_>>().join(", ")
        );
        (Observation::Failed(FailureClass::Mismatch), why)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_backend_is_a_mismatch_only_when_every_request_got_through() {
        use FailureClass as C;
        use Observation::{Failed, Reached};
        let to = |b: &str| Reached(b.to_string());
        assert_eq!(one_backend(&[to("a"), to("a\n"), to("a")]), None);
        assert_eq!(
            one_backend(&[to("a"), to("b"), to("a")]),
            Some((
                Failed(C::Mismatch),
                " (3 requests reached 2 backends: a, b)".to_string()
            ))
        );
        // Half the requests timing out is the flow failing, not one backend answering.
        assert_eq!(
            one_backend(&[to("a"), Failed(C::Timeout), to("a")]),
            Some((Failed(C::Timeout), " (request 2 of 3: timeout)".to_string()))
        );
    }
}
