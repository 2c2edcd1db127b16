//! Load benchmark of the bundled cluster's API server, over HTTPS like any client:
//! creates 1,000 nodes and 10,000 pods from concurrent clients while watchers follow, then
//! times LISTs of all pods. Prints creates per second, LIST time, watch events per second and
//! the process's peak resident memory (server and clients together).
//!
//! Run: `cargo run --release -p simcluster --example load [-- --nodes N --pods N --concurrency N --watchers N --addons]`
//! (`--addons` also runs the kube-system add-ons of the default profile).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use simcluster::{Cluster, ClusterConfig, Topology};

struct Args {
    nodes: usize,
    pods: usize,
    concurrency: usize,
    watchers: usize,
    namespaces: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        nodes: 1000,
        pods: 10_000,
        concurrency: 32,
        watchers: 4,
        namespaces: 10,
    };
    let mut it = std::env::args().skip(1).filter(|a| a != "--addons");
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let n: usize = value
            .parse()
            .map_err(|_| format!("{flag}: {value:?} is not a number"))?;
        match flag.as_str() {
            "--nodes" => args.nodes = n,
            "--pods" => args.pods = n,
            "--concurrency" => args.concurrency = n.max(1),
            "--watchers" => args.watchers = n,
            "--namespaces" => args.namespaces = n.max(1),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(args)
}

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn node_body(i: usize) -> serde_json::Value {
    let os = if i.is_multiple_of(2) { "linux" } else { "windows" };
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": format!("load-node-{i}"), "labels": {"kubernetes.io/os": os, "kubernetes.io/arch": "amd64"}},
        "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "nodeInfo": {"operatingSystem": os, "kubeletVersion": "v1.32.3"}},
    })
}

fn pod_body(i: usize, nodes: usize) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("load-pod-{i}"), "labels": {"app": format!("app-{}", i % 50), "tier": "load"}},
        "spec": {
            "nodeName": format!("load-node-{}", i % nodes.max(1)),
            "containers": [{"name": "agnhost", "image": "registry.k8s.io/e2e-test-images/agnhost:2.52",
                "args": ["netexec", "--http-port=8080"], "ports": [{"containerPort": 8080}],
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}}}],
            "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}],
        },
    })
}

