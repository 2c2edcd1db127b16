//! Tests of what a HostProcess container sees of its Windows node's host — the confirmation
//! commands an operator runs on a suspect node (`powershell -NoProfile -Command …` as
//! NT AUTHORITY\SYSTEM) — on a clean node and on nodes with each relevant fault.

use std::net::Ipv4Addr;

use regex::Regex;
use rstest::rstest;
use serde_json::{Value, json};

use super::*;
use crate::config::faults::Fault;
use crate::config::platform::NetworkMode;
use crate::config::topology::Topology;
use crate::node::runtime::ExitStatus;
use crate::store::Part;
use crate::store::allocation::{self, Allocator};

const NS: &str = "probe";
const HPC_IMAGE: &str = "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0";
const SERVERCORE: &str = "mcr.microsoft.com/windows/servercore:ltsc2022";
/// The suspect node: Windows Server 2022, the default topology's fourth node (index 3:
/// address 10.1.0.13 here, pod CIDR 10.244.3.0/24).
const NODE: &str = "win2022-1";
/// The kubelet lines the fixture's log book holds for [`NODE`].
const KUBELET_LINES: &[&str] = &[
    "\"Starting to sync pod\" pod=\"probe/web\"",
    "\"RunPodSandbox from runtime service failed\" err=\"rpc error: sandbox\" pod=\"probe/stuck\"",
];

/// The default topology's nodes and services (kubernetes, kube-dns, a ClusterIP `web`, a
/// headless and an ExternalName service) in a store; every node on the `mode` network, the
/// suspect node with `fault`.
struct HostFixture {
    store: Arc<Store>,
    profiles: Arc<Vec<NodeProfile>>,
    logs: Arc<LogBook>,
}

impl HostFixture {
    fn new(mode: NetworkMode, fault: Option<Fault>) -> Self {
        Self::with(mode, fault, |_| {})
    }

    /// As [`HostFixture::new`], with the suspect node's profile edited by `edit`.
    fn with(mode: NetworkMode, fault: Option<Fault>, edit: impl Fn(&mut NodeProfile)) -> Self {
        let store = Arc::new(Store::default());
        for ns in ["default", "kube-system", NS] {
            store
                .create(resources::core("namespaces"), "", json!({"metadata": {"name": ns}}))
                .expect("namespace");
        }
        let topology = Topology::default_cluster().instant();
        let ips: Vec<Ipv4Addr> = (0..topology.nodes.len())
            .map(|i| Ipv4Addr::new(10, 1, 0, 10 + u8::try_from(i).expect("few nodes")))
            .collect();
        let mut profiles = crate::config::profile::profiles(&topology, &ips);
        for p in &mut profiles {
            p.network_mode = mode;
            // The delegate of that mode in the node's (HostProcess) era.
            p.cni_delegate = p
                .cni_delegate
                .and_then(|_| crate::config::delegate::CniDelegate::by_default(p.pod_network, mode, true));
            if p.name == NODE {
                p.faults.extend(fault);
                edit(p);
            }
        }
        for (spec, p) in topology.nodes.iter().zip(&profiles) {
            store
                .create(resources::core("nodes"), "", crate::node::objects::node_object(spec, p))
                .expect("node");
        }
        let allocator = Allocator::new(&topology.network.service_cidr);
        allocation::seed(&store, &allocator).expect("seed services");
        let svc = resources::core("services");
        for spec in [
            json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}),
            json!({"metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}),
            json!({"metadata": {"name": "ext"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}),
        ] {
            let mut spec = spec;
            crate::store::defaults::on_create(svc, &mut spec);
            allocator.create(&store, NS, spec).expect("service");
        }
        let logs = Arc::new(LogBook::default());
        for line in KUBELET_LINES {
            logs.append("", NODE, crate::node::nodelogs::KUBELET, line);
        }
        Self {
            store,
            profiles: Arc::new(profiles),
            logs,
        }
    }

    fn profile(&self) -> &NodeProfile {
        self.profiles.iter().find(|p| p.name == NODE).expect("the node")
    }

    /// A running pod on the suspect node.
    fn pod(&self, name: &str, spec: Value) -> Obj {
        let mut spec = spec;
        spec["nodeName"] = json!(NODE);
        let created = self
            .store
            .create(
                resources::core("pods"),
                NS,
                json!({"metadata": {"name": name}, "spec": spec}),
            )
            .expect("pod");
        let ip = if json::bool(&spec, "/hostNetwork") == Some(true) {
            "10.1.0.13"
        } else {
            "10.244.3.7"
        };
        self.store
            .modify(resources::core("pods"), NS, created.name(), Part::Status, |v| {
                v["status"]["phase"] = json!("Running");
                v["status"]["podIP"] = json!(ip);
                Ok(())
            })
            .expect("status")
    }

    /// The HostProcess probe the harness runs its confirmation commands in.
    fn probe(&self) -> Obj {
        if let Ok(probe) = self.store.get(resources::core("pods"), NS, "node-probe") {
            return probe;
        }
        self.pod(
            "node-probe",
            json!({
                "hostNetwork": true,
                "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
                "containers": [{"name": "c", "image": HPC_IMAGE}],
            }),
        )
    }

    async fn run(&self, pod: &Obj, argv: &[&str]) -> ExecOutput {
        let runtime = SimRuntime::new(self.store.clone(), self.profiles.clone()).with_logs(self.logs.clone());
        runtime
            .exec(ExecRequest {
                pod: pod.clone(),
                container: "c".into(),
                command: argv.iter().map(|s| s.to_string()).collect(),
                stdin: None,
                tty: false,
            })
            .await
    }

    /// `powershell -NoProfile -Command script` in the HostProcess probe.
    async fn confirm(&self, script: &str) -> ExecOutput {
        let probe = self.probe();
        self.run(&probe, &["powershell", "-NoProfile", "-Command", script])
            .await
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const L2: NetworkMode = NetworkMode::L2bridge;
const OVERLAY: NetworkMode = NetworkMode::Overlay;
const HNS_COUNT: &str = "Get-HnsNetwork | Measure-Object";
const POLICY_COUNT: &str = "Get-HnsPolicyList | Measure-Object";
const TCP_COUNT: &str = "Get-NetTCPConnection | Measure-Object";
const SUBNET_ENV: &str = "Test-Path C:\\run\\flannel\\subnet.env";
// The default topology's nodes run the HostProcess-era agents (kubelet 1.32, containerd 1.7):
// sig-windows-tools' paths (real-clusters.md §4).
const SOURCE_VIP: &str = "Get-Content C:\\sourcevip\\sourceVip.json -Raw";
const CNI_CONF: &str = "Get-Content C:\\etc\\cni\\net.d\\10-flannel.conf -Raw";
/// The VNI as flannel keeps it: in the subnet's VSID policy.
const VSID: &str = "Get-HnsNetwork -ErrorAction Stop | Where-Object Type -eq Overlay | ForEach-Object { $_.Subnets } | ForEach-Object { $_.Policies } | Where-Object Type -eq VSID | Format-List VSID";
const NOTHING: &str = r"\A\z";
const KUBE_PROXY_VERSION: &str =
    "$exe = (Get-CimInstance Win32_Process -Filter \"Name = 'kube-proxy.exe'\").ExecutablePath; & $exe --version";
const KUBE_PROXY_CMDLINE: &str =
    "Get-CimInstance Win32_Process -Filter \"Name = 'kube-proxy.exe'\" | Select-Object -ExpandProperty CommandLine";

/// Each confirmation command on a clean node and on a node with the fault it confirms: the
/// regexes its output must match and must not match (exit code 0 throughout).
#[rstest]
// HNS networks: the pod network's, or none.
#[case::hns_l2bridge(None, L2, "Get-HnsNetwork",
    &[r"(?m)^Name\s+: cbr0\r$", r"(?m)^Type\s+: L2Bridge\r$", r"(?m)^ManagementIP\s+: 10\.1\.0\.13\r$",
      r"(?m)^Subnets\s+: \{@\{AddressPrefix=10\.244\.3\.0/24; GatewayAddress=10\.244\.3\.1\}\}\r$",
      r"(?m)^ID\s+: [0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}\r$"],
    &[r"VNI", r"vxlan0"])]
#[case::hns_overlay(None, OVERLAY, "Get-HnsNetwork",
    &[r"(?m)^Name\s+: vxlan0\r$", r"(?m)^Type\s+: Overlay\r$", r"(?m)^VxlanPort\s+: 4789\r$",
      r"(?m)^Subnets\s+: \{@\{AddressPrefix=10\.244\.3\.0/24; GatewayAddress=10\.244\.3\.1; Policies=\{@\{Type=VSID; VSID=4096\}\}\}\}\r$"],
    &[r"(?m)^VNI"])]
