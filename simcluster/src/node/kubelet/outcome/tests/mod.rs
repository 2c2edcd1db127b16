//! Tests of the pod plan: admission, sandbox, pulls and starts, as truth tables by rule; API
//! validation; bad input. The process model is tested in [`process_model`], node faults acting
//! on the sandbox in [`sandbox_faults`].

use std::net::Ipv4Addr;

use rstest::rstest;
use serde_json::json;

use super::*;
use crate::config::topology::Topology;
use crate::store::pod_validation::windows_api_violations;

mod process_model;
mod sandbox_faults;

const SC2016: &str = "mcr.microsoft.com/windows/servercore:ltsc2016";
const SC1709: &str = "mcr.microsoft.com/windows/servercore:1709";
const SC2019: &str = "mcr.microsoft.com/windows/servercore:ltsc2019";
const SC2022: &str = "mcr.microsoft.com/windows/servercore:ltsc2022";
const SC2025: &str = "mcr.microsoft.com/windows/servercore:ltsc2025";
const NANO2022: &str = "mcr.microsoft.com/windows/nanoserver:ltsc2022";
const SINGLE2019: &str = "mcr.microsoft.com/windows/servercore:10.0.17763.6414";
const SINGLE2022: &str = "mcr.microsoft.com/windows/servercore:10.0.20348.2762";
const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.52";
const AGNHOST53: &str = "registry.k8s.io/e2e-test-images/agnhost:2.53";
const IIS1709: &str = "microsoft/iis:windowsservercore-1709";
const LINUX_ONLY: &str = "nginx:1.27";
const UNKNOWN: &str = "example.com/team/app:1.0";
const CORE_PAUSE: &str = "mcr.microsoft.com/k8s/core/pause:1.0.0";
const HCS_START: &str = "hcs::CreateComputeSystem <containerId>: The container operating system does not match the host operating system.: unknown";
const NO_MATCH: &str = "no match for platform in manifest: not found";

fn node(os: &str, build: u32, k8s: &str, runtime: &str, hyperv: bool, pause: Option<&str>) -> NodeProfile {
    let kernel = if os == "windows" {
        format!("    kernelVersion: \"10.0.{build}.1\"\n")
    } else {
        String::new()
    };
    let pause = pause.map(|p| format!("    pauseImage: \"{p}\"\n")).unwrap_or_default();
    let yaml = format!(
        "name: t\nkubernetesVersion: v{k8s}.0\nnodes:\n  - name: node-1\n    os: {os}\n{kernel}    containerRuntime: \"{runtime}\"\n    hyperv: {hyperv}\n{pause}"
    );
    let topo = Topology::parse(&yaml, "test").expect("topology");
    NodeProfile::new(&topo.nodes[0], &topo, 0, Ipv4Addr::LOCALHOST)
}

/// A Kubernetes 1.32 Windows node on containerd 1.7.
fn win(build: u32) -> NodeProfile {
    node("windows", build, "1.32", "containerd://1.7.20", false, None)
}

fn win_k8s(build: u32, k8s: &str, runtime: &str) -> NodeProfile {
    let pause = (runtime.starts_with("docker") && build == 17763).then_some(CORE_PAUSE);
    node("windows", build, k8s, runtime, false, pause)
}

fn hyperv(build: u32, offered: bool, runtime: &str) -> NodeProfile {
    node("windows", build, "1.32", runtime, offered, None)
}

fn win_pause(build: u32, runtime: &str, k8s: &str, pause: &str) -> NodeProfile {
    node("windows", build, k8s, runtime, false, Some(pause))
}

fn linux() -> NodeProfile {
    node("linux", 0, "1.32", "containerd://1.7.22", false, None)
}

fn linux_k8s(k8s: &str) -> NodeProfile {
    node("linux", 0, k8s, "containerd://1.7.22", false, None)
}

fn with_spec(spec: Value) -> Value {
    json!({"metadata": {"name": "app", "namespace": "web", "uid": "u-1"}, "spec": spec})
}

fn pod(image: &str) -> Value {
    with_spec(json!({"containers": [{"name": "app", "image": image}]}))
}

fn hp_pod(image: &str) -> Value {
    with_spec(json!({
        "hostNetwork": true,
        "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
        "containers": [{"name": "app", "image": image}],
    }))
}

fn os_pod(os: &str, image: &str) -> Value {
    with_spec(json!({"os": {"name": os}, "containers": [{"name": "app", "image": image}]}))
}

fn label_pod(os: &str, image: &str) -> Value {
    json!({
        "metadata": {"name": "app", "namespace": "web", "uid": "u-1", "labels": {"kubernetes.io/os": os}},
        "spec": {"containers": [{"name": "app", "image": image}]},
    })
}

fn two_pod(image: &str) -> Value {
    with_spec(json!({"containers": [{"name": "a", "image": image}, {"name": "b", "image": image}]}))
}

fn mixed_hp_pod(image: &str) -> Value {
    with_spec(json!({
        "hostNetwork": true,
        "containers": [
            {"name": "a", "image": image, "securityContext": {"windowsOptions": {"hostProcess": true}}},
            {"name": "b", "image": image},
        ],
    }))
}

fn hp_no_net_pod(image: &str) -> Value {
    with_spec(json!({
        "securityContext": {"windowsOptions": {"hostProcess": true}},
        "containers": [{"name": "app", "image": image}],
    }))
}

fn emptydir_pod(image: &str) -> Value {
    with_spec(json!({
        "volumes": [{"name": "scratch", "emptyDir": {}}, {"name": "cache", "emptyDir": {"medium": "Memory"}}],
        "containers": [{"name": "app", "image": image}],
    }))
}

fn hostnet_pod(image: &str) -> Value {
    with_spec(json!({"hostNetwork": true, "containers": [{"name": "app", "image": image}]}))
}

/// A hostPath volume of `kind` (File, Directory) mounted into the container.
fn file_mount_pod(image: &str, kind: &str) -> Value {
    with_spec(json!({
        "volumes": [{"name": "v", "hostPath": {"path": "C:\\data\\x", "type": kind}}],
        "containers": [{"name": "app", "image": image, "volumeMounts": [{"name": "v", "mountPath": "C:\\x"}]}],
    }))
}

fn nonroot_pod(image: &str) -> Value {
    with_spec(json!({"securityContext": {"runAsNonRoot": true}, "containers": [{"name": "app", "image": image}]}))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rejected,
    Sandbox,
    Pull,
    Config,
    Start,
    Runs,
}

