//! The result of one `mixcheck run` ([`RunReport`]): what ran against what ([`Target`],
//! [`Selection`]), the facts, every judged cell, and how the run ended ([`Aborted`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{cell::Cell, diagnosis::Diagnosis, facts::Facts, verdict::Counts};

/// The `results.json` schema this crate writes. Additive changes (new optional fields) keep
/// the number; anything an older reader would misread raises it.
pub const SCHEMA_VERSION: u32 = 1;

/// The cluster a run was pointed at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Target {
    /// The bundled cluster, started in-process.
    Bundled {
        /// Its topology profile (`default`, `overlay`, …).
        profile: String,
    },
    /// A cluster from a kubeconfig.
    Kubeconfig {
        /// The context used.
        context: String,
        /// The API server URL of that context.
        server: String,
    },
}

/// What the user selected to run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Selection {
    /// Suite names; empty means all.
    pub suites: Vec<String>,
    /// Check-name regexes, as given; empty means all.
    pub checks: Vec<String>,
}

/// Where the run's images came from: the registry mirrors and pull secrets it was given
/// (`--image-registry`, `--image-registry-map`, `--image-pull-secret`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Images {
    /// The prefix the images no mapping matched got (`--image-registry`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// Upstream registry (or registry path) → its mirror (`--image-registry-map`).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub registry_map: std::collections::BTreeMap<String, String>,
    /// The pull secrets every pod of the run named, as given (`NAME` or `NAMESPACE/NAME`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pull_secrets: Vec<String>,
}

/// Why a run stopped before judging everything. Such a run still writes its report, with the
/// cells judged so far (often none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aborted {
    /// What stopped it ("cluster unreachable: connection refused", "interrupted").
    pub reason: String,
    /// The process exit code the run ended with (runner's `exit` module: 2, 3, 4, 130).
    pub exit_code: u8,
}

/// The result of one `mixcheck run`: the single source every report format is rendered from,
/// and — serialised — `results.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunReport {
    /// The `results.json` schema ([`SCHEMA_VERSION`] when written by this crate).
    pub schema_version: u32,
    /// The mixcheck version that ran.
    pub tool_version: String,
    /// This run's id (also the suffix of its namespace).
    pub run_id: String,
    /// When the run started (RFC 3339).
    pub started_at: DateTime<Utc>,
    /// When it finished (RFC 3339).
    pub finished_at: DateTime<Utc>,
    /// Wall time, measured on a monotonic clock.
    pub duration_ms: u64,
    /// Whether `--strict` was given (known limitations and warnings fail the gate).
    pub strict: bool,
    /// The cluster.
    pub target: Target,
    /// What the run learnt about it.
    #[serde(default)]
    pub facts: Facts,
    /// What was selected.
    #[serde(default)]
    pub selection: Selection,
    /// The mirrors and pull secrets the run's images came through; absent for the upstream
    /// images without pull secrets (and in files of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Images>,
    /// Set when the run stopped early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<Aborted>,
    /// Every judged cell, in plan order.
    #[serde(default)]
    pub cells: Vec<Cell>,
    /// The likely causes of the failing cells; absent when the run did not diagnose (it
    /// stopped before judging, or an older mixcheck wrote the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<Diagnosis>,
    /// The comparison with a baseline run (`--baseline`): with one, only regressions fail the
    /// gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<crate::diff::Diff>,
    /// Which nodes got the full check matrix and which a light per-node coverage (absent in
    /// files of older versions and in runs that stopped before planning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<crate::coverage::Coverage>,
}

impl RunReport {
    /// An empty report of a run starting now-ish: no facts, no cells, finished when started.
    pub fn new(
        tool_version: impl Into<String>,
        run_id: impl Into<String>,
        target: Target,
        started_at: DateTime<Utc>,
    ) -> Self {
        RunReport {
            schema_version: SCHEMA_VERSION,
            tool_version: tool_version.into(),
            run_id: run_id.into(),
            started_at,
            finished_at: started_at,
            duration_ms: 0,
            strict: false,
            target,
            facts: Facts::default(),
            selection: Selection::default(),
            images: None,
            aborted: None,
            cells: Vec::new(),
            diagnosis: None,
            baseline: None,
            coverage: None,
        }
    }

    /// This run compared with `baseline`, cell by cell, the gate judged with `strict`.
    pub fn against(&self, baseline: &RunReport, strict: bool) -> crate::diff::Diff {
        crate::diff::compare(&baseline.run_id, &baseline.cells, &self.cells, strict)
    }

    /// How many cells got each verdict.
    pub fn counts(&self) -> Counts {
        self.cells.iter().map(|c| c.verdict).collect()
    }

