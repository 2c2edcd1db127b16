//! API calls a harness and its users make, through kube-rs: the `scale` subresource of
//! Deployments and ReplicaSets (the controllers follow), access and rules reviews for the
//! caller, and Jobs run to completion, to their backoff limit and away after their TTL.

use crate::common;

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SelfSubjectRulesReview};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use rstest::rstest;
use serde_json::{Value, json};
use simcluster::Topology;

const NS: &str = "calls";

async fn client() -> (simcluster::Cluster, Client) {
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    topology.timing.scale = 0.2;
    common::cluster_and_client(topology, NS).await
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}}
    }))
    .expect("deployment")
}

async fn pods_of(client: &Client, selector: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    pods.list(&ListParams::default().labels(selector))
        .await
        .expect("pods")
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_a_deployment_through_its_scale_subresource() {
    let (_cluster, client) = client().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    deployments
        .create(&PostParams::default(), &deployment("web", 1))
        .await
        .expect("created");
    let scale = deployments.get_scale("web").await.expect("scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(1));
    assert_eq!(scale.status.and_then(|s| s.selector).as_deref(), Some("app=web"));

    let patched = deployments
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("patched");
    assert_eq!(patched.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(
        deployments.get("web").await.expect("web").spec.and_then(|s| s.replicas),
        Some(3)
    );
    common::eventually("three pods", || async {
        (pods_of(&client, "app=web").await.len() == 3).then_some(())
    })
    .await;
    let scale = common::eventually("status.replicas 3", || async {
        let s = deployments.get_scale("web").await.ok()?;
        (s.status.as_ref().map(|st| st.replicas) == Some(3)).then_some(s)
    })
    .await;

    // A PUT with a stale resourceVersion conflicts; a current one scales down.
    let mut body = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "web", "namespace": NS, "resourceVersion": "1"}, "spec": {"replicas": 1}});
    let stale = deployments
        .replace_scale(
            "web",
            &PostParams::default(),
            &serde_json::from_value(body.clone()).expect("scale"),
        )
        .await;
    match stale {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 409, "{s:?}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    // The controllers keep writing the Deployment's status, so a current resourceVersion can go
    // stale before the PUT lands: like any client, read again and retry on 409.
    let mut current = scale.metadata.resource_version;
    let mut down = None;
    for _ in 0..20 {
        body["metadata"]["resourceVersion"] = json!(current);
        match deployments
            .replace_scale(
                "web",
                &PostParams::default(),
                &serde_json::from_value(body.clone()).expect("scale"),
            )
            .await
        {
            Ok(s) => {
                down = Some(s);
                break;
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                current = deployments
                    .get_scale("web")
                    .await
                    .expect("scale")
                    .metadata
                    .resource_version;
            }
            Err(e) => panic!("scaling down: {e}"),
        }
    }
    let down = down.expect("scaled down within 20 tries");
    assert_eq!(down.spec.and_then(|s| s.replicas), Some(1));
    common::eventually("one pod", || async {
        (pods_of(&client, "app=web").await.len() == 1).then_some(())
    })
    .await;

    let negative = deployments
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": -1}})),
        )
        .await;
    match negative {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422);
            assert!(
                s.message
                    .contains("spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
                "{}",
                s.message
            );
        }
        other => panic!("expected 422, got {other:?}"),
    }
    match deployments.get_scale("nope").await {
        Err(kube::Error::Api(s)) => assert_eq!(s.message, r#"deployments.apps "nope" not found"#),
        other => panic!("expected 404, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_set_scales_too() {
    let (_cluster, client) = client().await;
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), NS);
    let d = deployment("rs", 2);
    let rs: ReplicaSet = serde_json::from_value(json!({"metadata": {"name": "rs"}, "spec": d.spec})).expect("rs");
    sets.create(&PostParams::default(), &rs).await.expect("created");
    sets.patch_scale(
        "rs",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 0}})),
    )
    .await
    .expect("scaled");
    common::eventually("no pods", || async {
        pods_of(&client, "app=rs").await.is_empty().then_some(())
    })
    .await;
}

