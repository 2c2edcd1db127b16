//! What a watch remembers of each cell over the flake window: every attempt (one per cycle that
//! probed the cell) with its time and whether it failed, the latest judgement, and the latest
//! failing one — from which come the flake ratio, the cell's state (`flaky` when it both failed
//! and worked in the window) and the cells the diagnosis over the window reads.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, SystemTime};

use mixcheck_reports::cell::NodeRole;
use mixcheck_reports::{Cell, Verdict};

/// The labels that name one cell's series: bounded by the cells (checks × nodes), never by pod
/// or attempt.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CellLabels {
    pub cell: String,
    pub suite: String,
    pub rule: String,
    pub check: String,
    pub from_pool: String,
    pub to_pool: String,
    pub from_node: String,
    pub to_node: String,
}

impl CellLabels {
    pub fn of(cell: &Cell) -> Self {
        let nodes = |roles: &[NodeRole]| {
            let mut names: Vec<&str> = cell
                .nodes
                .iter()
                .filter(|n| roles.contains(&n.role))
                .map(|n| n.name.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            names.join(",")
        };
        let pool = |p: &Option<mixcheck_reports::cell::Pool>| p.as_ref().map(ToString::to_string).unwrap_or_default();
        CellLabels {
            cell: cell.id.as_str().to_string(),
            suite: cell.suite.clone(),
            rule: cell.rule_id.clone(),
            check: cell.check.clone(),
            from_pool: pool(&cell.coordinates.source),
            to_pool: pool(&cell.coordinates.destination),
            from_node: nodes(&[NodeRole::Source, NodeRole::Subject]),
            to_node: nodes(&[NodeRole::Destination]),
        }
    }

    /// The same labels with the nodes of the cell's plan (from, to), which do not change from one
    /// cycle to the next as an observation's nodes may.
    pub fn with_nodes(mut self, (from, to): (Vec<String>, Vec<String>)) -> Self {
        let join = |mut v: Vec<String>| {
            v.sort_unstable();
            v.dedup();
            v.join(",")
        };
        if !from.is_empty() || !to.is_empty() {
            self.from_node = join(from);
            self.to_node = join(to);
        }
        self
    }

    /// The node names of the cell, at either end.
    pub fn nodes(&self) -> impl Iterator<Item = &str> {
        self.from_node
            .split(',')
            .chain(self.to_node.split(','))
            .filter(|n| !n.is_empty())
    }
}

/// Fewer working attempts than this in the window say nothing against an intermittent cause
/// on the cell's node: at P = 0.3, three attempts all work one time in three.
const TOO_FEW: usize = 3;

/// Whether a judgement counts as a failed attempt, a working one, or neither (the harness could
/// not tell: error, indeterminate, not applicable).
fn attempt(v: Verdict) -> Option<bool> {
    match v {
        Verdict::Fail => Some(true),
        Verdict::Pass | Verdict::KnownLimitation | Verdict::BetterThanDocumented | Verdict::Warn => Some(false),
        Verdict::NotApplicable | Verdict::Indeterminate | Verdict::Error => None,
    }
}

/// One cell over the window.
#[derive(Debug, Clone)]
pub struct CellRecord {
    pub labels: CellLabels,
    /// Attempts and failed attempts since the watch began.
    pub attempts: u64,
    pub failures: u64,
    /// (when, failed) of the attempts within the window.
    window: VecDeque<(SystemTime, bool)>,
    /// The latest judgement.
    pub last: Cell,
    /// The latest failing judgement within the window.
    last_failed: Option<(SystemTime, Cell)>,
}

impl CellRecord {
    /// Failed attempts over attempts within the window (0 without attempts).
    pub fn flake_ratio(&self) -> f64 {
        let n = self.window.len();
        if n == 0 {
            return 0.0;
        }
        self.window.iter().filter(|(_, failed)| *failed).count() as f64 / n as f64
    }

    /// The cell's state: `flaky` when it both failed and worked within the window, else its
    /// latest verdict.
    pub fn state(&self) -> &'static str {
        let failed = self.window.iter().any(|(_, f)| *f);
        let worked = self.window.iter().any(|(_, f)| !*f);
        if failed && worked {
            "flaky"
        } else {
            self.last.verdict.as_str()
        }
    }

    /// What the diagnosis over the window reads: the latest failing judgement within it, so that
    /// an intermittent fault is diagnosed from the cells it broke in any cycle; else the latest.
    pub fn for_diagnosis(&self) -> Cell {
        match &self.last_failed {
            Some((_, cell)) => {
                let mut cell = cell.clone();
                if self.state() == "flaky" {
                    cell.observed.summary = format!(
                        "{} (failed {:.0} % of attempts in the window)",
                        cell.observed.summary,
                        self.flake_ratio() * 100.0
                    );
                }
                cell
            }
            None => self.last.clone(),
        }
    }
}

