//! Image pulls: the node's image cache (an image pulled there, or being pulled, and when it is
//! ready), each container's pull policy, the pull events, a transient failed attempt, a registry
//! that refuses the pull or does not resolve ([`crate::node::registry`], with the pod's pull
//! secrets), and an image that never pulls (ErrImagePull, ImagePullBackOff with the kubelet's
//! image back-off).

use std::time::Duration;

use serde_json::json;

use super::{Kubelets, PodRun, credentials, transient};
use crate::config::profile::Step;
use crate::control::events::Kind;
use crate::vocab::json;

impl Kubelets {
    /// When `image` is (or will be) on `node`; None if no pull of it started there. Without one,
    /// records that a pull taking `takes` starts now.
    pub(super) fn claim_pull(&self, node: &str, image: &str, takes: Duration) -> Option<std::time::Instant> {
        let mut pulled = self.pulled.lock().unwrap_or_else(|p| p.into_inner());
        let images = pulled.entry(node.to_string()).or_default();
        match images.get(image) {
            Some(at) => Some(*at),
            None => {
                images.insert(image.to_string(), std::time::Instant::now() + takes);
                None
            }
        }
    }

    /// Whether a pull of `image` started on `node` (the image is there, or on its way).
    pub(super) fn known_image(&self, node: &str, image: &str) -> bool {
        let pulled = self.pulled.lock().unwrap_or_else(|p| p.into_inner());
        pulled.get(node).is_some_and(|images| images.contains_key(image))
    }

    /// Puts the images of the cluster's own workloads (the kube-system DaemonSets and
    /// Deployments the add-ons created) in every node's cache, where a registry wants
    /// credentials or does not resolve: the cluster was built while its nodes could pull them
    /// (kubeadm pre-pulls its images, managed node images ship them), and a locked-down
    /// registry does not take them back. Elsewhere they are pulled as any image is.
    pub(super) fn preload_system_images(&self) {
        if !self.profiles.iter().any(|p| p.registries.restricted()) {
            return;
        }
        let mut images = std::collections::BTreeSet::new();
        for plural in ["daemonsets", "deployments"] {
            for workload in self.store.list(crate::store::resources::named("apps", plural), None).0 {
                for path in ["/spec/template/spec/initContainers", "/spec/template/spec/containers"] {
                    for c in json::array(workload.value(), path) {
                        images.insert(json::str(c, "/image").to_string());
                    }
                }
            }
        }
        let now = std::time::Instant::now();
        let mut pulled = self.pulled.lock().unwrap_or_else(|p| p.into_inner());
        for profile in self.profiles.iter() {
            let cache = pulled.entry(profile.name.clone()).or_default();
            for image in images.iter().filter(|i| !i.is_empty()) {
                cache.entry(image.clone()).or_insert(now);
            }
        }
    }
}

