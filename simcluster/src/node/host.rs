//! A Windows node's host as its HostProcess containers see it (they run as NT AUTHORITY\SYSTEM
//! on the host): the machine's name, the HNS network of the pod network and the load-balancer
//! policies kube-proxy programs into it, the network adapters, the TCP connection table and
//! the files the node's agents keep on disk — all derived from the node's profile and faults
//! and from the store, like every other behaviour of the simulator.
//!
//! The HNS network is the one the pod network's CNI plugin uses
//! ([`crate::config::platform::PodNetwork::hns_network`]): flannel host-gw over win-bridge
//! creates `cbr0` (HNS type `L2Bridge`), flannel vxlan over win-overlay or sdnoverlay `vxlan0`
//! (`Overlay`, the cluster's `network.vxlanVni`, 4096 by default, on UDP 4789), Calico `Calico`, Azure CNI `azure` (`L2Bridge` in the bridge mode AKS
//! runs, VNet and Overlay alike; `L2Tunnel` in its tunnel mode), the VPC CNI's vpc-bridge
//! `vpcbr<ENI MAC>` and GKE's set-up `l2bridge` (both `L2Bridge`); transparent networks' HNS
//! networks are not modelled. kube-proxy (winkernel) programs one load balancer per
//! Service that has a cluster IP (headless and ExternalName Services have none).
//!
//! What each fault changes here (its other symptoms are in the kubelet model, the network
//! fabric and [`crate::node::nodelogs`]):
//! - [`Fault::HnsNetworkMissing`]: no HNS network for pods (flannel's `cbr0`/`vxlan0`, GKE's
//!   `l2bridge`), so no `vEthernet (…)` adapter and no load-balancer policies (kube-proxy
//!   waits for the network it is told to use);
//! - [`Fault::FlanneldWaiting`]: flanneld never created that network and never wrote
//!   `C:\run\flannel\subnet.env`: no network, no adapter, no subnet file, no policies;
//! - [`Fault::FlannelSubnetEnvMissing`]: no subnet file. Where flanneld runs as a HostProcess
//!   pod it created the network and only failed to write the file; where it is a node service
//!   it never started ([`crate::node::nodelogs::flanneld_start`]), so there is no network either;
//! - [`Fault::VxlanParamsMismatch`]: the overlay network runs a VNI other than the cluster's
//!   ([`NodeProfile::vxlan_vni`]), the one flanneld logs;
//! - [`Fault::KubeProxyStopped`]: kube-proxy does not run: no load-balancer policies;
//! - [`Fault::FlannelRejoinStaleSourceVip`]: the source VIP file ([`source_vip_path`]) still holds the source VIP
//!   of the node's previous subnet, so kube-proxy cannot create its source VIP endpoint and
//!   programs no policies;
//! - [`Fault::ExceptionListMissingCluster`]: the OutBoundNAT ExceptionList of
//!   the CNI configuration ([`cni_conf_path`]) lacks the cluster's pod CIDR;
//! - [`Fault::ExceptionListCoversOutside`]: the ExceptionList also holds `0.0.0.0/0`, which
//!   covers every outside address — the fabric SNATs no pod traffic to any outside address
//!   on that node;
//! - [`Fault::PortExhaustion`]: the TCP connection table is full — as many connections as the
//!   dynamic port range has ports (16384), its ports held by TimeWait and Established
//!   connections;
//! - [`Fault::KubeProxyNoHostnameOverride`]: the machine keeps Windows' generated `WIN-…` name
//!   (other nodes were renamed to their node names), which `hostname` prints and which
//!   kube-proxy, given no `--hostname-override`, looks its Node up by.
//!
//! `C:\var\log` holds the node's log files as the node proxy serves them under `/logs/` (the
//! kubelet's and, where they are node services, kube-proxy's and flanneld's), with the same
//! lines; the pods' logs (`containers\`, `pods\`) are not modelled on the host's disk.

use std::fmt::Write as _;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use crate::config::faults::Fault;
use crate::config::platform::{NetworkMode, WINDOWS_SUBNET_ENV};
use crate::config::profile::NodeProfile;
use crate::node::logs::LogBook;
use crate::node::nodelogs::{self, LogEntry};
use crate::store::{Store, resources};
use crate::vocab::hash::Fnv;
use crate::vocab::json as j;

/// The first port of Windows' default dynamic (ephemeral) TCP port range.
pub(crate) const DYNAMIC_PORT_START: u16 = 49152;
/// The number of ports in it.
pub(crate) const DYNAMIC_PORTS: u32 = 16384;

/// Process ids of the host's processes (the ones `Win32_Process` lists on a HostProcess container).
pub(crate) const SYSTEM_PID: u32 = 4;
pub(crate) const WININIT_PID: u32 = 496;
pub(crate) const SERVICES_PID: u32 = 628;
pub(crate) const LSASS_PID: u32 = 636;
pub(crate) const SVCHOST_PID: u32 = 760;
pub(crate) const CONTAINERD_PID: u32 = 2040;
pub(crate) const KUBELET_PID: u32 = 2212;

