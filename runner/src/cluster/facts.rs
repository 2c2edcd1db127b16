//! The cluster facts a run judges by (docs/design.md), read only from the cluster's own
//! objects: `/version`; per node its labels, `status.nodeInfo`, taints, capacity, allocatable and
//! the kubelet's configz (node proxy); the network mode, DSR and the kube-proxy and flannel
//! versions from the CNI and kube-proxy DaemonSets and ConfigMaps, as AKS, EKS, GKE and kubeadm
//! clusters show them — or as stated with `--network-mode` / `--egress`. A fact that cannot be
//! read stays unknown, and the checks that need it become indeterminate.

use std::collections::BTreeMap;

use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{Api, ListParams};
use mixcheck_reports::{Fact, Facts, NodeFacts, Os, Taint};
use serde_json::Value;

/// One node as the run sees it.
#[derive(Debug, Clone)]
pub struct ClusterNode {
    pub name: String,
    pub os: Os,
    pub build: Option<u32>,
    /// The InternalIP (else the first address).
    pub address: String,
    /// The ExternalIP, where the node has one: what a client outside the cluster uses first.
    pub external_address: Option<String>,
    pub kubelet: Option<(u32, u32)>,
    /// The kubelet's patch release (`v1.22.13` → 13), where its version names one.
    pub kubelet_patch: Option<u32>,
    /// `containerd` / `docker` and its `major.minor`.
    pub runtime: Option<(String, (u32, u32))>,
    pub taints: Vec<Taint>,
    pub control_plane: bool,
    pub ready: bool,
    pub labels: BTreeMap<String, String>,
    /// The kernel version (`10.0.20348.2762`, `6.8.0-1017-azure`).
    pub kernel: String,
    /// Memory capacity and allocatable, in bytes.
    pub memory: (Option<u64>, Option<u64>),
    /// The node's conditions by type → status.
    pub conditions: BTreeMap<String, String>,
    /// The kubelet's configz document (None when the node proxy did not answer).
    pub configz: Option<Value>,
    /// Why the run leaves the node out (no fixtures, no probes): cordoned, a virtual kubelet, a
    /// Fargate-style node.
    pub skipped: Option<String>,
}

impl ClusterNode {
    /// A Ready worker of `os` at `address`, for tests.
    #[cfg(test)]
    pub fn sample(name: &str, os: Os, address: &str) -> Self {
        Self {
            name: name.into(),
            os,
            build: (os == Os::Windows).then_some(20348),
            address: address.into(),
            external_address: None,
            kubelet: Some((1, 32)),
            kubelet_patch: None,
            runtime: Some(("containerd".into(), (1, 7))),
            taints: Vec::new(),
            control_plane: false,
            ready: true,
            labels: BTreeMap::new(),
            kernel: String::new(),
            memory: (None, None),
            conditions: BTreeMap::new(),
            configz: None,
            skipped: None,
        }
    }

    /// The address a client outside the cluster aims at: the ExternalIP, else the InternalIP.
    pub fn outside_address(&self) -> &str {
        self.external_address.as_deref().unwrap_or(&self.address)
    }

    /// HostProcess pods: Windows, kubelet ≥ 1.23, containerd ≥ 1.6 (SEC-HOSTPROCESS, WHPC).
    pub fn host_process(&self) -> Option<bool> {
        if self.os != Os::Windows {
            return Some(false);
        }
        let kubelet = self.kubelet?;
        let (runtime, version) = self.runtime.as_ref()?;
        Some(kubelet >= (1, 23) && runtime == "containerd" && *version >= (1, 6))
    }

    /// The pool a node belongs to: `linux`, or `windows-<build>`.
    pub fn pool(&self) -> String {
        mixcheck_reports::Pool::of(self.os, self.build).as_str().to_string()
    }

    /// Whether fixtures may be scheduled here: Ready, not the control plane.
    pub fn schedulable(&self) -> bool {
        self.ready && !self.control_plane && self.skipped.is_none()
    }

    /// A worker the run probes: not a control plane, not skipped.
    pub fn probed(&self) -> bool {
        !self.control_plane && self.skipped.is_none()
    }
}

/// Everything a run knows about its cluster.
#[derive(Debug, Clone)]
pub struct ClusterFacts {
    pub version: (u32, u32),
    pub nodes: Vec<ClusterNode>,
    pub network_mode: Option<Fact<String>>,
    pub dsr: Option<Fact<bool>>,
    /// kube-proxy's WinDSR feature gate, where its flags or configuration name it.
    pub win_dsr_gate: Option<Fact<bool>>,
    pub flannel_version: Option<Fact<String>>,
    /// Whether pods reach the internet, as the user said (`--egress`); None: the run detects it.
    pub egress: Option<Fact<bool>>,
    /// Whether the cluster is dual-stack (nodes' `spec.podCIDRs`, or the `kubernetes` Service's
    /// `spec.ipFamilies`); None when nothing shows it.
    pub dual_stack: Option<Fact<bool>>,
    /// Whether the pod network is Calico (its `calico-node` DaemonSets).
    pub calico: Option<Fact<bool>>,
    /// Whether the cluster serves the GMSACredentialSpec CRD (`crate::cluster::gmsa`); None when
    /// its API group could not be read.
    pub gmsa: Option<Fact<bool>>,
    /// The NetworkPolicy engine (`crate::cluster::netpol`), with where it was seen; None when
    /// nothing says.
    pub policy_engine: Option<Fact<String>>,
    /// The API server's feature gates, from its `kubernetes_feature_enabled` metric.
    pub feature_gates: Option<BTreeMap<String, bool>>,
    /// The cluster's RuntimeClasses (node.k8s.io/v1), or why they could not be listed.
    pub runtime_classes: Result<Vec<RuntimeClassFact>, String>,
    /// The HNS network types each Windows node's host probe listed (`Get-HnsNetwork`, or
    /// `hnsdiag` without the cmdlets), or why it could not, by node; a node without a host probe
    /// is absent.
    pub hns_networks: BTreeMap<String, Result<HnsNetworks, String>>,
    /// The kubelet's command line each Windows node's host probe listed (`Win32_Process`), or
    /// why it could not, by node; a node without a host probe is absent.
    pub kubelet_cmdlines: BTreeMap<String, Result<String, String>>,
    /// The CNI plugin flannel delegates to on each Windows node, from its configuration file
    /// read by the node's host probe, or why it could not be read; a node without a host probe
    /// is absent.
    pub flannel_delegates: BTreeMap<String, Result<CniDelegate, String>>,
    /// The CNI plugin that sets up pod networking on each Windows node (flannel's delegate, or
    /// the platform's plugin), from its configuration file read by the node's host probe, or why
    /// it could not be read; a node without a host probe is absent.
    pub cni_delegates: BTreeMap<String, Result<CniDelegate, String>>,
    /// The source VIP kube-proxy keeps on each Windows node (`SourceVip.json`: its path and
    /// address; None where the node keeps no such file), from its host probe, or why it could
    /// not be read; a node without a host probe is absent.
    pub source_vips: BTreeMap<String, Result<Option<SourceVip>, String>>,
    /// The facts as the report records them.
    pub report: Facts,
}

