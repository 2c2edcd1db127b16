//! Judging a cell: which documented expectation applies to its facts (the first `expect` entry
//! whose `when` holds; a condition on an unknown fact makes the cell indeterminate, naming the
//! fact), and what a probe result means against it — mapped to a verdict in one place,
//! [`mixcheck_reports::verdict::decide`].

use mixcheck_reports::verdict::{Expected, Outcome};
use mixcheck_reports::{Os, Verdict};

use crate::catalogue::suite::{
    Check, Condition, Documented, Expectation, FailureClass, Placement, Protocol, VersionRange,
};
use crate::cluster::facts::ClusterNode;
use crate::probes::transport as probe;

/// The facts one probed pair of a cell is judged by.
#[derive(Debug, Clone)]
pub struct CellFacts<'a> {
    pub kubernetes: (u32, u32),
    pub from: Option<&'a ClusterNode>,
    pub to: Option<&'a ClusterNode>,
    pub placement: Option<Placement>,
    pub protocol: Option<Protocol>,
    pub variant: Option<&'a str>,
    pub network_mode: Option<&'a str>,
    pub dsr: Option<bool>,
    pub flannel: Option<(u32, u32)>,
    /// Whether the cluster runs flannel.
    pub flannel_present: bool,
    pub egress: bool,
    /// Whether the cluster is dual-stack (None: not known).
    pub dual_stack: Option<bool>,
    /// Whether the pod network is Calico.
    pub calico: bool,
    /// Whether the cluster serves the GMSACredentialSpec CRD (None: not known).
    pub gmsa: Option<bool>,
    /// The cluster's NetworkPolicy engine (None: not known).
    pub policy_engine: Option<&'a str>,
    /// The CNI plugin on the Windows end of the cell (the destination when it is Windows, else
    /// the source), or why it is unknown: `crate::probes::hostfacts::delegate_of`.
    pub cni_delegate: Result<String, String>,
    /// The API server's feature gates (from its `kubernetes_feature_enabled` metric), if read.
    pub feature_gates: Option<&'a std::collections::BTreeMap<String, bool>>,
}

impl CellFacts<'_> {
    /// The node whose versions a rule is about: the source, else the destination.
    fn node(&self) -> Option<&ClusterNode> {
        self.from.or(self.to)
    }
}

/// Whether a condition holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holds {
    Yes,
    No,
    /// It depends on a fact nobody knows (named).
    Unknown(String),
}

fn range(r: &Option<VersionRange>, value: Option<Vec<u32>>, fact: &str) -> Holds {
    match (r, value) {
        (None, _) => Holds::Yes,
        (Some(r), Some(v)) => {
            if r.contains(&v) {
                Holds::Yes
            } else {
                Holds::No
            }
        }
        (Some(_), None) => Holds::Unknown(fact.to_string()),
    }
}

fn mm(v: (u32, u32)) -> Vec<u32> {
    vec![v.0, v.1]
}

/// Evaluates every field of `c`; the first that fails decides No, else any unknown decides Unknown.
pub fn holds(c: &Condition, f: &CellFacts) -> Holds {
    let node = f.node();
    let checks: Vec<Holds> = vec![
        range(&c.kubernetes, Some(mm(f.kubernetes)), "the API server version"),
        kubelet(&c.kubelet, node),
        windows_range(&c.from_build, f.from, |n| n.build, "the source node's Windows build"),
        windows_range(&c.to_build, f.to, |n| n.build, "the destination node's Windows build"),
        windows_range(
            &c.to_revision,
            f.to,
            revision,
            "the destination node's Windows revision (its kernel version's fourth part)",
        ),
        os_is(c.from_os, f.from),
        os_is(c.to_os, f.to),
        eq(c.placement, f.placement),
        eq(c.protocol, f.protocol),
        eq(c.variant.as_deref(), f.variant),
        network_mode(&c.network_mode, f.network_mode),
        known(
            c.runtime.as_ref(),
            node.and_then(|n| n.runtime.as_ref()).map(|(kind, _)| kind),
            "the node's container runtime",
        ),
        range(
            &c.runtime_version,
            node.and_then(|n| n.runtime.as_ref()).map(|(_, v)| mm(*v)),
            "the node's container runtime version",
        ),
        known(
            c.host_process,
            node.and_then(ClusterNode::host_process),
            "HostProcess support (the node's kubelet and containerd versions)",
        ),
        range(
            &c.flannel,
            f.flannel.map(mm),
            "the flannel version (from the flannel DaemonSet's image)",
        ),
        eq(c.flannel_present, Some(f.flannel_present)),
        known(
            c.dsr,
            f.dsr,
            "whether the Windows kube-proxy runs with DSR (kube-proxy flags or ConfigMap)",
        ),
        eq(c.egress, Some(f.egress)),
        known(
            c.dual_stack,
            f.dual_stack,
            "whether the cluster is dual-stack (no node has spec.podCIDRs and the kubernetes Service has one IP family)",
        ),
        eq(c.calico, Some(f.calico)),
        known(
            c.gmsa,
            f.gmsa,
            "whether the cluster serves the GMSACredentialSpec CRD (the API group windows.k8s.io could not be read)",
        ),
        one_of(
            &c.policy_engine,
            f.policy_engine,
            "the NetworkPolicy engine (no calico-node, antrea-agent, azure-npm, aws-eks-nodeagent, cilium or flannel object says which)",
        ),
        one_of(
            &c.cni_delegate,
            f.cni_delegate.as_deref().ok(),
            &format!(
                "the CNI plugin on the Windows node ({})",
                f.cni_delegate.as_ref().err().map_or("", String::as_str)
            ),
        ),
        feature_gates(&c.feature_gates, f.feature_gates),
    ];
    if checks.contains(&Holds::No) {
        return Holds::No;
    }
    checks
        .into_iter()
        .find(|h| matches!(h, Holds::Unknown(_)))
        .unwrap_or(Holds::Yes)
}

