//! The gMSA webhook (kubernetes-sigs/windows-gmsa, `admission.gmsaWebhook: true`): at pod
//! create time its mutating webhook inlines the contents of each GMSACredentialSpec a pod or
//! container names in `windowsOptions.gmsaCredentialSpecName`, and refuses the pod when the
//! named spec does not exist — `cred spec <name> does not exist`, HTTP 404, no reason
//! (`admission-webhook/kube_client.go`, `retrieveCredSpecContents`; `webhook.go`,
//! `mutateCreateRequest` and `deniedAdmissionResponse`). The apiserver relays it as
//! `admission webhook "admission-webhook.windows-gmsa.sigs.k8s.io" denied the request: …`
//! (the webhook's name in `admission-webhook/deploy/gmsa-webhook.yml.tpl`). Namespaces labelled
//! `gmsa-webhook=disabled` are left out (its `namespaceSelector`). The bundled cluster serves
//! the CRD with no credential spec (one needs a domain-joined node and an Active Directory
//! account), so every named spec is missing; a spec's contents set in the pod are the
//! validating webhook's business, not modelled.

use serde_json::Value;

use crate::store::api_error::ApiError;
use crate::vocab::json as j;

/// The webhook's name, as the apiserver quotes it.
pub const WEBHOOK: &str = "admission-webhook.windows-gmsa.sigs.k8s.io";

/// Whether the webhook's `namespaceSelector` leaves `namespace` out.
pub fn exempt(namespace: &Value) -> bool {
    j::str(namespace, "/metadata/labels/gmsa-webhook") == "disabled"
}

/// The credential spec names `pod` asks the webhook to inline: the pod's, then each
/// container's and init container's (`iterateOverWindowsSecurityOptions`), where the contents
/// are not set already.
fn named(pod: &Value) -> Vec<&str> {
    let options = std::iter::once(pod.pointer("/spec/securityContext/windowsOptions")).chain(
        ["/spec/containers", "/spec/initContainers"]
            .into_iter()
            .flat_map(|p| j::array(pod, p))
            .map(|c| c.pointer("/securityContext/windowsOptions")),
    );
    options
        .flatten()
        .filter(|o| o.get("gmsaCredentialSpec").is_none())
        .filter_map(|o| o.get("gmsaCredentialSpecName").and_then(Value::as_str))
        .collect()
}

/// Refuses `pod` when it names a credential spec (none exists in the bundled cluster).
pub fn review(pod: &Value) -> Result<(), ApiError> {
    match named(pod).first() {
        None => Ok(()),
        Some(name) => Err(ApiError::WebhookDenied {
            webhook: WEBHOOK.into(),
            message: format!("cred spec {name} does not exist"),
            code: 404,
            reason: "",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case::pod_level(json!({"spec": {"securityContext": {"windowsOptions": {"gmsaCredentialSpecName": "webapp1"}}, "containers": [{"name": "c"}]}}), Some("webapp1"))]
    #[case::container_level(json!({"spec": {"containers": [{"name": "c", "securityContext": {"windowsOptions": {"gmsaCredentialSpecName": "db"}}}]}}), Some("db"))]
    #[case::contents_given(json!({"spec": {"containers": [{"name": "c", "securityContext": {"windowsOptions": {"gmsaCredentialSpecName": "db", "gmsaCredentialSpec": "{}"}}}]}}), None)]
    #[case::none(json!({"spec": {"containers": [{"name": "c", "securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}}}]}}), None)]
    fn a_named_credential_spec_that_does_not_exist_is_refused(#[case] pod: Value, #[case] refused: Option<&str>) {
        match (review(&pod), refused) {
            (Ok(()), None) => {}
            (Err(e), Some(name)) => {
                assert_eq!(e.code(), 404);
                let text = e.to_string();
                assert!(text.contains(&format!("cred spec {name} does not exist")), "{text}");
                assert!(text.contains(WEBHOOK), "{text}");
            }
            (got, want) => panic!("{got:?} for {want:?}"),
        }
    }

    #[test]
    fn a_namespace_labelled_disabled_is_left_out() {
        assert!(exempt(&json!({"metadata": {"labels": {"gmsa-webhook": "disabled"}}})));
        assert!(!exempt(&json!({"metadata": {"name": "run"}})));
    }
}
