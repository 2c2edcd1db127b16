//! A group's DaemonSet: one pod per node of the group, pinned by node selector and node-name
//! affinity, tolerating every taint, one regular container per image — as the e2e framework's
//! own pre-puller pulls its images (kubernetes `test/e2e/e2e.go`, `prepullImages`: a DaemonSet
//! per image, awaited on every node), with the images of a group in one pod.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::groups::Group;

/// The label naming the group a pre-pull object belongs to.
pub const GROUP_LABEL: &str = "mixcheck.io/prepull";

/// The labels of a pre-pull's objects: mixcheck's, the pre-pull's id, and the group.
pub fn labels(id: &str, group: Option<&str>) -> BTreeMap<String, String> {
    let (key, value) = crate::cluster::fixture::MANAGED_BY;
    let mut l = BTreeMap::from([
        (key.to_string(), value.to_string()),
        (crate::cluster::fixture::RUN_LABEL.to_string(), id.to_string()),
    ]);
    if let Some(g) = group {
        l.insert(GROUP_LABEL.to_string(), g.to_string());
    }
    l
}

/// The DaemonSet's name for a group.
pub fn name(id: &str, group: &str) -> String {
    format!("prepull-{group}-{id}")
}

/// A container name (a DNS label) for the `index`th image: `c0-agnhost-2-53`.
pub fn container_name(index: usize, image: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or(image);
    let last = last.split('@').next().unwrap_or(last);
    let mut slug: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while slug.contains("--") {
        slug = slug.replace("--", "-");
    }
    let mut out = format!("c{index}-{}", slug.trim_matches('-'));
    out.truncate(63);
    out.trim_end_matches('-').to_string()
}

/// What a container of `image` runs: agnhost its `pause` subcommand (it stays up, doing
/// nothing); any other image its default entrypoint — one that exits only restarts, and the
/// image stays pulled either way.
fn args_for(image: &str) -> Option<Value> {
    let repository = image.split(['@']).next().unwrap_or(image);
    let path = match repository.rsplit_once(':') {
        Some((p, tag)) if !tag.contains('/') => p,
        _ => repository,
    };
    path.ends_with("/agnhost").then(|| json!(["pause"]))
}

/// The containers of a group's pod, one per image, by name.
pub fn containers(group: &Group) -> Vec<(String, String)> {
    group
        .images
        .iter()
        .enumerate()
        .map(|(i, image)| (container_name(i, image), image.clone()))
        .collect()
}

/// The DaemonSet for `group` in `namespace`.
pub fn manifest(id: &str, namespace: &str, group: &Group) -> Value {
    let labels = labels(id, Some(&group.name));
    let containers: Vec<Value> = containers(group)
        .into_iter()
        .map(|(name, image)| {
            let mut c = json!({"name": name, "image": image, "imagePullPolicy": "IfNotPresent"});
            if let Some(args) = args_for(&image) {
                c["args"] = args;
            }
            c
        })
        .collect();
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name(id, &group.name), "namespace": namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": group.node_selector,
                    // Exactly the group's schedulable nodes: the DaemonSet controller would also
                    // place pods on cordoned and not-Ready nodes (it tolerates their taints).
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": group.nodes}
                        ]}]
                    }}},
                    // Every taint (os=windows:NoSchedule, the control plane's, a pool's own).
                    "tolerations": [{"operator": "Exists"}],
                    "terminationGracePeriodSeconds": 1,
                    "automountServiceAccountToken": false,
                    "enableServiceLinks": false,
                    "containers": containers,
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixcheck_reports::Os;
    use rstest::rstest;

    fn group() -> Group {
        Group {
            name: "windows-20348".into(),
            os: Os::Windows,
            arch: "amd64".into(),
            build: Some(20348),
            pulls_as: Some(20348),
            nodes: vec!["win2022-1".into(), "win2022-2".into()],
            node_selector: BTreeMap::from([
                ("kubernetes.io/os".to_string(), "windows".to_string()),
                ("node.kubernetes.io/windows-build".to_string(), "10.0.20348".to_string()),
            ]),
            images: vec![
                "registry.k8s.io/e2e-test-images/agnhost:2.53".into(),
                "mcr.microsoft.com/windows/nanoserver:ltsc2022".into(),
            ],
            left_out: Vec::new(),
        }
    }

    #[test]
    fn the_daemonset_pins_the_groups_nodes_tolerates_every_taint_and_pulls_each_image() {
        let ds = manifest("abc123", "ns", &group());
        assert_eq!(ds["metadata"]["name"], "prepull-windows-20348-abc123");
        assert_eq!(ds["metadata"]["labels"]["app.kubernetes.io/managed-by"], "mixcheck");
        let spec = &ds["spec"]["template"]["spec"];
        assert_eq!(spec["nodeSelector"]["node.kubernetes.io/windows-build"], "10.0.20348");
        assert_eq!(spec["tolerations"], json!([{"operator": "Exists"}]));
        assert_eq!(
            spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                ["matchFields"][0]["values"],
            json!(["win2022-1", "win2022-2"])
        );
        let containers = spec["containers"].as_array().expect("containers");
        assert_eq!(containers.len(), 2);
        assert_eq!(containers[0]["name"], "c0-agnhost-2-53");
        assert_eq!(containers[0]["args"], json!(["pause"]));
        assert_eq!(containers[1]["name"], "c1-nanoserver-ltsc2022");
        assert!(containers[1].get("args").is_none(), "its default entrypoint");
        assert!(containers.iter().all(|c| c["imagePullPolicy"] == "IfNotPresent"));
        assert_eq!(
            ds["spec"]["selector"]["matchLabels"],
            ds["spec"]["template"]["metadata"]["labels"]
        );
        // A valid DaemonSet as the API types read it.
        let _: k8s_openapi::api::apps::v1::DaemonSet = serde_json::from_value(ds).expect("a DaemonSet");
    }

    #[rstest]
    #[case(0, "registry.k8s.io/e2e-test-images/agnhost:2.53", "c0-agnhost-2-53")]
    #[case(3, "mirror.example.com:5000/k8s/pause:3.10.2", "c3-pause-3-10-2")]
    #[case(12, "r/x@sha256:abcd", "c12-x")]
    #[case(
        1,
        "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0",
        "c1-windows-host-process-containers-base-image-v1-0-0"
    )]
    fn container_names_are_dns_labels(#[case] i: usize, #[case] image: &str, #[case] name: &str) {
        let got = container_name(i, image);
        assert_eq!(got, name);
        assert!(got.len() <= 63);
    }

    #[rstest]
    #[case("registry.k8s.io/e2e-test-images/agnhost:2.53", true)]
    #[case("mirror.example.com:5000/e2e-test-images/agnhost:2.53", true)]
    #[case("registry.k8s.io/pause:3.10", false)]
    #[case("mcr.microsoft.com/windows/nanoserver:ltsc2022", false)]
    fn only_agnhost_is_told_to_pause(#[case] image: &str, #[case] pauses: bool) {
        assert_eq!(args_for(image).is_some(), pauses);
    }
}
