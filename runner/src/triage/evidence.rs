//! Evidence about the nodes failing cells were observed on, read through the Kubernetes API
//! after the probes and before cleanup: the node's conditions and taints, its kubelet's
//! heartbeat (the node's Lease in `kube-node-lease`: how long ago it was renewed), the status of every
//! pod on it (waiting and terminated reasons, restarts), the Warning events of the run's pods
//! there, the logs of the agent pods (kube-proxy, flannel, CNI) on it, and the kubelet's,
//! kube-proxy's and flanneld's logs through the node proxy where the node serves them.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{Api, ListParams, LogParams};
use mixcheck_reports::evidence::EXCERPT_LIMIT;
use mixcheck_reports::{EvidenceItem, Excerpt, NodeEvidence};

use crate::cluster::facts::ClusterNode;

/// The namespace of the nodes' Leases, which their kubelets renew as their heartbeat.
const NODE_LEASES: &str = "kube-node-lease";
/// How long a Lease lasts when its spec does not say (the kubelet's default).
const LEASE_SECONDS: i64 = 40;

/// The limit on each API call.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);
/// How many lines of a log are kept (its end).
const LOG_LINES: usize = 60;
/// The log files a node may serve under the kubelet's `/logs/`: a Windows node's kubelet
/// (and, where they run as node services, kube-proxy's and flanneld's) logs as sig-windows-tools
/// installs them, a Linux node's syslog (the kubelet's journal lines).
const NODE_LOGS: &[&str] = &[
    "kubelet/kubelet.log",
    "kube-proxy/kube-proxy.log",
    "flanneld/flanneld.log",
    "syslog",
];

fn item(source: impl Into<String>, text: &str) -> EvidenceItem {
    EvidenceItem {
        source: source.into(),
        text: Excerpt::new(text),
    }
}

/// The last `lines` lines of `text`, fewer when they would not fit an excerpt: whole lines, so
/// the excerpt's own bound never starts its tail in the middle of one.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let mut kept = &all[all.len().saturating_sub(lines)..];
    while kept.len() > 1 && kept.iter().map(|l| l.len() + 1).sum::<usize>() > EXCERPT_LIMIT {
        kept = &kept[1..];
    }
    kept.join("\n")
}

/// What a node's Lease says of its kubelet's heartbeat at `now`: how long ago it was renewed,
/// and whether that is within the Lease's duration (`fresh`) or not (`stale`: the node lifecycle
/// controller marks a node whose Lease expired `Unknown`). None when it holds no renewTime.
fn heartbeat(lease: &Lease, now: k8s_openapi::jiff::Timestamp) -> Option<String> {
    let spec = lease.spec.as_ref()?;
    let renewed = spec.renew_time.as_ref()?.0;
    let duration = spec.lease_duration_seconds.map_or(LEASE_SECONDS, i64::from);
    let age = now.duration_since(renewed).as_secs();
    let (state, within) = if age > duration {
        ("stale", "longer than")
    } else {
        ("fresh", "within")
    };
    Some(format!(
        "renewed {age} s ago ({}), {within} its {duration} s duration: heartbeat {state}",
        renewed.strftime("%Y-%m-%dT%H:%M:%SZ")
    ))
}

/// One line about a pod's state: phase, readiness and why each container is not running.
fn pod_state(pod: &Pod) -> (bool, String) {
    let status = pod.status.clone().unwrap_or_default();
    let phase = status.phase.unwrap_or_else(|| "Unknown".into());
    let mut healthy = matches!(phase.as_str(), "Running" | "Succeeded");
    let mut parts = vec![format!("phase {phase}")];
    for c in status.container_statuses.unwrap_or_default() {
        if !c.ready && phase != "Succeeded" {
            healthy = false;
        }
        let state = c.state.unwrap_or_default();
        let mut line = format!("container {} ready={} restarts={}", c.name, c.ready, c.restart_count);
        if let Some(w) = state.waiting {
            line.push_str(&format!(
                ", waiting {}: {}",
                w.reason.unwrap_or_default(),
                w.message.unwrap_or_default()
            ));
        }
        if let Some(t) = state.terminated {
            line.push_str(&format!(
                ", terminated {} (exit code {}): {}",
                t.reason.unwrap_or_default(),
                t.exit_code,
                t.message.unwrap_or_default()
            ));
        }
        if let Some(last) = c.last_state.and_then(|s| s.terminated) {
            line.push_str(&format!(
                ", last terminated {} (exit code {})",
                last.reason.unwrap_or_default(),
                last.exit_code
            ));
        }
        parts.push(line);
    }
    (healthy, parts.join("; "))
}

