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

/// The failing cells a fault on `y` gives, observed from `y` and on the flows between `y` and
/// `x`, and the evidence the run gathers about `y`: what the harness sees of each fault.
fn peer_fault_run(fault: &str, y: &str, x: &str) -> (Vec<Cell>, Vec<EvidenceItem>) {
    let sandbox = |why: &str| {
        format!(
            "FailedCreatePodSandBox (3 times): Failed to create pod sandbox: rpc error: code = Unknown desc = {why}"
        )
    };
    let (client, server, items): (String, String, Vec<EvidenceItem>) = match fault {
        "kubelet-stopped" => {
            let not_ready =
                format!("node {y} is not Ready (Ready=Unknown): nothing runs there, so the cell was not probed");
            (
                not_ready.clone(),
                not_ready,
                vec![EvidenceItem {
                    source: "condition Ready".into(),
                    text: Excerpt::new("Ready=Unknown"),
                }],
            )
        }
        "kube-proxy-no-hostname-override" => ("timeout".into(), "timeout".into(), Vec::new()),
        _ => {
            let why = match fault {
                "pause-image-wrong-build" => {
                    "failed to start sandbox container: hcs::CreateComputeSystem: The container operating system does not match the host operating system. (0xc0370101)"
                }
                "hns-network-missing" => {
                    "failed to setup network for sandbox: plugin type=\"flannel\" name=\"cbr0\" failed (add): failed to delegate add: error while GETHNSNewtorkByName(cbr0): Network cbr0 not found"
                }
                _ => {
                    "failed to setup network for sandbox: plugin type=\"flannel\" name=\"cbr0\" failed (add): loadFlannelSubnetEnv failed: open C:\\run\\flannel\\subnet.env: The system cannot find the file specified."
                }
            };
            let items = if fault == "flanneld-waiting" {
                vec![EvidenceItem {
                    source: "log kube-flannel/kube-flannel-ds-windows-x".into(),
                    text: Excerpt::new("I1126 main.go:400] Waiting for the Network to be created"),
                }]
            } else {
                Vec::new()
            };
            (
                format!("the client pod on {y} is not usable: {}", sandbox(why)),
                format!("the netexec server on {y} is not usable: {}", sandbox(why)),
                items,
            )
        }
    };
    let verdict = if fault == "kube-proxy-no-hostname-override" {
        F
    } else {
        E
    };
    let mut cells = Vec::new();
    for peer in ["linux-1", x] {
        for (check, rule) in [
            ("pod-ip-cross-node", "NET-POD-POD-IP-CROSS"),
            ("pod-to-cluster-ip", "NET-POD-SVC-CLUSTERIP"),
            ("pod-to-pod-no-nat", "NET-OUTBOUND-NAT-EXCEPTIONLIST"),
        ] {
            cells.push(flow(check, rule, y, peer, verdict, &client));
            cells.push(flow(check, rule, peer, y, verdict, &server));
        }
    }
    cells.push(flow("pod-ip-same-node", "NET-POD-POD-IP-SAME", y, y, verdict, &client));
    cells.push(flow(
        "pod-to-outside-ip",
        "NET-POD-EXT-IP",
        y,
        "external",
        verdict,
        &client,
    ));
    if fault == "kube-proxy-no-hostname-override" {
        cells.push(flow(
            "kube-proxy-hostname-override",
            "NET-KUBEPROXY-HOSTNAME",
            y,
            "same-pod",
            F,
            "the log of kube-proxy says: FLAG: --hostname-override=\"\"",
        ));
    }
    (cells, items)
}

