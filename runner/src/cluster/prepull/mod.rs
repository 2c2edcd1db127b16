//! `mixcheck prepull`: the fixture images pulled onto every schedulable node once, ahead of a
//! run — a DaemonSet per OS and Windows build ([`groups`], [`daemonset`]), followed through the
//! kubelet's pull events ([`watch`], [`observe`], [`pulls`]) until every node is done or the
//! deadline, then deleted also on Ctrl-C and at the deadline ([`objects`]), and a report of each
//! node's pull times ([`report`]).

mod daemonset;
mod groups;
mod objects;
mod observe;
mod pulls;
mod report;
mod watch;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};

pub use report::{Outcome, Report};

use crate::cluster::fixture::FixtureImage;
use crate::cluster::progress::Progress;

/// Why a pre-pull could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum PrepullError {
    /// A bad command-line value (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// The API server did not answer, or refused the credentials (exit code 3).
    #[error(
        "{what}: {cause}\n  check: that the cluster answers and the credentials allow it (`kubectl auth can-i create daemonsets`); deploy/rbac.yaml grants what a pre-pull needs"
    )]
    Unreachable { what: String, cause: String },
    /// The API server refused a call for another reason.
    #[error("{what}: {cause}")]
    Api { what: String, cause: String },
    /// No node to pull onto.
    #[error("no node to pull onto: {0}")]
    NoNodes(String),
}

impl PrepullError {
    /// A kube error of the call `what`: refused credentials or no answer are
    /// [`PrepullError::Unreachable`].
    pub fn from_kube(what: &str, e: kube::Error) -> Self {
        match &e {
            kube::Error::Api(s) if s.code == 401 || s.code == 403 => Self::Unreachable {
                what: what.to_string(),
                cause: format!("{} ({})", s.message, s.code),
            },
            kube::Error::Api(_) => Self::Api {
                what: what.to_string(),
                cause: e.to_string(),
            },
            _ => Self::Unreachable {
                what: what.to_string(),
                cause: e.to_string(),
            },
        }
    }
}

/// What the command line asks of a pre-pull.
#[derive(Debug, Clone)]
pub struct Options {
    /// An existing namespace to pull in (None: create one).
    pub namespace: Option<String>,
    /// The registry mirrors the images are pulled from (`--image-registry`, `--image-registry-map`).
    pub mirrors: crate::cluster::registry::Mirrors,
    /// How long the whole pre-pull may take.
    pub timeout: Duration,
    pub quiet: bool,
}

/// The nodes as a pre-pull sees them.
async fn read_nodes(client: &kube::Client) -> Result<Vec<groups::PullNode>, PrepullError> {
    let api: Api<Node> = Api::all(client.clone());
    let nodes = objects::within("listing the nodes", api.list(&ListParams::default())).await?;
    Ok(nodes.items.iter().map(groups::PullNode::of).collect())
}

/// Says which nodes are skipped and what each group pulls.
fn describe(nodes: &[groups::PullNode], groups: &[groups::Group], progress: &Progress) {
    for n in nodes {
        if let Some(why) = &n.skipped {
            progress.say(&format!("{}: skipped, {why}", n.name));
        }
    }
    for g in groups {
        let build = match (g.build, g.pulls_as) {
            (Some(b), Some(a)) if a != b => format!(" (pulls as {a})"),
            _ => String::new(),
        };
        progress.say(&format!(
            "{}{build}: {} node(s) ({}), {} image(s)",
            g.name,
            g.nodes.len(),
            g.nodes.join(", "),
            g.images.len()
        ));
        for l in &g.left_out {
            progress.say(&format!("{}: not pulling {} ({})", g.name, l.image, l.why));
        }
    }
}

/// How the work on the cluster ended.
enum Ended {
    Done(Result<(), PrepullError>),
    Cut(Outcome),
}

/// Pulls the fixture images onto every schedulable node of the cluster `client` talks to:
/// reads the nodes, creates the namespace (unless given one) and a DaemonSet per group, follows
/// the pulls until every node is done, the deadline or Ctrl-C, and deletes what it created in
/// every case. The report says per node and image what happened.
pub async fn run(client: &kube::Client, images: &[FixtureImage], options: &Options) -> Result<Report, PrepullError> {
    let started = Instant::now();
    let deadline = started + options.timeout;
    let progress = Progress::new(options.quiet, false);
    let say = |m: &str| progress.say(m);
    let nodes = read_nodes(client).await?;
    let groups = groups::plan(&nodes, images, &options.mirrors);
    describe(&nodes, &groups, &progress);
    if groups.is_empty() {
        return Err(PrepullError::NoNodes(if nodes.is_empty() {
            "the cluster has no nodes".into()
        } else {
            "every node is skipped (see above)".into()
        }));
    }
    let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let objects = objects::Objects {
        client,
        id: &id,
        created: Default::default(),
    };
    let latest: watch::Latest = std::sync::Mutex::new(watch::initial(&groups));
    let work = async {
        let ns = objects.namespace(options.namespace.as_deref()).await?;
        say(&format!("Pulling in namespace {ns}"));
        for g in &groups {
            objects.daemonset(&ns, daemonset::manifest(&id, &ns, g)).await?;
        }
        watch::follow(client, &ns, &id, &groups, &latest, &say).await;
        Ok(())
    };
    let ended = tokio::select! {
        r = work => Ended::Done(r),
        () = crate::cluster::signal::interrupted() => Ended::Cut(Outcome::Interrupted),
        () = tokio::time::sleep_until(deadline.into()) => Ended::Cut(Outcome::Deadline),
    };
    if let Ended::Cut(Outcome::Interrupted) = ended {
        progress.warn("Interrupted: deleting the DaemonSets");
    }
    objects.remove(&say, &|m| progress.warn(m)).await;
    let cut = match ended {
        Ended::Done(Err(e)) => return Err(e),
        Ended::Done(Ok(())) => None,
        Ended::Cut(c) => Some(c),
    };
    let (namespace, namespace_created) = objects
        .created
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .namespace
        .clone()
        .unwrap_or_default();
    let latest = latest.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    let nodes_report: Vec<report::NodeReport> = latest
        .iter()
        .map(|((group, node), pulls)| report::NodeReport::of(node, group, pulls))
        .collect();
    Ok(Report {
        namespace,
        namespace_created,
        outcome: Report::outcome_of(&nodes_report, cut),
        seconds: started.elapsed().as_secs_f64(),
        skipped: nodes
            .iter()
            .filter_map(|n| {
                n.skipped.as_ref().map(|why| report::Skipped {
                    node: n.name.clone(),
                    why: why.clone(),
                })
            })
            .collect(),
        groups: groups
            .into_iter()
            .map(|g| report::GroupReport {
                slowest: Report::slowest(&nodes_report, &g.name),
                daemonset: daemonset::name(&id, &g.name),
                group: g,
            })
            .collect(),
        nodes: nodes_report,
    })
}
