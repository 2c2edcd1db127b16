//! `port-forward`: a tunnel through the API server to the netexec server pod on the node
//! (`pods/portforward`, kube-rs's [`kube::Api::portforward`]), one HTTP request through it; the
//! kubelet's refusal (no wincat in the pause image, 1.14 Windows nodes) comes back on the port's
//! error stream.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::catalogue::suite::FailureClass;
use crate::probes::flow;
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::transport::Observation;

/// The netexec server's HTTP port.
const PORT: u16 = 8080;
/// How long one tunnel may take, request and answer included.
const WAIT: Duration = Duration::from_secs(30);
/// How long the kubelet's error may take once the data stream ended.
const ERROR_WAIT: Duration = Duration::from_secs(2);

/// What came back through a tunnel: the data stream's bytes and the error stream's message.
struct Tunnelled {
    data: Vec<u8>,
    error: Option<String>,
}

/// How a tunnel is used: write the request at once, or first give the kubelet's refusal time to
/// arrive.
#[derive(Clone, Copy)]
enum Order {
    RequestFirst,
    ErrorFirst,
}

/// One tunnel. A kubelet that cannot forward (wincat missing) writes its error and closes the
/// connection without waiting for data; if the request is still on its way then, kube-rs's
/// forwarder fails on the closed socket and drops the error before handing it over (its
/// `forwarder_loop` handles the two directions in one queue). [`Order::ErrorFirst`] waits
/// [`ERROR_WAIT`] for the error before writing, so a refusal is read whatever the timing.
async fn tunnel(
    pods: &kube::Api<k8s_openapi::api::core::v1::Pod>,
    pod: &str,
    order: Order,
) -> Result<Tunnelled, String> {
    let mut forwarder = pods.portforward(pod, &[PORT]).await.map_err(|e| e.to_string())?;
    let mut error = forwarder.take_error(PORT).map(Box::pin);
    let mut stream = forwarder
        .take_stream(PORT)
        .ok_or_else(|| format!("the tunnel has no stream for port {PORT}"))?;
    if let (Order::ErrorFirst, Some(e)) = (order, error.as_mut())
        && let Ok(refused) = tokio::time::timeout(ERROR_WAIT, e).await
    {
        forwarder.abort();
        return Ok(Tunnelled {
            data: Vec::new(),
            error: refused.filter(|e| !e.trim().is_empty()),
        });
    }
    let request = format!("GET /hostname HTTP/1.1\r\nHost: localhost:{PORT}\r\nConnection: close\r\n\r\n");
    // A write into a tunnel the kubelet already closed fails; what it sent first still counts.
    let _ = stream.write_all(request.as_bytes()).await;
    let mut data = Vec::new();
    // The stream ends when the API server closes the tunnel; what was read by then counts.
    let _ = stream.read_to_end(&mut data).await;
    drop(stream);
    let error = match error {
        Some(e) => tokio::time::timeout(ERROR_WAIT, e).await.ok().flatten(),
        None => None,
    };
    forwarder.abort();
    Ok(Tunnelled {
        data,
        error: error.filter(|e| !e.trim().is_empty()),
    })
}

/// A tunnel, and when it closed with neither an answer nor an error, a second one that waits
/// for the kubelet's error before writing (see [`tunnel`]).
async fn forward(pods: &kube::Api<k8s_openapi::api::core::v1::Pod>, pod: &str) -> Result<Tunnelled, String> {
    let first = tunnel(pods, pod, Order::RequestFirst).await?;
    if !first.data.is_empty() || first.error.is_some() {
        return Ok(first);
    }
    tunnel(pods, pod, Order::ErrorFirst).await
}

/// The observation of a tunnel's outcome: the server's answer, or the kubelet's refusal.
fn classify(t: &Tunnelled) -> (Observation, String) {
    let text = String::from_utf8_lossy(&t.data);
    if let Some(error) = &t.error {
        return (
            Observation::Failed(FailureClass::Other),
            format!("the kubelet refused: {}", error.trim()),
        );
    }
    let status = text.lines().next().unwrap_or_default().trim().to_string();
    match text.split_once("\r\n\r\n") {
        Some((_, body)) if status.split_whitespace().nth(1) == Some("200") => (
            Observation::Reached(body.trim().to_string()),
            format!("{status}, body {}", body.trim()),
        ),
        _ if status.is_empty() => (
            Observation::Failed(FailureClass::NoReply),
            "the tunnel closed without an answer".into(),
        ),
        _ => (Observation::Failed(FailureClass::Other), format!("answered {status}")),
    }
}

/// Port-forwards to the netexec server on the cell's node and asks it for `/hostname`.
pub async fn observe(ctx: &Ctx<'_>, case: &Case<'_>) -> Probed {
    let (_, node) = match case.node(ctx.facts) {
        Ok(n) => n,
        Err(p) => return p.into(),
    };
    if let Err(p) = flow::server_ip(ctx.dep, node) {
        return p.into();
    }
    let Some(pod) = ctx.dep.servers.get(&node.name).map(|p| p.name.clone()) else {
        return Probed::Error(format!("no netexec server on {}", node.name));
    };
    let _slot = ctx.permits.acquire().await;
    let (observation, what) = match tokio::time::timeout(WAIT, forward(&ctx.pods, &pod)).await {
        Err(_) => (
            Observation::Failed(FailureClass::Timeout),
            format!("no answer within {} s", WAIT.as_secs()),
        ),
        // The API server refused the upgrade (e.g. the pod is not running): nothing was
        // forwarded.
        Ok(Err(why)) => (Observation::Failed(FailureClass::Other), why),
        Ok(Ok(t)) => classify(&t),
    };
    Probed::seen(
        observation,
        format!("port-forward {pod}:{PORT} → GET /hostname: {what}"),
    )
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn t(data: &str, error: Option<&str>) -> Tunnelled {
        Tunnelled {
            data: data.as_bytes().to_vec(),
            error: error.map(str::to_string),
        }
    }

    #[rstest]
    #[case::answered(t("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nsrv-1", None), None)]
    #[case::wincat(
        t(
            "",
            Some("error forwarding port 8080 to pod 1a2b, uid : unable to do port forwarding: wincat not found")
        ),
        Some(FailureClass::Other)
    )]
    #[case::nothing(t("", None), Some(FailureClass::NoReply))]
    #[case::not_found(t("HTTP/1.1 404 Not Found\r\n\r\n", None), Some(FailureClass::Other))]
    fn a_tunnel_is_judged_by_its_answer_or_the_kubelets_error(
        #[case] tunnel: Tunnelled,
        #[case] failed: Option<FailureClass>,
    ) {
        let (observation, _) = classify(&tunnel);
        match (observation, failed) {
            (Observation::Reached(body), None) => assert_eq!(body, "srv-1"),
            (Observation::Failed(c), Some(want)) => assert_eq!(c, want),
            (o, want) => panic!("{o:?}, expected {want:?}"),
        }
    }
}
