//! Simulated container commands: what an exec'd command answers in a Linux, Windows or HostProcess
//! container (derived from the node profile, the pod, the image and the store), and the node-disk
//! view of pods' secret and configMap volumes (SEC-SECRET-AT-REST).
//!
//! [`SimRuntime`] looks `argv[0]` up in the command table of the container's OS, keeping only
//! what the image ships (no PowerShell in nanoserver, nothing at all in `pause`), and runs the
//! handler of that command family. A missing executable fails the way the runtime reports it:
//! an OCI error from runc on Linux, an HCS error on Windows. Shells (`sh -c`, `cmd /c`,
//! `powershell -Command`, `pwsh -c`) interpret their command line with the same tables, with
//! `&&`, `||`, `;`/`&` and `|` chaining and the common redirections. Each shell then reports a
//! missing command the way that shell does.
//!
//! Network commands (`agnhost connect`, `curl`, `wget`, `nc`, `nslookup`, `dig`, `ping`,
//! `Resolve-DnsName`, `Test-NetConnection`) are answered by [`crate::node::exec::nettools`] over the wire that
//! [`NetworkCommands`] supplies. Without one they fail the way a container with no reachable
//! network does: every connection and every DNS query times out (the exact messages are listed
//! on [`NetworkCommands`]).
//!
//! sh understands `if`/`elif`/`else`, `( … )` subshells, `{ …; }` groups and `!`; cmd
//! understands `( … )` groups. Redirections write files: into the pod's emptyDir volumes (seen
//! by its other containers), the node's disk through hostPath, or the container's own layer,
//! as [`crate::node::exec::volumes`] places them; a `readOnly` mount or an API-data volume refuses the write
//! the way each shell reports it (STO-READONLY-VOLUME: cmd's `Access is denied.`).
//!
//! Limits: only redirections write (no `cp`, `mkdir`, `touch`), `$( … )` is not substituted,
//! `sleep` returns at once, and only the PowerShell cmdlets in the cmdlet table exist.

pub mod echo;
pub mod nettools;
pub mod network;
pub mod volumes;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use base64::Engine as _;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use self::nettools::{Offline, Wire};

mod powershell;
use self::volumes::{
    MountPoint, MountSource, Place, VolumeStore, WINDOWS_HOSTS, WINDOWS_HOSTS_PATH, WriteTarget, Writer, linux_path,
    win_path,
};
use crate::config::profile::NodeProfile;
use crate::config::topology::Os;
use crate::network::dns::{self, DnsConfig};
use crate::node::runtime::{ContainerRuntime, ExecFuture, ExecOutput, ExecRequest, ExitStatus};
use crate::store::resources;
use crate::store::{Obj, Store};
use crate::vocab::json;
use crate::vocab::pod::find_container;
use crate::vocab::quantity::Quantity;

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

/// Answers exec'd commands in simulated containers, per image and OS.
#[derive(Debug, Clone)]
pub struct SimRuntime {
    store: Arc<Store>,
    profiles: Arc<Vec<NodeProfile>>,
    network: Option<Arc<dyn NetworkCommands>>,
    volumes: Arc<VolumeStore>,
}

impl SimRuntime {
    /// A runtime answering for the pods in `store` on the nodes in `profiles` (looked up by
    /// `spec.nodeName`).
    pub fn new(store: Arc<Store>, profiles: Arc<Vec<NodeProfile>>) -> Self {
        Self {
            store,
            profiles,
            network: None,
            volumes: Arc::new(VolumeStore::new()),
        }
    }

    /// Keeps what commands write in `volumes` (shared with the kubelets, [`crate::node::exec::volumes`]).
    #[must_use]
    pub fn with_volumes(mut self, volumes: Arc<VolumeStore>) -> Self {
        self.volumes = volumes;
        self
    }

    /// Routes network commands to `network` (the network fabric).
    #[must_use]
    pub fn with_network(mut self, network: Arc<dyn NetworkCommands>) -> Self {
        self.network = Some(network);
        self
    }

    /// What a command in `container` of `pod` sees.
    pub fn context(&self, pod: Obj, container: &str) -> CommandContext {
        CommandContext::new(self.store.clone(), &self.profiles, pod, container).with_volumes(self.volumes.clone())
    }
}

impl ContainerRuntime for SimRuntime {
    fn exec(&self, request: ExecRequest) -> ExecFuture {
        let ctx = self.context(request.pod.clone(), &request.container);
        if ctx.container_spec().is_none() {
            let message = format!("container not found ({:?})", request.container);
            return Box::pin(std::future::ready(runtime_error(message)));
        }
        let windows = ctx.is_windows();
        let session = Arc::new(Session::new(ctx, self.network.clone(), &request.command));
        let call = Call {
            env: session.env.clone(),
            argv: request.command,
            stdin: request.stdin.unwrap_or_default(),
        };
        let tty = request.tty;
        let running = run_top(session, call);
        Box::pin(async move {
            let out = running.await;
            if tty { through_tty(out, windows) } else { out }
        })
    }
}

/// The seam for network commands (`agnhost connect`, `curl`, `wget`, `nc`, `nslookup`, `dig`,
/// `ping`, `Resolve-DnsName`, `Test-NetConnection`), which the network fabric implements.
///
/// The commands themselves are parsed and rendered by [`nettools::run`]; the seam only supplies
/// the [`Wire`] that answers one container's lookups, connections, HTTP requests, UDP exchanges
/// and pings. Without a network the wire is [`Offline`]: every connection and DNS query times
/// out, so `agnhost connect` prints `TIMEOUT` (an IP) or `DNS: lookup …: i/o timeout` (a name)
/// and exits 1; `curl` exits 28; busybox `wget`/`nc`/`ping` print `bad address 'NAME'` or a
/// timeout and exit 1; `nslookup` and `dig` report that no server could be reached;
/// `Resolve-DnsName` fails with the timeout error; `Test-NetConnection` reports
/// `TcpTestSucceeded : False`.
pub trait NetworkCommands: Send + Sync + std::fmt::Debug {
    /// The wire a command in the container `ctx` talks through.
    fn wire<'a>(&'a self, ctx: &'a CommandContext) -> Box<dyn Wire + 'a>;
}

/// What a command sees: the pod, container, image, node profile, effective OS, whether the
/// container is HostProcess, and read access to the store.
#[derive(Debug, Clone)]
pub struct CommandContext {
    pub pod: Obj,
    pub container: String,
    /// The container's image reference.
    pub image: String,
    /// The profile of the pod's node (None while the pod is not bound to a known node).
    pub node: Option<NodeProfile>,
    /// The container's OS: its node's OS (`spec.os.name` when there is no node).
    pub os: Os,
    /// Whether the container runs as a Windows HostProcess container on its node.
    pub host_process: bool,
    pub store: Arc<Store>,
    /// What containers wrote to volumes, layers and node disks.
    pub volumes: Arc<VolumeStore>,
}

impl CommandContext {
    /// The context of `container` in `pod`, with the node looked up in `profiles`.
    pub fn new(store: Arc<Store>, profiles: &[NodeProfile], pod: Obj, container: &str) -> Self {
        let value = pod.value();
        let on = crate::config::profile::placement(profiles, value, container);
        let (node, os, host_process) = (on.node.cloned(), on.os, on.host_process);
        let image = find_container(value, container)
            .map(|c| json::str(c, "/image").to_string())
            .unwrap_or_default();
        Self {
            pod,
            container: container.to_string(),
            image,
            node,
            os,
            host_process,
            store,
            volumes: Arc::new(VolumeStore::new()),
        }
    }

    /// Reads and writes files through `volumes`.
    #[must_use]
    pub fn with_volumes(mut self, volumes: Arc<VolumeStore>) -> Self {
        self.volumes = volumes;
        self
    }

    pub fn is_windows(&self) -> bool {
        self.os == Os::Windows
    }

    /// The container's spec (in `containers`, `initContainers` or `ephemeralContainers`).
    pub fn container_spec(&self) -> Option<&Value> {
        find_container(self.pod.value(), &self.container)
    }

    fn spec(&self) -> &Value {
        self.pod.value().get("spec").unwrap_or(&Value::Null)
    }

    fn namespace(&self) -> &str {
        self.pod.namespace()
    }

    /// Whether the container shares its node's network namespace: `hostNetwork` on Linux, a
    /// HostProcess container on Windows (plain Windows pods ignore `hostNetwork`).
    pub fn host_network(&self) -> bool {
        if self.is_windows() {
            self.host_process
        } else {
            json::bool(self.spec(), "/hostNetwork") == Some(true)
        }
    }

    /// What `hostname` prints: the node's name on the host network, else `spec.hostname` or the
    /// pod name (cut to 63 characters as the kubelet does).
    pub fn hostname(&self) -> String {
        if self.host_network()
            && let Some(node) = &self.node
        {
            return node.name.clone();
        }
        let name = match json::str(self.spec(), "/hostname") {
            "" => self.pod.name(),
            h => h,
        };
        let cut: String = name.chars().take(63).collect();
        cut.trim_end_matches(['-', '.']).to_string()
    }

    /// The Windows computer name: the host name in upper case, cut to 15 characters (NetBIOS).
    fn computer_name(&self) -> String {
        self.hostname().to_uppercase().chars().take(15).collect()
    }

    /// The container's IP: `status.podIP`, or the node's address on the host network.
    pub fn pod_ip(&self) -> String {
        match json::str(self.pod.value(), "/status/podIP") {
            "" if self.host_network() => self.node.as_ref().map(|n| n.ip.to_string()).unwrap_or_default(),
            ip => ip.to_string(),
        }
    }

    /// The runtime's id of this container (stable for a pod uid and container name).
    pub fn container_id(&self) -> String {
        hex_id(&["container", self.pod.uid(), &self.container])
    }

    /// Where a HostProcess container's image and volumes are (`$env:CONTAINER_SANDBOX_MOUNT_POINT`).
    pub fn sandbox_mount_point(&self) -> String {
        format!("C:\\C\\{}\\", self.container_id())
    }

    /// The container's resolver configuration (see [`dns::container_dns`]).
    pub fn dns(&self) -> DnsConfig {
        dns::container_dns(&self.dns_asker())
    }

    fn dns_asker(&self) -> dns::Asker<'_> {
        dns::Asker {
            spec: self.spec(),
            namespace: self.namespace(),
            node: self.node.as_ref(),
            windows: self.is_windows(),
            host_process: self.host_process,
        }
    }

    /// The effective Windows user: `runAsUserName` of the container, else of the pod, else the
    /// image's default (HostProcess: `NT AUTHORITY\SYSTEM`). A kubelet before 1.17 (the
    /// `WindowsRunAsUserName` gate was alpha, off, in 1.16 and the field did not exist before)
    /// ignores `runAsUserName`, as the process model does (SEC-RUNASUSERNAME).
    pub fn windows_user(&self) -> String {
        let honoured = self.node.as_ref().is_none_or(|n| n.kubelet >= (1, 17));
        let run_as = |v: &'_ Value| -> String {
            if honoured {
                json::str(v, "/securityContext/windowsOptions/runAsUserName").to_string()
            } else {
                String::new()
            }
        };
        let container = self.container_spec().map(run_as).unwrap_or_default();
        let pod = run_as(self.spec());
        let (container, pod) = (container.as_str(), pod.as_str());
        match (container, pod) {
            ("", "") if self.host_process => "NT AUTHORITY\\SYSTEM".into(),
            ("", "") => image_kind(&self.image).default_windows_user().into(),
            ("", p) => p.into(),
            (c, _) => c.into(),
        }
    }

    /// The Linux uid, gid and supplementary groups (`runAsUser`/`runAsGroup` of the container,
    /// else of the pod, else root; `fsGroup` and `supplementalGroups` added).
    fn linux_ids(&self) -> (i64, i64, Vec<i64>) {
        let container = self.container_spec().cloned().unwrap_or(Value::Null);
        let pick = |field: &str| {
            container
                .pointer(&format!("/securityContext/{field}"))
                .or_else(|| self.spec().pointer(&format!("/securityContext/{field}")))
                .and_then(Value::as_i64)
        };
        let uid = pick("runAsUser").unwrap_or(0);
        let gid = pick("runAsGroup").unwrap_or(0);
        let mut groups = vec![gid];
        let extra = self.spec().pointer("/securityContext/fsGroup").and_then(Value::as_i64);
        for g in extra.into_iter().chain(
            json::array(self.spec(), "/securityContext/supplementalGroups")
                .iter()
                .filter_map(Value::as_i64),
        ) {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        (uid, gid, groups)
    }

    /// The environment the container's processes get: the image's and runtime's variables, the
    /// Kubernetes service variables, `envFrom` and `env` (with `valueFrom` resolved from the store).
    pub fn env(&self) -> Vec<(String, String)> {
        let windows = self.is_windows();
        let mut env = EnvBuilder::new(windows);
        if windows {
            for (k, v) in self.windows_base_env() {
                env.set(k, v);
            }
        } else {
            env.set(
                "PATH".into(),
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
            );
            env.set("HOSTNAME".into(), self.hostname());
        }
        for (k, v) in self.kube_env() {
            env.set(k, v);
        }
        if !windows && env.get("HOME").is_none() {
            let home = if self.linux_ids().0 == 0 { "/root" } else { "/" };
            env.set("HOME".into(), home.into());
        }
        env.into_vars()
    }

    fn windows_base_env(&self) -> Vec<(String, String)> {
        let user = WinUser::parse(&self.windows_user(), &self.computer_name());
        let profile = user.profile();
        let cpus = self
            .node
            .as_ref()
            .and_then(|n| n.capacity.get("cpu"))
            .and_then(|c| Quantity::parse(c))
            .map_or(1, Quantity::value);
        let arch = match self.node.as_ref().map(|n| n.arch.as_str()) {
            Some("arm64") => "ARM64",
            _ => "AMD64",
        };
        let mut vars: Vec<(&str, String)> = vec![
            ("ALLUSERSPROFILE", "C:\\ProgramData".into()),
            ("APPDATA", format!("{profile}\\AppData\\Roaming")),
            ("CommonProgramFiles", "C:\\Program Files\\Common Files".into()),
            (
                "CommonProgramFiles(x86)",
                "C:\\Program Files (x86)\\Common Files".into(),
            ),
            ("CommonProgramW6432", "C:\\Program Files\\Common Files".into()),
            ("COMPUTERNAME", self.computer_name()),
            ("ComSpec", "C:\\Windows\\system32\\cmd.exe".into()),
            ("DriverData", "C:\\Windows\\System32\\Drivers\\DriverData".into()),
            ("LOCALAPPDATA", format!("{profile}\\AppData\\Local")),
            ("NUMBER_OF_PROCESSORS", cpus.to_string()),
            ("OS", "Windows_NT".into()),
            (
                "Path",
                format!(
                    "C:\\Windows\\system32;C:\\Windows;C:\\Windows\\System32\\Wbem;\
                     C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\;{profile}\\AppData\\Local\\Microsoft\\WindowsApps"
                ),
            ),
            (
                "PATHEXT",
                ".COM;.EXE;.BAT;.CMD;.VBS;.VBE;.JS;.JSE;.WSF;.WSH;.MSC".into(),
            ),
            ("PROCESSOR_ARCHITECTURE", arch.into()),
            ("ProgramData", "C:\\ProgramData".into()),
            ("ProgramFiles", "C:\\Program Files".into()),
            ("ProgramFiles(x86)", "C:\\Program Files (x86)".into()),
            ("ProgramW6432", "C:\\Program Files".into()),
            ("PROMPT", "$P$G".into()),
            ("PUBLIC", "C:\\Users\\Public".into()),
            ("SystemDrive", "C:".into()),
            ("SystemRoot", "C:\\Windows".into()),
            ("TEMP", format!("{profile}\\AppData\\Local\\Temp")),
            ("TMP", format!("{profile}\\AppData\\Local\\Temp")),
            ("USERDOMAIN", user.env_domain()),
            ("USERNAME", user.env_name()),
            ("USERPROFILE", profile.clone()),
            ("windir", "C:\\Windows".into()),
        ];
        if self.host_process {
            vars.push(("CONTAINER_SANDBOX_MOUNT_POINT", self.sandbox_mount_point()));
        }
        vars.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// The variables the kubelet sets: `envFrom`, `env` (with `$(VAR)` references expanded) and
    /// the service variables.
    fn kube_env(&self) -> Vec<(String, String)> {
        let windows = self.is_windows();
        let services = self.service_env();
        let mut vars = EnvBuilder::new(windows);
        let Some(container) = self.container_spec() else {
            return services;
        };
        let ns = self.namespace();
        for source in json::array(container, "/envFrom") {
            let prefix = json::str(source, "/prefix");
            let data = if let Some(cm) = source.get("configMapRef") {
                config_map_data(&self.store, ns, json::str(cm, "/name"))
            } else if let Some(secret) = source.get("secretRef") {
                secret_data(&self.store, ns, json::str(secret, "/name"))
            } else {
                None
            };
            for (k, v) in data.unwrap_or_default() {
                vars.set(format!("{prefix}{k}"), String::from_utf8_lossy(&v).into_owned());
            }
        }
        for e in json::array(container, "/env") {
            let name = json::str(e, "/name");
            let value = match e.get("valueFrom") {
                Some(from) => self.value_from(from),
                None => {
                    let text = json::str(e, "/value");
                    if text.contains('$') {
                        let known: Vec<(String, String)> = vars.vars.iter().chain(services.iter()).cloned().collect();
                        Some(expand_refs(text, &known))
                    } else {
                        Some(text.to_string())
                    }
                }
            };
            if let Some(value) = value {
                vars.set(name.to_string(), value);
            }
        }
        for (k, v) in services {
            if vars.get(&k).is_none() {
                vars.set(k, v);
            }
        }
        vars.into_vars()
    }

    fn value_from(&self, from: &Value) -> Option<String> {
        let ns = self.namespace();
        if let Some(field) = from.get("fieldRef") {
            return field_ref(self.pod.value(), json::str(field, "/fieldPath"));
        }
        if let Some(res) = from.get("resourceFieldRef") {
            return resource_field(self.pod.value(), &self.container, res, self.node.as_ref());
        }
        let (data, sel) = if let Some(sel) = from.get("secretKeyRef") {
            (secret_data(&self.store, ns, json::str(sel, "/name")), sel)
        } else {
            let sel = from.get("configMapKeyRef")?;
            (config_map_data(&self.store, ns, json::str(sel, "/name")), sel)
        };
        data?
            .remove(json::str(sel, "/key"))
            .map(|v| String::from_utf8_lossy(&v).into_owned())
    }

    /// `<SVC>_SERVICE_HOST` and friends for the services of the pod's namespace (when
    /// `enableServiceLinks`) and the `kubernetes` service, as they were when the pod started.
    fn service_env(&self) -> Vec<(String, String)> {
        let services = resources::core("services");
        let mut list: Vec<Obj> = Vec::new();
        if json::bool(self.spec(), "/enableServiceLinks") != Some(false) {
            list.extend(self.store.list(services, Some(self.namespace())).0);
        }
        if let Ok(master) = self.store.get(services, "default", "kubernetes")
            && !list.iter().any(|s| s.uid() == master.uid())
        {
            list.push(master);
        }
        let started = json::str(self.pod.value(), "/status/startTime");
        let mut env = Vec::new();
        for svc in list {
            let v = svc.value();
            let ip = json::str(v, "/spec/clusterIP");
            let created = json::str(v, "/metadata/creationTimestamp");
            if ip.is_empty() || ip == "None" || (!started.is_empty() && created > started) {
                continue;
            }
            let name = svc.name().to_uppercase().replace('-', "_");
            let ports = json::array(v, "/spec/ports");
            env.push((format!("{name}_SERVICE_HOST"), ip.to_string()));
            for (i, port) in ports.iter().enumerate() {
                let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
                let proto = match json::str(port, "/protocol") {
                    "" => "TCP",
                    p => p,
                };
                let url = format!("{}://{ip}:{number}", proto.to_lowercase());
                if i == 0 {
                    env.push((format!("{name}_SERVICE_PORT"), number.to_string()));
                    env.push((format!("{name}_PORT"), url.clone()));
                }
                let port_name = json::str(port, "/name");
                if !port_name.is_empty() {
                    let suffix = port_name.to_uppercase().replace('-', "_");
                    env.push((format!("{name}_SERVICE_PORT_{suffix}"), number.to_string()));
                }
                let base = format!("{name}_PORT_{number}_{proto}");
                env.push((base.clone(), url));
                env.push((format!("{base}_PROTO"), proto.to_lowercase()));
                env.push((format!("{base}_PORT"), number.to_string()));
                env.push((format!("{base}_ADDR"), ip.to_string()));
            }
        }
        env
    }
}

/// The files a node's disk holds for pods' secret and configMap volumes: path → content.
///
/// Windows writes every API-data volume (secret, configMap, projected, downwardAPI) as plain
/// files under the kubelet root, `C:\var\lib\kubelet\pods\<podUID>\volumes\kubernetes.io~<plugin>\<volume>\<key>`,
/// with the decoded data in clear text (SEC-SECRET-AT-REST). Linux keeps secret, projected and
/// downwardAPI volumes on tmpfs, so only configMap volumes reach its disk (under
/// `/var/lib/kubelet/pods/…`). Pods that finished (Succeeded, Failed) have had their volumes
/// cleaned up.
pub fn node_volume_files(store: &Store, node: &NodeProfile) -> BTreeMap<String, Vec<u8>> {
    let windows = node.is_windows();
    let mut files = BTreeMap::new();
    let (pods, _) = store.list(resources::core("pods"), None);
    for pod in pods {
        let v = pod.value();
        if json::str(v, "/spec/nodeName") != node.name
            || matches!(json::str(v, "/status/phase"), "Succeeded" | "Failed")
        {
            continue;
        }
        for volume in pod_volumes(store, v) {
            let data = volume_data(store, v, &volume, Some(node));
            let Some(plugin) = data.kind.plugin_dir() else {
                continue;
            };
            if !windows && data.kind != VolumeKind::ConfigMap {
                continue;
            }
            let (root, sep) = if windows {
                ("C:\\var\\lib\\kubelet\\pods", "\\")
            } else {
                ("/var/lib/kubelet/pods", "/")
            };
            let dir = [root, pod.uid(), "volumes", plugin, json::str(&volume, "/name")].join(sep);
            for (rel, content, _) in data.files {
                let rel = if windows { rel.replace('/', "\\") } else { rel };
                files.insert(format!("{dir}{sep}{rel}"), content);
            }
        }
    }
    files
}

// ---------------------------------------------------------------------------------------------
// JSON and small helpers
// ---------------------------------------------------------------------------------------------

/// A 64-hex-digit id, stable for its parts (FNV-1a, four salts).
fn hex_id(parts: &[&str]) -> String {
    let mut out = String::with_capacity(64);
    for salt in 0u8..4 {
        let mut hasher = crate::vocab::hash::Fnv::default();
        hasher.write(&[salt]);
        for p in parts {
            hasher.write(p.as_bytes()).write(&[0]);
        }
        let _ = write!(out, "{:016x}", hasher.finish());
    }
    out
}

fn b64_decode(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .unwrap_or_else(|_| text.as_bytes().to_vec())
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// An environment being assembled: a later value of a name replaces the earlier one in place,
/// names compared as the OS compares them (case-insensitively on Windows). Indexed, because a
/// namespace with many Services gives every container thousands of service variables.
struct EnvBuilder {
    vars: Vec<(String, String)>,
    index: HashMap<String, usize>,
    windows: bool,
}

impl EnvBuilder {
    fn new(windows: bool) -> Self {
        Self {
            vars: Vec::new(),
            index: HashMap::new(),
            windows,
        }
    }

    fn key(&self, name: &str) -> String {
        if self.windows {
            name.to_ascii_lowercase()
        } else {
            name.to_string()
        }
    }

    fn set(&mut self, name: String, value: String) {
        match self.index.entry(self.key(&name)) {
            std::collections::hash_map::Entry::Occupied(e) => self.vars[*e.get()].1 = value,
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(self.vars.len());
                self.vars.push((name, value));
            }
        }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.index.get(&self.key(name)).map(|&i| self.vars[i].1.as_str())
    }

    fn into_vars(self) -> Vec<(String, String)> {
        self.vars
    }
}

fn env_get<'a>(env: &'a [(String, String)], name: &str, windows: bool) -> Option<&'a str> {
    env.iter()
        .find(|(k, _)| {
            if windows {
                k.eq_ignore_ascii_case(name)
            } else {
                k == name
            }
        })
        .map(|(_, v)| v.as_str())
}

fn env_set(env: &mut Vec<(String, String)>, name: &str, value: String, windows: bool) {
    match env.iter_mut().find(|(k, _)| {
        if windows {
            k.eq_ignore_ascii_case(name)
        } else {
            k == name
        }
    }) {
        Some(slot) => slot.1 = value,
        None => env.push((name.to_string(), value)),
    }
}

/// Expands the kubelet's `$(VAR)` references (`$$` escapes a dollar; unknown stay literal).
fn expand_refs(text: &str, known: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match known.iter().rev().find(|(k, _)| k == name) {
                Some((_, v)) => out.push_str(v),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A downward-API field of the pod.
fn field_ref(pod: &Value, path: &str) -> Option<String> {
    let map_lines = |pointer: &str| {
        pod.pointer(pointer)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={:?}", v.as_str().unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    };
    let key_of = |prefix: &str| {
        path.strip_prefix(prefix)
            .and_then(|r| r.strip_suffix("']"))
            .map(str::to_string)
    };
    let ips = |pointer: &str| {
        json::array(pod, pointer)
            .iter()
            .map(|i| json::str(i, "/ip"))
            .collect::<Vec<_>>()
            .join(",")
    };
    Some(match path {
        "metadata.name" => json::str(pod, "/metadata/name").into(),
        "metadata.namespace" => json::str(pod, "/metadata/namespace").into(),
        "metadata.uid" => json::str(pod, "/metadata/uid").into(),
        "metadata.labels" => map_lines("/metadata/labels"),
        "metadata.annotations" => map_lines("/metadata/annotations"),
        "spec.nodeName" => json::str(pod, "/spec/nodeName").into(),
        "spec.serviceAccountName" => json::str(pod, "/spec/serviceAccountName").into(),
        "status.hostIP" => json::str(pod, "/status/hostIP").into(),
        "status.podIP" => json::str(pod, "/status/podIP").into(),
        "status.hostIPs" => ips("/status/hostIPs"),
        "status.podIPs" => ips("/status/podIPs"),
        _ => {
            if let Some(key) = key_of("metadata.labels['") {
                json::str(
                    pod,
                    &format!("/metadata/labels/{}", key.replace('~', "~0").replace('/', "~1")),
                )
                .into()
            } else if let Some(key) = key_of("metadata.annotations['") {
                json::str(
                    pod,
                    &format!("/metadata/annotations/{}", key.replace('~', "~0").replace('/', "~1")),
                )
                .into()
            } else {
                return None;
            }
        }
    })
}

/// A downward-API resource field: the container's limit or request, the node's allocatable
/// when no limit is set; CPU in whole cores rounded up (or millicores with divisor `1m`).
fn resource_field(pod: &Value, container: &str, sel: &Value, node: Option<&NodeProfile>) -> Option<String> {
    let name = match json::str(sel, "/containerName") {
        "" => container,
        n => n,
    };
    let resource = json::str(sel, "/resource");
    let (kind, what) = resource.split_once('.')?;
    let c = find_container(pod, name)?;
    let declared = c
        .pointer(&format!("/resources/{kind}/{}", what.replace('/', "~1")))
        .or_else(|| {
            c.pointer(&format!("/resources/limits/{}", what.replace('/', "~1")))
                .filter(|_| kind == "requests")
        })
        .and_then(Quantity::from_json);
    let quantity = declared.or_else(|| {
        node.and_then(|n| n.allocatable.get(what))
            .and_then(|q| Quantity::parse(q))
    })?;
    let divisor = sel
        .get("divisor")
        .and_then(Quantity::from_json)
        .filter(|d| d.0 > 0)
        .unwrap_or(Quantity(1000));
    let value = quantity.0.saturating_add(divisor.0 - 1).div_euclid(divisor.0);
    Some(value.to_string())
}

fn secret_data(store: &Store, ns: &str, name: &str) -> Option<BTreeMap<String, Vec<u8>>> {
    let secret = store.get(resources::core("secrets"), ns, name).ok()?;
    let data = secret.value().get("data").and_then(Value::as_object);
    Some(
        data.into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), b64_decode(v.as_str().unwrap_or(""))))
            .collect(),
    )
}

