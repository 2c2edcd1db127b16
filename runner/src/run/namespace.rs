//! The run namespace's lifecycle on the cluster: deleting it at the end of a run, listing and
//! deleting what killed runs left behind (`mixcheck cleanup`).

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Pod, Secret, Service};
use kube::api::{Api, DeleteParams, ListParams};

/// Deletes the run namespace (everything the run created is in it).
pub async fn cleanup(client: &kube::Client, ns: &str, say: &dyn Fn(&str)) {
    let api: Api<Namespace> = Api::all(client.clone());
    match tokio::time::timeout(Duration::from_secs(30), api.delete(ns, &DeleteParams::background())).await {
        Ok(Ok(_)) => say(&format!("Deleted the run namespace {ns}")),
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => {}
        Ok(Err(e)) => {
            eprintln!("mixcheck: could not delete the run namespace {ns}: {e} (delete it with `mixcheck cleanup`)")
        }
        Err(_) => eprintln!("mixcheck: deleting the run namespace {ns} timed out (delete it with `mixcheck cleanup`)"),
    }
}

/// Deletes what the run created in an existing namespace (`--namespace`): its pods, Services
/// and Secrets, by its run label; the namespace and everything else in it stay.
pub async fn remove_run_objects(client: &kube::Client, ns: &str, run_id: &str, say: &dyn Fn(&str)) {
    let selector = format!("{}={run_id}", crate::cluster::fixture::RUN_LABEL);
    remove_labelled(client, ns, &selector, say).await;
}

/// Deletes the pods, Services, Secrets, NetworkPolicies and EndpointSlices labelled `selector` in namespace `ns` (what runs
/// created there); `mixcheck cleanup -n NS` uses it for what killed runs left.
pub async fn remove_labelled(client: &kube::Client, ns: &str, selector: &str, say: &dyn Fn(&str)) {
    let params = ListParams::default().labels(selector);
    let dp = DeleteParams::background();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let policies: Api<k8s_openapi::api::networking::v1::NetworkPolicy> = Api::namespaced(client.clone(), ns);
    let slices: Api<k8s_openapi::api::discovery::v1::EndpointSlice> = Api::namespaced(client.clone(), ns);
    let deletions = async {
        let mut failed = Vec::new();
        if let Err(e) = pods.delete_collection(&dp, &params).await {
            failed.push(format!("pods: {e}"));
        }
        if let Err(e) = services.delete_collection(&dp, &params).await {
            failed.push(format!("services: {e}"));
        }
        if let Err(e) = secrets.delete_collection(&dp, &params).await {
            failed.push(format!("secrets: {e}"));
        }
        // The network-policy suite's policies and the backend-limit check's EndpointSlices; an
        // identity without the right never made any.
        match policies.delete_collection(&dp, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 403 || s.code == 404 => {}
            Err(e) => failed.push(format!("networkpolicies: {e}")),
        }
        match slices.delete_collection(&dp, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 403 || s.code == 404 => {}
            Err(e) => failed.push(format!("endpointslices: {e}")),
        }
        failed
    };
    match tokio::time::timeout(Duration::from_secs(60), deletions).await {
        Ok(failed) if failed.is_empty() => say(&format!("Deleted the run's objects in namespace {ns} ({selector})")),
        Ok(failed) => eprintln!(
            "mixcheck: could not delete all of the run's objects in namespace {ns}: {} (delete them with `kubectl delete pods,services,secrets,networkpolicies,endpointslices -n {ns} -l {selector}`)",
            failed.join("; ")
        ),
        Err(_) => eprintln!(
            "mixcheck: deleting the run's objects in namespace {ns} timed out (delete them with `kubectl delete pods,services,secrets,networkpolicies,endpointslices -n {ns} -l {selector}`)"
        ),
    }
}

/// The namespaces runs created (label app.kubernetes.io/managed-by=mixcheck).
async fn managed(api: &Api<Namespace>) -> Result<Vec<Namespace>, kube::Error> {
    let (key, value) = crate::cluster::fixture::MANAGED_BY;
    Ok(api
        .list(&ListParams::default().labels(&format!("{key}={value}")))
        .await?
        .items)
}

/// The run namespaces on a cluster with their phase.
pub async fn leftovers(client: &kube::Client) -> Result<Vec<(String, String)>, kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    Ok(managed(&api)
        .await?
        .into_iter()
        .map(|n| {
            let phase = n.status.and_then(|s| s.phase).unwrap_or_default();
            (n.metadata.name.unwrap_or_default(), phase)
        })
        .collect())
}

/// `mixcheck cleanup`: deletes every namespace a run left (label app.kubernetes.io/managed-by=mixcheck).
pub async fn cleanup_all(client: &kube::Client, say: &dyn Fn(&str)) -> Result<usize, kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut n = 0;
    for ns in managed(&api).await? {
        if ns.metadata.deletion_timestamp.is_some() {
            // Already going (a run that ended deletes its namespace in the background).
            continue;
        }
        if let Some(name) = ns.metadata.name {
            api.delete(&name, &DeleteParams::background()).await?;
            say(&format!("deleted namespace {name}"));
            n += 1;
        }
    }
    Ok(n)
}
