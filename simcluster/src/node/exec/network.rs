//! The node side of the seam to the simulated network: each container gets a
//! [`crate::network::apps::Client`] at its source (pod network, or the node's host network for
//! hostNetwork and HostProcess pods) over the current fabric; a pod without a network (not
//! running, no address yet) gets [`Offline`]. [`crate::node::exec::nettools`] renders every command.

use std::sync::Arc;

use super::{CommandContext, NetworkCommands};
use crate::network::apps::SimNet;
use crate::network::wire::{Offline, Wire};

/// Network commands answered by the cluster's network.
#[derive(Debug, Clone)]
pub struct SimNetwork {
    net: Arc<SimNet>,
}

impl SimNetwork {
    pub fn new(net: Arc<SimNet>) -> Self {
        Self { net }
    }
}

impl NetworkCommands for SimNetwork {
    fn wire<'a>(&'a self, ctx: &'a CommandContext) -> Box<dyn Wire + 'a> {
        match self
            .net
            .client_for(&ctx.pod, &ctx.container, ctx.dns(), ctx.is_windows())
        {
            Some(client) => Box::new(client),
            None => Box::new(Offline {
                dns_server: ctx.dns().nameservers.first().cloned().unwrap_or_default(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::profile::profiles;
    use crate::config::topology::Topology;
    use crate::network::fabric::NetFacts;
    use crate::node::exec::SimRuntime;
    use crate::node::runtime::{ContainerRuntime, ExecOutput, ExecRequest, ExitStatus};
    use crate::store::resources;
    use crate::store::{Part, Store};
    use rstest::rstest;
    use serde_json::json;
    use std::net::Ipv4Addr;

    const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.52";

    /// The default topology with a netexec pod `web` on win2022-1 behind service `web`, a
    /// client pod on each OS and a HostProcess pod on win2019-1, all answered through SimRuntime.
    fn runtime() -> (Arc<Store>, SimRuntime) {
        let store = Arc::new(Store::default());
        for ns in ["team", "kube-system"] {
            store
                .create(resources::core("namespaces"), "", json!({"metadata": {"name": ns}}))
                .expect("ns");
        }
        store
            .create(
                resources::core("services"),
                "kube-system",
                json!({"metadata": {"name": "kube-dns"}, "spec": {"clusterIP": "10.96.0.10", "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]}}),
            )
            .expect("dns");
        store
            .create(
                resources::core("services"),
                "team",
                json!({"metadata": {"name": "web"}, "spec": {"clusterIP": "10.96.0.50", "ports": [{"port": 80, "targetPort": 8080}]}}),
            )
            .expect("svc");
        store
            .create(
                resources::core("endpoints"),
                "team",
                json!({"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "10.244.3.10", "targetRef": {"name": "web"}}], "ports": [{"port": 8080}]}]}),
            )
            .expect("endpoints");
        let topo = Topology::default_cluster().instant();
        let ips: Vec<Ipv4Addr> = (0..topo.nodes.len())
            .map(|i| Ipv4Addr::new(127, 8, 8, 10 + i as u8))
            .collect();
        let profiles = Arc::new(profiles(&topo, &ips));
        let pods = [
            (
                "web",
                "win2022-1",
                "10.244.3.10",
                json!({"containers": [{"name": "c", "image": AGNHOST, "args": ["netexec"]}]}),
            ),
            (
                "lin",
                "linux-1",
                "10.244.1.9",
                json!({"containers": [{"name": "c", "image": AGNHOST, "args": ["pause"]}]}),
            ),
            (
                "win",
                "win2019-1",
                "10.244.2.9",
                json!({"containers": [{"name": "c", "image": AGNHOST, "args": ["pause"]}]}),
            ),
            (
                "hp",
                "win2019-1",
                "127.8.8.12",
                json!({"hostNetwork": true,
                "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
                "containers": [{"name": "c", "image": "mcr.microsoft.com/powershell:lts-nanoserver-ltsc2022"}]}),
            ),
            (
                "hp-local",
                "win2022-1",
                "127.8.8.13",
                json!({"hostNetwork": true,
                "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
                "containers": [{"name": "c", "image": "mcr.microsoft.com/powershell:lts-nanoserver-ltsc2022"}]}),
            ),
        ];
        for (name, node, ip, mut spec) in pods {
            spec["nodeName"] = json!(node);
            store
                .create(
                    resources::core("pods"),
                    "team",
                    json!({"metadata": {"name": name}, "spec": spec}),
                )
                .expect("pod");
            store
                .modify(resources::core("pods"), "team", name, Part::Status, |p| {
                    p["status"] = json!({"phase": "Running", "podIP": ip,
                        "containerStatuses": [{"name": "c", "ready": true, "state": {"running": {}}}]});
                    Ok(())
                })
                .expect("status");
        }
        crate::node::addons::test_cluster_dns(&store, "control-plane", "10.244.0.2");
        let net = Arc::new(SimNet::new(
            store.clone(),
            profiles.clone(),
            NetFacts::from_topology(&topo),
        ));
        let runtime = SimRuntime::new(store.clone(), profiles).with_network(Arc::new(SimNetwork::new(net)));
        (store, runtime)
    }

    async fn exec(store: &Store, rt: &SimRuntime, pod: &str, argv: &[&str]) -> ExecOutput {
        let pod = store.get(resources::core("pods"), "team", pod).expect("pod");
        rt.exec(ExecRequest {
            pod,
            container: "c".into(),
            command: argv.iter().map(|s| s.to_string()).collect(),
            stdin: None,
            tty: false,
        })
        .await
    }

    #[rstest]
    #[case::linux_curl_service_name("lin", &["sh", "-c", "curl -s http://web/hostname"], "web", 0)]
    #[case::windows_curl_service_name("win", &["cmd", "/c", "curl.exe -s http://web/hostname"], "web", 0)]
    #[case::linux_nslookup_dotted("lin", &["nslookup", "web.team"], "Address: 10.96.0.50", 0)]
    #[case::agnhost_connect_pod("win", &["/agnhost", "connect", "10.244.3.10:8080", "--timeout=5s"], "", 0)]
    #[case::agnhost_connect_refused("lin", &["/agnhost", "connect", "10.244.3.10:9", "--timeout=5s"], "", 1)]
    // SVC-VIP-FROM-NODE (WDBG, WUG): a Windows host reaches no pod-backed ClusterIP, on a
    // current node (HostProcess, containerd 1.7) too, wherever the backend runs.
    #[case::hostprocess_service_ip_remote_backend("hp", &["curl.exe", "-s", "--connect-timeout", "5", "http://10.96.0.50/hostname"], "", 28)]
    #[case::hostprocess_service_ip_local_backend_times_out("hp-local", &["curl.exe", "-s", "--connect-timeout", "5", "http://10.96.0.50/hostname"], "", 28)]
    #[case::linux_ping_outside("lin", &["ping", "-c", "1", "203.0.113.10"], "1 packets received", 0)]
    #[case::windows_ping_outside("win", &["ping", "-n", "1", "203.0.113.10"], "Lost = 1", 1)]
    #[tokio::test]
    async fn commands_go_through_the_fabric(
        #[case] pod: &str,
        #[case] argv: &[&str],
        #[case] stdout: &str,
        #[case] code: i32,
    ) {
        let (store, rt) = runtime();
        let out = exec(&store, &rt, pod, argv).await;
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.exit, ExitStatus::Code(code), "{argv:?}: {out:?}");
        assert!(text.contains(stdout), "{argv:?}: {text}");
    }
}