fn config_map_data(store: &Store, ns: &str, name: &str) -> Option<BTreeMap<String, Vec<u8>>> {
    let cm = store.get(resources::core("configmaps"), ns, name).ok()?;
    let v = cm.value();
    let text = v.get("data").and_then(Value::as_object).into_iter().flatten();
    let binary = v.get("binaryData").and_then(Value::as_object).into_iter().flatten();
    Some(
        text.map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").as_bytes().to_vec()))
            .chain(binary.map(|(k, v)| (k.clone(), b64_decode(v.as_str().unwrap_or("")))))
            .collect(),
    )
}

fn runtime_error(message: String) -> ExecOutput {
    ExecOutput {
        stdout: Vec::new(),
        stderr: Vec::new(),
        exit: ExitStatus::Error(message),
    }
}

fn out(stdout: impl Into<Vec<u8>>, stderr: impl Into<Vec<u8>>, code: i32) -> ExecOutput {
    ExecOutput {
        stdout: stdout.into(),
        stderr: stderr.into(),
        exit: ExitStatus::Code(code),
    }
}

fn code_of(o: &ExecOutput) -> i32 {
    match o.exit {
        ExitStatus::Code(c) => c,
        ExitStatus::Error(_) => 126,
    }
}

/// A TTY has one stream; on Linux the pty turns `\n` into `\r\n`.
fn through_tty(mut o: ExecOutput, windows: bool) -> ExecOutput {
    let mut merged = std::mem::take(&mut o.stdout);
    merged.append(&mut o.stderr);
    if !windows {
        let mut converted = Vec::with_capacity(merged.len());
        let mut prev = 0u8;
        for b in merged {
            if b == b'\n' && prev != b'\r' {
                converted.push(b'\r');
            }
            converted.push(b);
            prev = b;
        }
        merged = converted;
    }
    o.stdout = merged;
    o
}

/// A Windows account: `DOMAIN\user` or a container account of the `User Manager`.
struct WinUser {
    domain: String,
    name: String,
    computer: String,
}

impl WinUser {
    fn parse(user: &str, computer: &str) -> Self {
        let (domain, name) = user.rsplit_once('\\').unwrap_or(("", user));
        Self {
            domain: domain.to_string(),
            name: name.to_string(),
            computer: computer.to_string(),
        }
    }

    fn nt_authority(&self) -> bool {
        self.domain.eq_ignore_ascii_case("NT AUTHORITY")
    }

    /// What `whoami` prints.
    fn whoami(&self) -> String {
        let domain = if self.domain.is_empty() {
            "User Manager"
        } else {
            &self.domain
        };
        format!("{domain}\\{}", self.name).to_lowercase()
    }

    /// `%USERNAME%`: the machine account for SYSTEM, the account name otherwise.
    fn env_name(&self) -> String {
        match self.name.to_ascii_lowercase().as_str() {
            "system" if self.nt_authority() => format!("{}$", self.computer),
            "local service" | "localservice" if self.nt_authority() => "LOCAL SERVICE".into(),
            "network service" | "networkservice" if self.nt_authority() => "NETWORK SERVICE".into(),
            _ => self.name.clone(),
        }
    }

    fn env_domain(&self) -> String {
        match (self.nt_authority(), self.domain.is_empty()) {
            (true, _) => "WORKGROUP".into(),
            (false, true) => "User Manager".into(),
            (false, false) => self.domain.clone(),
        }
    }

    fn profile(&self) -> String {
        match self.name.to_ascii_lowercase().as_str() {
            "system" if self.nt_authority() => "C:\\Windows\\system32\\config\\systemprofile".into(),
            "local service" | "localservice" if self.nt_authority() => {
                "C:\\Windows\\ServiceProfiles\\LocalService".into()
            }
            "network service" | "networkservice" if self.nt_authority() => {
                "C:\\Windows\\ServiceProfiles\\NetworkService".into()
            }
            _ => format!("C:\\Users\\{}", self.name),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------------------------

/// What an image ships, recognised from its repository name (and Windows base in the tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ImageKind {
    /// e2e agnhost: busybox userland and `/agnhost`; on Windows nanoserver + busybox-w32 + pwsh.
    Agnhost,
    /// busybox; the e2e Windows busybox adds busybox-w32 applets and pwsh to nanoserver.
    Busybox,
    /// e2e nonroot: runs as ContainerUser on Windows.
    NonRoot,
    /// The pause image: nothing to exec on Linux; nanoserver on Windows.
    Pause,
    /// mcr.microsoft.com/powershell: pwsh.
    PowerShell,
    NanoServer,
    /// Windows Server Core: cmd and Windows PowerShell.
    ServerCore,
    /// Full Windows Server images.
    WindowsServer,
    Other,
}

impl ImageKind {
    fn default_windows_user(self) -> &'static str {
        match self {
            Self::NanoServer | Self::NonRoot => "ContainerUser",
            _ => "ContainerAdministrator",
        }
    }
}

fn image_kind(image: &str) -> ImageKind {
    let lower = image.to_ascii_lowercase();
    let (repo, name) = crate::vocab::image::repository(image);
    match name.as_str() {
        "agnhost" => ImageKind::Agnhost,
        "busybox" => ImageKind::Busybox,
        "nonroot" => ImageKind::NonRoot,
        "pause" => ImageKind::Pause,
        "powershell" => ImageKind::PowerShell,
        _ if lower.contains("nanoserver") => ImageKind::NanoServer,
        _ if lower.contains("servercore") => ImageKind::ServerCore,
        _ if repo.ends_with("windows/server") || repo.ends_with("microsoft.com/windows") => ImageKind::WindowsServer,
        _ => ImageKind::Other,
    }
}

// ---------------------------------------------------------------------------------------------
// Volumes
// ---------------------------------------------------------------------------------------------

/// The Linux default mode of API-data volume files (0644).
const DEFAULT_MODE: u32 = 0o644;

/// Where the service account token volume is mounted (`C:\var\run\…` on Windows).
const SA_MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VolumeKind {
    Secret,
    ConfigMap,
    Projected,
    DownwardApi,
    EmptyDir { memory: bool },
    HostPath,
    Other,
}

impl VolumeKind {
    fn of(volume: &Value) -> Self {
        if volume.get("secret").is_some() {
            Self::Secret
        } else if volume.get("configMap").is_some() {
            Self::ConfigMap
        } else if volume.get("projected").is_some() {
            Self::Projected
        } else if volume.get("downwardAPI").is_some() {
            Self::DownwardApi
        } else if let Some(e) = volume.get("emptyDir") {
            Self::EmptyDir {
                memory: json::str(e, "/medium") == "Memory",
            }
        } else if volume.get("hostPath").is_some() {
            Self::HostPath
        } else {
            Self::Other
        }
    }

    /// The kubelet's plugin directory of API-data volumes.
    fn plugin_dir(self) -> Option<&'static str> {
        match self {
            Self::Secret => Some("kubernetes.io~secret"),
            Self::ConfigMap => Some("kubernetes.io~configmap"),
            Self::Projected => Some("kubernetes.io~projected"),
            Self::DownwardApi => Some("kubernetes.io~downward-api"),
            _ => None,
        }
    }

    /// API-data volumes are always mounted read-only.
    fn api_data(self) -> bool {
        self.plugin_dir().is_some()
    }

    /// Linux backs secrets, projected and downward API volumes (and memory emptyDirs) with tmpfs.
    fn tmpfs(self) -> bool {
        matches!(
            self,
            Self::Secret | Self::Projected | Self::DownwardApi | Self::EmptyDir { memory: true }
        )
    }
}

/// The files of one volume: (relative path with `/`, content, mode).
struct VolumeData {
    kind: VolumeKind,
    files: Vec<(String, Vec<u8>, u32)>,
}

fn mode_of(v: &Value, field: &str) -> Option<u32> {
    v.get(field).and_then(Value::as_u64).and_then(|m| u32::try_from(m).ok())
}

/// `items` select and rename keys; without them every key becomes a file.
fn select_items(data: BTreeMap<String, Vec<u8>>, source: &Value, mode: u32) -> Vec<(String, Vec<u8>, u32)> {
    let items = json::array(source, "/items");
    if items.is_empty() {
        return data.into_iter().map(|(k, v)| (k, v, mode)).collect();
    }
    items
        .iter()
        .filter_map(|item| {
            let content = data.get(json::str(item, "/key"))?.clone();
            Some((
                json::str(item, "/path").to_string(),
                content,
                mode_of(item, "mode").unwrap_or(mode),
            ))
        })
        .collect()
}

/// A service account token as the projected volume holds it (a JWT-shaped string; the
/// simulation does not sign it).
fn sa_token(pod: &Value) -> Vec<u8> {
    let ns = json::str(pod, "/metadata/namespace");
    let sa = match json::str(pod, "/spec/serviceAccountName") {
        "" => "default",
        s => s,
    };
    let claims = json!({
        "aud": ["https://kubernetes.default.svc.cluster.local"],
        "iss": "https://kubernetes.default.svc.cluster.local",
        "kubernetes.io": {
            "namespace": ns,
            "pod": {"name": json::str(pod, "/metadata/name"), "uid": json::str(pod, "/metadata/uid")},
            "serviceaccount": {"name": sa},
        },
        "sub": format!("system:serviceaccount:{ns}:{sa}"),
    });
    let header = b64url(br#"{"alg":"RS256","kid":"simcluster"}"#);
    format!(
        "{header}.{}.{}",
        b64url(claims.to_string().as_bytes()),
        b64url(b"simulated")
    )
    .into_bytes()
}

fn downward_files(pod: &Value, items: &[Value], node: Option<&NodeProfile>, mode: u32) -> Vec<(String, Vec<u8>, u32)> {
    items
        .iter()
        .filter_map(|item| {
            let value = if let Some(f) = item.get("fieldRef") {
                field_ref(pod, json::str(f, "/fieldPath"))?
            } else {
                let res = item.get("resourceFieldRef")?;
                resource_field(pod, "", res, node)?
            };
            Some((
                json::str(item, "/path").to_string(),
                value.into_bytes(),
                mode_of(item, "mode").unwrap_or(mode),
            ))
        })
        .collect()
}

/// The files a volume of `pod` holds (missing secrets and configMaps give no files).
fn volume_data(store: &Store, pod: &Value, volume: &Value, node: Option<&NodeProfile>) -> VolumeData {
    let kind = VolumeKind::of(volume);
    let ns = json::str(pod, "/metadata/namespace");
    let source_of = |key: &str| volume.get(key).cloned().unwrap_or(Value::Null);
    let files = match kind {
        VolumeKind::Secret => {
            let src = source_of("secret");
            let mode = mode_of(&src, "defaultMode").unwrap_or(DEFAULT_MODE);
            let data = secret_data(store, ns, json::str(&src, "/secretName")).unwrap_or_default();
            select_items(data, &src, mode)
        }
        VolumeKind::ConfigMap => {
            let src = source_of("configMap");
            let mode = mode_of(&src, "defaultMode").unwrap_or(DEFAULT_MODE);
            let data = config_map_data(store, ns, json::str(&src, "/name")).unwrap_or_default();
            select_items(data, &src, mode)
        }
        VolumeKind::DownwardApi => {
            let src = source_of("downwardAPI");
            let mode = mode_of(&src, "defaultMode").unwrap_or(DEFAULT_MODE);
            downward_files(pod, json::array(&src, "/items"), node, mode)
        }
        VolumeKind::Projected => {
            let src = source_of("projected");
            let mode = mode_of(&src, "defaultMode").unwrap_or(DEFAULT_MODE);
            let mut files = Vec::new();
            for s in json::array(&src, "/sources") {
                if let Some(secret) = s.get("secret") {
                    let data = secret_data(store, ns, json::str(secret, "/name")).unwrap_or_default();
                    files.extend(select_items(data, secret, mode));
                } else if let Some(cm) = s.get("configMap") {
                    let data = config_map_data(store, ns, json::str(cm, "/name")).unwrap_or_default();
                    files.extend(select_items(data, cm, mode));
                } else if let Some(d) = s.get("downwardAPI") {
                    files.extend(downward_files(pod, json::array(d, "/items"), node, mode));
                } else if let Some(t) = s.get("serviceAccountToken") {
                    let path = match json::str(t, "/path") {
                        "" => "token",
                        p => p,
                    };
                    files.push((path.to_string(), sa_token(pod), mode));
                }
            }
            files
        }
        _ => Vec::new(),
    };
    VolumeData { kind, files }
}

/// The service account volume the API server's admission adds (`kube-api-access-…`), unless
/// automounting is off for the pod or its service account, or the pod already has one.
fn sa_volume(store: &Store, pod: &Value) -> Option<Value> {
    let spec = pod.get("spec")?;
    let automount = match json::bool(spec, "/automountServiceAccountToken") {
        Some(v) => v,
        None => {
            let sa = match json::str(spec, "/serviceAccountName") {
                "" => "default",
                s => s,
            };
            let ns = json::str(pod, "/metadata/namespace");
            store
                .get(resources::core("serviceaccounts"), ns, sa)
                .ok()
                .and_then(|o| json::bool(o.value(), "/automountServiceAccountToken"))
                != Some(false)
        }
    };
    let present = json::array(spec, "/volumes").iter().any(|v| {
        json::str(v, "/name").starts_with("kube-api-access-")
            || json::array(v, "/projected/sources")
                .iter()
                .any(|s| s.get("serviceAccountToken").is_some())
    });
    if !automount || present {
        return None;
    }
    let suffix: String = hex_id(&["sa", json::str(pod, "/metadata/uid")])
        .chars()
        .take(5)
        .collect();
    Some(json!({
        "name": format!("kube-api-access-{suffix}"),
        "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [
                {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
            ]}},
        ]},
    }))
}

/// The pod's volumes, with the service account volume when admission would add it.
fn pod_volumes(store: &Store, pod: &Value) -> Vec<Value> {
    let mut volumes = json::array(pod, "/spec/volumes").to_vec();
    volumes.extend(sa_volume(store, pod));
    volumes
}

/// One mount of a container.
struct Mount {
    /// The mountPath as written in the spec.
    path: String,
    volume: Value,
    read_only: bool,
    sub_path: String,
}

fn container_mounts(store: &Store, pod: &Value, container: &Value) -> Vec<Mount> {
    let volumes = json::array(pod, "/spec/volumes");
    let sa = sa_volume(store, pod);
    let mut mounts: Vec<Mount> = json::array(container, "/volumeMounts")
        .iter()
        .filter_map(|m| {
            let name = json::str(m, "/name");
            let volume = volumes
                .iter()
                .chain(sa.iter())
                .find(|v| json::str(v, "/name") == name)?
                .clone();
            Some(Mount {
                path: json::str(m, "/mountPath").to_string(),
                volume,
                read_only: json::bool(m, "/readOnly") == Some(true),
                sub_path: json::str(m, "/subPath").to_string(),
            })
        })
        .collect();
    if let Some(sa) = sa
        && !mounts.iter().any(|m| m.path.trim_end_matches('/') == SA_MOUNT)
    {
        mounts.push(Mount {
            path: SA_MOUNT.into(),
            volume: sa,
            read_only: true,
            sub_path: String::new(),
        });
    }
    mounts
}

// ---------------------------------------------------------------------------------------------
// Disks: the files a command can read
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct DiskEntry {
    /// The path as displayed.
    path: String,
    /// The content and mode of a file; None for a directory.
    file: Option<(Vec<u8>, u32)>,
}

impl DiskEntry {
    fn name(&self) -> &str {
        self.path.rsplit(['/', '\\']).next().unwrap_or(&self.path)
    }

    fn size(&self) -> usize {
        self.file.as_ref().map_or(0, |(d, _)| d.len())
    }
}

/// A read-only file tree (case-insensitive on Windows).
#[derive(Debug, Clone)]
struct Disk {
    windows: bool,
    entries: BTreeMap<String, DiskEntry>,
}

impl Disk {
    fn new(windows: bool) -> Self {
        let mut disk = Self {
            windows,
            entries: BTreeMap::new(),
        };
        disk.add_dir(if windows { "C:\\" } else { "/" });
        disk
    }

    fn sep(&self) -> char {
        if self.windows { '\\' } else { '/' }
    }

    fn key(&self, path: &str) -> String {
        if self.windows {
            path.to_lowercase()
        } else {
            path.to_string()
        }
    }

    fn normalize(&self, path: &str, cwd: &str) -> String {
        if self.windows {
            win_path(path, cwd)
        } else {
            linux_path(path, cwd)
        }
    }

    fn parent(&self, path: &str) -> Option<String> {
        let (head, _) = path.rsplit_once(self.sep())?;
        let root = head.is_empty() || (self.windows && head.len() == 2 && head.ends_with(':'));
        match (root, path.len() == head.len() + 1) {
            (true, true) => None,
            (true, false) => Some(format!("{head}{}", self.sep())),
            (false, _) => Some(head.to_string()),
        }
    }

    fn add_dir(&mut self, path: &str) {
        let mut at = Some(path.to_string());
        while let Some(dir) = at {
            let key = self.key(&dir);
            if self.entries.contains_key(&key) {
                break;
            }
            at = self.parent(&dir);
            self.entries.insert(key, DiskEntry { path: dir, file: None });
        }
    }

    fn add_file(&mut self, path: &str, data: Vec<u8>, mode: u32) {
        if let Some(parent) = self.parent(path) {
            self.add_dir(&parent);
        }
        self.entries.insert(
            self.key(path),
            DiskEntry {
                path: path.to_string(),
                file: Some((data, mode)),
            },
        );
    }

    fn get(&self, path: &str) -> Option<&DiskEntry> {
        self.entries.get(&self.key(path))
    }

    /// The entries directly in `dir`, by name.
    fn children(&self, dir: &str) -> Vec<&DiskEntry> {
        self.descendants(dir)
            .into_iter()
            .filter(|e| self.parent(&e.path).is_some_and(|p| self.key(&p) == self.key(dir)))
            .collect()
    }

    /// Everything under `dir`, depth first.
    fn descendants(&self, dir: &str) -> Vec<&DiskEntry> {
        let mut prefix = self.key(dir);
        if !prefix.ends_with(self.sep()) {
            prefix.push(self.sep());
        }
        self.entries
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter(|(k, _)| k.len() > prefix.len())
            .map(|(_, e)| e)
            .collect()
    }

    fn join(&self, dir: &str, rel: &str) -> String {
        let rel = if self.windows {
            rel.replace('/', "\\")
        } else {
            rel.to_string()
        };
        let joined = format!("{}{}{rel}", dir.trim_end_matches(self.sep()), self.sep());
        self.normalize(&joined, dir)
    }

