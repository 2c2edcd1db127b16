//! The Windows services of a node's agents and the log files they write, per platform, as each
//! platform installs them (real-clusters.md §4; the research notes of issue 34, §1):
//!
//! | platform | kubelet | kube-proxy | log files |
//! |---|---|---|---|
//! | AKS | `Kubelet` | `Kubeproxy` | `C:\k\kubelet.log`, `C:\k\kubelet.err.log`, `C:\k\kubeproxy.log`, `C:\k\kubeproxy.err.log` |
//! | EKS | `kubelet` | `kube-proxy` | none: the EKS Windows Event Log |
//! | GKE | `kubelet` | `kube-proxy` (none on Dataplane V2) | `C:\etc\kubernetes\logs\kubelet.log`, `…\kube-proxy.log` |
//! | kubeadm, HostProcess era | `kubelet` | none (the `kube-proxy-windows` DaemonSet) | `C:\var\log\kubelet\kubelet.out.log`, `kubelet.err.log` |
//! | kubeadm, node-services era | `kubelet` | `kube-proxy`, and `flanneld` on flannel | the node's log directory ([`crate::node::nodelogs`]) |
//!
//! Sources: AKS — Azure/AgentBaker `staging/cse/windows/kubeletfunc.ps1` (`nssm install Kubelet`,
//! `nssm install Kubeproxy`, `AppStdout C:\k\kubelet.log`, `AppStderr C:\k\kubelet.err.log`, the
//! same for `kubeproxy`). EKS — aws/amazon-eks-diag's tests (`Get-Service -Name 'kubelet'`,
//! `Get-Service -Name 'kube-proxy'`) and the EKS user guide, "Windows support": "The kubelet and
//! kube-proxy event logs are redirected to the EKS Windows Event Log". GKE — GKE's own scripts
//! are not public; kubernetes `cluster/gce/windows/k8s-node-setup.psm1`, which its Windows nodes
//! derive from, creates the services `kubelet` and `kube-proxy` (`sc.exe create kubelet binPath=
//! "…kube-log-runner.exe -log-file=${env:LOGS_DIR}\kubelet.log …"`, `LOGS_DIR` =
//! `C:\etc\kubernetes\logs`). kubeadm — kubernetes-sigs/sig-windows-tools
//! `hostprocess/PrepareNode.ps1` (`nssm install kubelet`, `AppStdout
//! C:\var\log\kubelet\kubelet.out.log`, `AppStderr …\kubelet.err.log`) with kube-proxy a
//! HostProcess DaemonSet; the 2019 script install registered `kubelet`, `kube-proxy` and
//! `flanneld` as services (sig-windows-tools `kubeadm/scripts/register-svc.ps1`).
//!
//! A service's status follows the node's faults: `kubelet-stopped` stops the kubelet's service,
//! `kube-proxy-stopped` kube-proxy's. klog writes to stderr, so the `.err.log` files hold the
//! agents' log lines (the log book's); the stdout files stay empty.

use crate::config::faults::Fault;
use crate::config::platform::Platform;
use crate::config::profile::NodeProfile;
use crate::node::nodelogs;

/// One Windows service of the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Service {
    /// The service name (`Get-Service`'s `Name`).
    pub name: &'static str,
    /// Its display name (nssm and sc.exe services show their name).
    pub display: &'static str,
    pub running: bool,
}

/// Which agent a log file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Agent {
    Kubelet,
    KubeProxy,
}

/// One log file an agent's service writes, outside the node's log directory or beside its
/// files there: its full path, the agent, and whether it is the stderr file (with the lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogFile {
    pub path: &'static str,
    pub agent: Agent,
    pub lines: bool,
}

/// Whether the node runs kube-proxy as a Windows service (not as a pod, not at all).
fn kube_proxy_service(profile: &NodeProfile) -> bool {
    profile.runs_kube_proxy && nodelogs::runs_node_services(profile)
}

/// The kubelet's and kube-proxy's service names on the node's platform.
fn names(profile: &NodeProfile) -> (&'static str, &'static str) {
    match profile.platform {
        Platform::Aks => ("Kubelet", "Kubeproxy"),
        Platform::Eks | Platform::Gke | Platform::Kubeadm => ("kubelet", "kube-proxy"),
    }
}

/// The node's agent services (Windows nodes only), containerd's first.
pub(crate) fn services(profile: &NodeProfile) -> Vec<Service> {
    if !profile.is_windows() {
        return Vec::new();
    }
    let (kubelet, kube_proxy) = names(profile);
    let mut list = vec![Service {
        name: "containerd",
        display: "containerd",
        running: true,
    }];
    if profile.runtime == crate::config::profile::RuntimeKind::Docker {
        list[0] = Service {
            name: "docker",
            display: "Docker Engine",
            running: true,
        };
    }
    list.push(Service {
        name: kubelet,
        display: kubelet,
        running: !profile.has_fault(Fault::KubeletStopped),
    });
    if kube_proxy_service(profile) {
        list.push(Service {
            name: kube_proxy,
            display: kube_proxy,
            running: !profile.has_fault(Fault::KubeProxyStopped),
        });
    }
    if profile.platform == Platform::Kubeadm && nodelogs::runs_node_services(profile) && profile.flannel().is_some() {
        list.push(Service {
            name: "flanneld",
            display: "flanneld",
            running: !profile.has_fault(Fault::FlannelSubnetEnvMissing),
        });
    }
    list
}

