//! The real-cluster behaviours a topology can switch on (all off by default): an admission
//! policy denying host privileges (`admission.deny`, refused as `admission.by` refuses them)
//! and privileged namespaces (`admission.privilegedNamespaces`), the kubelet's `maxPods`, slow Windows
//! pulls and the node's image cache (`timing.windowsPull`), the transient Warning events on the
//! way to Running (`timing.transientEvents`), and node addresses the machine cannot reach
//! (`network.nodeAddressesReachable`).

use crate::common;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Namespace, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use rstest::rstest;
use serde_json::{Value, json};
use simcluster::{Enforcement, Privilege, Topology};

const WIN_TOLERATION: &str = r#"{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}"#;

fn toleration() -> Value {
    serde_json::from_str(WIN_TOLERATION).expect("toleration")
}

use common::pod;

use common::events_for;

async fn running(pods: &Api<Pod>, name: &str) -> Pod {
    common::eventually(&format!("pod {name} Running"), || async {
        pods.get(name).await.ok().filter(|p| common::phase(p) == "Running")
    })
    .await
}

fn denying() -> Topology {
    let mut t = Topology::default_cluster().instant().on_wall_clock();
    t.admission.deny = vec![Privilege::HostPort, Privilege::HostNetwork, Privilege::HostProcess];
    t
}

fn denying_by(by: Enforcement, deny: &[Privilege]) -> Topology {
    let mut t = denying();
    t.admission.by = by;
    t.admission.deny = deny.to_vec();
    t
}

/// The pods every enforcer is asked about: one per host privilege (a HostProcess pod needs
/// `hostNetwork` too, as validation requires), and one without any.
fn host_pod(name: &str) -> Pod {
    let busybox = |extra: Value| {
        let mut c = json!({"name": "c", "image": "busybox:1.36"});
        if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
            c.extend(extra.clone());
        }
        c
    };
    let spec = match name {
        "host-port" => json!({"containers": [busybox(json!({"ports": [{"containerPort": 80, "hostPort": 8080}]}))]}),
        "host-network" => json!({"hostNetwork": true, "containers": [busybox(json!({}))]}),
        "host-process" => {
            json!({"securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
            "hostNetwork": true, "nodeSelector": {"kubernetes.io/os": "windows"}, "tolerations": [toleration()],
            "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}]})
        }
        _ => json!({"containers": [busybox(json!({"ports": [{"containerPort": 80}]}))]}),
    };
    pod(name, spec)
}

const GATEKEEPER: &str = "admission webhook \"validation.gatekeeper.sh\" denied the request: ";
const NETWORKING: &str = "The specified hostNetwork and hostPort are not allowed";
const ALL_DENIED: &str = "Allowed values: {\"hostNetwork\": false, \"max\": 0, \"min\": 0}";
const VAP_NAMESPACES: &str = "ValidatingAdmissionPolicy 'cpol-disallow-host-namespaces' with binding 'cpol-disallow-host-namespaces-binding' denied request: Sharing the host namespaces is disallowed. The fields spec.hostNetwork, spec.hostIPC, and spec.hostPID must be unset or set to `false`.";
const VAP_PORTS: &str = "ValidatingAdmissionPolicy 'cpol-disallow-host-ports' with binding 'cpol-disallow-host-ports-binding' denied request: Use of host ports is disallowed. The fields spec.containers[*].ports[*].hostPort, spec.initContainers[*].ports[*].hostPort, and spec.ephemeralContainers[*].ports[*].hostPort must either be unset or set to `0`.";
const VAP_PROCESS: &str = "ValidatingAdmissionPolicy 'cpol-disallow-host-process' with binding 'cpol-disallow-host-process-binding' denied request: HostProcess containers are disallowed. The field spec.containers[*].securityContext.windowsOptions.hostProcess, spec.initContainers[*].securityContext.windowsOptions.hostProcess, and spec.ephemeralContainers[*].securityContext.windowsOptions.hostProcess must either be undefined or set to `false`.";
const PSA: &str = "is forbidden: violates PodSecurity \"baseline:latest\": ";
const PSA_PROCESS: &str = "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)";

/// Creates `pod` in `ns`: None when admitted, else the refusal's (code, reason, message, the
/// message of its first cause).
async fn refusal(client: &kube::Client, ns: &str, pod: &Pod) -> Option<(u16, String, String, String)> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    match pods.create(&PostParams::default(), pod).await {
        Ok(_) => None,
        Err(kube::Error::Api(status)) => {
            let cause = status
                .details
                .as_ref()
                .and_then(|d| d.causes.first())
                .map(|c| c.message.clone())
                .unwrap_or_default();
            Some((status.code, status.reason.clone(), status.message.clone(), cause))
        }
        Err(other) => panic!("creating {}: {other}", pod.name_any()),
    }
}