/// The cells of `x` alone when it has the ExceptionList `fault`: its flows to Linux and to the
/// outside (those to `y` are `peer_fault_run`'s).
fn exceptionlist_run(fault: &str, x: &str) -> Vec<Cell> {
    let missing = fault == "exceptionlist-missing-cluster";
    let no_nat = if missing {
        "cli-2 → 10.244.1.9:8080 tcp: mismatch (backend saw 127.244.11.14, the client is 10.244.2.17)"
    } else {
        "ok"
    };
    let (outside, outside_says) = if missing { (P, "ok") } else { (F, "timeout") };
    vec![
        flow(
            "pod-to-pod-no-nat",
            "NET-OUTBOUND-NAT-EXCEPTIONLIST",
            x,
            "linux-1",
            if missing { F } else { P },
            no_nat,
        ),
        flow(
            "pod-to-pod-no-nat",
            "NET-OUTBOUND-NAT-EXCEPTIONLIST",
            "linux-1",
            x,
            P,
            "ok",
        ),
        flow("pod-ip-cross-node", "NET-POD-POD-IP-CROSS", x, "linux-1", P, "ok"),
        flow("pod-ip-cross-node", "NET-POD-POD-IP-CROSS", "linux-1", x, P, "ok"),
        flow("pod-to-cluster-ip", "NET-POD-SVC-CLUSTERIP", x, "linux-1", P, "ok"),
        flow("pod-ip-same-node", "NET-POD-POD-IP-SAME", x, x, P, "ok"),
        flow(
            "pod-to-outside-ip",
            "NET-POD-EXT-IP",
            x,
            "external",
            outside,
            outside_says,
        ),
        flow(
            "pod-to-outside-name",
            "NET-POD-EXT-DNS",
            x,
            "external",
            outside,
            outside_says,
        ),
    ]
}

/// The causes of a diagnosis with their nodes, in order.
fn found(d: &Diagnosis) -> Vec<(String, Vec<String>)> {
    d.causes.iter().map(|c| (c.id.clone(), c.nodes.clone())).collect()
}

#[rstest::rstest]
fn an_exceptionlist_cause_is_named_beside_a_stronger_cause_on_its_peer(
    #[values("exceptionlist-missing-cluster", "exceptionlist-covers-outside")] own: &str,
    #[values(
        "pause-image-wrong-build",
        "flannel-subnet-env-missing",
        "flanneld-waiting",
        "hns-network-missing",
        "kubelet-stopped",
        "kube-proxy-no-hostname-override"
    )]
    peer: &str,
    #[values(("win2019-1", "win2022-1"), ("win2022-2", "win2019-1"))] (x, y): (&str, &str),
) {
    // The flows between x and y fail because of y's fault: x's ExceptionList cause explains
    // some of them (x as source) and says others keep working (x as destination). They speak
    // neither for nor against it once y's cause explains them; its own cells (the no-NAT cell
    // to Linux, the outside flows) name it, on x.
    let (mut cells, items) = peer_fault_run(peer, y, x);
    cells.extend(exceptionlist_run(own, x));
    let evidence = vec![NodeEvidence { node: y.into(), items }];
    let d = diagnose(&report(cells, "l2bridge"), &catalogue(), evidence, false);
    let mut top: Vec<(String, Vec<String>)> = found(&d).into_iter().take(2).collect();
    top.sort();
    let mut want = vec![
        (own.to_string(), vec![x.to_string()]),
        (peer.to_string(), vec![y.to_string()]),
    ];
    want.sort();
    assert_eq!(top, want, "{:#?}", found(&d));
    assert!(d.unexplained.is_empty(), "{d:#?}");
    // Each failing cell is still explained once.
    let explained: usize = d.causes.iter().map(|c| c.explains.len()).sum();
    let failing = d.causes.iter().flat_map(|c| &c.explains).collect::<BTreeSet<_>>().len();
    assert_eq!(explained, failing, "{d:#?}");
    let own_cause = d.causes.iter().find(|c| c.id == own).expect("named");
    assert!(own_cause.confidence >= 40, "{own_cause:#?}");
    assert!(
        own_cause.contradicted_by.is_empty(),
        "the peer's cells do not speak against it: {own_cause:#?}"
    );
}

