//! Simulated nodes end to end through kube-rs: scheduling (taints, OS and build selection,
//! memory fit, host ports), controllers (Deployments, DaemonSets, garbage collection, default
//! ServiceAccount), kubelet rules (OS admission, configz, a stopped kubelet) and Windows rules
//! (API validation of `spec.os`, HostProcess seeing secrets on the node's disk).

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{Node, Pod, Secret, ServiceAccount};
use kube::api::{Api, AttachParams, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use rstest::rstest;
use serde_json::{Value, json};
use simcluster::{ClusterConfig, Topology};
use tokio::io::AsyncReadExt;

const WIN_TOLERATION: &str = r#"{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}"#;

fn toleration() -> Value {
    serde_json::from_str(WIN_TOLERATION).expect("toleration")
}

async fn setup(ns: &str) -> (simcluster::Cluster, Client) {
    let cluster = common::start().await;
    common::namespace(&cluster, ns);
    let client = common::kube_client(&cluster).await;
    (cluster, client)
}

use common::pod;

fn node_of(p: &Pod) -> String {
    p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default()
}

async fn running(pods: &Api<Pod>, name: &str) -> Pod {
    common::eventually(&format!("pod {name} Running"), || async {
        pods.get(name).await.ok().filter(|p| common::phase(p) == "Running")
    })
    .await
}

use common::events_for;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linux_pods_never_land_on_tainted_windows_nodes() {
    // SCHED-TAINT: only linux-1 has no taint.
    let (_cluster, client) = setup("lin").await;
    let pods: Api<Pod> = Api::namespaced(client, "lin");
    for i in 0..6 {
        let spec = json!({"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]});
        pods.create(&PostParams::default(), &pod(&format!("p{i}"), spec))
            .await
            .expect("create");
    }
    for i in 0..6 {
        let p = running(&pods, &format!("p{i}")).await;
        assert_eq!(node_of(&p), "linux-1");
    }
}

#[rstest]
#[case::os_2019("10.0.17763", "mcr.microsoft.com/windows/servercore:ltsc2019", "win2019-1")]
#[case::os_2022("10.0.20348", "mcr.microsoft.com/windows/servercore:ltsc2022", "win2022-1")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_build_selection_lands_on_the_matching_node(
    #[case] build: &str,
    #[case] image: &str,
    #[case] node: &str,
) {
    // SCHED-NODESELECTOR, VER-BUILD-LABEL
    let (_cluster, client) = setup("win").await;
    let pods: Api<Pod> = Api::namespaced(client, "win");
    let spec = json!({
        "nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": build},
        "tolerations": [toleration()],
        "containers": [{"name": "c", "image": image, "command": ["ping", "-t", "localhost"]}],
    });
    pods.create(&PostParams::default(), &pod("w", spec))
        .await
        .expect("create");
    let p = running(&pods, "w").await;
    assert_eq!(node_of(&p), node);
    let status = p.status.expect("status");
    assert!(status.pod_ip.is_some_and(|ip| ip.starts_with("10.")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filling_windows_allocatable_memory_leaves_the_next_pod_pending() {
    // MEM-NO-OVERCOMMIT-SCHED, MEM-ALLOCATABLE-MATH
    let (_cluster, client) = setup("mem").await;
    let nodes: Api<Node> = Api::all(client.clone());
    let node = nodes.get("win2022-1").await.expect("node");
    let alloc = node
        .status
        .and_then(|s| s.allocatable)
        .and_then(|a| a.get("memory").cloned())
        .expect("allocatable");
    let alloc = simcluster::Quantity::parse(&alloc.0).expect("quantity");
    let fill = alloc.value() - 100 * 1024 * 1024;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "mem");
    let spec = |mem: String| {
        json!({"nodeSelector": {"node.kubernetes.io/windows-build": "10.0.20348"}, "tolerations": [toleration()],
               "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/servercore:ltsc2022",
                               "command": ["ping", "-t", "localhost"], "resources": {"limits": {"memory": mem}}}]})
    };
    pods.create(&PostParams::default(), &pod("big", spec(fill.to_string())))
        .await
        .expect("create");
    running(&pods, "big").await;
    pods.create(&PostParams::default(), &pod("one-more", spec("1Gi".into())))
        .await
        .expect("create");
    let message = common::eventually("FailedScheduling", || async {
        events_for(&client, "mem", "one-more")
            .await
            .into_iter()
            .find(|(r, _)| r == "FailedScheduling")
            .map(|(_, m)| m)
    })
    .await;
    assert!(message.starts_with("0/4 nodes are available: "), "{message}");
    assert!(message.contains("1 Insufficient memory"), "{message}");
    let p = pods.get("one-more").await.expect("pod");
    assert_eq!(common::phase(&p), "Pending");
    let cond = p.status.and_then(|s| s.conditions).unwrap_or_default();
    assert!(
        cond.iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_pod_with_the_same_host_port_stays_pending() {
    // NET-HOSTPORT: one pod per node per host port.
    let (_cluster, client) = setup("ports").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "ports");
    let spec = json!({"containers": [{"name": "c", "image": "registry.k8s.io/e2e-test-images/agnhost:2.52",
        "args": ["netexec", "--http-port=8080"], "ports": [{"containerPort": 8080, "hostPort": 30080}]}]});
    pods.create(&PostParams::default(), &pod("first", spec.clone()))
        .await
        .expect("create");
    running(&pods, "first").await;
    pods.create(&PostParams::default(), &pod("second", spec))
        .await
        .expect("create");
    let message = common::eventually("FailedScheduling", || async {
        events_for(&client, "ports", "second")
            .await
            .into_iter()
            .find(|(r, _)| r == "FailedScheduling")
            .map(|(_, m)| m)
    })
    .await;
    assert!(
        message.contains("1 node(s) didn't have free ports for the requested pod ports"),
        "{message}"
    );
}

#[rstest]
#[case::no_tolerations(json!({}), json!([]), &["linux-1"])]
#[case::windows_only(json!({"kubernetes.io/os": "windows"}), json!([toleration()]), &["win2019-1", "win2022-1"])]
#[case::everywhere(json!({}), json!([{"operator": "Exists"}]), &["control-plane", "linux-1", "win2019-1", "win2022-1"])]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemonset_covers_exactly_the_eligible_nodes(
    #[case] selector: Value,
    #[case] tolerations: Value,
    #[case] nodes: &[&str],
) {
    let (_cluster, client) = setup("ds").await;
    let daemonsets: Api<DaemonSet> = Api::namespaced(client.clone(), "ds");
    let ds: DaemonSet = serde_json::from_value(json!({
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {
                "nodeSelector": selector, "tolerations": tolerations,
                "containers": [{"name": "agent", "image": "registry.k8s.io/pause:3.10"}]}}}}))
    .expect("daemonset");
    daemonsets.create(&PostParams::default(), &ds).await.expect("create");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "ds");
    let expected: BTreeSet<String> = nodes.iter().map(|n| n.to_string()).collect();
    let placed = common::eventually("one running pod per eligible node", || async {
        let list = pods.list(&ListParams::default().labels("app=agent")).await.ok()?;
        let running: BTreeSet<String> = list
            .iter()
            .filter(|p| common::phase(p) == "Running")
            .map(node_of)
            .collect();
        (running == expected && list.items.len() == expected.len()).then_some(running)
    })
    .await;
    assert_eq!(placed, expected);
    let status = common::eventually("DaemonSet status", || async {
        daemonsets
            .get("agent")
            .await
            .ok()?
            .status
            .filter(|s| s.number_ready == nodes.len() as i32)
    })
    .await;
    assert_eq!(status.desired_number_scheduled, nodes.len() as i32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployments_roll_out_and_deleting_them_collects_their_pods() {
    let (_cluster, client) = setup("dep").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "dep");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web",
                "image": "registry.k8s.io/e2e-test-images/agnhost:2.52", "args": ["netexec", "--http-port=8080"]}]}}}}))
    .expect("deployment");
    deployments.create(&PostParams::default(), &d).await.expect("create");
    common::eventually("3 available replicas", || async {
        deployments
            .get("web")
            .await
            .ok()?
            .status
            .filter(|s| s.available_replicas == Some(3))
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "dep");
    assert_eq!(
        pods.list(&ListParams::default().labels("app=web"))
            .await
            .expect("pods")
            .items
            .len(),
        3
    );
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .expect("delete");
    common::eventually("pods collected", || async {
        pods.list(&ListParams::default().labels("app=web"))
            .await
            .ok()
            .filter(|l| l.items.is_empty())
    })
    .await;
    let sa: Api<ServiceAccount> = Api::namespaced(client, "dep");
    sa.get("default").await.expect("default service account exists");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_whose_os_field_does_not_match_its_node_is_rejected() {
    // SCHED-POD-OS: the scheduler ignores spec.os; the kubelet rejects the mismatch.
    let (_cluster, client) = setup("os").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "os");
    let spec = json!({"os": {"name": "windows"}, "nodeName": "linux-1",
        "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}]});
    let (reason, message) = common::rejected(&pods, &pod("wrong-os", spec)).await;
    assert_eq!(reason, "PodOSNotSupported");
    assert_eq!(
        message,
        "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_pages_on_a_windows_node_are_refused_by_the_scheduler_and_the_kubelet() {
    // MEM-HUGEPAGES (W14, WI31): Windows nodes advertise no huge pages. Scheduled: Pending with
    // upstream's FailedScheduling `Insufficient hugepages-2Mi`; bound by nodeName: the kubelet's
    // admission refuses it (`OutOfhugepages-2Mi`).
    let (_cluster, client) = setup("huge").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "huge");
    let resources = json!({"requests": {"cpu": "10m", "memory": "64Mi", "hugepages-2Mi": "2Mi"},
        "limits": {"cpu": "10m", "memory": "64Mi", "hugepages-2Mi": "2Mi"}});
    let scheduled = json!({"nodeSelector": {"kubernetes.io/os": "windows"},
        "tolerations": [{"key": "os", "operator": "Exists"}],
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources}]});
    pods.create(&PostParams::default(), &pod("scheduled", scheduled))
        .await
        .expect("create");
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client, "huge");
    let message = common::eventually("FailedScheduling", || async {
        events
            .list(&ListParams::default().fields("involvedObject.name=scheduled"))
            .await
            .ok()?
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("FailedScheduling"))
            .and_then(|e| e.message)
    })
    .await;
    assert!(message.contains("2 Insufficient hugepages-2Mi"), "{message}");
    let bound = json!({"nodeName": "win2022-1",
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources}]});
    pods.create(&PostParams::default(), &pod("bound", bound))
        .await
        .expect("create");
    let p = common::eventually("rejection", || async {
        pods.get("bound").await.ok().filter(|p| common::phase(p) == "Failed")
    })
    .await;
    let status = p.status.expect("status");
    assert_eq!(status.reason.as_deref(), Some("OutOfhugepages-2Mi"));
    assert_eq!(
        status.message.as_deref(),
        Some(
            "Pod was rejected: Node didn't have enough resource: hugepages-2Mi, requested: 2097152, used: 0, capacity: 0"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_os_field_with_linux_only_security_fields_is_refused_by_the_api() {
    // SEC-OS-FIELD-VALIDATION (Kubernetes >= 1.24, WI26/WI31)
    let (_cluster, client) = setup("sec").await;
    let pods: Api<Pod> = Api::namespaced(client, "sec");
    let spec = json!({"os": {"name": "windows"}, "securityContext": {"runAsUser": 1000},
        "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}]});
    match pods.create(&PostParams::default(), &pod("strict", spec)).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422);
            assert!(
                status.message.contains("spec.securityContext.runAsUser"),
                "{}",
                status.message
            );
            assert!(
                status.message.contains("cannot be set for a windows pod"),
                "{}",
                status.message
            );
        }
        other => panic!("expected 422, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configz_serves_the_reservations_behind_allocatable() {
    // MEM-SYS-RESERVED, MEM-ALLOCATABLE-MATH
    let (_cluster, client) = setup("cfg").await;
    let req = http::Request::get("/api/v1/nodes/win2022-1/proxy/configz")
        .body(Vec::new())
        .expect("request");
    let configz: Value = client.request(req).await.expect("configz");
    let kc = &configz["kubeletconfig"];
    assert_eq!(kc["systemReserved"]["memory"], "2Gi");
    assert_eq!(kc["evictionHard"]["memory.available"], "500Mi");
    let nodes: Api<Node> = Api::all(client);
    let status = nodes.get("win2022-1").await.expect("node").status.expect("status");
    let q = |m: &std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
        simcluster::Quantity::parse(&m["memory"].0).expect("quantity").value()
    };
    let capacity = q(status.capacity.as_ref().expect("capacity"));
    let allocatable = q(status.allocatable.as_ref().expect("allocatable"));
    assert_eq!(capacity - allocatable, (2048 + 500) * 1024 * 1024);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_kubelet_makes_its_node_not_ready_and_runs_nothing() {
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    if let Some(n) = topology.nodes.iter_mut().find(|n| n.name == "linux-1") {
        n.faults.push("kubelet-stopped".into());
    }
    let cluster = common::start_with(ClusterConfig::new(topology)).await;
    common::namespace(&cluster, "down");
    let client = common::kube_client(&cluster).await;
    let nodes: Api<Node> = Api::all(client.clone());
    let node = common::eventually("NotReady", || async {
        let n = nodes.get("linux-1").await.ok()?;
        let ready = n
            .status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "Ready")?
            .status
            .clone();
        (ready == "Unknown").then_some(n)
    })
    .await;
    let taints = node.spec.and_then(|s| s.taints).unwrap_or_default();
    assert!(
        taints
            .iter()
            .any(|t| t.key == "node.kubernetes.io/unreachable" && t.effect == "NoExecute")
    );
    let pods: Api<Pod> = Api::namespaced(client, "down");
    let spec = json!({"nodeName": "linux-1", "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]});
    pods.create(&PostParams::default(), &pod("stuck", spec))
        .await
        .expect("create");
    tokio::time::sleep(Duration::from_millis(800)).await;
    let p = pods.get("stuck").await.expect("pod");
    assert_eq!(common::phase(&p), "Pending");
    assert!(
        p.status.and_then(|s| s.container_statuses).is_none(),
        "no kubelet reported containers"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostprocess_pod_reads_another_pods_secret_in_clear_text_on_the_node() {
    // SEC-SECRET-AT-REST, SEC-HOSTPROCESS
    let (_cluster, client) = setup("hp").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "hp");
    let secret: Secret =
        serde_json::from_value(json!({"metadata": {"name": "creds"}, "stringData": {"password": "marker-7f3a"}}))
            .expect("secret");
    secrets.create(&PostParams::default(), &secret).await.expect("secret");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "hp");
    let selector = json!({"node.kubernetes.io/windows-build": "10.0.20348"});
    let app = json!({"nodeSelector": selector, "tolerations": [toleration()],
        "containers": [{"name": "app", "image": "mcr.microsoft.com/windows/servercore:ltsc2022",
            "command": ["ping", "-t", "localhost"], "volumeMounts": [{"name": "creds", "mountPath": "C:\\creds"}]}],
        "volumes": [{"name": "creds", "secret": {"secretName": "creds"}}]});
    pods.create(&PostParams::default(), &pod("app", app))
        .await
        .expect("app");
    let host = json!({"nodeSelector": selector, "tolerations": [toleration()], "hostNetwork": true,
        "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
        "containers": [{"name": "probe", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022",
            "command": ["powershell", "-Command", "Start-Sleep -Seconds 2147483"]}]});
    pods.create(&PostParams::default(), &pod("probe", host))
        .await
        .expect("probe");
    let app = running(&pods, "app").await;
    let probe = running(&pods, "probe").await;
    // A HostProcess pod runs in the node's network.
    let node_ip = probe.status.as_ref().and_then(|s| s.host_ip.clone());
    assert_eq!(probe.status.as_ref().and_then(|s| s.pod_ip.clone()), node_ip);
    let path = format!(
        "C:\\var\\lib\\kubelet\\pods\\{}\\volumes\\kubernetes.io~secret\\creds\\password",
        app.uid().unwrap_or_default()
    );
    let command = vec![
        "powershell".to_string(),
        "-Command".into(),
        format!("Get-Content {path}"),
    ];
    let mut proc = pods
        .exec("probe", command, &AttachParams::default())
        .await
        .expect("exec");
    let mut stdout = proc.stdout().expect("stdout");
    let mut text = String::new();
    let status = proc.take_status().expect("status");
    let (read, _) = tokio::join!(stdout.read_to_string(&mut text), status);
    read.expect("read");
    assert!(text.contains("marker-7f3a"), "{text:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_mismatched_image_crash_loops_with_the_hcs_message() {
    // VER-BUILD-MATCH: a 2019 single-manifest image on the 2022 host.
    let (_cluster, client) = setup("hcs").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "hcs");
    let spec = json!({"nodeSelector": {"node.kubernetes.io/windows-build": "10.0.20348"}, "tolerations": [toleration()],
        "containers": [{"name": "app", "image": "mcr.microsoft.com/windows/servercore:10.0.17763.6414", "command": ["ping", "-t", "localhost"]}]});
    pods.create(&PostParams::default(), &pod("old", spec))
        .await
        .expect("create");
    let p = common::eventually("CrashLoopBackOff", || async {
        let p = pods.get("old").await.ok()?;
        let cs = p.status.as_ref()?.container_statuses.as_ref()?.first()?.clone();
        let waiting = cs.state.as_ref()?.waiting.as_ref()?.reason.clone();
        (waiting.as_deref() == Some("CrashLoopBackOff")).then_some(cs)
    })
    .await;
    let last = p.last_state.and_then(|s| s.terminated).expect("last terminated");
    assert_eq!(last.reason.as_deref(), Some("StartError"));
    assert_eq!(last.exit_code, 128);
    assert!(
        last.message
            .unwrap_or_default()
            .contains("The container operating system does not match the host operating system")
    );
    let events = events_for(&client, "hcs", "old").await;
    assert!(events.iter().any(|(r, _)| r == "BackOff"), "{events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_reach_running_through_the_documented_states() {
    // The watch sees Pending → (ContainerCreating) → Running, with the upstream events.
    let (_cluster, client) = setup("life").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "life");
    let mut stream = kube::runtime::watcher(pods.clone(), kube::runtime::watcher::Config::default()).boxed();
    // The watch must be established before the pod exists, or it may only ever see it Running.
    while let Ok(Some(Ok(ev))) = tokio::time::timeout(Duration::from_secs(10), stream.next()).await {
        if matches!(ev, kube::runtime::watcher::Event::InitDone) {
            break;
        }
    }
    let spec = json!({"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]});
    pods.create(&PostParams::default(), &pod("life", spec))
        .await
        .expect("create");
    let mut phases = Vec::new();
    while let Ok(Some(Ok(ev))) = tokio::time::timeout(Duration::from_secs(10), stream.next()).await {
        if let kube::runtime::watcher::Event::Apply(p) = ev {
            phases.push(common::phase(&p));
            if common::phase(&p) == "Running" {
                break;
            }
        }
    }
    assert_eq!(phases.first().map(String::as_str), Some("Pending"));
    assert_eq!(phases.last().map(String::as_str), Some("Running"));
    let reasons: Vec<String> = events_for(&client, "life", "life")
        .await
        .into_iter()
        .map(|(r, _)| r)
        .collect();
    for expected in ["Scheduled", "Pulling", "Pulled", "Created", "Started"] {
        assert!(
            reasons.iter().any(|r| r == expected),
            "{expected} missing from {reasons:?}"
        );
    }
}

/// MEM-EVICTION (WI31, KEVD, GH kubernetes#122922): a Windows kubelet from 1.31 evicts on
/// `memory.available` below its hard threshold (500Mi by default) — the pod ends Failed with
/// reason Evicted and the upstream message, the node reports MemoryPressure while it lasts;
/// a 1.14 Windows kubelet takes no eviction action (W14) and the pod keeps running.
#[rstest]
#[case::windows_1_32_evicts("default", "win2022-1", true)]
#[case::windows_1_14_does_not("k8s-1.14-ws2019-host-gw", "", false)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_pressure_eviction_by_kubelet_version(#[case] profile: &str, #[case] node: &str, #[case] evicts: bool) {
    let topology = Topology::profile(profile).expect("profile");
    let (_cluster, client) = common::cluster_and_client(topology.clone(), "mem").await;
    let windows = topology
        .nodes
        .iter()
        .find(|n| n.os == simcluster::Os::Windows && (node.is_empty() || n.name == node))
        .expect("a Windows node");
    let image = "registry.k8s.io/e2e-test-images/agnhost:2.52";
    // 16Gi capacity: holding 16000Mi leaves 384Mi, under the 500Mi threshold.
    let spec = json!({"nodeName": windows.name, "tolerations": [toleration()],
        "containers": [{"name": "hog", "image": image,
            "args": ["stress", "--mem-alloc-size", "100Mi", "--mem-alloc-sleep", "1s", "--mem-total", "16000Mi"]}]});
    let pods: Api<Pod> = Api::namespaced(client.clone(), "mem");
    pods.create(&PostParams::default(), &pod("hog", spec))
        .await
        .expect("create");
    if evicts {
        let p = common::eventually("pod hog Evicted", || async {
            pods.get("hog").await.ok().filter(|p| common::phase(p) == "Failed")
        })
        .await;
        let status = p.status.expect("status");
        assert_eq!(status.reason.as_deref(), Some("Evicted"));
        let message = status.message.unwrap_or_default();
        assert!(
            message
                .starts_with("The node was low on resource: memory. Threshold quantity: 500Mi, available: 393216Ki. ")
                && message
                    .contains("Container hog was using 16384000Ki, request is 0, has larger consumption of memory."),
            "{message}"
        );
        let events = events_for(&client, "mem", "hog").await;
        assert!(
            events.iter().any(|(r, m)| r == "Evicted" && m == &message),
            "{events:?}"
        );
        let disruption = status.conditions.unwrap_or_default();
        assert!(
            disruption
                .iter()
                .any(|c| c.type_ == "DisruptionTarget" && c.reason.as_deref() == Some("TerminationByKubelet"))
        );
        // The node said so while it lasted, and is back to sufficient memory afterwards.
        let node_events = events_for(&client, "default", &windows.name).await;
        assert!(
            node_events
                .iter()
                .any(|(r, m)| r == "EvictionThresholdMet" && m == "Attempting to reclaim memory"),
            "{node_events:?}"
        );
        let nodes: Api<Node> = Api::all(client.clone());
        let n = nodes.get(&windows.name).await.expect("node");
        let pressure = n
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.type_ == "MemoryPressure")
            .expect("MemoryPressure condition");
        assert_eq!(pressure.status, "False");
        assert!(
            !n.spec
                .and_then(|s| s.taints)
                .unwrap_or_default()
                .iter()
                .any(|t| t.key == "node.kubernetes.io/memory-pressure")
        );
    } else {
        running(&pods, "hog").await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let p = pods.get("hog").await.expect("pod");
        assert_eq!(common::phase(&p), "Running");
        let events = events_for(&client, "mem", "hog").await;
        assert!(!events.iter().any(|(r, _)| r == "Evicted"), "{events:?}");
    }
}
