//! API defaulting: the fields the apiserver fills in on create and update (pod spec defaults,
//! QoS class, namespace phase, Secret `stringData`, …).

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::store::resources::ResourceType;

/// Defaults applied once, when an object is created (then [`on_write`] too).
pub fn on_create(rt: &ResourceType, v: &mut Value) {
    let kind = rt.kind;
    let Some(obj) = v.as_object_mut() else { return };
    match kind {
        "Pod" => {
            let qos = obj.get("spec").map(qos_class).unwrap_or("BestEffort");
            obj.insert("status".into(), json!({"phase": "Pending", "qosClass": qos}));
        }
        "Namespace" => {
            let name = obj
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if let Some(labels) = object_at(obj, &["metadata", "labels"]) {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
            if let Some(spec) = object_at(obj, &["spec"]) {
                spec.insert("finalizers".into(), json!(["kubernetes"]));
            }
            obj.insert("status".into(), json!({"phase": "Active"}));
        }
        "Deployment" | "ReplicaSet" | "DaemonSet" | "Job" | "CronJob" => {
            obj.insert("status".into(), json!({}));
        }
        // The quota controller fills `status.hard` from the spec and counts `used`
        // (https://kubernetes.io/docs/concepts/policy/resource-quotas/); usage starts at zero.
        "ResourceQuota" => {
            let hard = obj
                .get("spec")
                .and_then(|s| s.get("hard"))
                .cloned()
                .unwrap_or_else(|| json!({}));
            let used: Map<String, Value> = hard
                .as_object()
                .map(|h| h.keys().map(|k| (k.clone(), json!("0"))).collect())
                .unwrap_or_default();
            obj.insert("status".into(), json!({"hard": hard, "used": used}));
        }
        "Service" => {
            obj.insert("status".into(), json!({"loadBalancer": {}}));
        }
        _ => {}
    }
    on_write(rt, v);
}

/// Defaults applied on every create and update of the main resource.
pub fn on_write(rt: &ResourceType, v: &mut Value) {
    let Some(obj) = v.as_object_mut() else { return };
    match rt.kind {
        "Pod" => {
            if let Some(spec) = object_at(obj, &["spec"]) {
                pod_spec(spec);
            }
        }
        "Deployment" => {
            if let Some(spec) = object_at(obj, &["spec"]) {
                or_insert(spec, "replicas", json!(1));
                or_insert(spec, "revisionHistoryLimit", json!(10));
                or_insert(spec, "progressDeadlineSeconds", json!(600));
                or_insert(
                    spec,
                    "strategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
                );
            }
            template_spec(obj);
        }
        "ReplicaSet" => {
            if let Some(spec) = object_at(obj, &["spec"]) {
                or_insert(spec, "replicas", json!(1));
            }
            template_spec(obj);
        }
        "DaemonSet" => {
            if let Some(spec) = object_at(obj, &["spec"]) {
                or_insert(spec, "revisionHistoryLimit", json!(10));
                or_insert(
                    spec,
                    "updateStrategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
                );
            }
            template_spec(obj);
        }
        "Job" => {
            if let Some(spec) = object_at(obj, &["spec"]) {
                if !spec.contains_key("completions") && !spec.contains_key("parallelism") {
                    spec.insert("completions".into(), json!(1));
                }
                or_insert(spec, "parallelism", json!(1));
                or_insert(spec, "backoffLimit", json!(6));
                or_insert(spec, "completionMode", json!("NonIndexed"));
                or_insert(spec, "suspend", json!(false));
                let replacement = if spec.contains_key("podFailurePolicy") {
                    "Failed"
                } else {
                    "TerminatingOrFailed"
                };
                or_insert(spec, "podReplacementPolicy", json!(replacement));
            }
            template_spec(obj);
        }
        "Service" => {
            if let Some(spec) = object_at(obj, &["spec"]) {
                or_insert(spec, "type", json!("ClusterIP"));
                or_insert(spec, "sessionAffinity", json!("None"));
                if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                    for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                        or_insert(port, "protocol", json!("TCP"));
                        if let Some(p) = port.get("port").cloned() {
                            or_insert(port, "targetPort", p);
                        }
                    }
                }
            }
        }
        // CronJob defaults (pkg/apis/batch/v1/defaults.go, SetDefaults_CronJob).
        "CronJob" => {
            if let Some(spec) = object_at(obj, &["spec"]) {
                or_insert(spec, "concurrencyPolicy", json!("Allow"));
                or_insert(spec, "suspend", json!(false));
                or_insert(spec, "successfulJobsHistoryLimit", json!(3));
                or_insert(spec, "failedJobsHistoryLimit", json!(1));
            }
            if let Some(spec) = object_at(obj, &["spec", "jobTemplate", "spec", "template", "spec"]) {
                pod_spec(spec);
            }
        }
        // PriorityClass defaults (pkg/apis/scheduling/v1/defaults.go).
        "PriorityClass" => or_insert(obj, "preemptionPolicy", json!("PreemptLowerPriority")),
        "Secret" => secret_string_data(obj),
        "RoleBinding" | "ClusterRoleBinding" => crate::store::rbac::defaults(rt, obj),
        _ => {}
    }
}