#[case::hns_vsid(None, OVERLAY, VSID, &[r"\A\r\nVSID : 4096\r\n\r\n\r\n\z"], &[])]
#[case::hns_vsid_l2bridge(None, L2, VSID, &[NOTHING], &[])]
#[case::hns_vni_mismatch(Some(Fault::VxlanParamsMismatch), OVERLAY, VSID, &[r"(?m)^VSID : 4097\r$"], &[r"4096"])]
#[case::hns_missing(Some(Fault::HnsNetworkMissing), L2, "Get-HnsNetwork", &[NOTHING], &[])]
#[case::hns_count(None, L2, HNS_COUNT, &[r"(?m)^Count\s*:\s*1\r$", r"(?m)^Property\s*: \r$"], &[])]
#[case::hns_missing_count(Some(Fault::HnsNetworkMissing), L2, HNS_COUNT, &[r"(?m)^Count\s*:\s*0\r$"], &[])]
#[case::hns_flanneld_waiting(Some(Fault::FlanneldWaiting), OVERLAY, HNS_COUNT, &[r"(?m)^Count    : 0\r$"], &[])]
// kube-proxy's load balancers: one per Service with a cluster IP (kubernetes, kube-dns, web).
#[case::policies(None, L2, "Get-HnsPolicyList",
    &[r"(?m)^Policies\s+: \{@\{ExternalPort=443; InternalPort=6443; Protocol=6; Type=ELB; VIPs=\{10\.96\.0\.1\}\}\}\r$",
      r"ExternalPort=53; InternalPort=53; Protocol=17; Type=ELB; VIPs=\{10\.96\.0\.10\}",
      r"ExternalPort=80; InternalPort=8080; Protocol=6; Type=ELB; VIPs=\{10\.96\.0\.\d+\}"],
    &[r"None"])]
#[case::policy_count(None, L2, POLICY_COUNT, &[r"(?m)^Count\s*:\s*3\r$"], &[])]
#[case::policy_count_overlay(None, OVERLAY, POLICY_COUNT, &[r"(?m)^Count\s*:\s*3\r$"], &[])]
#[case::kube_proxy_stopped(Some(Fault::KubeProxyStopped), L2, POLICY_COUNT, &[r"(?m)^Count    : 0\r$"], &[])]
#[case::stale_source_vip(Some(Fault::FlannelRejoinStaleSourceVip), OVERLAY, POLICY_COUNT, &[r"(?m)^Count    : 0\r$"], &[])]
#[case::no_network_no_policies(Some(Fault::HnsNetworkMissing), L2, POLICY_COUNT, &[r"(?m)^Count    : 0\r$"], &[])]
#[case::policies_stopped(Some(Fault::KubeProxyStopped), L2, "Get-HnsPolicyList", &[NOTHING], &[])]
// The TCP connection table and the dynamic port range.
#[case::tcp_count(None, L2, TCP_COUNT, &[r"(?m)^Count\s*:\s*\d{1,2}\r$"], &[r"Count\s*:\s*\d{5}"])]
#[case::tcp_exhausted(Some(Fault::PortExhaustion), L2, TCP_COUNT, &[r"(?m)^Count\s*:\s*16384\r$"], &[])]
#[case::tcp_kubelet(None, L2, "Get-NetTCPConnection -State Listen -LocalPort 10250",
    &[r"(?m)^LocalAddress\s+LocalPort\s+RemoteAddress\s+RemotePort\s+State\s+AppliedSetting\s+OwningProcess\r$",
      r"(?m)^0\.0\.0\.0\s+10250\s+0\.0\.0\.0\s+0\s+Listen\s+2212\r$"], &[r"Established"])]
#[case::tcp_api_server(None, L2, "Get-NetTCPConnection -RemotePort 6443 | Select-Object -First 1 -ExpandProperty RemoteAddress",
    &[r"\A10\.1\.0\.10\r\n\z"], &[])]
#[case::tcp_exhausted_states(Some(Fault::PortExhaustion), L2,
    "(Get-NetTCPConnection -State TimeWait | Measure-Object).Count -gt 10000; (Get-NetTCPConnection -LocalPort 65000).State",
    &[r"\ATrue\r\n(TimeWait|Established)\r\n\z"], &[])]
#[case::netsh(None, L2, "netsh int ipv4 show dynamicport tcp",
    &[r"(?m)^Protocol tcp Dynamic Port Range\r$", r"(?m)^Start Port      : 49152\r$", r"(?m)^Number of Ports : 16384\r$"], &[])]
#[case::netsh_exhausted(Some(Fault::PortExhaustion), L2, "netsh int ipv4 show dynamicport tcp",
    &[r"Number of Ports : 16384"], &[])]
// flannel's subnet file.
#[case::subnet_env(None, L2, SUBNET_ENV, &[r"\ATrue\r\n\z"], &[])]
#[case::subnet_env_missing(Some(Fault::FlannelSubnetEnvMissing), L2, SUBNET_ENV, &[r"\AFalse\r\n\z"], &[])]
#[case::subnet_env_waiting(Some(Fault::FlanneldWaiting), L2, SUBNET_ENV, &[r"\AFalse\r\n\z"], &[])]
#[case::subnet_env_content(None, OVERLAY, "Get-Content C:\\run\\flannel\\subnet.env",
    &[r"\AFLANNEL_NETWORK=10\.244\.0\.0/16\r\nFLANNEL_SUBNET=10\.244\.3\.1/24\r\nFLANNEL_MTU=1450\r\nFLANNEL_IPMASQ=true\r\n\z"], &[])]
