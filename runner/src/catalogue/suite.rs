//! Suites: the YAML documents that hold the documented expectations — one per category, each
//! check tied to a rule of the catalogue, with a typed probe, a matrix expanded over the nodes a
//! cluster really has, the expected result by condition and the remedy per failure class.
//! Parsing rejects unknown fields with file:line:column; [`Suites::validate`] rejects unknown
//! rule ids, duplicate check names and conditions that can never hold.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use crate::catalogue::document::{API_VERSION, SuiteError, from_yaml};
use crate::catalogue::remedies::{Remedies, Remedy};
use crate::catalogue::rules::Catalogue;

/// The suites built into the binary (`suites/*.yaml` at build time).
pub const EMBEDDED: &[(&str, &str)] = &[
    ("network-flows.yaml", include_str!("../../../suites/network-flows.yaml")),
    (
        "network-config.yaml",
        include_str!("../../../suites/network-config.yaml"),
    ),
    ("dns.yaml", include_str!("../../../suites/dns.yaml")),
    ("secrets.yaml", include_str!("../../../suites/secrets.yaml")),
    ("nodeport.yaml", include_str!("../../../suites/nodeport.yaml")),
    (
        "memory-reservation.yaml",
        include_str!("../../../suites/memory-reservation.yaml"),
    ),
    (
        "version-matching.yaml",
        include_str!("../../../suites/version-matching.yaml"),
    ),
    ("placement.yaml", include_str!("../../../suites/placement.yaml")),
    (
        "security-context.yaml",
        include_str!("../../../suites/security-context.yaml"),
    ),
    ("node-api.yaml", include_str!("../../../suites/node-api.yaml")),
    ("pod-lifecycle.yaml", include_str!("../../../suites/pod-lifecycle.yaml")),
    (
        "network-policy.yaml",
        include_str!("../../../suites/network-policy.yaml"),
    ),
    ("dataplane.yaml", include_str!("../../../suites/dataplane.yaml")),
];

/// One suite document.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Suite {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub category: String,
    #[serde(default)]
    pub description: String,
    pub checks: Vec<Check>,
    /// Where it came from (file name or path), for messages.
    #[serde(skip)]
    pub origin: String,
}

/// One check: a documented rule probed over a matrix of cells.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Check {
    /// Unique within the suite (kebab-case).
    pub name: String,
    /// A rule id of the catalogue (`suites/rules.yaml`).
    pub rule: String,
    pub title: String,
    #[serde(default)]
    pub description: String,
    /// Source ids of the catalogue (W14, WNET, E2E/hybrid_network, …).
    pub sources: Vec<String>,
    pub probe: Probe,
    #[serde(default)]
    pub matrix: Matrix,
    /// The documented expectation: the first entry whose `when` holds decides.
    pub expect: Vec<Expectation>,
    /// The documented remedy per failure class (`any` applies to every class), resolved
    /// against the shared paragraphs of `suites/remedies.yaml` when the suites load.
    #[serde(default)]
    pub remedy: BTreeMap<FailureClass, Remedy>,
    /// Why this check is not in the default selection yet (it runs with `--include-pending`):
    /// it does not pass on the bundled cluster and the cause (simulator, fixture or engine)
    /// has not been triaged against the documentation.
    #[serde(default)]
    pub pending: Option<String>,
    /// Under sampled coverage (the default on big clusters), the check also runs from (and,
    /// for a flow to a pod, to) every node that is not a representative of its fact set: the
    /// light per-node coverage, whose failure promotes the node to every check.
    #[serde(default)]
    pub every_node: bool,
}

/// Where a probe runs from or what it reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// A fixture pod on a node of the pool.
    Pod,
    /// The node's own network: a hostNetwork pod on Linux, a HostProcess pod on Windows.
    Host,
}

/// What a `connect` probe aims at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Destination {
    /// The server pod's IP.
    PodIp,
    /// The server pod's IPv6 address (`status.podIPs`, dual-stack clusters), bracketed in the URL.
    PodIpv6,
    /// The ClusterIP of the service in front of the server pod.
    ClusterIp,
    /// The IPv6 ClusterIP (`spec.clusterIPs`, dual-stack clusters) of the service in front of the
    /// server pod, bracketed in the URL.
    ClusterIpv6,
    /// The service by its fully qualified name.
    ServiceFqdn,
    /// The service by its short name (same namespace).
    ServiceShort,
    /// The destination node's address at the service's NodePort.
    NodePort,
    /// `127.0.0.1` at the NodePort, from the node itself.
    LoopbackNodePort,
    /// The destination node's address at the server pod's hostPort.
    HostPort,
    /// The destination node's address (its kubelet port, or ICMP).
    NodeIp,
    /// An address outside the cluster (`--outside-ip`, default a well-known one).
    OutsideIp,
    /// A name outside the cluster (`--outside-name`).
    OutsideName,
    /// Another container of the same pod over localhost.
    Localhost,
    /// The service's load-balancer ingress address at the service port (`type: LoadBalancer`;
    /// indeterminate when the cluster assigns no ingress address).
    LoadBalancer,
    /// The ClusterIP of the `default/kubernetes` Service at 443 (`/healthz` over HTTPS): its
    /// endpoints are the API server's host addresses, not pods.
    KubernetesService,
}

/// A protocol a cell uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
    Icmp,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Icmp => "icmp",
        })
    }
}

/// How a lookup names its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NameForm {
    /// `svc.ns.svc.cluster.local`
    Fqdn,
    /// `svc`
    Short,
    /// `svc.ns` (a dotted partial name)
    Dotted,
    /// `kubernetes.default` from another namespace
    OtherNamespaceDotted,
    /// A pod's name behind a headless service: `host.subdomain.ns.svc.cluster.local`.
    PodFqdn,
    /// A name outside the cluster.
    Outside,
}