/// The HNS network types a node's host probe listed, and the command that listed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HnsNetworks {
    pub types: Vec<String>,
    /// `Get-HnsNetwork`, or `hnsdiag list networks` where the cmdlets are missing.
    pub via: &'static str,
}

/// The CNI plugin flannel delegates to on a Windows node, as its configuration file says (read
/// by the node's host probe, `crate::probes::hostfacts`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CniDelegate {
    pub path: String,
    pub delegate: String,
    pub cni_version: Option<String>,
}

#[cfg(test)]
impl ClusterFacts {
    /// Facts of a 1.32 cluster of `nodes` and nothing else known, for tests.
    pub fn of_nodes(nodes: Vec<ClusterNode>) -> Self {
        ClusterFacts {
            version: (1, 32),
            nodes,
            network_mode: None,
            dsr: None,
            win_dsr_gate: None,
            flannel_version: None,
            egress: None,
            dual_stack: None,
            calico: None,
            gmsa: None,
            policy_engine: None,
            feature_gates: None,
            runtime_classes: Ok(Vec::new()),
            hns_networks: BTreeMap::new(),
            kubelet_cmdlines: BTreeMap::new(),
            flannel_delegates: BTreeMap::new(),
            cni_delegates: BTreeMap::new(),
            source_vips: BTreeMap::new(),
            report: Default::default(),
        }
    }
}

impl ClusterFacts {
    /// The DNS domain every name the run builds ends in: the kubelets' `clusterDomain`
    /// (configz), else `cluster.local`, the kubelet's and kubeadm's default (where no node
    /// proxy answered, the report shows no `cluster_domain` fact).
    pub fn cluster_domain(&self) -> &str {
        self.report
            .cluster_domain
            .as_ref()
            .map_or("cluster.local", |f| f.value.as_str())
    }
}

/// A RuntimeClass's scheduling block: the node labels it selects and the taints it tolerates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeClassFact {
    pub name: String,
    pub node_selector: BTreeMap<String, String>,
    /// (key, operator, value, effect); an empty key with `Exists` tolerates everything.
    pub tolerations: Vec<(String, String, String, String)>,
}

impl RuntimeClassFact {
    /// Whether pods of this class can land on `node`: it has every selected label, and every
    /// NoSchedule/NoExecute taint of it is tolerated (the scheduler's rule; PreferNoSchedule
    /// taints do not keep pods away).
    pub fn admits(&self, node: &ClusterNode) -> bool {
        let selected = self.node_selector.iter().all(|(k, v)| node.labels.get(k) == Some(v));
        let tolerated = node.taints.iter().filter(|t| t.effect != "PreferNoSchedule").all(|t| {
            self.tolerations.iter().any(|(key, op, value, effect)| {
                let key_ok = key.is_empty() || *key == t.key;
                let value_ok = op == "Exists" || Some(value.as_str()) == t.value.as_deref().or(Some(""));
                let effect_ok = effect.is_empty() || *effect == t.effect;
                key_ok && value_ok && effect_ok
            })
        });
        selected && tolerated
    }
}

/// The cluster's RuntimeClasses, listed with a bound on the wait.
async fn runtime_classes(client: &kube::Client) -> Result<Vec<RuntimeClassFact>, String> {
    use k8s_openapi::api::node::v1::RuntimeClass;
    let api: Api<RuntimeClass> = Api::all(client.clone());
    let listed = tokio::time::timeout(std::time::Duration::from_secs(20), api.list(&ListParams::default()))
        .await
        .map_err(|_| "the RuntimeClasses (listing them timed out)".to_string())?
        .map_err(|e| format!("the RuntimeClasses (list runtimeclasses.node.k8s.io: {e})"))?;
    Ok(listed
        .items
        .into_iter()
        .map(|rc| {
            let scheduling = rc.scheduling.unwrap_or_default();
            RuntimeClassFact {
                name: rc.metadata.name.unwrap_or_default(),
                node_selector: scheduling.node_selector.unwrap_or_default(),
                tolerations: scheduling
                    .tolerations
                    .unwrap_or_default()
                    .into_iter()
                    .map(|t| {
                        (
                            t.key.unwrap_or_default(),
                            t.operator.unwrap_or_else(|| "Equal".into()),
                            t.value.unwrap_or_default(),
                            t.effect.unwrap_or_default(),
                        )
                    })
                    .collect(),
            }
        })
        .collect())
}

/// `v1.32.3` / `1.32` / `v0.26.1` → (major, minor).
pub fn major_minor(text: &str) -> Option<(u32, u32)> {
    let t = text.trim().trim_start_matches('v');
    let mut parts = t.split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.trim_end_matches('+').parse().ok()?;
    Some((major, minor))
}

/// The patch release of a version (`v1.22.13` → 13, `v1.14.0-rc.1` → 0).
pub fn patch(text: &str) -> Option<u32> {
    let t = text.trim().trim_start_matches('v');
    t.split(['-', '+']).next()?.split('.').nth(2)?.parse().ok()
}

fn image_tag(image: &str) -> Option<&str> {
    let last = image.rsplit('/').next()?;
    let tag = last.split_once(':')?.1;
    Some(tag.split('@').next().unwrap_or(tag))
}

/// The Windows build of `10.0.20348` / `10.0.20348.2762`.
pub fn build_of(text: &str) -> Option<u32> {
    let mut parts = text.split('.');
    let (_, _, build) = (parts.next()?, parts.next()?, parts.next()?);
    build.parse().ok()
}

