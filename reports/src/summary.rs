//! The plain-text run summary ([`plain`]) for CI logs: no colours, no tables, stable line
//! shapes a log search can find; the likely causes of the failures, when the run was
//! diagnosed, come right after the header.

use crate::evidence::one_line;
use crate::{
    cell::Cell,
    diagnosis::Diagnosis,
    report::{RunReport, Target},
    verdict::{Counts, Verdict},
};

/// The width of the longest verdict name (`better-than-documented`).
const VERDICT_WIDTH: usize = 22;

/// A plain-text summary of `report`:
///
/// 1. a header: tool version, run id, target, start time, `strict`; the abort reason if any;
/// 2. when the run was diagnosed and something failed, the likely causes, most likely first —
///    rank, title, id, nodes, confidence, how many failing cells each explains, its remedy and
///    confirm commands — and how many failing cells no known cause explains, with their ids;
/// 3. one line per check — its worst verdict, `suite/check`, its cells' verdict counts and its
///    title — checks with the worst verdicts first (then in plan order); under each, the cells
///    that fail the gate (with the report's `strict`), each with what was observed and why,
///    then the check's distinct remedies and the facts its indeterminate cells lack;
/// 4. totals per verdict (every verdict, zeros included), the number of cells and of distinct
///    rule ids, flaky cells, the wall time, and whether the gate passed.
///
/// Text from the cells is printed on one line each (newlines become spaces) except remedies,
/// whose further lines are indented.
pub fn plain(report: &RunReport) -> String {
    let mut lines = header(report);
    lines.push(String::new());
    if let Some(d) = crate::tally::diagnosis(report) {
        lines.extend(causes(d));
        lines.push(String::new());
    }

    let mut checks = group_by_check(&report.cells);
    checks.sort_by_key(|c| c.counts.worst().map_or(usize::MAX, Verdict::rank));
    if checks.is_empty() {
        lines.push("no check was judged".into());
    }
    for check in &checks {
        lines.extend(check_lines(check, report.strict));
    }

    lines.push(String::new());
    lines.extend(totals(report));
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

pub(crate) fn header(report: &RunReport) -> Vec<String> {
    let target = match &report.target {
        Target::Bundled { profile } => format!("bundled cluster (profile {profile})"),
        Target::Kubeconfig { context, server } => format!("context {context} ({server})"),
    };
    let mut first = format!(
        "mixcheck {}, run {}, {target}, started {}",
        report.tool_version,
        report.run_id,
        report.started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    if report.strict {
        first.push_str(", strict");
    }
    let mut lines = vec![first];
    if let Some(aborted) = &report.aborted {
        lines.push(format!(
            "run aborted: {} (exit code {})",
            one_line(&aborted.reason),
            aborted.exit_code
        ));
    }
    lines
}

/// `likely causes:`, then per cause its headline, remedy and confirm commands; then the
/// failing cells no cause explains.
fn causes(d: &Diagnosis) -> Vec<String> {
    let mut lines = vec![if d.causes.is_empty() {
        "likely causes: no known cause fits".to_string()
    } else {
        "likely causes:".to_string()
    }];
    for (i, c) in d.causes.iter().enumerate() {
        lines.push(format!("  {}. {}", i + 1, one_line(&c.headline())));
        lines.push(format!("     remedy: {}", one_line(&c.remedy)));
        for command in &c.confirm {
            lines.push(format!("     confirm: {}", one_line(command)));
        }
    }
    if let Some(line) = d.unexplained_line() {
        lines.push(format!("  {line}:"));
        lines.extend(d.unexplained.iter().map(|id| format!("     {id}")));
    }
    lines
}

/// The cells of one check, in plan order.
struct Check<'a> {
    cells: Vec<&'a Cell>,
    counts: Counts,
}

/// Cells grouped by `suite/check`, groups in order of first appearance.
fn group_by_check(cells: &[Cell]) -> Vec<Check<'_>> {
    let mut checks: Vec<Check<'_>> = Vec::new();
    for cell in cells {
        let existing = checks
            .iter_mut()
            .find(|c| c.cells[0].suite == cell.suite && c.cells[0].check == cell.check);
        match existing {
            Some(check) => {
                check.cells.push(cell);
                check.counts.add(cell.verdict);
            }
            None => checks.push(Check {
                cells: vec![cell],
                counts: [cell.verdict].into_iter().collect(),
            }),
        }
    }
    checks
}

