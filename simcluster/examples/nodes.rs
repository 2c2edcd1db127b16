//! Simulated-node benchmark: a bundled cluster of 1,000 nodes (half Windows Server 2022, half
//! Linux) brings 10,000 pods to Running through Deployments and DaemonSets created over HTTPS,
//! with the real scheduler, controllers and kubelets. Prints the time until every pod runs and
//! the process's peak resident memory.
//!
//! Run: `cargo run --release -p simcluster --example nodes [-- --nodes N --pods N --addons]`
//! (`--addons` also runs the kube-system add-ons of the topology's profile).

use std::time::{Duration, Instant};

use serde_json::json;
use simcluster::internals::resources as registry;
use simcluster::{Cluster, ClusterConfig, Topology};

mod support;
use support::arg;

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

fn topology(nodes: usize) -> Result<Topology, String> {
    let half = nodes / 2;
    let yaml = format!(
        "name: bench\nkubernetesVersion: v1.32.3\nnodes:\n\
         - {{name: linux, os: linux, count: {}, capacity: {{cpu: \"16\", memory: 64Gi, pods: \"110\"}}}}\n\
         - {{name: win, os: windows, kernelVersion: 10.0.20348.2762, count: {half}, capacity: {{cpu: \"16\", memory: 64Gi, pods: \"110\"}},\n\
            taints: [{{key: os, value: windows, effect: NoSchedule}}]}}\n",
        nodes - half
    );
    Topology::parse(&yaml, "<bench topology>").map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let nodes = arg("--nodes", 1000)?;
    let pods = arg("--pods", 10_000)?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let started = Instant::now();
    let mut config = ClusterConfig::new(topology(nodes)?);
    // The benchmark measures its own workloads: without `--addons`, the cluster runs no
    // kube-system add-ons (on 1,000 nodes their DaemonSets would add 2,000 pods).
    config.addons = std::env::args().any(|a| a == "--addons");
    let cluster = Cluster::start(config).await.map_err(|e| e.to_string())?;
    println!("{nodes} nodes registered in {:.2}s", started.elapsed().as_secs_f64());

    let ca = reqwest::Certificate::from_pem(cluster.ca_pem().as_bytes()).map_err(|e| e.to_string())?;
    let client = reqwest::Client::builder()
        .tls_certs_only([ca])
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())?;
    let post = |path: String, body: serde_json::Value| {
        let client = client.clone();
        let url = format!("{}{path}", cluster.url());
        let token = cluster.token().to_string();
        async move {
            let resp = client
                .post(url)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if resp.status().as_u16() != 201 {
                return Err(format!(
                    "HTTP {}: {}",
                    resp.status(),
                    resp.text().await.unwrap_or_default()
                ));
            }
            Ok::<(), String>(())
        }
    };
    post("/api/v1/namespaces".into(), json!({"metadata": {"name": "bench"}})).await?;

    // Two DaemonSets (one per OS) give one pod per node; Deployments make up the rest.
    let t0 = Instant::now();
    let container = |image: &str| {
        json!([{"name": "app", "image": image, "args": ["netexec", "--http-port=8080"],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}}}])
    };
    for (os, image, tolerations) in [
        ("linux", "registry.k8s.io/e2e-test-images/agnhost:2.52", json!([])),
        (
            "windows",
            "registry.k8s.io/e2e-test-images/agnhost:2.52",
            json!([{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}]),
        ),
    ] {
        let ds = json!({"metadata": {"name": format!("agent-{os}")}, "spec": {
            "selector": {"matchLabels": {"app": format!("agent-{os}")}},
            "template": {"metadata": {"labels": {"app": format!("agent-{os}")}}, "spec": {
                "nodeSelector": {"kubernetes.io/os": os}, "tolerations": tolerations, "containers": container(image)}}}});
        post("/apis/apps/v1/namespaces/bench/daemonsets".into(), ds).await?;
    }
    let remaining = pods.saturating_sub(nodes);
    let deployments = 20usize;
    for d in 0..deployments {
        let replicas = remaining / deployments + usize::from(d < remaining % deployments);
        let (os, tolerations) = if d % 2 == 0 {
            ("linux", json!([]))
        } else {
            (
                "windows",
                json!([{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}]),
            )
        };
        let deploy = json!({"metadata": {"name": format!("web-{d}")}, "spec": {"replicas": replicas,
            "selector": {"matchLabels": {"app": format!("web-{d}")}},
            "template": {"metadata": {"labels": {"app": format!("web-{d}")}}, "spec": {
                "nodeSelector": {"kubernetes.io/os": os}, "tolerations": tolerations,
                "containers": container("registry.k8s.io/e2e-test-images/agnhost:2.52")}}}});
        post("/apis/apps/v1/namespaces/bench/deployments".into(), deploy).await?;
    }
    println!(
        "2 DaemonSets and {deployments} Deployments created in {:.2}s",
        t0.elapsed().as_secs_f64()
    );

    let pods_rt = registry::core("pods");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut last_report = Instant::now();
    loop {
        let (all, _) = cluster.store().list(pods_rt, Some("bench"));
        let running = all
            .iter()
            .filter(|p| p.value().pointer("/status/phase").and_then(|v| v.as_str()) == Some("Running"))
            .count();
        if running >= pods {
            println!(
                "{running} pods Running {:.2}s after the workloads were created ({:.2}s since start)",
                t0.elapsed().as_secs_f64(),
                started.elapsed().as_secs_f64()
            );
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "only {running} of {pods} pods Running after 120 s ({} pods exist)",
                all.len()
            ));
        }
        if last_report.elapsed() > Duration::from_secs(2) {
            let unbound = all
                .iter()
                .filter(|p| p.value().pointer("/spec/nodeName").is_none())
                .count();
            let failed = all
                .iter()
                .filter(|p| p.value().pointer("/status/phase").and_then(|v| v.as_str()) == Some("Failed"))
                .count();
            println!(
                "  … {running} Running of {} pods ({unbound} unscheduled, {failed} failed)",
                all.len()
            );
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for plural in ["pods", "events"] {
        let (items, _) = cluster.store().list(registry::core(plural), None);
        let bytes: usize = items.iter().map(|o| o.json().len()).sum();
        println!(
            "store: {} {plural}, {:.1} MiB of JSON",
            items.len(),
            bytes as f64 / 1_048_576.0
        );
    }
    match peak_rss_mib() {
        Some(mib) => println!("memory: peak resident {mib:.0} MiB"),
        None => println!("memory: peak resident unknown"),
    }
    cluster.shutdown().await;
    Ok(())
}
