//! The gMSA webhook's footprint: whether the cluster serves the `GMSACredentialSpec` custom
//! resource (`windows.k8s.io`), which kubernetes-sigs/windows-gmsa installs with its webhooks
//! (WUG "Configure GMSA for Windows Pods and containers": install the CRD, then the webhooks).

use std::time::Duration;

use mixcheck_reports::Fact;

/// The API group of the GMSACredentialSpec CRD (windows-gmsa `admission-webhook/deploy/gmsa-crd.yml`).
pub const GROUP: &str = "windows.k8s.io";

/// The webhook's name in its configurations (windows-gmsa `admission-webhook/deploy/gmsa-webhook.yml.tpl`).
pub const WEBHOOK: &str = "admission-webhook.windows-gmsa.sigs.k8s.io";

/// Whether an API error message is the gMSA webhook's denial, as the apiserver relays it
/// (`admission webhook "<name>" denied the request: …`).
pub fn webhook_denial(message: &str) -> bool {
    message.contains(&format!("admission webhook \"{WEBHOOK}\" denied the request"))
}

/// How long API discovery may take.
const DISCOVERY: Duration = Duration::from_secs(10);

/// Whether the cluster serves the CRD, from API discovery (open to every authenticated user);
/// None when discovery does not answer.
pub async fn crd(client: &kube::Client) -> Option<Fact<bool>> {
    let groups = tokio::time::timeout(DISCOVERY, client.list_api_groups())
        .await
        .ok()?
        .ok()?;
    let names: Vec<&str> = groups.groups.iter().map(|g| g.name.as_str()).collect();
    Some(from_groups(&names))
}

/// The fact from the names of the served API groups.
fn from_groups(groups: &[&str]) -> Fact<bool> {
    if groups.contains(&GROUP) {
        Fact::new(
            true,
            format!("API group {GROUP} served (the GMSACredentialSpec CRD of the gMSA webhook)"),
        )
    } else {
        Fact::new(
            false,
            format!(
                "no API group {GROUP} in discovery: the GMSACredentialSpec CRD and the gMSA webhook are not installed"
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::missing_spec(r#"admission webhook "admission-webhook.windows-gmsa.sigs.k8s.io" denied the request: cred spec x does not exist"#, true)]
    #[case::gatekeeper(r#"admission webhook "validation.gatekeeper.sh" denied the request: [c] no"#, false)]
    fn the_webhooks_denial_is_known(#[case] message: &str, #[case] denial: bool) {
        assert_eq!(webhook_denial(message), denial);
    }

    #[rstest]
    #[case::installed(&["apps", "windows.k8s.io"], true)]
    #[case::absent(&["apps", "operator.tigera.io"], false)]
    fn the_crd_is_read_from_discovery(#[case] groups: &[&str], #[case] served: bool) {
        let f = from_groups(groups);
        assert_eq!(f.value, served);
        assert!(f.source.contains(GROUP), "{}", f.source);
    }
}
