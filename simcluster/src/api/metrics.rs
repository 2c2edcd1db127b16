//! Resource metrics: the kubelet's summary API (`nodes/NAME/proxy/stats/summary`, the
//! `k8s.io/kubelet/pkg/apis/stats/v1alpha1` Summary shape, Windows nodes included — NODE-STATS)
//! and `metrics.k8s.io/v1beta1` (NodeMetrics, PodMetrics) as metrics-server serves it for
//! `kubectl top` (<https://kubernetes.io/docs/tasks/debug/debug-cluster/resource-metrics-pipeline/>),
//! both from what the simulated kubelets measure ([`crate::node::stats`]).

use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::{ApiState, Query, json_value};
use crate::config::profile::NodeProfile;
use crate::node::stats::{self, NodeStats, PodStats};
use crate::store::api_error::ApiError;
use crate::store::resources;
use crate::store::selector::LabelSelector;

pub const GROUP: &str = "metrics.k8s.io";
pub const VERSION: &str = "v1beta1";
const API_VERSION: &str = "metrics.k8s.io/v1beta1";
/// The window metrics-server reports its rates over (its default scrape resolution).
const WINDOW: &str = "15s";

/// `/apis/metrics.k8s.io/v1beta1`: nodes and pods, read-only.
pub fn resource_list() -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": API_VERSION,
        "resources": [
            {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]},
            {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]},
        ],
    })
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// CPU as `resource.Quantity` writes nanocores: the largest exact suffix (`1m`, `250u`, `7n`).
fn cpu(nano_cores: u64) -> String {
    match nano_cores {
        0 => "0".into(),
        n if n.is_multiple_of(1_000_000_000) => format!("{}", n / 1_000_000_000),
        n if n.is_multiple_of(1_000_000) => format!("{}m", n / 1_000_000),
        n if n.is_multiple_of(1_000) => format!("{}u", n / 1_000),
        n => format!("{n}n"),
    }
}

/// Memory as a binary-SI `resource.Quantity`: the largest exact binary suffix.
fn memory(bytes: u64) -> String {
    for (suffix, size) in [("Gi", 1u64 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
        if bytes != 0 && bytes.is_multiple_of(size) {
            return format!("{}{suffix}", bytes / size);
        }
    }
    bytes.to_string()
}

fn measured(state: &ApiState, profile: &NodeProfile, now: DateTime<Utc>) -> Option<NodeStats> {
    stats::measure(&state.store, profile, &state.kubelets.held(&profile.name), now)
}

fn all_measured(state: &ApiState, now: DateTime<Utc>) -> Vec<NodeStats> {
    state.profiles.iter().filter_map(|p| measured(state, p, now)).collect()
}

fn cpu_stats(now: DateTime<Utc>, nano_cores: u64, core_nano_seconds: u64) -> Value {
    json!({"time": stamp(now), "usageNanoCores": nano_cores, "usageCoreNanoSeconds": core_nano_seconds})
}

/// Memory stats; Windows reports no RSS or page faults (the kubelet's `winstats` provider).
fn memory_stats(now: DateTime<Utc>, working_set: u64, available: Option<u64>, windows: bool) -> Value {
    let mut m = json!({"time": stamp(now), "usageBytes": working_set, "workingSetBytes": working_set});
    if let Some(a) = available {
        m["availableBytes"] = json!(a);
    }
    if !windows {
        m["rssBytes"] = json!(working_set);
        m["pageFaults"] = json!(0);
        m["majorPageFaults"] = json!(0);
    }
    m
}

fn fs_stats(now: DateTime<Utc>, capacity: u64, used: u64) -> Value {
    json!({"time": stamp(now), "availableBytes": capacity.saturating_sub(used), "capacityBytes": capacity,
           "usedBytes": used, "inodesFree": 1_000_000u64, "inodes": 1_048_576u64, "inodesUsed": 48_576u64})
}

const DISK: u64 = 100 << 30;

fn pod_summary(p: &PodStats, windows: bool, now: DateTime<Utc>) -> Value {
    let containers: Vec<Value> = p
        .containers
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "startTime": stamp(c.start),
                "cpu": cpu_stats(now, c.nano_cores, c.core_nano_seconds),
                "memory": memory_stats(now, c.working_set, None, windows),
                "rootfs": fs_stats(now, DISK, 64 << 10),
                "logs": fs_stats(now, DISK, 4 << 10),
            })
        })
        .collect();
    json!({
        "podRef": {"name": p.name, "namespace": p.namespace, "uid": p.uid},
        "startTime": stamp(p.start),
        "containers": containers,
        "cpu": cpu_stats(now, p.nano_cores(), p.core_nano_seconds()),
        "memory": memory_stats(now, p.working_set(), None, windows),
        "network": {"time": stamp(now), "name": "eth0", "rxBytes": 0, "rxErrors": 0, "txBytes": 0, "txErrors": 0},
        "volume": [],
        "ephemeral-storage": fs_stats(now, DISK, 68 << 10),
    })
}

