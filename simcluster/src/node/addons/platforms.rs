//! The kube-system objects of the managed platforms and of Calico for Windows, as their
//! documentation and public `kubectl get pods -n kube-system` listings show them. Facts come
//! from the sources named per platform below and `docs/sources.md` (CAL, WT); images and
//! versions are representative, not pinned to one release.
//!
//! - AKS (Azure/AKS#820; AKS "Windows Server node pools" FAQ): `azure-cns`,
//!   `azure-ip-masq-agent`, `cloud-node-manager` and `cloud-node-manager-windows`; the Windows
//!   kube-proxy and Azure CNI are node services (AgentBaker `kubeletfunc.ps1`: the nssm services
//!   `Kubelet` and `Kubeproxy`), so no Windows kube-proxy DaemonSet exists. Azure CNI Overlay
//!   (AKS "Configure Azure CNI Overlay networking"; real-clusters.md §7) adds `azure-cns-win`,
//!   a HostProcess DaemonSet: CNS hands out the overlay pod addresses on Windows nodes too.
//! - AKS's CSI drivers (AKS "Container Storage Interface (CSI) drivers on AKS": Azure Disk and
//!   Azure Files enabled by default from 1.21, Windows node pools included): the node plugins
//!   `csi-azuredisk-node` and `csi-azurefile-node` on Linux and `…-win` on Windows, where they
//!   reach the host through csi-proxy's named pipes mounted as hostPath volumes (WSTO: CSI node
//!   plugins on Windows use csi-proxy, pre-installed on each Windows node). The kubelets list the
//!   two drivers in their CSINode objects ([`crate::node::objects::csinode_object`]).
//! - EKS (EKS user guide, "Deploy Windows nodes on EKS clusters"): `aws-node` runs on Linux
//!   only (its node affinity keeps it off Windows and Fargate); Windows IPAM is switched on in
//!   the `amazon-vpc-cni` ConfigMap (`enable-windows-ipam: "true"`); kube-proxy on Windows is a
//!   Windows service.
//! - GKE ("Windows Server node pools"; kubernetes `cluster/gce/gci/configure-helper.sh`,
//!   `start-kube-proxy`): kube-proxy on Linux nodes is a static pod from the node's manifest
//!   directory, which the kubelet mirrors into the API as `kube-system/kube-proxy-<node>`
//!   (annotation `kubernetes.io/config.mirror`, labels `component: kube-proxy`, `tier: node`);
//!   on Windows it is a node service. With Dataplane V2 (GKE docs "About GKE Dataplane V2":
//!   "GKE Dataplane V2 is implemented without kube-proxy"; real-clusters.md §7) `anetd` runs on
//!   Linux nodes and `anetd-win` on Windows nodes, and no node runs kube-proxy: no mirror pods.
//! - Calico for Windows (CAL; WT `capz/templates/calico/values.yaml`): the operator's
//!   `calico-system` namespace with `calico-node` (Linux) and `calico-node-windows` (a
//!   HostProcess DaemonSet), VXLAN.

use serde_json::json;

use super::objects::{apps, config_map, namespace, object, service_account};
use super::{Addons, Object};

/// A node agent DaemonSet: one container, host network, the OS it runs on and whether it is a
/// HostProcess pod (Windows).
fn agent(name: &str, labels: serde_json::Value, os: &str, image: &str, host_process: bool) -> serde_json::Value {
    let mut spec = json!({
        "hostNetwork": true,
        "priorityClassName": "system-node-critical",
        "nodeSelector": {"kubernetes.io/os": os},
        "tolerations": [{"operator": "Exists"}],
        "containers": [{"name": name, "image": image}]
    });
    if host_process {
        spec["securityContext"] =
            json!({"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\system"}});
    }
    json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": spec}}
    })
}

