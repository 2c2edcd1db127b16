//! `outside`: the runner's own HTTP client at a node's NodePort, hostPort or its pool's
//! LoadBalancer — the view of a client outside the cluster — after checking, once per node,
//! that this machine reaches the node's address at all.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, OnceCell};

use crate::catalogue::suite::{Destination, FailureClass};
use crate::cluster::deploy;
use crate::cluster::facts::ClusterNode;
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::settle::{self, FlowKind};
use crate::probes::transport::{self, Observation};

/// The kubelet's port, open on every node: an answer there (or a refusal — a host answered)
/// shows the address is reachable whatever the Service under test does.
const KUBELET_PORT: u16 = 10250;

/// Whether a node's address answered (else why not), once known.
type Answered = Arc<OnceCell<Result<(), String>>>;

/// Whether this machine reaches each node's outside address, checked once per node.
#[derive(Debug)]
pub struct Reach {
    nodes: Mutex<HashMap<String, Answered>>,
    /// How long a port may take to answer.
    wait: Duration,
}

impl Default for Reach {
    fn default() -> Self {
        Self::waiting(Duration::from_secs(transport::CONNECT_SECS.into()))
    }
}

impl Reach {
    fn waiting(wait: Duration) -> Self {
        Self {
            nodes: Mutex::default(),
            wait,
        }
    }

    /// Ok when a host answers at `node`'s outside address (its kubelet port, or `port`), else
    /// why not. Node addresses are private on most managed clusters (real-clusters reference
    /// §2): from a runner outside the VPC nothing answers, which says nothing about the node.
    pub async fn check(&self, node: &ClusterNode, port: Option<u16>) -> Result<(), String> {
        let cell = {
            let mut nodes = self.nodes.lock().await;
            nodes.entry(node.name.clone()).or_default().clone()
        };
        cell.get_or_init(|| async {
            let addr = node.outside_address();
            let ports: Vec<u16> = std::iter::once(KUBELET_PORT).chain(port).collect();
            // The first port to answer decides; only when none does are all their failures told.
            let mut tries: futures::stream::FuturesUnordered<_> = ports
                .iter()
                .map(|p| async move { answers(addr, *p, self.wait).await.map_err(|why| format!("port {p}: {why}")) })
                .collect();
            let mut why = Vec::new();
            while let Some(tried) = futures::StreamExt::next(&mut tries).await {
                match tried {
                    Ok(()) => return Ok(()),
                    Err(e) => why.push(e),
                }
            }
            why.sort();
            Err(format!(
                "unknown: this machine does not reach node {}'s address {addr} ({}) — node addresses are private on most managed clusters; run mixcheck where it can reach them (e.g. --in-cluster) to check this from outside",
                node.name,
                why.join("; ")
            ))
        })
        .await
        .clone()
    }
}

/// Whether a host answers at `addr:port` within `wait`: it refuses the connection, or sends
/// something back to a plain HTTP request (the kubelet's TLS port answers one with a 400). A
/// connection that is accepted and stays silent is a firewall or a proxy, not the node.
async fn answers(addr: &str, port: u16, wait: Duration) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let target = format!("{addr}:{port}");
    let exchange = async {
        let mut stream = match tokio::net::TcpStream::connect(&target).await {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Ok(()),
            Err(e) => return Err(e.to_string()),
        };
        stream
            .write_all(b"GET / HTTP/1.0\r\n\r\n")
            .await
            .map_err(|e| e.to_string())?;
        let mut byte = [0u8; 1];
        match stream.read(&mut byte).await {
            Ok(n) if n > 0 => Ok(()),
            Ok(_) => Err("the connection closed without an answer".to_string()),
            Err(e) => Err(e.to_string()),
        }
    };
    match tokio::time::timeout(wait, exchange).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer in {}s", wait.as_secs_f32())),
    }
}

/// GETs the node's `to` from this machine.
pub async fn observe(ctx: &Ctx<'_>, case: &Case<'_>, to: Destination) -> Probed {
    let (_, node) = match case.node(ctx.facts) {
        Ok(n) => n,
        Err(p) => return p.into(),
    };
    let Some(svc) = ctx.dep.services.get(&node.name) else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use mixcheck_reports::Os;

    /// A node whose address answers — an HTTP reply, or a refusal (a host said no) — is
    /// reachable; one whose connections are held silent (a firewall dropping them) is not, and
    /// the reason names the node, the address and what each port did. The answer is kept per
    /// node.
    #[tokio::test]
    async fn a_node_address_is_reachable_when_a_host_answers() {
        use tokio::io::AsyncWriteExt;
        let speaking = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a listener");
        let open = speaking.local_addr().expect("its address").port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = speaking.accept().await {
                let _ = s.write_all(b"HTTP/1.0 400 Bad Request\r\n\r\n").await;
            }
        });
        let silent = tokio::net::TcpListener::bind("127.0.0.2:0").await.expect("a listener");
        let held = silent.local_addr().expect("its address").port();
        let reach = Reach::waiting(Duration::from_millis(300));
        let local = ClusterNode::sample("linux-1", Os::Linux, "127.0.0.1");
        assert_eq!(reach.check(&local, Some(open)).await, Ok(()));
        // Nothing listens on 127.0.0.3:10250: refused, so a host answered.
        let refusing = ClusterNode::sample("linux-2", Os::Linux, "127.0.0.3");
        assert_eq!(reach.check(&refusing, None).await, Ok(()));
        let mut private = ClusterNode::sample("win-1", Os::Windows, "10.1.2.3");
        private.external_address = Some("127.0.0.2".into());
        // Both ports held silent, as a firewall that drops connections looks from here.
        let _kubelet = tokio::net::TcpListener::bind(("127.0.0.2", KUBELET_PORT))
            .await
            .expect("port 10250 free on 127.0.0.2");
        let why = reach.check(&private, Some(held)).await.expect_err("unreachable");
        assert!(
            why.contains("win-1")
                && why.contains("127.0.0.2")
                && why.contains("10250")
                && why.contains(&held.to_string()),
            "{why}"
        );
        drop(silent);
    }
}
