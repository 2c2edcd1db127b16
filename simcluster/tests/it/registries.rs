//! The topology's `registries:` through the API, on Linux and Windows nodes of two profiles: a
//! registry that wants credentials answers 401 until the pod names a dockerconfigjson pull
//! secret whose `auths` match it; one that does not resolve fails every pull, credentials or
//! not; both as real kubelets report them (ErrImagePull, then ImagePullBackOff, Warning `Failed`
//! events counting up, `BackOff`); a mirror's copy of a catalogue image runs as the original;
//! the cluster's own add-ons keep running.

use crate::common;

use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::api::core::v1::{Event, Pod, Secret};
use kube::api::{Api, ListParams, PostParams};
use rstest::rstest;
use serde_json::{Value, json};
use simcluster::Topology;

const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.53";
const NANOSERVER: &str = "mcr.microsoft.com/windows/nanoserver:ltsc2022";

/// `profile` with `registries`, its delays on a clock a hundred times as fast (the kubelet's
/// pull back-off of 10 s, 20 s, 40 s takes a tenth of a second, two, four).
fn locked_down(profile: &str, registries: &str) -> Topology {
    let mut t = Topology::profile(profile).expect("profile").instant();
    t.timing.scale = 0.01;
    t.registries = serde_saphyr::from_str(registries).expect("registries");
    t
}

/// A pod of one long-running container of `image` on node `node` (tolerating the Windows
/// taint), with `secrets` as its pull secrets.
fn pod_on(name: &str, node: &str, image: &str, secrets: &[&str]) -> Pod {
    let pull: Vec<Value> = secrets.iter().map(|s| json!({"name": s})).collect();
    let container = if image.contains("agnhost") {
        json!({"name": "c", "image": image, "args": ["pause"]})
    } else {
        json!({"name": "c", "image": image, "command": ["cmd", "/c", "ping -t localhost"]})
    };
    common::pod(
        name,
        json!({
            "nodeName": node,
            "tolerations": [{"key": "os", "operator": "Exists"}],
            "imagePullSecrets": pull,
            "containers": [container]
        }),
    )
}

/// A `kubernetes.io/dockerconfigjson` Secret with credentials for `registry`.
fn regcred(name: &str, registry: &str) -> Secret {
    let config = json!({"auths": {registry: {"username": "robot", "password": "s3cret", "auth": "cm9ib3Q6czNjcmV0"}}});
    let data = base64::engine::general_purpose::STANDARD.encode(config.to_string());
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": data}
    }))
    .expect("secret")
}

/// The container's waiting (reason, message), if it waits.
fn waiting(p: &Pod) -> Option<(String, String)> {
    let w = p
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .waiting
        .clone()?;
    Some((w.reason.unwrap_or_default(), w.message.unwrap_or_default()))
}

/// The pod's events as (type, reason, message, count).
async fn events(client: &kube::Client, ns: &str, pod: &str) -> Vec<(String, String, String, i32)> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    let list = api
        .list(&ListParams::default().fields(&format!("involvedObject.name={pod}")))
        .await
        .expect("events");
    list.items
        .into_iter()
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
                e.count.unwrap_or(1),
            )
        })
        .collect()
}

/// How often the kubelet reported a failed pull of the pod's image.
async fn failed_pulls(client: &kube::Client, ns: &str, pod: &str) -> i32 {
    events(client, ns, pod)
        .await
        .iter()
        .filter(|(t, r, m, _)| t == "Warning" && r == "Failed" && m.starts_with("Failed to pull image"))
        .map(|(_, _, _, c)| *c)
        .sum()
}

