//! A node's log directory as its kubelet serves it under `/logs/` (Go's `http.FileServer` over
//! `/var/log` on Linux, `C:\var\log` on Windows), and the node-level lines besides the per-pod
//! ones: what flanneld and kube-proxy write where they run as node services, and what a
//! kubelet logs when it starts on a node without its HNS network. Lines derive from the
//! node's profile only.
//!
//! Layout choices: every node has the kubelet's `containers/` and `pods/` directories. A
//! Linux node is a kubeadm Ubuntu host: the kubelet logs to journald (`journal/`), which
//! rsyslog forwards to `syslog`, so the kubelet's lines are served there in syslog form. A
//! Windows node runs the kubelet as a service the way sig-windows-tools installs it
//! (`--log-dir=/var/log/kubelet`), served as `kubelet/kubelet.log`. Where the node cannot run
//! HostProcess pods (before Kubernetes 1.23, or on Docker), kube-proxy and, on a flannel
//! network, flanneld are node services too: `kube-proxy/kube-proxy.log` and
//! `flanneld/flanneld.log`. With HostProcess they run as DaemonSet pods and log there.
//!
//! flanneld logs in klog format. "Waiting for the Network to be created" is not flanneld's own
//! line: it is what the node's start script prints while it polls for the HNS network flanneld
//! should create; the script runs flanneld in the same console, so both end up in one log.

use chrono::{DateTime, Utc};

use crate::config::faults::Fault;
use crate::config::platform::WINDOWS_SUBNET_ENV;
use crate::config::profile::NodeProfile;

/// The log book key of flanneld's log (the node's `flanneld/flanneld.log`).
pub const FLANNELD: &str = "flanneld";

/// The log book key of kube-proxy's log where it is a node service (`kube-proxy/kube-proxy.log`).
pub const KUBE_PROXY: &str = "kube-proxy";

/// The log book key of the kubelet's own log.
pub const KUBELET: &str = "kubelet";

/// One entry of a node's log directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogEntry {
    /// A directory, listed with a trailing `/`.
    Dir,
    /// A node component's log file: its lines are the log book's under this key.
    Component(&'static str),
    /// Ubuntu's syslog: journald's lines as rsyslog writes them (the kubelet's among them).
    Syslog,
}

/// Whether kube-proxy (and flanneld) run on this node as node services rather than pods: on
/// nodes without HostProcess, and on every Windows node of a managed platform.
pub fn runs_node_services(profile: &NodeProfile) -> bool {
    profile.agents_are_services()
}

/// The fixed files and directories of the node's log directory, by path relative to it
/// (directories end with `/`), sorted. `containers/` and `pods/` hold the pods' logs.
pub fn log_files(profile: &NodeProfile) -> Vec<(&'static str, LogEntry)> {
    let mut files = vec![("containers/", LogEntry::Dir), ("pods/", LogEntry::Dir)];
    if profile.is_windows() {
        files.push(("kubelet/", LogEntry::Dir));
        files.push(("kubelet/kubelet.log", LogEntry::Component(KUBELET)));
        if runs_node_services(profile) && profile.runs_kube_proxy {
            files.push(("kube-proxy/", LogEntry::Dir));
            files.push(("kube-proxy/kube-proxy.log", LogEntry::Component(KUBE_PROXY)));
        }
        if runs_node_services(profile) && profile.flannel().is_some() {
            files.push(("flanneld/", LogEntry::Dir));
            files.push(("flanneld/flanneld.log", LogEntry::Component(FLANNELD)));
        }
    } else {
        files.push(("journal/", LogEntry::Dir));
        files.push(("syslog", LogEntry::Syslog));
    }
    files.sort_by(|a, b| a.0.cmp(b.0));
    files
}

/// A process id for one of the node's services, stable per node.
pub(crate) fn service_pid(profile: &NodeProfile, service: &str) -> u64 {
    let h = crate::vocab::hash::Fnv::default()
        .write(profile.name.as_bytes())
        .write(service.as_bytes())
        .finish();
    1000 + h % 8000
}

/// One kubelet line as rsyslog writes it to Ubuntu's `/var/log/syslog`.
pub fn syslog_line(profile: &NodeProfile, at: DateTime<Utc>, line: &str) -> String {
    format!(
        "{} {} kubelet[{}]: {line}",
        at.format("%b %e %H:%M:%S"),
        profile.name,
        service_pid(profile, KUBELET)
    )
}

