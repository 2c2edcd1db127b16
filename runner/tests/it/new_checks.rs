//! The checks of issue #22 part 4, end to end on the bundled cluster: a clean default run judges
//! each as documented, and another profile, topology or fault changes the verdict the way its
//! documentation says (pod-to-pod without NAT, KNM; port-forward, W14/W20/WDBG; the kubelet's
//! summary API, E2E/kubelet_stats; IPv6 on dual-stack and overlay clusters, K8SDS/W22/WNET;
//! Calico's Installation, CAL; termination messages, W14/WI31/KRUNTIME; Secret defaultMode,
//! W14/WSTO; mount propagation, WI31/KPODS; grace periods, W14/WI26; CSINode, W20/WSTO/KFG;
//! CNI CHECK, W14/WNET).

use std::collections::BTreeMap;

use rstest::rstest;
use serde_json::Value;

use crate::cli::{mixcheck, text};

/// How a run is set up: a built-in profile, the default cluster with its text edited, a fault.
enum Setup {
    Default,
    Profile(&'static str),
    /// The default topology with `(from, to)` replaced once.
    Edited(&'static str, &'static str),
    Fault(&'static str),
    /// A built-in profile with a fault injected.
    ProfileFault(&'static str, &'static str),
    /// A topology of `testdata/` with `(from, to)` replaced once (`from` empty: as it is).
    Testdata(&'static str, &'static str, &'static str),
}

/// Runs the checks of `rule` and returns each cell's id with its verdict, summary and remedy.
fn run(rule: &str, setup: &Setup) -> BTreeMap<String, (String, String, String)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = mixcheck(dir.path());
    cmd.args(["run", "--quiet", "--check", rule]);
    match setup {
        Setup::Default => {}
        Setup::Profile(p) => {
            cmd.args(["--profile", p]);
        }
        Setup::Edited(from, to) => {
            let default = concat!(env!("CARGO_MANIFEST_DIR"), "/../simcluster/topologies/default.yaml");
            let text = std::fs::read_to_string(default).expect("default topology");
            assert_eq!(text.matches(from).count(), 1, "{from:?} occurs once");
            let file = dir.path().join("topology.yaml");
            std::fs::write(&file, text.replacen(from, to, 1)).expect("write topology");
            cmd.arg("--topology").arg(&file);
        }
        Setup::Fault(f) => {
            cmd.args(["--fault", f]);
        }
        Setup::ProfileFault(p, f) => {
            cmd.args(["--profile", p, "--fault", f]);
        }
        Setup::Testdata(name, from, to) => {
            let path = format!("{}/../testdata/{name}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).expect("testdata topology");
            let text = if from.is_empty() {
                text
            } else {
                assert_eq!(text.matches(from).count(), 1, "{from:?} occurs once");
                text.replacen(from, to, 1)
            };
            let file = dir.path().join("topology.yaml");
            std::fs::write(&file, text).expect("write topology");
            cmd.arg("--topology").arg(&file);
        }
    }
    let out = cmd.output().expect("run mixcheck");
    let results = std::fs::read_to_string(dir.path().join("mixcheck-report/results.json"))
        .unwrap_or_else(|e| panic!("{rule}: no results.json ({e})\n{}", text(&out)));
    let report: Value = serde_json::from_str(&results).expect("results.json");
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    report["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                s(&c["id"]),
                (s(&c["verdict"]), s(&c["observed"]["summary"]), s(&c["remedy"])),
            )
        })
        .collect()
}

/// win2019-1's kernel line in the default topology, and the same with a pause image without wincat.
const WIN19: &str = "    kernelVersion: 10.0.17763.6414\n";
const WIN19_NO_WINCAT: &str =
    "    kernelVersion: 10.0.17763.6414\n    pauseImage: mcr.microsoft.com/k8s/core/pause:1.0.0\n";

/// win2022-1's kernel and runtime lines, and the same on containerd 1.6.
const WIN22: &str = "    kernelVersion: 10.0.20348.2762\n    containerRuntime: containerd://1.7.20\n";
/// win2022-1 with an HNS that takes more backends per Service than any documentation says.
const WIN22_MANY_BACKENDS: &str =
    "    kernelVersion: 10.0.20348.2762\n    containerRuntime: containerd://1.7.20\n    serviceBackendLimit: 2048\n";
const WIN22_CONTAINERD_16: &str = "    kernelVersion: 10.0.20348.2762\n    containerRuntime: containerd://1.6.28\n";

/// The dual-stack topology of `testdata/`, and its network mode line with the overlay one.
const DUAL_STACK: &str = "dual-stack.yaml";
const L2BRIDGE: &str = "  mode: l2bridge\n";
const OVERLAY: &str = "  mode: overlay\n";

#[rstest]
// KNM: the server sees the client pod's own address across nodes and OSes.
#[case::no_nat_default("NET-OUTBOUND-NAT-EXCEPTIONLIST", Setup::Default, &[
    ("[linux→windows-17763,other-node,tcp]", "pass", ""),
    ("[windows-17763→linux,other-node,tcp]", "pass", ""),
    ("[windows-20348→windows-17763,other-node,tcp]", "pass", ""),
])]
// W14, WDBG, MSK8S: without the cluster CIDR in the ExceptionList, l2bridge delivers the
// faulted node's pod traffic to other nodes SNATed to the node's address.
#[case::no_nat_exceptionlist("NET-OUTBOUND-NAT-EXCEPTIONLIST", Setup::Fault("win2019-1:exceptionlist-missing-cluster"), &[
    ("[windows-17763→linux,other-node,tcp]", "fail", "backend saw"),
    ("[windows-17763→windows-20348,other-node,tcp]", "fail", "backend saw"),
    ("[linux→windows-17763,other-node,tcp]", "pass", ""),
    ("[windows-20348→linux,other-node,tcp]", "pass", ""),
])]
// W20, WDBG: port-forward works on Linux and on Windows with a pause image carrying wincat.
// W20, WRES: the kubelet's --windows-priorityclass is a recommendation — a kubelet started
// without it is `warn` on its node only; the flag shows on the host (Win32_Process).
#[case::kubelet_priority_default("CPU-KUBELET-PRIORITY", Setup::Default, &[
    ("[windows-17763→]", "pass", "--windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS"),
    ("[windows-20348→]", "pass", "--windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS"),
])]
#[case::kubelet_priority_missing("CPU-KUBELET-PRIORITY", Setup::Edited(
    "10.0.20348.2762\n    containerRuntime: containerd://1.7.20\n    capacity: {cpu: \"4\", memory: 16Gi, pods: \"110\", ephemeral-storage: 128Gi}\n    taints:\n      - {key: os, value: windows, effect: NoSchedule}\n    kubelet: {systemReserved: {memory: 2Gi}}",
    "10.0.20348.2762\n    containerRuntime: containerd://1.7.20\n    capacity: {cpu: \"4\", memory: 16Gi, pods: \"110\", ephemeral-storage: 128Gi}\n    taints:\n      - {key: os, value: windows, effect: NoSchedule}\n    kubelet: {systemReserved: {memory: 2Gi}, windowsPriorityClass: \"\"}",
), &[
    ("[windows-17763→]", "pass", "ABOVE_NORMAL_PRIORITY_CLASS"),
    ("[windows-20348→]", "warn", "1 of 1 node: win2022-1: kubelet.exe runs without --windows-priorityclass"),
])]
// Before HostProcess pods (1.14, Docker) no in-cluster probe reads the kubelet's flags.
#[case::kubelet_priority_1_14("CPU-KUBELET-PRIORITY", Setup::Profile("k8s-1.14-ws2019-host-gw"), &[
    ("[windows-17763→]", "indeterminate", "HostProcess pods are not available"),
])]
// W14, WDBG: the pod network's HNS network, as the host lists it.
#[case::hns_network_default("NET-HNS-NETWORK-PRESENT", Setup::Default, &[
    ("[windows-17763→]", "pass", "HNS network of type L2Bridge"),
    ("[windows-20348→]", "pass", "HNS network of type L2Bridge"),
])]
// Azure CNI runs in bridge mode on Windows (Azure/azure-container-networking network_windows.go).
#[case::hns_network_aks("NET-HNS-NETWORK-PRESENT", Setup::Profile("aks"), &[
    ("[windows-20348→]", "pass", "HNS network of type L2Bridge"),
])]
#[case::hns_network_missing("NET-HNS-NETWORK-PRESENT", Setup::Fault("win2019-1:hns-network-missing"), &[
    ("[windows-17763→]", "fail", "Get-HnsNetwork lists nothing"),
    ("[windows-20348→]", "pass", "L2Bridge"),
])]
// WSTO, WI26: no file ownership on Windows; with .spec.os windows the API refuses fsGroup.
#[case::fsgroup_refused("STO-OWNERSHIP", Setup::Default, &[
    ("[windows-17763→]", "pass", "spec.securityContext.fsGroup: Forbidden: cannot be set for a windows pod"),
    ("[windows-20348→]", "pass", "spec.securityContext.fsGroup: Forbidden: cannot be set for a windows pod"),
])]
// W14, WNET: win-bridge and win-overlay lack CNI CHECK — informational (third documentation
// review §2: nothing observable depends on it, so it never fails a --strict gate).
#[case::cni_check_default("NET-CNI-SPEC-CHECK", Setup::Default, &[
    ("[windows-17763→]", "not-applicable", "flannel delegates to win-bridge"),
    ("[windows-20348→]", "not-applicable", "read: win2022-1: C:\\etc\\cni\\net.d\\10-flannel.conf: flannel delegates to win-bridge"),
])]
#[case::cni_check_vxlan("NET-CNI-SPEC-CHECK", Setup::Profile("kubeadm-flannel-hostprocess"), &[
    ("[windows-20348→]", "not-applicable", "informational only"),
])]
// W14, WI31: node-problem-detector is an optional add-on; the cell reads what reports on the
// node. AKS enables it on Linux nodes only (learn.microsoft.com/azure/aks/node-problem-detector).
// WGMSA: where the gMSA webhook is installed it refuses a credential spec that does not exist;
// without its CRD the cluster has no gMSA set-up and the cell says so.
#[case::gmsa_absent("SEC-GMSA", Setup::Default, &[
    ("[windows-17763→]", "not-applicable", "no API group windows.k8s.io in discovery"),
    ("[windows-20348→]", "not-applicable", "no API group windows.k8s.io in discovery"),
])]
#[case::gmsa_webhook("SEC-GMSA", Setup::Edited("timing:", "admission: {gmsaWebhook: true}\ntiming:"), &[
    ("[windows-17763→]", "pass", "cred spec mixcheck-no-such-credspec does not exist"),
    ("[windows-20348→]", "pass", "admission-webhook.windows-gmsa.sigs.k8s.io"),
])]
#[case::gmsa_absent_calico("SEC-GMSA", Setup::Profile("kubeadm-calico"), &[
    ("[windows-20348→]", "not-applicable", "gMSA is not set up"),
])]
// W14, WDBG: kube-proxy's source VIP lies in the node's pod subnet; a re-joined node that kept
// the old SourceVip.json fails, and only that node (the other of its pool passes).
#[case::source_vip_overlay("NET-FLANNEL-REJOIN", Setup::Profile("kubeadm-flannel-hostprocess"), &[
    ("[windows-20348→]", "pass", "in the node's pod CIDR"),
])]
#[case::source_vip_stale("NET-FLANNEL-REJOIN", Setup::ProfileFault("kubeadm-flannel-hostprocess", "win2022-2:flannel-rejoin-stale-sourcevip"), &[
    ("[windows-20348→]", "fail", "1 of 2 nodes: win2022-2: C:\\sourcevip\\sourceVip.json: source VIP 10.244.103.254 outside"),
])]
#[case::source_vip_l2bridge("NET-FLANNEL-REJOIN", Setup::Default, &[
    ("[windows-17763→]", "not-applicable", "only overlay"),
    ("[windows-20348→]", "not-applicable", "only overlay"),
])]
#[case::problem_detector_default("NODE-PROBLEM-DETECTOR", Setup::Default, &[
    ("[windows-17763→]", "not-applicable", "no condition beyond the kubelet's own"),
    ("[windows-20348→]", "not-applicable", "nor on any other node"),
])]
#[case::problem_detector_aks("NODE-PROBLEM-DETECTOR", Setup::Profile("aks"), &[
    ("[windows-20348→]", "not-applicable", "one reports on 2 other nodes (aks-nodepool1-31712345-vmss000000"),
])]
#[case::problem_detector_1_14("NODE-PROBLEM-DETECTOR", Setup::Profile("k8s-1.14-ws2019-vxlan"), &[
    ("[windows-17763→]", "not-applicable", "Linux-only"),
])]
#[case::cni_check_1_14("NET-CNI-SPEC-CHECK", Setup::Profile("k8s-1.14-ws2019-vxlan"), &[
    ("[windows-17763→]", "not-applicable", "informational only"),
])]
#[case::cni_check_aks("NET-CNI-SPEC-CHECK", Setup::Profile("aks"), &[
    ("[windows-20348→]", "not-applicable", "runs no flannel"),
])]
#[case::port_forward_default("NET-PORT-FORWARD", Setup::Default, &[
    ("[linux→]", "pass", "200 OK"),
    ("[windows-17763→]", "pass", "200 OK"),
    ("[windows-20348→]", "pass", "200 OK"),
])]
// W14 (HIST-1.14-PORTFWD): not supported on 1.14 Windows nodes.
#[case::port_forward_1_14("NET-PORT-FORWARD", Setup::Profile("k8s-1.14-ws2019-vxlan"), &[
    ("[linux→]", "pass", "200 OK"),
    ("[windows-17763→]", "known-limitation", "not supported"),
])]
// WDBG: "unable to do port forwarding: wincat not found" with a pause image built without it.
#[case::port_forward_no_wincat("NET-PORT-FORWARD", Setup::Edited(WIN19, WIN19_NO_WINCAT), &[
    ("[windows-17763→]", "fail", "wincat not found"),
    ("[windows-20348→]", "pass", "200 OK"),
])]
// E2E/kubelet_stats: the summary API answers for every node.
#[case::stats_default("NODE-STATS", Setup::Default, &[
    ("[linux→]", "pass", "answered"),
    ("[windows-17763→]", "pass", "answered"),
    ("[windows-20348→]", "pass", "answered"),
])]
// A stopped kubelet answers nothing: its node's cell is not judged as working.
#[case::stats_kubelet_stopped("NODE-STATS", Setup::Fault("win2022-1:kubelet-stopped"), &[
    ("[windows-17763→]", "pass", "answered"),
    ("[windows-20348→]", "error", "not Ready"),
])]
// S2 (the 1.9 guide): "curl the virtual service IP from the Linux master" works.
#[case::linux_host_default("HIST-1.9-VALIDATION", Setup::Default, &[
    ("[linux→windows-17763,other-node,tcp]", "pass", "reached"),
    ("[linux→windows-20348,other-node,tcp]", "pass", "reached"),
])]
// W14, WDBG: with MAC spoofing off on a Windows node's NIC, nothing from another node reaches
// its pods, through a ClusterIP neither.
#[case::linux_host_mac_spoofing("HIST-1.9-VALIDATION", Setup::Fault("win2022-1:mac-spoofing-disabled"), &[
    ("[linux→windows-17763,other-node,tcp]", "pass", "reached"),
    ("[linux→windows-20348,other-node,tcp]", "fail", "timeout"),
])]
// E2E/host_process: a HostProcess pod on containerd 1.7+ reaches the API server through the
// kubernetes Service.
#[case::hostprocess_default("SEC-HOSTPROCESS", Setup::Default, &[
    ("network-flows/SEC-HOSTPROCESS[windows-17763→api-server,tcp]", "pass", "10.96.0.1:443"),
    ("network-flows/SEC-HOSTPROCESS[windows-20348→api-server,tcp]", "pass", "10.96.0.1:443"),
])]
// WHPC23: no HostProcess pods before 1.23.
#[case::hostprocess_1_14("SEC-HOSTPROCESS", Setup::Profile("k8s-1.14-ws2019-vxlan"), &[
    ("network-flows/SEC-HOSTPROCESS[windows-17763→api-server,tcp]", "not-applicable", "1.23"),
])]
// The e2e test runs on containerd 1.7+: an older runtime's outcome is undocumented.
#[case::hostprocess_containerd_1_6("SEC-HOSTPROCESS", Setup::Edited(WIN22, WIN22_CONTAINERD_16), &[
    ("network-flows/SEC-HOSTPROCESS[windows-17763→api-server,tcp]", "pass", "10.96.0.1:443"),
    ("network-flows/SEC-HOSTPROCESS[windows-20348→api-server,tcp]", "indeterminate", ""),
])]
// WDBG "kube-proxy not running": no Service, the kubernetes one included, answers from the node.
#[case::hostprocess_kube_proxy_stopped("SEC-HOSTPROCESS", Setup::Fault("win2022-1:kube-proxy-stopped"), &[
    ("network-flows/SEC-HOSTPROCESS[windows-20348→api-server,tcp]", "fail", "timeout"),
])]
// K8SDS, W22, WNET: on a dual-stack l2bridge cluster pods reach pods by their IPv6 address,
// Windows pods included (Windows Server 2019 and 2022 here).
#[case::ipv6_dual_stack_l2bridge("NET-IPV6-DUALSTACK", Setup::Testdata(DUAL_STACK, "", ""), &[
    ("[linux→windows-17763,other-node,tcp,pod-ipv6-dual-stack]", "pass", "[fd00:10:244:2::"),
    ("[windows-17763→linux,other-node,tcp,pod-ipv6-dual-stack]", "pass", "reached"),
    ("[windows-20348→windows-17763,other-node,tcp,pod-ipv6-dual-stack]", "pass", "reached"),
    ("[windows-17763→windows-20348,other-node,tcp,pod-ipv6-dual-stack]", "pass", "reached"),
    // K8SDS: Windows is supported "with single-family services"; the fixture's
    // PreferDualStack Service with a Windows end is undocumented (third review, row 5).
    ("[windows-17763→linux,other-node,tcp,pod-to-cluster-ipv6]", "indeterminate", "single-family services"),
    ("[linux→windows-20348,other-node,tcp,pod-to-cluster-ipv6]", "indeterminate", "single-family services"),
])]
// The same cluster on l2bridge: the overlay limitation does not apply.
#[case::ipv6_overlay_on_l2bridge("NET-IPV6-OVERLAY", Setup::Testdata(DUAL_STACK, "", ""), &[
    ("[windows-20348→windows-17763,other-node,tcp]", "not-applicable", "overlay"),
])]
// WNET: "IPv6 communication between Windows pods connected to overlay networks" is unsupported.
// K8SDS: overlay networks on Windows do not support dual-stack — Windows pods there get no IPv6.
#[case::ipv6_overlay("NET-IPV6-OVERLAY", Setup::Testdata(DUAL_STACK, L2BRIDGE, OVERLAY), &[
    ("[windows-17763→windows-20348,other-node,tcp]", "known-limitation", "no IPv6 address"),
    ("[windows-20348→windows-17763,other-node,tcp]", "known-limitation", "no IPv6 address"),
])]
// On overlay, Windows ↔ Windows pod-to-pod by IPv6 is NET-IPV6-OVERLAY's; the Service flow
// between Windows pods is the same WNET limitation; Linux ↔ Windows is the dual-stack page's.
#[case::ipv6_dual_stack_on_overlay("NET-IPV6-DUALSTACK", Setup::Testdata(DUAL_STACK, L2BRIDGE, OVERLAY), &[
    ("[windows-20348→windows-17763,other-node,tcp,pod-ipv6-dual-stack]", "not-applicable", "NET-IPV6-OVERLAY"),
    // K8SDS: "Overlay (VXLAN) networks on Windows do not support dual-stack" (third review, row 8).
    ("[linux→windows-17763,other-node,tcp,pod-ipv6-dual-stack]", "known-limitation", "no IPv6 address"),
    ("[windows-20348→windows-17763,other-node,tcp,pod-to-cluster-ipv6]", "known-limitation", "no IPv6"),
])]
// A single-stack cluster: the IPv6 cells are not applicable, saying why.
#[case::ipv6_single_stack("NET-IPV6-DUALSTACK", Setup::Default, &[
    ("[linux→windows-17763,other-node,tcp,pod-ipv6-dual-stack]", "not-applicable", "single-stack (spec.podCIDRs of 4 nodes: IPv4 only)"),
    ("[windows-20348→windows-17763,other-node,tcp,pod-to-cluster-ipv6]", "not-applicable", "single-stack"),
])]
#[case::ipv6_overlay_single_stack("NET-IPV6-OVERLAY", Setup::Testdata("overlay-current.yaml", "", ""), &[
    ("[windows-20348→windows-17763,other-node,tcp]", "not-applicable", "single-stack"),
])]
// CAL, WT: the Installation of the kubeadm-calico profile (VXLAN, BGP off, IPv4 pool) is within
// Calico for Windows' limits.
#[case::calico_installation("NET-CALICO-WINDOWS", Setup::Profile("kubeadm-calico"), &[
    ("[windows-20348→]", "pass", "installation default"),
])]
// A cluster without Calico: not applicable.
#[case::calico_absent("NET-CALICO-WINDOWS", Setup::Default, &[
    ("[windows-17763→]", "not-applicable", "does not run Calico"),
    ("[windows-20348→]", "not-applicable", "does not run Calico"),
])]
// KRUNTIME, WI31: the kubelet reports what the container wrote to /dev/termination-log
// (C:\dev\termination-log) through a single-file mapping, which containerd makes on Windows.
#[case::termination_message_default("POD-TERMINATION-MESSAGE", Setup::Default, &[
    ("[linux→]", "pass", "termination message \"mixcheck-terminated"),
    ("[windows-17763→]", "pass", "termination message \"mixcheck-terminated"),
    ("[windows-20348→]", "pass", "termination message \"mixcheck-terminated"),
])]
// W14, WI31, WSTO: Docker on Windows maps no single file, so no message is reported.
#[case::termination_message_docker("POD-TERMINATION-MESSAGE", Setup::Profile("k8s-1.14-ws2019-vxlan"), &[
    ("[linux→]", "pass", "termination message \"mixcheck-terminated"),
    ("[windows-17763→]", "known-limitation", "no termination message reported"),
])]
// W14, WSTO ("DefaultMode (due to UID/GID dependency)" unsupported), WI31 (ACLs, not modes);
// Linux applies it (upstream's [LinuxOnly] conformance test).
#[case::default_mode_default("STO-DEFAULTMODE", Setup::Default, &[
    ("[linux→]", "pass", "mode=400"),
    ("[windows-17763→]", "known-limitation", "NT AUTHORITY\\SYSTEM"),
    ("[windows-20348→]", "known-limitation", "NT AUTHORITY\\SYSTEM"),
])]
#[case::default_mode_1_14("STO-DEFAULTMODE", Setup::Profile("k8s-1.14-ws2019-host-gw"), &[
    ("[linux→]", "pass", "mode=400"),
    ("[windows-17763→]", "known-limitation", "NT AUTHORITY\\SYSTEM"),
])]
// WGSG19: no Secret volumes on Windows before 1.14, so no defaultMode to judge.
#[case::default_mode_1_9("STO-DEFAULTMODE", Setup::Profile("k8s-1.9-ws1709"), &[
    ("[linux→]", "pass", "mode=400"),
    ("[windows-16299→]", "not-applicable", "before 1.14"),
])]
// WI31 "You cannot enable mountPropagation", KPODS translateMountPropagation: private on
// Windows, rslave (master:N) for HostToContainer on Linux.
#[case::mount_propagation_default("STO-MOUNTPROPAGATION", Setup::Default, &[
    ("[linux→]", "pass", "master:"),
    ("[windows-17763→]", "known-limitation", "hosts"),
    ("[windows-20348→]", "known-limitation", "hosts"),
])]
#[case::mount_propagation_1_14("STO-MOUNTPROPAGATION", Setup::Profile("k8s-1.14-ws2019-vxlan"), &[
    ("[linux→]", "pass", "master:"),
    ("[windows-17763→]", "known-limitation", "hosts"),
])]
// KFG: the MountPropagation gate is off before 1.10.
#[case::mount_propagation_1_9("STO-MOUNTPROPAGATION", Setup::Profile("k8s-1.9-ws1709"), &[
    ("[linux→]", "not-applicable", "alpha before 1.10"),
    ("[windows-16299→]", "known-limitation", "hosts"),
])]
// WI26 "TerminationGracePeriod: requires containerD": the process gets its 12 s on Linux and
// on containerd on Windows.
// The default cluster's clock runs twenty times as fast: the reading is of that clock (the
// API's latency, counted on it, adds a little).
#[case::grace_default("POD-TERMINATION-GRACE", Setup::Default, &[
    ("[linux→]", "pass", "on the bundled cluster's clock"),
    ("[windows-17763→]", "pass", "on the bundled cluster's clock"),
    ("[windows-20348→]", "pass", "on the bundled cluster's clock"),
])]
// W14: Docker on Windows sends CTRL_SHUTDOWN_EVENT and kills after 5 s.
#[case::grace_docker("POD-TERMINATION-GRACE", Setup::Profile("k8s-1.14-ws2019-host-gw"), &[
    ("[linux→]", "pass", "gone 8."),
    ("[windows-17763→]", "known-limitation", "stopped before its shutdown finished"),
])]
// KFG, WSTO: every kubelet of 1.17+ registers its CSINode; the default (kubeadm) cluster
// installs no CSI driver.
#[case::csi_default("STO-CSI", Setup::Default, &[
    ("[linux→]", "pass", "lists no CSI driver"),
    ("[windows-17763→]", "pass", "lists no CSI driver"),
    ("[windows-20348→]", "pass", "lists no CSI driver"),
])]
// AKS installs the Azure Disk and Azure Files CSI drivers on Windows node pools too.
#[case::csi_aks("STO-CSI", Setup::Profile("aks"), &[
    ("[windows-20348→]", "pass", "disk.csi.azure.com, file.csi.azure.com"),
])]
// W20, WSTO, KFG: no CSINode before 1.17, no CSI on Windows before csi-proxy (1.19 beta).
#[case::csi_1_14("STO-CSI", Setup::Profile("k8s-1.14-ws2019-vxlan"), &[
    ("[linux→]", "not-applicable", "GA from 1.17"),
    ("[windows-17763→]", "not-applicable", "GA from 1.17"),
])]
// WNET, WNETo, KPWIN: a Service of 1,025 hand-written backends gets no HNS load balancer on
// either Windows node while its one-backend control does; a node whose HNS takes more (a
// limit raised past the documentation's) serves it: better than documented, on that node only.
#[case::backend_limit_default("NET-SVC-BACKEND-LIMIT", Setup::Default, &[
    ("[windows-17763→]", "known-limitation", "no HNS load balancer for backends-over"),
    ("[windows-20348→]", "known-limitation", "1025 backends) while its one-backend control backends-control"),
])]
#[case::backend_limit_raised("NET-SVC-BACKEND-LIMIT", Setup::Edited(WIN22, WIN22_MANY_BACKENDS), &[
    ("[windows-17763→]", "known-limitation", "no HNS load balancer"),
    ("[windows-20348→]", "better-than-documented", "with all 1025 backends"),
])]
#[case::backend_limit_aks("NET-SVC-BACKEND-LIMIT", Setup::Profile("aks"), &[
    ("[windows-20348→]", "known-limitation", "no HNS load balancer for backends-over"),
])]
// W20, WNET, KPWIN, HCNLB: on AKS (DSR by default; hns.v2.psm1 lists v2 load balancers) the
// ingress address of a preserve-destination LoadBalancer carries PreserveDIP.
#[case::preserve_aks("NET-PRESERVE-DEST", Setup::Profile("aks"), &[
    ("[windows-20348→]", "pass", "port-mapping flags 12 (PreserveDIP)"),
])]
#[case::preserve_default("NET-PRESERVE-DEST", Setup::Default, &[
    ("[windows-17763→]", "not-applicable", "DSR"),
    ("[windows-20348→]", "not-applicable", "DSR"),
])]
// DSR on; the in-box module's v1 policy lists hide port-mapping flags, but the ingress load
// balancer serves the node's own backend only (node-to-node forwarding off, W20, WNET).
#[case::preserve_calico("NET-PRESERVE-DEST", Setup::Profile("kubeadm-calico"), &[
    ("[windows-20348→]", "pass", "the node's own only"),
])]
// GKEDPV2: Dataplane V2 runs no kube-proxy, whose annotation this is.
#[case::preserve_dataplane_v2("NET-PRESERVE-DEST", Setup::Profile("gke-dpv2"), &[
    ("[windows-20348→]", "not-applicable", "kube-proxy is not used"),
])]
#[case::preserve_1_14("NET-PRESERVE-DEST", Setup::Profile("k8s-1.14-ws2019-vxlan"), &[
    ("[windows-17763→]", "not-applicable", "from Kubernetes 1.20"),
])]
// WGSG15, WGSG19 (the second review's rows): the seed-era bundled clusters fail Secrets the
// documented way — neither form on 1.5 with Windows Server 2016, volumes on 1.9 with 1709.
#[case::secrets_1_5("POD-LIFECYCLE-BASICS", Setup::Profile("k8s-1.5-ws2016"), &[
    ("[windows-14393→,secret-as-env-var]", "known-limitation", ""),
    ("[windows-14393→,secret-as-volume]", "known-limitation", ""),
])]
#[case::secrets_1_9("POD-LIFECYCLE-BASICS", Setup::Profile("k8s-1.9-ws1709"), &[
    ("[windows-16299→,secret-as-env-var]", "pass", ""),
    ("[windows-16299→,secret-as-volume]", "known-limitation", ""),
])]
// KPWIN, SDNHNS: each Windows node's HNS load balancers and endpoints match the API's
// Services and EndpointSlices; with kube-proxy stopped on one node, that node holds none and
// fails naming the Services it lacks, the other still passes.
#[case::hns_matches_api_default("NET-HNS-MATCHES-API", Setup::Default, &[
    ("[windows-17763→]", "pass", "match the API's"),
    ("[windows-20348→]", "pass", "match the API's"),
])]
#[case::hns_matches_api_aks("NET-HNS-MATCHES-API", Setup::Profile("aks"), &[
    ("[windows-20348→]", "pass", "match the API's"),
])]
#[case::hns_matches_api_kube_proxy_stopped("NET-HNS-MATCHES-API", Setup::Fault("win2022-1:kube-proxy-stopped"), &[
    ("[windows-17763→]", "pass", "match the API's"),
    ("[windows-20348→]", "fail", "no load balancer for Service kube-system/kube-dns (10.96.0.10)"),
])]
fn each_new_check_is_judged_as_documented(
    #[case] rule: &str,
    #[case] setup: Setup,
    #[case] want: &[(&str, &str, &str)],
) {
    let cells = run(rule, &setup);
    for (coordinates, verdict, says) in want {
        let found = cells.iter().find(|(id, _)| id.ends_with(coordinates));
        let Some((id, (v, summary, remedy))) = found else {
            panic!(
                "{rule}: no cell {coordinates} among {:#?}",
                cells.keys().collect::<Vec<_>>()
            )
        };
        assert_eq!(v, verdict, "{id}: {v} ({summary})");
        assert!(summary.contains(says), "{id}: {summary:?} says {says:?}");
        if v == "fail" {
            assert!(!remedy.is_empty(), "{id}: a failing cell gives the remedy");
        }
    }
}

