//! Fixtures: the Kubernetes manifests the checks deploy (`fixtures/*.yaml`, embedded), real
//! multi-OS workloads that run unchanged on a real cluster. Each Pod document names its OS in the
//! annotation `mixcheck.io/os`; the runner stamps a copy per node: its name, the run's labels,
//! the node's hostname/OS/build selectors and tolerations for the node's taints, the images as
//! the run's mirrors rewrite them and the run's pull secrets ([`crate::cluster::registry`]).

use std::collections::BTreeMap;
use std::path::Path;

use mixcheck_reports::Os;
use serde_json::{Value, json};

use crate::catalogue::suite::VersionRange;
use crate::cluster::facts::ClusterNode;
use crate::cluster::images;
use crate::cluster::registry::Registry;

/// The fixtures built into the binary.
pub const EMBEDDED: &[(&str, &str)] = &[
    (
        "affinity-backend",
        include_str!("../../../fixtures/affinity-backend.yaml"),
    ),
    ("build-match", include_str!("../../../fixtures/build-match.yaml")),
    ("build-mismatch", include_str!("../../../fixtures/build-mismatch.yaml")),
    ("cpu-limits", include_str!("../../../fixtures/cpu-limits.yaml")),
    ("dns-custom", include_str!("../../../fixtures/dns-custom.yaml")),
    ("dns-etc-hosts", include_str!("../../../fixtures/dns-etc-hosts.yaml")),
    ("dns-suffix", include_str!("../../../fixtures/dns-suffix.yaml")),
    (
        "emptydir-memory",
        include_str!("../../../fixtures/emptydir-memory.yaml"),
    ),
    (
        "emptydir-shared",
        include_str!("../../../fixtures/emptydir-shared.yaml"),
    ),
    (
        "fsgroup-windows",
        include_str!("../../../fixtures/fsgroup-windows.yaml"),
    ),
    (
        "gmsa-credspec-absent",
        include_str!("../../../fixtures/gmsa-credspec-absent.yaml"),
    ),
    ("graceful-stop", include_str!("../../../fixtures/graceful-stop.yaml")),
    ("host-network", include_str!("../../../fixtures/host-network.yaml")),
    ("host-probe", include_str!("../../../fixtures/host-probe.yaml")),
    ("hostpath-read", include_str!("../../../fixtures/hostpath-read.yaml")),
    ("hostprocess", include_str!("../../../fixtures/hostprocess.yaml")),
    ("hugepages", include_str!("../../../fixtures/hugepages.yaml")),
    (
        "hyperv-isolation",
        include_str!("../../../fixtures/hyperv-isolation.yaml"),
    ),
    (
        "linux-fields-no-os",
        include_str!("../../../fixtures/linux-fields-no-os.yaml"),
    ),
    ("ltsc2022-image", include_str!("../../../fixtures/ltsc2022-image.yaml")),
    (
        "memory-over-allocatable",
        include_str!("../../../fixtures/memory-over-allocatable.yaml"),
    ),
    (
        "memory-over-limit",
        include_str!("../../../fixtures/memory-over-limit.yaml"),
    ),
    ("mixed-os-pod", include_str!("../../../fixtures/mixed-os-pod.yaml")),
    (
        "mount-propagation",
        include_str!("../../../fixtures/mount-propagation.yaml"),
    ),
    ("netexec-client", include_str!("../../../fixtures/netexec-client.yaml")),
    ("netexec-server", include_str!("../../../fixtures/netexec-server.yaml")),
    (
        "os-field-validation",
        include_str!("../../../fixtures/os-field-validation.yaml"),
    ),
    (
        "pod-os-mismatch",
        include_str!("../../../fixtures/pod-os-mismatch.yaml"),
    ),
    ("privileged", include_str!("../../../fixtures/privileged.yaml")),
    (
        "readonly-rootfs",
        include_str!("../../../fixtures/readonly-rootfs.yaml"),
    ),
    (
        "readonly-volume",
        include_str!("../../../fixtures/readonly-volume.yaml"),
    ),
    (
        "run-as-username",
        include_str!("../../../fixtures/run-as-username.yaml"),
    ),
    (
        "run-as-username-invalid",
        include_str!("../../../fixtures/run-as-username-invalid.yaml"),
    ),
    (
        "run-as-username-override",
        include_str!("../../../fixtures/run-as-username-override.yaml"),
    ),
    (
        "runasnonroot-admin",
        include_str!("../../../fixtures/runasnonroot-admin.yaml"),
    ),
    (
        "runasnonroot-admin-uppercase",
        include_str!("../../../fixtures/runasnonroot-admin-uppercase.yaml"),
    ),
    ("sandbox-starts", include_str!("../../../fixtures/sandbox-starts.yaml")),
    ("secret-at-rest", include_str!("../../../fixtures/secret-at-rest.yaml")),
    (
        "secret-consumer",
        include_str!("../../../fixtures/secret-consumer.yaml"),
    ),
    (
        "secret-default-mode",
        include_str!("../../../fixtures/secret-default-mode.yaml"),
    ),
    (
        "single-file-mount",
        include_str!("../../../fixtures/single-file-mount.yaml"),
    ),
    ("stop-signal", include_str!("../../../fixtures/stop-signal.yaml")),
    ("subpath-secret", include_str!("../../../fixtures/subpath-secret.yaml")),
    (
        "termination-message",
        include_str!("../../../fixtures/termination-message.yaml"),
    ),
];