/// The typed probe of a check.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", tag = "kind")]
pub enum Probe {
    /// A connection from `from` on the source pool to `to` on the destination pool.
    Connect {
        from: Origin,
        to: Destination,
        /// Use the fixture that sets this variant up (e.g. `local-policy`, `affinity`).
        #[serde(default)]
        service: ServiceVariant,
        /// What a successful connection must also show.
        #[serde(default)]
        verify: Verify,
    },
    /// A name lookup from a pod (`nslookup`/`Resolve-DnsName`-free: resolved by connecting).
    Resolve {
        from: Origin,
        name: NameForm,
        /// The pod's DNS policy fixture (`ClusterFirst` by default).
        #[serde(default)]
        dns: DnsVariant,
    },
    /// A command in a fixture on the pool's node; passes when its output matches.
    Exec {
        fixture: String,
        /// The command per OS (argv).
        command: BTreeMap<Os, Vec<String>>,
        /// A regular expression the standard output must match.
        #[serde(default)]
        stdout: Option<String>,
    },
    /// Create a fixture pod and watch what the API server and kubelet do with it.
    Create {
        fixture: String,
        /// What counts as the documented success of the probe.
        outcome: CreateOutcome,
        /// A regular expression the reason/message must match for `rejected`/`fails` outcomes.
        #[serde(default)]
        message: Option<String>,
        /// For `runs`: a regular expression the termination message the kubelet reports for the
        /// pod's containers (`status.containerStatuses[].state.terminated.message`) must match.
        #[serde(default, rename = "terminationMessage")]
        termination_message: Option<String>,
    },
    /// A fact read from the cluster's own objects, compared with the documentation.
    Fact { fact: FactCheck },
    /// The runner's own HTTP client at a node's NodePort (the outside-client view).
    Outside { to: Destination },
    /// Existing DaemonSets/Deployments that could put Linux pods on Windows nodes.
    Audit { audit: AuditKind },
    /// Port-forward through the API server (`pods/portforward`) to the netexec server on the
    /// node, one HTTP request through the tunnel.
    PortForward,
    /// The kubelet's summary API through the API server's node proxy (`/stats/summary`).
    NodeStats,
    /// A NetworkPolicy case between a client pod on the source node and a server pod on the
    /// destination node, the one the policy selects created for the cell: the flow before any
    /// policy, then the policy's closed form (the flow must be denied once programmed) and, for
    /// an allow case, its open form (the flow must get through again).
    NetworkPolicy { case: crate::catalogue::netpol::PolicyCase },
    /// The node's CSINode (`storage.k8s.io/v1`): the kubelet registered it, with the CSI drivers
    /// whose node plugins registered on the node.
    CsiNode,
    /// The Windows node's HNS load balancers (`Get-HnsPolicyList`, read through the run's host
    /// probe) for a Service the run made for `subject`.
    HnsLoadBalancer { subject: HnsSubject },
    /// Create the fixture's pod (a process that delays its own shutdown by `shutdownSeconds`
    /// once asked to stop), delete it with its own grace period once it runs, and time how long
    /// it takes to go: at least `shutdownSeconds` means the grace period was honoured.
    TerminationGrace {
        fixture: String,
        #[serde(rename = "shutdownSeconds")]
        shutdown_seconds: u64,
    },
    /// The log of a node agent on the node: its pod's (kube-system DaemonSets such as the
    /// HostProcess kube-proxy and flanneld) or, where it runs as a node service, its log file
    /// under the kubelet's `/logs/`. A line matching `fails` is the failure unless a later line
    /// matches `clearedBy` (a retried start-up step that succeeded); some line must match
    /// `requires` (when the log still holds the agent's start); every line matching `line` must
    /// also match `must`.
    Logs {
        agent: Agent,
        #[serde(default)]
        fails: Option<String>,
        #[serde(default, rename = "clearedBy")]
        cleared_by: Option<String>,
        #[serde(default)]
        requires: Option<String>,
        #[serde(default)]
        line: Option<String>,
        #[serde(default)]
        must: Option<String>,
    },
}

/// A node agent that runs as a pod (a DaemonSet in `kube-system` or the CNI's namespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Agent {
    KubeProxy,
    Flanneld,
}

impl Agent {
    /// The agent's name (`kube-proxy`, `flanneld`).
    pub fn name(self) -> &'static str {
        match self {
            Agent::KubeProxy => "kube-proxy",
            Agent::Flanneld => "flanneld",
        }
    }

    /// Its log file under the kubelet's `/logs/` where it runs as a node service (the layout
    /// sig-windows-tools' scripts give `--log-dir`).
    pub fn node_log(self) -> &'static str {
        match self {
            Agent::KubeProxy => "kube-proxy/kube-proxy.log",
            Agent::Flanneld => "flanneld/flanneld.log",
        }
    }

    /// A line the agent logs once at every start, early: where the current log has none, its
    /// start-up lines are gone (rotated away) and a start-up line a check requires cannot be
    /// judged. flanneld logs the interface it uses first (flannel `main.go`: "Using interface
    /// with name"); kube-proxy its version (`cmd/kube-proxy/app/server.go`: "Version info").
    pub fn start_line(self) -> &'static str {
        match self {
            Agent::KubeProxy => "Version info",
            Agent::Flanneld => "Using interface with name",
        }
    }

    /// Whether a pod (by name and container images) is this agent.
    pub fn is(self, pod_name: &str, images: &[&str]) -> bool {
        let word = match self {
            Agent::KubeProxy => "kube-proxy",
            Agent::Flanneld => "flannel",
        };
        pod_name.contains(word) && images.iter().any(|i| i.contains(word) && !i.contains("cni-plugin"))
    }
}

