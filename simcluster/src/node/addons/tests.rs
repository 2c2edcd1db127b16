//! The add-on table per profile, the manifests' facts, and the add-on processes per fault.

use std::net::Ipv4Addr;

use rstest::rstest;
use serde_json::Value;

use super::*;
use crate::config::faults::Fault;
use crate::config::profile::profiles;
use crate::config::topology::Topology;
use crate::node::runtime::Process;

fn addons_of(topology: &Topology) -> (Addons, Vec<NodeProfile>) {
    let ips: Vec<Ipv4Addr> = (0..topology.nodes.len())
        .map(|i| Ipv4Addr::new(127, 7, 7, 10 + u8::try_from(i).unwrap_or(0)))
        .collect();
    let p = profiles(topology, &ips);
    (Addons::new(topology, &p), p)
}

fn profile(name: &str) -> (Addons, Vec<NodeProfile>) {
    addons_of(&Topology::profile(name).expect("profile"))
}

fn find<'a>(objects: &'a [Object], plural: &str, ns: &str, name: &str) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| {
            o.resource.plural == plural
                && o.namespace == ns
                && o.value.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
        })
        .map(|o| &o.value)
}

fn image(v: &Value) -> &str {
    v.pointer("/spec/template/spec/containers/0/image")
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[rstest]
#[case::default(
    "default",
    Era::HostProcess,
    "kube-flannel",
    "registry.k8s.io/kube-proxy:v1.32.3",
    "registry.k8s.io/coredns/coredns:v1.11.3"
)]
#[case::current(
    "current-ws2022-ws2025",
    Era::HostProcess,
    "kube-flannel",
    "registry.k8s.io/kube-proxy:v1.35.0",
    "registry.k8s.io/coredns/coredns:v1.12.1"
)]
#[case::host_gw(
    "k8s-1.14-ws2019-host-gw",
    Era::NodeServices,
    "kube-system",
    "k8s.gcr.io/kube-proxy:v1.14.10",
    "k8s.gcr.io/coredns:1.3.1"
)]
#[case::vxlan(
    "k8s-1.14-ws2019-vxlan",
    Era::NodeServices,
    "kube-system",
    "k8s.gcr.io/kube-proxy:v1.14.10",
    "k8s.gcr.io/coredns:1.3.1"
)]
#[case::ws1709(
    "k8s-1.9-ws1709",
    Era::NodeServices,
    "kube-system",
    "gcr.io/google_containers/kube-proxy-amd64:v1.9.11",
    ""
)]
#[case::ws2016(
    "k8s-1.5-ws2016",
    Era::NodeServices,
    "",
    "gcr.io/google_containers/kube-proxy-amd64:v1.5.7",
    ""
)]
fn each_profile_gets_its_eras_addons(
    #[case] name: &str,
    #[case] era: Era,
    #[case] flannel_ns: &str,
    #[case] kube_proxy: &str,
    #[case] coredns: &str,
) {
    let (a, _) = profile(name);
    assert_eq!(a.era, era, "{name}");
    let objects = a.objects();
    let ds = find(&objects, "daemonsets", "kube-system", "kube-proxy").expect("kube-proxy DaemonSet");
    assert_eq!(image(ds), kube_proxy);
    match coredns {
        "" => {
            assert_eq!(a.dns, ClusterDns::KubeDns);
            assert!(find(&objects, "deployments", "kube-system", "kube-dns").is_some());
        }
        img => {
            let d = find(&objects, "deployments", "kube-system", "coredns").expect("coredns");
            assert_eq!(image(d), img);
            assert_eq!(d.pointer("/spec/replicas").and_then(Value::as_i64), Some(2));
        }
    }
    let windows_ds = find(&objects, "daemonsets", "kube-system", "kube-proxy-windows");
    assert_eq!(windows_ds.is_some(), era == Era::HostProcess, "{name}");
    match &a.cni {
        Cni::Flannel { namespace, .. } => {
            assert_eq!(*namespace, flannel_ns);
            assert!(find(&objects, "configmaps", namespace, "kube-flannel-cfg").is_some());
        }
        Cni::HostRoutes => assert_eq!(flannel_ns, ""),
        other => panic!("{name}: unexpected {other:?}"),
    }
}

