//! The API-server side of `pods/exec` over WebSocket (`v5.channel.k8s.io`, `v4.channel.k8s.io`):
//! checks before the upgrade, stdin collection, output channels, and the exit status on
//! channel 3. The command itself is answered by the cluster's [`ContainerRuntime`].
//!
//! [`ContainerRuntime`]: crate::node::runtime::ContainerRuntime

use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::request::Parts;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{Value, json};

use super::{ApiState, Query, Target};
use crate::node::runtime::{ExecOutput, ExecRequest, ExitStatus};
use crate::store::Obj;
use crate::store::api_error::ApiError;
use crate::store::resources;

pub(crate) const V5: &str = "v5.channel.k8s.io";
pub(crate) const V4: &str = "v4.channel.k8s.io";
const STDIN: u8 = 0;
pub(crate) const STDOUT: u8 = 1;
const STDERR: u8 = 2;
pub(crate) const STATUS: u8 = 3;
const RESIZE: u8 = 4;
const CLOSE: u8 = 255;
/// Output is sent in frames of at most this many bytes.
const CHUNK: usize = 32 * 1024;
/// The longest a simulated command may run.
const COMMAND_LIMIT: Duration = Duration::from_secs(600);
/// How long to wait for the client's close after ours.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The container a request names, or the pod's only container.
pub(crate) fn pick_container(pod: &Obj, requested: Option<&str>) -> Result<String, ApiError> {
    let names: Vec<&str> = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .filter_map(|l| pod.value().pointer(&format!("/spec/{l}")).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    match requested.filter(|c| !c.is_empty()) {
        Some(c) if names.contains(&c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::BadRequest(format!(
            "container {c} is not valid for pod {}",
            pod.name()
        ))),
        None => {
            let main: Vec<&str> = pod
                .value()
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("name").and_then(Value::as_str))
                .collect();
            let default = pod
                .value()
                .pointer("/metadata/annotations/kubectl.kubernetes.io~1default-container")
                .and_then(Value::as_str);
            match (default, main.as_slice()) {
                (Some(d), _) if main.contains(&d) => Ok(d.to_string()),
                (_, [only]) => Ok((*only).to_string()),
                (_, []) => Err(ApiError::BadRequest(format!("pod {} has no containers", pod.name()))),
                (_, many) => Err(ApiError::BadRequest(format!(
                    "a container name must be specified for pod {}, choose one of: [{}]",
                    pod.name(),
                    many.join(" ")
                ))),
            }
        }
    }
}

/// The state of a container in the pod's status (None when the kubelet has not reported it).
/// The API server's refusals of exec and attach (`what`: `exec into`, `attach`): a completed
/// pod, a container that is not running.
pub(crate) fn require_running(pod: &Obj, container: &str, what: &str) -> Result<(), ApiError> {
    let phase = pod
        .value()
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if matches!(phase, "Succeeded" | "Failed") {
        return Err(ApiError::BadRequest(format!(
            "cannot {what} a container in a completed pod; current phase is {phase}"
        )));
    }
    let running = container_status(pod, container).is_some_and(|s| s.pointer("/state/running").is_some());
    if !running {
        return Err(ApiError::BadRequest(format!("container not found ({container:?})")));
    }
    Ok(())
}

pub(crate) fn container_status<'a>(pod: &'a Obj, container: &str) -> Option<&'a Value> {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .filter_map(|l| pod.value().pointer(&format!("/status/{l}")).and_then(Value::as_array))
    .flatten()
    .find(|c| c.get("name").and_then(Value::as_str) == Some(container))
}

pub(crate) async fn exec(state: ApiState, t: &Target, q: &Query, mut parts: Parts) -> Result<Response, ApiError> {
    let pods = resources::core("pods");
    let pod = state.store.get(pods, t.ns(), t.name.as_deref().unwrap_or(""))?;
    let container = pick_container(&pod, q.get("container"))?;
    let command = q.all("command");
    if command.is_empty() {
        return Err(ApiError::BadRequest(
            "you must specify at least one command for the container".into(),
        ));
    }
    require_running(&pod, &container, "exec into")?;
    let Ok(upgrade) = WebSocketUpgrade::from_request_parts(&mut parts, &state).await else {
        return Err(ApiError::BadRequest(
            "the bundled cluster serves exec over WebSocket only (v5.channel.k8s.io or v4.channel.k8s.io); SPDY is not supported: use kubectl 1.30 or newer".into(),
        ));
    };
    let upgrade = upgrade.protocols([V5, V4]);
    let Some(protocol) = upgrade
        .selected_protocol()
        .and_then(|p| p.to_str().ok())
        .map(str::to_string)
    else {
        return Err(ApiError::BadRequest(format!(
            "no supported streaming protocol was offered: use {V5} or {V4}"
        )));
    };
    let request = ExecRequest {
        pod,
        container,
        command,
        stdin: None,
        tty: q.flag("tty"),
    };
    let flags = Channels {
        stdin: q.flag("stdin"),
        stdout: q.flag("stdout") || q.get("stdout").is_none() && q.get("output").is_none(),
        stderr: q.flag("stderr") || q.get("stderr").is_none() && q.get("error").is_none(),
        v5: protocol == V5,
    };
    Ok(upgrade.on_upgrade(move |socket| session(state, socket, request, flags)))
}

