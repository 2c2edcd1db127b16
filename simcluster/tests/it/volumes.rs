//! Volumes through the API, end to end: what an init container writes into an emptyDir is read
//! by the pod's other containers (STO-EMPTYDIR-DISK, W14), a readOnly mount of it refuses
//! writes the documented way (STO-READONLY-VOLUME, W14, E2E/volumes: `Access is denied.` on
//! Windows), and a hostPath shows the node's own files (STO-HOSTPATH, W14, E2E/volumes).

use crate::common;

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, PostParams};
use rstest::rstest;
use serde_json::json;
use simcluster::Topology;
use tokio::io::AsyncReadExt;

const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.53";
const NANOSERVER: &str = "mcr.microsoft.com/windows/nanoserver:ltsc2022";

/// Execs `argv` in container `c` of `pod`: (exit code, stdout, stderr).
async fn exec(pods: &Api<Pod>, pod: &str, argv: &[&str]) -> (i32, String, String) {
    let params = AttachParams::default().container("c");
    let mut proc = pods.exec(pod, argv.to_vec(), &params).await.expect("exec");
    let mut stdout = proc.stdout().expect("stdout");
    let mut stderr = proc.stderr().expect("stderr");
    let status = proc.take_status().expect("status");
    let (mut out, mut err) = (String::new(), String::new());
    let (o, e, status) = tokio::join!(stdout.read_to_string(&mut out), stderr.read_to_string(&mut err), status);
    o.expect("read stdout");
    e.expect("read stderr");
    let status = status.expect("an exec status");
    let code = if status.status.as_deref() == Some("Success") {
        0
    } else {
        status
            .details
            .and_then(|d| d.causes)
            .and_then(|c| c.into_iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
            .and_then(|c| c.message)
            .and_then(|m| m.parse().ok())
            .unwrap_or(-1)
    };
    (code, out, err)
}

async fn running(pods: &Api<Pod>, name: &str) {
    let ready = kube::runtime::wait::await_condition(pods.clone(), name, kube::runtime::conditions::is_pod_running());
    tokio::time::timeout(Duration::from_secs(30), ready)
        .await
        .expect("running in time")
        .expect("watch");
}

/// The pod of upstream's volume test: an init container seeds the emptyDir; the main
/// container mounts it read-write and read-only, and a hostPath of the node's hosts-file
/// directory read-only.
fn volume_pod(windows: bool) -> Pod {
    let (image, node, seed, rw, ro, etc, hostdir) = if windows {
        (
            NANOSERVER,
            "win2022-1",
            json!(["cmd", "/c", "echo seeded-by-init> C:\\rw\\seed.txt"]),
            "C:\\rw",
            "C:\\ro",
            "C:\\hostetc",
            "C:\\Windows\\System32\\drivers\\etc",
        )
    } else {
        (
            AGNHOST,
            "linux-1",
            json!(["/bin/sh", "-c", "echo seeded-by-init > /rw/seed.txt"]),
            "/rw",
            "/ro",
            "/hostetc",
            "/etc",
        )
    };
    let main: serde_json::Value = if windows {
        json!(["cmd", "/c", "ping -t localhost > NUL"])
    } else {
        json!(["/agnhost", "pause"])
    };
    serde_json::from_value(json!({
        "metadata": {"name": "vol"},
        "spec": {
            "nodeName": node,
            "tolerations": [{"key": "os", "operator": "Exists"}],
            "initContainers": [{"name": "seed", "image": image, "command": seed,
                "volumeMounts": [{"name": "data", "mountPath": rw}]}],
            "containers": [{"name": "c", "image": image, "command": main, "volumeMounts": [
                {"name": "data", "mountPath": rw},
                {"name": "data", "mountPath": ro, "readOnly": true},
                {"name": "etc", "mountPath": etc, "readOnly": true},
            ]}],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "etc", "hostPath": {"path": hostdir, "type": "Directory"}},
            ],
        },
    }))
    .expect("pod")
}