/// Services the fixtures put in front of a server pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServiceVariant {
    #[default]
    Cluster,
    /// `externalTrafficPolicy: Local`.
    LocalPolicy,
    /// `sessionAffinity: ClientIP`.
    ClientIpAffinity,
    /// A headless service (`clusterIP: None`): its name resolves to the server pod's IP.
    Headless,
    /// A `type: ExternalName` service whose `externalName` is the server's service FQDN.
    ExternalName,
}

/// What a connection must show beyond getting through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verify {
    /// It gets through (an answer, a reply).
    #[default]
    Reachable,
    /// The backend sees the client's own address (`/clientip`).
    ClientIpPreserved,
    /// Ten requests from one client all reach the same backend.
    OneBackend,
}

/// The DNS set-up of a resolving pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DnsVariant {
    #[default]
    ClusterFirst,
    /// `hostNetwork` with `dnsPolicy: ClusterFirstWithHostNet`.
    ClusterFirstWithHostNet,
    /// `dnsPolicy: None` with a `dnsConfig`.
    Custom,
}

/// What a `create` probe expects when it passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CreateOutcome {
    /// The pod runs (Running or Succeeded).
    Runs,
    /// The API server refuses the object (422 Invalid / 403 Forbidden).
    RejectedByApi,
    /// The kubelet rejects or the runtime fails it (status reason, events).
    Fails,
    /// The scheduler leaves it Pending with FailedScheduling.
    Unschedulable,
}

impl CreateOutcome {
    /// What happened, in words (`runs`, `rejected by the API server`, …).
    pub fn describe(self) -> &'static str {
        match self {
            CreateOutcome::Runs => "runs",
            CreateOutcome::RejectedByApi => "rejected by the API server",
            CreateOutcome::Fails => "fails",
            CreateOutcome::Unschedulable => "unschedulable",
        }
    }
}

/// The facts a `fact` probe judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FactCheck {
    OsLabels,
    BuildLabel,
    OsSupported,
    ControlPlaneLinux,
    KubeletSkew,
    KubeProxySkew,
    Runtime,
    SystemReserved,
    AllocatableMath,
    EnforceNodeAllocatable,
    EvictionThreshold,
    PressureConditions,
    WindowsTaint,
    RuntimeClasses,
    PauseImage,
    HostProcess,
    /// NET-OVERLAY-KB: a Windows Server 2019 node's revision includes KB4482887/KB4489899.
    OverlayKb,
    /// NET-DSR: DSR on a build that has it, with the WinDSR gate where the version needs it.
    DsrConfig,
    /// NET-HNS-NETWORK-PRESENT: the pod network's HNS network exists on the node, as its host
    /// probe lists them (`Get-HnsNetwork`).
    HnsNetwork,
    /// CPU-KUBELET-PRIORITY: the Windows kubelet runs above the normal priority class
    /// (`--windows-priorityclass`, read from its command line on the host).
    KubeletPriority,
    /// NET-CNI-SPEC-CHECK: the plugin flannel delegates to on the node (win-bridge, win-overlay:
    /// no CNI CHECK), from its CNI configuration file read on the host.
    CniCheck,
    /// NET-FLANNEL-REJOIN: the source VIP kube-proxy keeps in `SourceVip.json` lies in the node's
    /// pod CIDR (a re-joined node with a new subnet keeps a stale one), read on the host.
    SourceVip,
    /// NODE-PROBLEM-DETECTOR: the node conditions an agent other than the kubelet reports
    /// (node-problem-detector and the platforms' own), from the node's status.
    ProblemDetector,
}

impl FactCheck {
    /// Facts compared with a documented bound: every expectation that judges them (works,
    /// recommendation) names the bound in `limit`.
    pub fn needs_limit(self) -> bool {
        matches!(
            self,
            FactCheck::SystemReserved | FactCheck::KubeletSkew | FactCheck::KubeProxySkew
        )
    }
}

/// What an `hns-load-balancer` probe reads the node's load balancers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HnsSubject {
    /// NET-SVC-BACKEND-LIMIT: a selectorless Service with 1,025 hand-written EndpointSlice
    /// addresses (no pods), beside a one-backend control Service.
    BackendLimit,
    /// NET-PRESERVE-DEST: a LoadBalancer Service annotated `preserve-destination: "true"`;
    /// its ingress address's load balancer carries the PreserveDIP port-mapping flag.
    PreserveDestination,
    /// Every Service's cluster-IP load balancer and backends, and the remote endpoints, as the
    /// API says they should be (`crate::cluster::dataplane`).
    MatchesApi,
}

/// What an `audit` probe inspects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuditKind {
    /// Workloads without an OS selector that tolerate the Windows taint (or with none to tolerate).
    LinuxWorkloadsOnWindows,
    /// Windows workloads (an OS selector or `.spec.os` for Windows) whose containers set a memory
    /// request that differs from their memory limit.
    WindowsMemoryRequestNotLimit,
    /// Calico's operator `Installation` (`operator.tigera.io/v1`) against what Calico for
    /// Windows supports: IPv4 pools, VXLAN without cross-subnet, no IP-in-IP, no BGP with an
    /// overlay, no IPv6 autodetection (CAL).
    CalicoWindows,
}

/// An operating system of a pool: the one the reports name nodes by.
pub use mixcheck_reports::Os;

/// Same or other node for a source/destination pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    SameNode,
    #[default]
    OtherNode,
}

