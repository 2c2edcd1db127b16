//! The ecosystem files of `mixcheck watch`, read without outside tools: deploy/watch.yaml's pod
//! meets the restricted Pod Security profile, serves where its Service and probes point and is
//! bound to the rights the watch asks for; deploy/grafana-dashboard.json is well formed, and it
//! and deploy/prometheus-rules.yaml query only the watch's metrics, with their labels and values.
//! (.ci/run also checks the files with kubernetes-validate and promtool.)

use std::collections::BTreeSet;

use regex::Regex;
use rstest::rstest;
use serde_json::Value;

const WATCH: &str = include_str!("../../../deploy/watch.yaml");
const DASHBOARD: &str = include_str!("../../../deploy/grafana-dashboard.json");
const RULES: &str = include_str!("../../../deploy/prometheus-rules.yaml");

/// The port `mixcheck watch --listen` serves on in deploy/watch.yaml.
const PORT: u64 = 9469;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Gauge,
    Counter,
    Histogram,
}

/// The watch's metrics and their labels: this mirrors runner/src/run/watch (its metrics module).
/// Histograms are named without their `_bucket`, `_sum` and `_count` series.
const METRICS: &[(&str, Kind, &[&str])] = &[
    (
        "mixcheck_cell_verdict",
        Kind::Gauge,
        &[
            "cell",
            "suite",
            "rule",
            "check",
            "from_pool",
            "to_pool",
            "from_node",
            "to_node",
            "verdict",
        ],
    ),
    ("mixcheck_cell_documented_to_work", Kind::Gauge, CELL),
    ("mixcheck_probe_attempts_total", Kind::Counter, CELL),
    ("mixcheck_probe_failures_total", Kind::Counter, CELL),
    ("mixcheck_cell_flake_ratio", Kind::Gauge, CELL),
    (
        "mixcheck_probe_duration_seconds",
        Kind::Histogram,
        &["kind", "from_pool", "to_pool"],
    ),
    ("mixcheck_cause_active", Kind::Gauge, &["cause", "node"]),
    (
        "mixcheck_fixture_startup_seconds",
        Kind::Gauge,
        &["node", "image", "phase"],
    ),
    ("mixcheck_node_ready", Kind::Gauge, &["node", "pool"]),
    ("mixcheck_node_dataplane_ok", Kind::Gauge, &["node", "pool"]),
    ("mixcheck_cycle_duration_seconds", Kind::Histogram, &[]),
    ("mixcheck_cycles_total", Kind::Counter, &[]),
    ("mixcheck_cycle_errors_total", Kind::Counter, &[]),
    ("mixcheck_fixtures_healed_total", Kind::Counter, &[]),
    ("mixcheck_last_cycle_timestamp_seconds", Kind::Gauge, &[]),
];

/// The labels of a cell's series other than its verdict's.
const CELL: &[&str] = &["cell", "rule", "check", "from_pool", "to_pool", "from_node", "to_node"];

/// Labels whose values are a closed set.
const VALUES: &[(&str, &[&str])] = &[
    (
        "verdict",
        &[
            "pass",
            "fail",
            "flaky",
            "warn",
            "known-limitation",
            "better-than-documented",
            "not-applicable",
            "indeterminate",
            "error",
        ],
    ),
    ("phase", &["pull", "sandbox", "total"]),
];

/// Labels Prometheus adds to every scraped series (alerts may name them).
const TARGET_LABELS: &[&str] = &["instance", "job"];

fn every_label() -> BTreeSet<&'static str> {
    METRICS
        .iter()
        .flat_map(|(_, _, labels)| labels.iter().copied())
        .chain(["le"])
        .collect()
}

/// The labels a series name carries: a metric of the list or a histogram's series.
fn labels_of(series: &str) -> Option<Vec<&'static str>> {
    if let Some((_, _, labels)) = METRICS.iter().find(|(name, _, _)| *name == series) {
        return Some(labels.to_vec());
    }
    ["_bucket", "_sum", "_count"].iter().find_map(|suffix| {
        let base = series.strip_suffix(suffix)?;
        let (_, _, labels) = METRICS
            .iter()
            .find(|(name, kind, _)| *name == base && *kind == Kind::Histogram)?;
        let mut labels = labels.to_vec();
        if *suffix == "_bucket" {
            labels.push("le");
        }
        Some(labels)
    })
}