fn check_lines(check: &Check<'_>, strict: bool) -> Vec<String> {
    let first = check.cells[0];
    let worst = check.counts.worst().map_or("", Verdict::as_str);
    let mut lines = vec![format!(
        "{worst:<VERDICT_WIDTH$}  {}/{}  {}  {}",
        first.suite,
        first.check,
        counts_text(&check.counts),
        one_line(&first.title)
    )];
    let mut remedies: Vec<&str> = Vec::new();
    for cell in check.cells.iter().filter(|c| c.verdict.fails_gate(strict)) {
        lines.push(format!(
            "    {:<16}  {}: {}",
            cell.verdict.as_str(),
            cell.id,
            one_line(&cell.observed.summary)
        ));
        if let Some(reason) = &cell.reason {
            lines.push(format!("      reason: {}", one_line(reason)));
        }
        if let Some(remedy) = cell.remedy.as_deref()
            && !remedies.contains(&remedy)
        {
            remedies.push(remedy);
        }
    }
    for remedy in remedies {
        lines.push(format!(
            "    remedy: {}",
            remedy.trim_end().replace('\n', "\n            ")
        ));
    }
    let mut unknown: Vec<&str> = Vec::new();
    for cell in check.cells.iter().filter(|c| c.verdict == Verdict::Indeterminate) {
        if let Some(fact) = cell.reason.as_deref()
            && !unknown.contains(&fact)
        {
            unknown.push(fact);
        }
    }
    if !unknown.is_empty() {
        lines.push(format!("    unknown: {}", one_line(&unknown.join(", "))));
    }
    lines
}

/// `3 cells: 1 fail, 2 pass` — non-zero counts in summary order.
fn counts_text(counts: &Counts) -> String {
    let total = counts.total();
    let parts: Vec<String> = counts
        .iter()
        .filter(|&(_, n)| n > 0)
        .map(|(v, n)| format!("{n} {v}"))
        .collect();
    format!("{total} {}: {}", plural(total, "cell", "cells"), parts.join(", "))
}

