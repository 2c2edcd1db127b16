//! Server-side `meta.k8s.io/v1` Table rendering, the columns `kubectl get` prints (nodes and
//! pods as upstream's printers render them; NAME/AGE and a few common columns for the rest).

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::store::Obj;
use crate::store::resources::{Printer, ResourceType};
use crate::vocab::json;

struct Column {
    name: &'static str,
    ty: &'static str,
    priority: u8,
}

const fn col(name: &'static str, ty: &'static str, priority: u8) -> Column {
    Column { name, ty, priority }
}

fn columns(printer: Printer) -> &'static [Column] {
    match printer {
        Printer::Node => {
            const {
                &[
                    col("Name", "string", 0),
                    col("Status", "string", 0),
                    col("Roles", "string", 0),
                    col("Age", "string", 0),
                    col("Version", "string", 0),
                    col("Internal-IP", "string", 1),
                    col("External-IP", "string", 1),
                    col("OS-Image", "string", 1),
                    col("Kernel-Version", "string", 1),
                    col("Container-Runtime", "string", 1),
                ]
            }
        }
        Printer::Pod => {
            const {
                &[
                    col("Name", "string", 0),
                    col("Ready", "string", 0),
                    col("Status", "string", 0),
                    col("Restarts", "string", 0),
                    col("Age", "string", 0),
                    col("IP", "string", 1),
                    col("Node", "string", 1),
                    col("Nominated Node", "string", 1),
                    col("Readiness Gates", "string", 1),
                ]
            }
        }
        Printer::Service => {
            const {
                &[
                    col("Name", "string", 0),
                    col("Type", "string", 0),
                    col("Cluster-IP", "string", 0),
                    col("External-IP", "string", 0),
                    col("Port(s)", "string", 0),
                    col("Age", "string", 0),
                    col("Selector", "string", 1),
                ]
            }
        }
        Printer::Deployment => {
            const {
                &[
                    col("Name", "string", 0),
                    col("Ready", "string", 0),
                    col("Up-to-date", "integer", 0),
                    col("Available", "integer", 0),
                    col("Age", "string", 0),
                    col("Containers", "string", 1),
                    col("Images", "string", 1),
                    col("Selector", "string", 1),
                ]
            }
        }
        Printer::ReplicaSet => {
            const {
                &[
                    col("Name", "string", 0),
                    col("Desired", "integer", 0),
                    col("Current", "integer", 0),
                    col("Ready", "integer", 0),
                    col("Age", "string", 0),
                    col("Containers", "string", 1),
                    col("Images", "string", 1),
                    col("Selector", "string", 1),
                ]
            }
        }
        Printer::DaemonSet => {
            const {
                &[
                    col("Name", "string", 0),
                    col("Desired", "integer", 0),
                    col("Current", "integer", 0),
                    col("Ready", "integer", 0),
                    col("Up-to-date", "integer", 0),
                    col("Available", "integer", 0),
                    col("Node Selector", "string", 0),
                    col("Age", "string", 0),
                    col("Containers", "string", 1),
                    col("Images", "string", 1),
                    col("Selector", "string", 1),
                ]
            }
        }
        Printer::Job => {
            const {
                &[
                    col("Name", "string", 0),
                    col("Status", "string", 0),
                    col("Completions", "string", 0),
                    col("Duration", "string", 0),
                    col("Age", "string", 0),
                    col("Containers", "string", 1),
                    col("Images", "string", 1),
                    col("Selector", "string", 1),
                ]
            }
        }
        Printer::Event => {
            const {
                &[
                    col("Last Seen", "string", 0),
                    col("Type", "string", 0),
                    col("Reason", "string", 0),
                    col("Object", "string", 0),
                    col("Message", "string", 0),
                ]
            }
        }
        Printer::Namespace => {
            const {
                &[
                    col("Name", "string", 0),
                    col("Status", "string", 0),
                    col("Age", "string", 0),
                ]
            }
        }
        Printer::Role => const { &[col("Name", "string", 0), col("Created At", "date", 0)] },
        Printer::RoleBinding => {
            const {
                &[
                    col("Name", "string", 0),
                    col("Role", "string", 0),
                    col("Age", "string", 0),
                    col("Users", "string", 1),
                    col("Groups", "string", 1),
                    col("ServiceAccounts", "string", 1),
                ]
            }
        }
        Printer::Generic => const { &[col("Name", "string", 0), col("Age", "string", 0)] },
    }
}

