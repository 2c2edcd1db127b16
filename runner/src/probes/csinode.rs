//! `csi-node`: the CSINode object the node's kubelet registers (`storage.k8s.io/v1`), with the
//! CSI drivers whose node plugins registered on the node, and as evidence the pods on the node
//! that reach the host through csi-proxy's named pipes or run as HostProcess containers — how a
//! CSI node plugin works on Windows (STO-CSI).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::storage::v1::CSINode;
use kube::api::{Api, ListParams};
use mixcheck_reports::Os;

use crate::catalogue::suite::FailureClass;
use crate::probes::judgement::{Case, Ctx, Probed};
use crate::probes::transport::Observation;

/// The prefix of csi-proxy's named pipes (`\\.\pipe\csi-proxy-disk-v1`, `…-filesystem-v1`, …)
/// that a Windows CSI node plugin mounts as hostPath volumes.
const CSI_PROXY_PIPE: &str = r"\\.\pipe\csi-proxy";

/// The driver names a CSINode lists.
fn drivers(csinode: &CSINode) -> Vec<String> {
    csinode.spec.drivers.iter().map(|d| d.name.clone()).collect()
}

/// How a pod reaches the host for CSI: it mounts csi-proxy's pipes, or it is a HostProcess pod
/// of a CSI node plugin (by its name). None for other pods.
fn host_access(pod: &Pod) -> Option<&'static str> {
    let spec = pod.spec.as_ref()?;
    let pipes = spec
        .volumes
        .iter()
        .flatten()
        .filter_map(|v| v.host_path.as_ref())
        .any(|h| h.path.to_ascii_lowercase().starts_with(CSI_PROXY_PIPE));
    if pipes {
        return Some("csi-proxy");
    }
    let host_process = spec
        .security_context
        .as_ref()
        .and_then(|s| s.windows_options.as_ref())
        .and_then(|w| w.host_process)
        == Some(true);
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    (host_process && name.contains("csi")).then_some("HostProcess")
}

/// Reads the node's CSINode and the CSI node plugin pods on it.
pub async fn observe(ctx: &Ctx<'_>, case: &Case<'_>) -> Probed {
    let (_, node) = match case.node(ctx.facts) {
        Ok(n) => n,
        Err(p) => return p.into(),
    };
    let api: Api<CSINode> = Api::all(ctx.client.clone());
    let csinode = match api.get_opt(&node.name).await {
        Ok(Some(c)) => c,
        Ok(None) => {
            return Probed::seen(
                Observation::Failed(FailureClass::Mismatch),
                format!(
                    "the kubelet of {} registered no CSINode (storage.k8s.io/v1): CSI drivers cannot register on it",
                    node.name
                ),
            );
        }
        Err(kube::Error::Api(s)) if s.code == 403 => {
            return Probed::Unknown(format!(
                "the CSINode of {} (get csinodes.storage.k8s.io: forbidden)",
                node.name
            ));
        }
        Err(e) => return Probed::Error(format!("reading the CSINode of {}: {e}", node.name)),
    };
    let names = drivers(&csinode);
    let plugins = if node.os == Os::Windows {
        windows_plugins(ctx, &node.name).await
    } else {
        String::new()
    };
    let listed = if names.is_empty() {
        "lists no CSI driver (no CSI node plugin registered on the node)".to_string()
    } else {
        format!("lists the CSI drivers {}", names.join(", "))
    };
    let summary = format!("CSINode {}: {listed}{plugins}", node.name);
    Probed::seen(Observation::Reached(summary.clone()), summary)
}

/// The pods on a Windows node that reach the host for CSI, as evidence for the summary.
async fn windows_plugins(ctx: &Ctx<'_>, node: &str) -> String {
    let pods: Api<Pod> = Api::all(ctx.client.clone());
    let params = ListParams::default().fields(&format!("spec.nodeName={node}"));
    match pods.list(&params).await {
        Ok(list) => {
            let found: Vec<String> = list
                .items
                .iter()
                .filter_map(|p| {
                    let how = host_access(p)?;
                    Some(format!(
                        "{}/{} ({how})",
                        p.metadata.namespace.as_deref().unwrap_or_default(),
                        p.metadata.name.as_deref().unwrap_or_default()
                    ))
                })
                .collect();
            if found.is_empty() {
                "; no pod on the node mounts csi-proxy's pipes or runs a HostProcess CSI plugin".to_string()
            } else {
                format!("; node plugins reaching the host: {}", found.join(", "))
            }
        }
        Err(e) => format!("; the node's pods could not be listed ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    #[rstest]
    #[case::csi_proxy(json!({"metadata": {"name": "csi-azuredisk-node-win-x"}, "spec": {"containers": [], "volumes": [
        {"name": "disk-dir", "hostPath": {"path": "\\\\.\\pipe\\csi-proxy-disk-v1"}}]}}), Some("csi-proxy"))]
    #[case::host_process(json!({"metadata": {"name": "csi-smb-node-win-y"}, "spec": {"containers": [],
        "securityContext": {"windowsOptions": {"hostProcess": true}}}}), Some("HostProcess"))]
    #[case::other_host_process(json!({"metadata": {"name": "kube-proxy-z"}, "spec": {"containers": [],
        "securityContext": {"windowsOptions": {"hostProcess": true}}}}), None)]
    #[case::plain(json!({"metadata": {"name": "web"}, "spec": {"containers": []}}), None)]
    fn csi_node_plugins_are_told_by_how_they_reach_the_host(#[case] pod: serde_json::Value, #[case] how: Option<&str>) {
        let pod: Pod = serde_json::from_value(pod).expect("a pod");
        assert_eq!(host_access(&pod), how);
    }

    #[test]
    fn a_csinode_lists_its_drivers() {
        let c: CSINode = serde_json::from_value(json!({"metadata": {"name": "win-1"}, "spec": {"drivers": [
            {"name": "disk.csi.azure.com", "nodeID": "win-1"}, {"name": "file.csi.azure.com", "nodeID": "win-1"}]}}))
        .expect("a CSINode");
        assert_eq!(drivers(&c), ["disk.csi.azure.com", "file.csi.azure.com"]);
    }
}
