//! Shared fixtures for the simcluster integration tests: a bundled cluster on 127.0.0.1:0 and
//! clients for it (kube-rs, and a raw reqwest client that trusts the cluster's CA).

#![allow(dead_code)]

use std::time::Duration;

use simcluster::{Cluster, ClusterConfig, Topology};

/// Installs the one crypto provider (ring) for this test process.
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Starts the default bundled cluster.
pub async fn start() -> Cluster {
    // Its clients (kube-rs, kubectl) time what they see on the wall clock, as `sim serve`'s do.
    start_with(ClusterConfig::new(
        Topology::default_cluster().instant().on_wall_clock(),
    ))
    .await
}

/// Starts a bundled cluster with the given configuration.
pub async fn start_with(config: ClusterConfig) -> Cluster {
    install_crypto();
    Cluster::start(config).await.expect("bundled cluster starts")
}

/// A kube-rs client for the cluster, verifying its CA and sending its token.
pub async fn kube_client(cluster: &Cluster) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&cluster.kubeconfig()).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig is usable");
    kube::Client::try_from(config).expect("client")
}

/// A raw HTTPS client that trusts the cluster's CA (no token: callers add it or test its absence).
pub fn http_client(cluster: &Cluster) -> reqwest::Client {
    install_crypto();
    let ca = reqwest::Certificate::from_pem(cluster.ca_pem().as_bytes()).expect("CA PEM");
    reqwest::Client::builder()
        .tls_certs_only([ca])
        .timeout(Duration::from_secs(20))
        .build()
        .expect("reqwest client")
}

/// Creates a namespace through the store (fast, no HTTP).
pub fn namespace(cluster: &Cluster, name: &str) {
    cluster
        .store()
        .create(
            simcluster::internals::resources::core("namespaces"),
            "",
            serde_json::json!({"metadata": {"name": name}}),
        )
        .expect("namespace");
}

/// Polls until `check` returns Some, or panics naming what was awaited (30 s).
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A pod's phase ("" when it has no status yet).
/// Creates `pod` and waits until the kubelet has failed it: its reason and message (a pod the
/// kubelet's admission rejects).
pub async fn rejected(
    pods: &kube::Api<k8s_openapi::api::core::v1::Pod>,
    pod: &k8s_openapi::api::core::v1::Pod,
) -> (String, String) {
    let name = pod.metadata.name.clone().unwrap_or_default();
    pods.create(&kube::api::PostParams::default(), pod)
        .await
        .expect("create");
    let p = eventually(&format!("pod {name} Failed"), || async {
        pods.get(&name).await.ok().filter(|p| phase(p) == "Failed")
    })
    .await;
    let status = p.status.unwrap_or_default();
    (status.reason.unwrap_or_default(), status.message.unwrap_or_default())
}

pub fn phase(p: &k8s_openapi::api::core::v1::Pod) -> String {
    p.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default()
}

/// Starts `topology` with namespace `ns` created; returns the cluster and a kube-rs client.
pub async fn cluster_and_client(topology: Topology, ns: &str) -> (Cluster, kube::Client) {
    let cluster = start_with(ClusterConfig::new(topology)).await;
    namespace(&cluster, ns);
    let client = kube_client(&cluster).await;
    (cluster, client)
}

/// A pod named `name` (label `app: name`) with `spec`.
pub fn pod(name: &str, spec: serde_json::Value) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name, "labels": {"app": name}}, "spec": spec}))
        .expect("pod")
}

/// The (reason, message) of the events about `name` in `ns`.
pub async fn events_for(client: &kube::Client, ns: &str, name: &str) -> Vec<(String, String)> {
    let events: kube::Api<k8s_openapi::api::core::v1::Event> = kube::Api::namespaced(client.clone(), ns);
    let list = events
        .list(&kube::api::ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await
        .expect("events");
    list.items
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

/// An HTTP GET from this machine to `addr` (Host `host`), two seconds to connect and two to
/// answer, on a blocking thread: the reply (empty when the connection was held silent), or why
/// the connection failed.
pub fn dial(addr: std::net::SocketAddr, host: &'static str) -> tokio::task::JoinHandle<std::io::Result<String>> {
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.write_all(format!("GET /hostname HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes())?;
        let mut reply = String::new();
        let _ = stream.read_to_string(&mut reply);
        Ok(reply)
    })
}

/// Asserts that a [`dial`] of `what` got neither an answer nor a refusal: what a firewall that
/// drops the connection looks like from this machine.
pub fn assert_silent(what: &str, got: std::io::Result<String>) {
    match got {
        Ok(reply) => assert!(reply.is_empty(), "{what}: something answered: {reply}"),
        Err(e) => assert_ne!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{what}: refused"),
    }
}