// kube-proxy's source VIP on overlay.
#[case::source_vip(None, OVERLAY, SOURCE_VIP, &[r#""ip": "10\.244\.3\.254/24""#, r#""gateway": "10\.244\.3\.1""#], &[])]
#[case::source_vip_stale(Some(Fault::FlannelRejoinStaleSourceVip), OVERLAY, SOURCE_VIP,
    &[r#""ip": "10\.244\.103\.254/24""#], &[r"10\.244\.3\."])]
#[case::no_source_vip_on_l2bridge(None, L2, "Test-Path C:\\sourcevip\\sourceVip.json", &[r"\AFalse\r\n\z"], &[])]
#[case::no_2019_layout(None, OVERLAY, "Test-Path C:\\k\\SourceVip.json; Test-Path C:\\k\\cni\\config\\cni.conf", &[r"\AFalse\r\nFalse\r\n\z"], &[])]
// The CNI configuration's OutBoundNAT ExceptionList.
#[case::cni_conf(None, L2, CNI_CONF,
    &[r#""type": "win-bridge""#, r#""name": "cbr0""#, r#""Nameservers": \[\s*"10\.96\.0\.10"\s*\]"#,
      r#""ExceptionList": \[\s*"10\.244\.0\.0/16",\s*"10\.96\.0\.0/12",\s*"10\.1\.0\.0/24"\s*\]"#], &[r"0\.0\.0\.0/0"])]
// HostProcess-era flannel vxlan delegates to sdnoverlay (sig-windows-tools flannel-overlay.yml).
#[case::cni_conf_overlay(None, OVERLAY, CNI_CONF,
    &[r#""type": "sdnoverlay""#, r#""name": "vxlan0""#, r#""portMappings": true"#,
      r#""Exceptions": \[\s*"10\.244\.0\.0/16",\s*"10\.96\.0\.0/12"\s*\]"#], &[r#""win-overlay""#])]
#[case::cni_missing_cluster(Some(Fault::ExceptionListMissingCluster), L2, CNI_CONF,
    &[r#""ExceptionList": \[\s*"10\.96\.0\.0/12",\s*"10\.1\.0\.0/24"\s*\]"#], &[r"10\.244\.0\.0/16"])]
#[case::cni_covers_outside(Some(Fault::ExceptionListCoversOutside), L2, CNI_CONF,
    &[r#""ExceptionList": \[\s*"10\.244\.0\.0/16",\s*"10\.96\.0\.0/12",\s*"10\.1\.0\.0/24",\s*"0\.0\.0\.0/0"\s*\]"#], &[])]
// The node's logs on its disk, as the node proxy serves them.
#[case::kubelet_log(None, L2, "Get-Content C:\\var\\log\\kubelet\\kubelet.log -Tail 200",
    &[r"\A.*Starting to sync pod.*\r\n.*RunPodSandbox from runtime service failed.*\r\n\z"], &[])]
#[case::kubelet_log_tail(None, L2, "Get-Content C:\\var\\log\\kubelet\\kubelet.log -Tail 1 | Select-String RunPodSandbox -Quiet",
    &[r"\ATrue\r\n\z"], &[])]
#[case::no_node_service_logs(None, L2, "Test-Path C:\\var\\log\\kube-proxy\\kube-proxy.log", &[r"\AFalse\r\n\z"], &[])]
// The machine's name.
#[case::hostname(None, L2, "hostname", &[r"\Awin2022-1\r\n\z"], &[])]
#[case::hostname_machine(Some(Fault::KubeProxyNoHostnameOverride), L2, "hostname", &[r"\AWIN-[A-Z0-9]{11}\r\n\z"], &[r"win2022-1"])]
// Format-List / Format-Table.
// The Windows kube-proxy's process (real-clusters.md §3: its flags show only on the node).
#[case::kube_proxy_cmdline(None, L2, KUBE_PROXY_CMDLINE,
    &[r"--proxy-mode=kernelspace", r"--hostname-override=win2022-1 ", r"--network-name=cbr0", r"kube-proxy\\kube-proxy\.exe"], &[r"--enable-dsr", r"--source-vip"])]
#[case::kube_proxy_cmdline_overlay(None, OVERLAY, KUBE_PROXY_CMDLINE, &[r"--source-vip=10\.244\.3\.254", r"--network-name=vxlan0"], &[])]
#[case::kube_proxy_no_override(Some(Fault::KubeProxyNoHostnameOverride), L2, KUBE_PROXY_CMDLINE, &[r"--proxy-mode"], &[r"--hostname-override"])]
#[case::kube_proxy_stopped_no_process(Some(Fault::KubeProxyStopped), L2, KUBE_PROXY_CMDLINE, &[NOTHING], &[])]
#[case::kube_proxy_version(None, L2, KUBE_PROXY_VERSION,
    &[r"\AKubernetes v1\.\d+\.\d+\r\n\z"], &[])]
#[case::format_list(None, L2, "Get-HnsNetwork | Format-List Name, Type", &[r"\A\r\nName : cbr0\r\nType : L2Bridge\r\n\r\n\r\n\z"], &[])]
#[case::format_table(None, L2, "Get-NetTCPConnection -LocalPort 10250 | ft LocalPort, State -AutoSize",
    &[r"\A\r\nLocalPort State\r\n--------- -----\r\n    10250 Listen\r\n\r\n\r\n\z"], &[])]
// Adapters.
#[case::adapters(None, L2, "Get-NetAdapter",
    &[r"(?m)^Name\s+InterfaceDescription\s+ifIndex\s+Status\s+MacAddress\s+LinkSpeed\r$",
      r"(?m)^Ethernet\s+Microsoft Hyper-V Network Adapter\s+6 Up\s+00-15-5D-[0-9A-F-]{8} 10 Gbps\r$",
      r"(?m)^vEthernet \(Ethernet\)\s+Hyper-V Virtual Ethernet Adapter\s+11 Up", r"(?m)^vEthernet \(cbr0\)\s"], &[])]
#[case::adapters_overlay(None, OVERLAY, "Get-NetAdapter -Name 'vEthernet*' | ForEach-Object Name",
    &[r"\AvEthernet \(Ethernet\)\r\nvEthernet \(vxlan0\)\r\n\z"], &[])]
#[case::adapters_hns_missing(Some(Fault::HnsNetworkMissing), L2, "Get-NetAdapter",
    &[r"vEthernet \(Ethernet\)"], &[r"cbr0"])]
#[tokio::test]
async fn host_process_confirms_the_node_state(
    #[case] fault: Option<Fault>,
    #[case] mode: NetworkMode,
    #[case] script: &str,
    #[case] must: &[&str],
    #[case] must_not: &[&str],
) {
    let f = HostFixture::new(mode, fault);
    let o = f.confirm(script).await;
    let stdout = text(&o.stdout);
    let stderr = text(&o.stderr);
    for re in must {
        let re = Regex::new(re).expect("a regex");
        assert!(re.is_match(&stdout), "{re} does not match:\n{stdout}\nstderr: {stderr}");
    }
    for re in must_not {
        let re = Regex::new(re).expect("a regex");
        assert!(!re.is_match(&stdout), "{re} matches:\n{stdout}");
    }
    assert_eq!(stderr, "");
    assert_eq!(o.exit, ExitStatus::Code(0));
}

