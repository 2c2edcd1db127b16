//! Network node faults end to end: a bundled cluster with one fault on one Windows node, agnhost
//! `netexec` servers and `pause` clients on the faulted node, on the other Windows node and on
//! linux-1, a HostProcess pod on the faulted node, a ClusterIP service in front of the faulted
//! node's server and a NodePort service in front of the Linux one. Commands exec'd through
//! kube-rs in those pods (curl, curl.exe, agnhost connect, nslookup, ping, Test-NetConnection)
//! show each fault's documented symptom (`faults.rs`) — and that the flows it must not touch
//! still work. Without the fault, every command that shows a symptom succeeds. The real NodePort
//! listener of a node whose kube-proxy is stopped stays silent while other nodes answer.

use crate::common;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use kube::Client;
use kube::api::{Api, AttachParams, PostParams};
use rstest::rstest;
use serde_json::json;
use simcluster::NetworkMode;
use simcluster::faults::Fault;
use simcluster::{Cluster, Topology};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const NS: &str = "netfaults";
const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.52";
const HOST_PROCESS_IMAGE: &str = "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0";
/// Windows Server 2022, containerd 1.7, l2bridge.
const WIN2022: &str = "win2022-1";
/// Windows Server 2019, containerd 1.7, l2bridge.
const WIN2019: &str = "win2019-1";
const LINUX: &str = "linux-1";

/// A command that must show the symptom: the pod it runs in (`srv-f`, `cli-f` and `host-f` on
/// the faulted node, `srv-h` and `cli-h` on the other Windows node, `srv-l` and `cli-l` on
/// linux-1), its command line (whitespace separated, `{name}` placeholders: pod names for pod
/// IPs, `svc-f`/`svc-l` for ClusterIPs, `node-f`/`node-h`/`node-l` for node IPs, `np` for the
/// NodePort of `svc-l`), the exit code and a text its stdout or stderr contains.
type Fails = &'static [(&'static str, &'static str, i32, &'static str)];
/// A command the fault must not touch: pod, command line, and a text its stdout contains (exit 0).
type Works = &'static [(&'static str, &'static str, &'static str)];

const CURL_TIMEOUT: &str = "Timeout was reached";
const WIN_DNS_TIMEOUT: &str = "DNS request timed out.";

const MAC_SPOOFING_FAILS: Fails = &[
    // Cross-node pods, Linux and Windows, and the way back in.
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://{srv-l}:8080/hostname",
        28,
        CURL_TIMEOUT,
    ),
    ("cli-f", "agnhost connect {srv-h}:8080 --timeout=5s", 1, "TIMEOUT"),
    (
        "cli-f",
        "agnhost connect {srv-l}:8081 --protocol=udp",
        1,
        "TIMEOUT: read udp",
    ),
    ("cli-f", "ping -n 1 {srv-l}", 1, "Lost = 1 (100% loss)"),
    (
        "cli-l",
        "curl -sS --connect-timeout 5 http://{srv-f}:8080/hostname",
        28,
        CURL_TIMEOUT,
    ),
    // A service whose backend is on another node, the cluster DNS among them.
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://{svc-l}/hostname",
        28,
        CURL_TIMEOUT,
    ),
    ("cli-f", "nslookup svc-l", 1, WIN_DNS_TIMEOUT),
    // Outside.
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://203.0.113.10/",
        28,
        CURL_TIMEOUT,
    ),
];
const MAC_SPOOFING_WORKS: Works = &[
    // Pods on the same node, directly and through a service with a local backend.
    ("cli-f", "curl.exe -s http://{srv-f}:8080/hostname", "srv-f"),
    ("cli-f", "curl.exe -s http://{svc-f}/hostname", "srv-f"),
    ("cli-f", "ping -n 1 {srv-f}", "Received = 1"),
    // The host's own traffic.
    ("host-f", "curl.exe -s http://{srv-l}:8080/hostname", "srv-l"),
    (
        "host-f",
        "curl.exe -s http://203.0.113.10/",
        "<title>example.com</title>",
    ),
    // The other nodes.
    ("cli-l", "curl -s http://{srv-h}:8080/hostname", "srv-h"),
    ("cli-h", "nslookup svc-l", "{svc-l}"),
];

