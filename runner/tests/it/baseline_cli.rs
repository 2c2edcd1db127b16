//! The release gate against a baseline (`mixcheck run --baseline`, `mixcheck diff`): cells are
//! matched by their stable ids, only regressions fail the gate, improvements and known failures
//! are reported; a baseline taken on a cluster whose nodes have other names still matches.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cli::{mixcheck, text};

const SUITES: &[&str] = &["--suite", "network-flows", "--suite", "dns"];

/// Runs mixcheck with `args` plus the network suites, its reports into `dir/name`; the exit
/// code and results.json.
fn run(dir: &Path, name: &str, args: &[&str]) -> (Option<i32>, PathBuf, Value) {
    run_suites(dir, name, SUITES, args)
}

fn run_suites(dir: &Path, name: &str, suites: &[&str], args: &[&str]) -> (Option<i32>, PathBuf, Value) {
    let out = mixcheck(dir)
        .args(["run", "--quiet", "--report-dir", name])
        .args(suites)
        .args(args)
        .output()
        .expect("run");
    let path = dir.join(name).join("results.json");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("results.json")).expect("json");
    (out.status.code(), path, report)
}

fn changes<'a>(report: &'a Value, change: &str) -> Vec<&'a str> {
    report["baseline"]["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["change"] == change)
        .filter_map(|c| c["id"].as_str())
        .collect()
}