/// Every cell a watch has judged, by id.
#[derive(Debug, Default)]
pub struct Ledger {
    pub cells: BTreeMap<String, CellRecord>,
}

impl Ledger {
    /// Records one cycle's judgement of a cell (its series named by `labels`) at `now`,
    /// forgetting attempts older than `window`.
    pub fn record(&mut self, cell: Cell, labels: CellLabels, (now, window): (SystemTime, Duration)) {
        let failed = attempt(cell.verdict);
        let rec = self.cells.entry(labels.cell.clone()).or_insert_with(|| CellRecord {
            labels: labels.clone(),
            attempts: 0,
            failures: 0,
            window: VecDeque::new(),
            last: cell.clone(),
            last_failed: None,
        });
        rec.labels = labels;
        if let Some(f) = failed {
            rec.attempts += 1;
            rec.failures += u64::from(f);
            rec.window.push_back((now, f));
            if f {
                rec.last_failed = Some((now, cell.clone()));
            }
        }
        rec.last = cell;
        self.forget_before(now, window);
    }

    /// Drops the attempts (and failing judgements) older than `window` before `now`.
    pub fn forget_before(&mut self, now: SystemTime, window: Duration) {
        let Some(horizon) = now.checked_sub(window) else {
            return;
        };
        for rec in self.cells.values_mut() {
            while rec.window.front().is_some_and(|(t, _)| *t < horizon) {
                rec.window.pop_front();
            }
            if rec.last_failed.as_ref().is_some_and(|(t, _)| *t < horizon) {
                rec.last_failed = None;
            }
        }
    }

    /// Drops every cell that touches none of `nodes` any more — a node that left takes its
    /// series with it — and keeps cells of no node (cluster-wide checks).
    pub fn keep_nodes(&mut self, nodes: &std::collections::BTreeSet<String>) {
        self.cells
            .retain(|_, rec| rec.labels.nodes().all(|n| nodes.contains(n)));
    }

