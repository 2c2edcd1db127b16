//! Triage generalises beyond the cases faults.rs was written for (issue #23): every fault of
//! `mixcheck sim faults`, injected on a node other than the one faults.rs uses, is diagnosed at
//! rank 1, localised to that node alone, and is the only cause named — with every suite
//! selected (the run a user makes), and again under a narrower selection (the network suites,
//! or version matching alone) on yet another node, topology or platform. One table, rows of
//! (fault, topology, node, selection). The whole matrix — every node the fault applies to, three
//! suite selections, eight topologies, every pair of faults on two nodes, clean runs — is the
//! `triage-accuracy` example (docs/benchmarks.md). A second table runs pairs of faults on two
//! nodes: both causes are named first and second, each on its own node alone.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The cluster a row runs on.
#[derive(Debug, Clone, Copy)]
enum Topology {
    /// The default bundled cluster.
    Default,
    /// A topology file of testdata/.
    File(&'static str),
    /// A platform profile (`mixcheck sim profiles`).
    Profile(&'static str),
    /// testdata/realistic.yaml, which converges as a real cluster does, on a clock ten times
    /// the wall clock's pace (as faults.rs runs it).
    Converging,
}

use Topology::{Converging, Default, File, Profile};

/// The suites a row's run selects.
#[derive(Debug, Clone, Copy)]
enum Selection {
    /// Every suite (no `--suite`).
    All,
    /// The network suites.
    Network,
    /// Version matching alone.
    Version,
    /// The DNS suite alone: the causes of failing lookups tie until the run probes what tells
    /// them apart (issue #36).
    Dns,
    /// The NodePort suite alone.
    Nodeport,
}

use Selection::{All, Dns, Network, Nodeport, Version};

impl Selection {
    fn suites(self) -> &'static [&'static str] {
        match self {
            All => &[],
            Network => &["network-flows", "nodeport", "dns", "network-config", "dataplane"],
            Version => &["version-matching"],
            Dns => &["dns"],
            Nodeport => &["nodeport"],
        }
    }
}

const EKS_WIN: &str = "ip-192-168-20-32.us-west-2.compute.internal";
const GKE_WIN: &str = "gke-sim-win-pool-5e6f7a8b-cd34";
const GKE_LINUX: &str = "gke-sim-default-pool-1a2b3c4d-x3y4";
const OVERLAY: Topology = File("overlay-current.yaml");
const FLANNEL_HP: Topology = Profile("kubeadm-flannel-hostprocess");

/// (fault, topology, node, selection): the node is another than faults.rs's for the same fault;
/// each fault has an all-suites row and a row under a narrower selection elsewhere.
const MATRIX: &[(&str, Topology, &str, Selection)] = &[
    ("kubelet-stopped", Default, "win2019-1", All),
    ("kubelet-stopped", Default, "linux-1", All),
    ("kubelet-stopped", Profile("eks"), EKS_WIN, Network),
    ("mac-spoofing-disabled", Default, "win2019-1", All),
    // MAC spoofing is a Hyper-V setting a managed platform does not expose (refused there).
    (
        "mac-spoofing-disabled",
        Profile("current-ws2022-ws2025"),
        "win2025-1",
        Network,
    ),
    ("exceptionlist-missing-cluster", Default, "win2022-1", All),
    ("exceptionlist-missing-cluster", Default, "win2019-1", Network),
    ("exceptionlist-covers-outside", Default, "win2019-1", All),
    // The VPC CNI writes no OutboundNAT ExceptionList (refused on EKS): AKS's Azure CNI does.
    (
        "exceptionlist-covers-outside",
        Profile("aks-overlay"),
        "akswn000001",
        Network,
    ),
    ("kube-proxy-no-hostname-override", Default, "win2019-1", All),
    ("kube-proxy-no-hostname-override", Profile("gke"), GKE_WIN, Network),
    ("kube-proxy-stopped", Default, "win2019-1", All),
    ("kube-proxy-stopped", Profile("kubeadm-calico"), "win2022-2", Network),
    ("kube-proxy-stopped", Profile("aks"), "akswin000000", All),
    ("pause-image-wrong-build", Default, "win2019-1", All),
    ("pause-image-wrong-build", Profile("aks"), "akswin000001", Version),
    ("flannel-subnet-env-missing", Default, "win2019-1", All),
    ("flannel-subnet-env-missing", OVERLAY, "win2022-1", Network),
    ("flanneld-waiting", Default, "win2019-1", All),
    ("flanneld-waiting", FLANNEL_HP, "win2022-1", Network),
    ("hns-network-missing", Default, "win2019-1", All),
    ("hns-network-missing", OVERLAY, "win2019-1", Version),
    ("dns-unreachable", Default, "win2019-1", All),
    ("dns-unreachable", Default, "linux-1", All),
    ("dns-unreachable", Profile("aks"), "akswin000000", Network),
    ("port-exhaustion", Default, "win2019-1", All),
    ("port-exhaustion", Profile("gke"), GKE_LINUX, Network),
    ("flannel-rejoin-stale-sourcevip", OVERLAY, "win2022-1", All),
    ("flannel-rejoin-stale-sourcevip", FLANNEL_HP, "win2022-2", Network),
    ("vxlan-params-mismatch", OVERLAY, "win2022-1", All),
    ("vxlan-params-mismatch", OVERLAY, "win2019-1", Network),
    // Two Windows nodes in one pool: the flows between them are the faulted node's, and the
    // other node's kube-proxy runs with the flag.
    ("kube-proxy-no-hostname-override", Profile("aks"), "akswin000001", All),
    // The same on overlay: the cells between the two nodes are the faulted node's (a session
    // to the pool's Service names both backends); the cause on the peer would have to stand on
    // the peer's own cells.
    ("vxlan-params-mismatch", FLANNEL_HP, "win2022-2", All),
    // The data plane drifted from the API (issue #36): each fault on each Windows node of the
    // default, overlay and aks clusters, under all suites or the network ones.
    ("hns-lb-policy-missing", Default, "win2019-1", All),
    ("hns-lb-policy-missing", OVERLAY, "win2022-1", Network),
    ("hns-lb-policy-missing", Profile("aks"), "akswin000000", All),
    ("hns-stale-backend", Default, "win2019-1", Network),
    ("hns-stale-backend", OVERLAY, "win2019-1", All),
    ("hns-stale-backend", Profile("aks"), "akswin000001", Network),
    ("hns-stale-remote-endpoint", Default, "win2019-1", All),
    ("hns-stale-remote-endpoint", OVERLAY, "win2022-1", All),
    ("hns-stale-remote-endpoint", Profile("aks"), "akswin000000", Network),
    ("hns-leaked-policies", Default, "win2022-1", Network),
    ("hns-leaked-policies", OVERLAY, "win2019-1", Network),
    ("hns-leaked-policies", Profile("aks"), "akswin000001", All),
    // Only the DNS suite (the new user): an unreachable DNS service, MAC spoofing off and
    // a missing or stale load balancer of the DNS Service fail the same lookups; the run probes
    // from the node (another node's pod, the DNS server's pod, the node's HNS reading).
    ("dns-unreachable", Default, "win2022-1", Dns),
    ("dns-unreachable", Profile("aks"), "akswin000001", Dns),
    ("mac-spoofing-disabled", Default, "win2022-1", Dns),
    ("hns-lb-policy-missing", Default, "win2022-1", Dns),
    ("hns-lb-policy-missing", Profile("aks"), "akswin000001", Dns),
    ("hns-stale-backend", OVERLAY, "win2022-1", Dns),
    ("kube-proxy-stopped", Default, "win2019-1", Dns),
    // Only the NodePort suite.
    ("kube-proxy-stopped", Default, "win2022-1", Nodeport),
    ("kube-proxy-stopped", Profile("aks"), "akswin000000", Nodeport),
    // The default cluster converging as a real one does (proxy lag, slow Windows pulls,
    // transient events).
    ("kube-proxy-stopped", Converging, "win2022-1", Network),
];

/// Pairs of faults, ((fault, node), (fault, node), topology): an ExceptionList fault on one node
/// beside a fault that breaks the flows between the two nodes on the other (the orientation the
/// triage-accuracy example does not run, another network mode, a pool of two).
/// A fault injected on a node: (fault, node).
type Injected = (&'static str, &'static str);

const PAIRS: &[(Injected, Injected, Topology)] = &[
    (
        ("exceptionlist-missing-cluster", "win2022-1"),
        ("pause-image-wrong-build", "win2019-1"),
        Default,
    ),
    (
        ("exceptionlist-missing-cluster", "win2019-1"),
        ("flanneld-waiting", "win2022-1"),
        OVERLAY,
    ),
    (
        ("exceptionlist-covers-outside", "akswin000000"),
        ("kube-proxy-no-hostname-override", "akswin000001"),
        Profile("aks"),
    ),
];

fn mixcheck(dir: &Path) -> Command {
    let mut cmd =
        Command::new(std::env::var_os("MIXCHECK_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_mixcheck").into()));
    cmd.current_dir(dir).env_remove("KUBECONFIG");
    cmd
}