#[rstest::rstest]
fn a_fault_alone_names_no_cause_on_its_peer(
    #[values(
        "pause-image-wrong-build",
        "flannel-subnet-env-missing",
        "flanneld-waiting",
        "hns-network-missing",
        "kubelet-stopped",
        "kube-proxy-no-hostname-override"
    )]
    fault: &str,
    #[values(("win2019-1", "win2022-1"), ("win2022-2", "win2019-1"))] (x, y): (&str, &str),
) {
    // The shared cells alone do not make x's causes: nothing but y's cause is named.
    let (mut cells, items) = peer_fault_run(fault, y, x);
    cells.extend(
        exceptionlist_run("exceptionlist-covers-outside", x)
            .into_iter()
            .map(|mut c| {
                if failing(c.verdict) {
                    c.verdict = P;
                    c.observed.summary = "ok".into();
                }
                c
            }),
    );
    let evidence = vec![NodeEvidence { node: y.into(), items }];
    let d = diagnose(&report(cells, "l2bridge"), &catalogue(), evidence, false);
    assert_eq!(found(&d), [(fault.to_string(), vec![y.to_string()])], "{d:#?}");
    assert!(d.unexplained.is_empty(), "{d:#?}");
}

/// kube-proxy's log on `node`: its `--hostname-override` flag as `value` shows it.
fn kube_proxy_log(node: &str, line: &str) -> NodeEvidence {
    NodeEvidence {
        node: node.into(),
        items: vec![EvidenceItem {
            source: "node-log kube-proxy/kube-proxy.log".into(),
            text: Excerpt::new(format!(
                "I1127 14:22:57.325383    5403 flags.go:33] {line}\nI1127 server.go:483] \"Version info\""
            )),
        }],
    }
}

#[rstest::rstest]
#[case::flag_empty(r#"FLAG: --hostname-override="""#, 85)]
#[case::flag_of_another_node(r#"FLAG: --hostname-override="win2022-10""#, 85)]
#[case::flag_set_to_the_node(r#"FLAG: --hostname-override="win2022-1""#, 43)]
#[case::command_line_with_the_flag(
    r"kube-proxy.exe is running: C:\k\kube-proxy.exe --v=3 --hostname-override=win2022-1 --kubeconfig=C:\k\config",
    43
)]
fn the_nodes_own_kube_proxy_flag_speaks_against_a_missing_override(#[case] line: &str, #[case] confidence: u8) {
    let (cells, _) = peer_fault_run("kube-proxy-no-hostname-override", "win2022-1", "win2019-1");
    let d = diagnose(
        &report(cells, "l2bridge"),
        &catalogue(),
        vec![kube_proxy_log("win2022-1", line)],
        false,
    );
    // Refuted, it may rank below another cause; it stays a candidate, halved.
    let top = d
        .causes
        .iter()
        .find(|c| c.id == "kube-proxy-no-hostname-override")
        .expect("named");
    assert_eq!(top.nodes, ["win2022-1"], "{d:#?}");
    assert_eq!(d.causes[0].id == top.id, confidence == 85, "{d:#?}");
    assert_eq!(top.confidence, confidence, "{top:#?}");
    assert_eq!(
        top.evidence
            .iter()
            .any(|e| e.contains("against it: node-log kube-proxy/")),
        confidence < 85,
        "{:?}",
        top.evidence
    );
}