async fn access_review(client: &Client, spec: Value) -> Result<SelfSubjectAccessReview, kube::Error> {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = serde_json::from_value(json!({"spec": spec})).expect("review");
    reviews.create(&PostParams::default(), &review).await
}

#[rstest]
#[case::resource(json!({"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "pods"}}))]
#[case::subresource(json!({"resourceAttributes": {"verb": "get", "resource": "nodes", "subresource": "proxy"}}))]
#[case::non_resource(json!({"nonResourceAttributes": {"verb": "get", "path": "/logs"}}))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_may_do_anything(#[case] spec: Value) {
    let (_cluster, client) = client().await;
    let review = access_review(&client, spec.clone()).await.expect("reviewed");
    let status = review.status.expect("status");
    assert!(status.allowed);
    assert_eq!(status.denied, None);
    assert_eq!(
        status.reason.as_deref(),
        Some(
            r#"RBAC: allowed by ClusterRoleBinding "kubeadm:cluster-admins" of ClusterRole "cluster-admin" to Group "kubeadm:cluster-admins""#
        )
    );
    // The question comes back as asked, and nothing is stored.
    assert_eq!(serde_json::to_value(review.spec).expect("spec"), spec);
    let raw = http::Request::get("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
        .body(Vec::new())
        .expect("request");
    match client.request_text(raw).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 405),
        other => panic!("reviews are create-only, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_access_review_must_ask_something() {
    let (_cluster, client) = client().await;
    match access_review(&client, json!({})).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422);
            assert_eq!(s.reason, "Invalid");
            assert_eq!(
                s.message,
                r#"SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified"#
            );
        }
        other => panic!("expected 422, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rules_review_lists_everything_for_the_admin() {
    let (_cluster, client) = client().await;
    let reviews: Api<SelfSubjectRulesReview> = Api::all(client.clone());
    let review = serde_json::from_value(json!({"spec": {"namespace": "default"}})).expect("review");
    let status = reviews
        .create(&PostParams::default(), &review)
        .await
        .expect("reviewed")
        .status
        .expect("status");
    assert!(!status.incomplete);
    let all = &status.resource_rules[0];
    assert_eq!(all.verbs, ["*"]);
    assert_eq!(all.api_groups.as_deref(), Some(&["*".to_string()][..]));
    assert_eq!(all.resources.as_deref(), Some(&["*".to_string()][..]));
    assert_eq!(status.non_resource_rules[0].verbs, ["*"]);
    assert_eq!(
        status.non_resource_rules[0].non_resource_urls.as_deref(),
        Some(&["*".to_string()][..])
    );
}

fn job(name: &str, spec: Value) -> Job {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("job")
}

fn busybox(command: &str, restart: &str) -> Value {
    json!({"spec": {"restartPolicy": restart,
        "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sh", "-c", command]}]}})
}