/// The remedy of a port-forward refused for want of wincat names the pause images that carry it.
#[test]
fn a_pause_image_without_wincat_gets_the_documented_remedy() {
    let cells = run("NET-PORT-FORWARD", &Setup::Edited(WIN19, WIN19_NO_WINCAT));
    let (_, (_, _, remedy)) = cells
        .iter()
        .find(|(id, _)| id.ends_with("[windows-17763→]"))
        .expect("the windows-17763 cell");
    assert!(remedy.contains("wincat") && remedy.contains("pause:1.4.1"), "{remedy}");
}

/// A clean run of the dual-stack topology (K8SDS; W22, WNET for Windows on l2bridge) exits 0 with
/// no `fail` or `error`, and records the dual-stack fact with its source.
#[test]
fn a_clean_dual_stack_run_passes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topology = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/dual-stack.yaml");
    let out = mixcheck(dir.path())
        .args(["run", "--quiet", "--topology", topology])
        .output()
        .expect("run mixcheck");
    let results = std::fs::read_to_string(dir.path().join("mixcheck-report/results.json"))
        .unwrap_or_else(|e| panic!("no results.json ({e})\n{}", text(&out)));
    let report: Value = serde_json::from_str(&results).expect("results.json");
    let bad: Vec<String> = report["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| matches!(c["verdict"].as_str(), Some("fail" | "error")))
        .map(|c| format!("{} {}: {}", c["id"], c["verdict"], c["observed"]["summary"]))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(report["facts"]["dual_stack"]["value"], true);
    let source = report["facts"]["dual_stack"]["source"].as_str().unwrap_or_default();
    assert!(
        source.contains("spec.podCIDRs") && source.contains("fd00:10:244"),
        "{source}"
    );
}
