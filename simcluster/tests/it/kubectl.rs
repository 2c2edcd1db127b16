//! Acceptance test: the real `kubectl` CLI (1.32) driving an in-process bundled cluster — version,
//! nodes, client- and server-side apply, get/label/patch/delete/wait, watch, exec, logs, describe,
//! and the shape of its errors — with pods really run by the simulated kubelets: the seed guides'
//! Windows web server and IIS Deployments on Windows nodes of the right build, a Secret volume on
//! Linux, and Windows build mismatches (HCS start error, pull without a matching platform).

use crate::common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use simcluster::Cluster;
use tempfile::TempDir;

mod attach;
mod debug_cp;
mod imperative;
mod metrics;
mod portforward;
mod windows_apps;

const MISSING: &str =
    "kubectl is not installed or not on PATH: these tests need it (they are #[ignore]d by default; CI installs it)";
/// The longest one kubectl call may take before it is killed.
const TIMEOUT: Duration = Duration::from_secs(60);

/// What one kubectl call produced.
#[derive(Debug)]
struct Run {
    args: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Panics unless kubectl exited 0; returns stdout.
    fn ok(self) -> String {
        assert_eq!(self.code, Some(0), "kubectl {} should succeed: {self:#?}", self.args);
        self.stdout
    }

    /// Panics unless kubectl exited non-zero; returns stderr.
    fn fails(self) -> String {
        assert!(
            matches!(self.code, Some(c) if c != 0),
            "kubectl {} should fail: {self:#?}",
            self.args
        );
        self.stderr
    }
}

/// A kubectl environment for one cluster: its kubeconfig and a discovery cache of its own.
struct Kubectl {
    dir: TempDir,
}

impl Kubectl {
    fn new(cluster: &Cluster) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        cluster
            .write_kubeconfig(&dir.path().join("kubeconfig"))
            .expect("kubeconfig written");
        Self { dir }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("kubectl");
        cmd.args(args)
            .env("KUBECONFIG", self.dir.path().join("kubeconfig"))
            .env("KUBECACHEDIR", self.dir.path().join("cache"));
        cmd
    }

    fn spawn(&self, args: &[&str], stdin: Stdio, stdout: Stdio, stderr: Stdio) -> Child {
        match self.command(args).stdin(stdin).stdout(stdout).stderr(stderr).spawn() {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{MISSING}"),
            Err(e) => panic!("cannot run kubectl {args:?}: {e}"),
        }
    }

    /// Runs kubectl to completion (killing it after [`TIMEOUT`]), feeding it `input` if given.
    fn run_with(&self, args: &[&str], input: Option<&str>) -> Run {
        let stdin = if input.is_some() { Stdio::piped() } else { Stdio::null() };
        let mut child = self.spawn(args, stdin, Stdio::piped(), Stdio::piped());
        if let (Some(input), Some(mut pipe)) = (input, child.stdin.take()) {
            // A kubectl that exits early closes its stdin; what it printed says why.
            let _ = pipe.write_all(input.as_bytes());
        }
        let stdout = drain(child.stdout.take().expect("stdout is piped"));
        let stderr = drain(child.stderr.take().expect("stderr is piped"));
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            match child.try_wait().expect("wait for kubectl") {
                Some(status) => break status,
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                None => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("kubectl {args:?} did not finish within {TIMEOUT:?}");
                }
            }
        };
        Run {
            args: args.join(" "),
            code: status.code(),
            stdout: stdout.join().expect("stdout reader"),
            stderr: stderr.join().expect("stderr reader"),
        }
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, None)
    }

    /// Writes a file into the temp dir and returns its path as a string for kubectl's `-f`.
    fn file(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("write file");
        path.display().to_string()
    }

    /// `kubectl get KIND NAME -n NS -o jsonpath=PATH`.
    fn jsonpath(&self, ns: &str, object: &str, path: &str) -> String {
        self.run(&["get", object, "-n", ns, "-o", &format!("jsonpath={path}")])
            .ok()
    }
}

/// Reads a pipe to the end on a thread of its own.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Parses kubectl's table output: each row as column name → cell, cut at the headers' offsets
/// (cells may contain spaces, like an OS image). Header names are separated by at least two
/// spaces (kubectl pads columns with three), so `NOMINATED NODE` is one column.
fn table(out: &str) -> Vec<HashMap<String, String>> {
    let mut lines = out.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().expect("a table header");
    let mut starts: Vec<usize> = Vec::new();
    let mut spaces = usize::MAX;
    for (i, ch) in header.char_indices() {
        if ch == ' ' {
            spaces = spaces.saturating_add(1);
            continue;
        }
        if spaces >= 2 {
            starts.push(i);
        }
        spaces = 0;
    }
    let columns: Vec<(usize, String)> = starts
        .iter()
        .enumerate()
        .map(|(k, start)| {
            let end = starts.get(k + 1).copied().unwrap_or(header.len());
            (*start, header[*start..end].trim().to_string())
        })
        .collect();
    lines
        .map(|line| {
            columns
                .iter()
                .enumerate()
                .map(|(k, (start, name))| {
                    let end = columns
                        .get(k + 1)
                        .map_or(line.len(), |(next, _)| (*next).min(line.len()));
                    let cell = line.get((*start).min(line.len())..end).unwrap_or_default();
                    (name.clone(), cell.trim().to_string())
                })
                .collect()
        })
        .collect()
}

