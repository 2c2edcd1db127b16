//! Failed image pulls as a kubelet reports them, and when one is terminal: what the
//! registry's words say — it refused the pull (401/403, no credentials), it does not resolve or
//! answer, it has no such manifest, or the image has no variant for the node's platform — and how
//! often the kubelet has tried (its `Failed to pull image` Warnings, whose count the event
//! recorder raises with each attempt). A platform without a variant is the image's answer at
//! once; a registry's failure is terminal only after [`PULL_FAILURES`] failed pulls: the kubelet
//! has retried twice through its image back-off (10 s, 20 s; `pkg/kubelet/images`), which a
//! registry's blip would not have outlasted. An image the run cannot pull names the flag that
//! gets it.

use k8s_openapi::api::core::v1::Pod;

use crate::cluster::registry::registry_of;

/// Failed pulls of one image after which a registry's failure is terminal.
pub const PULL_FAILURES: i32 = 3;

/// What a failed pull's words say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The image has no variant for the node's OS, architecture or build (final at once).
    Platform,
    /// The registry refused the pull: 401/403, no or wrong credentials.
    Refused,
    /// The registry did not answer: its name does not resolve, the connection fails or times out.
    Unreachable,
    /// The registry has no such repository or tag.
    Missing,
}

/// Words of a platform without a variant: containerd, Docker, the runtime's start error.
const PLATFORM: &[&str] = &[
    "no match for platform",
    "no matching manifest",
    "image operating system",
];
/// Words of a refused pull: the 401/403 statuses, containerd's authorizer, Docker's daemon.
const REFUSED: &[&str] = &[
    "401 unauthorized",
    "403 forbidden",
    "unauthorized",
    "authorization failed",
    "failed to authorize",
    "no basic auth credentials",
    "pull access denied",
    "access to the resource is denied",
    "authentication required",
    "denied",
    "forbidden",
];
/// Words of a registry that does not answer (Go's resolver and dialer).
const UNREACHABLE: &[&str] = &[
    "no such host",
    "i/o timeout",
    "connection refused",
    "network is unreachable",
    "no route to host",
    "tls handshake timeout",
    "server misbehaving",
    "registry is unavailable",
    "context deadline exceeded",
    "connection reset",
];
/// Words of a manifest the registry does not have.
const MISSING: &[&str] = &["not found", "manifest unknown", "name unknown", "does not exist"];

/// What a pull error says, if it is one of the kinds above (a throttled pull, `429 Too Many
/// Requests`, is none: the kubelet's retries get through).
pub fn classify(message: &str) -> Option<Failure> {
    let m = message.to_lowercase();
    let says = |words: &[&str]| words.iter().any(|w| m.contains(w));
    [
        (PLATFORM, Failure::Platform),
        (REFUSED, Failure::Refused),
        (UNREACHABLE, Failure::Unreachable),
        (MISSING, Failure::Missing),
    ]
    .into_iter()
    .find(|(words, _)| says(words))
    .map(|(_, f)| f)
}

/// A Warning about a pod as (reason, message, count).
pub type Warning<'a> = (&'a str, &'a str, i32);

/// The prefix of the kubelet's Warning about a failed pull of `image`.
fn failed_prefix(image: &str) -> String {
    format!("Failed to pull image {image:?}: ")
}

/// How many pulls of `image` (any image: None) the kubelet reported failed.
pub fn failures(warnings: &[Warning<'_>], image: Option<&str>) -> i32 {
    let prefix = image.map(failed_prefix);
    warnings
        .iter()
        .filter(|(reason, message, _)| {
            *reason == "Failed"
                && match &prefix {
                    Some(p) => message.starts_with(p.as_str()),
                    None => message.starts_with("Failed to pull image "),
                }
        })
        .map(|(_, _, count)| (*count).max(1))
        .sum()
}

/// An image the run cannot pull on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpullable {
    pub image: String,
    pub node: String,
    pub failure: Failure,
    /// The registry's words (the runtime's error).
    pub words: String,
    /// How many pulls failed.
    pub failures: i32,
}

impl Unpullable {
    /// The problem of a pod that cannot have its image: the image, the node, the registry's
    /// words and the flag that fixes it.
    pub fn problem(&self) -> String {
        let (what, fix) = self.what_and_fix();
        format!(
            "image {} cannot be pulled on {}: registry {} {what} ({} failed pulls): {}; {fix}",
            self.image,
            self.node,
            registry_of(&self.image),
            self.failures,
            self.words
        )
    }

