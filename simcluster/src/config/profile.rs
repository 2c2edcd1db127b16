//! Node profiles: everything a simulated node's behaviour is derived from — OS, Windows build,
//! kubelet and runtime versions, kubelet configuration, isolation support, faults and timings —
//! computed once from the topology. Behaviour comes from here and from nothing else (never from
//! what a suite expects).

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::time::Duration;

use serde_json::{Value, json};

use crate::config::delegate::CniDelegate;
use crate::config::faults::Fault;
use crate::config::platform::{Flannel, NetworkMode, Os, Platform, PodNetwork};
use crate::config::topology::{NodeSpec, Timing, Topology, parse_version};
use crate::vocab::quantity::Quantity;

/// The container runtime a node runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeKind {
    Containerd,
    Docker,
}

/// A simulation step whose duration the profile decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    Sandbox,
    Pull,
    Create,
    Start,
    Stop,
}

/// Everything one simulated node's behaviour derives from.
#[derive(Debug, Clone)]
pub struct NodeProfile {
    pub name: String,
    pub os: Os,
    pub arch: String,
    /// Windows build number (17763, 20348, …); None on Linux.
    pub build: Option<u32>,
    pub kernel_version: String,
    /// The node's `osImage` (`Ubuntu 22.04.5 LTS`, `Windows Server 2022 Datacenter`).
    pub os_image: String,
    /// The kubelet's `major.minor`.
    pub kubelet: (u32, u32),
    pub kubelet_version: String,
    pub runtime: RuntimeKind,
    /// The runtime's `major.minor` (containerd 1.7 → (1, 7); Docker 18.09 → (18, 9)).
    pub runtime_version: (u32, u32),
    pub container_runtime: String,
    pub hyperv: bool,
    /// Whether the host has the HNS cmdlets ([`crate::config::topology`]'s `hnsCmdlets`).
    pub hns_cmdlets: bool,
    pub pause_image: String,
    pub capacity: BTreeMap<String, String>,
    pub allocatable: BTreeMap<String, String>,
    pub system_reserved: BTreeMap<String, String>,
    pub kube_reserved: BTreeMap<String, String>,
    pub eviction_hard: BTreeMap<String, String>,
    pub enforce_node_allocatable: Vec<String>,
    pub faults: BTreeSet<Fault>,
    /// The faults of `faults` that hold for a share of connection attempts only (`@P`).
    pub fault_shares: BTreeMap<Fault, f64>,
    /// The cluster's pod network mode (which CNI set-up the node runs).
    pub network_mode: NetworkMode,
    /// Who built the cluster (kubeadm or a managed platform).
    pub platform: Platform,
    /// The plugin running the pod network.
    pub pod_network: PodNetwork,
    /// The cluster's DNS domain (`network.clusterDomain`).
    pub cluster_domain: String,
    /// The most backends per Service a Windows HNS load balancer takes (NET-SVC-BACKEND-LIMIT).
    pub service_backend_limit: usize,
    /// Whether the node's CNI maps hostPorts (NET-HOSTPORT): `network.portMappings`, else the
    /// delegate's documented behaviour ([`CniDelegate::maps_host_ports`]), else by era.
    pub port_mappings: bool,
    /// Windows: the CNI plugin the pod network delegates to (`cniDelegate`, else
    /// [`CniDelegate::by_default`]); None on Linux and on transparent networks.
    pub cni_delegate: Option<CniDelegate>,
    /// flannel's VXLAN VNI on this node (`network.vxlanVni`; the fault
    /// [`Fault::VxlanParamsMismatch`] makes it differ, [`NodeProfile::vxlan_vni`]).
    pub cluster_vxlan_vni: u32,
    pub ip: Ipv4Addr,
    /// This node's pod CIDR (`10.244.<index>.0/24`).
    pub pod_cidr: String,
    /// Dual-stack clusters: this node's IPv6 pod CIDR (the `index`-th /64 of
    /// `network.clusterCidrV6`); None on single-stack clusters.
    pub pod_cidr_v6: Option<String>,
    /// The cluster's pod CIDR (`network.clusterCidr`), which each node's pod CIDR is cut from.
    pub cluster_cidr: String,
    /// The cluster's Service CIDR (`network.serviceCidr`).
    pub service_cidr: String,
    /// Whether kube-proxy runs on the node: on every pod network but ovn-kubernetes, which
    /// implements Services itself (a transparent network whose Windows nodes all run their
    /// agents as HostProcess pods, as `crate::node::addons` deploys it), and GKE Dataplane V2,
    /// whose `anetd`/`anetd-win` do ("implemented without kube-proxy", GKE docs).
    pub runs_kube_proxy: bool,
    /// GKE Dataplane V2 (`network.dataplane: v2`): anetd programs the node's Services.
    pub dataplane_v2: bool,
    /// Whether the Windows kube-proxy runs with `--enable-dsr` (`network.dsr`).
    pub dsr: bool,
    /// The Windows kubelet's `--windows-priorityclass`, if it passes one.
    pub windows_priority_class: Option<String>,
    /// The version of the Windows kube-proxy binary serving the node.
    pub kube_proxy_version: String,
    pub index: usize,
    pub timing: Timing,
    /// The cluster's registries: which want credentials, which do not resolve (the node's
    /// runtime pulls from them).
    pub registries: crate::config::registry::Registries,
}