/// The dimensions a check expands over. Absent: one cell per pool of `from` (or per cluster).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Matrix {
    /// Source pools by OS (Windows expands per build the cluster has).
    #[serde(default)]
    pub from: Vec<Os>,
    /// Destination pools by OS.
    #[serde(default)]
    pub to: Vec<Os>,
    #[serde(default)]
    pub placement: Vec<Placement>,
    #[serde(default)]
    pub protocol: Vec<Protocol>,
    /// Free-form variants (e.g. `env`, `volume`), each a separate cell.
    #[serde(default)]
    pub variant: Vec<String>,
    /// Which source/destination OS pairs to keep.
    #[serde(default)]
    pub pairs: Pairs,
}

/// Which OS pairs a matrix keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pairs {
    #[default]
    All,
    /// Source and destination of the same OS.
    SameOs,
    /// Linux ↔ Windows only.
    CrossOs,
}

/// The documented expectation for the cells a condition selects.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expectation {
    #[serde(default)]
    pub when: Condition,
    pub result: Documented,
    /// For limitations and known issues: the failure classes that are the documented way to
    /// fail; any other failure is broken.
    #[serde(default)]
    pub failure: Vec<FailureClass>,
    /// One line: what the documentation says for these conditions.
    pub says: String,
    /// Overrides the check's sources for this condition.
    #[serde(default)]
    pub sources: Vec<String>,
    /// For `fact` probes: the documented bound the fact is compared with under these conditions,
    /// in the fact's own unit — a quantity for `system-reserved` (`2Gi`: at least), a number of
    /// minor versions for `kubelet-skew` and `kube-proxy-skew` (`3`: at most that many older).
    #[serde(default)]
    pub limit: Option<String>,
}

/// What the documentation says for a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Documented {
    Works,
    Limitation,
    UnsupportedApi,
    KnownOsIssue,
    /// A recommendation: following it passes, not following it warns.
    Recommendation,
    /// A documented support boundary (the version-skew policy's bound in `limit`): within it
    /// passes, outside it fails with the remedy.
    Requirement,
    /// The documentation does not support these facts (an OS build, runtime or version outside
    /// its support matrix): once the probe has read the facts the cell fails ("unsupported
    /// configuration"), whatever else it observes — judged as a requirement not met.
    Unsupported,
    /// No document says what happens under these conditions: the cell is indeterminate, naming
    /// the gap (`says`), and is not probed.
    Undocumented,
    /// The rule does not apply to these conditions.
    NotApplicable,
    /// The documented fact changes nothing a cluster does: the probe reads it and the cell is
    /// not-applicable with the reading (`says` first), never a failure or a `--strict` gate.
    Informational,
}

/// How a probe failed (`any` in remedies matches every class).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureClass {
    Any,
    Timeout,
    Refused,
    Reset,
    Dns,
    NoReply,
    Other,
    /// The API server refused the object.
    Rejected,
    /// The kubelet or runtime failed the pod.
    PodFailed,
    /// The object was accepted where it should not have been.
    Accepted,
    /// A fact differs from the documentation.
    Mismatch,
    /// A flow a NetworkPolicy denies still got through once the policy had its settle window to
    /// be programmed.
    NotEnforced,
}

impl FailureClass {
    pub fn name(self) -> &'static str {
        match self {
            FailureClass::Any => "any",
            FailureClass::Timeout => "timeout",
            FailureClass::Refused => "refused",
            FailureClass::Reset => "reset",
            FailureClass::Dns => "dns",
            FailureClass::NoReply => "no-reply",
            FailureClass::Other => "other",
            FailureClass::Rejected => "rejected",
            FailureClass::PodFailed => "pod-failed",
            FailureClass::Accepted => "accepted",
            FailureClass::Mismatch => "mismatch",
            FailureClass::NotEnforced => "not-enforced",
        }
    }
}

/// Conditions on the facts of a cell; every field given must hold.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Condition {
    /// The API server's version, e.g. `">=1.14, <1.20"`.
    #[serde(default)]
    pub kubernetes: Option<VersionRange>,
    /// The kubelet version of the node under test (the source's, else the destination's).
    #[serde(default)]
    pub kubelet: Option<VersionRange>,
    /// The Windows build of the source node, e.g. `">=20348"`.
    #[serde(default)]
    pub from_build: Option<VersionRange>,
    #[serde(default)]
    pub to_build: Option<VersionRange>,
    /// The revision (the fourth part of the kernel version, `10.0.20348.261`) of the destination
    /// node's Windows build: the cumulative update it runs.
    #[serde(default)]
    pub to_revision: Option<VersionRange>,
    #[serde(default)]
    pub from_os: Option<Os>,
    #[serde(default)]
    pub to_os: Option<Os>,
    #[serde(default)]
    pub placement: Option<Placement>,
    #[serde(default)]
    pub protocol: Option<Protocol>,
    #[serde(default)]
    pub variant: Option<String>,
    /// The cluster's network mode (`l2bridge`, `overlay`, `l2tunnel`, `transparent`).
    #[serde(default)]
    pub network_mode: Vec<String>,
    /// The container runtime of the node under test (`containerd`, `docker`) and its version.
    #[serde(default)]
    pub runtime: Option<String>,
    #[serde(default)]
    pub runtime_version: Option<VersionRange>,
    /// HostProcess pods available on the Windows node under test.
    #[serde(default)]
    pub host_process: Option<bool>,
    /// The flannel version of the cluster (overlay: node → local pod from 0.12).
    #[serde(default)]
    pub flannel: Option<VersionRange>,
    /// Whether the cluster runs flannel (its DaemonSet or its `kube-flannel-cfg` ConfigMap):
    /// other CNIs use the same network modes without flanneld.
    #[serde(default)]
    pub flannel_present: Option<bool>,
    /// kube-proxy on Windows serves Local traffic policy with DSR.
    #[serde(default)]
    pub dsr: Option<bool>,
    /// Outbound traffic to the internet is allowed (`--egress=false` says it is not).
    #[serde(default)]
    pub egress: Option<bool>,
    /// The cluster is dual-stack (IPv4 and IPv6: nodes' `spec.podCIDRs`).
    #[serde(default)]
    pub dual_stack: Option<bool>,
    /// The pod network is Calico (its `calico-node` DaemonSets).
    #[serde(default)]
    pub calico: Option<bool>,
    /// The cluster serves the GMSACredentialSpec CRD (`windows.k8s.io`), which the gMSA webhook
    /// comes with; unknown makes the cell indeterminate.
    #[serde(default)]
    pub gmsa: Option<bool>,
    /// The CNI plugin on the Windows end of the cell is one of these (`win-bridge`,
    /// `win-overlay`, `sdnbridge`, `sdnoverlay`, `vpc-bridge`, `azure-cni`, `calico`): flannel's
    /// delegate or the platform's plugin, as the node's CNI configuration shows it (else as the
    /// cluster's objects name the platform's plugin); unknown makes the cell indeterminate.
    #[serde(default)]
    pub cni_delegate: Vec<String>,
    /// The cluster's NetworkPolicy engine is one of these (`none`, `calico`, `antrea`,
    /// `azure-npm`, `vpc-cni`, `cilium`, `anetd`), as read from its agents' objects
    /// (`crate::cluster::netpol`); unknown makes the cell indeterminate.
    #[serde(default)]
    pub policy_engine: Vec<String>,
    /// API server feature gates and the state each must have (read from the API server's
    /// `kubernetes_feature_enabled` metric; a gate that cannot be read leaves the cell
    /// indeterminate).
    #[serde(default)]
    pub feature_gates: BTreeMap<String, bool>,
}