/// DSR shows on the node as kube-proxy's `--enable-dsr=true`, with the WinDSR gate before it went
/// GA in 1.34 (WNET; kube-proxy's feature gates); a node service (managed platforms) runs
/// `C:\k\kube-proxy.exe` and reports the node's own version.
#[rstest]
#[case::hostprocess_dsr(false, "v1.32.3", true, &[r"--enable-dsr=true", r"--feature-gates=WinDSR=true", r"kube-proxy\\kube-proxy\.exe"])]
#[case::hostprocess_ga(false, "v1.34.1", true, &[r"--enable-dsr=true"])]
#[case::service(true, "v1.31.4", false, &[r"\AC:\\k\\kube-proxy\.exe --v=3 ", r"--cluster-cidr="])]
#[tokio::test]
async fn kube_proxy_shows_its_settings_on_the_node(
    #[case] service: bool,
    #[case] version: &str,
    #[case] dsr: bool,
    #[case] must: &[&str],
) {
    let f = HostFixture::with(L2, None, |p| {
        p.dsr = dsr;
        p.kube_proxy_version = version.to_string();
        if service {
            p.platform = crate::config::platform::Platform::Aks;
        }
    });
    let o = f.confirm(KUBE_PROXY_CMDLINE).await;
    let line = text(&o.stdout);
    for re in must {
        assert!(
            Regex::new(re).expect("a regex").is_match(&line),
            "{re} does not match {line}"
        );
    }
    assert_eq!(line.contains("WinDSR"), dsr && version < "v1.34", "{line}");
    assert_eq!(line.contains("--enable-dsr"), dsr, "{line}");
    let v = f.confirm(KUBE_PROXY_VERSION).await;
    assert_eq!(text(&v.stdout), format!("Kubernetes {version}\r\n"));
}

/// The machine name `hostname` prints under the fault is the one kube-proxy looks its Node
/// up by (lower-cased), and ipconfig and the computer name agree.
#[tokio::test]
async fn the_machine_name_is_the_one_kube_proxy_uses() {
    let f = HostFixture::new(L2, Some(Fault::KubeProxyNoHostnameOverride));
    let name = crate::node::host::machine_hostname(f.profile());
    let o = f
        .confirm("hostname; $env:COMPUTERNAME; (ipconfig /all | Select-String 'Host Name').Line")
        .await;
    let upper = name.to_uppercase();
    assert_eq!(
        text(&o.stdout),
        format!("{upper}\r\n{upper}\r\n   Host Name . . . . . . . . . . . . : {upper}\r\n")
    );
    let kube_proxy = crate::node::addons::process(
        f.profile(),
        "docker.io/sigwindowstools/kube-proxy:v1.32.3-flannel-hostprocess",
        Some(&["kube-proxy".to_string()]),
        None,
    );
    let Some(crate::node::runtime::Process::LongRunning { log }) = kube_proxy else {
        panic!("kube-proxy runs: {kube_proxy:?}");
    };
    let wanted = format!("nodes \\\"{name}\\\" not found");
    assert!(log.iter().any(|l| l.contains(&wanted)), "{wanted} not in {log:#?}");
}

/// Only the host has the HostNetworkingService cmdlets; a plain Windows container does not
/// see the node's files, connections or adapters.
#[tokio::test]
async fn a_plain_container_does_not_see_the_host() {
    let f = HostFixture::new(L2, None);
    let pod = f.pod("app", json!({"containers": [{"name": "c", "image": SERVERCORE}]}));
    let ps = |script: &'static str| {
        let f = &f;
        let pod = pod.clone();
        async move { f.run(&pod, &["powershell", "-NoProfile", "-Command", script]).await }
    };
    let o = ps("Get-HnsNetwork").await;
    assert!(
        text(&o.stderr).contains("The term 'Get-HnsNetwork' is not recognized"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(o.exit, ExitStatus::Code(1));
    let o = ps(
        "Test-Path C:\\run\\flannel\\subnet.env; (Get-NetTCPConnection | Measure-Object).Count; (Get-NetAdapter).Name",
    )
    .await;
    let id = f.run(&pod, &["hostname"]).await;
    assert_eq!(text(&id.stdout), "app\r\n");
    let stdout = text(&o.stdout);
    assert!(stdout.starts_with("False\r\n0\r\nvEthernet ("), "{stdout}");
    assert!(stdout.ends_with("_cbr0)\r\n"), "{stdout}");
}

/// Filters that match nothing are errors, as the CIM cmdlets report them; netsh knows only
/// what it knows.
#[tokio::test]
async fn unmatched_filters_fail_like_the_cim_cmdlets() {
    let f = HostFixture::new(L2, None);
    let o = f.confirm("Get-NetTCPConnection -LocalPort 1234").await;
    let stderr = text(&o.stderr);
    assert!(
        stderr.starts_with("Get-NetTCPConnection : No matching MSFT_NetTCPConnection objects found by CIM query"),
        "{stderr}"
    );
    assert!(stderr.contains("WHERE ((LocalPort = 1234))"), "{stderr}");
    assert_eq!(o.exit, ExitStatus::Code(1));
    let o = f.confirm("Get-NetAdapter -Name Wi-Fi").await;
    assert!(
        text(&o.stderr).contains("No MSFT_NetAdapter objects found with property 'Name' equal to 'Wi-Fi'"),
        "{}",
        text(&o.stderr)
    );
    let o = f.confirm("netsh int ipv4 show nothing").await;
    assert_eq!(
        text(&o.stdout),
        "The following command was not found: int ipv4 show nothing.\r\n"
    );
    assert_eq!(o.exit, ExitStatus::Code(1));
}

#[rstest]
#[case::count("1,2,3 | Measure-Object", &["Count    : 3", "Average  : ", "Property : "])]
#[case::sum("1,2,3 | Measure-Object -Sum -Maximum", &["Count    : 3", "Sum      : 6", "Maximum  : 3", "Minimum  : "])]
#[case::property("Get-ChildItem C:\\var\\log -Recurse -File | Measure-Object -Property Length -Average", &["Count    : 3", "Property : Length"])]
#[case::alias("@() | measure", &["Count    : 0"])]
#[case::member("(Get-HnsPolicyList | Measure-Object).Count", &["3"])]
#[tokio::test]
async fn measure_object_counts_its_input(#[case] script: &str, #[case] lines: &[&str]) {
    let f = HostFixture::new(L2, None);
    let o = f.confirm(script).await;
    let stdout = text(&o.stdout);
    for line in lines {
        assert!(stdout.split("\r\n").any(|l| l == *line), "{line:?} not in\n{stdout}");
    }
    assert_eq!(text(&o.stderr), "");
}

/// A host without the HNS module (projectcalico/calico#6843: "'Get-HNSNetwork' is not
/// recognized" on WS2019/2022 containerd nodes): the cmdlets fail, in a pipeline too, with exit
/// code 1; the other host cmdlets still answer.
#[rstest]
#[case::network("Get-HnsNetwork -ErrorAction Stop | Measure-Object", "Get-HnsNetwork")]
#[case::policies("Get-HnsPolicyList -ErrorAction Stop | Measure-Object", "Get-HnsPolicyList")]
#[case::vsid(VSID, "Get-HnsNetwork")]
#[tokio::test]
async fn a_host_without_the_hns_module(#[case] script: &str, #[case] cmdlet: &str) {
    let f = HostFixture::with(OVERLAY, None, |p| p.hns_cmdlets = false);
    let o = f.confirm(script).await;
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains(&format!("The term '{cmdlet}' is not recognized")),
        "{stderr}"
    );
    assert_eq!(text(&o.stdout), "");
    assert_eq!(o.exit, ExitStatus::Code(1));
    let o = f
        .confirm("(Get-NetAdapter -ErrorAction Stop | Measure-Object).Count -gt 0")
        .await;
    assert_eq!(text(&o.stdout), "True\r\n");
}

