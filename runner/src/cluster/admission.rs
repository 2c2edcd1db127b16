//! Refusals of the run's objects by the cluster's admission chain, told apart from the API
//! status (code, reason, message shape) of each mechanism: a validating webhook (Gatekeeper,
//! Kyverno, Azure Policy), a ValidatingAdmissionPolicy, Pod Security admission — the cluster's
//! deliberate policy, which makes the checks needing the object `indeterminate` — or a quota or
//! validation error (a refusal of this object, not a policy).
//!
//! Shapes, from upstream (kubernetes `staging/src/k8s.io/apiserver/pkg/admission/`):
//! - a webhook's denial: `admission webhook "<name>" denied the request: <message>`, with the
//!   webhook's own code (`plugin/webhook/errors/statuserror.go`, `ToStatusErr`);
//! - a ValidatingAdmissionPolicy's: `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy
//!   '<policy>' with binding '<binding>' denied request: <message>` (without a binding, no `with
//!   binding` part), reason `Invalid` and code 422 unless the validation names another reason
//!   (`plugin/policy/validating/dispatcher.go`);
//! - Pod Security admission's: 403 Forbidden, `<resource> "<name>" is forbidden: violates
//!   PodSecurity "<level>:<version>": <checks>` (kubernetes/pod-security-admission
//!   `admission/admission.go`).
//!
//! The authorizer's refusals (`User "…" cannot …`, [`crate::cluster::access`]), authentication,
//! a missing namespace and server errors are not refusals of one object: the run cannot work
//! with the cluster there.

/// Which admission mechanism refused an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mechanism {
    /// A validating admission webhook, by name.
    Webhook { name: String },
    /// A ValidatingAdmissionPolicy and its binding (None when the message names none).
    ValidatingAdmissionPolicy { policy: String, binding: Option<String> },
    /// Pod Security admission at a level (`baseline:latest`).
    PodSecurity { level: String },
}

impl std::fmt::Display for Mechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mechanism::Webhook { name } => write!(f, "the admission webhook {name}"),
            Mechanism::ValidatingAdmissionPolicy {
                policy,
                binding: Some(b),
            } => write!(f, "ValidatingAdmissionPolicy {policy} (binding {b})"),
            Mechanism::ValidatingAdmissionPolicy { policy, binding: None } => {
                write!(f, "ValidatingAdmissionPolicy {policy}")
            }
            Mechanism::PodSecurity { level } => write!(f, "Pod Security admission ({level})"),
        }
    }
}

/// The cluster refused to create one object of the run — an admission policy, a quota or
/// validation — while the run can otherwise work with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    /// The deliberate policy that refused it (None: a limit or a validation error).
    pub by: Option<Mechanism>,
    /// A deliberate policy, not a limit or a bug.
    pub policy: bool,
}

impl Refusal {
    /// The refusal in `e`; None when `e` says the run cannot work with the cluster at all (no
    /// answer, not authenticated, not authorised, the namespace gone).
    pub fn of(e: &kube::Error) -> Option<Self> {
        let kube::Error::Api(s) = e else { return None };
        Self::of_status(s.code, &s.reason, &s.message)
    }

    /// The refusal an API status describes (see [`Refusal::of`]).
    pub fn of_status(code: u16, reason: &str, message: &str) -> Option<Self> {
        let authorizer = code == 403 && crate::cluster::access::denied(message).is_some();
        if !(400..500).contains(&code) || matches!(code, 401 | 404) || authorizer {
            return None;
        }
        let by = policy_of(code, reason, message);
        Some(Self {
            message: message.to_string(),
            policy: by.is_some(),
            by,
        })
    }

    /// The problem of a fixture the cluster refused.
    pub fn problem(&self) -> String {
        let by = match &self.by {
            Some(p) => format!("the cluster's admission policy ({p})"),
            None => "the cluster".to_string(),
        };
        format!(
            "{by} refused it: {} (leave the checks that need it out with --check '!RULE-ID')",
            self.message
        )
    }
}

