//! Markdown for a pull request or a GitHub job summary: the gate, counts per verdict, one line
//! per OS pool, the cross-pool flow matrix, failures first (with remedy, evidence and the
//! command that reproduces them), then documented limitations apart.

use std::path::{Path, PathBuf};

use crate::cell::Cell;
use crate::report::RunReport;
use crate::results_json::{self, Error};
use crate::summary::{header, one_line, wall_time};
use crate::tally;
use crate::verdict::Verdict;

/// The file name in the report folder.
pub const FILE_NAME: &str = "report.md";

/// The Markdown report of a run.
pub fn render(report: &RunReport) -> String {
    let strict = report.strict;
    let mut out = String::new();
    let gate = if report.gate_passed(strict) {
        "✅ gate passed"
    } else {
        "❌ gate failed"
    };
    out.push_str(&format!("## mixcheck: {gate}\n\n"));
    for line in header(report) {
        out.push_str(&format!("{}  \n", escape(&line)));
    }
    out.push_str(&format!(
        "{} cells of {} rules, wall time {}\n\n",
        report.cells.len(),
        report.rule_count(),
        wall_time(report.duration_ms)
    ));
    out.push_str("| verdict | cells |\n|---|---:|\n");
    let counts = report.counts();
    for v in Verdict::ALL {
        out.push_str(&format!("| {} | {} |\n", v.as_str(), counts.get(v)));
    }
    out.push('\n');
    pools(report, &mut out);
    matrix(report, &mut out);
    let failing: Vec<&Cell> = report.gate_failures(strict).collect();
    if !failing.is_empty() {
        out.push_str(&format!("### Failures ({})\n\n", failing.len()));
        for cell in failing {
            failure(cell, &mut out);
        }
    }
    let limited = tally::noted(report);
    if !limited.is_empty() {
        out.push_str(&format!(
            "### Documented limitations, recommendations and better than documented ({})\n\n",
            limited.len()
        ));
        for c in limited {
            out.push_str(&format!(
                "- **{}** `{}` — {} (documented: {})\n",
                c.verdict.as_str(),
                c.id,
                escape(&one_line(&c.observed.summary)),
                escape(&one_line(&c.expected.text))
            ));
        }
        out.push('\n');
    }
    out
}

/// Renders and writes `report.md` into `dir` atomically.
pub fn write(report: &RunReport, dir: &Path) -> Result<PathBuf, Error> {
    results_json::write_atomically(dir, FILE_NAME, render(report).as_bytes())
}

/// One line per OS pool: how many of the cells that touch it are as documented.
fn pools(report: &RunReport, out: &mut String) {
    let by_pool = tally::by_pool(report);
    if by_pool.is_empty() {
        return;
    }
    out.push_str("| OS pool | as documented | fail | error | judged |\n|---|---:|---:|---:|---:|\n");
    for (pool, counts) in &by_pool {
        let (documented, judged) = tally::documented(counts);
        out.push_str(&format!(
            "| {} | {documented}/{judged} | {} | {} | {judged} |\n",
            pool_label(pool),
            counts.get(Verdict::Fail),
            counts.get(Verdict::Error)
        ));
    }
    out.push('\n');
}

/// The cross-pool flow matrix: source pool × destination pool, the worst verdict of the flows
/// between them and how many were as documented.
fn matrix(report: &RunReport, out: &mut String) {
    let Some(grid) = tally::flow_grid(report) else {
        return;
    };
    out.push_str("### Flows between pools (source ↓ × destination →)\n\n| |");
    for d in &grid.destinations {
        out.push_str(&format!(" {} |", pool_label(d)));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(grid.destinations.len()));
    out.push('\n');
    for s in &grid.sources {
        out.push_str(&format!("| **{}** |", pool_label(s)));
        for d in &grid.destinations {
            match grid.cells.get(&(s.clone(), d.clone())) {
                None => out.push_str(" |"),
                Some(counts) => {
                    let (ok, judged) = tally::documented(counts);
                    let mark = match tally::worst(counts) {
                        Verdict::Fail | Verdict::Error => "❌",
                        Verdict::Warn | Verdict::KnownLimitation => "⚠️",
                        Verdict::BetterThanDocumented | Verdict::Pass => "✅",
                        Verdict::NotApplicable | Verdict::Indeterminate => "➖",
                    };
                    out.push_str(&format!(" {mark} {ok}/{judged} |"));
                }
            }
        }
        out.push('\n');
    }
    out.push_str("\n✅ as documented · ⚠️ documented limitation or recommendation · ❌ fails · ➖ not judged\n\n");
}

