//! What `/metrics` shows: the watch's state after its latest cycle — each cell's state, attempts
//! and flake ratio, probe latencies, the likely causes over the window, fixture start-up times,
//! each node's readiness and data plane, and the cycles themselves — as metric families.

use std::collections::BTreeMap;

use super::exposition::{Family, Histogram, Kind};
use super::ledger::{CellLabels, Ledger};

/// Upper bounds of the probe latency histogram, in seconds.
const PROBE_BOUNDS: &[f64] = &[0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
/// Upper bounds of the cycle duration histogram, in seconds.
const CYCLE_BOUNDS: &[f64] = &[0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0];

/// One node as the watch saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeState {
    pub pool: String,
    /// The node's Ready condition.
    pub ready: bool,
    /// Whether its light data-plane checks passed in the last cycle that probed them (None:
    /// none probed yet).
    pub dataplane_ok: Option<bool>,
}

/// A fixture's start-up, per node and image: (pull, sandbox, total) in seconds where known.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Startup {
    pub pull: Option<f64>,
    pub sandbox: Option<f64>,
    pub total: Option<f64>,
}

/// The watch's state for the scraper.
#[derive(Debug)]
pub struct Board {
    pub ledger: Ledger,
    /// Whether each cell is documented to work, by cell id.
    pub documented: BTreeMap<String, bool>,
    /// Probe latency by (kind, from pool, to pool).
    pub latency: BTreeMap<(String, String, String), Histogram>,
    /// Likely causes over the window: (cause, node) → confidence in [0, 1].
    pub causes: BTreeMap<(String, String), f64>,
    /// Fixture start-up by (node, image).
    pub startup: BTreeMap<(String, String), Startup>,
    pub nodes: BTreeMap<String, NodeState>,
    pub cycle_duration: Histogram,
    pub cycles: u64,
    pub cycle_errors: u64,
    pub healed: u64,
    /// When the last cycle ended (seconds since the epoch).
    pub last_cycle: Option<f64>,
    /// Fixtures deployed and one cycle done: `/readyz` answers 200.
    pub ready: bool,
}

impl Default for Board {
    fn default() -> Self {
        Board {
            ledger: Ledger::default(),
            documented: BTreeMap::new(),
            latency: BTreeMap::new(),
            causes: BTreeMap::new(),
            startup: BTreeMap::new(),
            nodes: BTreeMap::new(),
            cycle_duration: Histogram::new(CYCLE_BOUNDS),
            cycles: 0,
            cycle_errors: 0,
            healed: 0,
            last_cycle: None,
            ready: false,
        }
    }
}

fn cell_labels(l: &CellLabels) -> Vec<(&'static str, String)> {
    vec![
        ("cell", l.cell.clone()),
        ("rule", l.rule.clone()),
        ("check", l.check.clone()),
        ("from_pool", l.from_pool.clone()),
        ("to_pool", l.to_pool.clone()),
        ("from_node", l.from_node.clone()),
        ("to_node", l.to_node.clone()),
    ]
}

impl Board {
    /// Records a probe's latency.
    pub fn observe_probe(&mut self, kind: &str, from_pool: &str, to_pool: &str, seconds: f64) {
        self.latency
            .entry((kind.to_string(), from_pool.to_string(), to_pool.to_string()))
            .or_insert_with(|| Histogram::new(PROBE_BOUNDS))
            .observe(seconds);
    }

    /// Forgets the series of nodes that left.
    pub fn keep_nodes(&mut self, names: &std::collections::BTreeSet<String>) {
        self.ledger.keep_nodes(names);
        self.nodes.retain(|n, _| names.contains(n));
        self.startup.retain(|(n, _), _| names.contains(n));
        self.causes.retain(|(_, n), _| n.is_empty() || names.contains(n));
        let kept: std::collections::BTreeSet<&String> = self.ledger.cells.keys().collect();
        self.documented.retain(|id, _| kept.contains(id));
    }

    /// Every family, in a stable order.
    pub fn families(&self) -> Vec<Family> {
        let mut out = self.cell_families();
        out.extend(self.node_families());
        out.extend(self.cycle_families());
        out
    }

