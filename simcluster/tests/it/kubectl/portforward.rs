//! `kubectl port-forward`: real TCP on kubectl's side to a port a simulated app listens on in
//! the pod; Windows pods follow NET-PORT-FORWARD / HIST-1.14-PORTFWD.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};

use super::*;

use simcluster::{ClusterConfig, Topology};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

/// Runs `kubectl port-forward pod/POD LOCAL:REMOTE` until it listens, sends one HTTP GET of
/// `path` through it, and returns the answer and what kubectl wrote to stderr.
fn forward_and_get(k: &Kubectl, pod: &str, remote: u16, path: &str) -> (String, String) {
    let local = free_port();
    let mapping = format!("{local}:{remote}");
    let mut child = k.spawn(
        &["port-forward", &format!("pod/{pod}"), &mapping],
        Stdio::null(),
        Stdio::piped(),
        Stdio::piped(),
    );
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
    let mut line = String::new();
    let listening = stdout.read_line(&mut line).is_ok() && line.contains(&format!("127.0.0.1:{local}"));
    let stderr = drain(child.stderr.take().expect("stderr is piped"));
    let mut answer = String::new();
    if listening {
        if let Ok(mut conn) = TcpStream::connect(("127.0.0.1", local)) {
            let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
            let _ = write!(
                conn,
                "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
            );
            let _ = conn.read_to_string(&mut answer);
        }
        // Give kubectl a moment to report what the error stream said.
        std::thread::sleep(Duration::from_millis(500));
    }
    let _ = child.kill();
    let _ = child.wait();
    let err = stderr.join().expect("stderr reader");
    assert!(listening, "kubectl port-forward did not listen: {line:?} {err}");
    (answer, err)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn kubectl_port_forward_serves_http_from_a_linux_pod() {
    let cluster = common::start().await;
    let k = Kubectl::new(&cluster);
    run_pod(&k, "default", "web", "nginx:1.27", Some("linux-1"), &[]);
    wait_ready(&k, "default", "pod/web");
    let (answer, err) = forward_and_get(&k, "web", 80, "/");
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:?} {err}");
    assert!(answer.contains("served by pod default/web"), "{answer:?}");
    // The same pod, read through a second kubectl call, is the one that answered.
    assert_eq!(k.jsonpath("default", "pod/web", "{.spec.nodeName}"), "linux-1");
    // Nothing listens on another port: the kubelet's error reaches kubectl.
    let (answer, err) = forward_and_get(&k, "web", 81, "/");
    assert_eq!(answer, "");
    assert!(
        err.contains("an error occurred forwarding") && err.contains("connection refused"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl"]
async fn kubectl_port_forward_to_windows_pods_follows_the_version_rules() {
    // 1.14: not supported (HIST-1.14-PORTFWD).
    let mut topology = Topology::profile("k8s-1.14-ws2019-vxlan").expect("built-in profile");
    topology.timing.scale = 0.05;
    let cluster = common::start_with(ClusterConfig::new(topology)).await;
    let k = Kubectl::new(&cluster);
    let iis = "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2019";
    run_pod(&k, "default", "iis", iis, Some("win2019-1"), &[]);
    wait_ready(&k, "default", "pod/iis");
    let (answer, err) = forward_and_get(&k, "iis", 80, "/");
    assert_eq!(answer, "");
    assert!(
        err.contains("port forwarding is not supported on Windows nodes in Kubernetes 1.14"),
        "{err}"
    );

    // Current: it works with a pause image that has wincat, and fails the documented way without.
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    if let Some(n) = topology.nodes.iter_mut().find(|n| n.name == "win2019-1") {
        n.pause_image = Some("mcr.microsoft.com/k8s/core/pause:1.0.0".into());
    }
    let cluster = common::start_with(ClusterConfig::new(topology)).await;
    let k = Kubectl::new(&cluster);
    run_pod(&k, "default", "iis", iis, Some("win2019-1"), &[]);
    run_pod(
        &k,
        "default",
        "iis22",
        "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022",
        Some("win2022-1"),
        &[],
    );
    wait_ready(&k, "default", "pod/iis pod/iis22");
    let (answer, err) = forward_and_get(&k, "iis", 80, "/");
    assert_eq!(answer, "");
    assert!(err.contains("unable to do port forwarding: wincat not found"), "{err}");
    let (answer, err) = forward_and_get(&k, "iis22", 80, "/");
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:?} {err}");
}
