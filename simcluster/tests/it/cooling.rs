//! The store's cooling sweep, end to end: once the cluster's pods run and nothing changes
//! them, nothing in the cluster (kubelets, controllers, the change history) holds a decoded
//! version the store let go of, and what clients read is unchanged.

use std::sync::Arc;

use rstest::rstest;
use serde_json::json;
use simcluster::internals::resources;

use crate::common;

/// Each pod's current version, once every pod has run with no change for a while.
async fn settled_pods(cluster: &simcluster::Cluster) -> Vec<simcluster::internals::Obj> {
    let store = cluster.store().clone();
    let pods = resources::core("pods");
    common::eventually("every pod running and unchanged", || {
        let store = store.clone();
        async move {
            let before = store.list(pods, None).0;
            let running = |p: &simcluster::internals::Obj| {
                p.value().pointer("/status/phase").and_then(|v| v.as_str()) == Some("Running")
            };
            if before.is_empty() || !before.iter().all(running) {
                return None;
            }
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            let after = store.list(pods, None).0;
            let same = before.len() == after.len()
                && before
                    .iter()
                    .zip(&after)
                    .all(|(a, b)| a.resource_version() == b.resource_version());
            same.then_some(after)
        }
    })
    .await
}

#[rstest]
#[case::system_pods(&[])]
#[case::a_bare_pod_and_a_deployment(&["bare", "deployment"])]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settled_pods_are_held_decoded_by_no_one(#[case] workloads: &[&str]) {
    let cluster = common::start().await;
    let store = cluster.store().clone();
    common::namespace(&cluster, "shop");
    let container = json!([{"name": "web", "image": "registry.k8s.io/e2e-test-images/agnhost:2.52",
                            "args": ["netexec"]}]);
    let linux = json!({"kubernetes.io/os": "linux"});
    for w in workloads {
        match *w {
            "bare" => {
                store
                    .create(
                        resources::core("pods"),
                        "shop",
                        json!({"metadata": {"name": "bare"},
                               "spec": {"nodeSelector": linux, "containers": container}}),
                    )
                    .expect("pod");
            }
            _ => {
                store
                    .create(
                        resources::named("apps", "deployments"),
                        "shop",
                        json!({"metadata": {"name": "web"},
                               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                                        "template": {"metadata": {"labels": {"app": "web"}},
                                                     "spec": {"nodeSelector": linux, "containers": container}}}}),
                    )
                    .expect("deployment");
            }
        }
    }
    let pods = settled_pods(&cluster).await;
    let expected = 2 * usize::from(workloads.contains(&"deployment")) + usize::from(workloads.contains(&"bare"));
    assert_eq!(pods.iter().filter(|p| p.namespace() == "shop").count(), expected);
    let encodings: Vec<_> = pods.iter().map(|p| p.json().clone()).collect();
    let values: Vec<_> = pods.iter().map(|p| p.value().clone()).collect();
    // Two sweeps: the first clears the marks of what was just read, the second lets go.
    store.cool();
    store.cool();
    let held: Vec<String> = pods
        .iter()
        .filter(|p| Arc::strong_count(p) > 1)
        .map(|p| format!("{}/{} ({} holders)", p.namespace(), p.name(), Arc::strong_count(p) - 1))
        .collect();
    assert!(held.is_empty(), "decoded versions still held in the cluster: {held:?}");
    // What the store holds now reads the same.
    let now = store.list(resources::core("pods"), None).0;
    assert_eq!(now.iter().map(|p| p.json().clone()).collect::<Vec<_>>(), encodings);
    assert_eq!(now.iter().map(|p| p.value().clone()).collect::<Vec<_>>(), values);
}