fn runtime_of(s: &str) -> (RuntimeKind, (u32, u32)) {
    let (scheme, version) = s.split_once("://").unwrap_or(("containerd", s));
    let kind = if scheme.eq_ignore_ascii_case("docker") {
        RuntimeKind::Docker
    } else {
        RuntimeKind::Containerd
    };
    let mut parts = version.trim_start_matches('v').split(['.', '-', '+']);
    let major = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (kind, (major, minor))
}

/// The LTSC builds from Windows Server 2022 on (2022, 2025): the lower bounds of the relaxed
/// build match.
const LTSC_FROM_2022: &[u32] = &[20348, 26100];

/// Whether the Windows CNI of a cluster of that Kubernetes version and network mode maps
/// hostPorts when the topology does not say (NET-HOSTPORT): the 1.9 guide's host-gw PortMapping
/// works (S2); from 1.10 hostPort did not work correctly on Windows (k8s#51354, k8s#66022) and the
/// 1.14-era win-bridge/win-overlay had no `portMappings` (k8s#90116); win-bridge gained it in
/// containernetworking/plugins#475 (2020, the 1.18 era), win-overlay never did (plugins#530,
/// microsoft/SDN#428). Azure CNI's Windows networks (L2Tunnel) map them as HNS NAT policies
/// since Azure/azure-container-networking#256 (2018).
fn port_mappings_by_era(version: (u32, u32), mode: NetworkMode) -> bool {
    version < (1, 10) || (version >= (1, 18) && mode != NetworkMode::Overlay)
}

/// Whether a Windows kubelet of that version on that runtime runs HostProcess containers.
fn host_process_capable(kubelet: (u32, u32), runtime: RuntimeKind, runtime_version: (u32, u32)) -> bool {
    kubelet >= (1, 23) && runtime == RuntimeKind::Containerd && runtime_version >= (1, 6)
}

