//! Dual-stack networking (`network.ipFamilies: [IPv4, IPv6]`): which pods the CNI gives an IPv6
//! address at all (the addresses themselves: [`crate::vocab::ipv6`]). The fabric decides IPv6
//! flows by the IPv4 address of the same pod or Service
//! ([`crate::network::fabric::Fabric::ipv6_route`]).

pub use crate::vocab::ipv6::pod_address;

use crate::config::platform::{NetworkMode, PodNetwork};
use crate::config::profile::NodeProfile;

/// Whether the node's CNI gives its (pod-network) pods an IPv6 address on a dual-stack cluster.
/// Linux: flannel and Calico run dual-stack. Windows: dual-stack works on l2bridge (win-bridge;
/// W20 from 1.19, W22 and WNET on Windows Server 2019 and later) and with Azure CNI; not on
/// overlay: the dual-stack page (K8SDS) says "Overlay (VXLAN) networks on Windows do not support
/// dual-stack networking", so a Windows pod on an overlay network gets its IPv4 address only
/// (and WNET lists "IPv6 communication between Windows pods connected to overlay networks" as
/// unsupported); Calico for Windows is IPv4 only (CAL: "IPv6 and dual-stack" not supported), and
/// a build older than Windows Server 2019 has no dual-stack HNS networking (W22).
pub fn gives_ipv6(profile: &NodeProfile) -> bool {
    if profile.pod_cidr_v6.is_none() {
        return false;
    }
    if !profile.is_windows() {
        return true;
    }
    profile.pod_network != PodNetwork::Calico
        && profile.build.is_some_and(|b| b >= 17763)
        && matches!(profile.network_mode, NetworkMode::L2bridge | NetworkMode::L2tunnel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    /// Which nodes' pods get an IPv6 address on a dual-stack cluster: Linux always; Windows
    /// Server 2019+ on flannel l2bridge (W22, WNET); never on overlay (K8SDS: "Overlay (VXLAN)
    /// networks on Windows do not support dual-stack networking") nor with Calico for Windows
    /// (CAL: IPv4 only); none on a single-stack cluster. Node N's IPv6 pod CIDR is the N-th /64.
    #[rstest::rstest]
    #[case::l2bridge("l2bridge", "", [true, true, true])]
    #[case::overlay("overlay", "", [true, false, false])]
    #[case::calico("overlay", "  cni: calico\n", [true, false, false])]
    #[case::ws2016("l2bridge", "", [true, false, true])]
    fn which_pods_get_ipv6(#[case] mode: &str, #[case] cni: &str, #[case] want: [bool; 3]) {
        use crate::config::profile::profiles;
        use crate::config::topology::Topology;
        let old = if want == [true, false, true] {
            "10.0.14393.7428"
        } else {
            "10.0.17763.6414"
        };
        let text = format!(
            "name: t\nnetwork:\n  mode: {mode}\n{cni}  ipFamilies: [IPv4, IPv6]\nnodes:\n  - {{name: l, os: linux}}\n  - {{name: w1, os: windows, kernelVersion: {old}}}\n  - {{name: w2, os: windows, kernelVersion: 10.0.20348.2762}}\n"
        );
        let t = Topology::parse(&text, "t.yaml").expect("topology");
        let ips: Vec<Ipv4Addr> = (0..3).map(|i| Ipv4Addr::new(127, 1, 1, 10 + i)).collect();
        let ps = profiles(&t, &ips);
        assert_eq!(ps.iter().map(gives_ipv6).collect::<Vec<_>>(), want);
        assert_eq!(ps[2].pod_cidr_v6.as_deref(), Some("fd00:10:244:2::/64"));
        let single = Topology::parse(&text.replace("  ipFamilies: [IPv4, IPv6]\n", ""), "t.yaml").expect("topology");
        assert!(
            profiles(&single, &ips)
                .iter()
                .all(|p| p.pod_cidr_v6.is_none() && !gives_ipv6(p))
        );
    }
}
