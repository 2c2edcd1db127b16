//! The cluster facts a run collected before judging ([`Facts`], [`NodeFacts`]): each one optional,
//! and each known one with the place it was read from ([`Fact`]).

use std::{collections::BTreeMap, fmt};

use serde::{Deserialize, Serialize};

/// A known fact and where it was read from, e.g.
/// `{"value": "overlay", "source": "kube-flannel/kube-flannel-cfg net-conf.json"}`.
///
/// An unknown fact is `None` where the fact is used (and absent from `results.json`); a rule that
/// needs it judges the cell indeterminate, naming the fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact<T> {
    /// The value.
    pub value: T,
    /// Where it came from: an object and field (`status.nodeInfo.kubeletVersion`), an endpoint
    /// (`GET /version`, `nodes/win2022-1/proxy/configz`) or `--network-mode` for user input.
    pub source: String,
}

impl<T> Fact<T> {
    /// A fact read from `source`.
    pub fn new(value: T, source: impl Into<String>) -> Self {
        Fact {
            value,
            source: source.into(),
        }
    }
}

/// A node's operating system (label `kubernetes.io/os`), also a pool's in the suites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    /// `linux`
    Linux,
    /// `windows`
    Windows,
}

impl Os {
    /// The label value (`linux`, `windows`).
    pub fn as_str(self) -> &'static str {
        match self {
            Os::Linux => "linux",
            Os::Windows => "windows",
        }
    }
}

impl fmt::Display for Os {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Taint {
    /// e.g. `os`
    pub key: String,
    /// e.g. `windows`; absent for taints without a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// What the run learnt about one node. Memory amounts are bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeFacts {
    /// Label `kubernetes.io/os`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<Fact<Os>>,
    /// The build of `node.kubernetes.io/windows-build` (`10.0.20348` → 20348); Windows only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows_build: Option<Fact<u32>>,
    /// `status.nodeInfo.kernelVersion` (on Windows `10.0.<build>.<revision>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_version: Option<Fact<String>>,
    /// `status.nodeInfo.osImage`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_image: Option<Fact<String>>,
    /// `status.nodeInfo.kubeletVersion`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet_version: Option<Fact<String>>,
    /// The version of the kube-proxy serving this node (its DaemonSet's image tag, or nodeInfo).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_proxy_version: Option<Fact<String>>,
    /// `status.nodeInfo.containerRuntimeVersion` (`containerd://1.7.20`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_runtime_version: Option<Fact<String>>,
    /// `spec.taints`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub taints: Option<Fact<Vec<Taint>>>,
    /// `status.capacity.memory`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_capacity_bytes: Option<Fact<u64>>,
    /// `status.allocatable.memory`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_allocatable_bytes: Option<Fact<u64>>,
    /// `systemReserved.memory` of the kubelet's configz (0 when the kubelet reserves nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_reserved_memory_bytes: Option<Fact<u64>>,
    /// Why the run left the node out — cordoned, a virtual kubelet, a Fargate-style node: it
    /// got no fixture and no cell judges it (its facts are still recorded here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Fact<String>>,
    /// `spec.podCIDR`: the node's pod subnet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_cidr: Option<Fact<String>>,
    /// How the run's fixture pods started on the node: each image's pull (the kubelet's
    /// `Pulled` event), and the time from scheduled to sandbox and to Ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub startup: Vec<PodStartup>,
}

/// How one of the run's pods started on its node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodStartup {
    /// The pod's name.
    pub pod: String,
    /// Its images, in the order the kubelet reported them.
    pub pulls: Vec<ImagePull>,
    /// Milliseconds from scheduled to sandbox ready (`PodReadyToStartContainers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_ms: Option<u64>,
    /// Milliseconds from scheduled to Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_ms: Option<u64>,
}

/// One image of a pod: how long its pull took, or that it was on the node already.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePull {
    /// The image reference as the pod names it.
    pub image: String,
    /// Milliseconds the pull took as the kubelet reported it; None when the image was present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_ms: Option<u64>,
}

/// What the run learnt about the cluster before judging any cell.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Facts {
    /// `GET /version` gitVersion (`v1.32.0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_version: Option<Fact<String>>,
    /// Per node, by node name (sorted, so `results.json` is stable).
    pub nodes: BTreeMap<String, NodeFacts>,
    /// The pod network mode (`l2bridge`, `overlay`, `host-gw`, `azure-cni`, …), detected or given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_mode: Option<Fact<String>>,
    /// Whether Windows kube-proxy runs with direct server return.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dsr: Option<Fact<bool>>,
    /// The cluster's kube-proxy version (per-node versions are in [`NodeFacts`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_proxy_version: Option<Fact<String>>,
    /// Whether HostProcess pods can run (server ≥ 1.23, containerd ≥ 1.6, a privileged namespace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_process: Option<Fact<bool>>,
    /// Whether pods may reach the internet (false on air-gapped clusters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress: Option<Fact<bool>>,
    /// The cluster's pod network (flannel's `net-conf.json` Network), where the CNI shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_cidr: Option<Fact<String>>,
    /// Who built the cluster (`aks`, `eks`, `gke`, `kubeadm` or `unknown`), from the nodes'
    /// `spec.providerID` and labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<Fact<String>>,
    /// The cluster's DNS domain, from the kubelets' configz `clusterDomain`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_domain: Option<Fact<String>>,
    /// Whether the cluster is dual-stack (IPv4 and IPv6), from the nodes' `spec.podCIDRs` (or the
    /// `kubernetes` Service's `spec.ipFamilies`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dual_stack: Option<Fact<bool>>,
    /// Whether the pod network is Calico (its `calico-node` DaemonSets).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calico: Option<Fact<bool>>,
    /// The pod network's plugin (`flannel`, `calico`, `azure-cni`, `vpc-cni`, `anetd`,
    /// `ovn-kubernetes`), from its ConfigMap or DaemonSets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_network: Option<Fact<String>>,
    /// What programs Services on the nodes: `kube-proxy`, or `anetd` where GKE Dataplane V2
    /// runs ("implemented without kube-proxy").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_proxy: Option<Fact<String>>,
    /// Facts where the nodes' own reading and the API objects disagree, by fact name: the
    /// node's reading is used, and this says what the objects suggested.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub disagreements: BTreeMap<String, String>,
    /// Facts the run could not read, and why (a permission it goes without).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unread: BTreeMap<String, String>,
}