#[rstest]
#[case::linux(false)]
#[case::windows(true)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_container_files_read_only_mounts_and_host_paths(#[case] windows: bool) {
    let ns = if windows { "vol-w" } else { "vol-l" };
    let (_cluster, client) =
        common::cluster_and_client(Topology::default_cluster().instant().on_wall_clock(), ns).await;
    let pods: Api<Pod> = Api::namespaced(client, ns);
    pods.create(&PostParams::default(), &volume_pod(windows))
        .await
        .expect("create");
    running(&pods, "vol").await;
    if windows {
        let (code, out, _) = exec(&pods, "vol", &["cmd", "/c", "type C:\\ro\\seed.txt"]).await;
        assert_eq!((code, out.as_str()), (0, "seeded-by-init\r\n"));
        // E2E/volumes: the read-only mount answers exactly "Access is denied.".
        let (code, _, err) = exec(&pods, "vol", &["cmd", "/c", "echo windows-volume-test> C:\\ro\\f.txt"]).await;
        assert_eq!((code, err.as_str()), (1, "Access is denied.\r\n"));
        let (code, _, _) = exec(&pods, "vol", &["cmd", "/c", "echo windows-volume-test> C:\\rw\\f.txt"]).await;
        assert_eq!(code, 0);
        let (_, out, _) = exec(&pods, "vol", &["cmd", "/c", "type C:\\ro\\f.txt"]).await;
        assert_eq!(out, "windows-volume-test\r\n");
        let (code, out, _) = exec(&pods, "vol", &["cmd", "/c", "type C:\\hostetc\\hosts"]).await;
        assert_eq!(code, 0);
        assert!(out.contains("localhost"), "{out}");
    } else {
        let (code, out, _) = exec(&pods, "vol", &["cat", "/ro/seed.txt"]).await;
        assert_eq!((code, out.as_str()), (0, "seeded-by-init\n"));
        let (code, _, err) = exec(&pods, "vol", &["sh", "-c", "echo x > /ro/f.txt"]).await;
        assert_eq!(
            (code, err.as_str()),
            (1, "sh: can't create /ro/f.txt: Read-only file system\n")
        );
        let (code, _, err) = exec(&pods, "vol", &["sh", "-c", "echo x > /hostetc/f.txt"]).await;
        assert_eq!(
            (code, err.as_str()),
            (1, "sh: can't create /hostetc/f.txt: Read-only file system\n")
        );
        let (code, out, _) = exec(&pods, "vol", &["cat", "/hostetc/hosts"]).await;
        assert_eq!(code, 0);
        assert!(out.starts_with("127.0.0.1\tlocalhost\n"), "{out}");
    }
}

/// An init container whose write hits a readOnly mount fails (its shell's error, exit 1), so
/// the pod never starts its containers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_container_write_to_a_read_only_mount_fails() {
    let ns = "vol-ro";
    let (_cluster, client) =
        common::cluster_and_client(Topology::default_cluster().instant().on_wall_clock(), ns).await;
    let pods: Api<Pod> = Api::namespaced(client, ns);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "ro"},
        "spec": {
            "nodeName": "linux-1",
            "restartPolicy": "Never",
            "initContainers": [{"name": "seed", "image": AGNHOST,
                "command": ["/bin/sh", "-c", "echo x > /ro/seed.txt"],
                "volumeMounts": [{"name": "data", "mountPath": "/ro", "readOnly": true}]}],
            "containers": [{"name": "c", "image": AGNHOST, "args": ["pause"]}],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod).await.expect("create");
    let code = common::eventually("the init container to fail", || async {
        let p = pods.get("ro").await.ok()?;
        let s = p.status?;
        (s.phase.as_deref() == Some("Failed")).then_some(())?;
        s.init_container_statuses?
            .first()?
            .state
            .as_ref()?
            .terminated
            .as_ref()
            .map(|t| t.exit_code)
    })
    .await;
    assert_eq!(code, 1);
}