/// The admission mechanism a refusal's status shows, if any.
fn policy_of(code: u16, reason: &str, message: &str) -> Option<Mechanism> {
    if let Some(name) = quoted_after(message, "admission webhook \"", '"')
        && message.contains("denied the request")
    {
        return Some(Mechanism::Webhook { name: name.to_string() });
    }
    if let Some(policy) = quoted_after(message, "ValidatingAdmissionPolicy '", '\'')
        && message.contains("denied request")
    {
        // Invalid/422 by default; a validation may name Forbidden, Unauthorized or
        // RequestEntityTooLarge instead.
        let expected = matches!(
            (code, reason),
            (422, "Invalid" | "") | (403, "Forbidden" | "") | (401, "Unauthorized") | (413, "RequestEntityTooLarge")
        );
        if expected {
            return Some(Mechanism::ValidatingAdmissionPolicy {
                policy: policy.to_string(),
                binding: quoted_after(message, "with binding '", '\'').map(str::to_string),
            });
        }
    }
    if code == 403
        && matches!(reason, "Forbidden" | "")
        && let Some(level) = quoted_after(message, "violates PodSecurity \"", '"')
    {
        return Some(Mechanism::PodSecurity {
            level: level.to_string(),
        });
    }
    None
}

fn quoted_after<'a>(text: &'a str, marker: &str, close: char) -> Option<&'a str> {
    let start = text.find(marker)? + marker.len();
    let len = text[start..].find(close)?;
    Some(&text[start..start + len]).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn webhook(name: &str) -> Option<Mechanism> {
        Some(Mechanism::Webhook { name: name.into() })
    }

    /// Each admission mechanism's real status is its policy; a quota or a validation error is a
    /// refusal of the object; the authorizer, authentication, a missing namespace and server
    /// errors say the run cannot work with the cluster (real-clusters reference §7).
    #[rstest]
    #[case::gatekeeper(
        403,
        "",
        "admission webhook \"validation.gatekeeper.sh\" denied the request: [psp-host-network-ports] The specified hostNetwork and hostPort are not allowed",
        Some(webhook("validation.gatekeeper.sh"))
    )]
    #[case::kyverno(
        400,
        "BadRequest",
        "admission webhook \"validate.kyverno.svc-fail\" denied the request: resource Pod/m/hp-2 was blocked due to the following policies",
        Some(webhook("validate.kyverno.svc-fail"))
    )]
    #[case::vap_default_reason(
        422, "Invalid",
        "pods \"hp-2\" is forbidden: ValidatingAdmissionPolicy 'deny-host-namespaces' with binding 'deny-host-namespaces-binding' denied request: hostNetwork is not allowed",
        Some(Some(Mechanism::ValidatingAdmissionPolicy { policy: "deny-host-namespaces".into(), binding: Some("deny-host-namespaces-binding".into()) }))
    )]
    #[case::vap_forbidden_reason(
        403, "Forbidden",
        "pods \"hp-2\" is forbidden: ValidatingAdmissionPolicy 'no-hostport' denied request: hostPort is not allowed",
        Some(Some(Mechanism::ValidatingAdmissionPolicy { policy: "no-hostport".into(), binding: None }))
    )]
    #[case::pod_security(
        403, "Forbidden",
        "pods \"hp-2\" is forbidden: violates PodSecurity \"baseline:latest\": hostPort (container \"netexec\" uses hostPort 48080)",
        Some(Some(Mechanism::PodSecurity { level: "baseline:latest".into() }))
    )]
    #[case::quota(
        403,
        "Forbidden",
        "pods \"srv-1\" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=10, limited: pods=10",
        Some(None)
    )]
    #[case::invalid(
        422,
        "Invalid",
        "Pod \"srv-1\" is invalid: spec.containers[0].image: Required value",
        Some(None)
    )]
    // A policy's words quoted in a validation error are not that policy's refusal.
    #[case::words_in_a_500(500, "InternalError", "admission webhook \"x\" denied the request: no", None)]
    #[case::rbac(
        403,
        "Forbidden",
        "pods \"srv-1\" is forbidden: User \"ci\" cannot patch resource \"pods\" in API group \"\" in the namespace \"m\"",
        None
    )]
    #[case::unauthenticated(401, "Unauthorized", "Unauthorized", None)]
    #[case::namespace_gone(404, "NotFound", "namespaces \"m\" not found", None)]
    #[case::server(500, "InternalError", "etcdserver: request timed out", None)]
    fn each_mechanism_is_told_by_its_status(
        #[case] code: u16,
        #[case] reason: &str,
        #[case] message: &str,
        #[case] expected: Option<Option<Mechanism>>,
    ) {
        let got = Refusal::of_status(code, reason, message);
        assert_eq!(got.as_ref().map(|r| r.by.clone()), expected, "{got:?}");
        if let Some(r) = got {
            assert_eq!(r.policy, r.by.is_some());
            assert!(
                r.problem().contains(message) && r.problem().contains("--check '!"),
                "{}",
                r.problem()
            );
            if let Some(p) = &r.by {
                assert!(r.problem().contains(&p.to_string()), "{}", r.problem());
            }
        }
    }
}
