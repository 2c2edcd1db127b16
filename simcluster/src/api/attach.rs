//! `pods/attach` over WebSocket (`v5.channel.k8s.io`, `v4.channel.k8s.io`), as `kubectl attach`
//! uses it: the container's output from the moment of attaching (what it writes goes to its
//! log, which attach follows) until the container ends or the client leaves, then a Success
//! status on channel 3 (<https://kubernetes.io/docs/reference/kubectl/generated/kubectl_attach/>;
//! the kubelet streams the running process's stdio, not its earlier output). Stdin is read and
//! dropped: the simulated processes do not read it.

use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::request::Parts;
use axum::response::Response;
use serde_json::json;
use tokio::sync::broadcast;

use super::exec::{STATUS, STDOUT, V4, V5, container_status, frame, pick_container, require_running};
use super::{ApiState, Query, Target};
use crate::node::logs::{ContainerKey, LogLine};
use crate::store::api_error::ApiError;
use crate::store::resources;

pub(crate) async fn attach(state: ApiState, t: &Target, q: &Query, mut parts: Parts) -> Result<Response, ApiError> {
    let pods = resources::core("pods");
    let pod = state.store.get(pods, t.ns(), t.name.as_deref().unwrap_or(""))?;
    let container = pick_container(&pod, q.get("container"))?;
    require_running(&pod, &container, "attach")?;
    let Ok(upgrade) = WebSocketUpgrade::from_request_parts(&mut parts, &state).await else {
        return Err(ApiError::BadRequest(format!(
            "the bundled cluster serves attach over WebSocket only ({V5} or {V4}); SPDY is not supported: use kubectl 1.30 or newer"
        )));
    };
    let upgrade = upgrade.protocols([V5, V4]);
    if upgrade.selected_protocol().is_none() {
        return Err(ApiError::BadRequest(format!(
            "no supported streaming protocol was offered: use {V5} or {V4}"
        )));
    }
    let key: ContainerKey = (t.ns().to_string(), pod.name().to_string(), container);
    let (_, feed) = state.logs.read_and_follow(&key.0, &key.1, &key.2);
    Ok(upgrade.on_upgrade(move |socket| session(state, socket, key, feed)))
}

async fn session(
    state: ApiState,
    mut socket: WebSocket,
    key: ContainerKey,
    mut feed: broadcast::Receiver<(ContainerKey, LogLine)>,
) {
    if socket.send(frame(STDOUT, &[])).await.is_err() {
        return;
    }
    let pods = resources::core("pods");
    let mut check = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            received = feed.recv() => match received {
                Ok((k, line)) if k == key => {
                    if socket.send(frame(STDOUT, format!("{}\n", line.text).as_bytes())).await.is_err() {
                        return;
                    }
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break,
            },
            msg = socket.recv() => match msg {
                // Stdin and resize frames are read and dropped.
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
            _ = check.tick() => {
                let ended = match state.store.get(pods, &key.0, &key.1) {
                    Err(_) => true,
                    Ok(pod) => container_status(&pod, &key.2).is_none_or(|s| s.pointer("/state/running").is_none()),
                };
                if ended {
                    break;
                }
            }
        }
    }
    let status = json!({"metadata": {}, "status": "Success"});
    if socket.send(frame(STATUS, status.to_string().as_bytes())).await.is_ok() {
        let _ = socket
            .send(Message::Close(Some(CloseFrame {
                code: 1000,
                reason: "".into(),
            })))
            .await;
    }
}