/// The verdict kind, its text and rule (of the first failing container for a pod that
/// proceeds).
fn classify(v: &PodFate) -> (Kind, String, &'static str) {
    match v {
        PodFate::Rejected { reason, message, rule } => (Kind::Rejected, format!("{reason}: {message}"), rule),
        PodFate::SandboxFails { message, rule } => (Kind::Sandbox, message.clone(), rule),
        PodFate::Proceed(plan) => {
            for c in plan.init_containers.iter().chain(&plan.containers) {
                match &c.outcome {
                    ContainerOutcome::PullFails { message, rule } => return (Kind::Pull, message.clone(), rule),
                    ContainerOutcome::ConfigError { message, rule } => {
                        return (Kind::Config, message.clone(), rule);
                    }
                    ContainerOutcome::StartFails { message, rule } => return (Kind::Start, message.clone(), rule),
                    ContainerOutcome::Runs { .. } => {}
                }
            }
            (Kind::Runs, String::new(), "")
        }
    }
}

fn verdict(node: &NodeProfile, pod: &Value, handler: Option<&str>) -> PodFate {
    plan(node, pod, &Catalogue::builtin(), handler)
}

fn proceed(v: PodFate) -> PodPlan {
    match v {
        PodFate::Proceed(p) => p,
        other => panic!("expected the pod to proceed, got {other:?}"),
    }
}

/// The process `container` runs as the only container of a pod on `node`.
fn process(node: &NodeProfile, container: Value) -> Process {
    let mut c = container;
    c["name"] = json!("app");
    let p = proceed(verdict(node, &with_spec(json!({"containers": [c]})), None));
    match &p.containers[0].outcome {
        ContainerOutcome::Runs { process } => process.clone(),
        other => panic!("expected the container to run: {other:?}"),
    }
}

const HV: Option<&str> = Some(HYPERV_HANDLER);

