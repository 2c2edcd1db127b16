//! The platform words topologies, profiles and faults share: a node's operating system, the pod
//! network's mode, and how flannel runs in each mode (its CNI network, subnet file and VXLAN
//! parameters). Uses nothing else in `config`.

use serde::Deserialize;

/// Operating system of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    Linux,
    Windows,
}

impl Os {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Linux => "linux",
            Self::Windows => "windows",
        }
    }
}

/// The pod network's mode (the Windows CNI/HNS network type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum NetworkMode {
    /// flannel host-gw / win-bridge (HNS L2Bridge).
    #[default]
    L2bridge,
    /// flannel vxlan / win-overlay (HNS Overlay).
    Overlay,
    /// HNS L2Tunnel: Azure CNI's `tunnel` mode (Azure/azure-container-networking
    /// `docs/network.md`: "l2-tunnel" and "l2-bridge" modes; `network/network_windows.go`:
    /// `hnsL2tunnel`), which a user-built (aks-engine-style) kubeadm cluster may choose. AKS runs
    /// bridge mode ([`Platform::modes`]).
    L2tunnel,
    /// ovn-kubernetes, or the 1.5-era transparent network.
    Transparent,
}

/// How flannel runs on the Windows nodes of a flannel-based network: its backend and the CNI
/// network (which is also the HNS network) its CNI plugin delegates to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flannel {
    /// `net-conf.json` `Backend.Type`.
    pub backend: &'static str,
    /// The CNI network name, and the name of the HNS network flanneld creates.
    pub network: &'static str,
    /// The Windows CNI plugin the `flannel` plugin delegates to.
    pub delegate: &'static str,
}

/// Where flanneld writes, and the flannel CNI plugin reads, the node's subnet on Windows.
pub const WINDOWS_SUBNET_ENV: &str = r"C:\run\flannel\subnet.env";

impl NetworkMode {
    /// The mode as written in topologies.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::L2bridge => "l2bridge",
            Self::Overlay => "overlay",
            Self::L2tunnel => "l2tunnel",
            Self::Transparent => "transparent",
        }
    }

    /// The flannel set-up of the flannel-based modes (host-gw over win-bridge, vxlan over
    /// win-overlay); None for Azure CNI and transparent networks.
    pub fn flannel(self) -> Option<Flannel> {
        match self {
            Self::L2bridge => Some(Flannel {
                backend: "host-gw",
                network: "cbr0",
                delegate: "win-bridge",
            }),
            Self::Overlay => Some(Flannel {
                backend: "vxlan",
                network: "vxlan0",
                delegate: "win-overlay",
            }),
            Self::L2tunnel | Self::Transparent => None,
        }
    }
}

/// flannel's VXLAN parameters every node must share on Windows (NET-FLANNEL-VXLAN-PARAMS).
pub const VXLAN_VNI: u32 = 4096;
pub const VXLAN_PORT: u16 = 4789;

/// Who built the cluster: a kubeadm cluster set up by hand (sig-windows-tools on Windows), or
/// a managed platform. It decides where the Windows node agents run (managed platforms run
/// kube-proxy and their CNI's agent as Windows services, not as pods), the pod network's
/// plugin, `spec.providerID` and whether node names are the machines' computer names.
/// Sources: AKS: Azure/AKS#820 and the AKS Windows docs; EKS: "Windows support" in the EKS user
/// guide; GKE: "Windows Server node pools".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    #[default]
    Kubeadm,
    Aks,
    Eks,
    Gke,
}

