//! Object validation on create and update: names (RFC 1123 / DNS-1035) and the required
//! fields of each kind, reported as `Invalid` causes with upstream wording.

use serde_json::Value;

use crate::store::api_error::{ApiError, Cause};
use crate::store::resources::ResourceType;
use crate::store::selector::LabelSelector;
use crate::vocab::names::{is_dns_label, is_dns_subdomain, is_dns1035_label};

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

#[derive(Clone, Copy)]
enum NameRule {
    Subdomain,
    Label,
    Dns1035,
    /// RBAC objects: any name usable as a URL path segment (`system:basic-user`).
    PathSegment,
}

fn name_rule(rt: &ResourceType) -> NameRule {
    match rt.kind {
        "Namespace" => NameRule::Label,
        "Service" => NameRule::Dns1035,
        "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding" => NameRule::PathSegment,
        _ => NameRule::Subdomain,
    }
}

fn check_name(name: &str, rule: NameRule, field: &str, causes: &mut Vec<Cause>) {
    let (ok, msg, max) = match rule {
        NameRule::PathSegment => {
            for msg in crate::store::rbac::path_segment_problems(name) {
                causes.push(Cause::invalid(field, name, msg));
            }
            return;
        }
        NameRule::Subdomain => (is_dns_subdomain(name), SUBDOMAIN_MSG, 253),
        NameRule::Label => (is_dns_label(name), LABEL_MSG, 63),
        NameRule::Dns1035 => (is_dns1035_label(name), DNS1035_MSG, 63),
    };
    if name.len() > max {
        causes.push(Cause::invalid(
            field,
            name,
            &format!("must be no more than {max} characters"),
        ));
    } else if !ok {
        causes.push(Cause::invalid(field, name, msg));
    }
}

/// Validates an object about to be created or replaced.
pub fn validate(rt: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let generate = obj
        .pointer("/metadata/generateName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() && generate.is_empty() {
        causes.push(Cause::required("metadata.name", "name or generateName is required"));
    } else if !name.is_empty() {
        check_name(name, name_rule(rt), "metadata.name", &mut causes);
    }
    check_string_map(obj, "labels", &mut causes);
    check_string_map(obj, "annotations", &mut causes);
    match rt.kind {
        "Pod" => match obj.get("spec") {
            Some(spec) => pod_spec(spec, "spec", &mut causes),
            None => causes.push(Cause::required("spec.containers", "")),
        },
        "Deployment" | "ReplicaSet" | "DaemonSet" => workload(obj, &mut causes),
        "Job" => job(obj, &mut causes),
        "CronJob" => cron_job(obj, &mut causes),
        "PriorityClass" if obj.get("value").and_then(Value::as_i64).is_none() => {
            causes.push(Cause::required("value", ""));
        }
        "Service" => service(obj, &mut causes),
        "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding" => {
            crate::store::rbac::validate(rt, obj, &mut causes);
        }
        "ConfigMap" | "Secret" => {
            for field in ["data", "binaryData"] {
                if let Some(map) = obj.get(field).and_then(Value::as_object) {
                    for key in map.keys() {
                        let ok = !key.is_empty()
                            && key.len() <= 253
                            && key.bytes().all(|c| c.is_ascii_alphanumeric() || b"-._".contains(&c));
                        if !ok {
                            causes.push(Cause::invalid(
                                format!("{field}[{key}]"),
                                key,
                                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                            ));
                        }
                    }
                }
            }
        }
        _ => {}
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Invalid {
            group: rt.group.into(),
            kind: rt.kind.into(),
            name: if name.is_empty() { generate.into() } else { name.into() },
            causes,
        })
    }
}

fn check_string_map(obj: &Value, field: &str, causes: &mut Vec<Cause>) {
    if let Some(map) = obj.pointer(&format!("/metadata/{field}")).and_then(Value::as_object) {
        for (k, v) in map {
            if !v.is_string() {
                causes.push(Cause::invalid(
                    format!("metadata.{field}[{k}]"),
                    &v.to_string(),
                    "must be a string",
                ));
            }
        }
    }
}