#[derive(Debug, Clone, Copy)]
struct Channels {
    stdin: bool,
    stdout: bool,
    stderr: bool,
    v5: bool,
}

pub(crate) fn frame(channel: u8, data: &[u8]) -> Message {
    let mut buf = BytesMut::with_capacity(data.len() + 1);
    buf.put_u8(channel);
    buf.put_slice(data);
    Message::Binary(buf.freeze())
}

async fn session(state: ApiState, mut socket: WebSocket, mut request: ExecRequest, ch: Channels) {
    let ready = if ch.stdout {
        STDOUT
    } else if ch.stderr {
        STDERR
    } else {
        STATUS
    };
    if socket.send(frame(ready, &[])).await.is_err() {
        return;
    }
    if ch.stdin {
        match collect_stdin(&mut socket, ch.v5).await {
            Some(data) => request.stdin = Some(data),
            None => return,
        }
    }
    let output = match tokio::time::timeout(COMMAND_LIMIT, state.runtime.exec(request)).await {
        Ok(out) => out,
        Err(_) => ExecOutput {
            stdout: Vec::new(),
            stderr: Vec::new(),
            exit: ExitStatus::Error("command timed out in the simulated runtime".into()),
        },
    };
    // All output goes out before the status: clients stop reading at channel 3.
    let streams = [(STDOUT, ch.stdout, &output.stdout), (STDERR, ch.stderr, &output.stderr)];
    for (channel, _, data) in streams.iter().filter(|(_, open, _)| *open) {
        for chunk in data.chunks(CHUNK) {
            if socket.send(frame(*channel, chunk)).await.is_err() {
                return;
            }
        }
    }
    let status = exit_status_json(&output.exit);
    if socket.send(frame(STATUS, status.to_string().as_bytes())).await.is_err() {
        return;
    }
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code: 1000,
            reason: "".into(),
        })))
        .await;
    // Wait for the client's close, answering pings meanwhile, so no output is cut off.
    let _ = tokio::time::timeout(CLOSE_WAIT, async {
        while let Some(Ok(msg)) = socket.recv().await {
            if matches!(msg, Message::Close(_)) {
                break;
            }
        }
    })
    .await;
}

/// Reads stdin frames until the client closes stdin (v5: `[255, 0]`) or the socket.
async fn collect_stdin(socket: &mut WebSocket, v5: bool) -> Option<Bytes> {
    let mut data = BytesMut::new();
    while let Some(msg) = socket.recv().await {
        match msg {
            Ok(Message::Binary(b)) => match b.first() {
                Some(&STDIN) => data.put_slice(&b[1..]),
                Some(&CLOSE) if v5 && b.get(1) == Some(&STDIN) => return Some(data.freeze()),
                Some(&RESIZE) | Some(_) | None => {}
            },
            Ok(Message::Close(_)) | Err(_) => {
                // v4 signals stdin EOF only by closing; nothing can be sent back then.
                return None;
            }
            Ok(_) => {}
        }
    }
    None
}

/// The `Status` sent on channel 3.
fn exit_status_json(exit: &ExitStatus) -> Value {
    match exit {
        ExitStatus::Code(0) => json!({"metadata": {}, "status": "Success"}),
        ExitStatus::Code(code) => json!({
            "metadata": {},
            "status": "Failure",
            "message": format!("command terminated with non-zero exit code: error executing command [...], exit code {code}"),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
        }),
        ExitStatus::Error(msg) => json!({
            "metadata": {},
            "status": "Failure",
            "message": msg,
            "reason": "InternalError",
            "code": 500,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_frames() {
        assert_eq!(exit_status_json(&ExitStatus::Code(0))["status"], "Success");
        let fail = exit_status_json(&ExitStatus::Code(3));
        assert_eq!(fail["reason"], "NonZeroExitCode");
        assert_eq!(fail["details"]["causes"][0]["message"], "3");
        assert_eq!(exit_status_json(&ExitStatus::Error("x".into()))["message"], "x");
    }
}
