//! A pod's containers over time: init containers one after another, then the regular ones
//! started and watched — create, start, what the main process writes, its exit, and restarts
//! with CrashLoopBackOff back-off per the restart policy.

use std::time::Duration;

use serde_json::{Value, json};

use super::outcome::ContainerOutcome;
use super::termination::termination_message;
use super::{Ended, PodRun, now, scaled};
use crate::config::profile::{NodeProfile, Step};
use crate::control::events::Kind;
use crate::node::exec::volumes::{self, WriteTarget, Writer};
use crate::node::runtime::Process;
use crate::vocab::json;

impl PodRun {
    pub(super) async fn run_containers(&mut self) -> Ended {
        // Init containers, one after another, each to a successful exit.
        let init_count = self.containers.iter().filter(|c| c.init).count();
        for i in 0..init_count {
            loop {
                match self.start(i).await {
                    None => return Ended::Stopped,
                    Some(true) => {}
                    Some(false) => match self.crash_loop(i).await {
                        None => return Ended::Stopped,
                        Some(()) => continue,
                    },
                }
                match self.await_exit(i).await {
                    None => return Ended::Stopped,
                    Some(0) => break,
                    Some(_) if self.restart_policy() == "Never" => {
                        self.phase = "Failed";
                        self.write_status();
                        return Ended::Settled;
                    }
                    Some(_) => {
                        if self.crash_loop(i).await.is_none() {
                            return Ended::Stopped;
                        }
                    }
                }
            }
        }
        // Regular containers: start each, then watch them all.
        for i in init_count..self.containers.len() {
            if self.start(i).await.is_none() {
                return Ended::Stopped;
            }
        }
        self.supervise(init_count).await
    }

    /// Pulls, creates and starts container i. Some(true): running; Some(false): the start
    /// failed (retry with back-off); None: the pod was deleted meanwhile.
    async fn start(&mut self, i: usize) -> Option<bool> {
        let image = self.containers[i].plan.image.clone();
        let name = self.containers[i].plan.name.clone();
        if let ContainerOutcome::PullFails { message, .. } = self.containers[i].plan.outcome.clone() {
            // The registry answers before the manifest is read: a refusal (401, a name that
            // does not resolve) comes before "not found" or the platform match.
            let message = self.registry_refusal(&image).unwrap_or(message);
            self.pull_forever(i, &image, &message).await;
            return None;
        }
        if !self.pull(i, &image).await {
            return None;
        }
        match self.containers[i].plan.outcome.clone() {
            ContainerOutcome::ConfigError { message, .. } => {
                let mut attempt = 0;
                loop {
                    self.containers[i].state =
                        json!({"waiting": {"reason": "CreateContainerConfigError", "message": message}});
                    self.write_status();
                    self.event(Kind::Warning, "Failed", &format!("Error: {message}"));
                    if !self.wait(self.profile.backoff(attempt)).await {
                        return None;
                    }
                    attempt += 1;
                }
            }
            ContainerOutcome::StartFails { message, .. } => {
                if !self.wait(self.profile.delay(Step::Create, self.pod.uid())).await {
                    return None;
                }
                self.containers[i].container_id = container_id(self.pod.uid(), &name, self.containers[i].restarts);
                self.event(Kind::Normal, "Created", &format!("Created container: {name}"));
                let message = message.replace(
                    "<containerId>",
                    self.containers[i].container_id.trim_start_matches("containerd://"),
                );
                self.event(Kind::Warning, "Failed", &format!("Error: {message}"));
                let at = now();
                self.containers[i].state = json!({"terminated": {"exitCode": 128, "reason": "StartError", "message": message,
                    "startedAt": "1970-01-01T00:00:00Z", "finishedAt": at, "containerID": self.containers[i].container_id}});
                self.write_status();
                Some(false)
            }
            ContainerOutcome::Runs { process } => {
                if !self.wait(self.profile.delay(Step::Create, self.pod.uid())).await {
                    return None;
                }
                self.containers[i].container_id = container_id(self.pod.uid(), &name, self.containers[i].restarts);
                self.event(Kind::Normal, "Created", &format!("Created container: {name}"));
                if !self.wait(self.profile.delay(Step::Start, self.pod.uid())).await {
                    return None;
                }
                self.event(Kind::Normal, "Started", &format!("Started container {name}"));
                let log = match &process {
                    Process::LongRunning { log }
                    | Process::Holding { log, .. }
                    | Process::Exits { log, .. }
                    | Process::AllocationFails { log, .. } => log.clone(),
                    Process::OomKilled { .. } => Vec::new(),
                };
                for line in log {
                    self.k.logs.append(self.pod.namespace(), self.pod.name(), &name, &line);
                }
                self.apply_writes(i);
                let c = &mut self.containers[i];
                c.state = json!({"running": {"startedAt": now()}});
                c.started = true;
                c.ready = !c.init;
                // One write carries both the container state and the pod phase it implies.
                self.phase = self.computed_phase();
                self.write_status();
                if let Process::Holding { bytes, .. } = process {
                    self.k.hold_memory(&self.profile, &self.pod, &name, bytes);
                    self.k.check_memory(&self.profile);
                }
                Some(true)
            }
            ContainerOutcome::PullFails { .. } => None,
        }
    }

