//! Every fault `mixcheck sim faults` lists, injected on a topology where it applies (a built-in
//! profile without its timing: an instant cluster of that shape), against a clean run of the
//! same topology (cell by cell): the run exits 1; the cells that turn `fail` or
//! `error` are exactly the flows and checks the fault's documented symptom touches, all of them
//! on the faulted node; the cells it leaves alone keep their verdicts; and each failing cell's
//! remedy names the documented fix of the matching troubleshooting item (its cause in
//! `suites/causes.yaml`, for the rule of `suites/rules.yaml` the fault breaks; see
//! docs/design.md).
//!
//! `MIXCHECK_BIN` names another mixcheck binary to run (e.g. a copy, where several worktrees
//! share one target directory); by default the one cargo built.
//!
//! Cells are named `check coordinates`, e.g. `pod-to-cluster-ip windows-20348→linux,other-node,tcp`
//! (the coordinates are the part of the cell id in brackets); the patterns below are regular
//! expressions over the check name and the coordinates.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, OnceLock};

use regex::Regex;
use rstest::rstest;
use rstest_reuse::{apply, template};
use serde_json::Value;

/// The bundled cluster and the part of the suites a fault is judged on. The network faults run
/// the network suites only (a few seconds a run); the faults that keep pods from starting run the
/// network flows and version matching (the pause image check) as well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Topology {
    /// The default cluster (Kubernetes 1.32, flannel host-gw: l2bridge; win2019-1 alone in pool
    /// windows-17763, win2022-1 alone in windows-20348), network suites.
    Network,
    /// The default cluster, network flows and version matching.
    Pods,
    /// Kubernetes 1.14 with flannel vxlan (overlay; win2019-1 and win2019-2 share pool
    /// windows-17763), network suites.
    Overlay,
    /// kubeadm with Calico for Windows (win2022-1 and win2022-2 share pool windows-20348), the
    /// network-policy suite.
    Calico,
}

pub(crate) const NETWORK_SUITES: &[&str] = &[
    "--suite",
    "network-flows",
    "--suite",
    "nodeport",
    "--suite",
    "dns",
    "--suite",
    "network-config",
    "--suite",
    "dataplane",
];

impl Topology {
    /// Its name after `@` in an rstest case of a fault with a case per topology.
    fn label(self) -> &'static str {
        match self {
            Topology::Network => "network",
            Topology::Pods => "pods",
            Topology::Overlay => "overlay",
            Topology::Calico => "calico",
        }
    }

    /// The suites its runs select.
    fn suites(self) -> Vec<&'static str> {
        match self {
            Topology::Network | Topology::Overlay => NETWORK_SUITES.to_vec(),
            Topology::Pods => vec![
                "--suite",
                "network-flows",
                "--suite",
                "version-matching",
                "--suite",
                "network-config",
            ],
            Topology::Calico => vec!["--suite", "network-policy"],
        }
    }

    /// Its built-in profile's topology file (simcluster/topologies).
    fn file(self) -> &'static str {
        match self {
            Topology::Overlay => "k8s-1.14-ws2019-vxlan.yaml",
            Topology::Calico => "kubeadm-calico.yaml",
            Topology::Network | Topology::Pods => "default.yaml",
        }
    }

    /// Its profile's topology (YAML text).
    fn shape(self) -> String {
        let profiles = Path::new(env!("CARGO_MANIFEST_DIR")).join("../simcluster/topologies");
        std::fs::read_to_string(profiles.join(self.file())).expect("profile")
    }

    /// Its profile and suites as a user runs them (`--profile NAME` where it is not the default).
    fn profile_args(self) -> Vec<&'static str> {
        let profile: &[&str] = match self {
            Topology::Overlay => &["--profile", "k8s-1.14-ws2019-vxlan"],
            Topology::Calico => &["--profile", "kubeadm-calico"],
            Topology::Network | Topology::Pods => &[],
        };
        [profile, &self.suites()].concat()
    }

    /// Its profile without the time a real cluster takes (no timing section: Services programmed
    /// at once, fast pulls), which the faults are judged on: that settling on a cluster that
    /// converges as real ones do changes none of these verdicts is
    /// [`a_fault_on_a_converging_cluster_fails_what_it_fails_on_an_instant_one`]'s to show.
    fn instant(self) -> String {
        crate::topology_text::with_timing(&self.shape(), "")
    }

    /// The clean run, once per test process.
    fn clean(self) -> &'static Run {
        static NETWORK: OnceLock<Run> = OnceLock::new();
        static PODS: OnceLock<Run> = OnceLock::new();
        static OVERLAY: OnceLock<Run> = OnceLock::new();
        static CALICO: OnceLock<Run> = OnceLock::new();
        let cell = match self {
            Topology::Network => &NETWORK,
            Topology::Pods => &PODS,
            Topology::Overlay => &OVERLAY,
            Topology::Calico => &CALICO,
        };
        cell.get_or_init(|| {
            let run = Run::of(self, None);
            assert_eq!(
                run.code,
                Some(0),
                "the clean {self:?} run passes its gate:\n{}",
                run.failing().join("\n")
            );
            // Nothing failed, so there is nothing to diagnose (documented limitations are no causes).
            assert!(causes(&run.diagnosis).is_empty(), "{:#}", run.diagnosis);
            assert_eq!(run.diagnosis["unexplained"].as_array().map(Vec::len), Some(0));
            run
        })
    }
}

/// Cells: a check-name pattern and a coordinates pattern (both anchored).
type Cells = &'static [(&'static str, &'static str)];

/// What the documentation makes of one fault.
struct Case {
    fault: &'static str,
    /// The catalogue's cause (suites/causes.yaml) the diagnosis must rank first, on `node`.
    cause: &'static str,
    /// What that cause's remedy names: the documented fix.
    cause_remedy: &'static str,
    /// Whether the node itself can confirm the cause (`--node-diagnostics`): false where the
    /// node runs no pod (kubelet stopped), where the setting belongs to the VM's host (MAC
    /// spoofing), or where the catalogue has no static sign to look for.
    confirmable: bool,
    topology: Topology,
    node: &'static str,
    /// The cells the documented symptom breaks: each turns `fail` or `error`, and no other does.
    fails: Cells,
    /// Cells of the faulted node the symptom leaves alone: they keep their clean verdict (this
    /// wins over `fails`). Cells not on the faulted node always keep theirs.
    keeps: Cells,
    /// What every failing cell's remedy names: the documented fix.
    remedy: &'static str,
    /// Failing cells for whose symptom the catalogue documents no fix, with why.
    undocumented: Cells,
    /// Cells whose outcome depends on which backend a load balancer picks first (a
    /// session-affinity service with a backend on the faulted node and one elsewhere): they may
    /// fail or keep their verdict.
    varies: Cells,
}

// Coordinates shorthands (windows-20348 is win2022-1's pool in the default cluster).
const W_ANY: &str = ".*windows-20348.*";
const W_OUT: &str = "windows-20348→.*";
const W_IN: &str = "(linux|windows-17763|external)→windows-20348.*";
const W_CROSS: &str = "(windows-20348→(linux|windows-17763)|(linux|windows-17763)→windows-20348),other-node,.*";
const W_SAME: &str = "windows-20348→(windows-20348,same-node,.*|same-pod,.*)";

