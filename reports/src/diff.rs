//! A run compared with a baseline run ([`compare`] → [`Diff`]): cell by cell, matched by the
//! stable [`CellId`] (suite, rule, source and destination pools, locality, protocol, variant —
//! never node names, so a baseline survives node replacement). A *regression* is a cell that
//! now fails the gate and did not fail it that way before (pass → fail, known-limitation →
//! fail, any → error) or a new cell that fails; an *improvement* one that no longer fails the
//! gate or whose verdict got better (a documented limitation now better than documented).
//! `mixcheck run --baseline` gates on regressions only; `mixcheck diff` prints the comparison.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::cell::{Cell, CellId};
use crate::verdict::Verdict;

/// What happened to one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// Now fails the gate, and did not fail it that way before (or is new and failing).
    Regression,
    /// No longer fails the gate, or its verdict got better.
    Improvement,
    /// Failed the gate before and still does the same way: a known failure.
    KnownFailure,
    /// Another verdict that neither fails the gate nor is better (e.g. pass → not-applicable).
    Changed,
    /// Only in the new run (and not failing).
    New,
    /// Only in the baseline.
    Removed,
    /// The same verdict.
    Unchanged,
}

impl Change {
    /// The serialised name.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Regression => "regression",
            Change::Improvement => "improvement",
            Change::KnownFailure => "known-failure",
            Change::Changed => "changed",
            Change::New => "new",
            Change::Removed => "removed",
            Change::Unchanged => "unchanged",
        }
    }
}

/// One cell's verdicts in both runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellChange {
    /// The cell's stable id.
    pub id: CellId,
    /// Its rule.
    pub rule_id: String,
    /// Its source pool (or `-` for cells without one).
    pub pool: String,
    /// The baseline's verdict (None: a new cell).
    pub before: Option<Verdict>,
    /// The new run's verdict (None: a removed cell).
    pub after: Option<Verdict>,
    /// What it means for the gate.
    pub change: Change,
}

/// A run compared with its baseline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diff {
    /// The baseline's run id.
    pub baseline_run: String,
    /// Whether the gate was judged with `--strict` (known limitations and warnings fail it).
    pub strict: bool,
    /// Every cell of either run that did not keep its verdict, and the known failures, in id
    /// order.
    pub cells: Vec<CellChange>,
    /// How many cells kept their verdict.
    pub unchanged: usize,
}

/// What one cell's verdicts mean under the gate.
pub fn classify(before: Option<Verdict>, after: Option<Verdict>, strict: bool) -> Change {
    let fails = |v: Verdict| v.fails_gate(strict);
    match (before, after) {
        (None, None) => Change::Unchanged,
        (None, Some(a)) if fails(a) => Change::Regression,
        (None, Some(_)) => Change::New,
        (Some(_), None) => Change::Removed,
        (Some(b), Some(a)) if a == b => {
            if fails(a) {
                Change::KnownFailure
            } else {
                Change::Unchanged
            }
        }
        (Some(b), Some(a)) => {
            if fails(a) && (!fails(b) || a == Verdict::Error) {
                Change::Regression
            } else if fails(a) {
                // fail ↔ error the other way, known-limitation → fail under --strict, …: it
                // failed the gate before too.
                Change::KnownFailure
            } else if fails(b) || better(b, a) {
                Change::Improvement
            } else {
                Change::Changed
            }
        }
    }
}

/// Whether `after` is a better judgement than `before` where neither fails the gate: a
/// documented limitation now better than documented, a warning now followed.
fn better(before: Verdict, after: Verdict) -> bool {
    matches!(
        (before, after),
        (Verdict::KnownLimitation, Verdict::BetterThanDocumented | Verdict::Pass) | (Verdict::Warn, Verdict::Pass)
    )
}

fn pool_of(cell: &Cell) -> String {
    cell.coordinates
        .source
        .as_ref()
        .map_or_else(|| "-".to_string(), |p| p.as_str().to_string())
}