/// `-ErrorAction Stop` turns a cmdlet's error into a terminating one: the script ends there with
/// exit code 1 (about_CommonParameters); without it the script goes on and the last statement's
/// success decides the exit code.
#[rstest]
#[case::stop("Get-Content C:\\nothing\\here.json -ErrorAction Stop; 'after'", "", 1)]
#[case::continue_("Get-Content C:\\nothing\\here.json; 'after'", "after\r\n", 0)]
#[case::last_fails("Get-Content C:\\nothing\\here.json", "", 1)]
#[tokio::test]
async fn error_action_stop_ends_the_script(#[case] script: &str, #[case] stdout: &str, #[case] code: i32) {
    let f = HostFixture::new(L2, None);
    let o = f.confirm(script).await;
    assert_eq!(text(&o.stdout), stdout);
    assert!(text(&o.stderr).contains("Cannot find path"), "{}", text(&o.stderr));
    assert_eq!(o.exit, ExitStatus::Code(code));
}

/// The suspect node as a node of another platform's pod network (its services, HNS network
/// and CNI configuration follow), DSR as that platform runs it.
fn on_platform(platform: &str) -> impl Fn(&mut NodeProfile) {
    use crate::config::platform::{Platform, PodNetwork};
    let (p, net, dsr) = match platform {
        "aks" => (Platform::Aks, PodNetwork::AzureCni, true),
        "aks-overlay" => (Platform::Aks, PodNetwork::AzureCniOverlay, true),
        "eks" => (Platform::Eks, PodNetwork::VpcCni, false),
        "gke" => (Platform::Gke, PodNetwork::GkeWinBridge, false),
        _ => (Platform::Kubeadm, PodNetwork::Flannel, false),
    };
    move |n: &mut NodeProfile| {
        n.platform = p;
        n.pod_network = net;
        n.dsr = dsr;
    }
}

/// `hnsdiag list networks` answers on every Windows host, with or without the HNS module, in
/// its own format (names and ids, no type: kubernetes-sigs/sig-windows-tools#84, #168), with
/// the platform's network; nothing but the header when the network is missing.
#[rstest]
#[case::kubeadm(
    "kubeadm",
    None,
    true,
    r"\AName             ID\r\ncbr0             [0-9A-F-]{36}\r\n\z"
)]
#[case::kubeadm_no_module(
    "kubeadm",
    None,
    false,
    r"\AName             ID\r\ncbr0             [0-9A-F-]{36}\r\n\z"
)]
#[case::missing("kubeadm", Some(Fault::HnsNetworkMissing), true, r"\AName             ID\r\n\z")]
#[case::aks("aks", None, true, r"\AName             ID\r\nazure            [0-9A-F-]{36}\r\n\z")]
#[case::aks_overlay("aks-overlay", None, false, r"(?m)^azure            [0-9A-F-]{36}\r$")]
#[case::eks("eks", None, false, r"(?m)^vpcbr[0-9a-f]{12} [0-9A-F-]{36}\r$")]
#[case::gke("gke", None, false, r"(?m)^l2bridge         [0-9A-F-]{36}\r$")]
#[tokio::test]
async fn hnsdiag_lists_the_platforms_network(
    #[case] platform: &str,
    #[case] fault: Option<Fault>,
    #[case] module: bool,
    #[case] expected: &str,
) {
    let platform_edit = on_platform(platform);
    let f = HostFixture::with(L2, fault, |p| {
        platform_edit(p);
        p.hns_cmdlets = module;
    });
    for argv in [
        &["hnsdiag", "list", "networks"][..],
        &["powershell", "-NoProfile", "-Command", "hnsdiag list networks"][..],
    ] {
        let probe = f.probe();
        let o = f.run(&probe, argv).await;
        let stdout = text(&o.stdout);
        assert!(
            Regex::new(expected).expect("a regex").is_match(&stdout),
            "{argv:?}:\n{stdout}"
        );
        assert_eq!(text(&o.stderr), "");
        assert_eq!(o.exit, ExitStatus::Code(0));
    }
}

/// The HNS network's type on AKS is L2Bridge (Azure CNI's bridge mode), its name `azure`;
/// kube-proxy runs with DSR and the WinDSR gate, as AgentBaker's kubeproxystart.ps1 starts it.
#[rstest]
#[case::aks("aks")]
#[case::aks_overlay("aks-overlay")]
#[tokio::test]
async fn aks_is_l2bridge_with_dsr(#[case] platform: &str) {
    let f = HostFixture::with(L2, None, on_platform(platform));
    let o = f.confirm("Get-HnsNetwork | Format-List Name, Type").await;
    assert_eq!(text(&o.stdout), "\r\nName : azure\r\nType : L2Bridge\r\n\r\n\r\n");
    let o = f.confirm(KUBE_PROXY_CMDLINE).await;
    let line = text(&o.stdout);
    for needle in [
        r"C:\k\kube-proxy.exe",
        "--enable-dsr=true",
        "--feature-gates=WinDSR=true",
        "--network-name=azure",
    ] {
        assert!(line.contains(needle), "{needle} not in {line}");
    }
    let o = f
        .confirm(r"Get-Content C:\k\azurecni\netconf\10-azure.conflist -Raw")
        .await;
    let conf = text(&o.stdout);
    assert!(conf.contains(r#""mode": "bridge""#), "{conf}");
    assert!(conf.contains(r#""enableLoopbackDSR": true"#), "{conf}");
    assert_eq!(conf.contains("v4overlay"), platform == "aks-overlay", "{conf}");
}

/// `Get-Service` answers with the platform's service names and the Status its faults give;
/// a name the platform does not use is PowerShell's NoServiceFoundForGivenName error.
#[rstest]
#[case::aks("aks", None, "Get-Service KubeProxy", r"(?m)^Running\s+Kubeproxy\s+Kubeproxy\r$", 0)]
#[case::aks_stopped(
    "aks",
    Some(Fault::KubeProxyStopped),
    "(Get-Service kubeproxy).Status",
    r"\AStopped\r\n\z",
    0
)]
#[case::aks_kubelet(
    "aks",
    Some(Fault::KubeletStopped),
    "(Get-Service kubelet).Status",
    r"\AStopped\r\n\z",
    0
)]
#[case::eks("eks", None, "(Get-Service kube-proxy).Status", r"\ARunning\r\n\z", 0)]
#[case::eks_stopped(
    "eks",
    Some(Fault::KubeProxyStopped),
    "(Get-Service kube-proxy).Status",
    r"\AStopped\r\n\z",
    0
)]
#[case::gke(
    "gke",
    None,
    "Get-Service kubelet, kube-proxy | ForEach-Object Name",
    r"\Akubelet\r\nkube-proxy\r\n\z",
    0
)]
#[case::kubeadm("kubeadm", None, "(Get-Service kubelet).Status", r"\ARunning\r\n\z", 0)]
#[case::kubeadm_no_kube_proxy_service("kubeadm", None, "Get-Service kube-proxy", r"\A\z", 1)]
#[tokio::test]
async fn get_service_answers_per_platform(
    #[case] platform: &str,
    #[case] fault: Option<Fault>,
    #[case] script: &str,
    #[case] expected: &str,
    #[case] code: i32,
) {
    let f = HostFixture::with(L2, fault, on_platform(platform));
    let o = f.confirm(script).await;
    let stdout = text(&o.stdout);
    assert!(Regex::new(expected).expect("a regex").is_match(&stdout), "{stdout}");
    assert_eq!(o.exit, ExitStatus::Code(code));
    if code == 1 {
        assert!(
            text(&o.stderr).starts_with("Get-Service : Cannot find any service with service name 'kube-proxy'."),
            "{}",
            text(&o.stderr)
        );
    }
}