/// The causes a run with `faults` ((fault, node)) on `topology` names, (id, nodes) in order;
/// or why it gave none.
fn causes(
    faults: &[(&str, &str)],
    topology: Topology,
    selection: Selection,
) -> Result<Vec<(String, Vec<String>)>, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = mixcheck(dir.path());
    cmd.args(["run", "--quiet"]);
    for suite in selection.suites() {
        cmd.args(["--suite", suite]);
    }
    for (fault, node) in faults {
        cmd.arg("--fault").arg(format!("{node}:{fault}"));
    }
    match topology {
        Default => {}
        File(t) => {
            cmd.arg("--topology")
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata").join(t));
        }
        Profile(p) => {
            cmd.args(["--profile", p]);
        }
        Converging => {
            let file = dir.path().join("converging.yaml");
            std::fs::write(&file, crate::topology_text::realistic_on_a_clock("0.1")).expect("write topology");
            cmd.arg("--topology").arg(file);
        }
    }
    let out = cmd.output().expect("run mixcheck");
    if out.status.code() != Some(1) {
        return Err(format!(
            "exit {:?}, {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or_default()
        ));
    }
    let text = std::fs::read_to_string(dir.path().join("mixcheck-report/results.json")).expect("results.json");
    let report: Value = serde_json::from_str(&text).expect("json");
    Ok(report["diagnosis"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let nodes = c["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect();
            (c["id"].as_str().unwrap_or("(none)").to_string(), nodes)
        })
        .collect())
}

