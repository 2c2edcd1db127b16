//! Tests of topology files: parsing, defaults, the built-in profiles and validation.

use super::*;
use rstest::rstest;

/// On the wall clock, a built-in profile's proxies program Services as fast in real time
/// as on its own clock, and its scale is 1.
#[rstest]
#[case::default(Topology::default_cluster())]
#[case::kubeadm_calico(Topology::profile("kubeadm-calico").expect("kubeadm-calico"))]
fn a_served_cluster_runs_on_the_wall_clock(#[case] topology: Topology) {
    let before = topology.programming_delay();
    let wall = topology.clone().on_wall_clock();
    assert_eq!(wall.timing.scale, 1.0);
    assert_eq!(wall.programming_delay(), before);
    assert!(topology.timing.scale < 1.0, "the built-in profiles run a fast clock");
}
/// Every node of a 5,000-node cluster gets its own valid /24, none in the Service range
/// (10.96.0.0/12); past the most the scheme holds there is none.
#[rstest::rstest]
#[case(0, Some("10.244.0.0/24"))]
#[case(300, Some("10.245.44.0/24"))]
#[case(3071, Some("10.255.255.0/24"))]
#[case(3072, Some("10.0.0.0/24"))]
#[case(4999, Some("10.7.135.0/24"))]
#[case(MAX_NODES - 1, Some("10.95.255.0/24"))]
#[case(MAX_NODES, None)]
fn each_node_gets_a_valid_pod_cidr(#[case] index: usize, #[case] expected: Option<&str>) {
    assert_eq!(node_pod_cidr(index).as_deref(), expected);
}

#[test]
fn pod_cidrs_are_distinct_and_parse() {
    let mut seen = std::collections::HashSet::new();
    for i in 0..5_000 {
        let cidr = node_pod_cidr(i).expect("a pod CIDR");
        let ip: std::net::Ipv4Addr = cidr.trim_end_matches("/24").parse().expect("an IPv4 network");
        assert!(
            !(ip.octets()[1] >= 96 && ip.octets()[1] < 112),
            "{cidr} is in the Service range"
        );
        assert!(seen.insert(cidr));
    }
}

const NODES: &str = "nodes: [{name: a, os: linux}]\n";

/// `network.ipFamilies`: single-stack by default; [IPv4, IPv6] from 1.21 (K8SDS); IPv6-only
/// and IPv6-primary are refused (IPv6-only is unsupported with Windows nodes: W20, W22, WNET).
#[rstest]
#[case::default_single("", None)]
#[case::dual("network: {ipFamilies: [IPv4, IPv6]}\n", None)]
#[case::ipv6_only("network: {ipFamilies: [IPv6]}\n", Some("IPv6-only"))]
#[case::ipv6_first("network: {ipFamilies: [IPv6, IPv4]}\n", Some("IPv6-only"))]
#[case::too_old("kubernetesVersion: v1.20.15\nnetwork: {ipFamilies: [IPv4, IPv6]}\n", Some("1.21"))]
#[case::narrow_pods("network: {ipFamilies: [IPv4, IPv6], clusterCidrV6: \"fd00::/64\"}\n", Some("/56"))]
#[case::wide_services(
    "network: {ipFamilies: [IPv4, IPv6], serviceCidrV6: \"fd00:1::/64\"}\n",
    Some("/108")
)]
fn ip_families(#[case] network: &str, #[case] error: Option<&str>) {
    let text = format!("name: t\n{network}{NODES}");
    match (Topology::parse(&text, "t.yaml"), error) {
        (Ok(t), None) => assert_eq!(t.network.dual_stack(), network.contains("IPv6")),
        (Err(e), Some(needle)) => assert!(e.to_string().contains(needle), "{e}"),
        (got, want) => panic!("{got:?}, expected {want:?}"),
    }
}

