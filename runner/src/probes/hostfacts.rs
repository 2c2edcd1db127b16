//! Facts read on each Windows node itself, through the run's HostProcess host probe (no SSH):
//! the pod network's HNS network type (the network mode), and the Windows kube-proxy's command
//! line (DSR, the WinDSR gate) and version, the kubelet's command line, and flannel's CNI
//! configuration (the plugin it delegates to, NET-CNI-SPEC-CHECK). On AKS, EKS and GKE the Windows kube-proxy is a node
//! service and the CNI no API object, so the node is the one place these show
//! (real-clusters.md §3). API objects stay the first source; a reading fills only what they
//! left unknown (or what `--network-mode` merely stated), and names its node and command. A
//! command that fails leaves its fact unknown.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use mixcheck_reports::{EvidenceItem, Excerpt, Fact, Os};

use crate::cluster::deploy::Deployment;
use crate::cluster::facts::{self, ClusterFacts, CniDelegate};
use crate::probes::outcome;

/// The limit on one command.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// What every host-probe command starts with: no progress records (Windows PowerShell writes
/// them to stderr the first time a module loads, which would read as an error), and the HNS
/// module where the host has it — `HostNetworkingService` (Windows Server 2019 on), or AKS's own
/// `c:\k\hns.v2.psm1` (Azure/AgentBaker `kubeletstart.ps1`: `ipmo $global:HNSModule`).
const PREAMBLE: &str = "$ProgressPreference = 'SilentlyContinue'; Import-Module HostNetworkingService -ErrorAction SilentlyContinue; if (Test-Path 'C:\\k\\hns.v2.psm1') { Import-Module 'C:\\k\\hns.v2.psm1' -DisableNameChecking -ErrorAction SilentlyContinue }; ";
/// The pod network's HNS network types (the built-in `nat` network is not one).
const HNS_TYPES: &str = "Get-HnsNetwork -ErrorAction Stop | Select-Object -ExpandProperty Type";
/// The same from `hnsdiag` (in System32 wherever HNS runs), for hosts without the HNS cmdlets
/// (projectcalico/calico#6843).
const HNS_DIAG: &str = "hnsdiag list networks";
/// The Windows kube-proxy's command line (nothing when it is not running).
const KUBE_PROXY_CMDLINE: &str = "Get-CimInstance Win32_Process -Filter \"Name = 'kube-proxy.exe'\" -ErrorAction Stop | Select-Object -ExpandProperty CommandLine";
/// The kubelet's command line (`--windows-priorityclass`, CPU-KUBELET-PRIORITY).
const KUBELET_CMDLINE: &str = "Get-CimInstance Win32_Process -Filter \"Name = 'kubelet.exe'\" -ErrorAction Stop | Select-Object -ExpandProperty CommandLine";
/// Where each pod network writes its CNI configuration on a Windows node: flannel —
/// sig-windows-tools' HostProcess flannel (`c:/etc/cni/net.d/10-flannel.conf`) and the 2019
/// script install (`C:\k\cni\config\cni.conf`) (real-clusters.md §4, W14); AKS's Azure CNI
/// (`C:\k\azurecni\netconf\10-azure.conflist`, AGENTBAKER); GKE's set-up
/// (`C:\etc\kubernetes\cni\config\l2bridge.conf`, GCEWINSETUP); EKS's vpc-bridge
/// (`C:\ProgramData\Amazon\EKS\cni\config\vpc-bridge.conf`). Each file found is printed
/// after a `# <path>` line, flannel's first.
const CNI_CONF: &str = "foreach ($p in @('C:\\etc\\cni\\net.d\\10-flannel.conf', 'C:\\k\\cni\\config\\cni.conf', 'C:\\k\\azurecni\\netconf\\10-azure.conflist', 'C:\\etc\\kubernetes\\cni\\config\\l2bridge.conf', 'C:\\ProgramData\\Amazon\\EKS\\cni\\config\\vpc-bridge.conf')) { if (Test-Path $p) { Write-Output \"# $p\"; Get-Content -Path $p -ErrorAction Stop } }";
/// kube-proxy's source VIP file on overlay nodes, each found printed after a `# <path>` line:
/// sig-windows-tools' HostProcess kube-proxy keeps it in `C:\sourcevip\sourceVip.json`
/// (`hostprocess/flannel/kube-proxy/start.ps1`), the 2019 scripts in `C:\k\SourceVip.json`
/// (W14, WDBG: delete it after a re-join).
const SOURCE_VIP: &str = "foreach ($p in @('C:\\sourcevip\\sourceVip.json', 'C:\\k\\SourceVip.json')) { if (Test-Path $p) { Write-Output \"# $p\"; Get-Content -Path $p -ErrorAction Stop } }";
/// The Windows kube-proxy binary's version (`Kubernetes v1.32.3`).
const KUBE_PROXY_VERSION: &str = "$exe = (Get-CimInstance Win32_Process -Filter \"Name = 'kube-proxy.exe'\" -ErrorAction Stop).ExecutablePath; if ($exe) { & $exe --version } else { Write-Error 'kube-proxy.exe is not running' }";

/// What one node's host showed: each command's output, or why it did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub node: String,
    /// The HNS network types, one per line, or why they could not be listed.
    pub hns_types: Result<String, String>,
    /// The command that listed them (`Get-HnsNetwork`, or `hnsdiag list networks` where the
    /// cmdlets are missing).
    pub hns_via: &'static str,
    pub kube_proxy: Result<String, String>,
    pub version: Result<String, String>,
    pub kubelet: Result<String, String>,
    /// Flannel's CNI configuration files (`# <path>` then the file), or why they could not be read.
    pub cni_conf: Result<String, String>,
    /// kube-proxy's source VIP files (`# <path>` then the file), or why they could not be read.
    pub source_vip: Result<String, String>,
}