/// The log files the agents' services write on the node's platform (Windows nodes only).
pub(crate) fn log_files(profile: &NodeProfile) -> Vec<LogFile> {
    if !profile.is_windows() {
        return Vec::new();
    }
    let file = |path, agent, lines| LogFile { path, agent, lines };
    let mut files = match profile.platform {
        Platform::Aks => vec![
            file(r"C:\k\kubelet.log", Agent::Kubelet, false),
            file(r"C:\k\kubelet.err.log", Agent::Kubelet, true),
            file(r"C:\k\kubeproxy.log", Agent::KubeProxy, false),
            file(r"C:\k\kubeproxy.err.log", Agent::KubeProxy, true),
        ],
        Platform::Gke => vec![
            file(r"C:\etc\kubernetes\logs\kubelet.log", Agent::Kubelet, true),
            file(r"C:\etc\kubernetes\logs\kube-proxy.log", Agent::KubeProxy, true),
        ],
        Platform::Eks => Vec::new(),
        Platform::Kubeadm if !nodelogs::runs_node_services(profile) => vec![
            file(r"C:\var\log\kubelet\kubelet.out.log", Agent::Kubelet, false),
            file(r"C:\var\log\kubelet\kubelet.err.log", Agent::Kubelet, true),
        ],
        Platform::Kubeadm => Vec::new(),
    };
    if !kube_proxy_service(profile) {
        files.retain(|f| f.agent != Agent::KubeProxy);
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::topology::Topology;

    fn windows_node(profile: &str, fault: Option<Fault>) -> NodeProfile {
        let topology = Topology::profile(profile).expect("profile");
        let ips: Vec<std::net::Ipv4Addr> = (0..topology.nodes.len())
            .map(|i| std::net::Ipv4Addr::new(10, 1, 0, 10 + u8::try_from(i).expect("few nodes")))
            .collect();
        let mut node = crate::config::profile::profiles(&topology, &ips)
            .into_iter()
            .find(NodeProfile::is_windows)
            .expect("a Windows node");
        node.faults.extend(fault);
        node
    }

    #[rstest::rstest]
    #[case::aks("aks", &["containerd", "Kubelet", "Kubeproxy"])]
    #[case::aks_overlay("aks-overlay", &["containerd", "Kubelet", "Kubeproxy"])]
    #[case::eks("eks", &["containerd", "kubelet", "kube-proxy"])]
    #[case::gke("gke", &["containerd", "kubelet", "kube-proxy"])]
    #[case::gke_dpv2("gke-dpv2", &["containerd", "kubelet"])]
    #[case::kubeadm("default", &["containerd", "kubelet"])]
    #[case::kubeadm_2019("k8s-1.14-ws2019-host-gw", &["docker", "kubelet", "kube-proxy", "flanneld"])]
    fn each_platform_has_its_services(#[case] profile: &str, #[case] names: &[&str]) {
        let got: Vec<&str> = services(&windows_node(profile, None)).iter().map(|s| s.name).collect();
        assert_eq!(got, names);
    }

    #[rstest::rstest]
    #[case::kubelet(Fault::KubeletStopped, "Kubelet")]
    #[case::kube_proxy(Fault::KubeProxyStopped, "Kubeproxy")]
    fn a_stopped_agent_is_a_stopped_service(#[case] fault: Fault, #[case] name: &str) {
        let node = windows_node("aks", Some(fault));
        for s in services(&node) {
            assert_eq!(s.running, s.name != name, "{s:?}");
        }
    }

    #[rstest::rstest]
    #[case::aks("aks", &[r"C:\k\kubelet.log", r"C:\k\kubelet.err.log", r"C:\k\kubeproxy.log", r"C:\k\kubeproxy.err.log"])]
    #[case::gke("gke", &[r"C:\etc\kubernetes\logs\kubelet.log", r"C:\etc\kubernetes\logs\kube-proxy.log"])]
    #[case::gke_dpv2("gke-dpv2", &[r"C:\etc\kubernetes\logs\kubelet.log"])]
    #[case::eks("eks", &[])]
    #[case::kubeadm("default", &[r"C:\var\log\kubelet\kubelet.out.log", r"C:\var\log\kubelet\kubelet.err.log"])]
    fn each_platform_logs_where_it_does(#[case] profile: &str, #[case] paths: &[&str]) {
        let got: Vec<&str> = log_files(&windows_node(profile, None)).iter().map(|f| f.path).collect();
        assert_eq!(got, paths);
    }
}