    /// The families of the cells: state, documentation, attempts, failures, flake ratio.
    fn cell_families(&self) -> Vec<Family> {
        let mut verdict = Family::new(
            "mixcheck_cell_verdict",
            "1 for each cell's current state: its latest verdict, or flaky when it both failed and worked within the flake window.",
            Kind::Gauge,
        );
        let mut documented = Family::new(
            "mixcheck_cell_documented_to_work",
            "1 when the documentation expects the cell to work, 0 when it documents a limitation.",
            Kind::Gauge,
        );
        let mut attempts = Family::new("mixcheck_probe_attempts", "Probe attempts per cell.", Kind::Counter);
        let mut failures = Family::new(
            "mixcheck_probe_failures",
            "Probe attempts per cell that failed (verdict fail).",
            Kind::Counter,
        );
        let mut flake = Family::new(
            "mixcheck_cell_flake_ratio",
            "Failed attempts over attempts per cell within the flake window.",
            Kind::Gauge,
        );
        for rec in self.ledger.cells.values() {
            let labels = cell_labels(&rec.labels);
            let mut with_verdict = vec![("cell", rec.labels.cell.clone()), ("suite", rec.labels.suite.clone())];
            with_verdict.extend(labels.iter().skip(1).cloned());
            with_verdict.push(("verdict", rec.state().to_string()));
            verdict.add(with_verdict, 1.0);
            let works = self.documented.get(&rec.labels.cell).copied().unwrap_or(true);
            documented.add(labels.clone(), if works { 1.0 } else { 0.0 });
            attempts.add(labels.clone(), rec.attempts as f64);
            failures.add(labels.clone(), rec.failures as f64);
            flake.add(labels, rec.flake_ratio());
        }
        vec![verdict, documented, attempts, failures, flake]
    }

    /// The families of probes, causes and nodes: latency, likely causes, start-up, readiness and
    /// data plane.
    fn node_families(&self) -> Vec<Family> {
        let mut latency = Family::new(
            "mixcheck_probe_duration_seconds",
            "How long one cell's probe took, by kind and pool pair.",
            Kind::Histogram,
        );
        for ((kind, from, to), h) in &self.latency {
            latency.add_histogram(
                vec![
                    ("kind", kind.clone()),
                    ("from_pool", from.clone()),
                    ("to_pool", to.clone()),
                ],
                h,
            );
        }
        let mut causes = Family::new(
            "mixcheck_cause_active",
            "The confidence (0 to 1) of a likely cause the diagnosis over the flake window names on a node.",
            Kind::Gauge,
        );
        for ((cause, node), confidence) in &self.causes {
            causes.add(vec![("cause", cause.clone()), ("node", node.clone())], *confidence);
        }
        let mut startup = Family::new(
            "mixcheck_fixture_startup_seconds",
            "How long a fixture pod took to start on a node, by image and phase (pull, sandbox, total).",
            Kind::Gauge,
        );
        for ((node, image), s) in &self.startup {
            for (phase, v) in [("pull", s.pull), ("sandbox", s.sandbox), ("total", s.total)] {
                if let Some(v) = v {
                    startup.add(
                        vec![
                            ("node", node.clone()),
                            ("image", image.clone()),
                            ("phase", phase.into()),
                        ],
                        v,
                    );
                }
            }
        }
        let mut ready = Family::new(
            "mixcheck_node_ready",
            "1 when the node's Ready condition is True.",
            Kind::Gauge,
        );
        let mut dataplane = Family::new(
            "mixcheck_node_dataplane_ok",
            "1 when the node's light data-plane checks passed in the last cycle that probed them.",
            Kind::Gauge,
        );
        for (name, n) in &self.nodes {
            let labels = vec![("node", name.clone()), ("pool", n.pool.clone())];
            ready.add(labels.clone(), if n.ready { 1.0 } else { 0.0 });
            if let Some(ok) = n.dataplane_ok {
                dataplane.add(labels, if ok { 1.0 } else { 0.0 });
            }
        }
        vec![latency, causes, startup, ready, dataplane]
    }

    /// The families of the watch itself: cycles, their duration and errors, heals.
    fn cycle_families(&self) -> Vec<Family> {
        let mut cycle = Family::new(
            "mixcheck_cycle_duration_seconds",
            "How long a watch cycle took.",
            Kind::Histogram,
        );
        cycle.add_histogram(Vec::new(), &self.cycle_duration);
        let mut cycles = Family::new("mixcheck_cycles", "Watch cycles run.", Kind::Counter);
        cycles.add(Vec::new(), self.cycles as f64);
        let mut errors = Family::new(
            "mixcheck_cycle_errors",
            "Watch cycles that could not probe (the API server unreachable, a fixture that could not be healed).",
            Kind::Counter,
        );
        errors.add(Vec::new(), self.cycle_errors as f64);
        let mut healed = Family::new(
            "mixcheck_fixtures_healed",
            "Times the watch replaced fixture pods that were deleted, evicted or stuck.",
            Kind::Counter,
        );
        healed.add(Vec::new(), self.healed as f64);
        let mut last = Family::new(
            "mixcheck_last_cycle_timestamp_seconds",
            "When the last watch cycle ended (Unix time).",
            Kind::Gauge,
        );
        if let Some(t) = self.last_cycle {
            last.add(Vec::new(), t);
        }
        vec![cycle, cycles, errors, healed, last]
    }
}