/// Whether the Windows node agents of the topology run as HostProcess pods: it has Windows
/// nodes and every one of them can run HostProcess containers (the add-ons' HostProcess era).
fn windows_agents_are_pods(topology: &Topology) -> bool {
    let mut windows = topology.nodes.iter().filter(|n| n.os == Os::Windows).peekable();
    windows.peek().is_some()
        && windows.all(|spec| {
            let kubelet = spec
                .kubelet_version
                .as_deref()
                .and_then(parse_version)
                .unwrap_or(topology.version());
            let (runtime, version) = runtime_of(&spec.container_runtime());
            host_process_capable(kubelet, runtime, version)
        })
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The cluster DNS Service's address every node's kubelet is configured with (`clusterDNS`).
pub const CLUSTER_DNS: &[&str] = &["10.96.0.10"];

impl NodeProfile {
    /// The profile of a topology node with the given index and address.
    pub fn new(spec: &NodeSpec, topology: &Topology, index: usize, ip: Ipv4Addr) -> Self {
        let kubelet_version = spec
            .kubelet_version
            .clone()
            .unwrap_or_else(|| topology.kubernetes_version.clone());
        let kubelet = parse_version(&kubelet_version).unwrap_or(topology.version());
        let container_runtime = spec.container_runtime();
        let (runtime, runtime_version) = runtime_of(&container_runtime);
        let windows = spec.os == Os::Windows;
        // The kubelet reserves nothing unless told to (MEM-SYS-RESERVED is a recommendation).
        let system_reserved = spec.kubelet.system_reserved.clone().unwrap_or_default();
        let kube_reserved = spec.kubelet.kube_reserved.clone().unwrap_or_default();
        let eviction_hard = spec.kubelet.eviction_hard.clone().unwrap_or_else(|| {
            // Windows kubelets from 1.31 default to a 500Mi hard threshold (KEVD).
            let memory = if windows && kubelet >= (1, 31) {
                "500Mi"
            } else {
                "100Mi"
            };
            map(&[
                ("memory.available", memory),
                ("nodefs.available", "10%"),
                ("imagefs.available", "15%"),
            ])
        });
        let enforce_node_allocatable = spec
            .kubelet
            .enforce_node_allocatable
            .clone()
            .unwrap_or_else(|| if windows { Vec::new() } else { vec!["pods".into()] });
        // As the add-ons run it (`crate::node::addons`): the node's `kubeProxyVersion`, else its
        // kubelet's version.
        let kube_proxy_version = if spec.kube_proxy_version.is_empty() {
            kubelet_version.clone()
        } else {
            spec.kube_proxy_version.clone()
        };
        let capacity = capacity(spec);
        let allocatable = allocatable(&capacity, &system_reserved, &kube_reserved, &eviction_hard);
        // The install era of a kubeadm node: sig-windows-tools' HostProcess DaemonSets where the
        // node runs HostProcess containers (as `crate::node::host` finds its files).
        let host_process = !topology.platform.managed() && host_process_capable(kubelet, runtime, runtime_version);
        let cni_delegate = spec
            .cni_delegate
            .or_else(|| CniDelegate::by_default(topology.pod_network(), topology.network.mode, host_process));
        let cni_delegate = cni_delegate.filter(|_| windows);
        Self {
            name: spec.name.clone(),
            os: spec.os,
            arch: spec.arch.clone(),
            build: spec.build_number(),
            kernel_version: spec.kernel_version(),
            os_image: spec.os_image(),
            kubelet,
            kubelet_version,
            runtime,
            runtime_version,
            container_runtime,
            hyperv: spec.hyperv,
            hns_cmdlets: spec.hns_cmdlets,
            pause_image: spec
                .pause_image
                .clone()
                .unwrap_or_else(|| "registry.k8s.io/pause:3.10".into()),
            capacity,
            allocatable,
            system_reserved,
            kube_reserved,
            eviction_hard,
            enforce_node_allocatable,
            faults: spec
                .faults
                .iter()
                .filter_map(|f| crate::config::faults::Injected::parse(f).ok())
                .map(|i| i.fault)
                .collect(),
            fault_shares: spec
                .faults
                .iter()
                .filter_map(|f| crate::config::faults::Injected::parse(f).ok())
                .filter_map(|i| Some((i.fault, i.share?)))
                .collect(),
            network_mode: topology.network.mode,
            platform: topology.platform,
            pod_network: topology.pod_network(),
            cluster_domain: topology.network.cluster_domain.clone(),
            service_backend_limit: spec.service_backend_limit.map_or(64, |l| l as usize),
            port_mappings: topology.network.port_mappings.unwrap_or_else(|| {
                cni_delegate
                    .and_then(|d| d.maps_host_ports(topology.version()))
                    .unwrap_or_else(|| port_mappings_by_era(topology.version(), topology.network.mode))
            }),
            cni_delegate,
            cluster_vxlan_vni: topology.network.vxlan_vni,
            ip,
            pod_cidr: crate::config::topology::node_pod_cidr(index).unwrap_or_default(),
            pod_cidr_v6: topology
                .network
                .dual_stack()
                .then(|| crate::vocab::ipv6::node_pod_cidr(&topology.network.cluster_cidr_v6, index))
                .flatten(),
            cluster_cidr: topology.network.cluster_cidr.clone(),
            service_cidr: topology.network.service_cidr.clone(),
            runs_kube_proxy: !(topology.dataplane_v2()
                || topology.network.mode == NetworkMode::Transparent && windows_agents_are_pods(topology)),
            dataplane_v2: topology.dataplane_v2(),
            dsr: topology.network.dsr,
            windows_priority_class: match &spec.kubelet.windows_priority_class {
                _ if !windows => None,
                Some(class) if class.is_empty() => None,
                Some(class) => Some(class.clone()),
                None => Some("ABOVE_NORMAL_PRIORITY_CLASS".to_string()),
            },
            kube_proxy_version,
            index,
            timing: topology.timing.clone(),
            registries: topology.registries.clone(),
        }
    }

    /// The VNI the node's flannel VXLAN backend runs with: the cluster's (`network.vxlanVni`),
    /// or with [`Fault::VxlanParamsMismatch`] one that differs from it (the next, or the one
    /// below at the top of the 24-bit range) — the fault is a node unlike the others.
    pub fn vxlan_vni(&self) -> u32 {
        let vni = self.cluster_vxlan_vni;
        if !self.has_fault(Fault::VxlanParamsMismatch) {
            vni
        } else if vni < 0x00ff_ffff {
            vni + 1
        } else {
            vni - 1
        }
    }

    /// Whether a Secret's data reaches the node's containers at all (environment variables from
    /// `secretKeyRef`/`secretRef`, and Secret volumes). Not on a Windows kubelet of the 1.5 era:
    /// WGSG15, the 1.5 guide, "Secrets currently do not work because of a bug in Windows Server
    /// Containers" (moby#28401). How a real 1.5 node failed an environment variable is not
    /// documented; the variable is simply absent here.
    pub fn secrets_reach_containers(&self) -> bool {
        !(self.is_windows() && self.kubelet < (1, 6))
    }

    /// Whether a container reads the files of its Secret and ConfigMap volumes. Not on a Windows
    /// kubelet of the 1.9 era or before: WGSG19, the 1.9 guide, "Using Secrets and ConfigMaps as
    /// volume mounts is not supported" (Secrets and ConfigMaps "must be used as environment
    /// variables"); the kubelet writes a volume's keys as symbolic links into its `..data`
    /// directory, which a Windows container cannot follow (moby#28401, "Unable to read a symlink
    /// in a mounted volume from inside a Windows Container"; kubernetes#52419 on 1709). The files
    /// stay on the node's disk; the container finds none.
    pub fn api_volume_files_readable(&self) -> bool {
        !(self.is_windows() && self.kubelet < (1, 10))
    }

    pub fn is_windows(&self) -> bool {
        self.os == Os::Windows
    }

    pub fn has_fault(&self, fault: Fault) -> bool {
        self.faults.contains(&fault)
    }

    /// How flannel runs here, where the pod network is flannel (None for Calico, the managed
    /// platforms' CNIs and transparent networks, even in the same HNS modes).
    pub fn flannel(&self) -> Option<Flannel> {
        (self.pod_network == PodNetwork::Flannel)
            .then(|| self.network_mode.flannel())
            .flatten()
    }

    /// Whether the Windows node agents (kube-proxy, the CNI's agent) run as node services
    /// rather than as HostProcess pods: on managed platforms always (real-clusters.md §3), on
    /// kubeadm where the node cannot run HostProcess containers.
    pub fn agents_are_services(&self) -> bool {
        self.is_windows() && (self.platform.managed() || !self.supports_host_process())
    }

    /// HostProcess containers: Kubernetes ≥ 1.23 and containerd ≥ 1.6 on Windows (SEC-HOSTPROCESS).
    pub fn supports_host_process(&self) -> bool {
        self.is_windows() && host_process_capable(self.kubelet, self.runtime, self.runtime_version)
    }

    /// Hyper-V isolation through RuntimeClass: offered by the node and containerd ≥ 1.7 (VER-HYPERV).
    pub fn supports_hyperv(&self) -> bool {
        self.is_windows() && self.hyperv && self.runtime == RuntimeKind::Containerd && self.runtime_version >= (1, 7)
    }

    /// Windows Server 2016 has no shared pod network compartment: containers of one pod start,
    /// but cannot reach each other over localhost (POD-MULTI-CONTAINER, the 1.5 alpha limit).
    pub fn no_shared_localhost(&self) -> bool {
        self.is_windows() && self.build.is_some_and(|b| b < 16299)
    }

    /// Whether a HostProcess pod on this node reaches the API server through the `kubernetes`
    /// Service (whose endpoints are the API server's host addresses, not pods): current Windows
    /// nodes (HostProcess on containerd 1.7 or later), as the upstream e2e "should support
    /// querying api-server using in-cluster config" requires. Pod-backed ClusterIPs stay a
    /// limitation of the Windows host (WDBG, WUG; SVC-VIP-FROM-NODE).
    pub fn host_reaches_remote_cluster_ips(&self) -> bool {
        self.supports_host_process() && self.runtime_version >= (1, 7)
    }

    /// Memory-pressure eviction exists on Windows only from kubelet 1.31 (MEM-EVICTION).
    pub fn evicts_on_memory_pressure(&self) -> bool {
        !self.is_windows() || self.kubelet >= (1, 31)
    }

    /// Whether a process-isolated container of an image built for `image_build` starts on this
    /// host: the build must match, except that hosts from 20348 on run images from the latest
    /// LTSC strictly older than the host (LTSC 2022 when there is none) up to their own build —
    /// Windows Server 2025 runs ltsc2022 images, a newer host does not (VER-BUILD-MATCH, HCS
    /// `CheckHostAndContainerCompat`).
    pub fn process_isolation_runs(&self, image_build: u32) -> bool {
        match self.build {
            Some(host) if host == image_build => true,
            Some(host) if host >= 20348 => {
                let lowest = LTSC_FROM_2022
                    .iter()
                    .copied()
                    .filter(|b| *b < host)
                    .max()
                    .unwrap_or(20348);
                (lowest..=host).contains(&image_build)
            }
            _ => false,
        }
    }

    /// The Windows build the node's sandbox (pause) image behaves as built for, overriding the
    /// builds of the image's own platforms: with [`Fault::PauseImageWrongBuild`], an LTSC build
    /// the host cannot run with process isolation (the next LTSC after the host's build; 17763
    /// on hosts from 20348 on, which run only 20348 up to their own build). None otherwise.
    pub fn pause_image_build(&self) -> Option<u32> {
        let host = self.build.filter(|_| self.has_fault(Fault::PauseImageWrongBuild))?;
        if host >= 20348 {
            return Some(17763);
        }
        [14393, 17763, 20348].into_iter().find(|b| *b > host)
    }

    /// Whether a Hyper-V isolated container of that build starts (any build up to the host's).
    pub fn hyperv_isolation_runs(&self, image_build: u32) -> bool {
        self.build.is_some_and(|host| image_build <= host)
    }

    /// The kubelet's `clusterDNS`: the cluster DNS Service's address, which it writes into every
    /// pod's resolver configuration.
    pub fn cluster_dns(&self) -> &'static [&'static str] {
        CLUSTER_DNS
    }

    /// The kubelet's `/configz` document.
    pub fn configz(&self) -> Value {
        let windows = self.is_windows();
        json!({"kubeletconfig": {
            "kind": "KubeletConfiguration",
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "systemReserved": self.system_reserved,
            "kubeReserved": self.kube_reserved,
            "evictionHard": self.eviction_hard,
            "enforceNodeAllocatable": self.enforce_node_allocatable,
            "cgroupsPerQOS": !windows,
            "cgroupDriver": if windows { "" } else { "systemd" },
            "maxPods": self.capacity.get("pods").and_then(|p| p.parse::<u32>().ok()).unwrap_or(110),
            "clusterDNS": self.cluster_dns(),
            "clusterDomain": self.cluster_domain,
            "containerRuntimeEndpoint": if windows { "npipe://./pipe/containerd-containerd" } else { "unix:///run/containerd/containerd.sock" },
            "podInfraContainerImage": self.pause_image,
        }})
    }

    /// How long a step takes for this pod on this node: fast by default, Windows slower than
    /// Linux, with a ±20 % jitter that the topology's seed and the pod's uid make reproducible.
    pub fn delay(&self, step: Step, pod_uid: &str) -> Duration {
        let base_ms: f64 = match (self.os, step) {
            (Os::Linux, Step::Sandbox) => 20.0,
            (Os::Linux, Step::Pull) => 60.0,
            (Os::Linux, Step::Create) => 10.0,
            (Os::Linux, Step::Start) => 10.0,
            (Os::Linux, Step::Stop) => 20.0,
            (Os::Windows, Step::Sandbox) => 80.0,
            (Os::Windows, Step::Pull) => 300.0,
            (Os::Windows, Step::Create) => 40.0,
            (Os::Windows, Step::Start) => 60.0,
            (Os::Windows, Step::Stop) => 100.0,
        };
        let jitter = 0.8 + 0.4 * unit_hash(self.timing.seed, pod_uid, step as u64);
        Duration::from_secs_f64(base_ms * jitter * self.timing.scale / 1000.0)
    }

    /// The restart back-off after `restarts` failures (upstream 10 s doubling to 5 min, here a
    /// tenth of that at scale 1).
    pub fn backoff(&self, restarts: u32) -> Duration {
        let secs = (10.0 * 2f64.powi(restarts.min(10) as i32)).min(300.0);
        Duration::from_secs_f64(secs * 0.1 * self.timing.scale)
    }

    /// The kubelet's image pull back-off after the `failures`-th failed pull of an image: 10 s,
    /// doubling up to 5 min (`pkg/kubelet/kubelet.go`: the image manager's
    /// `flowcontrol.NewBackOff(backOffPeriod, MaxContainerBackOff)`, 10 s and 300 s), upstream's
    /// own sizes on the cluster's clock (`timing.scale`).
    pub fn pull_backoff(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(10);
        let secs = (10.0 * 2f64.powi(doublings as i32)).min(300.0);
        Duration::from_secs_f64(secs * self.timing.scale)
    }

    /// The pause before the kubelet tries a pod's sandbox or volumes again after `attempt`
    /// failures, a tenth of upstream's at scale 1: a failed volume mount backs off from 500 ms,
    /// doubling up to 2 min 2 s (`goroutinemap/exponentialbackoff`:
    /// `initialDurationBeforeRetry`, `maxDurationBeforeRetry`); a failed pod sync (a sandbox the
    /// runtime cannot create) is retried every 10 s (`pkg/kubelet/kubelet.go` `backOffPeriod`,
    /// "the period to back off when pod syncing results in an error").
    pub fn setup_retry(&self, mount: bool, attempt: u32) -> Duration {
        let secs = if mount {
            (0.5 * 2f64.powi(attempt.min(10) as i32)).min(122.0)
        } else {
            10.0
        };
        Duration::from_secs_f64(secs * 0.1 * self.timing.scale)
    }

    /// The back-off as upstream prints it (`back-off 40s restarting failed container=…`).
    pub fn backoff_label(restarts: u32) -> String {
        let secs = (10u64 << restarts.min(5)).min(300);
        if secs >= 60 {
            format!("{}m{}s", secs / 60, secs % 60)
        } else {
            format!("{secs}s")
        }
    }
}

