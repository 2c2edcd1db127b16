//! Tests of the node faults acting on the pod sandbox: a pause image of another build, flannel's
//! missing subnet.env or a waiting flanneld, a missing HNS network, and the faults that leave
//! the sandbox alone.

use rstest::rstest;

use super::*;

fn faulty(mut node: NodeProfile, faults: &[Fault]) -> NodeProfile {
    node.faults.extend(faults.iter().copied());
    node
}

fn overlay(mut node: NodeProfile) -> NodeProfile {
    node.network_mode = crate::config::platform::NetworkMode::Overlay;
    node
}

const PAUSE_HCS: &str = "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start sandbox container for pod \"app\": hcs::CreateComputeSystem <sandbox>: The container operating system does not match the host operating system. (0xc0370101)";
const PAUSE_DOCKER: &str = "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start sandbox container for pod \"app\": Error response from daemon: container <sandbox> encountered an error during CreateContainer: failure in a Windows system call: The container operating system does not match the host operating system. (0xc0370101)";
const SUBNET_ENV: &str = "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox \"<sandbox>\": plugin type=\"flannel\" name=\"cbr0\" failed (add): loadFlannelSubnetEnv failed: open C:\\run\\flannel\\subnet.env: The system cannot find the file specified.";
const SUBNET_ENV_DOCKER: &str = "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to set up sandbox container \"<sandbox>\" network for pod \"app\": networkPlugin cni failed to set up pod \"app_web\" network: open C:\\run\\flannel\\subnet.env: The system cannot find the file specified.";
const HNS: &str = "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox \"<sandbox>\": plugin type=\"flannel\" name=\"cbr0\" failed (add): failed to delegate add: error while GETHNSNewtorkByName(cbr0): Network cbr0 not found";
const HNS_OVERLAY: &str = "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox \"<sandbox>\": plugin type=\"flannel\" name=\"vxlan0\" failed (add): failed to delegate add: error while GETHNSNewtorkByName(vxlan0): Network vxlan0 not found";
const HNS_DOCKER: &str = "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to set up sandbox container \"<sandbox>\" network for pod \"app\": networkPlugin cni failed to set up pod \"app_web\" network: error while GETHNSNewtorkByName(cbr0): Network cbr0 not found";