impl PodRun {
    /// The image pull policy of container i (`IfNotPresent` when unset).
    fn pull_policy(&self, i: usize) -> String {
        let name = &self.containers[i].plan.name;
        ["/spec/initContainers", "/spec/containers"]
            .iter()
            .flat_map(|p| json::array(self.v(), p))
            .find(|c| json::str(c, "/name") == name)
            .map(|c| json::str(c, "/imagePullPolicy").to_string())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "IfNotPresent".into())
    }

    /// Makes container i's image present on the node. The node's image cache decides: an image
    /// pulled there before is used as is, unless the policy is `Always` — then the kubelet asks
    /// the registry for the digest and finds the layers cached, a short pull
    /// (https://kubernetes.io/docs/concepts/containers/images/#image-pull-policy); an image
    /// another pod is pulling is there when that pull ends; any other is pulled, taking
    /// `timing.windowsPull` when set (Windows images pull for minutes on real nodes). False
    /// when the pod is deleted meanwhile.
    pub(super) async fn pull(&mut self, i: usize, image: &str) -> bool {
        let node = self.profile.name.clone();
        let always = self.pull_policy(i) == "Always";
        let short = self.profile.delay(Step::Pull, self.pod.uid());
        let full = self.profile.timing.first_pull(self.profile.os).unwrap_or(short);
        // A pull that asks the registry (an image not here yet, or policy Always) gets its
        // answer: a refusal for good, or (transient events) one failed attempt.
        if always || !self.k.known_image(&node, image) {
            if let Some(refusal) = self.registry_refusal(image) {
                self.pull_forever(i, image, &refusal).await;
                return false;
            }
            if !self.failed_pull_attempt(i, image).await {
                return false;
            }
        }
        let started = std::time::Instant::now();
        let d = match self.k.claim_pull(&node, image, full) {
            None => full,
            Some(ready) if ready > started => ready - started,
            Some(_) if always => short,
            Some(_) => {
                self.event(
                    Kind::Normal,
                    "Pulled",
                    &format!("Container image \"{image}\" already present on machine"),
                );
                return true;
            }
        };
        self.event(Kind::Normal, "Pulling", &format!("Pulling image \"{image}\""));
        if !self.wait(d).await {
            return false;
        }
        let secs = d.as_secs_f64().max(0.001);
        self.event(
            Kind::Normal,
            "Pulled",
            &format!("Successfully pulled image \"{image}\" in {secs:.3}s ({secs:.3}s including waiting). Image size: 45321876 bytes."),
        );
        true
    }

    /// With `timing.transientEvents`, the first attempt of a chosen share of pulls fails (the
    /// registry times out), and the kubelet backs off before the attempt that succeeds, as real
    /// kubelets report it (ErrImagePull, then ImagePullBackOff). True unless the pod is deleted.
    async fn failed_pull_attempt(&mut self, i: usize, image: &str) -> bool {
        let t = &self.profile.timing;
        if !t.transient_events
            || !transient::pull_attempt_fails(t.seed, &self.profile.name, self.pod.namespace(), self.pod.name(), image)
        {
            return true;
        }
        self.event(Kind::Normal, "Pulling", &format!("Pulling image \"{image}\""));
        if !self.wait(self.profile.delay(Step::Pull, self.pod.uid())).await {
            return false;
        }
        let failed = transient::pull_timeout_message(image);
        let reason = failed
            .strip_prefix(&format!("Failed to pull image {image:?}: "))
            .unwrap_or(&failed)
            .to_string();
        self.event(Kind::Warning, "Failed", &failed);
        self.event(Kind::Warning, "Failed", "Error: ErrImagePull");
        self.containers[i].state = json!({"waiting": {"reason": "ErrImagePull", "message": reason}});
        self.write_status();
        if !self.wait(self.profile.backoff(0) / 2).await {
            return false;
        }
        self.event(Kind::Normal, "BackOff", &format!("Back-off pulling image \"{image}\""));
        self.event(Kind::Warning, "Failed", "Error: ImagePullBackOff");
        self.containers[i].state = json!({"waiting": {"reason": "ImagePullBackOff", "message": format!("Back-off pulling image \"{image}\": ErrImagePull: {reason}")}});
        self.write_status();
        if !self.wait(self.profile.backoff(0) / 2).await {
            return false;
        }
        let waiting = if self.containers[i].init {
            "PodInitializing"
        } else {
            "ContainerCreating"
        };
        self.containers[i].state = json!({"waiting": {"reason": waiting}});
        self.write_status();
        true
    }

    /// Why the registry does not give the pod `image` (the runtime's error), asking the pod's
    /// pull secrets for credentials when the registry wants them; a pull secret the namespace
    /// does not have is reported as the kubelet reports it (`getPullSecretsForPod`).
    pub(super) fn registry_refusal(&self, image: &str) -> Option<String> {
        let repository = crate::node::registry::Manifest::of(image).repository();
        let secrets = credentials::for_repository(&self.k.store, self.v(), &repository);
        if !secrets.missing.is_empty() {
            self.event(
                Kind::Warning,
                "FailedToRetrieveImagePullSecret",
                &format!(
                    "Unable to retrieve some image pull secrets ({}); attempting to pull the image may not succeed.",
                    secrets.missing.join(", ")
                ),
            );
        }
        crate::node::registry::refusal(&self.profile, image, secrets.found)
    }

    /// Pulls that fail with `message` until the pod is deleted, as the kubelet's image manager
    /// retries them (`pkg/kubelet/images/image_manager.go`): each attempt `Pulling`, then the
    /// Warning `Failed to pull image …` and `Error: ErrImagePull`; the image back-off
    /// ([`crate::config::profile::NodeProfile::pull_backoff`]) starts, the next sync within it
    /// reports `BackOff` and `Error: ImagePullBackOff`, and the pull is tried again once it has
    /// passed. Repeated events count up (the event recorder's aggregation).
    pub(super) async fn pull_forever(&mut self, i: usize, image: &str, message: &str) {
        let mut failures = 0;
        loop {
            self.event(Kind::Normal, "Pulling", &format!("Pulling image \"{image}\""));
            if !self.wait(self.profile.delay(Step::Pull, self.pod.uid())).await {
                return;
            }
            failures += 1;
            self.event(
                Kind::Warning,
                "Failed",
                &format!("Failed to pull image \"{image}\": {message}"),
            );
            self.event(Kind::Warning, "Failed", "Error: ErrImagePull");
            self.containers[i].state = json!({"waiting": {"reason": "ErrImagePull", "message": message}});
            self.write_status();
            let backoff = self.profile.pull_backoff(failures);
            if !self.wait(backoff / 2).await {
                return;
            }
            self.event(Kind::Normal, "BackOff", &format!("Back-off pulling image \"{image}\""));
            self.event(Kind::Warning, "Failed", "Error: ImagePullBackOff");
            self.containers[i].state = json!({"waiting": {"reason": "ImagePullBackOff", "message": format!("Back-off pulling image \"{image}\": ErrImagePull: {message}")}});
            self.write_status();
            if !self.wait(backoff / 2).await {
                return;
            }
        }
    }
}
