//! kube-system as a real cluster of each profile shows it, read through the API only: for every
//! built-in profile a client derives the network mode (flannel's `net-conf.json`, the Azure CNI
//! and ovn-kubernetes DaemonSets), DSR (the Windows kube-proxy's configuration) and the
//! kube-proxy versions (the DaemonSets' image tags) and gets what the topology file says; the
//! add-on pods run where the profile puts them. Cluster DNS goes through the CoreDNS pods (no
//! ready pod, no DNS), and the Windows node faults show in the agents' pods.

use crate::common;

use std::net::Ipv4Addr;
use std::path::PathBuf;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Node, Pod};
use kube::Client;
use kube::api::{Api, AttachParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use rstest::rstest;
use serde_json::{Value, json};
use simcluster::NetworkMode;
use simcluster::{ClusterConfig, Topology};
use tokio::io::AsyncReadExt;

const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.52";

fn topology_file(name: &str) -> Topology {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("topologies")
        .join(format!("{name}.yaml"));
    Topology::load(&path).expect("topology file")
}

/// What a client can tell about the cluster's network from its API objects.
#[derive(Debug, PartialEq)]
struct NetworkFacts {
    mode: Option<NetworkMode>,
    dsr: Option<bool>,
    kube_proxy: Option<String>,
    windows_kube_proxy: Vec<String>,
}

fn tag(image: &str) -> String {
    image.rsplit_once(':').map(|(_, t)| t.to_string()).unwrap_or_default()
}

fn first_image(ds: &DaemonSet) -> String {
    ds.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

fn template_os(ds: &DaemonSet) -> Option<String> {
    ds.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.node_selector.as_ref())
        .and_then(|sel| sel.get("kubernetes.io/os").or_else(|| sel.get("beta.kubernetes.io/os")))
        .cloned()
}

/// The detection a harness does, from ConfigMaps and DaemonSets in every namespace.
async fn detect(client: &Client) -> NetworkFacts {
    let cms = Api::<ConfigMap>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("configmaps");
    let dss = Api::<DaemonSet>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("daemonsets");
    let named = |name: &str| dss.items.iter().any(|d| d.metadata.name.as_deref() == Some(name));
    let flannel = cms
        .items
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some("kube-flannel-cfg"))
        .and_then(|c| c.data.as_ref()?.get("net-conf.json").cloned());
    let mode = match flannel {
        Some(text) => {
            let conf: Value = serde_json::from_str(&text).expect("net-conf.json");
            match conf.pointer("/Backend/Type").and_then(Value::as_str) {
                Some("host-gw") => Some(NetworkMode::L2bridge),
                Some("vxlan") => Some(NetworkMode::Overlay),
                other => panic!("unknown flannel backend {other:?}"),
            }
        }
        None if named("azure-cni-networkmonitor") => Some(NetworkMode::L2tunnel),
        None if named("ovnkube-node") => Some(NetworkMode::Transparent),
        None => None,
    };
    let dsr = cms
        .items
        .iter()
        .find(|c| {
            c.metadata.name.as_deref() == Some("kube-proxy-windows")
                && c.metadata.namespace.as_deref() == Some("kube-system")
        })
        .and_then(|c| c.data.as_ref()?.get("config.conf").cloned())
        .map(|text| {
            let conf: Value = serde_saphyr::from_str(&text).expect("config.conf is YAML");
            assert_eq!(conf["kind"], "KubeProxyConfiguration");
            assert_eq!(conf["mode"], "kernelspace");
            conf.pointer("/winkernel/enableDSR")
                .and_then(Value::as_bool)
                .expect("winkernel.enableDSR")
        });
    let kube_proxy = dss
        .items
        .iter()
        .find(|d| {
            d.metadata.name.as_deref() == Some("kube-proxy") && d.metadata.namespace.as_deref() == Some("kube-system")
        })
        .map(|d| tag(&first_image(d)));
    let mut windows_kube_proxy: Vec<String> = dss
        .items
        .iter()
        .filter(|d| {
            d.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("k8s-app"))
                .map(String::as_str)
                == Some("kube-proxy")
                && template_os(d).as_deref() == Some("windows")
        })
        .map(|d| {
            let t = tag(&first_image(d));
            t.split("-flannel").next().unwrap_or(&t).to_string()
        })
        .collect();
    windows_kube_proxy.sort();
    NetworkFacts {
        mode,
        dsr,
        kube_proxy,
        windows_kube_proxy,
    }
}