    /// Puts what container i's main process writes where its mounts say (STO-EMPTYDIR-DISK:
    /// an init container's file in an emptyDir is there for the containers after it).
    fn apply_writes(&self, i: usize) {
        let plan = &self.containers[i].plan;
        if plan.writes.is_empty() {
            return;
        }
        let windows = self.profile.is_windows();
        let spec = self.v().get("spec").cloned().unwrap_or(Value::Null);
        let Some(container) = ["initContainers", "containers"]
            .iter()
            .filter_map(|k| spec.get(*k).and_then(Value::as_array))
            .flatten()
            .find(|c| json::str(c, "/name") == plan.name)
        else {
            return;
        };
        let mounts = volumes::mount_points(&spec, container, windows);
        let writer = Writer {
            pod_uid: self.pod.uid(),
            container: &plan.name,
            node: &self.profile.name,
            windows,
            host_process: self.host_process,
        };
        for w in &plan.writes {
            // A read-only target already failed the process (its shell's error).
            if let WriteTarget::Store { place, path } = volumes::resolve(&mounts, &w.path, writer) {
                self.k.volumes.write(&place, &path, &w.data, w.append, windows);
            }
        }
    }

    /// Waits for container i (running) to exit; Some(code), or None when the pod is deleted.
    async fn await_exit(&mut self, i: usize) -> Option<i64> {
        let (after, code, reason) = match &self.containers[i].plan.outcome {
            ContainerOutcome::Runs {
                process: Process::Exits { code, after_ms, .. },
            } => (
                scaled(*after_ms, &self.profile),
                i64::from(*code),
                if *code == 0 { "Completed" } else { "Error" },
            ),
            ContainerOutcome::Runs {
                process: Process::OomKilled { after_ms },
            } => (scaled(*after_ms, &self.profile), 137, "OOMKilled"),
            ContainerOutcome::Runs {
                process: Process::AllocationFails { after_ms, .. },
            } => (scaled(*after_ms, &self.profile), 1, "Error"),
            _ => {
                // Long-running: only deletion ends it.
                self.stop.notified().await;
                self.stop.notify_one();
                return None;
            }
        };
        if !self.wait(after).await {
            return None;
        }
        let message = self.container_spec(i).and_then(|spec| {
            let layer = self.k.volumes.files(&volumes::Place::Layer {
                pod_uid: self.pod.uid().to_string(),
                container: self.containers[i].plan.name.clone(),
            });
            termination_message(&self.profile, &spec, &layer)
        });
        let c = &mut self.containers[i];
        let started = c.state.pointer("/running/startedAt").cloned().unwrap_or(json!(now()));
        c.state = json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now(), "containerID": c.container_id}});
        if let Some(m) = message {
            c.state["terminated"]["message"] = json!(m);
        }
        c.ready = false;
        self.write_status();
        Some(code)
    }

    /// Back-off before restarting container i: CrashLoopBackOff. None when the pod is deleted.
    async fn crash_loop(&mut self, i: usize) -> Option<()> {
        let name = self.containers[i].plan.name.clone();
        let restarts = self.containers[i].restarts;
        let label = NodeProfile::backoff_label(restarts);
        let full = self.full_name();
        {
            let c = &mut self.containers[i];
            c.last_state = c.state.clone();
            c.restarts += 1;
            c.ready = false;
            c.state = json!({"waiting": {"reason": "CrashLoopBackOff",
                "message": format!("back-off {label} restarting failed container={name} pod={full}")}});
        }
        self.write_status();
        self.event(
            Kind::Warning,
            "BackOff",
            &format!("Back-off restarting failed container {name} in pod {full}"),
        );
        if !self.wait(self.profile.backoff(restarts)).await {
            return None;
        }
        self.k.logs.restart(self.pod.namespace(), self.pod.name(), &name);
        self.k.volumes.reset_layer(self.pod.uid(), &name);
        Some(())
    }

    /// Watches the regular containers: exits, restarts per policy, the pod's final phase.
    async fn supervise(&mut self, first: usize) -> Ended {
        let indices: Vec<usize> = (first..self.containers.len()).collect();
        // Each container that can exit gets its own timeline; long-running ones wait for deletion.
        loop {
            let mut next: Option<(Duration, usize)> = None;
            for &i in &indices {
                let c = &self.containers[i];
                let wake = match (&c.plan.outcome, c.running(), c.terminated_code()) {
                    (ContainerOutcome::StartFails { .. }, _, Some(_)) => Some(Duration::ZERO),
                    (ContainerOutcome::Runs { process }, true, _) => match process {
                        Process::LongRunning { .. } | Process::Holding { .. } => None,
                        Process::Exits { after_ms, .. }
                        | Process::OomKilled { after_ms }
                        | Process::AllocationFails { after_ms, .. } => Some(scaled(*after_ms, &self.profile)),
                    },
                    _ => None,
                };
                if let Some(w) = wake
                    && next.is_none_or(|(d, _)| w < d)
                {
                    next = Some((w, i));
                }
            }
            self.update_phase();
            let Some((_, i)) = next else {
                // Nothing more happens on its own.
                self.idle();
                self.stop.notified().await;
                self.stop.notify_one();
                return Ended::Stopped;
            };
            let code = if self.containers[i].running() {
                match self.await_exit(i).await {
                    None => return Ended::Stopped,
                    Some(code) => code,
                }
            } else {
                self.containers[i].terminated_code().unwrap_or(128)
            };
            let restart = match self.restart_policy() {
                "Never" => false,
                "OnFailure" => code != 0,
                _ => true,
            };
            if !restart {
                // Stays terminated; mark the outcome as settled so it is not picked again.
                self.containers[i].plan.outcome = ContainerOutcome::Runs {
                    process: Process::LongRunning { log: Vec::new() },
                };
                self.update_phase();
                if self.containers[first..].iter().all(|c| c.terminated_code().is_some()) {
                    self.write_status();
                    return Ended::Settled;
                }
                continue;
            }
            if self.crash_loop(i).await.is_none() {
                return Ended::Stopped;
            }
            if self.start(i).await.is_none() {
                return Ended::Stopped;
            }
        }
    }
}

fn container_id(pod_uid: &str, name: &str, restarts: u32) -> String {
    let h = crate::vocab::hash::Fnv::default()
        .write(pod_uid.as_bytes())
        .write(name.as_bytes())
        .write(&restarts.to_le_bytes())
        .finish();
    format!(
        "containerd://{h:016x}{:016x}{:016x}{:016x}",
        h.rotate_left(13),
        h.rotate_left(29),
        h.rotate_left(47)
    )
}