/// The annotation that says which OS a fixture pod is for.
pub const OS_ANNOTATION: &str = "mixcheck.io/os";
/// The annotation of a Windows pod for ranges of Windows builds only (`"<17763 || >=26100"`):
/// nodes of those builds get it instead of the file's plain Windows pod.
pub const BUILDS_ANNOTATION: &str = "mixcheck.io/windows-builds";
/// Whether a fixture pod is a Windows HostProcess pod (pod- or container-level
/// `windowsOptions.hostProcess: true`).
pub fn needs_host_process(pod: &Value) -> bool {
    let hpc = |v: &Value| v.pointer("/securityContext/windowsOptions/hostProcess") == Some(&Value::Bool(true));
    pod.get("spec").is_some_and(hpc) || containers(pod).any(hpc)
}

/// Whether the network fixtures run agnhost (and so its probe tools) on `node`: where agnhost
/// publishes a variant for the node's build ([`images::WINDOWS_BUILDS`]); elsewhere they run
/// Windows Server Core with Windows PowerShell.
pub fn agnhost_runs_on(node: &ClusterNode) -> bool {
    images::network_image(node.os, node.build) == images::NetworkImage::Agnhost
}
/// Labels every object of a run carries.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "mixcheck");
pub const RUN_LABEL: &str = "mixcheck.io/run";

/// Replaces `{{run-id}}` in every string of a fixture object with the run's id (fixtures/README.md).
pub fn fill_run_id(value: &mut Value, run_id: &str) {
    match value {
        Value::String(s) if s.contains("{{run-id}}") => *s = s.replace("{{run-id}}", run_id),
        Value::Array(items) => items.iter_mut().for_each(|v| fill_run_id(v, run_id)),
        Value::Object(fields) => fields.values_mut().for_each(|v| fill_run_id(v, run_id)),
        _ => {}
    }
}

/// A bad fixture file (exit code 2): the same shapes as a bad suite file.
pub use crate::catalogue::suite::SuiteError as FixtureError;

/// A [`BUILDS_ANNOTATION`] value: version ranges joined by `||` (`"<17763 || >=26100"`).
#[derive(Debug, Clone)]
pub struct BuildRanges(pub Vec<VersionRange>);

impl BuildRanges {
    pub fn parse(text: &str) -> Result<Self, String> {
        text.split("||")
            .map(|part| VersionRange::parse(part.trim()))
            .collect::<Result<Vec<_>, _>>()
            .map(Self)
    }

    /// Whether `version` lies in any of the ranges.
    pub fn contains(&self, version: &[u32]) -> bool {
        self.0.iter().any(|r| r.contains(version))
    }
}

/// One fixture: its pod per OS and the other objects it needs.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub name: String,
    pub pods: BTreeMap<OsKey, Value>,
    /// Windows pods for a range of builds ([`BUILDS_ANNOTATION`]), tried before `pods["windows"]`.
    pub windows_builds: Vec<(BuildRanges, Value)>,
    pub others: Vec<Value>,
}

impl Fixture {
    /// The pod of this fixture for `node`: a Windows pod for the node's build range, else the
    /// pod of its OS.
    pub fn pod_for(&self, node: &ClusterNode) -> Option<&Value> {
        if node.os == Os::Windows
            && let Some(build) = node.build
            && let Some((_, pod)) = self.windows_builds.iter().find(|(r, _)| r.contains(&[build]))
        {
            return Some(pod);
        }
        self.pods.get(os_key(node.os))
    }
}

/// An OS as a map key.
pub type OsKey = &'static str;

pub fn os_key(os: Os) -> OsKey {
    match os {
        Os::Linux => "linux",
        Os::Windows => "windows",
    }
}

