//! Cluster topologies: the YAML schema describing a bundled cluster's nodes, its parsing with
//! file:line:column errors, and the built-in default topology.
//!
//! Schema (every field but `nodes[].name` and `nodes[].os` has a default; unknown fields are
//! rejected):
//!
//! ```yaml
//! name: default                    # shown by `mixcheck sim profiles`
//! description: "…"
//! kubernetesVersion: v1.32.3       # reported by /version and the kubelets
//! platform: kubeadm                # kubeadm | aks | eks | gke (where the Windows agents run, providerID)
//! network:
//!   mode: l2bridge                 # l2bridge | overlay | l2tunnel (kubeadm only) | transparent
//!   cni: flannel                   # kubeadm: flannel | calico (default by mode); aks: azure-cni
//!                                  # (VNet, the default) | azure-cni-overlay (Azure CNI Overlay:
//!                                  # azure-cns/azure-cns-win, pod IPs from a private overlay CIDR)
//!   clusterDomain: cluster.local   # the kubelets' clusterDomain (configz) and the DNS zone
//!   clusterCidr: 10.244.0.0/16
//!   serviceCidr: 10.96.0.0/12
//!   ipFamilies: [IPv4]             # [IPv4, IPv6]: dual-stack (IPv4 primary; from Kubernetes 1.21)
//!   clusterCidrV6: fd00:10:244::/56  # dual-stack: each node's IPv6 pod CIDR is a /64 of it
//!   serviceCidrV6: fd00:10:96::/112  # dual-stack: IPv6 ClusterIPs
//!   dataplane: v1                  # gke only: v2 is Dataplane V2 (anetd/anetd-win, no kube-proxy)
//!   dsr: false                     # Windows kube-proxy --enable-dsr (externalTrafficPolicy: Local);
//!                                  # default: true on aks (Azure/AKS#2073), false elsewhere
//!   egressPorts: [443]             # only these outside TCP/UDP ports answer (default: all)
//!   loadBalancersReachable: true   # false: LoadBalancer ingress addresses do not answer this machine
//!   flannelVersion: v0.26.1        # overlay: a Windows node reaches its own pods from v0.12
//!   vxlanVni: 4096                 # flannel's VXLAN VNI on every node; on Windows >= 4096 (flannel
//!                                  # Documentation/backends.md)
//!   portMappings: true             # Windows CNI maps hostPorts; default by era (not 1.10–1.17)
//!   egress: true                   # false: flows to outside addresses are dropped (names still resolve)
//!   nodeAddressesReachable: true   # false: nothing answers this machine at a node's address
//!   loadBalancers: false           # true: LoadBalancer Services get an ingress address (a cloud controller)
//! timing:
//!   scale: 1.0                     # multiplies every simulated delay
//!   seed: 0                        # seeds the jitter and the transient events' choices
//!   programmingDelay: {linux: 1s, windows: 10s}   # a Service works on a node once its proxy programmed it
//!   windowsPull: 20s               # first pull of an image on a Windows node (Linux: a tenth); 0: fast
//!   transientEvents: false         # true: the Warning events real clusters emit on the way to Running
//! admission:
//!   deny: [hostPort, hostNetwork, hostProcess]   # refused outside the system namespaces
//!   by: webhook                    # who refuses them: webhook (Gatekeeper, 403) |
//!                                  # validatingAdmissionPolicy (422 Invalid) | podSecurity (403)
//!   privilegedNamespaces: true     # false: a Kyverno policy refuses namespaces labelled
//!                                  # pod-security.kubernetes.io/enforce=privileged
//! registries:                      # unlisted registries answer every pull (config::registry)
//!   registry.k8s.io: {auth: required}       # none | required: pulls need a matching imagePullSecret
//!   mcr.microsoft.com: {reachable: false}   # the host name does not resolve on the nodes
//! nodes:
//!   - name: win2022-1
//!     os: windows                  # linux | windows
//!     arch: amd64
//!     role: worker                 # control-plane | worker
//!     osImage: Windows Server 2022 Datacenter
//!     kernelVersion: 10.0.20348.2762   # Windows: major.minor.build.revision; the build label comes from it
//!     containerRuntime: containerd://1.7.20
//!     kubeletVersion: v1.32.3      # defaults to kubernetesVersion
//!     kubeProxyVersion: ""
//!     capacity: {cpu: "4", memory: 16Gi, pods: "110", ephemeral-storage: 128Gi}  # extended resources too
//!     maxPods: 110                 # the kubelet's maxPods: capacity and allocatable `pods`
//!     labels: {topology.kubernetes.io/zone: sim-1a}
//!     taints: [{key: os, value: windows, effect: NoSchedule}]
//!     kubelet: {systemReserved: {memory: 2Gi}}   # default: nothing reserved; also
//!                                  # windowsPriorityClass (default ABOVE_NORMAL_PRIORITY_CLASS, "": no flag)
//!     serviceBackendLimit: 1024    # Windows HNS backends per Service: 64, 1024 with the OS fix
//!     cniDelegate: win-bridge      # Windows: win-bridge | win-overlay | sdnbridge | sdnoverlay |
//!                                  # vpc-bridge | azure-cni | calico (default by platform, mode, era)
//!     faults: [mac-spoofing-disabled] # see `mixcheck sim faults`
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::config::delegate::CniDelegate;
use crate::config::faults::Fault;
use crate::config::platform::{Dataplane, NetworkMode, Os, Platform, PodNetwork};
use crate::config::policy_engine::PolicyEngine;
use crate::config::registry::Registries;