#[test]
fn every_object_lands_in_a_namespace_that_exists() {
    for (name, _) in crate::config::topology::PROFILES {
        let (a, _) = profile(name);
        let objects = a.objects();
        let created: Vec<&str> = objects
            .iter()
            .filter(|o| o.resource.plural == "namespaces")
            .filter_map(|o| o.value.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        for o in &objects {
            if o.resource.namespaced {
                assert!(
                    o.namespace == "kube-system" || created.contains(&o.namespace.as_str()),
                    "{name}: {} in {}",
                    o.resource.plural,
                    o.namespace
                );
            }
        }
    }
}

#[rstest]
#[case::host_gw("l2bridge", "\"Type\": \"host-gw\"", false)]
#[case::vxlan("overlay", "\"VNI\": 4096", true)]
fn net_conf_names_the_backend(#[case] mode: &str, #[case] needle: &str, #[case] overlay: bool) {
    let text = format!(
        "name: t\nkubernetesVersion: v1.33.1\nnetwork: {{mode: {mode}, dsr: true}}\nnodes:\n- {{name: l, os: linux}}\n- {{name: w, os: windows, kernelVersion: 10.0.20348.1, containerRuntime: containerd://1.7.20}}\n"
    );
    let (a, _) = addons_of(&Topology::parse(&text, "t").expect("topology"));
    let objects = a.objects();
    let cfg = find(&objects, "configmaps", "kube-flannel", "kube-flannel-cfg").expect("cfg");
    let net = cfg.pointer("/data/net-conf.json").and_then(Value::as_str).unwrap_or("");
    assert!(net.contains(needle), "{net}");
    assert_eq!(net.contains("\"Port\": 4789"), overlay, "{net}");
    let parsed: Value = serde_json::from_str(net).expect("net-conf.json is JSON");
    assert_eq!(parsed["Network"], "10.244.0.0/16");
    let win = find(&objects, "configmaps", "kube-system", "kube-proxy-windows").expect("windows cfg");
    let conf = win.pointer("/data/config.conf").and_then(Value::as_str).unwrap_or("");
    assert!(conf.contains("mode: kernelspace"), "{conf}");
    assert!(conf.contains("enableDSR: true"), "{conf}");
    assert!(conf.contains("WinDSR: true"), "{conf}");
    assert_eq!(conf.contains("WinOverlay: true"), overlay, "{conf}");
}

#[rstest]
#[case::aks_engine("l2tunnel", "azure-cni-networkmonitor", "kube-system", true)]
#[case::ovn("transparent", "ovnkube-node", "ovn-kubernetes", false)]
fn other_cnis_show_their_markers(#[case] mode: &str, #[case] ds: &str, #[case] ns: &str, #[case] kube_proxy: bool) {
    let text = format!(
        "name: t\nkubernetesVersion: v1.30.2\nnetwork: {{mode: {mode}}}\nnodes:\n- {{name: l, os: linux}}\n- {{name: w, os: windows, kernelVersion: 10.0.20348.1, containerRuntime: containerd://1.7.20}}\n"
    );
    let (a, _) = addons_of(&Topology::parse(&text, "t").expect("topology"));
    let objects = a.objects();
    assert!(find(&objects, "daemonsets", ns, ds).is_some(), "{ds}");
    assert_eq!(
        find(&objects, "daemonsets", "kube-system", "kube-proxy").is_some(),
        kube_proxy
    );
    // The Windows agents of these CNIs are node services.
    assert!(find(&objects, "daemonsets", "kube-system", "kube-proxy-windows").is_none());
}

#[test]
fn windows_kube_proxy_versions_follow_the_nodes() {
    let text = "name: t\nkubernetesVersion: v1.32.3\nnodes:\n- {name: l, os: linux}\n\
        - {name: w1, os: windows, kernelVersion: 10.0.20348.1, containerRuntime: containerd://1.7.20}\n\
        - {name: w2, os: windows, kernelVersion: 10.0.20348.1, containerRuntime: containerd://1.7.20, kubeletVersion: v1.31.4}\n\
        - {name: w3, os: windows, kernelVersion: 10.0.20348.1, containerRuntime: containerd://1.7.20, kubeProxyVersion: v1.30.1}\n";
    let (a, _) = addons_of(&Topology::parse(text, "t").expect("topology"));
    let objects = a.objects();
    let first = find(&objects, "daemonsets", "kube-system", "kube-proxy-windows").expect("first");
    assert_eq!(image(first), "sigwindowstools/kube-proxy:v1.32.3-flannel-hostprocess");
    let second = find(&objects, "daemonsets", "kube-system", "kube-proxy-windows-v1-31-4").expect("second");
    assert_eq!(image(second), "sigwindowstools/kube-proxy:v1.31.4-flannel-hostprocess");
    assert_eq!(
        second.pointer("/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0"),
        Some(&Value::from("w2"))
    );
    let third = find(&objects, "daemonsets", "kube-system", "kube-proxy-windows-v1-30-1").expect("third");
    assert_eq!(image(third), "sigwindowstools/kube-proxy:v1.30.1-flannel-hostprocess");
}

fn windows_node(faults: &[Fault]) -> NodeProfile {
    let (_, mut p) = crate::config::profile::default_node("win2022-1", Ipv4Addr::new(127, 1, 1, 13));
    p.faults.extend(faults.iter().copied());
    p
}

fn log_of(p: &Process) -> Vec<String> {
    match p {
        Process::LongRunning { log }
        | Process::Holding { log, .. }
        | Process::Exits { log, .. }
        | Process::AllocationFails { log, .. } => log.clone(),
        Process::OomKilled { .. } => Vec::new(),
    }
}

const WIN_PROXY: &str = "sigwindowstools/kube-proxy:v1.32.3-flannel-hostprocess";
const WIN_FLANNEL: &str = "sigwindowstools/flannel:v0.26.1-hostprocess";

#[rstest]
#[case::healthy_proxy(WIN_PROXY, &[], true, "\"Version info\" version=\"v1.32.3\"")]
#[case::proxy_stopped(WIN_PROXY, &[Fault::KubeProxyStopped], false, "\"Error running ProxyServer\"")]
#[case::no_hostname_override(WIN_PROXY, &[Fault::KubeProxyNoHostnameOverride], true, "\"Failed to retrieve node info\" err=\"nodes \\\"win-")]
#[case::healthy_flannel(WIN_FLANNEL, &[], true, "Wrote subnet file to C:\\run\\flannel\\subnet.env")]
#[case::flanneld_waiting(WIN_FLANNEL, &[Fault::FlanneldWaiting], false, "Waiting for the Network to be created")]
#[case::subnet_env_missing(WIN_FLANNEL, &[Fault::FlannelSubnetEnvMissing], true, "Failed to write subnet file: open C:\\run\\flannel\\subnet.env")]
fn windows_agents_show_their_nodes_faults(
    #[case] image: &str,
    #[case] faults: &[Fault],
    #[case] keeps_running: bool,
    #[case] logged: &str,
) {
    let node = windows_node(faults);
    let p = process(&node, image, None, None).expect("an add-on process");
    assert_eq!(matches!(p, Process::LongRunning { .. }), keeps_running, "{p:?}");
    let log = log_of(&p);
    assert!(log.iter().any(|l| l.contains(logged)), "{logged:?} not in {log:#?}");
}

#[test]
fn vxlan_mismatch_shows_in_the_vxlan_config_line() {
    let mut node = windows_node(&[Fault::VxlanParamsMismatch]);
    node.network_mode = NetworkMode::Overlay;
    let log = log_of(&process(&node, WIN_FLANNEL, None, None).expect("flanneld"));
    assert!(log.iter().any(|l| l.contains("VNI=4097 Port=4789")), "{log:#?}");
    node.faults.clear();
    let log = log_of(&process(&node, WIN_FLANNEL, None, None).expect("flanneld"));
    assert!(log.iter().any(|l| l.contains("VNI=4096 Port=4789")), "{log:#?}");
}

#[rstest]
#[case::install_step("docker.io/flannel/flannel:v0.26.1", Some(vec!["cp".to_string()]), false)]
#[case::flanneld("docker.io/flannel/flannel:v0.26.1", Some(vec!["/opt/bin/flanneld".to_string()]), true)]
#[case::kube_proxy("registry.k8s.io/kube-proxy:v1.32.3", Some(vec!["/usr/local/bin/kube-proxy".to_string()]), true)]
#[case::shell_in_kube_proxy("registry.k8s.io/kube-proxy:v1.32.3", Some(vec!["sh".to_string()]), false)]
#[case::coredns("registry.k8s.io/coredns/coredns:v1.11.3", None, true)]
#[case::not_an_addon("busybox", None, false)]
fn only_the_addons_own_programs_are_modelled(
    #[case] image: &str,
    #[case] command: Option<Vec<String>>,
    #[case] modelled: bool,
) {
    let (_, linux) = crate::config::profile::default_node("linux-1", Ipv4Addr::new(127, 1, 1, 11));
    assert_eq!(process(&linux, image, command.as_deref(), None).is_some(), modelled);
}

#[test]
fn the_machine_hostname_is_a_windows_default_name() {
    let node = windows_node(&[]);
    let name = crate::node::host::machine_hostname(&node);
    assert!(name.starts_with("win-") && name.len() == 15, "{name}");
    assert_ne!(name, node.name);
    assert_eq!(name, crate::node::host::machine_hostname(&node), "stable");
}

#[rstest]
#[case::default("default", "kube-flannel", "kube-flannel-ds", "docker.io/flannel/flannel:v0.26.1")]
#[case::host_gw(
    "k8s-1.14-ws2019-host-gw",
    "kube-system",
    "kube-flannel-ds-amd64",
    "quay.io/coreos/flannel:v0.11.0-amd64"
)]
#[case::vxlan(
    "k8s-1.14-ws2019-vxlan",
    "kube-system",
    "kube-flannel-ds-amd64",
    "quay.io/coreos/flannel:v0.11.0-amd64"
)]
#[case::ws1709(
    "k8s-1.9-ws1709",
    "kube-system",
    "kube-flannel-ds",
    "quay.io/coreos/flannel:v0.10.0-amd64"
)]
fn flannel_follows_its_eras_manifest(#[case] name: &str, #[case] ns: &str, #[case] ds: &str, #[case] img: &str) {
    let (a, _) = profile(name);
    let objects = a.objects();
    let d = find(&objects, "daemonsets", ns, ds).unwrap_or_else(|| panic!("{name}: {ns}/{ds}"));
    assert_eq!(image(d), img);
    let windows = find(&objects, "daemonsets", ns, "kube-flannel-ds-windows-amd64");
    assert_eq!(windows.is_some(), a.era == Era::HostProcess, "{name}");
}

