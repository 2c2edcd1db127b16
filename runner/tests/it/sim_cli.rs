//! `mixcheck sim serve` as a user runs it: kubeconfig written owner-only and usable, clean stop
//! on SIGTERM, and bad topologies refused with exit code 2 and file:line:column.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn mixcheck() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mixcheck"))
}

#[test]
fn bad_topology_exits_2_naming_the_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("topo.yaml");
    std::fs::write(&path, "name: x\nnodes:\n  - name: a\n    os: linux\n    colour: red\n").expect("write");
    let out = mixcheck()
        .args(["sim", "serve", "--kubeconfig"])
        .arg(dir.path().join("kc"))
        .arg("--topology")
        .arg(&path)
        .output()
        .expect("run mixcheck");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("topo.yaml:5:"), "{stderr}");
    assert!(stderr.contains("colour"), "{stderr}");
    assert!(
        !dir.path().join("kc").exists(),
        "no kubeconfig for a cluster that never started"
    );
}

#[test]
fn missing_topology_file_exits_2() {
    let out = mixcheck()
        .args(["sim", "serve", "--topology", "does-not-exist.yaml"])
        .output()
        .expect("run mixcheck");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does-not-exist.yaml: cannot read"));
}

#[cfg(unix)]
#[test]
fn serve_writes_an_owner_only_kubeconfig_and_stops_on_sigterm() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("sim.kubeconfig");
    let mut child = mixcheck()
        .args(["sim", "serve", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn mixcheck");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut banner = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    for line in lines.by_ref() {
        let line = line.expect("line");
        let done = line.starts_with("Press Ctrl-C");
        banner.push(line);
        if done || Instant::now() > deadline {
            break;
        }
    }
    let banner = banner.join("\n");
    assert!(banner.contains("is serving at https://127.0.0.1:"), "{banner}");
    for node in ["control-plane", "linux-1", "win2019-1", "win2022-1"] {
        assert!(banner.contains(node), "{banner}");
    }
    let mode = std::fs::metadata(&kubeconfig)
        .expect("kubeconfig exists")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let text = std::fs::read_to_string(&kubeconfig).expect("read kubeconfig");
    assert!(text.contains("certificate-authority-data:") && text.contains("token:"));
    assert!(!text.contains("insecure-skip-tls-verify"));

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let exit = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "mixcheck did not stop after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(exit.code(), Some(0));
    assert!(!kubeconfig.exists(), "the kubeconfig of a stopped cluster is removed");
}

#[test]
fn profiles_lists_every_builtin_cluster() {
    let out = mixcheck().args(["sim", "profiles"]).output().expect("run mixcheck");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "default",
        "k8s-1.5-ws2016",
        "k8s-1.9-ws1709",
        "k8s-1.14-ws2019-host-gw",
        "k8s-1.14-ws2019-vxlan",
        "current-ws2022-ws2025",
        "aks",
        "eks",
        "gke",
        "kubeadm-flannel-hostprocess",
        "kubeadm-calico",
    ] {
        assert!(text.lines().any(|l| l.starts_with(name)), "{name} missing:\n{text}");
    }
    // The managed platforms say so in their own column.
    for platform in ["aks", "eks", "gke"] {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().take(3).collect::<Vec<_>>() == [platform, "v1.32.3", platform]),
            "{platform}:\n{text}"
        );
    }
    assert!(text.contains("v1.14.10"), "{text}");
}

#[test]
fn faults_lists_symptoms() {
    let out = mixcheck().args(["sim", "faults"]).output().expect("run mixcheck");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("kubelet-stopped") && text.contains("NotReady"), "{text}");
    // One line per fault, each with the rule it breaks and whether it needs a Windows node.
    for fault in simcluster::faults::ALL {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(fault.name()))
            .unwrap_or_else(|| panic!("{fault} missing:\n{text}"));
        assert!(line.contains(fault.rule()), "{line}");
        assert!(
            line.contains(if fault.windows_only() { " windows " } else { " any " }),
            "{line}"
        );
    }
}

