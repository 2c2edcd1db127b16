//! The inference on hand-made runs of the default topology (linux-1, win2019-1 in pool
//! windows-17763, win2022-1 in windows-20348; win2022-2 where a pool of two is needed), with the
//! embedded cause catalogue.

use chrono::Utc;
use mixcheck_reports::{
    Coordinates, Evidence, Excerpt, Expectation, Expected, Fact, Locality as Loc, Observed, PodEvent, Pool, Target,
};

use super::*;

fn catalogue() -> Catalogue {
    let rules = crate::catalogue::rules::Catalogue::embedded().expect("rules");
    let suites = crate::catalogue::suite::Suites::load(None, &rules).expect("suites");
    Catalogue::load(None, &rules, &suites).expect("causes")
}

fn node(name: &str, role: NodeRole) -> NodeRef {
    let (os, build) = match name {
        "linux-1" => (Os::Linux, None),
        "win2019-1" | "win2019-2" => (Os::Windows, Some(17763)),
        _ => (Os::Windows, Some(20348)),
    };
    NodeRef {
        name: name.into(),
        os,
        build,
        role,
    }
}

fn pool(name: &str) -> Pool {
    let n = node(name, NodeRole::Source);
    Pool::of(n.os, n.build)
}

/// A flow cell from `src` to `dst` (a node name or a named pool such as `external`).
fn flow(check: &str, rule: &str, src: &str, dst: &str, verdict: Verdict, summary: &str) -> Cell {
    let named = matches!(dst, "external" | "cluster-dns" | "same-pod");
    let locality = (!named).then_some(if src == dst { Loc::SameNode } else { Loc::OtherNode });
    let coordinates = Coordinates {
        source: Some(pool(src)),
        destination: Some(if named { Pool::named(dst) } else { pool(dst) }),
        locality,
        protocol: Some("tcp".into()),
        variant: Some(check.into()),
    };
    let mut nodes = vec![node(src, NodeRole::Source)];
    if !named {
        nodes.push(node(dst, NodeRole::Destination));
    }
    Cell {
        id: CellId::new("net", rule, &coordinates).expect("id"),
        suite: "net".into(),
        check: check.into(),
        rule_id: rule.into(),
        title: check.into(),
        category: "network".into(),
        verdict,
        expected: Expectation {
            kind: Expected::Works,
            text: String::new(),
        },
        coordinates,
        nodes: nodes.clone(),
        observed: Observed {
            summary: summary.into(),
            evidence: None,
            on: nodes,
        },
        remedy: None,
        sources: Vec::new(),
        reproduce: None,
        reason: None,
        flaky: false,
        duration_ms: 0,
    }
}

fn report(cells: Vec<Cell>, mode: &str) -> RunReport {
    let mut r = RunReport::new(
        "0.1.0",
        "t",
        Target::Bundled {
            profile: "default".into(),
        },
        Utc::now(),
    );
    r.facts.network_mode = Some(Fact::new(mode.to_string(), "test"));
    r.cells = cells;
    r
}

use Verdict::{Error as E, Fail as F, KnownLimitation as KL, Pass as P};

/// What MAC spoofing off on `n` does on l2bridge: cross-node pod flows of `n` time out, the
/// same-node ones and the NodePort from other nodes work.
fn mac_spoofing_run(n: &str, other: &str) -> Vec<Cell> {
    vec![
        flow("pod-ip-cross-node", "NET-POD-POD-IP-CROSS", n, "linux-1", F, "timeout"),
        flow("pod-ip-cross-node", "NET-POD-POD-IP-CROSS", "linux-1", n, F, "timeout"),
        flow("pod-ip-cross-node", "NET-POD-POD-IP-CROSS", n, other, F, "timeout"),
        flow("pod-to-cluster-ip", "NET-POD-SVC-CLUSTERIP", n, "linux-1", F, "timeout"),
        flow("pod-to-outside-ip", "NET-POD-EXT-IP", n, "external", F, "timeout"),
        flow("pod-ip-same-node", "NET-POD-POD-IP-SAME", n, n, P, "ok"),
        flow("nodeport-from-other-nodes", "NP-REMOTE", "linux-1", n, P, "ok"),
        flow("pod-ip-cross-node", "NET-POD-POD-IP-CROSS", "linux-1", other, P, "ok"),
        flow(
            "icmp-to-outside",
            "NET-ICMP-EXTERNAL",
            n,
            "external",
            KL,
            "no reply, as documented",
        ),
    ]
}