#[test]
fn default_topology_matches_the_design() {
    let t = Topology::default_cluster();
    let names: Vec<_> = t.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["control-plane", "linux-1", "win2019-1", "win2022-1"]);
    assert_eq!(t.version(), (1, 32));
    let w19 = &t.nodes[2];
    assert_eq!(w19.windows_build().as_deref(), Some("10.0.17763"));
    assert!(
        w19.taints
            .iter()
            .any(|t| t.key == "os" && t.value == "windows" && t.effect == "NoSchedule")
    );
    assert_eq!(t.nodes[3].build_number(), Some(20348));
}

/// The default `osImage` per build is the product name the kubelet reports: LTSC releases
/// with their year, semi-annual ones (1709, 1803, 1903, 2004, 23H2) without (HCS in docs/sources.md).
#[rstest]
#[case::ws2016("10.0.14393.1884", "Windows Server 2016 Datacenter")]
#[case::sac_1709("10.0.16299.19", "Windows Server Datacenter")]
#[case::sac_1803("10.0.17134.1", "Windows Server Datacenter")]
#[case::ws2019("10.0.17763.6414", "Windows Server 2019 Datacenter")]
#[case::sac_2004("10.0.19041.610", "Windows Server Datacenter")]
#[case::ws2022("10.0.20348.2762", "Windows Server 2022 Datacenter")]
#[case::sac_23h2("10.0.25398.1", "Windows Server Datacenter")]
#[case::ws2025("10.0.26100.3775", "Windows Server 2025 Datacenter")]
fn default_os_image_per_build(#[case] kernel: &str, #[case] os_image: &str) {
    let yaml = format!("name: t\nnodes:\n  - {{name: w, os: windows, kernelVersion: \"{kernel}\"}}\n");
    let t = Topology::parse(&yaml, "t.yaml").expect("parses");
    assert_eq!(t.nodes[0].os_image(), os_image);
}

#[test]
fn every_profile_parses() {
    for (name, _) in PROFILES {
        let t = Topology::profile(name).expect("profile parses");
        assert_eq!(&t.name, name);
        assert!(t.nodes.iter().any(|n| n.os == Os::Windows), "{name} has a Windows node");
    }
    assert!(Topology::profile("nope").is_err());
    assert_eq!(
        Topology::profile("k8s-1.14-ws2019-vxlan").expect("p").network.mode,
        NetworkMode::Overlay
    );
}

