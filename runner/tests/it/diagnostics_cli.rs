//! `--node-diagnostics` where a confirmation command cannot run: a host without the HNS
//! cmdlets (projectcalico/calico#6843) and a node without the file a command reads (a Calico
//! node has no flannel CNI configuration). The command's evidence says "not run: <why>", and it
//! confirms and refutes nothing: the cause keeps the confidence its symptoms give (85).

use rstest::rstest;
use serde_json::Value;

use crate::cli::{mixcheck, text};

use crate::faults::NETWORK_SUITES;

/// The default topology with `hnsCmdlets: false` on `node`.
fn without_hns_cmdlets(node: &str) -> String {
    let default = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../simcluster/topologies/default.yaml"
    ))
    .expect("default topology");
    let entry = format!("  - name: {node}\n");
    assert!(default.contains(&entry), "{node} in the default topology");
    default.replace(&entry, &format!("{entry}    hnsCmdlets: false\n"))
}

/// The evidence item of `node` whose source is `source`.
fn item<'a>(diagnosis: &'a Value, node: &str, source: &str) -> Option<&'a str> {
    diagnosis["evidence"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["node"] == node)
        .flat_map(|e| e["items"].as_array().into_iter().flatten())
        .find(|i| i["source"] == source)
        .and_then(|i| i["text"].as_str())
}

/// Where the command cannot run, the fault's cause is diagnosed from its symptoms alone.
#[rstest]
#[case::no_hns_cmdlets(
    "hns",
    "kube-proxy-stopped",
    "diagnostics: Get-HnsPolicyList -ErrorAction Stop | Measure-Object",
    "not recognized"
)]
#[case::no_cni_file(
    "calico",
    "exceptionlist-missing-cluster",
    "diagnostics: Get-Content {cniConfig} -ErrorAction Stop",
    "Cannot find path"
)]
fn a_command_that_cannot_run_confirms_nothing(
    #[case] setup: &str,
    #[case] fault: &str,
    #[case] source: &str,
    #[case] why: &str,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = mixcheck(dir.path());
    cmd.args(["run", "--quiet", "--node-diagnostics"]).args(NETWORK_SUITES);
    if setup == "hns" {
        let topology = dir.path().join("no-hns.yaml");
        std::fs::write(&topology, without_hns_cmdlets("win2022-1")).expect("write topology");
        cmd.arg("--topology").arg(&topology);
    } else {
        cmd.args(["--profile", "kubeadm-calico"]);
    }
    cmd.args(["--fault", &format!("win2022-1:{fault}")]);
    let out = cmd.output().expect("run");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let results = std::fs::read_to_string(dir.path().join("mixcheck-report/results.json")).expect("results.json");
    let report: Value = serde_json::from_str(&results).expect("json");
    let diagnosis = &report["diagnosis"];
    assert_eq!(diagnosis["node_diagnostics"], true);
    let shown = item(diagnosis, "win2022-1", source).unwrap_or_else(|| panic!("{source} ran: {diagnosis:#}"));
    assert!(shown.starts_with("not run: ") && shown.contains(why), "{shown}");
    let cause = diagnosis["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["id"] == fault)
        .unwrap_or_else(|| panic!("{fault} is a candidate: {diagnosis:#}"));
    assert_eq!(cause["confidence"], 85, "{cause:#}");
    let lines: Vec<&str> = cause["evidence"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        lines.iter().any(|l| l.contains(source) && l.contains("not run: ")),
        "the cause says why its command is no evidence: {lines:#?}"
    );
}
