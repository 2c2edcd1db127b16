//! How long a fixture pod took to start on its node — each image's pull, read from the kubelet's
//! `Pulled` event, and the time from scheduling to its sandbox and to Ready, read from the pod's
//! conditions — and what a pod still waiting is pulling: the start-up figures operators ask
//! for on Windows pools (Server Core images pull for minutes).
//!
//! Texts, from upstream (kubernetes `pkg/kubelet/images/image_manager.go`): `Pulling image
//! "<image>"` when a pull starts; `Successfully pulled image "<image>" in <duration> (<duration>
//! including waiting). Image size: <n> bytes.` when it ends, the duration printed as Go prints a
//! `time.Duration` (`2m10.512s`, `845ms`); `Container image "<image>" already present on
//! machine` when no pull was needed. Conditions (kubernetes `pkg/kubelet/status/generate.go`):
//! `PodScheduled`, `PodReadyToStartContainers` (from 1.29; the sandbox and its network are up),
//! `Ready`.

use k8s_openapi::api::core::v1::{Event, Pod};

pub use mixcheck_reports::facts::{ImagePull, PodStartup as Startup};

/// The events about pod `name`, oldest first.
fn about<'e>(events: &'e [Event], name: &str) -> Vec<&'e Event> {
    let mut mine: Vec<&Event> = events
        .iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .collect();
    mine.sort_by_key(|e| e.last_timestamp.as_ref().map(|t| t.0));
    mine
}

/// The image quoted in an event message after `prefix` (`Pulling image "x"`).
fn quoted_image<'m>(message: &'m str, prefix: &str) -> Option<&'m str> {
    let rest = message.strip_prefix(prefix)?.strip_prefix('"')?;
    rest.split('"').next()
}

/// How pod `pod` started, from its conditions and the namespace's `events`.
pub fn of(pod: &Pod, events: &[Event]) -> Startup {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let mut pulls: Vec<ImagePull> = Vec::new();
    for e in about(events, &name) {
        let message = e.message.as_deref().unwrap_or("");
        let pull = match e.reason.as_deref() {
            Some("Pulled") => {
                if let Some(image) = quoted_image(message, "Successfully pulled image ") {
                    let ms = message
                        .split_once(" in ")
                        .and_then(|(_, rest)| rest.split_whitespace().next())
                        .and_then(|d| crate::cluster::duration::parse_go(d.trim_end_matches([',', ')'])))
                        .and_then(|d| u64::try_from(d.as_millis()).ok());
                    Some(ImagePull {
                        image: image.to_string(),
                        pull_ms: ms,
                    })
                } else {
                    quoted_image(message, "Container image ").map(|image| ImagePull {
                        image: image.to_string(),
                        pull_ms: None,
                    })
                }
            }
            _ => None,
        };
        if let Some(p) = pull
            && !pulls.iter().any(|q| q.image == p.image)
        {
            pulls.push(p);
        }
    }
    let since_scheduled = |kind: &str| {
        let conditions = pod.status.as_ref()?.conditions.as_ref()?;
        let at = |t: &str| {
            conditions
                .iter()
                .find(|c| c.type_ == t && c.status == "True")
                .and_then(|c| c.last_transition_time.as_ref())
                .map(|t| t.0)
        };
        let (from, to) = (at("PodScheduled")?, at(kind)?);
        u64::try_from(to.as_millisecond() - from.as_millisecond()).ok()
    };
    Startup {
        pod: name,
        pulls,
        sandbox_ms: since_scheduled("PodReadyToStartContainers"),
        ready_ms: since_scheduled("Ready"),
    }
}

/// What pod `name` is pulling now: the image of its latest `Pulling` event with no `Pulled` or
/// `Failed` after it, and when that pull started (milliseconds since the epoch).
pub fn pulling(events: &[Event], name: &str) -> Option<(String, i64)> {
    let mut current: Option<(String, i64)> = None;
    for e in about(events, name) {
        let message = e.message.as_deref().unwrap_or("");
        match e.reason.as_deref() {
            Some("Pulling") => {
                if let (Some(image), Some(at)) = (quoted_image(message, "Pulling image "), e.last_timestamp.as_ref()) {
                    current = Some((image.to_string(), at.0.as_millisecond()));
                }
            }
            Some("Pulled" | "Failed" | "BackOff") => current = None,
            _ => {}
        }
    }
    current
}

