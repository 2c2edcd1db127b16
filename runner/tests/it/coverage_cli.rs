//! `--coverage` and `--plan` on clusters whose pools hold more nodes than the representatives of
//! their fact sets: light nodes get exactly the light checks, a fault on one promotes it and is
//! localised and diagnosed there, `--coverage full` checks every node, and `--plan` creates
//! nothing and counts the probes the run makes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn mixcheck() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mixcheck"))
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    mixcheck()
        .current_dir(dir)
        .env_remove("KUBECONFIG")
        .args(args)
        .output()
        .expect("run mixcheck")
}

/// A topology of a control plane and `per_pool` workers in each of a Linux, a Windows Server
/// 2019 and a Windows Server 2022 pool; with `patched`, the last 2022 node runs a later kernel
/// revision (a fact set of its own). Its clock runs twenty times as fast as the wall clock, as
/// the default cluster's and the bench's topologies' do.
fn topology(per_pool: usize, patched: bool) -> String {
    let mut t = String::from(
        "name: coverage\nkubernetesVersion: v1.32.3\nnetwork: {mode: l2bridge}\ntiming: {scale: 0.05}\nnodes:\n",
    );
    t.push_str("  - {name: control-plane, os: linux, role: control-plane, taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]}\n");
    t.push_str(&format!(
        "  - {{name: linux, os: linux, kernelVersion: \"6.8.0-1017-azure\", count: {per_pool}}}\n"
    ));
    let windows = ", taints: [{key: os, value: windows, effect: NoSchedule}], kubelet: {systemReserved: {memory: 2Gi}}";
    t.push_str(&format!(
        "  - {{name: win2019, os: windows, kernelVersion: \"10.0.17763.6414\", count: {per_pool}{windows}}}\n"
    ));
    let same = if patched { per_pool - 1 } else { per_pool };
    t.push_str(&format!(
        "  - {{name: win2022, os: windows, kernelVersion: \"10.0.20348.2762\", count: {same}{windows}}}\n"
    ));
    if patched {
        t.push_str(&format!(
            "  - {{name: win2022-{per_pool}, os: windows, kernelVersion: \"10.0.20348.3091\"{windows}}}\n"
        ));
    }
    t
}

/// The checks of the embedded suites by name: (`everyNode`, the probe kind).
fn checks() -> BTreeMap<String, (bool, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("suites") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if !name.ends_with(".yaml") || ["rules.yaml", "causes.yaml", "remedies.yaml"].contains(&name.as_str()) {
            continue;
        }
        let suite: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).expect("read")).expect("yaml");
        for c in suite["checks"].as_array().expect("checks") {
            out.insert(
                c["name"].as_str().expect("name").to_string(),
                (
                    c["everyNode"].as_bool().unwrap_or(false),
                    c["probe"]["kind"].as_str().expect("kind").to_string(),
                ),
            );
        }
    }
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The probes a run or a plan said it makes.
fn probes_said(text: &str) -> Option<u64> {
    let re = regex::Regex::new(r"\((\d+) probes;|Probes: +(\d+) ").expect("re");
    re.captures(text)
        .and_then(|c| c.get(1).or_else(|| c.get(2)))
        .and_then(|m| m.as_str().parse().ok())
}

fn results(dir: &Path, report: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(report).join("results.json")).expect("results.json");
    serde_json::from_str(&text).expect("json")
}

/// (node, its level) from the report's coverage.
fn levels(report: &Value) -> BTreeMap<String, String> {
    report["coverage"]["nodes"]
        .as_array()
        .expect("coverage.nodes")
        .iter()
        .map(|n| {
            (
                n["node"].as_str().expect("node").to_string(),
                n["level"].as_str().expect("level").to_string(),
            )
        })
        .collect()
}

/// For each node, (check, role) of every cell it appears in.
fn appearances(report: &Value) -> BTreeMap<String, BTreeSet<(String, String)>> {
    let mut out: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for c in report["cells"].as_array().expect("cells") {
        for n in c["nodes"].as_array().into_iter().flatten() {
            out.entry(n["name"].as_str().expect("name").to_string())
                .or_default()
                .insert((
                    c["check"].as_str().expect("check").to_string(),
                    n["role"].as_str().unwrap_or_default().to_string(),
                ));
        }
    }
    out
}