/// A reproducible number in [0, 1) from a seed, a string and a salt (FNV-1a then a mix).
pub fn unit_hash(seed: u64, key: &str, salt: u64) -> f64 {
    let mut h =
        crate::vocab::hash::Fnv::with_basis(crate::vocab::hash::OFFSET ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .write(key.as_bytes())
            .write(&salt.to_le_bytes())
            .finish();
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    (h >> 11) as f64 / (1u64 << 53) as f64
}

fn capacity(spec: &NodeSpec) -> BTreeMap<String, String> {
    let mut cap = map(&[
        ("cpu", "4"),
        ("memory", "16Gi"),
        ("pods", "110"),
        ("ephemeral-storage", "100Gi"),
    ]);
    if spec.os == Os::Linux {
        cap.insert("hugepages-1Gi".into(), "0".into());
        cap.insert("hugepages-2Mi".into(), "0".into());
    }
    // Extended resources pass through as given (EKS Windows nodes advertise
    // `vpc.amazonaws.com/PrivateIPv4Address`).
    for (k, v) in &spec.capacity {
        cap.insert(k.clone(), v.clone());
    }
    if let Some(max) = spec.max_pods {
        cap.insert("pods".into(), max.to_string());
    }
    // Report memory and storage as the kubelet does, in Ki.
    for key in ["memory", "ephemeral-storage"] {
        if let Some(q) = cap.get(key).and_then(|v| Quantity::parse(v)) {
            cap.insert(key.into(), q.format_bytes());
        }
    }
    cap
}

/// allocatable = capacity − systemReserved − kubeReserved − evictionHard (MEM-ALLOCATABLE-MATH).
fn allocatable(
    capacity: &BTreeMap<String, String>,
    system: &BTreeMap<String, String>,
    kube: &BTreeMap<String, String>,
    eviction: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = capacity.clone();
    let reserved = |key: &str| {
        [system, kube]
            .iter()
            .filter_map(|m| m.get(key).and_then(|v| Quantity::parse(v)))
            .fold(Quantity::default(), |a, b| a + b)
    };
    let threshold = |signal: &str, cap: Quantity| match eviction.get(signal) {
        Some(v) if v.ends_with('%') => {
            let pct: f64 = v.trim_end_matches('%').parse().unwrap_or(0.0);
            Quantity((cap.milli() as f64 * pct / 100.0) as i128)
        }
        Some(v) => Quantity::parse(v).unwrap_or_default(),
        None => Quantity::default(),
    };
    if let Some(cpu) = capacity.get("cpu").and_then(|v| Quantity::parse(v)) {
        out.insert("cpu".into(), (cpu - reserved("cpu")).format_cpu());
    }
    if let Some(mem) = capacity.get("memory").and_then(|v| Quantity::parse(v)) {
        let left = mem - reserved("memory") - threshold("memory.available", mem);
        out.insert("memory".into(), left.format_bytes());
    }
    if let Some(disk) = capacity.get("ephemeral-storage").and_then(|v| Quantity::parse(v)) {
        let left = disk - reserved("ephemeral-storage") - threshold("nodefs.available", disk);
        out.insert("ephemeral-storage".into(), left.value().to_string());
    }
    out
}

/// The profile of a node of the built-in default topology (for tests).
#[cfg(test)]
pub(crate) fn default_node(name: &str, ip: Ipv4Addr) -> (NodeSpec, NodeProfile) {
    let topo = Topology::default_cluster().instant();
    let (i, spec) = topo
        .nodes
        .iter()
        .enumerate()
        .find(|(_, n)| n.name == name)
        .expect("a default node");
    (spec.clone(), NodeProfile::new(spec, &topo, i, ip))
}

/// The profiles of all nodes of a topology, with their addresses.
pub fn profiles(topology: &Topology, ips: &[Ipv4Addr]) -> Vec<NodeProfile> {
    topology
        .nodes
        .iter()
        .zip(ips)
        .enumerate()
        .map(|(i, (spec, ip))| NodeProfile::new(spec, topology, i, *ip))
        .collect()
}

/// Where a pod's container runs: its node's profile, its OS and whether it runs as a Windows
/// HostProcess container there.
#[derive(Debug, Clone, Copy)]
pub struct Placement<'a> {
    /// The profile of the pod's node (None while the pod is not bound to a known node).
    pub node: Option<&'a NodeProfile>,
    /// The node's OS (`spec.os.name` when there is no node).
    pub os: Os,
    pub host_process: bool,
}