/// Runs the commands on every Windows node with a host probe of the run, concurrently.
pub async fn read(pods: &Api<Pod>, dep: &Deployment, cluster: &ClusterFacts) -> Vec<Reading> {
    let nodes: Vec<(&String, &crate::cluster::deploy::Placed)> = cluster
        .nodes
        .iter()
        .filter(|n| n.os == Os::Windows)
        .filter_map(|n| dep.hosts.get(&n.name).map(|p| (&n.name, p)))
        .collect();
    futures::future::join_all(nodes.into_iter().map(|(node, placed)| async move {
        // A node-side probe that never ran (refused by policy, never ready) answers nothing:
        // every fact it would read is unknown for that reason.
        if let Some(problem) = &placed.problem {
            let why = || {
                Err(format!(
                    "{}the node-side probe is not usable: {problem}",
                    outcome::NOT_RUN
                ))
            };
            return Reading {
                node: node.clone(),
                hns_types: why(),
                hns_via: "Get-HnsNetwork",
                kube_proxy: why(),
                version: why(),
                kubelet: why(),
                cni_conf: why(),
                source_vip: why(),
            };
        }
        let pod = placed.name.as_str();
        let (hns, kube_proxy, version, kubelet, cni_conf, source_vip) = futures::join!(
            hns_types(pods, pod),
            run(pods, pod, KUBE_PROXY_CMDLINE),
            run(pods, pod, KUBE_PROXY_VERSION),
            run(pods, pod, KUBELET_CMDLINE),
            run(pods, pod, CNI_CONF),
            run(pods, pod, SOURCE_VIP),
        );
        let (hns_types, hns_via) = hns;
        Reading {
            node: node.clone(),
            hns_types,
            hns_via,
            kube_proxy,
            version,
            kubelet,
            cni_conf,
            source_vip,
        }
    }))
    .await
}

/// The node's HNS network types (one per line) and the command that listed them: the cmdlet,
/// else `hnsdiag`; Err names why neither could.
async fn hns_types(pods: &Api<Pod>, pod: &str) -> (Result<String, String>, &'static str) {
    let cmdlet = match run(pods, pod, HNS_TYPES).await {
        Ok(types) => return (Ok(types), "Get-HnsNetwork"),
        Err(why) => why,
    };
    match run(pods, pod, HNS_DIAG).await {
        Ok(text) => (Ok(hnsdiag_types(&text).join("\n")), HNS_DIAG),
        Err(diag) => (Err(format!("{cmdlet}; {HNS_DIAG}: {diag}")), "Get-HnsNetwork"),
    }
}

/// The network types `hnsdiag list networks` shows. It prints a Name and an ID column only
/// (sample output in kubernetes-sigs/sig-windows-tools#84), so the type is inferred from the
/// names each pod network gives its HNS network: Azure CNI's `azure` (L2Bridge, hard-coded in
/// Azure/azure-container-networking `network/network_windows.go`), the VPC CNI's `vpcbr…`
/// (vpc-bridge, L2Bridge), GKE's `l2bridge`, flannel's `cbr0` (win-bridge, L2Bridge) and
/// `vxlan0` (win-overlay, Overlay); the host's `nat`. A `Type :` field, where a newer hnsdiag
/// prints one, is taken as written. Names that say nothing (Calico's `Calico`, which is
/// either) are left out.
pub fn hnsdiag_types(text: &str) -> Vec<String> {
    let fields: Vec<String> = text
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .trim_matches('"')
                .eq_ignore_ascii_case("type")
                .then(|| value.trim().trim_matches(|c| c == '"' || c == ',').to_string())
        })
        .filter(|t| !t.is_empty())
        .collect();
    if !fields.is_empty() {
        return fields;
    }
    text.lines()
        .filter_map(|line| {
            let name = line.split_whitespace().next()?.to_ascii_lowercase();
            let t = match name.as_str() {
                "azure" | "l2bridge" | "cbr0" => "L2Bridge",
                n if n.starts_with("vpcbr") => "L2Bridge",
                "vxlan0" => "Overlay",
                "nat" => "nat",
                _ => return None,
            };
            Some(format!("{t} (network {name})"))
        })
        .collect()
}

/// One command's standard output, or why it did not run to success. The host probe reads what
/// a command printed whatever else it wrote to stderr (a warning, a progress record): only an
/// exit code other than 0, or an error with nothing printed, leaves the command "not run".
pub(super) async fn run(pods: &Api<Pod>, pod: &str, command: &str) -> Result<String, String> {
    let argv = outcome::argv(Os::Windows, &format!("{PREAMBLE}{command}"));
    match tokio::time::timeout(
        COMMAND_TIMEOUT,
        crate::probes::transport::exec_retrying(pods, pod, None, &argv),
    )
    .await
    {
        Ok(Ok((out, _))) => output_of(out.exit_code, &out.stdout_text(), &out.stderr_text()),
        Ok(Err(e)) => Err(format!("{}exec failed: {e}", outcome::NOT_RUN)),
        Err(_) => Err(format!(
            "{}timed out after {}s",
            outcome::NOT_RUN,
            COMMAND_TIMEOUT.as_secs()
        )),
    }
}

/// A host command's stdout when it exited 0 and printed something (or printed nothing and wrote
/// no error); else why not, as [`outcome::evidence`] says it.
fn output_of(exit_code: Option<i32>, stdout: &str, stderr: &str) -> Result<String, String> {
    if exit_code == Some(0) && !stdout.trim().is_empty() {
        return Ok(stdout.to_string());
    }
    let text = outcome::evidence(Os::Windows, exit_code, stdout, stderr);
    if outcome::not_run(&text) { Err(text) } else { Ok(text) }
}