    /// Places a volume's files at `at` (a `subPath` mounts one file or directory of it).
    fn mount(&mut self, at: &str, data: &VolumeData, sub_path: &str) {
        self.add_dir(at);
        let sub = sub_path.trim_matches('/');
        for (rel, content, mode) in &data.files {
            let target = if sub.is_empty() {
                Some(self.join(at, rel))
            } else if rel == sub {
                self.entries.remove(&self.key(at));
                Some(at.to_string())
            } else {
                rel.strip_prefix(&format!("{sub}/")).map(|r| self.join(at, r))
            };
            if let Some(target) = target {
                self.add_file(&target, content.clone(), *mode);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Sessions: one exec
// ---------------------------------------------------------------------------------------------

/// One exec: the context, what the image ships, the environment and the disk it sees.
#[derive(Debug)]
struct Session {
    ctx: CommandContext,
    network: Option<Arc<dyn NetworkCommands>>,
    kind: ImageKind,
    env: Vec<(String, String)>,
    /// What the command sees; its writes update it (and the [`VolumeStore`]).
    disk: RwLock<Disk>,
    /// The container's mounts, which decide where writes go.
    mounts: Vec<MountPoint>,
    exec_id: String,
    /// When the container's files were written (the pod's creation), for listings.
    stamp: DateTime<Utc>,
}

/// Why a file cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteError {
    /// A `readOnly` mount or an API-data volume (STO-READONLY-VOLUME).
    ReadOnly,
    /// The directory does not exist.
    NoDirectory,
    /// The path is a directory.
    IsDirectory,
}

impl Session {
    fn new(ctx: CommandContext, network: Option<Arc<dyn NetworkCommands>>, argv: &[String]) -> Self {
        let env = ctx.env();
        let kind = image_kind(&ctx.image);
        let (disk, mounts) = build_disk(&ctx, kind);
        let exec_id = hex_id(&["exec", ctx.pod.uid(), &ctx.container, &argv.join("\u{1f}")]);
        let stamp = DateTime::parse_from_rfc3339(json::str(ctx.pod.value(), "/metadata/creationTimestamp"))
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        Self {
            ctx,
            network,
            kind,
            env,
            disk: RwLock::new(disk),
            mounts,
            exec_id,
            stamp,
        }
    }

    fn windows(&self) -> bool {
        self.ctx.is_windows()
    }

    /// The disk as it is now.
    fn disk(&self) -> RwLockReadGuard<'_, Disk> {
        self.disk.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes (or appends `data` to) the file `path` names: into the volume, host or layer its
    /// mounts say ([`volumes::resolve`]), and into this exec's view. The null device discards.
    fn write_file(&self, path: &str, data: &[u8], append: bool) -> Result<(), WriteError> {
        let windows = self.windows();
        if volumes::is_null_device(path, windows) {
            return Ok(());
        }
        let full = self.path(path);
        let writer = Writer {
            pod_uid: self.ctx.pod.uid(),
            container: &self.ctx.container,
            node: self.ctx.node.as_ref().map_or("", |n| n.name.as_str()),
            windows,
            host_process: self.ctx.host_process,
        };
        let (place, at) = match volumes::resolve(&self.mounts, &full, writer) {
            WriteTarget::ReadOnly => return Err(WriteError::ReadOnly),
            WriteTarget::Store { place, path } => (place, path),
        };
        let mut disk = self.disk.write().unwrap_or_else(|p| p.into_inner());
        if disk.get(&full).is_some_and(|e| e.file.is_none()) {
            return Err(WriteError::IsDirectory);
        }
        let parent_is_dir = disk
            .parent(&full)
            .is_some_and(|dir| disk.get(&dir).is_some_and(|e| e.file.is_none()));
        if !parent_is_dir {
            return Err(WriteError::NoDirectory);
        }
        self.ctx.volumes.write(&place, &at, data, append, windows);
        let mut content = match disk.get(&full).and_then(|e| e.file.as_ref()) {
            Some((old, _)) if append => old.clone(),
            _ => Vec::new(),
        };
        content.extend_from_slice(data);
        disk.add_file(&full, content, DEFAULT_MODE);
        Ok(())
    }

    /// The working directory: `/`, `C:\`, or the sandbox mount point of a HostProcess container.
    fn cwd(&self) -> String {
        match (self.windows(), self.ctx.host_process) {
            (false, _) => "/".into(),
            (true, false) => "C:\\".into(),
            (true, true) => self.ctx.sandbox_mount_point().trim_end_matches('\\').to_string(),
        }
    }

    fn path(&self, p: &str) -> String {
        if self.windows() {
            win_path(p, &self.cwd())
        } else {
            linux_path(p, &self.cwd())
        }
    }

    fn kernel(&self) -> String {
        self.ctx
            .node
            .as_ref()
            .map(|n| n.kernel_version.clone())
            .unwrap_or_default()
    }

    fn has(&self, needs: Needs) -> bool {
        use ImageKind as K;
        let hpc = self.ctx.host_process;
        match needs {
            Needs::Always => true,
            Needs::Userland => self.kind != K::Pause,
            Needs::Bash => self.kind == K::Other,
            Needs::Curl => matches!(self.kind, K::Agnhost | K::Other),
            Needs::CurlExe => {
                matches!(self.kind, K::Agnhost | K::Busybox) || windows_build(&self.kernel()).is_none_or(|b| b >= 17063)
            }
            Needs::Agnhost => self.kind == K::Agnhost,
            Needs::WindowsPowerShell => hpc || matches!(self.kind, K::ServerCore | K::WindowsServer),
            Needs::Pwsh => !hpc && matches!(self.kind, K::Agnhost | K::Busybox | K::PowerShell),
            Needs::Applets => !hpc && matches!(self.kind, K::Agnhost | K::Busybox),
        }
    }

    /// `argv[0]` as the command tables name it: the base name; on Windows lower case without `.exe`.
    fn command_name(&self, name: &str) -> String {
        if self.windows() {
            let base = name.rsplit(['\\', '/']).next().unwrap_or(name).to_lowercase();
            base.strip_suffix(".exe").map(str::to_string).unwrap_or(base)
        } else {
            name.rsplit('/').next().unwrap_or(name).to_string()
        }
    }

    /// The executable `name` resolves to in this container.
    fn lookup(&self, name: &str) -> Option<Handler> {
        let name = self.command_name(name);
        let table = if self.windows() { WINDOWS } else { LINUX };
        table
            .iter()
            .find(|c| c.names.contains(&name.as_str()) && self.has(c.needs))
            .map(|c| c.run)
    }

    /// The runtime's answer to a missing executable.
    fn not_found(&self, name: &str) -> ExecOutput {
        let id = &self.exec_id;
        let message = if self.windows() {
            format!(
                "failed to exec in container: failed to start exec {id:?}: hcs::System::CreateProcess {}: The system \
                cannot find the file specified.: unknown",
                self.ctx.container_id()
            )
        } else if name.contains('/') {
            format!(
                "failed to exec in container: failed to start exec {id:?}: OCI runtime exec failed: exec failed: \
                unable to start container process: exec: {name:?}: stat {name}: no such file or directory: unknown"
            )
        } else {
            format!(
                "failed to exec in container: failed to start exec {id:?}: OCI runtime exec failed: exec failed: \
                unable to start container process: exec: {name:?}: executable file not found in $PATH: unknown"
            )
        };
        runtime_error(message)
    }

    /// Runs a command a shell started; None when it does not exist.
    async fn run_child(self: &Arc<Self>, call: Call) -> Option<ExecOutput> {
        let handler = self.lookup(call.argv.first()?)?;
        Some(handler(self, call).run().await)
    }
}

/// The build of a Windows kernel version (`10.0.16299.192` → 16299).
fn windows_build(kernel: &str) -> Option<u32> {
    kernel.split('.').nth(2).and_then(|b| b.parse().ok())
}

/// The files of the node's own disk the container can reach: the OS's files, the kubelet's
/// API-data volume files (clear text on Windows, SEC-SECRET-AT-REST) and what was written there.
fn host_files(ctx: &CommandContext, node: &NodeProfile) -> Vec<(String, Vec<u8>)> {
    let mut files = volumes::host_base_files(node);
    files.extend(node_volume_files(&ctx.store, node));
    files.extend(ctx.volumes.files(&Place::Host {
        node: node.name.clone(),
    }));
    files
}

/// What a writable volume holds: an emptyDir's (or other pod volume's) written files, or the
/// node's files under a hostPath (STO-EMPTYDIR-DISK, STO-HOSTPATH).
fn writable_volume_data(ctx: &CommandContext, volume: &Value, kind: VolumeKind) -> VolumeData {
    let windows = ctx.is_windows();
    let files = match volumes::source_of(volume, windows) {
        MountSource::PodVolume(name) => ctx
            .volumes
            .files(&Place::PodVolume {
                pod_uid: ctx.pod.uid().to_string(),
                volume: name,
            })
            .into_iter()
            .map(|(rel, data)| (rel, data, DEFAULT_MODE))
            .collect(),
        MountSource::HostPath(dir) => match ctx.node.as_ref() {
            Some(node) => host_files(ctx, node)
                .into_iter()
                .filter_map(|(path, data)| {
                    let rel = volumes::relative(&path, &dir, windows)?;
                    Some((rel, data, DEFAULT_MODE))
                })
                .collect(),
            None => Vec::new(),
        },
        MountSource::ApiData => Vec::new(),
    };
    VolumeData { kind, files }
}

/// The disk a command sees and the mounts that decide where its writes go.
fn build_disk(ctx: &CommandContext, kind: ImageKind) -> (Disk, Vec<MountPoint>) {
    let windows = ctx.is_windows();
    let mut disk = Disk::new(windows);
    let Some(container) = ctx.container_spec() else {
        return (disk, Vec::new());
    };
    let pod = ctx.pod.value();
    let mounts = container_mounts(&ctx.store, pod, container);
    let node = ctx.node.as_ref();
    let data: Vec<VolumeData> = mounts
        .iter()
        .map(|m| match VolumeKind::of(&m.volume) {
            k @ (VolumeKind::EmptyDir { .. } | VolumeKind::HostPath | VolumeKind::Other) => {
                writable_volume_data(ctx, &m.volume, k)
            }
            _ => volume_data(&ctx.store, pod, &m.volume, node),
        })
        .collect();
    let point = |m: &Mount, at: String| MountPoint {
        at,
        source: volumes::source_of(&m.volume, windows),
        read_only: m.read_only,
        sub_path: m.sub_path.trim_matches('/').to_string(),
    };
    let mut points = Vec::new();
    let layer = ctx.volumes.files(&Place::Layer {
        pod_uid: ctx.pod.uid().to_string(),
        container: ctx.container.clone(),
    });
    if !windows {
        for dir in [
            "/bin", "/dev", "/etc", "/home", "/proc", "/root", "/sys", "/tmp", "/usr/bin", "/var",
        ] {
            disk.add_dir(dir);
        }
        disk.add_file("/etc/hostname", format!("{}\n", ctx.hostname()).into_bytes(), 0o644);
        disk.add_file("/etc/hosts", linux_hosts(ctx).into_bytes(), 0o644);
        disk.add_file("/etc/resolv.conf", resolv_conf(&ctx.dns()).into_bytes(), 0o644);
        disk.add_file(
            "/etc/passwd",
            b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n".to_vec(),
            0o644,
        );
        let version = format!(
            "Linux version {} (buildd@simcluster) (gcc version 12.3.0) #1 SMP\n",
            ctx.node.as_ref().map(|n| n.kernel_version.as_str()).unwrap_or("")
        );
        disk.add_file("/proc/version", version.into_bytes(), 0o444);
        let mounts_text = proc_mounts(ctx, &mounts, &data).into_bytes();
        disk.add_file("/proc/mounts", mounts_text.clone(), 0o444);
        disk.add_file("/proc/self/mounts", mounts_text, 0o444);
        disk.add_file("/dev/termination-log", Vec::new(), 0o666);
        if kind == ImageKind::Agnhost {
            disk.add_file("/agnhost", Vec::new(), 0o755);
        }
        for (path, content) in layer {
            disk.add_file(&path, content, 0o644);
        }
        for (m, d) in mounts.iter().zip(&data) {
            let at = linux_path(&m.path, "/");
            disk.mount(&at, d, &m.sub_path);
            points.push(point(m, at));
        }
        return (disk, points);
    }
    for dir in [
        "C:\\Program Files",
        "C:\\ProgramData",
        "C:\\Users\\Public",
        "C:\\Windows\\System32",
    ] {
        disk.add_dir(dir);
    }
    disk.add_file(WINDOWS_HOSTS_PATH, WINDOWS_HOSTS.as_bytes().to_vec(), 0o644);
    if ctx.host_process {
        if let Some(node) = node {
            disk.add_dir("C:\\var\\lib\\kubelet\\pods");
            for (path, content) in host_files(ctx, node) {
                disk.add_file(&path, content, 0o644);
            }
        }
        let sandbox = ctx.sandbox_mount_point();
        disk.add_dir(sandbox.trim_end_matches('\\'));
        // containerd 1.7 also binds volumes at their mountPath; 1.6 only under the sandbox.
        let bind = node.is_some_and(|n| n.runtime_version >= (1, 7));
        for (m, d) in mounts.iter().zip(&data) {
            let at = win_path(&m.path, "C:\\");
            let rel = at.get(3..).unwrap_or("");
            let under_sandbox = win_path(&format!("{sandbox}{rel}"), "C:\\");
            disk.mount(&under_sandbox, d, &m.sub_path);
            points.push(point(m, under_sandbox));
            if bind {
                disk.mount(&at, d, &m.sub_path);
                points.push(point(m, at));
            }
        }
        return (disk, points);
    }
    for (path, content) in layer {
        disk.add_file(&path, content, 0o644);
    }
    for (m, d) in mounts.iter().zip(&data) {
        let at = win_path(&m.path, "C:\\");
        disk.mount(&at, d, &m.sub_path);
        points.push(point(m, at));
    }
    (disk, points)
}

/// The kubelet-managed `/etc/hosts`.
fn linux_hosts(ctx: &CommandContext) -> String {
    if ctx.host_network() {
        let (ip, name) = ctx
            .node
            .as_ref()
            .map(|n| (n.ip.to_string(), n.name.clone()))
            .unwrap_or_default();
        return format!(
            "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost \
            ip6-loopback\n{ip}\t{name}\n"
        );
    }
    let mut hosts = String::from(
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n\
        fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n",
    );
    let ip = ctx.pod_ip();
    let hostname = ctx.hostname();
    let subdomain = json::str(ctx.spec(), "/subdomain");
    if !ip.is_empty() {
        if subdomain.is_empty() {
            let _ = writeln!(hosts, "{ip}\t{hostname}");
        } else {
            let domain = dns::cluster_dns(&ctx.dns_asker())
                .searches
                .last()
                .cloned()
                .unwrap_or_default();
            let _ = writeln!(
                hosts,
                "{ip}\t{hostname}.{subdomain}.{}.svc.{domain}\t{hostname}",
                ctx.namespace()
            );
        }
    }
    let aliases = json::array(ctx.spec(), "/hostAliases");
    if !aliases.is_empty() {
        hosts.push_str("\n# Entries added by HostAliases.\n");
        for alias in aliases {
            let names: Vec<&str> = json::array(alias, "/hostnames")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let _ = writeln!(hosts, "{}\t{}", json::str(alias, "/ip"), names.join("\t"));
        }
    }
    hosts
}

fn resolv_conf(dns: &DnsConfig) -> String {
    let mut text = String::new();
    if !dns.searches.is_empty() {
        let _ = writeln!(text, "search {}", dns.searches.join(" "));
    }
    for ns in &dns.nameservers {
        let _ = writeln!(text, "nameserver {ns}");
    }
    if !dns.options.is_empty() {
        let opts: Vec<String> = dns
            .options
            .iter()
            .map(|(n, v)| match v {
                Some(v) => format!("{n}:{v}"),
                None => n.clone(),
            })
            .collect();
        let _ = writeln!(text, "options {}", opts.join(" "));
    }
    text
}

/// `/proc/mounts` of a Linux container: overlay root, the runtime's mounts, the volumes (API
/// data and memory emptyDirs on tmpfs, the rest on the node's disk) and the masked /proc paths.
fn proc_mounts(ctx: &CommandContext, mounts: &[Mount], data: &[VolumeData]) -> String {
    let snapshots = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots";
    let mut text = format!(
        "overlay / overlay rw,relatime,lowerdir={snapshots}/1/fs,upperdir={snapshots}/2/fs,\
         workdir={snapshots}/2/work 0 0\n\
         proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n\
         tmpfs /dev tmpfs rw,nosuid,size=65536k,mode=755,inode64 0 0\n\
         devpts /dev/pts devpts rw,nosuid,noexec,relatime,gid=5,mode=620,ptmxmode=666 0 0\n\
         mqueue /dev/mqueue mqueue rw,nosuid,nodev,noexec,relatime 0 0\n\
         sysfs /sys sysfs ro,nosuid,nodev,noexec,relatime 0 0\n\
         cgroup /sys/fs/cgroup cgroup2 ro,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot 0 0\n"
    );
    let memory_k = ctx
        .node
        .as_ref()
        .and_then(|n| n.allocatable.get("memory"))
        .and_then(|m| Quantity::parse(m))
        .map_or(65536, |q| q.value() / 1024);
    let disk_line =
        |path: &str, rw: &str| format!("/dev/root {path} ext4 {rw},relatime,discard,errors=remount-ro 0 0\n");
    for (m, d) in mounts.iter().zip(data) {
        let path = linux_path(&m.path, "/");
        let rw = if m.read_only || d.kind.api_data() { "ro" } else { "rw" };
        if d.kind.tmpfs() {
            let _ = writeln!(text, "tmpfs {path} tmpfs {rw},relatime,size={memory_k}k,inode64 0 0");
        } else {
            text.push_str(&disk_line(&path, rw));
        }
    }
    for path in [
        "/etc/hosts",
        "/dev/termination-log",
        "/etc/hostname",
        "/etc/resolv.conf",
    ] {
        text.push_str(&disk_line(path, "rw"));
    }
    text.push_str("shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k,inode64 0 0\n");
    for path in ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"] {
        let _ = writeln!(text, "proc {path} proc ro,nosuid,nodev,noexec,relatime 0 0");
    }
    for path in ["/proc/acpi", "/proc/scsi", "/sys/firmware"] {
        let _ = writeln!(text, "tmpfs {path} tmpfs ro,relatime,inode64 0 0");
    }
    for path in ["/proc/kcore", "/proc/keys", "/proc/timer_list"] {
        let _ = writeln!(text, "tmpfs {path} tmpfs rw,nosuid,size=65536k,mode=755,inode64 0 0");
    }
    text
}

// ---------------------------------------------------------------------------------------------
// Dispatch and the command tables
// ---------------------------------------------------------------------------------------------

/// One command invocation: argv, stdin and the process environment.
#[derive(Debug, Clone, Default)]
struct Call {
    argv: Vec<String>,
    stdin: Bytes,
    env: Vec<(String, String)>,
}

impl Call {
    fn args(&self) -> &[String] {
        self.argv.get(1..).unwrap_or(&[])
    }
}

/// A handler's answer: finished, or still running (shells, `env` running a command).
enum Reply {
    Done(ExecOutput),
    Later(ExecFuture),
}

impl Reply {
    fn run(self) -> ExecFuture {
        match self {
            Self::Done(o) => Box::pin(std::future::ready(o)),
            Self::Later(f) => f,
        }
    }
}

impl From<ExecOutput> for Reply {
    fn from(o: ExecOutput) -> Self {
        Self::Done(o)
    }
}

type Handler = fn(&Arc<Session>, Call) -> Reply;

/// What must be in the container for a command to exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    Always,
    /// A Linux userland (every image but pause).
    Userland,
    /// bash (general-purpose distribution images).
    Bash,
    /// curl (agnhost and general-purpose images; not busybox).
    Curl,
    /// Windows' own `curl.exe`: in the OS from build 17063 (Windows Server 1803) on, so absent
    /// from the Windows Server 2016 and 1709 images; the e2e busybox/agnhost images carry their
    /// own (they exist from 1809 on anyway).
    CurlExe,
    /// The agnhost binary.
    Agnhost,
    /// Windows PowerShell: Server Core and Server images, and the host of a HostProcess container.
    WindowsPowerShell,
    /// PowerShell Core: the e2e busybox/agnhost Windows images and the PowerShell images.
    Pwsh,
    /// busybox-w32 applets of the e2e busybox and agnhost Windows images.
    Applets,
}

/// An executable: the names it answers to, what must be in the image, its handler.
struct Command {
    names: &'static [&'static str],
    needs: Needs,
    run: Handler,
}

const fn command(names: &'static [&'static str], needs: Needs, run: Handler) -> Command {
    Command { names, needs, run }
}

/// Executables of Linux containers.
static LINUX: &[Command] = &[
    command(&["sh", "ash"], Needs::Userland, sh),
    command(&["bash"], Needs::Bash, sh),
    command(&["hostname"], Needs::Userland, hostname),
    command(&["cat"], Needs::Userland, cat),
    command(&["ls"], Needs::Userland, ls),
    command(&["stat"], Needs::Userland, stat),
    command(&["printenv"], Needs::Userland, printenv),
    command(&["env"], Needs::Userland, env),
    command(&["echo"], Needs::Userland, echo),
    command(&["printf"], Needs::Userland, printf),
    command(&["true", "sleep"], Needs::Userland, succeed),
    command(&["false"], Needs::Userland, fail_quietly),
    command(&["test", "["], Needs::Userland, test),
    command(&["grep"], Needs::Userland, grep),
    command(&["id"], Needs::Userland, id),
    command(&["whoami"], Needs::Userland, whoami_linux),
    command(&["uname"], Needs::Userland, uname),
    // iproute2 in agnhost (AGN Dockerfile: `apk add … iproute2`); the busybox applet elsewhere.
    command(&["ip"], Needs::Userland, ip),
    command(&["agnhost"], Needs::Agnhost, agnhost),
    command(&["nc", "nslookup", "ping", "wget"], Needs::Userland, network),
    command(&["curl"], Needs::Curl, network),
    command(&["dig"], Needs::Agnhost, network),
];

/// Executables of Windows containers (`cmd` builtins and PowerShell cmdlets have their own tables).
static WINDOWS: &[Command] = &[
    command(&["cmd"], Needs::Always, cmd),
    command(&["hostname"], Needs::Always, hostname),
    command(&["whoami"], Needs::Always, whoami_windows),
    command(&["ipconfig"], Needs::Always, ipconfig),
    command(&["findstr"], Needs::Always, findstr),
    command(&["curl"], Needs::CurlExe, network),
    command(&["ping", "nslookup"], Needs::Always, network),
    command(&["powershell"], Needs::WindowsPowerShell, powershell),
    command(&["pwsh"], Needs::Pwsh, pwsh),
    command(&["agnhost"], Needs::Agnhost, agnhost),
    command(&["sh", "ash"], Needs::Applets, sh),
    command(&["cat"], Needs::Applets, cat),
    command(&["ls"], Needs::Applets, ls),
    command(&["printenv"], Needs::Applets, printenv),
    command(&["env"], Needs::Applets, env),
    command(&["echo"], Needs::Applets, echo),
    command(&["printf"], Needs::Applets, printf),
    command(&["true", "sleep"], Needs::Applets, succeed),
    command(&["false"], Needs::Applets, fail_quietly),
    command(&["test", "["], Needs::Applets, test),
    command(&["grep"], Needs::Applets, grep),
    command(&["nc", "wget"], Needs::Applets, network),
];

/// Runs an exec's command: its handler, or the runtime's error when it does not exist.
fn run_top(s: Arc<Session>, call: Call) -> ExecFuture {
    let Some(name) = call.argv.first().cloned() else {
        let missing = runtime_error("you must specify at least one command for the container".into());
        return Box::pin(std::future::ready(missing));
    };
    match s.lookup(&name) {
        Some(handler) => handler(&s, call).run(),
        None => Box::pin(std::future::ready(s.not_found(&name))),
    }
}

// ---------------------------------------------------------------------------------------------
// Identity: hostname, whoami, id, uname, ipconfig
// ---------------------------------------------------------------------------------------------

fn hostname(s: &Arc<Session>, call: Call) -> Reply {
    let name = s.ctx.hostname();
    let first = call.args().first().map(String::as_str);
    let o = match (s.windows(), first) {
        (true, None) => ExecOutput::ok(format!("{name}\r\n")),
        (true, Some(_)) => out(
            "",
            "sethostname: Use the Network Control Panel Applet to set hostname.\r\n",
            1,
        ),
        (false, None | Some("-s" | "-f")) => ExecOutput::ok(format!("{name}\n")),
        (false, Some("-i")) => ExecOutput::ok(format!("{}\n", s.ctx.pod_ip())),
        (false, Some(_)) => out("", "hostname: sethostname: Operation not permitted\n", 1),
    };
    o.into()
}

fn whoami_linux(s: &Arc<Session>, _call: Call) -> Reply {
    match s.ctx.linux_ids().0 {
        0 => ExecOutput::ok("root\n"),
        uid => out("", format!("whoami: unknown uid {uid}\n"), 1),
    }
    .into()
}

fn whoami_windows(s: &Arc<Session>, _call: Call) -> Reply {
    let user = WinUser::parse(&s.ctx.windows_user(), &s.ctx.computer_name());
    ExecOutput::ok(format!("{}\r\n", user.whoami())).into()
}

fn id(s: &Arc<Session>, call: Call) -> Reply {
    let (uid, gid, groups) = s.ctx.linux_ids();
    let named = |n: &i64| if *n == 0 { format!("{n}(root)") } else { n.to_string() };
    let flags: String = call.args().iter().filter_map(|a| a.strip_prefix('-')).collect();
    let o = if flags.contains('n') && (flags.contains('u') && uid != 0 || flags.contains('g') && gid != 0) {
        out(
            "",
            format!("id: unknown ID {}\n", if flags.contains('u') { uid } else { gid }),
            1,
        )
    } else if flags.contains('n') {
        ExecOutput::ok("root\n")
    } else if flags.contains('u') {
        ExecOutput::ok(format!("{uid}\n"))
    } else if flags.contains('G') {
        let list: Vec<String> = groups.iter().map(i64::to_string).collect();
        ExecOutput::ok(format!("{}\n", list.join(" ")))
    } else if flags.contains('g') {
        ExecOutput::ok(format!("{gid}\n"))
    } else {
        let list: Vec<String> = groups.iter().map(named).collect();
        ExecOutput::ok(format!(
            "uid={} gid={} groups={}\n",
            named(&uid),
            named(&gid),
            list.join(",")
        ))
    };
    o.into()
}

fn uname(s: &Arc<Session>, call: Call) -> Reply {
    let flags: String = call.args().iter().filter_map(|a| a.strip_prefix('-')).collect();
    let machine = match s.ctx.node.as_ref().map(|n| n.arch.as_str()) {
        Some("arm64") => "aarch64",
        _ => "x86_64",
    };
    let hostname = s.ctx.hostname();
    let kernel = s.kernel();
    let fields = [
        ('s', "Linux"),
        ('n', hostname.as_str()),
        ('r', kernel.as_str()),
        ('v', "#1 SMP"),
        ('m', machine),
        ('o', "GNU/Linux"),
    ];
    let picked: Vec<&str> = fields
        .iter()
        .filter(|(c, _)| flags.contains('a') || flags.contains(*c) || (flags.is_empty() && *c == 's'))
        .map(|(_, v)| *v)
        .collect();
    ExecOutput::ok(format!("{}\n", picked.join(" "))).into()
}

/// One network interface of a Linux container's network namespace, for `ip`.
struct Iface {
    index: u32,
    name: String,
    /// The peer's index of a veth (`eth0@if12`), if any.
    peer: Option<u32>,
    mac: String,
    /// (address, prefix length)
    v4: Option<(std::net::Ipv4Addr, u8)>,
    loopback: bool,
}

/// The interfaces a Linux container sees: `lo` and the pod's veth `eth0` on its node's pod
/// network; on the host network the node's own `eth0` and the CNI bridge `cni0` (the pod
/// CIDR's gateway) (NET-HOSTNETWORK: a hostNetwork pod shares the node's interfaces).
fn linux_interfaces(ctx: &CommandContext) -> Vec<Iface> {
    let mac = |ip: std::net::Ipv4Addr, lead: u8| {
        let [a, b, c, d] = ip.octets();
        format!("{lead:02x}:42:{a:02x}:{b:02x}:{c:02x}:{d:02x}")
    };
    let mut list = vec![Iface {
        index: 1,
        name: "lo".into(),
        peer: None,
        mac: "00:00:00:00:00:00".into(),
        v4: Some((std::net::Ipv4Addr::LOCALHOST, 8)),
        loopback: true,
    }];
    let own = ctx.pod_ip().parse::<std::net::Ipv4Addr>().ok();
    if ctx.host_network() {
        if let Some(node) = &ctx.node {
            list.push(Iface {
                index: 2,
                name: "eth0".into(),
                peer: None,
                mac: mac(node.ip, 0x06),
                v4: Some((node.ip, 24)),
                loopback: false,
            });
            let gateway = node
                .pod_cidr
                .split('/')
                .next()
                .and_then(|net| net.parse::<std::net::Ipv4Addr>().ok())
                .map(|net| {
                    let [a, b, c, _] = net.octets();
                    std::net::Ipv4Addr::new(a, b, c, 1)
                });
            if let Some(gw) = gateway {
                list.push(Iface {
                    index: 3,
                    name: "cni0".into(),
                    peer: None,
                    mac: mac(gw, 0x0a),
                    v4: Some((gw, 24)),
                    loopback: false,
                });
            }
        }
    } else if let Some(ip) = own {
        let peer = 4 + u32::from(ip.octets()[3]);
        list.push(Iface {
            index: 2,
            name: "eth0".into(),
            peer: Some(peer),
            mac: mac(ip, 0x02),
            v4: Some((ip, 24)),
            loopback: false,
        });
    }
    list
}

/// `ip [-o] [-4|-6] [-br] addr|link|route [show [dev IF]]` (iproute2 in agnhost, the busybox
/// applet elsewhere): the container's interfaces, addresses and routes.
fn ip(s: &Arc<Session>, call: Call) -> Reply {
    let mut oneline = false;
    let mut brief = false;
    let mut v6_only = false;
    let mut words: Vec<&str> = Vec::new();
    let mut args = call.args().iter();
    while let Some(a) = args.next() {
        match a.as_str() {
            "-o" | "-oneline" => oneline = true,
            "-br" | "-brief" => brief = true,
            "-4" => v6_only = false,
            "-6" => v6_only = true,
            "-f" | "-family" => v6_only = args.next().is_some_and(|f| f == "inet6"),
            x if x.starts_with('-') => {}
            x => words.push(x),
        }
    }
    let object = words.first().copied().unwrap_or("");
    let dev = words
        .iter()
        .position(|w| *w == "dev")
        .and_then(|i| words.get(i + 1))
        .copied();
    let ifaces: Vec<Iface> = linux_interfaces(&s.ctx)
        .into_iter()
        .filter(|i| dev.is_none_or(|d| d == i.name))
        .collect();
    if let Some(d) = dev
        && ifaces.is_empty()
    {
        return out("", format!("Device \"{d}\" does not exist.\n"), 1).into();
    }
    let shown_name = |i: &Iface| match i.peer {
        Some(p) => format!("{}@if{p}", i.name),
        None => i.name.clone(),
    };
    let flags = |i: &Iface| {
        if i.loopback {
            "<LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000".to_string()
        } else {
            "<BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UP group default".to_string()
        }
    };
    let link_line = |i: &Iface| {
        if i.loopback {
            "link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00".to_string()
        } else {
            let netns = if i.peer.is_some() { " link-netnsid 0" } else { "" };
            format!("link/ether {} brd ff:ff:ff:ff:ff:ff{netns}", i.mac)
        }
    };
    let inet = |i: &Iface| -> Option<String> {
        let (ip, len) = i.v4?;
        let scope = if i.loopback { "host" } else { "global" };
        let brd = if i.loopback {
            String::new()
        } else {
            let [a, b, c, _] = ip.octets();
            format!(" brd {a}.{b}.{c}.255")
        };
        Some(format!("inet {ip}/{len}{brd} scope {scope} {}", i.name))
    };
    let mut text = String::new();
    match object {
        "a" | "ad" | "addr" | "address" => {
            for i in &ifaces {
                if brief {
                    let state = if i.loopback { "UNKNOWN" } else { "UP" };
                    let addr = i.v4.map(|(ip, len)| format!("{ip}/{len}")).unwrap_or_default();
                    let _ = writeln!(text, "{:<16} {state:<14} {addr} ", shown_name(i));
                } else if oneline {
                    if let Some(line) = inet(i).filter(|_| !v6_only) {
                        let _ = writeln!(
                            text,
                            "{}: {}    {line}\\       valid_lft forever preferred_lft forever",
                            i.index, i.name
                        );
                    }
                } else {
                    let _ = writeln!(text, "{}: {}: {}", i.index, shown_name(i), flags(i));
                    let _ = writeln!(text, "    {}", link_line(i));
                    if let Some(line) = inet(i).filter(|_| !v6_only) {
                        let _ = writeln!(text, "    {line}\n       valid_lft forever preferred_lft forever");
                    }
                }
            }
        }
        "l" | "link" => {
            for i in &ifaces {
                if oneline {
                    let _ = writeln!(
                        text,
                        "{}: {}: {}\\    {}",
                        i.index,
                        shown_name(i),
                        flags(i),
                        link_line(i)
                    );
                } else {
                    let _ = writeln!(
                        text,
                        "{}: {}: {}\n    {}",
                        i.index,
                        shown_name(i),
                        flags(i),
                        link_line(i)
                    );
                }
            }
        }
        "r" | "ro" | "route" => {
            for i in ifaces.iter().filter(|i| !i.loopback) {
                if let Some((ip, _)) = i.v4 {
                    let [a, b, c, _] = ip.octets();
                    if i.name == "eth0" {
                        let _ = writeln!(text, "default via {a}.{b}.{c}.1 dev eth0 ");
                    }
                    let _ = writeln!(
                        text,
                        "{a}.{b}.{c}.0/24 dev {} proto kernel scope link src {ip} ",
                        i.name
                    );
                }
            }
        }
        "" => {
            return out(
                "",
                "Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }\nwhere  OBJECT := { address | link | route | ... }\n",
                255,
            )
            .into();
        }
        other => {
            return out("", format!("Object \"{other}\" is unknown, try \"ip help\".\n"), 255).into();
        }
    }
    ExecOutput::ok(text).into()
}

