//! The node-dependent placeholders of the cause catalogue that the facts decide rather than
//! name: where a node keeps flannel's CNI configuration and kube-proxy's source VIP (per
//! platform and era), flannel's subnet file where flannel is the pod network (elsewhere its
//! absence is no fault), and whether its name is the machine's computer name.
//!
//! Sources (real-clusters.md §3–§4): sig-windows-tools' HostProcess install writes
//! `c:\etc\cni\net.d\10-flannel.conf` (`flanneld/start.ps1`) and `c:\sourcevip\sourceVip.json`
//! (`kube-proxy/start.ps1`); the 2019 scripts used `C:\k\cni\config\cni.conf` and
//! `C:\k\SourceVip.json`. HostProcess containers need kubelet 1.23+ on containerd 1.6+
//! (SEC-HOSTPROCESS). EKS names nodes by their private DNS name and GKE by its instance name,
//! neither the Windows computer name; kubeadm and AKS nodes register under the computer name.
//!
//! The Windows node agents' service names and log files per platform: `crate::cluster::agents`.

use std::collections::BTreeMap;

use mixcheck_reports::Facts;

/// The HostProcess-era CNI configuration (sig-windows-tools).
pub const CNI_CONFIG_HOSTPROCESS: &str = r"C:\etc\cni\net.d\10-flannel.conf";
/// The HostProcess-era source VIP file (sig-windows-tools).
pub const SOURCE_VIP_HOSTPROCESS: &str = r"C:\sourcevip\sourceVip.json";
/// The 2019 script layout's CNI configuration.
pub const CNI_CONFIG_2019: &str = r"C:\k\cni\config\cni.conf";
/// The 2019 script layout's source VIP file.
pub const SOURCE_VIP_2019: &str = r"C:\k\SourceVip.json";

/// How a node's agents were installed, as far as the facts tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// sig-windows-tools' HostProcess DaemonSets: kubelet 1.23+ on containerd 1.6+.
    HostProcess,
    /// The 2019 scripts under `C:\k`.
    Scripts,
}

