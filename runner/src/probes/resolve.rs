//! `resolve`: a name lookup from a pod, judged by connecting to the name (no `nslookup` or
//! `Resolve-DnsName` needed): any answer but a DNS failure means the name resolved. The pod's
//! DNS set-up is the fixture's `ClusterFirst`, or a client of another set-up created on demand
//! (`ClusterFirstWithHostNet` with hostNetwork, `dnsPolicy: None` with a `dnsConfig`).

use kube::api::Api;

use crate::catalogue::suite::{DnsVariant, FailureClass, NameForm, Origin, Protocol};
use crate::cluster::deploy;
use crate::cluster::facts::ClusterNode;
use crate::cluster::workload::NotReady;
use crate::probes::chain::{self, Chain};
use crate::probes::flow::{self, http, server_ip, service};
use crate::probes::judgement::{Case, Ctx, Probed, Unprobed};
use crate::probes::settle::{self, FlowKind};
use crate::probes::transport::{self, Observation, Request};

/// The destination pool of a lookup.
pub const DESTINATION: &str = "cluster-dns";

/// A change to a stamped pod.
type PodEdit = Box<dyn Fn(&mut serde_json::Value) + Sync>;

/// The request that looks `name` up (the server behind it is on `dst`).
fn request(ctx: &Ctx<'_>, dst: &ClusterNode, name: NameForm) -> Result<Request, Unprobed> {
    let dep = ctx.dep;
    let host = match name {
        NameForm::PodFqdn => {
            server_ip(dep, dst)?;
            let hostname = dep.hostnames.get(&dst.name).cloned().unwrap_or_default();
            format!(
                "{hostname}.{}.{}.svc.{}",
                deploy::SUBDOMAIN,
                ctx.ns,
                ctx.facts.cluster_domain()
            )
        }
        NameForm::Fqdn => format!(
            "{}.{}.svc.{}",
            service(dep, dst, false)?.name,
            ctx.ns,
            ctx.facts.cluster_domain()
        ),
        NameForm::Short => service(dep, dst, false)?.name.clone(),
        NameForm::Dotted => format!("{}.{}", service(dep, dst, false)?.name, ctx.ns),
        NameForm::OtherNamespaceDotted => "kubernetes.default".to_string(),
        NameForm::Outside => ctx.outside.name.clone(),
    };
    let port = match name {
        NameForm::PodFqdn => 8080,
        NameForm::OtherNamespaceDotted => 443,
        _ => 80,
    };
    let mut r = http(host, port, Protocol::Tcp, "/hostname");
    r.tls = port == 443;
    if r.tls {
        r.path = "/version".into();
    }
    Ok(r)
}

/// The node's plain netexec client is deployed and usable.
fn plain_client_runs(ctx: &Ctx<'_>, node: &ClusterNode) -> bool {
    ctx.dep.clients.get(&node.name).is_some_and(|p| p.problem.is_none())
}

/// The name suffix of the client pod with the DNS set-up `dns` (none: the shared client).
pub fn variant_suffix(dns: DnsVariant) -> &'static str {
    match dns {
        DnsVariant::ClusterFirstWithHostNet => "-hostnet-dns",
        DnsVariant::Custom => "-custom-dns",
        DnsVariant::ClusterFirst => "",
    }
}