    /// Whether the release gate passes: the run was not aborted and no cell's verdict fails the
    /// gate ([`crate::Verdict::fails_gate`]). `strict` is a parameter, not [`RunReport::strict`], so a
    /// stored report can be re-judged either way.
    ///
    /// Against a baseline ([`RunReport::baseline`]) only regressions fail it: known failures and
    /// improvements are reported, not fatal.
    pub fn gate_passed(&self, strict: bool) -> bool {
        if self.aborted.is_some() {
            return false;
        }
        match &self.baseline {
            Some(diff) => !diff.regressed(),
            None => !self.cells.iter().any(|c| c.verdict.fails_gate(strict)),
        }
    }

    /// The cells that fail the gate, in plan order.
    pub fn gate_failures(&self, strict: bool) -> impl Iterator<Item = &Cell> + '_ {
        self.cells.iter().filter(move |c| c.verdict.fails_gate(strict))
    }

    /// How many distinct rule ids the cells check.
    pub fn rule_count(&self) -> usize {
        let mut rules: Vec<&str> = self.cells.iter().map(|c| c.rule_id.as_str()).collect();
        rules.sort_unstable();
        rules.dedup();
        rules.len()
    }

    /// How many cells passed only after a transport retry.
    pub fn flaky_count(&self) -> usize {
        self.cells.iter().filter(|c| c.flaky).count()
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::{testdata::cell, verdict::Verdict};

    fn report_of(verdicts: &[Verdict]) -> RunReport {
        let mut report = crate::testdata::sample_report();
        report.cells = verdicts
            .iter()
            .enumerate()
            .map(|(i, &v)| cell("net", "check", "NET-X", &format!("v{i}"), v))
            .collect();
        report
    }

    #[rstest]
    #[case::empty(&[], true, true)]
    #[case::all_pass(&[Verdict::Pass, Verdict::Pass], true, true)]
    #[case::unjudged_and_better(&[Verdict::Pass, Verdict::NotApplicable, Verdict::Indeterminate, Verdict::BetterThanDocumented], true, true)]
    #[case::known_limitation(&[Verdict::Pass, Verdict::KnownLimitation], true, false)]
    #[case::warn(&[Verdict::Warn, Verdict::Pass], true, false)]
    #[case::fail(&[Verdict::Pass, Verdict::Fail], false, false)]
    #[case::error(&[Verdict::Error], false, false)]
    fn gate_passed(#[case] verdicts: &[Verdict], #[case] lenient: bool, #[case] strict: bool) {
        let report = report_of(verdicts);
        assert_eq!(report.gate_passed(false), lenient, "without --strict");
        assert_eq!(report.gate_passed(true), strict, "with --strict");
        assert_eq!(report.gate_failures(false).count() == 0, lenient);
        assert_eq!(report.gate_failures(true).count() == 0, strict);
    }

    #[test]
    fn against_a_baseline_only_regressions_fail_the_gate() {
        let baseline = report_of(&[Verdict::Pass, Verdict::Fail]);
        let mut same = report_of(&[Verdict::Pass, Verdict::Fail]);
        same.baseline = Some(same.against(&baseline, false));
        assert!(same.gate_passed(false), "a known failure is not fatal");
        let mut worse = report_of(&[Verdict::Fail, Verdict::Fail]);
        worse.baseline = Some(worse.against(&baseline, false));
        assert!(!worse.gate_passed(false));
    }

    #[test]
    fn an_aborted_run_never_passes_the_gate() {
        let mut report = report_of(&[Verdict::Pass]);
        report.aborted = Some(Aborted {
            reason: "interrupted".into(),
            exit_code: 130,
        });
        assert!(!report.gate_passed(false));
        assert!(!report.gate_passed(true));
    }

    #[test]
    fn counts_rules_and_flakes() {
        let mut report = report_of(&[Verdict::Pass, Verdict::Fail, Verdict::Pass, Verdict::Warn]);
        report.cells[3].rule_id = "NET-Y".into();
        report.cells[0].flaky = true;
        let counts = report.counts();
        assert_eq!(counts.get(Verdict::Pass), 2);
        assert_eq!(counts.get(Verdict::Fail), 1);
        assert_eq!(counts.get(Verdict::Warn), 1);
        assert_eq!(counts.total(), 4);
        assert_eq!(report.rule_count(), 2);
        assert_eq!(report.flaky_count(), 1);
    }

    #[test]
    fn new_report_is_of_the_current_schema() {
        let report = RunReport::new(
            "0.1.0",
            "r",
            Target::Bundled {
                profile: "default".into(),
            },
            chrono::Utc::now(),
        );
        assert_eq!(report.schema_version, SCHEMA_VERSION);
        assert!(report.cells.is_empty() && report.aborted.is_none() && !report.strict);
        assert_eq!(report.finished_at, report.started_at);
    }
}
