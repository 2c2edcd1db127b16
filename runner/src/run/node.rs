//! Judging one node of a cell about nodes: fact, logs, exec, create, outside and audit probes.

use mixcheck_reports::cell::Expectation as CellExpectation;
use mixcheck_reports::{Os, Verdict};

use crate::cluster::deploy;
use crate::cluster::facts::{self, ClusterNode};
use crate::probes::transport as probe;
use crate::catalogue::suite::{Destination, Probe};
use crate::probes::expectation as verdict;
use crate::cluster::workload::NotReady;

use crate::probes::audit::{audit_memory_requests, audit_workloads};
use super::cells::{CellPlan, Pair};
use super::judge::{Ctx, PairJudgement, cell_facts, judgement, not_ready};
use super::request::outside_get;

/// Judges one node of a fact, exec, create or outside cell.
pub(super) async fn judge_other(ctx: &Ctx<'_>, plan: &CellPlan<'_>, pair: Pair, index: usize) -> PairJudgement {
    let facts = ctx.facts;
    let node_idx = pair.from.or(pair.to).unwrap_or(0);
    let Some(node) = facts.nodes.get(node_idx) else {
        return judgement(Verdict::Error, "the cell has no node".into());
    };
    let cell_facts = cell_facts(facts, plan, pair, None);
    let e = match verdict::expectation(plan.check, &cell_facts) {
        Ok(e) => e,
        Err(fact) => return judgement(Verdict::Indeterminate, format!("unknown: {fact}")),
    };
    let sources = if e.sources.is_empty() {
        plan.check.sources.clone()
    } else {
        e.sources.clone()
    };
    let Some(kind) = verdict::expected(e.result) else {
        let mut j = judgement(Verdict::NotApplicable, e.says.clone());
        j.sources = sources;
        return j;
    };
    if let Some(mut down) = not_ready(facts, pair, &plan.check.probe) {
        down.expected = Some(CellExpectation {
            kind,
            text: e.says.clone(),
        });
        down.sources = sources;
        return down;
    }
    let finish = |observation: probe::Observation, summary: String, output: Option<probe::Output>| {
        let outcome = verdict::outcome(e, &observation);
        let verdict = verdict::decide(e, &outcome);
        let class = match &observation {
            probe::Observation::Failed(c) => Some(*c),
            probe::Observation::Reached(_) => None,
        };
        PairJudgement {
            verdict,
            expected: Some(CellExpectation {
                kind,
                text: e.says.clone(),
            }),
            reason: None,
            summary,
            output,
            class,
            flaky: false,
            sources: sources.clone(),
            remedy: None,
        }
    };
    let error = |why: String| {
        let mut j = judgement(Verdict::Error, why);
        j.expected = Some(CellExpectation {
            kind,
            text: e.says.clone(),
        });
        j.sources = sources.clone();
        j
    };
    match &plan.check.probe {
        Probe::Logs {
            agent,
            fails,
            requires,
            line,
            must,
        } => match crate::probes::logs::log_of(&ctx.client, &node.name, *agent).await {
            Err(why) => error(why),
            Ok(None) => {
                let mut j = judgement(
                    Verdict::Indeterminate,
                    format!(
                        "unknown: {} has no {agent:?} pod and its kubelet serves no /logs/{}",
                        node.name,
                        agent.node_log()
                    ),
                );
                j.sources = sources.clone();
                j
            }
            Ok(Some(log)) => match crate::probes::logs::judge_log(
                &log.text,
                &crate::probes::logs::LogRule {
                    fails: fails.as_deref(),
                    requires: requires.as_deref(),
                    line: line.as_deref(),
                    must: must.as_deref(),
                },
            ) {
                Err(bad) => error(format!("the check's log expression: {bad}")),
                Ok(crate::probes::logs::LogFinding::Clean) => finish(
                    probe::Observation::Reached(format!("log of {}", log.pod)),
                    format!("{}: the log of {} has no offending line", node.name, log.pod),
                    None,
                ),
                Ok(crate::probes::logs::LogFinding::Offence(offence)) => finish(
                    probe::Observation::Failed(crate::catalogue::suite::FailureClass::Mismatch),
                    format!("{}: the log of {} says: {offence}", node.name, log.pod),
                    None,
                ),
                Ok(crate::probes::logs::LogFinding::Silent(why)) => {
                    let mut j = judgement(
                        Verdict::Indeterminate,
                        format!("unknown: the log of {} on {}: {why}", log.pod, node.name),
                    );
                    j.sources = sources.clone();
                    j
                }
            },
        },
        Probe::Fact { fact } => match facts::judge(*fact, node, facts, e.limit.as_deref()) {
            Ok((true, seen)) => finish(
                probe::Observation::Reached(seen.clone()),
                format!("{}: {seen}", node.name),
                None,
            ),
            Ok((false, seen)) => finish(
                probe::Observation::Failed(crate::catalogue::suite::FailureClass::Mismatch),
                format!("{}: {seen}", node.name),
                None,
            ),
            Err(fact) => {
                let mut j = judgement(Verdict::Indeterminate, format!("unknown: {fact}"));
                j.sources = sources.clone();
                j
            }
        },
        Probe::Outside { to } => {
            let Some(svc) = ctx.dep.services.get(&node.name) else {
                return error(format!("no service over the server on {}", node.name));
            };
            if let Some(why) = ctx.dep.servers.get(&node.name).and_then(|p| p.problem.as_ref()) {
                return error(format!("the netexec server on {} is not usable: {why}", node.name));
            }
            let url = match to {
                Destination::LoadBalancer => {
                    match ctx.dep.load_balancers.get(&node.pool()).and_then(|s| s.ingress.clone()) {
                        Some(ip) => format!("http://{ip}:80/hostname"),
                        None => {
                            let mut j = judgement(
                                Verdict::Indeterminate,
                                format!(
                                    "unknown: the LoadBalancer service of pool {} got no ingress address (does the cluster have a load-balancer controller?)",
                                    node.pool()
                                ),
                            );
                            j.sources = sources.clone();
                            return j;
                        }
                    }
                }
                Destination::HostPort => format!("http://{}:{}/hostname", node.address, deploy::HOST_PORT),
                _ => match svc.node_ports.0 {
                    Some(port) => format!("http://{}:{port}/hostname", node.address),
                    None => return error(format!("service {} has no node port", svc.name)),
                },
            };
            let (obs, seen) = {
                let _permit = ctx.permits.acquire().await;
                outside_get(&url).await
            };
            finish(obs, format!("this machine → {url}: {seen}"), None)
        }
        Probe::Exec {
            fixture,
            command,
            stdout,
        } => {
            let os = match node.os {
                Os::Linux => crate::catalogue::suite::Os::Linux,
                Os::Windows => crate::catalogue::suite::Os::Windows,
            };
            let Some(argv) = command.get(&os) else {
                return finish(
                    probe::Observation::Failed(crate::catalogue::suite::FailureClass::Other),
                    format!("the check has no {} command", node.os),
                    None,
                );
            };
            // A HostProcess fixture on a Windows node without HostProcess: no documented
            // in-cluster way to look from the host (windows-rules.md §3.0).
            if node.os == Os::Windows
                && node.host_process() != Some(true)
                && ctx
                    .workloads
                    .fixtures
                    .get(fixture)
                    .and_then(|f| f.pod_for(node))
                    .is_some_and(crate::cluster::fixture::needs_host_process)
            {
                let mut j = judgement(
                    Verdict::Indeterminate,
                    format!(
                        "HostProcess pods are not available on {} (they need Kubernetes 1.23+ and containerd 1.6+): no documented in-cluster way to probe from the Windows host",
                        node.name
                    ),
                );
                j.sources = sources.clone();
                return j;
            }
            let pod = match ctx.workloads.ready_pod(fixture, node, node_idx).await {
                Ok(p) => p,
                // The node refused the fixture's pod (not an image it could not pull): what the
                // check's spec asks for failed — a probe result the suite may document.
                Err(NotReady::Failed(why)) => {
                    return finish(
                        probe::Observation::Failed(crate::catalogue::suite::FailureClass::PodFailed),
                        why,
                        None,
                    );
                }
                Err(why) => return error(why.to_string()),
            };
            let argv: Vec<String> = argv.iter().map(|a| a.replace("{{namespace}}", ctx.ns)).collect();
            let out = match ctx.exec(&pod, None, &argv).await {
                Ok((o, _)) => o,
                Err(e) => return error(format!("the probe could not run: {e}")),
            };
            let text = out.stdout_text();
            let matched = match stdout {
                Some(re) => regex::Regex::new(re).map(|r| r.is_match(&text)).unwrap_or(false),
                None => true,
            };
            let obs = if out.exit_code == Some(0) && matched {
                probe::Observation::Reached(text.clone())
            } else if out.exit_code == Some(0) {
                probe::Observation::Failed(crate::catalogue::suite::FailureClass::Mismatch)
            } else {
                probe::Observation::Failed(crate::catalogue::suite::FailureClass::Other)
            };
            let first = text.lines().next().unwrap_or_default().to_string();
            finish(obs, format!("{pod}: exit {:?}, {first:?}", out.exit_code), Some(out))
        }
        Probe::Create {
            fixture,
            outcome,
            message,
        } => match ctx.workloads.create(fixture, node, node_idx, index).await {
            Ok((name, seen)) => {
                use crate::catalogue::suite::{CreateOutcome as O, FailureClass as C};
                // `message` is the documented signature of a refusal or failure: it must match
                // a failure the probe saw, whether or not that failure is the probe's outcome.
                let signature = |m: &str| {
                    message
                        .as_ref()
                        .is_none_or(|re| regex::Regex::new(re).map(|r| r.is_match(m)).unwrap_or(false))
                };
                let obs = if seen.outcome == *outcome && (seen.outcome == O::Runs || signature(&seen.message)) {
                    probe::Observation::Reached(seen.message.clone())
                } else {
                    probe::Observation::Failed(match seen.outcome {
                        O::Runs => C::Accepted,
                        _ if !signature(&seen.message) => C::Other,
                        O::RejectedByApi => C::Rejected,
                        O::Fails => C::PodFailed,
                        O::Unschedulable => C::Other,
                    })
                };
                let summary = format!(
                    "pod {name}: {:?}{}",
                    seen.outcome,
                    if seen.message.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", seen.message)
                    }
                );
                finish(obs, summary, None)
            }
            Err(why) => error(why),
        },
        Probe::Audit {
            audit: crate::catalogue::suite::AuditKind::LinuxWorkloadsOnWindows,
        } => {
            let windows: Vec<&ClusterNode> = facts
                .nodes
                .iter()
                .filter(|n| n.os == Os::Windows && n.schedulable())
                .collect();
            match audit_workloads(ctx.pods_client(), &windows).await {
                Ok(found) if found.is_empty() => finish(
                    probe::Observation::Reached(String::new()),
                    "no DaemonSet or Deployment without an OS selector can land on the Windows nodes".into(),
                    None,
                ),
                Ok(found) => finish(
                    probe::Observation::Failed(crate::catalogue::suite::FailureClass::Mismatch),
                    format!(
                        "without an OS selector and not kept off Windows by taints: {}",
                        found.join(", ")
                    ),
                    None,
                ),
                Err(e) => error(format!("listing workloads: {e}")),
            }
        }
        Probe::Audit {
            audit: crate::catalogue::suite::AuditKind::WindowsMemoryRequestNotLimit,
        } => match audit_memory_requests(ctx.pods_client()).await {
            Ok(found) if found.is_empty() => finish(
                probe::Observation::Reached(String::new()),
                "every Windows workload sets only a memory limit, or a request equal to it".into(),
                None,
            ),
            Ok(found) => finish(
                probe::Observation::Failed(crate::catalogue::suite::FailureClass::Mismatch),
                format!("memory request differs from the limit: {}", found.join(", ")),
                None,
            ),
            Err(e) => error(format!("listing workloads: {e}")),
        },
        Probe::Connect { .. } | Probe::Resolve { .. } => error("not a node probe".into()),
    }
}
