//! The faults a simulated node can carry (topology `faults:` or `--fault NODE:FAULT`): one per
//! troubleshooting item of the seed FAQ and windows-rules.md, each with the rule it breaks and
//! the documented symptom. Faults act only through the kubelet model and the network fabric.

use std::fmt;

use crate::config::platform::{NetworkMode, Os};

/// One injectable node fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    KubeletStopped,
    MacSpoofingDisabled,
    ExceptionListMissingCluster,
    ExceptionListCoversOutside,
    KubeProxyNoHostnameOverride,
    KubeProxyStopped,
    PauseImageWrongBuild,
    FlannelSubnetEnvMissing,
    FlanneldWaiting,
    HnsNetworkMissing,
    DnsUnreachable,
    PortExhaustion,
    FlannelRejoinStaleSourceVip,
    VxlanParamsMismatch,
}

/// Every fault, in the order `mixcheck sim faults` lists them.
pub const ALL: &[Fault] = &[
    Fault::KubeletStopped,
    Fault::MacSpoofingDisabled,
    Fault::ExceptionListMissingCluster,
    Fault::ExceptionListCoversOutside,
    Fault::KubeProxyNoHostnameOverride,
    Fault::KubeProxyStopped,
    Fault::PauseImageWrongBuild,
    Fault::FlannelSubnetEnvMissing,
    Fault::FlanneldWaiting,
    Fault::HnsNetworkMissing,
    Fault::DnsUnreachable,
    Fault::PortExhaustion,
    Fault::FlannelRejoinStaleSourceVip,
    Fault::VxlanParamsMismatch,
];