/// Parses one fixture file; `origin` names it in errors.
pub fn parse(name: &str, text: &str, origin: &str) -> Result<Fixture, FixtureError> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| {
        let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
        FixtureError::Parse {
            path: origin.to_string(),
            line,
            column,
            message: e.to_string().lines().next().unwrap_or_default().to_string(),
        }
    })?;
    let invalid = |message: String| FixtureError::Invalid {
        path: origin.to_string(),
        message,
    };
    let mut fixture = Fixture {
        name: name.to_string(),
        pods: BTreeMap::new(),
        windows_builds: Vec::new(),
        others: Vec::new(),
    };
    for (i, doc) in docs.into_iter().enumerate() {
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
        if doc.get("apiVersion").and_then(Value::as_str).is_none() || kind.is_empty() {
            return Err(invalid(format!("document {} has no apiVersion or kind", i + 1)));
        }
        if doc.pointer("/metadata/namespace").is_some() {
            return Err(invalid(format!(
                "document {} sets a namespace (the runner sets it)",
                i + 1
            )));
        }
        if kind != "Pod" {
            fixture.others.push(doc);
            continue;
        }
        let doc_name = doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if doc_name != name {
            return Err(invalid(format!(
                "pod {doc_name:?} must be named after its file ({name:?})"
            )));
        }
        let os = match doc
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(OS_ANNOTATION))
            .and_then(Value::as_str)
        {
            Some("linux") => "linux",
            Some("windows") => "windows",
            Some(other) => {
                return Err(invalid(format!(
                    "pod {name:?}: {OS_ANNOTATION} is {other:?}, expected linux or windows"
                )));
            }
            None => {
                return Err(invalid(format!(
                    "pod {name:?} has no OS: add the annotation {OS_ANNOTATION}: linux|windows"
                )));
            }
        };
        if doc.pointer("/spec/nodeName").is_some() {
            return Err(invalid(format!(
                "pod {name:?} ({os}) sets nodeName (the runner places fixtures)"
            )));
        }
        let builds = doc
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(BUILDS_ANNOTATION))
            .map(|b| b.as_str().map(BuildRanges::parse));
        match builds {
            None => {}
            Some(Some(Ok(range))) if os == "windows" => {
                fixture.windows_builds.push((range, doc));
                continue;
            }
            Some(Some(Ok(_))) => {
                return Err(invalid(format!(
                    "pod {name:?}: {BUILDS_ANNOTATION} is for Windows pods only"
                )));
            }
            Some(Some(Err(e))) => {
                return Err(invalid(format!("pod {name:?}: {BUILDS_ANNOTATION}: {e}")));
            }
            Some(None) => {
                return Err(invalid(format!(
                    "pod {name:?}: {BUILDS_ANNOTATION} must be a string such as \"<17763\""
                )));
            }
        }
        if fixture.pods.insert(os, doc).is_some() {
            return Err(invalid(format!("two {os} pods named {name:?}")));
        }
    }
    if fixture.pods.is_empty() && fixture.others.is_empty() {
        return Err(invalid("no objects".into()));
    }
    Ok(fixture)
}

/// Every fixture of a run by name: the embedded ones and those of `extra`.
#[derive(Debug, Clone)]
pub struct Fixtures {
    pub by_name: BTreeMap<String, Fixture>,
}

impl Fixtures {
    pub fn load(extra: Option<&Path>) -> Result<Self, FixtureError> {
        let mut by_name = BTreeMap::new();
        for (name, text) in EMBEDDED {
            by_name.insert(
                name.to_string(),
                parse(name, text, &format!("fixtures/{name}.yaml (embedded)"))?,
            );
        }
        if let Some(dir) = extra {
            let shown = dir.display().to_string();
            let entries = std::fs::read_dir(dir).map_err(|cause| FixtureError::Read {
                path: shown.clone(),
                cause,
            })?;
            let mut paths: Vec<_> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
                .collect();
            paths.sort();
            for path in paths {
                let origin = path.display().to_string();
                let text = std::fs::read_to_string(&path).map_err(|cause| FixtureError::Read {
                    path: origin.clone(),
                    cause,
                })?;
                let name = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or_default()
                    .to_string();
                by_name.insert(name.clone(), parse(&name, &text, &origin)?);
            }
        }
        Ok(Self { by_name })
    }

    pub fn get(&self, name: &str) -> Option<&Fixture> {
        self.by_name.get(name)
    }

