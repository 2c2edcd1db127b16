//! `mixcheck prepull` against `mixcheck sim serve`, observed through the Kubernetes API as a user
//! would: every schedulable node gets every image its group pulls (as `mixcheck images --build`
//! lists them), with the kubelet's pull times; a second pre-pull finds them already present; one
//! DaemonSet per OS and Windows build; a mirror that lacks the Windows images fails those nodes
//! naming image, node and the registry's words; the deadline and Ctrl-C delete what was created;
//! bad flags exit 2, an unreachable cluster 3.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Event, Namespace, Pod};
use kube::api::{Api, ListParams, PostParams};
use rstest::rstest;
use serde_json::Value;

use crate::cli::{mixcheck, text};
use crate::run_cli::Serve;

const DEFAULT_TOPOLOGY: &str = include_str!("../../../simcluster/topologies/default.yaml");

/// The cluster as kube-rs sees it, through the kubeconfig `sim serve` wrote.
struct Observer {
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
}

impl Observer {
    fn new(kubeconfig: &str) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let client = runtime.block_on(async {
            let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
            let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .expect("config");
            kube::Client::try_from(config).expect("client")
        });
        Self { runtime, client }
    }

    /// Whether the namespace still exists (and is not being deleted).
    fn namespace_lives(&self, name: &str) -> bool {
        let api: Api<Namespace> = Api::all(self.client.clone());
        self.runtime
            .block_on(api.get_opt(name))
            .expect("get namespace")
            .is_some_and(|n| n.metadata.deletion_timestamp.is_none())
    }

    fn create_namespace(&self, name: &str) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).expect("ns");
        self.runtime
            .block_on(api.create(&PostParams::default(), &ns))
            .expect("create namespace");
    }

    /// The DaemonSets labelled as mixcheck's, in every namespace.
    fn mixcheck_daemonsets(&self) -> Vec<String> {
        let api: Api<DaemonSet> = Api::all(self.client.clone());
        let lp = ListParams::default().labels("app.kubernetes.io/managed-by=mixcheck");
        let list = self.runtime.block_on(api.list(&lp)).expect("list daemonsets");
        list.items.into_iter().filter_map(|d| d.metadata.name).collect()
    }

    /// The pods of pre-pulls (their group label) in `ns`.
    fn prepull_pods(&self, ns: &str) -> Vec<String> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let list = self
            .runtime
            .block_on(api.list(&ListParams::default().labels("mixcheck.io/prepull")))
            .expect("list pods");
        list.items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| p.metadata.name)
            .collect()
    }

    /// The DaemonSets that created pods in `ns`, by their SuccessfulCreate events, with the
    /// nodes their pods were for.
    fn daemonsets_by_events(&self, ns: &str) -> BTreeSet<String> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), ns);
        let list = self.runtime.block_on(api.list(&ListParams::default())).expect("events");
        list.items
            .into_iter()
            .filter(|e| e.involved_object.kind.as_deref() == Some("DaemonSet"))
            .filter(|e| e.reason.as_deref() == Some("SuccessfulCreate"))
            .filter_map(|e| e.involved_object.name)
            .collect()
    }

    /// Waits until `check` holds (the API server deletes in the background).
    fn eventually(&self, what: &str, check: impl Fn(&Self) -> bool) {
        let until = Instant::now() + Duration::from_secs(60);
        while !check(self) {
            assert!(Instant::now() < until, "{what} did not happen within 60 s");
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

fn prepull(dir: &Path, args: &[&str]) -> Output {
    mixcheck(dir)
        .arg("prepull")
        .args(args)
        .output()
        .expect("run mixcheck prepull")
}

/// The JSON report of a pre-pull, with its exit code and standard error.
fn json_prepull(dir: &Path, args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = prepull(dir, &all);
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    (
        out.status.code(),
        report,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// node → (image → result object).
fn results(report: &Value) -> BTreeMap<String, BTreeMap<String, Value>> {
    report["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| {
            let images = n["images"]
                .as_array()
                .expect("images")
                .iter()
                .map(|i| (i["image"].as_str().expect("image").to_string(), i.clone()))
                .collect();
            (n["node"].as_str().expect("node").to_string(), images)
        })
        .collect()
}

fn group<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["name"] == name)
        .unwrap_or_else(|| panic!("no group {name}: {:#}", report["groups"]))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string").to_string())
        .collect()
}

/// What `mixcheck images --build BUILD` lists (the images a node of that build pulls).
fn images_of_build(dir: &Path, build: &str) -> BTreeSet<String> {
    let out = mixcheck(dir)
        .args(["images", "--build", build])
        .output()
        .expect("images");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect()
}

/// Each group pulls what `mixcheck images --build` lists for its build, less the images it
/// leaves out on purpose (each with its reason); every node of it gets every one of them.
fn assert_groups_pull_what_images_lists(dir: &Path, report: &Value) {
    let by_node = results(report);
    for g in report["groups"].as_array().expect("groups") {
        let images: BTreeSet<String> = strings(&g["images"]).into_iter().collect();
        let left_out: BTreeSet<String> = g["left_out"]
            .as_array()
            .expect("left_out")
            .iter()
            .inspect(|l| assert!(l["why"].as_str().is_some_and(|w| !w.is_empty()), "{l}"))
            .map(|l| l["image"].as_str().expect("image").to_string())
            .collect();
        if let Some(build) = g["pulls_as"].as_u64() {
            let listed = images_of_build(dir, &build.to_string());
            let ours: BTreeSet<String> = images.union(&left_out).cloned().collect();
            assert_eq!(ours, listed, "group {}", g["name"]);
        } else {
            assert!(images.iter().any(|i| i.contains("/agnhost:")), "{images:?}");
            assert!(images.iter().all(|i| !i.contains("/windows/")), "{images:?}");
        }
        for node in strings(&g["nodes"]) {
            let got: BTreeSet<String> = by_node[&node].keys().cloned().collect();
            assert_eq!(got, images, "node {node}");
        }
    }
}

#[test]
fn every_schedulable_node_gets_every_image_with_its_pull_time_and_a_second_pull_finds_them_present() {
    let serve = Serve::start();
    let observer = Observer::new(&serve.kubeconfig());
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = serve.kubeconfig();

    let (code, report, stderr) = json_prepull(dir.path(), &["--kubeconfig", &kc]);
    assert_eq!(code, Some(0), "{stderr}\n{report:#}");
    assert_eq!(report["outcome"], "pulled");
    let by_node = results(&report);
    let nodes: Vec<&str> = by_node.keys().map(String::as_str).collect();
    assert_eq!(nodes, ["control-plane", "linux-1", "win2019-1", "win2022-1"]);
    let groups: Vec<&str> = report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert_eq!(groups, ["linux-amd64", "windows-17763", "windows-20348"]);
    assert_groups_pull_what_images_lists(dir.path(), &report);
    for (node, images) in &by_node {
        for (image, r) in images {
            assert_eq!(r["result"], "pulled", "{node} {image}: {r}");
            // The kubelet's `in 1.234s`, read back.
            assert!(r["seconds"].as_f64().is_some_and(|s| s > 0.0), "{node} {image}: {r}");
        }
    }
    assert!(
        group(&report, "windows-20348")["slowest"]["node"] == "win2022-1",
        "{:#}",
        report["groups"]
    );
    // Progress: what each node pulled, and in how long.
    assert!(
        stderr.contains("win2022-1: pulled mcr.microsoft.com/windows/nanoserver:ltsc2022 in "),
        "{stderr}"
    );
    // Nothing left behind: the namespace it created goes, and with it the DaemonSets.
    let ns = report["namespace"].as_str().expect("namespace").to_string();
    assert!(
        ns.starts_with("mixcheck-prepull-") && report["namespace_created"] == true,
        "{ns}"
    );
    assert!(stderr.contains(&format!("Deleted namespace {ns}")), "{stderr}");
    observer.eventually("the namespace's deletion", |o| !o.namespace_lives(&ns));
    observer.eventually("the DaemonSets' deletion", |o| o.mixcheck_daemonsets().is_empty());

    // Again: the kubelets find every image on the machine.
    let out = prepull(dir.path(), &["--kubeconfig", &kc, "--quiet"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rows: Vec<&str> = table.lines().skip(1).take_while(|l| !l.is_empty()).collect();
    assert_eq!(
        rows.len(),
        by_node.values().map(BTreeMap::len).sum::<usize>(),
        "{table}"
    );
    assert!(rows.iter().all(|r| r.ends_with("already present")), "{table}");
    assert!(
        table.contains("Every node has every image: 4 nodes, 0 pulled, 12 already present"),
        "{table}"
    );
    assert!(out.stderr.is_empty(), "quiet: {}", String::from_utf8_lossy(&out.stderr));
}

/// The default topology with a Windows Server 2025 node, a second 2022 node and a cordoned
/// Linux node added.
fn edited_default(dir: &Path) -> String {
    let extra = "  - name: win2022-2
    os: windows
    osImage: Windows Server 2022 Datacenter
    kernelVersion: 10.0.20348.2762
    containerRuntime: containerd://1.7.20
    taints: [{key: os, value: windows, effect: NoSchedule}]
  - name: win2025-1
    os: windows
    osImage: Windows Server 2025 Datacenter
    kernelVersion: 10.0.26100.2314
    containerRuntime: containerd://2.0.5
    taints: [{key: os, value: windows, effect: NoSchedule}]
  - name: linux-2
    os: linux
    osImage: Ubuntu 22.04.5 LTS
    kernelVersion: 6.8.0-1017-azure
    containerRuntime: containerd://1.7.22
    unschedulable: true
";
    let path = dir.join("topology.yaml");
    std::fs::write(&path, format!("{}\n{extra}", DEFAULT_TOPOLOGY.trim_end())).expect("write topology");
    path.display().to_string()
}

/// (group → nodes) a topology's pre-pull must have, and the nodes it must skip.
type Expected = (
    &'static [(&'static str, &'static [&'static str])],
    &'static [&'static str],
);

