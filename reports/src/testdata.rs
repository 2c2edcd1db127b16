//! Reports for this crate's tests: a full one (every part filled at least once, a diagnosis
//! included) and a cell builder.

use chrono::{TimeZone as _, Utc};

use crate::{
    cell::{Cell, CellId, Coordinates, Expectation, Locality, NodeRef, NodeRole, Observed, Pool},
    diagnosis::{Cause, Diagnosis, EvidenceItem, NodeEvidence},
    evidence::{Evidence, Excerpt, PodEvent},
    facts::{Fact, Facts, NodeFacts, Os, Taint},
    report::{RunReport, Selection, Target},
    verdict::{Expected, Verdict},
};

/// A cell of check `suite/check` for `rule` whose only coordinate is `variant`.
pub(crate) fn cell(suite: &str, check: &str, rule: &str, variant: &str, verdict: Verdict) -> Cell {
    let coordinates = Coordinates {
        variant: Some(variant.into()),
        ..Default::default()
    };
    Cell {
        id: CellId::new(suite, rule, &coordinates).expect("valid id"),
        suite: suite.into(),
        check: check.into(),
        rule_id: rule.into(),
        title: format!("{check} title"),
        category: suite.into(),
        verdict,
        expected: Expectation {
            kind: Expected::Works,
            text: "works".into(),
        },
        coordinates,
        nodes: Vec::new(),
        observed: Observed {
            summary: format!("{rule} {variant} observed"),
            evidence: None,
            on: Vec::new(),
        },
        remedy: None,
        sources: Vec::new(),
        reproduce: None,
        reason: None,
        flaky: false,
        duration_ms: 10,
    }
}

