//! The registries' answers to a node's pull (the topology's `registries:`): a registry whose
//! name does not resolve fails the runtime's request before any answer, and a registry that
//! wants credentials the pull does not carry answers `401 Unauthorized` — each in the words of
//! the node's runtime, as the kubelet reports them (`ErrImagePull`, `Failed to pull image …`).
//!
//! containerd resolves a reference with a `HEAD` of its manifest (`remotes/docker/resolver.go`)
//! and the CRI wraps what fails as `failed to pull and unpack image "<ref>": failed to resolve
//! reference "<ref>": …` (`pkg/cri/server/image_pull.go`, `pull.go`), which gRPC carries as
//! `code = Unknown`. The 401 of a registry that sends no challenge containerd can answer reads,
//! per release: 1.5 `unexpected status code [manifests <tag>]: 401 Unauthorized`; 1.6 `pulling
//! from host <host> failed with status code [manifests <tag>]: 401 Unauthorized`; 1.7 and 2.x
//! `unexpected status from HEAD request to https://<host>/v2/<path>/manifests/<tag>: 401
//! Unauthorized` (`remotes/errors/errors.go`). (Registries with a Bearer challenge fail the
//! anonymous token instead — `failed to fetch anonymous token: unexpected status from GET
//! request to <realm>…: 401 Unauthorized` — and Basic ones `pull access denied, repository does
//! not exist or may require authorization: authorization failed: no basic auth credentials`;
//! the simulated registry is the challenge-less kind.) A name that does not resolve fails the
//! request: `failed to do request: Head "https://<host>/v2/<path>/manifests/<tag>": dial tcp:
//! lookup <host>: no such host` — Go's resolver names the server it asked on Linux (the
//! systemd-resolved stub 127.0.0.53:53 of Ubuntu nodes), not on Windows, which resolves through
//! the system.
//!
//! Docker (dockershim) pings `/v2/` first: `Error response from daemon: Get
//! https://<host>/v2/: dial tcp: lookup <host>: no such host`, and without credentials `Error
//! response from daemon: Get https://<host>/v2/<path>/manifests/<tag>: no basic auth
//! credentials`.

use crate::config::platform::Os;
use crate::config::profile::{NodeProfile, RuntimeKind};
use crate::config::registry::Auth;
use crate::node::images::Reference;

/// The manifest request a runtime sends for an image: the host it dials, the repository path
/// and the tag or digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The reference as containerd prints it (`docker.io/library/busybox:1.36`).
    pub reference: String,
    /// The registry host as references name it (`docker.io` for Docker Hub).
    pub registry: String,
    /// The host dialled (`registry-1.docker.io` for Docker Hub).
    pub host: String,
    /// The repository path on that host (`library/busybox`).
    pub path: String,
    /// The tag or digest (`latest` when neither is given).
    pub object: String,
}

impl Manifest {
    pub fn of(image: &str) -> Self {
        let parsed = Reference::parse(image);
        let reference = parsed.fully_qualified();
        let repository = Reference {
            tag: None,
            digest: None,
            ..parsed.clone()
        }
        .fully_qualified();
        let repository = repository.strip_suffix(":latest").unwrap_or(&repository);
        let (registry, path) = repository.split_once('/').unwrap_or(("docker.io", repository));
        let host = match registry {
            "docker.io" => "registry-1.docker.io",
            other => other,
        };
        Self {
            registry: registry.to_string(),
            host: host.to_string(),
            path: path.to_string(),
            object: parsed.digest.or(parsed.tag).unwrap_or_else(|| "latest".into()),
            reference,
        }
    }

    /// The repository as the kubelet's keyring looks it up (`registry.k8s.io/pause`).
    pub fn repository(&self) -> String {
        format!("{}/{}", self.registry, self.path)
    }

    /// The manifest's URL.
    pub fn url(&self) -> String {
        format!("https://{}/v2/{}/manifests/{}", self.host, self.path, self.object)
    }
}

