//! How a pod's containers stop: graceful termination once the pod is deleted (how long a
//! process that delays its shutdown keeps it), hard eviction under memory pressure, what the
//! node gets back afterwards, and the termination message a container leaves at exit.

use std::time::Duration;

use serde_json::{Value, json};

use super::{PodRun, now};
use crate::config::profile::{NodeProfile, Step};
use crate::control::events::Kind;
use crate::node::exec::volumes;
use crate::store::resources;
use crate::vocab::json;

impl PodRun {
    /// Graceful termination once the pod is deleted: stop containers, then remove the pod.
    pub(super) async fn terminate(&mut self) {
        if !self.pod.is_terminating() {
            // Wait for the deletion (or an eviction, which then waits for the deletion).
            self.idle();
            self.stop.notified().await;
            if let Some(message) = self.k.take_eviction(self.pod.uid()) {
                self.evict(&message).await;
                self.stop.notified().await;
            }
        }
        let pods = resources::core("pods");
        let Ok(current) = self.k.store.get(pods, self.pod.namespace(), self.pod.name()) else {
            self.cleanup();
            return;
        };
        self.pod = current;
        let running: Vec<String> = self
            .containers
            .iter()
            .filter(|c| c.running())
            .map(|c| c.plan.name.clone())
            .collect();
        for name in &running {
            self.event(Kind::Normal, "Killing", &format!("Stopping container {name}"));
        }
        if !running.is_empty() && !self.profile.has_fault(crate::config::faults::Fault::KubeletStopped) {
            // A process that delays its shutdown keeps its container (and the pod) until it exits
            // or the runtime stops waiting for it.
            let grace = self
                .v()
                .pointer("/metadata/deletionGracePeriodSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(30);
            let longest = (0..self.containers.len())
                .filter(|i| self.containers[*i].running())
                .filter_map(|i| self.container_spec(i))
                .filter_map(|c| shutdown_delay(&c))
                .max();
            let wait = match longest {
                Some(delay) => stop_wait(&self.profile, delay, grace),
                None => self.profile.delay(Step::Stop, self.pod.uid()),
            };
            tokio::time::sleep(wait).await;
            for c in self.containers.iter_mut().filter(|c| c.running()) {
                let started = c.state.pointer("/running/startedAt").cloned().unwrap_or(json!(now()));
                c.state = json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": now(), "containerID": c.container_id}});
                c.ready = false;
            }
            self.write_status();
        }
        if self.profile.has_fault(crate::config::faults::Fault::KubeletStopped) {
            // No kubelet: the pod stays Terminating, as on a real unreachable node.
            return;
        }
        let _ = self
            .k
            .store
            .remove_terminated(pods, self.pod.namespace(), self.pod.name());
        self.cleanup();
    }

    /// Hard eviction under memory pressure: the containers are killed at once, the pod ends
    /// Failed with reason `Evicted` and the upstream message, and its memory, requests and
    /// address go back to the node; the object stays until it is deleted (MEM-EVICTION).
    async fn evict(&mut self, message: &str) {
        let running: Vec<String> = self
            .containers
            .iter()
            .filter(|c| c.running())
            .map(|c| c.plan.name.clone())
            .collect();
        self.event(Kind::Warning, "Evicted", message);
        for name in &running {
            self.event(Kind::Normal, "Killing", &format!("Stopping container {name}"));
        }
        // Killed without a grace period: SIGKILL on Linux, TerminateProcess on Windows.
        let code = if self.profile.is_windows() { 1 } else { 137 };
        for c in self.containers.iter_mut().filter(|c| c.running()) {
            let started = c.state.pointer("/running/startedAt").cloned().unwrap_or(json!(now()));
            c.state = json!({"terminated": {"exitCode": code, "reason": "Error", "startedAt": started, "finishedAt": now(), "containerID": c.container_id}});
            c.ready = false;
        }
        self.phase = "Failed";
        self.reason = Some(("Evicted".into(), message.to_string()));
        self.evicted = true;
        self.write_status();
        self.give_back();
    }

    /// Gives the node back what the pod held of it: its memory (and the pressure it caused)
    /// and its admitted requests.
    fn give_back(&mut self) {
        if self.k.release_memory(&self.profile.name, self.pod.uid()) {
            self.k.check_memory(&self.profile);
        }
        if self.admitted {
            self.release_resources();
            self.admitted = false;
        }
    }

    fn cleanup(&mut self) {
        self.release_slot();
        self.give_back();
        if !self.pod_ip.is_empty() && self.pod_ip != self.profile.ip.to_string() {
            self.k.release_ip(&self.profile, &self.pod_ip);
        }
        self.k.logs.remove_pod(self.pod.namespace(), self.pod.name());
        self.k.volumes.forget_pod(self.pod.uid());
    }
}

/// The seconds a container's main process takes to exit once asked to stop: agnhost's servers
/// started with `--delay-shutdown=N` (netexec, net: "Number of seconds to delay shutdown when
/// receiving SIGTERM", AGN; Go delivers Windows' CTRL_SHUTDOWN_EVENT as SIGTERM since Go 1.14).
/// None for a process that exits at once.
fn shutdown_delay(container: &Value) -> Option<u64> {
    let argv: Vec<&str> = ["/command", "/args"]
        .iter()
        .flat_map(|k| json::array(container, k))
        .filter_map(Value::as_str)
        .collect();
    if !argv.iter().any(|a| matches!(*a, "netexec" | "net")) {
        return None;
    }
    let value = argv.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--delay-shutdown=")
            .or_else(|| (*a == "--delay-shutdown").then(|| argv.get(i + 1).copied()).flatten())
    })?;
    value.parse::<u64>().ok().filter(|n| *n > 0)
}

