//! The run plan: what one `mixcheck run` does — the target, the selected checks, the deadline and
//! the stated facts — validated before any cluster call (`cli::plan` builds it from the
//! command line).

use std::path::PathBuf;
use std::time::Duration;

use crate::catalogue::suite::{Check, Suite, Suites};
use crate::cluster::target::TargetSpec;

/// A validated run.
#[derive(Debug)]
pub struct RunPlan {
    pub target: TargetSpec,
    pub suites: Suites,
    /// The selected checks as (suite index, check index).
    pub selected: Vec<(usize, usize)>,
    pub selection: mixcheck_reports::Selection,
    pub deadline: Duration,
    /// The settle window of pod and Service flows (`--settle`); None: the target's default.
    pub settle: Option<Duration>,
    pub concurrency: usize,
    /// Whether every node gets every check (`--coverage full`) or representatives do.
    pub coverage: mixcheck_reports::coverage::Mode,
    /// Print what the run would do and stop (`--plan`): nothing is created.
    pub plan_only: bool,
    pub keep: bool,
    pub strict: bool,
    pub quiet: bool,
    pub report_dir: PathBuf,
    /// An existing namespace to run in (`--namespace`); None: the run creates its own.
    pub namespace: Option<String>,
    /// The registry mirrors the fixture images are rewritten for and the pull secrets every pod
    /// of the run names.
    pub registry: crate::cluster::registry::Registry,
    pub network_mode: Option<String>,
    /// Whether pods reach the internet, as the user said (None: detected).
    pub egress: Option<bool>,
    /// The targets outside the cluster the outbound checks aim at (`--outside-address`,
    /// `--outside-name`).
    pub outside: crate::probes::egress::Outside,
    /// The cause catalogue the failing cells are diagnosed with.
    pub causes: crate::catalogue::causes::Catalogue,
    /// Run the causes' confirmation commands on the implicated nodes.
    pub node_diagnostics: bool,
    /// Where the evidence bundle goes.
    pub bundle: Option<PathBuf>,
    /// The run to compare with (read before any cluster call).
    pub baseline: Option<Box<mixcheck_reports::RunReport>>,
}

impl RunPlan {
    pub fn checks(&self) -> impl Iterator<Item = (&Suite, &Check)> {
        self.selected
            .iter()
            .map(|&(s, c)| (&self.suites.suites[s], &self.suites.suites[s].checks[c]))
    }
}
