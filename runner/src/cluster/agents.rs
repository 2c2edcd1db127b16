//! The Windows node agents as each platform installs them: the service names of the kubelet and
//! kube-proxy and their log files (None where the platform has no such thing: kube-proxy as a
//! DaemonSet, logs in the event log, no kube-proxy at all).
//!
//! Sources (docs/sources.md): AKS installs the nssm services `Kubelet` and `Kubeproxy` logging
//! to `C:\k\kubelet.err.log` and `C:\k\kubeproxy.err.log` (AGENTBAKER,
//! `staging/cse/windows/kubeletfunc.ps1`); EKS runs the services `kubelet` and `kube-proxy`,
//! logging to the Windows event log `EKS` (EKSLOGS); GKE's Windows set-up runs the services
//! `kubelet` and `kube-proxy` logging under `C:\etc\kubernetes\logs` (GCEWINSETUP), with no
//! kube-proxy under Dataplane V2 (GKEDPV2); sig-windows-tools runs the kubelet as the nssm
//! service `kubelet` logging to `C:\var\log\kubelet\kubelet.err.log` (`PrepareNode.ps1`) and
//! kube-proxy as the HostProcess DaemonSet `kube-proxy-windows`, whose log is its pod's.

/// One platform's Windows agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Agents {
    pub kubelet_service: Option<&'static str>,
    pub kubelet_log: Option<&'static str>,
    pub kube_proxy_service: Option<&'static str>,
    pub kube_proxy_log: Option<&'static str>,
}

/// The Windows agents of `platform` (`aks`, `eks`, `gke`, `kubeadm`; anything else: none known);
/// `dataplane_v2`: GKE Dataplane V2, which runs no kube-proxy.
pub fn windows(platform: &str, dataplane_v2: bool) -> Agents {
    match platform {
        "aks" => Agents {
            kubelet_service: Some("Kubelet"),
            kubelet_log: Some(r"C:\k\kubelet.err.log"),
            kube_proxy_service: Some("Kubeproxy"),
            kube_proxy_log: Some(r"C:\k\kubeproxy.err.log"),
        },
        "eks" => Agents {
            kubelet_service: Some("kubelet"),
            kube_proxy_service: Some("kube-proxy"),
            ..Agents::default()
        },
        "gke" => Agents {
            kubelet_service: Some("kubelet"),
            kubelet_log: Some(r"C:\etc\kubernetes\logs\kubelet.log"),
            kube_proxy_service: (!dataplane_v2).then_some("kube-proxy"),
            kube_proxy_log: (!dataplane_v2).then_some(r"C:\etc\kubernetes\logs\kube-proxy.log"),
        },
        "kubeadm" => Agents {
            kubelet_service: Some("kubelet"),
            kubelet_log: Some(r"C:\var\log\kubelet\kubelet.err.log"),
            ..Agents::default()
        },
        _ => Agents::default(),
    }
}
