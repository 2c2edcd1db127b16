//! `audit`: the cluster's own workloads (DaemonSets and Deployments), read from the API, for
//! what the documentation says they must not do on Windows nodes.

use kube::api::{Api, ListParams};
use mixcheck_reports::Os;

use crate::catalogue::suite::{AuditKind, FailureClass};
use crate::cluster::facts::{self, ClusterNode};
use crate::probes::judgement::{Ctx, Probed};
use crate::probes::transport::Observation;

/// Runs the audit over the cluster's workloads.
pub async fn observe(ctx: &Ctx<'_>, audit: AuditKind) -> Probed {
    let mismatch = |what: String| Probed::seen(Observation::Failed(FailureClass::Mismatch), what);
    let clean = |what: &str| Probed::seen(Observation::Reached(String::new()), what.to_string());
    match audit {
        AuditKind::LinuxWorkloadsOnWindows => {
            let windows: Vec<&ClusterNode> = ctx
                .facts
                .nodes
                .iter()
                .filter(|n| n.os == Os::Windows && n.schedulable())
                .collect();
            match audit_workloads(&ctx.client, &windows).await {
                Ok(found) if found.is_empty() => {
                    clean("no DaemonSet or Deployment without an OS selector can land on the Windows nodes")
                }
                Ok(found) => mismatch(format!(
                    "without an OS selector and not kept off Windows by taints: {}",
                    found.join(", ")
                )),
                Err(e) => Probed::Error(format!("listing workloads: {e}")),
            }
        }
        AuditKind::CalicoWindows => calico_windows(ctx).await,
        AuditKind::WindowsMemoryRequestNotLimit => match audit_memory_requests(&ctx.client).await {
            Ok(found) if found.is_empty() => {
                clean("every Windows workload sets only a memory limit, or a request equal to it")
            }
            Ok(found) => mismatch(format!("memory request differs from the limit: {}", found.join(", "))),
            Err(e) => Probed::Error(format!("listing workloads: {e}")),
        },
    }
}

/// The DaemonSets and Deployments of the cluster whose pod template `flagged` picks, named
/// `kind namespace/name`.
async fn workloads_where(
    client: &kube::Client,
    flagged: &(dyn Fn(&k8s_openapi::api::core::v1::PodSpec) -> bool + Sync),
) -> Result<Vec<String>, kube::Error> {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment as Deploy};
    let mut found = Vec::new();
    for ds in Api::<DaemonSet>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
    {
        if ds
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .is_some_and(flagged)
        {
            found.push(format!(
                "daemonset {}/{}",
                ds.metadata.namespace.unwrap_or_default(),
                ds.metadata.name.unwrap_or_default()
            ));
        }
    }
    for d in Api::<Deploy>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
    {
        if d.spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .is_some_and(flagged)
        {
            found.push(format!(
                "deployment {}/{}",
                d.metadata.namespace.unwrap_or_default(),
                d.metadata.name.unwrap_or_default()
            ));
        }
    }
    Ok(found)
}

/// SCHED-NODESELECTOR's audit: DaemonSets and Deployments without an OS selector that the
/// Windows nodes' taints do not keep away, i.e. that would put (Linux) pods on Windows nodes.
async fn audit_workloads(client: &kube::Client, windows: &[&ClusterNode]) -> Result<Vec<String>, kube::Error> {
    let lands_on_windows = |spec: &k8s_openapi::api::core::v1::PodSpec| -> bool {
        let os = spec.node_selector.as_ref().and_then(|s| s.get("kubernetes.io/os"));
        let affinity_os = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| n.required_during_scheduling_ignored_during_execution.as_ref())
            .is_some_and(|r| {
                r.node_selector_terms.iter().any(|t| {
                    t.match_expressions
                        .iter()
                        .flatten()
                        .any(|e| e.key == "kubernetes.io/os")
                })
            });
        if os.is_some() || affinity_os {
            return false;
        }
        let tolerations = spec.tolerations.clone().unwrap_or_default();
        windows.iter().any(|n| {
            n.taints
                .iter()
                .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
                .all(|t| {
                    tolerations.iter().any(|tol| {
                        let key_ok = tol.key.as_deref().is_none_or(|k| k.is_empty() || k == t.key);
                        let op_exists = tol.operator.as_deref() == Some("Exists");
                        let value_ok = op_exists
                            || tol.value.as_deref().unwrap_or_default() == t.value.as_deref().unwrap_or_default();
                        let effect_ok = tol.effect.as_deref().is_none_or(|e| e.is_empty() || e == t.effect);
                        key_ok && value_ok && effect_ok
                    })
                })
        })
    };
    workloads_where(client, &lands_on_windows).await
}