/// On pools larger than their representatives, a clean run passes; each light node is in the
/// cells of the light checks only (and of the checks judged from facts, which read every node),
/// from it and — for the flow to a pod — to it; a node of its own kernel revision is a
/// representative; `--coverage full` puts every node in every check and makes more probes.
#[rstest::rstest]
#[case::three_per_pool_all_suites(3, false, &[])]
#[case::five_per_pool_patched_node_network_and_dns(5, true, &["--suite", "network-flows", "--suite", "dns"])]
#[case::four_per_pool_nodeport(4, false, &["--suite", "nodeport"])]
fn light_nodes_get_the_light_checks_and_representatives_every_check(
    #[case] per_pool: usize,
    #[case] patched: bool,
    #[case] selection: &[&str],
) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("t.yaml"), topology(per_pool, patched)).expect("write");
    let run = |report: &str, coverage: &str| {
        let mut args = vec![
            "run",
            "--topology",
            "t.yaml",
            "--coverage",
            coverage,
            "--report-dir",
            report,
            "-o",
            "json",
        ];
        args.extend(selection);
        let out = run_in(dir.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        (
            results(dir.path(), report),
            probes_said(&stderr(&out)).expect("a probe count"),
        )
    };
    let (sampled, sampled_probes) = run("sampled", "sampled");
    let levels_of = levels(&sampled);
    let light: Vec<&String> = levels_of
        .iter()
        .filter(|(_, l)| *l == "light")
        .map(|(n, _)| n)
        .collect();
    // Two representatives per fact set and pool; the patched node is a set of its own.
    let expected_light = 3 * (per_pool - 2) - usize::from(patched);
    assert_eq!(light.len(), expected_light, "{levels_of:?}");
    if patched {
        assert_eq!(levels_of[&format!("win2022-{per_pool}")], "full");
    }
    let checks = checks();
    let seen = appearances(&sampled);
    let selected_light: BTreeSet<&str> = sampled["coverage"]["light_checks"]
        .as_array()
        .expect("light_checks")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!selected_light.is_empty());
    for node in &light {
        let mine = seen.get(*node).cloned().unwrap_or_default();
        for (check, _) in &mine {
            let (every, kind) = &checks[check];
            // Facts and the kubelet's summary API are judged on every node (one API read each).
            assert!(
                *every || kind == "fact" || kind == "node-stats",
                "light node {node} is in a cell of {check} ({kind})"
            );
        }
        for check in &selected_light {
            let role = if checks[*check].1 == "outside" {
                "destination"
            } else {
                "source"
            };
            assert!(
                mine.contains(&(check.to_string(), role.to_string())),
                "light node {node} is no {role} of {check}: {mine:?}"
            );
        }
        if selected_light.contains("pod-ip-cross-node") {
            assert!(mine.contains(&("pod-ip-cross-node".to_string(), "destination".to_string())));
        }
    }
    let (full, full_probes) = run("full", "full");
    assert!(levels(&full).values().all(|l| l == "full"));
    assert!(full_probes > sampled_probes, "{full_probes} > {sampled_probes}");
    // Every cell of the exhaustive plan is judged by the sampled one too.
    let ids = |r: &Value| -> BTreeSet<String> {
        r["cells"]
            .as_array()
            .expect("cells")
            .iter()
            .map(|c| c["id"].as_str().expect("id").to_string())
            .collect()
    };
    assert_eq!(ids(&sampled), ids(&full));
}

/// A fault on a light node fails one of its light checks; the node is promoted to every check,
/// and the diagnosis names the fault's cause on that node first — on a 250-node cluster with every
/// suite, and on a small one with the DNS and network suites.
#[rstest::rstest]
#[case::kube_proxy_on_a_250_node_cluster(83, "win2022-40", "kube-proxy-stopped", &[])]
#[case::dns_on_a_small_cluster(4, "linux-4", "dns-unreachable", &["--suite", "dns", "--suite", "network-flows"])]
#[case::port_exhaustion_on_a_linux_node(5, "linux-3", "port-exhaustion", &["--suite", "nodeport", "--suite", "network-flows"])]
fn a_fault_on_a_light_node_promotes_it_and_is_diagnosed_there(
    #[case] per_pool: usize,
    #[case] node: &str,
    #[case] fault: &str,
    #[case] selection: &[&str],
) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("t.yaml"), topology(per_pool, false)).expect("write");
    let injected = format!("{node}:{fault}");
    let mut args = vec![
        "run",
        "--topology",
        "t.yaml",
        "--fault",
        &injected,
        "--report-dir",
        "r",
        "-o",
        "json",
    ];
    args.extend(selection);
    let out = run_in(dir.path(), &args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("A light check failed on 1 node ({node})")),
        "{err}"
    );
    let report = results(dir.path(), "r");
    assert_eq!(levels(&report)[node], "promoted");
    let causes = report["diagnosis"]["causes"].as_array().expect("causes");
    let top = causes.first().expect("a cause");
    assert_eq!(top["id"], fault, "{causes:#?}");
    assert_eq!(top["nodes"], serde_json::json!([node]), "{top:#}");
    // Promoted, the node is checked like a representative: more than the light checks see it.
    let checks_on_node: BTreeSet<String> = appearances(&report)[node].iter().map(|(c, _)| c.clone()).collect();
    let light: BTreeSet<String> = report["coverage"]["light_checks"]
        .as_array()
        .expect("light_checks")
        .iter()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect();
    assert!(checks_on_node.difference(&light).count() > 3, "{checks_on_node:?}");
}

