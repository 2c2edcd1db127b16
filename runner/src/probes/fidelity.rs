//! The second documentation-fidelity review (issue #22), row by row: for the facts of each row,
//! the embedded suites' expectation is the one the cited documents give, and cites them.

use mixcheck_reports::Os;
use rstest::rstest;

use crate::catalogue::suite::{Documented, Placement, Protocol, Suites};
use crate::cluster::facts::ClusterNode;
use crate::probes::expectation::{self, CellFacts};

/// The facts of one row: the API server version and what differs from a current cluster.
#[derive(Clone, Copy)]
struct Row {
    k8s: (u32, u32),
    from: Os,
    to: Os,
    /// The Windows nodes' kernel (`10.0.<build>.<revision>`).
    kernel: &'static str,
    runtime: (&'static str, (u32, u32)),
    kubelet_patch: Option<u32>,
    placement: Placement,
    protocol: Protocol,
    mode: &'static str,
    dsr: bool,
    flannel: bool,
    dual_stack: bool,
    /// The Windows end's CNI plugin (None: not known).
    delegate: Option<&'static str>,
}

const CURRENT: Row = Row {
    k8s: (1, 32),
    from: Os::Windows,
    to: Os::Windows,
    kernel: "10.0.20348.2762",
    runtime: ("containerd", (1, 7)),
    kubelet_patch: Some(3),
    placement: Placement::OtherNode,
    protocol: Protocol::Tcp,
    mode: "l2bridge",
    dsr: false,
    flannel: true,
    dual_stack: false,
    delegate: Some("win-bridge"),
};

const fn era(k8s: (u32, u32), kernel: &'static str, runtime: (&'static str, (u32, u32))) -> Row {
    Row {
        k8s,
        kernel,
        runtime,
        ..CURRENT
    }
}

const K15: Row = era((1, 5), "10.0.14393.1198", ("docker", (1, 12)));
const K17: Row = era((1, 7), "10.0.14393.1198", ("docker", (17, 6)));
const K19: Row = era((1, 9), "10.0.16299.15", ("docker", (17, 6)));
const K112: Row = era((1, 12), "10.0.17134.1", ("docker", (18, 3)));
const K114: Row = era((1, 14), "10.0.17763.379", ("docker", (18, 9)));

fn node(os: Os, row: &Row) -> ClusterNode {
    let windows = os == Os::Windows;
    ClusterNode {
        build: windows.then(|| crate::cluster::facts::build_of(row.kernel)).flatten(),
        kernel: if windows { row.kernel } else { "6.8.0-1017-azure" }.into(),
        kubelet: Some(row.k8s),
        kubelet_patch: row.kubelet_patch,
        runtime: Some((row.runtime.0.into(), row.runtime.1)),
        ..ClusterNode::sample(if windows { "win-1" } else { "linux-1" }, os, "10.0.0.5")
    }
}

/// The expectation `suite/check` gives for the row's facts: its result and its sources.
fn judged(suite: &str, check: &str, row: Row) -> (Documented, Vec<String>) {
    let rules = crate::catalogue::rules::Catalogue::embedded().expect("rules");
    let suites = Suites::load(None, &rules).expect("suites");
    let (_, c) = suites
        .checks()
        .find(|(s, c)| s.name == suite && c.name == check)
        .unwrap_or_else(|| panic!("no check {suite}/{check}"));
    let (from, to) = (node(row.from, &row), node(row.to, &row));
    let row_delegate = row.delegate.map(str::to_string).ok_or_else(|| "not read".to_string());
    let facts = CellFacts {
        kubernetes: row.k8s,
        from: Some(&from),
        to: Some(&to),
        placement: Some(row.placement),
        protocol: Some(row.protocol),
        variant: None,
        network_mode: Some(row.mode),
        dsr: Some(row.dsr),
        flannel: Some((0, 26)),
        flannel_present: row.flannel,
        egress: true,
        dual_stack: Some(row.dual_stack),
        calico: false,
        gmsa: Some(false),
        policy_engine: None,
        cni_delegate: row_delegate,
        feature_gates: None,
    };
    let e = expectation::expectation(c, &facts).unwrap_or_else(|why| panic!("{suite}/{check}: {why}"));
    let sources = if e.sources.is_empty() {
        c.sources.clone()
    } else {
        e.sources.clone()
    };
    (e.result, sources)
}

use Documented::{Informational as Info, Unsupported, Works};
use Documented::{KnownOsIssue as Issue, Limitation as Lim, NotApplicable as Na, Undocumented as Undoc};