/// What kube-proxy has logged by the time the node is up, where it is a node service (None
/// elsewhere): its version and flags (`--v=1` prints every flag, which is how its
/// `--hostname-override` shows), then its config controllers. With
/// [`Fault::KubeProxyNoHostnameOverride`] the flag is empty; with [`Fault::KubeProxyStopped`]
/// the service never ran: nothing.
pub fn kube_proxy_start(profile: &NodeProfile, at: DateTime<Utc>) -> Option<Vec<String>> {
    // GKE Dataplane V2 runs no kube-proxy.
    if !runs_node_services(profile) || !profile.runs_kube_proxy {
        return None;
    }
    if profile.has_fault(Fault::KubeProxyStopped) {
        return Some(Vec::new());
    }
    let pid = service_pid(profile, KUBE_PROXY);
    let line = |source: &str, message: &str| klog(at, pid, source, message);
    let hostname = if profile.has_fault(Fault::KubeProxyNoHostnameOverride) {
        ""
    } else {
        profile.name.as_str()
    };
    // Windows' kernel-mode proxy (winkernel) arrived in 1.9; 1.5 proxied in user space.
    let mode = if profile.kubelet >= (1, 9) {
        "kernelspace"
    } else {
        "userspace"
    };
    let network = profile
        .pod_network
        .hns_network(profile.network_mode)
        .map_or("", |(name, _)| name);
    Some(vec![
        line("flags.go:33", &format!("FLAG: --hostname-override=\"{hostname}\"")),
        line("flags.go:33", "FLAG: --kubeconfig=\"c:\\k\\config\""),
        line("flags.go:33", &format!("FLAG: --network-name=\"{network}\"")),
        line("flags.go:33", &format!("FLAG: --proxy-mode=\"{mode}\"")),
        line("flags.go:33", "FLAG: --v=\"1\""),
        line("server.go:559", &format!("Version: {}", profile.kubelet_version)),
        line("config.go:202", "Starting service config controller"),
        line("config.go:102", "Starting endpoints config controller"),
    ])
}

/// The start script's line while the HNS network flanneld should create does not exist.
pub const FLANNELD_WAITING: &str = "Waiting for the Network to be created";

/// A process id for the node's flanneld, stable per node.
fn pid(profile: &NodeProfile) -> u64 {
    service_pid(profile, FLANNELD)
}

/// One klog-formatted info line (`I1122 10:00:00.000000    4242 main.go:211] …`).
fn klog(at: DateTime<Utc>, pid: u64, source: &str, message: &str) -> String {
    format!("I{} {pid:>7} {source}] {message}", at.format("%m%d %H:%M:%S%.6f"))
}

/// What flanneld has logged by the time the node is up, or None where no flanneld runs (Linux
/// nodes, whose flannel runs as a pod; networks that are not flannel's). Healthy: it finds the
/// network config, writes the subnet file and runs its backend. With
/// [`Fault::FlannelSubnetEnvMissing`] flanneld never started: nothing. With
/// [`Fault::FlanneldWaiting`] it stops before the HNS network exists and the subnet file is
/// written; the caller then appends [`FLANNELD_WAITING`] while the node lives.
pub fn flanneld_start(profile: &NodeProfile, at: DateTime<Utc>) -> Option<Vec<String>> {
    if !profile.is_windows() {
        return None;
    }
    let flannel = profile.flannel()?;
    if profile.has_fault(Fault::FlannelSubnetEnvMissing) {
        return Some(Vec::new());
    }
    let pid = pid(profile);
    let line = |source: &str, message: &str| klog(at, pid, source, message);
    let ip = profile.ip;
    let mut lines = vec![
        line(
            "main.go:532",
            &format!("Using interface with name Ethernet and address {ip}"),
        ),
        line(
            "main.go:549",
            &format!("Defaulting external address to interface address ({ip})"),
        ),
        line("kube.go:139", "Waiting 10m0s for node controller to sync"),
        line("kube.go:469", "Starting kube subnet manager"),
        line(
            "kube.go:490",
            &format!(
                "Creating the node lease for IPv4. This is the n.Spec.PodCIDRs: [{}]",
                profile.pod_cidr
            ),
        ),
        line("kube.go:146", "Node controller sync successful"),
        line(
            "main.go:231",
            &format!("Created subnet manager: Kubernetes Subnet Manager - {}", profile.name),
        ),
        line("main.go:234", "Installing signal handlers"),
        line(
            "main.go:352",
            &format!("Found network config - Backend type: {}", flannel.backend),
        ),
    ];
    if flannel.backend == "vxlan" {
        // Windows needs the same VNI (>= 4096) and port 4789 on every node
        // (NET-FLANNEL-VXLAN-PARAMS); a node with the fault differs.
        let vni = profile.vxlan_vni();
        lines.push(line(
            "vxlan_windows.go:126",
            &format!(
                "VXLAN config: Name={} MacPrefix=0E-2A VNI={vni} Port={} GBP=false DirectRouting=false",
                flannel.network,
                crate::config::platform::VXLAN_PORT
            ),
        ));
    }
    if profile.has_fault(Fault::FlanneldWaiting) {
        lines.push(FLANNELD_WAITING.to_string());
        return Some(lines);
    }
    lines.extend([
        line("main.go:410", &format!("Wrote subnet file to {WINDOWS_SUBNET_ENV}")),
        line("main.go:414", "Running backend."),
        line("main.go:435", "Waiting for all goroutines to exit"),
    ]);
    Some(lines)
}

