//! `outside`: the runner's own HTTP client at a node's NodePort, hostPort or its pool's
//! LoadBalancer — the view of a client outside the cluster — after checking, once per node,
//! that this machine reaches the node's address at all ([`crate::cluster::reach`]).

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
        && let Err(why) = ctx.reach.check(node, svc.node_ports.0).await
    {
        return Probed::Unknown(why);
    }
    let kind = match to {
        Destination::LoadBalancer => FlowKind::LoadBalancer,
        _ => FlowKind::NodePort,
    };
    let until = ctx.settle_until(kind);
    let settled = settle::until_works(until, || async {
        let _permit = ctx.permits.acquire().await;
        // An attempt inside the window waits no longer than the window: a connection the node
        // drops while its proxy is still programming would hold the attempt past it.
        let full = Duration::from_secs((transport::CONNECT_SECS * 2).into());
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        let wait = if left.is_zero() {
            full
        } else {
            left.clamp(Duration::from_millis(500), full)
        };
        Ok::<_, std::convert::Infallible>(get(&url, wait).await)
    })
    .await;
    let settled = match settled {
        Ok(s) => s,
        Err(never) => match never {},
    };
    let note = settled.note();
    Probed::seen(
        settled.observation,
        format!("this machine → {url}: {}{note}", settled.value),
    )
}

/// The runner's own HTTP GET, within `wait`.
async fn get(url: &str, wait: Duration) -> (Observation, String) {
    use FailureClass as C;
    let client = match reqwest::Client::builder()
        .connect_timeout(wait.min(Duration::from_secs(transport::CONNECT_SECS.into())))
        .timeout(wait)
        .no_proxy()
        .build()
    {
        Ok(c) => c,
        Err(e) => return (Observation::Failed(C::Other), e.to_string()),
    };
    match client.get(url).send().await {
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