/// `admission.deny` with each `admission.by` (real clusters: Gatekeeper or Azure Policy,
/// Kyverno's generated ValidatingAdmissionPolicies, Pod Security admission at baseline): a pod
/// using a host privilege in a user namespace is refused with that mechanism's status code,
/// reason and message; the same pods are created in kube-system; a pod without privileges is
/// created anywhere.
#[rstest]
#[case::webhook(Enforcement::Webhook, 403, "Forbidden", [
    format!("{GATEKEEPER}[psp-host-network-ports] {NETWORKING}, pod: host-port. {ALL_DENIED}"),
    format!("{GATEKEEPER}[psp-host-network-ports] {NETWORKING}, pod: host-network. {ALL_DENIED}"),
    format!("{GATEKEEPER}[psp-host-network-ports] {NETWORKING}, pod: host-process. {ALL_DENIED}\n[psp-windows-hostprocess] HostProcess containers are not allowed, pod: host-process"),
])]
#[case::validating_admission_policy(Enforcement::ValidatingAdmissionPolicy, 422, "Invalid", [
    format!("pods \"host-port\" is forbidden: {VAP_PORTS}"),
    format!("pods \"host-network\" is forbidden: {VAP_NAMESPACES}"),
    format!("pods \"host-process\" is forbidden: {VAP_NAMESPACES}"),
])]
#[case::pod_security(Enforcement::PodSecurity, 403, "Forbidden", [
    format!("pods \"host-port\" {PSA}hostPort (container \"c\" uses hostPort 8080)"),
    format!("pods \"host-network\" {PSA}host namespaces (hostNetwork=true)"),
    format!("pods \"host-process\" {PSA}host namespaces (hostNetwork=true), {PSA_PROCESS}"),
])]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_privileges_are_refused_as_the_enforcer_refuses_them(
    #[case] by: Enforcement,
    #[case] code: u16,
    #[case] reason: &str,
    #[case] messages: [String; 3],
) {
    let all = [Privilege::HostPort, Privilege::HostNetwork, Privilege::HostProcess];
    let (_cluster, client) = common::cluster_and_client(denying_by(by, &all), "team").await;
    for (name, message) in ["host-port", "host-network", "host-process"].into_iter().zip(messages) {
        let (got_code, got_reason, got_message, cause) = refusal(&client, "team", &host_pod(name))
            .await
            .unwrap_or_else(|| panic!("{name} admitted in team"));
        assert_eq!((got_code, got_reason.as_str()), (code, reason), "{name}: {got_message}");
        assert_eq!(got_message, message, "{name}");
        if by == Enforcement::ValidatingAdmissionPolicy {
            // The denial again as a cause, without the prefix.
            assert_eq!(format!("pods \"{name}\" is forbidden: {cause}"), got_message);
        }
        assert_eq!(
            refusal(&client, "kube-system", &host_pod(name)).await,
            None,
            "{name} in kube-system"
        );
    }
    assert_eq!(refusal(&client, "team", &host_pod("plain")).await, None);
}

