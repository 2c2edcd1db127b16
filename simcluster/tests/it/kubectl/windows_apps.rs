//! The seed guides' Windows apps on simulated nodes of the right build — the sample Windows web
//! server and an IIS Deployment — and what kubectl shows of pods a node cannot run: a Secret
//! volume on Linux beside Windows build mismatches (HCS start error, a pull without a matching
//! platform).

use super::*;

/// The seed guide's sample Windows web server: a Service and a Deployment of Windows Server Core
/// (2019) running a PowerShell HttpListener loop, placed on Windows Server 2019 nodes by
/// nodeSelector (OS and build) with the toleration for the Windows nodes' taint. The script
/// announces itself first, so its log has a line (the guide prints it after `Start()`).
const WIN_WEBSERVER: &str = include_str!("../../../../testdata/win-webserver.yaml");

/// The seed guide's IIS Deployment (three replicas of the IIS image), on the Windows Server 2022
/// image and nodes of today instead of `microsoft/iis` with the long-gone Hyper-V annotation.
const IIS: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: iis
spec:
  selector:
    matchLabels:
      app: iis
  replicas: 3
  template:
    metadata:
      labels:
        app: iis
    spec:
      containers:
        - name: iis
          image: mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022
          ports:
            - containerPort: 80
      nodeSelector:
        kubernetes.io/os: windows
        node.kubernetes.io/windows-build: "10.0.20348"
      tolerations:
        - key: os
          operator: Equal
          value: windows
          effect: NoSchedule
"#;

/// A Linux pod with a Secret volume, and two Windows Server Core pods the Windows Server 2022
/// node cannot run: a single-manifest 2019 image (pulled as is; HCS refuses to start it) and the
/// `ltsc2019` manifest list (no entry for the node's build: the pull fails).
const LINUX_AND_MISMATCHED: &str = r#"apiVersion: v1
kind: Secret
metadata:
  name: creds
type: Opaque
stringData:
  password: s3cret
---
apiVersion: v1
kind: Pod
metadata:
  name: linux-shell
spec:
  nodeSelector:
    kubernetes.io/os: linux
  containers:
    - name: shell
      image: busybox:1.36
      command: ["sleep", "infinity"]
      volumeMounts:
        - name: creds
          mountPath: /etc/creds
          readOnly: true
  volumes:
    - name: creds
      secret:
        secretName: creds
---
apiVersion: v1
kind: Pod
metadata:
  name: build-mismatch
spec:
  nodeSelector:
    kubernetes.io/os: windows
    node.kubernetes.io/windows-build: "10.0.20348"
  tolerations:
    - key: os
      operator: Equal
      value: windows
      effect: NoSchedule
  containers:
    - name: servercore
      image: mcr.microsoft.com/windows/servercore:10.0.17763.6414
      command: ["ping", "-t", "localhost"]
---
apiVersion: v1
kind: Pod
metadata:
  name: pull-mismatch
spec:
  nodeSelector:
    kubernetes.io/os: windows
    node.kubernetes.io/windows-build: "10.0.20348"
  tolerations:
    - key: os
      operator: Equal
      value: windows
      effect: NoSchedule
  containers:
    - name: servercore
      image: mcr.microsoft.com/windows/servercore:ltsc2019
      command: ["ping", "-t", "localhost"]
"#;