/// On l2bridge the faulted node's pod traffic to other nodes is SNATed to the node's address:
/// it arrives, but the backend sees the node IP instead of the client pod's.
const EXCEPTIONLIST_MISSING_CLUSTER_FAILS: Fails = &[
    ("cli-f", "curl.exe -s http://{srv-l}:8080/clientip", 0, "{node-f}:"),
    ("cli-f", "curl.exe -s http://{srv-h}:8080/clientip", 0, "{node-f}:"),
    ("cli-f", "curl.exe -s http://{svc-l}/clientip", 0, "{node-f}:"),
];
const EXCEPTIONLIST_MISSING_CLUSTER_WORKS: Works = &[
    // Same-node traffic keeps the pod's address; so does everyone else's.
    ("cli-f", "curl.exe -s http://{srv-f}:8080/clientip", "{cli-f}:"),
    ("cli-h", "curl.exe -s http://{srv-l}:8080/clientip", "{cli-h}:"),
    ("cli-f", "nslookup svc-l", "Address"),
    (
        "cli-f",
        "curl.exe -s http://203.0.113.10/",
        "<title>example.com</title>",
    ),
    ("cli-f", "curl.exe -s http://{srv-f}:8080/hostname", "srv-f"),
    ("cli-f", "curl.exe -s http://{svc-f}/hostname", "srv-f"),
    // Only traffic leaving the faulted node's pods is SNATed: the way in works.
    ("cli-l", "curl -s http://{srv-f}:8080/hostname", "srv-f"),
    ("cli-h", "curl.exe -s http://{svc-f}/hostname", "srv-f"),
    ("host-f", "curl.exe -s http://{srv-l}:8080/hostname", "srv-l"),
];

const EXCEPTIONLIST_COVERS_OUTSIDE_FAILS: Fails = &[
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://203.0.113.10/",
        28,
        CURL_TIMEOUT,
    ),
    ("cli-f", "agnhost connect 203.0.113.10:443 --timeout=5s", 1, "TIMEOUT"),
    // The name resolves (cluster DNS), the connection times out.
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://example.com/",
        28,
        "Failed to connect to example.com port 80",
    ),
    // UDP to an outside resolver.
    ("cli-f", "nslookup example.com 8.8.8.8", 1, WIN_DNS_TIMEOUT),
];
const EXCEPTIONLIST_COVERS_OUTSIDE_WORKS: Works = &[
    ("cli-f", "nslookup example.com", "203.0.113.10"),
    ("cli-f", "curl.exe -s http://{srv-l}:8080/hostname", "srv-l"),
    ("cli-f", "curl.exe -s http://{svc-l}/hostname", "srv-l"),
    ("cli-f", "agnhost connect {srv-h}:8080 --timeout=5s", ""),
    ("cli-l", "curl -s http://{srv-f}:8080/hostname", "srv-f"),
    (
        "host-f",
        "curl.exe -s http://203.0.113.10/",
        "<title>example.com</title>",
    ),
    ("cli-h", "curl.exe -s http://example.com/", "<title>example.com</title>"),
];

