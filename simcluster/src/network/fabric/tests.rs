//! Flow matrices: source × destination × OS × same/other node × protocol × network mode ×
//! profile, each case naming the rule that decides it.

use super::*;
use rstest::rstest;

const LIN1: usize = 0;
const LIN2: usize = 1;
const WIN1: usize = 2;
const WIN2: usize = 3;

/// The era a case runs in: Kubernetes version and the Windows nodes' builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    /// v1.32, WS2019 + WS2022.
    Current,
    /// v1.14, WS2019.
    K114,
    /// v1.9, WS1709.
    K19,
    /// v1.5 alpha, WS2016.
    K15,
}

impl Era {
    fn kube(self) -> (u32, u32) {
        match self {
            Era::Current => (1, 32),
            Era::K114 => (1, 14),
            Era::K19 => (1, 9),
            Era::K15 => (1, 5),
        }
    }

    /// Whether the era's Windows CNI maps hostPorts (NET-HOSTPORT: the 1.9 guide's PortMapping
    /// works, the 1.14-era plugins had no portMappings, current ones do).
    fn port_mappings(self) -> bool {
        self != Era::K114
    }

    /// Whether the era's Windows hosts reach remote-backed ClusterIPs (HostProcess on
    /// containerd 1.7+; SVC-VIP-FROM-NODE).
    fn vip_from_host(self) -> bool {
        self == Era::Current
    }

    fn builds(self) -> [u32; 2] {
        match self {
            Era::Current => [17763, 20348],
            Era::K114 => [17763, 17763],
            Era::K19 => [16299, 16299],
            Era::K15 => [14393, 14393],
        }
    }
}

fn node_ip(n: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 10, 10 + n as u8)
}

fn pod_ip(n: usize, host: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 244, n as u8, host)
}

fn netexec(container: usize) -> Vec<Serve> {
    vec![
        Serve {
            port: 8080,
            proto: Proto::Tcp,
            app: App::Netexec,
            container,
        },
        Serve {
            port: 8081,
            proto: Proto::Udp,
            app: App::Netexec,
            container,
        },
    ]
}

fn pod(name: &str, node: usize, ip: Ipv4Addr, serves: Vec<Serve>) -> PodFacts {
    PodFacts {
        namespace: "default".into(),
        name: name.into(),
        hostname: name.into(),
        ip,
        ipv6: None,
        node,
        host_network: false,
        serves,
        host_ports: Vec::new(),
        meta: std::sync::Arc::new(crate::network::fabric::policy::PodMeta {
            namespace: "default".into(),
            ..Default::default()
        }),
    }
}

struct World {
    mode: NetworkMode,
    era: Era,
    dsr: bool,
    flannel_fix: bool,
    faults: Vec<(usize, Fault)>,
    /// Whether the Windows nodes run any pod.
    windows_pods: bool,
    /// The Windows nodes' per-service backend limit (NET-SVC-BACKEND-LIMIT).
    backend_limit: usize,
    /// Whether the cluster has an outbound route (`network.egress`).
    egress: bool,
}

impl World {
    fn new(mode: NetworkMode, era: Era) -> World {
        World {
            mode,
            era,
            dsr: false,
            flannel_fix: true,
            faults: Vec::new(),
            windows_pods: true,
            backend_limit: 64,
            egress: true,
        }
    }

    /// Four nodes (two Linux, two Windows); on each a netexec server `srv-N` (with a sidecar on
    /// 9000) and a client `cli-N`; a hostPort pod on WIN1; per node a ClusterIP+NodePort service
    /// `svc-N` and an `externalTrafficPolicy: Local` one over `srv-N`; an empty service; one
    /// outside web host.
    fn build(&self) -> Fabric {
        let mut f = Fabric::new(NetFacts {
            mode: self.mode,
            dsr: self.dsr,
            flannel_local_fix: self.flannel_fix,
            cluster_cidr: Cidr::parse("10.244.0.0/16").expect("cidr"),
            service_cidr: Cidr::parse("10.96.0.0/12").expect("cidr"),
            egress: self.egress,
            egress_ports: None,
            load_balancers_reachable: true,
        });
        for n in 0..4 {
            let windows = n >= WIN1;
            std::sync::Arc::make_mut(&mut f.nodes).push(NodeFacts {
                name: format!("node-{n}"),
                windows,
                build: windows.then(|| self.era.builds()[n - WIN1]),
                kube: self.era.kube(),
                ip: node_ip(n),
                source_vip: Ipv4Addr::new(10, 244, n as u8, 254),
                backend_limit: self.backend_limit,
                port_mappings: self.era.port_mappings(),
                vip_from_host: self.era.vip_from_host(),
                faults: self.faults.iter().filter(|(at, _)| *at == n).map(|(_, x)| *x).collect(),
                shares: Vec::new(),
                seed: 0,
                programming: std::time::Duration::ZERO,
            });
        }
        for n in 0..4 {
            if n >= WIN1 && !self.windows_pods {
                continue;
            }
            let mut serves = netexec(0);
            serves.push(Serve {
                port: 9000,
                proto: Proto::Tcp,
                app: App::Web,
                container: 1,
            });
            f.pods.push(pod(&format!("srv-{n}"), n, pod_ip(n, 10), serves).into());
            f.pods
                .push(pod(&format!("cli-{n}"), n, pod_ip(n, 20), Vec::new()).into());
        }
        if self.windows_pods {
            let mut hp = pod("hp", WIN1, pod_ip(WIN1, 30), netexec(0));
            hp.host_ports.push(HostPort {
                host_port: 4444,
                container_port: 8080,
                proto: Proto::Tcp,
            });
            f.pods.push(hp.into());
        }
        let srv = |f: &Fabric, n: usize| f.pod_index("default", &format!("srv-{n}"));
        for n in 0..4 {
            let Some(backend) = srv(&f, n) else { continue };
            f.services.push(ServiceFacts {
                namespace: "default".into(),
                name: format!("svc-{n}"),
                cluster_ip: Some(Ipv4Addr::new(10, 96, 1, 10 + n as u8)),
                ingress: Vec::new(),
                ports: vec![
                    ServicePort {
                        name: "http".into(),
                        port: 80,
                        node_port: Some(30000 + n as u16),
                        proto: Proto::Tcp,
                        targets: vec![(backend, 8080)],
                    },
                    ServicePort {
                        name: "udp".into(),
                        port: 90,
                        node_port: Some(31000 + n as u16),
                        proto: Proto::Udp,
                        targets: vec![(backend, 8081)],
                    },
                ],
                local_only: false,
                client_ip_affinity: false,
                cluster_dns: false,
                changed_at: None,
            });
            f.services.push(ServiceFacts {
                namespace: "default".into(),
                name: format!("local-{n}"),
                cluster_ip: Some(Ipv4Addr::new(10, 96, 2, 10 + n as u8)),
                ingress: Vec::new(),
                ports: vec![ServicePort {
                    name: "http".into(),
                    port: 80,
                    node_port: Some(32000 + n as u16),
                    proto: Proto::Tcp,
                    targets: vec![(backend, 8080)],
                }],
                local_only: true,
                client_ip_affinity: false,
                cluster_dns: false,
                changed_at: None,
            });
        }
        f.services.push(ServiceFacts {
            namespace: "default".into(),
            name: "empty".into(),
            cluster_ip: Some(Ipv4Addr::new(10, 96, 3, 1)),
            ingress: Vec::new(),
            ports: vec![ServicePort {
                name: "http".into(),
                port: 80,
                node_port: Some(30500),
                proto: Proto::Tcp,
                targets: Vec::new(),
            }],
            local_only: false,
            client_ip_affinity: false,
            cluster_dns: false,
            changed_at: None,
        });
        f.outside.push(OutsideHost {
            ip: Ipv4Addr::new(203, 0, 113, 10),
            name: "example.com".into(),
            serves: vec![(80, Proto::Tcp, App::Web), (443, Proto::Tcp, App::Web)],
        });
        f.index();
        f
    }
}

/// Where a case's flow starts.
#[derive(Debug, Clone, Copy)]
enum From {
    /// The client pod on a node.
    Pod(usize),
    /// The server pod's second container (for localhost flows).
    Sidecar(usize),
    /// The node's host network (hostNetwork / HostProcess pod).
    Host(usize),
    Outside,
}

/// Where a case's flow goes.
#[derive(Debug, Clone, Copy)]
enum To {
    /// The server pod on a node, at its netexec port.
    Pod(usize),
    /// The server pod on a node, at another port.
    PodPort(usize, u16),
    /// The ClusterIP of `svc-N`.
    Cluster(usize),
    /// The ClusterIP of the service without endpoints.
    Empty,
    /// Node `at`'s NodePort of `svc-N`.
    NodePort { at: usize, svc: usize },
    /// Node `at`'s NodePort of the `externalTrafficPolicy: Local` service over `srv-N`.
    LocalNodePort { at: usize, svc: usize },
    /// 127.0.0.1 at the NodePort of `svc-N`.
    LoopbackNodePort(usize),
    /// 127.0.0.1 at the sidecar's port 9000 / the server's 8080.
    Loopback(u16),
    /// hostPort 4444 on WIN1.
    HostPort,
    /// A node's address at a port (10250 is the kubelet).
    Node(usize, u16),
    /// The outside web host at a port.
    Outside(u16),
    /// An address nobody has.
    Nowhere,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Ok,
    Timeout,
    Refused,
    NoReply,
    Other,
}