/// The lookups of the faulted node's pods by partial names (default cluster).
const W_PARTIAL_NAMES: (&str, &str) = (
    "dotted-partial-name|other-namespace-by-search-suffix",
    "windows-20348→cluster-dns",
);

/// The DNS lookups of the faulted node's pods (default cluster).
const W_LOOKUPS: Cells = &[
    (
        "service-fqdn|service-short-name|pod-name-fqdn|custom-dns-config",
        "windows-20348→cluster-dns",
    ),
    ("headless-service|external-name-service", "windows-20348→.*"),
    ("pod-to-outside-name", "windows-20348→external,tcp"),
];

/// Version facts are read from the node object, whatever the node does.
const FACTS: (&str, &str) = (
    "windows-os-supported|windows-build-label|kubelet-skew|kube-proxy-skew|control-plane-linux|container-runtime",
    "windows-20348→",
);

/// What a node whose pods never get a sandbox still does: its address answers, its HostProcess
/// pods (host network, no CNI) run, HostProcess images are exempt from build matching.
const SANDBOX_KEEPS: Cells = &[
    FACTS,
    ("pod-to-node", "(linux|windows-17763)→windows-20348,.*"),
    (
        "node-to-pod|windows-host-to-cluster-ip",
        "windows-20348→(linux|windows-17763),.*",
    ),
    ("hostprocess-image-any-build", "windows-20348→"),
    // kube-proxy runs (HostProcess) and knows its node.
    ("kube-proxy-hostname-override", "windows-20348→"),
    // HostProcess pods use the host network: the API server stays in reach.
    ("hostprocess-to-kubernetes-service", "windows-20348→api-server,tcp"),
];

/// Without its HNS network the node's kube-proxy programs no load balancer at all, not even the
/// backend-limit check's one-backend control: the check cannot judge the limit there and says
/// so (indeterminate, naming the missing control).
const NO_LOAD_BALANCERS: (&str, &str) = ("service-backend-limit", "windows-20348→");

/// flanneld (HostProcess) registered the network and wrote subnet.env: the sandbox failure has
/// another cause.
const FLANNEL_FINE: (&str, &str) = ("flannel-subnet-env", "windows-20348→");

/// The pod network's HNS network exists (its host probe lists it): the sandbox failure has
/// another cause.
const HNS_FINE: (&str, &str) = ("hns-network-present", "windows-20348→");

/// The network flows of a node none of whose pods start, and the version checks that create pods
/// there.
const SANDBOX_FAILS: Cells = &[
    (".*", W_ANY),
    (
        "pod-sandbox-starts|matching-build-image-runs|ltsc2022-image-across-builds",
        "windows-20348→",
    ),
];