/// The acceptance matrix: OS × Windows build × image × isolation × Kubernetes version.
#[rstest]
// Process isolation, Kubernetes 1.32, containerd 1.7 (VER-BUILD-MATCH through pull).
#[case::ver_build_match_2019_image_on_2019_host(win(17763), pod(SC2019), None, Kind::Runs, "", "")]
#[case::ver_build_match_2019_image_on_2022_host(win(20348), pod(SC2019), None, Kind::Pull, NO_MATCH, "VER-BUILD-MATCH")]
#[case::ver_build_match_2019_image_on_2025_host(win(26100), pod(SC2019), None, Kind::Pull, NO_MATCH, "VER-BUILD-MATCH")]
#[case::ver_build_match_2022_image_on_2019_host(win(17763), pod(SC2022), None, Kind::Pull, NO_MATCH, "VER-BUILD-MATCH")]
#[case::ver_build_match_2022_image_on_2022_host(win(20348), pod(SC2022), None, Kind::Runs, "", "")]
#[case::ver_build_match_2022_image_on_2025_host(win(26100), pod(SC2022), None, Kind::Runs, "", "")]
#[case::ver_build_match_2025_image_on_2022_host(win(20348), pod(SC2025), None, Kind::Pull, NO_MATCH, "VER-BUILD-MATCH")]
#[case::ver_build_match_2025_image_on_2025_host(win(26100), pod(SC2025), None, Kind::Runs, "", "")]
#[case::ver_build_match_1709_image_on_2019_host(win(17763), pod(SC1709), None, Kind::Pull, NO_MATCH, "VER-BUILD-MATCH")]
#[case::ver_build_match_2016_image_on_2019_host(win(17763), pod(SC2016), None, Kind::Pull, NO_MATCH, "VER-BUILD-MATCH")]
#[case::ver_build_match_pull_names_the_full_reference(
    win(20348),
    pod(SC2019),
    None,
    Kind::Pull,
    "rpc error: code = NotFound desc = failed to pull and unpack image \"mcr.microsoft.com/windows/servercore:ltsc2019\": no match for platform in manifest: not found",
    "VER-BUILD-MATCH"
)]
#[case::agnhost_on_2019(win(17763), pod(AGNHOST), None, Kind::Runs, "", "")]
#[case::agnhost_on_2022(win(20348), pod(AGNHOST), None, Kind::Runs, "", "")]
#[case::agnhost_2_52_on_2025_through_the_2022_entry(win(26100), pod(AGNHOST), None, Kind::Runs, "", "")]
// agnhost publishes no 2025 variant (AGN): 2.53 too runs there only through its 2022 entry.
#[case::agnhost_2_53_on_2025_through_the_2022_entry(win(26100), pod(AGNHOST53), None, Kind::Runs, "", "")]
// A tag MCR never published fails to pull on any host, as the registry answers (MCRBLOG: Nano
// Server's 2019 tag is 1809, there is no nanoserver:ltsc2019).
#[case::unpublished_tag_on_2019(
    win(17763),
    pod("mcr.microsoft.com/windows/nanoserver:ltsc2019"),
    None,
    Kind::Pull,
    "rpc error: code = NotFound desc = failed to pull and unpack image \"mcr.microsoft.com/windows/nanoserver:ltsc2019\": failed to resolve reference \"mcr.microsoft.com/windows/nanoserver:ltsc2019\": mcr.microsoft.com/windows/nanoserver:ltsc2019: not found",
    "VER-BUILD-MATCH"
)]
#[case::published_1809_on_2019(
    win(17763),
    pod("mcr.microsoft.com/windows/nanoserver:1809"),
    None,
    Kind::Runs,
    "",
    ""
)]
#[case::agnhost_on_linux(linux(), pod(AGNHOST), None, Kind::Runs, "", "")]
// The OS itself differs.
#[case::sched_nodeselector_linux_image_on_2019(
    win(17763),
    pod(LINUX_ONLY),
    None,
    Kind::Pull,
    NO_MATCH,
    "SCHED-NODESELECTOR"
)]
#[case::sched_nodeselector_linux_image_on_2022(
    win(20348),
    pod(LINUX_ONLY),
    None,
    Kind::Pull,
    NO_MATCH,
    "SCHED-NODESELECTOR"
)]
#[case::sched_nodeselector_linux_image_on_2025(
    win(26100),
    pod(LINUX_ONLY),
    None,
    Kind::Pull,
    NO_MATCH,
    "SCHED-NODESELECTOR"
)]
#[case::sched_nodeselector_linux_image_names_docker_hub(
    win(20348),
    pod(LINUX_ONLY),
    None,
    Kind::Pull,
    "\"docker.io/library/nginx:1.27\"",
    "SCHED-NODESELECTOR"
)]
#[case::sched_nodeselector_unknown_image_on_windows(
    win(20348),
    pod(UNKNOWN),
    None,
    Kind::Pull,
    NO_MATCH,
    "SCHED-NODESELECTOR"
)]
#[case::unknown_image_on_linux(linux(), pod(UNKNOWN), None, Kind::Runs, "", "")]
#[case::linux_image_on_linux(linux(), pod(LINUX_ONLY), None, Kind::Runs, "", "")]
#[case::sched_nodeselector_windows_image_on_linux(
    linux(),
    pod(SC2022),
    None,
    Kind::Pull,
    NO_MATCH,
    "SCHED-NODESELECTOR"
)]
// Single manifests: pulled as is, refused by HCS at start.
#[case::ver_build_match_single_manifest_2019_on_2022(
    win(20348),
    pod(SINGLE2019),
    None,
    Kind::Start,
    HCS_START,
    "VER-BUILD-MATCH"
)]
#[case::ver_build_match_single_manifest_2019_on_2025(
    win(26100),
    pod(SINGLE2019),
    None,
    Kind::Start,
    HCS_START,
    "VER-BUILD-MATCH"
)]
#[case::single_manifest_2019_on_2019(win(17763), pod(SINGLE2019), None, Kind::Runs, "", "")]
#[case::single_manifest_2022_on_2025(win(26100), pod(SINGLE2022), None, Kind::Runs, "", "")]
#[case::ver_build_match_single_manifest_2022_on_2019(
    win(17763),
    pod(SINGLE2022),
    None,
    Kind::Start,
    HCS_START,
    "VER-BUILD-MATCH"
)]
#[case::sched_nodeselector_single_windows_manifest_on_linux(
    linux(),
    pod(SINGLE2019),
    None,
    Kind::Start,
    "exec format error",
    "SCHED-NODESELECTOR"
)]
// HostProcess pods (SEC-HOSTPROCESS, VER-HOSTPROCESS-IMAGE-EXEMPT).
#[case::ver_hostprocess_image_exempt_2019_image_on_2022(win(20348), hp_pod(SC2019), None, Kind::Runs, "", "")]
#[case::ver_hostprocess_image_exempt_2025_image_on_2019(win(17763), hp_pod(SC2025), None, Kind::Runs, "", "")]
#[case::ver_hostprocess_single_manifest_on_2022(win(20348), hp_pod(SINGLE2019), None, Kind::Runs, "", "")]
#[case::ver_hostprocess_k8s_1_25_containerd_1_6(
    win_k8s(20348, "1.25", "containerd://1.6.28"),
    hp_pod(SC2019),
    None,
    Kind::Runs,
    "",
    ""
)]
#[case::ver_hostprocess_unsupported_containerd_1_5_not_exempt(
    win_k8s(20348, "1.23", "containerd://1.5.13"),
    hp_pod(SC2019),
    None,
    Kind::Pull,
    NO_MATCH,
    "VER-BUILD-MATCH"
)]
#[case::ver_hostprocess_unsupported_k8s_1_14_docker_becomes_host_network_pod(
    win_k8s(17763, "1.14", "docker://18.9.1"),
    hp_pod(SC2022),
    None,
    Kind::Sandbox,
    "Error response from daemon: network host not found",
    "NET-HOSTNETWORK"
)]
#[case::sec_hostprocess_mixed_containers(
    win(20348),
    mixed_hp_pod(SC2022),
    None,
    Kind::Rejected,
    "Pod was rejected: pod must not contain both HostProcess and non-HostProcess containers",
    "SEC-HOSTPROCESS"
)]
#[case::sec_hostprocess_needs_host_network(
    win(20348),
    hp_no_net_pod(SC2022),
    None,
    Kind::Sandbox,
    "Failed to generate sandbox config for pod \"app_web(u-1)\": hostNetwork is required if Pod contains HostProcess containers",
    "SEC-HOSTPROCESS"
)]
// Hyper-V isolation (VER-HYPERV).
#[case::ver_hyperv_2019_image_on_2022_host(
    hyperv(20348, true, "containerd://1.7.20"),
    pod(SC2019),
    HV,
    Kind::Runs,
    "",
    ""
)]
#[case::ver_hyperv_2022_image_on_2025_host(
    hyperv(26100, true, "containerd://2.0.5"),
    pod(SC2022),
    HV,
    Kind::Runs,
    "",
    ""
)]
#[case::ver_hyperv_single_manifest_2019_on_2022(
    hyperv(20348, true, "containerd://1.7.20"),
    pod(SINGLE2019),
    HV,
    Kind::Runs,
    "",
    ""
)]
#[case::ver_hyperv_newer_image_than_host(
    hyperv(20348, true, "containerd://1.7.20"),
    pod(SC2025),
    HV,
    Kind::Pull,
    NO_MATCH,
    "VER-BUILD-MATCH"
)]
#[case::ver_hyperv_requested_not_offered(
    hyperv(20348, false, "containerd://1.7.20"),
    pod(SC2019),
    HV,
    Kind::Sandbox,
    "failed to get sandbox runtime: no runtime for \"runhcs-wcow-hypervisor\" is configured",
    "VER-HYPERV"
)]
#[case::ver_hyperv_requested_containerd_1_6(
    hyperv(20348, true, "containerd://1.6.28"),
    pod(SC2022),
    HV,
    Kind::Sandbox,
    "no runtime for \"runhcs-wcow-hypervisor\" is configured",
    "VER-HYPERV"
)]
#[case::ver_hyperv_requested_k8s_1_14_docker(
    win_k8s(17763, "1.14", "docker://18.9.1"),
    pod(SC2019),
    HV,
    Kind::Sandbox,
    "RuntimeHandler \"runhcs-wcow-hypervisor\" not supported",
    "VER-HYPERV"
)]
#[case::ver_hyperv_requested_on_linux(linux(), pod(LINUX_ONLY), HV, Kind::Sandbox, "no runtime for", "VER-HYPERV")]
#[case::sched_runtimeclass_unknown_handler(
    linux(),
    pod(LINUX_ONLY),
    Some("runsc"),
    Kind::Sandbox,
    "no runtime for \"runsc\"",
    "SCHED-RUNTIMECLASS"
)]
#[case::process_handler_named(win(20348), pod(SC2022), Some(PROCESS_HANDLER), Kind::Runs, "", "")]
#[case::process_isolation_without_handler_2019_on_2022(
    hyperv(20348, true, "containerd://1.7.20"),
    pod(SC2019),
    None,
    Kind::Pull,
    NO_MATCH,
    "VER-BUILD-MATCH"
)]
// Kubernetes versions and runtimes.
#[case::k8s_1_14_docker_2019_image(win_k8s(17763, "1.14", "docker://18.9.1"), pod(SC2019), None, Kind::Runs, "", "")]
#[case::k8s_1_14_docker_2022_image(
    win_k8s(17763, "1.14", "docker://18.9.1"),
    pod(SC2022),
    None,
    Kind::Pull,
    "rpc error: code = Unknown desc = Error response from daemon: no matching manifest for windows/amd64 10.0.17763 in the manifest list entries",
    "VER-BUILD-MATCH"
)]
#[case::k8s_1_14_docker_linux_image(
    win_k8s(17763, "1.14", "docker://18.9.1"),
    pod(LINUX_ONLY),
    None,
    Kind::Pull,
    "no matching manifest for windows/amd64 10.0.17763",
    "SCHED-NODESELECTOR"
)]
#[case::k8s_1_23_docker_single_manifest_on_2022(
    win_k8s(20348, "1.23", "docker://20.10.9"),
    pod(SINGLE2019),
    None,
    Kind::Start,
    "Error response from daemon: hcsshim::CreateComputeSystem <containerId>: The container operating system does not match the host operating system.",
    "VER-BUILD-MATCH"
)]
#[case::k8s_1_9_docker_17_single_manifest_on_1709(
    win_pause(16299, "docker://17.6.2", "1.9", "kubeletwin/pause:latest"),
    pod(SINGLE2019),
    None,
    Kind::Start,
    "The operating system of the container does not match the operating system of the host. (0xc0370101)",
    "VER-BUILD-MATCH"
)]
#[case::k8s_1_9_iis_1709(
    win_pause(16299, "docker://17.6.2", "1.9", "kubeletwin/pause:latest"),
    pod(IIS1709),
    None,
    Kind::Runs,
    "",
    ""
)]
#[case::k8s_1_23_containerd_1_6_on_2022(
    win_k8s(20348, "1.23", "containerd://1.6.8"),
    pod(SC2022),
    None,
    Kind::Runs,
    "",
    ""
)]
#[case::k8s_1_25_2022_image_on_2019(
    win_k8s(17763, "1.25", "containerd://1.6.8"),
    pod(SC2022),
    None,
    Kind::Pull,
    NO_MATCH,
    "VER-BUILD-MATCH"
)]
// Kubelet admission (SCHED-POD-OS).
#[case::sched_pod_os_windows_pod_on_linux(
    linux(),
    os_pod("windows", SC2022),
    None,
    Kind::Rejected,
    "PodOSNotSupported: Pod was rejected: Failed to admit pod as the OS field doesn't match node OS",
    "SCHED-POD-OS"
)]
#[case::sched_pod_os_linux_pod_on_windows_1_25(
    win_k8s(20348, "1.25", "containerd://1.6.8"),
    os_pod("linux", LINUX_ONLY),
    None,
    Kind::Rejected,
    "PodOSNotSupported",
    "SCHED-POD-OS"
)]
#[case::sched_pod_os_field_ignored_by_kubelet_1_23(
    linux_k8s("1.23"),
    os_pod("windows", SC2022),
    None,
    Kind::Pull,
    NO_MATCH,
    "SCHED-NODESELECTOR"
)]
#[case::sched_pod_os_matching(win(20348), os_pod("windows", SC2022), None, Kind::Runs, "", "")]
#[case::sched_pod_os_label_mismatch(
    win(20348),
    label_pod("linux", SC2022),
    None,
    Kind::Rejected,
    "PodOSSelectorNodeLabelDoesNotMatch: Pod was rejected: Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    "SCHED-POD-OS"
)]
#[case::sched_pod_os_label_ignored_by_kubelet_1_14(
    win_k8s(17763, "1.14", "docker://18.9.1"),
    label_pod("linux", SC2019),
    None,
    Kind::Runs,
    "",
    ""
)]
// Pause images (VER-PAUSE-IMAGE).
#[case::ver_pause_image_1709_pause_on_2022(
    win_pause(20348, "containerd://1.7.20", "1.32", "kubeletwin/pause:latest"),
    pod(SC2022),
    None,
    Kind::Sandbox,
    "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start sandbox container for pod \"app\":",
    "VER-PAUSE-IMAGE"
)]
#[case::ver_pause_image_2019_pause_on_2022(
    win_pause(20348, "containerd://1.7.20", "1.32", CORE_PAUSE),
    pod(SC2022),
    None,
    Kind::Sandbox,
    "The container operating system does not match the host operating system. (0xc0370101)",
    "VER-PAUSE-IMAGE"
)]
#[case::ver_pause_image_docker_wording(
    win_pause(20348, "docker://20.10.9", "1.23", CORE_PAUSE),
    pod(SC2022),
    None,
    Kind::Sandbox,
    "failure in a Windows system call: The container operating system does not match the host operating system. (0xc0370101)",
    "VER-PAUSE-IMAGE"
)]
#[case::ver_pause_image_windows_pause_on_linux(
    node("linux", 0, "1.32", "containerd://1.7.22", false, Some(CORE_PAUSE)),
    pod(LINUX_ONLY),
    None,
    Kind::Sandbox,
    "failed to get sandbox image \"mcr.microsoft.com/k8s/core/pause:1.0.0\"",
    "VER-PAUSE-IMAGE"
)]
#[case::ver_pause_image_3_6_on_2025(
    win_pause(26100, "containerd://1.7.20", "1.32", "registry.k8s.io/pause:3.6"),
    pod(SC2025),
    None,
    Kind::Runs,
    "",
    ""
)]
#[case::ver_pause_image_3_10_on_2025_hyperv(
    hyperv(26100, true, "containerd://2.0.5"),
    pod(SC2019),
    HV,
    Kind::Runs,
    "",
    ""
)]
#[case::ver_pause_image_hostprocess_exempt(
    win_pause(20348, "containerd://1.7.20", "1.32", "kubeletwin/pause:latest"),
    hp_pod(SC2022),
    None,
    Kind::Runs,
    "",
    ""
)]
// Windows Server 2016: the containers of a pod start; only localhost between them fails
// (POD-MULTI-CONTAINER; S4, S0 — no document says the kubelet rejects the pod).
#[case::pod_multi_container_ws2016(
    win_pause(14393, "docker://1.12.2-cs2-ws-beta", "1.5", "apprenda/pause:latest"),
    two_pod(SC2016),
    None,
    Kind::Runs,
    "",
    ""
)]
#[case::pod_multi_container_ws2016_single(
    win_pause(14393, "docker://1.12.2-cs2-ws-beta", "1.5", "apprenda/pause:latest"),
    pod(SC2016),
    None,
    Kind::Runs,
    "",
    ""
)]
#[case::pod_multi_container_ws2019(win(17763), two_pod(SC2019), None, Kind::Runs, "", "")]
// Storage, network, security.
#[case::sto_emptydir_memory_windows(
    win(20348),
    emptydir_pod(SC2022),
    None,
    Kind::Sandbox,
    "MountVolume.SetUp failed for volume \"cache\" : ",
    "STO-EMPTYDIR-MEMORY"
)]
#[case::sto_emptydir_memory_linux(linux(), emptydir_pod(LINUX_ONLY), None, Kind::Runs, "", "")]
#[case::net_hostnetwork_dockershim(
    win_k8s(17763, "1.14", "docker://18.9.1"),
    hostnet_pod(SC2019),
    None,
    Kind::Sandbox,
    "Error response from daemon: network host not found",
    "NET-HOSTNETWORK"
)]
#[case::net_hostnetwork_containerd_ignored(win(20348), hostnet_pod(SC2022), None, Kind::Runs, "", "")]
#[case::sec_runasnonroot_admin_servercore(
    win(20348),
    nonroot_pod(SC2022),
    None,
    Kind::Config,
    "container's runAsUserName (ContainerAdministrator) which will be regarded as root identity and will break non-root policy (pod: \"app_web(u-1)\", container: app)",
    "SEC-RUNASNONROOT-ADMIN"
)]
#[case::sec_runasnonroot_nanoserver(win(20348), nonroot_pod(NANO2022), None, Kind::Runs, "", "")]
#[case::sto_single_file_docker(
    win_k8s(17763, "1.14", "docker://18.9.1"),
    file_mount_pod(SC2019, "File"),
    None,
    Kind::Start,
    "source path must be a directory",
    "STO-SINGLE-FILE-MOUNT"
)]
#[case::sto_single_file_containerd(win(20348), file_mount_pod(SC2022, "File"), None, Kind::Runs, "", "")]
#[case::sto_directory_docker(
    win_k8s(17763, "1.14", "docker://18.9.1"),
    file_mount_pod(SC2019, "Directory"),
    None,
    Kind::Runs,
    "",
    ""
)]
#[case::sec_runasnonroot_linux_not_windows_rule(linux(), nonroot_pod(LINUX_ONLY), None, Kind::Runs, "", "")]
#[case::sec_runasnonroot_pull_failure_first(
    win(17763),
    nonroot_pod(SC2022),
    None,
    Kind::Pull,
    NO_MATCH,
    "VER-BUILD-MATCH"
)]
fn matrix(
    #[case] node: NodeProfile,
    #[case] pod: Value,
    #[case] handler: Option<&str>,
    #[case] kind: Kind,
    #[case] needle: &str,
    #[case] rule: &str,
) {
    let v = verdict(&node, &pod, handler);
    let (k, text, r) = classify(&v);
    assert_eq!(k, kind, "{v:?}");
    assert!(text.contains(needle), "{text:?} does not contain {needle:?}");
    assert_eq!(r, rule, "{v:?}");
}