/// Only the listed privileges are refused, whoever refuses them: with `deny: [hostProcess]` a
/// host-network or host-port pod is created, a HostProcess pod refused by its own check.
#[rstest]
#[case::webhook(Enforcement::Webhook, format!("{GATEKEEPER}[psp-windows-hostprocess] HostProcess containers are not allowed, pod: host-process"))]
#[case::validating_admission_policy(Enforcement::ValidatingAdmissionPolicy, format!("pods \"host-process\" is forbidden: {VAP_PROCESS}"))]
#[case::pod_security(Enforcement::PodSecurity, format!("pods \"host-process\" {PSA}{PSA_PROCESS}"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_privilege_not_denied_is_admitted(#[case] by: Enforcement, #[case] message: String) {
    let (_cluster, client) = common::cluster_and_client(denying_by(by, &[Privilege::HostProcess]), "team").await;
    for name in ["host-port", "host-network"] {
        assert_eq!(refusal(&client, "team", &host_pod(name)).await, None, "{name}");
    }
    let (_, _, got, _) = refusal(&client, "team", &host_pod("host-process"))
        .await
        .expect("host-process refused");
    assert_eq!(got, message);
}

/// Pod Security names the pod a controller would have created: the name generated from the
/// template's `generateName` (the registry generates it before validating admission), in the
/// controller's `FailedCreate` event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_security_names_the_generated_pod_of_a_controller() {
    let (_cluster, client) =
        common::cluster_and_client(denying_by(Enforcement::PodSecurity, &[Privilege::HostNetwork]), "team").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "team");
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {"replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"hostNetwork": true,
            "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}))
    .expect("deployment");
    deployments
        .create(&PostParams::default(), &d)
        .await
        .expect("deployment created");
    let events: Api<Event> = Api::namespaced(client.clone(), "team");
    let message = common::eventually("FailedCreate on the ReplicaSet", || async {
        events
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find_map(|e| (e.reason.as_deref() == Some("FailedCreate")).then(|| e.message.unwrap_or_default()))
    })
    .await;
    let (name, rest) = message
        .strip_prefix("Error creating: pods \"")
        .and_then(|m| m.split_once('"'))
        .unwrap_or_else(|| panic!("{message}"));
    assert_eq!(rest, format!(" {PSA}host namespaces (hostNetwork=true)"));
    // web-<template hash>-<five generated characters>
    let suffix = name.rsplit('-').next().unwrap_or_default();
    assert!(name.starts_with("web-") && suffix.len() == 5, "{name}");
}

/// A controller's pods are refused the same way, and the controller says so in a
/// `FailedCreate` Warning, as upstream's pod control reports it ("Error creating: …").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_controller_pod_is_a_failed_create_event() {
    let (_cluster, client) = common::cluster_and_client(denying(), "team").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "team");
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {"replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"hostNetwork": true,
            "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}))
    .expect("deployment");
    deployments
        .create(&PostParams::default(), &d)
        .await
        .expect("deployment created");
    let events: Api<Event> = Api::namespaced(client.clone(), "team");
    let message = common::eventually("FailedCreate on the ReplicaSet", || async {
        events
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find_map(|e| {
                (e.reason.as_deref() == Some("FailedCreate") && e.involved_object.kind.as_deref() == Some("ReplicaSet"))
                    .then(|| e.message.unwrap_or_default())
            })
    })
    .await;
    assert!(
        message.starts_with(
            "Error creating: admission webhook \"validation.gatekeeper.sh\" denied the request: [psp-host-network-ports]"
        ),
        "{message}"
    );
    let pods: Api<Pod> = Api::namespaced(client, "team");
    assert!(pods.list(&ListParams::default()).await.expect("pods").items.is_empty());
}

