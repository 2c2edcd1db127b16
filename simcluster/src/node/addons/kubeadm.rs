//! What `kubeadm init` leaves in kube-system besides the workloads: the `kubeadm-config`
//! ConfigMap with the cluster's `ClusterConfiguration` (kubeadm `cmd/kubeadm/app/phases/uploadconfig`:
//! "uploads the kubeadm ClusterConfiguration to a ConfigMap called kubeadm-config"), marshalled
//! in the API version the cluster's kubeadm writes (`v1beta4` from 1.31, `v1beta3` 1.22–1.30,
//! `v1beta2` 1.15–1.21, `v1beta1` 1.13–1.14, `v1alpha3` 1.12) with `kubernetesVersion` and the
//! `networking` block (`podSubnet`, `serviceSubnet`, `dnsDomain`); kubeadm before 1.12 uploaded a
//! `MasterConfiguration` under that key instead, and 1.12–1.21 also kept `ClusterStatus` (its API
//! endpoints; removed in 1.22, kubernetes/kubeadm#2392). Managed platforms do not run kubeadm.

use serde_json::json;

use super::objects::config_map;
use super::{Addons, Object};

/// The kubeadm API version a cluster of this `major.minor` writes its configuration in.
fn api_version(version: (u32, u32)) -> &'static str {
    match version.1 {
        0..=10 => "kubeadm.k8s.io/v1alpha1",
        11 => "kubeadm.k8s.io/v1alpha2",
        12 => "kubeadm.k8s.io/v1alpha3",
        13 | 14 => "kubeadm.k8s.io/v1beta1",
        15..=21 => "kubeadm.k8s.io/v1beta2",
        22..=30 => "kubeadm.k8s.io/v1beta3",
        _ => "kubeadm.k8s.io/v1beta4",
    }
}

/// `kube-system/kubeadm-config`, for kubeadm clusters from 1.8 (the first to upload it).
pub(super) fn kubeadm_config(a: &Addons) -> Option<Object> {
    if a.version < (1, 8) {
        return None;
    }
    let api = api_version(a.version);
    let registry = if a.version >= (1, 25) {
        "registry.k8s.io"
    } else {
        "k8s.gcr.io"
    };
    let networking = format!(
        "networking:\n  dnsDomain: {}\n  podSubnet: {}\n  serviceSubnet: {}\n",
        a.cluster_domain, a.cluster_cidr, a.service_cidr
    );
    let (key, kind) = if a.version >= (1, 12) {
        ("ClusterConfiguration", "ClusterConfiguration")
    } else {
        ("MasterConfiguration", "MasterConfiguration")
    };
    // Keys in the order kubeadm's YAML marshalling sorts them.
    let api_server = if a.version >= (1, 31) {
        "apiServer: {}\n".to_string()
    } else {
        "apiServer:\n  extraArgs:\n    authorization-mode: Node,RBAC\n  timeoutForControlPlane: 4m0s\n".to_string()
    };
    let mut config = format!(
        "{api_server}apiVersion: {api}\ncertificatesDir: /etc/kubernetes/pki\nclusterName: kubernetes\n\
         controlPlaneEndpoint: {}:{}\ncontrollerManager: {{}}\ndns: {{}}\netcd:\n  local:\n    dataDir: /var/lib/etcd\n\
         imageRepository: {registry}\nkind: {kind}\nkubernetesVersion: {}\n{networking}",
        a.api_server.0, a.api_server.1, a.kubernetes_version
    );
    if a.version >= (1, 31) {
        config.push_str("proxy: {}\n");
    }
    config.push_str("scheduler: {}\n");
    let mut data = serde_json::Map::new();
    data.insert(key.into(), json!(config));
    if ((1, 12)..(1, 22)).contains(&a.version) {
        data.insert(
            "ClusterStatus".into(),
            json!(format!(
                "apiEndpoints:\n  control-plane:\n    advertiseAddress: {}\n    bindPort: {}\napiVersion: {api}\nkind: ClusterStatus\n",
                a.api_server.0, a.api_server.1
            )),
        );
    }
    Some(config_map("kube-system", "kubeadm-config", json!({}), json!(data)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rstest::rstest]
    #[case((1, 32), "kubeadm.k8s.io/v1beta4")]
    #[case((1, 30), "kubeadm.k8s.io/v1beta3")]
    #[case((1, 14), "kubeadm.k8s.io/v1beta1")]
    fn the_api_version_follows_kubeadm(#[case] version: (u32, u32), #[case] api: &str) {
        assert_eq!(api_version(version), api);
    }
}