/// The row whose `column` is `value`.
fn row<'a>(rows: &'a [HashMap<String, String>], column: &str, value: &str) -> &'a HashMap<String, String> {
    rows.iter()
        .find(|r| r.get(column).map(String::as_str) == Some(value))
        .unwrap_or_else(|| panic!("no row with {column}={value} in {rows:#?}"))
}

fn cell<'a>(row: &'a HashMap<String, String>, column: &str) -> &'a str {
    row.get(column)
        .map_or_else(|| panic!("no column {column} in {row:#?}"), String::as_str)
}

/// The multi-document manifest of an app in namespace `ns`.
fn manifest(ns: &str, mode: &str, replicas: u32) -> String {
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata:
  name: {ns}
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: {ns}
type: Opaque
stringData:
  password: s3cret
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: {ns}
data:
  mode: {mode}
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: {ns}
spec:
  selector:
    app: web
  ports:
    - port: 80
      targetPort: 8080
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {ns}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: nginx:1.27
          ports:
            - containerPort: 8080
"#
    )
}

/// The objects of [`manifest`], as kubectl names them.
fn manifest_objects(ns: &str) -> [String; 5] {
    [
        format!("namespace/{ns}"),
        "secret/creds".into(),
        "configmap/settings".into(),
        "service/web".into(),
        "deployment.apps/web".into(),
    ]
}

/// `kubectl run NAME -n NS --image=IMAGE --restart=Never [bound to NODE] [--command -- COMMAND…]`:
/// pod `name` with one container `name`; `node` binds it by `spec.nodeName` (no scheduler).
fn run_pod(k: &Kubectl, ns: &str, name: &str, image: &str, node: Option<&str>, command: &[&str]) {
    let image = format!("--image={image}");
    let overrides = node.map(|n| format!(r#"--overrides={{"apiVersion":"v1","spec":{{"nodeName":"{n}"}}}}"#));
    let mut args = vec!["run", name, "-n", ns, image.as_str(), "--restart=Never"];
    args.extend(overrides.as_deref());
    if !command.is_empty() {
        args.extend(["--command", "--"]);
        args.extend(command);
    }
    let out = k.run(&args).ok();
    assert_eq!(out.trim(), format!("pod/{name} created"));
}

/// Creates pod `name` (busybox running `sleep infinity`) bound to node linux-1 and waits until
/// its kubelet reports it Ready.
fn run_sleeper(k: &Kubectl, ns: &str, name: &str) {
    run_pod(k, ns, name, "busybox:1.36", Some("linux-1"), &["sleep", "infinity"]);
    wait_ready(k, ns, &format!("pod/{name}"));
}

/// `kubectl wait --for=condition=Ready` on `objects` (`pod/x`, or `pod -l app=x`).
fn wait_ready(k: &Kubectl, ns: &str, objects: &str) {
    let mut args = vec!["wait", "--for=condition=Ready", "-n", ns, "--timeout=50s"];
    args.extend(objects.split_whitespace());
    k.run(&args).ok();
}

/// The STATUS column of `kubectl get pod NAME`.
fn pod_status(k: &Kubectl, ns: &str, name: &str) -> String {
    let rows = table(&k.run(&["get", "pod", name, "-n", ns]).ok());
    cell(row(&rows, "NAME", name), "STATUS").to_string()
}

/// Polls `kubectl get pod NAME` until its STATUS is one of `wanted` (for up to 30 s); returns
/// every distinct STATUS seen on the way, in order, the wanted one last.
fn await_status(k: &Kubectl, ns: &str, name: &str, wanted: &[&str]) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen: Vec<String> = Vec::new();
    loop {
        let status = pod_status(k, ns, name);
        if seen.last() != Some(&status) {
            seen.push(status.clone());
        }
        if wanted.contains(&status.as_str()) {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "pod {ns}/{name} never showed {wanted:?}; statuses seen: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The `Events:` section of `kubectl describe`: (type, reason, whole line) per event.
fn described_events(described: &str) -> Vec<(String, String, String)> {
    described
        .lines()
        .skip_while(|l| !l.starts_with("Events:"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let (kind, reason) = (words.next()?, words.next()?);
            matches!(kind, "Normal" | "Warning").then(|| (kind.to_string(), reason.to_string(), l.trim().to_string()))
        })
        .collect()
}

/// The values of every `KEY: value` line of `kubectl describe` (at any indentation).
fn described_fields<'a>(described: &'a str, key: &str) -> Vec<&'a str> {
    let prefix = format!("{key}:");
    described
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(&prefix))
        .map(str::trim)
        .collect()
}

/// The first event with `reason` (panics, showing the whole description, if there is none).
fn event<'a>(events: &'a [(String, String, String)], reason: &str, described: &str) -> &'a str {
    events
        .iter()
        .find(|(_, r, _)| r == reason)
        .map(|(_, _, line)| line.as_str())
        .unwrap_or_else(|| panic!("no {reason} event in\n{described}"))
}