#[test]
fn rejection_messages_and_event_reasons() {
    let v = verdict(&linux(), &os_pod("windows", SC2022), None);
    assert_eq!(v.event_reason(), Some("PodOSNotSupported"));
    assert_eq!(v.rule(), Some("SCHED-POD-OS"));
    match v {
        PodFate::Rejected { message, .. } => {
            assert_eq!(
                message,
                "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS"
            );
        }
        other => panic!("{other:?}"),
    }
    let mount = verdict(&win(20348), &emptydir_pod(SC2022), None);
    assert_eq!(mount.event_reason(), Some("FailedMount"));
    let sandbox = verdict(&hyperv(20348, false, "containerd://1.7.20"), &pod(SC2022), HV);
    assert_eq!(sandbox.event_reason(), Some("FailedCreatePodSandBox"));
    assert_eq!(verdict(&linux(), &pod(LINUX_ONLY), None).event_reason(), None);
}

#[rstest]
#[case::hyperv_offered(hyperv(20348, true, "containerd://1.7.20"), HV, Isolation::HyperV)]
#[case::no_handler(hyperv(20348, true, "containerd://1.7.20"), None, Isolation::Process)]
#[case::process_handler(win(20348), Some(PROCESS_HANDLER), Isolation::Process)]
fn isolation(#[case] node: NodeProfile, #[case] handler: Option<&str>, #[case] expected: Isolation) {
    assert_eq!(proceed(verdict(&node, &pod(SC2019), handler)).isolation, expected);
}

