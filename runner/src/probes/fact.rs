//! `fact`: a fact read from the cluster's own objects (node labels and versions, the kubelet's
//! configuration, the network's configuration) compared with the documented state.

use serde_json::Value;

use crate::catalogue::suite::{Expectation, FactCheck, FailureClass};
use mixcheck_reports::Os;

use crate::cluster::facts::{ClusterFacts, ClusterNode, major_minor, quantity_bytes, supported_builds};
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::transport::Observation;

/// The Windows Server 2019 revision of KB4489899 (OS Build 17763.379, March 2019), which
/// win-overlay needs; it includes KB4482887 (17763.348), which kube-proxy's overlay mode needs.
const OVERLAY_KB_REVISION: u32 = 379;

/// Judges the fact on the pair's node against the expectation's `limit`, if it has one.
pub fn observe(ctx: &Ctx<'_>, case: &Case<'_>, fact: FactCheck, e: &Expectation) -> Probed {
    let (_, node) = match case.node(ctx.facts) {
        Ok(n) => n,
        Err(p) => return p.into(),
    };
    match judge(fact, node, ctx.facts, e.limit.as_deref()) {
        Ok((true, seen)) => Probed::seen(Observation::Reached(seen.clone()), format!("{}: {seen}", node.name)),
        Ok((false, seen)) => Probed::seen(
            Observation::Failed(FailureClass::Mismatch),
            format!("{}: {seen}", node.name),
        ),
        Err(fact) => Probed::Unknown(format!("unknown: {fact}")),
    }
}

/// A fact the run's host probe read on the node (`crate::probes::hostfacts`), or which fact
/// is unknown and why: no HostProcess pod can run there, no host probe ran there, or its
/// command failed.
fn host_read<'a, T>(node: &ClusterNode, read: Option<&'a Result<T, String>>, what: &str) -> Result<&'a T, String> {
    if node.host_process() == Some(false) {
        return Err(format!(
            "{what} on {}: HostProcess pods are not available there (they need Kubernetes 1.23+ and containerd 1.6+), no documented in-cluster way to read it",
            node.name
        ));
    }
    read.ok_or_else(|| {
        format!(
            "{what} on {}: read through the run's host probe, which runs on HostProcess-capable nodes given every check",
            node.name
        )
    })?
    .as_ref()
    .map_err(|why| format!("{what}: {why}"))
}

/// What a fact judge finds: whether the documented state holds and what was seen, or Err
/// naming a fact that could not be read.
type Judged = Result<(bool, String), String>;

/// What a `fact` probe found on one node: whether the documented state holds, and what was
/// seen. Err names a fact that could not be read.
pub fn judge(check: FactCheck, node: &ClusterNode, facts: &ClusterFacts, limit: Option<&str>) -> Judged {
    use crate::catalogue::suite::FactCheck as F;
    match check {
        F::OsLabels => os_labels(node),
        F::BuildLabel => build_label(node),
        F::OsSupported => os_supported(node, facts),
        F::ControlPlaneLinux => control_plane_linux(node),
        F::KubeletSkew => kubelet_skew(node, facts, limit),
        F::KubeProxySkew => kube_proxy_skew(node, facts, limit),
        F::Runtime => runtime(node, facts),
        F::SystemReserved => system_reserved(node, limit),
        F::AllocatableMath => allocatable_math(node),
        F::EnforceNodeAllocatable => enforce_node_allocatable(node),
        F::EvictionThreshold => eviction_threshold(node),
        F::PressureConditions => pressure_conditions(node),
        F::WindowsTaint => windows_taint(node),
        F::HostProcess => host_process(node),
        F::OverlayKb => overlay_kb(node),
        F::HnsNetwork => hns_network(node, facts),
        F::KubeletPriority => kubelet_priority(node, facts),
        F::CniCheck => cni_check(node, facts),
        F::ProblemDetector => problem_detector(node, facts),
        F::SourceVip => source_vip(node, facts),
        F::DsrConfig => dsr_config(node, facts),
        F::RuntimeClasses => runtime_classes(facts),
        F::PauseImage => Err("the sandbox (pause) image: no suite reads it yet".to_string()),
    }
}

/// The skew a `limit` allows (a number of minor versions), else `default`.
fn skew_limit(limit: Option<&str>, default: u32) -> u32 {
    limit.and_then(|l| l.parse::<u32>().ok()).unwrap_or(default)
}

/// The node's kubelet configuration (configz, read through the node proxy), or the fact that
/// is unknown.
fn configz(node: &ClusterNode) -> Result<&Value, String> {
    node.configz
        .as_ref()
        .ok_or_else(|| format!("the kubelet configz of {} (node proxy)", node.name))
}

/// The bytes of a quantity string in the kubelet configuration (0 when absent or unreadable).
fn quantity(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_str).and_then(quantity_bytes).unwrap_or(0)
}

