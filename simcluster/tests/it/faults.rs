//! Kubelet-side node faults end to end through kube-rs: on a Windows node carrying the fault,
//! a normal pod never gets its sandbox (the documented `FailedCreatePodSandBox` event, retried,
//! the container waiting in `ContainerCreating`) or, with the kubelet stopped, is never started;
//! HostProcess pods on the node start where the fault spares them, and see on the host's disk
//! the kubelet's log of each failed sandbox and whether flannel's subnet file is there; a pod
//! on the other Windows node of the same topology runs. The node log proxy serves each node's log directory as its
//! kubelet would (what runs as a node service there) and what the fault leaves in the
//! kubelet's, kube-proxy's and flanneld's logs.

use crate::common;

use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, AttachParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use rstest::rstest;
use serde_json::{Value, json};
use simcluster::{Cluster, Topology};
use tokio::io::AsyncReadExt;

const NS: &str = "faults";
/// The faulted node (Windows Server 2022, containerd 1.7, flannel host-gw: CNI network cbr0).
const FAULTED: &str = "win2022-1";
/// The other Windows node of the default topology, which carries no fault.
const HEALTHY: &str = "win2019-1";
/// A seed-era topology: Kubernetes 1.14 on Windows Server 2019 with Docker, no HostProcess, so
/// kube-proxy and flanneld run as node services with their own log files.
const SEED_ERA: &str = "k8s-1.14-ws2019-host-gw";
/// Its faulted and healthy Windows nodes.
const SEED_FAULTED: &str = "win2019-2";
const SEED_HEALTHY: &str = "win2019-1";

/// The default topology with `fault` on [`FAULTED`], its timings at a fifth.
async fn cluster_with(fault: &str) -> (Cluster, Client) {
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    topology.timing.scale = 0.2;
    if let Some(n) = topology.nodes.iter_mut().find(|n| n.name == FAULTED) {
        n.faults.push(fault.into());
    }
    common::cluster_and_client(topology, NS).await
}

/// The seed-era topology with `fault` on [`SEED_FAULTED`].
async fn seed_era_with(fault: &str) -> (Cluster, Client) {
    let mut topology = Topology::profile(SEED_ERA).expect("built-in profile");
    topology.timing.scale = 0.2;
    if let Some(n) = topology.nodes.iter_mut().find(|n| n.name == SEED_FAULTED) {
        n.faults.push(fault.into());
    }
    common::cluster_and_client(topology, NS).await
}

fn waiting_reasons(p: &Pod) -> Vec<String> {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            c.state
                .and_then(|s| s.waiting)
                .and_then(|w| w.reason)
                .unwrap_or_default()
        })
        .collect()
}

/// A normal Windows pod bound to `node` (the kubelet admits it regardless of taints).
fn app(name: &str, node: &str, image: &str) -> Pod {
    pod(
        name,
        json!({"nodeName": node,
            "containers": [{"name": "app", "image": image, "command": ["ping", "-t", "localhost"]}]}),
    )
}

/// A HostProcess pod bound to `node`.
fn host_process(name: &str, node: &str) -> Pod {
    pod(
        name,
        json!({"nodeName": node, "hostNetwork": true,
            "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
            "containers": [{"name": "agent", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022",
                "command": ["powershell", "-Command", "Start-Sleep -Seconds 2147483"]}]}),
    )
}

/// What `powershell -NoProfile -Command script` prints in a HostProcess pod.
async fn host_command(pods: &Api<Pod>, pod: &str, script: &str) -> String {
    let argv = ["powershell", "-NoProfile", "-Command", script].map(String::from);
    let mut proc = pods
        .exec(pod, argv, &AttachParams::default().stderr(false))
        .await
        .expect("exec");
    let mut out = String::new();
    proc.stdout()
        .expect("stdout")
        .read_to_string(&mut out)
        .await
        .expect("read stdout");
    proc.join().await.expect("exec ends");
    out
}

fn pod(name: &str, spec: Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("pod")
}

/// The Warning events about a pod with this reason: (message, count).
async fn warnings(client: &Client, pod: &str, reason: &str) -> Vec<(String, i32)> {
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    let list = events
        .list(&ListParams::default().fields(&format!("involvedObject.name={pod}")))
        .await
        .expect("events");
    list.items
        .into_iter()
        .filter(|e| e.type_.as_deref() == Some("Warning") && e.reason.as_deref() == Some(reason))
        .map(|e| (e.message.unwrap_or_default(), e.count.unwrap_or(1)))
        .collect()
}

async fn node_log(client: &Client, node: &str, file: &str) -> Result<String, kube::Error> {
    let req = http::Request::get(format!("/api/v1/nodes/{node}/proxy/logs/{file}"))
        .body(Vec::new())
        .expect("request");
    client.request_text(req).await
}