/// The agents' log files where the platform writes them, with the kubelet's lines in its
/// stderr file (klog writes to stderr).
#[rstest]
#[case::aks("aks", r"C:\k\kubelet.err.log")]
#[case::gke("gke", r"C:\etc\kubernetes\logs\kubelet.log")]
#[case::kubeadm("kubeadm", r"C:\var\log\kubelet\kubelet.err.log")]
#[tokio::test]
async fn the_kubelets_log_is_where_the_platform_puts_it(#[case] platform: &str, #[case] path: &str) {
    let f = HostFixture::with(L2, None, on_platform(platform));
    let o = f.confirm(&format!("Get-Content {path} -Tail 1")).await;
    assert!(
        text(&o.stdout).contains("RunPodSandbox from runtime service failed"),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(o.exit, ExitStatus::Code(0));
}

/// The host probe's preamble is accepted: the progress preference, and the HNS module imported
/// where present (silently skipped where absent, projectcalico/calico#6843), then the cmdlets
/// or the hnsdiag fallback.
#[rstest]
#[case::module(true, "Get-HnsNetwork | ForEach-Object Type", "L2Bridge\r\n")]
#[case::no_module(false, "hnsdiag list networks", "")]
#[tokio::test]
async fn the_probe_preamble_is_accepted(#[case] module: bool, #[case] rest: &str, #[case] stdout: &str) {
    let f = HostFixture::with(L2, None, |p| p.hns_cmdlets = module);
    let script = format!(
        "$ProgressPreference='SilentlyContinue'; Import-Module HostNetworkingService -ErrorAction SilentlyContinue; {rest}"
    );
    let o = f.confirm(&script).await;
    assert_eq!(text(&o.stderr), "");
    if stdout.is_empty() {
        assert!(
            text(&o.stdout).starts_with("Name             ID\r\ncbr0 "),
            "{}",
            text(&o.stdout)
        );
    } else {
        assert_eq!(text(&o.stdout), stdout);
    }
    assert_eq!(o.exit, ExitStatus::Code(0));
    let o = f.confirm("Import-Module HostNetworkingService").await;
    assert_eq!(
        o.exit,
        ExitStatus::Code(if module { 0 } else { 1 }),
        "{}",
        text(&o.stderr)
    );
}

/// Loading a module for the first time prints PowerShell's progress record to stderr as CLIXML
/// when the shell has a profile (inspec/train#153), unless `$ProgressPreference` silences it
/// first; stdout and the exit code are the script's either way.
#[rstest]
#[case::with_profile(&["powershell", "-Command"], "Import-Module HostNetworkingService; 'ok'", true)]
#[case::no_profile(&["powershell", "-NoProfile", "-Command"], "Import-Module HostNetworkingService; 'ok'", false)]
#[case::silenced(&["powershell", "-Command"], "$ProgressPreference = 'SilentlyContinue'; Import-Module HostNetworkingService; 'ok'", false)]
#[case::no_module(&["powershell", "-Command"], "'ok'", false)]
#[tokio::test]
async fn first_module_load_progress_goes_to_stderr(
    #[case] shell: &[&str],
    #[case] script: &str,
    #[case] progress: bool,
) {
    let f = HostFixture::new(L2, None);
    let probe = f.probe();
    let mut argv = shell.to_vec();
    argv.push(script);
    let o = f.run(&probe, &argv).await;
    assert_eq!(text(&o.stdout), "ok\r\n");
    assert_eq!(
        text(&o.stderr).starts_with("#< CLIXML\r\n<Objs"),
        progress,
        "{}",
        text(&o.stderr)
    );
    assert_eq!(text(&o.stderr).contains("Preparing modules for first use."), progress);
    assert_eq!(o.exit, ExitStatus::Code(0));
}

/// A selectorless Service `name` with hand-written EndpointSlices of `backends` addresses in
/// 198.18.0.0/15 (RFC 2544's benchmarking range), at most 1,000 per slice as the API allows.
fn service_with_backends(f: &HostFixture, name: &str, backends: u32) {
    let allocator = Allocator::new(&Topology::default_cluster().network.service_cidr);
    let mut spec = json!({"metadata": {"name": name}, "spec": {"ports": [{"port": 80, "protocol": "TCP"}]}});
    crate::store::defaults::on_create(resources::core("services"), &mut spec);
    allocator.create(&f.store, NS, spec).expect("service");
    let addresses: Vec<String> = (0..backends)
        .map(|i| format!("198.18.{}.{}", i / 250, i % 250 + 1))
        .collect();
    for (n, chunk) in addresses.chunks(1000).enumerate() {
        let endpoints: Vec<Value> = chunk
            .iter()
            .map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}}))
            .collect();
        f.store
            .create(
                resources::named("discovery.k8s.io", "endpointslices"),
                NS,
                json!({"metadata": {"name": format!("{name}-{n}"), "labels": {"kubernetes.io/service-name": name}},
                    "addressType": "IPv4", "endpoints": endpoints, "ports": [{"port": 80, "protocol": "TCP"}]}),
            )
            .expect("slice");
    }
}