#[test]
fn a_clean_run_and_documented_limitations_give_an_empty_diagnosis() {
    let cells = vec![
        flow(
            "pod-ip-cross-node",
            "NET-POD-POD-IP-CROSS",
            "win2022-1",
            "linux-1",
            P,
            "ok",
        ),
        flow(
            "icmp-to-outside",
            "NET-ICMP-EXTERNAL",
            "win2022-1",
            "external",
            KL,
            "no reply",
        ),
    ];
    let d = diagnose(&report(cells, "l2bridge"), &catalogue(), Vec::new(), false);
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn the_best_cause_explains_the_pattern_and_is_localised() {
    let d = diagnose(
        &report(mac_spoofing_run("win2022-1", "win2019-1"), "l2bridge"),
        &catalogue(),
        Vec::new(),
        false,
    );
    let top = &d.causes[0];
    assert_eq!(top.id, "mac-spoofing-disabled");
    assert_eq!(top.nodes, ["win2022-1"]);
    // Symptoms alone never make a cause certain.
    assert_eq!(top.confidence, 85);
    assert_eq!(top.explains.len(), 5);
    assert!(top.remedy.contains("MacAddressSpoofing"), "{}", top.remedy);
    assert!(
        top.confirm.iter().all(|c| !c.starts_with("systemctl")),
        "Windows commands only"
    );
    assert!(d.unexplained.is_empty());
    // Each failing cell is explained once.
    let explained: usize = d.causes.iter().map(|c| c.explains.len()).sum();
    assert_eq!(explained, 5);
}

#[test]
fn a_cause_of_another_network_mode_is_no_candidate() {
    // On overlay MAC spoofing does not matter: the same pattern is something else.
    let d = diagnose(
        &report(mac_spoofing_run("win2022-1", "win2019-1"), "overlay"),
        &catalogue(),
        Vec::new(),
        false,
    );
    assert!(d.causes.iter().all(|c| c.id != "mac-spoofing-disabled"), "{d:#?}");
}

#[test]
fn cells_that_should_work_but_fail_lower_the_confidence() {
    let mut cells = mac_spoofing_run("win2022-1", "win2019-1");
    // Same-node traffic failing too does not fit MAC spoofing (it is what kube-proxy without
    // --hostname-override does).
    cells[5].verdict = F;
    let d = diagnose(&report(cells, "l2bridge"), &catalogue(), Vec::new(), false);
    let top = &d.causes[0];
    assert_eq!(top.id, "kube-proxy-no-hostname-override", "{d:#?}");
    let mac = d.causes.iter().find(|c| c.id == "mac-spoofing-disabled");
    assert!(mac.is_none_or(|m| m.confidence < 100), "{d:#?}");
}

#[test]
fn required_messages_decide_between_causes_with_one_pattern() {
    let sandbox = "the client pod on win2022-1 is not usable: FailedCreatePodSandBox (3 times): failed to setup network for sandbox: plugin type=\"flannel\" failed (add): loadFlannelSubnetEnv failed: open C:\\run\\flannel\\subnet.env: The system cannot find the file specified.";
    let cells = vec![
        flow(
            "pod-ip-same-node",
            "NET-POD-POD-IP-SAME",
            "win2022-1",
            "win2022-1",
            E,
            sandbox,
        ),
        flow(
            "pod-ip-cross-node",
            "NET-POD-POD-IP-CROSS",
            "win2022-1",
            "linux-1",
            E,
            sandbox,
        ),
        flow("pod-to-node", "NET-POD-NODE", "linux-1", "win2022-1", P, "ok"),
    ];
    let r = report(cells, "l2bridge");
    let d = diagnose(&r, &catalogue(), Vec::new(), false);
    assert_eq!(d.causes[0].id, "flannel-subnet-env-missing", "{d:#?}");
    assert!(
        d.causes[0].evidence.iter().any(|e| e.contains("subnet.env")),
        "{:?}",
        d.causes[0].evidence
    );
    // flanneld's own log saying it waits for the network makes the more specific cause win.
    let evidence = vec![NodeEvidence {
        node: "win2022-1".into(),
        items: vec![EvidenceItem {
            source: "log kube-flannel/kube-flannel-ds-windows-x".into(),
            text: Excerpt::new("I1126 main.go:400] Waiting for the Network to be created"),
        }],
    }];
    let d = diagnose(&r, &catalogue(), evidence, false);
    assert_eq!(d.causes[0].id, "flanneld-waiting", "{d:#?}");
    assert!(
        d.causes[0].evidence.iter().any(|e| e.contains("log kube-flannel/")),
        "{:?}",
        d.causes[0].evidence
    );
    assert_eq!(d.causes.len(), 1, "the cells are explained once: {d:#?}");
}

#[test]
fn pod_events_in_the_evidence_count_as_messages() {
    let mut cell = flow(
        "pod-ip-same-node",
        "NET-POD-POD-IP-SAME",
        "win2022-1",
        "win2022-1",
        E,
        "not usable",
    );
    cell.observed.evidence = Some(Evidence {
        pod: None,
        command: Vec::new(),
        exit_code: None,
        stdout: Excerpt::new(""),
        stderr: Excerpt::new(""),
        events: vec![PodEvent {
            object: "pod/x".into(),
            event_type: "Warning".into(),
            reason: "FailedCreatePodSandBox".into(),
            message: Excerpt::new(
                "hcs::CreateComputeSystem: The container operating system does not match the host operating system. (0xc0370101)",
            ),
        }],
    });
    let d = diagnose(&report(vec![cell], "l2bridge"), &catalogue(), Vec::new(), false);
    assert_eq!(d.causes[0].id, "pause-image-wrong-build", "{d:#?}");
}

#[test]
fn a_node_of_a_pool_of_two_is_found_by_the_pair_that_failed() {
    // win2022-1 and win2022-2 form one pool; the cells list both, but the failing pair is
    // win2022-2's.
    let mut cells = mac_spoofing_run("win2022-2", "win2019-1");
    for c in &mut cells {
        if c.nodes.iter().any(|n| n.name == "win2022-2") {
            let role = c
                .nodes
                .iter()
                .find(|n| n.name == "win2022-2")
                .map(|n| n.role)
                .unwrap_or(NodeRole::Source);
            c.nodes.push(node("win2022-1", role));
        }
    }
    let d = diagnose(&report(cells, "l2bridge"), &catalogue(), Vec::new(), false);
    assert_eq!(d.causes[0].id, "mac-spoofing-disabled");
    assert_eq!(d.causes[0].nodes, ["win2022-2"], "{d:#?}");
}

#[test]
fn two_causes_on_two_nodes_are_both_found() {
    let mut cells = mac_spoofing_run("win2022-1", "win2019-1");
    cells.extend([
        flow(
            "service-fqdn",
            "DNS-FQDN",
            "win2019-1",
            "cluster-dns",
            F,
            "dns: timeout",
        ),
        flow(
            "service-short-name",
            "DNS-SHORT-NAME",
            "win2019-1",
            "cluster-dns",
            F,
            "dns: timeout",
        ),
        flow(
            "pod-to-outside-name",
            "NET-POD-EXT-DNS",
            "win2019-1",
            "external",
            F,
            "dns: timeout",
        ),
        flow(
            "pod-to-cluster-ip",
            "NET-POD-SVC-CLUSTERIP",
            "win2019-1",
            "linux-1",
            P,
            "ok",
        ),
        flow("pod-to-outside-ip", "NET-POD-EXT-IP", "win2019-1", "external", P, "ok"),
    ]);
    let d = diagnose(&report(cells, "l2bridge"), &catalogue(), Vec::new(), false);
    let found: Vec<(&str, &[String])> = d.causes.iter().map(|c| (c.id.as_str(), c.nodes.as_slice())).collect();
    assert!(
        found.contains(&("mac-spoofing-disabled", &["win2022-1".to_string()][..])),
        "{found:?}"
    );
    assert!(
        found.contains(&("dns-unreachable", &["win2019-1".to_string()][..])),
        "{found:?}"
    );
    assert!(d.unexplained.is_empty(), "{d:#?}");
}

#[test]
fn failures_no_cause_explains_stay_unexplained() {
    let cells = vec![flow(
        "load-balancer-service",
        "SVC-TYPES",
        "linux-1",
        "linux-1",
        F,
        "no external IP",
    )];
    let d = diagnose(&report(cells, "l2bridge"), &catalogue(), Vec::new(), false);
    assert!(d.causes.is_empty(), "{d:#?}");
    assert_eq!(d.unexplained.len(), 1);
}

#[test]
fn node_diagnostics_confirm_or_refute() {
    let cells = vec![
        flow(
            "pod-to-cluster-ip",
            "NET-POD-SVC-CLUSTERIP",
            "win2022-1",
            "linux-1",
            F,
            "timeout",
        ),
        flow("service-fqdn", "DNS-FQDN", "win2022-1", "cluster-dns", F, "timeout"),
        flow(
            "pod-ip-cross-node",
            "NET-POD-POD-IP-CROSS",
            "win2022-1",
            "linux-1",
            P,
            "ok",
        ),
        // One prediction that did not hold: confidence below 100 without diagnostics.
        flow(
            "nodeport-from-other-nodes",
            "NP-REMOTE",
            "linux-1",
            "win2022-1",
            P,
            "ok",
        ),
    ];
    let r = report(cells, "l2bridge");
    let status = |text: &str| NodeEvidence {
        node: "win2022-1".into(),
        items: vec![
            EvidenceItem {
                source: "status kube-system/kube-proxy-windows-x".into(),
                text: Excerpt::new(
                    "phase Running; container kube-proxy ready=false restarts=5, waiting CrashLoopBackOff: back-off",
                ),
            },
            EvidenceItem {
                source: format!("{DIAGNOSTICS_PREFIX}Get-HnsPolicyList -ErrorAction Stop | Measure-Object"),
                text: Excerpt::new(text),
            },
        ],
    };
    let mut without = status("");
    without.items.truncate(1);
    let plain = diagnose(&r, &catalogue(), vec![without], false);
    let confirmed = diagnose(&r, &catalogue(), vec![status("\nCount    : 0\nAverage  :\n")], true);
    let refuted = diagnose(&r, &catalogue(), vec![status("\nCount    : 12\nAverage  :\n")], true);
    let of = |d: &Diagnosis| {
        d.causes
            .iter()
            .find(|c| c.id == "kube-proxy-stopped")
            .map_or(0, |c| c.confidence)
    };
    assert!(of(&plain) > 50 && of(&plain) < 100, "{plain:#?}");
    assert!(
        of(&confirmed) > of(&plain),
        "{} vs {}: {confirmed:#?}",
        of(&confirmed),
        of(&plain)
    );
    assert!(of(&refuted) < of(&plain), "{} vs {}", of(&refuted), of(&plain));
    assert!(confirmed.node_diagnostics);
    let top = &confirmed.causes[0];
    assert!(
        top.evidence
            .iter()
            .any(|e| e.contains("Get-HnsPolicyList -ErrorAction Stop | Measure-Object: Count    : 0")),
        "{:?}",
        top.evidence
    );
    // A command that failed confirms and refutes nothing, and says why it is no evidence.
    for failed in [
        "not run: exit code 1: Get-HnsPolicyList : The term 'Get-HnsPolicyList' is not recognized as the name of a cmdlet",
        "not run: timed out after 60s",
    ] {
        let d = diagnose(&r, &catalogue(), vec![status(failed)], true);
        assert_eq!(of(&d), of(&plain), "{failed}: {d:#?}");
        let c = d
            .causes
            .iter()
            .find(|c| c.id == "kube-proxy-stopped")
            .expect("still a candidate");
        assert!(c.evidence.iter().any(|e| e.contains("not run: ")), "{:?}", c.evidence);
    }
}