/// How long the runtime lets a process that needs `delay` seconds to stop run after the pod's
/// deletion with a `grace` period: until it exits or the grace period ends (the kubelet then
/// kills it) — except Docker on Windows, where the ENTRYPOINT process gets CTRL_SHUTDOWN_EVENT
/// and Windows waits 5 s by default before shutting every process down, whatever the grace
/// period (W14, WI26: "terminationGracePeriodSeconds - this is not fully implemented in Docker
/// on Windows", moby#25982; "TerminationGracePeriod: requires containerD") (POD-TERMINATION-GRACE).
/// Every one of those seconds is a second of the cluster's clock: `timing.scale` real seconds.
fn stop_wait(profile: &NodeProfile, delay: u64, grace: i64) -> Duration {
    let allowed = if profile.is_windows() && profile.runtime == crate::config::profile::RuntimeKind::Docker {
        5
    } else {
        grace.max(0).unsigned_abs()
    };
    Duration::from_secs(delay.min(allowed)).mul_f64(profile.timing.scale.max(0.0))
}

/// The most of a termination message the kubelet reads (`kubecontainer.MaxContainerTerminationMessageLength`).
const MAX_TERMINATION_MESSAGE: usize = 4 * 1024;

/// The termination message the kubelet reports for a container that exited, from what the
/// container wrote (`layer`: its own files). The kubelet mounts one host file of its own onto
/// the container's `terminationMessagePath` (`makeMounts` in
/// pkg/kubelet/kuberuntime/kuberuntime_container.go, through `MakeAbsolutePath`, so
/// `/dev/termination-log` is `C:\dev\termination-log` on Windows) and reads at most 4 KiB of that
/// host file at exit (`getTerminationMessage`). That is a single-file mapping: Linux runtimes and
/// containerd on Windows make it; Docker on Windows maps directories only (WSTO, W20: "With
/// Docker, volume mounts can only target a directory … This limitation does not exist with
/// CRI-containerD"; W14, WI31: `terminationMessagePath` "has some limitations in that Windows
/// doesn't support mapping single files"), so there what the container writes stays in its own
/// layer and no message is reported (POD-TERMINATION-MESSAGE).
pub(super) fn termination_message(profile: &NodeProfile, spec: &Value, layer: &[(String, Vec<u8>)]) -> Option<String> {
    let path = json::opt_str(spec, "/terminationMessagePath").filter(|p| !p.is_empty())?;
    let windows = profile.is_windows();
    if windows && profile.runtime == crate::config::profile::RuntimeKind::Docker {
        return None;
    }
    let target = volumes::absolute(path, windows);
    let same = |p: &str| {
        if windows {
            p.eq_ignore_ascii_case(&target)
        } else {
            p == target
        }
    };
    let (_, data) = layer.iter().find(|(p, _)| same(p))?;
    let start = data.len().saturating_sub(MAX_TERMINATION_MESSAGE);
    let message = String::from_utf8_lossy(&data[start..]).into_owned();
    (!message.is_empty()).then_some(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// A node of a one-node topology: `os`, Kubernetes 1.14 or 1.32 by runtime era.
    fn node(os: &str, runtime: &str) -> NodeProfile {
        let kernel = if os == "windows" {
            "    kernelVersion: \"10.0.17763.1\"\n"
        } else {
            ""
        };
        let k8s = if runtime.starts_with("docker") { "1.14" } else { "1.32" };
        let yaml = format!(
            "name: t\nkubernetesVersion: v{k8s}.0\nnodes:\n  - name: node-1\n    os: {os}\n{kernel}    containerRuntime: \"{runtime}\"\n"
        );
        let topo = crate::config::topology::Topology::parse(&yaml, "test").expect("topology");
        NodeProfile::new(&topo.nodes[0], &topo, 0, std::net::Ipv4Addr::LOCALHOST)
    }

    /// POD-TERMINATION-MESSAGE: the kubelet reports what the container wrote at its
    /// terminationMessagePath where the runtime maps that single file (Linux, containerd on
    /// Windows: kuberuntime `makeMounts`/`getTerminationMessage`), and nothing on Docker on
    /// Windows, which maps directories only (WSTO, W20; W14, WI31 "Windows doesn't support
    /// mapping single files").
    #[rstest]
    #[case::linux("linux", "containerd://1.7.22", "/dev/termination-log", Some("done\n"))]
    #[case::windows_containerd("windows", "containerd://1.7.20", "C:\\dev\\termination-log", Some("done\r\n"))]
    #[case::windows_containerd_case("windows", "containerd://1.7.20", "c:\\DEV\\termination-log", Some("done\r\n"))]
    #[case::windows_docker("windows", "docker://18.9.1", "C:\\dev\\termination-log", None)]
    #[case::elsewhere("linux", "containerd://1.7.22", "/tmp/other", None)]
    fn the_termination_message_is_read_where_the_runtime_maps_the_file(
        #[case] os: &str,
        #[case] runtime: &str,
        #[case] written_at: &str,
        #[case] expected: Option<&str>,
    ) {
        let data = if os == "windows" { "done\r\n" } else { "done\n" };
        let layer = vec![(written_at.to_string(), data.as_bytes().to_vec())];
        let spec = json!({"name": "c", "terminationMessagePath": "/dev/termination-log"});
        assert_eq!(
            termination_message(&node(os, runtime), &spec, &layer).as_deref(),
            expected
        );
    }

    /// POD-TERMINATION-GRACE: a process delaying its shutdown by 12 s gets them within a 30 s
    /// grace period on Linux and on containerd on Windows (WI26 "requires containerD"), 5 s on
    /// Docker on Windows (W14), and never more than the grace period — seconds of the cluster's
    /// clock, `timing.scale` real seconds each.
    #[rstest]
    #[case::linux("linux", "containerd://1.7.22", 12, 30, 12)]
    #[case::windows_containerd("windows", "containerd://1.7.20", 12, 30, 12)]
    #[case::windows_docker("windows", "docker://18.9.1", 12, 30, 5)]
    #[case::cut_by_grace("linux", "containerd://1.7.22", 12, 3, 3)]
    #[case::short("windows", "docker://18.9.1", 2, 30, 2)]
    fn a_delayed_shutdown_lasts_as_long_as_the_runtime_waits(
        #[case] os: &str,
        #[case] runtime: &str,
        #[case] delay: u64,
        #[case] grace: i64,
        #[case] expected: u64,
        #[values(1.0, 0.1, 0.05)] scale: f64,
    ) {
        let mut profile = node(os, runtime);
        profile.timing.scale = scale;
        assert_eq!(
            stop_wait(&profile, delay, grace),
            Duration::from_secs(expected).mul_f64(scale)
        );
    }

    #[rstest]
    #[case::netexec(json!({"args": ["netexec", "--http-port=8080", "--delay-shutdown=12"]}), Some(12))]
    #[case::separate(json!({"command": ["/agnhost"], "args": ["net", "--delay-shutdown", "7"]}), Some(7))]
    #[case::none(json!({"args": ["netexec", "--http-port=8080"]}), None)]
    #[case::not_agnhost(json!({"command": ["sleep", "--delay-shutdown=12"]}), None)]
    fn agnhost_servers_delay_their_shutdown(#[case] container: Value, #[case] expected: Option<u64>) {
        assert_eq!(shutdown_delay(&container), expected);
    }

    /// Only the last 4 KiB of a longer message are reported.
    #[test]
    fn a_long_termination_message_is_cut_to_its_last_4_kib() {
        let data = format!("{}end", "x".repeat(5000));
        let layer = vec![("/dev/termination-log".to_string(), data.into_bytes())];
        let spec = json!({"name": "c", "terminationMessagePath": "/dev/termination-log"});
        let got = termination_message(&node("linux", "containerd://1.7.22"), &spec, &layer).expect("a message");
        assert_eq!(got.len(), MAX_TERMINATION_MESSAGE);
        assert!(got.ends_with("end"));
    }
}
