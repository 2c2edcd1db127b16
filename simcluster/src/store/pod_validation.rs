//! The API server's extra validation of Windows pods (`spec.os.name: windows`, from 1.25): the
//! Linux-only fields it forbids and the HostProcess consistency rules, as `Forbidden` and
//! `Invalid` causes with upstream wording.

use serde_json::Value;

use crate::store::api_error::Cause;
use crate::vocab::json;

fn invalid_bool(field: String, value: bool, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        field,
        message: format!("Invalid value: {value}: {detail}"),
    }
}

/// `spec.initContainers[i]`, `spec.containers[i]`, `spec.ephemeralContainers[i]` in the order
/// the API server visits them.
fn containers_with_paths(spec: &Value) -> Vec<(String, &Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|key| {
            spec.get(*key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
                .map(move |(i, c)| (format!("spec.{key}[{i}]"), c))
        })
        .collect()
}

/// Extra API validation of a pod spec at create/update: the HostProcess rules
/// (Kubernetes ≥ 1.23: all containers HostProcess or none, `hostNetwork` required, pod and
/// container values identical) and, for `spec.os.name: windows` on Kubernetes ≥ 1.24 (the
/// `IdentifyPodOS` gate beta and on by default; GA in 1.25), one `Forbidden: cannot be set for
/// a windows pod` cause per Linux-only field (SEC-OS-FIELD-VALIDATION; WI26, WI31); `spec.os.name: linux` forbids `windowsOptions`. Empty when fine.
pub fn windows_api_violations(pod_spec: &Value, cluster_version: (u32, u32)) -> Vec<Cause> {
    let mut causes = Vec::new();
    let containers = containers_with_paths(pod_spec);
    let pod_sc = pod_spec.get("securityContext");

    // validateWindowsHostProcessPod.
    if cluster_version >= (1, 23) {
        let pod_hp = pod_sc.and_then(|sc| json::bool(sc, "/windowsOptions/hostProcess"));
        let mut hp_count = 0;
        for (path, c) in &containers {
            let c_hp = json::bool(c, "/securityContext/windowsOptions/hostProcess");
            if let (Some(p), Some(cv)) = (pod_hp, c_hp)
                && p != cv
            {
                causes.push(invalid_bool(
                    format!("{path}.securityContext.windowsOptions.hostProcess"),
                    cv,
                    &format!("pod hostProcess value must be identical if both are specified, was {p}"),
                ));
            }
            if c_hp.or(pod_hp) == Some(true) {
                hp_count += 1;
            }
        }
        if hp_count > 0 {
            if hp_count != containers.len() {
                causes.push(Cause::invalid(
                    "spec",
                    "",
                    "If pod contains any hostProcess containers then all containers must be HostProcess containers",
                ));
            }
            if !json::bool(pod_spec, "/hostNetwork").unwrap_or(false) {
                causes.push(invalid_bool(
                    "spec.hostNetwork".into(),
                    false,
                    "hostNetwork must be true if pod contains any hostProcess containers",
                ));
            }
        }
    }

    if cluster_version < (1, 24) {
        return causes;
    }
    match json::opt_str(pod_spec, "/os/name") {
        Some("windows") => {}
        Some("linux") => {
            let forbid = |field: String| Cause::forbidden(field, "windows options cannot be set for a linux pod");
            if pod_sc.is_some_and(|sc| json::present(sc, "/windowsOptions")) {
                causes.push(forbid("spec.securityContext.windowsOptions".into()));
            }
            for (path, c) in &containers {
                if json::present(c, "/securityContext/windowsOptions") {
                    causes.push(forbid(format!("{path}.securityContext.windowsOptions")));
                }
            }
            return causes;
        }
        _ => return causes,
    }
    const DETAIL: &str = "cannot be set for a windows pod";
    // validateWindows, pod level.
    if let Some(sc) = pod_sc {
        let since = |field: &str| match field {
            "appArmorProfile" => (1, 30),
            "supplementalGroupsPolicy" => (1, 31),
            "seLinuxChangePolicy" => (1, 32),
            _ => (1, 24),
        };
        for field in ["appArmorProfile", "seLinuxOptions"] {
            if cluster_version >= since(field) && json::present(sc, &format!("/{field}")) {
                causes.push(Cause::forbidden(format!("spec.securityContext.{field}"), DETAIL));
            }
        }
        if cluster_version >= (1, 30) && json::present(pod_spec, "/hostUsers") {
            causes.push(Cause::forbidden("spec.hostUsers", DETAIL));
        }
    } else if cluster_version >= (1, 30) && json::present(pod_spec, "/hostUsers") {
        causes.push(Cause::forbidden("spec.hostUsers", DETAIL));
    }
    for field in ["hostPID", "hostIPC"] {
        if json::bool(pod_spec, &format!("/{field}")) == Some(true) {
            causes.push(Cause::forbidden(format!("spec.{field}"), DETAIL));
        }
    }
    if let Some(sc) = pod_sc {
        for field in ["seccompProfile", "fsGroup", "fsGroupChangePolicy"] {
            if json::present(sc, &format!("/{field}")) {
                causes.push(Cause::forbidden(format!("spec.securityContext.{field}"), DETAIL));
            }
        }
        if sc
            .get("sysctls")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            causes.push(Cause::forbidden("spec.securityContext.sysctls", DETAIL));
        }
    }
    if json::present(pod_spec, "/shareProcessNamespace") {
        causes.push(Cause::forbidden("spec.shareProcessNamespace", DETAIL));
    }
    if let Some(sc) = pod_sc {
        for (field, since) in [
            ("runAsUser", (1, 24)),
            ("runAsGroup", (1, 24)),
            ("supplementalGroups", (1, 24)),
            ("supplementalGroupsPolicy", (1, 31)),
            ("seLinuxChangePolicy", (1, 32)),
        ] {
            if cluster_version >= since && json::present(sc, &format!("/{field}")) {
                causes.push(Cause::forbidden(format!("spec.securityContext.{field}"), DETAIL));
            }
        }
    }
    // validateWindows, containers.
    for (path, c) in &containers {
        let Some(sc) = c.get("securityContext") else {
            continue;
        };
        for field in [
            "appArmorProfile",
            "seLinuxOptions",
            "seccompProfile",
            "capabilities",
            "readOnlyRootFilesystem",
            "privileged",
            "allowPrivilegeEscalation",
            "procMount",
            "runAsUser",
            "runAsGroup",
        ] {
            if field == "appArmorProfile" && cluster_version < (1, 30) {
                continue;
            }
            if json::present(sc, &format!("/{field}")) {
                causes.push(Cause::forbidden(format!("{path}.securityContext.{field}"), DETAIL));
            }
        }
    }
    causes
}