/// The placement of `pod` among the cluster's node `profiles` (`_container` names the
/// container; HostProcess is a pod-wide choice today).
pub fn placement<'a>(profiles: &'a [NodeProfile], pod: &Value, _container: &str) -> Placement<'a> {
    let node_name = crate::vocab::json::str(pod, "/spec/nodeName");
    let node = profiles.iter().find(|p| p.name == node_name);
    let os = match node {
        Some(n) => n.os,
        None if crate::vocab::json::str(pod, "/spec/os/name") == "windows" => Os::Windows,
        None => Os::Linux,
    };
    let host_process =
        node.is_some_and(NodeProfile::supports_host_process) && crate::vocab::pod::wants_host_process(pod);
    Placement { node, os, host_process }
}

#[cfg(test)]
mod tests {

    use super::*;
    use rstest::rstest;

    fn default_profile(name: &str) -> NodeProfile {
        default_node(name, Ipv4Addr::new(127, 1, 1, 10)).1
    }

    /// Volume mounts back off from 500 ms doubling to 2 min 2 s; a failed pod sync is retried
    /// every 10 s (upstream's `initialDurationBeforeRetry`, `maxDurationBeforeRetry` and
    /// `backOffPeriod`), a tenth of that at scale 1.
    #[rstest]
    #[case::first_mount(true, 0, 50)]
    #[case::third_mount(true, 2, 200)]
    #[case::mount_at_most(true, 12, 12_200)]
    #[case::first_sandbox(false, 0, 1000)]
    #[case::later_sandbox(false, 5, 1000)]
    fn setup_retries_follow_upstreams_schedules(#[case] mount: bool, #[case] attempt: u32, #[case] ms: u64) {
        let mut p = default_profile("win2022-1");
        p.timing.scale = 1.0;
        assert_eq!(p.setup_retry(mount, attempt), Duration::from_millis(ms));
    }

