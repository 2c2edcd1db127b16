//! Service addressing through kube-rs: the built-in services, ClusterIP and NodePort
//! allocation with upstream conflict errors, addresses kept across updates, and Endpoints /
//! EndpointSlices following the ready pods a selector picks.

use crate::common;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// A Deployment `echo` of one agnhost netexec pod (HTTP on 8080, label app=echo) in `ns`.
async fn echo_deployment(client: &kube::Client, ns: &str) {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "echo"}, "spec": {"replicas": 1,
        "selector": {"matchLabels": {"app": "echo"}},
        "template": {"metadata": {"labels": {"app": "echo"}}, "spec": {"containers": [{"name": "echo",
            "image": "registry.k8s.io/e2e-test-images/agnhost:2.52", "args": ["netexec", "--http-port=8080"]}]}}}}))
    .expect("deployment");
    deployments.create(&PostParams::default(), &d).await.expect("create");
}

fn service(name: &str, spec: serde_json::Value) -> Service {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("service")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_get_addresses_and_conflicts_are_invalid() {
    let cluster = common::start().await;
    common::namespace(&cluster, "svc");
    let client = common::kube_client(&cluster).await;
    let dns: Api<Service> = Api::namespaced(client.clone(), "kube-system");
    let kube_dns = dns.get("kube-dns").await.expect("kube-dns");
    assert_eq!(kube_dns.spec.and_then(|s| s.cluster_ip).as_deref(), Some("10.96.0.10"));
    let default: Api<Service> = Api::namespaced(client.clone(), "default");
    let kubernetes = default.get("kubernetes").await.expect("kubernetes");
    assert_eq!(kubernetes.spec.and_then(|s| s.cluster_ip).as_deref(), Some("10.96.0.1"));

    let services: Api<Service> = Api::namespaced(client.clone(), "svc");
    let web = services
        .create(
            &PostParams::default(),
            &service(
                "web",
                json!({"type": "NodePort", "selector": {"app": "web"},
            "ports": [{"port": 80, "targetPort": 8080}]}),
            ),
        )
        .await
        .expect("create");
    let spec = web.spec.expect("spec");
    let ip = spec.cluster_ip.clone().expect("cluster ip");
    assert!(ip.starts_with("10.96."), "{ip}");
    let node_port = spec.ports.as_ref().and_then(|p| p[0].node_port).expect("node port");
    assert!((30000..=32767).contains(&node_port));

    let clash = service(
        "clash",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": node_port}]}),
    );
    match services.create(&PostParams::default(), &clash).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422);
            assert!(
                status.message.contains("provided port is already allocated"),
                "{}",
                status.message
            );
        }
        other => panic!("expected 422, got {other:?}"),
    }

    // A re-apply that leaves the allocated fields out keeps them.
    let reapply = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}});
    let after = services
        .patch("web", &PatchParams::apply("test").force(), &Patch::Apply(&reapply))
        .await
        .expect("apply");
    let after = after.spec.expect("spec");
    assert_eq!(after.cluster_ip.as_deref(), Some(ip.as_str()));
    assert_eq!(after.ports.and_then(|p| p[0].node_port), Some(node_port));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_follow_the_ready_pods_of_the_selector() {
    let cluster = common::start().await;
    common::namespace(&cluster, "ep");
    let client = common::kube_client(&cluster).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "ep");
    services
        .create(
            &PostParams::default(),
            &service(
                "web",
                json!({"selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}),
            ),
        )
        .await
        .expect("service");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "ep");
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {"replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web",
            "image": "registry.k8s.io/e2e-test-images/agnhost:2.52", "args": ["netexec", "--http-port=8080"],
            "ports": [{"name": "http", "containerPort": 8080}]}]}}}}))
    .expect("deployment");
    deployments.create(&PostParams::default(), &d).await.expect("create");
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "ep");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let subset = loop {
        if let Ok(e) = endpoints.get("web").await
            && let Some(subset) = e.subsets.and_then(|s| s.into_iter().next())
            && subset.addresses.as_ref().is_some_and(|a| a.len() == 2)
        {
            break subset;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "endpoints never had 2 ready addresses"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let ports = subset.ports.expect("ports");
    assert_eq!(
        ports[0].port, 8080,
        "the named targetPort resolves to the container port"
    );
    assert!(
        subset
            .addresses
            .expect("addresses")
            .iter()
            .all(|a| a.ip.starts_with("10.") && a.node_name.as_deref() == Some("linux-1"))
    );
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "ep");
    let list = slices
        .list(&ListParams::default().labels("kubernetes.io/service-name=web"))
        .await
        .expect("slices");
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].endpoints.len(), 2);

    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 0}})),
        )
        .await
        .expect("scale to zero");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let e = endpoints.get("web").await.expect("endpoints");
        if e.subsets.is_none_or(|s| s.is_empty()) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "endpoints never emptied");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// NP-REMOTE: an outside client reaches a NodePort on every node, Linux and Windows, also when
