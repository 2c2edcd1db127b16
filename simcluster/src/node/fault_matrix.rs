//! Every fault of `mixcheck sim faults` on a user-written topology of every platform: it is
//! either refused at load with the reason, or accepted and changes what its description says
//! through the platform's own objects and names (its HNS network, its services, its CNI
//! configuration, its processes) — never accepted to change nothing (issue 34).

use std::net::Ipv4Addr;

use rstest::rstest;

use crate::config::faults::Fault;
use crate::config::profile::NodeProfile;
use crate::config::topology::Topology;
use crate::node::{host, winservices};

/// A user-written topology of each platform: a Linux control plane and a Windows Server 2022
/// worker `win` on containerd 1.7.
fn topology(platform: &str) -> Topology {
    let network = match platform {
        "kubeadm-l2bridge" => "platform: kubeadm\nnetwork: {mode: l2bridge}",
        "kubeadm-overlay" => "platform: kubeadm\nnetwork: {mode: overlay}",
        "aks" => "platform: aks\nnetwork: {mode: l2bridge}",
        "aks-overlay" => "platform: aks\nnetwork: {mode: l2bridge, cni: azure-cni-overlay}",
        "eks" => "platform: eks\nnetwork: {mode: l2bridge}",
        "gke" => "platform: gke\nnetwork: {mode: l2bridge}",
        "gke-dpv2" => "platform: gke\nnetwork: {mode: l2bridge, dataplane: v2}",
        other => panic!("no platform {other}"),
    };
    let yaml = format!(
        "name: m\n{network}\nnodes:\n- {{name: lin, os: linux, role: control-plane}}\n- {{name: win, os: windows, kernelVersion: 10.0.20348.3207, containerRuntime: containerd://1.7.20}}\n"
    );
    Topology::parse(&yaml, platform).expect("the topology")
}

/// The Windows node's profile with `fault`.
fn node(topology: &Topology, fault: Option<Fault>) -> NodeProfile {
    let ips = [Ipv4Addr::new(10, 1, 0, 10), Ipv4Addr::new(10, 1, 0, 11)];
    let mut win = crate::config::profile::profiles(topology, &ips)
        .into_iter()
        .find(NodeProfile::is_windows)
        .expect("the Windows node");
    win.faults.extend(fault);
    win
}

fn service_running(profile: &NodeProfile, name: &str) -> Option<bool> {
    winservices::services(profile)
        .into_iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
        .map(|s| s.running)
}

/// What the fault changes on the node, compared with the same node without it: an assertion
/// per fault over the node's own objects; faults that act in the network fabric or the kubelet
/// model only are checked there (`network::fabric` and `node::kubelet` tests) and here only
/// reach the node's profile.
fn assert_effect(fault: Fault, platform: &str, healthy: &NodeProfile, broken: &NodeProfile) {
    let store = crate::store::Store::default();
    match fault {
        Fault::KubeletStopped => {
            let name = if platform.starts_with("aks") {
                "Kubelet"
            } else {
                "kubelet"
            };
            assert_eq!(service_running(healthy, name), Some(true), "{platform}");
            assert_eq!(service_running(broken, name), Some(false), "{platform}");
        }
        Fault::KubeProxyStopped => {
            assert!(host::kube_proxy_process(healthy).is_some(), "{platform}");
            assert!(host::kube_proxy_process(broken).is_none(), "{platform}");
            assert!(!host::kube_proxy_programs(broken), "{platform}");
            if platform.starts_with("aks") {
                assert_eq!(service_running(broken, "Kubeproxy"), Some(false));
            } else if platform == "eks" || platform == "gke" {
                assert_eq!(service_running(broken, "kube-proxy"), Some(false));
            }
        }
        Fault::KubeProxyNoHostnameOverride => {
            let (_, cmdline) = host::kube_proxy_process(broken).expect("kube-proxy runs");
            assert!(!cmdline.contains("--hostname-override"), "{platform}: {cmdline}");
            let (_, before) = host::kube_proxy_process(healthy).expect("kube-proxy runs");
            assert!(before.contains("--hostname-override"), "{platform}: {before}");
        }
        Fault::HnsNetworkMissing => {
            let net = host::pod_network(healthy).expect("the network");
            let expected = match platform {
                "gke" | "gke-dpv2" => "l2bridge",
                "kubeadm-overlay" => "vxlan0",
                _ => "cbr0",
            };
            assert_eq!(net.name, expected);
            assert!(host::pod_network(broken).is_none(), "{platform}");
            assert!(
                !host::adapters(broken).iter().any(|a| a.name.contains(expected)),
                "{platform}"
            );
        }
        Fault::ExceptionListMissingCluster | Fault::ExceptionListCoversOutside => {
            let before = host::cni_conf(healthy, &store).expect("a CNI configuration");
            let after = host::cni_conf(broken, &store).expect("a CNI configuration");
            assert_ne!(before, after, "{platform}");
            let covers = after.contains("0.0.0.0/0");
            assert_eq!(
                covers,
                fault == Fault::ExceptionListCoversOutside,
                "{platform}: {after}"
            );
            assert_eq!(
                after.contains(&broken.cluster_cidr),
                fault == Fault::ExceptionListCoversOutside,
                "{platform}: {after}"
            );
        }
        Fault::FlannelSubnetEnvMissing | Fault::FlanneldWaiting => {
            assert!(host::subnet_env(healthy).is_some());
            assert!(host::subnet_env(broken).is_none(), "{platform}");
        }
        Fault::FlannelRejoinStaleSourceVip => {
            assert_ne!(host::source_vip_json(healthy), host::source_vip_json(broken));
            assert!(!host::kube_proxy_programs(broken));
        }
        Fault::VxlanParamsMismatch => {
            let vni = |p: &NodeProfile| host::pod_network(p).and_then(|n| n.vxlan).map(|(vni, _)| vni);
            assert_eq!(vni(healthy), Some(healthy.cluster_vxlan_vni));
            assert_ne!(vni(broken), Some(broken.cluster_vxlan_vni));
        }
        Fault::PortExhaustion => {
            assert!(host::tcp_connections(broken, &store).len() > 10_000, "{platform}");
        }
        Fault::MacSpoofingDisabled
        | Fault::PauseImageWrongBuild
        | Fault::DnsUnreachable
        | Fault::NetpolAgentStopped => {
            assert!(broken.has_fault(fault));
        }
        // What the node lists: `node::exec::host_tests::data_plane_faults_show_in_the_nodes_hns_listing`.
        Fault::HnsLbPolicyMissing
        | Fault::HnsStaleBackend
        | Fault::HnsStaleRemoteEndpoint
        | Fault::HnsLeakedPolicies => {
            assert!(broken.has_fault(fault));
        }
    }
}

