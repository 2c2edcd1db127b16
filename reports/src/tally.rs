//! What the human reports (terminal, Markdown, HTML) count the same way: cells per OS pool,
//! the cross-pool flow grid, how many of a group are as documented, its worst verdict, and the
//! cells that pass the gate with a note.

use std::collections::BTreeMap;

use crate::cell::Cell;
use crate::diagnosis::Diagnosis;
use crate::report::RunReport;
use crate::verdict::{Counts, Verdict};

/// The verdicts per pool a cell touches (source and destination, each pool once per cell).
pub(crate) fn by_pool(report: &RunReport) -> BTreeMap<String, Counts> {
    let mut out: BTreeMap<String, Counts> = BTreeMap::new();
    for c in &report.cells {
        let mut seen: Vec<&str> = Vec::new();
        for pool in [&c.coordinates.source, &c.coordinates.destination]
            .into_iter()
            .flatten()
        {
            if !seen.contains(&pool.as_str()) {
                out.entry(pool.as_str().to_string()).or_default().add(c.verdict);
                seen.push(pool.as_str());
            }
        }
    }
    out
}

/// Whether a pool name is a node pool (`linux`, `windows`, `windows-20348`) rather than a
/// destination outside the pools (`cluster-dns`, `external`, `same-pod`, `api-server`).
pub(crate) fn is_node_pool(pool: &str) -> bool {
    pool == "linux"
        || pool == "windows"
        || pool
            .strip_prefix("windows-")
            .is_some_and(|b| !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()))
}

/// The flows between pools: (source, destination) → verdicts, with the sources and the
/// destinations in order.
pub(crate) struct FlowGrid {
    pub cells: BTreeMap<(String, String), Counts>,
    pub sources: Vec<String>,
    pub destinations: Vec<String>,
}

/// The flow grid of a run; None when no cell has both a source and a destination pool.
pub(crate) fn flow_grid(report: &RunReport) -> Option<FlowGrid> {
    let mut cells: BTreeMap<(String, String), Counts> = BTreeMap::new();
    for c in &report.cells {
        if let (Some(s), Some(d)) = (&c.coordinates.source, &c.coordinates.destination) {
            cells
                .entry((s.as_str().to_string(), d.as_str().to_string()))
                .or_default()
                .add(c.verdict);
        }
    }
    if cells.is_empty() {
        return None;
    }
    let mut sources: Vec<String> = cells.keys().map(|(s, _)| s.clone()).collect();
    sources.dedup();
    let mut destinations: Vec<String> = cells.keys().map(|(_, d)| d.clone()).collect();
    destinations.sort();
    destinations.dedup();
    Some(FlowGrid {
        cells,
        sources,
        destinations,
    })
}

/// (as documented, judged): judged leaves out not-applicable and indeterminate cells; as
/// documented are the judged ones that neither fail nor error.
pub(crate) fn documented(counts: &Counts) -> (usize, usize) {
    let judged = counts.total() - counts.get(Verdict::NotApplicable) - counts.get(Verdict::Indeterminate);
    (judged - counts.get(Verdict::Fail) - counts.get(Verdict::Error), judged)
}

/// `73 of 92 judged cells as documented (15 not applicable, 2 indeterminate)`: the pool line of
/// the human reports, saying what the judged count leaves out so that it adds up to the table.
pub(crate) fn pool_line(counts: &Counts) -> String {
    let (documented, judged) = documented(counts);
    let mut line = format!("{documented} of {judged} judged cells as documented");
    let left_out: Vec<String> = [Verdict::NotApplicable, Verdict::Indeterminate]
        .into_iter()
        .filter(|v| counts.get(*v) > 0)
        .map(|v| format!("{} {}", counts.get(v), v.as_str().replace('-', " ")))
        .collect();
    if !left_out.is_empty() {
        line.push_str(&format!(
            " ({} not judged: {})",
            counts.total() - judged,
            left_out.join(", ")
        ));
    }
    line
}

/// The worst verdict present (summary order), not-applicable for none.
pub(crate) fn worst(counts: &Counts) -> Verdict {
    Verdict::ALL
        .into_iter()
        .find(|v| counts.get(*v) > 0)
        .unwrap_or(Verdict::NotApplicable)
}

/// Cells that pass the gate with a note: documented limitations, recommendations not followed,
/// limitations not observed.
pub(crate) fn noted(report: &RunReport) -> Vec<&Cell> {
    report
        .cells
        .iter()
        .filter(|c| !c.verdict.fails_gate(report.strict))
        .filter(|c| {
            matches!(
                c.verdict,
                Verdict::KnownLimitation | Verdict::Warn | Verdict::BetterThanDocumented
            )
        })
        .collect()
}

/// The cells no verdict was reached for: a fact they need is unknown.
pub(crate) fn undecided(report: &RunReport) -> Vec<&Cell> {
    report
        .cells
        .iter()
        .filter(|c| c.verdict == Verdict::Indeterminate)
        .collect()
}

/// The diagnosis the human reports show first; None when the run has none or it is empty (no
/// failing cell), so that such a run's reports have nothing extra.
pub(crate) fn diagnosis(report: &RunReport) -> Option<&Diagnosis> {
    report.diagnosis.as_ref().filter(|d| !d.is_empty())
}

/// How many of a cause's evidence lines the terminal and Markdown reports show; the rest are
/// counted (all of them are in results.json and the HTML report).
pub(crate) const EVIDENCE_SHOWN: usize = 3;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::every_verdict_report;

    #[test]
    fn counts_of_the_every_verdict_report() {
        let r = every_verdict_report();
        let pools = by_pool(&r);
        assert_eq!(documented(&pools["windows-20348"]), (0, 1));
        let grid = flow_grid(&r).expect("a flow");
        assert_eq!(grid.sources, ["windows-20348"]);
        assert_eq!(grid.destinations, ["linux"]);
        assert_eq!(
            worst(&grid.cells[&("windows-20348".into(), "linux".into())]),
            Verdict::Fail
        );
        assert_eq!(noted(&r).len(), 3);
    }
}