const PROFILE_2022_2025: Expected = (
    &[
        ("linux-amd64", &["control-plane", "linux-1"]),
        ("windows-20348", &["win2022-1"]),
        ("windows-26100", &["win2025-1"]),
    ],
    &[],
);

const EDITED_DEFAULT: Expected = (
    &[
        ("linux-amd64", &["control-plane", "linux-1"]),
        ("windows-17763", &["win2019-1"]),
        ("windows-20348", &["win2022-1", "win2022-2"]),
        ("windows-26100", &["win2025-1"]),
    ],
    &["linux-2"],
);

/// In an existing namespace (`-n`), which stays: one DaemonSet per OS and Windows build created
/// pods there (its events say so), each pinned to its build's nodes; afterwards the DaemonSets
/// and their pods are gone, the namespace is not.
#[rstest]
#[case::profile_2022_2025("profile", PROFILE_2022_2025)]
#[case::edited_default("edited", EDITED_DEFAULT)]
fn each_windows_build_gets_a_daemonset_of_its_own(#[case] topology: &str, #[case] expected: Expected) {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = match topology {
        "profile" => Serve::start_with(&["--profile", "current-ws2022-ws2025"]),
        _ => Serve::start_with(&["--topology", &edited_default(dir.path())]),
    };
    let observer = Observer::new(&serve.kubeconfig());
    observer.create_namespace("pulls");
    let (code, report, stderr) = json_prepull(dir.path(), &["--kubeconfig", &serve.kubeconfig(), "-n", "pulls"]);
    assert_eq!(code, Some(0), "{stderr}\n{report:#}");
    let (groups, skipped) = expected;
    let got: Vec<(String, Vec<String>)> = report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| (g["name"].as_str().expect("name").to_string(), strings(&g["nodes"])))
        .collect();
    let want: Vec<(String, Vec<String>)> = groups
        .iter()
        .map(|(g, ns)| (g.to_string(), ns.iter().map(|n| n.to_string()).collect()))
        .collect();
    assert_eq!(got, want);
    let skipped_nodes: Vec<&str> = report["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .filter_map(|s| s["node"].as_str())
        .collect();
    assert_eq!(skipped_nodes, skipped);
    assert!(
        skipped
            .iter()
            .all(|n| stderr.contains(&format!("{n}: skipped, cordoned"))),
        "{stderr}"
    );
    for (name, _) in groups.iter().filter(|(g, _)| g.starts_with("windows-")) {
        let g = group(&report, name);
        let build = name.trim_start_matches("windows-");
        assert_eq!(
            g["node_selector"]["node.kubernetes.io/windows-build"],
            format!("10.0.{build}"),
            "{g:#}"
        );
    }
    assert_groups_pull_what_images_lists(dir.path(), &report);
    // One DaemonSet per group created the pods, as its events in the namespace say.
    let daemonsets: BTreeSet<String> = report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["daemonset"].as_str().expect("daemonset").to_string())
        .collect();
    assert_eq!(daemonsets.len(), groups.len());
    assert_eq!(observer.daemonsets_by_events("pulls"), daemonsets);
    // Only the pre-pull's objects went.
    assert_eq!(report["namespace"], "pulls");
    assert_eq!(report["namespace_created"], false);
    assert!(observer.namespace_lives("pulls"));
    observer.eventually("the DaemonSets' deletion", |o| o.mixcheck_daemonsets().is_empty());
    observer.eventually("the pods' deletion", |o| o.prepull_pods("pulls").is_empty());
}