/// Whether rows carry the whole object or only its metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(s: Option<&str>) -> Self {
        match s {
            Some("None") => Self::None,
            Some("Object") => Self::Object,
            _ => Self::Metadata,
        }
    }
}

/// The column definitions of a kind's table.
pub fn column_definitions(rt: &ResourceType) -> Value {
    Value::Array(
        columns(rt.printer)
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": c.ty,
                    "format": if c.name == "Name" { "name" } else { "" },
                    "description": c.name,
                    "priority": c.priority,
                })
            })
            .collect(),
    )
}

/// One table row for an object.
pub fn row(rt: &ResourceType, obj: &Obj, include: IncludeObject, now: DateTime<Utc>) -> Value {
    let v = obj.value();
    let cells = cells(rt.printer, v, now);
    let object = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => v.clone(),
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": v.get("metadata").cloned().unwrap_or_else(|| json!({})),
        }),
    };
    json!({"cells": cells, "object": object})
}

/// A whole table.
pub fn render(rt: &ResourceType, objs: &[Obj], rv: u64, include: IncludeObject, headers: bool) -> Value {
    let now = Utc::now();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv.to_string()},
        "columnDefinitions": if headers { column_definitions(rt) } else { json!([]) },
        "rows": objs.iter().map(|o| row(rt, o, include, now)).collect::<Vec<_>>(),
    })
}

