//! The kube-system workloads a real cluster of the topology's profile runs — cluster DNS
//! (CoreDNS, or kube-dns before Kubernetes 1.11), kube-proxy and the pod network's DaemonSets
//! with their ConfigMaps — created as ordinary API objects at cluster start, so that the
//! scheduler, the controllers and the kubelets run them, and so that clients read the network
//! facts (network mode, DSR, kube-proxy versions) from the same objects they would read on a
//! kubeadm, AKS or other real cluster. Everything derives from the topology and the node
//! profiles; nothing here knows about any client of the cluster.
//!
//! What a profile runs (the CNI table, by `network.mode` and era). The era is **HostProcess**
//! when every Windows node can run HostProcess containers ([`NodeProfile::supports_host_process`]:
//! Kubernetes ≥ 1.23 with containerd ≥ 1.6): the Windows node agents then run as HostProcess
//! DaemonSets as kubernetes-sigs/sig-windows-tools deploys them. Otherwise (the seed guides'
//! era) they are node services started by the node's scripts, and not API objects.
//!
//! | mode | HostProcess era | node-services era |
//! |---|---|---|
//! | l2bridge | flannel `host-gw`: `kube-flannel-cfg`, Linux `kube-flannel-ds`, Windows `kube-flannel-ds-windows-amd64` and `kube-proxy-windows` | flannel `host-gw`: `kube-flannel-cfg` and the Linux DaemonSet; flanneld and kube-proxy are Windows services |
//! | overlay | flannel `vxlan` (VNI 4096, port 4789), the same objects | flannel `vxlan`, Linux DaemonSet only |
//! | l2tunnel | Azure CNI as AKS shows it: `azure-cni-networkmonitor`, `azure-ip-masq-agent` | the same |
//! | transparent | ovn-kubernetes: namespace `ovn-kubernetes`, `ovn-config`, `ovnkube-node` (it replaces kube-proxy) | host routes set up by hand: no CNI objects |
//!
//! Every profile but ovn-kubernetes has kubeadm's Linux `kube-proxy` DaemonSet and ConfigMap
//! (image tag = the cluster's version). flannel lives in namespace `kube-flannel` from flannel
//! v0.20 (as its manifests do) and in `kube-system` before; its version is
//! `network.flannelVersion`, else v0.26.1 in the HostProcess era and before it the seed guides'
//! v0.11.0 (v0.10.0, the first with Windows host-gw, before Kubernetes 1.14; v0.12.0 on overlay,
//! the oldest release with the behaviour the fabric gives an unversioned flannel). The Windows kube-proxy's image tag is each node's `kubeProxyVersion`, else
//! its kubelet's version; nodes of different versions get one DaemonSet per version.
//!
//! Deliberate deviations: sig-windows-tools' flannel HostProcess kube-proxy passes its flags from
//! a start script in the image; here they are in the DaemonSet's args and in a
//! `kube-proxy-windows` ConfigMap (`config.conf`, a KubeProxyConfiguration with `mode:
//! kernelspace`, `winkernel.enableDSR` and the WinDSR/WinOverlay gates), the pattern of its
//! earlier manifests, so that the configured DSR is readable from the API. kubeadm writes
//! `mode: ""` (iptables) in the Linux configuration; here it says `iptables`.

mod kubeadm;
mod manifests;
mod objects;
mod platforms;
mod processes;
#[cfg(test)]
mod tests;

use std::time::Duration;

use serde_json::Value;

use crate::config::platform::{NetworkMode, Os, Platform, PodNetwork};
use crate::config::profile::NodeProfile;
use crate::config::topology::{Role, Topology, parse_version};
use crate::store::Store;
use crate::store::api_error::ApiError;
use crate::store::resources::{self, ResourceType};

pub use processes::process;

/// Where the Windows node agents (kube-proxy, flanneld) run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// As HostProcess DaemonSets (every Windows node supports HostProcess containers).
    HostProcess,
    /// As node services of the seed guides' start scripts (not API objects).
    NodeServices,
}