/// Bytes written in GiB with two decimals.
fn gib(b: u64) -> String {
    format!("{:.2}Gi", b as f64 / f64::from(1u32 << 30))
}

/// OS-LABELS: the node carries `kubernetes.io/os` and `kubernetes.io/arch`.
fn os_labels(node: &ClusterNode) -> Judged {
    let os = node.labels.get("kubernetes.io/os");
    let arch = node.labels.get("kubernetes.io/arch");
    Ok((
        os.is_some() && arch.is_some(),
        format!(
            "kubernetes.io/os={} kubernetes.io/arch={}",
            os.map_or("(missing)", String::as_str),
            arch.map_or("(missing)", String::as_str)
        ),
    ))
}

/// The `node.kubernetes.io/windows-build` label matches the first three parts of the kernel
/// version.
fn build_label(node: &ClusterNode) -> Judged {
    let label = node
        .labels
        .get("node.kubernetes.io/windows-build")
        .cloned()
        .unwrap_or_default();
    let kernel: Vec<&str> = node.kernel.split('.').take(3).collect();
    let expected = kernel.join(".");
    Ok((
        label == expected,
        format!("label node.kubernetes.io/windows-build={label}, kernel {}", node.kernel),
    ))
}

/// The node's Windows build is on the documented list for the cluster's Kubernetes version.
fn os_supported(node: &ClusterNode, facts: &ClusterFacts) -> Judged {
    let build = node.build.ok_or("the node's Windows build")?;
    let list = supported_builds(facts.version).ok_or_else(|| {
        format!(
            "the Windows OS list of Kubernetes {}.{} docs",
            facts.version.0, facts.version.1
        )
    })?;
    Ok((
        list.contains(&build),
        format!(
            "build {build}; documented for {}.{}: {}",
            facts.version.0,
            facts.version.1,
            list.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ),
    ))
}

/// A control-plane node runs Linux.
fn control_plane_linux(node: &ClusterNode) -> Judged {
    Ok((
        !node.control_plane || node.os == Os::Linux,
        format!(
            "{} node, {}",
            node.os,
            if node.control_plane { "control plane" } else { "worker" }
        ),
    ))
}

/// Whether a component of version `v` is within the allowed skew of the API server's
/// `(major, server)`: same major, not newer, at most `allowed` minor versions older.
fn within_skew(v: (u32, u32), (major, server): (u32, u32), allowed: u32) -> bool {
    v.0 == major && v.1 <= server && server - v.1 <= allowed
}

/// The kubelet is within the documented version skew of the API server.
fn kubelet_skew(node: &ClusterNode, facts: &ClusterFacts, limit: Option<&str>) -> Judged {
    let k = node.kubelet.ok_or("the node's kubelet version")?;
    let (major, server) = facts.version;
    let allowed = skew_limit(limit, if k.1 < 25 { 2 } else { 3 });
    Ok((
        within_skew(k, facts.version, allowed),
        format!(
            "kubelet {}.{}, API server {}.{} (allowed: up to {allowed} minor versions older)",
            k.0, k.1, major, server
        ),
    ))
}

/// kube-proxy is within the documented version skew of the API server.
fn kube_proxy_skew(node: &ClusterNode, facts: &ClusterFacts, limit: Option<&str>) -> Judged {
    // The node's own kube-proxy (read on a Windows node, where it is a node service or
    // a pod of its own DaemonSet), else the cluster's kube-proxy DaemonSet.
    let kp = facts
        .report
        .nodes
        .get(&node.name)
        .and_then(|n| n.kube_proxy_version.as_ref())
        .or(facts.report.kube_proxy_version.as_ref())
        .and_then(|f| major_minor(&f.value))
        .ok_or("the kube-proxy version (kube-proxy DaemonSet image, or kube-proxy.exe --version on the node)")?;
    let (major, server) = facts.version;
    let allowed = skew_limit(limit, if kp.1 < 25 { 2 } else { 3 });
    // Beside its kubelet: the same minor before 1.28 ("kube-proxy must be the same minor
    // version as kubelet on the node"), within three minors either way from 1.28 (WSKEW).
    let kubelet = node
        .kubelet
        .ok_or("the node's kubelet version (kube-proxy's skew is judged against it too)")?;
    let same_minor_era = facts.version < (1, 28);
    let beside = kp.0 == kubelet.0
        && if same_minor_era {
            kp.1 == kubelet.1
        } else {
            kp.1.abs_diff(kubelet.1) <= 3
        };
    Ok((
        within_skew(kp, facts.version, allowed) && beside,
        format!(
            "kube-proxy {}.{}, API server {}.{}, kubelet {}.{} ({})",
            kp.0,
            kp.1,
            major,
            server,
            kubelet.0,
            kubelet.1,
            if same_minor_era {
                "before 1.28 kube-proxy must be the kubelet's minor"
            } else {
                "kube-proxy within three minors of its kubelet"
            }
        ),
    ))
}

