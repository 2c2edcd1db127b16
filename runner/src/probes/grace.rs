//! `termination-grace`: a pod whose process delays its own shutdown is deleted with its grace
//! period, and the time it takes to go says whether the runtime let the process finish
//! (POD-TERMINATION-GRACE).

use std::time::Duration;

use crate::catalogue::suite::FailureClass;
use crate::cluster::workload::{NotReady, Stopped};
use crate::probes::clock::Clock;
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
    // Polled every 100 ms of the cluster's clock (at most every 10 ms of wall time), so the
    // reading is as fine on a fast simulated clock as on the wall clock.
    let poll = Duration::from_millis(100)
        .mul_f64(ctx.clock.scale())
        .max(Duration::from_millis(10));
    match ctx
        .workloads
        .stop_timed(fixture, node, node_idx, case.index, poll)
        .await
    {
        Ok(stopped) => match judge(&stopped, shutdown_seconds, ctx.clock) {
            Some((observation, summary)) => Probed::seen(observation, summary),
            None => Probed::Unknown(format!(
                "how long pod {} took to go: the bundled cluster's clock stands still (timing.scale 0), so every shutdown is instant",
                stopped.name
            )),
        },
        Err(NotReady::Failed(why)) => Probed::seen(Observation::Failed(FailureClass::PodFailed), why),
        Err(NotReady::Refused(why) | NotReady::Unpullable(why)) => Probed::Unknown(why),
        Err(why) => Probed::Error(why.to_string()),
    }
}

/// The observation of a deletion that took `stopped.took` (wall time) against a process that
/// needs `shutdown_seconds` of the cluster's `clock` to stop; None when that clock stands still.
/// The API's and the watch's latency only lengthen what is measured (on a clock ten times as
/// fast, tenfold), so the slack stays a slack of the cluster's clock: it forgives a measurement
/// a little short, never the seconds a runtime that kills early cuts off.
fn judge(stopped: &Stopped, shutdown_seconds: u64, clock: Clock) -> Option<(Observation, String)> {
    let needs = Duration::from_secs(shutdown_seconds);
    let Some(took) = stopped.took else {
        return Some((
            Observation::Failed(FailureClass::Timeout),
            format!(
                "pod {}: still there a minute after its {} s grace period ended",
                stopped.name, stopped.grace
            ),
        ));
    };
    let on_cluster = clock.on_cluster(took)?;
    let clock_note = if clock == Clock::WALL {
        String::new()
    } else {
        format!(
            " on the bundled cluster's clock ({:.2} s of wall time at timing.scale {})",
            took.as_secs_f64(),
            clock.scale()
        )
    };
    let said = format!(
        "pod {}: gone {:.1} s after its deletion{clock_note} (grace period {} s; its process takes {} s to shut down)",
        stopped.name,
        on_cluster.as_secs_f64(),
        stopped.grace,
        shutdown_seconds
    );
    Some(if on_cluster + SLACK >= needs {
        (Observation::Reached(said.clone()), said)
    } else {
        (
            Observation::Failed(FailureClass::Mismatch),
            format!("{said}: stopped before its shutdown finished"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// Durations are of the cluster's clock: on a simulated clock ten times as fast, the same
    /// deletion takes a tenth of the wall time (plus the same real latency) and is judged alike.
    #[rstest]
    // The process had its 12 s (containerd, Linux: the grace period is 30 s).
    #[case::honoured(Some(12_300), "reached")]
    #[case::just_within_slack(Some(11_600), "reached")]
    // Killed after Windows' 5 s wait (Docker on Windows, W14).
    #[case::killed_early(Some(5_200), "mismatch")]
    #[case::stuck(None, "timeout")]
    fn a_deletion_is_judged_by_how_long_it_took(
        #[case] took_ms: Option<u64>,
        #[case] expected: &str,
        #[values(1.0, 0.1, 0.05)] scale: f64,
    ) {
        let stopped = Stopped {
            name: "p".into(),
            // What the cluster's clock said, in wall time, with 20 ms of real API latency.
            took: took_ms.map(|ms| Duration::from_millis(ms).mul_f64(scale) + Duration::from_millis(20)),
            grace: 30,
        };
        let (observation, summary) = judge(&stopped, 12, Clock::simulated(scale)).expect("a running clock");
        let got = match observation {
            Observation::Reached(_) => "reached",
            Observation::Failed(FailureClass::Mismatch) => "mismatch",
            Observation::Failed(FailureClass::Timeout) => "timeout",
            _ => "other",
        };
        assert_eq!(got, expected, "{summary}");
        assert!(summary.contains("pod p"), "{summary}");
    }

    #[test]
    fn a_stopped_clock_decides_nothing() {
        let stopped = Stopped {
            name: "p".into(),
            took: Some(Duration::from_millis(3)),
            grace: 30,
        };
        assert!(judge(&stopped, 8, Clock::simulated(0.0)).is_none());
    }
}
