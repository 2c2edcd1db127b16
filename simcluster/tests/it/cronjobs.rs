//! CronJobs through kube-rs on a fast simulated clock (a minute of schedule is 1.2 s):
//! `concurrencyPolicy: Forbid` keeps one Job running, `suspend` stops new Jobs, and the history
//! limits prune finished Jobs.

use std::time::Duration;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use simcluster::Topology;

use crate::common;

const NS: &str = "cron";

/// The cluster's clock: fifty times the wall clock's pace.
const SCALE: f64 = 0.02;

/// `n` minutes of the cluster's clock, in wall-clock time.
fn minutes(n: f64) -> Duration {
    Duration::from_secs_f64(60.0 * SCALE * n)
}

fn cron_job(name: &str, policy: &str, command: &[&str]) -> CronJob {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"schedule": "*/1 * * * *", "concurrencyPolicy": policy, "successfulJobsHistoryLimit": 1,
            "jobTemplate": {"spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox:1.36", "command": command}]}}}}}
    }))
    .expect("cronjob")
}

async fn jobs_of(jobs: &Api<Job>, owner: &str) -> Vec<Job> {
    jobs.list(&ListParams::default())
        .await
        .expect("list jobs")
        .items
        .into_iter()
        .filter(|j| {
            j.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "CronJob" && o.name == owner)
        })
        .collect()
}

fn complete(j: &Job) -> bool {
    j.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Complete" && c.status == "True"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbid_suspend_and_history_limits() {
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    topology.timing.scale = SCALE;
    let (_cluster, client) = common::cluster_and_client(topology, NS).await;
    let cron: Api<CronJob> = Api::namespaced(client.clone(), NS);
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    let pp = PostParams::default();
    cron.create(&pp, &cron_job("forever", "Forbid", &["sleep", "infinity"]))
        .await
        .expect("create forever");
    cron.create(&pp, &cron_job("quick", "Allow", &["true"]))
        .await
        .expect("create quick");
    // Four scheduled minutes pass.
    tokio::time::sleep(minutes(4.3)).await;
    let forever = jobs_of(&jobs, "forever").await;
    assert_eq!(forever.len(), 1, "Forbid keeps one Job: {forever:#?}");
    let quick = jobs_of(&jobs, "quick").await;
    let done = quick.iter().filter(|j| complete(j)).count();
    assert!(
        done <= 1,
        "successfulJobsHistoryLimit 1 keeps one finished Job: {quick:#?}"
    );
    let status = cron.get("quick").await.expect("get quick").status.expect("status");
    assert!(
        status.last_schedule_time.is_some() && status.last_successful_time.is_some(),
        "{status:?}"
    );
    let active = cron
        .get("forever")
        .await
        .expect("get forever")
        .status
        .and_then(|s| s.active)
        .unwrap_or_default();
    assert_eq!(active.len(), 1, "the running Job is listed as active");

    // Suspended: no new Jobs.
    cron.patch(
        "quick",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": true}})),
    )
    .await
    .expect("suspend");
    tokio::time::sleep(minutes(0.35)).await;
    let names = |js: Vec<Job>| -> Vec<String> { js.into_iter().filter_map(|j| j.metadata.name).collect() };
    let before = names(jobs_of(&jobs, "quick").await);
    tokio::time::sleep(minutes(2.35)).await;
    let after = names(jobs_of(&jobs, "quick").await);
    assert!(after.iter().all(|n| before.contains(n)), "{before:?} then {after:?}");
}