/// the backend runs on another node: with a socket per node and NodePort, and with one socket
/// per NodePort on every node's address (how a cluster too big for the open-file limit listens).
#[rstest::rstest]
#[case::a_socket_per_node(None)]
#[case::one_socket_on_every_address(Some(0))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_clients_reach_node_ports_on_every_node(#[case] node_listeners: Option<usize>) {
    let mut config = simcluster::ClusterConfig::new(simcluster::Topology::default_cluster().instant().on_wall_clock());
    config.node_listeners = node_listeners;
    let cluster = common::start_with(config).await;
    common::namespace(&cluster, "np");
    let client = common::kube_client(&cluster).await;
    echo_deployment(&client, "np").await;
    let services: Api<Service> = Api::namespaced(client.clone(), "np");
    let svc = services
        .create(
            &PostParams::default(),
            &service(
                "echo",
                json!({"type": "NodePort", "selector": {"app": "echo"},
            "ports": [{"port": 80, "targetPort": 8080}]}),
            ),
        )
        .await
        .expect("service");
    let node_port = svc
        .spec
        .and_then(|s| s.ports)
        .and_then(|p| p[0].node_port)
        .expect("node port");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("http client");
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), "np");
    for (node, ip) in cluster.node_ips() {
        let url = format!("http://{ip}:{node_port}/hostname");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let body = loop {
            match http.get(&url).send().await {
                Ok(r) if r.status().is_success() => break r.text().await.expect("body"),
                other => {
                    assert!(tokio::time::Instant::now() < deadline, "{node} {url}: {other:?}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        let backend = pods.get(&body).await.expect("the answer names a backend pod");
        assert_eq!(
            backend.spec.and_then(|s| s.node_name).as_deref(),
            Some("linux-1"),
            "{node}"
        );
        let echo = http
            .get(format!("http://{ip}:{node_port}/echo?msg=hi"))
            .send()
            .await
            .expect("echo");
        assert_eq!(echo.text().await.expect("body"), "hi");
    }
    // Stopping the cluster closes its listeners.
    let (_, ip) = cluster.node_ips()[0];
    cluster.shutdown().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = http.get(format!("http://{ip}:{node_port}/hostname")).send().await;
    assert!(after.is_err(), "still answering after shutdown: {after:?}");
}

/// What an outside client gets from a connection to `addr` after sending a request.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// An HTTP response (its status line).
    Http(String),
    /// The connection was reset or closed without a response.
    Reset,
    /// Nothing came back within the wait.
    Silence,
}

async fn ask(addr: std::net::SocketAddr) -> Answer {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = common::eventually(&format!("a listener on {addr}"), || async {
        tokio::net::TcpStream::connect(addr).await.ok()
    })
    .await;
    if stream
        .write_all(b"GET /hostname HTTP/1.1\r\nHost: node\r\nConnection: close\r\n\r\n")
        .await
        .is_err()
    {
        return Answer::Reset;
    }
    let mut buf = Vec::new();
    match tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut buf)).await {
        Err(_) => Answer::Silence,
        Ok(_) if buf.is_empty() => Answer::Reset,
        Ok(_) => Answer::Http(String::from_utf8_lossy(&buf).lines().next().unwrap_or("").to_string()),
    }
}

