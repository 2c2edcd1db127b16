//! What a command sees ([`CommandContext`]): the pod, container, image, node profile, effective OS,
//! HostProcess or not, its environment, user, host name, addresses and DNS configuration.

use std::sync::Arc;

use serde_json::Value;

use super::support::{
    EnvBuilder, WinUser, config_map_data, expand_refs, field_ref, hex_id, image_kind, resource_field, secret_data,
};
use super::volumes::VolumeStore;
use crate::config::platform::Os;
use crate::config::profile::NodeProfile;
use crate::network::dns::{self, DnsConfig};
use crate::node::logs::LogBook;
use crate::store::{Obj, Store, resources};
use crate::vocab::json;
use crate::vocab::pod::find_container;
use crate::vocab::quantity::Quantity;

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
    /// The node-level logs (the kubelet's, and node services'), which a node's disk holds.
    pub logs: Arc<LogBook>,
}

impl CommandContext {
    /// The context of `container` in `pod`, with the node looked up in `profiles`, its files and
    /// node logs its own.
    pub fn new(store: Arc<Store>, profiles: &[NodeProfile], pod: Obj, container: &str) -> Self {
        let files = (Arc::new(VolumeStore::new()), Arc::new(LogBook::default()));
        Self::sharing(store, profiles, pod, container, files)
    }

    /// The context of `container` in `pod` that reads and writes files through `volumes` and
    /// reads the node-level logs from `logs` (the runtime's, shared by every exec: an exec
    /// makes neither; a log book's channel alone is 4,096 slots).
    pub fn sharing(
        store: Arc<Store>,
        profiles: &[NodeProfile],
        pod: Obj,
        container: &str,
        (volumes, logs): (Arc<VolumeStore>, Arc<LogBook>),
    ) -> Self {
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
            volumes,
            logs,
        }
    }

    pub fn is_windows(&self) -> bool {
        self.os == Os::Windows
    }

    /// The container's spec (in `containers`, `initContainers` or `ephemeralContainers`).
    pub fn container_spec(&self) -> Option<&Value> {
        find_container(self.pod.value(), &self.container)
    }

    pub(super) fn spec(&self) -> &Value {
        self.pod.value().get("spec").unwrap_or(&Value::Null)
    }

    pub(super) fn namespace(&self) -> &str {
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

    /// What `hostname` prints: the node's host name on the host network (the node's name, or a
    /// Windows machine's own name where it differs, `crate::node::host::host_name`), else
    /// `spec.hostname` or the pod name (cut to 63 characters as the kubelet does).
    pub fn hostname(&self) -> String {
        if self.host_network()
            && let Some(node) = &self.node
        {
            return crate::node::host::host_name(node);
        }
        let name = match json::str(self.spec(), "/hostname") {
            "" => self.pod.name(),
            h => h,
        };
        let cut: String = name.chars().take(63).collect();
        cut.trim_end_matches(['-', '.']).to_string()
    }

    /// The Windows computer name: the host name in upper case, cut to 15 characters (NetBIOS).
    pub(super) fn computer_name(&self) -> String {
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

    pub(super) fn dns_asker(&self) -> dns::Asker<'_> {
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
    pub(super) fn linux_ids(&self) -> (i64, i64, Vec<i64>) {
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

    pub(super) fn windows_base_env(&self) -> Vec<(String, String)> {
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
    pub(super) fn kube_env(&self) -> Vec<(String, String)> {
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
                self.secrets_delivered()
                    .then(|| secret_data(&self.store, ns, json::str(secret, "/name")))
                    .flatten()
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

    /// Whether Secrets reach this container ([`NodeProfile::secrets_reach_containers`]).
    pub(super) fn secrets_delivered(&self) -> bool {
        self.node.as_ref().is_none_or(NodeProfile::secrets_reach_containers)
    }

    pub(super) fn value_from(&self, from: &Value) -> Option<String> {
        let ns = self.namespace();
        if let Some(field) = from.get("fieldRef") {
            return field_ref(self.pod.value(), json::str(field, "/fieldPath"));
        }
        if let Some(res) = from.get("resourceFieldRef") {
            return resource_field(self.pod.value(), &self.container, res, self.node.as_ref());
        }
        let (data, sel) = if let Some(sel) = from.get("secretKeyRef") {
            if !self.secrets_delivered() {
                return None;
            }
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
    pub(super) fn service_env(&self) -> Vec<(String, String)> {
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
