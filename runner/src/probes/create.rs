//! `create`: a fixture pod created on the node, and what the API server and the kubelet do with
//! it (runs, rejected by the API, fails, unschedulable), with the documented message, and for a
//! pod that runs the termination message the kubelet reports for it.

use crate::catalogue::suite::{CreateOutcome, FailureClass};
use crate::cluster::workload::{NotReady, Observed};
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::transport::Observation;

/// What a `create` check documents: the outcome, the signature of a refusal or failure, and for
/// a pod that runs the termination message its containers leave.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    pub outcome: CreateOutcome,
    pub message: Option<&'a str>,
    pub termination_message: Option<&'a str>,
}

/// Creates the fixture's pod on the node and compares what happened with `expected`.
pub async fn observe(ctx: &Ctx<'_>, case: &Case<'_>, fixture: &str, expected: Expected<'_>) -> Probed {
    let (node_idx, node) = match case.node(ctx.facts) {
        Ok(n) => n,
        Err(p) => return p.into(),
    };
    let (name, seen) = match ctx.workloads.create(fixture, node, node_idx, case.index).await {
        Ok(x) => x,
        Err(NotReady::Refused(why) | NotReady::Unpullable(why)) => return Probed::Unknown(why),
        Err(why) => return Probed::Error(why.to_string()),
    };
    let (observation, summary) = judge(&name, &seen, expected);
    Probed::seen(observation, summary)
}

/// The observation and summary of a created pod's outcome `seen` against `expected`.
fn judge(name: &str, seen: &Observed, expected: Expected<'_>) -> (Observation, String) {
    use CreateOutcome as O;
    use FailureClass as C;
    let matches = |re: &str, text: &str| regex::Regex::new(re).map(|r| r.is_match(text)).unwrap_or(false);
    // `message` is the documented signature of a refusal or failure: it must match a failure
    // the probe saw, whether or not that failure is the probe's outcome.
    let signature = |m: &str| expected.message.is_none_or(|re| matches(re, m));
    // A pod that ran: the kubelet reports what its containers wrote to their
    // terminationMessagePath (POD-TERMINATION-MESSAGE).
    let termination_ok = expected
        .termination_message
        .is_none_or(|re| matches(re, &seen.termination));
    let observation = if seen.outcome == expected.outcome
        && (seen.outcome == O::Runs || signature(&seen.message))
        && (seen.outcome != O::Runs || termination_ok)
    {
        Observation::Reached(seen.message.clone())
    } else {
        Observation::Failed(match seen.outcome {
            O::Runs if seen.outcome == expected.outcome => C::Mismatch,
            O::Runs => C::Accepted,
            _ if !signature(&seen.message) => C::Other,
            O::RejectedByApi => C::Rejected,
            O::Fails => C::PodFailed,
            O::Unschedulable => C::Other,
        })
    };
    let termination = match expected.termination_message {
        None => String::new(),
        Some(_) if seen.termination.is_empty() => "; no termination message reported".to_string(),
        Some(_) => format!("; termination message {:?}", seen.termination),
    };
    let summary = format!(
        "pod {name}: {}{}{termination}",
        seen.outcome.describe(),
        if seen.message.is_empty() {
            String::new()
        } else {
            format!(" ({})", seen.message)
        }
    );
    (observation, summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const RUNS_WITH_MESSAGE: Expected<'static> = Expected {
        outcome: CreateOutcome::Runs,
        message: None,
        termination_message: Some("^mixcheck-terminated"),
    };

    #[rstest]
    #[case::message_reported("mixcheck-terminated", true)]
    #[case::no_message_reported("", false)]
    #[case::another_message("something else", false)]
    fn a_termination_message_is_judged_when_the_pod_ran(#[case] termination: &str, #[case] reached: bool) {
        let seen = Observed {
            outcome: CreateOutcome::Runs,
            message: String::new(),
            termination: termination.into(),
            unpullable: None,
        };
        let (observation, summary) = judge("p", &seen, RUNS_WITH_MESSAGE);
        if reached {
            assert!(matches!(observation, Observation::Reached(_)), "{summary}");
        } else {
            assert!(
                matches!(observation, Observation::Failed(FailureClass::Mismatch)),
                "{summary}"
            );
        }
        assert!(summary.contains("termination message"), "{summary}");
    }

    /// A pod that failed is judged as failed, whatever its termination message.
    #[test]
    fn a_failed_pod_is_a_pod_failure_not_a_mismatch() {
        let seen = Observed {
            outcome: CreateOutcome::Fails,
            message: "Error: exit 1".into(),
            termination: String::new(),
            unpullable: None,
        };
        let (observation, _) = judge("p", &seen, RUNS_WITH_MESSAGE);
        assert!(matches!(observation, Observation::Failed(FailureClass::PodFailed)));
    }
}