fn node_of(n: &Node) -> ClusterNode {
    let name = n.metadata.name.clone().unwrap_or_default();
    let labels = n.metadata.labels.clone().unwrap_or_default();
    let status = n.status.clone().unwrap_or_default();
    let info = status.node_info.clone().unwrap_or_default();
    let os = match labels
        .get("kubernetes.io/os")
        .map(String::as_str)
        .unwrap_or(info.operating_system.as_str())
    {
        "windows" => Os::Windows,
        _ => Os::Linux,
    };
    let build = match os {
        Os::Windows => labels
            .get("node.kubernetes.io/windows-build")
            .and_then(|b| build_of(b))
            .or_else(|| build_of(&info.kernel_version)),
        Os::Linux => None,
    };
    let addresses = status.addresses.clone().unwrap_or_default();
    let address = addresses
        .iter()
        .find(|a| a.type_ == "InternalIP")
        .or_else(|| addresses.first())
        .map(|a| a.address.clone())
        .unwrap_or_default();
    let external_address = addresses
        .iter()
        .find(|a| a.type_ == "ExternalIP")
        .map(|a| a.address.clone());
    let runtime = info.container_runtime_version.split_once("://").and_then(|(kind, v)| {
        let mm = major_minor(v)?;
        Some((kind.to_string(), mm))
    });
    let taints = n
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|t| Taint {
            key: t.key,
            value: t.value,
            effect: t.effect,
        })
        .collect();
    let conditions: BTreeMap<String, String> = status
        .conditions
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.type_, c.status))
        .collect();
    let ready = conditions.get("Ready").is_some_and(|s| s == "True");
    let mem = |m: &Option<BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
        m.as_ref()
            .and_then(|m| m.get("memory"))
            .and_then(|q| quantity_bytes(&q.0))
    };
    let skipped = skip_reason(n, &labels);
    ClusterNode {
        skipped,
        control_plane: labels.contains_key("node-role.kubernetes.io/control-plane")
            || labels.contains_key("node-role.kubernetes.io/master"),
        name,
        os,
        build,
        address,
        external_address,
        kubelet: major_minor(&info.kubelet_version),
        kubelet_patch: patch(&info.kubelet_version),
        runtime,
        taints,
        ready,
        labels,
        kernel: info.kernel_version.clone(),
        memory: (mem(&status.capacity), mem(&status.allocatable)),
        conditions,
        configz: None,
    }
}

/// Why a node gets no fixtures: cordoned (`spec.unschedulable`: the scheduler places nothing
/// there), a virtual kubelet (`type=virtual-kubelet`, or its `virtual-kubelet.io/provider`
/// taint: no node behind it), or a Fargate-style node (one pod a node, no DaemonSets).
fn skip_reason(n: &Node, labels: &BTreeMap<String, String>) -> Option<String> {
    let taints = n.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
    if n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        Some("cordoned (spec.unschedulable): nothing new is scheduled there".into())
    } else if labels.get("type").is_some_and(|t| t == "virtual-kubelet")
        || taints.iter().any(|t| t.key == "virtual-kubelet.io/provider")
    {
        Some("a virtual kubelet (type=virtual-kubelet): no node runs its pods".into())
    } else if labels
        .get("eks.amazonaws.com/compute-type")
        .is_some_and(|t| t == "fargate")
    {
        Some("a Fargate node (eks.amazonaws.com/compute-type=fargate): one pod a node, no DaemonSets".into())
    } else {
        None
    }
}

