//! The kubelet's memory-pressure eviction as pure decisions: the node's `memory.available`
//! signal against its hard threshold, which pod goes first, and the upstream messages.
//!
//! Which nodes evict is the profile's call ([`NodeProfile::evicts_on_memory_pressure`]: Linux,
//! and Windows kubelets from 1.31 — MEM-EVICTION; KEVD). The signal is capacity minus what the
//! running containers hold. On Windows the kubelet computes it from commit memory
//! (`windows-global-commit-memory`); here every allocation is committed memory, so the two
//! coincide. Soft thresholds and the pressure transition period are not modelled: the
//! condition clears as soon as the signal is back above the threshold.

use crate::config::profile::NodeProfile;
use crate::vocab::quantity::Quantity;

/// The memory one running container holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerUse {
    pub name: String,
    pub bytes: u128,
    /// `resources.requests.memory` (the limit when only that is set), as written and in bytes.
    pub request: Option<(String, u128)>,
}

/// What one pod on the node holds, and what eviction ranks it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodUse {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    pub priority: i64,
    pub containers: Vec<ContainerUse>,
}

impl PodUse {
    fn usage(&self) -> u128 {
        self.containers.iter().map(|c| c.bytes).sum()
    }

    fn request(&self) -> u128 {
        self.containers
            .iter()
            .filter_map(|c| c.request.as_ref().map(|r| r.1))
            .sum()
    }
}

/// The node's hard `memory.available` threshold: as configured (`500Mi`, `5%`) and in bytes.
pub fn threshold(profile: &NodeProfile) -> Option<(String, i128)> {
    let text = profile.eviction_hard.get("memory.available")?;
    let capacity = capacity(profile);
    let bytes = match text.strip_suffix('%') {
        Some(pct) => {
            let pct: f64 = pct.trim().parse().ok()?;
            (capacity as f64 * pct / 100.0) as i128
        }
        None => Quantity::parse(text)?.value(),
    };
    (bytes > 0).then(|| (text.clone(), bytes))
}

/// The node's memory capacity in bytes.
pub fn capacity(profile: &NodeProfile) -> i128 {
    profile
        .capacity
        .get("memory")
        .and_then(|m| Quantity::parse(m))
        .map_or(0, |q| q.value())
}

/// `memory.available`: capacity minus what the pods hold (negative when overcommitted).
pub fn available(profile: &NodeProfile, pods: &[PodUse]) -> i128 {
    let used: u128 = pods.iter().map(PodUse::usage).sum();
    capacity(profile) - i128::try_from(used).unwrap_or(i128::MAX)
}

/// The pod the kubelet evicts first under memory pressure, as upstream ranks them: pods whose
/// usage exceeds their requests, then lower priority, then more usage above the request.
/// `skip` holds pods already being evicted.
pub fn victim<'a>(pods: &'a [PodUse], skip: &dyn Fn(&PodUse) -> bool) -> Option<&'a PodUse> {
    pods.iter().filter(|p| !skip(p) && p.usage() > 0).max_by(|a, b| {
        let key = |p: &PodUse| {
            let over = p.usage() > p.request();
            let above = i128::try_from(p.usage()).unwrap_or(i128::MAX) - i128::try_from(p.request()).unwrap_or(0);
            (over, std::cmp::Reverse(p.priority), above)
        };
        key(a).cmp(&key(b))
    })
}

fn kib(bytes: i128) -> String {
    format!("{}Ki", bytes.div_euclid(1024))
}

