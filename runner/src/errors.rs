//! The error that ends a command, and the exit code each ends it with — decided in one `match`
//! ([`Error::process_exit_code`]), the table of `docs/design.md`: 0 gate passed · 1 some cell
//! failed or errored · 2 bad usage, suite, fixture, topology, kubeconfig or pull secret · 3 cluster
//! unreachable or unauthorised · 4 no check selected · 130 interrupted (after cleanup).

use mixcheck_reports::results_json;

use crate::catalogue::rules::RulesError;
use crate::catalogue::suite::SuiteError;
use crate::cluster::job::JobError;
use crate::cluster::pullsecret::PullSecretError;
use crate::cluster::target::TargetError;

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

/// Why a command ended without its normal outcome. Every command returns it; the binary's
/// edge prints it and exits with [`Error::process_exit_code`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad command-line value.
    #[error("{0}")]
    Usage(String),
    /// The selection matched no check.
    #[error("no check matches the selection ({0}); `mixcheck list` shows the checks")]
    NothingSelected(String),
    /// A suite, fixture or cause file is malformed.
    #[error(transparent)]
    Suite(#[from] SuiteError),
    /// The embedded rule catalogue is broken (a build defect, not the user's input).
    #[error(transparent)]
    Rules(#[from] RulesError),
    /// A bundled-cluster topology is malformed.
    #[error(transparent)]
    Topology(#[from] simcluster::TopologyError),
    /// A saved run could not be read or written.
    #[error(transparent)]
    Results(#[from] results_json::Error),
    /// The cluster could not be opened.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// An in-cluster Job's results could not be read.
    #[error(transparent)]
    Job(#[from] JobError),
    /// A pull secret of `--image-pull-secret` cannot be used.
    #[error(transparent)]
    PullSecret(#[from] PullSecretError),
    /// The standalone bundled cluster did not start.
    #[error(transparent)]
    Cluster(#[from] simcluster::ClusterError),
    /// The cluster answered with an error to a call the command needs.
    #[error("{what}: {source}")]
    Api {
        what: String,
        #[source]
        source: kube::Error,
    },
    /// Anything else that stopped the command (said in full).
    #[error("{0}")]
    Failed(String),
}

impl Error {
    /// The exit code a command that ends with this error exits with.
    pub fn process_exit_code(&self) -> Code {
        use results_json::Error as R;
        match self {
            Error::Usage(_)
            | Error::Suite(_)
            | Error::Topology(_)
            | Error::Target(TargetError::Kubeconfig { .. })
            | Error::Job(JobError::NoResults { .. } | JobError::Report(_))
            | Error::Results(R::Read { .. } | R::Syntax { .. } | R::Content { .. } | R::UnsupportedSchema { .. })
            | Error::Cluster(simcluster::ClusterError::Listen { .. })
            | Error::PullSecret(PullSecretError::Unusable(_)) => Code::Usage,
            Error::NothingSelected(_) => Code::NothingSelected,
            Error::Target(TargetError::Unreachable { .. })
            | Error::Job(JobError::Api { .. })
            | Error::PullSecret(PullSecretError::Unreadable(_)) => Code::Unreachable,
            Error::Rules(_)
            | Error::Results(_)
            | Error::Target(TargetError::Bundled(_))
            | Error::Cluster(_)
            | Error::Api { .. }
            | Error::Failed(_) => Code::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rstest::rstest]
    #[case::usage(Error::Usage("--timeout".into()), Code::Usage)]
    #[case::nothing(Error::NothingSelected("x".into()), Code::NothingSelected)]
    #[case::kubeconfig(Error::Target(TargetError::Kubeconfig { path: "kc".into(), message: "bad".into() }), Code::Usage)]
    #[case::unreachable(
        Error::Target(TargetError::Unreachable { server: "s".into(), context: "c".into(), cause: "refused".into(), proxy: None }),
        Code::Unreachable
    )]
    #[case::job_api(Error::Job(JobError::Api { namespace: "n".into(), name: "j".into(), cause: "x".into() }), Code::Unreachable)]
    #[case::job_empty(Error::Job(JobError::NoResults { namespace: "n".into(), name: "j".into(), message: "x".into() }), Code::Usage)]
    #[case::suite(Error::Suite(SuiteError::Invalid { path: "s.yaml".into(), message: "x".into() }), Code::Usage)]
    #[case::pull_secret_missing(Error::PullSecret(PullSecretError::Unusable("no Secret".into())), Code::Usage)]
    #[case::pull_secret_forbidden(Error::PullSecret(PullSecretError::Unreadable("forbidden".into())), Code::Unreachable)]
    #[case::other(Error::Failed("broke".into()), Code::Failed)]
    fn each_error_ends_a_command_with_its_documented_code(#[case] e: Error, #[case] code: Code) {
        assert_eq!(e.process_exit_code(), code);
    }
}