    /// Every image the fixtures use, with the OS it runs on (for `mixcheck images`); Windows
    /// tags expanded for the builds of [`WINDOWS_BUILDS`] each pod is deployed on.
    pub fn images(&self) -> Vec<FixtureImage> {
        let mut out = Vec::new();
        for f in self.by_name.values() {
            let variants = f
                .windows_builds
                .iter()
                .map(|(range, pod)| ("windows", pod, Some(range)));
            let plain = f.pods.iter().map(|(os, pod)| (*os, pod, None));
            for (pod_os, pod, range) in plain.chain(variants) {
                // The builds this pod serves: its range, or those no range of the file claims.
                let builds: Vec<u32> = WINDOWS_BUILDS
                    .iter()
                    .copied()
                    .filter(|b| match range {
                        Some(r) => r.contains(&[*b]),
                        None => !f.windows_builds.iter().any(|(r, _)| r.contains(&[*b])),
                    })
                    .collect();
                for c in containers(pod) {
                    let Some(image) = c.get("image").and_then(Value::as_str) else {
                        continue;
                    };
                    let os = image_os(image, pod_os);
                    if pod_os == "windows" {
                        for b in &builds {
                            let stamped = image
                                .replace("{{windows-tag}}", windows_tag_for(image, *b))
                                .replace("{{other-windows-tag}}", other_windows_tag(*b));
                            out.push(FixtureImage {
                                image: stamped,
                                os,
                                build: Some(*b),
                                fixture: f.name.clone(),
                            });
                        }
                    } else {
                        out.push(FixtureImage {
                            image: image.to_string(),
                            os,
                            build: None,
                            fixture: f.name.clone(),
                        });
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// One image a fixture pulls: for which OS, on which Windows build (None: every Linux node), and
/// in which fixture.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FixtureImage {
    pub image: String,
    pub os: OsKey,
    pub build: Option<u32>,
    pub fixture: String,
}

/// The OS an image is built for: a Windows-only repository (`mcr.microsoft.com/windows/…`, the
/// HostProcess base image) or a Windows tag says Windows whatever pod holds it (a Linux pod with
/// a Nano Server container is how a mixed-OS pod is tested); a multi-OS image is the pod's OS.
fn image_os(image: &str, pod_os: OsKey) -> OsKey {
    let repository = image.split(['@']).next().unwrap_or(image);
    let (path, tag) = match repository.rsplit_once(':') {
        Some((path, tag)) if !tag.contains('/') => (path, tag),
        _ => (repository, ""),
    };
    let windows_repository = path.contains("/windows/") || path.contains("windows-host-process");
    let windows_tag = tag.contains("windows") || tag.starts_with("ltsc") || tag == "1809" || tag.starts_with("sac");
    if windows_repository || windows_tag {
        "windows"
    } else {
        pod_os
    }
}

fn containers(pod: &Value) -> impl Iterator<Item = &Value> {
    ["/spec/initContainers", "/spec/containers"]
        .into_iter()
        .filter_map(|p| pod.pointer(p).and_then(Value::as_array))
        .flatten()
}

/// Taints a fixture never tolerates: a cordoned node's and a virtual kubelet's.
const NEVER_TOLERATED: &[&str] = &["node.kubernetes.io/unschedulable", "virtual-kubelet.io/provider"];

pub use crate::cluster::images::{other_windows_tag, windows_tag_for};

/// The Windows builds of the documented eras (VER-OS-SUPPORTED): 2016, 1709, 2019, 2022, 2025.
pub const WINDOWS_BUILDS: [u32; 5] = [
    images::WINDOWS_BUILDS[0].build,
    images::WINDOWS_BUILDS[1].build,
    images::WINDOWS_BUILDS[2].build,
    images::WINDOWS_BUILDS[3].build,
    images::WINDOWS_BUILDS[4].build,
];

/// A copy of `pod` for `node`: named `name`, labelled for the run, pinned to the node by its
/// hostname, OS and build labels, tolerating the node's taints, images rewritten for the run's
/// mirrors and its pull secrets named (besides any the fixture names).
pub fn stamp(
    pod: &Value,
    name: &str,
    node: &ClusterNode,
    labels: &BTreeMap<String, String>,
    registry: &Registry,
) -> Value {
    let mut p = pod.clone();
    if let Some(run_id) = labels.get(RUN_LABEL) {
        fill_run_id(&mut p, run_id);
    }
    p["metadata"]["name"] = json!(name);
    let meta_labels = p["metadata"]
        .as_object_mut()
        .map(|m| m.entry("labels").or_insert_with(|| json!({})));
    if let Some(Value::Object(l)) = meta_labels {
        for (k, v) in labels {
            l.insert(k.clone(), json!(v));
        }
    }
    let mut selector = serde_json::Map::new();
    selector.insert(
        "kubernetes.io/hostname".into(),
        json!(node.labels.get("kubernetes.io/hostname").unwrap_or(&node.name)),
    );
    selector.insert("kubernetes.io/os".into(), json!(os_key(node.os)));
    if let Some(build) = node.labels.get("node.kubernetes.io/windows-build") {
        selector.insert("node.kubernetes.io/windows-build".into(), json!(build));
    }
    p["spec"]["nodeSelector"] = Value::Object(selector);
    let mut tolerations: Vec<Value> = p
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for t in &node.taints {
        // A cordoned or virtual node's taints say the node must not get new pods: never
        // tolerated (such nodes are skipped; a fixture aimed at one stays Pending and says so).
        if t.effect == "PreferNoSchedule" || NEVER_TOLERATED.contains(&t.key.as_str()) {
            continue;
        }
        let mut tol = json!({"key": t.key, "effect": t.effect});
        match &t.value {
            Some(v) if !v.is_empty() => {
                tol["operator"] = json!("Equal");
                tol["value"] = json!(v);
            }
            _ => tol["operator"] = json!("Exists"),
        }
        tolerations.push(tol);
    }
    p["spec"]["tolerations"] = json!(tolerations);
    // No service variables: the run namespace holds a few Services per node, and thousands of
    // variables in every container only slow its start (Kubernetes documents
    // `enableServiceLinks: false` for namespaces with many Services). A fixture may still ask.
    if let Some(spec) = p["spec"].as_object_mut() {
        spec.entry("enableServiceLinks").or_insert(json!(false));
    }
    let build = node.build.unwrap_or(20348);
    for path in ["/spec/initContainers", "/spec/containers"] {
        if let Some(cs) = p.pointer_mut(path).and_then(Value::as_array_mut) {
            for c in cs {
                if let Some(image) = c.get("image").and_then(Value::as_str) {
                    let mut image = image
                        .replace("{{windows-tag}}", windows_tag_for(image, build))
                        .replace("{{other-windows-tag}}", other_windows_tag(build));
                    if !registry.mirrors.is_empty() {
                        image = registry.mirrors.rewrite(&image);
                    }
                    c["image"] = json!(image);
                }
            }
        }
    }
    name_pull_secrets(&mut p, &registry.secret_names());
    p
}

/// Adds `names` to the pod's `imagePullSecrets` (those it names already stay, once each).
fn name_pull_secrets(pod: &mut Value, names: &[&str]) {
    if names.is_empty() {
        return;
    }
    let mut secrets: Vec<Value> = pod
        .pointer("/spec/imagePullSecrets")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for name in names {
        if !secrets
            .iter()
            .any(|s| s.get("name").and_then(Value::as_str) == Some(name))
        {
            secrets.push(json!({"name": name}));
        }
    }
    pod["spec"]["imagePullSecrets"] = json!(secrets);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_id_fills_every_marker() {
        let mut v = json!({"stringData": {"value": "at-rest-{{run-id}}"},
            "spec": {"containers": [{"env": [{"value": "{{run-id}}/{{run-id}}"}]}]}, "n": 1});
        fill_run_id(&mut v, "ab12");
        assert_eq!(v["stringData"]["value"], "at-rest-ab12");
        assert_eq!(v["spec"]["containers"][0]["env"][0]["value"], "ab12/ab12");
        assert_eq!(v["n"], 1);
    }
    use mixcheck_reports::Taint;
    use rstest::rstest;

    fn node(os: Os, build: Option<u32>, taints: Vec<Taint>) -> ClusterNode {
        let mut labels = BTreeMap::new();
        labels.insert("kubernetes.io/hostname".to_string(), "n1".to_string());
        if let Some(b) = build {
            labels.insert("node.kubernetes.io/windows-build".to_string(), format!("10.0.{b}"));
        }
        ClusterNode {
            name: "n1".into(),
            os,
            build,
            address: "10.0.0.1".into(),
            external_address: None,
            kubelet: Some((1, 32)),
            kubelet_patch: None,
            runtime: Some(("containerd".into(), (1, 7))),
            taints,
            control_plane: false,
            ready: true,
            labels,
            kernel: String::new(),
            memory: (None, None),
            conditions: BTreeMap::new(),
            configz: None,
            skipped: None,
        }
    }

    /// Every file of fixtures/ is embedded (the list above is kept in step by hand).
    #[test]
    fn every_fixture_file_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .expect("fixtures/")
            .filter_map(Result::ok)
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".yaml"))
                    .map(str::to_string)
            })
            .collect();
        files.sort();
        let embedded: Vec<String> = EMBEDDED.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(files, embedded);
    }

