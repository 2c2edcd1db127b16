//! Kubelet admission of a pod's resources: the node's `pods`, CPU, memory and scalar resources
//! against its allocatable (the upstream `OutOf<resource>` rejections), the reservation an
//! admitted pod holds, and giving it back.

use super::PodRun;
use crate::control::scheduler::PodNeeds;
use crate::vocab::quantity::Quantity;

impl PodRun {
    /// Resource admission (reason `OutOf<resource>`: OutOfcpu, OutOfmemory, OutOfhugepages-2Mi, as
    /// `pkg/kubelet/lifecycle/predicate.go` formats it): the pod must fit in what the node's
    /// admitted pods leave of its allocatable. Admitting it reserves its requests.
    pub(super) fn admit_resources(&self) -> Option<(String, String)> {
        let needs = PodNeeds::from_pod(self.v());
        let alloc = |k: &str| {
            self.profile
                .allocatable
                .get(k)
                .and_then(|v| Quantity::parse(v))
                .unwrap_or_default()
        };
        let mut admitted = self.k.admitted.lock().unwrap_or_else(|p| p.into_inner());
        let mut slots = self.k.pod_slots.lock().unwrap_or_else(|p| p.into_inner());
        // The pod count first, as upstream's fit check does: every admitted pod that has not
        // terminated counts, DaemonSet and system pods included (maxPods).
        let used_pods = slots.get(&self.profile.name).copied().unwrap_or_default();
        let max_pods = alloc("pods").value();
        if used_pods + 1 > max_pods {
            return Some((
                "OutOfpods".into(),
                format!(
                    "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: {used_pods}, capacity: {max_pods}"
                ),
            ));
        }
        let (used_cpu, used_mem) = admitted.get(&self.profile.name).copied().unwrap_or_default();
        for (res, need, used) in [("cpu", needs.cpu, used_cpu), ("memory", needs.memory, used_mem)] {
            let cap = alloc(res);
            if need.milli() > 0 && used + need > cap {
                let fmt = |q: Quantity| {
                    if res == "cpu" {
                        q.milli().to_string()
                    } else {
                        q.value().to_string()
                    }
                };
                return Some((
                    format!("OutOf{res}"),
                    format!(
                        "Pod was rejected: Node didn't have enough resource: {res}, requested: {}, used: {}, capacity: {}",
                        fmt(need),
                        fmt(used),
                        fmt(cap)
                    ),
                ));
            }
        }
        // Scalar resources (hugepages-*, extended resources) against what the node advertises:
        // pods bound past the scheduler are refused as upstream's predicate does (their use by
        // other pods is the scheduler's to count; it is not tracked here).
        for (res, need) in &needs.scalar {
            let cap = alloc(res);
            if *need > cap {
                return Some((
                    format!("OutOf{res}"),
                    format!(
                        "Pod was rejected: Node didn't have enough resource: {res}, requested: {}, used: 0, capacity: {}",
                        need.value(),
                        cap.value()
                    ),
                ));
            }
        }
        admitted.insert(
            self.profile.name.clone(),
            (used_cpu + needs.cpu, used_mem + needs.memory),
        );
        slots.insert(self.profile.name.clone(), used_pods + 1);
        None
    }

    /// Gives back the pod's place in the node's `pods` count (once it terminated or left).
    pub(super) fn release_slot(&mut self) {
        if !std::mem::take(&mut self.slot) {
            return;
        }
        let mut slots = self.k.pod_slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = slots.get_mut(&self.profile.name) {
            *n = (*n - 1).max(0);
        }
    }

    /// Gives back what [`Self::admit_resources`] reserved.
    pub(super) fn release_resources(&self) {
        let needs = PodNeeds::from_pod(self.v());
        let mut admitted = self.k.admitted.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((cpu, mem)) = admitted.get_mut(&self.profile.name) {
            *cpu = *cpu - needs.cpu;
            *mem = *mem - needs.memory;
        }
    }
}
