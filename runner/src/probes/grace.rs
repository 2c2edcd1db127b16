//! `termination-grace`: a pod whose process delays its own shutdown is deleted with its grace
//! period, and the time it takes to go says whether the runtime let the process finish
//! (POD-TERMINATION-GRACE).

use std::time::Duration;

use crate::catalogue::suite::FailureClass;
use crate::cluster::workload::{NotReady, Stopped};
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::transport::Observation;

/// How much earlier than its own shutdown delay a pod may go and still count as having had it
/// (the delete call, the kubelet's watch and the API's removal are not instantaneous, but a
/// runtime that kills early does so seconds before).
const SLACK: Duration = Duration::from_millis(500);

/// Creates the fixture's pod on the node, deletes it once it runs and judges how long it took.
pub async fn observe(ctx: &Ctx<'_>, case: &Case<'_>, fixture: &str, shutdown_seconds: u64) -> Probed {
    let (node_idx, node) = match case.node(ctx.facts) {
        Ok(n) => n,
        Err(p) => return p.into(),
    };
    match ctx.workloads.stop_timed(fixture, node, node_idx, case.index).await {
        Ok(stopped) => {
            let (observation, summary) = judge(&stopped, shutdown_seconds);
            Probed::seen(observation, summary)
        }
        Err(NotReady::Failed(why)) => Probed::seen(Observation::Failed(FailureClass::PodFailed), why),
        Err(NotReady::Refused(why)) => Probed::Unknown(why),
        Err(why) => Probed::Error(why.to_string()),
    }
}

/// The observation of a deletion that took `stopped.took` against a process that needs
/// `shutdown_seconds` to stop.
fn judge(stopped: &Stopped, shutdown_seconds: u64) -> (Observation, String) {
    let needs = Duration::from_secs(shutdown_seconds);
    let Some(took) = stopped.took else {
        return (
            Observation::Failed(FailureClass::Timeout),
            format!(
                "pod {}: still there a minute after its {} s grace period ended",
                stopped.name, stopped.grace
            ),
        );
    };
    let said = format!(
        "pod {}: gone {:.1} s after its deletion (grace period {} s; its process takes {} s to shut down)",
        stopped.name,
        took.as_secs_f64(),
        stopped.grace,
        shutdown_seconds
    );
    if took + SLACK >= needs {
        (Observation::Reached(said.clone()), said)
    } else {
        (
            Observation::Failed(FailureClass::Mismatch),
            format!("{said}: stopped before its shutdown finished"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    // The process had its 8 s (containerd, Linux: the grace period is 30 s).
    #[case::honoured(Some(12_300), "reached")]
    #[case::just_within_slack(Some(11_600), "reached")]
    // Killed after Windows' 5 s wait (Docker on Windows, W14).
    #[case::killed_early(Some(5_200), "mismatch")]
    #[case::stuck(None, "timeout")]
    fn a_deletion_is_judged_by_how_long_it_took(#[case] took_ms: Option<u64>, #[case] expected: &str) {
        let stopped = Stopped {
            name: "p".into(),
            took: took_ms.map(Duration::from_millis),
            grace: 30,
        };
        let (observation, summary) = judge(&stopped, 12);
        let got = match observation {
            Observation::Reached(_) => "reached",
            Observation::Failed(FailureClass::Mismatch) => "mismatch",
            Observation::Failed(FailureClass::Timeout) => "timeout",
            _ => "other",
        };
        assert_eq!(got, expected, "{summary}");
        assert!(summary.contains("pod p"), "{summary}");
    }
}
