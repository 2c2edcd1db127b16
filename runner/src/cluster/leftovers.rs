//! What gets in a run's way before it starts: namespaces other mixcheck runs left (a `--keep`, a
//! run that was killed) and pods that hold the fixtures' host port on a node. Either keeps the
//! run's fixtures Pending ("didn't have free ports"), so the run says so before it deploys and
//! names the way out (`mixcheck cleanup`).

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::ListParams;

use crate::cluster::fixture::MANAGED_BY;

/// How long each of the two lists may take.
const LIST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// One line per thing in the way (none when the cluster is clear or cannot be listed: this is
/// advice, and the run's own waiting says the rest).
pub async fn in_the_way(client: &kube::Client, own_ns: &str, host_port: Option<u16>) -> Vec<String> {
    let mut lines = Vec::new();
    let selector = format!("{}={}", MANAGED_BY.0, MANAGED_BY.1);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let others: Vec<String> =
        match tokio::time::timeout(LIST_TIMEOUT, namespaces.list(&ListParams::default().labels(&selector))).await {
            Ok(Ok(list)) => list
                .items
                .into_iter()
                .filter(|n| n.metadata.deletion_timestamp.is_none())
                .filter_map(|n| n.metadata.name)
                .filter(|n| n != own_ns)
                .collect(),
            _ => Vec::new(),
        };
    if !others.is_empty() {
        lines.push(format!(
            "Another mixcheck run's namespace is on the cluster ({}): a kept run, one still running, or one that was killed. Its pods hold pod slots and host ports, so some of this run's fixtures may not schedule; `mixcheck cleanup` deletes them (unless that run is still going).",
            others.join(", ")
        ));
    }
    let Some(host_port) = host_port else {
        return lines;
    };
    let pods: Api<Pod> = Api::all(client.clone());
    let holders: Vec<String> = match tokio::time::timeout(LIST_TIMEOUT, pods.list(&ListParams::default())).await {
        Ok(Ok(list)) => list
            .items
            .iter()
            .filter(|p| p.metadata.namespace.as_deref() != Some(own_ns))
            .filter(|p| {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                !matches!(phase, Some("Succeeded" | "Failed"))
            })
            .filter(|p| holds_port(p, host_port))
            .map(|p| {
                format!(
                    "{}/{} on {}",
                    p.metadata.namespace.as_deref().unwrap_or_default(),
                    p.metadata.name.as_deref().unwrap_or_default(),
                    p.spec
                        .as_ref()
                        .and_then(|s| s.node_name.as_deref())
                        .unwrap_or("no node yet")
                )
            })
            .collect(),
        _ => Vec::new(),
    };
    if !holders.is_empty() {
        lines.push(format!(
            "Host port {host_port} is taken on some nodes by {}: the NET-HOSTPORT fixtures cannot run there{}.",
            holders.join(", "),
            if others.is_empty() {
                " (exclude the check with --check '!NET-HOSTPORT', or free the port)"
            } else {
                ""
            }
        ));
    }
    lines
}

/// Whether any container of the pod publishes `port` on its node.
fn holds_port(p: &Pod, port: u16) -> bool {
    let Some(spec) = &p.spec else {
        return false;
    };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .flat_map(|c| c.ports.iter().flatten())
        .any(|cp| cp.host_port == Some(i32::from(port)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_holds_the_port_it_publishes_on_its_node() {
        let pod = |ports: serde_json::Value| -> Pod {
            serde_json::from_value(json!({
                "metadata": {"name": "p", "namespace": "n"},
                "spec": {"containers": [{"name": "c", "ports": ports}]}
            }))
            .expect("a pod")
        };
        assert!(holds_port(
            &pod(json!([{"containerPort": 8080, "hostPort": 48080}])),
            48080
        ));
        assert!(!holds_port(&pod(json!([{"containerPort": 48080}])), 48080));
        assert!(!holds_port(
            &pod(json!([{"containerPort": 80, "hostPort": 8080}])),
            48080
        ));
    }
}