fn pod_spec(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    let containers = spec.get("containers").and_then(Value::as_array);
    match containers {
        None => causes.push(Cause::required(format!("{path}.containers"), "")),
        Some(list) if list.is_empty() => causes.push(Cause::required(format!("{path}.containers"), "")),
        Some(_) => {}
    }
    let mut names = std::collections::BTreeSet::new();
    for list in ["initContainers", "containers"] {
        let Some(items) = spec.get(list).and_then(Value::as_array) else {
            continue;
        };
        for (i, c) in items.iter().enumerate() {
            let at = format!("{path}.{list}[{i}]");
            let name = c.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                causes.push(Cause::required(format!("{at}.name"), ""));
            } else if !is_dns_label(name) {
                causes.push(Cause::invalid(format!("{at}.name"), name, LABEL_MSG));
            } else if !names.insert(name.to_string()) {
                causes.push(Cause {
                    reason: "FieldValueDuplicate",
                    field: format!("{at}.name"),
                    message: format!("Duplicate value: {name:?}"),
                });
            }
            if c.get("image").and_then(Value::as_str).is_none_or(str::is_empty) {
                causes.push(Cause::required(format!("{at}.image"), ""));
            }
            if let Some(ports) = c.get("ports").and_then(Value::as_array) {
                for (j, p) in ports.iter().enumerate() {
                    port_number(
                        p.get("containerPort"),
                        &format!("{at}.ports[{j}].containerPort"),
                        true,
                        causes,
                    );
                    port_number(p.get("hostPort"), &format!("{at}.ports[{j}].hostPort"), false, causes);
                }
            }
        }
    }
    if let Some(policy) = spec.get("restartPolicy").and_then(Value::as_str) {
        const POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
        if !POLICIES.contains(&policy) {
            causes.push(Cause::unsupported(format!("{path}.restartPolicy"), policy, POLICIES));
        }
    }
}

/// A port number field; an optional one set to 0 is unset, as upstream's validation reads it
/// (`if port.HostPort != 0 && !IsValidPortNum(…)`, `validateContainerPorts` in
/// <https://github.com/kubernetes/kubernetes/blob/v1.33.0/pkg/apis/core/validation/validation.go>);
/// protobuf bodies carry the 0 of every unset non-pointer field.
fn port_number(v: Option<&Value>, field: &str, required: bool, causes: &mut Vec<Cause>) {
    match v {
        None if required => causes.push(Cause::required(field, "")),
        None => {}
        Some(p) if !required && p.as_i64() == Some(0) => {}
        Some(p) => match p.as_i64() {
            Some(n) if (1..=65535).contains(&n) => {}
            _ => causes.push(Cause::invalid(
                field,
                &p.to_string(),
                "must be between 1 and 65535, inclusive",
            )),
        },
    }
}

fn workload(obj: &Value, causes: &mut Vec<Cause>) {
    let selector = obj.pointer("/spec/selector");
    let labels = obj.pointer("/spec/template/metadata/labels").and_then(Value::as_object);
    match selector {
        None | Some(Value::Null) => causes.push(Cause::required("spec.selector", "")),
        Some(sel) => match LabelSelector::from_label_selector_object(sel) {
            Err(e) => causes.push(Cause::invalid("spec.selector", &sel.to_string(), &e.to_string())),
            Ok(s) if s.is_empty() => causes.push(Cause::invalid(
                "spec.selector",
                &sel.to_string(),
                "empty selector is invalid for deployment",
            )),
            Ok(s) if !s.matches(labels) => causes.push(Cause::invalid(
                "spec.template.metadata.labels",
                &labels.map(|l| Value::Object(l.clone()).to_string()).unwrap_or_default(),
                "`selector` does not match template `labels`",
            )),
            Ok(_) => {}
        },
    }
    match obj.pointer("/spec/template/spec") {
        Some(spec) => pod_spec(spec, "spec.template.spec", causes),
        None => causes.push(Cause::required("spec.template.spec.containers", "")),
    }
    if let Some(r) = obj.pointer("/spec/replicas")
        && r.as_i64().is_none_or(|n| n < 0)
    {
        causes.push(Cause::invalid(
            "spec.replicas",
            &r.to_string(),
            "must be greater than or equal to 0",
        ));
    }
}