/// A report with every field of the model set somewhere.
pub(crate) fn sample_report() -> RunReport {
    let started = Utc
        .with_ymd_and_hms(2026, 11, 21, 10, 0, 0)
        .single()
        .expect("valid time");
    let mut report = RunReport::new(
        "0.1.0",
        "20261121-ab12",
        Target::Kubeconfig {
            context: "aks-prod".into(),
            server: "https://aks-prod.hcp.westeurope.azmk8s.io:443".into(),
        },
        started,
    );
    report.finished_at = Utc
        .with_ymd_and_hms(2026, 11, 21, 10, 1, 2)
        .single()
        .expect("valid time");
    report.duration_ms = 62_400;
    report.strict = true;
    report.selection = Selection {
        suites: vec!["net".into(), "mem".into()],
        checks: vec!["^pod-to-.*".into()],
    };
    report.images = Some(crate::Images {
        registry: Some("mirror.example.com/all".into()),
        registry_map: [("registry.k8s.io".to_string(), "harbor.corp/k8s".to_string())].into(),
        pull_secrets: vec!["default/regcred".into()],
    });

    // The bases (`..Default::default()`) keep the sample compiling when the facts gain a field;
    // a new field is left unknown here until the sample sets it.
    #[allow(clippy::needless_update)]
    let win = NodeFacts {
        os: Some(Fact::new(Os::Windows, "label kubernetes.io/os")),
        windows_build: Some(Fact::new(20348, "label node.kubernetes.io/windows-build")),
        kernel_version: Some(Fact::new("10.0.20348.2762".into(), "status.nodeInfo.kernelVersion")),
        os_image: Some(Fact::new(
            "Windows Server 2022 Datacenter".into(),
            "status.nodeInfo.osImage",
        )),
        kubelet_version: Some(Fact::new("v1.32.0".into(), "status.nodeInfo.kubeletVersion")),
        kube_proxy_version: Some(Fact::new("v1.32.0".into(), "kube-system/kube-proxy-windows image")),
        container_runtime_version: Some(Fact::new(
            "containerd://1.7.20".into(),
            "status.nodeInfo.containerRuntimeVersion",
        )),
        taints: Some(Fact::new(
            vec![Taint {
                key: "os".into(),
                value: Some("windows".into()),
                effect: "NoSchedule".into(),
            }],
            "spec.taints",
        )),
        memory_capacity_bytes: Some(Fact::new(8 << 30, "status.capacity.memory")),
        memory_allocatable_bytes: Some(Fact::new(7 << 30, "status.allocatable.memory")),
        system_reserved_memory_bytes: Some(Fact::new(1 << 30, "nodes/win2022-1/proxy/configz systemReserved")),
        ..Default::default()
    };
    let linux = NodeFacts {
        os: Some(Fact::new(Os::Linux, "label kubernetes.io/os")),
        taints: Some(Fact::new(Vec::new(), "spec.taints")),
        ..Default::default()
    };
    #[allow(clippy::needless_update)]
    let facts = Facts {
        server_version: Some(Fact::new("v1.32.0".into(), "GET /version")),
        nodes: [("win2022-1".to_owned(), win), ("linux-1".to_owned(), linux)]
            .into_iter()
            .collect(),
        network_mode: Some(Fact::new(
            "overlay".into(),
            "kube-flannel/kube-flannel-cfg net-conf.json",
        )),
        dsr: Some(Fact::new(false, "kube-system/kube-proxy-windows args")),
        kube_proxy_version: Some(Fact::new("v1.32.0".into(), "kube-system/kube-proxy image")),
        host_process: Some(Fact::new(true, "server ≥ 1.23, containerd ≥ 1.6")),
        egress: None,
        ..Default::default()
    };
    report.facts = facts;

    let coordinates = Coordinates {
        source: Some(Pool::of(Os::Windows, Some(20348))),
        destination: Some(Pool::of(Os::Linux, None)),
        locality: Some(Locality::OtherNode),
        protocol: Some("tcp".into()),
        variant: Some("pod-ip".into()),
    };
    let flow = Cell {
        id: CellId::new("net", "NET-POD-POD-IP-CROSS", &coordinates).expect("valid id"),
        suite: "net".into(),
        check: "pod-to-pod-ip".into(),
        rule_id: "NET-POD-POD-IP-CROSS".into(),
        title: "Pod to pod by IP across OSes".into(),
        category: "net".into(),
        verdict: Verdict::Fail,
        expected: Expectation {
            kind: Expected::Works,
            text: "pods reach pods of the other OS by IP".into(),
        },
        coordinates,
        nodes: vec![
            NodeRef {
                name: "win2022-1".into(),
                os: Os::Windows,
                build: Some(20348),
                role: NodeRole::Source,
            },
            NodeRef {
                name: "linux-1".into(),
                os: Os::Linux,
                build: None,
                role: NodeRole::Destination,
            },
        ],
        observed: Observed {
            summary: "connect 10.244.1.7:8080 timed out after 10 s".into(),
            evidence: Some(Evidence {
                pod: Some("mixcheck-20261121-ab12/win-client-0".into()),
                command: vec![
                    "/agnhost".into(),
                    "connect".into(),
                    "10.244.1.7:8080".into(),
                    "--timeout=10s".into(),
                ],
                exit_code: Some(1),
                stdout: Excerpt::new(""),
                stderr: Excerpt::new(b"\x1b[31mTIMEOUT\x1b[0m\r\n"),
                events: vec![PodEvent {
                    object: "pod/win-client-0".into(),
                    event_type: "Warning".into(),
                    reason: "FailedCreatePodSandBox".into(),
                    message: Excerpt::new("hcs::CreateComputeSystem: The container operating system does not match"),
                }],
            }),
            on: vec![
                NodeRef {
                    name: "win2022-1".into(),
                    os: Os::Windows,
                    build: Some(20348),
                    role: NodeRole::Source,
                },
                NodeRef {
                    name: "linux-1".into(),
                    os: Os::Linux,
                    build: None,
                    role: NodeRole::Destination,
                },
            ],
        },
        remedy: Some("Add the cluster and service CIDRs to the HNS ExceptionList (WDBG).".into()),
        sources: vec!["W14".into(), "WDBG".into()],
        reproduce: Some(
            "kubectl -n mixcheck-20261121-ab12 exec win-client-0 -- /agnhost connect 10.244.1.7:8080".into(),
        ),
        reason: None,
        flaky: false,
        duration_ms: 10_250,
    };
    let mut skipped = cell(
        "net",
        "icmp-external",
        "NET-ICMP-EXTERNAL",
        "ping",
        Verdict::Indeterminate,
    );
    skipped.reason = Some("egress".into());
    let mut flaky = cell(
        "mem",
        "system-reserved",
        "MEM-SYSTEM-RESERVED",
        "windows-20348",
        Verdict::Pass,
    );
    flaky.flaky = true;
    let mut sandbox = cell(
        "ver",
        "pod-sandbox-starts",
        "VER-PAUSE-IMAGE",
        "windows-20348",
        Verdict::Error,
    );
    sandbox.observed.summary = "the netexec client on win2022-1 never started: FailedCreatePodSandBox (3 times)".into();
    sandbox.remedy = Some("Point containerd's sandbox_image at a pause image that has the node's build.".into());
    // Works although the sandbox cause predicts it to fail: it speaks against that cause.
    let same_node = cell(
        "net",
        "pod-to-pod-ip",
        "NET-POD-POD-IP-SAME",
        "windows-20348",
        Verdict::Pass,
    );
    let mut dns = cell("dns", "service-fqdn", "DNS-FQDN", "linux", Verdict::Fail);
    dns.observed.summary =
        "nslookup kubernetes.default.svc.cluster.local: ;; connection timed out; no servers could be reached".into();
    dns.observed.on = vec![NodeRef {
        name: "linux-1".into(),
        os: Os::Linux,
        build: None,
        role: NodeRole::Source,
    }];
    let mut pending = cell(
        "sched",
        "runtimeclass",
        "SCHED-RUNTIMECLASS",
        "windows-20348",
        Verdict::Fail,
    );
    pending.observed.summary =
        "the pod stayed Pending: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector".into();
    report.diagnosis = Some(sample_diagnosis(
        &flow.id,
        &sandbox.id,
        &same_node.id,
        &dns.id,
        &pending.id,
    ));
    report.cells = vec![flow, skipped, flaky, sandbox, same_node, dns, pending];
    report
}