/// The pod network's implementation, as its API objects show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cni {
    /// flannel with this backend (`host-gw`, `vxlan`), version and namespace.
    Flannel {
        backend: &'static str,
        version: String,
        namespace: &'static str,
    },
    /// Azure CNI as aks-engine deployed it (its network monitor DaemonSet), on a kubeadm-built
    /// cluster.
    Azure,
    /// Azure CNI on AKS today: `azure-cns`, `azure-ip-masq-agent`, the cloud node managers; the
    /// Windows kube-proxy and CNI are node services (Azure/AKS#820 retired the network monitor).
    /// With Azure CNI Overlay (`overlay`) also `azure-cns-win`, a HostProcess DaemonSet.
    Aks { overlay: bool },
    /// The Amazon VPC CNI on EKS: the Linux-only `aws-node` DaemonSet and the `amazon-vpc-cni`
    /// ConfigMap with `enable-windows-ipam: "true"` (EKS user guide, "Windows support").
    Eks,
    /// GKE: nothing of the pod network in the API (its Windows set-up runs on the node); with
    /// Dataplane V2 (`dataplane_v2`) the `anetd` and `anetd-win` DaemonSets and no kube-proxy.
    Gke { dataplane_v2: bool },
    /// Calico for Windows (operator install): `calico-node` and `calico-node-windows` in
    /// `calico-system`, VXLAN; sig-windows-tools' HostProcess kube-proxy with DSR.
    Calico { version: String },
    /// ovn-kubernetes (it implements Services itself: no kube-proxy).
    OvnKubernetes,
    /// Routes set up by hand on the hosts: nothing in the API.
    HostRoutes,
}

/// The cluster DNS add-on of the cluster's Kubernetes version (as kubeadm deploys it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterDns {
    /// CoreDNS (kubeadm's default from 1.11): `kube-system/coredns`, 2 replicas.
    CoreDns { image: String },
    /// kube-dns before 1.11: `kube-system/kube-dns`, 1 replica.
    KubeDns,
}

/// One object to create.
#[derive(Debug, Clone)]
pub struct Object {
    pub resource: &'static ResourceType,
    pub namespace: String,
    pub value: Value,
}

/// The add-ons of one cluster, derived from its topology and node profiles.
#[derive(Debug, Clone)]
pub struct Addons {
    pub era: Era,
    pub platform: Platform,
    /// The cluster's DNS domain (`network.clusterDomain`).
    pub cluster_domain: String,
    pub cni: Cni,
    pub dns: ClusterDns,
    pub mode: NetworkMode,
    /// The cluster's `major.minor` and full version (`v1.32.3`).
    pub version: (u32, u32),
    pub kubernetes_version: String,
    pub dsr: bool,
    pub cluster_cidr: String,
    pub service_cidr: String,
    /// flannel's VXLAN VNI (`network.vxlanVni`).
    pub vxlan_vni: u32,
    /// `host:port` of the API server as the nodes reach it (the control plane's address).
    pub api_server: (String, u16),
    /// The Windows kube-proxy versions and the nodes running each, in node order.
    pub windows_kube_proxy: Vec<(String, Vec<String>)>,
    /// The Linux nodes' names, in node order.
    pub linux_nodes: Vec<String>,
    /// Whether the gMSA webhook and its CRD are installed (`admission.gmsaWebhook`).
    pub gmsa_webhook: bool,
}

