//! Remedies for cells that could not be judged for a reason of the node rather than of the
//! check: the node is not Ready, or no pod gets a sandbox there. They restate the symptom →
//! rule → remedy rows of windows-rules.md §4 (and the rules of §3 they name), and replace the
//! check's own remedy, which is about what the check would have observed.

/// windows-rules.md §4 "no kubelet/kube-proxy processes / node NotReady" (W14).
pub const NOT_READY: &str = "The node is not Ready: its kubelet does not post status, so no pod starts there. \
Check that the kubelet and kube-proxy run on the node (on script installs the processes start.ps1 \
starts; run them as Windows services with sc.exe or nssm) and read the kubelet's log (W14).";

/// §4 "pods stuck ContainerCreating / restart loop" with a sandbox of another build (VER-PAUSE-IMAGE).
const PAUSE_IMAGE: &str = "Pods on this node never get a sandbox: \"the container operating system does not \
match the host operating system\" (0xc0370101) means the pause (sandbox) image is of another Windows build. \
Point containerd's sandbox_image (sandbox in config v3) or the kubelet's --pod-infra-container-image at a \
multi-arch pause image (registry.k8s.io/pause:3.6 or later) or one of the node's build (VER-PAUSE-IMAGE).";

/// §4 "pods missing C:\run\flannel\subnet.env" and "flanneld Waiting for the Network to be
/// created" (NET-FLANNEL-SUBNET-ENV).
const SUBNET_ENV: &str = "Pods on this node never get a sandbox: the flannel CNI plugin finds no \
C:\\run\\flannel\\subnet.env, so flanneld has not started or is stuck at \"Waiting for the Network to be \
created\". Restart flanneld (relaunch it with NODE_NAME set), or copy /run/flannel/subnet.env from a Linux \
node and fix FLANNEL_SUBNET for this node (NET-FLANNEL-SUBNET-ENV).";

/// §4 "kubelet: no network adapter found" and "hnsCall failed" (NET-HNS-NETWORK-PRESENT).
const HNS_NETWORK: &str = "Pods on this node never get a sandbox: the HNS network the CNI plugin \
delegates to (cbr0 on l2bridge, vxlan0 on overlay) does not exist. Check Get-HnsNetwork and the \
vEthernet (…) adapter (Get-NetAdapter) and fix the InterfaceName in the start scripts; stale HNS objects \
after an update: hnsdiag list/delete, then restart HNS (NET-HNS-NETWORK-PRESENT).";

/// The remedy for an observation that shows a pod never got a sandbox (FailedCreatePodSandBox)
/// for one of the node-wide causes of §4, by the cause its message names; None for any other
/// observation (a sandbox can also fail for the pod's own spec, e.g. an unknown runAsUserName),
/// or when the check's own remedy already deals with sandbox failures (`own`).
pub fn sandbox(observed: &str, own: Option<&str>) -> Option<&'static str> {
    if !observed.contains("FailedCreatePodSandBox") || own.is_some_and(|r| r.contains("FailedCreatePodSandBox")) {
        return None;
    }
    if observed.contains("subnet.env") {
        Some(SUBNET_ENV)
    } else if observed.contains("GETHNSNewtorkByName")
        || observed.contains("HNS network")
        || observed.contains("network adapter")
    {
        Some(HNS_NETWORK)
    } else if observed.contains("0xc0370101") || observed.contains("does not match the host operating system") {
        Some(PAUSE_IMAGE)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const PREFIX: &str = "the client pod on win2022-1 is not usable: FailedCreatePodSandBox (3 times): \
        Failed to create pod sandbox: rpc error: code = Unknown desc = ";

    #[rstest]
    #[case::pause(
        "failed to start sandbox container for pod \"x\": hcs::CreateComputeSystem 1: The container operating system does not match the host operating system. (0xc0370101)",
        "sandbox_image"
    )]
    #[case::subnet_env(
        "failed to setup network for sandbox \"1\": plugin type=\"flannel\" name=\"cbr0\" failed (add): loadFlannelSubnetEnv failed: open C:\\run\\flannel\\subnet.env: The system cannot find the file specified.",
        "NODE_NAME"
    )]
    #[case::hns(
        "failed to setup network for sandbox \"1\": plugin type=\"flannel\" name=\"cbr0\" failed (add): failed to delegate add: error while GETHNSNewtorkByName(cbr0): Network cbr0 not found",
        "Get-HnsNetwork"
    )]
    fn sandbox_failures_get_the_remedy_of_their_cause(#[case] message: &str, #[case] names: &str) {
        let remedy = sandbox(&format!("{PREFIX}{message}"), Some("Check the CNI.")).expect("a remedy");
        assert!(remedy.contains(names), "{remedy}");
    }

    #[test]
    fn other_failures_and_checks_about_sandboxes_keep_their_own_remedy() {
        assert_eq!(sandbox("cli-3 → 10.96.0.2:80 tcp: timeout", None), None);
        assert_eq!(
            sandbox(&format!("{PREFIX}The user name or password is incorrect."), None),
            None
        );
        assert_eq!(
            sandbox(
                &format!("{PREFIX}(0xc0370101)"),
                Some("Pods stuck in ContainerCreating (FailedCreatePodSandBox): …")
            ),
            None
        );
    }
}