/// The default topology where `mirror.example.com` does not resolve on the nodes.
fn unreachable_mirror(dir: &Path) -> String {
    let path = dir.join("mirror.yaml");
    let text = format!(
        "{}\nregistries:\n  mirror.example.com: {{reachable: false}}\n",
        DEFAULT_TOPOLOGY.trim_end()
    );
    std::fs::write(&path, text).expect("write topology");
    path.display().to_string()
}

/// The Windows base images mapped to a mirror the nodes cannot reach: the Linux nodes pull
/// everything; each Windows node fails those images after the kubelet's third attempt, naming
/// the image, the node and the resolver's words — a single failed attempt is reported as
/// retried, not as the end. (The bundled kubelet keeps retrying a pod's failing image before
/// its next one, where a real kubelet starts the other containers meanwhile; so the Windows
/// nodes' later images may still be pulling when the deadline comes: exit 1 either way. The
/// cluster is served on a clock twice the wall clock's pace (`--time-scale 0.5`): the kubelet's
/// back-off is upstream's 10 s, then 20 s, of that clock, so the third attempt comes about 16 s
/// after the pre-pull starts, within a 25 s deadline (on the wall clock: 32 s of 45), and the
/// first retry 5 s after the first attempt, which the pre-pull's 2 s polls see on its own.)
#[test]
fn a_mirror_the_nodes_cannot_reach_fails_its_images_naming_image_node_and_the_registrys_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start_with(&["--topology", &unreachable_mirror(dir.path()), "--time-scale", "0.5"]);
    let observer = Observer::new(&serve.kubeconfig());
    let (code, report, stderr) = json_prepull(
        dir.path(),
        &[
            "--kubeconfig",
            &serve.kubeconfig(),
            "--image-registry-map",
            "mcr.microsoft.com=mirror.example.com/mcr",
            "--timeout",
            "25s",
        ],
    );
    assert_eq!(code, Some(1), "{stderr}\n{report:#}");
    assert!(
        report["outcome"] == "failed" || report["outcome"] == "deadline",
        "{stderr}\n{report:#}"
    );
    let by_node = results(&report);
    for node in ["control-plane", "linux-1"] {
        assert!(
            by_node[node].values().all(|r| r["result"] == "pulled"),
            "{node}: {:#?}",
            by_node[node]
        );
    }
    for node in ["win2019-1", "win2022-1"] {
        let failed: Vec<&Value> = by_node[node].values().filter(|r| r["result"] == "failed").collect();
        assert!(!failed.is_empty(), "{node}: {:#?}", by_node[node]);
        for f in failed {
            let image = f["image"].as_str().expect("image");
            assert!(image.starts_with("mirror.example.com/mcr/"), "{image}");
            assert_eq!(f["cause"], "unreachable", "{f}");
            assert!(f["attempts"].as_u64().is_some_and(|a| a >= 3), "{f}");
            assert!(f["message"].as_str().is_some_and(|m| m.contains("no such host")), "{f}");
            assert!(
                stderr.contains(&format!(
                    "{node}: {image} failed after 3 attempt(s), the registry did not answer: "
                )),
                "{stderr}"
            );
        }
    }
    assert!(
        stderr.contains("failed (attempt 1 of 3; the kubelet retries)"),
        "{stderr}"
    );
    let ns = report["namespace"].as_str().expect("namespace").to_string();
    observer.eventually("the namespace's deletion", |o| !o.namespace_lives(&ns));
}

