//! `TokenRequest` (`POST …/serviceaccounts/NAME/token`, `authentication.k8s.io/v1`): a token
//! for an existing ServiceAccount, valid for `spec.expirationSeconds` (3600 when not given;
//! between 10 minutes and 2^32 seconds, as upstream validates), for `spec.audiences` (the API
//! server's own audience when none), optionally bound to a Pod, Secret or Node
//! (`spec.boundObjectRef`) so that it dies with that object. `kubectl create token` asks this.
//! The token is issued by the store's [`TokenBook`](crate::store::tokens::TokenBook).

use axum::http::StatusCode;
use chrono::{Duration, Utc};
use serde_json::{Value, json};

use super::{ApiState, Target, decode_object, json_value};
use crate::store::api_error::{ApiError, Cause};
use crate::store::resources;
use crate::store::tokens::{BoundObject, ISSUER, Issued};

/// The lifetime of a token whose request names none.
pub(crate) const DEFAULT_SECONDS: i64 = 3600;
/// The shortest lifetime a request may ask for (`MinTokenAgeSec`).
const MIN_SECONDS: i64 = 600;
/// The longest (`1 << 32`).
const MAX_SECONDS: i64 = 1 << 32;

fn invalid(name: &str, field: &str, shown: String, detail: &str) -> ApiError {
    ApiError::Invalid {
        group: "authentication.k8s.io".into(),
        kind: "TokenRequest".into(),
        name: name.into(),
        causes: vec![Cause {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: format!("Invalid value: {shown}: {detail}"),
        }],
    }
}

/// The object a token is to be bound to, checked against what exists.
fn bound_object(state: &ApiState, t: &Target, sa: &str, r: &Value) -> Result<Option<BoundObject>, ApiError> {
    if r.is_null() {
        return Ok(None);
    }
    let kind = r.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = r.get("name").and_then(Value::as_str).unwrap_or("");
    let uid = r.get("uid").and_then(Value::as_str).unwrap_or("");
    let (rt, ns) = match kind {
        "Pod" => (resources::core("pods"), t.ns()),
        "Secret" => (resources::core("secrets"), t.ns()),
        "Node" => (resources::core("nodes"), ""),
        other => {
            return Err(ApiError::BadRequest(format!(
                "cannot bind token for serviceaccount {sa:?} to object of kind {other:?}"
            )));
        }
    };
    let obj = state.store.get(rt, ns, name)?;
    if !uid.is_empty() && uid != obj.uid() {
        return Err(ApiError::Precondition {
            group: String::new(),
            resource: kind.into(),
            name: name.into(),
            reason: format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        });
    }
    if kind == "Pod" {
        let pod_sa = obj
            .value()
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .unwrap_or("default");
        if pod_sa != sa {
            return Err(ApiError::BadRequest(format!(
                "cannot bind token for serviceaccount {sa:?} to pod running with different serviceaccount name."
            )));
        }
    }
    Ok(Some(BoundObject {
        kind: kind.into(),
        name: name.into(),
        uid: obj.uid().into(),
    }))
}

/// Issues a token for the ServiceAccount `t` names.
pub(crate) fn create(
    state: &ApiState,
    t: &Target,
    ct: &str,
    bytes: &[u8],
) -> Result<axum::response::Response, ApiError> {
    let mut request = decode_object(ct, bytes)?;
    for (field, expected) in [("apiVersion", "authentication.k8s.io/v1"), ("kind", "TokenRequest")] {
        if let Some(v) = request.get(field).and_then(Value::as_str)
            && !v.is_empty()
            && v != expected
        {
            return Err(ApiError::BadRequest(format!(
                "the {field} in the data ({v}) does not match the expected {field} ({expected})",
                field = if field == "apiVersion" { "API version" } else { "kind" }
            )));
        }
    }
    let sa_name = t.name.as_deref().unwrap_or("");
    let sa = state.store.get(t.rt, t.ns(), sa_name)?;
    let request_name = request
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
    let seconds = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::BadRequest(format!(
                "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: spec.expirationSeconds: {v} is not an integer"
            ))
        })?,
    };
    if seconds < MIN_SECONDS {
        return Err(invalid(
            &request_name,
            "spec.expirationSeconds",
            seconds.to_string(),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if seconds > MAX_SECONDS {
        return Err(invalid(
            &request_name,
            "spec.expirationSeconds",
            seconds.to_string(),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    let mut audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    if audiences.is_empty() {
        audiences.push(ISSUER.to_string());
    }
    let bound = bound_object(state, t, sa_name, spec.get("boundObjectRef").unwrap_or(&Value::Null))?;
    let now = Utc::now();
    let expires = now + Duration::seconds(seconds);
    let token = state.store.tokens().issue(Issued {
        namespace: t.ns().to_string(),
        name: sa_name.to_string(),
        uid: sa.uid().to_string(),
        audiences: audiences.clone(),
        issued_at: now,
        expires,
        bound,
    });
    let Some(obj) = request.as_object_mut() else {
        return Err(ApiError::BadRequest("the request body must be a JSON object".into()));
    };
    obj.insert("kind".into(), json!("TokenRequest"));
    obj.insert("apiVersion".into(), json!("authentication.k8s.io/v1"));
    let metadata = obj.entry("metadata").or_insert_with(|| json!({}));
    if let Some(m) = metadata.as_object_mut() {
        m.insert("name".into(), json!(sa_name));
        m.insert("namespace".into(), json!(t.ns()));
        m.entry("creationTimestamp").or_insert(Value::Null);
    }
    let mut spec = spec;
    spec["audiences"] = json!(audiences);
    spec["expirationSeconds"] = json!(seconds);
    if spec.get("boundObjectRef").is_none() {
        spec["boundObjectRef"] = Value::Null;
    }
    obj.insert("spec".into(), spec);
    obj.insert(
        "status".into(),
        json!({"token": token, "expirationTimestamp": crate::store::timestamp(expires)}),
    );
    Ok(json_value(StatusCode::CREATED, &request))
}
