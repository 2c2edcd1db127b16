//! `node-stats`: the kubelet's summary API through the API server's node proxy
//! (`/api/v1/nodes/NODE/proxy/stats/summary`), as the Windows kubelet-stats e2e test reads it:
//! it must answer within 10 s, about its own node, with the node's memory working set measured.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::catalogue::suite::FailureClass;
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::transport::Observation;

/// The e2e test's bound on one summary call (E2E/kubelet_stats).
const WITHIN: Duration = Duration::from_secs(10);

/// What a summary says about `node`: None when it is the node's own summary with its working
/// set measured, else what is wrong with it.
fn problem(summary: &Value, node: &str) -> Option<String> {
    let named = summary
        .pointer("/node/nodeName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if named != node {
        return Some(format!("the summary names node {named:?}"));
    }
    let working_set = summary
        .pointer("/node/memory/workingSetBytes")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    (working_set == 0).then(|| "the summary has no memory working set for the node".to_string())
}

/// Reads the node's stats summary through the API server.
pub async fn observe(ctx: &Ctx<'_>, case: &Case<'_>) -> Probed {
    let (_, node) = match case.node(ctx.facts) {
        Ok(n) => n,
        Err(p) => return p.into(),
    };
    let path = format!("/api/v1/nodes/{}/proxy/stats/summary", node.name);
    let request = match http::Request::get(&path).body(Vec::new()) {
        Ok(r) => r,
        Err(e) => return Probed::Error(format!("{path}: {e}")),
    };
    let started = Instant::now();
    let answer = tokio::time::timeout(WITHIN, ctx.client.request_text(request)).await;
    let took = started.elapsed();
    let (observation, what) = match answer {
        Err(_) => (
            Observation::Failed(FailureClass::Timeout),
            format!("no answer within {} s", WITHIN.as_secs()),
        ),
        Ok(Err(e)) => match crate::cluster::access::denied(&e.to_string()) {
            Some(denial) => return Probed::Unknown(crate::cluster::access::unknown_because(&denial)),
            None => (Observation::Failed(FailureClass::Other), e.to_string()),
        },
        Ok(Ok(text)) => match serde_json::from_str::<Value>(&text) {
            Err(e) => (Observation::Failed(FailureClass::Other), format!("not a summary: {e}")),
            Ok(summary) => match problem(&summary, &node.name) {
                Some(why) => (Observation::Failed(FailureClass::Mismatch), why),
                None => (
                    Observation::Reached(text),
                    format!("answered in {:.1} s", took.as_secs_f64()),
                ),
            },
        },
    };
    Probed::seen(observation, format!("GET {path}: {what}"))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    #[rstest]
    #[case::own(json!({"node": {"nodeName": "win-1", "memory": {"workingSetBytes": 1024}}}), false)]
    #[case::other(json!({"node": {"nodeName": "lin-1", "memory": {"workingSetBytes": 1024}}}), true)]
    #[case::unmeasured(json!({"node": {"nodeName": "win-1", "memory": {}}}), true)]
    #[case::empty(json!({}), true)]
    fn a_summary_is_the_nodes_own_with_its_working_set(#[case] summary: Value, #[case] wrong: bool) {
        assert_eq!(problem(&summary, "win-1").is_some(), wrong);
    }
}