/// The platform profiles' kube-system as each platform shows it (real-clusters.md §3): managed
/// platforms have no Windows kube-proxy DaemonSet, no flannel ConfigMap and their own agents;
/// the kubeadm ones have sig-windows-tools' HostProcess DaemonSets.
#[rstest]
#[case::aks("aks", &["azure-cns", "azure-ip-masq-agent", "cloud-node-manager", "cloud-node-manager-windows", "kube-proxy"], &["azure-cni-networkmonitor", "kube-proxy-windows"])]
#[case::aks_overlay("aks-overlay", &["azure-cns", "azure-cns-win", "azure-ip-masq-agent", "cloud-node-manager-windows", "kube-proxy"], &["azure-cni-networkmonitor", "kube-proxy-windows"])]
#[case::eks("eks", &["aws-node", "kube-proxy"], &["kube-proxy-windows"])]
#[case::gke("gke", &[], &["kube-proxy", "kube-proxy-windows", "anetd", "anetd-win"])]
#[case::gke_dpv2("gke-dpv2", &["anetd", "anetd-win"], &["kube-proxy", "kube-proxy-windows"])]
#[case::kubeadm_flannel("kubeadm-flannel-hostprocess", &["kube-proxy", "kube-proxy-windows"], &[])]
#[case::kubeadm_calico("kubeadm-calico", &["kube-proxy", "kube-proxy-windows"], &[])]
fn platform_profiles_list_their_own_kube_system(#[case] name: &str, #[case] present: &[&str], #[case] absent: &[&str]) {
    let (a, _) = profile(name);
    let objects = a.objects();
    for ds in present {
        assert!(
            find(&objects, "daemonsets", "kube-system", ds).is_some(),
            "{name}: {ds} missing"
        );
    }
    for ds in absent {
        assert!(
            find(&objects, "daemonsets", "kube-system", ds).is_none(),
            "{name}: {ds} present"
        );
    }
    let flannel_cm = objects.iter().any(|o| {
        o.resource.plural == "configmaps"
            && o.value.pointer("/metadata/name").and_then(Value::as_str) == Some("kube-flannel-cfg")
    });
    assert_eq!(flannel_cm, name == "kubeadm-flannel-hostprocess", "{name}");
    let managed = matches!(name, "aks" | "aks-overlay" | "eks" | "gke" | "gke-dpv2");
    assert_eq!(a.era == Era::NodeServices, managed, "{name}");
    // kubeadm's own ConfigMap on kubeadm clusters only (kubeadm `uploadconfig`).
    let kubeadm_config = find(&objects, "configmaps", "kube-system", "kubeadm-config");
    assert_eq!(kubeadm_config.is_some(), !managed, "{name}");
    if name == "aks" {
        let cns_win = find(&objects, "daemonsets", "kube-system", "azure-cns-win");
        assert!(cns_win.is_none(), "azure-cns-win comes with Azure CNI Overlay");
    }
    if name == "aks-overlay" {
        let cns_win = find(&objects, "daemonsets", "kube-system", "azure-cns-win").expect("azure-cns-win");
        assert_eq!(
            cns_win.pointer("/spec/template/spec/securityContext/windowsOptions/hostProcess"),
            Some(&serde_json::json!(true))
        );
    }
    // Dataplane V2 runs no kube-proxy: not even the Linux static pods' mirrors.
    let mirrors = objects.iter().any(|o| {
        o.resource.plural == "pods"
            && o.value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.starts_with("kube-proxy-"))
    });
    assert_eq!(mirrors, name == "gke", "{name}");
    assert_eq!(a.has_kube_proxy(), name != "gke-dpv2", "{name}");
    match name {
        "gke" | "gke-dpv2" => assert!(matches!(a.dns, ClusterDns::KubeDns), "GKE serves DNS with kube-dns"),
        _ => assert!(matches!(a.dns, ClusterDns::CoreDns { .. }), "{name}"),
    }
    if name == "eks" {
        let cm = find(&objects, "configmaps", "kube-system", "amazon-vpc-cni").expect("amazon-vpc-cni");
        assert_eq!(
            cm.pointer("/data/enable-windows-ipam").and_then(Value::as_str),
            Some("true")
        );
        let aws_node = find(&objects, "daemonsets", "kube-system", "aws-node").expect("aws-node");
        assert_eq!(
            aws_node
                .pointer("/spec/template/spec/nodeSelector/kubernetes.io~1os")
                .and_then(Value::as_str),
            Some("linux"),
            "aws-node is Linux-only"
        );
    }
    if name == "kubeadm-calico" {
        assert!(find(&objects, "daemonsets", "calico-system", "calico-node-windows").is_some());
        let kp = find(&objects, "daemonsets", "kube-system", "kube-proxy-windows").expect("kube-proxy-windows");
        assert!(image(kp).ends_with("-calico-hostprocess"), "{}", image(kp));
        assert!(windows_kube_proxy_config_of(&a).contains("enableDSR: true"));
    }
}

