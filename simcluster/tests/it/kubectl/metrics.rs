//! `kubectl top` over `metrics.k8s.io` and the kubelet summary API through the node proxy,
//! for Linux and Windows nodes (NODE-STATS).

use super::*;

use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn kubectl_top_and_the_stats_summary() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    run_sleeper(&k, "default", "lin");
    run_pod(
        &k,
        "default",
        "win",
        "mcr.microsoft.com/windows/servercore:ltsc2022",
        Some("win2022-1"),
        &["ping", "-t", "localhost"],
    );
    wait_ready(&k, "default", "pod/win");

    let nodes = table(&k.run(&["top", "nodes"]).ok());
    let mut names: Vec<&str> = nodes.iter().map(|r| cell(r, "NAME")).collect();
    names.sort();
    assert_eq!(names, ["control-plane", "linux-1", "win2019-1", "win2022-1"]);
    for r in &nodes {
        assert!(cell(r, "CPU(cores)").ends_with('m'), "{r:?}");
        assert!(cell(r, "MEMORY(bytes)").ends_with("Mi"), "{r:?}");
        assert!(cell(r, "MEMORY(%)").ends_with('%'), "{r:?}");
    }
    let pods = table(&k.run(&["top", "pods"]).ok());
    let mut names: Vec<&str> = pods.iter().map(|r| cell(r, "NAME")).collect();
    names.sort();
    assert_eq!(names, ["lin", "win"]);
    let containers = table(&k.run(&["top", "pod", "win", "--containers"]).ok());
    assert_eq!(cell(row(&containers, "POD", "win"), "NAME"), "win");
    // The metrics objects read back through `kubectl get --raw`.
    let node: Value = serde_json::from_str(
        &k.run(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/win2022-1"])
            .ok(),
    )
    .expect("NodeMetrics JSON");
    assert_eq!(node["kind"], "NodeMetrics");
    assert!(node["usage"]["memory"].is_string(), "{node}");

    for (name, pod, windows) in [("linux-1", "lin", false), ("win2022-1", "win", true)] {
        let raw = k
            .run(&["get", "--raw", &format!("/api/v1/nodes/{name}/proxy/stats/summary")])
            .ok();
        let summary: Value = serde_json::from_str(&raw).expect("summary JSON");
        assert_eq!(summary["node"]["nodeName"], name);
        assert!(
            summary["node"]["cpu"]["usageCoreNanoSeconds"].as_u64() > Some(0),
            "{summary}"
        );
        assert!(
            summary["node"]["memory"]["workingSetBytes"].as_u64() > Some(0),
            "{summary}"
        );
        assert_eq!(summary["node"]["rlimit"].is_null(), windows, "rlimit is Linux only");
        let pods = summary["pods"].as_array().cloned().unwrap_or_default();
        let ours = pods
            .iter()
            .find(|p| p["podRef"]["name"] == pod)
            .unwrap_or_else(|| panic!("{pod} in the summary of {name}: {summary}"));
        let c = &ours["containers"][0];
        assert!(c["cpu"]["usageCoreNanoSeconds"].as_u64() > Some(0), "{c}");
        assert!(c["memory"]["workingSetBytes"].as_u64() > Some(0), "{c}");
        assert!(c["logs"]["availableBytes"].as_u64() > Some(0), "{c}");
    }
}