#[rstest]
// SVC-VIP-FROM-NODE — WDBG: "My Windows node cannot access my services using the service IP … a
// known limitation"; WUG: "Only Windows pods are able to access service IPs". No containerd branch.
#[case::host_to_cluster_ip_containerd_17("network-flows", "windows-host-to-cluster-ip", CURRENT, Lim, "WDBG")]
// NET-LOCAL-POLICY-NON-DSR — WNET: "Local Traffic Policy in non-DSR mode" is a limitation.
#[case::local_policy_without_dsr("network-flows", "local-traffic-policy", Row { from: Os::Linux, ..CURRENT }, Lim, "WNET")]
#[case::local_policy_with_dsr("network-flows", "local-traffic-policy", Row { from: Os::Linux, dsr: true, ..CURRENT }, Works, "WNET")]
// NET-DSR — W14 lists "Local Traffic Policy and DSR mode" as unsupported.
#[case::dsr_on_1_14("network-config", "dsr-configuration", Row { dsr: true, ..K114 }, Unsupported, "W14")]
// HIST-1.5-UDP / HIST-1.5-DNS — S4 and WGSG15 document 1.5 only; 1.6–1.8 follow the general rule.
#[case::udp_1_5("network-flows", "pod-ip-same-node", Row { protocol: Protocol::Udp, ..K15 }, Lim, "S4")]
#[case::udp_1_7("network-flows", "pod-ip-same-node", Row { protocol: Protocol::Udp, ..K17 }, Works, "W14")]
#[case::dns_1_5("dns", "service-fqdn", K15, Lim, "WGSG15")]
#[case::dns_1_7("dns", "service-fqdn", K17, Works, "W14")]
// POD-MULTI-CONTAINER — WGSG15 "only one container per pod is supported": pod-failed is documented.
#[case::one_container_per_pod("network-flows", "containers-share-localhost", K15, Lim, "WGSG15")]
// NET-ICMP-EXTERNAL — WNET names win-overlay, win-bridge and Azure CNI only.
#[case::icmp_transparent("network-flows", "icmp-to-outside", Row { mode: "transparent", ..CURRENT }, Undoc, "WNET")]
// NET-WS2022-* — WNETo: "with KB5005619 or higher installed"; bound by the kernel revision.
#[case::ws2022_before_kb5005619("network-flows", "pod-ip-ws2022-l2bridge-dsr", Row { kernel: "10.0.20348.230", dsr: true, ..CURRENT }, Na, "WNETo")]
#[case::ws2022_with_kb5005619("network-flows", "pod-ip-ws2022-l2bridge-dsr", Row { kernel: "10.0.20348.261", dsr: true, ..CURRENT }, Issue, "WNETo")]
#[case::nodeport_overlay_ws2022_rtm("nodeport", "nodeport-overlay-ws2022", Row { kernel: "10.0.20348.169", mode: "overlay", ..CURRENT }, Na, "WNETo")]
#[case::np_remote_ws2022_rtm("nodeport", "nodeport-from-other-nodes", Row { kernel: "10.0.20348.169", mode: "overlay", ..CURRENT }, Works, "W14")]
#[case::np_from_winpod_ws2022_kb("nodeport", "nodeport-from-windows-pod", Row { kernel: "10.0.20348.261", mode: "overlay", ..CURRENT }, Issue, "WNETo")]
// Third review, row 1: the overlay NodePort OS issue has the fix bound its sources give
// (image-builder#877, 2022-05-04: 20348.681 is the last update before it) — a patched node is
// held to the general rule, so a kube-proxy fault there fails.
#[case::np_remote_ws2022_last_affected("nodeport", "nodeport-from-other-nodes", Row { kernel: "10.0.20348.681", mode: "overlay", ..CURRENT }, Issue, "GH kubernetes-sigs/image-builder#877")]
#[case::np_remote_ws2022_patched("nodeport", "nodeport-from-other-nodes", Row { kernel: "10.0.20348.707", mode: "overlay", ..CURRENT }, Works, "W14")]
#[case::np_remote_ws2022_current("nodeport", "nodeport-from-other-nodes", Row { mode: "overlay", ..CURRENT }, Works, "W14")]
#[case::np_from_winpod_ws2022_current("nodeport", "nodeport-from-windows-pod", Row { mode: "overlay", ..CURRENT }, Works, "E2E/service")]
#[case::nodeport_overlay_ws2022_current("nodeport", "nodeport-overlay-ws2022", Row { mode: "overlay", ..CURRENT }, Na, "WNETo")]
// Row 10: the l2bridge DSR pod-to-pod issue, bounded by AKS turning WinDSR on (Azure/AKS#2073).
#[case::ws2022_dsr_last_affected("network-flows", "pod-ip-ws2022-l2bridge-dsr", Row { kernel: "10.0.20348.768", dsr: true, ..CURRENT }, Issue, "AKS2073")]
#[case::ws2022_dsr_current("network-flows", "pod-ip-ws2022-l2bridge-dsr", Row { dsr: true, ..CURRENT }, Na, "WNETo")]
// NET-HOSTPORT — S2 documents 1.9 only; k8s#51354, k8s#66022 for 1.10–1.13.
#[case::hostport_1_9("nodeport", "hostport", K19, Works, "S2")]
#[case::hostport_1_12("nodeport", "hostport", K112, Lim, "GH kubernetes#51354")]
// plugins#530: win-overlay has no portMappings; other CNIs are undocumented.
#[case::hostport_overlay("nodeport", "hostport", Row { mode: "overlay", delegate: Some("win-overlay"), ..CURRENT }, Lim, "GH containernetworking/plugins#530")]
// Third review, rows 2–3: hostPort keys on the CNI plugin, not the network mode — sdnoverlay
// (current sig-windows-tools flannel) and vpc-bridge are undocumented; win-bridge works.
#[case::hostport_sdnoverlay("nodeport", "hostport", Row { mode: "overlay", delegate: Some("sdnoverlay"), ..CURRENT }, Undoc, "WCN")]
#[case::hostport_vpc_bridge("nodeport", "hostport", Row { delegate: Some("vpc-bridge"), ..CURRENT }, Undoc, "GH aws/amazon-vpc-cni-plugins#93")]
#[case::hostport_win_bridge("nodeport", "hostport", CURRENT, Works, "GH containernetworking/plugins#475")]
// Row 13: ICMP to outside is the documented limitation for the three named plugins only.
#[case::icmp_outside_win_bridge("network-flows", "icmp-to-outside", Row { protocol: Protocol::Icmp, ..CURRENT }, Lim, "WNET")]
#[case::icmp_outside_calico("network-flows", "icmp-to-outside", Row { protocol: Protocol::Icmp, delegate: Some("calico"), ..CURRENT }, Undoc, "WNET")]
// Row 4: node → local pod over a VXLAN network other than flannel's is undocumented.
#[case::node_to_pod_overlay_calico("network-flows", "windows-node-to-pod-overlay", Row { mode: "overlay", flannel: false, placement: Placement::SameNode, ..CURRENT }, Undoc, "W14")]
// §2: CNI CHECK is informational.
#[case::cni_check_informational("network-config", "cni-check-command", CURRENT, Info, "W14")]
// §3: node-problem-detector is an optional add-on with preliminary Windows support.
#[case::problem_detector_informational("node-api", "problem-detector-conditions", CURRENT, Info, "WI31")]
#[case::problem_detector_1_14("node-api", "problem-detector-conditions", Row { k8s: (1, 14), ..CURRENT }, Info, "W14")]
// The review found no source for other CNIs; Azure CNI (L2Tunnel) has one: it programs a Windows
// pod's portMappings as HNS NAT policies (Azure/azure-container-networking#256, 2018). A host
// reaching its own node's hostPort there is a known issue needing CNI and OS fixes (AKS#3620);
// ovn-kubernetes (transparent) stays undocumented.
#[case::hostport_azure_cni("nodeport", "hostport", Row { delegate: Some("azure-cni"), ..CURRENT }, Works, "GH Azure/azure-container-networking#256")]
#[case::hostport_azure_cni_own_node("nodeport", "hostport", Row { delegate: Some("azure-cni"), placement: Placement::SameNode, ..CURRENT }, Undoc, "GH Azure/AKS#3620")]
#[case::hostport_transparent("nodeport", "hostport", Row { mode: "transparent", ..CURRENT }, Undoc, "S2")]
// plugins#475 speaks of containers reaching their own node's hostPort, not the host.
#[case::hostport_host_same_node("nodeport", "hostport", Row { placement: Placement::SameNode, kernel: "10.0.17763.6414", ..CURRENT }, Undoc, "GH containernetworking/plugins#475")]
#[case::hostport_pod_same_node_1809("nodeport", "hostport-from-pod-own-node", Row { placement: Placement::SameNode, kernel: "10.0.17763.6414", ..CURRENT }, Lim, "GH containernetworking/plugins#475")]
// NP-FROM-WINPOD same node: kept on the e2e's basis (PickIP may return the pod's own node).
#[case::np_from_winpod_same_node("nodeport", "nodeport-from-windows-pod", Row { placement: Placement::SameNode, ..CURRENT }, Works, "E2E/service")]
// DNS-CLUSTERFIRSTWITHHOSTNET — W14 "not supported because Host Networking is not supported"; no
// runtime split.
#[case::cfwhn_containerd("dns", "cluster-first-with-host-net-resolves", CURRENT, Lim, "W14")]
#[case::cfwhn_docker("dns", "cluster-first-with-host-net-resolves", Row { runtime: ("docker", (20, 10)), ..CURRENT }, Lim, "W14")]
// NET-HOSTNETWORK 1.26–1.32 — WI26: the WindowsHostNetwork kubelet gate (the says names it).
#[case::host_network_gate("security-context", "host-network-not-provided", CURRENT, Lim, "WI26")]
// DNS-ETC-HOSTS — kubelet shouldMountHostsFile: containerd mounts it; docker cannot (W14).
#[case::hosts_file_containerd("dns", "host-aliases-in-hosts-file", CURRENT, Works, "KPODS")]
#[case::hosts_file_docker("dns", "host-aliases-in-hosts-file", Row { runtime: ("docker", (20, 10)), ..CURRENT }, Lim, "W14")]
// DNS-CUSTOM-CONFIG — KEP: "For v1.14, custom pod DNS configuration tests are not running".
#[case::custom_dns_1_14("dns", "custom-dns-config", K114, Undoc, "KEP")]
#[case::custom_dns_servers_1_14("dns", "custom-dns-servers-applied", K114, Undoc, "KEP")]
// POD-LIFECYCLE-BASICS — WGSG15 (Secrets do not work), WGSG19 (not as volumes; as env vars).
#[case::secret_volume_1_9("secrets", "secret-as-volume", K19, Lim, "WGSG19")]
#[case::secret_env_1_5("secrets", "secret-as-env-var", K15, Lim, "WGSG15")]
#[case::secret_env_1_9("secrets", "secret-as-env-var", K19, Works, "WGSG19")]
// VER-OS-SUPPORTED — WGSG19: "Windows Server 2016 RTM or later. … 1709 or later is preferred."
#[case::ws2016_on_1_9("version-matching", "windows-os-supported", Row { kernel: "10.0.14393.1198", ..K19 }, Works, "WGSG19")]
#[case::ws1803_on_1_12("version-matching", "windows-os-supported", K112, Works, "WGSG19")]
// VER-BUILD-MATCH — HCS compatLTSCReleases {LTSC2022, LTSC2025}: no documented build above 26100.
#[case::ltsc2022_above_26100("version-matching", "ltsc2022-image-across-builds", Row { kernel: "10.0.26200.1", ..CURRENT }, Na, "HCS")]
// SEC-RUNASNONROOT-ADMIN — CVE-2021-25749 (k8s#112192) by patch release.
#[case::cve_1_22_13("security-context", "run-as-non-root-refuses-uppercase-administrator", Row { k8s: (1, 22), kubelet_patch: Some(13), ..CURRENT }, Issue, "GH kubernetes#112192")]
#[case::cve_fixed_1_22_14("security-context", "run-as-non-root-refuses-uppercase-administrator", Row { k8s: (1, 22), kubelet_patch: Some(14), ..CURRENT }, Documented::UnsupportedApi, "E2E/security_context")]
#[case::cve_1_24_4("security-context", "run-as-non-root-refuses-uppercase-administrator", Row { k8s: (1, 24), kubelet_patch: Some(4), ..CURRENT }, Issue, "GH kubernetes#112192")]
// MEM-NO-OVERCOMMIT-SCHED — W14: limits "prevent the scheduler from adding more pods" — works.
#[case::scheduler_full_node("memory-reservation", "scheduler-respects-allocatable", CURRENT, Works, "W14")]
// MEM-PRESSURE-CONDITION — WI26/WI31: reported but not implemented: informational only.
#[case::pressure_informational("memory-reservation", "pressure-conditions", CURRENT, Na, "WI31")]
// NET-FLANNEL-* — keyed on flannel being present, not on the network mode.
#[case::flannel_absent_l2bridge("network-config", "flannel-subnet-env", Row { flannel: false, ..CURRENT }, Na, "W14")]
#[case::flannel_absent_overlay("network-config", "flannel-vxlan-parameters", Row { flannel: false, mode: "overlay", ..CURRENT }, Na, "W14")]
#[case::flannel_overlay("network-config", "flannel-vxlan-parameters", Row { mode: "overlay", ..CURRENT }, Works, "WN17")]
// Third review (fidelity-review-2026-12.md §1). Row 5: dual-family Services are not documented
// for Windows ("single-family services"); Linux to Linux works.
#[case::dual_family_service_windows("network-flows", "pod-to-cluster-ipv6", Row { dual_stack: true, ..CURRENT }, Undoc, "K8SDS")]
#[case::dual_family_service_linux("network-flows", "pod-to-cluster-ipv6", Row { dual_stack: true, from: Os::Linux, to: Os::Linux, ..CURRENT }, Works, "K8SDS")]
// Row 8: "Overlay (VXLAN) networks on Windows do not support dual-stack".
#[case::overlay_dual_stack_hybrid("network-flows", "pod-ipv6-dual-stack", Row { dual_stack: true, from: Os::Linux, mode: "overlay", ..CURRENT }, Lim, "K8SDS")]
// Row 9: the 1.21 table lists 2019, 2004 and 20H2.
#[case::os_2004_on_1_21("version-matching", "windows-os-supported", Row { k8s: (1, 21), kernel: "10.0.19041.1", ..CURRENT }, Works, "W21")]
#[case::os_2022_on_1_21("version-matching", "windows-os-supported", Row { k8s: (1, 21), ..CURRENT }, Unsupported, "W14")]
// Row 11: the v1 CRI API from 1.26 — containerd 1.6+.
#[case::containerd_1_5_on_1_26("version-matching", "container-runtime", Row { k8s: (1, 26), runtime: ("containerd", (1, 5)), ..CURRENT }, Unsupported, "W14")]
#[case::containerd_1_6_on_1_26("version-matching", "container-runtime", Row { k8s: (1, 26), runtime: ("containerd", (1, 6)), ..CURRENT }, Works, "KCRI")]
#[case::containerd_1_5_on_1_25("version-matching", "container-runtime", Row { k8s: (1, 25), runtime: ("containerd", (1, 5)), ..CURRENT }, Works, "W20")]
// Row 14: ClusterFirstWithHostNet on ≥ 1.33 agrees with the hostNetwork check (kubernetes#130250).
#[case::cfwhn_network_1_33("dns", "cluster-first-with-host-net-network", Row { k8s: (1, 33), ..CURRENT }, Lim, "GH kubernetes#130250")]
fn each_review_row_follows_its_source(
    #[case] suite: &str,
    #[case] check: &str,
    #[case] row: Row,
    #[case] result: Documented,
    #[case] source: &str,
) {
    let (got, sources) = judged(suite, check, row);
    assert_eq!(got, result, "{suite}/{check}");
    assert!(
        sources.iter().any(|s| s == source),
        "{suite}/{check} should cite {source}: {sources:?}"
    );
}

