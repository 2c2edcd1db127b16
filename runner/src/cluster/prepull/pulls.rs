//! One image on one node, as the kubelet reports it: its pull events read back (kubernetes
//! `pkg/kubelet/images/image_manager.go`, `EnsureImageExists`: `Pulling image %q`, `Successfully
//! pulled image %q in %v` — from 1.28 with `(%v including waiting)`, from 1.30 with `Image size:
//! %v bytes.` —, `Container image %q already present on machine`, `Failed to pull image %q: %v`,
//! `Back-off pulling image %q`, `Failed to inspect image %q: %v`, `Container image %q is not
//! present with pull policy of Never`), and the state they add up to.

use std::time::Duration;

use serde::Serialize;

use crate::cluster::duration::parse_go;

/// How many failed attempts make a pull terminal: the kubelet's first attempt and two retries
/// after back-off (as mixcheck run counts FailedCreatePodSandBox).
pub const ATTEMPTS: u32 = 3;

/// What one kubelet event says about a pull.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Pulling,
    /// `Successfully pulled image … in D`: the pull took D (None: not read).
    Pulled(Option<Duration>),
    Present,
    /// `Failed to pull image …: words`, `count` times.
    Failed {
        count: u32,
        words: String,
    },
    /// The image cannot be pulled at all: a reference the kubelet cannot parse or inspect, or
    /// pull policy Never.
    Refused(String),
}

/// The prefix the event recorder puts on a message it aggregated from similar ones
/// (client-go `tools/record/events_cache.go`).
const COMBINED: &str = "(combined from similar events): ";

/// The image an event names and what it says, for the kubelet's pull events (None for the
/// others: `Error: ErrImagePull`, container starts, …).
pub fn read_event(reason: &str, message: &str, count: u32) -> Option<(String, Step)> {
    let message = message.strip_prefix(COMBINED).unwrap_or(message);
    let image = quoted(message)?;
    let step = match reason {
        "Pulling" if message.starts_with("Pulling image ") => Step::Pulling,
        "Pulled" if message.starts_with("Successfully pulled image ") => Step::Pulled(took(message)),
        "Pulled" if message.contains("already present on machine") => Step::Present,
        "Failed" if message.starts_with("Failed to pull image ") => Step::Failed {
            count: count.max(1),
            words: after_image(message, &image),
        },
        "Failed" | "InspectFailed" if message.starts_with("Failed to inspect image ") => {
            Step::Refused(after_image(message, &image))
        }
        "InspectFailed" | "InvalidImageName" | "ErrImageNeverPull" => Step::Refused(message.to_string()),
        _ => return None,
    };
    Some((image, step))
}

/// The first double-quoted text (`%q` of the image reference, which has no quotes or escapes).
fn quoted(message: &str) -> Option<String> {
    let (_, rest) = message.split_once('"')?;
    let (inner, _) = rest.split_once('"')?;
    Some(inner.to_string())
}

/// What follows `"image": ` in a message: the runtime's or registry's own words.
fn after_image(message: &str, image: &str) -> String {
    let marker = format!("\"{image}\": ");
    match message.split_once(&marker) {
        Some((_, words)) => words.trim().to_string(),
        None => message.to_string(),
    }
}

/// The pull time of a `Successfully pulled image "X" in 2m10.512s (…)` message.
fn took(message: &str) -> Option<Duration> {
    let (_, rest) = message.split_once("\" in ")?;
    let text = rest.split([' ', '(']).next()?;
    parse_go(text.trim_end_matches('.'))
}

/// Why a pull failed for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// The registry refused the credentials or the repository (401, 403, denied).
    Refused,
    /// The registry did not resolve or answer (no such host, i/o timeout, connection refused).
    Unreachable,
    /// The registry has no such manifest, or none for the node's platform.
    NoManifest,
    /// The kubelet would not pull the reference at all.
    Invalid,
    /// The DaemonSet could not create the node's pod (an admission policy, a quota).
    NotCreated,
    /// Anything else the runtime said.
    Other,
}

impl Cause {
    /// The cause of a failed pull, from the runtime's words: the kinds a run tells apart
    /// ([`crate::cluster::pulls::classify`]), anything else the runtime said.
    pub fn of(words: &str) -> Self {
        use crate::cluster::pulls::{Failure, classify};
        match classify(words) {
            Some(Failure::Refused) => Self::Refused,
            Some(Failure::Unreachable) => Self::Unreachable,
            Some(Failure::Platform | Failure::Missing) => Self::NoManifest,
            None => Self::Other,
        }
    }

