//! `pods/portforward`, as kubectl 1.31+ speaks it (the channel form client libraries speak is
//! [`super::pfchannel`]): a WebSocket with subprotocol
//! `SPDY/3.1+portforward.k8s.io` tunnelling SPDY/3.1 frames ([`super::spdy`]), each forwarded
//! connection a pair of streams with the same `port` and `requestID`, `streamType: error` and
//! `streamType: data` (client-go `tools/portforward`, KEP-4006 "Transition from SPDY to
//! WebSockets"). The data stream reaches the pod's port as the kubelet does, from inside the pod;
//! the simulated apps answer one HTTP request per connection (with `Connection: close`).
//!
//! Windows (NET-PORT-FORWARD, HIST-1.14-PORTFWD): port-forward is not supported by 1.14 Windows
//! kubelets; from 1.15 the kubelet runs `wincat` in the pod sandbox, which only pause images
//! built with it carry (`mcr.microsoft.com/oss/kubernetes/pause:1.4.1`, `pause:3.6` and later),
//! and fails with `unable to do port forwarding: wincat not found` otherwise
//! (<https://kubernetes.io/docs/tasks/debug/debug-cluster/windows/>).

use std::collections::HashMap;

use axum::extract::FromRequestParts;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::request::Parts;
use axum::response::Response;

use super::spdy::{self, FLAG_FIN, Frame, HeaderCodec};
use super::{ApiState, Target};
use crate::config::profile::NodeProfile;
use crate::store::Obj;
use crate::store::api_error::ApiError;
use crate::store::resources;
use crate::vocab::json;

const PROTOCOL: &str = "SPDY/3.1+portforward.k8s.io";

/// Whether a Windows pause image carries `wincat` (NET-PORT-FORWARD).
fn pause_has_wincat(image: &str) -> bool {
    let (repo, tag) = image.rsplit_once(':').unwrap_or((image, ""));
    let version: Vec<u32> = tag.split(['.', '-']).filter_map(|p| p.parse().ok()).collect();
    let at_least = |want: &[u32]| version.as_slice() >= want;
    match repo {
        "mcr.microsoft.com/oss/kubernetes/pause" => at_least(&[1, 4, 1]),
        "registry.k8s.io/pause" | "k8s.gcr.io/pause" => at_least(&[3, 6]),
        _ => false,
    }
}

/// Why the pod's kubelet cannot forward, if it cannot.
fn refusal(profile: &NodeProfile, version: (u32, u32)) -> Option<String> {
    if !profile.is_windows() {
        return None;
    }
    if version < (1, 15) {
        return Some(
            "unable to do port forwarding: port forwarding is not supported on Windows nodes in Kubernetes 1.14".into(),
        );
    }
    (!pause_has_wincat(&profile.pause_image)).then(|| "unable to do port forwarding: wincat not found".into())
}

pub(crate) async fn portforward(state: ApiState, t: &Target, mut parts: Parts) -> Result<Response, ApiError> {
    let pod = state
        .store
        .get(resources::core("pods"), t.ns(), t.name.as_deref().unwrap_or(""))?;
    if json::str(pod.value(), "/status/phase") != "Running" {
        return Err(ApiError::BadRequest(format!(
            "unable to upgrade connection: pod {} is not running",
            pod.name()
        )));
    }
    let node = json::str(pod.value(), "/spec/nodeName").to_string();
    let profile = state.profiles.iter().find(|p| p.name == node).cloned();
    let Ok(upgrade) = WebSocketUpgrade::from_request_parts(&mut parts, &state).await else {
        return Err(ApiError::BadRequest(format!(
            "the bundled cluster serves port-forward over WebSocket only ({PROTOCOL}): use kubectl 1.31 or newer"
        )));
    };
    let upgrade = upgrade.protocols([PROTOCOL, super::pfchannel::PROTOCOLS[0], super::pfchannel::PROTOCOLS[1]]);
    let Some(selected) = upgrade
        .selected_protocol()
        .and_then(|p| p.to_str().ok())
        .map(str::to_string)
    else {
        return Err(ApiError::BadRequest(format!(
            "no supported streaming protocol was offered: use {PROTOCOL} or {}",
            super::pfchannel::PROTOCOLS[0]
        )));
    };
    let refused = profile.as_ref().and_then(|p| refusal(p, state.cluster_version));
    if selected != PROTOCOL {
        // The channel form names its ports in the query (the SPDY form in each stream's headers).
        let ports = super::pfchannel::ports(parts.uri.query());
        if ports.is_empty() {
            return Err(ApiError::BadRequest("at least one port must be specified".into()));
        }
        let sandbox = sandbox_id(&pod);
        let answer: super::pfchannel::Answer = Box::new(move |port, request| answer(&state, &pod, port, request));
        return Ok(upgrade.on_upgrade(move |socket| super::pfchannel::session(socket, sandbox, answer, ports, refused)));
    }
    Ok(upgrade.on_upgrade(move |socket| session(state, socket, pod, refused)))
}

/// One forwarded connection's streams.
#[derive(Debug, Default)]
struct Connection {
    port: u16,
    error: Option<u32>,
    data: Option<u32>,
    request: Vec<u8>,
    answered: bool,
}

