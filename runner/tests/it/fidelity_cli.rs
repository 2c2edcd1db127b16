//! The third documentation review (issue #35) on whole runs: the overlay Windows Server 2022
//! NodePort issue no longer hides a kube-proxy fault on a patched node, and kube-proxy's skew
//! is judged against its own kubelet.

use rstest::rstest;
use serde_json::Value;

use crate::cli::run_topology as run;

fn testdata(name: &str) -> String {
    let path = format!("{}/../testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The NodePort cells whose destination is the Windows Server 2022 pool.
fn nodeport_cells_to_ws2022(report: &Value) -> Vec<(String, String)> {
    report["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| ["NP-REMOTE", "NP-FROM-WINPOD"].contains(&c["rule_id"].as_str().unwrap_or_default()))
        .filter(|c| c["coordinates"]["destination"] == "windows-20348")
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_string(),
                c["verdict"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Overlay, a Windows Server 2022 node at revision 2762 (long past the OS fix): its NodePort
/// cells pass; with kube-proxy stopped there they fail and the cause is named on it — the
/// known OS issue no longer reads the fault as a limitation (fidelity review 2026-12, row 1).
#[rstest]
#[case::healthy(None)]
#[case::kube_proxy_stopped(Some("win2022-1:kube-proxy-stopped"))]
fn a_patched_overlay_ws2022_node_is_held_to_the_rule(#[case] fault: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut args = vec!["--suite", "nodeport"];
    if let Some(f) = fault {
        args.extend(["--fault", f]);
    }
    let (code, out, report) = run(dir.path(), &testdata("overlay-current.yaml"), &args);
    let cells = nodeport_cells_to_ws2022(&report);
    assert!(!cells.is_empty(), "{out}");
    match fault {
        None => {
            assert_eq!(code, Some(0), "{out}");
            // A pool of one node has no other-node pair of its own (not-applicable).
            assert!(
                cells.iter().all(|(_, v)| v == "pass" || v == "not-applicable"),
                "{cells:?}"
            );
            assert!(cells.iter().filter(|(_, v)| v == "pass").count() >= 4, "{cells:?}");
        }
        Some(_) => {
            assert_eq!(code, Some(1), "{out}");
            assert!(cells.iter().any(|(_, v)| v == "fail"), "{cells:?}");
            assert!(cells.iter().all(|(_, v)| v != "known-limitation"), "{cells:?}");
            let first = &report["diagnosis"]["causes"][0];
            assert_eq!(first["id"], "kube-proxy-stopped", "{out}");
            assert_eq!(first["nodes"], serde_json::json!(["win2022-1"]), "{first}");
        }
    }
}

/// Before 1.28 kube-proxy must be its kubelet's minor (WSKEW): a 1.27 cluster whose Windows node
/// runs kube-proxy 1.26 fails VER-KUBEPROXY-SKEW for that node only.
#[test]
fn kube_proxy_one_minor_behind_its_kubelet_fails_before_1_28() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topology = testdata("overlay-current.yaml")
        .replace("kubernetesVersion: v1.32.3", "kubernetesVersion: v1.27.16")
        .replacen(
            "  - name: win2022-1\n",
            "  - name: win2022-1\n    kubeProxyVersion: v1.26.15\n",
            1,
        );
    let (_, out, report) = run(dir.path(), &topology, &["--suite", "version-matching"]);
    let skew: Vec<&Value> = report["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["rule_id"] == "VER-KUBEPROXY-SKEW")
        .collect();
    assert!(!skew.is_empty(), "{out}");
    for c in &skew {
        let on_it = c["nodes"].to_string().contains("win2022-1");
        let failed = c["verdict"] == "fail";
        assert_eq!(failed, on_it, "{c}");
    }
}

/// flannel allows any VNI of 4096 or more on Windows (its backends documentation): a cluster on
/// 4097 passes; a node that differs from the cluster's VNI still fails, on that node alone.
#[rstest]
#[case::cluster_4097(None)]
#[case::one_node_differs(Some("win2022-1:vxlan-params-mismatch"))]
fn the_vni_is_the_clusters(#[case] fault: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let topology =
        testdata("overlay-current.yaml").replacen("  mode: overlay\n", "  mode: overlay\n  vxlanVni: 4097\n", 1);
    let mut args = vec!["--suite", "network-config"];
    if let Some(f) = fault {
        args.extend(["--fault", f]);
    }
    let (code, out, report) = run(dir.path(), &topology, &args);
    let cells: Vec<(String, String)> = report["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["rule_id"] == "NET-FLANNEL-VXLAN-PARAMS")
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_string(),
                c["verdict"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(cells.len(), 2, "{out}");
    for (id, verdict) in &cells {
        let faulted = fault.is_some() && id.contains("windows-20348");
        assert_eq!(verdict, if faulted { "fail" } else { "pass" }, "{id}: {out}");
    }
    assert_eq!(code, Some(if fault.is_some() { 1 } else { 0 }), "{out}");
}