const CASES: &[Case] = &[
    // POD-LIFECYCLE-BASICS; troubleshooting item "no kubelet/kube-proxy processes / node NotReady":
    // nothing runs on the node, so none of its cells can be probed; its facts are still read.
    Case {
        fault: "kubelet-stopped",
        cause: "kubelet-stopped",
        cause_remedy: r"kubelet and kube-proxy processes run on the node",
        confirmable: false,
        topology: Topology::Pods,
        node: "win2022-1",
        fails: &[(".*", W_ANY)],
        keeps: &[FACTS],
        remedy: "kubelet and kube-proxy processes run on the node",
        undocumented: &[],
        varies: &[],
    },
    // NET-MAC-SPOOFING; troubleshooting item "Windows pods have no network at all (l2bridge on
    // VMs)": the node's pods reach only pods on the same node; host traffic works.
    Case {
        fault: "mac-spoofing-disabled",
        cause: "mac-spoofing-disabled",
        cause_remedy: r"MacAddressSpoofing",
        confirmable: false,
        topology: Topology::Network,
        node: "win2022-1",
        fails: &[
            (
                "pod-ip-cross-node|pod-to-pod-no-nat|hybrid-linux-windows|icmp-inside-cluster|pod-to-cluster-ip|headless-service|external-name-service",
                W_CROSS,
            ),
            ("windows-pod-to-cluster-ip", W_CROSS),
            (
                "node-to-pod|hostport",
                "(linux|windows-17763)→windows-20348,other-node,tcp",
            ),
            (
                "nodeport-from-windows-pod|pod-to-node",
                "windows-20348→(linux|windows-17763),.*",
            ),
            ("pod-to-outside-ip|pod-to-outside-name", "windows-20348→external,tcp"),
            (
                "service-fqdn|service-short-name|pod-name-fqdn|custom-dns-config",
                "windows-20348→cluster-dns",
            ),
            // A Linux host's ClusterIP flow to a backend on the node crosses its NIC.
            ("linux-host-to-cluster-ip", "linux→windows-20348,other-node,tcp"),
        ],
        keeps: &[
            (
                "pod-ip-same-node|node-to-pod|windows-pod-to-cluster-ip|nodeport-from-windows-pod",
                W_SAME,
            ),
            ("containers-share-localhost", W_SAME),
            ("nodeport-from-other-nodes|nodeport-from-outside|pod-to-node", W_IN),
            (
                "node-to-pod|windows-host-to-cluster-ip",
                "windows-20348→(linux|windows-17763),.*",
            ),
        ],
        remedy: "MacAddressSpoofing",
        undocumented: &[],
        varies: &[],
    },
    // NET-OUTBOUND-NAT-EXCEPTIONLIST without the cluster CIDR, on overlay: pod traffic to other
    // nodes is SNATed and lost; outside traffic works. (On l2bridge it is still delivered, with
    // the node's address as source, which no check observes.)
    Case {
        fault: "exceptionlist-missing-cluster",
        cause: "exceptionlist-missing-cluster",
        cause_remedy: r"ExceptionList",
        confirmable: true,
        topology: Topology::Overlay,
        node: "win2019-1",
        fails: &[
            (
                "pod-ip-cross-node|pod-to-pod-no-nat|icmp-inside-cluster|pod-to-cluster-ip|windows-pod-to-cluster-ip|headless-service|external-name-service",
                "windows-17763→(linux|windows-17763),other-node,.*",
            ),
            ("hybrid-linux-windows", "windows-17763→linux,other-node,tcp"),
            (
                "service-fqdn|service-short-name|pod-name-fqdn|custom-dns-config",
                "windows-17763→cluster-dns",
            ),
            ("pod-to-outside-name", "windows-17763→external,tcp"),
        ],
        keeps: &[
            ("pod-to-outside-ip", "windows-17763→external,tcp"),
            ("pod-ip-same-node", "windows-17763→windows-17763,same-node,.*"),
            (
                "hybrid-linux-windows|pod-to-cluster-ip|pod-to-pod-no-nat",
                "linux→windows-17763,other-node,.*",
            ),
        ],
        remedy: "ExceptionList",
        undocumented: &[],
        // Its backends are spread over the pool's nodes: a client stuck to the one on the other
        // node is lost, one stuck to its own node's is not.
        varies: &[("client-ip-session-affinity", "windows-17763→windows-17763,tcp")],
    },
    // The same fault on l2bridge (the Kubernetes network model, KNM: pods reach pods on other
    // nodes without NAT): pod traffic to other nodes is delivered, SNATed to the node's address.
    // Only the server's view of the client shows it (agnhost /clientip); every flow still works.
    Case {
        fault: "exceptionlist-missing-cluster",
        cause: "exceptionlist-missing-cluster",
        cause_remedy: r"ExceptionList",
        confirmable: true,
        topology: Topology::Network,
        node: "win2019-1",
        fails: &[(
            "pod-to-pod-no-nat",
            "windows-17763→(linux|windows-20348),other-node,tcp",
        )],
        keeps: &[
            (
                "pod-ip-cross-node|hybrid-linux-windows|icmp-inside-cluster|pod-to-cluster-ip|windows-pod-to-cluster-ip|client-ip-session-affinity",
                "windows-17763→.*",
            ),
            (
                "service-fqdn|service-short-name|pod-name-fqdn",
                "windows-17763→cluster-dns",
            ),
            ("pod-to-outside-ip|pod-to-outside-name", "windows-17763→external,tcp"),
            (
                "pod-to-pod-no-nat",
                "(linux|windows-20348)→windows-17763,other-node,tcp",
            ),
        ],
        remedy: "ExceptionList",
        undocumented: &[],
        varies: &[],
    },
    // NET-OUTBOUND-NAT-EXCEPTIONLIST covering the outside; troubleshooting item "pod→external TCP
    // fails, in-cluster works".
    Case {
        fault: "exceptionlist-covers-outside",
        cause: "exceptionlist-covers-outside",
        cause_remedy: r"ExceptionList",
        confirmable: false,
        topology: Topology::Network,
        node: "win2022-1",
        fails: &[("pod-to-outside-ip|pod-to-outside-name", "windows-20348→external,tcp")],
        keeps: &[
            (
                "pod-ip-same-node|pod-ip-cross-node|pod-to-pod-no-nat|pod-to-cluster-ip|icmp-inside-cluster",
                W_ANY,
            ),
            ("service-fqdn|service-short-name", "windows-20348→cluster-dns"),
            ("icmp-to-outside", "windows-20348→external,icmp"),
        ],
        remedy: "ExceptionList",
        undocumented: &[],
        varies: &[],
    },
    // NET-KUBEPROXY-HOSTNAME; troubleshooting item "container vNICs / HNS endpoints vanish after a
    // while": the node's pods lose all connectivity, service flows through them break; the host's
    // own traffic works.
    Case {
        fault: "kube-proxy-no-hostname-override",
        cause: "kube-proxy-no-hostname-override",
        cause_remedy: r"--hostname-override",
        confirmable: true,
        topology: Topology::Network,
        node: "win2022-1",
        fails: &[
            (
                "pod-ip-same-node|pod-ip-cross-node|pod-to-pod-no-nat|hybrid-linux-windows|icmp-inside-cluster|pod-to-cluster-ip|windows-pod-to-cluster-ip|headless-service|external-name-service|nodeport-from-windows-pod|hostport-from-pod-own-node",
                W_ANY,
            ),
            ("containers-share-localhost|client-ip-session-affinity", W_OUT),
            ("pod-to-node|pod-to-outside-ip|pod-to-outside-name", W_OUT),
            // A load balancer reaches the pods through a node's NodePort: their endpoints are
            // gone whichever node it picks.
            (
                "node-to-pod|hostport|nodeport-from-other-nodes|nodeport-from-outside|load-balancer-service|linux-host-to-cluster-ip",
                ".*→windows-20348.*",
            ),
            ("hostport-from-pod-own-node", W_SAME),
            // kube-proxy's own log says it cannot find its node.
            ("kube-proxy-hostname-override", W_OUT),
            (
                "service-fqdn|service-short-name|pod-name-fqdn|custom-dns-config",
                "windows-20348→cluster-dns",
            ),
        ],
        keeps: &[
            (
                "node-to-pod|windows-host-to-cluster-ip|nodeport-from-other-nodes|hostport",
                "windows-20348→(linux|windows-17763),.*",
            ),
            ("pod-to-node", W_IN),
        ],
        remedy: "--hostname-override",
        undocumented: &[],
        varies: &[],
    },
    // NET-POD-SVC-CLUSTERIP ("kube-proxy not running on the Windows node"): ClusterIP flows from
    // the node's pods (DNS included: the kube-dns ClusterIP) and NodePort flows to the node time
    // out; pod IP flows work.
    Case {
        fault: "kube-proxy-stopped",
        cause: "kube-proxy-stopped",
        cause_remedy: r"Start kube-proxy",
        confirmable: true,
        topology: Topology::Network,
        node: "win2022-1",
        fails: &[
            (
                "pod-to-cluster-ip|windows-pod-to-cluster-ip|client-ip-session-affinity|hostprocess-to-kubernetes-service",
                W_OUT,
            ),
            W_LOOKUPS[0],
            W_LOOKUPS[1],
            W_LOOKUPS[2],
            (
                "nodeport-from-other-nodes|nodeport-from-outside|nodeport-from-windows-pod",
                ".*→windows-20348.*",
            ),
            // The node holds no load balancer: every Service with backends differs from the API.
            ("hns-matches-api", "windows-20348→"),
        ],
        keeps: &[
            (
                "pod-ip-same-node|pod-ip-cross-node|pod-to-pod-no-nat|hybrid-linux-windows|icmp-inside-cluster|hostport",
                W_ANY,
            ),
            ("pod-to-outside-ip", "windows-20348→external,tcp"),
            ("pod-to-cluster-ip", W_IN),
            ("nodeport-from-windows-pod", "windows-20348→(linux|windows-17763),.*"),
            // The cloud's health check leaves the node out; another node forwards to its pods.
            ("load-balancer-service", "external→windows-20348"),
            // The Windows host's own ClusterIP backends: the documented limitation, failing the
            // documented way.
            (
                "windows-host-to-cluster-ip",
                "windows-20348→windows-20348,same-node,tcp",
            ),
        ],
        remedy: "kube-proxy",
        undocumented: &[],
        varies: &[],
    },
    // VER-PAUSE-IMAGE; troubleshooting item "pods stuck ContainerCreating / restart loop": no pod
    // of the node gets a sandbox, so its flows are not probed and the version checks that create
    // pods fail.
    Case {
        fault: "pause-image-wrong-build",
        cause: "pause-image-wrong-build",
        cause_remedy: r"sandbox_image",
        confirmable: true,
        topology: Topology::Pods,
        node: "win2022-1",
        fails: SANDBOX_FAILS,
        keeps: &[
            SANDBOX_KEEPS[0],
            SANDBOX_KEEPS[1],
            SANDBOX_KEEPS[2],
            SANDBOX_KEEPS[3],
            SANDBOX_KEEPS[4],
            SANDBOX_KEEPS[5],
            FLANNEL_FINE,
            HNS_FINE,
            // The refusal of an image of another build still shows the documented HCS error.
            ("mismatched-build-image-fails|hyperv-isolation", "windows-20348→"),
        ],
        remedy: "sandbox_image",
        undocumented: &[],
        varies: &[],
    },
    // NET-FLANNEL-SUBNET-ENV; troubleshooting item "pods missing C:\run\flannel\subnet.env".
    Case {
        fault: "flannel-subnet-env-missing",
        cause: "flannel-subnet-env-missing",
        cause_remedy: r"subnet\.env",
        confirmable: true,
        topology: Topology::Pods,
        node: "win2022-1",
        fails: SANDBOX_FAILS,
        keeps: &[
            SANDBOX_KEEPS[0],
            SANDBOX_KEEPS[1],
            SANDBOX_KEEPS[2],
            SANDBOX_KEEPS[3],
            SANDBOX_KEEPS[4],
            SANDBOX_KEEPS[5],
            HNS_FINE,
        ],
        remedy: r"subnet\.env",
        undocumented: &[],
        varies: &[],
    },
    // NET-FLANNEL-SUBNET-ENV; troubleshooting item "flanneld Waiting for the Network to be
    // created": relaunch with NODE_NAME set.
    Case {
        fault: "flanneld-waiting",
        cause: "flanneld-waiting",
        cause_remedy: r"NODE_NAME",
        confirmable: true,
        topology: Topology::Pods,
        node: "win2022-1",
        fails: SANDBOX_FAILS,
        keeps: SANDBOX_KEEPS,
        remedy: "NODE_NAME",
        undocumented: &[],
        varies: &[NO_LOAD_BALANCERS],
    },
    // NET-HNS-NETWORK-PRESENT; troubleshooting item "kubelet: no network adapter found": pods get
    // no sandbox, HostProcess pods still start.
    Case {
        fault: "hns-network-missing",
        cause: "hns-network-missing",
        cause_remedy: r"Get-HnsNetwork",
        confirmable: true,
        topology: Topology::Pods,
        node: "win2022-1",
        fails: SANDBOX_FAILS,
        keeps: &[
            SANDBOX_KEEPS[0],
            SANDBOX_KEEPS[1],
            SANDBOX_KEEPS[2],
            SANDBOX_KEEPS[3],
            SANDBOX_KEEPS[4],
            SANDBOX_KEEPS[5],
            FLANNEL_FINE,
        ],
        remedy: "Get-HnsNetwork",
        undocumented: &[],
        varies: &[NO_LOAD_BALANCERS],
    },
    // DNS-FQDN: lookups from the node's pods time out (a DNS failure); connections by IP work.
    // Dotted partial names keep failing the documented way.
    Case {
        fault: "dns-unreachable",
        cause: "dns-unreachable",
        cause_remedy: r"CoreDNS",
        confirmable: false,
        topology: Topology::Network,
        node: "win2022-1",
        fails: W_LOOKUPS,
        keeps: &[
            W_PARTIAL_NAMES,
            (
                "pod-ip-cross-node|pod-to-pod-no-nat|pod-to-cluster-ip|pod-to-node|nodeport-from-windows-pod",
                W_OUT,
            ),
            ("pod-to-outside-ip", "windows-20348→external,tcp"),
            ("headless-service|external-name-service", W_IN),
        ],
        remedy: "CoreDNS",
        undocumented: &[],
        varies: &[],
    },
    // NET-HNS-MATCHES-API: the node's kube-proxy runs but has no HNS load balancer for the
    // cluster DNS Service (microsoft/hcsshim#1043): the lookups of its pods time out, as with an
    // unreachable DNS service, and the node's own reading names the missing load balancer.
    Case {
        fault: "hns-lb-policy-missing",
        cause: "hns-lb-policy-missing",
        cause_remedy: r"restart kube-proxy",
        confirmable: false,
        topology: Topology::Network,
        node: "win2022-1",
        fails: &[
            W_LOOKUPS[0],
            W_LOOKUPS[1],
            W_LOOKUPS[2],
            ("hns-matches-api", "windows-20348→"),
        ],
        keeps: &[
            W_PARTIAL_NAMES,
            (
                "pod-ip-cross-node|pod-to-pod-no-nat|pod-to-cluster-ip|windows-pod-to-cluster-ip|pod-to-node|nodeport-from-windows-pod",
                W_OUT,
            ),
            ("pod-to-outside-ip", "windows-20348→external,tcp"),
        ],
        remedy: "kube-proxy",
        undocumented: &[],
        varies: &[],
    },
    // NET-HNS-MATCHES-API: a deleted CoreDNS replica's address kept in the node's load balancer
    // (kubernetes#131466): the lookups that pick it time out — which of the node's lookup cells
    // fail depends on the round-robin — and the node's reading names the stale backend.
    Case {
        fault: "hns-stale-backend",
        cause: "hns-stale-backend",
        cause_remedy: r"restart kube-proxy",
        confirmable: false,
        topology: Topology::Network,
        node: "win2022-1",
        fails: &[("hns-matches-api", "windows-20348→")],
        keeps: &[
            (
                "pod-ip-cross-node|pod-to-pod-no-nat|pod-to-cluster-ip|windows-pod-to-cluster-ip|pod-to-node|nodeport-from-windows-pod",
                W_OUT,
            ),
            ("pod-to-outside-ip", "windows-20348→external,tcp"),
        ],
        remedy: "kube-proxy",
        undocumented: &[],
        varies: &[W_LOOKUPS[0], W_LOOKUPS[1], W_LOOKUPS[2], W_PARTIAL_NAMES],
    },
    // NET-HNS-MATCHES-API: one of the node's pod addresses is also a stale remote endpoint
    // (microsoft/Windows-Containers#631, kubernetes#138000): the Service connections of the pod
    // with that address time out (which pod has the node's lowest address depends on the
    // order the fixtures started), and the node's reading names the address.
    Case {
        fault: "hns-stale-remote-endpoint",
        cause: "hns-stale-remote-endpoint",
        cause_remedy: r"kubernetes#138000",
        confirmable: true,
        topology: Topology::Network,
        node: "win2022-1",
        fails: &[("hns-matches-api", "windows-20348→")],
        keeps: &[
            (
                "pod-ip-same-node|pod-ip-cross-node|pod-to-pod-no-nat|hybrid-linux-windows|icmp-inside-cluster",
                W_ANY,
            ),
            ("pod-to-outside-ip", "windows-20348→external,tcp"),
        ],
        remedy: "kube-proxy",
        undocumented: &[],
        varies: &[
            W_LOOKUPS[0],
            W_LOOKUPS[1],
            W_LOOKUPS[2],
            W_PARTIAL_NAMES,
            (
                "pod-to-cluster-ip|windows-pod-to-cluster-ip|client-ip-session-affinity|nodeport-from-windows-pod|load-balancer-service",
                W_OUT,
            ),
        ],
    },
    // NET-HNS-MATCHES-API: a load balancer for a Service address no Service has: no flow
    // breaks, the node's reading names it.
    Case {
        fault: "hns-leaked-policies",
        cause: "hns-leaked-policies",
        cause_remedy: r"hnsdiag delete loadbalancers",
        confirmable: false,
        topology: Topology::Network,
        node: "win2022-1",
        fails: &[("hns-matches-api", "windows-20348→")],
        keeps: &[(
            "(pod|hybrid|icmp|nodeport|service|windows|client|load|headless|external|dotted|other|custom|hostport|hostprocess|cluster)-.*",
            W_ANY,
        )],
        remedy: "kube-proxy",
        undocumented: &[],
        varies: &[],
    },
    // NETPOL-DENY-INGRESS: Calico's agent is down on win2022-1, so the policies selecting its
    // pods are not programmed there: ingress to its pods and egress from them stay open (every
    // deny and allow case whose enforcing end is the node fails as not enforced); flows with no
    // policy work.
    Case {
        fault: "netpol-agent-stopped",
        cause: "netpol-agent-stopped",
        cause_remedy: r"calico-node-windows",
        confirmable: false,
        topology: Topology::Calico,
        node: "win2022-1",
        fails: &[
            (
                "netpol-deny-ingress|netpol-allow-.*|netpol-ipblock-except",
                ".*→windows-20348,.*",
            ),
            ("netpol-deny-egress", "windows-20348→.*"),
        ],
        keeps: &[
            ("netpol-no-policy", ".*"),
            (
                "netpol-deny-ingress|netpol-allow-.*|netpol-ipblock-except",
                "windows-20348→linux,.*",
            ),
            ("netpol-deny-egress", "linux→.*"),
        ],
        remedy: "not enforced|agent",
        undocumented: &[],
        varies: &[],
    },
    // Ephemeral ports exhausted: every new connection from the host fails; the pods' connections to
    // the outside (SNAT) time out, troubleshooting item "pod→external TCP fails, in-cluster works";
    // in-cluster pod traffic works.
    Case {
        fault: "port-exhaustion",
        cause: "port-exhaustion",
        cause_remedy: r"ephemeral ports",
        confirmable: true,
        topology: Topology::Network,
        node: "win2022-1",
        fails: &[
            (
                "node-to-pod|hostport|nodeport-from-other-nodes|windows-host-to-cluster-ip|hostprocess-to-kubernetes-service",
                W_OUT,
            ),
            ("pod-to-outside-ip|pod-to-outside-name", "windows-20348→external,tcp"),
        ],
        keeps: &[
            (
                "pod-ip-same-node|pod-ip-cross-node|pod-to-pod-no-nat|pod-to-cluster-ip|windows-pod-to-cluster-ip|icmp-inside-cluster",
                W_ANY,
            ),
            (
                "service-fqdn|service-short-name|pod-name-fqdn",
                "windows-20348→cluster-dns",
            ),
            (
                "nodeport-from-other-nodes|nodeport-from-outside|node-to-pod|hostport",
                W_IN,
            ),
        ],
        remedy: "ExceptionList",
        // No rule of suites/rules.yaml and no Kubernetes-on-Windows troubleshooting page (W14, WDBG,
        // MSK8S) covers ephemeral port exhaustion on the host (only microsoft/SDN's networkhealth
        // checks it).
        undocumented: &[(
            "node-to-pod|hostport|nodeport-from-other-nodes|windows-host-to-cluster-ip|hostprocess-to-kubernetes-service",
            W_OUT,
        )],
        varies: &[],
    },
    // NET-FLANNEL-REJOIN; troubleshooting item "connectivity issues after node re-join (flannel)":
    // kube-proxy has no source VIP, so service flows through the node time out; pod IP flows work.
    Case {
        fault: "flannel-rejoin-stale-sourcevip",
        cause: "flannel-rejoin-stale-sourcevip",
        cause_remedy: r"SourceVip\.json",
        confirmable: true,
        topology: Topology::Overlay,
        node: "win2019-1",
        fails: &[
            (
                "pod-to-cluster-ip|windows-pod-to-cluster-ip|client-ip-session-affinity|headless-service|external-name-service",
                "windows-17763→.*",
            ),
            (
                "service-fqdn|service-short-name|pod-name-fqdn|custom-dns-config",
                "windows-17763→cluster-dns",
            ),
            ("pod-to-outside-name", "windows-17763→external,tcp"),
            ("nodeport-from-other-nodes|nodeport-from-outside", ".*→windows-17763.*"),
            ("nodeport-from-windows-pod", "windows-17763→windows-17763,.*"),
        ],
        keeps: &[
            (
                "pod-ip-same-node|pod-ip-cross-node|pod-to-pod-no-nat|hybrid-linux-windows|icmp-inside-cluster",
                ".*windows-17763.*",
            ),
            ("pod-to-outside-ip", "windows-17763→external,tcp"),
            ("pod-to-cluster-ip", "linux→windows-17763,.*"),
            ("nodeport-from-windows-pod", "windows-17763→linux,.*"),
        ],
        remedy: r"SourceVip\.json",
        undocumented: &[],
        varies: &[],
    },
    // NET-FLANNEL-VXLAN-PARAMS; troubleshooting item "Linux↔Windows VXLAN broken": the node's pods
    // reach only pods on the same node; host traffic works.
    Case {
        fault: "vxlan-params-mismatch",
        cause: "vxlan-params-mismatch",
        cause_remedy: r"VNI 4096",
        confirmable: true,
        topology: Topology::Overlay,
        node: "win2019-1",
        fails: &[
            (
                "pod-ip-cross-node|pod-to-pod-no-nat|hybrid-linux-windows|icmp-inside-cluster|pod-to-cluster-ip|headless-service|external-name-service|linux-host-to-cluster-ip",
                ".*windows-17763.*,other-node,.*",
            ),
            (
                "windows-pod-to-cluster-ip|nodeport-from-windows-pod|pod-to-node",
                "windows-17763→.*,other-node,.*",
            ),
            ("node-to-pod", "linux→windows-17763,other-node,tcp"),
            (
                "service-fqdn|service-short-name|pod-name-fqdn|custom-dns-config",
                "windows-17763→cluster-dns",
            ),
            ("pod-to-outside-ip|pod-to-outside-name", "windows-17763→external,tcp"),
            // flanneld's own log shows the VNI.
            ("flannel-vxlan-parameters", "windows-17763→"),
        ],
        keeps: &[
            (
                "pod-ip-same-node|windows-pod-to-cluster-ip|nodeport-from-windows-pod",
                "windows-17763→windows-17763,same-node,.*",
            ),
            ("nodeport-from-other-nodes|nodeport-from-outside", ".*→windows-17763.*"),
            ("pod-to-node", "linux→windows-17763,other-node,tcp"),
        ],
        remedy: r"VNI \(4096\)",
        // The documentation ties pod → outside failures to the ExceptionList only; outside
        // traffic leaves the node SNATed, not through VXLAN, yet the simulator drops it too.
        undocumented: &[("pod-to-outside-ip", "windows-17763→external,tcp")],
        // As with the ExceptionList: which backend the session sticks to decides.
        varies: &[("client-ip-session-affinity", "windows-17763→windows-17763,tcp")],
    },
];