/// The network add-on runs whatever is denied, whoever refuses it: its DaemonSets' pods — host
/// network, HostProcess on Windows — are created in its own namespace (flannel's kube-flannel,
/// Calico's calico-system, ovn-kubernetes), which the policy leaves out like kube-system.
#[rstest]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_add_on_runs_whatever_is_denied(
    #[values("kubeadm-flannel-hostprocess", "kubeadm-calico", "ovn-kubernetes")] network: &str,
    #[values(
        Enforcement::Webhook,
        Enforcement::ValidatingAdmissionPolicy,
        Enforcement::PodSecurity
    )]
    by: Enforcement,
) {
    let (mut topology, ns) = match network {
        "ovn-kubernetes" => {
            let yaml = "name: t\nnetwork: {mode: transparent}\nnodes:\n- {name: linux-1, os: linux}\n\
                        - {name: win-a, os: windows, kernelVersion: 10.0.20348.2762}\n";
            (Topology::parse(yaml, "t.yaml").expect("topology"), "ovn-kubernetes")
        }
        profile => {
            let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("topologies")
                .join(format!("{profile}.yaml"));
            let ns = if profile == "kubeadm-calico" {
                "calico-system"
            } else {
                "kube-flannel"
            };
            (Topology::load(&path).expect("topology file"), ns)
        }
    };
    topology = topology.instant().on_wall_clock();
    topology.admission.by = by;
    topology.admission.deny = vec![Privilege::HostPort, Privilege::HostNetwork, Privilege::HostProcess];
    let (_cluster, client) = common::cluster_and_client(topology, "team").await;
    let daemonsets: Api<k8s_openapi::api::apps::v1::DaemonSet> = Api::namespaced(client.clone(), ns);
    common::eventually(&format!("every DaemonSet of {ns} has its pods"), || async {
        let list = daemonsets.list(&ListParams::default()).await.ok()?.items;
        let complete = |d: &k8s_openapi::api::apps::v1::DaemonSet| {
            d.status.as_ref().is_some_and(|s| {
                s.desired_number_scheduled > 0 && s.current_number_scheduled == s.desired_number_scheduled
            })
        };
        (!list.is_empty() && list.iter().all(complete)).then_some(())
    })
    .await;
    let events: Api<Event> = Api::namespaced(client, ns);
    let refused: Vec<String> = events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedCreate"))
        .filter_map(|e| e.message)
        .collect();
    assert!(refused.is_empty(), "{refused:?}");
}

/// The message Kyverno's `deny-privileged-profile` policy answers for namespace `name`, as the
/// API server relays it.
fn kyverno_denial(name: &str) -> String {
    format!(
        "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource Namespace//{name} was blocked due to the following policies \n\ndeny-privileged-profile:\n  check-privileged: Only cluster-admins may create Namespaces that allow setting the\n    privileged level.\n"
    )
}

fn namespace(name: &str, level: Option<&str>) -> Namespace {
    let labels = level.map_or_else(|| json!({}), |l| json!({"pod-security.kubernetes.io/enforce": l}));
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("namespace")
}