const KUBE_PROXY_NO_HOSTNAME_OVERRIDE_FAILS: Fails = &[
    // The node's pods lose all connectivity, even to each other.
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://{srv-f}:8080/hostname",
        28,
        CURL_TIMEOUT,
    ),
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://{srv-l}:8080/hostname",
        28,
        CURL_TIMEOUT,
    ),
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://203.0.113.10/",
        28,
        CURL_TIMEOUT,
    ),
    ("cli-f", "nslookup svc-l", 1, WIN_DNS_TIMEOUT),
    (
        "cli-l",
        "curl -sS --connect-timeout 5 http://{srv-f}:8080/hostname",
        28,
        CURL_TIMEOUT,
    ),
    (
        "cli-l",
        "nc -vz -w 5 {srv-f} 8080",
        1,
        "nc: {srv-f} ({srv-f}:8080): Connection timed out",
    ),
    // Service flows through its endpoints break.
    ("cli-l", "/agnhost connect {svc-f}:80 --timeout=5s", 1, "TIMEOUT"),
    (
        "cli-h",
        "curl.exe -sS --connect-timeout 5 http://{svc-f}/hostname",
        28,
        CURL_TIMEOUT,
    ),
];
const KUBE_PROXY_NO_HOSTNAME_OVERRIDE_WORKS: Works = &[
    ("cli-l", "curl -s http://{srv-h}:8080/hostname", "srv-h"),
    ("cli-l", "nc -vz -w 5 {srv-h} 8080", ""),
    ("cli-h", "curl.exe -s http://{svc-l}/hostname", "srv-l"),
    ("host-f", "curl.exe -s http://{srv-l}:8080/hostname", "srv-l"),
    // Its kube-proxy still forwards NodePorts to backends elsewhere.
    ("cli-l", "curl -s http://{node-f}:{np}/hostname", "srv-l"),
];

const KUBE_PROXY_STOPPED_FAILS: Fails = &[
    // ClusterIPs from the node's pods: remote and local backends, and the cluster DNS.
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://{svc-l}/hostname",
        28,
        CURL_TIMEOUT,
    ),
    ("cli-f", "agnhost connect {svc-f}:80 --timeout=5s", 1, "TIMEOUT"),
    ("cli-f", "nslookup svc-l", 1, WIN_DNS_TIMEOUT),
    // NodePorts on the node, from either OS.
    (
        "cli-l",
        "curl -sS --connect-timeout 5 http://{node-f}:{np}/hostname",
        28,
        CURL_TIMEOUT,
    ),
    ("cli-h", "agnhost connect {node-f}:{np} --timeout=5s", 1, "TIMEOUT"),
];
const KUBE_PROXY_STOPPED_WORKS: Works = &[
    ("cli-f", "curl.exe -s http://{srv-l}:8080/hostname", "srv-l"),
    ("cli-f", "agnhost connect {srv-l}:8081 --protocol=udp", ""),
    (
        "host-f",
        "powershell -Command Test-NetConnection {srv-l} -Port 8080 -InformationLevel Quiet",
        "True",
    ),
    ("cli-f", "curl.exe -s http://{srv-h}:8080/hostname", "srv-h"),
    (
        "cli-f",
        "curl.exe -s http://203.0.113.10/",
        "<title>example.com</title>",
    ),
    // Other nodes balance to the faulted node's pods, and forward their own NodePorts.
    ("cli-l", "curl -s http://{svc-f}/hostname", "srv-f"),
    ("cli-l", "curl -s http://{node-h}:{np}/hostname", "srv-l"),
    ("cli-h", "curl.exe -s http://{node-l}:{np}/hostname", "srv-l"),
    ("cli-l", "nslookup svc-f", "{svc-f}"),
];