/// The case of a fault.
/// The case of `name`: a fault (its first case), or `fault@topology` where a fault has a case
/// per topology (`exceptionlist-missing-cluster@network`).
fn case_of(name: &str) -> &'static Case {
    let (fault, topology) = name.split_once('@').unwrap_or((name, ""));
    CASES
        .iter()
        .find(|c| c.fault == fault && (topology.is_empty() || c.topology.label() == topology))
        .unwrap_or_else(|| panic!("no case for {name}"))
}

fn mixcheck() -> Command {
    Command::new(std::env::var_os("MIXCHECK_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_mixcheck").into()))
}

/// One cell of a report.
#[derive(Debug, Clone)]
struct Cell {
    check: String,
    coordinates: String,
    verdict: String,
    nodes: BTreeSet<String>,
    remedy: String,
    observed: String,
}

impl Cell {
    fn key(&self) -> String {
        format!("{} {}", self.check, self.coordinates)
    }

    fn is(&self, cells: &Matcher) -> bool {
        cells
            .0
            .iter()
            .any(|(check, coordinates)| check.is_match(&self.check) && coordinates.is_match(&self.coordinates))
    }

    fn failing(&self) -> bool {
        self.verdict == "fail" || self.verdict == "error"
    }
}

/// [`Cells`] compiled.
struct Matcher(Vec<(Regex, Regex)>);

