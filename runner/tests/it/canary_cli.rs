//! `mixcheck watch` against `mixcheck sim serve` as an operator runs it: an intermittent fault
//! (`--fault NODE:FAULT@P`) measured as a flake ratio on its node only and diagnosed there; the
//! metrics served in both exposition formats; a deleted fixture pod and an API server restart
//! survived with every series kept; a node that leaves taking its series; Ctrl-C leaving nothing
//! behind. The test that needs outside
//! tools scrapes the watch with a real Prometheus server and checks the metrics with promtool and
//! the Prometheus Python client's parsers.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn mixcheck() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mixcheck"))
}

/// A free loopback port (bound, then released for the process that takes it).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A child process stopped with SIGINT (then killed) when dropped.
struct Running(Child);

impl Running {
    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.0.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{name}");
    }

    /// Waits for the process to exit, within `limit`.
    fn exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.0.try_wait().expect("wait") {
                return s;
            }
            assert!(Instant::now() < deadline, "the process did not stop within {limit:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = Command::new("kill").args(["-INT", &self.0.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(20);
            while matches!(self.0.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// `mixcheck sim serve` with `faults`, once it serves (its kubeconfig in `dir`).
fn serve(dir: &Path, faults: &[&str]) -> Running {
    let mut cmd = mixcheck();
    cmd.args(["sim", "serve", "--kubeconfig"]).arg(dir.join("kc"));
    for f in faults {
        cmd.args(["--fault", f]);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn sim serve");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref() {
        if line.expect("line").starts_with("Press Ctrl-C") {
            break;
        }
    }
    // Keep reading what it says (a full pipe would block it).
    std::thread::spawn(move || for _ in lines {});
    Running(child)
}

/// What the watches here settle their first cycle's flows on: the served cluster programs a
/// Service within half a second of the wall clock (the default topology's 10 s on its clock of
/// twenty times the pace), where a real cluster's 30 s default would keep each flow a fault
/// breaks retrying for 30 s before the first cycle ends.
const SETTLE: [&str; 2] = ["--settle", "3s"];

/// `mixcheck watch --kubeconfig` at a half-second interval (a cycle of the default cluster's
/// light checks takes less), metrics on `port`.
fn watch(dir: &Path, port: u16) -> Running {
    let child = mixcheck()
        .args(["watch", "--quiet", "--interval", "500ms"])
        .args(SETTLE)
        .arg("--kubeconfig")
        .arg(dir.join("kc"))
        .args(["--listen", &format!("127.0.0.1:{port}"), "--history"])
        .arg(dir.join("history"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn watch");
    Running(child)
}

/// An HTTP GET on loopback: (status, body).
fn get(port: u16, path: &str, accept: &str) -> Option<(u16, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    // Chunked bodies carry their sizes on lines of their own; the metrics' lines never look so.
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        dechunk(body)
    } else {
        body.to_string()
    };
    Some((status, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

const TEXT: &str = "text/plain;version=0.0.4";
const OPENMETRICS: &str = "application/openmetrics-text;version=1.0.0";

/// The samples of the text format: (name, labels, value).
fn samples(text: &str) -> Vec<(String, BTreeMap<String, String>, f64)> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (series, value) = line.rsplit_once(' ').expect("a value");
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        let mut map = BTreeMap::new();
        // Label values here hold no `",` (cell ids use brackets, arrows and commas only inside).
        for pair in labels.split("\",").filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once("=\"").expect("label");
            map.insert(k.to_string(), v.trim_end_matches('"').to_string());
        }
        out.push((name.to_string(), map, value.parse().expect("a number")));
    }
    out
}

fn value(text: &str, name: &str) -> f64 {
    samples(text)
        .into_iter()
        .find(|(n, _, _)| n == name)
        .map_or(0.0, |(_, _, v)| v)
}

/// Scrapes until `done` holds for the text format, within `limit`.
fn scrape_until(port: u16, limit: Duration, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + limit;
    loop {
        if let Some((200, body)) = get(port, "/metrics", TEXT)
            && done(&body)
        {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "the watch's metrics did not get there within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn touches(labels: &BTreeMap<String, String>, node: &str) -> bool {
    ["from_node", "to_node"]
        .iter()
        .filter_map(|k| labels.get(*k))
        .any(|v| v.split(',').any(|n| n == node))
}

/// The intermittent fault on its node: the lookups from win2022-1 fail a share of cycles
/// around P = 0.3, every cell not touching win2022-1 has a flake ratio of 0, and the diagnosis
/// over the window names dns-unreachable on win2022-1.
fn assert_measured(text: &str) {
    let all = samples(text);
    let ratios: Vec<_> = all
        .iter()
        .filter(|(n, _, _)| n == "mixcheck_cell_flake_ratio")
        .collect();
    assert!(!ratios.is_empty(), "{text}");
    let dns: Vec<f64> = ratios
        .iter()
        .filter(|(_, l, _)| l["from_node"] == "win2022-1" && l["check"] == "service-fqdn")
        .map(|(_, _, v)| *v)
        .collect();
    assert!(!dns.is_empty(), "no DNS cell from win2022-1:\n{text}");
    // Whether the fault holds is drawn per attempt, so over the 25 or so cycles read here the
    // failing ones are Binomial(25, 0.3): 3 or more (0.1) in 99.1 % of watches — a clean clone
    // saw 2 of 25 (2026-12-07) — at least 1 (0.04) in 99.99 %, at most 15 (0.6) in 99.95 %.
    // The band is the wider: this cell fails some cycles and not most, where every cell not
    // touching the node fails none.
    for r in &dns {
        assert!(
            (0.04..=0.6).contains(r),
            "flake ratio {r} of the DNS cell from win2022-1"
        );
    }
    for (_, l, v) in &ratios {
        if !touches(l, "win2022-1") {
            assert_eq!(*v, 0.0, "a cell not touching win2022-1 is flaky: {l:?}");
        }
    }
    let causes: Vec<_> = all.iter().filter(|(n, _, _)| n == "mixcheck_cause_active").collect();
    assert!(
        causes
            .iter()
            .any(|(_, l, v)| l["cause"] == "dns-unreachable" && l["node"] == "win2022-1" && *v >= 0.5),
        "{causes:?}"
    );
    let flaky = all
        .iter()
        .find(|(n, l, _)| n == "mixcheck_cell_verdict" && l["from_node"] == "win2022-1" && l["check"] == "service-fqdn")
        .map(|(_, l, _)| l["verdict"].clone());
    assert_eq!(flaky.as_deref(), Some("flaky"));
}

/// Runs `call` with an API client of the cluster `kubeconfig` names, on a runtime of its own.
fn with_client<T, F: std::future::Future<Output = T>>(kubeconfig: &Path, call: impl FnOnce(kube::Client) -> F) -> T {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig"),
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .expect("config");
        call(kube::Client::try_from(config).expect("client")).await
    })
}

/// The fixture pods and namespaces of the watch that are not being deleted (a namespace
/// deleted goes with everything in it, as after a run), read through the API.
fn run_objects(kubeconfig: &Path) -> (Vec<String>, Vec<String>) {
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use kube::api::{Api, ListParams};
    with_client(kubeconfig, |client| async move {
        let managed = ListParams::default().labels("app.kubernetes.io/managed-by=mixcheck");
        let ns: Api<Namespace> = Api::all(client.clone());
        let namespaces: Vec<String> = ns
            .list(&managed)
            .await
            .expect("namespaces")
            .items
            .into_iter()
            .filter(|n| n.metadata.deletion_timestamp.is_none())
            .filter_map(|n| n.metadata.name)
            .collect();
        let pods: Api<Pod> = Api::all(client);
        let pods: Vec<String> = pods
            .list(&managed)
            .await
            .expect("pods")
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| Some(format!("{}/{}", p.metadata.namespace?, p.metadata.name?)))
            .filter(|p| namespaces.iter().any(|n| p.starts_with(&format!("{n}/"))))
            .collect();
        (namespaces, pods)
    })
}

/// Deletes a node object, as a node pool scaled in does.
fn delete_node(kubeconfig: &Path, node: &str) {
    use k8s_openapi::api::core::v1::Node;
    use kube::api::{Api, DeleteParams};
    with_client(kubeconfig, |client| async move {
        let nodes: Api<Node> = Api::all(client);
        nodes.delete(node, &DeleteParams::default()).await.expect("delete node");
    });
}

/// Deletes the first server fixture pod of the watch.
fn delete_a_fixture(kubeconfig: &Path) -> String {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, DeleteParams};
    let (_, pods) = run_objects(kubeconfig);
    let victim = pods
        .iter()
        .find(|p| p.split('/').nth(1).is_some_and(|n| n.starts_with("srv-")))
        .cloned()
        .unwrap_or_else(|| panic!("no server fixture among {pods:?}"));
    let (ns, name) = victim.split_once('/').expect("ns/name");
    with_client(kubeconfig, |client| async move {
        let pods: Api<Pod> = Api::namespaced(client, ns);
        pods.delete(name, &DeleteParams::default()).await.expect("delete");
    });
    victim
}

#[cfg(unix)]
#[test]
fn watch_measures_an_intermittent_fault_heals_and_leaves_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kc");
    let sim = serve(dir.path(), &["win2022-1:dns-unreachable@0.3"]);
    let port = free_port();
    let mut w = watch(dir.path(), port);
    let text = scrape_until(port, Duration::from_secs(240), |t| {
        value(t, "mixcheck_cycles_total") >= 25.0
    });
    assert_measured(&text);
    assert_eq!(get(port, "/healthz", "*/*").map(|r| r.0), Some(200));
    assert_eq!(get(port, "/readyz", "*/*").map(|r| r.0), Some(200));
    let (_, om) = get(port, "/metrics", OPENMETRICS).expect("OpenMetrics");
    assert!(
        om.contains("# TYPE mixcheck_cycles counter") && om.ends_with("# EOF\n"),
        "{om}"
    );
    let series = |t: &str| {
        let mut s: Vec<String> = samples(t)
            .into_iter()
            .filter(|(n, _, _)| n == "mixcheck_cell_flake_ratio")
            .map(|(_, l, _)| l["cell"].clone())
            .collect();
        s.sort();
        s
    };
    let before = series(&text);
    let cycles = value(&text, "mixcheck_cycles_total");

    // A fixture pod deleted and the API server restarted (down 2 s) mid-watch.
    delete_a_fixture(&kubeconfig);
    sim.signal("USR1");
    let healed = Instant::now();
    let after = scrape_until(port, Duration::from_secs(120), |t| {
        value(t, "mixcheck_fixtures_healed_total") >= 1.0 && value(t, "mixcheck_cycles_total") >= cycles + 8.0
    });
    eprintln!("healed and 8 more cycles after {:?}", healed.elapsed());
    let kept = series(&after);
    let lost: Vec<&String> = before.iter().filter(|c| !kept.contains(c)).collect();
    assert!(lost.is_empty(), "every cell's series is kept; lost: {lost:?}");
    assert_eq!(get(port, "/readyz", "*/*").map(|r| r.0), Some(200));

    // A node leaves: its series go, the other nodes' stay, and the cycles go on.
    delete_node(&kubeconfig, "win2019-1");
    let cycles = value(&after, "mixcheck_cycles_total");
    let left = scrape_until(port, Duration::from_secs(120), |t| {
        value(t, "mixcheck_cycles_total") >= cycles + 3.0 && !t.contains("\"win2019-1\"")
    });
    assert!(left.contains("node=\"win2022-1\""), "{left}");

    // Ctrl-C: the watch deletes its namespace and pods, and exits 0.
    w.signal("INT");
    let status = w.exit(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0));
    let (namespaces, pods) = run_objects(&kubeconfig);
    assert!(
        namespaces.is_empty() && pods.is_empty(),
        "left behind: {namespaces:?} {pods:?}"
    );

    // The history it wrote reads back.
    let out = mixcheck()
        .args(["history", "--from"])
        .arg(dir.path().join("history"))
        .output()
        .expect("history");
    assert!(out.status.success(), "{out:?}");
    let summary = String::from_utf8_lossy(&out.stdout);
    let dns = summary
        .lines()
        .find(|l| l.starts_with("dns/service-fqdn") && l.contains("win2022-1"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(!dns.contains(" 0.00 "), "{dns}");
    assert!(summary.contains("Verdict changes:"), "{summary}");
    drop(w);
    drop(sim);
}

/// Prometheus itself (Debian's `prometheus`, on loopback) scrapes the watch; a PromQL query over
/// the flake ratios returns the faulted node alone. The scraped text passes `promtool check
/// metrics`, and both formats parse with the Prometheus Python client's parsers.
#[cfg(unix)]
#[test]
#[ignore = "needs prometheus, promtool and Python's prometheus_client"]
fn a_prometheus_server_scrapes_the_watch_and_finds_the_flaky_node() {
    for tool in ["prometheus", "promtool"] {
        let found = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "{tool} is not installed (Debian's prometheus package); .ci/run installs it"
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = serve(dir.path(), &["win2022-1:dns-unreachable@0.3"]);
    let port = free_port();
    let w = watch(dir.path(), port);
    let text = scrape_until(port, Duration::from_secs(240), |t| {
        value(t, "mixcheck_cycles_total") >= 20.0
    });
    assert_measured(&text);

    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    check
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let out = check.wait_with_output().expect("promtool");
    assert!(out.status.success(), "promtool check metrics: {out:?}");
    let (_, om) = get(port, "/metrics", OPENMETRICS).expect("OpenMetrics");
    for (module, body) in [
        ("prometheus_client.parser", &text),
        ("prometheus_client.openmetrics.parser", &om),
    ] {
        let file = dir.path().join("scraped");
        std::fs::write(&file, body).expect("write");
        let script = format!(
            "import sys\nfrom {module} import text_string_to_metric_families as parse\nfams = list(parse(open(sys.argv[1]).read()))\nassert any(f.name == 'mixcheck_cell_flake_ratio' for f in fams), [f.name for f in fams]\nprint(len(fams))\n"
        );
        let out = Command::new("python3")
            .args(["-c", &script])
            .arg(&file)
            .output()
            .expect("python3");
        assert!(
            out.status.success(),
            "{module}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let prom_port = free_port();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nscrape_configs:\n  - job_name: mixcheck-watch\n    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
        ),
    )
    .expect("config");
    let prometheus = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("tsdb").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus");
    let _prometheus = Running(prometheus);
    // The nodes whose cells have a flake ratio above 0.05, by PromQL.
    let query = "/api/v1/query?query=max%20by%20(from_node)%20(mixcheck_cell_flake_ratio)%20%3E%200.05";
    let deadline = Instant::now() + Duration::from_secs(90);
    let nodes = loop {
        if let Some((200, body)) = get(prom_port, query, "application/json") {
            let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
            let result = v["data"]["result"].as_array().cloned().unwrap_or_default();
            if !result.is_empty() {
                break result
                    .iter()
                    .filter_map(|r| r["metric"]["from_node"].as_str().map(String::from))
                    .collect::<Vec<_>>();
            }
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus found no flaky series within 90 s"
        );
        std::thread::sleep(Duration::from_secs(1));
    };
    assert_eq!(nodes, ["win2022-1"]);
    drop(w);
    drop(sim);
}

/// The condition `--mark-nodes` sets on a node, as (status, message).
fn condition(kubeconfig: &Path, node: &str) -> Option<(String, String)> {
    use k8s_openapi::api::core::v1::Node;
    use kube::api::Api;
    with_client(kubeconfig, |client| async move {
        let nodes: Api<Node> = Api::all(client);
        let n = nodes.get(node).await.expect("node");
        n.status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "MixcheckDataplane")
            .map(|c| (c.status, c.message.unwrap_or_default()))
    })
}

/// `--mark-nodes`: a node whose light checks keep failing (its cluster DNS unreachable) gets
/// `MixcheckDataplane=False` naming the likely cause, and keeps it while the kubelet reports its
/// own conditions; a node whose checks work gets none.
#[cfg(unix)]
#[test]
fn mark_nodes_sets_a_condition_on_the_failing_node_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kc");
    let sim = serve(dir.path(), &["win2019-1:dns-unreachable"]);
    let port = free_port();
    let mut w = Running(
        mixcheck()
            .args([
                "watch",
                "--quiet",
                "--interval",
                "1s",
                "--mark-nodes",
                "--mark-after",
                "2",
            ])
            .args(SETTLE)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn watch"),
    );
    scrape_until(port, Duration::from_secs(240), |t| {
        value(t, "mixcheck_cycles_total") >= 4.0
    });
    let (status, message) = condition(&kubeconfig, "win2019-1").expect("win2019-1 is marked");
    assert_eq!(status, "False", "{message}");
    assert!(
        message.contains("failed") && message.contains("dns-unreachable"),
        "{message}"
    );
    // Still there after more cycles (the kubelet's status updates keep it).
    let cycles = value(
        &scrape_until(port, Duration::from_secs(10), |_| true),
        "mixcheck_cycles_total",
    );
    scrape_until(port, Duration::from_secs(60), |t| {
        value(t, "mixcheck_cycles_total") >= cycles + 3.0
    });
    assert_eq!(
        condition(&kubeconfig, "win2019-1").map(|c| c.0).as_deref(),
        Some("False")
    );
    for healthy in ["linux-1", "win2022-1"] {
        assert_eq!(condition(&kubeconfig, healthy), None, "{healthy} is not marked");
    }
    w.signal("INT");
    assert_eq!(w.exit(Duration::from_secs(60)).code(), Some(0));
    drop(sim);
}
