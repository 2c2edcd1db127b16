//! Unit tests of the scheduler's filters, scoring and messages.

use super::*;
use crate::config::topology::Topology;
use rstest::rstest;

fn nodes() -> Vec<NodeInfo> {
    let topo = Topology::default_cluster().instant();
    let ips: Vec<_> = (0..topo.nodes.len())
        .map(|i| std::net::Ipv4Addr::new(127, 9, 9, 10 + i as u8))
        .collect();
    crate::config::profile::profiles(&topo, &ips)
        .iter()
        .zip(&topo.nodes)
        .map(|(p, spec)| NodeInfo::from_node(&crate::node::objects::node_object(spec, p)))
        .collect()
}

fn pod(spec: Value) -> PodNeeds {
    PodNeeds::from_pod(&json!({"spec": spec}))
}

fn placed(needs: &PodNeeds) -> Result<String, String> {
    choose(needs, &nodes(), &HashMap::new()).map(|n| n.name.clone())
}

const WIN_TOLERATION: &str = r#"[{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}]"#;

#[test]
fn linux_pod_without_tolerations_never_lands_on_windows() {
    // SCHED-TAINT: only linux-1 is free of taints.
    let needs = pod(json!({"containers": [{"name": "c", "image": "busybox"}]}));
    for _ in 0..5 {
        assert_eq!(placed(&needs).as_deref(), Ok("linux-1"));
    }
}

#[rstest]
#[case::os_label(json!({"kubernetes.io/os": "windows"}), &["win2019-1", "win2022-1"])]
#[case::build_2019(json!({"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"}), &["win2019-1"])]
#[case::build_2022(json!({"node.kubernetes.io/windows-build": "10.0.20348"}), &["win2022-1"])]
fn selection_by_os_and_build(#[case] selector: Value, #[case] allowed: &[&str]) {
    let tolerations: Value = serde_json::from_str(WIN_TOLERATION).expect("json");
    let needs =
        pod(json!({"nodeSelector": selector, "tolerations": tolerations, "containers": [{"name": "c", "image": "i"}]}));
    let node = placed(&needs).expect("placed");
    assert!(allowed.contains(&node.as_str()), "{node}");
}

#[test]
fn windows_pod_without_toleration_gets_the_upstream_message() {
    let needs =
        pod(json!({"nodeSelector": {"kubernetes.io/os": "windows"}, "containers": [{"name": "c", "image": "i"}]}));
    let message = placed(&needs).expect_err("unschedulable");
    assert_eq!(
        message,
        "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 node(s) had untolerated taint {os: windows}. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    );
}

#[test]
fn filling_allocatable_memory_makes_the_next_pod_insufficient() {
    // MEM-NO-OVERCOMMIT-SCHED: a 2022 node's allocatable is 16Gi − 2Gi − 500Mi.
    let all = nodes();
    let win = all.iter().find(|n| n.name == "win2022-1").expect("node");
    let tolerations: Value = serde_json::from_str(WIN_TOLERATION).expect("json");
    let big = |mem: &str| {
        pod(
            json!({"nodeSelector": {"node.kubernetes.io/windows-build": "10.0.20348"}, "tolerations": tolerations,
            "containers": [{"name": "c", "image": "i", "resources": {"limits": {"memory": mem}}}]}),
        )
    };
    let fill = Quantity(win.memory.milli() - Quantity::parse("100Mi").expect("q").milli());
    let mut usage = HashMap::new();
    let first = big(&format!("{}", fill.value()));
    assert_eq!(
        choose(&first, &all, &usage).map(|n| n.name.clone()).as_deref(),
        Ok("win2022-1")
    );
    usage
        .entry("win2022-1".to_string())
        .or_insert_with(Usage::default)
        .add(&first);
    let message = choose(&big("1Gi"), &all, &usage)
        .map(|n| n.name.clone())
        .expect_err("full");
    assert!(message.contains("1 Insufficient memory"), "{message}");
    assert!(
        message.contains("1 No preemption victims found for incoming pod"),
        "{message}"
    );
}

#[test]
fn same_host_port_on_the_same_node_conflicts() {
    let web = pod(
        json!({"nodeName": "", "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}),
    );
    let all = nodes();
    let mut usage = HashMap::new();
    let first = choose(&web, &all, &usage).expect("first").name.clone();
    assert_eq!(first, "linux-1");
    usage.entry(first).or_insert_with(Usage::default).add(&web);
    let message = choose(&web, &all, &usage)
        .map(|n| n.name.clone())
        .expect_err("port taken");
    assert!(
        message.contains("1 node(s) didn't have free ports for the requested pod ports"),
        "{message}"
    );
    let udp = pod(
        json!({"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "UDP"}]}]}),
    );
    assert_eq!(
        choose(&udp, &all, &usage).map(|n| n.name.clone()).as_deref(),
        Ok("linux-1")
    );
}

#[rstest]
#[case::in_(json!({"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}), true)]
#[case::not_in(json!({"key": "kubernetes.io/os", "operator": "NotIn", "values": ["linux"]}), false)]
#[case::exists(json!({"key": "kubernetes.io/hostname", "operator": "Exists"}), true)]
#[case::missing(json!({"key": "gpu", "operator": "DoesNotExist"}), true)]
fn required_node_affinity(#[case] expr: Value, #[case] linux_fits: bool) {
    let needs = pod(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}}, "containers": [{"name": "c", "image": "i"}]}),
    );
    assert_eq!(placed(&needs).is_ok(), linux_fits);
}

#[test]
fn match_fields_pins_a_node_and_exists_toleration_tolerates_all() {
    let needs = pod(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["win2019-1"]}]}]}}},
        "tolerations": [{"operator": "Exists"}], "containers": [{"name": "c", "image": "i"}]}),
    );
    assert_eq!(placed(&needs).as_deref(), Ok("win2019-1"));
}

