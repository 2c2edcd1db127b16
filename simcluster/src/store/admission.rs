//! Admission as the apiserver's plugins do it: at pod create time, RuntimeClass `scheduling`
//! merged into the pod (nodeSelector and tolerations) and `overhead` applied, then the cluster's
//! policy on host privileges (`store::policy`), for pods from clients and from controllers
//! alike; at namespace create, replace and patch time, the cluster's policy on Pod Security
//! labels.

use serde_json::{Value, json};

use crate::store::Store;
use crate::store::api_error::ApiError;
use crate::store::resources;

/// Admits a pod about to be created in `namespace`: merges its RuntimeClass's scheduling
/// constraints (mutating), gives it its generated name, then asks the cluster's policy
/// (validating, after mutation and naming as upstream orders them).
pub fn admit_pod(store: &Store, namespace: &str, pod: &mut Value) -> Result<(), ApiError> {
    runtime_class(store, pod)?;
    store.generate_name(resources::core("pods"), namespace, pod);
    // Mutating webhooks run before the validating plugins and webhooks.
    if store.admission_policy().gmsa_webhook {
        let exempt = store
            .get(resources::core("namespaces"), "", namespace)
            .is_ok_and(|ns| crate::store::policy::gmsa::exempt(ns.value()));
        if !exempt {
            crate::store::policy::gmsa::review(pod)?;
        }
    }
    // The built-in PodSecurity plugin validates before ValidatingAdmissionPolicy and the
    // webhooks (kubernetes `pkg/kubeapiserver/options/plugins.go`, `AllOrderedPlugins`).
    if let Ok(ns) = store.get(resources::core("namespaces"), "", namespace) {
        crate::store::policy::pod_security::review_namespace_level(ns.value(), pod)?;
    }
    crate::store::policy::review(store.admission_policy(), namespace, pod)
}

/// Admits a namespace about to be created, or replaced or patched into `namespace`: the
/// cluster's policy on the Pod Security level its labels ask for.
pub fn admit_namespace(store: &Store, namespace: &Value) -> Result<(), ApiError> {
    crate::store::policy::review_namespace(store.admission_policy(), namespace)
}

/// Merges the pod's RuntimeClass scheduling constraints and overhead.
fn runtime_class(store: &Store, pod: &mut Value) -> Result<(), ApiError> {
    let Some(class) = pod
        .pointer("/spec/runtimeClassName")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return Ok(());
    };
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let forbidden = |reason: String| ApiError::Forbidden {
        group: String::new(),
        resource: "pods".into(),
        name: name.clone(),
        reason,
    };
    let rc = store
        .get(resources::named("node.k8s.io", "runtimeclasses"), "", &class)
        .map_err(|_| forbidden(format!("pod rejected: RuntimeClass {class:?} not found")))?;
    let rc = rc.value();
    if let Some(selector) = rc.pointer("/scheduling/nodeSelector").and_then(Value::as_object) {
        for (k, v) in selector {
            match pod.pointer(&format!(
                "/spec/nodeSelector/{}",
                k.replace('~', "~0").replace('/', "~1")
            )) {
                Some(existing) if existing != v => {
                    return Err(forbidden(format!(
                        "pod rejected: conflict: runtimeClass.scheduling.nodeSelector[{k}] = {}; pod.spec.nodeSelector[{k}] = {}",
                        v.as_str().unwrap_or(""),
                        existing.as_str().unwrap_or("")
                    )));
                }
                _ => {}
            }
        }
        if !pod["spec"].get("nodeSelector").is_some_and(Value::is_object) {
            pod["spec"]["nodeSelector"] = json!({});
        }
        for (k, v) in selector {
            pod["spec"]["nodeSelector"][k] = v.clone();
        }
    }
    if let Some(tolerations) = rc.pointer("/scheduling/tolerations").and_then(Value::as_array) {
        let mut merged: Vec<Value> = pod
            .pointer("/spec/tolerations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for t in tolerations {
            if !merged.contains(t) {
                merged.push(t.clone());
            }
        }
        pod["spec"]["tolerations"] = json!(merged);
    }
    if let Some(overhead) = rc.pointer("/overhead/podFixed") {
        pod["spec"]["overhead"] = overhead.clone();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with_class() -> Store {
        let store = Store::default();
        store
            .create(
                resources::named("node.k8s.io", "runtimeclasses"),
                "",
                json!({"metadata": {"name": "windows-2019"}, "handler": "runhcs-wcow-process",
                       "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"},
                                      "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}]}}),
            )
            .expect("runtimeclass");
        store
    }

    #[test]
    fn runtime_class_scheduling_is_merged() {
        let store = store_with_class();
        let mut pod =
            json!({"metadata": {"name": "p"}, "spec": {"runtimeClassName": "windows-2019", "containers": []}});
        admit_pod(&store, "default", &mut pod).expect("admitted");
        assert_eq!(
            pod["spec"]["nodeSelector"]["node.kubernetes.io/windows-build"],
            "10.0.17763"
        );
        assert_eq!(pod["spec"]["tolerations"][0]["value"], "windows");
    }

    #[test]
    fn conflicts_and_missing_classes_are_forbidden() {
        let store = store_with_class();
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"runtimeClassName": "windows-2019",
            "nodeSelector": {"kubernetes.io/os": "linux"}}});
        let err = admit_pod(&store, "default", &mut pod).expect_err("conflict");
        assert_eq!(err.code(), 403);
        assert!(
            err.to_string()
                .contains("conflict: runtimeClass.scheduling.nodeSelector[kubernetes.io/os]"),
            "{err}"
        );
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"runtimeClassName": "nope"}});
        assert!(
            admit_pod(&store, "default", &mut pod)
                .expect_err("missing")
                .to_string()
                .contains("RuntimeClass \"nope\" not found")
        );
    }
}
