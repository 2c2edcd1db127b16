//! Where each image stands on each node of a group, from what the API shows: the group's pods
//! (which node, scheduled or not, each container's state and imageID) and the events of those
//! pods and of their DaemonSet.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Event, Pod};

use super::daemonset::{GROUP_LABEL, containers};
use super::groups::Group;
use super::pulls::{ATTEMPTS, Cause, Pull, Step, read_event};

/// One look at the pre-pull's pods and the events in its namespace.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    pub pods: Vec<Pod>,
    pub events: Vec<Event>,
}

/// The node a pod is for: where it is bound, else the node its DaemonSet pinned it to.
fn pod_node(p: &Pod) -> Option<&str> {
    let spec = p.spec.as_ref()?;
    if let Some(n) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        return Some(n);
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    let values = terms.first()?.match_fields.as_ref()?.first()?.values.as_ref()?;
    match values.as_slice() {
        [one] => Some(one.as_str()),
        _ => None,
    }
}

/// How often an event happened (core `count`, or the events.k8s.io series' count).
fn times(e: &Event) -> u32 {
    let count = e
        .count
        .unwrap_or(1)
        .max(e.series.as_ref().and_then(|s| s.count).unwrap_or(1));
    u32::try_from(count).unwrap_or(1).max(1)
}

/// `spec.containers{NAME}` → NAME.
fn container_of(field_path: &str) -> Option<&str> {
    field_path.strip_prefix("spec.containers{")?.strip_suffix('}')
}

/// Each image of `group` on `node`, in the group's image order.
pub fn node_pulls(group: &Group, daemonset: &str, node: &str, seen: &Seen) -> Vec<(String, Pull)> {
    let list = containers(group);
    let by_container: BTreeMap<&str, &str> = list.iter().map(|(c, i)| (c.as_str(), i.as_str())).collect();
    let pods: Vec<&Pod> = seen
        .pods
        .iter()
        .filter(|p| {
            p.metadata.labels.as_ref().and_then(|l| l.get(GROUP_LABEL)) == Some(&group.name)
                && pod_node(p) == Some(node)
        })
        .collect();
    let uids: BTreeSet<&str> = pods.iter().filter_map(|p| p.metadata.uid.as_deref()).collect();
    let mut steps: BTreeMap<&str, Vec<Step>> = BTreeMap::new();
    for e in &seen.events {
        let o = &e.involved_object;
        if o.kind.as_deref() != Some("Pod") || !o.uid.as_deref().is_some_and(|u| uids.contains(u)) {
            continue;
        }
        let Some((named, step)) = read_event(
            e.reason.as_deref().unwrap_or_default(),
            e.message.as_deref().unwrap_or_default(),
            times(e),
        ) else {
            continue;
        };
        let image = o
            .field_path
            .as_deref()
            .and_then(container_of)
            .and_then(|c| by_container.get(c).copied())
            .unwrap_or(named.as_str());
        if let Some(known) = group.images.iter().find(|i| i.as_str() == image) {
            steps.entry(known.as_str()).or_default().push(step);
        }
    }
    let not_created = not_created(daemonset, seen);
    list.iter()
        .map(|(container, image)| {
            let status = pods
                .iter()
                .filter_map(|p| p.status.as_ref()?.container_statuses.as_ref())
                .flatten()
                .find(|s| &s.name == container);
            let image_id = status.is_some_and(|s| !s.image_id.is_empty());
            let waiting = status.and_then(|s| s.state.as_ref()?.waiting.as_ref());
            let refused =
                waiting.filter(|w| matches!(w.reason.as_deref(), Some("InvalidImageName" | "ErrImageNeverPull")));
            let own = steps.get(image.as_str()).map(Vec::as_slice).unwrap_or_default();
            let mut pull = Pull::from_steps(
                own,
                image_id,
                &waiting_for(&pods, waiting.and_then(|w| w.reason.clone())),
            );
            if let (false, Some(w)) = (pull.settled(), refused) {
                pull = Pull::Failed {
                    cause: Cause::Invalid,
                    attempts: 1,
                    words: w.message.clone().or_else(|| w.reason.clone()).unwrap_or_default(),
                };
            }
            if pods.is_empty()
                && let Some((count, words)) = &not_created
            {
                pull = if *count >= ATTEMPTS {
                    Pull::Failed {
                        cause: Cause::NotCreated,
                        attempts: *count,
                        words: words.clone(),
                    }
                } else {
                    Pull::Waiting(format!("no pod yet (the DaemonSet's pod creation failed: {words})"))
                };
            }
            (image.clone(), pull)
        })
        .collect()
}