    /// The image pull back-off is upstream's own (10 s doubling to 5 min) on the cluster's
    /// clock: the default cluster's twentyfold clock makes the first a half second.
    #[rstest]
    #[case::first(1, 1.0, 10_000)]
    #[case::second(2, 1.0, 20_000)]
    #[case::third(3, 1.0, 40_000)]
    #[case::capped(6, 1.0, 300_000)]
    #[case::long_after(40, 1.0, 300_000)]
    #[case::fast_clock(1, 0.05, 500)]
    #[case::fast_clock_third(3, 0.05, 2_000)]
    fn pull_back_off_is_upstreams_on_the_clusters_clock(#[case] failures: u32, #[case] scale: f64, #[case] ms: u64) {
        for node in ["linux-1", "win2019-1"] {
            let mut p = default_profile(node);
            p.timing.scale = scale;
            assert_eq!(p.pull_backoff(failures).as_millis(), u128::from(ms), "{node}");
        }
    }

    #[test]
    fn windows_allocatable_subtracts_reservations_and_eviction() {
        let p = default_profile("win2022-1");
        // 16Gi − 2Gi system-reserved − 500Mi eviction (kubelet 1.32 on Windows).
        let expected = Quantity::parse("16Gi").expect("q")
            - Quantity::parse("2Gi").expect("q")
            - Quantity::parse("500Mi").expect("q");
        assert_eq!(p.allocatable["memory"], expected.format_bytes());
        assert_eq!(p.capacity["memory"], "16777216Ki");
        assert_eq!(p.configz()["kubeletconfig"]["systemReserved"]["memory"], "2Gi");
        assert_eq!(p.configz()["kubeletconfig"]["enforceNodeAllocatable"], json!([]));
    }