#[rstest]
#[case::unknown_field("name: x\nnodes:\n- name: a\n  os: linux\n  colour: red\n", 5, "colour")]
#[case::bad_os("name: x\nnodes:\n- name: a\n  os: solaris\n", 4, "solaris")]
fn errors_name_line_and_column(#[case] text: &str, #[case] line: u64, #[case] needle: &str) {
    match Topology::parse(text, "topo.yaml") {
        Err(TopologyError::Parse {
            path,
            line: l,
            column,
            message,
        }) => {
            assert_eq!(path, "topo.yaml");
            assert_eq!(l, line, "{message}");
            assert!(column > 0);
            assert!(message.contains(needle), "{message}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

/// The realism fields: each parses, and each defaults to the instant, permissive cluster.
/// The default cluster converges as real ones do (with short delays); `instant` takes the
/// delays and transient events away and keeps everything else.
#[test]
fn the_default_cluster_converges_and_its_instant_copy_does_not() {
    let t = Topology::default_cluster();
    assert!(t.timing.transient_events);
    // Upstream-sized delays (10 s, 2 s) on a clock twenty times as fast.
    assert_eq!(t.timing.scale, 0.05);
    assert_eq!(t.timing.programming(Os::Windows), std::time::Duration::from_millis(500));
    assert_eq!(t.timing.programming(Os::Linux), std::time::Duration::from_millis(100));
    let i = t.clone().instant();
    assert!(!i.timing.transient_events);
    assert_eq!(i.programming_delay(), std::time::Duration::ZERO);
    assert!(i.timing.windows_pull.is_zero());
    assert_eq!(i.nodes.len(), t.nodes.len());
    assert_eq!(i.network, t.network);
}

#[test]
fn realism_fields_parse_and_default_to_off() {
    let t = Topology::parse("name: x\nnodes:\n- {name: a, os: linux}\n", "t.yaml").expect("parses");
    assert!(t.network.egress && t.network.node_addresses_reachable);
    assert_eq!(t.timing.windows_pull, std::time::Duration::ZERO);
    assert_eq!(t.timing.first_pull(Os::Windows), None);
    assert!(!t.timing.transient_events);
    assert!(t.admission.deny.is_empty());
    assert_eq!(t.admission.by, Enforcement::Webhook);
    assert!(t.admission.privileged_namespaces);
    assert!(t.registries.is_empty());
    assert_eq!(t.nodes[0].max_pods, None);
    let text = "name: x\nnetwork: {egress: false, nodeAddressesReachable: false}\n\
        timing: {scale: 0.5, windowsPull: 20s, transientEvents: true}\n\
        admission: {deny: [hostPort, hostNetwork, hostProcess]}\n\
        registries: {registry.k8s.io: {auth: required}, mcr.microsoft.com: {reachable: false}}\n\
        nodes:\n- {name: a, os: linux, maxPods: 8}\n";
    let t = Topology::parse(text, "t.yaml").expect("parses");
    assert!(!t.network.egress && !t.network.node_addresses_reachable);
    assert_eq!(
        t.timing.first_pull(Os::Windows),
        Some(std::time::Duration::from_secs(10))
    );
    assert_eq!(t.timing.first_pull(Os::Linux), Some(std::time::Duration::from_secs(1)));
    assert!(t.timing.transient_events);
    assert_eq!(
        t.admission.deny,
        [Privilege::HostPort, Privilege::HostNetwork, Privilege::HostProcess]
    );
    assert_eq!(t.nodes[0].max_pods, Some(8));
    assert_eq!(
        t.registries.get("registry.k8s.io").auth,
        crate::config::registry::Auth::Required
    );
    assert!(!t.registries.get("mcr.microsoft.com").reachable);
}

/// `admission.by` names who refuses the denied privileges; `privilegedNamespaces` works alone.
#[rstest]
#[case::webhook("by: webhook", Enforcement::Webhook, true)]
#[case::policy("by: validatingAdmissionPolicy", Enforcement::ValidatingAdmissionPolicy, true)]
#[case::pod_security("by: podSecurity", Enforcement::PodSecurity, true)]
#[case::namespaces_alone("privilegedNamespaces: false", Enforcement::Webhook, false)]
fn admission_fields_parse(#[case] field: &str, #[case] by: Enforcement, #[case] privileged: bool) {
    let text = format!("name: x\nadmission: {{{field}}}\nnodes:\n- {{name: a, os: linux}}\n");
    let t = Topology::parse(&text, "t.yaml").expect("parses");
    assert_eq!(t.admission.by, by);
    assert_eq!(t.admission.privileged_namespaces, privileged);
    assert!(t.admission.deny.is_empty());
}

/// Malformed realism fields name their file, line and column like every other field.
#[rstest]
#[case::windows_pull(
    "name: x\ntiming:\n  windowsPull: soon\nnodes:\n- {name: a, os: linux}\n",
    3,
    "not a duration"
)]
#[case::transient_events(
    "name: x\ntiming:\n  transientEvents: maybe\nnodes:\n- {name: a, os: linux}\n",
    3,
    "boolean"
)]
#[case::egress(
    "name: x\nnetwork:\n  egress: sometimes\nnodes:\n- {name: a, os: linux}\n",
    3,
    "boolean"
)]
#[case::reachable(
    "name: x\nnetwork:\n  nodeAddressesReachable: 2\nnodes:\n- {name: a, os: linux}\n",
    3,
    ""
)]
#[case::deny(
    "name: x\nadmission:\n  deny: [hostPID]\nnodes:\n- {name: a, os: linux}\n",
    3,
    "hostPID"
)]
#[case::admission_field("name: x\nadmission:\n  allow: []\nnodes:\n- {name: a, os: linux}\n", 3, "allow")]
#[case::admission_by(
    "name: x\nadmission:\n  by: gatekeeper\nnodes:\n- {name: a, os: linux}\n",
    3,
    "unknown variant `gatekeeper`, expected one of webhook, validatingAdmissionPolicy, podSecurity"
)]
#[case::privileged_namespaces(
    "name: x\nadmission:\n  privilegedNamespaces: never\nnodes:\n- {name: a, os: linux}\n",
    3,
    "boolean"
)]
#[case::max_pods("name: x\nnodes:\n- name: a\n  os: linux\n  maxPods: many\n", 5, "u32")]
#[case::registry_auth(
    "name: x\nregistries:\n  registry.k8s.io: {auth: sometimes}\nnodes:\n- {name: a, os: linux}\n",
    3,
    "sometimes"
)]
#[case::registry_reachable(
    "name: x\nregistries:\n  mcr.microsoft.com:\n    reachable: perhaps\nnodes:\n- {name: a, os: linux}\n",
    4,
    "boolean"
)]
#[case::registry_field(
    "name: x\nregistries:\n  registry.k8s.io:\n    password: hunter2\nnodes:\n- {name: a, os: linux}\n",
    4,
    "password"
)]
#[case::registry_host(
    "name: x\nregistries:\n  https://registry.k8s.io: {auth: required}\nnodes:\n- {name: a, os: linux}\n",
    3,
    "not a registry host"
)]
#[case::registry_path(
    "name: x\nregistries:\n  registry.k8s.io/e2e-test-images: {}\nnodes:\n- {name: a, os: linux}\n",
    3,
    "no path"
)]
fn realism_field_errors_name_line_and_column(#[case] text: &str, #[case] line: u64, #[case] needle: &str) {
    match Topology::parse(text, "topo.yaml") {
        Err(TopologyError::Parse {
            line: l,
            column,
            message,
            ..
        }) => {
            assert_eq!(l, line, "{message}");
            assert!(column > 0);
            assert!(message.contains(needle), "{message}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[rstest]
#[case::no_nodes("name: x\nnodes: []\n", "at least one node")]
#[case::dup("name: x\nnodes:\n- {name: a, os: linux}\n- {name: a, os: linux}\n", "twice")]
#[case::bad_name("name: x\nnodes:\n- {name: A_B, os: linux}\n", "DNS subdomain")]
#[case::bad_kernel(
    "name: x\nnodes:\n- {name: w, os: windows, kernelVersion: abc}\n",
    "not a Windows version"
)]
#[case::bad_effect(
    "name: x\nnodes:\n- {name: a, os: linux, taints: [{key: k, effect: Sometimes}]}\n",
    "taint effect"
)]
#[case::bad_version(
    "name: x\nkubernetesVersion: 1.32\nnodes:\n- {name: a, os: linux}\n",
    "kubernetesVersion"
)]
#[case::flannel_fault_without_flannel(
    "name: x\nnetwork: {mode: transparent}\nnodes:\n- {name: w, os: windows, kernelVersion: 10.0.17763.1, faults: [flanneld-waiting]}\n",
    "flanneld-waiting needs network.mode l2bridge or overlay, not transparent"
)]
#[case::hns_fault_without_flannel(
    "name: x\nnetwork: {mode: l2tunnel}\nnodes:\n- {name: w, os: windows, kernelVersion: 10.0.17763.1, faults: [hns-network-missing]}\n",
    "needs network.mode l2bridge or overlay, not l2tunnel"
)]
#[case::mac_spoofing_on_overlay(
    "name: x\nnetwork: {mode: overlay}\nnodes:\n- {name: w, os: windows, kernelVersion: 10.0.17763.1, faults: [mac-spoofing-disabled]}\n",
    "mac-spoofing-disabled needs network.mode l2bridge, not overlay"
)]
#[case::mac_spoofing_on_linux(
    "name: x\nnodes:\n- {name: l, os: linux, faults: [mac-spoofing-disabled]}\n",
    "mac-spoofing-disabled exists only on Windows nodes"
)]
#[case::vxlan_fault_on_l2bridge(
    "name: x\nnodes:\n- {name: w, os: windows, kernelVersion: 10.0.17763.1, faults: [vxlan-params-mismatch]}\n",
    "needs network.mode overlay, not l2bridge"
)]
#[case::aks_is_l2bridge(
    "name: x\nplatform: aks\nnetwork: {mode: l2tunnel}\nnodes:\n- {name: a, os: linux}\n",
    "platform aks runs network.mode l2bridge, not l2tunnel (Azure CNI runs in bridge mode on Windows for VNet and Overlay alike: Azure/azure-container-networking cni/azure-windows.conflist"
)]
#[case::calico_on_a_managed_platform(
    "name: x\nplatform: eks\nnetwork: {cni: calico}\nnodes:\n- {name: a, os: linux}\n",
    "network.cni calico is not a choice on platform eks"
)]
#[case::flannel_fault_on_calico(
    "name: x\nnetwork: {mode: overlay, cni: calico}\nnodes:\n- {name: w, os: windows, kernelVersion: 10.0.20348.1, faults: [flanneld-waiting]}\n",
    "flanneld-waiting needs a pod network of flannel, not calico"
)]
#[case::mac_spoofing_on_eks(
    "name: x\nplatform: eks\nnodes:\n- {name: w, os: windows, kernelVersion: 10.0.20348.1, faults: [mac-spoofing-disabled]}\n",
    "cannot occur on platform eks: MAC spoofing is a Hyper-V VM NIC setting"
)]
#[case::bad_cluster_domain(
    "name: x\nnetwork: {clusterDomain: \"Not A Domain\"}\nnodes:\n- {name: a, os: linux}\n",
    "clusterDomain"
)]
#[case::windows_fault_on_linux(
    "name: x\nnodes:\n- {name: a, os: linux, faults: [pause-image-wrong-build]}\n",
    "exists only on Windows nodes"
)]
fn semantic_errors(#[case] text: &str, #[case] needle: &str) {
    let err = Topology::parse(text, "t.yaml").expect_err("invalid");
    assert!(err.to_string().contains(needle), "{err}");
    assert!(err.to_string().starts_with("t.yaml"), "{err}");
}