const ACCEPTED: &str = "";

#[rstest]
fn every_fault_on_every_platform_acts_or_is_refused(
    #[values(
        "kubeadm-l2bridge",
        "kubeadm-overlay",
        "aks",
        "aks-overlay",
        "eks",
        "gke",
        "gke-dpv2"
    )]
    platform: &str,
    #[values(
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
        Fault::NetpolAgentStopped,
        Fault::HnsLbPolicyMissing,
        Fault::HnsStaleBackend,
        Fault::HnsStaleRemoteEndpoint,
        Fault::HnsLeakedPolicies
    )]
    fault: Fault,
) {
    let managed = !platform.starts_with("kubeadm");
    let flannel = platform.starts_with("kubeadm");
    let refusal = match fault {
        Fault::MacSpoofingDisabled if managed => "a Hyper-V VM NIC setting",
        Fault::MacSpoofingDisabled if platform == "kubeadm-overlay" => "needs network.mode l2bridge",
        Fault::ExceptionListMissingCluster | Fault::ExceptionListCoversOutside if platform == "eks" => {
            "needs a pod network of"
        }
        Fault::KubeProxyStopped
        | Fault::KubeProxyNoHostnameOverride
        | Fault::HnsLbPolicyMissing
        | Fault::HnsStaleBackend
        | Fault::HnsStaleRemoteEndpoint
        | Fault::HnsLeakedPolicies
            if platform == "gke-dpv2" =>
        {
            "Dataplane V2 runs no kube-proxy"
        }
        Fault::FlannelSubnetEnvMissing | Fault::FlanneldWaiting if !flannel => "needs a pod network of flannel",
        Fault::HnsNetworkMissing if platform.starts_with("aks") => "creates its HNS network azure",
        Fault::HnsNetworkMissing if platform == "eks" => "creates its HNS network vpcbr",
        Fault::FlannelRejoinStaleSourceVip | Fault::VxlanParamsMismatch if platform != "kubeadm-overlay" => {
            "needs network.mode overlay"
        }
        // None of these platforms enforces NetworkPolicy by default (policy_engine::resolve).
        Fault::NetpolAgentStopped => "needs a policy engine that runs on the node",
        _ => ACCEPTED,
    };
    let mut t = topology(platform);
    let added = t.add_fault("win", fault.name());
    if refusal != ACCEPTED {
        let why = added.expect_err("refused");
        assert!(why.contains(refusal), "{platform} {fault}: {why}");
        // The same refusal at load, and when the cluster starts with a fault added by hand.
        t.nodes[1].faults.push(fault.name().to_string());
        let at_start = t.check_faults().expect_err("refused at start");
        assert!(at_start.contains(refusal), "{at_start}");
        return;
    }
    assert_eq!(added, Ok(()), "{platform} {fault}");
    let healthy = node(&topology(platform), None);
    let broken = node(&t, None);
    assert!(broken.has_fault(fault));
    assert_effect(fault, platform, &healthy, &broken);
}
