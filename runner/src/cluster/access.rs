//! Refusals by the API server's authorizer (RBAC, webhook authorizers) recognised in an API
//! error, so that a permission the run's identity goes without makes a cell `indeterminate`
//! naming it — never `error` or `fail`.
//!
//! Shape, from upstream: the apiserver answers 403 Forbidden with `<resource> "<name>" is
//! forbidden: User "<user>" cannot <verb> resource "<resource>" in API group "<group>" (in the
//! namespace "<ns>" | at the cluster scope)` (kubernetes `staging/src/k8s.io/apiserver/pkg/
//! endpoints/handlers/responsewriters/errors.go`, `forbiddenMessage`); admission refusals are
//! 403s too but never say `User … cannot` (they say `violates PodSecurity`, `admission webhook`,
//! `ValidatingAdmissionPolicy`).

/// `no permission to list daemonsets.apps at the cluster scope` when `text` (an API error's
/// message, as kube-rs prints it) is the authorizer's refusal; None otherwise.
pub fn denied(text: &str) -> Option<String> {
    let at = text.find("is forbidden: User \"")?;
    let rest = &text[at..];
    let cannot = rest.find("\" cannot ")? + "\" cannot ".len();
    let what = &rest[cannot..];
    let verb = what.split_whitespace().next()?;
    let resource = quoted_after(what, "resource \"")?;
    let group = quoted_after(what, "in API group \"").unwrap_or_default();
    let qualified = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    let scope = match quoted_after(what, "in the namespace \"") {
        Some(ns) => format!(" in namespace {ns}"),
        None => " at the cluster scope".to_string(),
    };
    Some(format!("no permission to {verb} {qualified}{scope}"))
}

fn quoted_after<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    let start = text.find(marker)? + marker.len();
    let len = text[start..].find('"')?;
    Some(&text[start..start + len])
}

/// The indeterminate reason for a probe that the authorizer refused: the permission and that
/// the check could not run without it.
pub fn unknown_because(denial: &str) -> String {
    format!("{denial}: the check could not read what it needs (grant it, e.g. deploy/rbac.yaml, to judge this cell)")
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::cluster_list(
        "listing workloads: ApiError: daemonsets.apps is forbidden: User \"system:serviceaccount:team-a:mixcheck\" cannot list resource \"daemonsets\" in API group \"apps\" at the cluster scope: Forbidden (Status { code: 403 })",
        Some("no permission to list daemonsets.apps at the cluster scope")
    )]
    #[case::namespaced_get(
        "reading service default/kubernetes: ApiError: services \"kubernetes\" is forbidden: User \"alice\" cannot get resource \"services\" in API group \"\" in the namespace \"default\": Forbidden",
        Some("no permission to get services in namespace default")
    )]
    #[case::subresource(
        "GET /api/v1/nodes/linux-1/proxy/stats/summary: ApiError: nodes \"linux-1\" is forbidden: User \"u\" cannot get resource \"nodes/proxy\" in API group \"\" at the cluster scope: Forbidden",
        Some("no permission to get nodes/proxy at the cluster scope")
    )]
    // Admission refusals are 403s too, but policy, not permission.
    #[case::pod_security(
        "pods \"hp-2\" is forbidden: violates PodSecurity \"baseline:latest\": hostPort (container \"netexec\" uses hostPort 48080)",
        None
    )]
    #[case::webhook(
        "admission webhook \"validation.gatekeeper.sh\" denied the request: [psp] not allowed",
        None
    )]
    #[case::vap(
        "pods \"x\" is forbidden: ValidatingAdmissionPolicy 'deny-host' with binding 'deny-host' denied request: no",
        None
    )]
    #[case::timeout("no answer within 10 s", None)]
    fn the_authorizers_refusal_is_recognised(#[case] text: &str, #[case] expected: Option<&str>) {
        assert_eq!(denied(text).as_deref(), expected);
    }
}
