//! Real TCP listeners for NodePorts: every node's loopback address listens on each NodePort
//! service's node ports, so a client on the machine truly connects, and answers as the chosen
//! backend pod's `agnhost netexec` would (`/hostname`, `/clientip`, `/echo?msg=`). The backend
//! is picked among the service's ready endpoints as kube-proxy does (round robin; only the
//! node's own endpoints with `externalTrafficPolicy: Local`).

use std::collections::{HashMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::profile::NodeProfile;
use crate::registry;
use crate::store::Store;

/// One listening socket: a node's address and a node port of a service.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Binding {
    node: String,
    ip: Ipv4Addr,
    port: u16,
    namespace: String,
    service: String,
}

#[derive(Debug)]
struct Backend {
    store: Arc<Store>,
    binding: Binding,
    next: AtomicUsize,
}

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    crate::pointer::str(v, ptr)
}

/// The NodePort bindings the cluster's services ask for, on every node.
fn desired(store: &Store, nodes: &[NodeProfile]) -> HashSet<Binding> {
    let mut out = HashSet::new();
    for svc in store.list(registry::core("services"), None).0 {
        let v = svc.value();
        if !matches!(s(v, "/spec/type"), "NodePort" | "LoadBalancer") {
            continue;
        }
        for p in v.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten() {
            let is_tcp = matches!(s(p, "/protocol"), "" | "TCP");
            let Some(port) = p
                .get("nodePort")
                .and_then(Value::as_u64)
                .and_then(|n| u16::try_from(n).ok())
            else {
                continue;
            };
            if !is_tcp {
                continue;
            }
            for node in nodes {
                out.insert(Binding {
                    node: node.name.clone(),
                    ip: node.ip,
                    port,
                    namespace: svc.namespace().to_string(),
                    service: svc.name().to_string(),
                });
            }
        }
    }
    out
}

/// The serving tasks; dropping it (the cluster stopping) closes every listener.
#[derive(Default)]
struct Listening(HashMap<Binding, JoinHandle<()>>);

impl Drop for Listening {
    fn drop(&mut self) {
        for task in self.0.values() {
            task.abort();
        }
    }
}

/// Keeps the listeners in step with the services until the store closes.
pub async fn run(store: Arc<Store>, nodes: Arc<Vec<NodeProfile>>) {
    let mut feed = store.subscribe();
    let mut listening = Listening::default();
    let running = &mut listening.0;
    loop {
        let want = desired(&store, &nodes);
        running.retain(|b, task| {
            let keep = want.contains(b) && !task.is_finished();
            if !keep {
                task.abort();
            }
            keep
        });
        for b in want {
            if running.contains_key(&b) {
                continue;
            }
            match tokio::net::TcpListener::bind(SocketAddr::from((b.ip, b.port))).await {
                Ok(listener) => {
                    let backend = Arc::new(Backend {
                        store: store.clone(),
                        binding: b.clone(),
                        next: AtomicUsize::new(0),
                    });
                    let app = Router::new()
                        .route(
                            "/",
                            get(|| async {
                                format!("NOW: {}", chrono::Utc::now().format("%Y-%m-%d %H:%M:%S%.9f %z UTC"))
                            }),
                        )
                        .fallback(netexec)
                        .with_state(backend);
                    let task = tokio::spawn(async move {
                        let _ = axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await;
                    });
                    running.insert(b, task);
                }
                Err(e) => tracing::warn!(
                    "cannot listen on {}:{} for service {}/{}: {e}",
                    b.ip,
                    b.port,
                    b.namespace,
                    b.service
                ),
            }
        }
        // Re-converge when services change (or periodically, to retry failed binds).
        let deadline = tokio::time::sleep(Duration::from_secs(2));
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                event = feed.recv() => match event {
                    Ok(e) if e.resource.group.is_empty() && e.resource.plural == "services" => break,
                    Ok(_) => continue,
                    Err(_) => break,
                },
                _ = &mut deadline => break,
            }
        }
    }
}

/// The ready endpoints the node forwards to: pod name, pod IP, node name.
fn endpoints(b: &Backend) -> Vec<(String, String, String)> {
    let store = &b.store;
    let Ok(svc) = store.get(registry::core("services"), &b.binding.namespace, &b.binding.service) else {
        return Vec::new();
    };
    let local_only = s(svc.value(), "/spec/externalTrafficPolicy") == "Local";
    let Ok(ep) = store.get(registry::core("endpoints"), &b.binding.namespace, &b.binding.service) else {
        return Vec::new();
    };
    ep.value()
        .pointer("/subsets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|sub| sub.get("addresses").and_then(Value::as_array))
        .flatten()
        .map(|a| {
            (
                s(a, "/targetRef/name").to_string(),
                s(a, "/ip").to_string(),
                s(a, "/nodeName").to_string(),
            )
        })
        .filter(|(_, _, node)| !local_only || *node == b.binding.node)
        .collect()
}

#[derive(Debug, serde::Deserialize)]
struct Params {
    msg: Option<String>,
}

async fn netexec(
    State(b): State<Arc<Backend>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    Query(params): Query<Params>,
    uri: axum::http::Uri,
) -> Response {
    let targets = endpoints(&b);
    if targets.is_empty() {
        // kube-proxy has nowhere to send it.
        return (StatusCode::SERVICE_UNAVAILABLE, "no endpoints available for service\n").into_response();
    }
    let (pod, _ip, _node) = &targets[b.next.fetch_add(1, Ordering::Relaxed) % targets.len()];
    match uri.path() {
        "/hostname" => pod.clone().into_response(),
        // With externalTrafficPolicy Cluster the client is SNATed to the node's address.
        "/clientip" => {
            let svc_local = b
                .store
                .get(registry::core("services"), &b.binding.namespace, &b.binding.service)
                .map(|svc| s(svc.value(), "/spec/externalTrafficPolicy") == "Local")
                .unwrap_or(false);
            if svc_local {
                format!("{client}").into_response()
            } else {
                format!("{}:{}", b.binding.ip, client.port()).into_response()
            }
        }
        "/echo" => params.msg.unwrap_or_default().into_response(),
        "/healthz" => "ok".into_response(),
        _ => (StatusCode::NOT_FOUND, "404 page not found\n").into_response(),
    }
}