/// Why the runtime of `profile` cannot pull `image` from its registry (the error the kubelet
/// reports), or None when the registry answers: a host that does not resolve, or one that
/// wants credentials when `credentials` says the pod has none for it.
pub fn refusal(profile: &NodeProfile, image: &str, credentials: bool) -> Option<String> {
    let manifest = Manifest::of(image);
    let registry = profile.registries.get(&manifest.registry);
    if !registry.reachable {
        return Some(unresolved(profile, &manifest));
    }
    (registry.auth == Auth::Required && !credentials).then(|| unauthorized(profile, &manifest))
}

/// The error of a pull whose registry name does not resolve on the node.
fn unresolved(profile: &NodeProfile, m: &Manifest) -> String {
    let lookup = match (profile.os, profile.os_image.contains("Ubuntu")) {
        (Os::Linux, true) => format!("lookup {} on 127.0.0.53:53: no such host", m.host),
        _ => format!("lookup {}: no such host", m.host),
    };
    match profile.runtime {
        RuntimeKind::Containerd => format!(
            "rpc error: code = Unknown desc = failed to pull and unpack image {:?}: failed to resolve reference {:?}: failed to do request: Head {:?}: dial tcp: {lookup}",
            m.reference,
            m.reference,
            m.url()
        ),
        RuntimeKind::Docker => format!(
            "rpc error: code = Unknown desc = Error response from daemon: Get https://{}/v2/: dial tcp: {lookup}",
            m.host
        ),
    }
}

