//! Watches: newline-delimited JSON events over a chunked response, with selectors,
//! resourceVersion resumption (410 Expired when history is gone), bookmarks, timeouts and
//! server-rendered Table events for `kubectl get -w`.

use std::convert::Infallible;

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::resource::Selectors;
use super::{ApiState, Format, Query, Target};
use crate::api::table::{self, IncludeObject};
use crate::store::api_error::ApiError;
use crate::store::resources::ResourceType;
use crate::store::{Event, EventType, Obj, WatchFrom};

/// Default and largest watch duration.
const DEFAULT_TIMEOUT: u64 = 1800;

struct Encoder {
    rt: &'static ResourceType,
    table: Option<IncludeObject>,
    headers_sent: bool,
}

impl Encoder {
    fn line(&mut self, kind: &str, obj: &Obj) -> Bytes {
        let mut out = Vec::with_capacity(obj.json().len() + 32);
        out.extend_from_slice(br#"{"type":""#);
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(br#"","object":"#);
        match self.table {
            None => out.extend_from_slice(obj.json()),
            Some(include) => {
                let t = table::render(
                    self.rt,
                    std::slice::from_ref(obj),
                    obj.resource_version(),
                    include,
                    !self.headers_sent,
                );
                self.headers_sent = true;
                out.extend_from_slice(t.to_string().as_bytes());
            }
        }
        out.extend_from_slice(b"}\n");
        Bytes::from(out)
    }

    fn raw(kind: &str, object: &Value) -> Bytes {
        Bytes::from(format!("{}\n", json!({"type": kind, "object": object})))
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = json!({"kind": self.rt.kind, "apiVersion": self.rt.api_version(), "metadata": meta});
        Self::raw("BOOKMARK", &object)
    }
}

/// How an event looks to a watcher with these selectors (None: not shown).
fn classify(event: &Event, rt: &ResourceType, ns: Option<&str>, sel: &Selectors) -> Option<EventType> {
    if event.resource.group != rt.group || event.resource.plural != rt.plural {
        return None;
    }
    if ns.is_some_and(|ns| ns != event.object.namespace()) {
        return None;
    }
    let now = sel.matches(&event.object);
    match event.kind {
        EventType::Added => now.then_some(EventType::Added),
        EventType::Deleted => event
            .previous
            .as_ref()
            .map_or(now, |p| sel.matches(p) || now)
            .then_some(EventType::Deleted),
        EventType::Modified => {
            let was = event.previous.as_ref().is_some_and(|p| sel.matches(p));
            match (was, now) {
                (true, true) => Some(EventType::Modified),
                (false, true) => Some(EventType::Added),
                (true, false) => Some(EventType::Deleted),
                (false, false) => None,
            }
        }
    }
}

pub(crate) async fn watch(state: ApiState, t: &Target, q: &Query, format: Format) -> Result<Response, ApiError> {
    let rt = t.rt;
    let selectors = Selectors::parse(rt, q)?;
    let send_initial = q.flag("sendInitialEvents");
    let from = match q.get("resourceVersion") {
        None | Some("") | Some("0") => WatchFrom::Now,
        Some(_) if send_initial => WatchFrom::Now,
        Some(rv) => WatchFrom::After(
            rv.parse()
                .map_err(|_| ApiError::BadRequest(format!("invalid resource version {rv:?}")))?,
        ),
    };
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(DEFAULT_TIMEOUT)
        .clamp(1, DEFAULT_TIMEOUT);
    let bookmarks = q.flag("allowWatchBookmarks");
    let ns = t.namespace.clone();
    let table = match format {
        Format::Table(include) => Some(include),
        Format::Json => None,
    };
    let mut encoder = Encoder {
        rt,
        table,
        headers_sent: false,
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(256);
    match state.store.watch(rt, ns.as_deref(), from) {
        Err(e @ ApiError::Expired { .. }) => {
            // The apiserver answers 200 and sends the 410 as an ERROR event.
            let _ = tx.try_send(Ok(Encoder::raw("ERROR", &e.to_status())));
        }
        Err(e) => return Err(e),
        Ok(w) => {
            let bookmark_every = state.bookmark_interval;
            tokio::spawn(async move {
                let mut last_rv = w.start_rv;
                for event in &w.initial {
                    if let Some(kind) = classify(event, rt, ns.as_deref(), &selectors)
                        && tx.send(Ok(encoder.line(kind.as_str(), &event.object))).await.is_err()
                    {
                        return;
                    }
                }
                if send_initial && tx.send(Ok(encoder.bookmark(last_rv, true))).await.is_err() {
                    return;
                }
                stream(
                    w.feed,
                    tx,
                    &mut encoder,
                    &mut last_rv,
                    StreamParams {
                        ns,
                        selectors,
                        deadline: tokio::time::Instant::now() + Duration::from_secs(timeout),
                        bookmarks: bookmarks.then_some(bookmark_every),
                    },
                )
                .await;
            });
        }
    }
    let content_type = if table.is_some() {
        "application/json;as=Table;v=v1;g=meta.k8s.io"
    } else {
        "application/json"
    };
    let mut resp = Response::new(Body::from_stream(ReceiverStream::new(rx)));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    Ok(resp)
}

struct StreamParams {
    ns: Option<String>,
    selectors: Selectors,
    deadline: tokio::time::Instant,
    bookmarks: Option<Duration>,
}

async fn stream(
    mut feed: crate::store::Subscription,
    tx: mpsc::Sender<Result<Bytes, Infallible>>,
    encoder: &mut Encoder,
    last_rv: &mut u64,
    p: StreamParams,
) {
    let rt = encoder.rt;
    let mut ticker = tokio::time::interval(p.bookmarks.unwrap_or(Duration::from_secs(3600)));
    ticker.tick().await;
    loop {
        tokio::select! {
            received = feed.recv() => match received {
                Ok(event) => {
                    if event.rv <= *last_rv {
                        continue;
                    }
                    *last_rv = event.rv;
                    if let Some(kind) = classify(&event, rt, p.ns.as_deref(), &p.selectors)
                        && tx.send(Ok(encoder.line(kind.as_str(), &event.object))).await.is_err()
                    {
                        return;
                    }
                }
                Err(crate::store::RecvError::Lagged(_)) => {
                    // This watcher fell behind the feed: it must relist, as after a compaction.
                    let err = ApiError::Expired { requested: *last_rv, oldest: *last_rv + 1 };
                    let _ = tx.send(Ok(Encoder::raw("ERROR", &err.to_status()))).await;
                    return;
                }
            },
            _ = ticker.tick(), if p.bookmarks.is_some() => {
                if tx.send(Ok(encoder.bookmark(*last_rv, false))).await.is_err() {
                    return;
                }
            }
            _ = tokio::time::sleep_until(p.deadline) => return,
            _ = tx.closed() => return,
        }
    }
}