/// The default topology with first pulls that take minutes (Windows: 20 minutes on the
/// topology's clock, one minute of the wall clock; Linux a tenth).
fn slow_pulls(dir: &Path) -> String {
    let path = dir.join("slow.yaml");
    let text = crate::topology_text::with_timing(DEFAULT_TOPOLOGY, "timing:\n  scale: 0.05\n  windowsPull: 1200s\n");
    std::fs::write(&path, text).expect("write topology");
    path.display().to_string()
}

#[test]
fn the_deadline_reports_the_pulls_under_way_and_deletes_the_daemonsets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start_with(&["--topology", &slow_pulls(dir.path())]);
    let observer = Observer::new(&serve.kubeconfig());
    let started = Instant::now();
    let (code, report, stderr) = json_prepull(dir.path(), &["--kubeconfig", &serve.kubeconfig(), "--timeout", "8s"]);
    assert!(started.elapsed() < Duration::from_secs(40), "the deadline holds");
    assert_eq!(code, Some(1), "{stderr}\n{report:#}");
    assert_eq!(report["outcome"], "deadline");
    let by_node = results(&report);
    // The kubelet pulls one image at a time: the first is under way, the others wait for it.
    let images: Vec<&Value> = by_node["win2022-1"].values().collect();
    assert!(images.iter().all(|i| i["result"] == "not-done"), "{images:#?}");
    let pulling = images
        .iter()
        .filter(|i| i["message"].as_str().is_some_and(|m| m.starts_with("pulling")))
        .count();
    assert_eq!(pulling, 1, "{images:#?}");
    assert!(stderr.contains("win2022-1: pulling "), "{stderr}");
    let ns = report["namespace"].as_str().expect("namespace").to_string();
    assert!(stderr.contains(&format!("Deleted namespace {ns}")), "{stderr}");
    observer.eventually("the namespace's deletion", |o| !o.namespace_lives(&ns));
}

