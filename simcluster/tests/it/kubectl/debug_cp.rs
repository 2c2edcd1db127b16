//! `kubectl debug node/NAME` (a pod in the node's namespaces with its root at /host; on Windows a
//! pod-network address, as without HostProcess) and
//! `kubectl cp` both ways (tar through exec), each read back through a second kubectl call.

use super::*;

/// The pod `kubectl debug node/…` says it created.
fn debugging_pod(stdout: &str) -> String {
    stdout
        .strip_prefix("Creating debugging pod ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn kubectl_debug_node_runs_a_pod_on_the_host() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    let run = k.run(&[
        "debug",
        "node/linux-1",
        "--profile=legacy",
        "--image=busybox:1.36",
        "--",
        "true",
    ]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(!run.stderr.contains("unknown field"), "{run:#?}");
    let name = debugging_pod(&run.stdout);
    assert!(name.starts_with("node-debugger-linux-1-"), "{run:#?}");
    assert!(
        run.stdout.contains("with container debugger on node linux-1."),
        "{run:#?}"
    );
    let pod = format!("pod/{name}");
    assert_eq!(
        k.jsonpath(
            "default",
            &pod,
            "{.spec.nodeName} {.spec.hostNetwork} {.spec.hostPID} {.spec.volumes[0].hostPath.path} {.spec.containers[0].volumeMounts[0].mountPath}"
        ),
        "linux-1 true true / /host"
    );
    eventually("the debugging pod ends", || {
        k.jsonpath("default", &pod, "{.status.phase}") == "Succeeded"
    });
}

/// `kubectl debug node/NAME` on a Windows node: kubectl asks for the node's network as on Linux,
/// but without HostProcess a Windows pod gets a pod-network address (hostNetwork for Windows
/// pods is the alpha kubelet gate WindowsHostNetwork, off by default — NET-HOSTNETWORK), and a
/// Windows image runs to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn kubectl_debug_node_on_windows_gets_a_pod_address() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    let run = k.run(&[
        "debug",
        "node/win2022-1",
        "--profile=legacy",
        "--image=mcr.microsoft.com/windows/nanoserver:ltsc2022",
        "--",
        "cmd",
        "/c",
        "exit 0",
    ]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let name = debugging_pod(&run.stdout);
    assert!(name.starts_with("node-debugger-win2022-1-"), "{run:#?}");
    let pod = format!("pod/{name}");
    assert_eq!(
        k.jsonpath("default", &pod, "{.spec.nodeName} {.spec.hostNetwork}"),
        "win2022-1 true"
    );
    eventually("the debugging pod ends", || {
        k.jsonpath("default", &pod, "{.status.phase}") == "Succeeded"
    });
    let node_ip = k.jsonpath("", "node/win2022-1", "{.status.addresses[0].address}");
    let pod_ip = k.jsonpath("default", &pod, "{.status.podIP}");
    assert!(pod_ip.starts_with("10.244."), "a pod-network address: {pod_ip}");
    assert_ne!(pod_ip, node_ip);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn kubectl_cp_copies_into_and_out_of_a_container() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    run_sleeper(&k, "default", "box");
    let local = k.file("hello.txt", "hello from the host\nline two\n");
    k.run(&["cp", &local, "default/box:/tmp/hello.txt"]).ok();
    assert_eq!(
        k.run(&["exec", "box", "--", "cat", "/tmp/hello.txt"]).ok(),
        "hello from the host\nline two\n"
    );
    let back = format!("{local}.back");
    let out = k.run(&["cp", "default/box:/tmp/hello.txt", &back]);
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(
        std::fs::read_to_string(&back).expect("copied back"),
        "hello from the host\nline two\n"
    );
    // Into a directory the container does not have: tar's error, through kubectl.
    let err = k.run(&["cp", &local, "default/box:/nowhere/hello.txt"]);
    assert!(err.stderr.contains("No such file or directory"), "{err:#?}");
}
