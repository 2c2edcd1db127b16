//! Node diagnostics on healthy nodes of every bundled platform profile: every cause's
//! confirmation commands run on every node, and none confirms a cause — the paths, cmdlets and
//! host names they use are the ones each platform and era really has.

use std::collections::BTreeSet;

use mixcheck_reports::Os;
use rstest::rstest;

use crate::catalogue::causes::Catalogue;
use crate::cluster::target::{TargetSpec, connect};
use crate::triage::{diagnose, diagnostics};

fn catalogue() -> Catalogue {
    let rules = crate::catalogue::rules::Catalogue::embedded().expect("rules");
    let suites = crate::catalogue::suite::Suites::load(None, &rules).expect("suites");
    Catalogue::load(None, &rules, &suites).expect("causes")
}

#[rstest]
#[case::default("default")]
#[case::aks("aks")]
#[case::eks("eks")]
#[case::gke("gke")]
#[case::flannel_hostprocess("kubeadm-flannel-hostprocess")]
#[case::calico("kubeadm-calico")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_node_confirms_no_cause(#[case] profile: &str) {
    let topology = simcluster::Topology::profile(profile).expect("profile").instant();
    let spec = TargetSpec::Bundled {
        profile: profile.to_string(),
        topology: Box::new(topology),
    };
    let target = connect(&spec, &|_| {}).await.expect("the bundled cluster starts");
    let facts = crate::cluster::facts::collect(&target.client, None, None)
        .await
        .expect("facts");
    let ns = "mixcheck-healthy";
    crate::cluster::deploy::create_namespace(&target.client, ns, "healthy")
        .await
        .expect("namespace");
    let fixtures = crate::cluster::fixture::Fixtures::load(None).expect("fixtures");
    let catalogue = catalogue();
    let every: BTreeSet<String> = catalogue.causes.iter().map(|c| c.cause.id.clone()).collect();
    let suspects: Vec<diagnostics::Suspect<'_>> = facts
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.os == Os::Windows && n.host_process() == Some(true) && n.schedulable())
        .map(|(i, n)| (i, n, diagnose::node_vars(&facts.report, &n.name), every.clone()))
        .collect();
    assert!(!suspects.is_empty(), "{profile} has Windows nodes to diagnose");
    let mut evidence = Vec::new();
    diagnostics::run(
        &target.client,
        ns,
        &crate::cluster::deploy::run_labels("healthy"),
        &fixtures,
        &crate::cluster::registry::Registry::default(),
        &catalogue,
        &suspects,
        &mut evidence,
        &|_| {},
    )
    .await;
    for (_, node, vars, _) in &suspects {
        let items = &evidence
            .iter()
            .find(|e| e.node == node.name)
            .unwrap_or_else(|| panic!("evidence about {}", node.name))
            .items;
        let mut judged = 0;
        for cause in &catalogue.causes {
            for c in cause.cause.confirm.iter().filter(|c| c.os == Os::Windows) {
                let Some(pattern) = &c.confirms else { continue };
                let source = format!("{}{}", diagnose::DIAGNOSTICS_PREFIX, c.command);
                let Some(item) = items.iter().find(|i| i.source == source) else {
                    continue;
                };
                let Some((confirms, line)) = diagnose::confirmation(pattern, vars, item.text.as_str()) else {
                    continue;
                };
                judged += 1;
                assert!(
                    !confirms,
                    "{profile}: {} confirms {} on a healthy node ({line:?}):\n{}",
                    c.command,
                    cause.cause.id,
                    item.text.as_str()
                );
            }
        }
        assert!(
            judged >= 3,
            "{profile}: only {judged} commands ran to success on {}: {items:#?}",
            node.name
        );
    }
    target.stop().await;
}
