//! `logs`: the log of a node agent — its pod's (the HostProcess kube-proxy and flanneld
//! DaemonSets of current Windows set-ups) or, where it runs as a node service, its log file
//! under the kubelet's `/logs/`, else what the kubelet's node log query answers for its service
//! where the node enables it — read through the API and judged line by line.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};
use regex::Regex;

use crate::catalogue::suite::{Agent, FailureClass};
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::transport::Observation;

/// How much of an agent's log is read, from its start (which holds the configuration lines).
const LOG_BYTES: i64 = 4 << 20;
/// The limit on each API call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an empty agent log is read again at least (on the cluster's clock).
const EMPTY_LOG_WAIT: Duration = Duration::from_secs(20);

/// An agent pod's log.
pub struct AgentLog {
    /// `namespace/name` of the pod.
    pub pod: String,
    pub text: String,
}

/// The log of `agent` on `node`: its pod's (the previous container's when the current one has
/// logged nothing yet, as after a crash) or, without a pod, its log file under the kubelet's
/// `/logs/`, else the node log query's answer for `query` (the agent's service name, where the
/// node's kubelet enables the query); None when none exists.
pub async fn log_of(
    client: &kube::Client,
    node: &str,
    agent: Agent,
    query: Option<&str>,
) -> Result<Option<AgentLog>, String> {
    let all: Api<Pod> = Api::all(client.clone());
    let params = ListParams::default().fields(&format!("spec.nodeName={node}"));
    let pods = tokio::time::timeout(CALL_TIMEOUT, all.list(&params))
        .await
        .map_err(|_| format!("listing the pods of {node} timed out"))?
        .map_err(|e| format!("listing the pods of {node}: {e}"))?;
    let Some(pod) = pods.items.into_iter().find(|p| {
        let name = p.metadata.name.as_deref().unwrap_or_default();
        let images: Vec<&str> = p
            .spec
            .as_ref()
            .map(|s| s.containers.iter().filter_map(|c| c.image.as_deref()).collect())
            .unwrap_or_default();
        agent.is(name, &images)
    }) else {
        return match (node_log(client, node, agent).await?, query) {
            (None, Some(service)) => queried_log(client, node, service).await,
            (found, _) => Ok(found),
        };
    };
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let container = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .map(|c| c.name.clone());
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    // From the start (its configuration lines are there), at most LOG_BYTES.
    let mut params = LogParams {
        container,
        limit_bytes: Some(LOG_BYTES),
        ..LogParams::default()
    };
    let read = |params: LogParams| {
        let (api, name) = (api.clone(), name.clone());
        async move {
            match tokio::time::timeout(CALL_TIMEOUT, api.logs(&name, &params)).await {
                Ok(Ok(text)) => text,
                _ => String::new(),
            }
        }
    };
    let mut text = read(params.clone()).await;
    if text.trim().is_empty() {
        params.previous = true;
        text = read(params).await;
    }
    Ok(Some(AgentLog {
        pod: format!("{ns}/{name}"),
        text,
    }))
}

/// The agent's log file through the node proxy, or None when the node serves no such file.
async fn node_log(client: &kube::Client, node: &str, agent: Agent) -> Result<Option<AgentLog>, String> {
    let path = format!("/api/v1/nodes/{node}/proxy/logs/{}", agent.node_log());
    let request = http::Request::get(&path)
        .body(Vec::new())
        .map_err(|e| format!("{path}: {e}"))?;
    match tokio::time::timeout(CALL_TIMEOUT, client.request_text(request)).await {
        Err(_) => Err(format!("reading {path} timed out")),
        Ok(Ok(text)) => Ok(Some(AgentLog {
            pod: format!("node {node}, /logs/{}", agent.node_log()),
            text,
        })),
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => Ok(None),
        Ok(Err(e)) => Err(format!("reading {path}: {e}")),
    }
}

/// The node log query's path for a service (KEP-2258 NodeLogQuery: `/logs/?query=NAME`; on
/// Windows the Application event log's entries of provider NAME, or a log file of that name
/// under `C:\var\log`).
pub fn query_path(node: &str, service: &str) -> String {
    let encoded: String = service
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect();
    format!("/api/v1/nodes/{node}/proxy/logs/?query={encoded}")
}

