//! kube-rs against the bundled cluster: typed CRUD, selectors, every patch type, watches under
//! concurrent writers, 409 and 410, error decoding, exec over WebSocket and logs.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod};
use kube::api::{
    Api, AttachParams, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Client, ResourceExt};
use rstest::rstest;
use serde_json::json;
use simcluster::internals::resources as registry;
use simcluster::internals::{Part, StoreConfig};
use simcluster::{ClusterConfig, Topology};
use tokio::io::AsyncReadExt;

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>()},
        "data": {"k": "v"},
    }))
    .expect("configmap")
}

fn pod(name: &str, node: &str, app: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox:1.36",
            "env": [{"name": "GREETING", "value": "hello"}]}]},
    }))
    .expect("pod")
}

fn api_error(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(status) => (status.code, status.reason.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn setup(ns: &str) -> (simcluster::Cluster, Client) {
    let cluster = common::start().await;
    common::namespace(&cluster, ns);
    let client = common::kube_client(&cluster).await;
    (cluster, client)
}

/// Marks a pod Running with its container started, as a kubelet would report it.
fn mark_running(cluster: &simcluster::Cluster, ns: &str, name: &str) {
    cluster
        .store()
        .modify(registry::core("pods"), ns, name, Part::Status, |v| {
            v["status"] = json!({"phase": "Running", "containerStatuses": [{"name": "c", "ready": true,
                "restartCount": 0, "image": "busybox:1.36", "imageID": "", "started": true,
                "state": {"running": {"startedAt": "2026-11-21T00:00:00Z"}}}]});
            Ok(())
        })
        .expect("status");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_crud_round_trip() {
    let (_cluster, client) = setup("crud").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "crud");
    let created = cms
        .create(&PostParams::default(), &cm("one", &[]))
        .await
        .expect("create");
    assert!(created.uid().is_some());
    assert!(created.resource_version().is_some());
    let mut got = cms.get("one").await.expect("get");
    assert_eq!(
        got.data.as_ref().and_then(|d| d.get("k")).map(String::as_str),
        Some("v")
    );
    got.data = Some(BTreeMap::from([("k".to_string(), "w".to_string())]));
    let replaced = cms.replace("one", &PostParams::default(), &got).await.expect("replace");
    assert_ne!(replaced.resource_version(), created.resource_version());
    cms.delete("one", &DeleteParams::default()).await.expect("delete");
    let (code, reason) = api_error(cms.get("one").await.expect_err("gone"));
    assert_eq!((code, reason.as_str()), (404, "NotFound"));

    let nodes: Api<Node> = Api::all(client.clone());
    let names: Vec<String> = nodes
        .list(&ListParams::default())
        .await
        .expect("nodes")
        .iter()
        .map(|n| n.name_any())
        .collect();
    assert_eq!(names, ["control-plane", "linux-1", "win2019-1", "win2022-1"]);
    let win = nodes.get("win2019-1").await.expect("node");
    let info = win.status.and_then(|s| s.node_info).expect("nodeInfo");
    assert_eq!(info.operating_system, "windows");
    assert_eq!(info.kernel_version, "10.0.17763.6414");

    let namespaces: Api<Namespace> = Api::all(client);
    let ns = namespaces.get("crud").await.expect("namespace");
    assert_eq!(ns.status.and_then(|s| s.phase).as_deref(), Some("Active"));
}

#[rstest]
#[case::merge(Patch::Merge(json!({"data": {"k": "merged"}})), "merged")]
#[case::json(Patch::Json::<serde_json::Value>(serde_json::from_value(json!([{"op": "replace", "path": "/data/k", "value": "json"}])).expect("patch")), "json")]
#[case::strategic(Patch::Strategic(json!({"data": {"k": "strategic"}})), "strategic")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_types(#[case] patch: Patch<serde_json::Value>, #[case] expected: &str) {
    let (_cluster, client) = setup("patches").await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "patches");
    cms.create(&PostParams::default(), &cm("p", &[])).await.expect("create");
    let patched = cms.patch("p", &PatchParams::default(), &patch).await.expect("patch");
    assert_eq!(
        patched.data.and_then(|d| d.get("k").cloned()).as_deref(),
        Some(expected)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_creates_then_merges() {
    let (_cluster, client) = setup("ssa").await;
    let deploys: Api<Deployment> = Api::namespaced(client, "ssa");
    let manifest = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/e2e-test-images/agnhost:2.52"}]}}},
    });
    let pp = PatchParams::apply("mixcheck-test").force();
    let created = deploys
        .patch("web", &pp, &Patch::Apply(&manifest))
        .await
        .expect("apply creates");
    assert_eq!(created.spec.as_ref().and_then(|s| s.replicas), Some(2));
    assert_eq!(created.metadata.generation, Some(1));
    let mut second = manifest.clone();
    second["spec"]["replicas"] = json!(4);
    second["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["netexec"]);
    let merged = deploys
        .patch("web", &pp, &Patch::Apply(&second))
        .await
        .expect("apply merges");
    let spec = merged.spec.expect("spec");
    assert_eq!(spec.replicas, Some(4));
    let containers = spec.template.spec.expect("pod spec").containers;
    assert_eq!(containers.len(), 1, "containers merge by name");
    assert_eq!(containers[0].args.as_deref(), Some(&["netexec".to_string()][..]));
    assert_eq!(merged.metadata.generation, Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_with_label_and_field_selectors() {
    let (cluster, client) = setup("sel").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "sel");
    for (name, node, app) in [("a", "ghost-1", "web"), ("b", "ghost-2", "web"), ("c", "ghost-1", "db")] {
        pods.create(&PostParams::default(), &pod(name, node, app))
            .await
            .expect("create");
    }
    mark_running(&cluster, "sel", "a");
    let names = |list: kube::core::ObjectList<Pod>| list.iter().map(|p| p.name_any()).collect::<Vec<_>>();
    let cases: [(ListParams, &[&str]); 7] = [
        (ListParams::default().labels("app=web"), &["a", "b"]),
        (ListParams::default().labels("app!=web"), &["c"]),
        (ListParams::default().labels("app in (db,cache)"), &["c"]),
        (ListParams::default().labels("app,app notin (web)"), &["c"]),
        (ListParams::default().fields("spec.nodeName=ghost-1"), &["a", "c"]),
        (ListParams::default().fields("status.phase!=Running"), &["b", "c"]),
        (
            ListParams::default()
                .labels("app=web")
                .fields("spec.nodeName=ghost-1,metadata.name=a"),
            &["a"],
        ),
    ];
    for (params, expected) in cases {
        assert_eq!(names(pods.list(&params).await.expect("list")), expected, "{params:?}");
    }
    let all: Api<Pod> = Api::all(client);
    let across = all
        .list(&ListParams::default().fields("metadata.namespace=sel"))
        .await
        .expect("list all");
    assert_eq!(across.items.len(), 3);
    assert!(across.metadata.resource_version.is_some());
    let (code, _) = api_error(
        pods.list(&ListParams::default().fields("spec.bogus=1"))
            .await
            .expect_err("bad field"),
    );
    assert_eq!(code, 400);
}

/// A list read in chunks (`limit`, `continue`; kubectl asks 500 at a time) gives every item
/// once, at the first chunk's resourceVersion, though the list changes between chunks; with a
/// label selector it chunks the matching items; a token the server never gave is 410 Expired.
#[rstest]
#[case::in_twos(2, None, 5)]
#[case::in_threes_selected(3, Some("app=web"), 4)]
#[case::in_one_chunk(50, None, 5)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_come_in_chunks(#[case] limit: u32, #[case] labels: Option<&str>, #[case] want: usize) {
    let (_cluster, client) = setup("chunks").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "chunks");
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db"), ("d", "web"), ("e", "web")] {
        pods.create(&PostParams::default(), &pod(name, "ghost-1", app))
            .await
            .expect("create");
    }
    let mut params = ListParams::default().limit(limit);
    if let Some(l) = labels {
        params = params.labels(l);
    }
    let first = pods.list(&params).await.expect("first chunk");
    let rv = first.metadata.resource_version.clone();
    let mut names: Vec<String> = first.items.iter().map(ResourceExt::name_any).collect();
    let mut token = first.metadata.continue_.clone().filter(|t| !t.is_empty());
    // A pod made between chunks is not in this list: it reads at the first chunk's version.
    pods.create(&PostParams::default(), &pod("f", "ghost-1", "web"))
        .await
        .expect("create between chunks");
    let mut chunks = 1;
    while let Some(t) = token {
        let next = pods.list(&params.clone().continue_token(&t)).await.expect("next chunk");
        assert_eq!(next.metadata.resource_version, rv);
        assert!(next.items.len() <= limit as usize);
        names.extend(next.items.iter().map(ResourceExt::name_any));
        token = next.metadata.continue_.clone().filter(|t| !t.is_empty());
        chunks += 1;
    }
    assert_eq!(names.len(), want, "{names:?}");
    assert_eq!(chunks, want.div_ceil(limit as usize));
    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(unique, names);
    let (code, reason) = api_error(
        pods.list(&ListParams::default().limit(2).continue_token("mc-999999-2"))
            .await
            .expect_err("unknown token"),
    );
    assert_eq!((code, reason.as_str()), (410, "Expired"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_decode_with_upstream_reasons() {
    let (_cluster, client) = setup("errs").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "errs");
    let (code, reason) = api_error(cms.get("missing").await.expect_err("404"));
    assert_eq!((code, reason.as_str()), (404, "NotFound"));
    cms.create(&PostParams::default(), &cm("dup", &[]))
        .await
        .expect("create");
    let (code, reason) = api_error(
        cms.create(&PostParams::default(), &cm("dup", &[]))
            .await
            .expect_err("dup"),
    );
    assert_eq!((code, reason.as_str()), (409, "AlreadyExists"));
    let (code, reason) = api_error(
        cms.create(&PostParams::default(), &cm("Not_Valid", &[]))
            .await
            .expect_err("invalid"),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    let elsewhere: Api<ConfigMap> = Api::namespaced(client, "no-such-namespace");
    let (code, reason) = api_error(
        elsewhere
            .create(&PostParams::default(), &cm("x", &[]))
            .await
            .expect_err("no ns"),
    );
    assert_eq!((code, reason.as_str()), (404, "NotFound"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_update_conflicts() {
    let (_cluster, client) = setup("conflict").await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "conflict");
    let v1 = cms.create(&PostParams::default(), &cm("c", &[])).await.expect("create");
    let mut fresh = v1.clone();
    fresh.data = Some(BTreeMap::from([("k".to_string(), "2".to_string())]));
    cms.replace("c", &PostParams::default(), &fresh)
        .await
        .expect("first writer wins");
    let mut stale = v1;
    stale.data = Some(BTreeMap::from([("k".to_string(), "3".to_string())]));
    let err = cms
        .replace("c", &PostParams::default(), &stale)
        .await
        .expect_err("stale");
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 409);
            assert_eq!(status.reason, "Conflict");
            assert!(
                status.message.contains("the object has been modified"),
                "{}",
                status.message
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_watch_gets_410() {
    let mut config = ClusterConfig::new(Topology::default_cluster().instant().on_wall_clock());
    config.store = StoreConfig { history: 16 };
    let cluster = common::start_with(config).await;
    common::namespace(&cluster, "old");
    let client = common::kube_client(&cluster).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "old");
    for i in 0..40 {
        cms.create(&PostParams::default(), &cm(&format!("c{i}"), &[]))
            .await
            .expect("create");
    }
    let mut stream = cms
        .watch(&WatchParams::default().timeout(5), "1")
        .await
        .expect("watch")
        .boxed();
    match stream.try_next().await.expect("event") {
        Some(WatchEvent::Error(status)) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
    // The high-level watcher relists after a 410 and still converges.
    let listed = cms.list(&ListParams::default()).await.expect("relist");
    assert_eq!(listed.items.len(), 40);
}

/// Several writers create, update and delete concurrently; one watch must see every change
/// exactly once, in resourceVersion order, and each object's ADDED → MODIFIED… → DELETED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_sees_every_change_in_order_under_concurrent_writers() {
    const WRITERS: usize = 6;
    const OBJECTS: usize = 10;
    const UPDATES: usize = 3;
    let (_cluster, client) = setup("busy").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "busy");
    let start_rv = cms
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");
    let stream = cms
        .watch(&WatchParams::default().timeout(60), &start_rv)
        .await
        .expect("watch")
        .boxed();
    let expected_events = WRITERS * OBJECTS * (UPDATES + 2);
    let collector = tokio::spawn(async move {
        let mut events = Vec::new();
        let mut stream = stream;
        while events.len() < expected_events {
            match tokio::time::timeout(Duration::from_secs(30), stream.try_next()).await {
                Ok(Ok(Some(WatchEvent::Bookmark(_)))) => continue,
                Ok(Ok(Some(e))) => events.push(e),
                other => panic!("watch ended early after {} events: {other:?}", events.len()),
            }
        }
        events
    });
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let cms = cms.clone();
            tokio::spawn(async move {
                for o in 0..OBJECTS {
                    let name = format!("w{w}-o{o}");
                    cms.create(&PostParams::default(), &cm(&name, &[("writer", &w.to_string())]))
                        .await
                        .expect("create");
                    for u in 0..UPDATES {
                        let patch = json!({"data": {"k": format!("{u}")}});
                        cms.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                            .await
                            .expect("update");
                    }
                    cms.delete(&name, &DeleteParams::default()).await.expect("delete");
                }
            })
        })
        .collect();
    for w in writers {
        w.await.expect("writer");
    }
    let events = tokio::time::timeout(Duration::from_secs(60), collector)
        .await
        .expect("collector in time")
        .expect("collector");
    assert_eq!(events.len(), expected_events);
    let mut last_rv = 0u64;
    let mut per_object: BTreeMap<String, Vec<&'static str>> = BTreeMap::new();
    for e in &events {
        let (kind, obj) = match e {
            WatchEvent::Added(o) => ("ADDED", o),
            WatchEvent::Modified(o) => ("MODIFIED", o),
            WatchEvent::Deleted(o) => ("DELETED", o),
            other => panic!("unexpected {other:?}"),
        };
        let rv: u64 = obj.resource_version().and_then(|r| r.parse().ok()).expect("numeric rv");
        assert!(rv > last_rv, "resourceVersions must increase: {rv} after {last_rv}");
        last_rv = rv;
        per_object.entry(obj.name_any()).or_default().push(kind);
    }
    assert_eq!(per_object.len(), WRITERS * OBJECTS);
    let mut expected = vec!["ADDED"];
    expected.extend(std::iter::repeat_n("MODIFIED", UPDATES));
    expected.push("DELETED");
    for (name, kinds) in per_object {
        assert_eq!(kinds, expected, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_watcher_follows_label_selected_objects() {
    let (_cluster, client) = setup("rw").await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "rw");
    cms.create(&PostParams::default(), &cm("before", &[("team", "a")]))
        .await
        .expect("create");
    let config = kube::runtime::watcher::Config::default().labels("team=a");
    let mut seen = kube::runtime::watcher(cms.clone(), config)
        .map_ok(|e| match e {
            kube::runtime::watcher::Event::Apply(o) | kube::runtime::watcher::Event::InitApply(o) => {
                Some(format!("apply {}", o.name_any()))
            }
            kube::runtime::watcher::Event::Delete(o) => Some(format!("delete {}", o.name_any())),
            _ => None,
        })
        .try_filter_map(|x| async move { Ok(x) })
        .boxed();
    assert_eq!(seen.try_next().await.expect("event").as_deref(), Some("apply before"));
    cms.create(&PostParams::default(), &cm("other-team", &[("team", "b")]))
        .await
        .expect("create");
    cms.create(&PostParams::default(), &cm("after", &[("team", "a")]))
        .await
        .expect("create");
    assert_eq!(seen.try_next().await.expect("event").as_deref(), Some("apply after"));
    // Relabelling out of the selection is a delete for this watcher.
    let relabel = json!({"metadata": {"labels": {"team": "b"}}});
    cms.patch("before", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .expect("relabel");
    assert_eq!(seen.try_next().await.expect("event").as_deref(), Some("delete before"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_and_logs_through_kube() {
    let (cluster, client) = setup("ex").await;
    let pods: Api<Pod> = Api::namespaced(client, "ex");
    let mut shell = pod("shell", "linux-1", "x");
    if let Some(spec) = shell.spec.as_mut() {
        spec.containers[0].command = Some(vec!["sleep".into(), "infinity".into()]);
    }
    pods.create(&PostParams::default(), &shell).await.expect("create");
    // A Windows-only image on a Linux node never starts: its log is refused.
    let mut stuck = pod("stuck", "linux-1", "x");
    if let Some(spec) = stuck.spec.as_mut() {
        spec.containers[0].image = Some("mcr.microsoft.com/windows/servercore:ltsc2022".into());
    }
    pods.create(&PostParams::default(), &stuck).await.expect("create");

    let running =
        kube::runtime::wait::await_condition(pods.clone(), "shell", kube::runtime::conditions::is_pod_running());
    tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .expect("running in time")
        .expect("watch");
    for (cmd, out, exit) in [
        (vec!["hostname"], "shell\n", None),
        (vec!["printenv", "GREETING"], "hello\n", None),
        (vec!["sh", "-c", "exit 7"], "", Some("7")),
    ] {
        let mut proc = pods
            .exec("shell", cmd.clone(), &AttachParams::default())
            .await
            .expect("exec");
        let mut stdout = proc.stdout().expect("stdout");
        let status = proc.take_status().expect("status");
        let mut text = String::new();
        let (read, status) = tokio::join!(stdout.read_to_string(&mut text), status);
        read.expect("read stdout");
        assert_eq!(text, out, "{cmd:?}");
        let code = status
            .and_then(|s| s.details)
            .and_then(|d| d.causes)
            .and_then(|c| c.into_iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
            .and_then(|c| c.message);
        assert_eq!(code.as_deref(), exit, "{cmd:?}");
    }

    cluster.logs().append("ex", "shell", "c", "first line");
    cluster.logs().append("ex", "shell", "c", "second line");
    let logs = pods.logs("shell", &LogParams::default()).await.expect("logs");
    assert!(logs.ends_with("first line\nsecond line\n"), "{logs:?}");
    let tail = pods
        .logs(
            "shell",
            &LogParams {
                tail_lines: Some(1),
                ..Default::default()
            },
        )
        .await
        .expect("tail");
    assert_eq!(tail, "second line\n");

    // The stuck pod's container waits on its image pull.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        match pods.logs("stuck", &LogParams::default()).await {
            Err(kube::Error::Api(status))
                if status.message.contains("pull image") || status.message.contains("can't be pulled") =>
            {
                assert_eq!(status.code, 400);
                assert!(status.message.contains("is waiting to start"), "{}", status.message);
                break;
            }
            other => assert!(tokio::time::Instant::now() < deadline, "no pull failure yet: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