    #[test]
    fn the_embedded_fixtures_have_a_pod_per_os() {
        let f = Fixtures::load(None).expect("fixtures");
        for name in ["netexec-server", "netexec-client", "host-probe", "affinity-backend"] {
            let fx = f.get(name).expect(name);
            assert!(
                fx.pods.contains_key("linux") && fx.pods.contains_key("windows"),
                "{name}"
            );
        }
        assert!(
            f.images()
                .iter()
                .any(|i| i.image.contains("agnhost") && i.os == "windows")
        );
        // Tags per build: the Server Core pods only for the builds agnhost has no variant for
        // (2016, 1709 and — since agnhost publishes 1809 and ltsc2022 only — 2025).
        let images: Vec<String> = f.images().into_iter().map(|i| i.image).collect();
        for image in [
            "mcr.microsoft.com/windows/servercore:ltsc2016",
            "mcr.microsoft.com/windows/servercore:1709",
            "mcr.microsoft.com/windows/servercore:ltsc2025",
            "mcr.microsoft.com/windows/nanoserver:sac2016",
            "mcr.microsoft.com/windows/nanoserver:1809",
            "mcr.microsoft.com/windows/nanoserver:ltsc2025",
        ] {
            assert!(images.iter().any(|i| i == image), "{image}");
        }
        for absent in [
            "mcr.microsoft.com/windows/servercore:ltsc2022",
            // Nano Server's 2019 tag is 1809: there is no nanoserver:ltsc2019 (MCRBLOG).
            "mcr.microsoft.com/windows/nanoserver:ltsc2019",
        ] {
            assert!(!images.iter().any(|i| i == absent), "{absent}");
        }
        assert!(!images.iter().any(|i| i.contains("{{")), "{images:?}");
    }