/// Where the 2019 script install (`C:\k\start.ps1`) keeps the source VIP kube-proxy uses on
/// overlay networks.
pub(crate) const SOURCE_VIP_JSON: &str = r"C:\k\SourceVip.json";
/// The 2019 script install's flannel CNI configuration.
pub(crate) const CNI_CONF: &str = r"C:\k\cni\config\cni.conf";
/// sig-windows-tools' HostProcess kube-proxy (`hostprocess/flannel/kube-proxy/start.ps1`) keeps
/// the source VIP here (real-clusters.md §4).
pub(crate) const SOURCE_VIP_JSON_HOSTPROCESS: &str = r"C:\sourcevip\sourceVip.json";
/// sig-windows-tools' HostProcess flannel (`hostprocess/flannel/flanneld/start.ps1`) writes the
/// CNI configuration here (real-clusters.md §4).
pub(crate) const CNI_CONF_HOSTPROCESS: &str = r"C:\etc\cni\net.d\10-flannel.conf";

/// Whether the node's agents were installed the HostProcess way (sig-windows-tools' HostProcess
/// DaemonSets) rather than by the 2019 scripts under `C:\k`: a kubeadm node that runs
/// HostProcess containers.
fn hostprocess_install(profile: &NodeProfile) -> bool {
    !profile.agents_are_services()
}

/// Where the node keeps kube-proxy's source VIP.
pub(crate) fn source_vip_path(profile: &NodeProfile) -> &'static str {
    if hostprocess_install(profile) {
        SOURCE_VIP_JSON_HOSTPROCESS
    } else {
        SOURCE_VIP_JSON
    }
}

/// AKS's Azure CNI configuration (AgentBaker `kuberneteswindowssetup.ps1.template`:
/// `$global:AzureCNIConfDir` = `c:\k\azurecni\netconf`; `azurecnifunc.ps1` `Set-AzureCNIConfig`:
/// `10-azure.conflist`).
pub(crate) const CNI_CONF_AKS: &str = r"C:\k\azurecni\netconf\10-azure.conflist";
/// GKE's CNI configuration (kubernetes `cluster/gce/windows/k8s-node-setup.psm1`:
/// `${env:CNI_CONFIG_DIR}\l2bridge.conf`, `CNI_CONFIG_DIR` = `C:\etc\kubernetes\cni\config`).
pub(crate) const CNI_CONF_GKE: &str = r"C:\etc\kubernetes\cni\config\l2bridge.conf";

/// Where the node keeps its pod network's CNI configuration.
pub(crate) fn cni_conf_path(profile: &NodeProfile) -> &'static str {
    match profile.platform {
        crate::config::platform::Platform::Aks => CNI_CONF_AKS,
        crate::config::platform::Platform::Gke => CNI_CONF_GKE,
        _ if hostprocess_install(profile) => CNI_CONF_HOSTPROCESS,
        _ => CNI_CONF,
    }
}
/// Where the platform keeps its copy of microsoft/SDN's HNS module: AKS `C:\k\hns.v2.psm1`
/// (AgentBaker `kuberneteswindowssetup.ps1.template`: `$global:HNSModule`), GKE
/// `C:\etc\kubernetes\hns.psm1` (kubernetes `cluster/gce/windows/k8s-node-setup.psm1`).
pub(crate) fn hns_module_path(profile: &NodeProfile) -> Option<&'static str> {
    match profile.platform {
        crate::config::platform::Platform::Aks => Some(r"C:\k\hns.v2.psm1"),
        crate::config::platform::Platform::Gke => Some(r"C:\etc\kubernetes\hns.psm1"),
        _ => None,
    }
}

/// The node's log directory (served by the node proxy under `/logs/`).
pub(crate) const LOG_DIR: &str = r"C:\var\log";

/// The machine's own computer name, lower-cased as kube-proxy does when it falls back to it:
/// Windows' generated `WIN-XXXXXXXXXXX` on kubeadm and AKS nodes not renamed to their node
/// name; EC2's `EC2AMAZ-XXXXXXX` on EKS (whose node names are private DNS names); on GKE the
/// instance name cut to the 15 characters a NetBIOS computer name allows.
pub(crate) fn machine_hostname(profile: &NodeProfile) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let (prefix, len) = match profile.platform {
        crate::config::platform::Platform::Eks => ("ec2amaz-", 7),
        crate::config::platform::Platform::Gke => {
            return profile.name.chars().take(15).collect::<String>().to_ascii_lowercase();
        }
        _ => ("win-", 11),
    };
    let mut h = Fnv::default()
        .write(profile.name.as_bytes())
        .write(b"computername")
        .finish();
    let mut name = String::from(prefix);
    for _ in 0..len {
        let i = usize::try_from(h % ALPHABET.len() as u64).unwrap_or(0);
        name.push(char::from(ALPHABET[i]));
        h /= ALPHABET.len() as u64;
        if h == 0 {
            h = 0x9e37_79b9_7f4a_7c15;
        }
    }
    name
}

/// What `hostname` prints on the node's host: the node's name where the platform names nodes
/// after their machines (kubeadm's set-up renames the machine to it; AKS), else the machine's
/// own name; with [`Fault::KubeProxyNoHostnameOverride`] the machine kept its generated name.
pub(crate) fn host_name(profile: &NodeProfile) -> String {
    if profile.is_windows()
        && (profile.has_fault(Fault::KubeProxyNoHostnameOverride) || !profile.platform.node_name_is_computer_name())
    {
        machine_hostname(profile).to_uppercase()
    } else {
        profile.name.clone()
    }
}