use Class::{NoReply, Ok as Works, Other, Refused, Timeout};
use Proto::{Icmp, Tcp, Udp};

fn flow(f: &Fabric, from: From, to: To, proto: Proto) -> Flow {
    let src = match from {
        From::Pod(n) => Src::Pod {
            pod: f.pod_index("default", &format!("cli-{n}")).expect("client pod"),
            container: 0,
        },
        From::Sidecar(n) => Src::Pod {
            pod: f.pod_index("default", &format!("srv-{n}")).expect("server pod"),
            container: 1,
        },
        From::Host(n) => Src::Node(n),
        From::Outside => Src::Outside(Ipv4Addr::new(192, 0, 2, 50)),
    };
    let svc_port = |n: usize| match proto {
        Udp => (90, 31000 + n as u16),
        _ => (80, 30000 + n as u16),
    };
    let (dst, port) = match to {
        To::Pod(n) => (pod_ip(n, 10), if proto == Udp { 8081 } else { 8080 }),
        To::PodPort(n, p) => (pod_ip(n, 10), p),
        To::Cluster(n) => (Ipv4Addr::new(10, 96, 1, 10 + n as u8), svc_port(n).0),
        To::Empty => (Ipv4Addr::new(10, 96, 3, 1), 80),
        To::NodePort { at, svc } => (node_ip(at), svc_port(svc).1),
        To::LocalNodePort { at, svc } => (node_ip(at), 32000 + svc as u16),
        To::LoopbackNodePort(n) => (Ipv4Addr::LOCALHOST, svc_port(n).1),
        To::Loopback(p) => (Ipv4Addr::LOCALHOST, p),
        To::HostPort => (node_ip(WIN1), 4444),
        To::Node(n, p) => (node_ip(n), p),
        To::Outside(p) => (Ipv4Addr::new(203, 0, 113, 10), p),
        To::Nowhere => (Ipv4Addr::new(198, 51, 100, 7), 80),
    };
    Flow {
        src,
        dst,
        port,
        proto,
        pick: 0,
    }
}

fn class(v: &Decision) -> Class {
    match &v.result {
        Ok(_) => Works,
        Err(Failure::Timeout) => Timeout,
        Err(Failure::Refused | Failure::Reset) => Refused,
        Err(Failure::NoReply) => NoReply,
        Err(Failure::Other(_)) => Other,
    }
}

fn check(f: &Fabric, from: From, to: To, proto: Proto, expect: Class, rule: &str) -> Decision {
    let v = f.decide(&flow(f, from, to, proto));
    assert_eq!((class(&v), v.rule), (expect, rule), "{from:?} → {to:?} {proto}: {v:?}");
    v
}

/// Flows whose documented answer is the same in every network mode (current era).
#[rstest]
#[case::pod_pod_same_linux(From::Pod(LIN1), To::Pod(LIN1), Tcp, Works, "NET-POD-POD-IP-SAME")]
#[case::pod_pod_same_windows(From::Pod(WIN1), To::Pod(WIN1), Tcp, Works, "NET-POD-POD-IP-SAME")]
#[case::pod_pod_same_windows_udp(From::Pod(WIN2), To::Pod(WIN2), Udp, Works, "NET-POD-POD-IP-SAME")]
#[case::pod_pod_cross_linux(From::Pod(LIN1), To::Pod(LIN2), Tcp, Works, "NET-POD-POD-IP-CROSS")]
#[case::pod_pod_cross_windows(From::Pod(WIN1), To::Pod(WIN2), Tcp, Works, "NET-POD-POD-IP-CROSS")]
#[case::pod_pod_cross_windows_udp(From::Pod(WIN2), To::Pod(WIN1), Udp, Works, "NET-POD-POD-IP-CROSS")]
#[case::hybrid_linux_to_windows(From::Pod(LIN1), To::Pod(WIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN")]
#[case::hybrid_windows_to_linux(From::Pod(WIN2), To::Pod(LIN2), Tcp, Works, "NET-HYBRID-LINUX-WIN")]
#[case::hybrid_windows_to_linux_udp(From::Pod(WIN1), To::Pod(LIN1), Udp, Works, "NET-HYBRID-LINUX-WIN")]
#[case::ping_pod_same(From::Pod(WIN1), To::Pod(WIN1), Icmp, Works, "NET-ICMP-INTRA")]
#[case::ping_pod_cross(From::Pod(LIN1), To::Pod(WIN2), Icmp, Works, "NET-ICMP-INTRA")]
#[case::ping_pod_from_windows(From::Pod(WIN2), To::Pod(LIN1), Icmp, Works, "NET-ICMP-INTRA")]
#[case::closed_port_windows(From::Pod(LIN1), To::PodPort(WIN1, 9999), Tcp, Refused, "NET-HYBRID-LINUX-WIN")]
#[case::closed_port_linux(From::Pod(LIN2), To::PodPort(LIN1, 9999), Tcp, Refused, "NET-POD-POD-IP-CROSS")]
#[case::windows_pod_to_cluster_ip(From::Pod(WIN1), To::Cluster(LIN1), Tcp, Works, "SVC-VIP-FROM-WINPOD")]
#[case::windows_pod_to_windows_cluster_ip(From::Pod(WIN2), To::Cluster(WIN1), Tcp, Works, "SVC-VIP-FROM-WINPOD")]
#[case::windows_pod_to_cluster_ip_udp(From::Pod(WIN1), To::Cluster(WIN2), Udp, Works, "SVC-VIP-FROM-WINPOD")]
#[case::linux_pod_to_cluster_ip(From::Pod(LIN1), To::Cluster(WIN1), Tcp, Works, "NET-POD-SVC-CLUSTERIP")]
#[case::linux_pod_to_cluster_ip_udp(From::Pod(LIN2), To::Cluster(LIN1), Udp, Works, "NET-POD-SVC-CLUSTERIP")]
#[case::linux_host_to_cluster_ip(From::Host(LIN1), To::Cluster(WIN2), Tcp, Works, "NET-POD-SVC-CLUSTERIP")]
// SVC-VIP-FROM-NODE (WUG: hosts cannot reach "services scheduled on them"; E2E/host_process
// in-cluster API access needs remote-backed ClusterIPs to work from a HostProcess pod).
#[case::windows_host_to_own_cluster_ip(From::Host(WIN2), To::Cluster(WIN2), Tcp, Timeout, "SVC-VIP-FROM-NODE")]
#[case::ping_cluster_ip(From::Pod(LIN1), To::Cluster(LIN2), Icmp, NoReply, "SVC-TYPES")]
#[case::outside_to_cluster_ip(From::Outside, To::Cluster(LIN1), Tcp, Timeout, "SVC-TYPES")]
#[case::linux_pod_to_empty_service(From::Pod(LIN1), To::Empty, Tcp, Refused, "NET-POD-SVC-CLUSTERIP")]
#[case::windows_pod_to_empty_service(From::Pod(WIN1), To::Empty, Tcp, Timeout, "NET-POD-SVC-CLUSTERIP")]
#[case::windows_host_to_own_node_port(From::Host(WIN1), To::NodePort { at: WIN1, svc: LIN1 }, Tcp, Timeout, "NP-LOCAL-NODE")]
#[case::windows_host_to_own_node_port_udp(From::Host(WIN2), To::NodePort { at: WIN2, svc: WIN2 }, Udp, Timeout, "NP-LOCAL-NODE")]
#[case::windows_host_loopback_node_port(From::Host(WIN1), To::LoopbackNodePort(WIN1), Tcp, Timeout, "NP-LOCAL-NODE")]
#[case::windows_host_to_other_node_port(From::Host(WIN2), To::NodePort { at: WIN1, svc: WIN1 }, Tcp, Works, "NP-REMOTE")]
#[case::linux_host_to_windows_node_port(From::Host(LIN1), To::NodePort { at: WIN1, svc: LIN2 }, Tcp, Works, "NP-REMOTE")]
#[case::outside_to_windows_node_port(From::Outside, To::NodePort { at: WIN2, svc: LIN1 }, Tcp, Works, "NP-REMOTE")]
#[case::outside_to_linux_node_port(From::Outside, To::NodePort { at: LIN1, svc: WIN2 }, Tcp, Works, "NP-REMOTE")]
#[case::outside_to_node_port_udp(From::Outside, To::NodePort { at: WIN1, svc: WIN1 }, Udp, Works, "NP-REMOTE")]
#[case::linux_host_to_own_node_port(From::Host(LIN2), To::NodePort { at: LIN2, svc: WIN1 }, Tcp, Works, "SVC-TYPES")]
#[case::linux_host_loopback_node_port(From::Host(LIN1), To::LoopbackNodePort(WIN1), Tcp, Works, "SVC-TYPES")]
#[case::windows_pod_to_own_node_port(From::Pod(WIN1), To::NodePort { at: WIN1, svc: LIN1 }, Tcp, Works, "NP-FROM-WINPOD")]
#[case::windows_pod_to_linux_node_port(From::Pod(WIN2), To::NodePort { at: LIN1, svc: WIN2 }, Tcp, Works, "NP-FROM-WINPOD")]
#[case::local_policy_without_the_dsr_flag(From::Outside, To::LocalNodePort { at: WIN1, svc: WIN1 }, Tcp, Timeout, "NET-LOCAL-POLICY-NON-DSR")]
#[case::local_policy_linux(From::Outside, To::LocalNodePort { at: LIN1, svc: LIN1 }, Tcp, Works, "NP-REMOTE")]
#[case::local_policy_no_local_endpoint(From::Outside, To::LocalNodePort { at: LIN2, svc: LIN1 }, Tcp, Timeout, "SVC-TYPES")]
#[case::empty_node_port_linux(From::Outside, To::NodePort { at: LIN1, svc: 9 }, Tcp, Refused, "NET-POD-SVC-CLUSTERIP")]
#[case::linux_host_to_windows_pod(From::Host(LIN1), To::Pod(WIN1), Tcp, Works, "NET-NODE-POD")]
#[case::linux_host_ping_windows_pod(From::Host(LIN2), To::Pod(WIN2), Icmp, Works, "NET-ICMP-INTRA")]
#[case::pod_to_outside(From::Pod(WIN1), To::Outside(80), Tcp, Works, "NET-POD-EXT-IP")]
#[case::linux_pod_to_outside(From::Pod(LIN1), To::Outside(443), Tcp, Works, "NET-POD-EXT-IP")]
#[case::linux_pod_ping_outside(From::Pod(LIN1), To::Outside(0), Icmp, Works, "NET-POD-EXT-IP")]
#[case::windows_host_ping_outside(From::Host(WIN1), To::Outside(0), Icmp, Works, "NET-POD-EXT-IP")]
#[case::outside_closed_port(From::Pod(WIN2), To::Outside(22), Tcp, Refused, "NET-POD-EXT-IP")]
#[case::outside_nowhere(From::Pod(LIN2), To::Nowhere, Tcp, Timeout, "NET-POD-EXT-IP")]
#[case::outside_client_to_pod_ip(From::Outside, To::Pod(LIN1), Tcp, Timeout, "SVC-TYPES")]
#[case::windows_pod_to_linux_node(From::Pod(WIN1), To::Node(LIN1, KUBELET_PORT), Tcp, Works, "NET-POD-NODE")]
#[case::linux_pod_ping_windows_node(From::Pod(LIN1), To::Node(WIN2, 0), Icmp, Works, "NET-POD-NODE")]
#[case::pod_to_closed_node_port(From::Pod(LIN1), To::Node(LIN2, 1234), Tcp, Refused, "NET-POD-NODE")]
#[case::node_to_node_ping(From::Host(WIN1), To::Node(LIN1, 0), Icmp, Works, "HIST-1.9-VALIDATION")]
#[case::outside_to_host_port(From::Outside, To::HostPort, Tcp, Works, "NET-HOSTPORT")]
#[case::linux_host_to_host_port(From::Host(LIN1), To::HostPort, Tcp, Works, "NET-HOSTPORT")]
#[case::pod_to_host_port(From::Pod(LIN2), To::HostPort, Tcp, Works, "NET-HOSTPORT")]
#[case::localhost_shared_in_pod(From::Sidecar(WIN1), To::Loopback(8080), Tcp, Works, "POD-MULTI-CONTAINER")]
#[case::localhost_shared_linux(From::Sidecar(LIN1), To::Loopback(8080), Tcp, Works, "POD-MULTI-CONTAINER")]
#[case::localhost_closed(From::Sidecar(WIN2), To::Loopback(7777), Tcp, Refused, "POD-MULTI-CONTAINER")]
fn flows_in_every_mode(
    #[values(
        NetworkMode::L2bridge,
        NetworkMode::Overlay,
        NetworkMode::L2tunnel,
        NetworkMode::Transparent
    )]
    mode: NetworkMode,
    #[case] from: From,
    #[case] to: To,
    #[case] proto: Proto,
    #[case] expect: Class,
    #[case] rule: &str,
) {
    let to = match to {
        // `svc: 9` stands for the service without endpoints.
        To::NodePort { at, svc: 9 } => {
            let f = World::new(mode, Era::Current).build();
            let v = f.decide(&Flow {
                src: Src::Outside(Ipv4Addr::new(192, 0, 2, 50)),
                dst: node_ip(at),
                port: 30500,
                proto,
                pick: 0,
            });
            assert_eq!((class(&v), v.rule), (expect, rule), "{v:?}");
            return;
        }
        other => other,
    };
    check(&World::new(mode, Era::Current).build(), from, to, proto, expect, rule);
}

