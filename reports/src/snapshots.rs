//! Snapshot tests: every format rendered from one report with a cell of every verdict kind and
//! a diagnosis, compared with the files under `tests/snapshots/` (fixed timestamps and
//! durations). After an intended change, `UPDATE_SNAPSHOTS=1 cargo test -p mixcheck-reports
//! snapshots` rewrites them; review the diff before committing. Also here: what every format
//! does alike with a diagnosis (shown first; nothing extra without one).

use std::path::PathBuf;

use rstest::rstest;

use crate::diagnosis::{Diagnosis, EvidenceItem, NodeEvidence};
use crate::evidence::Excerpt;
use crate::report::RunReport;
use crate::testdata::every_verdict_report;
use crate::{html, junit, markdown, summary, terminal};

fn check(name: &str, rendered: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("snapshot dir");
        std::fs::write(&path, rendered).expect("write snapshot");
        return;
    }
    let pinned = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 writes it)", path.display()));
    if pinned != rendered {
        let line = pinned
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| pinned.lines().count().min(rendered.lines().count()));
        panic!(
            "{name} differs from its snapshot at line {}:\n  pinned:   {:?}\n  rendered: {:?}\n(UPDATE_SNAPSHOTS=1 rewrites it after an intended change)",
            line + 1,
            pinned.lines().nth(line).unwrap_or_default(),
            rendered.lines().nth(line).unwrap_or_default()
        );
    }
}

#[test]
fn the_report_has_every_verdict_kind() {
    let report = every_verdict_report();
    for v in crate::Verdict::ALL {
        assert!(report.cells.iter().any(|c| c.verdict == v), "{v} is missing");
    }
}

#[test]
fn junit_snapshot() {
    check(
        "every-verdict.junit.xml",
        &junit::render(&every_verdict_report()).expect("render"),
    );
}

#[test]
fn markdown_snapshot() {
    check("every-verdict.md", &markdown::render(&every_verdict_report()));
}

#[test]
fn html_snapshot() {
    check("every-verdict.html", &html::render(&every_verdict_report()));
}

#[test]
fn summary_snapshot() {
    check("every-verdict.txt", &summary::plain(&every_verdict_report()));
}

#[test]
fn json_snapshot() {
    let mut json = serde_json::to_string_pretty(&every_verdict_report()).expect("json");
    json.push('\n');
    check("every-verdict.json", &json);
}

#[test]
fn terminal_snapshot() {
    check(
        "every-verdict.term.txt",
        &terminal::render(&every_verdict_report(), false, terminal::Detail::Full),
    );
}

#[test]
fn terminal_summary_snapshot() {
    check(
        "every-verdict.term-summary.txt",
        &terminal::render(&every_verdict_report(), false, terminal::Detail::Summary),
    );
}

fn terminal_plain(report: &RunReport) -> String {
    terminal::render(report, false, terminal::Detail::Full)
}

fn junit_xml(report: &RunReport) -> String {
    junit::render(report).expect("render")
}

/// Each human format shows the likely causes before the failures, and each failure explained
/// by a cause points at it.
#[rstest]
#[case::terminal(
    terminal_plain,
    "LIKELY CAUSES (2)",
    "EVERY FAILING CELL (4)",
    "    cause:      1. The sandbox (pause) image"
)]
#[case::markdown(
    markdown::render,
    "### Likely causes",
    "### Failures (4, by rule",
    "likely cause 1: `pause-image-wrong-build`"
)]
#[case::html(
    html::render,
    "<h2>Likely causes</h2>",
    "<tr class=\"cell v-fail\"",
    "likely cause: <a href=\"#cause-1\">1. The sandbox (pause) image"
)]
#[case::summary(
    summary::plain,
    "likely causes:",
    "net/pod-to-pod-ip  ",
    "  1. The sandbox (pause) image"
)]
fn the_diagnosis_comes_before_the_failures(
    #[case] render: fn(&RunReport) -> String,
    #[case] causes: &str,
    #[case] failures: &str,
    #[case] pointer: &str,
) {
    let text = render(&every_verdict_report());
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing:\n{text}"))
    };
    assert!(at(causes) < at(failures), "the diagnosis first:\n{text}");
    let first_cause = at("The sandbox (pause) image is built for another Windows build");
    let second_cause = at("The cluster DNS service is unreachable from the node");
    let unexplained = at("1 failing cell no known cause explains");
    assert!(at(causes) < first_cause && first_cause < second_cause && second_cause < unexplained);
    assert!(
        unexplained < at(failures),
        "the unexplained cells are part of the diagnosis"
    );
    assert!(text.contains(pointer), "{pointer:?} missing:\n{text}");
    assert!(text.contains("confidence 67%"), "{text}");
    assert!(text.contains("sched/SCHED-RUNTIMECLASS[windows-20348]"), "{text}");
}

/// A run without a diagnosis, and one whose diagnosis names no cause and leaves nothing
/// unexplained (evidence or not), render exactly alike — and without a trace of one.
#[rstest]
#[case::terminal(terminal_plain, "LIKELY CAUSES")]
#[case::markdown(markdown::render, "Likely causes")]
#[case::html(html::render, "Likely causes")]
#[case::summary(summary::plain, "likely causes")]
#[case::junit(junit_xml, "Likely cause")]
fn an_empty_diagnosis_adds_nothing(#[case] render: fn(&RunReport) -> String, #[case] marker: &str) {
    let mut none = every_verdict_report();
    none.diagnosis = None;
    let mut empty = none.clone();
    empty.diagnosis = Some(Diagnosis {
        node_diagnostics: true,
        evidence: vec![NodeEvidence {
            node: "win2022-1".into(),
            items: vec![EvidenceItem {
                source: "condition Ready".into(),
                text: Excerpt::new("True"),
            }],
        }],
        ..Default::default()
    });
    let without = render(&none);
    assert_eq!(render(&empty), without);
    assert!(!without.contains(marker), "{without}");
    assert!(!without.contains("pause-image-wrong-build"), "{without}");
    // A clean run's reports are as they were before diagnoses existed.
    let mut clean = none.clone();
    clean.cells.retain(|c| !c.verdict.fails_gate(false));
    clean.diagnosis = Some(Diagnosis::default());
    let mut clean_none = clean.clone();
    clean_none.diagnosis = None;
    assert_eq!(render(&clean), render(&clean_none));
}