impl Matcher {
    fn new(cells: &[(&str, &str)]) -> Matcher {
        let anchored = |p: &str| Regex::new(&format!("^(?:{p})$")).unwrap_or_else(|e| panic!("pattern {p:?}: {e}"));
        Matcher(cells.iter().map(|(c, x)| (anchored(c), anchored(x))).collect())
    }
}

/// One `mixcheck run`: its exit code and its cells by (check, coordinates).
struct Run {
    code: Option<i32>,
    cells: BTreeMap<String, Cell>,
    /// The run's `diagnosis` (null when absent).
    diagnosis: Value,
}

impl Run {
    /// A run of `topology`'s instant cluster ([`Topology::instant`]) with `fault` on its node.
    fn of(topology: Topology, fault: Option<(&str, &str)>) -> Run {
        Run::with_faults(topology, fault.as_slice())
    }

    fn with_faults(topology: Topology, faults: &[(&str, &str)]) -> Run {
        Run::on(&topology.instant(), &topology.suites(), faults)
    }

    /// A run of the topology `text` (YAML) with `suites` and `faults`: its exit code, cells and
    /// diagnosis.
    fn on(text: &str, suites: &[&str], faults: &[(&str, &str)]) -> Run {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("topology.yaml");
        std::fs::write(&file, text).expect("write topology");
        let mut cmd = mixcheck();
        cmd.current_dir(dir.path())
            .env_remove("KUBECONFIG")
            .args(["run", "--quiet", "--topology"])
            .arg(&file)
            .args(suites);
        for (node, fault) in faults {
            cmd.args(["--fault", &format!("{node}:{fault}")]);
        }
        let out = cmd.output().expect("run mixcheck");
        let (cells, diagnosis) = cells(dir.path()).unwrap_or_else(|why| {
            panic!(
                "{why}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        Run {
            code: out.status.code(),
            cells,
            diagnosis,
        }
    }

    /// The run of `case`'s fault on the instant cluster of its topology, made once per test
    /// process: the documented-symptom test reads it and the converging test compares with it.
    /// A test that asks while the run is under way waits for it.
    fn faulted(case: &'static Case) -> Arc<Run> {
        static RUNS: crate::cli::Shared<(&str, &str), Run> = crate::cli::Shared::new();
        RUNS.get((case.fault, case.topology.label()), || {
            Run::of(case.topology, Some((case.node, case.fault)))
        })
    }

    fn failing(&self) -> Vec<String> {
        self.cells
            .values()
            .filter(|c| c.failing())
            .map(|c| format!("{} {}: {}", c.verdict, c.key(), c.observed))
            .collect()
    }
}

/// The diagnosis's causes as (id, nodes, confidence, remedy).
fn causes(diagnosis: &Value) -> Vec<(String, Vec<String>, u64, String)> {
    let text_of = |v: &Value| v.as_str().unwrap_or_default().to_string();
    diagnosis["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                text_of(&c["id"]),
                c["nodes"].as_array().into_iter().flatten().map(text_of).collect(),
                c["confidence"].as_u64().unwrap_or_default(),
                text_of(&c["remedy"]),
            )
        })
        .collect()
}

