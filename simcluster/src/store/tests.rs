//! Unit tests of the object store.

use super::*;
use rstest::rstest;

fn pods() -> &'static ResourceType {
    resources::core("pods")
}

fn cms() -> &'static ResourceType {
    resources::core("configmaps")
}

fn store_with_ns(ns: &str) -> Arc<Store> {
    let store = Arc::new(Store::default());
    store
        .create(resources::core("namespaces"), "", json!({"metadata": {"name": ns}}))
        .expect("namespace");
    store
}

fn pod(name: &str, node: Option<&str>) -> Value {
    let mut p = json!({"metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}});
    if let Some(n) = node {
        p["spec"]["nodeName"] = json!(n);
    }
    p
}

#[test]
fn create_stamps_identity_and_monotonic_versions() {
    let store = store_with_ns("a");
    let one = store
        .create(cms(), "a", json!({"metadata": {"name": "one"}}))
        .expect("create");
    let two = store
        .create(cms(), "a", json!({"metadata": {"name": "two"}}))
        .expect("create");
    assert!(two.resource_version() > one.resource_version());
    assert_eq!(one.value()["kind"], "ConfigMap");
    assert_eq!(one.namespace(), "a");
    assert_eq!(one.uid().len(), 36);
    assert!(one.value()["metadata"]["creationTimestamp"].is_string());
    assert_eq!(store.current_rv(), two.resource_version());
    let bytes: Value = serde_json::from_slice(one.json()).expect("json");
    assert_eq!(&bytes, one.value());
}

#[test]
fn generate_name_gets_a_suffix() {
    let store = store_with_ns("a");
    let o = store
        .create(cms(), "a", json!({"metadata": {"generateName": "cfg-"}}))
        .expect("create");
    assert!(o.name().starts_with("cfg-"));
    assert_eq!(o.name().len(), "cfg-".len() + 5);
}

#[rstest]
#[case(json!({"metadata": {}}), "Invalid")]
#[case(json!("not an object"), "BadRequest")]
fn bad_creates_are_rejected(#[case] body: Value, #[case] reason: &str) {
    let store = store_with_ns("a");
    let err = store.create(cms(), "a", body).expect_err("must fail");
    assert_eq!(err.reason(), reason);
}

#[test]
fn duplicate_and_missing_namespace() {
    let store = store_with_ns("a");
    store
        .create(cms(), "a", json!({"metadata": {"name": "x"}}))
        .expect("create");
    let dup = store
        .create(cms(), "a", json!({"metadata": {"name": "x"}}))
        .expect_err("dup");
    assert_eq!(dup.to_string(), r#"configmaps "x" already exists"#);
    let missing = store
        .create(cms(), "nope", json!({"metadata": {"name": "x"}}))
        .expect_err("ns");
    assert_eq!(missing.to_string(), r#"namespaces "nope" not found"#);
}

#[test]
fn stale_update_conflicts_and_fresh_update_wins() {
    let store = store_with_ns("a");
    let v1 = store
        .create(cms(), "a", json!({"metadata": {"name": "x"}, "data": {"k": "1"}}))
        .expect("create");
    let mut next = v1.value().clone();
    next["data"]["k"] = json!("2");
    let v2 = store.update(cms(), "a", "x", Part::Main, next.clone()).expect("update");
    assert_eq!(v2.value()["data"]["k"], "2");
    next["data"]["k"] = json!("3");
    let err = store.update(cms(), "a", "x", Part::Main, next).expect_err("stale");
    assert_eq!(err.code(), 409);
    assert_eq!(err.reason(), "Conflict");
    assert_eq!(v2.uid(), v1.uid());
}

#[test]
fn generation_follows_spec_only() {
    let store = store_with_ns("a");
    let deploy = resources::named("apps", "deployments");
    let d = store
        .create(deploy, "a", json!({"metadata": {"name": "d"}, "spec": {"replicas": 1,
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}))
        .expect("create");
    assert_eq!(d.value()["metadata"]["generation"], 1);
    let d = store
        .modify(deploy, "a", "d", Part::Main, |v| {
            v["metadata"]["labels"] = json!({"x": "y"});
            Ok(())
        })
        .expect("label");
    assert_eq!(d.value()["metadata"]["generation"], 1);
    let d = store
        .modify(deploy, "a", "d", Part::Main, |v| {
            v["spec"]["replicas"] = json!(3);
            Ok(())
        })
        .expect("scale");
    assert_eq!(d.value()["metadata"]["generation"], 2);
    // A status write never bumps the generation and a main write never changes status.
    let d = store
        .modify(deploy, "a", "d", Part::Status, |v| {
            v["status"] = json!({"replicas": 3});
            v["spec"]["replicas"] = json!(9);
            Ok(())
        })
        .expect("status");
    assert_eq!(d.value()["spec"]["replicas"], 3);
    assert_eq!(d.value()["status"]["replicas"], 3);
    assert_eq!(d.value()["metadata"]["generation"], 2);
    let d = store
        .modify(deploy, "a", "d", Part::Main, |v| {
            v["status"] = json!({"replicas": 0});
            Ok(())
        })
        .expect("main");
    assert_eq!(d.value()["status"]["replicas"], 3);
}

#[test]
fn unchanged_write_keeps_the_version() {
    let store = store_with_ns("a");
    let v1 = store
        .create(cms(), "a", json!({"metadata": {"name": "x"}}))
        .expect("create");
    let v2 = store.modify(cms(), "a", "x", Part::Main, |_| Ok(())).expect("noop");
    assert_eq!(v1.resource_version(), v2.resource_version());
}

#[test]
fn identity_cannot_be_changed_by_update() {
    let store = store_with_ns("a");
    let v1 = store
        .create(cms(), "a", json!({"metadata": {"name": "x"}}))
        .expect("create");
    let v2 = store
        .modify(cms(), "a", "x", Part::Main, |v| {
            v["metadata"]["uid"] = json!("forged");
            v["metadata"]["creationTimestamp"] = json!("1999-01-01T00:00:00Z");
            v["kind"] = json!("Secret");
            Ok(())
        })
        .expect("modify");
    assert_eq!(v2.uid(), v1.uid());
    assert_eq!(v2.value()["kind"], "ConfigMap");
    assert_eq!(
        v2.value()["metadata"]["creationTimestamp"],
        v1.value()["metadata"]["creationTimestamp"]
    );
    let renamed = store.modify(cms(), "a", "x", Part::Main, |v| {
        v["metadata"]["name"] = json!("y");
        Ok(())
    });
    assert_eq!(renamed.expect_err("rename").code(), 400);
}

#[rstest]
#[case::unbound(None, None, true)]
#[case::bound_default_grace(Some("n1"), None, false)]
#[case::bound_zero_grace(Some("n1"), Some(0), true)]
fn pod_deletion_is_graceful_when_bound(#[case] node: Option<&str>, #[case] grace: Option<i64>, #[case] removed: bool) {
    let store = store_with_ns("a");
    store.create(pods(), "a", pod("p", node)).expect("create");
    let opts = DeleteOptions {
        grace_period_seconds: grace,
        ..Default::default()
    };
    let out = store.delete(pods(), "a", "p", &opts).expect("delete");
    assert_eq!(matches!(out, Deleted::Removed(_)), removed);
    assert_eq!(store.get(pods(), "a", "p").is_err(), removed);
    if !removed {
        assert!(out.object().is_terminating());
        assert_eq!(out.object().value()["metadata"]["deletionGracePeriodSeconds"], 30);
        // Other writes (a status update by the kubelet) keep it; the kubelet's grace-0 delete removes it.
        store
            .modify(pods(), "a", "p", Part::Status, |v| {
                v["status"]["phase"] = json!("Running");
                Ok(())
            })
            .expect("status");
        assert!(store.get(pods(), "a", "p").is_ok());
        let gone = store.remove_terminated(pods(), "a", "p").expect("remove");
        assert!(gone.is_some());
        assert!(store.get(pods(), "a", "p").is_err());
    }
}

#[test]
fn finalizers_hold_deletion_until_removed() {
    let store = store_with_ns("a");
    store
        .create(
            cms(),
            "a",
            json!({"metadata": {"name": "x", "finalizers": ["example.com/hold"]}}),
        )
        .expect("create");
    let out = store
        .delete(cms(), "a", "x", &DeleteOptions::default())
        .expect("delete");
    assert!(matches!(out, Deleted::Terminating(_)));
    store
        .modify(cms(), "a", "x", Part::Main, |v| {
            v["metadata"]["finalizers"] = json!([]);
            Ok(())
        })
        .expect("drop finalizer");
    assert!(store.get(cms(), "a", "x").is_err());
}

#[test]
fn delete_preconditions() {
    let store = store_with_ns("a");
    store
        .create(cms(), "a", json!({"metadata": {"name": "x"}}))
        .expect("create");
    let opts = DeleteOptions {
        precondition_uid: Some("other".into()),
        ..Default::default()
    };
    assert_eq!(store.delete(cms(), "a", "x", &opts).expect_err("uid").code(), 409);
    let opts = DeleteOptions {
        precondition_rv: Some("1".into()),
        ..Default::default()
    };
    assert_eq!(store.delete(cms(), "a", "x", &opts).expect_err("rv").code(), 409);
}

#[test]
fn namespace_deletion_removes_contents_then_itself() {
    let store = store_with_ns("a");
    store
        .create(cms(), "a", json!({"metadata": {"name": "x"}}))
        .expect("cm");
    store.create(pods(), "a", pod("unbound", None)).expect("pod");
    store.create(pods(), "a", pod("bound", Some("n1"))).expect("pod");
    let ns = resources::core("namespaces");
    let out = store.delete(ns, "", "a", &DeleteOptions::default()).expect("delete ns");
    assert_eq!(out.object().value()["status"]["phase"], "Terminating");
    let refused = store
        .create(cms(), "a", json!({"metadata": {"name": "late"}}))
        .expect_err("closed");
    assert_eq!(refused.code(), 403);
    // The bound pod waits for its kubelet.
    assert!(!store.finalize_namespace("a").expect("finalize"));
    assert!(store.get(cms(), "a", "x").is_err());
    assert!(store.get(pods(), "a", "bound").expect("still there").is_terminating());
    store.remove_terminated(pods(), "a", "bound").expect("kubelet");
    assert!(store.finalize_namespace("a").expect("finalize"));
    assert!(store.get(ns, "", "a").is_err());
}

#[test]
fn list_is_scoped_to_the_namespace() {
    let store = store_with_ns("a");
    store
        .create(resources::core("namespaces"), "", json!({"metadata": {"name": "ab"}}))
        .expect("ns");
    store
        .create(cms(), "a", json!({"metadata": {"name": "x"}}))
        .expect("cm");
    store
        .create(cms(), "ab", json!({"metadata": {"name": "y"}}))
        .expect("cm");
    let (items, rv) = store.list(cms(), Some("a"));
    assert_eq!(items.iter().map(|o| o.name()).collect::<Vec<_>>(), ["x"]);
    assert_eq!(rv, store.current_rv());
    assert_eq!(store.list(cms(), None).0.len(), 2);
}

#[test]
fn watch_replays_history_in_order_then_streams() {
    let store = store_with_ns("a");
    let start = store.current_rv();
    store
        .create(cms(), "a", json!({"metadata": {"name": "x"}}))
        .expect("cm");
    store
        .modify(cms(), "a", "x", Part::Main, |v| {
            v["data"] = json!({"k": "v"});
            Ok(())
        })
        .expect("modify");
    let mut watch = store.watch(cms(), Some("a"), WatchFrom::After(start)).expect("watch");
    let kinds: Vec<_> = watch.initial.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EventType::Added, EventType::Modified]);
    store
        .delete(cms(), "a", "x", &DeleteOptions::default())
        .expect("delete");
    let live = watch.feed.try_recv().expect("live event");
    assert_eq!(live.kind, EventType::Deleted);
    assert_eq!(live.rv, store.current_rv());
    assert!(live.previous.is_some());
}

#[test]
fn watch_from_now_lists_current_state() {
    let store = store_with_ns("a");
    store
        .create(cms(), "a", json!({"metadata": {"name": "x"}}))
        .expect("cm");
    let watch = store.watch(cms(), None, WatchFrom::Now).expect("watch");
    assert_eq!(watch.initial.len(), 1);
    assert_eq!(watch.initial[0].kind, EventType::Added);
    assert_eq!(watch.start_rv, store.current_rv());
}

#[test]
fn expired_history_gives_410() {
    let store = Arc::new(Store::new(StoreConfig { history: 3 }));
    store
        .create(resources::core("namespaces"), "", json!({"metadata": {"name": "a"}}))
        .expect("ns");
    for i in 0..10 {
        store
            .create(cms(), "a", json!({"metadata": {"name": format!("c{i}")}}))
            .expect("cm");
    }
    let err = store.watch(cms(), None, WatchFrom::After(1)).expect_err("expired");
    assert_eq!(err.code(), 410);
    assert_eq!(err.reason(), "Expired");
    let ok = store
        .watch(cms(), None, WatchFrom::After(store.current_rv() - 2))
        .expect("recent");
    assert_eq!(ok.initial.len(), 2);
}

#[test]
fn subscription_reads_in_order_and_reports_lag() {
    let store = Arc::new(Store::new(StoreConfig { history: 4 }));
    let mut sub = store.subscribe();
    store
        .create(resources::core("namespaces"), "", json!({"metadata": {"name": "a"}}))
        .expect("ns");
    store
        .create(cms(), "a", json!({"metadata": {"name": "x"}}))
        .expect("cm");
    let first = sub.try_recv().expect("first");
    let second = sub.try_recv().expect("second");
    assert!(second.rv > first.rv);
    assert_eq!(sub.try_recv().expect_err("empty"), TryRecvError::Empty);
    for i in 0..10 {
        store
            .create(cms(), "a", json!({"metadata": {"name": format!("c{i}")}}))
            .expect("cm");
    }
    assert!(matches!(sub.try_recv(), Err(TryRecvError::Lagged(_))));
    // After a lag the cursor resumes at the oldest retained change.
    assert!(sub.try_recv().is_ok());
}

#[test]
fn changed_at_follows_only_the_named_resources() {
    let store = store_with_ns("a");
    assert_eq!(store.changed_at(&[pods()]), 0, "no pod changed yet");
    let p = store.create(pods(), "a", pod("web", None)).expect("pod");
    let at = store.changed_at(&[pods()]);
    assert_eq!(at, p.resource_version(), "the pod's creation");
    store
        .create(cms(), "a", json!({"metadata": {"name": "noise"}}))
        .expect("configmap");
    assert_eq!(store.changed_at(&[pods()]), at, "a ConfigMap is not a pod change");
    assert!(store.changed_at(&[pods(), cms()]) > at, "the latest of both");
    store
        .delete(pods(), "a", "web", &DeleteOptions::default())
        .expect("delete");
    assert!(store.changed_at(&[pods()]) > at, "a deletion is a change");
}