/// The DaemonSet's failed pod creations: how many, and the last words (FailedCreate, "Error
/// creating: …", kubernetes `pkg/controller/controller_utils.go`).
fn not_created(daemonset: &str, seen: &Seen) -> Option<(u32, String)> {
    let mut count = 0u32;
    let mut words = None;
    for e in &seen.events {
        let o = &e.involved_object;
        if o.kind.as_deref() == Some("DaemonSet")
            && o.name.as_deref() == Some(daemonset)
            && e.reason.as_deref() == Some("FailedCreate")
        {
            count = count.saturating_add(times(e));
            words = e.message.clone();
        }
    }
    words.map(|w| (count, w))
}

/// Why no pull began yet, for a node's pods and its container's waiting reason.
fn waiting_for(pods: &[&Pod], reason: Option<String>) -> String {
    let Some(pod) = pods.first() else {
        return "no pod yet".into();
    };
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if !bound {
        let why = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")
            .and_then(|c| c.message.clone());
        return match why {
            Some(m) => format!("not scheduled: {m}"),
            None => "not scheduled yet".into(),
        };
    }
    match reason {
        Some(r) => format!("waiting ({r})"),
        None => "waiting for the kubelet".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixcheck_reports::Os;
    use serde_json::json;
    use std::time::Duration;

    fn group() -> Group {
        Group {
            name: "windows-20348".into(),
            os: Os::Windows,
            arch: "amd64".into(),
            build: Some(20348),
            pulls_as: Some(20348),
            nodes: vec!["win2022-1".into()],
            node_selector: BTreeMap::new(),
            images: vec!["r/agnhost:2.53".into(), "r/nanoserver:ltsc2022".into()],
            left_out: Vec::new(),
        }
    }

    fn pod(uid: &str, node: Option<&str>, statuses: serde_json::Value) -> Pod {
        let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["win2022-1"]}]}]}}});
        serde_json::from_value(json!({
            "metadata": {"name": format!("p-{uid}"), "uid": uid, "labels": {GROUP_LABEL: "windows-20348"}},
            "spec": {"nodeName": node, "affinity": affinity, "containers": []},
            "status": {"containerStatuses": statuses,
                "conditions": [{"type": "PodScheduled", "status": "False", "message": "0/4 nodes are available"}]},
        }))
        .expect("pod")
    }

    fn event(kind: &str, uid: &str, field: Option<&str>, reason: &str, message: &str, count: i32) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": format!("e-{reason}-{count}")},
            "involvedObject": {"kind": kind, "uid": uid, "name": "prepull-windows-20348-x", "fieldPath": field},
            "reason": reason, "message": message, "count": count,
        }))
        .expect("event")
    }

    #[test]
    fn events_and_statuses_give_each_image_its_state() {
        let seen = Seen {
            pods: vec![pod(
                "u1",
                Some("win2022-1"),
                json!([{"name": "c1-nanoserver-ltsc2022", "ready": false, "restartCount": 0, "image": "", "imageID": "",
                        "state": {"waiting": {"reason": "ErrImagePull"}}}]),
            )],
            events: vec![
                event(
                    "Pod",
                    "u1",
                    Some("spec.containers{c0-agnhost-2-53}"),
                    "Pulling",
                    "Pulling image \"r/agnhost:2.53\"",
                    1,
                ),
                event(
                    "Pod",
                    "u1",
                    Some("spec.containers{c0-agnhost-2-53}"),
                    "Pulled",
                    "Successfully pulled image \"r/agnhost:2.53\" in 2m10.5s (2m10.5s including waiting). Image size: 1 bytes.",
                    1,
                ),
                event(
                    "Pod",
                    "u1",
                    Some("spec.containers{c1-nanoserver-ltsc2022}"),
                    "Failed",
                    "Failed to pull image \"r/nanoserver:ltsc2022\": failed to resolve reference: 401 Unauthorized",
                    3,
                ),
                event(
                    "Pod",
                    "other",
                    None,
                    "Pulled",
                    "Container image \"r/nanoserver:ltsc2022\" already present on machine",
                    1,
                ),
            ],
        };
        let pulls = node_pulls(&group(), "prepull-windows-20348-x", "win2022-1", &seen);
        assert_eq!(
            pulls[0],
            (
                "r/agnhost:2.53".into(),
                Pull::Pulled(Some(Duration::from_millis(130_500)))
            )
        );
        assert_eq!(
            pulls[1],
            (
                "r/nanoserver:ltsc2022".into(),
                Pull::Failed {
                    cause: Cause::Refused,
                    attempts: 3,
                    words: "failed to resolve reference: 401 Unauthorized".into()
                }
            ),
            "another pod's events do not count"
        );
    }

    #[test]
    fn an_unscheduled_pod_says_why() {
        let seen = Seen {
            pods: vec![pod("u1", None, json!([]))],
            events: Vec::new(),
        };
        let pulls = node_pulls(&group(), "ds", "win2022-1", &seen);
        assert_eq!(
            pulls[0].1,
            Pull::Waiting("not scheduled: 0/4 nodes are available".into())
        );
    }

    #[test]
    fn a_daemonset_that_cannot_create_the_pod_fails_the_node_after_three_tries() {
        let words = "pods \"x\" is forbidden: violates PodSecurity \"restricted:latest\"";
        let once = Seen {
            pods: Vec::new(),
            events: vec![event(
                "DaemonSet",
                "d",
                None,
                "FailedCreate",
                &format!("Error creating: {words}"),
                1,
            )],
        };
        let mut e = event(
            "DaemonSet",
            "d",
            None,
            "FailedCreate",
            &format!("Error creating: {words}"),
            3,
        );
        e.involved_object.name = Some("ds".into());
        let thrice = Seen {
            pods: Vec::new(),
            events: vec![e],
        };
        let mut first = once.clone();
        first.events[0].involved_object.name = Some("ds".into());
        assert!(
            matches!(&node_pulls(&group(), "ds", "win2022-1", &first)[0].1, Pull::Waiting(w) if w.contains("forbidden"))
        );
        assert!(matches!(
            &node_pulls(&group(), "ds", "win2022-1", &thrice)[0].1,
            Pull::Failed {
                cause: Cause::NotCreated,
                attempts: 3,
                ..
            }
        ));
        assert_eq!(
            node_pulls(&group(), "ds", "win2022-1", &Seen::default())[0].1,
            Pull::Waiting("no pod yet".into())
        );
    }

    #[test]
    fn an_image_id_without_events_counts_as_pulled() {
        let seen = Seen {
            pods: vec![pod(
                "u1",
                Some("win2022-1"),
                json!([{"name": "c0-agnhost-2-53", "ready": true, "restartCount": 0, "image": "r/agnhost:2.53",
                        "imageID": "r/agnhost@sha256:1", "state": {"running": {}}}]),
            )],
            events: Vec::new(),
        };
        let pulls = node_pulls(&group(), "ds", "win2022-1", &seen);
        assert_eq!(pulls[0].1, Pull::Pulled(None));
        assert_eq!(pulls[1].1, Pull::Waiting("waiting for the kubelet".into()));
    }
}
