//! Platforms as they are (issue #34): the facts come from the node first (AKS is L2Bridge
//! whatever its DaemonSets are called; a node without the HNS cmdlets answers through
//! `hnsdiag`), the diagnosis speaks the platform's language (a managed remedy names no Hyper-V,
//! MAC spoofing or cni.conf step), GKE's Windows taint and Dataplane V2 are no faults, and
//! egress and load balancers are judged where the runner stands.

use rstest::rstest;
use serde_json::Value;

use crate::cli::{run_report as run, run_topology};

fn cells(report: &Value) -> Vec<&Value> {
    report["cells"]
        .as_array()
        .map(|c| c.iter().collect())
        .unwrap_or_default()
}

fn verdict_count(report: &Value, verdicts: &[&str]) -> usize {
    cells(report)
        .iter()
        .filter(|c| verdicts.contains(&c["verdict"].as_str().unwrap_or_default()))
        .count()
}

/// A built-in profile's topology text.
fn profile_text(name: &str) -> String {
    let path = format!("{}/../simcluster/topologies/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What a managed platform's remedy must never ask for (real-clusters.md §7).
fn forbidden(remedy: &str) -> bool {
    let r = remedy.to_ascii_lowercase();
    [
        "mac address spoofing",
        "set-vmnetworkadapter",
        "cni.conf",
        "start script",
        "start.ps1",
        "hyper-v role",
    ]
    .iter()
    .any(|w| r.contains(w))
}

/// AKS, VNet and Overlay alike: the network mode is L2Bridge as the node reads it, DSR is on
/// (Azure/AKS#2073), and the node-level checks pass with no fail or error.
#[rstest]
#[case::aks("aks")]
#[case::aks_overlay("aks-overlay")]
fn aks_is_l2bridge_read_on_the_node(#[case] profile: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    // The facts and the node-level checks; the whole profile's gate is profiles.rs's.
    let (code, out, report) = run(dir.path(), &["--profile", profile, "--suite", "network-config"]);
    assert_eq!(code, Some(0), "{out}");
    let facts = &report["facts"];
    assert_eq!(facts["network_mode"]["value"], "l2bridge", "{facts}");
    let source = facts["network_mode"]["source"].as_str().unwrap_or_default();
    assert!(source.starts_with("node ") && source.contains("L2Bridge"), "{source}");
    assert_eq!(facts["dsr"]["value"], true, "{facts}");
    assert_eq!(facts["platform"]["value"], "aks");
    assert_eq!(verdict_count(&report, &["fail", "error"]), 0, "{out}");
}

/// A stopped kube-proxy on an AKS node (each profile, another node) is diagnosed there first,
/// with the platform's remedy and commands: its `Kubeproxy` service and `C:\k` log.
#[rstest]
#[case::aks("aks", "akswin000000")]
#[case::aks_overlay("aks-overlay", "akswn000001")]
fn a_stopped_kube_proxy_on_aks_gets_a_managed_remedy(#[case] profile: &str, #[case] node: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let fault = format!("{node}:kube-proxy-stopped");
    let (code, out, report) = run(dir.path(), &["--profile", profile, "--fault", &fault]);
    assert_eq!(code, Some(1), "{out}");
    let first = &report["diagnosis"]["causes"][0];
    assert_eq!(first["id"], "kube-proxy-stopped", "{out}");
    assert_eq!(first["nodes"], serde_json::json!([node]), "{first}");
    let remedy = first["remedy"].as_str().unwrap_or_default();
    assert!(!forbidden(remedy), "{remedy}");
    assert!(remedy.contains("Kubeproxy") && remedy.contains("reimage"), "{remedy}");
    let confirm = first["confirm"].to_string();
    assert!(
        confirm.contains("Get-Service Kubeproxy") && confirm.contains(r"C:\\k\\kubeproxy.err.log"),
        "{confirm}"
    );
}

/// GKE Dataplane V2 runs no kube-proxy: the gate passes, the kube-proxy checks are not
/// applicable, and no cell, evidence or cause says kube-proxy is stopped.
#[test]
fn dataplane_v2_has_no_kube_proxy_to_miss() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, report) = run(dir.path(), &["--profile", "gke-dpv2"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        report["facts"]["service_proxy"]["value"], "anetd",
        "{}",
        report["facts"]
    );
    let whole = report.to_string();
    assert!(!whole.contains("kube-proxy.exe is not running"), "{whole}");
    assert!(report["diagnosis"]["causes"].as_array().is_none_or(|c| c.is_empty()));
    let skew: Vec<&Value> = cells(&report)
        .into_iter()
        .filter(|c| c["rule_id"] == "VER-KUBEPROXY-SKEW")
        .collect();
    assert!(!skew.is_empty());
    for c in skew {
        assert_eq!(c["verdict"], "not-applicable", "{c}");
        assert!(
            c["observed"]["summary"]
                .as_str()
                .unwrap_or_default()
                .contains("kube-proxy is not used"),
            "{c}"
        );
    }
}

/// GKE's own Windows taint (`node.kubernetes.io/os=windows:NoSchedule`) keeps Linux pods off as
/// the documented `os` key does: no placement warning, on a user-written GKE topology.
#[test]
fn gkes_taint_satisfies_the_placement_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = profile_text("gke");
    assert!(
        text.contains("node.kubernetes.io/os"),
        "the profile carries GKE's taint"
    );
    let (code, out, report) = run_topology(dir.path(), &text, &["--suite", "placement"]);
    assert_eq!(code, Some(0), "{out}");
    let taint: Vec<&Value> = cells(&report)
        .into_iter()
        .filter(|c| c["rule_id"] == "SCHED-TAINT")
        .collect();
    assert!(!taint.is_empty());
    for c in taint {
        assert_eq!(c["verdict"], "pass", "{c}");
    }
}

