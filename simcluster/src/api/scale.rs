//! The `scale` subresource of Deployments and ReplicaSets: an `autoscaling/v1` `Scale` view of
//! the parent's `spec.replicas` (GET, PUT, PATCH), as `kubectl scale` and autoscalers use it.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::{ApiState, Query, Target, decode_object, json_value};
use crate::store::api_error::{ApiError, Cause};
use crate::store::patch::{self, PatchError};
use crate::store::selector::LabelSelector;
use crate::store::{Obj, Part};

fn name(t: &Target) -> &str {
    t.name.as_deref().unwrap_or("")
}

/// The `Scale` of a Deployment or ReplicaSet: its desired and current replicas and its
/// selector in string form (`status.selector`, as the HPA reads it).
pub(crate) fn scale_of(obj: &Obj) -> Value {
    let v = obj.value();
    let selector = v
        .pointer("/spec/selector")
        .and_then(|s| LabelSelector::from_label_selector_object(s).ok())
        .map(|s| s.to_string())
        .unwrap_or_default();
    let mut metadata = json!({
        "name": obj.name(),
        "namespace": obj.namespace(),
        "uid": obj.uid(),
        "resourceVersion": obj.resource_version().to_string(),
    });
    if let Some(created) = v.pointer("/metadata/creationTimestamp") {
        metadata["creationTimestamp"] = created.clone();
    }
    let mut status = json!({
        "replicas": v.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
    });
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": v.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0)},
        "status": status,
    })
}

pub(crate) fn get(state: &ApiState, t: &Target) -> Result<Response, ApiError> {
    let obj = state.store.get(t.rt, t.ns(), name(t))?;
    Ok(json_value(StatusCode::OK, &scale_of(&obj)))
}

fn invalid(name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::Invalid {
        group: "autoscaling".into(),
        kind: "Scale".into(),
        name: name.into(),
        causes,
    }
}

/// Checks a Scale body and returns its `spec.replicas`.
fn desired_replicas(t: &Target, scale: &Value) -> Result<i64, ApiError> {
    for (field, want) in [("apiVersion", "autoscaling/v1"), ("kind", "Scale")] {
        if let Some(got) = scale.get(field).and_then(Value::as_str)
            && got != want
        {
            return Err(ApiError::BadRequest(format!(
                "the {} in the data ({got}) does not match the expected {} ({want})",
                if field == "kind" { "kind" } else { "API version" },
                if field == "kind" { "kind" } else { "API version" },
            )));
        }
    }
    let body_name = scale.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if !body_name.is_empty() && body_name != name(t) {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            name(t)
        )));
    }
    match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => Ok(0),
        Some(r) => match r.as_i64() {
            Some(n) if n >= 0 => i32::try_from(n).map(i64::from).map_err(|_| {
                invalid(
                    name(t),
                    vec![Cause::invalid(
                        "spec.replicas",
                        &r.to_string(),
                        "must be a 32-bit integer",
                    )],
                )
            }),
            _ => Err(invalid(
                name(t),
                vec![Cause {
                    reason: "FieldValueInvalid",
                    field: "spec.replicas".into(),
                    message: format!("Invalid value: {r}: must be greater than or equal to 0"),
                }],
            )),
        },
    }
}

/// Writes `replicas` into the parent; `expected_rv` (from the Scale's metadata) guards the
/// write like a PUT's resourceVersion.
fn write(state: &ApiState, t: &Target, replicas: i64, expected_rv: &str) -> Result<Response, ApiError> {
    let rt = t.rt;
    let updated = state.store.modify(rt, t.ns(), name(t), Part::Main, |cur| {
        let current_rv = cur
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !expected_rv.is_empty() && expected_rv != current_rv {
            return Err(ApiError::Conflict {
                group: rt.group.into(),
                resource: rt.plural.into(),
                name: name(t).into(),
            });
        }
        cur["spec"]["replicas"] = json!(replicas);
        Ok(())
    })?;
    Ok(json_value(StatusCode::OK, &scale_of(&updated)))
}

pub(crate) fn update(state: &ApiState, t: &Target, ct: &str, bytes: &[u8]) -> Result<Response, ApiError> {
    let scale = decode_object(ct, bytes)?;
    let replicas = desired_replicas(t, &scale)?;
    let rv = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    write(state, t, replicas, rv)
}

pub(crate) fn patch(state: &ApiState, t: &Target, q: &Query, ct: &str, bytes: &[u8]) -> Result<Response, ApiError> {
    if q.get("force").is_some() && ct != "application/apply-patch+yaml" {
        return Err(ApiError::BadRequest("force may only be set for apply patches".into()));
    }
    let current = scale_of(&state.store.get(t.rt, t.ns(), name(t))?);
    let mut next = current.clone();
    let failed = |e: PatchError| match e {
        PatchError::Malformed(msg) => ApiError::BadRequest(msg),
        PatchError::Failed(msg) => invalid(name(t), vec![Cause::invalid("patch", "", &msg)]),
    };
    match ct {
        "application/json-patch+json" => {
            let body: Value = serde_json::from_slice(bytes)
                .map_err(|e| ApiError::BadRequest(format!("the patch is not valid JSON: {e}")))?;
            patch::json_patch(&mut next, &body).map_err(failed)?;
        }
        "application/merge-patch+json" | "application/strategic-merge-patch+json" | "application/apply-patch+yaml" => {
            let body = if ct == "application/apply-patch+yaml" {
                decode_object(ct, bytes)?
            } else {
                serde_json::from_slice(bytes)
                    .map_err(|e| ApiError::BadRequest(format!("the patch is not valid JSON: {e}")))?
            };
            patch::strategic_merge(&mut next, &body, "Scale").map_err(failed)?;
        }
        other => {
            return Err(ApiError::UnsupportedMediaType(format!(
                "the body of the request was in an unknown format ({other}) - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json"
            )));
        }
    }
    let replicas = desired_replicas(t, &next)?;
    // A patch that names a resourceVersion is a precondition, like on the main resource.
    let patched_rv = next
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let current_rv = current
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let expected = if patched_rv == current_rv { "" } else { patched_rv };
    write(state, t, replicas, expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::resources;
    use crate::store::{Store, StoreConfig};

    #[test]
    fn a_scale_shows_desired_and_current_replicas_and_the_selector_string() {
        let store = Store::new(StoreConfig::default());
        let rt = resources::named("apps", "deployments");
        store
            .create(resources::core("namespaces"), "", json!({"metadata": {"name": "a"}}))
            .expect("ns");
        let d = store
            .create(
                rt,
                "a",
                json!({"metadata": {"name": "web"}, "spec": {"replicas": 2,
                    "selector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]},
                    "template": {"metadata": {"labels": {"app": "web", "tier": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
            )
            .expect("deployment");
        let scale = scale_of(&d);
        assert_eq!(scale["apiVersion"], "autoscaling/v1");
        assert_eq!(scale["kind"], "Scale");
        assert_eq!(scale["spec"]["replicas"], 2);
        assert_eq!(scale["status"]["replicas"], 0);
        assert_eq!(scale["status"]["selector"], "app=web,tier in (a,b)");
        assert_eq!(scale["metadata"]["resourceVersion"], d.resource_version().to_string());
    }
}