/// The cluster DNS address: the ClusterIP of the Service kube-system/kube-dns (its name on
/// kubeadm, AKS, EKS and GKE alike), or, where that cannot be read (an identity that owns one
/// namespace, a DNS Service named otherwise), the nameserver the kubelet gave a running Linux
/// client of the run: a ClusterFirst pod's resolv.conf names the kubelet's `clusterDNS`
/// (kubernetes `pkg/kubelet/network/dns/dns.go`, `GetPodDNS`).
async fn cluster_dns(ctx: &Ctx<'_>) -> Result<String, NotReady> {
    let api: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(ctx.client.clone(), "kube-system");
    let why = match api.get("kube-dns").await {
        Ok(service) => {
            return service.spec.and_then(|s| s.cluster_ip).ok_or_else(|| {
                NotReady::Other("the cluster DNS service kube-system/kube-dns has no ClusterIP".into())
            });
        }
        Err(e) => e.to_string(),
    };
    let from_pod = ctx
        .read_in_linux_client(&["cat", "/etc/resolv.conf"])
        .await
        .and_then(|text| first_nameserver(&text));
    from_pod.ok_or_else(|| match crate::cluster::access::denied(&why) {
        Some(denial) => NotReady::Refused(format!(
            "the cluster DNS address: kube-system/kube-dns: {}; no running Linux client of the run to read it from",
            crate::cluster::access::unknown_because(&denial)
        )),
        None => NotReady::Other(format!(
            "the cluster DNS address: reading kube-system/kube-dns: {why}; no running Linux client of the run to read it from"
        )),
    })
}

/// The first `nameserver` of a resolv.conf.
fn first_nameserver(resolv_conf: &str) -> Option<String> {
    resolv_conf.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some("nameserver"))
            .then(|| words.next().map(str::to_string))
            .flatten()
    })
}

/// A client pod on `src` with the DNS set-up `dns`, created on demand from the netexec-client
/// fixture.
async fn variant_client(ctx: &Ctx<'_>, src: &ClusterNode, dns: DnsVariant) -> Result<String, NotReady> {
    let index = ctx.facts.nodes.iter().position(|n| n.name == src.name).unwrap_or(0);
    let ns = ctx.ns.to_string();
    let domain = ctx.facts.cluster_domain().to_string();
    let dns_ip = match dns {
        DnsVariant::Custom => cluster_dns(ctx).await?,
        _ => String::new(),
    };
    let variant = variant_suffix(dns);
    let mutate: PodEdit = match dns {
        DnsVariant::ClusterFirstWithHostNet => Box::new(|p: &mut serde_json::Value| {
            p["spec"]["hostNetwork"] = serde_json::json!(true);
            p["spec"]["dnsPolicy"] = serde_json::json!("ClusterFirstWithHostNet");
        }),
        DnsVariant::Custom => Box::new(move |p: &mut serde_json::Value| {
            p["spec"]["dnsPolicy"] = serde_json::json!("None");
            p["spec"]["dnsConfig"] = serde_json::json!({
                "nameservers": [dns_ip],
                "searches": [format!("{ns}.svc.{domain}"), format!("svc.{domain}"), domain],
                "options": [{"name": "ndots", "value": "5"}]
            });
        }),
        DnsVariant::ClusterFirst => Box::new(|_: &mut serde_json::Value| {}),
    };
    ctx.workloads
        .ready_variant("netexec-client", variant, src, index, mutate.as_ref())
        .await
}