/// A stable GUID-like id (`8-4-4-4-12` upper-case hex) for the parts.
pub(crate) fn guid(parts: &[&str]) -> String {
    let mut h = Fnv::default();
    for p in parts {
        h.write(p.as_bytes()).write(&[0]);
    }
    let a = h.finish();
    let b = Fnv::with_basis(a).write(b"guid").finish();
    format!(
        "{:08X}-{:04X}-{:04X}-{:04X}-{:012X}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// The address `host` of the node's pod CIDR (`10.244.3.0/24`, 254 → `10.244.3.254`).
pub(crate) fn pod_address(profile: &NodeProfile, host: u8) -> String {
    format!("{}{host}", profile.pod_cidr.trim_end_matches("0/24"))
}

/// The management subnet: the node's address's /24.
fn management_subnet(profile: &NodeProfile) -> String {
    let [a, b, c, _] = profile.ip.octets();
    format!("{a}.{b}.{c}.0/24")
}

/// One HNS network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HnsNetwork {
    pub name: String,
    pub id: String,
    /// The HNS type (`L2Bridge`, `Overlay`, `L2Tunnel`).
    pub kind: &'static str,
    pub management_ip: Ipv4Addr,
    /// The node's pod CIDR and its gateway.
    pub address_prefix: String,
    pub gateway: String,
    /// Overlay: (VNI, VXLAN UDP port).
    pub vxlan: Option<(u32, u16)>,
    /// The physical adapter the network's virtual switch is bound to.
    pub adapter: &'static str,
}

/// Whether the pod network's HNS network was created on the node (and not removed since):
/// flanneld never created it while it waits or, as a node service, never started; the fault
/// [`Fault::HnsNetworkMissing`] removed it.
fn network_created(profile: &NodeProfile) -> bool {
    let flannel = profile.flannel().is_some();
    !(profile.has_fault(Fault::HnsNetworkMissing)
        || (flannel && profile.has_fault(Fault::FlanneldWaiting))
        || (flannel && profile.has_fault(Fault::FlannelSubnetEnvMissing) && nodelogs::runs_node_services(profile)))
}

/// The name of the pod network's HNS network on this node (None where it is not modelled):
/// the plugin's name, the VPC CNI's with the ENI's MAC address appended, without separators,
/// lower case (aws/amazon-vpc-cni-plugins `bridge_windows.go`: `hcnNetworkNameFormat`).
pub(crate) fn pod_network_name(profile: &NodeProfile) -> Option<(String, &'static str)> {
    let (name, kind) = profile.pod_network.hns_network(profile.network_mode)?;
    if profile.pod_network == crate::config::platform::PodNetwork::VpcCni {
        let mac = mac(profile, "Ethernet").replace('-', "").to_ascii_lowercase();
        return Some((format!("{name}{mac}"), kind));
    }
    Some((name.to_string(), kind))
}

/// The HNS network of the pod network on this node, if it exists.
pub(crate) fn pod_network(profile: &NodeProfile) -> Option<HnsNetwork> {
    if !profile.is_windows() || !network_created(profile) {
        return None;
    }
    let (name, kind) = pod_network_name(profile)?;
    let vxlan = (profile.network_mode == NetworkMode::Overlay)
        .then(|| (profile.vxlan_vni(), crate::config::platform::VXLAN_PORT));
    Some(HnsNetwork {
        id: guid(&[&profile.name, "hns-network", &name]),
        name,
        kind,
        management_ip: profile.ip,
        address_prefix: profile.pod_cidr.clone(),
        gateway: pod_address(profile, 1),
        vxlan,
        adapter: "Ethernet",
    })
}

/// Whether kube-proxy has programmed its load balancers on the node: it runs there (the pod
/// network has one, it is not stopped, and where it is a HostProcess pod the kubelet started
/// it), it found its HNS network, and on overlay it could create its source VIP endpoint. On
/// GKE Dataplane V2 `anetd-win` programs the node's Services instead of kube-proxy (GKE docs:
/// Dataplane V2 "is implemented without kube-proxy"); how it keeps them in HNS is not public,
/// so they are shown as the same load balancers (Services work on the node either way).
pub(crate) fn kube_proxy_programs(profile: &NodeProfile) -> bool {
    // A kube-proxy pod needs its kubelet; a node service does not.
    let started = nodelogs::runs_node_services(profile) || !profile.has_fault(Fault::KubeletStopped);
    profile.is_windows()
        && (profile.runs_kube_proxy || profile.dataplane_v2)
        && started
        && !profile.has_fault(Fault::KubeProxyStopped)
        && !profile.has_fault(Fault::FlannelRejoinStaleSourceVip)
        && (pod_network_name(profile).is_none() || pod_network(profile).is_some())
}

/// The Windows kube-proxy's process as `Win32_Process` shows it on the host: its executable
/// and command line, or None where it does not run (not on this pod network, stopped, or a
/// HostProcess pod whose kubelet is down). It is the one place every platform shows the
/// Windows kube-proxy's settings (real-clusters.md §3):
/// - a node service (managed platforms, pre-HostProcess kubeadm nodes) runs `C:\k\kube-proxy.exe`
///   with its flags, as the node's start scripts write them (microsoft/SDN
///   `Kubernetes/windows/start-kubeproxy.ps1`: `--v=4 --proxy-mode=kernelspace
///   --hostname-override=… --kubeconfig=c:\k\config --cluster-cidr=…`);
/// - sig-windows-tools' HostProcess DaemonSet runs it from the container's sandbox mount
///   (`$env:CONTAINER_SANDBOX_MOUNT_POINT/kube-proxy/`, its Dockerfile and `start.ps1`), with
///   `--hostname-override=$env:NODE_NAME` and the flags `start.ps1` adds (Calico:
///   `--enable-dsr=true` and `WinDSR=true`; flannel overlay: `WinOverlay=true`).
///
/// DSR (`network.dsr`) shows as `--enable-dsr=true`; the WinDSR and WinOverlay gates are passed
/// before they went GA (1.34); overlay nodes name their source VIP. With
/// [`Fault::KubeProxyNoHostnameOverride`] the flag is missing.
pub(crate) fn kube_proxy_process(profile: &NodeProfile) -> Option<(String, String)> {
    let service = nodelogs::runs_node_services(profile);
    let started = service || !profile.has_fault(Fault::KubeletStopped);
    if !profile.is_windows() || !profile.runs_kube_proxy || !started || profile.has_fault(Fault::KubeProxyStopped) {
        return None;
    }
    let network = pod_network_name(profile).map(|(name, _)| name).unwrap_or_default();
    let sandbox = format!(
        r"C:\C\{}",
        guid(&[&profile.name, "kube-proxy-sandbox"]).to_ascii_lowercase()
    );
    let (exe, mut args) = if service {
        (
            r"C:\k\kube-proxy.exe".to_string(),
            vec![
                "--v=3".to_string(),
                "--proxy-mode=kernelspace".into(),
                format!("--hostname-override={}", profile.name),
                r"--kubeconfig=C:\k\config".into(),
                format!("--cluster-cidr={}", profile.cluster_cidr),
                format!("--network-name={network}"),
            ],
        )
    } else {
        (
            format!(r"{sandbox}\kube-proxy\kube-proxy.exe"),
            vec![
                format!("--hostname-override={}", profile.name),
                "--v=4".to_string(),
                "--proxy-mode=kernelspace".into(),
                format!(r"--kubeconfig={sandbox}\mounts\var\lib\kube-proxy\kubeconfig.conf"),
                format!("--network-name={network}"),
            ],
        )
    };
    if profile.has_fault(Fault::KubeProxyNoHostnameOverride) {
        args.retain(|a| !a.starts_with("--hostname-override="));
    }
    let mut gates = Vec::new();
    let before_ga = crate::config::topology::parse_version(&profile.kube_proxy_version).is_some_and(|v| v < (1, 34));
    if profile.dsr {
        args.push("--enable-dsr=true".into());
        if before_ga {
            gates.push("WinDSR=true");
        }
    }
    if profile.network_mode == NetworkMode::Overlay {
        args.push(format!("--source-vip={}", pod_address(profile, 254)));
        if before_ga {
            gates.push("WinOverlay=true");
        }
    }
    if !gates.is_empty() {
        args.push(format!("--feature-gates={}", gates.join(",")));
    }
    let cmdline = format!("{exe} {}", args.join(" "));
    Some((exe, cmdline))
}

/// What `kube-proxy.exe --version` prints on the node: the binary's version.
pub(crate) fn kube_proxy_version_line(profile: &NodeProfile) -> String {
    format!("Kubernetes {}", profile.kube_proxy_version)
}

/// One network adapter of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Adapter {
    pub name: String,
    pub description: &'static str,
    pub if_index: u32,
    pub mac: String,
    pub link_speed: &'static str,
}

