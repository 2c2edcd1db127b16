//! The pre-pull's report: per node and image what happened (pulled in the kubelet's time,
//! already present, failed with the registry's words, not done), per group its slowest node, and
//! how the pre-pull ended — as a table or as JSON.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use super::groups::Group;
use super::pulls::{Cause, Pull};
use crate::cluster::duration::human;

/// How a pre-pull ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every node has every image.
    Pulled,
    /// Some pull failed for good.
    Failed,
    /// The deadline came before every node was done.
    Deadline,
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

/// A node nothing was pulled onto.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub node: String,
    pub why: String,
}

/// A group with its DaemonSet and slowest node.
#[derive(Debug, Clone, Serialize)]
pub struct GroupReport {
    #[serde(flatten)]
    pub group: Group,
    pub daemonset: String,
    pub slowest: Option<Slowest>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Slowest {
    pub node: String,
    /// The kubelet's pull times added up.
    pub seconds: f64,
}

/// One image on one node.
#[derive(Debug, Clone, Serialize)]
pub struct ImageReport {
    pub image: String,
    /// `pulled`, `present`, `failed` or `not-done`.
    pub result: &'static str,
    /// The kubelet's pull time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// The registry's or runtime's words (failed), or where the pull stood (not done).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ImageReport {
    fn of(image: &str, pull: &Pull) -> Self {
        let mut r = Self {
            image: image.to_string(),
            result: "not-done",
            seconds: None,
            cause: None,
            attempts: None,
            message: None,
        };
        match pull {
            Pull::Pulled(took) => {
                r.result = "pulled";
                r.seconds = took.map(|d| d.as_secs_f64());
            }
            Pull::Present => r.result = "present",
            Pull::Failed { cause, attempts, words } => {
                r.result = "failed";
                r.cause = Some(*cause);
                r.attempts = Some(*attempts);
                r.message = Some(words.clone());
            }
            Pull::Pulling { failed, last } => {
                r.message = Some(match last {
                    Some(words) => format!("pulling after {failed} failed attempt(s): {words}"),
                    None => "pulling".into(),
                });
            }
            Pull::Waiting(why) => r.message = Some(why.clone()),
        }
        r
    }

    /// The table's RESULT column.
    fn result_text(&self) -> String {
        match (self.result, self.seconds) {
            ("pulled", Some(s)) => format!("pulled in {}", human(Duration::from_secs_f64(s))),
            ("pulled", None) => "pulled (time not reported)".into(),
            ("present", _) => "already present".into(),
            ("failed", _) => format!(
                "failed after {} attempt(s), {}: {}",
                self.attempts.unwrap_or(1),
                self.cause.unwrap_or(Cause::Other).says(),
                self.message.as_deref().unwrap_or_default()
            ),
            _ => format!("not done: {}", self.message.as_deref().unwrap_or_default()),
        }
    }
}

/// One node's images.
#[derive(Debug, Clone, Serialize)]
pub struct NodeReport {
    pub node: String,
    pub group: String,
    /// Every image pulled or present.
    pub done: bool,
    /// The kubelet's pull times added up (it pulls one image at a time by default,
    /// `serializeImagePulls`).
    pub pull_seconds: f64,
    pub images: Vec<ImageReport>,
}

impl NodeReport {
    pub fn of(node: &str, group: &str, pulls: &[(String, Pull)]) -> Self {
        let images: Vec<ImageReport> = pulls.iter().map(|(i, p)| ImageReport::of(i, p)).collect();
        Self {
            node: node.to_string(),
            group: group.to_string(),
            done: images.iter().all(|i| matches!(i.result, "pulled" | "present")),
            pull_seconds: images.iter().filter_map(|i| i.seconds).fold(0.0, |a, b| a + b),
            images,
        }
    }
}

/// The whole pre-pull.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub namespace: String,
    /// The pre-pull created the namespace (and deleted it).
    pub namespace_created: bool,
    pub outcome: Outcome,
    /// Wall time, from reading the nodes to the deletion of the DaemonSets.
    pub seconds: f64,
    pub skipped: Vec<Skipped>,
    pub groups: Vec<GroupReport>,
    pub nodes: Vec<NodeReport>,
}