/// `ipconfig [/all]`: the pod's address on its node's pod network (the node's own address for
/// HostProcess containers) and the container's DNS configuration.
fn ipconfig(s: &Arc<Session>, call: Call) -> Reply {
    let all = call.args().iter().any(|a| a.eq_ignore_ascii_case("/all"));
    let dns = s.ctx.dns();
    let ip = s.ctx.pod_ip();
    let gateway = match ip.rsplit_once('.') {
        Some((net, _)) => format!("{net}.1"),
        None => String::new(),
    };
    let adapter = if s.ctx.host_process {
        "Ethernet".to_string()
    } else {
        format!("{}_cbr0", s.ctx.container_id().get(..12).unwrap_or(""))
    };
    let continued = |list: &[String]| list.join("\r\n                                       ");
    let mut text = String::from("\r\nWindows IP Configuration\r\n\r\n");
    if all {
        let _ = write!(
            text,
            "   Host Name . . . . . . . . . . . . : {}\r\n   Primary Dns Suffix  . . . . . . . : \r\n   Node Type . \
            . . . . . . . . . . . : Hybrid\r\n   IP Routing Enabled. . . . . . . . : No\r\n   WINS Proxy Enabled. . \
            . . . . . . : No\r\n",
            s.ctx.hostname()
        );
        if !dns.searches.is_empty() {
            let _ = write!(
                text,
                "   DNS Suffix Search List. . . . . . : {}\r\n",
                continued(&dns.searches)
            );
        }
        text.push_str("\r\n");
    }
    let _ = write!(
        text,
        "Ethernet adapter vEthernet ({adapter}):\r\n\r\n   Connection-specific DNS Suffix  . : {}\r\n",
        dns.searches.first().map(String::as_str).unwrap_or("")
    );
    if all {
        text.push_str(
            "   Description . . . . . . . . . . . : Hyper-V Virtual Ethernet Adapter\r\n   DHCP Enabled. . \
            . . . . . . . . . : No\r\n   Autoconfiguration Enabled . . . . : Yes\r\n",
        );
        let _ = write!(text, "   IPv4 Address. . . . . . . . . . . : {ip}(Preferred)\r\n");
    } else {
        let _ = write!(text, "   IPv4 Address. . . . . . . . . . . : {ip}\r\n");
    }
    let _ = write!(
        text,
        "   Subnet Mask . . . . . . . . . . . : 255.255.255.0\r\n   Default Gateway . . . . . . . . . : {gateway}\r\n"
    );
    if all {
        let _ = write!(
            text,
            "   DNS Servers . . . . . . . . . . . : {}\r\n   NetBIOS over Tcpip. . . . . . . . : Disabled\r\n",
            continued(&dns.nameservers)
        );
    }
    ExecOutput::ok(text).into()
}

// ---------------------------------------------------------------------------------------------
// Files: cat, ls, stat, grep, findstr
// ---------------------------------------------------------------------------------------------

fn cat(s: &Arc<Session>, call: Call) -> Reply {
    let files: Vec<&String> = call
        .args()
        .iter()
        .filter(|a| !a.starts_with('-') || a.as_str() == "-")
        .collect();
    if files.is_empty() {
        return ExecOutput::ok(call.stdin.to_vec()).into();
    }
    let (mut stdout, mut stderr, mut code) = (Vec::new(), String::new(), 0);
    for f in files {
        if f == "-" {
            stdout.extend_from_slice(&call.stdin);
            continue;
        }
        match s.disk().get(&s.path(f)).map(|e| &e.file) {
            Some(Some((data, _))) => stdout.extend_from_slice(data),
            Some(None) => {
                stderr.push_str("cat: read error: Is a directory\n");
                code = 1;
            }
            None => {
                let _ = writeln!(stderr, "cat: can't open '{f}': No such file or directory");
                code = 1;
            }
        }
    }
    out(stdout, stderr, code).into()
}

fn rwx(mode: u32) -> String {
    (0..9)
        .map(|i| {
            let bit = 1 << (8 - i);
            match (mode & bit != 0, i % 3) {
                (false, _) => '-',
                (true, 0) => 'r',
                (true, 1) => 'w',
                (true, _) => 'x',
            }
        })
        .collect()
}

fn mode_and_type(e: &DiskEntry) -> (u32, char) {
    match &e.file {
        Some((_, mode)) => (*mode, '-'),
        None => (0o755, 'd'),
    }
}

fn ls(s: &Arc<Session>, call: Call) -> Reply {
    let flags: String = call
        .args()
        .iter()
        .filter(|a| a.starts_with('-') && a.len() > 1)
        .flat_map(|a| a.chars().skip(1))
        .collect();
    let mut paths: Vec<String> = call
        .args()
        .iter()
        .filter(|a| !a.starts_with('-') || a.len() == 1)
        .cloned()
        .collect();
    if paths.is_empty() {
        paths.push(".".into());
    }
    let long = flags.contains('l');
    let line = |e: &DiskEntry, shown: &str| {
        if !long {
            return format!("{shown}\n");
        }
        let (mode, kind) = mode_and_type(e);
        let when = s.stamp.format("%b %e %H:%M");
        format!(
            "{kind}{}    1 root     root     {:>9} {when} {shown}\n",
            rwx(mode),
            e.size()
        )
    };
    let (mut stdout, mut stderr, mut code) = (String::new(), String::new(), 0);
    let many = paths.len() > 1;
    for p in &paths {
        match s.disk().get(&s.path(p)) {
            None => {
                let _ = writeln!(stderr, "ls: {p}: No such file or directory");
                code = 1;
            }
            Some(e) if e.file.is_some() => stdout.push_str(&line(e, p)),
            Some(dir) => {
                if many {
                    let _ = writeln!(stdout, "{p}:");
                }
                if flags.contains('a') {
                    stdout.push_str(&line(dir, "."));
                    stdout.push_str(&line(dir, ".."));
                }
                for child in s.disk().children(&dir.path) {
                    stdout.push_str(&line(child, child.name()));
                }
                if many {
                    stdout.push('\n');
                }
            }
        }
    }
    out(stdout, stderr, code).into()
}

fn stat(s: &Arc<Session>, call: Call) -> Reply {
    let mut format = None;
    let mut files = Vec::new();
    let mut args = call.args().iter();
    while let Some(a) = args.next() {
        if a == "-c" || a == "--format" {
            format = args.next().cloned();
        } else if let Some(f) = a.strip_prefix("--format=") {
            format = Some(f.to_string());
        } else if let Some(f) = a.strip_prefix("-c").filter(|f| !f.is_empty()) {
            format = Some(f.to_string());
        } else if !(a.starts_with('-') && a.len() > 1) {
            files.push(a.clone());
        }
    }
    if files.is_empty() {
        return out("", "Usage: stat [-ltf] [-c FMT] FILE...\n", 1).into();
    }
    let (mut stdout, mut stderr, mut code) = (String::new(), String::new(), 0);
    for f in &files {
        let disk = s.disk();
        let Some(e) = disk.get(&s.path(f)) else {
            let _ = writeln!(stderr, "stat: can't stat '{f}': No such file or directory");
            code = 1;
            continue;
        };
        let (mode, kind) = mode_and_type(e);
        let kind_name = if kind == 'd' { "directory" } else { "regular file" };
        let fmt = format.clone().unwrap_or_else(|| {
            "  File: %n\n  Size: %s\t%F\nAccess: (0%a/%A)  Uid: (    0/    root)   Gid: (    0/    root)".into()
        });
        let mut text = String::new();
        let mut chars = fmt.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                text.push(c);
                continue;
            }
            match chars.next() {
                Some('a') => text.push_str(&format!("{mode:o}")),
                Some('A') => text.push_str(&format!("{kind}{}", rwx(mode))),
                Some('n') => text.push_str(f),
                Some('s') => text.push_str(&e.size().to_string()),
                Some('F') => text.push_str(kind_name),
                Some('U' | 'G') => text.push_str("root"),
                Some('u' | 'g') => text.push('0'),
                Some('%') => text.push('%'),
                Some(other) => {
                    text.push('?');
                    let _ = other;
                }
                None => text.push('%'),
            }
        }
        let _ = writeln!(stdout, "{text}");
    }
    out(stdout, stderr, code).into()
}

/// A line matches a pattern: `^`/`$` anchor it, otherwise it is a substring.
fn line_matches(line: &str, pattern: &str, ignore_case: bool) -> bool {
    let (line, pattern) = if ignore_case {
        (line.to_lowercase(), pattern.to_lowercase())
    } else {
        (line.to_string(), pattern.to_string())
    };
    let start = pattern.strip_prefix('^');
    let body = start.unwrap_or(&pattern);
    let end = body.strip_suffix('$');
    match (start.is_some(), end) {
        (true, Some(b)) => line == b,
        (true, None) => line.starts_with(body),
        (false, Some(b)) => line.ends_with(b),
        (false, None) => line.contains(body),
    }
}

fn grep(s: &Arc<Session>, call: Call) -> Reply {
    let mut pattern: Option<String> = None;
    let mut files = Vec::new();
    let mut flags = String::new();
    let mut args = call.args().iter();
    while let Some(a) = args.next() {
        if a == "-e" {
            pattern = args.next().cloned();
        } else if a.starts_with('-') && a.len() > 1 {
            flags.push_str(&a[1..]);
        } else if pattern.is_none() {
            pattern = Some(a.clone());
        } else {
            files.push(a.clone());
        }
    }
    let Some(pattern) = pattern else {
        return out(
            "",
            "Usage: grep [-HhnlLoqvsrRiwFE] [-m N] [-A|B|C N] { PATTERN | -e PATTERN... | -f FILE... } [FILE]...\n",
            2,
        )
        .into();
    };
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    let mut stderr = String::new();
    if files.is_empty() {
        inputs.push((String::new(), call.stdin.to_vec()));
    }
    for f in &files {
        match s.disk().get(&s.path(f)).and_then(|e| e.file.as_ref()) {
            Some((data, _)) => inputs.push((f.clone(), data.clone())),
            None => {
                let _ = writeln!(stderr, "grep: {f}: No such file or directory");
            }
        }
    }
    let (invert, icase) = (flags.contains('v'), flags.contains('i'));
    let mut stdout = String::new();
    let mut matched = 0usize;
    for (name, data) in &inputs {
        let text = String::from_utf8_lossy(data);
        let hits: Vec<&str> = text
            .lines()
            .filter(|l| line_matches(l, &pattern, icase) != invert)
            .collect();
        matched += hits.len();
        if flags.contains('c') {
            let prefix = if files.len() > 1 {
                format!("{name}:")
            } else {
                String::new()
            };
            let _ = writeln!(stdout, "{prefix}{}", hits.len());
        } else {
            for hit in hits {
                let prefix = if files.len() > 1 {
                    format!("{name}:")
                } else {
                    String::new()
                };
                let _ = writeln!(stdout, "{prefix}{hit}");
            }
        }
    }
    if flags.contains('q') {
        stdout.clear();
    }
    let code = match (matched > 0, stderr.is_empty()) {
        (true, _) if flags.contains('q') => 0,
        (_, false) => 2,
        (true, true) => 0,
        (false, true) => 1,
    };
    out(stdout, stderr, code).into()
}

/// `findstr [/i] [/v] [/c:"text"] text [file…]`.
fn findstr(s: &Arc<Session>, call: Call) -> Reply {
    let (mut icase, mut invert) = (false, false);
    let mut pattern: Option<String> = None;
    let mut files = Vec::new();
    for a in call.args() {
        let lower = a.to_ascii_lowercase();
        if let Some(text) = lower.strip_prefix("/c:").map(|_| a.get(3..).unwrap_or("")) {
            pattern = Some(text.trim_matches('"').to_string());
        } else if lower == "/i" {
            icase = true;
        } else if lower == "/v" {
            invert = true;
        } else if lower.starts_with('/') && lower.len() == 2 {
        } else if pattern.is_none() {
            pattern = Some(a.clone());
        } else {
            files.push(a.clone());
        }
    }
    let Some(pattern) = pattern else {
        return out("", "FINDSTR: Bad command line\r\n", 2).into();
    };
    let mut text = String::new();
    let mut stderr = String::new();
    if files.is_empty() {
        text.push_str(&String::from_utf8_lossy(&call.stdin));
    }
    for f in &files {
        match s.disk().get(&s.path(f)).and_then(|e| e.file.as_ref()) {
            Some((data, _)) => text.push_str(&String::from_utf8_lossy(data)),
            None => {
                let _ = write!(stderr, "FINDSTR: Cannot open {f}\r\n");
            }
        }
    }
    let hits: Vec<&str> = text
        .lines()
        .filter(|l| line_matches(l, &pattern, icase) != invert)
        .collect();
    let stdout: String = hits.iter().map(|h| format!("{h}\r\n")).collect();
    out(stdout, stderr, if hits.is_empty() { 1 } else { 0 }).into()
}

// ---------------------------------------------------------------------------------------------
// Environment and small utilities: printenv, env, echo, true, false, test
// ---------------------------------------------------------------------------------------------

fn env_listing(env: &[(String, String)]) -> ExecOutput {
    ExecOutput::ok(env.iter().map(|(k, v)| format!("{k}={v}\n")).collect::<String>())
}

fn printenv(s: &Arc<Session>, call: Call) -> Reply {
    if call.args().is_empty() {
        return env_listing(&call.env).into();
    }
    let mut stdout = String::new();
    let mut code = 0;
    for name in call.args() {
        match env_get(&call.env, name, s.windows()) {
            Some(v) => {
                let _ = writeln!(stdout, "{v}");
            }
            None => code = 1,
        }
    }
    out(stdout, "", code).into()
}

fn env(s: &Arc<Session>, call: Call) -> Reply {
    let mut vars = call.env.clone();
    let mut rest = call.args();
    while let Some((first, tail)) = rest.split_first() {
        if first == "-i" {
            vars.clear();
        } else if let Some((k, v)) = first.split_once('=').filter(|(k, _)| !k.is_empty()) {
            env_set(&mut vars, k, v.to_string(), s.windows());
        } else {
            break;
        }
        rest = tail;
    }
    let Some(name) = rest.first().cloned() else {
        return env_listing(&vars).into();
    };
    let child = Call {
        argv: rest.to_vec(),
        stdin: call.stdin,
        env: vars,
    };
    let s = s.clone();
    Reply::Later(Box::pin(async move {
        match s.run_child(child).await {
            Some(o) => o,
            None => out(
                "",
                format!("env: can't execute '{name}': No such file or directory\n"),
                127,
            ),
        }
    }))
}

fn echo(_s: &Arc<Session>, call: Call) -> Reply {
    ExecOutput::ok(echo::sh_echo(call.args())).into()
}

fn printf(_s: &Arc<Session>, call: Call) -> Reply {
    ExecOutput::ok(echo::printf(call.args())).into()
}

fn succeed(_s: &Arc<Session>, _call: Call) -> Reply {
    ExecOutput::ok(Vec::new()).into()
}

fn fail_quietly(_s: &Arc<Session>, _call: Call) -> Reply {
    out("", "", 1).into()
}

fn test(s: &Arc<Session>, call: Call) -> Reply {
    let mut args: Vec<String> = call.args().to_vec();
    if s.command_name(call.argv.first().map(String::as_str).unwrap_or("")) == "[" {
        if args.last().map(String::as_str) != Some("]") {
            return out("", "[: missing ]\n", 2).into();
        }
        args.pop();
    }
    match eval_test(s, &args) {
        Some(true) => out("", "", 0),
        Some(false) => out("", "", 1),
        None => out("", "test: syntax error\n", 2),
    }
    .into()
}

fn eval_test(s: &Session, args: &[String]) -> Option<bool> {
    let disk = s.disk();
    let entry = |p: &str| disk.get(&s.path(p));
    match args {
        [] => Some(false),
        [bang, rest @ ..] if bang == "!" => eval_test(s, rest).map(|b| !b),
        [single] => Some(!single.is_empty()),
        [op, p] => Some(match op.as_str() {
            "-n" => !p.is_empty(),
            "-z" => p.is_empty(),
            "-e" | "-r" | "-a" => entry(p).is_some(),
            "-f" => entry(p).is_some_and(|e| e.file.is_some()),
            "-d" => entry(p).is_some_and(|e| e.file.is_none()),
            "-s" => entry(p).is_some_and(|e| e.size() > 0),
            "-x" => entry(p).is_some_and(|e| e.file.as_ref().is_none_or(|(_, m)| m & 0o111 != 0)),
            "-w" => entry(p).is_some_and(|e| e.file.as_ref().is_some_and(|(_, m)| m & 0o222 != 0)),
            "-L" | "-h" => false,
            _ => return None,
        }),
        [a, op, b] => {
            let num = |x: &str| x.trim().parse::<i64>().ok();
            Some(match op.as_str() {
                "=" | "==" => a == b,
                "!=" => a != b,
                "-eq" => num(a)? == num(b)?,
                "-ne" => num(a)? != num(b)?,
                "-lt" => num(a)? < num(b)?,
                "-le" => num(a)? <= num(b)?,
                "-gt" => num(a)? > num(b)?,
                "-ge" => num(a)? >= num(b)?,
                _ => return None,
            })
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// agnhost
// ---------------------------------------------------------------------------------------------

/// agnhost subcommands that run servers or long tasks: not simulated inside an exec.
const AGNHOST_SERVERS: &[&str] = &[
    "audit-proxy",
    "crd-conversion-webhook",
    "entrypoint-tester",
    "fake-gitserver",
    "grpc-health-checking",
    "guestbook",
    "inclusterclient",
    "liveness",
    "logs-generator",
    "mounttest",
    "net",
    "netexec",
    "nettest",
    "no-snat-test",
    "no-snat-test-proxy",
    "pause",
    "port-forward-tester",
    "porter",
    "resource-consumer-controller",
    "serve-hostname",
    "tcp-reset",
    "test-webserver",
    "webhook",
];

/// `agnhost dns-suffix | dns-server-list | etc-hosts | connect …`: the same output format on
/// both OSes (Go's `Println`, `\n`), from the container's DNS configuration.
fn agnhost(s: &Arc<Session>, call: Call) -> Reply {
    let sub = call.args().first().map(String::as_str).unwrap_or("");
    let o = match sub {
        "connect" => return network(s, call),
        "dns-suffix" => ExecOutput::ok(format!("{}\n", s.ctx.dns().searches.join(","))),
        "dns-server-list" => ExecOutput::ok(format!("{}\n", s.ctx.dns().nameservers.join(","))),
        "etc-hosts" => {
            let path = if s.windows() { WINDOWS_HOSTS_PATH } else { "/etc/hosts" };
            let content = s.disk().get(path).and_then(|e| e.file.as_ref()).map(|(d, _)| d.clone());
            ExecOutput::ok(content.unwrap_or_default())
        }
        "" | "help" | "--help" | "-h" => ExecOutput::ok(
            "agnhost: a test image with multiple subcommands.\n\nUsage:\n  agnhost [command]\n\nUse \"agnhost \
            [command] --help\" for more information about a command.\n",
        ),
        server if AGNHOST_SERVERS.contains(&server) => out(
            "",
            format!("agnhost {server}: not simulated by the bundled cluster inside an exec\n"),
            1,
        ),
        other => out(
            "",
            format!("Error: unknown command {other:?} for \"agnhost\"\nRun 'agnhost --help' for usage.\n"),
            1,
        ),
    };
    o.into()
}

// ---------------------------------------------------------------------------------------------
// Network commands: through the seam's wire, or offline
// ---------------------------------------------------------------------------------------------

/// .NET socket scripts are not statements the PowerShell interpreter runs one by one: a
/// UdpClient exchange is answered as a whole ([`nettools::dotnet_udp`]).
fn ps_dotnet_udp(s: &Session, script: &str) -> Option<ExecOutput> {
    match &s.network {
        Some(net) => nettools::dotnet_udp(&s.ctx, net.wire(&s.ctx).as_ref(), script),
        None => {
            let dns_server = s.ctx.dns().nameservers.first().cloned().unwrap_or_default();
            nettools::dotnet_udp(&s.ctx, &Offline { dns_server }, script)
        }
    }
}

fn network(s: &Arc<Session>, call: Call) -> Reply {
    let o = match &s.network {
        Some(net) => nettools::run_with_input(&s.ctx, net.wire(&s.ctx).as_ref(), &call.argv, &call.stdin),
        None => {
            let dns_server = s.ctx.dns().nameservers.first().cloned().unwrap_or_default();
            nettools::run_with_input(&s.ctx, &Offline { dns_server }, &call.argv, &call.stdin)
        }
    };
    o.into()
}

// ---------------------------------------------------------------------------------------------
// Shell plumbing shared by sh, cmd and PowerShell
// ---------------------------------------------------------------------------------------------

/// How a pipeline is chained to the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chain {
    Always,
    And,
    Or,
}

fn skipped(chain: Chain, status: i32) -> bool {
    (chain == Chain::And && status != 0) || (chain == Chain::Or && status == 0)
}

/// Where an output stream ends up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sink {
    Out,
    Err,
    Null,
    /// The n-th file the command's redirections opened.
    File(usize),
}

/// The target of an output redirection: the n-th opened file, the null device, or another
/// descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RedirTo {
    File(usize),
    Null,
    Fd(u8),
}

/// Applies output redirections in order: where fd 1 and fd 2 end up.
fn route(redirs: &[(u8, RedirTo)]) -> [Sink; 2] {
    let mut sinks = [Sink::Out, Sink::Err];
    for (fd, to) in redirs {
        let Some(slot) = fd.checked_sub(1).map(usize::from).filter(|i| *i < 2) else {
            continue;
        };
        sinks[slot] = match to {
            RedirTo::File(n) => Sink::File(*n),
            RedirTo::Null => Sink::Null,
            RedirTo::Fd(1) => sinks[0],
            RedirTo::Fd(2) => sinks[1],
            RedirTo::Fd(_) => continue,
        };
    }
    sinks
}

/// Output files a command opened: (path as given, append), and what it wrote to each.
#[derive(Debug, Default)]
struct Opened {
    files: Vec<(String, bool)>,
    written: Vec<Vec<u8>>,
}

impl Opened {
    /// Opens every file before the command runs, as shells do (`>` truncates, `>>` creates):
    /// the first that cannot be opened stops the command, with its path and why.
    fn open(s: &Session, files: Vec<(String, bool)>) -> Result<Self, (String, WriteError)> {
        for (path, append) in &files {
            s.write_file(path, b"", *append).map_err(|e| (path.clone(), e))?;
        }
        let written = vec![Vec::new(); files.len()];
        Ok(Self { files, written })
    }

    /// Appends what the command wrote to each file.
    fn close(self, s: &Session) {
        for ((path, _), data) in self.files.iter().zip(self.written) {
            if !data.is_empty() {
                // Opening succeeded, so writing can only fail if the tree changed meanwhile.
                let _ = s.write_file(path, &data, true);
            }
        }
    }
}

