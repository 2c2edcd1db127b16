//! Network benchmark: a 1,000-node topology (half Windows Server 2022, half Linux) with 10,000
//! running netexec pods and 1,000 NodePort services of 10 backends each. Measures how long a
//! fabric snapshot takes to build from the store, fabric decisions per second over a mix of
//! flows (pod→pod, pod→ClusterIP, host→ClusterIP, node/outside→NodePort, pod→outside, ICMP),
//! and DNS lookups per second (the resolver alone, and a pod's full lookup through the fabric).
//!
//! Run: `cargo run --release -p simcluster --example network [-- --nodes N --pods N --lookups N]`

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use simcluster::Topology;
use simcluster::internals::CommandContext;
use simcluster::internals::apps::SimNet;
use simcluster::internals::dns::{self, Records};
use simcluster::internals::fabric::{Flow, NetFacts, Proto, Src};
use simcluster::internals::resources as registry;
use simcluster::internals::snapshot as netstate;
use simcluster::internals::wire::Wire;
use simcluster::internals::{Part, Store};
use simcluster::profiles;

mod support;
use support::arg;

fn topology(nodes: usize) -> Result<Topology, String> {
    let half = nodes / 2;
    let yaml = format!(
        "name: bench\nkubernetesVersion: v1.32.3\nnodes:\n\
         - {{name: linux, os: linux, count: {}}}\n\
         - {{name: win, os: windows, kernelVersion: 10.0.20348.2762, count: {half}}}\n",
        nodes - half
    );
    Topology::parse(&yaml, "<bench topology>").map_err(|e| e.to_string())
}

fn per_second(n: usize, secs: f64) -> String {
    let rate = n as f64 / secs.max(1e-9);
    if rate >= 1e6 {
        format!("{:.2} M/s", rate / 1e6)
    } else {
        format!("{:.0} k/s", rate / 1e3)
    }
}