/// The (code, reason, message) of a refused namespace write.
fn refused<T: std::fmt::Debug>(got: Result<T, kube::Error>) -> (u16, String, String) {
    match got {
        Err(kube::Error::Api(status)) => (status.code, status.reason.clone(), status.message.clone()),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// `admission.privilegedNamespaces: false` (on its own, nothing denied): creating, replacing,
/// patching or applying a namespace into `pod-security.kubernetes.io/enforce=privileged` is
/// refused as the API server relays Kyverno's denial (400, no reason); baseline, restricted
/// and unlabelled namespaces are created; kube-system may carry the label. With the default
/// (true) nothing is refused.
#[rstest]
#[case::locked(false)]
#[case::open(true)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn privileged_namespaces_are_refused_by_a_policy(#[case] allowed: bool) {
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    topology.admission.privileged_namespaces = allowed;
    let (_cluster, client) = common::cluster_and_client(topology, "team").await;
    let namespaces: Api<Namespace> = Api::all(client);
    let pp = PostParams::default();
    for (name, level) in [
        ("ns-baseline", Some("baseline")),
        ("ns-restricted", Some("restricted")),
        ("ns-plain", None),
    ] {
        namespaces.create(&pp, &namespace(name, level)).await.expect(name);
    }
    let privileged = Some("privileged");
    let to_privileged = json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "privileged"}}});
    let writes = [
        (
            "ns-new",
            namespaces.create(&pp, &namespace("ns-new", privileged)).await.map(drop),
        ),
        (
            "ns-baseline",
            namespaces
                .patch("ns-baseline", &PatchParams::default(), &Patch::Merge(&to_privileged))
                .await
                .map(drop),
        ),
        (
            "ns-plain",
            namespaces
                .replace("ns-plain", &pp, &namespace("ns-plain", privileged))
                .await
                .map(drop),
        ),
        (
            "ns-applied",
            namespaces
                .patch(
                    "ns-applied",
                    &PatchParams::apply("test"),
                    &Patch::Apply(namespace("ns-applied", privileged)),
                )
                .await
                .map(drop),
        ),
    ];
    for (name, got) in writes {
        if allowed {
            got.unwrap_or_else(|e| panic!("{name}: {e}"));
        } else {
            assert_eq!(refused(got), (400, String::new(), kyverno_denial(name)), "{name}");
        }
    }
    namespaces
        .patch("kube-system", &PatchParams::default(), &Patch::Merge(&to_privileged))
        .await
        .expect("kube-system may be privileged");
    let level = |ns: Namespace| ns.labels().get("pod-security.kubernetes.io/enforce").cloned();
    let expected = if allowed { "privileged" } else { "baseline" };
    assert_eq!(
        level(namespaces.get("ns-baseline").await.expect("get")).as_deref(),
        Some(expected)
    );
}

fn active_on(pods: &[Pod], node: &str) -> usize {
    pods.iter()
        .filter(|p| {
            p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node)
                && !matches!(common::phase(p).as_str(), "Succeeded" | "Failed")
        })
        .count()
}