fn cells(dir: &Path) -> Result<(BTreeMap<String, Cell>, Value), String> {
    let text =
        std::fs::read_to_string(dir.join("mixcheck-report/results.json")).map_err(|e| format!("results.json: {e}"))?;
    let report: Value = serde_json::from_str(&text).map_err(|e| format!("results.json: {e}"))?;
    if !report["aborted"].is_null() {
        return Err(format!("the run aborted: {:#}", report["aborted"]));
    }
    let text_of = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let mut out = BTreeMap::new();
    for c in report["cells"].as_array().ok_or("no cells")? {
        let id = text_of(&c["id"]);
        let check = text_of(&c["check"]);
        let coordinates = id
            .split_once('[')
            .and_then(|(_, rest)| rest.strip_suffix(']'))
            .unwrap_or_default();
        // Where a suite has several checks of one rule, the id carries the check's name in its
        // variant; the key names the check already.
        let coordinates = coordinates
            .strip_suffix(&format!(",{check}"))
            .map(str::to_string)
            .unwrap_or_else(|| coordinates.replace(&format!(",{check}:"), ","));
        let cell = Cell {
            check,
            coordinates,
            verdict: text_of(&c["verdict"]),
            nodes: c["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| text_of(&n["name"]))
                .collect(),
            remedy: text_of(&c["remedy"]),
            observed: text_of(&c["observed"]["summary"]),
        };
        if out.insert(cell.key(), cell).is_some() {
            return Err(format!("two cells named {id} of one check"));
        }
    }
    Ok((out, report["diagnosis"].clone()))
}

/// Every case of [`CASES`] by its name ([`case_of`]), for the tests that run each fault on its
/// own (rstest cannot take its cases from a table).
#[template]
#[rstest]
#[case::kubelet_stopped("kubelet-stopped")]
#[case::mac_spoofing_disabled("mac-spoofing-disabled")]
#[case::exceptionlist_missing_cluster("exceptionlist-missing-cluster")]
#[case::exceptionlist_missing_cluster_l2bridge("exceptionlist-missing-cluster@network")]
#[case::exceptionlist_covers_outside("exceptionlist-covers-outside")]
#[case::kube_proxy_no_hostname_override("kube-proxy-no-hostname-override")]
#[case::kube_proxy_stopped("kube-proxy-stopped")]
#[case::pause_image_wrong_build("pause-image-wrong-build")]
#[case::flannel_subnet_env_missing("flannel-subnet-env-missing")]
#[case::flanneld_waiting("flanneld-waiting")]
#[case::hns_network_missing("hns-network-missing")]
#[case::dns_unreachable("dns-unreachable")]
#[case::port_exhaustion("port-exhaustion")]
#[case::flannel_rejoin_stale_sourcevip("flannel-rejoin-stale-sourcevip")]
#[case::vxlan_params_mismatch("vxlan-params-mismatch")]
#[case::netpol_agent_stopped("netpol-agent-stopped")]
#[case::hns_lb_policy_missing("hns-lb-policy-missing")]
#[case::hns_stale_backend("hns-stale-backend")]
#[case::hns_stale_remote_endpoint("hns-stale-remote-endpoint")]
#[case::hns_leaked_policies("hns-leaked-policies")]
fn every_fault(#[case] fault: &str) {}

#[apply(every_fault)]
fn a_fault_fails_the_cells_its_documented_symptom_touches(#[case] fault: &str) {
    let case = case_of(fault);
    let clean = case.topology.clean();
    let run = Run::faulted(case);
    assert_eq!(
        run.code,
        Some(1),
        "{fault}: the gate fails (exit 1):\n{}",
        run.failing().join("\n")
    );
    assert_eq!(
        run.cells.keys().collect::<Vec<_>>(),
        clean.cells.keys().collect::<Vec<_>>(),
        "{fault}: the same cells as the clean run"
    );
    let (fails, keeps, undocumented, varies) = (
        Matcher::new(case.fails),
        Matcher::new(case.keeps),
        Matcher::new(case.undocumented),
        Matcher::new(case.varies),
    );
    let remedy = Regex::new(case.remedy).expect("remedy pattern");
    let mut problems = Vec::new();
    for (key, cell) in &run.cells {
        let before = &clean.cells[key];
        let turned = cell.failing() && cell.verdict != before.verdict;
        let touched = cell.nodes.contains(case.node) || before.nodes.contains(case.node);
        let kept = cell.is(&keeps) || !touched;
        let judged = !matches!(before.verdict.as_str(), "not-applicable" | "indeterminate");
        if cell.is(&varies) {
            // Either outcome is documented; a failure still names the documented fix.
        } else if kept && cell.verdict != before.verdict {
            problems.push(format!(
                "keeps its verdict: {key}: {} → {} ({})",
                before.verdict, cell.verdict, cell.observed
            ));
        } else if turned && !cell.is(&fails) {
            problems.push(format!(
                "fails, but the symptom does not touch it: {key}: {}",
                cell.observed
            ));
        } else if !kept && cell.is(&fails) && judged && !cell.failing() && cell.verdict != "known-limitation" {
            // A cell documented to fail (a limitation) shows the symptom as the documented
            // failure: `known-limitation` is the right verdict there.
            problems.push(format!(
                "the symptom breaks it, yet it is {} (clean: {}): {key}: {}",
                cell.verdict, before.verdict, cell.observed
            ));
        }
        if turned && touched && !cell.is(&undocumented) && !remedy.is_match(&cell.remedy) {
            problems.push(format!(
                "remedy does not name {:?}: {key}: {}\n    remedy: {}",
                case.remedy, cell.observed, cell.remedy
            ));
        }
    }
    // Every pattern names real cells (a typo would silently weaken the test).
    for (what, cells) in [
        ("fails", case.fails),
        ("keeps", case.keeps),
        ("undocumented", case.undocumented),
        ("varies", case.varies),
    ] {
        for pattern in cells {
            let one = Matcher::new(&[*pattern]);
            if !run.cells.values().any(|c| c.is(&one)) {
                problems.push(format!("{what} pattern {pattern:?} matches no cell"));
            }
        }
    }
    assert!(
        run.cells.values().any(|c| c.failing() && c.nodes.contains(case.node)),
        "{fault}: no cell on {} fails",
        case.node
    );
    assert!(
        problems.is_empty(),
        "{fault} on {}:\n{}",
        case.node,
        problems.join("\n")
    );
    // Triage: the catalogue's matching cause ranks first, localised to the faulted node, with
    // the documented remedy; every cause named is on that node and every failing cell explained.
    let found = causes(&run.diagnosis);
    let Some((top, nodes, confidence, remedy)) = found.first() else {
        panic!("{fault}: no cause diagnosed: {:#}", run.diagnosis)
    };
    assert_eq!(top, case.cause, "{fault}: the top cause ({found:?})");
    assert_eq!(
        nodes,
        &[case.node.to_string()],
        "{fault}: localised to the faulted node"
    );
    assert!(*confidence >= 50, "{fault}: confidence {confidence}");
    let cause_remedy = Regex::new(case.cause_remedy).expect("cause remedy pattern");
    assert!(
        cause_remedy.is_match(remedy),
        "{fault}: the remedy names {:?}: {remedy}",
        case.cause_remedy
    );
    for (id, nodes, ..) in &found {
        assert_eq!(
            nodes,
            &[case.node.to_string()],
            "{fault}: {id} is localised elsewhere ({found:?})"
        );
    }
    assert_eq!(
        run.diagnosis["unexplained"].as_array().map(Vec::len),
        Some(0),
        "{fault}: failing cells no cause explains: {:#}",
        run.diagnosis["unexplained"]
    );
}

/// Settling never hides a real failure: every fault, injected on a cluster that converges as
/// real ones do (testdata/realistic.yaml's proxy lag, slow Windows pulls and transient events),
/// fails exactly the cells it fails on an instant cluster of the same shape (the run
/// [`a_fault_fails_the_cells_its_documented_symptom_touches`] judges), cell by cell, and the
/// diagnosis names the same causes on the same nodes. The converging cluster runs those
/// upstream-sized delays on a clock twenty times as fast as the wall clock (as the default
/// topology's does), which the run judges them on (the clock changes no verdict:
/// `run_cli::the_bundled_clusters_clock_changes_no_verdict`): at ten times, the converging runs
/// of six tests side by side spent seconds waiting on their pulls with the machine idle.
#[apply(every_fault)]
fn a_fault_on_a_converging_cluster_fails_what_it_fails_on_an_instant_one(#[case] fault: &str) {
    let case = case_of(fault);
    let converging =
        crate::topology_text::with_timing(&case.topology.shape(), &crate::topology_text::realistic_timing("0.05"));
    let (instant, converging) = std::thread::scope(|scope| {
        let converging = scope.spawn(|| Run::on(&converging, &case.topology.suites(), &[(case.node, case.fault)]));
        (Run::faulted(case), converging.join().expect("the converging run"))
    });
    let failures = compare(case, &instant, &converging);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Where a run on a converging cluster differs from the run on an instant one.
fn compare(case: &Case, instant: &Run, converging: &Run) -> Vec<String> {
    let fault = case.fault;
    let varies = Matcher::new(case.varies);
    let mut out = Vec::new();
    if instant.code != converging.code {
        out.push(format!(
            "{fault}: exit {:?} instantly, {:?} converging",
            instant.code, converging.code
        ));
    }
    for (key, cell) in &instant.cells {
        match converging.cells.get(key) {
            None => out.push(format!("{fault}: {key} missing when converging")),
            Some(c) if c.verdict != cell.verdict && !cell.is(&varies) => out.push(format!(
                "{fault}: {key}: {} instantly ({}), {} converging ({})",
                cell.verdict, cell.observed, c.verdict, c.observed
            )),
            Some(_) => {}
        }
    }
    let named = |run: &Run| -> Vec<(String, Vec<String>)> {
        causes(&run.diagnosis)
            .into_iter()
            .map(|(id, nodes, ..)| (id, nodes))
            .collect()
    };
    if named(instant) != named(converging) {
        out.push(format!(
            "{fault}: diagnosis {:?} instantly, {:?} converging",
            named(instant),
            named(converging)
        ));
    }
    out
}

/// Two faults on two nodes at once: each is diagnosed, each on its own node.
#[test]
fn two_faults_on_two_nodes_are_both_diagnosed() {
    let run = Run::with_faults(
        Topology::Network,
        &[("win2022-1", "mac-spoofing-disabled"), ("win2019-1", "dns-unreachable")],
    );
    assert_eq!(run.code, Some(1));
    let found = causes(&run.diagnosis);
    let on = |id: &str| found.iter().find(|c| c.0 == id).map(|c| c.1.clone());
    assert_eq!(
        on("mac-spoofing-disabled"),
        Some(vec!["win2022-1".to_string()]),
        "{found:?}"
    );
    assert_eq!(on("dns-unreachable"), Some(vec!["win2019-1".to_string()]), "{found:?}");
    assert_eq!(
        found[0].0, "mac-spoofing-disabled",
        "the cause explaining most ranks first: {found:?}"
    );
}

/// The faults `mixcheck sim faults` lists (its first column).
fn listed_faults() -> Vec<String> {
    let out = mixcheck()
        .args(["sim", "faults"])
        .output()
        .expect("mixcheck sim faults");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn every_listed_fault_has_a_case_and_every_case_a_listed_fault() {
    let listed = listed_faults();
    assert!(listed.len() >= 14, "{listed:?}");
    let cases: BTreeSet<&str> = CASES.iter().map(|c| c.fault).collect();
    for fault in &listed {
        assert!(
            cases.contains(fault.as_str()),
            "`mixcheck sim faults` lists {fault}, which no case of faults.rs covers (add a case and an rstest #[case])"
        );
    }
    for case in CASES {
        assert!(listed.iter().any(|f| f == case.fault), "{} is not listed", case.fault);
    }
    // The rstest cases above name every case (rstest cannot take them from CASES).
    let source = include_str!("faults.rs");
    for case in CASES {
        assert!(
            source.contains(&format!(
                "#[case::{}(\"{}\")]",
                case.fault.replace('-', "_"),
                case.fault
            )),
            "no #[case] runs {}",
            case.fault
        );
    }
}

/// A faulted run with `--bundle` (and `--node-diagnostics` when asked): its diagnosis and the
/// labels of the run's pods (`app.kubernetes.io/component`), from the bundle's dump of the run
/// namespace.
fn diagnosed(case: &Case, node_diagnostics: bool) -> (Value, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = mixcheck();
    cmd.current_dir(dir.path())
        .env_remove("KUBECONFIG")
        .args(["run", "--quiet", "--bundle", "b.tar.gz"]);
    // The 1.14 VXLAN profile predates HostProcess pods, so nothing could run on its nodes: the
    // overlay faults are diagnosed on a current overlay cluster.
    let overlay = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/overlay-current.yaml");
    match case.topology {
        Topology::Overlay => cmd.args(["--topology", overlay]).args(NETWORK_SUITES),
        other => cmd.args(other.profile_args()),
    };
    cmd.args(["--fault", &format!("{}:{}", case.node, case.fault)]);
    if node_diagnostics {
        cmd.arg("--node-diagnostics");
    }
    let out = cmd.output().expect("run mixcheck");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.path().join("mixcheck-report/results.json")).expect("results.json");
    let report: Value = serde_json::from_str(&text).expect("json");
    let file = std::fs::File::open(dir.path().join("b.tar.gz")).expect("bundle");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut components = Vec::new();
    for entry in archive.entries().expect("entries") {
        let mut entry = entry.expect("entry");
        if entry.path().expect("path").ends_with("namespace/pods.json") {
            let pods: Value = serde_json::from_reader(&mut entry).expect("pods.json");
            components = pods
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    p["metadata"]["labels"]["app.kubernetes.io/component"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect();
        }
    }
    assert!(!components.is_empty(), "the bundle lists the run's pods");
    (report["diagnosis"].clone(), components)
}

/// The top cause's confidence and evidence lines, and the node's evidence sources.
fn top_cause(diagnosis: &Value, node: &str) -> (String, u64, Vec<String>, Vec<String>) {
    let top = &diagnosis["causes"][0];
    let lines = top["evidence"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect();
    let sources = diagnosis["evidence"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["node"] == node)
        .flat_map(|e| e["items"].as_array().into_iter().flatten())
        .filter_map(|i| i["source"].as_str().map(str::to_string))
        .collect();
    (
        top["id"].as_str().unwrap_or_default().to_string(),
        top["confidence"].as_u64().unwrap_or_default(),
        lines,
        sources,
    )
}

/// `--node-diagnostics`: a privileged pod on the faulted node runs the suspected causes'
/// confirmation commands; their output is in the node's evidence and, where the node can show
/// the cause, raises the top cause's confidence above what the symptoms alone give (85).
#[apply(every_fault)]
fn node_diagnostics_confirm_the_fault_on_its_node(#[case] fault: &str) {
    let case = case_of(fault);
    let (diagnosis, components) = diagnosed(case, true);
    let (top, confidence, lines, sources) = top_cause(&diagnosis, case.node);
    assert_eq!(top, case.cause, "{fault}: {diagnosis:#}");
    assert!(
        sources.iter().any(|s| s.starts_with("diagnostics")),
        "{fault}: no diagnostics in the evidence of {}: {sources:?}",
        case.node
    );
    if case.confirmable {
        assert!(
            confidence > 85,
            "{fault}: confirmed, yet confidence {confidence}: {lines:#?}"
        );
        assert!(
            lines.iter().any(|l| l.contains("diagnostics: ")),
            "{fault}: the confirming output is among the cause's evidence: {lines:#?}"
        );
        assert!(components.iter().any(|c| c == "node-diagnostics"), "{components:?}");
    } else {
        assert_eq!(confidence, 85, "{fault}: nothing on the node confirms it: {lines:#?}");
    }
}

/// Without `--node-diagnostics` no diagnostics pod is created: the run's pods are the
/// fixtures only.
#[test]
fn without_node_diagnostics_no_privileged_pod_is_created() {
    let case = case_of("kube-proxy-stopped");
    let (diagnosis, components) = diagnosed(case, false);
    assert!(!components.iter().any(|c| c == "node-diagnostics"), "{components:?}");
    assert_eq!(diagnosis["node_diagnostics"], false);
    let (top, confidence, ..) = top_cause(&diagnosis, case.node);
    assert_eq!((top.as_str(), confidence), (case.cause, 85));
}