#[test]
fn scheduler_ignores_spec_os() {
    // SCHED-POD-OS: a pod that says windows but tolerates nothing still lands on Linux.
    let needs =
        PodNeeds::from_pod(&json!({"spec": {"os": {"name": "windows"}, "containers": [{"name": "c", "image": "i"}]}}));
    assert_eq!(placed(&needs).as_deref(), Ok("linux-1"));
}

#[test]
fn requests_default_from_limits_and_init_containers_count_by_max() {
    let needs = pod(json!({
        "initContainers": [{"name": "i", "image": "x", "resources": {"requests": {"memory": "3Gi"}}}],
        "containers": [{"name": "a", "image": "x", "resources": {"limits": {"memory": "1Gi", "cpu": "500m"}}},
                       {"name": "b", "image": "x", "resources": {"requests": {"memory": "1Gi"}}}]}));
    assert_eq!(needs.memory, Quantity::parse("3Gi").expect("q"));
    assert_eq!(needs.cpu, Quantity::parse("500m").expect("q"));
}

#[test]
fn huge_pages_are_insufficient_on_windows_nodes() {
    // MEM-HUGEPAGES (W14, WI31): huge pages are not supported for Windows containers; Windows
    // nodes advertise no hugepages-* resource, so the noderesources filter finds none of it
    // ("Insufficient hugepages-2Mi", the upstream FailedScheduling wording).
    let tolerations: Value = serde_json::from_str(WIN_TOLERATION).expect("json");
    let needs = pod(json!({
        "nodeSelector": {"kubernetes.io/os": "windows"}, "tolerations": tolerations,
        "containers": [{"name": "c", "image": "i", "resources": {
            "requests": {"cpu": "10m", "memory": "64Mi", "hugepages-2Mi": "2Mi"},
            "limits": {"cpu": "10m", "memory": "64Mi", "hugepages-2Mi": "2Mi"}}}]}));
    assert_eq!(needs.scalar.get("hugepages-2Mi"), Quantity::parse("2Mi").as_ref());
    let message = placed(&needs).expect_err("unschedulable");
    assert_eq!(
        message,
        "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient hugepages-2Mi. preemption: 0/4 nodes are available: 2 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
    );
}

#[test]
fn extended_resources_fit_against_allocatable_and_usage() {
    // noderesources Fit counts every scalar resource a node advertises.
    let mut node = nodes().into_iter().find(|n| n.name == "linux-1").expect("node");
    node.scalar
        .insert("example.com/dongle".into(), Quantity::parse("1").expect("q"));
    let needs = pod(json!({"containers": [{"name": "c", "image": "i",
        "resources": {"limits": {"example.com/dongle": "1"}}}]}));
    let mut usage = Usage::default();
    assert!(misfits(&needs, &node, &usage).is_empty());
    usage.add(&needs);
    assert_eq!(
        misfits(&needs, &node, &usage),
        vec![Misfit::Insufficient("example.com/dongle".into())]
    );
}

