//! Node objects built from the topology: labels, taints, nodeInfo, capacity, addresses and
//! conditions as a real kubelet registers them, plus each node's Lease.

use serde_json::{Map, Value, json};

use crate::config::platform::{Os, Platform};
use crate::config::profile::NodeProfile;
use crate::config::topology::{NodeSpec, Role};
use crate::store::timestamp;

/// The Node object a kubelet with this spec and profile would register.
pub fn node_object(spec: &NodeSpec, profile: &NodeProfile) -> Value {
    let ip = profile.ip;
    let os = spec.os.as_str();
    let mut labels = Map::new();
    for (k, v) in [
        ("kubernetes.io/os", os),
        ("kubernetes.io/arch", spec.arch.as_str()),
        ("kubernetes.io/hostname", spec.name.as_str()),
        ("beta.kubernetes.io/os", os),
        ("beta.kubernetes.io/arch", spec.arch.as_str()),
    ] {
        labels.insert(k.into(), json!(v));
    }
    if let Some(build) = spec.windows_build() {
        labels.insert("node.kubernetes.io/windows-build".into(), json!(build));
    }
    if spec.role == Role::ControlPlane {
        labels.insert("node-role.kubernetes.io/control-plane".into(), json!(""));
    }
    for (k, v) in &spec.labels {
        labels.insert(k.clone(), json!(v));
    }
    // kubeadm's CRI socket annotation (kubeadm `constants.go`: `AnnotationKubeadmCRISocket`),
    // written by `kubeadm init`/`join` from 1.12 (dockershim's socket while the runtime is
    // Docker) and no longer from 1.34, where the NodeLocalCRISocket gate (KEP-4656, beta, on by
    // default) keeps the socket in the kubelet's instance config and `kubeadm upgrade` removes
    // the annotation (kubernetes/kubernetes#129279). Managed platforms do not join with kubeadm.
    let docker = profile.runtime == crate::config::profile::RuntimeKind::Docker;
    let cri_socket = match (spec.os, docker) {
        (Os::Linux, false) => "unix:///run/containerd/containerd.sock",
        (Os::Linux, true) => "/var/run/dockershim.sock",
        (Os::Windows, false) => "npipe:////./pipe/containerd-containerd",
        (Os::Windows, true) => "npipe:////./pipe/dockershim",
    };
    let kubeadm_annotation =
        profile.platform == crate::config::platform::Platform::Kubeadm && ((1, 12)..(1, 34)).contains(&profile.kubelet);
    let capacity = json!(profile.capacity);
    let allocatable = json!(profile.allocatable);
    let mut taints: Vec<Value> = spec
        .taints
        .iter()
        .map(|t| {
            let mut taint = json!({"key": t.key, "effect": t.effect});
            if !t.value.is_empty() {
                taint["value"] = json!(t.value);
            }
            taint
        })
        .collect();
    let now = timestamp(chrono::Utc::now());
    let condition = |ty: &str, status: &str, reason: &str, message: &str| {
        json!({"type": ty, "status": status, "reason": reason, "message": message,
               "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    let kubelet_version = profile.kubelet_version.clone();
    let mut node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec.name,
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "providerID": profile.platform.provider_id(&spec.name, profile.index),
            "podCIDR": profile.pod_cidr,
            "podCIDRs": match &profile.pod_cidr_v6 {
                // Dual-stack: one CIDR per family, IPv4 (the primary) first.
                Some(v6) => json!([profile.pod_cidr, v6]),
                None => json!([profile.pod_cidr]),
            },
        },
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": ip.to_string()},
                {"type": "Hostname", "address": spec.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": spec.arch,
                "operatingSystem": os,
                "osImage": spec.os_image(),
                "kernelVersion": spec.kernel_version(),
                "containerRuntimeVersion": spec.container_runtime(),
                "kubeletVersion": kubelet_version,
                "kubeProxyVersion": spec.kube_proxy_version,
                "machineID": machine_id(&spec.name),
                "systemUUID": uuid_like(&spec.name, 1),
                "bootID": uuid_like(&spec.name, 2),
            },
        },
    });
    if let Some(conds) = node.pointer_mut("/status/conditions").and_then(Value::as_array_mut) {
        for (ty, reason, message) in problem_detector_conditions(profile.platform, spec.os) {
            conds.push(condition(ty, "False", reason, message));
        }
    }
    if kubeadm_annotation {
        node["metadata"]["annotations"]["kubeadm.alpha.kubernetes.io/cri-socket"] = json!(cri_socket);
    }
    if spec.unschedulable {
        node["spec"]["unschedulable"] = json!(true);
        taints.push(json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}));
    }
    if spec.virtual_kubelet {
        node["metadata"]["labels"]["type"] = json!("virtual-kubelet");
        taints.push(json!({"key": "virtual-kubelet.io/provider", "value": "mixcheck", "effect": "NoSchedule"}));
    }
    if !taints.is_empty() {
        node["spec"]["taints"] = json!(taints);
    }
    node
}