/// A range of a Windows node's build (or revision, as `value` reads it): a Linux node never
/// matches; an absent node or value is unknown, naming `fact`.
fn windows_range(
    r: &Option<VersionRange>,
    node: Option<&ClusterNode>,
    value: impl Fn(&ClusterNode) -> Option<u32>,
    fact: &str,
) -> Holds {
    match (r, node) {
        (None, _) => Holds::Yes,
        (Some(_), Some(n)) if n.os == Os::Linux => Holds::No,
        (r, n) => range(r, n.and_then(value).map(|v| vec![v]), fact),
    }
}

/// A condition on a fact that may be unknown: holds when not set; else whether the fact is as
/// wanted, or unknown (naming `fact`) when the fact is.
fn known<T: PartialEq>(want: Option<T>, has: Option<T>, fact: &str) -> Holds {
    match (want, has) {
        (None, _) => Holds::Yes,
        (Some(want), Some(has)) => bool_holds(has == want),
        (Some(_), None) => Holds::Unknown(fact.into()),
    }
}

/// A condition that the fact is one of `wanted` (none listed: any); unknown names `fact`.
fn one_of(wanted: &[String], has: Option<&str>, fact: &str) -> Holds {
    if wanted.is_empty() {
        return Holds::Yes;
    }
    match has {
        Some(v) => bool_holds(wanted.iter().any(|w| w == v)),
        None => Holds::Unknown(fact.into()),
    }
}

/// The network-mode condition: the cluster's mode is one of `modes` (none listed: any).
fn network_mode(modes: &[String], mode: Option<&str>) -> Holds {
    if modes.is_empty() {
        return Holds::Yes;
    }
    match mode {
        Some(m) => bool_holds(modes.iter().any(|x| x == m)),
        None => Holds::Unknown("the network mode (detected from the CNI's objects, or --network-mode)".into()),
    }
}

/// The feature-gate condition: each gate `want` names is in the wanted state on the API server
/// (`gates`, where read); a gate in another state fails, an unlisted one is unknown.
fn feature_gates(
    want: &std::collections::BTreeMap<String, bool>,
    gates: Option<&std::collections::BTreeMap<String, bool>>,
) -> Holds {
    if want.is_empty() {
        return Holds::Yes;
    }
    let Some(gates) = gates else {
        return Holds::Unknown("the API server's feature gates (its /metrics kubernetes_feature_enabled)".into());
    };
    let mut h = Holds::Yes;
    for (gate, wanted) in want {
        match gates.get(gate) {
            Some(have) if have == wanted => {}
            Some(_) => return Holds::No,
            None => h = Holds::Unknown(format!("the API server's feature gate {gate}")),
        }
    }
    h
}

/// The kubelet condition: a bound that names a patch release (`<1.22.14`) needs the node's patch.
fn kubelet(r: &Option<VersionRange>, node: Option<&ClusterNode>) -> Holds {
    let Some(range_) = r else {
        return Holds::Yes;
    };
    let Some(n) = node else {
        return Holds::Unknown("the node's kubelet version".into());
    };
    let version = match (n.kubelet, n.kubelet_patch) {
        (Some((a, b)), Some(p)) => Some(vec![a, b, p]),
        (Some(_), None) if range_.precision() > 2 => {
            return Holds::Unknown("the node's kubelet patch release".into());
        }
        (Some((a, b)), None) => Some(vec![a, b]),
        (None, _) => None,
    };
    range(r, version, "the node's kubelet version")
}

