//! The pull groups: the cluster's nodes as a pre-pull sees them (skipping those nothing new can
//! run on), grouped by OS and architecture and, for Windows, by build — each group with the
//! fixture images a node of it pulls and the node selector its DaemonSet is pinned with.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use mixcheck_reports::Os;
use serde::Serialize;

use crate::cluster::facts::build_of;
use crate::cluster::fixture::FixtureImage;
use crate::cluster::images::{self, Builds};
use crate::cluster::registry::Mirrors;

/// The OS label (`kubernetes.io/os`; `beta.kubernetes.io/os` before Kubernetes 1.14).
const OS_LABELS: [&str; 2] = ["kubernetes.io/os", "beta.kubernetes.io/os"];
const ARCH_LABELS: [&str; 2] = ["kubernetes.io/arch", "beta.kubernetes.io/arch"];
/// The Windows build label the kubelet sets from 1.17 (`10.0.20348`).
pub const BUILD_LABEL: &str = "node.kubernetes.io/windows-build";

/// One node as a pre-pull sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullNode {
    pub name: String,
    pub os: Os,
    pub arch: String,
    /// The Windows build (label, else kernel version).
    pub build: Option<u32>,
    /// The labels the node selector may use.
    pub labels: BTreeMap<String, String>,
    /// Why nothing is pulled there.
    pub skipped: Option<String>,
}

impl PullNode {
    /// The node as its object shows it.
    pub fn of(n: &Node) -> Self {
        let labels = n.metadata.labels.clone().unwrap_or_default();
        let status = n.status.clone().unwrap_or_default();
        let info = status.node_info.unwrap_or_default();
        let label = |keys: &[&str]| keys.iter().find_map(|k| labels.get(*k).cloned());
        let os = match label(&OS_LABELS).unwrap_or(info.operating_system).as_str() {
            "windows" => Os::Windows,
            _ => Os::Linux,
        };
        let arch = label(&ARCH_LABELS).unwrap_or(info.architecture);
        let build = match os {
            Os::Windows => labels
                .get(BUILD_LABEL)
                .and_then(|b| build_of(b))
                .or_else(|| build_of(&info.kernel_version)),
            Os::Linux => None,
        };
        let ready = status
            .conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        let taints = n.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
        let skipped = if n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
            Some("cordoned (spec.unschedulable)".to_string())
        } else if !ready {
            Some("not Ready".to_string())
        } else if labels.get("type").is_some_and(|t| t == "virtual-kubelet")
            || taints.iter().any(|t| t.key == "virtual-kubelet.io/provider")
        {
            Some("a virtual kubelet: no node of its own to pull onto".to_string())
        } else if os == Os::Windows && build.is_none() {
            Some(format!(
                "Windows build unknown (no {BUILD_LABEL} label; kernel version {:?})",
                info.kernel_version
            ))
        } else {
            None
        };
        Self {
            name: n.metadata.name.clone().unwrap_or_default(),
            os,
            arch,
            build,
            labels,
            skipped,
        }
    }
}

/// An image a group's nodes do not pull, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    pub image: String,
    pub why: String,
}

/// The nodes one DaemonSet pulls onto, and what they pull.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    /// `linux-amd64`, `windows-20348` (`-arm64` after a Windows build on arm64).
    pub name: String,
    #[serde(serialize_with = "os_name")]
    pub os: Os,
    pub arch: String,
    /// The Windows build of its nodes.
    pub build: Option<u32>,
    /// The documented build whose images it pulls (a build between documented ones pulls as
    /// the one before it).
    pub pulls_as: Option<u32>,
    pub nodes: Vec<String>,
    /// The node selector its DaemonSet is pinned with.
    pub node_selector: BTreeMap<String, String>,
    /// The images to pull, as pulled (rewritten for `--image-registry`).
    pub images: Vec<String>,
    pub left_out: Vec<LeftOut>,
}

fn os_name<S: serde::Serializer>(os: &Os, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match os {
        Os::Linux => "linux",
        Os::Windows => "windows",
    })
}