/// The load balancer kube-proxy programs for a Service read from its EndpointSlices, and none
/// for a Service with more backends than the node's HNS takes (NET-SVC-BACKEND-LIMIT: 64, 1,024
/// with the OS fix; W20, W22, WNETo, WNET), as `Get-HnsPolicyList | ConvertTo-Json` shows it
/// (microsoft/SDN `collectlogs.ps1` saves it that way).
#[rstest]
#[case::within_the_old_limit(64, 64, Some(64))]
#[case::over_the_old_limit(65, 64, None)]
#[case::fixed_os_over_64(65, 1024, Some(65))]
#[case::fixed_os_over_1024(1025, 1024, None)]
#[tokio::test]
async fn a_service_over_the_backend_limit_gets_no_load_balancer(
    #[case] backends: u32,
    #[case] limit: usize,
    #[case] programmed: Option<usize>,
) {
    let f = HostFixture::with(L2, None, |p| p.service_backend_limit = limit);
    service_with_backends(&f, "many", backends);
    let o = f
        .confirm("Get-HnsPolicyList -ErrorAction Stop | ConvertTo-Json -Depth 5 -Compress")
        .await;
    assert_eq!(text(&o.stderr), "");
    let all: Value = serde_json::from_str(text(&o.stdout).trim()).expect("JSON");
    let all = all.as_array().expect("several load balancers");
    let vip = f
        .store
        .get(resources::core("services"), NS, "many")
        .map(|s| json::str(s.value(), "/spec/clusterIP").to_string())
        .expect("service");
    let lb = all
        .iter()
        .find(|lb| lb.pointer("/Policies/0/VIPs/0").and_then(Value::as_str) == Some(vip.as_str()));
    assert_eq!(
        lb.map(|lb| json::array(lb, "/References").len()),
        programmed,
        "{}",
        text(&o.stdout)
    );
    // The other Services stay programmed: kube-proxy refuses the one only.
    assert!(
        all.iter()
            .any(|lb| lb.pointer("/Policies/0/VIPs/0").and_then(Value::as_str) == Some("10.96.0.1"))
    );
}

/// A LoadBalancer Service's ingress address as HNS v2 shows it after AKS's `hns.v2.psm1` is
/// imported: with `preserve-destination: "true"` a DSR load balancer over the node's own
/// backend with the PreserveDIP and UseMux port flags (8 | 4) from Windows 1903 on
/// (NET-PRESERVE-DEST: W20, WNET; kubernetes `pkg/proxy/winkernel/proxier.go`), a plain one
/// without the annotation or on an older build; the in-box module's v1 list has no flags.
#[rstest]
#[case::preserved(true, 20348, true, Some((12, 1)))]
#[case::not_annotated(false, 20348, true, Some((0, 0)))]
#[case::before_1903(true, 17763, true, Some((0, 0)))]
#[case::v1_list(true, 20348, false, None)]
#[tokio::test]
async fn preserve_destination_shows_in_the_v2_port_flags(
    #[case] annotated: bool,
    #[case] build: u32,
    #[case] v2: bool,
    #[case] flags: Option<(u64, u64)>,
) {
    let f = HostFixture::with(L2, None, |p| {
        p.platform = crate::config::platform::Platform::Aks;
        p.dsr = true;
        p.build = Some(build);
    });
    let allocator = Allocator::new(&Topology::default_cluster().network.service_cidr);
    let annotations = if annotated {
        json!({"preserve-destination": "true"})
    } else {
        json!({})
    };
    let mut spec = json!({"metadata": {"name": "pd", "annotations": annotations},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}});
    crate::store::defaults::on_create(resources::core("services"), &mut spec);
    allocator.create(&f.store, NS, spec).expect("service");
    f.store
        .modify(resources::core("services"), NS, "pd", Part::Status, |v| {
            v["status"]["loadBalancer"]["ingress"] = json!([{"ip": "203.0.113.10"}]);
            Ok(())
        })
        .expect("ingress");
    f.store
        .create(
            resources::named("discovery.k8s.io", "endpointslices"),
            NS,
            json!({"metadata": {"name": "pd-0", "labels": {"kubernetes.io/service-name": "pd"}}, "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.244.3.7"], "nodeName": NODE, "conditions": {"ready": true}},
                              {"addresses": ["10.244.1.7"], "nodeName": "elsewhere", "conditions": {"ready": true}}],
                "ports": [{"port": 8080, "protocol": "TCP"}]}),
        )
        .expect("slice");
    // AKS keeps microsoft/SDN's v2 module where the runner's preamble looks for it.
    let kept = f.confirm("Test-Path C:\\k\\hns.v2.psm1").await;
    assert_eq!(text(&kept.stdout), "True\r\n");
    let module = if v2 { "Import-Module C:\\k\\hns.v2.psm1; " } else { "" };
    let o = f
        .confirm(&format!(
            "{module}Get-HnsPolicyList | ConvertTo-Json -Depth 5 -Compress"
        ))
        .await;
    assert_eq!(text(&o.stderr), "");
    let all: Value = serde_json::from_str(text(&o.stdout).trim()).expect("JSON");
    let ingress = all.as_array().expect("several").iter().find(|lb| {
        lb.pointer("/FrontendVIPs/0")
            .or_else(|| lb.pointer("/Policies/0/VIPs/0"))
            .and_then(Value::as_str)
            == Some("203.0.113.10")
    });
    let ingress = ingress.expect("a load balancer for the ingress address");
    let seen = ingress.get("PortMappings").map(|_| {
        (
            ingress
                .pointer("/PortMappings/0/Flags")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            ingress.get("Flags").and_then(Value::as_u64).unwrap_or(0),
        )
    });
    assert_eq!(seen, flags, "{ingress}");
    if flags == Some((12, 1)) {
        // Only the node's own backend: preserve-destination disables node-to-node forwarding.
        assert_eq!(json::array(ingress, "/HostComputeEndpoints").len(), 1, "{ingress}");
    }
}

/// The node's HNS endpoints: its own running pod's, and a remote one per backend of a Service
/// on another node (kube-proxy's; on overlay with the backend node's provider address), in the
/// v1 shape of the in-box module and the v2 shape of `hns.v2.psm1`.
#[rstest]
#[case::l2bridge_v1(L2, false, &[r#""IPAddress":"10.244.3.7""#, r#""IPAddress":"10.244.1.9","IsRemoteEndpoint":true,"MacAddress":"02-11-0a-f4-01-09""#], &[r#""PA":"#])]
#[case::overlay_v1(OVERLAY, false, &[r#""IsRemoteEndpoint":true"#, r#"{"PA":"10.1.0.12","Type":"PA"}"#], &[])]
#[case::overlay_v2(OVERLAY, true, &[r#""IpConfigurations":[{"IpAddress":"10.244.1.9","PrefixLength":24}],"MacAddress":"02-11-0a-f4-01-09","Flags":1"#,
    r#"{"Type":"ProviderAddress","Settings":{"ProviderAddress":"10.1.0.12"}}"#], &["IsRemoteEndpoint"])]