pub(crate) fn mac(profile: &NodeProfile, what: &str) -> String {
    let h = Fnv::default()
        .write(profile.name.as_bytes())
        .write(what.as_bytes())
        .finish();
    let b = h.to_be_bytes();
    format!("00-15-5D-{:02X}-{:02X}-{:02X}", b[0], b[1], b[2])
}

/// The host's adapters: the VM's NIC `Ethernet`, the management vNIC `vEthernet (Ethernet)`
/// of the virtual switch it is bound to (it carries the node's address), and the pod network's
/// `vEthernet (<network>)` while its HNS network exists.
pub(crate) fn adapters(profile: &NodeProfile) -> Vec<Adapter> {
    if !profile.is_windows() {
        return Vec::new();
    }
    let nic = mac(profile, "Ethernet");
    let mut list = vec![
        Adapter {
            name: "Ethernet".into(),
            description: "Microsoft Hyper-V Network Adapter",
            if_index: 6,
            mac: nic.clone(),
            link_speed: "10 Gbps",
        },
        Adapter {
            name: "vEthernet (Ethernet)".into(),
            description: "Hyper-V Virtual Ethernet Adapter",
            if_index: 11,
            mac: nic,
            link_speed: "10 Gbps",
        },
    ];
    if let Some(net) = pod_network(profile) {
        list.push(Adapter {
            name: format!("vEthernet ({})", net.name),
            description: "Hyper-V Virtual Ethernet Adapter #2",
            if_index: 17,
            mac: mac(profile, &net.name),
            link_speed: "10 Gbps",
        });
    }
    list
}

/// A TCP connection's state as `Get-NetTCPConnection` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TcpState {
    Listen,
    Established,
    TimeWait,
}

impl TcpState {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Listen => "Listen",
            Self::Established => "Established",
            Self::TimeWait => "TimeWait",
        }
    }
}

/// One entry of the host's TCP connection table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TcpConnection {
    pub local: String,
    pub local_port: u16,
    pub remote: String,
    pub remote_port: u16,
    pub state: TcpState,
    pub owner: u32,
}

/// The API server's address as the node's agents reach it: the control-plane node's
/// InternalIP and port 6443, when the store has such a node.
fn api_server(store: &Store) -> Option<String> {
    let (nodes, _) = store.list(resources::core("nodes"), None);
    nodes
        .iter()
        .find(|n| j::present(n.value(), "/metadata/labels/node-role.kubernetes.io~1control-plane"))
        .and_then(|n| {
            j::array(n.value(), "/status/addresses")
                .iter()
                .find(|a| j::str(a, "/type") == "InternalIP")
                .map(|a| j::str(a, "/address").to_string())
        })
}