/// `--plan` against a served cluster lists what a run would do and creates nothing (namespaces
/// and pods are the same before and after); its probe count is the count the run then makes.
#[rstest::rstest]
#[case::sampled("sampled", &[])]
#[case::full_dns_only("full", &["--suite", "dns"])]
fn a_plan_creates_nothing_and_counts_the_probes_of_the_run(#[case] coverage: &str, #[case] selection: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("t.yaml"), topology(3, false)).expect("write");
    let serve = crate::run_cli::Serve::start_with(&["--topology", &dir.path().join("t.yaml").display().to_string()]);
    let kc = serve.kubeconfig();
    let listing = || -> (Vec<String>, Vec<String>) {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        runtime.block_on(async {
            let config = kube::Config::from_custom_kubeconfig(
                kube::config::Kubeconfig::read_from(&kc).expect("kubeconfig"),
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .expect("config");
            let client = kube::Client::try_from(config).expect("client");
            let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client.clone());
            let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::all(client);
            let names = |items: Vec<Option<String>>| {
                let mut v: Vec<String> = items.into_iter().flatten().collect();
                v.sort();
                v
            };
            let ns = namespaces.list(&Default::default()).await.expect("namespaces");
            let ps = pods.list(&Default::default()).await.expect("pods");
            (
                names(ns.items.into_iter().map(|n| n.metadata.name).collect()),
                names(ps.items.into_iter().map(|p| p.metadata.name).collect()),
            )
        })
    };
    let before = listing();
    let mut args = vec!["run", "--kubeconfig", &kc, "--coverage", coverage, "--plan"];
    args.extend(selection);
    let plan = run_in(dir.path(), &args);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    let printed = String::from_utf8_lossy(&plan.stdout).into_owned();
    assert!(printed.contains("nothing was created"), "{printed}");
    for line in ["Coverage:", "Checks:", "Pods:", "API calls:", "Estimate:"] {
        assert!(printed.contains(line), "{line} in {printed}");
    }
    assert_eq!(listing(), before, "the plan created nothing");
    let planned = probes_said(&printed).expect("the plan's probe count");
    let mut args = vec!["run", "--kubeconfig", &kc, "--coverage", coverage, "--settle", "1s"];
    args.extend(selection);
    let run = run_in(dir.path(), &args);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(probes_said(&stderr(&run)), Some(planned), "{}", stderr(&run));
}

/// NET-HNS-MATCHES-API under full coverage reads each Windows node's load balancers against one
/// view of the API (every Service, EndpointSlice, pod and node listed) shared by the readings
/// that start within a second, not one listing per node; every node's cell still passes on its
/// own reading. Pools of three and five nodes per OS, both Windows pools read.
#[rstest::rstest]
#[case::three_per_pool(3)]
#[case::five_per_pool(5)]
fn the_hns_readings_of_many_nodes_share_the_apis_view(#[case] per_pool: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("topology.yaml"), topology(per_pool, false)).expect("topology");
    let out = mixcheck()
        .current_dir(dir.path())
        .env_remove("KUBECONFIG")
        .env("MIXCHECK_LOG", "mixcheck::api_view=trace")
        .env("NO_COLOR", "1")
        .args(["run", "--quiet", "--topology", "topology.yaml", "--coverage", "full"])
        .args(["--check", "dataplane/hns-matches-api$", "--report-dir", "report"])
        .output()
        .expect("run mixcheck");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let report = results(dir.path(), "report");
    let cells = report["cells"].as_array().expect("cells");
    let windows = 2 * per_pool;
    let read: usize = cells
        .iter()
        .filter(|c| c["rule_id"] == "NET-HNS-MATCHES-API")
        .map(|c| {
            assert_eq!(c["verdict"], "pass", "{c}");
            c["nodes"].as_array().map_or(0, Vec::len)
        })
        .sum();
    assert_eq!(read, windows, "every Windows node read: {err}");
    let views = err.matches("reading the API's view of the data planes").count();
    assert!(
        views >= 1 && views < windows,
        "{views} API views for {windows} nodes: {err}"
    );
}