#[rstest]
#[case("v1.32.3", Some((1, 32)))]
#[case("v1.9.0-alpha.1", Some((1, 9)))]
#[case("v1.14", Some((1, 14)))]
#[case("1.14", None)]
fn versions(#[case] v: &str, #[case] expected: Option<(u32, u32)>) {
    assert_eq!(parse_version(v), expected);
}

/// The fields of issue 34: Azure CNI Overlay on AKS, GKE Dataplane V2, the egress ports, the
/// load balancers' reachability from outside, and DSR's per-platform default.
#[test]
fn platform_network_fields_parse_and_default() {
    let t = Topology::default_cluster();
    assert_eq!(t.network.egress_ports, None);
    assert!(t.network.load_balancers_reachable && !t.network.dsr && !t.dataplane_v2());
    let aks = Topology::profile("aks").expect("aks");
    assert!(aks.network.dsr, "WinDSR is on by default on AKS");
    assert_eq!(aks.network.mode, NetworkMode::L2bridge);
    assert_eq!(aks.pod_network(), PodNetwork::AzureCni);
    let overlay = Topology::profile("aks-overlay").expect("aks-overlay");
    assert_eq!(overlay.pod_network(), PodNetwork::AzureCniOverlay);
    assert!(Topology::profile("gke-dpv2").expect("gke-dpv2").dataplane_v2());
    let text = "name: x\nplatform: aks\nnetwork:\n  dsr: false\n  egressPorts: [443]\n  loadBalancersReachable: false\nnodes:\n- {name: a, os: linux}\n";
    let t = Topology::parse(text, "t").expect("parses");
    assert!(!t.network.dsr, "dsr as written wins");
    assert_eq!(t.network.egress_ports, Some(vec![443]));
    assert!(!t.network.load_balancers_reachable);
    // l2tunnel stays a choice of a user-built kubeadm cluster (Azure CNI's tunnel mode).
    let t = Topology::parse(
        "name: x\nnetwork: {mode: l2tunnel}\nnodes:\n- {name: a, os: linux}\n",
        "t",
    )
    .expect("kubeadm l2tunnel");
    assert_eq!(t.pod_network(), PodNetwork::AzureCni);
}

