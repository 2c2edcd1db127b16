//! The API's view of what the Windows nodes' data planes should hold — every Service,
//! EndpointSlice, pod and node listed — read once for the HNS readings that start within a
//! second of each other.

use std::collections::BTreeMap;

use crate::cluster::dataplane::{ApiService, ApiView};

/// Services with more backends than the older documentation's limit are left out of the
/// comparison: their load balancer may be missing as documented (NET-SVC-BACKEND-LIMIT).
const COMPARED_BACKENDS: usize = 64;
/// The limit on one API list.
const LIST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Lists `K` in every namespace, within [`LIST_TIMEOUT`]; Err names what could not be listed.
async fn list_all<K>(client: &kube::Client, what: &str) -> Result<Vec<K>, String>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    fold_all(client, what, |k| [k]).await
}

/// What `keep` takes of each `K` in every namespace, read in chunks
/// ([`crate::cluster::chunks`]) so that only what is kept of a large list stays, within
/// [`LIST_TIMEOUT`]; Err names what could not be listed.
async fn fold_all<K, T, I>(client: &kube::Client, what: &str, mut keep: impl FnMut(K) -> I) -> Result<Vec<T>, String>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    I: IntoIterator<Item = T>,
{
    let api: kube::Api<K> = kube::Api::all(client.clone());
    let mut kept = Vec::new();
    let params = kube::api::ListParams::default();
    let listed = crate::cluster::chunks::each(&api, &params, |k| kept.extend(keep(k)));
    match tokio::time::timeout(LIST_TIMEOUT, listed).await {
        Ok(Ok(())) => Ok(kept),
        Ok(Err(kube::Error::Api(s))) if s.code == 403 => Err(format!(
            "the API's {what} in every namespace (list {what}: forbidden; deploy/rbac.yaml grants it)"
        )),
        Ok(Err(e)) => Err(format!("listing {what}: {e}")),
        Err(_) => Err(format!("listing {what}: no answer within {} s", LIST_TIMEOUT.as_secs())),
    }
}

/// How long one reading of the API serves the nodes' readings that start after it: each is a
/// list of every Service, EndpointSlice, pod and node, and under full coverage every Windows
/// node's cell read them within the same second. A node's load balancers that differ from a
/// view this old are read again with a view of their own before any difference counts
/// ([`ApiViews::fresh`]).
const SHARED_FOR: std::time::Duration = std::time::Duration::from_secs(1);

/// The API's view of the data planes, read once for the readings that start within
/// [`SHARED_FOR`] of it (one reading at a time: those that wait meanwhile take it).
#[derive(Default)]
pub struct ApiViews {
    last: tokio::sync::Mutex<Option<(tokio::time::Instant, std::sync::Arc<ApiView>)>>,
    /// Read anew for every reading.
    fresh: bool,
}

impl ApiViews {
    /// Views read for each reading alone.
    pub fn fresh() -> ApiViews {
        ApiViews {
            fresh: true,
            ..ApiViews::default()
        }
    }

    /// A view of the API read at most [`SHARED_FOR`] ago.
    pub async fn get(&self, client: &kube::Client) -> Result<std::sync::Arc<ApiView>, String> {
        let mut last = self.last.lock().await;
        if let Some((at, view)) = last.as_ref()
            && !self.fresh
            && at.elapsed() <= SHARED_FOR
        {
            return Ok(view.clone());
        }
        let at = tokio::time::Instant::now();
        tracing::trace!(target: "mixcheck::api_view", "reading the API's view of the data planes");
        let view = std::sync::Arc::new(read_api(client).await?);
        *last = Some((at, view.clone()));
        Ok(view)
    }
}

/// What the API says the nodes' data planes should hold.
async fn read_api(client: &kube::Client) -> Result<ApiView, String> {
    use k8s_openapi::api::core::v1::{Node, Pod, Service};
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    // Of the pods and nodes, only their addresses: every pod of a large cluster is many
    // megabytes of objects.
    let pod_addresses = |pod: Pod| -> Vec<(String, String)> {
        let (Some(spec), Some(status)) = (pod.spec, pod.status) else {
            return Vec::new();
        };
        if spec.host_network == Some(true) {
            return Vec::new();
        }
        let node = spec.node_name.unwrap_or_default();
        status
            .pod_ips
            .into_iter()
            .flatten()
            .map(|p| p.ip)
            .chain(status.pod_ip)
            .map(|ip| (ip, node.clone()))
            .collect()
    };
    let node_addresses = |n: Node| -> [(String, Vec<(String, String)>); 1] {
        let name = n.metadata.name.unwrap_or_default();
        let addresses = n
            .status
            .and_then(|s| s.addresses)
            .unwrap_or_default()
            .into_iter()
            .map(|a| (a.type_, a.address))
            .collect();
        [(name, addresses)]
    };
    let (services, slices, pods, nodes) = futures::join!(
        list_all::<Service>(client, "services"),
        list_all::<EndpointSlice>(client, "endpointslices"),
        fold_all(client, "pods", pod_addresses),
        fold_all(client, "nodes", node_addresses),
    );
    let (services, slices, pods, nodes) = (services?, slices?, pods?, nodes?);
    let mut view = ApiView::default();
    let mut backends: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for slice in &slices {
        let ns = slice.metadata.namespace.clone().unwrap_or_default();
        let Some(service) = slice
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("kubernetes.io/service-name"))
        else {
            continue;
        };
        let list = backends.entry(format!("{ns}/{service}")).or_default();
        for e in &slice.endpoints {
            if e.conditions.as_ref().and_then(|c| c.ready) == Some(false) {
                continue;
            }
            let node = e.node_name.clone().unwrap_or_default();
            for a in &e.addresses {
                view.listed.insert(a.clone());
                list.push((a.clone(), node.clone()));
            }
        }
    }
    for svc in &services {
        let name = format!(
            "{}/{}",
            svc.metadata.namespace.as_deref().unwrap_or_default(),
            svc.metadata.name.as_deref().unwrap_or_default()
        );
        let spec = svc.spec.clone().unwrap_or_default();
        let mut ips: Vec<String> = spec.cluster_ips.clone().unwrap_or_default();
        if ips.is_empty() {
            ips.extend(spec.cluster_ip.clone());
        }
        ips.retain(|ip| !ip.is_empty() && ip != "None");
        let ingress = svc
            .status
            .as_ref()
            .and_then(|s| s.load_balancer.as_ref())
            .and_then(|l| l.ingress.clone())
            .unwrap_or_default();
        view.other_vips.extend(ingress.into_iter().filter_map(|i| i.ip));
        view.other_vips.extend(spec.external_ips.clone().unwrap_or_default());
        let list = backends.remove(&name).unwrap_or_default();
        if spec.type_.as_deref() == Some("ExternalName") || ips.is_empty() {
            continue;
        }
        if list.len() > COMPARED_BACKENDS {
            view.other_vips.extend(ips);
            continue;
        }
        view.services.push(ApiService {
            name,
            vips: ips,
            backends: list,
            local_only: spec.internal_traffic_policy.as_deref() == Some("Local"),
        });
    }
    view.pods.extend(pods);
    for (name, addresses) in nodes {
        for (kind, address) in addresses {
            view.other_vips.insert(address.clone());
            if kind == "InternalIP" {
                view.nodes.entry(name.clone()).or_insert(address);
            }
        }
    }
    Ok(view)
}
