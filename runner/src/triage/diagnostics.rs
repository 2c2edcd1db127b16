//! Node diagnostics (`--node-diagnostics`): on each node failing cells were observed on, one
//! privileged pod — a HostProcess pod on Windows, a hostNetwork pod on Linux, from the
//! `host-probe` fixture — runs the cause catalogue's confirmation commands for that OS, through
//! exec. Their output joins the node's evidence as `diagnostics: COMMAND` items, which
//! [`crate::triage::diagnose`] reads to confirm or refute causes; a command that failed is kept
//! as "not run: <why>" ([`outcome`]), which confirms and refutes nothing. Nothing runs without
//! the flag.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use mixcheck_reports::{EvidenceItem, Excerpt, NodeEvidence, Os};

use crate::catalogue::causes::Catalogue;
use crate::cluster::facts::ClusterNode;
use crate::cluster::fixture::Fixtures;
use crate::probes::outcome;

/// The label value that marks the diagnostics pods (`app.kubernetes.io/component`).
pub const COMPONENT: &str = "node-diagnostics";
/// How long a diagnostics pod may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// The limit on one command.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// The commands to run on a node of `os` suspected of `causes`: each of their catalogue
/// commands that runs on the node, once, with its placeholders filled from `vars` (a command
/// whose placeholder is unknown is left out, and so is one whose `confirms` pattern could not be
/// filled: its output could neither confirm nor refute).
pub fn commands(
    catalogue: &Catalogue,
    causes: &BTreeSet<String>,
    os: Os,
    vars: &BTreeMap<&str, String>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let platform = vars.get(crate::triage::diagnose::PLATFORM_VAR).map(String::as_str);
    for cause in catalogue.causes.iter().filter(|c| causes.contains(&c.cause.id)) {
        for c in &cause.cause.confirm {
            if c.os != os || !c.on_node || !crate::catalogue::causes::in_scope(&c.platforms, platform) {
                continue;
            }
            let Some(resolved) = crate::catalogue::causes::fill(&c.command, vars) else {
                continue;
            };
            if c.confirms
                .as_ref()
                .is_some_and(|p| crate::catalogue::causes::fill(p, vars).is_none())
            {
                continue;
            }
            if !out.iter().any(|(original, _)| original == &c.command) {
                out.push((c.command.clone(), resolved));
            }
        }
    }
    out
}

/// A node to run diagnostics on: its index in the facts, the node, its placeholder values and
/// the causes it is suspected of.
pub type Suspect<'a> = (usize, &'a ClusterNode, BTreeMap<&'a str, String>, BTreeSet<String>);

/// The diagnostics pod's name for the node with index `i`.
fn pod_name(i: usize) -> String {
    format!("diag-{i}")
}

