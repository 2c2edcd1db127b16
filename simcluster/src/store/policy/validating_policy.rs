//! ValidatingAdmissionPolicies refusing host privileges (`admission.by:
//! validatingAdmissionPolicy`): a pod using a denied privilege is refused at create time by the
//! API server's own ValidatingAdmissionPolicy plugin, with no webhook involved.
//!
//! The policies are the ones Kyverno (1.14 and later, with its admission controller's
//! `--generateValidatingAdmissionPolicy`) generates from the CEL versions of its Pod Security
//! Standards (baseline) samples (kyverno/policies `pod-security-cel/baseline/
//! disallow-host-namespaces`, `disallow-host-ports`, `disallow-host-process`) once they are set
//! to Enforce: a ValidatingAdmissionPolicy named `cpol-<ClusterPolicy>`, bound by
//! `cpol-<ClusterPolicy>-binding` with `validationActions: [Deny]` (kyverno/kyverno `v1.18.0`
//! `pkg/controllers/admissionpolicygenerator/generate-vap.go` and `utils.go`,
//! `constructBindingName`; `pkg/admissionpolicy/builder.go`; before 1.14 the names had no
//! `cpol-`). Each validation's message is the sample's, and none sets a `reason`. kube-system
//! and the network add-ons' namespaces (`super::SYSTEM_NAMESPACES`) are left out by the
//! policies' namespace selector (`kubernetes.io/metadata.name NotIn`), which the generator
//! carries over to the policy's match constraints (kyverno/kyverno
//! `pkg/admissionpolicy/builder.go`). One adaptation, said
//! plainly: the sample `disallow-host-process` reads only the containers' `windowsOptions`;
//! this cluster's copy also reads the pod's, which its containers inherit, and keeps the
//! sample's message — so a HostProcess pod that sets it only at pod level is refused too.
//!
//! The denial, from kubernetes `staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/
//! validating/`:
//! - `validator.go`: a failed validation without `reason` is `Invalid`; its message is the
//!   validation's `message`, trimmed;
//! - `dispatcher.go` (`Dispatch`): the first denial is answered as
//!   `ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request: <message>`,
//!   wrapped by `admission.NewForbidden` (`pods "<name>" is forbidden: …`), with the reason
//!   swapped for the validation's and the code for `reasonToCode`'s (`policy_decision.go`:
//!   `Invalid` is 422), and the denial added to `details.causes`;
//! - which of several failing policies is reported is not specified upstream (the policies are
//!   gathered from a map, `generic/policy_source.go`); here it is the first by name.

use serde_json::Value;

use super::{name_of, uses};
use crate::config::topology::{Admission, Privilege};
use crate::store::api_error::ApiError;

/// One ValidatingAdmissionPolicy: its name, the privilege it refuses and its validation's message.
struct Policy {
    name: &'static str,
    privilege: Privilege,
    message: &'static str,
}

/// The policies, in name order (the ClusterPolicies' names; the generated ones add `cpol-`).
const POLICIES: &[Policy] = &[
    Policy {
        name: "disallow-host-namespaces",
        privilege: Privilege::HostNetwork,
        message: "Sharing the host namespaces is disallowed. The fields spec.hostNetwork, spec.hostIPC, and spec.hostPID must be unset or set to `false`.",
    },
    Policy {
        name: "disallow-host-ports",
        privilege: Privilege::HostPort,
        message: "Use of host ports is disallowed. The fields spec.containers[*].ports[*].hostPort, spec.initContainers[*].ports[*].hostPort, and spec.ephemeralContainers[*].ports[*].hostPort must either be unset or set to `0`.",
    },
    Policy {
        name: "disallow-host-process",
        privilege: Privilege::HostProcess,
        message: "HostProcess containers are disallowed. The field spec.containers[*].securityContext.windowsOptions.hostProcess, spec.initContainers[*].securityContext.windowsOptions.hostProcess, and spec.ephemeralContainers[*].securityContext.windowsOptions.hostProcess must either be undefined or set to `false`.",
    },
];

