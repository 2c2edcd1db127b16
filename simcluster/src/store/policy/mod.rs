//! The cluster's admission policy (topology `admission`): which pods and namespaces it
//! refuses, and which part of the API server refuses them.
//!
//! - `deny` lists host privileges. A pod using one of them outside the system namespaces is
//!   refused at create time by `by`: a policy engine's validating webhook ([`gatekeeper`]), the
//!   API server's ValidatingAdmissionPolicy plugin ([`validating_policy`]) or Pod Security
//!   admission ([`pod_security`]), each with its own status code, reason and message. Only the
//!   listed privileges are refused, whoever refuses them.
//! - `privilegedNamespaces: false`: a Kyverno policy refuses namespaces labelled for the
//!   `privileged` Pod Security level ([`privileged_namespaces`]), whatever `deny` and `by` say.
//!
//! Validating admission sees the name the registry generated from `generateName`: the API
//! server generates it before its validating plugins and webhooks run (kubernetes
//! `staging/src/k8s.io/apiserver/pkg/registry/rest/create.go`, `AdmissionToValidateObjectFunc`,
//! "in case the generated name is populated"), so the messages name the pod it would have
//! created. `store::admission` generates it before asking this module.
//!
//! Webhook denials (Gatekeeper, Kyverno) are relayed as `ToStatusErr(webhookName, result)`
//! words them (`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors/
//! statuserror.go`): the webhook's message behind `admission webhook "<name>" denied the
//! request: `, its reason, its code raised to at least 400. A later revision on kubernetes'
//! master, `ToStatusErr(attr, …)`, also prefixes `<resource> "<name>" is forbidden: ` and
//! answers 403 Forbidden where the webhook set neither; that form is not modelled.

pub mod gatekeeper;
pub mod gmsa;
pub mod pod_security;
pub mod privileged_namespaces;
pub mod validating_policy;

use serde_json::Value;

use crate::config::topology::{Admission, Enforcement, Privilege};
use crate::store::api_error::ApiError;
use crate::vocab::json as j;

/// Namespaces whose pods no policy reviews: kube-system, and the namespaces the network
/// add-ons run in when they have their own — flannel's `kube-flannel`, Calico's
/// `calico-system` (which the Tigera operator labels for the privileged Pod Security level),
/// `ovn-kubernetes` — or the cluster would have no pod network: their agents use the host's
/// network, and HostProcess on Windows. Administrators exempt them the same way (Rancher's
/// restricted PodSecurityConfiguration lists kube-system and calico-system, for one). How each
/// mechanism leaves them out is said in its module.
pub const SYSTEM_NAMESPACES: &[&str] = &["kube-system", "kube-flannel", "calico-system", "ovn-kubernetes"];

/// Whether the pod uses `privilege`: a `hostPort` on a container or init container,
/// `spec.hostNetwork`, or `windowsOptions.hostProcess` on the pod or a container.
pub fn uses(pod: &Value, privilege: Privilege) -> bool {
    let containers = || {
        ["/spec/containers", "/spec/initContainers"]
            .into_iter()
            .flat_map(move |p| j::array(pod, p))
    };
    match privilege {
        Privilege::HostNetwork => j::bool(pod, "/spec/hostNetwork") == Some(true),
        Privilege::HostPort => containers().any(|c| {
            j::array(c, "/ports")
                .iter()
                .any(|p| p.get("hostPort").and_then(Value::as_i64).is_some_and(|h| h > 0))
        }),
        Privilege::HostProcess => {
            j::bool(pod, "/spec/securityContext/windowsOptions/hostProcess") == Some(true)
                || containers().any(|c| j::bool(c, "/securityContext/windowsOptions/hostProcess") == Some(true))
        }
    }
}

/// The object's name, or its `generateName` when it has none yet (as the apiserver's
/// `extractResourceName` falls back to it, `staging/src/k8s.io/apiserver/pkg/admission/errors.go`).
pub fn name_of(obj: &Value) -> &str {
    match j::str(obj, "/metadata/name") {
        "" => j::str(obj, "/metadata/generateName"),
        name => name,
    }
}

/// Refuses `pod`, about to be created in `namespace`, if it uses a denied privilege outside
/// the system namespaces: as `policy.by` refuses it.
pub fn review(policy: &Admission, namespace: &str, pod: &Value) -> Result<(), ApiError> {
    if policy.deny.is_empty() || SYSTEM_NAMESPACES.contains(&namespace) {
        return Ok(());
    }
    match policy.by {
        Enforcement::Webhook => gatekeeper::review(policy, pod),
        Enforcement::ValidatingAdmissionPolicy => validating_policy::review(policy, pod),
        Enforcement::PodSecurity => pod_security::review(policy, pod),
    }
}

/// Refuses a namespace about to be created or changed into `namespace` if the policy
/// forbids what its labels ask for.
pub fn review_namespace(policy: &Admission, namespace: &Value) -> Result<(), ApiError> {
    privileged_namespaces::review(policy, namespace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    /// What counts as using each privilege (containers and init containers alike; HostProcess
    /// on the pod or on a container; a hostPort of 0 is none).
    #[rstest]
    #[case::host_port(Privilege::HostPort, json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}), true)]
    #[case::init_host_port(Privilege::HostPort, json!({"initContainers": [{"name": "i", "ports": [{"containerPort": 80, "hostPort": 1}]}]}), true)]
    #[case::zero_host_port(Privilege::HostPort, json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 0}]}]}), false)]
    #[case::container_port(Privilege::HostPort, json!({"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}), false)]
    #[case::host_network(Privilege::HostNetwork, json!({"hostNetwork": true}), true)]
    #[case::no_host_network(Privilege::HostNetwork, json!({"hostNetwork": false}), false)]
    #[case::pod_host_process(Privilege::HostProcess, json!({"securityContext": {"windowsOptions": {"hostProcess": true}}}), true)]
    #[case::container_host_process(Privilege::HostProcess, json!({"containers": [{"name": "c", "securityContext": {"windowsOptions": {"hostProcess": true}}}]}), true)]
    #[case::no_host_process(Privilege::HostProcess, json!({"containers": [{"name": "c", "securityContext": {"windowsOptions": {"runAsUserName": "x"}}}]}), false)]
    fn privileges_in_use(#[case] privilege: Privilege, #[case] spec: Value, #[case] used: bool) {
        assert_eq!(uses(&pod(spec), privilege), used);
    }

    /// Whoever enforces the policy, the system namespaces are left alone and nothing is refused
    /// when nothing is denied.
    #[rstest]
    fn system_namespaces_and_an_empty_list_refuse_nothing(
        #[values(
            Enforcement::Webhook,
            Enforcement::ValidatingAdmissionPolicy,
            Enforcement::PodSecurity
        )]
        by: Enforcement,
    ) {
        let host = pod(json!({"hostNetwork": true, "containers": [{"name": "c"}]}));
        let denying = Admission {
            deny: vec![Privilege::HostNetwork],
            by,
            ..Admission::OPEN
        };
        for ns in SYSTEM_NAMESPACES {
            assert_eq!(review(&denying, ns, &host), Ok(()));
        }
        assert!(review(&denying, "team", &host).is_err());
        let open = Admission { by, ..Admission::OPEN };
        assert_eq!(review(&open, "team", &host), Ok(()));
    }

    #[test]
    fn a_name_not_yet_generated_is_its_prefix() {
        assert_eq!(name_of(&json!({"metadata": {"generateName": "web-"}})), "web-");
        assert_eq!(
            name_of(&json!({"metadata": {"name": "p", "generateName": "web-"}})),
            "p"
        );
    }
}