/// The evidence about `nodes`; `ns` is the run's namespace (its pods are the fixtures). What
/// cannot be read is left out, with a note.
pub async fn gather(client: &kube::Client, ns: &str, nodes: &[&ClusterNode]) -> Vec<NodeEvidence> {
    let events = run_events(client, ns).await;
    let mut out = Vec::new();
    for node in nodes {
        out.push(NodeEvidence {
            node: node.name.clone(),
            items: of_node(client, ns, node, &events).await,
        });
    }
    out
}

/// The run namespace's Warning events by the name of the object they are about.
async fn run_events(client: &kube::Client, ns: &str) -> BTreeMap<String, Vec<String>> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    let params = ListParams::default().fields("type=Warning");
    let mut by_object: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if let Ok(Ok(list)) = tokio::time::timeout(CALL_TIMEOUT, api.list(&params)).await {
        for e in list.items {
            let Some(name) = e.involved_object.name else { continue };
            let count = e.count.unwrap_or(1);
            by_object.entry(name).or_default().push(format!(
                "{} ({count} times): {}",
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default()
            ));
        }
    }
    by_object
}

async fn of_node(
    client: &kube::Client,
    ns: &str,
    node: &ClusterNode,
    events: &BTreeMap<String, Vec<String>>,
) -> Vec<EvidenceItem> {
    let mut items = Vec::new();
    // The node's conditions now (the facts hold them as the run began; a node may have gone
    // NotReady, or come back, since).
    let nodes: Api<Node> = Api::all(client.clone());
    let now: Option<BTreeMap<String, String>> = match tokio::time::timeout(CALL_TIMEOUT, nodes.get(&node.name)).await {
        Ok(Ok(n)) => n
            .status
            .and_then(|s| s.conditions)
            .map(|cs| cs.into_iter().map(|c| (c.type_, c.status)).collect()),
        _ => None,
    };
    for (kind, status) in now.as_ref().unwrap_or(&node.conditions) {
        let normal = if kind == "Ready" { "True" } else { "False" };
        if status != normal {
            items.push(item(format!("condition {kind}"), &format!("{kind}={status}")));
        }
    }
    let taints: Vec<String> = node
        .taints
        .iter()
        .filter(|t| t.key.starts_with("node.kubernetes.io/"))
        .map(|t| format!("{}:{}", t.key, t.effect))
        .collect();
    if !taints.is_empty() {
        items.push(item("taints", &taints.join(", ")));
    }
    let leases: Api<Lease> = Api::namespaced(client.clone(), NODE_LEASES);
    let source = format!("lease {NODE_LEASES}/{}", node.name);
    match tokio::time::timeout(CALL_TIMEOUT, leases.get_opt(&node.name)).await {
        Ok(Ok(Some(lease))) => {
            if let Some(text) = heartbeat(&lease, k8s_openapi::jiff::Timestamp::now()) {
                items.push(item(source, &text));
            }
        }
        // No Lease: a kubelet older than 1.14 (or one that never registered) posts none.
        Ok(Ok(None)) => {}
        Ok(Err(e)) => items.push(item(source, &format!("not read: {e}"))),
        Err(_) => items.push(item(source, "not read: timed out")),
    }
    let all: Api<Pod> = Api::all(client.clone());
    let params = ListParams::default().fields(&format!("spec.nodeName={}", node.name));
    match tokio::time::timeout(CALL_TIMEOUT, all.list(&params)).await {
        Ok(Ok(pods)) => {
            for pod in &pods.items {
                let pod_ns = pod.metadata.namespace.clone().unwrap_or_default();
                let name = pod.metadata.name.clone().unwrap_or_default();
                let (healthy, state) = pod_state(pod);
                if pod_ns == ns {
                    // The fixtures: only the ones in trouble, with their events.
                    if !healthy {
                        items.push(item(format!("status {pod_ns}/{name}"), &state));
                        for e in events.get(&name).into_iter().flatten() {
                            items.push(item(format!("event {pod_ns}/{name}"), e));
                        }
                    }
                    continue;
                }
                // The node's agents and add-ons: their state and the end of their log.
                items.push(item(format!("status {pod_ns}/{name}"), &state));
                if let Some(log) = pod_log(client, &pod_ns, &name).await {
                    items.push(item(format!("log {pod_ns}/{name}"), &log));
                }
            }
        }
        Ok(Err(e)) => items.push(item("pods", &format!("listing the node's pods failed: {e}"))),
        Err(_) => items.push(item("pods", "listing the node's pods timed out")),
    }
    for file in NODE_LOGS {
        if let Some(text) = node_log(client, &node.name, file).await {
            items.push(item(format!("node-log {file}"), &tail(&text, LOG_LINES)));
        }
    }
    items
}

