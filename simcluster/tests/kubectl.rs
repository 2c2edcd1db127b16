//! Acceptance test: the real `kubectl` CLI (1.32) driving an in-process bundled cluster — version,
//! nodes, client- and server-side apply, get/label/patch/delete/wait, watch, exec, logs, describe,
//! and the shape of its errors.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use simcluster::{Cluster, registry, store};
use tempfile::TempDir;

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
/// (cells may contain spaces, like an OS image).
fn table(out: &str) -> Vec<HashMap<String, String>> {
    let mut lines = out.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().expect("a table header");
    let mut starts: Vec<(usize, &str)> = Vec::new();
    let mut offset = 0;
    for name in header.split_whitespace() {
        let start = offset + header[offset..].find(name).expect("header word");
        starts.push((start, name));
        offset = start + name.len();
    }
    lines
        .map(|line| {
            starts
                .iter()
                .enumerate()
                .map(|(k, (start, name))| {
                    let end = starts
                        .get(k + 1)
                        .map_or(line.len(), |(next, _)| (*next).min(line.len()));
                    let cell = line.get((*start).min(line.len())..end).unwrap_or_default();
                    (name.to_string(), cell.trim().to_string())
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

/// Creates pod `name` (container `name`, busybox) bound to node linux-1.
fn run_bound_pod(k: &Kubectl, ns: &str, name: &str) {
    let out = k
        .run(&[
            "run",
            name,
            "-n",
            ns,
            "--image=busybox:1.36",
            "--restart=Never",
            r#"--overrides={"apiVersion":"v1","spec":{"nodeName":"linux-1"}}"#,
        ])
        .ok();
    assert_eq!(out.trim(), format!("pod/{name} created"));
}

/// The status a kubelet reports for a running single-container pod.
fn running_status(container: &str) -> Value {
    json!({
        "phase": "Running",
        "containerStatuses": [{
            "name": container, "ready": true, "restartCount": 0, "image": "busybox:1.36", "imageID": "",
            "started": true, "state": {"running": {"startedAt": "2026-11-21T00:00:00Z"}},
        }],
    })
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
    for (ns, pod) in [("team-a", "alpha"), ("team-b", "beta")] {
        common::namespace(&cluster, ns);
        let out = k
            .run(&["run", pod, "-n", ns, "--image=busybox:1.36", "--restart=Never"])
            .ok();
        assert_eq!(out.trim(), format!("pod/{pod} created"));
    }

    let pods = table(&k.run(&["get", "pods", "-A"]).ok());
    assert_eq!(cell(row(&pods, "NAME", "alpha"), "NAMESPACE"), "team-a", "{pods:#?}");
    assert_eq!(cell(row(&pods, "NAME", "beta"), "NAMESPACE"), "team-b", "{pods:#?}");
    assert_eq!(cell(row(&pods, "NAME", "alpha"), "STATUS"), "Pending", "{pods:#?}");

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

    // A pod bound to a node stays (terminating) for its grace period; wait really waits for it.
    run_bound_pod(&k, "w", "sleeper");
    let out = k
        .run(&[
            "delete",
            "pod",
            "sleeper",
            "-n",
            "w",
            "--wait=false",
            "--grace-period=2",
        ])
        .ok();
    assert_eq!(out.trim(), r#"pod "sleeper" deleted"#);
    let started = Instant::now();
    let waited = k.run(&["wait", "--for=delete", "pod/sleeper", "-n", "w", "--timeout=30s"]);
    let took = started.elapsed();
    assert_eq!(waited.code, Some(0), "{waited:#?}");
    assert!(
        took >= Duration::from_secs(1),
        "wait returned after {took:?}, before the grace period ended"
    );
    assert!(took < Duration::from_secs(20), "wait took {took:?}");
    let err = k.run(&["get", "pod", "sleeper", "-n", "w"]).fails();
    assert!(err.contains(r#"pods "sleeper" not found"#), "{err}");

    // A watch streams what happens after its initial listing.
    run_bound_pod(&k, "w", "first");
    let out_path: PathBuf = k.dir.path().join("watch.out");
    let out_file = std::fs::File::create(&out_path).expect("watch output file");
    let mut watcher = k.spawn(
        &["get", "pods", "-w", "-n", "w"],
        Stdio::null(),
        Stdio::from(out_file),
        Stdio::null(),
    );
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let rows = |name: &str| {
        read(&out_path)
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(name))
            .count()
    };
    eventually("the watch's initial listing", || rows("first") == 1);
    assert!(read(&out_path).starts_with("NAME"), "{}", read(&out_path));

    run_bound_pod(&k, "w", "second");
    eventually("the watch to show the new pod", || rows("second") >= 1);
    k.run(&["label", "pod", "first", "-n", "w", "seen=yes"]).ok();
    eventually("the watch to show the relabelled pod", || rows("first") >= 2);
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

    // exec into a pod whose status says it runs (written through the status subresource).
    run_bound_pod(&k, "e", "shell");
    let status = json!({"status": running_status("shell")}).to_string();
    k.run(&[
        "patch",
        "pod",
        "shell",
        "-n",
        "e",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status,
    ])
    .ok();
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

    // Logs: a container that never started has none; a running one shows what it wrote.
    run_bound_pod(&k, "e", "idle");
    let err = k.run(&["logs", "idle", "-n", "e"]).fails();
    assert!(err.contains("is waiting to start"), "{err}");

    run_bound_pod(&k, "e", "chatty");
    cluster
        .store()
        .modify(registry::core("pods"), "e", "chatty", store::Part::Status, |pod| {
            pod["status"] = running_status("chatty");
            Ok(())
        })
        .expect("pod marked running");
    for line in ["one", "two", "three"] {
        cluster.logs().append("e", "chatty", "chatty", line);
    }
    assert_eq!(k.run(&["logs", "chatty", "-n", "e"]).ok(), "one\ntwo\nthree\n");
    assert_eq!(k.run(&["logs", "chatty", "-n", "e", "--tail=1"]).ok(), "three\n");
}
