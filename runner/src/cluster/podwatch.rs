//! The run namespace's pods and their warning events, kept current by one watch each, so that
//! waiting for hundreds of workload pods costs two streams instead of two requests per pod and
//! poll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::Api;
use kube::runtime::{WatchStreamExt as _, watcher};
use tokio::task::JoinHandle;

use crate::cluster::pulls;

/// What the watches have seen so far.
#[derive(Debug, Default)]
struct Seen {
    pods: HashMap<String, Arc<Pod>>,
    /// Pod name → warning events by event name.
    warnings: HashMap<String, HashMap<String, Warning>>,
}

/// A Warning event about a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub reason: String,
    pub message: String,
    /// How often it happened (the event's count: an attempt and its retries).
    pub count: i32,
}

impl Warning {
    /// The warning `e` is, when it is a Warning event.
    pub fn of(e: &Event) -> Option<Self> {
        (e.type_.as_deref() == Some("Warning")).then(|| Self {
            reason: e.reason.clone().unwrap_or_default(),
            message: e.message.clone().unwrap_or_default(),
            count: e.count.unwrap_or(1).max(1),
        })
    }

    /// The Warnings among `events` about pod `pod`, in their order.
    pub fn about(events: &[Event], pod: &str) -> Vec<Self> {
        events
            .iter()
            .filter(|e| e.involved_object.name.as_deref() == Some(pod))
            .filter_map(Self::of)
            .collect()
    }

    /// As [`crate::cluster::pulls`] reads warnings: (reason, message, count).
    pub fn as_pull(&self) -> pulls::Warning<'_> {
        (self.reason.as_str(), self.message.as_str(), self.count)
    }
}

/// Waiting reasons that end a container's attempts for good: its configuration, its command or
/// its image name is wrong, or it keeps crashing.
const TERMINAL_WAITING: &[&str] = &[
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "StartError",
    "ContainerCannotRun",
    "CrashLoopBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
];

/// Whether a container waiting for `reason` (with `message`) will never start by itself: a
/// terminal reason; a pull error saying the image has no variant for the node's platform; or,
/// once the kubelet has failed the pod's pulls `pull_failures` ≥ [`pulls::PULL_FAILURES`]
/// times, one saying the registry refused the pull, did not answer or has no such image (see
/// [`crate::cluster::pulls`]). Before that, and for other pull errors (throttling), the
/// kubelet's retries decide.
pub fn terminal_waiting(reason: &str, message: &str, pull_failures: i32) -> bool {
    let pull = matches!(reason, "ErrImagePull" | "ImagePullBackOff");
    let final_pull = pull
        && match pulls::classify(message) {
            Some(pulls::Failure::Platform) => true,
            Some(_) => pull_failures >= pulls::PULL_FAILURES,
            None => false,
        };
    TERMINAL_WAITING.contains(&reason) || final_pull
}

/// Whether a pod's Ready condition is True.
pub fn is_ready(status: &k8s_openapi::api::core::v1::PodStatus) -> bool {
    status
        .conditions
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// A pod as the watches last saw it, with its warning events.
#[derive(Debug, Clone)]
pub struct PodView {
    /// Shared with the watch: waiters look at a pod on every change, and a deep copy of each
    /// was a tenth of a run's CPU under full coverage.
    pub pod: Option<Arc<Pod>>,
    pub warnings: Vec<Warning>,
}

/// Pods and warning events of one namespace; the watches stop when this is dropped.
pub struct PodWatch {
    seen: Arc<Mutex<Seen>>,
    changed: tokio::sync::watch::Receiver<u64>,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for PodWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seen = lock(&self.seen);
        f.debug_struct("PodWatch")
            .field("pods", &seen.pods.len())
            .field("warned", &seen.warnings.len())
            .finish_non_exhaustive()
    }
}

