//! `pods/portforward` over the WebSocket channel protocol (`v4.channel.k8s.io`,
//! `portforward.k8s.io`), the one client libraries such as kube-rs speak: every requested port
//! gets two channels, data (2·i) and error (2·i+1); the server opens each with the port number
//! (two bytes, little endian) and every message after that carries its channel number in its
//! first byte (kubelet `pkg/kubelet/cri/streaming/portforward/websocket.go`). The data channel
//! reaches the pod's port as the kubelet does; the simulated apps answer one HTTP request per
//! connection, after which the session closes (the client reads to the end).

use axum::extract::ws::{Message, WebSocket};

/// The subprotocols of the channel form, newest first.
pub(super) const PROTOCOLS: [&str; 2] = ["v4.channel.k8s.io", "portforward.k8s.io"];

/// The ports of `?ports=8080,9090` (or repeated `ports=`), in order.
pub(super) fn ports(query: Option<&str>) -> Vec<u16> {
    query
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.strip_prefix("ports="))
        .flat_map(|v| v.split(',').map(str::to_string).collect::<Vec<_>>())
        .filter_map(|p| p.trim().parse().ok())
        .collect()
}

/// A message on channel `channel` (a port's data or error stream).
fn on(channel: usize, payload: &[u8]) -> Message {
    let byte = u8::try_from(channel).unwrap_or(u8::MAX);
    Message::Binary([&[byte][..], payload].concat().into())
}

/// What the pod answers to one request on a port: the reply's bytes, or the kubelet's reason
/// for not reaching the port.
pub(super) type Answer = Box<dyn Fn(u16, &[u8]) -> (Vec<u8>, Option<String>) + Send>;

/// One session: the port prefixes, then one request and answer per port; `refused` (the
/// kubelet cannot forward on this node) answers every port's error channel instead. `sandbox`
/// is the pod sandbox's id the kubelet names in its errors.
pub(super) async fn session(
    mut socket: WebSocket,
    sandbox: String,
    answer: Answer,
    ports: Vec<u16>,
    refused: Option<String>,
) {
    for (i, port) in ports.iter().enumerate() {
        for channel in [2 * i, 2 * i + 1] {
            if socket.send(on(channel, &port.to_le_bytes())).await.is_err() {
                return;
            }
        }
    }
    let kubelet_error = |port: u16, why: &str| format!("error forwarding port {port} to pod {sandbox}, uid : {why}");
    if let Some(why) = refused {
        for (i, port) in ports.iter().enumerate() {
            let _ = socket.send(on(2 * i + 1, kubelet_error(*port, &why).as_bytes())).await;
        }
        let _ = socket.send(Message::Close(None)).await;
        return;
    }
    let mut requests: Vec<Vec<u8>> = vec![Vec::new(); ports.len()];
    let mut open = ports.len();
    while open > 0 {
        let Some(Ok(msg)) = socket.recv().await else { return };
        let Message::Binary(bytes) = msg else {
            if matches!(msg, Message::Close(_)) {
                return;
            }
            continue;
        };
        let Some((&channel, payload)) = bytes.split_first() else {
            continue;
        };
        let channel = usize::from(channel);
        let (i, data) = (channel / 2, channel % 2 == 0);
        let (Some(port), Some(request)) = (ports.get(i), requests.get_mut(i)) else {
            continue;
        };
        if !data || request.windows(4).any(|w| w == b"\r\n\r\n") {
            continue;
        }
        request.extend_from_slice(payload);
        if !request.windows(4).any(|w| w == b"\r\n\r\n") {
            continue;
        }
        let (reply, error) = answer(*port, request);
        let sent = match error {
            Some(why) => {
                socket
                    .send(on(channel + 1, kubelet_error(*port, &why).as_bytes()))
                    .await
            }
            None => socket.send(on(channel, &reply)).await,
        };
        if sent.is_err() {
            return;
        }
        open -= 1;
    }
    let _ = socket.send(Message::Close(None)).await;
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case(Some("ports=8080"), vec![8080])]
    #[case(Some("ports=8080,9090"), vec![8080, 9090])]
    #[case(Some("ports=8080&ports=9090"), vec![8080, 9090])]
    #[case(Some("ports=x"), vec![])]
    #[case(None, vec![])]
    fn the_ports_come_from_the_query(#[case] query: Option<&str>, #[case] want: Vec<u16>) {
        assert_eq!(ports(query), want);
    }
}
