//! The terminal report: the diagnosis first (the likely causes, ranked, each with its nodes,
//! confidence, the failing cells it explains, remedy, confirm commands and a few evidence lines;
//! then the failing cells no known cause explains), the failures (with remedy, likely cause,
//! evidence and the reproduce command), documented limitations apart, a table per suite and
//! one per OS pool, and the cross-pool flow matrix — coloured by verdict when the caller says
//! colour is wanted (a terminal, and `NO_COLOR` unset).

use std::collections::BTreeMap;

use tabled::builder::Builder;
use tabled::settings::Style;

use crate::cell::Cell;
use crate::diagnosis::{Diagnosis, failing_cells};
use crate::evidence::one_line;
use crate::groups;
use crate::report::RunReport;
use crate::summary::{header, wall_time};
use crate::tally;
use crate::verdict::{Counts, Verdict};

/// Whether a report on this output may use colour: it is a terminal and `NO_COLOR`
/// (no-color.org) is unset or empty.
pub fn colour_wanted(is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// How much of a run the terminal report shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// One screen per cause: the causes with the rules of the cells each explains, the failing
    /// cells no cause explains grouped by rule (its remedy once), the undecided cells by reason,
    /// the documented limitations by rule, the tables and the totals. The files hold the rest.
    #[default]
    Summary,
    /// Also every failing cell with its observation, remedy, evidence and reproduce command, and
    /// every noted cell with its documented text.
    Full,
    /// The diagnosis alone (`mixcheck diagnose`): the causes, the failing cells no cause
    /// explains by rule, and the gate.
    Diagnosis,
}

/// How wide the compact lists are filled, and how many lines each may take.
const LIST_WIDTH: usize = 96;
const LIST_LINES: usize = 3;