/// Flows whose answer depends on the network mode.
#[rstest]
#[case::l2bridge_windows_host_to_remote_pod(
    NetworkMode::L2bridge,
    From::Host(WIN1),
    To::Pod(WIN2),
    Works,
    "NET-NODE-POD"
)]
#[case::l2bridge_windows_host_to_local_pod(
    NetworkMode::L2bridge,
    From::Host(WIN1),
    To::Pod(WIN1),
    Works,
    "NET-NODE-POD"
)]
#[case::l2bridge_windows_host_to_linux_pod(
    NetworkMode::L2bridge,
    From::Host(WIN2),
    To::Pod(LIN1),
    Works,
    "NET-NODE-POD"
)]
#[case::l2tunnel_windows_host_to_remote_pod(
    NetworkMode::L2tunnel,
    From::Host(WIN1),
    To::Pod(WIN2),
    Works,
    "NET-NODE-POD"
)]
#[case::transparent_windows_host_to_remote_pod(
    NetworkMode::Transparent,
    From::Host(WIN2),
    To::Pod(LIN2),
    Works,
    "NET-NODE-POD"
)]
#[case::overlay_windows_host_to_remote_pod(
    NetworkMode::Overlay,
    From::Host(WIN1),
    To::Pod(WIN2),
    Timeout,
    "NET-NODE-POD-OVERLAY"
)]
#[case::overlay_windows_host_to_linux_pod(
    NetworkMode::Overlay,
    From::Host(WIN2),
    To::Pod(LIN1),
    Timeout,
    "NET-NODE-POD-OVERLAY"
)]
#[case::overlay_windows_host_to_local_pod(
    NetworkMode::Overlay,
    From::Host(WIN1),
    To::Pod(WIN1),
    Works,
    "NET-NODE-POD-OVERLAY"
)]
#[case::overlay_linux_host_to_windows_pod(NetworkMode::Overlay, From::Host(LIN1), To::Pod(WIN1), Works, "NET-NODE-POD")]
#[case::l2bridge_windows_ping_outside(
    NetworkMode::L2bridge,
    From::Pod(WIN1),
    To::Outside(0),
    NoReply,
    "NET-ICMP-EXTERNAL"
)]
#[case::overlay_windows_ping_outside(
    NetworkMode::Overlay,
    From::Pod(WIN2),
    To::Outside(0),
    NoReply,
    "NET-ICMP-EXTERNAL"
)]
#[case::l2tunnel_windows_ping_outside(
    NetworkMode::L2tunnel,
    From::Pod(WIN1),
    To::Outside(0),
    NoReply,
    "NET-ICMP-EXTERNAL"
)]
#[case::transparent_windows_ping_outside(
    NetworkMode::Transparent,
    From::Pod(WIN1),
    To::Outside(0),
    Works,
    "NET-POD-EXT-IP"
)]
// SVC-VIP-FROM-NODE on a current node (WDBG, WUG): a Windows host reaches no pod-backed
// ClusterIP, whatever the runtime and the network mode.
#[case::l2bridge_windows_host_to_remote_cluster_ip(
    NetworkMode::L2bridge,
    From::Host(WIN1),
    To::Cluster(LIN1),
    Timeout,
    "SVC-VIP-FROM-NODE"
)]
#[case::overlay_windows_host_to_remote_cluster_ip(
    NetworkMode::Overlay,
    From::Host(WIN1),
    To::Cluster(LIN1),
    Timeout,
    "SVC-VIP-FROM-NODE"
)]
fn flows_by_mode(
    #[case] mode: NetworkMode,
    #[case] from: From,
    #[case] to: To,
    #[case] expect: Class,
    #[case] rule: &str,
) {
    let proto = if matches!(to, To::Outside(0)) { Icmp } else { Tcp };
    check(&World::new(mode, Era::Current).build(), from, to, proto, expect, rule);
}

