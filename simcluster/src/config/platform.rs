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
    /// Azure CNI (HNS L2Tunnel).
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