/// The node's container runtime is one the cluster's Kubernetes version supports.
fn runtime(node: &ClusterNode, facts: &ClusterFacts) -> Judged {
    let (kind, v) = node.runtime.clone().ok_or("the node's container runtime")?;
    let k8s = facts.version;
    let ok = match kind.as_str() {
        // The kubelet needs the v1 CRI API from 1.26 (containerd 1.6+; KCRI), 1.4+ before.
        "containerd" if k8s >= (1, 26) => v >= (1, 6),
        "containerd" => v >= (1, 4) || k8s < (1, 20),
        "docker" => k8s < (1, 24) || node.os == Os::Windows,
        _ => false,
    };
    Ok((ok, format!("{kind} {}.{} on Kubernetes {}.{}", v.0, v.1, k8s.0, k8s.1)))
}

/// The kubelet reserves at least the documented memory for the system (`limit`, else 2Gi).
fn system_reserved(node: &ClusterNode, limit: Option<&str>) -> Judged {
    let c = configz(node)?;
    let bytes = quantity(c.pointer("/kubeletconfig/systemReserved/memory"));
    let want = limit.and_then(quantity_bytes).unwrap_or(2 << 30);
    Ok((
        bytes >= want,
        format!(
            "systemReserved.memory = {} (documented: at least {})",
            gib(bytes),
            gib(want)
        ),
    ))
}

/// The node's allocatable memory is its capacity less the reservations and the hard eviction
/// threshold (within 1Mi).
fn allocatable_math(node: &ClusterNode) -> Judged {
    let c = configz(node)?;
    let (cap, alloc) = (
        node.memory.0.ok_or("the node's memory capacity")?,
        node.memory.1.ok_or("the node's allocatable memory")?,
    );
    let sys = quantity(c.pointer("/kubeletconfig/systemReserved/memory"));
    let kube = quantity(c.pointer("/kubeletconfig/kubeReserved/memory"));
    let hard = c
        .pointer("/kubeletconfig/evictionHard/memory.available")
        .and_then(Value::as_str)
        .map_or(0, |t| {
            t.strip_suffix('%')
                .and_then(|p| p.parse::<f64>().ok())
                .map_or_else(|| quantity_bytes(t).unwrap_or(0), |p| (cap as f64 * p / 100.0) as u64)
        });
    let expected = cap.saturating_sub(sys + kube + hard);
    let diff = expected.abs_diff(alloc);
    Ok((
        diff <= 1 << 20,
        format!(
            "allocatable {alloc} = capacity {cap} − systemReserved {sys} − kubeReserved {kube} − evictionHard {hard}? (expected {expected})"
        ),
    ))
}

/// The kubelet enforces node allocatable (Linux: `pods`).
fn enforce_node_allocatable(node: &ClusterNode) -> Judged {
    let c = configz(node)?;
    let v = c
        .pointer("/kubeletconfig/enforceNodeAllocatable")
        .cloned()
        .unwrap_or(Value::Null);
    let enforced = v.as_array().is_some_and(|a| !a.is_empty());
    Ok((enforced, format!("enforceNodeAllocatable = {v}")))
}

/// The kubelet sets a hard eviction threshold for memory.
fn eviction_threshold(node: &ClusterNode) -> Judged {
    let c = configz(node)?;
    let v = c
        .pointer("/kubeletconfig/evictionHard/memory.available")
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok((
        v.is_some(),
        format!(
            "evictionHard memory.available = {}",
            v.unwrap_or_else(|| "(none)".into())
        ),
    ))
}