/// A dynamic port for a connection, stable per node and purpose.
fn ephemeral_port(profile: &NodeProfile, what: &str) -> u16 {
    let h = Fnv::default()
        .write(profile.name.as_bytes())
        .write(what.as_bytes())
        .finish();
    // Above the RPC listeners (49664…), below the end of the range.
    50000 + u16::try_from(h % 15000).unwrap_or(0)
}

/// The host's TCP connection table: the system's listeners (RPC, SMB, WinRM and the RPC
/// dynamic ones), the kubelet's (10250, 10248 on loopback) and kube-proxy's health port
/// (10256) where it runs, and the kubelet's and kube-proxy's connections to the API server.
/// With [`Fault::PortExhaustion`] the rest of the table fills up with TimeWait and
/// Established connections on the dynamic ports, to [`DYNAMIC_PORTS`] entries in all.
pub(crate) fn tcp_connections(profile: &NodeProfile, store: &Store) -> Vec<TcpConnection> {
    if !profile.is_windows() {
        return Vec::new();
    }
    let listen = |local: &str, port: u16, owner: u32| TcpConnection {
        local: local.to_string(),
        local_port: port,
        remote: "0.0.0.0".into(),
        remote_port: 0,
        state: TcpState::Listen,
        owner,
    };
    let any = "0.0.0.0";
    let mut table = vec![
        listen(any, 135, SVCHOST_PID),
        listen(any, 445, SYSTEM_PID),
        listen(any, 5985, SYSTEM_PID),
        listen(any, 10250, KUBELET_PID),
        listen("127.0.0.1", 10248, KUBELET_PID),
        listen(any, 47001, SYSTEM_PID),
        listen(any, 49664, LSASS_PID),
        listen(any, 49665, WININIT_PID),
        listen(any, 49666, SVCHOST_PID),
        listen(any, 49667, SERVICES_PID),
    ];
    let proxy_runs = profile.runs_kube_proxy && !profile.has_fault(Fault::KubeProxyStopped);
    let proxy_pid = u32::try_from(nodelogs::service_pid(profile, nodelogs::KUBE_PROXY)).unwrap_or(0);
    if proxy_runs {
        table.push(listen(any, 10256, proxy_pid));
    }
    let node_ip = profile.ip.to_string();
    let api = api_server(store);
    if let Some(api) = &api {
        let mut clients = vec![("kubelet", KUBELET_PID)];
        if proxy_runs {
            clients.push(("kube-proxy", proxy_pid));
        }
        for (who, owner) in clients {
            table.push(TcpConnection {
                local: node_ip.clone(),
                local_port: ephemeral_port(profile, who),
                remote: api.clone(),
                remote_port: 6443,
                state: TcpState::Established,
                owner,
            });
        }
    }
    if profile.has_fault(Fault::PortExhaustion) {
        let used: std::collections::BTreeSet<u16> = table.iter().map(|c| c.local_port).collect();
        let (remote, remote_port) = match api {
            Some(api) => (api, 6443),
            None => (crate::network::snapshot::node_resolver(profile.ip).to_string(), 443),
        };
        let room = usize::try_from(DYNAMIC_PORTS).unwrap_or(0).saturating_sub(table.len());
        let fill: Vec<TcpConnection> = (0..DYNAMIC_PORTS)
            .filter_map(|k| u16::try_from(u32::from(DYNAMIC_PORT_START) + k).ok())
            .filter(|p| !used.contains(p))
            .take(room)
            .map(|port| {
                let waiting = port % 3 != 0;
                TcpConnection {
                    local: node_ip.clone(),
                    local_port: port,
                    remote: remote.clone(),
                    remote_port,
                    state: if waiting {
                        TcpState::TimeWait
                    } else {
                        TcpState::Established
                    },
                    owner: if waiting { 0 } else { SYSTEM_PID },
                }
            })
            .collect();
        table.extend(fill);
    }
    table.sort_by(|a, b| (&a.local, a.local_port).cmp(&(&b.local, b.local_port)));
    table
}

/// `C:\run\flannel\subnet.env` as flanneld writes it, on nodes of a flannel network where
/// flanneld wrote it.
pub(crate) fn subnet_env(profile: &NodeProfile) -> Option<String> {
    let flannel = profile.flannel()?;
    if !profile.is_windows()
        || profile.has_fault(Fault::FlannelSubnetEnvMissing)
        || profile.has_fault(Fault::FlanneldWaiting)
    {
        return None;
    }
    let mtu = if flannel.backend == "vxlan" { 1450 } else { 1500 };
    Some(format!(
        "FLANNEL_NETWORK={}\nFLANNEL_SUBNET={}/24\nFLANNEL_MTU={mtu}\nFLANNEL_IPMASQ=true\n",
        profile.cluster_cidr,
        pod_address(profile, 1)
    ))
}

/// The /24 the node had before it re-joined ([`Fault::FlannelRejoinStaleSourceVip`]): modelled
/// as the subnet 100 leases away from its current one.
fn previous_subnet_prefix(profile: &NodeProfile) -> String {
    let mut octets = profile.pod_cidr.split(['.', '/']);
    let a = octets.next().unwrap_or("10");
    let b = octets.next().unwrap_or("244");
    let c: u32 = octets.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    format!("{a}.{b}.{}.", (c + 100) % 256)
}