/// A CronJob needs a schedule the controller can read and a Job template
/// (pkg/apis/batch/validation/validation.go, ValidateCronJobSpec).
fn cron_job(obj: &Value, causes: &mut Vec<Cause>) {
    match obj.pointer("/spec/schedule").and_then(Value::as_str) {
        None | Some("") => causes.push(Cause::required("spec.schedule", "")),
        Some(s) => {
            if let Err(e) = crate::vocab::schedule::Schedule::parse(s) {
                causes.push(Cause::invalid("spec.schedule", s, &e.to_string()));
            }
        }
    }
    match obj.pointer("/spec/jobTemplate/spec") {
        Some(spec) => {
            let template = serde_json::json!({"metadata": {}, "spec": spec});
            let before = causes.len();
            job(&template, causes);
            for c in causes.iter_mut().skip(before) {
                c.field = format!("spec.jobTemplate.{}", c.field);
            }
        }
        None => causes.push(Cause::required("spec.jobTemplate.spec.template.spec.containers", "")),
    }
}

fn job(obj: &Value, causes: &mut Vec<Cause>) {
    if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        workload(obj, causes);
    } else {
        match obj.pointer("/spec/template/spec") {
            Some(spec) => pod_spec(spec, "spec.template.spec", causes),
            None => causes.push(Cause::required("spec.template.spec.containers", "")),
        }
    }
    // A Job's pods end: they may restart in place on failure, never run forever (the API
    // defaults a missing policy to Always first, which is why that is what is reported).
    const POLICIES: &[&str] = &["OnFailure", "Never"];
    let policy = obj
        .pointer("/spec/template/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Always");
    if !POLICIES.contains(&policy) && ["Always", "OnFailure", "Never"].contains(&policy) {
        causes.push(Cause::unsupported("spec.template.spec.restartPolicy", policy, POLICIES));
    }
    for (field, min) in [
        ("parallelism", 0),
        ("completions", 0),
        ("backoffLimit", 0),
        ("ttlSecondsAfterFinished", 0),
        ("activeDeadlineSeconds", 1),
    ] {
        if let Some(v) = obj.pointer(&format!("/spec/{field}")).filter(|v| !v.is_null())
            && v.as_i64().is_none_or(|n| n < min)
        {
            let detail = if min == 0 {
                "must be greater than or equal to 0"
            } else {
                "must be greater than 0"
            };
            causes.push(Cause {
                reason: "FieldValueInvalid",
                field: format!("spec.{field}"),
                message: format!("Invalid value: {v}: {detail}"),
            });
        }
    }
}