pub fn quantity_bytes(q: &str) -> Option<u64> {
    let digits: String = q.chars().take_while(|c| c.is_ascii_digit()).collect();
    let n: u64 = digits.parse().ok()?;
    let mult: u64 = match &q[digits.len()..] {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// The API server's version: its git version and (major, minor), (0, 0) where neither says.
async fn server_version(client: &kube::Client) -> Result<(String, (u32, u32)), kube::Error> {
    let version = client.apiserver_version().await?;
    let git = version.git_version.clone();
    let server = major_minor(&git)
        .or_else(|| {
            Some((
                version.major.parse().ok()?,
                version.minor.trim_end_matches('+').parse().ok()?,
            ))
        })
        .unwrap_or((0, 0));
    Ok((git, server))
}

/// The report's facts of one node, each with where it was read: from the Node object `n` and
/// the run's view of it (with its configz).
fn node_facts(n: &Node, node: &ClusterNode) -> NodeFacts {
    let info = n.status.as_ref().and_then(|s| s.node_info.clone()).unwrap_or_default();
    let status = n.status.clone().unwrap_or_default();
    let src = format!("node/{}", node.name);
    let mem = |m: &Option<BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
        m.as_ref()
            .and_then(|m| m.get("memory"))
            .and_then(|q| quantity_bytes(&q.0))
    };
    let reserved = node.configz.as_ref().map(|c| {
        c.pointer("/kubeletconfig/systemReserved/memory")
            .and_then(Value::as_str)
            .and_then(quantity_bytes)
            .unwrap_or(0)
    });
    NodeFacts {
        os: Some(Fact::new(node.os, format!("{src} label kubernetes.io/os"))),
        windows_build: node
            .build
            .map(|b| Fact::new(b, format!("{src} label node.kubernetes.io/windows-build"))),
        kernel_version: Some(Fact::new(info.kernel_version.clone(), format!("{src} status.nodeInfo"))),
        os_image: Some(Fact::new(info.os_image.clone(), format!("{src} status.nodeInfo"))),
        kubelet_version: Some(Fact::new(
            info.kubelet_version.clone(),
            format!("{src} status.nodeInfo"),
        )),
        #[allow(deprecated)]
        kube_proxy_version: (!info.kube_proxy_version.is_empty())
            .then(|| Fact::new(info.kube_proxy_version.clone(), format!("{src} status.nodeInfo"))),
        container_runtime_version: Some(Fact::new(
            info.container_runtime_version.clone(),
            format!("{src} status.nodeInfo"),
        )),
        taints: Some(Fact::new(node.taints.clone(), format!("{src} spec.taints"))),
        memory_capacity_bytes: mem(&status.capacity).map(|b| Fact::new(b, format!("{src} status.capacity"))),
        memory_allocatable_bytes: mem(&status.allocatable).map(|b| Fact::new(b, format!("{src} status.allocatable"))),
        system_reserved_memory_bytes: reserved
            .map(|b| Fact::new(b, format!("/api/v1/nodes/{}/proxy/configz systemReserved", node.name))),
        skipped: node
            .skipped
            .clone()
            .map(|why| Fact::new(why, format!("{src} spec.unschedulable, labels and taints"))),
        pod_cidr: n
            .spec
            .as_ref()
            .and_then(|s| s.pod_cidr.clone())
            .filter(|c| !c.is_empty())
            .map(|c| Fact::new(c, format!("{src} spec.podCIDR"))),
        startup: Vec::new(),
    }
}

/// Whether every Windows node can run HostProcess pods (by its kubelet and containerd
/// versions); None without Windows nodes or where a version is unknown.
fn host_process_fact(nodes: &[ClusterNode]) -> Option<Fact<bool>> {
    let windows: Vec<&ClusterNode> = nodes.iter().filter(|n| n.os == Os::Windows).collect();
    (!windows.is_empty())
        .then(|| windows.iter().map(|n| n.host_process()).collect::<Option<Vec<bool>>>())
        .flatten()
        .map(|all| {
            Fact::new(
                all.iter().all(|b| *b),
                "nodes' kubelet and containerd versions (HostProcess: 1.23+, containerd 1.6+)",
            )
        })
}

/// The cluster's DNS domain, from the first node whose kubelet configz sets `clusterDomain`.
fn cluster_domain_fact(nodes: &[ClusterNode]) -> Option<Fact<String>> {
    nodes.iter().find_map(|n| {
        let domain = n.configz.as_ref()?.pointer("/kubeletconfig/clusterDomain")?.as_str()?;
        (!domain.is_empty()).then(|| {
            Fact::new(
                domain.trim_end_matches('.').to_string(),
                format!("/api/v1/nodes/{}/proxy/configz clusterDomain", n.name),
            )
        })
    })
}

/// Reads the facts. `network_mode`/`egress` are the user's statements, used where detection
/// finds nothing (mode) or instead of detection (egress, which is probed from pods once the
/// fixtures run).
pub async fn collect(
    client: &kube::Client,
    network_mode: Option<&str>,
    egress: Option<bool>,
) -> Result<ClusterFacts, kube::Error> {
    let (git, server) = server_version(client).await?;
    let nodes_api: Api<Node> = Api::all(client.clone());
    let node_list = nodes_api.list(&ListParams::default()).await?;
    let mut report = Facts {
        server_version: Some(Fact::new(git, "GET /version")),
        ..Facts::default()
    };
    // Each kubelet's configuration through the node proxy, several at once: one at a time, a
    // 5,000-node cluster's took seconds on the bundled cluster and would take minutes through a
    // real API server (each call goes on to the node's kubelet).
    let mut nodes: Vec<ClusterNode> = node_list.items.iter().map(node_of).collect();
    let configs: Vec<Option<Value>> = futures::stream::iter(nodes.iter().map(|node| configz(client, &node.name)))
        .buffered(CONFIGZ_AT_ONCE)
        .collect()
        .await;
    for ((n, node), config) in node_list.items.iter().zip(&mut nodes).zip(configs) {
        node.configz = config;
        report.nodes.insert(node.name.clone(), node_facts(n, node));
    }
    // The kube-proxy actually serving each node: its pod's image (a DaemonSet's, or the mirror
    // pod of a static pod as on GKE) — `status.nodeInfo.kubeProxyVersion` is deprecated and was
    // the kubelet's own version (KEP-4004).
    for (node, version, source) in kube_proxy_pods(client).await {
        if let Some(n) = report.nodes.get_mut(&node) {
            n.kube_proxy_version = Some(Fact::new(version, source));
        }
    }
    let dual_stack = dual_stack_of(&node_list.items).or(kubernetes_service_families(client).await);
    let addons = addons(client).await;
    let policy_engine = crate::cluster::netpol::engine(client).await;
    let network_mode = addons
        .network_mode
        .or_else(|| network_mode.map(|m| Fact::new(m.to_string(), "--network-mode")));
    let egress = egress.map(|e| Fact::new(e, format!("--egress={e}")));
    report.network_mode = network_mode.clone();
    report.dsr = addons.dsr.clone();
    report.cluster_cidr = addons.cluster_cidr.clone();
    report.kube_proxy_version = addons.kube_proxy_version.clone();
    report.host_process = host_process_fact(&nodes);
    report.egress = egress.clone();
    report.dual_stack = dual_stack.clone();
    report.calico = Some(addons.calico.clone());
    report.platform = Some(platform_of(&node_list.items, has_kubeadm_config(client).await));
    report.service_proxy = addons.service_proxy.clone();
    report.pod_network = addons.pod_network.clone();
    report.cluster_domain = cluster_domain_fact(&nodes);
    Ok(ClusterFacts {
        version: server,
        nodes,
        network_mode,
        dsr: addons.dsr,
        win_dsr_gate: addons.win_dsr_gate,
        flannel_version: addons.flannel_version,
        egress,
        dual_stack,
        calico: Some(addons.calico),
        gmsa: crate::cluster::gmsa::crd(client).await,
        policy_engine,
        feature_gates: feature_gates(client).await,
        runtime_classes: runtime_classes(client).await,
        hns_networks: BTreeMap::new(),
        kubelet_cmdlines: BTreeMap::new(),
        flannel_delegates: BTreeMap::new(),
        cni_delegates: BTreeMap::new(),
        source_vips: BTreeMap::new(),
        report,
    })
}

/// (node, version, source) of every kube-system pod running a kube-proxy image on a node.
async fn kube_proxy_pods(client: &kube::Client) -> Vec<(String, String, String)> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let Ok(list) = pods.list(&ListParams::default()).await else {
        return Vec::new();
    };
    list.items.iter().filter_map(kube_proxy_of).collect()
}

/// A pod's node and its kube-proxy container's image tag, when it runs kube-proxy.
fn kube_proxy_of(pod: &Pod) -> Option<(String, String, String)> {
    let spec = pod.spec.as_ref()?;
    let node = spec.node_name.clone().filter(|n| !n.is_empty())?;
    let tag = spec
        .containers
        .iter()
        .filter_map(|c| c.image.as_deref())
        .find_map(|image| {
            let repo = image.rsplit('/').next()?.split([':', '@']).next()?;
            matches!(repo, "kube-proxy" | "kube-proxy-amd64" | "kube-proxy-arm64")
                .then(|| image_tag(image))
                .flatten()
        })?;
    major_minor(tag)?;
    let name = pod.metadata.name.clone().unwrap_or_default();
    Some((node, tag.to_string(), format!("pod kube-system/{name} image")))
}