const PAUSE_MISMATCH: &str = "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start sandbox container for pod \"stuck\": hcs::CreateComputeSystem <sandbox>: The container operating system does not match the host operating system. (0xc0370101)";
const NO_SUBNET_ENV: &str = "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox \"<sandbox>\": plugin type=\"flannel\" name=\"cbr0\" failed (add): loadFlannelSubnetEnv failed: open C:\\run\\flannel\\subnet.env: The system cannot find the file specified.";
const NO_HNS_NETWORK: &str = "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox \"<sandbox>\": plugin type=\"flannel\" name=\"cbr0\" failed (add): failed to delegate add: error while GETHNSNewtorkByName(cbr0): Network cbr0 not found";

#[rstest]
#[case::pause_image_wrong_build("pause-image-wrong-build", Some(PAUSE_MISMATCH), true)]
#[case::flannel_subnet_env_missing("flannel-subnet-env-missing", Some(NO_SUBNET_ENV), true)]
#[case::flanneld_waiting("flanneld-waiting", Some(NO_SUBNET_ENV), true)]
#[case::hns_network_missing("hns-network-missing", Some(NO_HNS_NETWORK), true)]
#[case::kubelet_stopped("kubelet-stopped", None, false)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_faulted_windows_node_keeps_its_pods_from_starting_and_spares_the_rest(
    #[case] fault: &str,
    #[case] sandbox_error: Option<&str>,
    #[case] host_process_starts: bool,
) {
    let (_cluster, client) = cluster_with(fault).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let pp = PostParams::default();
    let stuck = pods
        .create(
            &pp,
            &app("stuck", FAULTED, "mcr.microsoft.com/windows/servercore:ltsc2022"),
        )
        .await
        .expect("stuck");
    pods.create(
        &pp,
        &app("elsewhere", HEALTHY, "mcr.microsoft.com/windows/servercore:ltsc2019"),
    )
    .await
    .expect("elsewhere");
    pods.create(&pp, &host_process("agent", FAULTED)).await.expect("agent");

    // The flow the fault must not touch: the other Windows node runs its pod.
    common::eventually("the pod on the other Windows node Running", || async {
        pods.get("elsewhere")
            .await
            .ok()
            .filter(|p| common::phase(p) == "Running")
    })
    .await;

    let expected = sandbox_error.map(|template| {
        template.replace(
            "<sandbox>",
            &simcluster::internals::container_id(&stuck.uid().unwrap_or_default(), "POD"),
        )
    });
    match &expected {
        Some(expected) => {
            // Retried with back-off: the same event, counted.
            let (message, count) = common::eventually("repeated FailedCreatePodSandBox", || async {
                warnings(&client, "stuck", "FailedCreatePodSandBox")
                    .await
                    .into_iter()
                    .find(|(_, count)| *count >= 2)
            })
            .await;
            assert_eq!(&message, expected);
            assert!(count >= 2);
            let p = pods.get("stuck").await.expect("stuck");
            assert_eq!(common::phase(&p), "Pending");
            assert_eq!(waiting_reasons(&p), ["ContainerCreating"]);
            assert!(p.status.and_then(|s| s.pod_ip).is_none(), "no sandbox, no pod IP");
        }
        None => {
            let p = pods.get("stuck").await.expect("stuck");
            assert_eq!(common::phase(&p), "Pending");
            assert!(
                p.status.and_then(|s| s.container_statuses).is_none(),
                "no kubelet reported containers"
            );
        }
    }

    if host_process_starts {
        common::eventually("the HostProcess pod Running", || async {
            pods.get("agent").await.ok().filter(|p| common::phase(p) == "Running")
        })
        .await;
        assert!(warnings(&client, "agent", "FailedCreatePodSandBox").await.is_empty());
        // The confirmation an operator runs on the node: the kubelet's log on the host's disk
        // carries each failed RunPodSandbox with the event's error; flannel's subnet file is
        // missing exactly with the flannel faults.
        if let Some(expected) = &expected {
            let err = expected
                .strip_prefix("Failed to create pod sandbox: ")
                .expect("a runtime error");
            let log = host_command(
                &pods,
                "agent",
                "Get-Content C:\\var\\log\\kubelet\\kubelet.log -Tail 200",
            )
            .await;
            let line = format!("\"RunPodSandbox from runtime service failed\" err={err:?} pod=\"{NS}/stuck\"");
            assert!(log.contains(&line), "{line} not in\n{log}");
            if fault == "pause-image-wrong-build" {
                assert!(
                    log.contains("does not match the host operating system. (0xc0370101)"),
                    "{log}"
                );
            }
        }
        let subnet_env = host_command(&pods, "agent", "Test-Path C:\\run\\flannel\\subnet.env").await;
        let missing = matches!(fault, "flannel-subnet-env-missing" | "flanneld-waiting");
        assert_eq!(subnet_env, if missing { "False\r\n" } else { "True\r\n" });
    } else {
        let p = pods.get("agent").await.expect("agent");
        assert_eq!(common::phase(&p), "Pending");
    }
}