fn windows_kube_proxy_config_of(a: &Addons) -> String {
    super::manifests::windows_kube_proxy_config(a)
}

/// Each platform's nodes: providerID scheme, whether `hostname` prints the node name, the
/// EKS Windows nodes' ENI-limited maxPods, and the agents as node services where managed.
#[rstest]
#[case::aks("aks", "azure:///", true, None)]
#[case::aks_overlay("aks-overlay", "azure:///", true, None)]
#[case::eks("eks", "aws:///", false, Some("9"))]
#[case::gke_dpv2("gke-dpv2", "gce://", false, None)]
#[case::gke("gke", "gce://", false, None)]
#[case::kubeadm("kubeadm-calico", "mixcheck-sim://", true, None)]
fn platform_nodes(
    #[case] name: &str,
    #[case] provider: &str,
    #[case] hostname_is_name: bool,
    #[case] pods: Option<&str>,
) {
    let topology = Topology::profile(name).expect("profile");
    let (_, profiles) = addons_of(&topology);
    for (spec, p) in topology.nodes.iter().zip(&profiles) {
        let node = crate::node::objects::node_object(spec, p);
        let id = node.pointer("/spec/providerID").and_then(Value::as_str).unwrap_or("");
        assert!(id.starts_with(provider), "{name}/{}: {id}", p.name);
        // Only kubeadm joins a node with the CRI socket annotation.
        let annotated = node
            .pointer("/metadata/annotations/kubeadm.alpha.kubernetes.io~1cri-socket")
            .is_some();
        assert_eq!(annotated, !topology.platform.managed(), "{name}/{}", p.name);
        if p.is_windows() {
            assert_eq!(
                crate::node::host::host_name(p) == p.name,
                hostname_is_name,
                "{name}/{}",
                p.name
            );
            assert_eq!(
                p.agents_are_services(),
                topology.platform.managed(),
                "{name}/{}",
                p.name
            );
            if let Some(pods) = pods {
                assert_eq!(p.capacity["pods"], pods);
                assert_eq!(p.capacity["vpc.amazonaws.com/PrivateIPv4Address"], pods);
            }
        }
    }
}