/// Two causes — the sandbox image on the Windows node (two failing cells, one working cell
/// against it) and cluster DNS from the Linux node — one failing cell no cause explains, and
/// the evidence gathered about both nodes.
fn sample_diagnosis(flow: &CellId, sandbox: &CellId, same_node: &CellId, dns: &CellId, pending: &CellId) -> Diagnosis {
    Diagnosis {
        causes: vec![
            Cause {
                id: "pause-image-wrong-build".into(),
                title: "The sandbox (pause) image is built for another Windows build".into(),
                rule_id: Some("VER-PAUSE-IMAGE".into()),
                confidence: 67,
                nodes: vec!["win2022-1".into()],
                explains: vec![flow.clone(), sandbox.clone()],
                contradicted_by: vec![same_node.clone()],
                evidence: vec![
                    "win2022-1: event mixcheck-20261121-ab12/win-client-0: FailedCreatePodSandBox hcs::CreateComputeSystem: The container operating system does not match the host operating system. (0xc0370101)".into(),
                    "win2022-1: node-log containerd.log: RunPodSandbox for win-client-0 failed: image mcr.microsoft.com/oss/kubernetes/pause:3.6-windows-ltsc2019 is for build 17763".into(),
                    format!("win2022-1: cell {flow}: connect 10.244.1.7:8080 timed out after 10 s"),
                    format!("win2022-1: cell {sandbox}: the netexec client on win2022-1 never started: FailedCreatePodSandBox (3 times)"),
                ],
                remedy: "Pods on this node never get a sandbox: the pause image is of another Windows build, and process-isolated containers need the host's build. Point containerd's sandbox_image (`sandbox` in config v3) or the kubelet's --pod-infra-container-image at a multi-arch pause image (registry.k8s.io/pause:3.6 or later) or one built for the node's build.".into(),
                confirm: vec![r"Get-Content 'C:\Program Files\containerd\config.toml'".into()],
                sources: vec!["W14".into(), "WDBG".into(), "MSK8S".into(), "MSCOMPAT".into()],
            },
            Cause {
                id: "dns-unreachable".into(),
                title: "The cluster DNS service is unreachable from the node (name lookups time out)".into(),
                rule_id: Some("DNS-FQDN".into()),
                confidence: 100,
                nodes: vec!["linux-1".into()],
                explains: vec![dns.clone()],
                contradicted_by: Vec::new(),
                evidence: vec![
                    "linux-1: status kube-system/coredns-5d78c9869d-x7k2p: Running, not ready (Readiness probe failed: HTTP probe failed with statuscode: 503)".into(),
                    format!("linux-1: cell {dns}: nslookup kubernetes.default.svc.cluster.local: ;; connection timed out; no servers could be reached"),
                ],
                remedy: "Pods on this node cannot reach the cluster DNS service although connections by IP work: check that the CoreDNS pods are ready and that the node reaches the kube-dns ClusterIP on UDP and TCP 53 (network policies, host firewall, the node's route to the service range).".into(),
                confirm: vec!["nslookup kubernetes.default.svc.cluster.local <kube-dns ClusterIP>".into()],
                sources: vec!["W14".into(), "WDNS".into()],
            },
        ],
        unexplained: vec![pending.clone()],
        node_diagnostics: false,
        evidence: vec![
            NodeEvidence {
                node: "win2022-1".into(),
                items: vec![
                    EvidenceItem {
                        source: "condition Ready".into(),
                        text: Excerpt::new("True (KubeletReady: kubelet is posting ready status)"),
                    },
                    EvidenceItem {
                        source: "event mixcheck-20261121-ab12/win-client-0".into(),
                        text: Excerpt::new(
                            "FailedCreatePodSandBox hcs::CreateComputeSystem: The container operating system does not match the host operating system. (0xc0370101)",
                        ),
                    },
                    EvidenceItem {
                        source: "node-log containerd.log".into(),
                        text: Excerpt::new(
                            "RunPodSandbox for win-client-0 failed: image mcr.microsoft.com/oss/kubernetes/pause:3.6-windows-ltsc2019 is for build 17763\nretrying in 10s",
                        ),
                    },
                ],
            },
            NodeEvidence {
                node: "linux-1".into(),
                items: vec![
                    EvidenceItem {
                        source: "condition Ready".into(),
                        text: Excerpt::new("True (KubeletReady: kubelet is posting ready status)"),
                    },
                    EvidenceItem {
                        source: "status kube-system/coredns-5d78c9869d-x7k2p".into(),
                        text: Excerpt::new(
                            "Running, not ready (Readiness probe failed: HTTP probe failed with statuscode: 503)",
                        ),
                    },
                ],
            },
        ],
    }
}