/// The terminal report of a run.
pub fn render(report: &RunReport, colour: bool, detail: Detail) -> String {
    let strict = report.strict;
    let paint = |v: Verdict, text: &str| -> String {
        if !colour {
            return text.to_string();
        }
        let code = match v {
            Verdict::Fail | Verdict::Error => "31",
            Verdict::Warn | Verdict::KnownLimitation => "33",
            Verdict::Pass | Verdict::BetterThanDocumented => "32",
            Verdict::NotApplicable | Verdict::Indeterminate => "2",
        };
        format!("\u{1b}[{code}m{text}\u{1b}[0m")
    };
    let mut out = String::new();
    for line in header(report) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');

    let diagnosis = tally::diagnosis(report);
    let failing: Vec<&Cell> = report.gate_failures(strict).collect();
    if let Some(d) = diagnosis {
        causes(d, report, &paint, &mut out);
    }
    // The failing cells no cause explains (all of them when the run was not diagnosed), by rule.
    let unexplained: Vec<&Cell> = failing
        .iter()
        .copied()
        .filter(|c| diagnosis.is_none_or(|d| d.cause_of(&c.id).is_none()))
        .collect();
    if !unexplained.is_empty() {
        let title = if diagnosis.is_some() {
            "FAILURES NO KNOWN CAUSE EXPLAINS"
        } else {
            "FAILURES"
        };
        out.push_str(&format!("{title} ({} by rule)\n", cells_word(unexplained.len())));
        for group in groups::by_rule(unexplained.iter().copied()) {
            rule_group(&group, &paint, &mut out);
        }
        out.push('\n');
    }
    if detail == Detail::Full && !failing.is_empty() {
        out.push_str(&format!("EVERY FAILING CELL ({})\n", failing.len()));
        for c in &failing {
            failure(c, diagnosis, &paint, &mut out);
        }
        out.push('\n');
    }

    if detail == Detail::Diagnosis {
        if diagnosis.is_none() {
            out.push_str("No failing cell: nothing to diagnose.\n");
        }
        out.push_str(&gate_line(report, &paint));
        return out;
    }

    let undecided = tally::undecided(report);
    if !undecided.is_empty() {
        out.push_str(&format!(
            "UNDECIDED ({} indeterminate: a fact the check needs is unknown)\n",
            cells_word(undecided.len())
        ));
        for (reason, cells) in groups::by_reason(undecided) {
            out.push_str(&format!("  {}\n", paint(Verdict::Indeterminate, &reason)));
            for line in groups::compact_rules(&cells, LIST_WIDTH, LIST_LINES) {
                out.push_str(&format!("    {line}\n"));
            }
        }
        out.push('\n');
    }

    let limited = tally::noted(report);
    if !limited.is_empty() {
        noted(&limited, detail, &paint, &mut out);
    }

    // Per suite.
    let mut by_suite: BTreeMap<&str, Counts> = BTreeMap::new();
    for c in &report.cells {
        by_suite.entry(c.suite.as_str()).or_default().add(c.verdict);
    }
    if !by_suite.is_empty() {
        out.push_str(&counts_table(
            "suite",
            by_suite.iter().map(|(k, v)| ((*k).to_string(), *v)),
            &paint,
        ));
    }

    // Per OS pool: node pools only; DNS, outside addresses and the same pod are destinations.
    let by_pool: Vec<(String, Counts)> = tally::by_pool(report)
        .into_iter()
        .filter(|(pool, _)| tally::is_node_pool(pool))
        .collect();
    if !by_pool.is_empty() {
        for (pool, counts) in &by_pool {
            let Some(name) = pool_name(pool) else {
                continue;
            };
            out.push_str(&paint(
                if tally::documented(counts).0 == tally::documented(counts).1 {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                },
                &format!("{name} pool: {}", tally::pool_line(counts)),
            ));
            out.push('\n');
        }
        out.push_str("(a flow between two pools counts in both)\n\n");
        out.push_str(&counts_table("OS pool", by_pool.into_iter(), &paint));
    }

    // Flow matrix.
    if let Some(grid) = tally::flow_grid(report) {
        let mut b = Builder::default();
        let mut head = vec!["source \\ destination".to_string()];
        head.extend(grid.destinations.iter().cloned());
        b.push_record(head);
        for s in &grid.sources {
            let mut row = vec![s.clone()];
            for d in &grid.destinations {
                row.push(match grid.cells.get(&(s.clone(), d.clone())) {
                    None => String::new(),
                    Some(counts) => {
                        let (ok, judged) = tally::documented(counts);
                        paint(tally::worst(counts), &format!("{ok}/{judged}"))
                    }
                });
            }
            b.push_record(row);
        }
        let mut table = b.build();
        table.with(Style::rounded());
        out.push_str(
            "flows from OS pools to OS pools and destinations (as documented / judged; worst verdict's colour)\n",
        );
        out.push_str(&table.to_string());
        out.push_str("\n\n");
    }

    let counts = report.counts();
    let totals: Vec<String> = Verdict::ALL
        .into_iter()
        .map(|v| paint(v, &format!("{} {}", counts.get(v), v.as_str())))
        .collect();
    out.push_str(&format!("totals: {}\n", totals.join(", ")));
    out.push_str(&format!(
        "{} cells of {} rules, wall time {}\n",
        report.cells.len(),
        report.rule_count(),
        wall_time(report.duration_ms)
    ));
    if let Some(line) = report.coverage.as_ref().and_then(crate::coverage::Coverage::line) {
        out.push_str(&format!("coverage: {line}\n"));
    }
    out.push_str(&gate_line(report, &paint));
    if detail == Detail::Summary && (!failing.is_empty() || !limited.is_empty()) {
        out.push_str("(every cell with its evidence: report.md and report.html; --details lists them here)\n");
    }
    out
}

/// `gate: passed` or `gate: FAILED` (with why), painted, on its own line.
fn gate_line(report: &RunReport, paint: &dyn Fn(Verdict, &str) -> String) -> String {
    let gate = if report.aborted.is_some() {
        paint(Verdict::Error, "gate: FAILED (run aborted)")
    } else if report.gate_passed(report.strict) {
        paint(Verdict::Pass, "gate: passed")
    } else {
        paint(Verdict::Fail, "gate: FAILED")
    };
    format!("{gate}\n")
}

/// `1 cell`, `N cells`.
fn cells_word(n: usize) -> String {
    format!("{n} cell{}", if n == 1 { "" } else { "s" })
}