    /// MEM-SYS-RESERVED (W14, WRES): 2 GiB is a recommendation; the kubelet's own default is
    /// to reserve nothing, so a node that omits it reserves nothing and allocatable shows it.
    #[test]
    fn windows_nodes_reserve_nothing_unless_told() {
        let topo = Topology::parse(
            "name: t\nkubernetesVersion: v1.32.3\nnodes:\n  - {name: w, os: windows, kernelVersion: 10.0.20348.2762}\n",
            "t.yaml",
        )
        .expect("parses");
        let p = NodeProfile::new(&topo.nodes[0], &topo, 0, Ipv4Addr::new(127, 1, 1, 10));
        assert!(p.system_reserved.is_empty());
        assert_eq!(p.configz()["kubeletconfig"]["systemReserved"], json!({}));
        let expected = Quantity::parse("16Gi").expect("q") - Quantity::parse("500Mi").expect("q");
        assert_eq!(p.allocatable["memory"], expected.format_bytes());
    }

    /// NET-HOSTPORT: without a topology setting, hostPort mapping follows the era's CNI.
    #[rstest]
    #[case::k19_port_mapping((1, 9), NetworkMode::L2bridge, true)]
    #[case::k112_51354((1, 12), NetworkMode::L2bridge, false)]
    #[case::k114_no_port_mappings((1, 14), NetworkMode::L2bridge, false)]
    #[case::k117((1, 17), NetworkMode::L2bridge, false)]
    #[case::k118_win_bridge_port_mappings((1, 18), NetworkMode::L2bridge, true)]
    #[case::current((1, 32), NetworkMode::L2bridge, true)]
    #[case::current_overlay_530((1, 32), NetworkMode::Overlay, false)]
    #[case::azure_cni_256((1, 32), NetworkMode::L2tunnel, true)]
    fn host_port_mappings_by_era(#[case] version: (u32, u32), #[case] mode: NetworkMode, #[case] maps: bool) {
        assert_eq!(port_mappings_by_era(version, mode), maps);
    }

    /// `maxPods` sets capacity and allocatable `pods` (and configz's maxPods); extended
    /// resources in `capacity` reach both as given (EKS: `vpc.amazonaws.com/PrivateIPv4Address`).
    #[rstest]
    #[case::default("", "110")]
    #[case::max_pods(", maxPods: 8", "8")]
    #[case::max_pods_over_capacity(", maxPods: 9, capacity: {pods: \"30\"}", "9")]
    fn max_pods_and_extended_resources(#[case] extra: &str, #[case] pods: &str) {
        let text = format!(
            "name: t\nnodes:\n  - {{name: w, os: windows, kernelVersion: 10.0.20348.2762{extra}}}\n  - {{name: e, os: windows, kernelVersion: 10.0.17763.1, capacity: {{vpc.amazonaws.com/PrivateIPv4Address: \"9\"}}}}\n"
        );
        let topo = Topology::parse(&text, "t.yaml").expect("parses");
        let p = NodeProfile::new(&topo.nodes[0], &topo, 0, Ipv4Addr::new(127, 1, 1, 10));
        assert_eq!(p.capacity["pods"], pods);
        assert_eq!(p.allocatable["pods"], pods);
        assert_eq!(p.configz()["kubeletconfig"]["maxPods"].to_string(), pods);
        let e = NodeProfile::new(&topo.nodes[1], &topo, 1, Ipv4Addr::new(127, 1, 1, 11));
        assert_eq!(e.capacity["vpc.amazonaws.com/PrivateIPv4Address"], "9");
        assert_eq!(e.allocatable["vpc.amazonaws.com/PrivateIPv4Address"], "9");
    }

    #[test]
    fn linux_allocatable_keeps_default_eviction() {
        let p = default_profile("linux-1");
        let expected = Quantity::parse("16Gi").expect("q") - Quantity::parse("100Mi").expect("q");
        assert_eq!(p.allocatable["memory"], expected.format_bytes());
        assert_eq!(p.allocatable["cpu"], "4");
    }

    #[rstest]
    #[case(17763, 17763, true)]
    #[case(17763, 20348, false)]
    #[case(20348, 17763, false)]
    #[case(20348, 20348, true)]
    #[case(26100, 20348, true)]
    #[case(26100, 26100, true)]
    #[case(20348, 26100, false)]
    #[case(14393, 14393, true)]
    #[case::win11_22h2_runs_ltsc2022(22621, 20348, true)]
    // VER-BUILD-MATCH (HCS CheckHostAndContainerCompat): a host newer than Windows Server 2025
    // runs images from the previous LTSC (2025) up, no longer ltsc2022.
    #[case::newer_than_ws2025_refuses_ltsc2022(26200, 20348, false)]
    #[case::newer_than_ws2025_runs_ltsc2025(26200, 26100, true)]
    fn build_match(#[case] host: u32, #[case] image: u32, #[case] runs: bool) {
        let mut p = default_profile("win2019-1");
        p.build = Some(host);
        assert_eq!(p.process_isolation_runs(image), runs);
    }

