//! A policy engine's validating admission webhook (`admission.by: webhook`, the default): pods
//! using a denied privilege — hostPort, hostNetwork, HostProcess — are refused at create time
//! with the denial a real apiserver relays from Gatekeeper.
//!
//! Shapes, from upstream:
//! - the apiserver wraps a webhook's refusal as `admission webhook "<name>" denied the request:
//!   <message>` with the webhook's status code and reason (kubernetes `staging/src/k8s.io/
//!   apiserver/pkg/admission/plugin/webhook/errors/statuserror.go`, `ToStatusErr`);
//! - Gatekeeper's webhook is `validation.gatekeeper.sh`, answers 403 with reason `Forbidden`,
//!   and prefixes each violation with its constraint's name in brackets
//!   (open-policy-agent/gatekeeper `pkg/webhook/policy.go`; the reason since
//!   open-policy-agent/gatekeeper#1692);
//! - the host networking message is gatekeeper-library's `k8spsphostnetworkingports`
//!   (`library/pod-security-policy/host-network-ports`): `The specified hostNetwork and hostPort
//!   are not allowed, pod: <name>. Allowed values: <parameters>`;
//! - kube-system is exempt, as Azure Policy's built-in Kubernetes definitions exclude it by
//!   default (`excludedNamespaces`) and Gatekeeper deployments exempt it; so are the namespaces
//!   of network add-ons that run in their own (`kube-flannel`, `calico-system`,
//!   `ovn-kubernetes`), as an admin exempts them with the same `excludedNamespaces` parameter —
//!   or the cluster would have no pod network (`super::SYSTEM_NAMESPACES`, applied before this
//!   module is asked).

use serde_json::Value;

use super::{name_of, uses};
use crate::config::topology::{Admission, Privilege};
use crate::store::api_error::ApiError;

/// The webhook's name, as the apiserver quotes it.
pub const WEBHOOK: &str = "validation.gatekeeper.sh";

/// The violations of `pod`, one message per constraint.
pub fn violations(policy: &Admission, pod: &Value) -> Vec<String> {
    let name = name_of(pod);
    let denies = |p: Privilege| policy.deny.contains(&p);
    let mut out = Vec::new();
    let networking = (denies(Privilege::HostNetwork) && uses(pod, Privilege::HostNetwork))
        || (denies(Privilege::HostPort) && uses(pod, Privilege::HostPort));
    if networking {
        // The constraint's parameters, printed as Rego's sprintf %v prints an object.
        let mut params = format!("{{\"hostNetwork\": {}", !denies(Privilege::HostNetwork));
        if denies(Privilege::HostPort) {
            params.push_str(", \"max\": 0, \"min\": 0");
        }
        params.push('}');
        out.push(format!(
            "[psp-host-network-ports] The specified hostNetwork and hostPort are not allowed, pod: {name}. Allowed values: {params}"
        ));
    }
    if denies(Privilege::HostProcess) && uses(pod, Privilege::HostProcess) {
        out.push(format!(
            "[psp-windows-hostprocess] HostProcess containers are not allowed, pod: {name}"
        ));
    }
    out
}

/// Refuses `pod` if it violates the policy: Gatekeeper joins its violations with newlines.
pub fn review(policy: &Admission, pod: &Value) -> Result<(), ApiError> {
    let found = violations(policy, pod);
    if found.is_empty() {
        return Ok(());
    }
    Err(ApiError::WebhookDenied {
        webhook: WEBHOOK.into(),
        message: found.join("\n"),
        code: 403,
        reason: "Forbidden",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn all() -> Admission {
        Admission {
            deny: vec![Privilege::HostPort, Privilege::HostNetwork, Privilege::HostProcess],
            ..Admission::OPEN
        }
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    /// Each privilege is refused where denied, with Gatekeeper's message; kube-system and a pod
    /// without privileges pass; nothing is refused when nothing is denied.
    #[rstest]
    #[case::host_port(
        json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}),
        "default",
        Some("[psp-host-network-ports] The specified hostNetwork and hostPort are not allowed, pod: p. Allowed values: {\"hostNetwork\": false, \"max\": 0, \"min\": 0}")
    )]
    #[case::init_host_port(
        json!({"initContainers": [{"name": "i", "ports": [{"containerPort": 80, "hostPort": 1}]}], "containers": [{"name": "c"}]}),
        "team",
        Some("[psp-host-network-ports]")
    )]
    #[case::host_network(json!({"hostNetwork": true, "containers": [{"name": "c"}]}), "default", Some("[psp-host-network-ports]"))]
    #[case::host_process_pod(
        json!({"securityContext": {"windowsOptions": {"hostProcess": true}}, "hostNetwork": false, "containers": [{"name": "c"}]}),
        "default",
        Some("[psp-windows-hostprocess] HostProcess containers are not allowed, pod: p")
    )]
    #[case::host_process_container(
        json!({"containers": [{"name": "c", "securityContext": {"windowsOptions": {"hostProcess": true}}}]}),
        "default",
        Some("[psp-windows-hostprocess]")
    )]
    #[case::kube_system_is_exempt(json!({"hostNetwork": true, "containers": [{"name": "c"}]}), "kube-system", None)]
    #[case::no_privileges(
        json!({"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}),
        "default",
        None
    )]
    fn denied_privileges(#[case] spec: Value, #[case] ns: &str, #[case] refused: Option<&str>) {
        let review = crate::store::policy::review;
        let got = review(&all(), ns, &pod(spec.clone()));
        match refused {
            None => assert_eq!(got, Ok(())),
            Some(needle) => {
                let err = got.expect_err("refused");
                assert_eq!((err.code(), err.reason()), (403, "Forbidden"));
                let text = err.to_string();
                assert!(
                    text.starts_with("admission webhook \"validation.gatekeeper.sh\" denied the request: "),
                    "{text}"
                );
                assert!(text.contains(needle), "{text}");
            }
        }
        assert_eq!(review(&Admission::default(), ns, &pod(spec)), Ok(()));
    }

    /// Only the listed privileges are denied: with hostPort alone, hostNetwork stays allowed.
    #[test]
    fn only_listed_privileges_are_denied() {
        let policy = Admission {
            deny: vec![Privilege::HostPort],
            ..Admission::OPEN
        };
        let host_network = pod(json!({"hostNetwork": true, "containers": [{"name": "c"}]}));
        assert_eq!(review(&policy, &host_network), Ok(()));
        let host_port = pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": 2}]}]}));
        let err = review(&policy, &host_port).expect_err("refused");
        assert!(
            err.to_string()
                .ends_with("Allowed values: {\"hostNetwork\": true, \"max\": 0, \"min\": 0}"),
            "{err}"
        );
    }
}