impl Addons {
    /// What a real cluster of this topology runs.
    pub fn new(topology: &Topology, profiles: &[NodeProfile]) -> Self {
        let version = topology.version();
        let windows: Vec<&NodeProfile> = profiles.iter().filter(|p| p.is_windows()).collect();
        let era =
            if !topology.platform.managed() && !windows.is_empty() && windows.iter().all(|p| p.supports_host_process())
            {
                Era::HostProcess
            } else {
                Era::NodeServices
            };
        let mode = topology.network.mode;
        let cni = match (topology.pod_network(), mode, era) {
            (PodNetwork::Calico, _, _) => Cni::Calico {
                version: "v3.29.1".into(),
            },
            (PodNetwork::AzureCniOverlay, _, _) => Cni::Aks { overlay: true },
            (PodNetwork::AzureCni, _, _) if topology.platform == Platform::Aks => Cni::Aks { overlay: false },
            (PodNetwork::AzureCni, _, _) => Cni::Azure,
            (PodNetwork::VpcCni, _, _) => Cni::Eks,
            (PodNetwork::GkeWinBridge, _, _) => Cni::Gke {
                dataplane_v2: topology.dataplane_v2(),
            },
            (PodNetwork::Flannel, _, _) => {
                let flannel = topology
                    .network
                    .flannel_version
                    .clone()
                    .map(|v| if v.starts_with('v') { v } else { format!("v{v}") })
                    .unwrap_or_else(|| default_flannel_version(era, mode, version).to_string());
                let namespace = if flannel_at_least(&flannel, (0, 20)) {
                    "kube-flannel"
                } else {
                    "kube-system"
                };
                Cni::Flannel {
                    backend: if mode == NetworkMode::Overlay {
                        "vxlan"
                    } else {
                        "host-gw"
                    },
                    version: flannel,
                    namespace,
                }
            }
            (PodNetwork::Transparent, _, Era::HostProcess) => Cni::OvnKubernetes,
            (PodNetwork::Transparent, _, Era::NodeServices) => Cni::HostRoutes,
        };
        // GKE serves cluster DNS with kube-dns ("Using kube-dns", GKE docs), not CoreDNS.
        let dns = if version >= (1, 11) && topology.platform != Platform::Gke {
            ClusterDns::CoreDns {
                image: coredns_image(version),
            }
        } else {
            ClusterDns::KubeDns
        };
        let control_plane = topology
            .nodes
            .iter()
            .zip(profiles)
            .find(|(spec, _)| spec.role == Role::ControlPlane)
            .or_else(|| {
                topology
                    .nodes
                    .iter()
                    .zip(profiles)
                    .find(|(spec, _)| spec.os == Os::Linux)
            })
            .map(|(_, p)| p.ip.to_string())
            .unwrap_or_else(|| "127.0.0.1".into());
        let mut windows_kube_proxy: Vec<(String, Vec<String>)> = Vec::new();
        for (spec, p) in topology.nodes.iter().zip(profiles).filter(|(_, p)| p.is_windows()) {
            let v = if spec.kube_proxy_version.is_empty() {
                p.kubelet_version.clone()
            } else {
                spec.kube_proxy_version.clone()
            };
            match windows_kube_proxy.iter_mut().find(|(have, _)| *have == v) {
                Some((_, nodes)) => nodes.push(p.name.clone()),
                None => windows_kube_proxy.push((v, vec![p.name.clone()])),
            }
        }
        Self {
            era,
            platform: topology.platform,
            cluster_domain: topology.network.cluster_domain.clone(),
            cni,
            dns,
            mode,
            version,
            kubernetes_version: topology.kubernetes_version.clone(),
            dsr: topology.network.dsr,
            cluster_cidr: topology.network.cluster_cidr.clone(),
            vxlan_vni: topology.network.vxlan_vni,
            service_cidr: topology.network.service_cidr.clone(),
            api_server: (control_plane, 6443),
            windows_kube_proxy,
            linux_nodes: profiles
                .iter()
                .filter(|p| !p.is_windows())
                .map(|p| p.name.clone())
                .collect(),
            gmsa_webhook: topology.admission.gmsa_webhook,
        }
    }

    /// Whether kube-proxy runs on the nodes (everything but ovn-kubernetes and GKE Dataplane V2).
    pub fn has_kube_proxy(&self) -> bool {
        !matches!(self.cni, Cni::OvnKubernetes | Cni::Gke { dataplane_v2: true })
    }

    /// Whether the Linux kube-proxy is a DaemonSet: kubeadm, AKS and EKS deploy one; GKE runs
    /// it as a static pod on each node (its mirror pods: [`super::platforms::gke`]).
    pub fn linux_kube_proxy_daemonset(&self) -> bool {
        self.has_kube_proxy() && self.platform != Platform::Gke
    }

    /// Whether the Windows kube-proxy and the CNI's agent run as HostProcess DaemonSets.
    pub fn windows_daemonsets(&self) -> bool {
        self.era == Era::HostProcess && matches!(self.cni, Cni::Flannel { .. } | Cni::Calico { .. })
    }

    /// The custom resources the add-ons bring: Calico's operator Installation, the gMSA
    /// webhook's GMSACredentialSpec.
    pub fn custom_resources(&self) -> crate::store::custom::CustomResources {
        let mut out = Vec::new();
        if let Cni::Calico { version } = &self.cni {
            out.push(platforms::calico_installation(self, version));
        }
        if self.gmsa_webhook {
            // windows-gmsa `admission-webhook/deploy/gmsa-crd.yml`: cluster-scoped, v1 served and
            // stored; no credential spec (each needs an Active Directory account).
            out.push(crate::store::custom::CustomResource {
                group: "windows.k8s.io",
                version: "v1",
                plural: "gmsacredentialspecs",
                singular: "gmsacredentialspec",
                kind: "GMSACredentialSpec",
                objects: Vec::new(),
            });
        }
        crate::store::custom::CustomResources(out)
    }

    /// Every object, in creation order (namespaces first).
    pub fn objects(&self) -> Vec<Object> {
        manifests::objects(self)
    }
}

