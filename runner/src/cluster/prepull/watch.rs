//! Following the pulls until every node is done: the pre-pull's pods and the events in its
//! namespace, read every few seconds; each node's images as they stand kept for the report; and
//! a progress line per change (a pull begun, a failed attempt, an image pulled) and, while an
//! image pulls, every half minute ("win2022-1: pulling …servercore:ltsc2022, 2 m 10 s").

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams};

use super::daemonset;
use super::groups::Group;
use super::objects::within;
use super::observe::{Seen, node_pulls};
use super::pulls::{ATTEMPTS, Pull};
use crate::cluster::duration::{elapsed, human};

/// How often the pods and events are read.
const POLL: Duration = Duration::from_secs(2);
/// How often a pull still under way is said again, with how long it has taken.
const HEARTBEAT: Duration = Duration::from_secs(30);

/// Each node's images as they stand, by (group, node).
pub type Latest = Mutex<BTreeMap<(String, String), Vec<(String, Pull)>>>;

/// Every node of `groups` with its images waiting: what the report says of a node nothing was
/// seen of yet.
pub fn initial(groups: &[Group]) -> BTreeMap<(String, String), Vec<(String, Pull)>> {
    groups
        .iter()
        .flat_map(|g| {
            g.nodes.iter().map(move |n| {
                let images = g
                    .images
                    .iter()
                    .map(|i| (i.clone(), Pull::Waiting("no pod yet".into())))
                    .collect();
                ((g.name.clone(), n.clone()), images)
            })
        })
        .collect()
}

/// What was last said of one image on one node.
struct Said {
    kind: u8,
    since: Instant,
    at: Instant,
    failed: u32,
}

/// The progress lines: each change of an image on a node, said once.
#[derive(Default)]
struct Tracker {
    said: BTreeMap<(String, String), Said>,
    nodes_done: std::collections::BTreeSet<String>,
    waiting: BTreeMap<String, String>,
}

fn kind(p: &Pull) -> u8 {
    match p {
        Pull::Waiting(_) => 0,
        Pull::Pulling { .. } => 1,
        Pull::Pulled(_) => 2,
        Pull::Present => 3,
        Pull::Failed { .. } => 4,
    }
}

impl Tracker {
    /// Says what changed on `node` since the last look.
    fn update(&mut self, node: &str, pulls: &[(String, Pull)], say: &dyn Fn(&str)) {
        let now = Instant::now();
        for (image, pull) in pulls {
            let key = (node.to_string(), image.clone());
            let before = self.said.get(&key);
            let k = kind(pull);
            let changed = before.is_none_or(|s| s.kind != k);
            let line = match pull {
                Pull::Waiting(why) => {
                    let worth = why.starts_with("not scheduled:") || why.starts_with("no pod yet (");
                    if worth && self.waiting.get(node) != Some(why) {
                        self.waiting.insert(node.to_string(), why.clone());
                        say(&format!("{node}: {why}"));
                    }
                    None
                }
                Pull::Pulling { failed, last } => {
                    let since = before.filter(|s| s.kind == 1).map_or(now, |s| s.since);
                    let newly_failed = before.map_or(0, |s| s.failed) < *failed;
                    let line = if newly_failed {
                        Some(format!(
                            "{node}: pull of {image} failed (attempt {failed} of {ATTEMPTS}; the kubelet retries): {}",
                            last.as_deref().unwrap_or_default()
                        ))
                    } else if changed {
                        Some(format!("{node}: pulling {image}"))
                    } else if before.is_some_and(|s| now.duration_since(s.at) >= HEARTBEAT) {
                        Some(format!(
                            "{node}: pulling {image}, {}",
                            elapsed(now.duration_since(since))
                        ))
                    } else {
                        None
                    };
                    let at = if line.is_some() {
                        now
                    } else {
                        before.map_or(now, |s| s.at)
                    };
                    self.said.insert(
                        key,
                        Said {
                            kind: k,
                            since,
                            at,
                            failed: *failed,
                        },
                    );
                    if let Some(l) = line {
                        say(&l);
                    }
                    continue;
                }
                Pull::Pulled(took) if changed => Some(match took {
                    Some(d) => format!("{node}: pulled {image} in {}", human(*d)),
                    None => format!("{node}: pulled {image}"),
                }),
                Pull::Present if changed => Some(format!("{node}: {image} already present")),
                Pull::Failed { cause, attempts, words } if changed => Some(format!(
                    "{node}: {image} failed after {attempts} attempt(s), {}: {words}",
                    cause.says()
                )),
                _ => None,
            };
            if changed {
                self.said.insert(
                    key,
                    Said {
                        kind: k,
                        since: now,
                        at: now,
                        failed: 0,
                    },
                );
            }
            if let Some(l) = line {
                say(&l);
            }
        }
        if pulls.iter().all(|(_, p)| p.settled()) && self.nodes_done.insert(node.to_string()) {
            let failed = pulls.iter().filter(|(_, p)| matches!(p, Pull::Failed { .. })).count();
            let took: Duration = pulls
                .iter()
                .filter_map(|(_, p)| match p {
                    Pull::Pulled(Some(d)) => Some(*d),
                    _ => None,
                })
                .sum();
            say(&match failed {
                0 => format!("{node}: done, {} image(s), {} pulling", pulls.len(), human(took)),
                n => format!("{node}: done, {n} of {} image(s) failed", pulls.len()),
            });
        }
    }
}