/// The network mode of an HNS network type (`L2Bridge` → `l2bridge`, `L2Bridge (network azure)`
/// too); None for the host's own
/// networks (`nat`, `ICS`, `Internal`, `Private`).
pub fn mode_of(hns_type: &str) -> Option<&'static str> {
    // `hnsdiag`'s inferred types carry their network's name after the type.
    let word = hns_type.split_whitespace().next().unwrap_or_default();
    match word.to_ascii_lowercase().as_str() {
        "l2bridge" => Some("l2bridge"),
        "overlay" => Some("overlay"),
        "l2tunnel" => Some("l2tunnel"),
        "transparent" => Some("transparent"),
        _ => None,
    }
}

/// The flags of a command line (`--name=value` or a bare `--name`), by name.
pub fn flag<'a>(cmdline: &'a str, name: &str) -> Option<&'a str> {
    cmdline.split_whitespace().find_map(|a| {
        let a = a.trim_matches('"');
        let rest = a.strip_prefix("--")?.strip_prefix(name)?;
        match rest.strip_prefix('=') {
            Some(v) => Some(v),
            None if rest.is_empty() => Some("true"),
            None => None,
        }
    })
}

/// DSR from kube-proxy's command line: its `--enable-dsr` flag; without it (and without a
/// `--config` file that could set it) kube-proxy's default, off.
fn dsr_of(cmdline: &str) -> Option<bool> {
    match flag(cmdline, "enable-dsr") {
        Some(v) => Some(v.eq_ignore_ascii_case("true")),
        None if flag(cmdline, "config").is_some() => None,
        None => Some(false),
    }
}

/// `Kubernetes v1.32.3` → `v1.32.3`.
fn version_of(text: &str) -> Option<String> {
    let v = text.split_whitespace().find(|w| w.starts_with('v'))?;
    facts::major_minor(v).map(|_| v.to_string())
}

/// What the readings add to the facts. The node's own reading decides wherever one node could
/// read it — the network mode (its HNS network's type), DSR and the WinDSR gate (its
/// kube-proxy's command line) — from the first node (in the facts' order) whose command ran;
/// what API objects or `--network-mode` suggested stays only where no node could say, and a
/// suggestion the node contradicts is kept in the report's `disagreements`. Each node's own
/// kube-proxy version, its HNS networks, kubelet command line and flannel delegate.
pub fn refine(cluster: &mut ClusterFacts, readings: &[Reading]) {
    let found = readings.iter().find_map(|r| {
        let types = r.hns_types.as_ref().ok()?;
        types.lines().find_map(|t| {
            mode_of(t).map(|m| {
                Fact::new(
                    m.to_string(),
                    format!("node {}: {} Type {}", r.node, r.hns_via, t.trim()),
                )
            })
        })
    });
    if let Some(mode) = found {
        disagree(cluster, "network_mode", &cluster.network_mode.clone(), &mode);
        cluster.report.network_mode = Some(mode.clone());
        cluster.network_mode = Some(mode);
    }
    let cmdlines = || {
        readings.iter().filter_map(|r| {
            let line = r
                .kube_proxy
                .as_ref()
                .ok()?
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())?;
            Some((r.node.as_str(), line))
        })
    };
    if let Some(dsr) = cmdlines().find_map(|(node, line)| {
        dsr_of(line).map(|d| {
            let how = if flag(line, "enable-dsr").is_some() {
                "--enable-dsr"
            } else {
                "no --enable-dsr (off by default)"
            };
            Fact::new(d, format!("node {node}: kube-proxy.exe command line, {how}"))
        })
    }) {
        disagree(cluster, "dsr", &cluster.dsr.clone(), &dsr);
        cluster.report.dsr = Some(dsr.clone());
        cluster.dsr = Some(dsr);
    }
    if let Some(gate) = cmdlines().find_map(|(node, line)| {
        let gate = facts::gate_in_flag(flag(line, "feature-gates")?, "WinDSR")?;
        Some(Fact::new(gate, format!("node {node}: kube-proxy.exe --feature-gates")))
    }) {
        disagree(cluster, "win_dsr_gate", &cluster.win_dsr_gate.clone(), &gate);
        cluster.win_dsr_gate = Some(gate);
    }
    for r in readings {
        let lines = |out: &Result<String, String>| -> Result<Vec<String>, String> {
            out.as_ref()
                .map(|t| {
                    t.lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .map_err(Clone::clone)
        };
        let hns = lines(&r.hns_types).map(|types| facts::HnsNetworks { types, via: r.hns_via });
        cluster.hns_networks.insert(r.node.clone(), hns);
        let kubelet = lines(&r.kubelet).map(|l| l.into_iter().next().unwrap_or_default());
        cluster.kubelet_cmdlines.insert(r.node.clone(), kubelet);
        let cni = r.cni_conf.clone().and_then(|text| flannel_delegate(&text));
        cluster.flannel_delegates.insert(r.node.clone(), cni);
        let delegate = r.cni_conf.clone().and_then(|text| cni_delegate(&text));
        cluster.cni_delegates.insert(r.node.clone(), delegate);
        let vip = r.source_vip.clone().and_then(|text| source_vip(&text));
        cluster.source_vips.insert(r.node.clone(), vip);
    }
    for r in readings {
        let Some(version) = r.version.as_ref().ok().and_then(|t| version_of(t)) else {
            continue;
        };
        // A pod's image says what runs; `status.nodeInfo.kubeProxyVersion` (deprecated, the
        // kubelet's own version: KEP-4004) gives way to the binary's own answer.
        if let Some(node) = cluster.report.nodes.get_mut(&r.node)
            && node
                .kube_proxy_version
                .as_ref()
                .is_none_or(|v| v.source.ends_with("status.nodeInfo"))
        {
            node.kube_proxy_version = Some(Fact::new(version, format!("node {}: kube-proxy.exe --version", r.node)));
        }
    }
}

/// The first source VIP file of the probe's output (`# <path>` then its JSON, the host-local
/// IPAM result the start script kept: `{"ip4": {"ip": "10.244.2.254/24", …}}`); None when the
/// node has none; Err when a file found holds no address.
pub fn source_vip(text: &str) -> Result<Option<facts::SourceVip>, String> {
    let Some((path, body)) = cni_files(text).into_iter().next() else {
        return Ok(None);
    };
    let doc: serde_json::Value = serde_json::from_str(&body).map_err(|e| format!("{path} is not JSON: {e}"))?;
    let ip = doc
        .pointer("/ip4/ip")
        .or_else(|| doc.pointer("/ips/0/address"))
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| format!("{path} names no address (ip4.ip)"))?;
    Ok(Some(facts::SourceVip {
        path,
        ip: ip.split('/').next().unwrap_or(ip).to_string(),
    }))
}