const DNS_UNREACHABLE_FAILS: Fails = &[
    ("cli-f", "nslookup svc-l", 1, WIN_DNS_TIMEOUT),
    ("cli-f", "nslookup example.com", 1, WIN_DNS_TIMEOUT),
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://svc-l/hostname",
        28,
        "Resolving timed out after 5000 milliseconds",
    ),
    // agnhost on Windows resolves through GetAddrInfoW.
    (
        "cli-f",
        "agnhost connect svc-l:80 --timeout=5s",
        1,
        "DNS: lookup svc-l: getaddrinfow: This is usually a temporary error during hostname resolution",
    ),
    (
        "cli-f",
        "nslookup kubernetes.default.svc.cluster.local",
        1,
        WIN_DNS_TIMEOUT,
    ),
];
const DNS_UNREACHABLE_WORKS: Works = &[
    // Connections by IP.
    ("cli-f", "curl.exe -s http://{svc-l}/hostname", "srv-l"),
    ("cli-f", "curl.exe -s http://{srv-l}:8080/hostname", "srv-l"),
    (
        "cli-f",
        "curl.exe -s http://203.0.113.10/",
        "<title>example.com</title>",
    ),
    // Lookups from the other nodes' pods.
    ("cli-h", "nslookup svc-l", "{svc-l}"),
    ("cli-l", "nslookup svc-f", "{svc-f}"),
    ("cli-l", "curl -s http://svc-f/hostname", "srv-f"),
    // The host uses the node's own resolver, not the cluster DNS.
    ("host-f", "nslookup example.com", "203.0.113.10"),
];

const PORT_EXHAUSTION_FAILS: Fails = &[
    // Outbound NAT has no port left for the pods' outside connections: they time out.
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://203.0.113.10/",
        28,
        CURL_TIMEOUT,
    ),
    ("cli-f", "agnhost connect 203.0.113.10:443 --timeout=5s", 1, "TIMEOUT"),
    // The host cannot open any connection (WSAENOBUFS), in-cluster ones included.
    (
        "host-f",
        "curl.exe -sS --connect-timeout 5 http://203.0.113.10/",
        7,
        "Couldn't connect to server",
    ),
    (
        "host-f",
        "curl.exe -sS --connect-timeout 5 http://{srv-l}:8080/hostname",
        7,
        "Couldn't connect to server",
    ),
    (
        "host-f",
        "powershell -Command Test-NetConnection 203.0.113.10 -Port 443 -InformationLevel Quiet",
        0,
        "WARNING: TCP connect to (203.0.113.10 : 443) failed",
    ),
];
const PORT_EXHAUSTION_WORKS: Works = &[
    ("cli-f", "curl.exe -s http://{srv-l}:8080/hostname", "srv-l"),
    ("cli-f", "curl.exe -s http://{svc-l}/hostname", "srv-l"),
    ("cli-f", "agnhost connect {srv-h}:8080 --timeout=5s", ""),
    ("cli-f", "nslookup example.com", "203.0.113.10"),
    // ICMP needs no ephemeral port.
    ("host-f", "ping -n 1 203.0.113.10", "Received = 1"),
    (
        "cli-h",
        "curl.exe -s http://203.0.113.10/",
        "<title>example.com</title>",
    ),
    ("cli-l", "curl -s http://example.com/", "<title>example.com</title>"),
];

/// Overlay only: kube-proxy has no source VIP endpoint after the node re-joined.
const FLANNEL_REJOIN_FAILS: Fails = &[
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://{svc-l}/hostname",
        28,
        CURL_TIMEOUT,
    ),
    (
        "cli-l",
        "curl -sS --connect-timeout 5 http://{node-f}:{np}/hostname",
        28,
        CURL_TIMEOUT,
    ),
    // The cluster DNS is a service too.
    ("cli-f", "nslookup svc-l", 1, WIN_DNS_TIMEOUT),
];
const FLANNEL_REJOIN_WORKS: Works = &[
    ("cli-f", "curl.exe -s http://{srv-l}:8080/hostname", "srv-l"),
    ("cli-l", "curl -s http://{svc-f}/hostname", "srv-f"),
    ("cli-l", "curl -s http://{node-h}:{np}/hostname", "srv-l"),
    ("cli-h", "curl.exe -s http://{svc-l}/hostname", "srv-l"),
];