/// MEM-LIMIT-EQ-REQUEST's audit: Windows workloads whose containers request a different amount
/// of memory than their limit.
async fn audit_memory_requests(client: &kube::Client) -> Result<Vec<String>, kube::Error> {
    let differs = |spec: &k8s_openapi::api::core::v1::PodSpec| -> bool {
        let windows = spec
            .node_selector
            .as_ref()
            .and_then(|s| s.get("kubernetes.io/os"))
            .is_some_and(|o| o == "windows")
            || spec.os.as_ref().is_some_and(|o| o.name == "windows");
        windows
            && spec.containers.iter().any(|c| {
                let r = c.resources.as_ref();
                let req = r
                    .and_then(|r| r.requests.as_ref())
                    .and_then(|m| m.get("memory"))
                    .and_then(|q| facts::quantity_bytes(&q.0));
                let lim = r
                    .and_then(|r| r.limits.as_ref())
                    .and_then(|m| m.get("memory"))
                    .and_then(|q| facts::quantity_bytes(&q.0));
                matches!((req, lim), (Some(a), Some(b)) if a != b)
            })
    };
    workloads_where(client, &differs).await
}

/// The group, version and plural of Calico's operator `Installation` resource.
const INSTALLATION: (&str, &str, &str) = ("operator.tigera.io", "v1", "installations");

/// NET-CALICO-WINDOWS: the `Installation` objects the Tigera operator reconciles, read as
/// dynamic objects, against what Calico for Windows supports (CAL): IPv4 only (no IPv6 pool, no
/// IPv6 address autodetection), VXLAN without cross-subnet, no IP-in-IP, no overlay with BGP
/// peering. Where the resource cannot be read (the CRD absent: Calico installed from manifests;
/// RBAC denying it) nothing is known: indeterminate, naming it.
async fn calico_windows(ctx: &Ctx<'_>) -> Probed {
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    let (group, version, plural) = INSTALLATION;
    let gvk = GroupVersionKind::gvk(group, version, "Installation");
    let ar = ApiResource::from_gvk_with_plural(&gvk, plural);
    let api: Api<DynamicObject> = Api::all_with(ctx.client.clone(), &ar);
    let what = format!("{plural}.{group}/{version}");
    let list = match api.list(&ListParams::default()).await {
        Ok(l) => l.items,
        Err(kube::Error::Api(s)) if s.code == 404 => {
            return Probed::Unknown(format!(
                "the cluster does not serve {what} (no Tigera operator CRD: Calico installed from manifests?): its Windows configuration cannot be read"
            ));
        }
        Err(kube::Error::Api(s)) if s.code == 403 => {
            return Probed::Unknown(format!("reading {what} is forbidden: {}", s.message));
        }
        Err(e) => return Probed::Error(format!("listing {what}: {e}")),
    };
    if list.is_empty() {
        return Probed::Unknown(format!(
            "no {what} object: Calico's configuration is not in an operator Installation"
        ));
    }
    let mut problems = Vec::new();
    for obj in &list {
        let name = obj.metadata.name.clone().unwrap_or_default();
        problems.extend(
            calico_problems(&obj.data)
                .into_iter()
                .map(|p| format!("installation {name}: {p}")),
        );
    }
    let names: Vec<String> = list.iter().filter_map(|o| o.metadata.name.clone()).collect();
    if problems.is_empty() {
        Probed::seen(
            Observation::Reached(String::new()),
            format!(
                "installation {} (operator.tigera.io/v1): IPv4 pools, encapsulation and BGP within what Calico for Windows supports",
                names.join(", ")
            ),
        )
    } else {
        Probed::seen(Observation::Failed(FailureClass::Mismatch), problems.join("; "))
    }
}

