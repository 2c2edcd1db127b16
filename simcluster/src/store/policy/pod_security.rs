//! Pod Security admission enforcing the `baseline` level (`admission.by: podSecurity`): a pod
//! using a denied privilege is refused at create time as the built-in PodSecurity plugin
//! refuses a baseline violation.
//!
//! The model: the administrators fixed the Pod Security level of user namespaces at
//! `baseline` in the plugin's AdmissionConfiguration (`defaults.enforce: baseline`, version
//! `latest`), with kube-system and the network add-ons' namespaces
//! (`super::SYSTEM_NAMESPACES`) as `exemptions.namespaces` (kubernetes/website `content/en/docs/
//! tasks/configure-pod-container/enforce-standards-admission-controller.md`).
//! Two simplifications, said plainly: a namespace's own `pod-security.kubernetes.io/enforce`
//! label, which would override that default on a real cluster, is not read here (pair this with
//! `privilegedNamespaces: false` for a cluster that also refuses such labels); and only the
//! privileges listed in `deny` are checked, not the rest of the baseline level
//! (privileged containers, capabilities, hostPath volumes, …).
//!
//! Wording, order and status, from kubernetes/pod-security-admission:
//! - `admission/admission.go` (`EvaluatePod`): `violates PodSecurity "baseline:latest": <detail>`,
//!   answered by `admission/response.go` (`forbiddenResponse`) as `NewForbidden` of the pod:
//!   403 Forbidden, `pods "<name>" is forbidden: …`, details `{name, kind: pods}`; kubernetes
//!   `plugin/pkg/admission/security/podsecurity/admission.go` passes that status on as it is;
//! - `policy/checks.go` (`AggregateCheckResult.ForbiddenDetail`): each failed check as
//!   `<reason> (<detail>)`, joined with `, `, in the order of the check IDs, which
//!   `policy/registry.go` sorts: `hostNamespaces`, `hostPorts`, `windowsHostProcess`;
//! - `policy/check_hostNamespaces.go`: `host namespaces (hostNetwork=true)`;
//! - `policy/check_hostPorts.go`: `hostPort (container "c" uses hostPort 8080)`, or
//!   `containers "a", "b" use hostPorts 80, 8080`: the containers in visiting order
//!   (`policy/visitor.go`: init containers, then containers), the ports as a sorted set of
//!   strings;
//! - `policy/check_windowsHostProcess.go`: `hostProcess (pod and container "c" must not set
//!   securityContext.windowsOptions.hostProcess=true)`.

use serde_json::Value;

use super::name_of;
use crate::config::topology::{Admission, Privilege};
use crate::store::api_error::ApiError;
use crate::vocab::json as j;

/// The enforced level and version, as the plugin prints them.
pub const LEVEL: &str = "baseline:latest";

/// `"a", "b"`, as the checks quote container names.
fn quoted(names: &[&str]) -> String {
    names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
}

fn plural<'a>(singular: &'a str, plural: &'a str, count: usize) -> &'a str {
    if count == 1 { singular } else { plural }
}

/// The pod's containers in the checks' visiting order: init containers, then containers.
fn containers(pod: &Value) -> impl Iterator<Item = &Value> {
    ["/spec/initContainers", "/spec/containers", "/spec/ephemeralContainers"]
        .into_iter()
        .flat_map(move |p| j::array(pod, p))
}

/// `hostPort`'s detail, if any container asks for a host port.
fn host_ports(pod: &Value) -> Option<String> {
    let mut bad = Vec::new();
    let mut ports = std::collections::BTreeSet::new();
    for c in containers(pod) {
        let mut uses = false;
        for p in j::array(c, "/ports") {
            if let Some(h) = p.get("hostPort").and_then(Value::as_i64).filter(|h| *h != 0) {
                uses = true;
                ports.insert(h.to_string());
            }
        }
        if uses {
            bad.push(j::str(c, "/name"));
        }
    }
    if bad.is_empty() {
        return None;
    }
    Some(format!(
        "{} {} {} {} {}",
        plural("container", "containers", bad.len()),
        quoted(&bad),
        plural("uses", "use", bad.len()),
        plural("hostPort", "hostPorts", ports.len()),
        ports.into_iter().collect::<Vec<_>>().join(", ")
    ))
}