#[rstest]
#[case::linux_honoured(linux(), hostnet_pod(LINUX_ONLY), true, false)]
#[case::linux_default(linux(), pod(LINUX_ONLY), false, false)]
#[case::windows_ignored_with_containerd(win(20348), hostnet_pod(SC2022), false, false)]
#[case::windows_hostprocess(win(20348), hp_pod(SC2022), true, true)]
#[case::hostprocess_unsupported(win_k8s(20348, "1.23", "containerd://1.5.13"), hp_pod(SC2022), false, false)]
fn effective_host_network_and_host_process(
    #[case] node: NodeProfile,
    #[case] pod: Value,
    #[case] host_network: bool,
    #[case] host_process: bool,
) {
    let p = proceed(verdict(&node, &pod, None));
    assert_eq!(p.host_network, host_network);
    assert_eq!(p.host_process, host_process);
}

#[test]
fn hostprocess_unsupported_is_logged() {
    let p = proceed(verdict(
        &win_k8s(20348, "1.23", "containerd://1.5.13"),
        &hp_pod(SC2022),
        None,
    ));
    assert!(
        p.kubelet_log
            .iter()
            .any(|l| l.contains("HostProcess containers are not supported on this node")),
        "{:?}",
        p.kubelet_log
    );
    let p = proceed(verdict(&win(20348), &hostnet_pod(SC2022), None));
    assert!(
        p.kubelet_log.iter().any(|l| l.contains("hostNetwork is ignored")),
        "{:?}",
        p.kubelet_log
    );
}

/// SEC-RUNASUSERNAME: container > pod > image default > ContainerAdministrator.
#[rstest]
#[case::image_default_admin(SC2022, None, None, "ContainerAdministrator")]
#[case::image_default_user(NANO2022, None, None, "ContainerUser")]
#[case::e2e_nonroot("registry.k8s.io/e2e-test-images/nonroot:1.4", None, None, "ContainerUser")]
#[case::pod_level(SC2022, Some("ContainerUser"), None, "ContainerUser")]
#[case::container_overrides_pod(
    NANO2022,
    Some("ContainerUser"),
    Some("ContainerAdministrator"),
    "ContainerAdministrator"
)]
#[case::container_level(NANO2022, None, Some("DOMAIN\\svc"), "DOMAIN\\svc")]
#[case::hostprocess_base(
    "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0",
    None,
    None,
    "ContainerAdministrator"
)]
fn effective_user(
    #[case] image: &str,
    #[case] pod_user: Option<&str>,
    #[case] container_user: Option<&str>,
    #[case] expected: &str,
) {
    let mut spec = json!({"containers": [{"name": "app", "image": image}]});
    if let Some(u) = pod_user {
        spec["securityContext"] = json!({"windowsOptions": {"runAsUserName": u}});
    }
    if let Some(u) = container_user {
        spec["containers"][0]["securityContext"] = json!({"windowsOptions": {"runAsUserName": u}});
    }
    let p = proceed(verdict(&win(20348), &with_spec(spec), None));
    assert_eq!(p.containers[0].user.as_deref(), Some(expected));
    // Linux containers have no Windows user.
    let l = proceed(verdict(&linux(), &pod(LINUX_ONLY), None));
    assert_eq!(l.containers[0].user, None);
}