/// Whether a node's kubelet answers the node log query: its configz has
/// `enableSystemLogQuery` (with `enableSystemLogHandler`, on by default) and the NodeLogQuery
/// gate on (alpha 1.27, beta 1.30, off by default). None when its configz was not read.
pub fn log_query_enabled(configz: Option<&serde_json::Value>) -> Option<bool> {
    let c = configz?.get("kubeletconfig")?;
    let on = |p: &str| c.pointer(p).and_then(serde_json::Value::as_bool);
    Some(
        on("/enableSystemLogQuery") == Some(true)
            && on("/enableSystemLogHandler") != Some(false)
            && on("/featureGates/NodeLogQuery") == Some(true),
    )
}

/// What the node log query answers for `service`, or None where the kubelet does not (the
/// feature is off, nothing by that name).
async fn queried_log(client: &kube::Client, node: &str, service: &str) -> Result<Option<AgentLog>, String> {
    let path = query_path(node, service);
    let request = http::Request::get(&path)
        .body(Vec::new())
        .map_err(|e| format!("{path}: {e}"))?;
    match tokio::time::timeout(CALL_TIMEOUT, client.request_text(request)).await {
        Err(_) => Err(format!("reading {path} timed out")),
        Ok(Ok(text)) if !text.trim().is_empty() => Ok(Some(AgentLog {
            pod: format!("node {node}, node log query {service}"),
            text,
        })),
        Ok(_) => Ok(None),
    }
}

/// The marker a logs rule's `must` may hold for the cluster's flannel VXLAN VNI: the `VNI` of
/// `kube-flannel-cfg`'s net-conf.json Backend where the run can read it (every node must use
/// the same), else any VNI flannel allows on Windows — 4096 or more (flannel
/// `Documentation/backends.md`: "On Windows should be greater than or equal to 4096").
pub const CLUSTER_VNI: &str = "CLUSTER_VNI";

/// A VNI of 4096 or more (VXLAN VNIs have 24 bits).
const WINDOWS_VNI: &str = r"(?:409[6-9]|4[1-9]\d\d|[5-9]\d{3}|[1-9]\d{4,7})";

/// `must` with [`CLUSTER_VNI`] replaced: by the cluster's VNI (`vni`), else by [`WINDOWS_VNI`].
pub fn with_cluster_vni(must: &str, vni: Option<u32>) -> String {
    let value = vni.map_or(WINDOWS_VNI.to_string(), |v| v.to_string());
    must.replace(CLUSTER_VNI, &value)
}

/// The VNI of flannel's VXLAN backend in the cluster's `kube-flannel-cfg` (kube-flannel or
/// kube-system), where it is set and readable.
pub async fn cluster_vni(client: &kube::Client) -> Option<u32> {
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::all(client.clone());
    let params = ListParams::default().fields("metadata.name=kube-flannel-cfg");
    let list = tokio::time::timeout(CALL_TIMEOUT, api.list(&params)).await.ok()?.ok()?;
    list.items.iter().find_map(|cm| {
        let conf = cm.data.as_ref()?.get("net-conf.json")?;
        let v: serde_json::Value = serde_json::from_str(conf).ok()?;
        u32::try_from(v.pointer("/Backend/VNI")?.as_u64()?).ok()
    })
}