/// Waits until the kubelet has failed the pod's pull three times, then checks what it said:
/// the states, the events and the error's words.
async fn refused_three_times(client: &kube::Client, ns: &str, pod: &str, image: &str, words: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let mut reasons = std::collections::BTreeSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while failed_pulls(client, ns, pod).await < 3 {
        if let Some((reason, message)) = pods.get(pod).await.ok().as_ref().and_then(waiting) {
            if reason == "ErrImagePull" {
                assert!(message.contains(words), "{message}");
            }
            reasons.insert(reason);
        }
        assert!(tokio::time::Instant::now() < deadline, "{pod}: three failed pulls");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        reasons.contains("ErrImagePull") || reasons.contains("ImagePullBackOff"),
        "{reasons:?}"
    );
    let seen = events(client, ns, pod).await;
    let failed = seen
        .iter()
        .find(|(t, r, m, _)| t == "Warning" && r == "Failed" && m.starts_with("Failed to pull image"))
        .expect("a Failed event");
    assert!(
        failed.2.starts_with(&format!(
            "Failed to pull image {image:?}: rpc error: code = Unknown desc = "
        )),
        "{failed:?}"
    );
    assert!(failed.2.contains(words), "{failed:?}");
    assert!(failed.3 >= 3, "the one event counts the attempts: {failed:?}");
    let has = |t: &str, r: &str, m: &str| seen.iter().any(|e| e.0 == t && e.1 == r && e.2 == m);
    assert!(has("Warning", "Failed", "Error: ErrImagePull"), "{seen:#?}");
    assert!(has("Warning", "Failed", "Error: ImagePullBackOff"), "{seen:#?}");
    assert!(
        has("Normal", "BackOff", &format!("Back-off pulling image {image:?}")),
        "{seen:#?}"
    );
}

/// A registry that wants credentials answers 401 (containerd 1.7 and 2.0's words) until the pod
/// names a pull secret for it; a secret for another registry, or one the namespace lacks, does
/// not help.
#[rstest]
#[case::default_linux("default", "linux-1")]
#[case::default_ws2019("default", "win2019-1")]
#[case::current_ws2025("current-ws2022-ws2025", "win2025-1")]
#[case::current_linux_containerd_2("current-ws2022-ws2025", "linux-1")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_wants_credentials_answers_401_until_a_pull_secret_matches(
    #[case] profile: &str,
    #[case] node: &str,
) {
    let t = locked_down(profile, "{registry.k8s.io: {auth: required}}");
    let (_cluster, client) = common::cluster_and_client(t, "team").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "team");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "team");
    let pp = PostParams::default();
    secrets
        .create(&pp, &regcred("elsewhere", "harbor.corp"))
        .await
        .expect("secret");
    pods.create(&pp, &pod_on("anonymous", node, AGNHOST, &["elsewhere", "gone"]))
        .await
        .expect("pod");
    let words = "unexpected status from HEAD request to https://registry.k8s.io/v2/e2e-test-images/agnhost/manifests/2.53: 401 Unauthorized";
    refused_three_times(&client, "team", "anonymous", AGNHOST, words).await;
    let seen = events(&client, "team", "anonymous").await;
    assert!(
        seen.iter().any(|e| e.1 == "FailedToRetrieveImagePullSecret"
            && e.2
                == "Unable to retrieve some image pull secrets (gone); attempting to pull the image may not succeed."),
        "{seen:#?}"
    );

    secrets
        .create(&pp, &regcred("regcred", "https://registry.k8s.io"))
        .await
        .expect("secret");
    pods.create(&pp, &pod_on("signed-in", node, AGNHOST, &["regcred"]))
        .await
        .expect("pod");
    common::eventually("the pod with a pull secret Running", || async {
        pods.get("signed-in")
            .await
            .ok()
            .filter(|p| common::phase(p) == "Running")
    })
    .await;
    // The kube-system add-ons, pulled when the cluster was built, keep running.
    let system: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    common::eventually("kube-system Running", || async {
        let list = system.list(&ListParams::default()).await.ok()?;
        (!list.items.is_empty() && list.items.iter().all(|p| common::phase(p) == "Running")).then_some(())
    })
    .await;
}