/// Defaults that need the object's final name (a generated one included): a Job's selector
/// and the labels its pods get (`batch.kubernetes.io/controller-uid`, `…/job-name` and their
/// legacy forms), unless the Job chose its selector itself (`manualSelector`).
pub fn on_named(rt: &ResourceType, v: &mut Value) {
    if rt.kind != "Job" || v.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let uid = v
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(obj) = v.as_object_mut() else { return };
    if let Some(spec) = object_at(obj, &["spec"]) {
        spec.insert(
            "selector".into(),
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
        );
    }
    if let Some(labels) = object_at(obj, &["spec", "template", "metadata", "labels"]) {
        labels.insert("batch.kubernetes.io/controller-uid".into(), json!(uid));
        labels.insert("batch.kubernetes.io/job-name".into(), json!(name));
        labels.insert("controller-uid".into(), json!(uid));
        labels.insert("job-name".into(), json!(name));
    }
}

/// Secret `stringData` is write-only: it is merged into `data` (base64) and dropped.
fn secret_string_data(obj: &mut Map<String, Value>) {
    or_insert(obj, "type", json!("Opaque"));
    let Some(Value::Object(string_data)) = obj.remove("stringData") else {
        return;
    };
    let Some(data) = object_at(obj, &["data"]) else {
        return;
    };
    for (k, v) in string_data {
        let text = match v {
            Value::String(s) => s,
            other => other.to_string(),
        };
        data.insert(k, json!(base64::engine::general_purpose::STANDARD.encode(text)));
    }
}

fn template_spec(obj: &mut Map<String, Value>) {
    if let Some(spec) = object_at(obj, &["spec", "template", "spec"]) {
        pod_spec(spec);
    }
}

fn pod_spec(spec: &mut Map<String, Value>) {
    or_insert(spec, "restartPolicy", json!("Always"));
    or_insert(spec, "terminationGracePeriodSeconds", json!(30));
    or_insert(spec, "dnsPolicy", json!("ClusterFirst"));
    or_insert(spec, "schedulerName", json!("default-scheduler"));
    or_insert(spec, "securityContext", json!({}));
    or_insert(spec, "enableServiceLinks", json!(true));
    or_insert(spec, "serviceAccountName", json!("default"));
    if let Some(sa) = spec.get("serviceAccountName").cloned() {
        or_insert(spec, "serviceAccount", sa);
    }
    for list in ["initContainers", "containers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                container(c);
            }
        }
    }
}

fn container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let pull = if image_tag(image).is_none_or(|t| t == "latest") {
        "Always"
    } else {
        "IfNotPresent"
    };
    or_insert(c, "imagePullPolicy", json!(pull));
    or_insert(c, "terminationMessagePath", json!("/dev/termination-log"));
    or_insert(c, "terminationMessagePolicy", json!("File"));
    or_insert(c, "resources", json!({}));
    // A container with limits but no requests gets requests equal to its limits.
    if let Some(res) = c.get_mut("resources").and_then(Value::as_object_mut)
        && let Some(limits) = res.get("limits").and_then(Value::as_object).cloned()
    {
        let requests = res.entry("requests").or_insert_with(|| json!({}));
        if let Some(requests) = requests.as_object_mut() {
            for (k, v) in limits {
                requests.entry(k).or_insert(v);
            }
        }
    }
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            or_insert(port, "protocol", json!("TCP"));
        }
    }
}

