//! What the add-on images' processes do once started on a node: the lines they log (klog, as
//! the real binaries print them) and whether they keep running — derived from the image, its
//! command and the node's profile and faults, like every other process of the simulator.
//!
//! The Windows node faults show through the HostProcess agents where a real cluster shows them:
//! - [`Fault::KubeProxyStopped`]: the node's kube-proxy does not stay up — it exits, the pod
//!   goes to `CrashLoopBackOff` (not ready);
//! - [`Fault::KubeProxyNoHostnameOverride`]: kube-proxy runs under the machine's own host name
//!   (Windows' generated `WIN-…` name, [`crate::node::host`]), which is not the node's name: it
//!   logs that no such Node exists and falls back to 127.0.0.1 as its node IP
//!   (NET-KUBEPROXY-HOSTNAME);
//! - [`Fault::FlanneldWaiting`]: flanneld logs up to "Waiting for the Network to be created",
//!   then gives up on the HNS network and exits (`CrashLoopBackOff`, not ready);
//! - [`Fault::FlannelSubnetEnvMissing`]: flanneld runs but cannot write `C:\run\flannel\subnet.env`
//!   (its warning is in the log);
//! - [`Fault::VxlanParamsMismatch`]: the node's VXLAN backend reports a VNI other than 4096.
//!
//! The node's own `logs/flanneld.log` keeps its seed-era model (see [`crate::node::nodelogs`]).

use chrono::{DateTime, Utc};

use crate::config::faults::Fault;
use crate::config::platform::WINDOWS_SUBNET_ENV;
use crate::config::profile::NodeProfile;
use crate::node::host::machine_hostname;
use crate::node::nodelogs;
use crate::node::runtime::Process;

/// The add-on an image is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Addon {
    CoreDns,
    KubeDns,
    KubeProxy,
    WindowsKubeProxy,
    Flanneld,
    WindowsFlanneld,
    AzureNetworkMonitor,
    IpMasqAgent,
    OvnKube,
}

/// `C:\x\kube-proxy.exe` → `kube-proxy`.
fn program(arg: &str) -> String {
    let base = arg.rsplit(['/', '\\']).next().unwrap_or(arg).to_ascii_lowercase();
    base.strip_suffix(".exe").map(str::to_string).unwrap_or(base)
}

fn addon_of(image: &str) -> Option<Addon> {
    let (repo, name) = crate::vocab::image::repository(image);
    let windows_tools = repo.starts_with("sigwindowstools/") || repo.starts_with("docker.io/sigwindowstools/");
    Some(match name.as_str() {
        "coredns" => Addon::CoreDns,
        "kube-proxy" | "kube-proxy-amd64" if windows_tools => Addon::WindowsKubeProxy,
        "kube-proxy" | "kube-proxy-amd64" => Addon::KubeProxy,
        "flannel" if windows_tools => Addon::WindowsFlanneld,
        "flannel" | "mirrored-flannelcni-flannel" => Addon::Flanneld,
        "k8s-dns-kube-dns-amd64"
        | "k8s-dns-dnsmasq-nanny-amd64"
        | "k8s-dns-sidecar-amd64"
        | "kubedns-amd64"
        | "kube-dnsmasq-amd64"
        | "dnsmasq-metrics-amd64"
        | "exechealthz-amd64" => Addon::KubeDns,
        "networkmonitor" => Addon::AzureNetworkMonitor,
        "ip-masq-agent-v2" => Addon::IpMasqAgent,
        "ovn-kube-ubuntu" | "ovn-kube-fedora" => Addon::OvnKube,
        _ => return None,
    })
}

/// The programs that are the add-on itself (a container running anything else — `cp` in an
/// init container, a shell — is left to the general process model).
fn is_itself(addon: Addon, command: Option<&[String]>) -> bool {
    let Some(first) = command.and_then(|c| c.first()) else {
        return true;
    };
    let p = program(first);
    match addon {
        Addon::CoreDns => p == "coredns",
        Addon::KubeProxy | Addon::WindowsKubeProxy => p == "kube-proxy",
        Addon::Flanneld | Addon::WindowsFlanneld => p == "flanneld",
        Addon::KubeDns => matches!(
            p.as_str(),
            "kube-dns" | "dnsmasq-nanny" | "sidecar" | "dnsmasq" | "exechealthz"
        ),
        Addon::AzureNetworkMonitor | Addon::IpMasqAgent => true,
        Addon::OvnKube => p == "ovnkube.sh",
    }
}

