//! A Kyverno policy refusing namespaces labelled for the `privileged` Pod Security level
//! (`admission.privilegedNamespaces: false`): creating, replacing or patching a namespace so
//! that it carries `pod-security.kubernetes.io/enforce=privileged` is refused by Kyverno's
//! validating webhook, relayed by the API server. Other levels (`baseline`, `restricted`), other
//! values and namespaces without the label pass. It applies whatever `deny` and `by` say.
//!
//! The policy is kyverno/policies `psa/deny-privileged-profile` (ClusterPolicy
//! `deny-privileged-profile`, rule `check-privileged`, a `validate.deny` rule matching
//! Namespaces by the label selector `pod-security.kubernetes.io/enforce: privileged`, message
//! "Only cluster-admins may create Namespaces that allow setting the privileged level."), set
//! to Enforce. The sample exempts holders of the `cluster-admin` ClusterRole; this cluster
//! stands for one where the harness's credentials are not exempt, so it applies to every
//! request here. The namespaces Kyverno's default `resourceFilters` leave out (kyverno/kyverno
//! `charts/kyverno/values.yaml`: kube-system, kube-public, kube-node-lease; a Namespace
//! request's namespace is the namespace itself) and the network add-ons' own
//! (`super::SYSTEM_NAMESPACES`, which flannel and Calico label privileged; added to those
//! filters by the admin) are never refused.
//!
//! The denial, Kyverno 1.10 to 1.18 (kyverno/kyverno, read at `v1.18.0`):
//! - the webhook is `validate.kyverno.svc-fail` (`pkg/config/config.go`
//!   `ValidatingWebhookName` with the `-fail` suffix of policies whose failure policy is Fail,
//!   `pkg/controllers/webhook/controller.go`);
//! - a `deny` rule's message is the rule's `validate.message` as written
//!   (`pkg/engine/handlers/validation/validate_resource.go`, `getDenyMessage`);
//! - `pkg/webhooks/utils/block.go` (`GetBlockedMessages`) words the response as
//!   `\n\nresource <Kind>/<namespace>/<name> was blocked due to the following policies \n\n`
//!   followed by the failed rules as YAML, `gopkg.in/yaml.v2`'s `Marshal` of
//!   `{policy: {rule: message}}`, which folds a plain scalar at the first space past column 80
//!   (`emitterc.go`, `yaml_emitter_write_plain_scalar`; continuation indented by 4). Kyverno 1.19
//!   moved to yaml v3, which does not fold; this models the releases before it;
//! - `pkg/utils/admission/response.go` (`Response`) sends it as a `Status` with that message
//!   and neither code nor reason; the API server raises the code to 400 and keeps the reason
//!   empty (kubernetes `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors/
//!   statuserror.go`, `ToStatusErr`): 400, no `reason`, `admission webhook
//!   "validate.kyverno.svc-fail" denied the request: …` (kubectl prints it as
//!   `Error from server: …`).

use serde_json::Value;

use crate::config::topology::Admission;
use crate::store::api_error::ApiError;
use crate::vocab::json as j;

/// Kyverno's validating webhook for policies that fail closed, as the apiserver quotes it.
pub const WEBHOOK: &str = "validate.kyverno.svc-fail";

/// The Pod Security label the policy reads, as a JSON pointer below the object.
const ENFORCE_LABEL: &str = "/metadata/labels/pod-security.kubernetes.io~1enforce";

/// Namespaces Kyverno's default resource filters leave out, besides `super::SYSTEM_NAMESPACES`.
pub const FILTERED_NAMESPACES: &[&str] = &["kube-public", "kube-node-lease"];

/// The failed rule as yaml.v2 writes it: the message passes column 80 after "the" and is
/// folded there.
const FAILED_RULES: &str = "deny-privileged-profile:\n  check-privileged: Only cluster-admins may create Namespaces that allow setting the\n    privileged level.\n";

/// Refuses `namespace`, as it would be stored, if the policy forbids privileged namespaces and
/// it asks for that level.
pub fn review(policy: &Admission, namespace: &Value) -> Result<(), ApiError> {
    let name = super::name_of(namespace);
    if policy.privileged_namespaces
        || super::SYSTEM_NAMESPACES.contains(&name)
        || FILTERED_NAMESPACES.contains(&name)
        || j::opt_str(namespace, ENFORCE_LABEL) != Some("privileged")
    {
        return Ok(());
    }
    Err(ApiError::WebhookDenied {
        webhook: WEBHOOK.into(),
        message: format!("\n\nresource Namespace//{name} was blocked due to the following policies \n\n{FAILED_RULES}"),
        code: 400,
        reason: "",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn locked() -> Admission {
        Admission {
            privileged_namespaces: false,
            ..Admission::OPEN
        }
    }

    fn namespace(name: &str, level: Option<&str>) -> Value {
        match level {
            Some(l) => json!({"metadata": {"name": name, "labels": {"pod-security.kubernetes.io/enforce": l}}}),
            None => json!({"metadata": {"name": name}}),
        }
    }

    /// The folded rule is yaml.v2's rendering of the sample's message: no line of the
    /// message is folded before it passes column 80, and it reads back as the message.
    #[test]
    fn the_failed_rule_is_folded_past_column_80() {
        let first = FAILED_RULES.lines().nth(1).unwrap_or_default();
        assert!(first.len() > 80 && first.len() - " the".len() <= 80, "{first}");
        let unfolded: String = FAILED_RULES
            .lines()
            .skip(1)
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            unfolded,
            "check-privileged: Only cluster-admins may create Namespaces that allow setting the privileged level."
        );
    }

    /// `privileged` is refused with Kyverno's relayed denial (400, no reason); other levels,
    /// no label and the system namespaces pass; nothing is refused while the field is true.
    #[rstest]
    #[case::privileged("team", Some("privileged"), true)]
    #[case::baseline("team", Some("baseline"), false)]
    #[case::restricted("team", Some("restricted"), false)]
    #[case::unlabelled("team", None, false)]
    #[case::kube_system("kube-system", Some("privileged"), false)]
    #[case::kube_flannel("kube-flannel", Some("privileged"), false)]
    #[case::calico_system("calico-system", Some("privileged"), false)]
    #[case::kube_public("kube-public", Some("privileged"), false)]
    fn privileged_namespaces_are_refused(#[case] name: &str, #[case] level: Option<&str>, #[case] refused: bool) {
        let got = review(&locked(), &namespace(name, level));
        if refused {
            let status = got.expect_err("refused").to_status();
            assert_eq!(status["code"], 400);
            assert!(status.get("reason").is_none(), "{status}");
            assert_eq!(
                status["message"],
                format!(
                    "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource Namespace//{name} was blocked due to the following policies \n\ndeny-privileged-profile:\n  check-privileged: Only cluster-admins may create Namespaces that allow setting the\n    privileged level.\n"
                )
            );
        } else {
            assert_eq!(got, Ok(()));
        }
        assert_eq!(review(&Admission::OPEN, &namespace(name, level)), Ok(()));
    }
}