/// The revision of a Windows node's build (`10.0.20348.2762` → 2762).
fn revision(n: &ClusterNode) -> Option<u32> {
    n.kernel.split('.').nth(3).and_then(|r| r.parse().ok())
}

fn bool_holds(b: bool) -> Holds {
    if b { Holds::Yes } else { Holds::No }
}

fn eq<T: PartialEq>(want: Option<T>, have: Option<T>) -> Holds {
    match want {
        None => Holds::Yes,
        Some(w) => bool_holds(have == Some(w)),
    }
}

fn os_is(want: Option<Os>, node: Option<&ClusterNode>) -> Holds {
    match (want, node) {
        (None, _) => Holds::Yes,
        (Some(w), Some(n)) => bool_holds(w == n.os),
        (Some(_), None) => Holds::No,
    }
}

/// The expectation that applies, or the fact whose absence leaves it open.
pub fn expectation<'a>(check: &'a Check, f: &CellFacts) -> Result<&'a Expectation, String> {
    for e in &check.expect {
        match holds(&e.when, f) {
            Holds::Yes => return Ok(e),
            Holds::No => continue,
            Holds::Unknown(fact) => return Err(fact),
        }
    }
    Err("no documented expectation applies".into())
}

/// The report's name for what the documentation says (None: not applicable).
pub fn expected(d: Documented) -> Option<Expected> {
    match d {
        Documented::Works => Some(Expected::Works),
        Documented::Limitation => Some(Expected::Limitation),
        Documented::UnsupportedApi => Some(Expected::UnsupportedApi),
        Documented::KnownOsIssue => Some(Expected::KnownOsIssue),
        Documented::Recommendation => Some(Expected::Recommendation),
        Documented::Requirement | Documented::Unsupported => Some(Expected::Requirement),
        Documented::NotApplicable | Documented::Undocumented | Documented::Informational => None,
    }
}

/// What a probe result means against the expectation.
pub fn outcome(e: &Expectation, result: &probe::Observation) -> Outcome {
    match (e.result, result) {
        // Outside the documented support table: unsupported whatever the probe saw.
        (Documented::Unsupported, _) => Outcome::RecommendationNotFollowed,
        (Documented::Recommendation | Documented::Requirement, probe::Observation::Failed(FailureClass::Mismatch)) => {
            Outcome::RecommendationNotFollowed
        }
        // For a rule the API server or kubelet is documented to refuse, the probe "reaches" its
        // documented outcome when the refusal happens (a `create` probe's `outcome`).
        (Documented::UnsupportedApi, probe::Observation::Reached(_)) => Outcome::RejectedAsDocumented,
        (Documented::UnsupportedApi, probe::Observation::Failed(FailureClass::Rejected | FailureClass::PodFailed)) => {
            Outcome::RejectedAsDocumented
        }
        (Documented::UnsupportedApi, probe::Observation::Failed(_)) => Outcome::Accepted,
        (_, probe::Observation::Reached(_)) => Outcome::Passed,
        (_, probe::Observation::Failed(class)) => {
            if e.failure.is_empty() || e.failure.contains(class) || e.failure.contains(&FailureClass::Any) {
                Outcome::FailedAsDocumented
            } else {
                Outcome::FailedOtherwise
            }
        }
    }
}