/// The image's tag (`v1.32.3` of `registry.k8s.io/kube-proxy:v1.32.3`).
fn tag(image: &str) -> &str {
    let reference = image.split('@').next().unwrap_or(image);
    match reference.rsplit_once(':') {
        Some((_, t)) if !t.contains('/') => t,
        _ => "latest",
    }
}

/// A klog header line: `I1122 10:00:00.000000       1 server.go:483] message`.
fn klog(level: char, at: DateTime<Utc>, pid: u64, source: &str, message: &str) -> String {
    format!("{level}{} {pid:>7} {source}] {message}", at.format("%m%d %H:%M:%S%.6f"))
}

/// A process id for a HostProcess agent on a Windows host, stable per node and program.
fn host_pid(profile: &NodeProfile, what: &str) -> u64 {
    let h = crate::vocab::hash::Fnv::default()
        .write(profile.name.as_bytes())
        .write(what.as_bytes())
        .finish();
    1000 + h % 8000
}

/// What an add-on image's main process does on this node, or None when the image is no add-on
/// or the container runs something else than the add-on's program.
pub fn process(
    profile: &NodeProfile,
    image: &str,
    command: Option<&[String]>,
    _args: Option<&[String]>,
) -> Option<Process> {
    let addon = addon_of(image)?;
    if !is_itself(addon, command) {
        return None;
    }
    let at = Utc::now();
    let version = tag(image);
    let forever = |log: Vec<String>| Some(Process::LongRunning { log });
    match addon {
        Addon::CoreDns => {
            let v = version.trim_start_matches('v');
            forever(vec![
                ".:53".into(),
                "[INFO] plugin/reload: Running configuration SHA512 = 1b226df79860026c6a52e67daa10d7f0d57ec5b023288ec00c5e05f93523c894564e15b91770d3a07ae1cfbe861d15b37d4a0027e69c546ab112970993a3b03b".into(),
                format!("CoreDNS-{v}"),
                "linux/amd64, go1.22.8, 1f0ad4a".into(),
            ])
        }
        Addon::KubeDns => forever(vec![klog('I', at, 1, "main.go:76", &format!("Version v{version}"))]),
        Addon::KubeProxy if !profile.is_windows() => forever(linux_kube_proxy(profile, version, at)),
        Addon::WindowsKubeProxy if profile.is_windows() => Some(windows_kube_proxy(profile, version, at)),
        Addon::Flanneld if !profile.is_windows() => forever(linux_flanneld(profile, at)),
        Addon::WindowsFlanneld if profile.is_windows() => windows_flanneld(profile, at),
        Addon::AzureNetworkMonitor => forever(vec![klog(
            'I',
            at,
            1,
            "networkmonitor.go:52",
            "Starting network monitor",
        )]),
        Addon::IpMasqAgent => forever(vec![klog('I', at, 1, "ip-masq-agent.go:187", "ip-masq-agent started")]),
        Addon::OvnKube => forever(vec![format!(
            "================== ovnkube.sh --- version: {version} ================"
        )]),
        _ => None,
    }
}

/// The version kube-proxy reports (the image tag without the sig-windows-tools suffix).
fn proxy_version(tag: &str) -> &str {
    tag.split("-flannel")
        .next()
        .unwrap_or(tag)
        .split("-calico")
        .next()
        .unwrap_or(tag)
}

fn linux_kube_proxy(profile: &NodeProfile, version: &str, at: DateTime<Utc>) -> Vec<String> {
    let line = |source: &str, message: &str| klog('I', at, 1, source, message);
    vec![
        line(
            "server.go:698",
            &format!("\"Successfully retrieved node IP(s)\" IPs=[\"{}\"]", profile.ip),
        ),
        line(
            "server.go:243",
            "\"kube-proxy running in single-stack mode\" ipFamily=\"IPv4\"",
        ),
        line("server_linux.go:170", "\"Using iptables Proxier\""),
        line(
            "server.go:483",
            &format!("\"Version info\" version=\"{}\"", proxy_version(version)),
        ),
        line("config.go:199", "\"Starting service config controller\""),
        line("config.go:105", "\"Starting endpoint slice config controller\""),
        line(
            "shared_informer.go:320",
            "\"Caches are synced\" controller=\"service config\"",
        ),
    ]
}

