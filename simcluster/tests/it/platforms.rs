//! The platforms as they are (issue 34), driven through the API: GKE Dataplane V2 runs no
//! kube-proxy while Services and DNS work; a firewall that lets only `network.egressPorts` out;
//! LoadBalancer addresses that do not answer this machine (`network.loadBalancersReachable`)
//! while they work from inside the cluster.

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use simcluster::Topology;

use crate::common;

const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.52";
const HPC: &str = "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0";

/// Runs `argv` in `pod`: (succeeded, stdout + stderr).
use crate::kube_system::exec;

async fn running(pods: &Api<Pod>, name: &str) {
    common::eventually(&format!("{name} running"), || async {
        pods.get(name)
            .await
            .ok()
            .filter(|p| common::phase(p) == "Running")
            .map(|_| ())
    })
    .await;
}

async fn netexec_behind(client: &kube::Client, ns: &str, node: &str, kind: &str) -> Service {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let srv = json!({"nodeName": node, "tolerations": [{"operator": "Exists"}],
        "containers": [{"name": "c", "image": AGNHOST, "args": ["netexec", "--http-port=8080"]}]});
    pods.create(&PostParams::default(), &common::pod("srv", srv))
        .await
        .expect("srv");
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let svc = serde_json::from_value(json!({"metadata": {"name": "srv"}, "spec": {"type": kind,
        "selector": {"app": "srv"}, "ports": [{"port": 80, "targetPort": 8080}]}}))
    .expect("service");
    let svc = services.create(&PostParams::default(), &svc).await.expect("service");
    running(&pods, "srv").await;
    svc
}

/// GKE Dataplane V2 (`gke-dpv2`): anetd and anetd-win run, no kube-proxy runs anywhere — no
/// kube-proxy pod, no kube-proxy service or process on a Windows host — and a Windows pod still
/// reaches a Service by its name (anetd programs Services and the DNS ClusterIP).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dataplane_v2_serves_services_without_kube_proxy() {
    let topology = Topology::profile("gke-dpv2")
        .expect("gke-dpv2")
        .instant()
        .on_wall_clock();
    let windows = topology
        .nodes
        .iter()
        .find(|n| n.os == simcluster::Os::Windows)
        .map(|n| n.name.clone())
        .expect("a Windows node");
    let (_cluster, client) = common::cluster_and_client(topology, "dp").await;
    let system: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let names: Vec<String> = system
        .list(&ListParams::default())
        .await
        .expect("kube-system pods")
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert!(!names.iter().any(|n| n.starts_with("kube-proxy")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("anetd-win-")), "{names:?}");
    netexec_behind(&client, "dp", &windows, "ClusterIP").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "dp");
    let host = json!({"nodeName": windows, "hostNetwork": true, "tolerations": [{"operator": "Exists"}],
        "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
        "containers": [{"name": "c", "image": HPC, "command": ["powershell", "-Command", "Start-Sleep -Seconds 2147483"]}]});
    pods.create(&PostParams::default(), &common::pod("host", host))
        .await
        .expect("host");
    let client_pod = json!({"nodeName": windows, "tolerations": [{"operator": "Exists"}],
        "containers": [{"name": "c", "image": AGNHOST, "args": ["pause"]}]});
    pods.create(&PostParams::default(), &common::pod("cli", client_pod))
        .await
        .expect("cli");
    running(&pods, "host").await;
    running(&pods, "cli").await;
    let (ok, out) = exec(
        &pods,
        "cli",
        &["curl.exe", "-s", "http://srv.dp.svc.cluster.local/hostname"],
    )
    .await;
    assert!(ok && out.trim() == "srv", "{out}");
    let (ok, out) = exec(
        &pods,
        "host",
        &["powershell", "-NoProfile", "-Command", "Get-Service kube-proxy"],
    )
    .await;
    assert!(
        !ok && out.contains("Cannot find any service with service name 'kube-proxy'."),
        "{out}"
    );
    // No kube-proxy.exe on the host (the exit code is the failed Get-Process's, as PowerShell's).
    let (_, out) = exec(
        &pods,
        "host",
        &[
            "powershell",
            "-NoProfile",
            "-Command",
            "Get-Process -Name kube-proxy -ErrorAction SilentlyContinue | Measure-Object | ForEach-Object Count",
        ],
    )
    .await;
    assert_eq!(out.trim(), "0", "{out}");
}

/// `network.egressPorts: [443]`: outside hosts answer on 443 only; other ports, the public
/// resolvers' 53 among them, time out (a firewall drops them silently).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_egress_ports_answer() {
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    topology.network.egress_ports = Some(vec![443]);
    let (_cluster, client) = common::cluster_and_client(topology, "eg").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "eg");
    let spec = json!({"nodeName": "linux-1", "containers": [{"name": "c", "image": AGNHOST, "args": ["pause"]}]});
    pods.create(&PostParams::default(), &common::pod("cli", spec))
        .await
        .expect("cli");
    running(&pods, "cli").await;
    for (target, works) in [
        ("203.0.113.10:443", true),
        ("203.0.113.10:80", false),
        ("1.1.1.1:53", false),
    ] {
        let (ok, out) = exec(&pods, "cli", &["agnhost", "connect", target, "--timeout=2s"]).await;
        assert_eq!(ok, works, "{target}: {out}");
        if !works {
            assert!(out.contains("TIMEOUT"), "{target}: {out}");
        }
    }
}

/// `network.loadBalancersReachable: false`: the Service gets its ingress address, which does not
/// answer this machine (no answer, not a refusal), while a pod reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_load_balancer_still_works_inside() {
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    topology.network.load_balancers = true;
    topology.network.load_balancers_reachable = false;
    let (_cluster, client) = common::cluster_and_client(topology, "ilb").await;
    netexec_behind(&client, "ilb", "linux-1", "LoadBalancer").await;
    let services: Api<Service> = Api::namespaced(client.clone(), "ilb");
    let ip = common::eventually("an ingress address", || async {
        services
            .get("srv")
            .await
            .ok()
            .and_then(|s| s.status?.load_balancer?.ingress?.first()?.ip.clone())
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "ilb");
    let spec = json!({"nodeName": "linux-1", "containers": [{"name": "c", "image": AGNHOST, "args": ["pause"]}]});
    pods.create(&PostParams::default(), &common::pod("cli", spec))
        .await
        .expect("cli");
    running(&pods, "cli").await;
    let target = format!("{ip}:80");
    common::eventually("the load balancer from inside", || async {
        exec(&pods, "cli", &["agnhost", "connect", &target, "--timeout=2s"])
            .await
            .0
            .then_some(())
    })
    .await;
    let addr: std::net::SocketAddr = format!("{ip}:80").parse().expect("address");
    let got = common::dial(addr, "lb").await.expect("connect task");
    common::assert_silent("the load balancer", got);
}
