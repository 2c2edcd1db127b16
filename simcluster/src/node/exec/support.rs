//! Small helpers of the command families: ids, base64, environment building and references,
//! secret and configMap data, exec outputs, Windows users and image kinds.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use base64::Engine as _;
use serde_json::Value;

use crate::config::profile::NodeProfile;
use crate::node::runtime::{ExecOutput, ExitStatus};
use crate::store::{Store, resources};
use crate::vocab::json;
use crate::vocab::pod::find_container;
use crate::vocab::quantity::Quantity;

// ---------------------------------------------------------------------------------------------
// JSON and small helpers
// ---------------------------------------------------------------------------------------------

/// A 64-hex-digit id, stable for its parts (FNV-1a, four salts).
pub(super) fn hex_id(parts: &[&str]) -> String {
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

pub(super) fn b64_decode(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .unwrap_or_else(|_| text.as_bytes().to_vec())
}

pub(super) fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// An environment being assembled: a later value of a name replaces the earlier one in place,
/// names compared as the OS compares them (case-insensitively on Windows). Indexed, because a
/// namespace with many Services gives every container thousands of service variables.
pub(super) struct EnvBuilder {
    pub(super) vars: Vec<(String, String)>,
    pub(super) index: HashMap<String, usize>,
    pub(super) windows: bool,
}

impl EnvBuilder {
    pub(super) fn new(windows: bool) -> Self {
        Self {
            vars: Vec::new(),
            index: HashMap::new(),
            windows,
        }
    }

    pub(super) fn key(&self, name: &str) -> String {
        if self.windows {
            name.to_ascii_lowercase()
        } else {
            name.to_string()
        }
    }

    pub(super) fn set(&mut self, name: String, value: String) {
        match self.index.entry(self.key(&name)) {
            std::collections::hash_map::Entry::Occupied(e) => self.vars[*e.get()].1 = value,
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(self.vars.len());
                self.vars.push((name, value));
            }
        }
    }

    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.index.get(&self.key(name)).map(|&i| self.vars[i].1.as_str())
    }

    pub(super) fn into_vars(self) -> Vec<(String, String)> {
        self.vars
    }
}

pub(super) fn env_get<'a>(env: &'a [(String, String)], name: &str, windows: bool) -> Option<&'a str> {
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

pub(super) fn env_set(env: &mut Vec<(String, String)>, name: &str, value: String, windows: bool) {
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
pub(super) fn expand_refs(text: &str, known: &[(String, String)]) -> String {
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
pub(crate) fn field_ref(pod: &Value, path: &str) -> Option<String> {
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
pub(super) fn resource_field(pod: &Value, container: &str, sel: &Value, node: Option<&NodeProfile>) -> Option<String> {
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

pub(super) fn secret_data(store: &Store, ns: &str, name: &str) -> Option<BTreeMap<String, Vec<u8>>> {
    let secret = store.get(resources::core("secrets"), ns, name).ok()?;
    let data = secret.value().get("data").and_then(Value::as_object);
    Some(
        data.into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), b64_decode(v.as_str().unwrap_or(""))))
            .collect(),
    )
}

pub(super) fn config_map_data(store: &Store, ns: &str, name: &str) -> Option<BTreeMap<String, Vec<u8>>> {
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

pub(super) fn runtime_error(message: String) -> ExecOutput {
    ExecOutput {
        stdout: Vec::new(),
        stderr: Vec::new(),
        exit: ExitStatus::Error(message),
    }
}

pub(super) fn out(stdout: impl Into<Vec<u8>>, stderr: impl Into<Vec<u8>>, code: i32) -> ExecOutput {
    ExecOutput {
        stdout: stdout.into(),
        stderr: stderr.into(),
        exit: ExitStatus::Code(code),
    }
}

pub(super) fn code_of(o: &ExecOutput) -> i32 {
    match o.exit {
        ExitStatus::Code(c) => c,
        ExitStatus::Error(_) => 126,
    }
}

/// A TTY has one stream; on Linux the pty turns `\n` into `\r\n`.
pub(super) fn through_tty(mut o: ExecOutput, windows: bool) -> ExecOutput {
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
pub(super) struct WinUser {
    pub(super) domain: String,
    pub(super) name: String,
    pub(super) computer: String,
}

impl WinUser {
    pub(super) fn parse(user: &str, computer: &str) -> Self {
        let (domain, name) = user.rsplit_once('\\').unwrap_or(("", user));
        Self {
            domain: domain.to_string(),
            name: name.to_string(),
            computer: computer.to_string(),
        }
    }

    pub(super) fn nt_authority(&self) -> bool {
        self.domain.eq_ignore_ascii_case("NT AUTHORITY")
    }

    /// What `whoami` prints.
    pub(super) fn whoami(&self) -> String {
        let domain = if self.domain.is_empty() {
            "User Manager"
        } else {
            &self.domain
        };
        format!("{domain}\\{}", self.name).to_lowercase()
    }

    /// `%USERNAME%`: the machine account for SYSTEM, the account name otherwise.
    pub(super) fn env_name(&self) -> String {
        match self.name.to_ascii_lowercase().as_str() {
            "system" if self.nt_authority() => format!("{}$", self.computer),
            "local service" | "localservice" if self.nt_authority() => "LOCAL SERVICE".into(),
            "network service" | "networkservice" if self.nt_authority() => "NETWORK SERVICE".into(),
            _ => self.name.clone(),
        }
    }

    pub(super) fn env_domain(&self) -> String {
        match (self.nt_authority(), self.domain.is_empty()) {
            (true, _) => "WORKGROUP".into(),
            (false, true) => "User Manager".into(),
            (false, false) => self.domain.clone(),
        }
    }

    pub(super) fn profile(&self) -> String {
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
pub(super) enum ImageKind {
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
    pub(super) fn default_windows_user(self) -> &'static str {
        match self {
            Self::NanoServer | Self::NonRoot => "ContainerUser",
            _ => "ContainerAdministrator",
        }
    }
}

pub(super) fn image_kind(image: &str) -> ImageKind {
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