/// A version range such as `">=1.14, <1.20"` over `major.minor` versions or build numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRange {
    pub text: String,
    bounds: Vec<(Cmp, Vec<u32>)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Ge,
    Gt,
    Le,
    Lt,
    Eq,
}

impl VersionRange {
    /// Parses `>=1.14`, `<1.20`, `=20348`, comma-separated.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut bounds = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (cmp, rest) = [
                (">=", Cmp::Ge),
                ("<=", Cmp::Le),
                (">", Cmp::Gt),
                ("<", Cmp::Lt),
                ("=", Cmp::Eq),
            ]
            .iter()
            .find_map(|(p, c)| part.strip_prefix(p).map(|r| (*c, r)))
            .ok_or_else(|| format!("version bound {part:?} must start with >=, >, <=, < or ="))?;
            let rest = rest.trim().trim_start_matches('v');
            let parts: Result<Vec<u32>, _> = rest.split('.').map(str::parse::<u32>).collect();
            let parts = parts.map_err(|_| format!("{rest:?} in {part:?} is not a version (1.14, 20348)"))?;
            bounds.push((cmp, parts));
        }
        if bounds.is_empty() {
            return Err(format!("version range {text:?} is empty"));
        }
        Ok(Self {
            text: text.to_string(),
            bounds,
        })
    }

    /// The most parts any bound names (`<1.22.14`: 3): a version with fewer parts cannot be
    /// judged against it.
    pub fn precision(&self) -> usize {
        self.bounds.iter().map(|(_, b)| b.len()).max().unwrap_or(0)
    }

    /// Whether `version` (e.g. `[1, 32]` or `[20348]`) lies in the range.
    pub fn contains(&self, version: &[u32]) -> bool {
        self.bounds.iter().all(|(cmp, bound)| {
            let n = bound.len().min(version.len());
            let ord = version[..n].cmp(&bound[..n]);
            match cmp {
                Cmp::Ge => ord.is_ge(),
                Cmp::Gt => ord.is_gt(),
                Cmp::Le => ord.is_le(),
                Cmp::Lt => ord.is_lt(),
                Cmp::Eq => ord.is_eq(),
            }
        })
    }
}

impl<'de> Deserialize<'de> for VersionRange {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        VersionRange::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// All suites of a run, validated.
#[derive(Debug, Clone)]
pub struct Suites {
    pub suites: Vec<Suite>,
}

/// Parses one suite document; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<Suite, SuiteError> {
    let mut suite: Suite = from_yaml(text, origin)?;
    suite.origin = origin.to_string();
    Ok(suite)
}

/// The files of a `--suites` folder that are not suites.
const NOT_SUITES: &[&str] = &["rules.yaml", "causes.yaml", crate::catalogue::remedies::FILE_NAME];

impl Suites {
    /// The embedded suites, with the `*.yaml` files of `extra` (if given) added; a file with
    /// the name of an embedded suite replaces it.
    pub fn load(extra: Option<&Path>, rules: &Catalogue) -> Result<Self, SuiteError> {
        let mut by_name: BTreeMap<String, Suite> = BTreeMap::new();
        for (file, text) in EMBEDDED {
            let suite = parse(text, &format!("suites/{file} (embedded)"))?;
            by_name.insert(suite.name.clone(), suite);
        }
        if let Some(dir) = extra {
            for path in yaml_files(dir)? {
                let shown = path.display().to_string();
                let text = std::fs::read_to_string(&path).map_err(|cause| SuiteError::Read {
                    path: shown.clone(),
                    cause,
                })?;
                let suite = parse(&text, &shown)?;
                by_name.insert(suite.name.clone(), suite);
            }
        }
        let remedies = Remedies::load(extra)?;
        for suite in by_name.values_mut() {
            for check in &mut suite.checks {
                for remedy in check.remedy.values_mut() {
                    *remedy = remedy.resolve(&remedies).map_err(|message| SuiteError::Invalid {
                        path: suite.origin.clone(),
                        message: format!("check {:?}: {message}", check.name),
                    })?;
                }
            }
        }
        let suites = Suites {
            suites: by_name.into_values().collect(),
        };
        suites.validate(rules)?;
        Ok(suites)
    }

