//! What containers write to disk, and where it lands: the pod's emptyDir volumes (shared by
//! every container of the pod, init containers included, for the pod's life), the node's own
//! file system (hostPath volumes and HostProcess containers, shared by every pod on the node),
//! and each container's writable layer (its own, reset when the container restarts). Mounts
//! decide the place: the longest mount path holding the file wins, a `readOnly` mount or an
//! API-data volume (secret, configMap, projected, downwardAPI — always mounted read-only)
//! refuses the write (STO-READONLY-VOLUME), and a path under no mount is the container's
//! layer (the host's disk for a HostProcess container).
//!
//! Both writers use it: the kubelet for what a container's main process writes
//! ([`crate::node::kubelet::outcome::FileWrite`]), the exec'd commands for their redirections
//! ([`crate::node::exec`]). Readers see the files through [`VolumeStore::files`]: emptyDir and
//! hostPath mounts show them (STO-EMPTYDIR-DISK, STO-HOSTPATH), and the node's host files
//! ([`host_base_files`] plus what was written there) back hostPath volumes and HostProcess
//! containers.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde_json::Value;

use crate::config::profile::NodeProfile;

/// Where written files are kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Place {
    /// A pod's volume by name (emptyDir; other non-API volumes are kept the same way).
    PodVolume { pod_uid: String, volume: String },
    /// A node's own file system (absolute paths).
    Host { node: String },
    /// A container's writable layer (absolute paths).
    Layer { pod_uid: String, container: String },
}

/// Files by key (case-folded on Windows): (path as first written, content).
type Files = BTreeMap<String, (String, Vec<u8>)>;

/// The written files of every pod volume, node and container layer.
#[derive(Debug, Default)]
pub struct VolumeStore {
    places: Mutex<HashMap<Place, Files>>,
}

fn key(path: &str, windows: bool) -> String {
    if windows { path.to_lowercase() } else { path.to_string() }
}