/// Reads the agent's log on the pair's node and judges it against the rule.
pub async fn observe(ctx: &Ctx<'_>, case: &Case<'_>, agent: Agent, rule: &LogRule<'_>) -> Probed {
    let (_, node) = match case.node(ctx.facts) {
        Ok(n) => n,
        Err(p) => return p.into(),
    };
    // The cluster's VNI, where the rule holds the node to it.
    let must = match rule.must.filter(|m| m.contains(CLUSTER_VNI)) {
        Some(m) => Some(with_cluster_vni(m, cluster_vni(&ctx.client).await)),
        None => rule.must.map(str::to_string),
    };
    let rule = &LogRule {
        must: must.as_deref(),
        ..*rule
    };
    // An agent that just (re)started has not logged everything yet: a log that is empty or not
    // clean is read again until the pod-flow settle window has passed.
    let until = ctx.settle_until(crate::probes::settle::FlowKind::Pod);
    // A log that is still empty (an agent pod that has not started, or a read the API server
    // could not answer yet) is waited for a little longer than the settle window: an empty log
    // says nothing, and on a busy cluster the agents may start after the run does.
    let empty_until = until.max(tokio::time::Instant::now() + ctx.clock.real_wait(EMPTY_LOG_WAIT));
    // Where the node's kubelet answers the node log query, the agent's service by the name the
    // platform gives it.
    let query = (log_query_enabled(node.configz.as_ref()) == Some(true)).then(|| {
        let platform = ctx
            .facts
            .report
            .platform
            .as_ref()
            .map_or("unknown", |p| p.value.as_str());
        let v2 = ctx
            .facts
            .report
            .service_proxy
            .as_ref()
            .is_some_and(|p| p.value == "anetd");
        let agents = crate::cluster::agents::windows(platform, v2);
        match agent {
            Agent::KubeProxy => agents.kube_proxy_service.unwrap_or("kube-proxy"),
            Agent::Flanneld => "flanneld",
        }
        .to_string()
    });
    let (log, finding) = loop {
        let log = match log_of(&ctx.client, &node.name, agent, query.as_deref()).await {
            Err(why) => return Probed::Error(why),
            Ok(None) => {
                return Probed::Unknown(format!(
                    "unknown: {} has no {} pod and its kubelet serves no /logs/{}",
                    node.name,
                    agent.name(),
                    agent.node_log()
                ));
            }
            Ok(Some(log)) => log,
        };
        let finding = judge_log(&log.text, rule);
        let out_of_time = tokio::time::Instant::now() >= until;
        // An agent that has logged nothing yet (still starting) shows nothing either way.
        if log.text.trim().is_empty() {
            if tokio::time::Instant::now() >= empty_until {
                return Probed::Unknown(format!(
                    "unknown: the log of {} on {} is empty (is the agent running?)",
                    log.pod, node.name
                ));
            }
        } else if matches!(finding, Ok(LogFinding::Clean) | Err(_)) || out_of_time {
            break (log, finding);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    match finding {
        Err(bad) => Probed::Error(format!("the check's log expression: {bad}")),
        Ok(LogFinding::Clean) => Probed::seen(
            Observation::Reached(format!("log of {}", log.pod)),
            format!("{}: the log of {} has no offending line", node.name, log.pod),
        ),
        Ok(LogFinding::Offence(offence)) => Probed::seen(
            Observation::Failed(FailureClass::Mismatch),
            format!("{}: the log of {} says: {offence}", node.name, log.pod),
        ),
        Ok(LogFinding::Silent(why)) => {
            Probed::Unknown(format!("unknown: the log of {} on {}: {why}", log.pod, node.name))
        }
    }
}

/// What a log shows against a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogFinding {
    /// Nothing breaks the rule.
    Clean,
    /// The first line that breaks it — one matching `fails`, or one matching `line` but not
    /// `must` — or a note that no line matches `requires`.
    Offence(String),
    /// No line matches `line`: the log does not show what the rule is about.
    Silent(String),
}

/// Judges a log against a rule. `Err` is an invalid expression (suites are linted, so only a
/// bad override).
pub fn judge_log(log: &str, rule: &LogRule<'_>) -> Result<LogFinding, regex::Error> {
    let fails = rule.fails.map(Regex::new).transpose()?;
    let cleared = rule.cleared_by.map(Regex::new).transpose()?;
    let line = rule.line.map(Regex::new).transpose()?;
    let must = rule.must.map(Regex::new).transpose()?;
    let lines: Vec<&str> = log.lines().collect();
    // A failing line a later line clears (the step was retried and succeeded) is no failure.
    let standing = |i: usize| {
        !cleared
            .as_ref()
            .is_some_and(|c| lines[i + 1..].iter().any(|l| c.is_match(l)))
    };
    if let Some(offence) = lines.iter().enumerate().find_map(|(i, l)| {
        let failed = fails.as_ref().is_some_and(|f| f.is_match(l)) && standing(i);
        let broken = matches!((&line, &must), (Some(sel), Some(m)) if sel.is_match(l) && !m.is_match(l));
        (failed || broken).then_some(*l)
    }) {
        return Ok(LogFinding::Offence(offence.to_string()));
    }
    if let Some(required) = rule.requires {
        let re = Regex::new(required)?;
        if !lines.iter().any(|l| re.is_match(l)) {
            // A start-up line is only in the log of the agent's current start: once the log
            // rotated, it is gone without anything being wrong.
            if let Some(start) = rule.started
                && !lines.iter().any(|l| l.contains(start))
            {
                return Ok(LogFinding::Silent(format!(
                    "no line matches /{required}/, and the log no longer holds the agent's start (“{start}”): rotated, so it cannot tell"
                )));
            }
            return Ok(LogFinding::Offence(format!("(no line matches /{required}/)")));
        }
    }
    if let (Some(sel), Some(text)) = (&line, rule.line)
        && !log.lines().any(|l| sel.is_match(l))
    {
        return Ok(LogFinding::Silent(format!("no line matches “{text}”")));
    }
    Ok(LogFinding::Clean)
}

/// What a log must and must not say (a `logs` probe's expressions).
#[derive(Debug, Clone, Copy, Default)]
pub struct LogRule<'a> {
    pub fails: Option<&'a str>,
    /// A later line matching it clears a `fails` line.
    pub cleared_by: Option<&'a str>,
    pub requires: Option<&'a str>,
    /// The agent's start-up line ([`crate::catalogue::suite::Agent::start_line`]).
    pub started: Option<&'a str>,
    pub line: Option<&'a str>,
    pub must: Option<&'a str>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const FLANNELD: &str = "I1124 main.go:352] Found network config - Backend type: vxlan\n\
        I1124 vxlan_windows.go:120] VXLAN config: Name=vxlan0 MacPrefix=0E-2A VNI=4096 Port=4789 GBP=false DirectRouting=false\n\
        I1124 main.go:410] Wrote subnet file to C:\\run\\flannel\\subnet.env";

    #[rstest]
    #[case::healthy(FLANNELD, Some("Failed to write subnet file"), None, None, None)]
    #[case::required_line_present(FLANNELD, None, Some("Wrote subnet file"), None, None)]
    #[case::subnet_env(
        "W1124 main.go:411] Failed to write subnet file: open C:\\run\\flannel\\subnet.env: The system cannot find the path specified.",
        Some("Failed to write subnet file"),
        None,
        None,
        Some(
            "W1124 main.go:411] Failed to write subnet file: open C:\\run\\flannel\\subnet.env: The system cannot find the path specified."
        )
    )]
    #[case::vni_4096(FLANNELD, None, Some("VXLAN config"), Some(r"\bVNI=4096\b.*\bPort=4789\b"), None)]
    #[case::vni_other(
        "I1124 vxlan_windows.go:120] VXLAN config: Name=vxlan0 MacPrefix=0E-2A VNI=4097 Port=4789",
        None,
        Some("VXLAN config"),
        Some(r"\bVNI=4096\b.*\bPort=4789\b"),
        Some("I1124 vxlan_windows.go:120] VXLAN config: Name=vxlan0 MacPrefix=0E-2A VNI=4097 Port=4789")
    )]
    fn a_log_breaks_the_rule_on_its_first_offending_line(
        #[case] log: &str,
        #[case] fails: Option<&str>,
        #[case] line: Option<&str>,
        #[case] must: Option<&str>,
        #[case] want: Option<&str>,
    ) {
        // The middle column is `requires` for the case above, `line` elsewhere.
        let rule = if line == Some("Wrote subnet file") {
            LogRule {
                fails,
                requires: line,
                ..LogRule::default()
            }
        } else {
            LogRule {
                fails,
                line,
                must,
                ..LogRule::default()
            }
        };
        let want = want.map_or(LogFinding::Clean, |w| LogFinding::Offence(w.to_string()));
        assert_eq!(judge_log(log, &rule).expect("valid expressions"), want);
    }

    /// The embedded suite's rule of `check` (a logs probe), with its agent's start line.
    fn suite_rule(check: &str) -> (Option<String>, Option<String>, Option<String>, &'static str) {
        let rules = crate::catalogue::rules::Catalogue::embedded().expect("rules");
        let suites = crate::catalogue::suite::Suites::load(None, &rules).expect("suites");
        let probe = suites
            .suites
            .iter()
            .flat_map(|s| &s.checks)
            .find(|c| c.name == check)
            .map(|c| c.probe.clone())
            .expect("the check");
        match probe {
            crate::catalogue::suite::Probe::Logs {
                agent,
                fails,
                cleared_by,
                requires,
                ..
            } => (fails, cleared_by, requires, agent.start_line()),
            other => panic!("{check} is a logs check: {other:?}"),
        }
    }

    fn judged(check: &str, log: &str) -> LogFinding {
        let (fails, cleared_by, requires, start) = suite_rule(check);
        let rule = LogRule {
            fails: fails.as_deref(),
            cleared_by: cleared_by.as_deref(),
            requires: requires.as_deref(),
            started: Some(start),
            ..LogRule::default()
        };
        judge_log(log, &rule).expect("valid expressions")
    }

    const PROXY_START: &str = "I1124 server.go:483] \"Version info\" version=\"v1.32.3\"\n\
        I1124 server_windows.go:110] \"Using Kernelspace Proxier.\"\n";

    /// kube-proxy's missing --hostname-override is a lookup that keeps failing with `nodes
    /// "<name>" not found`; a retry after an API blip (or before the kubelet registered the
    /// node) that a later success clears is not.
    #[rstest]
    #[case::healthy(
        "I1124 server.go:698] \"Successfully retrieved node IP(s)\" IPs=[\"10.1.0.13\"]\n",
        false
    )]
    #[case::api_blip_retried(
        "E1124 server.go:601] \"Failed to retrieve node info\" err=\"Get \\\"https://10.1.0.10:6443/api/v1/nodes/win2022-1\\\": dial tcp 10.1.0.10:6443: i/o timeout\"\n\
         I1124 server.go:698] \"Successfully retrieved node IP(s)\" IPs=[\"10.1.0.13\"]\n",
        false
    )]
    #[case::registered_late(
        "E1124 server.go:601] \"Failed to retrieve node info\" err=\"nodes \\\"win2022-1\\\" not found\"\n\
         I1124 server.go:698] \"Successfully retrieved node IP(s)\" IPs=[\"10.1.0.13\"]\n",
        false
    )]
    #[case::wrong_name_persists(
        "E1124 server.go:601] \"Failed to retrieve node info\" err=\"nodes \\\"win-5k2l9q3hd7a\\\" not found\"\n\
         E1124 server.go:601] \"Failed to retrieve node info\" err=\"nodes \\\"win-5k2l9q3hd7a\\\" not found\"\n\
         W1124 proxier.go:457] \"Invalid nodeIP, initializing kube-proxy with 127.0.0.1 as nodeIP\"\n",
        true
    )]
    fn kube_proxy_hostname_override(#[case] lines: &str, #[case] offends: bool) {
        let found = judged("kube-proxy-hostname-override", &format!("{PROXY_START}{lines}"));
        assert_eq!(matches!(found, LogFinding::Offence(_)), offends, "{found:?}");
        if !offends {
            assert_eq!(found, LogFinding::Clean);
        }
    }

    /// flanneld's "Wrote subnet file" is one of its first lines: a log that still holds its start
    /// without it is a failure, one whose start rotated away cannot tell.
    #[rstest]
    #[case::whole(FLANNELD_START, true, false)]
    #[case::stopped_waiting(
        "I1124 main.go:532] Using interface with name Ethernet and address 10.1.0.13\n\
        Waiting for the Network to be created\n",
        false,
        false
    )]
    #[case::rotated(
        "I1124 vxlan_network_windows.go:229] Subnet added: 10.244.1.0/24 via 10.1.0.11\n",
        false,
        true
    )]
    fn a_start_up_line_rotated_away_is_indeterminate(#[case] log: &str, #[case] clean: bool, #[case] silent: bool) {
        let found = judged("flannel-subnet-env", log);
        assert_eq!(found == LogFinding::Clean, clean, "{found:?}");
        assert_eq!(matches!(found, LogFinding::Silent(_)), silent, "{found:?}");
    }

    const FLANNELD_START: &str = "I1124 main.go:532] Using interface with name Ethernet and address 10.1.0.13\n\
        I1124 main.go:410] Wrote subnet file to C:\\run\\flannel\\subnet.env\n";

    #[test]
    fn an_empty_log_lacks_its_required_line() {
        let rule = LogRule {
            fails: Some("Failed to write subnet file"),
            requires: Some("Wrote subnet file"),
            ..LogRule::default()
        };
        assert_eq!(
            judge_log("", &rule).expect("valid"),
            LogFinding::Offence("(no line matches /Wrote subnet file/)".to_string())
        );
    }

    #[test]
    fn a_log_without_the_line_a_rule_is_about_says_nothing() {
        let rule = LogRule {
            line: Some("VXLAN config"),
            must: Some("VNI=4096"),
            ..LogRule::default()
        };
        assert_eq!(
            judge_log("I1124 main.go:231] Created subnet manager", &rule).expect("valid"),
            LogFinding::Silent("no line matches “VXLAN config”".to_string())
        );
    }

    #[rstest]
    #[case::windows_kube_proxy(Agent::KubeProxy, "kube-proxy-windows-x7k2p", &["sigwindowstools/kube-proxy:v1.32.3-calico-hostprocess"], true)]
    #[case::linux_kube_proxy(Agent::KubeProxy, "kube-proxy-4kq9z", &["registry.k8s.io/kube-proxy:v1.32.3"], true)]
    #[case::flannel(Agent::Flanneld, "kube-flannel-ds-windows-amd64-2xk8d", &["sigwindowstools/flannel:v0.26.1-hostprocess"], true)]
    #[case::flannel_is_not_kube_proxy(Agent::KubeProxy, "kube-flannel-ds-q8m2x", &["docker.io/flannel/flannel:v0.26.1"], false)]
    #[case::cni_plugin_image_alone(Agent::Flanneld, "kube-flannel-ds-q8m2x", &["docker.io/flannel/flannel-cni-plugin:v1.5.1"], false)]
    fn agent_pods_are_told_by_name_and_image(
        #[case] agent: Agent,
        #[case] pod: &str,
        #[case] images: &[&str],
        #[case] is: bool,
    ) {
        assert_eq!(agent.is(pod, images), is);
    }

    /// The node log query is used only where the kubelet enables it, by the service's name.
    #[rstest]
    #[case::on(serde_json::json!({"kubeletconfig": {"enableSystemLogQuery": true, "featureGates": {"NodeLogQuery": true}}}), Some(true))]
    #[case::gate_off(serde_json::json!({"kubeletconfig": {"enableSystemLogQuery": true}}), Some(false))]
    #[case::handler_off(serde_json::json!({"kubeletconfig": {"enableSystemLogQuery": true, "enableSystemLogHandler": false, "featureGates": {"NodeLogQuery": true}}}), Some(false))]
    #[case::not_set(serde_json::json!({"kubeletconfig": {}}), Some(false))]
    fn the_node_log_query_where_enabled(#[case] configz: serde_json::Value, #[case] on: Option<bool>) {
        assert_eq!(log_query_enabled(Some(&configz)), on);
        assert_eq!(log_query_enabled(None), None);
        assert_eq!(
            query_path("akswin000000", "Kubeproxy"),
            "/api/v1/nodes/akswin000000/proxy/logs/?query=Kubeproxy"
        );
        assert_eq!(query_path("n", "a b"), "/api/v1/nodes/n/proxy/logs/?query=a%20b");
    }

    /// The VXLAN rule holds a node to the cluster's VNI where net-conf.json sets one, else to any
    /// VNI flannel allows on Windows (4096 or more), always with port 4789.
    #[rstest]
    #[case::cluster_4096(Some(4096), "VNI=4096 Port=4789", true)]
    #[case::cluster_4096_node_4097(Some(4096), "VNI=4097 Port=4789", false)]
    #[case::cluster_4097(Some(4097), "VNI=4097 Port=4789", true)]
    #[case::unknown_4097(None, "VNI=4097 Port=4789", true)]
    #[case::unknown_5000(None, "VNI=5000 Port=4789", true)]
    #[case::unknown_1(None, "VNI=1 Port=4789", false)]
    #[case::unknown_4095(None, "VNI=4095 Port=4789", false)]
    #[case::unknown_port(None, "VNI=4096 Port=8472", false)]
    fn the_vni_is_the_clusters_or_a_windows_one(#[case] vni: Option<u32>, #[case] line: &str, #[case] ok: bool) {
        let must = with_cluster_vni(r"\bVNI=CLUSTER_VNI\b.*\bPort=4789\b", vni);
        let re = regex::Regex::new(&must).expect("a pattern");
        assert_eq!(re.is_match(line), ok, "{must}");
    }
}
