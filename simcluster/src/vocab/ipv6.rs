//! IPv6 addressing of a dual-stack cluster (<https://kubernetes.io/docs/concepts/services-networking/dual-stack/>):
//! the IPv6 pod CIDR of each node, the IPv6 address of a pod beside its IPv4 one and the IPv6
//! ClusterIP beside a Service's IPv4 one. They mirror the IPv4 ones: node N's IPv6 pod CIDR is
//! the N-th /64 of `clusterCidrV6` as its IPv4 one is `10.244.N.0/24`, a pod's IPv6 address ends
//! in its IPv4 address's host part, and a Service's IPv6 ClusterIP sits at the same offset in
//! `serviceCidrV6` as its IPv4 one in `serviceCidr`.

use std::net::{Ipv4Addr, Ipv6Addr};

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
}