/// `C:\k\SourceVip.json` on overlay nodes: the host-local IPAM result the kube-proxy start
/// script keeps, the source VIP kube-proxy uses (`.254` of the node's pod CIDR, which the
/// kubelet never hands to a pod) — or, after a re-join with a new subnet, the stale one of
/// the previous subnet.
pub(crate) fn source_vip_json(profile: &NodeProfile) -> Option<String> {
    if !profile.is_windows() || profile.network_mode != NetworkMode::Overlay {
        return None;
    }
    let (ip, gateway) = if profile.has_fault(Fault::FlannelRejoinStaleSourceVip) {
        let prefix = previous_subnet_prefix(profile);
        (format!("{prefix}254"), format!("{prefix}1"))
    } else {
        (pod_address(profile, 254), pod_address(profile, 1))
    };
    let doc = json!({"cniVersion": "0.2.0", "ip4": {"ip": format!("{ip}/24"), "gateway": gateway}, "dns": {}});
    serde_json::to_string_pretty(&doc).ok()
}

/// The cluster DNS address the CNI configuration hands to pods: kube-dns's cluster IP.
fn cluster_dns(store: &Store) -> String {
    store
        .get(resources::core("services"), "kube-system", "kube-dns")
        .map(|s| j::str(s.value(), "/spec/clusterIP").to_string())
        .ok()
        .filter(|ip| !ip.is_empty())
        .unwrap_or_else(|| crate::config::profile::CLUSTER_DNS[0].into())
}

/// The OutBoundNAT ExceptionList: what pods reach without SNAT — the cluster's pod CIDR
/// (missing with [`Fault::ExceptionListMissingCluster`]), the Service CIDR and the management
/// subnet; with [`Fault::ExceptionListCoversOutside`] also `0.0.0.0/0`.
pub(crate) fn exception_list(profile: &NodeProfile) -> Vec<String> {
    let mut list = Vec::new();
    if !profile.has_fault(Fault::ExceptionListMissingCluster) {
        list.push(profile.cluster_cidr.clone());
    }
    list.push(profile.service_cidr.clone());
    list.push(management_subnet(profile));
    if profile.has_fault(Fault::ExceptionListCoversOutside) {
        list.push("0.0.0.0/0".into());
    }
    list
}

/// The platform's own CNI configuration with its OutBoundNAT ExceptionList
/// ([`exception_list`]): AKS's Azure CNI conflist (AgentBaker `Set-AzureCNIConfig`: `azure-vnet`
/// in `"mode": "bridge"`, IPAM `azure-vnet-ipam`, or `azure-cns` in `v4overlay` mode on Azure CNI
/// Overlay; its policies in `AdditionalArgs`; with WinDSR `windowsSettings.enableLoopbackDSR`
/// and no ROUTE policy for the Service CIDR) and GKE's `l2bridge.conf` (`sdnbridge`,
/// k8s-node-setup.psm1); None elsewhere.
fn platform_cni_conf(profile: &NodeProfile, store: &Store) -> Option<String> {
    use crate::config::platform::PodNetwork;
    let policy = |value: Value| json!({"Name": "EndpointPolicy", "Value": value});
    let dns = json!({"Nameservers": [cluster_dns(store)], "Search": [format!("svc.{}", profile.cluster_domain)]});
    let outbound = policy(json!({"Type": "OutBoundNAT", "ExceptionList": exception_list(profile)}));
    let services = policy(json!({"Type": "ROUTE", "DestinationPrefix": profile.service_cidr, "NeedEncap": true}));
    let doc = match profile.pod_network {
        PodNetwork::AzureCni | PodNetwork::AzureCniOverlay => {
            let ipam = if profile.pod_network == PodNetwork::AzureCniOverlay {
                json!({"type": "azure-cns", "mode": "v4overlay"})
            } else {
                json!({"type": "azure-vnet-ipam"})
            };
            let mut args = vec![outbound];
            if !profile.dsr {
                args.push(services);
            }
            json!({"cniVersion": "0.3.0", "name": "azure", "adapterName": "", "plugins": [{
                "type": "azure-vnet", "mode": "bridge", "bridge": "azure0",
                "capabilities": {"portMappings": true, "dns": true},
                "ipam": ipam, "dns": dns, "AdditionalArgs": args,
                "windowsSettings": {"enableLoopbackDSR": profile.dsr},
            }]})
        }
        PodNetwork::GkeWinBridge => json!({
            "cniVersion": "0.2.0", "name": "l2bridge", "type": "sdnbridge", "master": "Ethernet",
            "capabilities": {"portMappings": true, "dns": true},
            "ipam": {"subnet": profile.pod_cidr, "routes": [{"GW": pod_address(profile, 1)}]},
            "dns": dns,
            "AdditionalArgs": [outbound, services,
                policy(json!({"Type": "ROUTE", "DestinationPrefix": format!("{}/32", profile.ip), "NeedEncap": true}))],
        }),
        _ => return None,
    };
    serde_json::to_string_pretty(&doc).ok()
}