/// Everything wrong with one PromQL expression: unknown metric names, labels a metric does not
/// carry, values outside a label's set, grouping by labels no metric has.
fn problems(expr: &str) -> Vec<String> {
    let series = Regex::new(r"(?:^|[^A-Za-z0-9_:])(mixcheck_[A-Za-z0-9_]+)(\{[^}]*\})?").expect("regex");
    let matcher = Regex::new(r#"([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)""#).expect("regex");
    let grouping = Regex::new(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)").expect("regex");
    let mut out = Vec::new();
    for c in series.captures_iter(expr) {
        let name = &c[1];
        let Some(labels) = labels_of(name) else {
            out.push(format!("{name} is not a metric of the watch"));
            continue;
        };
        let Some(selector) = c.get(2) else { continue };
        for m in matcher.captures_iter(selector.as_str()) {
            let (label, op, value) = (&m[1], &m[2], &m[3]);
            if !labels.contains(&label) {
                out.push(format!("{name} has no label {label}"));
                continue;
            }
            let Some((_, allowed)) = VALUES.iter().find(|(l, _)| *l == label) else {
                continue;
            };
            // Literal values only: a Grafana variable ($pool) or a real pattern is not checked.
            let literal = |v: &str| v.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_');
            let values: Vec<&str> = match op {
                "=" | "!=" => vec![value],
                _ => value.split('|').collect(),
            };
            if values.iter().all(|v| literal(v)) {
                out.extend(
                    values
                        .iter()
                        .filter(|v| !allowed.contains(*v))
                        .map(|v| format!("{name}: {label} is never {v:?}")),
                );
            }
        }
    }
    let known = every_label();
    for c in grouping.captures_iter(expr) {
        for label in c[1].split(',').map(str::trim).filter(|l| !l.is_empty()) {
            if !known.contains(label) {
                out.push(format!("grouping by {label}, which no metric of the watch has"));
            }
        }
    }
    out
}

fn dashboard() -> Value {
    serde_json::from_str(DASHBOARD).expect("deploy/grafana-dashboard.json parses")
}

fn rules() -> Value {
    serde_saphyr::from_str(RULES).expect("deploy/prometheus-rules.yaml parses")
}

fn rule_list(rules: &Value) -> Vec<&Value> {
    let groups = rules["groups"].as_array().expect("groups");
    assert!(!groups.is_empty(), "no rule groups");
    groups
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("a group's rules"))
        .collect()
}

/// Every PromQL expression of a file: the dashboard's targets and variable queries, the rules'.
fn exprs(file: &str) -> Vec<String> {
    match file {
        "dashboard" => {
            let d = dashboard();
            let panels = d["panels"].as_array().expect("panels").iter();
            let targets = panels.flat_map(|p| p["targets"].as_array().into_iter().flatten());
            let variables = d["templating"]["list"].as_array().expect("templating").iter();
            targets
                .filter_map(|t| t["expr"].as_str())
                .chain(variables.filter_map(|v| v["definition"].as_str()))
                .map(str::to_string)
                .collect()
        }
        "rules" => rule_list(&rules())
            .iter()
            .map(|r| r["expr"].as_str().expect("every rule has an expr").to_string())
            .collect(),
        other => panic!("no file {other}"),
    }
}

/// The dashboard and the rules name only the watch's metrics, with their labels and values.
#[rstest]
#[case::dashboard("dashboard")]
#[case::rules("rules")]
fn queries_name_only_the_watch_metrics(#[case] file: &str) {
    let exprs = exprs(file);
    assert!(exprs.len() >= 6, "{file}: {exprs:?}");
    let wrong: Vec<String> = exprs
        .iter()
        .flat_map(|e| problems(e).into_iter().map(move |p| format!("{p}\n    in {e}")))
        .collect();
    assert!(wrong.is_empty(), "{file}:\n  {}", wrong.join("\n  "));
}