#[cfg(unix)]
#[test]
fn ctrl_c_deletes_the_daemonsets_and_exits_130() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start_with(&["--topology", &slow_pulls(dir.path())]);
    let observer = Observer::new(&serve.kubeconfig());
    let mut child = mixcheck(dir.path())
        .args(["prepull", "--kubeconfig", &serve.kubeconfig()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prepull");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut ns = String::new();
    for line in lines.by_ref() {
        let line = line.expect("line");
        if let Some(rest) = line.strip_prefix("Pulling in namespace ") {
            ns = rest.trim().to_string();
        }
        if line.contains(": pulling mcr.microsoft.com/") {
            break;
        }
    }
    assert!(
        ns.starts_with("mixcheck-prepull-"),
        "the pre-pull announced its namespace"
    );
    assert!(
        !observer.mixcheck_daemonsets().is_empty(),
        "the DaemonSets exist while pulling"
    );
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{rest:#?}");
    assert!(
        rest.iter()
            .any(|l| l == &format!("Deleted namespace {ns} (and its DaemonSets)")),
        "{rest:#?}"
    );
    observer.eventually("the namespace's deletion", |o| !o.namespace_lives(&ns));
    observer.eventually("the DaemonSets' deletion", |o| o.mixcheck_daemonsets().is_empty());
}

#[rstest]
#[case::zero_timeout(&["--timeout", "0"], "--timeout")]
#[case::word_timeout(&["--timeout", "soon"], "--timeout")]
#[case::spaced_registry(&["--image-registry", "my mirror"], "--image-registry")]
#[case::slash_registry(&["--image-registry", "mirror.example.com/"], "--image-registry")]
#[case::bad_namespace(&["--namespace", "Not_A_Name"], "--namespace")]
#[case::output(&["-o", "xml"], "xml")]
#[case::unknown_flag(&["--fast"], "--fast")]
#[case::no_kubeconfig(&["--kubeconfig", "no-such.kubeconfig"], "no-such.kubeconfig")]
fn bad_flags_exit_2_with_one_clear_error(#[case] args: &[&str], #[case] named: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = prepull(dir.path(), args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(named), "{stderr}");
    assert!(out.stdout.is_empty(), "{}", text(&out));
}

#[test]
fn a_namespace_that_does_not_exist_exits_2_and_creates_nothing() {
    let serve = Serve::start();
    let observer = Observer::new(&serve.kubeconfig());
    let dir = tempfile::tempdir().expect("tempdir");
    let out = prepull(dir.path(), &["--kubeconfig", &serve.kubeconfig(), "-n", "nowhere"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--namespace nowhere: no such namespace"));
    assert!(observer.mixcheck_daemonsets().is_empty());
    assert!(!observer.namespace_lives("nowhere"));
}

#[test]
fn an_unreachable_cluster_exits_3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    std::fs::write(
        dir.path().join("kc"),
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"https://127.0.0.1:{port}\", insecure-skip-tls-verify: true}}\nusers:\n- name: u\n  user: {{token: t}}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n"
        ),
    )
    .expect("write");
    let out = prepull(dir.path(), &["--kubeconfig", "kc"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot reach the cluster"));
}

const RBAC: &str = include_str!("../../../deploy/rbac.yaml");

impl Observer {
    /// Applies deploy/rbac.yaml, its ClusterRole less the rules `drop` matches, and writes a
    /// kubeconfig like `admin`'s authenticated as its ServiceAccount (a TokenRequest's token).
    fn service_account(&self, admin: &str, drop: impl Fn(&k8s_openapi::api::rbac::v1::PolicyRule) -> bool, out: &Path) {
        use k8s_openapi::api::authentication::v1::TokenRequest;
        use k8s_openapi::api::core::v1::ServiceAccount;
        use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
        let pp = PostParams::default();
        let c = &self.client;
        self.runtime.block_on(async {
            let docs: Vec<Value> = serde_saphyr::from_multiple(RBAC).expect("deploy/rbac.yaml parses");
            for doc in docs {
                match doc["kind"].as_str() {
                    Some("Namespace") => created(Api::<Namespace>::all(c.clone()).create(&pp, &from(doc)).await),
                    Some("ServiceAccount") => {
                        let api = Api::<ServiceAccount>::namespaced(c.clone(), "mixcheck");
                        created(api.create(&pp, &from(doc)).await);
                    }
                    Some("ClusterRole") => {
                        let mut role: ClusterRole = from(doc);
                        role.rules.get_or_insert_with(Vec::new).retain(|r| !drop(r));
                        created(Api::<ClusterRole>::all(c.clone()).create(&pp, &role).await);
                    }
                    Some("ClusterRoleBinding") => {
                        created(Api::<ClusterRoleBinding>::all(c.clone()).create(&pp, &from(doc)).await);
                    }
                    other => panic!("deploy/rbac.yaml holds an unexpected kind {other:?}"),
                }
            }
            let request: TokenRequest = from(serde_json::json!({"spec": {"audiences": [], "expirationSeconds": 3600}}));
            let minted = Api::<ServiceAccount>::namespaced(c.clone(), "mixcheck")
                .create_token_request("mixcheck", &pp, &request)
                .await
                .expect("TokenRequest");
            let token = minted.status.expect("status").token;
            let kc = kube::config::Kubeconfig::read_from(admin).expect("kubeconfig");
            let mut v = serde_json::to_value(&kc).expect("kubeconfig json");
            for user in v["users"].as_array_mut().into_iter().flatten() {
                user["user"] = serde_json::json!({"token": token});
            }
            std::fs::write(out, serde_json::to_string_pretty(&v).expect("json")).expect("write kubeconfig");
        });
    }
}

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("an object of its kind")
}

fn created<T>(r: Result<T, kube::Error>) {
    r.expect("create");
}

/// deploy/rbac.yaml's ServiceAccount pre-pulls; without the DaemonSet rule it exits 3 naming the
/// refusal, and leaves no namespace behind.
#[rstest]
#[case::whole_role(false)]
#[case::without_the_daemonset_rule(true)]
fn the_least_privilege_role_prepulls(#[case] without_daemonsets: bool) {
    let serve = Serve::start();
    let observer = Observer::new(&serve.kubeconfig());
    let dir = tempfile::tempdir().expect("tempdir");
    let sa = dir.path().join("sa.kubeconfig");
    let drop = |r: &k8s_openapi::api::rbac::v1::PolicyRule| {
        without_daemonsets
            && r.resources.iter().flatten().any(|x| x == "daemonsets")
            && r.verbs.iter().any(|v| v == "create")
    };
    observer.service_account(&serve.kubeconfig(), drop, &sa);
    let sa = sa.display().to_string();
    let out = prepull(dir.path(), &["--kubeconfig", &sa]);
    if without_daemonsets {
        assert_eq!(out.status.code(), Some(3), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("creating DaemonSet") && stderr.contains("(403)"),
            "{stderr}"
        );
    } else {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let out = mixcheck(dir.path())
        .args(["cleanup", "--dry-run", "--kubeconfig", &serve.kubeconfig()])
        .output()
        .expect("cleanup");
    let left = String::from_utf8_lossy(&out.stdout);
    assert!(
        left.lines()
            .all(|l| !l.starts_with("mixcheck-prepull-") || l.contains("Terminating")),
        "{left}"
    );
}
