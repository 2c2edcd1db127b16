//! Support boundaries and node-scoped cells (issue #22): a cluster outside a documented support
//! boundary fails the gate on exactly those cells; a recommendation not followed warns; a cell of
//! a node-scoped rule names only the nodes that break it, with their own observed values.

use serde_json::Value;

use crate::cli::{mixcheck, text};

/// Runs the bundled cluster of `testdata/<topology>` and returns the exit code and results.json.
fn run(topology: &str) -> (Option<i32>, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = format!("{}/../testdata/{topology}", env!("CARGO_MANIFEST_DIR"));
    let out = mixcheck(dir.path())
        .args(["run", "--topology", &path, "--quiet"])
        .output()
        .expect("run mixcheck");
    let results = std::fs::read_to_string(dir.path().join("mixcheck-report/results.json"))
        .unwrap_or_else(|e| panic!("{topology}: no results.json ({e})\n{}", text(&out)));
    (out.status.code(), serde_json::from_str(&results).expect("results.json"))
}

fn cells_with<'a>(report: &'a Value, verdict: &str) -> Vec<&'a Value> {
    report["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["verdict"] == verdict)
        .collect()
}

fn node_names(cell: &Value) -> Vec<&str> {
    cell["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["name"].as_str())
        .collect()
}

/// WSKEW: "kubelet … may be up to three minor versions older"; the supported-OS lists name no
/// Windows Server 2016 after 1.13 (W14 on). Both are support boundaries: fail, with the remedy.
/// The old kubelet's node runs the cluster's kube-proxy (1.32), four minors newer than its
/// kubelet, where WSKEW allows kube-proxy "up to three minor versions older or newer than the
/// kubelet instance it runs alongside": that node's kube-proxy cell fails too.
#[test]
fn a_kubelet_four_minors_behind_and_ws2016_on_1_32_fail_exactly_those_cells() {
    let (code, report) = run("unsupported-nodes.yaml");
    // Only the two boundaries fail, each naming its node. The WS2016 node's pods get no sandbox
    // on 1.32 (no supported runtime there), but outside a support boundary the documentation
    // promises nothing: those cells are indeterminate, naming the boundary.
    let failing: Vec<(String, Vec<&str>)> = cells_with(&report, "fail")
        .into_iter()
        .chain(cells_with(&report, "error"))
        .map(|c| (c["id"].as_str().unwrap_or_default().to_string(), node_names(c)))
        .collect();
    let outside = cells_with(&report, "indeterminate")
        .into_iter()
        .filter(|c| {
            c["reason"]
                .as_str()
                .is_some_and(|r| r.contains("win2016-1 is outside a support boundary — VER-OS-SUPPORTED"))
        })
        .count();
    assert!(
        outside > 0,
        "the WS2016 node's failing cells are indeterminate, naming the boundary"
    );
    assert_eq!(
        failing,
        vec![
            (
                "version-matching/VER-OS-SUPPORTED[windows-14393→]".to_string(),
                vec!["win2016-1"]
            ),
            (
                "version-matching/VER-KUBELET-SKEW[windows-20348→]".to_string(),
                vec!["win2022-old"]
            ),
            (
                "version-matching/VER-KUBEPROXY-SKEW[windows-20348→]".to_string(),
                vec!["win2022-old"]
            ),
        ],
        "{failing:#?}"
    );
    assert_eq!(code, Some(1));
    for c in cells_with(&report, "fail").into_iter().filter(|c| {
        c["suite"] == "version-matching" && c["observed"]["summary"].as_str().is_some_and(|s| s.contains(" of "))
    }) {
        assert!(c["remedy"].as_str().is_some_and(|r| !r.is_empty()), "{c:#}");
        assert_eq!(c["expected"]["kind"], "requirement", "{c:#}");
    }
    let skew = cells_with(&report, "fail")
        .into_iter()
        .find(|c| c["check"] == "kubelet-skew")
        .expect("the skew cell");
    let seen = skew["observed"]["summary"].as_str().unwrap_or_default();
    assert!(seen.starts_with("1 of 2 nodes: win2022-old: kubelet 1.28"), "{seen}");
}

/// WI31 recommends reserving at least 2 GiB on Windows nodes: a recommendation, so a node without
/// it warns — and the pool's cell names only that node, with its value.
#[test]
fn one_node_without_reserved_memory_warns_naming_only_that_node() {
    let (code, report) = run("reserved-memory-one-node.yaml");
    let warn: Vec<&Value> = cells_with(&report, "warn")
        .into_iter()
        .filter(|c| c["check"] == "system-reserved-memory")
        .collect();
    assert_eq!(warn.len(), 1, "{warn:#?}");
    let cell = warn[0];
    assert_eq!(cell["id"], "memory-reservation/MEM-SYS-RESERVED[windows-20348→]");
    assert_eq!(node_names(cell), vec!["win2022-2"]);
    let seen = cell["observed"]["summary"].as_str().unwrap_or_default();
    assert!(
        seen.starts_with("1 of 2 nodes: win2022-2: systemReserved.memory = 0.00Gi"),
        "{seen}"
    );
    assert_eq!(code, Some(0), "a recommendation does not fail the gate");
}