fn i(v: &Value, ptr: &str) -> i64 {
    v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn or_none(x: &str) -> String {
    if x.is_empty() { "<none>".into() } else { x.into() }
}

fn age(v: &Value, now: DateTime<Utc>) -> String {
    match DateTime::parse_from_rfc3339(json::str(v, "/metadata/creationTimestamp")) {
        Ok(t) => human_duration(now.signed_duration_since(t.with_timezone(&Utc))),
        Err(_) => "<unknown>".into(),
    }
}

/// kubectl's short duration format (`45s`, `3m10s`, `5h`, `2d3h`, `400d`, `3y20d`).
pub fn human_duration(d: chrono::Duration) -> String {
    let secs = d.num_seconds();
    if secs < 0 {
        return "0s".into();
    }
    let (mins, hours, days) = (secs / 60, secs / 3600, secs / 86_400);
    if secs < 120 {
        format!("{secs}s")
    } else if mins < 10 {
        let s = secs % 60;
        if s == 0 {
            format!("{mins}m")
        } else {
            format!("{mins}m{s}s")
        }
    } else if mins < 180 {
        format!("{mins}m")
    } else if hours < 8 {
        let m = mins % 60;
        if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 192 {
        let h = hours % 24;
        if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        }
    } else if days < 730 {
        format!("{days}d")
    } else if days < 2920 {
        let y = days / 365;
        let d = days % 365;
        if d == 0 { format!("{y}y") } else { format!("{y}y{d}d") }
    } else {
        format!("{}y", days / 365)
    }
}

fn containers_images(v: &Value, spec: &str) -> (String, String) {
    let list = v.pointer(spec).and_then(Value::as_array).cloned().unwrap_or_default();
    let names: Vec<&str> = list.iter().map(|c| json::str(c, "/name")).collect();
    let images: Vec<&str> = list.iter().map(|c| json::str(c, "/image")).collect();
    (names.join(","), images.join(","))
}

fn selector_string(v: &Value, ptr: &str) -> String {
    let Some(sel) = v.pointer(ptr) else {
        return "<none>".into();
    };
    let map = sel.get("matchLabels").unwrap_or(sel);
    match map.as_object() {
        Some(m) if !m.is_empty() => m
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
            .collect::<Vec<_>>()
            .join(","),
        _ => "<none>".into(),
    }
}

fn cells(printer: Printer, v: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let name = json!(json::str(v, "/metadata/name"));
    match printer {
        Printer::Node => {
            let labels = v.pointer("/metadata/labels").and_then(Value::as_object);
            let mut roles: Vec<String> = labels
                .into_iter()
                .flatten()
                .filter_map(|(k, val)| {
                    k.strip_prefix("node-role.kubernetes.io/")
                        .map(str::to_string)
                        .or_else(|| (k == "kubernetes.io/role").then(|| val.as_str().unwrap_or("").to_string()))
                })
                .filter(|r| !r.is_empty())
                .collect();
            roles.sort();
            roles.dedup();
            let ready = v
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|c| c.iter().find(|c| json::str(c, "/type") == "Ready"))
                .map(|c| json::str(c, "/status"));
            let mut status = match ready {
                Some("True") => "Ready".to_string(),
                Some("False") => "NotReady".to_string(),
                _ => "Unknown".to_string(),
            };
            if v.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
                status.push_str(",SchedulingDisabled");
            }
            let address = |ty: &str| {
                v.pointer("/status/addresses")
                    .and_then(Value::as_array)
                    .and_then(|a| a.iter().find(|a| json::str(a, "/type") == ty))
                    .map(|a| json::str(a, "/address").to_string())
                    .unwrap_or_else(|| "<none>".into())
            };
            vec![
                name,
                json!(status),
                json!(if roles.is_empty() {
                    "<none>".into()
                } else {
                    roles.join(",")
                }),
                json!(age(v, now)),
                json!(json::str(v, "/status/nodeInfo/kubeletVersion")),
                json!(address("InternalIP")),
                json!(address("ExternalIP")),
                json!(or_none(json::str(v, "/status/nodeInfo/osImage"))),
                json!(or_none(json::str(v, "/status/nodeInfo/kernelVersion"))),
                json!(or_none(json::str(v, "/status/nodeInfo/containerRuntimeVersion"))),
            ]
        }
        Printer::Pod => {
            let (ready, status, restarts) = pod_summary(v, now);
            vec![
                name,
                json!(ready),
                json!(status),
                json!(restarts),
                json!(age(v, now)),
                json!(or_none(json::str(v, "/status/podIP"))),
                json!(or_none(json::str(v, "/spec/nodeName"))),
                json!(or_none(json::str(v, "/status/nominatedNodeName"))),
                json!("<none>"),
            ]
        }
        Printer::Service => {
            let ty = json::str(v, "/spec/type");
            let ports: Vec<String> = v
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|p| {
                    let node_port = p.get("nodePort").and_then(Value::as_i64);
                    match node_port {
                        Some(np) => format!("{}:{np}/{}", i(p, "/port"), json::str(p, "/protocol")),
                        None => format!("{}/{}", i(p, "/port"), json::str(p, "/protocol")),
                    }
                })
                .collect();
            let external = if ty == "ExternalName" {
                json::str(v, "/spec/externalName").to_string()
            } else {
                "<none>".into()
            };
            let cluster_ip = if ty == "ExternalName" {
                "<none>"
            } else {
                json::str(v, "/spec/clusterIP")
            };
            vec![
                name,
                json!(ty),
                json!(or_none(cluster_ip)),
                json!(external),
                json!(if ports.is_empty() {
                    "<none>".into()
                } else {
                    ports.join(",")
                }),
                json!(age(v, now)),
                json!(selector_string(v, "/spec/selector")),
            ]
        }
        Printer::Deployment => {
            let (c, im) = containers_images(v, "/spec/template/spec/containers");
            vec![
                name,
                json!(format!("{}/{}", i(v, "/status/readyReplicas"), i(v, "/spec/replicas"))),
                json!(i(v, "/status/updatedReplicas")),
                json!(i(v, "/status/availableReplicas")),
                json!(age(v, now)),
                json!(c),
                json!(im),
                json!(selector_string(v, "/spec/selector")),
            ]
        }
        Printer::ReplicaSet => {
            let (c, im) = containers_images(v, "/spec/template/spec/containers");
            vec![
                name,
                json!(i(v, "/spec/replicas")),
                json!(i(v, "/status/replicas")),
                json!(i(v, "/status/readyReplicas")),
                json!(age(v, now)),
                json!(c),
                json!(im),
                json!(selector_string(v, "/spec/selector")),
            ]
        }
        Printer::DaemonSet => {
            let (c, im) = containers_images(v, "/spec/template/spec/containers");
            let node_selector = selector_string(v, "/spec/template/spec/nodeSelector");
            vec![
                name,
                json!(i(v, "/status/desiredNumberScheduled")),
                json!(i(v, "/status/currentNumberScheduled")),
                json!(i(v, "/status/numberReady")),
                json!(i(v, "/status/updatedNumberScheduled")),
                json!(i(v, "/status/numberAvailable")),
                json!(node_selector),
                json!(age(v, now)),
                json!(c),
                json!(im),
                json!(selector_string(v, "/spec/selector")),
            ]
        }
        Printer::Job => {
            let (c, im) = containers_images(v, "/spec/template/spec/containers");
            vec![
                name,
                json!(job_status(v)),
                json!(job_completions(v)),
                json!(job_duration(v, now)),
                json!(age(v, now)),
                json!(c),
                json!(im),
                json!(selector_string(v, "/spec/selector")),
            ]
        }
        Printer::Event => {
            let last = [
                json::str(v, "/lastTimestamp"),
                json::str(v, "/eventTime"),
                json::str(v, "/metadata/creationTimestamp"),
            ]
            .into_iter()
            .find_map(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| human_duration(now.signed_duration_since(t.with_timezone(&Utc))))
            .unwrap_or_else(|| "<unknown>".into());
            let object = format!(
                "{}/{}",
                json::str(v, "/involvedObject/kind").to_lowercase(),
                json::str(v, "/involvedObject/name")
            );
            vec![
                json!(last),
                json!(json::str(v, "/type")),
                json!(json::str(v, "/reason")),
                json!(object),
                json!(json::str(v, "/message")),
            ]
        }
        Printer::Namespace => vec![name, json!(json::str(v, "/status/phase")), json!(age(v, now))],
        Printer::Role => vec![name, json!(json::str(v, "/metadata/creationTimestamp"))],
        Printer::RoleBinding => {
            let role = format!("{}/{}", json::str(v, "/roleRef/kind"), json::str(v, "/roleRef/name"));
            let subjects: Vec<&Value> = v
                .get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .collect();
            let of_kind = |kind: &str| -> String {
                subjects
                    .iter()
                    .filter(|s| json::str(s, "/kind") == kind)
                    .map(|s| match kind {
                        "ServiceAccount" => format!("{}/{}", json::str(s, "/namespace"), json::str(s, "/name")),
                        _ => json::str(s, "/name").to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            vec![
                name,
                json!(role),
                json!(age(v, now)),
                json!(of_kind("User")),
                json!(of_kind("Group")),
                json!(of_kind("ServiceAccount")),
            ]
        }
        Printer::Generic => vec![name, json!(age(v, now))],
    }
}

fn has_condition(v: &Value, ty: &str) -> bool {
    v.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| json::str(c, "/type") == ty && json::str(c, "/status") == "True")
        })
}