impl Report {
    /// The outcome the nodes' images add up to, unless the pre-pull was cut short.
    pub fn outcome_of(nodes: &[NodeReport], cut: Option<Outcome>) -> Outcome {
        let failed = nodes.iter().flat_map(|n| &n.images).any(|i| i.result == "failed");
        match (failed, cut) {
            (_, Some(Outcome::Interrupted)) => Outcome::Interrupted,
            (true, _) => Outcome::Failed,
            (false, Some(c)) if nodes.iter().any(|n| !n.done) => c,
            (false, _) if nodes.iter().all(|n| n.done) => Outcome::Pulled,
            (false, _) => Outcome::Deadline,
        }
    }

    /// The slowest node of a group (by the kubelet's pull times; None when nothing was pulled).
    pub fn slowest(nodes: &[NodeReport], group: &str) -> Option<Slowest> {
        nodes
            .iter()
            .filter(|n| n.group == group && n.pull_seconds > 0.0)
            .max_by(|a, b| a.pull_seconds.total_cmp(&b.pull_seconds))
            .map(|n| Slowest {
                node: n.node.clone(),
                seconds: n.pull_seconds,
            })
    }

    /// The table: a row per node and image, the totals per group, what was left out, and one
    /// line that says how it ended.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let rows: Vec<[String; 4]> = self
            .nodes
            .iter()
            .flat_map(|n| {
                n.images
                    .iter()
                    .map(|i| [n.node.clone(), n.group.clone(), i.image.clone(), i.result_text()])
            })
            .collect();
        let header = ["NODE", "GROUP", "IMAGE", "RESULT"].map(String::from);
        write_columns(&mut out, &header, &rows);
        out.push('\n');
        let header = [
            "GROUP",
            "NODES",
            "IMAGES",
            "PULLED",
            "PRESENT",
            "FAILED",
            "SLOWEST NODE",
        ]
        .map(String::from);
        let rows: Vec<[String; 7]> = self.groups.iter().map(|g| self.group_row(g)).collect();
        write_columns(&mut out, &header, &rows);
        for g in &self.groups {
            for l in &g.group.left_out {
                let _ = writeln!(out, "{}: not pulled on purpose: {} ({})", g.group.name, l.image, l.why);
            }
        }
        for s in &self.skipped {
            let _ = writeln!(out, "{}: skipped, {}", s.node, s.why);
        }
        let _ = writeln!(out, "{}", self.summary());
        out
    }

    fn group_row(&self, g: &GroupReport) -> [String; 7] {
        let images = self
            .nodes
            .iter()
            .filter(|n| n.group == g.group.name)
            .flat_map(|n| &n.images);
        let count = |result: &str| images.clone().filter(|i| i.result == result).count().to_string();
        let slowest = match &g.slowest {
            Some(s) => format!("{} ({})", s.node, human(Duration::from_secs_f64(s.seconds))),
            None => "-".into(),
        };
        [
            g.group.name.clone(),
            g.group.nodes.len().to_string(),
            g.group.images.len().to_string(),
            count("pulled"),
            count("present"),
            count("failed"),
            slowest,
        ]
    }

    /// One line: how the pre-pull ended.
    pub fn summary(&self) -> String {
        let images = || self.nodes.iter().flat_map(|n| &n.images);
        let (pulled, present) = (
            images().filter(|i| i.result == "pulled").count(),
            images().filter(|i| i.result == "present").count(),
        );
        let nodes = self.nodes.len();
        let not_done: Vec<&str> = self.nodes.iter().filter(|n| !n.done).map(|n| n.node.as_str()).collect();
        match self.outcome {
            Outcome::Pulled => format!(
                "Every node has every image: {nodes} node{}, {pulled} pulled, {present} already present",
                plural(nodes)
            ),
            Outcome::Failed => {
                let failed_on: Vec<&str> = self
                    .nodes
                    .iter()
                    .filter(|n| n.images.iter().any(|i| i.result == "failed"))
                    .map(|n| n.node.as_str())
                    .collect();
                let unfinished = images().filter(|i| i.result == "not-done").count();
                let mut line = format!(
                    "Some pulls failed: {} image(s) on {}",
                    images().filter(|i| i.result == "failed").count(),
                    failed_on.join(", ")
                );
                if unfinished > 0 {
                    let _ = write!(line, "; {unfinished} image(s) not pulled when the pre-pull ended");
                }
                line
            }
            Outcome::Deadline => format!(
                "The deadline (--timeout) came first: not done on {}",
                not_done.join(", ")
            ),
            Outcome::Interrupted => "Interrupted: the DaemonSets were deleted".into(),
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Left-aligned columns, two spaces apart, the last one unpadded.
fn write_columns<const N: usize>(out: &mut String, header: &[String; N], rows: &[[String; N]]) {
    let mut widths = header.clone().map(|h| h.chars().count());
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    for r in std::iter::once(header).chain(rows) {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(widths).enumerate() {
            if i + 1 == N {
                line.push_str(c);
            } else {
                let _ = write!(line, "{c:<w$}  ");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, pulls: &[(&str, Pull)]) -> NodeReport {
        let pulls: Vec<(String, Pull)> = pulls.iter().map(|(i, p)| (i.to_string(), p.clone())).collect();
        NodeReport::of(name, "linux-amd64", &pulls)
    }

    #[test]
    fn the_outcome_follows_the_images_unless_interrupted() {
        let done = node(
            "a",
            &[("x", Pull::Present), ("y", Pull::Pulled(Some(Duration::from_secs(2))))],
        );
        let failed = node(
            "b",
            &[(
                "x",
                Pull::Failed {
                    cause: Cause::Refused,
                    attempts: 3,
                    words: "401".into(),
                },
            )],
        );
        let pulling = node("c", &[("x", Pull::Pulling { failed: 0, last: None })]);
        assert_eq!(Report::outcome_of(std::slice::from_ref(&done), None), Outcome::Pulled);
        assert_eq!(
            Report::outcome_of(&[done.clone(), failed.clone()], None),
            Outcome::Failed
        );
        assert_eq!(
            Report::outcome_of(&[done.clone(), pulling.clone()], Some(Outcome::Deadline)),
            Outcome::Deadline
        );
        assert_eq!(
            Report::outcome_of(std::slice::from_ref(&done), Some(Outcome::Deadline)),
            Outcome::Pulled,
            "everything was done when the deadline came"
        );
        assert_eq!(
            Report::outcome_of(&[failed], Some(Outcome::Interrupted)),
            Outcome::Interrupted
        );
        assert_eq!(done.pull_seconds, 2.0);
    }

    #[test]
    fn the_table_has_a_row_per_node_and_image_and_the_groups_slowest_node() {
        let nodes = vec![
            node(
                "linux-1",
                &[("agnhost", Pull::Pulled(Some(Duration::from_millis(130_512))))],
            ),
            node("linux-2", &[("agnhost", Pull::Present)]),
        ];
        let group = Group {
            name: "linux-amd64".into(),
            os: mixcheck_reports::Os::Linux,
            arch: "amd64".into(),
            build: None,
            pulls_as: None,
            nodes: vec!["linux-1".into(), "linux-2".into()],
            node_selector: Default::default(),
            images: vec!["agnhost".into()],
            left_out: Vec::new(),
        };
        let report = Report {
            namespace: "ns".into(),
            namespace_created: true,
            outcome: Report::outcome_of(&nodes, None),
            seconds: 1.0,
            skipped: vec![Skipped {
                node: "linux-3".into(),
                why: "cordoned (spec.unschedulable)".into(),
            }],
            groups: vec![GroupReport {
                slowest: Report::slowest(&nodes, "linux-amd64"),
                group,
                daemonset: "prepull-linux-amd64-x".into(),
            }],
            nodes,
        };
        let table = report.table();
        assert!(
            table.contains("linux-1  linux-amd64  agnhost  pulled in 2 m 10 s"),
            "{table}"
        );
        assert!(
            table.contains("linux-2  linux-amd64  agnhost  already present"),
            "{table}"
        );
        assert!(table.contains("linux-1 (2 m 10 s)"), "{table}");
        assert!(table.contains("linux-3: skipped, cordoned"), "{table}");
        assert!(
            table.ends_with("Every node has every image: 2 nodes, 1 pulled, 1 already present\n"),
            "{table}"
        );
        let json = serde_json::to_value(&report).expect("json");
        assert_eq!(json["outcome"], "pulled");
        assert_eq!(json["groups"][0]["name"], "linux-amd64");
        assert_eq!(json["groups"][0]["os"], "linux");
        assert_eq!(json["groups"][0]["slowest"]["node"], "linux-1");
        assert_eq!(json["nodes"][0]["images"][0]["seconds"], 130.512);
    }
}
