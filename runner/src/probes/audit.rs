//! `audit`: the cluster's own workloads (DaemonSets and Deployments), read from the API, for
//! what the documentation says they must not do on Windows nodes.

use kube::api::{Api, ListParams};
use mixcheck_reports::Os;

use crate::catalogue::suite::{AuditKind, FailureClass};
use crate::cluster::facts::{self, ClusterNode};
use crate::probes::judgement::{Ctx, Probed};
use crate::probes::transport::Observation;

/// Runs the audit over the cluster's workloads.
pub async fn observe(ctx: &Ctx<'_>, audit: AuditKind) -> Probed {
    let mismatch = |what: String| Probed::seen(Observation::Failed(FailureClass::Mismatch), what);
    let clean = |what: &str| Probed::seen(Observation::Reached(String::new()), what.to_string());
    match audit {
        AuditKind::LinuxWorkloadsOnWindows => {
            let windows: Vec<&ClusterNode> = ctx
                .facts
                .nodes
                .iter()
                .filter(|n| n.os == Os::Windows && n.schedulable())
                .collect();
            match audit_workloads(&ctx.client, &windows).await {
                Ok(found) if found.is_empty() => {
                    clean("no DaemonSet or Deployment without an OS selector can land on the Windows nodes")
                }
                Ok(found) => mismatch(format!(
                    "without an OS selector and not kept off Windows by taints: {}",
                    found.join(", ")
                )),
                Err(e) => Probed::Error(format!("listing workloads: {e}")),
            }
        }
        AuditKind::WindowsMemoryRequestNotLimit => match audit_memory_requests(&ctx.client).await {
            Ok(found) if found.is_empty() => {
                clean("every Windows workload sets only a memory limit, or a request equal to it")
            }
            Ok(found) => mismatch(format!("memory request differs from the limit: {}", found.join(", "))),
            Err(e) => Probed::Error(format!("listing workloads: {e}")),
        },
    }
}

/// The DaemonSets and Deployments of the cluster whose pod template `flagged` picks, named
/// `kind namespace/name`.
async fn workloads_where(
    client: &kube::Client,
    flagged: &(dyn Fn(&k8s_openapi::api::core::v1::PodSpec) -> bool + Sync),
) -> Result<Vec<String>, kube::Error> {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment as Deploy};
    let mut found = Vec::new();
    for ds in Api::<DaemonSet>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
    {
        if ds
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .is_some_and(flagged)
        {
            found.push(format!(
                "daemonset {}/{}",
                ds.metadata.namespace.unwrap_or_default(),
                ds.metadata.name.unwrap_or_default()
            ));
        }
    }
    for d in Api::<Deploy>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
    {
        if d.spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .is_some_and(flagged)
        {
            found.push(format!(
                "deployment {}/{}",
                d.metadata.namespace.unwrap_or_default(),
                d.metadata.name.unwrap_or_default()
            ));
        }
    }
    Ok(found)
}

/// SCHED-NODESELECTOR's audit: DaemonSets and Deployments without an OS selector that the
/// Windows nodes' taints do not keep away, i.e. that would put (Linux) pods on Windows nodes.
async fn audit_workloads(client: &kube::Client, windows: &[&ClusterNode]) -> Result<Vec<String>, kube::Error> {
    let lands_on_windows = |spec: &k8s_openapi::api::core::v1::PodSpec| -> bool {
        let os = spec.node_selector.as_ref().and_then(|s| s.get("kubernetes.io/os"));
        let affinity_os = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| n.required_during_scheduling_ignored_during_execution.as_ref())
            .is_some_and(|r| {
                r.node_selector_terms.iter().any(|t| {
                    t.match_expressions
                        .iter()
                        .flatten()
                        .any(|e| e.key == "kubernetes.io/os")
                })
            });
        if os.is_some() || affinity_os {
            return false;
        }
        let tolerations = spec.tolerations.clone().unwrap_or_default();
        windows.iter().any(|n| {
            n.taints
                .iter()
                .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
                .all(|t| {
                    tolerations.iter().any(|tol| {
                        let key_ok = tol.key.as_deref().is_none_or(|k| k.is_empty() || k == t.key);
                        let op_exists = tol.operator.as_deref() == Some("Exists");
                        let value_ok = op_exists
                            || tol.value.as_deref().unwrap_or_default() == t.value.as_deref().unwrap_or_default();
                        let effect_ok = tol.effect.as_deref().is_none_or(|e| e.is_empty() || e == t.effect);
                        key_ok && value_ok && effect_ok
                    })
                })
        })
    };
    workloads_where(client, &lands_on_windows).await
}

/// MEM-LIMIT-EQ-REQUEST's audit: Windows workloads whose containers request a different amount
/// of memory than their limit.
async fn audit_memory_requests(client: &kube::Client) -> Result<Vec<String>, kube::Error> {
    let differs = |spec: &k8s_openapi::api::core::v1::PodSpec| -> bool {
        let windows = spec
            .node_selector
            .as_ref()
            .and_then(|s| s.get("kubernetes.io/os"))
            .is_some_and(|o| o == "windows")
            || spec.os.as_ref().is_some_and(|o| o.name == "windows");
        windows
            && spec.containers.iter().any(|c| {
                let r = c.resources.as_ref();
                let req = r
                    .and_then(|r| r.requests.as_ref())
                    .and_then(|m| m.get("memory"))
                    .and_then(|q| facts::quantity_bytes(&q.0));
                let lim = r
                    .and_then(|r| r.limits.as_ref())
                    .and_then(|m| m.get("memory"))
                    .and_then(|q| facts::quantity_bytes(&q.0));
                matches!((req, lim), (Some(a), Some(b)) if a != b)
            })
    };
    workloads_where(client, &differs).await
}