/// The tag of an image reference (`None` for a digest-only or untagged reference).
pub fn image_tag(image: &str) -> Option<&str> {
    if image.contains('@') {
        return Some("");
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split_once(':').map(|(_, tag)| tag)
}

/// The pod's QoS class from its containers' requests and limits.
pub fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|l| spec.get(*l).and_then(Value::as_array))
        .flatten()
        .collect();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        let limits = c.pointer("/resources/limits").and_then(Value::as_object);
        let requests = c.pointer("/resources/requests").and_then(Value::as_object);
        let nonzero = |m: Option<&Map<String, Value>>| {
            m.is_some_and(|m| {
                m.iter()
                    .any(|(k, v)| (k == "cpu" || k == "memory") && v.as_str() != Some("0"))
            })
        };
        any |= nonzero(limits) || nonzero(requests);
        for res in ["cpu", "memory"] {
            let limit = limits.and_then(|l| l.get(res));
            let request = requests.and_then(|r| r.get(res)).or(limit);
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

fn or_insert(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.into(), value);
    }
}

/// The object at `path`, created as an empty object where missing (or not an object).
fn object_at<'a>(map: &'a mut Map<String, Value>, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let (first, rest) = path.split_first()?;
    let entry = map.entry(*first).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    let inner = entry.as_object_mut()?;
    if rest.is_empty() {
        Some(inner)
    } else {
        object_at(inner, rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::resources;
    use rstest::rstest;

    #[rstest]
    #[case(json!({"containers":[{"name":"a","image":"x"}]}), "BestEffort")]
    #[case(json!({"containers":[{"name":"a","image":"x","resources":{"limits":{"cpu":"1","memory":"1Gi"}}}]}), "Guaranteed")]
    #[case(json!({"containers":[{"name":"a","image":"x","resources":{"requests":{"cpu":"100m"}}}]}), "Burstable")]
    #[case(json!({"containers":[{"name":"a","image":"x","resources":{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"cpu":"2","memory":"1Gi"}}}]}), "Burstable")]
    fn qos(#[case] spec: Value, #[case] expected: &str) {
        assert_eq!(qos_class(&spec), expected);
    }

    #[rstest]
    #[case("nginx", "Always")]
    #[case("nginx:latest", "Always")]
    #[case("registry.k8s.io/e2e-test-images/agnhost:2.52", "IfNotPresent")]
    #[case("localhost:5000/app", "Always")]
    #[case("busybox@sha256:abc", "IfNotPresent")]
    fn pull_policy(#[case] image: &str, #[case] expected: &str) {
        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": image}]}});
        on_create(resources::core("pods"), &mut pod);
        assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], expected);
    }

    #[test]
    fn pod_defaults_and_limits_become_requests() {
        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "a:1",
            "resources": {"limits": {"memory": "200Mi"}}, "ports": [{"containerPort": 80}]}]}});
        on_create(resources::core("pods"), &mut pod);
        assert_eq!(pod["spec"]["restartPolicy"], "Always");
        assert_eq!(pod["spec"]["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["spec"]["containers"][0]["resources"]["requests"]["memory"], "200Mi");
        assert_eq!(pod["spec"]["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(pod["status"]["phase"], "Pending");
    }

    #[test]
    fn secret_string_data_becomes_data() {
        let mut secret = json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}});
        on_create(resources::core("secrets"), &mut secret);
        assert_eq!(secret["data"]["password"], "aHVudGVyMg==");
        assert_eq!(secret["type"], "Opaque");
        assert!(secret.get("stringData").is_none());
    }

    #[test]
    fn namespace_gets_phase_label_and_finalizer() {
        let mut ns = json!({"metadata": {"name": "team-a"}});
        on_create(resources::core("namespaces"), &mut ns);
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "team-a");
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    }
}