/// The failing cells of one rule: verdicts, rule, title and where; one observation; the
/// rule's remedies once.
fn rule_group(group: &groups::RuleGroup<'_>, paint: &dyn Fn(Verdict, &str) -> String, out: &mut String) {
    let first = group.cells[0];
    let worst = group
        .cells
        .iter()
        .map(|c| c.verdict)
        .min_by_key(|v| v.rank())
        .unwrap_or(first.verdict);
    out.push_str(&format!(
        "  {} {} — {} ({})\n",
        paint(worst, worst.as_str()),
        group.rule_id,
        one_line(&first.title),
        cells_word(group.cells.len())
    ));
    let places = group.places();
    let places = if places == ["cluster"] {
        Vec::new()
    } else {
        groups::fill(&places, LIST_WIDTH - 12, 2, "place", "places")
    };
    for (i, line) in places.iter().enumerate() {
        let label = if i == 0 { "where:" } else { "" };
        out.push_str(&format!("     {label:<12}{line}\n"));
    }
    out.push_str(&format!(
        "     {:<12}{}\n",
        "observed:",
        one_line(&first.observed.summary)
    ));
    if let Some(reason) = &first.reason
        && !first.observed.summary.contains(reason.as_str())
    {
        out.push_str(&format!("     {:<12}{}\n", "reason:", one_line(reason)));
    }
    out.push_str(&format!(
        "     {:<12}{}\n",
        "documented:",
        one_line(&first.expected.text)
    ));
    for remedy in group.remedies() {
        out.push_str(&format!("     {:<12}{}\n", "remedy:", one_line(remedy)));
    }
}

/// One failing cell in full: observation, documented text, remedy, cause, evidence, reproduce.
fn failure(c: &Cell, diagnosis: Option<&Diagnosis>, paint: &dyn Fn(Verdict, &str) -> String, out: &mut String) {
    out.push_str(&format!(
        "  {} {}\n    {}\n    observed:   {}\n    documented: {}\n",
        paint(c.verdict, c.verdict.as_str()),
        c.id,
        c.title,
        one_line(&c.observed.summary),
        one_line(&c.expected.text)
    ));
    if let Some(r) = &c.remedy {
        out.push_str(&format!("    remedy:     {}\n", one_line(r)));
    }
    if let Some((rank, cause)) = diagnosis.and_then(|d| d.cause_of(&c.id)) {
        out.push_str(&format!(
            "    cause:      {rank}. {} [{}]\n",
            one_line(&cause.title),
            cause.id
        ));
    }
    if let Some(e) = &c.observed.evidence {
        if !e.command.is_empty() {
            out.push_str(&format!("    command:    {}\n", e.command.join(" ")));
        }
        if let Some(code) = e.exit_code {
            out.push_str(&format!("    exit code:  {code}\n"));
        }
        for part in [e.stdout.as_str(), e.stderr.as_str()] {
            if !part.is_empty() {
                out.push_str(&format!("    output:     {}\n", one_line(part)));
            }
        }
        for ev in &e.events {
            out.push_str(&format!(
                "    event:      {} {}: {}\n",
                ev.object,
                ev.reason,
                one_line(ev.message.as_str())
            ));
        }
    }
    if let Some(r) = &c.reproduce {
        out.push_str(&format!("    reproduce:  {r}\n"));
    }
}

/// The cells that pass the gate with a note: by verdict, then by rule — in full one line per
/// cell with its documented text.
fn noted(cells: &[&Cell], detail: Detail, paint: &dyn Fn(Verdict, &str) -> String, out: &mut String) {
    out.push_str(&format!(
        "DOCUMENTED LIMITATIONS AND RECOMMENDATIONS ({})\n",
        cells_word(cells.len())
    ));
    for verdict in [Verdict::Warn, Verdict::KnownLimitation, Verdict::BetterThanDocumented] {
        let of: Vec<&Cell> = cells.iter().copied().filter(|c| c.verdict == verdict).collect();
        if of.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "  {} — {}:\n",
            paint(verdict, verdict.as_str()),
            verdict.label()
        ));
        match detail {
            Detail::Summary | Detail::Diagnosis => {
                for line in groups::compact_rules(&of, LIST_WIDTH, LIST_LINES) {
                    out.push_str(&format!("    {line}\n"));
                }
            }
            Detail::Full => {
                for c in of {
                    out.push_str(&format!("    {} — {}\n", c.id, one_line(&c.expected.text)));
                }
            }
        }
    }
    out.push('\n');
}