#[rstest]
// PauseImageWrongBuild (VER-PAUSE-IMAGE): the sandbox image is for another build.
#[case::pause_wrong_build_2022(
    faulty(win(20348), &[Fault::PauseImageWrongBuild]),
    pod(SC2022),
    None,
    Kind::Sandbox,
    PAUSE_HCS,
    "VER-PAUSE-IMAGE"
)]
#[case::pause_wrong_build_2019(
    faulty(win(17763), &[Fault::PauseImageWrongBuild]),
    pod(SC2019),
    None,
    Kind::Sandbox,
    PAUSE_HCS,
    "VER-PAUSE-IMAGE"
)]
#[case::pause_wrong_build_docker(
    faulty(win_k8s(17763, "1.14", "docker://18.9.1"), &[Fault::PauseImageWrongBuild]),
    pod(SC2019),
    None,
    Kind::Sandbox,
    PAUSE_DOCKER,
    "VER-PAUSE-IMAGE"
)]
#[case::pause_wrong_build_hostprocess_exempt(
    faulty(win(20348), &[Fault::PauseImageWrongBuild]),
    hp_pod(SC2022),
    None,
    Kind::Runs,
    "",
    ""
)]
#[case::pause_wrong_build_hyperv_runs_the_older_build(
    faulty(hyperv(26100, true, "containerd://2.0.5"), &[Fault::PauseImageWrongBuild]),
    pod(SC2019),
    HV,
    Kind::Runs,
    "",
    ""
)]
#[case::pause_right_build(win(20348), pod(SC2022), None, Kind::Runs, "", "")]
// FlannelSubnetEnvMissing, FlanneldWaiting (NET-FLANNEL-SUBNET-ENV).
#[case::subnet_env_missing(
    faulty(win(20348), &[Fault::FlannelSubnetEnvMissing]),
    pod(SC2022),
    None,
    Kind::Sandbox,
    SUBNET_ENV,
    "NET-FLANNEL-SUBNET-ENV"
)]
#[case::flanneld_waiting(
    faulty(win(17763), &[Fault::FlanneldWaiting]),
    pod(SC2019),
    None,
    Kind::Sandbox,
    SUBNET_ENV,
    "NET-FLANNEL-SUBNET-ENV"
)]
#[case::subnet_env_missing_docker(
    faulty(win_k8s(17763, "1.14", "docker://18.9.1"), &[Fault::FlannelSubnetEnvMissing]),
    pod(SC2019),
    None,
    Kind::Sandbox,
    SUBNET_ENV_DOCKER,
    "NET-FLANNEL-SUBNET-ENV"
)]
#[case::subnet_env_ignored_host_network_is_no_exemption(
    faulty(win(20348), &[Fault::FlanneldWaiting]),
    hostnet_pod(SC2022),
    None,
    Kind::Sandbox,
    SUBNET_ENV,
    "NET-FLANNEL-SUBNET-ENV"
)]
#[case::subnet_env_hostprocess_exempt(
    faulty(win(20348), &[Fault::FlannelSubnetEnvMissing]),
    hp_pod(SC2022),
    None,
    Kind::Runs,
    "",
    ""
)]
#[case::flanneld_waiting_hostprocess_exempt(
    faulty(win(20348), &[Fault::FlanneldWaiting]),
    hp_pod(SC2022),
    None,
    Kind::Runs,
    "",
    ""
)]
// HnsNetworkMissing (NET-HNS-NETWORK-PRESENT).
#[case::hns_missing(
    faulty(win(20348), &[Fault::HnsNetworkMissing]),
    pod(SC2022),
    None,
    Kind::Sandbox,
    HNS,
    "NET-HNS-NETWORK-PRESENT"
)]
#[case::hns_missing_overlay(
    overlay(faulty(win(20348), &[Fault::HnsNetworkMissing])),
    pod(SC2022),
    None,
    Kind::Sandbox,
    HNS_OVERLAY,
    "NET-HNS-NETWORK-PRESENT"
)]
#[case::hns_missing_docker(
    faulty(win_k8s(17763, "1.14", "docker://18.9.1"), &[Fault::HnsNetworkMissing]),
    pod(SC2019),
    None,
    Kind::Sandbox,
    HNS_DOCKER,
    "NET-HNS-NETWORK-PRESENT"
)]
#[case::hns_missing_hostprocess_exempt(
    faulty(win(20348), &[Fault::HnsNetworkMissing]),
    hp_pod(SC2022),
    None,
    Kind::Runs,
    "",
    ""
)]
// Order: the flannel plugin reads subnet.env before it delegates; containerd sets up the
// network before it starts the sandbox container, dockershim after.
#[case::subnet_env_before_hns(
    faulty(win(20348), &[Fault::HnsNetworkMissing, Fault::FlannelSubnetEnvMissing]),
    pod(SC2022),
    None,
    Kind::Sandbox,
    SUBNET_ENV,
    "NET-FLANNEL-SUBNET-ENV"
)]
#[case::containerd_network_before_pause(
    faulty(win(20348), &[Fault::PauseImageWrongBuild, Fault::HnsNetworkMissing]),
    pod(SC2022),
    None,
    Kind::Sandbox,
    HNS,
    "NET-HNS-NETWORK-PRESENT"
)]
#[case::docker_pause_before_network(
    faulty(win_k8s(17763, "1.14", "docker://18.9.1"), &[Fault::PauseImageWrongBuild, Fault::HnsNetworkMissing]),
    pod(SC2019),
    None,
    Kind::Sandbox,
    PAUSE_DOCKER,
    "VER-PAUSE-IMAGE"
)]
// Faults that do not act on the sandbox leave it alone.
#[case::kube_proxy_stopped(
    faulty(win(20348), &[Fault::KubeProxyStopped, Fault::DnsUnreachable]),
    pod(SC2022),
    None,
    Kind::Runs,
    "",
    ""
)]
fn sandbox_faults(
    #[case] node: NodeProfile,
    #[case] pod: Value,
    #[case] handler: Option<&str>,
    #[case] kind: Kind,
    #[case] message: &str,
    #[case] rule: &str,
) {
    let v = verdict(&node, &pod, handler);
    let (k, text, r) = classify(&v);
    assert_eq!(k, kind, "{v:?}");
    assert_eq!(text, message.replace("<sandbox>", &container_id("u-1", "POD")));
    assert_eq!(r, rule);
    if kind == Kind::Sandbox {
        assert_eq!(v.event_reason(), Some("FailedCreatePodSandBox"));
    }
}