    /// Fixtures whose Windows pod pulls an image of another build on purpose (the build rules
    /// under test) or never starts its container (refused at admission or never scheduled).
    const CROSS_BUILD: &[&str] = &[
        "build-mismatch",          // {{other-windows-tag}}: a build the node cannot run
        "ltsc2022-image",          // nanoserver:ltsc2022 on every build
        "hyperv-isolation",        // nanoserver:1809 under Hyper-V on newer builds
        "mixed-os-pod",            // a Windows container in a Linux pod
        "hugepages",               // never scheduled on Windows
        "memory-over-allocatable", // never scheduled
        "pod-os-mismatch",         // refused by the kubelet before any pull
    ];

    /// Every image the fixtures pull on a Windows build is one the image table has, with a
    /// source; and, but for the fixtures that test the build rules, one with a variant for
    /// that build.
    #[rstest]
    #[case::ws2016(14393)]
    #[case::ws1709(16299)]
    #[case::ws2019(17763)]
    #[case::ws2022(20348)]
    #[case::ws2025(26100)]
    fn every_image_pulled_on_a_build_is_published(#[case] build: u32) {
        let f = Fixtures::load(None).expect("fixtures");
        let pulled: Vec<FixtureImage> = f.images().into_iter().filter(|i| i.build == Some(build)).collect();
        assert!(!pulled.is_empty());
        for i in &pulled {
            let p = images::published(&i.image)
                .unwrap_or_else(|| panic!("{} ({}) is not in the image table", i.image, i.fixture));
            assert!(!p.source.is_empty());
            assert!(
                p.windows.covers(build) || CROSS_BUILD.contains(&i.fixture.as_str()),
                "{} ({}) has no variant for {build}",
                i.image,
                i.fixture
            );
        }
        let agnhost = pulled.iter().any(|i| i.image == images::AGNHOST && i.os == "windows");
        assert_eq!(
            agnhost,
            images::row(build).network == images::NetworkImage::Agnhost,
            "{build}: agnhost is pulled exactly where it publishes the build"
        );
    }