/// Records that what the API objects (or the user) suggested for `name` differs from the node's
/// reading, which is used.
fn disagree<T: PartialEq + std::fmt::Debug>(
    cluster: &mut ClusterFacts,
    name: &str,
    before: &Option<Fact<T>>,
    node: &Fact<T>,
) {
    if let Some(before) = before.as_ref().filter(|b| b.value != node.value) {
        cluster.report.disagreements.insert(
            name.to_string(),
            format!(
                "{} reads {:?}; {} said {:?}",
                node.source, node.value, before.source, before.value
            ),
        );
    }
}

/// The files the CNI configuration command printed: (path, body), in order.
fn cni_files(text: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(path) = line.strip_prefix("# ") {
            files.push((path.trim().to_string(), String::new()));
        } else if let Some((_, body)) = files.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    files
}

/// The CNI plugin that sets up the node's pod networking, from the first configuration file
/// the command printed: flannel's delegate (win-bridge, win-overlay, sdnbridge, sdnoverlay),
/// else the main plugin — Azure CNI's `azure-vnet` as `azure-cni`, `vpc-bridge`, `sdnbridge`,
/// `calico` — the words the suites' `cniDelegate` conditions use.
pub fn cni_delegate(text: &str) -> Result<CniDelegate, String> {
    let Some((path, body)) = cni_files(text).into_iter().next() else {
        return Err("the node's CNI configuration: none at the paths flannel, Azure CNI, GKE and EKS use".into());
    };
    let doc: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| format!("the CNI configuration {path}: not JSON ({e})"))?;
    let first = doc
        .get("plugins")
        .and_then(|p| p.as_array())
        .and_then(|p| p.first())
        .unwrap_or(&doc);
    let kind = first
        .get("type")
        .and_then(|t| t.as_str())
        .ok_or_else(|| format!("the CNI configuration {path}: no plugin type"))?;
    let delegate = match kind {
        "flannel" => first
            .pointer("/delegate/type")
            .and_then(|t| t.as_str())
            .ok_or_else(|| format!("the CNI configuration {path}: flannel without a delegate type"))?,
        "azure-vnet" => "azure-cni",
        other => other,
    };
    Ok(CniDelegate {
        path,
        delegate: delegate.to_string(),
        cni_version: doc.get("cniVersion").and_then(|v| v.as_str()).map(str::to_string),
    })
}

/// The CNI plugin of `node`'s pod network: what its host probe read, else what the cluster's
/// objects say of the platform's own plugin (Azure CNI on AKS, vpc-bridge on EKS, Calico,
/// sdnbridge on GKE without Dataplane V2: GCEWINSETUP). Where neither says (flannel, whose
/// delegate only the node's configuration shows): why, with the node's own reading's failure.
pub fn delegate_of(cluster: &ClusterFacts, node: &str) -> Result<String, String> {
    let own = match cluster.cni_delegates.get(node) {
        Some(Ok(d)) => return Ok(d.delegate.clone()),
        Some(Err(why)) => format!("its CNI configuration on {node}: {why}"),
        None => format!("its CNI configuration on {node}, which no host probe read"),
    };
    // A node that could not be read (down, its probe refused) runs the cluster's Windows CNI:
    // what another node of its pool read, else another Windows node.
    // A Windows node's pool is its build (compared as such: this runs for every cell, over
    // every node, and naming each node's pool cost a 5,000-node run a twentieth of its probing).
    let pool = cluster
        .nodes
        .iter()
        .find(|n| n.name == node)
        .map(|n| (n.os, n.build.filter(|_| n.os == Os::Windows)));
    let read_on = |same_pool: bool| {
        cluster
            .nodes
            .iter()
            .filter(|n| n.name != node && n.os == Os::Windows)
            .filter(|n| !same_pool || Some((n.os, n.build)) == pool)
            .find_map(|n| cluster.cni_delegates.get(&n.name).and_then(|r| r.as_ref().ok()))
    };
    if let Some(d) = read_on(true).or_else(|| read_on(false)) {
        return Ok(d.delegate.clone());
    }
    let plugin = cluster.report.pod_network.as_ref().map(|p| p.value.as_str());
    let platform = cluster.report.platform.as_ref().map(|p| p.value.as_str());
    // Before HostProcess pods (kubelet < 1.23 or Docker) flannel ran from the 2019 scripts,
    // which delegate host-gw to win-bridge and VXLAN to win-overlay (W14; sig-windows-tools'
    // `Update-CNIConfig`) — the HostProcess-era manifests delegate VXLAN to sdnoverlay instead.
    let scripts_era = cluster
        .nodes
        .iter()
        .find(|n| n.name == node)
        .is_some_and(|n| n.host_process() == Some(false));
    if plugin == Some("flannel") && scripts_era {
        match cluster.network_mode.as_ref().map(|m| m.value.as_str()) {
            Some("l2bridge") => return Ok("win-bridge".into()),
            Some("overlay") => return Ok("win-overlay".into()),
            _ => {}
        }
    }
    let v2 = cluster
        .report
        .service_proxy
        .as_ref()
        .is_some_and(|p| p.value == "anetd");
    Ok(match (plugin, platform) {
        (Some("azure-cni"), _) => "azure-cni",
        (Some("vpc-cni"), _) => "vpc-bridge",
        (Some("calico"), _) => "calico",
        (_, Some("gke")) if !v2 => "sdnbridge",
        _ => return Err(own),
    }
    .to_string())
}