#[rstest::rstest]
fn a_fault_in_a_pool_of_two_is_localised_to_its_node(
    #[values(("win2022-2", "win2022-1"), ("win2022-1", "win2022-2"))] (faulted, peer): (&str, &str),
) {
    // Both nodes form one pool (AKS, GKE): the flows between them are the faulted node's
    // cells, and a session to the pool's ClientIP service from the peer fails at the backend on
    // the faulted node — the cell names the pool's two backends as destinations. The peer's
    // kube-proxy runs with the flag set, and the cells the faulted node's cause explains do not
    // speak for a cause on the peer.
    let (mut cells, _) = peer_fault_run("kube-proxy-no-hostname-override", faulted, peer);
    let mut session = flow(
        "client-ip-session-affinity",
        "NET-SESSION-AFFINITY",
        peer,
        peer,
        F,
        "timeout (backends on both nodes)",
    );
    session.coordinates.locality = None;
    session.observed.on.push(node(faulted, NodeRole::Destination));
    session.nodes.push(node(faulted, NodeRole::Destination));
    cells.push(session);
    cells.push(flow("nodeport-from-other-nodes", "NP-REMOTE", "linux-1", peer, P, "ok"));
    let evidence = vec![
        kube_proxy_log(faulted, r#"FLAG: --hostname-override="""#),
        kube_proxy_log(peer, &format!(r#"FLAG: --hostname-override="{peer}""#)),
    ];
    let d = diagnose(&report(cells, "l2bridge"), &catalogue(), evidence, false);
    assert_eq!(
        found(&d),
        [("kube-proxy-no-hostname-override".to_string(), vec![faulted.to_string()])],
        "{d:#?}"
    );
}

#[rstest::rstest]
#[case::no_lease_read(None, Some("win2022-1: cell "))]
#[case::stale(
    Some("renewed 310 s ago (2026-11-27T14:00:00Z), longer than its 40 s duration: heartbeat stale"),
    Some("win2022-1: lease kube-node-lease/win2022-1: renewed 310 s ago")
)]
#[case::fresh(
    Some("renewed 4 s ago (2026-11-27T14:00:00Z), within its 40 s duration: heartbeat fresh"),
    None
)]
fn the_node_lease_heartbeat_weighs_on_a_stopped_kubelet(#[case] lease: Option<&str>, #[case] shown: Option<&str>) {
    // #23: a NotReady node whose kubelet has not renewed its Lease for longer than its duration
    // has a stopped kubelet; one renewed within it has a live kubelet that reports NotReady, and
    // the stopped kubelet is no longer the first explanation of its cells.
    let (cells, mut items) = peer_fault_run("kubelet-stopped", "win2022-1", "win2019-1");
    if let Some(text) = lease {
        items.push(EvidenceItem {
            source: "lease kube-node-lease/win2022-1".into(),
            text: Excerpt::new(text),
        });
    }
    let evidence = vec![NodeEvidence {
        node: "win2022-1".into(),
        items,
    }];
    let r = report(cells, "l2bridge");
    let causes = catalogue();
    let d = diagnose(&r, &causes, evidence.clone(), false);
    let stopped = d.causes.iter().find(|c| c.id == "kubelet-stopped");
    match shown {
        Some(line) => {
            let c = &d.causes[0];
            assert_eq!(
                (c.id.as_str(), c.nodes.as_slice()),
                ("kubelet-stopped", &["win2022-1".to_string()][..]),
                "{d:#?}"
            );
            assert_eq!(c.confidence, 85, "{c:#?}");
            assert!(c.evidence.iter().any(|e| e.starts_with(line)), "{:?}", c.evidence);
        }
        None => {
            assert_ne!(
                d.causes.first().map(|c| c.id.as_str()),
                Some("kubelet-stopped"),
                "{d:#?}"
            );
            assert!(stopped.is_none_or(|c| c.confidence <= 43), "{d:#?}");
            // Its candidate is refuted, with the line that says why.
            let c = score(
                &r,
                causes
                    .causes
                    .iter()
                    .find(|c| c.cause.id == "kubelet-stopped")
                    .expect("in the catalogue"),
                "win2022-1",
                &evidence[0].items,
            )
            .expect("a candidate");
            assert_eq!(c.refuted, 1);
            assert!(
                c.evidence
                    .iter()
                    .any(|e| e.starts_with("against it: lease kube-node-lease/win2022-1: renewed 4 s ago")),
                "{:?}",
                c.evidence
            );
        }
    }
}