fn main() -> Result<(), String> {
    let nodes = arg("--nodes", 1000)?;
    let pod_count = arg("--pods", 10_000)?;
    let lookups = arg("--lookups", 1_000_000)?;
    let topo = topology(nodes)?;
    let ips: Vec<Ipv4Addr> = (0..topo.nodes.len())
        .map(|i| Ipv4Addr::new(127, 50, (i / 200) as u8, 10 + (i % 200) as u8))
        .collect();
    let profiles = Arc::new(profiles(&topo, &ips));
    let store = Arc::new(Store::default());
    let err = |e: simcluster::internals::ApiError| e.to_string();
    store
        .create(registry::core("namespaces"), "", json!({"metadata": {"name": "bench"}}))
        .map_err(err)?;
    store
        .create(
            registry::core("namespaces"),
            "",
            json!({"metadata": {"name": "kube-system"}}),
        )
        .map_err(err)?;
    store
        .create(
            registry::core("services"),
            "kube-system",
            json!({"metadata": {"name": "kube-dns"}, "spec": {"clusterIP": "10.96.0.10", "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]}}),
        )
        .map_err(err)?;
    // CoreDNS behind kube-dns, as the add-ons run it: two pods on the first Linux nodes.
    let mut dns_addresses = Vec::new();
    for (i, node) in profiles.iter().filter(|p| !p.is_windows()).take(2).enumerate() {
        let name = format!("coredns-{i}");
        let ip = format!("{}250", node.pod_cidr.trim_end_matches("0/24"));
        store
            .create(
                registry::core("pods"),
                "kube-system",
                json!({"metadata": {"name": name, "labels": {"k8s-app": "kube-dns"}},
                    "spec": {"nodeName": node.name, "containers": [{"name": "coredns",
                        "image": "registry.k8s.io/coredns/coredns:v1.11.3"}]}}),
            )
            .map_err(err)?;
        store
            .modify(registry::core("pods"), "kube-system", &name, Part::Status, |p| {
                p["status"] = json!({"phase": "Running", "podIP": ip,
                    "containerStatuses": [{"name": "coredns", "ready": true, "state": {"running": {}}}]});
                Ok(())
            })
            .map_err(err)?;
        dns_addresses.push(json!({"ip": ip, "nodeName": node.name, "targetRef": {"kind": "Pod", "name": name}}));
    }
    store
        .create(
            registry::core("endpoints"),
            "kube-system",
            json!({"metadata": {"name": "kube-dns"}, "subsets": [{"addresses": dns_addresses,
                "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]}]}),
        )
        .map_err(err)?;
    let started = Instant::now();
    let pod_ip = |i: usize| {
        let node = i % nodes;
        let host = 2 + i / nodes;
        format!("10.{}.{}.{}", 244 + node / 256, node % 256, host)
    };
    for i in 0..pod_count {
        let node = &profiles[i % nodes];
        store
            .create(
                registry::core("pods"),
                "bench",
                json!({"metadata": {"name": format!("p{i}"), "labels": {"svc": format!("s{}", i / 10)}},
                    "spec": {"nodeName": node.name, "containers": [{"name": "c",
                        "image": "registry.k8s.io/e2e-test-images/agnhost:2.52", "args": ["netexec"]}]}}),
            )
            .map_err(err)?;
        store
            .modify(registry::core("pods"), "bench", &format!("p{i}"), Part::Status, |p| {
                p["status"] = json!({"phase": "Running", "podIP": pod_ip(i),
                    "containerStatuses": [{"name": "c", "ready": true, "state": {"running": {}}}]});
                Ok(())
            })
            .map_err(err)?;
    }
    let services = pod_count / 10;
    for s in 0..services {
        let addresses: Vec<_> = (s * 10..s * 10 + 10)
            .map(|i| json!({"ip": pod_ip(i), "nodeName": profiles[i % nodes].name, "targetRef": {"kind": "Pod", "name": format!("p{i}")}}))
            .collect();
        store
            .create(
                registry::core("services"),
                "bench",
                json!({"metadata": {"name": format!("s{s}")}, "spec": {"type": "NodePort",
                    "clusterIP": format!("10.97.{}.{}", s / 250, 1 + s % 250),
                    "ports": [{"port": 80, "targetPort": 8080, "nodePort": 30000 + s}]}}),
            )
            .map_err(err)?;
        store
            .create(
                registry::core("endpoints"),
                "bench",
                json!({"metadata": {"name": format!("s{s}")}, "subsets": [{"addresses": addresses, "ports": [{"port": 8080}]}]}),
            )
            .map_err(err)?;
    }
    println!(
        "cluster: {nodes} nodes, {pod_count} running pods, {services} NodePort services (10 backends each), stored in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Snapshot build (what every exec'd network command and every listener request pays).
    let net = NetFacts::from_topology(&topo);
    let node_facts = std::sync::Arc::new(netstate::node_facts(&profiles));
    let build = |cache: &mut netstate::PodCache| {
        let running = netstate::running_pods(&store, &profiles, cache);
        netstate::fabric(&store, &profiles, (&node_facts, &net), running, cache)
    };
    let mut times = Vec::new();
    let mut fabric = None;
    for _ in 0..5 {
        let t = Instant::now();
        fabric = Some(build(&mut Default::default()));
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    println!("snapshot: median {:.1} ms to build the fabric from the store", times[2]);
    // What a rebuild after a change costs: the pods read before come from the cache.
    let mut cache = netstate::PodCache::default();
    drop(build(&mut cache));
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        fabric = Some(build(&mut cache));
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let fabric = fabric.ok_or("no fabric")?;
    println!(
        "snapshot: median {:.1} ms to rebuild it with the pods read before",
        times[2]
    );
    // The pods the fabric holds: those given an address in their node's /24 (past 253 per node,
    // or past the 256th node's range, a pod gets none and is not running).
    let pod_count = fabric.pods.len();
    if pod_count == 0 {
        return Err("no pod has an address: fewer pods per node, or fewer nodes".into());
    }

    // Fabric decisions over a mix of flows.
    let decisions = lookups;
    let outside = Ipv4Addr::new(203, 0, 113, 10);
    let t = Instant::now();
    let mut delivered = 0usize;
    for i in 0..decisions {
        let pod = i % pod_count;
        let other = (i * 7919) % pod_count;
        let svc = i % services;
        let node = i % nodes;
        let (src, dst, port, proto) = match i % 8 {
            0 => (Src::Pod { pod, container: 0 }, fabric.pods[other].ip, 8080, Proto::Tcp),
            1 => (Src::Pod { pod, container: 0 }, fabric.pods[other].ip, 8081, Proto::Udp),
            2 => (
                Src::Pod { pod, container: 0 },
                Ipv4Addr::new(10, 97, (svc / 250) as u8, 1 + (svc % 250) as u8),
                80,
                Proto::Tcp,
            ),
            3 => (
                Src::Node(node),
                Ipv4Addr::new(10, 97, (svc / 250) as u8, 1 + (svc % 250) as u8),
                80,
                Proto::Tcp,
            ),
            4 => (Src::Node(node), ips[(node + 1) % nodes], 30000 + svc as u16, Proto::Tcp),
            5 => (
                Src::Outside(Ipv4Addr::new(192, 0, 2, 1)),
                ips[node],
                30000 + svc as u16,
                Proto::Tcp,
            ),
            6 => (Src::Pod { pod, container: 0 }, outside, 443, Proto::Tcp),
            _ => (Src::Pod { pod, container: 0 }, fabric.pods[other].ip, 0, Proto::Icmp),
        };
        let v = fabric.decide(&Flow {
            src,
            dst,
            port,
            proto,
            pick: i as u64,
        });
        delivered += usize::from(v.delivered());
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "fabric: {decisions} decisions in {secs:.2} s = {} ({delivered} delivered)",
        per_second(decisions, secs)
    );

    // DNS: the resolver alone, over service names in Linux and Windows styles.
    let t = Instant::now();
    let records = Records::from_store(&store);
    println!("dns: records built in {:.1} ms", t.elapsed().as_secs_f64() * 1000.0);
    let obj = |name: &str| store.get(registry::core("pods"), "bench", name).map_err(err);
    let linux_ctx = CommandContext::new(store.clone(), &profiles, obj("p0")?, "c");
    let windows_ctx = CommandContext::new(store.clone(), &profiles, obj(&format!("p{}", nodes - 1))?, "c");
    let (linux, windows) = (linux_ctx.dns(), windows_ctx.dns());
    let t = Instant::now();
    let mut found = 0usize;
    for i in 0..lookups {
        let svc = i % services;
        let name = match i % 4 {
            0 => format!("s{svc}"),
            1 => format!("s{svc}.bench"),
            2 => format!("s{svc}.bench.svc.cluster.local"),
            _ => "example.com".to_string(),
        };
        let config = if i % 2 == 0 { &linux } else { &windows };
        if matches!(
            dns::resolve(&records, &name, config, i % 2 == 1),
            dns::Resolution::Resolved { .. }
        ) {
            found += 1;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "dns: {lookups} resolver lookups in {secs:.2} s = {} ({found} found)",
        per_second(lookups, secs)
    );

    // A pod's lookup through the fabric (UDP to kube-dns, then the resolver).
    let simnet = Arc::new(SimNet::new(store.clone(), profiles.clone(), net));
    let client = simnet
        .client_for(&windows_ctx.pod, &windows_ctx.container, windows_ctx.dns(), true)
        .ok_or("no client")?;
    let full = lookups / 10;
    let t = Instant::now();
    let mut answered = 0usize;
    for i in 0..full {
        if matches!(
            client.resolve(&format!("s{}", i % services), None),
            simcluster::internals::wire::Lookup::Found { .. }
        ) {
            answered += 1;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "dns: {full} lookups from a Windows pod through the fabric in {secs:.2} s = {} ({answered} found)",
        per_second(full, secs)
    );
    Ok(())
}