/// The likely causes, most likely first: per cause its rank and title (painted as a failure),
/// id, nodes, confidence and how many failing cells it explains, then the remedy, the confirm
/// commands, a few evidence lines and the rule; then the failing cells no cause explains.
fn causes(d: &Diagnosis, report: &RunReport, paint: &dyn Fn(Verdict, &str) -> String, out: &mut String) {
    /// Under a label, one value per line, later ones aligned with the first.
    fn labelled(out: &mut String, label: &str, values: impl IntoIterator<Item = String>) {
        for (i, value) in values.into_iter().enumerate() {
            let label = if i == 0 { label } else { "" };
            out.push_str(&format!("     {label:<12}{value}\n"));
        }
    }
    if d.causes.is_empty() {
        out.push_str("LIKELY CAUSES: no known cause fits\n");
    } else {
        out.push_str(&format!("LIKELY CAUSES ({})\n", d.causes.len()));
    }
    for (i, c) in d.causes.iter().enumerate() {
        out.push_str(&format!(
            "  {} [{}]\n",
            paint(Verdict::Fail, &format!("{}. {}", i + 1, one_line(&c.title))),
            c.id
        ));
        let mut about = format!(
            "     on {} — confidence {}%, explains {}",
            c.location(),
            c.confidence,
            failing_cells(c.explains.len())
        );
        if let Some(against) = c.contradiction() {
            about.push_str(&format!(", {against}"));
        }
        out.push_str(&about);
        out.push('\n');
        labelled(out, "remedy:", [one_line(&c.remedy)]);
        labelled(out, "confirm:", c.confirm.iter().map(|x| one_line(x)));
        let explained: Vec<&Cell> = report
            .cells
            .iter()
            .filter(|cell| c.explains.contains(&cell.id))
            .collect();
        labelled(
            out,
            "cells:",
            groups::compact_rules(&explained, LIST_WIDTH - 17, LIST_LINES),
        );
        let shown = c.evidence.len().min(tally::EVIDENCE_SHOWN);
        let mut evidence: Vec<String> = c.evidence[..shown].iter().map(|x| one_line(x)).collect();
        if c.evidence.len() > shown {
            let more = c.evidence.len() - shown;
            evidence.push(format!(
                "… {more} more line{} in results.json",
                if more == 1 { "" } else { "s" }
            ));
        }
        labelled(out, "evidence:", evidence);
        if let Some(rule) = &c.rule_id {
            let sources = if c.sources.is_empty() {
                String::new()
            } else {
                format!(" (sources {})", c.sources.join(", "))
            };
            labelled(out, "rule:", [format!("{rule}{sources}")]);
        }
    }
    if let Some(line) = d.unexplained_line() {
        out.push_str(&format!("  {} (below, by rule)\n", paint(Verdict::Warn, &line)));
    }
    if let Some(note) = d.confirm_note() {
        out.push_str(&format!("  ({note})\n"));
    }
    out.push('\n');
}

/// The OS a node pool stands for (`windows-20348` → Windows Server 2022), or None for the
/// pseudo-pools of flows (`external`, `cluster-dns`, `same-pod`).
fn pool_name(pool: &str) -> Option<String> {
    if pool == "linux" {
        return Some("Linux".into());
    }
    let build: u32 = pool.strip_prefix("windows-")?.parse().ok()?;
    let release = match build {
        14393 => "Windows Server 2016",
        16299 => "Windows Server version 1709",
        17134 => "Windows Server version 1803",
        17763 => "Windows Server 2019",
        18362 => "Windows Server version 1903",
        18363 => "Windows Server version 1909",
        19041 => "Windows Server version 2004",
        19042 => "Windows Server version 20H2",
        20348 => "Windows Server 2022",
        26100 => "Windows Server 2025",
        _ => return Some(format!("Windows (build {build})")),
    };
    Some(format!("{release} ({build})"))
}