/// The plugin flannel's CNI configuration delegates to, with the file and its `cniVersion`, from
/// the first configuration file the command printed (`# <path>` then the JSON); Err says why
/// there is none (no file at the documented paths, or one that is not flannel's JSON).
pub fn flannel_delegate(text: &str) -> Result<CniDelegate, String> {
    let Some((path, body)) = cni_files(text).into_iter().next() else {
        return Err(
            "flannel's CNI configuration: none at C:\\etc\\cni\\net.d\\10-flannel.conf or C:\\k\\cni\\config\\cni.conf"
                .into(),
        );
    };
    let doc: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| format!("flannel's CNI configuration {path}: not JSON ({e})"))?;
    // A `.conf` is one plugin; a `.conflist` lists them (flannel first, then e.g. portmap).
    let flannel = std::iter::once(&doc)
        .chain(doc.get("plugins").and_then(|p| p.as_array()).into_iter().flatten())
        .find(|p| p.get("type").and_then(|t| t.as_str()) == Some("flannel"))
        .ok_or_else(|| format!("flannel's CNI configuration {path}: no plugin of type flannel"))?;
    let delegate = flannel
        .pointer("/delegate/type")
        .and_then(|t| t.as_str())
        .ok_or_else(|| format!("flannel's CNI configuration {path}: no delegate type"))?;
    Ok(CniDelegate {
        path,
        delegate: delegate.to_string(),
        cni_version: doc.get("cniVersion").and_then(|v| v.as_str()).map(str::to_string),
    })
}

/// What a node's reading adds to its evidence (for the diagnosis): whether the Windows
/// kube-proxy runs there and with what command line — on a platform where it is a node service
/// this is the one sign of it the run has without `--node-diagnostics`. Where another data
/// plane programs Services (`service_proxy`: GKE Dataplane V2's anetd), no kube-proxy.exe is
/// how it should be.
pub fn evidence(readings: &[Reading], node: &str, service_proxy: Option<&str>) -> Vec<EvidenceItem> {
    let Some(r) = readings.iter().find(|r| r.node == node) else {
        return Vec::new();
    };
    let Ok(out) = &r.kube_proxy else {
        return Vec::new();
    };
    let text = match out.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) if flag(line, "hostname-override").is_none() => {
            format!("kube-proxy.exe is running without --hostname-override: {line}")
        }
        Some(line) => format!("kube-proxy.exe is running: {line}"),
        None => match service_proxy.filter(|p| *p != "kube-proxy") {
            Some(proxy) => format!("no kube-proxy.exe on the host, as designed: {proxy} programs Services"),
            None => "kube-proxy.exe is not running (Win32_Process lists no kube-proxy.exe on the host)".to_string(),
        },
    };
    vec![EvidenceItem {
        source: "host Win32_Process".into(),
        text: Excerpt::new(&text),
    }]
}