/// `major.minor` of a version such as `v1.32.3` or `containerd://1.7.20`.
fn minor(version: &str) -> Option<(u32, u32)> {
    let bare = version.rsplit_once("://").map_or(version, |(_, v)| v);
    let mut parts = bare.trim_start_matches('v').split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The node's era from its kubelet and runtime versions; None when they are unknown.
pub fn era(facts: &Facts, node: &str) -> Option<Era> {
    let n = facts.nodes.get(node)?;
    let kubelet = minor(&n.kubelet_version.as_ref()?.value)?;
    if kubelet < (1, 23) {
        return Some(Era::Scripts);
    }
    let runtime = &n.container_runtime_version.as_ref()?.value;
    let containerd = runtime.starts_with("containerd://");
    Some(if containerd && minor(runtime)? >= (1, 6) {
        Era::HostProcess
    } else {
        Era::Scripts
    })
}

/// flannel's subnet file on Windows (flanneld writes it, the flannel CNI plugin reads it).
pub const FLANNEL_SUBNET_ENV: &str = r"C:\run\flannel\subnet.env";

/// Whether flannel is the pod network: its `kube-flannel-cfg` ConfigMap or DaemonSet was seen.
fn flannel(facts: &Facts) -> bool {
    facts.pod_network.as_ref().is_some_and(|m| m.value == "flannel")
}

/// Adds `cniConfig`, `sourceVip`, `flannelSubnetEnv`, `computerName` and the Windows agents'
/// `kubeletService`, `kubeletLog`, `kubeProxyService` and `kubeProxyLog` to `vars` where the
/// facts decide them.
/// The paths are flannel's on kubeadm clusters (other platforms' CNIs keep theirs elsewhere);
/// an unknown platform leaves all three out.
pub fn extend(vars: &mut BTreeMap<&str, String>, facts: &Facts, node: &str) {
    if flannel(facts) {
        vars.insert("flannelSubnetEnv", FLANNEL_SUBNET_ENV.to_string());
    }
    let Some(platform) = facts.platform.as_ref().map(|p| p.value.as_str()) else {
        return;
    };
    if matches!(platform, "kubeadm" | "aks") {
        vars.insert("computerName", node.to_string());
    }
    let windows = facts
        .nodes
        .get(node)
        .and_then(|n| n.os.as_ref())
        .is_none_or(|os| os.value == mixcheck_reports::Os::Windows);
    let dataplane_v2 = facts.service_proxy.as_ref().is_some_and(|p| p.value == "anetd");
    if windows {
        let a = crate::cluster::agents::windows(platform, dataplane_v2);
        let values = [a.kubelet_service, a.kubelet_log, a.kube_proxy_service, a.kube_proxy_log];
        let names = ["kubeletService", "kubeletLog", "kubeProxyService", "kubeProxyLog"];
        for (name, value) in names.into_iter().zip(values) {
            if let Some(value) = value {
                vars.insert(name, value.to_string());
            }
        }
    }
    if platform != "kubeadm" {
        return;
    }
    let (cni, vip) = match era(facts, node) {
        Some(Era::HostProcess) => (CNI_CONFIG_HOSTPROCESS, SOURCE_VIP_HOSTPROCESS),
        Some(Era::Scripts) => (CNI_CONFIG_2019, SOURCE_VIP_2019),
        None => return,
    };
    vars.insert("cniConfig", cni.to_string());
    vars.insert("sourceVip", vip.to_string());
}

#[cfg(test)]
mod tests {
    use mixcheck_reports::{Fact, NodeFacts};
    use rstest::rstest;

    use super::*;

    fn fact(v: &str) -> Option<Fact<String>> {
        Some(Fact {
            value: v.to_string(),
            source: "test".into(),
        })
    }

    fn facts(platform: Option<&str>, kubelet: &str, runtime: &str) -> Facts {
        let n = NodeFacts {
            kubelet_version: fact(kubelet),
            container_runtime_version: fact(runtime),
            ..Default::default()
        };
        Facts {
            platform: platform.and_then(fact),
            nodes: [("win-1".to_string(), n)].into(),
            ..Default::default()
        }
    }

    #[rstest]
    #[case::hostprocess(
        Some("kubeadm"),
        "v1.32.3",
        "containerd://1.7.20",
        Some(CNI_CONFIG_HOSTPROCESS),
        Some(SOURCE_VIP_HOSTPROCESS),
        true
    )]
    #[case::old_kubelet(
        Some("kubeadm"),
        "v1.14.10",
        "docker://18.9.7",
        Some(CNI_CONFIG_2019),
        Some(SOURCE_VIP_2019),
        true
    )]
    #[case::old_containerd(
        Some("kubeadm"),
        "v1.23.1",
        "containerd://1.5.9",
        Some(CNI_CONFIG_2019),
        Some(SOURCE_VIP_2019),
        true
    )]
    #[case::aks(Some("aks"), "v1.32.3", "containerd://1.7.20", None, None, true)]
    #[case::eks(Some("eks"), "v1.32.3", "containerd://1.7.20", None, None, false)]
    #[case::gke(Some("gke"), "v1.32.3", "containerd://1.7.20", None, None, false)]
    #[case::unknown(None, "v1.32.3", "containerd://1.7.20", None, None, false)]
    fn paths_and_computer_name_follow_platform_and_era(
        #[case] platform: Option<&str>,
        #[case] kubelet: &str,
        #[case] runtime: &str,
        #[case] cni: Option<&str>,
        #[case] vip: Option<&str>,
        #[case] computer_name: bool,
    ) {
        let mut vars = BTreeMap::new();
        extend(&mut vars, &facts(platform, kubelet, runtime), "win-1");
        assert_eq!(vars.get("cniConfig").map(String::as_str), cni);
        assert_eq!(vars.get("sourceVip").map(String::as_str), vip);
        assert_eq!(vars.contains_key("computerName"), computer_name);
        assert!(
            !vars.contains_key("flannelSubnetEnv"),
            "no flannel configuration in the facts"
        );
    }

    /// The Windows agents' services and logs follow the platform (AKS's nssm `Kubeproxy`, GKE's
    /// log directory, none for kube-proxy under Dataplane V2 or as a DaemonSet).
    #[rstest]
    #[case::aks(Some("aks"), None, Some("Kubeproxy"), Some(r"C:\k\kubelet.err.log"))]
    #[case::eks(Some("eks"), None, Some("kube-proxy"), None)]
    #[case::gke(Some("gke"), None, Some("kube-proxy"), Some(r"C:\etc\kubernetes\logs\kubelet.log"))]
    #[case::gke_dpv2(Some("gke"), Some("anetd"), None, Some(r"C:\etc\kubernetes\logs\kubelet.log"))]
    #[case::kubeadm(Some("kubeadm"), None, None, Some(r"C:\var\log\kubelet\kubelet.err.log"))]
    #[case::unknown(None, None, None, None)]
    fn agents_follow_the_platform(
        #[case] platform: Option<&str>,
        #[case] proxy: Option<&str>,
        #[case] kube_proxy_service: Option<&str>,
        #[case] kubelet_log: Option<&str>,
    ) {
        let mut f = facts(platform, "v1.32.3", "containerd://1.7.20");
        f.service_proxy = proxy.and_then(fact);
        let mut vars = BTreeMap::new();
        extend(&mut vars, &f, "win-1");
        assert_eq!(vars.get("kubeProxyService").map(String::as_str), kube_proxy_service);
        assert_eq!(vars.get("kubeletLog").map(String::as_str), kubelet_log);
    }

    /// flannel's subnet file is looked for where flannel runs, whatever the network mode's
    /// source (a node's HNS reading replaces the ConfigMap's).
    #[rstest]
    #[case::flannel(Some("flannel"), true)]
    #[case::azure(Some("azure-cni"), false)]
    #[case::unknown(None, false)]
    fn the_subnet_file_is_looked_for_where_flannel_runs(#[case] plugin: Option<&str>, #[case] looked: bool) {
        let mut f = facts(Some("kubeadm"), "v1.32.3", "containerd://1.7.20");
        f.network_mode = Some(Fact {
            value: "overlay".into(),
            source: "node win-1: Get-HnsNetwork Type Overlay".into(),
        });
        f.pod_network = plugin.and_then(fact);
        let mut vars = BTreeMap::new();
        extend(&mut vars, &f, "win-1");
        assert_eq!(vars.contains_key("flannelSubnetEnv"), looked);
    }
}