#[rstest]
#[case::egress_ports(
    "name: x\nnetwork:\n  egressPorts: [https]\nnodes:\n- {name: a, os: linux}\n",
    3,
    "u16"
)]
#[case::egress_ports_range(
    "name: x\nnetwork:\n  egressPorts: [70000]\nnodes:\n- {name: a, os: linux}\n",
    3,
    "u16"
)]
#[case::lb_reachable(
    "name: x\nnetwork:\n  loadBalancersReachable: sometimes\nnodes:\n- {name: a, os: linux}\n",
    3,
    "boolean"
)]
#[case::dataplane("name: x\nnetwork:\n  dataplane: v3\nnodes:\n- {name: a, os: linux}\n", 3, "v3")]
#[case::cni(
    "name: x\nnetwork:\n  cni: azure-overlay\nnodes:\n- {name: a, os: linux}\n",
    3,
    "azure-overlay"
)]
fn new_network_field_errors_name_line_and_column(#[case] text: &str, #[case] line: u64, #[case] needle: &str) {
    match Topology::parse(text, "t.yaml") {
        Err(TopologyError::Parse {
            line: l,
            column,
            message,
            ..
        }) => {
            assert_eq!(l, line, "{message}");
            assert!(column > 0);
            assert!(message.contains(needle), "{message}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[rstest]
#[case::dpv2_on_aks(
    "name: x\nplatform: aks\nnetwork: {dataplane: v2}\nnodes:\n- {name: a, os: linux}\n",
    "only on platform gke"
)]
#[case::overlay_on_gke(
    "name: x\nplatform: gke\nnetwork: {cni: azure-cni-overlay}\nnodes:\n- {name: a, os: linux}\n",
    "network.cni azure-cni-overlay is not a choice on platform gke"
)]
#[case::port_zero("name: x\nnetwork: {egressPorts: [0]}\nnodes:\n- {name: a, os: linux}\n", "port 0")]
#[case::kube_proxy_on_dpv2(
    "name: x\nplatform: gke\nnetwork: {dataplane: v2}\nnodes:\n- {name: w, os: windows, kernelVersion: 10.0.20348.1, faults: [kube-proxy-stopped]}\n",
    "Dataplane V2 runs no kube-proxy"
)]
#[case::hns_on_gke_is_fine_but_not_on_eks(
    "name: x\nplatform: eks\nnodes:\n- {name: w, os: windows, kernelVersion: 10.0.20348.1, faults: [hns-network-missing]}\n",
    "creates its HNS network vpcbr"
)]
fn platform_semantic_errors(#[case] text: &str, #[case] needle: &str) {
    let err = Topology::parse(text, "t.yaml").expect_err("invalid");
    assert!(err.to_string().contains(needle), "{err}");
}

