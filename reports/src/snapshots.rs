//! Snapshot tests: every format rendered from one report with a cell of every verdict kind,
//! compared with the files under `tests/snapshots/` (fixed timestamps and durations). After an
//! intended change, `UPDATE_SNAPSHOTS=1 cargo test -p mixcheck-reports snapshots` rewrites them;
//! review the diff before committing.

use std::path::PathBuf;

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
        &terminal::render(&every_verdict_report(), false),
    );
}