    /// The cells the diagnosis over the window reads. Where a cell is flaky on a node, the fault
    /// there may hold for some attempts only: a cell of that node that worked in fewer than
    /// [`TOO_FEW`] attempts in the window proves nothing against it, and is read as
    /// `indeterminate` (a cell that always failed, or worked often, still counts).
    pub fn for_diagnosis(&self) -> Vec<Cell> {
        let flaky: std::collections::BTreeSet<&str> = self
            .cells
            .values()
            .filter(|r| r.state() == "flaky")
            .flat_map(|r| r.labels.nodes())
            .collect();
        self.cells
            .values()
            .map(|r| {
                let mut cell = r.for_diagnosis();
                let few = r.window.len() < TOO_FEW && r.window.iter().all(|(_, failed)| !failed);
                if few && cell.verdict != Verdict::Fail && r.labels.nodes().any(|n| flaky.contains(n)) {
                    cell.verdict = Verdict::Indeterminate;
                    cell.reason = Some(format!(
                        "worked in {} attempt{} of the window on a node with a flaky cell: too few to rule out an intermittent cause",
                        r.window.len(),
                        if r.window.len() == 1 { "" } else { "s" }
                    ));
                }
                cell
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use mixcheck_reports::{CellId, Coordinates, Expectation, Expected, NodeRef, Observed, Os, Pool};

    use super::*;

    fn cell(from: &str, to: &str, verdict: Verdict) -> Cell {
        let coordinates = Coordinates {
            source: Some(Pool::named("windows-20348")),
            destination: Some(Pool::named("linux")),
            variant: Some("dns-name".into()),
            ..Coordinates::default()
        };
        Cell {
            id: CellId::new("dns", "DNS-SVC-FQDN", &coordinates).expect("id"),
            suite: "dns".into(),
            check: "service-fqdn".into(),
            rule_id: "DNS-SVC-FQDN".into(),
            title: "t".into(),
            category: "dns".into(),
            verdict,
            expected: Expectation {
                kind: Expected::Works,
                text: "works".into(),
            },
            coordinates,
            nodes: vec![
                NodeRef {
                    name: from.into(),
                    os: Os::Windows,
                    build: Some(20348),
                    role: NodeRole::Source,
                },
                NodeRef {
                    name: to.into(),
                    os: Os::Linux,
                    build: None,
                    role: NodeRole::Destination,
                },
            ],
            observed: Observed {
                summary: "lookup".into(),
                ..Observed::default()
            },
            remedy: None,
            sources: Vec::new(),
            reproduce: None,
            reason: None,
            flaky: false,
            duration_ms: 0,
        }
    }

    fn record(l: &mut Ledger, cell: Cell, now: SystemTime, window: Duration) {
        let labels = CellLabels::of(&cell);
        l.record(cell, labels, (now, window));
    }

    fn at(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + s)
    }

    /// Three failures in ten attempts: a flake ratio of 0.3, `flaky`, and the diagnosis reads
    /// the failing judgement; once the failures leave the window, the cell passes again.
    #[test]
    fn the_window_counts_failed_attempts_and_forgets_old_ones() {
        let mut l = Ledger::default();
        let window = Duration::from_secs(100);
        for k in 0..10u64 {
            let v = if k % 3 == 1 { Verdict::Fail } else { Verdict::Pass };
            record(&mut l, cell("win2022-1", "linux-1", v), at(k * 5), window);
        }
        let rec = l.cells.values().next().expect("one cell");
        assert_eq!((rec.attempts, rec.failures), (10, 3));
        assert!((rec.flake_ratio() - 0.3).abs() < 1e-9);
        assert_eq!(rec.state(), "flaky");
        let diag = l.for_diagnosis();
        assert_eq!(diag[0].verdict, Verdict::Fail);
        assert!(
            diag[0].observed.summary.contains("failed 30 % of attempts"),
            "{}",
            diag[0].observed.summary
        );
        // 200 s later, with passes only: the failures are out of the window.
        for k in 0..5u64 {
            record(&mut l, cell("win2022-1", "linux-1", Verdict::Pass), at(250 + k), window);
        }
        let rec = l.cells.values().next().expect("one cell");
        assert_eq!(rec.flake_ratio(), 0.0);
        assert_eq!(rec.state(), "pass");
        assert_eq!(l.for_diagnosis()[0].verdict, Verdict::Pass);
        assert_eq!((rec.attempts, rec.failures), (15, 3), "the counters keep counting");
    }

    /// With a flaky cell on win2022-1, another cell of that node that worked once is no proof
    /// against an intermittent cause (indeterminate for the diagnosis); one that worked three
    /// times, or a cell of another node, still counts.
    #[test]
    fn a_single_pass_beside_a_flaky_cell_refutes_nothing() {
        let mut l = Ledger::default();
        let window = Duration::from_secs(100);
        for k in 0..6u64 {
            let v = if k % 2 == 0 { Verdict::Fail } else { Verdict::Pass };
            record(&mut l, cell("win2022-1", "linux-1", v), at(k), window);
        }
        let mut once = cell("win2022-1", "win2019-1", Verdict::Pass);
        once.check = "service-short-name".into();
        once.id = CellId::new("dns", "DNS-PQDN", &once.coordinates).expect("id");
        record(&mut l, once.clone(), at(6), window);
        let mut elsewhere = cell("win2019-1", "win2019-1", Verdict::Pass);
        elsewhere.id = CellId::new("dns", "DNS-OTHER", &elsewhere.coordinates).expect("id");
        record(&mut l, elsewhere, at(6), window);
        let diag = l.for_diagnosis();
        let by_rule = |rule: &str| diag.iter().find(|c| c.id.as_str().contains(rule)).map(|c| c.verdict);
        assert_eq!(by_rule("DNS-PQDN"), Some(Verdict::Indeterminate));
        assert_eq!(
            by_rule("DNS-OTHER"),
            Some(Verdict::Pass),
            "win2019-1 → win2019-1 touches no flaky node"
        );
        for k in 7..9u64 {
            record(&mut l, once.clone(), at(k), window);
        }
        let diag = l.for_diagnosis();
        assert_eq!(
            diag.iter()
                .find(|c| c.id.as_str().contains("DNS-PQDN"))
                .map(|c| c.verdict),
            Some(Verdict::Pass),
            "three working attempts count"
        );
    }

    #[test]
    fn errors_are_no_attempt() {
        let mut l = Ledger::default();
        record(&mut l, cell("a", "b", Verdict::Error), at(0), Duration::from_secs(60));
        let rec = l.cells.values().next().expect("one cell");
        assert_eq!((rec.attempts, rec.flake_ratio()), (0, 0.0));
        assert_eq!(rec.state(), "error");
    }

    #[test]
    fn a_node_that_left_takes_its_cells() {
        let mut l = Ledger::default();
        record(
            &mut l,
            cell("win2022-1", "linux-1", Verdict::Pass),
            at(0),
            Duration::from_secs(60),
        );
        let still: std::collections::BTreeSet<String> = ["linux-1".to_string(), "win2019-1".into()].into();
        l.keep_nodes(&still);
        assert!(l.cells.is_empty());
    }
}