fn failure(cell: &Cell, out: &mut String) {
    out.push_str(&format!(
        "#### ❌ {} `{}`\n\n{}\n\n- **observed:** {}\n- **documented:** {}\n",
        cell.verdict.as_str(),
        cell.id,
        escape(&cell.title),
        escape(&one_line(&cell.observed.summary)),
        escape(&one_line(&cell.expected.text))
    ));
    if let Some(reason) = &cell.reason {
        out.push_str(&format!("- **reason:** {}\n", escape(&one_line(reason))));
    }
    if let Some(remedy) = &cell.remedy {
        out.push_str(&format!("- **remedy:** {}\n", escape(&one_line(remedy))));
    }
    if !cell.sources.is_empty() {
        out.push_str(&format!("- **sources:** {}\n", cell.sources.join(", ")));
    }
    if !cell.nodes.is_empty() {
        let nodes: Vec<String> = cell.nodes.iter().map(|n| format!("{} ({})", n.name, n.os)).collect();
        out.push_str(&format!("- **nodes:** {}\n", nodes.join(", ")));
    }
    if let Some(r) = &cell.reproduce {
        out.push_str(&format!("- **reproduce:**\n\n  ```sh\n  {r}\n  ```\n"));
    }
    if let Some(e) = &cell.observed.evidence {
        let mut text = String::new();
        if !e.command.is_empty() {
            text.push_str(&format!("$ {}\n", e.command.join(" ")));
        }
        if let Some(code) = e.exit_code {
            text.push_str(&format!("(exit code {code})\n"));
        }
        for part in [e.stdout.as_str(), e.stderr.as_str()] {
            if !part.is_empty() {
                text.push_str(part);
                text.push('\n');
            }
        }
        for ev in &e.events {
            text.push_str(&format!(
                "{} {} {}: {}\n",
                ev.object, ev.event_type, ev.reason, ev.message
            ));
        }
        if !text.is_empty() {
            out.push_str(&format!(
                "\n<details><summary>evidence</summary>\n\n```text\n{}```\n\n</details>\n",
                text.replace("```", "`\u{200b}``")
            ));
        }
    }
    out.push('\n');
}

/// `windows-20348` → `Windows (build 20348)`; `linux` → `Linux`; others as they are.
fn pool_label(pool: &str) -> String {
    match pool.strip_prefix("windows-") {
        Some(build) => format!("Windows {build}"),
        None if pool == "linux" => "Linux".to_string(),
        None => pool.to_string(),
    }
}

/// Characters Markdown would read as markup or table syntax, escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        if matches!(ch, '|' | '*' | '_' | '`' | '<' | '>' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{Coordinates, Pool};
    use crate::testdata::{cell, sample_report};

    fn flow(src: &str, dst: &str, verdict: Verdict) -> Cell {
        let mut c = cell("network-flows", "pod-ip", "NET-POD-POD-IP-CROSS", "v", verdict);
        c.coordinates = Coordinates {
            source: Some(Pool::named(src)),
            destination: Some(Pool::named(dst)),
            ..Default::default()
        };
        c
    }

    #[test]
    fn failures_come_first_with_their_remedy_and_reproduce_command() {
        let mut r = sample_report();
        let mut bad = flow("windows-20348", "linux", Verdict::Fail);
        bad.remedy = Some("Set-VMNetworkAdapter -MacAddressSpoofing On".into());
        bad.reproduce = Some("kubectl exec -n ns cli-3 -- curl.exe -s http://10.244.1.5:8080/hostname".into());
        r.cells.push(bad);
        let md = render(&r);
        assert!(md.starts_with("## mixcheck: ❌ gate failed"), "{md}");
        let failures = md.find("### Failures").expect("a failures section");
        let limits = md.find("### Documented limitations");
        assert!(limits.is_none_or(|l| l > failures), "failures first");
        assert!(md.contains("MacAddressSpoofing On"));
        assert!(md.contains("```sh\n  kubectl exec -n ns cli-3"));
    }

    #[test]
    fn the_flow_matrix_shows_the_worst_of_each_pool_pair() {
        let mut r = sample_report();
        r.cells = vec![
            flow("linux", "windows-20348", Verdict::Pass),
            flow("linux", "windows-20348", Verdict::Fail),
            flow("windows-20348", "linux", Verdict::Pass),
            flow("windows-20348", "external", Verdict::KnownLimitation),
        ];
        let md = render(&r);
        let row = |name: &str| {
            md.lines()
                .find(|l| l.starts_with(&format!("| **{name}**")))
                .unwrap_or_default()
                .to_string()
        };
        assert!(row("Linux").contains("❌ 1/2"), "{md}");
        assert!(row("Windows 20348").contains("✅ 1/1"), "{md}");
        assert!(row("Windows 20348").contains("⚠️ 1/1"), "{md}");
        assert!(md.contains("| Windows 20348 | 3/4 | 1 | 0 | 4 |"), "{md}");
    }

    #[test]
    fn markup_in_observations_is_escaped() {
        let mut r = sample_report();
        let mut c = flow("linux", "linux", Verdict::KnownLimitation);
        c.observed.summary = "a | b *c* <script>".into();
        r.cells = vec![c];
        let md = render(&r);
        assert!(md.contains(r"a \| b \*c\* \<script\>"), "{md}");
    }
}
