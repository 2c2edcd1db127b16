//! `SelfSubjectAccessReview` and `SelfSubjectRulesReview` (`authorization.k8s.io/v1`,
//! create-only): the caller's own identity put to the cluster's authorizer, answered in the
//! review's status and never stored (`kubectl auth can-i`, `kubectl auth can-i --list`).

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::{ApiState, Target, decode_object, json_value, resource};
use crate::api::authorization::{Attributes, Rules, UserInfo};
use crate::store::api_error::{ApiError, Cause};

/// Answers a review created by `user`.
pub(crate) fn create(
    state: &ApiState,
    t: &Target,
    user: &UserInfo,
    ct: &str,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let mut review = decode_object(ct, bytes)?;
    resource::check_identity(t, &mut review)?;
    let status = match t.rt.kind {
        "SelfSubjectAccessReview" => {
            let attributes = access_attributes(&review)?;
            let d = state.authorizer.authorize(user, &attributes);
            let mut status = json!({"allowed": d.allowed});
            if d.denied {
                status["denied"] = json!(true);
            }
            if !d.reason.is_empty() {
                status["reason"] = json!(d.reason);
            }
            status
        }
        "SelfSubjectRulesReview" => {
            let namespace = review.pointer("/spec/namespace").and_then(Value::as_str).unwrap_or("");
            rules_status(&state.authorizer.rules(user, namespace))
        }
        _ => return Err(ApiError::UnknownPath),
    };
    let Some(obj) = review.as_object_mut() else {
        return Err(ApiError::BadRequest("the request body must be a JSON object".into()));
    };
    obj.insert("kind".into(), json!(t.rt.kind));
    obj.insert("apiVersion".into(), json!(t.rt.api_version()));
    let metadata = obj.entry("metadata").or_insert_with(|| json!({}));
    if let Some(m) = metadata.as_object_mut() {
        m.entry("creationTimestamp").or_insert(Value::Null);
    }
    obj.insert("status".into(), status);
    Ok(json_value(StatusCode::CREATED, &review))
}

fn string(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The attributes asked about; exactly one of resourceAttributes and nonResourceAttributes.
fn access_attributes(review: &Value) -> Result<Attributes, ApiError> {
    let present = |key: &str| review.pointer(&format!("/spec/{key}")).filter(|v| !v.is_null());
    let invalid = |field: &str, value: &str, detail: &str| ApiError::Invalid {
        group: "authorization.k8s.io".into(),
        kind: "SelfSubjectAccessReview".into(),
        name: String::new(),
        causes: vec![Cause::invalid(field, value, detail)],
    };
    match (present("resourceAttributes"), present("nonResourceAttributes")) {
        (Some(r), None) => Ok(Attributes::Resource {
            verb: string(r, "verb"),
            group: string(r, "group"),
            version: string(r, "version"),
            resource: string(r, "resource"),
            subresource: string(r, "subresource"),
            namespace: string(r, "namespace"),
            name: string(r, "name"),
        }),
        (None, Some(n)) => Ok(Attributes::NonResource {
            verb: string(n, "verb"),
            path: string(n, "path"),
        }),
        (Some(_), Some(n)) => Err(invalid(
            "spec.nonResourceAttributes",
            &go_struct(n),
            "cannot be specified in combination with resourceAttributes",
        )),
        // Upstream passes the (nil) nonResourceAttributes as the bad value.
        (None, None) => Err(invalid(
            "spec.resourceAttributes",
            "null",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
    }
}

/// How Go's `%v` prints a NonResourceAttributes value (`{/logs get}`).
fn go_struct(n: &Value) -> String {
    format!("{{{} {}}}", string(n, "path"), string(n, "verb"))
}

fn rules_status(rules: &Rules) -> Value {
    let resource_rules: Vec<Value> = rules
        .resource_rules
        .iter()
        .map(|r| {
            let mut rule = Map::new();
            rule.insert("verbs".into(), json!(r.verbs));
            rule.insert("apiGroups".into(), json!(r.api_groups));
            rule.insert("resources".into(), json!(r.resources));
            if !r.resource_names.is_empty() {
                rule.insert("resourceNames".into(), json!(r.resource_names));
            }
            Value::Object(rule)
        })
        .collect();
    let non_resource_rules: Vec<Value> = rules
        .non_resource_rules
        .iter()
        .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
        .collect();
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": rules.incomplete,
    });
    if !rules.evaluation_error.is_empty() {
        status["evaluationError"] = json!(rules.evaluation_error);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::neither(json!({"spec": {}}), "spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified")]
    #[case::no_spec(json!({}), "spec.resourceAttributes: Invalid value: \"null\"")]
    #[case::both(json!({"spec": {"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/logs", "verb": "get"}}}),
        "spec.nonResourceAttributes: Invalid value: \"{/logs get}\": cannot be specified in combination with resourceAttributes")]
    fn an_access_review_asks_exactly_one_question(#[case] review: Value, #[case] message: &str) {
        let err = access_attributes(&review).expect_err("invalid");
        assert_eq!(err.code(), 422);
        let text = err.to_string();
        assert!(
            text.starts_with(r#"SelfSubjectAccessReview.authorization.k8s.io "" is invalid: "#),
            "{text}"
        );
        assert!(text.contains(message), "{text}");
    }

    #[test]
    fn resource_attributes_are_read() {
        let review = json!({"spec": {"resourceAttributes": {"namespace": "a", "verb": "create", "resource": "pods"}}});
        assert_eq!(
            access_attributes(&review).expect("valid"),
            Attributes::Resource {
                verb: "create".into(),
                group: String::new(),
                version: String::new(),
                resource: "pods".into(),
                subresource: String::new(),
                namespace: "a".into(),
                name: String::new(),
            }
        );
    }
}