/// What an `Installation`'s `spec.calicoNetwork` sets that Calico for Windows does not support
/// (CAL: IPv4 only; VXLAN without cross-subnet; no IP-in-IP; no overlay with BGP peering).
pub fn calico_problems(installation: &serde_json::Value) -> Vec<String> {
    let net = installation.pointer("/spec/calicoNetwork");
    let mut problems = Vec::new();
    let text = |p: &str| net.and_then(|n| n.pointer(p)).and_then(serde_json::Value::as_str);
    let bgp_on = text("/bgp").is_none_or(|b| b == "Enabled");
    let pools = net
        .and_then(|n| n.get("ipPools"))
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, pool) in pools.iter().enumerate() {
        let cidr = pool.get("cidr").and_then(serde_json::Value::as_str).unwrap_or("");
        let encap = pool
            .get("encapsulation")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("IPIP");
        if cidr.contains(':') {
            problems.push(format!(
                "ipPools[{i}] {cidr} is IPv6: Calico for Windows supports IPv4 only"
            ));
        }
        match encap {
            "VXLANCrossSubnet" => problems.push(format!(
                "ipPools[{i}] encapsulation VXLANCrossSubnet: Calico for Windows supports VXLAN without cross-subnet"
            )),
            "IPIP" | "IPIPCrossSubnet" => problems.push(format!(
                "ipPools[{i}] encapsulation {encap}: IP-in-IP is not supported on Windows"
            )),
            "VXLAN" if bgp_on => problems.push(format!(
                "ipPools[{i}] VXLAN with BGP enabled: an overlay with BGP peering is not supported on Windows (VXLAN needs bgp: Disabled)"
            )),
            _ => {}
        }
    }
    if net
        .and_then(|n| n.get("nodeAddressAutodetectionV6"))
        .is_some_and(|v| !v.is_null())
    {
        problems
            .push("nodeAddressAutodetectionV6 is set (IPv6/dual-stack): Calico for Windows supports IPv4 only".into());
    }
    problems
}

#[cfg(test)]
mod calico_tests {
    use super::calico_problems;
    use rstest::rstest;
    use serde_json::json;

    /// CAL: VXLAN without cross-subnet and BGP off, IPv4 pools: supported; cross-subnet, IP-in-IP,
    /// VXLAN with BGP and IPv6 are not.
    #[rstest]
    #[case::vxlan(json!({"bgp": "Disabled", "ipPools": [{"cidr": "192.168.0.0/16", "encapsulation": "VXLAN"}]}), &[])]
    #[case::bgp_no_overlay(json!({"bgp": "Enabled", "ipPools": [{"cidr": "192.168.0.0/16", "encapsulation": "None"}]}), &[])]
    #[case::cross_subnet(json!({"bgp": "Disabled", "ipPools": [{"cidr": "192.168.0.0/16", "encapsulation": "VXLANCrossSubnet"}]}), &["cross-subnet"])]
    #[case::ipip(json!({"ipPools": [{"cidr": "192.168.0.0/16", "encapsulation": "IPIP"}]}), &["IP-in-IP"])]
    #[case::vxlan_bgp(json!({"bgp": "Enabled", "ipPools": [{"cidr": "192.168.0.0/16", "encapsulation": "VXLAN"}]}), &["BGP"])]
    #[case::ipv6(json!({"bgp": "Disabled", "nodeAddressAutodetectionV6": {"firstFound": true},
        "ipPools": [{"cidr": "192.168.0.0/16", "encapsulation": "VXLAN"}, {"cidr": "fd00::/48", "encapsulation": "None"}]}), &["IPv6", "IPv4 only"])]
    fn calico_windows_limits(#[case] net: serde_json::Value, #[case] want: &[&str]) {
        let found = calico_problems(&json!({"spec": {"calicoNetwork": net}}));
        assert_eq!(found.is_empty(), want.is_empty(), "{found:?}");
        for w in want {
            assert!(found.iter().any(|p| p.contains(w)), "{w}: {found:?}");
        }
    }
}
