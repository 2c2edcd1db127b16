//! The exit codes, in one documented place (DESIGN.md): 0 gate passed · 1 some check failed or
//! errored · 2 bad usage, suite, fixture or config · 3 cluster unreachable or unauthorised ·
//! 4 no check selected · 130 interrupted (after cleanup).

/// A process exit code of mixcheck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Passed = 0,
    Failed = 1,
    Usage = 2,
    Unreachable = 3,
    NothingSelected = 4,
    Interrupted = 130,
    /// Not a documented outcome: the harness itself broke (reported as a failure).
    Internal = 70,
}

impl From<Code> for std::process::ExitCode {
    fn from(c: Code) -> Self {
        std::process::ExitCode::from(c as u8)
    }
}

/// The exit code for an error that ended a command.
pub fn classify(e: &anyhow::Error) -> Code {
    if let Some(err) = e.downcast_ref::<simcluster::config::topology::TopologyError>() {
        let _ = err;
        return Code::Usage;
    }
    if e.downcast_ref::<crate::sim::UsageError>().is_some()
        || e.downcast_ref::<crate::plan::PlanError>().is_some()
        || e.downcast_ref::<crate::suite::SuiteError>().is_some()
        || matches!(
            e.downcast_ref::<mixcheck_reports::results_json::Error>(),
            Some(
                mixcheck_reports::results_json::Error::Read { .. }
                    | mixcheck_reports::results_json::Error::Syntax { .. }
                    | mixcheck_reports::results_json::Error::Content { .. }
                    | mixcheck_reports::results_json::Error::UnsupportedSchema { .. }
            )
        )
        || matches!(
            e.downcast_ref::<crate::target::TargetError>(),
            Some(crate::target::TargetError::Kubeconfig { .. })
        )
    {
        return Code::Usage;
    }
    if let Some(simcluster::ClusterError::Listen { .. }) = e.downcast_ref::<simcluster::ClusterError>() {
        return Code::Usage;
    }
    Code::Failed
}