fn deliver(o: ExecOutput, sinks: [Sink; 2], stdout: &mut Vec<u8>, stderr: &mut Vec<u8>, opened: &mut Opened) {
    for (bytes, sink) in [(o.stdout, sinks[0]), (o.stderr, sinks[1])] {
        match sink {
            Sink::Out => stdout.extend(bytes),
            Sink::Err => stderr.extend(bytes),
            Sink::Null => {}
            Sink::File(n) => {
                if let Some(buf) = opened.written.get_mut(n) {
                    buf.extend(bytes);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// sh (busybox ash; busybox-w32 on Windows)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Piece {
    Lit(String),
    Var(String),
}

#[derive(Debug, Clone, Default)]
struct Word {
    pieces: Vec<Piece>,
    quoted: bool,
}

impl Word {
    /// The unquoted literal text of a word, if it is one (for reserved words).
    fn bare(&self) -> Option<&str> {
        match self.pieces.as_slice() {
            [Piece::Lit(l)] if !self.quoted => Some(l),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
enum ShRedir {
    /// To a file (`>`, or `>>` to append).
    Out {
        target: Word,
        append: bool,
    },
    In(Word),
    Dup(u8),
}

#[derive(Debug, Clone)]
enum ShTok {
    Word(Word),
    Op(&'static str),
    Redir(u8, ShRedir),
}

#[derive(Debug, Default)]
struct ShSimple {
    words: Vec<Word>,
    redirs: Vec<(u8, ShRedir)>,
}

/// A command of a pipeline: a simple command or a compound one with its redirections.
#[derive(Debug)]
enum ShCmd {
    Simple(ShSimple),
    /// `( list )` (a subshell: variables and `exit` stay inside) or `{ list; }`.
    Group {
        body: Vec<ShPipeline>,
        subshell: bool,
        redirs: Vec<(u8, ShRedir)>,
    },
    /// `if list; then list; [elif list; then list;]… [else list;] fi`.
    If {
        arms: Vec<(Vec<ShPipeline>, Vec<ShPipeline>)>,
        otherwise: Option<Vec<ShPipeline>>,
        redirs: Vec<(u8, ShRedir)>,
    },
}

#[derive(Debug)]
struct ShPipeline {
    chain: Chain,
    /// `! pipeline` inverts its status.
    negate: bool,
    cmds: Vec<ShCmd>,
}

/// `$NAME`, `${NAME}`, `$?` … at `c[*i] == '$'`; None when no name follows.
fn lex_var(c: &[char], i: &mut usize) -> Option<String> {
    let next = *c.get(*i + 1)?;
    if next == '{' {
        let rest = c.get(*i + 2..)?;
        let end = rest.iter().position(|x| *x == '}')?;
        *i += end + 3;
        return Some(rest.get(..end)?.iter().collect());
    }
    if matches!(next, '?' | '#' | '$' | '!' | '@' | '*') || next.is_ascii_digit() {
        *i += 2;
        return Some(next.to_string());
    }
    if !(next.is_ascii_alphabetic() || next == '_') {
        return None;
    }
    let start = *i + 1;
    let mut end = start;
    while c.get(end).is_some_and(|x| x.is_ascii_alphanumeric() || *x == '_') {
        end += 1;
    }
    *i = end;
    Some(c.get(start..end)?.iter().collect())
}

/// `$( … )` at `c[*i] == '$'`: command substitution is not run; its text stays literal.
fn lex_substitution(c: &[char], i: &mut usize, lit: &mut String) -> bool {
    if c.get(*i + 1) != Some(&'(') {
        return false;
    }
    let mut depth = 0usize;
    while let Some(&x) = c.get(*i) {
        lit.push(x);
        *i += 1;
        match x {
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
    }
    true
}

fn lex_word(c: &[char], i: &mut usize) -> Result<Word, String> {
    let mut word = Word::default();
    let mut lit = String::new();
    let flush = |lit: &mut String, word: &mut Word| {
        if !lit.is_empty() {
            word.pieces.push(Piece::Lit(std::mem::take(lit)));
        }
    };
    while let Some(&ch) = c.get(*i) {
        match ch {
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => break,
            '\'' => {
                word.quoted = true;
                *i += 1;
                loop {
                    match c.get(*i) {
                        None => return Err("syntax error: unterminated quoted string".into()),
                        Some('\'') => break,
                        Some(&x) => lit.push(x),
                    }
                    *i += 1;
                }
                *i += 1;
            }
            '"' => {
                word.quoted = true;
                *i += 1;
                loop {
                    match c.get(*i) {
                        None => return Err("syntax error: unterminated quoted string".into()),
                        Some('"') => break,
                        Some('\\') if matches!(c.get(*i + 1), Some('"' | '\\' | '$' | '`')) => {
                            lit.extend(c.get(*i + 1));
                            *i += 2;
                        }
                        Some('$') if lex_substitution(c, i, &mut lit) => {}
                        Some('$') => match lex_var(c, i) {
                            Some(var) => {
                                flush(&mut lit, &mut word);
                                word.pieces.push(Piece::Var(var));
                            }
                            None => {
                                lit.push('$');
                                *i += 1;
                            }
                        },
                        Some(&x) => {
                            lit.push(x);
                            *i += 1;
                        }
                    }
                }
                *i += 1;
            }
            '\\' => {
                if let Some(&x) = c.get(*i + 1).filter(|x| **x != '\n') {
                    lit.push(x);
                }
                *i += 2;
            }
            '$' if lex_substitution(c, i, &mut lit) => {}
            '$' => match lex_var(c, i) {
                Some(var) => {
                    flush(&mut lit, &mut word);
                    word.pieces.push(Piece::Var(var));
                }
                None => {
                    lit.push('$');
                    *i += 1;
                }
            },
            _ => {
                lit.push(ch);
                *i += 1;
            }
        }
    }
    flush(&mut lit, &mut word);
    Ok(word)
}

fn lex_redir(c: &[char], i: &mut usize, fd: Option<u8>) -> Result<ShTok, String> {
    let input = c.get(*i) == Some(&'<');
    *i += 1;
    if !input && c.get(*i) == Some(&'&') {
        let to = c
            .get(*i + 1)
            .and_then(|d| d.to_digit(10))
            .and_then(|d| u8::try_from(d).ok());
        *i += 2;
        return match to {
            Some(to) => Ok(ShTok::Redir(fd.unwrap_or(1), ShRedir::Dup(to))),
            None => Err("syntax error: bad fd number".into()),
        };
    }
    let append = !input && c.get(*i) == Some(&'>');
    if append {
        *i += 1;
    }
    while c.get(*i).is_some_and(|x| *x == ' ' || *x == '\t') {
        *i += 1;
    }
    let target = lex_word(c, i)?;
    if target.pieces.is_empty() && !target.quoted {
        return Err("syntax error: unexpected newline".into());
    }
    Ok(if input {
        ShTok::Redir(fd.unwrap_or(0), ShRedir::In(target))
    } else {
        ShTok::Redir(fd.unwrap_or(1), ShRedir::Out { target, append })
    })
}

fn lex_sh(text: &str) -> Result<Vec<ShTok>, String> {
    let c: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut toks = Vec::new();
    while let Some(&ch) = c.get(i) {
        let next = c.get(i + 1).copied();
        match ch {
            ' ' | '\t' => i += 1,
            '\\' if next == Some('\n') => i += 2,
            '\n' | ';' => {
                toks.push(ShTok::Op(";"));
                i += 1;
            }
            '#' => {
                while c.get(i).is_some_and(|x| *x != '\n') {
                    i += 1;
                }
            }
            '&' | '|' if next == Some(ch) => {
                toks.push(ShTok::Op(if ch == '&' { "&&" } else { "||" }));
                i += 2;
            }
            '&' => {
                toks.push(ShTok::Op(";"));
                i += 1;
            }
            '|' => {
                toks.push(ShTok::Op("|"));
                i += 1;
            }
            '(' | ')' => {
                toks.push(ShTok::Op(if ch == '(' { "(" } else { ")" }));
                i += 1;
            }
            '>' | '<' => toks.push(lex_redir(&c, &mut i, None)?),
            d if d.is_ascii_digit() && matches!(next, Some('>' | '<')) => {
                i += 1;
                let fd = d.to_digit(10).and_then(|d| u8::try_from(d).ok());
                toks.push(lex_redir(&c, &mut i, fd)?);
            }
            _ => toks.push(ShTok::Word(lex_word(&c, &mut i)?)),
        }
    }
    Ok(toks)
}

/// Words that start or end compound commands where a command may start.
const SH_RESERVED: &[&str] = &["if", "then", "elif", "else", "fi", "{", "}", "!"];

/// A recursive-descent parser of sh command lists.
struct ShParser {
    toks: Vec<ShTok>,
    i: usize,
}

fn sh_unexpected(tok: Option<&ShTok>) -> String {
    match tok {
        None => "syntax error: unexpected end of file".into(),
        Some(ShTok::Op(";")) => "syntax error: unexpected \";\"".into(),
        Some(ShTok::Op(op)) => format!("syntax error: unexpected \"{op}\""),
        Some(ShTok::Word(w)) => format!("syntax error: unexpected \"{}\"", w.bare().unwrap_or("word")),
        Some(ShTok::Redir(..)) => "syntax error: unexpected redirection".into(),
    }
}

impl ShParser {
    fn peek(&self) -> Option<&ShTok> {
        self.toks.get(self.i)
    }

    /// The reserved word at the current position, if any.
    fn reserved(&self) -> Option<&'static str> {
        match self.peek() {
            Some(ShTok::Word(w)) => {
                let bare = w.bare()?;
                SH_RESERVED.iter().copied().find(|r| *r == bare)
            }
            _ => None,
        }
    }

    fn op(&self) -> Option<&'static str> {
        match self.peek() {
            Some(ShTok::Op(op)) => Some(op),
            _ => None,
        }
    }

    fn expect_reserved(&mut self, word: &str) -> Result<(), String> {
        if self.reserved() == Some(word) {
            self.i += 1;
            Ok(())
        } else {
            Err(sh_unexpected(self.peek()))
        }
    }

    /// A list of pipelines, up to the end, a `)` or one of the reserved words `stops`.
    fn list(&mut self, stops: &[&str]) -> Result<Vec<ShPipeline>, String> {
        let mut list = Vec::new();
        let mut chain = Chain::Always;
        loop {
            while self.op() == Some(";") && chain == Chain::Always {
                self.i += 1;
            }
            let at_end = match self.peek() {
                None => true,
                Some(ShTok::Op(")")) => true,
                _ => self.reserved().is_some_and(|r| stops.contains(&r)),
            };
            if at_end {
                if chain != Chain::Always {
                    return Err(sh_unexpected(self.peek()));
                }
                return Ok(list);
            }
            let mut pipeline = self.pipeline()?;
            pipeline.chain = chain;
            list.push(pipeline);
            chain = match self.op() {
                Some(";") => Chain::Always,
                Some("&&") => Chain::And,
                Some("||") => Chain::Or,
                _ => return Ok(list),
            };
            self.i += 1;
        }
    }

    fn pipeline(&mut self) -> Result<ShPipeline, String> {
        let negate = self.reserved() == Some("!");
        if negate {
            self.i += 1;
        }
        let mut cmds = vec![self.command()?];
        while self.op() == Some("|") {
            self.i += 1;
            cmds.push(self.command()?);
        }
        Ok(ShPipeline {
            chain: Chain::Always,
            negate,
            cmds,
        })
    }

    fn redirections(&mut self) -> Vec<(u8, ShRedir)> {
        let mut redirs = Vec::new();
        while let Some(ShTok::Redir(fd, r)) = self.peek() {
            redirs.push((*fd, r.clone()));
            self.i += 1;
        }
        redirs
    }

    fn command(&mut self) -> Result<ShCmd, String> {
        if self.op() == Some("(") {
            self.i += 1;
            let body = self.list(&[])?;
            if self.op() != Some(")") || body.is_empty() {
                return Err(sh_unexpected(self.peek()));
            }
            self.i += 1;
            let redirs = self.redirections();
            return Ok(ShCmd::Group {
                body,
                subshell: true,
                redirs,
            });
        }
        match self.reserved() {
            Some("{") => {
                self.i += 1;
                let body = self.list(&["}"])?;
                self.expect_reserved("}")?;
                let redirs = self.redirections();
                return Ok(ShCmd::Group {
                    body,
                    subshell: false,
                    redirs,
                });
            }
            Some("if") => {
                self.i += 1;
                let mut arms = Vec::new();
                let mut otherwise = None;
                loop {
                    let cond = self.list(&["then"])?;
                    self.expect_reserved("then")?;
                    let body = self.list(&["elif", "else", "fi"])?;
                    if cond.is_empty() || body.is_empty() {
                        return Err(sh_unexpected(self.peek()));
                    }
                    arms.push((cond, body));
                    match self.reserved() {
                        Some("elif") => self.i += 1,
                        Some("else") => {
                            self.i += 1;
                            otherwise = Some(self.list(&["fi"])?);
                            self.expect_reserved("fi")?;
                            break;
                        }
                        _ => {
                            self.expect_reserved("fi")?;
                            break;
                        }
                    }
                }
                let redirs = self.redirections();
                return Ok(ShCmd::If {
                    arms,
                    otherwise,
                    redirs,
                });
            }
            Some(word @ ("then" | "elif" | "else" | "fi" | "}")) => {
                return Err(format!("syntax error: unexpected \"{word}\""));
            }
            _ => {}
        }
        let mut simple = ShSimple::default();
        loop {
            match self.peek() {
                Some(ShTok::Word(w)) => simple.words.push(w.clone()),
                Some(ShTok::Redir(fd, r)) => simple.redirs.push((*fd, r.clone())),
                _ => break,
            }
            self.i += 1;
        }
        if simple.words.is_empty() && simple.redirs.is_empty() {
            return Err(sh_unexpected(self.peek()));
        }
        Ok(ShCmd::Simple(simple))
    }
}

fn parse_sh(toks: Vec<ShTok>) -> Result<Vec<ShPipeline>, String> {
    let mut parser = ShParser { toks, i: 0 };
    let list = parser.list(&[])?;
    match parser.peek() {
        None => Ok(list),
        other => Err(sh_unexpected(other)),
    }
}

/// A word's value; None for an unquoted word that expanded to nothing (it disappears).
fn expand(word: &Word, vars: &[(String, String)], status: i32) -> Option<String> {
    let mut text = String::new();
    for piece in &word.pieces {
        match piece {
            Piece::Lit(l) => text.push_str(l),
            Piece::Var(v) => match v.as_str() {
                "?" => text.push_str(&status.to_string()),
                "$" => text.push('1'),
                "#" => text.push('0'),
                "0" => text.push_str("sh"),
                name => text.push_str(env_get(vars, name, false).unwrap_or("")),
            },
        }
    }
    (!text.is_empty() || word.quoted || word.pieces.iter().any(|p| matches!(p, Piece::Lit(_)))).then_some(text)
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        let mut chars = name.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn sh(s: &Arc<Session>, call: Call) -> Reply {
    let args = call.args();
    let mut script: Option<String> = None;
    let mut idx = 0;
    while let Some(a) = args.get(idx) {
        if a.starts_with('-') && a.len() > 1 && !a.starts_with("--") {
            if a.contains('c') {
                match args.get(idx + 1) {
                    Some(text) => script = Some(text.clone()),
                    None => return out("", "sh: -c requires an argument\n", 2).into(),
                }
                break;
            }
            idx += 1;
            continue;
        }
        match s.disk().get(&s.path(a)).and_then(|e| e.file.as_ref()) {
            Some((data, _)) => script = Some(String::from_utf8_lossy(data).into_owned()),
            None => return out("", format!("sh: can't open '{a}': No such file or directory\n"), 2).into(),
        }
        break;
    }
    let (script, stdin) = match script {
        Some(text) => (text, call.stdin),
        None => (String::from_utf8_lossy(&call.stdin).into_owned(), Bytes::new()),
    };
    Reply::Later(Box::pin(run_sh(s.clone(), script, stdin, call.env)))
}

/// The state of a running sh script.
struct ShState {
    vars: Vec<(String, String)>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: i32,
    /// What the script reads (the exec's stdin), until a command takes it.
    stdin: Option<Bytes>,
}

/// How a list ended: normally, or by `exit` (with its status).
enum ShFlow {
    Next,
    Exit(i32),
}

async fn run_sh(s: Arc<Session>, script: String, stdin: Bytes, env: Vec<(String, String)>) -> ExecOutput {
    let list = match lex_sh(&script).and_then(parse_sh) {
        Ok(p) => p,
        Err(e) => return out("", format!("sh: {e}\n"), 2),
    };
    let mut st = ShState {
        vars: env,
        stdout: Vec::new(),
        stderr: Vec::new(),
        status: 0,
        stdin: Some(stdin),
    };
    let status = match sh_list(&s, &list, &mut st).await {
        ShFlow::Next => st.status,
        ShFlow::Exit(code) => code,
    };
    out(st.stdout, st.stderr, status)
}

/// The message and status of a redirection that cannot be opened.
fn sh_open_error(s: &Session, path: &str, e: WriteError) -> String {
    let why = match e {
        WriteError::ReadOnly if s.windows() => "Permission denied",
        WriteError::ReadOnly => "Read-only file system",
        WriteError::NoDirectory => "nonexistent directory",
        WriteError::IsDirectory => "Is a directory",
    };
    format!("sh: can't create {path}: {why}\n")
}

/// A command's opened output files, its output routes and its input file.
type ShRedirections = (Opened, Vec<(u8, RedirTo)>, Option<String>);

/// Splits redirections into output routes (opening files) and an input file.
fn sh_redirections(s: &Session, redirs: &[(u8, ShRedir)], st: &ShState) -> Result<ShRedirections, String> {
    let mut files = Vec::new();
    let mut outputs = Vec::new();
    let mut from = None;
    for (fd, r) in redirs {
        match r {
            ShRedir::Out { target, append } => {
                let path = expand(target, &st.vars, st.status).unwrap_or_default();
                if volumes::is_null_device(&path, s.windows()) {
                    outputs.push((*fd, RedirTo::Null));
                    continue;
                }
                files.push((path, *append));
                outputs.push((*fd, RedirTo::File(files.len() - 1)));
            }
            ShRedir::Dup(to) => outputs.push((*fd, RedirTo::Fd(*to))),
            ShRedir::In(w) => from = expand(w, &st.vars, st.status),
        }
    }
    let opened = Opened::open(s, files).map_err(|(path, e)| sh_open_error(s, &path, e))?;
    Ok((opened, outputs, from))
}

fn sh_list<'a>(
    s: &'a Arc<Session>,
    list: &'a [ShPipeline],
    st: &'a mut ShState,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ShFlow> + Send + 'a>> {
    Box::pin(async move {
        for pipeline in list {
            if skipped(pipeline.chain, st.status) {
                continue;
            }
            if let ShFlow::Exit(code) = sh_pipeline(s, pipeline, st).await {
                return ShFlow::Exit(code);
            }
        }
        ShFlow::Next
    })
}

async fn sh_pipeline(s: &Arc<Session>, pipeline: &ShPipeline, st: &mut ShState) -> ShFlow {
    let last = pipeline.cmds.len().saturating_sub(1);
    let mut input = st.stdin.take().unwrap_or_default();
    for (idx, cmd) in pipeline.cmds.iter().enumerate() {
        let piped = idx < last;
        let (flow, output) = sh_command(s, cmd, st, std::mem::take(&mut input), piped).await;
        if let ShFlow::Exit(code) = flow {
            return ShFlow::Exit(code);
        }
        input = Bytes::from(output);
    }
    if pipeline.negate {
        st.status = i32::from(st.status == 0);
    }
    ShFlow::Next
}

/// Runs one command of a pipeline; returns how it ended and, when it feeds a pipe, its output.
async fn sh_command(s: &Arc<Session>, cmd: &ShCmd, st: &mut ShState, input: Bytes, piped: bool) -> (ShFlow, Vec<u8>) {
    let redirs = match cmd {
        ShCmd::Simple(simple) => &simple.redirs,
        ShCmd::Group { redirs, .. } | ShCmd::If { redirs, .. } => redirs,
    };
    let (mut opened, outputs, from) = match sh_redirections(s, redirs, st) {
        Ok(x) => x,
        Err(message) => {
            st.stderr.extend(message.into_bytes());
            st.status = 1;
            return (ShFlow::Next, Vec::new());
        }
    };
    let cin = match &from {
        None => input,
        Some(path) => match s.disk().get(&s.path(path)).and_then(|e| e.file.as_ref()) {
            Some((data, _)) => Bytes::from(data.clone()),
            None => {
                st.stderr
                    .extend(format!("sh: can't open '{path}': No such file or directory\n").into_bytes());
                st.status = 1;
                return (ShFlow::Next, Vec::new());
            }
        },
    };
    let sinks = route(&outputs);
    let (flow, o) = match cmd {
        ShCmd::Simple(simple) => sh_simple(s, simple, st, cin).await,
        ShCmd::Group { body, subshell, .. } => {
            let mut inner = ShState {
                vars: st.vars.clone(),
                stdout: Vec::new(),
                stderr: Vec::new(),
                status: st.status,
                stdin: Some(cin),
            };
            let flow = sh_list(s, body, &mut inner).await;
            let (flow, status) = match (flow, subshell) {
                (ShFlow::Exit(code), true) => (ShFlow::Next, code),
                (ShFlow::Exit(code), false) => (ShFlow::Exit(code), code),
                (ShFlow::Next, _) => (ShFlow::Next, inner.status),
            };
            if !subshell {
                st.vars = inner.vars;
            }
            (flow, out(inner.stdout, inner.stderr, status))
        }
        ShCmd::If { arms, otherwise, .. } => {
            let mut inner = ShState {
                vars: std::mem::take(&mut st.vars),
                stdout: Vec::new(),
                stderr: Vec::new(),
                status: st.status,
                stdin: Some(cin),
            };
            let mut flow = ShFlow::Next;
            let mut ran = false;
            for (cond, body) in arms {
                if let ShFlow::Exit(code) = sh_list(s, cond, &mut inner).await {
                    flow = ShFlow::Exit(code);
                    ran = true;
                    break;
                }
                if inner.status == 0 {
                    flow = sh_list(s, body, &mut inner).await;
                    ran = true;
                    break;
                }
            }
            if !ran {
                match otherwise {
                    Some(body) => flow = sh_list(s, body, &mut inner).await,
                    None => inner.status = 0,
                }
            }
            st.vars = inner.vars;
            let status = match flow {
                ShFlow::Exit(code) => code,
                ShFlow::Next => inner.status,
            };
            (flow, out(inner.stdout, inner.stderr, status))
        }
    };
    st.status = code_of(&o);
    let mut piped_out = Vec::new();
    let target = if piped { &mut piped_out } else { &mut st.stdout };
    deliver(o, sinks, target, &mut st.stderr, &mut opened);
    opened.close(s);
    (flow, piped_out)
}

/// Runs a simple command: assignments, the built-ins, or a program.
async fn sh_simple(s: &Arc<Session>, simple: &ShSimple, st: &mut ShState, cin: Bytes) -> (ShFlow, ExecOutput) {
    let mut argv: Vec<String> = simple
        .words
        .iter()
        .filter_map(|w| expand(w, &st.vars, st.status))
        .collect();
    let assigned: Vec<(String, String)> = argv
        .drain(..argv.iter().take_while(|a| is_assignment(a)).count())
        .filter_map(|a| a.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    let o = match argv.first().map(String::as_str) {
        None => {
            for (k, v) in assigned {
                env_set(&mut st.vars, &k, v, false);
            }
            out("", "", 0)
        }
        Some("exit") => {
            let code = match argv.get(1) {
                None => st.status,
                Some(n) => match n.parse::<i64>() {
                    Ok(n) => i32::try_from(n.rem_euclid(256)).unwrap_or(0),
                    Err(_) => {
                        st.stderr
                            .extend(format!("sh: exit: Illegal number: {n}\n").into_bytes());
                        2
                    }
                },
            };
            return (ShFlow::Exit(code), out("", "", code));
        }
        Some("export") => {
            for a in argv.iter().skip(1) {
                if let Some((k, v)) = a.split_once('=') {
                    env_set(&mut st.vars, k, v.to_string(), false);
                }
            }
            out("", "", 0)
        }
        Some("unset") => {
            st.vars.retain(|(k, _)| !argv.iter().skip(1).any(|a| a == k));
            out("", "", 0)
        }
        Some("cd" | ":") => out("", "", 0),
        Some(name) => {
            let name = name.to_string();
            let mut cmd_env = st.vars.clone();
            for (k, v) in &assigned {
                env_set(&mut cmd_env, k, v.clone(), false);
            }
            let call = Call {
                argv,
                stdin: cin,
                env: cmd_env,
            };
            match s.run_child(call).await {
                Some(o) => o,
                None => out("", format!("sh: {name}: not found\n"), 127),
            }
        }
    };
    if let ExitStatus::Error(message) = &o.exit {
        st.stderr.extend(format!("sh: {message}\n").into_bytes());
    }
    (ShFlow::Next, o)
}

// ---------------------------------------------------------------------------------------------
// cmd.exe
// ---------------------------------------------------------------------------------------------

/// `cmd [/S] [/Q] [/D] /C line…`: runs the line; without `/C` prints the banner.
fn cmd(s: &Arc<Session>, call: Call) -> Reply {
    let args = call.args();
    let mut line: Option<String> = None;
    for (i, a) in args.iter().enumerate() {
        let lower = a.to_ascii_lowercase();
        if lower.starts_with("/c") || lower.starts_with("/k") {
            let first = a.get(2..).unwrap_or("");
            let rest = args.get(i + 1..).unwrap_or(&[]);
            let parts: Vec<&str> = std::iter::once(first)
                .filter(|f| !f.is_empty())
                .chain(rest.iter().map(String::as_str))
                .collect();
            line = Some(parts.join(" "));
            break;
        }
        if !lower.starts_with('/') {
            break;
        }
    }
    let Some(line) = line else {
        return ExecOutput::ok(format!(
            "Microsoft Windows [Version {}]\r\n(c) Microsoft Corporation. All rights reserved.\r\n\r\nC:\\>",
            s.kernel()
        ))
        .into();
    };
    Reply::Later(Box::pin(run_cmd(s.clone(), line, call.stdin, call.env)))
}

/// cmd strips the first and the last quote of a line that starts with one.
fn strip_cmd_quotes(line: &str) -> String {
    let trimmed = line.trim_start();
    match (trimmed.strip_prefix('"'), trimmed.rfind('"')) {
        (Some(_), Some(last)) if last > 0 => {
            let mut text = trimmed.to_string();
            text.remove(last);
            text.remove(0);
            text
        }
        _ => line.to_string(),
    }
}

/// Expands `%VAR%` (case-insensitive); unknown variables stay as written.
fn expand_percent(line: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('%') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('%') {
            Some(end) if end > 0 => {
                let name = &after[..end];
                match env_get(env, name, true) {
                    Some(v) => {
                        out.push_str(v);
                        rest = &after[end + 1..];
                    }
                    None => {
                        out.push('%');
                        out.push_str(name);
                        rest = &after[end..];
                    }
                }
            }
            _ => {
                out.push('%');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Splits a line at `&&`, `||`, `&` (pipelines) and `|` (their commands), outside quotes.
fn split_cmd(line: &str) -> Vec<(Chain, Vec<String>)> {
    let mut result = Vec::new();
    let mut segments = Vec::new();
    let mut cur = String::new();
    let mut chain = Chain::Always;
    let mut quoted = false;
    // Inside `( … )` everything is kept for the group's own line.
    let mut depth = 0usize;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            '^' if !quoted && depth > 0 => {
                cur.push(c);
                cur.extend(chars.next());
            }
            '^' if !quoted => cur.extend(chars.next()),
            '(' if !quoted && (depth > 0 || cur.trim().is_empty()) => {
                depth += 1;
                cur.push(c);
            }
            ')' if !quoted && depth > 0 => {
                depth -= 1;
                cur.push(c);
            }
            _ if depth > 0 => cur.push(c),
            '&' if cur.ends_with('>') => cur.push(c),
            '&' | '|' if !quoted => {
                let double = chars.peek() == Some(&c);
                if double {
                    chars.next();
                }
                segments.push(std::mem::take(&mut cur));
                if c == '|' && !double {
                    continue;
                }
                result.push((chain, std::mem::take(&mut segments)));
                chain = match (c, double) {
                    ('&', true) => Chain::And,
                    ('|', true) => Chain::Or,
                    _ => Chain::Always,
                };
            }
            _ => cur.push(c),
        }
    }
    segments.push(cur);
    result.push((chain, segments));
    result
}

/// Splits at whitespace outside double quotes, removing the quotes (the CRT's argv rules,
/// simplified).
fn cmd_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut started = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                started = true;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    tokens.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            c => {
                cur.push(c);
                started = true;
            }
        }
    }
    if started {
        tokens.push(cur);
    }
    tokens
}

/// A command's redirections: output routes, the files they open ((path, append), indexed by
/// [`RedirTo::File`]) and the input file.
#[derive(Debug, Default)]
struct CmdRedirs {
    outputs: Vec<(u8, RedirTo)>,
    files: Vec<(String, bool)>,
    input: Option<String>,
}

/// Takes the redirections out of a command: (text left, its redirections).
fn cmd_redirections(segment: &str) -> (String, CmdRedirs) {
    let mut text = String::new();
    let mut redirs = CmdRedirs::default();
    let mut quoted = false;
    let chars: Vec<char> = segment.chars().collect();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c == '"' {
            quoted = !quoted;
        }
        if quoted || !(c == '>' || c == '<') {
            text.push(c);
            i += 1;
            continue;
        }
        let fd_digit = text
            .chars()
            .last()
            .and_then(|d| d.to_digit(10))
            .filter(|_| text.chars().rev().nth(1).is_none_or(char::is_whitespace));
        let fd = fd_digit.and_then(|d| u8::try_from(d).ok());
        if fd.is_some() {
            text.pop();
        }
        i += 1;
        if c == '>' && chars.get(i) == Some(&'&') {
            let to = chars
                .get(i + 1)
                .and_then(|d| d.to_digit(10))
                .and_then(|d| u8::try_from(d).ok());
            i += 2;
            redirs.outputs.push((fd.unwrap_or(1), RedirTo::Fd(to.unwrap_or(1))));
            continue;
        }
        let append = c == '>' && chars.get(i) == Some(&'>');
        if append {
            i += 1;
        }
        while chars.get(i).is_some_and(|x| x.is_whitespace()) {
            i += 1;
        }
        let mut target = String::new();
        while let Some(&x) = chars.get(i).filter(|x| !x.is_whitespace() && !matches!(x, '>' | '<')) {
            if x != '"' {
                target.push(x);
            }
            i += 1;
        }
        if c == '<' {
            redirs.input = Some(target);
        } else if volumes::is_null_device(&target, true) {
            redirs.outputs.push((fd.unwrap_or(1), RedirTo::Null));
        } else {
            redirs.files.push((target, append));
            redirs
                .outputs
                .push((fd.unwrap_or(1), RedirTo::File(redirs.files.len() - 1)));
        }
    }
    (text, redirs)
}

/// `echo`, `echo.`, `echo text`: cmd prints the rest of the line as written.
fn cmd_echo(text: &str) -> Option<ExecOutput> {
    echo::cmd_echo(text).map(ExecOutput::ok)
}

/// What one cmd command did.
enum Step {
    Done(ExecOutput),
    Exit(i32),
}

/// Arguments of a cmd builtin.
struct CmdArgs<'a> {
    args: Vec<String>,
    rest: &'a str,
    env: &'a [(String, String)],
}

type Builtin = fn(&Session, &CmdArgs) -> ExecOutput;

/// cmd's internal commands (besides `echo`, `exit` and `set NAME=value`, which the
/// interpreter handles).
static CMD_BUILTINS: &[(&[&str], Builtin)] = &[
    (&["type"], cmd_type),
    (&["ver"], cmd_ver),
    (&["dir"], cmd_dir),
    (&["cd", "chdir"], cmd_cd),
    (&["set"], cmd_set),
    (&["rem"], cmd_rem),
];

fn cmd_rem(_s: &Session, _a: &CmdArgs) -> ExecOutput {
    ExecOutput::ok(Vec::new())
}

fn cmd_type(s: &Session, a: &CmdArgs) -> ExecOutput {
    if a.args.is_empty() {
        return out("", "The syntax of the command is incorrect.\r\n", 1);
    }
    let (mut stdout, mut stderr, mut code) = (Vec::new(), String::new(), 0);
    for f in &a.args {
        match s.disk().get(&s.path(f)).map(|e| &e.file) {
            Some(Some((data, _))) => stdout.extend_from_slice(data),
            Some(None) => {
                stderr.push_str("Access is denied.\r\n");
                code = 1;
            }
            None => {
                stderr.push_str("The system cannot find the file specified.\r\n");
                code = 1;
            }
        }
    }
    out(stdout, stderr, code)
}

fn cmd_ver(s: &Session, _a: &CmdArgs) -> ExecOutput {
    ExecOutput::ok(format!("\r\nMicrosoft Windows [Version {}]\r\n", s.kernel()))
}

fn cmd_cd(s: &Session, a: &CmdArgs) -> ExecOutput {
    match a.args.first() {
        None => ExecOutput::ok(format!("{}\r\n", s.cwd())),
        Some(p) if s.disk().get(&s.path(p)).is_some_and(|e| e.file.is_none()) => ExecOutput::ok(Vec::new()),
        Some(_) => out("", "The system cannot find the path specified.\r\n", 1),
    }
}

fn cmd_set(_s: &Session, a: &CmdArgs) -> ExecOutput {
    let prefix = a.rest.trim();
    let mut vars: Vec<&(String, String)> = a
        .env
        .iter()
        .filter(|(k, _)| k.to_lowercase().starts_with(&prefix.to_lowercase()))
        .collect();
    vars.sort_by_key(|(k, _)| k.to_lowercase());
    if vars.is_empty() {
        return out("", format!("Environment variable {prefix} not defined\r\n"), 1);
    }
    ExecOutput::ok(vars.iter().map(|(k, v)| format!("{k}={v}\r\n")).collect::<String>())
}

fn thousands(n: i128) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut grouped = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(d);
    }
    grouped
}

fn cmd_dir(s: &Session, a: &CmdArgs) -> ExecOutput {
    let bare = a.args.iter().any(|x| x.eq_ignore_ascii_case("/b"));
    let target = a
        .args
        .iter()
        .find(|x| !x.starts_with('/'))
        .cloned()
        .unwrap_or_else(|| s.cwd());
    let full = s.path(&target);
    let disk = s.disk();
    let Some(entry) = disk.get(&full) else {
        return out("", "File Not Found\r\n", 1);
    };
    let items: Vec<&DiskEntry> = if entry.file.is_some() {
        vec![entry]
    } else {
        disk.children(&entry.path)
    };
    if bare {
        return ExecOutput::ok(items.iter().map(|e| format!("{}\r\n", e.name())).collect::<String>());
    }
    let when = s.stamp.format("%m/%d/%Y  %I:%M %p").to_string();
    let dir = if entry.file.is_some() {
        disk.parent(&entry.path).unwrap_or_default()
    } else {
        entry.path.clone()
    };
    let serial = s.ctx.container_id().get(..8).unwrap_or("").to_uppercase();
    let mut text = format!(
        " Volume in drive C has no label.\r\n Volume Serial Number is {}-{}\r\n\r\n Directory of {dir}\r\n\r\n",
        serial.get(..4).unwrap_or(""),
        serial.get(4..).unwrap_or("")
    );
    let mut dirs = 0;
    if entry.file.is_none() && disk.parent(&entry.path).is_some() {
        for name in [".", ".."] {
            let _ = write!(text, "{when}    <DIR>          {name}\r\n");
        }
        dirs += 2;
    }
    let (mut files, mut bytes) = (0usize, 0usize);
    for e in &items {
        if e.file.is_some() {
            files += 1;
            bytes += e.size();
            let _ = write!(text, "{when} {:>17} {}\r\n", thousands(e.size() as i128), e.name());
        } else {
            dirs += 1;
            let _ = write!(text, "{when}    <DIR>          {}\r\n", e.name());
        }
    }
    let free = s
        .ctx
        .node
        .as_ref()
        .and_then(|n| n.allocatable.get("ephemeral-storage"))
        .and_then(|q| Quantity::parse(q))
        .map_or(0, Quantity::value);
    let _ = write!(
        text,
        "{files:>16} File(s) {:>14} bytes\r\n{dirs:>16} Dir(s) {:>15} bytes free\r\n",
        thousands(bytes as i128),
        thousands(free)
    );
    ExecOutput::ok(text)
}

async fn run_cmd(s: Arc<Session>, line: String, stdin: Bytes, env: Vec<(String, String)>) -> ExecOutput {
    let line = expand_percent(&strip_cmd_quotes(&line), &env);
    let mut env = env;
    let r = cmd_line(&s, &line, &mut env, stdin).await;
    out(r.stdout, r.stderr, r.exit.unwrap_or(r.status))
}

/// What a cmd line (or a parenthesised group) did; `exit` when it ran `exit`.
#[derive(Default)]
struct CmdRun {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: i32,
    exit: Option<i32>,
}

/// The message of a redirection cmd cannot open (the command does not run; errorlevel 1).
fn cmd_open_error(e: WriteError) -> &'static str {
    match e {
        // STO-READONLY-VOLUME: upstream's e2e asserts exactly this text on a readOnly mount.
        WriteError::ReadOnly | WriteError::IsDirectory => "Access is denied.\r\n",
        WriteError::NoDirectory => "The system cannot find the path specified.\r\n",
    }
}

/// `( … )` at the start of a segment: the group's line and the text after its `)`.
fn cmd_group(segment: &str) -> Option<(&str, &str)> {
    let text = segment.trim_start().strip_prefix('(')?;
    let mut depth = 1usize;
    let mut quoted = false;
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth -= 1;
                if depth == 0 {
                    return Some((text.get(..i)?, text.get(i + 1..)?));
                }
            }
            _ => {}
        }
    }
    None
}