/// The checker above does catch a wrong name, label or value (so the test can fail).
#[rstest]
#[case::unknown_metric("mixcheck_cell_verdicts == 1")]
#[case::not_a_histogram("mixcheck_cycles_count")]
#[case::unknown_label(r#"mixcheck_node_ready{nodes="a"}"#)]
#[case::label_of_another_metric(r#"mixcheck_cycles_total{node="a"}"#)]
#[case::unknown_verdict(r#"mixcheck_cell_verdict{verdict=~"fail|known_limitation"}"#)]
#[case::unknown_phase(r#"mixcheck_fixture_startup_seconds{phase="pulling"}"#)]
#[case::unknown_grouping("max by (from_pools) (mixcheck_cell_flake_ratio)")]
fn the_checker_rejects(#[case] expr: &str) {
    assert!(!problems(expr).is_empty(), "{expr} passed");
}

#[test]
fn the_checker_accepts_histogram_series_and_variables() {
    for expr in [
        r#"histogram_quantile(0.95, sum by (le, kind) (rate(mixcheck_probe_duration_seconds_bucket{from_pool=~"$pool"}[5m])))"#,
        "rate(mixcheck_cycle_duration_seconds_sum[5m]) / rate(mixcheck_cycle_duration_seconds_count[5m])",
        r#"mixcheck_cell_verdict{verdict=~"fail|error",from_pool="linux"} == 1"#,
    ] {
        assert_eq!(problems(expr), Vec::<String>::new(), "{expr}");
    }
}

fn number(v: &Value, what: &str) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("{what} is not a number: {v}"))
}

#[test]
fn the_dashboard_is_well_formed() {
    let d = dashboard();
    assert_eq!(d["uid"], "mixcheck-watch");
    assert_eq!(d["schemaVersion"], 39);
    let variables = d["templating"]["list"].as_array().expect("templating");
    let variable = |name: &str| {
        variables
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no variable {name}"))
    };
    assert_eq!(variable("datasource")["type"], "datasource");
    assert_eq!(variable("datasource")["query"], "prometheus");
    for name in ["node", "pool"] {
        let v = variable(name);
        assert_eq!(v["type"], "query", "{name}");
        assert_eq!(v["datasource"]["uid"], "${datasource}", "{name}");
        let q = v["definition"].as_str().expect("definition");
        assert!(
            q.starts_with("label_values(") && q.ends_with(&format!(", {name})")),
            "{name}: {q}"
        );
    }

    let panels = d["panels"].as_array().expect("panels");
    let known = every_label();
    let placeholder = Regex::new(r"\{\{\s*([A-Za-z_]+)\s*\}\}").expect("regex");
    let mut ids = BTreeSet::new();
    let mut boxes: Vec<(i64, i64, i64, i64, String)> = Vec::new();
    for p in panels {
        let title = p["title"].as_str().expect("a panel has a title").to_string();
        assert!(
            ids.insert(number(&p["id"], "id")),
            "panel id {} twice ({title})",
            p["id"]
        );
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{title}");
        let g = &p["gridPos"];
        let (x, y, w, h) = (
            number(&g["x"], "x"),
            number(&g["y"], "y"),
            number(&g["w"], "w"),
            number(&g["h"], "h"),
        );
        assert!(
            x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= 24,
            "{title}: gridPos {g}"
        );
        for (bx, by, bw, bh, other) in &boxes {
            let apart = x >= bx + bw || *bx >= x + w || y >= by + bh || *by >= y + h;
            assert!(apart, "{title} overlaps {other}");
        }
        boxes.push((x, y, w, h, title.clone()));
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}: no targets");
        let mut refs = BTreeSet::new();
        for t in targets {
            let r = t["refId"].as_str().filter(|r| !r.is_empty()).expect("refId");
            assert!(refs.insert(r), "{title}: refId {r} twice");
            assert!(t["expr"].as_str().is_some_and(|e| !e.trim().is_empty()), "{title}: {t}");
            if !t["datasource"].is_null() {
                assert_eq!(t["datasource"]["uid"], "${datasource}", "{title}");
            }
            let legend = t["legendFormat"].as_str().unwrap_or_default();
            for label in placeholder.captures_iter(legend) {
                assert!(
                    known.contains(&label[1]),
                    "{title}: legend {legend} names {}",
                    &label[1]
                );
            }
        }
    }
    // The views asked of the dashboard, each by the metric it shows.
    let all = exprs("dashboard").join("\n");
    for metric in [
        "mixcheck_cell_verdict",
        "mixcheck_cell_flake_ratio",
        "mixcheck_fixture_startup_seconds",
        "mixcheck_cause_active",
        "mixcheck_cycle_duration_seconds_bucket",
        "mixcheck_probe_duration_seconds_bucket",
    ] {
        assert!(all.contains(metric), "no panel shows {metric}");
    }
    // The dashboard works without the recording rules.
    assert!(!all.contains("mixcheck:"), "a panel depends on a recording rule");
}