/// The sample report (its diagnosis included) with a cell of every verdict kind (not strict),
/// for the format snapshots.
pub(crate) fn every_verdict_report() -> RunReport {
    let mut report = sample_report();
    report.strict = false;
    let mut limitation = cell(
        "net",
        "icmp-to-outside",
        "NET-ICMP-EXTERNAL",
        "windows-20348",
        Verdict::KnownLimitation,
    );
    limitation.expected = Expectation {
        kind: Expected::Limitation,
        text: "ICMP to destinations outside the cluster gets no reply from Windows pods".into(),
    };
    limitation.remedy =
        Some("Use TCP (curl, Test-NetConnection -Port) instead of ping to test outside reachability.".into());
    let mut better = cell(
        "nodeport",
        "nodeport-overlay-ws2022",
        "NET-WS2022-NODEPORT-OVERLAY",
        "windows-20348",
        Verdict::BetterThanDocumented,
    );
    better.expected = Expectation {
        kind: Expected::KnownOsIssue,
        text: "NodePort services on overlay misbehave when the destination node runs Windows Server 2022".into(),
    };
    let mut warn = cell(
        "mem",
        "system-reserved-memory",
        "MEM-SYS-RESERVED",
        "windows-17763",
        Verdict::Warn,
    );
    warn.expected = Expectation {
        kind: Expected::Recommendation,
        text: "reserve at least 2 GiB of memory for the system on Windows nodes".into(),
    };
    warn.observed.summary = "win2019-1: systemReserved.memory = 0.00Gi (documented: at least 2.00Gi)".into();
    let mut not_applicable = cell("sec", "hostprocess", "SEC-HOSTPROCESS", "linux", Verdict::NotApplicable);
    not_applicable.reason = Some("HostProcess containers exist on Windows nodes only".into());
    report.cells.extend([limitation, better, warn, not_applicable]);
    report
}