/// The built-in profiles: the default cluster and the clusters the seed documents describe.
pub const PROFILES: &[(&str, &str)] = &[
    ("default", DEFAULT_TOPOLOGY),
    ("k8s-1.5-ws2016", include_str!("../../topologies/k8s-1.5-ws2016.yaml")),
    ("k8s-1.9-ws1709", include_str!("../../topologies/k8s-1.9-ws1709.yaml")),
    (
        "k8s-1.14-ws2019-host-gw",
        include_str!("../../topologies/k8s-1.14-ws2019-host-gw.yaml"),
    ),
    (
        "k8s-1.14-ws2019-vxlan",
        include_str!("../../topologies/k8s-1.14-ws2019-vxlan.yaml"),
    ),
    (
        "current-ws2022-ws2025",
        include_str!("../../topologies/current-ws2022-ws2025.yaml"),
    ),
    ("aks", include_str!("../../topologies/aks.yaml")),
    ("aks-overlay", include_str!("../../topologies/aks-overlay.yaml")),
    ("eks", include_str!("../../topologies/eks.yaml")),
    ("gke", include_str!("../../topologies/gke.yaml")),
    ("gke-dpv2", include_str!("../../topologies/gke-dpv2.yaml")),
    (
        "kubeadm-flannel-hostprocess",
        include_str!("../../topologies/kubeadm-flannel-hostprocess.yaml"),
    ),
    ("kubeadm-calico", include_str!("../../topologies/kubeadm-calico.yaml")),
];

/// The default topology (docs/design.md): a Linux control plane, a Linux worker, Windows Server
/// 2019 and 2022 workers, Kubernetes v1.32.
pub const DEFAULT_TOPOLOGY: &str = include_str!("../../topologies/default.yaml");

/// A topology file could not be read or is invalid.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("{path}: cannot read: {cause}")]
    Read { path: String, cause: std::io::Error },

    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: String,
        line: u64,
        column: u64,
        message: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// The role label a node carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    ControlPlane,
    #[default]
    Worker,
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Taint {
    pub key: String,
    #[serde(default)]
    pub value: String,
    pub effect: String,
}

/// One node of the topology.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeSpec {
    pub name: String,
    pub os: Os,
    #[serde(default = "default_arch")]
    pub arch: String,
    #[serde(default)]
    pub role: Role,
    pub os_image: Option<String>,
    pub kernel_version: Option<String>,
    pub container_runtime: Option<String>,
    pub kubelet_version: Option<String>,
    #[serde(default)]
    pub kube_proxy_version: String,
    #[serde(default)]
    pub capacity: BTreeMap<String, String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub taints: Vec<Taint>,
    /// Expand this entry into `count` nodes named `<name>-1` … `<name>-<count>`.
    pub count: Option<u32>,
    /// The kubelet's resource reservations and eviction thresholds (served at configz).
    #[serde(default)]
    pub kubelet: KubeletConfig,
    /// Whether the runtime offers Hyper-V isolation (RuntimeClass handler `runhcs-wcow-hypervisor`).
    #[serde(default)]
    pub hyperv: bool,
    /// Whether the host's Windows PowerShell has the HNS cmdlets (`Get-HnsNetwork`,
    /// `Get-HnsPolicyList`). They come from a module, not from Windows itself:
    /// projectcalico/calico#6843 reports "'Get-HNSNetwork' is not recognized" on WS2019/2022
    /// containerd nodes (real-clusters.md §4). `hnsdiag` stays available either way.
    #[serde(default = "yes")]
    pub hns_cmdlets: bool,
    /// The pod sandbox (pause) image the runtime uses.
    pub pause_image: Option<String>,
    /// Faults injected on this node (see `mixcheck sim faults`).
    #[serde(default)]
    pub faults: Vec<String>,
    /// Cordoned (`kubectl cordon`): `spec.unschedulable` and the
    /// `node.kubernetes.io/unschedulable:NoSchedule` taint; no new pod is scheduled there.
    #[serde(default)]
    pub unschedulable: bool,
    /// A virtual kubelet (virtual-kubelet, ACI virtual nodes): label `type=virtual-kubelet` and
    /// the `virtual-kubelet.io/provider:NoSchedule` taint, as virtual-kubelet registers itself.
    #[serde(default, rename = "virtual")]
    pub virtual_kubelet: bool,
    /// The most backends one Service may have behind a Windows HNS load balancer: 64, or 1024
    /// where the node has the Windows fix that raised it (microsoft/Windows-Containers#93;
    /// NET-SVC-BACKEND-LIMIT). Windows only; default 64.
    pub service_backend_limit: Option<u32>,
    /// The kubelet's `maxPods`: the node's capacity and allocatable `pods` (overrides
    /// `capacity.pods`). EKS Windows nodes allow the IPv4 addresses of their one ENI minus one
    /// (<https://docs.aws.amazon.com/eks/latest/userguide/windows-support.html>). Default 110.
    pub max_pods: Option<u32>,
    /// The Windows CNI plugin the node's pod network delegates to, which its CNI configuration
    /// names (`crate::config::delegate`). Absent: the pod network's, by mode and install era
    /// ([`CniDelegate::by_default`]). Windows only.
    pub cni_delegate: Option<CniDelegate>,
}

/// Kubelet configuration knobs that change what the node reports and enforces.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KubeletConfig {
    /// Empty when absent, as the kubelet's own default; the documented recommendation for
    /// Windows nodes (MEM-SYS-RESERVED) is `{memory: 2Gi}`, which topologies state explicitly.
    pub system_reserved: Option<BTreeMap<String, String>>,
    pub kube_reserved: Option<BTreeMap<String, String>>,
    pub eviction_hard: Option<BTreeMap<String, String>>,
    pub enforce_node_allocatable: Option<Vec<String>>,
    /// The Windows kubelet's `--windows-priorityclass` (CPU-KUBELET-PRIORITY). Absent: the
    /// documented recommendation `ABOVE_NORMAL_PRIORITY_CLASS`, as cluster-api-provider-azure's
    /// Windows templates and OpenShift's Windows Machine Config Operator pass it; `""`: no flag
    /// (the process runs at the normal priority class).
    pub windows_priority_class: Option<String>,
}