#[rstest]
#[case::waiting_on_the_faulted_node(
    "flanneld-waiting",
    SEED_FAULTED,
    &["Found network config - Backend type: host-gw", "Waiting for the Network to be created"],
    &["Wrote subnet file"]
)]
#[case::healthy_on_the_other_node(
    "flanneld-waiting",
    SEED_HEALTHY,
    &[
        "Created subnet manager: Kubernetes Subnet Manager - win2019-1",
        "Creating the node lease for IPv4. This is the n.Spec.PodCIDRs: [10.244.2.0/24]",
        "Wrote subnet file to C:\\run\\flannel\\subnet.env",
        "Running backend.",
    ],
    &["Waiting for the Network"]
)]
#[case::never_started("flannel-subnet-env-missing", SEED_FAULTED, &[], &["Wrote subnet file", "Running backend."])]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flanneld_logs_show_whether_the_subnet_file_was_written(
    #[case] fault: &str,
    #[case] node: &str,
    #[case] present: &[&str],
    #[case] absent: &[&str],
) {
    let (_cluster, client) = seed_era_with(fault).await;
    let log = node_log(&client, node, "flanneld/flanneld.log")
        .await
        .expect("flanneld.log");
    for text in present {
        assert!(log.contains(text), "{text:?} missing from\n{log}");
    }
    for text in absent {
        assert!(!log.contains(text), "{text:?} in\n{log}");
    }
    if fault == "flanneld-waiting" && node == SEED_FAULTED {
        // The start script keeps polling for the network.
        let repeats = common::eventually("the waiting line repeated", || async {
            let log = node_log(&client, node, "flanneld/flanneld.log").await.ok()?;
            let n = log
                .lines()
                .filter(|l| *l == "Waiting for the Network to be created")
                .count();
            (n >= 3).then_some(n)
        })
        .await;
        assert!(repeats >= 3);
    }
}

/// flanneld runs as a node service only on Windows nodes without HostProcess: Linux nodes run
/// it as a pod, and so do current Windows nodes (a HostProcess DaemonSet).
#[rstest]
#[case::linux("linux-1")]
#[case::host_process_windows(FAULTED)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_flanneld_log_where_flanneld_is_a_pod(#[case] node: &str) {
    let (_cluster, client) = cluster_with("flanneld-waiting").await;
    match node_log(&client, node, "flanneld/flanneld.log").await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404),
        other => panic!("expected 404, got {other:?}"),
    }
}

/// The names a kubelet's log directory listing links to.
fn listed(html: &str) -> Vec<String> {
    assert!(html.starts_with("<!doctype html>\n"), "{html}");
    assert!(html.contains("<pre>\n") && html.ends_with("</pre>\n"), "{html}");
    html.lines()
        .filter_map(|l| l.strip_prefix("<a href=\""))
        .map(|l| {
            let (href, rest) = l.split_once("\">").expect("an href");
            assert_eq!(rest, format!("{href}</a>"), "{l}");
            href.to_string()
        })
        .collect()
}

#[rstest]
#[case::linux("default", "linux-1", &["containers/", "journal/", "pods/", "syslog"])]
#[case::windows_host_process("default", "win2022-1", &["containers/", "kubelet/", "pods/"])]
#[case::windows_seed_era_flannel(SEED_ERA, "win2019-1", &["containers/", "flanneld/", "kube-proxy/", "kubelet/", "pods/"])]
#[case::windows_seed_era_transparent("k8s-1.5-ws2016", "win2016-1", &["containers/", "kube-proxy/", "kubelet/", "pods/"])]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_log_directories_list_what_runs_on_the_node(
    #[case] topology: &str,
    #[case] node: &str,
    #[case] expected: &[&str],
) {
    let topology = if topology == "default" {
        Topology::default_cluster().instant().on_wall_clock()
    } else {
        Topology::profile(topology).expect("built-in profile")
    };
    let (_cluster, client) = common::cluster_and_client(topology, NS).await;
    let top = node_log(&client, node, "").await.expect("the log directory");
    assert_eq!(listed(&top), expected);
    if expected.contains(&"kubelet/") {
        let dir = node_log(&client, node, "kubelet/").await.expect("kubelet/");
        assert_eq!(listed(&dir), ["kubelet.log"]);
    }
    match node_log(&client, node, "nothing.log").await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404),
        other => panic!("expected 404, got {other:?}"),
    }
}