/// The kubelet's `/stats/summary` of `profile`'s node.
pub fn summary(state: &ApiState, profile: &NodeProfile) -> Result<Value, ApiError> {
    let now = Utc::now();
    let s = measured(state, profile, now)
        .ok_or_else(|| ApiError::Internal(format!("no stats for node {}", profile.name)))?;
    let mut node = json!({
        "nodeName": s.name,
        "systemContainers": [
            {"name": "kubelet", "startTime": stamp(s.start), "cpu": cpu_stats(now, s.nano_cores / 4, s.core_nano_seconds / 4),
             "memory": memory_stats(now, 64 << 20, None, s.windows)},
            {"name": "pods", "startTime": stamp(s.start),
             "cpu": cpu_stats(now, s.pods.iter().map(PodStats::nano_cores).sum(), s.pods.iter().map(PodStats::core_nano_seconds).sum()),
             "memory": memory_stats(now, s.pods.iter().map(PodStats::working_set).sum(), None, s.windows)},
        ],
        "startTime": stamp(s.start),
        "cpu": cpu_stats(now, s.nano_cores, s.core_nano_seconds),
        "memory": memory_stats(now, s.working_set, Some(s.available()), s.windows),
        "network": {"time": stamp(now), "name": "eth0", "rxBytes": 0, "rxErrors": 0, "txBytes": 0, "txErrors": 0,
                    "interfaces": [{"name": "eth0", "rxBytes": 0, "rxErrors": 0, "txBytes": 0, "txErrors": 0}]},
        "fs": fs_stats(now, DISK, 20 << 30),
        "runtime": {"imageFs": fs_stats(now, DISK, 8 << 30), "containerFs": fs_stats(now, DISK, 8 << 30)},
    });
    if !s.windows {
        node["rlimit"] = json!({"time": stamp(now), "maxpid": 4_194_304, "curproc": 300});
    }
    let pods: Vec<Value> = s.pods.iter().map(|p| pod_summary(p, s.windows, now)).collect();
    Ok(json!({"node": node, "pods": pods}))
}

fn node_metrics(state: &ApiState, s: &NodeStats, now: DateTime<Utc>) -> Value {
    let node = state.store.get(resources::core("nodes"), "", &s.name).ok();
    let meta = node
        .as_ref()
        .map(|n| n.value().get("metadata").cloned().unwrap_or_default());
    let labels = meta
        .as_ref()
        .and_then(|m| m.get("labels").cloned())
        .unwrap_or_else(|| json!({}));
    json!({
        "kind": "NodeMetrics", "apiVersion": API_VERSION,
        "metadata": {"name": s.name, "creationTimestamp": stamp(now), "labels": labels},
        "timestamp": stamp(now), "window": WINDOW,
        "usage": {"cpu": cpu(s.nano_cores), "memory": memory(s.working_set)},
    })
}

fn pod_metrics(state: &ApiState, p: &PodStats, now: DateTime<Utc>) -> Value {
    let labels = state
        .store
        .get(resources::core("pods"), &p.namespace, &p.name)
        .ok()
        .and_then(|o| o.value().pointer("/metadata/labels").cloned())
        .unwrap_or_else(|| json!({}));
    let containers: Vec<Value> = p
        .containers
        .iter()
        .map(|c| json!({"name": c.name, "usage": {"cpu": cpu(c.nano_cores), "memory": memory(c.working_set)}}))
        .collect();
    json!({
        "kind": "PodMetrics", "apiVersion": API_VERSION,
        "metadata": {"name": p.name, "namespace": p.namespace, "creationTimestamp": stamp(now), "labels": labels},
        "timestamp": stamp(now), "window": WINDOW, "containers": containers,
    })
}

fn list(kind: &str, items: Vec<Value>) -> Value {
    json!({"kind": kind, "apiVersion": API_VERSION, "metadata": {}, "items": items})
}

fn not_found(resource: &str, name: &str) -> ApiError {
    ApiError::not_found(GROUP, resource, name)
}

/// Serves `rest`, the path segments after `/apis/metrics.k8s.io/v1beta1/`.
pub(crate) fn serve(state: &ApiState, rest: &[&str], q: &Query) -> Result<Response, ApiError> {
    let now = Utc::now();
    let selector = LabelSelector::parse(q.get("labelSelector").unwrap_or(""))
        .map_err(|e| ApiError::BadRequest(format!("unable to parse requirement: {e}")))?;
    let selected = |v: &Value| selector.matches(v.pointer("/metadata/labels").and_then(Value::as_object));
    let body = match rest {
        ["nodes"] => {
            let items = all_measured(state, now)
                .iter()
                .map(|s| node_metrics(state, s, now))
                .filter(|m| selected(m))
                .collect();
            list("NodeMetricsList", items)
        }
        ["nodes", name] => all_measured(state, now)
            .iter()
            .find(|s| s.name == *name)
            .map(|s| node_metrics(state, s, now))
            .ok_or_else(|| not_found("nodes", name))?,
        ["pods"] | ["namespaces", _, "pods"] => {
            let ns = match rest {
                ["namespaces", ns, _] => Some(*ns),
                _ => None,
            };
            let items = all_measured(state, now)
                .iter()
                .flat_map(|s| s.pods.iter())
                .filter(|p| ns.is_none_or(|ns| p.namespace == ns))
                .map(|p| pod_metrics(state, p, now))
                .filter(|m| selected(m))
                .collect();
            list("PodMetricsList", items)
        }
        ["namespaces", ns, "pods", name] => all_measured(state, now)
            .iter()
            .flat_map(|s| s.pods.iter())
            .find(|p| p.namespace == *ns && p.name == *name)
            .map(|p| pod_metrics(state, p, now))
            .ok_or_else(|| not_found("pods", name))?,
        _ => return Err(ApiError::UnknownPath),
    };
    Ok(json_value(StatusCode::OK, &body))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case(1_000_000, "1m")]
    #[case(61_000_000, "61m")]
    #[case(2_000_000_000, "2")]
    #[case(1_500, "1500n")]
    #[case(2_000, "2u")]
    fn cpu_quantities(#[case] n: u64, #[case] text: &str) {
        assert_eq!(cpu(n), text);
    }

    #[rstest]
    #[case(3 << 20, "3Mi")]
    #[case(1536 << 20, "1536Mi")]
    #[case(2 << 30, "2Gi")]
    #[case(1000, "1000")]
    fn memory_quantities(#[case] n: u64, #[case] text: &str) {
        assert_eq!(memory(n), text);
    }
}