/// The Windows kube-proxy (kernelspace) on this node, with the node's kube-proxy faults.
fn windows_kube_proxy(profile: &NodeProfile, version: &str, at: DateTime<Utc>) -> Process {
    let pid = host_pid(profile, "kube-proxy");
    let info = |source: &str, message: &str| klog('I', at, pid, source, message);
    let mut log = vec![
        info(
            "server.go:483",
            &format!("\"Version info\" version=\"{}\"", proxy_version(version)),
        ),
        info("server_windows.go:110", "\"Using Kernelspace Proxier.\""),
    ];
    if profile.has_fault(Fault::KubeProxyNoHostnameOverride) {
        let host = machine_hostname(profile);
        log.push(klog(
            'W',
            at,
            pid,
            "server.go:601",
            &format!("\"Failed to retrieve node info\" err=\"nodes \\\"{host}\\\" not found\""),
        ));
        log.push(klog(
            'W',
            at,
            pid,
            "proxier.go:457",
            "\"Invalid nodeIP, initializing kube-proxy with 127.0.0.1 as nodeIP\"",
        ));
    } else {
        log.push(info(
            "server.go:698",
            &format!("\"Successfully retrieved node IP(s)\" IPs=[\"{}\"]", profile.ip),
        ));
    }
    if profile.has_fault(Fault::KubeProxyStopped) {
        log.push(klog(
            'E',
            at,
            pid,
            "server.go:563",
            "\"Error running ProxyServer\" err=\"context canceled\"",
        ));
        return Process::Exits {
            code: 1,
            after_ms: 200,
            log,
        };
    }
    log.push(info("config.go:199", "\"Starting service config controller\""));
    log.push(info(
        "shared_informer.go:320",
        "\"Caches are synced\" controller=\"service config\"",
    ));
    Process::LongRunning { log }
}

fn linux_flanneld(profile: &NodeProfile, at: DateTime<Utc>) -> Vec<String> {
    let line = |source: &str, message: &str| klog('I', at, 1, source, message);
    let backend = profile.flannel().map_or("host-gw", |f| f.backend);
    vec![
        line("kube.go:139", "Waiting 10m0s for node controller to sync"),
        line("kube.go:469", "Starting kube subnet manager"),
        line("kube.go:146", "Node controller sync successful"),
        line(
            "main.go:231",
            &format!("Created subnet manager: Kubernetes Subnet Manager - {}", profile.name),
        ),
        line(
            "main.go:352",
            &format!("Found network config - Backend type: {backend}"),
        ),
        line("main.go:410", "Wrote subnet file to /run/flannel/subnet.env"),
        line("main.go:414", "Running backend."),
    ]
}

/// flanneld in its HostProcess pod: the lines it logs on the node (shared with the node's
/// `flanneld.log` model), with the node's flannel faults.
fn windows_flanneld(profile: &NodeProfile, at: DateTime<Utc>) -> Option<Process> {
    profile.flannel()?;
    let pid = host_pid(profile, "flanneld");
    let mut healthy = profile.clone();
    healthy.faults.remove(&Fault::FlannelSubnetEnvMissing);
    let mut log = nodelogs::flanneld_start(&healthy, at)?;
    if profile.has_fault(Fault::FlanneldWaiting) {
        let network = profile.flannel().map_or("cbr0", |f| f.network);
        log.push(klog(
            'E',
            at,
            pid,
            "main.go:360",
            &format!("Error registering network: timeout, failed to get management IP from HNSNetwork {network}"),
        ));
        // flannel polls for the network for 5 s; a tenth of that here, as the simulated back-offs.
        return Some(Process::Exits {
            code: 1,
            after_ms: 500,
            log,
        });
    }
    if profile.has_fault(Fault::FlannelSubnetEnvMissing) {
        for line in &mut log {
            if line.contains("Wrote subnet file") {
                *line = klog(
                    'W',
                    at,
                    pid,
                    "main.go:411",
                    &format!(
                        "Failed to write subnet file: open {WINDOWS_SUBNET_ENV}: The system cannot find the path specified."
                    ),
                );
            }
        }
    }
    Some(Process::LongRunning { log })
}