/// A NodePort service without endpoints: the Linux node's kube-proxy rejects the connection
/// (reset), the Windows node's drops it (silence) — the fabric decides per connection, also
/// where one socket listens on every node's address (it answers as the node dialled).
#[rstest::rstest]
#[case::a_socket_per_node(None)]
#[case::one_socket_on_every_address(Some(0))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_ports_without_endpoints_reset_on_linux_and_stay_silent_on_windows(#[case] node_listeners: Option<usize>) {
    let mut config = simcluster::ClusterConfig::new(simcluster::Topology::default_cluster().instant().on_wall_clock());
    config.node_listeners = node_listeners;
    let cluster = common::start_with(config).await;
    common::namespace(&cluster, "svc");
    let client = common::kube_client(&cluster).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "svc");
    let svc = services
        .create(
            &PostParams::default(),
            &service(
                "nobody",
                json!({"type": "NodePort", "selector": {"app": "nobody"}, "ports": [{"port": 80, "targetPort": 8080}]}),
            ),
        )
        .await
        .expect("service");
    let node_port = svc
        .spec
        .and_then(|s| s.ports)
        .and_then(|p| p.first().and_then(|p| p.node_port))
        .and_then(|p| u16::try_from(p).ok())
        .expect("a node port");
    let ips = cluster.node_ips();
    let ip = |name: &str| ips.iter().find(|(n, _)| n == name).map(|(_, ip)| *ip).expect("node");
    let linux = std::net::SocketAddr::from((ip("linux-1"), node_port));
    let windows = std::net::SocketAddr::from((ip("win2019-1"), node_port));
    // The nodes' listeners align with the new Service soon after it exists, as a proxy programs
    // it: until then the port refuses (read as a reset). Once the Windows node answers with
    // silence its listener is in place, and the Linux node's of the same alignment too.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut on_windows = ask(windows).await;
    while on_windows != Answer::Silence && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        on_windows = ask(windows).await;
    }
    assert_eq!(on_windows, Answer::Silence);
    assert_eq!(ask(linux).await, Answer::Reset);
}

/// `type: LoadBalancer`: with a load-balancer controller (`network.loadBalancers`, on in the
/// default topology) the Service gets an ingress address and the cloud's events, and a client on
/// this machine reaches a backend there — also where node addresses are private, which is what
/// a load balancer is for; without one (a kubeadm cluster) it stays pending with no event.
#[rstest::rstest]
#[case::with_a_controller(true, true)]
#[case::private_nodes(true, false)]
#[case::without_one(false, true)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balancers_get_an_address_where_a_controller_runs(
    #[case] controller: bool,
    #[case] nodes_reachable: bool,
) {
    let mut topology = simcluster::Topology::default_cluster().instant().on_wall_clock();
    topology.network.load_balancers = controller;
    topology.network.node_addresses_reachable = nodes_reachable;
    let cluster = common::start_with(simcluster::ClusterConfig::new(topology)).await;
    common::namespace(&cluster, "lb");
    let client = common::kube_client(&cluster).await;
    echo_deployment(&client, "lb").await;
    let services: Api<Service> = Api::namespaced(client.clone(), "lb");
    services
        .create(
            &PostParams::default(),
            &service(
                "echo",
                json!({"type": "LoadBalancer", "selector": {"app": "echo"}, "ports": [{"port": 80, "targetPort": 8080}]}),
            ),
        )
        .await
        .expect("service");
    let ingress = || async {
        services
            .get("echo")
            .await
            .ok()
            .and_then(|s| s.status)
            .and_then(|s| s.load_balancer)
            .and_then(|lb| lb.ingress)
            .and_then(|i| i.first().and_then(|i| i.ip.clone()))
    };
    if !controller {
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(ingress().await, None, "no controller, no address");
        return;
    }
    let ip = common::eventually("an ingress address", ingress).await;
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), "lb");
    let reasons: Vec<String> = events
        .list(&ListParams::default().fields("involvedObject.name=echo"))
        .await
        .expect("events")
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert!(reasons.iter().any(|r| r == "EnsuredLoadBalancer"), "{reasons:?}");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .expect("http client");
    let url = format!("http://{ip}:80/hostname");
    let body = common::eventually(&url, || async {
        match http.get(&url).send().await {
            Ok(r) if r.status().is_success() => r.text().await.ok(),
            _ => None,
        }
    })
    .await;
    assert!(body.starts_with("echo-"), "{body}");
}