impl Platform {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Kubeadm => "kubeadm",
            Self::Aks => "aks",
            Self::Eks => "eks",
            Self::Gke => "gke",
        }
    }

    /// Whether the platform is a managed one (its Windows kube-proxy is a node service).
    pub fn managed(self) -> bool {
        self != Self::Kubeadm
    }

    /// The network modes the platform's own CNI gives Windows pods, all `L2Bridge`: AKS's Azure
    /// CNI runs in bridge mode on Windows for VNet and Overlay alike (Azure/azure-container-networking
    /// `cni/azure-windows.conflist` `"mode": "bridge"`, `network/network_windows.go`
    /// `opModeBridge` → `hnsL2bridge`; AgentBaker's overlay conflist `"mode": "bridge"`); EKS's
    /// vpc-bridge plugin (aws/amazon-vpc-cni-plugins `plugins/vpc-bridge/network/bridge_windows.go`:
    /// `hnsL2Bridge`); GKE's `l2bridge` network (kubernetes `cluster/gce/windows/k8s-node-setup.psm1`:
    /// `KUBE_NETWORK = "l2bridge"`). None: any (kubeadm).
    pub fn modes(self) -> Option<&'static [NetworkMode]> {
        match self {
            Self::Kubeadm => None,
            Self::Aks | Self::Eks | Self::Gke => Some(&[NetworkMode::L2bridge]),
        }
    }

    /// The source [`Platform::modes`] follows, for the error that refuses another mode.
    pub fn modes_source(self) -> &'static str {
        match self {
            Self::Kubeadm => "",
            Self::Aks => {
                "Azure CNI runs in bridge mode on Windows for VNet and Overlay alike: Azure/azure-container-networking cni/azure-windows.conflist \"mode\": \"bridge\", network_windows.go opModeBridge -> hnsL2bridge; AgentBaker's overlay conflist"
            }
            Self::Eks => {
                "the VPC CNI's vpc-bridge plugin creates an HNS L2Bridge network: aws/amazon-vpc-cni-plugins plugins/vpc-bridge/network/bridge_windows.go"
            }
            Self::Gke => {
                "GKE's Windows set-up creates the HNS L2Bridge network l2bridge: kubernetes cluster/gce/windows/k8s-node-setup.psm1"
            }
        }
    }

    /// `spec.providerID` as each cloud's node controller writes it (`azure://`, `aws://`,
    /// `gce://`); kubeadm clusters on bare metal have none, the simulator's own scheme stands in.
    pub fn provider_id(self, node: &str, index: usize) -> String {
        let hex = crate::vocab::hash::Fnv::default().write(node.as_bytes()).finish();
        match self {
            Self::Kubeadm => format!("mixcheck-sim://{node}"),
            Self::Aks => format!(
                "azure:///subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/mc_sim_sim_eastus/providers/Microsoft.Compute/virtualMachineScaleSets/{}/virtualMachines/{index}",
                node.trim_end_matches(|c: char| c.is_ascii_digit())
                    .trim_end_matches("-vmss")
            ),
            Self::Eks => format!("aws:///us-west-2a/i-{:017x}", hex & 0x0fff_ffff_ffff_ffff),
            Self::Gke => format!("gce://sim-project/us-central1-a/{node}"),
        }
    }

    /// Whether a node's name is its machine's computer name (what `hostname` prints): on
    /// kubeadm and AKS it is; EKS names nodes by their private DNS name
    /// (`ip-10-0-1-23.us-west-2.compute.internal`) and a Windows computer name has at most 15
    /// characters (NetBIOS), so GKE's long instance names are cut.
    pub fn node_name_is_computer_name(self) -> bool {
        matches!(self, Self::Kubeadm | Self::Aks)
    }
}

/// The start of the HNS network's name the VPC CNI's vpc-bridge plugin creates: its CNI
/// network's name (`vpc`), `br`, then the ENI's MAC address without colons
/// (aws/amazon-vpc-cni-plugins `plugins/vpc-bridge/network/bridge_windows.go`:
/// `hcnNetworkNameFormat = "%sbr%s"`).
pub const VPC_BRIDGE_PREFIX: &str = "vpcbr";

/// GKE's dataplane (`network.dataplane`): v1 runs kube-proxy; v2 runs `anetd` (Linux) and
/// `anetd-win` (Windows), which program Services themselves — GKE docs "About GKE Dataplane
/// V2": "GKE Dataplane V2 is implemented without kube-proxy".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Dataplane {
    #[default]
    V1,
    V2,
}

