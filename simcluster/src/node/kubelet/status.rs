//! The pod status the kubelet writes: the phase the containers' states imply, each container's
//! status, the pod's conditions and addresses, and the reason of a rejected or evicted pod.

use serde_json::{Value, json};

use super::{Container, PodRun, now};
use crate::store::Part;
use crate::store::api_error::ApiError;
use crate::store::resources;
use crate::vocab::json;

impl Container {
    fn status(&self, image_id: &str) -> Value {
        json!({
            "name": self.plan.name,
            "image": self.plan.image,
            "imageID": if self.started || self.restarts > 0 { image_id.to_string() } else { String::new() },
            "containerID": if self.container_id.is_empty() { Value::Null } else { json!(self.container_id) },
            "ready": self.ready,
            "started": self.started,
            "restartCount": self.restarts,
            "state": self.state,
            "lastState": self.last_state,
        })
    }
}

impl PodRun {
    /// The pod phase the containers' states imply.
    pub(super) fn computed_phase(&self) -> &'static str {
        let regular: Vec<&Container> = self.containers.iter().filter(|c| !c.init).collect();
        let all_terminated = !regular.is_empty()
            && regular
                .iter()
                .all(|c| c.terminated_code().is_some() && c.state.get("waiting").is_none());
        if all_terminated && self.restart_policy() != "Always" {
            if regular.iter().all(|c| c.terminated_code() == Some(0)) {
                "Succeeded"
            } else {
                "Failed"
            }
        } else if regular.iter().any(|c| c.started || c.restarts > 0) {
            "Running"
        } else {
            "Pending"
        }
    }

    pub(super) fn update_phase(&mut self) {
        let phase = self.computed_phase();
        if phase != self.phase {
            self.phase = phase;
            self.write_status();
        }
    }

    pub(super) fn write_status(&mut self) {
        if matches!(self.phase, "Succeeded" | "Failed") {
            self.release_slot();
        }
        let pods = resources::core("pods");
        let at = now();
        let regular: Vec<&Container> = self.containers.iter().filter(|c| !c.init).collect();
        let init: Vec<&Container> = self.containers.iter().filter(|c| c.init).collect();
        let all_ready = !regular.is_empty() && regular.iter().all(|c| c.ready);
        let initialized = init.iter().all(|c| c.terminated_code() == Some(0));
        let image_id = |c: &Container| format!("{}@sha256:{:064x}", c.plan.image.split(':').next().unwrap_or(""), 0u8);
        let container_statuses: Vec<Value> = regular.iter().map(|c| c.status(&image_id(c))).collect();
        let init_statuses: Vec<Value> = init.iter().map(|c| c.status(&image_id(c))).collect();
        let phase = self.phase;
        let reason = self.reason.clone();
        let pod_ip = self.pod_ip.clone();
        let pod_ip_v6 = self.pod_ip_v6.clone();
        let host_ip = self.profile.ip.to_string();
        let sandbox_ready = self.sandbox_ready;
        let evicted = self.evicted;
        let disruption = self.profile.kubelet >= (1, 26);
        let result = self.k.store.modify(pods, self.pod.namespace(), self.pod.name(), Part::Status, |p| {
            let old_conditions = p.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
            let mut status = json!({"phase": phase, "qosClass": p.pointer("/status/qosClass").cloned().unwrap_or(json!("BestEffort"))});
            if let Some((r, m)) = reason.as_ref().filter(|_| !evicted) {
                status["reason"] = json!(r);
                status["message"] = json!(m);
                status["conditions"] = json!(old_conditions);
                p["status"] = status;
                return Ok(());
            }
            status["hostIP"] = json!(host_ip);
            status["hostIPs"] = json!([{"ip": host_ip}]);
            if !pod_ip.is_empty() && sandbox_ready {
                status["podIP"] = json!(pod_ip);
                status["podIPs"] = match &pod_ip_v6 {
                    // The primary (IPv4) family first, as the kubelet lists them.
                    Some(v6) => json!([{"ip": pod_ip}, {"ip": v6}]),
                    None => json!([{"ip": pod_ip}]),
                };
            }
            status["startTime"] = p.pointer("/status/startTime").cloned().unwrap_or(json!(at));
            let cond = |ty: &str, ok: bool, reason: Option<&str>| {
                let status = if ok { "True" } else { "False" };
                let transition = old_conditions
                    .iter()
                    .find(|c| json::str(c, "/type") == ty && json::str(c, "/status") == status)
                    .and_then(|c| c.get("lastTransitionTime").cloned())
                    .unwrap_or(json!(at));
                let mut c = json!({"type": ty, "status": status, "lastProbeTime": null, "lastTransitionTime": transition});
                if let (false, Some(r)) = (ok, reason) {
                    c["reason"] = json!(r);
                }
                c
            };
            let unready = regular.iter().filter(|c| !c.ready).map(|c| c.plan.name.as_str()).collect::<Vec<_>>();
            let mut conditions = vec![
                cond("PodReadyToStartContainers", sandbox_ready, None),
                cond("Initialized", initialized, Some("ContainersNotInitialized")),
                cond("Ready", all_ready, Some("ContainersNotReady")),
                cond("ContainersReady", all_ready, Some("ContainersNotReady")),
                cond("PodScheduled", true, None),
            ];
            if !all_ready {
                let msg = format!("containers with unready status: [{}]", unready.join(" "));
                conditions[2]["message"] = json!(msg);
                conditions[3]["message"] = json!(msg);
            }
            if let (true, Some((r, m))) = (evicted, &reason) {
                status["reason"] = json!(r);
                status["message"] = json!(m);
                if disruption {
                    conditions.push(json!({"type": "DisruptionTarget", "status": "True", "lastProbeTime": null,
                        "lastTransitionTime": at, "reason": "TerminationByKubelet", "message": m}));
                }
            }
            status["conditions"] = json!(conditions);
            status["containerStatuses"] = json!(container_statuses);
            if !init_statuses.is_empty() {
                status["initContainerStatuses"] = json!(init_statuses);
            }
            p["status"] = status;
            Ok(())
        });
        match result {
            // Keep the stored version: the task then holds no copy of its own.
            Ok(latest) => self.pod = latest,
            Err(ApiError::NotFound { .. }) => {}
            Err(e) => tracing::debug!("pod status write failed: {e}"),
        }
    }
}