/// `c:/etc/cni/net.d/10-flannel.conf` as sig-windows-tools' HostProcess flannel writes it for
/// the sdnoverlay delegate (`hostprocess/flannel/flanneld/flannel-overlay.yml`
/// `cni-conf-containerd.json`, filled in by its `start.ps1`): `portMappings` and `dns`
/// capabilities, `"delegate": {"type": "sdnoverlay"}` with `AdditionalArgs` — OutBoundNAT
/// `Settings.Exceptions` (the Service and pod subnets, [`exception_list`]), an SDNROUTE to the
/// Service subnet, the node's ProviderAddress. The network's name is the HNS network's.
fn sdnoverlay_conf(profile: &NodeProfile, network: &str) -> Value {
    let arg = |value: Value| json!({"Name": "EndpointPolicy", "Value": value});
    let exceptions: Vec<String> = exception_list(profile)
        .into_iter()
        .filter(|range| *range != management_subnet(profile))
        .collect();
    json!({
        "name": network,
        "cniVersion": "0.2.0",
        "type": "flannel",
        "capabilities": {"portMappings": true, "dns": true},
        "delegate": {
            "type": crate::config::delegate::CniDelegate::Sdnoverlay.plugin_type(),
            "AdditionalArgs": [
                arg(json!({"Type": "OutBoundNAT", "Settings": {"Exceptions": exceptions}})),
                arg(json!({"Type": "SDNROUTE", "Settings": {"DestinationPrefix": profile.service_cidr, "NeedEncap": true}})),
                arg(json!({"Type": "ProviderAddress", "Settings": {"ProviderAddress": profile.ip.to_string()}})),
            ],
        },
    })
}

/// `C:\k\cni\config\cni.conf` (2019 scripts) or `10-flannel.conf` (HostProcess): the flannel
/// CNI plugin's configuration on nodes of a flannel network, naming the node's delegate
/// ([`NodeProfile::cni_delegate`]): win-bridge or win-overlay with the OutBoundNAT and ROUTE
/// policies, sdnoverlay in sig-windows-tools' form ([`sdnoverlay_conf`]); the managed
/// platforms' own configuration ([`platform_cni_conf`]) on AKS and GKE.
pub(crate) fn cni_conf(profile: &NodeProfile, store: &Store) -> Option<String> {
    if !profile.is_windows() {
        return None;
    }
    let Some(flannel) = profile.flannel() else {
        return platform_cni_conf(profile, store);
    };
    let delegate = profile.cni_delegate.map_or(flannel.delegate, |d| d.plugin_type());
    if profile.cni_delegate == Some(crate::config::delegate::CniDelegate::Sdnoverlay) {
        return serde_json::to_string_pretty(&sdnoverlay_conf(profile, flannel.network)).ok();
    }
    let policy = |value: Value| json!({"Name": "EndpointPolicy", "Value": value});
    let mut policies = vec![
        policy(json!({"Type": "OutBoundNAT", "ExceptionList": exception_list(profile)})),
        policy(json!({"Type": "ROUTE", "DestinationPrefix": profile.service_cidr, "NeedEncap": true})),
    ];
    if profile.network_mode == NetworkMode::L2bridge {
        policies.push(policy(
            json!({"Type": "ROUTE", "DestinationPrefix": format!("{}/32", profile.ip), "NeedEncap": true}),
        ));
    }
    let doc = json!({
        "cniVersion": "0.2.0",
        "name": flannel.network,
        "type": "flannel",
        "capabilities": {"dns": true},
        "delegate": {
            "type": delegate,
            "dns": {"Nameservers": [cluster_dns(store)], "Search": [format!("svc.{}", profile.cluster_domain)]},
            "policies": policies,
        },
    });
    serde_json::to_string_pretty(&doc).ok()
}

/// The node's log files under `C:\var\log` with the log book's lines, and the files its agents'
/// services write where the platform puts them ([`crate::node::winservices::log_files`]).
fn log_files(profile: &NodeProfile, logs: &LogBook) -> Vec<(String, Vec<u8>)> {
    let read = |key: &str| {
        let mut text = String::new();
        for line in logs.read("", &profile.name, key, false).unwrap_or_default() {
            let _ = writeln!(text, "{}", line.text);
        }
        text.into_bytes()
    };
    let services = crate::node::winservices::log_files(profile).into_iter().map(|f| {
        let key = match f.agent {
            crate::node::winservices::Agent::Kubelet => nodelogs::KUBELET,
            crate::node::winservices::Agent::KubeProxy => nodelogs::KUBE_PROXY,
        };
        let text = if f.lines { read(key) } else { Vec::new() };
        (f.path.to_string(), text)
    });
    nodelogs::log_files(profile)
        .into_iter()
        .filter_map(|(path, entry)| match entry {
            LogEntry::Component(key) => {
                let mut text = String::new();
                for line in logs.read("", &profile.name, key, false).unwrap_or_default() {
                    let _ = writeln!(text, "{}", line.text);
                }
                Some((format!("{LOG_DIR}\\{}", path.replace('/', "\\")), text.into_bytes()))
            }
            LogEntry::Dir | LogEntry::Syslog => None,
        })
        .chain(services)
        .collect()
}