/// `hostProcess`'s detail, if the pod or a container sets it.
fn host_process(pod: &Value) -> Option<String> {
    let bad: Vec<&str> = containers(pod)
        .filter(|c| j::bool(c, "/securityContext/windowsOptions/hostProcess") == Some(true))
        .map(|c| j::str(c, "/name"))
        .collect();
    let mut setters = Vec::new();
    if j::bool(pod, "/spec/securityContext/windowsOptions/hostProcess") == Some(true) {
        setters.push("pod".to_string());
    }
    if !bad.is_empty() {
        setters.push(format!(
            "{} {}",
            plural("container", "containers", bad.len()),
            quoted(&bad)
        ));
    }
    if setters.is_empty() {
        return None;
    }
    Some(format!(
        "{} must not set securityContext.windowsOptions.hostProcess=true",
        setters.join(" and ")
    ))
}

/// The failed checks among the denied privileges, as `<reason> (<detail>)`, in check order.
pub fn violations(policy: &Admission, pod: &Value) -> Vec<String> {
    let denies = |p: Privilege| policy.deny.contains(&p);
    let mut out = Vec::new();
    if denies(Privilege::HostNetwork) && j::bool(pod, "/spec/hostNetwork") == Some(true) {
        out.push("host namespaces (hostNetwork=true)".to_string());
    }
    if denies(Privilege::HostPort)
        && let Some(detail) = host_ports(pod)
    {
        out.push(format!("hostPort ({detail})"));
    }
    if denies(Privilege::HostProcess)
        && let Some(detail) = host_process(pod)
    {
        out.push(format!("hostProcess ({detail})"));
    }
    out
}

/// Refuses `pod` if it fails a check of a denied privilege.
pub fn review(policy: &Admission, pod: &Value) -> Result<(), ApiError> {
    refuse(LEVEL, violations(policy, pod), pod)
}

/// The built-in plugin enforcing a namespace's own level: its `pod-security.kubernetes.io/
/// enforce` label (`baseline` or `restricted`; `privileged` or no label under the default
/// AdmissionConfiguration enforces nothing) at its `enforce-version` (default `latest`),
/// whatever the topology's `admission` says — every API server from 1.25 runs it
/// (kubernetes/website `content/en/docs/concepts/security/pod-security-admission.md`). The
/// host checks of the baseline level are modelled (host namespaces, host ports, HostProcess);
/// `restricted` includes them; its other checks (non-root, seccomp, capabilities, …) are not.
pub fn review_namespace_level(namespace: &Value, pod: &Value) -> Result<(), ApiError> {
    let labels = namespace.pointer("/metadata/labels");
    let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str).unwrap_or("");
    let level = label("pod-security.kubernetes.io/enforce");
    if !matches!(level, "baseline" | "restricted") {
        return Ok(());
    }
    let version = match label("pod-security.kubernetes.io/enforce-version") {
        "" => "latest",
        v => v,
    };
    let every = Admission {
        deny: vec![Privilege::HostNetwork, Privilege::HostPort, Privilege::HostProcess],
        ..Admission::OPEN
    };
    refuse(&format!("{level}:{version}"), violations(&every, pod), pod)
}