/// `--fault NODE:FAULT` goes through [`Topology::add_fault`]: the same checks as a topology's
/// own `faults:`, naming the node.
#[test]
fn faults_added_later_are_checked_like_the_topologys_own() {
    let mut gke = Topology::profile("gke").expect("gke");
    let win = gke
        .nodes
        .iter()
        .find(|n| n.os == Os::Windows)
        .map(|n| n.name.clone())
        .expect("a Windows node");
    assert_eq!(gke.add_fault(&win, "hns-network-missing"), Ok(()));
    let err = gke.add_fault(&win, "mac-spoofing-disabled").expect_err("refused");
    assert!(err.contains("Hyper-V") && err.contains(&win), "{err}");
    assert!(
        gke.add_fault("nope", "kubelet-stopped")
            .expect_err("no node")
            .contains("no node")
    );
    assert!(
        gke.add_fault(&win, "nope")
            .expect_err("no fault")
            .contains("unknown fault")
    );
    // A fault pushed by hand is refused when the cluster starts.
    gke.nodes.iter_mut().for_each(|n| {
        if n.name == win {
            n.faults.push("flanneld-waiting".into());
        }
    });
    assert!(gke.check_faults().expect_err("refused").contains("flannel"));
}

const WINDOWS_NODE: &str = "nodes: [{name: w, os: windows, kernelVersion: 10.0.20348.2762}]\n";