#[test]
fn only_regressions_fail_the_gate_against_a_baseline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, clean, _) = run(dir.path(), "clean", &[]);
    assert_eq!(code, Some(0));

    // The same cluster again: nothing regressed.
    let (code, _, again) = run(dir.path(), "again", &["--baseline", clean.to_str().expect("path")]);
    assert_eq!(code, Some(0), "{again:#}");
    assert!(changes(&again, "regression").is_empty());

    // A fault: the gate fails, and the regressions are exactly the cells that fail now.
    let (code, _, faulty) = run(
        dir.path(),
        "faulty",
        &[
            "--baseline",
            clean.to_str().expect("path"),
            "--fault",
            "win2022-1:mac-spoofing-disabled",
        ],
    );
    assert_eq!(code, Some(1));
    let mut failing: Vec<&str> = faulty["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .filter(|c| matches!(c["verdict"].as_str(), Some("fail" | "error")))
        .filter_map(|c| c["id"].as_str())
        .collect();
    failing.sort_unstable();
    let mut regressed = changes(&faulty, "regression");
    regressed.sort_unstable();
    assert!(!regressed.is_empty());
    assert_eq!(regressed, failing);

    // That faulty run as the baseline of a second faulty run: its failures are known, not
    // fatal; with the fault fixed they are improvements.
    let faulty_path = dir.path().join("faulty/results.json");
    let (code, _, known) = run(
        dir.path(),
        "known",
        &[
            "--baseline",
            faulty_path.to_str().expect("path"),
            "--fault",
            "win2022-1:mac-spoofing-disabled",
        ],
    );
    assert_eq!(
        code,
        Some(0),
        "known failures do not fail the gate: {:#}",
        known["baseline"]
    );
    assert_eq!(changes(&known, "known-failure").len(), failing.len());
    let (code, _, fixed) = run(
        dir.path(),
        "fixed",
        &["--baseline", faulty_path.to_str().expect("path")],
    );
    assert_eq!(code, Some(0));
    // The failures are improvements now, and so is a documented limitation the fault made hold
    // that the clean cluster does better than (known-limitation → better-than-documented).
    let verdict_of = |report: &Value, id: &str| -> String {
        report["cells"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["id"] == id)
            .map(|c| c["verdict"].as_str().unwrap_or_default().to_string())
            .unwrap_or_default()
    };
    let lifted = faulty["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .filter(|c| c["verdict"] == "known-limitation")
        .filter_map(|c| c["id"].as_str())
        .filter(|id| verdict_of(&fixed, id) == "better-than-documented")
        .count();
    assert_eq!(changes(&fixed, "improvement").len(), failing.len() + lifted);

    // mixcheck diff says the same, with exit 1 on regressions.
    for (old, new, code, marker) in [
        ("clean", "faulty", Some(1), "REGRESSION ("),
        ("faulty", "fixed", Some(0), "IMPROVEMENT ("),
    ] {
        let out = mixcheck(dir.path())
            .args(["diff", &format!("{old}/results.json"), &format!("{new}/results.json")])
            .output()
            .expect("diff");
        assert_eq!(out.status.code(), code, "{}", text(&out));
        assert!(text(&out).contains(marker), "{}", text(&out));
        assert!(text(&out).contains("per source pool:"), "{}", text(&out));
    }
    let md = mixcheck(dir.path())
        .args(["diff", "clean/results.json", "faulty/results.json", "-o", "markdown"])
        .output()
        .expect("diff");
    assert!(text(&md).contains("❌ regressions"), "{}", text(&md));
    let report_md = std::fs::read_to_string(dir.path().join("faulty/report.md")).expect("report.md");
    assert!(report_md.contains("### mixcheck against baseline"), "{report_md}");
}

#[test]
fn a_limitation_now_better_than_documented_is_an_improvement() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The secrets suite of the default cluster has cells better than documented (STO-SUBPATH
    // on its Windows nodes: subPath mounts work on containerd, documented as unsupported).
    let secrets: &[&str] = &["--suite", "secrets"];
    let (_, clean, report) = run_suites(dir.path(), "clean", secrets, &[]);
    // The baseline of a cluster where a documented limitation still held: the cells that are
    // better than documented now were known limitations then.
    let mut baseline = report.clone();
    let mut lifted = Vec::new();
    for c in baseline["cells"].as_array_mut().expect("cells") {
        if c["verdict"] == "better-than-documented" {
            c["verdict"] = "known-limitation".into();
            lifted.push(c["id"].as_str().expect("id").to_string());
        }
    }
    assert!(
        !lifted.is_empty(),
        "the default cluster has better-than-documented cells"
    );
    let old = dir.path().join("old.json");
    std::fs::write(&old, serde_json::to_string(&baseline).expect("json")).expect("write");
    let (code, _, now) = run_suites(dir.path(), "now", secrets, &["--baseline", old.to_str().expect("path")]);
    assert_eq!(code, Some(0));
    let mut improved: Vec<String> = changes(&now, "improvement").iter().map(|s| s.to_string()).collect();
    improved.sort_unstable();
    lifted.sort_unstable();
    assert_eq!(improved, lifted);
    assert!(clean.exists());
}

#[test]
fn a_baseline_from_nodes_of_other_names_matches_by_pools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let default = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../simcluster/topologies/default.yaml"
    ))
    .expect("topology");
    let renamed = default
        .replace("linux-1", "lnx-a")
        .replace("win2019-1", "ws19-a")
        .replace("win2022-1", "ws22-a");
    assert_ne!(renamed, default);
    std::fs::write(dir.path().join("renamed.yaml"), renamed).expect("write");
    let (code, baseline, old) = run(dir.path(), "renamed", &["--topology", "renamed.yaml"]);
    assert_eq!(code, Some(0));
    assert!(old["facts"]["nodes"].get("ws22-a").is_some(), "{:#}", old["facts"]);
    let (code, _, now) = run(dir.path(), "now", &["--baseline", baseline.to_str().expect("path")]);
    assert_eq!(code, Some(0));
    let diff = &now["baseline"];
    for change in ["regression", "new", "removed"] {
        assert!(changes(&now, change).is_empty(), "{change}: {diff:#}");
    }
    assert_eq!(
        diff["unchanged"].as_u64(),
        now["cells"].as_array().map(|c| c.len() as u64)
    );
}

#[test]
fn a_baseline_that_is_not_a_report_exits_2_before_any_cluster_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("x.json"), "{\"hello\": 1}").expect("write");
    let out = mixcheck(dir.path())
        .args(["run", "--baseline", "x.json"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--baseline"), "{}", text(&out));
    assert!(!dir.path().join("mixcheck-report").exists());
}