async fn create_all(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    items: Vec<(String, serde_json::Value)>,
    concurrency: usize,
) -> Result<(usize, Duration), String> {
    let started = Instant::now();
    let count = items.len();
    let results: Vec<Result<(), String>> = futures::stream::iter(items)
        .map(|(path, body)| async move {
            let resp = client
                .post(format!("{base}{path}"))
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .map_err(|e| format!("POST {path}: {e}"))?;
            if resp.status().as_u16() != 201 {
                return Err(format!("POST {path}: HTTP {}", resp.status()));
            }
            Ok(())
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
        return Err(e);
    }
    Ok((count, started.elapsed()))
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = parse_args()?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = ClusterConfig::new(Topology::default_cluster());
    // The benchmark measures the API server with its own objects: without `--addons` the
    // cluster runs no kube-system add-ons (their DaemonSets would follow each of the 1,000
    // nodes it registers and add their pods and events to the figures).
    config.addons = std::env::args().any(|a| a == "--addons");
    config.store.history = 50_000;
    let cluster = Cluster::start(config).await.map_err(|e| e.to_string())?;
    let ca = reqwest::Certificate::from_pem(cluster.ca_pem().as_bytes()).map_err(|e| e.to_string())?;
    let client = reqwest::Client::builder()
        .tls_certs_only([ca])
        .timeout(Duration::from_secs(120))
        .pool_max_idle_per_host(args.concurrency)
        .build()
        .map_err(|e| e.to_string())?;
    let base = cluster.url().to_string();
    let token = cluster.token().to_string();
    println!(
        "bundled cluster at {base}; {} nodes, {} pods, {} concurrent clients, {} watchers",
        args.nodes, args.pods, args.concurrency, args.watchers
    );

    for n in 0..args.namespaces {
        let body = json!({"metadata": {"name": format!("load-{n}")}});
        create_all(&client, &base, &token, vec![("/api/v1/namespaces".into(), body)], 1).await?;
    }

    // Watchers on all pods, counting ADDED events.
    let received = Arc::new(AtomicU64::new(0));
    let last_event = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let mut watchers = Vec::new();
    for _ in 0..args.watchers {
        let url = format!("{base}/api/v1/pods?watch=true&timeoutSeconds=600");
        let resp = client
            .get(url)
            .bearer_auth(&token)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let received = received.clone();
        let last_event = last_event.clone();
        watchers.push(tokio::spawn(async move {
            let mut stream = resp.bytes_stream();
            while let Some(Ok(chunk)) = stream.next().await {
                let lines = chunk.iter().filter(|b| **b == b'\n').count() as u64;
                received.fetch_add(lines, Ordering::Relaxed);
                if let Ok(mut l) = last_event.lock() {
                    *l = Some(Instant::now());
                }
            }
        }));
    }

    let nodes: Vec<_> = (0..args.nodes)
        .map(|i| ("/api/v1/nodes".to_string(), node_body(i)))
        .collect();
    let (n, node_time) = create_all(&client, &base, &token, nodes, args.concurrency).await?;
    println!(
        "nodes: {n} created in {:.2}s = {:.0} creates/s",
        node_time.as_secs_f64(),
        n as f64 / node_time.as_secs_f64()
    );

    let pods_started = Instant::now();
    let pods: Vec<_> = (0..args.pods)
        .map(|i| {
            (
                format!("/api/v1/namespaces/load-{}/pods", i % args.namespaces),
                pod_body(i, args.nodes),
            )
        })
        .collect();
    let (n, pod_time) = create_all(&client, &base, &token, pods, args.concurrency).await?;
    println!(
        "pods:  {n} created in {:.2}s = {:.0} creates/s",
        pod_time.as_secs_f64(),
        n as f64 / pod_time.as_secs_f64()
    );

    let expected = (args.pods * args.watchers) as u64;
    let deadline = Instant::now() + Duration::from_secs(60);
    while received.load(Ordering::Relaxed) < expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let got = received.load(Ordering::Relaxed);
    let last = last_event.lock().ok().and_then(|l| *l).unwrap_or_else(Instant::now);
    let span = last.saturating_duration_since(pods_started).as_secs_f64().max(1e-9);
    if args.watchers > 0 {
        println!(
            "watch: {got} of {expected} pod events delivered to {} watchers in {span:.2}s = {:.0} events/s",
            args.watchers,
            got as f64 / span
        );
    }

    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let resp = client
            .get(format!("{base}/api/v1/pods"))
            .bearer_auth(&token)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let body = resp.bytes().await.map_err(|e| e.to_string())?;
        times.push(t.elapsed());
        size = body.len();
    }
    times.sort();
    let parsed: serde_json::Value = {
        let resp = client
            .get(format!("{base}/api/v1/pods"))
            .bearer_auth(&token)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        resp.json().await.map_err(|e| e.to_string())?
    };
    let items = parsed["items"].as_array().map_or(0, Vec::len);
    println!(
        "list:  GET /api/v1/pods returned {items} pods ({:.1} MiB) in median {:.0} ms (best {:.0} ms, worst {:.0} ms)",
        size as f64 / 1_048_576.0,
        times[times.len() / 2].as_secs_f64() * 1000.0,
        times[0].as_secs_f64() * 1000.0,
        times[times.len() - 1].as_secs_f64() * 1000.0
    );
    match peak_rss_mib() {
        Some(mib) => println!("memory: peak resident {mib:.0} MiB (server and load clients in one process)"),
        None => println!("memory: peak resident unknown (no /proc/self/status)"),
    }
    for w in watchers {
        w.abort();
    }
    cluster.shutdown().await;
    if got < expected {
        return Err(format!("watchers received {got} of {expected} events"));
    }
    Ok(())
}
