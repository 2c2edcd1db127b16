//! Each node's memory as the kubelet's eviction manager tracks it: what the running containers
//! hold, the MemoryPressure condition and its taint, and the pod chosen for eviction (the
//! decisions are [`super::eviction`]'s; MEM-EVICTION).

use serde_json::{Value, json};

use super::eviction::{self, ContainerUse, PodUse};
use super::{Kubelets, now};
use crate::config::profile::NodeProfile;
use crate::control::events::{self, Kind, Source};
use crate::store::resources;
use crate::store::{Obj, Part};
use crate::vocab::json;
use crate::vocab::quantity::Quantity;

impl Kubelets {
    /// Records that container `container` of `pod` holds `bytes` of memory on the node.
    pub(super) fn hold_memory(&self, profile: &NodeProfile, pod: &Obj, container: &str, bytes: u128) {
        let spec = pod.value();
        let request = spec
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| json::str(c, "/name") == container))
            .and_then(|c| {
                let r = c
                    .pointer("/resources/requests/memory")
                    .or_else(|| c.pointer("/resources/limits/memory"))?;
                let text = r.as_str().map(str::to_string).unwrap_or_else(|| r.to_string());
                let bytes = Quantity::parse(&text).and_then(|q| u128::try_from(q.value()).ok())?;
                Some((text, bytes))
            });
        let mut memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        let pods = memory.entry(profile.name.clone()).or_default();
        let at = match pods.iter().position(|p| p.uid == pod.uid()) {
            Some(i) => i,
            None => {
                pods.push(PodUse {
                    uid: pod.uid().to_string(),
                    namespace: pod.namespace().to_string(),
                    name: pod.name().to_string(),
                    priority: spec.pointer("/spec/priority").and_then(Value::as_i64).unwrap_or(0),
                    containers: Vec::new(),
                });
                pods.len() - 1
            }
        };
        let containers = &mut pods[at].containers;
        containers.retain(|c| c.name != container);
        containers.push(ContainerUse {
            name: container.to_string(),
            bytes,
            request,
        });
    }

    /// Forgets the memory a pod's containers held; true if it held any.
    pub(super) fn release_memory(&self, node: &str, uid: &str) -> bool {
        let mut memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        let Some(pods) = memory.get_mut(node) else {
            return false;
        };
        let before = pods.len();
        pods.retain(|p| p.uid != uid);
        before != pods.len()
    }

    /// The eviction manager's pass over one node: the `memory.available` signal against the
    /// hard threshold sets the MemoryPressure condition and, under pressure, picks one pod to
    /// evict (MEM-EVICTION). Nodes whose kubelet does not evict (Windows before 1.31) do
    /// nothing: there the condition is not implemented.
    pub(super) fn check_memory(&self, profile: &NodeProfile) {
        if !profile.evicts_on_memory_pressure() {
            return;
        }
        let Some((threshold, bytes)) = eviction::threshold(profile) else {
            return;
        };
        let (under, victim) = {
            let memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
            let pods = memory.get(&profile.name).map(Vec::as_slice).unwrap_or_default();
            let available = eviction::available(profile, pods);
            let under = available < bytes;
            let mut evictions = self.evictions.lock().unwrap_or_else(|p| p.into_inner());
            let victim = if under {
                eviction::victim(pods, &|p| evictions.contains_key(&p.uid))
                    .map(|p| (p.uid.clone(), eviction::message(&threshold, available, p)))
            } else {
                None
            };
            if let Some((uid, message)) = &victim {
                evictions.insert(uid.clone(), message.clone());
            }
            (under, victim.map(|v| v.0))
        };
        let changed = {
            let mut pressure = self.pressure.lock().unwrap_or_else(|p| p.into_inner());
            if under {
                pressure.insert(profile.name.clone())
            } else {
                pressure.remove(&profile.name)
            }
        };
        if changed {
            self.set_memory_pressure(profile, under);
        }
        if let Some(uid) = victim {
            let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(stop) = running.get(&uid) {
                stop.notify_one();
            }
        }
    }

    /// The node's MemoryPressure condition and its `node.kubernetes.io/memory-pressure` taint.
    fn set_memory_pressure(&self, profile: &NodeProfile, under: bool) {
        let nodes = resources::core("nodes");
        let at = now();
        let (status, reason, message) = if under {
            (
                "True",
                "KubeletHasInsufficientMemory",
                "kubelet has insufficient memory available",
            )
        } else {
            (
                "False",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            )
        };
        let _ = self.store.modify(nodes, "", &profile.name, Part::Status, |n| {
            if let Some(conds) = n.pointer_mut("/status/conditions").and_then(Value::as_array_mut) {
                for c in conds.iter_mut().filter(|c| json::str(c, "/type") == "MemoryPressure") {
                    c["status"] = json!(status);
                    c["reason"] = json!(reason);
                    c["message"] = json!(message);
                    c["lastTransitionTime"] = json!(at);
                }
            }
            Ok(())
        });
        let result = self.store.modify(nodes, "", &profile.name, Part::Main, |n| {
            let mut taints: Vec<Value> = n
                .pointer("/spec/taints")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            taints.retain(|t| json::str(t, "/key") != "node.kubernetes.io/memory-pressure");
            if under {
                taints.push(
                    json!({"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule", "timeAdded": at}),
                );
            }
            n["spec"]["taints"] = json!(taints);
            Ok(())
        });
        if under && let Ok(node) = result {
            events::emit(
                &self.store,
                node.value(),
                Kind::Warning,
                "EvictionThresholdMet",
                "Attempting to reclaim memory",
                &Source::kubelet(&profile.name),
            );
        }
    }

    /// The eviction message, if the eviction manager chose this pod.
    pub(super) fn take_eviction(&self, uid: &str) -> Option<String> {
        self.evictions.lock().unwrap_or_else(|p| p.into_inner()).remove(uid)
    }
}