/// The cluster network.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Network {
    #[serde(default)]
    pub mode: NetworkMode,
    /// The pod network's plugin on a kubeadm cluster (`flannel` or `calico`); absent: by mode.
    /// Managed platforms bring their own ([`PodNetwork::of`]).
    #[serde(default)]
    pub cni: Option<PodNetwork>,
    /// The cluster's DNS domain: the kubelets' `clusterDomain` (served at configz), the zone
    /// the cluster DNS answers and the search path pods get. Default `cluster.local`.
    #[serde(default = "default_cluster_domain")]
    pub cluster_domain: String,
    #[serde(default = "default_cluster_cidr")]
    pub cluster_cidr: String,
    #[serde(default = "default_service_cidr")]
    pub service_cidr: String,
    /// The cluster's IP families: `[IPv4]` (single-stack, the default) or `[IPv4, IPv6]`
    /// (dual-stack: nodes get an IPv6 pod CIDR too, pods an IPv6 address beside their IPv4 one,
    /// Services asking `PreferDualStack`/`RequireDualStack` an IPv6 ClusterIP;
    /// <https://kubernetes.io/docs/concepts/services-networking/dual-stack/>). IPv6-primary and
    /// IPv6-only clusters are not modelled (IPv6-only is unsupported with Windows nodes: W20, W22,
    /// WNET).
    #[serde(default = "default_ip_families")]
    pub ip_families: Vec<IpFamily>,
    /// Dual-stack: the IPv6 pod range; node N's IPv6 pod CIDR is its N-th /64.
    #[serde(default = "default_cluster_cidr_v6")]
    pub cluster_cidr_v6: String,
    /// Dual-stack: the IPv6 Service range.
    #[serde(default = "default_service_cidr_v6")]
    pub service_cidr_v6: String,
    /// kube-proxy on Windows runs with `--enable-dsr` (WinDSR): needed for
    /// `externalTrafficPolicy: Local` and client-IP preservation (NET-DSR). As written; absent:
    /// on for AKS (Azure/AKS#2073: WinDSR on by default; AgentBaker's `kubeproxystart.ps1`
    /// passes `--enable-dsr=true`), off elsewhere — the resolved value is [`Network::dsr`].
    #[serde(default, rename = "dsr")]
    pub dsr_given: Option<bool>,
    /// Whether the Windows kube-proxy runs with DSR: `dsr` as written, else the platform's default.
    #[serde(skip)]
    pub dsr: bool,
    /// GKE's dataplane: `v1` (kube-proxy) or `v2` (Dataplane V2: `anetd`/`anetd-win`, no
    /// kube-proxy on any node). Only on platform gke.
    #[serde(default)]
    pub dataplane: Dataplane,
    /// The outside TCP/UDP ports that answer flows from pods and nodes to outside addresses
    /// (a firewall that allows only these, e.g. `[443]`: Azure Firewall's application rules,
    /// a corporate egress proxy); the others are dropped (the client times out). The node
    /// subnet's resolver still answers. Absent: every port.
    #[serde(default)]
    pub egress_ports: Option<Vec<u16>>,
    /// Whether LoadBalancer ingress addresses answer a client outside the cluster (this
    /// machine: the runner). `false` models an internal load balancer or a runner whose route
    /// to it is blocked: from outside nothing answers (the client times out), while flows to
    /// the address from pods and nodes work as before (kube-proxy short-circuits them). Default
    /// true.
    #[serde(default = "yes")]
    pub load_balancers_reachable: bool,
    /// The flannel version on Windows nodes (overlay: node → local pod needs ≥ 0.12,
    /// NET-NODE-POD-OVERLAY). Absent: a current flannel.
    #[serde(default)]
    pub flannel_version: Option<String>,
    /// flannel's VXLAN Network Identifier (`net-conf.json` `Backend.VNI`), the same on every
    /// node (a node differing is the fault `vxlan-params-mismatch`). flannel
    /// `Documentation/backends.md`: "On Windows should be greater than or equal to 4096";
    /// a VXLAN VNI has 24 bits (RFC 7348). Default 4096.
    #[serde(default = "default_vxlan_vni")]
    pub vxlan_vni: u32,
    /// Whether the Windows CNI maps `hostPort`s (`portMappings` capability; NET-HOSTPORT).
    /// Absent: by era — the 1.9 guide's PortMapping works, the 1.14-era win-bridge/win-overlay
    /// plugins had no portMappings, current ones do.
    #[serde(default)]
    pub port_mappings: Option<bool>,
    /// Whether pods and nodes reach addresses outside the cluster. `false` models a private
    /// cluster whose only outbound route goes through a firewall that denies (AKS outbound type
    /// `userDefinedRouting`, <https://learn.microsoft.com/azure/aks/egress-outboundtype>): flows
    /// to outside hosts are dropped and the client times out. Names still resolve: the
    /// platform's resolver stays reachable from the nodes (Azure's 168.63.129.16,
    /// <https://learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16>;
    /// the Route 53 Resolver at the VPC base + 2 on EKS,
    /// <https://docs.aws.amazon.com/vpc/latest/userguide/AmazonDNS-concepts.html>). Default true.
    #[serde(default = "yes")]
    pub egress: bool,
    /// Whether the machine running the simulator reaches the nodes' addresses. `false` models
    /// AKS/EKS/GKE, whose node InternalIPs are private to the VNet/VPC: from outside, a
    /// connection to a node address gets no answer at all (a firewall dropping it). The
    /// addresses stay on this machine's loopback, where the closest a user-space program can
    /// come to a dropped SYN is a listener that accepts and never answers: every NodePort,
    /// hostPort and the kubelet's port 10250 of every node is held silent. Default true.
    #[serde(default = "yes")]
    pub node_addresses_reachable: bool,
    /// Whether a load-balancer controller gives `type: LoadBalancer` Services an ingress address,
    /// as a cloud controller manager (AKS, EKS, GKE) or MetalLB on premises does
    /// (<https://kubernetes.io/docs/concepts/services-networking/service/#loadbalancer>). The
    /// addresses are on this machine's loopback, beside the nodes'. Default false: a kubeadm
    /// cluster has none, and such Services stay `<pending>`.
    #[serde(default)]
    pub load_balancers: bool,
    /// What enforces NetworkPolicy (`none`, `calico`, `antrea`, `azure-npm`, `vpc-cni`), with
    /// each engine's documented reach on Windows ([`PolicyEngine::enforces_on`]). Absent: the
    /// pod network's own ([`PolicyEngine::resolve`]: `calico` with Calico, else `none`).
    #[serde(default)]
    pub policy_engine: Option<PolicyEngine>,
}

