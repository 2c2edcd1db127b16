//! Lists read in chunks of [`CHUNK`] items (`limit` and `continue`, as kubectl reads them), each
//! chunk handed on as it arrives: a list of every pod of a 5,000-node cluster is tens of
//! thousands of objects, which neither the API server nor the run should hold at once. A server
//! that does not chunk answers the whole list in one, which reads the same.

use kube::Api;
use kube::api::ListParams;

/// How many items one chunk asks for (kubectl's `--chunk-size` default).
pub const CHUNK: u32 = 500;

/// Lists `api` with `params` chunk by chunk, giving each item to `each`. A chunk that fails
/// (a continue token that expired, 410) fails the list: the items already given were of it.
pub async fn each<K, F>(api: &Api<K>, params: &ListParams, each: F) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    F: FnMut(K),
{
    each_in(api, params, CHUNK, each).await
}

/// [`each`] in chunks of `chunk` items.
async fn each_in<K, F>(api: &Api<K>, params: &ListParams, chunk: u32, mut each: F) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    F: FnMut(K),
{
    let mut params = params.clone().limit(chunk);
    loop {
        let list = api.list(&params).await?;
        let next = list.metadata.continue_.clone().filter(|t| !t.is_empty());
        list.items.into_iter().for_each(&mut each);
        match next {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Node;
    use kube::ResourceExt;

    use super::*;

    /// Every node of the bundled cluster once, in order, whatever the chunk (one item, a few,
    /// more than the list), and with a label selector the matching ones only.
    #[rstest::rstest]
    #[case::ones(1, None)]
    #[case::twos(2, None)]
    #[case::whole(CHUNK, None)]
    #[case::selected(1, Some("kubernetes.io/os=windows"))]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_chunked_list_gives_each_item_once(#[case] chunk: u32, #[case] labels: Option<&str>) {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let topology = simcluster::Topology::default_cluster().instant();
        let cluster = simcluster::Cluster::start(simcluster::ClusterConfig::new(topology))
            .await
            .expect("bundled cluster");
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&cluster.kubeconfig()).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
            .await
            .expect("config");
        let api: Api<Node> = Api::all(kube::Client::try_from(config).expect("client"));
        let mut params = ListParams::default();
        if let Some(l) = labels {
            params = params.labels(l);
        }
        let whole: Vec<String> = api
            .list(&params)
            .await
            .expect("list")
            .iter()
            .map(ResourceExt::name_any)
            .collect();
        assert!(whole.len() >= 2, "{whole:?}");
        let mut chunked = Vec::new();
        each_in(&api, &params, chunk, |n: Node| chunked.push(n.name_any()))
            .await
            .expect("chunked list");
        assert_eq!(chunked, whole);
    }
}