/// The pre-pull's pods and the events of its namespace.
async fn look(client: &kube::Client, ns: &str, id: &str) -> Result<Seen, super::PrepullError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let selector = format!("{}={id}", crate::cluster::fixture::RUN_LABEL);
    let pods = within(
        "listing the pre-pull's pods",
        pods.list(&ListParams::default().labels(&selector)),
    )
    .await?;
    let events = within("listing the events", events.list(&ListParams::default())).await?;
    Ok(Seen {
        pods: pods.items,
        events: events.items,
    })
}

/// Follows the pulls until every node of `groups` has every image pulled or failed for good,
/// keeping each node's images in `latest`. A failed look is said (once per distinct failure)
/// and tried again: the deadline ends a cluster that stopped answering.
pub async fn follow(client: &kube::Client, ns: &str, id: &str, groups: &[Group], latest: &Latest, say: &dyn Fn(&str)) {
    let mut tracker = Tracker::default();
    let mut last_error = String::new();
    loop {
        match look(client, ns, id).await {
            Ok(seen) => {
                let mut all = true;
                for g in groups {
                    let ds = daemonset::name(id, &g.name);
                    for node in &g.nodes {
                        let pulls = node_pulls(g, &ds, node, &seen);
                        all &= pulls.iter().all(|(_, p)| p.settled());
                        tracker.update(node, &pulls, say);
                        let mut l = latest.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        l.insert((g.name.clone(), node.clone()), pulls);
                    }
                }
                if all {
                    return;
                }
            }
            Err(e) => {
                let text = e.to_string();
                if text != last_error {
                    say(&format!("mixcheck: {text} (trying again)"));
                    last_error = text;
                }
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::prepull::pulls::Cause;
    use std::cell::RefCell;

    fn lines(steps: &[Vec<(String, Pull)>]) -> Vec<String> {
        let said = RefCell::new(Vec::new());
        let say = |l: &str| said.borrow_mut().push(l.to_string());
        let mut t = Tracker::default();
        for pulls in steps {
            t.update("win2022-1", pulls, &say);
        }
        said.into_inner()
    }

    fn at(pull: Pull) -> Vec<(String, Pull)> {
        vec![("servercore:ltsc2022".to_string(), pull)]
    }

    #[test]
    fn each_change_is_said_once() {
        let pulling = Pull::Pulling { failed: 0, last: None };
        let said = lines(&[
            at(Pull::Waiting("waiting for the kubelet".into())),
            at(pulling.clone()),
            at(pulling),
            at(Pull::Pulling {
                failed: 1,
                last: Some("i/o timeout".into()),
            }),
            at(Pull::Pulled(Some(Duration::from_millis(130_512)))),
            at(Pull::Pulled(Some(Duration::from_millis(130_512)))),
        ]);
        assert_eq!(
            said,
            [
                "win2022-1: pulling servercore:ltsc2022",
                "win2022-1: pull of servercore:ltsc2022 failed (attempt 1 of 3; the kubelet retries): i/o timeout",
                "win2022-1: pulled servercore:ltsc2022 in 2 m 10 s",
                "win2022-1: done, 1 image(s), 2 m 10 s pulling",
            ]
        );
    }

    #[test]
    fn a_terminal_failure_names_the_image_the_cause_and_the_words() {
        let said = lines(&[at(Pull::Failed {
            cause: Cause::Refused,
            attempts: 3,
            words: "401 Unauthorized".into(),
        })]);
        assert_eq!(
            said,
            [
                "win2022-1: servercore:ltsc2022 failed after 3 attempt(s), the registry refused the pull: 401 Unauthorized",
                "win2022-1: done, 1 of 1 image(s) failed",
            ]
        );
    }

    #[test]
    fn a_scheduling_problem_is_said_once() {
        let w = || at(Pull::Waiting("not scheduled: 0/4 nodes are available".into()));
        assert_eq!(
            lines(&[w(), w()]),
            ["win2022-1: not scheduled: 0/4 nodes are available"]
        );
    }
}