/// A Windows node without the HNS cmdlets (projectcalico/calico#6843) still has its network mode
/// known, through `hnsdiag`, and says so — on the default cluster and on EKS.
#[rstest]
#[case::default("default", "win2022-1")]
#[case::eks("eks", "ip-192-168-20-31.us-west-2.compute.internal")]
fn without_hns_cmdlets_hnsdiag_answers(#[case] profile: &str, #[case] node: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = profile_text(profile);
    let marker = format!("  - name: {node}\n");
    assert!(text.contains(&marker), "{profile} has {node}");
    // Every Windows node lacks the cmdlets.
    let text = text.replace("    os: windows\n", "    os: windows\n    hnsCmdlets: false\n");
    let (code, out, report) = run_topology(dir.path(), &text, &["--suite", "network-config"]);
    assert_eq!(code, Some(0), "{out}");
    let mode = &report["facts"]["network_mode"];
    assert_eq!(mode["value"], "l2bridge", "{mode}");
    assert!(
        mode["source"].as_str().unwrap_or_default().contains("hnsdiag"),
        "{mode}"
    );
    let present: Vec<&Value> = cells(&report)
        .into_iter()
        .filter(|c| c["rule_id"] == "NET-HNS-NETWORK-PRESENT")
        .collect();
    assert!(!present.is_empty());
    for c in present {
        assert_eq!(c["verdict"], "pass", "{c}");
    }
}

/// The default topology with `network:` lines added.
fn default_with(network: &str) -> String {
    profile_text("default").replacen("network:\n", &format!("network:\n{network}"), 1)
}

/// The outbound checks' verdicts by rule.
fn outbound(report: &Value) -> Vec<(String, String)> {
    cells(report)
        .into_iter()
        .filter(|c| ["NET-POD-EXT-IP", "NET-POD-EXT-DNS"].contains(&c["rule_id"].as_str().unwrap_or_default()))
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_string(),
                c["verdict"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Egress behind a firewall that allows only 443 is found and judged; none at all is unknown
/// (naming the attempts) unless the user says `--egress=false`.
#[rstest]
#[case::web_only("  egressPorts: [443]\n", &[], "pass")]
#[case::none_unstated("  egress: false\n", &[], "indeterminate")]
#[case::none_stated("  egress: false\n", &["--egress=false"], "not-applicable")]
fn egress_is_judged_where_it_is(#[case] network: &str, #[case] args: &[&str], #[case] want: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut all = vec!["--suite", "network-flows"];
    all.extend_from_slice(args);
    let (code, out, report) = run_topology(dir.path(), &default_with(network), &all);
    assert_eq!(code, Some(0), "{out}");
    let cells = outbound(&report);
    assert_eq!(cells.len(), 6, "{cells:?}");
    assert!(cells.iter().all(|(_, v)| v == want), "{cells:?}");
    if want == "indeterminate" {
        let why = report["facts"]["unread"]["egress"].as_str().unwrap_or_default();
        assert!(
            why.contains("1.1.1.1:443") && why.contains("1.1.1.1:53") && why.contains("www.microsoft.com:443"),
            "{why}"
        );
    }
}

/// Load balancers that do not answer the runner (internal ones, a proxy on the way) are judged
/// from inside the cluster and said so — never `fail`.
#[test]
fn unreachable_load_balancers_are_judged_from_inside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, report) = run_topology(
        dir.path(),
        &default_with("  loadBalancersReachable: false\n"),
        &["--suite", "nodeport"],
    );
    assert_eq!(code, Some(0), "{out}");
    let lb: Vec<&Value> = cells(&report)
        .into_iter()
        .filter(|c| {
            c["id"]
                .as_str()
                .unwrap_or_default()
                .starts_with("nodeport/SVC-TYPES[external")
        })
        .filter(|c| c["coordinates"]["variant"] == "load-balancer-service")
        .collect();
    assert_eq!(lb.len(), 3, "{lb:?}");
    for c in lb {
        assert_eq!(c["verdict"], "pass", "{c}");
        assert!(
            c["observed"]["summary"]
                .as_str()
                .unwrap_or_default()
                .contains("not observed from outside the cluster: judged from inside it"),
            "{c}"
        );
    }
}