/// Rows of verdict counts under a first column named `what`.
fn counts_table(
    what: &str,
    rows: impl Iterator<Item = (String, Counts)>,
    paint: &dyn Fn(Verdict, &str) -> String,
) -> String {
    let mut b = Builder::default();
    let mut head = vec![what.to_string()];
    head.extend(Verdict::ALL.iter().map(|v| paint(*v, v.as_str())));
    b.push_record(head);
    for (name, counts) in rows {
        let mut row = vec![name];
        row.extend(Verdict::ALL.iter().map(|v| match counts.get(*v) {
            0 => String::new(),
            n => paint(*v, &n.to_string()),
        }));
        b.push_record(row);
    }
    let mut table = b.build();
    table.with(Style::rounded());
    format!("{table}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::every_verdict_report;

    #[test]
    fn pools_are_named_by_their_windows_release() {
        assert_eq!(
            pool_name("windows-20348").as_deref(),
            Some("Windows Server 2022 (20348)")
        );
        assert_eq!(
            pool_name("windows-17763").as_deref(),
            Some("Windows Server 2019 (17763)")
        );
        assert_eq!(pool_name("windows-99999").as_deref(), Some("Windows (build 99999)"));
        assert_eq!(pool_name("linux").as_deref(), Some("Linux"));
        assert_eq!(pool_name("external"), None);
        let text = render(&every_verdict_report(), false, Detail::Full);
        assert!(
            text.contains("Windows Server 2022 (20348) pool: 0 of 1 judged cells as documented"),
            "{text}"
        );
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour_wanted(true, None));
        assert!(colour_wanted(true, Some(std::ffi::OsStr::new(""))));
        assert!(!colour_wanted(true, Some(std::ffi::OsStr::new("1"))));
        assert!(!colour_wanted(false, None));
    }

    #[test]
    fn plain_without_colour_and_painted_with_it() {
        let r = every_verdict_report();
        let plain = render(&r, false, Detail::Full);
        assert!(!plain.contains('\u{1b}'), "{plain}");
        let painted = render(&r, true, Detail::Full);
        assert!(painted.contains("\u{1b}[31mfail\u{1b}[0m"), "{painted}");
        // The same text once the colours are taken out.
        let stripped = strip(&painted);
        assert_eq!(stripped.lines().count(), plain.lines().count());
    }

    #[test]
    fn failures_first_then_limitations_then_tables() {
        let text = render(&every_verdict_report(), false, Detail::Full);
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle}: {text}"));
        assert!(at("LIKELY CAUSES") < at("EVERY FAILING CELL (4)"));
        assert!(at("EVERY FAILING CELL (4)") < at("DOCUMENTED LIMITATIONS"));
        assert!(at("DOCUMENTED LIMITATIONS") < at("│ suite"));
        assert!(at("│ suite") < at("│ OS pool"));
        assert!(text.contains("remedy:     Add the cluster and service CIDRs"));
        assert!(text.contains("reproduce:  kubectl -n mixcheck-20261121-ab12 exec win-client-0"));
        assert!(text.trim_end().ends_with("gate: FAILED"));
    }

    #[test]
    fn causes_show_a_few_evidence_lines_and_count_the_rest() {
        let mut r = every_verdict_report();
        let d = r.diagnosis.as_mut().expect("diagnosed");
        d.causes[1].evidence = (1..=5).map(|i| format!("line {i}")).collect();
        let text = render(&r, false, Detail::Full);
        assert!(
            text.contains("     evidence:   line 1\n                 line 2\n                 line 3\n                 … 2 more lines in results.json\n"),
            "{text}"
        );
        assert!(!text.contains("line 4"), "{text}");
        assert!(text.contains("     confirm:    nslookup kubernetes.default.svc.cluster.local <kube-dns ClusterIP>\n"));
        assert!(text.contains("     rule:       DNS-FQDN (sources W14, WDNS)\n"));
        assert!(
            text.contains("  1 failing cell no known cause explains (below, by rule)\n"),
            "{text}"
        );
        assert!(
            text.contains("FAILURES NO KNOWN CAUSE EXPLAINS (1 cell by rule)\n  fail SCHED-RUNTIMECLASS — "),
            "{text}"
        );
        assert!(text.contains("--node-diagnostics runs them"), "{text}");
    }

    #[test]
    fn causes_are_painted_only_with_colour() {
        let r = every_verdict_report();
        let painted = render(&r, true, Detail::Full);
        assert!(
            painted.contains("  \u{1b}[31m1. The sandbox (pause) image is built for another Windows build\u{1b}[0m [pause-image-wrong-build]\n"),
            "{painted}"
        );
        assert!(painted.contains("\u{1b}[33m1 failing cell no known cause explains\u{1b}[0m (below, by rule)"));
        let plain = render(&r, false, Detail::Full);
        assert_eq!(strip(&painted), plain);
    }

    #[test]
    fn only_unexplained_failures_say_no_cause_fits() {
        let mut r = every_verdict_report();
        let d = r.diagnosis.as_mut().expect("diagnosed");
        d.unexplained.extend(d.causes.drain(..).flat_map(|c| c.explains));
        let text = render(&r, false, Detail::Full);
        assert!(
            text.contains(
                "LIKELY CAUSES: no known cause fits\n  4 failing cells no known cause explains (below, by rule)\n"
            ),
            "{text}"
        );
        assert!(!text.contains("    cause:      "), "{text}");
        assert!(!text.contains("confirm commands"), "no cause, no confirm note: {text}");
    }

    fn strip(text: &str) -> String {
        let mut out = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c == '\u{1b}' {
                for d in chars.by_ref() {
                    if d == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }
}