/// A pod's container log shows up under `containers/` and `pods/` in the runtime's format.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_logs_are_in_the_node_log_directory() {
    let (_cluster, client) =
        common::cluster_and_client(Topology::default_cluster().instant().on_wall_clock(), NS).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let p = pod(
        "talker",
        json!({"nodeName": "linux-1",
            "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sh", "-c", "echo hello from talker; sleep 3600"]}]}),
    );
    let created = pods.create(&PostParams::default(), &p).await.expect("talker");
    let uid = created.uid().expect("uid");
    let file = common::eventually("the container log file", || async {
        let listing = node_log(&client, "linux-1", "containers/").await.ok()?;
        listed(&listing)
            .into_iter()
            .find(|n| n.starts_with(&format!("talker_{NS}_c-")))
    })
    .await;
    assert!(file.ends_with(".log"), "{file}");
    let text = common::eventually("the line in the file", || async {
        let text = node_log(&client, "linux-1", &format!("containers/{file}")).await.ok()?;
        text.contains("hello from talker").then_some(text)
    })
    .await;
    let line = text.lines().next().expect("a line");
    assert!(line.ends_with(" stdout F hello from talker"), "{line}");
    let pod_dir = format!("{NS}_talker_{uid}/");
    assert!(listed(&node_log(&client, "linux-1", "pods/").await.expect("pods/")).contains(&pod_dir));
    let in_pod = node_log(&client, "linux-1", &format!("pods/{pod_dir}c/0.log"))
        .await
        .expect("0.log");
    assert!(in_pod.contains("hello from talker"), "{in_pod}");
}

/// kube-proxy as a node service logs its flags: `--hostname-override` names the node unless
/// the fault left it out (NET-KUBEPROXY-HOSTNAME); a stopped kube-proxy has logged nothing.
#[rstest]
#[case::healthy("kube-proxy-stopped", SEED_HEALTHY, Some("FLAG: --hostname-override=\"win2019-1\""))]
#[case::no_hostname_override(
    "kube-proxy-no-hostname-override",
    SEED_FAULTED,
    Some("FLAG: --hostname-override=\"\"")
)]
#[case::stopped("kube-proxy-stopped", SEED_FAULTED, None)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_proxy_logs_follow_its_faults(#[case] fault: &str, #[case] node: &str, #[case] line: Option<&str>) {
    let (_cluster, client) = seed_era_with(fault).await;
    let log = node_log(&client, node, "kube-proxy/kube-proxy.log")
        .await
        .expect("kube-proxy.log");
    match line {
        Some(line) => {
            assert!(log.contains(line), "{line:?} missing from\n{log}");
            assert!(log.contains("FLAG: --proxy-mode=\"kernelspace\""), "{log}");
            assert!(log.contains("Version: v1.14.10"), "{log}");
        }
        None => assert!(log.is_empty(), "{log}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_hns_network_shows_in_the_kubelet_log() {
    let (_cluster, client) = cluster_with("hns-network-missing").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    pods.create(
        &PostParams::default(),
        &app("stuck", FAULTED, "mcr.microsoft.com/windows/servercore:ltsc2022"),
    )
    .await
    .expect("stuck");
    let log = common::eventually("the runtime error in the kubelet log", || async {
        let log = node_log(&client, FAULTED, "kubelet/kubelet.log").await.ok()?;
        log.contains("RunPodSandbox from runtime service failed").then_some(log)
    })
    .await;
    assert!(log.contains("No network adapter found for the pod network"), "{log}");
    assert!(log.contains("err=\"Network cbr0 not found\""), "{log}");
    assert!(
        log.contains("GETHNSNewtorkByName(cbr0): Network cbr0 not found"),
        "{log}"
    );
    assert!(log.contains("pod=\"faults/stuck\""), "{log}");
    let other = node_log(&client, HEALTHY, "kubelet/kubelet.log")
        .await
        .expect("kubelet.log");
    assert!(!other.contains("No network adapter found"), "{other}");
}

/// #23: a stopped kubelet renews its node Lease no more — last renewed longer ago than the
/// node monitor's grace period, which is why its node is `Unknown` — while the others' kubelets
/// renew theirs every 10 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_kubelet_leaves_its_node_lease_stale_and_the_others_renew_theirs() {
    use k8s_openapi::api::coordination::v1::Lease;
    let (_cluster, client) = cluster_with("kubelet-stopped").await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let age = |lease: Lease| {
        let renewed = lease.spec.and_then(|s| s.renew_time).expect("renewTime").0;
        k8s_openapi::jiff::Timestamp::now()
            .duration_since(renewed)
            .as_secs_f64()
    };
    let stopped = age(leases.get(FAULTED).await.expect("the stopped node's lease"));
    let running = age(leases.get(HEALTHY).await.expect("the running node's lease"));
    assert!(stopped > 40.0, "last renewed {stopped} s ago");
    assert!(running < 15.0, "last renewed {running} s ago");
}