/// A stable, name-derived hex id (deterministic across runs).
fn machine_id(name: &str) -> String {
    let mut hasher = crate::vocab::hash::Fnv::default();
    let mut out = String::new();
    for round in 0u64..2 {
        hasher.write(name.as_bytes()).write(&round.to_le_bytes());
        out.push_str(&format!("{:016x}", hasher.finish()));
    }
    out
}

fn uuid_like(name: &str, salt: u8) -> String {
    let hex = machine_id(&format!("{name}/{salt}"));
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The node conditions a platform's node-problem-detector reports (all False on a healthy
/// node), beside the kubelet's own: "The AKS Linux extension enables NPD by default", with the
/// conditions of its table (learn.microsoft.com/azure/aks/node-problem-detector; general-purpose
/// compute). Windows nodes have none there, nor on the other platforms as the topologies
/// describe them (node-problem-detector is an optional add-on: Linux-only at 1.14, W14;
/// preliminary Windows support later, WI31).
fn problem_detector_conditions(platform: Platform, os: Os) -> &'static [(&'static str, &'static str, &'static str)] {
    match (platform, os) {
        (Platform::Aks, Os::Linux) => &[
            ("FilesystemCorruptionProblem", "FilesystemIsOK", "Filesystem is healthy"),
            ("KubeletProblem", "KubeletIsUp", "kubelet service is up"),
            (
                "ContainerRuntimeProblem",
                "ContainerRuntimeIsUp",
                "container runtime service is up",
            ),
            ("VMEventScheduled", "NoVMEventScheduled", "VM has no scheduled event"),
            (
                "FrequentUnregisterNetDevice",
                "NoFrequentUnregisterNetDevice",
                "node is functioning properly",
            ),
            (
                "FrequentKubeletRestart",
                "NoFrequentKubeletRestart",
                "kubelet is functioning properly",
            ),
            (
                "FrequentContainerdRestart",
                "NoFrequentContainerdRestart",
                "containerd is functioning properly",
            ),
        ],
        _ => &[],
    }
}

/// The CSI drivers whose node plugins a platform installs on every node, Windows included: AKS
/// enables the Azure Disk and Azure Files CSI drivers by default (from 1.21), on Windows node
/// pools too, whose nodes run csi-proxy ("Container Storage Interface (CSI) drivers on Azure
/// Kubernetes Service"). The other platforms' clusters as the topologies describe them install
/// none: kubeadm installs no storage, EKS's EBS CSI driver is an add-on one installs, and the
/// GKE topology is not documented with one on its Windows pool (STO-CSI).
fn platform_csi_drivers(platform: Platform, kubelet: (u32, u32)) -> &'static [&'static str] {
    match platform {
        Platform::Aks if kubelet >= (1, 21) => &["disk.csi.azure.com", "file.csi.azure.com"],
        _ => &[],
    }
}

/// The node's CSINode (`storage.k8s.io/v1`) as its kubelet registers it: the kubelet creates it
/// at start — the CSINodeInfo feature, GA in 1.17 — and every CSI node plugin that registers
/// with the kubelet adds itself to `spec.drivers` with the node ID it answers for. None for a
/// kubelet older than 1.17. On Windows a node plugin reaches the host through csi-proxy (CSI on
/// Windows: alpha 1.16, beta 1.19, stable 1.22; W20, WSTO).
pub fn csinode_object(spec: &NodeSpec, profile: &NodeProfile) -> Option<Value> {
    if profile.kubelet < (1, 17) {
        return None;
    }
    let drivers: Vec<Value> = platform_csi_drivers(profile.platform, profile.kubelet)
        .iter()
        .map(|name| {
            let mut d = json!({"name": name, "nodeID": spec.name});
            if *name == "disk.csi.azure.com" {
                // Azure Disk publishes its zone topology and the VM size's data-disk count.
                d["topologyKeys"] = json!(["topology.disk.csi.azure.com/zone", "topology.kubernetes.io/zone"]);
                d["allocatable"] = json!({"count": 8});
            }
            d
        })
        .collect();
    Some(json!({
        "metadata": {"name": spec.name},
        "spec": {"drivers": drivers},
    }))
}

/// How long before the cluster starts a stopped kubelet last renewed its Lease: longer than the
/// node monitor's grace period (40 s), after which the node lifecycle controller marks the node
/// `Unknown` — the state a stopped kubelet's node is seeded in.
pub const STOPPED_KUBELET_LAST_RENEWED: chrono::TimeDelta = chrono::TimeDelta::minutes(5);