    #[rstest]
    #[case::no_os(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: []}\n",
        "has no OS"
    )]
    #[case::bad_os(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x, annotations: {mixcheck.io/os: beos}}\nspec: {containers: []}\n",
        "expected linux or windows"
    )]
    #[case::wrong_name(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: y, annotations: {mixcheck.io/os: linux}}\nspec: {containers: []}\n",
        "named after its file"
    )]
    #[case::namespace("apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: a}\n", "namespace")]
    fn bad_fixtures_name_the_file(#[case] text: &str, #[case] needle: &str) {
        let err = parse("x", text, "fixtures/x.yaml").expect_err("invalid");
        assert!(err.to_string().starts_with("fixtures/x.yaml"), "{err}");
        assert!(err.to_string().contains(needle), "{err}");
    }

    #[test]
    fn syntax_errors_give_line_and_column() {
        match parse(
            "x",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: [\n",
            "fixtures/x.yaml",
        ) {
            Err(FixtureError::Parse { line, .. }) => assert!(line >= 3),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn stamping_pins_tolerates_and_rewrites() {
        let f = Fixtures::load(None).expect("fixtures");
        let pod = &f.get("netexec-server").expect("fx").pods["windows"];
        let n = node(
            Os::Windows,
            Some(20348),
            vec![Taint {
                key: "os".into(),
                value: Some("windows".into()),
                effect: "NoSchedule".into(),
            }],
        );
        let mut labels = BTreeMap::new();
        labels.insert(RUN_LABEL.to_string(), "abc".to_string());
        let mirror = Registry::parse(Some("mirror.local/k8s"), &[], &[]).expect("registry");
        let p = stamp(pod, "srv-n1", &n, &labels, &mirror);
        assert_eq!(p["metadata"]["name"], "srv-n1");
        assert_eq!(p["metadata"]["labels"][RUN_LABEL], "abc");
        assert_eq!(
            p["spec"]["nodeSelector"]["node.kubernetes.io/windows-build"],
            "10.0.20348"
        );
        assert_eq!(p["spec"]["nodeSelector"]["kubernetes.io/hostname"], "n1");
        assert_eq!(
            p["spec"]["tolerations"][0],
            json!({"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"})
        );
        assert_eq!(
            p["spec"]["containers"][0]["image"],
            "mirror.local/k8s/e2e-test-images/agnhost:2.53"
        );
    }

    /// A cordoned node's and a virtual kubelet's taints are never tolerated (the node's other
    /// taints are).
    #[rstest]
    #[case::cordoned("node.kubernetes.io/unschedulable", None)]
    #[case::virtual_kubelet("virtual-kubelet.io/provider", Some("azure"))]
    fn fixtures_never_tolerate_a_cordoned_or_virtual_node(#[case] key: &str, #[case] value: Option<&str>) {
        let f = Fixtures::load(None).expect("fixtures");
        let pod = &f.get("netexec-server").expect("fx").pods["windows"];
        let taint = |key: &str, value: Option<&str>| Taint {
            key: key.into(),
            value: value.map(str::to_string),
            effect: "NoSchedule".into(),
        };
        let n = node(
            Os::Windows,
            Some(20348),
            vec![taint("os", Some("windows")), taint(key, value)],
        );
        let p = stamp(pod, "srv-n1", &n, &BTreeMap::new(), &Registry::default());
        let keys: Vec<&str> = p["spec"]["tolerations"]
            .as_array()
            .expect("tolerations")
            .iter()
            .filter_map(|t| t["key"].as_str())
            .collect();
        assert!(keys.contains(&"os") && !keys.contains(&key), "{keys:?}");
    }

    /// Nodes of builds agnhost has no variant for get the network fixtures' Server Core pods
    /// (and Windows PowerShell probes); the choice of pod and of runner agree. Windows Server
    /// 2025 was agnhost before: agnhost publishes no ltsc2025 variant (AGN), so it is Server Core
    /// ltsc2025 now (docs/images.md).
    #[rstest]
    #[case::ws2016(Some(14393), "mcr.microsoft.com/windows/servercore:ltsc2016")]
    #[case::ws1709(Some(16299), "mcr.microsoft.com/windows/servercore:1709")]
    #[case::ws2019(Some(17763), "registry.k8s.io/e2e-test-images/agnhost:2.53")]
    #[case::ws2022(Some(20348), "registry.k8s.io/e2e-test-images/agnhost:2.53")]
    #[case::ws2025(Some(26100), "mcr.microsoft.com/windows/servercore:ltsc2025")]
    #[case::unknown_build(None, "registry.k8s.io/e2e-test-images/agnhost:2.53")]
    fn network_fixtures_follow_the_build(#[case] build: Option<u32>, #[case] image: &str) {
        let f = Fixtures::load(None).expect("fixtures");
        let n = node(Os::Windows, build, vec![]);
        for name in ["netexec-server", "netexec-client", "affinity-backend"] {
            let pod = f.get(name).and_then(|fx| fx.pod_for(&n)).expect(name);
            let p = stamp(pod, "x", &n, &BTreeMap::new(), &Registry::default());
            for c in containers(&p) {
                assert_eq!(c["image"], image, "{name} on {build:?}");
                let text = c.to_string();
                assert!(!text.contains("curl"), "{name}: no curl.exe before build 17063");
            }
            assert_eq!(
                agnhost_runs_on(&n),
                image.contains("agnhost"),
                "{name}: the runner must match the pod's tools"
            );
        }
        // Linux nodes are never affected.
        let l = node(Os::Linux, None, vec![]);
        assert!(agnhost_runs_on(&l));
        let pod = f
            .get("netexec-server")
            .and_then(|fx| fx.pod_for(&l))
            .expect("linux pod");
        assert_eq!(pod["metadata"]["annotations"][OS_ANNOTATION], "linux");
    }

    #[test]
    fn host_process_fixtures_are_recognised() {
        let f = Fixtures::load(None).expect("fixtures");
        let n = node(Os::Windows, Some(17763), vec![]);
        let pod = |name: &str| f.get(name).and_then(|fx| fx.pod_for(&n)).cloned().expect(name);
        assert!(needs_host_process(&pod("secret-at-rest")));
        assert!(needs_host_process(&pod("host-probe")));
        assert!(!needs_host_process(&pod("host-network")));
        assert!(!needs_host_process(&pod("netexec-client")));
        let container_level =
            json!({"spec": {"containers": [{"securityContext": {"windowsOptions": {"hostProcess": true}}}]}});
        assert!(needs_host_process(&container_level));
    }

    #[rstest]
    #[case::nanoserver_2016(
        "mcr.microsoft.com/windows/nanoserver:{{windows-tag}}",
        14393,
        "mcr.microsoft.com/windows/nanoserver:sac2016"
    )]
    #[case::servercore_2016(
        "mcr.microsoft.com/windows/servercore:{{windows-tag}}",
        14393,
        "mcr.microsoft.com/windows/servercore:ltsc2016"
    )]
    #[case::nanoserver_1709(
        "mcr.microsoft.com/windows/nanoserver:{{windows-tag}}",
        16299,
        "mcr.microsoft.com/windows/nanoserver:1709"
    )]
    // Nano Server's 2019 tag is 1809 (it was ltsc2019, which MCR never published: MCRBLOG).
    #[case::nanoserver_2019(
        "mcr.microsoft.com/windows/nanoserver:{{windows-tag}}",
        17763,
        "mcr.microsoft.com/windows/nanoserver:1809"
    )]
    #[case::servercore_2019(
        "mcr.microsoft.com/windows/servercore:{{windows-tag}}",
        17763,
        "mcr.microsoft.com/windows/servercore:ltsc2019"
    )]
    #[case::servercore_2025(
        "mcr.microsoft.com/windows/servercore:{{windows-tag}}",
        26100,
        "mcr.microsoft.com/windows/servercore:ltsc2025"
    )]
    #[case::other_on_2019(
        "mcr.microsoft.com/windows/nanoserver:{{other-windows-tag}}",
        17763,
        "mcr.microsoft.com/windows/nanoserver:ltsc2022"
    )]
    // The other build's tag was nanoserver:ltsc2019 (never published): 1809 now.
    #[case::other_on_2025(
        "mcr.microsoft.com/windows/nanoserver:{{other-windows-tag}}",
        26100,
        "mcr.microsoft.com/windows/nanoserver:1809"
    )]
    #[case::other_on_1709(
        "mcr.microsoft.com/windows/nanoserver:{{other-windows-tag}}",
        16299,
        "mcr.microsoft.com/windows/nanoserver:1809"
    )]
    fn windows_tags_per_repository(#[case] image: &str, #[case] build: u32, #[case] stamped: &str) {
        let pod = json!({"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "image": image}]}});
        let p = stamp(
            &pod,
            "x",
            &node(Os::Windows, Some(build), vec![]),
            &BTreeMap::new(),
            &Registry::default(),
        );
        assert_eq!(p["spec"]["containers"][0]["image"], stamped);
    }

    #[rstest]
    #[case::not_a_range("x: \"17763\"", "must start with")]
    #[case::not_a_string("x: 17763", "must be a string")]
    fn bad_build_ranges_are_refused(#[case] annotation: &str, #[case] needle: &str) {
        let text = format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: x, annotations: {{mixcheck.io/os: windows, mixcheck.io/windows-builds{}}}}}\nspec: {{containers: []}}\n",
            annotation.trim_start_matches('x')
        );
        let err = parse("x", &text, "fixtures/x.yaml").expect_err("invalid");
        assert!(err.to_string().contains(needle), "{err}");
        let linux = "apiVersion: v1\nkind: Pod\nmetadata: {name: x, annotations: {mixcheck.io/os: linux, mixcheck.io/windows-builds: \"<17763\"}}\nspec: {containers: []}\n";
        let err = parse("x", linux, "fixtures/x.yaml").expect_err("linux");
        assert!(err.to_string().contains("Windows pods only"), "{err}");
    }

    /// Every pod the run stamps names the run's pull secrets, on each OS, and keeps the ones
    /// its fixture names; its images take the run's mirrors.
    #[rstest]
    #[case::linux_server("netexec-server", Os::Linux, None)]
    #[case::windows_server("netexec-server", Os::Windows, Some(20348))]
    #[case::windows_2019_client("netexec-client", Os::Windows, Some(17763))]
    #[case::host_probe("host-probe", Os::Windows, Some(20348))]
    fn stamped_pods_name_the_pull_secrets_and_take_the_mirrors(
        #[case] fixture: &str,
        #[case] os: Os,
        #[case] build: Option<u32>,
    ) {
        let f = Fixtures::load(None).expect("fixtures");
        let n = node(os, build, vec![]);
        let registry = Registry::parse(
            None,
            &[
                "registry.k8s.io=harbor.corp/k8s".into(),
                "mcr.microsoft.com=harbor.corp/mcr".into(),
            ],
            &["default/regcred".into(), "local".into()],
        )
        .expect("registry");
        let mut pod = f.get(fixture).and_then(|fx| fx.pod_for(&n)).cloned().expect(fixture);
        pod["spec"]["imagePullSecrets"] = json!([{"name": "own"}, {"name": "local"}]);
        let p = stamp(&pod, "x", &n, &BTreeMap::new(), &registry);
        assert_eq!(
            p["spec"]["imagePullSecrets"],
            json!([{"name": "own"}, {"name": "local"}, {"name": "regcred"}])
        );
        for c in containers(&p) {
            let image = c["image"].as_str().expect("image");
            assert!(image.starts_with("harbor.corp/"), "{fixture}: {image}");
        }
        let plain = stamp(&pod, "x", &n, &BTreeMap::new(), &Registry::default());
        assert_eq!(
            plain["spec"]["imagePullSecrets"],
            json!([{"name": "own"}, {"name": "local"}])
        );
    }
}
