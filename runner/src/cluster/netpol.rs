//! The cluster's NetworkPolicy engine, read from its agents' objects as each project installs
//! them: Calico's `calico-node` (and `calico-node-windows`), Antrea's `antrea-agent`, Azure NPM's
//! `azure-npm` (`azure-npm-win`), the VPC CNI's `aws-node` with its `aws-eks-nodeagent`
//! container enforcing (`--enable-network-policy=true`), Cilium's `cilium`, GKE Dataplane V2's
//! `anetd`; flannel alone enforces none. Nothing of these: unknown.

use k8s_openapi::api::apps::v1::DaemonSet;
use kube::api::{Api, ListParams};
use mixcheck_reports::Fact;

/// The engine a DaemonSet shows (name, containers' names and args), if any.
pub fn engine_of(name: &str, containers: &[(String, Vec<String>)]) -> Option<&'static str> {
    Some(match name {
        n if n.starts_with("calico-node") || n.starts_with("canal") => "calico",
        n if n.starts_with("antrea-agent") => "antrea",
        n if n.starts_with("azure-npm") => "azure-npm",
        "aws-node" | "aws-node-windows" => {
            let agent = containers.iter().find(|(c, _)| c == "aws-eks-nodeagent")?;
            agent
                .1
                .iter()
                .any(|a| a == "--enable-network-policy=true")
                .then_some("vpc-cni")?
        }
        "cilium" => "cilium",
        n if n == "anetd" || n.starts_with("anetd-") => "anetd",
        _ => return None,
    })
}

/// The engine from the cluster's DaemonSets: the first that enforces policy, else `none` where
/// flannel runs alone (its README: "Flannel is focused on networking"); None when nothing says.
pub fn engine_from(daemonsets: &[DaemonSet]) -> Option<Fact<String>> {
    let mut flannel = None;
    for ds in daemonsets {
        let name = ds.metadata.name.clone().unwrap_or_default();
        let key = format!("{}/{name}", ds.metadata.namespace.clone().unwrap_or_default());
        let containers: Vec<(String, Vec<String>)> = ds
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .map(|p| {
                p.containers
                    .iter()
                    .map(|c| (c.name.clone(), c.args.clone().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(engine) = engine_of(&name, &containers) {
            return Some(Fact::new(engine.to_string(), format!("daemonset {key}")));
        }
        if name.contains("flannel") && flannel.is_none() {
            flannel = Some(key);
        }
    }
    flannel.map(|key| {
        Fact::new(
            "none".to_string(),
            format!("daemonset {key} (flannel enforces no NetworkPolicy) and no policy agent's DaemonSet"),
        )
    })
}

/// Reads the engine (None where the DaemonSets cannot be listed or say nothing).
pub async fn engine(client: &kube::Client) -> Option<Fact<String>> {
    let list = Api::<DaemonSet>::all(client.clone())
        .list(&ListParams::default())
        .await
        .ok()?;
    engine_from(&list.items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn ds(name: &str, containers: serde_json::Value) -> DaemonSet {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"selector": {}, "template": {"spec": {"containers": containers}}}
        }))
        .expect("a DaemonSet")
    }

    #[rstest]
    #[case::calico(&["kube-proxy", "calico-node"], Some("calico"))]
    #[case::calico_windows_only(&["calico-node-windows"], Some("calico"))]
    #[case::antrea(&["antrea-agent", "antrea-agent-windows"], Some("antrea"))]
    #[case::azure_npm(&["azure-cns", "azure-npm-win"], Some("azure-npm"))]
    #[case::flannel_alone(&["kube-flannel-ds", "kube-proxy"], Some("none"))]
    #[case::cilium(&["cilium"], Some("cilium"))]
    #[case::nothing(&["kube-proxy"], None)]
    fn the_engine_is_read_from_daemonsets(#[case] names: &[&str], #[case] engine: Option<&str>) {
        let list: Vec<DaemonSet> = names
            .iter()
            .map(|n| ds(n, serde_json::json!([{"name": "c", "image": "x"}])))
            .collect();
        assert_eq!(engine_from(&list).map(|f| f.value).as_deref(), engine);
    }

    #[rstest]
    #[case::agent_enforcing(&["--enable-network-policy=true"], Some("vpc-cni"))]
    #[case::agent_off(&["--enable-network-policy=false"], None)]
    fn the_vpc_cni_enforces_only_with_its_agent_on(#[case] args: &[&str], #[case] engine: Option<&str>) {
        let list = vec![ds(
            "aws-node",
            serde_json::json!([{"name": "aws-node", "image": "x"}, {"name": "aws-eks-nodeagent", "image": "y", "args": args}]),
        )];
        assert_eq!(engine_from(&list).map(|f| f.value).as_deref(), engine);
    }
}