#[test]
fn a_patch_bound_needs_the_kubelet_patch_release() {
    let row = Row {
        k8s: (1, 23),
        kubelet_patch: None,
        ..CURRENT
    };
    let rules = crate::catalogue::rules::Catalogue::embedded().expect("rules");
    let suites = Suites::load(None, &rules).expect("suites");
    let (_, c) = suites
        .checks()
        .find(|(_, c)| c.name == "run-as-non-root-refuses-uppercase-administrator")
        .expect("check");
    let win = node(Os::Windows, &row);
    let facts = CellFacts {
        kubernetes: row.k8s,
        from: Some(&win),
        to: None,
        placement: None,
        protocol: None,
        variant: None,
        network_mode: None,
        dsr: None,
        flannel: None,
        flannel_present: false,
        egress: true,
        dual_stack: Some(false),
        calico: false,
        gmsa: Some(false),
        policy_engine: None,
        cni_delegate: Err("not read".into()),
        feature_gates: None,
    };
    let why = expectation::expectation(c, &facts).expect_err("indeterminate");
    assert!(why.contains("patch"), "{why}");
}

/// Third review, row 16: a rule's level and its checks' results agree — a `recommendation` rule
/// never fails a cell as a requirement would, and a `requirement` rule never merely warns.
#[test]
fn a_rules_level_and_its_checks_results_agree() {
    use crate::catalogue::rules::Level;
    let rules = crate::catalogue::rules::Catalogue::embedded().expect("rules");
    let suites = Suites::load(None, &rules).expect("suites");
    let mut disagreements = Vec::new();
    for (suite, check) in suites.checks() {
        let Some(rule) = rules.iter().find(|r| r.id == check.rule) else {
            continue;
        };
        for e in &check.expect {
            let contradicts = match rule.level {
                Level::Requirement => e.result == Documented::Recommendation,
                Level::Recommendation => matches!(e.result, Documented::Requirement | Documented::Unsupported),
            };
            if contradicts {
                disagreements.push(format!(
                    "{}/{} ({}, {:?}): {:?}",
                    suite.name, check.name, rule.id, rule.level, e.result
                ));
            }
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}
