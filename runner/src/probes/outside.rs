//! `outside`: the runner's own HTTP client at a node's NodePort, hostPort or its pool's
//! LoadBalancer — the view of a client outside the cluster — after checking, once per node,
//! that this machine reaches the node's address at all ([`crate::cluster::reach`]). Where it
//! does not (node addresses are private on AKS, EKS and GKE), the nearest client outside the
//! cluster's pod network is another node's host network: the NodePort or hostPort is judged
//! from there, as upstream's e2e tests do (a host-network exec pod → nodeIP:nodePort), and the
//! observation says so. A LoadBalancer whose address does not answer this machine (an internal
//! load balancer, a proxy or firewall on the way) is judged from inside the cluster the same way.

use std::time::Duration;

use crate::catalogue::suite::{Destination, FailureClass};
use crate::cluster::deploy;
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::settle::{self, FlowKind};
use crate::probes::transport::{self, Observation};

/// GETs the node's `to` from this machine.
pub async fn observe(ctx: &Ctx<'_>, case: &Case<'_>, to: Destination) -> Probed {
    let (_, node) = match case.node(ctx.facts) {
        Ok(n) => n,
        Err(p) => return p.into(),
    };
    let Some(svc) = crate::probes::flow::node_port_service(ctx, node) else {
        return Probed::Error(format!("no service over the server on {}", node.name));
    };
    let fixture = match to {
        Destination::HostPort => crate::probes::flow::host_port_ip(ctx.dep, node),
        _ => crate::probes::flow::server_ip(ctx.dep, node),
    };
    if let Err(why) = fixture {
        return why.into();
    }
    let url = match to {
        Destination::LoadBalancer => match crate::probes::flow::lb_ingress(ctx, node).await {
            Ok(ip) => format!("http://{ip}:80/hostname"),
            Err(why) => return why.into(),
        },
        Destination::HostPort => format!("http://{}:{}/hostname", node.outside_address(), deploy::HOST_PORT),
        _ => match svc.node_ports.0 {
            Some(port) => format!("http://{}:{port}/hostname", node.outside_address()),
            None => return Probed::Error(format!("service {} has no node port", svc.name)),
        },
    };
    if to != Destination::LoadBalancer
        && let Err(why) = ctx
            .reach
            .check(
                node,
                svc.node_ports.0,
                ctx.clock.real_wait(crate::cluster::reach::CONNECT),
            )
            .await
    {
        return from_another_host(ctx, case, to, &why).await;
    }
    let kind = match to {
        Destination::LoadBalancer => FlowKind::LoadBalancer,
        _ => FlowKind::NodePort,
    };
    let until = ctx.settle_until(kind);
    let settled = settle::until_works(until, ctx.settle.pause, || async {
        let _permit = ctx.permits.acquire().await;
        // An attempt inside the window waits no longer than the window: a connection the node
        // drops while its proxy is still programming would hold the attempt past it.
        let full = ctx
            .clock
            .real_wait(Duration::from_secs((transport::CONNECT_SECS * 2).into()));
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        let wait = if left.is_zero() {
            full
        } else {
            left.clamp(Duration::from_millis(500).min(full), full)
        };
        Ok::<_, std::convert::Infallible>(get(&url, wait).await)
    })
    .await;
    let settled = match settled {
        Ok(s) => s,
        Err(never) => match never {},
    };
    let note = settled.note();
    // Nothing answered at the load balancer's address: a runner outside the network an internal
    // load balancer serves, or behind a proxy or firewall (real-clusters.md §7, "LoadBalancer
    // cells have no reachability fallback"). That says nothing about the cluster: the cell is
    // judged from inside it, and says so.
    if to == Destination::LoadBalancer
        && matches!(
            settled.observation,
            Observation::Failed(FailureClass::Timeout | FailureClass::Other)
        )
    {
        let why = format!(
            "this machine got no answer from {url} ({}{note}: an internal load balancer, or a proxy or firewall between this machine and it)",
            settled.value
        );
        return from_another_host(ctx, case, to, &why).await;
    }
    Probed::seen(
        settled.observation,
        format!("this machine → {url}: {}{note}", settled.value),
    )
}

/// The node whose host network stands in for an outside client of the node `to` (an index
/// into the facts): another node with a usable node-side probe, a Linux one first (its probe
/// needs no HostProcess support); None when there is none.
/// A load balancer's address is no node's: the destination's own host may stand in too (a Linux
/// node's kube-proxy serves ingress addresses to local clients as to any other).
fn vantage(ctx: &Ctx<'_>, to: usize, lb: bool) -> Option<usize> {
    let usable = |i: &usize| {
        ctx.facts.nodes.get(*i).is_some_and(|n| {
            ctx.dep.hosts.get(&n.name).is_some_and(|p| p.problem.is_none())
                && (n.os == mixcheck_reports::Os::Linux || n.host_process() == Some(true))
        })
    };
    let others = || {
        (0..ctx.facts.nodes.len())
            .filter(move |i| *i != to || lb)
            .filter(usable)
    };
    others()
        .find(|i| {
            ctx.facts
                .nodes
                .get(*i)
                .is_some_and(|n| n.os == mixcheck_reports::Os::Linux)
        })
        .or_else(|| others().next())
}