/// The node reports the MemoryPressure, DiskPressure and Ready conditions.
fn pressure_conditions(node: &ClusterNode) -> Judged {
    let has = |t: &str| node.conditions.contains_key(t);
    Ok((
        has("MemoryPressure") && has("DiskPressure") && has("Ready"),
        format!(
            "conditions: {}",
            node.conditions.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
    ))
}

/// Taints the node lifecycle controller and the cloud providers add and remove on their own
/// (kubernetes `pkg/apis/core/well_known_taints.go`, the cluster autoscaler's deletion mark):
/// they say what state a node is in, not where Linux workloads may go.
const TRANSIENT_TAINTS: &[&str] = &[
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/network-unavailable",
    "node.kubernetes.io/out-of-service",
    "node.cloudprovider.kubernetes.io/uninitialized",
    "node.cloudprovider.kubernetes.io/shutdown",
    "ToBeDeletedByClusterAutoscaler",
    "DeletionCandidateOfClusterAutoscaler",
];

/// A Windows node carries a NoSchedule or NoExecute taint that keeps Linux pods without a
/// toleration off it: the documented `os=windows:NoSchedule`, GKE's
/// `node.kubernetes.io/os=windows:NoSchedule` ("Windows Server node pools"), or any other
/// placement taint — never one of the node-state taints, which come and go.
fn windows_taint(node: &ClusterNode) -> Judged {
    let tainted = node.taints.iter().any(|t| {
        matches!(t.effect.as_str(), "NoSchedule" | "NoExecute") && !TRANSIENT_TAINTS.contains(&t.key.as_str())
    });
    Ok((
        tainted || node.os == Os::Linux,
        format!(
            "taints: {}",
            node.taints
                .iter()
                .map(|t| format!("{}={}:{}", t.key, t.value.clone().unwrap_or_default(), t.effect))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

/// HostProcess pods can run on the node (its kubelet and runtime versions).
fn host_process(node: &ClusterNode) -> Judged {
    let hp = node.host_process().ok_or("the node's kubelet and runtime versions")?;
    let kubelet = node.kubelet.map_or("unknown".to_string(), |(a, b)| format!("{a}.{b}"));
    let runtime = node
        .runtime
        .as_ref()
        .map_or("unknown".to_string(), |(name, (a, b))| format!("{name} {a}.{b}"));
    Ok((hp, format!("kubelet {kubelet}, runtime {runtime}")))
}

/// NET-OVERLAY-KB: a Windows Server 2019 node's revision includes KB4489899.
fn overlay_kb(node: &ClusterNode) -> Judged {
    let build = node.build.ok_or("the node's Windows build")?;
    let revision = node
        .kernel
        .split('.')
        .nth(3)
        .and_then(|r| r.parse::<u32>().ok())
        .ok_or_else(|| format!("the revision in {}'s kernel version {}", node.name, node.kernel))?;
    Ok((
        build != 17763 || revision >= OVERLAY_KB_REVISION,
        format!(
            "kernel {} (KB4489899 is 10.0.17763.{OVERLAY_KB_REVISION}, KB4482887 10.0.17763.348)",
            node.kernel
        ),
    ))
}

/// NET-HNS-NETWORK-PRESENT: the host probe lists a pod network among the node's HNS networks.
fn hns_network(node: &ClusterNode, facts: &ClusterFacts) -> Judged {
    let read = host_read(
        node,
        facts.hns_networks.get(&node.name),
        "the node's HNS networks (Get-HnsNetwork)",
    )?;
    let types = &read.types;
    let pod: Vec<&str> = types
        .iter()
        .map(String::as_str)
        .filter(|t| crate::probes::hostfacts::mode_of(t).is_some())
        .collect();
    let seen = if pod.is_empty() {
        format!(
            "{} lists {}: no pod network (L2Bridge, Overlay, L2Tunnel or Transparent)",
            read.via,
            if types.is_empty() {
                "nothing".to_string()
            } else {
                types.join(", ")
            }
        )
    } else {
        let via = match read.via {
            "Get-HnsNetwork" => String::new(),
            other => format!(" ({other})"),
        };
        format!("HNS network of type {}{via}", pod.join(", "))
    };
    Ok((!pod.is_empty(), seen))
}

/// CPU-KUBELET-PRIORITY: kubelet.exe runs above the normal priority class.
fn kubelet_priority(node: &ClusterNode, facts: &ClusterFacts) -> Judged {
    let line = host_read(
        node,
        facts.kubelet_cmdlines.get(&node.name),
        "the kubelet's command line (Win32_Process; no API object shows --windows-priorityclass)",
    )?;
    if line.is_empty() {
        return Err("the kubelet's command line: no kubelet.exe process on the host".into());
    }
    let class = crate::probes::hostfacts::flag(line, "windows-priorityclass");
    let raised = class.is_some_and(|c| {
        [
            "ABOVE_NORMAL_PRIORITY_CLASS",
            "HIGH_PRIORITY_CLASS",
            "REALTIME_PRIORITY_CLASS",
        ]
        .contains(&c.trim_matches('"').to_ascii_uppercase().as_str())
    });
    Ok((
        raised,
        match class {
            Some(c) => format!("kubelet.exe --windows-priorityclass={c}"),
            None => "kubelet.exe runs without --windows-priorityclass (NORMAL_PRIORITY_CLASS)".into(),
        },
    ))
}

/// The plugin flannel delegates to on the node and what was seen, as read on the host.
fn flannel_delegate(node: &ClusterNode, facts: &ClusterFacts) -> Result<(String, String), String> {
    // Where the node cannot be read the delegate is unknown: current sig-windows-tools flannel
    // delegates VXLAN to sdnoverlay, the 2019 scripts to win-overlay, so flannel's backend does
    // not decide it (third documentation review, row 12).
    let d = host_read(
        node,
        facts.flannel_delegates.get(&node.name),
        "the plugin flannel's CNI configuration delegates to",
    )?;
    Ok((
        d.delegate.clone(),
        format!(
            "{}: flannel delegates to {}{}",
            d.path,
            d.delegate,
            d.cni_version
                .as_deref()
                .map(|v| format!(" (cniVersion {v})"))
                .unwrap_or_default()
        ),
    ))
}

/// NET-CNI-SPEC-CHECK: the documented limitation (no CNI CHECK) holds for the plugin flannel
/// delegates to.
fn cni_check(node: &ClusterNode, facts: &ClusterFacts) -> Judged {
    let (delegate, seen) = flannel_delegate(node, facts)?;
    // win-bridge and win-overlay lack CHECK (W14, WNET; upstream's cmdCheck is still a
    // TODO in containernetworking/plugins): the documented limitation holds. Another
    // delegate is not what the documentation speaks of.
    if !matches!(delegate.as_str(), "win-bridge" | "win-overlay") {
        return Err(format!(
            "whether {delegate} implements CNI CHECK ({seen}; the documentation speaks of win-bridge and win-overlay only)"
        ));
    }
    Ok((false, seen))
}

/// NET-FLANNEL-REJOIN (a light check): the source VIP kube-proxy keeps on the node lies in the
/// node's pod CIDR; after a re-join with a new subnet the file still holds the old subnet's
/// address (W14, WDBG: delete it). A node that keeps no such file has nothing to go stale.
fn source_vip(node: &ClusterNode, facts: &ClusterFacts) -> Judged {
    let vip = host_read(
        node,
        facts.source_vips.get(&node.name),
        "kube-proxy's source VIP file (SourceVip.json)",
    )?;
    let Some(vip) = vip else {
        return Ok((
            true,
            "no SourceVip.json (C:\\sourcevip, C:\\k): the node keeps no source VIP that could go stale".to_string(),
        ));
    };
    let cidr = facts
        .report
        .nodes
        .get(&node.name)
        .and_then(|n| n.pod_cidr.as_ref())
        .map(|f| f.value.clone())
        .ok_or_else(|| format!("the pod CIDR of {} (spec.podCIDR)", node.name))?;
    let inside = ipv4_in(&vip.ip, &cidr).ok_or_else(|| format!("whether {} lies in {cidr}", vip.ip))?;
    Ok((
        inside,
        if inside {
            format!("{}: source VIP {} in the node's pod CIDR {cidr}", vip.path, vip.ip)
        } else {
            format!(
                "{}: source VIP {} outside the node's pod CIDR {cidr} (kept from the subnet before a re-join)",
                vip.path, vip.ip
            )
        },
    ))
}

/// Whether IPv4 `ip` lies in `cidr`; None when either does not parse.
fn ipv4_in(ip: &str, cidr: &str) -> Option<bool> {
    let ip: std::net::Ipv4Addr = ip.parse().ok()?;
    let (net, bits) = cidr.split_once('/')?;
    let net: std::net::Ipv4Addr = net.parse().ok()?;
    let bits: u32 = bits.parse().ok().filter(|b| *b <= 32)?;
    let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
    Some(u32::from(ip) & mask == u32::from(net) & mask)
}

/// The node conditions the kubelet itself reports (`pkg/kubelet/nodestatus/setters.go`) and
/// `NetworkUnavailable`, which the network's route controller or CNI sets: any other type is
/// reported by another agent on the node.
const KUBELET_CONDITIONS: [&str; 5] = [
    "Ready",
    "MemoryPressure",
    "DiskPressure",
    "PIDPressure",
    "NetworkUnavailable",
];

/// The conditions of `node` that a problem detector reports, `Type=Status`.
fn detector_conditions(node: &ClusterNode) -> Vec<String> {
    node.conditions
        .iter()
        .filter(|(ty, _)| !KUBELET_CONDITIONS.contains(&ty.as_str()))
        .map(|(ty, status)| format!("{ty}={status}"))
        .collect()
}

/// NODE-PROBLEM-DETECTOR (informational): whether a problem detector reports conditions on the
/// node, and on which other nodes one does (an optional add-on: Linux-only at 1.14, W14;
/// preliminary Windows support later, WI31; AKS enables it on Linux nodes only).
fn problem_detector(node: &ClusterNode, facts: &ClusterFacts) -> Judged {
    let own = detector_conditions(node);
    if !own.is_empty() {
        return Ok((true, format!("a problem detector reports {}", own.join(", "))));
    }
    let elsewhere: Vec<&str> = facts
        .nodes
        .iter()
        .filter(|n| n.name != node.name && !detector_conditions(n).is_empty())
        .map(|n| n.name.as_str())
        .collect();
    let others = match elsewhere.as_slice() {
        [] => "nor on any other node".to_string(),
        [one] => format!("one reports on {one}"),
        many => format!("one reports on {} other nodes ({}, …)", many.len(), many[0]),
    };
    Ok((
        false,
        format!(
            "no condition beyond the kubelet's own ({}); {others}",
            KUBELET_CONDITIONS[..4].join(", ")
        ),
    ))
}

/// NET-DSR: DSR only on a build that has it, with the WinDSR gate where the version needs it.
fn dsr_config(node: &ClusterNode, facts: &ClusterFacts) -> Judged {
    let dsr = facts
        .dsr
        .as_ref()
        .ok_or("whether the Windows kube-proxy runs with DSR (kube-proxy flags or ConfigMap)")?;
    let build = node.build.ok_or("the node's Windows build")?;
    // 1.14–1.32 need the WinDSR gate; 1.33 turned it on by default; 1.34 made it GA.
    let gate_needed = facts.version < (1, 33);
    let gate = facts.win_dsr_gate.as_ref().map(|g| g.value);
    let gate_ok = !gate_needed || gate == Some(true);
    Ok((
        !dsr.value || (build >= 17763 && gate_ok),
        format!(
            "enableDSR={} ({}), WinDSR gate {} on Kubernetes {}.{}, build {build}",
            dsr.value,
            dsr.source,
            match gate {
                Some(g) => g.to_string(),
                None => "not set".into(),
            },
            facts.version.0,
            facts.version.1
        ),
    ))
}

/// SCHED-RUNTIMECLASS: every RuntimeClass that selects Windows nodes admits some node.
fn runtime_classes(facts: &ClusterFacts) -> Judged {
    let classes = facts.runtime_classes.as_ref().map_err(Clone::clone)?;
    let windows: Vec<_> = classes
        .iter()
        .filter(|rc| rc.node_selector.get("kubernetes.io/os").map(String::as_str) == Some("windows"))
        .collect();
    let stranded: Vec<&str> = windows
        .iter()
        .filter(|rc| !facts.nodes.iter().any(|n| rc.admits(n)))
        .map(|rc| rc.name.as_str())
        .collect();
    let seen = if windows.is_empty() {
        format!(
            "no RuntimeClass selects Windows nodes ({} RuntimeClass{} in all)",
            classes.len(),
            if classes.len() == 1 { "" } else { "es" }
        )
    } else if stranded.is_empty() {
        let names: Vec<&str> = windows.iter().map(|rc| rc.name.as_str()).collect();
        format!("every Windows RuntimeClass admits a node: {}", names.join(", "))
    } else {
        format!(
            "no node matches the scheduling block (selector and tolerations) of: {}",
            stranded.join(", ")
        )
    };
    Ok((stranded.is_empty(), seen))
}

#[cfg(test)]
mod tests {

    use mixcheck_reports::Fact;

    use crate::cluster::facts::{RuntimeClassFact, build_of, dsr_in_config};
    use rstest::rstest;

    use super::*;

    fn windows_node(kernel: &str) -> ClusterNode {
        ClusterNode {
            build: build_of(kernel),
            kernel: kernel.into(),
            ..ClusterNode::sample("win-1", Os::Windows, "10.0.0.5")
        }
    }

    fn cluster(version: (u32, u32), dsr: Option<bool>, gate: Option<bool>) -> ClusterFacts {
        ClusterFacts {
            version,
            dsr: dsr.map(|d| Fact::new(d, "configmap kube-system/kube-proxy-windows winkernel.enableDSR")),
            win_dsr_gate: gate.map(|g| Fact::new(g, "configmap kube-system/kube-proxy-windows featureGates.WinDSR")),
            ..ClusterFacts::of_nodes(Vec::new())
        }
    }

    // NET-OVERLAY-KB (W14, W20, WN17): WS2019 needs KB4489899 = 10.0.17763.379 or later.
    #[rstest]
    #[case::before_the_kb("10.0.17763.316", Ok(false))]
    #[case::kb4482887_only("10.0.17763.348", Ok(false))]
    #[case::kb4489899("10.0.17763.379", Ok(true))]
    #[case::later_update("10.0.17763.6414", Ok(true))]
    #[case::ws2022_is_not_concerned("10.0.20348.100", Ok(true))]
    #[case::no_revision("10.0.17763", Err(()))]
    fn overlay_updates_by_revision(#[case] kernel: &str, #[case] want: Result<bool, ()>) {
        let got = judge(
            FactCheck::OverlayKb,
            &windows_node(kernel),
            &cluster((1, 32), None, None),
            None,
        );
        assert_eq!(got.map(|(ok, _)| ok).map_err(|_| ()), want);
    }

    // NET-DSR (W20, WNET, GH #130876/#132108): WS2019+; 1.14–1.32 need WinDSR=true; 1.33 on by default.
    #[rstest]
    #[case::off((1, 32), Some(false), None, "10.0.17763.6414", Ok(true))]
    #[case::on_with_gate((1, 32), Some(true), Some(true), "10.0.20348.2762", Ok(true))]
    #[case::on_without_gate((1, 32), Some(true), None, "10.0.20348.2762", Ok(false))]
    #[case::gate_off((1, 30), Some(true), Some(false), "10.0.17763.6414", Ok(false))]
    #[case::default_on_from_1_33((1, 33), Some(true), None, "10.0.20348.2762", Ok(true))]
    #[case::ws2016_has_no_dsr((1, 32), Some(true), Some(true), "10.0.14393.7428", Ok(false))]
    #[case::unknown((1, 32), None, None, "10.0.17763.6414", Err(()))]
    fn dsr_configuration(
        #[case] version: (u32, u32),
        #[case] dsr: Option<bool>,
        #[case] gate: Option<bool>,
        #[case] kernel: &str,
        #[case] want: Result<bool, ()>,
    ) {
        let got = judge(
            FactCheck::DsrConfig,
            &windows_node(kernel),
            &cluster(version, dsr, gate),
            None,
        );
        assert_eq!(got.map(|(ok, _)| ok).map_err(|_| ()), want);
    }

    // NET-CNI-SPEC-CHECK (W14, WNET): win-bridge and win-overlay lack CHECK. The node's file
    // decides; without a reading, flannel's backend (its Windows scripts' delegate); another
    // delegate, or an unknown mode, is not judged.
    #[rstest]
    #[case::read_on_the_node(
        Some(Ok("win-overlay")),
        None,
        Ok("C:\\etc\\cni\\net.d\\10-flannel.conf: flannel delegates to win-overlay (cniVersion 0.3.1)")
    )]
    #[case::other_delegate(
        Some(Ok("sdnbridge")),
        Some("l2bridge"),
        Err("whether sdnbridge implements CNI CHECK")
    )]
    #[case::from_the_backend_is_not_assumed(None, Some("l2bridge"), Err("host probe"))]
    #[case::failed_read_is_not_assumed(Some(Err("not run: exit code 1")), Some("overlay"), Err("not run: exit code 1"))]
    #[case::nothing_known(Some(Err("not run: exit code 1")), None, Err("not run: exit code 1"))]
    #[case::l2tunnel_is_not_flannels(None, Some("l2tunnel"), Err("host probe"))]
    fn cni_check_names_the_delegate(
        #[case] read: Option<Result<&str, &str>>,
        #[case] mode: Option<&str>,
        #[case] want: Result<&str, &str>,
    ) {
        let node = windows_node("10.0.20348.2762");
        let mut facts = cluster((1, 32), None, None);
        facts.network_mode = mode.map(|m| Fact::new(m.to_string(), "kube-flannel-cfg"));
        if let Some(read) = read {
            let read = read
                .map(|d| crate::cluster::facts::CniDelegate {
                    path: "C:\\etc\\cni\\net.d\\10-flannel.conf".into(),
                    delegate: d.into(),
                    cni_version: Some("0.3.1".into()),
                })
                .map_err(str::to_string);
            facts.flannel_delegates.insert(node.name.clone(), read);
        }
        match (judge(FactCheck::CniCheck, &node, &facts, None), want) {
            (Ok((holds, seen)), Ok(text)) => {
                assert!(!holds, "the documented limitation holds");
                assert!(seen.contains(text), "{seen}");
            }
            (Err(e), Err(text)) => assert!(e.contains(text), "{e}"),
            (got, want) => panic!("got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn dsr_from_a_kube_proxy_configuration() {
        assert_eq!(
            dsr_in_config("kind: KubeProxyConfiguration\nwinkernel:\n  enableDSR: true\n"),
            Some(true)
        );
        assert_eq!(dsr_in_config("winkernel:\n  enableDSR: false"), Some(false));
        assert_eq!(dsr_in_config("mode: iptables"), None);
    }

    #[rstest]
    #[case("16777216Ki", Some(16 << 30))]
    #[case("2Gi", Some(2 << 30))]
    #[case("500Mi", Some(500 << 20))]
    #[case("1000", Some(1000))]
    #[case("1.5Gi", None)]
    fn quantities(#[case] q: &str, #[case] bytes: Option<u64>) {
        assert_eq!(quantity_bytes(q), bytes);
    }

    /// SCHED-RUNTIMECLASS: a Windows RuntimeClass must admit some node (its selector and the
    /// taints it tolerates); classes for Linux nodes are not judged; an unlistable set is unknown.
    #[rstest]
    #[case::none(vec![], Ok(true))]
    #[case::linux_only(vec![rc("runc", &[("kubernetes.io/os", "linux")], &[])], Ok(true))]
    #[case::matches_2022(vec![rc("win2022", &[("kubernetes.io/os", "windows"), ("node.kubernetes.io/windows-build", "10.0.20348")], &[("os", "Equal", "windows", "NoSchedule")])], Ok(true))]
    #[case::no_toleration(vec![rc("win2022", &[("kubernetes.io/os", "windows")], &[])], Ok(false))]
    #[case::tolerates_everything(vec![rc("win", &[("kubernetes.io/os", "windows")], &[("", "Exists", "", "")])], Ok(true))]
    #[case::build_nobody_runs(vec![rc("win2025", &[("kubernetes.io/os", "windows"), ("node.kubernetes.io/windows-build", "10.0.26100")], &[("os", "Exists", "", "")])], Ok(false))]
    fn runtime_classes(#[case] classes: Vec<RuntimeClassFact>, #[case] want: Result<bool, ()>) {
        let mut facts = cluster((1, 32), None, None);
        let mut node = windows_node("10.0.20348.2762");
        node.labels = [
            ("kubernetes.io/os".to_string(), "windows".to_string()),
            ("node.kubernetes.io/windows-build".to_string(), "10.0.20348".to_string()),
        ]
        .into();
        node.taints = vec![mixcheck_reports::Taint {
            key: "os".into(),
            value: Some("windows".into()),
            effect: "NoSchedule".into(),
        }];
        facts.nodes = vec![node.clone()];
        facts.runtime_classes = Ok(classes);
        let got = judge(FactCheck::RuntimeClasses, &node, &facts, None);
        assert_eq!(got.as_ref().map(|(ok, _)| *ok).map_err(|_| ()), want, "{got:?}");
        facts.runtime_classes = Err("the RuntimeClasses (list runtimeclasses.node.k8s.io: forbidden)".into());
        let unknown = judge(FactCheck::RuntimeClasses, &node, &facts, None);
        assert_eq!(
            unknown,
            Err("the RuntimeClasses (list runtimeclasses.node.k8s.io: forbidden)".into())
        );
    }

    /// Any placement taint keeps Linux pods off a Windows node: the documented `os` key, GKE's
    /// `node.kubernetes.io/os` (GKE "Windows Server node pools": "node.kubernetes.io/os=windows:NoSchedule"),
    /// a team's own NoExecute taint; PreferNoSchedule and the node-state taints do not.
    #[rstest]
    #[case::documented("os", "NoSchedule", true)]
    #[case::gke("node.kubernetes.io/os", "NoSchedule", true)]
    #[case::no_execute("dedicated", "NoExecute", true)]
    #[case::prefer("os", "PreferNoSchedule", false)]
    #[case::not_ready("node.kubernetes.io/not-ready", "NoExecute", false)]
    #[case::cordoned("node.kubernetes.io/unschedulable", "NoSchedule", false)]
    fn a_placement_taint_keeps_linux_pods_off(#[case] key: &str, #[case] effect: &str, #[case] kept: bool) {
        let mut node = windows_node("10.0.20348.2762");
        node.taints = vec![mixcheck_reports::Taint {
            key: key.into(),
            value: Some("windows".into()),
            effect: effect.into(),
        }];
        let got = windows_taint(&node).map(|(ok, _)| ok);
        assert_eq!(got, Ok(kept));
        let mut linux = ClusterNode::sample("l1", Os::Linux, "10.0.0.1");
        linux.taints.clear();
        assert_eq!(windows_taint(&linux).map(|(ok, _)| ok), Ok(true));
    }

    /// VER-KUBEPROXY-SKEW (WSKEW): before 1.28 kube-proxy must be its kubelet's minor; from
    /// 1.28 within three minors of it — and never newer than the API server.
    #[rstest]
    #[case::same_minor_1_27((1, 27), (1, 27), "v1.27.4", true)]
    #[case::one_behind_1_27((1, 27), (1, 27), "v1.26.9", false)]
    #[case::kubelet_behind_1_27((1, 27), (1, 26), "v1.27.4", false)]
    #[case::one_behind_1_32((1, 32), (1, 32), "v1.31.2", true)]
    #[case::kubelet_three_behind_1_32((1, 32), (1, 29), "v1.32.3", true)]
    #[case::newer_than_server((1, 32), (1, 32), "v1.33.0", false)]
    fn kube_proxy_skew_follows_the_policy_of_its_era(
        #[case] server: (u32, u32),
        #[case] kubelet: (u32, u32),
        #[case] kube_proxy: &str,
        #[case] ok: bool,
    ) {
        let mut node = windows_node("10.0.20348.2762");
        node.kubelet = Some(kubelet);
        let mut facts = ClusterFacts::of_nodes(vec![node.clone()]);
        facts.version = server;
        facts.report.nodes.insert(
            node.name.clone(),
            mixcheck_reports::NodeFacts {
                kube_proxy_version: Some(Fact::new(kube_proxy.to_string(), "test")),
                ..Default::default()
            },
        );
        let limit = if server < (1, 28) { "2" } else { "3" };
        let got = kube_proxy_skew(&node, &facts, Some(limit)).map(|(ok, _)| ok);
        assert_eq!(got, Ok(ok));
    }

    fn rc(name: &str, selector: &[(&str, &str)], tolerations: &[(&str, &str, &str, &str)]) -> RuntimeClassFact {
        RuntimeClassFact {
            name: name.into(),
            node_selector: selector.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            tolerations: tolerations
                .iter()
                .map(|(k, o, v, e)| (k.to_string(), o.to_string(), v.to_string(), e.to_string()))
                .collect(),
        }
    }
}