    /// Rejects what parsing cannot: schema version and kind, unknown rule ids, duplicate
    /// checks, bad regular expressions, checks without an unconditional fallback expectation.
    pub fn validate(&self, rules: &Catalogue) -> Result<(), SuiteError> {
        for suite in &self.suites {
            let invalid = |message: String| SuiteError::Invalid {
                path: suite.origin.clone(),
                message,
            };
            suite_problem(suite).map_err(invalid)?;
            let mut names = BTreeSet::new();
            for check in &suite.checks {
                let at = |message: String| invalid(format!("check {:?}: {message}", check.name));
                if !is_kebab(&check.name) {
                    return Err(at("the name must be kebab-case".into()));
                }
                if !names.insert(check.name.as_str()) {
                    return Err(at("listed twice".into()));
                }
                check_problem(check, rules).map_err(at)?;
            }
        }
        Ok(())
    }

    /// The rule ids the checks judge: each check's rule, and the historic (HIST-*) rules the
    /// branches that express them cite in their `sources`.
    pub fn covered_rules<'a>(&'a self, rules: &crate::catalogue::rules::Catalogue) -> BTreeSet<&'a str> {
        let mut covered = BTreeSet::new();
        for (_, c) in self.checks() {
            covered.insert(c.rule.as_str());
            let cited = c.sources.iter().chain(c.expect.iter().flat_map(|e| e.sources.iter()));
            covered.extend(cited.map(String::as_str).filter(|s| rules.contains(s)));
        }
        covered
    }

    /// Every check, with its suite.
    pub fn checks(&self) -> impl Iterator<Item = (&Suite, &Check)> {
        self.suites.iter().flat_map(|s| s.checks.iter().map(move |c| (s, c)))
    }
}

/// What is wrong with a suite's own fields (schema version, kind, name), if anything.
fn suite_problem(suite: &Suite) -> Result<(), String> {
    if suite.api_version != API_VERSION {
        return Err(format!(
            "apiVersion {:?} is not supported (expected {API_VERSION:?})",
            suite.api_version
        ));
    }
    if suite.kind != "Suite" {
        return Err(format!("kind {:?} must be \"Suite\"", suite.kind));
    }
    if !is_kebab(&suite.name) {
        return Err(format!("suite name {:?} must be kebab-case", suite.name));
    }
    Ok(())
}

/// Whether a probe may take `everyNode`: flows, and the kinds that look at every worker; the
/// others run on chosen nodes.
fn looks_per_node(probe: &Probe) -> bool {
    match probe {
        Probe::Connect { .. }
        | Probe::Resolve { .. }
        | Probe::Logs { .. }
        | Probe::Audit { .. }
        | Probe::NodeStats
        | Probe::CsiNode => true,
        Probe::Outside { to } => *to != Destination::LoadBalancer,
        Probe::Exec { .. }
        | Probe::Create { .. }
        | Probe::Fact { .. }
        | Probe::PortForward
        | Probe::NetworkPolicy { .. }
        | Probe::HnsLoadBalancer { .. }
        | Probe::TerminationGrace { .. } => false,
    }
}

/// What is wrong with a check (its name aside), if anything: `everyNode` on a probe that
/// cannot take it, an unknown rule, no sources, its expectations, its probe.
fn check_problem(check: &Check, rules: &Catalogue) -> Result<(), String> {
    if check.every_node && !looks_per_node(&check.probe) {
        return Err(
            "everyNode needs a connect or resolve probe, or one that looks at every worker (outside, logs): the others already run on chosen nodes".into(),
        );
    }
    if !rules.contains(&check.rule) {
        return Err(format!(
            "unknown rule id {:?} (see suites/rules.yaml; `mixcheck list --uncovered` lists its ids)",
            check.rule
        ));
    }
    if check.sources.is_empty() {
        return Err("needs at least one source".into());
    }
    if check.expect.is_empty() {
        return Err("needs at least one expectation".into());
    }
    if let Some(last) = check.expect.last()
        && !last.when.is_unconditional()
    {
        return Err("its last expectation must have no `when` (the default)".into());
    }
    for e in &check.expect {
        if e.says.trim().is_empty() {
            return Err("every expectation says what the documentation says (`says`)".into());
        }
    }
    probe_problem(&check.probe)?;
    limit_problem(check)
}

/// What is wrong with a probe's own fields, if anything: a regular expression that does not
/// compile, a logs probe without what it looks for, an exec probe without a command.
fn probe_problem(probe: &Probe) -> Result<(), String> {
    let compiles = |re: &String| {
        regex::Regex::new(re)
            .map(drop)
            .map_err(|e| format!("bad regular expression {re:?}: {e}"))
    };
    match probe {
        Probe::Exec { stdout: Some(re), .. } | Probe::Create { message: Some(re), .. } => compiles(re)?,
        Probe::Logs {
            fails,
            cleared_by,
            requires,
            line,
            must,
            ..
        } => {
            for re in [fails, cleared_by, requires, line, must].into_iter().flatten() {
                compiles(re)?;
            }
            if fails.is_none() && requires.is_none() && line.is_none() {
                return Err("a logs probe needs `fails`, `requires`, or `line` with `must`".into());
            }
            if line.is_some() != must.is_some() {
                return Err("a logs probe's `line` and `must` go together".into());
            }
        }
        _ => {}
    }
    if let Probe::Exec { command, .. } = probe
        && command.is_empty()
    {
        return Err("an exec probe needs a command for at least one OS".into());
    }
    Ok(())
}