#[test]
fn the_rules_alert_with_severity_summary_and_runbook() {
    let rules = rules();
    let rules = rule_list(&rules);
    let recorded: BTreeSet<&str> = rules.iter().filter_map(|r| r["record"].as_str()).collect();
    let known = every_label();
    let template = Regex::new(r"\$labels\.([A-Za-z_]+)").expect("regex");
    let record_ref = Regex::new(r"mixcheck:[a-z_:0-9]+").expect("regex");
    let mut alerts = BTreeSet::new();
    for r in &rules {
        let expr = r["expr"].as_str().expect("expr");
        for used in record_ref.find_iter(expr) {
            assert!(
                recorded.contains(used.as_str()),
                "{expr} uses {} which no rule records",
                used.as_str()
            );
        }
        if let Some(name) = r["record"].as_str() {
            assert_eq!(name.split(':').count(), 3, "{name}: level:metric:operations");
            continue;
        }
        let name = r["alert"].as_str().expect("a rule records or alerts");
        assert!(alerts.insert(name), "alert {name} twice");
        let severity = r["labels"]["severity"].as_str();
        assert!(
            severity.is_some_and(|s| ["critical", "warning", "info"].contains(&s)),
            "{name}: severity {severity:?}"
        );
        let a = &r["annotations"];
        for key in ["summary", "description"] {
            let text = a[key].as_str().unwrap_or_else(|| panic!("{name}: no {key}"));
            for label in template.captures_iter(text) {
                let l = &label[1];
                assert!(
                    known.contains(l) || TARGET_LABELS.contains(&l),
                    "{name}: {key} names {l}"
                );
            }
        }
        let runbook = a["runbook_url"].as_str().unwrap_or_default();
        assert!(runbook.starts_with("docs/watch.md#"), "{name}: runbook_url {runbook:?}");
    }
    for name in [
        "MixcheckDocumentedFlowFailing",
        "MixcheckFlakyFlow",
        "MixcheckNodeDataplaneDownWhileReady",
        "MixcheckSlowFixtureStartup",
        "MixcheckCycleErrors",
        "MixcheckWatchDown",
    ] {
        assert!(alerts.contains(name), "no alert {name}: {alerts:?}");
    }
}

fn watch_docs() -> Vec<Value> {
    serde_saphyr::from_multiple(WATCH).expect("deploy/watch.yaml parses")
}

fn object<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let mut found = docs.iter().filter(|d| d["kind"] == kind);
    let first = found
        .next()
        .unwrap_or_else(|| panic!("deploy/watch.yaml has no {kind}"));
    assert!(found.next().is_none(), "deploy/watch.yaml has two {kind}s");
    first
}

/// A probe's or Service's port, by number or by the container port's name.
fn resolve_port(port: &Value, container: &Value) -> u64 {
    if let Some(n) = port.as_u64() {
        return n;
    }
    let name = port.as_str().expect("a port is a number or a name");
    let ports = container["ports"].as_array().expect("container ports");
    let p = ports
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no container port named {name}"));
    p["containerPort"].as_u64().expect("containerPort")
}