/// The groups of the nodes that are not skipped, in name order: Linux per architecture,
/// Windows per build (and architecture), each with the fixture images its nodes pull.
pub fn plan(nodes: &[PullNode], fixture_images: &[FixtureImage], mirrors: &Mirrors) -> Vec<Group> {
    let mut by_key: BTreeMap<String, Vec<&PullNode>> = BTreeMap::new();
    for n in nodes.iter().filter(|n| n.skipped.is_none()) {
        let name = match (n.os, n.build) {
            (Os::Windows, Some(b)) if n.arch == "amd64" || n.arch.is_empty() => format!("windows-{b}"),
            (Os::Windows, b) => format!("windows-{}-{}", b.unwrap_or_default(), n.arch),
            (Os::Linux, _) if n.arch.is_empty() => "linux".to_string(),
            (Os::Linux, _) => format!("linux-{}", n.arch),
        };
        by_key.entry(name).or_default().push(n);
    }
    by_key
        .into_iter()
        .filter_map(|(name, members)| {
            let first = members.first()?;
            let pulls_as = first.build.map(|b| images::row(b).build);
            let (images, left_out) = images_for(first.os, pulls_as, fixture_images, mirrors);
            Some(Group {
                name,
                os: first.os,
                arch: first.arch.clone(),
                build: first.build,
                pulls_as,
                nodes: members.iter().map(|n| n.name.clone()).collect(),
                node_selector: selector(&members),
                images,
                left_out,
            })
        })
        .collect()
}

/// The labels every member carries with one value, among the OS, architecture and Windows
/// build labels (the node-name affinity pins the DaemonSet exactly; the selector says which
/// kind of node it is for).
fn selector(members: &[&PullNode]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let shared = |key: &str| -> Option<String> {
        let first = members.first()?.labels.get(key)?;
        members
            .iter()
            .all(|n| n.labels.get(key) == Some(first))
            .then(|| first.clone())
    };
    for keys in [&OS_LABELS[..], &ARCH_LABELS[..], &[BUILD_LABEL][..]] {
        if let Some((key, value)) = keys.iter().find_map(|k| shared(k).map(|v| (*k, v))) {
            out.insert(key.to_string(), value);
        }
    }
    out
}

/// The images a node of `os` (Windows: pulling as `pulls_as`) pulls, as `mixcheck images
/// --build` lists them, rewritten for the `mirrors`; and those left out — a Windows image with no
/// variant such a node can run (a fixture that pulls it on purpose expects the pull to fail).
pub fn images_for(
    os: Os,
    pulls_as: Option<u32>,
    fixture_images: &[FixtureImage],
    mirrors: &Mirrors,
) -> (Vec<String>, Vec<LeftOut>) {
    let mut chosen: Vec<&str> = fixture_images
        .iter()
        .filter(|i| match os {
            Os::Linux => i.os == "linux" && i.build.is_none(),
            Os::Windows => i.os == "windows" && pulls_as.is_some() && i.build == pulls_as,
        })
        .map(|i| i.image.as_str())
        .collect();
    chosen.sort_unstable();
    chosen.dedup();
    let mut pulled = Vec::new();
    let mut left_out = Vec::new();
    for image in chosen {
        match (os, pulls_as, images::published(image)) {
            (Os::Windows, Some(host), Some(p)) if !runs_on(p.windows, host) => left_out.push(LeftOut {
                image: image.to_string(),
                why: format!(
                    "{}, none of which build {host} runs with process isolation; the fixtures that pull it expect the pull or start to fail",
                    variants(p.windows)
                ),
            }),
            _ => pulled.push(mirrors.rewrite(image)),
        }
    }
    (pulled, left_out)
}

/// Whether a host of `host` build runs one of the variants with process isolation
/// (VER-BUILD-MATCH, docs/images.md: up to 2019 only the host's own build; from 2022 the
/// builds from 2022 up to the host's).
fn runs_on(builds: Builds, host: u32) -> bool {
    match builds {
        Builds::Any => true,
        Builds::Only(list) => list
            .iter()
            .any(|&b| b == host || (host >= 20348 && (20348..=host).contains(&b))),
    }
}