    /// The registry's words without the runtime's wrapping (what follows `failed to resolve
    /// reference "…": `, where it is there).
    fn gist(&self) -> &str {
        self.words
            .rsplit_once("\": ")
            .filter(|(head, _)| head.contains("failed to resolve reference"))
            .map_or(self.words.as_str(), |(_, tail)| tail)
    }

    /// What the registry did, and the flag that gets the image.
    fn what_and_fix(&self) -> (&'static str, String) {
        let registry = registry_of(&self.image);
        match self.failure {
            Failure::Refused => (
                "refused the pull",
                format!(
                    "give the run credentials for {registry} with --image-pull-secret NAMESPACE/NAME (a kubernetes.io/dockerconfigjson Secret)"
                ),
            ),
            Failure::Unreachable => (
                "did not answer",
                format!(
                    "pull from a registry the nodes reach with --image-registry-map {registry}=MIRROR (or --image-registry MIRROR for every image)"
                ),
            ),
            Failure::Missing | Failure::Platform => (
                "has no such image",
                format!(
                    "mirror it (`mixcheck images` lists the images) and pull from there with --image-registry-map {registry}=MIRROR or --image-registry MIRROR"
                ),
            ),
        }
    }
}

/// One line per registry and what it did, for the terminal: the images and nodes, the
/// registry's words and the flag that gets them.
pub fn summary(unpullable: &[&Unpullable]) -> Vec<String> {
    use std::collections::BTreeMap;
    type Group<'a> = (
        std::collections::BTreeSet<&'a str>,
        std::collections::BTreeSet<&'a str>,
        &'a Unpullable,
    );
    let mut groups: BTreeMap<(&str, u8), Group<'_>> = BTreeMap::new();
    for u in unpullable {
        let key = (registry_of(&u.image), u.failure as u8);
        let entry = groups
            .entry(key)
            .or_insert_with(|| (Default::default(), Default::default(), u));
        entry.0.insert(u.image.as_str());
        entry.1.insert(u.node.as_str());
    }
    groups
        .into_iter()
        .map(|((registry, _), (images, nodes, first))| {
            let (what, fix) = first.what_and_fix();
            format!(
                "  registry {registry} {what} for {} on {} ({}): {fix}",
                images.into_iter().collect::<Vec<_>>().join(", "),
                nodes.into_iter().collect::<Vec<_>>().join(", "),
                first.gist()
            )
        })
        .collect()
}

/// The image of `pod` that cannot be pulled, once the kubelet has failed its pull
/// [`PULL_FAILURES`] times for a registry's reason (refused, unreachable, missing): a container
/// waiting in `ErrImagePull` or `ImagePullBackOff`, the registry's words from the latest
/// `Failed to pull image` Warning (else from the waiting message).
pub fn unpullable(pod: &Pod, warnings: &[Warning<'_>]) -> Option<Unpullable> {
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
    let status = pod.status.as_ref()?;
    let statuses = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten());
    statuses.into_iter().find_map(|c| {
        let waiting = c.state.as_ref()?.waiting.as_ref()?;
        let reason = waiting.reason.as_deref().unwrap_or_default();
        if !matches!(reason, "ErrImagePull" | "ImagePullBackOff") {
            return None;
        }
        let image = spec_image(pod, &c.name).unwrap_or_else(|| c.image.clone());
        let prefix = failed_prefix(&image);
        let from_events = warnings
            .iter()
            .rfind(|(r, m, _)| *r == "Failed" && m.starts_with(prefix.as_str()))
            .map(|(_, m, _)| m[prefix.len()..].to_string());
        let words = from_events.unwrap_or_else(|| waiting_words(waiting.message.as_deref().unwrap_or_default()));
        let failure = classify(&words).filter(|f| *f != Failure::Platform)?;
        let failures = failures(warnings, Some(&image));
        (failures >= PULL_FAILURES).then(|| Unpullable {
            image,
            node: node.clone(),
            failure,
            words,
            failures,
        })
    })
}

/// The image the pod's spec gives container `name`.
fn spec_image(pod: &Pod, name: &str) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    spec.init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .find(|c| c.name == name)
        .and_then(|c| c.image.clone())
}

