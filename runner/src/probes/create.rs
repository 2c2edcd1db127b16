//! `create`: a fixture pod created on the node, and what the API server and the kubelet do with
//! it (runs, rejected by the API, fails, unschedulable), with the documented message.

use crate::catalogue::suite::{CreateOutcome, FailureClass};
use crate::cluster::workload::NotReady;
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::transport::Observation;

/// Creates the fixture's pod on the node and compares what happened with `outcome`.
pub async fn observe(
    ctx: &Ctx<'_>,
    case: &Case<'_>,
    fixture: &str,
    outcome: CreateOutcome,
    message: Option<&str>,
) -> Probed {
    let (node_idx, node) = match case.node(ctx.facts) {
        Ok(n) => n,
        Err(p) => return p.into(),
    };
    let (name, seen) = match ctx.workloads.create(fixture, node, node_idx, case.index).await {
        Ok(x) => x,
        Err(NotReady::Refused(why)) => return Probed::Unknown(why),
        Err(why) => return Probed::Error(why.to_string()),
    };
    use CreateOutcome as O;
    use FailureClass as C;
    // `message` is the documented signature of a refusal or failure: it must match a failure
    // the probe saw, whether or not that failure is the probe's outcome.
    let signature = |m: &str| message.is_none_or(|re| regex::Regex::new(re).map(|r| r.is_match(m)).unwrap_or(false));
    let observation = if seen.outcome == outcome && (seen.outcome == O::Runs || signature(&seen.message)) {
        Observation::Reached(seen.message.clone())
    } else {
        Observation::Failed(match seen.outcome {
            O::Runs => C::Accepted,
            _ if !signature(&seen.message) => C::Other,
            O::RejectedByApi => C::Rejected,
            O::Fails => C::PodFailed,
            O::Unschedulable => C::Other,
        })
    };
    let summary = format!(
        "pod {name}: {}{}",
        seen.outcome.describe(),
        if seen.message.is_empty() {
            String::new()
        } else {
            format!(" ({})", seen.message)
        }
    );
    Probed::seen(observation, summary)
}
