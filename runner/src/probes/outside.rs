//! `outside`: the runner's own HTTP client at a node's NodePort, hostPort or its pool's
//! LoadBalancer — the view of a client outside the cluster.

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
    let Some(svc) = ctx.dep.services.get(&node.name) else {
        return Probed::Error(format!("no service over the server on {}", node.name));
    };
    if let Some(why) = ctx.dep.servers.get(&node.name).and_then(|p| p.problem.as_ref()) {
        return Probed::Error(format!("the netexec server on {} is not usable: {why}", node.name));
    }
    let url = match to {
        Destination::LoadBalancer => match ctx.dep.load_balancers.get(&node.pool()).and_then(|s| s.ingress.clone()) {
            Some(ip) => format!("http://{ip}:80/hostname"),
            None => {
                return Probed::Unknown(format!(
                    "unknown: the LoadBalancer service of pool {} got no ingress address (does the cluster have a load-balancer controller?)",
                    node.pool()
                ));
            }
        },
        Destination::HostPort => format!("http://{}:{}/hostname", node.address, deploy::HOST_PORT),
        _ => match svc.node_ports.0 {
            Some(port) => format!("http://{}:{port}/hostname", node.address),
            None => return Probed::Error(format!("service {} has no node port", svc.name)),
        },
    };
    let settled = settle::until_works(ctx.settle_until(FlowKind::NodePort), || async {
        let _permit = ctx.permits.acquire().await;
        Ok::<_, std::convert::Infallible>(get(&url).await)
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

/// The runner's own HTTP GET, with a timeout.
async fn get(url: &str) -> (Observation, String) {
    use FailureClass as C;
    let client = match reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(transport::CONNECT_SECS.into()))
        .timeout(Duration::from_secs((transport::CONNECT_SECS * 2).into()))
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