async fn session(state: ApiState, mut socket: WebSocket, pod: Obj, refused: Option<String>) {
    let mut buf = Vec::new();
    let mut codec = HeaderCodec::default();
    let mut connections: HashMap<String, Connection> = HashMap::new();
    let mut by_stream: HashMap<u32, String> = HashMap::new();
    while let Some(Ok(msg)) = socket.recv().await {
        let Message::Binary(bytes) = msg else {
            if matches!(msg, Message::Close(_)) {
                return;
            }
            continue;
        };
        buf.extend_from_slice(&bytes);
        loop {
            let frame = match spdy::next_frame(&mut buf) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!("port-forward: {e}");
                    return;
                }
            };
            let mut out: Vec<Vec<u8>> = Vec::new();
            match frame {
                Frame::Control {
                    kind: spdy::SYN_STREAM,
                    data,
                    ..
                } => {
                    let id = spdy::stream_id(&data);
                    let Ok(headers) = codec.decode(data.get(10..).unwrap_or_default()) else {
                        return;
                    };
                    let Ok(reply) = codec.encode(&[]) else { return };
                    out.push(spdy::control(
                        spdy::SYN_REPLY,
                        0,
                        &[id.to_be_bytes().to_vec(), reply].concat(),
                    ));
                    let request = headers.get("requestid").cloned().unwrap_or_default();
                    let c = connections.entry(request.clone()).or_default();
                    c.port = headers.get("port").and_then(|p| p.parse().ok()).unwrap_or(0);
                    match headers.get("streamtype").map(String::as_str) {
                        Some("error") => c.error = Some(id),
                        Some("data") => c.data = Some(id),
                        _ => {}
                    }
                    by_stream.insert(id, request);
                    if let (Some(why), Some(error), Some(data)) = (&refused, c.error, c.data) {
                        let message = format!(
                            "error forwarding port {} to pod {}, uid : {why}",
                            c.port,
                            sandbox_id(&pod)
                        );
                        out.push(spdy::data(error, FLAG_FIN, message.as_bytes()));
                        out.push(spdy::data(data, FLAG_FIN, &[]));
                        c.answered = true;
                    }
                }
                Frame::Control {
                    kind: spdy::PING, data, ..
                } => out.push(spdy::control(spdy::PING, 0, &data)),
                Frame::Control { kind: spdy::GOAWAY, .. } => return,
                Frame::Control { .. } => {}
                Frame::Data { stream, flags, data } => {
                    let Some(c) = by_stream.get(&stream).and_then(|r| connections.get_mut(r)) else {
                        continue;
                    };
                    if c.data == Some(stream) && !c.answered {
                        c.request.extend_from_slice(&data);
                        let complete = c.request.windows(4).any(|w| w == b"\r\n\r\n");
                        if complete || flags & FLAG_FIN != 0 {
                            c.answered = true;
                            let (reply, error) = answer(&state, &pod, c.port, &c.request);
                            if let Some(d) = c.data {
                                out.push(spdy::data(d, 0, &reply));
                                out.push(spdy::data(d, FLAG_FIN, &[]));
                            }
                            if let Some(e) = c.error {
                                let message = error
                                    .map(|why| {
                                        format!(
                                            "error forwarding port {} to pod {}, uid : {why}",
                                            c.port,
                                            sandbox_id(&pod)
                                        )
                                    })
                                    .unwrap_or_default();
                                out.push(spdy::data(e, FLAG_FIN, message.as_bytes()));
                            }
                        }
                    }
                }
            }
            for frame in out {
                if socket.send(Message::Binary(frame.into())).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The CRI sandbox id the kubelet names in its errors.
fn sandbox_id(pod: &Obj) -> String {
    let hex: String = pod.uid().chars().filter(char::is_ascii_hexdigit).collect();
    format!("{hex}{hex}").chars().take(64).collect()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// What the app at `port` answers to `request` (one HTTP request), and the kubelet's error
/// when nothing listens there.
fn answer(state: &ApiState, pod: &Obj, port: u16, request: &[u8]) -> (Vec<u8>, Option<String>) {
    let text = String::from_utf8_lossy(request);
    let target = text
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("/")
        .to_string();
    match state.forwarder.http_get(pod, port, &target) {
        Some((status, body)) => {
            let head = format!(
                "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                status,
                reason(status),
                body.len()
            );
            ([head.into_bytes(), body.into_bytes()].concat(), None)
        }
        None => (
            Vec::new(),
            Some(format!(
                "failed to connect to localhost:{port} inside namespace of the pod, IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused"
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case("mcr.microsoft.com/oss/kubernetes/pause:1.4.1", true)]
    #[case("mcr.microsoft.com/oss/kubernetes/pause:3.6", true)]
    #[case("registry.k8s.io/pause:3.10", true)]
    #[case("registry.k8s.io/pause:3.5", false)]
    #[case("mcr.microsoft.com/k8s/core/pause:1.0.0", false)]
    #[case("kubeletwin/pause", false)]
    fn wincat_comes_with_these_pause_images(#[case] image: &str, #[case] has: bool) {
        assert_eq!(pause_has_wincat(image), has);
    }
}