/// Whether the cluster is dual-stack, from the nodes' `spec.podCIDRs`: a node with an IPv6
/// CIDR says yes (its name is the source), every node with only IPv4 CIDRs says no; None when
/// no node has one (CNIs that do not use the node IPAM, e.g. Azure CNI).
pub fn dual_stack_of(nodes: &[Node]) -> Option<Fact<bool>> {
    let cidrs: Vec<(String, Vec<String>)> = nodes
        .iter()
        .filter_map(|n| {
            let spec = n.spec.as_ref()?;
            let mut list = spec.pod_cidrs.clone().unwrap_or_default();
            if list.is_empty() {
                list.extend(spec.pod_cidr.clone());
            }
            (!list.is_empty()).then(|| (n.metadata.name.clone().unwrap_or_default(), list))
        })
        .collect();
    if let Some((name, list)) = cidrs.iter().find(|(_, l)| l.iter().any(|c| c.contains(':'))) {
        return Some(Fact::new(
            true,
            format!("node/{name} spec.podCIDRs {}", list.join(", ")),
        ));
    }
    (!cidrs.is_empty()).then(|| Fact::new(false, format!("spec.podCIDRs of {} nodes: IPv4 only", cidrs.len())))
}

/// Whether the `default/kubernetes` Service has two IP families (None when it cannot be read or
/// has one: the API server's own Service may stay single-stack on a dual-stack cluster).
async fn kubernetes_service_families(client: &kube::Client) -> Option<Fact<bool>> {
    let api: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(client.clone(), "default");
    let families = api.get("kubernetes").await.ok()?.spec?.ip_families?;
    (families.len() > 1).then(|| Fact::new(true, "service default/kubernetes spec.ipFamilies"))
}

/// The platform that built the cluster, from the first node whose `spec.providerID` or labels
/// name one: `azure://` or `kubernetes.azure.com/*` labels (AKS), `aws://` or
/// `eks.amazonaws.com/*` (EKS), `gce://` or `cloud.google.com/gke-*` (GKE); otherwise kubeadm
/// where the cluster has kubeadm's `kube-system/kubeadm-config` ConfigMap (`kubeadm_config`:
/// whether it was found), then where a node keeps the `kubeadm.alpha.kubernetes.io/cri-socket`
/// annotation (deprecated, and removed on upgrade: KEP-4656, kubernetes#129279); else
/// `unknown`. An `azure://` providerID alone is not AKS (aks-engine and CAPZ clusters have it
/// too): the AKS labels decide.
pub fn platform_of(nodes: &[Node], kubeadm_config: bool) -> Fact<String> {
    for n in nodes {
        let name = n.metadata.name.clone().unwrap_or_default();
        let labels = n.metadata.labels.clone().unwrap_or_default();
        let provider = n.spec.as_ref().and_then(|s| s.provider_id.clone()).unwrap_or_default();
        let label = |prefix: &str| labels.keys().find(|k| k.starts_with(prefix)).cloned();
        let found = if let Some(l) = label("kubernetes.azure.com/") {
            Some(("aks", format!("node/{name} label {l}")))
        } else if let Some(l) = label("eks.amazonaws.com/") {
            Some(("eks", format!("node/{name} label {l}")))
        } else if let Some(l) = label("cloud.google.com/gke-") {
            Some(("gke", format!("node/{name} label {l}")))
        } else if provider.starts_with("aws://") {
            Some(("eks", format!("node/{name} spec.providerID aws://")))
        } else if provider.starts_with("gce://") {
            Some(("gke", format!("node/{name} spec.providerID gce://")))
        } else {
            None
        };
        if let Some((platform, source)) = found {
            return Fact::new(platform.to_string(), source);
        }
    }
    if kubeadm_config {
        return Fact::new("kubeadm".to_string(), format!("configmap kube-system/{KUBEADM_CONFIG}"));
    }
    match nodes.iter().find(|n| {
        n.metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key("kubeadm.alpha.kubernetes.io/cri-socket"))
    }) {
        Some(n) => Fact::new(
            "kubeadm".to_string(),
            format!(
                "node/{} annotation kubeadm.alpha.kubernetes.io/cri-socket",
                n.metadata.name.clone().unwrap_or_default()
            ),
        ),
        None => Fact::new(
            "unknown".to_string(),
            format!(
                "no node's providerID, labels or annotations name a platform, and there is no configmap kube-system/{KUBEADM_CONFIG}"
            ),
        ),
    }
}

/// kubeadm's record of the cluster's configuration (`kubeadm init` uploads it: kubeadm
/// `cmd/kubeadm/app/phases/uploadconfig`).
const KUBEADM_CONFIG: &str = "kubeadm-config";

/// Whether `kube-system/kubeadm-config` exists (false where it does not or cannot be read).
async fn has_kubeadm_config(client: &kube::Client) -> bool {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    matches!(api.get_opt(KUBEADM_CONFIG).await, Ok(Some(_)))
}

/// `kubernetes_feature_enabled{name="X",stage="…"} 1` lines of the API server's `/metrics`.
async fn feature_gates(client: &kube::Client) -> Option<BTreeMap<String, bool>> {
    let req = http::Request::get("/metrics").body(Vec::new()).ok()?;
    let text = client.request_text(req).await.ok()?;
    let gates = parse_feature_gates(&text);
    (!gates.is_empty()).then_some(gates)
}

fn parse_feature_gates(metrics: &str) -> BTreeMap<String, bool> {
    metrics
        .lines()
        .filter(|l| l.starts_with("kubernetes_feature_enabled{"))
        .filter_map(|l| {
            let name = l.split("name=\"").nth(1)?.split('"').next()?;
            let value = l.rsplit(' ').next()?.trim();
            Some((name.to_string(), value == "1"))
        })
        .collect()
}

/// The kubelet's configz through the node proxy (None when it does not answer).
async fn configz(client: &kube::Client, node: &str) -> Option<Value> {
    let req = http::Request::get(format!("/api/v1/nodes/{node}/proxy/configz"))
        .body(Vec::new())
        .ok()?;
    tokio::time::timeout(CONFIGZ_TIMEOUT, client.request::<Value>(req))
        .await
        .ok()?
        .ok()
}

/// How many kubelets' configz are asked for at once.
const CONFIGZ_AT_ONCE: usize = 16;

/// How long one kubelet's configz may take (through the API server's node proxy).
const CONFIGZ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// kube-proxy's source VIP file on a Windows node: where it is and the address it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceVip {
    pub path: String,
    pub ip: String,
}

