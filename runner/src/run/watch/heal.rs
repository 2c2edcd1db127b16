//! Keeping a watch's fixtures alive: before each cycle, the shared fixture pods that were usable
//! when deployed are looked up; one that is gone (deleted, evicted, its node drained), failed or
//! stuck not Ready is deleted and the fixtures are applied again (server-side apply: what is
//! there stays, what is missing is created) and awaited, as the first deploy did.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams};

use crate::cluster::deploy::{self, Deployment};

/// How long one list or delete may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The fixture pods of `dep` that were usable when deployed, by name.
pub fn usable(dep: &Deployment) -> BTreeSet<String> {
    [&dep.servers, &dep.clients, &dep.hosts, &dep.host_ports]
        .into_iter()
        .flat_map(|m| m.values())
        .filter(|p| p.problem.is_none())
        .map(|p| p.name.clone())
        .collect()
}

/// Whether a pod is Running and Ready, and not being deleted.
fn healthy(pod: &Pod) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(status) = &pod.status else {
        return false;
    };
    status.phase.as_deref() == Some("Running")
        && status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// The fixture pods among `wanted` that are missing or unhealthy, each with why; an error when
/// the API server cannot be asked.
pub async fn broken(pods: &Api<Pod>, run_id: &str, wanted: &BTreeSet<String>) -> Result<Vec<(String, String)>, String> {
    let selector = deploy::run_labels(run_id)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let listed = match tokio::time::timeout(CALL_TIMEOUT, pods.list(&ListParams::default().labels(&selector))).await {
        Ok(Ok(l)) => l.items,
        Ok(Err(e)) => return Err(format!("cannot list the fixture pods: {e}")),
        Err(_) => return Err(format!("listing the fixture pods took over {CALL_TIMEOUT:?}")),
    };
    let mut out = Vec::new();
    for name in wanted {
        match listed.iter().find(|p| p.metadata.name.as_deref() == Some(name)) {
            None => out.push((name.clone(), "gone".to_string())),
            Some(p) if !healthy(p) => {
                let phase = p.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default();
                let why = if p.metadata.deletion_timestamp.is_some() {
                    "being deleted".to_string()
                } else {
                    format!("{} and not Ready", if phase.is_empty() { "no phase" } else { &phase })
                };
                out.push((name.clone(), why));
            }
            Some(_) => {}
        }
    }
    Ok(out)
}

/// Deletes the broken pods that still exist (at once: they are replaced).
pub async fn remove(pods: &Api<Pod>, broken: &[(String, String)]) {
    for (name, why) in broken {
        if why == "gone" {
            continue;
        }
        let _ = tokio::time::timeout(
            CALL_TIMEOUT,
            pods.delete(name, &DeleteParams::default().grace_period(0)),
        )
        .await;
    }
    // A deleted pod's name is free again once the object is gone.
    for (name, why) in broken {
        if why == "gone" {
            continue;
        }
        for _ in 0..60 {
            match tokio::time::timeout(CALL_TIMEOUT, pods.get_opt(name)).await {
                Ok(Ok(None)) | Ok(Err(_)) | Err(_) => break,
                Ok(Ok(Some(_))) => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(phase: &str, ready: bool, deleting: bool) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "srv-0",
                "deletionTimestamp": if deleting { Some("2026-12-03T14:00:00Z") } else { None },
            },
            "status": {
                "phase": phase,
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
            },
        }))
        .expect("a pod")
    }

    #[rstest::rstest]
    #[case::running_ready("Running", true, false, true)]
    #[case::running_not_ready("Running", false, false, false)]
    #[case::evicted("Failed", false, false, false)]
    #[case::stuck_pending("Pending", false, false, false)]
    #[case::being_deleted("Running", true, true, false)]
    fn a_fixture_is_healthy_when_running_ready_and_kept(
        #[case] phase: &str,
        #[case] ready: bool,
        #[case] deleting: bool,
        #[case] expect: bool,
    ) {
        assert_eq!(healthy(&pod(phase, ready, deleting)), expect);
    }
}