/// Lines a kubelet logs when it starts on this node: on a node with
/// [`Fault::HnsNetworkMissing`], that there is no network adapter for pods because the HNS
/// network is missing (NET-HNS-NETWORK-PRESENT). Structured like the kubelet's other lines.
pub fn kubelet_start(profile: &NodeProfile) -> Vec<String> {
    let Some(flannel) = profile.flannel() else {
        return Vec::new();
    };
    if !profile.is_windows() || !profile.has_fault(Fault::HnsNetworkMissing) {
        return Vec::new();
    }
    let net = flannel.network;
    vec![format!(
        "\"No network adapter found for the pod network: HNS network not found\" network={net:?} err=\"Network {net} not found\" adapter=\"vEthernet ({net})\""
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::platform::NetworkMode;
    use rstest::rstest;
    use std::net::Ipv4Addr;

    fn profile(name: &str, fault: Option<Fault>, mode: NetworkMode) -> NodeProfile {
        let mut p = crate::config::profile::default_node(name, Ipv4Addr::new(127, 1, 1, 10)).1;
        p.faults.extend(fault);
        p.network_mode = mode;
        p
    }

    #[rstest]
    #[case::healthy(
        None,
        NetworkMode::L2bridge,
        Some("Wrote subnet file to C:\\run\\flannel\\subnet.env")
    )]
    #[case::healthy_overlay(None, NetworkMode::Overlay, Some("Backend type: vxlan"))]
    #[case::waiting(Some(Fault::FlanneldWaiting), NetworkMode::L2bridge, Some(FLANNELD_WAITING))]
    #[case::never_started(Some(Fault::FlannelSubnetEnvMissing), NetworkMode::L2bridge, None)]
    #[case::other_fault(Some(Fault::HnsNetworkMissing), NetworkMode::L2bridge, Some("Running backend."))]
    fn flanneld_logs_follow_the_node(
        #[case] fault: Option<Fault>,
        #[case] mode: NetworkMode,
        #[case] has: Option<&str>,
    ) {
        let lines = flanneld_start(&profile("win2022-1", fault, mode), Utc::now()).expect("flanneld runs");
        match has {
            Some(text) => assert!(lines.iter().any(|l| l.contains(text)), "{lines:#?}"),
            None => assert!(lines.is_empty(), "{lines:#?}"),
        }
        let waiting = lines.iter().any(|l| l == FLANNELD_WAITING);
        let wrote = lines.iter().any(|l| l.contains("Wrote subnet file"));
        assert_eq!(waiting, fault == Some(Fault::FlanneldWaiting));
        assert_eq!(wrote, !lines.is_empty() && !waiting);
    }

    #[test]
    fn flanneld_lines_are_klog_formatted() {
        let at = DateTime::parse_from_rfc3339("2025-11-22T10:00:00.5Z")
            .expect("time")
            .with_timezone(&Utc);
        let lines = flanneld_start(&profile("win2019-1", None, NetworkMode::L2bridge), at).expect("flanneld");
        let first = lines.first().expect("a line");
        assert!(first.starts_with("I1122 10:00:00.500000 "), "{first}");
        assert!(first.contains(" main.go:532] Using interface with name Ethernet and address 127.1.1.10"));
    }

    #[rstest]
    #[case::linux("linux-1", NetworkMode::L2bridge)]
    #[case::azure_cni("win2022-1", NetworkMode::L2tunnel)]
    #[case::transparent("win2022-1", NetworkMode::Transparent)]
    fn no_flanneld_where_flannel_does_not_run(#[case] node: &str, #[case] mode: NetworkMode) {
        assert_eq!(flanneld_start(&profile(node, None, mode), Utc::now()), None);
    }

    fn seed_era(name: &str, fault: Option<Fault>, mode: NetworkMode) -> NodeProfile {
        let mut p = profile(name, fault, mode);
        p.kubelet = (1, 14);
        p.kubelet_version = "v1.14.10".into();
        p.runtime = crate::config::profile::RuntimeKind::Docker;
        p
    }

    #[rstest]
    #[case::linux(profile("linux-1", None, NetworkMode::L2bridge), &["containers/", "journal/", "pods/", "syslog"])]
    #[case::windows_host_process(profile("win2022-1", None, NetworkMode::L2bridge), &["containers/", "kubelet/", "kubelet/kubelet.log", "pods/"])]
    #[case::windows_seed_era(seed_era("win2019-1", None, NetworkMode::Overlay),
        &["containers/", "flanneld/", "flanneld/flanneld.log", "kube-proxy/", "kube-proxy/kube-proxy.log", "kubelet/", "kubelet/kubelet.log", "pods/"])]
    #[case::windows_seed_era_no_flannel(seed_era("win2019-1", None, NetworkMode::Transparent),
        &["containers/", "kube-proxy/", "kube-proxy/kube-proxy.log", "kubelet/", "kubelet/kubelet.log", "pods/"])]
    fn log_directories_follow_what_runs_on_the_node(#[case] node: NodeProfile, #[case] paths: &[&str]) {
        let listed: Vec<&str> = log_files(&node).into_iter().map(|(p, _)| p).collect();
        assert_eq!(listed, paths);
    }

    #[rstest]
    #[case::healthy(None, Some("FLAG: --hostname-override=\"win2019-1\""))]
    #[case::no_override(Some(Fault::KubeProxyNoHostnameOverride), Some("FLAG: --hostname-override=\"\""))]
    #[case::stopped(Some(Fault::KubeProxyStopped), None)]
    fn kube_proxy_logs_its_hostname_override(#[case] fault: Option<Fault>, #[case] line: Option<&str>) {
        let node = seed_era("win2019-1", fault, NetworkMode::L2bridge);
        let lines = kube_proxy_start(&node, Utc::now()).expect("a node service");
        match line {
            Some(line) => {
                assert!(lines.iter().any(|l| l.ends_with(line)), "{lines:#?}");
                assert!(
                    lines.iter().any(|l| l.ends_with("FLAG: --network-name=\"cbr0\"")),
                    "{lines:#?}"
                );
            }
            None => assert!(lines.is_empty(), "{lines:#?}"),
        }
        assert_eq!(
            kube_proxy_start(&profile("win2022-1", fault, NetworkMode::L2bridge), Utc::now()),
            None
        );
    }

    #[test]
    fn kubelet_lines_reach_syslog_in_its_format() {
        let at = DateTime::parse_from_rfc3339("2025-11-02T10:00:00Z")
            .expect("time")
            .with_timezone(&Utc);
        let node = profile("linux-1", None, NetworkMode::L2bridge);
        let line = syslog_line(&node, at, "I1102 10:00:00.000000 1 kubelet.go:1] hi");
        assert!(line.starts_with("Nov  2 10:00:00 linux-1 kubelet["), "{line}");
        assert!(line.ends_with("]: I1102 10:00:00.000000 1 kubelet.go:1] hi"), "{line}");
    }

    #[rstest]
    #[case::l2bridge(NetworkMode::L2bridge, "cbr0")]
    #[case::overlay(NetworkMode::Overlay, "vxlan0")]
    fn a_missing_hns_network_is_logged_by_the_kubelet(#[case] mode: NetworkMode, #[case] net: &str) {
        let lines = kubelet_start(&profile("win2022-1", Some(Fault::HnsNetworkMissing), mode));
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains("No network adapter found"), "{}", lines[0]);
        assert!(
            lines[0].contains(&format!("err=\"Network {net} not found\"")),
            "{}",
            lines[0]
        );
        assert!(kubelet_start(&profile("win2022-1", None, mode)).is_empty());
    }
}
