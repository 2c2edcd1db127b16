//! What a simulated kubelet measures of its node, pods and containers: the numbers behind the
//! kubelet's summary API (`/stats/summary`, NODE-STATS) and the resource metrics API
//! (`metrics.k8s.io`, read by `kubectl top`), which metrics-server fills from that summary
//! (<https://kubernetes.io/docs/reference/instrumentation/node-metrics/>,
//! <https://github.com/kubernetes-sigs/metrics-server/blob/master/FAQ.md>: node usage is the
//! node's working set, pod usage the sum of its containers').
//!
//! Simulation: a container's memory working set is what it holds (the allocations of memory
//! tools, as eviction counts them) plus a base footprint; CPU is a small constant rate per
//! container, accumulated since the container started; the node adds its system daemons. The
//! constants are the simulation's, not upstream numbers.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::config::profile::NodeProfile;
use crate::node::kubelet::eviction::PodUse;
use crate::store::{Store, resources};
use crate::vocab::json;
use crate::vocab::quantity::Quantity;

const MIB: u64 = 1024 * 1024;

/// One running container's usage.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerStats {
    pub name: String,
    pub start: DateTime<Utc>,
    /// CPU in nanocores now, and core-nanoseconds since the start.
    pub nano_cores: u64,
    pub core_nano_seconds: u64,
    pub working_set: u64,
}

/// One pod's usage, by container.
#[derive(Debug, Clone, PartialEq)]
pub struct PodStats {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub start: DateTime<Utc>,
    pub containers: Vec<ContainerStats>,
}

impl PodStats {
    pub fn nano_cores(&self) -> u64 {
        self.containers.iter().map(|c| c.nano_cores).sum()
    }

    pub fn core_nano_seconds(&self) -> u64 {
        self.containers.iter().map(|c| c.core_nano_seconds).sum()
    }

    pub fn working_set(&self) -> u64 {
        self.containers.iter().map(|c| c.working_set).sum()
    }
}

/// One node's usage.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeStats {
    pub name: String,
    pub windows: bool,
    pub start: DateTime<Utc>,
    pub memory_capacity: u64,
    pub nano_cores: u64,
    pub core_nano_seconds: u64,
    pub working_set: u64,
    pub pods: Vec<PodStats>,
}

impl NodeStats {
    pub fn available(&self) -> u64 {
        self.memory_capacity.saturating_sub(self.working_set)
    }
}

/// Base working set of one container and CPU rate, by OS: a Windows container runs more of the
/// OS in its job object than a Linux process does.
fn container_base(windows: bool) -> (u64, u64) {
    if windows {
        (24 * MIB, 2_000_000)
    } else {
        (3 * MIB, 1_000_000)
    }
}

/// The node's own daemons (kubelet, runtime, proxy, OS services).
fn system_base(windows: bool) -> (u64, u64) {
    if windows {
        (1536 * MIB, 120_000_000)
    } else {
        (384 * MIB, 60_000_000)
    }
}

fn time(v: &Value, ptr: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(json::str(v, ptr))
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn elapsed_ns(from: DateTime<Utc>, now: DateTime<Utc>) -> u64 {
    u64::try_from((now - from).num_nanoseconds().unwrap_or(0)).unwrap_or(0)
}

/// What `profile`'s kubelet measures at `now`; `held` is the memory its pods' containers hold.
pub fn measure(store: &Store, profile: &NodeProfile, held: &[PodUse], now: DateTime<Utc>) -> Option<NodeStats> {
    let node = store.get(resources::core("nodes"), "", &profile.name).ok()?;
    let windows = profile.is_windows();
    let (base_mem, base_cpu) = container_base(windows);
    let mut pods = Vec::new();
    for pod in store.list(resources::core("pods"), None).0 {
        if pod.node_name() != profile.name {
            continue;
        }
        let v = pod.value();
        if json::str(v, "/status/phase") != "Running" {
            continue;
        }
        let held_by = held.iter().find(|p| p.uid == pod.uid());
        let containers: Vec<ContainerStats> = v
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| {
                let start = time(c, "/state/running/startedAt")?;
                let name = json::str(c, "/name").to_string();
                let holds = held_by
                    .and_then(|p| p.containers.iter().find(|h| h.name == name))
                    .map_or(0, |h| u64::try_from(h.bytes).unwrap_or(u64::MAX));
                // At least one nanosecond of CPU once running (NODE-STATS wants it > 0).
                let cpu_ns = (elapsed_ns(start, now) / 1_000_000_000).max(1) * base_cpu;
                Some(ContainerStats {
                    name,
                    start,
                    nano_cores: base_cpu,
                    core_nano_seconds: cpu_ns,
                    working_set: base_mem.saturating_add(holds),
                })
            })
            .collect();
        if containers.is_empty() {
            continue;
        }
        pods.push(PodStats {
            namespace: pod.namespace().to_string(),
            name: pod.name().to_string(),
            uid: pod.uid().to_string(),
            start: time(v, "/status/startTime").unwrap_or(now),
            containers,
        });
    }
    let (sys_mem, sys_cpu) = system_base(windows);
    let start = time(node.value(), "/metadata/creationTimestamp").unwrap_or(now);
    let pod_cpu: u64 = pods.iter().map(PodStats::nano_cores).sum();
    let pod_cpu_ns: u64 = pods.iter().map(PodStats::core_nano_seconds).sum();
    let pod_mem: u64 = pods.iter().map(PodStats::working_set).sum();
    let memory_capacity = profile
        .capacity
        .get("memory")
        .and_then(|m| Quantity::parse(m))
        .and_then(|q| u64::try_from(q.value()).ok())
        .unwrap_or(0);
    Some(NodeStats {
        name: profile.name.clone(),
        windows,
        start,
        memory_capacity,
        nano_cores: sys_cpu + pod_cpu,
        core_nano_seconds: (elapsed_ns(start, now) / 1_000_000_000).max(1) * sys_cpu + pod_cpu_ns,
        working_set: sys_mem.saturating_add(pod_mem),
        pods,
    })
}