    pub fn says(self) -> &'static str {
        match self {
            Self::Refused => "the registry refused the pull",
            Self::Unreachable => "the registry did not answer",
            Self::NoManifest => "no such manifest",
            Self::Invalid => "the kubelet refused the image",
            Self::NotCreated => "the DaemonSet could not create the pod",
            Self::Other => "the pull failed",
        }
    }
}

/// Where one image stands on one node.
#[derive(Debug, Clone, PartialEq)]
pub enum Pull {
    /// No pull began: why (no pod yet, not scheduled, the kubelet has not reached it).
    Waiting(String),
    /// Pulling, after `failed` failed attempts (the last one's words).
    Pulling {
        failed: u32,
        last: Option<String>,
    },
    /// Pulled, in the time the kubelet reported (None: not reported, as when only the
    /// container's imageID shows it).
    Pulled(Option<Duration>),
    Present,
    /// Failed for good.
    Failed {
        cause: Cause,
        attempts: u32,
        words: String,
    },
}

impl Pull {
    /// Pulled, present or failed for good.
    pub fn settled(&self) -> bool {
        matches!(self, Self::Pulled(_) | Self::Present | Self::Failed { .. })
    }

    /// What the steps read for one image add up to, given the pod's `waiting` reason (None:
    /// no pod) and whether the container status carries an imageID.
    pub fn from_steps(steps: &[Step], image_id: bool, waiting: &str) -> Self {
        if let Some(took) = steps.iter().find_map(|s| match s {
            Step::Pulled(d) => Some(*d),
            _ => None,
        }) {
            return Self::Pulled(took);
        }
        if steps.contains(&Step::Present) {
            return Self::Present;
        }
        if image_id {
            return Self::Pulled(None);
        }
        if let Some(words) = steps.iter().find_map(|s| match s {
            Step::Refused(w) => Some(w.clone()),
            _ => None,
        }) {
            return Self::Failed {
                cause: Cause::Invalid,
                attempts: 1,
                words,
            };
        }
        let mut failed = 0u32;
        let mut last = None;
        for s in steps {
            if let Step::Failed { count, words } = s {
                failed = failed.saturating_add(*count);
                last = Some(words.clone());
            }
        }
        match last {
            Some(words) if failed >= ATTEMPTS => Self::Failed {
                cause: Cause::of(&words),
                attempts: failed,
                words,
            },
            last if failed > 0 || steps.contains(&Step::Pulling) => Self::Pulling { failed, last },
            _ => Self::Waiting(waiting.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const SERVERCORE: &str = "mcr.microsoft.com/windows/servercore:ltsc2022";

    #[rstest]
    #[case::real_kubelet(
        "Successfully pulled image \"mcr.microsoft.com/windows/servercore:ltsc2022\" in 2m10.512s (2m10.512s including waiting). Image size: 2312345678 bytes.",
        Some(130_512)
    )]
    #[case::bundled(
        "Successfully pulled image \"mcr.microsoft.com/windows/servercore:ltsc2022\" in 1.234s (1.234s including waiting). Image size: 45321876 bytes.",
        Some(1_234)
    )]
    #[case::before_1_28(
        "Successfully pulled image \"mcr.microsoft.com/windows/servercore:ltsc2022\" in 850ms",
        Some(850)
    )]
    #[case::kubelet_1_28(
        "Successfully pulled image \"mcr.microsoft.com/windows/servercore:ltsc2022\" in 1h2m3s (1h2m4s including waiting)",
        Some(3_723_000)
    )]
    #[case::unreadable(
        "Successfully pulled image \"mcr.microsoft.com/windows/servercore:ltsc2022\" in a while",
        None
    )]
    fn a_pulled_event_gives_the_kubelets_time(#[case] message: &str, #[case] millis: Option<u64>) {
        let (image, step) = read_event("Pulled", message, 1).expect("a pull event");
        assert_eq!(image, SERVERCORE);
        assert_eq!(step, Step::Pulled(millis.map(Duration::from_millis)));
    }

    #[rstest]
    #[case::pulling("Pulling", "Pulling image \"X:1\"", Step::Pulling)]
    #[case::present("Pulled", "Container image \"X:1\" already present on machine", Step::Present)]
    #[case::present_1_33(
        "Pulled",
        "Container image \"X:1\" already present on machine and can be accessed by the pod",
        Step::Present
    )]
    #[case::failed(
        "Failed",
        "Failed to pull image \"X:1\": rpc error: code = NotFound desc = not found",
        Step::Failed { count: 2, words: "rpc error: code = NotFound desc = not found".into() }
    )]
    #[case::combined(
        "Failed",
        "(combined from similar events): Failed to pull image \"X:1\": dial tcp: lookup r: no such host",
        Step::Failed { count: 2, words: "dial tcp: lookup r: no such host".into() }
    )]
    #[case::never("ErrImageNeverPull", "Container image \"X:1\" is not present with pull policy of Never", Step::Refused("Container image \"X:1\" is not present with pull policy of Never".into()))]
    #[case::inspect("InspectFailed", "Failed to inspect image \"X:1\": boom", Step::Refused("boom".into()))]
    fn the_kubelets_pull_events_are_read(#[case] reason: &str, #[case] message: &str, #[case] step: Step) {
        assert_eq!(read_event(reason, message, 2), Some(("X:1".to_string(), step)));
    }

    #[rstest]
    #[case::err_image_pull("Failed", "Error: ErrImagePull")]
    #[case::backoff_error("Failed", "Error: ImagePullBackOff")]
    #[case::started("Started", "Started container c0")]
    #[case::created("Created", "Created container: c0")]
    fn other_events_say_nothing_about_a_pull(#[case] reason: &str, #[case] message: &str) {
        assert_eq!(read_event(reason, message, 1), None);
    }

    #[rstest]
    #[case::unauthorized(
        "failed to authorize: failed to fetch oauth token: unexpected status: 401 Unauthorized",
        Cause::Refused
    )]
    #[case::denied(
        "pull access denied, repository does not exist or may require authorization",
        Cause::Refused
    )]
    #[case::forbidden("unexpected status from HEAD request: 403 Forbidden", Cause::Refused)]
    #[case::no_host("dial tcp: lookup mirror.example.com: no such host", Cause::Unreachable)]
    #[case::timeout("dial tcp 10.0.0.1:443: i/o timeout", Cause::Unreachable)]
    #[case::refused("dial tcp 10.0.0.1:443: connect: connection refused", Cause::Unreachable)]
    #[case::not_found("failed to resolve reference \"r/x:1\": r/x:1: not found", Cause::NoManifest)]
    #[case::manifest_unknown("manifest for r/x:1 not found: manifest unknown", Cause::NoManifest)]
    #[case::platform("no match for platform in manifest: not found", Cause::NoManifest)]
    #[case::other("disk full", Cause::Other)]
    fn a_failure_is_classed_by_the_registrys_words(#[case] words: &str, #[case] cause: Cause) {
        assert_eq!(Cause::of(words), cause);
    }

    fn failed(count: u32) -> Step {
        Step::Failed {
            count,
            words: "dial tcp: lookup r: no such host".into(),
        }
    }

    #[test]
    fn one_failed_attempt_is_retried_and_the_third_is_terminal() {
        let once = Pull::from_steps(&[Step::Pulling, failed(1)], false, "");
        assert!(
            matches!(
                once,
                Pull::Pulling {
                    failed: 1,
                    last: Some(_)
                }
            ),
            "{once:?}"
        );
        assert!(!once.settled());
        let twice = Pull::from_steps(&[failed(2)], false, "");
        assert!(matches!(twice, Pull::Pulling { failed: 2, .. }), "{twice:?}");
        let thrice = Pull::from_steps(&[Step::Pulling, failed(3)], false, "");
        assert_eq!(
            thrice,
            Pull::Failed {
                cause: Cause::Unreachable,
                attempts: 3,
                words: "dial tcp: lookup r: no such host".into()
            }
        );
        assert!(thrice.settled());
    }

    #[test]
    fn a_pull_that_succeeds_after_a_failed_attempt_is_pulled() {
        let d = Some(Duration::from_secs(3));
        assert_eq!(
            Pull::from_steps(&[Step::Pulling, failed(1), Step::Pulled(d)], false, ""),
            Pull::Pulled(d)
        );
    }

    #[rstest]
    #[case::nothing(&[], false, Pull::Waiting("ContainerCreating".into()))]
    #[case::pulling(&[Step::Pulling], false, Pull::Pulling { failed: 0, last: None })]
    #[case::present(&[Step::Present], false, Pull::Present)]
    #[case::image_id_only(&[], true, Pull::Pulled(None))]
    #[case::pulled_wins(&[Step::Present, Step::Pulled(None)], true, Pull::Pulled(None))]
    fn steps_add_up_to_a_state(#[case] steps: &[Step], #[case] image_id: bool, #[case] pull: Pull) {
        assert_eq!(Pull::from_steps(steps, image_id, "ContainerCreating"), pull);
    }
}