/// GKE: the mirror pods of the Linux nodes' kube-proxy static pods (the kubelet creates one per
/// static pod, bound to its node); with Dataplane V2 the `anetd` and `anetd-win` DaemonSets
/// instead (images representative).
pub(super) fn gke(a: &Addons, dataplane_v2: bool, out: &mut Vec<Object>) {
    if dataplane_v2 {
        for (name, os, image, host_process) in [
            ("anetd", "linux", "gke.gcr.io/cilium/cilium:v1.14.13-gke.100", false),
            (
                "anetd-win",
                "windows",
                "gke.gcr.io/anetd-windows:v1.14.13-gke.100",
                true,
            ),
        ] {
            out.push(object(
                apps("daemonsets"),
                "kube-system",
                agent(name, json!({"k8s-app": name}), os, image, host_process),
            ));
        }
        return;
    }
    let image = format!("gke.gcr.io/kube-proxy-amd64:{}-gke.1000", a.kubernetes_version);
    for node in &a.linux_nodes {
        let pod = json!({
            "metadata": {
                "name": format!("kube-proxy-{node}"),
                "labels": {"component": "kube-proxy", "tier": "node"},
                "annotations": {
                    "kubernetes.io/config.mirror": "static",
                    "kubernetes.io/config.source": "file"
                }
            },
            "spec": {
                "nodeName": node,
                "hostNetwork": true,
                "priorityClassName": "system-node-critical",
                "tolerations": [{"operator": "Exists", "effect": "NoExecute"}, {"operator": "Exists", "effect": "NoSchedule"}],
                "containers": [{
                    "name": "kube-proxy",
                    "image": image,
                    "command": ["kube-proxy", "--v=2", format!("--cluster-cidr={}", a.cluster_cidr), "--oom-score-adj=-998"],
                    "securityContext": {"privileged": true}
                }]
            }
        });
        out.push(object(crate::store::resources::core("pods"), "kube-system", pod));
    }
}

/// AKS with Azure CNI today (`overlay`: Azure CNI Overlay, with `azure-cns-win`).
pub(super) fn aks(a: &Addons, overlay: bool, out: &mut Vec<Object>) {
    let ns = "kube-system";
    out.push(config_map(
        ns,
        "azure-ip-masq-agent-config-reconciled",
        json!({"component": "ip-masq-agent", "kubernetes.io/cluster-service": "true", "addonmanager.kubernetes.io/mode": "Reconcile"}),
        json!({"ip-masq-agent-reconciled": format!("nonMasqueradeCIDRs:\n  - {}\nmasqLinkLocal: true\n", a.cluster_cidr)}),
    ));
    let v = &a.kubernetes_version;
    for (name, os, image, host_process) in [
        (
            "azure-cns",
            "linux",
            "mcr.microsoft.com/containernetworking/azure-cns:v1.6.18".to_string(),
            false,
        ),
        (
            "azure-ip-masq-agent",
            "linux",
            "mcr.microsoft.com/aks/ip-masq-agent-v2:v0.1.15".to_string(),
            false,
        ),
        (
            "cloud-node-manager",
            "linux",
            format!("mcr.microsoft.com/oss/kubernetes/azure-cloud-node-manager:{v}"),
            false,
        ),
        (
            "cloud-node-manager-windows",
            "windows",
            format!("mcr.microsoft.com/oss/kubernetes/azure-cloud-node-manager:{v}"),
            true,
        ),
    ]
    .into_iter()
    .chain(overlay.then(|| {
        (
            "azure-cns-win",
            "windows",
            "mcr.microsoft.com/containernetworking/azure-cns:v1.6.18".to_string(),
            true,
        )
    })) {
        out.push(object(
            apps("daemonsets"),
            ns,
            agent(name, json!({"k8s-app": name}), os, &image, host_process),
        ));
    }
    aks_csi_node_plugins(out);
}

/// AKS's Azure Disk and Azure Files CSI node plugins (from 1.21): one DaemonSet per driver and
/// OS; the Windows ones mount csi-proxy's pipes.
fn aks_csi_node_plugins(out: &mut Vec<Object>) {
    let ns = "kube-system";
    for (name, os, image, pipes) in [
        (
            "csi-azuredisk-node",
            "linux",
            "mcr.microsoft.com/oss/kubernetes-csi/azuredisk-csi:v1.31.0",
            &[][..],
        ),
        (
            "csi-azurefile-node",
            "linux",
            "mcr.microsoft.com/oss/kubernetes-csi/azurefile-csi:v1.31.0",
            &[][..],
        ),
        (
            "csi-azuredisk-node-win",
            "windows",
            "mcr.microsoft.com/oss/kubernetes-csi/azuredisk-csi:v1.31.0",
            &["disk-v1", "filesystem-v1", "volume-v1"][..],
        ),
        (
            "csi-azurefile-node-win",
            "windows",
            "mcr.microsoft.com/oss/kubernetes-csi/azurefile-csi:v1.31.0",
            &["filesystem-v1", "smb-v1"][..],
        ),
    ] {
        let mut ds = agent(name, json!({"app": name}), os, image, false);
        let pod = &mut ds["spec"]["template"]["spec"];
        let volumes: Vec<serde_json::Value> = pipes
            .iter()
            .map(|p| json!({"name": format!("csi-proxy-{p}"), "hostPath": {"path": format!("\\\\.\\pipe\\csi-proxy-{p}")}}))
            .collect();
        if !volumes.is_empty() {
            let mounts: Vec<serde_json::Value> = pipes
                .iter()
                .map(|p| json!({"name": format!("csi-proxy-{p}"), "mountPath": format!("\\\\.\\pipe\\csi-proxy-{p}")}))
                .collect();
            pod["containers"][0]["volumeMounts"] = json!(mounts);
            pod["volumes"] = json!(volumes);
        }
        out.push(object(apps("daemonsets"), ns, ds));
    }
}

