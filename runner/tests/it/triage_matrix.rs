//! Triage generalises beyond the cases faults.rs was written for (issue #23): every fault of
//! `mixcheck sim faults`, injected on a node other than the one faults.rs uses, with every suite
//! selected (the run a user makes), is diagnosed at rank 1, localised to that node alone. One
//! table, one row per fault. The whole matrix — every node the fault applies to, three suite
//! selections, eight topologies, every pair of faults on two nodes, clean runs — is the
//! `triage-accuracy` example (docs/benchmarks.md).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// (fault, topology file of testdata/ or None for the default cluster, node): the node is
/// another than faults.rs's for the same fault.
const MATRIX: &[(&str, Option<&str>, &str)] = &[
    ("kubelet-stopped", None, "win2019-1"),
    ("kubelet-stopped", None, "linux-1"),
    ("mac-spoofing-disabled", None, "win2019-1"),
    ("exceptionlist-missing-cluster", None, "win2022-1"),
    ("exceptionlist-covers-outside", None, "win2019-1"),
    ("kube-proxy-no-hostname-override", None, "win2019-1"),
    ("kube-proxy-stopped", None, "win2019-1"),
    ("pause-image-wrong-build", None, "win2019-1"),
    ("flannel-subnet-env-missing", None, "win2019-1"),
    ("flanneld-waiting", None, "win2019-1"),
    ("hns-network-missing", None, "win2019-1"),
    ("dns-unreachable", None, "win2019-1"),
    ("dns-unreachable", None, "linux-1"),
    ("port-exhaustion", None, "win2019-1"),
    (
        "flannel-rejoin-stale-sourcevip",
        Some("overlay-current.yaml"),
        "win2022-1",
    ),
    ("vxlan-params-mismatch", Some("overlay-current.yaml"), "win2022-1"),
];

fn mixcheck(dir: &Path) -> Command {
    let mut cmd =
        Command::new(std::env::var_os("MIXCHECK_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_mixcheck").into()));
    cmd.current_dir(dir).env_remove("KUBECONFIG");
    cmd
}

/// One row's run: None when the top cause is the fault on its node alone, else what it was.
fn miss(fault: &str, topology: Option<&str>, node: &str) -> Option<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = mixcheck(dir.path());
    cmd.args(["run", "--quiet", "--fault", &format!("{node}:{fault}")]);
    if let Some(t) = topology {
        cmd.arg("--topology")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata").join(t));
    }
    let out = cmd.output().expect("run mixcheck");
    if out.status.code() != Some(1) {
        return Some(format!(
            "{fault}@{node}: exit {:?}, {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or_default()
        ));
    }
    let text = std::fs::read_to_string(dir.path().join("mixcheck-report/results.json")).expect("results.json");
    let report: Value = serde_json::from_str(&text).expect("json");
    let top = &report["diagnosis"]["causes"][0];
    let nodes: Vec<&str> = top["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    (top["id"] != fault || nodes != [node]).then(|| {
        format!(
            "{fault}@{node}: top cause {} on {nodes:?}",
            top["id"].as_str().unwrap_or("(none)")
        )
    })
}

#[test]
fn every_fault_on_another_node_with_every_suite_is_diagnosed_first_there() {
    // Two runs at a time (each serves its own bundled cluster).
    let misses: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = [0, 1]
            .into_iter()
            .map(|first| {
                scope.spawn(move || {
                    MATRIX
                        .iter()
                        .skip(first)
                        .step_by(2)
                        .filter_map(|(f, t, n)| miss(f, *t, n))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("a worker")).collect()
    });
    assert!(
        misses.is_empty(),
        "not diagnosed first on their node:\n{}",
        misses.join("\n")
    );
}