/// `nodes[].maxPods` (EKS Windows nodes: the ENI's IPv4 addresses minus one, docs.aws.amazon.com
/// /eks/latest/userguide/windows-support.html): a node never runs more non-terminated pods,
/// system pods included; the next waits Pending with "Too many pods" until one is deleted; a
/// pod bound past the scheduler is refused by the kubelet (OutOfpods, `predicate.go`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_pods_caps_the_pods_a_node_runs() {
    let yaml = "name: t\nnodes:\n  - {name: cp, os: linux, role: control-plane, taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]}\n  - {name: w, os: linux, maxPods: 8}\n";
    let topology = Topology::parse(yaml, "t.yaml").expect("topology");
    let (_cluster, client) = common::cluster_and_client(topology, "cap").await;
    let all: Api<Pod> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), "cap");
    let system = active_on(&all.list(&ListParams::default()).await.expect("pods").items, "w");
    assert!(system < 8, "{system} system pods on w");
    let wanted = 8 - system + 1;
    let spec = json!({"nodeSelector": {"kubernetes.io/hostname": "w"},
        "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]});
    for i in 0..wanted {
        pods.create(&PostParams::default(), &pod(&format!("p{i}"), spec.clone()))
            .await
            .expect("create");
    }
    let waiting = common::eventually("one pod left Pending with Too many pods", || async {
        let list = pods.list(&ListParams::default()).await.ok()?.items;
        let running = list.iter().filter(|p| common::phase(p) == "Running").count();
        let pending: Vec<&Pod> = list.iter().filter(|p| common::phase(p) == "Pending").collect();
        let message = pending
            .first()?
            .status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "PodScheduled")?
            .message
            .clone()?;
        (running == wanted - 1 && pending.len() == 1 && message.contains("Too many pods"))
            .then(|| pending[0].name_any())
    })
    .await;
    assert_eq!(
        active_on(&all.list(&ListParams::default()).await.expect("pods").items, "w"),
        8
    );
    let events = events_for(&client, "cap", &waiting).await;
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "FailedScheduling" && m.contains("Too many pods")),
        "{events:?}"
    );
    // Bound past the scheduler: the kubelet's admission refuses it.
    let bound = json!({"nodeName": "w", "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]});
    let (reason, message) = common::rejected(&pods, &pod("bound", bound)).await;
    assert_eq!(reason, "OutOfpods");
    assert_eq!(
        message,
        "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 8, capacity: 8"
    );
    // One goes: the waiting pod takes its place, and the node still runs 8.
    let victim = if waiting == "p0" { "p1" } else { "p0" };
    pods.delete(victim, &DeleteParams::default()).await.expect("delete");
    running(&pods, &waiting).await;
    assert!(active_on(&all.list(&ListParams::default()).await.expect("pods").items, "w") <= 8);
}

/// `timing.windowsPull`: a Windows image not on the node pulls that long (Pending,
/// ContainerCreating, Pulling then "Successfully pulled image … in …"); the next pod with the
/// image starts from the node's image cache without pulling; `imagePullPolicy: Always` asks the
/// registry again but finds the layers cached (kubernetes.io/docs/concepts/containers/images).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_images_pull_slowly_once_per_node() {
    // On the wall clock, so that the pull lasts its 3 s.
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    topology.timing.windows_pull = Duration::from_secs(3);
    let (_cluster, client) = common::cluster_and_client(topology, "pull").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "pull");
    let image = "mcr.microsoft.com/windows/servercore:ltsc2022";
    let spec = |policy: &str| {
        json!({"nodeSelector": {"kubernetes.io/hostname": "win2022-1"}, "tolerations": [toleration()],
            "containers": [{"name": "c", "image": image, "imagePullPolicy": policy, "command": ["ping", "-t", "localhost"]}]})
    };
    let started = Instant::now();
    pods.create(&PostParams::default(), &pod("first", spec("IfNotPresent")))
        .await
        .expect("create");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let during = pods.get("first").await.expect("pod");
    assert_eq!(common::phase(&during), "Pending");
    let waiting = during
        .status
        .and_then(|s| s.container_statuses)
        .and_then(|cs| cs.first().and_then(|c| c.state.clone()))
        .and_then(|s| s.waiting)
        .and_then(|w| w.reason);
    assert_eq!(waiting.as_deref(), Some("ContainerCreating"));
    running(&pods, "first").await;
    assert!(started.elapsed() >= Duration::from_secs(3), "{:?}", started.elapsed());
    let events = events_for(&client, "pull", "first").await;
    assert!(events.iter().any(|(r, _)| r == "Pulling"), "{events:?}");
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "Pulled" && m.starts_with(&format!("Successfully pulled image \"{image}\" in 3.0"))),
        "{events:?}"
    );
    for (name, policy, expected) in [
        ("second", "IfNotPresent", "already present on machine"),
        ("third", "Always", "Successfully pulled image"),
    ] {
        let started = Instant::now();
        pods.create(&PostParams::default(), &pod(name, spec(policy)))
            .await
            .expect("create");
        running(&pods, name).await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{name}: {:?}",
            started.elapsed()
        );
        let events = events_for(&client, "pull", name).await;
        assert!(
            events.iter().any(|(r, m)| r == "Pulled" && m.contains(expected)),
            "{name}: {events:?}"
        );
    }
}