/// Node name → its `node.kubernetes.io/windows-build` label (empty on Linux nodes).
fn node_builds(k: &Kubectl) -> HashMap<String, String> {
    let nodes = table(&k.run(&["get", "nodes", "-L", "node.kubernetes.io/windows-build"]).ok());
    nodes
        .iter()
        .map(|n| (cell(n, "NAME").to_string(), cell(n, "WINDOWS-BUILD").to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn seed_guides_windows_apps_run_on_simulated_nodes() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    let web = k.file("win-webserver.yaml", WIN_WEBSERVER);
    let iis = k.file("iis.yaml", IIS);
    let applied = k.run(&["apply", "-f", &web, "-f", &iis]).ok();
    assert_eq!(
        applied.lines().collect::<Vec<_>>(),
        [
            "service/win-webserver created",
            "deployment.apps/win-webserver created",
            "deployment.apps/iis created"
        ],
        "{applied}"
    );
    k.run(&[
        "wait",
        "--for=condition=Available",
        "deployment/win-webserver",
        "deployment/iis",
        "--timeout=50s",
    ])
    .ok();
    wait_ready(&k, "default", "pod -l app=win-webserver");
    wait_ready(&k, "default", "pod -l app=iis");
    let deployments = table(&k.run(&["get", "deployments"]).ok());
    assert_eq!(
        cell(row(&deployments, "NAME", "win-webserver"), "READY"),
        "2/2",
        "{deployments:#?}"
    );
    assert_eq!(
        cell(row(&deployments, "NAME", "iis"), "READY"),
        "3/3",
        "{deployments:#?}"
    );
    let services = table(&k.run(&["get", "services"]).ok());
    assert_eq!(
        cell(row(&services, "NAME", "win-webserver"), "TYPE"),
        "NodePort",
        "{services:#?}"
    );

    // Every pod runs on a Windows node of the build its nodeSelector asks for.
    let builds = node_builds(&k);
    let mut pods_of: HashMap<&str, Vec<(String, String)>> = HashMap::new();
    for (app, build, replicas) in [("win-webserver", "10.0.17763", 2), ("iis", "10.0.20348", 3)] {
        let wide = table(&k.run(&["get", "pods", "-l", &format!("app={app}"), "-o", "wide"]).ok());
        assert_eq!(wide.len(), replicas, "{wide:#?}");
        for pod in &wide {
            let node = cell(pod, "NODE");
            assert_eq!(
                builds.get(node).map(String::as_str),
                Some(build),
                "{pod:#?} on {builds:?}"
            );
            assert!(cell(pod, "NAME").starts_with(&format!("{app}-")), "{pod:#?}");
            assert_eq!(cell(pod, "READY"), "1/1", "{pod:#?}");
            assert_eq!(cell(pod, "STATUS"), "Running", "{pod:#?}");
            assert_eq!(cell(pod, "RESTARTS"), "0", "{pod:#?}");
            assert!(cell(pod, "IP").parse::<std::net::Ipv4Addr>().is_ok(), "{pod:#?}");
            assert_eq!(cell(pod, "NOMINATED NODE"), "<none>", "{pod:#?}");
            pods_of
                .entry(app)
                .or_default()
                .push((cell(pod, "NAME").to_string(), node.to_string()));
        }
    }
    let web_pods = &pods_of["win-webserver"];
    let iis_pods = &pods_of["iis"];

    // describe: the scheduler's and the kubelet's events, in the order they happened (checked
    // last, after everything else). The first pod on a node pulls the image; the others find
    // it already present.
    let mut out_of_order: Vec<String> = Vec::new();
    for (app, image, container) in [
        (
            "win-webserver",
            "mcr.microsoft.com/windows/servercore:ltsc2019",
            "windowswebserver",
        ),
        (
            "iis",
            "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022",
            "iis",
        ),
    ] {
        let mut pulled_by = 0;
        for (pod, node) in &pods_of[app] {
            let described = k.run(&["describe", "pod", pod]).ok();
            let node_field = described_fields(&described, "Node");
            assert!(
                node_field.len() == 1 && node_field[0].starts_with(&format!("{node}/")),
                "{described}"
            );
            assert_eq!(described_fields(&described, "Image"), [image], "{described}");
            let events = described_events(&described);
            let scheduled = event(&events, "Scheduled", &described);
            assert!(
                scheduled.contains(&format!("Successfully assigned default/{pod} to {node}")),
                "{described}"
            );
            let pulled = event(&events, "Pulled", &described);
            assert!(
                pulled.contains(&format!("Container image \"{image}\" already present on machine"))
                    || pulled.contains(&format!("Successfully pulled image \"{image}\"")),
                "{described}"
            );
            if events.iter().any(|(_, r, _)| r == "Pulling") {
                pulled_by += 1;
                assert!(
                    event(&events, "Pulling", &described).contains(&format!("Pulling image \"{image}\"")),
                    "{described}"
                );
                assert!(pulled.contains("Successfully pulled image"), "{described}");
            }
            assert!(
                event(&events, "Created", &described).contains(&format!("Created container: {container}")),
                "{described}"
            );
            assert!(
                event(&events, "Started", &described).contains(&format!("Started container {container}")),
                "{described}"
            );
            let order: Vec<&str> = events
                .iter()
                .map(|(_, r, _)| r.as_str())
                .filter(|r| ["Scheduled", "Pulling", "Pulled", "Created", "Started"].contains(r))
                .collect();
            let expected: Vec<&str> = ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
                .into_iter()
                .filter(|r| order.contains(r))
                .collect();
            if order != expected {
                out_of_order.push(format!(
                    "{pod}: events listed as {order:?}, not {expected:?}:\n{described}"
                ));
            }
            assert!(events.iter().all(|(kind, _, _)| kind == "Normal"), "{described}");
        }
        assert!(pulled_by >= 1, "no {app} pod pulled {image}");
    }

    // logs: the web server's announcement; IIS's ServiceMonitor writes nothing to stdout.
    for (pod, _) in web_pods {
        assert_eq!(k.run(&["logs", pod]).ok(), "Listening at http://*:80/\n", "{pod}");
    }
    let (iis_pod, _) = &iis_pods[0];
    let iis_logs = k.run(&["logs", iis_pod]);
    assert_eq!(iis_logs.code, Some(0), "{iis_logs:#?}");

    // exec: `cmd /c ver` reports the build of the node the container shares its kernel with.
    for (pods, build) in [(web_pods, "10.0.17763"), (iis_pods, "10.0.20348")] {
        for (pod, node) in pods {
            let ver = k.run(&["exec", pod, "--", "cmd", "/c", "ver"]).ok();
            assert!(
                ver.contains(&format!("Microsoft Windows [Version {build}.")),
                "{pod} on {node}: {ver:?}"
            );
        }
    }

    // Events of the same second are listed in the order they were recorded (upstream names
    // each event `<object>.<hex UnixNano>`, so the listing is chronological and describe's
    // sort by timestamp keeps that order).
    assert!(out_of_order.is_empty(), "{}", out_of_order.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn secret_volume_on_linux_and_windows_build_mismatch() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    let file = k.file("pods.yaml", LINUX_AND_MISMATCHED);
    let applied = k.run(&["apply", "-f", &file]).ok();
    assert_eq!(
        applied.lines().collect::<Vec<_>>(),
        [
            "secret/creds created",
            "pod/linux-shell created",
            "pod/build-mismatch created",
            "pod/pull-mismatch created"
        ],
        "{applied}"
    );

    // The Linux pod: a Secret volume is a tmpfs mount (never written to the node's disk).
    wait_ready(&k, "default", "pod/linux-shell");
    let wide = table(&k.run(&["get", "pods", "-o", "wide"]).ok());
    assert_eq!(cell(row(&wide, "NAME", "linux-shell"), "NODE"), "linux-1", "{wide:#?}");
    for name in ["build-mismatch", "pull-mismatch"] {
        assert_eq!(cell(row(&wide, "NAME", name), "NODE"), "win2022-1", "{wide:#?}");
    }
    let mounts = k.run(&["exec", "linux-shell", "--", "cat", "/proc/mounts"]).ok();
    let mount_of = |path: &str| {
        mounts
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.get(1) == Some(&path))
            .unwrap_or_else(|| panic!("no mount at {path} in\n{mounts}"))
    };
    let creds = mount_of("/etc/creds");
    assert_eq!((creds[0], creds[2]), ("tmpfs", "tmpfs"), "{mounts}");
    assert!(creds[3].starts_with("ro,"), "{mounts}");
    let token = mount_of("/var/run/secrets/kubernetes.io/serviceaccount");
    assert_eq!((token[0], token[2]), ("tmpfs", "tmpfs"), "{mounts}");
    assert_eq!(
        k.run(&["exec", "linux-shell", "--", "cat", "/etc/creds/password"]).ok(),
        "s3cret"
    );

    // A single-manifest Windows Server 2019 image is pulled on the 2022 node, but HCS refuses to
    // start it (process isolation needs the same build): StartError, then CrashLoopBackOff.
    let seen = await_status(&k, "default", "build-mismatch", &["CrashLoopBackOff"]);
    for status in &seen {
        assert!(
            [
                "Pending",
                "ContainerCreating",
                "StartError",
                "RunContainerError",
                "CrashLoopBackOff"
            ]
            .contains(&status.as_str()),
            "{seen:?}"
        );
    }
    let described = k.run(&["describe", "pod", "build-mismatch"]).ok();
    assert!(
        described.contains("The container operating system does not match the host operating system"),
        "{described}"
    );
    // State: Waiting (CrashLoopBackOff); Last State: Terminated (StartError, exit code 128).
    let reasons = described_fields(&described, "Reason");
    assert!(
        reasons.contains(&"CrashLoopBackOff") && reasons.contains(&"StartError"),
        "{described}"
    );
    assert_eq!(described_fields(&described, "Exit Code"), ["128"], "{described}");
    let events = described_events(&described);
    assert!(
        event(&events, "Pulled", &described).contains("mcr.microsoft.com/windows/servercore:10.0.17763.6414"),
        "{described}"
    );
    assert!(
        events.iter().any(|(kind, reason, line)| kind == "Warning"
            && reason == "Failed"
            && line.contains("hcs::CreateComputeSystem")
            && line.contains("The container operating system does not match the host operating system")),
        "{described}"
    );
    assert!(
        events.iter().any(|(kind, reason, line)| kind == "Warning"
            && reason == "BackOff"
            && line.contains("Back-off restarting failed container servercore in pod build-mismatch")),
        "{described}"
    );

    // The ltsc2019 manifest list has no entry for build 20348: the pull itself fails.
    let seen = await_status(&k, "default", "pull-mismatch", &["ErrImagePull", "ImagePullBackOff"]);
    for status in &seen {
        assert!(
            ["Pending", "ContainerCreating", "ErrImagePull", "ImagePullBackOff"].contains(&status.as_str()),
            "{seen:?}"
        );
    }
    let described = k.run(&["describe", "pod", "pull-mismatch"]).ok();
    let events = described_events(&described);
    assert!(
        events.iter().any(|(kind, reason, line)| kind == "Warning"
            && reason == "Failed"
            && line.contains(r#"Failed to pull image "mcr.microsoft.com/windows/servercore:ltsc2019""#)
            && line.contains("no match for platform in manifest")),
        "{described}"
    );
    assert!(
        !described.contains("The container operating system does not match"),
        "{described}"
    );
}