/// Overlay only: the node's VXLAN VNI/port differ from the other nodes'.
const VXLAN_MISMATCH_FAILS: Fails = &[
    (
        "cli-f",
        "curl.exe -sS --connect-timeout 5 http://{srv-l}:8080/hostname",
        28,
        CURL_TIMEOUT,
    ),
    ("cli-l", "agnhost connect {srv-f}:8080 --timeout=5s", 1, "TIMEOUT"),
    ("cli-h", "ping -n 1 {srv-f}", 1, "Request timed out."),
];
const VXLAN_MISMATCH_WORKS: Works = &[
    ("cli-f", "curl.exe -s http://{srv-f}:8080/hostname", "srv-f"),
    ("cli-h", "curl.exe -s http://{srv-l}:8080/hostname", "srv-l"),
    ("cli-l", "curl -s http://{node-f}:{np}/hostname", "srv-l"),
];

/// Every case of the table, for the check without faults.
const CASES: &[(&str, &str, Fails)] = &[
    ("mac-spoofing-disabled", WIN2022, MAC_SPOOFING_FAILS),
    (
        "exceptionlist-missing-cluster",
        WIN2022,
        EXCEPTIONLIST_MISSING_CLUSTER_FAILS,
    ),
    (
        "exceptionlist-covers-outside",
        WIN2022,
        EXCEPTIONLIST_COVERS_OUTSIDE_FAILS,
    ),
    (
        "kube-proxy-no-hostname-override",
        WIN2019,
        KUBE_PROXY_NO_HOSTNAME_OVERRIDE_FAILS,
    ),
    ("kube-proxy-stopped", WIN2022, KUBE_PROXY_STOPPED_FAILS),
    ("dns-unreachable", WIN2019, DNS_UNREACHABLE_FAILS),
    ("port-exhaustion", WIN2022, PORT_EXHAUSTION_FAILS),
    ("flannel-rejoin-stale-sourcevip", WIN2022, FLANNEL_REJOIN_FAILS),
    ("vxlan-params-mismatch", WIN2022, VXLAN_MISMATCH_FAILS),
];

/// The network mode a fault's bed runs in: the first mode the fault exists in.
fn mode_for(fault: Option<&str>) -> NetworkMode {
    fault
        .and_then(Fault::parse)
        .and_then(Fault::modes)
        .and_then(|m| m.first().copied())
        .unwrap_or(NetworkMode::L2bridge)
}

/// The default topology with `fault` (if any) on `node`, its timings at a tenth.
async fn cluster_with(fault: Option<&str>, node: &str, mode: NetworkMode) -> (Cluster, Client) {
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    topology.timing.scale = 0.1;
    topology.network.mode = mode;
    if let Some(fault) = fault {
        let n = topology
            .nodes
            .iter_mut()
            .find(|n| n.name == node)
            .expect("the faulted node is in the default topology");
        n.faults.push(fault.into());
    }
    common::cluster_and_client(topology, NS).await
}

use common::pod;

/// An agnhost pod running `args` on `node` (Windows pods select Windows and tolerate its taint).
fn agnhost(name: &str, node: &str, args: &[&str]) -> Pod {
    let mut spec = json!({"nodeName": node,
        "containers": [{"name": "agnhost", "image": AGNHOST, "args": args}]});
    if node != LINUX {
        spec["nodeSelector"] = json!({"kubernetes.io/os": "windows"});
        spec["tolerations"] = json!([{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}]);
    }
    pod(name, spec)
}

/// A HostProcess pod on `node`.
fn host_process(name: &str, node: &str) -> Pod {
    pod(
        name,
        json!({"nodeName": node, "hostNetwork": true,
            "nodeSelector": {"kubernetes.io/os": "windows"},
            "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}],
            "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
            "containers": [{"name": "host", "image": HOST_PROCESS_IMAGE,
                "command": ["powershell", "-Command", "Start-Sleep -Seconds 2147483"]}]}),
    )
}

fn service(name: &str, backend: &str, node_port: bool) -> Service {
    let kind = if node_port { "NodePort" } else { "ClusterIP" };
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"type": kind,
        "selector": {"app": backend}, "ports": [{"port": 80, "targetPort": 8080}]}}))
    .expect("service")
}