/// What is wrong with the check's expectations' `limit`s, if anything: only a fact probe
/// compares with one, and a fact compared with a documented bound needs it in every judging
/// expectation.
fn limit_problem(check: &Check) -> Result<(), String> {
    for e in &check.expect {
        match (&check.probe, &e.limit) {
            (Probe::Fact { .. }, _) | (_, None) => {}
            (_, Some(_)) => return Err("only a fact probe compares with a `limit`".into()),
        }
        if let Probe::Fact { fact } = &check.probe
            && fact.needs_limit()
            && matches!(
                e.result,
                Documented::Works | Documented::Recommendation | Documented::Requirement
            )
            && e.limit.is_none()
        {
            return Err(format!(
                "the {fact:?} fact needs the documented `limit` in every judging expectation"
            ));
        }
    }
    Ok(())
}

impl Condition {
    pub fn is_unconditional(&self) -> bool {
        self.kubernetes.is_none()
            && self.kubelet.is_none()
            && self.from_build.is_none()
            && self.to_build.is_none()
            && self.from_os.is_none()
            && self.to_os.is_none()
            && self.placement.is_none()
            && self.protocol.is_none()
            && self.variant.is_none()
            && self.network_mode.is_empty()
            && self.runtime.is_none()
            && self.runtime_version.is_none()
            && self.host_process.is_none()
            && self.flannel.is_none()
            && self.dsr.is_none()
            && self.egress.is_none()
            && self.dual_stack.is_none()
            && self.calico.is_none()
            && self.gmsa.is_none()
            && self.policy_engine.is_empty()
            && self.feature_gates.is_empty()
    }
}