/// SEC-RUNASUSERNAME-INVALID (E2E/security_context, WRUN): a well-formed runAsUserName that
/// names no account must not run. Pod level on containerd ≥ 1.6 (kubelet ≥ 1.22 passes it to
/// the sandbox): FailedCreatePodSandBox with `The user name or password is incorrect.`;
/// container level, Docker and older containerd: the container's start fails (StartError).
#[rstest]
#[case::pod_level_containerd_17(win(20348), Some("FooLish"), None, Kind::Sandbox)]
#[case::pod_level_containerd_16(win_k8s(17763, "1.26", "containerd://1.6.24"), Some("FooLish"), None, Kind::Sandbox)]
#[case::pod_level_containerd_15(win_k8s(17763, "1.21", "containerd://1.5.9"), Some("FooLish"), None, Kind::Start)]
#[case::pod_level_docker(win_k8s(17763, "1.20", "docker://19.3.14"), Some("FooLish"), None, Kind::Start)]
#[case::container_level(win(20348), Some("ContainerUser"), Some("FooLish"), Kind::Start)]
#[case::domain_account(win(17763), None, Some("CONTOSO\\svc-app"), Kind::Start)]
#[case::container_user(win(20348), Some("ContainerUser"), None, Kind::Runs)]
#[case::user_manager_admin(win(20348), None, Some("User Manager\\ContainerAdministrator"), Kind::Runs)]
#[case::network_service(win(20348), Some("NT AUTHORITY\\NETWORK SERVICE"), None, Kind::Runs)]
fn unknown_run_as_user_name_does_not_run(
    #[case] node: NodeProfile,
    #[case] pod_user: Option<&str>,
    #[case] container_user: Option<&str>,
    #[case] expected: Kind,
) {
    let image = if node.build == Some(20348) { NANO2022 } else { SC2019 };
    let mut spec = json!({"containers": [{"name": "app", "image": image}]});
    if let Some(u) = pod_user {
        spec["securityContext"] = json!({"windowsOptions": {"runAsUserName": u}});
    }
    if let Some(u) = container_user {
        spec["containers"][0]["securityContext"] = json!({"windowsOptions": {"runAsUserName": u}});
    }
    let (kind, text, rule) = classify(&verdict(&node, &with_spec(spec), None));
    assert_eq!(kind, expected, "{text}");
    if expected != Kind::Runs {
        assert!(text.contains("The user name or password is incorrect."), "{text}");
        assert_eq!(rule, "SEC-RUNASUSERNAME-INVALID");
    }
    if expected == Kind::Sandbox {
        assert!(text.starts_with("Failed to create pod sandbox: "), "{text}");
    }
}

#[test]
fn windows_accounts_of_a_container() {
    for ok in [
        "ContainerUser",
        "containeradministrator",
        "NT AUTHORITY\\SYSTEM",
        "nt authority\\local service",
    ] {
        assert!(windows_account_exists(ok, None), "{ok}");
    }
    for bad in [
        "FooLish",
        "NT AUTHORITY\\FooLish",
        "CONTOSO\\ContainerUser",
        "User Manager\\SYSTEM",
    ] {
        assert!(!windows_account_exists(bad, None), "{bad}");
    }
    assert!(windows_account_exists("app", Some("app")));
}

/// STO-EMPTYDIR-DISK / STO-READONLY-VOLUME (W14, E2E/volumes): a main process's
/// redirections are recorded as file writes (the kubelet places them by mount); one into a
/// readOnly mount fails the way the shell reports it and writes nothing.
#[rstest]
#[case::sh(false, json!(["/bin/sh", "-c", "echo a > /rw/f.txt; echo b >> /rw/f.txt"]), 0, &[("/rw/f.txt", "a\n", false), ("/rw/f.txt", "b\n", true)], None)]
#[case::cmd(true, json!(["cmd", "/c", "echo seeded-by-init> C:\\rw\\seed.txt"]), 0, &[("C:\\rw\\seed.txt", "seeded-by-init\r\n", false)], None)]
#[case::discarded(false, json!(["/bin/sh", "-c", "echo a > /dev/null"]), 0, &[], None)]
#[case::read_only_sh(false, json!(["/bin/sh", "-c", "echo a > /ro/f.txt"]), 1, &[], Some("sh: can't create /ro/f.txt: Read-only file system"))]
#[case::read_only_cmd(true, json!(["cmd", "/c", "echo a> C:\\ro\\f.txt"]), 1, &[], Some("Access is denied."))]
fn redirections_become_file_writes(
    #[case] windows: bool,
    #[case] command: Value,
    #[case] code: i32,
    #[case] writes: &[(&str, &str, bool)],
    #[case] log: Option<&str>,
) {
    let (node, image, rw, ro) = if windows {
        (win(20348), NANO2022, "C:\\rw", "C:\\ro")
    } else {
        (linux(), AGNHOST, "/rw", "/ro")
    };
    let spec = json!({
        "restartPolicy": "Never",
        "volumes": [{"name": "d", "emptyDir": {}}],
        "containers": [{"name": "app", "image": image, "command": command, "volumeMounts": [
            {"name": "d", "mountPath": rw}, {"name": "d", "mountPath": ro, "readOnly": true}]}],
    });
    let p = proceed(verdict(&node, &with_spec(spec), None));
    let c = &p.containers[0];
    match &c.outcome {
        ContainerOutcome::Runs {
            process: Process::Exits { code: got, log: l, .. },
        } => {
            assert_eq!(*got, code);
            assert_eq!(l.first().map(String::as_str), log);
        }
        other => panic!("{other:?}"),
    }
    let got: Vec<(&str, String, bool)> = c
        .writes
        .iter()
        .map(|w| (w.path.as_str(), String::from_utf8_lossy(&w.data).into_owned(), w.append))
        .collect();
    let want: Vec<(&str, String, bool)> = writes.iter().map(|(p, d, a)| (*p, d.to_string(), *a)).collect();
    assert_eq!(got, want);
}

/// SEC-RUNASNONROOT-ADMIN: any case of ContainerAdministrator, from any level.
#[rstest]
#[case::upper_case_container(NANO2022, json!({"runAsNonRoot": true, "windowsOptions": {"runAsUserName": "CONTAINERADMINISTRATOR"}}), json!(null), Some("(CONTAINERADMINISTRATOR)"))]
#[case::pod_non_root_container_admin(NANO2022, json!({"windowsOptions": {"runAsUserName": "ContainerAdministrator"}}), json!({"runAsNonRoot": true}), Some("(ContainerAdministrator)"))]
#[case::container_user_fine(SC2022, json!({"runAsNonRoot": true, "windowsOptions": {"runAsUserName": "ContainerUser"}}), json!(null), None)]
#[case::non_root_false(SC2022, json!({"runAsNonRoot": false}), json!({"runAsNonRoot": true}), None)]
fn run_as_non_root(
    #[case] image: &str,
    #[case] container_sc: Value,
    #[case] pod_sc: Value,
    #[case] expected: Option<&str>,
) {
    let mut spec = json!({"containers": [{"name": "app", "image": image, "securityContext": container_sc}]});
    if !pod_sc.is_null() {
        spec["securityContext"] = pod_sc;
    }
    let (kind, text, rule) = classify(&verdict(&win(20348), &with_spec(spec), None));
    match expected {
        Some(needle) => {
            assert_eq!(kind, Kind::Config);
            assert!(text.contains(needle), "{text}");
            assert!(text.contains("which will be regarded as root identity and will break non-root policy"));
            assert_eq!(rule, "SEC-RUNASNONROOT-ADMIN");
        }
        None => assert_eq!(kind, Kind::Runs, "{text}"),
    }
}