/// The running test bed: the pods by role and the addresses the commands use.
struct Bed {
    _cluster: Cluster,
    pods: Api<Pod>,
    vars: HashMap<String, String>,
}

impl Bed {
    /// `text` with its `{name}` placeholders filled in.
    fn fill(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (name, value) in &self.vars {
            out = out.replace(&format!("{{{name}}}"), value);
        }
        assert!(!out.contains('{'), "unknown placeholder in {text:?}");
        out
    }

    /// Runs a command line in `pod`: (exit code, stdout, stderr).
    async fn run(&self, pod: &str, line: &str) -> (i32, String, String) {
        let argv: Vec<String> = self.fill(line).split_whitespace().map(str::to_string).collect();
        exec(&self.pods, pod, argv).await
    }
}

/// Execs `argv` in `pod` through kube-rs: (exit code, stdout, stderr).
async fn exec(pods: &Api<Pod>, pod: &str, argv: Vec<String>) -> (i32, String, String) {
    let mut proc = pods
        .exec(pod, argv.clone(), &AttachParams::default())
        .await
        .expect("exec");
    let mut stdout = proc.stdout().expect("stdout");
    let mut stderr = proc.stderr().expect("stderr");
    let status = proc.take_status().expect("status");
    let (mut out, mut err) = (String::new(), String::new());
    let (o, e, status) = tokio::join!(stdout.read_to_string(&mut out), stderr.read_to_string(&mut err), status);
    o.expect("read stdout");
    e.expect("read stderr");
    let status = status.expect("an exec status");
    let code = if status.status.as_deref() == Some("Success") {
        0
    } else {
        let cause = status
            .details
            .and_then(|d| d.causes)
            .and_then(|c| c.into_iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
            .and_then(|c| c.message);
        match cause.and_then(|m| m.parse().ok()) {
            Some(code) => code,
            None => panic!("{pod} {argv:?}: no exit code in {:?} (stderr {err:?})", status.message),
        }
    };
    (code, out, err)
}

/// Starts the cluster with `fault` on `faulted` and the test bed: servers, clients, the
/// HostProcess pod, the services; returns once every pod runs and both services have their
/// backend.
async fn bed(fault: Option<&str>, faulted: &str, mode: NetworkMode) -> Bed {
    let other = if faulted == WIN2022 { WIN2019 } else { WIN2022 };
    let (cluster, client) = cluster_with(fault, faulted, mode).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let pp = PostParams::default();
    let netexec = ["netexec", "--http-port=8080", "--udp-port=8081"];
    let specs = [
        agnhost("srv-f", faulted, &netexec),
        agnhost("srv-h", other, &netexec),
        agnhost("srv-l", LINUX, &netexec),
        agnhost("cli-f", faulted, &["pause"]),
        agnhost("cli-h", other, &["pause"]),
        agnhost("cli-l", LINUX, &["pause"]),
        host_process("host-f", faulted),
    ];
    for p in &specs {
        pods.create(&pp, p).await.expect("pod");
    }
    let services: Api<Service> = Api::namespaced(client.clone(), NS);
    services
        .create(&pp, &service("svc-f", "srv-f", false))
        .await
        .expect("svc-f");
    let svc_l = services
        .create(&pp, &service("svc-l", "srv-l", true))
        .await
        .expect("svc-l");
    let mut vars = HashMap::new();
    for p in &specs {
        let name = p.metadata.name.clone().unwrap_or_default();
        let running = common::eventually(&format!("{name} Running with an IP"), || async {
            let p = pods.get(&name).await.ok()?;
            let status = p.status?;
            (status.phase.as_deref() == Some("Running")).then_some(status.pod_ip)?
        })
        .await;
        vars.insert(name, running);
    }
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), NS);
    for name in ["svc-f", "svc-l"] {
        common::eventually(&format!("a ready backend of {name}"), || async {
            let e = endpoints.get(name).await.ok()?;
            let ready = e
                .subsets?
                .into_iter()
                .flat_map(|s| s.addresses.unwrap_or_default())
                .count();
            (ready == 1).then_some(())
        })
        .await;
        let svc = services.get(name).await.expect("service");
        let ip = svc.spec.and_then(|s| s.cluster_ip).expect("cluster IP");
        vars.insert(name.to_string(), ip);
    }
    let np = svc_l
        .spec
        .and_then(|s| s.ports)
        .and_then(|p| p.first().and_then(|p| p.node_port))
        .expect("node port");
    vars.insert("np".into(), np.to_string());
    for (node, ip) in cluster.node_ips() {
        let role = match node.as_str() {
            n if n == faulted => "node-f",
            n if n == other => "node-h",
            LINUX => "node-l",
            _ => continue,
        };
        vars.insert(role.into(), ip.to_string());
    }
    assert_eq!(
        vars.get("host-f"),
        vars.get("node-f"),
        "a HostProcess pod has its node's IP"
    );
    Bed {
        _cluster: cluster,
        pods,
        vars,
    }
}