impl Drop for PodWatch {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl PodWatch {
    /// Starts watching the pods and events of `ns` (the watcher re-lists and re-watches with
    /// back-off when a stream breaks).
    pub fn start(client: &kube::Client, ns: &str) -> Self {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (tx, changed) = tokio::sync::watch::channel(0u64);
        let tx = Arc::new(tx);
        let bump = |tx: &tokio::sync::watch::Sender<u64>| tx.send_modify(|n| *n = n.wrapping_add(1));
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
        let events: Api<Event> = Api::namespaced(client.clone(), ns);
        let pod_task = {
            let (seen, tx) = (seen.clone(), tx.clone());
            tokio::spawn(async move {
                let mut stream = watcher(pods, watcher::Config::default()).default_backoff().boxed();
                while let Some(ev) = stream.next().await {
                    match ev {
                        Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => {
                            if let Some(name) = p.metadata.name.clone() {
                                lock(&seen).pods.insert(name, Arc::new(p));
                            }
                        }
                        Ok(watcher::Event::Delete(p)) => {
                            if let Some(name) = &p.metadata.name {
                                lock(&seen).pods.remove(name);
                            }
                        }
                        Ok(watcher::Event::Init | watcher::Event::InitDone) => {}
                        Err(e) => tracing::debug!("pod watch: {e}"),
                    }
                    bump(&tx);
                }
            })
        };
        let event_task = {
            let (seen, tx) = (seen.clone(), tx.clone());
            tokio::spawn(async move {
                let mut stream = watcher(events, watcher::Config::default()).default_backoff().boxed();
                while let Some(ev) = stream.next().await {
                    match ev {
                        Ok(watcher::Event::Apply(e) | watcher::Event::InitApply(e)) => {
                            if let (Some(pod), Some(name), Some(warning)) =
                                (e.involved_object.name.clone(), e.metadata.name.clone(), Warning::of(&e))
                            {
                                lock(&seen).warnings.entry(pod).or_default().insert(name, warning);
                            }
                        }
                        Ok(_) => {}
                        Err(e) => tracing::debug!("event watch: {e}"),
                    }
                    bump(&tx);
                }
            })
        };
        Self {
            seen,
            changed,
            tasks: vec![pod_task, event_task],
        }
    }

    /// The pod `name` as last seen, with its warnings (in event-name order).
    pub fn view(&self, name: &str) -> PodView {
        let seen = lock(&self.seen);
        let mut warnings: Vec<(&String, &Warning)> =
            seen.warnings.get(name).map(|w| w.iter().collect()).unwrap_or_default();
        warnings.sort_by(|a, b| a.0.cmp(b.0));
        PodView {
            pod: seen.pods.get(name).cloned(),
            warnings: warnings.into_iter().map(|(_, w)| w.clone()).collect(),
        }
    }

    /// Whether the watch has seen pod `name` (and not its deletion).
    pub fn has(&self, name: &str) -> bool {
        lock(&self.seen).pods.contains_key(name)
    }

    /// A receiver that changes whenever the watches see something.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.clone()
    }
}

/// The state, even if a watch task panicked while holding it (its data is still whole: each
/// update is one insert or remove).
fn lock(seen: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    seen.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// A pull the registry failed for now (a timeout, a 401, a name that does not resolve, a
    /// missing tag) is retried by the kubelet — a blip real clusters show on the way to Running
    /// — until it has failed three times; throttling never decides; a platform without a
    /// variant, a bad configuration or a crash loop decides at once.
    #[rstest]
    #[case::pull_timeout(
        "ErrImagePull",
        "failed to pull and unpack image \"x\": dial tcp 10.0.0.1:443: i/o timeout",
        1,
        false
    )]
    #[case::pull_timeout_thrice(
        "ErrImagePull",
        "failed to pull and unpack image \"x\": dial tcp 10.0.0.1:443: i/o timeout",
        3,
        true
    )]
    #[case::unauthorized_once(
        "ErrImagePull",
        "unexpected status from HEAD request to https://r/v2/x/manifests/1: 401 Unauthorized",
        1,
        false
    )]
    #[case::unauthorized_thrice(
        "ImagePullBackOff",
        "Back-off pulling image \"x\": ErrImagePull: 401 Unauthorized",
        3,
        true
    )]
    #[case::pull_backoff("ImagePullBackOff", "Back-off pulling image \"x\"", 9, false)]
    #[case::throttled("ErrImagePull", "429 Too Many Requests", 9, false)]
    #[case::creating("ContainerCreating", "", 0, false)]
    #[case::no_such_image_once("ErrImagePull", "failed to resolve reference \"x\": not found", 1, false)]
    #[case::no_such_image_thrice("ErrImagePull", "failed to resolve reference \"x\": not found", 3, true)]
    #[case::wrong_platform(
        "ErrImagePull",
        "no matching manifest for windows/amd64 10.0.17763 in the manifest list entries",
        1,
        true
    )]
    #[case::config("CreateContainerConfigError", "secret \"s\" not found", 0, true)]
    #[case::crash_loop("CrashLoopBackOff", "back-off 10s restarting failed container", 0, true)]
    fn only_terminal_waiting_reasons_end_a_pod(
        #[case] reason: &str,
        #[case] message: &str,
        #[case] failures: i32,
        #[case] terminal: bool,
    ) {
        assert_eq!(terminal_waiting(reason, message, failures), terminal);
    }
}
