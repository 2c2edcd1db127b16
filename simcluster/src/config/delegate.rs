//! The Windows CNI plugin a node's pod network delegates to (`nodes[].cniDelegate`): what the
//! node's CNI configuration names, and the behaviour its documentation ties to that plugin
//! rather than to the network mode (hostPort mappings). Uses only `config::platform`.
//!
//! | delegate | who runs it | HNS network | hostPort (`portMappings`) |
//! |---|---|---|---|
//! | `win-bridge` | flannel host-gw (kubeadm) | L2Bridge | from the 1.18 era (containernetworking/plugins#475) |
//! | `win-overlay` | flannel vxlan, 2019 scripts | Overlay | never (plugins#530) |
//! | `sdnbridge` | GKE (`l2bridge.conf`) | L2Bridge | mapped (windows-container-networking `cni/cni.go`) |
//! | `sdnoverlay` | flannel vxlan, sig-windows-tools HostProcess | Overlay | mapped (the same `cni/cni.go`) |
//! | `vpc-bridge` | EKS | L2Bridge | ignored (aws/amazon-vpc-cni-plugins#93) |
//! | `azure-cni` | AKS (`azure-vnet`) | L2Bridge, L2Tunnel | mapped (Azure/azure-container-networking#256) |
//! | `calico` | Calico for Windows | L2Bridge, Overlay | no source: by era and mode |

use serde::Deserialize;

use crate::config::platform::{NetworkMode, PodNetwork};

/// A Windows CNI plugin the pod network's configuration names as the node's plugin (flannel's
/// `delegate.type`, or the platform plugin's own `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CniDelegate {
    /// containernetworking/plugins `win-bridge` (HNS L2Bridge).
    WinBridge,
    /// containernetworking/plugins `win-overlay` (HNS Overlay).
    WinOverlay,
    /// microsoft/windows-container-networking `sdnbridge` (HNS L2Bridge).
    Sdnbridge,
    /// microsoft/windows-container-networking `sdnoverlay` (HNS Overlay).
    Sdnoverlay,
    /// aws/amazon-vpc-cni-plugins `vpc-bridge` (HNS L2Bridge).
    VpcBridge,
    /// Azure/azure-container-networking `azure-vnet` (Azure CNI).
    AzureCni,
    /// Calico for Windows' `calico` plugin.
    Calico,
}

