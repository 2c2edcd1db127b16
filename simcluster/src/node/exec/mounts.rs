//! The data of a container's volumes (secret, configMap, projected, downwardAPI, the service
//! account token) and where each volume is mounted.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::support::{b64url, config_map_data, field_ref, hex_id, resource_field, secret_data};
use crate::config::profile::NodeProfile;
use crate::store::{Store, resources};
use crate::vocab::json;

// ---------------------------------------------------------------------------------------------
// Volumes
// ---------------------------------------------------------------------------------------------

/// The Linux default mode of API-data volume files (0644).
pub(super) const DEFAULT_MODE: u32 = 0o644;

/// Where the service account token volume is mounted (`C:\var\run\…` on Windows).
pub(super) const SA_MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum VolumeKind {
    Secret,
    ConfigMap,
    Projected,
    DownwardApi,
    EmptyDir { memory: bool },
    HostPath,
    Other,
}

impl VolumeKind {
    pub(super) fn of(volume: &Value) -> Self {
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
    pub(super) fn plugin_dir(self) -> Option<&'static str> {
        match self {
            Self::Secret => Some("kubernetes.io~secret"),
            Self::ConfigMap => Some("kubernetes.io~configmap"),
            Self::Projected => Some("kubernetes.io~projected"),
            Self::DownwardApi => Some("kubernetes.io~downward-api"),
            _ => None,
        }
    }

    /// API-data volumes are always mounted read-only.
    pub(super) fn api_data(self) -> bool {
        self.plugin_dir().is_some()
    }

    /// Linux backs secrets, projected and downward API volumes (and memory emptyDirs) with tmpfs.
    pub(super) fn tmpfs(self) -> bool {
        matches!(
            self,
            Self::Secret | Self::Projected | Self::DownwardApi | Self::EmptyDir { memory: true }
        )
    }
}

/// The files of one volume: (relative path with `/`, content, mode).
pub(super) struct VolumeData {
    pub(super) kind: VolumeKind,
    pub(super) files: Vec<(String, Vec<u8>, u32)>,
}

pub(super) fn mode_of(v: &Value, field: &str) -> Option<u32> {
    v.get(field).and_then(Value::as_u64).and_then(|m| u32::try_from(m).ok())
}

/// `items` select and rename keys; without them every key becomes a file.
pub(super) fn select_items(data: BTreeMap<String, Vec<u8>>, source: &Value, mode: u32) -> Vec<(String, Vec<u8>, u32)> {
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
pub(super) fn sa_token(pod: &Value) -> Vec<u8> {
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

pub(super) fn downward_files(
    pod: &Value,
    items: &[Value],
    node: Option<&NodeProfile>,
    mode: u32,
) -> Vec<(String, Vec<u8>, u32)> {
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
pub(super) fn volume_data(store: &Store, pod: &Value, volume: &Value, node: Option<&NodeProfile>) -> VolumeData {
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
pub(crate) fn sa_volume(store: &Store, pod: &Value) -> Option<Value> {
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
pub(super) fn pod_volumes(store: &Store, pod: &Value) -> Vec<Value> {
    let mut volumes = json::array(pod, "/spec/volumes").to_vec();
    volumes.extend(sa_volume(store, pod));
    volumes
}

/// One mount of a container.
pub(super) struct Mount {
    /// The mountPath as written in the spec.
    pub(super) path: String,
    pub(super) volume: Value,
    pub(super) read_only: bool,
    pub(super) sub_path: String,
    /// The volumeMount's `mountPropagation` (`None`, `HostToContainer`, `Bidirectional`; "" unset).
    pub(super) propagation: String,
}

pub(super) fn container_mounts(store: &Store, pod: &Value, container: &Value) -> Vec<Mount> {
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
                propagation: json::str(m, "/mountPropagation").to_string(),
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
            propagation: String::new(),
        });
    }
    mounts
}
