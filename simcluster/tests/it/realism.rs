//! The real-cluster behaviours a topology can switch on (all off by default): a policy
//! webhook denying host privileges (`admission.deny`), the kubelet's `maxPods`, slow Windows
//! pulls and the node's image cache (`timing.windowsPull`), the transient Warning events on the
//! way to Running (`timing.transientEvents`), and node addresses the machine cannot reach
//! (`network.nodeAddressesReachable`).

use crate::common;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use rstest::rstest;
use serde_json::{Value, json};
use simcluster::{Privilege, Topology};

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

/// `admission.deny` (real-clusters: Azure Policy, Gatekeeper or Kyverno baseline refuse host
/// privileges): Gatekeeper's denial as the apiserver relays it (403, `admission webhook
/// "validation.gatekeeper.sh" denied the request: [constraint] …`); kube-system is exempt; a
/// pod without those privileges is created.
#[rstest]
#[case::host_port("team", json!({"containers": [{"name": "c", "image": "busybox:1.36", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}), Some("[psp-host-network-ports]"))]
#[case::host_network("team", json!({"hostNetwork": true, "containers": [{"name": "c", "image": "busybox:1.36"}]}), Some("[psp-host-network-ports]"))]
#[case::host_process("team", json!({"securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}}, "hostNetwork": true,
    "nodeSelector": {"kubernetes.io/os": "windows"}, "tolerations": [toleration()],
    "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}]}), Some("[psp-windows-hostprocess]"))]
#[case::system_namespace_exempt("kube-system", json!({"hostNetwork": true, "containers": [{"name": "c", "image": "busybox:1.36"}]}), None)]
#[case::no_privileges("team", json!({"containers": [{"name": "c", "image": "busybox:1.36", "ports": [{"containerPort": 80}]}]}), None)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_webhook_denies_host_privileges(#[case] ns: &str, #[case] spec: Value, #[case] denied: Option<&str>) {
    let (_cluster, client) = common::cluster_and_client(denying(), "team").await;
    let pods: Api<Pod> = Api::namespaced(client, ns);
    let got = pods.create(&PostParams::default(), &pod("p", spec)).await;
    match (denied, got) {
        (None, Ok(_)) => {}
        (Some(needle), Err(kube::Error::Api(status))) => {
            assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"), "{status:?}");
            assert!(
                status
                    .message
                    .starts_with("admission webhook \"validation.gatekeeper.sh\" denied the request: "),
                "{}",
                status.message
            );
            assert!(status.message.contains(needle), "{}", status.message);
        }
        (d, other) => panic!("expected denial {d:?}, got {other:?}"),
    }
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

/// `network.nodeAddressesReachable: false` (real-clusters: node InternalIPs on AKS/EKS/GKE are
/// private to the VPC, and a firewall drops what a machine outside sends them): a client on
/// this machine is never refused at a node's address (a refusal proves a host answered) and
/// never gets an answer, at a NodePort or the kubelet's port; inside the cluster the same
/// addresses work as before — a node reaches a pod and another node's NodePort.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_node_addresses_neither_answer_nor_refuse() {
    // On the wall clock: the pods take their unscaled time, and the listeners are aligned with
    // the Service by the time they run.
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
    let srv_ip = running(&pods, "srv")
        .await
        .status
        .and_then(|s| s.pod_ip)
        .expect("pod IP");
    running(&pods, "host").await;
    // From this machine: neither a connection nor a refusal, at the NodePort or the kubelet's port.
    for (name, ip) in &ips {
        for port in [node_port, 10250] {
            let addr = std::net::SocketAddr::from((*ip, port));
            let got = tokio::task::spawn_blocking(move || {
                use std::io::{Read, Write};
                let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
                stream.set_read_timeout(Some(Duration::from_secs(2)))?;
                stream.write_all(b"GET /hostname HTTP/1.1\r\nHost: node\r\nConnection: close\r\n\r\n")?;
                let mut reply = String::new();
                let _ = stream.read_to_string(&mut reply);
                Ok::<String, std::io::Error>(reply)
            })
            .await
            .expect("connect task");
            match got {
                Ok(reply) => assert!(reply.is_empty(), "{name} {addr}: something answered: {reply}"),
                Err(e) => assert_ne!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{name} {addr} refused"),
            }
        }
    }
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