/// A NetworkPolicy cell whose flow failed before any policy existed is the pod network failing
/// (the same pod → pod flow): the pod-network cause explains it and the policy agent's cause is
/// not named; a policy that did not take, with the plain flow working, names the agent's cause
/// on the enforcing node. Either faulted node of the default topology.
#[rstest::rstest]
#[case::on_2022("win2022-1", "win2019-1")]
#[case::on_2019("win2019-1", "win2022-1")]
fn network_policy_cells_are_read_by_where_their_flow_failed(#[case] n: &str, #[case] other: &str) {
    let pre = |src: &str, dst: &str| {
        flow(
            "netpol-deny-ingress",
            "NETPOL-DENY-INGRESS",
            src,
            dst,
            F,
            "c → 10.244.3.8:8080 tcp: timeout before any policy (3 attempts over 1.5 s)",
        )
    };
    let mut cells = mac_spoofing_run(n, other);
    cells.extend([pre("linux-1", n), pre(n, other)]);
    let d = diagnose(&report(cells, "l2bridge"), &catalogue(), Vec::new(), false);
    assert_eq!(found(&d), [("mac-spoofing-disabled".to_string(), vec![n.to_string()])]);
    assert_eq!(d.causes[0].explains.len(), 7, "{:#?}", d.causes[0].explains);
    assert!(d.unexplained.is_empty(), "{:?}", d.unexplained);

    let not_enforced = |src: &str| {
        flow(
            "netpol-deny-ingress",
            "NETPOL-DENY-INGRESS",
            src,
            n,
            F,
            "c → 10.244.3.8:8080 tcp: still reached under NetworkPolicy mixcheck-np1 (deny-ingress) after its settle window: not enforced",
        )
    };
    let cells = vec![
        not_enforced("linux-1"),
        not_enforced(other),
        flow(
            "netpol-no-policy",
            "NETPOL-NO-POLICY",
            "linux-1",
            n,
            P,
            "reached with no policy",
        ),
    ];
    let d = diagnose(&report(cells, "l2bridge"), &catalogue(), Vec::new(), false);
    assert_eq!(found(&d), [("netpol-agent-stopped".to_string(), vec![n.to_string()])]);
}

/// A private NodePort judged from another node's host network is the same attempt as the run's
/// node → NodePort cell from that host (fidelity review 2026-12 §2): the two weigh once. A
/// stand-in of another attempt, or a cell that is no stand-in, weighs on its own.
#[rstest::rstest]
#[case::same_attempt("host-0 → 10.0.0.5:31087 tcp: timeout", "linux-1", true)]
#[case::other_port("host-0 → 10.0.0.5:31999 tcp: timeout", "linux-1", false)]
#[case::other_nodes("host-0 → 10.0.0.5:31087 tcp: timeout", "win2019-1", false)]
fn a_stand_in_and_its_twin_weigh_once(#[case] attempt: &str, #[case] from: &str, #[case] twin: bool) {
    let n = "win2022-1";
    let inside = flow(
        "nodeport-from-other-nodes",
        "NP-REMOTE",
        "linux-1",
        n,
        F,
        "host-0 → 10.0.0.5:31087 tcp: timeout",
    );
    let mut outside = flow(
        "nodeport-from-outside",
        "NP-REMOTE",
        from,
        n,
        F,
        &format!(
            "this machine does not reach {n}'s address 10.0.0.5 (private, as on most managed clusters); {STAND_IN}: judged from node {from}'s host network, the nearest client outside the pod network: {attempt}"
        ),
    );
    outside.coordinates.source = Some(Pool::named("external"));
    outside.id = CellId::new("net", "NP-REMOTE", &outside.coordinates).expect("id");
    let run = report(vec![inside.clone(), outside], "l2bridge");
    let expected: BTreeSet<usize> = if twin { [1].into() } else { BTreeSet::new() };
    assert_eq!(twins(&run, &[0, 1]), expected);
    // A cell that is no stand-in is never the double, whatever it repeats.
    assert!(twins(&report(vec![inside.clone(), inside], "l2bridge"), &[0, 1]).is_empty());
    // The diagnosis weighs the twin once: the same confidence as from the inside cell alone.
    // The cause it points at weighs the pair once: with a worked NodePort from the same host
    // against it, one held prediction in two, not two in three.
    let worked = flow(
        "nodeport-from-other-nodes",
        "NP-REMOTE",
        "linux-1",
        "win2019-1",
        P,
        "ok",
    );
    let mut cells = run.cells.clone();
    cells.push(worked);
    let run = report(cells, "l2bridge");
    let catalogue = catalogue();
    let cause = catalogue.get("port-exhaustion").expect("port-exhaustion");
    let c = score(&run, cause, "linux-1", &[]).expect("a candidate on linux-1");
    let explained: &[usize] = if from == "linux-1" { &[0, 1] } else { &[0] };
    assert_eq!(c.explained, explained);
    assert_eq!(c.contradicted, [2]);
    assert_eq!(c.doubles, expected);
    let held = (explained.len() - expected.len()) as f64;
    let share = held / (held + 1.0);
    assert!((c.confidence(&BTreeSet::new()) - SYMPTOMS_WEIGHT * share).abs() < 1e-9);
}