fn totals(report: &RunReport) -> Vec<String> {
    let counts = report.counts();
    let all: Vec<String> = counts.iter().map(|(v, n)| format!("{n} {v}")).collect();
    let cells = counts.total();
    let rules = report.rule_count();
    let mut scope = format!(
        "{cells} {} of {rules} {}, wall time {}",
        plural(cells, "cell", "cells"),
        plural(rules, "rule", "rules"),
        wall_time(report.duration_ms)
    );
    let flaky = report.flaky_count();
    if flaky > 0 {
        scope.push_str(&format!(", {flaky} flaky (passed after a transport retry)"));
    }
    let failing = report.gate_failures(report.strict).count();
    let strict = if report.strict { ", strict" } else { "" };
    let gate = match (&report.aborted, failing) {
        (Some(_), _) => format!("gate: FAILED (run aborted{strict})"),
        (None, 0) => format!("gate: passed{strict}"),
        (None, n) => format!(
            "gate: FAILED ({n} {} it{strict})",
            plural(n, "cell fails", "cells fail")
        ),
    };
    vec![format!("totals: {}", all.join(", ")), scope, gate]
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// `850 ms`, `12.3 s`, `4 min 05 s`, `1 h 02 min 03 s`.
pub(crate) fn wall_time(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0 => format!("{ms} ms"),
        1..60 => format!("{}.{} s", s, (ms % 1000) / 100),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min {:02} s", s / 3600, (s / 60) % 60, s % 60),
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::{report::Aborted, testdata::cell};

    fn small_report() -> RunReport {
        let mut report = crate::testdata::sample_report();
        report.diagnosis = None;
        report.strict = false;
        report.target = Target::Bundled {
            profile: "default".into(),
        };
        report.duration_ms = 83_400;
        let mut broken = cell(
            "net",
            "pod-to-svc",
            "NET-POD-SVC-CLUSTERIP",
            "windows-20348",
            Verdict::Fail,
        );
        broken.observed.summary = "connect timed out\nafter 10 s".into();
        broken.remedy = Some("Add the service CIDR to the ExceptionList.\nSee WDBG.".into());
        let mut broken_too = cell(
            "net",
            "pod-to-svc",
            "NET-POD-SVC-CLUSTERIP",
            "windows-17763",
            Verdict::Fail,
        );
        broken_too.remedy = broken.remedy.clone();
        let mut errored = cell("dns", "cluster-dns", "DNS-CLUSTER", "linux", Verdict::Error);
        errored.reason = Some("fixture dns-client never became ready".into());
        let unknown = |variant| {
            let mut cell = cell(
                "dns",
                "external-name",
                "NET-POD-EXT-DNS",
                variant,
                Verdict::Indeterminate,
            );
            cell.reason = Some("egress (pass --egress)".into());
            cell
        };
        let mut flaky = cell("net", "pod-to-pod", "NET-POD-POD-IP-SAME", "linux", Verdict::Pass);
        flaky.flaky = true;
        let pass = cell(
            "net",
            "pod-to-pod",
            "NET-POD-POD-IP-SAME",
            "windows-20348",
            Verdict::Pass,
        );
        let svc = cell("net", "pod-to-svc", "NET-POD-SVC-CLUSTERIP", "linux", Verdict::Pass);
        let warn = cell(
            "mem",
            "system-reserved",
            "MEM-SYSTEM-RESERVED",
            "windows-20348",
            Verdict::Warn,
        );
        let na = cell(
            "net",
            "icmp-external",
            "NET-ICMP-EXTERNAL",
            "windows-20348",
            Verdict::NotApplicable,
        );
        report.cells = vec![
            pass,
            flaky,
            svc,
            broken,
            warn,
            errored,
            broken_too,
            na,
            unknown("linux"),
            unknown("windows-20348"),
        ];
        report
    }

    #[test]
    fn small_report_summary() {
        let expected = "\
mixcheck 0.1.0, run 20261121-ab12, bundled cluster (profile default), started 2026-11-21T10:00:00Z

fail                    net/pod-to-svc  3 cells: 2 fail, 1 pass  pod-to-svc title
    fail              net/NET-POD-SVC-CLUSTERIP[windows-20348]: connect timed out after 10 s
    fail              net/NET-POD-SVC-CLUSTERIP[windows-17763]: NET-POD-SVC-CLUSTERIP windows-17763 observed
    remedy: Add the service CIDR to the ExceptionList.
            See WDBG.
error                   dns/cluster-dns  1 cell: 1 error  cluster-dns title
    error             dns/DNS-CLUSTER[linux]: DNS-CLUSTER linux observed
      reason: fixture dns-client never became ready
warn                    mem/system-reserved  1 cell: 1 warn  system-reserved title
pass                    net/pod-to-pod  2 cells: 2 pass  pod-to-pod title
indeterminate           dns/external-name  2 cells: 2 indeterminate  external-name title
    unknown: egress (pass --egress)
not-applicable          net/icmp-external  1 cell: 1 not-applicable  icmp-external title

totals: 2 fail, 1 error, 1 warn, 0 known-limitation, 0 better-than-documented, 3 pass, 2 indeterminate, 1 not-applicable
10 cells of 6 rules, wall time 1 min 23 s, 1 flaky (passed after a transport retry)
gate: FAILED (3 cells fail it)
";
        assert_eq!(plain(&small_report()), expected);
    }

    #[test]
    fn strict_lists_warnings_as_failures() {
        let mut report = small_report();
        report.strict = true;
        let text = plain(&report);
        assert!(
            text.contains("\n    warn              mem/MEM-SYSTEM-RESERVED[windows-20348]: "),
            "{text}"
        );
        assert!(text.ends_with("gate: FAILED (4 cells fail it, strict)\n"), "{text}");
    }

    #[test]
    fn passing_run() {
        let mut report = small_report();
        report.cells.retain(|c| c.verdict == Verdict::Pass);
        let text = plain(&report);
        assert!(text.ends_with("gate: passed\n"), "{text}");
        assert!(!text.contains("remedy"), "{text}");
        assert!(!text.contains("\u{1b}"), "no colours");
    }

    #[test]
    fn aborted_run_without_cells() {
        let mut report = small_report();
        report.cells.clear();
        report.aborted = Some(Aborted {
            reason: "cluster unreachable: connection refused".into(),
            exit_code: 3,
        });
        let text = plain(&report);
        assert!(
            text.contains("\nrun aborted: cluster unreachable: connection refused (exit code 3)\n"),
            "{text}"
        );
        assert!(text.contains("\nno check was judged\n"), "{text}");
        assert!(text.contains("\n0 cells of 0 rules, wall time"), "{text}");
        assert!(text.ends_with("gate: FAILED (run aborted)\n"), "{text}");
    }

    #[rstest]
    #[case(0, "0 ms")]
    #[case(850, "850 ms")]
    #[case(12_345, "12.3 s")]
    #[case(59_999, "59.9 s")]
    #[case(60_000, "1 min 00 s")]
    #[case(245_000, "4 min 05 s")]
    #[case(3_723_000, "1 h 02 min 03 s")]
    fn wall_times(#[case] ms: u64, #[case] text: &str) {
        assert_eq!(wall_time(ms), text);
    }
}