impl Default for Network {
    fn default() -> Self {
        Self {
            mode: NetworkMode::default(),
            cni: None,
            cluster_domain: default_cluster_domain(),
            cluster_cidr: default_cluster_cidr(),
            service_cidr: default_service_cidr(),
            ip_families: default_ip_families(),
            cluster_cidr_v6: default_cluster_cidr_v6(),
            service_cidr_v6: default_service_cidr_v6(),
            dsr_given: None,
            dsr: false,
            dataplane: Dataplane::V1,
            egress_ports: None,
            load_balancers_reachable: true,
            flannel_version: None,
            port_mappings: None,
            vxlan_vni: default_vxlan_vni(),
            egress: true,
            node_addresses_reachable: true,
            load_balancers: false,
            policy_engine: None,
        }
    }
}

fn default_cluster_domain() -> String {
    "cluster.local".into()
}

fn default_cluster_cidr() -> String {
    "10.244.0.0/16".into()
}

fn default_service_cidr() -> String {
    "10.96.0.0/12".into()
}

fn default_ip_families() -> Vec<IpFamily> {
    vec![IpFamily::IPv4]
}

fn default_cluster_cidr_v6() -> String {
    "fd00:10:244::/56".into()
}

fn default_service_cidr_v6() -> String {
    "fd00:10:96::/112".into()
}

/// An IP family (`spec.ipFamilies` of a Service, `network.ipFamilies` of the cluster).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum IpFamily {
    IPv4,
    IPv6,
}

impl Network {
    /// Whether the cluster is dual-stack (`ipFamilies: [IPv4, IPv6]`).
    pub fn dual_stack(&self) -> bool {
        self.ip_families.contains(&IpFamily::IPv6)
    }
}

/// How fast simulated kubelets work, and the seed of their jitter.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Timing {
    /// Multiplies every simulated delay (1.0: the built-in fast timings; 0 is instant).
    #[serde(default = "one")]
    pub scale: f64,
    /// Seed of the per-pod jitter: the same seed gives the same timings.
    #[serde(default)]
    pub seed: u64,
    /// How long a node's proxy takes to program a new or changed Service (its ClusterIP,
    /// NodePorts and endpoints), per node OS; until then flows through the Service on that node
    /// go nowhere. Real clusters lag like this: each Windows kube-proxy programs HNS
    /// load-balancer policies seconds to minutes after a change, and upstream's e2e waits for it
    /// (`test/e2e/framework/service/const.go`: `KubeProxyLagTimeout` 5 m,
    /// `KubeProxyEndpointLagTimeout` 30 s). Scaled by `scale`; none by default.
    #[serde(default)]
    pub programming_delay: ProgrammingDelay,
    /// How long pulling a Windows image that is not on the node yet takes (Linux images: a
    /// tenth of it); once pulled, the image is in the node's cache and the next pod starts
    /// without pulling. Real Windows images pull for minutes: servercore layers are gigabytes
    /// (<https://learn.microsoft.com/virtualization/windowscontainers/manage-containers/container-base-images>).
    /// Scaled by `scale`; 0 (the default) keeps the built-in fast pulls.
    #[serde(default, deserialize_with = "duration")]
    pub windows_pull: std::time::Duration,
    /// Whether kubelets emit the transient Warning events real clusters show on the way to
    /// Running (`FailedMount` of `kube-root-ca.crt` just after the namespace was created,
    /// kubernetes/kubernetes#105204; one failed pull attempt then a successful pull; one
    /// `FailedCreatePodSandBox` that the retry gets past). No pod's outcome changes. Default false.
    #[serde(default)]
    pub transient_events: bool,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            scale: 1.0,
            seed: 0,
            programming_delay: ProgrammingDelay::default(),
            windows_pull: std::time::Duration::ZERO,
            transient_events: false,
        }
    }
}

impl Timing {
    /// The programming delay of a node of this OS, scaled.
    pub fn programming(&self, os: Os) -> std::time::Duration {
        let d = match os {
            Os::Linux => self.programming_delay.linux,
            Os::Windows => self.programming_delay.windows,
        };
        d.mul_f64(self.scale)
    }

    /// How long pulling an image not on a node of this OS takes (`windowsPull`, a tenth on
    /// Linux), scaled; None when `windowsPull` is unset (the built-in fast pull applies).
    pub fn first_pull(&self, os: Os) -> Option<std::time::Duration> {
        if self.windows_pull.is_zero() {
            return None;
        }
        let d = match os {
            Os::Linux => self.windows_pull / 10,
            Os::Windows => self.windows_pull,
        };
        Some(d.mul_f64(self.scale))
    }
}

/// A privilege an admission policy can deny (`admission.deny`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Privilege {
    /// A container port with a `hostPort`.
    HostPort,
    /// `spec.hostNetwork: true`.
    HostNetwork,
    /// `securityContext.windowsOptions.hostProcess: true` on the pod or a container.
    HostProcess,
}