#[tokio::test]
async fn the_node_lists_its_own_and_remote_hns_endpoints(
    #[case] mode: NetworkMode,
    #[case] v2: bool,
    #[case] present: &[&str],
    #[case] absent: &[&str],
) {
    let f = HostFixture::with(mode, None, |p| {
        if v2 {
            p.platform = crate::config::platform::Platform::Aks;
        }
    });
    f.pod("web-1", json!({"containers": [{"name": "c", "image": SERVERCORE}]}));
    f.store
        .create(
            resources::named("discovery.k8s.io", "endpointslices"),
            NS,
            json!({"metadata": {"name": "web-0", "labels": {"kubernetes.io/service-name": "web"}}, "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.244.3.7"], "nodeName": NODE, "conditions": {"ready": true}},
                              {"addresses": ["10.244.1.9"], "nodeName": "win2019-1", "conditions": {"ready": true}}],
                "ports": [{"port": 8080, "protocol": "TCP"}]}),
        )
        .expect("slice");
    let module = if v2 { "Import-Module C:\\k\\hns.v2.psm1; " } else { "" };
    let o = f
        .confirm(&format!(
            "{module}Get-HnsEndpoint -ErrorAction Stop | ConvertTo-Json -Depth 5 -Compress"
        ))
        .await;
    assert_eq!(text(&o.stderr), "");
    let out = text(&o.stdout);
    for p in present {
        assert!(out.contains(p), "{p} not in {out}");
    }
    for a in absent {
        assert!(!out.contains(a), "{a} in {out}");
    }
    // Each endpoint id is the one the load balancers refer to.
    let lbs = f
        .confirm(&format!(
            "{module}Get-HnsPolicyList | ConvertTo-Json -Depth 5 -Compress"
        ))
        .await;
    let all: Value = serde_json::from_str(text(&o.stdout).trim()).expect("JSON");
    let ids: Vec<&str> = all
        .as_array()
        .expect("two endpoints")
        .iter()
        .filter_map(|e| e["ID"].as_str())
        .collect();
    assert_eq!(ids.len(), 2, "{out}");
    for id in ids {
        assert!(
            text(&lbs.stdout).contains(id),
            "{id} not referred to by a load balancer"
        );
    }
}

/// The node's HNS listing (`Get-HnsPolicyList` and `Get-HnsEndpoint` as JSON): (load balancers,
/// endpoints).
async fn hns_listing(f: &HostFixture) -> (Vec<Value>, Vec<Value>) {
    let mut out = Vec::new();
    for cmd in ["Get-HnsPolicyList", "Get-HnsEndpoint"] {
        let o = f
            .confirm(&format!("{cmd} -ErrorAction Stop | ConvertTo-Json -Depth 5 -Compress"))
            .await;
        assert_eq!(text(&o.stderr), "", "{cmd}");
        let v: Value = serde_json::from_str(text(&o.stdout).trim()).expect("JSON");
        out.push(match v {
            Value::Array(all) => all,
            one => vec![one],
        });
    }
    let endpoints = out.pop().unwrap_or_default();
    (out.pop().unwrap_or_default(), endpoints)
}

fn vip_of(lb: &Value) -> &str {
    lb.pointer("/Policies/0/VIPs/0").and_then(Value::as_str).unwrap_or("")
}

/// The data-plane faults change what the node lists and nothing in the API, each as its
/// documented symptom says (config/faults.rs), on l2bridge and overlay: the cluster DNS
/// Service's load balancer missing (microsoft/hcsshim#1043), a deleted replica kept among its
/// backends (kubernetes#131466), one of the node's own pod addresses also a remote endpoint
/// (microsoft/Windows-Containers#631, kubernetes#138000), a load balancer for a Service address
/// that no Service has.
#[rstest]
#[tokio::test]
async fn data_plane_faults_show_in_the_nodes_hns_listing(
    #[values(L2, OVERLAY)] mode: NetworkMode,
    #[values(
        Fault::HnsLbPolicyMissing,
        Fault::HnsStaleBackend,
        Fault::HnsStaleRemoteEndpoint,
        Fault::HnsLeakedPolicies
    )]
    fault: Fault,
) {
    let mut seen = Vec::new();
    for fault in [None, Some(fault)] {
        let f = HostFixture::new(mode, fault);
        f.pod("web-1", json!({"containers": [{"name": "c", "image": SERVERCORE}]}));
        f.store
            .create(
                resources::named("discovery.k8s.io", "endpointslices"),
                "kube-system",
                json!({"metadata": {"name": "kube-dns-0", "labels": {"kubernetes.io/service-name": "kube-dns"}}, "addressType": "IPv4",
                    "endpoints": [{"addresses": ["10.244.0.2"], "nodeName": "linux-1", "conditions": {"ready": true}},
                                  {"addresses": ["10.244.0.3"], "nodeName": "linux-1", "conditions": {"ready": true}}],
                    "ports": [{"port": 53, "protocol": "UDP"}]}),
            )
            .expect("slice");
        let dns = f
            .store
            .get(resources::core("services"), "kube-system", "kube-dns")
            .map(|s| json::str(s.value(), "/spec/clusterIP").to_string())
            .expect("kube-dns");
        seen.push((dns, hns_listing(&f).await));
    }
    let (dns, (lbs, eps)) = seen.pop().expect("broken");
    let (_, (before_lbs, before_eps)) = seen.pop().expect("healthy");
    let dns_lb = |all: &[Value]| all.iter().find(|lb| vip_of(lb) == dns).cloned();
    let addresses = |all: &[Value], remote: bool| -> Vec<String> {
        all.iter()
            .filter(|e| e["IsRemoteEndpoint"].as_bool().unwrap_or(false) == remote)
            .filter_map(|e| e["IPAddress"].as_str().map(str::to_string))
            .collect()
    };
    let healthy_dns = dns_lb(&before_lbs).expect("the healthy node serves the cluster DNS Service");
    assert_eq!(json::array(&healthy_dns, "/References").len(), 2);
    match fault {
        Fault::HnsLbPolicyMissing => {
            assert!(dns_lb(&lbs).is_none(), "{lbs:?}");
            assert_eq!(lbs.len() + 1, before_lbs.len(), "the other Services stay programmed");
            assert_eq!(eps, before_eps);
        }
        Fault::HnsStaleBackend => {
            let lb = dns_lb(&lbs).expect("the load balancer");
            assert_eq!(json::array(&lb, "/References").len(), 3, "{lb}");
            let remote = addresses(&eps, true);
            let stale: Vec<&String> = remote
                .iter()
                .filter(|ip| !addresses(&before_eps, true).contains(ip))
                .collect();
            assert_eq!(stale, [&"10.244.0.250".to_string()], "{eps:?}");
            let id = eps
                .iter()
                .find(|e| e["IPAddress"] == "10.244.0.250")
                .and_then(|e| e["ID"].as_str())
                .expect("its endpoint");
            assert!(
                lb.to_string().contains(id),
                "the load balancer refers to the stale endpoint"
            );
        }
        Fault::HnsStaleRemoteEndpoint => {
            assert_eq!(lbs, before_lbs);
            assert_eq!(addresses(&eps, false), ["10.244.3.7"]);
            assert!(addresses(&eps, true).contains(&"10.244.3.7".to_string()), "{eps:?}");
            assert!(!addresses(&before_eps, true).contains(&"10.244.3.7".to_string()));
            let pa = eps
                .iter()
                .find(|e| e["IPAddress"] == "10.244.3.7" && e["IsRemoteEndpoint"] == true)
                .map(|e| e.to_string().contains(r#""Type":"PA""#));
            assert_eq!(pa, Some(mode == OVERLAY), "{eps:?}");
        }
        Fault::HnsLeakedPolicies => {
            assert_eq!(lbs.len(), before_lbs.len() + 1);
            let leaked: Vec<&str> = lbs
                .iter()
                .map(vip_of)
                .filter(|v| !before_lbs.iter().any(|b| vip_of(b) == *v))
                .collect();
            assert_eq!(
                leaked,
                ["10.111.255.254"],
                "the top of 10.96.0.0/12, which no Service has"
            );
            assert_eq!(eps, before_eps);
        }
        other => panic!("{other} is not a data-plane fault"),
    }
}