fn refuse(level: &str, found: Vec<String>, pod: &Value) -> Result<(), ApiError> {
    if found.is_empty() {
        return Ok(());
    }
    Err(ApiError::Forbidden {
        group: String::new(),
        resource: "pods".into(),
        name: name_of(pod).into(),
        reason: format!("violates PodSecurity \"{level}\": {}", found.join(", ")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::topology::Enforcement;
    use rstest::rstest;
    use serde_json::json;

    fn all() -> Admission {
        Admission {
            deny: vec![Privilege::HostPort, Privilege::HostNetwork, Privilege::HostProcess],
            by: Enforcement::PodSecurity,
            ..Admission::OPEN
        }
    }

    /// Each check's wording, with the plugin's plurals and ordering.
    #[rstest]
    #[case::host_network(
        json!({"hostNetwork": true, "containers": [{"name": "c"}]}),
        "host namespaces (hostNetwork=true)"
    )]
    #[case::one_host_port(
        json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}),
        "hostPort (container \"c\" uses hostPort 8080)"
    )]
    #[case::host_ports_sorted_as_strings(
        json!({"initContainers": [{"name": "init", "ports": [{"containerPort": 1, "hostPort": 8080}]}],
               "containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": 80}, {"containerPort": 81, "hostPort": 8080}]},
                              {"name": "b"}]}),
        "hostPort (containers \"init\", \"a\" use hostPorts 80, 8080)"
    )]
    #[case::pod_host_process(
        json!({"securityContext": {"windowsOptions": {"hostProcess": true}}, "containers": [{"name": "c"}]}),
        "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)"
    )]
    #[case::pod_and_containers_host_process(
        json!({"securityContext": {"windowsOptions": {"hostProcess": true}},
               "containers": [{"name": "a", "securityContext": {"windowsOptions": {"hostProcess": true}}},
                              {"name": "b", "securityContext": {"windowsOptions": {"hostProcess": true}}}]}),
        "hostProcess (pod and containers \"a\", \"b\" must not set securityContext.windowsOptions.hostProcess=true)"
    )]
    #[case::every_check_in_order(
        json!({"hostNetwork": true, "securityContext": {"windowsOptions": {"hostProcess": true}},
               "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}),
        "host namespaces (hostNetwork=true), hostPort (container \"c\" uses hostPort 80), hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)"
    )]
    fn baseline_violations(#[case] spec: Value, #[case] detail: &str) {
        let pod = json!({"metadata": {"name": "p"}, "spec": spec});
        let err = review(&all(), &pod).expect_err("refused");
        let status = err.to_status();
        assert_eq!(
            (status["code"].clone(), status["reason"].clone()),
            (json!(403), json!("Forbidden"))
        );
        assert_eq!(
            status["message"],
            format!("pods \"p\" is forbidden: violates PodSecurity \"baseline:latest\": {detail}")
        );
        assert_eq!(status["details"], json!({"name": "p", "kind": "pods"}));
    }

    /// A namespace's own label is enforced at its level and version; privileged, unlabelled or
    /// another label's namespace enforces nothing.
    #[rstest]
    #[case::baseline(json!({"pod-security.kubernetes.io/enforce": "baseline"}), Some("baseline:latest"))]
    #[case::restricted_versioned(
        json!({"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "v1.30"}),
        Some("restricted:v1.30")
    )]
    #[case::privileged(json!({"pod-security.kubernetes.io/enforce": "privileged"}), None)]
    #[case::warn_only(json!({"pod-security.kubernetes.io/warn": "baseline"}), None)]
    #[case::unlabelled(json!({}), None)]
    fn a_namespaces_own_level_is_enforced(#[case] labels: Value, #[case] refused_at: Option<&str>) {
        let ns = json!({"metadata": {"name": "team", "labels": labels}});
        let host = json!({"metadata": {"name": "p"}, "spec": {"hostNetwork": true, "containers": [{"name": "c"}]}});
        let got = review_namespace_level(&ns, &host);
        match refused_at {
            Some(level) => assert_eq!(
                got.expect_err("refused").to_string(),
                format!(
                    "pods \"p\" is forbidden: violates PodSecurity \"{level}\": host namespaces (hostNetwork=true)"
                )
            ),
            None => assert_eq!(got, Ok(())),
        }
        let plain = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}});
        assert_eq!(review_namespace_level(&ns, &plain), Ok(()));
    }

    /// Only the listed privileges are checked: with hostPort alone, a host-network pod passes
    /// and a pod with both names only its host port.
    #[test]
    fn only_listed_privileges_are_checked() {
        let policy = Admission {
            deny: vec![Privilege::HostPort],
            ..all()
        };
        let host_network =
            json!({"metadata": {"name": "p"}, "spec": {"hostNetwork": true, "containers": [{"name": "c"}]}});
        assert_eq!(review(&policy, &host_network), Ok(()));
        let both = json!({"metadata": {"name": "p"}, "spec": {"hostNetwork": true,
            "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}});
        assert_eq!(
            review(&policy, &both).expect_err("refused").to_string(),
            "pods \"p\" is forbidden: violates PodSecurity \"baseline:latest\": hostPort (container \"c\" uses hostPort 80)"
        );
        let plain = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}});
        assert_eq!(review(&all(), &plain), Ok(()));
    }
}
