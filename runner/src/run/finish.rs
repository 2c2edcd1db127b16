//! The last stages of a run: the report begun before connecting (so that a run refused at the
//! door still has one), the run's end — cells judged, cut short by the deadline or Ctrl-C, or
//! stopped by an error — turned into the report's cells, and the diagnosis and the gate.

use std::time::Instant;

use chrono::Utc;
use mixcheck_reports::{Cell, RunReport};

use crate::cluster::facts::ClusterFacts;
use crate::cluster::target::TargetSpec;
use crate::errors::Code;
use crate::run::plan::RunPlan;
use crate::run::prepare::Prepared;
use crate::run::probe::Probing;
use crate::run::{Finished, Run, connect};

/// What the work of a run hands back: the cells, the evidence about implicated nodes and, with
/// `--bundle`, what the bundle holds of the cluster.
pub(super) type Collected = (
    Vec<Cell>,
    Vec<mixcheck_reports::NodeEvidence>,
    Option<crate::triage::bundle::Collected>,
);

/// How the run's work ended.
pub(super) enum Ended {
    Done(Result<Collected, String>),
    Interrupted,
    Deadline,
}

/// The report of a run from its start: the run id, the wall clock the duration counts on.
pub(super) struct Start {
    pub run_id: String,
    pub report: RunReport,
    clock: Instant,
}

impl Start {
    /// A report naming the plan's target, before it is connected to.
    pub fn new(plan: &RunPlan) -> Self {
        let started = Utc::now();
        let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
        let placeholder = match &plan.target {
            TargetSpec::Bundled { profile, .. } => mixcheck_reports::Target::Bundled {
                profile: profile.clone(),
            },
            TargetSpec::Kubeconfig { context, .. } => mixcheck_reports::Target::Kubeconfig {
                context: context.clone().unwrap_or_else(|| "current-context".into()),
                server: String::new(),
            },
            TargetSpec::InCluster { .. } => mixcheck_reports::Target::Kubeconfig {
                context: "in-cluster".into(),
                server: String::new(),
            },
        };
        let mut report = RunReport::new(env!("CARGO_PKG_VERSION"), run_id.clone(), placeholder, started);
        report.strict = plan.strict;
        report.selection = plan.selection.clone();
        report.images = plan.registry.report();
        Start {
            run_id,
            report,
            clock: Instant::now(),
        }
    }

    /// When the run began, which its deadline counts from.
    pub fn began(&self) -> Instant {
        self.clock
    }

    /// The connected target and its facts enter the report.
    pub fn connected(&mut self, target: &crate::cluster::target::Target, facts: &ClusterFacts) {
        self.report.target = target.report.clone();
        self.report.facts = facts.report.clone();
    }

    /// A run that could not start: its report aborted with the reason and exit code.
    pub fn refused(mut self, (code, why, seen): connect::Refused) -> Finished {
        if let Some(t) = seen {
            self.report.target = t;
        }
        self.abort(code, why, None)
    }