/// Compares the cells of a new run with those of `baseline_run`, judging the gate with
/// `strict` ([`crate::RunReport::against`] for whole reports).
pub fn compare(baseline_run: &str, baseline: &[Cell], new: &[Cell], strict: bool) -> Diff {
    let mut by_id: BTreeMap<&CellId, (Option<&Cell>, Option<&Cell>)> = BTreeMap::new();
    for c in baseline {
        by_id.entry(&c.id).or_default().0 = Some(c);
    }
    for c in new {
        by_id.entry(&c.id).or_default().1 = Some(c);
    }
    let mut diff = Diff {
        baseline_run: baseline_run.to_string(),
        strict,
        ..Diff::default()
    };
    for (id, (before, after)) in by_id {
        let change = classify(before.map(|c| c.verdict), after.map(|c| c.verdict), strict);
        if change == Change::Unchanged {
            diff.unchanged += 1;
            continue;
        }
        let Some(cell) = after.or(before) else { continue };
        diff.cells.push(CellChange {
            id: id.clone(),
            rule_id: cell.rule_id.clone(),
            pool: pool_of(cell),
            before: before.map(|c| c.verdict),
            after: after.map(|c| c.verdict),
            change,
        });
    }
    diff
}

impl Diff {
    /// The cells of one kind of change.
    pub fn of(&self, change: Change) -> impl Iterator<Item = &CellChange> + '_ {
        self.cells.iter().filter(move |c| c.change == change)
    }

    /// Whether the new run regressed: the gate against the baseline fails.
    pub fn regressed(&self) -> bool {
        self.of(Change::Regression).next().is_some()
    }

    /// Counts of changes per key (rule id or pool), for the summary tables.
    pub fn counts_by(&self, key: impl Fn(&CellChange) -> &str) -> BTreeMap<String, BTreeMap<Change, usize>> {
        let mut out: BTreeMap<String, BTreeMap<Change, usize>> = BTreeMap::new();
        for c in &self.cells {
            *out.entry(key(c).to_string()).or_default().entry(c.change).or_default() += 1;
        }
        out
    }

    fn verdict(v: Option<Verdict>) -> &'static str {
        v.map_or("—", Verdict::as_str)
    }

    /// A plain-text rendering: the counts, the regressions and improvements cell by cell, then
    /// per rule and per source pool.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let n = |c: Change| self.of(c).count();
        out.push_str(&format!(
            "against baseline run {}: {} regressions, {} improvements, {} known failures, {} changed, {} new, {} removed, {} unchanged\n",
            self.baseline_run,
            n(Change::Regression),
            n(Change::Improvement),
            n(Change::KnownFailure),
            n(Change::Changed),
            n(Change::New),
            n(Change::Removed),
            self.unchanged
        ));
        for change in [
            Change::Regression,
            Change::Improvement,
            Change::KnownFailure,
            Change::Changed,
            Change::New,
            Change::Removed,
        ] {
            let cells: Vec<&CellChange> = self.of(change).collect();
            if cells.is_empty() {
                continue;
            }
            out.push_str(&format!("\n{} ({}):\n", change.as_str().to_uppercase(), cells.len()));
            for c in cells {
                out.push_str(&format!(
                    "  {} {} → {}\n",
                    c.id,
                    Self::verdict(c.before),
                    Self::verdict(c.after)
                ));
            }
        }
        for (title, table) in [
            ("per rule", self.counts_by(|c| c.rule_id.as_str())),
            ("per source pool", self.counts_by(|c| c.pool.as_str())),
        ] {
            if table.is_empty() {
                continue;
            }
            out.push_str(&format!("\n{title}:\n"));
            for (key, counts) in table {
                let parts: Vec<String> = counts.iter().map(|(c, n)| format!("{n} {}", c.as_str())).collect();
                out.push_str(&format!("  {key}: {}\n", parts.join(", ")));
            }
        }
        out
    }

    /// Markdown for a pull request or job summary.
    pub fn render_markdown(&self) -> String {
        let mut out = String::new();
        let n = |c: Change| self.of(c).count();
        let gate = if self.regressed() {
            "❌ regressions"
        } else {
            "✅ no regression"
        };
        out.push_str(&format!(
            "### mixcheck against baseline `{}`: {gate}\n\n| change | cells |\n|---|---:|\n",
            self.baseline_run
        ));
        for c in [
            Change::Regression,
            Change::Improvement,
            Change::KnownFailure,
            Change::Changed,
            Change::New,
            Change::Removed,
        ] {
            out.push_str(&format!("| {} | {} |\n", c.as_str(), n(c)));
        }
        out.push_str(&format!("| unchanged | {} |\n\n", self.unchanged));
        for change in [Change::Regression, Change::Improvement] {
            let cells: Vec<&CellChange> = self.of(change).collect();
            if cells.is_empty() {
                continue;
            }
            out.push_str(&format!(
                "#### {} ({})\n\n| cell | before | after |\n|---|---|---|\n",
                change.as_str(),
                cells.len()
            ));
            for c in cells {
                out.push_str(&format!(
                    "| `{}` | {} | {} |\n",
                    c.id.as_str().replace('|', "\\|"),
                    Self::verdict(c.before),
                    Self::verdict(c.after)
                ));
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::testdata::cell;
    use Verdict::*;

    #[rstest]
    #[case::pass_to_fail(Some(Pass), Some(Fail), false, Change::Regression)]
    #[case::limitation_to_fail(Some(KnownLimitation), Some(Fail), false, Change::Regression)]
    #[case::fail_to_error(Some(Fail), Some(Error), false, Change::Regression)]
    #[case::pass_to_error(Some(Pass), Some(Error), false, Change::Regression)]
    #[case::new_failing(None, Some(Fail), false, Change::Regression)]
    #[case::new_passing(None, Some(Pass), false, Change::New)]
    #[case::removed(Some(Fail), None, false, Change::Removed)]
    #[case::still_failing(Some(Fail), Some(Fail), false, Change::KnownFailure)]
    #[case::error_to_fail(Some(Error), Some(Fail), false, Change::KnownFailure)]
    #[case::fixed(Some(Fail), Some(Pass), false, Change::Improvement)]
    #[case::limitation_lifted(Some(KnownLimitation), Some(BetterThanDocumented), false, Change::Improvement)]
    #[case::warning_followed(Some(Warn), Some(Pass), false, Change::Improvement)]
    #[case::same(Some(Pass), Some(Pass), false, Change::Unchanged)]
    #[case::not_applicable_now(Some(Pass), Some(NotApplicable), false, Change::Changed)]
    #[case::limitation_is_fine(Some(Pass), Some(KnownLimitation), false, Change::Changed)]
    #[case::limitation_fails_strict(Some(Pass), Some(KnownLimitation), true, Change::Regression)]
    #[case::known_limitation_strict(Some(KnownLimitation), Some(KnownLimitation), true, Change::KnownFailure)]
    fn classification(
        #[case] before: Option<Verdict>,
        #[case] after: Option<Verdict>,
        #[case] strict: bool,
        #[case] change: Change,
    ) {
        assert_eq!(classify(before, after, strict), change);
    }

    fn report(cells: &[(&str, Verdict)]) -> crate::RunReport {
        let mut r = crate::testdata::sample_report();
        r.cells = cells
            .iter()
            .map(|(v, verdict)| cell("net", "check", "NET-X", v, *verdict))
            .collect();
        r
    }

    #[test]
    fn cells_match_by_id_and_only_regressions_fail_the_gate() {
        let old = report(&[("a", Pass), ("b", Fail), ("c", KnownLimitation), ("d", Pass)]);
        let new = report(&[("a", Pass), ("b", Fail), ("c", BetterThanDocumented), ("e", Pass)]);
        let d = new.against(&old, false);
        assert!(!d.regressed(), "{d:#?}");
        assert_eq!(d.of(Change::KnownFailure).count(), 1);
        assert_eq!(d.of(Change::Improvement).count(), 1);
        assert_eq!(d.of(Change::Removed).count(), 1);
        assert_eq!(d.of(Change::New).count(), 1);
        assert_eq!(d.unchanged, 1);
        let worse = report(&[("a", Fail), ("b", Fail), ("c", KnownLimitation), ("d", Pass)]);
        let d = worse.against(&old, false);
        assert!(d.regressed());
        let ids: Vec<&str> = d.of(Change::Regression).map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["net/NET-X[a]"]);
        let text = d.render_text();
        assert!(text.starts_with("against baseline run"), "{text}");
        assert!(text.contains("REGRESSION (1):"), "{text}");
        assert!(text.contains("pass → fail"), "{text}");
        assert!(d.render_markdown().contains("❌ regressions"));
    }
}