fn service(obj: &Value, causes: &mut Vec<Cause>) {
    const TYPES: &[&str] = &["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];
    let ty = obj.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
    if !TYPES.contains(&ty) {
        causes.push(Cause::unsupported("spec.type", ty, TYPES));
    }
    let headless = obj.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None");
    let ports = obj.pointer("/spec/ports").and_then(Value::as_array);
    if ty == "ExternalName" {
        if obj
            .pointer("/spec/externalName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            causes.push(Cause::required("spec.externalName", ""));
        }
    } else if ports.is_none_or(Vec::is_empty) && !headless {
        causes.push(Cause::required("spec.ports", ""));
    }
    for (i, p) in ports.into_iter().flatten().enumerate() {
        port_number(p.get("port"), &format!("spec.ports[{i}].port"), true, causes);
        // 0 (or no value) asks the allocator for a port.
        if let Some(np) = p.get("nodePort").filter(|v| !v.is_null() && v.as_i64() != Some(0)) {
            port_number(Some(np), &format!("spec.ports[{i}].nodePort"), false, causes);
        }
        if ports.is_some_and(|l| l.len() > 1) && p.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
            causes.push(Cause::required(format!("spec.ports[{i}].name"), ""));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::resources;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case::bad_name("pods", json!({"metadata":{"name":"Bad_Name"},"spec":{"containers":[{"name":"c","image":"i"}]}}), "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain")]
    #[case::no_containers("pods", json!({"metadata":{"name":"p"},"spec":{}}), "spec.containers: Required value")]
    #[case::no_image("pods", json!({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]}}), r#"Pod "p" is invalid: spec.containers[0].image: Required value"#)]
    #[case::dup_container("pods", json!({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"},{"name":"c","image":"i"}]}}), "Duplicate value")]
    #[case::bad_port("pods", json!({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":70000}]}]}}), "between 1 and 65535")]
    #[case::service_name("services", json!({"metadata":{"name":"1svc"},"spec":{"ports":[{"port":80}]}}), "DNS-1035")]
    #[case::service_ports("services", json!({"metadata":{"name":"svc"},"spec":{}}), "spec.ports: Required value")]
    #[case::ns_name("namespaces", json!({"metadata":{"name":"a.b"}}), "RFC 1123 label")]
    #[case::no_name("configmaps", json!({"metadata":{}}), "name or generateName is required")]
    #[case::cm_key("configmaps", json!({"metadata":{"name":"c"},"data":{"a b":"x"}}), "valid config key")]
    fn invalid_objects(#[case] plural: &str, #[case] obj: Value, #[case] needle: &str) {
        let err = validate(resources::core(plural), &obj).expect_err("invalid");
        assert_eq!(err.code(), 422);
        assert!(err.to_string().contains(needle), "{err}");
    }

    #[rstest]
    #[case::restart_always(json!({"restartPolicy": "Always"}), "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\"")]
    #[case::restart_unset(json!({}), "Unsupported value: \"Always\"")]
    fn a_job_pod_must_end(#[case] extra: Value, #[case] needle: &str) {
        let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        let job = json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": spec}}});
        let err = validate(resources::named("batch", "jobs"), &job).expect_err("invalid");
        assert!(err.to_string().starts_with(r#"Job.batch "j" is invalid: "#), "{err}");
        assert!(err.to_string().contains(needle), "{err}");
    }

    #[test]
    fn a_job_counts_are_not_negative() {
        let job = json!({"metadata": {"name": "j"}, "spec": {"backoffLimit": -1, "completions": 2,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
        let err = validate(resources::named("batch", "jobs"), &job).expect_err("invalid");
        assert!(
            err.to_string()
                .contains("spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"),
            "{err}"
        );
        let mut ok = job.clone();
        ok["spec"]["backoffLimit"] = json!(0);
        validate(resources::named("batch", "jobs"), &ok).expect("valid");
    }

    #[test]
    fn deployment_selector_must_match_template() {
        let deploy = resources::named("apps", "deployments");
        let mut d = json!({"metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"app":"a"}},
            "template":{"metadata":{"labels":{"app":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}});
        let err = validate(deploy, &d).expect_err("mismatch");
        assert!(
            err.to_string().contains("`selector` does not match template `labels`"),
            "{err}"
        );
        d["spec"]["template"]["metadata"]["labels"]["app"] = json!("a");
        validate(deploy, &d).expect("valid");
        d["spec"].as_object_mut().map(|s| s.remove("selector"));
        assert!(
            validate(deploy, &d)
                .expect_err("missing")
                .to_string()
                .contains("spec.selector: Required value")
        );
    }
}