#[test]
fn linux_only_fields_are_logged_and_privileged_warned() {
    let spec = json!({
        "securityContext": {"runAsUser": 999, "runAsGroup": 999, "seLinuxOptions": {"level": "s0:c123,c456"}, "fsGroup": 2000},
        "hostPID": true,
        "containers": [{"name": "app", "image": SC2022, "securityContext": {
            "runAsUser": 1000, "privileged": true, "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}}}],
    });
    let p = proceed(verdict(&win(20348), &with_spec(spec.clone()), None));
    let log = p.kubelet_log.join("\n");
    for needle in [
        "\"Windows container does not support SecurityContext.RunAsUser, please use SecurityContext.WindowsOptions\" pod=\"web/app\" containerName=\"app\"",
        "Windows pod does not support PodSecurityContext.RunAsGroup",
        "Windows pod does not support PodSecurityContext.SELinuxOptions",
        "Windows pod does not support PodSecurityContext.FSGroup",
        "Windows pod does not support HostPID",
        "SecurityContext.ReadOnlyRootFilesystem, ignoring it",
        "SecurityContext.Capabilities, ignoring it",
        "SecurityContext.Privileged, ignoring it",
    ] {
        assert!(log.contains(needle), "missing {needle:?} in\n{log}");
    }
    assert_eq!(p.warning_events.len(), 1);
    assert_eq!(p.warning_events[0].0, "PrivilegedNotSupported");
    assert!(
        p.warning_events[0]
            .1
            .contains("Windows does not support privileged mode")
    );
    assert!(matches!(p.containers[0].outcome, ContainerOutcome::Runs { .. }));
    // Linux nodes honour the fields: nothing logged.
    let mut linux_spec = spec;
    linux_spec["containers"][0]["image"] = json!(LINUX_ONLY);
    let l = proceed(verdict(&linux(), &with_spec(linux_spec), None));
    assert!(l.kubelet_log.is_empty() && l.warning_events.is_empty());
}

#[test]
fn init_containers_come_first() {
    let spec = json!({
        "initContainers": [{"name": "init", "image": SC2022, "command": ["cmd", "/c", "echo init"]}],
        "containers": [{"name": "app", "image": SC2019}],
    });
    let p = proceed(verdict(&win(20348), &with_spec(spec), None));
    assert_eq!(p.init_containers.len(), 1);
    assert_eq!(p.init_containers[0].name, "init");
    assert_eq!(
        p.init_containers[0].outcome,
        ContainerOutcome::Runs {
            process: Process::Exits {
                code: 0,
                after_ms: 0,
                log: vec!["init".into()]
            }
        }
    );
    assert!(matches!(p.containers[0].outcome, ContainerOutcome::PullFails { .. }));
}

#[test]
fn extra_images_change_outcomes() {
    let extra = vec![crate::config::topology::ImageSpec {
        name: "example.com/team/app:1.0".into(),
        platforms: vec![ImagePlatform {
            os: Os::Linux,
            arch: "amd64".into(),
            build: None,
        }],
        manifest_list: false,
        user: None,
        long_running: true,
    }];
    let c = Catalogue::with_extra(&extra);
    let (kind, text, rule) = classify(&plan(&win(20348), &pod(UNKNOWN), &c, None));
    assert_eq!(kind, Kind::Start);
    assert!(
        text.contains("image operating system \"linux\" cannot be used on this platform"),
        "{text}"
    );
    assert_eq!(rule, "SCHED-NODESELECTOR");
}

// -----------------------------------------------------------------------------------------
// API validation (SEC-OS-FIELD-VALIDATION, SEC-HOSTPROCESS).

fn win_spec(extra: Value) -> Value {
    let mut spec = json!({"os": {"name": "windows"}, "containers": [{"name": "app", "image": SC2022}]});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            s.insert(k.clone(), v.clone());
        }
    }
    spec
}

#[rstest]
#[case::run_as_user(json!({"securityContext": {"runAsUser": 1000}}), "spec.securityContext.runAsUser")]
#[case::run_as_group(json!({"securityContext": {"runAsGroup": 1000}}), "spec.securityContext.runAsGroup")]
#[case::se_linux(json!({"securityContext": {"seLinuxOptions": {"level": "s0"}}}), "spec.securityContext.seLinuxOptions")]
#[case::seccomp(json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}), "spec.securityContext.seccompProfile")]
#[case::fs_group(json!({"securityContext": {"fsGroup": 2000}}), "spec.securityContext.fsGroup")]
#[case::fs_group_change_policy(json!({"securityContext": {"fsGroupChangePolicy": "Always"}}), "spec.securityContext.fsGroupChangePolicy")]
#[case::sysctls(json!({"securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]}}), "spec.securityContext.sysctls")]
#[case::supplemental_groups(json!({"securityContext": {"supplementalGroups": [1]}}), "spec.securityContext.supplementalGroups")]
#[case::host_pid(json!({"hostPID": true}), "spec.hostPID")]
#[case::host_ipc(json!({"hostIPC": true}), "spec.hostIPC")]
#[case::share_process_namespace(json!({"shareProcessNamespace": false}), "spec.shareProcessNamespace")]
fn pod_level_linux_fields(#[case] extra: Value, #[case] field: &str) {
    let spec = win_spec(extra);
    // SEC-OS-FIELD-VALIDATION (WI26, WI31): rejected from 1.24, when IdentifyPodOS went
    // beta and on by default — not only from its GA in 1.25.
    for version in [(1, 24), (1, 25)] {
        let causes = windows_api_violations(&spec, version);
        assert_eq!(causes.len(), 1, "{version:?}: {causes:?}");
        assert_eq!(causes[0].field, field);
        assert_eq!(causes[0].reason, "FieldValueForbidden");
        assert_eq!(causes[0].message, "Forbidden: cannot be set for a windows pod");
    }
    // Before 1.24 (IdentifyPodOS alpha, off by default) the API server does not check them.
    assert!(windows_api_violations(&spec, (1, 23)).is_empty());
    // Without spec.os they are accepted (and ignored by the kubelet).
    let mut no_os = spec.clone();
    if let Some(o) = no_os.as_object_mut() {
        o.remove("os");
    }
    assert!(windows_api_violations(&no_os, (1, 32)).is_empty());
}

#[rstest]
#[case::se_linux("seLinuxOptions", json!({"level": "s0"}))]
#[case::seccomp("seccompProfile", json!({"type": "RuntimeDefault"}))]
#[case::capabilities("capabilities", json!({"drop": ["ALL"]}))]
#[case::read_only_root("readOnlyRootFilesystem", json!(true))]
#[case::privileged("privileged", json!(false))]
#[case::allow_privilege_escalation("allowPrivilegeEscalation", json!(false))]
#[case::proc_mount("procMount", json!("Default"))]
#[case::run_as_user("runAsUser", json!(1000))]
#[case::run_as_group("runAsGroup", json!(1000))]
fn container_linux_fields(#[case] field: &str, #[case] value: Value) {
    let mut spec = win_spec(json!({}));
    spec["initContainers"] = json!([{"name": "init", "image": SC2022, "securityContext": {field: value.clone()}}]);
    spec["containers"][0]["securityContext"] =
        json!({field: value, "runAsNonRoot": true, "windowsOptions": {"runAsUserName": "ContainerUser"}});
    let causes = windows_api_violations(&spec, (1, 32));
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            format!("spec.initContainers[0].securityContext.{field}"),
            format!("spec.containers[0].securityContext.{field}"),
        ]
    );
    assert!(
        causes
            .iter()
            .all(|c| c.message == "Forbidden: cannot be set for a windows pod")
    );
    assert_eq!(
        windows_api_violations(&spec, (1, 24)).len(),
        2,
        "SEC-OS-FIELD-VALIDATION from 1.24"
    );
    assert!(windows_api_violations(&spec, (1, 23)).is_empty());
}