/// `network.vxlanVni`: 4096 by default; any VNI from 4096 on is flannel's on Windows (flannel
/// Documentation/backends.md: "On Windows should be greater than or equal to 4096"), below it
/// refused where the cluster has Windows nodes; a VNI has 24 bits (RFC 7348).
#[rstest]
#[case::default("", WINDOWS_NODE, Ok(4096))]
#[case::vni_4097("network: {mode: overlay, vxlanVni: 4097}\n", WINDOWS_NODE, Ok(4097))]
#[case::below_4096_windows("network: {mode: overlay, vxlanVni: 1}\n", WINDOWS_NODE, Err("at least 4096"))]
#[case::below_4096_linux_only("network: {mode: overlay, vxlanVni: 1}\n", NODES, Ok(1))]
#[case::over_24_bits("network: {vxlanVni: 16777216}\n", WINDOWS_NODE, Err("24 bits"))]
fn vxlan_vni(#[case] network: &str, #[case] nodes: &str, #[case] want: Result<u32, &str>) {
    let text = format!("name: t\n{network}{nodes}");
    match (Topology::parse(&text, "t.yaml"), want) {
        (Ok(t), Ok(vni)) => assert_eq!(t.network.vxlan_vni, vni),
        (Err(e), Err(needle)) => assert!(e.to_string().contains(needle), "{e}"),
        (got, want) => panic!("{got:?}, expected {want:?}"),
    }
}

/// `nodes[].cniDelegate`: a Windows node's plugin, of a mode it builds and one its pod network
/// delegates to; an unknown name is a parse error at its line and column.
#[rstest]
#[case::sdnoverlay("overlay", "", "sdnoverlay", Ok(()))]
#[case::win_overlay("overlay", "", "win-overlay", Ok(()))]
#[case::bridge_on_overlay(
    "overlay",
    "",
    "win-bridge",
    Err("builds l2bridge networks, not network.mode overlay")
)]
#[case::calico_on_flannel("overlay", "", "calico", Err("does not delegate to calico"))]
#[case::vpc_on_aks("l2bridge", "platform: aks\n", "vpc-bridge", Err("does not delegate to vpc-bridge"))]
#[case::eks("l2bridge", "platform: eks\n", "vpc-bridge", Ok(()))]
#[case::unknown("l2bridge", "", "wincni", Err("t.yaml:3:"))]
fn cni_delegate(#[case] mode: &str, #[case] platform: &str, #[case] delegate: &str, #[case] want: Result<(), &str>) {
    let text = format!(
        "name: t\n{platform}network: {{mode: {mode}}}\nnodes: [{{name: w, os: windows, kernelVersion: 10.0.20348.2762, cniDelegate: {delegate}}}]\n"
    );
    match (Topology::parse(&text, "t.yaml"), want) {
        (Ok(t), Ok(())) => assert_eq!(t.nodes[0].cni_delegate.map(|d| d.as_str()), Some(delegate)),
        (Err(e), Err(needle)) => assert!(e.to_string().contains(needle), "{e}"),
        (got, want) => panic!("{got:?}, expected {want:?}"),
    }
}

#[test]
fn a_linux_node_has_no_cni_delegate() {
    let text = "name: t\nnodes: [{name: l, os: linux, cniDelegate: win-bridge}]\n";
    let e = Topology::parse(text, "t.yaml").expect_err("refused");
    assert!(e.to_string().contains("the node runs Linux"), "{e}");
}
