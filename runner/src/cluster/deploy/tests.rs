//! The deploy stage's unit tests: stamping, placement and readiness of the fixtures.
use super::*;
use rstest::rstest;

/// The scheduler's messages: lasting reasons settle a fixture, pod slots and a node's
/// transient taints are waited out; other nodes' selector mismatches say nothing.
#[rstest]
#[case::port_taken(
    "0/4 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.",
    false
)]
#[case::too_many_pods(
    "0/4 nodes are available: 1 Too many pods, 3 node(s) didn't match Pod's node affinity/selector.",
    true
)]
#[case::eks_out_of_ips(
    "0/3 nodes are available: 1 Insufficient vpc.amazonaws.com/PrivateIPv4Address, 2 node(s) didn't match Pod's node affinity/selector.",
    true
)]
#[case::not_ready(
    "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 2 node(s) didn't match Pod's node affinity/selector.",
    true
)]
#[case::no_cpu(
    "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector.",
    false
)]
#[case::only_selectors(
    "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.",
    false
)]
fn unschedulable_reasons(#[case] message: &str, #[case] transient: bool) {
    assert_eq!(transient_unschedulable(message), transient);
}

#[test]
fn a_pending_pod_says_why_the_scheduler_left_it() {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "hp-1"},
        "spec": {"containers": []},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/4 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."}]}
    }))
    .expect("pod");
    assert_eq!(
        waiting_on(Some(&pod), "linux-1", &[]),
        "for linux-1: unschedulable: 0/4 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
    );
    let scheduled: Pod = serde_json::from_value(json!({
        "metadata": {"name": "hp-1"},
        "spec": {"containers": [], "nodeName": "linux-1"},
        "status": {"phase": "Pending", "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ContainerCreating"}}}]}
    }))
    .expect("pod");
    assert_eq!(scheduling_failure(&scheduled, &[]), None);
    assert_eq!(
        waiting_on(Some(&scheduled), "linux-1", &[]),
        "on linux-1: ContainerCreating"
    );
    assert_eq!(waiting_on(None, "win2022-1", &[]), "on win2022-1: not created yet");
}
use serde_json::json;

/// The hostPort server is the core server's netexec container alone with the hostPort on
/// its TCP port; no service of the run selects it.
#[test]
fn the_host_port_server_is_apart_from_the_core_server() {
    let fixtures = Fixtures::load(None).expect("embedded fixtures");
    let server = fixtures.get("netexec-server").expect("server fixture");
    let docs = server.pods.values().chain(server.windows_builds.iter().map(|(_, p)| p));
    for doc in docs {
        assert!(
            !doc.to_string().contains("hostPort"),
            "the core server publishes no hostPort"
        );
        let hp = host_port_pod(doc);
        let containers = hp["spec"]["containers"].as_array().expect("containers");
        assert_eq!(containers.len(), 1);
        let ports = containers[0]["ports"].as_array().expect("ports");
        let tcp: Vec<_> = ports.iter().filter(|p| p["protocol"] == "TCP").collect();
        assert!(tcp.iter().all(|p| p["hostPort"] == json!(HOST_PORT)), "{ports:?}");
        assert!(
            ports
                .iter()
                .filter(|p| p["protocol"] == "UDP")
                .all(|p| p.get("hostPort").is_none())
        );
        assert_eq!(hp["metadata"]["labels"]["app.kubernetes.io/component"], "host-port");
    }
}

fn event(pod: &str, kind: &str, reason: &str, count: i32) -> Event {
    serde_json::from_value(json!({
        "metadata": {"name": format!("{pod}.1")},
        "involvedObject": {"kind": "Pod", "name": pod},
        "type": kind,
        "reason": reason,
        "message": "Failed to create pod sandbox: (0xc0370101)",
        "count": count,
    }))
    .expect("event")
}

/// Pod cli-3's sandbox failures as the pod watch keeps them: its Warning events only.
fn failed_sandbox(events: &[Event]) -> Option<String> {
    sandbox_failure(&Warning::about(events, "cli-3"))
}

#[test]
fn a_sandbox_that_keeps_failing_settles_the_pod() {
    let retried = [event("cli-3", "Warning", "FailedCreatePodSandBox", 3)];
    assert_eq!(
        failed_sandbox(&retried).as_deref(),
        Some("FailedCreatePodSandBox (3 times): Failed to create pod sandbox: (0xc0370101)")
    );
    // The most repeated of several counts.
    let twice = [
        event("cli-3", "Warning", "FailedCreatePodSandBox", 4),
        event("cli-3", "Warning", "FailedCreatePodSandBox", 1),
    ];
    assert_eq!(
        failed_sandbox(&twice).as_deref(),
        Some("FailedCreatePodSandBox (4 times): Failed to create pod sandbox: (0xc0370101)")
    );
    // Once may be transient (e.g. the CNI still starting); other pods and reasons do not count.
    assert_eq!(
        failed_sandbox(&[event("cli-3", "Warning", "FailedCreatePodSandBox", 1)]),
        None
    );
    assert_eq!(
        failed_sandbox(&[event("cli-2", "Warning", "FailedCreatePodSandBox", 3)]),
        None
    );
    assert_eq!(failed_sandbox(&[event("cli-3", "Warning", "FailedMount", 5)]), None);
    assert_eq!(
        failed_sandbox(&[event("cli-3", "Normal", "FailedCreatePodSandBox", 5)]),
        None
    );
}

/// An unscheduled pod whose condition says nothing is explained by its most repeated
/// FailedScheduling warning; a scheduled one by none.
#[test]
fn an_unscheduled_pod_is_explained_by_its_failed_scheduling_warning() {
    let pending: Pod = serde_json::from_value(json!({
        "metadata": {"name": "hp-1"},
        "spec": {"containers": []},
        "status": {"phase": "Pending"}
    }))
    .expect("pod");
    let mut warning = event("hp-1", "Warning", "FailedScheduling", 2);
    warning.message = Some("0/4 nodes are available: 1 Too many pods.".into());
    let other = event("hp-1", "Warning", "FailedMount", 7);
    let warnings = Warning::about(&[other, warning.clone()], "hp-1");
    assert_eq!(
        scheduling_failure(&pending, &warnings).as_deref(),
        Some("0/4 nodes are available: 1 Too many pods.")
    );
    assert_eq!(
        waiting_on(Some(&pending), "linux-1", &[warning]),
        "for linux-1: unschedulable: 0/4 nodes are available: 1 Too many pods."
    );
    assert_eq!(scheduling_failure(&pending, &[]), None);
}
