//! `pods/log`: container logs as `text/plain`, with `container`, `previous`, `tailLines`,
//! `timestamps`, `limitBytes`, `sinceSeconds` and `follow` (chunked until the client leaves or
//! the pod goes away), and the upstream 400 messages for containers that never started.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::exec::{container_status, pick_container};
use super::{ApiState, Query, Target};
use crate::node::logs::LogLine;
use crate::store::api_error::ApiError;
use crate::store::resources;

struct Options {
    timestamps: bool,
    tail: Option<usize>,
    limit_bytes: Option<usize>,
    since: Option<DateTime<Utc>>,
}

impl Options {
    fn format(&self, line: &LogLine) -> String {
        if self.timestamps {
            format!("{} {}\n", line.at.format("%Y-%m-%dT%H:%M:%S%.9fZ"), line.text)
        } else {
            format!("{}\n", line.text)
        }
    }

    fn wanted(&self, line: &LogLine) -> bool {
        self.since.is_none_or(|s| line.at >= s)
    }
}

fn parse_number<T: std::str::FromStr>(q: &Query, key: &str) -> Result<Option<T>, ApiError> {
    q.get(key)
        .map(|v| {
            v.parse::<T>()
                .map_err(|_| ApiError::BadRequest(format!("invalid {key} {v:?}")))
        })
        .transpose()
}

/// Why a container has no log yet, in the kubelet's words.
fn waiting_message(reason: &str) -> String {
    match reason {
        "ErrImagePull" => "image can't be pulled".into(),
        "ImagePullBackOff" => "trying and failing to pull image".into(),
        other => other.into(),
    }
}

pub(crate) async fn logs(state: ApiState, t: &Target, q: &Query) -> Result<Response, ApiError> {
    let pods = resources::core("pods");
    let pod_name = t.name.clone().unwrap_or_default();
    let pod = state.store.get(pods, t.ns(), &pod_name)?;
    let container = pick_container(&pod, q.get("container"))?;
    let node = pod
        .value()
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return Err(ApiError::BadRequest(format!(
            "pod {pod_name} does not have a host assigned"
        )));
    }
    let previous = q.flag("previous");
    let status = container_status(&pod, &container);
    let has_previous = status.is_some_and(|s| s.pointer("/lastState/terminated").is_some());
    let waiting = status
        .and_then(|s| s.pointer("/state/waiting/reason"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let never_started =
        status.is_none_or(|s| s.pointer("/state/running").is_none() && s.pointer("/state/terminated").is_none());
    // A crash-looping container shows its last instance's log.
    let use_previous = previous || (never_started && has_previous);
    if previous && !has_previous {
        return Err(ApiError::BadRequest(format!(
            "previous terminated container {container:?} in pod {pod_name:?} not found"
        )));
    }
    if never_started && !use_previous {
        let reason = waiting.unwrap_or_else(|| "ContainerCreating".into());
        return Err(ApiError::BadRequest(format!(
            "container {container:?} in pod {pod_name:?} is waiting to start: {}",
            waiting_message(&reason)
        )));
    }
    let opts = Options {
        timestamps: q.flag("timestamps"),
        tail: parse_number::<i64>(q, "tailLines")?.and_then(|n| usize::try_from(n).ok()),
        limit_bytes: parse_number::<i64>(q, "limitBytes")?.and_then(|n| usize::try_from(n).ok()),
        since: match (parse_number::<i64>(q, "sinceSeconds")?, q.get("sinceTime")) {
            (Some(s), _) if s <= 0 => {
                return Err(ApiError::BadRequest(format!(
                    "sinceSeconds must be greater than 0, not {s}"
                )));
            }
            // A window reaching before any representable time means "everything".
            (Some(s), _) => chrono::Duration::try_seconds(s).and_then(|d| Utc::now().checked_sub_signed(d)),
            (None, Some(t)) => Some(
                DateTime::parse_from_rfc3339(t)
                    .map_err(|_| ApiError::BadRequest(format!("invalid sinceTime {t:?}")))?
                    .with_timezone(&Utc),
            ),
            (None, None) => None,
        },
    };
    let follow = q.flag("follow") && !use_previous;
    let ns = t.ns().to_string();
    let (lines, feed) = if follow {
        let (lines, rx) = state.logs.read_and_follow(&ns, &pod_name, &container);
        (lines, Some(rx))
    } else {
        (
            state
                .logs
                .read(&ns, &pod_name, &container, use_previous)
                .unwrap_or_default(),
            None,
        )
    };
    let mut selected: Vec<&LogLine> = lines.iter().filter(|l| opts.wanted(l)).collect();
    if let Some(n) = opts.tail {
        let skip = selected.len().saturating_sub(n);
        selected.drain(..skip);
    }
    let mut text: String = selected.iter().map(|l| opts.format(l)).collect();
    if let Some(limit) = opts.limit_bytes
        && text.len() > limit
    {
        let mut cut = limit;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    let mut resp = match feed {
        None => Response::new(Body::from(text)),
        Some(rx) => {
            let (tx, body_rx) = mpsc::channel::<Result<Bytes, Infallible>>(64);
            let key = (ns, pod_name, container);
            tokio::spawn(follow_log(state, key, rx, tx, text, opts));
            Response::new(Body::from_stream(ReceiverStream::new(body_rx)))
        }
    };
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(resp)
}

async fn follow_log(
    state: ApiState,
    key: (String, String, String),
    mut rx: broadcast::Receiver<(crate::node::logs::ContainerKey, LogLine)>,
    tx: mpsc::Sender<Result<Bytes, Infallible>>,
    first: String,
    opts: Options,
) {
    if !first.is_empty() && tx.send(Ok(Bytes::from(first))).await.is_err() {
        return;
    }
    let pods = resources::core("pods");
    let mut check = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            received = rx.recv() => match received {
                Ok((k, line)) if k == key => {
                    if tx.send(Ok(Bytes::from(opts.format(&line)))).await.is_err() {
                        return;
                    }
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = check.tick() => {
                // Stop following once the pod is gone or the container has ended.
                match state.store.get(pods, &key.0, &key.1) {
                    Err(_) => return,
                    Ok(pod) => {
                        let ended = container_status(&pod, &key.2)
                            .is_some_and(|s| s.pointer("/state/terminated").is_some());
                        if ended {
                            return;
                        }
                    }
                }
            }
            _ = tx.closed() => return,
        }
    }
}