/// Which pod changes start a pass: only those that can let a pending pod be placed (a pod that
/// waits, one deleted, a bound one that finished). A bound pod added, bound or updated only takes
/// room (kube-scheduler's queue moves pods on the same events: a pod deleted or a node changed).
#[rstest]
#[case::pending_added(EventType::Added, "", "Pending", None, true)]
#[case::pending_changed(EventType::Modified, "", "Pending", Some(("", "Pending")), true)]
#[case::bound_added(EventType::Added, "linux-1", "Pending", None, false)]
#[case::bound_by_a_pass(EventType::Modified, "linux-1", "Pending", Some(("", "Pending")), false)]
#[case::status_update(EventType::Modified, "linux-1", "Running", Some(("linux-1", "Pending")), false)]
#[case::finished(EventType::Modified, "linux-1", "Succeeded", Some(("linux-1", "Running")), true)]
#[case::failed(EventType::Modified, "linux-1", "Failed", Some(("linux-1", "Running")), true)]
#[case::finished_and_changed_again(EventType::Modified, "linux-1", "Failed", Some(("linux-1", "Failed")), false)]
#[case::bound_deleted(EventType::Deleted, "linux-1", "Running", None, true)]
fn a_pass_starts_on_changes_that_can_place_a_pending_pod(
    #[case] kind: EventType,
    #[case] node: &str,
    #[case] phase: &str,
    #[case] previous: Option<(&str, &str)>,
    #[case] starts: bool,
) {
    let pod = |node: &str, phase: &str| json!({"spec": {"nodeName": node}, "status": {"phase": phase}});
    let previous = previous.map(|(n, p)| pod(n, p));
    assert_eq!(may_unblock(kind, &pod(node, phase), previous.as_ref()), starts);
}

/// The wait before the next pass grows with the last pass's length: a small cluster's passes
/// (microseconds) keep 5 ms, a large one's batch three pass-lengths, never past 100 ms.
#[rstest]
#[case::small_cluster(Duration::from_micros(200), 5)]
#[case::at_the_floor(Duration::from_millis(1), 5)]
#[case::large_cluster(Duration::from_millis(12), 36)]
#[case::capped(Duration::from_millis(80), 100)]
fn the_batch_before_a_pass_grows_with_the_last_pass(#[case] pass: Duration, #[case] millis: u64) {
    assert_eq!(batch_after(pass), Duration::from_millis(millis));
}

/// 300 nodes, every third a Windows node of `pool=w` with its own hostname label, named so
/// that names do not sort in index order (the tie-break is by name).
fn many() -> Vec<NodeInfo> {
    (0..300)
        .map(|i| {
            let name = format!("n-{:03}", (i * 7) % 300);
            let pool = if i % 3 == 0 { "w" } else { "l" };
            NodeInfo::from_node(&json!({
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "pool": pool}},
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
            }))
        })
        .collect()
}

/// A pod's `nodeSelector` narrows the search to the nodes with its first label's value, and the
/// pick is the one a visit of every node from `start` makes: the search stops after
/// `feasible_nodes_to_find` feasible nodes (144 of 300) in round-robin order from `start`, and
/// picks the least allocated, then the lowest name, among those. Pinned to a hostname, the pod
/// lands on that node; selecting a value no node has, on none (the message counts every node).
#[rstest]
#[case::from_the_first(0)]
#[case::from_the_middle(150)]
#[case::from_the_last(299)]
fn a_selector_searches_only_its_nodes_in_the_same_order(#[case] start: usize) {
    let nodes = many();
    let mut labels = LabelIndex::default();
    let usage = HashMap::new();
    let in_pool = pod(json!({"nodeSelector": {"pool": "w"}, "containers": [{"name": "c", "image": "i"}]}));
    let wanted = feasible_nodes_to_find(nodes.len());
    let expect = (0..nodes.len())
        .map(|o| (start + o) % nodes.len())
        .filter(|i| i % 3 == 0)
        .take(wanted)
        .map(|i| nodes[i].name.clone())
        .min();
    let picked = choose_from(&in_pool, &nodes, &usage, start, &mut labels).map(|n| n.name.clone());
    assert_eq!(picked.ok(), expect);
    for target in ["n-000", "n-151", "n-299"] {
        let pinned = pod(
            json!({"nodeSelector": {"kubernetes.io/hostname": target, "pool": "l"}, "containers": [{"name": "c", "image": "i"}]}),
        );
        let picked = choose_from(&pinned, &nodes, &usage, start, &mut labels).map(|n| n.name.clone());
        let index = nodes.iter().position(|n| n.name == target).expect("node");
        let expect = if index % 3 == 0 { None } else { Some(target.to_string()) };
        assert_eq!(picked.as_ref().ok(), expect.as_ref(), "pinned to {target}");
    }
    let nowhere = pod(json!({"nodeSelector": {"pool": "gpu"}, "containers": [{"name": "c", "image": "i"}]}));
    let message = choose_from(&nowhere, &nodes, &usage, start, &mut labels).expect_err("no node");
    assert!(
        message.starts_with("0/300 nodes are available: 300 node(s) didn't match Pod's node affinity/selector."),
        "{message}"
    );
}
