//! Whether this machine reaches each node's address — the outside-client view's precondition:
//! node addresses are private on most managed clusters, and from a runner outside the VPC
//! nothing answers there, which says nothing about the node.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, OnceCell};

use crate::cluster::facts::ClusterNode;

/// How long a port may take to answer, on the cluster's clock: the caller gives the real time
/// it stands for (a share of it on the bundled cluster's fast clock).
pub const CONNECT: Duration = Duration::from_secs(5);

/// The kubelet's port, open on every node: an answer there (or a refusal — a host answered)
/// shows the address is reachable whatever the Service under test does.
const KUBELET_PORT: u16 = 10250;

/// Whether a node's address answered (else why not), once known.
type Answered = Arc<OnceCell<Result<(), String>>>;

/// Whether this machine reaches each node's outside address, checked once per node.
#[derive(Debug, Default)]
pub struct Reach {
    nodes: Mutex<HashMap<String, Answered>>,
}

impl Reach {
    /// Ok when a host answers at `node`'s outside address (its kubelet port, or `port`), else
    /// why not. Node addresses are private on most managed clusters (real-clusters reference
    /// §2): from a runner outside the VPC nothing answers, which says nothing about the node.
    /// Each port may take `wait` ([`CONNECT`] on the cluster's clock) to answer; the first
    /// check of a node decides for the run.
    pub async fn check(&self, node: &ClusterNode, port: Option<u16>, wait: Duration) -> Result<(), String> {
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
                .map(|p| async move { answers(addr, *p, wait).await.map_err(|why| format!("port {p}: {why}")) })
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
        let reach = Reach::default();
        let wait = Duration::from_millis(300);
        let local = ClusterNode::sample("linux-1", Os::Linux, "127.0.0.1");
        assert_eq!(reach.check(&local, Some(open), wait).await, Ok(()));
        // Nothing listens on 127.0.0.3:10250: refused, so a host answered.
        let refusing = ClusterNode::sample("linux-2", Os::Linux, "127.0.0.3");
        assert_eq!(reach.check(&refusing, None, wait).await, Ok(()));
        let mut private = ClusterNode::sample("win-1", Os::Windows, "10.1.2.3");
        private.external_address = Some("127.0.0.2".into());
        // Both ports held silent, as a firewall that drops connections looks from here.
        let _kubelet = tokio::net::TcpListener::bind(("127.0.0.2", KUBELET_PORT))
            .await
            .expect("port 10250 free on 127.0.0.2");
        let why = reach.check(&private, Some(held), wait).await.expect_err("unreachable");
        assert!(
            why.contains("win-1")
                && why.contains("127.0.0.2")
                && why.contains("10250")
                && why.contains(&held.to_string()),
            "{why}"
        );
        // The first check of a node decides: a second one with a longer wait is not made.
        let started = std::time::Instant::now();
        let again = reach.check(&private, Some(held), Duration::from_secs(60)).await;
        assert_eq!(again, Err(why));
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
        drop(silent);
    }
}
