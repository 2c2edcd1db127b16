//! What a pre-pull creates on the cluster and deletes again: its namespace (unless given one)
//! and its DaemonSets — each recorded before it is asked for, so that the deletion at the end
//! (also after Ctrl-C or the deadline cut a creation short) leaves nothing behind.

use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

use super::PrepullError;
use super::daemonset::labels;

/// How long one API call of the pre-pull may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// `call` within [`CALL_TIMEOUT`]; a timeout is an unreachable cluster.
pub async fn within<T>(
    what: &str,
    call: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, PrepullError> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(PrepullError::from_kube(what, e)),
        Err(_) => Err(PrepullError::Unreachable {
            what: what.to_string(),
            cause: format!("no answer within {} s", CALL_TIMEOUT.as_secs()),
        }),
    }
}

/// What the pre-pull has asked the cluster to create so far.
#[derive(Debug, Default)]
pub struct Created {
    /// The namespace and whether the pre-pull created it.
    pub namespace: Option<(String, bool)>,
    pub daemonsets: Vec<String>,
}

/// The objects of one pre-pull.
pub struct Objects<'a> {
    pub client: &'a kube::Client,
    pub id: &'a str,
    pub created: Mutex<Created>,
}

impl Objects<'_> {
    fn record(&self, f: impl FnOnce(&mut Created)) {
        let mut c = self.created.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut c);
    }

    /// The namespace to pull in: `existing` as it is (it must exist), else a new
    /// `mixcheck-prepull-<id>` labelled as mixcheck's, so that `mixcheck cleanup` finds it if
    /// this process is killed.
    pub async fn namespace(&self, existing: Option<&str>) -> Result<String, PrepullError> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        if let Some(ns) = existing {
            match tokio::time::timeout(CALL_TIMEOUT, api.get(ns)).await {
                Ok(Ok(n)) if n.metadata.deletion_timestamp.is_some() => {
                    return Err(PrepullError::Usage(format!(
                        "--namespace {ns}: the namespace is being deleted; name one that stays"
                    )));
                }
                Ok(Err(kube::Error::Api(s))) if s.code == 404 => {
                    return Err(PrepullError::Usage(format!(
                        "--namespace {ns}: no such namespace (`kubectl get namespace {ns}`); create it, or leave --namespace out to let the pre-pull create its own"
                    )));
                }
                // A namespace-scoped identity may not read namespaces: its DaemonSets will tell.
                _ => {}
            }
            self.record(|c| c.namespace = Some((ns.to_string(), false)));
            return Ok(ns.to_string());
        }
        let ns = format!("mixcheck-prepull-{}", self.id);
        let object: Namespace = serde_json::from_value(
            json!({"metadata": {"name": ns, "labels": labels(self.id, None)}}),
        )
        .map_err(|e| PrepullError::Api {
            what: format!("namespace {ns}"),
            cause: e.to_string(),
        })?;
        self.record(|c| c.namespace = Some((ns.clone(), true)));
        within(
            &format!("creating namespace {ns}"),
            api.create(&PostParams::default(), &object),
        )
        .await?;
        Ok(ns)
    }

    /// Creates a DaemonSet from its manifest.
    pub async fn daemonset(&self, ns: &str, manifest: serde_json::Value) -> Result<(), PrepullError> {
        let ds: DaemonSet = serde_json::from_value(manifest).map_err(|e| PrepullError::Api {
            what: "a DaemonSet".into(),
            cause: e.to_string(),
        })?;
        let name = ds.metadata.name.clone().unwrap_or_default();
        self.record(|c| c.daemonsets.push(name.clone()));
        let api: Api<DaemonSet> = Api::namespaced(self.client.clone(), ns);
        within(
            &format!("creating DaemonSet {ns}/{name}"),
            api.create(&PostParams::default(), &ds),
        )
        .await?;
        Ok(())
    }

    /// Deletes what was created: the namespace, if the pre-pull created it (everything in it
    /// goes with it); else its DaemonSets and their pods (by the pre-pull's label). Failures are
    /// said, with the command that finishes the job.
    pub async fn remove(&self, say: &dyn Fn(&str), warn: &dyn Fn(&str)) {
        let (namespace, daemonsets) = {
            let c = self.created.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            (c.namespace.clone(), c.daemonsets.clone())
        };
        let Some((ns, own)) = namespace else {
            return;
        };
        if own {
            let api: Api<Namespace> = Api::all(self.client.clone());
            match deleted(api.delete(&ns, &DeleteParams::background())).await {
                Ok(()) => say(&format!("Deleted namespace {ns} (and its DaemonSets)")),
                Err(e) => warn(&format!(
                    "mixcheck: could not delete namespace {ns}: {e} (delete it with `mixcheck cleanup`)"
                )),
            }
            return;
        }
        let ds_api: Api<DaemonSet> = Api::namespaced(self.client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let selector = format!("{}={}", crate::cluster::fixture::RUN_LABEL, self.id);
        let mut failed = Vec::new();
        for name in &daemonsets {
            if let Err(e) = deleted(ds_api.delete(name, &DeleteParams::background())).await {
                failed.push(format!("{name}: {e}"));
            }
        }
        // The garbage collector deletes the pods with their DaemonSet; this makes sure of it,
        // one by one (deploy/rbac.yaml grants pods list and delete, not deletecollection).
        let params = ListParams::default().labels(&selector);
        match tokio::time::timeout(CALL_TIMEOUT, pods.list(&params)).await {
            Ok(Ok(list)) => {
                for name in list.items.into_iter().filter_map(|p| p.metadata.name) {
                    if let Err(e) = deleted(pods.delete(&name, &DeleteParams::background())).await {
                        failed.push(format!("pod {name}: {e}"));
                    }
                }
            }
            Ok(Err(e)) => failed.push(format!("pods: {e}")),
            Err(_) => failed.push(format!("pods: no answer within {} s", CALL_TIMEOUT.as_secs())),
        }
        if failed.is_empty() {
            say(&format!("Deleted the DaemonSets in namespace {ns} ({selector})"));
        } else {
            warn(&format!(
                "mixcheck: could not delete all of the pre-pull's objects in {ns}: {} (delete them with `kubectl delete daemonsets,pods -n {ns} -l {selector}`)",
                failed.join("; ")
            ));
        }
    }
}

/// A deletion within [`CALL_TIMEOUT`]; an object already gone counts as deleted.
async fn deleted<T>(call: impl std::future::Future<Output = Result<T, kube::Error>>) -> Result<(), String> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} s", CALL_TIMEOUT.as_secs())),
    }
}