    /// The report aborted with `reason` and `code`.
    fn abort(self, code: Code, reason: String, kept: Option<simcluster::Cluster>) -> Finished {
        let mut report = self.report;
        report.aborted = Some(mixcheck_reports::Aborted {
            reason,
            exit_code: code as u8,
        });
        report.finished_at = Utc::now();
        report.duration_ms = u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX);
        Finished {
            code,
            report,
            bundle: None,
            kept,
        }
    }

    /// The report of a run whose work `ended` (the namespace already cleaned up or kept): its
    /// cells, coverage and facts, then — unless it was aborted — the baseline comparison, the
    /// diagnosis and the gate.
    pub fn finish(
        mut self,
        run: &Run<'_>,
        prepared: &Prepared<'_>,
        probing: &Probing,
        ended: Ended,
        kept: Option<simcluster::Cluster>,
    ) -> Finished {
        let (plan, read) = (run.plan, run.facts);
        let (cells, evidence, bundle, aborted) = outcome(plan, prepared, probing, read, ended);
        let report = &mut self.report;
        report.cells = cells;
        if let Some(refined) = probing.refined.get() {
            report.facts = refined.report.clone();
        }
        report.coverage = Some(super::lock(&prepared.sets).report(read, prepared.light_checks.clone()));
        if !plan.keep {
            note_deleted(report, matches!(plan.target, TargetSpec::Bundled { .. }));
        }
        if let Some(detected) = probing.egress.borrow().clone() {
            match detected.unknown_because() {
                None => report.facts.egress = Some(detected.fact),
                Some(why) => {
                    report.facts.unread.insert("egress".to_string(), why);
                }
            }
        }
        if let Some((code, reason)) = aborted {
            return self.abort(code, reason, kept);
        }
        if let Some(baseline) = &plan.baseline {
            report.baseline = Some(report.against(baseline, plan.strict));
        }
        diagnose(report, plan, evidence, &|m| run.say(m));
        report.finished_at = Utc::now();
        report.duration_ms = u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX);
        let code = if report.gate_passed(plan.strict) {
            Code::Passed
        } else {
            Code::Failed
        };
        Finished {
            code,
            report: self.report,
            bundle,
            kept,
        }
    }
}

/// The cells, evidence and bundle of how the work ended, and the exit code and reason of a run
/// that did not finish its work. What was judged before the deadline stays; the rest is an
/// error that says why.
#[allow(clippy::type_complexity)] // the collected parts and the abort, each distinct
fn outcome(
    plan: &RunPlan,
    prepared: &Prepared<'_>,
    probing: &Probing,
    read: &ClusterFacts,
    ended: Ended,
) -> (
    Vec<Cell>,
    Vec<mixcheck_reports::NodeEvidence>,
    Option<crate::triage::bundle::Collected>,
    Option<(Code, String)>,
) {
    match ended {
        Ended::Done(Ok((cells, evidence, bundle))) => (cells, evidence, bundle, None),
        Ended::Done(Err(e)) => (
            Vec::new(),
            Vec::new(),
            None,
            Some((Code::Failed, format!("the run could not deploy its fixtures: {e}"))),
        ),
        Ended::Interrupted => (
            Vec::new(),
            Vec::new(),
            None,
            Some((
                Code::Interrupted,
                "interrupted (Ctrl-C); the run namespace was deleted".into(),
            )),
        ),
        Ended::Deadline => {
            let secs = plan.deadline.as_secs();
            let cells = probing.judged.all_or(
                &prepared.cells,
                read,
                &prepared.ns,
                &format!("not judged before the run's deadline ({secs}s, --timeout)"),
            );
            let why = format!("the run's deadline ({secs}s, --timeout) passed before every check ran");
            (cells, Vec::new(), None, Some((Code::Failed, why)))
        }
    }
}

/// The reproduce commands need what the run deleted: say so where they are printed.
fn note_deleted(report: &mut RunReport, bundled: bool) {
    let note = if bundled {
        "  # the bundled cluster stopped with the run: rerun with --keep to keep it serving"
    } else {
        "  # the run deleted its namespace: rerun with --keep to keep it"
    };
    for cell in &mut report.cells {
        if let Some(r) = &mut cell.reproduce {
            r.push_str(note);
        }
    }
}

/// The likely causes of the failing cells, said in one line when there are any.
fn diagnose(report: &mut RunReport, plan: &RunPlan, evidence: Vec<mixcheck_reports::NodeEvidence>, say: &dyn Fn(&str)) {
    let inferring = Instant::now();
    let diagnosis = crate::triage::diagnose::diagnose(report, &plan.causes, evidence, plan.node_diagnostics);
    if !diagnosis.is_empty() {
        say(&format!(
            "Diagnosis: {} likely cause{}, {} failing cell{} unexplained ({} ms)",
            diagnosis.causes.len(),
            if diagnosis.causes.len() == 1 { "" } else { "s" },
            diagnosis.unexplained.len(),
            if diagnosis.unexplained.len() == 1 { "" } else { "s" },
            inferring.elapsed().as_millis()
        ));
    }
    report.diagnosis = Some(diagnosis);
}