/// The plugin that runs the pod network, as the platform and `network.cni` choose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PodNetwork {
    /// flannel (host-gw over win-bridge, vxlan over win-overlay).
    Flannel,
    /// Calico for Windows (VXLAN over the HNS dataplane; CAL, WT).
    Calico,
    /// Azure CNI (AKS, and aks-engine before it): pods get VNet addresses.
    AzureCni,
    /// Azure CNI Overlay (AKS, `network.cni: azure-cni-overlay`): pods get addresses of a
    /// private overlay CIDR that nothing outside the cluster routes to; `azure-cns` and
    /// `azure-cns-win` hand them out (AKS docs "Configure Azure CNI Overlay networking").
    AzureCniOverlay,
    /// The Amazon VPC CNI; on Windows its `vpc-bridge` plugin (EKS).
    VpcCni,
    /// GKE's Windows set-up: the `sdnbridge` plugin (microsoft/windows-container-networking)
    /// on an `l2bridge` HNS network (kubernetes `cluster/gce/windows/k8s-node-setup.psm1`,
    /// `l2bridge.conf`).
    GkeWinBridge,
    /// ovn-kubernetes, or the 1.5-era transparent network with routes set by hand.
    Transparent,
}

impl PodNetwork {
    /// The plugin of a platform's cluster in a network mode (`chosen`: `network.cni`).
    pub fn of(platform: Platform, mode: NetworkMode, chosen: Option<PodNetwork>) -> Self {
        match platform {
            Platform::Aks if chosen == Some(Self::AzureCniOverlay) => Self::AzureCniOverlay,
            Platform::Aks => Self::AzureCni,
            Platform::Eks => Self::VpcCni,
            Platform::Gke => Self::GkeWinBridge,
            Platform::Kubeadm => chosen.unwrap_or(match mode {
                NetworkMode::L2bridge | NetworkMode::Overlay => Self::Flannel,
                NetworkMode::L2tunnel => Self::AzureCni,
                NetworkMode::Transparent => Self::Transparent,
            }),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Flannel => "flannel",
            Self::Calico => "calico",
            Self::AzureCni => "azure-cni",
            Self::AzureCniOverlay => "azure-cni-overlay",
            Self::VpcCni => "vpc-cni",
            Self::GkeWinBridge => "gke-win-bridge",
            Self::Transparent => "transparent",
        }
    }

    /// The HNS network the plugin creates on a Windows node: (name, HNS type). Calico names
    /// its VXLAN network `Calico` (Calico for Windows' `config.ps1`: `KUBE_NETWORK = "Calico.*"`);
    /// Azure CNI `azure`, of type L2Bridge in bridge mode and L2Tunnel in tunnel mode
    /// (Azure/azure-container-networking `network/network_windows.go`); the VPC CNI's vpc-bridge
    /// names it `vpcbr` + the ENI's MAC ([`VPC_BRIDGE_PREFIX`]; the name here is the prefix, the
    /// node's host adds the MAC); GKE's set-up `l2bridge`.
    pub fn hns_network(self, mode: NetworkMode) -> Option<(&'static str, &'static str)> {
        Some(match (self, mode) {
            (Self::Flannel, NetworkMode::Overlay) => ("vxlan0", "Overlay"),
            (Self::Flannel, _) => ("cbr0", "L2Bridge"),
            (Self::Calico, NetworkMode::Overlay) => ("Calico", "Overlay"),
            (Self::Calico, _) => ("Calico", "L2Bridge"),
            (Self::AzureCni | Self::AzureCniOverlay, NetworkMode::L2tunnel) => ("azure", "L2Tunnel"),
            (Self::AzureCni | Self::AzureCniOverlay, _) => ("azure", "L2Bridge"),
            (Self::VpcCni, _) => (VPC_BRIDGE_PREFIX, "L2Bridge"),
            (Self::GkeWinBridge, _) => ("l2bridge", "L2Bridge"),
            (Self::Transparent, _) => return None,
        })
    }

    /// Whether the plugin is Azure CNI (VNet or Overlay).
    pub fn azure(self) -> bool {
        matches!(self, Self::AzureCni | Self::AzureCniOverlay)
    }
}