/// The error of a pull without credentials from a registry that wants them.
fn unauthorized(profile: &NodeProfile, m: &Manifest) -> String {
    let status = match (profile.runtime, profile.runtime_version) {
        (RuntimeKind::Docker, _) => {
            return format!(
                "rpc error: code = Unknown desc = Error response from daemon: Get {}: no basic auth credentials",
                m.url()
            );
        }
        (RuntimeKind::Containerd, v) if v >= (1, 7) => {
            format!("unexpected status from HEAD request to {}: 401 Unauthorized", m.url())
        }
        (RuntimeKind::Containerd, (1, 6)) => format!(
            "pulling from host {} failed with status code [manifests {}]: 401 Unauthorized",
            m.host, m.object
        ),
        (RuntimeKind::Containerd, _) => {
            format!("unexpected status code [manifests {}]: 401 Unauthorized", m.object)
        }
    };
    format!(
        "rpc error: code = Unknown desc = failed to pull and unpack image {:?}: failed to resolve reference {:?}: {status}",
        m.reference, m.reference
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::topology::Topology;
    use rstest::rstest;

    fn profile(node: &str, runtime: &str, registries: &str) -> NodeProfile {
        let yaml = format!(
            "name: t\nregistries: {registries}\nnodes:\n  - {{name: {node}, os: {os}, containerRuntime: \"{runtime}\"{kernel}}}\n",
            os = if node.starts_with("win") { "windows" } else { "linux" },
            kernel = if node.starts_with("win") {
                ", kernelVersion: 10.0.20348.2762"
            } else {
                ""
            }
        );
        let t = Topology::parse(&yaml, "t.yaml").expect("topology");
        crate::config::profile::profiles(&t, &[std::net::Ipv4Addr::new(10, 0, 0, 1)]).remove(0)
    }

    #[rstest]
    #[case::hub("busybox:1.36", "docker.io", "registry-1.docker.io", "library/busybox", "1.36")]
    #[case::k8s(
        "registry.k8s.io/e2e-test-images/agnhost:2.53",
        "registry.k8s.io",
        "registry.k8s.io",
        "e2e-test-images/agnhost",
        "2.53"
    )]
    #[case::port(
        "harbor.corp:5000/mcr/windows/nanoserver",
        "harbor.corp:5000",
        "harbor.corp:5000",
        "mcr/windows/nanoserver",
        "latest"
    )]
    #[case::digest(
        "mcr.microsoft.com/windows/nanoserver@sha256:ab",
        "mcr.microsoft.com",
        "mcr.microsoft.com",
        "windows/nanoserver",
        "sha256:ab"
    )]
    fn manifests(
        #[case] image: &str,
        #[case] registry: &str,
        #[case] host: &str,
        #[case] path: &str,
        #[case] object: &str,
    ) {
        let m = Manifest::of(image);
        assert_eq!(
            (m.registry.as_str(), m.host.as_str(), m.path.as_str(), m.object.as_str()),
            (registry, host, path, object)
        );
    }

    /// Each runtime release's words for a 401 and for a name that does not resolve; a registry
    /// that is not listed, or a pull with credentials, is answered.
    #[rstest]
    #[case::containerd_1_7_linux(
        "linux-1",
        "containerd://1.7.22",
        true,
        "failed to resolve reference \"registry.k8s.io/e2e-test-images/agnhost:2.53\": unexpected status from HEAD request to https://registry.k8s.io/v2/e2e-test-images/agnhost/manifests/2.53: 401 Unauthorized"
    )]
    #[case::containerd_2_windows(
        "win-1",
        "containerd://2.0.4",
        true,
        "unexpected status from HEAD request to https://registry.k8s.io/v2/e2e-test-images/agnhost/manifests/2.53: 401 Unauthorized"
    )]
    #[case::containerd_1_6(
        "win-1",
        "containerd://1.6.24",
        true,
        "failed to resolve reference \"registry.k8s.io/e2e-test-images/agnhost:2.53\": pulling from host registry.k8s.io failed with status code [manifests 2.53]: 401 Unauthorized"
    )]
    #[case::containerd_1_5(
        "linux-1",
        "containerd://1.5.9",
        true,
        "unexpected status code [manifests 2.53]: 401 Unauthorized"
    )]
    #[case::docker(
        "win-1",
        "docker://19.3.14",
        true,
        "Error response from daemon: Get https://registry.k8s.io/v2/e2e-test-images/agnhost/manifests/2.53: no basic auth credentials"
    )]
    #[case::containerd_linux_dns(
        "linux-1",
        "containerd://1.7.22",
        false,
        "failed to do request: Head \"https://mcr.microsoft.com/v2/windows/nanoserver/manifests/ltsc2022\": dial tcp: lookup mcr.microsoft.com on 127.0.0.53:53: no such host"
    )]
    #[case::containerd_windows_dns(
        "win-1",
        "containerd://1.7.20",
        false,
        "failed to resolve reference \"mcr.microsoft.com/windows/nanoserver:ltsc2022\": failed to do request: Head \"https://mcr.microsoft.com/v2/windows/nanoserver/manifests/ltsc2022\": dial tcp: lookup mcr.microsoft.com: no such host"
    )]
    #[case::docker_dns(
        "win-1",
        "docker://19.3.14",
        false,
        "Error response from daemon: Get https://mcr.microsoft.com/v2/: dial tcp: lookup mcr.microsoft.com: no such host"
    )]
    fn refusals_in_the_runtimes_words(
        #[case] node: &str,
        #[case] runtime: &str,
        #[case] auth: bool,
        #[case] words: &str,
    ) {
        let p = profile(
            node,
            runtime,
            "{registry.k8s.io: {auth: required}, mcr.microsoft.com: {reachable: false}}",
        );
        let image = if auth {
            "registry.k8s.io/e2e-test-images/agnhost:2.53"
        } else {
            "mcr.microsoft.com/windows/nanoserver:ltsc2022"
        };
        let got = refusal(&p, image, false).expect("refused");
        assert!(got.starts_with("rpc error: code = Unknown desc = "), "{got}");
        assert!(got.contains(words), "{got}");
        // Credentials open the one that wants them, not the one that does not resolve.
        assert_eq!(refusal(&p, image, true).is_none(), auth);
        assert_eq!(refusal(&p, "harbor.corp/k8s/e2e-test-images/agnhost:2.53", false), None);
        assert_eq!(refusal(&p, "busybox:1.36", false), None);
    }
}