#[derive(Debug)]
struct Addons {
    /// Whether Calico runs (a `calico-node` DaemonSet), with where it was seen.
    calico: Fact<bool>,
    network_mode: Option<Fact<String>>,
    cluster_cidr: Option<Fact<String>>,
    dsr: Option<Fact<bool>>,
    win_dsr_gate: Option<Fact<bool>>,
    kube_proxy_version: Option<Fact<String>>,
    flannel_version: Option<Fact<String>>,
    /// `anetd` where GKE Dataplane V2 programs Services (no kube-proxy runs there).
    service_proxy: Option<Fact<String>>,
    /// The pod network's plugin, by its ConfigMap or DaemonSet.
    pod_network: Option<Fact<String>>,
}

fn ds_key(ds: &DaemonSet) -> String {
    format!(
        "{}/{}",
        ds.metadata.namespace.clone().unwrap_or_default(),
        ds.metadata.name.clone().unwrap_or_default()
    )
}

fn ds_images(ds: &DaemonSet) -> Vec<String> {
    ds.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(|p| p.containers.iter().filter_map(|c| c.image.clone()).collect())
        .unwrap_or_default()
}

fn ds_windows(ds: &DaemonSet) -> bool {
    ds.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.node_selector.as_ref())
        .and_then(|s| s.get("kubernetes.io/os"))
        .is_some_and(|os| os == "windows")
}

fn ds_args(ds: &DaemonSet) -> Vec<String> {
    ds.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(|p| {
            p.containers
                .iter()
                .flat_map(|c| {
                    c.command
                        .clone()
                        .unwrap_or_default()
                        .into_iter()
                        .chain(c.args.clone().unwrap_or_default())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The pod network plugin a DaemonSet's name shows: the node agents as each project names
/// them (flannel's `kube-flannel-ds`, Calico's `calico-node`, Azure CNI's `azure-cni*` /
/// `azure-cns*`, the VPC CNI's `aws-node`, GKE Dataplane V2's `anetd`, `ovnkube-node`).
fn plugin_of_daemonset(name: &str) -> Option<&'static str> {
    Some(match name {
        n if n.contains("flannel") => "flannel",
        n if n.starts_with("calico-node") => "calico",
        n if n.starts_with("azure-cni") || n.starts_with("azure-cns") || n == "azure-vnet" => "azure-cni",
        "aws-node" | "aws-node-windows" => "vpc-cni",
        n if n == "anetd" || n.starts_with("anetd-") => "anetd",
        n if n.starts_with("ovnkube-node") => "ovn-kubernetes",
        _ => return None,
    })
}

/// `enableDSR: true` inside a KubeProxyConfiguration's `winkernel` section.
pub fn dsr_in_config(text: &str) -> Option<bool> {
    text.lines().find_map(|l| {
        let l = l.trim();
        let v = l.strip_prefix("enableDSR:")?;
        match v.trim() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    })
}

/// A gate's state in a `--feature-gates=A=true,B=false` value.
pub fn gate_in_flag(value: &str, gate: &str) -> Option<bool> {
    value.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim() == gate).then(|| v.trim().eq_ignore_ascii_case("true"))
    })
}

/// A gate's state in a KubeProxyConfiguration's `featureGates:` map (`  WinDSR: true`).
fn gate_in_config(text: &str, gate: &str) -> Option<bool> {
    text.lines().find_map(|l| {
        let v = l.trim().strip_prefix(gate)?.trim_start().strip_prefix(':')?;
        Some(v.trim().eq_ignore_ascii_case("true"))
    })
}

/// The CNI, kube-proxy and their settings from the cluster's add-on objects.
async fn addons(client: &kube::Client) -> Addons {
    let mut out = Addons {
        calico: Fact::new(false, "no calico-node DaemonSet in the cluster"),
        network_mode: None,
        cluster_cidr: None,
        dsr: None,
        win_dsr_gate: None,
        kube_proxy_version: None,
        flannel_version: None,
        service_proxy: None,
        pod_network: None,
    };
    let daemonsets: Vec<DaemonSet> = Api::<DaemonSet>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    let configmaps: Api<ConfigMap> = Api::all(client.clone());
    // flannel: the backend of net-conf.json (kube-flannel-cfg, in kube-flannel or kube-system).
    if let Ok(list) = configmaps
        .list(&ListParams::default().fields("metadata.name=kube-flannel-cfg"))
        .await
    {
        for cm in &list.items {
            out.read_flannel_config(cm);
        }
    }
    for ds in &daemonsets {
        out.read_daemonset(ds);
    }
    if out.dsr.is_none()
        && let Ok(list) = configmaps.list(&ListParams::default()).await
    {
        for cm in &list.items {
            out.read_kube_proxy_windows_config(cm);
        }
    }
    out
}

impl Addons {
    /// flannel's network mode and cluster CIDR from a `kube-flannel-cfg` ConfigMap's
    /// net-conf.json (its backend: VXLAN is overlay, host-gw l2bridge; others say nothing).
    fn read_flannel_config(&mut self, cm: &ConfigMap) {
        let ns = cm.metadata.namespace.clone().unwrap_or_default();
        let Some(conf) = cm.data.as_ref().and_then(|d| d.get("net-conf.json")) else {
            return;
        };
        let Ok(v) = serde_json::from_str::<Value>(conf) else {
            return;
        };
        let mode = match v
            .pointer("/Backend/Type")
            .and_then(Value::as_str)
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("vxlan") => "overlay",
            Some("host-gw") => "l2bridge",
            _ => return,
        };
        self.network_mode = Some(Fact::new(
            mode.to_string(),
            format!("{ns}/kube-flannel-cfg net-conf.json Backend.Type"),
        ));
        self.pod_network = Some(Fact::new(
            "flannel".to_string(),
            format!("configmap {ns}/kube-flannel-cfg"),
        ));
        self.cluster_cidr = v
            .pointer("/Network")
            .and_then(Value::as_str)
            .map(|n| Fact::new(n.to_string(), format!("{ns}/kube-flannel-cfg net-conf.json Network")));
    }

    /// What one DaemonSet shows: Calico, the network mode of Azure CNI or ovn-kubernetes (where
    /// flannel's did not say), flannel's version, kube-proxy's version or Windows DSR settings.
    fn read_daemonset(&mut self, ds: &DaemonSet) {
        let name = ds.metadata.name.clone().unwrap_or_default();
        let key = ds_key(ds);
        let images = ds_images(ds);
        // The Tigera operator and Calico's manifests name the node agent `calico-node` (and
        // `calico-node-windows` on Windows nodes: CAL).
        if name.starts_with("calico-node") && !self.calico.value {
            self.calico = Fact::new(true, format!("daemonset {key}"));
        }
        if self.pod_network.is_none()
            && let Some(plugin) = plugin_of_daemonset(&name)
        {
            self.pod_network = Some(Fact::new(plugin.to_string(), format!("daemonset {key}")));
        }
        // GKE Dataplane V2: `anetd` (and `anetd-win` on Windows nodes) "is implemented without
        // kube-proxy" (GKE docs "About Dataplane V2").
        if name == "anetd" || name.starts_with("anetd-") {
            self.service_proxy = Some(Fact::new(
                "anetd".to_string(),
                format!("daemonset {key} (GKE Dataplane V2, which runs no kube-proxy)"),
            ));
        }
        // An inference from object names, used only where no node reads its own HNS network
        // (`crate::probes::hostfacts::refine`): Azure CNI runs in bridge mode on Windows, for VNet
        // and Overlay alike (Azure/azure-container-networking `cni/azure-windows.conflist`
        // "mode": "bridge"; `network/network_windows.go` opModeBridge → L2Bridge).
        if self.network_mode.is_none() {
            if name.starts_with("azure-cni") || name == "azure-vnet" || name.starts_with("azure-cns") {
                self.network_mode = Some(Fact::new(
                    "l2bridge".to_string(),
                    format!("daemonset {key} (Azure CNI: bridge mode on Windows)"),
                ));
            } else if name.starts_with("ovnkube-node") {
                self.network_mode = Some(Fact::new(
                    "transparent".to_string(),
                    format!("daemonset {key} (ovn-kubernetes)"),
                ));
            }
        }
        if name.contains("flannel")
            && !ds_windows(ds)
            && self.flannel_version.is_none()
            && let Some(tag) = images
                .iter()
                .filter(|i| i.contains("flannel") && !i.contains("cni-plugin"))
                .find_map(|i| image_tag(i))
        {
            self.flannel_version = Some(Fact::new(tag.to_string(), format!("daemonset {key} image")));
        }
        if name.contains("kube-proxy") {
            self.read_kube_proxy_daemonset(ds, &key, &images);
        }
    }

    /// A kube-proxy DaemonSet: a Linux one's image tag is the cluster's kube-proxy version; a
    /// Windows one's flags say whether DSR and the WinDSR gate are on.
    fn read_kube_proxy_daemonset(&mut self, ds: &DaemonSet, key: &str, images: &[String]) {
        let tag = images
            .iter()
            .filter(|i| i.contains("kube-proxy"))
            .find_map(|i| image_tag(i));
        if !ds_windows(ds) {
            if let Some(tag) = tag {
                self.kube_proxy_version = Some(Fact::new(tag.to_string(), format!("daemonset {key} image")));
            }
            return;
        }
        let args = ds_args(ds);
        if let Some(flag) = args.iter().find_map(|a| a.strip_prefix("--enable-dsr=")) {
            self.dsr = Some(Fact::new(flag == "true", format!("daemonset {key} --enable-dsr")));
        }
        if let Some(gate) = args
            .iter()
            .filter_map(|a| a.strip_prefix("--feature-gates="))
            .find_map(|g| gate_in_flag(g, "WinDSR"))
        {
            self.win_dsr_gate = Some(Fact::new(gate, format!("daemonset {key} --feature-gates")));
        }
    }

    /// DSR and the WinDSR gate from a `kube-proxy-windows*` ConfigMap's KubeProxyConfiguration.
    fn read_kube_proxy_windows_config(&mut self, cm: &ConfigMap) {
        let name = cm.metadata.name.clone().unwrap_or_default();
        if !name.starts_with("kube-proxy-windows") {
            return;
        }
        let ns = cm.metadata.namespace.clone().unwrap_or_default();
        if let Some(dsr) = cm.data.as_ref().and_then(|d| d.values().find_map(|t| dsr_in_config(t))) {
            self.dsr = Some(Fact::new(dsr, format!("configmap {ns}/{name} winkernel.enableDSR")));
        }
        if self.win_dsr_gate.is_none()
            && let Some(gate) = cm
                .data
                .as_ref()
                .and_then(|d| d.values().find_map(|t| gate_in_config(t, "WinDSR")))
        {
            self.win_dsr_gate = Some(Fact::new(gate, format!("configmap {ns}/{name} featureGates.WinDSR")));
        }
    }
}