fn variants(builds: Builds) -> String {
    match builds {
        Builds::Any => "published for any build".into(),
        Builds::Only(list) => {
            let names: Vec<String> = list.iter().map(u32::to_string).collect();
            format!("published for build {} only", names.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::fixture::Fixtures;
    use rstest::rstest;
    use serde_json::json;

    fn node(name: &str, os: &str, kernel: &str, extra: serde_json::Value) -> Node {
        let mut labels = json!({"kubernetes.io/os": os, "kubernetes.io/arch": "amd64"});
        if os == "windows" {
            labels[BUILD_LABEL] = json!(kernel.split('.').take(3).collect::<Vec<_>>().join("."));
        }
        let mut v = json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {},
            "status": {
                "nodeInfo": {"operatingSystem": os, "architecture": "amd64", "kernelVersion": kernel,
                    "machineID": "", "systemUUID": "", "bootID": "", "containerRuntimeVersion": "",
                    "kubeletVersion": "v1.32.3", "kubeProxyVersion": "", "osImage": ""},
                "conditions": [{"type": "Ready", "status": "True"}],
            }
        });
        merge(&mut v, extra);
        serde_json::from_value(v).expect("node")
    }

    fn merge(into: &mut serde_json::Value, from: serde_json::Value) {
        match (into, from) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (slot, v) => *slot = v,
        }
    }

    fn images() -> Vec<FixtureImage> {
        Fixtures::load(None).expect("fixtures").images()
    }

    fn nodes(list: &[Node]) -> Vec<PullNode> {
        list.iter().map(PullNode::of).collect()
    }

    #[test]
    fn the_default_topology_gives_one_group_per_os_and_build() {
        let ns = nodes(&[
            node("control-plane", "linux", "6.8.0", json!({})),
            node("linux-1", "linux", "6.8.0", json!({})),
            node("win2019-1", "windows", "10.0.17763.6414", json!({})),
            node("win2022-1", "windows", "10.0.20348.2762", json!({})),
            node("win2022-2", "windows", "10.0.20348.2700", json!({})),
        ]);
        let groups = plan(&ns, &images(), &Mirrors::default());
        let names: Vec<(&str, Vec<&str>)> = groups
            .iter()
            .map(|g| (g.name.as_str(), g.nodes.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            names,
            [
                ("linux-amd64", vec!["control-plane", "linux-1"]),
                ("windows-17763", vec!["win2019-1"]),
                ("windows-20348", vec!["win2022-1", "win2022-2"]),
            ]
        );
        let ws2022 = &groups[2];
        assert_eq!(
            ws2022.node_selector,
            BTreeMap::from([
                ("kubernetes.io/arch".to_string(), "amd64".to_string()),
                ("kubernetes.io/os".to_string(), "windows".to_string()),
                (BUILD_LABEL.to_string(), "10.0.20348".to_string()),
            ])
        );
        assert!(
            ws2022
                .images
                .contains(&"mcr.microsoft.com/windows/nanoserver:ltsc2022".to_string())
        );
        assert!(ws2022.images.contains(&crate::cluster::images::AGNHOST.to_string()));
        // 1809 has no variant a 2022 host runs: the build-mismatch fixture expects it to fail.
        assert!(ws2022.left_out.iter().any(|l| l.image.ends_with("nanoserver:1809")));
        assert!(!ws2022.images.iter().any(|i| i.ends_with("nanoserver:1809")));
        let linux = &groups[0];
        assert!(
            linux.images.iter().all(|i| !i.contains("/windows/")),
            "{:?}",
            linux.images
        );
        assert!(linux.images.contains(&crate::cluster::images::AGNHOST.to_string()));
    }

    #[rstest]
    #[case::cordoned(json!({"spec": {"unschedulable": true}}), "cordoned")]
    #[case::not_ready(json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}), "not Ready")]
    #[case::virtual_kubelet(json!({"metadata": {"labels": {"type": "virtual-kubelet"}}}), "virtual kubelet")]
    fn nodes_nothing_new_runs_on_are_skipped_saying_why(#[case] extra: serde_json::Value, #[case] why: &str) {
        let ns = nodes(&[
            node("linux-1", "linux", "6.8.0", json!({})),
            node("linux-2", "linux", "6.8.0", extra),
        ]);
        assert!(
            ns[1].skipped.as_deref().is_some_and(|s| s.contains(why)),
            "{:?}",
            ns[1].skipped
        );
        let groups = plan(&ns, &images(), &Mirrors::default());
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].nodes, ["linux-1"]);
    }

    #[rstest]
    #[case::ws2016(14393, "mcr.microsoft.com/windows/servercore:ltsc2016", "nanoserver:1809")]
    #[case::ws1709(16299, "mcr.microsoft.com/windows/nanoserver:1709", "nanoserver:1809")]
    #[case::ws2019(17763, "mcr.microsoft.com/windows/nanoserver:1809", "nanoserver:ltsc2022")]
    #[case::ws2022(20348, "mcr.microsoft.com/windows/nanoserver:ltsc2022", "nanoserver:1809")]
    #[case::ws2025(26100, "mcr.microsoft.com/windows/servercore:ltsc2025", "nanoserver:1809")]
    #[case::sac1903(18362, "mcr.microsoft.com/windows/nanoserver:1809", "nanoserver:ltsc2022")]
    fn each_build_pulls_its_own_images_and_leaves_out_what_it_cannot_run(
        #[case] build: u32,
        #[case] pulled: &str,
        #[case] left: &str,
    ) {
        let kernel = format!("10.0.{build}.1");
        let ns = nodes(&[node("w", "windows", &kernel, json!({}))]);
        let groups = plan(&ns, &images(), &Mirrors::default());
        let g = &groups[0];
        assert_eq!(g.name, format!("windows-{build}"));
        assert_eq!(g.pulls_as, Some(images::row(build).build));
        assert!(g.images.iter().any(|i| i == pulled), "{build}: {:?}", g.images);
        assert!(
            g.left_out.iter().any(|l| l.image.ends_with(left)),
            "{build}: {:?}",
            g.left_out
        );
        assert!(!g.images.iter().any(|i| i.ends_with(left)), "{build}: {:?}", g.images);
        // Every image pulled has a variant the host runs, where the table knows the image.
        for i in &g.images {
            if let Some(p) = images::published(i) {
                assert!(runs_on(p.windows, images::row(build).build), "{build}: {i}");
            }
        }
    }

    #[test]
    fn a_2025_host_pulls_the_2022_nano_server_it_runs() {
        let ns = nodes(&[node("w", "windows", "10.0.26100.1", json!({}))]);
        let g = &plan(&ns, &images(), &Mirrors::default())[0];
        assert!(
            g.images.iter().any(|i| i.ends_with("nanoserver:ltsc2022")),
            "{:?}",
            g.images
        );
    }

    #[test]
    fn a_mirror_rewrites_every_image_pulled() {
        let ns = nodes(&[
            node("l", "linux", "6.8.0", json!({})),
            node("w", "windows", "10.0.20348.1", json!({})),
        ]);
        for g in plan(
            &ns,
            &images(),
            &Mirrors::parse(Some("mirror.example.com/k8s"), &[]).expect("mirror"),
        ) {
            assert!(!g.images.is_empty());
            for i in &g.images {
                assert!(i.starts_with("mirror.example.com/k8s/"), "{i}");
            }
        }
    }

    #[test]
    fn nodes_without_a_build_label_group_by_kernel_and_the_selector_leaves_it_out() {
        let mut n = node("w", "windows", "10.0.17763.6414", json!({}));
        if let Some(l) = n.metadata.labels.as_mut() {
            l.remove(BUILD_LABEL);
        }
        let ns = nodes(&[n]);
        let g = &plan(&ns, &images(), &Mirrors::default())[0];
        assert_eq!(g.name, "windows-17763");
        assert!(!g.node_selector.contains_key(BUILD_LABEL));
        assert_eq!(g.node_selector["kubernetes.io/os"], "windows");
    }

    #[test]
    fn a_windows_node_of_unknown_build_is_skipped() {
        let mut n = node("w", "windows", "garbage", json!({}));
        if let Some(l) = n.metadata.labels.as_mut() {
            l.remove(BUILD_LABEL);
        }
        let ns = nodes(&[n]);
        assert!(ns[0].skipped.as_deref().is_some_and(|s| s.contains("build unknown")));
        assert!(plan(&ns, &images(), &Mirrors::default()).is_empty());
    }

    #[rstest]
    #[case::own_build(&[17763], 17763, true)]
    #[case::older_on_2019(&[14393], 17763, false)]
    #[case::newer_on_2019(&[20348], 17763, false)]
    #[case::ltsc2022_on_2025(&[20348], 26100, true)]
    #[case::ws2019_on_2022(&[17763], 20348, false)]
    #[case::ws2025_on_2022(&[26100], 20348, false)]
    fn process_isolation_runs_a_build_up_to_the_hosts_from_2022(
        #[case] list: &'static [u32],
        #[case] host: u32,
        #[case] runs: bool,
    ) {
        assert_eq!(runs_on(Builds::Only(list), host), runs);
        assert!(runs_on(Builds::Any, host));
    }
}