/// A cell about node `n` alone (a per-node check, its node the subject).
fn node_cell(check: &str, rule: &str, n: &str, verdict: Verdict, summary: &str) -> Cell {
    let mut cell = flow(check, rule, n, "external", verdict, summary);
    cell.coordinates.destination = None;
    cell.coordinates.protocol = None;
    cell.id = CellId::new("dataplane", rule, &cell.coordinates).expect("id");
    cell.nodes = vec![node(n, NodeRole::Subject)];
    cell.observed.on = cell.nodes.clone();
    cell
}

/// The node's own HNS reading names the drift, and the drift names the cause: the lookups of the
/// node's pods that fail for a share of their attempts (or for one pod) are explained by it, and
/// those that worked do not speak against it (`mayFail`). Without the reading, the same lookups
/// alone point at an unreachable DNS service.
#[rstest::rstest]
#[case::missing(
    "no load balancer for Service kube-system/kube-dns (10.96.0.10)",
    "hns-lb-policy-missing"
)]
#[case::stale_backend(
    "the load balancer of kube-system/kube-dns (10.96.0.10) keeps backend 10.244.0.250, which no ready EndpointSlice lists",
    "hns-stale-backend"
)]
#[case::local_and_remote("10.244.3.4 is both a local and a remote endpoint", "hns-stale-remote-endpoint")]
#[case::wrong_provider(
    "remote endpoint 10.244.3.4 points at 10.1.0.12, but its pod runs on win2022-1",
    "hns-stale-remote-endpoint"
)]
#[case::orphan("remote endpoint 10.244.1.9: no pod has that address", "hns-stale-remote-endpoint")]
#[case::leaked(
    "load balancer 3658BF6C (10.111.255.254) belongs to no Service",
    "hns-leaked-policies"
)]
fn the_nodes_hns_reading_names_the_drift(
    #[values("win2022-1", "win2019-1")] n: &str,
    #[case] drift: &str,
    #[case] cause: &str,
) {
    // The first lookup failed; the others failed too (`all`), or worked.
    let lookups = |all: bool| {
        let rest = if all { F } else { P };
        vec![
            flow("service-fqdn", "DNS-FQDN", n, "cluster-dns", F, "dns: timed out"),
            flow("service-short-name", "DNS-SHORT-NAME", n, "cluster-dns", rest, "dns"),
            flow("pod-name-fqdn", "NET-POD-POD-NAME", n, "cluster-dns", rest, "dns"),
            flow("pod-to-cluster-ip", "NET-POD-SVC-CLUSTERIP", n, "linux-1", P, "ok"),
        ]
    };
    let mut cells = lookups(false);
    cells.push(node_cell(
        "hns-matches-api",
        "NET-HNS-MATCHES-API",
        n,
        F,
        &format!("{n}: 1 difference between the node's HNS state and the API: {drift}"),
    ));
    let d = diagnose(&report(cells, "l2bridge"), &catalogue(), Vec::new(), false);
    assert_eq!(found(&d), [(cause.to_string(), vec![n.to_string()])], "{d:#?}");
    assert_eq!(d.causes[0].confidence, 85, "{d:#?}");
    // No reading: the failing lookup alone is the DNS service's.
    let d = diagnose(&report(lookups(true), "l2bridge"), &catalogue(), Vec::new(), false);
    assert_eq!(
        d.causes.first().map(|c| c.id.as_str()),
        Some("dns-unreachable"),
        "{d:#?}"
    );
    // A reading that agrees with the API names no drift cause, whatever else fails.
    let mut cells = lookups(true);
    cells.push(node_cell("hns-matches-api", "NET-HNS-MATCHES-API", n, P, "matches"));
    let d = diagnose(&report(cells, "l2bridge"), &catalogue(), Vec::new(), false);
    assert!(d.causes.iter().all(|c| !c.id.starts_with("hns-")), "{d:#?}");
}

