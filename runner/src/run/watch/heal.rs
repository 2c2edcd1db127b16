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

/// A fixture pod that is not serving, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    pub name: String,
    /// The node it was on (None: gone, or not scheduled).
    pub node: Option<String>,
    pub why: String,
    /// Gone, failed or being deleted: it will not come back by itself. A pod that is only not
    /// Ready may (a container restarting, a node under pressure for a moment).
    pub lasting: bool,
}

/// The fixture pods among `wanted` that are missing or unhealthy; an error when the API server
/// cannot be asked.
pub async fn broken(pods: &Api<Pod>, run_id: &str, wanted: &BTreeSet<String>) -> Result<Vec<Broken>, String> {
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
        let found = listed.iter().find(|p| p.metadata.name.as_deref() == Some(name));
        let node = found.and_then(|p| p.spec.as_ref()?.node_name.clone());
        let broken = |why: String, lasting: bool| Broken {
            name: name.clone(),
            node: node.clone(),
            why,
            lasting,
        };
        match found {
            None => out.push(broken("gone".into(), true)),
            Some(p) if !healthy(p) => {
                let phase = p.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default();
                if p.metadata.deletion_timestamp.is_some() {
                    out.push(broken("being deleted".into(), true));
                } else if matches!(phase.as_str(), "Failed" | "Succeeded") {
                    out.push(broken(format!("{phase}: evicted or ended"), true));
                } else {
                    let phase = if phase.is_empty() { "no phase" } else { phase.as_str() };
                    out.push(broken(format!("{phase} and not Ready"), false));
                }
            }
            Some(_) => {}
        }
    }
    Ok(out)
}

/// Deletes every pod of the run at once and waits until they are gone (a new epoch's fixtures
/// take their names).
pub async fn remove_all(pods: &Api<Pod>, run_id: &str) {
    let selector = deploy::run_labels(run_id)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let Ok(Ok(listed)) = tokio::time::timeout(CALL_TIMEOUT, pods.list(&ListParams::default().labels(&selector))).await
    else {
        return;
    };
    let all: Vec<Broken> = listed
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .map(|name| Broken {
            name,
            node: None,
            why: "replaced for the new nodes".into(),
            lasting: true,
        })
        .collect();
    remove(pods, &all).await;
}

/// Of the broken pods, those to replace now: the lasting ones, and those found not Ready at the
/// previous check too (stuck); `suspects` becomes the pods only not Ready now.
pub fn to_replace(broken: Vec<Broken>, suspects: &mut BTreeSet<String>) -> Vec<Broken> {
    let before = std::mem::take(suspects);
    let mut now = Vec::new();
    for b in broken {
        if b.lasting || before.contains(&b.name) {
            now.push(b);
        } else {
            suspects.insert(b.name);
        }
    }
    now
}

/// Deletes the broken pods that still exist (at once: they are replaced).
pub async fn remove(pods: &Api<Pod>, broken: &[Broken]) {
    for b in broken.iter().filter(|b| b.why != "gone") {
        let params = DeleteParams::default().grace_period(0);
        let _ = tokio::time::timeout(CALL_TIMEOUT, pods.delete(&b.name, &params)).await;
    }
    // A deleted pod's name is free again once the object is gone.
    for name in broken.iter().filter(|b| b.why != "gone").map(|b| &b.name) {
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

    /// A lasting break is replaced at once; a pod only not Ready is replaced when the next check
    /// finds it so again, and forgiven when it recovered in between.
    #[test]
    fn a_pod_only_not_ready_is_replaced_at_its_second_check() {
        let b = |name: &str, lasting: bool| Broken {
            name: name.into(),
            node: None,
            why: "w".into(),
            lasting,
        };
        let mut suspects = BTreeSet::new();
        let now = to_replace(
            vec![b("srv-1", true), b("cli-2", false), b("hp-3", false)],
            &mut suspects,
        );
        assert_eq!(now, vec![b("srv-1", true)]);
        assert_eq!(suspects, BTreeSet::from(["cli-2".to_string(), "hp-3".to_string()]));
        // hp-3 recovered; cli-2 is still not Ready.
        let now = to_replace(vec![b("cli-2", false)], &mut suspects);
        assert_eq!(now, vec![b("cli-2", false)]);
        assert!(suspects.is_empty());
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