/// The files of a Windows node's disk that its agents keep: flannel's subnet file, the source
/// VIP, the CNI configuration and the node's log files. Nothing on Linux nodes.
pub(crate) fn files(profile: &NodeProfile, store: &Store, logs: &LogBook) -> Vec<(String, Vec<u8>)> {
    if !profile.is_windows() {
        return Vec::new();
    }
    let mut files = Vec::new();
    if let Some(text) = subnet_env(profile) {
        files.push((WINDOWS_SUBNET_ENV.to_string(), text.into_bytes()));
    }
    if let Some(text) = source_vip_json(profile) {
        files.push((source_vip_path(profile).to_string(), text.into_bytes()));
    }
    if let Some(text) = cni_conf(profile, store) {
        files.push((cni_conf_path(profile).to_string(), text.into_bytes()));
    }
    if let Some(path) = hns_module_path(profile) {
        // The module's code is not modelled: `Import-Module` of the path is (see the
        // PowerShell `system` cmdlets), and `Test-Path` finds it.
        let text =
            format!("# {path}: microsoft/SDN's HNS module (Kubernetes/windows), as the platform installs it\r\n");
        files.push((path.to_string(), text.into_bytes()));
    }
    files.extend(log_files(profile, logs));
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::topology::{PROFILES, Topology};

    /// The profiles' kube-proxy is the add-ons' (ovn-kubernetes replaces it).
    #[test]
    fn kube_proxy_runs_where_the_add_ons_deploy_it() {
        for (name, _) in PROFILES {
            let topology = Topology::profile(name).expect("built-in profile");
            let ips: Vec<Ipv4Addr> = (0..topology.nodes.len())
                .map(|i| Ipv4Addr::new(10, 1, 0, 10 + u8::try_from(i).expect("few nodes")))
                .collect();
            let profiles = crate::config::profile::profiles(&topology, &ips);
            let addons = crate::node::addons::Addons::new(&topology, &profiles);
            for p in &profiles {
                assert_eq!(p.runs_kube_proxy, addons.has_kube_proxy(), "{name}/{}", p.name);
            }
        }
    }

    /// The node's CNI configuration names its delegate, so a reader of the file learns it:
    /// the 2019 scripts' flannel `cni.conf` win-bridge/win-overlay, sig-windows-tools'
    /// HostProcess `10-flannel.conf` sdnoverlay with the `portMappings` capability
    /// (`hostprocess/flannel/flanneld/flannel-overlay.yml`), GKE's `l2bridge.conf` sdnbridge,
    /// AKS's conflist azure-vnet; and the overlay network's VNI is the cluster's.
    #[rstest::rstest]
    #[case::scripts_host_gw("k8s-1.14-ws2019-host-gw", CNI_CONF, "win-bridge")]
    #[case::scripts_vxlan("k8s-1.14-ws2019-vxlan", CNI_CONF, "win-overlay")]
    #[case::hostprocess_vxlan("kubeadm-flannel-hostprocess", CNI_CONF_HOSTPROCESS, "sdnoverlay")]
    #[case::current_host_gw("default", CNI_CONF_HOSTPROCESS, "win-bridge")]
    #[case::gke("gke", CNI_CONF_GKE, "sdnbridge")]
    #[case::aks("aks", CNI_CONF_AKS, "azure-vnet")]
    fn the_cni_configuration_names_the_delegate(#[case] name: &str, #[case] path: &str, #[case] delegate: &str) {
        let topology = Topology::profile(name).expect("built-in profile");
        let ips: Vec<Ipv4Addr> = (0..topology.nodes.len())
            .map(|i| Ipv4Addr::new(10, 1, 0, 10 + u8::try_from(i).expect("few nodes")))
            .collect();
        let profiles = crate::config::profile::profiles(&topology, &ips);
        let store = Store::default();
        let windows: Vec<&NodeProfile> = profiles.iter().filter(|p| p.is_windows()).collect();
        assert!(!windows.is_empty());
        for p in windows {
            assert_eq!(cni_conf_path(p), path, "{name}/{}", p.name);
            let doc: Value = serde_json::from_str(&cni_conf(p, &store).expect("a CNI configuration")).expect("JSON");
            let named = doc
                .pointer("/delegate/type")
                .or_else(|| doc.pointer("/plugins/0/type"))
                .or_else(|| doc.pointer("/type"))
                .and_then(Value::as_str);
            assert_eq!(named, Some(delegate), "{name}/{}: {doc}", p.name);
            if delegate == "sdnoverlay" {
                assert_eq!(doc.pointer("/capabilities/portMappings"), Some(&json!(true)));
                let exceptions = doc.pointer("/delegate/AdditionalArgs/0/Value/Settings/Exceptions");
                assert_eq!(exceptions, Some(&json!([p.cluster_cidr, p.service_cidr])));
            }
        }
    }

    /// `network.vxlanVni` 4097: every node's overlay network runs it, one with
    /// `vxlan-params-mismatch` another.
    #[test]
    fn overlay_networks_run_the_cluster_vni() {
        let text = "name: t\nnetwork: {mode: overlay, vxlanVni: 4097}\nnodes:\n  - {name: w1, os: windows, kernelVersion: 10.0.17763.6414}\n  - {name: w2, os: windows, kernelVersion: 10.0.17763.6414, faults: [vxlan-params-mismatch]}\n";
        let topology = Topology::parse(text, "t.yaml").expect("topology");
        let ps =
            crate::config::profile::profiles(&topology, &[Ipv4Addr::new(10, 1, 0, 10), Ipv4Addr::new(10, 1, 0, 11)]);
        let vni = |p: &NodeProfile| pod_network(p).and_then(|n| n.vxlan).map(|(vni, _)| vni);
        assert_eq!(vni(&ps[0]), Some(4097));
        assert_ne!(vni(&ps[1]), Some(4097));
    }

    #[test]
    fn ids_are_stable_guids() {
        let id = guid(&["win2022-1", "hns-network", "cbr0"]);
        assert_eq!(id, guid(&["win2022-1", "hns-network", "cbr0"]));
        assert_ne!(id, guid(&["win2019-1", "hns-network", "cbr0"]));
        let parts: Vec<usize> = id.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{id}");
        assert!(
            id.chars()
                .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_lowercase())
        );
    }
}
