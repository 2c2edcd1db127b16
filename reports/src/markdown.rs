//! Markdown for a pull request or a GitHub job summary: the gate, then the diagnosis first (the
//! likely causes, ranked, each with its nodes, confidence, the failing cells it explains,
//! remedy, confirm commands and a few evidence lines; the failing cells no known cause
//! explains), counts per verdict, one line per OS pool, the
//! cross-pool flow matrix, the failures (with remedy, likely cause, evidence and the command
//! that reproduces them), then documented limitations apart.

use std::path::{Path, PathBuf};

use crate::cell::Cell;
use crate::diagnosis::{Diagnosis, failing_cells};
use crate::evidence::one_line;
use crate::report::RunReport;
use crate::results_json::{self, Error};
use crate::summary::{header, wall_time};
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
    if let Some(diff) = &report.baseline {
        out.push_str(&diff.render_markdown());
    }
    let diagnosis = tally::diagnosis(report);
    if let Some(d) = diagnosis {
        causes(d, &mut out);
    }
    out.push_str("| verdict | cells |\n|---|---:|\n");
    let counts = report.counts();
    for v in Verdict::ALL {
        out.push_str(&format!("| {} | {} |\n", v.as_str(), counts.get(v)));
    }
    out.push('\n');
    pools(report, &mut out);
    coverage(report, &mut out);
    matrix(report, &mut out);
    let failing: Vec<&Cell> = report.gate_failures(strict).collect();
    if !failing.is_empty() {
        out.push_str(&format!(
            "### Failures ({}, by rule; every cell with its evidence is in report.html and results.json)\n\n",
            failing.len()
        ));
        for group in crate::groups::by_rule(failing) {
            failure(&group, diagnosis, &mut out);
        }
    }
    let undecided = tally::undecided(report);
    if !undecided.is_empty() {
        out.push_str(&format!(
            "### Undecided ({}: a fact the check needs is unknown)\n\n",
            undecided.len()
        ));
        for (reason, cells) in crate::groups::by_reason(undecided) {
            let ids: Vec<String> = cells.iter().map(|c| code(c.id.as_str())).collect();
            out.push_str(&format!("- {}: {}\n", escape(&reason), ids.join(", ")));
        }
        out.push('\n');
    }
    let limited = tally::noted(report);
    if !limited.is_empty() {
        out.push_str(&format!(
            "### Documented limitations, recommendations and better than documented ({})\n\n",
            limited.len()
        ));
        for c in limited {
            out.push_str(&format!(
                "- **{}** `{}` — {}: {} (documented: {})\n",
                c.verdict.as_str(),
                c.id,
                c.verdict.label(),
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
    for (pool, counts) in by_pool.iter().filter(|(pool, _)| tally::is_node_pool(pool)) {
        let (documented, judged) = tally::documented(counts);
        out.push_str(&format!(
            "| {} | {documented}/{judged} | {} | {} | {judged} |\n",
            pool_label(pool),
            counts.get(Verdict::Fail),
            counts.get(Verdict::Error)
        ));
    }
    out.push_str(
        "\n_judged leaves out not-applicable and indeterminate cells; a flow between two pools counts in both._\n\n",
    );
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

/// The likely causes, most likely first, then the failing cells no cause explains. The
/// evidence gathered per node is left to results.json and report.html (a job summary is no place
/// for agent logs).
fn causes(d: &Diagnosis, out: &mut String) {
    out.push_str("### Likely causes\n\n");
    if d.causes.is_empty() {
        out.push_str("No known cause fits the failing cells.\n\n");
    }
    for (i, c) in d.causes.iter().enumerate() {
        let marker = format!("{}. ", i + 1);
        let pad = " ".repeat(marker.len());
        out.push_str(&format!(
            "{marker}**{}** {} on {} — confidence {}%, explains {}",
            escape(&one_line(&c.title)),
            code(&c.id),
            escape(&c.location()),
            c.confidence,
            failing_cells(c.explains.len())
        ));
        if let Some(against) = c.contradiction() {
            out.push_str(&format!(", {against}"));
        }
        out.push('\n');
        out.push_str(&format!("{pad}- **remedy:** {}\n", inline(&one_line(&c.remedy))));
        if !c.confirm.is_empty() {
            out.push_str(&format!("{pad}- **confirm:**\n"));
            for command in &c.confirm {
                out.push_str(&format!("{pad}  - {}\n", code(&one_line(command))));
            }
        }
        if !c.evidence.is_empty() {
            out.push_str(&format!("{pad}- **evidence:**\n"));
            for line in c.evidence.iter().take(tally::EVIDENCE_SHOWN) {
                out.push_str(&format!("{pad}  - {}\n", escape(&one_line(line))));
            }
            let more = c.evidence.len().saturating_sub(tally::EVIDENCE_SHOWN);
            if more > 0 {
                out.push_str(&format!(
                    "{pad}  - … {more} more line{} in results.json and report.html\n",
                    if more == 1 { "" } else { "s" }
                ));
            }
        }
        if let Some(rule) = &c.rule_id {
            out.push_str(&format!("{pad}- **rule:** {}", escape(rule)));
            if !c.sources.is_empty() {
                out.push_str(&format!(" (sources {})", escape(&c.sources.join(", "))));
            }
            out.push('\n');
        }
        if !c.contradicted_by.is_empty() {
            let ids: Vec<String> = c.contradicted_by.iter().map(|id| code(id.as_str())).collect();
            out.push_str(&format!("{pad}- **contradicted by:** {}\n", ids.join(", ")));
        }
    }
    if !d.causes.is_empty() {
        out.push('\n');
    }
    if let Some(line) = d.unexplained_line() {
        let ids: Vec<String> = d.unexplained.iter().map(|id| code(id.as_str())).collect();
        out.push_str(&format!("**{line}:** {}\n\n", ids.join(", ")));
    }
    if let Some(note) = d.confirm_note() {
        out.push_str(&format!("_{}_\n\n", escape(note)));
    }
}

/// The failing cells of one rule: its title and documentation once, each cell on one line
/// (where, what was observed, its likely cause), the rule's remedies once, the sources, and a
/// reproduce command and evidence (of the first cell that has them) folded.
fn failure(group: &crate::groups::RuleGroup<'_>, diagnosis: Option<&Diagnosis>, out: &mut String) {
    let first = group.cells[0];
    out.push_str(&format!(
        "#### ❌ `{}` — {} ({})\n\n- **documented:** {}\n",
        group.rule_id,
        escape(&first.title),
        if group.cells.len() == 1 {
            "1 cell".to_string()
        } else {
            format!("{} cells", group.cells.len())
        },
        escape(&one_line(&first.expected.text))
    ));
    for remedy in group.remedies() {
        out.push_str(&format!("- **remedy:** {}\n", escape(&one_line(remedy))));
    }
    if !first.sources.is_empty() {
        out.push_str(&format!("- **sources:** {}\n", first.sources.join(", ")));
    }
    out.push('\n');
    for cell in &group.cells {
        out.push_str(&format!(
            "- {} `{}`: {}",
            cell.verdict.as_str(),
            cell.id,
            escape(&one_line(&cell.observed.summary))
        ));
        if let Some(reason) = &cell.reason
            && !cell.observed.summary.contains(reason.as_str())
        {
            out.push_str(&format!(" — {}", escape(&one_line(reason))));
        }
        if !cell.nodes.is_empty() {
            let nodes: Vec<&str> = cell.nodes.iter().map(|n| n.name.as_str()).collect();
            out.push_str(&format!(" (on {})", nodes.join(", ")));
        }
        if let Some((rank, cause)) = diagnosis.and_then(|d| d.cause_of(&cell.id)) {
            out.push_str(&format!(" — likely cause {rank}: {}", code(&cause.id)));
        }
        out.push('\n');
    }
    if let Some((cell, r)) = group.cells.iter().find_map(|c| c.reproduce.as_ref().map(|r| (c, r))) {
        out.push_str(&format!(
            "\n<details><summary>reproduce <code>{}</code></summary>\n\n```sh\n{r}\n```\n\n</details>\n",
            escape(cell.id.as_str())
        ));
    }
    if let Some((first, e)) = group
        .cells
        .iter()
        .find_map(|c| c.observed.evidence.as_ref().map(|e| (c, e)))
    {
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
                "\n<details><summary>evidence of <code>{}</code></summary>\n\n```text\n{}```\n\n</details>\n",
                escape(first.id.as_str()),
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

/// Text as an inline code span, whatever backticks it holds.
fn code(text: &str) -> String {
    if text.contains('`') {
        // A longer fence than any run of backticks inside, padded so that a backtick at either
        // end is not read as part of the fence.
        let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        let fence = "`".repeat(longest + 1);
        format!("{fence} {text} {fence}")
    } else {
        format!("`{text}`")
    }
}

/// Prose that marks code with backticks, as the cause catalogue's remedies do: the quoted parts
/// become code spans, the rest is escaped. Unbalanced backticks are escaped like any markup.
fn inline(text: &str) -> String {
    if text.matches('`').count() % 2 == 1 {
        return escape(text);
    }
    text.split('`')
        .enumerate()
        .map(|(i, part)| match (i % 2, part.is_empty()) {
            (1, false) => code(part),
            (1, true) => String::new(),
            _ => escape(part),
        })
        .collect()
}

/// Characters Markdown would read as markup or table syntax, escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        // A backslash is literal in CommonMark unless ASCII punctuation or a line end follows
        // it: `C:\var\lib` stays as it reads, and only `\*` or a trailing `\` needs escaping.
        let escaped = match ch {
            '|' | '*' | '_' | '`' | '<' | '>' | '[' | ']' => true,
            '\\' => chars
                .peek()
                .is_none_or(|next| next.is_ascii_punctuation() || *next == '\n'),
            _ => false,
        };
        if escaped {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// Which nodes got every check and which the light ones, when the run sampled.
fn coverage(report: &RunReport, out: &mut String) {
    use crate::coverage::Level;
    let Some(c) = &report.coverage else {
        return;
    };
    let Some(line) = c.line() else {
        return;
    };
    out.push_str(&format!("### Coverage\n\n{}\n\n", escape(&line)));
    out.push_str("| level | pool | fact set | nodes |\n|---|---|---|---|\n");
    let mut rows: std::collections::BTreeMap<(Level, &str, &str), Vec<&str>> = std::collections::BTreeMap::new();
    for n in &c.nodes {
        rows.entry((n.level, n.pool.as_str(), n.fact_set.as_str()))
            .or_default()
            .push(n.node.as_str());
    }
    for ((level, pool, set), nodes) in rows {
        let shown: Vec<&str> = nodes.iter().take(8).copied().collect();
        let more = if nodes.len() > shown.len() {
            format!(" and {} more", nodes.len() - shown.len())
        } else {
            String::new()
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} ({}){more} |\n",
            level.as_str(),
            escape(pool),
            escape(set),
            nodes.len(),
            escape(&shown.join(", "))
        ));
    }
    out.push('\n');
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

    /// Windows paths read as they are; only what Markdown would take as markup is escaped.
    #[rstest::rstest]
    #[case(r"C:\var\lib\kubelet", r"C:\var\lib\kubelet")]
    #[case(r"a\*b*", r"a\\\*b\*")]
    #[case(r"ends with \", r"ends with \\")]
    #[case("a|b [c]", r"a\|b \[c\]")]
    fn escapes_markup_not_paths(#[case] text: &str, #[case] want: &str) {
        assert_eq!(escape(text), want);
    }

    #[test]
    fn failures_come_first_with_their_remedy_and_reproduce_command() {
        let mut r = sample_report();
        // The only failing cell of its rule: its reproduce command is the rule's.
        r.cells.retain(|c| c.rule_id != "NET-POD-POD-IP-CROSS");
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
        assert!(md.contains("```sh\nkubectl exec -n ns cli-3"), "{md}");
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
    fn the_causes_come_first_with_remedy_confirm_and_a_few_evidence_lines() {
        let mut r = sample_report();
        let d = r.diagnosis.as_mut().expect("diagnosed");
        d.causes[0].evidence = (1..=5).map(|i| format!("line {i}")).collect();
        let md = render(&r);
        let at = |needle: &str| md.find(needle).unwrap_or_else(|| panic!("{needle}: {md}"));
        assert!(
            at("### Likely causes") < at("| verdict | cells |"),
            "right after the header"
        );
        assert!(at("### Likely causes") < at("### Failures"));
        assert!(md.contains("\n1. **The sandbox (pause) image is built for another Windows build** `pause-image-wrong-build` on win2022-1 — confidence 67%, explains 2 failing cells, 1 cell speaks against it\n"), "{md}");
        assert!(
            md.contains("\n     - `Get-Content 'C:\\Program Files\\containerd\\config.toml'`\n"),
            "{md}"
        );
        assert!(
            md.contains("     - line 3\n     - … 2 more lines in results.json and report.html\n"),
            "{md}"
        );
        assert!(!md.contains("line 4"), "{md}");
        assert!(md.contains("(`sandbox` in config v3)"), "quoted code stays code: {md}");
        assert!(
            md.contains("**1 failing cell no known cause explains:** `sched/SCHED-RUNTIMECLASS[windows-20348]`"),
            "{md}"
        );
        assert!(
            !md.contains("evidence gathered from the nodes"),
            "node logs stay out: {md}"
        );
    }

    #[test]
    fn a_tenth_cause_indents_its_details_under_it() {
        let mut r = sample_report();
        let d = r.diagnosis.as_mut().expect("diagnosed");
        let first = d.causes[0].clone();
        d.causes = (0..10).map(|_| first.clone()).collect();
        let md = render(&r);
        assert!(md.contains("\n10. **The sandbox"), "{md}");
        assert!(md.contains("\n    - **remedy:** "), "{md}");
    }

    #[test]
    fn markup_in_causes_is_escaped() {
        let mut r = sample_report();
        let d = r.diagnosis.as_mut().expect("diagnosed");
        d.causes[0].title = "a | b *c* <script>".into();
        d.causes[0].evidence[0] = "[link](http://x) _u_".into();
        let md = render(&r);
        assert!(md.contains(r"**a \| b \*c\* \<script\>**"), "{md}");
        assert!(md.contains(r"\[link\](http://x) \_u\_"), "{md}");
    }

    #[rstest::rstest]
    #[case::plain("Get-HnsNetwork", "`Get-HnsNetwork`")]
    #[case::backtick("Write-Host `n", "`` Write-Host `n ``")]
    #[case::double("a``b", "``` a``b ```")]
    fn code_spans_hold_any_backticks(#[case] text: &str, #[case] want: &str) {
        assert_eq!(code(text), want);
    }

    #[rstest::rstest]
    #[case::code("run `a <b>` now", "run `a <b>` now")]
    #[case::unbalanced("a ` b", r"a \` b")]
    #[case::outside("x_y <vm>", r"x\_y \<vm\>")]
    fn remedies_mark_quoted_code(#[case] text: &str, #[case] want: &str) {
        assert_eq!(inline(text), want);
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
