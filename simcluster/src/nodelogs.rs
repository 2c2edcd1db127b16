//! Node-level log lines besides the per-pod ones: what flanneld writes on a Windows node of a
//! flannel network (served as the node's `logs/flanneld.log`), and what a kubelet logs when it
//! starts on a node without its HNS network. Lines derive from the node's profile only.
//!
//! flanneld logs in klog format. "Waiting for the Network to be created" is not flanneld's own
//! line: it is what the node's start script prints while it polls for the HNS network flanneld
//! should create; the script runs flanneld in the same console, so both end up in one log.

use chrono::{DateTime, Utc};

use crate::faults::Fault;
use crate::profile::NodeProfile;
use crate::topology::WINDOWS_SUBNET_ENV;

/// The log book key of flanneld's log (the node's `logs/flanneld.log`).
pub const FLANNELD: &str = "flanneld";

/// The start script's line while the HNS network flanneld should create does not exist.
pub const FLANNELD_WAITING: &str = "Waiting for the Network to be created";

/// The VNI a node with [`Fault::VxlanParamsMismatch`] runs its VXLAN backend with.
pub const VXLAN_MISMATCHED_VNI: u32 = 4097;

/// A process id for the node's flanneld, stable per node.
fn pid(profile: &NodeProfile) -> u64 {
    let h = crate::hash::Fnv::default()
        .write(profile.name.as_bytes())
        .write(b"flanneld")
        .finish();
    1000 + h % 8000
}

/// One klog-formatted info line (`I1122 10:00:00.000000    4242 main.go:211] …`).
fn klog(at: DateTime<Utc>, pid: u64, source: &str, message: &str) -> String {
    format!("I{} {pid:>7} {source}] {message}", at.format("%m%d %H:%M:%S%.6f"))
}

/// What flanneld has logged by the time the node is up, or None where no flanneld runs (Linux
/// nodes, whose flannel runs as a pod; networks that are not flannel's). Healthy: it finds the
/// network config, writes the subnet file and runs its backend. With
/// [`Fault::FlannelSubnetEnvMissing`] flanneld never started: nothing. With
/// [`Fault::FlanneldWaiting`] it stops before the HNS network exists and the subnet file is
/// written; the caller then appends [`FLANNELD_WAITING`] while the node lives.
pub fn flanneld_start(profile: &NodeProfile, at: DateTime<Utc>) -> Option<Vec<String>> {
    if !profile.is_windows() {
        return None;
    }
    let flannel = profile.network_mode.flannel()?;
    if profile.has_fault(Fault::FlannelSubnetEnvMissing) {
        return Some(Vec::new());
    }
    let pid = pid(profile);
    let line = |source: &str, message: &str| klog(at, pid, source, message);
    let ip = profile.ip;
    let mut lines = vec![
        line(
            "main.go:532",
            &format!("Using interface with name Ethernet and address {ip}"),
        ),
        line(
            "main.go:549",
            &format!("Defaulting external address to interface address ({ip})"),
        ),
        line("kube.go:139", "Waiting 10m0s for node controller to sync"),
        line("kube.go:469", "Starting kube subnet manager"),
        line(
            "kube.go:490",
            &format!(
                "Creating the node lease for IPv4. This is the n.Spec.PodCIDRs: [{}]",
                profile.pod_cidr
            ),
        ),
        line("kube.go:146", "Node controller sync successful"),
        line(
            "main.go:231",
            &format!("Created subnet manager: Kubernetes Subnet Manager - {}", profile.name),
        ),
        line("main.go:234", "Installing signal handlers"),
        line(
            "main.go:352",
            &format!("Found network config - Backend type: {}", flannel.backend),
        ),
    ];
    if flannel.backend == "vxlan" {
        // Windows needs VNI 4096 and port 4789 on every node (NET-FLANNEL-VXLAN-PARAMS).
        let vni = if profile.has_fault(Fault::VxlanParamsMismatch) {
            VXLAN_MISMATCHED_VNI
        } else {
            crate::addons::VXLAN_VNI
        };
        lines.push(line(
            "vxlan_windows.go:126",
            &format!(
                "VXLAN config: Name={} MacPrefix=0E-2A VNI={vni} Port={} GBP=false DirectRouting=false",
                flannel.network,
                crate::addons::VXLAN_PORT
            ),
        ));
    }
    if profile.has_fault(Fault::FlanneldWaiting) {
        lines.push(FLANNELD_WAITING.to_string());
        return Some(lines);
    }
    lines.extend([
        line("main.go:410", &format!("Wrote subnet file to {WINDOWS_SUBNET_ENV}")),
        line("main.go:414", "Running backend."),
        line("main.go:435", "Waiting for all goroutines to exit"),
    ]);
    Some(lines)
}