/// One row's run: None when the only cause named is the fault on its node alone, else what
/// was named.
fn miss(fault: &str, topology: Topology, node: &str, selection: Selection) -> Option<String> {
    let label = format!("{fault}@{node} ({topology:?}, {selection:?} suites)");
    match causes(&[(fault, node)], topology, selection) {
        Err(why) => Some(format!("{label}: {why}")),
        Ok(found) => match found.as_slice() {
            [(id, nodes)] if id == fault && nodes == &[node] => None,
            named => Some(format!("{label}: causes {named:?}")),
        },
    }
}

/// One pair's run: None when both causes are the first two, each on its node alone.
fn pair_miss(a: (&str, &str), b: (&str, &str), topology: Topology) -> Option<String> {
    let label = format!("{}@{} + {}@{} ({topology:?})", a.0, a.1, b.0, b.1);
    match causes(&[a, b], topology, All) {
        Err(why) => Some(format!("{label}: {why}")),
        Ok(found) => {
            let top: Vec<&(String, Vec<String>)> = found.iter().take(2).collect();
            let named = |(fault, node): (&str, &str)| top.iter().any(|(id, nodes)| id == fault && nodes == &[node]);
            (!(named(a) && named(b))).then(|| format!("{label}: first causes {top:?}"))
        }
    }
}

/// The misses of `rows`, two runs at a time (each serves its own bundled cluster).
fn two_at_a_time<T: Sync>(rows: &[T], miss: impl Fn(&T) -> Option<String> + Sync) -> Vec<String> {
    crate::cli::at_a_time(2, rows, |row| miss(row).into_iter().collect())
}

/// The matrix in six parts, each a test of its own: the test threads share its runs out.
#[rstest::rstest]
fn every_fault_on_other_nodes_under_two_selections_is_the_only_cause_named_there(
    #[values(0, 1, 2, 3, 4, 5)] part: usize,
) {
    let misses: Vec<String> = MATRIX
        .iter()
        .skip(part)
        .step_by(6)
        .filter_map(|(f, t, n, s)| miss(f, *t, n, *s))
        .collect();
    assert!(
        misses.is_empty(),
        "not diagnosed first on their node:\n{}",
        misses.join("\n")
    );
}

#[test]
fn two_faults_on_two_nodes_are_both_diagnosed_each_on_its_node() {
    let misses = two_at_a_time(PAIRS, |(a, b, t)| pair_miss(*a, *b, *t));
    assert!(
        misses.is_empty(),
        "not both diagnosed on their nodes:\n{}",
        misses.join("\n")
    );
}