/// The value after `flag` in `args` (`--flag value` or `--flag=value`).
fn flag<'a>(args: &'a [&'a str], name: &str) -> Option<&'a str> {
    let prefix = format!("{name}=");
    args.iter().enumerate().find_map(|(i, a)| {
        if *a == name {
            args.get(i + 1).copied()
        } else {
            a.strip_prefix(prefix.as_str())
        }
    })
}

#[test]
fn the_watch_pod_meets_the_restricted_profile() {
    let docs = watch_docs();
    let deployment = object(&docs, "Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        assert_ne!(pod[host], true, "{host}");
    }
    let pod_sc = &pod["securityContext"];
    let containers: Vec<&Value> = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| pod[*k].as_array().into_iter().flatten())
        .collect();
    assert!(!containers.is_empty());
    for c in containers {
        let name = c["name"].as_str().expect("name");
        let sc = &c["securityContext"];
        // A container's setting overrides the pod's.
        let effective = |key: &str| if sc[key].is_null() { &pod_sc[key] } else { &sc[key] };
        assert_eq!(effective("runAsNonRoot"), true, "{name}: runAsNonRoot");
        assert_ne!(effective("runAsUser"), 0, "{name}: runAsUser");
        assert_eq!(
            sc["allowPrivilegeEscalation"], false,
            "{name}: allowPrivilegeEscalation"
        );
        assert_ne!(sc["privileged"], true, "{name}: privileged");
        let drop = sc["capabilities"]["drop"].as_array().expect("capabilities.drop");
        assert!(drop.iter().any(|d| d == "ALL"), "{name}: drop {drop:?}");
        let added = sc["capabilities"]["add"].as_array().into_iter().flatten();
        assert!(added.clone().all(|a| a == "NET_BIND_SERVICE"), "{name}: add");
        assert_eq!(
            effective("seccompProfile")["type"],
            "RuntimeDefault",
            "{name}: seccompProfile"
        );
        assert_eq!(sc["readOnlyRootFilesystem"], true, "{name}: readOnlyRootFilesystem");
    }
    // Only the volume types the restricted profile allows.
    let allowed = [
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    ];
    for v in pod["volumes"].as_array().into_iter().flatten() {
        let v = v.as_object().expect("volume");
        let kind = v.keys().find(|k| *k != "name").expect("a volume source");
        assert!(allowed.contains(&kind.as_str()), "volume {:?} is {kind}", v["name"]);
    }
}

