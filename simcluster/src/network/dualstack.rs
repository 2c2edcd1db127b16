//! Dual-stack addressing (`network.ipFamilies: [IPv4, IPv6]`): the IPv6 pod CIDR of each node,
//! the IPv6 address of a pod beside its IPv4 one, the IPv6 ClusterIP beside a Service's IPv4
//! one, and which pods the CNI gives an IPv6 address at all
//! (<https://kubernetes.io/docs/concepts/services-networking/dual-stack/>).
//!
//! The IPv6 addresses mirror the IPv4 ones: node N's IPv6 pod CIDR is the N-th /64 of
//! `clusterCidrV6` as its IPv4 one is `10.244.N.0/24`, a pod's IPv6 address ends in its IPv4
//! address's host part, and a Service's IPv6 ClusterIP sits at the same offset in
//! `serviceCidrV6` as its IPv4 one in `serviceCidr`. The fabric decides IPv6 flows by the IPv4
//! address of the same pod or Service ([`crate::network::fabric::Fabric::ipv6_route`]).

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::config::platform::{NetworkMode, PodNetwork};
use crate::config::profile::NodeProfile;

/// An IPv6 range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V6Cidr {
    pub base: u128,
    pub prefix: u8,
}

impl V6Cidr {
    /// Parses `fd00:10:244::/56`.
    pub fn parse(text: &str) -> Option<V6Cidr> {
        let (ip, prefix) = text.split_once('/')?;
        let ip: Ipv6Addr = ip.parse().ok()?;
        let prefix: u8 = prefix.parse().ok().filter(|p| *p <= 128)?;
        Some(V6Cidr {
            base: u128::from(ip) & Self::mask(prefix),
            prefix,
        })
    }

    fn mask(prefix: u8) -> u128 {
        if prefix == 0 {
            0
        } else {
            u128::MAX << (128 - u32::from(prefix))
        }
    }

    /// The address `offset` into the range, if it is inside.
    pub fn nth(&self, offset: u128) -> Option<Ipv6Addr> {
        let host_bits = 128 - u32::from(self.prefix);
        (host_bits >= 128 || offset < (1u128 << host_bits)).then(|| Ipv6Addr::from(self.base + offset))
    }
}

/// Node `index`'s IPv6 pod CIDR: the `index`-th /64 of the cluster's IPv6 pod range.
pub fn node_pod_cidr(cluster_cidr_v6: &str, index: usize) -> Option<String> {
    let c = V6Cidr::parse(cluster_cidr_v6)?;
    let index = u128::try_from(index).ok()?;
    let subnets = 1u128 << (64 - u32::from(c.prefix.min(64)));
    (index < subnets).then(|| format!("{}/64", Ipv6Addr::from(c.base + (index << 64))))
}

/// The IPv6 address of a pod whose IPv4 address is `v4` on a node with IPv6 pod CIDR
/// `node_cidr_v6`: the same host part in the node's /64.
pub fn pod_address(node_cidr_v6: &str, v4: Ipv4Addr) -> Option<Ipv6Addr> {
    let c = V6Cidr::parse(node_cidr_v6)?;
    let [_, _, _, host] = v4.octets();
    c.nth(u128::from(host))
}

/// The IPv6 ClusterIP at the same offset as an IPv4 one `offset` into the IPv4 service range.
pub fn service_address(service_cidr_v6: &str, offset: u32) -> Option<Ipv6Addr> {
    V6Cidr::parse(service_cidr_v6)?.nth(u128::from(offset))
}

/// Whether the node's CNI gives its (pod-network) pods an IPv6 address on a dual-stack cluster.
/// Linux: flannel and Calico run dual-stack. Windows: dual-stack works on l2bridge (win-bridge;
/// W20 from 1.19, W22 and WNET on Windows Server 2019 and later); the win-overlay and Azure CNI
/// configurations hand out IPv6 addresses too, but WNET lists "IPv6 communication between Windows
/// pods connected to overlay networks" as unsupported (the fabric drops it); Calico for Windows
/// is IPv4 only (CAL: "IPv6 and dual-stack" not supported), and a build older than Windows
/// Server 2019 has no dual-stack HNS networking (W22).
pub fn gives_ipv6(profile: &NodeProfile) -> bool {
    if profile.pod_cidr_v6.is_none() {
        return false;
    }
    if !profile.is_windows() {
        return true;
    }
    profile.pod_network != PodNetwork::Calico
        && profile.build.is_some_and(|b| b >= 17763)
        && matches!(
            profile.network_mode,
            NetworkMode::L2bridge | NetworkMode::Overlay | NetworkMode::L2tunnel
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_cidrs_are_the_nth_slash_64() {
        assert_eq!(
            node_pod_cidr("fd00:10:244::/56", 0).as_deref(),
            Some("fd00:10:244::/64")
        );
        assert_eq!(
            node_pod_cidr("fd00:10:244::/56", 3).as_deref(),
            Some("fd00:10:244:3::/64")
        );
        assert_eq!(node_pod_cidr("fd00:10:244::/56", 256), None);
    }

    #[test]
    fn pod_and_service_addresses_mirror_the_ipv4_ones() {
        let ip = pod_address("fd00:10:244:2::/64", Ipv4Addr::new(10, 244, 2, 17));
        assert_eq!(ip, Some("fd00:10:244:2::11".parse().expect("ipv6")));
        assert_eq!(
            service_address("fd00:10:96::/112", 10),
            Some("fd00:10:96::a".parse().expect("ipv6"))
        );
        assert_eq!(service_address("fd00:10:96::/120", 300), None);
        let c = V6Cidr::parse("fd00:10:244:7::/56").expect("cidr");
        assert_eq!(
            (c.base, c.prefix),
            (u128::from("fd00:10:244::".parse::<Ipv6Addr>().expect("ipv6")), 56)
        );
    }

    /// Which nodes' pods get an IPv6 address on a dual-stack cluster: Linux always; Windows
    /// Server 2019+ on flannel (l2bridge: W22, WNET; overlay: an address whose traffic the fabric
    /// drops, WNET); never with Calico for Windows (CAL: IPv4 only); none on a single-stack
    /// cluster. Node N's IPv6 pod CIDR is the N-th /64.
    #[rstest::rstest]
    #[case::l2bridge("l2bridge", "", [true, true, true])]
    #[case::overlay("overlay", "", [true, true, true])]
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