/// The Windows Server builds the Kubernetes docs list as supported for a version (rule
/// VER-OS-SUPPORTED); None where the docs of that version were not retrieved.
pub fn supported_builds(k8s: (u32, u32)) -> Option<&'static [u32]> {
    Some(match k8s {
        (1, 5..=8) => &[14393],
        // WGSG19: "Windows Server 2016 RTM or later" (1709 preferred); 1803 and 1809 are the
        // later builds released before 1.14.
        (1, 9..=13) => &[14393, 16299, 17134, 17763],
        (1, 14..=17) => &[17763],
        (1, 18) => &[17763, 18362, 18363],
        (1, 19..=20) => &[17763, 18363, 19041],
        // W21: "Kubernetes v1.21 | Windows Server 2019 | Windows Server ver 2004, … ver 20H2".
        (1, 21..=22) => &[17763, 19041, 19042],
        (1, 23..=34) => &[17763, 19042, 20348],
        (1, 35..) => &[20348, 26100],
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// A kube-proxy pod's image names the version serving its node — a DaemonSet's pod, GKE's
    /// mirror pod of the static pod, sig-windows-tools' HostProcess image; other pods and
    /// unbound pods say nothing.
    #[rstest]
    #[case::daemonset("registry.k8s.io/kube-proxy:v1.32.3", Some("n1"), Some("v1.32.3"))]
    #[case::gke_mirror("gke.gcr.io/kube-proxy-amd64:v1.32.3-gke.1000", Some("n1"), Some("v1.32.3-gke.1000"))]
    #[case::hostprocess(
        "docker.io/sigwindowstools/kube-proxy:v1.32.3-flannel-hostprocess",
        Some("n1"),
        Some("v1.32.3-flannel-hostprocess")
    )]
    #[case::unbound("registry.k8s.io/kube-proxy:v1.32.3", None, None)]
    #[case::other("registry.k8s.io/coredns/coredns:v1.11.3", Some("n1"), None)]
    #[case::digest_only("registry.k8s.io/kube-proxy@sha256:abc", Some("n1"), None)]
    fn kube_proxy_pods_name_their_nodes_version(
        #[case] image: &str,
        #[case] node: Option<&str>,
        #[case] version: Option<&str>,
    ) {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "kube-proxy-x"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": image}]}
        }))
        .expect("a pod");
        let got = kube_proxy_of(&pod);
        assert_eq!(got.as_ref().map(|(_, v, _)| v.as_str()), version);
        if let Some((n, _, source)) = got {
            assert_eq!(Some(n.as_str()), node);
            assert_eq!(source, "pod kube-system/kube-proxy-x image");
        }
    }

    #[rstest]
    #[case("v1.32.3", Some((1, 32)))]
    #[case("1.9", Some((1, 9)))]
    #[case("v0.26.1", Some((0, 26)))]
    #[case("v1.14.0-rc.1", Some((1, 14)))]
    #[case("nope", None)]
    fn versions(#[case] text: &str, #[case] mm: Option<(u32, u32)>) {
        assert_eq!(major_minor(text), mm);
    }

    #[rstest]
    #[case("v1.22.13", Some(13))]
    #[case("v1.14.0-rc.1", Some(0))]
    #[case("1.9", None)]
    fn patches(#[case] text: &str, #[case] want: Option<u32>) {
        assert_eq!(patch(text), want);
    }

    #[rstest]
    #[case("registry.k8s.io/kube-proxy:v1.32.3", Some("v1.32.3"))]
    #[case("localhost:5000/kube-proxy:v1.9.0", Some("v1.9.0"))]
    #[case("docker.io/flannel/flannel:v0.26.1@sha256:abc", Some("v0.26.1"))]
    #[case("kube-proxy", None)]
    fn image_tags(#[case] image: &str, #[case] tag: Option<&str>) {
        assert_eq!(image_tag(image), tag);
    }

    fn node(provider: &str, labels: &[&str], kubeadm: bool) -> Node {
        let mut n = Node::default();
        n.metadata.name = Some("n".into());
        n.metadata.labels = Some(labels.iter().map(|l| (l.to_string(), "x".to_string())).collect());
        if kubeadm {
            n.metadata.annotations = Some(BTreeMap::from([(
                "kubeadm.alpha.kubernetes.io/cri-socket".to_string(),
                "unix:///run/containerd/containerd.sock".to_string(),
            )]));
        }
        n.spec = Some(k8s_openapi::api::core::v1::NodeSpec {
            provider_id: (!provider.is_empty()).then(|| provider.to_string()),
            ..Default::default()
        });
        n
    }

    /// The platform fact from providerID and labels, each naming its source; an `azure://`
    /// providerID without AKS labels is not AKS (CAPZ, aks-engine).
    #[rstest]
    #[case::aks("azure:///subscriptions/x/vm/0", &["kubernetes.azure.com/agentpool"], false, "aks", "label kubernetes.azure.com/agentpool")]
    #[case::eks_by_label("aws:///us-west-2a/i-0abc", &["eks.amazonaws.com/nodegroup"], false, "eks", "label eks.amazonaws.com/nodegroup")]
    #[case::eks_by_provider("aws:///us-west-2a/i-0abc", &[], false, "eks", "spec.providerID aws://")]
    #[case::gke("gce://p/z/i", &["cloud.google.com/gke-nodepool"], false, "gke", "label cloud.google.com/gke-nodepool")]
    #[case::capz_is_kubeadm("azure:///subscriptions/x/vm/0", &[], true, "kubeadm", "cri-socket")]
    #[case::unknown("", &[], false, "unknown", "no node")]
    fn platform_from_provider_id_and_labels(
        #[case] provider: &str,
        #[case] labels: &[&str],
        #[case] kubeadm: bool,
        #[case] platform: &str,
        #[case] source: &str,
    ) {
        let f = platform_of(&[node(provider, labels, kubeadm)], false);
        assert_eq!(f.value, platform);
        assert!(f.source.contains(source), "{}", f.source);
    }

    /// kubeadm's ConfigMap names the platform where the deprecated annotation is gone (an
    /// upgraded cluster: kubernetes#129279); managed platforms' labels still decide first.
    #[rstest]
    #[case::upgraded_kubeadm("", &[], false, "kubeadm", "configmap kube-system/kubeadm-config")]
    #[case::capz("azure:///subscriptions/x/vm/0", &[], true, "kubeadm", "configmap kube-system/kubeadm-config")]
    #[case::aks_first("azure:///subscriptions/x/vm/0", &["kubernetes.azure.com/agentpool"], false, "aks", "label")]
    fn kubeadm_config_names_kubeadm(
        #[case] provider: &str,
        #[case] labels: &[&str],
        #[case] annotation: bool,
        #[case] platform: &str,
        #[case] source: &str,
    ) {
        let f = platform_of(&[node(provider, labels, annotation)], true);
        assert_eq!(f.value, platform);
        assert!(f.source.contains(source), "{}", f.source);
    }

    #[test]
    fn feature_gates_from_metrics() {
        let g = parse_feature_gates(
            "# HELP x\nkubernetes_feature_enabled{name=\"ContainerStopSignals\",stage=\"ALPHA\"} 0\nkubernetes_feature_enabled{name=\"WinDSR\",stage=\"BETA\"} 1\nother 1\n",
        );
        assert_eq!(g.get("ContainerStopSignals"), Some(&false));
        assert_eq!(g.get("WinDSR"), Some(&true));
        assert_eq!(g.len(), 2);
    }

    #[test]
    fn feature_gates_in_flags_and_configuration() {
        assert_eq!(gate_in_flag("WinDSR=true,WinOverlay=true", "WinDSR"), Some(true));
        assert_eq!(gate_in_flag("WinOverlay=true, WinDSR=false", "WinDSR"), Some(false));
        assert_eq!(gate_in_flag("WinOverlay=true", "WinDSR"), None);
        assert_eq!(
            gate_in_config("featureGates:\n  WinDSR: true\n  WinOverlay: true\n", "WinDSR"),
            Some(true)
        );
        assert_eq!(gate_in_config("featureGates: {}\n", "WinDSR"), None);
    }
}