/// `timing.transientEvents` (real-clusters: transient Warning events are normal): with it,
/// every pod still runs, and the chosen ones carry the events — a FailedMount of
/// kube-root-ca.crt in the new namespace (kubernetes/kubernetes#105204), one failed pull then
/// BackOff then Pulled, one FailedCreatePodSandBox on Windows; without it, none.
#[rstest]
#[case::on(true)]
#[case::off(false)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_events_leave_every_pod_running(#[case] on: bool) {
    let node_of = |i: usize| if i.is_multiple_of(2) { "linux-1" } else { "win2022-1" };
    let image_of = |i: usize| {
        if i.is_multiple_of(2) {
            "busybox:1.36"
        } else {
            "mcr.microsoft.com/windows/nanoserver:ltsc2022"
        }
    };
    // The first seed that picks a failed pull and a retried sandbox among these pods.
    let seed = (0..1000u64)
        .find(|seed| {
            let pulls = (0..8).any(|i| {
                simcluster::internals::transient::pull_attempt_fails(
                    *seed,
                    node_of(i),
                    "fresh",
                    &format!("p{i}"),
                    image_of(i),
                )
            });
            let sandboxes = (1..8).step_by(2).any(|i| {
                simcluster::internals::transient::sandbox_retried(*seed, node_of(i), "fresh", &format!("p{i}"))
            });
            pulls && sandboxes
        })
        .expect("a seed");
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    topology.timing.transient_events = on;
    topology.timing.seed = seed;
    let (_cluster, client) = common::cluster_and_client(topology, "fresh").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "fresh");
    let mut cases = Vec::new();
    for i in 0..8 {
        let (node, image) = (node_of(i), image_of(i));
        let extra = if i.is_multiple_of(2) {
            json!({"command": ["sleep", "infinity"]})
        } else {
            json!({"command": ["ping", "-t", "localhost"]})
        };
        let name = format!("p{i}");
        let mut container = json!({"name": "c", "image": image, "imagePullPolicy": "Always"});
        for (k, v) in extra.as_object().into_iter().flatten() {
            container[k] = v.clone();
        }
        let spec = json!({"nodeSelector": {"kubernetes.io/hostname": node}, "tolerations": [toleration()], "containers": [container]});
        pods.create(&PostParams::default(), &pod(&name, spec))
            .await
            .expect("create");
        cases.push((name, node, image));
    }
    let (mut pulls, mut sandboxes) = (0, 0);
    for (name, node, image) in &cases {
        running(&pods, name).await;
        let events = events_for(&client, "fresh", name).await;
        let has = |reason: &str, needle: &str| events.iter().any(|(r, m)| r == reason && m.contains(needle));
        let pull_fails = on && simcluster::internals::transient::pull_attempt_fails(seed, node, "fresh", name, image);
        let sandbox = on
            && node.starts_with("win")
            && simcluster::internals::transient::sandbox_retried(seed, node, "fresh", name);
        pulls += usize::from(pull_fails);
        sandboxes += usize::from(sandbox);
        assert_eq!(
            has("FailedMount", "object \"fresh\"/\"kube-root-ca.crt\" not registered"),
            on,
            "{name}: {events:?}"
        );
        assert_eq!(has("Failed", "i/o timeout"), pull_fails, "{name}: {events:?}");
        assert_eq!(
            has("BackOff", "Back-off pulling image"),
            pull_fails,
            "{name}: {events:?}"
        );
        assert!(has("Pulled", "Successfully pulled image"), "{name}: {events:?}");
        let sandbox_events = events.iter().filter(|(r, _)| r == "FailedCreatePodSandBox").count();
        assert_eq!(sandbox_events, usize::from(sandbox), "{name}: {events:?}");
        if sandbox {
            assert!(
                has("FailedCreatePodSandBox", "hcnCreateEndpoint failed in Win32"),
                "{events:?}"
            );
        }
    }
    if on {
        assert!(
            pulls > 0 && sandboxes > 0,
            "the seed picks none: pulls {pulls}, sandboxes {sandboxes}"
        );
    }
}

/// Runs `line` in `pod`: (exit code, stdout).
async fn exec(pods: &Api<Pod>, pod: &str, line: &str) -> (i32, String) {
    use tokio::io::AsyncReadExt;
    let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    let mut proc = pods
        .exec(pod, argv, &kube::api::AttachParams::default())
        .await
        .expect("exec");
    let mut stdout = proc.stdout().expect("stdout");
    let status = proc.take_status().expect("status");
    let mut out = String::new();
    let (read, status) = tokio::join!(stdout.read_to_string(&mut out), status);
    read.expect("read stdout");
    let ok = status.and_then(|s| s.status).as_deref() == Some("Success");
    (if ok { 0 } else { 1 }, out)
}