/// Lines a kubelet logs when it starts on this node: on a node with
/// [`Fault::HnsNetworkMissing`], that there is no network adapter for pods because the HNS
/// network is missing (NET-HNS-NETWORK-PRESENT). Structured like the kubelet's other lines.
pub fn kubelet_start(profile: &NodeProfile) -> Vec<String> {
    let Some(flannel) = profile.network_mode.flannel() else {
        return Vec::new();
    };
    if !profile.is_windows() || !profile.has_fault(Fault::HnsNetworkMissing) {
        return Vec::new();
    }
    let net = flannel.network;
    vec![format!(
        "\"No network adapter found for the pod network: HNS network not found\" network={net:?} err=\"Network {net} not found\" adapter=\"vEthernet ({net})\""
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::NetworkMode;
    use rstest::rstest;
    use std::net::Ipv4Addr;

    fn profile(name: &str, fault: Option<Fault>, mode: NetworkMode) -> NodeProfile {
        let mut p = crate::profile::default_node(name, Ipv4Addr::new(127, 1, 1, 10)).1;
        p.faults.extend(fault);
        p.network_mode = mode;
        p
    }

    #[rstest]
    #[case::healthy(
        None,
        NetworkMode::L2bridge,
        Some("Wrote subnet file to C:\\run\\flannel\\subnet.env")
    )]
    #[case::healthy_overlay(None, NetworkMode::Overlay, Some("Backend type: vxlan"))]
    #[case::waiting(Some(Fault::FlanneldWaiting), NetworkMode::L2bridge, Some(FLANNELD_WAITING))]
    #[case::never_started(Some(Fault::FlannelSubnetEnvMissing), NetworkMode::L2bridge, None)]
    #[case::other_fault(Some(Fault::HnsNetworkMissing), NetworkMode::L2bridge, Some("Running backend."))]
    fn flanneld_logs_follow_the_node(
        #[case] fault: Option<Fault>,
        #[case] mode: NetworkMode,
        #[case] has: Option<&str>,
    ) {
        let lines = flanneld_start(&profile("win2022-1", fault, mode), Utc::now()).expect("flanneld runs");
        match has {
            Some(text) => assert!(lines.iter().any(|l| l.contains(text)), "{lines:#?}"),
            None => assert!(lines.is_empty(), "{lines:#?}"),
        }
        let waiting = lines.iter().any(|l| l == FLANNELD_WAITING);
        let wrote = lines.iter().any(|l| l.contains("Wrote subnet file"));
        assert_eq!(waiting, fault == Some(Fault::FlanneldWaiting));
        assert_eq!(wrote, !lines.is_empty() && !waiting);
    }

    #[test]
    fn flanneld_lines_are_klog_formatted() {
        let at = DateTime::parse_from_rfc3339("2025-11-22T10:00:00.5Z")
            .expect("time")
            .with_timezone(&Utc);
        let lines = flanneld_start(&profile("win2019-1", None, NetworkMode::L2bridge), at).expect("flanneld");
        let first = lines.first().expect("a line");
        assert!(first.starts_with("I1122 10:00:00.500000 "), "{first}");
        assert!(first.contains(" main.go:532] Using interface with name Ethernet and address 127.1.1.10"));
    }

    #[rstest]
    #[case::linux("linux-1", NetworkMode::L2bridge)]
    #[case::azure_cni("win2022-1", NetworkMode::L2tunnel)]
    #[case::transparent("win2022-1", NetworkMode::Transparent)]
    fn no_flanneld_where_flannel_does_not_run(#[case] node: &str, #[case] mode: NetworkMode) {
        assert_eq!(flanneld_start(&profile(node, None, mode), Utc::now()), None);
    }

    #[rstest]
    #[case::l2bridge(NetworkMode::L2bridge, "cbr0")]
    #[case::overlay(NetworkMode::Overlay, "vxlan0")]
    fn a_missing_hns_network_is_logged_by_the_kubelet(#[case] mode: NetworkMode, #[case] net: &str) {
        let lines = kubelet_start(&profile("win2022-1", Some(Fault::HnsNetworkMissing), mode));
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains("No network adapter found"), "{}", lines[0]);
        assert!(
            lines[0].contains(&format!("err=\"Network {net} not found\"")),
            "{}",
            lines[0]
        );
        assert!(kubelet_start(&profile("win2022-1", None, mode)).is_empty());
    }
}