/// Which part of the API server refuses the denied privileges (`admission.by`); each answers
/// with its own status code, reason and message (`store::policy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Enforcement {
    /// A policy engine's validating webhook (Gatekeeper's denial, 403 Forbidden).
    #[default]
    Webhook,
    /// The API server's own ValidatingAdmissionPolicy plugin (422 Invalid).
    ValidatingAdmissionPolicy,
    /// Pod Security admission at level baseline (403 Forbidden).
    PodSecurity,
}

/// The cluster's admission policy: pods using the listed privileges are refused outside the
/// system namespaces, by a policy webhook, a ValidatingAdmissionPolicy or Pod Security
/// admission (`by`); with `privileged_namespaces: false`, namespaces labelled for the
/// `privileged` Pod Security level are refused as well.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Admission {
    #[serde(default)]
    pub deny: Vec<Privilege>,
    #[serde(default)]
    pub by: Enforcement,
    /// Whether a namespace may carry `pod-security.kubernetes.io/enforce=privileged`.
    #[serde(default = "yes")]
    pub privileged_namespaces: bool,
    /// Whether the gMSA webhook (kubernetes-sigs/windows-gmsa) and its GMSACredentialSpec CRD
    /// are installed (`store::policy::gmsa`). Default false.
    #[serde(default)]
    pub gmsa_webhook: bool,
}

impl Admission {
    /// Nothing denied, namespaces unrestricted: a cluster without admission policy.
    pub const OPEN: Admission = Admission {
        deny: Vec::new(),
        by: Enforcement::Webhook,
        privileged_namespaces: true,
        gmsa_webhook: false,
    };
}

impl Default for Admission {
    fn default() -> Self {
        Self::OPEN
    }
}

/// `timing.programmingDelay`: `{linux: 200ms, windows: 3s}`.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProgrammingDelay {
    #[serde(default, deserialize_with = "duration")]
    pub linux: std::time::Duration,
    #[serde(default, deserialize_with = "duration")]
    pub windows: std::time::Duration,
}

/// A duration written `200ms`, `3s`, `2m` (or a bare number of seconds).
fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<std::time::Duration, D::Error> {
    let text = String::deserialize(d)?;
    parse_duration(&text)
        .ok_or_else(|| serde::de::Error::custom(format!("{text:?} is not a duration such as 200ms, 3s or 2m")))
}

fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: f64 = n.parse().ok().filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "s" | "" => n,
        "m" => n * 60.0,
        _ => return None,
    };
    Some(std::time::Duration::from_secs_f64(secs))
}

fn one() -> f64 {
    1.0
}

/// One platform of an image in the catalogue.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImagePlatform {
    pub os: Os,
    #[serde(default = "default_arch")]
    pub arch: String,
    /// Windows: the image's OS build (17763, 20348, 26100, …).
    pub build: Option<u32>,
}

/// An image added to (or overriding) the built-in catalogue.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImageSpec {
    /// Repository and tag, e.g. `example.com/app:1.0` (a missing tag means `latest`).
    pub name: String,
    pub platforms: Vec<ImagePlatform>,
    /// A manifest list is matched by platform at pull time; a single manifest is pulled as is.
    #[serde(default = "yes")]
    pub manifest_list: bool,
    /// Windows: the user the image runs as (ContainerAdministrator or ContainerUser).
    pub user: Option<String>,
    /// Whether the default entrypoint keeps running (a server) or exits at once.
    #[serde(default)]
    pub long_running: bool,
}

fn yes() -> bool {
    true
}

fn default_vxlan_vni() -> u32 {
    crate::config::platform::VXLAN_VNI
}

fn default_arch() -> String {
    "amd64".into()
}

/// A cluster topology.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Topology {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "default_version")]
    pub kubernetes_version: String,
    /// Who built the cluster (kubeadm, or a managed platform).
    #[serde(default)]
    pub platform: Platform,
    #[serde(default)]
    pub network: Network,
    #[serde(default)]
    pub timing: Timing,
    #[serde(default)]
    pub admission: Admission,
    /// The registries that want credentials or do not resolve (`crate::config::registry`).
    #[serde(default)]
    pub registries: Registries,
    /// Images added to the built-in catalogue.
    #[serde(default)]
    pub images: Vec<ImageSpec>,
    pub nodes: Vec<NodeSpec>,
}

fn default_version() -> String {
    "v1.32.3".into()
}

impl Topology {
    /// The longest time a node's proxy takes to program a new Service (the topology's
    /// `timing.programmingDelay`, scaled, over the OSes its nodes run).
    pub fn programming_delay(&self) -> std::time::Duration {
        self.nodes
            .iter()
            .map(|n| self.timing.programming(n.os))
            .max()
            .unwrap_or_default()
    }

    /// The same cluster without the time real clusters take: proxies program at once, images
    /// pull at once, no transient Warning events (for tests of other behaviours).
    pub fn instant(mut self) -> Self {
        self.timing.programming_delay = ProgrammingDelay::default();
        self.timing.windows_pull = std::time::Duration::ZERO;
        self.timing.transient_events = false;
        self
    }

    /// The same cluster on the wall clock (`timing.scale` 1), its programming delays and first
    /// pulls as long in real time as before: a cluster served to outside clients, which judge
    /// its time on their own clock as on a real cluster (a process's shutdown delay takes its
    /// seconds). The kubelet's own steps take their unscaled, built-in time.
    pub fn on_wall_clock(mut self) -> Self {
        let scale = self.timing.scale;
        if scale != 1.0 {
            let p = &mut self.timing.programming_delay;
            p.linux = p.linux.mul_f64(scale);
            p.windows = p.windows.mul_f64(scale);
            self.timing.windows_pull = self.timing.windows_pull.mul_f64(scale);
            self.timing.scale = 1.0;
        }
        self
    }