/// Runs the confirmation commands on `nodes` (with their index in the facts) and adds their
/// output to `evidence`. `say` announces what is deployed.
#[allow(clippy::too_many_arguments)] // the run's cluster, namespace, labels and inputs, each distinct
pub async fn run(
    client: &kube::Client,
    ns: &str,
    labels: &BTreeMap<String, String>,
    fixtures: &Fixtures,
    registry: &crate::cluster::registry::Registry,
    catalogue: &Catalogue,
    nodes: &[Suspect<'_>],
    evidence: &mut Vec<NodeEvidence>,
    say: &dyn Fn(&str),
) {
    let Some(fixture) = fixtures.get("host-probe") else {
        return;
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let apply = PatchParams::apply(crate::cluster::deploy::MANAGER).force();
    for (i, node, vars, suspected) in nodes {
        let mut items = Vec::new();
        let os = node.os;
        let cmds = commands(catalogue, suspected, os, vars);
        let kind = if os == Os::Windows {
            "a privileged HostProcess pod"
        } else {
            "a hostNetwork pod"
        };
        if !node.ready {
            items.push(item(
                "diagnostics",
                "not run: the node is not Ready, so no pod starts there",
            ));
        } else if os == Os::Windows && node.host_process() == Some(false) {
            items.push(item(
                "diagnostics",
                "not run: HostProcess pods need Kubernetes 1.23+ and containerd 1.6+, which this node does not have",
            ));
        } else if cmds.is_empty() {
            let by_hand: Vec<String> = catalogue
                .causes
                .iter()
                .filter(|c| suspected.contains(&c.cause.id))
                .flat_map(|c| &c.cause.confirm)
                .filter(|c| c.os == os && !c.on_node)
                .filter(|c| {
                    let platform = vars.get(crate::triage::diagnose::PLATFORM_VAR).map(String::as_str);
                    crate::catalogue::causes::in_scope(&c.platforms, platform)
                })
                .filter_map(|c| crate::catalogue::causes::fill(&c.command, vars))
                .collect();
            items.push(item(
                "diagnostics",
                &format!(
                    "not run: what {} is suspected of is confirmed off the node, or needs facts this run lacks{}",
                    node.name,
                    if by_hand.is_empty() {
                        String::new()
                    } else {
                        format!(" (by hand: {})", by_hand.join("; "))
                    }
                ),
            ));
        } else if let Some(pod) = fixture.pod_for(node) {
            say(&format!(
                "Node diagnostics: deploying {kind} on {} to run {} confirmation command{}",
                node.name,
                cmds.len(),
                if cmds.len() == 1 { "" } else { "s" }
            ));
            let name = pod_name(*i);
            let mut l = labels.clone();
            l.insert("app.kubernetes.io/component".into(), COMPONENT.into());
            let p = crate::cluster::fixture::stamp(pod, &name, node, &l, registry);
            match pods.patch(&name, &apply, &Patch::Apply(&p)).await {
                Err(e) => items.push(item(
                    "diagnostics",
                    &format!("not run: creating pod {name} failed: {e}"),
                )),
                Ok(_) => match running(&pods, &name).await {
                    Err(why) => items.push(item("diagnostics", &format!("not run: pod {name} {why}"))),
                    Ok(()) => {
                        for (original, resolved) in &cmds {
                            let argv = outcome::argv(os, resolved);
                            let text = match tokio::time::timeout(
                                COMMAND_TIMEOUT,
                                crate::probes::transport::exec_retrying(&pods, &name, None, &argv),
                            )
                            .await
                            {
                                Ok(Ok((out, _))) => {
                                    outcome::evidence(os, out.exit_code, &out.stdout_text(), &out.stderr_text())
                                }
                                Ok(Err(e)) => format!("{}exec failed: {e}", outcome::NOT_RUN),
                                Err(_) => format!("{}timed out after {}s", outcome::NOT_RUN, COMMAND_TIMEOUT.as_secs()),
                            };
                            items.push(item(
                                format!("{}{original}", crate::triage::diagnose::DIAGNOSTICS_PREFIX),
                                &text,
                            ));
                        }
                    }
                },
            }
        }
        match evidence.iter_mut().find(|e| e.node == node.name) {
            Some(e) => e.items.extend(items),
            None => evidence.push(NodeEvidence {
                node: node.name.clone(),
                items,
            }),
        }
    }
}

fn item(source: impl Into<String>, text: &str) -> EvidenceItem {
    EvidenceItem {
        source: source.into(),
        text: Excerpt::new(text),
    }
}

/// Waits until the pod runs; the error says how it ended instead.
async fn running(pods: &Api<Pod>, name: &str) -> Result<(), String> {
    let until = tokio::time::Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(Ok(p)) = tokio::time::timeout(Duration::from_secs(15), pods.get(name)).await {
            let status = p.status.unwrap_or_default();
            match status.phase.as_deref() {
                Some("Running") => return Ok(()),
                Some(phase @ ("Failed" | "Succeeded")) => return Err(format!("ended ({phase})")),
                _ => {}
            }
        }
        if tokio::time::Instant::now() >= until {
            return Err(format!("did not start within {}s", START_TIMEOUT.as_secs()));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn vars() -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            ("node", "win2022-1".to_string()),
            ("podCidrPrefix", "10.244.3.".to_string()),
        ])
    }

    #[rstest]
    #[case("hostname", Some("hostname"))]
    #[case("echo {node}", Some("echo win2022-1"))]
    #[case("!{podCidrPrefix}x", Some("!10.244.3.x"))]
    #[case("{clusterCidr}", None)]
    #[case("Where-Object { $_.Type -eq 'x' }", Some("Where-Object { $_.Type -eq 'x' }"))]
    #[case("unclosed {node", Some("unclosed {node"))]
    fn placeholders(#[case] text: &str, #[case] filled: Option<&str>) {
        assert_eq!(crate::catalogue::causes::fill(text, &vars()).as_deref(), filled);
    }

    #[test]
    fn commands_are_those_of_the_os_that_run_on_the_node_once_each() {
        let rules = crate::catalogue::rules::Catalogue::embedded().expect("rules");
        let suites = crate::catalogue::suite::Suites::load(None, &rules).expect("suites");
        let catalogue = Catalogue::load(None, &rules, &suites).expect("causes");
        let all: BTreeSet<String> = catalogue.causes.iter().map(|c| c.cause.id.clone()).collect();
        let windows = commands(&catalogue, &all, Os::Windows, &vars());
        assert!(
            windows.iter().any(|(c, _)| c.starts_with("Get-HnsNetwork")),
            "{windows:?}"
        );
        assert!(
            windows.iter().all(|(c, _)| !c.contains("Get-VMNetworkAdapter")),
            "host-side commands do not run"
        );
        let mut seen: Vec<&String> = windows.iter().map(|(c, _)| c).collect();
        seen.dedup();
        assert_eq!(seen.len(), windows.len());
        let linux = commands(&catalogue, &all, Os::Linux, &vars());
        let one = BTreeSet::from(["kube-proxy-stopped".to_string()]);
        let only = commands(&catalogue, &one, Os::Windows, &vars());
        assert_eq!(
            only,
            [(
                "Get-HnsPolicyList -ErrorAction Stop | Measure-Object".to_string(),
                "Get-HnsPolicyList -ErrorAction Stop | Measure-Object".to_string()
            )]
        );
        assert!(linux.iter().all(|(c, _)| !c.contains("Get-")), "{linux:?}");
    }
}
