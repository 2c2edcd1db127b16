//! The transient Warning events real kubelets emit on the way to Running (`timing.transientEvents`):
//! which pods get them — a reproducible share, chosen by the topology's seed and the pod's and
//! node's identity — and the messages, in the shapes upstream prints. None of them changes a
//! pod's outcome: each is followed by the success a real kubelet's retry reaches.
//!
//! - `FailedMount` of the service-account volume's `kube-root-ca.crt` in a namespace created a
//!   moment ago: the kubelet's ConfigMap manager has not registered the object yet
//!   (kubernetes/kubernetes#105204, "sporadic" right after namespace creation).
//! - One failed image pull attempt (an i/o timeout reaching the registry), then `BackOff`, then a
//!   successful pull: the kubelet's per-attempt pull events (`pkg/kubelet/images/image_manager.go`).
//! - One `FailedCreatePodSandBox` on a Windows pod (HNS refuses the endpoint once), which the
//!   kubelet's next sync gets past; real terminal sandbox failures repeat instead.

use std::time::Duration;

use crate::config::profile::{NodeProfile, unit_hash};

/// How long after its namespace's creation a pod's `kube-root-ca.crt` may not be registered
/// yet, at `timing.scale` 1 (the root CA publisher and the kubelet's ConfigMap watch catch up
/// within seconds).
pub const NEW_NAMESPACE_WINDOW: Duration = Duration::from_secs(5);

/// The share of image pulls whose first attempt fails: occasional, as registry timeouts are
/// (a run of a few dozen pods still meets several).
pub const PULL_FAILURE_SHARE: f64 = 0.1;

/// The share of Windows pods whose first sandbox attempt fails (occasional, like the pull
/// failures).
pub const SANDBOX_RETRY_SHARE: f64 = 0.1;

const PULL_SALT: u64 = 0x7075_6c6c;
const SANDBOX_SALT: u64 = 0x7362_6f78;

/// Whether the first attempt of this pull fails (seed, node, pod and image decide).
pub fn pull_attempt_fails(seed: u64, node: &str, namespace: &str, pod: &str, image: &str) -> bool {
    unit_hash(seed, &format!("{node}/{namespace}/{pod}/{image}"), PULL_SALT) < PULL_FAILURE_SHARE
}

/// Whether this Windows pod's first sandbox attempt fails (seed, node and pod decide).
pub fn sandbox_retried(seed: u64, node: &str, namespace: &str, pod: &str) -> bool {
    unit_hash(seed, &format!("{node}/{namespace}/{pod}"), SANDBOX_SALT) < SANDBOX_RETRY_SHARE
}

/// The `FailedMount` message of a service-account volume whose root CA is not registered yet.
pub fn failed_mount_message(volume: &str, namespace: &str) -> String {
    format!("MountVolume.SetUp failed for volume {volume:?} : object {namespace:?}/\"kube-root-ca.crt\" not registered")
}

/// The failed attempt's `Failed` event message: containerd could not reach the registry.
pub fn pull_timeout_message(image: &str) -> String {
    let m = crate::node::registry::Manifest::of(image);
    format!(
        "Failed to pull image {image:?}: failed to pull and unpack image {:?}: failed to resolve reference {:?}: failed to do request: Head {:?}: dial tcp 20.0.2.14:443: i/o timeout",
        m.reference,
        m.reference,
        m.url()
    )
}

/// The one `FailedCreatePodSandBox` message: HNS refuses to create the pod's endpoint once
/// (hcsshim's `hcnCreateEndpoint failed in Win32: … (0x1392)`, ERROR_OBJECT_ALREADY_EXISTS).
pub fn sandbox_message(profile: &NodeProfile, sandbox_id: &str) -> String {
    let (plugin, network) = match profile.flannel() {
        Some(f) => ("flannel", f.network),
        None => ("sdnbridge", "azure"),
    };
    format!(
        "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox {sandbox_id:?}: plugin type={plugin:?} name={network:?} failed (add): failed to delegate add: error creating endpoint: hcnCreateEndpoint failed in Win32: The object already exists. (0x1392)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// The choices are reproducible, depend on the seed, and pick about their share.
    #[test]
    fn choices_are_seeded_and_take_their_share() {
        let picked = |seed: u64| {
            (0..400)
                .filter(|i| pull_attempt_fails(seed, "n", "ns", &format!("p{i}"), "busybox:1.36"))
                .count()
        };
        assert_eq!(picked(7), picked(7));
        assert_ne!(
            (0..50)
                .map(|i| sandbox_retried(1, "n", "ns", &format!("p{i}")))
                .collect::<Vec<_>>(),
            (0..50)
                .map(|i| sandbox_retried(2, "n", "ns", &format!("p{i}")))
                .collect::<Vec<_>>()
        );
        assert!((20..60).contains(&picked(7)), "{}", picked(7));
    }

    #[rstest]
    #[case::docker_hub(
        "busybox:1.36",
        "Failed to pull image \"busybox:1.36\": failed to pull and unpack image \"docker.io/library/busybox:1.36\": failed to resolve reference \"docker.io/library/busybox:1.36\": failed to do request: Head \"https://registry-1.docker.io/v2/library/busybox/manifests/1.36\": dial tcp 20.0.2.14:443: i/o timeout"
    )]
    #[case::mcr(
        "mcr.microsoft.com/windows/servercore:ltsc2022",
        "Head \"https://mcr.microsoft.com/v2/windows/servercore/manifests/ltsc2022\": dial tcp 20.0.2.14:443: i/o timeout"
    )]
    fn pull_timeouts_name_the_registry(#[case] image: &str, #[case] needle: &str) {
        assert!(
            pull_timeout_message(image).contains(needle),
            "{}",
            pull_timeout_message(image)
        );
    }

    #[test]
    fn failed_mount_names_the_namespace_root_ca() {
        assert_eq!(
            failed_mount_message("kube-api-access-abcde", "team"),
            "MountVolume.SetUp failed for volume \"kube-api-access-abcde\" : object \"team\"/\"kube-root-ca.crt\" not registered"
        );
    }
}