/// The verdict of a judged pair.
pub fn decide(e: &Expectation, outcome: &Outcome) -> Verdict {
    match expected(e.result) {
        Some(x) => mixcheck_reports::verdict::decide(x, outcome),
        None => Verdict::NotApplicable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn node(os: Os, build: Option<u32>, kubelet: (u32, u32), runtime: (&str, (u32, u32))) -> ClusterNode {
        ClusterNode {
            build,
            kubelet: Some(kubelet),
            runtime: Some((runtime.0.into(), runtime.1)),
            ..ClusterNode::sample("n", os, "10.0.0.1")
        }
    }

    fn facts<'a>(from: &'a ClusterNode, to: &'a ClusterNode, mode: Option<&'a str>) -> CellFacts<'a> {
        CellFacts {
            kubernetes: from.kubelet.unwrap_or((1, 32)),
            from: Some(from),
            to: Some(to),
            placement: Some(Placement::OtherNode),
            protocol: Some(Protocol::Tcp),
            variant: None,
            network_mode: mode,
            dsr: None,
            flannel: None,
            flannel_present: false,
            egress: true,
            dual_stack: Some(false),
            calico: false,
            gmsa: Some(false),
            policy_engine: None,
            cni_delegate: Err("not read".into()),
            feature_gates: None,
        }
    }

    fn check(yaml_expect: &str) -> Check {
        let text = format!(
            "apiVersion: mixcheck/v1\nkind: Suite\nname: t\ncategory: x\nchecks:\n  - name: c\n    rule: SVC-VIP-FROM-NODE\n    title: t\n    sources: [W14]\n    probe: {{kind: connect, from: host, to: cluster-ip}}\n    expect:\n{yaml_expect}"
        );
        crate::catalogue::suite::parse(&text, "t.yaml")
            .expect("suite")
            .checks
            .remove(0)
    }

    /// SVC-VIP-FROM-NODE as network-flows.yaml encodes it (S2, W14, WUG, E2E/host_process).
    const VIP: &str = "      - {when: {kubernetes: \"<1.10\"}, result: limitation, failure: [timeout], says: a}
      - {when: {placement: same-node}, result: limitation, failure: [timeout], says: b}
      - {when: {runtime: containerd, runtimeVersion: \">=1.7\", hostProcess: true}, result: works, says: c}
      - {result: limitation, failure: [timeout], says: d}
";

    #[rstest]
    #[case::k19((1, 9), Some(16299), ("docker", (17, 6)), Documented::Limitation, "a")]
    #[case::k114((1, 14), Some(17763), ("docker", (18, 9)), Documented::Limitation, "d")]
    #[case::current((1, 32), Some(20348), ("containerd", (1, 7)), Documented::Works, "c")]
    #[case::containerd_16((1, 32), Some(20348), ("containerd", (1, 6)), Documented::Limitation, "d")]
    fn the_first_matching_expectation_decides(
        #[case] kubelet: (u32, u32),
        #[case] build: Option<u32>,
        #[case] runtime: (&str, (u32, u32)),
        #[case] result: Documented,
        #[case] says: &str,
    ) {
        let c = check(VIP);
        let win = node(Os::Windows, build, kubelet, runtime);
        let lin = node(Os::Linux, None, kubelet, ("containerd", (1, 7)));
        let e = expectation(&c, &facts(&win, &lin, Some("l2bridge"))).expect("an expectation");
        assert_eq!((e.result, e.says.as_str()), (result, says));
    }

    #[test]
    fn an_unknown_fact_makes_the_cell_indeterminate() {
        let c = check(
            "      - {when: {networkMode: [overlay]}, result: limitation, says: a}\n      - {result: works, says: b}\n",
        );
        let win = node(Os::Windows, Some(20348), (1, 32), ("containerd", (1, 7)));
        let err = expectation(&c, &facts(&win, &win, None)).expect_err("indeterminate");
        assert!(err.contains("network mode"), "{err}");
        let e = expectation(&c, &facts(&win, &win, Some("l2bridge"))).expect("works");
        assert_eq!(e.says, "b");
    }

    #[rstest]
    #[case::works_pass(Documented::Works, &[], probe::Observation::Reached(String::new()), Verdict::Pass)]
    #[case::works_fail(Documented::Works, &[], probe::Observation::Failed(FailureClass::Timeout), Verdict::Fail)]
    #[case::limitation_documented(Documented::Limitation, &[FailureClass::Timeout], probe::Observation::Failed(FailureClass::Timeout), Verdict::KnownLimitation)]
    #[case::limitation_other_failure(Documented::Limitation, &[FailureClass::NoReply], probe::Observation::Failed(FailureClass::Timeout), Verdict::Fail)]
    #[case::limitation_passes(Documented::Limitation, &[FailureClass::Timeout], probe::Observation::Reached(String::new()), Verdict::BetterThanDocumented)]
    #[case::recommendation_not_followed(Documented::Recommendation, &[], probe::Observation::Failed(FailureClass::Mismatch), Verdict::Warn)]
    #[case::recommendation_followed(Documented::Recommendation, &[], probe::Observation::Reached(String::new()), Verdict::Pass)]
    #[case::api_rejects(Documented::UnsupportedApi, &[], probe::Observation::Failed(FailureClass::Rejected), Verdict::Pass)]
    #[case::api_accepts(Documented::UnsupportedApi, &[], probe::Observation::Failed(FailureClass::Accepted), Verdict::Fail)]
    #[case::api_refusal_observed(Documented::UnsupportedApi, &[], probe::Observation::Reached(String::new()), Verdict::Pass)]
    fn results_against_expectations(
        #[case] result: Documented,
        #[case] failure: &[FailureClass],
        #[case] probe: probe::Observation,
        #[case] verdict: Verdict,
    ) {
        let e = Expectation {
            when: Condition::default(),
            result,
            failure: failure.to_vec(),
            limit: None,
            says: "x".into(),
            sources: Vec::new(),
        };
        assert_eq!(decide(&e, &outcome(&e, &probe)), verdict);
    }
}