/// kubeadm's `kubeadm-config` as kubeadm uploads it: the ClusterConfiguration with the cluster's
/// version and networking, in the API version of the cluster's kubeadm.
#[rstest]
#[case::current("default", "kubeadm.k8s.io/v1beta4", "kubernetesVersion: v1.32.3", false)]
#[case::seed_1_14(
    "k8s-1.14-ws2019-host-gw",
    "kubeadm.k8s.io/v1beta1",
    "kubernetesVersion: v1.14",
    true
)]
fn kubeadm_config_is_what_kubeadm_uploads(
    #[case] name: &str,
    #[case] api: &str,
    #[case] version: &str,
    #[case] status: bool,
) {
    let (a, _) = profile(name);
    let objects = a.objects();
    let cm = find(&objects, "configmaps", "kube-system", "kubeadm-config").expect("kubeadm-config");
    let config = cm
        .pointer("/data/ClusterConfiguration")
        .and_then(Value::as_str)
        .expect("ClusterConfiguration");
    for needle in [
        &format!("apiVersion: {api}\n")[..],
        "kind: ClusterConfiguration\n",
        version,
        "networking:\n  dnsDomain: cluster.local\n  podSubnet: 10.244.0.0/16\n  serviceSubnet: 10.96.0.0/12\n",
    ] {
        assert!(config.contains(needle), "{needle} not in\n{config}");
    }
    assert_eq!(cm.pointer("/data/ClusterStatus").is_some(), status, "{name}");
}

/// The deprecated CRI socket annotation: written by kubeadm from 1.12 until NodeLocalCRISocket
/// (KEP-4656) went on by default in 1.34; never by a managed platform.
#[rstest]
#[case::v1_33("v1.33.1", true)]
#[case::v1_34("v1.34.0", false)]
#[case::v1_9("v1.9.11", false)]
fn the_cri_socket_annotation_follows_kubeadm(#[case] version: &str, #[case] annotated: bool) {
    let text =
        format!("name: x\nkubernetesVersion: {version}\nnodes:\n- {{name: a, os: linux, role: control-plane}}\n");
    let topology = Topology::parse(&text, "t").expect("topology");
    let (_, profiles) = addons_of(&topology);
    let node = crate::node::objects::node_object(&topology.nodes[0], &profiles[0]);
    assert_eq!(
        node.pointer("/metadata/annotations/kubeadm.alpha.kubernetes.io~1cri-socket")
            .and_then(Value::as_str),
        annotated.then_some("unix:///run/containerd/containerd.sock")
    );
}