    /// The built-in default topology.
    pub fn default_cluster() -> Self {
        match Self::parse(DEFAULT_TOPOLOGY, "<built-in default topology>") {
            Ok(t) => t,
            // The embedded file is checked by a unit test; this cannot happen in a release.
            Err(e) => panic!("built-in topology is invalid: {e}"),
        }
    }

    /// A built-in profile by name.
    pub fn profile(name: &str) -> Result<Self, TopologyError> {
        let (_, text) = PROFILES
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| TopologyError::Invalid {
                path: name.to_string(),
                message: format!(
                    "no built-in profile of that name (profiles: {})",
                    PROFILES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ),
            })?;
        Self::parse(text, &format!("<profile {name}>"))
    }

    /// Reads and validates a topology file.
    pub fn load(path: &Path) -> Result<Self, TopologyError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|cause| TopologyError::Read {
            path: shown.clone(),
            cause,
        })?;
        Self::parse(&text, &shown)
    }

    /// Parses and validates topology YAML; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, TopologyError> {
        let topology: Topology = serde_saphyr::from_str(text).map_err(|e| {
            let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
            TopologyError::Parse {
                path: origin.to_string(),
                line,
                column,
                message: first_line(&e.to_string()),
            }
        })?;
        let mut topology = topology;
        topology.network.dsr = topology.network.dsr_given.unwrap_or(topology.platform == Platform::Aks);
        topology.expand_counts();
        topology.validate(origin)?;
        Ok(topology)
    }

    fn expand_counts(&mut self) {
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for node in self.nodes.drain(..) {
            match node.count {
                None => nodes.push(node),
                Some(n) => {
                    for i in 1..=n {
                        let mut copy = node.clone();
                        copy.name = format!("{}-{i}", node.name);
                        copy.count = None;
                        nodes.push(copy);
                    }
                }
            }
        }
        self.nodes = nodes;
    }

    fn validate(&self, origin: &str) -> Result<(), TopologyError> {
        let invalid = |message: String| TopologyError::Invalid {
            path: origin.to_string(),
            message,
        };
        if !(self.timing.scale.is_finite() && self.timing.scale >= 0.0) {
            return Err(invalid(format!(
                "timing.scale {} must be a number >= 0",
                self.timing.scale
            )));
        }
        if self.nodes.is_empty() {
            return Err(invalid("a topology needs at least one node".into()));
        }
        let count: usize = self.nodes.iter().map(|n| n.count.map_or(1, |c| c as usize)).sum();
        if count > MAX_NODES {
            return Err(invalid(format!(
                "{count} nodes: the bundled cluster gives each node a /24 of pod addresses, {} at most",
                MAX_NODES
            )));
        }
        parse_version(&self.kubernetes_version).ok_or_else(|| {
            invalid(format!(
                "kubernetesVersion {:?} is not of the form v1.N.P",
                self.kubernetes_version
            ))
        })?;
        if let Some(modes) = self.platform.modes()
            && !modes.contains(&self.network.mode)
        {
            return Err(invalid(format!(
                "platform {} runs network.mode {}, not {} ({})",
                self.platform.as_str(),
                modes.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(" or "),
                self.network.mode.as_str(),
                self.platform.modes_source()
            )));
        }
        if self.network.dataplane == Dataplane::V2 && self.platform != Platform::Gke {
            return Err(invalid(format!(
                "network.dataplane v2 is GKE Dataplane V2 (anetd, no kube-proxy): only on platform gke, not {}",
                self.platform.as_str()
            )));
        }
        if let Some(ports) = &self.network.egress_ports
            && ports.contains(&0)
        {
            return Err(invalid("network.egressPorts: port 0 is not a port".into()));
        }
        match (self.platform, self.network.cni) {
            (_, None)
            | (Platform::Kubeadm, Some(PodNetwork::Flannel))
            | (Platform::Aks, Some(PodNetwork::AzureCni | PodNetwork::AzureCniOverlay)) => {}
            (Platform::Kubeadm, Some(PodNetwork::Calico))
                if matches!(self.network.mode, NetworkMode::Overlay | NetworkMode::L2bridge) => {}
            (platform, Some(cni)) => {
                return Err(invalid(format!(
                    "network.cni {} is not a choice on platform {} in mode {} (kubeadm: flannel, or calico on overlay or l2bridge; aks: azure-cni or azure-cni-overlay)",
                    cni.as_str(),
                    platform.as_str(),
                    self.network.mode.as_str()
                )));
            }
        }
        self.validate_families(&invalid)?;
        self.validate_delegates(&invalid)?;
        if !crate::vocab::names::is_dns_subdomain(&self.network.cluster_domain) {
            return Err(invalid(format!(
                "network.clusterDomain {:?} is not a DNS domain",
                self.network.cluster_domain
            )));
        }
        let mut seen = std::collections::BTreeSet::new();
        for node in &self.nodes {
            if !crate::vocab::names::is_dns_subdomain(&node.name) {
                return Err(invalid(format!(
                    "node name {:?} is not a valid DNS subdomain",
                    node.name
                )));
            }
            if !seen.insert(node.name.as_str()) {
                return Err(invalid(format!("node {:?} is listed twice", node.name)));
            }
            if node.os == Os::Windows && node.windows_build().is_none() {
                return Err(invalid(format!(
                    "node {:?}: kernelVersion {:?} is not a Windows version (10.0.BUILD.REVISION)",
                    node.name,
                    node.kernel_version()
                )));
            }
            for name in &node.faults {
                let fault = match crate::config::faults::Injected::parse(name) {
                    Ok(injected) => injected.fault,
                    Err(why) => return Err(invalid(format!("node {:?}: {why}", node.name))),
                };
                if let Err(why) = self
                    .check_fault(node.os, fault)
                    .and_then(|()| self.check_node_fault(node, fault))
                {
                    return Err(invalid(format!("node {:?}: {why}", node.name)));
                }
            }
            for taint in &node.taints {
                if !matches!(taint.effect.as_str(), "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
                    return Err(invalid(format!(
                        "node {:?}: taint effect {:?} must be NoSchedule, PreferNoSchedule or NoExecute",
                        node.name, taint.effect
                    )));
                }
            }
        }
        Ok(())
    }

    /// `network.ipFamilies` and the IPv6 ranges of a dual-stack cluster.
    fn validate_families(&self, invalid: &dyn Fn(String) -> TopologyError) -> Result<(), TopologyError> {
        let families = &self.network.ip_families;
        match families.as_slice() {
            [IpFamily::IPv4] => return Ok(()),
            [IpFamily::IPv4, IpFamily::IPv6] => {}
            _ => {
                return Err(invalid(format!(
                    "network.ipFamilies {families:?}: the bundled cluster models [IPv4] and [IPv4, IPv6] (IPv6-only clusters are not supported with Windows nodes: W20, W22, WNET)"
                )));
            }
        }
        // Dual-stack is on by default from 1.21 (IPv6DualStack beta; GA in 1.23); before, it
        // needed the alpha feature gate, which the simulator does not model.
        if self.version() < (1, 21) {
            return Err(invalid(format!(
                "network.ipFamilies [IPv4, IPv6] needs kubernetesVersion 1.21 or later (IPv6DualStack on by default), not {}",
                self.kubernetes_version
            )));
        }
        match crate::vocab::ipv6::V6Cidr::parse(&self.network.cluster_cidr_v6) {
            Some(c) if c.prefix <= 56 => {}
            _ => {
                return Err(invalid(format!(
                    "network.clusterCidrV6 {:?} must be an IPv6 range of /56 or wider (each node's pod CIDR is a /64 of it)",
                    self.network.cluster_cidr_v6
                )));
            }
        }
        match crate::vocab::ipv6::V6Cidr::parse(&self.network.service_cidr_v6) {
            // kube-apiserver refuses IPv6 service ranges wider than /108.
            Some(c) if (108..=120).contains(&c.prefix) => Ok(()),
            _ => Err(invalid(format!(
                "network.serviceCidrV6 {:?} must be an IPv6 range between /108 and /120",
                self.network.service_cidr_v6
            ))),
        }
    }

    /// Whether `fault` can be injected on a node of this OS of this cluster, the error saying
    /// why not: the fault's OS and network modes ([`Fault::check`]), its pod network plugin
    /// ([`Fault::check_network`]) and its platform and dataplane ([`Fault::check_platform`]).
    pub fn check_fault(&self, os: Os, fault: Fault) -> Result<(), String> {
        fault
            .check(os, self.network.mode)
            .and_then(|()| fault.check_platform(self.platform, self.network.dataplane))
            .and_then(|()| fault.check_network(self.pod_network()))
    }

    /// `network.vxlanVni` and the nodes' `cniDelegate`: a VNI flannel accepts on Windows
    /// (flannel `Documentation/backends.md`: "On Windows should be greater than or equal to
    /// 4096"; 24 bits, RFC 7348), and a delegate only on a Windows node, of a network mode it
    /// builds and a plugin the pod network delegates to ([`CniDelegate::modes`], [`CniDelegate::serves`]).
    fn validate_delegates(&self, invalid: &dyn Fn(String) -> TopologyError) -> Result<(), TopologyError> {
        let vni = self.network.vxlan_vni;
        if vni > 0x00ff_ffff {
            return Err(invalid(format!(
                "network.vxlanVni {vni}: a VXLAN network identifier has 24 bits (at most 16777215, RFC 7348)"
            )));
        }
        if vni < crate::config::platform::VXLAN_VNI && self.nodes.iter().any(|n| n.os == Os::Windows) {
            return Err(invalid(format!(
                "network.vxlanVni {vni}: flannel's VXLAN VNI on Windows must be at least 4096 (flannel Documentation/backends.md: \"On Windows should be greater than or equal to 4096\")"
            )));
        }
        for node in &self.nodes {
            let Some(delegate) = node.cni_delegate else {
                continue;
            };
            if node.os != Os::Windows {
                return Err(invalid(format!(
                    "node {:?}: cniDelegate {} names a Windows CNI plugin; the node runs Linux",
                    node.name,
                    delegate.as_str()
                )));
            }
            if !delegate.modes().contains(&self.network.mode) {
                return Err(invalid(format!(
                    "node {:?}: cniDelegate {} builds {} networks, not network.mode {}",
                    node.name,
                    delegate.as_str(),
                    delegate
                        .modes()
                        .iter()
                        .map(|m| m.as_str())
                        .collect::<Vec<_>>()
                        .join(" or "),
                    self.network.mode.as_str()
                )));
            }
            if !delegate.serves(self.pod_network()) {
                return Err(invalid(format!(
                    "node {:?}: the pod network {} does not delegate to {} on platform {}",
                    node.name,
                    self.pod_network().as_str(),
                    delegate.as_str(),
                    self.platform.as_str()
                )));
            }
        }
        Ok(())
    }

    /// Whether `fault` can occur on node `node` under the cluster's policy engine.
    fn check_node_fault(&self, node: &NodeSpec, fault: Fault) -> Result<(), String> {
        let kernel = node.kernel_version();
        let build = kernel.split('.').nth(2).and_then(|b| b.parse::<u32>().ok());
        self.policy_engine().check_fault(fault, node.os, build)
    }

    /// The cluster's NetworkPolicy engine: `network.policyEngine`, else the pod network's.
    pub fn policy_engine(&self) -> PolicyEngine {
        PolicyEngine::resolve(self.network.policy_engine, self.pod_network())
    }

    /// Adds fault `fault` (its name, `@P` where intermittent) to node `node`, as
    /// `--fault NODE:FAULT[@P]` does; the error
    /// says why not (no such node or fault, or [`Topology::check_fault`]'s reason).
    pub fn add_fault(&mut self, node: &str, fault: &str) -> Result<(), String> {
        let known = crate::config::faults::Injected::parse(fault)?.fault;
        let Some(spec) = self.nodes.iter().find(|n| n.name == node) else {
            return Err(format!("the topology has no node {node:?}"));
        };
        self.check_fault(spec.os, known)
            .and_then(|()| self.check_node_fault(spec, known))
            .map_err(|why| format!("{why} (node {node})"))?;
        if let Some(target) = self.nodes.iter_mut().find(|n| n.name == node) {
            target.faults.push(fault.to_string());
        }
        Ok(())
    }

    /// Every node's faults checked again ([`Topology::check_fault`]): a caller may have added
    /// faults after the topology was loaded.
    pub fn check_faults(&self) -> Result<(), String> {
        for node in &self.nodes {
            for name in &node.faults {
                let fault = crate::config::faults::Injected::parse(name)
                    .map_err(|why| format!("node {:?}: {why}", node.name))?
                    .fault;
                self.check_fault(node.os, fault)
                    .and_then(|()| self.check_node_fault(node, fault))
                    .map_err(|why| format!("node {:?}: {why}", node.name))?;
            }
        }
        Ok(())
    }

    /// Whether the cluster runs GKE Dataplane V2 (anetd programs Services; no kube-proxy).
    pub fn dataplane_v2(&self) -> bool {
        self.network.dataplane == Dataplane::V2
    }

    /// The plugin running the pod network.
    pub fn pod_network(&self) -> PodNetwork {
        PodNetwork::of(self.platform, self.network.mode, self.network.cni)
    }

    /// The `major.minor` of the cluster's version.
    pub fn version(&self) -> (u32, u32) {
        parse_version(&self.kubernetes_version).unwrap_or((1, 32))
    }
}