impl Fault {
    /// The name used in topologies and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Fault::KubeletStopped => "kubelet-stopped",
            Fault::MacSpoofingDisabled => "mac-spoofing-disabled",
            Fault::ExceptionListMissingCluster => "exceptionlist-missing-cluster",
            Fault::ExceptionListCoversOutside => "exceptionlist-covers-outside",
            Fault::KubeProxyNoHostnameOverride => "kube-proxy-no-hostname-override",
            Fault::KubeProxyStopped => "kube-proxy-stopped",
            Fault::PauseImageWrongBuild => "pause-image-wrong-build",
            Fault::FlannelSubnetEnvMissing => "flannel-subnet-env-missing",
            Fault::FlanneldWaiting => "flanneld-waiting",
            Fault::HnsNetworkMissing => "hns-network-missing",
            Fault::DnsUnreachable => "dns-unreachable",
            Fault::PortExhaustion => "port-exhaustion",
            Fault::FlannelRejoinStaleSourceVip => "flannel-rejoin-stale-sourcevip",
            Fault::VxlanParamsMismatch => "vxlan-params-mismatch",
        }
    }

    /// The fault with this name.
    pub fn parse(name: &str) -> Option<Fault> {
        ALL.iter().copied().find(|f| f.name() == name)
    }

    /// The windows-rules.md rule the fault breaks.
    pub fn rule(self) -> &'static str {
        match self {
            Fault::KubeletStopped => "POD-LIFECYCLE-BASICS",
            Fault::MacSpoofingDisabled => "NET-MAC-SPOOFING",
            Fault::ExceptionListMissingCluster | Fault::ExceptionListCoversOutside => "NET-OUTBOUND-NAT-EXCEPTIONLIST",
            Fault::KubeProxyNoHostnameOverride => "NET-KUBEPROXY-HOSTNAME",
            Fault::KubeProxyStopped => "NET-POD-SVC-CLUSTERIP",
            Fault::PauseImageWrongBuild => "VER-PAUSE-IMAGE",
            Fault::FlannelSubnetEnvMissing | Fault::FlanneldWaiting => "NET-FLANNEL-SUBNET-ENV",
            Fault::HnsNetworkMissing => "NET-HNS-NETWORK-PRESENT",
            Fault::DnsUnreachable => "DNS-FQDN",
            Fault::PortExhaustion => "NET-POD-EXT-IP",
            Fault::FlannelRejoinStaleSourceVip => "NET-FLANNEL-REJOIN",
            Fault::VxlanParamsMismatch => "NET-FLANNEL-VXLAN-PARAMS",
        }
    }

    /// Whether the fault only exists on Windows nodes (HNS, the Windows kube-proxy, flannel on
    /// Windows, VM NICs of l2bridge Windows nodes).
    pub fn windows_only(self) -> bool {
        !matches!(
            self,
            Fault::KubeletStopped | Fault::DnsUnreachable | Fault::PortExhaustion
        )
    }

    /// The network modes where the fault can occur (None: any).
    pub fn modes(self) -> Option<&'static [NetworkMode]> {
        match self {
            // MAC spoofing matters where pod frames leave the VM with the pods' own MACs.
            Fault::MacSpoofingDisabled => Some(&[NetworkMode::L2bridge]),
            // flanneld, its subnet file and the HNS network its CNI plugin delegates to.
            Fault::FlannelSubnetEnvMissing | Fault::FlanneldWaiting | Fault::HnsNetworkMissing => {
                Some(&[NetworkMode::L2bridge, NetworkMode::Overlay])
            }
            // The source VIP and the VXLAN parameters exist on overlay only.
            Fault::FlannelRejoinStaleSourceVip | Fault::VxlanParamsMismatch => Some(&[NetworkMode::Overlay]),
            _ => None,
        }
    }

    /// Whether the fault can be injected on a node of this OS in a network of this mode; the
    /// error says why not.
    pub fn check(self, os: Os, mode: NetworkMode) -> Result<(), String> {
        if self.windows_only() && os != Os::Windows {
            return Err(format!("{self} exists only on Windows nodes"));
        }
        match self.modes() {
            Some(modes) if !modes.contains(&mode) => Err(format!(
                "{self} needs network.mode {}, not {}",
                modes.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(" or "),
                mode.as_str()
            )),
            _ => Ok(()),
        }
    }

    /// The documented symptom, for `mixcheck sim faults`.
    pub fn symptom(self) -> &'static str {
        match self {
            Fault::KubeletStopped => {
                "the kubelet stops posting status: the node turns NotReady (Unknown), gets the unreachable taints, and its pods do not start"
            }
            Fault::MacSpoofingDisabled => {
                "MAC spoofing is off on the VM NIC: it drops frames with the pods' MAC addresses, so pods on the node reach only pods on the same node (no cross-node traffic, no remote service backends, no outside traffic); host traffic works"
            }
            Fault::ExceptionListMissingCluster => {
                "the cluster ranges are missing from the OutboundNAT ExceptionList: pod traffic to other nodes is SNATed to the node's address (l2bridge: delivered, backends see the node IP instead of the pod IP; overlay: lost); outside traffic works"
            }
            Fault::ExceptionListCoversOutside => {
                "the ExceptionList covers the outside range: pod traffic to outside addresses is not SNATed and replies never come back (TCP/UDP time out); in-cluster traffic works"
            }
            Fault::KubeProxyNoHostnameOverride => {
                "kube-proxy runs without --hostname-override: it deletes the node's own HNS endpoints, so pods on the node lose all connectivity and service flows through them break"
            }
            Fault::KubeProxyStopped => {
                "kube-proxy is not running: no load-balancer policies on the node, so ClusterIP flows from its pods and NodePort flows to it time out; pod IP flows work"
            }
            Fault::PauseImageWrongBuild => {
                "the sandbox (pause) image is built for another Windows build: FailedCreatePodSandBox (0xc0370101), pods stay ContainerCreating"
            }
            Fault::FlannelSubnetEnvMissing => {
                "C:\\run\\flannel\\subnet.env is missing: the CNI plugin cannot set up pod networking, FailedCreatePodSandBox, pods stay ContainerCreating"
            }
            Fault::FlanneldWaiting => {
                "flanneld is stuck at \"Waiting for the Network to be created\": subnet.env is never written, FailedCreatePodSandBox, pods stay ContainerCreating"
            }
            Fault::HnsNetworkMissing => {
                "the HNS network of the pod network (cbr0; vxlan0 on overlay) does not exist: no network adapter for pods, the CNI plugin fails (FailedCreatePodSandBox), pods stay ContainerCreating (HostProcess pods still start)"
            }
            Fault::DnsUnreachable => {
                "the cluster DNS service is unreachable from this node: name lookups from its pods time out; connections by IP work"
            }
            Fault::PortExhaustion => {
                "the node's ephemeral ports are exhausted: every new connection from the host fails (Windows WSAENOBUFS 10055, Linux EADDRNOTAVAIL) and its pods' connections to outside addresses (SNAT) time out; in-cluster pod traffic works"
            }
            Fault::FlannelRejoinStaleSourceVip => {
                "the node re-joined and flannel gave it a new subnet, but C:\\k\\SourceVip.json is stale: kube-proxy cannot create its source VIP endpoint, so service (ClusterIP and NodePort) flows through the node time out; pod IP flows work"
            }
            Fault::VxlanParamsMismatch => {
                "the node's flannel VXLAN backend does not use VNI 4096 / UDP 4789 like the other nodes: pods on the node reach only pods on the same node; host traffic works"
            }
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The names of every fault, comma separated (for error messages).
pub fn names() -> String {
    ALL.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for f in ALL {
            assert_eq!(Fault::parse(f.name()), Some(*f));
            assert!(seen.insert(f.name()), "{f} listed twice");
            assert!(!f.symptom().is_empty());
        }
        assert_eq!(Fault::parse("nope"), None);
    }
}
