//! How a run spends its execs: a flow judged on ten connections or lookups once it works makes
//! them in one exec where the pod's shell can run the tool ten times (agnhost pods), one exec
//! each where it cannot (Server Core's PowerShell). Read from the run's own exec log
//! (`MIXCHECK_LOG`).

use std::collections::BTreeMap;

use rstest::rstest;

use crate::cli::{mixcheck, text};

/// Each exec of a run, in order: the pod and its command line, from the `mixcheck::exec` trace.
fn execs(stderr: &str) -> Vec<(String, String)> {
    stderr
        .lines()
        .filter_map(|l| {
            let rest = l.split_once(" exec ")?.1;
            let (pod, rest) = rest.split_once(" \"")?;
            let (line, _) = rest.rsplit_once("\" took ")?;
            // The trace prints the line as a Rust string: quotes escaped.
            Some((pod.to_string(), line.replace("\\\"", "\"")))
        })
        .collect()
}

/// A chained exec's single command and how many runs its script lists; None for a plain exec.
fn chained(line: &str) -> Option<(String, usize)> {
    let script = line.strip_prefix("/bin/sh -c ")?;
    let (first, _) = script.split_once("; ")?;
    Some((first.to_string(), script.matches("mixcheck-exit=").count()))
}

/// The DNS-FQDN lookups and the ClusterIP flows of a profile: each that passes from an agnhost
/// pod made every attempt as one chained exec listing its ten connections (the others run only
/// where the first worked): no exec after the one that worked; no exec in a pod of a
/// `powershell` pool is chained (its flows make ten execs); there is a chained lookup per
/// source node of a passing lookup cell, and a chained UDP flow for each passing UDP cell at
/// least.
#[rstest]
#[case::default_cluster("default", &[])]
#[case::kubernetes_1_5_windows_server_2016("k8s-1.5-ws2016", &["windows-14393"])]
#[case::overlay_two_windows_nodes_per_pool("k8s-1.14-ws2019-vxlan", &[])]
fn a_flows_ten_connections_or_lookups_are_one_exec_where_sh_runs_them(
    #[case] profile: &str,
    #[case] powershell: &[&str],
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path())
        .env("MIXCHECK_LOG", "mixcheck::exec=trace")
        .env("NO_COLOR", "1")
        .args(["run", "--quiet", "--profile", profile])
        .args([
            "--check",
            "dns/service-fqdn$",
            "--check",
            "network-flows/pod-to-cluster-ip$",
        ])
        .output()
        .expect("run mixcheck");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("mixcheck-report/results.json")).expect("results.json"),
    )
    .expect("json");
    let cells = results["cells"].as_array().expect("cells");
    // Passing cells whose source runs agnhost: each chains its nine.
    let source_of = |c: &serde_json::Value| c["coordinates"]["source"].as_str().unwrap_or_default().to_string();
    let chaining = |c: &&serde_json::Value| c["verdict"] == "pass" && !powershell.contains(&source_of(c).as_str());
    // A lookup cell looks up from each of its source nodes (two nodes of one pool: two lookups).
    let sources = |c: &serde_json::Value| {
        c["nodes"]
            .as_array()
            .map_or(0, |n| n.iter().filter(|n| n["role"] == "source").count())
    };
    let lookups: usize = cells
        .iter()
        .filter(|c| c["rule_id"] == "DNS-FQDN")
        .filter(chaining)
        .map(sources)
        .sum();
    let udp = cells
        .iter()
        .filter(|c| c["rule_id"] == "NET-POD-SVC-CLUSTERIP" && c["id"].as_str().is_some_and(|id| id.ends_with(",udp]")))
        .filter(chaining)
        .count();
    assert!(lookups > 0, "{profile}: a passing lookup from an agnhost pod");

    let stderr = String::from_utf8_lossy(&out.stderr);
    let all = execs(&stderr);
    assert!(!all.is_empty(), "no exec trace in:\n{stderr}");
    // Each flow's execs in order: its single attempts, then (once it works) its chain.
    let mut flows: BTreeMap<(String, String), Vec<Option<usize>>> = BTreeMap::new();
    for (pod, line) in &all {
        match chained(line) {
            Some((single, runs)) => flows.entry((pod.clone(), single)).or_default().push(Some(runs)),
            None => flows.entry((pod.clone(), line.clone())).or_default().push(None),
        }
    }
    let (mut chained_lookups, mut chained_udp) = (0, 0);
    for ((pod, single), seq) in &flows {
        if seq.iter().all(Option::is_none) {
            continue;
        }
        assert!(
            single.starts_with("curl") || single.starts_with("/agnhost connect"),
            "{pod}: only connections and lookups are chained: {single}"
        );
        assert!(
            seq.iter().all(|s| *s == Some(10)),
            "{pod}: every attempt of {single} one chain listing its ten connections: {seq:?}"
        );
        if single.contains(".svc.") {
            chained_lookups += 1;
        }
        if single.contains("--protocol=udp") {
            chained_udp += 1;
        }
    }
    assert!(
        !all.iter()
            .any(|(_, line)| line.starts_with("powershell") && chained(line).is_some()),
        "no chain through PowerShell"
    );
    assert_eq!(
        chained_lookups, lookups,
        "{profile}: a chain per passing lookup from agnhost: {flows:#?}"
    );
    // A flow cell has a pair or more (each source node to a Service of the destination pool).
    assert!(
        chained_udp >= udp,
        "{profile}: {chained_udp} chains for {udp} passing UDP ClusterIP cells from agnhost"
    );
    // Where the pool runs PowerShell, each passing flow through a Service makes its ten.
    for pool in powershell {
        let passing = cells
            .iter()
            .filter(|c| {
                c["verdict"] == "pass"
                    && source_of(c) == *pool
                    && c["id"].as_str().is_some_and(|id| id.ends_with(",tcp]"))
            })
            .count();
        let made = all.iter().filter(|(_, line)| line.starts_with("powershell")).count();
        assert!(
            made >= passing * 10,
            "{pool}: {made} execs for {passing} passing flows of ten"
        );
    }
}