    #[rstest]
    #[case::ws2016(14393, Some(17763))]
    #[case::ws1709(16299, Some(17763))]
    #[case::ws2019(17763, Some(20348))]
    #[case::ws2022(20348, Some(17763))]
    #[case::ws2025(26100, Some(17763))]
    fn a_wrong_build_pause_image_is_one_the_host_cannot_run(#[case] host: u32, #[case] pause: Option<u32>) {
        let mut p = default_profile("win2019-1");
        p.build = Some(host);
        assert_eq!(p.pause_image_build(), None, "no fault, no override");
        p.faults.insert(Fault::PauseImageWrongBuild);
        assert_eq!(p.pause_image_build(), pause);
        let wrong = pause.expect("a build");
        assert!(!p.process_isolation_runs(wrong), "host {host} runs {wrong}");
    }

    #[rstest]
    #[case("containerd://1.7.20", RuntimeKind::Containerd, (1, 7))]
    #[case("docker://18.9.1", RuntimeKind::Docker, (18, 9))]
    #[case("docker://19.3.14", RuntimeKind::Docker, (19, 3))]
    fn runtimes(#[case] s: &str, #[case] kind: RuntimeKind, #[case] version: (u32, u32)) {
        assert_eq!(runtime_of(s), (kind, version));
    }

    #[test]
    fn delays_are_reproducible_and_windows_is_slower() {
        let lin = default_profile("linux-1");
        let win = default_profile("win2022-1");
        assert_eq!(win.delay(Step::Pull, "u1"), win.delay(Step::Pull, "u1"));
        assert!(win.delay(Step::Pull, "u1") > lin.delay(Step::Pull, "u1"));
        let mut fast = win.clone();
        fast.timing.scale = 0.0;
        assert_eq!(fast.delay(Step::Start, "u1"), Duration::ZERO);
        assert_eq!(NodeProfile::backoff_label(2), "40s");
        assert_eq!(NodeProfile::backoff_label(5), "5m0s");
    }

    /// Each built-in profile's Windows nodes: the CNI delegate their configuration names and
    /// whether it maps hostPorts (NET-HOSTPORT): win-bridge by era (1.9 yes, 1.14 no, current
    /// yes), win-overlay never, sdnoverlay (sig-windows-tools HostProcess flannel) and sdnbridge
    /// (GKE) and Azure CNI yes, vpc-bridge (EKS) no, Calico by the era's mode rule; no delegate
    /// on the 1.5 transparent network.
    #[rstest]
    #[case::k1_5("k8s-1.5-ws2016", None, true)]
    #[case::k1_9("k8s-1.9-ws1709", Some(CniDelegate::WinBridge), true)]
    #[case::k1_14_host_gw("k8s-1.14-ws2019-host-gw", Some(CniDelegate::WinBridge), false)]
    #[case::k1_14_vxlan("k8s-1.14-ws2019-vxlan", Some(CniDelegate::WinOverlay), false)]
    #[case::default("default", Some(CniDelegate::WinBridge), true)]
    #[case::hostprocess_flannel("kubeadm-flannel-hostprocess", Some(CniDelegate::Sdnoverlay), true)]
    #[case::calico("kubeadm-calico", Some(CniDelegate::Calico), false)]
    #[case::aks("aks", Some(CniDelegate::AzureCni), true)]
    #[case::aks_overlay("aks-overlay", Some(CniDelegate::AzureCni), true)]
    #[case::eks("eks", Some(CniDelegate::VpcBridge), false)]
    #[case::gke("gke", Some(CniDelegate::Sdnbridge), true)]
    fn profiles_delegates_and_host_ports(
        #[case] name: &str,
        #[case] delegate: Option<CniDelegate>,
        #[case] host_ports: bool,
    ) {
        let topology = Topology::profile(name).expect("profile");
        let ips: Vec<Ipv4Addr> = (0..topology.nodes.len())
            .map(|i| Ipv4Addr::new(10, 1, 0, 10 + u8::try_from(i).expect("few nodes")))
            .collect();
        for p in profiles(&topology, &ips) {
            if p.is_windows() {
                assert_eq!(p.cni_delegate, delegate, "{name}/{}", p.name);
                assert_eq!(p.port_mappings, host_ports, "{name}/{}", p.name);
            } else {
                assert_eq!(p.cni_delegate, None, "{name}/{}", p.name);
            }
        }
    }

    /// The node's VXLAN VNI is the cluster's (`network.vxlanVni`); a node with
    /// `vxlan-params-mismatch` runs another one, whatever the cluster's.
    #[rstest]
    #[case::default(4096)]
    #[case::vni_4097(4097)]
    #[case::top_of_range(16_777_215)]
    fn vxlan_vni_follows_the_cluster(#[case] vni: u32) {
        let text = format!(
            "name: t\nnetwork: {{mode: overlay, vxlanVni: {vni}}}\nnodes:\n  - {{name: w1, os: windows, kernelVersion: 10.0.17763.6414}}\n  - {{name: w2, os: windows, kernelVersion: 10.0.17763.6414, faults: [vxlan-params-mismatch]}}\n"
        );
        let topology = Topology::parse(&text, "t.yaml").expect("topology");
        let ps = profiles(&topology, &[Ipv4Addr::new(10, 1, 0, 10), Ipv4Addr::new(10, 1, 0, 11)]);
        assert_eq!(ps[0].vxlan_vni(), vni);
        assert_ne!(ps[1].vxlan_vni(), vni);
        assert!(ps[1].vxlan_vni() >= 4096 && ps[1].vxlan_vni() <= 16_777_215);
    }
}