/// A registry whose name does not resolve fails every pull, credentials or not, with the
/// resolver's error (Linux names its stub resolver, Windows does not); a mirror's copy of the
/// same image, at a registry that resolves, runs where the original would.
#[rstest]
#[case::default_ws2022("default", "win2022-1", "lookup mcr.microsoft.com: no such host")]
#[case::current_ws2025("current-ws2022-ws2025", "win2025-1", "lookup mcr.microsoft.com: no such host")]
#[case::default_linux("default", "linux-1", "lookup mcr.microsoft.com on 127.0.0.53:53: no such host")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_does_not_resolve_fails_every_pull_and_a_mirror_serves_the_copy(
    #[case] profile: &str,
    #[case] node: &str,
    #[case] lookup: &str,
) {
    let t = locked_down(profile, "{mcr.microsoft.com: {reachable: false}}");
    let (_cluster, client) = common::cluster_and_client(t, "team").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "team");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "team");
    let pp = PostParams::default();
    secrets
        .create(&pp, &regcred("regcred", "mcr.microsoft.com"))
        .await
        .expect("secret");
    pods.create(&pp, &pod_on("upstream", node, NANOSERVER, &["regcred"]))
        .await
        .expect("pod");
    let words = format!(
        "failed to do request: Head \"https://mcr.microsoft.com/v2/windows/nanoserver/manifests/ltsc2022\": dial tcp: {lookup}"
    );
    refused_three_times(&client, "team", "upstream", NANOSERVER, &words).await;
    if node.starts_with("win") {
        let mirror = "harbor.corp/mcr/windows/nanoserver:ltsc2022";
        pods.create(&pp, &pod_on("mirrored", node, mirror, &[]))
            .await
            .expect("pod");
        common::eventually("the mirror's copy Running", || async {
            pods.get("mirrored")
                .await
                .ok()
                .filter(|p| common::phase(p) == "Running")
        })
        .await;
    }
}

/// A mirror's copy has the original's platforms: it runs where the original runs, and where the
/// original has no variant for the node the copy fails the same way.
#[rstest]
#[case::agnhost_ws2019(
    "default",
    "win2019-1",
    AGNHOST,
    "harbor.corp/k8s/e2e-test-images/agnhost:2.53",
    true
)]
#[case::agnhost_ws2025(
    "current-ws2022-ws2025",
    "win2025-1",
    AGNHOST,
    "mirror.local/k8s/e2e-test-images/agnhost:2.53",
    true
)]
#[case::agnhost_linux("default", "linux-1", AGNHOST, "harbor.corp/k8s/e2e-test-images/agnhost:2.53", true)]
#[case::nanoserver_ws2022(
    "current-ws2022-ws2025",
    "win2022-1",
    NANOSERVER,
    "harbor.corp/mcr/windows/nanoserver:ltsc2022",
    true
)]
#[case::nanoserver_ws2019(
    "default",
    "win2019-1",
    NANOSERVER,
    "harbor.corp:5000/windows/nanoserver:ltsc2022",
    false
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirror_copy_runs_where_the_original_runs(
    #[case] profile: &str,
    #[case] node: &str,
    #[case] original: &str,
    #[case] copy: &str,
    #[case] runs: bool,
) {
    let t = locked_down(profile, "{}");
    let (_cluster, client) = common::cluster_and_client(t, "team").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "team");
    let pp = PostParams::default();
    for (name, image) in [("original", original), ("copy", copy)] {
        pods.create(&pp, &pod_on(name, node, image, &[])).await.expect("pod");
    }
    for name in ["original", "copy"] {
        let p = common::eventually(&format!("{name} settled"), || async {
            let p = pods.get(name).await.ok()?;
            let pulled_or_not = common::phase(&p) == "Running"
                || waiting(&p).is_some_and(|(r, _)| r == "ErrImagePull" || r == "ImagePullBackOff");
            pulled_or_not.then_some(p)
        })
        .await;
        assert_eq!(
            common::phase(&p) == "Running",
            runs,
            "{name} on {node}: {:?}",
            waiting(&p)
        );
        if !runs {
            let (_, message) = waiting(&p).expect("waiting");
            assert!(message.contains("no match for platform in manifest"), "{message}");
        }
    }
}