fn condition(job: &Job, ty: &str) -> Option<(String, String)> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == ty && c.status == "True")
        .map(|c| {
            (
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

async fn finished(jobs: &Api<Job>, name: &str, ty: &str) -> Job {
    common::eventually(&format!("job {name} {ty}"), || async {
        let j = jobs.get(name).await.ok()?;
        condition(&j, ty).is_some().then_some(j)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_its_completions_and_labels_its_pods() {
    let (_cluster, client) = client().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    let created = jobs
        .create(
            &PostParams::default(),
            &job(
                "count",
                json!({"completions": 3, "parallelism": 2, "template": busybox("echo done; exit 0", "Never")}),
            ),
        )
        .await
        .expect("created");
    let uid = created.uid().expect("uid");
    let spec = created.spec.as_ref().expect("spec");
    assert_eq!(spec.backoff_limit, Some(6));
    assert_eq!(spec.completion_mode.as_deref(), Some("NonIndexed"));
    let labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    assert_eq!(
        labels.get("batch.kubernetes.io/job-name").map(String::as_str),
        Some("count")
    );
    assert_eq!(labels.get("controller-uid"), Some(&uid));

    let done = finished(&jobs, "count", "Complete").await;
    let status = done.status.clone().expect("status");
    assert_eq!(status.succeeded, Some(3));
    assert_eq!(status.active, None);
    assert!(status.start_time.is_some() && status.completion_time.is_some());
    let reached = Some((
        "CompletionsReached".to_string(),
        "Reached expected number of succeeded pods".to_string(),
    ));
    assert_eq!(condition(&done, "SuccessCriteriaMet"), reached);
    assert_eq!(condition(&done, "Complete"), reached);

    let pods = pods_of(&client, "batch.kubernetes.io/job-name=count").await;
    assert_eq!(pods.len(), 3);
    for p in &pods {
        assert_eq!(common::phase(p), "Succeeded");
        let owner = &p.owner_references()[0];
        assert_eq!((owner.kind.as_str(), owner.api_version.as_str()), ("Job", "batch/v1"));
        assert_eq!(owner.uid, uid);
        assert_eq!(p.labels().get("job-name").map(String::as_str), Some("count"));
        assert_eq!(p.labels().get("batch.kubernetes.io/controller-uid"), Some(&uid));
    }
}

#[rstest]
#[case::never("Never", 1)]
#[case::on_failure("OnFailure", 2)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_job_stops_at_its_backoff_limit(#[case] restart: &str, #[case] limit: i32) {
    let (_cluster, client) = client().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    jobs.create(
        &PostParams::default(),
        &job(
            "fails",
            json!({"backoffLimit": limit, "template": busybox("exit 3", restart)}),
        ),
    )
    .await
    .expect("created");
    let failed = finished(&jobs, "fails", "Failed").await;
    let why = Some((
        "BackoffLimitExceeded".to_string(),
        "Job has reached the specified backoff limit".to_string(),
    ));
    assert_eq!(condition(&failed, "Failed"), why);
    assert_eq!(condition(&failed, "FailureTarget"), why);
    assert!(condition(&failed, "Complete").is_none());
    let status = failed.status.expect("status");
    if restart == "Never" {
        // Each failure is a pod: backoffLimit 1 allows one retry.
        assert_eq!(status.failed, Some(limit + 1));
    }
    common::eventually("no pod left running", || async {
        pods_of(&client, "job-name=fails")
            .await
            .iter()
            .all(|p| matches!(common::phase(p).as_str(), "Failed" | "Succeeded"))
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_job_goes_after_its_ttl_with_its_pods() {
    let (_cluster, client) = client().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    jobs.create(
        &PostParams::default(),
        &job(
            "brief",
            json!({"ttlSecondsAfterFinished": 1, "template": busybox("exit 0", "Never")}),
        ),
    )
    .await
    .expect("created");
    finished(&jobs, "brief", "Complete").await;
    common::eventually("the job deleted", || async {
        matches!(jobs.get("brief").await, Err(kube::Error::Api(ref s)) if s.code == 404).then_some(())
    })
    .await;
    common::eventually("its pods deleted", || async {
        pods_of(&client, "job-name=brief").await.is_empty().then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_past_its_deadline_fails() {
    let (_cluster, client) = client().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    jobs.create(
        &PostParams::default(),
        &job(
            "slow",
            json!({"activeDeadlineSeconds": 1, "template": busybox("sleep 3600", "Never")}),
        ),
    )
    .await
    .expect("created");
    let failed = finished(&jobs, "slow", "Failed").await;
    assert_eq!(
        condition(&failed, "Failed"),
        Some((
            "DeadlineExceeded".to_string(),
            "Job was active longer than specified deadline".to_string()
        ))
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_pod_must_not_restart_always() {
    let (_cluster, client) = client().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    let bad = job("bad", json!({"template": busybox("exit 0", "Always")}));
    match jobs.create(&PostParams::default(), &bad).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422);
            assert!(
                s.message.starts_with(
                    r#"Job.batch "bad" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always""#
                ),
                "{}",
                s.message
            );
        }
        other => panic!("expected 422, got {other:?}"),
    }
}