/// Looks the pair's name up from its source with the DNS set-up `dns`.
pub async fn observe(ctx: &Ctx<'_>, case: &Case<'_>, origin: Origin, name: NameForm, dns: DnsVariant) -> Probed {
    let Some(src) = case.from(ctx.facts) else {
        return Probed::Error("the cell has no source node".into());
    };
    let variant = if dns == DnsVariant::ClusterFirst {
        None
    } else {
        match variant_client(ctx, src, dns).await {
            Ok(pod) => Some(pod),
            // The node failed the variant client while its plain client runs: the variant's own
            // change (hostNetwork, a dnsConfig) is what it refused — a probe result.
            Err(NotReady::Failed(why)) if plain_client_runs(ctx, src) => {
                return Probed::seen(Observation::Failed(FailureClass::PodFailed), why);
            }
            Err(NotReady::Refused(why) | NotReady::Unpullable(why)) => return Probed::Unknown(why),
            Err(why) => return Probed::Error(why.to_string()),
        }
    };
    // The request is the one a ClusterFirst client makes, from the variant's pod if there is one.
    let start = match flow::start(ctx, src, origin, false) {
        Ok(s) => s,
        Err(p) => return p.into(),
    };
    let dst = case.to(ctx.facts).unwrap_or(src);
    let req = match request(ctx, dst, name) {
        Ok(r) => r,
        Err(p) => return p.into(),
    };
    let (pod, container) = match variant {
        Some(pod) => (pod, None),
        None => (start.pod, start.container),
    };
    let runner = start.runner;
    let argv = transport::command(runner, &req);
    let kind = if name == NameForm::Outside {
        FlowKind::Outside
    } else {
        FlowKind::Service
    };
    let once = || async {
        let (out, flaky) = ctx.exec(&pod, container.as_deref(), &argv).await?;
        Ok::<_, transport::TransportError>((looked_up(&req, &out), (out, flaky)))
    };
    // Chained runs of the lookup in one exec: all of them, each with its own output as if
    // exec'd alone (`first`: the others only if the first worked), or the nine after a first
    // made alone (`rest`).
    let chain_of = |n: usize, chain: Chain| {
        let (pod, container, argv) = (&pod, &container, &argv);
        async move { chain::exec(ctx, (pod.as_str(), container.as_deref()), runner, argv, (n, chain)).await }
    };
    let first = |n| {
        let (req, chain_of) = (&req, &chain_of);
        async move {
            Ok(chain_of(n, Chain::First).await?.map(|(runs, (_, flaky))| {
                runs.into_iter()
                    .map(|run| (looked_up(req, &run), (run, flaky)))
                    .collect::<Vec<_>>()
            }))
        }
    };
    let rest = |n| {
        let (req, chain_of) = (&req, &chain_of);
        async move {
            Ok(chain_of(n, Chain::Rest)
                .await?
                .map(|(runs, value)| (runs.iter().map(|r| looked_up(req, r)).collect(), value)))
        }
    };
    let until = ctx.settle_until(kind);
    // A lookup goes through the node's load balancer for the cluster DNS Service: judged on
    // several, so that a stale backend one lookup in N picks shows. Each is a run of its own
    // (curl looks a name up once for all its URLs), in one exec where the pod's shell can
    // chain them.
    let settled = if kind == FlowKind::Service {
        let how = (first, rest, &once);
        settle::until_works_together(until, ctx.settle.pause, ctx.settle.connections, how).await
    } else {
        settle::until_works(until, ctx.settle.pause, &once).await
    };
    let settled = match settled {
        Ok(s) => s,
        Err(e) => return Probed::Error(format!("the probe could not run: {e}")),
    };
    let settling = settled.note();
    let result = settled.observation;
    let (out, flaky) = settled.value;
    Probed::Seen {
        summary: flow::summary(&pod, &req, &result, &settling),
        observation: result,
        output: Some(out),
        flaky,
        backends: Vec::new(),
    }
}

/// What a lookup by connection saw: any answer but a DNS failure (a refused or reset
/// connection included) means the name resolved.
fn looked_up(req: &Request, out: &transport::Output) -> Observation {
    match transport::classify(req, out) {
        Observation::Failed(FailureClass::Refused | FailureClass::Reset | FailureClass::Other) => {
            Observation::Reached(String::new())
        }
        seen => seen,
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    #[rstest]
    #[case::plain("nameserver 10.96.0.10\n", Some("10.96.0.10"))]
    #[case::after_search(
        "search a.svc.cluster.local svc.cluster.local\nnameserver 10.0.0.10\nnameserver 8.8.8.8\noptions ndots:5\n",
        Some("10.0.0.10")
    )]
    #[case::ipv6("nameserver fd00:10:96::a\n", Some("fd00:10:96::a"))]
    #[case::none("search x\n", None)]
    fn the_first_nameserver_is_the_cluster_dns(#[case] text: &str, #[case] expected: Option<&str>) {
        assert_eq!(super::first_nameserver(text).as_deref(), expected);
    }
}