/// The flannel version a profile runs when the topology names none.
fn default_flannel_version(era: Era, mode: NetworkMode, version: (u32, u32)) -> &'static str {
    match (era, mode) {
        (Era::HostProcess, _) => "v0.26.1",
        (Era::NodeServices, NetworkMode::Overlay) => "v0.12.0",
        (Era::NodeServices, _) if version >= (1, 14) => "v0.11.0",
        (Era::NodeServices, _) => "v0.10.0",
    }
}

/// `v0.26.1` ≥ (0, 20)?
fn flannel_at_least(version: &str, min: (u32, u32)) -> bool {
    parse_version(version).is_some_and(|v| v >= min)
}

/// The CoreDNS image kubeadm pins for a Kubernetes version.
fn coredns_image(version: (u32, u32)) -> String {
    let tag = match version.1 {
        0..=11 => "1.1.3",
        12 => "1.2.2",
        13 => "1.2.6",
        14 | 15 => "1.3.1",
        16 => "1.6.2",
        17 => "1.6.5",
        18 => "1.6.7",
        19 | 20 => "1.7.0",
        21 => "v1.8.0",
        22 => "v1.8.4",
        23 | 24 => "v1.8.6",
        25 | 26 => "v1.9.3",
        27 | 28 => "v1.10.1",
        29 | 30 => "v1.11.1",
        31 | 32 => "v1.11.3",
        33 => "v1.12.0",
        _ => "v1.12.1",
    };
    match version.1 {
        0..=20 => format!("k8s.gcr.io/coredns:{tag}"),
        21..=24 => format!("k8s.gcr.io/coredns/coredns:{tag}"),
        _ => format!("registry.k8s.io/coredns/coredns:{tag}"),
    }
}

/// Creates the add-ons' objects in the store (at cluster start, before the controllers run).
pub fn install(store: &Store, topology: &Topology, profiles: &[NodeProfile]) -> Result<Addons, ApiError> {
    let addons = Addons::new(topology, profiles);
    for o in addons.objects() {
        match store.create(o.resource, &o.namespace, o.value) {
            Ok(_) | Err(ApiError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(addons)
}

/// Waits until the cluster DNS service has a ready endpoint (a real cluster is handed over with
/// its DNS up), or `timeout` passes; returns whether it is ready.
pub async fn wait_for_cluster_dns(store: &Store, timeout: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if cluster_dns_ready(store) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether `kube-system/kube-dns` has a ready address.
pub fn cluster_dns_ready(store: &Store) -> bool {
    store
        .get(resources::core("endpoints"), "kube-system", "kube-dns")
        .ok()
        .and_then(|e| {
            e.value()
                .pointer("/subsets/0/addresses/0/ip")
                .and_then(Value::as_str)
                .map(|ip| !ip.is_empty())
        })
        .unwrap_or(false)
}

/// Whether any node can run the cluster DNS pods (a Linux node whose kubelet runs).
pub fn dns_can_run(profiles: &[NodeProfile]) -> bool {
    profiles
        .iter()
        .any(|p| p.os == Os::Linux && !p.has_fault(crate::config::faults::Fault::KubeletStopped))
}

/// For unit tests that build a store by hand: a running CoreDNS pod `coredns-test` on `node`
/// at `ip`, and the `kube-system/kube-dns` Endpoints pointing at it (the service itself is the
/// caller's).
#[cfg(test)]
pub(crate) fn test_cluster_dns(store: &Store, node: &str, ip: &str) {
    use serde_json::json;
    let pods = resources::core("pods");
    let created = store.create(
        pods,
        "kube-system",
        json!({"metadata": {"name": "coredns-test", "labels": {"k8s-app": "kube-dns"}},
            "spec": {"nodeName": node, "containers": [{"name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.11.3"}]}}),
    );
    assert!(created.is_ok(), "{created:?}");
    let running = store.modify(pods, "kube-system", "coredns-test", crate::store::Part::Status, |p| {
        p["status"] = json!({"phase": "Running", "podIP": ip,
            "containerStatuses": [{"name": "coredns", "ready": true, "state": {"running": {}}}]});
        Ok(())
    });
    assert!(running.is_ok(), "{running:?}");
    let endpoints = store.create(
        resources::core("endpoints"),
        "kube-system",
        json!({"metadata": {"name": "kube-dns"}, "subsets": [{
            "addresses": [{"ip": ip, "nodeName": node, "targetRef": {"kind": "Pod", "namespace": "kube-system", "name": "coredns-test"}}],
            "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}]}),
    );
    assert!(endpoints.is_ok(), "{endpoints:?}");
}