/// Lookups from a node fail and nothing else was selected: an unreachable DNS service, MAC
/// spoofing off (its pods reach no other node) and kube-proxy without its hostname override
/// explain the same cells. The diagnosis says so — the confidence split three ways, the rivals
/// and what tells them apart — and the node's
/// readings are worth taking before ranking (`ties`, with the causes a reading could confirm).
/// A connection from the node to another node's pod that is not DNS decides: it works, the
/// DNS service's; it fails, the pod network's.
#[rstest::rstest]
#[case::undecided(None, "mac-spoofing-disabled", 28)]
#[case::pod_traffic_works(Some("answered"), "dns-unreachable", 85)]
#[case::pod_traffic_fails(Some("failed: timeout"), "mac-spoofing-disabled", 85)]
fn causes_that_tie_are_told_apart_by_what_the_node_shows(
    #[values("win2022-1", "win2019-1")] n: &str,
    #[case] pod_traffic: Option<&str>,
    #[case] named: &str,
    #[case] confidence: u8,
) {
    let cells = vec![
        flow("service-fqdn", "DNS-FQDN", n, "cluster-dns", F, "dns: timed out"),
        flow(
            "service-short-name",
            "DNS-SHORT-NAME",
            n,
            "cluster-dns",
            F,
            "dns: timed out",
        ),
        flow("service-fqdn", "DNS-FQDN", "linux-1", "cluster-dns", P, "ok"),
    ];
    let r = report(cells, "l2bridge");
    let ties = ties(&r, &catalogue(), &[]);
    let contenders = ties.get(n).expect("a tie on the node");
    for id in ["dns-unreachable", "mac-spoofing-disabled", "hns-lb-policy-missing"] {
        assert!(contenders.contains(id), "{id} not among {contenders:?}");
    }
    // With the observation, the host probe's reading of kube-proxy (its override set) too.
    let evidence: Vec<NodeEvidence> = pod_traffic
        .map(|seen| NodeEvidence {
            node: n.into(),
            items: vec![
                EvidenceItem {
                    source: "host Win32_Process".into(),
                    text: Excerpt::new(format!("kube-proxy.exe --proxy-mode=kernelspace --hostname-override={n}")),
                },
                EvidenceItem {
                source: "discriminating probe".into(),
                text: Excerpt::new(format!(
                    "from cli on {n}: pod traffic, not DNS: a TCP connection to the cluster DNS server's pod 10.244.0.2:9153 (on linux-1, another node) {seen}"
                )),
                },
            ],
        })
        .into_iter()
        .collect();
    let d = diagnose(&r, &catalogue(), evidence, false);
    assert_eq!(found(&d), [(named.to_string(), vec![n.to_string()])], "{d:#?}");
    assert_eq!(d.causes[0].confidence, confidence, "{d:#?}");
    let undecided = d.causes[0].evidence.iter().find(|e| e.contains("undecided"));
    assert_eq!(undecided.is_some(), pod_traffic.is_none(), "{d:#?}");
    if let Some(line) = undecided {
        // The first in the catalogue is named; the other remains, with what tells them apart.
        assert!(
            line.contains("dns-unreachable") && line.contains("NET-POD-POD-IP-CROSS"),
            "{line}"
        );
    }
}