impl NodeSpec {
    pub fn os_image(&self) -> String {
        self.os_image.clone().unwrap_or_else(|| match self.os {
            Os::Linux => "Ubuntu 22.04.5 LTS".into(),
            // The product name the kubelet reads from the registry: LTSC releases carry their
            // year, semi-annual ones (1709, 1803, 1903 … 20H2, 23H2) only the edition.
            Os::Windows => match self.build_number() {
                Some(b) if b >= 26100 => "Windows Server 2025 Datacenter".into(),
                Some(b) if b > 20348 => "Windows Server Datacenter".into(),
                Some(20348) => "Windows Server 2022 Datacenter".into(),
                Some(b) if b > 17763 => "Windows Server Datacenter".into(),
                Some(17763) | None => "Windows Server 2019 Datacenter".into(),
                Some(b) if b > 14393 => "Windows Server Datacenter".into(),
                Some(_) => "Windows Server 2016 Datacenter".into(),
            },
        })
    }

    pub fn kernel_version(&self) -> String {
        self.kernel_version.clone().unwrap_or_else(|| match self.os {
            Os::Linux => "6.8.0-1017-azure".into(),
            Os::Windows => "10.0.20348.2762".into(),
        })
    }

    pub fn container_runtime(&self) -> String {
        self.container_runtime
            .clone()
            .unwrap_or_else(|| "containerd://1.7.22".into())
    }

