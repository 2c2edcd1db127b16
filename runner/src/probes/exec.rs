//! `exec`: a command in a fixture pod on the node (per OS), passing when it exits 0 and its
//! standard output matches.

use std::collections::BTreeMap;

use mixcheck_reports::Os;

use crate::catalogue::suite::FailureClass;
use crate::cluster::workload::NotReady;
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::transport::Observation;

/// Runs the check's command for the node's OS in the fixture's pod on the node.
pub async fn observe(
    ctx: &Ctx<'_>,
    case: &Case<'_>,
    fixture: &str,
    command: &BTreeMap<Os, Vec<String>>,
    stdout: Option<&str>,
) -> Probed {
    let (node_idx, node) = match case.node(ctx.facts) {
        Ok(n) => n,
        Err(p) => return p.into(),
    };
    let Some(argv) = command.get(&node.os) else {
        return Probed::seen(
            Observation::Failed(FailureClass::Other),
            format!("the check has no {} command", node.os),
        );
    };
    // A HostProcess fixture on a Windows node without HostProcess: no documented in-cluster
    // way to look from the host (HostProcess is the documented way; docs/sources.md, WHPC23).
    if node.os == Os::Windows
        && node.host_process() != Some(true)
        && ctx
            .workloads
            .fixtures
            .get(fixture)
            .and_then(|f| f.pod_for(node))
            .is_some_and(crate::cluster::fixture::needs_host_process)
    {
        return Probed::Unknown(format!(
            "HostProcess pods are not available on {} (they need Kubernetes 1.23+ and containerd 1.6+): no documented in-cluster way to probe from the Windows host",
            node.name
        ));
    }
    let pod = match ctx.workloads.ready_pod(fixture, node, node_idx).await {
        Ok(p) => p,
        // The node refused the fixture's pod (not an image it could not pull): what the check's
        // spec asks for failed — a probe result the suite may document.
        Err(NotReady::Failed(why)) => return Probed::seen(Observation::Failed(FailureClass::PodFailed), why),
        Err(NotReady::Refused(why) | NotReady::Unpullable(why)) => return Probed::Unknown(why),
        Err(why) => return Probed::Error(why.to_string()),
    };
    let argv: Vec<String> = argv.iter().map(|a| a.replace("{{namespace}}", ctx.ns)).collect();
    let out = match ctx.exec(&pod, None, &argv).await {
        Ok((o, _)) => o,
        Err(e) => return Probed::Error(format!("the probe could not run: {e}")),
    };
    let text = out.stdout_text();
    let matched = match stdout {
        Some(re) => regex::Regex::new(re).map(|r| r.is_match(&text)).unwrap_or(false),
        None => true,
    };
    let observation = if out.exit_code == Some(0) && matched {
        Observation::Reached(text.clone())
    } else if out.exit_code == Some(0) {
        Observation::Failed(FailureClass::Mismatch)
    } else {
        Observation::Failed(FailureClass::Other)
    };
    let first = text.lines().next().unwrap_or_default().to_string();
    Probed::Seen {
        observation,
        summary: format!(
            "{pod}: {}, {}",
            out.exit_code
                .map_or("exit code unknown".to_string(), |c| format!("exit {c}")),
            if first.is_empty() {
                "no output".to_string()
            } else {
                format!("first line: {first}")
            }
        ),
        output: Some(out),
        flaky: false,
        backends: Vec::new(),
    }
}