/// Neither a connection that answers nor a refusal at any of `ips` on any of `ports`, from this
/// machine (each address and port dialled at once).
async fn held_silent(ips: &[(String, std::net::Ipv4Addr)], ports: &[u16]) {
    let mut dials = Vec::new();
    for (name, ip) in ips {
        for &port in ports {
            let addr = std::net::SocketAddr::from((*ip, port));
            dials.push((format!("{name} {addr}"), common::dial(addr, "node")));
        }
    }
    for (what, got) in dials {
        common::assert_silent(&what, got.await.expect("connect task"));
    }
}

/// `network.nodeAddressesReachable: false` (real-clusters: node InternalIPs on AKS/EKS/GKE are
/// private to the VPC, and a firewall drops what a machine outside sends them): a client on
/// this machine is never refused at a node's address (a refusal proves a host answered) and
/// never gets an answer, at a NodePort or the kubelet's port; inside the cluster the same
/// addresses work as before — a node reaches a pod and another node's NodePort.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_node_addresses_neither_answer_nor_refuse() {
    // On the wall clock: the pods take their unscaled time.
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    topology.network.node_addresses_reachable = false;
    let (cluster, client) = common::cluster_and_client(topology, "priv").await;
    let ips: Vec<(String, std::net::Ipv4Addr)> = cluster.node_ips().to_vec();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "priv");
    let srv = json!({"nodeName": "linux-1", "containers": [{"name": "agnhost",
        "image": "registry.k8s.io/e2e-test-images/agnhost:2.52", "args": ["netexec", "--http-port=8080"]}]});
    pods.create(&PostParams::default(), &pod("srv", srv))
        .await
        .expect("srv");
    let host = json!({"nodeName": "win2022-1", "hostNetwork": true, "tolerations": [toleration()],
        "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
        "containers": [{"name": "host", "image": "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0",
            "command": ["powershell", "-Command", "Start-Sleep -Seconds 2147483"]}]});
    pods.create(&PostParams::default(), &pod("host", host))
        .await
        .expect("host");
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(client.clone(), "priv");
    let svc = serde_json::from_value(json!({"metadata": {"name": "srv"}, "spec": {"type": "NodePort",
        "selector": {"app": "srv"}, "ports": [{"port": 80, "targetPort": 8080}]}}))
    .expect("service");
    let svc = services.create(&PostParams::default(), &svc).await.expect("service");
    let node_port = svc
        .spec
        .and_then(|s| s.ports)
        .and_then(|p| p.first().and_then(|p| p.node_port))
        .and_then(|p| u16::try_from(p).ok())
        .expect("a NodePort");
    // At once, before the listeners caught up with the new Service: the firewall stood on its
    // NodePort before the API server stored it.
    held_silent(&ips, &[node_port]).await;
    let srv_ip = running(&pods, "srv")
        .await
        .status
        .and_then(|s| s.pod_ip)
        .expect("pod IP");
    running(&pods, "host").await;
    // From this machine: neither a connection nor a refusal, at the NodePort or the kubelet's port.
    held_silent(&ips, &[node_port, 10250]).await;
    // Inside the cluster: the Windows node reaches the pod and the Linux node's NodePort.
    let linux = ips
        .iter()
        .find(|(n, _)| n == "linux-1")
        .map(|(_, ip)| *ip)
        .expect("linux-1");
    for target in [format!("{srv_ip}:8080"), format!("{linux}:{node_port}")] {
        let (code, out) = exec(&pods, "host", &format!("curl.exe -s http://{target}/hostname")).await;
        assert_eq!((code, out.trim()), (0, "srv"), "{target}");
    }
}
