//! mixcheck as an in-cluster Job: `--in-cluster` outside a cluster is refused (exit 2) before
//! anything runs; `mixcheck results --from-job` reads the results a Job printed between its
//! marker lines back through the API (a Job on `mixcheck sim serve` whose container prints a
//! saved run's block) and renders them with the run's gate as exit code.

use std::process::Command;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

use crate::run_cli::Serve;

fn mixcheck() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mixcheck"));
    cmd.env_remove("KUBECONFIG").env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

#[test]
fn in_cluster_outside_a_cluster_exits_2_and_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck()
        .current_dir(dir.path())
        .env_remove("KUBERNETES_SERVICE_HOST")
        .args(["run", "--in-cluster"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--in-cluster: KUBERNETES_SERVICE_HOST is not set") && stderr.contains("--kubeconfig"),
        "{stderr}"
    );
    assert!(!dir.path().join("mixcheck-report").exists(), "nothing ran");
    let both = mixcheck()
        .current_dir(dir.path())
        .args(["run", "--in-cluster", "--context", "x"])
        .output()
        .expect("run");
    assert_eq!(both.status.code(), Some(2));
}

/// The block an in-cluster run prints, from a real (failed) run's results.json.
fn saved_block(dir: &std::path::Path) -> (String, String) {
    let out = mixcheck()
        .current_dir(dir)
        .args([
            "run",
            "--quiet",
            "--suite",
            "dns",
            "--fault",
            "win2022-1:dns-unreachable",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let text = std::fs::read_to_string(dir.join("mixcheck-report/results.json")).expect("results.json");
    let report: Value = serde_json::from_str(&text).expect("json");
    let compact = serde_json::to_string(&report).expect("json");
    let block = format!(
        "## mixcheck: gate failed\n----- BEGIN MIXCHECK RESULTS -----\n{compact}\n----- END MIXCHECK RESULTS -----\nResults: mixcheck-report/results.json\n"
    );
    (block, report["run_id"].as_str().expect("run id").to_string())
}

#[test]
fn results_from_job_reads_the_run_back_from_the_jobs_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (block, run_id) = saved_block(dir.path());
    let serve = Serve::start();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(serve.kubeconfig()).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .expect("config");
        let client = kube::Client::try_from(config).expect("client");
        let pp = PostParams::default();
        Api::<Namespace>::all(client.clone())
            .create(
                &pp,
                &serde_json::from_value(json!({"metadata": {"name": "mixcheck"}})).expect("ns"),
            )
            .await
            .expect("namespace");
        let job = json!({
            "metadata": {"name": "mixcheck-run"},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "containers": [{
                    "name": "mixcheck",
                    "image": "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
                    "command": ["echo", block]
                }]
            }}}
        });
        Api::<Job>::namespaced(client.clone(), "mixcheck")
            .create(&pp, &serde_json::from_value(job).expect("job"))
            .await
            .expect("job");
        // Until its pod has finished.
        let pods: Api<Pod> = Api::namespaced(client, "mixcheck");
        for _ in 0..120 {
            let list = pods
                .list(&ListParams::default().labels("job-name=mixcheck-run"))
                .await
                .expect("pods");
            let done = list.items.iter().any(|p| {
                matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Succeeded" | "Failed")
                )
            });
            if done {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    });
    let out = mixcheck()
        .current_dir(dir.path())
        .args([
            "results",
            "--from-job",
            "mixcheck-run",
            "-n",
            "mixcheck",
            "--kubeconfig",
            &serve.kubeconfig(),
        ])
        .args(["-o", "json", "--report-dir", "fetched"])
        .output()
        .expect("results");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the run's gate failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(back["run_id"], run_id.as_str());
    assert!(dir.path().join("fetched/report.html").exists());
    // A Job that does not exist: exit 2, saying so.
    let missing = mixcheck()
        .args([
            "results",
            "--from-job",
            "nope",
            "-n",
            "mixcheck",
            "--kubeconfig",
            &serve.kubeconfig(),
        ])
        .output()
        .expect("results");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no pod"));
}