fn cmd_line<'a>(
    s: &'a Arc<Session>,
    line: &'a str,
    env: &'a mut Vec<(String, String)>,
    stdin: Bytes,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = CmdRun> + Send + 'a>> {
    Box::pin(async move {
        let mut run = CmdRun::default();
        let mut stdin = Some(stdin);
        for (chain, segments) in split_cmd(line) {
            if skipped(chain, run.status) {
                continue;
            }
            let last = segments.len().saturating_sub(1);
            let mut input = stdin.take().unwrap_or_default();
            for (idx, segment) in segments.iter().enumerate() {
                let group = cmd_group(segment);
                let (text, redirs) = match group {
                    Some((_, after)) => cmd_redirections(after),
                    None => cmd_redirections(segment),
                };
                let cin = match redirs.input {
                    None => std::mem::take(&mut input),
                    Some(path) => match s.disk().get(&s.path(&path)).and_then(|e| e.file.as_ref()) {
                        Some((data, _)) => Bytes::from(data.clone()),
                        None => {
                            run.stderr
                                .extend_from_slice(b"The system cannot find the file specified.\r\n");
                            run.status = 1;
                            continue;
                        }
                    },
                };
                let mut opened = match Opened::open(s, redirs.files) {
                    Ok(o) => o,
                    Err((_, e)) => {
                        run.stderr.extend_from_slice(cmd_open_error(e).as_bytes());
                        run.status = 1;
                        continue;
                    }
                };
                let o = match group {
                    Some((inner, _)) => {
                        let r = cmd_line(s, inner, env, cin).await;
                        if let Some(code) = r.exit {
                            run.stdout.extend(r.stdout);
                            run.stderr.extend(r.stderr);
                            run.exit = Some(code);
                            return run;
                        }
                        out(r.stdout, r.stderr, r.status)
                    }
                    None => match run_cmd_command(s, &text, env, cin).await {
                        Step::Done(o) => o,
                        Step::Exit(code) => {
                            run.exit = Some(code);
                            return run;
                        }
                    },
                };
                run.status = code_of(&o);
                let mut piped = Vec::new();
                let target = if idx < last { &mut piped } else { &mut run.stdout };
                deliver(o, route(&redirs.outputs), target, &mut run.stderr, &mut opened);
                opened.close(s);
                input = Bytes::from(piped);
            }
        }
        run
    })
}

async fn run_cmd_command(s: &Arc<Session>, text: &str, env: &mut Vec<(String, String)>, stdin: Bytes) -> Step {
    let text = text.trim_start();
    if text.is_empty() {
        return Step::Done(ExecOutput::ok(Vec::new()));
    }
    if let Some(o) = cmd_echo(text) {
        return Step::Done(o);
    }
    let name = cmd_tokens(text).into_iter().next().unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let rest = text
        .char_indices()
        .find(|(_, c)| c.is_whitespace())
        .map_or("", |(i, _)| &text[i..]);
    if lower == "exit" {
        let code = cmd_tokens(rest)
            .iter()
            .find(|t| !t.eq_ignore_ascii_case("/b"))
            .and_then(|t| t.parse::<i32>().ok())
            .unwrap_or(0);
        return Step::Exit(code);
    }
    if lower == "set"
        && let Some((k, v)) = rest.trim_start().split_once('=')
    {
        if v.is_empty() {
            env.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
        } else {
            env_set(env, k, v.to_string(), true);
        }
        return Step::Done(ExecOutput::ok(Vec::new()));
    }
    if let Some((_, builtin)) = CMD_BUILTINS.iter().find(|(names, _)| names.contains(&lower.as_str())) {
        let args = CmdArgs {
            args: cmd_tokens(rest),
            rest,
            env: env.as_slice(),
        };
        return Step::Done(builtin(s, &args));
    }
    let call = Call {
        argv: cmd_tokens(text),
        stdin,
        env: env.clone(),
    };
    Step::Done(match s.run_child(call).await {
        Some(o) => o,
        None => out(
            "",
            format!(
                "'{name}' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n"
            ),
            1,
        ),
    })
}

// ---------------------------------------------------------------------------------------------
// PowerShell (Windows PowerShell and PowerShell Core)
// ---------------------------------------------------------------------------------------------

/// A PowerShell error record as the console prints it.
pub(crate) fn ps_error(statement: &str, head: &str, message: &str, category: &str, fqid: &str) -> String {
    let underline = "~".repeat(statement.chars().count().max(1));
    format!(
        "{head} : {message}\r\nAt line:1 char:1\r\n+ {statement}\r\n+ {underline}\r\n    + CategoryInfo          : \
        {category}\r\n    + FullyQualifiedErrorId : {fqid}\r\n \r\n"
    )
}

fn ps_not_recognized(statement: &str, name: &str) -> String {
    ps_error(
        statement,
        name,
        &format!(
            "The term '{name}' is not recognized as the name of a cmdlet, function, script file, or operable \
            program. Check the spelling of the name, or if a path was included, verify that the path is correct and \
            try again."
        ),
        &format!("ObjectNotFound: ({name}:String) [], CommandNotFoundException"),
        "CommandNotFoundException",
    )
}

fn powershell(s: &Arc<Session>, call: Call) -> Reply {
    ps_entry(s, call, false)
}

fn pwsh(s: &Arc<Session>, call: Call) -> Reply {
    ps_entry(s, call, true)
}

/// `-EncodedCommand`: base64 of UTF-16LE.
fn decode_encoded_command(text: &str) -> String {
    let bytes = b64_decode(text);
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|p| u16::from_le_bytes([p[0], p[1]]))
        .collect();
    String::from_utf16_lossy(&units)
}

/// `powershell [-NoProfile] [-NonInteractive] [-ExecutionPolicy P] -Command …` (or
/// `-EncodedCommand`, `-File`, or the command as plain arguments).
fn ps_entry(s: &Arc<Session>, call: Call, core: bool) -> Reply {
    const VALUED: &[&str] = &[
        "-executionpolicy",
        "-ep",
        "-inputformat",
        "-outputformat",
        "-windowstyle",
        "-configurationname",
        "-workingdirectory",
        "-settingsfile",
        "-version",
    ];
    let args = call.args();
    let mut script: Option<String> = None;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let lower = a.to_ascii_lowercase();
        let rest = args.get(i + 1..).unwrap_or(&[]);
        if lower == "-c" || lower.starts_with("-com") {
            script = Some(rest.join(" "));
            break;
        }
        if lower == "-e" || lower == "-ec" || lower.starts_with("-enc") {
            script = rest.first().map(|t| decode_encoded_command(t));
            break;
        }
        if lower == "-f" || lower == "-file" {
            let path = rest.first().cloned().unwrap_or_default();
            match s.disk().get(&s.path(&path)).and_then(|e| e.file.as_ref()) {
                Some((data, _)) => script = Some(String::from_utf8_lossy(data).into_owned()),
                None => {
                    return out(
                        "",
                        format!(
                            "The argument '{path}' to the -File parameter does not exist. Provide the path to an \
                            existing '.ps1' file as an argument to the -File parameter.\r\n"
                        ),
                        // Windows PowerShell exits with 0xFFFD0000.
                        if core { 64 } else { -196_608 },
                    )
                    .into();
                }
            }
            break;
        }
        if VALUED.contains(&lower.as_str()) {
            i += 2;
            continue;
        }
        if !lower.starts_with('-') {
            script = Some(args.get(i..).unwrap_or(&[]).join(" "));
            break;
        }
        i += 1;
    }
    let script = match script.as_deref() {
        Some("-") => String::from_utf8_lossy(&call.stdin).into_owned(),
        Some(_) => script.unwrap_or_default(),
        None if !call.stdin.is_empty() => String::from_utf8_lossy(&call.stdin).into_owned(),
        None => {
            let banner = if core {
                "PowerShell 6.2.7\r\nCopyright (c) Microsoft Corporation. All rights reserved.\r\n\r\n"
            } else {
                "Windows PowerShell\r\nCopyright (C) Microsoft Corporation. All rights reserved.\r\n\r\n"
            };
            return ExecOutput::ok(format!("{banner}PS {}> ", s.cwd())).into();
        }
    };
    Reply::Later(Box::pin(powershell::run(s.clone(), script, call.env, core)))
}