/// The eviction message of the pod status and the `Evicted` event (upstream `evictionMessage`).
pub fn message(threshold: &str, available: i128, pod: &PodUse) -> String {
    let mut m = format!(
        "The node was low on resource: memory. Threshold quantity: {threshold}, available: {}. ",
        kib(available)
    );
    for c in &pod.containers {
        let request = c.request.as_ref().map_or(0, |r| r.1);
        if c.bytes > request {
            let text = c.request.as_ref().map_or("0", |r| r.0.as_str());
            m.push_str(&format!(
                "Container {} was using {}, request is {text}, has larger consumption of memory. ",
                c.name,
                kib(i128::try_from(c.bytes).unwrap_or(i128::MAX))
            ));
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::profile::default_node;
    use std::net::Ipv4Addr;

    const MIB: u128 = 1024 * 1024;

    fn pod(name: &str, priority: i64, containers: &[(&str, u128, Option<&str>)]) -> PodUse {
        PodUse {
            uid: format!("uid-{name}"),
            namespace: "default".into(),
            name: name.into(),
            priority,
            containers: containers
                .iter()
                .map(|(n, mib, req)| ContainerUse {
                    name: (*n).into(),
                    bytes: mib * MIB,
                    request: req.map(|r| {
                        let bytes = Quantity::parse(r).map_or(0, |q| u128::try_from(q.value()).unwrap_or(0));
                        (r.to_string(), bytes)
                    }),
                })
                .collect(),
        }
    }

    #[test]
    fn windows_threshold_and_signal() {
        // KEVD: Windows kubelets from 1.31 default to memory.available 500Mi.
        let (_, p) = default_node("win2022-1", Ipv4Addr::new(127, 1, 1, 13));
        assert!(p.evicts_on_memory_pressure());
        assert_eq!(threshold(&p), Some(("500Mi".into(), 500 * 1024 * 1024)));
        let hog = pod("hog", 0, &[("stress", 16 * 1024 - 100, None)]);
        assert_eq!(available(&p, std::slice::from_ref(&hog)), 100 * 1024 * 1024);
    }

    #[test]
    fn older_windows_kubelets_do_not_evict() {
        // MEM-EVICTION: <= 1.30 eviction is not implemented on Windows (W14, W22, WI26).
        let (_, mut p) = default_node("win2022-1", Ipv4Addr::new(127, 1, 1, 13));
        p.kubelet = (1, 30);
        assert!(!p.evicts_on_memory_pressure());
        p.os = crate::config::platform::Os::Linux;
        assert!(p.evicts_on_memory_pressure());
    }

    #[test]
    fn the_pod_over_its_request_goes_first_then_low_priority_then_usage() {
        let within = pod("within", 0, &[("a", 900, Some("1Gi"))]);
        let small = pod("small", 0, &[("a", 100, None)]);
        let big = pod("big", 0, &[("a", 800, None)]);
        let important = pod("important", 1000, &[("a", 5000, None)]);
        let pods = vec![within.clone(), small.clone(), big.clone(), important.clone()];
        assert_eq!(victim(&pods, &|_| false).map(|p| p.name.as_str()), Some("big"));
        assert_eq!(
            victim(&pods, &|p| p.name == "big").map(|p| p.name.as_str()),
            Some("small")
        );
        assert_eq!(
            victim(&pods, &|p| p.name != "important" && p.name != "within").map(|p| p.name.as_str()),
            Some("important")
        );
        assert_eq!(victim(&[within], &|_| false).map(|p| p.name.as_str()), Some("within"));
    }

    #[test]
    fn message_as_upstream_prints_it() {
        let p = pod(
            "hog",
            0,
            &[("stress", 2048, None), ("side", 0, None), ("fit", 10, Some("64Mi"))],
        );
        assert_eq!(
            message("500Mi", 300 * 1024 * 1024, &p),
            "The node was low on resource: memory. Threshold quantity: 500Mi, available: 307200Ki. \
             Container stress was using 2097152Ki, request is 0, has larger consumption of memory. "
        );
    }

    #[test]
    fn percentage_thresholds() {
        let (_, mut p) = default_node("linux-1", Ipv4Addr::new(127, 1, 1, 11));
        p.eviction_hard.insert("memory.available".into(), "10%".into());
        let cap = capacity(&p);
        assert_eq!(threshold(&p).map(|t| t.1), Some(cap / 10));
        p.eviction_hard.remove("memory.available");
        assert_eq!(threshold(&p), None);
    }
}