/// The node's Lease in `kube-node-lease`: renewed now, or, for a node whose kubelet is
/// stopped, [`STOPPED_KUBELET_LAST_RENEWED`] ago (its kubelet renews it no more).
pub fn lease_object(node: &str, kubelet_stopped: bool) -> Value {
    let mut at = chrono::Utc::now();
    if kubelet_stopped {
        at -= STOPPED_KUBELET_LAST_RENEWED;
    }
    let renew = at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    json!({
        "metadata": {"name": node, "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": renew},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn object(name: &str, ip: Ipv4Addr) -> Value {
        let (spec, profile) = crate::config::profile::default_node(name, ip);
        node_object(&spec, &profile)
    }

    /// STO-CSI: a kubelet of 1.17 or later registers its CSINode; AKS nodes, Windows included,
    /// list the Azure Disk and Azure Files drivers; a kubeadm cluster's list none.
    #[test]
    fn kubelets_register_their_csinode_with_the_platforms_drivers() {
        let topology = |platform: &str, version: &str| {
            let mode = "l2bridge";
            let yaml = format!(
                "name: t\nplatform: {platform}\nkubernetesVersion: {version}\nnetwork: {{mode: {mode}}}\nnodes:\n  - name: win-1\n    os: windows\n    kernelVersion: 10.0.20348.1\n    containerRuntime: containerd://1.7.20\n"
            );
            let topo = crate::config::topology::Topology::parse(&yaml, "test").expect("topology");
            let profile = crate::config::profile::NodeProfile::new(&topo.nodes[0], &topo, 0, Ipv4Addr::LOCALHOST);
            csinode_object(&topo.nodes[0], &profile)
        };
        let aks = topology("aks", "v1.32.3").expect("a CSINode");
        let names: Vec<&str> = aks["spec"]["drivers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| d["name"].as_str())
            .collect();
        assert_eq!(names, ["disk.csi.azure.com", "file.csi.azure.com"]);
        assert_eq!(aks["spec"]["drivers"][0]["nodeID"], "win-1");
        let kubeadm = topology("kubeadm", "v1.32.3").expect("a CSINode");
        assert_eq!(kubeadm["spec"]["drivers"], json!([]));
        assert!(topology("kubeadm", "v1.14.10").is_none(), "no CSINode before 1.17");
    }

    /// NODE-PROBLEM-DETECTOR: AKS's Linux extension runs node-problem-detector, whose
    /// conditions (False) sit beside the kubelet's own; its Windows nodes and other platforms'
    /// nodes report the kubelet's only (learn.microsoft.com/azure/aks/node-problem-detector).
    #[rstest::rstest]
    #[case::aks_linux("aks", "linux", 11)]
    #[case::aks_windows("aks", "windows", 4)]
    #[case::kubeadm_linux("kubeadm", "linux", 4)]
    #[case::gke_linux("gke", "linux", 4)]
    fn a_platforms_problem_detector_reports_beside_the_kubelet(
        #[case] platform: &str,
        #[case] os: &str,
        #[case] conditions: usize,
    ) {
        let node = match os {
            "windows" => {
                "    os: windows\n    kernelVersion: 10.0.20348.1\n    containerRuntime: containerd://1.7.20\n"
            }
            _ => "    os: linux\n",
        };
        let yaml = format!(
            "name: t\nplatform: {platform}\nkubernetesVersion: v1.32.3\nnetwork: {{mode: l2bridge}}\nnodes:\n  - name: n-1\n{node}"
        );
        let topo = crate::config::topology::Topology::parse(&yaml, "test").expect("topology");
        let profile = crate::config::profile::NodeProfile::new(&topo.nodes[0], &topo, 0, Ipv4Addr::LOCALHOST);
        let object = node_object(&topo.nodes[0], &profile);
        let types: Vec<&str> = object["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["type"].as_str())
            .collect();
        assert_eq!(types.len(), conditions, "{types:?}");
        if conditions > 4 {
            assert!(types.contains(&"KubeletProblem"), "{types:?}");
        }
    }

    #[test]
    fn windows_node_is_labelled_and_tainted() {
        let node = object("win2019-1", Ipv4Addr::new(127, 5, 6, 12));
        assert_eq!(node["metadata"]["labels"]["kubernetes.io/os"], "windows");
        assert_eq!(
            node["metadata"]["labels"]["node.kubernetes.io/windows-build"],
            "10.0.17763"
        );
        assert_eq!(
            node["spec"]["taints"][0],
            json!({"key": "os", "value": "windows", "effect": "NoSchedule"})
        );
        assert_eq!(node["status"]["nodeInfo"]["kernelVersion"], "10.0.17763.6414");
        assert_eq!(node["status"]["nodeInfo"]["osImage"], "Windows Server 2019 Datacenter");
        assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "v1.32.3");
        assert_eq!(node["status"]["addresses"][0]["address"], "127.5.6.12");
        assert!(node["status"]["capacity"].get("hugepages-2Mi").is_none());
        assert_eq!(node["status"]["allocatable"]["memory"], "14168064Ki");
        assert_eq!(node["spec"]["podCIDR"], "10.244.2.0/24");
        assert_eq!(node["status"]["nodeInfo"]["machineID"].as_str().map(str::len), Some(32));
    }

    #[test]
    fn control_plane_has_role_label() {
        let node = object("control-plane", Ipv4Addr::new(127, 0, 0, 2));
        assert_eq!(node["metadata"]["labels"]["node-role.kubernetes.io/control-plane"], "");
        assert!(
            node["metadata"]["labels"]
                .get("node.kubernetes.io/windows-build")
                .is_none()
        );
    }
}