#[test]
fn the_watch_serves_where_its_service_and_probes_point() {
    let docs = watch_docs();
    let namespace = object(&docs, "Namespace")["metadata"]["name"]
        .as_str()
        .expect("namespace name");
    for d in &docs {
        if !["Namespace", "ClusterRole", "ClusterRoleBinding"].contains(&d["kind"].as_str().unwrap_or_default()) {
            assert_eq!(
                d["metadata"]["namespace"], namespace,
                "{} {}",
                d["kind"], d["metadata"]["name"]
            );
        }
    }
    let deployment = object(&docs, "Deployment");
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(deployment["spec"]["strategy"]["type"], "Recreate");
    let template = &deployment["spec"]["template"];
    let pod = &template["spec"];
    assert_eq!(
        pod["serviceAccountName"],
        object(&docs, "ServiceAccount")["metadata"]["name"]
    );
    assert_eq!(pod["nodeSelector"]["kubernetes.io/os"], "linux");
    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    let args: Vec<&str> = c["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("args are strings"))
        .collect();
    assert_eq!(args.first(), Some(&"watch"), "{args:?}");
    assert!(args.contains(&"--in-cluster"), "{args:?}");
    let ns_flag = flag(&args, "--namespace").or_else(|| flag(&args, "-n"));
    assert_eq!(ns_flag, Some(namespace), "{args:?}");
    let listen = flag(&args, "--listen").expect("--listen");
    let (host, port) = listen.rsplit_once(':').expect("--listen HOST:PORT");
    assert_eq!(
        host, "0.0.0.0",
        "the Service reaches the pod's address, not its loopback"
    );
    assert_eq!(port.parse::<u64>().ok(), Some(PORT), "{listen}");

    // --history is on a writable volume (the root filesystem is read-only).
    let history = flag(&args, "--history").expect("--history");
    let mounts = c["volumeMounts"].as_array().expect("volumeMounts");
    assert!(
        mounts.iter().any(|m| {
            let path = m["mountPath"].as_str().unwrap_or_default();
            m["readOnly"] != true && (history == path || history.starts_with(&format!("{path}/")))
        }),
        "--history {history} is on no mounted volume"
    );

    let metrics = c["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["name"] == "metrics");
    assert_eq!(metrics.expect("a port named metrics")["containerPort"], PORT);
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        let get = &c[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert_eq!(resolve_port(&get["port"], c), PORT, "{probe}");
    }
    for key in ["requests", "limits"] {
        assert!(c["resources"][key]["memory"].is_string(), "resources.{key}.memory");
    }

    let service = object(&docs, "Service");
    let selector = service["spec"]["selector"].as_object().expect("selector");
    assert!(!selector.is_empty());
    for (k, v) in selector {
        assert_eq!(
            &template["metadata"]["labels"][k], v,
            "the Service selects the watch pod by {k}"
        );
    }
    let ports = service["spec"]["ports"].as_array().expect("service ports");
    let port = ports
        .iter()
        .find(|p| p["name"] == "metrics")
        .expect("a Service port named metrics");
    assert_eq!(port["port"], PORT);
    assert_eq!(resolve_port(&port["targetPort"], c), PORT);
    let annotations = &service["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(annotations["prometheus.io/port"], PORT.to_string());
}

/// Whether `rules` (a Role's or ClusterRole's) allow `verb` on `group`/`resource`.
fn grants(rules: &Value, verb: &str, group: &str, resource: &str) -> bool {
    let has = |list: &Value, item: &str| list.as_array().into_iter().flatten().any(|x| x == item || x == "*");
    rules
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| has(&r["verbs"], verb) && has(&r["apiGroups"], group) && has(&r["resources"], resource))
}

/// The ServiceAccount is bound to the file's Role and ClusterRole, and they grant what a run
/// in an existing namespace requires (runner/src/run/connect.rs, NEEDS) and what the watch reads.
#[rstest]
#[case::list_nodes("ClusterRole", "list", "", "nodes")]
#[case::get_nodes("ClusterRole", "get", "", "nodes")]
#[case::watch_nodes("ClusterRole", "watch", "", "nodes")]
#[case::review_own_access("ClusterRole", "create", "authorization.k8s.io", "selfsubjectaccessreviews")]
#[case::create_pods("Role", "create", "", "pods")]
#[case::patch_pods("Role", "patch", "", "pods")]
#[case::list_pods("Role", "list", "", "pods")]
#[case::watch_pods("Role", "watch", "", "pods")]
#[case::delete_pods("Role", "delete", "", "pods")]
#[case::exec("Role", "create", "", "pods/exec")]
#[case::exec_websocket("Role", "get", "", "pods/exec")]
#[case::logs("Role", "get", "", "pods/log")]
#[case::create_services("Role", "create", "", "services")]
#[case::patch_services("Role", "patch", "", "services")]
#[case::list_events("Role", "list", "", "events")]
#[case::clear_pods("Role", "deletecollection", "", "pods")]
#[case::clear_services("Role", "deletecollection", "", "services")]
#[case::clear_secrets("Role", "deletecollection", "", "secrets")]
fn the_roles_grant(#[case] kind: &str, #[case] verb: &str, #[case] group: &str, #[case] resource: &str) {
    let docs = watch_docs();
    let sa = object(&docs, "ServiceAccount");
    let role = object(&docs, kind);
    assert!(
        grants(&role["rules"], verb, group, resource),
        "{kind} lacks {verb} {group}/{resource}"
    );
    let binding = object(&docs, &format!("{kind}Binding"));
    assert_eq!(binding["roleRef"]["kind"], kind);
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    let subjects = binding["subjects"].as_array().expect("subjects");
    assert!(
        subjects.iter().any(|s| s["kind"] == "ServiceAccount"
            && s["name"] == sa["metadata"]["name"]
            && s["namespace"] == sa["metadata"]["namespace"]),
        "{kind}Binding does not bind the ServiceAccount"
    );
}

/// Cluster-wide the watch only reads (and reviews its own access): it writes nothing outside its
/// namespace, and reads no Secrets anywhere.
#[test]
fn the_cluster_role_only_reads() {
    let docs = watch_docs();
    let rules = object(&docs, "ClusterRole")["rules"].as_array().expect("rules");
    for r in rules {
        let review = r["resources"] == serde_json::json!(["selfsubjectaccessreviews"]);
        for verb in r["verbs"].as_array().expect("verbs") {
            let verb = verb.as_str().expect("verb");
            assert!(
                ["get", "list", "watch"].contains(&verb) || review,
                "ClusterRole grants {verb}: {r}"
            );
        }
    }
    let role = &object(&docs, "Role")["rules"];
    for verb in ["get", "list", "watch"] {
        assert!(!grants(role, verb, "", "secrets"), "the Role may {verb} Secrets");
    }
}