/// Flows whose answer depends on the profile's era.
#[rstest]
#[case::k15_udp_from_windows_pod(Era::K15, From::Pod(WIN1), To::Pod(LIN1), Udp, Timeout, "HIST-1.5-UDP")]
#[case::k15_udp_to_windows_pod(Era::K15, From::Pod(LIN1), To::Pod(WIN2), Udp, Timeout, "HIST-1.5-UDP")]
#[case::k15_tcp_from_windows_pod(Era::K15, From::Pod(WIN1), To::Pod(LIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN")]
#[case::k15_udp_between_linux_pods(Era::K15, From::Pod(LIN1), To::Pod(LIN2), Udp, Works, "NET-POD-POD-IP-CROSS")]
#[case::k15_localhost_isolated(
    Era::K15,
    From::Sidecar(WIN1),
    To::Loopback(8080),
    Tcp,
    Refused,
    "HIST-1.5-LOCALHOST"
)]
#[case::k15_localhost_own_container(
    Era::K15,
    From::Sidecar(WIN1),
    To::Loopback(9000),
    Tcp,
    Works,
    "HIST-1.5-LOCALHOST"
)]
#[case::k15_localhost_udp(Era::K15, From::Sidecar(WIN1), To::Loopback(8081), Udp, Timeout, "HIST-1.5-UDP")]
#[case::k15_linux_localhost_shared(
    Era::K15,
    From::Sidecar(LIN1),
    To::Loopback(8080),
    Tcp,
    Works,
    "POD-MULTI-CONTAINER"
)]
#[case::k19_localhost_shared(Era::K19, From::Sidecar(WIN2), To::Loopback(8080), Tcp, Works, "POD-MULTI-CONTAINER")]
#[case::k19_windows_host_to_cluster_ip(
    Era::K19,
    From::Host(WIN1),
    To::Cluster(LIN1),
    Tcp,
    Timeout,
    "HIST-1.9-SVC-VIP-NODE"
)]
#[case::k19_windows_pod_to_cluster_ip(Era::K19, From::Pod(WIN1), To::Cluster(LIN1), Tcp, Works, "SVC-VIP-FROM-WINPOD")]
#[case::k114_windows_host_to_cluster_ip(
    Era::K114,
    From::Host(WIN2),
    To::Cluster(WIN1),
    Tcp,
    Timeout,
    "SVC-VIP-FROM-NODE"
)]
#[case::k114_windows_host_to_own_node_port(Era::K114, From::Host(WIN1), To::NodePort { at: WIN1, svc: WIN2 }, Tcp, Timeout, "NP-LOCAL-NODE")]
#[case::k114_outside_to_windows_node_port(Era::K114, From::Outside, To::NodePort { at: WIN1, svc: LIN1 }, Tcp, Works, "NP-REMOTE")]
#[case::k19_outside_to_windows_node_port(Era::K19, From::Outside, To::NodePort { at: WIN2, svc: WIN1 }, Tcp, Works, "NP-REMOTE")]
fn flows_by_era(
    #[case] era: Era,
    #[case] from: From,
    #[case] to: To,
    #[case] proto: Proto,
    #[case] expect: Class,
    #[case] rule: &str,
) {
    check(
        &World::new(NetworkMode::L2bridge, era).build(),
        from,
        to,
        proto,
        expect,
        rule,
    );
}