#[rstest]
#[case::mac_spoofing_disabled("mac-spoofing-disabled", WIN2022, MAC_SPOOFING_FAILS, MAC_SPOOFING_WORKS)]
#[case::exceptionlist_missing_cluster(
    "exceptionlist-missing-cluster",
    WIN2022,
    EXCEPTIONLIST_MISSING_CLUSTER_FAILS,
    EXCEPTIONLIST_MISSING_CLUSTER_WORKS
)]
#[case::exceptionlist_covers_outside(
    "exceptionlist-covers-outside",
    WIN2022,
    EXCEPTIONLIST_COVERS_OUTSIDE_FAILS,
    EXCEPTIONLIST_COVERS_OUTSIDE_WORKS
)]
#[case::kube_proxy_no_hostname_override(
    "kube-proxy-no-hostname-override",
    WIN2019,
    KUBE_PROXY_NO_HOSTNAME_OVERRIDE_FAILS,
    KUBE_PROXY_NO_HOSTNAME_OVERRIDE_WORKS
)]
#[case::kube_proxy_stopped("kube-proxy-stopped", WIN2022, KUBE_PROXY_STOPPED_FAILS, KUBE_PROXY_STOPPED_WORKS)]
#[case::dns_unreachable("dns-unreachable", WIN2019, DNS_UNREACHABLE_FAILS, DNS_UNREACHABLE_WORKS)]
#[case::port_exhaustion("port-exhaustion", WIN2022, PORT_EXHAUSTION_FAILS, PORT_EXHAUSTION_WORKS)]
#[case::flannel_rejoin_stale_sourcevip(
    "flannel-rejoin-stale-sourcevip",
    WIN2022,
    FLANNEL_REJOIN_FAILS,
    FLANNEL_REJOIN_WORKS
)]
#[case::vxlan_params_mismatch("vxlan-params-mismatch", WIN2022, VXLAN_MISMATCH_FAILS, VXLAN_MISMATCH_WORKS)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_fault_shows_its_symptom_and_spares_other_flows(
    #[case] fault: &str,
    #[case] faulted: &str,
    #[case] fails: Fails,
    #[case] works: Works,
) {
    assert!(
        CASES
            .iter()
            .any(|(f, n, x)| *f == fault && *n == faulted && *x == fails),
        "{fault} on {faulted} is missing from CASES, so the check without faults skips it"
    );
    let bed = bed(Some(fault), faulted, mode_for(Some(fault))).await;
    let mut wrong = Vec::new();
    for (pod, line, exit, text) in fails {
        let (code, out, err) = bed.run(pod, line).await;
        let text = bed.fill(text);
        if code != *exit || !(out.contains(&text) || err.contains(&text)) {
            wrong.push(format!(
                "{pod}: {line}\n  expected exit {exit} and {text:?}\n  got exit {code}\n  stdout {out:?}\n  stderr {err:?}"
            ));
        }
    }
    for (pod, line, text) in works {
        let (code, out, err) = bed.run(pod, line).await;
        let text = bed.fill(text);
        if code != 0 || !out.contains(&text) {
            wrong.push(format!(
                "{pod}: {line}\n  expected exit 0 and {text:?}\n  got exit {code}\n  stdout {out:?}\n  stderr {err:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{fault} on {faulted}:\n{}", wrong.join("\n"));
}

/// The commands that show a symptom fail because of the fault: on the same test bed without it,
/// each of them succeeds (Test-NetConnection, which always exits 0, reports True).
#[rstest]
#[case::win2022(WIN2022, NetworkMode::L2bridge)]
#[case::win2019(WIN2019, NetworkMode::L2bridge)]
#[case::win2022_overlay(WIN2022, NetworkMode::Overlay)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_fault_the_symptom_commands_succeed(#[case] node: &str, #[case] mode: NetworkMode) {
    let bed = bed(None, node, mode).await;
    let mut wrong = Vec::new();
    let cases = CASES.iter().filter(|(f, n, _)| *n == node && mode_for(Some(f)) == mode);
    for (fault, _, fails) in cases {
        for (pod, line, _, _) in *fails {
            let (code, out, err) = bed.run(pod, line).await;
            let reported_failure = line.contains("Test-NetConnection") && out.trim_end() != "True";
            if code != 0 || reported_failure {
                wrong.push(format!(
                    "{fault}: {pod}: {line}\n  got exit {code}\n  stdout {out:?}\n  stderr {err:?}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "without faults on {node}:\n{}", wrong.join("\n"));
}

/// Sends `GET /hostname` on a fresh connection to `addr` (retrying the connect while the
/// listener comes up) and reads for `wait`: Some(response) if anything came back.
async fn get_hostname(addr: SocketAddr, wait: Duration) -> Option<String> {
    let mut stream = common::eventually(&format!("a listener on {addr}"), || async {
        tokio::net::TcpStream::connect(addr).await.ok()
    })
    .await;
    stream
        .write_all(b"GET /hostname HTTP/1.1\r\nHost: node\r\nConnection: close\r\n\r\n")
        .await
        .expect("send the request");
    let mut response = Vec::new();
    match tokio::time::timeout(wait, stream.read_to_end(&mut response)).await {
        Ok(read) => {
            read.expect("read the response");
            Some(String::from_utf8_lossy(&response).into_owned())
        }
        Err(_) if response.is_empty() => None,
        Err(_) => Some(String::from_utf8_lossy(&response).into_owned()),
    }
}

/// kube-proxy stopped on a Windows node: the real NodePort listener on its address accepts the
/// connection but never answers (the flow is dropped), while the same NodePort on the other
/// Windows node and on linux-1 answers with the backend's hostname.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_port_on_a_node_without_kube_proxy_does_not_answer() {
    let bed = bed(Some("kube-proxy-stopped"), WIN2022, NetworkMode::L2bridge).await;
    let np: u16 = bed.fill("{np}").parse().expect("node port");
    let addr = |role: &str| {
        let ip: Ipv4Addr = bed.fill(&format!("{{{role}}}")).parse().expect("node IP");
        SocketAddr::from((ip, np))
    };
    for role in ["node-h", "node-l"] {
        let response = get_hostname(addr(role), Duration::from_secs(5))
            .await
            .unwrap_or_else(|| panic!("no answer from {role}"));
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{role}: {response}");
        assert!(response.ends_with("\r\n\r\nsrv-l"), "{role}: {response}");
    }
    let started = tokio::time::Instant::now();
    let silent = get_hostname(addr("node-f"), Duration::from_secs(2)).await;
    assert_eq!(silent, None, "the faulted node's NodePort answered");
    assert!(started.elapsed() >= Duration::from_secs(2));
}