/// A Job's STATUS cell, in the order upstream's printer checks the conditions.
fn job_status(v: &Value) -> &'static str {
    if has_condition(v, "Complete") {
        "Complete"
    } else if has_condition(v, "Failed") {
        "Failed"
    } else if v.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) {
        "Terminating"
    } else if has_condition(v, "Suspended") {
        "Suspended"
    } else if has_condition(v, "FailureTarget") {
        "FailureTarget"
    } else if has_condition(v, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

/// A Job's COMPLETIONS cell: `succeeded/completions`, or `n/1 of p` for a work queue.
fn job_completions(v: &Value) -> String {
    let succeeded = i(v, "/status/succeeded");
    match v.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => {
            let parallelism = i(v, "/spec/parallelism");
            if parallelism > 1 {
                format!("{succeeded}/1 of {parallelism}")
            } else {
                format!("{succeeded}/1")
            }
        }
    }
}

/// A Job's DURATION cell: from its start to its completion, or to now while it runs.
fn job_duration(v: &Value, now: DateTime<Utc>) -> String {
    let time = |ptr: &str| {
        DateTime::parse_from_rfc3339(json::str(v, ptr))
            .ok()
            .map(|t| t.with_timezone(&Utc))
    };
    match (time("/status/startTime"), time("/status/completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.signed_duration_since(start)),
        (Some(start), Some(done)) => human_duration(done.signed_duration_since(start)),
    }
}

/// READY, STATUS and RESTARTS of a pod, following kubectl's pod printer.
fn pod_summary(v: &Value, now: DateTime<Utc>) -> (String, String, String) {
    let total = v
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let statuses = v
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ready = statuses
        .iter()
        .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    let mut reason = {
        let r = json::str(v, "/status/reason");
        if r.is_empty() {
            json::str(v, "/status/phase").to_string()
        } else {
            r.to_string()
        }
    };
    let mut restarts = 0;
    let mut last_restart: Option<DateTime<Utc>> = None;
    // Init containers first.
    let init = v
        .pointer("/status/initContainerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let init_total = v
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let mut initializing = false;
    for (idx, c) in init.iter().enumerate() {
        restarts += i(c, "/restartCount");
        let term_code = c.pointer("/state/terminated/exitCode").and_then(Value::as_i64);
        if term_code == Some(0) {
            continue;
        }
        initializing = true;
        reason = if let Some(code) = term_code {
            let r = json::str(c, "/state/terminated/reason");
            if r.is_empty() {
                format!("Init:ExitCode:{code}")
            } else {
                format!("Init:{r}")
            }
        } else {
            let w = json::str(c, "/state/waiting/reason");
            if !w.is_empty() && w != "PodInitializing" {
                format!("Init:{w}")
            } else {
                format!("Init:{idx}/{init_total}")
            }
        };
        break;
    }
    if !initializing {
        restarts = 0;
        let mut has_running = false;
        for c in statuses.iter().rev() {
            restarts += i(c, "/restartCount");
            if let Ok(t) = DateTime::parse_from_rfc3339(json::str(c, "/lastState/terminated/finishedAt")) {
                let t = t.with_timezone(&Utc);
                last_restart = Some(last_restart.map_or(t, |l| l.max(t)));
            }
            let waiting = json::str(c, "/state/waiting/reason");
            let terminated = c.pointer("/state/terminated");
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(t) = terminated {
                let r = json::str(t, "/reason");
                reason = if !r.is_empty() {
                    r.to_string()
                } else if let Some(sig) = t.get("signal").and_then(Value::as_i64).filter(|s| *s != 0) {
                    format!("Signal:{sig}")
                } else {
                    format!("ExitCode:{}", i(t, "/exitCode"))
                };
            } else if c.get("ready").and_then(Value::as_bool) == Some(true) && c.pointer("/state/running").is_some() {
                has_running = true;
            }
        }
        if reason == "Completed" && has_running {
            reason = "Running".into();
        }
    }
    if v.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) {
        reason = if json::str(v, "/status/reason") == "NodeLost" {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    let restarts = match last_restart {
        Some(t) if restarts > 0 => format!("{restarts} ({} ago)", human_duration(now.signed_duration_since(t))),
        _ => restarts.to_string(),
    };
    (format!("{ready}/{total}"), reason, restarts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(5, "5s")]
    #[case(119, "119s")]
    #[case(190, "3m10s")]
    #[case(600, "10m")]
    #[case(3 * 3600 + 60, "3h1m")]
    #[case(10 * 3600, "10h")]
    #[case(2 * 86_400 + 3 * 3600, "2d3h")]
    #[case(400 * 86_400, "400d")]
    #[case(3 * 365 * 86_400 + 20 * 86_400, "3y20d")]
    fn durations(#[case] secs: i64, #[case] expected: &str) {
        assert_eq!(human_duration(chrono::Duration::seconds(secs)), expected);
    }

    #[rstest]
    #[case::pending(json!({"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Pending"}}), "0/1", "Pending")]
    #[case::creating(json!({"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Pending",
        "containerStatuses":[{"name":"c","ready":false,"restartCount":0,"state":{"waiting":{"reason":"ContainerCreating"}}}]}}), "0/1", "ContainerCreating")]
    #[case::running(json!({"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running",
        "containerStatuses":[{"name":"c","ready":true,"restartCount":0,"state":{"running":{}}}]}}), "1/1", "Running")]
    #[case::crashloop(json!({"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running",
        "containerStatuses":[{"name":"c","ready":false,"restartCount":4,"state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}}), "0/1", "CrashLoopBackOff")]
    #[case::rejected(json!({"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Failed","reason":"PodOSNotSupported"}}), "0/1", "PodOSNotSupported")]
    #[case::terminating(json!({"metadata":{"deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running"}}), "0/1", "Terminating")]
    #[case::init(json!({"spec":{"initContainers":[{"name":"i"}],"containers":[{"name":"c"}]},"status":{"phase":"Pending",
        "initContainerStatuses":[{"name":"i","restartCount":0,"state":{"running":{}}}]}}), "0/1", "Init:0/1")]
    fn pod_status_cell(#[case] pod: Value, #[case] ready: &str, #[case] status: &str) {
        let (r, st, _) = pod_summary(&pod, Utc::now());
        assert_eq!(r, ready);
        assert_eq!(st, status);
    }

    #[rstest]
    #[case::running(json!({"spec":{"completions":3,"parallelism":1},"status":{"active":1,"succeeded":1,"startTime":"2026-01-01T00:00:00Z"}}),
        "Running", "1/3", "10s")]
    #[case::complete(json!({"spec":{"completions":1,"parallelism":1},"status":{"succeeded":1,"startTime":"2026-01-01T00:00:00Z",
        "completionTime":"2026-01-01T00:00:04Z","conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}]}}),
        "Complete", "1/1", "4s")]
    #[case::failed(json!({"spec":{"completions":1,"parallelism":1},"status":{"failed":7,"startTime":"2026-01-01T00:00:00Z",
        "conditions":[{"type":"FailureTarget","status":"True"},{"type":"Failed","status":"True"}]}}), "Failed", "0/1", "10s")]
    #[case::work_queue(json!({"spec":{"parallelism":3},"status":{}}), "Running", "0/1 of 3", "")]
    fn job_cells(#[case] job: Value, #[case] status: &str, #[case] completions: &str, #[case] duration: &str) {
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:00:10Z")
            .expect("time")
            .with_timezone(&Utc);
        let c = cells(Printer::Job, &job, now);
        assert_eq!(c.len(), columns(Printer::Job).len());
        assert_eq!(c[1], status);
        assert_eq!(c[2], completions);
        assert_eq!(c[3], duration);
    }

    #[test]
    fn node_columns() {
        let node = json!({"metadata":{"name":"w","creationTimestamp":"2026-01-01T00:00:00Z",
            "labels":{"node-role.kubernetes.io/control-plane":""}},
            "spec":{"unschedulable":true},
            "status":{"conditions":[{"type":"Ready","status":"True"}],
            "addresses":[{"type":"InternalIP","address":"127.1.2.3"}],
            "nodeInfo":{"kubeletVersion":"v1.32.3","osImage":"Windows Server 2022 Datacenter",
                "kernelVersion":"10.0.20348.2762","containerRuntimeVersion":"containerd://1.7.20"}}});
        let c = cells(Printer::Node, &node, Utc::now());
        assert_eq!(c[1], "Ready,SchedulingDisabled");
        assert_eq!(c[2], "control-plane");
        assert_eq!(c[5], "127.1.2.3");
        assert_eq!(c[6], "<none>");
        assert_eq!(c[7], "Windows Server 2022 Datacenter");
        assert_eq!(c.len(), columns(Printer::Node).len());
    }
}