/// What a real cluster of the topology shows: flannel's backend, the Windows kube-proxy's DSR
/// setting where it is a HostProcess DaemonSet (current profiles), nothing for the seed-era node
/// services; no CNI object for the 1.5-era hand-made routes.
fn expected(topology: &Topology) -> (NetworkFacts, bool) {
    let ips: Vec<Ipv4Addr> = (0..topology.nodes.len()).map(|_| Ipv4Addr::LOCALHOST).collect();
    let profiles = simcluster::profiles(topology, &ips);
    let windows: Vec<_> = profiles.iter().filter(|p| p.is_windows()).collect();
    let host_process = !windows.is_empty() && windows.iter().all(|p| p.supports_host_process());
    let mode = topology.network.mode;
    let flannel = matches!(mode, NetworkMode::L2bridge | NetworkMode::Overlay);
    let mut windows_kube_proxy: Vec<String> = if host_process && flannel {
        topology
            .nodes
            .iter()
            .zip(&profiles)
            .filter(|(_, p)| p.is_windows())
            .map(|(spec, p)| {
                if spec.kube_proxy_version.is_empty() {
                    p.kubelet_version.clone()
                } else {
                    spec.kube_proxy_version.clone()
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    windows_kube_proxy.sort();
    windows_kube_proxy.dedup();
    let facts = NetworkFacts {
        mode: match (mode, host_process) {
            (NetworkMode::Transparent, false) => None,
            (m, _) => Some(m),
        },
        dsr: (host_process && flannel).then_some(topology.network.dsr),
        kube_proxy: (!(mode == NetworkMode::Transparent && host_process)).then(|| topology.kubernetes_version.clone()),
        windows_kube_proxy,
    };
    (facts, host_process)
}

fn node_of(p: &Pod) -> String {
    p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default()
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The pods matching `selector` in `ns` once all are ready and there are `count` of them.
async fn ready_pods(client: &Client, ns: &str, selector: &str, count: usize) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    common::eventually(&format!("{count} ready pods {selector} in {ns}"), || async {
        let list = pods.list(&ListParams::default().labels(selector)).await.ok()?;
        (list.items.len() == count && list.items.iter().all(ready)).then_some(list.items)
    })
    .await
}

fn nodes_of(pods: &[Pod]) -> Vec<String> {
    let mut nodes: Vec<String> = pods.iter().map(node_of).collect();
    nodes.sort();
    nodes
}

#[rstest]
#[case::default("default")]
#[case::ws2016("k8s-1.5-ws2016")]
#[case::ws1709("k8s-1.9-ws1709")]
#[case::host_gw("k8s-1.14-ws2019-host-gw")]
#[case::vxlan("k8s-1.14-ws2019-vxlan")]
#[case::current("current-ws2022-ws2025")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_facts_read_from_the_api_match_the_topology(#[case] profile: &str) {
    check_facts_and_placement(topology_file(profile)).await;
}

/// Set-ups no built-in profile has: a current overlay cluster with DSR, AKS's Azure CNI,
/// ovn-kubernetes, and Windows nodes whose kube-proxy versions differ.
#[rstest]
#[case::overlay_with_dsr("network: {mode: overlay, dsr: true}\n", "")]
#[case::azure_cni("network: {mode: l2tunnel}\n", "")]
#[case::ovn_kubernetes("network: {mode: transparent}\n", "")]
#[case::kube_proxy_skew("", ", kubeProxyVersion: v1.31.2")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_facts_of_other_set_ups(#[case] network: &str, #[case] second_windows: &str) {
    let yaml = format!(
        "name: t\nkubernetesVersion: v1.32.3\n{network}nodes:\n\
         - {{name: control-plane, os: linux, role: control-plane, taints: [{{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}}]}}\n\
         - {{name: linux-1, os: linux}}\n\
         - {{name: win-a, os: windows, kernelVersion: 10.0.20348.2762, containerRuntime: containerd://1.7.20}}\n\
         - {{name: win-b, os: windows, kernelVersion: 10.0.17763.6414, containerRuntime: containerd://1.7.20{second_windows}}}\n"
    );
    check_facts_and_placement(Topology::parse(&yaml, "t").expect("topology")).await;
}

async fn check_facts_and_placement(topology: Topology) {
    let profile = topology.name.clone();
    let (want, host_process) = expected(&topology);
    let cluster = common::start_with(ClusterConfig::new(topology.clone())).await;
    let client = common::kube_client(&cluster).await;
    assert_eq!(detect(&client).await, want, "{profile}");

    // The add-on pods run where the profile puts them.
    let mut linux: Vec<String> = topology
        .nodes
        .iter()
        .filter(|n| n.os == simcluster::Os::Linux)
        .map(|n| n.name.clone())
        .collect();
    linux.sort();
    let windows: Vec<String> = topology
        .nodes
        .iter()
        .filter(|n| n.os == simcluster::Os::Windows)
        .map(|n| n.name.clone())
        .collect();
    let dns_replicas = if topology.version() >= (1, 11) { 2 } else { 1 };
    let dns = ready_pods(&client, "kube-system", "k8s-app=kube-dns", dns_replicas).await;
    assert!(dns.iter().all(|p| linux.contains(&node_of(p))), "DNS on Linux nodes");
    if want.kube_proxy.is_some() {
        let proxies = ready_pods(&client, "kube-system", "k8s-app=kube-proxy", linux.len()).await;
        assert_eq!(nodes_of(&proxies), linux, "kube-proxy on every Linux node");
    }
    if let Some(mode) = want
        .mode
        .filter(|m| matches!(m, NetworkMode::L2bridge | NetworkMode::Overlay))
    {
        let ns = if host_process { "kube-flannel" } else { "kube-system" };
        let agents = if host_process {
            linux.len() + windows.len()
        } else {
            linux.len()
        };
        let flannel = ready_pods(&client, ns, "app=flannel", agents).await;
        assert!(
            nodes_of(&flannel).iter().all(|n| linux.contains(n) || host_process),
            "{mode:?}"
        );
    }
    if host_process && want.windows_kube_proxy.len() == 1 {
        let proxies = ready_pods(&client, "kube-system", "k8s-app=kube-proxy-windows", windows.len()).await;
        let mut want_nodes = windows.clone();
        want_nodes.sort();
        assert_eq!(
            nodes_of(&proxies),
            want_nodes,
            "the HostProcess kube-proxy on every Windows node"
        );
        let hp = proxies[0]
            .spec
            .as_ref()
            .and_then(|s| s.security_context.as_ref())
            .and_then(|s| s.windows_options.as_ref())
            .and_then(|w| w.host_process);
        assert_eq!(hp, Some(true));
        let args = proxies[0]
            .spec
            .as_ref()
            .map(|s| s.containers[0].args.clone().unwrap_or_default());
        assert!(
            args.unwrap_or_default()
                .iter()
                .any(|a| a == "--hostname-override=$(NODE_NAME)"),
            "NET-KUBEPROXY-HOSTNAME"
        );
    }
}

/// Runs `argv` in `pod`: whether it succeeded, and its stdout then stderr.
pub(crate) async fn exec(pods: &Api<Pod>, pod: &str, argv: &[&str]) -> (bool, String) {
    let mut proc = pods
        .exec(
            pod,
            argv.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            &AttachParams::default(),
        )
        .await
        .expect("exec");
    let mut stdout = proc.stdout().expect("stdout");
    let mut stderr = proc.stderr().expect("stderr");
    let status = proc.take_status().expect("status");
    let (mut out, mut err) = (String::new(), String::new());
    let (o, e, status) = tokio::join!(stdout.read_to_string(&mut out), stderr.read_to_string(&mut err), status);
    o.expect("stdout");
    e.expect("stderr");
    let ok = status.and_then(|s| s.status).as_deref() == Some("Success");
    (ok, format!("{out}{err}"))
}

async fn scale_coredns(client: &Client, replicas: i32) {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "kube-system");
    deployments
        .patch(
            "coredns",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .expect("scale coredns");
}

async fn dns_addresses(client: &Client) -> Vec<(String, String)> {
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "kube-system");
    let Ok(e) = endpoints.get("kube-dns").await else {
        return Vec::new();
    };
    e.subsets
        .unwrap_or_default()
        .into_iter()
        .flat_map(|s| s.addresses.unwrap_or_default())
        .map(|a| (a.ip, a.target_ref.and_then(|r| r.name).unwrap_or_default()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_dns_goes_through_the_coredns_pods() {
    let (_cluster, client) =
        common::cluster_and_client(Topology::default_cluster().instant().on_wall_clock(), "dns").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "dns");
    let client_pod = json!({"metadata": {"name": "cli"}, "spec": {"nodeSelector": {"kubernetes.io/hostname": "linux-1"},
        "containers": [{"name": "c", "image": AGNHOST, "args": ["pause"]}]}});
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(client_pod).expect("pod"),
    )
    .await
    .expect("create");
    common::eventually("the client pod running", || async {
        pods.get("cli").await.ok().filter(|p| common::phase(p) == "Running")
    })
    .await;

    // The kube-dns endpoints are the CoreDNS pods.
    let coredns = ready_pods(&client, "kube-system", "k8s-app=kube-dns", 2).await;
    let mut addresses = dns_addresses(&client).await;
    addresses.sort();
    let mut expected: Vec<(String, String)> = coredns
        .iter()
        .map(|p| {
            (
                p.status.as_ref().and_then(|s| s.pod_ip.clone()).unwrap_or_default(),
                p.metadata.name.clone().unwrap_or_default(),
            )
        })
        .collect();
    expected.sort();
    assert_eq!(addresses, expected);
    assert!(
        expected.iter().all(|(_, name)| name.starts_with("coredns-")),
        "{expected:?}"
    );

    let (ok, out) = exec(&pods, "cli", &["nslookup", "kubernetes.default"]).await;
    assert!(ok, "{out}");
    assert!(out.contains("10.96.0.1"), "{out}");
    // CoreDNS's own endpoints answer on the pod IP.
    let ip = &expected[0].0;
    for (port, path, body) in [
        (8181, "ready", "OK"),
        (8080, "health", "OK"),
        (9153, "metrics", "coredns_"),
    ] {
        let (ok, out) = exec(&pods, "cli", &["curl", "-s", &format!("http://{ip}:{port}/{path}")]).await;
        assert!(ok && out.contains(body), "{port}/{path}: {out}");
    }

    // No CoreDNS pod: no DNS, as on a real cluster.
    scale_coredns(&client, 0).await;
    common::eventually("kube-dns without endpoints", || async {
        dns_addresses(&client).await.is_empty().then_some(())
    })
    .await;
    let (ok, out) = exec(&pods, "cli", &["nslookup", "kubernetes.default"]).await;
    assert!(!ok, "{out}");
    assert!(out.contains("timed out"), "{out}");

    scale_coredns(&client, 2).await;
    ready_pods(&client, "kube-system", "k8s-app=kube-dns", 2).await;
    common::eventually("kube-dns endpoints back", || async {
        (dns_addresses(&client).await.len() == 2).then_some(())
    })
    .await;
    let (ok, out) = exec(&pods, "cli", &["nslookup", "kubernetes.default"]).await;
    assert!(ok, "{out}");
}

const FAULTED: &str = "win2022-1";

async fn pod_on(client: &Client, ns: &str, selector: &str, node: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    common::eventually(&format!("a {selector} pod on {node}"), || async {
        let list = pods.list(&ListParams::default().labels(selector)).await.ok()?;
        list.items.into_iter().find(|p| node_of(p) == node)
    })
    .await
}

/// The log of the pod's first container (its last instance while it crash-loops).
async fn log_of(client: &Client, ns: &str, pod: &str) -> String {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    pods.logs(pod, &LogParams::default()).await.unwrap_or_default()
}

fn waiting_reason(p: &Pod) -> Option<String> {
    p.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

#[rstest]
#[case::kube_proxy_stopped(
    "kube-proxy-stopped",
    "kube-system",
    "k8s-app=kube-proxy-windows",
    false,
    "\"Error running ProxyServer\""
)]
#[case::no_hostname_override(
    "kube-proxy-no-hostname-override",
    "kube-system",
    "k8s-app=kube-proxy-windows",
    true,
    "\"Failed to retrieve node info\" err=\"nodes \\\"win-"
)]
#[case::flanneld_waiting(
    "flanneld-waiting",
    "kube-flannel",
    "app=flannel",
    false,
    "Waiting for the Network to be created"
)]
#[case::subnet_env_missing(
    "flannel-subnet-env-missing",
    "kube-flannel",
    "app=flannel",
    true,
    "Failed to write subnet file: open C:\\run\\flannel\\subnet.env"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_faults_show_in_the_agents_pods(
    #[case] fault: &str,
    #[case] ns: &str,
    #[case] selector: &str,
    #[case] stays_ready: bool,
    #[case] logged: &str,
) {
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    for node in topology.nodes.iter_mut().filter(|n| n.name == FAULTED) {
        node.faults.push(fault.to_string());
    }
    let cluster = common::start_with(ClusterConfig::new(topology)).await;
    let client = common::kube_client(&cluster).await;
    let pod = pod_on(&client, ns, selector, FAULTED).await;
    let name = pod.metadata.name.clone().unwrap_or_default();
    let log = common::eventually(&format!("{logged:?} in the log of {name}"), || async {
        let log = log_of(&client, ns, &name).await;
        log.contains(logged).then_some(log)
    })
    .await;
    assert!(log.contains(logged), "{log}");
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    if stays_ready {
        common::eventually("the agent ready", || async { pods.get(&name).await.ok().filter(ready) }).await;
    } else {
        let p = common::eventually("the agent crash-looping", || async {
            pods.get(&name)
                .await
                .ok()
                .filter(|p| waiting_reason(p).as_deref() == Some("CrashLoopBackOff"))
        })
        .await;
        assert!(!ready(&p));
    }
    // The same agent on the other Windows node is unaffected.
    let other = pod_on(&client, ns, selector, "win2019-1").await;
    let other_name = other.metadata.name.clone().unwrap_or_default();
    common::eventually("the other node's agent ready", || async {
        pods.get(&other_name).await.ok().filter(ready)
    })
    .await;
    assert!(!log_of(&client, ns, &other_name).await.contains(logged));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_kubelets_agents_do_not_run() {
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    for node in topology.nodes.iter_mut().filter(|n| n.name == FAULTED) {
        node.faults.push("kubelet-stopped".to_string());
    }
    let cluster = common::start_with(ClusterConfig::new(topology)).await;
    let client = common::kube_client(&cluster).await;
    let node = Api::<Node>::all(client.clone()).get(FAULTED).await.expect("node");
    let node_ready = node
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status);
    assert_eq!(node_ready.as_deref(), Some("Unknown"));
    for (ns, selector) in [
        ("kube-system", "k8s-app=kube-proxy-windows"),
        ("kube-flannel", "app=flannel"),
    ] {
        let p = pod_on(&client, ns, selector, FAULTED).await;
        assert_eq!(common::phase(&p), "Pending", "{selector}");
        assert!(!ready(&p), "{selector}");
    }
    // The DaemonSet counts the node's pod as unavailable.
    let ds: Api<DaemonSet> = Api::namespaced(client.clone(), "kube-system");
    let status = common::eventually("kube-proxy-windows status", || async {
        let d = ds.get("kube-proxy-windows").await.ok()?;
        d.status
            .filter(|s| s.desired_number_scheduled == 2 && s.number_ready == 1)
    })
    .await;
    assert_eq!(status.number_unavailable, Some(1));
}