    /// `10.0.17763` for a Windows node (the `node.kubernetes.io/windows-build` label).
    pub fn windows_build(&self) -> Option<String> {
        if self.os != Os::Windows {
            return None;
        }
        let kernel = self.kernel_version();
        let parts: Vec<&str> = kernel.split('.').collect();
        if parts.len() < 3 || parts.iter().take(3).any(|p| p.parse::<u32>().is_err()) {
            return None;
        }
        Some(parts[..3].join("."))
    }

    /// The Windows build number (17763, 20348, …).
    pub fn build_number(&self) -> Option<u32> {
        if self.os != Os::Windows {
            return None;
        }
        self.kernel_version().split('.').nth(2)?.parse().ok()
    }
}

/// `v1.32.3` → (1, 32).
pub fn parse_version(v: &str) -> Option<(u32, u32)> {
    let rest = v.strip_prefix('v')?;
    let mut parts = rest.splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor_text = parts.next()?;
    let minor = minor_text.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    Some((major, minor))
}

/// The parser's message without its own "error: line L column C:" prefix (the error names
/// the position itself).
fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or(s).trim();
    let line = line.strip_prefix("error:").map(str::trim_start).unwrap_or(line);
    match line.strip_prefix("line ").and_then(|rest| rest.split_once(": ")) {
        Some((position, message)) if position.contains("column") => message.to_string(),
        _ => line.to_string(),
    }
}

/// The most nodes whose pod CIDRs [`node_pod_cidr`] can cut.
pub const MAX_NODES: usize = (256 - 244 + 96) * 256;

/// Node `index`'s pod CIDR, a /24 each: `10.244.0.0/24` on, as far as `10.255.255.0/24` (3,072
/// nodes), then on from `10.0.0.0/24` up to the Service range (`10.96.0.0/12`), so that a
/// topology of up to [`MAX_NODES`] nodes gets distinct, valid addresses (a 5,000-node cluster
/// uses a pod CIDR wider than a /16, as kube-controller-manager's `--cluster-cidr` allows). None
/// beyond.
pub fn node_pod_cidr(index: usize) -> Option<String> {
    let block = index / 256;
    let second = if block < 12 { 244 + block } else { block - 12 };
    (second < 96 || (244..=255).contains(&second))
        .then(|| format!("10.{second}.{}.0/24", index % 256))
        .filter(|_| index < MAX_NODES)
}

#[cfg(test)]
mod tests;