impl VolumeStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes (or appends to) the file `path` of `place` (relative with `/` for a pod volume,
    /// absolute for the host and layers); Windows paths compare without case.
    pub fn write(&self, place: &Place, path: &str, data: &[u8], append: bool, windows: bool) {
        let mut places = self.places.lock().unwrap_or_else(|p| p.into_inner());
        let files = places.entry(place.clone()).or_default();
        let entry = files
            .entry(key(path, windows))
            .or_insert_with(|| (path.to_string(), Vec::new()));
        if !append {
            entry.1.clear();
        }
        entry.1.extend_from_slice(data);
    }

    /// The files of `place`: (path as written, content), in path order.
    pub fn files(&self, place: &Place) -> Vec<(String, Vec<u8>)> {
        let places = self.places.lock().unwrap_or_else(|p| p.into_inner());
        places
            .get(place)
            .map(|f| f.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Drops a pod's volumes and its containers' layers (the kubelet removes them with the pod).
    pub fn forget_pod(&self, pod_uid: &str) {
        let mut places = self.places.lock().unwrap_or_else(|p| p.into_inner());
        places.retain(|p, _| match p {
            Place::PodVolume { pod_uid: uid, .. } | Place::Layer { pod_uid: uid, .. } => uid != pod_uid,
            Place::Host { .. } => true,
        });
    }

    /// A restarted container starts from a fresh writable layer.
    pub fn reset_layer(&self, pod_uid: &str, container: &str) {
        let mut places = self.places.lock().unwrap_or_else(|p| p.into_inner());
        places.remove(&Place::Layer {
            pod_uid: pod_uid.to_string(),
            container: container.to_string(),
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------------

/// `/a/./b/../c` → `/a/c`, relative to `cwd`.
pub fn linux_path(path: &str, cwd: &str) -> String {
    let full = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{cwd}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in full.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// `/etc/secret`, `c:/x\y`, `\x`, `y` → `C:\etc\secret`, `C:\x\y`, `C:\x`, `<cwd>\y`.
pub fn win_path(path: &str, cwd: &str) -> String {
    let mut p = path.replace('/', "\\");
    let b = p.as_bytes();
    let has_drive = b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic();
    if !has_drive {
        p = if p.starts_with('\\') {
            format!("C:{p}")
        } else {
            format!("{}\\{p}", cwd.trim_end_matches('\\'))
        };
    }
    let drive = p.get(..1).unwrap_or("C").to_ascii_uppercase();
    let mut parts: Vec<&str> = Vec::new();
    for part in p.get(2..).unwrap_or("").split('\\') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            x => parts.push(x),
        }
    }
    format!("{drive}:\\{}", parts.join("\\"))
}

/// An absolute path of the OS (`/` or `C:\` relative).
pub fn absolute(path: &str, windows: bool) -> String {
    if windows {
        win_path(path, "C:\\")
    } else {
        linux_path(path, "/")
    }
}

/// `path` relative to `dir` (with `/`), when it is `dir` itself ("") or under it (by whole
/// components; without case on Windows).
pub fn relative(path: &str, dir: &str, windows: bool) -> Option<String> {
    let sep = if windows { '\\' } else { '/' };
    let fold = |s: &str| if windows { s.to_ascii_lowercase() } else { s.to_string() };
    let d = dir.trim_end_matches(sep);
    let (p, dk) = (fold(path), fold(d));
    if p.trim_end_matches(sep) == dk {
        return Some(String::new());
    }
    let prefix = format!("{dk}{sep}");
    if !p.starts_with(&prefix) {
        return None;
    }
    path.get(prefix.len()..).map(|r| r.replace('\\', "/"))
}

/// Whether a redirection target discards what is written (`/dev/null`, `NUL`).
pub fn is_null_device(path: &str, windows: bool) -> bool {
    let p = path.trim();
    if windows {
        p.eq_ignore_ascii_case("nul") || p.eq_ignore_ascii_case("nul:") || p.eq_ignore_ascii_case("\\\\.\\nul")
    } else {
        p == "/dev/null"
    }
}

// ---------------------------------------------------------------------------------------------
// Mounts
// ---------------------------------------------------------------------------------------------

/// What a mount shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountSource {
    /// A pod volume kept in the store (emptyDir and any other non-API volume), by name.
    PodVolume(String),
    /// A directory of the node (absolute, normalised).
    HostPath(String),
    /// Secret, configMap, projected, downwardAPI: always read-only.
    ApiData,
}

/// One mount of a container, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountPoint {
    /// The absolute mount path in the container.
    pub at: String,
    pub source: MountSource,
    pub read_only: bool,
    /// `subPath` (with `/`), or "".
    pub sub_path: String,
}

/// The source of a pod volume.
pub fn source_of(volume: &Value, windows: bool) -> MountSource {
    if ["secret", "configMap", "projected", "downwardAPI"]
        .iter()
        .any(|k| volume.get(*k).is_some())
    {
        return MountSource::ApiData;
    }
    if let Some(path) = volume.pointer("/hostPath/path").and_then(Value::as_str) {
        return MountSource::HostPath(absolute(path, windows));
    }
    MountSource::PodVolume(volume.get("name").and_then(Value::as_str).unwrap_or("").to_string())
}

/// The mounts of a container spec, with the volumes of the pod's `spec` (the service account
/// volume admission adds is API data, which [`crate::node::exec`] adds itself).
pub fn mount_points(spec: &Value, container: &Value, windows: bool) -> Vec<MountPoint> {
    let volumes = spec
        .get("volumes")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    container
        .get("volumeMounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let name = m.get("name").and_then(Value::as_str)?;
            let volume = volumes
                .iter()
                .find(|v| v.get("name").and_then(Value::as_str) == Some(name))?;
            let at = absolute(m.get("mountPath").and_then(Value::as_str)?, windows);
            Some(MountPoint {
                at,
                source: source_of(volume, windows),
                read_only: m.get("readOnly").and_then(Value::as_bool) == Some(true),
                sub_path: m
                    .get("subPath")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .trim_matches('/')
                    .to_string(),
            })
        })
        .collect()
}

/// Where a write to an absolute container path goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteTarget {
    /// Kept at `path` of `place` (relative for a pod volume, absolute otherwise).
    Store { place: Place, path: String },
    /// A read-only mount (`readOnly: true` or an API-data volume).
    ReadOnly,
}

/// The container writing, for [`resolve`].
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
    pub pod_uid: &'a str,
    pub container: &'a str,
    pub node: &'a str,
    pub windows: bool,
    /// A HostProcess container writes outside its volumes straight to the host.
    pub host_process: bool,
}