impl CniDelegate {
    /// The delegate as topologies write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WinBridge => "win-bridge",
            Self::WinOverlay => "win-overlay",
            Self::Sdnbridge => "sdnbridge",
            Self::Sdnoverlay => "sdnoverlay",
            Self::VpcBridge => "vpc-bridge",
            Self::AzureCni => "azure-cni",
            Self::Calico => "calico",
        }
    }

    /// The plugin's `type` in a CNI configuration file (Azure CNI's binary is `azure-vnet`).
    pub fn plugin_type(self) -> &'static str {
        match self {
            Self::AzureCni => "azure-vnet",
            other => other.as_str(),
        }
    }

    /// The delegate a Windows node runs when the topology does not say, by the cluster's pod
    /// network and mode and the node's install era (`host_process`: the node runs HostProcess
    /// containers, so a kubeadm node's agents are sig-windows-tools' HostProcess DaemonSets):
    /// - flannel host-gw: `win-bridge` (flannel's Windows scripts, W14);
    /// - flannel vxlan: `win-overlay` with the 2019 scripts; `sdnoverlay` in the HostProcess
    ///   era: sig-windows-tools `hostprocess/flannel/flanneld/flannel-overlay.yml`'s
    ///   `cni-conf-containerd.json` has `"delegate": {"type": "sdnoverlay", …}`, which its
    ///   `start.ps1` writes to `c:/etc/cni/net.d/10-flannel.conf`;
    /// - AKS: Azure CNI (`azure-vnet`, AgentBaker `Set-AzureCNIConfig`); EKS: `vpc-bridge`
    ///   (aws/amazon-vpc-cni-plugins); GKE: `sdnbridge` (kubernetes
    ///   `cluster/gce/windows/k8s-node-setup.psm1`, `l2bridge.conf` `"type": "sdnbridge"`);
    ///   Calico: `calico`;
    /// - none on a transparent network (routes set by hand, or ovn-kubernetes).
    pub fn by_default(pod_network: PodNetwork, mode: NetworkMode, host_process: bool) -> Option<Self> {
        Some(match pod_network {
            PodNetwork::Flannel if mode == NetworkMode::Overlay && host_process => Self::Sdnoverlay,
            PodNetwork::Flannel if mode == NetworkMode::Overlay => Self::WinOverlay,
            PodNetwork::Flannel => Self::WinBridge,
            PodNetwork::Calico => Self::Calico,
            PodNetwork::AzureCni | PodNetwork::AzureCniOverlay => Self::AzureCni,
            PodNetwork::VpcCni => Self::VpcBridge,
            PodNetwork::GkeWinBridge => Self::Sdnbridge,
            PodNetwork::Transparent => return None,
        })
    }

    /// The network modes whose HNS network the plugin builds: the bridge plugins L2Bridge, the
    /// overlay ones Overlay; Azure CNI bridge or tunnel (Azure/azure-container-networking
    /// `network/network_windows.go`); Calico for Windows VXLAN or BGP (l2bridge) (CAL).
    pub fn modes(self) -> &'static [NetworkMode] {
        match self {
            Self::WinBridge | Self::Sdnbridge | Self::VpcBridge => &[NetworkMode::L2bridge],
            Self::WinOverlay | Self::Sdnoverlay => &[NetworkMode::Overlay],
            Self::AzureCni => &[NetworkMode::L2bridge, NetworkMode::L2tunnel],
            Self::Calico => &[NetworkMode::L2bridge, NetworkMode::Overlay],
        }
    }

    /// Whether the pod network can delegate to the plugin: flannel to the bridge and overlay
    /// plugins of containernetworking/plugins and microsoft/windows-container-networking (the
    /// 2019 scripts' and sig-windows-tools' choices), every other network to its own plugin
    /// only ([`CniDelegate::by_default`]); a transparent network to none.
    pub fn serves(self, pod_network: PodNetwork) -> bool {
        match pod_network {
            PodNetwork::Flannel => matches!(
                self,
                Self::WinBridge | Self::WinOverlay | Self::Sdnbridge | Self::Sdnoverlay
            ),
            PodNetwork::Transparent => false,
            other => CniDelegate::by_default(other, NetworkMode::L2bridge, true) == Some(self),
        }
    }

    /// Whether the plugin maps a pod's `hostPort`s (the `portMappings` capability) on a cluster
    /// of Kubernetes `version`, where a source says (NET-HOSTPORT); None where no document
    /// covers the plugin (the caller falls back to the era's rule):
    /// - `win-bridge`: the 1.9 guide's PortMapping works (S2); from 1.10 hostPort did not work
    ///   on Windows (k8s#51354, k8s#66022; 1.14-era plugins had no `portMappings`, k8s#90116);
    ///   containernetworking/plugins#475 (2020, the 1.18 era) added it: "If the pluging
    ///   receives portMappings in runtimeConfig, the pluing will add a NAT policy for each port
    ///   mapping";
    /// - `win-overlay`: never gained it (containernetworking/plugins#530, microsoft/SDN#428);
    /// - `sdnbridge`, `sdnoverlay`: microsoft/windows-container-networking `cni/cni.go`
    ///   `GetEndpointInfo` turns each `RuntimeConfig.PortMappings` entry into an HNS port
    ///   mapping policy (`network.GetPortMappingPolicy`);
    /// - `vpc-bridge`: aws/amazon-vpc-cni-plugins#93 (2023): "vpc-bridge plugin silently
    ///   ignores any port mapping between container to host"; no EKS source says which AMI
    ///   ships the change, so it is modelled as ignoring them;
    /// - Azure CNI: maps them as HNS NAT policies since Azure/azure-container-networking#256
    ///   (2018);
    /// - `calico`: no document.
    pub fn maps_host_ports(self, version: (u32, u32)) -> Option<bool> {
        match self {
            Self::WinBridge => Some(!((1, 10)..(1, 18)).contains(&version)),
            Self::WinOverlay => Some(version < (1, 10)),
            Self::Sdnbridge | Self::Sdnoverlay | Self::AzureCni => Some(true),
            Self::VpcBridge => Some(false),
            Self::Calico => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// The default delegate per pod network, mode and era.
    #[rstest]
    #[case::flannel_host_gw(PodNetwork::Flannel, NetworkMode::L2bridge, true, Some(CniDelegate::WinBridge))]
    #[case::flannel_vxlan_scripts(PodNetwork::Flannel, NetworkMode::Overlay, false, Some(CniDelegate::WinOverlay))]
    #[case::flannel_vxlan_hostprocess(PodNetwork::Flannel, NetworkMode::Overlay, true, Some(CniDelegate::Sdnoverlay))]
    #[case::calico(PodNetwork::Calico, NetworkMode::Overlay, true, Some(CniDelegate::Calico))]
    #[case::aks(PodNetwork::AzureCni, NetworkMode::L2bridge, false, Some(CniDelegate::AzureCni))]
    #[case::aks_overlay(
        PodNetwork::AzureCniOverlay,
        NetworkMode::L2bridge,
        false,
        Some(CniDelegate::AzureCni)
    )]
    #[case::eks(PodNetwork::VpcCni, NetworkMode::L2bridge, false, Some(CniDelegate::VpcBridge))]
    #[case::gke(PodNetwork::GkeWinBridge, NetworkMode::L2bridge, false, Some(CniDelegate::Sdnbridge))]
    #[case::transparent(PodNetwork::Transparent, NetworkMode::Transparent, false, None)]
    fn default_delegate(
        #[case] net: PodNetwork,
        #[case] mode: NetworkMode,
        #[case] host_process: bool,
        #[case] want: Option<CniDelegate>,
    ) {
        let got = CniDelegate::by_default(net, mode, host_process);
        assert_eq!(got, want);
        if let Some(d) = got {
            assert!(d.modes().contains(&mode), "{} builds {mode:?}", d.as_str());
        }
    }

    /// hostPort per delegate and era (NET-HOSTPORT): win-bridge from 1.18 (plugins#475),
    /// win-overlay never (plugins#530), the windows-container-networking plugins and Azure CNI
    /// map them, vpc-bridge ignores them (amazon-vpc-cni-plugins#93), Calico has no source.
    #[rstest]
    #[case::win_bridge_1_9(CniDelegate::WinBridge, (1, 9), Some(true))]
    #[case::win_bridge_1_14(CniDelegate::WinBridge, (1, 14), Some(false))]
    #[case::win_bridge_1_18(CniDelegate::WinBridge, (1, 18), Some(true))]
    #[case::win_overlay_current(CniDelegate::WinOverlay, (1, 33), Some(false))]
    #[case::sdnoverlay(CniDelegate::Sdnoverlay, (1, 33), Some(true))]
    #[case::sdnbridge(CniDelegate::Sdnbridge, (1, 33), Some(true))]
    #[case::vpc_bridge(CniDelegate::VpcBridge, (1, 33), Some(false))]
    #[case::azure_cni(CniDelegate::AzureCni, (1, 33), Some(true))]
    #[case::calico(CniDelegate::Calico, (1, 33), None)]
    fn host_ports_per_delegate(#[case] d: CniDelegate, #[case] version: (u32, u32), #[case] want: Option<bool>) {
        assert_eq!(d.maps_host_ports(version), want);
    }

    /// Each pod network serves its own plugin; flannel the four bridge/overlay plugins.
    #[rstest]
    #[case::aks(PodNetwork::AzureCni, CniDelegate::AzureCni, true)]
    #[case::aks_not_vpc(PodNetwork::AzureCniOverlay, CniDelegate::VpcBridge, false)]
    #[case::eks(PodNetwork::VpcCni, CniDelegate::VpcBridge, true)]
    #[case::gke(PodNetwork::GkeWinBridge, CniDelegate::Sdnbridge, true)]
    #[case::flannel_sdnoverlay(PodNetwork::Flannel, CniDelegate::Sdnoverlay, true)]
    #[case::flannel_not_calico(PodNetwork::Flannel, CniDelegate::Calico, false)]
    #[case::flannel_not_vpc(PodNetwork::Flannel, CniDelegate::VpcBridge, false)]
    #[case::calico(PodNetwork::Calico, CniDelegate::Calico, true)]
    #[case::transparent(PodNetwork::Transparent, CniDelegate::WinBridge, false)]
    fn pod_networks_serve_their_plugins(#[case] net: PodNetwork, #[case] d: CniDelegate, #[case] want: bool) {
        assert_eq!(d.serves(net), want);
    }
}