/// The node's NodePort, hostPort or its pool's LoadBalancer from another node's host network, for
/// a runner that does not reach the node's (or the load balancer's) address (`why`); unknown,
/// with `why`, when no other node can stand in.
async fn from_another_host(ctx: &Ctx<'_>, case: &Case<'_>, to: Destination, why: &str) -> Probed {
    let Ok((i, node)) = case.node(ctx.facts) else {
        return Probed::Unknown(why.to_string());
    };
    let Some(v) = vantage(ctx, i, to == Destination::LoadBalancer) else {
        return Probed::Unknown(format!("{why}; no other node's host network can stand in"));
    };
    let inside = Case {
        check: case.check,
        placement: Some(crate::catalogue::suite::Placement::OtherNode),
        protocol: Some(crate::catalogue::suite::Protocol::Tcp),
        variant: case.variant,
        pair: crate::probes::judgement::Pair {
            from: Some(v),
            to: Some(i),
        },
        index: case.index,
    };
    let mut probed = crate::probes::connect::observe(
        ctx,
        &inside,
        crate::catalogue::suite::Origin::Host,
        to,
        crate::catalogue::suite::ServiceVariant::Cluster,
        crate::catalogue::suite::Verify::Reachable,
    )
    .await;
    let from = ctx.facts.nodes.get(v).map_or("another node", |n| n.name.as_str());
    let stand_in = match to {
        Destination::LoadBalancer => {
            format!(
                "{why}; not observed from outside the cluster: judged from inside it, from node {from}'s host network: "
            )
        }
        _ => format!(
            "this machine does not reach {}'s address {} (private, as on most managed clusters); not observed from outside the cluster: judged from node {from}'s host network, the nearest client outside the pod network: ",
            node.name,
            node.outside_address()
        ),
    };
    match &mut probed {
        Probed::Seen { summary, .. } | Probed::Error(summary) => summary.insert_str(0, &stand_in),
        Probed::Unknown(u) => *u = format!("{why}; from node {from}'s host network: {u}"),
    }
    probed
}

/// The runner's own HTTP client, built once: building one reads the machine's root
/// certificates, a sixteenth of a 1,000-node run's CPU when each GET built its own. No proxy (a
/// node's address is dialled directly) and a new connection per request: a kept-alive one would
/// carry an attempt past a change of the node's rules that a real client's new connection meets.
fn client() -> Result<&'static reqwest::Client, String> {
    static CLIENT: std::sync::OnceLock<Result<reqwest::Client, String>> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(transport::CONNECT_SECS.into()))
                .pool_max_idle_per_host(0)
                .no_proxy()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The runner's own HTTP GET, within `wait` (the connection's time included).
async fn get(url: &str, wait: Duration) -> (Observation, String) {
    use FailureClass as C;
    let client = match client() {
        Ok(c) => c,
        Err(e) => return (Observation::Failed(C::Other), e),
    };
    match client.get(url).timeout(wait).send().await {
        Ok(r) => {
            let status = r.status();
            let body = r.text().await.unwrap_or_default();
            (
                Observation::Reached(body.clone()),
                format!("HTTP {status}: {}", body.trim()),
            )
        }
        Err(e) if e.is_timeout() => (Observation::Failed(C::Timeout), "timeout".into()),
        Err(e) if e.is_connect() => {
            let text = format!("{e:?}");
            let class = if text.contains("refused") || text.contains("Refused") {
                C::Refused
            } else {
                C::Timeout
            };
            (Observation::Failed(class), class.name().to_string())
        }
        Err(e) => (Observation::Failed(C::Other), e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A loopback HTTP server that answers `ok` on every connection it accepts (`answer`) or
    /// never answers, keeping each connection open; its URL and its count of connections.
    async fn server(answer: bool) -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/hostname", listener.local_addr().expect("address"));
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = socket.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        if answer {
                            let _ = socket
                                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                                .await;
                        }
                    }
                });
            }
        });
        (url, accepted)
    }

    /// Each attempt dials anew, as a real outside client's would: a kept-alive connection would
    /// carry the second attempt past whatever the node's rules decide for a new one.
    #[tokio::test]
    async fn each_get_opens_a_connection_of_its_own() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (url, accepted) = server(true).await;
        for _ in 0..3 {
            let (seen, summary) = get(&url, Duration::from_secs(5)).await;
            assert!(
                matches!(seen, Observation::Reached(ref body) if body == "ok"),
                "{summary}"
            );
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    /// A server that accepts and never answers is a timeout, within the attempt's wait.
    #[tokio::test]
    async fn a_silent_server_is_a_timeout_within_the_wait() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (url, _) = server(false).await;
        let started = std::time::Instant::now();
        let (seen, summary) = get(&url, Duration::from_millis(300)).await;
        assert!(matches!(seen, Observation::Failed(FailureClass::Timeout)), "{summary}");
        assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    }
}
