//! The pod sandbox: the pod's address on the node's pod network, a sandbox that cannot be
//! created (or a volume mounted) and the kubelet's retries, and the transient set-up events a
//! real kubelet gets past ([`super::transient`]).

use serde_json::{Value, json};

use super::outcome::{ContainerOutcome, ContainerPlan};
use super::{Container, Kubelets, PodRun, outcome, transient};
use crate::config::profile::NodeProfile;
use crate::control::events::Kind;
use crate::node::runtime::Process;
use crate::store::resources;
use crate::vocab::json;

impl Kubelets {
    pub(super) fn allocate_ip(&self, profile: &NodeProfile) -> String {
        let mut ips = self.ips.lock().unwrap_or_else(|p| p.into_inner());
        let used = ips.entry(profile.name.clone()).or_default();
        // .1 is the bridge gateway; .254 stays free for kube-proxy's source VIP on overlay networks.
        let host = (2..254).find(|h| !used.contains(h)).unwrap_or(253);
        used.insert(host);
        let prefix = profile.pod_cidr.trim_end_matches("0/24");
        format!("{prefix}{host}")
    }

    pub(super) fn release_ip(&self, profile: &NodeProfile, ip: &str) {
        if let Some(host) = ip.rsplit('.').next().and_then(|h| h.parse::<u32>().ok()) {
            let mut ips = self.ips.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(used) = ips.get_mut(&profile.name) {
                used.remove(&host);
            }
        }
    }
}

impl PodRun {
    /// The sandbox cannot be created (or a volume mounted): the containers wait in
    /// `ContainerCreating` (init containers and, behind them, the others in `PodInitializing`)
    /// while the kubelet retries ([`crate::config::profile::NodeProfile::setup_retry`]), logging
    /// the runtime's error and recording the event each time.
    pub(super) async fn sandbox_fails(&mut self, reason: &str, message: &str) {
        self.containers = waiting_containers(self.v());
        self.write_status();
        let runtime_error = message.strip_prefix("Failed to create pod sandbox: ");
        let mut attempt = 0;
        loop {
            if let Some(err) = runtime_error {
                let line = format!(
                    "\"RunPodSandbox from runtime service failed\" err={err:?} pod=\"{}/{}\"",
                    self.pod.namespace(),
                    self.pod.name()
                );
                self.k.logs.append("", &self.profile.name, "kubelet", &line);
            }
            self.event(Kind::Warning, reason, message);
            let retry = self.profile.setup_retry(reason == "FailedMount", attempt);
            if !self.wait(retry).await {
                return;
            }
            attempt += 1;
        }
    }

    /// With `timing.transientEvents`: a `FailedMount` of the service-account volume when the
    /// namespace is only moments old, and on a chosen share of Windows pods on the pod network
    /// one `FailedCreatePodSandBox` that the retry gets past. True unless the pod is deleted.
    pub(super) async fn transient_setup(&mut self, host_network: bool) -> bool {
        if !self.profile.timing.transient_events {
            return true;
        }
        let ns = self.pod.namespace().to_string();
        let window = transient::NEW_NAMESPACE_WINDOW.mul_f64(self.profile.timing.scale);
        let age = self
            .k
            .store
            .get(resources::core("namespaces"), "", &ns)
            .ok()
            .and_then(|n| {
                chrono::DateTime::parse_from_rfc3339(json::str(n.value(), "/metadata/creationTimestamp")).ok()
            })
            .and_then(|at| (chrono::Utc::now() - at.with_timezone(&chrono::Utc)).to_std().ok());
        if age.is_some_and(|a| a < window)
            && let Some(volume) = crate::node::exec::mounts::sa_volume(&self.k.store, self.v())
        {
            let message = transient::failed_mount_message(json::str(&volume, "/name"), &ns);
            self.event(Kind::Warning, "FailedMount", &message);
        }
        let t = &self.profile.timing;
        if self.profile.is_windows()
            && !host_network
            && transient::sandbox_retried(t.seed, &self.profile.name, &ns, self.pod.name())
        {
            let id = outcome::container_id(self.pod.uid(), "POD");
            let message = transient::sandbox_message(&self.profile, id.trim_start_matches("containerd://"));
            self.event(Kind::Warning, "FailedCreatePodSandBox", &message);
            if !self.wait(self.profile.backoff(0) / 2).await {
                return false;
            }
        }
        true
    }
}

/// The containers of a pod whose sandbox does not exist yet, as the kubelet reports them:
/// waiting, `ContainerCreating` (`PodInitializing` for init containers and for containers
/// behind them).
fn waiting_containers(pod: &Value) -> Vec<Container> {
    let list = |key: &str| {
        pod.pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let init = list("initContainers");
    let regular_reason = if init.is_empty() {
        "ContainerCreating"
    } else {
        "PodInitializing"
    };
    let make = |c: &Value, is_init: bool| Container {
        plan: ContainerPlan {
            name: json::str(c, "/name").to_string(),
            image: json::str(c, "/image").to_string(),
            user: None,
            // Never played: the sandbox does not come up.
            outcome: ContainerOutcome::Runs {
                process: Process::LongRunning { log: Vec::new() },
            },
            writes: Vec::new(),
        },
        init: is_init,
        restarts: 0,
        state: json!({"waiting": {"reason": if is_init { "PodInitializing" } else { regular_reason }}}),
        last_state: json!({}),
        ready: false,
        started: false,
        container_id: String::new(),
    };
    init.iter()
        .map(|c| make(c, true))
        .chain(list("containers").iter().map(|c| make(c, false)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::plain(json!({"containers": [{"name": "app", "image": "a"}]}), &[("app", false, "ContainerCreating")])]
    #[case::two(
        json!({"containers": [{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]}),
        &[("a", false, "ContainerCreating"), ("b", false, "ContainerCreating")]
    )]
    #[case::behind_init(
        json!({"initContainers": [{"name": "setup", "image": "s"}], "containers": [{"name": "app", "image": "a"}]}),
        &[("setup", true, "PodInitializing"), ("app", false, "PodInitializing")]
    )]
    #[case::no_spec(json!(null), &[])]
    fn containers_wait_for_a_sandbox(#[case] spec: Value, #[case] expected: &[(&str, bool, &str)]) {
        let pod = json!({"metadata": {"name": "p"}, "spec": spec});
        let got: Vec<(String, bool, String)> = waiting_containers(&pod)
            .iter()
            .map(|c| {
                (
                    c.plan.name.clone(),
                    c.init,
                    json::str(&c.state, "/waiting/reason").to_string(),
                )
            })
            .collect();
        let expected: Vec<(String, bool, String)> = expected
            .iter()
            .map(|(n, i, r)| (n.to_string(), *i, r.to_string()))
            .collect();
        assert_eq!(got, expected);
        assert!(
            waiting_containers(&pod)
                .iter()
                .all(|c| !c.ready && !c.started && c.container_id.is_empty())
        );
    }
}