fn ps_section(s: &Session, dir: &str, items: &[&DiskEntry]) -> String {
    let mut text = format!(
        "\r\n\r\n    Directory: {dir}\r\n\r\n\r\nMode                 LastWriteTime         Length Name\r\n\
        ----                 -------------         ------ ----\r\n"
    );
    let date = s.stamp.format("%-m/%-d/%Y").to_string();
    let time = s.stamp.format("%-I:%M %p").to_string();
    for e in items {
        let (mode, length) = match &e.file {
            Some((data, _)) => ("-a----", data.len().to_string()),
            None => ("d-----", String::new()),
        };
        let _ = write!(text, "{mode:<6} {date:>18} {time:>8} {length:>14} {}\r\n", e.name());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::profile::RuntimeKind;
    use crate::config::topology::Topology;
    use crate::store::Part;
    use rstest::rstest;
    use std::net::Ipv4Addr;

    const NS: &str = "probe";
    const MARKER: &str = "s3cr3t-marker";
    const BUSYBOX: &str = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1";
    const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.52";
    const SERVERCORE: &str = "mcr.microsoft.com/windows/servercore:ltsc2022";
    const NANOSERVER: &str = "mcr.microsoft.com/windows/nanoserver:ltsc2022";
    const NONROOT: &str = "registry.k8s.io/e2e-test-images/nonroot:1.4";
    const HPC_IMAGE: &str = "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0";

    #[rstest]
    #[case::windows_ignores_case(true, &[("Path", "a"), ("PATH", "b"), ("x", "1")], &[("Path", "b"), ("x", "1")])]
    #[case::linux_keeps_case(false, &[("Path", "a"), ("PATH", "b")], &[("Path", "a"), ("PATH", "b")])]
    #[case::last_value_wins_in_place(false, &[("A", "1"), ("B", "2"), ("A", "3")], &[("A", "3"), ("B", "2")])]
    fn environment_names_compare_as_the_os_does(
        #[case] windows: bool,
        #[case] sets: &[(&str, &str)],
        #[case] want: &[(&str, &str)],
    ) {
        let mut env = EnvBuilder::new(windows);
        for (k, v) in sets {
            env.set((*k).to_string(), (*v).to_string());
        }
        assert_eq!(env.get("path").is_some(), windows);
        let got: Vec<(String, String)> = env.into_vars();
        let want: Vec<(String, String)> = want.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
        assert_eq!(got, want);
    }

    struct Fixture {
        store: Arc<Store>,
        profiles: Arc<Vec<NodeProfile>>,
        volumes: Arc<VolumeStore>,
    }

    impl Fixture {
        fn new() -> Self {
            Self::with_profiles(|_| {})
        }

        fn with_profiles(tweak: impl FnOnce(&mut Vec<NodeProfile>)) -> Self {
            let store = Arc::new(Store::default());
            store
                .create(resources::core("namespaces"), "", json!({"metadata": {"name": NS}}))
                .expect("namespace");
            let encoded = base64::engine::general_purpose::STANDARD.encode(MARKER);
            store
                .create(
                    resources::core("secrets"),
                    NS,
                    json!({"metadata": {"name": "creds"}, "data": {"password": encoded}}),
                )
                .expect("secret");
            store
                .create(
                    resources::core("configmaps"),
                    NS,
                    json!({"metadata": {"name": "settings"}, "data": {"mode": "fast"}}),
                )
                .expect("configmap");
            let topology = Topology::default_cluster();
            let ips: Vec<Ipv4Addr> = (0..topology.nodes.len())
                .map(|i| Ipv4Addr::new(10, 1, 0, 10 + u8::try_from(i).expect("few nodes")))
                .collect();
            let mut profiles = crate::config::profile::profiles(&topology, &ips);
            tweak(&mut profiles);
            Self {
                store,
                profiles: Arc::new(profiles),
                volumes: Arc::new(VolumeStore::new()),
            }
        }

        fn runtime(&self) -> SimRuntime {
            SimRuntime::new(self.store.clone(), self.profiles.clone()).with_volumes(self.volumes.clone())
        }

        fn profile(&self, node: &str) -> &NodeProfile {
            self.profiles.iter().find(|p| p.name == node).expect("node profile")
        }

        /// Creates a running pod bound to `node` with the given spec fields.
        fn pod(&self, name: &str, node: &str, spec: Value) -> Obj {
            let mut spec = spec;
            spec["nodeName"] = json!(node);
            let created = self
                .store
                .create(
                    resources::core("pods"),
                    NS,
                    json!({"metadata": {"name": name}, "spec": spec}),
                )
                .expect("pod");
            let index = self.profile(node).index;
            let ip = format!("10.244.{index}.7");
            self.store
                .modify(resources::core("pods"), NS, created.name(), Part::Status, |v| {
                    v["status"]["phase"] = json!("Running");
                    v["status"]["podIP"] = json!(ip);
                    Ok(())
                })
                .expect("status")
        }

        /// A pod with one container `c` mounting the `creds` secret and `settings` configMap.
        fn app(&self, name: &str, node: &str, image: &str, extra: Value) -> Obj {
            let windows = self.profile(node).is_windows();
            let (secret_at, config_at) = if windows {
                ("C:\\secrets", "C:\\config")
            } else {
                ("/etc/secret", "/etc/config")
            };
            let mut container = json!({
                "name": "c",
                "image": image,
                "env": [
                    {"name": "GREETING", "value": "hi"},
                    {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "COMPOSED", "value": "$(GREETING)-$(POD_NAME)"},
                ],
                "volumeMounts": [
                    {"name": "creds", "mountPath": secret_at},
                    {"name": "settings", "mountPath": config_at},
                ],
            });
            let mut spec = json!({
                "containers": [],
                "volumes": [
                    {"name": "creds", "secret": {"secretName": "creds"}},
                    {"name": "settings", "configMap": {"name": "settings"}},
                ],
            });
            if let Some(c) = extra.get("container").and_then(Value::as_object) {
                for (k, v) in c {
                    container[k] = v.clone();
                }
            }
            if let Some(p) = extra.get("pod").and_then(Value::as_object) {
                for (k, v) in p {
                    spec[k] = v.clone();
                }
            }
            spec["containers"] = json!([container]);
            self.pod(name, node, spec)
        }
    }

    fn request(pod: &Obj, argv: &[&str]) -> ExecRequest {
        ExecRequest {
            pod: pod.clone(),
            container: "c".into(),
            command: argv.iter().map(|s| s.to_string()).collect(),
            stdin: None,
            tty: false,
        }
    }

    async fn exec(f: &Fixture, pod: &Obj, argv: &[&str]) -> ExecOutput {
        f.runtime().exec(request(pod, argv)).await
    }

    fn text(bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes).into_owned()
    }

    fn runtime_message(o: &ExecOutput) -> String {
        match &o.exit {
            ExitStatus::Error(m) => m.clone(),
            other => panic!("expected a runtime error, got {other:?} (stdout {:?})", text(&o.stdout)),
        }
    }

    #[rstest]
    #[case::hostname(&["hostname"], "web-1\n", "", 0)]
    #[case::secret_file(&["cat", "/etc/secret/password"], MARKER, "", 0)]
    #[case::configmap_file(&["cat", "/etc/config/mode"], "fast", "", 0)]
    #[case::ls_secret(&["ls", "/etc/secret"], "password\n", "", 0)]
    #[case::printenv(&["printenv", "GREETING"], "hi\n", "", 0)]
    #[case::printenv_missing(&["printenv", "NOPE"], "", "", 1)]
    #[case::env_from_secret(&["printenv", "FROM_SECRET"], "s3cr3t-marker\n", "", 0)]
    #[case::env_refs(&["printenv", "COMPOSED"], "hi-web-1\n", "", 0)]
    #[case::echo(&["echo", "a", "b"], "a b\n", "", 0)]
    #[case::true_(&["true"], "", "", 0)]
    #[case::false_(&["false"], "", "", 1)]
    #[case::sh_exit(&["sh", "-c", "echo $GREETING && exit 3"], "hi\n", "", 3)]
    #[case::bin_sh_or(&["/bin/sh", "-c", "false || echo fallback"], "fallback\n", "", 0)]
    #[case::sh_pipe(&["sh", "-c", "cat /etc/config/mode | grep -c fast"], "1\n", "", 0)]
    #[case::sh_test(&["sh", "-c", "test -f /etc/secret/password && echo yes"], "yes\n", "", 0)]
    #[case::sh_redirect(&["sh", "-c", "cat /nope 2>/dev/null; echo $?"], "1\n", "", 0)]
    #[case::sh_quotes(&["sh", "-c", "echo 'a  b' \"$GREETING there\""], "a  b hi there\n", "", 0)]
    #[case::sh_unknown(&["sh", "-c", "unknown"], "", "sh: unknown: not found\n", 127)]
    #[case::cat_missing(&["cat", "x"], "", "cat: can't open 'x': No such file or directory\n", 1)]
    #[case::whoami(&["whoami"], "root\n", "", 0)]
    #[case::id(&["id"], "uid=0(root) gid=0(root) groups=0(root)\n", "", 0)]
    #[case::stat_default_mode(&["stat", "-c", "%a", "/etc/secret/password"], "644\n", "", 0)]
    #[case::sa_namespace(&["cat", "/var/run/secrets/kubernetes.io/serviceaccount/namespace"], NS, "", 0)]
    #[case::resolv(
        &["cat", "/etc/resolv.conf"],
        "search probe.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n",
        "",
        0
    )]
    #[case::hosts(&["sh", "-c", "grep web-1 /etc/hosts"], "10.244.1.7\tweb-1\n", "", 0)]
    #[tokio::test]
    async fn linux_commands(#[case] argv: &[&str], #[case] stdout: &str, #[case] stderr: &str, #[case] code: i32) {
        let f = Fixture::new();
        let pod = f.app("web-1", "linux-1", BUSYBOX, json!({}));
        let o = exec(&f, &pod, argv).await;
        assert_eq!(text(&o.stdout), stdout, "{argv:?}");
        assert_eq!(text(&o.stderr), stderr, "{argv:?}");
        assert_eq!(o.exit, ExitStatus::Code(code), "{argv:?}");
    }

    #[rstest]
    #[case::hostname(&["hostname"], "web-win\r\n", "", 0)]
    #[case::type_secret(&["cmd", "/c", "type", "C:\\secrets\\password"], MARKER, "", 0)]
    #[case::type_any_case(&["cmd.exe", "/c", "type C:\\SECRETS\\Password"], MARKER, "", 0)]
    #[case::type_configmap(&["cmd", "/S", "/C", "type C:\\config\\mode"], "fast", "", 0)]
    #[case::echo_env(&["cmd", "/c", "echo", "%GREETING%"], "hi\r\n", "", 0)]
    #[case::echo_unknown(&["cmd", "/c", "echo %NOPE% and %GREETING%"], "%NOPE% and hi\r\n", "", 0)]
    #[case::echo_username(&["cmd", "/c", "echo %USERNAME%"], "ContainerAdministrator\r\n", "", 0)]
    #[case::chained(&["cmd", "/S", "/C", "echo one && echo two"], "one \r\ntwo\r\n", "", 0)]
    #[case::exit(&["cmd", "/c", "exit 7"], "", "", 7)]
    #[case::set_name(&["cmd", "/c", "set COMPUTERNAME"], "COMPUTERNAME=WEB-WIN\r\n", "", 0)]
    #[case::set_user(&["cmd", "/c", "set USERNAME"], "USERNAME=ContainerAdministrator\r\n", "", 0)]
    #[case::whoami(&["whoami"], "user manager\\containeradministrator\r\n", "", 0)]
    #[case::type_missing(&["cmd", "/c", "type C:\\nope.txt"], "", "The system cannot find the file specified.\r\n", 1)]
    #[case::proc_mounts(&["cmd", "/c", "type /proc/mounts"], "", "The system cannot find the file specified.\r\n", 1)]
    #[case::unknown(
        &["cmd", "/c", "unknown"],
        "",
        "'unknown' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n",
        1
    )]
    #[case::ps_content(&["powershell", "-Command", "Get-Content C:\\secrets\\password"], "s3cr3t-marker\r\n", "", 0)]
    #[case::ps_env(&["powershell.exe", "-NoProfile", "-Command", "$env:GREETING"], "hi\r\n", "", 0)]
    #[case::ps_test_path(
        &["powershell", "-c", "Test-Path C:\\secrets\\password; Test-Path C:\\nope"],
        "True\r\nFalse\r\n",
        "",
        0
    )]
    #[case::ps_exit(&["powershell", "-Command", "exit 4"], "", "", 4)]
    #[case::ps_pipe(&["powershell", "-Command", "Get-Content C:\\config\\mode | Out-Null"], "", "", 0)]
    #[tokio::test]
    async fn windows_commands(#[case] argv: &[&str], #[case] stdout: &str, #[case] stderr: &str, #[case] code: i32) {
        let f = Fixture::new();
        let pod = f.app("web-win", "win2022-1", SERVERCORE, json!({}));
        let o = exec(&f, &pod, argv).await;
        assert_eq!(text(&o.stdout), stdout, "{argv:?}");
        assert_eq!(text(&o.stderr), stderr, "{argv:?}");
        assert_eq!(o.exit, ExitStatus::Code(code), "{argv:?}");
    }

    #[tokio::test]
    async fn powershell_errors_look_like_powershell() {
        let f = Fixture::new();
        let pod = f.app("web-win", "win2022-1", SERVERCORE, json!({}));
        let o = exec(&f, &pod, &["powershell", "-Command", "Get-Content C:\\nope"]).await;
        assert_eq!(o.exit, ExitStatus::Code(1));
        assert!(
            text(&o.stderr).starts_with("Get-Content : Cannot find path 'C:\\nope' because it does not exist.\r\n"),
            "{}",
            text(&o.stderr)
        );
        let o = exec(&f, &pod, &["powershell", "-Command", "Frobnicate-Thing"]).await;
        assert_eq!(o.exit, ExitStatus::Code(1));
        assert!(text(&o.stderr).contains("The term 'Frobnicate-Thing' is not recognized as the name of a cmdlet"));
    }

    #[rstest]
    #[case::ws2019("win2019-1", "17763")]
    #[case::ws2022("win2022-1", "20348")]
    #[tokio::test]
    async fn ver_prints_the_node_build(#[case] node: &str, #[case] build: &str) {
        let f = Fixture::new();
        let pod = f.app("ver", node, SERVERCORE, json!({}));
        let o = exec(&f, &pod, &["cmd", "/c", "ver"]).await;
        let kernel = &f.profile(node).kernel_version;
        assert_eq!(text(&o.stdout), format!("\r\nMicrosoft Windows [Version {kernel}]\r\n"));
        assert!(kernel.contains(build));
        assert_eq!(o.exit, ExitStatus::Code(0));
    }

    #[rstest]
    #[case::linux("linux-1", "probe.svc.cluster.local,svc.cluster.local,cluster.local\n")]
    #[case::ws2019("win2019-1", "probe.svc.cluster.local\n")]
    #[case::ws2022("win2022-1", "probe.svc.cluster.local\n")]
    #[tokio::test]
    async fn dns_suffix_is_single_on_windows(#[case] node: &str, #[case] suffixes: &str) {
        let f = Fixture::new();
        let pod = f.app("dns", node, AGNHOST, json!({}));
        let o = exec(&f, &pod, &["/agnhost", "dns-suffix"]).await;
        assert_eq!(text(&o.stdout), suffixes);
        let o = exec(&f, &pod, &["/agnhost", "dns-server-list"]).await;
        assert_eq!(text(&o.stdout), "10.96.0.10\n");
    }

    #[tokio::test]
    async fn custom_dns_config_reaches_resolv_conf_and_ipconfig() {
        let f = Fixture::new();
        let dns = json!({"pod": {"dnsPolicy": "None", "dnsConfig": {
            "nameservers": ["10.96.0.10", "1.1.1.1"], "searches": ["default.svc.cluster.local"],
            "options": [{"name": "ndots", "value": "2"}]}}});
        let linux = f.app("dns-lin", "linux-1", AGNHOST, dns.clone());
        let o = exec(&f, &linux, &["cat", "/etc/resolv.conf"]).await;
        assert_eq!(
            text(&o.stdout),
            "search default.svc.cluster.local\nnameserver 10.96.0.10\nnameserver 1.1.1.1\noptions ndots:2\n"
        );
        let windows = f.app("dns-win", "win2022-1", AGNHOST, dns);
        let o = exec(&f, &windows, &["ipconfig", "/all"]).await;
        let shown = text(&o.stdout);
        assert!(shown.contains("1.1.1.1"), "{shown}");
        assert!(
            shown.contains("IPv4 Address. . . . . . . . . . . : 10.244.3.7(Preferred)"),
            "{shown}"
        );
        let o = exec(&f, &windows, &["agnhost", "dns-suffix"]).await;
        assert_eq!(text(&o.stdout), "default.svc.cluster.local\n");
    }

    #[rstest]
    #[case::image_default(None, None, "ContainerUser")]
    #[case::container(None, Some("ContainerAdministrator"), "ContainerAdministrator")]
    #[case::pod(Some("ContainerAdministrator"), None, "ContainerAdministrator")]
    #[case::container_wins(Some("ContainerAdministrator"), Some("ContainerUser"), "ContainerUser")]
    #[tokio::test]
    async fn run_as_user_name_is_echoed(
        #[case] pod_user: Option<&str>,
        #[case] container_user: Option<&str>,
        #[case] expected: &str,
    ) {
        let f = Fixture::new();
        let mut extra = json!({"pod": {}, "container": {}});
        if let Some(u) = pod_user {
            extra["pod"]["securityContext"] = json!({"windowsOptions": {"runAsUserName": u}});
        }
        if let Some(u) = container_user {
            extra["container"]["securityContext"] = json!({"windowsOptions": {"runAsUserName": u}});
        }
        let pod = f.app("nonroot", "win2022-1", NONROOT, extra);
        let o = exec(&f, &pod, &["cmd", "/S", "/C", "echo %username%"]).await;
        assert_eq!(text(&o.stdout), format!("{expected}\r\n"));
        let o = exec(&f, &pod, &["whoami"]).await;
        assert_eq!(
            text(&o.stdout),
            format!("user manager\\{}\r\n", expected.to_lowercase())
        );
    }

    /// Before kubelet 1.17 runAsUserName is not honoured (alpha gate in 1.16, no field before):
    /// the image's default user runs, as in the process model.
    #[rstest]
    #[case::kubelet_1_14((1, 14), "ContainerUser")]
    #[case::kubelet_1_16((1, 16), "ContainerUser")]
    #[case::kubelet_1_17((1, 17), "ContainerAdministrator")]
    #[tokio::test]
    async fn run_as_user_name_needs_kubelet_1_17(#[case] kubelet: (u32, u32), #[case] expected: &str) {
        let f = Fixture::with_profiles(|ps| {
            for p in ps.iter_mut() {
                p.kubelet = kubelet;
            }
        });
        let extra =
            json!({"pod": {"securityContext": {"windowsOptions": {"runAsUserName": "ContainerAdministrator"}}}});
        let pod = f.app("nonroot", "win2022-1", NONROOT, extra);
        let o = exec(&f, &pod, &["cmd", "/S", "/C", "echo %username%"]).await;
        assert_eq!(text(&o.stdout), format!("{expected}\r\n"));
    }

    #[rstest]
    #[case::linux("linux-1", BUSYBOX, "frobnicate", "executable file not found in $PATH: unknown")]
    #[case::linux_path(
        "linux-1",
        BUSYBOX,
        "/opt/frob",
        "stat /opt/frob: no such file or directory: unknown"
    )]
    #[case::pause(
        "linux-1",
        "registry.k8s.io/pause:3.10",
        "sh",
        "exec: \"sh\": executable file not found"
    )]
    #[case::windows(
        "win2022-1",
        SERVERCORE,
        "frobnicate",
        "The system cannot find the file specified.: unknown"
    )]
    #[case::builtin_is_no_exe("win2022-1", SERVERCORE, "type", "hcs::System::CreateProcess")]
    #[tokio::test]
    async fn unknown_executables_fail_in_the_runtime(
        #[case] node: &str,
        #[case] image: &str,
        #[case] command: &str,
        #[case] needle: &str,
    ) {
        let f = Fixture::new();
        let pod = f.app("unknown", node, image, json!({}));
        let message = runtime_message(&exec(&f, &pod, &[command]).await);
        assert!(
            message.starts_with("failed to exec in container: failed to start exec \""),
            "{message}"
        );
        assert!(message.contains(needle), "{message}");
        if f.profile(node).is_windows() {
            assert!(message.contains("hcs::System::CreateProcess"), "{message}");
        } else {
            assert!(message.contains("OCI runtime exec failed"), "{message}");
        }
    }

    #[tokio::test]
    async fn exec_ids_are_stable_hex() {
        let f = Fixture::new();
        let pod = f.app("ids", "win2022-1", SERVERCORE, json!({}));
        let a = runtime_message(&exec(&f, &pod, &["frob"]).await);
        let b = runtime_message(&exec(&f, &pod, &["frob"]).await);
        assert_eq!(a, b);
        let id = a.split('"').nth(1).expect("quoted id");
        assert_eq!(id.len(), 64);
        assert!(id.bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[rstest]
    #[case::nanoserver(NANOSERVER, false, false)]
    #[case::servercore(SERVERCORE, true, false)]
    #[case::agnhost(AGNHOST, false, true)]
    #[tokio::test]
    async fn powershell_only_where_the_image_ships_it(#[case] image: &str, #[case] desktop: bool, #[case] core: bool) {
        let f = Fixture::new();
        let pod = f.app("ps", "win2022-1", image, json!({}));
        for (shell, present) in [("powershell", desktop), ("pwsh", core)] {
            let o = exec(&f, &pod, &[shell, "-Command", "Write-Output ok"]).await;
            if present {
                assert_eq!(o.exit, ExitStatus::Code(0), "{shell} in {image}");
                assert_eq!(text(&o.stdout), "ok\r\n");
            } else {
                assert!(
                    runtime_message(&o).contains("hcs::System::CreateProcess"),
                    "{shell} in {image}"
                );
                let o = exec(&f, &pod, &["cmd", "/c", &format!("{shell} -Command hostname")]).await;
                assert_eq!(o.exit, ExitStatus::Code(1));
                assert!(text(&o.stderr).starts_with(&format!("'{shell}' is not recognized")));
            }
        }
    }

    /// curl.exe ships with Windows from build 17063 on: a Windows Server 1709 container has none.
    #[rstest]
    #[case::ws1709("10.0.16299.192", false)]
    #[case::ws2016("10.0.14393.1198", false)]
    #[case::ws2019("10.0.17763.6414", true)]
    #[tokio::test]
    async fn curl_exe_only_from_build_17063(#[case] kernel: &str, #[case] present: bool) {
        let f = Fixture::with_profiles(|ps| {
            for p in ps.iter_mut().filter(|p| p.name == "win2019-1") {
                p.kernel_version = kernel.to_string();
            }
        });
        let pod = f.app(
            "old",
            "win2019-1",
            "mcr.microsoft.com/windows/servercore:1709",
            json!({}),
        );
        let o = exec(&f, &pod, &["curl.exe", "--version"]).await;
        if present {
            assert!(!matches!(o.exit, ExitStatus::Error(_)), "{kernel}");
        } else {
            assert!(runtime_message(&o).contains("hcs::System::CreateProcess"), "{kernel}");
            let o = exec(&f, &pod, &["cmd", "/c", "curl.exe -s http://10.0.0.1/"]).await;
            assert_eq!(o.exit, ExitStatus::Code(1));
            assert!(
                text(&o.stderr).starts_with("'curl.exe' is not recognized"),
                "{}",
                text(&o.stderr)
            );
        }
    }

    /// Windows PowerShell's own network clients in a Server Core container without a network:
    /// Invoke-RestMethod and a .NET UdpClient exchange both time out.
    #[rstest]
    #[case::irm(
        "Invoke-RestMethod -Uri http://10.0.0.1:8080/hostname -TimeoutSec 5",
        "Invoke-RestMethod : The operation has timed out."
    )]
    #[case::udp(
        "$u = New-Object System.Net.Sockets.UdpClient; $u.Connect('10.0.0.1', 8081); $b = [Text.Encoding]::ASCII.GetBytes('hostname'); [void]$u.Send($b, $b.Length); $e = $null; [Text.Encoding]::ASCII.GetString($u.Receive([ref]$e))",
        "Exception calling \"Receive\" with \"1\" argument(s)"
    )]
    #[tokio::test]
    async fn windows_powershell_network_clients(#[case] script: &str, #[case] error: &str) {
        let f = Fixture::new();
        let pod = f.app("ps", "win2022-1", SERVERCORE, json!({}));
        let o = exec(&f, &pod, &["powershell.exe", "-NoProfile", "-Command", script]).await;
        assert_eq!(o.exit, ExitStatus::Code(1));
        assert!(text(&o.stderr).starts_with(error), "{}", text(&o.stderr));
    }

    #[tokio::test]
    async fn resolve_dns_name_exists_only_in_windows_powershell() {
        let f = Fixture::new();
        let pod = f.app("ps", "win2022-1", AGNHOST, json!({}));
        let o = exec(&f, &pod, &["pwsh", "-c", "Resolve-DnsName kubernetes"]).await;
        assert!(text(&o.stderr).contains("The term 'Resolve-DnsName' is not recognized"));
    }

    fn host_process_spec(user: &str) -> Value {
        json!({
            "hostNetwork": true,
            "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": user}},
            "containers": [{"name": "c", "image": HPC_IMAGE}],
        })
    }

    #[tokio::test]
    async fn host_process_sees_another_pods_secret_in_clear_text() {
        let f = Fixture::new();
        let victim = f.app("victim", "win2022-1", SERVERCORE, json!({}));
        let probe = f.pod("node-probe", "win2022-1", host_process_spec("NT AUTHORITY\\SYSTEM"));
        let path = format!(
            "C:\\var\\lib\\kubelet\\pods\\{}\\volumes\\kubernetes.io~secret\\creds\\password",
            victim.uid()
        );
        let o = exec(&f, &probe, &["powershell", "-Command", &format!("Get-Content {path}")]).await;
        assert_eq!(text(&o.stdout), format!("{MARKER}\r\n"));
        let o = exec(&f, &probe, &["cmd", "/c", "type", &path]).await;
        assert_eq!(text(&o.stdout), MARKER);
        let listing = exec(
            &f,
            &probe,
            &[
                "powershell",
                "-Command",
                "Get-ChildItem -Recurse -Name C:\\var\\lib\\kubelet\\pods",
            ],
        )
        .await;
        let wanted = format!("{}\\volumes\\kubernetes.io~configmap\\settings\\mode\r\n", victim.uid());
        assert!(text(&listing.stdout).contains(&wanted), "{}", text(&listing.stdout));
        // The victim itself cannot see the kubelet's directory.
        let o = exec(&f, &victim, &["cmd", "/c", "type", &path]).await;
        assert_eq!(o.exit, ExitStatus::Code(1));
    }

    #[rstest]
    #[case::hostname(&["hostname"], "win2022-1\r\n")]
    #[case::whoami(&["whoami"], "nt authority\\system\r\n")]
    #[case::sandbox(&["powershell", "-Command", "Test-Path $env:CONTAINER_SANDBOX_MOUNT_POINT"], "True\r\n")]
    #[case::username(&["cmd", "/c", "echo %USERNAME%"], "WIN2022-1$\r\n")]
    #[case::ver(&["cmd", "/c", "ver"], "\r\nMicrosoft Windows [Version 10.0.20348.2762]\r\n")]
    #[tokio::test]
    async fn host_process_runs_on_the_node(#[case] argv: &[&str], #[case] stdout: &str) {
        let f = Fixture::new();
        let probe = f.pod("node-probe", "win2022-1", host_process_spec("NT AUTHORITY\\SYSTEM"));
        let o = exec(&f, &probe, argv).await;
        assert_eq!(text(&o.stdout), stdout, "{}", text(&o.stderr));
        assert_eq!(o.exit, ExitStatus::Code(0));
    }

    #[tokio::test]
    async fn host_process_needs_a_capable_node() {
        let f = Fixture::with_profiles(|profiles| {
            for p in profiles.iter_mut().filter(|p| p.name == "win2019-1") {
                p.runtime = RuntimeKind::Docker;
                p.runtime_version = (19, 3);
            }
        });
        let pod = f.pod("node-probe", "win2019-1", host_process_spec("NT AUTHORITY\\SYSTEM"));
        assert!(!f.runtime().context(pod.clone(), "c").host_process);
        let o = exec(&f, &pod, &["hostname"]).await;
        assert_eq!(text(&o.stdout), "node-probe\r\n");
    }

    #[test]
    fn node_volume_files_follow_the_node_os() {
        let f = Fixture::new();
        let win = f.app("win", "win2022-1", SERVERCORE, json!({}));
        let lin = f.app("lin", "linux-1", BUSYBOX, json!({}));
        let on_windows = node_volume_files(&f.store, f.profile("win2022-1"));
        let secret = format!(
            "C:\\var\\lib\\kubelet\\pods\\{}\\volumes\\kubernetes.io~secret\\creds\\password",
            win.uid()
        );
        assert_eq!(on_windows.get(&secret).map(Vec::as_slice), Some(MARKER.as_bytes()));
        assert!(
            on_windows.keys().any(|k| k.ends_with("\\token")),
            "service account token on disk"
        );
        assert!(!on_windows.keys().any(|k| k.contains(lin.uid())));
        let on_linux = node_volume_files(&f.store, f.profile("linux-1"));
        let config = format!(
            "/var/lib/kubelet/pods/{}/volumes/kubernetes.io~configmap/settings/mode",
            lin.uid()
        );
        assert_eq!(on_linux.get(&config).map(Vec::as_slice), Some(&b"fast"[..]));
        assert!(
            on_linux.keys().all(|k| !k.contains("kubernetes.io~secret")),
            "secrets stay on tmpfs"
        );
    }

    #[tokio::test]
    async fn proc_mounts_show_secrets_on_tmpfs() {
        let f = Fixture::new();
        let pod = f.app(
            "mounts",
            "linux-1",
            BUSYBOX,
            json!({"pod": {"volumes": [
                {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 256}},
                {"name": "settings", "configMap": {"name": "settings"}},
            ]}}),
        );
        let mounts = text(&exec(&f, &pod, &["cat", "/proc/mounts"]).await.stdout);
        let lines: Vec<&str> = mounts.lines().collect();
        assert!(
            lines.first().is_some_and(|l| l.starts_with("overlay / overlay rw")),
            "{mounts}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("tmpfs /etc/secret tmpfs ro,relatime")),
            "{mounts}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("tmpfs /var/run/secrets/kubernetes.io/serviceaccount tmpfs ro,")),
            "{mounts}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with("/dev/root /etc/config ext4 ro,")),
            "{mounts}"
        );
        assert!(lines.iter().any(|l| l.starts_with("proc /proc proc")), "{mounts}");
        let o = exec(&f, &pod, &["stat", "-c", "%a %n", "/etc/secret/password"]).await;
        assert_eq!(text(&o.stdout), "400 /etc/secret/password\n");
        let o = exec(&f, &pod, &["ls", "-l", "/etc/secret"]).await;
        assert!(text(&o.stdout).starts_with("-r--------"), "{}", text(&o.stdout));
    }

    #[rstest]
    #[case::linux("linux-1", &["uname", "-r"])]
    #[case::linux_all("linux-1", &["uname", "-a"])]
    #[tokio::test]
    async fn uname_reports_the_node_kernel(#[case] node: &str, #[case] argv: &[&str]) {
        let f = Fixture::new();
        let pod = f.app("uname", node, BUSYBOX, json!({}));
        let o = exec(&f, &pod, argv).await;
        assert!(text(&o.stdout).contains(&f.profile(node).kernel_version));
    }

    #[tokio::test]
    async fn host_network_linux_pods_see_the_node() {
        let f = Fixture::new();
        let pod = f.app("hostnet", "linux-1", BUSYBOX, json!({"pod": {"hostNetwork": true}}));
        let o = exec(&f, &pod, &["hostname"]).await;
        assert_eq!(text(&o.stdout), "linux-1\n");
        let resolv = text(&exec(&f, &pod, &["cat", "/etc/resolv.conf"]).await.stdout);
        assert!(!resolv.contains("svc.cluster.local"), "{resolv}");
        // Windows ignores hostNetwork without HostProcess.
        let win = f.app(
            "hostnet-win",
            "win2022-1",
            SERVERCORE,
            json!({"pod": {"hostNetwork": true}}),
        );
        assert_eq!(text(&exec(&f, &win, &["hostname"]).await.stdout), "hostnet-win\r\n");
    }

    #[rstest]
    #[case::nc(
        BUSYBOX,
        "linux-1",
        &["sh", "-c", "nc -vz 10.96.0.1 443 -w 1"],
        "nc: 10.96.0.1 (10.96.0.1:443): Connection timed out\n",
        1
    )]
    #[case::ping_name(BUSYBOX, "linux-1", &["ping", "-c", "1", "kubernetes"], "ping: bad address 'kubernetes'\n", 1)]
    #[case::connect(AGNHOST, "linux-1", &["/agnhost", "connect", "10.0.0.1:80", "--timeout=1s"], "TIMEOUT\n", 1)]
    #[case::connect_dns(
        AGNHOST,
        "win2022-1",
        &["agnhost", "connect", "kubernetes:443"],
        "DNS: lookup kubernetes: getaddrinfow: This is usually a temporary error during hostname resolution and means \
        that the local server did not receive a response from an authoritative server.\n",
        1
    )]
    #[case::curl_silent(SERVERCORE, "win2022-1", &["cmd", "/c", "curl.exe -s http://10.0.0.1/"], "", 28)]
    #[case::curl(
        AGNHOST,
        "linux-1",
        &["curl", "--connect-timeout", "2", "http://10.0.0.1:8080/"],
        "curl: (28) Failed to connect to 10.0.0.1 port 8080 after 2000 ms: Timeout was reached\n",
        28
    )]
    #[tokio::test]
    async fn network_commands_time_out_without_a_network(
        #[case] image: &str,
        #[case] node: &str,
        #[case] argv: &[&str],
        #[case] stderr: &str,
        #[case] code: i32,
    ) {
        let f = Fixture::new();
        let pod = f.app("net", node, image, json!({}));
        let o = exec(&f, &pod, argv).await;
        assert_eq!(text(&o.stderr), stderr);
        assert_eq!(o.exit, ExitStatus::Code(code));
    }

    /// Records what reaches the wire: `web` resolves, every HTTP request is answered with the
    /// client's address, every UDP request is echoed, pings get no reply.
    #[derive(Debug, Default)]
    struct Recorder {
        seen: std::sync::Mutex<Vec<String>>,
    }

    impl Recorder {
        fn note(&self, event: String) {
            self.seen.lock().expect("lock").push(event);
        }

        fn seen(&self) -> Vec<String> {
            self.seen.lock().expect("lock").clone()
        }
    }

    struct RecordingWire<'a> {
        recorder: &'a Recorder,
        ctx: &'a CommandContext,
    }

    impl NetworkCommands for Recorder {
        fn wire<'a>(&'a self, ctx: &'a CommandContext) -> Box<dyn Wire + 'a> {
            Box::new(RecordingWire { recorder: self, ctx })
        }
    }

    impl Wire for RecordingWire<'_> {
        fn dns_server(&self) -> String {
            "10.96.0.10".into()
        }
        fn resolve(&self, name: &str, _server: Option<&str>) -> nettools::Lookup {
            self.recorder.note(format!("resolve {name}"));
            if name != "web" {
                return nettools::Lookup::NotFound;
            }
            nettools::Lookup::Found {
                fqdn: format!("web.{NS}.svc.cluster.local"),
                addrs: vec![Ipv4Addr::new(10, 96, 0, 50)],
                alias: None,
            }
        }
        fn connect(&self, ip: Ipv4Addr, port: u16, proto: nettools::Proto) -> Result<(), nettools::Failure> {
            self.recorder.note(format!("connect {proto} {ip}:{port}"));
            Ok(())
        }
        fn http_get(&self, ip: Ipv4Addr, port: u16, target: &str) -> Result<nettools::HttpReply, nettools::Failure> {
            self.recorder.note(format!("GET {ip}:{port}{target}"));
            Ok(nettools::HttpReply {
                status: 200,
                body: format!("reached from {}\n", self.ctx.pod_ip()),
            })
        }
        fn udp(&self, ip: Ipv4Addr, port: u16, payload: &str) -> Result<String, nettools::Failure> {
            self.recorder.note(format!("udp {ip}:{port} {payload}"));
            Ok(format!("echo:{payload}"))
        }
        fn ping(&self, ip: Ipv4Addr) -> Result<(), nettools::Failure> {
            self.recorder.note(format!("ping {ip}"));
            Err(nettools::Failure::NoReply)
        }
    }

    #[tokio::test]
    async fn network_commands_go_through_the_seam() {
        let f = Fixture::new();
        let recorder = Arc::new(Recorder::default());
        let runtime = f.runtime().with_network(recorder.clone());
        let pod = f.app("net", "linux-1", AGNHOST, json!({}));
        let o = runtime
            .exec(request(
                &pod,
                &["sh", "-c", "curl -s http://web:8080/hostname && echo done"],
            ))
            .await;
        assert_eq!(text(&o.stdout), "reached from 10.244.1.7\ndone\n");
        let o = runtime.exec(request(&pod, &["ping", "-c", "1", "web"])).await;
        assert_eq!(
            text(&o.stdout),
            "PING web (10.96.0.50): 56 data bytes\n\n--- web ping statistics ---\n1 packets transmitted, 0 packets \
            received, 100% packet loss\n"
        );
        assert_eq!(o.exit, ExitStatus::Code(1));
        let o = runtime
            .exec(request(&pod, &["sh", "-c", "echo hostname | nc -u -w 1 web 8081"]))
            .await;
        assert_eq!(text(&o.stdout), "echo:hostname");
        assert_eq!(
            recorder.seen(),
            [
                "resolve web",
                "GET 10.96.0.50:8080/hostname",
                "resolve web",
                "ping 10.96.0.50",
                "resolve web",
                "udp 10.96.0.50:8081 hostname",
            ]
        );
    }

    const DIAL: &str = "/dial?request=hostname&host=10.0.0.1&port=8080&protocol=http&tries=1";

    #[rstest]
    #[case::argv("linux-1", AGNHOST, &["curl", "-s", "URL"])]
    #[case::sh_single_quotes("linux-1", AGNHOST, &["sh", "-c", "curl -s 'URL'"])]
    #[case::sh_double_quotes("linux-1", AGNHOST, &["sh", "-c", "curl -s \"URL\""])]
    #[case::sh_wget("linux-1", BUSYBOX, &["sh", "-c", "wget -qO- 'URL'"])]
    #[case::cmd_curl_exe("win2022-1", SERVERCORE, &["cmd", "/c", "curl.exe -s \"URL\""])]
    #[case::powershell_curl_exe("win2022-1", SERVERCORE, &["powershell", "-Command", "curl.exe -s 'URL'"])]
    #[tokio::test]
    async fn http_targets_pass_through_shells_unchanged(
        #[case] node: &str,
        #[case] image: &str,
        #[case] argv: &[&str],
    ) {
        let f = Fixture::new();
        let recorder = Arc::new(Recorder::default());
        let runtime = f.runtime().with_network(recorder.clone());
        let pod = f.app("dial", node, image, json!({}));
        let url = format!("http://10.0.0.2:8080{DIAL}");
        let argv: Vec<String> = argv.iter().map(|a| a.replace("URL", &url)).collect();
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let o = runtime.exec(request(&pod, &argv)).await;
        assert_eq!(o.exit, ExitStatus::Code(0), "{}", text(&o.stderr));
        assert_eq!(recorder.seen(), [format!("GET 10.0.0.2:8080{DIAL}")]);
    }

    #[tokio::test]
    async fn stdin_and_tty() {
        let f = Fixture::new();
        let pod = f.app("io", "linux-1", BUSYBOX, json!({}));
        let mut req = request(&pod, &["sh"]);
        req.stdin = Some(Bytes::from_static(b"echo from-stdin\ncat /etc/config/mode\n"));
        let o = f.runtime().exec(req).await;
        assert_eq!(text(&o.stdout), "from-stdin\nfast");
        let mut req = request(&pod, &["sh", "-c", "echo out; cat /nope"]);
        req.tty = true;
        let o = f.runtime().exec(req).await;
        assert_eq!(
            text(&o.stdout),
            "out\r\ncat: can't open '/nope': No such file or directory\r\n"
        );
        assert!(o.stderr.is_empty());
    }

    #[tokio::test]
    async fn missing_container_is_a_runtime_error() {
        let f = Fixture::new();
        let pod = f.app("x", "linux-1", BUSYBOX, json!({}));
        let mut req = request(&pod, &["hostname"]);
        req.container = "nope".into();
        let message = runtime_message(&f.runtime().exec(req).await);
        assert_eq!(message, "container not found (\"nope\")");
    }

    #[rstest]
    #[case("sh", "-c")]
    #[case("cmd", "/c")]
    #[case("powershell", "-Command")]
    #[tokio::test]
    async fn odd_input_never_panics(#[case] shell: &str, #[case] flag: &str) {
        let f = Fixture::new();
        let linux = f.app("fuzz", "linux-1", BUSYBOX, json!({}));
        let windows = f.app("fuzz-w", "win2022-1", SERVERCORE, json!({}));
        let inputs = [
            "",
            "'",
            "\"",
            "${",
            "$",
            "&&",
            "|",
            "||",
            ">",
            "2>&",
            "%",
            "%%",
            "^",
            "`",
            "$env:",
            "${env:X",
            "echo é\u{0301} ü > /dev/null",
            "cat ../../..",
            "type \\\\?\\C:\\x",
            "exit 99999999999",
            "Get-ChildItem -Recurse C:\\",
            "ls -la /",
            "a=b",
            "(",
            ")",
            "{}",
            "\u{0}",
        ];
        for input in inputs {
            for pod in [&linux, &windows] {
                let _ = exec(&f, pod, &[shell, flag, input]).await;
                let _ = exec(&f, pod, &[input]).await;
            }
        }
    }

    #[rstest]
    #[case("/etc/./secret/../secret/", "/", "/etc/secret")]
    #[case("x/y", "/tmp", "/tmp/x/y")]
    #[case("/..", "/", "/")]
    fn linux_paths(#[case] path: &str, #[case] cwd: &str, #[case] expected: &str) {
        assert_eq!(linux_path(path, cwd), expected);
    }

    #[rstest]
    #[case("/etc/secret", "C:\\", "C:\\etc\\secret")]
    #[case("c:/x\\y\\", "C:\\", "C:\\x\\y")]
    #[case("y", "C:\\a", "C:\\a\\y")]
    #[case("D:", "C:\\", "D:\\")]
    fn windows_paths(#[case] path: &str, #[case] cwd: &str, #[case] expected: &str) {
        assert_eq!(win_path(path, cwd), expected);
    }

    #[rstest]
    #[case(AGNHOST, ImageKind::Agnhost)]
    #[case("busybox", ImageKind::Busybox)]
    #[case("localhost:5000/team/busybox:1", ImageKind::Busybox)]
    #[case(NANOSERVER, ImageKind::NanoServer)]
    #[case(
        "mcr.microsoft.com/dotnet/framework/runtime:4.8-windowsservercore-ltsc2022",
        ImageKind::ServerCore
    )]
    #[case("mcr.microsoft.com/windows/server:ltsc2022", ImageKind::WindowsServer)]
    #[case("mcr.microsoft.com/powershell:lts-nanoserver-ltsc2022", ImageKind::PowerShell)]
    #[case("nginx:1.27", ImageKind::Other)]
    fn image_kinds(#[case] image: &str, #[case] kind: ImageKind) {
        assert_eq!(image_kind(image), kind);
    }

    #[rstest]
    #[case("echo %A% %B%", "echo 1 %B%")]
    #[case("100%", "100%")]
    #[case("%a%%a%", "11")]
    fn percent_expansion(#[case] line: &str, #[case] expected: &str) {
        let env = vec![("A".to_string(), "1".to_string())];
        assert_eq!(expand_percent(line, &env), expected);
    }

    async fn exec_in(f: &Fixture, pod: &Obj, container: &str, argv: &[&str]) -> ExecOutput {
        let mut req = request(pod, argv);
        req.container = container.into();
        f.runtime().exec(req).await
    }

    /// A pod with a writer and a reader container sharing the emptyDir `data` (the reader
    /// mounts it `readOnly` at a second path too).
    fn shared_pod(f: &Fixture, node: &str, image: &str) -> Obj {
        let (rw, ro) = if f.profile(node).is_windows() {
            ("C:\\data", "C:\\ro")
        } else {
            ("/data", "/ro")
        };
        f.pod(
            "shared",
            node,
            json!({
                "volumes": [{"name": "data", "emptyDir": {}}],
                "containers": [
                    {"name": "writer", "image": image, "volumeMounts": [{"name": "data", "mountPath": rw}]},
                    {"name": "reader", "image": image, "volumeMounts": [
                        {"name": "data", "mountPath": rw},
                        {"name": "data", "mountPath": ro, "readOnly": true},
                    ]},
                ],
            }),
        )
    }

    /// STO-EMPTYDIR-DISK (W14): a file one container writes into an emptyDir is there for the
    /// pod's other containers; STO-READONLY-VOLUME (W14, E2E/volumes): the readOnly mount of the
    /// same volume shows it and refuses writes (busybox ash: `Read-only file system`).
    #[tokio::test]
    async fn linux_emptydir_is_shared_and_read_only_mounts_refuse_writes() {
        let f = Fixture::new();
        let pod = shared_pod(&f, "linux-1", AGNHOST);
        let o = exec_in(
            &f,
            &pod,
            "writer",
            &["sh", "-c", "echo one > /data/f.txt; echo two >> /data/f.txt"],
        )
        .await;
        assert_eq!(o.exit, ExitStatus::Code(0), "{}", text(&o.stderr));
        let o = exec_in(&f, &pod, "reader", &["cat", "/data/f.txt", "/ro/f.txt"]).await;
        assert_eq!(text(&o.stdout), "one\ntwo\none\ntwo\n");
        let o = exec_in(
            &f,
            &pod,
            "reader",
            &[
                "sh",
                "-c",
                "(echo x > /ro/y.txt) 2>/dev/null && echo allowed || echo denied; echo x > /ro/y.txt",
            ],
        )
        .await;
        assert_eq!(text(&o.stdout), "denied\n");
        assert_eq!(text(&o.stderr), "sh: can't create /ro/y.txt: Read-only file system\n");
        assert_eq!(o.exit, ExitStatus::Code(1));
        // An API-data volume is always read-only; a missing directory cannot be created into.
        let app = f.app("app", "linux-1", AGNHOST, json!({}));
        let o = exec(&f, &app, &["sh", "-c", "echo x > /etc/secret/new; echo y > /nowhere/z"]).await;
        assert_eq!(
            text(&o.stderr),
            "sh: can't create /etc/secret/new: Read-only file system\nsh: can't create /nowhere/z: nonexistent directory\n"
        );
        // The container's own layer keeps what it wrote, for it alone.
        let o = exec(&f, &app, &["sh", "-c", "echo mine > /tmp/own"]).await;
        assert_eq!(o.exit, ExitStatus::Code(0));
        assert_eq!(text(&exec(&f, &app, &["cat", "/tmp/own"]).await.stdout), "mine\n");
        f.volumes.forget_pod(pod.uid());
        let o = exec_in(&f, &pod, "reader", &["cat", "/data/f.txt"]).await;
        assert_eq!(o.exit, ExitStatus::Code(1));
    }

    /// STO-READONLY-VOLUME (E2E/volumes): on Windows the read-only mount answers exactly
    /// `Access is denied.`; the read-write container's file is readable through it.
    #[tokio::test]
    async fn windows_read_only_mount_denies_access() {
        let f = Fixture::new();
        let pod = shared_pod(&f, "win2022-1", NANOSERVER);
        let o = exec_in(
            &f,
            &pod,
            "writer",
            &["cmd", "/c", "echo windows-volume-test> C:\\data\\seed.txt"],
        )
        .await;
        assert_eq!(o.exit, ExitStatus::Code(0), "{}", text(&o.stderr));
        let o = exec_in(
            &f,
            &pod,
            "reader",
            &[
                "cmd",
                "/c",
                "type C:\\ro\\seed.txt & (echo probe> C:\\ro\\probe.txt) && echo write-allowed || echo write-denied",
            ],
        )
        .await;
        assert_eq!(text(&o.stdout), "windows-volume-test\r\nwrite-denied\r\n");
        assert_eq!(text(&o.stderr), "Access is denied.\r\n");
        let o = exec_in(&f, &pod, "reader", &["cmd", "/c", "echo x> C:\\missing\\y.txt"]).await;
        assert_eq!(text(&o.stderr), "The system cannot find the path specified.\r\n");
        assert_eq!(o.exit, ExitStatus::Code(1));
    }

    /// STO-HOSTPATH (W14, E2E/volumes): a hostPath mount shows the node's files — the hosts file
    /// of the node's OS — and what pods wrote there.
    #[rstest]
    #[case::linux("linux-1", AGNHOST, "/etc", "/host", &["cat", "/host/hosts"], "127.0.0.1\tlocalhost")]
    #[case::windows(
        "win2022-1",
        NANOSERVER,
        "C:\\Windows\\System32\\drivers\\etc",
        "C:\\host",
        &["cmd", "/c", "type C:\\host\\hosts"],
        "localhost name resolution is handled within DNS itself."
    )]
    #[tokio::test]
    async fn host_path_shows_the_node_files(
        #[case] node: &str,
        #[case] image: &str,
        #[case] host: &str,
        #[case] at: &str,
        #[case] argv: &[&str],
        #[case] expected: &str,
    ) {
        let f = Fixture::new();
        let pod = f.app(
            "hp",
            node,
            image,
            json!({"pod": {"volumes": [{"name": "h", "hostPath": {"path": host, "type": "Directory"}}]},
                   "container": {"volumeMounts": [{"name": "h", "mountPath": at}]}}),
        );
        let o = exec(&f, &pod, argv).await;
        assert!(text(&o.stdout).contains(expected), "{}", text(&o.stdout));
        // A write through the mount lands on the node, where another pod's hostPath sees it.
        let write: &[&str] = if f.profile(node).is_windows() {
            &["cmd", "/c", "echo left-behind> C:\\host\\note.txt"]
        } else {
            &["sh", "-c", "echo left-behind > /host/note.txt"]
        };
        assert_eq!(exec(&f, &pod, write).await.exit, ExitStatus::Code(0));
        let other = f.app(
            "hp2",
            node,
            image,
            json!({"pod": {"volumes": [{"name": "h", "hostPath": {"path": host}}]},
                   "container": {"volumeMounts": [{"name": "h", "mountPath": at}]}}),
        );
        let read: &[&str] = if f.profile(node).is_windows() {
            &["cmd", "/c", "type C:\\host\\note.txt"]
        } else {
            &["cat", "/host/note.txt"]
        };
        assert!(text(&exec(&f, &other, read).await.stdout).starts_with("left-behind"));
    }

    /// NET-HOSTNETWORK (W14, WI26): a Linux hostNetwork pod has the node's address on one of
    /// its own interfaces, a pod on the pod network has its pod IP; sh `if` decides as written.
    #[rstest]
    #[case::host_network(true, "host-network\n")]
    #[case::pod_network(false, "pod-network\n")]
    #[tokio::test]
    async fn ip_addr_shows_the_network_namespace(#[case] host_network: bool, #[case] expected: &str) {
        let f = Fixture::new();
        let node_ip = f.profile("linux-1").ip.to_string();
        let pod = f.app(
            "net",
            "linux-1",
            AGNHOST,
            json!({"pod": {"hostNetwork": host_network},
                   "container": {"env": [{"name": "HOST_IP", "value": node_ip}]}}),
        );
        let o = exec(
            &f,
            &pod,
            &[
                "/bin/sh",
                "-c",
                "if ip -o addr show | grep -qF \" $HOST_IP/\"; then echo host-network; else echo pod-network; fi",
            ],
        )
        .await;
        assert_eq!(text(&o.stdout), expected, "{}", text(&o.stderr));
        let o = exec(&f, &pod, &["ip", "-o", "addr", "show"]).await;
        assert!(
            text(&o.stdout).starts_with("1: lo    inet 127.0.0.1/8 scope host lo\\"),
            "{}",
            text(&o.stdout)
        );
        let o = exec(&f, &pod, &["ip", "frob"]).await;
        assert_eq!(o.exit, ExitStatus::Code(255));
    }

    #[rstest]
    #[case::if_else("if false; then echo a; elif true; then echo b; else echo c; fi", "b\n", 0)]
    #[case::if_no_branch("if false; then echo a; fi; echo $?", "0\n", 0)]
    #[case::nested("if true; then if false; then echo x; else echo y; fi; fi", "y\n", 0)]
    #[case::subshell_exit("(exit 3); echo $?", "3\n", 0)]
    #[case::subshell_vars("X=1; (X=2); echo $X", "1\n", 0)]
    #[case::brace_group("{ echo a; echo ab; } | grep -c a", "2\n", 0)]
    #[case::negate("! false && echo yes", "yes\n", 0)]
    #[case::redirect_group("if true; then echo hidden; fi > /dev/null; echo shown", "shown\n", 0)]
    #[case::syntax("if true; then echo a", "", 2)]
    #[tokio::test]
    async fn sh_compound_commands(#[case] script: &str, #[case] expected: &str, #[case] code: i32) {
        let f = Fixture::new();
        let pod = f.app("sh", "linux-1", AGNHOST, json!({}));
        let o = exec(&f, &pod, &["sh", "-c", script]).await;
        assert_eq!(text(&o.stdout), expected, "{}", text(&o.stderr));
        assert_eq!(o.exit, ExitStatus::Code(code));
    }

    /// The SEC-SECRET-AT-REST search as an operator writes it (W14, W22, WSEC): a HostProcess pod
    /// finds the marker of a Secret in clear text under the kubelet's default root directory
    /// (kubelet.exe has no --root-dir), with the ACL the directory inherits from C:\ and no
    /// BitLocker tooling on the node.
    #[tokio::test]
    async fn host_process_search_finds_a_secret_in_clear_text() {
        let f = Fixture::new();
        let victim = f.app("victim", "win2022-1", SERVERCORE, json!({}));
        let mut spec = host_process_spec("NT AUTHORITY\\SYSTEM");
        spec["containers"][0]["env"] = json!([{"name": "MARKER", "value": MARKER}]);
        let probe = f.pod("node-probe", "win2022-1", spec);
        let script = "$m = $env:MARKER; $root = 'C:\\var\\lib\\kubelet'; \
            $k = Get-CimInstance Win32_Process -Filter 'Name = ''kubelet.exe''' | Select-Object -First 1; \
            if ($k -and $k.CommandLine -match '--root-dir[= ]+(\\S+)') { $root = $Matches[1].Trim([char]34) }; \
            $hit = Get-ChildItem -Path (Join-Path $root 'pods') -Recurse -File -Force -ErrorAction SilentlyContinue | \
            Where-Object { $_.FullName -like '*kubernetes.io~secret*' } | \
            Select-String -SimpleMatch -Pattern $m -List | Select-Object -First 1; \
            if ($hit) { 'clear-text-on-node-disk: ' + $hit.Path; \
            'acl: ' + (((Get-Acl -LiteralPath $hit.Path).Access | ForEach-Object { $_.IdentityReference.Value + '=' + $_.FileSystemRights }) -join '; '); \
            $bl = manage-bde -status C: 2>$null | Select-String 'Conversion Status' | Select-Object -First 1; \
            'bitlocker: ' + $(if ($bl) { $bl.Line.Trim() } else { 'unknown' }) \
            } else { 'marker-not-found-under: ' + $root; exit 3 }";
        let o = exec(&f, &probe, &["powershell.exe", "-NoProfile", "-Command", script]).await;
        let path = format!(
            "C:\\var\\lib\\kubelet\\pods\\{}\\volumes\\kubernetes.io~secret\\creds\\password",
            victim.uid()
        );
        assert_eq!(
            text(&o.stdout),
            format!(
                "clear-text-on-node-disk: {path}\r\nacl: NT AUTHORITY\\SYSTEM=FullControl; BUILTIN\\Administrators=FullControl; \
                 BUILTIN\\Users=ReadAndExecute, Synchronize\r\nbitlocker: unknown\r\n"
            ),
            "{}",
            text(&o.stderr)
        );
        assert_eq!(o.exit, ExitStatus::Code(0));
        // Another marker is not there: the search says where it looked and exits 3.
        let mut spec = host_process_spec("NT AUTHORITY\\SYSTEM");
        spec["containers"][0]["env"] = json!([{"name": "MARKER", "value": "absent"}]);
        let other = f.pod("node-probe-2", "win2022-1", spec);
        let o = exec(&f, &other, &["powershell.exe", "-NoProfile", "-Command", script]).await;
        assert_eq!(text(&o.stdout), "marker-not-found-under: C:\\var\\lib\\kubelet\r\n");
        assert_eq!(o.exit, ExitStatus::Code(3));
    }

    #[rstest]
    #[case::variables("$a = 2; $b = $a * 3 + 1; $b", "7\r\n")]
    #[case::strings("$n = 'x'; \"a-$n-$($n.ToUpper())\"; 'it''s'", "a-x-X\r\nit's\r\n")]
    #[case::if_elseif(
        "$v = 5; if ($v -lt 3) { 'low' } elseif ($v -ge 5) { 'high' } else { 'mid' }",
        "high\r\n"
    )]
    #[case::matches(
        "if ('--root-dir=D:\\k --v=2' -match '--root-dir[= ]+(\\S+)') { $Matches[1] }",
        "D:\\k\r\n"
    )]
    #[case::like_join("@('a.txt','b.log','c.txt') -like '*.txt' -join ','", "a.txt,c.txt\r\n")]
    #[case::pipeline("1,2,3,4 | Where-Object { $_ -gt 2 } | ForEach-Object { $_ * 10 }", "30\r\n40\r\n")]
    #[case::select_first("'a','b','c' | Select-Object -First 2", "a\r\nb\r\n")]
    #[case::select_last("'a','b','c' | Select-Object -Last 1", "c\r\n")]
    #[case::foreach("foreach ($x in 1,2) { \"n$x\" }", "n1\r\nn2\r\n")]
    #[case::join_path("Join-Path 'C:\\var\\' '\\pods'", "C:\\var\\pods\r\n")]
    #[case::cast_char("[char]65 + [string]7", "A7\r\n")]
    #[case::trim_chars("'\"quoted\"'.Trim([char]34)", "quoted\r\n")]
    #[case::not_found_silenced("$x = frobnicate 2>$null; if ($x) { 'some' } else { 'none' }", "none\r\n")]
    #[case::count("@(Get-ChildItem C:\\secrets).Count", "1\r\n")]
    #[case::select_string_file(
        "Get-ChildItem C:\\secrets | Select-String s3cr3t | ForEach-Object { $_.LineNumber }",
        "1\r\n"
    )]
    #[case::where_property(
        "Get-ChildItem C:\\secrets | Where-Object Name -eq 'password' | ForEach-Object Name",
        "password\r\n"
    )]
    #[case::cim_in_container(
        "(Get-CimInstance Win32_Process | Where-Object { $_.Name -eq 'CExecSvc.exe' }).Name",
        "CExecSvc.exe\r\n"
    )]
    #[case::exit_in_block("if ($true) { 'before'; exit 5 }; 'after'", "before\r\n")]
    #[case::hashtable("$h = @{ a = 1; b = 'two' }; $h.b", "two\r\n")]
    #[case::replace_split("('a-b-c' -replace '-', '+') + ' ' + ('x,y' -split ',').Count", "a+b+c 2\r\n")]
    #[tokio::test]
    async fn powershell_language(#[case] script: &str, #[case] expected: &str) {
        let f = Fixture::new();
        let pod = f.app("ps", "win2022-1", SERVERCORE, json!({}));
        let o = exec(&f, &pod, &["powershell", "-NoProfile", "-Command", script]).await;
        assert_eq!(text(&o.stdout), expected, "stderr: {}", text(&o.stderr));
    }

    #[tokio::test]
    async fn powershell_errors_and_exit_codes() {
        let f = Fixture::new();
        let pod = f.app("ps", "win2022-1", SERVERCORE, json!({}));
        let o = exec(&f, &pod, &["powershell", "-Command", "if ($true) { 'x' "]).await;
        assert_eq!(o.exit, ExitStatus::Code(1));
        assert!(text(&o.stderr).contains("ParserError"), "{}", text(&o.stderr));
        // A non-terminating error goes to stderr; the script goes on; -ErrorAction drops it.
        let o = exec(
            &f,
            &pod,
            &[
                "powershell",
                "-Command",
                "Get-Content C:\\nope; Get-Content C:\\nope -ErrorAction SilentlyContinue; 'next'",
            ],
        )
        .await;
        assert_eq!(text(&o.stdout), "next\r\n");
        assert_eq!(text(&o.stderr).matches("Cannot find path 'C:\\nope'").count(), 1);
        assert_eq!(o.exit, ExitStatus::Code(0));
        let o = exec(&f, &pod, &["powershell", "-Command", "exit 9"]).await;
        assert_eq!(o.exit, ExitStatus::Code(9));
    }

    /// What a container's main process logs for `argv` (the kubelet's process model).
    fn main_process_lines(f: &Fixture, node: &str, image: &str, argv: &[&str]) -> Vec<String> {
        let pod = json!({"metadata": {"name": "main", "namespace": NS, "uid": "u1"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": image, "command": argv}]}});
        let catalogue = crate::node::images::Catalogue::default();
        match crate::node::kubelet::outcome::plan(f.profile(node), &pod, &catalogue, None) {
            crate::node::kubelet::outcome::PodFate::Proceed(p) => match &p.containers[0].outcome {
                crate::node::kubelet::outcome::ContainerOutcome::Runs { process } => match process {
                    crate::node::kubelet::outcome::Process::Exits { log, .. }
                    | crate::node::kubelet::outcome::Process::LongRunning { log } => log.clone(),
                    other => panic!("{argv:?}: {other:?}"),
                },
                other => panic!("{argv:?}: {other:?}"),
            },
            other => panic!("{argv:?}: {other:?}"),
        }
    }

    /// The same command line run as a container's main process and exec'd into a running
    /// container prints the same lines: one shell layer answers both (echo variants, escapes,
    /// cmd's `echo` forms, PowerShell's Write-Host and Write-Output).
    #[rstest]
    #[case::sh_echo("linux-1", BUSYBOX, &["echo", "a", "b"])]
    #[case::sh_echo_n("linux-1", BUSYBOX, &["echo", "-n", "a"])]
    #[case::sh_echo_e("linux-1", BUSYBOX, &["echo", "-e", "a\\tb\\nc"])]
    #[case::sh_echo_ne("linux-1", BUSYBOX, &["echo", "-ne", "a\\nb"])]
    #[case::sh_echo_en("linux-1", BUSYBOX, &["echo", "-en", "a\\nb"])]
    #[case::sh_echo_e_n("linux-1", BUSYBOX, &["echo", "-e", "-n", "x\\ny"])]
    #[case::sh_echo_upper_e("linux-1", BUSYBOX, &["echo", "-E", "a\\nb"])]
    #[case::sh_echo_backslash("linux-1", BUSYBOX, &["echo", "-e", "a\\\\nb"])]
    #[case::sh_echo_cr("linux-1", BUSYBOX, &["echo", "-e", "a\\rb"])]
    #[case::sh_c_sequence("linux-1", BUSYBOX, &["sh", "-c", "echo hi; echo there"])]
    #[case::sh_c_echo_e("linux-1", BUSYBOX, &["sh", "-c", "echo -e 'a\\tb'"])]
    #[case::sh_c_quotes("linux-1", BUSYBOX, &["sh", "-c", "echo 'single quoted' \"double quoted\""])]
    #[case::printf("linux-1", BUSYBOX, &["printf", "a\\nb\\n"])]
    #[case::sh_c_printf("linux-1", BUSYBOX, &["sh", "-c", "printf 'x\\ty\\n'"])]
    #[case::cmd_echo("win2022-1", SERVERCORE, &["cmd", "/c", "echo hello world"])]
    #[case::cmd_echo_dot("win2022-1", SERVERCORE, &["cmd", "/c", "echo."])]
    #[case::cmd_echo_bare("win2022-1", SERVERCORE, &["cmd", "/c", "echo"])]
    #[case::cmd_echo_quotes("win2022-1", SERVERCORE, &["cmd", "/c", "echo \"quoted\" text"])]
    #[case::cmd_echo_colon("win2022-1", SERVERCORE, &["cmd", "/c", "echo:x"])]
    #[case::cmd_echo_sequence("win2022-1", SERVERCORE, &["cmd", "/c", "echo a & echo b"])]
    #[case::cmd_echo_split_args("win2022-1", SERVERCORE, &["cmd", "/c", "echo", "a", "b"])]
    #[case::ps_write_host("win2022-1", SERVERCORE, &["powershell", "-Command", "Write-Host hi there"])]
    #[case::ps_write_output("win2022-1", SERVERCORE, &["powershell", "-Command", "Write-Output 'a b'"])]
    #[case::ps_echo("win2022-1", SERVERCORE, &["powershell", "-Command", "echo hi"])]
    #[case::ps_sequence("win2022-1", SERVERCORE, &["powershell", "-Command", "Write-Host a; Write-Host b"])]
    #[tokio::test]
    async fn main_process_and_exec_print_the_same(#[case] node: &str, #[case] image: &str, #[case] argv: &[&str]) {
        let f = Fixture::new();
        let pod = f.app("shell", node, image, json!({}));
        let o = exec(&f, &pod, argv).await;
        let printed = text(&o.stdout);
        let mut exec_lines: Vec<String> = printed
            .split('\n')
            .map(|l| l.trim_end_matches('\r').to_string())
            .collect();
        if exec_lines.last().is_some_and(String::is_empty) {
            exec_lines.pop();
        }
        assert_eq!(
            main_process_lines(&f, node, image, argv),
            exec_lines,
            "{argv:?}: exec printed {printed:?}"
        );
    }
}