#[test]
fn windows_fields_are_fine_and_versions_gate_new_fields() {
    let ok = win_spec(
        json!({"securityContext": {"runAsNonRoot": true, "windowsOptions": {"runAsUserName": "ContainerUser"}}, "hostPID": false}),
    );
    assert!(windows_api_violations(&ok, (1, 32)).is_empty());
    let apparmor = win_spec(json!({"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}}));
    assert!(windows_api_violations(&apparmor, (1, 29)).is_empty());
    assert_eq!(windows_api_violations(&apparmor, (1, 30)).len(), 1);
    let linux = json!({"os": {"name": "linux"}, "securityContext": {"windowsOptions": {"runAsUserName": "x"}},
        "containers": [{"name": "a", "image": "busybox", "securityContext": {"windowsOptions": {"hostProcess": false}}}]});
    let causes = windows_api_violations(&linux, (1, 25));
    assert_eq!(causes.len(), 2, "{causes:?}");
    assert_eq!(causes[0].field, "spec.securityContext.windowsOptions");
    assert_eq!(
        causes[0].message,
        "Forbidden: windows options cannot be set for a linux pod"
    );
    assert_eq!(causes[1].field, "spec.containers[0].securityContext.windowsOptions");
}

#[test]
fn hostprocess_api_rules() {
    // Mixed HostProcess and normal containers, without hostNetwork.
    let mixed = json!({"containers": [
        {"name": "a", "image": SC2022, "securityContext": {"windowsOptions": {"hostProcess": true}}},
        {"name": "b", "image": SC2022},
    ]});
    let causes = windows_api_violations(&mixed, (1, 26));
    let rendered: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
    assert_eq!(
        rendered,
        vec![
            "spec: Invalid value: \"\": If pod contains any hostProcess containers then all containers must be HostProcess containers".to_string(),
            "spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers".to_string(),
        ]
    );
    // Pod-level and container-level values differ.
    let differ = json!({"hostNetwork": true, "securityContext": {"windowsOptions": {"hostProcess": true}},
        "containers": [{"name": "a", "image": SC2022, "securityContext": {"windowsOptions": {"hostProcess": false}}}]});
    let causes = windows_api_violations(&differ, (1, 26));
    assert_eq!(
        causes[0].field,
        "spec.containers[0].securityContext.windowsOptions.hostProcess"
    );
    assert_eq!(
        causes[0].message,
        "Invalid value: false: pod hostProcess value must be identical if both are specified, was true"
    );
    // A valid HostProcess pod.
    let good = json!({"hostNetwork": true, "securityContext": {"windowsOptions": {"hostProcess": true}},
        "containers": [{"name": "a", "image": SC2022}]});
    assert!(windows_api_violations(&good, (1, 26)).is_empty());
    // Before 1.23 the field is not validated.
    assert!(windows_api_violations(&mixed, (1, 22)).is_empty());
}

// -----------------------------------------------------------------------------------------
// Robustness.

#[rstest]
#[case(json!(null))]
#[case(json!({}))]
#[case(json!({"spec": null}))]
#[case(json!({"spec": {"containers": "x"}}))]
#[case(json!({"spec": {"containers": [null, 1, {"image": 5}, {"name": "a", "image": ""}]}}))]
#[case(json!({"metadata": {"labels": {"kubernetes.io/os": 3}}, "spec": {"os": {"name": 1}, "containers": [{"name": "a", "image": "busybox", "command": [1, null], "args": "x"}]}}))]
#[case(json!({"spec": {"containers": [{"name": "a", "image": "busybox", "resources": {"limits": {"memory": "-5Gi"}}, "command": ["stress", "--vm", "99999999999999999999999", "--vm-bytes", "99999999999999999999999999999G"]}]}}))]
#[case(json!({"spec": {"volumes": [{"emptyDir": {"medium": "Memory"}}], "containers": [{"name": "a", "image": SC2022}]}}))]
fn garbage_pods_do_not_panic(#[case] pod: Value) {
    for node in [linux(), win(20348), win(14393)] {
        let _ = plan(&node, &pod, &Catalogue::builtin(), Some(""));
        let _ = plan(&node, &pod, &Catalogue::builtin(), HV);
        let _ = windows_api_violations(&pod, (1, 32));
        if let Some(spec) = pod.get("spec") {
            let _ = windows_api_violations(spec, (1, 32));
        }
    }
}

#[rstest]
#[case("")]
#[case("'")]
#[case("\"")]
#[case("$")]
#[case("${")]
#[case("%")]
#[case("%%")]
#[case(">")]
#[case("2>")]
#[case("echo ${unterminated")]
#[case("((((((((((")]
#[case("}}}}")]
#[case("exit 99999999999999999999")]
#[case("sleep 1e400")]
#[case("sleep -5")]
#[case("ping -n 99999999999999999999 127.0.0.1")]
#[case("sh -c 'sh -c \"sh -c \\\"sh -c sh -c sh -c sh -c sh -c sh -c sh -c echo deep\\\"\"'")]
#[case("ünïcødé ëcho ∞")]
#[case("echo `")]
#[case("timeout")]
#[case("printf")]
#[case("agnhost logs-generator 99999999999 1h")]
fn garbage_scripts_do_not_panic(#[case] script: &str) {
    for (node, image) in [(linux(), "busybox"), (win(20348), SC2022)] {
        for command in [
            json!(["sh", "-c", script]),
            json!(["cmd", "/c", script]),
            json!(["powershell", "-c", script]),
            json!([script]),
        ] {
            let _ = process(&node, json!({"image": image, "command": command}));
        }
    }
}

#[test]
fn container_ids_are_stable_hex() {
    let id = container_id("u-1", "app");
    assert_eq!(id.len(), 64);
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(id, container_id("u-1", "app"));
    assert_ne!(id, container_id("u-1", "other"));
}