/// How each of the run's fixture pods (`placed`: node, pod name) started, by node: the pods as
/// the run's pod watch (`watch`) sees them, and the namespace's `Pulled` events, read in chunks
/// and kept by pod (at 5,000 nodes the namespace holds ten thousand pods and several events
/// each). Unreadable, nothing (the figures are a report's extra, never a verdict's).
pub async fn of_fixtures<'p>(
    watch: &crate::cluster::podwatch::PodWatch,
    client: &kube::Client,
    ns: &str,
    placed: impl IntoIterator<Item = (&'p String, &'p str)>,
) -> std::collections::BTreeMap<String, Vec<Startup>> {
    use kube::api::{Api, ListParams};
    let placed: Vec<(&String, &str)> = placed.into_iter().collect();
    let wanted: std::collections::HashSet<&str> = placed.iter().map(|(_, name)| *name).collect();
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let mut pulled: std::collections::HashMap<String, Vec<Event>> = std::collections::HashMap::new();
    let params = ListParams::default().fields("reason=Pulled");
    let listed = crate::cluster::chunks::each(&events, &params, |e| {
        if let Some(pod) = e.involved_object.name.as_deref().filter(|p| wanted.contains(p)) {
            pulled.entry(pod.to_string()).or_default().push(e);
        }
    });
    if !matches!(
        tokio::time::timeout(std::time::Duration::from_secs(20), listed).await,
        Ok(Ok(()))
    ) {
        return std::collections::BTreeMap::new();
    }
    let mut out: std::collections::BTreeMap<String, Vec<Startup>> = std::collections::BTreeMap::new();
    for (node, name) in placed {
        if let Some(pod) = watch.view(name).pod {
            let own = pulled.get(name).map(Vec::as_slice).unwrap_or_default();
            out.entry(node.clone()).or_default().push(of(&pod, own));
        }
    }
    out
}

/// `repo/name:tag` of an image reference without its registry, for a progress line.
pub fn short_image(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, rest)) if first.contains('.') || first.contains(':') || first == "localhost" => rest,
        _ => image,
    }
    .rsplit('/')
    .next()
    .unwrap_or(image)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn event(pod: &str, reason: &str, message: &str, at: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": format!("{pod}.{reason}.{at}")},
            "involvedObject": {"kind": "Pod", "name": pod},
            "reason": reason, "message": message, "type": "Normal",
            "lastTimestamp": at,
        }))
        .expect("event")
    }

    #[test]
    fn a_pods_pulls_and_start_up_are_read_from_its_events_and_conditions() {
        let events = vec![
            event(
                "srv-2",
                "Pulling",
                "Pulling image \"registry.k8s.io/e2e-test-images/agnhost:2.53\"",
                "2026-12-02T10:00:00Z",
            ),
            event(
                "srv-2",
                "Pulled",
                "Successfully pulled image \"registry.k8s.io/e2e-test-images/agnhost:2.53\" in 2m10.512s (2m10.512s including waiting). Image size: 45321876 bytes.",
                "2026-12-02T10:02:10Z",
            ),
            event(
                "srv-2",
                "Pulled",
                "Container image \"registry.k8s.io/pause:3.10\" already present on machine",
                "2026-12-02T10:02:11Z",
            ),
            event(
                "srv-3",
                "Pulling",
                "Pulling image \"mcr.microsoft.com/windows/servercore:ltsc2025\"",
                "2026-12-02T10:00:05Z",
            ),
        ];
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "srv-2"},
            "status": {"conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-02T09:59:58Z"},
                {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": "2026-12-02T10:00:00Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-02T10:02:14Z"}
            ]}
        }))
        .expect("pod");
        let s = of(&pod, &events);
        assert_eq!(
            s.pulls,
            vec![
                ImagePull {
                    image: "registry.k8s.io/e2e-test-images/agnhost:2.53".into(),
                    pull_ms: Some(130_512)
                },
                ImagePull {
                    image: "registry.k8s.io/pause:3.10".into(),
                    pull_ms: None
                },
            ]
        );
        assert_eq!(s.sandbox_ms, Some(2_000));
        assert_eq!(s.ready_ms, Some(136_000));
        // srv-2's pull is over; srv-3 is pulling Server Core since 10:00:05.
        assert_eq!(pulling(&events, "srv-2"), None);
        let (image, since) = pulling(&events, "srv-3").expect("pulling");
        assert_eq!(short_image(&image), "servercore:ltsc2025");
        let expected: k8s_openapi::jiff::Timestamp = "2026-12-02T10:00:05Z".parse().expect("t");
        assert_eq!(since, expected.as_millisecond());
    }

    #[rstest]
    #[case("mcr.microsoft.com/windows/servercore:ltsc2025", "servercore:ltsc2025")]
    #[case("registry.k8s.io/e2e-test-images/agnhost:2.53", "agnhost:2.53")]
    #[case("busybox:1.36", "busybox:1.36")]
    #[case("harbor.corp:8443/k8s/pause:3.10", "pause:3.10")]
    fn images_are_shortened_for_the_progress_line(#[case] image: &str, #[case] short: &str) {
        assert_eq!(short_image(image), short);
    }
}