/// One line saying what the nodes added to the facts (None when they added nothing).
pub fn describe(before: &ClusterFacts, after: &ClusterFacts) -> Option<String> {
    let mut added = Vec::new();
    if after.network_mode != before.network_mode
        && let Some(m) = &after.network_mode
    {
        added.push(format!("network mode {} ({})", m.value, m.source));
    }
    if after.dsr != before.dsr
        && let Some(d) = &after.dsr
    {
        added.push(format!("DSR {} ({})", if d.value { "on" } else { "off" }, d.source));
    }
    if after.win_dsr_gate != before.win_dsr_gate
        && let Some(g) = &after.win_dsr_gate
    {
        added.push(format!("WinDSR gate {}", g.value));
    }
    let versions = after
        .report
        .nodes
        .iter()
        .filter(|(name, n)| {
            n.kube_proxy_version.is_some()
                && before
                    .report
                    .nodes
                    .get(*name)
                    .is_none_or(|b| b.kube_proxy_version.is_none())
        })
        .count();
    if versions > 0 {
        added.push(format!(
            "the Windows kube-proxy's version on {versions} node{}",
            if versions == 1 { "" } else { "s" }
        ));
    }
    for (fact, text) in &after.report.disagreements {
        if !before.report.disagreements.contains_key(fact) {
            added.push(format!("{fact} differs from the API objects: {text}"));
        }
    }
    (!added.is_empty()).then(|| format!("Read on the Windows nodes: {}", added.join("; ")))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::cluster::facts::ClusterNode;

    #[rstest]
    #[case::service("C:\\k\\kube-proxy.exe --v=3 --proxy-mode=kernelspace --enable-dsr=true", Some(true))]
    #[case::bare("kube-proxy.exe --enable-dsr --v=4", Some(true))]
    #[case::off("kube-proxy.exe --enable-dsr=false", Some(false))]
    #[case::default_off("kube-proxy.exe --v=4 --proxy-mode=kernelspace --hostname-override=n1", Some(false))]
    #[case::config_file("kube-proxy.exe --config=C:\\k\\kp.yaml", None)]
    #[case::not_a_prefix("kube-proxy.exe --enable-dsr-probe=1", Some(false))]
    fn dsr_comes_from_the_flag_or_the_default(#[case] line: &str, #[case] dsr: Option<bool>) {
        assert_eq!(dsr_of(line), dsr);
    }

    fn reading(
        node: &str,
        hns: Result<&str, &str>,
        cmdline: Result<&str, &str>,
        version: Result<&str, &str>,
    ) -> Reading {
        Reading {
            node: node.into(),
            hns_types: hns.map(str::to_string).map_err(str::to_string),
            hns_via: "Get-HnsNetwork",
            kube_proxy: cmdline.map(str::to_string).map_err(str::to_string),
            version: version.map(str::to_string).map_err(str::to_string),
            kubelet: Ok("C:\\k\\kubelet.exe --windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS".to_string()),
            cni_conf: Ok(String::new()),
            source_vip: Ok(String::new()),
        }
    }

    fn cluster() -> ClusterFacts {
        let mut f = ClusterFacts::of_nodes(vec![
            ClusterNode::sample("w1", Os::Windows, "10.1.0.11"),
            ClusterNode::sample("w2", Os::Windows, "10.1.0.12"),
        ]);
        for n in ["w1", "w2"] {
            f.report.nodes.insert(n.into(), Default::default());
        }
        f
    }

    /// A node's CNI plugin: its own reading, else another Windows node's; where no node could
    /// read it and no object names the plugin, unknown naming why (the refusal of its probe).
    #[rstest::rstest]
    #[case::own(Ok("win-overlay"), Err("not run: refused"), Ok("win-overlay"))]
    #[case::from_the_other_node(Err("not run: refused"), Ok("win-bridge"), Ok("win-bridge"))]
    #[case::none_read(
        Err("not run: the node-side probe is not usable: Pod Security refused it"),
        Err("not run: refused"),
        Err("its CNI configuration on w1: not run: the node-side probe is not usable: Pod Security refused it")
    )]
    fn a_nodes_plugin_is_read_there_first(
        #[case] w1: Result<&str, &str>,
        #[case] w2: Result<&str, &str>,
        #[case] want: Result<&str, &str>,
    ) {
        let mut f = cluster();
        for (n, r) in [("w1", w1), ("w2", w2)] {
            let read = r
                .map(|d| CniDelegate {
                    path: "C:\\etc\\cni\\net.d\\10-flannel.conf".into(),
                    delegate: d.into(),
                    cni_version: None,
                })
                .map_err(str::to_string);
            f.cni_delegates.insert(n.into(), read);
        }
        assert_eq!(delegate_of(&f, "w1"), want.map(str::to_string).map_err(str::to_string));
    }

    /// A managed platform's node: the mode from the HNS network (not the nat network), DSR and
    /// the gate from kube-proxy's flags, each node's version; a node whose commands failed adds
    /// nothing.
    #[test]
    fn a_node_fills_what_the_api_left_unknown() {
        let mut f = cluster();
        if let Some(n) = f.report.nodes.get_mut("w2") {
            n.kube_proxy_version = Some(Fact::new("v1.32.3".to_string(), "node/w2 status.nodeInfo"));
        }
        let readings = [
            reading(
                "w1",
                Err("not run: exit code 1: Get-HnsNetwork : The term 'Get-HnsNetwork' is not recognized"),
                Err("not run: exit code 1"),
                Err("not run: exit code 1"),
            ),
            reading(
                "w2",
                Ok("nat\r\nL2Tunnel\r\n"),
                Ok("C:\\k\\kube-proxy.exe --v=3 --enable-dsr=true --feature-gates=WinDSR=true\r\n"),
                Ok("Kubernetes v1.31.4\r\n"),
            ),
        ];
        refine(&mut f, &readings);
        let mode = f.network_mode.as_ref().expect("mode");
        assert_eq!(mode.value, "l2tunnel");
        assert_eq!(mode.source, "node w2: Get-HnsNetwork Type L2Tunnel");
        assert_eq!(f.report.network_mode, f.network_mode);
        assert_eq!(f.dsr.as_ref().map(|d| d.value), Some(true));
        assert!(
            f.dsr
                .as_ref()
                .is_some_and(|d| d.source.starts_with("node w2: kube-proxy.exe"))
        );
        assert_eq!(f.win_dsr_gate.as_ref().map(|g| g.value), Some(true));
        assert_eq!(
            f.report.nodes["w2"]
                .kube_proxy_version
                .as_ref()
                .map(|v| v.value.as_str()),
            Some("v1.31.4")
        );
        assert!(f.report.nodes["w1"].kube_proxy_version.is_none());
    }

    /// The node's reading wins over what API objects suggested (an `azure-cni` DaemonSet, a
    /// flannel ConfigMap) and over `--network-mode`; a suggestion it contradicts is kept as a
    /// disagreement, one it confirms is not. Where no node could read, the API's stays.
    #[rstest]
    #[case::azure_cni_name(
        "daemonset kube-system/azure-cni (Azure CNI)",
        "l2tunnel",
        Ok("L2Bridge\r\n"),
        "l2bridge",
        true
    )]
    #[case::flannel_config(
        "kube-flannel/kube-flannel-cfg net-conf.json Backend.Type",
        "overlay",
        Ok("nat\r\nL2Bridge\r\n"),
        "l2bridge",
        true
    )]
    #[case::stated("--network-mode", "overlay", Ok("L2Bridge\r\n"), "l2bridge", true)]
    #[case::agrees(
        "kube-flannel/kube-flannel-cfg net-conf.json Backend.Type",
        "l2bridge",
        Ok("L2Bridge\r\n"),
        "l2bridge",
        false
    )]
    #[case::node_could_not_read(
        "kube-flannel/kube-flannel-cfg net-conf.json Backend.Type",
        "overlay",
        Err("not run: exit code 1"),
        "overlay",
        false
    )]
    fn the_nodes_reading_wins(
        #[case] source: &str,
        #[case] suggested: &str,
        #[case] hns: Result<&str, &str>,
        #[case] want: &str,
        #[case] disagreement: bool,
    ) {
        let mut f = cluster();
        f.network_mode = Some(Fact::new(suggested.to_string(), source));
        f.dsr = Some(Fact::new(
            false,
            "configmap kube-system/kube-proxy-windows winkernel.enableDSR",
        ));
        refine(
            &mut f,
            &[reading(
                "w1",
                hns,
                Ok("kube-proxy.exe --enable-dsr=true"),
                Ok("Kubernetes v1.32.3"),
            )],
        );
        assert_eq!(f.network_mode.as_ref().map(|m| m.value.as_str()), Some(want));
        assert_eq!(
            f.report.disagreements.contains_key("network_mode"),
            disagreement,
            "{:?}",
            f.report.disagreements
        );
        if disagreement {
            let text = &f.report.disagreements["network_mode"];
            assert!(text.contains(source) && text.contains("node w1"), "{text}");
        }
        // The node's kube-proxy command line decides DSR over the ConfigMap.
        assert_eq!(f.dsr.as_ref().map(|d| d.value), Some(true));
        assert!(f.report.disagreements.contains_key("dsr"));
    }

    /// `hnsdiag list networks` in its list and table forms: the types, the host's own networks
    /// included (the judge leaves those out).
    #[rstest]
    #[case::eks("Networks:\r\nName             ID\r\nvpcbr06684cbed472 B5A22566-BEBC-400C-ABEF-B6717DE7AF59\r\nnat              F413E630-CC75-4B89-9ED4-FCD57324153B\r\n", &["L2Bridge (network vpcbr06684cbed472)", "nat (network nat)"])]
    #[case::aks("Networks:\r\nName  ID\r\nazure 9F2E0F00-0000-0000-0000-000000000002\r\n", &["L2Bridge (network azure)"])]
    #[case::flannel_overlay("Networks:\r\nName ID\r\nvxlan0 3A7C0F00-0000-0000-0000-000000000001\r\n", &["Overlay (network vxlan0)"])]
    #[case::calico_says_nothing("Networks:\r\nName ID\r\nCalico 3A7C0F00-0000-0000-0000-000000000001\r\n", &[])]
    #[case::typed("Network : 9F2E-02\r\n    Name : azure\r\n    Type : L2Bridge\r\n", &["L2Bridge"])]
    #[case::empty("", &[])]
    fn hnsdiag_lists_types(#[case] text: &str, #[case] want: &[&str]) {
        assert_eq!(hnsdiag_types(text), want);
    }

    /// A host command's stdout counts whatever stderr says (a progress record on first module
    /// load); a failure or an error with nothing printed does not.
    #[rstest]
    #[case::progress(Some(0), "L2Bridge\r\n", "Preparing modules for first use.\r\n", Ok("L2Bridge\r\n"))]
    #[case::clean(Some(0), "L2Bridge\r\n", "", Ok("L2Bridge\r\n"))]
    #[case::nothing(Some(0), "", "", Ok(""))]
    #[case::error_only(
        Some(0),
        "",
        "Get-HnsNetwork : not recognized\r\n",
        Err("not run: the command wrote an error")
    )]
    #[case::failed(Some(1), "partial\r\n", "boom\r\n", Err("not run: exit code 1: boom"))]
    fn host_output_is_read_from_stdout(
        #[case] code: Option<i32>,
        #[case] stdout: &str,
        #[case] stderr: &str,
        #[case] want: Result<&str, &str>,
    ) {
        match (output_of(code, stdout, stderr), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want),
            (Err(got), Err(want)) => assert!(got.starts_with(want), "{got}"),
            (got, want) => panic!("got {got:?}, want {want:?}"),
        }
    }

    /// The host's process list is evidence: kube-proxy.exe running (with its flags) or not.
    #[rstest]
    #[case::running(
        Ok("C:\\k\\kube-proxy.exe --v=3 --hostname-override=w1\r\n"),
        Some("kube-proxy.exe is running: C:\\k\\kube-proxy.exe --v=3 --hostname-override=w1")
    )]
    #[case::no_override(
        Ok("C:\\k\\kube-proxy.exe --v=3\r\n"),
        Some("kube-proxy.exe is running without --hostname-override: C:\\k\\kube-proxy.exe --v=3")
    )]
    #[case::stopped(
        Ok(""),
        Some("kube-proxy.exe is not running (Win32_Process lists no kube-proxy.exe on the host)")
    )]
    #[case::not_run(Err("not run: exit code 1"), None)]
    fn the_process_list_is_evidence(#[case] out: Result<&str, &str>, #[case] text: Option<&str>) {
        let r = reading("w1", Ok(""), out, Ok(""));
        let items = evidence(std::slice::from_ref(&r), "w1", Some("kube-proxy"));
        assert_eq!(items.first().map(|i| i.text.as_str()), text);
        assert!(evidence(&[], "w1", None).is_empty());
        // Under GKE Dataplane V2 no kube-proxy.exe is the design, never a stopped kube-proxy.
        let dpv2 = evidence(&[r], "w1", Some("anetd"));
        if let Some(item) = dpv2.first() {
            assert!(!item.text.as_str().contains("not running"), "{}", item.text.as_str());
        }
    }

    /// The delegate of flannel's CNI configuration: a `.conf` (sig-windows-tools, the 2019
    /// scripts), a `.conflist` with flannel first, the first file printed; no file, not JSON, no
    /// flannel plugin or no delegate leave it unknown, naming why.
    #[rstest]
    #[case::conf(
        "# C:\\etc\\cni\\net.d\\10-flannel.conf\r\n{\"cniVersion\": \"0.2.0\", \"type\": \"flannel\",\r\n \"delegate\": {\"type\": \"win-overlay\"}}\r\n",
        Ok(("C:\\etc\\cni\\net.d\\10-flannel.conf", "win-overlay", Some("0.2.0")))
    )]
    #[case::conflist(
        "# C:\\k\\cni\\config\\cni.conf\n{\"name\": \"cbr0\", \"cniVersion\": \"0.3.1\", \"plugins\": [{\"type\": \"flannel\", \"delegate\": {\"type\": \"win-bridge\"}}, {\"type\": \"portmap\"}]}\n# C:\\other.conf\n{}",
        Ok(("C:\\k\\cni\\config\\cni.conf", "win-bridge", Some("0.3.1")))
    )]
    #[case::none("", Err("none at"))]
    #[case::not_json("# C:\\etc\\cni\\net.d\\10-flannel.conf\n{\"type\": ", Err("not JSON"))]
    #[case::not_flannel(
        "# C:\\etc\\cni\\net.d\\10-flannel.conf\n{\"type\": \"win-bridge\"}",
        Err("no plugin of type flannel")
    )]
    #[case::no_delegate(
        "# C:\\etc\\cni\\net.d\\10-flannel.conf\n{\"type\": \"flannel\"}",
        Err("no delegate type")
    )]
    fn flannels_delegate_is_read_from_its_configuration(
        #[case] text: &str,
        #[case] want: Result<(&str, &str, Option<&str>), &str>,
    ) {
        match (flannel_delegate(text), want) {
            (Ok(d), Ok((path, delegate, version))) => {
                assert_eq!(d.path, path);
                assert_eq!(d.delegate, delegate);
                assert_eq!(d.cni_version.as_deref(), version);
            }
            (Err(e), Err(part)) => assert!(e.contains(part), "{e}"),
            (got, want) => panic!("got {got:?}, want {want:?}"),
        }
    }

    #[rstest]
    #[case("Kubernetes v1.32.3\r\n", Some("v1.32.3"))]
    #[case("Kubernetes v1.35.0-rc.1", Some("v1.35.0-rc.1"))]
    #[case("", None)]
    #[case("garbage", None)]
    fn versions(#[case] text: &str, #[case] want: Option<&str>) {
        assert_eq!(version_of(text).as_deref(), want);
    }

    /// The node's CNI plugin, whatever the pod network: flannel's delegate, Azure CNI's
    /// azure-vnet, GKE's sdnbridge, EKS's vpc-bridge; nothing printed or not JSON leaves it
    /// unknown.
    #[rstest]
    #[case::flannel_sdnoverlay(
        "# C:\\etc\\cni\\net.d\\10-flannel.conf\n{\"type\": \"flannel\", \"delegate\": {\"type\": \"sdnoverlay\"}}\n",
        Ok("sdnoverlay")
    )]
    #[case::aks(
        "# C:\\k\\azurecni\\netconf\\10-azure.conflist\n{\"cniVersion\": \"0.3.0\", \"name\": \"azure\", \"plugins\": [{\"type\": \"azure-vnet\", \"mode\": \"bridge\"}]}\n",
        Ok("azure-cni")
    )]
    #[case::gke(
        "# C:\\etc\\kubernetes\\cni\\config\\l2bridge.conf\n{\"cniVersion\": \"0.2.0\", \"name\": \"l2bridge\", \"type\": \"sdnbridge\"}\n",
        Ok("sdnbridge")
    )]
    #[case::eks(
        "# C:\\ProgramData\\Amazon\\EKS\\cni\\config\\vpc-bridge.conf\n{\"type\": \"vpc-bridge\"}\n",
        Ok("vpc-bridge")
    )]
    #[case::none("", Err("none at"))]
    #[case::not_json("# C:\\k\\azurecni\\netconf\\10-azure.conflist\n{", Err("not JSON"))]
    fn the_nodes_cni_plugin_is_read(#[case] text: &str, #[case] want: Result<&str, &str>) {
        match (cni_delegate(text), want) {
            (Ok(d), Ok(w)) => assert_eq!(d.delegate, w),
            (Err(e), Err(w)) => assert!(e.contains(w), "{e}"),
            (got, want) => panic!("got {got:?}, want {want:?}"),
        }
    }

    /// The source VIP file kube-proxy keeps (HostProcess layout first, then the 2019 scripts');
    /// none on a node that keeps none.
    #[rstest]
    #[case::hostprocess("# C:\\sourcevip\\sourceVip.json\n{\n  \"cniVersion\": \"0.2.0\",\n  \"ip4\": {\"ip\": \"10.244.2.254/24\", \"gateway\": \"10.244.2.1\"}\n}\n", Ok(Some(("C:\\sourcevip\\sourceVip.json", "10.244.2.254"))))]
    #[case::scripts("# C:\\k\\SourceVip.json\n{\"ip4\": {\"ip\": \"10.244.102.254/24\"}}\n", Ok(Some(("C:\\k\\SourceVip.json", "10.244.102.254"))))]
    #[case::none("", Ok(None))]
    #[case::no_address("# C:\\k\\SourceVip.json\n{}\n", Err("names no address"))]
    fn the_source_vip_is_read_from_its_file(#[case] text: &str, #[case] want: Result<Option<(&str, &str)>, &str>) {
        match (source_vip(text), want) {
            (Ok(got), Ok(want)) => assert_eq!(
                got.map(|v| (v.path, v.ip)),
                want.map(|(p, i)| (p.to_string(), i.to_string()))
            ),
            (Err(e), Err(part)) => assert!(e.contains(part), "{e}"),
            (got, want) => panic!("{got:?} for {want:?}"),
        }
    }
}