#[cfg(unix)]
#[test]
fn serve_banner_names_the_network_mode_the_clock_and_injected_faults() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = mixcheck()
        .args([
            "sim",
            "serve",
            "--fault",
            "win2022-1:kube-proxy-stopped",
            "--time-scale",
            "0.25",
            "--kubeconfig",
        ])
        .arg(dir.path().join("kc"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn mixcheck");
    let stdout = child.stdout.take().expect("stdout");
    let banner: Vec<String> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .take_while(|l| !l.starts_with("Press Ctrl-C"))
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    let node = banner
        .iter()
        .find(|l| l.contains("win2022-1"))
        .expect("the node's line");
    assert!(node.ends_with("[faults: kube-proxy-stopped]"), "{node}");
    assert!(
        !banner.iter().any(|l| l.contains("win2019-1") && l.contains("faults")),
        "{banner:?}"
    );
    assert!(banner.iter().any(|l| l.trim() == "network: l2bridge"), "{banner:?}");
    assert!(
        banner
            .iter()
            .any(|l| l.trim() == "clock: 0.25 real seconds per second of the cluster's (4 times the wall clock's pace)"),
        "{banner:?}"
    );
}

/// `--time-scale` is refused unless it is a number of real seconds above 0 and at most 100
/// (exit 2, naming the flag), before any cluster starts.
#[rstest::rstest]
#[case::zero("0")]
#[case::negative("-0.5")]
#[case::not_a_number("NaN")]
#[case::too_slow("1000")]
#[case::words("fast")]
fn bad_time_scales_exit_2(#[case] scale: &str) {
    let out = mixcheck()
        .args(["sim", "serve", "--time-scale", scale])
        .output()
        .expect("run mixcheck");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--time-scale"), "{out:?}");
}

#[test]
fn windows_only_faults_are_refused_on_linux_nodes() {
    let out = mixcheck()
        .args(["sim", "serve", "--fault", "linux-1:kube-proxy-stopped"])
        .output()
        .expect("run mixcheck");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("only on Windows nodes"),
        "{out:?}"
    );
}

#[test]
fn bad_fault_flags_exit_2() {
    for (flag, needle) in [
        ("win2019-1", "expected NODE:FAULT"),
        ("win2019-1:gremlins", "unknown fault"),
        ("nope:kubelet-stopped", "has no node"),
    ] {
        let out = mixcheck()
            .args(["sim", "serve", "--fault", flag])
            .output()
            .expect("run mixcheck");
        assert_eq!(out.status.code(), Some(2), "{flag}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(needle), "{flag}: {out:?}");
    }
}

#[test]
fn flannel_faults_need_a_flannel_network() {
    // The 1.5-era profile networks Windows pods with a transparent network, not flannel.
    for fault in ["flannel-subnet-env-missing", "flanneld-waiting", "hns-network-missing"] {
        let out = mixcheck()
            .args(["sim", "serve", "--profile", "k8s-1.5-ws2016", "--fault"])
            .arg(format!("win2016-1:{fault}"))
            .output()
            .expect("run mixcheck");
        assert_eq!(out.status.code(), Some(2), "{fault}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("needs network.mode l2bridge or overlay"),
            "{fault}: {out:?}"
        );
    }
}

#[test]
fn unknown_profile_exits_2() {
    let out = mixcheck()
        .args(["sim", "serve", "--profile", "k8s-0.1"])
        .output()
        .expect("run mixcheck");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no built-in profile"));
}

#[test]
fn the_documented_topology_example_is_valid() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/bundled-cluster.md"))
        .expect("docs/bundled-cluster.md");
    let section = doc.split("\n## Topology files").nth(1).expect("topology section");
    let block = section
        .split("```yaml")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("yaml block");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("readme-topology.yaml");
    std::fs::write(&path, block).expect("write");
    let topology = simcluster::Topology::load(&path).expect("the documented example parses");
    assert_eq!(topology.nodes.len(), 3, "count: 3 expands the node");
}