/// Where a write to `path` (absolute, normalised) lands, by the longest mount holding it.
pub fn resolve(mounts: &[MountPoint], path: &str, w: Writer<'_>) -> WriteTarget {
    let hit = mounts
        .iter()
        .filter_map(|m| relative(path, &m.at, w.windows).map(|rel| (m, rel)))
        .max_by_key(|(m, _)| m.at.len());
    let join = |a: &str, b: &str| match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}/{b}"),
    };
    match hit {
        Some((m, _)) if m.read_only || m.source == MountSource::ApiData => WriteTarget::ReadOnly,
        Some((m, rel)) => match &m.source {
            MountSource::PodVolume(volume) => WriteTarget::Store {
                place: Place::PodVolume {
                    pod_uid: w.pod_uid.to_string(),
                    volume: volume.clone(),
                },
                path: join(&m.sub_path, &rel),
            },
            MountSource::HostPath(dir) => {
                let rel = join(&m.sub_path, &rel);
                let sep = if w.windows { "\\" } else { "/" };
                let full = if rel.is_empty() {
                    dir.clone()
                } else {
                    format!("{}{sep}{}", dir.trim_end_matches(sep), rel.replace('/', sep))
                };
                WriteTarget::Store {
                    place: Place::Host {
                        node: w.node.to_string(),
                    },
                    path: full,
                }
            }
            MountSource::ApiData => WriteTarget::ReadOnly,
        },
        None if w.host_process => WriteTarget::Store {
            place: Place::Host {
                node: w.node.to_string(),
            },
            path: path.to_string(),
        },
        None => WriteTarget::Store {
            place: Place::Layer {
                pod_uid: w.pod_uid.to_string(),
                container: w.container.to_string(),
            },
            path: path.to_string(),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// The node's own files
// ---------------------------------------------------------------------------------------------

/// Where Windows keeps its hosts file.
pub const WINDOWS_HOSTS_PATH: &str = "C:\\Windows\\System32\\drivers\\etc\\hosts";

/// The stock Windows hosts file (every entry commented out).
pub const WINDOWS_HOSTS: &str = "# Copyright (c) 1993-2009 Microsoft Corp.\r\n#\r\n# This is a sample HOSTS file used by \
    Microsoft TCP/IP for Windows.\r\n#\r\n# This file contains the mappings of IP addresses to host names. Each\r\n# \
    entry should be kept on an individual line. The IP address should\r\n# be placed in the first column followed by \
    the corresponding host name.\r\n#\r\n# localhost name resolution is handled within DNS itself.\r\n\
    #\t127.0.0.1       localhost\r\n#\t::1             localhost\r\n";

const WINDOWS_NETWORKS: &str = "# Copyright (c) 1993-1999 Microsoft Corp.\r\n#\r\n# This file contains network name/network \
    number mappings for\r\n# local networks. Network numbers are recognized in dotted decimal form.\r\n\r\n\
    loopback                 127\r\ncampus                   284\r\nlondon                   2227\r\n";

/// The files of a node's own disk the simulation knows of (before anything is written): the
/// hosts files in their OS's place.
pub fn host_base_files(node: &NodeProfile) -> Vec<(String, Vec<u8>)> {
    if node.is_windows() {
        return vec![
            (WINDOWS_HOSTS_PATH.into(), WINDOWS_HOSTS.as_bytes().to_vec()),
            (
                "C:\\Windows\\System32\\drivers\\etc\\networks".into(),
                WINDOWS_NETWORKS.as_bytes().to_vec(),
            ),
        ];
    }
    let hosts = format!(
        "127.0.0.1\tlocalhost\n{}\t{}\n\n# The following lines are desirable for IPv6 capable hosts\n::1     \
         ip6-localhost ip6-loopback\nfe00::0 ip6-localnet\nff00::0 ip6-mcastprefix\nff02::1 ip6-allnodes\nff02::2 \
         ip6-allrouters\n",
        node.ip, node.name
    );
    vec![
        ("/etc/hostname".into(), format!("{}\n", node.name).into_bytes()),
        ("/etc/hosts".into(), hosts.into_bytes()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn writer(windows: bool, host_process: bool) -> Writer<'static> {
        Writer {
            pod_uid: "uid-1",
            container: "c",
            node: "node-1",
            windows,
            host_process,
        }
    }

    #[test]
    fn relative_paths_compare_by_component() {
        assert_eq!(relative("/mnt/data/x/y", "/mnt/data", false).as_deref(), Some("x/y"));
        assert_eq!(relative("/mnt/data", "/mnt/data/", false).as_deref(), Some(""));
        assert_eq!(relative("/mnt/database/x", "/mnt/data", false), None);
        assert_eq!(relative("/etc/hosts", "/", false).as_deref(), Some("etc/hosts"));
        assert_eq!(
            relative("C:\\MixCheck\\Scratch\\f.txt", "c:\\mixcheck\\scratch", true).as_deref(),
            Some("f.txt")
        );
        assert_eq!(relative("C:\\x\\y", "C:\\", true).as_deref(), Some("x/y"));
    }

    /// STO-EMPTYDIR-DISK, STO-HOSTPATH, STO-READONLY-VOLUME (W14, E2E/volumes): an emptyDir
    /// write is kept per pod volume, a hostPath write on the node, a readOnly mount or an API
    /// data volume refuses it, anything else is the container's layer.
    #[test]
    fn writes_land_by_the_longest_mount() {
        let spec = json!({"volumes": [
            {"name": "scratch", "emptyDir": {}},
            {"name": "host", "hostPath": {"path": "C:\\data"}},
            {"name": "secret", "secret": {"secretName": "s"}},
        ]});
        let c = json!({"volumeMounts": [
            {"name": "scratch", "mountPath": "C:\\mnt"},
            {"name": "scratch", "mountPath": "C:\\mnt\\ro", "readOnly": true},
            {"name": "host", "mountPath": "C:\\host", "subPath": "logs"},
            {"name": "secret", "mountPath": "C:\\secret"},
        ]});
        let mounts = mount_points(&spec, &c, true);
        let w = writer(true, false);
        assert_eq!(
            resolve(&mounts, "C:\\mnt\\a\\b.txt", w),
            WriteTarget::Store {
                place: Place::PodVolume {
                    pod_uid: "uid-1".into(),
                    volume: "scratch".into()
                },
                path: "a/b.txt".into()
            }
        );
        assert_eq!(resolve(&mounts, "C:\\MNT\\RO\\x", w), WriteTarget::ReadOnly);
        assert_eq!(resolve(&mounts, "C:\\secret\\x", w), WriteTarget::ReadOnly);
        assert_eq!(
            resolve(&mounts, "C:\\host\\today.log", w),
            WriteTarget::Store {
                place: Place::Host { node: "node-1".into() },
                path: "C:\\data\\logs\\today.log".into()
            }
        );
        assert_eq!(
            resolve(&mounts, "C:\\tmp\\x", w),
            WriteTarget::Store {
                place: Place::Layer {
                    pod_uid: "uid-1".into(),
                    container: "c".into()
                },
                path: "C:\\tmp\\x".into()
            }
        );
        assert_eq!(
            resolve(&mounts, "C:\\tmp\\x", writer(true, true)),
            WriteTarget::Store {
                place: Place::Host { node: "node-1".into() },
                path: "C:\\tmp\\x".into()
            }
        );
    }

    #[test]
    fn the_store_appends_truncates_and_forgets_pods() {
        let store = VolumeStore::new();
        let vol = Place::PodVolume {
            pod_uid: "u".into(),
            volume: "v".into(),
        };
        store.write(&vol, "Seed.txt", b"a\r\n", false, true);
        store.write(&vol, "seed.txt", b"b\r\n", true, true);
        assert_eq!(
            store.files(&vol),
            vec![("Seed.txt".to_string(), b"a\r\nb\r\n".to_vec())]
        );
        store.write(&vol, "SEED.TXT", b"c", false, true);
        assert_eq!(store.files(&vol), vec![("Seed.txt".to_string(), b"c".to_vec())]);
        let host = Place::Host { node: "n".into() };
        store.write(&host, "/var/log/x", b"1", false, false);
        store.forget_pod("u");
        assert!(store.files(&vol).is_empty());
        assert_eq!(store.files(&host).len(), 1);
    }
}