/// The denial of the first policy `pod` fails among those of the denied privileges.
pub fn denial(policy: &Admission, pod: &Value) -> Option<String> {
    POLICIES
        .iter()
        .find(|p| policy.deny.contains(&p.privilege) && uses(pod, p.privilege))
        .map(|p| {
            format!(
                "ValidatingAdmissionPolicy 'cpol-{name}' with binding 'cpol-{name}-binding' denied request: {}",
                p.message,
                name = p.name
            )
        })
}

/// Refuses `pod` if it fails a policy.
pub fn review(policy: &Admission, pod: &Value) -> Result<(), ApiError> {
    match denial(policy, pod) {
        None => Ok(()),
        Some(message) => Err(ApiError::PolicyDenied {
            group: String::new(),
            resource: "pods".into(),
            name: name_of(pod).into(),
            message,
        }),
    }
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
            by: Enforcement::ValidatingAdmissionPolicy,
            ..Admission::OPEN
        }
    }

    /// Each privilege is refused by its policy: 422 Invalid, `NewForbidden`'s wording, the
    /// denial again as a cause; a pod failing several is refused by the first by name.
    #[rstest]
    #[case::host_network(json!({"hostNetwork": true, "containers": [{"name": "c"}]}), "disallow-host-namespaces", "Sharing the host namespaces is disallowed.")]
    #[case::host_port(json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}), "disallow-host-ports", "Use of host ports is disallowed.")]
    #[case::pod_host_process(json!({"securityContext": {"windowsOptions": {"hostProcess": true}}, "containers": [{"name": "c"}]}), "disallow-host-process", "HostProcess containers are disallowed.")]
    #[case::container_host_process(json!({"containers": [{"name": "c", "securityContext": {"windowsOptions": {"hostProcess": true}}}]}), "disallow-host-process", "HostProcess containers are disallowed.")]
    #[case::first_by_name(json!({"hostNetwork": true, "securityContext": {"windowsOptions": {"hostProcess": true}},
        "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}), "disallow-host-namespaces", "Sharing the host namespaces")]
    fn policies_deny(#[case] spec: Value, #[case] policy: &str, #[case] message: &str) {
        let pod = json!({"metadata": {"name": "p"}, "spec": spec});
        let status = review(&all(), &pod).expect_err("refused").to_status();
        assert_eq!(
            (status["code"].clone(), status["reason"].clone()),
            (json!(422), json!("Invalid"))
        );
        let denial = format!(
            "ValidatingAdmissionPolicy 'cpol-{policy}' with binding 'cpol-{policy}-binding' denied request: {message}"
        );
        let text = status["message"].as_str().unwrap_or_default();
        assert!(
            text.starts_with(&format!("pods \"p\" is forbidden: {denial}")),
            "{text}"
        );
        let cause = status["details"]["causes"][0]["message"].as_str().unwrap_or_default();
        assert_eq!(format!("pods \"p\" is forbidden: {cause}"), text);
        assert_eq!(
            (status["details"]["name"].clone(), status["details"]["kind"].clone()),
            (json!("p"), json!("pods"))
        );
    }

    /// The messages are the samples' own, whole.
    #[test]
    fn the_host_ports_message_is_the_samples() {
        let pod = json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}});
        assert_eq!(
            review(&all(), &pod).expect_err("refused").to_string(),
            "pods \"web\" is forbidden: ValidatingAdmissionPolicy 'cpol-disallow-host-ports' with binding 'cpol-disallow-host-ports-binding' denied request: Use of host ports is disallowed. The fields spec.containers[*].ports[*].hostPort, spec.initContainers[*].ports[*].hostPort, and spec.ephemeralContainers[*].ports[*].hostPort must either be unset or set to `0`."
        );
    }

    /// Only the listed privileges are refused: with hostProcess alone, a host-network pod passes.
    #[test]
    fn only_listed_privileges_are_refused() {
        let policy = Admission {
            deny: vec![Privilege::HostProcess],
            ..all()
        };
        let host_network =
            json!({"metadata": {"name": "p"}, "spec": {"hostNetwork": true, "containers": [{"name": "c"}]}});
        assert_eq!(review(&policy, &host_network), Ok(()));
    }
}