/// Polls `done` every 50 ms for up to 20 s.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn version_nodes_and_describe() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);

    let version = k.run(&["version"]).ok();
    assert!(version.contains("Server Version: v1.32.3"), "{version}");

    let nodes = table(&k.run(&["get", "nodes", "-o", "wide"]).ok());
    let mut names: Vec<&str> = nodes.iter().map(|r| cell(r, "NAME")).collect();
    names.sort_unstable();
    assert_eq!(names, ["control-plane", "linux-1", "win2019-1", "win2022-1"]);
    for node in &nodes {
        assert_eq!(cell(node, "STATUS"), "Ready", "{node:#?}");
        assert_eq!(cell(node, "VERSION"), "v1.32.3", "{node:#?}");
    }
    assert_eq!(cell(row(&nodes, "NAME", "control-plane"), "ROLES"), "control-plane");
    assert_eq!(cell(row(&nodes, "NAME", "linux-1"), "ROLES"), "<none>");
    for (name, image, kernel) in [
        ("win2019-1", "Windows Server 2019 Datacenter", "10.0.17763.6414"),
        ("win2022-1", "Windows Server 2022 Datacenter", "10.0.20348.2762"),
    ] {
        let node = row(&nodes, "NAME", name);
        assert_eq!(cell(node, "OS-IMAGE"), image, "{node:#?}");
        assert_eq!(cell(node, "KERNEL-VERSION"), kernel, "{node:#?}");
        assert_eq!(cell(node, "CONTAINER-RUNTIME"), "containerd://1.7.20", "{node:#?}");
        let ip = cluster
            .node_ips()
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, ip)| ip.to_string());
        assert_eq!(Some(cell(node, "INTERNAL-IP").to_string()), ip, "{node:#?}");
    }

    let described = k.run(&["describe", "node", "win2022-1"]).ok();
    assert!(
        described.contains("node.kubernetes.io/windows-build=10.0.20348"),
        "{described}"
    );
    let taints = described
        .lines()
        .find(|l| l.starts_with("Taints:"))
        .expect("a Taints line");
    assert!(taints.contains("os=windows:NoSchedule"), "{described}");
    let holder = described
        .lines()
        .find(|l| l.trim_start().starts_with("HolderIdentity:"))
        .expect("a Lease holder");
    assert_eq!(
        holder.trim_start().trim_start_matches("HolderIdentity:").trim(),
        "win2022-1",
        "{described}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn apply_get_all_patch_delete_and_wait() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);

    let file = k.file("app.yaml", &manifest("shop", "blue", 2));
    let applied = k.run(&["apply", "-f", &file]).ok();
    let lines: Vec<&str> = applied.lines().collect();
    let expected: Vec<String> = manifest_objects("shop")
        .iter()
        .map(|o| format!("{o} created"))
        .collect();
    assert_eq!(lines, expected, "{applied}");

    // Re-applying changes nothing but the Secret, whose stringData the server turned into data
    // (upstream reports it "configured" too).
    let again = k.run(&["apply", "-f", &file]).ok();
    let lines: Vec<&str> = again.lines().collect();
    assert_eq!(lines.len(), 5, "{again}");
    for (line, object) in lines.iter().zip(manifest_objects("shop")) {
        let verdict = line
            .strip_prefix(&format!("{object} "))
            .unwrap_or_else(|| panic!("{object} in {again}"));
        match object.as_str() {
            "secret/creds" => assert!(matches!(verdict, "unchanged" | "configured"), "{again}"),
            _ => assert_eq!(verdict, "unchanged", "{again}"),
        }
    }
    let password = k.jsonpath("shop", "secret/creds", "{.data.password}");
    assert_eq!(password, "czNjcmV0", "stringData becomes base64 data");
    assert_eq!(k.jsonpath("shop", "secret/creds", "{.stringData}"), "");

    let all = k.run(&["get", "all", "-n", "shop"]).ok();
    let first: Vec<&str> = all.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(first.contains(&"service/web"), "{all}");
    assert!(first.contains(&"deployment.apps/web"), "{all}");

    let replace = r#"[{"op":"replace","path":"/spec/replicas","value":5}]"#;
    let patched = k
        .run(&["patch", "deployment", "web", "-n", "shop", "--type=json", "-p", replace])
        .ok();
    assert_eq!(patched.trim(), "deployment.apps/web patched");
    assert_eq!(k.jsonpath("shop", "deployment/web", "{.spec.replicas}"), "5");
    let failing =
        r#"[{"op":"test","path":"/spec/replicas","value":99},{"op":"replace","path":"/spec/replicas","value":7}]"#;
    let err = k
        .run(&["patch", "deployment", "web", "-n", "shop", "--type=json", "-p", failing])
        .fails();
    // Upstream answers 422 Invalid ("The request is invalid: ..."); kubectl prints no "Error from server".
    assert!(err.contains(" is invalid"), "{err}");
    assert_eq!(
        k.jsonpath("shop", "deployment/web", "{.spec.replicas}"),
        "5",
        "a failed test op changes nothing"
    );

    let deleted = k.run(&["delete", "-f", &file]).ok();
    for object in manifest_objects("shop") {
        let (kind, name) = object.split_once('/').expect("kind/name");
        assert!(
            deleted.contains(&format!("{kind} \"{name}\" deleted")),
            "{object} in {deleted}"
        );
    }
    let waited = k.run(&["wait", "--for=delete", "-f", &file, "--timeout=30s"]);
    assert_eq!(waited.code, Some(0), "{waited:#?}");
    let err = k.run(&["get", "ns", "shop"]).fails();
    assert!(
        err.contains(r#"Error from server (NotFound): namespaces "shop" not found"#),
        "{err}"
    );

    let created = k.run(&["create", "namespace", "scratch"]).ok();
    assert_eq!(created.trim(), "namespace/scratch created");
    assert_eq!(k.jsonpath("", "namespace/scratch", "{.status.phase}"), "Active");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn server_side_apply() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);

    let file = k.file("app.yaml", &manifest("ssa", "blue", 2));
    let applied = k.run(&["apply", "--server-side", "-f", &file]).ok();
    let expected: Vec<String> = manifest_objects("ssa")
        .iter()
        .map(|o| format!("{o} serverside-applied"))
        .collect();
    assert_eq!(applied.lines().collect::<Vec<_>>(), expected, "{applied}");
    assert_eq!(k.jsonpath("ssa", "secret/creds", "{.data.password}"), "czNjcmV0");
    assert_eq!(k.jsonpath("ssa", "configmap/settings", "{.data.mode}"), "blue");

    let file = k.file("app.yaml", &manifest("ssa", "green", 3));
    let applied = k.run(&["apply", "--server-side", "-f", &file]).ok();
    assert_eq!(applied.lines().collect::<Vec<_>>(), expected, "{applied}");
    assert_eq!(k.jsonpath("ssa", "configmap/settings", "{.data.mode}"), "green");
    assert_eq!(k.jsonpath("ssa", "deployment/web", "{.spec.replicas}"), "3");
    assert_eq!(k.jsonpath("ssa", "deployment/web", "{.metadata.generation}"), "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn pods_across_namespaces_and_labels() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    // alpha keeps running; beta runs busybox's default command (`sh`), which exits at once
    // without a terminal: the pod completes.
    common::namespace(&cluster, "team-a");
    common::namespace(&cluster, "team-b");
    run_pod(&k, "team-a", "alpha", "busybox:1.36", None, &["sleep", "infinity"]);
    run_pod(&k, "team-b", "beta", "busybox:1.36", None, &[]);
    wait_ready(&k, "team-a", "pod/alpha");
    k.run(&[
        "wait",
        "--for=jsonpath={.status.phase}=Succeeded",
        "pod/beta",
        "-n",
        "team-b",
        "--timeout=50s",
    ])
    .ok();

    let pods = table(&k.run(&["get", "pods", "-A"]).ok());
    let alpha = row(&pods, "NAME", "alpha");
    let beta = row(&pods, "NAME", "beta");
    assert_eq!(cell(alpha, "NAMESPACE"), "team-a", "{pods:#?}");
    assert_eq!(cell(beta, "NAMESPACE"), "team-b", "{pods:#?}");
    assert_eq!(
        (cell(alpha, "READY"), cell(alpha, "STATUS"), cell(alpha, "RESTARTS")),
        ("1/1", "Running", "0"),
        "{pods:#?}"
    );
    assert_eq!(
        (cell(beta, "READY"), cell(beta, "STATUS"), cell(beta, "RESTARTS")),
        ("0/1", "Completed", "0"),
        "{pods:#?}"
    );
    let wide = table(&k.run(&["get", "pods", "-A", "-o", "wide"]).ok());
    for name in ["alpha", "beta"] {
        // The only schedulable node: the control plane is tainted, Windows nodes too.
        assert_eq!(cell(row(&wide, "NAME", name), "NODE"), "linux-1", "{wide:#?}");
    }
    assert_eq!(
        k.jsonpath(
            "team-b",
            "pod/beta",
            "{.status.containerStatuses[0].state.terminated.reason}"
        ),
        "Completed"
    );
    assert_eq!(
        k.jsonpath(
            "team-b",
            "pod/beta",
            "{.status.containerStatuses[0].state.terminated.exitCode}"
        ),
        "0"
    );

    let out = k.run(&["label", "pod", "alpha", "-n", "team-a", "tier=backend"]).ok();
    assert_eq!(out.trim(), "pod/alpha labeled");
    let shown = table(&k.run(&["get", "pod", "alpha", "-n", "team-a", "-L", "tier"]).ok());
    assert_eq!(cell(row(&shown, "NAME", "alpha"), "TIER"), "backend", "{shown:#?}");

    let err = k
        .run(&["label", "pod", "alpha", "-n", "team-a", "tier=frontend"])
        .fails();
    assert!(err.contains("already has a value"), "{err}");
    let shown = table(&k.run(&["get", "pod", "alpha", "-n", "team-a", "-L", "tier"]).ok());
    assert_eq!(
        cell(row(&shown, "NAME", "alpha"), "TIER"),
        "backend",
        "a refused label changes nothing"
    );

    k.run(&["label", "pod", "alpha", "-n", "team-a", "tier=frontend", "--overwrite"])
        .ok();
    let shown = table(&k.run(&["get", "pods", "-n", "team-a", "--show-labels"]).ok());
    let labels: Vec<&str> = cell(row(&shown, "NAME", "alpha"), "LABELS").split(',').collect();
    assert!(
        labels.contains(&"tier=frontend") && labels.contains(&"run=alpha"),
        "{shown:#?}"
    );
    let selected = k.run(&["get", "pods", "-A", "-l", "tier=frontend", "-o", "name"]).ok();
    assert_eq!(selected.trim(), "pod/alpha");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn wait_for_delete_and_watch() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    common::namespace(&cluster, "w");

    // A running pod: its kubelet stops the container and removes the pod long before the
    // 30 s default grace period is over; `kubectl delete` waits for that.
    run_sleeper(&k, "w", "sleeper");
    let started = Instant::now();
    let out = k.run(&["delete", "pod", "sleeper", "-n", "w"]).ok();
    let took = started.elapsed();
    assert_eq!(out.trim(), r#"pod "sleeper" deleted"#);
    assert!(
        took < Duration::from_secs(15),
        "deleting a running pod took {took:?}: the kubelet should finish it at once"
    );
    let err = k.run(&["get", "pod", "sleeper", "-n", "w"]).fails();
    assert!(err.contains(r#"pods "sleeper" not found"#), "{err}");
    let events = table(
        &k.run(&[
            "get",
            "events",
            "-n",
            "w",
            "--field-selector",
            "involvedObject.name=sleeper",
        ])
        .ok(),
    );
    let killing = row(&events, "REASON", "Killing");
    assert_eq!(cell(killing, "OBJECT"), "pod/sleeper", "{events:#?}");
    assert_eq!(cell(killing, "MESSAGE"), "Stopping container sleeper", "{events:#?}");

    // A pod bound to a node that does not exist has no kubelet to finish it: it stays
    // Terminating until pod garbage collection removes it when its grace period is over, and
    // `wait --for=delete` really waits for that.
    run_pod(
        &k,
        "w",
        "ghost",
        "busybox:1.36",
        Some("ghost-node"),
        &["sleep", "infinity"],
    );
    assert_eq!(pod_status(&k, "w", "ghost"), "Pending");
    let out = k
        .run(&["delete", "pod", "ghost", "-n", "w", "--wait=false", "--grace-period=2"])
        .ok();
    assert_eq!(out.trim(), r#"pod "ghost" deleted"#);
    let started = Instant::now();
    assert_eq!(pod_status(&k, "w", "ghost"), "Terminating");
    let waited = k.run(&["wait", "--for=delete", "pod/ghost", "-n", "w", "--timeout=30s"]);
    let took = started.elapsed();
    assert_eq!(waited.code, Some(0), "{waited:#?}");
    assert!(
        took >= Duration::from_secs(1),
        "wait returned after {took:?}, before the grace period ended"
    );
    assert!(took < Duration::from_secs(20), "wait took {took:?}");
    let err = k.run(&["get", "pod", "ghost", "-n", "w"]).fails();
    assert!(err.contains(r#"pods "ghost" not found"#), "{err}");

    // A watch streams what happens after its initial listing.
    run_sleeper(&k, "w", "first");
    let out_path: PathBuf = k.dir.path().join("watch.out");
    let out_file = std::fs::File::create(&out_path).expect("watch output file");
    let mut watcher = k.spawn(
        &["get", "pods", "-w", "-n", "w", "-L", "seen"],
        Stdio::null(),
        Stdio::from(out_file),
        Stdio::null(),
    );
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let rows_of = |name: &str| -> Vec<String> {
        read(&out_path)
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(name))
            .map(str::to_string)
            .collect()
    };
    eventually("the watch's initial listing", || rows_of("first").len() == 1);
    assert!(read(&out_path).starts_with("NAME"), "{}", read(&out_path));
    assert!(rows_of("first")[0].contains("Running"), "{}", read(&out_path));

    // The new pod shows up, and so does its progress to Running.
    run_sleeper(&k, "w", "second");
    eventually("the watch to show the new pod running", || {
        rows_of("second").iter().any(|l| l.contains("Running"))
    });
    k.run(&["label", "pod", "first", "-n", "w", "seen=yes"]).ok();
    eventually("the watch to show the relabelled pod", || {
        rows_of("first")
            .iter()
            .any(|l| l.split_whitespace().last() == Some("yes"))
    });
    assert_eq!(
        watcher.try_wait().expect("watcher status"),
        None,
        "the watch is still running"
    );
    let _ = watcher.kill();
    let _ = watcher.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn errors_exec_and_logs() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    common::namespace(&cluster, "e");

    let missing = k.run(&["get", "pod", "nope", "-n", "e"]);
    assert_eq!(missing.code, Some(1), "{missing:#?}");
    assert!(
        missing
            .stderr
            .contains(r#"Error from server (NotFound): pods "nope" not found"#),
        "{missing:#?}"
    );

    let err = k.run(&["run", "Bad_Name", "-n", "e", "--image=x"]).fails();
    assert!(
        err.contains(r#"Pod "Bad_Name" is invalid"#) && err.contains("metadata.name"),
        "{err}"
    );
    let bad = k.file(
        "bad.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: noimage\n  namespace: e\nspec:\n  containers:\n    - name: c\n",
    );
    let err = k.run(&["apply", "-f", &bad]).fails();
    assert!(
        err.contains(r#"Pod "noimage" is invalid"#) && err.contains("spec.containers[0].image"),
        "{err}"
    );

    // exec into a running pod.
    run_sleeper(&k, "e", "shell");
    assert_eq!(k.run(&["exec", "shell", "-n", "e", "--", "hostname"]).ok(), "shell\n");
    let exit3 = k.run(&["exec", "shell", "-n", "e", "--", "sh", "-c", "exit 3"]);
    assert_eq!(exit3.code, Some(3), "{exit3:#?}");
    assert!(
        exit3.stderr.contains("command terminated with exit code 3"),
        "{exit3:#?}"
    );
    let echoed = k
        .run_with(&["exec", "-i", "shell", "-n", "e", "--", "cat"], Some("from stdin\n"))
        .ok();
    assert_eq!(echoed, "from stdin\n");

    // Logs: a container that never started has none. A Windows-only image cannot be pulled on
    // linux-1, so the container waits in ErrImagePull / ImagePullBackOff.
    run_pod(
        &k,
        "e",
        "idle",
        "mcr.microsoft.com/windows/servercore:ltsc2022",
        Some("linux-1"),
        &[],
    );
    let seen = await_status(&k, "e", "idle", &["ErrImagePull", "ImagePullBackOff"]);
    let waiting = k.jsonpath("e", "pod/idle", "{.status.containerStatuses[0].state.waiting.message}");
    assert!(
        waiting.contains("no match for platform in manifest"),
        "{waiting} (statuses {seen:?})"
    );
    let err = k.run(&["logs", "idle", "-n", "e"]).fails();
    assert!(
        err.contains(r#"Error from server (BadRequest): container "idle" in pod "idle" is waiting to start: "#)
            && (err.contains("image can't be pulled") || err.contains("trying and failing to pull image")),
        "{err}"
    );
    // Nor can anything be exec'd in it.
    let err = k.run(&["exec", "idle", "-n", "e", "--", "hostname"]).fails();
    assert!(err.contains(r#"container not found ("idle")"#), "{err}");

    // A running container shows what its process wrote.
    run_pod(
        &k,
        "e",
        "chatty",
        "busybox:1.36",
        Some("linux-1"),
        &["sh", "-c", "echo one; echo two; echo three; sleep infinity"],
    );
    wait_ready(&k, "e", "pod/chatty");
    assert_eq!(k.run(&["logs", "chatty", "-n", "e"]).ok(), "one\ntwo\nthree\n");
    assert_eq!(k.run(&["logs", "chatty", "-n", "e", "--tail=1"]).ok(), "three\n");

    // A container that exited keeps its log, and its pod shows how it ended.
    run_pod(
        &k,
        "e",
        "done",
        "busybox:1.36",
        Some("linux-1"),
        &["sh", "-c", "echo finished; exit 4"],
    );
    k.run(&[
        "wait",
        "--for=jsonpath={.status.phase}=Failed",
        "pod/done",
        "-n",
        "e",
        "--timeout=50s",
    ])
    .ok();
    assert_eq!(k.run(&["logs", "done", "-n", "e"]).ok(), "finished\n");
    assert_eq!(pod_status(&k, "e", "done"), "Error");
    let err = k.run(&["exec", "done", "-n", "e", "--", "hostname"]).fails();
    assert!(
        err.contains("cannot exec into a container in a completed pod; current phase is Failed"),
        "{err}"
    );
    assert_eq!(
        k.jsonpath(
            "e",
            "pod/done",
            "{.status.containerStatuses[0].state.terminated.exitCode}"
        ),
        "4"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn scale_a_deployment_and_its_pods_follow() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    k.run(&["apply", "-f", &k.file("app.yaml", &manifest("grow", "blue", 1))])
        .ok();
    let scaled = k.run(&["scale", "deploy", "web", "-n", "grow", "--replicas=3"]).ok();
    assert_eq!(scaled.trim(), "deployment.apps/web scaled");
    assert_eq!(k.jsonpath("grow", "deployment/web", "{.spec.replicas}"), "3");
    eventually("three ready replicas", || {
        k.jsonpath("grow", "deployment/web", "{.status.readyReplicas}") == "3"
    });
    let pods = k
        .run(&["get", "pods", "-n", "grow", "-l", "app=web", "-o", "name"])
        .ok();
    assert_eq!(pods.lines().count(), 3, "{pods}");
    // --current-replicas is a precondition: kubectl reads the Scale, then PUTs it.
    let err = k
        .run(&[
            "scale",
            "deploy",
            "web",
            "-n",
            "grow",
            "--current-replicas=2",
            "--replicas=1",
        ])
        .fails();
    assert!(err.contains("Expected replicas to be 2, was 3"), "{err}");
    k.run(&[
        "scale",
        "deploy",
        "web",
        "-n",
        "grow",
        "--current-replicas=3",
        "--replicas=1",
    ])
    .ok();
    eventually("one pod left", || {
        k.run(&["get", "pods", "-n", "grow", "-l", "app=web", "-o", "name"])
            .ok()
            .lines()
            .count()
            == 1
    });
    let resources = k.run(&["api-resources", "--api-group=apps", "-o", "name"]).ok();
    assert!(resources.lines().any(|l| l == "deployments.apps"), "{resources}");
}

/// The (NAME, READY, STATUS, NODE) rows of `kubectl get pods -n NS -o wide`.
fn wide_pods(k: &Kubectl, ns: &str) -> Vec<(String, String, String, String)> {
    table(&k.run(&["get", "pods", "-n", ns, "-o", "wide"]).ok())
        .iter()
        .map(|r| {
            (
                cell(r, "NAME").to_string(),
                cell(r, "READY").to_string(),
                cell(r, "STATUS").to_string(),
                cell(r, "NODE").to_string(),
            )
        })
        .collect()
}

/// The nodes (sorted) of the pods whose name starts with `prefix` and does not continue with
/// `-windows`.
fn nodes_of(rows: &[(String, String, String, String)], prefix: &str) -> Vec<String> {
    let mut nodes: Vec<String> = rows
        .iter()
        .filter(|(name, ..)| name.starts_with(&format!("{prefix}-")) && !name.starts_with(&format!("{prefix}-windows")))
        .map(|(.., node)| node.clone())
        .collect();
    nodes.sort();
    nodes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn auth_can_i_answers_for_the_admin() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    assert_eq!(k.run(&["auth", "can-i", "create", "pods"]).ok().trim(), "yes");
    assert_eq!(
        k.run(&["auth", "can-i", "delete", "nodes", "--all-namespaces"])
            .ok()
            .trim(),
        "yes"
    );
    assert_eq!(k.run(&["auth", "can-i", "get", "/logs"]).ok().trim(), "yes");
    let list = k.run(&["auth", "can-i", "--list", "-n", "default"]).ok();
    let rows = table(&list);
    let all = row(&rows, "Resources", "*.*");
    assert_eq!(cell(all, "Verbs"), "[*]");
    assert!(
        rows.iter()
            .any(|r| cell(r, "Non-Resource URLs") == "[*]" && cell(r, "Verbs") == "[*]"),
        "{list}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn explain_reads_the_served_schemas() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    let os = k.run(&["explain", "pod.spec.os"]).ok();
    assert!(os.contains("KIND:") && os.contains("Pod"), "{os}");
    assert!(os.contains("FIELD: os <PodOS>"), "{os}");
    assert!(os.contains("name\t<string> -required-"), "{os}");
    let strategy = k.run(&["explain", "deployment.spec.strategy"]).ok();
    assert!(strategy.contains("rollingUpdate"), "{strategy}");
    assert!(strategy.contains("GROUP:      apps"), "{strategy}");
    let backoff = k.run(&["explain", "job.spec.backoffLimit"]).ok();
    assert!(backoff.contains("FIELD: backoffLimit <integer>"), "{backoff}");
    let err = k.run(&["explain", "pod.spec.nodeSelecter"]).fails();
    assert!(err.contains(r#"field "nodeSelecter" does not exist"#), "{err}");

    // Strict validation (kubectl's default) reports an unknown field as the apiserver does.
    let typo = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: typo\nspec:\n  nodeSelecter: {a: b}\n  containers:\n  - name: c\n    image: busybox:1.36\n    imagePullPolicy: IfNotPresent\n    bogus: 1\n";
    let file = k.file("typo.yaml", typo);
    let err = k.run(&["apply", "-f", &file]).fails();
    assert!(
        err.contains(r#"Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.containers[0].bogus", unknown field "spec.nodeSelecter""#),
        "{err}"
    );
    // With --validate=warn the server drops the unknown fields and warns.
    let out = k.run(&["apply", "-f", &file, "--validate=warn"]);
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert!(
        out.stderr.contains(r#"Warning: unknown field "spec.nodeSelecter""#),
        "{out:#?}"
    );
    assert_eq!(k.jsonpath("default", "pod/typo", "{.spec.nodeSelecter}"), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn node_log_directories_through_the_proxy() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    let windows = k.run(&["get", "--raw", "/api/v1/nodes/win2022-1/proxy/logs/"]).ok();
    assert!(windows.contains("<pre>\n"), "{windows}");
    assert!(windows.contains("<a href=\"kubelet/\">kubelet/</a>\n"), "{windows}");
    assert!(
        !windows.contains("kube-proxy/"),
        "HostProcess nodes run kube-proxy as a pod: {windows}"
    );
    let linux = k.run(&["get", "--raw", "/api/v1/nodes/linux-1/proxy/logs/"]).ok();
    for entry in ["containers/", "journal/", "pods/", "syslog"] {
        assert!(
            linux.contains(&format!("<a href=\"{entry}\">{entry}</a>")),
            "{entry} in {linux}"
        );
    }
    let kubelet = k
        .run(&["get", "--raw", "/api/v1/nodes/win2022-1/proxy/logs/kubelet/"])
        .ok();
    assert!(kubelet.contains("<a href=\"kubelet.log\">kubelet.log</a>"), "{kubelet}");
    let err = k
        .run(&["get", "--raw", "/api/v1/nodes/linux-1/proxy/logs/kubelet.log"])
        .fails();
    assert!(err.contains("NotFound") || err.contains("not find"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn a_job_runs_to_completion() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    // apply sends JSON (`kubectl create job` sends protobuf: see imperative.rs).
    let manifest = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: hello\n  namespace: default\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: hello\n        image: busybox:1.36\n        command: [sh, -c, 'echo hi; exit 0']\n";
    let created = k.run(&["apply", "-f", &k.file("job.yaml", manifest)]).ok();
    assert_eq!(created.trim(), "job.batch/hello created");
    let waited = k
        .run(&[
            "wait",
            "--for=condition=complete",
            "job/hello",
            "-n",
            "default",
            "--timeout=50s",
        ])
        .ok();
    assert_eq!(waited.trim(), "job.batch/hello condition met");
    let rows = table(&k.run(&["get", "jobs", "-n", "default"]).ok());
    let job = row(&rows, "NAME", "hello");
    assert_eq!(cell(job, "STATUS"), "Complete");
    assert_eq!(cell(job, "COMPLETIONS"), "1/1");
    assert!(!cell(job, "DURATION").is_empty(), "{job:?}");
    let pods = table(&k.run(&["get", "pods", "-n", "default", "-l", "job-name=hello"]).ok());
    assert_eq!(pods.len(), 1);
    assert_eq!(cell(&pods[0], "STATUS"), "Completed");
    let logs = k.run(&["logs", "job/hello", "-n", "default"]).ok();
    assert_eq!(logs, "hi\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn kube_system_pods_and_a_faulted_nodes_agents() {
    // win2022-1's kube-proxy runs without --hostname-override and its flanneld waits for its network.
    let mut topology = simcluster::Topology::default_cluster().instant().on_wall_clock();
    for node in topology.nodes.iter_mut().filter(|n| n.name == "win2022-1") {
        node.faults = vec!["kube-proxy-no-hostname-override".into(), "flanneld-waiting".into()];
    }
    let cluster = common::start_with(simcluster::ClusterConfig::new(topology)).await;
    let k = Kubectl::new(&cluster);

    let linux = ["control-plane".to_string(), "linux-1".to_string()];
    let windows = ["win2019-1".to_string(), "win2022-1".to_string()];
    let mut rows = Vec::new();
    eventually("the kube-system pods Running", || {
        rows = wide_pods(&k, "kube-system");
        rows.len() == 6
            && rows
                .iter()
                .all(|(_, ready, status, _)| ready == "1/1" && status == "Running")
    });
    assert_eq!(nodes_of(&rows, "coredns"), linux, "{rows:#?}");
    assert_eq!(nodes_of(&rows, "kube-proxy"), linux, "{rows:#?}");
    assert_eq!(nodes_of(&rows, "kube-proxy-windows"), windows, "{rows:#?}");

    // flannel: every node, the faulted node's Windows agent not ready.
    let mut flannel = Vec::new();
    eventually("the flannel pods", || {
        flannel = wide_pods(&k, "kube-flannel");
        flannel.len() == 4
            && flannel
                .iter()
                .all(|(_, ready, _, node)| (ready == "1/1") == (node != "win2022-1"))
    });
    let mut all: Vec<String> = flannel.iter().map(|(.., node)| node.clone()).collect();
    all.sort();
    assert_eq!(all, ["control-plane", "linux-1", "win2019-1", "win2022-1"]);
    let (faulted_flannel, ..) = flannel
        .iter()
        .find(|(.., node)| node == "win2022-1")
        .expect("the faulted node's flannel pod");
    let mut log = String::new();
    eventually("the waiting line in the flannel pod's log", || {
        log = k.run(&["logs", "-n", "kube-flannel", faulted_flannel]).stdout;
        log.contains("Waiting for the Network to be created")
    });
    assert!(log.contains("Found network config - Backend type: host-gw"), "{log}");

    let (faulted_proxy, ..) = rows
        .iter()
        .find(|(name, .., node)| name.starts_with("kube-proxy-windows-") && node == "win2022-1")
        .expect("the faulted node's kube-proxy pod");
    let log = k.run(&["logs", "-n", "kube-system", faulted_proxy]).ok();
    assert!(
        log.contains("\"Failed to retrieve node info\" err=\"nodes \\\"win-"),
        "{log}"
    );
    let (healthy_proxy, ..) = rows
        .iter()
        .find(|(name, .., node)| name.starts_with("kube-proxy-windows-") && node == "win2019-1")
        .expect("the healthy node's kube-proxy pod");
    let log = k.run(&["logs", "-n", "kube-system", healthy_proxy]).ok();
    assert!(!log.contains("Failed to retrieve node info"), "{log}");
    assert!(log.contains("\"Version info\" version=\"v1.32.3\""), "{log}");

    // The objects a harness reads its facts from.
    let image = k.jsonpath(
        "kube-system",
        "daemonset/kube-proxy",
        "{.spec.template.spec.containers[0].image}",
    );
    assert_eq!(image, "registry.k8s.io/kube-proxy:v1.32.3");
    let net_conf = k.jsonpath("kube-flannel", "configmap/kube-flannel-cfg", "{.data.net-conf\\.json}");
    assert!(net_conf.contains("\"Type\": \"host-gw\""), "{net_conf}");
    let config = k.jsonpath("kube-system", "configmap/kube-proxy-windows", "{.data.config\\.conf}");
    assert!(config.contains("enableDSR: false"), "{config}");
}