/// A `sessionAffinity: ClientIP` Service with backends on the client's node and on its pool
/// peer: the client's address decides which backend it keeps. A cause that breaks only flows to
/// other nodes explains the session when it failed (held to the peer) and is not spoken against
/// when it worked (held to the client's own node) — on a loaded machine either happens.
#[rstest::rstest]
#[case::exceptionlist("exceptionlist-missing-cluster")]
#[case::vxlan("vxlan-params-mismatch")]
fn a_session_held_on_the_clients_own_node_says_nothing_against_a_cross_node_cause(#[case] cause: &str) {
    let x = "win2022-1";
    let diagnosed = |affinity: Verdict| {
        let mut session = flow(
            "client-ip-session-affinity",
            "NET-SESSION-AFFINITY",
            x,
            x,
            affinity,
            if affinity == P {
                "cli-2 → 10.96.0.9:80 tcp: reached"
            } else {
                "cli-2 → 10.96.0.9:80 tcp: timeout (backends on win2022-1, win2022-2)"
            },
        );
        session.coordinates.locality = None;
        session.id = CellId::new("net", "NET-SESSION-AFFINITY", &session.coordinates).expect("id");
        session.nodes.push(node("win2022-2", NodeRole::Destination));
        if affinity != P {
            session.observed.on = session.nodes.clone();
        }
        let id = session.id.clone();
        let cells = vec![
            flow("pod-ip-cross-node", "NET-POD-POD-IP-CROSS", x, "linux-1", F, "timeout"),
            flow("pod-to-cluster-ip", "NET-POD-SVC-CLUSTERIP", x, "linux-1", F, "timeout"),
            flow(
                "pod-ip-cross-node",
                "NET-POD-POD-IP-CROSS",
                x,
                "win2022-2",
                F,
                "timeout",
            ),
            flow("pod-ip-same-node", "NET-POD-POD-IP-SAME", x, x, P, "ok"),
            // What tells the two causes apart: a wrong VXLAN breaks the node's outside traffic
            // too, a missing ExceptionList entry does not.
            match cause {
                "vxlan-params-mismatch" => flow("pod-to-outside-ip", "NET-POD-EXT-IP", x, "external", F, "timeout"),
                _ => flow("pod-to-outside-ip", "NET-POD-EXT-IP", x, "external", P, "ok"),
            },
            session,
        ];
        let d = diagnose(&report(cells, "overlay"), &catalogue(), Vec::new(), false);
        let found = d
            .causes
            .iter()
            .find(|c| c.id == cause && c.nodes == [x])
            .unwrap_or_else(|| panic!("{cause} on {x}: {d:#?}"))
            .clone();
        (found, id)
    };
    let (held_away, id) = diagnosed(F);
    assert!(held_away.explains.contains(&id), "{held_away:#?}");
    let (held_home, id) = diagnosed(P);
    assert!(!held_home.explains.contains(&id), "{held_home:#?}");
    assert!(held_home.contradicted_by.is_empty(), "{held_home:#?}");
    assert_eq!(held_home.confidence, held_away.confidence);
}