/// The runtime's error in a waiting message (`Back-off pulling image "x": ErrImagePull: <err>`
/// carries it after the reason; `ErrImagePull`'s message is the error).
fn waiting_words(message: &str) -> String {
    match message.split_once(": ErrImagePull: ") {
        Some((_, words)) => words.to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.53";

    #[rstest]
    #[case::containerd_1_7_401(
        "rpc error: code = Unknown desc = failed to pull and unpack image \"x\": failed to resolve reference \"x\": unexpected status from HEAD request to https://registry.k8s.io/v2/x/manifests/1: 401 Unauthorized",
        Some(Failure::Refused)
    )]
    #[case::containerd_1_6_401(
        "pulling from host registry.k8s.io failed with status code [manifests 2.53]: 401 Unauthorized",
        Some(Failure::Refused)
    )]
    #[case::anonymous_token(
        "failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://harbor.corp/service/token: 401 Unauthorized",
        Some(Failure::Refused)
    )]
    #[case::basic(
        "pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials",
        Some(Failure::Refused)
    )]
    #[case::forbidden(
        "unexpected status from HEAD request to https://x.azurecr.io/v2/a/manifests/1: 403 Forbidden",
        Some(Failure::Refused)
    )]
    #[case::docker_login(
        "Error response from daemon: pull access denied for foo, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
        Some(Failure::Refused)
    )]
    #[case::dns_windows(
        "failed to do request: Head \"https://mcr.microsoft.com/v2/windows/nanoserver/manifests/ltsc2022\": dial tcp: lookup mcr.microsoft.com: no such host",
        Some(Failure::Unreachable)
    )]
    #[case::dns_linux(
        "dial tcp: lookup mcr.microsoft.com on 127.0.0.53:53: no such host",
        Some(Failure::Unreachable)
    )]
    #[case::timeout("dial tcp 20.0.2.14:443: i/o timeout", Some(Failure::Unreachable))]
    #[case::refused("dial tcp 10.0.0.5:443: connect: connection refused", Some(Failure::Unreachable))]
    #[case::not_found("failed to resolve reference \"x\": x: not found", Some(Failure::Missing))]
    #[case::manifest_unknown(
        "manifest for x not found: manifest unknown: manifest tagged by \"1\" is not found",
        Some(Failure::Missing)
    )]
    #[case::no_platform(
        "failed to pull and unpack image \"x\": no match for platform in manifest: not found",
        Some(Failure::Platform)
    )]
    #[case::docker_platform(
        "no matching manifest for windows/amd64 10.0.17763 in the manifest list entries",
        Some(Failure::Platform)
    )]
    #[case::throttled("429 Too Many Requests", None)]
    #[case::backoff_only("Back-off pulling image \"x\"", None)]
    fn pull_errors_are_classified(#[case] message: &str, #[case] failure: Option<Failure>) {
        assert_eq!(classify(message), failure, "{message}");
    }

    /// A pod on `node` whose one container waits in `reason` with `message`.
    fn waiting(node: &str, reason: &str, message: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": AGNHOST}]},
            "status": {"containerStatuses": [{"name": "c", "image": AGNHOST, "imageID": "", "ready": false,
                "restartCount": 0, "state": {"waiting": {"reason": reason, "message": message}}}]}
        }))
        .expect("pod")
    }

    const WORDS: &str = "rpc error: code = Unknown desc = failed to pull and unpack image \"registry.k8s.io/e2e-test-images/agnhost:2.53\": failed to resolve reference \"registry.k8s.io/e2e-test-images/agnhost:2.53\": unexpected status from HEAD request to https://registry.k8s.io/v2/e2e-test-images/agnhost/manifests/2.53: 401 Unauthorized";

    /// A registry's refusal settles the pod after the third failed pull, not before (a blip is
    /// retried), whether the container shows ErrImagePull or ImagePullBackOff, on Linux and
    /// Windows nodes alike; the problem names the image, the node, the words and the flag.
    #[rstest]
    #[case::first_failure("linux-1", "ErrImagePull", 1, false)]
    #[case::second_failure("win2019-1", "ImagePullBackOff", 2, false)]
    #[case::third_failure_linux("linux-1", "ErrImagePull", 3, true)]
    #[case::third_failure_windows("win2022-1", "ImagePullBackOff", 3, true)]
    #[case::later("win2025-1", "ImagePullBackOff", 7, true)]
    fn a_refused_pull_is_terminal_after_the_third_failure(
        #[case] node: &str,
        #[case] reason: &str,
        #[case] count: i32,
        #[case] terminal: bool,
    ) {
        let message = if reason == "ErrImagePull" {
            WORDS.to_string()
        } else {
            format!("Back-off pulling image \"{AGNHOST}\": ErrImagePull: {WORDS}")
        };
        let event = format!("Failed to pull image \"{AGNHOST}\": {WORDS}");
        let warnings = [
            ("Failed", event.as_str(), count),
            ("Failed", "Error: ErrImagePull", count),
            ("Failed", "Error: ImagePullBackOff", count),
        ];
        let got = unpullable(&waiting(node, reason, &message), &warnings);
        assert_eq!(got.is_some(), terminal, "{got:?}");
        if let Some(u) = got {
            assert_eq!(
                (u.failure, u.failures, u.node.as_str()),
                (Failure::Refused, count, node)
            );
            let problem = u.problem();
            for needle in [
                AGNHOST,
                node,
                "401 Unauthorized",
                "--image-pull-secret",
                "registry registry.k8s.io refused",
            ] {
                assert!(problem.contains(needle), "{needle}: {problem}");
            }
        }
    }

    /// A transient failure and then a different error: the count is per image, the words the
    /// latest; an unreachable registry names the mirror flags; a platform mismatch is never an
    /// unpullable image (it is the image's own answer); without events nothing is counted.
    #[test]
    fn the_words_are_the_latest_and_the_flag_follows_them() {
        let timeout = format!("Failed to pull image \"{AGNHOST}\": dial tcp 20.0.2.14:443: i/o timeout");
        let dns = format!("Failed to pull image \"{AGNHOST}\": dial tcp: lookup registry.k8s.io: no such host");
        let warnings = [("Failed", timeout.as_str(), 1), ("Failed", dns.as_str(), 2)];
        let u = unpullable(&waiting("win2022-1", "ErrImagePull", "x"), &warnings).expect("unpullable");
        assert_eq!((u.failure, u.failures), (Failure::Unreachable, 3));
        assert!(
            u.problem().contains("--image-registry-map registry.k8s.io=MIRROR"),
            "{}",
            u.problem()
        );
        let platform = format!("Failed to pull image \"{AGNHOST}\": no match for platform in manifest: not found");
        assert_eq!(
            unpullable(
                &waiting("win2025-1", "ErrImagePull", "x"),
                &[("Failed", platform.as_str(), 5)]
            ),
            None
        );
        assert_eq!(unpullable(&waiting("linux-1", "ErrImagePull", WORDS), &[]), None);
        assert_eq!(failures(&warnings, None), 3);
        assert_eq!(failures(&warnings, Some("other:1")), 0);
    }

    /// The terminal's summary: one line per registry and what it did, with the images, the
    /// nodes, the registry's own words and the flag.
    #[test]
    fn the_summary_groups_by_registry() {
        let u = |image: &str, node: &str, failure: Failure, words: &str| Unpullable {
            image: image.into(),
            node: node.into(),
            failure,
            words: words.into(),
            failures: 3,
        };
        let a = u(AGNHOST, "linux-1", Failure::Refused, WORDS);
        let b = u(AGNHOST, "win2019-1", Failure::Refused, WORDS);
        let c = u(
            "mcr.microsoft.com/windows/nanoserver:ltsc2022",
            "win2022-1",
            Failure::Unreachable,
            "rpc error: code = Unknown desc = failed to pull and unpack image \"x\": failed to resolve reference \"x\": failed to do request: Head \"https://mcr.microsoft.com/v2/x\": dial tcp: lookup mcr.microsoft.com: no such host",
        );
        let lines = summary(&[&a, &b, &c]);
        assert_eq!(lines.len(), 2, "{lines:#?}");
        assert!(lines[0].starts_with("  registry mcr.microsoft.com did not answer for mcr.microsoft.com/windows/nanoserver:ltsc2022 on win2022-1 (dial tcp: lookup mcr.microsoft.com: no such host): "), "{}", lines[0]);
        assert!(
            lines[0].ends_with(
                "--image-registry-map mcr.microsoft.com=MIRROR (or --image-registry MIRROR for every image)"
            ),
            "{}",
            lines[0]
        );
        assert!(lines[1].contains(&format!("refused the pull for {AGNHOST} on linux-1, win2019-1 (unexpected status from HEAD request to https://registry.k8s.io/v2/e2e-test-images/agnhost/manifests/2.53: 401 Unauthorized)")), "{}", lines[1]);
        assert!(lines[1].contains("--image-pull-secret"), "{}", lines[1]);
    }
}