fn is_kebab(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, SuiteError> {
    let shown = dir.display().to_string();
    let entries = std::fs::read_dir(dir).map_err(|cause| SuiteError::Read {
        path: shown.clone(),
        cause,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .filter(|p| !p.file_name().is_some_and(|n| NOT_SUITES.iter().any(|s| n == *s)))
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn rules() -> Catalogue {
        Catalogue::embedded().expect("catalogue")
    }

    const MINIMAL: &str = "apiVersion: mixcheck/v1
kind: Suite
name: t
category: network
checks:
  - name: c
    rule: NET-POD-POD-IP-CROSS
    title: pod to pod
    sources: [W14]
    probe: {kind: connect, from: pod, to: pod-ip}
    matrix: {from: [linux, windows], to: [linux, windows], protocol: [tcp, udp]}
    expect:
      - {when: {networkMode: [overlay], fromOs: windows}, result: limitation, failure: [timeout], says: x}
      - {result: works, says: works}
    remedy: {timeout: check MAC spoofing}
";

    #[test]
    fn every_embedded_suite_is_valid() {
        let suites = Suites::load(None, &rules()).expect("embedded suites are valid");
        assert_eq!(suites.suites.len(), EMBEDDED.len());
    }

    #[test]
    fn a_minimal_suite_parses() {
        let s = parse(MINIMAL, "t.yaml").expect("parses");
        let suites = Suites { suites: vec![s] };
        suites.validate(&rules()).expect("valid");
        let (_, c) = suites.checks().next().expect("a check");
        assert!(matches!(
            c.probe,
            Probe::Connect {
                from: Origin::Pod,
                to: Destination::PodIp,
                ..
            }
        ));
        assert_eq!(c.matrix.protocol, vec![Protocol::Tcp, Protocol::Udp]);
        assert_eq!(
            c.remedy.get(&FailureClass::Timeout).map(Remedy::text),
            Some("check MAC spoofing")
        );
    }

    #[rstest]
    #[case::unknown_field("  - name: c\n    rule: NET-POD-POD-IP-CROSS\n    bogus: 1\n", 8)]
    #[case::bad_probe_kind("    probe: {kind: teleport}\n", 10)]
    fn syntax_errors_name_file_line_and_column(#[case] replace_tail: &str, #[case] line: u64) {
        let text = match replace_tail.starts_with("    probe") {
            true => MINIMAL.replace("    probe: {kind: connect, from: pod, to: pod-ip}\n", replace_tail),
            false => MINIMAL.replace("  - name: c\n    rule: NET-POD-POD-IP-CROSS\n", replace_tail),
        };
        match parse(&text, "suites/t.yaml") {
            Err(SuiteError::Parse {
                path, line: l, column, ..
            }) => {
                assert_eq!(path, "suites/t.yaml");
                assert_eq!(l, line, "{text}");
                assert!(column > 0);
            }
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[rstest]
    #[case::unknown_rule(MINIMAL.replace("NET-POD-POD-IP-CROSS", "NET-TELEPORT"), "unknown rule id \"NET-TELEPORT\"")]
    #[case::bad_version(MINIMAL.replace("apiVersion: mixcheck/v1", "apiVersion: mixcheck/v9"), "apiVersion")]
    #[case::no_default(MINIMAL.replace("      - {result: works, says: works}\n", ""), "last expectation")]
    #[case::no_sources(MINIMAL.replace("sources: [W14]", "sources: []"), "source")]
    fn semantic_errors(#[case] text: String, #[case] needle: &str) {
        let s = parse(&text, "t.yaml").expect("parses");
        let err = Suites { suites: vec![s] }.validate(&rules()).expect_err("invalid");
        assert!(err.to_string().contains(needle), "{err}");
        assert!(err.to_string().starts_with("t.yaml: "), "{err}");
    }

    const FACT: &str = "apiVersion: mixcheck/v1
kind: Suite
name: t
category: resources
checks:
  - name: c
    rule: MEM-SYS-RESERVED
    title: reserved
    sources: [W14]
    probe: {kind: fact, fact: system-reserved}
    matrix: {from: [windows]}
    expect:
      - {when: {kubernetes: \"<1.14\"}, result: unsupported, says: x}
      - {when: {featureGates: {SomeGate: false}}, result: not-applicable, says: y}
      - {result: recommendation, limit: 2Gi, says: at least 2 GiB}
";

    #[test]
    fn facts_carry_documented_limits_and_unsupported_facts_warn() {
        let s = parse(FACT, "t.yaml").expect("parses");
        let suites = Suites { suites: vec![s] };
        suites.validate(&rules()).expect("valid");
        let (_, c) = suites.checks().next().expect("a check");
        assert_eq!(c.expect[0].result, Documented::Unsupported);
        assert_eq!(c.expect[1].when.feature_gates.get("SomeGate"), Some(&false));
        assert!(!c.expect[1].when.is_unconditional());
        assert_eq!(c.expect[2].limit.as_deref(), Some("2Gi"));
    }

    #[rstest]
    #[case::missing_limit(FACT.replace(", limit: 2Gi", ""), "needs the documented `limit`")]
    #[case::limit_off_a_fact(MINIMAL.replace("says: works}", "says: works, limit: \"3\"}"), "only a fact probe")]
    #[case::every_node_on_a_fact(FACT.replace("    probe:", "    everyNode: true\n    probe:"), "everyNode needs")]
    fn limit_errors(#[case] text: String, #[case] needle: &str) {
        let s = parse(&text, "t.yaml").expect("parses");
        let err = Suites { suites: vec![s] }.validate(&rules()).expect_err("invalid");
        assert!(err.to_string().contains(needle), "{err}");
    }

    #[test]
    fn every_node_on_a_flow_is_valid() {
        let s = parse(
            &MINIMAL.replace("    probe:", "    everyNode: true\n    probe:"),
            "t.yaml",
        )
        .expect("parses");
        let suites = Suites { suites: vec![s] };
        suites.validate(&rules()).expect("valid");
        assert!(suites.checks().next().is_some_and(|(_, c)| c.every_node));
    }

    #[test]
    fn service_variants_and_audits_parse() {
        let text = MINIMAL
            .replace(
                "probe: {kind: connect, from: pod, to: pod-ip}",
                "probe: {kind: connect, from: pod, to: service-short, service: external-name}",
            )
            .replace("rule: NET-POD-POD-IP-CROSS", "rule: SVC-TYPES");
        let s = parse(&text, "t.yaml").expect("parses");
        assert!(matches!(
            s.checks[0].probe,
            Probe::Connect {
                service: ServiceVariant::ExternalName,
                ..
            }
        ));
        for (probe, want) in [
            ("{kind: outside, to: load-balancer}", "LoadBalancer"),
            (
                "{kind: audit, audit: windows-memory-request-not-limit}",
                "WindowsMemoryRequestNotLimit",
            ),
            (
                "{kind: connect, from: pod, to: service-short, service: headless}",
                "Headless",
            ),
        ] {
            let t = MINIMAL.replace("{kind: connect, from: pod, to: pod-ip}", probe);
            let s = parse(&t, "t.yaml").expect("parses");
            assert!(format!("{:?}", s.checks[0].probe).contains(want), "{probe}");
        }
    }

    #[rstest]
    #[case(">=1.14", &[1, 14], true)]
    #[case(">=1.14", &[1, 9], false)]
    #[case(">=1.14, <1.20", &[1, 19], true)]
    #[case(">=1.14, <1.20", &[1, 20], false)]
    #[case(">=20348", &[26100], true)]
    #[case("<18362", &[17763], true)]
    #[case("=1.5", &[1, 5], true)]
    #[case("v1.31", &[1, 31], false)]
    fn version_ranges(#[case] range: &str, #[case] version: &[u32], #[case] inside: bool) {
        match VersionRange::parse(range) {
            Ok(r) => assert_eq!(r.contains(version), inside),
            Err(_) => assert!(!inside, "{range} should parse"),
        }
    }

    /// A suite file added to `suites/` but not to `EMBEDDED` would silently never run.
    #[test]
    fn every_suite_file_is_embedded() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites");
        let files: BTreeSet<String> = std::fs::read_dir(&dir)
            .expect("suites/")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
            .filter(|n| !NOT_SUITES.contains(&n.as_str()))
            .collect();
        let embedded: BTreeSet<String> = EMBEDDED.iter().map(|(f, _)| f.to_string()).collect();
        assert_eq!(files, embedded, "suites/*.yaml and suite::EMBEDDED differ");
        for name in NOT_SUITES {
            assert!(dir.join(name).is_file(), "{name} is not in suites/");
        }
    }

    /// A remedy paragraph several checks give is written once (`suites/remedies.yaml`, named with
    /// `see:`): no sentence of 60 characters or more stands in the own words of two checks.
    #[test]
    fn no_remedy_sentence_is_pasted_into_two_checks() {
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for (file, text) in EMBEDDED {
            let suite = parse(text, file).expect("suite parses");
            for check in &suite.checks {
                for remedy in check.remedy.values() {
                    let words = remedy.text().split_whitespace().collect::<Vec<_>>().join(" ");
                    for sentence in words.split(". ").filter(|s| s.len() >= 60) {
                        let at = format!("{}/{}", suite.name, check.name);
                        if let Some(first) = seen.insert(sentence.to_string(), at.clone())
                            && first != at
                        {
                            panic!("{first} and {at} both say {sentence:?}: put it in suites/remedies.yaml");
                        }
                    }
                }
            }
        }
        assert!(seen.len() > 50, "too few remedy sentences read: {}", seen.len());
    }
}