#[rstest]
fn overlay_node_to_local_pod_needs_the_flannel_fix(#[values(Era::K114, Era::Current)] era: Era) {
    let mut w = World::new(NetworkMode::Overlay, era);
    w.flannel_fix = false;
    let f = w.build();
    check(
        &f,
        From::Host(WIN1),
        To::Pod(WIN1),
        Tcp,
        Timeout,
        "NET-NODE-POD-OVERLAY",
    );
    // Pods still reach each other and the Linux host still reaches the pod.
    check(&f, From::Pod(LIN1), To::Pod(WIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN");
    check(&f, From::Host(LIN1), To::Pod(WIN1), Tcp, Works, "NET-NODE-POD");
}

#[rstest]
#[case::windows_node(WIN1, "NET-DSR")]
#[case::linux_node(LIN1, "NP-REMOTE")]
fn local_policy_with_dsr_keeps_the_client_address(#[case] at: usize, #[case] rule: &str) {
    let mut w = World::new(NetworkMode::L2bridge, Era::Current);
    w.dsr = true;
    let f = w.build();
    let v = check(&f, From::Outside, To::LocalNodePort { at, svc: at }, Tcp, Works, rule);
    assert_eq!(v.result.map(|r| r.seen_from), Ok(Ipv4Addr::new(192, 0, 2, 50)));
    // Cluster policy SNATs to the receiving node's address.
    let v = check(
        &f,
        From::Outside,
        To::NodePort { at, svc: LIN2 },
        Tcp,
        Works,
        "NP-REMOTE",
    );
    assert_eq!(v.result.map(|r| r.seen_from), Ok(node_ip(at)));
}

/// `externalTrafficPolicy: Local` on a Windows node (NET-LOCAL-POLICY-NON-DSR, NET-DSR; W14,
/// W20 and WNET): a limitation in 1.14 whatever the flags, on builds without DSR and in non-DSR
/// mode (WNET); with DSR enabled on a current cluster the backend sees the client's address.
#[rstest]
#[case::ws1709_has_no_dsr(Era::K19, true, Timeout, "NET-LOCAL-POLICY-NON-DSR")]
#[case::k114_without_dsr(Era::K114, false, Timeout, "NET-LOCAL-POLICY-NON-DSR")]
#[case::k114_even_with_dsr(Era::K114, true, Timeout, "NET-LOCAL-POLICY-NON-DSR")]
#[case::current_without_the_flag(Era::Current, false, Timeout, "NET-LOCAL-POLICY-NON-DSR")]
#[case::current_with_the_flag(Era::Current, true, Works, "NET-DSR")]
fn local_policy_by_era_and_flags(#[case] era: Era, #[case] dsr: bool, #[case] expect: Class, #[case] rule: &str) {
    let mut w = World::new(NetworkMode::L2bridge, era);
    w.dsr = dsr;
    let f = w.build();
    let v = check(
        &f,
        From::Outside,
        To::LocalNodePort { at: WIN1, svc: WIN1 },
        Tcp,
        expect,
        rule,
    );
    if expect == Works {
        assert_eq!(v.result.map(|r| r.seen_from), Ok(Ipv4Addr::new(192, 0, 2, 50)));
    }
}

/// Who the backend sees: the client pod, the node, or the node's source VIP (overlay without DSR).
#[rstest]
#[case::l2bridge_windows_pod_to_cluster_ip(NetworkMode::L2bridge, false, From::Pod(WIN1), To::Cluster(LIN1), "pod")]
#[case::overlay_windows_pod_to_cluster_ip(NetworkMode::Overlay, false, From::Pod(WIN1), To::Cluster(LIN1), "vip")]
#[case::overlay_dsr_windows_pod_to_cluster_ip(NetworkMode::Overlay, true, From::Pod(WIN1), To::Cluster(LIN1), "pod")]
#[case::overlay_linux_pod_to_cluster_ip(NetworkMode::Overlay, false, From::Pod(LIN1), To::Cluster(WIN1), "pod")]
#[case::overlay_node_port_on_windows(NetworkMode::Overlay, false, From::Outside, To::NodePort { at: WIN1, svc: LIN1 }, "vip")]
#[case::overlay_dsr_node_port_on_windows(NetworkMode::Overlay, true, From::Outside, To::NodePort { at: WIN1, svc: LIN1 }, "node")]
#[case::l2bridge_node_port_on_windows(NetworkMode::L2bridge, false, From::Outside, To::NodePort { at: WIN1, svc: LIN1 }, "node")]
fn source_address_seen_by_the_backend(
    #[case] mode: NetworkMode,
    #[case] dsr: bool,
    #[case] from: From,
    #[case] to: To,
    #[case] seen: &str,
) {
    let mut w = World::new(mode, Era::Current);
    w.dsr = dsr;
    let f = w.build();
    let v = f.decide(&flow(&f, from, to, Tcp));
    let expect = match (seen, from) {
        ("pod", From::Pod(n)) => pod_ip(n, 20),
        ("vip", _) => Ipv4Addr::new(10, 244, WIN1 as u8, 254),
        _ => node_ip(WIN1),
    };
    assert_eq!(v.result.map(|r| r.seen_from), Ok(expect));
}

#[test]
fn pod_flows_keep_the_pod_address_and_outside_flows_are_natted() {
    let f = World::new(NetworkMode::L2bridge, Era::Current).build();
    let v = check(&f, From::Pod(WIN1), To::Pod(LIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN");
    assert_eq!(v.result.map(|r| r.seen_from), Ok(pod_ip(WIN1, 20)));
    let v = check(&f, From::Pod(WIN1), To::Outside(80), Tcp, Works, "NET-POD-EXT-IP");
    assert_eq!(v.result.map(|r| r.seen_from), Ok(node_ip(WIN1)));
}

/// NP-REMOTE: a Windows node forwards its NodePorts whether or not it runs a pod — no document
/// says a NodePort needs a local pod (review of 2026-11 removed that invented rule).
#[rstest]
fn windows_node_ports_forward_without_local_pods(
    #[values(Era::K19, Era::K114, Era::Current)] era: Era,
    #[values(false, true)] windows_pods: bool,
) {
    let mut w = World::new(NetworkMode::L2bridge, era);
    w.windows_pods = windows_pods;
    let f = w.build();
    check(
        &f,
        From::Outside,
        To::NodePort { at: WIN1, svc: LIN1 },
        Tcp,
        Works,
        "NP-REMOTE",
    );
}

/// NET-HOSTPORT by era (S2; GH containernetworking/plugins#475, GH kubernetes#90116):
/// the 1.9 host-gw PortMapping works, 1.14-era win-bridge/win-overlay had no portMappings,
/// current CNIs map hostPorts.
#[rstest]
#[case::k19_port_mapping(Era::K19, From::Outside, Works)]
#[case::k114_no_port_mappings(Era::K114, From::Outside, Timeout)]
#[case::k114_from_linux_host(Era::K114, From::Host(LIN1), Timeout)]
#[case::current_port_mappings(Era::Current, From::Outside, Works)]
#[case::current_from_another_windows_node(Era::Current, From::Host(WIN2), Works)]
fn host_port_by_era(#[case] era: Era, #[case] from: From, #[case] expect: Class) {
    let f = World::new(NetworkMode::L2bridge, era).build();
    check(&f, from, To::HostPort, Tcp, expect, "NET-HOSTPORT");
}

/// NET-HOSTPORT (plugins#475): a container reaches its own node's hostPort only from Windows
/// 1903 (18362); the host → own hostPort case is undocumented and left working.
#[rstest]
#[case::ws2019(17763, Works)]
#[case::ws1903(18362, Works)]
#[case::ws2022(20348, Works)]
fn own_host_port_needs_windows_1903(#[case] build: u32, #[case] expect: Class) {
    let mut f = World::new(NetworkMode::L2bridge, Era::Current).build();
    std::sync::Arc::make_mut(&mut f.nodes)[WIN1].build = Some(build);
    check(&f, From::Host(WIN1), To::HostPort, Tcp, expect, "NET-HOSTPORT");
    check(&f, From::Host(WIN2), To::HostPort, Tcp, Works, "NET-HOSTPORT");
}

/// A fabric with one service of `backends` pods on LIN1 (ClusterIP 10.96.9.9:80), Windows
/// nodes taking at most `limit` backends per service.
fn crowded(era: Era, limit: usize, backends: usize, affinity: bool) -> Fabric {
    let mut w = World::new(NetworkMode::L2bridge, era);
    w.backend_limit = limit;
    let mut f = w.build();
    let mut targets = Vec::new();
    for i in 0..backends {
        f.pods.push(std::sync::Arc::new(pod(
            &format!("many-{i}"),
            LIN1,
            Ipv4Addr::new(10, 244, 100 + (i / 250) as u8, (i % 250) as u8 + 2),
            netexec(0),
        )));
        targets.push((f.pods.len() - 1, 8080));
    }
    f.services.push(ServiceFacts {
        namespace: "default".into(),
        name: "many".into(),
        cluster_ip: Some(Ipv4Addr::new(10, 96, 9, 9)),
        ingress: Vec::new(),
        ports: vec![ServicePort {
            name: String::new(),
            port: 80,
            node_port: None,
            proto: Tcp,
            targets,
        }],
        local_only: false,
        client_ip_affinity: affinity,
        cluster_dns: false,
        changed_at: None,
    });
    f.index();
    f
}

fn to_many(f: &Fabric, from: usize, pick: u64) -> Decision {
    f.decide(&Flow {
        src: Src::Pod {
            pod: f.pod_index("default", &format!("cli-{from}")).expect("client"),
            container: 0,
        },
        dst: Ipv4Addr::new(10, 96, 9, 9),
        port: 80,
        proto: Tcp,
        pick,
    })
}

/// NET-SVC-BACKEND-LIMIT (W20, W22, WNETo: 64; WNET: 1024): a property of
/// the Windows node (the OS fix of microsoft/Windows-Containers#93), not of the Kubernetes
/// version — a current cluster without the fix still takes 64.
#[rstest]
#[case::old_limit_windows(Era::K114, 64, 65, WIN1, Timeout, "NET-SVC-BACKEND-LIMIT")]
#[case::old_limit_at_limit(Era::K114, 64, 64, WIN1, Works, "SVC-VIP-FROM-WINPOD")]
#[case::linux_unlimited(Era::K114, 64, 65, LIN2, Works, "NET-POD-SVC-CLUSTERIP")]
#[case::current_cluster_without_the_fix(Era::Current, 64, 65, WIN2, Timeout, "NET-SVC-BACKEND-LIMIT")]
#[case::fix_installed_over_limit(Era::Current, 1024, 1025, WIN2, Timeout, "NET-SVC-BACKEND-LIMIT")]
#[case::fix_installed_at_limit(Era::Current, 1024, 1024, WIN2, Works, "SVC-VIP-FROM-WINPOD")]
fn backend_limit_per_service(
    #[case] era: Era,
    #[case] limit: usize,
    #[case] backends: usize,
    #[case] from: usize,
    #[case] expect: Class,
    #[case] rule: &str,
) {
    let f = crowded(era, limit, backends, false);
    let v = to_many(&f, from, 7);
    assert_eq!((class(&v), v.rule), (expect, rule), "{v:?}");
}

#[rstest]
#[case::linux_honours_affinity(LIN2, true, 1)]
#[case::ws2022_honours_affinity(WIN2, true, 1)]
#[case::ws2019_ignores_affinity(WIN1, true, 5)]
#[case::no_affinity_round_robin(LIN1, false, 5)]
fn session_affinity(#[case] from: usize, #[case] affinity: bool, #[case] distinct: usize) {
    let f = crowded(Era::Current, 64, 5, affinity);
    let ignored = to_many(&f, from, 0).rule == "NET-SESSION-AFFINITY";
    assert_eq!(ignored, affinity && distinct > 1, "the rule names the ignored affinity");
    let seen: std::collections::HashSet<_> = (0..10)
        .map(|pick| match to_many(&f, from, pick).result {
            Ok(Reached {
                at: Endpoint::Pod { pod, .. },
                ..
            }) => pod,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(seen.len(), distinct);
}

/// A client keeps its backend when another backend joins (kube-proxy's affinity entries outlive
/// the change), whether the change is still being programmed or long done.
#[rstest]
#[case::linux(LIN2)]
#[case::ws2022(WIN2)]
fn affinity_outlives_a_new_backend(#[case] from: usize) {
    let mut f = crowded(Era::Current, 64, 1, true);
    let many = f.services.len() - 1;
    let first = f.services[many].ports[0].targets[0];
    let old: std::collections::BTreeSet<Ipv4Addr> = [f.pods[first.0].ip].into();
    f.pods
        .push(pod("joined", LIN1, Ipv4Addr::new(10, 244, 99, 9), netexec(0)).into());
    let joined = f.pods.len() - 1;
    f.services[many].ports[0].targets.push((joined, 8080));
    f.settled.insert(many, std::sync::Arc::new(vec![old]));
    f.index();
    for pick in 0..10 {
        match to_many(&f, from, pick).result {
            Ok(Reached {
                at: Endpoint::Pod { pod, .. },
                ..
            }) => assert_eq!(pod, first.0, "pick {pick}"),
            other => panic!("{other:?}"),
        }
    }
}

type Case = (From, To, Proto, Class, &'static str);

/// Each network fault on WIN1: the flows it breaks (with the failure and rule) and flows it
/// must leave alone.
#[rstest]
#[case::mac_spoofing(
    NetworkMode::L2bridge,
    Fault::MacSpoofingDisabled,
    &[
        (From::Pod(WIN1), To::Pod(LIN1), Tcp, Timeout, "NET-MAC-SPOOFING"),
        (From::Pod(LIN1), To::Pod(WIN1), Tcp, Timeout, "NET-MAC-SPOOFING"),
        (From::Pod(WIN1), To::Outside(80), Tcp, Timeout, "NET-MAC-SPOOFING"),
        (From::Pod(WIN2), To::Cluster(WIN1), Tcp, Timeout, "NET-MAC-SPOOFING"),
        (From::Outside, To::NodePort { at: LIN1, svc: WIN1 }, Tcp, Timeout, "NET-MAC-SPOOFING"),
    ],
    &[
        (From::Pod(WIN1), To::Pod(WIN1), Tcp, Works, "NET-POD-POD-IP-SAME"),
        (From::Host(WIN1), To::Node(LIN1, KUBELET_PORT), Tcp, Works, "HIST-1.9-VALIDATION"),
        (From::Pod(WIN2), To::Pod(LIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN"),
    ],
)]
#[case::exception_list_missing_cluster_overlay(
    NetworkMode::Overlay,
    Fault::ExceptionListMissingCluster,
    &[
        (From::Pod(WIN1), To::Pod(LIN1), Tcp, Timeout, "NET-OUTBOUND-NAT-EXCEPTIONLIST"),
        (From::Pod(WIN1), To::Pod(WIN2), Udp, Timeout, "NET-OUTBOUND-NAT-EXCEPTIONLIST"),
        (From::Pod(WIN1), To::Cluster(LIN2), Tcp, Timeout, "NET-OUTBOUND-NAT-EXCEPTIONLIST"),
    ],
    &[
        (From::Pod(WIN1), To::Outside(80), Tcp, Works, "NET-POD-EXT-IP"),
        (From::Pod(WIN1), To::Pod(WIN1), Tcp, Works, "NET-POD-POD-IP-SAME"),
        (From::Pod(LIN1), To::Pod(WIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN"),
    ],
)]
#[case::flannel_rejoin_stale_source_vip(
    NetworkMode::Overlay,
    Fault::FlannelRejoinStaleSourceVip,
    &[
        (From::Pod(WIN1), To::Cluster(LIN1), Tcp, Timeout, "NET-FLANNEL-REJOIN"),
        (From::Outside, To::NodePort { at: WIN1, svc: WIN2 }, Tcp, Timeout, "NET-FLANNEL-REJOIN"),
    ],
    &[
        (From::Pod(WIN1), To::Pod(LIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN"),
        (From::Pod(LIN1), To::Cluster(WIN1), Tcp, Works, "NET-POD-SVC-CLUSTERIP"),
        (From::Outside, To::NodePort { at: WIN2, svc: WIN1 }, Tcp, Works, "NP-REMOTE"),
    ],
)]
#[case::vxlan_params_mismatch(
    NetworkMode::Overlay,
    Fault::VxlanParamsMismatch,
    &[
        (From::Pod(WIN1), To::Pod(LIN1), Tcp, Timeout, "NET-FLANNEL-VXLAN-PARAMS"),
        (From::Pod(LIN2), To::Pod(WIN1), Tcp, Timeout, "NET-FLANNEL-VXLAN-PARAMS"),
        (From::Pod(WIN2), To::Cluster(WIN1), Tcp, Timeout, "NET-FLANNEL-VXLAN-PARAMS"),
    ],
    &[
        (From::Pod(WIN1), To::Pod(WIN1), Tcp, Works, "NET-POD-POD-IP-SAME"),
        (From::Pod(WIN2), To::Pod(LIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN"),
        (From::Host(LIN1), To::Node(WIN1, KUBELET_PORT), Tcp, Works, "HIST-1.9-VALIDATION"),
    ],
)]
#[case::exception_list_covers_outside(
    NetworkMode::L2bridge,
    Fault::ExceptionListCoversOutside,
    &[
        (From::Pod(WIN1), To::Outside(80), Tcp, Timeout, "NET-OUTBOUND-NAT-EXCEPTIONLIST"),
        (From::Pod(WIN1), To::Outside(443), Tcp, Timeout, "NET-OUTBOUND-NAT-EXCEPTIONLIST"),
    ],
    &[
        (From::Pod(WIN1), To::Pod(LIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN"),
        (From::Pod(WIN1), To::Cluster(WIN2), Tcp, Works, "SVC-VIP-FROM-WINPOD"),
        (From::Pod(WIN2), To::Outside(80), Tcp, Works, "NET-POD-EXT-IP"),
        (From::Host(WIN1), To::Outside(80), Tcp, Works, "NET-POD-EXT-IP"),
    ],
)]
#[case::kube_proxy_hostname(
    NetworkMode::L2bridge,
    Fault::KubeProxyNoHostnameOverride,
    &[
        (From::Pod(WIN1), To::Pod(WIN1), Tcp, Timeout, "NET-KUBEPROXY-HOSTNAME"),
        (From::Pod(LIN1), To::Pod(WIN1), Tcp, Timeout, "NET-KUBEPROXY-HOSTNAME"),
        (From::Pod(LIN1), To::Cluster(WIN1), Tcp, Timeout, "NET-KUBEPROXY-HOSTNAME"),
        (From::Outside, To::NodePort { at: WIN2, svc: WIN1 }, Tcp, Timeout, "NET-KUBEPROXY-HOSTNAME"),
    ],
    &[
        (From::Pod(WIN2), To::Pod(LIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN"),
        (From::Host(WIN1), To::Pod(LIN1), Tcp, Works, "NET-NODE-POD"),
        (From::Pod(LIN1), To::Cluster(WIN2), Tcp, Works, "NET-POD-SVC-CLUSTERIP"),
    ],
)]
#[case::kube_proxy_stopped(
    NetworkMode::L2bridge,
    Fault::KubeProxyStopped,
    &[
        (From::Pod(WIN1), To::Cluster(LIN1), Tcp, Timeout, "NET-POD-SVC-CLUSTERIP"),
        (From::Outside, To::NodePort { at: WIN1, svc: LIN1 }, Tcp, Timeout, "NET-POD-SVC-CLUSTERIP"),
        (From::Host(LIN1), To::NodePort { at: WIN1, svc: WIN1 }, Tcp, Timeout, "NET-POD-SVC-CLUSTERIP"),
    ],
    &[
        (From::Pod(WIN1), To::Pod(LIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN"),
        (From::Pod(LIN1), To::Cluster(WIN1), Tcp, Works, "NET-POD-SVC-CLUSTERIP"),
        (From::Outside, To::NodePort { at: WIN2, svc: WIN1 }, Tcp, Works, "NP-REMOTE"),
    ],
)]
#[case::port_exhaustion(
    NetworkMode::L2bridge,
    Fault::PortExhaustion,
    &[
        (From::Pod(WIN1), To::Outside(80), Tcp, Timeout, "NET-POD-EXT-IP"),
        (From::Host(WIN1), To::Outside(443), Tcp, Other, "NET-POD-EXT-IP"),
        (From::Host(WIN1), To::Pod(LIN1), Tcp, Other, "NET-POD-EXT-IP"),
        (From::Host(WIN1), To::Node(LIN1, KUBELET_PORT), Tcp, Other, "NET-POD-EXT-IP"),
    ],
    &[
        (From::Pod(WIN1), To::Pod(LIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN"),
        (From::Pod(WIN1), To::Cluster(WIN2), Tcp, Works, "SVC-VIP-FROM-WINPOD"),
        (From::Pod(WIN2), To::Outside(80), Tcp, Works, "NET-POD-EXT-IP"),
    ],
)]
fn network_faults(
    #[case] mode: NetworkMode,
    #[case] fault: Fault,
    #[case] broken: &[Case],
    #[case] untouched: &[Case],
) {
    let mut w = World::new(mode, Era::Current);
    w.faults.push((WIN1, fault));
    let f = w.build();
    for &(from, to, proto, expect, rule) in broken.iter().chain(untouched) {
        check(&f, from, to, proto, expect, rule);
    }
    // The same flows on a fabric without the fault all work.
    let clean = World::new(mode, Era::Current).build();
    for &(from, to, proto, _, _) in broken {
        let v = clean.decide(&flow(&clean, from, to, proto));
        assert!(v.delivered(), "without {fault}: {from:?} → {to:?}: {v:?}");
    }
}

#[rstest]
#[case::windows(WIN1, WSAENOBUFS)]
#[case::linux(LIN2, EADDRNOTAVAIL)]
fn port_exhaustion_fails_host_connections_with_the_os_error(#[case] node: usize, #[case] text: &str) {
    let mut w = World::new(NetworkMode::L2bridge, Era::Current);
    w.faults.push((node, Fault::PortExhaustion));
    let f = w.build();
    let v = f.decide(&flow(&f, From::Host(node), To::Outside(80), Tcp));
    assert_eq!(v.result, Err(Failure::Other(text.into())));
    // ICMP needs no port.
    check(&f, From::Host(node), To::Outside(0), Icmp, Works, "NET-POD-EXT-IP");
}

#[test]
fn missing_cluster_ranges_on_l2bridge_snat_to_the_node_address() {
    let mut w = World::new(NetworkMode::L2bridge, Era::Current);
    w.faults.push((WIN1, Fault::ExceptionListMissingCluster));
    let f = w.build();
    for to in [To::Pod(LIN1), To::Pod(WIN2), To::Cluster(LIN2)] {
        let v = check(&f, From::Pod(WIN1), to, Tcp, Works, "NET-OUTBOUND-NAT-EXCEPTIONLIST");
        assert_eq!(v.result.map(|r| r.seen_from), Ok(node_ip(WIN1)), "{to:?}");
    }
    // Same-node and other nodes' pods keep their addresses.
    let v = check(&f, From::Pod(WIN1), To::Pod(WIN1), Tcp, Works, "NET-POD-POD-IP-SAME");
    assert_eq!(v.result.map(|r| r.seen_from), Ok(pod_ip(WIN1, 20)));
    let v = check(&f, From::Pod(WIN2), To::Pod(LIN1), Tcp, Works, "NET-HYBRID-LINUX-WIN");
    assert_eq!(v.result.map(|r| r.seen_from), Ok(pod_ip(WIN2, 20)));
}

/// Adds `replicas` CoreDNS pods on LIN1 behind `kube-system/kube-dns` (10.96.0.10).
fn with_cluster_dns(mut f: Fabric, replicas: usize) -> Fabric {
    let first = f.pods.len();
    for i in 0..replicas {
        f.pods.push(std::sync::Arc::new(pod(
            &format!("coredns-{i}"),
            LIN1,
            Ipv4Addr::UNSPECIFIED,
            vec![Serve {
                port: 53,
                proto: Udp,
                app: App::Dns,
                container: 0,
            }],
        )));
    }
    f.services.push(ServiceFacts {
        namespace: "kube-system".into(),
        name: "kube-dns".into(),
        cluster_ip: Some(Ipv4Addr::new(10, 96, 0, 10)),
        ingress: Vec::new(),
        ports: vec![ServicePort {
            name: "dns".into(),
            port: 53,
            node_port: None,
            proto: Udp,
            targets: (first..first + replicas).map(|p| (p, 53)).collect(),
        }],
        local_only: false,
        client_ip_affinity: false,
        cluster_dns: true,
        changed_at: None,
    });
    f.index();
    f
}

/// A lookup from pod `from` to the cluster DNS service, at round-robin position `pick`.
fn lookup(f: &Fabric, from: usize, pick: u64) -> Decision {
    f.decide(&Flow {
        src: Src::Pod {
            pod: from,
            container: 0,
        },
        dst: Ipv4Addr::new(10, 96, 0, 10),
        port: 53,
        proto: Udp,
        pick,
    })
}

#[test]
fn dns_unreachable_breaks_only_the_dns_service() {
    let mut w = World::new(NetworkMode::L2bridge, Era::Current);
    w.faults.push((WIN1, Fault::DnsUnreachable));
    let f = with_cluster_dns(w.build(), 1);
    let client = |n: usize| f.pod_index("default", &format!("cli-{n}")).expect("client");
    let v = lookup(&f, client(WIN1), 0);
    assert_eq!((v.result, v.rule), (Err(Failure::Timeout), "DNS-FQDN"));
    let v = lookup(&f, client(WIN2), 0);
    assert!(v.delivered(), "{v:?}");
    assert_eq!(v.rule, "SVC-VIP-FROM-WINPOD");
    check(
        &f,
        From::Pod(WIN1),
        To::Cluster(LIN1),
        Tcp,
        Works,
        "SVC-VIP-FROM-WINPOD",
    );
    check(&f, From::Pod(WIN1), To::Outside(80), Tcp, Works, "NET-POD-EXT-IP");
}

/// The data-plane faults on WIN1, over six lookups from each pod on the pod network of WIN1 and
/// WIN2 to the cluster DNS service with two replicas: no load balancer fails every lookup from
/// the node; a deleted third backend kept in it fails the lookups that pick it (one in three,
/// kubernetes#131466); a reused address's stale remote endpoint fails the lookups of the pod
/// that has the address — the node's lowest — only (kubernetes#138000); a leaked load balancer
/// breaks nothing. Other Services and other nodes are untouched.
#[rstest]
#[case::missing(Fault::HnsLbPolicyMissing, 6, false)]
#[case::stale_backend(Fault::HnsStaleBackend, 2, false)]
#[case::stale_remote(Fault::HnsStaleRemoteEndpoint, 6, true)]
#[case::leaked(Fault::HnsLeakedPolicies, 0, false)]
fn data_plane_drift_fails_lookups_through_the_node(
    #[values(NetworkMode::L2bridge, NetworkMode::Overlay)] mode: NetworkMode,
    #[case] fault: Fault,
    #[case] failed: usize,
    #[case] one_pod: bool,
) {
    let mut w = World::new(mode, Era::Current);
    w.faults.push((WIN1, fault));
    let f = with_cluster_dns(w.build(), 2);
    let on = |n: usize| -> Vec<usize> {
        let mut pods: Vec<usize> = (0..f.pods.len())
            .filter(|&p| f.pods[p].node == n && !f.pods[p].host_network)
            .collect();
        pods.sort_by_key(|&p| f.pods[p].ip);
        pods
    };
    let pods = on(WIN1);
    assert!(pods.len() >= 2, "{pods:?}");
    for (i, &p) in pods.iter().enumerate() {
        let verdicts: Vec<Decision> = (0..6).map(|pick| lookup(&f, p, pick)).collect();
        let failures: Vec<&Decision> = verdicts.iter().filter(|v| !v.delivered()).collect();
        let expected = if one_pod && i > 0 { 0 } else { failed };
        assert_eq!(failures.len(), expected, "{} {verdicts:?}", f.pods[p].name);
        for v in failures {
            assert_eq!((&v.result, v.rule), (&Err(Failure::Timeout), fault.rule()), "{v:?}");
        }
    }
    for p in on(WIN2) {
        assert!((0..6).all(|pick| lookup(&f, p, pick).delivered()));
    }
    let reach = if one_pod { pods[1] } else { pods[0] };
    let v = f.decide(&Flow {
        src: Src::Pod {
            pod: reach,
            container: 0,
        },
        ..flow(&f, From::Pod(WIN1), To::Cluster(LIN1), Tcp)
    });
    assert!(v.delivered(), "{v:?}");
}

/// Any flow, however odd (unknown pods and nodes, any address, port and protocol, every fault),
/// gets a verdict without panicking, and a delivered one names an endpoint that exists.
#[rstest]
fn every_flow_gets_a_verdict(
    #[values(
        NetworkMode::L2bridge,
        NetworkMode::Overlay,
        NetworkMode::L2tunnel,
        NetworkMode::Transparent
    )]
    mode: NetworkMode,
) {
    let mut w = World::new(mode, Era::Current);
    w.dsr = true;
    w.faults = crate::config::faults::ALL.iter().map(|f| (WIN2, *f)).collect();
    let f = w.build();
    let mut seed = 0x5eed_u64;
    let mut next = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        seed >> 33
    };
    let addresses: Vec<Ipv4Addr> = f
        .pods
        .iter()
        .map(|p| p.ip)
        .chain(f.nodes.iter().map(|n| n.ip))
        .chain(f.services.iter().filter_map(|s| s.cluster_ip))
        .chain([
            Ipv4Addr::LOCALHOST,
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::BROADCAST,
            Ipv4Addr::new(10, 244, 9, 9),
            Ipv4Addr::new(10, 100, 0, 1),
            Ipv4Addr::new(203, 0, 113, 10),
        ])
        .collect();
    for _ in 0..20_000 {
        let src = match next() % 4 {
            0 => Src::Pod {
                pod: (next() % (f.pods.len() as u64 + 2)) as usize,
                container: (next() % 3) as usize,
            },
            1 => Src::Node((next() % 6) as usize),
            2 => Src::Outside(Ipv4Addr::from(next() as u32)),
            _ => Src::Pod { pod: 0, container: 0 },
        };
        let dst = if next() % 5 == 0 {
            Ipv4Addr::from(next() as u32)
        } else {
            addresses[(next() % addresses.len() as u64) as usize]
        };
        let port = match next() % 3 {
            0 => (next() % 65536) as u16,
            1 => [80, 90, 8080, 8081, 9000, 4444, 10250][(next() % 7) as usize],
            _ => 30000 + (next() % 3000) as u16,
        };
        let proto = [Tcp, Udp, Icmp][(next() % 3) as usize];
        let v = f.decide(&Flow {
            src,
            dst,
            port,
            proto,
            pick: next(),
        });
        assert!(!v.rule.is_empty() && !v.why.is_empty(), "{v:?}");
        if let Ok(r) = v.result {
            match r.at {
                Endpoint::Pod { pod, .. } => assert!(pod < f.pods.len()),
                Endpoint::Node { node, .. } => assert!(node < f.nodes.len()),
                Endpoint::Outside { host, .. } => assert!(host < f.outside.len()),
            }
        }
    }
}

/// `timing.programmingDelay` (real-cluster lag: each node's kube-proxy programs a new or changed
/// Service after a while, Windows HNS slowest; upstream e2e waits `KubeProxyLagTimeout`): until
/// the node that balances the flow has caught up, the ClusterIP and the NodePort go nowhere
/// there; nodes that caught up forward it, and so does every node once the delay passed.
#[rstest]
#[case::windows_client_still_programming(WIN1, 0, Timeout)]
#[case::linux_client_caught_up(LIN2, 0, Works)]
#[case::windows_client_after_the_delay(WIN1, 3, Works)]
fn a_changed_service_works_on_a_node_once_its_proxy_programmed_it(
    #[case] from: usize,
    #[case] changed_secs_ago: u64,
    #[case] expect: Class,
) {
    let mut f = crowded(Era::Current, 64, 1, false);
    for n in std::sync::Arc::make_mut(&mut f.nodes) {
        n.programming = if n.windows {
            std::time::Duration::from_secs(2)
        } else {
            std::time::Duration::from_millis(200)
        };
    }
    let changed = std::time::Instant::now()
        .checked_sub(std::time::Duration::from_secs(changed_secs_ago))
        .expect("an instant in the past");
    // The Linux node's delay has passed already in every case.
    let changed = if from == LIN2 && changed_secs_ago == 0 {
        changed - std::time::Duration::from_millis(500)
    } else {
        changed
    };
    for s in &mut f.services {
        s.changed_at = Some(changed);
    }
    let v = to_many(&f, from, 0);
    assert_eq!(class(&v), expect, "{v:?}");
    if expect == Timeout {
        assert!(v.why.contains("not programmed"), "{v:?}");
    }
}

/// A Service whose endpoints changed keeps answering through the backends every node had
/// programmed before, while a node's proxy programs the change (a proxy replaces a Service's
/// rules at its next sync; until then the old ones stand): only what is new waits.
#[rstest]
#[case::old_backend_still_answers(true, Works)]
#[case::only_new_backends(false, Timeout)]
fn while_a_change_is_programmed_the_old_backends_answer(#[case] old_kept: bool, #[case] expect: Class) {
    let mut f = crowded(Era::Current, 64, 1, false);
    for n in std::sync::Arc::make_mut(&mut f.nodes) {
        n.programming = std::time::Duration::from_secs(60);
    }
    let svc = f.services.len() - 1;
    let backend = f.services[svc].ports[0].targets[0].0;
    let before: std::collections::BTreeSet<Ipv4Addr> = if old_kept {
        [f.pods[backend].ip].into()
    } else {
        [Ipv4Addr::new(10, 244, 9, 99)].into()
    };
    f.settled.insert(svc, std::sync::Arc::new(vec![before]));
    f.services[svc].changed_at = Some(std::time::Instant::now());
    let v = to_many(&f, WIN1, 0);
    assert_eq!(class(&v), expect, "{v:?}");
}

/// `network.egress: false` (a private cluster behind a firewall that denies, AKS outbound type
/// `userDefinedRouting`: https://learn.microsoft.com/azure/aks/egress-outboundtype): flows to
/// outside addresses from pods and from nodes time out — never a refusal, which would prove a
/// host answered — while flows inside the cluster are untouched.
#[rstest]
#[case::pod_to_outside(From::Pod(WIN1), To::Outside(80), Tcp, Timeout, Works)]
#[case::linux_pod_to_outside(From::Pod(LIN1), To::Outside(443), Tcp, Timeout, Works)]
#[case::closed_outside_port(From::Pod(LIN2), To::Outside(22), Tcp, Timeout, Refused)]
#[case::linux_pod_ping_outside(From::Pod(LIN1), To::Outside(0), Icmp, Timeout, Works)]
#[case::node_to_outside(From::Host(LIN1), To::Outside(80), Tcp, Timeout, Works)]
#[case::windows_node_ping_outside(From::Host(WIN1), To::Outside(0), Icmp, Timeout, Works)]
#[case::pod_to_pod(From::Pod(WIN1), To::Pod(LIN2), Tcp, Works, Works)]
#[case::pod_to_cluster_ip(From::Pod(LIN1), To::Cluster(WIN1), Tcp, Works, Works)]
#[case::outside_to_node_port(From::Outside, To::NodePort { at: WIN2, svc: LIN1 }, Tcp, Works, Works)]
fn without_egress_outside_addresses_time_out(
    #[case] from: From,
    #[case] to: To,
    #[case] proto: Proto,
    #[case] without: Class,
    #[case] with: Class,
) {
    let mut world = World::new(NetworkMode::L2bridge, Era::Current);
    assert_eq!(
        class(&world.build().decide(&flow(&world.build(), from, to, proto))),
        with
    );
    world.egress = false;
    let f = world.build();
    let v = f.decide(&flow(&f, from, to, proto));
    assert_eq!(class(&v), without, "{v:?}");
    if without == Timeout {
        assert!(v.why.contains("no egress"), "{v:?}");
    }
}

/// Without egress the node subnet's resolver (the VNet/VPC DNS) still answers: names resolve,
/// connections to the outside do not.
#[rstest]
#[case::node(From::Host(WIN1))]
#[case::pod(From::Pod(LIN1))]
fn without_egress_the_node_resolver_still_answers(#[case] from: From) {
    let mut world = World::new(NetworkMode::L2bridge, Era::Current);
    world.egress = false;
    let mut f = world.build();
    let resolver = Ipv4Addr::new(10, 240, 0, 1);
    f.outside.push(OutsideHost {
        ip: resolver,
        name: NODE_RESOLVER.into(),
        serves: vec![(53, Proto::Udp, App::Dns)],
    });
    f.index();
    let mut to = flow(&f, from, To::Outside(53), Udp);
    to.dst = resolver;
    assert_eq!(class(&f.decide(&to)), Works);
    assert_eq!(class(&f.decide(&flow(&f, from, To::Outside(80), Tcp))), Timeout);
}

/// A dual-stack world: every pod-network pod gets `fd00:10:244:<node>::<host>` beside its IPv4
/// address (as `crate::network::dualstack` assigns them), svc-N its IPv6 ClusterIP.
fn dual_stack(mode: NetworkMode) -> Fabric {
    let mut f = World::new(mode, Era::Current).build();
    let w: &mut super::Wiring = &mut f;
    for p in w.pods.iter_mut().map(std::sync::Arc::make_mut) {
        let [_, _, n, host] = p.ip.octets();
        let v6: Ipv6Addr = format!("fd00:10:244:{n:x}::{host:x}").parse().expect("ipv6");
        p.ipv6 = Some(v6);
        w.ipv6.insert(v6, p.ip);
    }
    for (i, s) in w.services.iter().enumerate() {
        if let Some(v4) = s.cluster_ip {
            w.ipv6
                .insert(format!("fd00:10:96::{:x}", i + 1).parse().expect("ipv6"), v4);
        }
    }
    f
}

fn v6_of(f: &Fabric, pod: &str) -> Ipv6Addr {
    f.pods
        .iter()
        .find(|p| p.name == pod)
        .and_then(|p| p.ipv6)
        .expect("the pod has an IPv6 address")
}

/// IPv6 flows on a dual-stack cluster (K8SDS): on l2bridge every pair gets through, as the same
/// pod's IPv4 flow does (W22, WNET: dual-stack for Windows on l2bridge); on overlay a Windows pod's
/// IPv6 traffic is dropped (WNET: "IPv6 communication between Windows pods connected to overlay
/// networks" unsupported) while Linux pods still talk IPv6.
#[rstest]
#[case::l2bridge_win_win(NetworkMode::L2bridge, WIN1, WIN2, None)]
#[case::l2bridge_lin_win(NetworkMode::L2bridge, LIN1, WIN2, None)]
#[case::l2bridge_win_lin(NetworkMode::L2bridge, WIN2, LIN2, None)]
#[case::overlay_lin_lin(NetworkMode::Overlay, LIN1, LIN2, None)]
#[case::overlay_win_win(NetworkMode::Overlay, WIN1, WIN2, Some("NET-IPV6-OVERLAY"))]
#[case::overlay_lin_win(NetworkMode::Overlay, LIN1, WIN1, Some("NET-IPV6-OVERLAY"))]
fn ipv6_pod_to_pod(#[case] mode: NetworkMode, #[case] from: usize, #[case] to: usize, #[case] dropped: Option<&str>) {
    let f = dual_stack(mode);
    let src = f.source_of(f.pod_index("default", &format!("cli-{from}")).expect("client"), 0);
    let dst = v6_of(&f, &format!("srv-{to}"));
    match (f.ipv6_route(src, dst), dropped) {
        (Ok(v4), None) => {
            let d = f.decide(&Flow {
                src,
                dst: v4,
                port: 8080,
                proto: Proto::Tcp,
                pick: 0,
            });
            assert!(d.delivered(), "{d:?}");
            assert_eq!(v4, pod_ip(to, 10));
        }
        (Err(d), Some(rule)) => {
            assert_eq!(d.rule, rule);
            assert_eq!(d.result, Err(Failure::Timeout));
        }
        (got, want) => panic!("{got:?}, expected dropped by {want:?}"),
    }
}

/// A source without an IPv6 address (a host-network pod, any pod of a single-stack cluster) has
/// no IPv6 route: "Network is unreachable", as the OS says; an IPv6 address nobody holds times out.
#[test]
fn ipv6_without_a_route_or_a_holder() {
    let single = World::new(NetworkMode::L2bridge, Era::Current).build();
    let cli = single.source_of(single.pod_index("default", "cli-0").expect("client"), 0);
    let v6: Ipv6Addr = "fd00:10:244:1::a".parse().expect("ipv6");
    let unreachable = single
        .ipv6_route(cli, v6)
        .expect_err("no IPv6 on a single-stack cluster");
    assert_eq!(unreachable.result, Err(Failure::Other("Network is unreachable".into())));
    let f = dual_stack(NetworkMode::L2bridge);
    let host = f
        .ipv6_route(Src::Node(LIN1), v6_of(&f, "srv-1"))
        .expect_err("host network");
    assert_eq!(host.result, Err(Failure::Other("Network is unreachable".into())));
    let cli = f.source_of(f.pod_index("default", "cli-0").expect("client"), 0);
    let nobody = f
        .ipv6_route(cli, "fd00:10:244:9::9".parse().expect("ipv6"))
        .expect_err("nobody");
    assert_eq!(nobody.result, Err(Failure::Timeout));
    // A Service's IPv6 ClusterIP leads to its IPv4 one.
    let svc = f
        .ipv6_route(cli, "fd00:10:96::1".parse().expect("ipv6"))
        .expect("service");
    assert_eq!(Some(svc), f.services[0].cluster_ip);
}