/// The end of a pod's log (its previous container's when the current one logged nothing).
async fn pod_log(client: &kube::Client, ns: &str, name: &str) -> Option<String> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let mut params = LogParams {
        tail_lines: Some(LOG_LINES as i64),
        ..LogParams::default()
    };
    for previous in [false, true] {
        params.previous = previous;
        if let Ok(Ok(text)) = tokio::time::timeout(CALL_TIMEOUT, api.logs(name, &params)).await
            && !text.trim().is_empty()
        {
            return Some(text);
        }
    }
    None
}

/// A log file the node serves under `/logs/`, or None.
async fn node_log(client: &kube::Client, node: &str, file: &str) -> Option<String> {
    let path = format!("/api/v1/nodes/{node}/proxy/logs/{file}");
    let request = http::Request::get(&path).body(Vec::new()).ok()?;
    match tokio::time::timeout(CALL_TIMEOUT, client.request_text(request)).await {
        Ok(Ok(text)) if !text.trim().is_empty() => Some(text),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
        assert_eq!(tail("", 5), "");
        let long = format!("{}\n{}\nend", "a".repeat(3000), "b".repeat(3000));
        assert_eq!(tail(&long, 3), format!("{}\nend", "b".repeat(3000)));
    }

    #[test]
    fn a_crashing_container_is_not_healthy_and_says_why() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "kube-proxy-windows-x", "namespace": "kube-system"},
            "status": {"phase": "Running", "containerStatuses": [{
                "name": "kube-proxy", "ready": false, "restartCount": 4, "image": "i", "imageID": "",
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}},
                "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}
            }]}
        }))
        .expect("pod");
        let (healthy, state) = pod_state(&pod);
        assert!(!healthy);
        assert!(state.contains("container kube-proxy ready=false restarts=4"), "{state}");
        assert!(state.contains("waiting CrashLoopBackOff: back-off 40s"), "{state}");
        assert!(state.contains("last terminated Error (exit code 1)"), "{state}");
    }

    #[rstest::rstest]
    #[case::just_renewed(
        3,
        Some(40),
        "renewed 3 s ago (2026-11-27T14:00:00Z), within its 40 s duration: heartbeat fresh"
    )]
    #[case::at_its_duration(
        40,
        Some(40),
        "renewed 40 s ago (2026-11-27T14:00:00Z), within its 40 s duration: heartbeat fresh"
    )]
    #[case::expired(
        300,
        Some(40),
        "renewed 300 s ago (2026-11-27T14:00:00Z), longer than its 40 s duration: heartbeat stale"
    )]
    #[case::default_duration(
        41,
        None,
        "renewed 41 s ago (2026-11-27T14:00:00Z), longer than its 40 s duration: heartbeat stale"
    )]
    #[case::longer_duration(
        100,
        Some(120),
        "renewed 100 s ago (2026-11-27T14:00:00Z), within its 120 s duration: heartbeat fresh"
    )]
    fn a_leases_renew_time_tells_a_live_heartbeat_from_a_stale_one(
        #[case] age: i64,
        #[case] duration: Option<i32>,
        #[case] said: &str,
    ) {
        let mut spec = serde_json::json!({"holderIdentity": "win2022-1", "renewTime": "2026-11-27T14:00:00.000000Z"});
        if let Some(d) = duration {
            spec["leaseDurationSeconds"] = d.into();
        }
        let lease: Lease = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "win2022-1", "namespace": "kube-node-lease"},
            "spec": spec
        }))
        .expect("lease");
        let renewed: k8s_openapi::jiff::Timestamp = "2026-11-27T14:00:00Z".parse().expect("time");
        let now = renewed
            .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(age))
            .expect("now");
        assert_eq!(heartbeat(&lease, now).as_deref(), Some(said));
    }

    #[test]
    fn a_lease_without_a_renew_time_says_nothing() {
        let lease: Lease = serde_json::from_value(serde_json::json!({"spec": {"holderIdentity": "n"}})).expect("lease");
        let now = k8s_openapi::jiff::Timestamp::now();
        assert_eq!(heartbeat(&lease, now), None);
    }

    #[test]
    fn a_running_ready_pod_is_healthy() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "status": {"phase": "Running", "containerStatuses": [{
                "name": "c", "ready": true, "restartCount": 0, "image": "i", "imageID": "",
                "state": {"running": {}}
            }]}
        }))
        .expect("pod");
        assert!(pod_state(&pod).0);
    }
}