/// EKS with the Amazon VPC CNI.
pub(super) fn eks(_a: &Addons, out: &mut Vec<Object>) {
    let ns = "kube-system";
    out.push(config_map(
        ns,
        "amazon-vpc-cni",
        json!({}),
        json!({"enable-windows-ipam": "true"}),
    ));
    out.push(service_account(ns, "aws-node"));
    let mut ds = agent(
        "aws-node",
        json!({"k8s-app": "aws-node"}),
        "linux",
        "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1",
        false,
    );
    // The add-on's affinity: not on Fargate, not on hybrid nodes, Linux only.
    ds["spec"]["template"]["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate", "hybrid", "auto"]}
    ]}]}}});
    out.push(object(apps("daemonsets"), ns, ds));
}

/// Calico for Windows as the Tigera operator installs it, VXLAN.
pub(super) fn calico(a: &Addons, version: &str, out: &mut Vec<Object>) {
    let ns = "calico-system";
    out.push(namespace(
        ns,
        json!({"name": ns, "pod-security.kubernetes.io/enforce": "privileged"}),
    ));
    out.push(service_account(ns, "calico-node"));
    out.push(config_map(
        ns,
        "cni-config",
        json!({}),
        json!({"config": format!(
            "{{\"name\": \"k8s-pod-network\", \"cniVersion\": \"0.3.1\", \"plugins\": [{{\"type\": \"calico\", \"ipam\": {{\"type\": \"calico-ipam\"}}, \"ipPools\": [\"{}\"], \"vxlan\": true}}]}}\n",
            a.cluster_cidr
        )}),
    ));
    for (name, os, image, host_process) in [
        (
            "calico-node",
            "linux",
            format!("docker.io/calico/node:{version}"),
            false,
        ),
        (
            "calico-node-windows",
            "windows",
            format!("docker.io/calico/node-windows:{version}"),
            true,
        ),
    ] {
        out.push(object(
            apps("daemonsets"),
            ns,
            agent(name, json!({"k8s-app": name}), os, &image, host_process),
        ));
    }
}

/// The `Installation` the Tigera operator reconciles Calico from, as SIG Windows' CI configures
/// it for Windows (WT `capz/templates/calico/values.yaml`: Calico CNI, `bgp: Disabled`, MTU 1350,
/// `windowsDataplane: HNS`, one VXLAN pool, the cluster's service CIDR) with the operator's
/// defaults filled in (the pool's name, block size, NAT and node selector; IPv4 address
/// autodetection). The pool is the cluster's pod CIDR, as the `cni-config` above has it.
pub(super) fn calico_installation(a: &Addons, version: &str) -> crate::store::custom::CustomResource {
    let installation = json!({
        "apiVersion": "operator.tigera.io/v1",
        "kind": "Installation",
        "metadata": {
            "name": "default",
            "uid": "6f1c3c1e-8a53-4d2b-9d0e-2a8f3c9b7e10",
            "resourceVersion": "1",
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "variant": "Calico",
            "cni": {"type": "Calico", "ipam": {"type": "Calico"}},
            "calicoNetwork": {
                "bgp": "Disabled",
                "mtu": 1350,
                "windowsDataplane": "HNS",
                "linuxDataplane": "Iptables",
                "nodeAddressAutodetectionV4": {"firstFound": true},
                "ipPools": [{
                    "name": "default-ipv4-ippool",
                    "cidr": a.cluster_cidr,
                    "encapsulation": "VXLAN",
                    "natOutgoing": "Enabled",
                    "nodeSelector": "all()",
                    "blockSize": 26,
                }],
            },
            "serviceCIDRs": [a.service_cidr],
        },
        "status": {
            "variant": "Calico",
            "calicoVersion": version,
            "mtu": 1350,
        },
    });
    crate::store::custom::CustomResource {
        group: "operator.tigera.io",
        version: "v1",
        plural: "installations",
        singular: "installation",
        kind: "Installation",
        objects: vec![installation],
    }
}
